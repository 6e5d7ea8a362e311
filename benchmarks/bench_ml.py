"""Frames for machine learning, against NVIDIA's PyNvVideoCodec, side by side in one run.

One 1080p H.264 clip (a key frame every ``--gop`` frames, grain), then:

- ``sequential``: every frame as a CUDA array: alpha2 (``frame.plane(0)`` through DLPack, one
  session) against PyNvVideoCodec's SimpleDecoder (batches of 32); with ``--processes 7,14`` also N
  processes at once, each decoding the clip (start-up outside the timing, a barrier starts them);
- ``random 32``: 32 frames at random times as CUDA arrays: alpha2 ``source.frames_at`` (one batch:
  sorted, one forward pass per GOP, copied into the frame pool), the same batch spread over one
  session per NVDEC engine (``parallel='auto'``: a GOP's asks on one) and a loop of ``frame_at``,
  against PyNvVideoCodec's ``get_batch_frames_by_index``;
- ``tensors``: RGB tensors of every frame by alpha2's exact conversion (``to_tensor``, CUDA through
  the GPU copy where the device has it) at 224x224 float16 CHW normalised and at 1080p uint8 HWC,
  against decoding alone.

Start-up (opening the file) is outside the timings.

    python benchmarks/bench_ml.py --frames 900 --gop 250 --processes 7,14
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import tempfile
import time
from typing import Any

import av
from clips import encode_pattern

import alpha2


def make_clip(path: str, frames: int, gop: int, width: int = 1920, height: int = 1080) -> None:
    with av.open(path, "w") as out:
        stream: Any = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "veryfast", "x264-params": f"keyint={gop}:min-keyint={gop}"}
        encode_pattern(out, stream, frames, seed=2)


def _pynvc() -> Any:
    try:
        import PyNvVideoCodec as nvc
    except ImportError:
        return None
    return nvc


def _timed_alpha2(path: str, hwaccel: str, ready: Any = None) -> tuple[int, float, float, str]:
    """Open (outside the timing), take the first frame, ``ready()`` (a barrier's wait, or nothing), then
    every frame as a CUDA array: (frames after the first, start, end, how it decoded)."""
    with alpha2.open(path, hwaccel=hwaccel) as source:
        first = source.next_frame()
        assert first is not None
        first.plane(0)
        first.release()
        if ready is not None:
            ready()
        n = 0
        t0 = time.perf_counter()
        while (frame := source.next_frame()) is not None:
            frame.plane(0).__dlpack__()
            frame.release()
            n += 1
        return n, t0, time.perf_counter(), source.hwaccel


def _timed_pynvc(nvc: Any, path: str, ready: Any = None) -> tuple[int, float, float]:
    """The same with PyNvVideoCodec's SimpleDecoder (batches of 32)."""
    decoder = nvc.SimpleDecoder(
        path, gpu_id=0, use_device_memory=True, output_color_type=nvc.OutputColorType.NATIVE
    )
    decoder.get_batch_frames(1)
    if ready is not None:
        ready()
    n = 0
    t0 = time.perf_counter()
    while batch := decoder.get_batch_frames(32):
        n += len(batch)
    return n, t0, time.perf_counter()


def sequential_alpha2(path: str, hwaccel: str) -> tuple[float, str]:
    n, t0, t1, how = _timed_alpha2(path, hwaccel)
    return n / (t1 - t0), how


def sequential_pynvc(nvc: Any, path: str) -> float:
    n, t0, t1 = _timed_pynvc(nvc, path)
    return n / (t1 - t0)


def _sequential_worker(who: str, path: str, hwaccel: str, start: Any, out: Any) -> None:
    """One process of the N-process rows: open (outside the timing), wait for the others, decode every
    frame as a CUDA array, report (frames, start, end)."""
    if who == "alpha2":
        n, t0, t1, _how = _timed_alpha2(path, hwaccel, start.wait)
    else:
        n, t0, t1 = _timed_pynvc(_pynvc(), path, start.wait)
    out.put((n, t0, t1))


def sequential_procs(who: str, path: str, hwaccel: str, n: int) -> float:
    """Every frame of the clip as CUDA arrays in each of ``n`` processes at once: frames per second in all."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(n)
    out = ctx.Queue()
    procs = [ctx.Process(target=_sequential_worker, args=(who, path, hwaccel, start, out)) for _ in range(n)]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join()
    return sum(r[0] for r in results) / (max(r[2] for r in results) - min(r[1] for r in results))


def random_alpha2(
    path: str, hwaccel: str, times: list[float], *, batch: bool, parallel: str | None = None
) -> tuple[float, str]:
    with alpha2.open(path, hwaccel=hwaccel, parallel=parallel) as source:
        len(source)  # the index, as PyNvVideoCodec's constructor scans the stream: outside the timing
        t0 = time.perf_counter()
        if batch:
            frames = source.frames_at(times)
            for frame in frames:
                frame.plane(0).__dlpack__()
        else:
            frames = []
            for t in times:  # each frame used, then let go (NVDEC lends a session 8 by default)
                frame = source.frame_at(t)
                frame.plane(0).__dlpack__()
                frame.release()
        seconds = time.perf_counter() - t0
        for frame in frames:
            frame.release()
        return seconds, source.batch_reason


def random_pynvc(nvc: Any, path: str, indices: list[int]) -> float:
    decoder = nvc.SimpleDecoder(
        path, gpu_id=0, use_device_memory=True, output_color_type=nvc.OutputColorType.NATIVE
    )
    t0 = time.perf_counter()
    frames = decoder.get_batch_frames_by_index(indices)
    seconds = time.perf_counter() - t0
    assert len(frames) == len(indices)
    return seconds


def tensors_alpha2(
    path: str, hwaccel: str, frames: int, open_options: dict[str, Any] | None = None, **options: Any
) -> tuple[float, str]:
    with alpha2.open(path, hwaccel=hwaccel, **(open_options or {})) as source:
        n = 0
        note = ""
        t0 = None
        for frame in source:
            tensor = frame.to_tensor(**options)
            if t0 is None:  # the first frame makes the device objects: outside the timing
                t0 = time.perf_counter()
                note = (
                    f"{tensor.path.value}, route {getattr(tensor, 'route', 'dawn')}: {tensor.report.reason}"
                )
                continue
            n += 1
            if n >= frames:
                break
        if hasattr(tensor, "wait"):
            tensor.wait()
        assert t0 is not None
        return n / (time.perf_counter() - t0), note + _ahead_note(source)


def _ahead_note(source: Any) -> str:
    """How many NVDEC frames the decoder's thread copied ahead, and how many were copied at import."""
    stats = source.importer.stats()
    return f"; copied ahead {stats.copied_ahead}, at import {stats.not_copied_ahead}"


def tensors_batched(
    path: str, hwaccel: str, frames: int, batch: int, open_options: dict[str, Any], **options: Any
) -> tuple[float, str]:
    """Frames in order, ``batch`` of them at a time made into one stacked tensor (``source.to_tensor``);
    the first batch makes the device objects, outside the timing."""
    with alpha2.open(path, hwaccel=hwaccel, **open_options) as source:
        held: list[Any] = []
        n = 0
        note = ""
        t0 = None
        tensor = None
        while n < frames:
            frame = source.next_frame()
            if frame is None:
                break
            held.append(frame)
            if len(held) < batch:
                continue
            tensor = source.to_tensor(held, **options)
            for done in held:
                done.release()
            held = []
            if t0 is None:
                t0 = time.perf_counter()
                note = (
                    f"{tensor.path.value}, route {getattr(tensor, 'route', 'dawn')}: {tensor.report.reason}"
                )
                continue
            n += batch
        for done in held:
            done.release()
        if tensor is not None and hasattr(tensor, "wait"):
            tensor.wait()
        assert t0 is not None, "the clip is shorter than two batches"
        return n / (time.perf_counter() - t0), note + _ahead_note(source)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--frames", type=int, default=900)
    parser.add_argument("--gop", type=int, default=250)
    parser.add_argument("--hwaccel", default="cuda")
    parser.add_argument("--asks", type=int, default=32)
    parser.add_argument("--tensor-frames", type=int, default=300)
    parser.add_argument("--clip-dir")
    parser.add_argument(
        "--processes", default="", help="also N processes at once, each decoding the clip: e.g. 7,14"
    )
    parser.add_argument(
        "--rows",
        default="sequential,random,tensors",
        help="which rows to measure (comma-separated): sequential (with --processes), random, tensors",
    )
    parser.add_argument(
        "--tensor-batch",
        type=int,
        default=0,
        metavar="N",
        help="also the tensor rows with N frames a call, one stacked tensor (an NVDEC session lends 8)",
    )
    parser.add_argument(
        "--copy-ahead",
        action="store_true",
        help="also the tensor rows with open(..., copy_ahead=False): the GPU copy at import, where by "
        "default it is made on the decoder's thread once frames go to tensors",
    )
    parser.add_argument(
        "--bilinear",
        action="store_true",
        help="also the 224x224 rows with to_tensor(..., antialias=False): one bilinear sample a pixel, "
        "against the antialiased default in the same run",
    )
    args = parser.parse_args(argv)
    nvc = _pynvc()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.clip_dir or tmp
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"ml-{args.frames}-gop{args.gop}.mp4")
        if not os.path.exists(path):
            make_clip(path + ".part.mp4", args.frames, args.gop)
            os.replace(path + ".part.mp4", path)
        peer_version = nvc.__version__ if nvc else "absent"
        print(f"# 1080p H.264, {args.frames} frames, GOP {args.gop}; PyNvVideoCodec: {peer_version}")
        rows = {r.strip() for r in args.rows.split(",") if r.strip()}
        if "sequential" in rows:
            sequential_rows(nvc, path, args)
        if "random" in rows:
            random_rows(nvc, path, args)
        if "tensors" in rows:
            tensor_rows(path, args)
    return 0


