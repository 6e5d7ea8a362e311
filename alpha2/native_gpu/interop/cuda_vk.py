"""GPU copy: NVDEC (CUDA) planes -> Vulkan-owned plane images -> Dawn textures, fenced both ways.

The pairing for a ``wgpudawn`` device with 'shared-texture-memory-opaque-f-d' and
'shared-fence-vk-semaphore-opaque-f-d' whose Vulkan device UUID matches the SharedVulkanContext's
adapter and a CUDA device. (mpv's ``hwdec_cuda_vk``, with Dawn as the consumer.)

A ring of slots, each one plane image per plane of the stream's format, made once per stream:

* Vulkan (the SharedVulkanContext, ``_vk.export``): an OPTIMAL image on dedicated OPAQUE_FD memory,
  moved once UNDEFINED -> GENERAL and released to ``VK_QUEUE_FAMILY_EXTERNAL``; a binary semaphore
  exportable as OPAQUE_FD.
* CUDA (``_cuda.interop``): the memory imported once as a mipmapped array (level 0 is the copy
  destination); the semaphore imported once.
* Dawn (``wgpudawn.backends.dawn.extras``): the memory imported once as a SharedTextureMemory (from
  the same VkImageCreateInfo) and a texture + view made on it; the semaphore imported once as a
  SharedFence.

Per frame (:meth:`CudaVkPairing.acquire`):

1. take a free slot of the stream (waiting up to the GPU wait timeout when all are held by leases);
2. on alpha2's CUDA copy stream, ordered after FFmpeg's decode work (``DecodedFrame.cuda_stream``):
   wait for the fences Dawn's last access to the slot ended with (imported into CUDA), copy each
   NVDEC plane into its image (``cuMemcpy2DAsync``), signal each plane's semaphore, record an event;
3. Dawn ``begin_access`` on each plane, waiting on the plane's semaphore as a shared fence: the GPU
   orders the copy before any sampling. No byte crosses the CPU.

The FFmpeg frame is let go (``DecodedFrame.release()``) once the copy's event has completed, found
by a thread of the pairing's (``alpha2-gpu-copy-done``), so the caller never asks CUDA. Releasing the
lease ends Dawn's access; the fence ``end_access`` returns is imported into CUDA and waited on, on
the GPU, before the slot's next copy, so the slot's return is ordered on the GPU too.

The thread is started and joined by the pairing, and every wait on it is bounded by the GPU wait
timeout. The copy stream does not synchronize with the legacy default stream: it waits for FFmpeg's
work through an event, and FFmpeg's later work never waits for it (``_cuda.interop.CopyStream``).

Semaphores are binary: Dawn's SharedFenceVkSemaphoreOpaqueFD imports into a binary semaphore on each
access (Dawn 0.32), so a timeline semaphore could not be waited there; each plane has its own (one
signal, one wait per use), as in shared/probes/nvdec_to_dawn.py. ``NativeImageState.timeline_value``
reports the use count. A slot that fails half-way is retired (destroyed once its CUDA work is done)
rather than reused in an unknown state.
"""

from __future__ import annotations

import collections
import importlib
import os
import select
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from alpha2.gpu.errors import (
    DeviceLostError,
    Error,
    GpuTimeoutError,
    InternalError,
    InvalidInputError,
    UnsupportedError,
)
from alpha2.gpu.formats import PixelFormat, PlaneFormat, UploadConversion
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.handles import CudaPtr2D, OwnedFd
from alpha2.gpu.identity import BackendKind, ExecutionPath
from alpha2.gpu.surfaces import SurfaceIdentity
from alpha2.gpu.sync import WaitStatus
from alpha2.native_gpu.interop.cpu_upload import PlaneGeometry, check_16bit, frame_geometry, picture_size
from alpha2.native_gpu.interop.leases import (
    DEFAULT_SLOTS_PER_KEY,
    FEATURE_SHARED_FENCE_OPAQUE_FD,
    FEATURE_SHARED_TEXTURE_OPAQUE_FD,
    ExternalSyncPoint,
    ImageOwner,
    ImportedPlaneDescriptor,
    ImportedVulkanFrame,
    ImportTicketStats,
    InteropPairing,
    NativeImageState,
    NativeSurfaceLease,
    PairingTicket,
    SlotPool,
    WebGpuDeviceInfo,
    WebGpuImplementation,
)

