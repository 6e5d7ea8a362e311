"""The encode hand-off: the renderer's RGBA texture, or decoded Y'CbCr planes, -> NV12 / P010 for an encoder.

:meth:`VulkanEncodeCopier.submit_planes` skips the RGBA texture: it reads an importer's plane textures
(nv12, p010, yuv420p, yuv444p10 ...) with a bilinear sampler and writes NV12 / P010 at the copier's
size, matrix and range in one compute pass (``encode_scale_yuv.wgsl``; the colour change is one affine
transform of the samples, :func:`scale_yuv_params`), into the same read-back ring.

:class:`VulkanEncodeCopier` converts a rendered ``rgba8unorm`` / ``bgra8unorm`` / ``rgba16float`` texture
to NV12 (8-bit) or P010 (10-bit) in a WebGPU compute pass (the output's matrix, range and chroma siting),
writes the planes into a storage buffer laid out with 256-byte rows, copies it into one slot of a ring of
mappable buffers and maps that slot asynchronously. The CPU never waits for a frame that is not done,
except when the ring is full: then :meth:`VulkanEncodeCopier.submit` waits (bounded) for the oldest frame
and hands it back. Each finished frame comes back as :class:`EncodedPlanes`: a
:class:`~alpha2.gpu.handles.CpuPlaneSet` over the mapped memory (no copy), the pixel format, the pts, the
execution path and the bytes read back. Releasing it unmaps the slot.

:class:`VideoEncodeExtent` holds the coded-size limits of an encoder (from Vulkan video-encode
capabilities where the driver reports them, otherwise from the software encoder's known limits) and
refuses impossible sizes up front.

Works with any wgpu-py API device (wgpu-native, lavapipe included, or wgpudawn); the name follows the
design's vocabulary. NVENC output as CUDA frames is not part of this build (``target='cuda'`` raises
:class:`~alpha2.gpu.errors.UnsupportedError`).
"""

from __future__ import annotations

import collections
import enum
import importlib.resources
import math
import struct
import sys
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from alpha2.gpu.colour import (
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourRange,
    ColourTransform,
    rgb_to_yuv,
)
from alpha2.gpu.errors import (
    ClosedError,
    GpuTimeoutError,
    InternalError,
    InvalidInputError,
    OutOfMemoryError,
    UnsupportedError,
)
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet
from alpha2.gpu.identity import ExecutionPath
from alpha2.native_gpu.device.waits import gpu_wait_timeout
from alpha2.native_gpu.render.renderer import LayoutKind, shader_params

if TYPE_CHECKING:
    import wgpu

__all__ = [
    "EncodeTarget",
    "EncodedPlanes",
    "ExtentSource",
    "ScaleYuvParams",
    "VideoEncodeExtent",
    "VulkanEncodeCopier",
    "scale_yuv_params",
]

ROW_ALIGNMENT_BYTES = 256
"""Rows of the read-back planes are padded to this (WebGPU's copy alignment)."""

SOURCE_TEXTURE_FORMATS = ("rgba8unorm", "bgra8unorm", "rgba16float")
"""Texture formats the copier reads (``*-srgb`` views would decode the transfer function: refused)."""

OUTPUT_FORMATS = (PixelFormat.NV12, PixelFormat.P010)
"""Pixel formats the copier writes."""

_SHADER_FILE = "rgb_to_yuv.wgsl"
_PARAMS_SIZE_BYTES = 80  # 3 x vec4<f32> + 2 x vec4<u32>
_PLANES_SHADER_FILE = "encode_scale_yuv.wgsl"
_PLANES_PARAMS_SIZE_BYTES = 160  # 8 x vec4<f32> + 2 x vec4<u32>
_WORKGROUP = 8
_BIND_GROUP_CACHE = 4
_PLANES_BIND_GROUP_CACHE = 16  # the importer's pools hold a few texture sets per stream
_PLANES_PARAMS_CACHE = 8
_NEGLIGIBLE_CODES = 1e-3
"""A matrix term that moves the output by less than this many codes over the whole sample range is
dropped (and the texture read it needs skipped): same-matrix conversions leave ~1e-16 there."""


# ---------------------------------------------------------------------------------------------------
# VideoEncodeExtent


class ExtentSource(enum.StrEnum):
    """Where a :class:`VideoEncodeExtent` came from."""

    VULKAN = "vulkan"
    """The driver's Vulkan video-encode capabilities (minCodedExtent / maxCodedExtent)."""
    ENCODER = "encoder"
    """alpha2's table of known encoder limits (software encoders, NVENC)."""


