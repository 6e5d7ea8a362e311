"""Colour primaries: chromaticities, RGB<->XYZ, and the linear-light conversion matrices between them.

Matrices are computed in float64 from the chromaticities and white points (SMPTE RP 177), not copied
from tables; a white point change goes through the Bradford cone response (as libplacebo and
ICC v4 do), so DCI-P3's greenish theatre white becomes D65 rather than being kept as a tint.

Sources: ITU-R BT.709, BT.601 (SMPTE 170M "SMPTE C" 525-line, EBU Tech 3213 625-line), BT.2020,
SMPTE RP 431-2 (DCI-P3) and EG 432-1 (Display P3, the same primaries with D65).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from alpha2.gpu.colour import ColourPrimaries
from alpha2.gpu.errors import InvalidInputError, UnsupportedError

__all__ = [
    "BRADFORD",
    "D65",
    "DCI_WHITE",
    "Chromaticities",
    "adaptation_matrix",
    "chromaticities_of",
    "luma_coefficients",
    "primaries_conversion",
    "rgb_to_xyz",
]

Chromaticity = tuple[float, float]

D65: Chromaticity = (0.3127, 0.3290)
"""CIE D65 as the video standards round it."""
DCI_WHITE: Chromaticity = (0.314, 0.351)
"""The DCI theatre white of SMPTE RP 431-2."""
ILLUMINANT_C: Chromaticity = (0.310, 0.316)
"""CIE illuminant C (NTSC 1953, BT.470 M)."""

BRADFORD: NDArray[np.float64] = np.array(
    [
        [0.8951, 0.2664, -0.1614],
        [-0.7502, 1.7135, 0.0367],
        [0.0389, -0.0685, 1.0296],
    ]
)
"""XYZ -> Bradford cone response (Lam 1985, as ICC v4 and libplacebo use it)."""
BRADFORD.flags.writeable = False


@dataclass(frozen=True)
class Chromaticities:
    """CIE 1931 xy of three primaries and a white point."""

    red: Chromaticity
    """x, y of the red primary."""
    green: Chromaticity
    """x, y of the green primary."""
    blue: Chromaticity
    """x, y of the blue primary."""
    white: Chromaticity
    """x, y of the white point."""

    def __post_init__(self) -> None:
        for name in ("red", "green", "blue", "white"):
            value = getattr(self, name)
            if (
                not isinstance(value, tuple)
                or len(value) != 2
                or not all(isinstance(c, float | int) and not isinstance(c, bool) for c in value)
            ):
                raise InvalidInputError(f"Chromaticities.{name} must be an (x, y) tuple, not {value!r}")
            x, y = float(value[0]), float(value[1])
            if not (0.0 <= x <= 1.0 and 0.0 < y <= 1.0 and x + y <= 1.0):
                raise InvalidInputError(f"Chromaticities.{name} {value!r} is not a CIE xy chromaticity")
            object.__setattr__(self, name, (x, y))


_TABLE: dict[ColourPrimaries, Chromaticities] = {
    ColourPrimaries.BT709: Chromaticities((0.640, 0.330), (0.300, 0.600), (0.150, 0.060), D65),
    ColourPrimaries.BT470M: Chromaticities((0.670, 0.330), (0.210, 0.710), (0.140, 0.080), ILLUMINANT_C),
    ColourPrimaries.BT470BG: Chromaticities((0.640, 0.330), (0.290, 0.600), (0.150, 0.060), D65),
    ColourPrimaries.SMPTE170M: Chromaticities((0.630, 0.340), (0.310, 0.595), (0.155, 0.070), D65),
    ColourPrimaries.SMPTE240M: Chromaticities((0.630, 0.340), (0.310, 0.595), (0.155, 0.070), D65),
    ColourPrimaries.FILM: Chromaticities((0.681, 0.319), (0.243, 0.692), (0.145, 0.049), ILLUMINANT_C),
    ColourPrimaries.BT2020: Chromaticities((0.708, 0.292), (0.170, 0.797), (0.131, 0.046), D65),
    ColourPrimaries.SMPTE431: Chromaticities((0.680, 0.320), (0.265, 0.690), (0.150, 0.060), DCI_WHITE),
    ColourPrimaries.SMPTE432: Chromaticities((0.680, 0.320), (0.265, 0.690), (0.150, 0.060), D65),
    ColourPrimaries.EBU3213: Chromaticities((0.630, 0.340), (0.295, 0.605), (0.155, 0.077), D65),
}


def chromaticities_of(primaries: ColourPrimaries | Chromaticities) -> Chromaticities:
    """The chromaticities of a primaries tag (a :class:`Chromaticities` passes through).

    Raises:
        InvalidInputError: UNSPECIFIED or reserved (resolve the ColourInfo first).
        UnsupportedError: a tag with no chromaticities here (SMPTE 428 XYZ); lists the known ones.
    """
    if isinstance(primaries, Chromaticities):
        return primaries
    found = _TABLE.get(primaries)
    if found is not None:
        return found
    known = ", ".join(p.name for p in _TABLE)
    if primaries in (ColourPrimaries.UNSPECIFIED, ColourPrimaries.RESERVED, ColourPrimaries.RESERVED0):
        raise InvalidInputError(
            f"primaries {primaries.name} have no chromaticities: resolve the ColourInfo first; "
            f"supported: {known}"
        )
    raise UnsupportedError(
        f"primaries {ColourPrimaries(primaries).name} are not supported; supported: {known}"
    )


def _xyz(xy: Chromaticity) -> NDArray[np.float64]:
    x, y = xy
    return np.array([x / y, 1.0, (1.0 - x - y) / y])


def rgb_to_xyz(primaries: ColourPrimaries | Chromaticities) -> NDArray[np.float64]:
    """The 3x3 matrix from linear RGB (white = 1, 1, 1) to CIE XYZ (white Y = 1), SMPTE RP 177."""
    c = chromaticities_of(primaries)
    columns = np.stack([_xyz(c.red), _xyz(c.green), _xyz(c.blue)], axis=1)
    scale = np.linalg.solve(columns, _xyz(c.white))
    result: NDArray[np.float64] = columns * scale[None, :]
    return result


def luma_coefficients(primaries: ColourPrimaries | Chromaticities) -> NDArray[np.float64]:
    """Luminance Y of linear RGB in these primaries (the middle row of :func:`rgb_to_xyz`)."""
    result: NDArray[np.float64] = rgb_to_xyz(primaries)[1].copy()
    return result


def adaptation_matrix(source_white: Chromaticity, target_white: Chromaticity) -> NDArray[np.float64]:
    """XYZ -> XYZ chromatic adaptation from one white to another through the Bradford cone space."""
    if source_white == target_white:
        return np.eye(3)
    cone_source = BRADFORD @ _xyz(source_white)
    cone_target = BRADFORD @ _xyz(target_white)
    result: NDArray[np.float64] = np.linalg.inv(BRADFORD) @ np.diag(cone_target / cone_source) @ BRADFORD
    return result


def primaries_conversion(
    source: ColourPrimaries | Chromaticities,
    target: ColourPrimaries | Chromaticities,
    *,
    adapt_white: bool = True,
) -> NDArray[np.float64]:
    """The 3x3 matrix taking linear RGB in ``source`` primaries to linear RGB in ``target`` ones.

    With ``adapt_white`` (the default, relative colorimetric) the source white becomes the target
    white through Bradford; without it the XYZ is kept (absolute colorimetric: DCI-P3's white stays
    greenish on a D65 display).

    Raises:
        InvalidInputError: unresolved primaries.
        UnsupportedError: primaries with no chromaticities here.
    """
    src = chromaticities_of(source)
    dst = chromaticities_of(target)
    if src == dst:
        return np.eye(3)
    adapt = adaptation_matrix(src.white, dst.white) if adapt_white else np.eye(3)
    result: NDArray[np.float64] = np.linalg.inv(rgb_to_xyz(dst)) @ adapt @ rgb_to_xyz(src)
    return result
