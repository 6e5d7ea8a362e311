"""Stepping forward through a file by time: ``seek(t)`` + ``next_frame()`` and ``frame_at(t)`` against
iterating the same frames, side by side in one run (software decoding, the default device).

A tool that steps by time (a frame-accurate scrubber, a sampler at a fixed rate) asks for a later time
again and again; each ask decodes on from where the source is where the target is near, instead of
seeking back to the key frame and decoding its GOP again. Prints each way's time and its ratio to
iterating (1.0: as fast as reading the frames in order).

    XDG_RUNTIME_DIR=/tmp python benchmarks/bench_seek_steps.py [--seconds 10 --fps 30 --gop 250 --steps 300]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import alpha2


def make_clip(path: str, seconds: float, fps: int, gop: int) -> None:
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size=640x360:rate={fps}:d={seconds}",
         "-c:v", "libx264", "-g", str(gop), "-pix_fmt", "yuv420p", path],
        check=True,
    )  # fmt: skip


def iterate(path: str, steps: int) -> float:
    with alpha2.open(path) as source:
        t0 = time.perf_counter()
        for n, frame in enumerate(source):
            frame.release()
            if n + 1 >= steps:
                break
        return time.perf_counter() - t0


def seek_steps(path: str, steps: int, fps: int) -> float:
    with alpha2.open(path) as source:
        t0 = time.perf_counter()
        for i in range(steps):
            source.seek(i / fps)
            source.next_frame().release()
        return time.perf_counter() - t0


def frame_at_steps(path: str, steps: int, fps: int) -> float:
    with alpha2.open(path) as source:
        t0 = time.perf_counter()
        for i in range(steps):
            source.frame_at(i / fps).release()
        return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--gop", type=int, default=250, help="frames between key frames (x264's default)")
    parser.add_argument("--steps", type=int, default=300, help="asks, one frame interval apart")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "clip.mp4")
        make_clip(path, args.seconds, args.fps, args.gop)
        base = iterate(path, args.steps)
        rows = [
            ("iterate", base),
            ("seek + next_frame", seek_steps(path, args.steps, args.fps)),
            ("frame_at", frame_at_steps(path, args.steps, args.fps)),
        ]
    print(f"# {args.steps} frames 1/{args.fps} s apart, 640x360 H.264, a key frame every {args.gop} frames")
    for name, seconds in rows:
        print(f"{name:18} {seconds:7.3f} s  {seconds / base:6.2f}x iterating")
    return 0


if __name__ == "__main__":
    sys.exit(main())
