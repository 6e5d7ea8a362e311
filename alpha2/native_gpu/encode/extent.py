"""Coded-size limits of an encoder: :class:`VideoEncodeExtent` refuses impossible sizes before any GPU work.

The limits come from the driver's Vulkan video-encode capabilities where it reports them, otherwise from
alpha2's table of known encoder limits (:data:`alpha2.gpu.codecs.ENCODER_LIMITS`, shared with the
encoder table of ``alpha2.ffmpeg_bridge.encoders``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from alpha2.gpu.codecs import (
    CODEC_LIMITS,
    ENCODER_LIMITS,
    ODD_SIDE_ENCODERS,
    canonical_name,
    chroma_alignment,
)
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat

__all__ = ["ExtentSource", "VideoEncodeExtent", "default_extent", "round_up"]

_UNLIMITED = 65536
"""The largest side an output of no particular encoder may have (raw video)."""


class ExtentSource(enum.StrEnum):
    """Where a :class:`VideoEncodeExtent` came from."""

    VULKAN = "vulkan"
    """The driver's Vulkan video-encode capabilities (minCodedExtent / maxCodedExtent)."""
    ENCODER = "encoder"
    """alpha2's table of known encoder limits (software encoders, NVENC)."""


@dataclass(frozen=True)
class VideoEncodeExtent:
    """Coded-size limits of one encode profile on one device; :meth:`check` refuses sizes outside them."""

    codec: str
    """Codec name as FFmpeg spells it (``h264``, ``hevc``, ``av1``, ``vp9``)."""
    min_width: int
    """Smallest coded width in pixels."""
    min_height: int
    """Smallest coded height in pixels."""
    max_width: int
    """Largest coded width in pixels."""
    max_height: int
    """Largest coded height in pixels."""
    width_alignment: int
    """Coded widths must be a multiple of this (2 for 4:2:0)."""
    height_alignment: int
    """Coded heights must be a multiple of this (2 for 4:2:0)."""
    source: ExtentSource
    """Where the limits came from: the driver's Vulkan capabilities or alpha2's encoder table."""
    encoder: str = ""
    """The encoder the limits belong to (``libx264``, ``h264_nvenc`` ...), or "" for codec-wide limits."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", ExtentSource(self.source))
        values = (self.min_width, self.min_height, self.max_width, self.max_height)
        if min(values) < 1 or self.width_alignment < 1 or self.height_alignment < 1:
            raise InvalidInputError(f"VideoEncodeExtent values must be positive, got {self!r}")
        if self.min_width > self.max_width or self.min_height > self.max_height:
            raise InvalidInputError(f"VideoEncodeExtent minimum exceeds maximum: {self!r}")

    @property
    def _name(self) -> str:
        return f"{self.encoder} ({self.codec})" if self.encoder else self.codec

    def allows(self, width: int, height: int) -> bool:
        """Whether ``width`` x ``height`` can be encoded."""
        try:
            self.check(width, height)
        except InvalidInputError:
            return False
        return True

    def check(self, width: int, height: int) -> None:
        """Refuse a coded size this profile cannot encode.

        Raises:
            InvalidInputError: the size is odd where the format needs even sizes, too small or too large;
                the message names the allowed range and alignment.
        """
        where = "the Vulkan video-encode capabilities" if self.source is ExtentSource.VULKAN else "its limits"
        if width % self.width_alignment or height % self.height_alignment:
            raise InvalidInputError(
                f"{width}x{height} cannot be encoded with {self._name}: width must be a multiple of "
                f"{self.width_alignment} and height a multiple of {self.height_alignment} "
                "(4:2:0 chroma needs even sizes); scale to an even size, e.g. "
                f"{round_up(width, self.width_alignment)}x{round_up(height, self.height_alignment)}"
            )
        if not (self.min_width <= width <= self.max_width and self.min_height <= height <= self.max_height):
            raise InvalidInputError(
                f"{width}x{height} cannot be encoded with {self._name}: by {where} the coded size must be "
                f"between {self.min_width}x{self.min_height} and {self.max_width}x{self.max_height}"
            )

    @classmethod
    def for_encoder(cls, name: str, pixel_format: PixelFormat = PixelFormat.NV12) -> VideoEncodeExtent:
        """Known limits of an FFmpeg encoder (``libx264``, ``hevc_nvenc`` ...) or of a codec (``h264``).

        Raises:
            UnsupportedError: the name is not in alpha2's table; the message lists those it knows.
        """
        key = canonical_name(name)
        limits = ENCODER_LIMITS.get(key)
        encoder = key
        if limits is None:
            limits = CODEC_LIMITS.get(key)
            encoder = ""
        if limits is None:
            known = ", ".join(sorted([*ENCODER_LIMITS, *CODEC_LIMITS]))
            raise UnsupportedError(f"no known coded-size limits for encoder {name!r}; known: {known}")
        codec = limits.codec
        min_w, min_h, max_w, max_h = limits.min_width, limits.min_height, limits.max_width, limits.max_height
        # An encoder that takes odd sides in 4:2:0 (libvpx, SVT-AV1) needs no chroma alignment.
        align_w, align_h = (1, 1) if key in ODD_SIDE_ENCODERS else chroma_alignment(pixel_format)
        return cls(
            codec=codec,
            min_width=round_up(min_w, align_w),
            min_height=round_up(min_h, align_h),
            max_width=max_w - max_w % align_w,
            max_height=max_h - max_h % align_h,
            width_alignment=align_w,
            height_alignment=align_h,
            source=ExtentSource.ENCODER,
            encoder=encoder,
        )

    @classmethod
    def from_vulkan(
        cls, codec: str, capabilities: object, pixel_format: PixelFormat = PixelFormat.NV12
    ) -> VideoEncodeExtent:
        """Limits from Vulkan video-encode capabilities (``VkVideoCapabilitiesKHR`` as a duck-typed object).

        Args:
            codec: codec name (``h264``, ``hevc``, ``av1``).
            capabilities: an object or mapping with ``max_coded_extent`` and optionally
                ``min_coded_extent`` and ``picture_access_granularity``; each extent is a
                ``(width, height)`` pair, or an object / mapping with ``width`` and ``height``.
            pixel_format: the encoded format; its chroma subsampling adds to the alignment.

        Raises:
            InvalidInputError: ``max_coded_extent`` is missing or malformed.
        """
        max_extent = _extent(_field(capabilities, "max_coded_extent"), "max_coded_extent")
        if max_extent is None:
            raise InvalidInputError(f"Vulkan encode capabilities for {codec} have no max_coded_extent")
        min_extent = _extent(_field(capabilities, "min_coded_extent"), "min_coded_extent") or (1, 1)
        granularity = _extent(
            _field(capabilities, "picture_access_granularity"), "picture_access_granularity"
        ) or (1, 1)
        fmt_w, fmt_h = chroma_alignment(pixel_format)
        align_w = math.lcm(fmt_w, max(1, granularity[0]))
        align_h = math.lcm(fmt_h, max(1, granularity[1]))
        return cls(
            codec=canonical_name(codec),
            min_width=round_up(max(1, min_extent[0]), align_w),
            min_height=round_up(max(1, min_extent[1]), align_h),
            max_width=max_extent[0] - max_extent[0] % align_w,
            max_height=max_extent[1] - max_extent[1] % align_h,
            width_alignment=align_w,
            height_alignment=align_h,
            source=ExtentSource.VULKAN,
        )

    @classmethod
    def resolve(
        cls, encoder: str, pixel_format: PixelFormat = PixelFormat.NV12, candidate: object = None
    ) -> VideoEncodeExtent:
        """The limits to enforce for ``encoder``.

        The device's Vulkan video-encode capabilities apply to what encodes on that device: a Vulkan
        video encoder (``h264_vulkan``, ``hevc_vulkan``, ``av1_vulkan``) or a bare codec name (``hevc``:
        "what can the GPU encode"). Software encoders (``libx264`` ...) and NVENC keep their own limits
        from alpha2's table, whatever the device reports.

        ``candidate`` is duck-typed (a :class:`~alpha2.native_gpu.device.candidates.VulkanCandidate` or a
        mapping): its ``video_encode_capabilities`` (or ``encode_capabilities``) maps codec names to
        capabilities accepted by :meth:`from_vulkan`.
        """
        name = encoder.lower()
        on_vulkan = name.endswith("_vulkan")
        table = cls.for_encoder(name.removesuffix("_vulkan") if on_vulkan else name, pixel_format)
        if candidate is None or not (on_vulkan or table.encoder == ""):
            return table
        caps_by_codec = _field(candidate, "video_encode_capabilities")
        if caps_by_codec is None:
            caps_by_codec = _field(candidate, "encode_capabilities")
        if not isinstance(caps_by_codec, Mapping):
            return table
        caps = caps_by_codec.get(table.codec)
        if caps is None:
            return table
        return cls.from_vulkan(table.codec, caps, pixel_format)


def default_extent(pixel_format: PixelFormat) -> VideoEncodeExtent:
    """The limits of an output for no particular encoder: the pixel format's chroma alignment only."""
    align_w, align_h = chroma_alignment(pixel_format)
    return VideoEncodeExtent(
        codec="rawvideo",
        min_width=align_w,
        min_height=align_h,
        max_width=_UNLIMITED,
        max_height=_UNLIMITED,
        width_alignment=align_w,
        height_alignment=align_h,
        source=ExtentSource.ENCODER,
        encoder=pixel_format.ffmpeg_name,
    )


def round_up(value: int, alignment: int) -> int:
    """``value`` rounded up to a multiple of ``alignment``."""
    return -(-value // alignment) * alignment


def _field(obj: object, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _extent(value: object, what: str) -> tuple[int, int] | None:
    if value is None:
        return None
    if isinstance(value, tuple | list) and len(value) == 2:
        return int(value[0]), int(value[1])
    width, height = _field(value, "width"), _field(value, "height")
    if width is None or height is None:
        raise InvalidInputError(f"{what} must be (width, height) or have width and height, got {value!r}")
    return int(width), int(height)
