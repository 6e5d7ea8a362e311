"""Transfer functions, both directions, in float64 numpy: the reference the shaders are checked against.

Light is measured on one scale throughout the colour pipeline: **relative linear light, 1.0 = HDR
reference white = SDR white = 203 cd/m²** (BT.2408, the normalisation libplacebo uses too). So an SDR
signal of 1.0 decodes to 1.0, PQ decodes its absolute cd/m² divided by 203, and HLG decodes through
the BT.2100 OOTF for a display of :data:`HLG_DISPLAY_PEAK_CD_M2` (its 75 % signal lands at 203 cd/m²).

The curves are the closed set :class:`TransferCurve`; :func:`curve_of` says which curve a frame's
:class:`~alpha2.gpu.colour.TransferCharacteristic` tag is shown with. BT.709 / BT.601 / BT.2020 tags
are shown through BT.1886 (a pure 2.4 power with a zero black level), as mpv and libplacebo do; their
camera OETF (with its linear toe) is :attr:`TransferCurve.BT709_OETF`, the curve FFmpeg's
``colorspace`` filter linearises with.

Sources: SMPTE ST 2084 (PQ), ARIB STD-B67 and ITU-R BT.2100 (HLG and its OOTF), ITU-R BT.1886,
ITU-R BT.709, IEC 61966-2-1 (sRGB).
"""

from __future__ import annotations

import enum
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from alpha2.gpu.colour import TransferCharacteristic
from alpha2.gpu.errors import InvalidInputError, UnsupportedError

__all__ = [
    "HLG_DISPLAY_PEAK_CD_M2",
    "HLG_SYSTEM_GAMMA",
    "PQ_PEAK_CD_M2",
    "REFERENCE_WHITE_CD_M2",
    "SdrDecoding",
    "TransferCurve",
    "curve_of",
    "decode",
    "encode",
    "hlg_inverse_oetf",
    "hlg_inverse_ootf",
    "hlg_oetf",
    "hlg_ootf",
    "pq_eotf",
    "pq_inverse_eotf",
]

REFERENCE_WHITE_CD_M2 = 203.0
"""HDR reference white (BT.2408), which SDR white maps to: relative linear light 1.0."""
PQ_PEAK_CD_M2 = 10000.0
"""Luminance of a PQ signal of 1.0."""
HLG_DISPLAY_PEAK_CD_M2 = 1000.0
"""Nominal peak of the HLG reference display (BT.2100 OOTF, ``L_W``)."""
HLG_SYSTEM_GAMMA = 1.2
"""BT.2100 HLG system gamma at the 1000 cd/m² reference display."""

# SMPTE ST 2084 constants, exact as the standard writes them.
PQ_M1 = 2610.0 / 16384.0
PQ_M2 = 2523.0 / 4096.0 * 128.0
PQ_C1 = 3424.0 / 4096.0
PQ_C2 = 2413.0 / 4096.0 * 32.0
PQ_C3 = 2392.0 / 4096.0 * 32.0

# ARIB STD-B67 constants.
HLG_A = 0.17883277
HLG_B = 1.0 - 4.0 * HLG_A
HLG_C = 0.5 - HLG_A * math.log(4.0 * HLG_A)

BT709_ALPHA = 1.09929682680944
BT709_BETA = 0.018053968510807
SRGB_ALPHA = 1.055
SRGB_BETA = 0.0031308


class TransferCurve(enum.IntEnum):
    """A transfer curve alpha2 can decode and encode (the ids the shader switches on)."""

    LINEAR = 0
    """Relative linear light as it is."""
    BT1886 = 1
    """ITU-R BT.1886 with a zero black level: a 2.4 power (how BT.709/601/2020 SDR is displayed)."""
    BT709_OETF = 2
    """The BT.709 camera OETF with its linear toe (scene-referred, what FFmpeg's colorspace uses)."""
    SRGB = 3
    """IEC 61966-2-1 sRGB, piecewise."""
    GAMMA22 = 4
    """A pure 2.2 power."""
    GAMMA28 = 5
    """A pure 2.8 power."""
    PQ = 6
    """SMPTE ST 2084, absolute: signal 1.0 = 10000 cd/m²."""
    HLG = 7
    """ARIB STD-B67 with the BT.2100 OOTF of a 1000 cd/m² display, gamma 1.2 (display-referred)."""

    @property
    def is_hdr(self) -> bool:
        """Whether the curve carries light above SDR white (PQ, HLG)."""
        return self in (TransferCurve.PQ, TransferCurve.HLG)


