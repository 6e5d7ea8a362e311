"""Strictly increasing output timestamps from input timestamps that repeat, go backwards or reset.

Real files carry all three: duplicate pts from a coarse encoder clock, swapped Matroska clusters, an
MP4 whose sample durations are all zero, MPEG-TS files concatenated with a clock reset. FFmpeg decodes
every one of them; muxers refuse the timestamps as they are. :class:`TimestampFixer` makes them
strictly increasing with the smallest change, and counts what it changed by kind:

* a duplicate, or a timestamp slightly behind the last one (a reordered frame or packet), is nudged to
  one tick after the last output timestamp; later timestamps are not moved;
* a jump back by more than :data:`REORDER_STEPS` frame steps (a reset or a swapped block) rebases the
  rest of the timeline so that it continues one step after the last output timestamp;
* a missing timestamp becomes one step after the last;
* with a ``jump_limit``, a jump forward by more than that (a discontinuity: FLV extended timestamps, a
  huge Matroska cluster time, an fMP4 ``tfdt``) rebases the rest of the timeline to continue one step
  after the last output timestamp, as FFmpeg's ``-dts_delta_threshold`` does; the limit in seconds is
  :func:`jump_seconds`.

With ``drop_behind=True`` (audio packets, whose samples would overlap those already written) the
nudged cases are dropped instead, and counted as such.
"""

from __future__ import annotations

import collections
import enum
from dataclasses import dataclass, fields, replace

__all__ = [
    "JUMP_SECONDS",
    "JUMP_SECONDS_DISCONTINUOUS",
    "REORDER_STEPS",
    "TimestampAdjustments",
    "TimestampFixer",
    "TimestampKind",
    "jump_seconds",
]

REORDER_STEPS = 2
"""A timestamp at most this many frame steps behind the last one is a reordering, nudged; further
behind is a jump, rebased."""

JUMP_SECONDS_DISCONTINUOUS = 10.0
"""A forward jump longer than this is a discontinuity in formats whose clock may jump (MPEG-TS, FLV:
FFmpeg's ``AVFMT_TS_DISCONT``), as FFmpeg's ``-dts_delta_threshold`` has it."""

JUMP_SECONDS = 3600.0
"""A forward jump longer than this is a discontinuity in other formats (no real pause is an hour long
between two frames; an MP4 track cannot hold a gap of 2**31 ticks, 6.6 hours at 90 kHz)."""

JUMP_STEPS = 100
"""A forward jump is never a discontinuity when it is at most this many frame steps (slow VFR clips)."""


def jump_seconds(discontinuous_format: bool) -> float:
    """The forward jump, in seconds, beyond which a timestamp is a discontinuity and re-timed."""
    return JUMP_SECONDS_DISCONTINUOUS if discontinuous_format else JUMP_SECONDS


class TimestampKind(enum.Enum):
    """What happened to one timestamp."""

    KEPT = "kept"
    """Already after the last one (after the current rebase): unchanged but for that rebase."""
    DUPLICATE = "duplicate"
    """Equal to the last one (in or out): nudged one tick after the last output."""
    REORDERED = "reordered"
    """Slightly behind the last one: nudged to one tick after it."""
    BACKWARD = "backward"
    """Jumped back further: the timeline was rebased to continue one step after the last one."""
    RESET = "reset"
    """Jumped back to the timeline's start (a clock reset, concatenated files): rebased likewise."""
    MISSING = "missing"
    """No timestamp: one step after the last one."""
    JUMP = "jump"
    """Jumped forward beyond the jump limit (a discontinuity): rebased to one step after the last one."""
    DROPPED = "dropped"
    """Duplicate or behind with ``drop_behind``: the packet is dropped."""