__all__ = ["CudaVkPairing", "RingSlot"]

VK_IMAGE_LAYOUT_GENERAL = 1
VK_QUEUE_FAMILY_EXTERNAL = 0xFFFFFFFE
DAWN_TIMELINE_FENCES = False
"""Whether Dawn's opaque-fd shared fences accept timeline semaphores (not in Dawn 0.32: binary only)."""

# The formats whose planes CUDA can write as 1- or 2-byte channels: 8-bit and 16-bit unorm planes.
_COPYABLE = {PlaneFormat.R8, PlaneFormat.RG8, PlaneFormat.RGBA8, PlaneFormat.R16, PlaneFormat.RG16}


def _uncopyable_reason(pixel_format: PixelFormat) -> str | None:
    """Why the GPU copy does not take frames of ``pixel_format`` (None when it does)."""
    for plane_format in pixel_format.plane_formats:
        if plane_format not in _COPYABLE or plane_format.upload_conversion is not UploadConversion.NONE:
            name = pixel_format.ffmpeg_name
            return f"{name} has {plane_format.name} planes, which the GPU copy does not take"
    return None


def _dawn_extras() -> Any:
    return importlib.import_module("wgpudawn.backends.dawn.extras")


# ---------------------------------------------------------------------------------------------------
# the ring


@dataclass(eq=False)
class _Plane:
    """One plane image of a slot, as Vulkan, CUDA and Dawn each see it."""

    geometry: PlaneGeometry
    vk_image: Any = None  # _vk.export.ExportableImage
    semaphore: Any = None  # _vk.export.ExportableSemaphore
    cu_image: Any = None  # _cuda.interop.ExternalImage
    cu_semaphore: Any = None  # _cuda.interop.ExternalSemaphore
    memory: Any = None  # GPUSharedTextureMemory
    texture: Any = None
    view: Any = None
    fence: Any = None  # GPUSharedFence of ``semaphore``
    layout: int = VK_IMAGE_LAYOUT_GENERAL
    uses: int = 0
    accessing: bool = False
    release_fences: list[Any] = field(default_factory=list)  # Dawn end-of-access fences, imported into CUDA
    release_sync_fds: list[OwnedFd] = field(default_factory=list)  # end-of-access sync fds (CPU-waited)


@dataclass(eq=False)
class RingSlot:
    """One frame's worth of plane images, reused frame after frame."""

    key: tuple[Hashable, ...]
    planes: list[_Plane]
    copy_done: Any = None  # _cuda.interop.CudaEvent, recorded after each copy into the slot
    waited: list[Any] = field(default_factory=list)  # CUDA-imported Dawn fences the last copy waited on
    broken: bool = False

    def texture_count(self) -> int:
        return sum(1 for p in self.planes if p.texture is not None)

    def planes_have_pending_fences(self) -> bool:
        return any(p.release_fences or p.release_sync_fds for p in self.planes)


@dataclass
class _Copy:
    """One frame's GPU copy: its completion event, the decoded surface it reads, the fences it waited."""

    event: Any  # _cuda.interop.CudaEvent recorded after the copy
    surface: NativeSurfaceLease | None
    waited: list[Any]


