"""The GPU copy's ring: slots of plane images per stream, reused frame after frame, retired safely.

Bookkeeping only, so that it runs with fakes: which slots a frame may take (:class:`RingKey`), what a
slot holds and in which state (:class:`RingSlot`, :class:`RingPlane`), and when a slot leaving the ring
may be destroyed (:class:`Ring`). The GPU objects are made, fenced and destroyed by the pairing
(:mod:`.cuda_vk`) through the four callables it gives the ring.

A slot leaves the ring when it is broken (an acquire or release failed half-way: its state is
unknown), when its stream's decoder moved to a newer generation, when its stream was idle while more
than ``max_idle_keys`` others came, or at close. It is destroyed only once its CUDA work is done; when
Dawn's end-of-access fences are still pending on it, CUDA first waits on them (the destruction is
ordered after Dawn's last access), and it waits in the retired list, destroyed by :meth:`Ring.poll`.
"""

from __future__ import annotations

import functools
import select
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from alpha2.gpu.budget import MemoryBudget
from alpha2.gpu.errors import Error, GpuTimeoutError, InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.handles import OwnedFd
from alpha2.gpu.identity import BackendKind
from alpha2.gpu.surfaces import SurfaceIdentity
from alpha2.native_gpu._vk.export import VK_IMAGE_LAYOUT_GENERAL
from alpha2.native_gpu.interop.cpu_upload import PlaneGeometry
from alpha2.native_gpu.interop.leases import DEFAULT_MAX_IDLE_KEYS, DEFAULT_SLOTS_PER_KEY, SlotPool

if TYPE_CHECKING:
    from alpha2.native_gpu._cuda.interop import CudaEvent, ExternalImage, ExternalSemaphore
    from alpha2.native_gpu._vk.export import ExportableImage, ExportableSemaphore

__all__ = [
    "Ring",
    "RingKey",
    "RingPlane",
    "RingSlot",
    "ring_slot_bytes",
    "wait_sync_fd",
    "wait_sync_fds",
]


@dataclass(frozen=True)
class RingKey:
    """Which slots a frame may take: the frames of one decoder generation, format and size."""

    decoder_id: int
    """The decoder (``SurfaceIdentity.decoder_id``)."""
    generation: int
    """Its configuration (``SurfaceIdentity.generation``); a newer one retires the older's slots."""
    pixel_format: PixelFormat
    """The frames' software layout."""
    geometry: tuple[PlaneGeometry, ...]
    """The plane images' formats and sizes, in plane order."""

    def __post_init__(self) -> None:
        if self.generation < 0:
            raise InvalidInputError(f"RingKey.generation must be >= 0, got {self.generation}")
        if not self.geometry:
            raise InvalidInputError("a RingKey needs at least one plane")
        # Hashed once: the ring's dicts look a key up several times per frame, and hashing its
        # fields anew (enums hash in Python) was a tenth of the per-frame Python of an import.
        object.__setattr__(
            self, "_hash", hash((self.decoder_id, self.generation, self.pixel_format, self.geometry))
        )

    def __hash__(self) -> int:
        return int(self._hash)  # type: ignore[attr-defined]

    def __reduce__(self) -> tuple[Any, ...]:
        # Made anew where unpickled: the hash of its formats' names differs from one process to another.
        return (type(self), (self.decoder_id, self.generation, self.pixel_format, self.geometry))

    @classmethod
    def of(
        cls, identity: SurfaceIdentity, pixel_format: PixelFormat, geometry: tuple[PlaneGeometry, ...]
    ) -> RingKey:
        """The key of ``identity``'s frames, whose planes have ``geometry``: the same object for the
        same frames (a dict finds it by identity, without comparing fields)."""
        return _ring_key(identity.decoder_id, identity.generation, pixel_format, geometry)

    @property
    def pool_key(self) -> tuple[Hashable, ...]:
        """The key in SlotPool's convention: decoder, generation, then this key."""
        return (self.decoder_id, self.generation, self)


@functools.lru_cache(maxsize=1024)
def _ring_key(
    decoder_id: int, generation: int, pixel_format: PixelFormat, geometry: tuple[PlaneGeometry, ...]
) -> RingKey:
    return RingKey(decoder_id, generation, pixel_format, geometry)


