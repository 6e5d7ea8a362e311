"""``--fps RATE``: the output at a constant frame rate, as FFmpeg's ``fps`` filter (``round=near``) makes it.

The rule, on output seconds (counted from the output's start): a frame starting at ``s`` lands on slot
``round(s * R)`` (halves away from zero, as ``av_rescale_q_rnd``'s ``AV_ROUND_NEAR_INF``); each frame
fills the slots from the first one not yet filled up to the next frame's slot (none: it is dropped, a
later frame landing on the same slot; more than one: it is repeated across a gap), and the last frame
fills up to ``round(end * R)``, so that the output keeps the input's length. Slot ``n`` is written at
pts ``n`` on a clock of ``1 / R``. One frame of look-ahead decides how many slots a frame fills.

:func:`parse_rate` reads a rate as FFmpeg's ``av_parse_video_rate`` reads ``-r``: ``30``, ``29.97`` (as
2997/100, exactly), ``30000/1001``, or a name (``ntsc``, ``film``, ``pal`` ...).
"""

from __future__ import annotations

import fractions
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.frames import DecodedFrame

__all__ = [
    "RATE_NAMES",
    "FrameRateCounts",
    "RateFrames",
    "RateSlots",
    "parse_rate",
    "rate_text",
    "slot_counts",
]

RATE_NAMES: dict[str, fractions.Fraction] = {
    "ntsc": fractions.Fraction(30000, 1001),
    "pal": fractions.Fraction(25),
    "qntsc": fractions.Fraction(30000, 1001),
    "qpal": fractions.Fraction(25),
    "sntsc": fractions.Fraction(30000, 1001),
    "spal": fractions.Fraction(25),
    "film": fractions.Fraction(24),
    "ntsc-film": fractions.Fraction(24000, 1001),
}
"""The rates FFmpeg's ``av_parse_video_rate`` takes by name."""

MAX_RATE = 1000
"""The fastest rate taken (frames per second)."""
MAX_DENOMINATOR = 1_000_000
"""The largest denominator of a rate taken (the output's clock is ``1 / rate``, a C integer pair)."""


def parse_rate(value: object, name: str = "fps") -> fractions.Fraction:
    """A frame rate, exactly: a number (``30``, ``29.97`` read as 2997/100), a ratio (``"30000/1001"``), a
    name of :data:`RATE_NAMES` or a Fraction.

    Raises:
        InvalidInputError: not a rate, or not more than 0 and at most :data:`MAX_RATE`.
    """
    allowed = f"a number (30, 29.97), a ratio (30000/1001) or a name ({', '.join(RATE_NAMES)})"
    rate: fractions.Fraction
    if isinstance(value, bool) or not isinstance(value, str | int | float | fractions.Fraction):
        raise InvalidInputError(
            f"{name} must be a frame rate: {allowed}, got {type(value).__name__} {value!r}"
        )
    if isinstance(value, str):
        text = value.strip().lower()
        if text in RATE_NAMES:
            return RATE_NAMES[text]
        try:
            if text.count("/") == 1:
                top, bottom = (fractions.Fraction(part.strip()) for part in text.split("/"))
                rate = top / bottom
            else:
                rate = fractions.Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise InvalidInputError(f"{name} must be a frame rate: {allowed}, got {value!r}") from None
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{name} must be a frame rate: {allowed}, got {value!r}")
        rate = fractions.Fraction(repr(value))  # 29.97 as 2997/100, as it reads, not the binary double
    else:
        rate = fractions.Fraction(value)
    if not 0 < rate <= MAX_RATE:
        raise InvalidInputError(
            f"{name} must be more than 0 and at most {MAX_RATE} frames per second, got {value!r}"
        )
    if rate.denominator > MAX_DENOMINATOR:
        raise InvalidInputError(
            f"{name} {value!r} is too fine a rate: give it with a denominator of at most {MAX_DENOMINATOR} "
            "(30000/1001, 29.97)"
        )
    return rate


def rate_text(rate: fractions.Fraction | float) -> str:
    """``30``, ``29.97``, ``23.976``: a rate in words, as ffmpeg prints one."""
    return f"{float(rate):.3f}".rstrip("0").rstrip(".")


def near(value: fractions.Fraction) -> int:
    """``value`` rounded to the nearest whole number, halves away from zero (FFmpeg's ``round=near``)."""
    whole = math.floor(abs(value) + fractions.Fraction(1, 2))
    return whole if value >= 0 else -whole


class RateSlots:
    """The rule, one frame at a time: :meth:`place` takes each frame's start (output seconds, None: it
    has none) and returns how many slots the frame before it fills; :meth:`finish` the last frame's."""

    def __init__(self, rate: fractions.Fraction) -> None:
        self.rate = rate
        self.next_slot: int | None = None
        """The first slot not yet filled (None before the first frame)."""
        self.dropped = 0
        """Frames that fill no slot."""
        self.repeated = 0
        """Slots filled by a frame a second time or more."""

    def place(self, seconds: fractions.Fraction | None) -> int:
        """Take the next frame's start; returns the slots the frame before it fills (0 for the first)."""
        slot = self.next_slot if seconds is None else near(seconds * self.rate)
        if self.next_slot is None:
            self.next_slot = max(0, slot or 0)  # the output starts at its first frame
            return 0
        assert slot is not None
        return self._fill(slot)

    def finish(self, end_seconds: fractions.Fraction | None, at_least_one: bool) -> int:
        """The slots the last frame fills: up to ``round(end_seconds * R)`` (None: one slot), at least one
        where ``at_least_one`` (nothing was written yet: an output has a frame)."""
        assert self.next_slot is not None
        end = self.next_slot + 1 if end_seconds is None else near(end_seconds * self.rate)
        if at_least_one:
            end = max(end, self.next_slot + 1)
        return self._fill(end)

    def _fill(self, upto: int) -> int:
        assert self.next_slot is not None
        count = max(0, upto - self.next_slot)
        if count == 0:
            self.dropped += 1
        else:
            self.repeated += count - 1
            self.next_slot = upto
        return count


