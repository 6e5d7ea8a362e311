"""Which hardware device FFmpeg decodes on: the CUDA twin of the shared device, or none.

The decoder must land on the GPU the renderer uses. Whoever chose that GPU says where, as a
:class:`~alpha2.gpu.identity.DecoderPlacement` (an alpha2 Device gives one; the front door makes the
device before the decoder): NVDEC runs on that CUDA ordinal or not at all. ``auto`` falls back to
software decoding and says why; an explicit ``cuda`` that cannot be had is an error.

FFmpeg's CUDA device retains the primary context with ``CU_CTX_SCHED_BLOCKING_SYNC`` and fails
("Operation not supported") when something else already activated the primary context with other
flags: set those flags before anything retains it, or let FFmpeg go first.
"""

from __future__ import annotations

import ctypes
import enum
import functools
from dataclasses import dataclass
from typing import Any

from av.codec.hwaccel import HWAccel, hwdevices_available

from alpha2.ffmpeg_bridge.errors import HwAccelUnavailableError
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.identity import DecoderPlacement, PlacesDecoders

__all__ = [
    "HwAccelMode",
    "HwAccelReport",
    "HwDevicePlan",
    "make_hwaccel",
    "no_cuda_device_type_reason",
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
    join_current_context: bool = False
    """Open FFmpeg's CUDA device in the context current on the opening thread (``current_ctx``), not
    by retaining the primary context (which fails when another library activated it with its flags)."""

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


def _placement_of(source: object) -> DecoderPlacement:
    """The placement ``source`` gives: a DecoderPlacement, or an object that places decoders (a Device)."""
    if isinstance(source, DecoderPlacement):
        return source
    if isinstance(source, PlacesDecoders):
        return source.decoder_placement()
    raise InvalidInputError(
        f"device must be an alpha2 Device or a DecoderPlacement, got {type(source).__name__}"
    )


def _cuda_driver_present() -> bool:
    """Whether a CUDA driver library is installed (loaded, never called: the CUDA calls are native_gpu's)."""
    return _load_libcuda() is not None


@functools.cache
def _load_libcuda() -> object | None:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def no_cuda_device_type_reason() -> str | None:
    """Why this FFmpeg build cannot decode on NVDEC at all (None when it has the CUDA device type)."""
    if _cuda_device_type_available():
        return None
    return f"this FFmpeg build has no CUDA hardware device (it has: {', '.join(hwdevices_available())})"


def plan_hw_device(
    mode: HwAccelMode, cuda_ordinal: int | None = None, placement: object = None
) -> HwDevicePlan:
    """Decide where to decode.

    Args:
        mode: auto, cuda or none.
        cuda_ordinal: An explicit CUDA ordinal; overrides ``placement`` (the caller then owns keeping
            decoder and renderer on one GPU).
        placement: Where the renderer's GPU wants NVDEC (a :class:`~alpha2.gpu.identity.DecoderPlacement`,
            or an alpha2 Device, which gives one). None: CUDA ordinal 0 when a CUDA driver is present
            (the front door, ``alpha2.open``, always passes the renderer's placement).

    Raises:
        HwAccelUnavailableError: ``mode`` is CUDA and NVDEC cannot be had.
    """
    if mode is HwAccelMode.NONE:
        return HwDevicePlan(mode, None, None, "software decoding was requested")
    why = no_cuda_device_type_reason()
    if why is not None:
        if mode is HwAccelMode.CUDA:
            raise HwAccelUnavailableError(
                f"hwaccel='cuda' (--hwaccel cuda) cannot be had: {why}; use hwaccel='auto' or 'none' "
                "(--hwaccel auto or none)"
            )
        return HwDevicePlan(mode, None, None, why)
    if cuda_ordinal is not None:
        if cuda_ordinal < 0:
            raise InvalidInputError(f"cuda_ordinal must be non-negative, got {cuda_ordinal}")
        return HwDevicePlan(mode, cuda_ordinal, None, f"CUDA ordinal {cuda_ordinal} was given explicitly")
    if placement is None:
        if not _cuda_driver_present():
            why = "no CUDA driver (libcuda.so.1), so no NVDEC"
            if mode is HwAccelMode.CUDA:
                raise HwAccelUnavailableError(
                    f"hwaccel='cuda' (--hwaccel cuda) cannot be had: {why}; use hwaccel='auto' or 'none' "
                    "(--hwaccel auto or none)"
                )
            return HwDevicePlan(mode, None, None, why)
        return HwDevicePlan(
            mode, 0, None, "CUDA ordinal 0, FFmpeg's default (no device was given to place the decoder on)"
        )
    where = _placement_of(placement)
    if where.cuda_ordinal is None:
        if mode is HwAccelMode.CUDA and not where.cuda_present:  # no GPU would do: no renderer's-GPU advice
            raise HwAccelUnavailableError(
                f"hwaccel='cuda' (--hwaccel cuda) cannot be had: {where.reason}; use hwaccel='auto' or "
                "'none' (--hwaccel auto or none)"
            )
        if mode is HwAccelMode.CUDA:
            raise HwAccelUnavailableError(
                f"hwaccel='cuda' (--hwaccel cuda) cannot be had: {where.reason}; NVDEC must run on the "
                "renderer's GPU. Use hwaccel='auto' or 'none' (--hwaccel auto or none); from Python, "
                "cuda_ordinal= names a CUDA device to decode on all the same"
            )
        return HwDevicePlan(mode, None, where.vulkan_index, where.reason)
    return HwDevicePlan(
        mode, where.cuda_ordinal, where.vulkan_index, where.reason, where.join_current_context
    )


def make_hwaccel(plan: HwDevicePlan) -> HWAccel:
    """PyAV's HWAccel for the plan: frames stay on the GPU; software fallback only for ``auto``."""
    if plan.cuda_ordinal is None:
        raise InvalidInputError("make_hwaccel needs a plan with a CUDA ordinal")
    # PyAV adds primary_ctx=1 unless told otherwise; with current_ctx=1 both would conflict.
    options: dict[str, object] | None = (
        {"primary_ctx": "0", "current_ctx": "1"} if plan.join_current_context else None
    )
    return HWAccel(
        device_type="cuda",
        device=str(plan.cuda_ordinal),
        allow_software_fallback=plan.requested is HwAccelMode.AUTO,
        is_hw_owned=True,
        options=options,
    )
