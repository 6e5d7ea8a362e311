"""GPU copy: NVDEC (CUDA) planes -> Vulkan-owned plane images -> Dawn textures, fenced both ways.

The pairing for a ``wgpudawn`` device with 'shared-texture-memory-opaque-f-d' and
'shared-fence-vk-semaphore-opaque-f-d' whose Vulkan device UUID matches the SharedVulkanContext's
adapter and a CUDA device. (mpv's ``hwdec_cuda_vk``, with Dawn as the consumer; the CUDA machinery is
in :mod:`.cuda`, as mpv's is in ``hwdec_cuda``, and the ring's bookkeeping in :mod:`.ring`.)

A ring of slots, each one plane image per plane of the stream's format, made once per stream:

* Vulkan (the SharedVulkanContext, ``_vk.export``): an OPTIMAL image on dedicated OPAQUE_FD memory,
  moved once UNDEFINED -> GENERAL and released to ``VK_QUEUE_FAMILY_EXTERNAL``; a binary semaphore
  exportable as OPAQUE_FD.
* CUDA (``_cuda.interop``): the memory imported once as a mipmapped array (level 0 is the copy
  destination); the semaphore imported once.
* Dawn (``wgpudawn.backends.dawn.extras``): the memory imported once as a SharedTextureMemory (from
  the same VkImageCreateInfo) and a texture + view made on it; the semaphore imported once as a
  SharedFence.

Per frame (:meth:`CudaVkPairing.acquire`): take a free slot of the stream (waiting up to the GPU wait
timeout when all are held by leases); enqueue the copy on alpha2's CUDA copy stream
(:func:`~alpha2.native_gpu.interop.cuda.enqueue_copy`: after FFmpeg's decode work and the fences
Dawn's last access to the slot ended with, then a signal of each plane's semaphore); Dawn
``begin_access`` on each plane, waiting on the plane's semaphore as a shared fence, so the GPU orders
the copy before any sampling. No byte crosses the CPU. The FFmpeg frame is let go once the copy has
completed, found by the WaiterThread (:class:`~alpha2.native_gpu.interop.cuda.CopyCompletions`), so
the caller never asks CUDA. Releasing the lease ends Dawn's access; the fence ``end_access`` returns
is kept (its fd) and imported into CUDA by the slot's next copy, which waits on it on the GPU. Every
wait is bounded by the GPU wait timeout.

Copied ahead (:meth:`CudaVkPairing.copy_ahead`, a DecodeSession's ``set_copy_ahead`` hook): the
decoder's prefetch thread takes an idle slot of the stream, imports and waits Dawn's last fence and
enqueues the copy, on a CUDA stream of that thread's own, without a Dawn call; the
frame is handed out carrying the slot at once, the slot holding the decoded frame until the copy is
known done. The decoder's thread finds that out at its next copy (an event query); an import that
comes first waits for it (bounded). The import then only begins Dawn's access, waiting on no fence
(no semaphore is signalled: the copy is known complete on the CPU), and lets the frame's surface go.
With many streams in one process this takes the CUDA calls off the importing thread, and the copies
of many decoders run side by side. Slots taken ahead do not count against ``slots`` until imported,
so an import never waits for a slot held by a later frame; they are given back on the caller's
thread, the only one that touches Dawn, once their copy is known done.

Semaphores are binary: Dawn's SharedFenceVkSemaphoreOpaqueFD imports into a binary semaphore on each
access (Dawn 0.32), so a timeline semaphore could not be waited there; each plane has its own (one
signal, one wait per use), as in shared/probes/nvdec_to_dawn.py. ``NativeImageState.timeline_value``
reports the use count. A slot that fails half-way is retired (destroyed once its CUDA work is done)
rather than reused in an unknown state.

The module is one state machine (slot creation, acquire, copy ahead, release, retirement, close)
and stays whole for that reason; what stands alone lives beside it: the CUDA copy and its completions
in :mod:`.cuda`, the ring's bookkeeping in :mod:`.ring`.
"""

from __future__ import annotations

