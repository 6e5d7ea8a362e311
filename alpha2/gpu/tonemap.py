"""Tone curves and gamut mapping in float64 numpy: the reference for ``colour_manage.wgsl``.

Light is relative linear light, 1.0 = HDR reference white = SDR white = 203 cd/m² (see
:mod:`alpha2.gpu.transfer`). The tone curves work on PQ-encoded luminance, as BT.2390 and libplacebo
do, and only compress (a source peak at or below the target peak leaves the light alone):

- :attr:`ToneCurve.BT2390`: the BT.2390 EETF, a Hermite knee from ``KS = 1.5 maxLum - 0.5``, with the
  black levels taken as 0 (its black-point lift is then nothing);
- :attr:`ToneCurve.SPLINE`: libplacebo's spline: identity below a pivot, a cubic above it that reaches
  the target peak with zero curvature;
- :attr:`ToneCurve.CLIP`: light above the target peak is cut.

A curve maps one signal per pixel (:class:`ToneMode`): the largest component (hue and saturation
kept), the luminance, or each component alone. Gamut mapping (:class:`GamutMapping`) then brings
out-of-range colours in: by clipping components, by desaturating toward the grey of the same
luminance until the colour fits (hue kept), or by a soft compression of the chroma of colours near the
target's boundary when the source gamut reaches beyond it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.tone_choices import GamutMapping, ToneCurve, ToneMode
from alpha2.gpu.transfer import REFERENCE_WHITE_CD_M2, pq_eotf, pq_inverse_eotf

__all__ = [
    "MIN_TARGET_PEAK_CD_M2",
    "GamutMapping",
    "ToneCurve",
    "ToneCurveParams",
    "ToneMode",
    "gamut_map",
    "tone_curve_params",
    "tone_map",
    "tone_map_pq",
]

MIN_TARGET_PEAK_CD_M2 = 5.0
"""The dimmest target peak the curves accept (below it the spline cannot stay monotonic)."""


@dataclass(frozen=True)
class ToneCurveParams:
    """The constants of one tone curve between a source and a target peak (also the shader's)."""

    curve: ToneCurve
    """Which curve."""
    active: bool
    """Whether anything is compressed (the source peak is above the target peak)."""
    source_peak_pq: float
    """The source peak, PQ-encoded."""
    target_peak_pq: float
    """The target peak, PQ-encoded."""
    knee: float
    """BT.2390: KS, normalised to the source peak; spline: the pivot in PQ."""
    max_lum: float
    """BT.2390: the target peak normalised to the source peak, in PQ."""
    spline_qa: float
    """Spline: cubic coefficient above the pivot."""
    spline_qb: float
    """Spline: quadratic coefficient above the pivot."""


def _check_peak(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise InvalidInputError(f"{name} must be a finite number of cd/m², not {value!r}")
    if not MIN_TARGET_PEAK_CD_M2 <= value <= 10000.0:
        raise InvalidInputError(f"{name} must be from {MIN_TARGET_PEAK_CD_M2} to 10000 cd/m², not {value}")
    return float(value)


def tone_curve_params(
    curve: ToneCurve,
    source_peak_cd_m2: float,
    target_peak_cd_m2: float,
    spline_pivot_pq: float | None = None,
) -> ToneCurveParams:
    """The constants of ``curve`` from ``source_peak_cd_m2`` down to ``target_peak_cd_m2``.

    The spline's pivot is lowered where needed to keep the curve monotonic (``pivot <= 1.5 T - 0.5 S``
    in PQ, for source and target peaks S and T). None puts it at 80 % of that bound: at the bound itself
    (where BT.2390's knee ``KS * S`` sits) the spline would be BT.2390's Hermite segment exactly;
    lower, its shoulder starts earlier and meets the peak still rising.

    Raises:
        InvalidInputError: a peak outside 5..10000 cd/m², a pivot outside 0..1, an unknown curve.
    """
    if not isinstance(curve, ToneCurve):
        raise InvalidInputError(f"curve must be a ToneCurve, not {curve!r}")
    source = _check_peak("source peak", source_peak_cd_m2)
    target = _check_peak("target peak", target_peak_cd_m2)
    if spline_pivot_pq is not None and not 0.0 <= spline_pivot_pq <= 1.0:
        raise InvalidInputError(f"spline pivot must be a PQ value 0..1, not {spline_pivot_pq!r}")
    s_pq = float(pq_inverse_eotf(source))
    t_pq = float(pq_inverse_eotf(target))
    active = source > target * (1.0 + 1e-9)
    knee = max_lum = qa = qb = 0.0
    if active and curve is ToneCurve.BT2390:
        max_lum = t_pq / s_pq
        knee = max(1.5 * max_lum - 0.5, 0.0)
    elif active and curve is ToneCurve.SPLINE:
        bound = max(1.5 * t_pq - 0.5 * s_pq, 0.0)
        knee = 0.8 * bound if spline_pivot_pq is None else min(spline_pivot_pq, bound)
        in_max = s_pq - knee
        out_max = t_pq - knee
        t = 2.0 * in_max * in_max
        qa = (in_max - out_max) / (in_max * t)
        qb = -3.0 * (in_max - out_max) / t
    return ToneCurveParams(curve, active, s_pq, t_pq, knee, max_lum, qa, qb)


def tone_map_pq(signal_pq: NDArray[np.float64], params: ToneCurveParams) -> NDArray[np.float64]:
    """Map PQ-encoded luminance through the curve (light above the source peak is taken as the peak)."""
    x = np.clip(np.asarray(signal_pq, dtype=np.float64), 0.0, params.source_peak_pq)
    if not params.active:
        return x
    if params.curve is ToneCurve.CLIP:
        return np.minimum(x, params.target_peak_pq)
    if params.curve is ToneCurve.BT2390:
        e1 = x / params.source_peak_pq
        ks = params.knee
        tb = (e1 - ks) / (1.0 - ks)
        tb2 = tb * tb
        tb3 = tb2 * tb
        hermite = (
            (2 * tb3 - 3 * tb2 + 1) * ks
            + (tb3 - 2 * tb2 + tb) * (1 - ks)
            + (-2 * tb3 + 3 * tb2) * params.max_lum
        )
        e2 = np.where(e1 < ks, e1, hermite)
        return np.asarray(e2 * params.source_peak_pq, dtype=np.float64)
    d = x - params.knee
    mapped = np.where(d > 0.0, ((params.spline_qa * d + params.spline_qb) * d + 1.0) * d, d)
    return np.asarray(mapped + params.knee, dtype=np.float64)


def _curve_relative(values: NDArray[np.float64], params: ToneCurveParams) -> NDArray[np.float64]:
    """The curve on relative linear light (1.0 = 203 cd/m²)."""
    pq = pq_inverse_eotf(values * REFERENCE_WHITE_CD_M2)
    peak = pq_eotf(np.float64(params.target_peak_pq)) / REFERENCE_WHITE_CD_M2
    return np.minimum(pq_eotf(tone_map_pq(pq, params)) / REFERENCE_WHITE_CD_M2, peak)  # as the shader


def tone_map(
    rgb: NDArray[np.float64], params: ToneCurveParams, mode: ToneMode, luma: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Tone map relative linear RGB (..., 3); ``luma`` is the luminance row of the RGB's primaries."""
    rgb = np.asarray(rgb, dtype=np.float64)
    if not params.active:
        return rgb.copy()
    if mode is ToneMode.RGB:
        return np.where(rgb > 0.0, _curve_relative(np.maximum(rgb, 0.0), params), rgb)
    signal = rgb.max(axis=-1) if mode is ToneMode.MAX else rgb @ np.asarray(luma, dtype=np.float64)
    positive = signal > 0.0
    safe = np.where(positive, signal, 1.0)
    scale = np.where(positive, _curve_relative(safe, params) / safe, 1.0)
    result: NDArray[np.float64] = rgb * scale[..., None]
    return result


WALL_SNAP = 1e-6
"""How close (relative) counts as on a gamut wall.

A component over the peak by less than this fraction of it is not out of range: the tone curve lands
on the peak, and rounding may step over it. In a colour brought into gamut, a component within this
fraction of its pixel's luminance from the zero wall is zero. Without that, the shader's f32 rounding
(about 1e-7 of the luminance) is left there, and a power-law or PQ target curve, whose slope is
infinite at black, turns it into 1e-3 of BT.1886 signal or 3e-2 of PQ signal (seen on the H200)."""


def _boundary_t(
    grey: NDArray[np.float64], chroma: NDArray[np.float64], peak: float | None
) -> NDArray[np.float64]:
    """How far along ``grey + t * chroma`` each pixel stays within 0..peak (inf: never leaves)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.where(chroma < 0.0, grey / -chroma, np.inf)
        if peak is None:
            return np.asarray(low.min(axis=-1), dtype=np.float64)
        over = grey + chroma > peak * (1.0 + WALL_SNAP)
        high = np.where((chroma > 0.0) & over, (peak - grey) / chroma, np.inf)
    return np.asarray(np.minimum(low, high).min(axis=-1), dtype=np.float64)


def gamut_map(
    rgb: NDArray[np.float64],
    mode: GamutMapping,
    luma: NDArray[np.float64],
    peak: float,
    *,
    to_source: NDArray[np.float64] | None = None,
    knee: float = 0.7,
) -> NDArray[np.float64]:
    """Bring relative linear RGB (..., 3, in the target primaries) into 0..``peak``.

    ``luma`` is the target's luminance row. SOFT needs ``to_source`` (target RGB -> source RGB, the
    inverse primaries conversion) to find the source gamut's edge; without it, or where the source
    gamut is inside the target's, SOFT is DESATURATE.
    """
    rgb = np.asarray(rgb, dtype=np.float64)
    if mode is GamutMapping.CLIP:
        return np.clip(rgb, 0.0, peak)
    y = np.clip(rgb @ np.asarray(luma, dtype=np.float64), 0.0, peak)
    grey = np.repeat(y[..., None], 3, axis=-1)
    chroma = rgb - grey
    t_target = _boundary_t(grey, chroma, peak)
    scale = np.minimum(t_target, 1.0)
    if mode is GamutMapping.SOFT and to_source is not None:
        m = np.asarray(to_source, dtype=np.float64)
        # Chromatic edges only (the zero walls) on both sides: the peak walls are the tone curve's.
        t_chroma = _boundary_t(grey, chroma, None)
        t_source = _boundary_t(grey @ m.T, chroma @ m.T, None)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = 1.0 / t_chroma  # this colour's distance out, 1 = on the target's edge
            r_source = t_source / t_chroma  # the source gamut's edge on the same scale
            x = np.clip((r - knee) / (r_source - knee), 0.0, 1.0)
            k = (r_source - knee) / (1.0 - knee)
            compressed = knee + (1.0 - knee) * (1.0 - (1.0 - x) ** k)
            soft = np.where((r > knee) & (r_source > 1.0) & np.isfinite(r_source), compressed / r, scale)
        scale = np.where(np.isfinite(soft), np.minimum(soft, scale), scale)
    mapped = grey + chroma * scale[..., None]
    at_wall = (chroma < 0.0) & (mapped < grey * WALL_SNAP) & (scale < 1.0)[..., None]
    result: NDArray[np.float64] = np.clip(np.where(at_wall, 0.0, mapped), 0.0, peak)
    return result
