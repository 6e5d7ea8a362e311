"""CUDA side of the interop pairings: contexts, streams, events, external memory and semaphores, copies.

Everything goes through the driver module from :func:`~alpha2.native_gpu._cuda.core.cuda_init` and
:func:`~alpha2.native_gpu._cuda.core.check` (typed errors). Objects are destroyed exactly once
(``close()``; handles swapped to None first); each holds its primary context, which it makes current
around every call (push / pop, so the caller's current context is left as it was).

Two uses:

* :class:`HostDownloader` -- the download of CUDA frames to host memory (used through
  ``_cuda.streams.download_planes``): ``cuMemcpy2DAsync`` device -> pinned host staging on the frame's
  own stream (so it is ordered after FFmpeg's decode work), then an event polled up to the GPU wait
  timeout.
* :class:`ExternalImage`, :class:`ExternalSemaphore`, :class:`CopyStream`, :class:`CudaEvent` -- the
  GPU-copy ring: Vulkan memory imported as a mipmapped array, Vulkan semaphores imported for signal /
  wait, and ``cuMemcpy2DAsync`` device -> array.

FFmpeg's CUDA device uses the primary context with ``CU_CTX_SCHED_BLOCKING_SYNC``; retaining it here
first with other flags would make FFmpeg fail, so :class:`PrimaryContext` sets those flags when it is
the first to retain it (and accepts whatever is active otherwise).
"""

from __future__ import annotations

import ctypes
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from alpha2.gpu.errors import GpuTimeoutError, InvalidInputError, UnsupportedError
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet, CudaPtr2D, OwnedFd
from alpha2.native_gpu._cuda.core import CudaError, CudaUnavailableError, check, cuda_init

__all__ = [
    "CopyStream",
    "CudaEvent",
    "DeviceMemory",
    "ExternalImage",
    "ExternalSemaphore",
    "HostDownloader",
    "PoolMemory",
    "PrimaryContext",
    "StreamOrderedPool",
    "copy_array_to_device",
    "copy_plane_to_array",
    "download_unavailable_reason",
    "primary_context",
]

_CU_CTX_SCHED_BLOCKING_SYNC = 0x4
_CU_EVENT_DISABLE_TIMING = 0x2
_CU_STREAM_NON_BLOCKING = 0x1
_CUDA_ERROR_NOT_READY = 600
_CU_STREAM_LEGACY = 0x1
_CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE = 708
_POLL_FIRST_S = 50e-6
_POLL_MAX_S = 1e-3


