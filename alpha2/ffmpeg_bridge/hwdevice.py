"""Which hardware device FFmpeg decodes on: the CUDA twin of the shared device, or none.

The decoder must land on the GPU the renderer uses. The shared device (H3's
``alpha2.native_gpu.device.shared.shared_device_index``) names the Vulkan device and, matched by UUID, its
CUDA ordinal; NVDEC runs on that ordinal or not at all. ``auto`` falls back to software decoding and
says why; an explicit ``cuda`` that cannot be had is an error.

FFmpeg's CUDA device retains the primary context with ``CU_CTX_SCHED_BLOCKING_SYNC`` and fails
("Operation not supported") when something else already activated the primary context with other
flags: set those flags before anything retains it, or let FFmpeg go first.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from typing import Any

from av.codec.hwaccel import HWAccel, hwdevices_available

from alpha2.ffmpeg_bridge.errors import HwAccelUnavailableError
from alpha2.gpu.errors import InvalidInputError

__all__ = [
    "HwAccelMode",
    "HwAccelReport",
    "HwDevicePlan",
    "make_hwaccel",
    "nvdec_possible",
    "plan_hw_device",
]

PRIMARY_CONTEXT_NOTE = (
    "FFmpeg's CUDA device needs the primary context with CU_CTX_SCHED_BLOCKING_SYNC: call "
    "cuDevicePrimaryCtxSetFlags before anything retains the primary context, or open the decoder first"
)


class HwAccelMode(enum.Enum):
    """Where decoding runs."""

    AUTO = "auto"
    """NVDEC on the shared device's CUDA twin when there is one, else software (and say why)."""
    CUDA = "cuda"
    """NVDEC, or an error."""
    NONE = "none"
    """Software decoding on the CPU."""

    @classmethod
    def parse(cls, value: HwAccelMode | str | None) -> HwAccelMode:
        """Accept the enum or its string value (``'auto'``, ``'cuda'``, ``'none'``; None means none)."""
        if value is None:
            return cls.NONE
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in cls)
            raise InvalidInputError(f"hwaccel must be one of {allowed}, got {value!r}") from None


@dataclass(frozen=True)
class HwDevicePlan:
    """The device decoding should use, decided before opening."""

    requested: HwAccelMode
    """What the caller asked for."""
    cuda_ordinal: int | None
    """CUDA device ordinal for NVDEC, or None for software decoding."""
    loader_index: int | None
    """Index of the shared Vulkan device in the loader's enumeration, when known."""
    reason: str
    """Why this device (or why software)."""

    @property
    def use_cuda(self) -> bool:
        """Whether to try NVDEC."""
        return self.cuda_ordinal is not None


@dataclass(frozen=True)
class HwAccelReport:
    """Where a decode session actually decodes, and why; the fallback reason when it is not NVDEC."""

    requested: HwAccelMode
    """What the caller asked for."""
    active: HwAccelMode
    """CUDA when frames come from NVDEC, NONE for software decoding."""
    device_ordinal: int | None
    """CUDA ordinal NVDEC runs on, or None."""
    loader_index: int | None
    """Loader index of the shared Vulkan device, when known."""
    decoder: str
    """FFmpeg decoder name."""
    reason: str
    """Why this path was chosen."""
    fallback_reason: str | None = None
    """Why ``auto`` ended up in software, or None when it did not fall back."""

    @property
    def on_gpu(self) -> bool:
        """Whether frames stay on the GPU."""
        return self.active is HwAccelMode.CUDA

    def as_dict(self) -> dict[str, Any]:
        """Where decoding ran and why, as the commands' ``--json`` gives it (``hwaccel``)."""
        return {
            "requested": self.requested.value,
            "active": self.active.value,
            "decoder": self.decoder,
            "device_ordinal": self.device_ordinal,
            "reason": self.reason,
            "fallback_reason": self.fallback_reason,
        }


@functools.cache
def _cuda_device_type_available() -> bool:
    return "cuda" in hwdevices_available()


