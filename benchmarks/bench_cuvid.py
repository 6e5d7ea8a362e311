"""One HEVC (or H.264) stream on one NVDEC session: FFmpeg's NVDEC hwaccel against FFmpeg's cuvid
decoder (``hevc_cuvid``: NVIDIA's own parser, several pictures in flight before each is mapped), both
through PyAV, against alpha2's one session, in one run; start-up excluded, frames kept on the GPU and let
go at once.

Issue 29 asks one session to match PyNvVideoCodec's ThreadedDecoder (1268-1271 fps on this clip in two
earlier runs, alpha2's one session 1070-1082 in the same runs). This says whether the cuvid decoder is
where the difference lies before alpha2 is built on it: the rows' fps, and whether the two decoders'
frames are the same (every timestamp; the planes of the first ``--check`` frames, hashed on the GPU
with CuPy). Where PyNvVideoCodec is installed, its rows in the same run: ThreadedDecoder (batches of 32),
its decoder behind its own demuxer on this thread, and its decoder fed PyAV's packets (whether NVIDIA's
decoder could stand behind alpha2's demuxer, and at what pace).

    python benchmarks/bench_cuvid.py --codecs hevc --frames 1800 --gop 60 --clip-dir /tmp/clips
"""

from __future__ import annotations

import argparse
import ctypes
import os
import queue
import sys
import threading
import time
from typing import Any

import av
from bench_segments import make_clip, one_session

from alpha2.ffmpeg_bridge.cuvid import ENV

CUVID = {"hevc": "hevc_cuvid", "h264": "h264_cuvid"}


def _hwaccel() -> Any:
    return av.codec.hwaccel.HWAccel(
        device_type="cuda", device="0", allow_software_fallback=False, is_hw_owned=True
    )


def hwaccel_frames(path: str, frame_threads: int = 0) -> Any:
    """Frames of FFmpeg's native decoder with the NVDEC hwaccel (what alpha2 runs today); with
    ``frame_threads``, FFmpeg's frame threading over the hwaccel (more pictures in flight)."""
    with av.open(path, hwaccel=_hwaccel()) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.is_hwaccel
        if frame_threads:
            stream.codec_context.thread_type = "FRAME"
            stream.codec_context.thread_count = frame_threads
        yield from container.decode(stream)


def cuvid_frames(path: str, codec: str, surfaces: int | None = None) -> Any:
    """Frames of FFmpeg's cuvid decoder, fed the demuxer's packets."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        ctx: Any = av.CodecContext.create(CUVID[codec], "r", hwaccel=_hwaccel())
        ctx.extradata = stream.codec_context.extradata
        ctx.width, ctx.height = stream.codec_context.width, stream.codec_context.height
        if surfaces is not None:
            ctx.options = {"surfaces": str(surfaces)}
        for packet in container.demux(stream):  # its last, empty packet drains the decoder
            yield from ctx.decode(packet)


def cuvid_frames_of(packets: Any, path: str, codec: str) -> Any:
    """Frames of FFmpeg's cuvid decoder fed ``packets`` (an iterable of the stream's packets)."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        ctx: Any = av.CodecContext.create(CUVID[codec], "r", hwaccel=_hwaccel())
        ctx.extradata = stream.codec_context.extradata
        ctx.width, ctx.height = stream.codec_context.width, stream.codec_context.height
    for packet in packets:
        yield from ctx.decode(packet)
    yield from ctx.decode(None)


def packets_of(path: str) -> Any:
    with av.open(path) as container:
        stream = container.streams.video[0]
        for packet in container.demux(stream):
            if packet.size:
                yield packet


def demux_alone(path: str) -> float:
    """Packets a second of the demuxer alone (what a frame's demux costs the decoding thread)."""
    t0 = time.perf_counter()
    count = sum(1 for _ in packets_of(path))
    return count / (time.perf_counter() - t0)


