"""One file transcoded in one pipeline against ``--segments K`` (the video encoded in K parts of the file
at once, in worker processes, and joined), side by side in one run.

Generates a 1080p clip (a moving pattern with grain, libx264 ultrafast, a key frame every second, AAC
sound), then transcodes it with ``alpha2.api.transcoder.transcode`` once per row (libx264 at
``--preset``, the encoder the limit) and prints, per row: frames, wall seconds, fps, the ratio against
one pipeline, and CPU utilisation (user + system CPU seconds of this process and its workers / wall /
cores), which shows whether all cores were busy. Each segmented output is checked to hold the one
pipeline's frame count.

    python benchmarks/bench_segmented_transcode.py --seconds 4 --segments 2,4 --preset veryfast --repeat 2
    python benchmarks/bench_segmented_transcode.py --seconds 60 --segments 4,8 --hwaccel auto,none  # H200
    python benchmarks/bench_segmented_transcode.py --seconds 600 --tile 30 --segments 8   # 10 minutes, H200
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from typing import Any

import av
import numpy as np
from clips import encode_pattern

from alpha2.api.segmented_transcode import available_cores
from alpha2.api.transcoder import TranscodeOptions, transcode


def make_clip(path: str, seconds: float, width: int = 1920, height: int = 1080, rate: int = 30) -> int:
    """The test clip; returns its frame count."""
    frames = max(1, round(seconds * rate))
    with av.open(path, "w") as out:
        stream: Any = out.add_stream("libx264", rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "ultrafast", "x264-params": f"keyint={rate}:min-keyint={rate}"}
        audio: Any = out.add_stream("aac", rate=48000)
        audio.layout = "stereo"
        encode_pattern(out, stream, frames)
        chunk = audio.codec_context.frame_size or 1024
        total = round(frames / rate * 48000)
        for start in range(0, total, chunk):
            t = np.arange(start, start + chunk) / 48000
            tone = (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
            frame = av.AudioFrame.from_ndarray(np.stack([tone, tone]), format="fltp", layout="stereo")
            frame.sample_rate, frame.pts = 48000, start
            for packet in audio.encode(frame):
                out.mux(packet)
        for packet in audio.encode(None):
            out.mux(packet)
    return frames


def tile_clip(tile: str, path: str, copies: int) -> int:
    """``copies`` copies of the clip ``tile`` joined end to end into ``path`` (packets copied, the
    timestamps of each copy shifted past the one before): a long clip in seconds where encoding one
    takes about as long as it plays (12 minutes for 10 minutes of the grainy 1080p on the H200).
    Every copy starts on a key frame with the same encoder parameters, so the join decodes as one
    stream. Returns the video's frame count."""
    frames = 0
    with av.open(tile) as first:
        video_in, audio_in = first.streams.video[0], first.streams.audio[0]
        with av.open(path, "w") as out:
            video: Any = out.add_stream_from_template(video_in)
            audio: Any = out.add_stream_from_template(audio_in)
            ends: dict[int, int] = {}
            starts: dict[int, int] = {}
            for _ in range(copies):
                # Each copy starts where the one before ended (an AAC copy's priming packets, before
                # 0, move past it too).
                shift = {i: ends[i] - starts[i] for i in ends}
                with av.open(tile) as inp:
                    for packet in inp.demux():
                        if packet.dts is None:
                            continue
                        index = packet.stream.index
                        starts.setdefault(index, packet.dts)
                        offset = shift.get(index, 0)
                        packet.pts = None if packet.pts is None else packet.pts + offset
                        packet.dts += offset
                        ends[index] = max(ends.get(index, packet.dts), packet.dts + (packet.duration or 0))
                        if index == video_in.index:
                            frames += 1
                        packet.stream = video if index == video_in.index else audio
                        out.mux(packet)
    return frames


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers, once waited for
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run(
    source: str, output: str, preset: str, segments: int | None, hwaccel: str = "auto"
) -> tuple[int, float, float, str]:
    """Frames, wall seconds, CPU seconds, and what was done."""
    cpu0, t0 = _cpu_seconds(), time.perf_counter()
    stats = transcode(source, output, TranscodeOptions(preset=preset, segments=segments, hwaccel=hwaccel))
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
    if stats.segments is None:  # the route and where the time went, which say what bounds one pipeline
        done = f"one pipeline; paths {stats.paths.as_dict()}; stages {stats.stages.summary(wall)}"
    else:
        done = str(stats.segments["done"])
    if stats.segments and stats.segments["parts"]:
        done += " (" + ", ".join(f"{p['frames']} in {p['seconds']:.1f} s" for p in stats.segments["parts"])
        done += f"; join {stats.segments['join_seconds']:.2f} s)"
    return stats.frames, wall, cpu, done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="length of the generated clip (default 2)")
    parser.add_argument(
        "--tile",
        type=float,
        default=0.0,
        metavar="S",
        help="encode S seconds of the pattern and join copies of it up to --seconds (packets copied: "
        "10 minutes in seconds, where encoding them takes about as long as they play)",
    )
    parser.add_argument("--segments", default="2,4", help="comma-separated K values (default 2,4)")
    parser.add_argument("--preset", default="veryfast", help="libx264 preset (default veryfast)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds over all rows; each row keeps its fastest (default 1)"
    )
    parser.add_argument(
        "--hwaccel",
        default="auto",
        help="comma-separated decoders, the rows once per value: auto, cuda, none (default auto)",
    )
    args = parser.parse_args(argv)
    counts = [int(k) for k in args.segments.split(",") if k.strip()]
    cores = available_cores()
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "in.mp4")
        t0 = time.perf_counter()
        if 0 < args.tile < args.seconds:
            tile = os.path.join(folder, "tile.mp4")
            make_clip(tile, args.tile)
            frames = tile_clip(tile, source, max(1, round(args.seconds / args.tile)))
        else:
            frames = make_clip(source, args.seconds)
        print(
            f"clip: 1920x1080, {frames} frames ({args.seconds:g} s"
            + (f", copies of {args.tile:g} s joined" if 0 < args.tile < args.seconds else "")
            + "), made in "
            f"{time.perf_counter() - t0:.1f} s; libx264 preset {args.preset}; {cores} cores",
            flush=True,
        )
        print(f"{'row':<14} {'frames':>6} {'wall s':>7} {'fps':>7} {'ratio':>6} {'CPU busy':>8}  done")
        hwaccels = [h.strip() for h in args.hwaccel.split(",") if h.strip()]
        rows = [(h, k) for h in hwaccels for k in [None, *counts]]
        best: dict[tuple[str, int | None], tuple[int, float, float, str]] = {}
        for _ in range(max(1, args.repeat)):  # rounds interleave the rows: a busy moment hits all alike
            for h, k in rows:
                result = run(source, os.path.join(folder, f"out_{h}_{k or 1}.mp4"), args.preset, k, h)
                if result[0] != frames:
                    print(f"error: {result[0]} frames written, the input has {frames}", file=sys.stderr)
                    return 1
                if (h, k) not in best or result[1] < best[h, k][1]:
                    best[h, k] = result
        base: dict[str, float] = {}
        for h, k in rows:
            got, wall, cpu, done = best[h, k]
            fps = got / wall
            base.setdefault(h, fps)
            row = ("one pipeline" if k is None else f"--segments {k}") + ("" if h == "auto" else f" {h}")
            busy = cpu / wall / cores
            print(
                f"{row:<14} {got:>6} {wall:>7.2f} {fps:>7.1f} {fps / base[h]:>5.2f}x {busy:>7.0%}  {done}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
