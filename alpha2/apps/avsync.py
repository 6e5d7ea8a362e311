"""A/V scheduling for the player, pure logic: when a frame is due, what is dropped or late, offset stats.

The media clock (sound when there is sound) is the master. Draws come at the display's refresh; a frame
is due at the draw nearest to its pts (``pts <= now + refresh / 2``), so it is never shown more than half
a refresh early. When several frames are due at one draw, all but the newest are dropped and counted; a
shown frame whose offset (clock at presentation minus pts) exceeds one refresh missed its draw and is
counted late. An early frame waits. Offsets are kept per segment (start, after each seek, after each
resume) so sync can be checked after a seek or a pause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_REFRESH_S", "AVScheduler", "OffsetStats"]

DEFAULT_REFRESH_S = 1 / 60
"""Refresh interval assumed until draws have been timed."""
_REFRESH_BOUNDS_S = (1 / 360, 1 / 20)
"""Draw intervals outside this range (a stall, a burst) do not move the refresh estimate."""


@dataclass
class OffsetStats:
    """A/V offsets (clock at presentation minus pts) of the frames shown in one stretch."""

    label: str
    """What began the stretch: ``start``, ``seek`` or ``resume``."""
    count: int = 0
    """Frames shown."""
    sum_abs: float = 0.0
    """Sum of |offset|, seconds."""
    sum: float = 0.0
    """Sum of offsets, seconds (the sign says video behind (+) or ahead (-))."""
    max_abs: float = 0.0
    """Largest |offset|, seconds."""

    def add(self, offset: float) -> None:
        self.count += 1
        self.sum += offset
        self.sum_abs += abs(offset)
        self.max_abs = max(self.max_abs, abs(offset))

    @property
    def mean_abs(self) -> float:
        """Mean |offset|, seconds."""
        return self.sum_abs / self.count if self.count else 0.0

    @property
    def mean(self) -> float:
        """Mean signed offset, seconds."""
        return self.sum / self.count if self.count else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "frames": self.count,
            "mean_abs_ms": round(self.mean_abs * 1000, 3),
            "mean_ms": round(self.mean * 1000, 3),
            "max_abs_ms": round(self.max_abs * 1000, 3),
        }


@dataclass
class AVScheduler:
    """Decides, at each draw, which decoded frame to show against the media clock; counts what happened."""

    refresh_s: float = DEFAULT_REFRESH_S
    """Current estimate of the display's refresh interval."""
    speed: float = 1.0
    """Media seconds per second (``[`` / ``]``): a refresh spans ``refresh_s * speed`` of the media."""
    last_offset: float | None = None
    """The offset of the frame shown last, seconds."""
    shown: int = 0
    """Frames presented."""
    dropped: int = 0
    """Frames decoded but never shown (a newer one was due at the same draw)."""
    late: int = 0
    """Frames shown more than one refresh after their pts."""
    total: OffsetStats = field(default_factory=lambda: OffsetStats("all"))
    """Offsets of every frame shown."""
    segments: list[OffsetStats] = field(default_factory=lambda: [OffsetStats("start")])
    """Offsets per stretch of playback."""
    _last_draw: float | None = None

    def on_draw(self, wall_s: float) -> None:
        """A draw (a refresh) began at ``wall_s``: refine the refresh estimate from the interval."""
        if self._last_draw is not None:
            interval = wall_s - self._last_draw
            low, high = _REFRESH_BOUNDS_S
            if low <= interval <= high:
                self.refresh_s += 0.1 * (interval - self.refresh_s)
        self._last_draw = wall_s

    def is_due(self, pts_s: float, now_s: float) -> bool:
        """Whether a frame at ``pts_s`` belongs on this draw (it is nearer now than the next refresh)."""
        return pts_s <= now_s + self.refresh_s * self.speed / 2

    def drop(self) -> None:
        """A due frame was passed over for a newer due one."""
        self.dropped += 1

    def presented(self, pts_s: float, now_s: float) -> float:
        """A frame at ``pts_s`` was shown when the clock read ``now_s``; returns its offset (seconds)."""
        offset = now_s - pts_s
        self.shown += 1
        self.last_offset = offset
        if offset > self.refresh_s * self.speed:
            self.late += 1
        self.total.add(offset)
        self.segments[-1].add(offset)
        return offset

    def mark(self, label: str) -> None:
        """A new stretch begins (a seek, a resume, a speed change): its offsets are kept apart."""
        self._last_draw = None
        if self.segments[-1].count == 0:
            self.segments[-1] = OffsetStats(label)
        else:
            self.segments.append(OffsetStats(label))

    def as_dict(self) -> dict[str, Any]:
        return {
            "shown": self.shown,
            "dropped": self.dropped,
            "late": self.late,
            "refresh_hz": round(1 / self.refresh_s, 2),
            "offset_mean_abs_ms": round(self.total.mean_abs * 1000, 3),
            "offset_mean_ms": round(self.total.mean * 1000, 3),
            "offset_max_abs_ms": round(self.total.max_abs * 1000, 3),
            "segments": [s.as_dict() for s in self.segments],
        }
