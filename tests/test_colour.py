"""Colour matrices against the spec equations and against FFmpeg's swscale (PyAV ``reformat``)."""

from __future__ import annotations

import av
import numpy as np
import pytest
from av.video.reformatter import ColorPrimaries, ColorRange, ColorTrc, Interpolation
from hypothesis import given
from hypothesis import strategies as st
from numpy.typing import NDArray

from alpha2.gpu.colour import (
    SUPPORTED_MATRICES,
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourPrimaries,
    ColourRange,
    ColourTransform,
    TransferCharacteristic,
    rgb_to_yuv,
    sample_to_rgb,
    yuv_to_rgb,
)
from alpha2.gpu.errors import InvalidInputError, UnknownFormatError, UnsupportedError
from alpha2.gpu.formats import PixelFormat

# Matrices swscale implements (it refuses YCgCo and BT.2020 CL with EOPNOTSUPP).
SWSCALE_MATRICES = [
    ColourMatrix.BT709,
    ColourMatrix.BT470BG,
    ColourMatrix.SMPTE170M,
    ColourMatrix.FCC,
    ColourMatrix.SMPTE240M,
    ColourMatrix.BT2020_NCL,
]
RANGES = [ColourRange.LIMITED, ColourRange.FULL]
ACCURATE = (
    Interpolation.POINT | Interpolation.ACCURATE_RND | Interpolation.FULL_CHR_H_INT | Interpolation.BITEXACT
)
W, H = 64, 32


def _legal_yuv(rng: np.random.Generator, colour_range: ColourRange, bits: int) -> NDArray[np.int64]:
    """Random Y'CbCr codes inside the legal range (swscale wraps far outside it)."""
    unit = 1 << (bits - 8)
    if colour_range is ColourRange.LIMITED:
        lo, hi = np.array([16, 16, 16]) * unit, np.array([235, 240, 240]) * unit
    else:
        lo, hi = np.zeros(3, np.int64), np.full(3, (1 << bits) - 1)
    return rng.integers(lo, hi + 1, size=(H, W, 3))