import collections
import functools
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from alpha2.gpu.budget import MemoryBudget
from alpha2.gpu.errors import (
    DeviceLostError,
    Error,
    InternalError,
    InvalidInputError,
    UnsupportedError,
)
from alpha2.gpu.formats import PixelFormat, PlaneFormat, UploadConversion
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.handles import CudaPtr2D
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.surfaces import SurfaceIdentity
from alpha2.gpu.webgpu import (
    FEATURE_SHARED_FENCE_OPAQUE_FD,
    FEATURE_SHARED_TEXTURE_OPAQUE_FD,
    WebGpuDevice,
    WebGpuDeviceInfo,
    WebGpuImplementation,
)
from alpha2.native_gpu.interop import dawn_planes
from alpha2.native_gpu.interop.cpu_upload import check_16bit, frame_geometry, picture_size
from alpha2.native_gpu.interop.cuda import (
    CopyCompletions,
    abandon_copy,
    copy_sync_point,
    enqueue_copy,
    import_plane_image,
    order_after_last_access,
    slot_work_done,
)
from alpha2.native_gpu.interop.leases import (
    DEFAULT_SLOTS_PER_KEY,
    ImportTicketStats,
    InteropPairing,
    NativeSurfaceLease,
    PairingTicket,
)
from alpha2.native_gpu.interop.ring import (
    Ring,
    RingKey,
    RingPlane,
    RingSlot,
    wait_sync_fds,
)

if TYPE_CHECKING:
    from alpha2.native_gpu._cuda.interop import CopyStream, CudaEvent
    from alpha2.native_gpu.device.shared import SharedVulkanContext

__all__ = ["CudaVkPairing", "RingSlot"]

_PENDING_HERE_MAX = 32
"""Copies ahead a decoder's thread keeps track of to let go of once done (the import does the rest)."""

# The formats whose planes CUDA can write as 1- or 2-byte channels: 8-bit and 16-bit unorm planes.
_COPYABLE = {PlaneFormat.R8, PlaneFormat.RG8, PlaneFormat.RGBA8, PlaneFormat.R16, PlaneFormat.RG16}


@functools.cache  # one entry per PixelFormat; asked twice for every frame
def _uncopyable_reason(pixel_format: PixelFormat) -> str | None:
    """Why the GPU copy does not take frames of ``pixel_format`` (None when it does)."""
    for plane_format in pixel_format.plane_formats:
        if plane_format not in _COPYABLE or plane_format.upload_conversion is not UploadConversion.NONE:
            name = pixel_format.ffmpeg_name
            return f"{name} has {plane_format.name} planes, which the GPU copy does not take"
    return None


