"""Every error alpha2 raises, in one place: the vocabulary's (:mod:`alpha2.gpu.errors`) and the media
ones the FFmpeg bridge adds (:mod:`alpha2.ffmpeg_bridge.errors`).

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
    "DecodeError",
    "DeviceLostError",
    "EncoderError",
    "Error",
    "ErrorKind",
    "GpuTimeoutError",
    "HwAccelUnavailableError",
    "InternalError",
    "InvalidHandleError",
    "InvalidInputError",
    "MediaFormatError",
    "MediaNotFoundError",
    "NoVideoStreamError",
    "OutOfMemoryError",
    "OutputFormatError",
    "UnknownFormatError",
    "UnsupportedCodecError",
    "UnsupportedError",
]
