"""Pixel formats: planes, plane layouts, bit depths, alpha semantics and stable shader ordinals.

A :class:`PixelFormat` names an FFmpeg software pixel layout (its value is FFmpeg's name, little-endian
where FFmpeg has both). Each plane is uploaded to the GPU as one texture of a :class:`PlaneFormat`, the
smallest portable format that holds the plane's texels: NV12 is ``R8`` + ``RG8``, P010 is ``R16`` +
``RG16``, planar 4:2:0 is three ``R8`` (or ``R16``) planes. The plane-texture pair is the portable
representation (wgpu-py has no NV12 texture format); :attr:`PixelFormat.vk_multiplanar_format` names
the single multi-planar ``VkFormat`` where Vulkan has one.

Two layouts have no exact WebGPU texture format, and say so rather than hide it:

- ``rgb24`` (3 bytes a texel): WebGPU has no 3-byte format. Its plane format :attr:`PlaneFormat.RGB8`
  has ``wgpu_format`` None and is uploaded as ``rgba8unorm`` after expanding each texel to 4 bytes
  (:attr:`UploadConversion.EXPAND_RGB_TO_RGBA`): the upload is not a plain copy.
- ``x2rgb10le`` (B in the low bits): WebGPU only has ``rgb10a2unorm`` (R in the low bits). Its plane
  format :attr:`PlaneFormat.BGR10A2` is uploaded as ``rgb10a2unorm`` byte for byte and the shader
  swaps red and blue (:attr:`UploadConversion.SWAP_RED_BLUE`).

Vulkan numbers are ``VkFormat`` values hard-coded from the Vulkan headers (no ``vulkan`` import here).

Why one module of about 650 lines: the two enums, their descriptor tables and :class:`PlaneLayout`
are one closed set that refers to itself both ways (``PixelFormat.plane_layout`` builds a layout, the
layout validates against the format's planes) and is checked as a whole at import (every member has a
descriptor, shader ordinals are unique). Split, either half would import the other.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from typing import NamedTuple

from alpha2.gpu.errors import InvalidInputError, UnknownFormatError

__all__ = ["AlphaChannel", "PixelFormat", "PlaneFormat", "PlaneInfo", "PlaneLayout", "UploadConversion"]

# VkFormat values (vulkan_core.h); the multi-planar ones come from VK_KHR_sampler_ycbcr_conversion
# (core in 1.1) and VK_EXT_ycbcr_2plane_444_formats (core in 1.3).
_VK_R8_UNORM = 9
_VK_R8G8_UNORM = 16
_VK_R8G8B8_UNORM = 23
_VK_R8G8B8A8_UNORM = 37
_VK_B8G8R8A8_UNORM = 44
_VK_A2R10G10B10_UNORM_PACK32 = 58
_VK_A2B10G10R10_UNORM_PACK32 = 64
_VK_R16_UNORM = 70
_VK_R16G16_UNORM = 77
_VK_R16G16B16A16_UNORM = 91
_VK_R16G16B16A16_SFLOAT = 97
_VK_R32G32B32A32_SFLOAT = 109
_VK_G8_B8_R8_3PLANE_420_UNORM = 1000156002
_VK_G8_B8R8_2PLANE_420_UNORM = 1000156003
_VK_G8_B8_R8_3PLANE_422_UNORM = 1000156004
_VK_G8_B8R8_2PLANE_422_UNORM = 1000156005
_VK_G8_B8_R8_3PLANE_444_UNORM = 1000156006
_VK_G10X6B10X6G10X6R10X6_422_UNORM_4PACK16 = 1000156010
_VK_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16 = 1000156013
_VK_G10X6_B10X6R10X6_2PLANE_422_UNORM_3PACK16 = 1000156015
_VK_G12X4_B12X4R12X4_2PLANE_420_UNORM_3PACK16 = 1000156023
_VK_G16_B16_R16_3PLANE_420_UNORM = 1000156029
_VK_G16_B16R16_2PLANE_420_UNORM = 1000156030
_VK_G16_B16_R16_3PLANE_422_UNORM = 1000156031
_VK_G16_B16R16_2PLANE_422_UNORM = 1000156032
_VK_G16_B16_R16_3PLANE_444_UNORM = 1000156033
_VK_G8_B8R8_2PLANE_444_UNORM = 1000330000
_VK_G10X6_B10X6R10X6_2PLANE_444_UNORM_3PACK16 = 1000330001
_VK_G16_B16R16_2PLANE_444_UNORM = 1000330003


class AlphaChannel(enum.Enum):
    """What a format's fourth component means."""

    NONE = "none"
    """No alpha component."""
    STRAIGHT = "straight"
    """Alpha present; colour components are not multiplied by it (FFmpeg's convention)."""
    PREMULTIPLIED = "premultiplied"
    """Alpha present; colour components are already multiplied by it."""
    PADDING = "padding"
    """Bits are reserved but carry no meaning (the X of x2rgb10); ignore them, treat as opaque."""


