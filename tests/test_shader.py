"""The YUV->RGB sampling shader against FFmpeg's own conversion of the same frames.

The frames are made here with PyAV (a smooth colourful pattern), their planes uploaded with
``queue.write_texture`` into plane textures a little larger than the frame (as pools of coded-size
surfaces are), rendered, read back and compared with swscale's conversion through the ``scale``
filter with bilinear, accurate-rounding, full-chroma-interpolation flags and the same chroma siting.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, ColourRange, yuv_to_rgb
from alpha2.gpu.formats import PixelFormat
from alpha2.native_gpu.render.renderer import (
    FrameRenderer,
    LayoutKind,
    ShaderParams,
    layout_kind,
    read_texture_rgba,
    shader_params,
)

av = pytest.importorskip("av")

MEAN_LIMIT = 1.5
MAX_LIMIT = 6

_SWS_MATRIX = {ColourMatrix.BT470BG: "bt601", ColourMatrix.BT709: "bt709", ColourMatrix.BT2020_NCL: "bt2020"}
_AV_COLORSPACE = {
    ColourMatrix.BT470BG: "itu601",
    ColourMatrix.BT709: "itu709",
    ColourMatrix.BT2020_NCL: "bt2020",
}
_AVCOL_UNSPECIFIED = 2  # AVCOL_PRI_UNSPECIFIED == AVCOL_TRC_UNSPECIFIED == 2


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    pixel_format: PixelFormat
    matrix: ColourMatrix
    range: ColourRange
    width: int
    height: int
    chroma_location: ChromaLocation = ChromaLocation.LEFT
    output_format: str = "rgba8unorm"

    @property
    def colour(self) -> ColourInfo:
        return ColourInfo.from_ffmpeg(
            int(self.matrix),
            _AVCOL_UNSPECIFIED,
            _AVCOL_UNSPECIFIED,
            int(self.range),
            int(self.chroma_location),
        )


_PF, _M, _R, _L = PixelFormat, ColourMatrix, ColourRange, ChromaLocation
CASES = [
    Case("nv12-bt601-limited", _PF.NV12, _M.BT470BG, _R.LIMITED, 128, 96),
    Case("yuv420p-bt601-full", _PF.YUV420P, _M.BT470BG, _R.FULL, 128, 96),
    Case("nv12-bt709-limited-odd", _PF.NV12, _M.BT709, _R.LIMITED, 97, 61),
    Case("yuv420p-bt709-limited-odd", _PF.YUV420P, _M.BT709, _R.LIMITED, 97, 61),
    Case("p010-bt2020-limited", _PF.P010, _M.BT2020_NCL, _R.LIMITED, 128, 96),
    Case("p010-bt2020-odd-rgba16f", _PF.P010, _M.BT2020_NCL, _R.LIMITED, 97, 61, output_format="rgba16float"),
    Case("yuv420p10-bt2020-limited", _PF.YUV420P10, _M.BT2020_NCL, _R.LIMITED, 128, 96),
    Case("yuv420p10-bt2020-odd", _PF.YUV420P10, _M.BT2020_NCL, _R.LIMITED, 97, 61),
    Case("yuv422p-bt709-limited", _PF.YUV422P, _M.BT709, _R.LIMITED, 128, 96),
    Case("yuv444p-bt601-limited-odd", _PF.YUV444P, _M.BT470BG, _R.LIMITED, 97, 61),
    Case("yuv420p-bt601-center", _PF.YUV420P, _M.BT470BG, _R.LIMITED, 128, 96, _L.CENTER),
    Case("nv12-bt709-topleft-bgra", _PF.NV12, _M.BT709, _R.LIMITED, 128, 96, _L.TOPLEFT, "bgra8unorm"),
]


def make_pattern(width: int, height: int) -> np.ndarray:
    """A smooth colourful RGB test image: gradients, waves and two soft blobs."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    r = 0.5 + 0.5 * np.sin(x / width * 2 * np.pi * 1.3)
    g = y / (height - 1)
    b = 0.5 + 0.5 * np.cos((x + y) / (width + height) * 2 * np.pi * 2)
    for cx, cy, colour in ((0.6, 0.4, (1.0, 0.1, 0.2)), (0.25, 0.7, (0.1, 0.2, 0.95))):
        blob = np.exp(-((np.hypot(x - width * cx, y - height * cy) / (0.18 * width)) ** 2))
        r, g, b = (c * (1 - blob) + k * blob for c, k in zip((r, g, b), colour))
    return (np.stack([r, g, b], -1) * 255 + 0.5).clip(0, 255).astype(np.uint8)


