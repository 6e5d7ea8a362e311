"""Typed errors for media input and output, carrying FFmpeg's own message and error code.

Every class derives from an :mod:`alpha2.gpu.errors` class (so ``.kind`` says retry / abort /
reconfigure) and from :class:`BridgeError`, which holds ``ffmpeg_errno`` and ``ffmpeg_message`` when
FFmpeg produced the failure. :func:`from_ffmpeg` is the one place that maps PyAV's exceptions onto them.
"""

from __future__ import annotations

import errno as _errno
from typing import Any

import av.error

from alpha2.gpu.errors import Error, ErrorKind, InternalError, InvalidInputError, UnsupportedError

__all__ = [
    "BridgeError",
    "DecodeError",
    "EncoderError",
    "HwAccelUnavailableError",
    "MediaFormatError",
    "MediaNotFoundError",
    "NoAudioStreamError",
    "NoVideoStreamError",
    "OutputFormatError",
    "UnsupportedCodecError",
    "from_ffmpeg",
]


class BridgeError(Error):
    """An error of the FFmpeg bridge; carries FFmpeg's errno and message when FFmpeg raised it."""

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind | None = None,
        ffmpeg_errno: int | None = None,
        ffmpeg_message: str | None = None,
    ) -> None:
        super().__init__(message, kind=kind)
        self.ffmpeg_errno = ffmpeg_errno
        """FFmpeg's error code (a negative AVERROR, as PyAV reports it), or None."""
        self.ffmpeg_message = ffmpeg_message
        """FFmpeg's error text (``av_strerror``), or None."""


class MediaNotFoundError(BridgeError, InvalidInputError):
    """The media file does not exist (or cannot be opened for lack of permission)."""


class MediaFormatError(BridgeError, InvalidInputError):
    """The input is not a readable media container: garbage, truncated or an unknown format."""


class NoVideoStreamError(BridgeError, InvalidInputError):
    """The container has no video stream (or not the one asked for)."""


class OutputFormatError(BridgeError, InvalidInputError):
    """The output's name says no container alpha2 writes (a usage error: the command line exits 2)."""


class UnsupportedCodecError(BridgeError, UnsupportedError):
    """No decoder or encoder for the codec in this FFmpeg build, or the codec cannot do what was asked."""


class HwAccelUnavailableError(BridgeError, UnsupportedError):
    """A hardware decoder or device was asked for explicitly and cannot be had here."""


class DecodeError(BridgeError, InvalidInputError):
    """Corrupt data met while decoding (with ``on_corrupt='stop'``), or a decoder failure mid-stream."""


class EncoderError(BridgeError, InternalError):
    """Encoding or muxing failed; the partial output was removed."""


def _ffmpeg_fields(exc: BaseException) -> tuple[int | None, str | None]:
    if isinstance(exc, av.error.FFmpegError):
        return exc.errno, exc.strerror
    return None, str(exc) or type(exc).__name__


def from_ffmpeg(exc: BaseException, context: str, cls: type[BridgeError] | None = None) -> BridgeError:
    """Turn a PyAV / FFmpeg exception into the matching typed alpha2 error.

    Args:
        exc: What PyAV raised.
        context: What was being done, e.g. ``"opening 'clip.mp4'"``; leads the message.
        cls: Force this error class instead of choosing one from the exception.
    """
    code, text = _ffmpeg_fields(exc)
    if cls is None:
        cls = _classify(exc)
    message = f"{context}: {text}" if text else context
    kwargs: dict[str, Any] = {"ffmpeg_errno": code, "ffmpeg_message": text}
    return cls(message, **kwargs)


_HEADER_ERRNOS = frozenset({_errno.EBUSY, _errno.EINVAL, _errno.EPERM, _errno.ERANGE, _errno.EDOM})
"""Error codes FFmpeg's demuxers return for a header they cannot read (the Y4M demuxer's EBUSY for a
size of 0, EINVAL for a bad field), whose strerror text ("Device or resource busy") says nothing of it."""


