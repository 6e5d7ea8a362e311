"""The GPU copy's CUDA side: copies on alpha2's copy stream, and letting go of frames once copied.

(mpv's ``hwdec_cuda.c``: the CUDA machinery that the Vulkan pairing, :mod:`.cuda_vk`, uses.)

* :func:`enqueue_copy` -- one frame's copy into a ring slot, on the copy stream: ordered after FFmpeg's
  decode work (``CopyStream.order_after``) and after Dawn's last access to the slot (its end-of-access
  fences, imported into CUDA), one ``cuMemcpy2DAsync`` per plane, a signal of each plane's semaphore,
  then the slot's event and the copy's own event recorded.
* :class:`CopyCompletions` -- lets go of each decoded frame once the copy reading it has completed, so
  the caller's thread never asks CUDA: asking whether an event has completed can stall behind NVDEC's
  work on the same context (on the H200 under cProfile: about 3 ms a query, most of the per-frame
  import cost when the caller's thread polled). Each copy's completion is a
  :class:`CudaEventSyncPoint` (``blocking_waits``), which the :class:`~alpha2.gpu.sync.WaiterThread`
  blocks on, never polls. The copies run in order on one stream and so complete in order: the oldest
  is the only one handed to the waiter, the next once it is done, so frames are let go in order.
* :func:`abandon_copy`, :func:`slot_work_done`, :func:`order_after_last_access` -- the slot-level
  waits of the pairing's failure path and of the ring's retirement.

The copy stream does not synchronize with the legacy default stream: it waits for FFmpeg's work
through an event, and FFmpeg's later work never waits for it (``_cuda.interop.CopyStream``).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from alpha2.gpu.errors import ClosedError, Error, GpuTimeoutError
from alpha2.gpu.handles import CudaPtr2D, OwnedFd
from alpha2.gpu.identity import BackendKind
from alpha2.gpu.sync import SyncPoint, WaiterThread, WaitResult, WaitStatus
from alpha2.native_gpu.interop.leases import ExternalSyncPoint, NativeSurfaceLease
from alpha2.native_gpu.interop.ring import RingPlane, RingSlot, wait_sync_fds

if TYPE_CHECKING:
    from alpha2.native_gpu._cuda.interop import CopyStream, CudaEvent, ExternalSemaphore, PrimaryContext

__all__ = [
    "CopyCompletions",
    "CudaEventSyncPoint",
    "PendingCopy",
    "abandon_copy",
    "copy_sync_point",
    "enqueue_copy",
    "import_plane_image",
    "order_after_last_access",
    "slot_work_done",
    "wait_release_fences",
]

_COPY_WHAT = "a GPU copy of a decoded frame"


class CudaEventSyncPoint(SyncPoint):
    """The work before a CUDA event's last record is done. Waited on by blocking, never polled by waits.

    ``blocking_waits``: a status query can cost milliseconds under NVDEC, so the WaiterThread (and
    ``wait``) block in :meth:`CudaEvent.wait <alpha2.native_gpu._cuda.interop.CudaEvent.wait>`, bounded by
    the wait's timeout, on the thread doing the wait.
    """

    backend = BackendKind.CUDA
    blocking_waits = True

    def __init__(self, event: CudaEvent, what: str = "CUDA work") -> None:
        super().__init__()
        self.event = event
        """The event, recorded after the work."""
        self.what = what
        """The work, in words (for timeout messages)."""

    def _poll(self) -> bool:
        return self.event.query()

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        try:
            self.event.wait(timeout_s, self.what)
        except GpuTimeoutError:
            return WaitStatus.TIMED_OUT
        return WaitStatus.SIGNALED


@dataclass(eq=False)
class PendingCopy:
    """One frame's GPU copy, from its enqueueing until its completion lets go of the frame."""

    done: CudaEventSyncPoint
    """The copy's completion: its event, recorded after it on the copy stream."""
    surface: NativeSurfaceLease | None
    """The decoded surface the copy reads; None once let go."""
    waited: list[ExternalSemaphore]
    """Dawn end-of-access fences (imported into CUDA) the copy waited on; closed once it is done."""


