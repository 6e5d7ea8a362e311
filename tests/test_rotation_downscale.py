"""Display rotation and downscaling filters on the GPU paths (issue 11, items 4 and 12): the encode
copier's planes pass and the renderer rotate the picture and average a downscaled sample's footprint."""

from __future__ import annotations

from typing import Any

import av
import numpy as np
import pytest

from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, ColourRange
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation
from alpha2.native_gpu.encode.copier import VulkanEncodeCopier
from alpha2.native_gpu.encode.params import DOWNSCALE_FOOTPRINT, MAX_TAPS, filter_taps, scale_yuv_params
from tests.test_encode_copier import _ffmpeg_scaled, _plane_textures, _planes, _source_frame, device16

__all__ = ["device16"]

_BT709 = (ColourMatrix.BT709, ColourRange.LIMITED)
_NP_TURNS = {Rotation.NONE: 0, Rotation.CW90: -1, Rotation.CW180: 2, Rotation.CW270: 1}
"""np.rot90's k (counter-clockwise quarter turns) for each clockwise rotation."""


def _copy(
    device: Any,
    in_format: PixelFormat,
    in_size: tuple[int, int],
    out_size: tuple[int, int],
    rotation: Rotation,
    frame: Any = None,
) -> tuple[np.ndarray, np.ndarray, Any]:
    frame = frame if frame is not None else _source_frame(*in_size, in_format, *_BT709)
    textures = _plane_textures(device, frame, in_format)
    colour = ColourInfo(matrix=_BT709[0], range=_BT709[1])
    with VulkanEncodeCopier(
        device, *out_size, pixel_format=PixelFormat.NV12, matrix=_BT709[0], colour_range=_BT709[1]
    ) as copier:
        views = [t.create_view() for t in textures]
        frames = copier.submit_planes(views, in_format, colour, *in_size, pts=1, rotation=rotation)
        frames += copier.flush()
        with frames[0] as got:
            y, uv = _planes(got)
    return y, uv, frame


@pytest.mark.vulkan
@pytest.mark.parametrize("rotation", list(Rotation), ids=lambda r: r.name)
def test_submit_planes_rotates(device16: Any, rotation: Rotation) -> None:
    """1:1 with a rotation: the planes are the unrotated conversion turned by np.rot90."""
    in_size = (64, 32)
    quarter = rotation in (Rotation.CW90, Rotation.CW270)
    out_size = (32, 64) if quarter else in_size
    y, _, frame = _copy(device16, PixelFormat.YUV420P, in_size, out_size, rotation)
    k = _NP_TURNS[rotation]
    ref_y, _ = _ffmpeg_scaled(frame, PixelFormat.NV12, in_size, _BT709, _BT709)
    assert y.shape == (out_size[1], out_size[0])
    assert np.abs(y - np.rot90(ref_y, k)).max() <= 1


_SOURCE_FRACTION = {
    Rotation.NONE: lambda u, v: (u, v),
    Rotation.CW90: lambda u, v: (v, 1 - u),
    Rotation.CW180: lambda u, v: (1 - u, 1 - v),
    Rotation.CW270: lambda u, v: (1 - v, u),
}
"""Where a point of the displayed picture (fractions u, v) was in the decoded one."""


