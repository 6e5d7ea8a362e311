"""Pixel formats against FFmpeg's own descriptors (through PyAV), plus layout properties."""

from __future__ import annotations

import dataclasses

import av
import pytest
from hypothesis import given
from hypothesis import strategies as st

from alpha2.gpu.errors import InvalidInputError, UnknownFormatError
from alpha2.gpu.formats import (
    AlphaChannel,
    PixelFormat,
    PlaneFormat,
    PlaneInfo,
    PlaneLayout,
    UploadConversion,
)

# Shader ordinals are an interface: this table is written out by hand and must never change
# (append new formats with new numbers).
PINNED_ORDINALS = {
    "nv12": 0,
    "nv21": 1,
    "p010le": 2,
    "p012le": 3,
    "p016le": 4,
    "nv16": 5,
    "p210le": 6,
    "p216le": 7,
    "nv24": 8,
    "p410le": 9,
    "p416le": 10,
    "yuv420p": 11,
    "yuv420p10le": 12,
    "yuv420p12le": 13,
    "yuv420p16le": 14,
    "yuv422p": 15,
    "yuv422p10le": 16,
    "yuv422p12le": 17,
    "yuv422p16le": 18,
    "yuv444p": 19,
    "yuv444p10le": 20,
    "yuv444p12le": 21,
    "yuv444p16le": 22,
    "yuva420p": 23,
    "yuvj420p": 24,
    "gray": 25,
    "gray10le": 26,
    "gray16le": 27,
    "rgba": 28,
    "bgra": 29,
    "rgb24": 30,
    "x2rgb10le": 31,
    "rgba64le": 32,
    "rgbaf16le": 33,
    "rgbaf32le": 34,
    "ayuv64le": 35,
    "y210le": 36,
}

SIZES = [(64, 48), (5, 3), (1, 1), (7, 8), (1920, 1080), (33, 17)]
ALL = list(PixelFormat)


def test_shader_ordinals_are_pinned() -> None:
    assert {f.ffmpeg_name: f.shader_ordinal for f in PixelFormat} == PINNED_ORDINALS
    for f in PixelFormat:
        assert PixelFormat.from_shader_ordinal(f.shader_ordinal) is f
    with pytest.raises(UnknownFormatError):
        PixelFormat.from_shader_ordinal(len(PINNED_ORDINALS))


@pytest.mark.parametrize("fmt", ALL, ids=lambda f: f.value)
def test_names_round_trip(fmt: PixelFormat) -> None:
    assert PixelFormat.from_ffmpeg_name(fmt.ffmpeg_name) is fmt
    assert PixelFormat.from_ffmpeg_name(fmt.ffmpeg_name.upper()) is fmt
    if fmt.ffmpeg_name.endswith("le"):
        assert PixelFormat.from_ffmpeg_name(fmt.ffmpeg_name[:-2]) is fmt
    assert av.VideoFormat(fmt.ffmpeg_name).name == fmt.ffmpeg_name


def test_unknown_name_lists_supported() -> None:
    with pytest.raises(UnknownFormatError) as info:
        PixelFormat.from_ffmpeg_name("yuv410p")
    assert "nv12" in str(info.value) and "p010le" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnknownFormatError, match="big-endian"):
        PixelFormat.from_ffmpeg_name("p010be")
    assert PixelFormat.from_ffmpeg_name("gray8") is PixelFormat.GRAY
    assert PixelFormat.from_ffmpeg_name("x2rgb10") is PixelFormat.X2RGB10


def _texels_per_pixel_x(fmt: PixelFormat) -> int:
    return 2 if fmt is PixelFormat.Y210 else 1


