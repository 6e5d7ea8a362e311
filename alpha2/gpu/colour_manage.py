"""The whole colour-management chain as one numpy reference: source R'G'B' -> target R'G'B'.

decode the source transfer to linear light (HLG through the BT.2100 OOTF) -> convert the primaries ->
tone map (BT.2390 by default; the source peak from MaxCLL, the mastering display, else 1000 cd/m²;
HDR reference white 203 cd/m² = SDR white, BT.2408) -> map the gamut -> encode the target transfer.

:func:`plan_colour` works out every constant once (:class:`ColourPlan`); :func:`apply_plan` runs the
chain in float64; ``alpha2.native_gpu.render.colour_params`` packs the same plan for
``colour_manage.wgsl``, so the shader and this reference share their numbers. When source and target
match (same curve, same primaries, nothing to compress) the plan is an identity and the values come
back untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from alpha2.gpu.colour import ColourInfo, ColourPrimaries, TransferCharacteristic
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.hdr import HdrMetadata
from alpha2.gpu.primaries import luma_coefficients, primaries_conversion
from alpha2.gpu.tonemap import (
    GamutMapping,
    ToneCurve,
    ToneCurveParams,
    ToneMode,
    gamut_map,
    tone_curve_params,
    tone_map,
)
from alpha2.gpu.transfer import (
    HLG_DISPLAY_PEAK_CD_M2,
    HLG_SYSTEM_GAMMA,
    PQ_PEAK_CD_M2,
    REFERENCE_WHITE_CD_M2,
    SdrDecoding,
    TransferCurve,
    curve_of,
    decode,
    encode,
)

__all__ = ["ColourOptions", "ColourPlan", "ColourTarget", "apply_plan", "colour_manage", "plan_colour"]


@dataclass(frozen=True)
class ColourTarget:
    """What the chain produces: primaries, transfer and the peak the tone curve aims at."""

    primaries: ColourPrimaries = ColourPrimaries.BT709
    """Target primaries."""
    transfer: TransferCharacteristic = TransferCharacteristic.BT709
    """Target transfer characteristic."""
    peak_cd_m2: float | None = None
    """Target peak; None: 203 cd/m² for SDR, 10000 for PQ (no tone mapping), 1000 for HLG."""

    def __post_init__(self) -> None:
        if not isinstance(self.primaries, ColourPrimaries):
            raise InvalidInputError(
                f"ColourTarget.primaries must be a ColourPrimaries, not {self.primaries!r}"
            )
        if not isinstance(self.transfer, TransferCharacteristic):
            raise InvalidInputError(
                f"ColourTarget.transfer must be a TransferCharacteristic, not {self.transfer!r}"
            )
        if self.peak_cd_m2 is not None and (
            isinstance(self.peak_cd_m2, bool)
            or not isinstance(self.peak_cd_m2, int | float)
            or not 5.0 <= self.peak_cd_m2 <= 10000.0
        ):
            raise InvalidInputError(
                f"ColourTarget.peak_cd_m2 must be None or 5..10000, not {self.peak_cd_m2!r}"
            )

    @classmethod
    def sdr_bt709(cls, peak_cd_m2: float | None = None) -> ColourTarget:
        """SDR BT.709 (the default target)."""
        return cls(ColourPrimaries.BT709, TransferCharacteristic.BT709, peak_cd_m2)

    @classmethod
    def hdr10(cls, peak_cd_m2: float | None = None) -> ColourTarget:
        """HDR10: PQ with BT.2020 primaries."""
        return cls(ColourPrimaries.BT2020, TransferCharacteristic.SMPTE2084, peak_cd_m2)

    @classmethod
    def of(cls, colour: ColourInfo, peak_cd_m2: float | None = None) -> ColourTarget:
        """The target that keeps ``colour``'s primaries and transfer."""
        return cls(colour.primaries, colour.transfer, peak_cd_m2)


