"""The GPU copy's per-frame CUDA driver calls, made with the GIL held (``ALPHA2_CUDA_GIL``).

cuda-python's driver functions let go of the GIL around every call. That is right for a call that may
block, and costly for the short calls the GPU copy makes per frame -- a context push and pop, a plane
copy enqueued, an event recorded or queried, a stream made to wait for an event: each one returns in
microseconds, and then waits to take the GIL back from whichever thread has it. With a decoder thread
per stream in one process those waits add up: on the H200 with four decoder threads, a
``cuMemcpy2DAsync`` that returns in 27 µs alone took 340 µs on average (``benchmarks/profile_streams.py``,
BENCHMARKS.md "Copy-ahead").

:func:`held_calls` gives those calls through :class:`ctypes.PyDLL` on the same ``libcuda.so.1`` that
cuda-python uses (one driver, one set of handles): PyDLL keeps the GIL for the call. None of these
calls waits on other work, so holding the GIL through them blocks no thread for longer than the call.
The semaphores' import, wait, signal and destruction go the same way: the copy imports one of Dawn's
fences per frame. Everything else (making and destroying streams, events, images) stays with
cuda-python.

``ALPHA2_CUDA_GIL``: ``release`` (the default: every call through cuda-python) or ``hold`` (these
calls through PyDLL). Read once, at the first call. With ``hold``, a call the driver is slow to
answer (an event query can take milliseconds while NVDEC is busy) stalls every Python thread for
that long.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

from alpha2.gpu.errors import InvalidInputError
from alpha2.native_gpu._cuda.core import CudaUnavailableError, check, cuda_driver

__all__ = ["ENV", "HeldCalls", "handle_int", "held_calls"]

ENV = "ALPHA2_CUDA_GIL"
"""``hold``: the per-frame calls keep the GIL; ``release`` (the default): cuda-python for all."""

_CU_MEMORYTYPE_DEVICE = 2
_CU_MEMORYTYPE_ARRAY = 3
_CUDA_ERROR_NOT_READY = 600

_size_t = ctypes.c_size_t
_ptr = ctypes.c_void_p


class _Memcpy2D(ctypes.Structure):
    """``CUDA_MEMCPY2D`` (cuda.h)."""

    _fields_ = [
        ("srcXInBytes", _size_t),
        ("srcY", _size_t),
        ("srcMemoryType", ctypes.c_int),
        ("srcHost", _ptr),
        ("srcDevice", ctypes.c_uint64),
        ("srcArray", _ptr),
        ("srcPitch", _size_t),
        ("dstXInBytes", _size_t),
        ("dstY", _size_t),
        ("dstMemoryType", ctypes.c_int),
        ("dstHost", _ptr),
        ("dstDevice", ctypes.c_uint64),
        ("dstArray", _ptr),
        ("dstPitch", _size_t),
        ("WidthInBytes", _size_t),
        ("Height", _size_t),
    ]


class _SemaphoreHandle(ctypes.Union):
    """The ``handle`` union of ``CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC``."""

    _fields_ = [("fd", ctypes.c_int), ("win32", _ptr * 2), ("nvSciSyncObj", _ptr)]


class _SemaphoreHandleDesc(ctypes.Structure):
    """``CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC`` (cuda.h)."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("handle", _SemaphoreHandle),
        ("flags", ctypes.c_uint),
        ("reserved", ctypes.c_uint * 16),
    ]


class _SemaphoreParams(ctypes.Structure):
    """``CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS`` and ``..._WAIT_PARAMS`` (cuda.h), which have the same
    size and place the fence value and the flags alike; the rest (NvSciSync, keyed mutex) stays zero."""

    _fields_ = [
        ("fence_value", ctypes.c_uint64),
        ("params_rest", ctypes.c_ubyte * 64),
        ("flags", ctypes.c_uint),
        ("reserved", ctypes.c_uint * 16),
    ]