@dataclass(frozen=True)
class TimestampAdjustments:
    """How many timestamps a :class:`TimestampFixer` changed, by kind."""

    duplicate: int = 0
    """Duplicates nudged one tick."""
    reordered: int = 0
    """Timestamps slightly behind the last one, nudged after it."""
    backward: int = 0
    """Backward jumps rebased."""
    reset: int = 0
    """Resets to the timeline's start rebased."""
    missing: int = 0
    """Missing timestamps filled in."""
    dropped: int = 0
    """Packets dropped for a timestamp behind the last one (``drop_behind``)."""
    jump: int = 0
    """Forward jumps beyond the jump limit (discontinuities) rebased."""

    @property
    def total(self) -> int:
        """All timestamps changed or dropped."""
        return sum(getattr(self, f.name) for f in fields(self))

    def as_dict(self) -> dict[str, int]:
        """The non-zero counts by kind (empty when nothing changed)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}

    def summary(self) -> str:
        """``'3 (2 duplicate, 1 reset)'``, or ``'none'``."""
        if not self.total:
            return "none"
        return f"{self.total} (" + ", ".join(f"{n} {k}" for k, n in self.as_dict().items()) + ")"

    def __add__(self, other: TimestampAdjustments) -> TimestampAdjustments:
        """The counts of two fixers together (several copied streams)."""
        return TimestampAdjustments(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )


class TimestampFixer:
    """Turn a sequence of timestamps (one time base) into a strictly increasing one.

    Args:
        drop_behind: Drop (return None for) duplicates and timestamps slightly behind instead of
            nudging them; jumps and resets are still rebased.
        jump_limit: A forward jump by more than this many units (and more than :data:`JUMP_STEPS`
            frame steps) is a discontinuity, rebased; None: forward jumps are kept.
        shift: Subtracted from every timestamp (the output starts at zero: the first packet's time
            across the kept streams, in these units).
        keep_equal: A timestamp equal to the last one is kept as it is (a muxer that takes equal decode
            times: Matroska's, whose milliseconds make TrueHD's 0.83 ms frames share them), not dropped
            or nudged.
    """

    def __init__(
        self,
        *,
        drop_behind: bool = False,
        jump_limit: int | None = None,
        shift: int = 0,
        keep_equal: bool = False,
    ) -> None:
        if jump_limit is not None and jump_limit <= 0:
            raise ValueError(f"jump_limit must be positive, got {jump_limit}")
        self._keep_equal = keep_equal
        self._drop_behind = drop_behind
        self._jump_limit = jump_limit
        self._offset = -shift
        self._first: int | None = None
        self._last_in: int | None = None
        self._last_out: int | None = None
        self._steps: collections.deque[int] = collections.deque(maxlen=8)
        self._counts = TimestampAdjustments()

    @property
    def adjustments(self) -> TimestampAdjustments:
        """What was changed so far, by kind."""
        return self._counts

    @property
    def offset(self) -> int:
        """What is now added to incoming timestamps: minus the shift, plus the rebases of backward
        jumps, resets and discontinuities."""
        return self._offset

    def _count(self, kind: TimestampKind) -> None:
        name = kind.value
        self._counts = replace(self._counts, **{name: getattr(self._counts, name) + 1})

    def fix(self, pts: int | None, duration: int | None = None) -> int | None:
        """The output timestamp for ``pts`` (None: dropped, only with ``drop_behind``).

        Args:
            pts: The input timestamp, or None when it has none.
            duration: The frame's or packet's duration in the same units, when known: the step a
                rebased or filled-in timestamp follows the last one by.
        """
        return self.classify(pts, duration)[0]

    def classify(self, pts: int | None, duration: int | None = None) -> tuple[int | None, TimestampKind]:
        """Like :meth:`fix`, with what was done."""
        if duration is not None and duration > 0:
            step = duration
        else:
            # The smallest recent step: one forward gap (a swapped block) does not make it a second.
            step = min(self._steps) if self._steps else 1
        last = self._last_out
        if pts is None:
            out = 0 if last is None else last + step
            self._count(TimestampKind.MISSING)
            self._last_out = out
            return out, TimestampKind.MISSING
        if self._first is None:
            self._first = pts
        repeated = pts == self._last_in
        gap = None if self._last_in is None else pts - self._last_in
        jumped = (
            self._jump_limit is not None
            and last is not None
            and gap is not None
            and gap > max(self._jump_limit, JUMP_STEPS * step)
        )
        if gap is not None and gap > 0 and not jumped:
            self._steps.append(gap)  # the input's own frame step, for later rebases
        self._last_in = pts
        out = pts + self._offset
        kind = TimestampKind.KEPT
        if jumped:
            assert last is not None
            self._offset += last + step - out
            out = last + step
            kind = TimestampKind.JUMP
            self._count(kind)
        elif last is not None and out == last and self._keep_equal:
            pass  # the muxer takes it: kept, not an adjustment
        elif last is not None and out <= last:
            behind = last - out
            if behind <= REORDER_STEPS * step:
                kind = TimestampKind.DUPLICATE if behind == 0 or repeated else TimestampKind.REORDERED
                if self._drop_behind:
                    self._count(TimestampKind.DROPPED)
                    return None, TimestampKind.DROPPED
                out = last + 1
            else:
                kind = TimestampKind.RESET if pts <= self._first + step else TimestampKind.BACKWARD
                self._offset += last + step - out
                out = last + step
            self._count(kind)
        self._last_out = out
        return out, kind
