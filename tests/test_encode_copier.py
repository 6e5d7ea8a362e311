"""EncodeCopier (RGBA texture or planes -> NV12 / P010 on the GPU, read back in a ring), routes, extents."""

from __future__ import annotations

import gc
import re
from typing import Any

import numpy as np
import pytest

from alpha2.gpu.colour import ChromaLocation, ColourMatrix, ColourRange, rgb_to_yuv
from alpha2.gpu.errors import (
    ClosedError,
    GpuTimeoutError,
    InvalidInputError,
    OutOfMemoryError,
    UnsupportedError,
)
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.identity import ExecutionPath
from alpha2.native_gpu.encode.copier import (
    EncodeCopier,
    EncodedPlanes,
    EncodeTarget,
    ExtentSource,
    VideoEncodeExtent,
    VulkanEncodeCopier,
)

W, H = 64, 32


# ---------------------------------------------------------------------------------------------------
# helpers


@pytest.fixture(scope="module")
def device() -> Any:
    wgpu = pytest.importorskip("wgpu")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        pytest.skip("wgpu has no adapter")
    return adapter.request_device_sync()


def _image(width: int = W, height: int = H, seed: int = 0) -> np.ndarray:
    """A smooth RGBA test image with saturated corners and some texture (uint8, opaque)."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    u, v = x / (width - 1), y / (height - 1)
    r = u
    g = 0.5 + 0.45 * np.sin(2 * np.pi * (v + 0.1 * seed))
    b = 1.0 - 0.7 * u * v
    rgb = np.stack([r, g, b], axis=-1)
    img = np.empty((height, width, 4), dtype=np.uint8)
    img[..., :3] = np.round(np.clip(rgb, 0, 1) * 255)
    img[..., 3] = 255
    return img


def _texture(device: Any, img: np.ndarray, fmt: str = "rgba8unorm") -> Any:
    import wgpu

    height, width = img.shape[:2]
    texture = device.create_texture(
        size=(width, height, 1),
        format=fmt,
        usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST,
    )
    if fmt == "bgra8unorm":
        data = np.ascontiguousarray(img[..., [2, 1, 0, 3]])
    elif fmt == "rgba16float":
        data = (img.astype(np.float32) / 255).astype(np.float16)
    else:
        data = np.ascontiguousarray(img)
    device.queue.write_texture(
        {"texture": texture},
        data,
        {"offset": 0, "bytes_per_row": data.strides[0]},
        (width, height, 1),
    )
    return texture


def _planes(frame: EncodedPlanes) -> tuple[np.ndarray, np.ndarray]:
    """(Y, CbCr) as integer code arrays: Y (h, w), CbCr (h/2, w/2, 2); P010 shifted down to 10 bits."""
    dtype = np.uint16 if frame.pixel_format is PixelFormat.P010 else np.uint8
    shift = 6 if frame.pixel_format is PixelFormat.P010 else 0
    out = []
    for plane in frame.planes.planes:
        rows = np.frombuffer(plane.data, dtype=np.uint8).reshape(plane.height, plane.bytes_per_row)
        arr = np.asarray(rows[:, : plane.width_bytes].copy().view(dtype)) >> shift
        out.append(arr.astype(np.int32))
        del rows
    y, uv = out
    return y, uv.reshape(frame.height // 2, frame.width // 2, 2)


def _ffmpeg_reference(
    img: np.ndarray, pixel_format: PixelFormat, matrix: ColourMatrix, colour_range: ColourRange
) -> tuple[np.ndarray, np.ndarray]:
    import av

    colorspace = {ColourMatrix.BT709: "ITU709", ColourMatrix.BT470BG: "ITU601"}[matrix]
    rng = "JPEG" if colour_range is ColourRange.FULL else "MPEG"
    frame = av.VideoFrame.from_ndarray(img, format="rgba")
    out = frame.reformat(
        format="nv12" if pixel_format is PixelFormat.NV12 else "p010le",
        dst_colorspace=colorspace,
        dst_color_range=rng,
        interpolation="BILINEAR",
    )
    height, width = img.shape[:2]
    dtype, shift = (np.uint8, 0) if pixel_format is PixelFormat.NV12 else (np.uint16, 6)
    planes = []
    for plane, rows in zip(out.planes, (height, height // 2)):
        raw = np.frombuffer(bytes(plane), dtype=np.uint8).reshape(rows, plane.line_size)
        planes.append(raw[:, : plane.width * np.dtype(dtype).itemsize * (1 if rows == height else 2)])
    y = planes[0].view(dtype).astype(np.int32) >> shift
    uv = (planes[1].view(dtype).astype(np.int32) >> shift).reshape(height // 2, width // 2, 2)
    return y, uv


def _numpy_reference(
    img: np.ndarray,
    pixel_format: PixelFormat,
    matrix: ColourMatrix,
    colour_range: ColourRange,
    siting: ChromaLocation,
) -> tuple[np.ndarray, np.ndarray]:
    """The copier's definition in float64: codes = M @ rgb + offset, chroma filtered as documented."""
    transform = rgb_to_yuv(matrix, colour_range, pixel_format.bit_depth)
    rgb = img[..., :3].astype(np.float64) / 255
    max_code = (1 << pixel_format.bit_depth) - 1
    codes = transform.apply(rgb)
    y = np.clip(np.floor(codes[..., 0] + 0.5), 0, max_code).astype(np.int32)
    rows = 0.5 * (rgb[0::2] + rgb[1::2])
    even, odd = rows[:, 0::2], rows[:, 1::2]
    if siting is ChromaLocation.LEFT:
        left = np.concatenate([rows[:, :1], odd[:, :-1]], axis=1)
        chroma_rgb = 0.25 * left + 0.5 * even + 0.25 * odd
    else:
        chroma_rgb = 0.5 * (even + odd)
    c = transform.apply(chroma_rgb)[..., 1:]
    return y, np.clip(np.floor(c + 0.5), 0, max_code).astype(np.int32)


