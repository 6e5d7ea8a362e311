"""One error type with a kind, for retry / abort / reconfigure decisions.

Every error alpha2 raises derives from :class:`Error`. Subclasses also inherit the matching builtin
where one fits (``ValueError``, ``TimeoutError``, ``MemoryError``), as PyAV's ``av.error`` and
wgpu-py's ``GPUOutOfMemoryError`` do, so ``except ValueError`` keeps working for callers that do not
know alpha2.
"""

from __future__ import annotations

import enum
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