def threaded(frames: Any, depth: int = 8) -> Any:
    """``frames`` decoded ahead on a thread of their own into a queue (as PyNvVideoCodec's
    ThreadedDecoder does)."""
    out: queue.Queue[Any] = queue.Queue(depth)
    end = object()

    def work() -> None:
        for frame in frames:
            out.put(frame)
        out.put(end)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    while (item := out.get()) is not end:
        yield item
    thread.join()


def _pts(frame: Any) -> int | None:
    """A PyAV frame's pts, or a PyNvVideoCodec DecodedFrame's timestamp."""
    return frame.pts if hasattr(frame, "pts") else getattr(frame, "timestamp", None)


def timed(frames: Any) -> tuple[float, list[int | None]]:
    first = next(frames)
    pts = [_pts(first)]
    del first
    t0 = time.perf_counter()
    for frame in frames:
        pts.append(_pts(frame))
    return (len(pts) - 1) / (time.perf_counter() - t0), pts


def plane_hashes(frames: Any, count: int) -> list[tuple[int, ...]]:
    """A sum and a position-weighted sum of every plane of the first ``count`` frames, on the GPU."""
    import cupy

    hashes = []
    for i, frame in enumerate(frames):
        if i == count:
            break
        sums: list[int] = []
        for k, plane in enumerate(frame.planes[:2]):  # NV12 / P010: Y, then interleaved UV at half height
            rows = frame.height if k == 0 else (frame.height + 1) // 2
            width = frame.width * (2 if "10" in str(frame.format.name) else 1)
            memory = cupy.cuda.UnownedMemory(plane.buffer_ptr, plane.line_size * rows, frame)
            data = cupy.ndarray((rows, plane.line_size), cupy.uint8, cupy.cuda.MemoryPointer(memory, 0))[
                :, :width
            ].astype(cupy.int64)
            weights = cupy.arange(data.size, dtype=cupy.int64).reshape(data.shape) % 65521 + 1
            sums += [int(data.sum()), int((data * weights).sum())]
        hashes.append(tuple(sums))
    return hashes


def _nvc() -> Any:
    try:
        import PyNvVideoCodec as nvc
    except ImportError:
        return None
    return nvc


def pynvc_decoder_frames(path: str) -> Any:
    """PyNvVideoCodec's own demuxer and decoder (``CreateDecoder``), on this thread: NVIDIA's parser with
    its output surfaces, without ThreadedDecoder's thread."""
    nvc = _nvc()
    demuxer = nvc.CreateDemuxer(filename=path)
    decoder = nvc.CreateDecoder(gpuid=0, codec=demuxer.GetNvCodecId(), usedevicememory=True)
    for packet in demuxer:
        yield from decoder.Decode(packet)


def pynvc_fed_frames(path: str, codec: str) -> Any:
    """PyNvVideoCodec's decoder fed PyAV's packets (Annex B through FFmpeg's bitstream filter): whether
    NVIDIA's decoder can stand behind alpha2's demuxer, and at what pace."""
    nvc = _nvc()
    nv_codec = getattr(nvc.cudaVideoCodec, codec.upper())
    decoder = nvc.CreateDecoder(gpuid=0, codec=nv_codec, usedevicememory=True)
    with av.open(path) as container:
        stream = container.streams.video[0]
        annexb = av.bitstream.BitStreamFilterContext(f"{codec}_mp4toannexb", stream)
        for packet in container.demux(stream):
            for out in annexb.filter(packet if packet.size else None):
                data = bytearray(bytes(out))
                holder = (ctypes.c_char * len(data)).from_buffer(data)  # alive until Decode returns
                fed = nvc.PacketData()
                fed.bsl_data = ctypes.addressof(holder)
                fed.bsl = len(data)
                fed.pts = out.pts if out.pts is not None else 0
                yield from decoder.Decode(fed)
    end = nvc.PacketData()
    end.bsl = 0
    yield from decoder.Decode(end)


def pynvc_threaded_frames(path: str) -> Any:
    nvc = _nvc()
    decoder = nvc.ThreadedDecoder(
        path, buffer_size=32, gpu_id=0, use_device_memory=True, output_color_type=nvc.OutputColorType.NATIVE
    )
    while batch := decoder.get_batch_frames(32):
        yield from batch


