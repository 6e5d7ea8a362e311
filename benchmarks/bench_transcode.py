"""``alpha2 transcode`` against the plain PyAV loop a user would write, side by side in one run.

(a) no processing: the loop decodes and encodes (libx264, same preset and crf); alpha2 transcodes with
    nothing asked for (passthrough: frames go straight to the encoder). Target: alpha2 / loop <= 1.1.
(b) scale to 1280x720: the loop reformats each frame with swscale (``VideoFrame.reformat``); alpha2
    imports and scales the planes straight into NV12 at 1280x720 in one compute pass of the encode
    copier, and encodes. Both do the same colour work: by default (``--colour auto``) the untagged
    BT.601 input becomes BT.709 for the HD output on both sides (swscale's src/dst colorspace, output
    tagged); ``--colour keep`` keeps the input's matrix on both sides. Target on the 2-core lavapipe
    machine: alpha2 / loop <= 1.5.

With ``--hwaccel cuda`` both sides decode on NVDEC: the loop gets frames downloaded by FFmpeg (and scales
them with swscale), alpha2 keeps them on the GPU (GPU copy into Dawn where it can, else reported).

The input is a 1080p H.264 clip (a moving pattern) made with PyAV on first use and cached in /tmp.
Runs alternate loop / alpha2 ``--repeat`` times; the best time of each counts. Prints fps, the ratio,
the share of time per stage on both sides, and the execution paths alpha2 reports; ``--json`` prints
the same as JSON.

    python benchmarks/bench_transcode.py [--frames 240] [--repeat 1] [--preset veryfast] [--crf 23]
                                         [--hwaccel none|cuda] [--only a|b] [--colour auto|keep]
                                         [--json]
"""

from __future__ import annotations

import argparse
import fractions
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import av
import av.codec.hwaccel

from alpha2.api.transcoder import ColourChoice, TranscodeOptions, transcode
from alpha2.gpu.geometry import Size

TARGETS = {"a": 1.1, "b": 1.5}
SCALED = (1280, 720)


# ---------------------------------------------------------------------------------------------------
# input


