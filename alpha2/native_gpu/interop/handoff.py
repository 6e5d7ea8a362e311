"""Frames handed from a decoder process to this process's device, through memory both processes map.

The consumer (the process that owns the WebGPU device) makes a *slot set* per stream layout and sends
its memory, as file descriptors, to the producer (a decoder process), which writes each decoded frame
into a free slot and says which; the consumer hands the slot's textures out as an
:class:`~alpha2.native_gpu.interop.leases.ImportLease` and, when that is released, sends the slot back
with whatever the producer must wait for before writing it again. The messages themselves are the
caller's (:mod:`alpha2.api.decode_process`); this module holds the memory on both sides:

* :class:`DawnSlotSet` / :class:`CudaSlotWriter` -- the GPU route, for NVDEC frames and a Dawn device on
  the same GPU: each slot is one Vulkan image per plane on exportable OPAQUE_FD memory, imported into
  Dawn here (:mod:`.dawn_planes`) and into CUDA in the producer, which copies the frame's planes into it
  on the GPU and waits for the copy before saying so. Dawn's access begins waiting on nothing (the copy
  is known done) and its end-of-access fence (an opaque-fd semaphore, or a sync fd) goes back with the
  slot: the producer's next copy into it waits for that fence on the GPU. No byte crosses the CPU, and
  the consumer makes no CUDA call.
* :class:`HostSlotSet` / :class:`HostSlotWriter` -- host memory (``memfd``), for software-decoded frames or
  a device that cannot import Vulkan memory: the producer writes the planes' rows (NVDEC frames through
  the one download, ``_cuda.streams.download_planes``), the consumer uploads them (the CPU upload)
  straight from the shared pages, and the slot goes back once the upload has copied them.

Why processes: with many streams in one process, every per-frame call that lets go of the GIL (PyAV's
demux and decode, the CUDA driver, Dawn) waits for it again behind the others; on the H200, one process
imported at most 900-1150 frames/s at 14 streams against 2450 for the decoding alone (BENCHMARKS.md).
A decoder process has its own GIL; the consumer's work per frame is a message and a few Dawn calls.
"""

from __future__ import annotations

import functools
import mmap
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from alpha2.gpu.errors import Error, InternalError, InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet, CudaPtr2D, OwnedFd
from alpha2.gpu.identity import BackendKind
from alpha2.gpu.surfaces import SurfaceIdentity
from alpha2.native_gpu.interop import dawn_planes
from alpha2.native_gpu.interop.cpu_upload import PlaneGeometry
from alpha2.native_gpu.interop.cuda import enqueue_copy, import_plane_image
from alpha2.native_gpu.interop.leases import (
    ExternalSyncPoint,
    ImportedFrame,
)
from alpha2.native_gpu.interop.ring import (
    RingKey,
    RingSlot,
    wait_sync_fd,
    wait_sync_fds,
)

if TYPE_CHECKING:
    from alpha2.gpu.colour import ColourInfo
    from alpha2.gpu.geometry import FrameMetadata
    from alpha2.native_gpu.device.device import Device

__all__ = [
    "FENCE_OPAQUE_FD",
    "FENCE_SYNC_FD",
    "CudaSlotWriter",
    "DawnSlotSet",
    "HostSlotSet",
    "HostSlotWriter",
    "SlotLayout",
    "gpu_route_unavailable_reason",
]

FENCE_OPAQUE_FD = "opaque-fd"
"""A returned slot's fence: an opaque-fd binary semaphore (the producer waits on it in CUDA)."""
FENCE_SYNC_FD = "sync-fd"
"""A returned slot's fence: a sync fd (the producer waits on the CPU until it is readable)."""


