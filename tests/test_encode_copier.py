"""VulkanEncodeCopier (RGBA texture -> NV12 / P010 on the GPU, read back in a ring) and VideoEncodeExtent."""

from __future__ import annotations

import gc
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
from alpha2.native_gpu.encode import (
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

    with pytest.raises(InvalidInputError, match="64x64"):
        VideoEncodeExtent.for_encoder("libx265").check(32, 32)
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

    # resolve(): the device's capabilities win where it has them for the codec, else the table.
    candidate = {"video_encode_capabilities": {"hevc": {"max_coded_extent": (2048, 2048)}}}
    assert VideoEncodeExtent.resolve("libx265", candidate=candidate).max_width == 2048
    assert VideoEncodeExtent.resolve("libx264", candidate=candidate).source is ExtentSource.ENCODER
    assert VideoEncodeExtent.resolve("libx264", candidate=object()).max_width == 16384
    with pytest.raises(InvalidInputError):
        VideoEncodeExtent("h264", 0, 2, 16, 16, 2, 2, ExtentSource.ENCODER)


@pytest.mark.vulkan
def test_full_ring_wait_is_bounded(device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import alpha2.native_gpu.encode as encode

    texture = _flat(device, 60)
    copier = VulkanEncodeCopier(device, W, H, ring_size=2, wait_timeout_s=0.05)
    with monkeypatch.context() as patch:
        patch.setattr(encode, "_promise_settled", lambda promise: False)  # a GPU that never finishes
        assert copier.submit(texture, pts=0) == []
        with pytest.raises(GpuTimeoutError, match="pts 0"):
            copier.submit(texture, pts=1)
    # Nothing was lost: both frames come back, in order, once the GPU answers.
    frames = copier.flush()
    assert [f.pts for f in frames] == [0, 1]
    for frame in frames:
        frame.release()
    copier.close()
