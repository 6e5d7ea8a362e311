"""One file read in order on several decoders at once (segment-parallel), against one session and
against NVIDIA's PyNvVideoCodec, side by side in one run; frames kept on the GPU, start-up excluded.

Generates its clips (1080p, libx264 / libx265 veryfast, a key frame every ``--gop`` frames), then for
each codec times:

- ``one session``: alpha2's DecodeSession (placed by the front door), each frame released at once;
- ``segments K``: :class:`alpha2.api.segments.SegmentReader` with K sessions (frames in presentation
  order, NVDEC frames copied into the frame pool), for each of ``--decoders`` (sessions in threads of
  this process, or in decoder processes whose NVDEC frames arrive in shared device memory);
- ``pynvc simple`` / ``pynvc threaded``: PyNvVideoCodec's SimpleDecoder (batches of 32) and
  ThreadedDecoder, where it is installed.

The segment rows also check that the timestamps equal the one session's, in order. Prints fps and
ratios against one session and against PyNvVideoCodec's SimpleDecoder.

    python benchmarks/bench_segments.py --codecs hevc,h264 --frames 1800 --sessions 2,4,7 \
        --decoders threads,processes
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

import av
from clips import encode_pattern

from alpha2.api.devices import open_decoder
from alpha2.api.segments import SegmentReader

ENCODERS = {"h264": "libx264", "hevc": "libx265"}


def make_clip(path: str, codec: str, frames: int, gop: int, width: int = 1920, height: int = 1080) -> None:
    """A moving pattern with grain, veryfast-encoded, GOPs of ``gop`` frames (B-frames, open where the
    encoder's defaults make them)."""
    with av.open(path, "w") as out:
        stream: Any = out.add_stream(ENCODERS[codec], rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if codec == "hevc":
            stream.options = {
                "preset": "veryfast",
                "x265-params": f"keyint={gop}:min-keyint={gop}:log-level=error",
            }
        else:
            stream.options = {"preset": "veryfast", "x264-params": f"keyint={gop}:min-keyint={gop}"}
        encode_pattern(out, stream, frames)


def _timed(reader: Any) -> tuple[float, list[int | None]]:
    """Frames per second of ``reader`` after its first frame (start-up outside), and every pts in order."""
    first = reader.next_frame()
    assert first is not None
    pts = [first.metadata.pts]
    first.release()
    t0 = time.perf_counter()
    for frame in reader:
        pts.append(frame.metadata.pts)
        frame.release()
    return (len(pts) - 1) / (time.perf_counter() - t0), pts


def one_session(path: str, hwaccel: str) -> tuple[float, list[int | None], str]:
    with open_decoder(path, None, hwaccel=hwaccel) as session:
        fps, pts = _timed(session)
        report = session.hwaccel_report
    return fps, pts, f"{report.decoder} {'NVDEC' if report.on_gpu else 'software'}"


def segments(
    path: str, hwaccel: str, sessions: int, decoders: str = "threads"
) -> tuple[float, list[int | None], str]:
    with SegmentReader(path, sessions=sessions, hwaccel=hwaccel, decoders=decoders) as reader:
        fps, pts = _timed(reader)
        report = reader.report
    stages = ", ".join(f"{name} {value:.2f}" for name, value in report.stages.items())
    return fps, pts, f"{report.sessions} sessions, {report.chunks} chunks; s: {stages}"


def decode_only(path: str, hwaccel: str, sessions: int) -> float:
    """K sessions in threads, each decoding its round-robin chunks and releasing every frame at once:
    what threads of one process can decode at most (no queue, no order, no pool)."""
    import threading

    from alpha2.api.devices import place_decoder
    from alpha2.api.segments import plan_chunks
    from alpha2.ffmpeg_bridge.index import keyframe_index

    index = keyframe_index(path)
    chunks = plan_chunks(index)
    placement = place_decoder(None, hwaccel)
    decoders = [open_decoder(path, None, placement=placement, hwaccel=hwaccel) for _ in range(sessions)]
    counts = [0] * sessions

    def work(k: int) -> None:
        session = decoders[k]
        for chunk in chunks[k::sessions]:
            if chunk.start_pts is not None:
                session.seek(index.seconds(chunk.start_pts))
            for frame in session:
                pts = frame.metadata.pts
                frame.release()
                if chunk.end_pts is not None and pts is not None and pts >= chunk.end_pts:
                    break
                counts[k] += 1

    threads = [threading.Thread(target=work, args=(k,)) for k in range(sessions)]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - t0
    for session in decoders:
        session.close()
    return sum(counts) / seconds


def pynvc(path: str, kind: str) -> tuple[float, int, str] | None:
    try:
        import PyNvVideoCodec as nvc
    except ImportError:
        return None
    if kind == "simple":
        decoder = nvc.SimpleDecoder(
            path, gpu_id=0, use_device_memory=True, output_color_type=nvc.OutputColorType.NATIVE
        )
        n = len(decoder.get_batch_frames(1))
        t0 = time.perf_counter()
        while True:
            batch = decoder.get_batch_frames(32)
            if not batch:
                break
            n += len(batch)
        seconds = time.perf_counter() - t0
    else:
        decoder = nvc.ThreadedDecoder(
            path,
            buffer_size=32,
            gpu_id=0,
            use_device_memory=True,
            output_color_type=nvc.OutputColorType.NATIVE,
        )
        n = len(decoder.get_batch_frames(1))
        t0 = time.perf_counter()
        while True:
            batch = decoder.get_batch_frames(32)
            if not batch:
                break
            n += len(batch)
        seconds = time.perf_counter() - t0
    return (n - 1) / seconds, n, f"PyNvVideoCodec {nvc.__version__}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--codecs", default="hevc,h264")
    parser.add_argument("--frames", type=int, default=1800)
    parser.add_argument("--gop", type=int, default=60)
    parser.add_argument("--sessions", default="2,4,7")
    parser.add_argument("--hwaccel", default="cuda", choices=("cuda", "auto", "none"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval (the GIL's slice)")
    parser.add_argument("--decode-only", action="store_true", help="also time K threads decoding alone")
    parser.add_argument("--clip-dir", help="keep the clips here and reuse them (default: a temporary folder)")
    parser.add_argument("--decoders", default="threads", help="segments rows for each: threads,processes")
    args = parser.parse_args(argv)
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
        print(f"# sys.setswitchinterval({args.switch_interval})")
    with tempfile.TemporaryDirectory() as tmp:
        for codec in args.codecs.split(","):
            folder = args.clip_dir or tmp
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, f"{codec}-{args.frames}-gop{args.gop}.mkv")
            t0 = time.perf_counter()
            if not os.path.exists(path):
                make_clip(path + ".part.mkv", codec, args.frames, args.gop)
                os.replace(path + ".part.mkv", path)
            made = time.perf_counter() - t0
            print(f"# {codec}: {args.frames} frames 1920x1080, GOP {args.gop}, made in {made:.1f} s")
            for _ in range(args.repeat):
                base_fps, base_pts, note = one_session(path, args.hwaccel)
                peer = pynvc(path, "simple") if args.hwaccel != "none" else None
                print(f"{codec:5} one session      {base_fps:8.1f} fps  {note}")
                if peer is not None:
                    print(f"{codec:5} pynvc simple     {peer[0]:8.1f} fps  {peer[2]} ({peer[1]} frames)")
                    threaded = pynvc(path, "threaded")
                    if threaded is not None:
                        print(f"{codec:5} pynvc threaded   {threaded[0]:8.1f} fps")
                for k in (int(s) for s in args.sessions.split(",")):
                    if args.decode_only:
                        alone = decode_only(path, args.hwaccel, k)
                        print(
                            f"{codec:5} decode only {k:<2}   {alone:8.1f} fps  threads, frames let go at once"
                        )
                    for decoders in args.decoders.split(","):
                        fps, pts, note = segments(path, args.hwaccel, k, decoders)
                        same = (
                            "timestamps equal"
                            if pts == base_pts
                            else f"TIMESTAMPS DIFFER ({len(pts)} frames)"
                        )
                        ratio = f" = {fps / peer[0]:.2f}x pynvc simple" if peer is not None else ""
                        label = f"segments {k:<2}" + (" procs" if decoders == "processes" else "      ")
                        print(
                            f"{codec:5} {label}{fps:8.1f} fps  {fps / base_fps:.2f}x one session"
                            f"{ratio}; {note}; {same}"
                        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