def _convert(device: Any, img: np.ndarray, fmt: str = "rgba8unorm", **kwargs: Any) -> tuple[Any, Any]:
    height, width = img.shape[:2]
    with VulkanEncodeCopier(device, width, height, **kwargs) as copier:
        frames = copier.submit(_texture(device, img, fmt), pts=7) + copier.flush()
        assert len(frames) == 1
        with frames[0] as frame:
            assert frame.pts == 7
            assert frame.path is ExecutionPath.CPU_DOWNLOAD
            assert frame.bytes_read == copier.frame_size_bytes
            return _planes(frame)


# ---------------------------------------------------------------------------------------------------
# accuracy


CASES = [
    (PixelFormat.NV12, ColourMatrix.BT709, ColourRange.LIMITED),
    (PixelFormat.NV12, ColourMatrix.BT470BG, ColourRange.FULL),
    (PixelFormat.P010, ColourMatrix.BT709, ColourRange.LIMITED),
    (PixelFormat.P010, ColourMatrix.BT470BG, ColourRange.FULL),
]


@pytest.mark.vulkan
@pytest.mark.parametrize(("pixel_format", "matrix", "colour_range"), CASES, ids=lambda v: v.name)
def test_matches_ffmpeg(
    device: Any, pixel_format: PixelFormat, matrix: ColourMatrix, colour_range: ColourRange
) -> None:
    img = _image()
    # CENTER siting is what swscale computes by default (its chroma is centred); LEFT is checked below.
    y, uv = _convert(
        device,
        img,
        pixel_format=pixel_format,
        matrix=matrix,
        colour_range=colour_range,
        chroma_location=ChromaLocation.CENTER,
    )
    ref_y, ref_uv = _ffmpeg_reference(img, pixel_format, matrix, colour_range)
    y_tol = 1 if pixel_format is PixelFormat.NV12 else 4
    scale = 1 if pixel_format is PixelFormat.NV12 else 4
    assert np.abs(y - ref_y).max() <= y_tol
    # swscale's bilinear 2:1 vertical filter spans 4 rows; ours averages the 2 rows of the block.
    assert np.abs(uv - ref_uv).mean() <= 2 * scale
    assert np.abs(uv - ref_uv).max() <= 6 * scale


@pytest.mark.vulkan
@pytest.mark.parametrize(("pixel_format", "matrix", "colour_range"), CASES, ids=lambda v: v.name)
@pytest.mark.parametrize("siting", [ChromaLocation.LEFT, ChromaLocation.CENTER], ids=lambda v: v.name)
def test_matches_definition(
    device: Any,
    pixel_format: PixelFormat,
    matrix: ColourMatrix,
    colour_range: ColourRange,
    siting: ChromaLocation,
) -> None:
    img = _image(seed=1)
    y, uv = _convert(
        device,
        img,
        pixel_format=pixel_format,
        matrix=matrix,
        colour_range=colour_range,
        chroma_location=siting,
    )
    ref_y, ref_uv = _numpy_reference(img, pixel_format, matrix, colour_range, siting)
    # float32 on the GPU vs float64 here: only values at a rounding boundary may differ, by one code.
    assert np.abs(y - ref_y).max() <= 1
    assert np.abs(uv - ref_uv).max() <= 1
    assert (y != ref_y).mean() < 0.01


@pytest.mark.vulkan
@pytest.mark.parametrize("fmt", ["bgra8unorm", "rgba16float"])
def test_other_source_formats(device: Any, fmt: str) -> None:
    img = _image(seed=2)
    for pixel_format in (PixelFormat.NV12, PixelFormat.P010):
        expected = _convert(device, img, "rgba8unorm", pixel_format=pixel_format)
        got = _convert(device, img, fmt, pixel_format=pixel_format)
        # float16 holds 8-bit values to ~1/2048: at most one code at 10 bits.
        assert np.abs(got[0] - expected[0]).max() <= 1
        assert np.abs(got[1] - expected[1]).max() <= 1


@pytest.mark.vulkan
def test_width_not_multiple_of_four(device: Any) -> None:
    img = _image(width=18, height=6)
    y, uv = _convert(device, img, pixel_format=PixelFormat.NV12)
    ref_y, ref_uv = _numpy_reference(
        img, PixelFormat.NV12, ColourMatrix.BT709, ColourRange.LIMITED, ChromaLocation.LEFT
    )
    assert y.shape == (6, 18) and uv.shape == (3, 9, 2)
    assert np.abs(y - ref_y).max() <= 1
    assert np.abs(uv - ref_uv).max() <= 1