def make_frame(case: Case) -> Any:
    rgb = av.VideoFrame.from_ndarray(make_pattern(case.width, case.height), format="rgb24")
    interp = av.video.reformatter.Interpolation
    return rgb.reformat(
        format=case.pixel_format.ffmpeg_name,
        dst_colorspace=_AV_COLORSPACE[case.matrix],
        dst_color_range=int(case.range),
        interpolation=interp.BILINEAR | interp.ACCURATE_RND | interp.FULL_CHR_H_INP | interp.BITEXACT,
    )


def pad_to_even(frame: Any, pixel_format: PixelFormat) -> Any:
    """A copy of ``frame`` padded to even width and height by repeating its last column and row.

    swscale maps a subsampled chroma plane's whole extent (ceil(w / 2) samples) onto the luma width
    w, so for odd sizes its chroma step is 49/97 rather than 1/2 and the siting drifts across the
    picture. Padded to even, the chroma plane is unchanged and swscale's step is exactly 1/2; the
    padding column/row is cropped off the result.
    """
    width, height = frame.width + frame.width % 2, frame.height + frame.height % 2
    padded = av.VideoFrame(width, height, frame.format.name)
    src_layout = pixel_format.plane_layout(frame.width, frame.height)
    dst_layout = pixel_format.plane_layout(width, height)
    for src_info, dst_info, src, dst in zip(
        src_layout.planes, dst_layout.planes, frame.planes, padded.planes
    ):
        texel = src_info.format.bytes_per_texel
        rows = np.frombuffer(memoryview(src), np.uint8).reshape(-1, src.line_size)[: src_info.height]
        texels = rows[:, : src_info.width * texel].reshape(src_info.height, src_info.width, texel)
        grown = np.pad(
            texels,
            ((0, dst_info.height - src_info.height), (0, dst_info.width - src_info.width), (0, 0)),
            "edge",
        )
        out = np.zeros((dst_info.height, dst.line_size), np.uint8)
        out[:, : dst_info.width * texel] = grown.reshape(dst_info.height, -1)
        dst.update(out.tobytes())
    padded.colorspace = frame.colorspace
    padded.color_range = frame.color_range
    return padded


def ffmpeg_rgb(frame: Any, case: Case, params: ShaderParams) -> np.ndarray:
    """swscale's conversion with bilinear chroma at the same siting, as an (H, W, 3) uint8 array."""
    height, width = frame.height, frame.width
    if width % 2 or height % 2:
        frame = pad_to_even(frame, case.pixel_format)
    h_pos, v_pos = (round(v * 256) for v in params.chroma_offset)
    graph = av.filter.Graph()
    src = graph.add_buffer(
        width=frame.width, height=frame.height, format=frame.format, time_base=Fraction(1, 25)
    )
    scale = graph.add(
        "scale",
        "flags=bilinear+accurate_rnd+full_chroma_int+bitexact"
        f":in_color_matrix={_SWS_MATRIX[case.matrix]}"
        f":in_range={'pc' if case.range is ColourRange.FULL else 'tv'}:out_range=pc"
        f":in_h_chr_pos={h_pos}:in_v_chr_pos={v_pos}",
    )
    fmt = graph.add("format", "rgb24")
    sink = graph.add("buffersink")
    src.link_to(scale)
    scale.link_to(fmt)
    fmt.link_to(sink)
    graph.configure()
    frame.pts = 0
    frame.time_base = Fraction(1, 25)
    graph.push(frame)
    return np.asarray(graph.pull().to_ndarray())[:height, :width]


@pytest.fixture(scope="module")
def device() -> Any:
    wgpu = pytest.importorskip("wgpu")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        pytest.skip("wgpu has no adapter")
    features = [f for f in ("texture-format16bit-norm",) if f in adapter.features]
    return adapter.request_device_sync(required_features=features)


@pytest.fixture(scope="module")
def renderer(device: Any) -> FrameRenderer:
    return FrameRenderer(device)


def upload_planes(device: Any, frame: Any, pixel_format: PixelFormat, pad: int = 16) -> list[Any]:
    """Plane textures ``pad`` texels larger than the frame's planes, the frame in the top-left corner."""
    import wgpu

    layout = pixel_format.plane_layout(frame.width, frame.height)
    textures = []
    for info, plane in zip(layout.planes, frame.planes):
        texture = device.create_texture(
            size=(info.width + pad, info.height + pad, 1),
            format=info.format.wgpu_format,
            usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST,
        )
        device.queue.write_texture(
            {"texture": texture},
            memoryview(plane),
            {"offset": 0, "bytes_per_row": plane.line_size, "rows_per_image": info.height},
            (info.width, info.height, 1),
        )
        textures.append(texture)
    return textures