def timed_peer(make: Any) -> str:
    """A PyNvVideoCodec row: its fps (frames after the first), or why it could not run."""
    try:
        fps, pts = timed(make())
    except Exception as exc:  # a peer's API that differs from what this expects: said, not fatal
        return f"    n/a   ({type(exc).__name__}: {exc})"
    return f"{fps:8.1f} fps  {len(pts)} frames"


def measure(codec: str, path: str, repeat: int, check: int) -> None:
    """The rows of one codec's clip, ``repeat`` times, then the planes' check."""
    rows = {
        "hwaccel": lambda: hwaccel_frames(path),
        "hwaccel, thread": lambda: threaded(hwaccel_frames(path)),
        "hwaccel, 2 frame threads": lambda: hwaccel_frames(path, 2),
        "hwaccel, 4 frame threads": lambda: hwaccel_frames(path, 4),
        "hwaccel, 8 frame threads": lambda: hwaccel_frames(path, 8),
        "cuvid": lambda: cuvid_frames(path, codec),
        "cuvid, thread": lambda: threaded(cuvid_frames(path, codec)),
        "cuvid, demux thread": lambda: cuvid_frames_of(threaded(packets_of(path), 32), path, codec),
        "cuvid, demux+decode thr": lambda: threaded(
            cuvid_frames_of(threaded(packets_of(path), 32), path, codec)
        ),
        "cuvid, packets in memory": lambda: cuvid_frames_of(list(packets_of(path)), path, codec),
        "cuvid surfaces 8": lambda: cuvid_frames(path, codec, 8),
        "cuvid surfaces 32, thread": lambda: threaded(cuvid_frames(path, codec, 32)),
    }
    reference: list[int | None] | None = None
    print(f"{codec:5} demux alone             {demux_alone(path):8.1f} packets/s")
    for _ in range(repeat):
        fps, base_pts, note = one_session(path, "cuda")
        print(f"{codec:5} alpha2 one session      {fps:8.1f} fps  {note}")
        reference = base_pts
        for name, make in rows.items():
            fps, pts = timed(make())
            same = "timestamps equal" if pts == reference else f"TIMESTAMPS DIFFER ({len(pts)})"
            print(f"{codec:5} {name:24}{fps:8.1f} fps  {same}")
        if _nvc() is not None:
            peers = {
                "pynvc threaded": lambda: pynvc_threaded_frames(path),
                "pynvc decoder": lambda: pynvc_decoder_frames(path),
                "pynvc fed PyAV packets": lambda: pynvc_fed_frames(path, codec),
                "pynvc fed PyAV, thread": lambda: threaded(pynvc_fed_frames(path, codec)),
            }
            for name, make in peers.items():
                print(f"{codec:5} {name:24}{timed_peer(make)}")
    a = plane_hashes(hwaccel_frames(path), check)
    b = plane_hashes(cuvid_frames(path, codec), check)
    print(f"{codec:5} planes of the first {check}: " + ("equal" if a == b else "DIFFER"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--codecs", default="hevc")
    parser.add_argument("--frames", type=int, default=1800)
    parser.add_argument("--gop", type=int, default=60)
    parser.add_argument("--check", type=int, default=64, help="frames whose planes are compared")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--clip-dir", default="/tmp/clips")
    args = parser.parse_args(argv)
    print(f"# {ENV}={os.environ.get(ENV, '')!r} (alpha2's one session: 'cuvid' decodes HEVC with hevc_cuvid)")
    os.makedirs(args.clip_dir, exist_ok=True)
    for codec in args.codecs.split(","):
        path = os.path.join(args.clip_dir, f"{codec}-{args.frames}-gop{args.gop}.mkv")
        if not os.path.exists(path):
            t0 = time.perf_counter()
            make_clip(path + ".part.mkv", codec, args.frames, args.gop)
            os.replace(path + ".part.mkv", path)
            print(f"# {codec}: made in {time.perf_counter() - t0:.1f} s")
        print(f"# {codec}: {args.frames} frames 1920x1080, GOP {args.gop}")
        measure(codec, path, args.repeat, args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