class SdrDecoding(enum.Enum):
    """How the BT.709-family tags (BT.709, SMPTE 170M, BT.2020 10/12-bit) are linearised."""

    DISPLAY = "display"
    """Through BT.1886, as a display shows them (mpv, libplacebo); the default."""
    SCENE = "scene"
    """Through the inverse BT.709 OETF, as FFmpeg's ``colorspace`` filter converts them."""


_BT709_FAMILY = frozenset(
    {
        TransferCharacteristic.BT709,
        TransferCharacteristic.SMPTE170M,
        TransferCharacteristic.BT2020_10,
        TransferCharacteristic.BT2020_12,
        # xvYCC and BT.1361 use the BT.709 curve over the nominal range.
        TransferCharacteristic.IEC61966_2_4,
        TransferCharacteristic.BT1361_ECG,
    }
)

_CURVE_OF_TAG: dict[TransferCharacteristic, TransferCurve] = {
    TransferCharacteristic.LINEAR: TransferCurve.LINEAR,
    TransferCharacteristic.IEC61966_2_1: TransferCurve.SRGB,
    TransferCharacteristic.GAMMA22: TransferCurve.GAMMA22,
    TransferCharacteristic.GAMMA28: TransferCurve.GAMMA28,
    TransferCharacteristic.SMPTE2084: TransferCurve.PQ,
    TransferCharacteristic.ARIB_STD_B67: TransferCurve.HLG,
}


def curve_of(transfer: TransferCharacteristic, sdr: SdrDecoding = SdrDecoding.DISPLAY) -> TransferCurve:
    """The curve a frame tagged ``transfer`` is linearised (or encoded) with.

    Raises:
        InvalidInputError: ``transfer`` is UNSPECIFIED or reserved (resolve the ColourInfo first).
        UnsupportedError: a tag alpha2 has no curve for (log, SMPTE 240M, SMPTE 428); lists the known.
    """
    if transfer in _BT709_FAMILY:
        return TransferCurve.BT1886 if sdr is SdrDecoding.DISPLAY else TransferCurve.BT709_OETF
    curve = _CURVE_OF_TAG.get(transfer)
    if curve is not None:
        return curve
    known = ", ".join(t.name for t in (*_BT709_FAMILY, *_CURVE_OF_TAG))
    if transfer in (
        TransferCharacteristic.UNSPECIFIED,
        TransferCharacteristic.RESERVED,
        TransferCharacteristic.RESERVED0,
    ):
        raise InvalidInputError(
            f"transfer {transfer.name} has no curve: resolve the ColourInfo first; supported: {known}"
        )
    raise UnsupportedError(f"transfer {transfer.name} is not supported; supported: {known}")


