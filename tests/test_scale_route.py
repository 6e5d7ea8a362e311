"""The transcoder's scale route: swscale on a CPU Vulkan device (with the reason), matching the GPU route."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.scale_route import ScaleRouteKind, choose_scale_route, cpu_device_reason
from alpha2.apps.cli import main
from alpha2.apps.sample import write_sample
from alpha2.gpu.adapters import AdapterType
from alpha2.gpu.geometry import Size
from alpha2.native_gpu.device.candidates import VulkanCandidate


def _cands(*types: AdapterType) -> Callable[[], list[VulkanCandidate]]:
    return lambda: [
        VulkanCandidate(index=i, name=f"dev{i}", device_type=t, uuid=bytes([i + 1]) * 16)
        for i, t in enumerate(types)
    ]


def test_route_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALPHA2_GPU_ADAPTER", raising=False)
    cpu_only = _cands(AdapterType.CPU)
    route = choose_scale_route(on_gpu=False, forced_gpu=False, unsupported=None, candidates=cpu_only)
    assert route.kind is ScaleRouteKind.SWSCALE and "CPU" in route.reason
    assert route.as_dict()["path"] == "software"
    with_gpu = _cands(AdapterType.CPU, AdapterType.DISCRETE_GPU)
    assert choose_scale_route(on_gpu=False, forced_gpu=False, unsupported=None, candidates=with_gpu).kind is (
        ScaleRouteKind.GPU
    )
    assert choose_scale_route(on_gpu=True, forced_gpu=False, unsupported=None, candidates=cpu_only).kind is (
        ScaleRouteKind.GPU
    )
    forced = choose_scale_route(on_gpu=False, forced_gpu=True, unsupported=None, candidates=cpu_only)
    assert forced.kind is ScaleRouteKind.GPU and "--gpu" in forced.reason
    odd = choose_scale_route(on_gpu=False, forced_gpu=False, unsupported="no X matrix", candidates=cpu_only)
    assert odd.kind is ScaleRouteKind.GPU and "no X matrix" in odd.reason
    # A pin on the CPU device among GPUs: the pinned one decides.
    monkeypatch.setenv("ALPHA2_GPU_ADAPTER", "0")
    assert cpu_device_reason(candidates=with_gpu) is not None


def test_a_pin_naming_no_adapter_is_refused_on_the_cpu_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU route makes no device, so a pin naming none was ignored there (swscale, exit 0, not a
    word; an outside pass): refused as the GPU route refuses it, the device nodes' answer or not."""
    from alpha2.gpu.adapters import AdapterPinError
    from alpha2.native_gpu.device import cpu_only

    monkeypatch.setattr(cpu_only, "cpu_only_reason", lambda: "no GPU device node under /dev")
    monkeypatch.setattr("alpha2.api.scale_route._vulkan_candidates", _cands(AdapterType.CPU), raising=True)
    monkeypatch.setenv("ALPHA2_GPU_ADAPTER", "nomatch")
    with pytest.raises(AdapterPinError, match="ALPHA2_GPU_ADAPTER"):
        cpu_device_reason()
    with pytest.raises(AdapterPinError):
        choose_scale_route(on_gpu=False, forced_gpu=False, unsupported=None)
    monkeypatch.setenv("ALPHA2_GPU_ADAPTER", "0")  # a pin naming the CPU device: the CPU route, said
    assert cpu_device_reason() == "the only Vulkan device is a CPU one (dev0)"
    monkeypatch.delenv("ALPHA2_GPU_ADAPTER")
    assert cpu_device_reason() == "no GPU device node under /dev"


def _frames(path: str) -> list[np.ndarray]:
    with av.open(path) as container:
        return [f.to_ndarray() for f in container.decode(video=0)]


@pytest.mark.vulkan
def test_cpu_route_on_lavapipe_matches_gpu_route(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ALPHA2_GPU_ADAPTER", raising=False)
    if cpu_device_reason() is None:
        pytest.skip("the Vulkan device here is a GPU: the swscale route is for CPU devices")
    clip = write_sample(str(tmp_path / "in.mp4"), duration_s=0.3, size=Size(320, 180), audio=False).path
    common = ["--size", "160x90", "--crf", "0", "--hwaccel", "none", "--no-audio", "--json"]
    assert main(["transcode", clip, str(tmp_path / "cpu.mp4"), *common]) == 0
    cpu = json.loads(capsys.readouterr().out)
    assert cpu["mode"] == "cpu"
    assert cpu["scale_route"]["route"] == "swscale" and "CPU" in cpu["scale_route"]["reason"]
    assert cpu["paths"] == {"software": cpu["frames"]}
    assert cpu["device"] is None  # no WebGPU device was made
    assert main(["transcode", clip, str(tmp_path / "gpu.mp4"), *common, "--gpu"]) == 0
    gpu = json.loads(capsys.readouterr().out)
    assert gpu["mode"] == "gpu" and gpu["scale_route"]["route"] == "gpu"
    a, b = _frames(str(tmp_path / "cpu.mp4")), _frames(str(tmp_path / "gpu.mp4"))
    assert len(a) == len(b) == cpu["frames"]
    for x, y in zip(a, b, strict=True):
        assert x.shape == y.shape
        assert np.abs(x.astype(int) - y.astype(int)).mean() <= 1.0  # the accuracy bar, in code values
