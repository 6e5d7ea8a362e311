"""HDR static metadata: the mastering display (SMPTE ST 2086) and content light level (CTA-861.3).

FFmpeg carries them as ``AVMasteringDisplayMetadata`` / ``AVContentLightMetadata`` side data; the bridge
(``alpha2.ffmpeg_bridge.hdr``) turns those into :class:`HdrMetadata`, which rides on
:class:`~alpha2.gpu.geometry.FrameMetadata`. :attr:`HdrMetadata.source_peak_cd_m2` is the peak the
tone curve assumes: MaxCLL, else the mastering display's maximum, else 1000 cd/m² (libplacebo's and
BT.2408's convention).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from alpha2.gpu.errors import InvalidInputError

# Chromaticities is imported when a MasteringDisplay is checked, not here: its module loads numpy, and
# this one comes with FrameMetadata (``alpha2.gpu.geometry``), which the command line loads to parse
# sizes (``alpha2 sample --help`` too).
if TYPE_CHECKING:
    from alpha2.gpu.primaries import Chromaticities

__all__ = ["DEFAULT_HDR_PEAK_CD_M2", "ContentLightLevel", "HdrMetadata", "MasteringDisplay"]

DEFAULT_HDR_PEAK_CD_M2 = 1000.0
"""Peak assumed for HDR content that says nothing about its light level."""


def _check_luminance(owner: str, name: str, value: object, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{owner}.{name} must be a finite number of cd/m², not {value!r}")
    if value < 0 or (positive and value == 0):
        raise InvalidInputError(f"{owner}.{name} must be {'positive' if positive else '>= 0'}, not {value}")
    return float(value)


@dataclass(frozen=True)
class MasteringDisplay:
    """The display the content was graded on (SMPTE ST 2086 / FFmpeg mastering display side data)."""

    primaries: Chromaticities
    """Chromaticities of its primaries and white point."""
    min_luminance_cd_m2: float
    """Its black level."""
    max_luminance_cd_m2: float
    """Its peak luminance."""

    def __post_init__(self) -> None:
        from alpha2.gpu.primaries import Chromaticities

        if not isinstance(self.primaries, Chromaticities):
            raise InvalidInputError(
                f"MasteringDisplay.primaries must be Chromaticities, not {self.primaries!r}"
            )
        low = _check_luminance(
            "MasteringDisplay", "min_luminance_cd_m2", self.min_luminance_cd_m2, positive=False
        )
        high = _check_luminance(
            "MasteringDisplay", "max_luminance_cd_m2", self.max_luminance_cd_m2, positive=True
        )
        if low >= high:
            raise InvalidInputError(
                f"MasteringDisplay black level {low} cd/m² must be below its peak {high} cd/m²"
            )
        object.__setattr__(self, "min_luminance_cd_m2", low)
        object.__setattr__(self, "max_luminance_cd_m2", high)


@dataclass(frozen=True)
class ContentLightLevel:
    """Light levels of the content itself (CTA-861.3); 0 means unknown, as in the bitstream."""

    max_cll_cd_m2: int
    """MaxCLL: the brightest pixel's maximum component, or 0 when unknown."""
    max_fall_cd_m2: int
    """MaxFALL: the brightest frame-average light level, or 0 when unknown."""

    def __post_init__(self) -> None:
        for name in ("max_cll_cd_m2", "max_fall_cd_m2"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
                raise InvalidInputError(f"ContentLightLevel.{name} must be an int 0..65535, not {value!r}")


@dataclass(frozen=True)
class HdrMetadata:
    """The HDR static metadata of a stream or frame; either part may be absent."""

    mastering: MasteringDisplay | None = None
    """The mastering display, or None when the stream has none."""
    light_level: ContentLightLevel | None = None
    """The content light level, or None when the stream has none."""

    def __post_init__(self) -> None:
        if self.mastering is not None and not isinstance(self.mastering, MasteringDisplay):
            raise InvalidInputError(
                f"HdrMetadata.mastering must be a MasteringDisplay, not {self.mastering!r}"
            )
        if self.light_level is not None and not isinstance(self.light_level, ContentLightLevel):
            raise InvalidInputError(
                f"HdrMetadata.light_level must be a ContentLightLevel, not {self.light_level!r}"
            )

    @property
    def is_empty(self) -> bool:
        """Whether neither part is present."""
        return self.mastering is None and self.light_level is None

    @property
    def source_peak_cd_m2(self) -> float:
        """The content's peak: MaxCLL, else the mastering display's peak, else 1000 cd/m²."""
        if self.light_level is not None and self.light_level.max_cll_cd_m2 > 0:
            return float(self.light_level.max_cll_cd_m2)
        if self.mastering is not None:
            return self.mastering.max_luminance_cd_m2
        return DEFAULT_HDR_PEAK_CD_M2
