"""Decoded CUDA frames copied into memory of alpha2's own, so that frames kept for a while (a batch for
a data loader, a segment's reorder buffer) do not pin the decoder's surfaces.

NVDEC hands out frames from a small pool (FFmpeg's, at most about 32 surfaces a decoder, of which the
application may hold about 14): a program that keeps more frames than that stalls the decoder. A
:class:`CudaFramePool` copies each frame's planes (``cuMemcpy2DAsync`` device -> device, ordered after
the decode on the frame's stream) and hands back at once a :class:`~alpha2.gpu.frames.DecodedFrame` over
pooled allocations whose ``cuda_stream`` is the copy's (consumers order after it, as after a decode);
the decoder's frame is let go once its copy is known done (queried at the next copies, waited for,
bounded, when more than a few are pending). A pooled block returns to the
pool when the frame and every array of it (DLPack consumers hold the keep-alive) are gone. The pool
counts its frames against a :class:`~alpha2.gpu.surfaces.SurfaceBudget`: a full pool waits (bounded)
for a frame to be released, which is the back-pressure a batch or a reorder buffer needs.
"""

from __future__ import annotations

import collections
import threading
import weakref
from typing import Any

from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.handles import CudaPtr2D
from alpha2.gpu.surfaces import SurfaceBudget
from alpha2.native_gpu._cuda.core import check
from alpha2.native_gpu._cuda.interop import CopyStream, CudaEvent, PrimaryContext, primary_context
from alpha2.native_gpu.device.waits import gpu_wait_timeout

__all__ = ["CudaFramePool"]

_PITCH_ALIGN = 256
"""Row pitch of pooled planes (bytes): what texture and DLPack consumers read fastest."""

_PENDING = 8
"""Copies in flight at most before :meth:`CudaFramePool.detach` waits for the oldest."""

_Shape = tuple[tuple[int, int], ...]
"""(width_bytes, height) per plane: the key of interchangeable blocks."""


class _Block:
    """One pooled frame's allocations (a plane each); back to the pool when nothing references it."""

    __slots__ = ("__weakref__", "planes", "shape")

    def __init__(self, shape: _Shape, planes: tuple[tuple[int, int], ...]) -> None:
        self.shape = shape
        self.planes = planes
        """(device pointer, pitch) per plane."""


