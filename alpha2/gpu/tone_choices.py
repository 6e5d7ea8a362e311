"""The tone-mapping choices: which curve, which signal of a pixel it maps, how colours out of gamut
come in (the ids the shader switches on).

Plain enums, kept out of :mod:`alpha2.gpu.tonemap` (the curves themselves, in numpy, which names them
too) so that a player's options and the command line's ``--tone-curve`` hold and list them without
loading numpy.
"""

from __future__ import annotations

import enum

__all__ = ["GamutMapping", "ToneCurve", "ToneMode"]


class ToneCurve(enum.IntEnum):
    """How light above the target's peak is brought down (the ids the shader switches on)."""

    CLIP = 0
    """Cut at the target peak."""
    BT2390 = 1
    """ITU-R BT.2390 EETF (the default)."""
    SPLINE = 2
    """libplacebo's spline: linear below a pivot, a cubic above it."""


class ToneMode(enum.IntEnum):
    """Which signal of a pixel the tone curve maps."""

    MAX = 0
    """The largest of R, G, B; the colour is scaled by the same factor (hue and saturation kept)."""
    LUMA = 1
    """The luminance; the colour is scaled by the same factor (components may then need gamut mapping)."""
    RGB = 2
    """Each component on its own (bright colours drift toward white)."""


class GamutMapping(enum.IntEnum):
    """How colours outside the target's range are brought in."""

    CLIP = 0
    """Clamp each component to 0..peak (hue may shift)."""
    DESATURATE = 1
    """Move toward the grey of the same luminance just far enough to fit: hue kept (the default)."""
    SOFT = 2
    """Compress the chroma of colours beyond a knee so the source gamut's edge lands on the target's."""