@pytest.mark.parametrize("fmt", ALL, ids=lambda f: f.value)
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_against_ffmpeg_descriptor(fmt: PixelFormat, width: int, height: int) -> None:
    desc = av.VideoFormat(fmt.ffmpeg_name, width, height)
    comps = desc.components
    # plane count, family, alpha
    assert fmt.num_planes == max(c.plane for c in comps) + 1
    assert fmt.is_rgb == desc.is_rgb
    assert fmt.is_gray == (len(comps) == 1)
    assert fmt.has_alpha == any(c.is_alpha for c in comps)
    # every component's significant bits
    for c in comps:
        assert c.bits == fmt.bit_depth
    # subsampling: chroma component sizes at this (possibly odd) size
    expected_cw = -(-width >> fmt.log2_chroma_w)
    expected_ch = -(-height >> fmt.log2_chroma_h)
    for c in comps:
        if fmt.is_yuv and not c.is_luma and not c.is_alpha:
            assert (c.width, c.height) == (expected_cw, expected_ch)
        else:
            assert (c.width, c.height) == (width, height)
    assert desc.chroma_width(width) == expected_cw
    assert desc.chroma_height(height) == expected_ch

    # plane sizes against an FFmpeg-allocated frame
    layout = fmt.plane_layout(width, height)
    frame = av.VideoFrame(width, height, fmt.ffmpeg_name)
    assert len(frame.planes) == layout.num_planes
    for plane, info in zip(frame.planes, layout.planes):
        texels = -(-plane.width // _texels_per_pixel_x(fmt)) if info.index == 0 else plane.width
        assert (info.width, info.height) == (texels, plane.height)
        assert plane.line_size >= info.bytes_per_row == info.width_bytes
        assert info.format.bits_per_channel in (fmt.storage_bits, 10)


@pytest.mark.parametrize("fmt", ALL, ids=lambda f: f.value)
def test_bytes_per_pixel_match_ffmpeg(fmt: PixelFormat) -> None:
    # At even sizes FFmpeg's padded bits per pixel is exactly the plane bytes over the pixels.
    width, height = 64, 32
    desc = av.VideoFormat(fmt.ffmpeg_name)
    layout = fmt.plane_layout(width, height)
    assert layout.size_bytes * 8 == desc.padded_bits_per_pixel * width * height


@pytest.mark.parametrize(
    ("fmt", "planes", "depth", "storage", "shift", "sub"),
    [
        (PixelFormat.NV12, (PlaneFormat.R8, PlaneFormat.RG8), 8, 8, 0, (1, 1)),
        (PixelFormat.P010, (PlaneFormat.R16, PlaneFormat.RG16), 10, 16, 6, (1, 1)),
        (PixelFormat.P012, (PlaneFormat.R16, PlaneFormat.RG16), 12, 16, 4, (1, 1)),
        (PixelFormat.P016, (PlaneFormat.R16, PlaneFormat.RG16), 16, 16, 0, (1, 1)),
        (PixelFormat.P210, (PlaneFormat.R16, PlaneFormat.RG16), 10, 16, 6, (1, 0)),
        (PixelFormat.P410, (PlaneFormat.R16, PlaneFormat.RG16), 10, 16, 6, (0, 0)),
        (PixelFormat.YUV420P10, (PlaneFormat.R16,) * 3, 10, 16, 0, (1, 1)),
        (PixelFormat.YUV422P12, (PlaneFormat.R16,) * 3, 12, 16, 0, (1, 0)),
        (PixelFormat.YUVA420P, (PlaneFormat.R8,) * 4, 8, 8, 0, (1, 1)),
        (PixelFormat.GRAY10, (PlaneFormat.R16,), 10, 16, 0, (0, 0)),
        (PixelFormat.RGB24, (PlaneFormat.RGB8,), 8, 8, 0, (0, 0)),
        (PixelFormat.X2RGB10, (PlaneFormat.BGR10A2,), 10, 10, 0, (0, 0)),
        (PixelFormat.RGBAF16, (PlaneFormat.RGBA16F,), 16, 16, 0, (0, 0)),
        (PixelFormat.AYUV64, (PlaneFormat.RGBA16,), 16, 16, 0, (0, 0)),
        (PixelFormat.Y210, (PlaneFormat.RGBA16,), 10, 16, 6, (1, 0)),
    ],
    ids=lambda v: v.value if isinstance(v, PixelFormat) else None,
)
def test_depths_and_planes(
    fmt: PixelFormat,
    planes: tuple[PlaneFormat, ...],
    depth: int,
    storage: int,
    shift: int,
    sub: tuple[int, int],
) -> None:
    assert fmt.plane_formats == planes
    assert (fmt.bit_depth, fmt.storage_bits, fmt.msb_shift) == (depth, storage, shift)
    assert (fmt.log2_chroma_w, fmt.log2_chroma_h) == sub
    assert fmt.msb_shift + fmt.bit_depth <= fmt.storage_bits


def test_flags() -> None:
    semi = {f for f in PixelFormat if f.is_semi_planar}
    assert semi == {
        PixelFormat.NV12,
        PixelFormat.NV21,
        PixelFormat.P010,
        PixelFormat.P012,
        PixelFormat.P016,
        PixelFormat.NV16,
        PixelFormat.P210,
        PixelFormat.P216,
        PixelFormat.NV24,
        PixelFormat.P410,
        PixelFormat.P416,
    }
    assert PixelFormat.X2RGB10.alpha is AlphaChannel.PADDING
    assert not PixelFormat.X2RGB10.has_alpha
    assert PixelFormat.RGBA.alpha is AlphaChannel.STRAIGHT
    assert PixelFormat.YUVA420P.alpha is AlphaChannel.STRAIGHT
    assert PixelFormat.NV12.alpha is AlphaChannel.NONE
    assert PixelFormat.RGBAF32.is_float and not PixelFormat.RGBA64.is_float
    assert PixelFormat.Y210.is_yuv and PixelFormat.Y210.is_packed
    assert PixelFormat.GRAY.is_gray and not PixelFormat.GRAY.is_yuv and not PixelFormat.GRAY.is_packed
    for f in PixelFormat:
        assert sum((f.is_yuv, f.is_rgb, f.is_gray)) == 1


def test_odd_chroma_rounds_up() -> None:
    layout = PixelFormat.NV12.plane_layout(5, 3)
    y, uv = layout.planes
    assert (y.width, y.height, y.bytes_per_row, y.size_bytes, y.offset) == (5, 3, 5, 15, 0)
    assert (uv.width, uv.height, uv.bytes_per_row, uv.size_bytes, uv.offset) == (3, 2, 6, 12, 15)
    assert layout.size_bytes == 27
    y210 = PixelFormat.Y210.plane_layout(5, 3).planes[0]
    assert (y210.width, y210.bytes_per_row) == (3, 24)


def test_row_alignment() -> None:
    layout = PixelFormat.P010.plane_layout(1920, 1080, row_alignment=256)
    y, uv = layout.planes
    assert y.bytes_per_row == 3840 and uv.bytes_per_row == 3840
    assert uv.offset == 3840 * 1080
    odd = PixelFormat.NV12.plane_layout(1001, 3, row_alignment=256)
    assert odd.planes[0].bytes_per_row == 1024 and odd.planes[0].width_bytes == 1001
    assert odd.planes[1].offset % 256 == 0


@pytest.mark.parametrize(
    "args", [(0, 1), (1, 0), (-1, 4), (2.0, 2), (True, 2), (4, 4, 3), (4, 4, 0), (4, 4, 2.0)]
)
def test_plane_layout_rejects(args: tuple[object, ...]) -> None:
    with pytest.raises(InvalidInputError):
        PixelFormat.NV12.plane_layout(*args)  # type: ignore[arg-type]


def test_plane_info_validation() -> None:
    with pytest.raises(InvalidInputError):
        PlaneInfo(0, 4, 2, 3, 6, 0, PlaneFormat.R8)  # row shorter than its texels
    with pytest.raises(InvalidInputError):
        PlaneInfo(0, 4, 2, 4, 9, 0, PlaneFormat.R8)  # size != rows * height
    good = PlaneInfo(0, 4, 2, 4, 8, 0, PlaneFormat.R8)
    with pytest.raises(InvalidInputError):
        PlaneLayout(PixelFormat.GRAY, 4, 2, (good,), 9)
    with pytest.raises(InvalidInputError):
        PlaneLayout(PixelFormat.NV12, 4, 2, (good,), 8)
    assert PlaneLayout(PixelFormat.GRAY, 4, 2, (good,), 8).size_bytes == 8


@given(
    fmt=st.sampled_from(ALL),
    width=st.integers(1, 5000),
    height=st.integers(1, 3000),
    align_log2=st.integers(0, 9),
)
def test_layout_properties(fmt: PixelFormat, width: int, height: int, align_log2: int) -> None:
    alignment = 1 << align_log2
    layout = fmt.plane_layout(width, height, row_alignment=alignment)
    assert layout.size_bytes == sum(p.size_bytes for p in layout.planes)
    offset = 0
    for p in layout.planes:
        assert p.offset == offset and p.offset % alignment == 0
        assert p.bytes_per_row % alignment == 0
        assert p.width_bytes <= p.bytes_per_row < p.width_bytes + alignment
        assert p.format is fmt.plane_formats[p.index]
        offset += p.size_bytes
    # unaligned, the bytes are exactly the pixels' worth (rounded up for odd chroma)
    tight = fmt.plane_layout(width, height)
    assert tight.size_bytes <= layout.size_bytes
    luma = tight.planes[0]
    assert luma.height == height


WGPU_NAMES = {
    PlaneFormat.R8: "r8unorm",
    PlaneFormat.RG8: "rg8unorm",
    PlaneFormat.RGBA8: "rgba8unorm",
    PlaneFormat.BGRA8: "bgra8unorm",
    PlaneFormat.R16: "r16unorm",
    PlaneFormat.RG16: "rg16unorm",
    PlaneFormat.RGBA16: "rgba16unorm",
    PlaneFormat.RGBA16F: "rgba16float",
    PlaneFormat.RGBA32F: "rgba32float",
    PlaneFormat.RGB10A2: "rgb10a2unorm",
    PlaneFormat.RGB8: None,
    PlaneFormat.BGR10A2: None,
}


def test_plane_formats_wgpu() -> None:
    assert {p: p.wgpu_format for p in PlaneFormat} == WGPU_NAMES
    for p in PlaneFormat:
        if p.bits_per_channel == 10:  # 10:10:10:2
            assert p.bytes_per_texel * 8 == 3 * 10 + 2
        else:
            assert p.bytes_per_texel * 8 == p.channels * p.bits_per_channel
        if p.wgpu_format is not None:
            assert p.wgpu_upload_format == p.wgpu_format
            assert p.upload_conversion is UploadConversion.NONE
    assert PlaneFormat.RGB8.bytes_per_texel == 3
    assert PlaneFormat.RGB8.wgpu_upload_format == "rgba8unorm"
    assert PlaneFormat.RGB8.upload_conversion is UploadConversion.EXPAND_RGB_TO_RGBA
    assert PlaneFormat.BGR10A2.upload_conversion is UploadConversion.SWAP_RED_BLUE
    assert PixelFormat.RGB24.needs_upload_conversion and not PixelFormat.NV12.needs_upload_conversion
    assert PixelFormat.NV12.wgpu_plane_formats == ("r8unorm", "rg8unorm")
    assert PixelFormat.P010.wgpu_plane_formats == ("r16unorm", "rg16unorm")
    assert PixelFormat.YUV444P.wgpu_plane_formats == ("r8unorm",) * 3


def test_wgpu_formats_exist_in_wgpu() -> None:
    wgpu = pytest.importorskip("wgpu")
    known = {getattr(wgpu.TextureFormat, n) for n in dir(wgpu.TextureFormat) if not n.startswith("_")}
    for fmt in PixelFormat:
        for name in fmt.wgpu_plane_formats:
            assert name in known


VK_PLANE_NAMES = {
    PlaneFormat.R8: "VK_FORMAT_R8_UNORM",
    PlaneFormat.RG8: "VK_FORMAT_R8G8_UNORM",
    PlaneFormat.RGB8: "VK_FORMAT_R8G8B8_UNORM",
    PlaneFormat.RGBA8: "VK_FORMAT_R8G8B8A8_UNORM",
    PlaneFormat.BGRA8: "VK_FORMAT_B8G8R8A8_UNORM",
    PlaneFormat.R16: "VK_FORMAT_R16_UNORM",
    PlaneFormat.RG16: "VK_FORMAT_R16G16_UNORM",
    PlaneFormat.RGBA16: "VK_FORMAT_R16G16B16A16_UNORM",
    PlaneFormat.RGBA16F: "VK_FORMAT_R16G16B16A16_SFLOAT",
    PlaneFormat.RGBA32F: "VK_FORMAT_R32G32B32A32_SFLOAT",
    PlaneFormat.RGB10A2: "VK_FORMAT_A2B10G10R10_UNORM_PACK32",
    PlaneFormat.BGR10A2: "VK_FORMAT_A2R10G10B10_UNORM_PACK32",
}

VK_MULTIPLANAR_NAMES = {
    PixelFormat.NV12: "VK_FORMAT_G8_B8R8_2PLANE_420_UNORM",
    PixelFormat.P010: "VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16",
    PixelFormat.P012: "VK_FORMAT_G12X4_B12X4R12X4_2PLANE_420_UNORM_3PACK16",
    PixelFormat.P016: "VK_FORMAT_G16_B16R16_2PLANE_420_UNORM",
    PixelFormat.NV16: "VK_FORMAT_G8_B8R8_2PLANE_422_UNORM",
    PixelFormat.P210: "VK_FORMAT_G10X6_B10X6R10X6_2PLANE_422_UNORM_3PACK16",
    PixelFormat.P216: "VK_FORMAT_G16_B16R16_2PLANE_422_UNORM",
    PixelFormat.NV24: "VK_FORMAT_G8_B8R8_2PLANE_444_UNORM",
    PixelFormat.P410: "VK_FORMAT_G10X6_B10X6R10X6_2PLANE_444_UNORM_3PACK16",
    PixelFormat.P416: "VK_FORMAT_G16_B16R16_2PLANE_444_UNORM",
    PixelFormat.YUV420P: "VK_FORMAT_G8_B8_R8_3PLANE_420_UNORM",
    PixelFormat.YUVJ420P: "VK_FORMAT_G8_B8_R8_3PLANE_420_UNORM",
    PixelFormat.YUV420P16: "VK_FORMAT_G16_B16_R16_3PLANE_420_UNORM",
    PixelFormat.YUV422P: "VK_FORMAT_G8_B8_R8_3PLANE_422_UNORM",
    PixelFormat.YUV422P16: "VK_FORMAT_G16_B16_R16_3PLANE_422_UNORM",
    PixelFormat.YUV444P: "VK_FORMAT_G8_B8_R8_3PLANE_444_UNORM",
    PixelFormat.YUV444P16: "VK_FORMAT_G16_B16_R16_3PLANE_444_UNORM",
    PixelFormat.Y210: "VK_FORMAT_G10X6B10X6G10X6R10X6_422_UNORM_4PACK16",
}

VK_VALUES = {
    "VK_FORMAT_R8_UNORM": 9,
    "VK_FORMAT_R8G8_UNORM": 16,
    "VK_FORMAT_R8G8B8_UNORM": 23,
    "VK_FORMAT_R8G8B8A8_UNORM": 37,
    "VK_FORMAT_B8G8R8A8_UNORM": 44,
    "VK_FORMAT_A2R10G10B10_UNORM_PACK32": 58,
    "VK_FORMAT_A2B10G10R10_UNORM_PACK32": 64,
    "VK_FORMAT_R16_UNORM": 70,
    "VK_FORMAT_R16G16_UNORM": 77,
    "VK_FORMAT_R16G16B16A16_UNORM": 91,
    "VK_FORMAT_R16G16B16A16_SFLOAT": 97,
    "VK_FORMAT_R32G32B32A32_SFLOAT": 109,
    "VK_FORMAT_G8_B8_R8_3PLANE_420_UNORM": 1000156002,
    "VK_FORMAT_G8_B8R8_2PLANE_420_UNORM": 1000156003,
    "VK_FORMAT_G8_B8_R8_3PLANE_422_UNORM": 1000156004,
    "VK_FORMAT_G8_B8R8_2PLANE_422_UNORM": 1000156005,
    "VK_FORMAT_G8_B8_R8_3PLANE_444_UNORM": 1000156006,
    "VK_FORMAT_G10X6B10X6G10X6R10X6_422_UNORM_4PACK16": 1000156010,
    "VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16": 1000156013,
    "VK_FORMAT_G10X6_B10X6R10X6_2PLANE_422_UNORM_3PACK16": 1000156015,
    "VK_FORMAT_G12X4_B12X4R12X4_2PLANE_420_UNORM_3PACK16": 1000156023,
    "VK_FORMAT_G16_B16_R16_3PLANE_420_UNORM": 1000156029,
    "VK_FORMAT_G16_B16R16_2PLANE_420_UNORM": 1000156030,
    "VK_FORMAT_G16_B16_R16_3PLANE_422_UNORM": 1000156031,
    "VK_FORMAT_G16_B16R16_2PLANE_422_UNORM": 1000156032,
    "VK_FORMAT_G16_B16_R16_3PLANE_444_UNORM": 1000156033,
    "VK_FORMAT_G8_B8R8_2PLANE_444_UNORM": 1000330000,
    "VK_FORMAT_G10X6_B10X6R10X6_2PLANE_444_UNORM_3PACK16": 1000330001,
    "VK_FORMAT_G16_B16R16_2PLANE_444_UNORM": 1000330003,
}


def test_vulkan_numbers() -> None:
    for plane, name in VK_PLANE_NAMES.items():
        assert plane.vk_format == VK_VALUES[name], plane
    for fmt in PixelFormat:
        expected = VK_MULTIPLANAR_NAMES.get(fmt)
        assert fmt.vk_multiplanar_format == (VK_VALUES[expected] if expected else None), fmt
        assert fmt.vk_plane_formats == tuple(p.vk_format for p in fmt.plane_formats)
    # LSB-aligned 10/12-bit planar has no Vulkan multi-planar equivalent (Vulkan's X6 keeps bits high)
    assert PixelFormat.YUV420P10.vk_multiplanar_format is None
    assert PixelFormat.NV21.vk_multiplanar_format is None


def test_vulkan_numbers_match_the_vulkan_package() -> None:
    try:
        import vulkan as vk
    except Exception as exc:  # no Vulkan loader on this machine
        pytest.skip(f"vulkan package unusable: {exc}")
    for name, value in VK_VALUES.items():
        assert getattr(vk, name) == value, name


@pytest.mark.parametrize("ordinal", [True, 1.0, "1", None])
def test_shader_ordinal_is_an_int(ordinal: object) -> None:
    with pytest.raises(InvalidInputError, match="no pixel format has shader ordinal"):
        PixelFormat.from_shader_ordinal(ordinal)  # type: ignore[arg-type]


def test_plane_layout_planes_fit_its_size() -> None:
    planes = PixelFormat.NV12.plane_layout(5, 3).planes
    with pytest.raises(InvalidInputError, match="plane 0 is 5x3 texels; a 500x3 nv12 frame has 500x3"):
        PlaneLayout(PixelFormat.NV12, 500, 3, planes, 27)
    luma = PixelFormat.NV12.plane_layout(6, 4).planes[0]
    short_chroma = dataclasses.replace(PixelFormat.NV12.plane_layout(6, 2).planes[1], offset=luma.size_bytes)
    with pytest.raises(InvalidInputError, match="plane 1 is 3x1 texels; a 6x4 nv12 frame has 3x2"):
        PlaneLayout(PixelFormat.NV12, 6, 4, (luma, short_chroma), luma.size_bytes + short_chroma.size_bytes)
    with pytest.raises(InvalidInputError, match="width must be a positive int"):
        PlaneLayout(PixelFormat.NV12, True, 3, planes, 27)  # type: ignore[arg-type]
    assert PlaneLayout(PixelFormat.NV12, 5, 3, planes, 27) == PixelFormat.NV12.plane_layout(5, 3)
