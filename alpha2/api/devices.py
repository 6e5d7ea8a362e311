"""The device before the decoder: where a program's GPU work and its NVDEC decoding meet.

One rule, written once: make (or adopt) the WebGPU device first, then open the decoder on that device's
CUDA twin, so that NVDEC frames land on the GPU that renders them and the GPU copy can take them. When
NVDEC may decode, the device is asked for the GPU copy's features (Dawn's shared memory), which it
takes where the machine has them; a device the program brought is used as it is.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from alpha2.ffmpeg_bridge.decode import DecodeSession, MediaSource
from alpha2.ffmpeg_bridge.hwdevice import HwAccelMode, no_cuda_device_type_reason
from alpha2.gpu.adapters import AdapterPin, PinKind
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.identity import DecoderPlacement
from alpha2.gpu.webgpu import WebGpuDevice
from alpha2.native_gpu._cuda.streams import install_cuda_plane_ops
from alpha2.native_gpu.device.device import Device

__all__ = [
    "as_device",
    "beside_other_libraries",
    "decoder_placement",
    "nvdec_possible",
    "open_decoder",
    "open_device",
    "place_decoder",
    "texture_limit",
]


def nvdec_possible(mode: HwAccelMode | str) -> tuple[bool, str]:
    """Whether ``mode`` may decode on NVDEC here (FFmpeg's CUDA device type and a CUDA device), and why.

    Asked before the device is chosen, so that a device that can take NVDEC frames on the GPU is made.
    """
    mode = HwAccelMode.parse(mode)
    if mode is HwAccelMode.NONE:
        return False, "software decoding was requested"
    why = no_cuda_device_type_reason()
    if why is not None:
        return False, why
    from alpha2.native_gpu._cuda.core import cuda_available

    if not cuda_available():
        return False, "no CUDA device or no cuda-python"
    return True, "FFmpeg has its CUDA device type and a CUDA device is present"


def decoder_placement(device: Device | None = None) -> DecoderPlacement:
    """Where NVDEC must run: ``device``'s CUDA twin, or (no device) the one of the adapter
    ``Device.open()`` would take, ranked without opening anything (``ALPHA2_GPU_ADAPTER`` honoured)."""
    if device is not None:
        return device.decoder_placement()
    from alpha2.native_gpu._cuda.core import cuda_available

    # Ranking the adapters only to learn that no CUDA device exists costs a Vulkan enumeration
    # (0.1 s or more): ask CUDA first, cheaply.
    if not cuda_available():
        return DecoderPlacement(
            None, None, "no CUDA device or no cuda-python, so no NVDEC", cuda_present=False
        )
    try:
        from alpha2.native_gpu.device.shared import shared_device_index

        found = shared_device_index()
    except Exception as exc:  # no Vulkan, no adapter, a bad pin: no GPU to match, hence no CUDA twin
        return DecoderPlacement(None, None, f"no shared device: {exc}")
    loader = None if found.vulkan_index is None else int(found.vulkan_index)
    name = str(getattr(found, "name", "") or "")
    where = f"the shared device {name!r} (loader index {loader})" if name else f"the shared device ({loader})"
    if found.cuda_ordinal is None:
        return DecoderPlacement(None, loader, f"{where} has no CUDA counterpart")
    return DecoderPlacement(
        int(found.cuda_ordinal), loader, f"CUDA ordinal {found.cuda_ordinal} matches {where} by UUID"
    )


_TEXTURE_LIMIT_KEYS = ("max-texture-dimension-2d", "max_texture_dimension_2d", "maxTextureDimension2D")


def texture_limit(webgpu_device: WebGpuDevice) -> int | None:
    """The WebGPU device's largest 2D texture side (``max_texture_dimension_2d``), None when unknown."""
    limits = getattr(webgpu_device, "limits", None) or {}
    for key in _TEXTURE_LIMIT_KEYS:
        if key in limits:
            return int(limits[key])
    return None


def cuda_ordinal_of(device: Any) -> int | None:
    """The CUDA device ``device`` names: an ordinal (``0``), ``'cuda'`` / ``'cuda:1'``, or a
    ``torch.device`` of type cuda (``'cuda'`` alone: torch's current device where torch is loaded, else
    0); None when it names no CUDA device.

    Raises:
        InvalidInputError: a negative ordinal, or a device string or torch.device that is not CUDA's.
    """
    if isinstance(device, bool):
        return None
    if isinstance(device, int):
        if device < 0:
            raise InvalidInputError(f"a CUDA ordinal is >= 0, got device={device}")
        return device
    kind, index = None, None
    if isinstance(device, str):
        kind, colon, rest = device.strip().partition(":")
        if colon:
            if not (rest.isascii() and rest.isdigit()):  # not 'cuda:' nor 'cuda:²' (int() refuses it)
                raise InvalidInputError(f"device={device!r}: write 'cuda' or 'cuda:N' with N an ordinal")
            index = int(rest)
    elif type(device).__module__.startswith("torch") and hasattr(device, "type"):
        kind, index = str(device.type), device.index
    else:
        return None
    if kind != "cuda":
        raise InvalidInputError(
            f"device={device!r}: alpha2 decodes and renders on a GPU; give a CUDA device ('cuda', "
            "'cuda:N', an ordinal or a torch.device('cuda', N)), an alpha2 Device, a WebGPU device, or "
            "None for the best one (a machine without a GPU renders on lavapipe)"
        )
    if index is None:
        torch = sys.modules.get("torch")
        index = 0
        if torch is not None and torch.cuda.is_available():  # a CPU-only torch asserts in current_device
            index = int(torch.cuda.current_device())
    return int(index)


def device_on_cuda(ordinal: int, hwaccel: HwAccelMode | str = "auto") -> Device:
    """The Device on the GPU that is CUDA ordinal ``ordinal`` (its adapter pinned by the CUDA device's
    UUID), asked for the GPU copy's features when NVDEC may decode.

    Raises:
        UnsupportedError: that CUDA device cannot be had (no driver, no such ordinal).
        AdapterPinError: no WebGPU adapter is that GPU.
    """
    from alpha2.native_gpu._cuda.core import cuda_device_uuid

    try:
        uuid = cuda_device_uuid(ordinal)
    except Exception as exc:  # no cuda-python, no driver, no such device: one typed error, the reason
        raise UnsupportedError(f"device=cuda:{ordinal}: that CUDA device cannot be used ({exc})") from exc
    pin = AdapterPin(PinKind.UUID, f"cuda:{ordinal}", uuid=uuid, source="device")
    return Device.open(want_gpu_copy=nvdec_possible(hwaccel)[0], pin=pin)


def as_device(device: Any, hwaccel: HwAccelMode | str = "auto") -> Device | None:
    """An alpha2 Device from ``device``: a Device as it is; a CUDA device (ordinal, ``'cuda:N'``,
    ``torch.device``) opened on that GPU (:func:`device_on_cuda`); a WebGPU device adopted; None kept."""
    if device is None or isinstance(device, Device):
        return device
    ordinal = cuda_ordinal_of(device)
    if ordinal is not None:
        return device_on_cuda(ordinal, hwaccel)
    return Device.adopt(device)


def open_device(hwaccel: HwAccelMode | str = "auto", *, gpu_copy: bool = True) -> Device:
    """The device to work on (``Device.open()``: ranked, ``ALPHA2_GPU_ADAPTER`` honoured), asked for the
    GPU copy's features when NVDEC may decode (``gpu_copy=False``: a window presents through wgpu-native,
    so it asks for none)."""
    return Device.open(want_gpu_copy=gpu_copy and nvdec_possible(hwaccel)[0])


def beside_other_libraries(placement: DecoderPlacement) -> DecoderPlacement:
    """``placement``, joining the CUDA primary context when another library (PyTorch, CuPy,
    PyNvVideoCodec) already made it active with flags FFmpeg's own way of opening refuses.

    The context is made current on this thread, which opens the decoder next; FFmpeg then shares it.
    """
    ordinal = placement.cuda_ordinal
    if ordinal is None:
        return placement
    from alpha2.native_gpu._cuda.sharing import join_primary_context, primary_context_taken

    try:
        if not primary_context_taken(ordinal):
            return placement
        join_primary_context(ordinal)
    except Exception as exc:  # no driver here after all: the decoder says why it cannot open NVDEC
        return dataclasses.replace(placement, reason=f"{placement.reason} (CUDA context not checked: {exc})")
    return dataclasses.replace(
        placement,
        join_current_context=True,
        reason=f"{placement.reason}; joins the CUDA primary context another library made (torch, CuPy, ...)",
    )


def place_decoder(device: Device | None, hwaccel: HwAccelMode | str = "auto") -> DecoderPlacement:
    """Where a decoder for ``device`` runs: its placement, joining the CUDA context another library made
    where one did; nothing is ranked or asked of CUDA for software decoding."""
    if HwAccelMode.parse(hwaccel) is HwAccelMode.NONE:
        return DecoderPlacement(None, None, "software decoding was requested")
    return beside_other_libraries(decoder_placement(device))


def open_decoder(
    source: MediaSource,
    device: Device | None,
    *,
    placement: DecoderPlacement | None = None,
    **options: Any,
) -> DecodeSession:
    """A DecodeSession placed on ``device``'s GPU (on the adapter ``Device.open()`` would take when None,
    or at ``placement`` when the caller placed several decoders at once); its CUDA planes read through
    alpha2.native_gpu (DLPack stream order, host copies)."""
    install_cuda_plane_ops()
    if placement is None:
        placement = place_decoder(device, options.get("hwaccel", "auto"))
    return DecodeSession(source, device=placement, **options)