def sequential_rows(nvc: Any, path: str, args: argparse.Namespace) -> None:
    fps, how = sequential_alpha2(path, args.hwaccel)
    line = f"sequential  alpha2 plane(0)   {fps:8.1f} fps ({how})"
    if nvc is not None:
        peer = sequential_pynvc(nvc, path)
        line += f"; PyNvVideoCodec {peer:.1f} fps; ratio {fps / peer:.3f}"
    print(line)
    for count in [int(c) for c in args.processes.split(",") if c.strip()]:
        fps = sequential_procs("alpha2", path, args.hwaccel, count)
        line = f"sequential  N={count:<3d} processes   {fps:8.1f} fps in all"
        if nvc is not None:
            peer = sequential_procs("pynvc", path, args.hwaccel, count)
            line += f"; PyNvVideoCodec {peer:.1f} fps; ratio {fps / peer:.3f}"
        print(line)


def random_rows(nvc: Any, path: str, args: argparse.Namespace) -> None:
    rng = random.Random(5)
    indices = sorted(rng.sample(range(args.frames - 1), args.asks), key=lambda _: rng.random())
    times = [i / 30 + 0.001 for i in indices]
    batch, _ = random_alpha2(path, args.hwaccel, times, batch=True)
    spread, how = random_alpha2(path, args.hwaccel, times, batch=True, parallel="auto")
    loop, _ = random_alpha2(path, args.hwaccel, times, batch=False)
    peer_s = random_pynvc(nvc, path, indices) if nvc is not None else None
    for label, seconds in (("frames_at", batch), ("frames_at parallel='auto'", spread)):
        line = f"random {args.asks}   alpha2 {label:26} {seconds:.3f} s"
        if peer_s is not None:
            peer = f"PyNvVideoCodec get_batch_frames_by_index {peer_s:.3f} s"
            line += f"; {peer}; time ratio {seconds / peer_s:.2f}"
        print(line + (f" ({how})" if "parallel" in label else ""))
    print(f"random {args.asks}   alpha2 a loop of frame_at      {loop:.3f} s")


