"""Tone and gamut mapping and the whole chain in numpy: BT.2408, monotonic ramps, identity, refusals;
FFmpeg's ``colorspace`` filter as a second reference for BT.601 <-> BT.709."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from alpha2.gpu.colour import (
    ColourInfo,
    ColourMatrix,
    ColourPrimaries,
    ColourRange,
    TransferCharacteristic,
    rgb_to_yuv,
    yuv_to_rgb,
)
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget, apply_plan, colour_manage, plan_colour
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata, MasteringDisplay
from alpha2.gpu.primaries import chromaticities_of, luma_coefficients
from alpha2.gpu.tonemap import GamutMapping, ToneCurve, ToneMode, gamut_map, tone_curve_params, tone_map_pq
from alpha2.gpu.transfer import SdrDecoding, pq_inverse_eotf
from tests.colour_patterns import bt2408_pattern, place_sdr_pattern

P = ColourPrimaries
T = TransferCharacteristic


def mastering(peak: float) -> MasteringDisplay:
    return MasteringDisplay(chromaticities_of(P.BT2020), 0.005, peak)


def test_source_peak_rule() -> None:
    assert HdrMetadata().source_peak_cd_m2 == 1000.0
    assert HdrMetadata(mastering=mastering(4000.0)).source_peak_cd_m2 == 4000.0
    both = HdrMetadata(mastering(4000.0), ContentLightLevel(1200, 300))
    assert both.source_peak_cd_m2 == 1200.0
    # MaxCLL 0 means unknown.
    assert HdrMetadata(mastering(4000.0), ContentLightLevel(0, 0)).source_peak_cd_m2 == 4000.0


def test_metadata_validation() -> None:
    with pytest.raises(InvalidInputError):
        MasteringDisplay(chromaticities_of(P.BT2020), 10.0, 5.0)
    with pytest.raises(InvalidInputError):
        ContentLightLevel(-1, 0)
    with pytest.raises(InvalidInputError):
        HdrMetadata(mastering="bt2020")  # type: ignore[arg-type]


@pytest.mark.parametrize("curve", list(ToneCurve), ids=lambda c: c.name)
@pytest.mark.parametrize(
    ("source", "target"), [(1000.0, 203.0), (4000.0, 203.0), (10000.0, 100.0), (1000.0, 600.0)]
)
def test_curves_monotonic_and_bounded(curve: ToneCurve, source: float, target: float) -> None:
    params = tone_curve_params(curve, source, target)
    x = np.linspace(0.0, params.source_peak_pq, 5001)
    y = tone_map_pq(x, params)
    assert np.all(np.diff(y) >= -1e-12)
    assert y.max() == pytest.approx(params.target_peak_pq, abs=1e-9)
    # Dark light is untouched.
    dark = x < 0.2
    np.testing.assert_allclose(y[dark], x[dark], atol=1e-12)


def test_bt2390_knee() -> None:
    params = tone_curve_params(ToneCurve.BT2390, 1000.0, 203.0)
    max_lum = float(pq_inverse_eotf(203.0) / pq_inverse_eotf(1000.0))
    assert params.max_lum == pytest.approx(max_lum)
    assert params.knee == pytest.approx(1.5 * max_lum - 0.5)
    assert not tone_curve_params(ToneCurve.BT2390, 203.0, 203.0).active
    with pytest.raises(InvalidInputError):
        tone_curve_params(ToneCurve.BT2390, 1000.0, 1.0)


@pytest.mark.parametrize("mode", list(ToneMode), ids=lambda m: m.name)
@pytest.mark.parametrize("curve", list(ToneCurve), ids=lambda c: c.name)
@pytest.mark.parametrize("transfer", [T.SMPTE2084, T.ARIB_STD_B67], ids=["pq", "hlg"])
def test_grey_ramp_monotonic(transfer: T, curve: ToneCurve, mode: ToneMode) -> None:
    ramp = np.repeat(np.linspace(0.0, 1.0, 2049)[:, None], 3, axis=1)
    source = ColourInfo(primaries=P.BT2020, transfer=transfer)
    hdr = HdrMetadata(mastering=mastering(4000.0))
    out = colour_manage(ramp, source, hdr=hdr, options=ColourOptions(tone_curve=curve, tone_mode=mode))
    assert np.all(np.diff(out[:, 0]) >= -1e-12)
    np.testing.assert_allclose(out[:, 0], out[:, 1], atol=1e-9)  # grey stays grey
    np.testing.assert_allclose(out[:, 0], out[:, 2], atol=1e-9)
    assert out[-1, 0] == pytest.approx(1.0)


@pytest.mark.parametrize("transfer", [T.SMPTE2084, T.ARIB_STD_B67], ids=["pq", "hlg"])
def test_bt2408_sdr_pattern_comes_back(transfer: T) -> None:
    """An SDR pattern placed at 203 cd/m² comes back: within 3 codes with a 203 cd/m² peak in the
    metadata (PQ: nothing to compress), within 12 without (compressed from 1000 cd/m²)."""
    pattern = bt2408_pattern()
    signal = place_sdr_pattern(pattern, transfer, bits=10)
    source = ColourInfo(primaries=P.BT2020, transfer=transfer)
    with_metadata = HdrMetadata(mastering(1000.0), ContentLightLevel(203, 203))
    for hdr in (with_metadata, None):
        sdr = colour_manage(signal, source, ColourTarget.sdr_bt709(), hdr)
        error = np.abs(np.round(sdr * 255.0) - pattern).mean()
        limit = 3.0 if hdr is not None and transfer is T.SMPTE2084 else 12.0
        assert error < limit, (hdr, error)
    if transfer is T.SMPTE2084:
        sdr = colour_manage(signal, source, ColourTarget.sdr_bt709(), with_metadata)
        assert np.abs(np.round(sdr * 255.0) - pattern).mean() < 1.0


def test_identity_when_source_and_target_match() -> None:
    rgb = np.random.default_rng(2).random((500, 3))
    for colour, target in (
        (ColourInfo(primaries=P.BT709, transfer=T.BT709), ColourTarget.sdr_bt709()),
        (ColourInfo(primaries=P.BT2020, transfer=T.SMPTE2084), ColourTarget.hdr10()),
        (ColourInfo(primaries=P.BT2020, transfer=T.ARIB_STD_B67), ColourTarget(P.BT2020, T.ARIB_STD_B67)),
    ):
        plan = plan_colour(colour, target)
        assert plan.identity
        assert np.array_equal(apply_plan(rgb, plan), rgb)
    assert not plan_colour(ColourInfo(primaries=P.BT709, transfer=T.BT709), ColourTarget.hdr10()).identity


def test_sdr_into_hdr10_puts_white_at_203() -> None:
    white = colour_manage(
        np.ones((1, 3)), ColourInfo(primaries=P.BT709, transfer=T.BT709), ColourTarget.hdr10()
    )
    assert white[0] == pytest.approx(np.full(3, float(pq_inverse_eotf(203.0))))


def test_primaries_round_trip_through_the_chain() -> None:
    rgb = np.random.default_rng(4).random((1000, 3))
    bt709 = ColourInfo(primaries=P.BT709, transfer=T.BT709)
    wide = colour_manage(rgb, bt709, ColourTarget(P.BT2020, T.BT709))
    back = colour_manage(wide, ColourInfo(primaries=P.BT2020, transfer=T.BT709), ColourTarget.sdr_bt709())
    np.testing.assert_allclose(back, rgb, atol=1e-9)


def test_gamut_mapping_keeps_hue_and_in_gamut_colours() -> None:
    luma = luma_coefficients(P.BT709)
    inside = np.random.default_rng(5).random((1000, 3))
    for mode in GamutMapping:
        np.testing.assert_allclose(gamut_map(inside, mode, luma, 1.0), inside, atol=1e-12)
    outside = np.array([[1.2, 0.3, -0.1], [-0.2, 0.9, 0.1], [0.1, 0.2, 1.5]])
    mapped = gamut_map(outside, GamutMapping.DESATURATE, luma, 1.0)
    assert mapped.min() >= 0.0 and mapped.max() <= 1.0
    # Desaturating toward the grey of the same luminance keeps luminance and the chroma direction.
    y_out, y_map = outside @ luma, mapped @ luma
    np.testing.assert_allclose(y_map, y_out, atol=1e-12)
    chroma_out = outside - y_out[:, None]
    chroma_map = mapped - y_map[:, None]
    ratio = chroma_map / chroma_out
    np.testing.assert_allclose(ratio, np.repeat(ratio[:, :1], 3, axis=1), atol=1e-12)


def test_soft_gamut_compresses_smoothly() -> None:
    source = ColourInfo(primaries=P.BT2020, transfer=T.BT709)
    options = ColourOptions(gamut_mapping=GamutMapping.SOFT)
    line = np.stack([np.linspace(0.0, 1.0, 1001), np.full(1001, 0.5), np.full(1001, 0.5)], axis=1)
    out = colour_manage(line, source, ColourTarget.sdr_bt709(), options=options)
    assert out.min() >= 0.0 and out.max() <= 1.0
    assert np.all(np.diff(out[:, 0]) > -1e-6)  # no fold-over along a saturating red
    hard = colour_manage(line, source, ColourTarget.sdr_bt709())
    assert not np.allclose(out, hard)  # compression starts inside the target gamut
    # Same primaries: nothing to compress.
    assert plan_colour(source, ColourTarget(P.BT2020, T.BT709), options=options).identity


def test_refusals() -> None:
    with pytest.raises(InvalidInputError, match="resolve"):
        colour_manage(np.zeros((1, 3)), ColourInfo())
    with pytest.raises(InvalidInputError):
        ColourTarget(peak_cd_m2=1.0)
    with pytest.raises(InvalidInputError):
        colour_manage(np.zeros(4), ColourInfo(primaries=P.BT709, transfer=T.BT709))


def _colorspace_filter(codes: np.ndarray, src: str, dst: str) -> np.ndarray:
    av = pytest.importorskip("av")
    side = 64
    frame = av.VideoFrame.from_ndarray(codes.reshape(3, side, side).astype(np.uint8), format="yuv444p")
    frame.colorspace = {"bt470bg": 5, "bt709": 1}[src]
    frame.color_range = 1
    frame.pts = 0
    frame.time_base = Fraction(1, 25)
    graph = av.filter.Graph()
    buffer = graph.add_buffer(width=side, height=side, format="yuv444p", time_base=Fraction(1, 25))
    names = {"bt470bg": "bt601-6-625", "bt709": "bt709"}
    colorspace = graph.add("colorspace", f"all={names[dst]}:iall={names[src]}:range=tv:irange=tv:fast=0")
    sink = graph.add("buffersink")
    buffer.link_to(colorspace)
    colorspace.link_to(sink)
    graph.configure()
    graph.push(frame)
    return np.asarray(graph.pull().to_ndarray()).reshape(3, -1).T.astype(np.float64)


@pytest.mark.parametrize(("src", "dst"), [("bt470bg", "bt709"), ("bt709", "bt470bg")])
def test_colorspace_filter_agrees_on_bt601_bt709(src: str, dst: str) -> None:
    """FFmpeg's colorspace filter (linearising with the camera OETF) as a second reference."""
    tags = {
        "bt470bg": (ColourMatrix.BT470BG, P.BT470BG, T.GAMMA28),
        "bt709": (ColourMatrix.BT709, P.BT709, T.BT709),
    }
    # The filter's BT.601-6-625 preset uses BT.709's curve; alpha2 tags that as SMPTE 170M.
    tags["bt470bg"] = (ColourMatrix.BT470BG, P.BT470BG, T.SMPTE170M)
    rng = np.random.default_rng(6)
    rgb = rng.uniform(0.1, 0.9, size=(64 * 64, 3))
    src_matrix, src_primaries, src_transfer = tags[src]
    dst_matrix, dst_primaries, dst_transfer = tags[dst]
    yuv = np.round(rgb_to_yuv(src_matrix, ColourRange.LIMITED, 8).apply(rgb))
    filtered = _colorspace_filter(yuv.T.reshape(-1), src, dst)
    got = yuv_to_rgb(dst_matrix, ColourRange.LIMITED, 8).apply(filtered)
    source_rgb = yuv_to_rgb(src_matrix, ColourRange.LIMITED, 8).apply(yuv)
    ours = colour_manage(
        source_rgb,
        ColourInfo(primaries=src_primaries, transfer=src_transfer),
        ColourTarget(dst_primaries, dst_transfer),
        options=ColourOptions(sdr_decoding=SdrDecoding.SCENE, gamut_mapping=GamutMapping.CLIP),
    )
    # The filter keeps out-of-range R'G'B' (in Y'CbCr), the chain clips it: compare where both agree
    # that the colour is in range.
    inside = np.all((got > 0.0) & (got < 1.0), axis=1)
    assert inside.mean() > 0.9
    error = np.abs(ours - got)[inside] * 255.0
    assert error.mean() < 0.6, error.mean()
    assert error.max() < 3.0, error.max()
    # The conversion is not a no-op: without it the error is larger.
    assert (np.abs(source_rgb - got)[inside] * 255.0).mean() > 2 * error.mean()