class CopyCompletions:
    """Lets go of each decoded surface once the GPU copy reading it has completed, through the WaiterThread.

    The caller records an event from :meth:`event` after a copy and hands it over with :meth:`add`; it
    never asks CUDA. The oldest copy's :class:`CudaEventSyncPoint` is waited on by the WaiterThread,
    bounded by the GPU wait timeout; once it has completed (or its context failed: nothing will read the
    surface again) the fences the copy waited on are closed, the surface is released, the event is
    reused and the next copy is waited on. A copy that outlasts the timeout keeps its surface (it may
    still be read) and is waited for again, unless :meth:`close` has begun. Release callbacks run on the
    waiter thread.

    Args:
        ctx: the CUDA context the copies' events and semaphores belong to (made current around closes).
        wait_timeout: the GPU wait timeout, asked at each wait.
        waiter: the WaiterThread (default: the process's, :meth:`WaiterThread.instance`, at each wait).
        new_event: makes an event when none is free (default: a ``CudaEvent`` of ``ctx``).
    """

    def __init__(
        self,
        ctx: PrimaryContext,
        wait_timeout: Callable[[], float],
        *,
        waiter: WaiterThread | None = None,
        new_event: Callable[[], CudaEvent] | None = None,
    ) -> None:
        self._ctx = ctx
        self._wait_timeout = wait_timeout
        self._waiter = waiter
        self._new_event = new_event if new_event is not None else self._cuda_event
        self._cond = threading.Condition()
        self._pending: collections.deque[PendingCopy] = collections.deque()
        self._free_events: list[CudaEvent] = []
        self._waiting = False  # the oldest pending copy is submitted to the waiter
        self._closing = False
        self._events_closed = False

    def _cuda_event(self) -> CudaEvent:
        from alpha2.native_gpu._cuda import interop

        return interop.CudaEvent(self._ctx)

    # -- the caller's side --------------------------------------------------------------------------

    def event(self) -> CudaEvent:
        """An event to record after the next copy (a reused one when free)."""
        with self._cond:
            if self._free_events:
                return self._free_events.pop()
        return self._new_event()

    def recycle(self, event: CudaEvent) -> None:
        """Give back an event that no pending copy uses (it is destroyed once :meth:`close` has run)."""
        with self._cond:
            if not self._events_closed:
                self._free_events.append(event)
                return
        event.close()

    def add(
        self, event: CudaEvent, surface: NativeSurfaceLease | None, waited: list[ExternalSemaphore]
    ) -> None:
        """Track a copy whose ``event`` is recorded: ``surface`` is released once it has completed."""
        copy = PendingCopy(CudaEventSyncPoint(event, _COPY_WHAT), surface, waited)
        with self._cond:
            self._pending.append(copy)
            if self._waiting:
                return  # waited on once the copies before it are done
            self._waiting = True
            oldest = self._pending[0]  # not ``copy`` when a wait was given up on (the waiter stopped)
        self._submit(oldest)

    def held(self) -> int:
        """Surfaces still held by copies that may be running."""
        with self._cond:
            return sum(1 for c in self._pending if c.surface is not None)

    # -- the waiter's side --------------------------------------------------------------------------

    def _submit(self, copy: PendingCopy) -> None:
        waiter = self._waiter if self._waiter is not None else WaiterThread.instance()
        try:
            waiter.submit(copy.done, self._wait_timeout(), lambda result: self._on_waited(copy, result))
        except (ClosedError, RuntimeError):
            self._stop_waiting()  # the waiter is gone (interpreter exit): the surfaces stay held

    def _stop_waiting(self) -> None:
        with self._cond:
            self._waiting = False
            self._cond.notify_all()

    def _on_waited(self, copy: PendingCopy, result: WaitResult) -> None:
        """On the waiter thread: let go of the oldest copy's surface once it completed; wait on the next."""
        if result.timed_out or isinstance(result.error, ClosedError):
            with self._cond:
                give_up = self._closing or result.failed
            if give_up:  # close() gave up on it, or the waiter stopped: the surface may still be read
                self._stop_waiting()
            else:
                self._submit(copy)  # outlasted the timeout: waited for again
            return
        # Signalled, or failed (the context failed: nothing will read the surface again).
        with self._cond:
            self._pending.popleft()
        try:
            self._finish(copy)
        finally:
            with self._cond:
                following = self._pending[0] if self._pending else None
                if following is None:
                    self._waiting = False
                self._cond.notify_all()
            if following is not None:
                self._submit(following)

    def _finish(self, copy: PendingCopy) -> None:
        surface, copy.surface = copy.surface, None
        waited, copy.waited = copy.waited, []
        try:
            with self._ctx:
                for semaphore in waited:
                    semaphore.close()
        except Error:
            pass  # a failed context: the semaphores go with it
        if surface is not None:
            surface.release()
        self.recycle(copy.done.event)

    # -- teardown -----------------------------------------------------------------------------------

    def close(self, timeout_s: float) -> bool:
        """Wait (bounded by ``timeout_s``) for the pending copies and destroy the free events.

        Returns True when every copy completed. A copy still running keeps its surface: its wait goes
        on until it completes (then the surfaces are released, in order) or times out (then they stay).
        """
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._closing = True
            while self._pending and self._waiting:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            done = not self._pending
            events, self._free_events = self._free_events, []
            self._events_closed = True
        for event in events:
            event.close()
        return done


# ---------------------------------------------------------------------------------------------------
# CUDA work on a slot


def wait_release_fences(ctx: PrimaryContext, slot: RingSlot, stream: object) -> None:
    """Make ``stream``'s later work wait on the slot's Dawn end-of-access fences: each is imported into
    CUDA (which takes the fd) and waited on; the imports move to ``slot.waited``."""
    from alpha2.native_gpu._cuda import interop

    for plane in slot.planes:
        while plane.release_fence_fds:
            fd = plane.release_fence_fds[0]
            semaphore = interop.ExternalSemaphore(ctx, fd, timeline=False)
            plane.release_fence_fds.pop(0)
            slot.waited.append(semaphore)
            semaphore.wait(stream)