class HeldCalls:
    """The per-frame driver calls through ``ctypes.PyDLL`` (the GIL held). Handles are ints (a
    cuda-python handle's ``int()``); a failed call raises the typed error cuda-python's would."""

    def __init__(self, library: Any) -> None:
        self._push = library.cuCtxPushCurrent_v2
        self._push.argtypes = [_ptr]
        self._pop = library.cuCtxPopCurrent_v2
        self._pop.argtypes = [ctypes.POINTER(_ptr)]
        self._memcpy2d = library.cuMemcpy2DAsync_v2
        self._memcpy2d.argtypes = [ctypes.POINTER(_Memcpy2D), _ptr]
        self._record = library.cuEventRecord
        self._record.argtypes = [_ptr, _ptr]
        self._query = library.cuEventQuery
        self._query.argtypes = [_ptr]
        self._wait_event = library.cuStreamWaitEvent
        self._wait_event.argtypes = [_ptr, _ptr, ctypes.c_uint]
        self._import_semaphore = library.cuImportExternalSemaphore
        self._import_semaphore.argtypes = [ctypes.POINTER(_ptr), ctypes.POINTER(_SemaphoreHandleDesc)]
        self._signal_semaphore = library.cuSignalExternalSemaphoresAsync
        self._wait_semaphore = library.cuWaitExternalSemaphoresAsync
        for function in (self._signal_semaphore, self._wait_semaphore):
            function.argtypes = [ctypes.POINTER(_ptr), ctypes.POINTER(_SemaphoreParams), ctypes.c_uint, _ptr]
        self._destroy_semaphore = library.cuDestroyExternalSemaphore
        self._destroy_semaphore.argtypes = [_ptr]
        for function in (
            self._push,
            self._pop,
            self._memcpy2d,
            self._record,
            self._query,
            self._wait_event,
            self._import_semaphore,
            self._signal_semaphore,
            self._wait_semaphore,
            self._destroy_semaphore,
        ):
            function.restype = ctypes.c_int
        self._popped = threading.local()

    @staticmethod
    def _check(code: int, what: str) -> None:
        if code:
            result: Any = code
            try:
                result = cuda_driver().CUresult(code)  # for the error's name
            except Exception:
                pass
            check(result, what)

    def push_context(self, context: int) -> None:
        self._check(self._push(context), "cuCtxPushCurrent")

    def pop_context(self) -> None:
        out = getattr(self._popped, "out", None)
        if out is None:
            out = self._popped.out = _ptr()
        self._check(self._pop(ctypes.byref(out)), "cuCtxPopCurrent")

    def copy_to_array(
        self, src_device: int, src_pitch: int, dst_array: int, width_bytes: int, height: int, stream: int
    ) -> None:
        """``cuMemcpy2DAsync``: a pitched device plane into a CUDA array, enqueued on ``stream``."""
        copy = _Memcpy2D(
            srcMemoryType=_CU_MEMORYTYPE_DEVICE,
            srcDevice=src_device,
            srcPitch=src_pitch,
            dstMemoryType=_CU_MEMORYTYPE_ARRAY,
            dstArray=dst_array,
            WidthInBytes=width_bytes,
            Height=height,
        )
        self._check(self._memcpy2d(ctypes.byref(copy), stream), "cuMemcpy2DAsync (D->array)")

    def record(self, event: int, stream: int) -> None:
        self._check(self._record(event, stream), "cuEventRecord")

    def query(self, event: int) -> bool:
        """Whether the work before the event's last record is done."""
        code = self._query(event)
        if code == _CUDA_ERROR_NOT_READY:
            return False
        self._check(code, "cuEventQuery")
        return True

    def wait_event(self, stream: int, event: int) -> None:
        self._check(self._wait_event(stream, event, 0), "cuStreamWaitEvent")

    def import_semaphore(self, fd: int, handle_type: int) -> int:
        """``cuImportExternalSemaphore`` of an fd (which CUDA owns on success); the semaphore."""
        desc = _SemaphoreHandleDesc(type=handle_type)
        desc.handle.fd = fd
        out = _ptr()
        self._check(
            self._import_semaphore(ctypes.byref(out), ctypes.byref(desc)), "cuImportExternalSemaphore"
        )
        return out.value or 0

    def signal_semaphore(self, semaphore: int, value: int, stream: int) -> None:
        """Enqueue a signal (``value``: a timeline semaphore's; a binary one ignores it)."""
        params = _SemaphoreParams(fence_value=value)
        code = self._signal_semaphore(ctypes.byref(_ptr(semaphore)), ctypes.byref(params), 1, stream)
        self._check(code, "cuSignalExternalSemaphoresAsync")

    def wait_semaphore(self, semaphore: int, value: int, stream: int) -> None:
        """Enqueue a wait (``value``: a timeline semaphore's; a binary one ignores it)."""
        params = _SemaphoreParams(fence_value=value)
        code = self._wait_semaphore(ctypes.byref(_ptr(semaphore)), ctypes.byref(params), 1, stream)
        self._check(code, "cuWaitExternalSemaphoresAsync")

    def destroy_semaphore(self, semaphore: int) -> None:
        self._check(self._destroy_semaphore(semaphore), "cuDestroyExternalSemaphore")


_held: list[HeldCalls | None] = []
_held_lock = threading.Lock()


def held_calls() -> HeldCalls | None:
    """The calls with the GIL held when ``ALPHA2_CUDA_GIL=hold``, else None (cuda-python's).

    Raises:
        InvalidInputError: ``ALPHA2_CUDA_GIL`` is neither ``hold`` nor ``release``.
        CudaUnavailableError: ``hold``, and libcuda cannot be called through ctypes.
    """
    if _held:
        return _held[0]
    with _held_lock:
        if not _held:
            _held.append(_load())
    return _held[0]


def _load() -> HeldCalls | None:
    value = os.environ.get(ENV, "release").strip().lower() or "release"
    if value == "release":
        return None
    if value != "hold":
        raise InvalidInputError(f"{ENV}={value!r}: use 'hold' or 'release'")
    cuda_driver()  # cuda-python loads the driver first: PyDLL then shares its handle
    try:
        return HeldCalls(ctypes.PyDLL("libcuda.so.1"))
    except (OSError, AttributeError) as exc:  # no library, or one without these entry points
        raise CudaUnavailableError(
            f"{ENV}=hold: libcuda.so.1 cannot be called through ctypes: {exc}"
        ) from exc


def handle_int(handle: Any) -> int:
    """A cuda-python handle (CUstream, CUevent, CUarray, CUcontext) as the pointer value it wraps; 0 and
    None are the legacy default stream."""
    if handle is None:
        return 0
    return int(handle)