def ring_slot_bytes(pool_key: tuple[Hashable, ...]) -> int:
    """Bytes one slot's plane images hold (what a memory budget counts; the driver's row alignment and
    tiling may add a little to the real allocation)."""
    key = pool_key[2]
    assert isinstance(key, RingKey)
    return sum(g.width_bytes * g.height for g in key.geometry)


@dataclass(eq=False)
class RingPlane:
    """One plane image of a slot, as Vulkan, CUDA and Dawn each see it."""

    geometry: PlaneGeometry
    """The image's format and size."""
    vk_image: ExportableImage | None = None
    """The Vulkan image on exportable OPAQUE_FD memory."""
    semaphore: ExportableSemaphore | None = None
    """The binary semaphore the copy signals and Dawn's begin_access waits on."""
    cu_image: ExternalImage | None = None
    """The image's memory imported into CUDA (the copy's destination)."""
    cu_semaphore: ExternalSemaphore | None = None
    """``semaphore`` imported into CUDA (signalled after the copy)."""
    memory: Any = None
    """Dawn's GPUSharedTextureMemory of the image."""
    texture: Any = None
    """Dawn's texture on ``memory`` (what the consumer samples)."""
    view: Any = None
    """A view of ``texture``."""
    fence: Any = None
    """Dawn's GPUSharedFence of ``semaphore``."""
    layout: int = VK_IMAGE_LAYOUT_GENERAL
    """The VkImageLayout Dawn's last access left the image in."""
    uses: int = 0
    """Copies made into the image (a copy made ahead signals no semaphore)."""
    accessing: bool = False
    """Whether Dawn's access to ``memory`` has begun and not yet ended."""
    release_fence_fds: list[OwnedFd] = field(default_factory=list)
    """Dawn end-of-access fences (opaque-fd semaphores), imported into CUDA and waited on by the slot's
    next CUDA work, on whichever thread enqueues it (the caller's, or a decoder's copying ahead)."""
    release_sync_fds: list[OwnedFd] = field(default_factory=list)
    """Dawn end-of-access fences handed back as sync fds, waited on the CPU before the next copy."""


@dataclass(eq=False)
class RingSlot:
    """One frame's worth of plane images, reused frame after frame."""

    key: RingKey
    """The stream the slot belongs to."""
    planes: list[RingPlane]
    """One image per plane of the key's geometry."""
    copy_done: CudaEvent | None = None
    """Recorded after each CUDA use of the slot; done means the slot's CUDA work is."""
    waited: list[ExternalSemaphore] = field(default_factory=list)
    """CUDA-imported Dawn fences that CUDA work on the slot waited on, not yet handed on or closed."""
    broken: bool = False
    """Whether an acquire or release failed half-way: the slot is retired, never reused."""
    unsettled: bool = False
    """Whether a copy made ahead into the slot (:meth:`CudaVkPairing.copy_ahead`) is not yet known
    done: until it is, ``reading`` and ``waited`` are held."""
    reading: Any = None
    """What that copy reads (the decoded frame), held until the copy is known done."""
    settle_lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    """Taken by whichever thread finds that copy done (its decoder's, or the importing one), and by
    the slot's destruction. Re-entrant: a finalizer the collector runs inside may give a slot back."""

    @classmethod
    def for_key(cls, key: RingKey) -> RingSlot:
        """A slot with one (not yet made) plane per plane of ``key``."""
        return cls(key=key, planes=[RingPlane(g) for g in key.geometry])

    def texture_count(self) -> int:
        """Dawn textures the slot holds."""
        return sum(1 for p in self.planes if p.texture is not None)

    def planes_have_pending_fences(self) -> bool:
        """Whether Dawn's end-of-access fences are still to be waited on before the slot's next use."""
        return any(p.release_fence_fds or p.release_sync_fds for p in self.planes)

    def destroy_objects(self, end_access: Callable[[RingPlane], None]) -> None:
        """Close the slot's objects in reverse order of creation. Only once its GPU work is done.

        ``end_access`` ends Dawn's access to a plane still accessed (its failure does not stop the rest).
        Dawn's objects are only dropped: Dawn keeps what its submitted work still uses.
        """
        with self.settle_lock:  # not while a decoder's thread asks whether its copy is done
            waited, self.waited = self.waited, []
            for semaphore in waited:
                semaphore.close()
            self.reading, self.unsettled = None, False
        for plane in reversed(self.planes):
            if plane.accessing:
                try:
                    end_access(plane)
                except BaseException:
                    pass
            fds, plane.release_sync_fds = plane.release_sync_fds, []
            fds += plane.release_fence_fds
            plane.release_fence_fds = []
            for fd in fds:
                fd.close()
            plane.fence = plane.view = plane.texture = plane.memory = None
            cu_semaphore, plane.cu_semaphore = plane.cu_semaphore, None
            cu_image, plane.cu_image = plane.cu_image, None
            semaphore_vk, plane.semaphore = plane.semaphore, None
            vk_image, plane.vk_image = plane.vk_image, None
            for obj in (cu_semaphore, cu_image, semaphore_vk, vk_image):
                if obj is not None:
                    obj.close()
        copy_done, self.copy_done = self.copy_done, None
        if copy_done is not None:
            copy_done.close()