class UploadConversion(enum.Enum):
    """What an upload must do to a plane's bytes beyond copying them into a WebGPU texture."""

    NONE = "none"
    """Copy byte for byte; texels read back exactly as the plane's components."""
    EXPAND_RGB_TO_RGBA = "expand_rgb_to_rgba"
    """3-byte texels must be widened to 4 (alpha = opaque) before or while uploading."""
    SWAP_RED_BLUE = "swap_red_blue"
    """Copy byte for byte, but the texture's red channel holds blue and vice versa: swizzle ``.bgra``."""


class _PlaneFormatInfo(NamedTuple):
    bytes_per_texel: int
    channels: int
    bits_per_channel: int
    wgpu_format: str | None
    wgpu_upload_format: str
    upload_conversion: UploadConversion
    vk_format: int
    is_float: bool


class PlaneFormat(enum.Enum):
    """The texel format of one plane as a GPU texture (the smallest one that holds it exactly)."""

    R8 = "r8"
    RG8 = "rg8"
    RGB8 = "rgb8"
    RGBA8 = "rgba8"
    BGRA8 = "bgra8"
    R16 = "r16"
    RG16 = "rg16"
    RGBA16 = "rgba16"
    RGBA16F = "rgba16f"
    RGBA32F = "rgba32f"
    RGB10A2 = "rgb10a2"
    BGR10A2 = "bgr10a2"

    @property
    def _info(self) -> _PlaneFormatInfo:
        return _PLANE_FORMAT_INFO[self]

    @property
    def bytes_per_texel(self) -> int:
        """Bytes one texel occupies in memory (3 for RGB8: there is no padding byte)."""
        return self._info.bytes_per_texel

    @property
    def channels(self) -> int:
        """Components per texel."""
        return self._info.channels

    @property
    def bits_per_channel(self) -> int:
        """Bits of storage per colour component (10 for the 10:10:10:2 formats)."""
        return self._info.bits_per_channel

    @property
    def is_float(self) -> bool:
        """Whether components are IEEE floats rather than unsigned normalized integers."""
        return self._info.is_float

    @property
    def wgpu_format(self) -> str | None:
        """The WebGPU texture format whose texels read exactly as this plane's, or None if none exists."""
        return self._info.wgpu_format

    @property
    def wgpu_upload_format(self) -> str:
        """The WebGPU texture format the plane is uploaded to (see :attr:`upload_conversion`)."""
        return self._info.wgpu_upload_format

    @property
    def upload_conversion(self) -> UploadConversion:
        """What uploading to :attr:`wgpu_upload_format` must do beyond a byte copy."""
        return self._info.upload_conversion

    @property
    def vk_format(self) -> int:
        """The ``VkFormat`` of an image (or image plane view) holding this plane."""
        return self._info.vk_format