def slot_counts(
    starts: Sequence[fractions.Fraction], end: fractions.Fraction | None, rate: fractions.Fraction
) -> list[int]:
    """How many output slots each frame of ``starts`` (output seconds) fills, the last up to ``end``."""
    slots = RateSlots(rate)
    counts = [slots.place(s) for s in starts][1:]
    counts.append(slots.finish(end, at_least_one=not any(counts)))
    return counts


@dataclass
class FrameRateCounts:
    """What ``--fps`` did (``TranscodeStats.frame_rate``)."""

    input_rate: fractions.Fraction | None
    """The input's average frame rate (None: its container gives none)."""
    rate: fractions.Fraction
    """The output's."""
    dropped: int = 0
    """Input frames left out (two landing on one output slot)."""
    repeated: int = 0
    """Output frames that repeat the one before (the input's frames further apart than a slot)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the rates as numbers and exact ratios."""
        given = self.input_rate
        return {
            "input_fps": None if given is None else round(float(given), 6),
            "input_rate": None if given is None else f"{given.numerator}/{given.denominator}",
            "fps": round(float(self.rate), 6),
            "rate": f"{self.rate.numerator}/{self.rate.denominator}",
            "dropped": self.dropped,
            "repeated": self.repeated,
        }

    def summary(self) -> str:
        """``59.94 -> 30 fps: 60 dropped, 0 repeated`` (the summary's ``rate`` line)."""
        given = "?" if self.input_rate is None else rate_text(self.input_rate)
        return f"{given} -> {rate_text(self.rate)} fps: {self.dropped} dropped, {self.repeated} repeated"


class RateFrames:
    """The decoder's frames (through ``next_frame``), each with the output slots it fills: frames that
    fill none are released here and never handed out.

    ``seconds`` gives a frame's start in output seconds (None: it has none); ``length`` its length in
    output seconds (None: unknown); ``end`` the output time the frames were cut at, once ``next_frame``
    has run out (None: not cut). ``limit`` caps the slots handed out (``--frames``).
    """

    def __init__(
        self,
        rate: fractions.Fraction,
        next_frame: Callable[[], DecodedFrame | None],
        seconds: Callable[[DecodedFrame], fractions.Fraction | None],
        length: Callable[[DecodedFrame], fractions.Fraction | None],
        end: Callable[[], fractions.Fraction | None],
        limit: int | None,
        counts: FrameRateCounts,
    ) -> None:
        self._slots = RateSlots(rate)
        self._next, self._seconds, self._length, self._end = next_frame, seconds, length, end
        self._limit = limit
        self.counts = counts
        self._held: DecodedFrame | None = None
        self._held_end: fractions.Fraction | None = None  # the held frame's end (output seconds)
        self.handed = 0
        """Slots handed out so far."""
        self.limited = False
        """Whether ``limit`` ended the frames."""
        self.pts: range = range(0)
        """The slots (the output pts, on the ``1 / rate`` clock) of the frame last handed out."""

    def next_frame(self) -> DecodedFrame | None:
        """The next frame that fills a slot (:attr:`pts` says which), or None at the end."""
        while self._held is not None:
            held, first = self._held, self._slots.next_slot
            if self._limit is not None and self.handed >= self._limit:
                self.limited = True
                self._release_held()
                return None
            following = self._next()
            if following is None:
                count = self._slots.finish(self._last_end(), at_least_one=self.handed == 0)
                self._held = None
            else:
                count = self._slots.place(self._seconds(following))
                self._hold(following)
            self._count()
            if count == 0:
                held.release()
                continue
            assert first is not None
            if self._limit is not None and count > self._limit - self.handed:
                self._slots.repeated -= count - (self._limit - self.handed)  # repeats past the limit: none
                count = self._limit - self.handed
            self.pts = range(first, first + count)
            self.handed += count
            self._count()
            return held
        return None

    def begin(self, first: DecodedFrame) -> DecodedFrame | None:
        """Take the first frame (decoded before the loop) and hand out the first that fills a slot."""
        self._slots.place(self._seconds(first))
        self._hold(first)
        return self.next_frame()

    def close(self) -> None:
        """Let go of the frame held ahead (a run that ends early, or fails)."""
        self._release_held()

    def _hold(self, frame: DecodedFrame) -> None:
        self._held = frame
        start, length = self._seconds(frame), self._length(frame)
        self._held_end = None if start is None or length is None else start + length

    def _last_end(self) -> fractions.Fraction | None:
        cut = self._end()
        return cut if cut is not None else self._held_end

    def _release_held(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.release()

    def _count(self) -> None:
        self.counts.dropped, self.counts.repeated = self._slots.dropped, self._slots.repeated
