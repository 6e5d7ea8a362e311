"""Geometry and timing: sizes, rectangles, rotation and per-frame metadata."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from fractions import Fraction

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.hdr import HdrMetadata
from alpha2.gpu.limits import DEFAULT_MAX_PIXELS

__all__ = ["DEFAULT_MAX_PIXELS", "FrameMetadata", "Rect", "Rotation", "Size"]


def _check_int(owner: str, name: str, value: object, *, minimum: int | None = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{owner}.{name} must be an int, not {value!r}")
    if minimum is not None and value < minimum:
        raise InvalidInputError(f"{owner}.{name} must be >= {minimum}, not {value}")


@dataclass(frozen=True)
class Size:
    """A width and height in pixels."""

    width: int
    """Width in pixels (>= 0)."""
    height: int
    """Height in pixels (>= 0)."""

    def __post_init__(self) -> None:
        _check_int("Size", "width", self.width)
        _check_int("Size", "height", self.height)

    @property
    def area(self) -> int:
        """Pixels covered: ``width * height``."""
        return self.width * self.height

    @property
    def is_empty(self) -> bool:
        """Whether either side is zero."""
        return self.width == 0 or self.height == 0

    def transposed(self) -> Size:
        """Width and height swapped (what a 90 or 270 degree rotation does)."""
        return Size(self.height, self.width)

    def contains(self, other: Size) -> bool:
        """Whether ``other`` fits inside this size on both axes."""
        return other.width <= self.width and other.height <= self.height


@dataclass(frozen=True)
class Rect:
    """An axis-aligned rectangle in pixels; ``x``/``y`` is the top-left corner."""

    x: int
    """Left edge (inclusive)."""
    y: int
    """Top edge (inclusive)."""
    width: int
    """Width in pixels (>= 0)."""
    height: int
    """Height in pixels (>= 0)."""

    def __post_init__(self) -> None:
        _check_int("Rect", "x", self.x, minimum=None)
        _check_int("Rect", "y", self.y, minimum=None)
        _check_int("Rect", "width", self.width)
        _check_int("Rect", "height", self.height)

    @classmethod
    def from_size(cls, size: Size) -> Rect:
        """The rectangle at the origin covering ``size``."""
        return cls(0, 0, size.width, size.height)

    @classmethod
    def from_crop(cls, size: Size, top: int = 0, bottom: int = 0, left: int = 0, right: int = 0) -> Rect:
        """The part of ``size`` left after cutting the given margins (FFmpeg's ``crop_*`` fields).

        Raises:
            InvalidInputError: a negative margin, or margins larger than the size.
        """
        for name, value in (("top", top), ("bottom", bottom), ("left", left), ("right", right)):
            _check_int("crop", name, value)
        if left + right > size.width or top + bottom > size.height:
            raise InvalidInputError(
                f"crop (top={top}, bottom={bottom}, left={left}, right={right}) "
                f"exceeds {size.width}x{size.height}"
            )
        return cls(left, top, size.width - left - right, size.height - top - bottom)

    @property
    def right(self) -> int:
        """Right edge (exclusive): ``x + width``."""
        return self.x + self.width

    @property
    def bottom(self) -> int:
        """Bottom edge (exclusive): ``y + height``."""
        return self.y + self.height

    @property
    def size(self) -> Size:
        """The rectangle's width and height."""
        return Size(self.width, self.height)

    @property
    def is_empty(self) -> bool:
        """Whether it covers no pixel."""
        return self.width == 0 or self.height == 0

    def contains(self, other: Rect) -> bool:
        """Whether ``other`` lies entirely inside this rectangle (an empty one inside counts)."""
        return (
            self.x <= other.x
            and self.y <= other.y
            and other.right <= self.right
            and other.bottom <= self.bottom
        )

    def intersection(self, other: Rect) -> Rect | None:
        """The overlap of the two rectangles, or None when they do not overlap."""
        x, y = max(self.x, other.x), max(self.y, other.y)
        right, bottom = min(self.right, other.right), min(self.bottom, other.bottom)
        if right <= x or bottom <= y:
            return None
        return Rect(x, y, right - x, bottom - y)

    def is_within(self, size: Size) -> bool:
        """Whether the rectangle lies inside a ``size`` image anchored at the origin."""
        return Rect.from_size(size).contains(self)


class Rotation(enum.IntEnum):
    """Clockwise rotation to apply to a decoded picture before display."""

    NONE = 0
    CW90 = 90
    CW180 = 180
    CW270 = 270

    @classmethod
    def from_degrees(cls, degrees: int) -> Rotation:
        """The rotation of ``degrees`` clockwise (any multiple of 90; -90 is CW270).

        Raises:
            InvalidInputError: not a multiple of 90.
        """
        if isinstance(degrees, bool) or not isinstance(degrees, int) or degrees % 90:
            raise InvalidInputError(f"rotation must be a multiple of 90 degrees, not {degrees!r}")
        return cls(degrees % 360)

    @classmethod
    def from_ffmpeg_display_rotation(cls, degrees_ccw: float) -> Rotation:
        """From ``av_display_rotation_get`` (counter-clockwise degrees of the display matrix).

        FFmpeg's command line turns that angle ``theta`` into a clockwise rotation of ``-theta``
        (``get_rotation`` in fftools); so does this. NaN (no matrix) is NONE.

        Raises:
            InvalidInputError: the angle is more than one degree away from a multiple of 90.
        """
        if math.isnan(degrees_ccw):
            return cls.NONE
        clockwise = -float(degrees_ccw)
        quarter = round(clockwise / 90.0)
        if abs(clockwise - quarter * 90.0) > 1.0:
            raise InvalidInputError(
                f"display rotation {degrees_ccw} degrees is not a multiple of 90; "
                "only 0/90/180/270 are supported"
            )
        return cls((quarter * 90) % 360)

    @property
    def swaps_dimensions(self) -> bool:
        """Whether width and height trade places (90 and 270 degrees)."""
        return self in (Rotation.CW90, Rotation.CW270)

    def apply(self, size: Size) -> Size:
        """The size of a ``size`` picture after this rotation."""
        return size.transposed() if self.swaps_dimensions else size

    def then(self, other: Rotation) -> Rotation:
        """This rotation followed by ``other``."""
        return Rotation((self.value + other.value) % 360)

    def inverse(self) -> Rotation:
        """The rotation that undoes this one."""
        return Rotation((-self.value) % 360)


@dataclass(frozen=True)
class FrameMetadata:
    """Timing and geometry of one decoded frame."""

    pts: int | None
    """Presentation timestamp in ``time_base`` units, or None when the decoder gave none."""
    time_base: Fraction | None
    """Seconds per ``pts`` / ``duration`` unit, or None when unknown."""
    duration: int | None
    """Duration in ``time_base`` units, or None when unknown."""
    key_frame: bool
    """Whether the frame is a key frame (decoding can start here)."""
    coded_size: Size
    """Size of the decoded surface, alignment padding included (1920x1088 for 1080p H.264)."""
    display_size: Size
    """Size of the visible picture after cropping, before rotation; fits in ``coded_size``."""
    rotation: Rotation = Rotation.NONE
    """Clockwise rotation to apply before display."""
    mirrored: bool = False
    """Whether the picture is flipped left to right before :attr:`rotation` is applied (a display
    matrix with a mirror: a vertical flip is a mirror and a half turn)."""
    interlaced: bool = False
    """Whether the frame holds two interlaced fields."""
    top_field_first: bool = False
    """For interlaced frames, whether the top field comes first in time; meaningless otherwise."""
    hdr: HdrMetadata | None = None
    """HDR static metadata (mastering display, content light level), or None when the frame has none."""
    sample_aspect: Fraction | None = None
    """The shape of one stored pixel, width : height, where it is not square (anamorphic video: a 16:9
    DVD's 720x480 has 32:27); None: square."""

    def __post_init__(self) -> None:
        if self.sample_aspect is not None and not (
            isinstance(self.sample_aspect, Fraction) and self.sample_aspect > 0
        ):
            raise InvalidInputError(
                f"FrameMetadata.sample_aspect must be a positive Fraction or None, not {self.sample_aspect!r}"
            )
        if self.pts is not None:
            _check_int("FrameMetadata", "pts", self.pts, minimum=None)
        if self.duration is not None:
            _check_int("FrameMetadata", "duration", self.duration)
        if self.time_base is not None:
            if not isinstance(self.time_base, Fraction):
                raise InvalidInputError(f"FrameMetadata.time_base must be a Fraction, not {self.time_base!r}")
            if self.time_base <= 0:
                raise InvalidInputError(f"FrameMetadata.time_base must be positive, not {self.time_base}")
        for name in ("key_frame", "mirrored", "interlaced", "top_field_first"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInputError(f"FrameMetadata.{name} must be a bool, not {getattr(self, name)!r}")
        for name in ("coded_size", "display_size"):
            if not isinstance(getattr(self, name), Size):
                raise InvalidInputError(f"FrameMetadata.{name} must be a Size, not {getattr(self, name)!r}")
        if self.hdr is not None and not isinstance(self.hdr, HdrMetadata):
            raise InvalidInputError(f"FrameMetadata.hdr must be an HdrMetadata or None, not {self.hdr!r}")
        if not isinstance(self.rotation, Rotation):
            raise InvalidInputError(f"FrameMetadata.rotation must be a Rotation, not {self.rotation!r}")
        if not self.coded_size.contains(self.display_size):
            raise InvalidInputError(
                f"display size {self.display_size.width}x{self.display_size.height} does not fit in "
                f"coded size "
                f"{self.coded_size.width}x{self.coded_size.height}"
            )

    @property
    def pts_seconds(self) -> float | None:
        """``pts`` in seconds, or None when pts or time base is unknown."""
        if self.pts is None or self.time_base is None:
            return None
        return float(self.pts * self.time_base)

    @property
    def duration_seconds(self) -> float | None:
        """``duration`` in seconds, or None when duration or time base is unknown."""
        if self.duration is None or self.time_base is None:
            return None
        return float(self.duration * self.time_base)

    @property
    def rotated_size(self) -> Size:
        """Size on screen: ``display_size`` after ``rotation``."""
        return self.rotation.apply(self.display_size)

    @property
    def shown_size(self) -> Size:
        """The picture's shape on screen at its stored height: ``display_size`` with its width scaled by
        :attr:`sample_aspect` (rounded), then turned by ``rotation`` (``rotated_size`` for square pixels)."""
        size = self.display_size
        if self.sample_aspect is not None and self.sample_aspect != 1:
            size = Size(max(1, round(size.width * self.sample_aspect)), size.height)
        return self.rotation.apply(size)