def _array(values: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(values, dtype=np.float64)


def pq_eotf(signal: ArrayLike) -> NDArray[np.float64]:
    """PQ signal (0..1) -> absolute luminance in cd/m² (SMPTE ST 2084 EOTF); negatives clamp to 0."""
    e = np.clip(_array(signal), 0.0, None) ** (1.0 / PQ_M2)
    y: NDArray[np.float64] = (np.maximum(e - PQ_C1, 0.0) / (PQ_C2 - PQ_C3 * e)) ** (1.0 / PQ_M1)
    return y * PQ_PEAK_CD_M2


def pq_inverse_eotf(luminance_cd_m2: ArrayLike) -> NDArray[np.float64]:
    """Absolute luminance in cd/m² -> PQ signal (0..1); negatives clamp to 0."""
    y = (np.clip(_array(luminance_cd_m2), 0.0, None) / PQ_PEAK_CD_M2) ** PQ_M1
    result: NDArray[np.float64] = ((PQ_C1 + PQ_C2 * y) / (1.0 + PQ_C3 * y)) ** PQ_M2
    return result


def hlg_oetf(scene: ArrayLike) -> NDArray[np.float64]:
    """Scene linear light (0..1) -> HLG signal (ARIB STD-B67, BT.2100 Table 5); negatives clamp to 0."""
    e = np.clip(_array(scene), 0.0, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_part = HLG_A * np.log(np.maximum(12.0 * e - HLG_B, 1e-30)) + HLG_C
    result: NDArray[np.float64] = np.where(e <= 1.0 / 12.0, np.sqrt(3.0 * e), log_part)
    return result


def hlg_inverse_oetf(signal: ArrayLike) -> NDArray[np.float64]:
    """HLG signal (0..1) -> scene linear light (0..1); negatives clamp to 0."""
    e = np.clip(_array(signal), 0.0, None)
    result: NDArray[np.float64] = np.where(
        e <= 0.5, e * e / 3.0, (np.exp((e - HLG_C) / HLG_A) + HLG_B) / 12.0
    )
    return result


def _luma(rgb: NDArray[np.float64], luma: ArrayLike) -> NDArray[np.float64]:
    coefficients = _array(luma)
    if coefficients.shape != (3,):
        raise InvalidInputError(f"luma coefficients must have shape (3,), not {coefficients.shape}")
    if rgb.ndim == 0 or rgb.shape[-1] != 3:
        raise InvalidInputError(f"HLG's OOTF works on RGB: shape (..., 3), not {rgb.shape}")
    result: NDArray[np.float64] = rgb @ coefficients
    return result


def hlg_ootf(
    scene_rgb: ArrayLike,
    luma: ArrayLike,
    peak_cd_m2: float = HLG_DISPLAY_PEAK_CD_M2,
    gamma: float = HLG_SYSTEM_GAMMA,
) -> NDArray[np.float64]:
    """Scene linear RGB (0..1, shape (..., 3)) -> display light in cd/m² (BT.2100 HLG OOTF, zero black).

    ``F = L_W * Y_s^(gamma - 1) * E``, with ``Y_s`` the scene luminance by ``luma`` (the luminance
    coefficients of the signal's primaries, BT.2020 for HLG).
    """
    rgb = np.clip(_array(scene_rgb), 0.0, None)
    y = _luma(rgb, luma)
    gain = np.where(y > 0.0, np.maximum(y, 1e-30) ** (gamma - 1.0), 0.0)
    result: NDArray[np.float64] = rgb * (peak_cd_m2 * gain)[..., None]
    return result


def hlg_inverse_ootf(
    display_rgb_cd_m2: ArrayLike,
    luma: ArrayLike,
    peak_cd_m2: float = HLG_DISPLAY_PEAK_CD_M2,
    gamma: float = HLG_SYSTEM_GAMMA,
) -> NDArray[np.float64]:
    """Display light in cd/m² (shape (..., 3)) -> scene linear RGB: the inverse of :func:`hlg_ootf`."""
    rgb = np.clip(_array(display_rgb_cd_m2), 0.0, None) / peak_cd_m2
    y = _luma(rgb, luma)
    gain = np.where(y > 0.0, np.maximum(y, 1e-30) ** ((1.0 - gamma) / gamma), 0.0)
    result: NDArray[np.float64] = rgb * gain[..., None]
    return result


def _check_rgb(values: NDArray[np.float64], curve: TransferCurve) -> None:
    if values.ndim == 0 or values.shape[-1] != 3:
        raise InvalidInputError(f"{curve.name} needs RGB values of shape (..., 3), not {values.shape}")


def decode(
    signal: ArrayLike,
    curve: TransferCurve,
    luma: ArrayLike = (0.2627, 0.6780, 0.0593),
    *,
    hlg_peak_cd_m2: float = HLG_DISPLAY_PEAK_CD_M2,
    hlg_gamma: float = HLG_SYSTEM_GAMMA,
) -> NDArray[np.float64]:
    """Non-linear signal (..., 3) -> relative linear light (1.0 = 203 cd/m²).

    SDR curves map 0..1 to 0..1 (SDR white = reference white). ``luma`` (the luminance coefficients of
    the signal's primaries) matters only for HLG's OOTF. Signals below 0 clamp to 0 for the power
    curves, PQ and HLG; LINEAR passes everything through.
    """
    if not isinstance(curve, TransferCurve):
        raise InvalidInputError(f"curve must be a TransferCurve, not {curve!r}")
    v = _array(signal)
    _check_rgb(v, curve)
    if curve is TransferCurve.LINEAR:
        return v.copy()
    if curve is TransferCurve.PQ:
        return pq_eotf(v) / REFERENCE_WHITE_CD_M2
    if curve is TransferCurve.HLG:
        display = hlg_ootf(hlg_inverse_oetf(v), luma, hlg_peak_cd_m2, hlg_gamma)
        return display / REFERENCE_WHITE_CD_M2
    v = np.clip(v, 0.0, None)
    if curve is TransferCurve.BT709_OETF:
        toe = 4.5 * BT709_BETA
        return np.where(v < toe, v / 4.5, ((v + (BT709_ALPHA - 1.0)) / BT709_ALPHA) ** (1.0 / 0.45))
    if curve is TransferCurve.SRGB:
        return np.where(v <= 12.92 * SRGB_BETA, v / 12.92, ((v + (SRGB_ALPHA - 1.0)) / SRGB_ALPHA) ** 2.4)
    gamma = {TransferCurve.BT1886: 2.4, TransferCurve.GAMMA22: 2.2, TransferCurve.GAMMA28: 2.8}[curve]
    return v**gamma


def encode(
    linear: ArrayLike,
    curve: TransferCurve,
    luma: ArrayLike = (0.2627, 0.6780, 0.0593),
    *,
    hlg_peak_cd_m2: float = HLG_DISPLAY_PEAK_CD_M2,
    hlg_gamma: float = HLG_SYSTEM_GAMMA,
) -> NDArray[np.float64]:
    """Relative linear light (..., 3; 1.0 = 203 cd/m²) -> non-linear signal: the inverse of :func:`decode`.

    Nothing is clipped at the top: an SDR value above 1.0 encodes above 1.0 (the caller maps the
    gamut and the tone first); negatives clamp to 0 except for LINEAR.
    """
    if not isinstance(curve, TransferCurve):
        raise InvalidInputError(f"curve must be a TransferCurve, not {curve!r}")
    v = _array(linear)
    _check_rgb(v, curve)
    if curve is TransferCurve.LINEAR:
        return v.copy()
    if curve is TransferCurve.PQ:
        return pq_inverse_eotf(v * REFERENCE_WHITE_CD_M2)
    if curve is TransferCurve.HLG:
        scene = hlg_inverse_ootf(v * REFERENCE_WHITE_CD_M2, luma, hlg_peak_cd_m2, hlg_gamma)
        return hlg_oetf(scene)
    v = np.clip(v, 0.0, None)
    if curve is TransferCurve.BT709_OETF:
        return np.where(v < BT709_BETA, 4.5 * v, BT709_ALPHA * v**0.45 - (BT709_ALPHA - 1.0))
    if curve is TransferCurve.SRGB:
        return np.where(v <= SRGB_BETA, 12.92 * v, SRGB_ALPHA * v ** (1.0 / 2.4) - (SRGB_ALPHA - 1.0))
    gamma = {TransferCurve.BT1886: 2.4, TransferCurve.GAMMA22: 2.2, TransferCurve.GAMMA28: 2.8}[curve]
    return v ** (1.0 / gamma)