@dataclass(frozen=True)
class SlotLayout:
    """What every slot of a set holds: one plane image per plane of ``geometry``, in ``kind`` memory."""

    kind: str
    """``"vulkan"`` (:class:`DawnSlotSet`) or ``"host"`` (:class:`HostSlotSet`)."""
    pixel_format: PixelFormat
    """The frames' software layout."""
    width: int
    """The frames' size in pixels (the planes' chroma rounded up)."""
    height: int
    geometry: tuple[PlaneGeometry, ...]
    """The planes, in order."""
    plane_bytes: tuple[int, ...]
    """Each plane's allocation in bytes (Vulkan's allocation size, or rows x row bytes)."""
    count: int
    """Slots in the set."""

    @property
    def slot_bytes(self) -> int:
        """Bytes one slot holds."""
        return sum(self.plane_bytes)


def gpu_route_unavailable_reason(device: Device) -> str | None:
    """Why NVDEC frames from a decoder process cannot be copied into ``device``'s textures on the GPU
    (None when they can): what the GPU copy in one process needs (a Dawn device with the two
    shared-memory features and a Vulkan device UUID, usable CUDA), and a CUDA device with its UUID."""
    from alpha2.native_gpu.interop.cuda_vk import CudaVkPairing

    reason = CudaVkPairing.unavailable_reason(device.webgpu_device, device.info, {})
    if reason is not None:
        return reason
    if device.cuda_ordinal is None:
        return f"no CUDA device has the UUID of Dawn's adapter ({device.cuda_reason})"
    return None


# ---------------------------------------------------------------------------------------------------
# the consumer's side


class DawnSlotSet:
    """Slots of Vulkan plane images imported into a Dawn device, written by a producer's CUDA copies.

    Made on the Device's SharedVulkanContext (the images) and its WebGPU device (their imports). Each
    slot is a :class:`~alpha2.native_gpu.interop.ring.RingSlot` (its planes' images, Dawn memories,
    textures and views; no semaphore: the producer waits for its copy before handing the slot over).

    Args:
        device: the alpha2 Device (Dawn, with its Vulkan twin).
        key: the frames' ring key (decoder, generation, format and plane geometry).
        count: slots to make.
        wait_timeout_s: the bound on the layout transition's submission.

    Raises:
        alpha2.gpu.Error subclasses: a Vulkan or Dawn call failed (what was made is destroyed).
    """

    kind = "vulkan"

    def __init__(self, device: Device, key: RingKey, count: int, wait_timeout_s: float) -> None:
        from alpha2.native_gpu.device.shared import QueueRole

        if count < 1:
            raise InvalidInputError(f"a slot set needs at least one slot, got {count}")
        self.key = key
        self._device = device
        context = device.shared_vulkan()
        self._vk = context._internal
        family = context.queue_families[QueueRole.GRAPHICS]
        self.slots: list[RingSlot] = []
        try:
            for _ in range(count):
                slot = RingSlot.for_key(key)
                self.slots.append(slot)
                images = dawn_planes.make_plane_images(self._vk, slot, family, wait_timeout_s)
                for index, (plane, image) in enumerate(zip(slot.planes, images)):
                    dawn_planes.import_plane(device.webgpu_device, image, plane, index)
        except BaseException:
            self.close()
            raise
        first = self.slots[0].planes
        assert all(p.vk_image is not None for p in first)
        self.layout = SlotLayout(
            kind=self.kind,
            pixel_format=key.pixel_format,
            width=0,
            height=0,
            geometry=key.geometry,
            plane_bytes=tuple(p.vk_image.size_bytes for p in first),  # type: ignore[union-attr]
            count=count,
        )

    def export_fds(self) -> list[OwnedFd]:
        """Every slot's plane memories as fds, slot by slot (the caller sends, then closes them)."""
        fds: list[OwnedFd] = []
        try:
            for slot in self.slots:
                for plane in slot.planes:
                    assert plane.vk_image is not None
                    fds.append(plane.vk_image.export_memory_fd())
        except BaseException:
            for fd in fds:
                fd.close()
            raise
        return fds

    def begin(self, index: int) -> None:
        """Begin Dawn's access to slot ``index``, whose write is known done (so, waiting on nothing)."""
        dawn_planes.begin_access(self.slots[index], None)

    def end(self, index: int) -> list[tuple[str, OwnedFd]]:
        """End Dawn's access to slot ``index``; the fence the slot's next write must wait for.

        Dawn runs on one queue, and the fence of the access ended last covers everything submitted
        before it, so only plane 0's (ended last) is kept.
        """
        slot = self.slots[index]
        error: BaseException | None = None
        for plane in reversed(slot.planes):
            try:
                dawn_planes.end_plane(plane, collect_fences=plane is slot.planes[0])
            except BaseException as exc:
                slot.broken = True
                error = error or exc
        fences: list[tuple[str, OwnedFd]] = []
        for plane in slot.planes:
            fences += [(FENCE_OPAQUE_FD, fd) for fd in plane.release_fence_fds]
            fences += [(FENCE_SYNC_FD, fd) for fd in plane.release_sync_fds]
            plane.release_fence_fds, plane.release_sync_fds = [], []
        if error is not None:
            for _, fd in fences:
                fd.close()
            raise _typed(error, "Dawn end_access on a decoder process's slot") from error
        return fences

    def imported(
        self,
        index: int,
        *,
        pixel_format: PixelFormat,
        colour: ColourInfo,
        metadata: FrameMetadata,
        identity: SurfaceIdentity,
        strides: tuple[int, ...],
        uses: int,
    ) -> ImportedFrame:
        """Slot ``index`` as an imported frame (its access begun)."""
        return dawn_planes.slot_frame(
            self.slots[index],
            pixel_format=pixel_format,
            colour=colour,
            metadata=metadata,
            identity=identity,
            width=identity.width,
            height=identity.height,
            strides=strides,
            sync=_done_point(),
            uses=uses,
        )

    def destroy(self, index: int) -> None:
        """Destroy slot ``index`` (an access still open is ended first). Dawn keeps what its submitted
        work still uses; the producer's import of the memory keeps the memory itself alive."""
        slot = self.slots[index]
        slot.destroy_objects(functools.partial(dawn_planes.end_plane, collect_fences=False))

    def close(self) -> None:
        """Destroy every slot (idempotent)."""
        for index in range(len(self.slots)):
            self.destroy(index)


