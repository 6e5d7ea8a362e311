"""``alpha2 batch`` on N files against ``alpha2 transcode`` run one file at a time, and against N
``alpha2 transcode`` processes started at once; side by side in one run.

Each side is a command line, timed from its start to its end (process start-up included: that is what
a user waits for): (1) ``alpha2 transcode`` once per file, one after another; (2) N ``alpha2 transcode``
processes at once; (3) one ``alpha2 batch`` over the folder (``--force``: nothing is skipped). All three
get the same transcode options (``--args``). The clips are N different moving patterns (H.264, libx264
veryfast), made with PyAV on first use and cached in the temporary folder. Prints seconds, fps over all
files, CPU seconds of the children, and the ratios; ``--json`` prints the same as JSON. With
``--shared``, a fourth side: the same ``alpha2 batch`` with ``--shared-device`` (one worker process per
device, its files on threads sharing one Device), and its ratio to the third (issue 29's target: 1.3).

    python benchmarks/bench_batch.py [--files 8] [--frames 120] [--clip-size 1920x1080]
                                     [--args "--preset veryfast"] [--batch-args "--streams 4"]
                                     [--shared] [--repeat 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import av

COMMAND = [sys.executable, "-m", "alpha2.apps.cli"]


def make_clips(folder: Path, files: int, frames: int, width: int, height: int) -> list[Path]:
    """``files`` H.264 clips of a moving pattern, each shifted differently; made once and cached."""
    folder.mkdir(parents=True, exist_ok=True)
    y, x = np.mgrid[0:height, 0:width]
    paths = []
    for n in range(files):
        path = folder / f"clip{n:03d}.mp4"
        paths.append(path)
        if path.exists():
            continue
        tmp = folder / f".clip{n:03d}.partial.mp4"
        with av.open(str(tmp), "w") as out:
            stream: Any = out.add_stream("libx264", rate=30, options={"preset": "veryfast", "crf": "23"})
            stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
            for i in range(frames):
                rgb = np.empty((height, width, 3), np.uint8)
                rgb[..., 0] = (x + 8 * i + 17 * n) & 0xFF
                rgb[..., 1] = (y + 4 * i) & 0xFF
                rgb[..., 2] = ((x // 64 + y // 64 + n) % 2) * 160 + 40
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
                frame.pts = i
                for packet in stream.encode(frame):
                    out.mux(packet)
            for packet in stream.encode(None):
                out.mux(packet)
        os.replace(tmp, path)
    return paths


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _check(procs: list[subprocess.Popen[bytes]], what: str) -> None:
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"{what} failed ({p.returncode}): {err.decode(errors='replace').strip()[-400:]}")


def one_at_a_time(clips: list[Path], out: Path, args: list[str]) -> dict[str, Any]:
    """``alpha2 transcode`` per file, one after another."""
    start, cpu = time.perf_counter(), _children_cpu()
    for clip in clips:
        p = subprocess.Popen(
            [*COMMAND, "transcode", str(clip), str(out / clip.name), "--quiet", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        _check([p], "alpha2 transcode")
    return {"seconds": time.perf_counter() - start, "cpu_seconds": _children_cpu() - cpu}


def all_at_once(clips: list[Path], out: Path, args: list[str]) -> dict[str, Any]:
    """N ``alpha2 transcode`` processes started together."""
    start, cpu = time.perf_counter(), _children_cpu()
    procs = [
        subprocess.Popen(
            [*COMMAND, "transcode", str(clip), str(out / clip.name), "--quiet", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for clip in clips
    ]
    _check(procs, "alpha2 transcode")
    return {"seconds": time.perf_counter() - start, "cpu_seconds": _children_cpu() - cpu}


def batched(folder: Path, out: Path, args: list[str], batch_args: list[str]) -> dict[str, Any]:
    """One ``alpha2 batch`` over the folder."""
    start, cpu = time.perf_counter(), _children_cpu()
    p = subprocess.run(
        [*COMMAND, "batch", str(folder), "--out", str(out), "--force", "--json", *args, *batch_args],
        capture_output=True,
    )
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        reasons = ""
        try:  # the per-file reasons, from the JSON report (the table is not printed with --json)
            failed = [f for f in json.loads(p.stdout)["files"] if f["status"] == "failed"]
            reasons = "".join(f"\n  {Path(f['input']).name}: {f.get('error')}" for f in failed)
        except (ValueError, KeyError):
            pass
        raise SystemExit(
            f"alpha2 batch failed ({p.returncode}): {p.stderr.decode(errors='replace')[-400:]}{reasons}"
        )
    report = json.loads(p.stdout)
    paths: dict[str, int] = {}
    for entry in report["files"]:
        for name, count in entry["paths"].items():
            paths[name] = paths.get(name, 0) + count
    workers = report["runner"].get("workers") or []
    return {
        "seconds": seconds,
        "cpu_seconds": _children_cpu() - cpu,
        "paths": paths,
        "workers": len(workers),
        "streams": sum(w["streams"] for w in workers),
        "runner": report["runner"].get("runner"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8, help="clips (N)")
    parser.add_argument("--frames", type=int, default=120, help="frames per clip")
    parser.add_argument("--clip-size", default="1920x1080", help="WxH of the generated clips")
    parser.add_argument("--args", default="--preset veryfast", help="transcode options for every side")
    parser.add_argument("--batch-args", default="", help="options for alpha2 batch only (--streams, --ray)")
    parser.add_argument("--shared", action="store_true", help="a side with alpha2 batch --shared-device too")
    parser.add_argument("--repeat", type=int, default=1, help="runs per side (best counts)")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args(argv)
    width, height = (int(v) for v in opts.clip_size.lower().split("x"))
    root = Path(tempfile.gettempdir()) / "alpha2-bench-batch"
    folder = root / f"in-{width}x{height}-{opts.frames}f-{opts.files}"
    clips = make_clips(folder, opts.files, opts.frames, width, height)
    args, batch_args = shlex.split(opts.args), shlex.split(opts.batch_args)
    total_frames = opts.files * opts.frames
    runs: dict[str, list[dict[str, Any]]] = {"one_at_a_time": [], "all_at_once": [], "batch": []}
    if opts.shared:
        runs["batch_shared_device"] = []
    for _ in range(opts.repeat):
        for name in runs:
            out = root / f"out-{name}"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            if name == "one_at_a_time":
                runs[name].append(one_at_a_time(clips, out, args))
            elif name == "all_at_once":
                runs[name].append(all_at_once(clips, out, args))
            elif name == "batch":
                runs[name].append(batched(folder, out, args, batch_args))
            else:
                runs[name].append(batched(folder, out, args, [*batch_args, "--shared-device"]))
    best = {name: min(r, key=lambda run: run["seconds"]) for name, r in runs.items()}
    for run in best.values():
        run["fps"] = total_frames / run["seconds"]
    result = {
        "files": opts.files,
        "frames_per_file": opts.frames,
        "clip_size": [width, height],
        "args": opts.args,
        "batch_args": opts.batch_args,
        "cores": os.cpu_count(),
        "sides": best,
        "batch_vs_one_at_a_time": best["one_at_a_time"]["seconds"] / best["batch"]["seconds"],
        "batch_vs_all_at_once": best["all_at_once"]["seconds"] / best["batch"]["seconds"],
    }
    if "batch_shared_device" in best:
        result["shared_device_vs_batch"] = best["batch"]["seconds"] / best["batch_shared_device"]["seconds"]
    if opts.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{opts.files} files x {opts.frames} frames, {width}x{height}, transcode options {opts.args!r}")
    for name, run in best.items():
        print(
            f"  {name:19s} {run['seconds']:7.2f} s  {run['fps']:7.1f} fps  "
            f"CPU {run['cpu_seconds']:6.1f} s  "
            f"{'' if 'paths' not in run else 'paths ' + json.dumps(run['paths'])}"
        )
    print(
        f"batch is {result['batch_vs_one_at_a_time']:.2f}x as fast as one at a time, "
        f"{result['batch_vs_all_at_once']:.2f}x as fast as {opts.files} processes at once "
        f"({best['batch']['runner']}, {best['batch'].get('workers')} workers, "
        f"{best['batch'].get('streams')} streams)"
    )
    if "shared_device_vs_batch" in result:
        shared = best["batch_shared_device"]
        print(
            f"batch --shared-device is {result['shared_device_vs_batch']:.2f}x as fast as batch "
            f"({shared.get('workers')} workers, {shared.get('streams')} streams)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
