"""Where the one-process import of N streams spends its time: ``bench_streams``'s import mode under cProfile.

cProfile sees the main thread (the imports); a call's cumulative time includes waiting for the GIL and
for locks the CUDA driver takes, which is what this is for: it found the per-frame fence import and
destruction contending with every stream's copies (BENCHMARKS.md, "Many streams").

    python benchmarks/profile_streams.py --streams 4                 # H200: NVDEC + GPU copy
    python benchmarks/profile_streams.py --streams 2 --hwaccel none --size 320x180 --frames 60
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import bench_streams

from alpha2.gpu.geometry import Size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--codec", default="h264")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--frames", type=int, default=900)
    parser.add_argument("--hwaccel", default="cuda")
    parser.add_argument("--top", type=int, default=28, help="rows of each table")
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "alpha2_bench_streams"))
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    os.makedirs(args.dir, exist_ok=True)
    clip = bench_streams.make_clips(args.dir, [args.codec], Size(width, height), args.frames)[args.codec]
    profile = cProfile.Profile()
    cpu, wall = time.process_time(), time.perf_counter()
    profile.enable()
    frames, seconds = bench_streams.import_only(clip, args.streams, args.hwaccel)
    profile.disable()
    print(
        f"N={args.streams}: {frames} frames in {seconds:.2f} s = {frames / seconds:.0f} fps (profiled); "
        f"process CPU {time.process_time() - cpu:.1f} s in {time.perf_counter() - wall:.1f} s"
    )
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