def _typed(exc: BaseException, what: str) -> BaseException:
    if isinstance(exc, Error):
        return exc
    return InternalError(f"{what} failed: {type(exc).__name__}: {exc}")


def _done_point() -> ExternalSyncPoint:
    return ExternalSyncPoint(
        BackendKind.CUDA,
        poll=None,  # always signalled
        gpu_ordered=True,
        description="copied by a decoder process, which waited for the copy before handing the slot over",
    )


class HostSlotSet:
    """Slots of shared host memory (one ``memfd`` per plane), written by a producer process; the
    consumer hands each slot's planes out as a :class:`~alpha2.gpu.handles.CpuPlaneSet` over the shared
    pages (no copy), for the CPU upload.

    Args:
        geometry: the planes of one frame (rows of ``width_bytes``, packed).
        count: slots to make.
    """

    kind = "host"

    def __init__(self, pixel_format: PixelFormat, geometry: tuple[PlaneGeometry, ...], count: int) -> None:
        if count < 1:
            raise InvalidInputError(f"a slot set needs at least one slot, got {count}")
        self.geometry = geometry
        self._fds: list[list[OwnedFd]] = []
        self._maps: list[list[mmap.mmap]] = []
        sizes = tuple(g.width_bytes * g.height for g in geometry)
        try:
            for index in range(count):
                fds: list[OwnedFd] = []
                maps: list[mmap.mmap] = []
                self._fds.append(fds)
                self._maps.append(maps)
                for plane, size in enumerate(sizes):
                    fd = OwnedFd(os.memfd_create(f"alpha2-slot-{index}-plane-{plane}", os.MFD_CLOEXEC))
                    fds.append(fd)
                    os.ftruncate(fd.fileno(), size)
                    maps.append(mmap.mmap(fd.fileno(), size))
        except OSError as exc:
            self.close()
            raise InternalError(f"shared memory for a decoder process's frames: {exc}") from exc
        self.layout = SlotLayout(self.kind, pixel_format, 0, 0, geometry, sizes, count)

    def export_fds(self) -> list[OwnedFd]:
        """Every slot's plane memories as (duplicated) fds, slot by slot."""
        return [OwnedFd(os.dup(fd.fileno())) for fds in self._fds for fd in fds]

    def planes(self, index: int) -> CpuPlaneSet:
        """Slot ``index``'s planes, over the shared pages (valid until the slot goes back)."""
        return CpuPlaneSet(
            tuple(
                CpuPlane(
                    data=memoryview(m),
                    bytes_per_row=g.width_bytes,
                    width_bytes=g.width_bytes,
                    height=g.height,
                )
                for m, g in zip(self._maps[index], self.geometry)
            )
        )

    def destroy(self, index: int) -> None:
        """Unmap and close slot ``index`` (a mapping still exported, by an array someone keeps, is left
        to the collector)."""
        maps, self._maps[index] = self._maps[index], []
        for m in maps:
            try:
                m.close()
            except BufferError:
                pass
        fds, self._fds[index] = self._fds[index], []
        for fd in fds:
            fd.close()

    def close(self) -> None:
        """Destroy every slot (idempotent)."""
        for index in range(len(self._maps)):
            self.destroy(index)