@dataclass(frozen=True)
class ColourOptions:
    """Choices of the chain (the player's and transcoder's tone-mapping options)."""

    tone_curve: ToneCurve = ToneCurve.BT2390
    """Tone curve used when the source peak is above the target's."""
    tone_mode: ToneMode = ToneMode.MAX
    """Which signal the curve maps."""
    gamut_mapping: GamutMapping = GamutMapping.DESATURATE
    """How out-of-range colours come in."""
    spline_pivot_pq: float | None = None
    """The spline's pivot (PQ), lowered where needed to stay monotonic; None: automatic."""
    soft_gamut_knee: float = 0.7
    """SOFT gamut mapping: chroma below this fraction of the target's edge is kept."""
    sdr_decoding: SdrDecoding = SdrDecoding.DISPLAY
    """How BT.709-family tags are linearised (BT.1886 or the inverse camera OETF)."""
    hlg_peak_cd_m2: float = HLG_DISPLAY_PEAK_CD_M2
    """Peak of the HLG display the OOTF is computed for."""

    def __post_init__(self) -> None:
        for name, cls in (
            ("tone_curve", ToneCurve),
            ("tone_mode", ToneMode),
            ("gamut_mapping", GamutMapping),
            ("sdr_decoding", SdrDecoding),
        ):
            if not isinstance(getattr(self, name), cls):
                raise InvalidInputError(
                    f"ColourOptions.{name} must be a {cls.__name__}, not {getattr(self, name)!r}"
                )
        if not 0.0 < self.soft_gamut_knee < 1.0:
            raise InvalidInputError(
                f"ColourOptions.soft_gamut_knee must be in (0, 1), not {self.soft_gamut_knee!r}"
            )
        if not 5.0 <= self.hlg_peak_cd_m2 <= 10000.0:
            raise InvalidInputError(
                f"ColourOptions.hlg_peak_cd_m2 must be 5..10000, not {self.hlg_peak_cd_m2!r}"
            )


def _readonly(array: NDArray[np.floating]) -> NDArray[np.float64]:
    out = np.array(array, dtype=np.float64)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class ColourPlan:
    """Every constant of one source -> target chain (the numpy reference and the shader share it)."""

    identity: bool
    """Whether the chain changes nothing (values pass through untouched)."""
    source_curve: TransferCurve
    """Curve decoding the source."""
    target_curve: TransferCurve
    """Curve encoding the target."""
    source_luma: NDArray[np.float64]
    """Luminance row of the source primaries (HLG's OOTF)."""
    target_luma: NDArray[np.float64]
    """Luminance row of the target primaries (HLG's inverse OOTF, LUMA tone mode, gamut mapping)."""
    primaries: NDArray[np.float64]
    """Linear source RGB -> linear target RGB."""
    target_to_source: NDArray[np.float64]
    """The inverse of ``primaries`` (SOFT gamut mapping)."""
    tone: ToneCurveParams
    """The tone curve's constants."""
    tone_mode: ToneMode
    """Which signal the curve maps."""
    gamut_mapping: GamutMapping
    """How out-of-range colours come in."""
    gamut_knee: float
    """SOFT gamut mapping's knee."""
    source_peak_cd_m2: float
    """The source's peak (SDR: 203; HLG: the OOTF's display peak; PQ: from the metadata)."""
    target_peak_cd_m2: float
    """The target's peak."""
    hlg_peak_cd_m2: float
    """Peak of the HLG display (the OOTF's L_W)."""
    hlg_gamma: float
    """HLG system gamma."""
    details: dict[str, str] = field(default_factory=dict)
    """A few words per stage, for summaries and logs."""

    @property
    def target_peak_relative(self) -> float:
        """The target peak in relative linear light (1.0 = 203 cd/m²)."""
        return self.target_peak_cd_m2 / REFERENCE_WHITE_CD_M2

    @property
    def encode_scale(self) -> float:
        """Factor applied before encoding: SDR curves put the target peak at signal 1.0."""
        return 1.0 if self.target_curve.is_hdr else REFERENCE_WHITE_CD_M2 / self.target_peak_cd_m2


def _default_target_peak(curve: TransferCurve, hlg_peak: float) -> float:
    if curve is TransferCurve.PQ:
        return PQ_PEAK_CD_M2
    if curve is TransferCurve.HLG:
        return hlg_peak
    return REFERENCE_WHITE_CD_M2


