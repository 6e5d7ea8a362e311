"""One error type with a kind, for retry / abort / reconfigure decisions.

Every error alpha2 raises derives from :class:`Error`. Subclasses also inherit the matching builtin
where one fits (``ValueError``, ``TimeoutError``, ``MemoryError``), as PyAV's ``av.error`` and
wgpu-py's ``GPUOutOfMemoryError`` do, so ``except ValueError`` keeps working for callers that do not
know alpha2.
"""

from __future__ import annotations

import enum
import errno as _errno
from typing import TypeVar


class ErrorKind(enum.Enum):
    """What a caller should do about an error."""

    RETRY = "retry"
    """A transient condition: the same call may succeed later (busy queue, full budget that drains)."""
    TIMEOUT = "timeout"
    """A bounded wait ran out; the work may still finish."""
    OUT_OF_MEMORY = "out_of_memory"
    """A memory or surface budget, or the device itself, has no room."""
    DEVICE_LOST = "device_lost"
    """The device is gone; everything made on it must be recreated."""
    UNSUPPORTED = "unsupported"
    """The platform, driver or build cannot do this; reconfigure (another path, format or adapter)."""
    INVALID_INPUT = "invalid_input"
    """The caller passed something wrong; retrying the same call fails the same way."""
    INTERNAL = "internal"
    """A bug or an unexpected native failure."""

    @property
    def retryable(self) -> bool:
        """Whether retrying the same call can succeed."""
        return self in (ErrorKind.RETRY, ErrorKind.TIMEOUT)


class Error(Exception):
    """Root of every alpha2 error. ``kind`` says what a caller can do about it."""

    default_kind = ErrorKind.INTERNAL

    def __init__(self, message: str, *, kind: ErrorKind | str | None = None) -> None:
        """An error saying ``message``, of ``kind`` (else the class's ``default_kind``).

        Args:
            message: What went wrong, and the way out where there is one.
            kind: An :class:`ErrorKind`, or its value (``"retry"``); None takes the class's default.

        Raises:
            InvalidInputError: ``kind`` is not an ErrorKind, one of its values or None.
        """
        super().__init__(message)
        self.message = message
        self.kind: ErrorKind = self.default_kind if kind is None else _error_kind(kind)

    def __repr__(self) -> str:
        # Exception's repr ("Error('x')") without the kind hides what a caller decides on.
        kind = getattr(self, "kind", self.default_kind)
        return f"{super().__repr__()[:-1]}, kind=ErrorKind.{kind.name})"


def _error_kind(kind: object) -> ErrorKind:
    return member_of(ErrorKind, kind, "Error kind")


_E = TypeVar("_E", bound=enum.Enum)


def member_of(enum_cls: type[_E], value: object, what: str) -> _E:
    """``value`` as a member of ``enum_cls``: a member, or a member's exact value (``'cuda'``,
    ``'low-power'``); anything else is an :class:`InvalidInputError` that names ``what`` and lists
    the values (the enum's own was a plain ValueError, or a str was kept as given)."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        try:
            return enum_cls(value)
        except ValueError:
            pass
    allowed = ", ".join(repr(member.value) for member in enum_cls)
    raise InvalidInputError(f"{what} must be a {enum_cls.__name__} or one of {allowed}, got {value!r}")


class InvalidInputError(Error, ValueError):
    """The caller passed a value that can never work."""

    default_kind = ErrorKind.INVALID_INPUT


class InvalidHandleError(InvalidInputError):
    """A native handle is null, zero, closed or inconsistent with its description."""


class UnknownFormatError(InvalidInputError):
    """A pixel format (or other named value) is not one alpha2 knows; the message lists those it does."""


class UnsupportedError(Error):
    """The platform, driver or build cannot do what was asked; the message says what can be done instead."""

    default_kind = ErrorKind.UNSUPPORTED


class GpuTimeoutError(Error, TimeoutError):
    """A bounded wait on GPU work ran out."""

    default_kind = ErrorKind.TIMEOUT


class OutOfMemoryError(Error, MemoryError):
    """A memory budget or the device has no room for the request."""

    default_kind = ErrorKind.OUT_OF_MEMORY


class BudgetExceededError(OutOfMemoryError):
    """A reservation would pass a hard cap of a :class:`~alpha2.gpu.budget.MemoryBudget`."""


class DeviceLostError(Error):
    """The GPU device was lost (driver reset, removal); objects made on it are unusable."""

    default_kind = ErrorKind.DEVICE_LOST


class InternalError(Error):
    """A native call failed in a way alpha2 did not expect."""

    default_kind = ErrorKind.INTERNAL


class ClosedError(InvalidInputError):
    """The object was already closed or released."""


_WRITE_FAILURES = {
    _errno.ENOSPC: "the disk is full",
    _errno.EDQUOT: "the disk quota is used up",
    _errno.EFBIG: "the file grew past the largest size allowed",
    _errno.EIO: "the disk or its connection failed",
    _errno.EROFS: "the file system is read-only",
    _errno.ESTALE: "the network file system lost the file",
}
"""The operating system's write failures said plainly: errors of the disk, not of the media."""


_NO_ROOM = frozenset({_errno.ENOSPC, _errno.EDQUOT, _errno.EFBIG, _errno.EROFS})
"""Write failures of the output's place, not of alpha2 or the hardware: the same call fails the same way
until the caller makes room or picks another place (INVALID_INPUT); the others (EIO, ESTALE) are the
disk's failing (INTERNAL). Neither is retried by itself."""


class OutputWriteError(Error):
    """Writing an output file failed for a reason of the disk (full, over quota, an I/O error); the
    partial file was removed. ``path`` names the output, ``errno`` the operating system's code. Its kind:
    INVALID_INPUT where the place has no room or takes no writes (ENOSPC, EDQUOT, EFBIG, EROFS: the same
    call fails the same way until room is made), INTERNAL for the disk's own failures (EIO, ESTALE)."""

    default_kind = ErrorKind.INTERNAL

    def __init__(self, message: str, *, path: str | None, errno: int, kind: ErrorKind | str | None = None):
        super().__init__(message, kind=kind)
        self.path = path
        """The output's name (None: a file object the caller gave)."""
        self.errno = errno
        """The operating system's error code (``errno.ENOSPC`` ...)."""


def output_write_error(path: str | None, exc: BaseException) -> OutputWriteError | None:
    """``exc`` said as an :class:`OutputWriteError` naming ``path`` when it (or an error it was raised
    from) is an operating-system write failure (a full disk, a quota, EIO ...); None for anything else.

    The caller removes the partial output before raising it: the message says nothing was kept (for a
    file object, ``path`` None, it says nothing of what was kept).
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OutputWriteError):
            return current
        code = current.errno if isinstance(current, OSError) else None
        if isinstance(current, OSError) and code is not None and abs(code) in _WRITE_FAILURES:
            code = abs(code)  # PyAV's are positive, an AVERROR negative
            cause = current.strerror or _errno.errorcode.get(code, str(code))
            what = f"writing {path!r}" if path is not None else "writing the output"
            kept = "; nothing was kept" if path is not None else ""
            return OutputWriteError(
                f"{what} failed: {_WRITE_FAILURES[code]} ({cause}){kept}",
                path=path,
                errno=code,
                kind=ErrorKind.INVALID_INPUT if code in _NO_ROOM else ErrorKind.INTERNAL,
            )
        current = current.__cause__ or current.__context__
    return None