def import_plane_image(ctx: PrimaryContext, plane: RingPlane, memory_fd: OwnedFd, size_bytes: int) -> None:
    """Import a plane image's memory (an OPAQUE_FD of ``size_bytes``; CUDA takes the fd) into CUDA as
    ``plane.cu_image``, the destination of :func:`enqueue_copy`."""
    from alpha2.native_gpu._cuda import interop

    g = plane.geometry
    plane.cu_image = interop.ExternalImage(
        ctx,
        memory_fd,
        size_bytes=size_bytes,
        width=g.width,
        height=g.height,
        bytes_per_channel=g.plane_format.bits_per_channel // 8,
        channels=g.plane_format.channels,
    )


def enqueue_copy(
    ctx: PrimaryContext,
    stream: CopyStream,
    slot: RingSlot,
    cuda_planes: tuple[CudaPtr2D, ...],
    producer: int | None,
    event: CudaEvent | None,
    *,
    signal: bool = True,
) -> None:
    """On ``stream``: wait for ``producer``'s work and Dawn's last fences, copy, signal, record.

    The one CUDA copy into a slot: the GPU copy's (:mod:`.cuda_vk`, at import or ahead) and a decoder
    process's (:class:`~alpha2.native_gpu.interop.handoff.CudaSlotWriter`). Each plane's ``uses`` counts
    the copy; ``slot.copy_done`` and ``event`` are recorded after it all. The fences waited on move to
    ``slot.waited`` (the caller closes them once the copy is done, or hands them to
    :meth:`CopyCompletions.add`). ``signal=False`` (a copy whose completion the CPU waits for) signals no
    plane semaphore.
    """
    from alpha2.native_gpu._cuda import interop

    stream.order_after(producer)
    handle = stream.handle
    wait_release_fences(ctx, slot, handle)
    for plane, src in zip(slot.planes, cuda_planes):
        cu_image = plane.cu_image
        assert cu_image is not None, "the slot's planes are made with it"
        interop.copy_plane_to_array(ctx, src, cu_image, handle)
    for plane in slot.planes:
        plane.uses += 1
        if signal:
            cu_semaphore = plane.cu_semaphore
            assert cu_semaphore is not None, "the slot's planes are made with it"
            cu_semaphore.signal(handle)
    copy_done = slot.copy_done
    assert copy_done is not None, "the slot's event is made with it"
    copy_done.record(handle)
    if event is not None:
        event.record(handle)


def slot_work_done(slot: RingSlot) -> bool:
    """Whether the slot's CUDA work is done (asks CUDA: for retired slots only, never per frame)."""
    return slot.copy_done is None or slot.copy_done.query()


def order_after_last_access(
    ctx: PrimaryContext, slot: RingSlot, stream: CopyStream, timeout_s: float
) -> None:
    """Order a retired slot's destruction after Dawn's last access: wait its fences, then record.

    CUDA waits on the imported fences; sync fds are waited on the CPU (up to ``timeout_s``); then
    ``copy_done`` is recorded, so that :func:`slot_work_done` covers Dawn's last access, and the
    slot's last copy too, which may have run on another stream (a decoder's, copying ahead).
    """
    handle = stream.handle
    with ctx:
        if slot.copy_done is not None:
            stream.wait_for(slot.copy_done)
        wait_release_fences(ctx, slot, handle)
    wait_sync_fds(slot, timeout_s)
    if slot.copy_done is not None:
        slot.copy_done.record(handle)


def abandon_copy(slot: RingSlot, stream: CopyStream, timeout_s: float) -> None:
    """Wait (bounded) for whatever part of a failed copy reached the stream. Never raises."""
    if slot.copy_done is None:
        return
    # Part of the copy may be enqueued and still read the caller's frame: record an event after
    # whatever made it onto the stream and wait for it before the frame is handed back.
    try:
        slot.copy_done.record(stream.handle)
        slot.copy_done.wait(timeout_s, "an abandoned GPU copy")
    except Error:
        pass


def copy_sync_point(copy_done: CudaEvent, uses: int) -> ExternalSyncPoint:
    """The imported frame's sync point: the slot's event, recorded after its copy (the ``uses``-th)."""

    def wait_native(timeout_s: float) -> WaitStatus:
        try:
            copy_done.wait(timeout_s)
        except GpuTimeoutError:
            return WaitStatus.TIMED_OUT
        return WaitStatus.SIGNALED

    return ExternalSyncPoint(
        BackendKind.CUDA,
        poll=copy_done.query,
        wait_native=wait_native,
        gpu_ordered=True,
        timeline_value=uses,
        description="CUDA copy signalled a Vulkan semaphore that Dawn's begin_access waits on",
    )