class CudaVkPairing(InteropPairing):
    """CUDA planes copied on the GPU into Vulkan-owned images that Dawn samples; fenced both ways."""

    path = ExecutionPath.GPU_COPY
    name = "cuda_vk"

    # -- table interface ----------------------------------------------------------------------------

    @classmethod
    def takes(cls, on_gpu: bool) -> bool:
        return on_gpu

    @classmethod
    def not_applicable_reason(cls, on_gpu: bool) -> str:
        return "the frame is in host memory: there is nothing on the GPU to copy (CPU upload is its path)"

    @classmethod
    def unavailable_reason(
        cls, device: WebGpuDevice, info: WebGpuDeviceInfo, options: dict[str, Any]
    ) -> str | None:
        if info.implementation is not WebGpuImplementation.DAWN:
            return (
                f"{info.implementation.value} (wgpu-native) cannot import external memory; the GPU copy "
                "needs a wgpudawn device"
            )
        missing = [
            name
            for name in (FEATURE_SHARED_TEXTURE_OPAQUE_FD, FEATURE_SHARED_FENCE_OPAQUE_FD)
            if name not in info.features
        ]
        if missing:
            return f"the Dawn device lacks {missing}; request it with required_features={missing}"
        if info.vulkan_device_uuid is None:
            return f"Dawn reports no Vulkan device UUID for its adapter (backend {info.backend_type or '?'})"
        from alpha2.native_gpu._cuda import interop

        reason = interop.download_unavailable_reason()
        if reason is not None:
            return f"CUDA is not usable: {reason}"
        return None

    @classmethod
    def create(
        cls,
        device: WebGpuDevice,
        info: WebGpuDeviceInfo,
        *,
        gpu_module: Any,
        options: dict[str, Any],
        wait_timeout: Callable[[], float],
    ) -> CudaVkPairing:
        found = _find_shared_devices(info, options)
        try:
            return cls(
                device,
                info,
                context=found.context,
                owns_context=found.owns_context,
                cuda_ordinal=found.cuda_ordinal,
                slots=int(options.get("slots", DEFAULT_SLOTS_PER_KEY)),
                wait_timeout=wait_timeout,
                memory_budget=options.get("memory_budget"),
            )
        except BaseException:
            if found.owns_context:
                found.context.close()
            raise

    # -- set-up ------------------------------------------------------------------------------------

    def __init__(
        self,
        device: WebGpuDevice,
        info: WebGpuDeviceInfo,
        *,
        context: SharedVulkanContext,
        owns_context: bool,
        cuda_ordinal: int,
        slots: int,
        wait_timeout: Callable[[], float],
        memory_budget: MemoryBudget | None = None,
    ) -> None:
        from alpha2.native_gpu._cuda import interop
        from alpha2.native_gpu.device.shared import QueueRole

        self._device = device
        self._info = info
        self._context = context
        self._owns_context = owns_context
        self._vk = context._internal
        self._queue_family = context.queue_families[QueueRole.GRAPHICS]
        self.cuda_ordinal = cuda_ordinal
        """The CUDA device the copies run on (same UUID as Dawn's adapter)."""
        self._ctx = interop.primary_context(cuda_ordinal)
        self._stream = interop.CopyStream(self._ctx)
        self._wait_timeout = wait_timeout
        self._lock = threading.RLock()
        self._copies = CopyCompletions(self._ctx, wait_timeout)
        # Copies ahead run side by side on the decoders' threads, each on a stream of the pool (one per
        # copy running at once); the gate counts those running, for close to wait for.
        self._ahead_gate = threading.Condition(threading.Lock())
        self._ahead_running = 0
        self._ahead_streams: list[CopyStream] = []
        self._idle_ahead_streams: collections.deque[CopyStream] = collections.deque()
        self._here = threading.local()  # each decoder's thread: its copies ahead not yet known done
        self._ahead_counts = [0, 0]  # copied ahead, offered but copied at import
        self._returns: collections.deque[tuple[RingSlot, bool]] = collections.deque()
        # Streams whose copies ahead found no idle slot: the caller's thread makes one more per import.
        self._starved: set[RingKey] = set()
        self._cannot_grow: set[RingKey] = set()
        self._closed = False
        self._ring = Ring(
            create=self._new_slot,
            work_done=slot_work_done,
            order_after_last_access=lambda slot: order_after_last_access(
                self._ctx, slot, self._stream, wait_timeout()
            ),
            destroy=self._destroy_slot,
            per_key=slots,
            memory_budget=memory_budget,
        )

    def _new_slot(self, key: RingKey) -> RingSlot:
        """Allocate a slot's images and import them into CUDA and Dawn; undo everything on failure."""
        from alpha2.native_gpu._cuda import interop
        from alpha2.native_gpu._vk import export

        slot = RingSlot.for_key(key)
        extras = dawn_planes.dawn_extras()
        try:
            images = dawn_planes.make_plane_images(self._vk, slot, self._queue_family, self._wait_timeout())
            for index, (plane, image) in enumerate(zip(slot.planes, images)):
                semaphore = export.ExportableSemaphore(self._vk, timeline=False)
                plane.semaphore = semaphore
                import_plane_image(self._ctx, plane, image.export_memory_fd(), image.size_bytes)
                plane.cu_semaphore = interop.ExternalSemaphore(
                    self._ctx, semaphore.export_fd(), timeline=False
                )
                dawn_planes.import_plane(self._device, image, plane, index)
                with semaphore.export_fd() as semaphore_fd:
                    plane.fence = extras.import_shared_fence(
                        self._device,
                        label=f"alpha2 copy-done {index}",
                        vk_semaphore_opaque_fd=semaphore_fd.fileno(),
                    )
            slot.copy_done = interop.CudaEvent(self._ctx)
        except BaseException:
            self._destroy_slot(slot)
            raise
        return slot

    # -- per frame ---------------------------------------------------------------------------------

    def refuses(self, frame: DecodedFrame) -> str | None:
        if self._closed:
            return "the GPU-copy pairing is closed"
        planes = frame.planes
        if not isinstance(planes, tuple) or not all(isinstance(p, CudaPtr2D) for p in planes):
            return "the frame has no CUDA planes"
        if planes and planes[0].device_ordinal != self.cuda_ordinal:
            return (
                f"the frame was decoded on CUDA device {planes[0].device_ordinal}, the copy runs on device "
                f"{self.cuda_ordinal} (Dawn's GPU)"
            )
        return _uncopyable_reason(frame.pixel_format)

    def prepare_stream(self, identity: SurfaceIdentity, *, ahead: bool = False) -> None:
        """Make the ring's ``slots`` slots for ``identity``'s frames (Vulkan images, CUDA and Dawn
        imports) now, so that none is made mid-stream while fewer are in flight (a copy ahead takes
        only slots already made). ``ahead`` (the decoder copies ahead): as many more as a decoder's
        thread may hold, up to twice ``slots``, which the first frames' imports would make otherwise,
        each stream one per import, while the player's clock already runs (as far as the memory
        budget allows; the imports make the rest when it does).

        A format the copy does not take is left alone: its frames fall back, reported as they come.
        """
        pixel_format = identity.pixel_format
        if _uncopyable_reason(pixel_format) is not None:
            return
        geometry = frame_geometry(pixel_format, identity.width, identity.height)
        check_16bit(self._info, geometry, pixel_format)
        key = RingKey.of(identity, pixel_format, geometry)
        with self._ctx:
            taken: list[RingSlot] = []
            try:
                for _ in range(self._ring.per_key):
                    taken.append(self._ring.take(key, self._wait_timeout())[0])
            finally:
                for slot in taken:
                    self._ring.give_back(slot)
            try:
                for _ in range(self._ring.per_key if ahead else 0):
                    if not self._ring.grow(key, 2 * self._ring.per_key):
                        break
            except Error:
                pass  # the budget or the device refused one more: the per-frame growth tries again

    def poll(self) -> None:
        """Destroy retired slots whose CUDA work is done (the WaiterThread lets go of surfaces)."""
        self._drain_returns()
        if not self._ring.has_retired():
            return  # the per-frame case: no context push
        with self._ctx:
            self._ring.poll()

    def copy_ahead(self, frame: DecodedFrame) -> _CopiedAhead | None:
        """Copy an NVDEC frame into an idle slot of its stream now, on the calling (decoder's) thread;
        None when it cannot be done here (the import then copies, as without this). Thread-safe: the
        copies of several decoders' threads run side by side, each thread's on a CUDA stream of its
        own, and none waits for another. Makes no Dawn call, so it runs beside the caller's imports.

        Only an idle slot is taken, never a new one made (making one is Dawn's work): ``prepare``
        makes the stream's ``slots``, and when none is idle here the next import makes one more, up to
        twice ``slots``. Dawn's end-of-access fence is imported and waited on here, on the GPU, as
        at import. The copy signals no semaphore, and is not waited for: the frame is handed out at
        once, and the slot holds the decoded frame until the copy is known done, which this thread's
        next copy ahead finds out (an event query), or else the import, which then waits for it
        (bounded). The import's ``begin_access`` waits on nothing, and the frame's surface is let go
        there.
        """
        if self.refuses(frame) is not None:
            return None
        pixel_format = frame.pixel_format
        width, height = picture_size(frame)
        geometry = frame_geometry(pixel_format, width, height)
        cuda_planes = frame.planes
        assert isinstance(cuda_planes, tuple)
        slot = None
        if len(cuda_planes) >= len(geometry):
            key = RingKey.of(frame.identity, pixel_format, geometry)
            slot = self._ring.take_idle(key)
            if slot is None and key not in self._cannot_grow:
                self._starved.add(key)
        if slot is None:
            self._count_ahead(False)
            return None
        if not self._enter_ahead():  # closed meanwhile
            self._return_ahead(slot, False)
            return None
        stream: CopyStream | None = None
        try:
            with self._ctx:
                self._settle_here()
                self.poll_sync_fds(slot)
                stream = self._take_ahead_stream()
                enqueue_copy(self._ctx, stream, slot, cuda_planes, frame.cuda_stream, None, signal=False)
            slot.reading, slot.unsettled = (frame.keep_alive, cuda_planes), True
        except Exception:
            # The import copies the frame again, and reports what fails there. The slot is retired on
            # the caller's thread (destroying it drops Dawn objects).
            slot.broken = True
            abandon_copy(slot, stream or self._stream, self._wait_timeout())
            self._return_ahead(slot, True)
            self._count_ahead(False)
            return None
        finally:
            self._leave_ahead()
        pending = self._pending_here()
        pending.append(slot)
        if len(pending) > _PENDING_HERE_MAX:  # only a shortcut: the import settles what is left
            pending.popleft()
        self._count_ahead(True)
        return _CopiedAhead(self, slot)

    def _enter_ahead(self) -> bool:
        with self._ahead_gate:
            if self._closed:
                return False
            self._ahead_running += 1
            return True

    def _leave_ahead(self) -> None:
        with self._ahead_gate:
            self._ahead_running -= 1
            if not self._ahead_running:
                self._ahead_gate.notify_all()

    def _take_ahead_stream(self) -> CopyStream:
        """This thread's copy stream: each decoder's copies go on a stream of its own, so that one's
        wait on Dawn's fence holds up no other's. A thread that ends hands its stream on to the next
        thread that copies ahead (a seek restarts a decoder's thread): one stream per thread alive."""
        from alpha2.native_gpu._cuda import interop

        stream: CopyStream | None = getattr(self._here, "stream", None)
        if stream is not None:
            return stream
        try:
            stream = self._idle_ahead_streams.pop()  # atomic: two threads never take the same one
        except IndexError:
            stream = interop.CopyStream(self._ctx)
            with self._ahead_gate:
                self._ahead_streams.append(stream)
        self._here.stream = stream
        weakref.finalize(threading.current_thread(), self._idle_ahead_streams.append, stream)
        return stream

    def _pending_here(self) -> collections.deque[RingSlot]:
        pending: collections.deque[RingSlot] | None = getattr(self._here, "pending", None)
        if pending is None:
            pending = self._here.pending = collections.deque()
        return pending

    def _settle_here(self) -> None:
        """Let go of what this thread's earlier copies ahead hold, for those now done (one event query
        each; the import settled the others already, or will)."""
        pending = self._pending_here()
        for _ in range(len(pending)):
            slot = pending.popleft()
            try:
                done = self._settle(slot, None)
            except Error:
                continue  # the import (or the give-back) settles it, and reports what fails there
            if not done:
                pending.append(slot)

    def _settle(self, slot: RingSlot, timeout_s: float | None) -> bool:
        """Whether the copy made ahead into ``slot`` is done; once it is, the fence it waited on is
        closed and the frame it read let go. ``timeout_s`` None: ask once, never block (False when
        another thread is finding out); else wait up to that.

        Raises:
            GpuTimeoutError: the copy did not finish within ``timeout_s``.
            CudaError: a driver call failed.
        """
        if not slot.unsettled:
            return True
        lock = slot.settle_lock
        if not lock.acquire(timeout_s is not None):
            return False
        try:
            if not slot.unsettled:  # another thread found it done meanwhile
                return True
            copy_done = slot.copy_done
            assert copy_done is not None, "the slot's event is made with it"
            with self._ctx:
                if timeout_s is None:
                    if not copy_done.query():
                        return False
                else:
                    copy_done.wait(timeout_s, "a GPU copy made on the decoder's thread")
                waited, slot.waited = slot.waited, []
                for semaphore in waited:
                    semaphore.close()
            slot.reading, slot.unsettled = None, False
            return True
        finally:
            lock.release()

    def _return_ahead(self, slot: RingSlot, broken: bool) -> None:
        """A slot from a copy ahead, given back by the caller's thread at its next import or poll: giving
        back may destroy a slot, and only that thread touches Dawn. After close there is no next import:
        the slot is retired at once."""
        self._returns.append((slot, broken))
        if self._closed:  # checked after the append: a close running now drains it, or this does
            self._drain_returns()

    def _grow(self) -> None:
        """Make one more slot for a stream whose copies ahead found none idle, up to twice ``slots``:
        besides the imports' own, the decoder's thread holds one for each frame it has copied ahead.
        A slot that cannot be made (the memory budget, the device) ends the growth for that stream."""
        try:
            key = self._starved.pop()
        except KeyError:
            return
        try:
            with self._ctx:
                grown = self._ring.grow(key, 2 * self._ring.per_key)
        except Error:
            grown = False
        if not grown:
            if len(self._cannot_grow) > 256:  # keys of streams long gone: a bound, not bookkeeping
                self._cannot_grow.clear()
            self._cannot_grow.add(key)

    def _drain_returns(self) -> None:
        while True:
            try:
                slot, broken = self._returns.popleft()  # atomic: two threads never take the same one
            except IndexError:
                return
            if not broken:
                # The slot's next copy may run on another stream: this one must be done first.
                try:
                    self._settle(slot, self._wait_timeout())
                except Error:
                    slot.broken = broken = True  # retired: destroyed once its CUDA work is done
            self._ring.give_back(slot, broken=broken, ahead=True)

    def _count_ahead(self, copied: bool) -> None:
        self._ahead_counts[0 if copied else 1] += 1  # under the GIL: a lost count is only a statistic

    def acquire(self, frame: DecodedFrame, surface: NativeSurfaceLease, note: str | None) -> PairingTicket:
        if self._returns:
            self._drain_returns()
        if self._starved:
            self._grow()
        ahead = frame.take_ahead()
        if ahead is not None:
            slot = ahead.take(self) if isinstance(ahead, _CopiedAhead) else None
            identity = frame.identity
            if slot is not None and (slot.key.decoder_id, slot.key.generation, slot.key.pixel_format) == (
                identity.decoder_id,
                identity.generation,
                frame.pixel_format,
            ):
                self._ring.claim_ahead(slot)
                return self._acquire_copied(frame, surface, slot)  # no CUDA call: no context push
            if slot is not None:
                self._return_ahead(slot, False)  # given back once its copy is known done
                self._drain_returns()
            ahead.discard()
        with self._ctx:  # one context push for the whole import
            return self._acquire(frame, surface)

    def _acquire(self, frame: DecodedFrame, surface: NativeSurfaceLease) -> PairingTicket:
        pixel_format = frame.pixel_format
        width, height = picture_size(frame)
        geometry = frame_geometry(pixel_format, width, height)
        check_16bit(self._info, geometry, pixel_format)
        cuda_planes = frame.planes
        assert isinstance(cuda_planes, tuple)
        if len(cuda_planes) < len(geometry):
            raise InvalidInputError(
                f"{pixel_format.ffmpeg_name} has {len(geometry)} planes, the frame brought {len(cuda_planes)}"
            )
        key = RingKey.of(frame.identity, pixel_format, geometry)
        timeout_s = self._wait_timeout()
        slot, _reused = self._ring.take(key, timeout_s)
        event = self._copies.event()
        try:
            values = self._enqueue_copy(slot, cuda_planes, frame.cuda_stream, event)
        except BaseException:
            self._copies.recycle(event)
            self._fail_slot(slot, copy_enqueued=True)
            raise
        # From here the copy reads the frame: the surface stays held until the copy's event completes.
        try:
            self._begin_access(slot, values)
        except BaseException as exc:
            # The frame goes back to the caller once the copy is done (the bounded wait in _fail_slot);
            # the fences it waited on stay with the slot, which is retired.
            self._copies.recycle(event)
            self._fail_slot(slot, copy_enqueued=True)
            raise _typed(exc, "Dawn begin_access on a GPU-copy plane") from exc
        waited, slot.waited = slot.waited, []
        self._copies.add(event, surface, waited)
        return self._ticket(frame, slot, cuda_planes)

    def _acquire_copied(
        self, frame: DecodedFrame, surface: NativeSurfaceLease, slot: RingSlot
    ) -> PairingTicket:
        """Import a frame copied ahead (:meth:`copy_ahead`): once the copy is known done (usually found
        by the decoder's thread already: no CUDA call here), Dawn waits on nothing."""
        cuda_planes = frame.planes
        assert isinstance(cuda_planes, tuple)
        try:
            self._settle(slot, self._wait_timeout())
        except BaseException as exc:
            self._fail_slot(slot, copy_enqueued=False)  # retired once the copy is done; it holds the frame
            raise _typed(exc, "a GPU copy made on the decoder's thread") from exc
        try:
            self._begin_access(slot, None)
        except BaseException as exc:
            self._fail_slot(slot, copy_enqueued=False)
            raise _typed(exc, "Dawn begin_access on a GPU-copy plane") from exc
        surface.release()  # the copy completed on the decoder's thread: nothing reads the frame now
        return self._ticket(frame, slot, cuda_planes)

    def _begin_access(self, slot: RingSlot, values: list[int] | None) -> None:
        """Dawn's access to each plane, waiting on its semaphore at ``values`` (None: on nothing, the
        copy being done). On a failure the accesses that began are ended, and it raises."""
        dawn_planes.begin_access(slot, values)

    def _ticket(
        self, frame: DecodedFrame, slot: RingSlot, cuda_planes: tuple[CudaPtr2D, ...]
    ) -> PairingTicket:
        """The imported frame of a slot whose planes Dawn accesses, and the ticket that releases it."""
        width, height = picture_size(frame)
        copy_done = slot.copy_done  # re-recorded only when the slot is reused, after this lease's release
        assert copy_done is not None
        uses = slot.planes[0].uses
        imported = dawn_planes.slot_frame(
            slot,
            pixel_format=frame.pixel_format,
            colour=frame.colour,
            metadata=frame.metadata,
            identity=frame.identity,
            width=width,
            height=height,
            strides=tuple(src.pitch_bytes for src in cuda_planes),
            sync=copy_sync_point(copy_done, uses),
            uses=uses,
        )
        return PairingTicket(frame=imported, release=lambda: self._release_slot(slot))

    def _enqueue_copy(
        self, slot: RingSlot, cuda_planes: tuple[CudaPtr2D, ...], producer: int | None, event: CudaEvent
    ) -> list[int]:
        """On the copy stream: wait Dawn's last fences, copy, signal, record. Returns the values Dawn's
        access waits at: 1 for each plane, its semaphore being binary (Dawn's shared fences take no
        timeline semaphore)."""
        self.poll_sync_fds(slot)
        enqueue_copy(self._ctx, self._stream, slot, cuda_planes, producer, event)
        return [1] * len(slot.planes)

    def poll_sync_fds(self, slot: RingSlot) -> None:
        """Wait (bounded) on the CPU for end-of-access sync fds (when Dawn hands back sync fds)."""
        wait_sync_fds(slot, self._wait_timeout())

    # -- release -----------------------------------------------------------------------------------

    def _end_plane(self, plane: RingPlane, *, collect_fences: bool) -> None:
        """End Dawn's access to a plane; keep its fences for the slot's next copy to wait on (imported
        into CUDA by that copy, on the thread that makes it: a decoder's copying ahead, or the
        caller's at import)."""
        dawn_planes.end_plane(plane, collect_fences=collect_fences)

    def _release_slot(self, slot: RingSlot) -> None:
        # No CUDA call here (Dawn's fence is imported by the slot's next copy): no context push. What
        # the ring may do on a give-back (retire, destroy) pushes the context itself.
        self._release_slot_current(slot)

    def _release_slot_current(self, slot: RingSlot) -> None:
        error: BaseException | None = None
        # Dawn runs on one queue, and a semaphore signal covers everything submitted before it: CUDA
        # waiting on the fence of the access ended last orders the slot's next copy after Dawn's use of
        # every plane. Importing one fence per frame instead of one per plane saves a CUDA import each.
        last = slot.planes[0]
        for plane in reversed(slot.planes):
            try:
                self._end_plane(plane, collect_fences=plane is last)
            except BaseException as exc:  # keep ending the others; the slot is not reusable
                slot.broken = True
                error = error or exc
        self._ring.give_back(slot, broken=slot.broken)
        if error is not None:
            raise _typed(error, "Dawn end_access on a GPU-copy plane") from error

    def _fail_slot(self, slot: RingSlot, *, copy_enqueued: bool) -> None:
        """Undo a half-done acquire: the slot is retired (destroyed once its CUDA work is done)."""
        slot.broken = True
        if copy_enqueued:
            abandon_copy(slot, self._stream, self._wait_timeout())
        self._ring.give_back(slot, broken=True)

    # -- the ring's destroy hook -----------------------------------------------------------------------

    def _destroy_slot(self, slot: RingSlot) -> None:
        """Destroy a slot's objects (only once its GPU work is done); an access still open is ended."""
        slot.destroy_objects(functools.partial(self._end_plane, collect_fences=False))

    # -- reports and teardown ------------------------------------------------------------------------

    def stats(self) -> ImportTicketStats:
        sets, idle = self._ring.counts()
        return ImportTicketStats(
            allocations=self._ring.allocations,
            reuses=self._ring.reuses,
            pool_sets=sets,
            pool_idle=idle,
            live_textures=self._ring.live_textures,
            drained=self._ring.drained,
            surfaces_held=self._copies.held(),
            copied_ahead=self._ahead_counts[0],
            not_copied_ahead=self._ahead_counts[1],
        )

    def close(self) -> None:
        """Wait (bounded) for in-flight copies, release their surfaces, destroy idle slots and the stream."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        timeout_s = self._wait_timeout()
        self._copies.close(timeout_s)
        with self._ahead_gate:  # copies ahead running now finish first (bounded), then find us closed
            idle = self._ahead_gate.wait_for(lambda: not self._ahead_running, timeout_s)
            ahead_streams = list(self._ahead_streams)
        self._drain_returns()
        self._ring.close()
        deadline = time.monotonic() + timeout_s
        while True:
            self.poll()
            if not self._ring.has_retired() or time.monotonic() >= deadline:
                break
            time.sleep(0.001)
        for slot in self._ring.take_retired():  # still running after the timeout: the context's teardown
            self._vk.defer_destroy(functools.partial(self._ring.destroy, slot))
        if idle:  # else a copy may still enqueue on one: each is destroyed with its object, unused
            for stream in ahead_streams:
                stream.close()
        self._stream.close()
        if self._owns_context:
            self._context.close()


class _CopiedAhead:
    """A frame's copy into a ring slot, enqueued on its decoder's thread (an ``AheadWork``); the slot
    holds the decoded frame until the copy is known done.

    The slot goes back to the ring when the frame is released without being imported, or when this
    object is dropped; the import takes it instead (:meth:`take`).
    """

    __slots__ = ("__weakref__", "_finalizer", "_owner", "_slot")

    def __init__(self, owner: CudaVkPairing, slot: RingSlot) -> None:
        self._owner = owner
        self._slot = slot
        self._finalizer = weakref.finalize(self, owner._return_ahead, slot, False)
        self._finalizer.atexit = False

    def take(self, pairing: CudaVkPairing) -> RingSlot | None:
        """The slot, for ``pairing``'s import; None when it is another pairing's or was discarded."""
        if pairing is not self._owner or self._finalizer.detach() is None:
            return None
        return self._slot

    def discard(self) -> None:
        """Give the slot back (its copy is done, and Dawn never saw it). Idempotent; any thread."""
        self._finalizer()


# ---------------------------------------------------------------------------------------------------
# the devices: the importer's Device, checked for what the GPU copy needs


@dataclass(frozen=True)
class _SharedDevices:
    """The Vulkan context and CUDA device a pairing works with, on Dawn's GPU."""

    context: SharedVulkanContext
    """The SharedVulkanContext that owns the ring's images (the Device's: the Device closes it)."""
    owns_context: bool
    """Whether the pairing made the context (and so closes it); never, when it comes from the Device."""
    cuda_ordinal: int
    """The CUDA device with the UUID of Dawn's adapter."""