def make_input(path: Path, frames: int, width: int = 1920, height: int = 1080) -> Path:
    """A 1080p H.264 clip of a moving pattern (veryfast, crf 23), written once and cached."""
    if path.exists():
        return path
    tmp = path.with_name(path.name + ".partial.mp4")
    y, x = np.mgrid[0:height, 0:width]
    blocks = ((x // 64 + y // 64) % 2).astype(np.uint8) * 160 + 40
    with av.open(str(tmp), "w") as out:
        stream = out.add_stream("libx264", rate=30, options={"preset": "veryfast", "crf": "23"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            rgb = np.empty((height, width, 3), np.uint8)
            rgb[..., 0] = (x + 8 * i) & 0xFF
            rgb[..., 1] = (y + 4 * i) & 0xFF
            rgb[..., 2] = np.roll(blocks, 6 * i, axis=1)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------------------------------
# the plain loop


def plain_loop(
    src: Path,
    dst: Path,
    *,
    scale: tuple[int, int] | None,
    preset: str,
    crf: float,
    hwaccel: str,
    ring: int = 3,
    colour: str = "auto",
) -> dict[str, Any]:
    """Decode, (reformat,) encode with libx264: what a user writes with PyAV. Returns time and stage times."""
    accel = None
    if hwaccel == "cuda":
        accel = av.codec.hwaccel.HWAccel(device_type="cuda", allow_software_fallback=False)
    stages = {"decode": 0.0, "reformat": 0.0, "encode": 0.0}
    # Like for like: when alpha2 converts the (untagged, BT.601) input to BT.709 for the HD output, the
    # loop asks swscale for the same matrix change and tags its output, as a careful user would.
    convert = bool(scale) and colour == "auto"
    matrix_change: dict[str, Any] = (
        {"src_colorspace": "ITU601", "dst_colorspace": "ITU709"} if convert else {}
    )
    clock = time.perf_counter
    start = clock()
    frames = 0
    with av.open(str(src), hwaccel=accel) as inp, av.open(str(dst), "w") as out:
        vin = inp.streams.video[0]
        vin.thread_type = "AUTO"
        vout = out.add_stream("libx264", rate=vin.average_rate, options={"preset": preset, "crf": f"{crf:g}"})
        vout.width, vout.height = scale if scale else (vin.codec_context.width, vin.codec_context.height)
        vout.pix_fmt = "yuv420p"
        if convert:
            vout.codec_context.colorspace = 1  # AVCOL_SPC_BT709
            vout.codec_context.color_range = 1  # AVCOL_RANGE_MPEG (limited)
        time_base = vin.time_base or fractions.Fraction(1, 90_000)
        vout.codec_context.time_base = time_base
        vout.time_base = time_base
        decoded = inp.decode(vin)
        while True:
            t0 = clock()
            frame = next(decoded, None)
            t1 = clock()
            stages["decode"] += t1 - t0
            if frame is None:
                break
            if scale:
                frame = frame.reformat(width=scale[0], height=scale[1], format="yuv420p", **matrix_change)
            t2 = clock()
            stages["reformat"] += t2 - t1
            for packet in vout.encode(frame):
                out.mux(packet)
            stages["encode"] += clock() - t2
            frames += 1
        t0 = clock()
        for packet in vout.encode(None):
            out.mux(packet)
        stages["encode"] += clock() - t0
    seconds = clock() - start
    if not scale:
        del stages["reformat"]
    return {"frames": frames, "seconds": seconds, "stages": stages}


def alpha2_run(
    src: Path,
    dst: Path,
    *,
    scale: tuple[int, int] | None,
    preset: str,
    crf: float,
    hwaccel: str,
    ring: int = 3,
    colour: str = "auto",
) -> dict[str, Any]:
    """``alpha2 transcode`` in-process, same encoder settings."""
    options = TranscodeOptions(
        colour=ColourChoice(colour),
        codec="libx264",
        size=Size(*scale) if scale else None,
        preset=preset,
        crf=crf,
        hwaccel=hwaccel,
        audio=False,
        ring_size=ring,
    )
    stats = transcode(src, dst, options).as_dict()
    return {
        "frames": stats["frames"],
        "seconds": stats["seconds"],
        "stages": {k: v["seconds"] for k, v in stats["stages"].items()},
        "mode": stats["mode"],
        "reason": stats["reason"],
        "paths": stats["paths"],
        "bytes_through_cpu": stats["bytes_through_cpu"],
        "peak_surfaces": stats["peak_surfaces"],
        "encoder": stats["encoder"]["name"],
        "hwaccel": stats["hwaccel"],
        "device": stats["device"],
    }


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (all threads: decoder, encoder, lavapipe)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measured(runner: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Run one side and add the CPU seconds it used."""
    start = cpu_seconds()
    result = runner(*args, **kwargs)
    result["cpu_seconds"] = cpu_seconds() - start
    return result


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    chosen = min(runs, key=lambda r: r["seconds"])
    return {**chosen, "all_seconds": [round(r["seconds"], 3) for r in runs]}


def compare(
    name: str,
    src: Path,
    workdir: Path,
    repeat: int,
    scale: tuple[int, int] | None,
    **kwargs: Any,
) -> dict[str, Any]:
    loops: list[dict[str, Any]] = []
    ours: list[dict[str, Any]] = []
    runners: list[tuple[list[dict[str, Any]], Callable[..., dict[str, Any]], str]] = [
        (loops, plain_loop, "loop"),
        (ours, alpha2_run, "alpha2"),
    ]
    for i in range(repeat):
        for sink, runner, label in runners if i % 2 == 0 else runners[::-1]:
            sink.append(measured(runner, src, workdir / f"{name}_{label}_{i}.mp4", scale=scale, **kwargs))
    loop, alpha2 = best(loops), best(ours)
    assert loop["frames"] == alpha2["frames"], (loop["frames"], alpha2["frames"])
    ratio = alpha2["seconds"] / loop["seconds"]
    return {
        "case": name,
        "scale": list(scale) if scale else None,
        "frames": loop["frames"],
        "loop": {**loop, "fps": loop["frames"] / loop["seconds"]},
        "alpha2": {**alpha2, "fps": alpha2["frames"] / alpha2["seconds"]},
        "ratio": ratio,
        "target": TARGETS[name],
        "met": ratio <= TARGETS[name],
    }


def shares(stages: dict[str, float], total: float) -> str:
    parts = sorted(stages.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in parts if total > 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=240, help="frames in the generated 1080p clip")
    parser.add_argument("--input", type=Path, help="use this clip instead of the generated one")
    parser.add_argument("--repeat", type=int, default=1, help="runs per side (best counts)")
    parser.add_argument("--preset", default="veryfast")
    parser.add_argument("--crf", type=float, default=23)
    parser.add_argument("--hwaccel", choices=("none", "cuda"), default="none")
    parser.add_argument("--only", choices=("a", "b"), help="run one comparison")
    parser.add_argument("--ring", type=int, default=3, help="encode copier read-back slots (alpha2)")
    parser.add_argument(
        "--colour",
        choices=("auto", "keep"),
        default="auto",
        help="output colour on both sides: auto converts the (BT.601) input to BT.709 for the HD output "
        "(alpha2 on the GPU, the loop with swscale); keep keeps the input's matrix",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    src = args.input or make_input(
        Path(tempfile.gettempdir()) / f"alpha2_bench_1080p_{args.frames}.mp4", args.frames
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="alpha2_bench_") as tmp:
        kwargs = {
            "preset": args.preset,
            "crf": args.crf,
            "hwaccel": args.hwaccel,
            "ring": args.ring,
            "colour": args.colour,
        }
        if args.only in (None, "a"):
            results.append(compare("a", src, Path(tmp), args.repeat, None, **kwargs))
        if args.only in (None, "b"):
            results.append(compare("b", src, Path(tmp), args.repeat, SCALED, **kwargs))
    report = {
        "input": str(src),
        "cpu_count": os.cpu_count(),
        "preset": args.preset,
        "crf": args.crf,
        "hwaccel": args.hwaccel,
        "colour": args.colour,
        "results": results,
    }
    if args.json:
        print(
            json.dumps(report, indent=2, default=lambda o: str(o) if isinstance(o, fractions.Fraction) else o)
        )
        return 0
    print(
        f"input {src} ({results[0]['frames'] if results else '?'} frames), {os.cpu_count()} CPUs, "
        f"libx264 {args.preset} crf {args.crf:g}, hwaccel {args.hwaccel}, alpha2 --colour {args.colour}"
    )
    for r in results:
        title = "(a) no processing" if r["case"] == "a" else f"(b) scale to {r['scale'][0]}x{r['scale'][1]}"
        loop, ours = r["loop"], r["alpha2"]
        print(f"\n{title}")
        print(
            f"  plain PyAV loop : {loop['seconds']:7.2f} s {loop['fps']:6.1f} fps  runs {loop['all_seconds']}"
        )
        print(
            f"                    {shares(loop['stages'], loop['seconds'])}; CPU {loop['cpu_seconds']:.1f} s"
        )
        print(
            f"  alpha2 transcode: {ours['seconds']:7.2f} s {ours['fps']:6.1f} fps  runs {ours['all_seconds']}"
        )
        print(
            f"                    {shares(ours['stages'], ours['seconds'])}; CPU {ours['cpu_seconds']:.1f} s"
        )
        print(
            f"                    {ours['mode']}: paths {ours['paths']}, "
            f"{ours['bytes_through_cpu'] / 1e6:.0f} MB through the CPU, decoder {ours['hwaccel']['active']}"
            + (
                f", device {ours['device']['implementation']} on {ours['device']['adapter']}"
                if ours["device"]
                else ""
            )
        )
        verdict = "met" if r["met"] else "NOT met"
        print(f"  ratio alpha2/loop {r['ratio']:.3f} (target <= {r['target']}: {verdict})")
    ratios = [r["ratio"] for r in results]
    if ratios:
        print(f"\nmedian ratio {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
