"""Where :meth:`DecodeSession.seek <alpha2.ffmpeg_bridge.decode.DecodeSession.seek>` asks the demuxer to go.

A demuxer seek is meant to land on the key frame at or before the target. MPEG-TS and MPEG-PS have no
index: FFmpeg bisects the file by timestamp and often lands after the target, or on no key frame at
all (a TS with one key frame decodes nothing from there), and streams that do not start at 0 (a PS
starts about half a second in) land after their own first frame. So the session tries the positions
of :func:`seek_positions` in turn, each further back, until the first frame decoded from one is at or
before the target (:func:`landed_before`); the last one lies before the stream's start, which every
demuxer here answers by going back to the beginning. It then decodes forward to the target.
"""

from __future__ import annotations

import fractions

__all__ = ["SEEK_BACKOFF_SECONDS", "landed_before", "seek_positions", "target_ticks"]

SEEK_BACKOFF_SECONDS = (0.0, 1.0, 4.0, 16.0)
"""How far before the target each attempt seeks (then: before the stream's start)."""


def target_ticks(seconds: float, start: int | None, time_base: fractions.Fraction) -> int:
    """The timestamp ``seconds`` after the stream's start (times count from there), in ``time_base``."""
    offset = round(fractions.Fraction(seconds).limit_denominator(1_000_000) / time_base)
    return (start or 0) + max(offset, 0)


def seek_positions(target: int, start: int | None, time_base: fractions.Fraction) -> tuple[int, ...]:
    """The demuxer positions to try, in order: the target, then further back, then before the start.

    Positions at or before the stream's start are left out but for the last, one second before both
    the start and 0.
    """
    first = start or 0
    second = round(1 / time_base)
    positions: list[int] = []
    for back in SEEK_BACKOFF_SECONDS:
        position = target - round(fractions.Fraction(back) / time_base)
        if position <= first:
            break
        positions.append(position)
    positions.append(min(first, 0) - second)
    return tuple(positions)


def landed_before(first_pts: int | None, target: int, *, corrupt: bool) -> bool:
    """Whether the first frame decoded after a seek lets the session decode forward to ``target``.

    A frame with no timestamp is taken (nothing better can be told); a corrupt one means the seek
    landed away from a key frame, and an earlier position is tried.
    """
    if corrupt:
        return False
    return first_pts is None or first_pts <= target