# ---------------------------------------------------------------------------------------------------
# the producer's side


class CudaSlotWriter:
    """The producer's side of a :class:`DawnSlotSet`: its memories imported into CUDA, and each frame's
    NVDEC planes copied into a slot on a stream of its own, waited for before the slot is handed over.

    Each slot is a :class:`~alpha2.native_gpu.interop.ring.RingSlot` with only its CUDA side (the plane
    images' memories, the event of its copy), written by the GPU copy's own
    :func:`~alpha2.native_gpu.interop.cuda.enqueue_copy`.

    Args:
        ordinal: the CUDA device (the consumer's Dawn GPU).
        layout: what the slots hold.
        fds: the slots' plane memories, slot by slot (ownership passes here).
    """

    def __init__(self, ordinal: int, layout: SlotLayout, fds: list[OwnedFd]) -> None:
        from alpha2.native_gpu._cuda import interop

        self.layout = layout
        planes = len(layout.geometry)
        if len(fds) != planes * layout.count:
            for fd in fds:
                fd.close()
            raise InternalError(f"a slot set of {layout.count} x {planes} planes came with {len(fds)} fds")
        self._ctx = interop.primary_context(ordinal)
        self._slots: list[RingSlot] = []
        self._stream: Any = None
        # The slots of one stream: the key only carries their planes (the consumer's has the stream's).
        key = RingKey(0, 0, layout.pixel_format, layout.geometry)
        pending = list(fds)
        try:
            self._stream = interop.CopyStream(self._ctx)
            for _ in range(layout.count):
                slot = RingSlot.for_key(key)
                self._slots.append(slot)
                for plane, size in zip(slot.planes, layout.plane_bytes):
                    import_plane_image(self._ctx, plane, pending.pop(0), size)
                slot.copy_done = interop.CudaEvent(self._ctx)
        except BaseException:
            for fd in pending:
                fd.close()
            self.close()
            raise

    def write(
        self, index: int, frame: DecodedFrame, fences: list[tuple[str, OwnedFd]], timeout_s: float
    ) -> tuple[int, ...]:
        """Copy ``frame``'s planes into slot ``index`` after the consumer's ``fences``, and wait (bounded)
        for the copy. Returns the source planes' strides. The fences are closed.

        Raises:
            GpuTimeoutError: a fence or the copy did not finish within ``timeout_s``.
            CudaError: a driver call failed.
        """
        deadline = time.monotonic() + timeout_s
        planes = frame.planes
        if not isinstance(planes, tuple) or len(planes) < len(self.layout.geometry):
            for _, fd in fences:
                fd.close()
            raise InvalidInputError("the frame has no CUDA planes for the slot")
        slot = self._slots[index]
        first = slot.planes[0]
        while fences:  # the slot owns them now: waited on below, or closed with it
            kind, fd = fences.pop(0)
            (first.release_fence_fds if kind == FENCE_OPAQUE_FD else first.release_sync_fds).append(fd)
        copy_done = slot.copy_done
        assert copy_done is not None, "the slot's event is made with it"
        try:
            wait_sync_fds(slot, timeout_s)
            with self._ctx:
                enqueue_copy(self._ctx, self._stream, slot, planes, frame.cuda_stream, None, signal=False)
                copy_done.wait(max(0.0, deadline - time.monotonic()), "a decoder process's GPU copy")
        finally:
            waited, slot.waited = slot.waited, []
            with self._ctx:
                for semaphore in waited:
                    semaphore.close()
        return tuple(p.pitch_bytes for p in planes if isinstance(p, CudaPtr2D))

    def close(self) -> None:
        """Drop the imports, the events and the stream (idempotent)."""
        slots, self._slots = self._slots, []
        for slot in slots:
            slot.destroy_objects(lambda plane: None)  # no Dawn side here
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()


