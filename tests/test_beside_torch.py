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
elif first == "cupy":
    import cupy
    cupy.zeros(1)
    asarray = lambda plane: cupy.asnumpy(cupy.from_dlpack(plane))
else:  # NVIDIA's own decoder first: its frames decoded, in the context it made
    import PyNvVideoCodec as nvc
    import torch
    decoder = nvc.SimpleDecoder(clip, gpu_id=0, use_device_memory=True)
    assert len(decoder.get_batch_frames(2)) == 2
    asarray = lambda plane: torch.from_dlpack(plane).cpu().numpy()
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
@pytest.mark.parametrize("first", ["torch", "cupy", "PyNvVideoCodec"])
def test_nvdec_after_another_library_made_the_context(first: str, tmp_path: Path) -> None:
    pytest.importorskip(first)
    if first == "PyNvVideoCodec":
        pytest.importorskip("torch")
    clip = make_clip(tmp_path / "c.mp4", width=256, height=144, frames=4)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, first, clip.path], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["on_gpu"], result
    assert "joins the CUDA primary context" in result["hwaccel"], result
    assert result["equal"], result


_LOOP = r"""
import json, random, sys
import torch
import alpha2
clip = sys.argv[1]
torch.zeros(1, device="cuda")
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1)).cuda()
rng = random.Random(1)
used = {}
paths = set()
with alpha2.open(clip, hwaccel="cuda") as source, torch.no_grad():
    duration = source.info.duration_seconds
    for i in range(1, 1001):
        frames = source.frames_at([rng.uniform(0, duration * 0.95) for _ in range(4)])
        batch = source.to_tensor(frames, size=(64, 64), layout="CHW", dtype="float32", mean=0.5, std=0.25)
        paths.add(batch.path.value)
        out = model(torch.from_dlpack(batch))
        assert out.shape == (4, 8, 1, 1)
        for frame in frames:
            frame.release()
        del batch, out
        if i in (100, 1000):
            torch.cuda.synchronize()
            free, total = torch.cuda.mem_get_info()
            used[i] = total - free
    print(json.dumps({"used": used, "paths": sorted(paths), "hwaccel": source.hwaccel}))
"""


@pytest.mark.cuda
@pytest.mark.nvidia
def test_a_thousand_batches_through_a_torch_model_keep_gpu_memory_flat(tmp_path: Path) -> None:
    """Torch first; 1000 batches of 4 frames at random times, each an RGB CUDA tensor fed to a small
    model: the GPU's used memory (every context, from the driver) grows by less than 64 MiB from batch
    100 to batch 1000, NVDEC decodes, and every tensor went to CUDA on the GPU."""
    pytest.importorskip("torch")
    clip = make_clip(tmp_path / "c.mp4", width=256, height=144, frames=48)
    done = subprocess.run(
        [sys.executable, "-c", _LOOP, clip.path], capture_output=True, text=True, timeout=400
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["hwaccel"].startswith("cuda"), result
    assert result["paths"] == ["gpu_copy"], result
    growth = result["used"]["1000"] - result["used"]["100"]
    assert growth < 64 * 2**20, f"GPU memory grew {growth / 2**20:.1f} MiB over 900 batches: {result}"