def download_unavailable_reason() -> str | None:
    """Why CUDA frames cannot be downloaded here (None when they can). Never raises."""
    try:
        cuda_init()
    except CudaUnavailableError as exc:
        return exc.message
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _poll_until(query: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll ``query`` with a growing sleep until True; GpuTimeoutError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    pause = _POLL_FIRST_S
    while not query():
        if time.monotonic() >= deadline:
            raise GpuTimeoutError(
                f"{what} did not finish within {timeout_s:.3g} s (the GPU wait timeout; raise it with "
                "alpha2.native_gpu.set_gpu_wait_timeout)"
            )
        time.sleep(pause)
        pause = min(pause * 2, _POLL_MAX_S)


# ---------------------------------------------------------------------------------------------------
# context


class PrimaryContext:
    """A retained primary context of one device; ``with ctx:`` makes it current (push / pop)."""

    def __init__(self, ordinal: int) -> None:
        cu = cuda_init()
        self._cu = cu
        self.ordinal = ordinal
        """CUDA device ordinal."""
        device = check(cu.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        self._device = device
        _flags, active = check(cu.cuDevicePrimaryCtxGetState(device), "cuDevicePrimaryCtxGetState")
        if not active:
            # FFmpeg's CUDA device needs BLOCKING_SYNC on the primary context; set it before retaining.
            result = cu.cuDevicePrimaryCtxSetFlags(device, _CU_CTX_SCHED_BLOCKING_SYNC)
            code = int(result[0] if isinstance(result, tuple) else result)
            if code not in (0, _CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE):
                check(result, "cuDevicePrimaryCtxSetFlags")
        self._local = threading.local()
        self._holder: list[Any] = [check(cu.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")]
        self._finalizer = weakref.finalize(self, _release_primary, cu, device, self._holder)
        self._finalizer.atexit = False  # the driver tears contexts down at exit

    @property
    def handle(self) -> Any:
        """The CUcontext."""
        ctx = self._holder[0]
        if ctx is None:
            raise InvalidInputError("the CUDA primary context was released")
        return ctx

    def __enter__(self) -> PrimaryContext:
        # Nested uses on one thread push once: the per-frame path makes many short driver calls.
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            check(self._cu.cuCtxPushCurrent(self.handle), "cuCtxPushCurrent")
        self._local.depth = depth + 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._local.depth -= 1
        if self._local.depth == 0:
            check(self._cu.cuCtxPopCurrent(), "cuCtxPopCurrent")

    def close(self) -> None:
        """Release the retained context (the driver keeps it while others hold it). Idempotent."""
        self._finalizer()


def _release_primary(cu: Any, device: Any, holder: list[Any]) -> None:
    ctx, holder[0] = holder[0], None
    if ctx is not None:
        cu.cuDevicePrimaryCtxRelease(device)


_contexts: dict[int, PrimaryContext] = {}
_contexts_lock = threading.Lock()


def primary_context(ordinal: int) -> PrimaryContext:
    """The process's retained primary context of ``ordinal`` (made once, shared)."""
    with _contexts_lock:
        ctx = _contexts.get(ordinal)
        if ctx is None:
            ctx = PrimaryContext(ordinal)
            _contexts[ordinal] = ctx
        return ctx


# ---------------------------------------------------------------------------------------------------
# streams and events


class CudaEvent:
    """A timing-less event: recorded after some work, queried without blocking, waited with a bound."""

    def __init__(self, ctx: PrimaryContext) -> None:
        self._ctx = ctx
        self._cu = ctx._cu
        with ctx:
            self._holder: list[Any] = [
                check(self._cu.cuEventCreate(_CU_EVENT_DISABLE_TIMING), "cuEventCreate")
            ]
        self._finalizer = weakref.finalize(self, _destroy_event, self._cu, ctx, self._holder)
        self.recorded = False
        """Whether the event has been recorded at least once."""

    def record(self, stream: Any) -> None:
        """Record on ``stream`` (0 / None: the legacy default stream)."""
        with self._ctx:
            check(self._cu.cuEventRecord(self._holder[0], 0 if stream is None else stream), "cuEventRecord")
        self.recorded = True

    def query(self) -> bool:
        """True when the work before the last record has completed (or nothing was recorded)."""
        if not self.recorded:
            return True
        with self._ctx:
            result = self._cu.cuEventQuery(self._holder[0])
        code = int(result[0] if isinstance(result, tuple) else result)
        if code == _CUDA_ERROR_NOT_READY:
            return False
        check(result, "cuEventQuery")
        return True

    def wait(self, timeout_s: float, what: str = "CUDA work") -> None:
        """Block until :meth:`query` is True, polling; GpuTimeoutError after ``timeout_s``."""
        _poll_until(self.query, timeout_s, what)

    def close(self) -> None:
        """Destroy the event. Idempotent."""
        self._finalizer()


def _destroy_event(cu: Any, ctx: PrimaryContext, holder: list[Any]) -> None:
    event, holder[0] = holder[0], None
    if event is not None:
        try:
            with ctx:
                cu.cuEventDestroy(event)
        except Exception:
            pass  # the context is gone: so is the event


class CopyStream:
    """A stream of alpha2's own, ordered after its producers' work explicitly, never implicitly.

    Non-blocking (``CU_STREAM_NON_BLOCKING``): FFmpeg enqueues its decode copies on the legacy default
    stream, and a blocking stream would tie that stream to ours both ways -- every later decode
    copy would wait for our work, including the waits on Dawn's end-of-access fences, so decoding
    would run at the pace of rendering. Ours waits for exactly the work it reads
    (:meth:`order_after`), and nothing of FFmpeg's waits for it.
    """

    def __init__(self, ctx: PrimaryContext) -> None:
        self._ctx = ctx
        self._cu = ctx._cu
        with ctx:
            self._holder: list[Any] = [
                check(self._cu.cuStreamCreate(_CU_STREAM_NON_BLOCKING), "cuStreamCreate")
            ]
        self._finalizer = weakref.finalize(self, _destroy_stream, self._cu, ctx, self._holder)
        self._order_event = CudaEvent(ctx)

    @property
    def handle(self) -> Any:
        """The CUstream."""
        stream = self._holder[0]
        if stream is None:
            raise InvalidInputError("the CUDA copy stream was destroyed")
        return stream

    def order_after(self, producer_stream: int | None) -> None:
        """Make later work on this stream wait for the work already enqueued on ``producer_stream``.

        0 is the legacy default stream (FFmpeg's decode copies); None means no producer: nothing to
        wait for.
        """
        if producer_stream is None:
            return
        with self._ctx:
            self._order_event.record(producer_stream)
            self.wait_for(self._order_event)

    def wait_for(self, event: CudaEvent) -> None:
        """Make later work on this stream wait for the work before ``event``'s last record (nothing
        when it was never recorded)."""
        if not event.recorded:
            return
        with self._ctx:
            check(self._cu.cuStreamWaitEvent(self.handle, event._holder[0], 0), "cuStreamWaitEvent")

    def close(self) -> None:
        """Destroy the stream (pending work still completes). Idempotent."""
        self._order_event.close()
        self._finalizer()


def _destroy_stream(cu: Any, ctx: PrimaryContext, holder: list[Any]) -> None:
    stream, holder[0] = holder[0], None
    if stream is not None:
        try:
            with ctx:
                cu.cuStreamDestroy(stream)
        except Exception:
            pass


# ---------------------------------------------------------------------------------------------------
# download (CPU-upload path)


class _PinnedBuffer:
    """Page-locked host memory (cuMemAllocHost) seen as a writable memoryview."""

    def __init__(self, ctx: PrimaryContext, size_bytes: int) -> None:
        self._ctx = ctx
        self._cu = ctx._cu
        with ctx:
            pointer = check(self._cu.cuMemAllocHost(size_bytes), f"cuMemAllocHost({size_bytes})")
        self.address = int(pointer)
        self.size_bytes = size_bytes
        self.view = memoryview((ctypes.c_ubyte * size_bytes).from_address(self.address)).cast("B")
        self._holder: list[Any] = [self.address]
        self._finalizer = weakref.finalize(self, _free_pinned, self._cu, ctx, self._holder)

    def close(self) -> None:
        self.view.release()
        self._finalizer()


def _free_pinned(cu: Any, ctx: PrimaryContext, holder: list[Any]) -> None:
    address, holder[0] = holder[0], None
    if address is not None:
        try:
            with ctx:
                cu.cuMemFreeHost(address)
        except Exception:
            pass


class HostDownloader:
    """Downloads CUDA planes into reused pinned staging buffers (one per plane, grown as needed).

    The returned CpuPlaneSet points into the staging buffers: it is valid until the next download
    (``_cuda.streams.download_planes`` hands it on before the next one begins). Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffers: list[_PinnedBuffer | None] = []
        self._event: CudaEvent | None = None
        self._ctx: PrimaryContext | None = None

    def download(self, planes: tuple[CudaPtr2D, ...], stream: int | None, timeout_s: float) -> CpuPlaneSet:
        """``cuMemcpy2DAsync`` device -> pinned host on ``stream`` (the decode stream), then a bounded wait.

        Raises:
            GpuTimeoutError: the copy did not finish within ``timeout_s``.
            CudaError: a driver call failed.
        """
        if not planes:
            raise InvalidInputError("no CUDA planes to download")
        ordinal = planes[0].device_ordinal
        with self._lock:
            ctx = primary_context(ordinal)
            if self._ctx is not ctx or self._event is None:
                self._drop_locked()
                self._ctx = ctx
                self._event = CudaEvent(ctx)
            cu = ctx._cu
            out: list[CpuPlane] = []
            with ctx:
                for index, plane in enumerate(planes):
                    size = plane.width_bytes * plane.height
                    buffer = self._buffers[index] if index < len(self._buffers) else None
                    if buffer is None or buffer.size_bytes < size:
                        if buffer is not None:
                            buffer.close()
                        buffer = _PinnedBuffer(ctx, size)
                        while len(self._buffers) <= index:
                            self._buffers.append(None)
                        self._buffers[index] = buffer
                    copy = cu.CUDA_MEMCPY2D()
                    copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
                    copy.srcDevice = plane.device_ptr
                    copy.srcPitch = plane.pitch_bytes
                    copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_HOST
                    copy.dstHost = buffer.address
                    copy.dstPitch = plane.width_bytes
                    copy.WidthInBytes = plane.width_bytes
                    copy.Height = plane.height
                    check(cu.cuMemcpy2DAsync(copy, 0 if stream is None else stream), "cuMemcpy2DAsync (D->H)")
                    out.append(
                        CpuPlane(
                            data=buffer.view[:size],
                            bytes_per_row=plane.width_bytes,
                            width_bytes=plane.width_bytes,
                            height=plane.height,
                            keep_alive=buffer,
                        )
                    )
            self._event.record(stream)
            self._event.wait(timeout_s, "downloading a CUDA frame to host memory")
            return CpuPlaneSet(planes=tuple(out), keep_alive=tuple(self._buffers))

    def _drop_locked(self) -> None:
        for buffer in self._buffers:
            if buffer is not None:
                buffer.close()
        self._buffers = []
        if self._event is not None:
            self._event.close()
            self._event = None

    def close(self) -> None:
        """Free the staging buffers. Idempotent."""
        with self._lock:
            self._drop_locked()
            self._ctx = None


# ---------------------------------------------------------------------------------------------------
# external memory and semaphores (GPU-copy path)


_ARRAY_FORMATS = {1: "CU_AD_FORMAT_UNSIGNED_INT8", 2: "CU_AD_FORMAT_UNSIGNED_INT16"}


class ExternalImage:
    """Vulkan image memory (an OPAQUE_FD) imported into CUDA as a mipmapped array; level 0 as a CUarray.

    Args:
        ctx: The device's primary context (same GPU as the Vulkan device: compare UUIDs first).
        fd: The exported memory fd; ownership passes to CUDA on success (closed here on failure).
        size_bytes: The Vulkan allocation's size.
        width, height: The image's size in texels.
        bytes_per_channel: 1 (8-bit formats) or 2 (16-bit formats).
        channels: 1, 2 or 4.
        dedicated: Whether the allocation is dedicated (it is, for the ring's images).
    """

    def __init__(
        self,
        ctx: PrimaryContext,
        fd: OwnedFd,
        *,
        size_bytes: int,
        width: int,
        height: int,
        bytes_per_channel: int,
        channels: int,
        dedicated: bool = True,
    ) -> None:
        if bytes_per_channel not in _ARRAY_FORMATS or channels not in (1, 2, 4):
            raise InvalidInputError(
                f"CUDA arrays here hold 1 or 2 bytes per channel and 1, 2 or 4 channels, got "
                f"{bytes_per_channel} x {channels}"
            )
        self._ctx = ctx
        cu = self._cu = ctx._cu
        self.width = width
        """Width in texels."""
        self.height = height
        """Height in texels."""
        self.row_bytes = width * bytes_per_channel * channels
        """Bytes of one row of texels."""
        self._holder: list[Any] = [None, None]  # external memory, mipmapped array
        self._finalizer = weakref.finalize(self, _destroy_external_image, cu, ctx, self._holder)
        with ctx:
            desc = cu.CUDA_EXTERNAL_MEMORY_HANDLE_DESC()
            desc.type = cu.CUexternalMemoryHandleType.CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
            raw_fd = fd.fileno()
            desc.handle.fd = raw_fd
            desc.size = size_bytes
            desc.flags = cu.CUDA_EXTERNAL_MEMORY_DEDICATED if dedicated else 0
            self._holder[0] = check(cu.cuImportExternalMemory(desc), "cuImportExternalMemory")
            fd.detach()  # CUDA owns the fd now
            try:
                mip_desc = cu.CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC()
                mip_desc.offset = 0
                mip_desc.arrayDesc.Width = width
                mip_desc.arrayDesc.Height = height
                mip_desc.arrayDesc.Depth = 0
                mip_desc.arrayDesc.Format = getattr(cu.CUarray_format, _ARRAY_FORMATS[bytes_per_channel])
                mip_desc.arrayDesc.NumChannels = channels
                mip_desc.arrayDesc.Flags = 0
                mip_desc.numLevels = 1
                self._holder[1] = check(
                    cu.cuExternalMemoryGetMappedMipmappedArray(self._holder[0], mip_desc),
                    "cuExternalMemoryGetMappedMipmappedArray",
                )
                self.array = check(
                    cu.cuMipmappedArrayGetLevel(self._holder[1], 0), "cuMipmappedArrayGetLevel"
                )
                """Level 0 as a CUarray (the copy destination)."""
            except BaseException:
                self._finalizer()
                raise

    def close(self) -> None:
        """Destroy the array mapping and the imported memory. Idempotent."""
        self._finalizer()


def _destroy_external_image(cu: Any, ctx: PrimaryContext, holder: list[Any]) -> None:
    memory, mip = holder
    holder[0] = holder[1] = None
    try:
        with ctx:
            if mip is not None:
                cu.cuMipmappedArrayDestroy(mip)
            if memory is not None:
                cu.cuDestroyExternalMemory(memory)
    except Exception:
        pass


class ExternalSemaphore:
    """A Vulkan semaphore (OPAQUE_FD; binary or timeline) imported into CUDA, to signal or wait on a stream.

    The fd passes to CUDA on success (closed here on failure).
    """

    def __init__(self, ctx: PrimaryContext, fd: OwnedFd, *, timeline: bool) -> None:
        self._ctx = ctx
        cu = self._cu = ctx._cu
        self.timeline = timeline
        """Timeline (values) or binary."""
        self._holder: list[Any] = [None]
        kinds = cu.CUexternalSemaphoreHandleType
        handle_type = (
            kinds.CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
            if timeline
            else kinds.CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD
        )
        self._finalizer = weakref.finalize(self, _destroy_external_semaphore, cu, ctx, self._holder)
        desc = cu.CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC()
        desc.type = handle_type
        desc.handle.fd = fd.fileno()
        desc.flags = 0
        with ctx:
            self._holder[0] = check(cu.cuImportExternalSemaphore(desc), "cuImportExternalSemaphore")
        fd.detach()

    def signal(self, stream: Any, value: int = 0) -> None:
        """Enqueue a signal (to ``value`` for a timeline semaphore) on ``stream``."""
        cu = self._cu
        params = cu.CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS()
        if self.timeline:
            params.params.fence.value = value
        with self._ctx:
            check(
                cu.cuSignalExternalSemaphoresAsync([self._holder[0]], [params], 1, stream),
                "cuSignalExternalSemaphoresAsync",
            )

    def wait(self, stream: Any, value: int = 0) -> None:
        """Enqueue a wait (until ``value`` for a timeline semaphore) on ``stream``."""
        cu = self._cu
        params = cu.CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS()
        if self.timeline:
            params.params.fence.value = value
        with self._ctx:
            check(
                cu.cuWaitExternalSemaphoresAsync([self._holder[0]], [params], 1, stream),
                "cuWaitExternalSemaphoresAsync",
            )

    def close(self) -> None:
        """Destroy the import (no enqueued signal or wait may still be pending). Idempotent."""
        self._finalizer()


def _destroy_external_semaphore(cu: Any, ctx: PrimaryContext, holder: list[Any]) -> None:
    semaphore, holder[0] = holder[0], None
    if semaphore is not None:
        try:
            with ctx:
                cu.cuDestroyExternalSemaphore(semaphore)
        except Exception:
            pass


def copy_plane_to_array(ctx: PrimaryContext, src: CudaPtr2D, dst: ExternalImage, stream: Any) -> None:
    """Enqueue ``cuMemcpy2DAsync`` from a pitched device plane into an imported array (rows of dst.row_bytes).

    Raises:
        InvalidInputError: the plane is smaller than the array.
        CudaError: the driver refused the copy.
    """
    if src.width_bytes < dst.row_bytes or src.height < dst.height:
        raise InvalidInputError(
            f"CUDA plane of {src.width_bytes} bytes x {src.height} rows is smaller than the "
            f"{dst.row_bytes} x {dst.height} image it is copied into"
        )
    cu = ctx._cu
    copy = cu.CUDA_MEMCPY2D()
    copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
    copy.srcDevice = src.device_ptr
    copy.srcPitch = src.pitch_bytes
    copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_ARRAY
    copy.dstArray = dst.array
    copy.WidthInBytes = dst.row_bytes
    copy.Height = dst.height
    with ctx:
        check(cu.cuMemcpy2DAsync(copy, stream), "cuMemcpy2DAsync (D->array)")


class DeviceMemory:
    """Linear device memory of one context (``cuMemAlloc``), freed exactly once (``close()`` or the GC).

    Whoever frees it makes sure no enqueued work still reads it (an event, or a consumer that is done)."""

    def __init__(self, ctx: PrimaryContext, size_bytes: int) -> None:
        if size_bytes < 1:
            raise InvalidInputError(f"device memory needs at least one byte, got {size_bytes}")
        self._ctx = ctx
        cu = ctx._cu
        with ctx:
            pointer = check(cu.cuMemAlloc(size_bytes), f"cuMemAlloc({size_bytes})")
        self.pointer = int(pointer)
        """The device address of the first byte."""
        self.size_bytes = size_bytes
        """Bytes allocated."""
        self._holder: list[Any] = [pointer]
        self._finalizer = weakref.finalize(self, _free_device, cu, ctx, self._holder)

    def close(self) -> None:
        """Free the memory. Idempotent."""
        self._finalizer()


def _free_device(cu: Any, ctx: PrimaryContext, holder: list[Any]) -> None:
    pointer, holder[0] = holder[0], None
    if pointer is not None:
        try:
            with ctx:
                cu.cuMemFree(pointer)
        except Exception:
            pass  # the context is gone: so is the memory


class StreamOrderedPool:
    """A CUDA memory pool of one device whose allocations and frees are ordered on streams
    (``cuMemAllocFromPoolAsync`` / ``cuMemFreeAsync``): neither blocks the CPU nor synchronises the
    device, where ``cuMemAlloc`` / ``cuMemFree`` may do both. Freed memory is kept for reuse up to
    ``keep_bytes`` (the pool's release threshold); beyond it the driver gives memory back at the next
    synchronisation.

    A pool of its own rather than the device's default pool: the default pool's threshold (0) is other
    libraries' to set, and keeping nothing would hand every allocation back at each of their syncs.

    Raises:
        UnsupportedError: the device has no memory pools (``CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED``).
        CudaError: a driver call failed.
    """

    def __init__(self, ctx: PrimaryContext, *, keep_bytes: int) -> None:
        cu = ctx._cu
        self._ctx = ctx
        self._cu = cu
        with ctx:
            supported = check(
                cu.cuDeviceGetAttribute(
                    cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, ctx._device
                ),
                "cuDeviceGetAttribute(MEMORY_POOLS_SUPPORTED)",
            )
            if not supported:
                raise UnsupportedError(f"CUDA device {ctx.ordinal} has no stream-ordered memory pools")
            props = cu.CUmemPoolProps()
            props.allocType = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
            props.handleTypes = cu.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
            props.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            props.location.id = ctx.ordinal
            pool = check(cu.cuMemPoolCreate(props), "cuMemPoolCreate")
            self._life = _PoolLife(cu, ctx, pool)
            self._finalizer = weakref.finalize(self, self._life.close)
            self._finalizer.atexit = False  # the driver tears its contexts down at exit
            check(
                cu.cuMemPoolSetAttribute(
                    pool,
                    cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    cu.cuuint64_t(max(0, int(keep_bytes))),
                ),
                "cuMemPoolSetAttribute(RELEASE_THRESHOLD)",
            )
        self.keep_bytes = max(0, int(keep_bytes))
        """Freed bytes the pool keeps for reuse."""

    def allocate(self, size_bytes: int, stream: CopyStream) -> PoolMemory:
        """``size_bytes`` of device memory, usable by work enqueued on ``stream`` from now on (and by
        other streams once ordered after it); freed on ``stream`` by :meth:`PoolMemory.close`.

        Raises:
            InvalidInputError: ``size_bytes`` < 1, or the pool was closed.
            CudaOutOfMemoryError: the device is out of memory.
        """
        if size_bytes < 1:
            raise InvalidInputError(f"device memory needs at least one byte, got {size_bytes}")
        life = self._life
        with life.lock:
            pool = life.pool
            if pool is None or life.closing:
                raise InvalidInputError("the CUDA memory pool was closed")
            with self._ctx:
                pointer = check(
                    self._cu.cuMemAllocFromPoolAsync(size_bytes, pool, stream.handle),
                    f"cuMemAllocFromPoolAsync({size_bytes})",
                )
            life.outstanding += 1
        return PoolMemory(self._ctx, int(pointer), size_bytes, stream, life)

    def close(self) -> None:
        """Destroy the pool once no memory allocated from it is left: now, or at the last free (the
        memory handed out stays valid until then). Idempotent. Never with allocations outstanding:
        on the H200 the driver crashed in ``cuMemPoolDestroy`` (a segfault) in a process where a
        pool had been destroyed before its last allocation was freed."""
        self._finalizer()


class _PoolLife:
    """A pool's handle and its allocations still out; the pool is destroyed when it was closed and
    the last one is freed, after the device has finished with them."""

    def __init__(self, cu: Any, ctx: PrimaryContext, pool: Any) -> None:
        self.cu = cu
        self.ctx = ctx
        self.pool: Any = pool
        self.outstanding = 0
        self.closing = False
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            self.closing = True
            if self.outstanding:
                return  # the last free destroys it
            pool, self.pool = self.pool, None
        self._destroy(pool)

    def freed(self) -> None:
        """One allocation was freed (its ``cuMemFreeAsync`` enqueued)."""
        with self.lock:
            self.outstanding -= 1
            if not (self.closing and self.outstanding <= 0):
                return
            pool, self.pool = self.pool, None
        self._destroy(pool)

    def _destroy(self, pool: Any) -> None:
        if pool is None:
            return
        try:
            with self.ctx:
                self.cu.cuCtxSynchronize()  # the frees enqueued are done before their pool goes
                self.cu.cuMemPoolDestroy(pool)
        except Exception:
            pass  # the context is gone: so is the pool


class PoolMemory:
    """An allocation of a :class:`StreamOrderedPool`, freed exactly once, in stream order.

    :meth:`close` frees it on the stream it was allocated on, after the work enqueued there so far;
    :meth:`free_after` first makes that stream wait for the work enqueued so far on the streams that
    used it (the consumers), on the GPU. The GC frees it as :meth:`close` does.
    """

    def __init__(
        self,
        ctx: PrimaryContext,
        pointer: int,
        size_bytes: int,
        stream: CopyStream,
        life: _PoolLife | None = None,
    ) -> None:
        self.pointer = pointer
        """The device address of the first byte."""
        self.size_bytes = size_bytes
        """Bytes allocated."""
        self._holder: list[Any] = [pointer]
        self._life = life
        self._finalizer = weakref.finalize(
            self, _free_pool_memory, ctx, stream, self._holder, (), False, life
        )
        self._finalizer.atexit = False
        self._ctx = ctx
        self._stream = stream

    def free_after(self, consumer_streams: tuple[int, ...], *, everything: bool = False) -> None:
        """Free the memory once the work enqueued so far on ``consumer_streams`` (CUstream handles) and
        on its own stream is done, without blocking the CPU; ``everything``: once all the device's
        work so far is done (``cuCtxSynchronize`` first: the memory was used on streams not known).
        Idempotent."""
        self._finalizer.detach()
        _free_pool_memory(self._ctx, self._stream, self._holder, consumer_streams, everything, self._life)

    def close(self) -> None:
        """Free the memory after the work enqueued so far on its own stream. Idempotent."""
        self._finalizer()


def _free_pool_memory(
    ctx: PrimaryContext,
    stream: CopyStream,
    holder: list[Any],
    consumer_streams: tuple[int, ...],
    everything: bool,
    life: _PoolLife | None = None,
) -> None:
    pointer, holder[0] = holder[0], None
    if pointer is None:
        return
    try:
        _free_ordered(ctx, stream, pointer, consumer_streams, everything)
    finally:
        if life is not None:
            life.freed()


def _free_ordered(
    ctx: PrimaryContext, stream: CopyStream, pointer: int, consumer_streams: tuple[int, ...], everything: bool
) -> None:
    cu = ctx._cu
    try:
        with ctx:
            own = stream._holder[0]
            ordered = own is not None and not everything
            if ordered:
                for consumer in consumer_streams:
                    if not _order_stream_after(cu, own, consumer):
                        ordered = False  # a consumer's stream is gone (or bad): order after everything
                        break
            if not ordered:
                check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
                if own is None:  # the copy stream is gone (its exporter closed)
                    own = _CU_STREAM_LEGACY
            check(cu.cuMemFreeAsync(pointer, own), "cuMemFreeAsync")
    except Exception:
        pass  # a failed or torn-down context: its memory goes with it


def _order_stream_after(cu: Any, stream: Any, producer: int) -> bool:
    """Make ``stream`` wait for the work enqueued so far on ``producer``; False when that failed."""
    result = cu.cuEventCreate(_CU_EVENT_DISABLE_TIMING)
    if int(result[0]) != 0:
        return False
    event = result[1]
    try:
        if int(cu.cuEventRecord(event, producer)[0]) != 0:
            return False
        return int(cu.cuStreamWaitEvent(stream, event, 0)[0]) == 0
    finally:
        cu.cuEventDestroy(event)  # allowed at once: the driver frees it once complete


def copy_array_to_device(
    ctx: PrimaryContext, src: ExternalImage, dst_pointer: int, size_bytes: int, stream: Any
) -> None:
    """Enqueue copies of the first ``size_bytes`` of an imported array, its rows read one after another,
    into contiguous device memory at ``dst_pointer``: the whole rows in one ``cuMemcpy2DAsync``, the
    start of the next row in a second.

    Raises:
        InvalidInputError: more bytes than the array holds, or not whole 4-byte texels.
        CudaError: the driver refused a copy.
    """
    row_bytes = src.row_bytes
    if size_bytes < 0 or size_bytes > row_bytes * src.height or size_bytes % 4:
        raise InvalidInputError(
            f"cannot copy {size_bytes} bytes out of a {row_bytes} x {src.height} array (whole 4-byte "
            "texels, at most the array)"
        )
    rows, rest = divmod(size_bytes, row_bytes)
    cu = ctx._cu
    with ctx:
        for first_row, height, width_bytes in ((0, rows, row_bytes), (rows, 1 if rest else 0, rest)):
            if not height:
                continue
            copy = cu.CUDA_MEMCPY2D()
            copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_ARRAY
            copy.srcArray = src.array
            copy.srcXInBytes = 0
            copy.srcY = first_row
            copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
            copy.dstDevice = dst_pointer + first_row * row_bytes
            copy.dstPitch = row_bytes
            copy.WidthInBytes = width_bytes
            copy.Height = height
            check(cu.cuMemcpy2DAsync(copy, stream), "cuMemcpy2DAsync (array->D)")


_ = CudaError  # re-exported for callers catching driver failures from this module