def plan_colour(
    source: ColourInfo,
    target: ColourTarget,
    hdr: HdrMetadata | None = None,
    options: ColourOptions | None = None,
) -> ColourPlan:
    """Work out the chain from ``source`` (resolved primaries and transfer) to ``target``.

    Raises:
        InvalidInputError: unresolved primaries or transfer, or bad options.
        UnsupportedError: a transfer or primaries alpha2 has no formula for.
    """
    options = options or ColourOptions()
    if not isinstance(source, ColourInfo):
        raise InvalidInputError(f"source must be a ColourInfo, not {source!r}")
    if hdr is not None and not isinstance(hdr, HdrMetadata):
        raise InvalidInputError(f"hdr must be an HdrMetadata or None, not {hdr!r}")
    source_curve = curve_of(source.transfer, options.sdr_decoding)
    target_curve = curve_of(target.transfer, options.sdr_decoding)
    matrix = primaries_conversion(source.primaries, target.primaries)
    if source_curve is TransferCurve.PQ:
        source_peak = (hdr or HdrMetadata()).source_peak_cd_m2
        source_peak = min(max(source_peak, REFERENCE_WHITE_CD_M2), PQ_PEAK_CD_M2)
    elif source_curve is TransferCurve.HLG:
        source_peak = options.hlg_peak_cd_m2
    else:
        source_peak = REFERENCE_WHITE_CD_M2
    target_peak = (
        float(target.peak_cd_m2)
        if target.peak_cd_m2 is not None
        else _default_target_peak(target_curve, options.hlg_peak_cd_m2)
    )
    tone = tone_curve_params(options.tone_curve, source_peak, target_peak, options.spline_pivot_pq)
    same_primaries = bool(np.array_equal(matrix, np.eye(3)))
    # An SDR target brighter than 203 cd/m² rescales the signal, so it is not an identity either.
    identity = (
        source_curve is target_curve
        and same_primaries
        and not tone.active
        and (target_curve.is_hdr or target_peak == REFERENCE_WHITE_CD_M2)
    )
    details = {
        "transfer": f"{source_curve.name} -> {target_curve.name}",
        "primaries": "kept" if same_primaries else f"{source.primaries.name} -> {target.primaries.name}",
        "tone": (
            f"{options.tone_curve.name.lower()} {source_peak:g} -> {target_peak:g} cd/m²"
            if tone.active
            else "none"
        ),
    }
    return ColourPlan(
        identity=identity,
        source_curve=source_curve,
        target_curve=target_curve,
        source_luma=_readonly(luma_coefficients(source.primaries)),
        target_luma=_readonly(luma_coefficients(target.primaries)),
        primaries=_readonly(matrix),
        target_to_source=_readonly(np.linalg.inv(matrix)),
        tone=tone,
        tone_mode=options.tone_mode,
        # SOFT compresses a wider source gamut; with the same primaries there is nothing to compress.
        gamut_mapping=(
            GamutMapping.DESATURATE
            if options.gamut_mapping is GamutMapping.SOFT and same_primaries
            else options.gamut_mapping
        ),
        gamut_knee=options.soft_gamut_knee,
        source_peak_cd_m2=source_peak,
        target_peak_cd_m2=target_peak,
        hlg_peak_cd_m2=options.hlg_peak_cd_m2,
        hlg_gamma=HLG_SYSTEM_GAMMA,
        details=details,
    )


def apply_plan(rgb: ArrayLike, plan: ColourPlan) -> NDArray[np.float64]:
    """Run the chain on non-linear source R'G'B' (..., 3, 0..1) in float64; the result is 0..1.

    Raises:
        InvalidInputError: the last axis is not 3 long.
    """
    values = np.asarray(rgb, dtype=np.float64)
    if values.ndim == 0 or values.shape[-1] != 3:
        raise InvalidInputError(f"rgb must have shape (..., 3), not {values.shape}")
    if plan.identity:
        return values.copy()
    hlg = {"hlg_peak_cd_m2": plan.hlg_peak_cd_m2, "hlg_gamma": plan.hlg_gamma}
    linear = decode(values, plan.source_curve, plan.source_luma, **hlg)
    linear = linear @ plan.primaries.T
    linear = tone_map(linear, plan.tone, plan.tone_mode, plan.target_luma)
    linear = gamut_map(
        linear,
        plan.gamut_mapping,
        plan.target_luma,
        plan.target_peak_relative,
        to_source=plan.target_to_source,
        knee=plan.gamut_knee,
    )
    out = encode(linear * plan.encode_scale, plan.target_curve, plan.target_luma, **hlg)
    return np.clip(out, 0.0, 1.0)


def colour_manage(
    rgb: ArrayLike,
    source: ColourInfo,
    target: ColourTarget | None = None,
    hdr: HdrMetadata | None = None,
    options: ColourOptions | None = None,
) -> NDArray[np.float64]:
    """Source R'G'B' (..., 3, 0..1) -> target R'G'B' through the whole chain (SDR BT.709 by default).

    ``source`` must have its primaries and transfer resolved (:meth:`ColourInfo.resolved`); ``hdr``
    gives a PQ source's peak. Identity when source and target match.
    """
    return apply_plan(rgb, plan_colour(source, target or ColourTarget(), hdr, options))
