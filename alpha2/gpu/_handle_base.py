"""The base of the handle vocabulary: validation helpers, owned file descriptors, ``GpuResource``.

Shared by :mod:`alpha2.gpu.handles` (the variants alpha2 produces or accepts),
:mod:`alpha2.gpu.platform_handles` (the variants of other platforms) and :mod:`alpha2.gpu.contexts`
(contexts and queues). Import the public names (``OwnedFd``, ``FdLike``, ``GpuResource``) from
:mod:`alpha2.gpu.handles` or :mod:`alpha2.gpu`.
"""

from __future__ import annotations

import abc
import enum
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import field
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from alpha2.gpu.errors import ClosedError, InvalidHandleError
from alpha2.gpu.identity import BackendKind

_U64_LIMIT = 1 << 64
_E = TypeVar("_E", bound=enum.Enum)

# ---------------------------------------------------------------------------------------------------
# validation helpers


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _handle(owner: str, name: str, value: object) -> None:
    """A non-null 64-bit native handle or pointer."""
    if not _is_int(value):
        raise InvalidHandleError(f"{owner}.{name} must be an int handle, got {type(value).__name__}")
    assert isinstance(value, int)
    if value == 0:
        raise InvalidHandleError(f"{owner}.{name} is null (0)")
    if not 0 < value < _U64_LIMIT:
        raise InvalidHandleError(f"{owner}.{name} = {value:#x} is not a 64-bit handle")


def _positive(owner: str, name: str, value: object) -> None:
    if not _is_int(value) or value <= 0:  # type: ignore[operator]
        raise InvalidHandleError(f"{owner}.{name} must be a positive int, got {value!r}")


def _non_negative(owner: str, name: str, value: object) -> None:
    if not _is_int(value) or value < 0:  # type: ignore[operator]
        raise InvalidHandleError(f"{owner}.{name} must be a non-negative int, got {value!r}")


def _uuid16(owner: str, name: str, value: bytes | None) -> None:
    if value is not None and (not isinstance(value, bytes) or len(value) != 16):
        raise InvalidHandleError(f"{owner}.{name} must be 16 bytes or None, got {value!r}")


def _not_none(owner: str, name: str, value: object) -> None:
    if value is None:
        raise InvalidHandleError(f"{owner}.{name} is None")


def _enum(owner: str, name: str, enum_cls: type[_E], value: object) -> _E:
    try:
        return enum_cls(value)
    except ValueError as exc:
        allowed = ", ".join(member.name for member in enum_cls)
        raise InvalidHandleError(f"{owner}.{name} = {value!r} is not one of {allowed}") from exc


def _buffer_nbytes(owner: str, data: object) -> int:
    """Size of a buffer-protocol object, without copying it; refuses non-contiguous buffers."""
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError as exc:
        raise InvalidHandleError(
            f"{owner}.data must support the buffer protocol (bytes, bytearray, numpy array, memoryview, "
            f"PyAV plane), got {type(data).__name__}"
        ) from exc
    with view:
        if not view.c_contiguous:
            raise InvalidHandleError(
                f"{owner}.data is not C-contiguous; pass the underlying contiguous buffer and describe "
                "its rows with bytes_per_row"
            )
        return view.nbytes


# ---------------------------------------------------------------------------------------------------
# owned file descriptors


def _close_fd(fd: int, close: Callable[[int], None] = os.close) -> None:
    try:
        close(fd)
    except OSError:
        # Already closed behind our back; nothing left to release.
        pass


class OwnedFd:
    """An owned OS file descriptor, closed exactly once.

    ``close()`` (or leaving the ``with`` block) closes it; a ``weakref.finalize`` closes it when the object
    is collected or at interpreter exit. :meth:`detach` hands ownership on (the fd is then never closed
    here), e.g. to ``vkAllocateMemory`` with ``VkImportMemoryFdInfoKHR``, which takes ownership on success.
    """

    __slots__ = ("__weakref__", "_fd", "_finalizer", "_lock")

    def __init__(self, fd: int) -> None:
        """Take ownership of ``fd``.

        Raises:
            InvalidHandleError: ``fd`` is not a non-negative int or is not an open descriptor.
        """
        if not _is_int(fd) or fd < 0:
            raise InvalidHandleError(f"OwnedFd needs a non-negative int file descriptor, got {fd!r}")
        try:
            os.fstat(fd)
        except OSError as exc:
            raise InvalidHandleError(f"file descriptor {fd} is not open: {exc.strerror}") from exc
        self._lock = threading.Lock()
        self._fd: int | None = fd
        self._finalizer = weakref.finalize(self, _close_fd, fd)

    @property
    def closed(self) -> bool:
        """True once closed or detached."""
        return self._fd is None

    def fileno(self) -> int:
        """The descriptor, still owned here. Raises ClosedError once closed or detached."""
        fd = self._fd
        if fd is None:
            raise ClosedError("OwnedFd is closed or detached")
        return fd

    def as_raw(self) -> int:
        """The raw descriptor (still owned here; do not close it yourself)."""
        return self.fileno()

    def close(self) -> None:
        """Close the descriptor. Idempotent."""
        with self._lock:
            if self._fd is None:
                return
            self._fd = None
        self._finalizer()

    def detach(self) -> int:
        """Give up ownership and return the descriptor; the caller (or the API it goes to) must close it.

        Raises:
            ClosedError: already closed or detached.
        """
        with self._lock:
            fd = self._fd
            if fd is None:
                raise ClosedError("OwnedFd is closed or detached; nothing to detach")
            self._fd = None
        self._finalizer.detach()
        return fd

    def dup(self) -> OwnedFd:
        """A new OwnedFd on a duplicate of this descriptor (``os.dup``), closed independently."""
        return OwnedFd(os.dup(self.fileno()))

    def __enter__(self) -> OwnedFd:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OwnedFd({self._fd})" if self._fd is not None else "OwnedFd(<closed>)"


FdLike = OwnedFd | int
"""An owned descriptor, or a borrowed ``int`` kept open by the handle's ``keep_alive``."""


def _fd_field(owner: str, name: str, value: object) -> None:
    if isinstance(value, OwnedFd):
        if value.closed:
            raise InvalidHandleError(f"{owner}.{name} is a closed OwnedFd")
        return
    if not _is_int(value) or value < 0:  # type: ignore[operator]
        raise InvalidHandleError(f"{owner}.{name} must be an OwnedFd or a non-negative int fd, got {value!r}")


def _raw_fd(value: FdLike) -> int:
    return value.fileno() if isinstance(value, OwnedFd) else value


# ---------------------------------------------------------------------------------------------------
# resources


class GpuResource(abc.ABC):
    """A native GPU (or host) resource handed between libraries. Subclasses are frozen dataclasses."""

    backend: ClassVar[BackendKind]
    """The API this resource belongs to."""

    @abc.abstractmethod
    def as_raw(self) -> Any:
        """The raw native handle (int, fd, object or buffer), borrowed: valid while this handle lives."""


def _keep_alive() -> Any:
    return field(default=None, repr=False, compare=False)