# ---------------------------------------------------------------------------------------------------
# the ring


def _flat(device: Any, value: int) -> Any:
    img = np.full((H, W, 4), 255, dtype=np.uint8)
    img[..., :3] = value
    return _texture(device, img)


@pytest.mark.vulkan
def test_ring_order_pts_and_bound(device: Any) -> None:
    values = [16 * i for i in range(12)]
    textures = [_flat(device, v) for v in values]
    transform = rgb_to_yuv(ColourMatrix.BT709, ColourRange.LIMITED, 8)
    copier = VulkanEncodeCopier(device, W, H, ring_size=3, matrix=ColourMatrix.BT709)
    got: list[tuple[int | None, int, int]] = []

    def consume(frames: list[EncodedPlanes]) -> None:
        for frame in frames:
            with frame:
                y, _ = _planes(frame)
                got.append((frame.pts, frame.sequence, int(y[0, 0])))

    for i, texture in enumerate(textures):
        consume(copier.submit(texture, pts=1000 + i))
        assert copier.in_flight + copier.held <= copier.ring_size
    consume(copier.flush())
    assert [g[0] for g in got] == [1000 + i for i in range(len(values))]
    assert [g[1] for g in got] == list(range(len(values)))
    expected_y = [int(np.floor(transform.apply(np.array([v / 255] * 3))[0] + 0.5)) for v in values]
    assert [g[2] for g in got] == expected_y
    assert copier.peak_slots_in_use <= 3
    assert copier.in_flight == 0 and copier.held == 0
    assert copier.bytes_read_total == len(values) * copier.frame_size_bytes
    copier.close()
    copier.close()  # idempotent
    with pytest.raises(ClosedError):
        copier.submit(textures[0])


@pytest.mark.vulkan
def test_unreleased_frames_exhaust_the_ring(device: Any) -> None:
    texture = _flat(device, 100)
    copier = VulkanEncodeCopier(device, W, H, ring_size=2)
    kept: list[EncodedPlanes] = []
    with pytest.raises(OutOfMemoryError, match="release"):
        for i in range(4):
            kept += copier.submit(texture, pts=i)
    assert copier.held + copier.in_flight == 2
    for frame in kept:
        frame.release()
        frame.release()  # idempotent
    kept = copier.submit(texture, pts=10) + copier.flush()
    assert [f.pts for f in kept][-1] == 10
    for frame in kept:
        frame.release()
    assert copier.held == 0
    copier.close()


@pytest.mark.vulkan
def test_release_invalidates_the_plane_views(device: Any) -> None:
    copier = VulkanEncodeCopier(device, W, H, ring_size=2)
    (frame,) = copier.submit(_flat(device, 50)) + copier.flush()
    data = frame.planes.planes[0].data
    assert data[0] == frame.planes.planes[0].data[W - 1]
    frame.release()
    assert frame.released and copier.held == 0
    with pytest.raises(ValueError, match="released"):
        data[0]  # the slot is unmapped: the view refuses instead of reading freed memory
    copier.close()


@pytest.mark.vulkan
def test_copy_planes_outlive_the_copier(device: Any) -> None:
    copier = VulkanEncodeCopier(device, W, H, ring_size=2, copy_planes=True)
    frames = []
    for i in range(5):  # no release needed: copies free their slot at once
        frames += copier.submit(_flat(device, 200), pts=i)
    frames += copier.flush()
    copier.close()
    assert [f.pts for f in frames] == list(range(5))
    y, _ = _planes(frames[-1])
    assert (y == y[0, 0]).all()


@pytest.mark.vulkan
def test_no_leak_of_slots_across_copiers(device: Any) -> None:
    texture = _flat(device, 80)
    for _ in range(5):
        copier = VulkanEncodeCopier(device, W, H, ring_size=2)
        for frame in copier.submit(texture) + copier.flush():
            frame.release()
        assert copier.held == 0 and copier.in_flight == 0
        copier.close()
    # A copier dropped with a frame in flight is cleaned up by its finalizer.
    copier = VulkanEncodeCopier(device, W, H, ring_size=2)
    copier.submit(texture)
    del copier
    gc.collect()


@pytest.mark.vulkan
def test_texture_checks(device: Any) -> None:
    copier = VulkanEncodeCopier(device, W, H)
    with pytest.raises(InvalidInputError, match="made for 64x32"):
        copier.submit(_texture(device, _image(width=32, height=32)))
    with pytest.raises(InvalidInputError, match="sRGB"):
        copier.submit(_texture(device, _image(), "rgba8unorm-srgb"))
    copier.close()


