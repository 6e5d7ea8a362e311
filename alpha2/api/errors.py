"""Every error alpha2 raises, in one place: the vocabulary's (:mod:`alpha2.gpu.errors`), the media
ones the FFmpeg bridge adds (:mod:`alpha2.ffmpeg_bridge.errors`) and the front door's own (reading a
:class:`~alpha2.api.source.VideoSource`: here).

All derive from :class:`Error`, whose ``kind`` (:class:`ErrorKind`) says whether to retry, abort or
reconfigure; most also derive from the matching builtin (``ValueError``, ``MemoryError``,
``TimeoutError``), so ``except ValueError`` catches bad input as Python programs expect.
"""

from __future__ import annotations

from alpha2.ffmpeg_bridge.errors import (
    BridgeError,
    DecodeError,
    EncoderError,
    HwAccelUnavailableError,
    MediaFormatError,
    MediaNotFoundError,
    NoAudioStreamError,
    NoVideoStreamError,
    OutputFormatError,
    UnsupportedCodecError,
)
from alpha2.gpu.errors import (
    BudgetExceededError,
    ClosedError,
    DeviceLostError,
    Error,
    ErrorKind,
    GpuTimeoutError,
    InternalError,
    InvalidHandleError,
    InvalidInputError,
    OutOfMemoryError,
    UnknownFormatError,
    UnsupportedError,
)

__all__ = [
    "BridgeError",
    "BudgetExceededError",
    "ClosedError",
    "ConcurrentIterationError",
    "DecodeError",
    "DeviceLostError",
    "EncoderError",
    "EndOfStreamError",
    "Error",
    "ErrorKind",
    "FrameIndexError",
    "GpuTimeoutError",
    "HwAccelUnavailableError",
    "InternalError",
    "InvalidHandleError",
    "InvalidInputError",
    "MediaFormatError",
    "MediaNotFoundError",
    "NoAudioStreamError",
    "NoVideoStreamError",
    "OutOfMemoryError",
    "OutputFormatError",
    "UnknownFormatError",
    "UnsupportedCodecError",
    "UnsupportedError",
]


class EndOfStreamError(InvalidInputError):
    """No frame is on display at the time asked for: it lies at or past the end of the stream."""


class FrameIndexError(InvalidInputError, IndexError):
    """A frame index outside the stream's frames (``0 .. len(source) - 1``, or ``-len(source) .. -1``)."""


class ConcurrentIterationError(InvalidInputError):
    """Two threads took frames from one :class:`~alpha2.api.source.VideoSource` at once (each would get
    some of them), or wrote to one :class:`~alpha2.api.writer.Writer` at once."""
