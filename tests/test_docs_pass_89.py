"""Faults found by running the docs' samples as a new user would (outside pass, helper 89)."""

from __future__ import annotations

from pathlib import Path

import pytest
import wgpu

import alpha2
from alpha2.native_gpu.device import device as device_module


def test_no_cuda_at_all_is_said_as_such_not_as_a_uuid_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without CUDA, the reason names that (examples/render_into_texture.py printed "the device ...
    has no CUDA counterpart: no CUDA device has the adapter's UUID" on a machine with no CUDA)."""
    monkeypatch.setattr(device_module, "_cuda_unusable", lambda: "CUDA is not usable (no CUDA device)")
    ordinal, reason = device_module._cuda_ordinal(b"\x01" * 16)
    assert ordinal is None
    assert reason == "CUDA is not usable (no CUDA device)"


@pytest.mark.vulkan
def test_an_adopted_device_used_by_a_source_says_why_there_is_no_nvdec(sample_clip: str) -> None:
    """The README's and render_into_texture's own-device sample: ``source.hwaccel`` after the importer
    matched the device's twins."""
    if device_module._cuda_unusable() is None:
        pytest.skip("this machine has a usable CUDA device: the no-CUDA reason cannot be seen here")
    device = wgpu.gpu.request_adapter_sync().request_device_sync()
    target = device.create_texture(
        size=(64, 36, 1), format="rgba8unorm", usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    with alpha2.open(sample_clip, device=device) as source:
        with source.next_frame() as frame:
            frame.render(target)
        reason = str(source.hwaccel)
    assert "CUDA is not usable" in reason, reason
    assert "adapter's UUID" not in reason, reason


def test_hwaccel_cuda_without_cuda_gives_no_renderers_gpu_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a machine without CUDA, --hwaccel cuda's refusal said "NVDEC must run on the renderer's GPU
    ... from Python, cuda_ordinal= names a CUDA device to decode on all the same", advice no GPU there
    could follow (helper 89's outside pass); where the renderer's GPU lacks a twin it still says so."""
    from alpha2.api.devices import decoder_placement
    from alpha2.ffmpeg_bridge import hwdevice
    from alpha2.gpu.identity import DecoderPlacement

    monkeypatch.setattr(hwdevice, "no_cuda_device_type_reason", lambda: None)
    nothing = DecoderPlacement(
        None, None, "no CUDA device or no cuda-python, so no NVDEC", cuda_present=False
    )
    with pytest.raises(hwdevice.HwAccelUnavailableError) as caught:
        hwdevice.plan_hw_device(hwdevice.HwAccelMode.CUDA, placement=nothing)
    said = str(caught.value)
    assert "no CUDA device or no cuda-python" in said and "--hwaccel auto or none" in said, said
    assert "renderer's GPU" not in said and "cuda_ordinal=" not in said, said
    elsewhere = DecoderPlacement(None, 0, "the device 'llvmpipe' has no CUDA counterpart")
    with pytest.raises(hwdevice.HwAccelUnavailableError) as caught:
        hwdevice.plan_hw_device(hwdevice.HwAccelMode.CUDA, placement=elsewhere)
    assert "renderer's GPU" in str(caught.value) and "cuda_ordinal=" in str(caught.value)
    if device_module._cuda_unusable() is not None:  # this machine: the front door's placement says so
        assert decoder_placement().cuda_present is False


@pytest.fixture(scope="module")
def sample_clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.media import make_clip

    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    make_clip(path, frames=3)
    return str(path)


@pytest.mark.vulkan
@pytest.mark.parametrize("wall", [False, True])
def test_one_frame_is_said_as_one_frame(
    wall: bool, sample_clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's snapshot lines: ``alpha2 play clip --snapshot x.png --at 2 --stats -y`` said
    'played ...: 1 frames in 0.08 s' and ``alpha2 play a b c d --snapshot wall.png`` 'a wall of 4
    streams, 1 frames (2.4 fps)'; one file's line without --stats already said '1 frame ('."""
    from alpha2.apps.cli import main

    out = tmp_path / "snap.png"
    inputs = [sample_clip, sample_clip] if wall else [sample_clip]
    extra = [] if wall else ["--stats"]
    assert main(["play", "--offscreen", *inputs, "--no-audio", "--snapshot", str(out), "-y", *extra]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert out.exists()
    assert "1 frames" not in err, err
    assert ("streams, 1 frame (" if wall else ": 1 frame in ") in err, err