def test_refusals_without_a_device() -> None:
    with pytest.raises(UnsupportedError, match="NVENC"):
        VulkanEncodeCopier(object(), 64, 32, target="cuda")
    with pytest.raises(UnsupportedError, match="NVENC"):
        VulkanEncodeCopier(object(), 64, 32, target=EncodeTarget.CUDA)
    with pytest.raises(InvalidInputError, match="target must be one of"):
        VulkanEncodeCopier(object(), 64, 32, target="vulkan")
    with pytest.raises(InvalidInputError, match="even"):
        VulkanEncodeCopier(object(), 63, 32)
    with pytest.raises(UnsupportedError, match="NV12, P010"):
        VulkanEncodeCopier(object(), 64, 32, pixel_format=PixelFormat.YUV420P)
    with pytest.raises(UnsupportedError, match="LEFT or CENTER"):
        VulkanEncodeCopier(object(), 64, 32, chroma_location=ChromaLocation.TOPLEFT)
    with pytest.raises(InvalidInputError, match="1088"):
        VulkanEncodeCopier(
            object(),
            1920,
            1088,
            extent=VideoEncodeExtent.from_vulkan("h264", {"max_coded_extent": (1920, 1080)}),
        )


# ---------------------------------------------------------------------------------------------------
# VideoEncodeExtent


def test_extent_from_encoder_table() -> None:
    x264 = VideoEncodeExtent.for_encoder("libx264")
    assert x264.source is ExtentSource.ENCODER and x264.source == "encoder"
    assert (x264.codec, x264.width_alignment, x264.height_alignment) == ("h264", 2, 2)
    x264.check(1920, 1080)
    x264.check(16384, 16384)
    with pytest.raises(InvalidInputError, match=r"multiple of 2.*1920x1082"):
        x264.check(1920, 1081)
    with pytest.raises(InvalidInputError, match="between 2x2 and 16384x16384"):
        x264.check(16386, 1080)
    assert not x264.allows(1919, 1080) and x264.allows(2, 2)

    with pytest.raises(InvalidInputError, match="16x16"):
        VideoEncodeExtent.for_encoder("libx265").check(16, 8)
    VideoEncodeExtent.for_encoder("libx265").check(64, 48)  # ffmpeg writes it; refused under 'at least 64'
    VideoEncodeExtent.for_encoder("libx265").check(16, 16)
    with pytest.raises(InvalidInputError, match="4096x4096"):
        VideoEncodeExtent.for_encoder("h264_nvenc").check(4200, 2000)
    VideoEncodeExtent.for_encoder("hevc_nvenc").check(7680, 4320)
    with pytest.raises(InvalidInputError, match="16384x8704"):
        VideoEncodeExtent.for_encoder("libsvtav1").check(16384, 9000)
    assert VideoEncodeExtent.for_encoder("h265").codec == "hevc"
    # 4:4:4 has no chroma alignment
    assert VideoEncodeExtent.for_encoder("libx264", PixelFormat.YUV444P).allows(1921, 1081)
    with pytest.raises(UnsupportedError, match=r"known: .*libx264"):
        VideoEncodeExtent.for_encoder("mpeg2video")


class _Extent:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height


class _Caps:
    max_coded_extent = _Extent(4096, 4096)
    min_coded_extent = _Extent(33, 17)
    picture_access_granularity = _Extent(16, 16)


def test_extent_from_vulkan_caps() -> None:
    extent = VideoEncodeExtent.from_vulkan("h265", _Caps())
    assert extent.source is ExtentSource.VULKAN and extent.codec == "hevc"
    assert (extent.min_width, extent.min_height, extent.max_width, extent.max_height) == (48, 32, 4096, 4096)
    assert extent.width_alignment == 16
    with pytest.raises(InvalidInputError, match="multiple of 16"):
        extent.check(1920, 1080)
    extent.check(1920, 1088)
    with pytest.raises(InvalidInputError, match="Vulkan video-encode capabilities"):
        extent.check(8192, 1088)
    with pytest.raises(InvalidInputError, match="max_coded_extent"):
        VideoEncodeExtent.from_vulkan("h264", {})

    # resolve(): the device's capabilities win for what encodes on it (a Vulkan video encoder or the
    # bare codec) where it has them for the codec; software encoders keep their own limits.
    candidate = {"video_encode_capabilities": {"hevc": {"max_coded_extent": (2048, 2048)}}}
    assert VideoEncodeExtent.resolve("hevc_vulkan", candidate=candidate).max_width == 2048
    assert VideoEncodeExtent.resolve("hevc", candidate=candidate).source is ExtentSource.VULKAN
    assert VideoEncodeExtent.resolve("libx265", candidate=candidate).source is ExtentSource.ENCODER
    assert VideoEncodeExtent.resolve("h264_vulkan", candidate=candidate).source is ExtentSource.ENCODER
    assert VideoEncodeExtent.resolve("libx264", candidate=candidate).source is ExtentSource.ENCODER
    assert VideoEncodeExtent.resolve("libx264", candidate=object()).max_width == 16384
    with pytest.raises(InvalidInputError):
        VideoEncodeExtent("h264", 0, 2, 16, 16, 2, 2, ExtentSource.ENCODER)


