"""Where the one-process import of N streams spends its time: ``bench_streams``'s import mode, timed.

The timers are ``profile_import``'s: a wrapper on each of alpha2's per-frame functions (decoding on the
decode-ahead threads, the import and its CUDA calls on the caller's, the copy completions on the waiter
thread) records wall time per call and per thread. cProfile is not used: on Python 3.12 it listens to
``sys.monitoring`` in every thread at once, so a call's time includes whatever other threads ran in the
meantime. Its figures for this benchmark (1.9 ms per ``cuMemcpy2DAsync``, in the session of 2026-12-01)
were that artifact, not driver contention (BENCHMARKS.md, "Many streams").

    python benchmarks/profile_streams.py --streams 4                 # H200: NVDEC + GPU copy
    python benchmarks/profile_streams.py --streams 2 --hwaccel none --size 320x180 --frames 60
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import bench_streams
import profile_import

from alpha2.gpu.geometry import Size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--codec", default="h264")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--frames", type=int, default=900)
    parser.add_argument("--hwaccel", default="cuda")
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "alpha2_bench_streams"))
    parser.add_argument(
        "--inline", action="store_true", help="the GPU copy at import, not on the decoders' threads"
    )
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    os.makedirs(args.dir, exist_ok=True)
    clip = bench_streams.make_clips(args.dir, [args.codec], Size(width, height), args.frames)[args.codec]
    profile_import.install_timers()
    cpu = time.process_time()
    frames, seconds = bench_streams.import_only(clip, args.streams, args.hwaccel, copy_ahead=not args.inline)
    print(
        f"N={args.streams}: {frames} frames in {seconds:.2f} s = {frames / seconds:.0f} fps (timed); "
        f"process CPU {time.process_time() - cpu:.1f} s"
    )
    for line in bench_streams.NOTES:
        print(line)
    profile_import.report(f"{args.streams} streams, one importing thread", frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
