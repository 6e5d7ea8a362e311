"""The uniform block of ``colour_manage.wgsl``, packed from the same plan the numpy reference runs.

A sampling shader includes the WGSL by string concatenation (:func:`colour_manage_wgsl`), declares
``@group(G) @binding(B) var<uniform> colour: ColourManage;`` and calls ``colour_manage(rgb, colour)``
on its non-linear R'G'B'. :func:`colour_params` turns (source colour + HDR metadata, target, options)
into the :data:`UNIFORM_SIZE_BYTES` bytes of that uniform; :func:`pack_plan` packs an existing
:class:`~alpha2.gpu.colour_manage.ColourPlan`. Layout (WGSL uniform rules, byte offsets):

====  ======================  ================================================================
   0  primaries: mat3x3<f32>  linear source RGB -> linear target RGB (3 columns, each padded to 16)
  48  target_to_source        its inverse (SOFT gamut mapping)
  96  source_luma: vec4<f32>  xyz: source luminance row; w: HLG display peak (cd/m²)
 112  target_luma: vec4<f32>  xyz: target luminance row; w: HLG system gamma
 128  tone: vec4<f32>         source peak (PQ), target peak (PQ), knee / pivot, BT.2390 maxLum
 144  tone_extra: vec4<f32>   spline Qa, spline Qb, target peak (relative), encode scale
 160  gamut: vec4<f32>        x: SOFT knee
 176  ids: vec4<u32>          source TransferCurve, target TransferCurve, ToneCurve, ToneMode
 192  flags: vec4<u32>        GamutMapping, identity, tone active, 0
====  ======================  ================================================================
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.colour_manage import ColourOptions, ColourPlan, ColourTarget, plan_colour
from alpha2.gpu.hdr import HdrMetadata

__all__ = [
    "UNIFORM_SIZE_BYTES",
    "WGSL_ENTRY",
    "WGSL_STRUCT",
    "ColourParams",
    "colour_manage_wgsl",
    "colour_params",
    "pack_plan",
]

UNIFORM_SIZE_BYTES = 208
"""Size of the ``ColourManage`` uniform."""
WGSL_STRUCT = "ColourManage"
"""The uniform's struct name in the WGSL."""
WGSL_ENTRY = "colour_manage"
"""The WGSL function: ``fn colour_manage(rgb: vec3<f32>, p: ColourManage) -> vec3<f32>``."""

_WGSL_NAME = "colour_manage.wgsl"


@functools.cache
def colour_manage_wgsl() -> str:
    """The WGSL source (struct, constants and functions; no bindings, no entry points)."""
    return importlib.resources.files(__package__).joinpath(_WGSL_NAME).read_text(encoding="utf-8")


def _mat3(matrix: NDArray[np.float64]) -> NDArray[np.float32]:
    out = np.zeros(12, dtype=np.float32)
    for column in range(3):
        out[column * 4 : column * 4 + 3] = matrix[:, column]
    return out


@dataclass(frozen=True, eq=False)
class ColourParams:
    """A plan and its packed uniform."""

    plan: ColourPlan
    """What the chain does (and the numpy reference runs)."""
    uniform: bytes
    """The ``ColourManage`` uniform, :data:`UNIFORM_SIZE_BYTES` bytes."""

    def constants(self) -> dict[str, int]:
        """The plan's ids as ``colour_manage.wgsl``'s pipeline constants (the compiler drops the rest)."""
        plan = self.plan
        return {
            "CM_SOURCE_CURVE": int(plan.source_curve),
            "CM_TARGET_CURVE": int(plan.target_curve),
            "CM_TONE_CURVE": int(plan.tone.curve),
            "CM_TONE_MODE": int(plan.tone_mode),
            "CM_GAMUT_MAPPING": int(plan.gamut_mapping),
            "CM_TONE_ACTIVE": int(plan.tone.active),
        }

    @property
    def identity(self) -> bool:
        """Whether the pass changes nothing (a renderer may skip the colour pass then)."""
        return self.plan.identity


def pack_plan(plan: ColourPlan) -> bytes:
    """The ``ColourManage`` uniform of ``plan``."""
    floats = np.zeros(44, dtype=np.float32)
    floats[0:12] = _mat3(plan.primaries)
    floats[12:24] = _mat3(plan.target_to_source)
    floats[24:27] = plan.source_luma
    floats[27] = plan.hlg_peak_cd_m2
    floats[28:31] = plan.target_luma
    floats[31] = plan.hlg_gamma
    tone = plan.tone
    floats[32:36] = (tone.source_peak_pq, tone.target_peak_pq, tone.knee, tone.max_lum)
    floats[36:40] = (tone.spline_qa, tone.spline_qb, plan.target_peak_relative, plan.encode_scale)
    floats[40] = plan.gamut_knee
    ints = np.array(
        [
            plan.source_curve,
            plan.target_curve,
            tone.curve,
            plan.tone_mode,
            plan.gamut_mapping,
            int(plan.identity),
            int(tone.active),
            0,
        ],
        dtype=np.uint32,
    )
    data = floats.tobytes() + ints.tobytes()
    assert len(data) == UNIFORM_SIZE_BYTES
    return data


def colour_params(
    source: ColourInfo,
    target: ColourTarget | None = None,
    hdr: HdrMetadata | None = None,
    options: ColourOptions | None = None,
) -> ColourParams:
    """Plan the chain from ``source`` to ``target`` (SDR BT.709 by default) and pack its uniform.

    Raises:
        InvalidInputError: unresolved primaries or transfer, or bad options.
        UnsupportedError: a transfer or primaries alpha2 has no formula for.
    """
    plan = plan_colour(source, target or ColourTarget(), hdr, options)
    return ColourParams(plan, pack_plan(plan))
