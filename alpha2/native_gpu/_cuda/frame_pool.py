"""Decoded CUDA frames copied into memory of alpha2's own, so that frames kept for a while (a batch for
a data loader, a segment's reorder buffer) do not pin the decoder's surfaces.

NVDEC hands out frames from a small pool (FFmpeg's, at most about 32 surfaces a decoder, of which the
application may hold about 14): a program that keeps more frames than that stalls the decoder. A
:class:`CudaFramePool` copies each frame's planes (``cuMemcpy2DAsync`` device -> device, ordered after
the decode on the frame's stream) and hands back at once a :class:`~alpha2.gpu.frames.DecodedFrame` over
pooled allocations whose ``cuda_stream`` is the copy's (consumers order after it, as after a decode);
the decoder's frame is let go once its copy is known done (queried at the next copies, waited for,
bounded, when more than a few are pending). The copy runs on the frame's own stream (FFmpeg's), so it
is ordered after the decode with no cross-stream wait. Per frame: one ``cuMemcpy2DAsync`` (NV12 / P010
planes that lie back to back in one allocation, as FFmpeg's pools make them, are copied as one) and one
event record; a thread that copies many frames keeps the context current (``with pool.context:``) so
that no call pushes it. Every driver call lets go of the GIL, and under many decoder threads each
costs a wait to take it back: the fewer, the faster. A pooled block returns to the
pool when the frame and every array of it (DLPack consumers hold the keep-alive) are gone. The pool
holds at most ``max_frames`` blocks: a full pool waits (bounded) for a frame to be released, which is
the back-pressure a batch or a reorder buffer needs.
"""

from __future__ import annotations

import collections
import threading
import time
import weakref
from typing import Any

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.handles import CudaPtr2D
from alpha2.gpu.surfaces import SurfaceBudgetError
from alpha2.native_gpu._cuda.copy2d import DeviceCopy2D, back_to_back
from alpha2.native_gpu._cuda.core import check
from alpha2.native_gpu._cuda.interop import CudaEvent, PrimaryContext, primary_context
from alpha2.native_gpu.device.waits import gpu_wait_timeout

__all__ = ["CudaFramePool"]

_PITCH_ALIGN = 256
"""Row pitch of pooled planes (bytes): what texture and DLPack consumers read fastest."""

