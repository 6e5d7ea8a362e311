"""Frames per second of decoding alone and of ``to_tensor`` (issue 27's 224x224 float16 row, a frame a
call) on a clip of ``bench_ml.py`` of any length, bare, for a run under ``py-spy record --threads``
(each thread's share: the caller's, the decoder's, the waiter's), or under cProfile (``--profile``: on
Python 3.12 it counts every thread). ``profile_tensors.py`` times the caller's stages instead.

    py-spy record --threads --idle --format raw -o spy.txt -- \
        python benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 1800 --rows tensors
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from typing import Any

from bench_ml import make_clip

import alpha2

SMALL = {"size": (224, 224), "dtype": "float16", "layout": "CHW", "mean": 0.5, "std": 0.25}


def run(path: str, hwaccel: str, frames: int, tensors: bool, profile: bool) -> float:
    with alpha2.open(path, hwaccel=hwaccel) as source:
        first = source.next_frame()
        assert first is not None
        if tensors:
            first.to_tensor(**SMALL).wait()
        else:
            first.plane(0)
        first.release()
        profiler = cProfile.Profile() if profile else None
        n = 0
        tensor: Any = None
        t0 = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        for frame in source:
            if tensors:
                tensor = frame.to_tensor(**SMALL)
            else:
                frame.plane(0)
            frame.release()
            n += 1
            if n >= frames:
                break
        if tensor is not None:
            tensor.wait()
        seconds = time.perf_counter() - t0
        if profiler is not None:
            profiler.disable()
            text = io.StringIO()
            stats = pstats.Stats(profiler, stream=text)
            stats.sort_stats("tottime").print_stats(28)
            stats.sort_stats("cumulative").print_stats(40)
            print(text.getvalue())
    return n / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clip-dir", default="/tmp/clips")
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--clip-frames", type=int, default=600, help="the clip's length (GOP 250)")
    parser.add_argument("--hwaccel", default="cuda")
    parser.add_argument("--rows", default="decode,tensors")
    parser.add_argument("--profile", action="store_true", help="under cProfile (every thread on Python 3.12)")
    parser.add_argument(
        "--switch-interval",
        type=float,
        help="sys.setswitchinterval in seconds (CPython's default 0.005): how soon a thread back from a "
        "driver call gets the GIL from the one running Python",
    )
    parser.add_argument(
        "--dawn-toggles",
        default="",
        help="Dawn toggles to enable on every device, comma-separated (e.g. skip_validation, "
        "vulkan_use_dynamic_rendering): set on wgpudawn's instance before alpha2 makes one",
    )
    args = parser.parse_args(argv)
    toggles = [t for t in args.dawn_toggles.split(",") if t]
    if toggles:
        from wgpudawn.backends.dawn import extras

        extras.set_instance_extras(enable_toggles=toggles)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    os.makedirs(args.clip_dir, exist_ok=True)
    path = os.path.join(args.clip_dir, f"ml-{args.clip_frames}-gop250.mp4")
    if not os.path.exists(path):
        make_clip(path + ".part.mp4", args.clip_frames, 250)
        os.replace(path + ".part.mp4", path)
    for row in args.rows.split(","):
        fps = run(path, args.hwaccel, args.frames, row == "tensors", args.profile)
        notes = ", under cProfile" if args.profile else ""
        notes += f", switch interval {sys.getswitchinterval():g} s"
        if toggles:
            notes += f", Dawn toggles {'+'.join(toggles)}"
        print(f"{row:8} {fps:8.1f} fps ({args.frames} frames{notes})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
