"""to_tensor takes what a PyTorch program has at hand: torch dtypes (torch.float16, torch.half), a
torch.device or 'cuda:N', numpy arrays for size and crop (an outside pass: each of these was refused as
'must be one of ...' or 'size must be (width, height)'). torch is not a dependency: stand-ins with torch's
type names check the reading on every machine, and the real objects where torch is installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from tests.media import make_clip


def _clip(path: Path) -> str:
    """Four 64x48 frames (tests.media's pattern clip)."""
    return make_clip(path.with_suffix(".mp4"), width=64, height=48, frames=4).path


def _torch_like(kind: str, text: str, **attributes: Any) -> Any:
    """An object whose type is named ``torch.<kind>`` and whose str is ``text``, as torch's are."""
    cls = type(kind, (), {"__str__": lambda self: text, "__repr__": lambda self: text, **attributes})
    cls.__module__ = "torch"
    return cls()


def test_torch_dtypes_name_the_tensor_dtypes() -> None:
    from alpha2.api.tensors import _choice

    for name in ("uint8", "float16", "float32"):
        assert (
            _choice("dtype", _torch_like("dtype", f"torch.{name}"), ("uint8", "float16", "float32")) == name
        )
    with pytest.raises(InvalidInputError, match="dtype must be one of"):
        _choice("dtype", _torch_like("dtype", "torch.int64"), ("uint8", "float16", "float32"))


def test_devices_name_cuda_ordinals() -> None:
    from alpha2.api.tensors import _device

    assert _device("auto") == ("auto", None)
    assert _device("cuda") == ("cuda", None)
    assert _device("cuda:1") == ("cuda", 1)
    assert _device("cpu") == ("cpu", None)
    assert _device(_torch_like("device", "cuda:2", type="cuda", index=2)) == ("cuda", 2)
    assert _device(_torch_like("device", "cuda", type="cuda", index=None)) == ("cuda", None)
    assert _device(_torch_like("device", "cpu", type="cpu", index=None)) == ("cpu", None)
    with pytest.raises(InvalidInputError, match=r"torch\.device of cuda or cpu"):
        _device(_torch_like("device", "mps", type="mps", index=None))
    with pytest.raises(InvalidInputError, match="names a CUDA ordinal"):
        _device("cuda:one")
    with pytest.raises(InvalidInputError, match="device must be one of"):
        _device("gpu")


def test_real_torch_objects_where_torch_is_installed() -> None:
    torch = pytest.importorskip("torch")  # the CPU build here and in CI's extras, CUDA's on the GPU machine
    from alpha2.api.tensors import _choice, _device

    allowed = ("uint8", "float16", "float32")
    assert _choice("dtype", torch.half, allowed) == "float16"
    assert _choice("dtype", torch.float32, allowed) == "float32"
    assert _choice("dtype", torch.uint8, allowed) == "uint8"
    assert _device(torch.device("cuda", 0)) == ("cuda", 0)
    assert _device(torch.device("cpu")) == ("cpu", None)


@pytest.mark.vulkan
def test_to_tensor_takes_numpy_sizes_torch_dtypes_and_a_cpu_torch_device(tmp_path: Path) -> None:
    import alpha2

    with alpha2.open(_clip(tmp_path / "ramp.mkv"), hwaccel="none") as source:
        frame = source.next_frame()
        assert frame is not None
        with frame:
            plain = frame.to_tensor(size=(32, 24), crop=(8, 4, 48, 40), dtype="float16", device="cpu").numpy()
            other = frame.to_tensor(
                size=np.array([32, 24]),
                crop=np.array([8, 4, 48, 40], dtype=np.int64),
                dtype=_torch_like("dtype", "torch.float16"),
                device=_torch_like("device", "cpu", type="cpu", index=None),
            )
            assert other.dtype == np.float16 and other.shape == (24, 32, 3)
            assert np.array_equal(other.numpy(), plain)
            with pytest.raises(InvalidInputError, match="size must be"):
                frame.to_tensor(size=np.array([[32, 24]]))


@pytest.mark.vulkan
def test_a_cuda_ordinal_without_cuda_is_refused_with_the_reason(tmp_path: Path) -> None:
    import alpha2

    with alpha2.open(_clip(tmp_path / "ramp.mkv"), hwaccel="none") as source:
        frame = source.next_frame()
        assert frame is not None
        with frame:
            if frame.to_tensor(size=(8, 8)).on_cuda:
                pytest.skip(
                    "this device makes CUDA tensors: the refusal of another ordinal is the NVIDIA test"
                )
            with pytest.raises(UnsupportedError, match="cannot go to CUDA"):
                frame.to_tensor(size=(8, 8), device="cuda:0")


@pytest.mark.cuda
@pytest.mark.dawn
@pytest.mark.nvidia
def test_another_cuda_ordinal_than_the_frames_gpu_is_refused(tmp_path: Path) -> None:
    import alpha2
    from alpha2.api.tensors import close_tensor_routes
    from alpha2.native_gpu.device.device import Device

    device = Device.open(want_gpu_copy=True)
    try:
        with alpha2.open(_clip(tmp_path / "ramp.mkv"), device=device) as source:
            frame = source.next_frame()
            assert frame is not None
            with frame:
                tensor = frame.to_tensor(size=(8, 8), device="cuda")
                ordinal = int(tensor.device.split(":")[1])
                same = frame.to_tensor(
                    size=(8, 8), device=f"cuda:{ordinal}", dtype=_torch_like("dtype", "torch.float16")
                )
                assert same.on_cuda and same.device == tensor.device and same.dtype == np.float16
                with pytest.raises(UnsupportedError, match=f"device asks for CUDA device {ordinal + 5}"):
                    frame.to_tensor(size=(8, 8), device=f"cuda:{ordinal + 5}")
            close_tensor_routes(device)
    finally:
        device.close()