def _shared_device(source: object = None) -> tuple[int | None, int | None, str]:
    """(loader index, CUDA ordinal, explanation) of the shared device; (None, None, why) if unknown.

    ``source`` is what the renderer already chose (an alpha2 Device, or a SharedVulkanContext, choice or
    candidate), so the decoder lands on that GPU; None ranks the adapters as the renderer would
    (ALPHA2_GPU_ADAPTER included).
    """
    from alpha2.native_gpu.device.device import Device

    if isinstance(source, Device):
        # The Device matched its CUDA twin when it was made: nothing is enumerated again.
        name = f"the device {source.adapter_name!r}"
        if source.cuda_ordinal is None:
            return source.vulkan_index, None, f"{name} has no CUDA counterpart: {source.cuda_reason}"
        return source.vulkan_index, source.cuda_ordinal, f"{source.cuda_reason} ({name})"
    try:
        from alpha2.native_gpu.device import shared
    except Exception as exc:  # absent or unusable: no shared device, hence no CUDA twin
        return None, None, f"alpha2.native_gpu.device.shared is unavailable ({exc})"
    try:
        index_of: Any = shared.shared_device_index
        result: Any = index_of(source) if source is not None else index_of()
    except Exception as exc:
        return None, None, f"no shared device: {exc}"
    if result is None:
        return None, None, "no shared device"
    if isinstance(result, tuple):
        loader = result[0] if len(result) > 0 else None
        ordinal = result[1] if len(result) > 1 else None
        name = ""
    else:
        loader = getattr(result, "vulkan_index", getattr(result, "loader_index", None))
        ordinal = getattr(result, "cuda_ordinal", None)
        name = str(getattr(result, "name", "") or "")
    loader = None if loader is None else int(loader)
    ordinal = None if ordinal is None else int(ordinal)
    device = (
        f"the shared device {name!r} (loader index {loader})"
        if name
        else f"the shared device (loader index {loader})"
    )
    if ordinal is None:
        return loader, None, f"{device} has no CUDA counterpart"
    return loader, ordinal, f"CUDA ordinal {ordinal} matches {device} by UUID"


def nvdec_possible(mode: HwAccelMode | str) -> tuple[bool, str]:
    """Whether ``mode`` may decode on NVDEC here (FFmpeg's CUDA device type and a CUDA device), and why.

    Asked before the device is chosen, so that a device that can take NVDEC frames on the GPU is made.
    """
    mode = HwAccelMode.parse(mode)
    if mode is HwAccelMode.NONE:
        return False, "software decoding was requested"
    if not _cuda_device_type_available():
        return (
            False,
            f"this FFmpeg build has no CUDA hardware device (it has: {', '.join(hwdevices_available())})",
        )
    from alpha2.native_gpu._cuda.core import cuda_available

    if not cuda_available():
        return False, "no CUDA device (or no cuda-python)"
    return True, "FFmpeg has its CUDA device type and a CUDA device is present"


def plan_hw_device(
    mode: HwAccelMode, cuda_ordinal: int | None = None, shared_device: object = None
) -> HwDevicePlan:
    """Decide where to decode.

    Args:
        mode: auto, cuda or none.
        cuda_ordinal: An explicit CUDA ordinal; overrides the shared-device match (the caller then
            owns keeping decoder and renderer on one GPU).
        shared_device: The renderer's alpha2 Device (or a SharedVulkanContext, choice or candidate);
            None ranks the adapters the way the renderer does by default.

    Raises:
        HwAccelUnavailableError: ``mode`` is CUDA and NVDEC cannot be had.
    """
    if mode is HwAccelMode.NONE:
        return HwDevicePlan(mode, None, None, "software decoding was requested")
    if not _cuda_device_type_available():
        why = f"this FFmpeg build has no CUDA hardware device (it has: {', '.join(hwdevices_available())})"
        if mode is HwAccelMode.CUDA:
            raise HwAccelUnavailableError(
                f"hwaccel='cuda' cannot be had: {why}; use hwaccel='auto' or 'none'"
            )
        return HwDevicePlan(mode, None, None, why)
    if cuda_ordinal is not None:
        if cuda_ordinal < 0:
            raise InvalidInputError(f"cuda_ordinal must be non-negative, got {cuda_ordinal}")
        return HwDevicePlan(mode, cuda_ordinal, None, f"CUDA ordinal {cuda_ordinal} was given explicitly")
    if shared_device is None:
        # Ranking the adapters only to learn that no CUDA device exists costs a Vulkan enumeration
        # (0.1 s or more): ask CUDA first, cheaply.
        from alpha2.native_gpu._cuda.core import cuda_available

        if not cuda_available():
            why = "no CUDA device (or no cuda-python), so no NVDEC"
            if mode is HwAccelMode.CUDA:
                raise HwAccelUnavailableError(
                    f"hwaccel='cuda' cannot be had: {why}; use hwaccel='auto' or 'none'"
                )
            return HwDevicePlan(mode, None, None, why)
    loader, ordinal, why = _shared_device(shared_device)
    if ordinal is None:
        if mode is HwAccelMode.CUDA:
            raise HwAccelUnavailableError(
                f"hwaccel='cuda' cannot be had: {why}; NVDEC must run on the renderer's GPU. "
                "Use hwaccel='auto' or 'none', or pass cuda_ordinal explicitly"
            )
        return HwDevicePlan(mode, None, loader, why)
    return HwDevicePlan(mode, ordinal, loader, why)


def make_hwaccel(plan: HwDevicePlan) -> HWAccel:
    """PyAV's HWAccel for the plan: frames stay on the GPU; software fallback only for ``auto``."""
    if plan.cuda_ordinal is None:
        raise InvalidInputError("make_hwaccel needs a plan with a CUDA ordinal")
    return HWAccel(
        device_type="cuda",
        device=str(plan.cuda_ordinal),
        allow_software_fallback=plan.requested is HwAccelMode.AUTO,
        is_hw_owned=True,
    )