def needs_16bit_norm(device: Any, pixel_format: PixelFormat) -> None:
    if pixel_format.storage_bits > 8 and "texture-format16bit-norm" not in device.features:
        pytest.skip("the device lacks 'texture-format16bit-norm'")


@pytest.mark.vulkan
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_ffmpeg(case: Case, device: Any, renderer: FrameRenderer) -> None:
    needs_16bit_norm(device, case.pixel_format)
    frame = make_frame(case)
    params = shader_params(case.pixel_format, case.colour, case.width, case.height)
    expected = ffmpeg_rgb(frame, case, params).astype(np.int32)

    planes = upload_planes(device, frame, case.pixel_format)
    target = renderer.render(
        planes, case.pixel_format, case.colour, case.width, case.height, output_format=case.output_format
    )
    assert str(target.format) == case.output_format
    got = read_texture_rgba(device, target)
    assert got.shape == (case.height, case.width, 4)
    assert (got[:, :, 3] == 255).all()

    error = np.abs(got[:, :, :3].astype(np.int32) - expected)
    mean, worst = float(error.mean()), int(error.max())
    print(f"{case.name}: mean {mean:.3f} max {worst}")
    assert mean <= MEAN_LIMIT, f"{case.name}: mean abs error {mean:.3f} > {MEAN_LIMIT}"
    assert worst <= MAX_LIMIT, f"{case.name}: max abs error {worst} > {MAX_LIMIT}"


@pytest.mark.vulkan
def test_siting_matters(device: Any, renderer: FrameRenderer) -> None:
    """LEFT and CENTER siting give different pictures, and each matches only its own reference."""
    case = CASES[0]
    frame = make_frame(case)
    planes = upload_planes(device, frame, case.pixel_format)
    center = dataclasses.replace(case, chroma_location=ChromaLocation.CENTER)
    left_params = shader_params(case.pixel_format, case.colour, case.width, case.height)
    center_params = shader_params(case.pixel_format, center.colour, case.width, case.height)
    got = read_texture_rgba(device, renderer.render(planes, case.pixel_format, center.colour, 128, 96))
    rgb = got[:, :, :3].astype(np.int32)
    own = np.abs(rgb - ffmpeg_rgb(frame, center, center_params)).mean()
    other = np.abs(rgb - ffmpeg_rgb(frame, case, left_params)).mean()
    assert own < other


@pytest.mark.vulkan
def test_crop_caching_and_batching(device: Any, renderer: FrameRenderer) -> None:
    case = CASES[0]
    frame = make_frame(case)
    planes = upload_planes(device, frame, case.pixel_format)
    views = [p.create_view() for p in planes]
    full = read_texture_rgba(device, renderer.render(views, case.pixel_format, case.colour, 128, 96))
    groups = len(renderer._bind_groups)
    renderer.render(views, case.pixel_format, case.colour, 128, 96)
    assert len(renderer._bind_groups) == groups, "same views and parameters must reuse the bind group"

    import wgpu

    crop_target = device.create_texture(
        size=(64, 48, 1),
        format="rgba8unorm",
        usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
    )
    half_target = device.create_texture(
        size=(64, 48, 1),
        format="rgba8unorm",
        usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
    )
    encoder = device.create_command_encoder()
    renderer.encode_render(
        encoder, views, case.pixel_format, case.colour, 128, 96, crop_target, crop=(16, 8, 64, 48)
    )
    renderer.encode_render(encoder, views, case.pixel_format, case.colour, 128, 96, half_target)
    device.queue.submit([encoder.finish()])
    cropped = read_texture_rgba(device, crop_target)
    # A crop is a rectangle of the full render, edges included: chroma is clamped to the picture, not
    # to the crop (tests/test_api_tensor_crop.py has a picture whose edges tell the two apart).
    assert np.abs(cropped.astype(int) - full[8:56, 16:80].astype(int)).max() <= 1
    halved = read_texture_rgba(device, half_target).astype(np.float64)
    box = full.astype(np.float64).reshape(48, 2, 64, 2, 4).mean(axis=(1, 3))
    assert np.abs(halved - box).mean() < 2.0