_ISO_BOXES = frozenset({b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide", b"pnot", b"uuid"})


def _iso_boxes(path: str, size: int) -> tuple[list[bytes], tuple[int, int] | None] | None:
    """The top-level box kinds of an MP4 / MOV, and its 'moov' box's offset and declared length (None:
    none); None when the file does not start as one."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8 or head[4:8] not in _ISO_BOXES:
            return None
        offset = 0
        seen: list[bytes] = []
        moov: tuple[int, int] | None = None
        while offset + 8 <= size and len(seen) < 4096:  # the top-level boxes only
            f.seek(offset)
            box = f.read(16)
            if len(box) < 8:
                break
            length, kind = int.from_bytes(box[:4], "big"), box[4:8]
            seen.append(kind)
            if length == 1 and len(box) == 16:
                length = int.from_bytes(box[8:16], "big")
            elif length == 0:
                length = size - offset  # to the end of the file
            if length < 8:
                break
            if kind == b"moov" and moov is None:
                moov = (offset, length)
            offset += length
    return seen, moov


def _why_unreadable(path: object, *, opened: bool = False) -> str | None:
    """What the file itself shows of why FFmpeg could not open it (FFmpeg says only 'Invalid data'):
    empty, or an MP4 / MOV whose 'moov' index is missing (cut before its end was written) or cut short
    (the file ends inside it); None when it shows nothing, or is no local file.

    Args:
        opened: FFmpeg opened the file (and found no usable stream in it): only an index cut short is
            said (a 'faststart' MP4, its index first, cut inside the index opens, with broken streams).
    """
    import os

    if not isinstance(path, str):
        return None
    try:
        size = os.path.getsize(path)
        if size == 0:
            return None if opened else "the file is empty (0 bytes)"
        boxes = _iso_boxes(path, size)
    except OSError:
        return None
    if boxes is None:
        return None
    seen, moov = boxes
    if moov is not None:
        start, length = moov
        if start + length <= size:
            return None
        return (
            f"an MP4 / MOV cut short inside its 'moov' index: the file ends {size - start} bytes into the "
            f"index's {length}, as a copy or download stopped short leaves it"
        )
    if opened:
        return None
    where = " (its media data is there)" if b"mdat" in seen else ""
    return (
        "an MP4 / MOV without its 'moov' index: the file ends before its index was written, as a "
        f"recording stopped short leaves it{where}"
    )


def index_cut_short(path: object) -> str | None:
    """Why a local MP4 / MOV that opened has no usable video stream where its 'moov' index is cut short
    (a 'faststart' file, its index first, cut inside it), or None."""
    return _why_unreadable(path, opened=True)


def _is_file(path: object) -> bool:
    import os

    return isinstance(path, str) and os.path.isfile(path)


def from_ffmpeg_open(exc: BaseException, where: str) -> BridgeError:
    """:func:`from_ffmpeg` for a container that did not open: a header FFmpeg refused with an error code
    borrowed from the system says so, with that code's text after it, instead of the code's text alone;
    an empty file or an MP4 without its index says that (FFmpeg: 'Invalid data found when processing
    input').
    """
    if isinstance(exc, av.error.FFmpegError) and not isinstance(
        exc, FileNotFoundError | PermissionError | IsADirectoryError
    ):
        why = _why_unreadable(getattr(exc, "filename", None))
        if why is not None:
            code, text = _ffmpeg_fields(exc)
            return MediaFormatError(f"opening {where}: {why}", ffmpeg_errno=code, ffmpeg_message=text)
    errno = getattr(exc, "errno", None)
    if isinstance(exc, av.error.EOFError | av.error.OSError) and _is_file(getattr(exc, "filename", None)):
        if isinstance(exc, av.error.EOFError) or errno == _errno.EIO:
            # Matroska's header cut short: FFmpeg said 'End of file' or 'Input/output error' alone,
            # which read as a fault of the disk's or of alpha2's.
            code, text = _ffmpeg_fields(exc)
            return MediaFormatError(
                f"opening {where}: FFmpeg could not read the container's header (it answered {text!r}): "
                "the file ends or is damaged inside it, as a copy or download stopped short leaves it",
                ffmpeg_errno=code,
                ffmpeg_message=text,
            )
    if (
        isinstance(exc, av.error.FFmpegError)
        and not isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError)
        and errno is not None
        and abs(errno) in _HEADER_ERRNOS
    ):
        code, text = _ffmpeg_fields(exc)
        return MediaFormatError(
            f"opening {where}: FFmpeg could not read the container's header (it answered "
            f"{text or errno!r}): the file is damaged, or not the format its name or first bytes say",
            ffmpeg_errno=code,
            ffmpeg_message=text,
        )
    if isinstance(exc, av.error.InvalidDataError):
        # FFmpeg's 'Invalid data found when processing input' alone read as a fault of alpha2's.
        code, text = _ffmpeg_fields(exc)
        return MediaFormatError(
            f"opening {where}: no media FFmpeg can read (it answered {text or 'invalid data'!r}): not a "
            "video or sound file, or damaged from its start",
            ffmpeg_errno=code,
            ffmpeg_message=text,
        )
    return from_ffmpeg(exc, f"opening {where}")


def _classify(exc: BaseException) -> type[BridgeError]:
    if isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError):
        return MediaNotFoundError
    if isinstance(exc, av.error.DecoderNotFoundError | av.error.EncoderNotFoundError):
        return UnsupportedCodecError
    if isinstance(exc, av.error.PatchWelcomeError):
        return UnsupportedCodecError
    if isinstance(exc, av.error.InvalidDataError | av.error.EOFError | av.error.DemuxerNotFoundError):
        return MediaFormatError
    if isinstance(exc, av.error.FFmpegError) and exc.errno is not None:
        if abs(exc.errno) in (_errno.ENOENT, _errno.EACCES, _errno.EISDIR):
            return MediaNotFoundError
        if abs(exc.errno) in (_errno.ENOSYS, _errno.EOPNOTSUPP):
            return UnsupportedCodecError
    return MediaFormatError


class NoAudioStreamError(BridgeError, InvalidInputError):
    """The input has no audio stream."""
