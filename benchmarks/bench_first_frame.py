"""Open to first rendered frame through the Python API, against PyAV + wgpu by hand, in fresh processes.

Each round starts two fresh Python processes, alternately, and times each from its start to its end:

- ``alpha2``: ``import alpha2``; ``alpha2.open(clip)``; the first frame rendered into a texture
  (``frame.render()``) and one texel read back (the GPU finished it);
- ``by hand``: ``import av, wgpu``; a device; the first frame decoded, its three planes written with
  ``queue.write_texture``, one sampler shader drawn into a texture, one texel read back
  (``benchmarks/bench_play_cost.py``'s plain player, for one frame).

Prints the median of ``--rounds`` and the ratio (target: alpha2 at most 1.2 times by hand).

    python benchmarks/bench_first_frame.py --clip CLIP --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_ALPHA2 = """
import sys
import alpha2
import numpy as np
with alpha2.open(sys.argv[1]) as source:
    frame = source.next_frame()
    texture = frame.render()
    device = source.device
    gpu = device.gpu_module
    usage = gpu.BufferUsage.COPY_DST | gpu.BufferUsage.MAP_READ
    buffer = device.webgpu_device.create_buffer(size=256, usage=usage)
    encoder = device.webgpu_device.create_command_encoder()
    encoder.copy_texture_to_buffer(
        {"texture": texture}, {"buffer": buffer, "bytes_per_row": 256, "rows_per_image": 1}, (1, 1, 1)
    )
    device.webgpu_device.queue.submit([encoder.finish()])
    buffer.map_sync(gpu.MapMode.READ)
    buffer.unmap()
    frame.release()
"""

_BY_HAND = """
import sys
sys.path.insert(0, sys.argv[2])
from bench_play_cost import plain_play
plain_play(sys.argv[1], 1)
"""


def _run(code: str, *args: str) -> float:
    env = dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clip", help="the clip (default: a 720p sample made here)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        clip = args.clip
        if clip is None:
            clip = os.path.join(tmp, "clip.mp4")
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "alpha2",
                    "sample",
                    clip,
                    "--duration",
                    "2",
                    "--size",
                    "1280x720",
                    "-y",
                ],
                check=True,
                capture_output=True,
            )
        _run(_ALPHA2, clip)  # warm the page cache and the bytecode, as a second launch has them
        _run(_BY_HAND, clip, str(ROOT / "benchmarks"))
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(_run(_ALPHA2, clip))
            theirs.append(_run(_BY_HAND, clip, str(ROOT / "benchmarks")))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"# {clip}, {args.rounds} rounds, fresh processes, medians")
        print(
            f"alpha2 open -> first rendered frame   {a:.3f} s  (runs {', '.join(f'{x:.2f}' for x in ours)})"
        )
        print(
            f"PyAV + wgpu by hand                   {b:.3f} s  (runs {', '.join(f'{x:.2f}' for x in theirs)})"
        )
        print(f"ratio {a / b:.2f} (target <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