class HostSlotWriter:
    """The producer's side of a :class:`HostSlotSet`: each frame's plane rows written into a slot's
    shared pages (host planes: one copy; CUDA planes: downloaded into them)."""

    def __init__(self, layout: SlotLayout, fds: list[OwnedFd]) -> None:
        self.layout = layout
        planes = len(layout.geometry)
        self._maps: list[list[mmap.mmap]] = []
        try:
            if len(fds) != planes * layout.count:
                raise InternalError(
                    f"a slot set of {layout.count} x {planes} planes came with {len(fds)} fds"
                )
            for slot in range(layout.count):
                row: list[mmap.mmap] = []
                self._maps.append(row)
                for plane, size in enumerate(layout.plane_bytes):
                    row.append(mmap.mmap(fds[slot * planes + plane].fileno(), size))
        except BaseException:
            self.close()
            raise
        finally:
            for fd in fds:
                fd.close()

    def write(
        self, index: int, frame: DecodedFrame, fences: list[tuple[str, OwnedFd]], timeout_s: float
    ) -> tuple[int, ...]:
        """Write ``frame``'s planes into slot ``index`` (after any sync fd in ``fences``); returns the
        rows' byte counts (packed). CUDA planes are downloaded (bounded by ``timeout_s``) and written
        from the download's staging memory.

        Raises:
            GpuTimeoutError: a fence or the download did not finish within ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        for _, fd in fences:
            wait_sync_fd(fd, deadline)
        planes = frame.planes
        if isinstance(planes, CpuPlaneSet):
            return self._write_rows(index, planes)
        from alpha2.native_gpu._cuda.streams import download_planes

        left = max(0.0, deadline - time.monotonic())
        return download_planes(planes, frame.cuda_stream, left, functools.partial(self._write_rows, index))

    def _write_rows(self, index: int, host: CpuPlaneSet) -> tuple[int, ...]:
        strides = []
        for plane, g, m in zip(host.planes, self.layout.geometry, self._maps[index]):
            dst = np.ndarray((g.height, g.width_bytes), dtype=np.uint8, buffer=m)
            dst[...] = plane.to_ndarray()[: g.height, : g.width_bytes]
            strides.append(g.width_bytes)
        return tuple(strides)

    def close(self) -> None:
        """Unmap every slot (idempotent)."""
        maps, self._maps = self._maps, []
        for row in maps:
            for m in row:
                try:
                    m.close()
                except BufferError:
                    pass