_PLANE_FORMAT_INFO: dict[PlaneFormat, _PlaneFormatInfo] = {
    PlaneFormat.R8: _PlaneFormatInfo(
        1, 1, 8, "r8unorm", "r8unorm", UploadConversion.NONE, _VK_R8_UNORM, False
    ),
    PlaneFormat.RG8: _PlaneFormatInfo(
        2, 2, 8, "rg8unorm", "rg8unorm", UploadConversion.NONE, _VK_R8G8_UNORM, False
    ),
    PlaneFormat.RGB8: _PlaneFormatInfo(
        3, 3, 8, None, "rgba8unorm", UploadConversion.EXPAND_RGB_TO_RGBA, _VK_R8G8B8_UNORM, False
    ),
    PlaneFormat.RGBA8: _PlaneFormatInfo(
        4, 4, 8, "rgba8unorm", "rgba8unorm", UploadConversion.NONE, _VK_R8G8B8A8_UNORM, False
    ),
    PlaneFormat.BGRA8: _PlaneFormatInfo(
        4, 4, 8, "bgra8unorm", "bgra8unorm", UploadConversion.NONE, _VK_B8G8R8A8_UNORM, False
    ),
    PlaneFormat.R16: _PlaneFormatInfo(
        2, 1, 16, "r16unorm", "r16unorm", UploadConversion.NONE, _VK_R16_UNORM, False
    ),
    PlaneFormat.RG16: _PlaneFormatInfo(
        4, 2, 16, "rg16unorm", "rg16unorm", UploadConversion.NONE, _VK_R16G16_UNORM, False
    ),
    PlaneFormat.RGBA16: _PlaneFormatInfo(
        8, 4, 16, "rgba16unorm", "rgba16unorm", UploadConversion.NONE, _VK_R16G16B16A16_UNORM, False
    ),
    PlaneFormat.RGBA16F: _PlaneFormatInfo(
        8, 4, 16, "rgba16float", "rgba16float", UploadConversion.NONE, _VK_R16G16B16A16_SFLOAT, True
    ),
    PlaneFormat.RGBA32F: _PlaneFormatInfo(
        16, 4, 32, "rgba32float", "rgba32float", UploadConversion.NONE, _VK_R32G32B32A32_SFLOAT, True
    ),
    PlaneFormat.RGB10A2: _PlaneFormatInfo(
        4, 4, 10, "rgb10a2unorm", "rgb10a2unorm", UploadConversion.NONE, _VK_A2B10G10R10_UNORM_PACK32, False
    ),
    PlaneFormat.BGR10A2: _PlaneFormatInfo(
        4,
        4,
        10,
        None,
        "rgb10a2unorm",
        UploadConversion.SWAP_RED_BLUE,
        _VK_A2R10G10B10_UNORM_PACK32,
        False,
    ),
}


class _Family(enum.Enum):
    YUV = "yuv"
    RGB = "rgb"
    GRAY = "gray"


class _PixelFormatInfo(NamedTuple):
    family: _Family
    planes: tuple[PlaneFormat, ...]
    log2_chroma_w: int
    log2_chroma_h: int
    bit_depth: int
    storage_bits: int
    msb_shift: int
    alpha: AlphaChannel
    semi_planar: bool
    texels_per_plane_x: int  # >1 for packed 4:2:2, where one texel holds two pixels (Y0 Cb Y1 Cr)
    vk_multiplanar_format: int | None
    shader_ordinal: int