_PENDING = 8
"""Copies in flight at most before :meth:`CudaFramePool.detach` waits for the oldest."""
_QUERY_FROM = 3
"""Copies in flight before :meth:`CudaFramePool.detach` asks which are done (a driver call each)."""

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

    Not thread-safe for :meth:`detach` (one copying thread a pool); frames may be released anywhere.

    Args:
        ordinal: CUDA device ordinal (the decoder's).
        max_frames: Frames the pool holds at most; :meth:`detach` waits up to ``wait_timeout_s`` for one
            to be released when all are taken.
        wait_timeout_s: How long :meth:`detach` waits for a free block.
    """

    def __init__(self, ordinal: int, *, max_frames: int, wait_timeout_s: float = 10.0) -> None:
        if max_frames < 1:
            raise InvalidInputError(f"max_frames must be >= 1, got {max_frames}")
        self._ctx: PrimaryContext = primary_context(ordinal)
        self._cu = self._ctx._cu
        self.ordinal = ordinal
        """CUDA device ordinal."""
        self.max_frames = max_frames
        """Blocks (frames) the pool holds at most."""
        self._wait_timeout_s = wait_timeout_s
        self._cond = threading.Condition()
        self._detaching = threading.Lock()  # the copy descriptor and the pending copies are shared
        self._free: dict[_Shape, list[tuple[tuple[int, int], ...]]] = {}
        self._blocks = 0  # allocated, free or in use
        self._events: list[CudaEvent] = []
        self._pending: collections.deque[tuple[CudaEvent, DecodedFrame]] = collections.deque()
        self._copier = DeviceCopy2D(self._cu, "into the frame pool")
        self._closed = False
        # Blocks hold the pool (their finalizers call it back), so this runs once every block is gone.
        self._finalizer = weakref.finalize(self, _free_idle, self._cu, self._ctx, self._free)
        self.copies = 0
        """Frames copied so far."""

    @property
    def context(self) -> PrimaryContext:
        """The CUDA context; ``with pool.context:`` around many :meth:`detach` calls pushes it once."""
        return self._ctx

    def _allocate(self, shape: _Shape) -> tuple[tuple[int, int], ...]:
        planes = []
        with self._ctx:
            for width_bytes, height in shape:
                pitch = -(-width_bytes // _PITCH_ALIGN) * _PITCH_ALIGN
                pointer = int(check(self._cu.cuMemAlloc(pitch * height), f"cuMemAlloc({pitch * height})"))
                planes.append((pointer, pitch))
        return tuple(planes)

    def _take(self, shape: _Shape) -> _Block:
        deadline = time.monotonic() + self._wait_timeout_s
        with self._cond:
            while True:
                free = self._free.get(shape)
                if free:
                    planes: tuple[tuple[int, int], ...] | None = free.pop()
                    break
                if self._blocks < self.max_frames:
                    self._blocks += 1
                    planes = None
                    break
                if any(self._free.values()):  # idle blocks of another size: make room
                    other = next(k for k, v in self._free.items() if v)
                    _free_idle(self._cu, self._ctx, {other: [self._free[other].pop()]})
                    self._blocks -= 1
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SurfaceBudgetError(
                        f"all {self.max_frames} pooled frames stayed held for {self._wait_timeout_s:g} s; "
                        "release frames you hold"
                    )
                self._cond.wait(left)
        if planes is None:
            try:
                planes = self._allocate(shape)
            except BaseException:
                with self._cond:
                    self._blocks -= 1
                raise
        block = _Block(shape, planes)
        weakref.finalize(block, self._give_back, shape, planes)
        return block

    def _give_back(self, shape: _Shape, planes: tuple[tuple[int, int], ...]) -> None:
        with self._cond:
            if not self._closed:
                self._free.setdefault(shape, []).append(planes)
                self._cond.notify()
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
        """A copy of ``frame`` in pooled memory, its copy enqueued on the frame's stream; ``frame`` is
        released (its surface goes back to the decoder) once the copy is done. Host frames are
        returned as they are. Several threads may detach at once (one at a time copies).

        Raises:
            SurfaceBudgetError: every pooled frame stayed held for the wait timeout.
            GpuTimeoutError: a copy did not finish within the GPU wait timeout.
        """
        if not frame.on_gpu:
            return frame
        with self._detaching:
            return self._detach(frame)

    def _detach(self, frame: DecodedFrame) -> DecodedFrame:
        planes = frame.planes
        assert isinstance(planes, tuple)
        stream = frame.cuda_stream or 0
        first = planes[0]
        # Planes back to back with one pitch (FFmpeg's CUDA pools): one allocation, one copy.
        together = back_to_back(planes)
        shape: _Shape = (
            ((max(p.width_bytes for p in planes), sum(p.height for p in planes)),)
            if together
            else tuple((p.width_bytes, p.height) for p in planes)
        )
        block = self._take(shape)
        with self._ctx:
            if together:
                pointer, pitch = block.planes[0]
                width, rows = shape[0]
                self._copier.enqueue(first.device_ptr, first.pitch_bytes, pointer, pitch, width, rows, stream)
                where = []
                for plane in planes:
                    where.append((pointer, pitch))
                    pointer += pitch * plane.height
            else:
                where = list(block.planes)
                for plane, (pointer, pitch) in zip(planes, where):
                    self._copier.enqueue(
                        plane.device_ptr,
                        plane.pitch_bytes,
                        pointer,
                        pitch,
                        plane.width_bytes,
                        plane.height,
                        stream,
                    )
            event = self._events.pop() if self._events else CudaEvent(self._ctx)
            event.record(stream)
            self._pending.append((event, frame))
            if len(self._pending) > _QUERY_FROM:
                self._settle(wait=len(self._pending) > _PENDING)
        copied = tuple(
            CudaPtr2D(
                device_ptr=pointer,
                pitch_bytes=pitch,
                width_bytes=plane.width_bytes,
                height=plane.height,
                device_ordinal=self.ordinal,
                keep_alive=block,
            )
            for plane, (pointer, pitch) in zip(planes, where)
        )
        self.copies += 1
        return DecodedFrame(
            copied,
            frame.pixel_format,
            frame.colour,
            frame.metadata,
            frame.identity,
            cuda_stream=stream,  # consumers order after the copy, as after the decode
            keep_alive=block,
        )

    def close(self) -> None:
        """Free the pool's idle memory now, and each frame's when it is released. Idempotent."""
        with self._detaching:
            while self._pending:
                self._settle(wait=True)
        with self._cond:
            self._closed = True
        self._finalizer()
        for event in self._events:
            event.close()
        self._events.clear()


def _free_idle(cu: Any, ctx: PrimaryContext, free: dict[_Shape, list[tuple[tuple[int, int], ...]]]) -> None:
    try:
        with ctx:
            for blocks in free.values():
                while blocks:
                    for pointer, _pitch in blocks.pop():
                        cu.cuMemFree(pointer)
    except Exception:
        pass  # at interpreter shutdown the driver may be gone: the process's end frees it