def wait_sync_fd(fd: OwnedFd, deadline: float) -> None:
    """Wait on the CPU until an end-of-access sync fd signals (is readable), up to ``deadline`` (a
    ``time.monotonic()`` value); closes it.

    Raises:
        GpuTimeoutError: it did not signal in time.
    """
    try:
        poller = select.poll()
        poller.register(fd.fileno(), select.POLLIN)
        if not poller.poll(max(0, int((deadline - time.monotonic()) * 1000))):
            raise GpuTimeoutError(
                "Dawn's end-of-access fence (a sync fd) did not signal within the GPU wait timeout"
            )
    finally:
        fd.close()


def wait_sync_fds(slot: RingSlot, timeout_s: float) -> None:
    """Wait on the CPU, up to ``timeout_s`` in all, for the slot's end-of-access sync fds; closes them.

    Raises:
        GpuTimeoutError: a sync fd did not signal in time (the fds are closed and dropped either way).
    """
    deadline = time.monotonic() + timeout_s
    fds = [fd for plane in slot.planes for fd in plane.release_sync_fds]
    for plane in slot.planes:
        plane.release_sync_fds = []
    try:
        while fds:
            wait_sync_fd(fds.pop(0), deadline)
    finally:
        for fd in fds:
            fd.close()


class Ring:
    """The pairing's slots: a SlotPool keyed by :class:`RingKey`, plus the retired slots. Thread-safe.

    Args:
        create: makes a slot's GPU objects for a key (undoing them itself on failure).
        work_done: whether the slot's CUDA work is done; non-blocking. Raising counts as done (a failed
            context runs nothing more).
        order_after_last_access: makes the slot's CUDA work wait on its pending Dawn fences and records
            ``copy_done`` after them (so that ``work_done`` covers Dawn's last access).
        destroy: destroys a slot's GPU objects, once its work is done.
        per_key: slots per stream before a take waits for one to come back.
        max_idle_keys: idle streams whose slots are kept.
        memory_budget: where each slot's bytes (:func:`ring_slot_bytes`, backend Vulkan: the images
            are Vulkan memory) are reserved; its pressure events retire idle slots. None: not counted.
    """

    def __init__(
        self,
        *,
        create: Callable[[RingKey], RingSlot],
        work_done: Callable[[RingSlot], bool],
        order_after_last_access: Callable[[RingSlot], None],
        destroy: Callable[[RingSlot], None],
        per_key: int = DEFAULT_SLOTS_PER_KEY,
        max_idle_keys: int = DEFAULT_MAX_IDLE_KEYS,
        memory_budget: MemoryBudget | None = None,
    ) -> None:
        self._create_fn = create
        self._work_done_fn = work_done
        self._order_fn = order_after_last_access
        self._destroy_fn = destroy
        self._lock = threading.Lock()
        self._retired: list[RingSlot] = []  # out of the ring, waiting for their CUDA work
        self._live_textures = 0
        self._pool: SlotPool[RingSlot] = SlotPool(
            self._create,
            self._retire,
            per_key=per_key,
            max_idle_keys=max_idle_keys,
            what="GPU-copy ring slots",
            memory_budget=memory_budget,
            backend=BackendKind.VULKAN,
            item_bytes=ring_slot_bytes if memory_budget is not None else None,
        )

    # -- taking and giving back ---------------------------------------------------------------------

    def take(self, key: RingKey, timeout_s: float) -> tuple[RingSlot, bool]:
        """A slot for ``key`` and whether it was reused (see :meth:`SlotPool.take`).

        Raises:
            GpuTimeoutError: all ``per_key`` slots of the key stayed out for ``timeout_s``.
            InvalidInputError: the ring is closed, or the key's generation is older than one seen.
        """
        return self._pool.take(key.pool_key, timeout_s)

    def take_idle(self, key: RingKey) -> RingSlot | None:
        """An idle slot of ``key`` taken ahead, without waiting or making one (:meth:`SlotPool.take_idle`)."""
        return self._pool.take_idle(key.pool_key)

    def grow(self, key: RingKey, limit: int) -> bool:
        """Make one more idle slot of ``key`` while it has fewer than ``limit``; whether it has one more
        (:meth:`SlotPool.grow`)."""
        return self._pool.grow(key.pool_key, limit)

    @property
    def per_key(self) -> int:
        """Slots per stream before a take waits (slots taken ahead aside)."""
        return self._pool.per_key

    def claim_ahead(self, slot: RingSlot) -> None:
        """A slot taken ahead is now held by an import (:meth:`SlotPool.claim_ahead`)."""
        self._pool.claim_ahead(slot.key.pool_key)

    def give_back(self, slot: RingSlot, *, broken: bool = False, ahead: bool = False) -> None:
        """Return a slot (``ahead``: taken ahead, not claimed); a broken one (or one of a stale
        generation, or evicted) is retired."""
        self._pool.give_back(slot.key.pool_key, slot, broken=broken, ahead=ahead)

    def _create(self, pool_key: tuple[Hashable, ...]) -> RingSlot:
        key = pool_key[2]
        assert isinstance(key, RingKey)
        slot = self._create_fn(key)
        with self._lock:
            self._live_textures += slot.texture_count()
        return slot

    # -- retirement ---------------------------------------------------------------------------------

    def _work_done(self, slot: RingSlot) -> bool:
        try:
            return self._work_done_fn(slot)
        except Error:
            return True  # a failed context: nothing more runs on the slot

    def _retire(self, slot: RingSlot) -> None:
        """SlotPool's destroy hook: destroy now if the slot's CUDA work is done, else after poll()."""
        pending = slot.planes_have_pending_fences()
        if not pending and self._work_done(slot):
            self.destroy(slot)
            return
        if pending:
            try:
                self._order_fn(slot)
            except Error:
                pass  # the context failed: its work is over, poll() destroys the slot
        with self._lock:
            self._retired.append(slot)

    def has_retired(self) -> bool:
        """Whether slots wait for their CUDA work before being destroyed."""
        with self._lock:
            return bool(self._retired)

    def poll(self) -> None:
        """Destroy the retired slots whose CUDA work is done."""
        with self._lock:
            retired, self._retired = self._retired, []
        still: list[RingSlot] = []
        for slot in retired:
            if self._work_done(slot):
                self.destroy(slot)
            else:
                still.append(slot)
        with self._lock:
            self._retired = still + self._retired

    def take_retired(self) -> list[RingSlot]:
        """Take the retired slots out (whoever takes them destroys them, with :meth:`destroy`)."""
        with self._lock:
            retired, self._retired = self._retired, []
        return retired

    def destroy(self, slot: RingSlot) -> None:
        """Destroy a slot (its CUDA work must be done) and stop counting its textures."""
        count = slot.texture_count()
        self._destroy_fn(slot)
        with self._lock:
            self._live_textures -= count

    # -- reports and teardown -----------------------------------------------------------------------

    @property
    def allocations(self) -> int:
        """Slots made."""
        return self._pool.allocations

    @property
    def reuses(self) -> int:
        """Takes that reused an idle slot."""
        return self._pool.reuses

    @property
    def drained(self) -> int:
        """Slots that left the ring (retired)."""
        return self._pool.drained

    @property
    def live_textures(self) -> int:
        """Dawn textures of slots not yet destroyed."""
        with self._lock:
            return self._live_textures

    def counts(self) -> tuple[int, int]:
        """(slots in the ring, idle slots); retired slots are not counted."""
        return self._pool.counts()

    def idle_slots(self) -> list[RingSlot]:
        """The idle slots (a snapshot)."""
        return self._pool.idle_items()

    def close(self) -> None:
        """Retire the idle slots; slots still out are retired as they come back. Idempotent."""
        self._pool.close()