class CudaFramePool:
    """Copies of CUDA frames in pooled device memory on one GPU, at most ``max_frames`` alive at once.

    Args:
        ordinal: CUDA device ordinal (the decoder's).
        max_frames: Frames the pool holds at most; :meth:`detach` waits for one to be released (bounded
            by the budget's timeout) when all are taken.
    """

    def __init__(self, ordinal: int, *, max_frames: int) -> None:
        self._ctx: PrimaryContext = primary_context(ordinal)
        self._cu = self._ctx._cu
        self.ordinal = ordinal
        """CUDA device ordinal."""
        self.budget = SurfaceBudget(max_surfaces=max_frames)
        """What pooled frames count against."""
        self._lock = threading.Lock()
        self._free: dict[_Shape, list[tuple[tuple[int, int], ...]]] = {}
        self._stream = CopyStream(self._ctx)
        self._stream_id = int(self._stream.handle)
        self._events: list[CudaEvent] = []
        self._pending: collections.deque[tuple[CudaEvent, DecodedFrame]] = collections.deque()
        self._closed = False
        # Blocks hold the pool (their finalizers call it back), so this runs once every block is gone.
        self._finalizer = weakref.finalize(self, _free_idle, self._cu, self._ctx, self._free)
        self.copies = 0
        """Frames copied so far."""

    def _allocate(self, shape: _Shape) -> tuple[tuple[int, int], ...]:
        planes = []
        with self._ctx:
            for width_bytes, height in shape:
                pitch = -(-width_bytes // _PITCH_ALIGN) * _PITCH_ALIGN
                pointer = int(check(self._cu.cuMemAlloc(pitch * height), f"cuMemAlloc({pitch * height})"))
                planes.append((pointer, pitch))
        return tuple(planes)

    def _take(self, shape: _Shape) -> _Block:
        with self._lock:
            free = self._free.get(shape)
            planes = free.pop() if free else None
        if planes is None:
            planes = self._allocate(shape)
        block = _Block(shape, planes)
        weakref.finalize(block, self._give_back, shape, planes)
        return block

    def _give_back(self, shape: _Shape, planes: tuple[tuple[int, int], ...]) -> None:
        with self._lock:
            if not self._closed:
                self._free.setdefault(shape, []).append(planes)
                return
        _free_idle(self._cu, self._ctx, {shape: [planes]})

    def _settle(self, *, wait: bool) -> None:
        """Let go of the decoder frames whose copies are done (``wait``: the oldest, waited for)."""
        while self._pending:
            event, source = self._pending[0]
            if not event.query():
                if not wait:
                    return
                event.wait(gpu_wait_timeout(), "copying a decoded frame into the frame pool")
            self._pending.popleft()
            source.release()
            self._events.append(event)
            wait = False

    def detach(self, frame: DecodedFrame) -> DecodedFrame:
        """A copy of ``frame`` in pooled memory, its copy enqueued; ``frame`` is released (its surface
        goes back to the decoder) once the copy is done. Host frames are returned as they are.

        Raises:
            SurfaceBudgetError: every pooled frame stayed held for the budget's wait timeout.
            GpuTimeoutError: the copy did not finish within the GPU wait timeout.
        """
        if not frame.on_gpu:
            return frame
        planes = frame.planes
        assert isinstance(planes, tuple)
        size_bytes = sum(p.pitch_bytes * p.height for p in planes)
        reservation = self.budget.reserve(size_bytes, frame.identity)
        try:
            shape: _Shape = tuple((p.width_bytes, p.height) for p in planes)
            block = self._take(shape)
            cu = self._cu
            with self._ctx:
                self._stream.order_after(frame.cuda_stream)
                for plane, (pointer, pitch) in zip(planes, block.planes):
                    copy = cu.CUDA_MEMCPY2D()
                    copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
                    copy.srcDevice = plane.device_ptr
                    copy.srcPitch = plane.pitch_bytes
                    copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
                    copy.dstDevice = pointer
                    copy.dstPitch = pitch
                    copy.WidthInBytes = plane.width_bytes
                    copy.Height = plane.height
                    check(cu.cuMemcpy2DAsync(copy, self._stream.handle), "cuMemcpy2DAsync (D->D)")
                event = self._events.pop() if self._events else CudaEvent(self._ctx)
                event.record(self._stream.handle)
        except BaseException:
            reservation.release()
            raise
        copied = tuple(
            CudaPtr2D(
                device_ptr=pointer,
                pitch_bytes=pitch,
                width_bytes=plane.width_bytes,
                height=plane.height,
                device_ordinal=self.ordinal,
                keep_alive=block,
            )
            for plane, (pointer, pitch) in zip(planes, block.planes)
        )
        out = DecodedFrame(
            copied,
            frame.pixel_format,
            frame.colour,
            frame.metadata,
            frame.identity,
            reservation=reservation,
            cuda_stream=self._stream_id,  # consumers order after the copy
            keep_alive=block,
        )
        self._pending.append((event, frame))
        self._settle(wait=len(self._pending) > _PENDING)
        self.copies += 1
        return out

    def close(self) -> None:
        """Free the pool's idle memory now, and each frame's when it is released. Idempotent."""
        while self._pending:
            self._settle(wait=True)
        with self._lock:
            self._closed = True
        self._finalizer()
        for event in self._events:
            event.close()
        self._stream.close()


def _free_idle(cu: Any, ctx: PrimaryContext, free: dict[_Shape, list[tuple[tuple[int, int], ...]]]) -> None:
    try:
        with ctx:
            for blocks in free.values():
                while blocks:
                    for pointer, _pitch in blocks.pop():
                        cu.cuMemFree(pointer)
    except Exception:
        pass  # at interpreter shutdown the driver may be gone: the process's end frees it