@pytest.mark.vulkan
def test_full_ring_wait_is_bounded(device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import alpha2.gpu.webgpu as webgpu

    texture = _flat(device, 60)
    copier = VulkanEncodeCopier(device, W, H, ring_size=2, wait_timeout_s=0.05)
    with monkeypatch.context() as patch:
        patch.setattr(webgpu, "_state_of", lambda promise: "pending")  # a GPU that never finishes
        assert copier.submit(texture, pts=0) == []
        with pytest.raises(GpuTimeoutError, match="pts 0"):
            copier.submit(texture, pts=1)
    # Nothing was lost: both frames come back, in order, once the GPU answers.
    frames = copier.flush()
    assert [f.pts for f in frames] == [0, 1]
    for frame in frames:
        frame.release()
    copier.close()


# ---------------------------------------------------------------------------------------------------
# submit_planes: decoded Y'CbCr planes -> NV12 / P010 at the output size, one compute pass

_AV_COLORSPACE = {ColourMatrix.BT709: "ITU709", ColourMatrix.BT470BG: "ITU601"}
_AV_RANGE = {ColourRange.LIMITED: "MPEG", ColourRange.FULL: "JPEG"}
_PAD = 13
"""Extra texels of garbage right of and below the displayed region of every test plane texture."""


@pytest.fixture(scope="module")
def device16() -> Any:
    """A device with 16-bit normalized textures (P010 / yuv420p10 planes) where the adapter has them."""
    wgpu = pytest.importorskip("wgpu")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        pytest.skip("wgpu has no adapter")
    feature = "texture-format16bit-norm"
    features = [feature] if feature in {str(f) for f in adapter.features} else []
    return adapter.request_device_sync(required_features=features)


def _source_frame(
    width: int, height: int, pixel_format: PixelFormat, matrix: ColourMatrix, colour_range: ColourRange
) -> Any:
    """A PyAV frame in ``pixel_format`` of a smooth image with some detail (what a decoder would give)."""
    import av

    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    u, v = x / (width - 1), y / (height - 1)
    rgb = np.stack(
        [
            0.1 + 0.8 * u,
            0.5 + 0.4 * np.sin(2 * np.pi * (1.5 * v + 0.5 * u)),
            0.9 - 0.7 * u * v + 0.08 * np.sin(x / 3.0) * np.cos(y / 4.0),
        ],
        axis=-1,
    )
    img = np.round(np.clip(rgb, 0, 1) * 255).astype(np.uint8)
    return av.VideoFrame.from_ndarray(img, format="rgb24").reformat(
        format=pixel_format.ffmpeg_name,
        dst_colorspace=_AV_COLORSPACE[matrix],
        dst_color_range=_AV_RANGE[colour_range],
    )


def _av_plane(plane: Any, rows: int, row_bytes: int, dtype: type) -> np.ndarray:
    raw = np.frombuffer(bytes(plane), dtype=np.uint8).reshape(-1, plane.line_size)[:rows, :row_bytes]
    return np.ascontiguousarray(raw).view(dtype)


def _plane_textures(device: Any, frame: Any, pixel_format: PixelFormat) -> list[Any]:
    """The frame's planes in R8 / RG8 / R16 / RG16 textures larger than the picture (garbage padding)."""
    import wgpu

    wide = pixel_format.storage_bits > 8
    dtype: type = np.uint16 if wide else np.uint8
    sx, sy = 1 << pixel_format.log2_chroma_w, 1 << pixel_format.log2_chroma_h
    cw, ch = -(-frame.width // sx), -(-frame.height // sy)
    shapes = [(frame.width, frame.height, 1)]
    shapes += [(cw, ch, 2)] if pixel_format.is_semi_planar else [(cw, ch, 1), (cw, ch, 1)]
    textures = []
    for plane, (w, h, channels) in zip(frame.planes, shapes, strict=True):
        data = _av_plane(plane, h, w * channels * np.dtype(dtype).itemsize, dtype).reshape(h, w, channels)
        padded = np.full((h + _PAD, w + _PAD, channels), np.iinfo(dtype).max, dtype=dtype)
        padded[:h, :w] = data
        fmt = {1: "r", 2: "rg"}[channels] + ("16unorm" if wide else "8unorm")
        texture = device.create_texture(
            size=(w + _PAD, h + _PAD, 1),
            format=fmt,
            usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST,
        )
        device.queue.write_texture(
            {"texture": texture},
            padded,
            {"offset": 0, "bytes_per_row": padded.strides[0]},
            (*padded.shape[1::-1], 1),
        )
        textures.append(texture)
    return textures


def _ffmpeg_scaled(
    frame: Any,
    out_format: PixelFormat,
    size: tuple[int, int],
    src: tuple[ColourMatrix, ColourRange],
    dst: tuple[ColourMatrix, ColourRange],
) -> tuple[np.ndarray, np.ndarray]:
    """FFmpeg's scaled NV12 / P010 of ``frame`` as integer codes: Y (h, w), CbCr (h/2, w/2, 2).

    A matrix change goes through 16-bit RGB at the source size: swscale 8.x's direct Y'CbCr -> Y'CbCr
    matrix change comes out about one code low on average (measured -1.09 against the exact maths at
    8 bits), while its conversion through 16-bit RGB agrees with the exact maths (+0.03). gbrp16le, not
    rgb48le: swscale 8.1 writes garbage into packed rgb48le / rgba64le at odd widths.
    """
    if src[0] != dst[0]:
        frame = frame.reformat(
            format="gbrp16le",
            src_colorspace=_AV_COLORSPACE[src[0]],
            src_color_range=_AV_RANGE[src[1]],
            interpolation="BILINEAR",
        )
    out = frame.reformat(
        width=size[0],
        height=size[1],
        format=out_format.ffmpeg_name,
        src_colorspace=_AV_COLORSPACE[src[0]],
        dst_colorspace=_AV_COLORSPACE[dst[0]],
        src_color_range=_AV_RANGE[src[1]],
        dst_color_range=_AV_RANGE[dst[1]],
        interpolation="BILINEAR",
    )
    w, h = size
    dtype: type = np.uint16 if out_format is PixelFormat.P010 else np.uint8
    nbytes = np.dtype(dtype).itemsize
    y = _av_plane(out.planes[0], h, w * nbytes, dtype).astype(np.int32) >> out_format.msb_shift
    uv = _av_plane(out.planes[1], h // 2, w * nbytes, dtype).astype(np.int32) >> out_format.msb_shift
    return y, uv.reshape(h // 2, w // 2, 2)


PLANE_CASES = [
    # (input format, input size, output size)
    (PixelFormat.NV12, (320, 180), (320, 180)),
    (PixelFormat.NV12, (320, 180), (160, 90)),
    (PixelFormat.YUV420P, (320, 180), (320, 180)),
    (PixelFormat.YUV420P, (320, 180), (160, 90)),
    (PixelFormat.YUV420P, (321, 181), (160, 90)),
    (PixelFormat.YUV420P, (320, 180), (240, 136)),
    (PixelFormat.YUV444P, (320, 180), (160, 90)),
    (PixelFormat.YUV422P, (320, 180), (320, 180)),
    (PixelFormat.P010, (320, 180), (320, 180)),
    (PixelFormat.P010, (320, 180), (160, 90)),
    (PixelFormat.YUV420P10, (320, 180), (160, 90)),
    (PixelFormat.YUV420P10, (319, 179), (320, 180)),
]
COLOUR_CASES = [
    ((ColourMatrix.BT470BG, ColourRange.LIMITED), (ColourMatrix.BT709, ColourRange.LIMITED)),
    ((ColourMatrix.BT709, ColourRange.LIMITED), (ColourMatrix.BT709, ColourRange.LIMITED)),
    ((ColourMatrix.BT709, ColourRange.FULL), (ColourMatrix.BT470BG, ColourRange.LIMITED)),
]


def _plane_case_id(value: Any) -> str:
    if isinstance(value, PixelFormat):
        return value.ffmpeg_name
    if isinstance(value, tuple) and isinstance(value[0], int):
        return f"{value[0]}x{value[1]}"
    return "-".join(f"{m.name}_{r.name}" for m, r in value)


@pytest.mark.vulkan
@pytest.mark.parametrize(("in_format", "in_size", "out_size"), PLANE_CASES, ids=_plane_case_id)
@pytest.mark.parametrize(("src", "dst"), COLOUR_CASES, ids=lambda v: f"{v[0].name}_{v[1].name}")
def test_submit_planes_matches_ffmpeg(
    device16: Any,
    in_format: PixelFormat,
    in_size: tuple[int, int],
    out_size: tuple[int, int],
    src: tuple[ColourMatrix, ColourRange],
    dst: tuple[ColourMatrix, ColourRange],
) -> None:
    from alpha2.gpu.colour import ColourInfo

    if in_format.storage_bits > 8 and "texture-format16bit-norm" not in {str(f) for f in device16.features}:
        pytest.skip("the device has no 16-bit normalized textures")
    out_format = PixelFormat.P010 if in_format.bit_depth > 8 else PixelFormat.NV12
    frame = _source_frame(*in_size, in_format, *src)
    textures = _plane_textures(device16, frame, in_format)
    colour = ColourInfo(matrix=src[0], range=src[1])
    with VulkanEncodeCopier(
        device16, *out_size, pixel_format=out_format, matrix=dst[0], colour_range=dst[1]
    ) as copier:
        views = [t.create_view() for t in textures]
        frames = copier.submit_planes(views, in_format, colour, *in_size, pts=3) + copier.flush()
        assert [f.pts for f in frames] == [3]
        with frames[0] as got:
            y, uv = _planes(got)
    ref_y, ref_uv = _ffmpeg_scaled(frame, out_format, out_size, src, dst)
    per_8bit = 1 << (out_format.bit_depth - 8)
    dy = np.abs(y - ref_y) / per_8bit
    duv = np.abs(uv - ref_uv) / per_8bit
    if in_size == out_size:
        assert dy.max() <= 2, dy.max()
    else:
        # swscale's bilinear widens its kernel when downscaling; ours reads 2 x 2 texels.
        assert dy.mean() <= 1.5 and dy.max() <= 8, (dy.mean(), dy.max())
    assert duv.mean() <= 2, duv.mean()


@pytest.mark.vulkan
def test_submit_planes_ring_reuse_and_mixing(device16: Any) -> None:
    """Views repeat (pooled): nothing is rebuilt per frame; order and pts hold across both submits."""
    from alpha2.gpu.colour import ColourInfo

    colour = ColourInfo(matrix=ColourMatrix.BT470BG, range=ColourRange.LIMITED)
    frame = _source_frame(64, 32, PixelFormat.NV12, ColourMatrix.BT470BG, ColourRange.LIMITED)
    sets = [[t.create_view() for t in _plane_textures(device16, frame, PixelFormat.NV12)] for _ in range(2)]
    with VulkanEncodeCopier(device16, 32, 16, ring_size=2) as copier:
        seen = []
        for i in range(8):
            for f in copier.submit_planes(sets[i % 2], PixelFormat.NV12, colour, 64, 32, pts=i):
                with f:
                    seen.append(f.pts)
        for f in copier.submit(_texture(device16, _image(32, 16)), pts=8) + copier.flush():
            with f:
                seen.append(f.pts)
        assert seen == list(range(9))
        assert len(copier._planes._bind_groups) == 2
        assert len(copier._planes._pipelines) == 1  # same input, same constants
        assert copier.peak_slots_in_use <= 2


def test_scale_yuv_params_without_a_device() -> None:
    from alpha2.gpu.colour import ColourInfo
    from alpha2.native_gpu.encode.copier import scale_yuv_params

    kwargs: dict[str, Any] = {
        "output_size": (1280, 720),
        "output_format": PixelFormat.NV12,
        "matrix": ColourMatrix.BT709,
        "colour_range": ColourRange.LIMITED,
        "chroma_location": ChromaLocation.LEFT,
    }
    same = scale_yuv_params(
        PixelFormat.NV12,
        ColourInfo(matrix=ColourMatrix.BT709, range=ColourRange.LIMITED),
        1920,
        1080,
        **kwargs,
    )
    # Same matrix and range: codes pass through (sample * 255), no cross terms, no extra reads.
    np.testing.assert_allclose(same.transform.matrix, np.diag([255.0, 255.0, 255.0]), atol=1e-9)
    np.testing.assert_allclose(same.transform.offset, 0.0, atol=1e-9)
    assert not same.luma_reads_chroma and not same.chroma_reads_luma
    assert len(same.to_bytes()) == 160
    p010 = scale_yuv_params(PixelFormat.P010, ColourInfo(matrix=ColourMatrix.BT470BG), 1920, 1080, **kwargs)
    # A matrix change mixes chroma into luma; chroma never needs luma (white has no chroma in any matrix).
    assert p010.luma_reads_chroma and not p010.chroma_reads_luma
    with pytest.raises(UnsupportedError, match="submit\\(texture\\)"):
        scale_yuv_params(PixelFormat.GRAY, ColourInfo(), 64, 64, **kwargs)
    with pytest.raises(InvalidInputError):
        scale_yuv_params(PixelFormat.NV12, ColourInfo(), 64, 64, crop=(0, 0, 128, 64), **kwargs)


# ---------------------------------------------------------------------------------------------------
# routes


def test_route_table_statuses_and_refusals() -> None:
    from alpha2.native_gpu.encode.routes import (
        CUDA_DELIVERY_REFUSAL,
        ROUTES,
        EncodeConversion,
        EncodeRoute,
        route_statuses,
    )

    assert [row.route for row in ROUTES] == [
        EncodeRoute.PLANES_CUDA,
        EncodeRoute.PLANES_CPU,
        EncodeRoute.RGBA_CUDA,
        EncodeRoute.RGBA_CPU,
    ]
    by_route = {status.path: status for status in route_statuses()}
    for route in (EncodeRoute.PLANES_CUDA, EncodeRoute.RGBA_CUDA):
        assert not by_route[route].available and by_route[route].reason == CUDA_DELIVERY_REFUSAL
        assert "NVENC" in CUDA_DELIVERY_REFUSAL and "target='cpu'" in CUDA_DELIVERY_REFUSAL
    for route in (EncodeRoute.PLANES_CPU, EncodeRoute.RGBA_CPU):
        assert by_route[route].available and by_route[route].reason is None
    cpu_rows = [row for row in ROUTES if row.target is EncodeTarget.CPU]
    assert {row.path for row in cpu_rows} == {ExecutionPath.CPU_DOWNLOAD}
    assert [row.conversion for row in cpu_rows] == [EncodeConversion.PLANES, EncodeConversion.RGBA]
    # The copier refuses CUDA delivery with the table's reason.
    with pytest.raises(UnsupportedError) as info:
        VulkanEncodeCopier(object(), 64, 32, target=EncodeTarget.CUDA)
    assert CUDA_DELIVERY_REFUSAL in str(info.value)


def test_choose_encode_route_for_inputs() -> None:
    from alpha2.native_gpu.encode.routes import EncodeRoute, choose_encode_route

    for fmt in (PixelFormat.NV12, PixelFormat.P010, PixelFormat.YUV420P, PixelFormat.YUV444P):
        choice = choose_encode_route(fmt)
        assert choice.route is EncodeRoute.PLANES_CPU and choice.reason is None, fmt
    gray = choose_encode_route(PixelFormat.GRAY)
    assert gray.route is EncodeRoute.RGBA_CPU
    assert gray.reason == (
        "planes_cpu refused: the planes pass reads bi-planar (nv12, p010 ...) and tri-planar (yuv420p, "
        "yuv444p10 ...) Y'CbCr planes, not gray"
    )
    assert choose_encode_route(PixelFormat.RGBA).route is EncodeRoute.RGBA_CPU
    # An encoder that takes CUDA frames would get them first: refused in this build, said per frame.
    nvenc = choose_encode_route(PixelFormat.NV12, encoder_takes_cuda=True)
    assert nvenc.route is EncodeRoute.PLANES_CPU
    assert nvenc.reason is not None and nvenc.reason.startswith("planes_cuda refused: NVENC output")
    nvenc_gray = choose_encode_route(PixelFormat.GRAY, encoder_takes_cuda=True)
    assert nvenc_gray.route is EncodeRoute.RGBA_CPU and nvenc_gray.reason is not None
    assert re.findall(r"(\w+) refused: ", nvenc_gray.reason) == [
        "planes_cuda",
        "planes_cpu",
        "rgba_cuda",
    ]
    # require: the one route, or the reason it cannot be had.
    forced = choose_encode_route(PixelFormat.NV12, require=EncodeRoute.RGBA_CPU)
    assert forced.route is EncodeRoute.RGBA_CPU and forced.reason is None
    with pytest.raises(UnsupportedError, match=r"planes_cuda was required.*NVENC"):
        choose_encode_route(PixelFormat.NV12, encoder_takes_cuda=True, require=EncodeRoute.PLANES_CUDA)
    with pytest.raises(UnsupportedError, match=r"planes_cpu was required.*not gray"):
        choose_encode_route(PixelFormat.GRAY, require=EncodeRoute.PLANES_CPU)
    with pytest.raises(UnsupportedError, match=r"rgba_cuda was required.*host memory"):
        choose_encode_route(PixelFormat.NV12, require=EncodeRoute.RGBA_CUDA)
    # Nothing reads it: every route named with its reason.
    with pytest.raises(UnsupportedError, match=r"no encode route takes ayuv64le.*planes_cpu.*rgba_cpu"):
        choose_encode_route(PixelFormat.AYUV64)


def test_writable_matrices_are_what_the_copier_writes() -> None:
    from alpha2.native_gpu.encode.params import ReadbackLayout, rgb_to_yuv_params
    from alpha2.native_gpu.encode.routes import WRITABLE_MATRICES, resolve_output

    layout = ReadbackLayout.of(W, H, PixelFormat.NV12)
    for matrix in ColourMatrix:
        if matrix in WRITABLE_MATRICES:
            assert (
                resolve_output(PixelFormat.NV12, matrix, ColourRange.FULL, ChromaLocation.LEFT, H)[0]
                is matrix
            )
            data = rgb_to_yuv_params(
                layout, PixelFormat.NV12, matrix, ColourRange.LIMITED, ChromaLocation.LEFT
            )
            assert len(data) == 80
        elif matrix is ColourMatrix.UNSPECIFIED:
            resolved = resolve_output(
                PixelFormat.NV12, matrix, ColourRange.UNSPECIFIED, ChromaLocation.LEFT, H
            )
            assert resolved == (ColourMatrix.BT470BG, ColourRange.LIMITED, ChromaLocation.LEFT)
        else:
            with pytest.raises(UnsupportedError, match="BT709, BT470BG, SMPTE170M"):
                VulkanEncodeCopier(object(), W, H, matrix=matrix)


@pytest.mark.vulkan
def test_route_report_counts_frames_fallbacks_and_bytes(device16: Any) -> None:
    from alpha2.gpu.colour import ColourInfo
    from alpha2.native_gpu.encode.routes import EncodeRoute, choose_encode_route

    colour = ColourInfo(matrix=ColourMatrix.BT470BG, range=ColourRange.LIMITED)
    frame = _source_frame(64, 32, PixelFormat.NV12, ColourMatrix.BT470BG, ColourRange.LIMITED)
    views = [t.create_view() for t in _plane_textures(device16, frame, PixelFormat.NV12)]
    gray = choose_encode_route(PixelFormat.GRAY)
    with EncodeCopier(device16, 32, 16, ring_size=2) as copier:
        assert copier is not None and VulkanEncodeCopier is EncodeCopier
        frames = []
        for i in range(3):
            frames += copier.submit_planes(views, PixelFormat.NV12, colour, 64, 32, pts=i)
            for f in frames:
                f.release()
        for i in range(3, 5):
            for f in copier.submit(_texture(device16, _image(32, 16)), pts=i, reason=gray.reason):
                f.release()
        for f in copier.flush():
            f.release()
        report = copier.route_report
    assert report.frames_by_path == {EncodeRoute.PLANES_CPU: 3, EncodeRoute.RGBA_CPU: 2}
    assert report.fallbacks == {gray.reason: 2} and report.fallback_count == 2
    assert report.bytes_crossed_cpu == 5 * copier.frame_size_bytes == copier.bytes_read_total
    assert "frames via planes_cpu: 3" in report.summary()
    assert report.as_dict()["frames"] == {"planes_cpu": 3, "rgba_cpu": 2}
    assert report.as_dict()["routes"]["planes_cuda"]["available"] is False