@pytest.mark.vulkan
@pytest.mark.parametrize("rotation", list(Rotation), ids=lambda r: r.name)
def test_rotated_chroma_sits_where_the_output_siting_says(device16: Any, rotation: Rotation) -> None:
    """Linear chroma planes (exact under bilinear filtering): each output chroma sample (LEFT sited)
    has the value of the source chroma at the point its site shows."""
    import av

    w, h = 64, 32
    frame = av.VideoFrame(w, h, "yuv420p")
    rows, cols = np.mgrid[0 : h // 2, 0 : w // 2].astype(np.float64)
    for plane, data in zip(frame.planes, (np.full((h, w), 128.0), 40 + 5 * cols, 50 + 9 * rows), strict=True):
        view = np.frombuffer(plane, np.uint8).reshape(-1, plane.line_size)
        view[: data.shape[0], : data.shape[1]] = np.round(data)
    quarter = rotation in (Rotation.CW90, Rotation.CW270)
    ow, oh = (h, w) if quarter else (w, h)
    textures = _plane_textures(device16, frame, PixelFormat.YUV420P)
    colour = ColourInfo(matrix=_BT709[0], range=_BT709[1])
    with VulkanEncodeCopier(
        device16, ow, oh, pixel_format=PixelFormat.NV12, matrix=_BT709[0], colour_range=_BT709[1]
    ) as copier:
        frames = (
            copier.submit_planes(
                [t.create_view() for t in textures],
                PixelFormat.YUV420P,
                colour,
                w,
                h,
                pts=0,
                rotation=rotation,
            )
            + copier.flush()
        )
        with frames[0] as got:
            _, uv = _planes(got)
    b, a = np.mgrid[0 : oh // 2, 0 : ow // 2].astype(np.float64)
    u, v = (2 * a + 0.5) / ow, (2 * b + 1.0) / oh  # LEFT site (0, 0.5) of the block, pixel centre
    fu, fv = _SOURCE_FRACTION[rotation](u, v)
    px, py = fu * w - 0.5, fv * h - 0.5
    kx, ly = px / 2, (py - 0.5) / 2
    inside = (kx >= 0) & (kx <= w // 2 - 1) & (ly >= 0) & (ly <= h // 2 - 1)
    assert np.abs(uv[..., 0] - (40 + 5 * kx))[inside].max() <= 1.0
    assert np.abs(uv[..., 1] - (50 + 9 * ly))[inside].max() <= 1.0


def test_filter_taps_follow_the_scale() -> None:
    assert [filter_taps(s) for s in (0.5, 1.0, 1.5, 2.0, 3.0, 3.2, 100.0)] == [1, 1, 2, 2, 3, 4, MAX_TAPS]
    p = scale_yuv_params(
        PixelFormat.YUV420P,
        ColourInfo(matrix=_BT709[0], range=_BT709[1]),
        1920,
        1080,
        output_size=(640, 360),
        output_format=PixelFormat.NV12,
        matrix=_BT709[0],
        colour_range=_BT709[1],
        chroma_location=ChromaLocation.LEFT,
    )
    assert p.luma_taps == (3, 3) and p.chroma_taps == (3, 3)
    assert p.constants()["ROTATION"] == 0
    r = scale_yuv_params(
        PixelFormat.YUV420P,
        ColourInfo(matrix=_BT709[0], range=_BT709[1]),
        1920,
        1080,
        output_size=(180, 640),
        output_format=PixelFormat.NV12,
        matrix=_BT709[0],
        colour_range=_BT709[1],
        chroma_location=ChromaLocation.LEFT,
        rotation=Rotation.CW90,
    )
    # 1920 source columns over 640 output rows (3 a row), 1080 source rows over 180 columns (6).
    assert r.luma_taps == (6, 3) and r.unrotated_size == (640, 180)
    assert r.constants()["ROTATION"] == 1


def _tap_weights(size_in: int, size_out: int) -> np.ndarray:
    """The planes pass's filter along one axis as a matrix (output x input): taps spread over
    DOWNSCALE_FOOTPRINT output pixels, each a bilinear read at a position clamped to the picture."""
    per = size_in / size_out
    n = filter_taps(per)
    weights = np.zeros((size_out, size_in))
    for o in range(size_out):
        for t in range(n):
            p = (o + 0.5 + ((t + 0.5) / n - 0.5) * DOWNSCALE_FOOTPRINT) * per - 0.5
            p = min(max(p, 0.0), size_in - 1.0)
            i = int(np.floor(p))
            f = p - i
            weights[o, i] += (1 - f) / n
            weights[o, min(i + 1, size_in - 1)] += f / n
    return weights


def test_the_downscale_footprint_reaches_just_past_the_output_pixel() -> None:
    """At 3x an output luma sample weighs 5 source texels: its own 3, and 0.15 of the next one on each
    side (a box of exactly one output pixel lets fine grain alias)."""
    w = _tap_weights(12, 4)
    assert np.allclose(w.sum(axis=1), 1.0)
    assert np.allclose(w[1, 2:7] * 3, [0.15, 0.85, 1.0, 0.85, 0.15])
    assert w[1, :2].sum() == 0 and w[1, 7:].sum() == 0


@pytest.mark.vulkan
def test_downscale_by_three_weighs_the_footprint(device16: Any) -> None:
    """At exactly 3x each output luma sample is its footprint's weighted mean (no point sampling)."""
    in_size, out_size = (192, 96), (64, 32)
    rng = np.random.default_rng(7)
    picture = np.full((in_size[1] * 3 // 2, in_size[0]), 128, np.uint8)
    picture[: in_size[1]] = rng.integers(16, 236, (in_size[1], in_size[0]), dtype=np.uint8)  # grain
    grain = av.VideoFrame.from_ndarray(picture, format="yuv420p")
    grain.colorspace, grain.color_range = int(_BT709[0]), int(_BT709[1])
    y, _, _ = _copy(device16, PixelFormat.YUV420P, in_size, out_size, Rotation.NONE, frame=grain)
    src = picture[: in_size[1]].astype(np.float64)
    expected = _tap_weights(in_size[1], out_size[1]) @ src @ _tap_weights(in_size[0], out_size[0]).T
    assert np.abs(y - expected).max() <= 1.0
    # ... which, on grain, is not the plain 3 x 3 mean.
    area = src.reshape(out_size[1], 3, out_size[0], 3).mean(axis=(1, 3))
    assert np.abs(y - area).max() > 5.0


@pytest.mark.vulkan
@pytest.mark.parametrize("rotation", list(Rotation), ids=lambda r: r.name)
@pytest.mark.parametrize("in_format", [PixelFormat.YUV420P, PixelFormat.RGBA], ids=lambda f: f.ffmpeg_name)
def test_renderer_rotates(device16: Any, rotation: Rotation, in_format: PixelFormat) -> None:
    """The renderer's vertex stage turns the picture: the render equals the unrotated one turned."""
    import wgpu

    from alpha2.native_gpu.render.renderer import FrameRenderer, read_texture_rgba

    frame = _source_frame(64, 32, PixelFormat.YUV420P, *_BT709)
    if in_format is PixelFormat.RGBA:
        rgba = frame.reformat(format="rgba", src_colorspace="ITU709").to_ndarray()
        texture = device16.create_texture(
            size=(64, 32, 1),
            format="rgba8unorm",
            usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST,
        )
        device16.queue.write_texture({"texture": texture}, rgba, {"bytes_per_row": 256}, (64, 32, 1))
        textures = [texture]
    else:
        textures = _plane_textures(device16, frame, in_format)
    colour = ColourInfo(matrix=_BT709[0], range=_BT709[1])
    renderer = FrameRenderer(device16)
    plain = read_texture_rgba(device16, renderer.render(textures, in_format, colour, 64, 32))
    turned = renderer.render(textures, in_format, colour, 64, 32, rotation=rotation)
    quarter = rotation in (Rotation.CW90, Rotation.CW270)
    assert tuple(turned.size[:2]) == ((32, 64) if quarter else (64, 32))
    got = read_texture_rgba(device16, turned).astype(np.int32)
    assert np.abs(got - np.rot90(plain, _NP_TURNS[rotation])).max() <= 1
