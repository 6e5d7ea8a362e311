"""What a decode session does with corrupt data, and what it counts (:class:`DecodeStats`).

FFmpeg conceals damage where it can (frame-threaded decoding flags such frames corrupt) and its own
tools show them; :class:`~alpha2.ffmpeg_bridge.decode.DecodeSession` keeps them by default too,
counted, so an application can say how many it passed on.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from alpha2.gpu.errors import InvalidInputError

__all__ = ["CorruptPolicy", "DecodeStats"]


class CorruptPolicy(enum.Enum):
    """What a session does with corrupt data met mid-stream."""

    KEEP = "keep"
    """Hand out frames the decoder flags corrupt (concealed, as FFmpeg's own tools show them), counted in
    :class:`DecodeStats`; packets that do not decode at all are skipped and counted."""
    SKIP = "skip"
    """Drop the corrupt packet or frame, count it in :class:`DecodeStats`, go on."""
    STOP = "stop"
    """Raise :class:`~alpha2.ffmpeg_bridge.errors.DecodeError`."""

    @classmethod
    def parse(cls, value: CorruptPolicy | str) -> CorruptPolicy:
        """Accept the enum or ``'keep'`` / ``'skip'`` / ``'stop'``."""
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise InvalidInputError(f"on_corrupt must be 'keep', 'skip' or 'stop', got {value!r}") from None


@dataclass(frozen=True)
class DecodeStats:
    """Counters of a decode session."""

    frames_out: int = 0
    """Frames handed to the application."""
    frames_on_gpu: int = 0
    """Of those, frames whose planes are CUDA memory."""
    corrupt_frames_skipped: int = 0
    """Frames the decoder flagged corrupt and the session dropped (on_corrupt='skip')."""
    corrupt_frames_kept: int = 0
    """Frames the decoder flagged corrupt (concealed) and the session handed out (on_corrupt='keep')."""
    decode_errors: int = 0
    """Packets (or demuxer reads) that failed and were skipped (on_corrupt='keep' or 'skip')."""
    frames_discarded_for_seek: int = 0
    """Frames decoded and dropped to reach a seek target."""
    converted_frames: int = 0
    """Software frames converted (copied) because alpha2 has no PixelFormat for the decoder's output."""
    converted: str = ""
    """What those frames were converted from and to (``"yuva444p12le -> yuv444p12le"``); "" when none."""
    generation: int = 0
    """The decoder generation of the most recent frame."""
    truncated: bool = False
    """The stream ended well before the duration its container announced (also counted in decode_errors)."""
    untimed: bool = False
    """The stream's frames carry no timestamps (a raw elementary stream: .h264, .hevc): the session
    timed them one after the other from the stream's start, each its duration after the last (the
    packets', else the frame rate's), as FFmpeg's command line does."""
