"""Where :meth:`DecodeSession.seek <alpha2.ffmpeg_bridge.decode.DecodeSession.seek>` asks the demuxer to go.

A demuxer seek is meant to land on the key frame at or before the target. MPEG-TS and MPEG-PS have no
index: FFmpeg bisects the file by timestamp and often lands after the target, or on no key frame at
all (a TS with one key frame decodes nothing from there), and streams that do not start at 0 (a PS
starts about half a second in) land after their own first frame. So the session tries the positions
of :func:`seek_positions` in turn, each further back, until the first frame decoded from one is at or
before the target (:func:`landed_before`) and, where the :class:`FrameIndex` is built, stamped with a
time it holds (:meth:`FrameIndex.has`: an MPEG-PS demuxer guesses the stamps of pictures that begin
inside a pack, and just after a seek it guesses a neighbour's); the last two are
:func:`rewind_positions`: one second before the stream's start, which most demuxers answer by going
back to the beginning, then the start
itself, for those that refuse a time before it (AVI, GIF, image files: ``EPERM``, where frame 0 was
said to be past the end). It then decodes forward to the target.

The frame on display at a time is the last frame, in presentation order, whose timestamp is at or
before it: the session decodes forward from the key frame, keeps the latest frame at or before the
target and stops at the first one after it (held as the next frame). Packet durations play no part: in
an MP4 with B-frames they are decode-order gaps, not display times, and Matroska may give every frame
the same one. A :class:`FrameIndex` (one pass over the packets, nothing decoded) numbers the frames in
presentation order and says where the key frames are, so that a batch of asks decodes each GOP once.
"""

from __future__ import annotations

import bisect
import fractions
import math
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "SEEK_BACKOFF_SECONDS",
    "FrameIndex",
    "frame_index",
    "landed_before",
    "rewind_positions",
    "seek_positions",
    "target_ticks",
]

SEEK_BACKOFF_SECONDS = (0.0, 1.0, 4.0, 16.0)
"""How far before the target each attempt seeks (then: before the stream's start)."""


TICK_SLACK = fractions.Fraction(1, 1000)
"""A time this close below a tick (in ticks) is that tick: a float's error, as in a frame's own
``pts_seconds`` given back."""


def target_ticks(seconds: float, start: int | None, time_base: fractions.Fraction) -> int:
    """The timestamp ``seconds`` after the stream's start (times count from there), in ``time_base``: the
    tick at or before it, so that the frame on display at ``seconds`` is the one found. (Rounded to the
    nearest, a time past the middle of a coarse tick, as AVI's and GIF's a frame long, found the next
    frame, one not shown yet; and 0.95 s of a 10 fps AVI, "past the end".)"""
    ticks = fractions.Fraction(seconds).limit_denominator(1_000_000) / time_base
    offset = math.floor(ticks + TICK_SLACK)
    return (start or 0) + max(offset, 0)


def rewind_positions(start: int | None, time_base: fractions.Fraction) -> tuple[int, int]:
    """The demuxer positions that go back to a stream's beginning, in order: one second before both
    its start and 0, then its start (for demuxers that refuse a time before it)."""
    first = start or 0
    return min(first, 0) - round(1 / time_base), first


def seek_positions(target: int, start: int | None, time_base: fractions.Fraction) -> tuple[int, ...]:
    """The demuxer positions to try, in order: the target, then further back, then the
    :func:`rewind_positions`.

    Positions at or before the stream's start are left out but for those last two.
    """
    first = start or 0
    positions: list[int] = []
    for back in SEEK_BACKOFF_SECONDS:
        position = target - round(fractions.Fraction(back) / time_base)
        if position <= first:
            break
        positions.append(position)
    return (*positions, *rewind_positions(start, time_base))


def landed_before(first_pts: int | None, target: int, *, corrupt: bool) -> bool:
    """Whether the first frame decoded after a seek lets the session decode forward to ``target``.

    A frame with no timestamp is taken (nothing better can be told); a corrupt one means the seek
    landed away from a key frame, and an earlier position is tried.
    """
    if corrupt:
        return False
    return first_pts is None or first_pts <= target


@dataclass(frozen=True)
class FrameIndex:
    """Every frame's timestamp in presentation order, and the key frames', from one pass over the packets."""

    pts: tuple[int, ...]
    """Each frame's presentation timestamp (stream time base), sorted: item ``i`` is frame ``i`` shown."""
    key_pts: tuple[int, ...]
    """The key frames' timestamps, sorted: where decoding can start."""
    end: int | None
    """When the last frame stops being shown (its timestamp plus its packet's duration), if known."""

    def __len__(self) -> int:
        return len(self.pts)

    def key_at_or_before(self, target: int) -> int | None:
        """The timestamp of the last key frame at or before ``target`` (None: none is)."""
        i = bisect.bisect_right(self.key_pts, target)
        return self.key_pts[i - 1] if i else None

    def has(self, pts: int) -> bool:
        """Whether a frame has timestamp ``pts``."""
        i = bisect.bisect_left(self.pts, pts)
        return i < len(self.pts) and self.pts[i] == pts

    def key_between(self, after: int, upto: int) -> bool:
        """Whether a key frame lies in ``(after, upto]``: decoding on from ``after`` to ``upto`` would
        pass it, so seeking to it skips the frames before it."""
        i = bisect.bisect_right(self.key_pts, after)
        return i < len(self.key_pts) and self.key_pts[i] <= upto


def frame_index(samples: Iterable[tuple[int, bool, int | None]]) -> FrameIndex:
    """The index of ``(pts, is_key, duration)`` samples given in any order (packets come in decode order)."""
    items = sorted(samples, key=lambda sample: sample[0])
    end = None
    if items:
        last_pts, _, last_duration = items[-1]
        end = last_pts + (last_duration or 0)
    return FrameIndex(
        pts=tuple(pts for pts, _, _ in items),
        key_pts=tuple(pts for pts, key, _ in items if key),
        end=end,
    )