def test_shader_params_follow_colour_vocabulary() -> None:
    for case in CASES:
        params = shader_params(case.pixel_format, case.colour, case.width, case.height)
        pf = case.pixel_format
        transform = yuv_to_rgb(case.matrix, case.range, pf.bit_depth)
        np.testing.assert_allclose(np.array(params.matrix), np.asarray(transform.matrix), rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.array(params.offset), np.asarray(transform.offset), rtol=0, atol=1e-12)
        code_scale = (2**pf.storage_bits - 1) / 2**pf.msb_shift
        assert params.value_scale[:3] == (code_scale, code_scale, code_scale)
        sx, sy = 1 << pf.log2_chroma_w, 1 << pf.log2_chroma_h
        assert params.chroma_subsampling == (sx, sy)
        assert params.layout is (LayoutKind.BIPLANAR if pf.is_semi_planar else LayoutKind.TRIPLANAR)
        assert params.src_rect == (0, 0, case.width, case.height)
        assert params.output_size == (case.width, case.height)
        assert params.luma_clamp == (0, 0, case.width - 1, case.height - 1)
        assert params.chroma_clamp == (0, 0, -(-case.width // sx) - 1, -(-case.height // sy) - 1)
        assert len(params.to_bytes()) == 144
    # A 10-bit code in P010's high bits: 1023 << 6 stored, read back as 1023.
    p010 = shader_params(PixelFormat.P010, CASES[4].colour, 64, 64)
    assert (1023 << 6) / 65535 * p010.value_scale[0] == pytest.approx(1023)


@pytest.mark.parametrize(
    ("location", "pixel_format", "expected"),
    [
        (ChromaLocation.LEFT, PixelFormat.NV12, (0.0, 0.5)),
        (ChromaLocation.CENTER, PixelFormat.NV12, (0.5, 0.5)),
        (ChromaLocation.TOPLEFT, PixelFormat.NV12, (0.0, 0.0)),
        (ChromaLocation.TOP, PixelFormat.YUV420P, (0.5, 0.0)),
        (ChromaLocation.BOTTOMLEFT, PixelFormat.YUV420P, (0.0, 1.0)),
        (ChromaLocation.BOTTOM, PixelFormat.YUV420P, (0.5, 1.0)),
        (ChromaLocation.LEFT, PixelFormat.YUV422P, (0.0, 0.0)),
        (ChromaLocation.CENTER, PixelFormat.YUV422P, (0.5, 0.0)),
        (ChromaLocation.CENTER, PixelFormat.YUV444P, (0.0, 0.0)),
    ],
)
def test_chroma_siting_offsets(location: ChromaLocation, pixel_format: PixelFormat, expected: tuple) -> None:
    colour = ColourInfo.from_ffmpeg(1, _AVCOL_UNSPECIFIED, _AVCOL_UNSPECIFIED, 1, int(location))
    assert shader_params(pixel_format, colour, 64, 32).chroma_offset == expected


def test_nv21_and_gray_fold_into_the_matrix() -> None:
    colour = ColourInfo.from_ffmpeg(1, _AVCOL_UNSPECIFIED, _AVCOL_UNSPECIFIED, 1, 1)
    nv12 = shader_params(PixelFormat.NV12, colour, 64, 32)
    nv21 = shader_params(PixelFormat.NV21, colour, 64, 32)
    assert np.array_equal(np.array(nv21.matrix), np.array(nv12.matrix)[:, [0, 2, 1]])

    gray_colour = ColourInfo.from_ffmpeg(2, _AVCOL_UNSPECIFIED, _AVCOL_UNSPECIFIED, 2, 0)
    gray = shader_params(PixelFormat.GRAY, gray_colour, 64, 32)
    assert gray.layout is LayoutKind.GRAY
    resolved = gray_colour.resolved(PixelFormat.GRAY, 64, 32)
    reference = yuv_to_rgb(ColourMatrix.BT709, resolved.range, 8)
    for code in (0, 16, 128, 235, 255):
        expected = reference.apply(np.array([code, 128.0, 128.0]))
        got = np.array(gray.matrix) @ np.array([code, 0.0, 0.0]) + np.array(gray.offset)
        np.testing.assert_allclose(got, expected, atol=1e-12)


def test_refusals() -> None:
    colour = ColourInfo.from_ffmpeg(1, _AVCOL_UNSPECIFIED, _AVCOL_UNSPECIFIED, 1, 1)
    from alpha2.gpu.errors import InvalidInputError, UnsupportedError

    with pytest.raises(UnsupportedError, match="nv12"):
        layout_kind(PixelFormat.Y210)
    with pytest.raises(InvalidInputError):
        shader_params(PixelFormat.NV12, colour, 0, 10)
    with pytest.raises(InvalidInputError):
        shader_params(PixelFormat.NV12, colour, 64, 32, crop=(60, 0, 8, 8))