# name -> (codec, min_w, min_h, max_w, max_h); alignment comes from the pixel format's chroma subsampling.
# Sources: x264 encoder.c validate_parameters (1..16384 each side); x265 param.cpp (at least one CTU,
# 64 with the default --ctu 64; no hard maximum: 16384 is alpha2's cap, above HEVC level 6.2's 8192x4320);
# SVT-AV1 enc_settings.c (4x4 .. 16384x8704; releases before 1.x needed 64x64); NVIDIA's NVENC support
# matrix (H.264 145x49 .. 4096x4096, HEVC 129x33 .. 8192x8192, AV1 8192x8192).
_ENCODER_LIMITS: dict[str, tuple[str, int, int, int, int]] = {
    "libx264": ("h264", 2, 2, 16384, 16384),
    "libx264rgb": ("h264", 2, 2, 16384, 16384),
    "libopenh264": ("h264", 16, 16, 4096, 2304),
    "libx265": ("hevc", 64, 64, 16384, 16384),
    "libsvtav1": ("av1", 4, 4, 16384, 8704),
    "libaom-av1": ("av1", 2, 2, 65536, 65536),
    "librav1e": ("av1", 2, 2, 65536, 65536),
    "libvpx-vp9": ("vp9", 2, 2, 16384, 16384),
    "libvpx": ("vp8", 2, 2, 16383, 16383),
    "h264_nvenc": ("h264", 146, 50, 4096, 4096),
    "hevc_nvenc": ("hevc", 130, 34, 8192, 8192),
    "av1_nvenc": ("av1", 130, 34, 8192, 8192),
}
# Generic codec names (no particular encoder): the bitstream's own limits at its highest common level.
_CODEC_LIMITS: dict[str, tuple[str, int, int, int, int]] = {
    "h264": ("h264", 2, 2, 16384, 16384),
    "hevc": ("hevc", 16, 16, 16888, 16888),
    "av1": ("av1", 2, 2, 65536, 65536),
    "vp9": ("vp9", 2, 2, 65536, 65536),
}
_CODEC_ALIASES = {"h265": "hevc", "avc": "h264", "libsvt_av1": "libsvtav1"}


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
                f"{_round_up(width, self.width_alignment)}x{_round_up(height, self.height_alignment)}"
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
        key = _CODEC_ALIASES.get(name.lower(), name.lower())
        entry = _ENCODER_LIMITS.get(key)
        encoder = key
        if entry is None:
            entry = _CODEC_LIMITS.get(key)
            encoder = ""
        if entry is None:
            known = ", ".join(sorted([*_ENCODER_LIMITS, *_CODEC_LIMITS]))
            raise UnsupportedError(f"no known coded-size limits for encoder {name!r}; known: {known}")
        codec, min_w, min_h, max_w, max_h = entry
        align_w, align_h = _format_alignment(pixel_format)
        return cls(
            codec=codec,
            min_width=_round_up(min_w, align_w),
            min_height=_round_up(min_h, align_h),
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
        fmt_w, fmt_h = _format_alignment(pixel_format)
        align_w = math.lcm(fmt_w, max(1, granularity[0]))
        align_h = math.lcm(fmt_h, max(1, granularity[1]))
        return cls(
            codec=_CODEC_ALIASES.get(codec.lower(), codec.lower()),
            min_width=_round_up(max(1, min_extent[0]), align_w),
            min_height=_round_up(max(1, min_extent[1]), align_h),
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


def _round_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _format_alignment(pixel_format: PixelFormat) -> tuple[int, int]:
    return 1 << pixel_format.log2_chroma_w, 1 << pixel_format.log2_chroma_h


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


# ---------------------------------------------------------------------------------------------------
# Encoded planes


class EncodeTarget(enum.StrEnum):
    """Where the copier delivers the planes."""

    CPU = "cpu"
    """Host memory through a ring of mapped buffers, for software encoders."""
    CUDA = "cuda"
    """CUDA frames for NVENC through shared Vulkan memory: not in this build."""


class EncodedPlanes:
    """One frame converted for the encoder: NV12 / P010 planes in host memory, valid until :meth:`release`.

    The planes view the mapped read-back buffer directly (no copy) unless the copier was made with
    ``copy_planes=True``. Release it (or use it as a context manager) once the encoder frame is filled:
    that unmaps the ring slot for the next frame. The plane memoryviews are released with it (using them
    afterwards raises ``ValueError``), but arrays made from them (``np.frombuffer``) are not tracked by
    Python's buffer protocol: copy the data out, or drop such arrays, before the release.
    """

    def __init__(
        self,
        *,
        planes: CpuPlaneSet,
        pixel_format: PixelFormat,
        width: int,
        height: int,
        pts: int | None,
        matrix: ColourMatrix,
        colour_range: ColourRange,
        chroma_location: ChromaLocation,
        bytes_read: int,
        sequence: int,
        on_release: Any = None,
        views: tuple[memoryview, ...] = (),
    ) -> None:
        self.planes = planes
        """Y plane and interleaved CbCr plane (rows padded to 256 bytes)."""
        self.pixel_format = pixel_format
        """NV12 or P010."""
        self.width = width
        """Frame width in pixels."""
        self.height = height
        """Frame height in pixels."""
        self.pts = pts
        """The pts passed to :meth:`VulkanEncodeCopier.submit`."""
        self.matrix = matrix
        """YCbCr matrix the planes were written with."""
        self.colour_range = colour_range
        """Range the planes were written with."""
        self.chroma_location = chroma_location
        """Siting of the chroma samples (tag the encoder frame / stream with it)."""
        self.path = ExecutionPath.CPU_DOWNLOAD
        """Converted by a GPU compute pass, then read back to host memory."""
        self.bytes_read = bytes_read
        """Bytes that crossed from GPU to host memory for this frame (padded rows included)."""
        self.sequence = sequence
        """Submission index within the copier (0, 1, 2 ...)."""
        self._on_release = on_release
        self._views = views

    @property
    def released(self) -> bool:
        """Whether :meth:`release` ran."""
        return self._views is None

    def release(self) -> None:
        """Give the ring slot back (unmap). Idempotent.

        Raises:
            InvalidInputError: a buffer export of a plane view is still open (e.g. a ``ctypes`` object
                made with ``from_buffer``); close it first, the slot stays mapped until then.
        """
        views = self._views
        if views is None:
            return
        for view in views:
            try:
                view.release()
            except BufferError as exc:
                raise InvalidInputError(
                    "EncodedPlanes.release(): a plane view is still exported (a buffer obtained from it "
                    "is open); close it or copy the data before releasing"
                ) from exc
        self._views = None  # type: ignore[assignment]
        callback, self._on_release = self._on_release, None
        if callback is not None:
            callback()

    def _invalidate(self) -> None:
        """The copier closed under this frame: drop the views so nothing reads unmapped memory."""
        for view in self._views or ():
            try:
                view.release()
            except BufferError:
                pass  # exported elsewhere; the owner of that export must not read it any more
        self._views = None  # type: ignore[assignment]
        self._on_release = None

    def __enter__(self) -> EncodedPlanes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else "mapped"
        return (
            f"EncodedPlanes({self.pixel_format.name} {self.width}x{self.height}, pts={self.pts}, "
            f"seq={self.sequence}, {self.bytes_read} bytes, {state})"
        )


# ---------------------------------------------------------------------------------------------------
# Planes -> planes: the fused scale + colour conversion's uniform block


@dataclass(frozen=True)
class ScaleYuvParams:
    """The uniform block of ``encode_scale_yuv.wgsl`` for one (input, output) combination.

     Index space as in :class:`~alpha2.native_gpu.render.renderer.ShaderParams`
    : luma sample (i, j) sits at (i, j);
     output pixel o reads source luma position ``src_rect.xy + (o + 0.5) * scale - 0.5``.
    """

    layout: LayoutKind
    """BIPLANAR or TRIPLANAR: which bindings carry the chroma."""
    transform: ColourTransform
    """Output codes = matrix @ [Y, Cb, Cr] samples (normalised, as the textures return them) + offset."""
    luma_reads_chroma: bool
    """Whether the output luma depends on the input chroma (a matrix change): one more read per pixel.
    A pipeline constant, not part of the uniform block."""
    chroma_reads_luma: bool
    """Whether the output chroma depends on the input luma (pipeline constant; false for every matrix
    alpha2 writes, since white has no chroma in any of them)."""
    src_rect: tuple[int, int, int, int]
    """Source crop in luma pixels: x, y, width, height."""
    output_size: tuple[int, int]
    """Output width, height."""
    chroma_subsampling: tuple[int, int]
    """Input luma samples per chroma sample (sx, sy)."""
    chroma_offset: tuple[float, float]
    """Input chroma sample (0, 0) in luma pixels (the input's siting)."""
    output_chroma_site: tuple[float, float]
    """Output chroma sample of a 2 x 2 block relative to its top-left pixel (LEFT: (0, 0.5))."""
    luma_clamp: tuple[int, int, int, int]
    """Inclusive luma texel range read: min x, min y, max x, max y."""
    chroma_clamp: tuple[int, int, int, int]
    """Inclusive chroma texel range read."""
    row_words: int
    """Output row pitch in u32 words."""
    uv_word_offset: int
    """Start of the output CbCr plane in u32 words."""
    max_code: int
    """Largest output code (255 or 1023)."""
    msb_shift: int
    """Output codes are shifted up by this (6 for P010)."""

    def to_bytes(self) -> bytes:
        """The WGSL ``Params`` struct (160 bytes, little-endian)."""
        m = self.transform.matrix
        o = self.transform.offset
        x, y, w, h = self.src_rect
        ow, oh = self.output_size
        sx, sy = self.chroma_subsampling
        floats = (
            *m[0], o[0], *m[1], o[1], *m[2], o[2],
            float(x), float(y), w / ow, h / oh,
            1.0 / sx, 1.0 / sy, *self.chroma_offset,
            *self.output_chroma_site, 0.0, 0.0,
            *(float(v) for v in self.luma_clamp),
            *(float(v) for v in self.chroma_clamp),
        )  # fmt: skip
        uints = (
            ow, oh, self.row_words, self.uv_word_offset,
            self.max_code, self.msb_shift, 0, 0,
        )  # fmt: skip
        data = struct.pack("<32f", *floats) + struct.pack("<8I", *uints)
        assert len(data) == _PLANES_PARAMS_SIZE_BYTES
        return data


def scale_yuv_params(
    pixel_format: PixelFormat,
    colour: ColourInfo,
    width: int,
    height: int,
    *,
    output_size: tuple[int, int],
    output_format: PixelFormat,
    matrix: ColourMatrix,
    colour_range: ColourRange,
    chroma_location: ChromaLocation,
    crop: tuple[int, int, int, int] | None = None,
) -> ScaleYuvParams:
    """The uniform block that scales ``pixel_format`` planes to ``output_format`` at ``output_size``.

    Geometry, siting and input colour come from :func:`~alpha2.native_gpu.render.renderer.shader_params` (the
    renderer's rules, unspecified tags resolved as FFmpeg does); the colour transform is the renderer's
    sample -> R'G'B' followed by :func:`~alpha2.gpu.colour.rgb_to_yuv` of the output, with no clipping of
    R'G'B' in between (swscale's Y'CbCr -> Y'CbCr does not clip either).

    Args:
        pixel_format: the input planes' layout: bi-planar (nv12, p010 ...) or tri-planar (yuv420p ...).
        colour: the input's colour tags.
        width, height: the input's display size in luma pixels.
        output_size: output width, height (even).
        output_format: NV12 or P010.
        matrix, colour_range, chroma_location: the output's (resolved: LEFT or CENTER siting).
        crop: source rectangle inside ``width`` x ``height``; default the whole frame.

    Raises:
        UnsupportedError: a gray, RGB or packed input (render it to RGBA and use ``submit`` instead).
        InvalidInputError: bad sizes or crop.
    """
    params = shader_params(pixel_format, colour, width, height, crop=crop, output_size=output_size)
    if params.layout not in (LayoutKind.BIPLANAR, LayoutKind.TRIPLANAR):
        raise UnsupportedError(
            f"VulkanEncodeCopier.submit_planes reads bi-planar (nv12, p010 ...) and tri-planar (yuv420p, "
            f"yuv444p10 ...) Y'CbCr planes, not {pixel_format.ffmpeg_name}; render it to an RGBA texture "
            "(FrameRenderer) and use submit(texture)"
        )
    to_rgb = ColourTransform(
        np.array(params.matrix, dtype=np.float64) * np.array(params.value_scale[:3], dtype=np.float64),
        np.array(params.offset, dtype=np.float64),
    )
    composed = to_rgb.then(rgb_to_yuv(matrix, colour_range, output_format.bit_depth))
    m = np.array(composed.matrix)
    luma_reads_chroma = bool(np.abs(m[0, 1:]).max() >= _NEGLIGIBLE_CODES)
    chroma_reads_luma = bool(np.abs(m[1:, 0]).max() >= _NEGLIGIBLE_CODES)
    if not luma_reads_chroma:
        m[0, 1:] = 0.0
    if not chroma_reads_luma:
        m[1:, 0] = 0.0
    site = (0.5 if chroma_location is ChromaLocation.CENTER else 0.0, 0.5)
    out_w, out_h = output_size
    bytes_per_row = _round_up(out_w * (output_format.storage_bits // 8), ROW_ALIGNMENT_BYTES)
    return ScaleYuvParams(
        layout=params.layout,
        transform=ColourTransform(m, composed.offset),
        luma_reads_chroma=luma_reads_chroma,
        chroma_reads_luma=chroma_reads_luma,
        src_rect=params.src_rect,
        output_size=(out_w, out_h),
        chroma_subsampling=params.chroma_subsampling,
        chroma_offset=params.chroma_offset,
        output_chroma_site=site,
        luma_clamp=params.luma_clamp,
        chroma_clamp=params.chroma_clamp,
        row_words=bytes_per_row // 4,
        uv_word_offset=bytes_per_row * out_h // 4,
        max_code=(1 << output_format.bit_depth) - 1,
        msb_shift=output_format.msb_shift,
    )


# ---------------------------------------------------------------------------------------------------
# The copier


class _SlotState(enum.Enum):
    FREE = "free"
    IN_FLIGHT = "in_flight"  # compute + copy submitted, map requested, not handed out yet
    HELD = "held"  # handed out as EncodedPlanes, mapped until released


class _Slot:
    __slots__ = ("buffer", "index", "promise", "pts", "sequence", "state")

    def __init__(self, index: int, buffer: Any) -> None:
        self.index = index
        self.buffer = buffer
        self.state = _SlotState.FREE
        self.promise: Any = None
        self.pts: int | None = None
        self.sequence = -1


def _promise_settled(promise: Any) -> bool:
    return getattr(promise, "_state", "pending") != "pending"


def _pump_events(device: Any) -> None:
    """Let the backend deliver callbacks: wgpu-native polls in its own thread; Dawn needs process_events."""
    module = sys.modules.get(type(device).__module__)
    process_events = getattr(module, "process_events", None)
    if callable(process_events):
        process_events()


def _load_shader_source(name: str = _SHADER_FILE) -> str:
    return importlib.resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


class VulkanEncodeCopier:
    """Rendered RGBA texture -> NV12 / P010 planes in host memory, through a compute pass and a ring of
    asynchronously mapped read-back buffers. One copier per export; everything is created once.

    Typical use (single thread)::

        copier = VulkanEncodeCopier(device, 1920, 1080, pixel_format=PixelFormat.NV12)
        for texture, pts in rendered:
            for planes in copier.submit(texture, pts):
                with planes:
                    session.encode(planes.pixel_format, planes.planes)
        for planes in copier.flush():
            with planes:
                session.encode(planes.pixel_format, planes.planes)
        copier.close()

    Frames come back in submission order. Release every returned :class:`EncodedPlanes` before the next
    :meth:`submit` (a ``with`` block does it); ``copy_planes=True`` hands out copies and frees the slot at
    once instead. Not thread-safe: call it from one thread.
    """

    def __init__(
        self,
        device: wgpu.GPUDevice,
        width: int,
        height: int,
        *,
        pixel_format: PixelFormat = PixelFormat.NV12,
        matrix: ColourMatrix = ColourMatrix.BT709,
        colour_range: ColourRange = ColourRange.LIMITED,
        chroma_location: ChromaLocation = ChromaLocation.LEFT,
        ring_size: int = 3,
        target: EncodeTarget | str = EncodeTarget.CPU,
        extent: VideoEncodeExtent | None = None,
        wait_timeout_s: float | None = None,
        copy_planes: bool = False,
    ) -> None:
        """Create the pipeline, the plane storage buffer and the read-back ring for one output size.

        Args:
            device: the renderer's wgpu-py device (wgpu-native or wgpudawn).
            width, height: output size in pixels; NV12 / P010 need even sizes.
            pixel_format: ``PixelFormat.NV12`` (8-bit) or ``PixelFormat.P010`` (10-bit).
            matrix: output YCbCr matrix (BT.709, BT.601 as BT470BG / SMPTE170M, BT.2020 NCL ...).
            colour_range: output range, LIMITED or FULL (UNSPECIFIED means LIMITED, FFmpeg's default).
            chroma_location: LEFT (MPEG-2, FFmpeg's default for 4:2:0; UNSPECIFIED means LEFT) or CENTER.
            ring_size: read-back slots (at least 2); bounds host memory to ``ring_size`` frames.
            target: ``'cpu'`` (mapped host memory); ``'cuda'`` is refused in this build.
            extent: the encoder's limits; the size is checked against them (default: the 4:2:0 rule).
            wait_timeout_s: bound of every wait on the GPU (default: alpha2's ``gpu_wait_timeout()``,
                set with ``set_gpu_wait_timeout``).
            copy_planes: hand out copies (slot freed at once) instead of views of the mapped memory.

        Raises:
            UnsupportedError: ``target='cuda'``, or an output format / matrix / siting it cannot write.
            InvalidInputError: an odd or out-of-limit size, or ``ring_size < 2``.
        """
        import wgpu as _wgpu

        target = _parse_target(target)
        if target is EncodeTarget.CUDA:
            raise UnsupportedError(
                "VulkanEncodeCopier: NVENC output as CUDA frames is not supported in this build (the "
                "CUDA hand-off through shared Vulkan memory is not implemented, and the H200 machines have "
                "no NVENC); use target='cpu' with a software encoder (libx264, libx265, libsvtav1)"
            )
        if pixel_format not in OUTPUT_FORMATS:
            names = ", ".join(f.name for f in OUTPUT_FORMATS)
            raise UnsupportedError(f"VulkanEncodeCopier writes {names}, not {pixel_format.name}")
        if matrix in (ColourMatrix.RGB, ColourMatrix.YCGCO, ColourMatrix.BT2020_CL):
            raise UnsupportedError(
                f"VulkanEncodeCopier cannot write matrix {matrix.name}; use BT709, BT470BG, SMPTE170M, "
                "SMPTE240M, FCC or BT2020_NCL"
            )
        if matrix is ColourMatrix.UNSPECIFIED:
            matrix = ColourMatrix.BT709 if height > 576 else ColourMatrix.BT470BG
        if colour_range is ColourRange.UNSPECIFIED:
            colour_range = ColourRange.LIMITED
        if chroma_location is ChromaLocation.UNSPECIFIED:
            chroma_location = ChromaLocation.LEFT
        if chroma_location not in (ChromaLocation.LEFT, ChromaLocation.CENTER):
            raise UnsupportedError(
                f"VulkanEncodeCopier writes chroma sited LEFT or CENTER, not {chroma_location.name}"
            )
        if ring_size < 2:
            raise InvalidInputError(f"ring_size must be at least 2, got {ring_size}")
        if width < 1 or height < 1:
            raise InvalidInputError(f"output size must be positive, got {width}x{height}")
        if extent is None:
            align_w, align_h = _format_alignment(pixel_format)
            extent = VideoEncodeExtent(
                codec="rawvideo",
                min_width=align_w,
                min_height=align_h,
                max_width=65536,
                max_height=65536,
                width_alignment=align_w,
                height_alignment=align_h,
                source=ExtentSource.ENCODER,
                encoder=pixel_format.ffmpeg_name,
            )
        extent.check(width, height)

        self.width = width
        """Output width in pixels."""
        self.height = height
        """Output height in pixels."""
        self.pixel_format = pixel_format
        """NV12 or P010."""
        self.matrix = matrix
        """Output YCbCr matrix (UNSPECIFIED resolved)."""
        self.colour_range = colour_range
        """Output range (UNSPECIFIED resolved to LIMITED)."""
        self.chroma_location = chroma_location
        """Chroma siting written (UNSPECIFIED resolved to LEFT)."""
        self.ring_size = ring_size
        """Number of read-back slots."""
        self.extent = extent
        """The limits the size was checked against."""
        self.target = target
        """Where planes are delivered (always CPU in this build)."""
        if wait_timeout_s is not None and not wait_timeout_s > 0:
            raise InvalidInputError(
                f"wait_timeout_s must be positive seconds or None, got {wait_timeout_s!r}"
            )
        self._wait_timeout_s = None if wait_timeout_s is None else float(wait_timeout_s)
        self.copy_planes = copy_planes
        """Whether handed-out planes are copies (True) or views of the mapped slot (False)."""

        bytes_per_sample = pixel_format.storage_bits // 8
        self.bytes_per_row = _round_up(width * bytes_per_sample, ROW_ALIGNMENT_BYTES)
        """Row pitch of both planes in the read-back buffer (256-byte aligned)."""
        self.width_bytes = width * bytes_per_sample
        """Meaningful bytes per row of either plane (Y: width samples; CbCr: width / 2 pairs)."""
        self.uv_offset_bytes = self.bytes_per_row * height
        """Offset of the CbCr plane in the read-back buffer."""
        self.frame_size_bytes = self.bytes_per_row * (height + height // 2)
        """Bytes read back per frame (padded rows included)."""
        self.bytes_read_total = 0
        """Bytes read back over the copier's life."""
        self.frames_submitted = 0
        """Frames submitted so far."""

        self._wgpu = _wgpu
        self._device = device
        self._closed = False
        self._sequence = 0
        self._held = 0
        self._peak_in_use = 0

        transform = rgb_to_yuv(matrix, colour_range, pixel_format.bit_depth)
        params = np.zeros(20, dtype=np.float32)
        rows = np.asarray(transform.matrix, dtype=np.float64)
        offset = np.asarray(transform.offset, dtype=np.float64)
        for i in range(3):
            params[i * 4 : i * 4 + 3] = rows[i]
            params[i * 4 + 3] = offset[i]
        uints = params.view(np.uint32)
        if pixel_format is PixelFormat.NV12:
            words_per_invocation_x = 4
            entry_point = "nv12_main"
        else:
            words_per_invocation_x = 2
            entry_point = "p010_main"
        uints[12:16] = (width, height, self.bytes_per_row // 4, self.uv_offset_bytes // 4)
        uints[16:20] = (
            (1 << pixel_format.bit_depth) - 1,
            pixel_format.msb_shift,
            1 if chroma_location is ChromaLocation.LEFT else 0,
            0,
        )
        self._dispatch = (
            -(-_round_up(width, words_per_invocation_x) // words_per_invocation_x // _WORKGROUP),
            -(-(height // 2) // _WORKGROUP),
            1,
        )

        usage = _wgpu.BufferUsage
        self._params_buffer = device.create_buffer(
            label="alpha2 encode params", size=_PARAMS_SIZE_BYTES, usage=usage.UNIFORM | usage.COPY_DST
        )
        device.queue.write_buffer(self._params_buffer, 0, params.tobytes())
        self._planes_buffer = device.create_buffer(
            label="alpha2 encode planes",
            size=self.frame_size_bytes,
            usage=usage.STORAGE | usage.COPY_SRC,
        )
        shader = device.create_shader_module(label="alpha2 rgb_to_yuv", code=_load_shader_source())
        self._bind_group_layout = device.create_bind_group_layout(
            label="alpha2 encode",
            entries=[
                {
                    "binding": 0,
                    "visibility": _wgpu.ShaderStage.COMPUTE,
                    "texture": {"sample_type": "unfilterable-float", "view_dimension": "2d"},
                },
                {"binding": 1, "visibility": _wgpu.ShaderStage.COMPUTE, "buffer": {"type": "storage"}},
                {"binding": 2, "visibility": _wgpu.ShaderStage.COMPUTE, "buffer": {"type": "uniform"}},
            ],
        )
        layout = device.create_pipeline_layout(
            label="alpha2 encode", bind_group_layouts=[self._bind_group_layout]
        )
        self._pipeline = device.create_compute_pipeline(
            label=f"alpha2 rgb_to_yuv {entry_point}",
            layout=layout,
            compute={"module": shader, "entry_point": entry_point},
        )
        # Bind groups per source texture, most recent last (renderers reuse one or a few textures).
        self._bind_groups: collections.OrderedDict[int, tuple[Any, Any]] = collections.OrderedDict()
        self._slots = [
            _Slot(
                i,
                device.create_buffer(
                    label=f"alpha2 encode readback {i}",
                    size=self.frame_size_bytes,
                    usage=usage.MAP_READ | usage.COPY_DST,
                ),
            )
            for i in range(ring_size)
        ]
        self._in_flight: collections.deque[_Slot] = collections.deque()
        self._handed_out: weakref.WeakSet[EncodedPlanes] = weakref.WeakSet()
        # submit_planes: made on its first call (a copier fed RGBA textures never needs them). The
        # uniform buffer exists up front so the finalizer owns it; it is written only when the
        # parameters change.
        self._planes_params_buffer = device.create_buffer(
            label="alpha2 encode planes params",
            size=_PLANES_PARAMS_SIZE_BYTES,
            usage=usage.UNIFORM | usage.COPY_DST,
        )
        self._planes_params_written: bytes | None = None
        self._planes_params: collections.OrderedDict[tuple[Any, ...], tuple[ScaleYuvParams, bytes]] = (
            collections.OrderedDict()
        )
        self._planes_layout: Any = None
        self._planes_sampler: Any = None
        self._planes_module: tuple[Any, Any] | None = None  # (pipeline layout, shader module)
        self._planes_pipelines: dict[tuple[bool, bool, bool], Any] = {}
        self._planes_bind_groups: collections.OrderedDict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = (
            collections.OrderedDict()
        )
        self._finalizer = weakref.finalize(self, _destroy_buffers, self._buffers())

    # -- public API -----------------------------------------------------------------------------------

    @property
    def wait_timeout_s(self) -> float:
        """Bound of every wait on the GPU, in seconds (the copier's own, else ``gpu_wait_timeout()``)."""
        return gpu_wait_timeout() if self._wait_timeout_s is None else self._wait_timeout_s

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran."""
        return self._closed

    @property
    def in_flight(self) -> int:
        """Frames submitted and not yet handed out."""
        return len(self._in_flight)

    @property
    def held(self) -> int:
        """Frames handed out and not yet released."""
        return self._held

    @property
    def peak_slots_in_use(self) -> int:
        """Most slots in use (in flight or held) at once: never more than :attr:`ring_size`."""
        return self._peak_in_use

    def submit(self, texture: wgpu.GPUTexture, pts: int | None = None) -> list[EncodedPlanes]:
        """Convert ``texture`` on the GPU and start reading it back; return the frames that are done.

        Never waits for an unfinished frame unless this submission filled the ring: then it waits for the
        oldest one (bounded by ``wait_timeout_s``) so the next submission has a free slot.

        Returns:
            Finished frames, oldest first (possibly none). Release each before the next ``submit``.

        Raises:
            InvalidInputError: the texture's size, format or usage does not fit the copier.
            OutOfMemoryError: every slot is held by an unreleased :class:`EncodedPlanes`.
            GpuTimeoutError: the oldest frame did not finish within ``wait_timeout_s``.
            ClosedError: the copier was closed.
        """
        self._check_open()
        self._check_texture(texture)
        slot = self._take_free_slot()
        return self._submit_pass(slot, self._pipeline, self._bind_group(texture), pts, "alpha2 rgb_to_yuv")

    def submit_planes(
        self,
        views: Sequence[Any],
        pixel_format: PixelFormat,
        colour: ColourInfo,
        width: int,
        height: int,
        pts: int | None = None,
        *,
        crop: tuple[int, int, int, int] | None = None,
    ) -> list[EncodedPlanes]:
        """Scale decoded Y'CbCr planes to the copier's size and format in one compute pass, no RGB texture.

        The same ring and ordering as :meth:`submit` (the two may be mixed; frames come back in submission
        order). Each output sample is read bilinearly (a filtering sampler, clamp-to-edge, positions kept
        inside the displayed texels so padding never bleeds in) at its own position: luma at the pixel,
        chroma at the output's chroma site; the input's matrix and range become the copier's by one
        affine transform on the samples (an identity when they agree).

        The planes may be reused (or released back to a pool) once this returns: the pass that reads them
        is submitted to the queue before anything later written into them.

        Args:
            views: the plane textures or texture views in the pixel format's plane order (an importer
                lease's ``frame.views``): R8 + RG8 / R16 + RG16 (nv12, p010, nv16 ...) or three
                R8 / R16 planes (yuv420p, yuv422p10, yuv444p ...). 16-bit planes need a device with
                'texture-format16bit-norm' (wgpu) or 'unorm16-texture-formats' (Dawn).
            pixel_format: the planes' layout.
            colour: the input's colour (unspecified tags are resolved as FFmpeg does).
            width, height: the input's display size in luma pixels (the textures may be larger).
            pts: handed back with the frame.
            crop: source rectangle (x, y, width, height) inside ``width`` x ``height``; default all of it.

        Returns:
            Finished frames, oldest first (possibly none). Release each before the next submission.

        Raises:
            UnsupportedError: a gray, RGB or packed input format (render to RGBA and :meth:`submit`).
            InvalidInputError: too few planes, or a bad size or crop.
            OutOfMemoryError: every slot is held by an unreleased :class:`EncodedPlanes`.
            GpuTimeoutError: the oldest frame did not finish within ``wait_timeout_s``.
            ClosedError: the copier was closed.
        """
        self._check_open()
        params, data = self._scale_params(pixel_format, colour, width, height, crop)
        triplanar = params.layout is LayoutKind.TRIPLANAR
        count = 3 if triplanar else 2
        if len(views) < count:
            raise InvalidInputError(
                f"{pixel_format.ffmpeg_name} needs {count} plane textures ({params.layout.value}), "
                f"got {len(views)}"
            )
        bind_group = self._planes_bind_group(tuple(views[:count]), triplanar)
        pipeline = self._planes_pipeline(triplanar, params.luma_reads_chroma, params.chroma_reads_luma)
        slot = self._take_free_slot()
        if data != self._planes_params_written:
            self._device.queue.write_buffer(self._planes_params_buffer, 0, data)
            self._planes_params_written = data
        return self._submit_pass(slot, pipeline, bind_group, pts, "alpha2 encode_scale_yuv")

    def poll(self) -> list[EncodedPlanes]:
        """Frames that are done, oldest first, without waiting."""
        self._check_open()
        return self._collect(block_for_one=False)

    def next_frame(self, timeout: float | None = None) -> EncodedPlanes | None:
        """Wait (bounded) for the oldest in-flight frame; None when nothing is in flight.

        Raises:
            GpuTimeoutError: it did not finish within ``timeout`` (default ``wait_timeout_s``).
        """
        self._check_open()
        if not self._in_flight:
            return None
        return self._take_oldest(self.wait_timeout_s if timeout is None else timeout)

    def flush(self, timeout: float | None = None) -> list[EncodedPlanes]:
        """Wait (bounded per frame) for every in-flight frame and return them, oldest first."""
        frames: list[EncodedPlanes] = []
        while True:
            frame = self.next_frame(timeout)
            if frame is None:
                return frames
            frames.append(frame)

    def close(self) -> None:
        """Wait for in-flight work, unmap and destroy the buffers. Idempotent.

        Frames handed out and not released are invalid afterwards.
        """
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + self.wait_timeout_s
        for slot in self._slots:
            if slot.state is _SlotState.IN_FLIGHT and self._settle(
                slot, max(0.0, deadline - time.monotonic())
            ):
                try:
                    slot.promise.sync_wait()
                except Exception:
                    pass  # a failed map leaves nothing to unmap
        for frame in list(self._handed_out):
            frame._invalidate()
        self._in_flight.clear()
        self._bind_groups.clear()
        self._planes_bind_groups.clear()
        self._finalizer()

    def __enter__(self) -> VulkanEncodeCopier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"VulkanEncodeCopier({self.width}x{self.height} {self.pixel_format.name} {self.matrix.name} "
            f"{self.colour_range.name} {self.chroma_location.name}, ring={self.ring_size}, "
            f"in_flight={self.in_flight}, held={self.held})"
        )

    # -- internals ------------------------------------------------------------------------------------

    def _buffers(self) -> list[Any]:
        return [
            self._params_buffer,
            self._planes_buffer,
            self._planes_params_buffer,
            *(slot.buffer for slot in self._slots),
        ]

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("VulkanEncodeCopier is closed")

    def _check_texture(self, texture: Any) -> None:
        fmt = str(texture.format)
        if fmt not in SOURCE_TEXTURE_FORMATS:
            raise InvalidInputError(
                f"VulkanEncodeCopier reads {', '.join(SOURCE_TEXTURE_FORMATS)} textures, not {fmt!r}"
                + (
                    " (an sRGB format would decode the transfer function; render to the unorm format)"
                    if "srgb" in fmt
                    else ""
                )
            )
        size = tuple(texture.size)
        if (size[0], size[1]) != (self.width, self.height):
            raise InvalidInputError(
                f"texture is {size[0]}x{size[1]}, the copier was made for {self.width}x{self.height}; "
                "make one copier per output size"
            )
        if not int(texture.usage) & int(self._wgpu.TextureUsage.TEXTURE_BINDING):
            raise InvalidInputError("the texture needs TextureUsage.TEXTURE_BINDING for the compute pass")

    def _bind_group(self, texture: Any) -> Any:
        key = id(texture)
        entry = self._bind_groups.get(key)
        if entry is not None and entry[0] is texture:
            self._bind_groups.move_to_end(key)
            return entry[1]
        bind_group = self._device.create_bind_group(
            label="alpha2 encode",
            layout=self._bind_group_layout,
            entries=[
                {"binding": 0, "resource": texture.create_view()},
                {
                    "binding": 1,
                    "resource": {"buffer": self._planes_buffer, "offset": 0, "size": self.frame_size_bytes},
                },
                {
                    "binding": 2,
                    "resource": {"buffer": self._params_buffer, "offset": 0, "size": _PARAMS_SIZE_BYTES},
                },
            ],
        )
        self._bind_groups[key] = (texture, bind_group)
        while len(self._bind_groups) > _BIND_GROUP_CACHE:
            self._bind_groups.popitem(last=False)
        return bind_group

    def _take_free_slot(self) -> _Slot:
        slot = self._free_slot()
        if slot is None:
            raise OutOfMemoryError(
                f"VulkanEncodeCopier: all {self.ring_size} read-back slots are held by unreleased "
                "EncodedPlanes; release() each returned frame (or use it in a with block) before the next "
                "submit, or make the copier with copy_planes=True or a larger ring_size"
            )
        return slot

    def _submit_pass(
        self, slot: _Slot, pipeline: Any, bind_group: Any, pts: int | None, label: str
    ) -> list[EncodedPlanes]:
        device = self._device
        encoder = device.create_command_encoder(label="alpha2 encode")
        compute = encoder.begin_compute_pass(label=label)
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(*self._dispatch)
        compute.end()
        encoder.copy_buffer_to_buffer(self._planes_buffer, 0, slot.buffer, 0, self.frame_size_bytes)
        device.queue.submit([encoder.finish()])

        slot.pts = pts
        slot.sequence = self._sequence
        self._sequence += 1
        self.frames_submitted += 1
        slot.promise = slot.buffer.map_async("READ", 0, self.frame_size_bytes)
        slot.state = _SlotState.IN_FLIGHT
        self._in_flight.append(slot)
        self._note_usage()
        return self._collect(block_for_one=self._free_slot() is None)

    def _scale_params(
        self,
        pixel_format: PixelFormat,
        colour: ColourInfo,
        width: int,
        height: int,
        crop: tuple[int, int, int, int] | None,
    ) -> tuple[ScaleYuvParams, bytes]:
        key = (pixel_format, colour, width, height, crop)
        cached = self._planes_params.get(key)
        if cached is not None:
            return cached
        params = scale_yuv_params(
            pixel_format,
            colour,
            width,
            height,
            output_size=(self.width, self.height),
            output_format=self.pixel_format,
            matrix=self.matrix,
            colour_range=self.colour_range,
            chroma_location=self.chroma_location,
            crop=crop,
        )
        entry = (params, params.to_bytes())
        self._planes_params[key] = entry
        while len(self._planes_params) > _PLANES_PARAMS_CACHE:
            self._planes_params.popitem(last=False)
        return entry

    def _planes_bind_group_layout(self) -> Any:
        if self._planes_layout is None:
            stage = self._wgpu.ShaderStage.COMPUTE
            texture = {"sample_type": "float", "view_dimension": "2d"}
            self._planes_layout = self._device.create_bind_group_layout(
                label="alpha2 encode planes",
                entries=[
                    {"binding": 0, "visibility": stage, "texture": texture},
                    {"binding": 1, "visibility": stage, "texture": texture},
                    {"binding": 2, "visibility": stage, "texture": texture},
                    {"binding": 3, "visibility": stage, "sampler": {"type": "filtering"}},
                    {"binding": 4, "visibility": stage, "buffer": {"type": "storage"}},
                    {"binding": 5, "visibility": stage, "buffer": {"type": "uniform"}},
                ],
            )
            self._planes_sampler = self._device.create_sampler(
                label="alpha2 encode bilinear",
                address_mode_u="clamp-to-edge",
                address_mode_v="clamp-to-edge",
                mag_filter="linear",
                min_filter="linear",
                mipmap_filter="nearest",
            )
        return self._planes_layout

    def _planes_pipeline(self, triplanar: bool, luma_reads_chroma: bool, chroma_reads_luma: bool) -> Any:
        key = (triplanar, luma_reads_chroma, chroma_reads_luma)
        pipeline = self._planes_pipelines.get(key)
        if pipeline is None:
            if self._planes_module is None:
                self._planes_module = (
                    self._device.create_pipeline_layout(
                        label="alpha2 encode planes", bind_group_layouts=[self._planes_bind_group_layout()]
                    ),
                    self._device.create_shader_module(
                        label="alpha2 encode_scale_yuv", code=_load_shader_source(_PLANES_SHADER_FILE)
                    ),
                )
            layout, shader = self._planes_module
            entry_point = "nv12_main" if self.pixel_format is PixelFormat.NV12 else "p010_main"
            pipeline = self._device.create_compute_pipeline(
                label=f"alpha2 encode_scale_yuv {entry_point}{' triplanar' if triplanar else ''}",
                layout=layout,
                compute={
                    "module": shader,
                    "entry_point": entry_point,
                    "constants": {
                        "TRIPLANAR": int(triplanar),
                        "LUMA_READS_CHROMA": int(luma_reads_chroma),
                        "CHROMA_READS_LUMA": int(chroma_reads_luma),
                        "LEFT_SITED": int(self.chroma_location is not ChromaLocation.CENTER),
                    },
                },
            )
            self._planes_pipelines[key] = pipeline
        return pipeline

    def _planes_bind_group(self, planes: tuple[Any, ...], triplanar: bool) -> Any:
        key = tuple(id(p) for p in planes)
        cache = self._planes_bind_groups
        entry = cache.get(key)
        if entry is not None and all(a is b for a, b in zip(entry[0], planes, strict=True)):
            cache.move_to_end(key)
            return entry[1]
        views = [p.create_view() if hasattr(p, "create_view") else p for p in planes]
        if not triplanar:
            views.append(views[1])  # the shader's Cr binding is unused for bi-planar input
        bind_group = self._device.create_bind_group(
            label="alpha2 encode planes",
            layout=self._planes_bind_group_layout(),
            entries=[
                *({"binding": i, "resource": view} for i, view in enumerate(views)),
                {"binding": 3, "resource": self._planes_sampler},
                {
                    "binding": 4,
                    "resource": {"buffer": self._planes_buffer, "offset": 0, "size": self.frame_size_bytes},
                },
                {
                    "binding": 5,
                    "resource": {
                        "buffer": self._planes_params_buffer,
                        "offset": 0,
                        "size": _PLANES_PARAMS_SIZE_BYTES,
                    },
                },
            ],
        )
        cache[key] = (planes, bind_group)  # holds the planes: their ids cannot be reused while cached
        while len(cache) > _PLANES_BIND_GROUP_CACHE:
            cache.popitem(last=False)
        return bind_group

    def _free_slot(self) -> _Slot | None:
        for slot in self._slots:
            if slot.state is _SlotState.FREE:
                return slot
        return None

    def _note_usage(self) -> None:
        in_use = sum(1 for slot in self._slots if slot.state is not _SlotState.FREE)
        self._peak_in_use = max(self._peak_in_use, in_use)

    def _collect(self, *, block_for_one: bool) -> list[EncodedPlanes]:
        ready: list[EncodedPlanes] = []
        if self._in_flight:
            _pump_events(self._device)
        if block_for_one and self._in_flight:
            ready.append(self._take_oldest(self.wait_timeout_s))
        while self._in_flight and _promise_settled(self._in_flight[0].promise):
            ready.append(self._take_oldest(0.0))
        return ready

    def _take_oldest(self, timeout: float) -> EncodedPlanes:
        slot = self._in_flight.popleft()
        self._wait_slot(slot, timeout)  # puts the slot back at the head when it times out
        return self._hand_out(slot)

    def _settle(self, slot: _Slot, timeout: float) -> bool:
        """Wait up to ``timeout`` for the slot's map; True when settled (mapped or failed)."""
        promise = slot.promise
        deadline = time.monotonic() + timeout
        event = getattr(promise, "_thread_event", None)
        delay = 0.0005
        while not _promise_settled(promise):
            _pump_events(self._device)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _promise_settled(promise)
            if isinstance(event, threading.Event):
                event.wait(min(remaining, delay))
            else:
                time.sleep(min(remaining, delay))
            delay = min(delay * 2, 0.01)
        return True

    def _wait_slot(self, slot: _Slot, timeout: float) -> None:
        if not self._settle(slot, timeout):
            self._in_flight.appendleft(slot)
            raise GpuTimeoutError(
                f"VulkanEncodeCopier: frame {slot.sequence} (pts {slot.pts}) was not read back within "
                f"{timeout:.3g} s; the GPU is busy or hung (raise the timeout with wait_timeout_s)"
            )
        try:
            slot.promise.sync_wait()  # settled: resolves it (marks the buffer mapped), no wait
        except Exception as exc:
            slot.state = _SlotState.FREE
            slot.promise = None
            raise InternalError(
                f"VulkanEncodeCopier: mapping read-back slot {slot.index} failed: {exc}"
            ) from exc
        slot.promise = None

    def _hand_out(self, slot: _Slot) -> EncodedPlanes:
        size = self.frame_size_bytes
        views: tuple[memoryview, ...]
        if self.copy_planes:
            data = slot.buffer.read_mapped(0, size, copy=True)
            slot.buffer.unmap()
            slot.state = _SlotState.FREE
            on_release = None
            keep_alive: object = data
            mapped = memoryview(data)
        else:
            mapped = slot.buffer.read_mapped(0, size, copy=False)
            slot.state = _SlotState.HELD
            self._held += 1
            on_release = _SlotReleaser(self, slot)
            keep_alive = slot.buffer
        y_view = mapped[: self.uv_offset_bytes]
        uv_view = mapped[self.uv_offset_bytes : size]
        views = (y_view, uv_view)
        planes = CpuPlaneSet(
            planes=(
                CpuPlane(
                    data=y_view,
                    bytes_per_row=self.bytes_per_row,
                    width_bytes=self.width_bytes,
                    height=self.height,
                    keep_alive=keep_alive,
                ),
                CpuPlane(
                    data=uv_view,
                    bytes_per_row=self.bytes_per_row,
                    width_bytes=self.width_bytes,
                    height=self.height // 2,
                    keep_alive=keep_alive,
                ),
            ),
            keep_alive=keep_alive,
        )
        self.bytes_read_total += size
        frame = EncodedPlanes(
            planes=planes,
            pixel_format=self.pixel_format,
            width=self.width,
            height=self.height,
            pts=slot.pts,
            matrix=self.matrix,
            colour_range=self.colour_range,
            chroma_location=self.chroma_location,
            bytes_read=size,
            sequence=slot.sequence,
            on_release=on_release,
            views=() if self.copy_planes else views,
        )
        if not self.copy_planes:
            self._handed_out.add(frame)
        return frame

    def _release_slot(self, slot: _Slot) -> None:
        if slot.state is not _SlotState.HELD:
            return
        self._held -= 1
        if not self._closed:
            slot.buffer.unmap()
        slot.state = _SlotState.FREE


class _SlotReleaser:
    """Callback of one handed-out frame. Holds the copier, so its buffers (and the mapped memory the
    frame views) stay alive until the frame is released, even when the application drops the copier."""

    __slots__ = ("_copier", "_slot")

    def __init__(self, copier: VulkanEncodeCopier, slot: _Slot) -> None:
        self._copier: VulkanEncodeCopier | None = copier
        self._slot = slot

    def __call__(self) -> None:
        copier, self._copier = self._copier, None
        if copier is not None:
            copier._release_slot(self._slot)


def _destroy_buffers(buffers: list[Any]) -> None:
    for buffer in buffers:
        try:
            if str(getattr(buffer, "map_state", "unmapped")) == "mapped":
                buffer.unmap()
            buffer.destroy()
        except Exception:
            pass  # interpreter shutdown or device already lost: nothing left to free


def _parse_target(target: EncodeTarget | str) -> EncodeTarget:
    try:
        return EncodeTarget(target)
    except ValueError:
        allowed = ", ".join(repr(t.value) for t in EncodeTarget)
        raise InvalidInputError(f"target must be one of {allowed}, got {target!r}") from None