class PixelFormat(enum.Enum):
    """A software pixel layout, named by its FFmpeg ``AVPixelFormat`` name (little-endian variants)."""

    NV12 = "nv12"
    NV21 = "nv21"
    P010 = "p010le"
    P012 = "p012le"
    P016 = "p016le"
    NV16 = "nv16"
    P210 = "p210le"
    P216 = "p216le"
    NV24 = "nv24"
    P410 = "p410le"
    P416 = "p416le"
    YUV420P = "yuv420p"
    YUV420P10 = "yuv420p10le"
    YUV420P12 = "yuv420p12le"
    YUV420P16 = "yuv420p16le"
    YUV422P = "yuv422p"
    YUV422P10 = "yuv422p10le"
    YUV422P12 = "yuv422p12le"
    YUV422P16 = "yuv422p16le"
    YUV444P = "yuv444p"
    YUV444P10 = "yuv444p10le"
    YUV444P12 = "yuv444p12le"
    YUV444P16 = "yuv444p16le"
    YUVA420P = "yuva420p"
    YUVJ420P = "yuvj420p"
    GRAY = "gray"
    GRAY10 = "gray10le"
    GRAY16 = "gray16le"
    RGBA = "rgba"
    BGRA = "bgra"
    RGB24 = "rgb24"
    X2RGB10 = "x2rgb10le"
    RGBA64 = "rgba64le"
    RGBAF16 = "rgbaf16le"
    RGBAF32 = "rgbaf32le"
    AYUV64 = "ayuv64le"
    Y210 = "y210le"

    @classmethod
    def _missing_(cls, value: object) -> PixelFormat:
        """``PixelFormat("p010")`` as :meth:`from_ffmpeg_name` takes it; an unknown name is alpha2's
        UnknownFormatError listing the layouts, not the enum's bare ValueError."""
        return cls.from_ffmpeg_name(value)  # type: ignore[arg-type]

    @classmethod
    def from_ffmpeg_name(cls, name: str) -> PixelFormat:
        """The format FFmpeg calls ``name``.

        Accepts FFmpeg's exact name (``"p010le"``), the name without the little-endian suffix
        (``"p010"``) and FFmpeg's aliases (``"gray8"``).

        Raises:
            UnknownFormatError: alpha2 does not handle that layout; the message lists those it does.
        """
        if not isinstance(name, str):
            raise UnknownFormatError(f"pixel format name must be a str, not {type(name).__name__}")
        key = name.strip().lower()
        found = _BY_NAME.get(key) or _BY_NAME.get(key + "le")
        if found is None:
            names = [f.value for f in cls]
            supported = ", ".join(names[:12]) + (
                f" and {len(names) - 12} more (alpha2.gpu.formats.PixelFormat)" if len(names) > 12 else ""
            )
            hint = " (big-endian layouts are not supported)" if key.endswith("be") else ""
            raise UnknownFormatError(f"unknown pixel format {name!r}{hint}; supported: {supported}")
        return found

    @classmethod
    def from_shader_ordinal(cls, ordinal: int) -> PixelFormat:
        """The format with this :attr:`shader_ordinal`.

        Raises:
            UnknownFormatError: no format has that ordinal, or ``ordinal`` is not an int.
        """
        # A bool or a float equal to an ordinal (True, 1.0) would find a format by hashing alike.
        is_int = isinstance(ordinal, int) and not isinstance(ordinal, bool)
        found = _BY_ORDINAL.get(ordinal) if is_int else None
        if found is None:
            raise UnknownFormatError(
                f"no pixel format has shader ordinal {ordinal!r}; ordinals are 0..{len(_BY_ORDINAL) - 1}"
            )
        return found

    @property
    def _info(self) -> _PixelFormatInfo:
        return _PIXEL_FORMAT_INFO[self]

    @property
    def ffmpeg_name(self) -> str:
        """FFmpeg's name of this layout (``av.VideoFormat(name)`` accepts it)."""
        return self.value

    @property
    def num_planes(self) -> int:
        """Number of memory planes (and of textures in the portable upload)."""
        return len(self._info.planes)

    @property
    def plane_formats(self) -> tuple[PlaneFormat, ...]:
        """The texel format of each plane, in FFmpeg's plane order."""
        return self._info.planes

    @property
    def log2_chroma_w(self) -> int:
        """Horizontal chroma subsampling as a shift: 1 for 4:2:0 and 4:2:2, 0 for 4:4:4, RGB and gray."""
        return self._info.log2_chroma_w

    @property
    def log2_chroma_h(self) -> int:
        """Vertical chroma subsampling as a shift: 1 for 4:2:0, else 0."""
        return self._info.log2_chroma_h

    @property
    def bit_depth(self) -> int:
        """Significant bits per component (10 for p010 and yuv420p10, 16 for half floats)."""
        return self._info.bit_depth

    @property
    def storage_bits(self) -> int:
        """Bits one component occupies in memory (16 for p010 and yuv420p10; 10 for packed x2rgb10)."""
        return self._info.storage_bits

    @property
    def msb_shift(self) -> int:
        """Bits below the value in its storage: p010 -> 6 (value = stored >> 6), yuv420p10 -> 0."""
        return self._info.msb_shift

    @property
    def is_yuv(self) -> bool:
        """Whether components are Y'CbCr (gray is not: it has no chroma)."""
        return self._info.family is _Family.YUV

    @property
    def is_rgb(self) -> bool:
        """Whether components are R'G'B'."""
        return self._info.family is _Family.RGB

    @property
    def is_gray(self) -> bool:
        """Whether the format has luma only."""
        return self._info.family is _Family.GRAY

    @property
    def is_float(self) -> bool:
        """Whether components are floats (rgbaf16, rgbaf32)."""
        return self._info.planes[0].is_float

    @property
    def is_semi_planar(self) -> bool:
        """Whether chroma is one interleaved CbCr (or CrCb) plane after the luma plane (NV12, P010...)."""
        return self._info.semi_planar

    @property
    def is_packed(self) -> bool:
        """Whether all components share one plane (RGB formats, ayuv64, y210)."""
        return self.num_planes == 1 and not self.is_gray

    @property
    def alpha(self) -> AlphaChannel:
        """What the alpha component (if any) means."""
        return self._info.alpha

    @property
    def has_alpha(self) -> bool:
        """Whether a meaningful alpha component is present (padding does not count)."""
        return self._info.alpha in (AlphaChannel.STRAIGHT, AlphaChannel.PREMULTIPLIED)

    @property
    def shader_ordinal(self) -> int:
        """A small integer naming this format in shaders and uniforms; stable, never renumbered."""
        return self._info.shader_ordinal

    @property
    def needs_upload_conversion(self) -> bool:
        """Whether some plane cannot be uploaded to WebGPU as a plain byte copy (see UploadConversion)."""
        return any(p.upload_conversion is not UploadConversion.NONE for p in self._info.planes)

    @property
    def wgpu_plane_formats(self) -> tuple[str, ...]:
        """The WebGPU texture format each plane is uploaded to (``PlaneFormat.wgpu_upload_format``)."""
        return tuple(p.wgpu_upload_format for p in self._info.planes)

    @property
    def vk_plane_formats(self) -> tuple[int, ...]:
        """The ``VkFormat`` of an image holding each plane on its own (R8, R8G8, R16, ...)."""
        return tuple(p.vk_format for p in self._info.planes)

    @property
    def interleaved_chroma_format(self) -> PixelFormat | None:
        """The semi-planar format holding the same samples with Cb and Cr interleaved in one plane, or None.

        yuv420p -> nv12, yuv422p -> nv16, yuv444p -> nv24: the same bit depth, subsampling and colour
        defaults, so sampled as that format the pixels are the same (one chroma sample instead of two).
        None for the rest: yuvj420p's range defaults differ, and the 10/12-bit planar formats keep their
        bits low where p010/p012 keep them high.
        """
        return _INTERLEAVED_CHROMA.get(self)

    @property
    def vk_multiplanar_format(self) -> int | None:
        """The single ``VkFormat`` (sampled through a Y'CbCr conversion) for the whole frame, if any.

        None where Vulkan has no exact match: NV21 (Cr before Cb), LSB-aligned 10/12-bit planar
        (yuv420p10le keeps its bits low; Vulkan's X6/X4 formats keep them high), formats with an
        alpha plane, gray, RGB and ayuv64.
        """
        return self._info.vk_multiplanar_format

    def plane_layout(self, width: int, height: int, row_alignment: int = 1) -> PlaneLayout:
        """Where each plane of a ``width`` x ``height`` frame lies in one contiguous buffer.

        Chroma planes round up for odd sizes (a 5x3 NV12 frame has a 3x2 CbCr plane), as FFmpeg does.
        Rows are padded to ``row_alignment`` bytes (256 for WebGPU buffer copies); planes follow one
        another, so every offset is aligned too.

        Raises:
            InvalidInputError: a non-positive size, or an alignment that is not a power of two.
        """
        for what, value in (("width", width), ("height", height)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InvalidInputError(f"{what} must be a positive int, not {value!r}")
        if (
            isinstance(row_alignment, bool)
            or not isinstance(row_alignment, int)
            or row_alignment <= 0
            or row_alignment & (row_alignment - 1)
        ):
            raise InvalidInputError(f"row_alignment must be a power of two >= 1, not {row_alignment!r}")
        # Decoders ask per frame for the same few sizes: layouts are frozen values, computed once each.
        return _plane_layout(self, width, height, row_alignment)


def _plane_size(pixel_format: PixelFormat, index: int, width: int, height: int) -> tuple[int, int]:
    """(texels, rows) of plane ``index`` of a ``width`` x ``height`` frame."""
    info = pixel_format._info
    is_chroma = info.family is _Family.YUV and index in (1, 2)
    plane_w = -(-width >> info.log2_chroma_w) if is_chroma else width
    plane_h = -(-height >> info.log2_chroma_h) if is_chroma else height
    return -(-plane_w // info.texels_per_plane_x), plane_h


@functools.lru_cache(maxsize=512)
def _plane_layout(pixel_format: PixelFormat, width: int, height: int, row_alignment: int) -> PlaneLayout:
    planes: list[PlaneInfo] = []
    offset = 0
    for index, plane_format in enumerate(pixel_format.plane_formats):
        texels_w, plane_h = _plane_size(pixel_format, index, width, height)
        row = texels_w * plane_format.bytes_per_texel
        bytes_per_row = -(-row // row_alignment) * row_alignment
        size = bytes_per_row * plane_h
        planes.append(
            PlaneInfo(
                index=index,
                width=texels_w,
                height=plane_h,
                bytes_per_row=bytes_per_row,
                size_bytes=size,
                offset=offset,
                format=plane_format,
            )
        )
        offset += size
    return PlaneLayout(
        pixel_format=pixel_format, width=width, height=height, planes=tuple(planes), size_bytes=offset
    )


_P = PlaneFormat
_Y = _Family.YUV
_N = AlphaChannel.NONE


def _yuv(
    planes: tuple[PlaneFormat, ...],
    sub: tuple[int, int],
    depth: int,
    storage: int,
    shift: int,
    vk: int | None,
    ordinal: int,
    *,
    semi: bool = False,
    alpha: AlphaChannel = _N,
) -> _PixelFormatInfo:
    return _PixelFormatInfo(_Y, planes, sub[0], sub[1], depth, storage, shift, alpha, semi, 1, vk, ordinal)


_S8 = (_P.R8, _P.RG8)
_S16 = (_P.R16, _P.RG16)
_T8 = (_P.R8, _P.R8, _P.R8)
_T16 = (_P.R16, _P.R16, _P.R16)
_420, _422, _444 = (1, 1), (1, 0), (0, 0)

# The ordinals are part of the shader interface: append new formats, never renumber.
_PIXEL_FORMAT_INFO: dict[PixelFormat, _PixelFormatInfo] = {
    PixelFormat.NV12: _yuv(_S8, _420, 8, 8, 0, _VK_G8_B8R8_2PLANE_420_UNORM, 0, semi=True),
    PixelFormat.NV21: _yuv(_S8, _420, 8, 8, 0, None, 1, semi=True),
    PixelFormat.P010: _yuv(
        _S16, _420, 10, 16, 6, _VK_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16, 2, semi=True
    ),
    PixelFormat.P012: _yuv(
        _S16, _420, 12, 16, 4, _VK_G12X4_B12X4R12X4_2PLANE_420_UNORM_3PACK16, 3, semi=True
    ),
    PixelFormat.P016: _yuv(_S16, _420, 16, 16, 0, _VK_G16_B16R16_2PLANE_420_UNORM, 4, semi=True),
    PixelFormat.NV16: _yuv(_S8, _422, 8, 8, 0, _VK_G8_B8R8_2PLANE_422_UNORM, 5, semi=True),
    PixelFormat.P210: _yuv(
        _S16, _422, 10, 16, 6, _VK_G10X6_B10X6R10X6_2PLANE_422_UNORM_3PACK16, 6, semi=True
    ),
    PixelFormat.P216: _yuv(_S16, _422, 16, 16, 0, _VK_G16_B16R16_2PLANE_422_UNORM, 7, semi=True),
    PixelFormat.NV24: _yuv(_S8, _444, 8, 8, 0, _VK_G8_B8R8_2PLANE_444_UNORM, 8, semi=True),
    PixelFormat.P410: _yuv(
        _S16, _444, 10, 16, 6, _VK_G10X6_B10X6R10X6_2PLANE_444_UNORM_3PACK16, 9, semi=True
    ),
    PixelFormat.P416: _yuv(_S16, _444, 16, 16, 0, _VK_G16_B16R16_2PLANE_444_UNORM, 10, semi=True),
    PixelFormat.YUV420P: _yuv(_T8, _420, 8, 8, 0, _VK_G8_B8_R8_3PLANE_420_UNORM, 11),
    PixelFormat.YUV420P10: _yuv(_T16, _420, 10, 16, 0, None, 12),
    PixelFormat.YUV420P12: _yuv(_T16, _420, 12, 16, 0, None, 13),
    PixelFormat.YUV420P16: _yuv(_T16, _420, 16, 16, 0, _VK_G16_B16_R16_3PLANE_420_UNORM, 14),
    PixelFormat.YUV422P: _yuv(_T8, _422, 8, 8, 0, _VK_G8_B8_R8_3PLANE_422_UNORM, 15),
    PixelFormat.YUV422P10: _yuv(_T16, _422, 10, 16, 0, None, 16),
    PixelFormat.YUV422P12: _yuv(_T16, _422, 12, 16, 0, None, 17),
    PixelFormat.YUV422P16: _yuv(_T16, _422, 16, 16, 0, _VK_G16_B16_R16_3PLANE_422_UNORM, 18),
    PixelFormat.YUV444P: _yuv(_T8, _444, 8, 8, 0, _VK_G8_B8_R8_3PLANE_444_UNORM, 19),
    PixelFormat.YUV444P10: _yuv(_T16, _444, 10, 16, 0, None, 20),
    PixelFormat.YUV444P12: _yuv(_T16, _444, 12, 16, 0, None, 21),
    PixelFormat.YUV444P16: _yuv(_T16, _444, 16, 16, 0, _VK_G16_B16_R16_3PLANE_444_UNORM, 22),
    PixelFormat.YUVA420P: _yuv((*_T8, _P.R8), _420, 8, 8, 0, None, 23, alpha=AlphaChannel.STRAIGHT),
    PixelFormat.YUVJ420P: _yuv(_T8, _420, 8, 8, 0, _VK_G8_B8_R8_3PLANE_420_UNORM, 24),
    PixelFormat.GRAY: _PixelFormatInfo(_Family.GRAY, (_P.R8,), 0, 0, 8, 8, 0, _N, False, 1, None, 25),
    PixelFormat.GRAY10: _PixelFormatInfo(_Family.GRAY, (_P.R16,), 0, 0, 10, 16, 0, _N, False, 1, None, 26),
    PixelFormat.GRAY16: _PixelFormatInfo(_Family.GRAY, (_P.R16,), 0, 0, 16, 16, 0, _N, False, 1, None, 27),
    PixelFormat.RGBA: _PixelFormatInfo(
        _Family.RGB, (_P.RGBA8,), 0, 0, 8, 8, 0, AlphaChannel.STRAIGHT, False, 1, None, 28
    ),
    PixelFormat.BGRA: _PixelFormatInfo(
        _Family.RGB, (_P.BGRA8,), 0, 0, 8, 8, 0, AlphaChannel.STRAIGHT, False, 1, None, 29
    ),
    PixelFormat.RGB24: _PixelFormatInfo(_Family.RGB, (_P.RGB8,), 0, 0, 8, 8, 0, _N, False, 1, None, 30),
    PixelFormat.X2RGB10: _PixelFormatInfo(
        _Family.RGB, (_P.BGR10A2,), 0, 0, 10, 10, 0, AlphaChannel.PADDING, False, 1, None, 31
    ),
    PixelFormat.RGBA64: _PixelFormatInfo(
        _Family.RGB, (_P.RGBA16,), 0, 0, 16, 16, 0, AlphaChannel.STRAIGHT, False, 1, None, 32
    ),
    PixelFormat.RGBAF16: _PixelFormatInfo(
        _Family.RGB, (_P.RGBA16F,), 0, 0, 16, 16, 0, AlphaChannel.STRAIGHT, False, 1, None, 33
    ),
    PixelFormat.RGBAF32: _PixelFormatInfo(
        _Family.RGB, (_P.RGBA32F,), 0, 0, 32, 32, 0, AlphaChannel.STRAIGHT, False, 1, None, 34
    ),
    # ayuv64le: one rgba16 texel per pixel holding A, Y, Cb, Cr in that order.
    PixelFormat.AYUV64: _PixelFormatInfo(
        _Y, (_P.RGBA16,), 0, 0, 16, 16, 0, AlphaChannel.STRAIGHT, False, 1, None, 35
    ),
    # y210le: one rgba16 texel per two pixels holding Y0, Cb, Y1, Cr, 10 bits high in each 16.
    PixelFormat.Y210: _PixelFormatInfo(
        _Y, (_P.RGBA16,), 1, 0, 10, 16, 6, _N, False, 2, _VK_G10X6B10X6G10X6R10X6_422_UNORM_4PACK16, 36
    ),
}

_INTERLEAVED_CHROMA: dict[PixelFormat, PixelFormat] = {
    PixelFormat.YUV420P: PixelFormat.NV12,
    PixelFormat.YUV422P: PixelFormat.NV16,
    PixelFormat.YUV444P: PixelFormat.NV24,
}

_BY_NAME: dict[str, PixelFormat] = {f.value: f for f in PixelFormat}
_BY_NAME["gray8"] = PixelFormat.GRAY
_BY_ORDINAL: dict[int, PixelFormat] = {info.shader_ordinal: f for f, info in _PIXEL_FORMAT_INFO.items()}
assert set(_PIXEL_FORMAT_INFO) == set(PixelFormat), "every PixelFormat needs a descriptor"
assert len(_BY_ORDINAL) == len(PixelFormat), "shader ordinals must be unique"
assert set(_PLANE_FORMAT_INFO) == set(PlaneFormat), "every PlaneFormat needs a descriptor"


@dataclass(frozen=True)
class PlaneInfo:
    """Where one plane of a frame lies in memory, and its size in texels of its plane format."""

    index: int
    """Plane number, in FFmpeg's order (0 = luma or the packed plane)."""
    width: int
    """Width in texels of ``format`` (y210 packs two pixels a texel, so half the frame width, rounded up)."""
    height: int
    """Height in rows."""
    bytes_per_row: int
    """Distance between the starts of two rows, padding included."""
    size_bytes: int
    """Bytes the plane occupies: ``bytes_per_row * height``."""
    offset: int
    """Byte offset of the plane's first row from the start of the frame's buffer."""
    format: PlaneFormat
    """Texel format of the plane's texture."""

    def __post_init__(self) -> None:
        for name in ("index", "width", "height", "bytes_per_row", "size_bytes", "offset"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"PlaneInfo.{name} must be a non-negative int, not {value!r}")
        if not isinstance(self.format, PlaneFormat):
            raise InvalidInputError(f"PlaneInfo.format must be a PlaneFormat, not {self.format!r}")
        if self.width == 0 or self.height == 0:
            raise InvalidInputError(f"plane {self.index} has an empty size {self.width}x{self.height}")
        if self.bytes_per_row < self.width_bytes:
            raise InvalidInputError(
                f"plane {self.index}: bytes_per_row {self.bytes_per_row} < {self.width_bytes} bytes of texels"
            )
        if self.size_bytes != self.bytes_per_row * self.height:
            raise InvalidInputError(
                f"plane {self.index}: size_bytes {self.size_bytes} != bytes_per_row * height "
                f"({self.bytes_per_row * self.height})"
            )

    @property
    def width_bytes(self) -> int:
        """Bytes of texel data in one row, padding excluded."""
        return self.width * self.format.bytes_per_texel


@dataclass(frozen=True)
class PlaneLayout:
    """The planes of one frame of a pixel format and size, one after another in one buffer."""

    pixel_format: PixelFormat
    """The frame's pixel format."""
    width: int
    """Frame width in pixels."""
    height: int
    """Frame height in pixels."""
    planes: tuple[PlaneInfo, ...]
    """One entry per plane, in order, each starting where the previous one ends."""
    size_bytes: int
    """Total bytes of all planes."""

    def __post_init__(self) -> None:
        if not isinstance(self.pixel_format, PixelFormat):
            raise InvalidInputError(
                f"PlaneLayout.pixel_format must be a PixelFormat, not {self.pixel_format!r}"
            )
        for what in ("width", "height"):
            value = getattr(self, what)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InvalidInputError(f"PlaneLayout.{what} must be a positive int, not {value!r}")
        if len(self.planes) != self.pixel_format.num_planes:
            raise InvalidInputError(
                f"{self.pixel_format.ffmpeg_name} has {self.pixel_format.num_planes} planes, "
                f"layout has {len(self.planes)}"
            )
        offset = 0
        for i, plane in enumerate(self.planes):
            if plane.index != i or plane.offset != offset:
                raise InvalidInputError(
                    f"plane {i} is out of order (index {plane.index}, offset {plane.offset})"
                )
            if plane.format is not self.pixel_format.plane_formats[i]:
                raise InvalidInputError(f"plane {i} has format {plane.format}, expected another")
            expected = _plane_size(self.pixel_format, i, self.width, self.height)
            if (plane.width, plane.height) != expected:
                raise InvalidInputError(
                    f"plane {i} is {plane.width}x{plane.height} texels; a {self.width}x{self.height} "
                    f"{self.pixel_format.ffmpeg_name} frame has {expected[0]}x{expected[1]}"
                )
            offset += plane.size_bytes
        if self.size_bytes != offset:
            raise InvalidInputError(f"size_bytes {self.size_bytes} != sum of plane sizes {offset}")

    @property
    def num_planes(self) -> int:
        """Number of planes."""
        return len(self.planes)