def tensor_rows(path: str, args: argparse.Namespace) -> None:
    alone, _ = sequential_alpha2(path, args.hwaccel)
    variants: list[tuple[str, dict[str, Any]]] = [("", {})]
    if args.copy_ahead:
        variants.append((" copy_ahead=False", {"copy_ahead": False}))
    small = {"size": (224, 224), "dtype": "float16", "layout": "CHW", "mean": 0.5, "std": 0.25}
    shapes: list[tuple[str, dict[str, Any]]] = [("224x224 float16 CHW", small)]
    if args.bilinear:
        shapes.append(("224x224 f16 CHW bilinear", {**small, "antialias": False}))
    shapes.append(("1080p uint8 HWC", {}))
    for label, options in shapes:
        for variant, open_options in variants:
            fps, note = tensors_alpha2(path, args.hwaccel, args.tensor_frames, open_options, **options)
            print(
                f"tensors {label + variant:31} {fps:8.1f} fps, {fps / alone:.2f} of decode alone "
                f"({alone:.1f}); {note}"
            )
            if args.tensor_batch > 1:
                fps, note = tensors_batched(
                    path, args.hwaccel, args.tensor_frames, args.tensor_batch, open_options, **options
                )
                name = f"{label}{variant} x{args.tensor_batch}"
                print(
                    f"tensors {name:31} {fps:8.1f} fps, {fps / alone:.2f} of decode alone "
                    f"({alone:.1f}); {note}"
                )


if __name__ == "__main__":
    sys.exit(main())