def _find_shared_devices(info: WebGpuDeviceInfo, options: dict[str, Any]) -> _SharedDevices:
    """The importer's Device's shared Vulkan context and CUDA ordinal, checked against Dawn's adapter.

    Nothing is enumerated here: the Device matched its Vulkan and CUDA twins when it was made.

    Raises:
        UnsupportedError: they are not on Dawn's GPU, or lack what the GPU copy needs.
    """
    from alpha2.native_gpu._vk import export
    from alpha2.native_gpu.device.device import Device

    device = options.get("gpu_device")
    if not isinstance(device, Device):
        raise UnsupportedError("the GPU copy needs the importer's alpha2 Device (options['gpu_device'])")
    dawn_uuid = info.vulkan_device_uuid
    context = device.shared_vulkan()
    if context.device_id.uuid != dawn_uuid:
        raise UnsupportedError(
            f"the SharedVulkanContext is on {context.device_id.name!r}, not on Dawn's adapter "
            f"{info.adapter_name!r} (device UUIDs differ); pass a context on the same GPU"
        )
    driver_uuid = getattr(context.candidate, "driver_uuid", None)
    if (
        driver_uuid is not None
        and info.vulkan_driver_uuid is not None
        and driver_uuid != info.vulkan_driver_uuid
    ):
        raise UnsupportedError(
            "Dawn and the SharedVulkanContext use different Vulkan drivers (driver UUIDs differ)"
        )
    for name in ("VK_KHR_external_memory_fd", "VK_KHR_external_semaphore_fd"):
        if name not in context.enabled_extensions:
            raise UnsupportedError(f"the SharedVulkanContext has no {name}; the GPU copy needs it")
    support = export.external_semaphore_support(context._internal, timeline=False)
    if not support.exportable:
        raise UnsupportedError(support.reason or "no exportable semaphores")
    ordinal = device.cuda_ordinal
    if ordinal is None:
        raise UnsupportedError(
            f"no CUDA device has the UUID of Dawn's adapter ({device.cuda_reason}); decode and render "
            "on one GPU"
        )
    return _SharedDevices(context, False, ordinal)


# ---------------------------------------------------------------------------------------------------
# helpers


def _typed(exc: BaseException, what: str) -> BaseException:
    """Dawn reports failures as RuntimeError / GPU errors: give them an alpha2 kind."""
    if isinstance(exc, Error):
        return exc
    text = str(exc)
    if "lost" in text.lower():
        return DeviceLostError(f"{what}: the device was lost: {text}")
    return InternalError(f"{what} failed: {type(exc).__name__}: {text}")
