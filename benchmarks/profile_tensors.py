"""Where ``to_tensor`` of one frame at a time spends its time (``bench_ml``'s tensors row), timed.

Each stage of the caller's thread is timed per frame with ``perf_counter`` (taking the next decoded
frame, importing it, the render and pack, the export, the tensor's wrapping), so that the stage that
keeps the loop below the decoder's pace shows; decoding alone is timed the same way first. Run it
under ``py-spy record --format raw`` for the call stacks (cProfile on 3.12 mixes the threads' times).

    python benchmarks/profile_tensors.py --frames 300            # H200: NVDEC, Dawn, the CUDA export
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import bench_ml

import alpha2
from alpha2.api import tensors
from alpha2.native_gpu.interop import tensor_export
from alpha2.native_gpu.render import tensor as tensor_pass

TIMES: dict[str, list[float]] = collections.defaultdict(list)


def timed(owner: Any, name: str, label: str) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            TIMES[label].append(time.perf_counter() - t0)

    setattr(owner, name, wrapper)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--hwaccel", default="cuda")
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "alpha2_profile_tensors"))
    parser.add_argument(
        "--no-copy-ahead",
        dest="copy_ahead",
        action="store_const",
        const=False,
        default=None,
        help="open(..., copy_ahead=False): the GPU copy at import (by default it is made on the decoder's "
        "thread once frames go to tensors)",
    )
    parser.add_argument(
        "--batch", type=int, default=1, metavar="N", help="with --cprofile: N frames a to_tensor call"
    )
    parser.add_argument(
        "--cprofile",
        type=int,
        default=0,
        metavar="N",
        help="profile the caller's thread with cProfile instead of the stage timers; print the top N",
    )
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, f"clip-{args.frames}.mp4")
    if not os.path.exists(path):
        bench_ml.make_clip(path + ".part.mp4", args.frames + 1, 250)
        os.replace(path + ".part.mp4", path)
    options = {"size": (224, 224), "dtype": "float16", "layout": "CHW", "mean": 0.5, "std": 0.25}

    alone, _ = bench_ml.sequential_alpha2(path, args.hwaccel)
    print(f"decode alone {alone:.1f} fps")

    from alpha2.api.source import Frame

    if args.cprofile:
        return profile_calls(path, args, options, alone)
    timed(Frame, "_import", "import (lease)")
    timed(tensor_pass.RgbTensorPass, "pack_into_textures", "render + pack + export per frame")
    timed(tensor_export.TensorExporter, "batch", "exporter.batch (memory, slots)")
    timed(tensor_export.ExportBatch, "begin_frame", "  begin_frame (Dawn access)")
    timed(tensor_export.ExportBatch, "end_frame", "  end_frame (fence, CUDA copy)")
    timed(tensor_export.ExportBatch, "finish", "batch.finish")
    timed(tensors, "to_tensor", "to_tensor (all)")
    with alpha2.open(path, hwaccel=args.hwaccel, copy_ahead=args.copy_ahead) as source:
        iterator = iter(source)
        first = next(iterator)
        first.to_tensor(**options)
        TIMES.clear()
        n = 0
        t0 = time.perf_counter()
        while True:
            t1 = time.perf_counter()
            frame = next(iterator, None)
            TIMES["next frame (waits for the decoder)"].append(time.perf_counter() - t1)
            if frame is None:
                break
            frame.to_tensor(**options)
            n += 1
        seconds = time.perf_counter() - t0
    print(f"to_tensor loop {n / seconds:.1f} fps over {n} frames ({seconds:.2f} s); decode alone {alone:.1f}")
    for label, values in TIMES.items():
        print(
            f"  {label:40} {len(values):5d} calls  mean {statistics.fmean(values) * 1e3:7.3f} ms  "
            f"median {statistics.median(values) * 1e3:7.3f}  total {sum(values):6.3f} s"
        )
    return 0


def profile_calls(path: str, args: argparse.Namespace, options: dict[str, Any], alone: float) -> int:
    """The loop under cProfile (which sees the thread it is enabled on: the caller's), the top calls by
    their own time and by their cumulative time."""
    import cProfile
    import pstats

    with alpha2.open(path, hwaccel=args.hwaccel, copy_ahead=args.copy_ahead) as source:
        first = source.next_frame()
        assert first is not None
        first.to_tensor(**options)
        first.release()
        profiler = cProfile.Profile()
        n = 0
        held: list[Any] = []
        t0 = time.perf_counter()
        profiler.enable()
        while (frame := source.next_frame()) is not None:
            held.append(frame)
            if len(held) < args.batch:
                continue
            source.to_tensor(held, **options)
            for done in held:
                done.release()
            n += len(held)
            held = []
        profiler.disable()
        seconds = time.perf_counter() - t0
        for done in held:
            done.release()
    print(
        f"to_tensor loop under cProfile {n / seconds:.1f} fps over {n} frames, {args.batch} a call; "
        f"decode alone {alone:.1f}"
    )
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(args.cprofile)
    stats.sort_stats("cumulative").print_stats(args.cprofile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
