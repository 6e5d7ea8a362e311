"""Transfer curves and primaries: round trips, published values, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from alpha2.gpu.colour import ColourPrimaries, TransferCharacteristic
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.primaries import (
    Chromaticities,
    adaptation_matrix,
    chromaticities_of,
    luma_coefficients,
    primaries_conversion,
    rgb_to_xyz,
)
from alpha2.gpu.transfer import (
    SdrDecoding,
    TransferCurve,
    curve_of,
    decode,
    encode,
    hlg_inverse_oetf,
    hlg_oetf,
    pq_eotf,
    pq_inverse_eotf,
)

P = ColourPrimaries
T = TransferCharacteristic


@pytest.mark.parametrize("curve", list(TransferCurve), ids=lambda c: c.name)
def test_round_trip(curve: TransferCurve) -> None:
    signal = np.random.default_rng(1).random((2000, 3))
    np.testing.assert_allclose(encode(decode(signal, curve), curve), signal, atol=1e-9)


@pytest.mark.parametrize("curve", list(TransferCurve), ids=lambda c: c.name)
def test_monotonic(curve: TransferCurve) -> None:
    ramp = np.repeat(np.linspace(0.0, 1.0, 4097)[:, None], 3, axis=1)
    light = decode(ramp, curve)[:, 0]
    assert np.all(np.diff(light) > 0)


def test_pq_known_values() -> None:
    assert float(pq_eotf(1.0)) == pytest.approx(10000.0)
    assert float(pq_eotf(0.0)) == 0.0
    assert float(pq_inverse_eotf(10000.0)) == pytest.approx(1.0)
    assert float(pq_inverse_eotf(203.0)) == pytest.approx(0.5807, abs=1e-4)  # BT.2408: 58 %
    assert float(pq_inverse_eotf(100.0)) == pytest.approx(0.5081, abs=1e-4)
    assert float(pq_inverse_eotf(1000.0)) == pytest.approx(0.7518, abs=1e-4)
    # Relative light: PQ's 203 cd/m² is SDR white.
    assert decode(pq_inverse_eotf(np.full(3, 203.0)), TransferCurve.PQ) == pytest.approx(np.ones(3))


def test_hlg_reference_points() -> None:
    assert float(hlg_oetf(1.0 / 12.0)) == pytest.approx(0.5)
    assert float(hlg_oetf(1.0)) == pytest.approx(1.0, abs=1e-7)
    assert float(hlg_inverse_oetf(0.5)) == pytest.approx(1.0 / 12.0)
    # BT.2408: HLG reference white is 75 % signal, 203 cd/m² on the 1000 cd/m² display.
    white = decode(np.full(3, 0.75), TransferCurve.HLG) * 203.0
    assert white == pytest.approx(np.full(3, 203.0), abs=0.5)
    # Full signal is the display's peak.
    assert decode(np.ones(3), TransferCurve.HLG) * 203.0 == pytest.approx(np.full(3, 1000.0))


def test_sdr_curves() -> None:
    half = np.full(3, 0.5)
    assert decode(half, TransferCurve.BT1886) == pytest.approx(0.5**2.4)
    assert decode(half, TransferCurve.GAMMA22) == pytest.approx(0.5**2.2)
    assert decode(half, TransferCurve.GAMMA28) == pytest.approx(0.5**2.8)
    assert decode(half, TransferCurve.SRGB) == pytest.approx(0.2140, abs=1e-4)
    assert decode(np.full(3, 0.04), TransferCurve.BT709_OETF) == pytest.approx(0.04 / 4.5)
    assert encode(np.full(3, 0.018), TransferCurve.BT709_OETF) == pytest.approx(0.081, abs=1e-3)


def test_curve_of_tags() -> None:
    assert curve_of(T.BT709) is TransferCurve.BT1886
    assert curve_of(T.SMPTE170M, SdrDecoding.SCENE) is TransferCurve.BT709_OETF
    assert curve_of(T.SMPTE2084) is TransferCurve.PQ
    assert curve_of(T.ARIB_STD_B67) is TransferCurve.HLG
    assert curve_of(T.IEC61966_2_1) is TransferCurve.SRGB
    with pytest.raises(InvalidInputError, match="resolve"):
        curve_of(T.UNSPECIFIED)
    with pytest.raises(UnsupportedError, match="supported: "):
        curve_of(T.LOG)


def test_bt2087_matrix() -> None:
    """BT.709 -> BT.2020 as ITU-R BT.2087 publishes it (4 decimals)."""
    published = np.array([[0.6274, 0.3293, 0.0433], [0.0691, 0.9195, 0.0114], [0.0164, 0.0880, 0.8956]])
    np.testing.assert_allclose(primaries_conversion(P.BT709, P.BT2020), published, atol=6e-5)
    back = np.array([[1.6605, -0.5876, -0.0728], [-0.1246, 1.1329, -0.0083], [-0.0182, -0.1006, 1.1187]])
    np.testing.assert_allclose(primaries_conversion(P.BT2020, P.BT709), back, atol=6e-5)


def test_luma_coefficients_match_the_standards() -> None:
    np.testing.assert_allclose(luma_coefficients(P.BT709), [0.2126, 0.7152, 0.0722], atol=1e-4)
    np.testing.assert_allclose(luma_coefficients(P.BT2020), [0.2627, 0.6780, 0.0593], atol=1e-4)


def test_rgb_to_xyz_white() -> None:
    for primaries in (P.BT709, P.BT2020, P.SMPTE431, P.SMPTE432, P.SMPTE170M, P.BT470BG):
        white = rgb_to_xyz(primaries) @ np.ones(3)
        x, y = chromaticities_of(primaries).white
        np.testing.assert_allclose(white, [x / y, 1.0, (1 - x - y) / y], atol=1e-12)


PAIRS = [
    (a, b)
    for a in (P.BT709, P.SMPTE170M, P.BT470BG, P.BT2020, P.SMPTE431, P.SMPTE432)
    for b in (P.BT709, P.SMPTE170M, P.BT470BG, P.BT2020, P.SMPTE431, P.SMPTE432)
    if a != b
]


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=lambda p: p.name)
def test_primaries_round_trip_and_white(source: P, target: P) -> None:
    there = primaries_conversion(source, target)
    back = primaries_conversion(target, source)
    np.testing.assert_allclose(back @ there, np.eye(3), atol=1e-12)
    # Relative colorimetric: white stays white, Bradford included for DCI-P3.
    np.testing.assert_allclose(there @ np.ones(3), np.ones(3), atol=1e-12)


def test_dci_white_is_adapted() -> None:
    absolute = primaries_conversion(P.SMPTE431, P.SMPTE432, adapt_white=False)
    assert not np.allclose(absolute @ np.ones(3), np.ones(3), atol=1e-3)  # greenish without Bradford
    adapted = primaries_conversion(P.SMPTE431, P.SMPTE432)
    np.testing.assert_allclose(adapted @ np.ones(3), np.ones(3), atol=1e-12)
    np.testing.assert_allclose(adaptation_matrix((0.3127, 0.329), (0.3127, 0.329)), np.eye(3))


def test_primaries_refusals() -> None:
    with pytest.raises(InvalidInputError, match="resolve"):
        primaries_conversion(P.UNSPECIFIED, P.BT709)
    with pytest.raises(UnsupportedError, match="SMPTE428"):
        primaries_conversion(P.SMPTE428, P.BT709)
    with pytest.raises(InvalidInputError):
        Chromaticities((0.64, 0.33), (0.3, 0.6), (0.15, 0.06), (0.9, 0.9))