def _frame_from_planes(codes: NDArray[np.int64], name: str, dtype: type[np.generic]) -> av.VideoFrame:
    frame = av.VideoFrame(W, H, name)
    itemsize = np.dtype(dtype).itemsize
    for index, plane in enumerate(frame.planes):
        rows = np.zeros((plane.height, plane.line_size // itemsize), dtype=dtype)
        rows[:, : plane.width] = codes[: plane.height, : plane.width, index]
        plane.update(rows.tobytes())
    return frame


def _planes_of(frame: av.VideoFrame) -> NDArray[np.int64]:
    return np.stack(
        [np.frombuffer(bytes(p), np.uint8).reshape(H, p.line_size)[:, :W] for p in frame.planes], axis=-1
    ).astype(np.int64)


def _swscale_rgb(
    codes: NDArray[np.int64], matrix: int, colour_range: int, name: str = "yuv444p"
) -> NDArray[np.int64]:
    frame = _frame_from_planes(codes, name, np.uint8 if name == "yuv444p" else np.uint16)
    frame.colorspace = matrix
    frame.color_range = colour_range
    out = frame.reformat(format="rgb24", interpolation=ACCURATE).to_ndarray()
    return np.asarray(out, dtype=np.int64)


def _to_rgb8(transform: ColourTransform, codes: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.clip(np.rint(transform.apply(codes) * 255.0), 0, 255).astype(np.int64)


@pytest.mark.parametrize("colour_range", RANGES, ids=lambda r: r.name)
@pytest.mark.parametrize("matrix", SWSCALE_MATRICES, ids=lambda m: m.name)
def test_yuv_to_rgb_matches_swscale_8bit(matrix: ColourMatrix, colour_range: ColourRange) -> None:
    rng = np.random.default_rng(int(matrix) * 10 + int(colour_range))
    codes = _legal_yuv(rng, colour_range, 8)
    ours = _to_rgb8(yuv_to_rgb(matrix, colour_range, 8), codes)
    theirs = _swscale_rgb(codes, int(matrix), int(colour_range))
    assert np.abs(ours - theirs).max() <= 1


@pytest.mark.parametrize("colour_range", RANGES, ids=lambda r: r.name)
@pytest.mark.parametrize("matrix", SWSCALE_MATRICES, ids=lambda m: m.name)
def test_rgb_to_yuv_matches_swscale_8bit(matrix: ColourMatrix, colour_range: ColourRange) -> None:
    rng = np.random.default_rng(100 + int(matrix) * 10 + int(colour_range))
    rgb = rng.integers(0, 256, size=(H, W, 3), dtype=np.uint8)
    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
    out = frame.reformat(
        format="yuv444p",
        dst_colorspace=int(matrix),
        dst_color_range=int(colour_range),
        interpolation=ACCURATE,
    )
    theirs = _planes_of(out)
    ours = np.clip(np.rint(rgb_to_yuv(matrix, colour_range, 8).apply(rgb / 255.0)), 0, 255)
    # swscale truncates full-range chroma where the spec rounds: never more than one code apart.
    assert np.abs(ours - theirs).max() <= 1


@pytest.mark.parametrize("bits", [10, 12, 16])
@pytest.mark.parametrize("colour_range", RANGES, ids=lambda r: r.name)
@pytest.mark.parametrize("matrix", [ColourMatrix.BT709, ColourMatrix.BT470BG, ColourMatrix.BT2020_NCL])
def test_high_bit_depth_matches_swscale(matrix: ColourMatrix, colour_range: ColourRange, bits: int) -> None:
    rng = np.random.default_rng(bits * 100 + int(matrix) * 10 + int(colour_range))
    codes = _legal_yuv(rng, colour_range, bits)
    ours = _to_rgb8(yuv_to_rgb(matrix, colour_range, bits), codes)
    theirs = _swscale_rgb(codes, int(matrix), int(colour_range), name=f"yuv444p{bits}le")
    # swscale's high-depth full-range path is coarser (about 30% of samples one code off), never more.
    assert np.abs(ours - theirs).max() <= 1


def test_unspecified_tags_resolve_like_swscale() -> None:
    rng = np.random.default_rng(7)
    codes = _legal_yuv(rng, ColourRange.LIMITED, 8)
    untagged = _swscale_rgb(codes, int(ColourMatrix.UNSPECIFIED), int(ColourRange.UNSPECIFIED))
    # SD: BT.601 as swscale; HD and above: BT.709, as mpv and libplacebo guess (swscale stays at BT.601).
    for width, height in ((W, H), (720, 576), (1024, 576)):
        info = ColourInfo().resolved(PixelFormat.YUV444P, width, height)
        assert info.matrix is ColourMatrix.BT470BG and info.range is ColourRange.LIMITED
        assert info.guessed == {"matrix", "range", "primaries", "transfer"}
        assert np.abs(_to_rgb8(yuv_to_rgb(info.matrix, info.range, 8), codes) - untagged).max() <= 1
    for width, height in ((1280, 720), (720, 578), (1920, 1080), (3840, 2160)):
        assert ColourInfo().resolved(PixelFormat.YUV444P, width, height).matrix is ColourMatrix.BT709


def test_gray_and_yuvj_are_full_range_in_swscale() -> None:
    gray = av.VideoFrame.from_ndarray(np.full((H, W), 16, np.uint8), format="gray")
    gray.color_range = int(ColourRange.LIMITED)  # swscale ignores the tag for gray
    assert gray.reformat(format="rgb24").to_ndarray()[0, 0].tolist() == [16, 16, 16]
    assert ColourInfo(range=ColourRange.LIMITED).resolved(PixelFormat.GRAY, W, H).range is ColourRange.FULL
    codes = np.zeros((H, W, 3), np.int64) + np.array([16, 128, 128])
    yuvj = _frame_from_planes(codes, "yuvj420p", np.uint8)
    assert yuvj.reformat(format="rgb24").to_ndarray()[0, 0].tolist() == [16, 16, 16]
    assert ColourInfo().resolved(PixelFormat.YUVJ420P, W, H).range is ColourRange.FULL
    assert ColourInfo().resolved(PixelFormat.RGBA, W, H) == ColourInfo(
        ColourMatrix.RGB,
        ColourPrimaries.BT709,
        TransferCharacteristic.BT709,
        ColourRange.FULL,
        ChromaLocation.UNSPECIFIED,
    )


def test_resolved_keeps_specified_fields() -> None:
    tagged = ColourInfo(
        ColourMatrix.BT2020_NCL,
        ColourPrimaries.BT2020,
        TransferCharacteristic.SMPTE2084,
        ColourRange.FULL,
        ChromaLocation.TOPLEFT,
    )
    assert tagged.resolved(PixelFormat.P010, 3840, 2160) == tagged
    assert tagged.is_resolved
    nv12 = ColourInfo().resolved(PixelFormat.NV12, 1920, 1080)
    assert nv12.chroma_location is ChromaLocation.LEFT
    assert nv12.primaries is ColourPrimaries.BT709 and nv12.transfer is TransferCharacteristic.BT709
    assert ColourInfo().resolved(PixelFormat.YUV444P, 8, 8).chroma_location is ChromaLocation.UNSPECIFIED
    assert not ColourInfo().is_resolved


def test_swscale_refuses_ycgco_and_constant_luminance() -> None:
    # alpha2 has YCgCo (checked against the spec below); swscale has neither, so no comparison exists.
    rng = np.random.default_rng(3)
    codes = _legal_yuv(rng, ColourRange.LIMITED, 8)
    for matrix in (ColourMatrix.YCGCO, ColourMatrix.BT2020_CL):
        with pytest.raises(av.error.FFmpegError):
            _swscale_rgb(codes, int(matrix), int(ColourRange.LIMITED))
    with pytest.raises(UnsupportedError):
        yuv_to_rgb(ColourMatrix.BT2020_CL, ColourRange.LIMITED, 8)
    with pytest.raises(UnsupportedError):
        rgb_to_yuv(ColourMatrix.ICTCP, ColourRange.FULL, 10)


@pytest.mark.parametrize("bits", [8, 10, 12, 16])
def test_ycgco_against_h273(bits: int) -> None:
    rng = np.random.default_rng(bits)
    rgb = rng.random((100, 3))
    r, g, b = rgb.T
    y, cg, co = 0.25 * r + 0.5 * g + 0.25 * b, -0.25 * r + 0.5 * g - 0.25 * b, 0.5 * r - 0.5 * b
    unit = 1 << (bits - 8)
    full_max, centre = (1 << bits) - 1, 1 << (bits - 1)
    limited = np.stack([(219 * y + 16) * unit, (224 * cg + 128) * unit, (224 * co + 128) * unit], -1)
    full = np.stack([full_max * y, full_max * cg + centre, full_max * co + centre], -1)
    assert np.allclose(rgb_to_yuv(ColourMatrix.YCGCO, ColourRange.LIMITED, bits).apply(rgb), limited)
    assert np.allclose(rgb_to_yuv(ColourMatrix.YCGCO, ColourRange.FULL, bits).apply(rgb), full)
    assert np.allclose(yuv_to_rgb(ColourMatrix.YCGCO, ColourRange.LIMITED, bits).apply(limited), rgb)
    assert np.allclose(yuv_to_rgb(ColourMatrix.YCGCO, ColourRange.FULL, bits).apply(full), rgb)


@pytest.mark.parametrize("bits", [8, 10, 12, 16])
@pytest.mark.parametrize("matrix", [m for m in SUPPORTED_MATRICES if m is not ColourMatrix.RGB])
def test_range_end_points(matrix: ColourMatrix, bits: int) -> None:
    unit = 1 << (bits - 8)
    limited = yuv_to_rgb(matrix, ColourRange.LIMITED, bits)
    assert np.allclose(limited.apply(np.array([16, 128, 128]) * unit), 0.0, atol=1e-12)
    assert np.allclose(limited.apply(np.array([235, 128, 128]) * unit), 1.0, atol=1e-12)
    full = yuv_to_rgb(matrix, ColourRange.FULL, bits)
    centre = 1 << (bits - 1)
    assert np.allclose(full.apply(np.array([0, centre, centre])), 0.0, atol=1e-12)
    assert np.allclose(full.apply(np.array([(1 << bits) - 1, centre, centre])), 1.0, atol=1e-12)
    # the extremes of the chroma axes: pure blue has Cb at its maximum
    to_yuv = rgb_to_yuv(matrix, ColourRange.LIMITED, bits)
    if matrix is not ColourMatrix.YCGCO:
        assert np.isclose(to_yuv.apply(np.array([0.0, 0.0, 1.0]))[1], 240 * unit)
        assert np.isclose(to_yuv.apply(np.array([1.0, 0.0, 0.0]))[2], 240 * unit)


def test_bt709_coefficients() -> None:
    # The textbook BT.709 limited-range 8-bit decode matrix.
    t = yuv_to_rgb(ColourMatrix.BT709, ColourRange.LIMITED, 8)
    expected = np.array(
        [
            [255 / 219, 0.0, 255 / 224 * 1.5748],
            [255 / 219, -255 / 224 * 0.187324, -255 / 224 * 0.468124],
            [255 / 219, 255 / 224 * 1.8556, 0.0],
        ]
    )
    assert np.allclose(t.matrix * 255, expected, atol=2e-5)
    assert t.matrix[0, 1] == 0.0 and t.matrix[2, 2] == 0.0


def test_rgb_identity_matrix() -> None:
    t = yuv_to_rgb(ColourMatrix.RGB, ColourRange.FULL, 8)
    assert np.allclose(t.apply(np.array([10, 20, 30])), np.array([30, 10, 20]) / 255)


@given(
    matrix=st.sampled_from(SUPPORTED_MATRICES),
    colour_range=st.sampled_from(RANGES),
    bits=st.integers(8, 16),
    rgb=st.tuples(*[st.floats(0.0, 1.0)] * 3),
)
def test_round_trip(
    matrix: ColourMatrix, colour_range: ColourRange, bits: int, rgb: tuple[float, ...]
) -> None:
    values = np.array(rgb)
    codes = rgb_to_yuv(matrix, colour_range, bits).apply(values)
    assert np.allclose(yuv_to_rgb(matrix, colour_range, bits).apply(codes), values, atol=1e-9)
    # quantised to integer codes, the round trip is within half a code of the ideal
    rounded = yuv_to_rgb(matrix, colour_range, bits).apply(np.rint(codes))
    assert np.abs(rounded - values).max() <= 2.0 / ((1 << bits) - 1) * 2


def test_sample_to_rgb_for_p010_and_yuv420p10() -> None:
    info = ColourInfo().resolved(PixelFormat.P010, 1920, 1080)
    codes = np.array([[64, 512, 512], [940, 960, 64], [500, 300, 700]])
    expected = yuv_to_rgb(info.matrix, info.range, 10).apply(codes)
    p010_samples = (codes << 6) / 65535.0
    assert np.allclose(sample_to_rgb(info, PixelFormat.P010).apply(p010_samples), expected)
    planar_samples = codes / 65535.0
    assert np.allclose(sample_to_rgb(info, PixelFormat.YUV420P10).apply(planar_samples), expected)
    nv12_samples = (codes >> 2) / 255.0
    assert np.allclose(
        sample_to_rgb(info, PixelFormat.NV12).apply(nv12_samples),
        yuv_to_rgb(info.matrix, info.range, 8).apply(codes >> 2),
    )
    with pytest.raises(InvalidInputError):
        sample_to_rgb(info, PixelFormat.RGBA)


def test_shader_constants_layout() -> None:
    t = yuv_to_rgb(ColourMatrix.BT709, ColourRange.LIMITED, 8)
    c = t.shader_constants()
    assert c.dtype == np.float32 and c.shape == (16,)
    assert np.allclose(c.reshape(4, 4)[:3, :3].T, t.matrix)
    assert np.allclose(c[12:15], t.offset) and c[3] == c[7] == c[11] == c[15] == 0


def test_transform_is_a_value() -> None:
    a = yuv_to_rgb(ColourMatrix.BT709, ColourRange.FULL, 8)
    b = yuv_to_rgb(ColourMatrix.BT709, ColourRange.FULL, 8)
    assert a == b and hash(a) == hash(b)
    assert a != yuv_to_rgb(ColourMatrix.BT709, ColourRange.LIMITED, 8)
    with pytest.raises(ValueError):
        a.matrix[0, 0] = 1.0
    with pytest.raises(InvalidInputError):
        ColourTransform(np.eye(2), np.zeros(3))
    with pytest.raises(InvalidInputError):
        a.apply(np.zeros((4, 2)))


def test_invalid_requests() -> None:
    with pytest.raises(InvalidInputError, match="resolve"):
        yuv_to_rgb(ColourMatrix.UNSPECIFIED, ColourRange.LIMITED, 8)
    with pytest.raises(InvalidInputError, match="resolve"):
        yuv_to_rgb(ColourMatrix.BT709, ColourRange.UNSPECIFIED, 8)
    for bits in (7, 17, 10.0):
        with pytest.raises(InvalidInputError):
            yuv_to_rgb(ColourMatrix.BT709, ColourRange.LIMITED, bits)  # type: ignore[arg-type]


def test_enum_values_match_ffmpeg() -> None:
    assert {m.name: m.value for m in ColorRange if m.name != "NB"} == {
        "UNSPECIFIED": 0,
        "MPEG": int(ColourRange.LIMITED),
        "JPEG": int(ColourRange.FULL),
    }
    for trc in ColorTrc:
        assert TransferCharacteristic[trc.name].value == trc.value
    for prim in ColorPrimaries:
        assert ColourPrimaries[prim.name].value == prim.value
    frame = av.VideoFrame(W, H, "yuv420p")
    assert frame.colorspace == ColourMatrix.UNSPECIFIED and frame.color_range == ColourRange.UNSPECIFIED


def test_from_ffmpeg() -> None:
    info = ColourInfo.from_ffmpeg(1, 1, 1, 1, 1)
    assert info == ColourInfo(
        ColourMatrix.BT709,
        ColourPrimaries.BT709,
        TransferCharacteristic.BT709,
        ColourRange.LIMITED,
        ChromaLocation.LEFT,
    )
    with pytest.raises(UnknownFormatError, match="BT709=1"):
        ColourInfo.from_ffmpeg(99, 1, 1, 1, 1)
    assert ColourInfo(matrix=9).matrix is ColourMatrix.BT2020_NCL  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        ColourInfo(matrix="bt709")  # type: ignore[arg-type]


def test_resolved_checks_its_arguments() -> None:
    with pytest.raises(InvalidInputError, match=r"PixelFormat \(PixelFormat.from_ffmpeg_name\('yuv420p'\)\)"):
        ColourInfo().resolved("yuv420p", 1280, 720)  # type: ignore[arg-type]
    for width, height in ((-5, -5), (1280, -1), (1280, 720.0), (True, 720)):
        with pytest.raises(InvalidInputError, match="non-negative int"):
            ColourInfo().resolved(PixelFormat.YUV420P, width, height)  # type: ignore[arg-type]
    # 0 x 0: the size is not known (the renderer resolves colour so).
    assert ColourInfo().resolved(PixelFormat.YUV420P, 0, 0).matrix is ColourMatrix.BT470BG
