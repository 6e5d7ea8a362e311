"""NVDEC beside PyTorch and CuPy: a process in which another library already made the CUDA primary
context (with flags FFmpeg's own way of opening refuses) still decodes on NVDEC, in that very context,
and says so; the Y plane it hands over equals software decoding.

Each case runs in a fresh process: which library touches CUDA first is the point.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.media import make_clip

_SCRIPT = r"""
import json, sys
first, clip = sys.argv[1], sys.argv[2]
if first == "torch":
    import torch
    torch.zeros(1, device="cuda")
    asarray = lambda plane: torch.from_dlpack(plane).cpu().numpy()
else:
    import cupy
    cupy.zeros(1)
    asarray = lambda plane: cupy.asnumpy(cupy.from_dlpack(plane))
import numpy as np
import alpha2
with alpha2.open(clip, hwaccel="cuda") as gpu, alpha2.open(clip, hwaccel="none") as cpu:
    a, b = gpu.next_frame(), cpu.next_frame()
    y_gpu = np.asarray(asarray(a.plane(0)))
    y_cpu = b.plane_arrays()[0]
    print(json.dumps({
        "on_gpu": a.on_gpu,
        "hwaccel": gpu.hwaccel,
        "equal": bool(np.array_equal(y_gpu[: y_cpu.shape[0], : y_cpu.shape[1]], y_cpu)),
    }))
    a.release(), b.release()
"""


@pytest.mark.cuda
@pytest.mark.nvidia
@pytest.mark.parametrize("first", ["torch", "cupy"])
def test_nvdec_after_another_library_made_the_context(first: str, tmp_path: Path) -> None:
    pytest.importorskip(first)
    clip = make_clip(tmp_path / "c.mp4", width=256, height=144, frames=4)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, first, clip.path], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["on_gpu"], result
    assert "joins the CUDA primary context" in result["hwaccel"], result
    assert result["equal"], result
