"""``device=`` takes a CUDA device too (issue "Frames for machine learning", item 2): an ordinal,
``'cuda'`` / ``'cuda:N'`` or a ``torch.device``; alpha2 opens the Device on that GPU, its adapter pinned
by the CUDA device's UUID.

On the CPU machine the CUDA device's UUID is lavapipe's (cuda-python's answer replaced): the whole path
(ordinal -> UUID -> pinned adapter -> Device -> decoding into it) runs on a real Vulkan device.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from alpha2.api import devices
from alpha2.gpu.adapters import AdapterPinError
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from tests.media import make_clip


def test_what_names_a_cuda_device() -> None:
    assert devices.cuda_ordinal_of(2) == 2
    assert devices.cuda_ordinal_of("cuda:3") == 3
    assert devices.cuda_ordinal_of(None) is None
    assert devices.cuda_ordinal_of(True) is None  # a bool is not an ordinal
    assert devices.cuda_ordinal_of(object()) is None  # a WebGPU device, say: adopted instead
    for bad, match in ((-1, ">= 0"), ("cpu", "decodes and renders on a GPU"), ("cuda:x", "cuda:N")):
        with pytest.raises(InvalidInputError, match=match):
            devices.cuda_ordinal_of(bad)


def test_an_ordinal_is_ascii_digits_after_the_colon() -> None:
    """Found by an outside pass: 'cuda:²' ended in a raw ValueError from int() (str.isdigit takes a
    superscript), 'cuda:٣' was taken as ordinal 3, and 'cuda:' (no ordinal) as the current device."""
    for bad in ("cuda:²", "cuda:٣", "cuda:", "cuda: "):
        with pytest.raises(InvalidInputError, match="cuda:N"):
            devices.cuda_ordinal_of(bad)
    assert devices.cuda_ordinal_of("cuda:01") == 1


def test_cuda_alone_is_torch_s_current_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert devices.cuda_ordinal_of(" cuda ") == 0  # without torch loaded: ordinal 0
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(current_device=lambda: 5)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    fake.cuda.is_available = lambda: True  # type: ignore[attr-defined]
    assert devices.cuda_ordinal_of("cuda") == 5


def test_cuda_alone_with_a_cpu_only_torch_is_ordinal_0(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by an outside pass: a CPU-only torch asserts in ``torch.cuda.current_device()`` ("Torch not
    compiled with CUDA enabled"); 'cuda' alone is then ordinal 0, which gives the typed error of a CUDA
    device that cannot be had, as 'cuda:0' does."""

    def no_cuda() -> int:
        raise AssertionError("Torch not compiled with CUDA enabled")

    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(current_device=no_cuda, is_available=lambda: False)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert devices.cuda_ordinal_of("cuda") == 0


def test_a_torch_device_names_its_ordinal() -> None:
    torch = pytest.importorskip("torch")
    assert devices.cuda_ordinal_of(torch.device("cuda", 1)) == 1
    with pytest.raises(InvalidInputError, match="decodes and renders on a GPU"):
        devices.cuda_ordinal_of(torch.device("cpu"))


def test_a_cuda_device_that_cannot_be_had_is_one_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import alpha2.native_gpu._cuda.core as core

    def no_driver(ordinal: int) -> bytes:
        raise RuntimeError("no CUDA driver")

    monkeypatch.setattr(core, "cuda_device_uuid", no_driver)
    with pytest.raises(
        UnsupportedError, match=r"device=cuda:0: that CUDA device cannot be used \(no CUDA driver\)"
    ):
        devices.as_device(0)


@pytest.mark.vulkan
def test_an_ordinal_opens_the_device_of_the_gpu_with_its_uuid(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import alpha2
    import alpha2.native_gpu._cuda.core as core
    from alpha2.native_gpu.device.candidates import vulkan_candidates

    found = [c for c in vulkan_candidates() if c.uuid is not None]
    if not found:
        pytest.skip("no Vulkan device reports a UUID")
    uuid = found[0].uuid
    monkeypatch.setattr(core, "cuda_device_uuid", lambda ordinal: uuid if ordinal == 0 else b"\x01" * 16)
    clip = make_clip(tmp_path / "c.mp4", width=64, height=48, frames=3)
    with alpha2.open(clip.path, device="cuda:0", hwaccel="none") as source:
        assert source.device.uuid == uuid
        assert "device='cuda:0'" in source.device.reason, source.device.reason
        frame = source.next_frame()
        assert frame is not None
        assert frame.render().width == 64
        frame.release()
    with pytest.raises(AdapterPinError):  # a CUDA device no WebGPU adapter is
        alpha2.open(clip.path, device=1, hwaccel="none")