class _CopyTracker:
    """Lets go of each decoded surface once the GPU copy reading it has completed, on one thread.

    The copies run in order on one CUDA stream, so they complete in order: the thread waits on the
    oldest. Asking CUDA whether an event has completed can stall behind NVDEC's work on the same
    context (on the H200 under cProfile: about 3 ms a query, most of the per-frame import cost when the
    caller's thread polled), so the caller's thread never asks: it records an event and moves on.
    A copy that outlasts the GPU wait timeout keeps its surface (it may still be read) and is waited for
    again. Events are reused.
    """

    def __init__(self, ctx: Any, wait_timeout: Callable[[], float]) -> None:
        self._ctx = ctx
        self._wait_timeout = wait_timeout
        self._cond = threading.Condition()
        self._pending: collections.deque[_Copy] = collections.deque()
        self._free_events: list[Any] = []
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="alpha2-gpu-copy-done", daemon=True)
        self._thread.start()

    def event(self) -> Any:
        """An event to record after the next copy."""
        from alpha2.native_gpu._cuda import interop

        with self._cond:
            if self._free_events:
                return self._free_events.pop()
        return interop.CudaEvent(self._ctx)

    def recycle(self, event: Any) -> None:
        with self._cond:
            self._free_events.append(event)

    def add(self, copy: _Copy) -> None:
        with self._cond:
            self._pending.append(copy)
            self._cond.notify()

    def held(self) -> int:
        """Surfaces still held by copies that may be running."""
        with self._cond:
            return sum(1 for c in self._pending if c.surface is not None)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:
                    return
                copy = self._pending[0]
            try:
                copy.event.wait(self._wait_timeout(), "a GPU copy of a decoded frame")
            except GpuTimeoutError:
                with self._cond:
                    if self._closing:
                        return  # close() gave up on it: the surface stays held (it may still be read)
                continue
            except Error:
                pass  # the context failed: nothing will read the surface again
            with self._cond:
                self._pending.popleft()
            self._finish(copy)

    def _finish(self, copy: _Copy) -> None:
        surface, copy.surface = copy.surface, None
        try:
            with self._ctx:
                for semaphore in copy.waited:
                    semaphore.close()
        except Error:
            pass  # a failed context: the semaphores go with it
        copy.waited = []
        if surface is not None:
            surface.release()
        self.recycle(copy.event)

    def close(self, timeout_s: float) -> bool:
        """Finish the pending copies (bounded by ``timeout_s``) and stop. True when all finished."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(timeout_s)
        done = not self._thread.is_alive()
        if done:
            with self._cond:
                events, self._free_events = self._free_events, []
            for event in events:
                event.close()
        return done


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
    def unavailable_reason(cls, device: Any, info: WebGpuDeviceInfo, options: dict[str, Any]) -> str | None:
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
        device: Any,
        info: WebGpuDeviceInfo,
        *,
        gpu_module: Any,
        options: dict[str, Any],
        wait_timeout: Callable[[], float],
    ) -> CudaVkPairing:
        from alpha2.native_gpu._cuda.core import cuda_ordinal_for_uuid
        from alpha2.native_gpu._vk import export

        dawn_uuid = info.vulkan_device_uuid
        context = options.get("shared_context")
        owns_context = False
        if context is None:
            context = _shared_context_for(dawn_uuid)
            owns_context = True
        try:
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
            ordinal = cuda_ordinal_for_uuid(dawn_uuid) if dawn_uuid is not None else None
            if ordinal is None:
                raise UnsupportedError(
                    "no CUDA device has the UUID of Dawn's adapter; decode and render on one GPU"
                )
            return cls(
                device,
                info,
                context=context,
                owns_context=owns_context,
                cuda_ordinal=ordinal,
                slots=int(options.get("slots", DEFAULT_SLOTS_PER_KEY)),
                wait_timeout=wait_timeout,
            )
        except BaseException:
            if owns_context:
                context.close()
            raise

    # -- set-up ------------------------------------------------------------------------------------

    def __init__(
        self,
        device: Any,
        info: WebGpuDeviceInfo,
        *,
        context: Any,
        owns_context: bool,
        cuda_ordinal: int,
        slots: int,
        wait_timeout: Callable[[], float],
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
        self._copies = _CopyTracker(self._ctx, wait_timeout)
        self._retired: list[RingSlot] = []  # broken / drained slots waiting for their CUDA work
        self._live_textures = 0
        self._closed = False
        self._pool: SlotPool[RingSlot] = SlotPool(
            self._new_slot, self._retire, per_key=slots, what="GPU-copy ring slots"
        )

    def _new_slot(self, key: tuple[Hashable, ...]) -> RingSlot:
        """Allocate a slot's images and import them into CUDA and Dawn; undo everything on failure."""
        from alpha2.native_gpu._cuda import interop
        from alpha2.native_gpu._vk import export

        geometry: Any = key[4]
        slot = RingSlot(key=key, planes=[_Plane(g) for g in geometry])
        extras = _dawn_extras()
        try:
            for plane in slot.planes:
                g = plane.geometry
                plane.vk_image = export.ExportableImage(self._vk, g.width, g.height, g.plane_format.vk_format)
            export.transition_for_external(
                self._vk, [p.vk_image for p in slot.planes], self._queue_family, self._wait_timeout()
            )
            for index, plane in enumerate(slot.planes):
                g = plane.geometry
                image = plane.vk_image
                plane.semaphore = export.ExportableSemaphore(self._vk, timeline=False)
                bytes_per_channel = g.plane_format.bits_per_channel // 8
                plane.cu_image = interop.ExternalImage(
                    self._ctx,
                    image.export_memory_fd(),
                    size_bytes=image.size_bytes,
                    width=g.width,
                    height=g.height,
                    bytes_per_channel=bytes_per_channel,
                    channels=g.plane_format.channels,
                )
                plane.cu_semaphore = interop.ExternalSemaphore(
                    self._ctx, plane.semaphore.export_fd(), timeline=False
                )
                # Dawn duplicates the fds it is given: ours are closed right after.
                with image.export_memory_fd() as memory_fd:
                    plane.memory = extras.import_shared_texture_memory(
                        self._device,
                        label=f"alpha2 ring plane {index}",
                        opaque_fd={
                            "fd": memory_fd.fileno(),
                            "vk_image_create_info": image.create_info_address,
                            "memory_type_index": image.memory_type_index,
                            "allocation_size": image.size_bytes,
                            "dedicated_allocation": True,
                        },
                    )
                plane.texture = plane.memory.create_texture(label=f"alpha2 ring plane {index}")
                plane.view = plane.texture.create_view(label="alpha2 ring plane view")
                with plane.semaphore.export_fd() as semaphore_fd:
                    plane.fence = extras.import_shared_fence(
                        self._device,
                        label=f"alpha2 copy-done {index}",
                        vk_semaphore_opaque_fd=semaphore_fd.fileno(),
                    )
                plane.layout = image.layout
            slot.copy_done = interop.CudaEvent(self._ctx)
        except BaseException:
            self._destroy_slot(slot)
            raise
        with self._lock:
            self._live_textures += slot.texture_count()
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

    def prepare_stream(self, identity: SurfaceIdentity) -> None:
        """Make a ring slot for ``identity``'s frames (Vulkan images, CUDA and Dawn imports) now.

        A format the copy does not take is left alone: its frames fall back, reported as they come.
        """
        pixel_format = identity.pixel_format
        if _uncopyable_reason(pixel_format) is not None:
            return
        geometry = frame_geometry(pixel_format, identity.width, identity.height)
        check_16bit(self._info, geometry, pixel_format)
        key = _ring_key(identity, pixel_format, geometry)
        with self._ctx:
            slot, _reused = self._pool.take(key, self._wait_timeout())
            self._pool.give_back(key, slot)

    def poll(self) -> None:
        """Destroy retired slots whose CUDA work is done (the copy tracker lets go of surfaces)."""
        with self._lock:
            if not self._retired:
                return  # the per-frame case: no context push
        with self._ctx:
            self._poll_current()

    def _poll_current(self) -> None:
        with self._lock:
            retired, self._retired = self._retired, []
        still: list[RingSlot] = []
        for slot in retired:
            try:
                done = slot.copy_done is None or slot.copy_done.query()
            except Error:
                done = True
            if done:
                self._destroy_slot(slot)
            else:
                still.append(slot)
        with self._lock:
            self._retired = still + self._retired

    def acquire(self, frame: DecodedFrame, surface: NativeSurfaceLease, note: str | None) -> PairingTicket:
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
        key = _ring_key(frame.identity, pixel_format, geometry)
        timeout_s = self._wait_timeout()
        slot, _reused = self._pool.take(key, timeout_s)
        event = self._copies.event()
        try:
            values = self._enqueue_copy(slot, cuda_planes, frame.cuda_stream, event)
        except BaseException:
            self._copies.recycle(event)
            self._fail_slot(slot, key, copy_enqueued=True)
            raise
        # From here the copy reads the frame: the surface stays held until the copy's event completes.
        began: list[_Plane] = []
        try:
            for plane, value in zip(slot.planes, values):
                plane.memory.begin_access(
                    plane.texture,
                    initialized=True,
                    fences=[plane.fence],
                    signaled_values=[value],
                    vk_image_layout=(plane.layout, VK_IMAGE_LAYOUT_GENERAL),
                )
                plane.accessing = True
                began.append(plane)
        except BaseException as exc:
            for plane in reversed(began):
                try:
                    self._end_plane(plane, collect_fences=True)
                except BaseException:
                    pass  # the slot is retired below either way
            # The frame goes back to the caller once the copy is done (the bounded wait in _fail_slot);
            # the fences it waited on stay with the slot, which is retired.
            self._copies.recycle(event)
            self._fail_slot(slot, key, copy_enqueued=True)
            raise _typed(exc, "Dawn begin_access on a GPU-copy plane") from exc
        waited, slot.waited = slot.waited, []
        self._copies.add(_Copy(event=event, surface=surface, waited=waited))
        descriptors = tuple(
            ImportedPlaneDescriptor(
                plane_index=index,
                plane_format=plane.geometry.plane_format,
                texture_format=plane.geometry.texture_format,
                width=plane.geometry.width,
                height=plane.geometry.height,
                source_stride_bytes=src.pitch_bytes,
            )
            for index, (plane, src) in enumerate(zip(slot.planes, cuda_planes))
        )
        event = slot.copy_done  # re-recorded only when the slot is reused, after this lease's release
        imported = ImportedVulkanFrame(
            textures=tuple(p.texture for p in slot.planes),
            views=tuple(p.view for p in slot.planes),
            planes=descriptors,
            pixel_format=pixel_format,
            colour=frame.colour,
            metadata=frame.metadata,
            identity=frame.identity,
            width=width,
            height=height,
            sync=ExternalSyncPoint(
                BackendKind.CUDA,
                poll=event.query,
                wait_native=lambda timeout_s: _event_wait(event, timeout_s),
                gpu_ordered=True,
                timeline_value=slot.planes[0].uses,
                description="CUDA copy signalled a Vulkan semaphore that Dawn's begin_access waits on",
            ),
            path=ExecutionPath.GPU_COPY,
            steps=(ExecutionPath.GPU_COPY,),
            bytes_crossed_cpu=0,
            image_state=NativeImageState(
                owner=ImageOwner.SHARED_VULKAN,
                layout=VK_IMAGE_LAYOUT_GENERAL,
                queue_family=VK_QUEUE_FAMILY_EXTERNAL,
                timeline_value=slot.planes[0].uses,
            ),
        )
        return PairingTicket(frame=imported, release=lambda: self._release_slot(slot, key))

    def _enqueue_copy(
        self, slot: RingSlot, cuda_planes: tuple[CudaPtr2D, ...], producer: int | None, event: Any
    ) -> list[int]:
        """On the copy stream: wait Dawn's last fences, copy, signal, record. Returns the fence values."""
        from alpha2.native_gpu._cuda import interop

        self.poll_sync_fds(slot)
        stream = self._stream
        stream.order_after(producer)
        waited: list[Any] = []
        for plane in slot.planes:
            for semaphore in plane.release_fences:
                semaphore.wait(stream.handle)
            waited += plane.release_fences
            plane.release_fences = []
        slot.waited += waited
        for plane, src in zip(slot.planes, cuda_planes):
            interop.copy_plane_to_array(self._ctx, src, plane.cu_image, stream.handle)
        values = []
        for plane in slot.planes:
            plane.uses += 1
            plane.cu_semaphore.signal(stream.handle)
            values.append(1 if not DAWN_TIMELINE_FENCES else plane.uses)
        slot.copy_done.record(stream.handle)
        event.record(stream.handle)
        return values

    def poll_sync_fds(self, slot: RingSlot) -> None:
        """Wait (bounded) on the CPU for end-of-access sync fds (when Dawn hands back sync fds)."""
        deadline = time.monotonic() + self._wait_timeout()
        for plane in slot.planes:
            fds, plane.release_sync_fds = plane.release_sync_fds, []
            for fd in fds:
                try:
                    poller = select.poll()
                    poller.register(fd.fileno(), select.POLLIN)
                    left_ms = max(0, int((deadline - time.monotonic()) * 1000))
                    if not poller.poll(left_ms):
                        raise GpuTimeoutError(
                            "Dawn's end-of-access fence (a sync fd) did not signal within the GPU wait "
                            "timeout"
                        )
                finally:
                    fd.close()

    # -- release -----------------------------------------------------------------------------------

    def _end_plane(self, plane: _Plane, *, collect_fences: bool) -> None:
        """End Dawn's access to a plane; hand its fences to CUDA for the slot's next copy."""
        from alpha2.native_gpu._cuda import interop

        if not plane.accessing:
            return
        plane.accessing = False
        state = plane.memory.end_access(plane.texture)
        if state.vk_image_layout:
            plane.layout = int(state.vk_image_layout[1])
        if not collect_fences:
            return
        for fence in state.fences:
            exported = fence.export()
            kind = exported.get("type")
            if kind == "vk-semaphore-opaque-fd":
                # Imported here, on the releasing thread. On a thread of its own (tried on the H200) the
                # import's kernel calls contended with the caller's: 0.95x decode alone instead of 0.97x,
                # 0.86-0.90x instead of 0.93x with a sampling pass.
                dup = OwnedFd(os.dup(int(exported["fd"])))
                try:
                    plane.release_fences.append(interop.ExternalSemaphore(self._ctx, dup, timeline=False))
                finally:
                    dup.close()  # a no-op once CUDA took it
            elif kind == "sync-fd":
                plane.release_sync_fds.append(OwnedFd(os.dup(int(exported["fd"]))))
            else:
                raise InternalError(
                    f"Dawn ended the access with a {kind} fence, which the GPU copy cannot wait on"
                )

    def _release_slot(self, slot: RingSlot, key: tuple[Hashable, ...]) -> None:
        with self._ctx:
            self._release_slot_current(slot, key)

    def _release_slot_current(self, slot: RingSlot, key: tuple[Hashable, ...]) -> None:
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
        self._pool.give_back(key, slot, broken=slot.broken)
        if error is not None:
            raise _typed(error, "Dawn end_access on a GPU-copy plane") from error

    def _fail_slot(self, slot: RingSlot, key: tuple[Hashable, ...], *, copy_enqueued: bool) -> None:
        """Undo a half-done acquire: the slot is retired (destroyed once its CUDA work is done)."""
        slot.broken = True
        if copy_enqueued and slot.copy_done is not None:
            # Part of the copy may be enqueued and still read the caller's frame: record an event after
            # whatever made it onto the stream and wait for it (bounded) before handing the frame back.
            try:
                slot.copy_done.record(self._stream.handle)
                slot.copy_done.wait(self._wait_timeout(), "an abandoned GPU copy")
            except Error:
                pass
        self._pool.give_back(key, slot, broken=True)

    def _retire(self, slot: RingSlot) -> None:
        """SlotPool's destroy hook: destroy now if the slot's CUDA work is done, else after poll()."""
        try:
            done = slot.copy_done is None or slot.copy_done.query()
        except Error:
            done = True
        if done and not slot.planes_have_pending_fences():
            self._destroy_slot(slot)
            return
        if slot.planes_have_pending_fences():
            # Order the destruction after Dawn's last access: CUDA waits on its fences, then the event.
            try:
                for plane in slot.planes:
                    for semaphore in plane.release_fences:
                        semaphore.wait(self._stream.handle)
                    slot.waited += plane.release_fences
                    plane.release_fences = []
                self.poll_sync_fds(slot)
                slot.copy_done.record(self._stream.handle)
            except Error:
                pass
        with self._lock:
            self._retired.append(slot)

    def _destroy_slot(self, slot: RingSlot) -> None:
        """Destroy a slot in reverse order of creation. Only once its GPU work is done."""
        count = slot.texture_count()
        for semaphore in slot.waited:
            semaphore.close()
        slot.waited = []
        for plane in reversed(slot.planes):
            if plane.accessing:
                try:
                    self._end_plane(plane, collect_fences=False)
                except BaseException:
                    pass
            for semaphore in plane.release_fences:
                semaphore.close()
            plane.release_fences = []
            for fd in plane.release_sync_fds:
                fd.close()
            plane.release_sync_fds = []
            plane.fence = plane.view = plane.texture = plane.memory = None  # Dawn keeps what its work uses
            for name in ("cu_semaphore", "cu_image", "semaphore", "vk_image"):
                obj = getattr(plane, name)
                setattr(plane, name, None)
                if obj is not None:
                    obj.close()
        if slot.copy_done is not None:
            slot.copy_done.close()
            slot.copy_done = None
        with self._lock:
            self._live_textures -= count

    # -- reports and teardown ------------------------------------------------------------------------

    def stats(self) -> ImportTicketStats:
        sets, idle = self._pool.counts()
        with self._lock:
            held = self._copies.held()
            return ImportTicketStats(
                allocations=self._pool.allocations,
                reuses=self._pool.reuses,
                pool_sets=sets,
                pool_idle=idle,
                live_textures=self._live_textures,
                drained=self._pool.drained,
                surfaces_held=held,
            )

    def close(self) -> None:
        """Wait (bounded) for in-flight copies, release their surfaces, destroy idle slots and the stream."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        timeout_s = self._wait_timeout()
        self._copies.close(timeout_s)
        self._pool.close()
        deadline = time.monotonic() + timeout_s
        while True:
            self.poll()
            with self._lock:
                left = list(self._retired)
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.001)
        for slot in left:  # still running after the timeout: leave them to the context's teardown
            self._vk.defer_destroy(lambda s=slot: self._destroy_slot(s))
        self._stream.close()
        if self._owns_context:
            self._context.close()


def _ring_key(
    identity: SurfaceIdentity, pixel_format: PixelFormat, geometry: tuple[PlaneGeometry, ...]
) -> tuple[Hashable, ...]:
    sizes = tuple((g.texture_format, g.width, g.height) for g in geometry)
    return (identity.decoder_id, identity.generation, pixel_format, sizes, geometry)


def _event_wait(event: Any, timeout_s: float) -> WaitStatus:
    try:
        event.wait(timeout_s)
    except GpuTimeoutError:
        return WaitStatus.TIMED_OUT
    return WaitStatus.SIGNALED


def _typed(exc: BaseException, what: str) -> BaseException:
    """Dawn reports failures as RuntimeError / GPU errors: give them an alpha2 kind."""
    if isinstance(exc, Error):
        return exc
    text = str(exc)
    if "lost" in text.lower():
        return DeviceLostError(f"{what}: the device was lost: {text}")
    return InternalError(f"{what} failed: {type(exc).__name__}: {text}")


def _shared_context_for(uuid: bytes | None) -> Any:
    """A SharedVulkanContext on the adapter with this device UUID (no decode queue needed)."""
    from alpha2.native_gpu.device.candidates import vulkan_candidates
    from alpha2.native_gpu.device.shared import SharedVulkanContext

    for candidate in vulkan_candidates():
        if candidate.usable and candidate.uuid == uuid:
            return SharedVulkanContext(candidate, decode=False)
    raise UnsupportedError("no Vulkan adapter has the device UUID of Dawn's adapter")
