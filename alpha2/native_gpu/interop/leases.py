"""Import leases: what an imported frame is, how long it lives, and the lifecycle every pairing shares.

An :class:`ImportLease` is what :meth:`~alpha2.native_gpu.interop.importer.FrameImporter.import_frame`
returns: the plane textures of one decoded frame on a WebGPU device (an :class:`ImportedFrame`),
the :class:`ExternalSyncPoint` to honour before sampling them, the :class:`~alpha2.gpu.identity.ExecutionPath`
the pixels took and how many bytes crossed the CPU. Releasing the lease (``release()``, the context
manager, or -- as a backstop -- garbage collection) hands the texture set back to its pairing's pool or
ring exactly once, and lets the decoded surface go (:class:`NativeSurfaceLease`).

The texture sets / ring slots live in a :class:`~alpha2.native_gpu.interop.pool.SlotPool` (re-exported
here). Each interop pairing (CPU upload, CUDA -> Vulkan -> Dawn) implements :class:`InteropPairing`: a
``acquire(frame, surface) -> PairingTicket`` that either completes or undoes everything it did (mpv's
``mapper_map`` / ``mapper_unmap``), and a ticket whose ``release`` gives the slot back. The importer
keeps the table of pairings and picks one per frame.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.formats import PixelFormat, PlaneFormat
from alpha2.gpu.frames import AheadWork, DecodedFrame
from alpha2.gpu.geometry import FrameMetadata
from alpha2.gpu.handles import WgpuTexture
from alpha2.gpu.identity import BackendKind, ExecutionPath
from alpha2.gpu.surfaces import SurfaceIdentity
from alpha2.gpu.sync import SyncPoint, WaitStatus
from alpha2.gpu.webgpu import WebGpuDevice, WebGpuDeviceInfo
from alpha2.native_gpu.interop.pool import DEFAULT_MAX_IDLE_KEYS, DEFAULT_SLOTS_PER_KEY, SlotPool

__all__ = [
    "DEFAULT_MAX_IDLE_KEYS",
    "DEFAULT_SLOTS_PER_KEY",
    "ExternalSyncPoint",
    "ImageOwner",
    "ImportLease",
    "ImportTicketStats",
    "ImportedFrame",
    "ImportedPlaneDescriptor",
    "ImportedVulkanFrame",
    "InteropPairing",
    "NativeImageState",
    "NativeSurfaceLease",
    "PairingTicket",
    "SlotPool",
    "VulkanImportLease",
]


# ---------------------------------------------------------------------------------------------------
# values describing an imported frame


@dataclass(frozen=True)
class ImportedPlaneDescriptor:
    """One imported plane: which texture holds it and how the source laid it out."""

    plane_index: int
    """Index of the plane in the pixel format's plane order (0 = luma / packed)."""
    plane_format: PlaneFormat
    """The plane's texel format."""
    texture_format: str
    """WebGPU texture format of the plane texture (``"r8unorm"``, ``"rg16unorm"``, ...)."""
    width: int
    """Width of the plane in texels."""
    height: int
    """Height of the plane in texels."""
    source_stride_bytes: int
    """Bytes from one row to the next in the source (CPU bytes_per_row or CUDA pitch)."""

    def __post_init__(self) -> None:
        if self.plane_index < 0 or self.width <= 0 or self.height <= 0 or self.source_stride_bytes <= 0:
            raise InvalidInputError(f"invalid plane descriptor {self}")


class ImageOwner(enum.Enum):
    """Who tracks the layout and queue ownership of the images behind the plane textures."""

    WGPU_MANAGED = "wgpu_managed"
    """Plain textures of the WebGPU device: the implementation tracks layouts and barriers itself."""
    SHARED_VULKAN = "shared_vulkan"
    """Images of the SharedVulkanContext imported into Dawn: layouts travel with begin/end_access."""


@dataclass(frozen=True)
class NativeImageState:
    """The native state of the plane images as observed at import time.

    For the CPU-upload path the textures are the WebGPU device's own: their layout, queue family and
    any timeline live inside the implementation and are not observable, so those fields are None and
    ``owner`` is WGPU_MANAGED (ordering comes from the queue: ``write_texture`` before later submits).
    """

    owner: ImageOwner
    """Who tracks the images' layout."""
    layout: int | None = None
    """VkImageLayout the images are in when handed to the consumer (None: not observable)."""
    queue_family: int | None = None
    """Queue family index that owns the images (VK_QUEUE_FAMILY_EXTERNAL = 0xFFFFFFFE while CUDA writes)."""
    timeline_value: int | None = None
    """Value the copy-done semaphore reaches for this frame (use count for binary semaphores)."""

    @classmethod
    def wgpu_managed(cls) -> NativeImageState:
        """The state of textures the WebGPU implementation owns."""
        return cls(owner=ImageOwner.WGPU_MANAGED)


class ExternalSyncPoint(SyncPoint):
    """What must be honoured before the plane textures are sampled.

    ``gpu_ordered`` says whether the device's queue already waits for it: True for both paths here
    (CPU upload: ``write_texture`` is ordered before every later submit; GPU copy: Dawn's
    ``begin_access`` waits on the copy's semaphore on the GPU), so a renderer only has to submit on the
    same device. The CPU-side wait (``wait()``) tells when the producer's work itself is done (the CUDA
    copy), e.g. for timing or tear-down; sampling does not need it.
    """

    def __init__(
        self,
        backend: BackendKind,
        *,
        poll: Callable[[], bool] | None = None,
        wait_native: Callable[[float], WaitStatus] | None = None,
        gpu_ordered: bool = True,
        timeline_value: int | None = None,
        description: str = "",
    ) -> None:
        super().__init__(backend)
        self._poll_fn = poll
        self._wait_fn = wait_native
        self.gpu_ordered = gpu_ordered
        """Whether the consumer's queue already waits for this point on the GPU."""
        self.timeline_value = timeline_value
        """The semaphore value (or use count) this point stands for, where there is one."""
        self.description = description
        """What the point waits for, in words."""

    def _poll(self) -> bool:
        return True if self._poll_fn is None else bool(self._poll_fn())

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        if self._wait_fn is None:
            return WaitStatus.SIGNALED if self._poll() else WaitStatus.TIMED_OUT
        return self._wait_fn(timeout_s)

    def __repr__(self) -> str:
        return f"<ExternalSyncPoint {self.backend.value} gpu_ordered={self.gpu_ordered} {self.description}>"


@dataclass(frozen=True, eq=False)
class ImportedFrame:
    """One decoded frame as plane textures on a WebGPU device. Valid while its lease is held.

    Whatever the path (CPU upload or GPU copy), the planes are textures of the consumer's device;
    :attr:`plane_resources` gives them as vocabulary values (:class:`~alpha2.gpu.handles.WgpuTexture`).
    """

    textures: tuple[Any, ...]
    """One GPUTexture per plane, in plane order (pooled: they belong to the pool again after release)."""
    views: tuple[Any, ...]
    """One GPUTextureView per plane (2D, whole texture), ready to bind; same order as ``textures``."""
    planes: tuple[ImportedPlaneDescriptor, ...]
    """What each texture holds (plane index, texel and texture format, size, source stride)."""
    pixel_format: PixelFormat
    """Software layout of the planes (nv12 / p010 / yuv420p ...)."""
    colour: ColourInfo
    """The frame's colour description (resolved)."""
    metadata: FrameMetadata
    """Timing, sizes and rotation of the frame."""
    identity: SurfaceIdentity
    """Decoder and generation the frame came from."""
    width: int
    """Width of plane 0 in pixels (the decoded picture's width)."""
    height: int
    """Height of plane 0 in pixels."""
    sync: ExternalSyncPoint
    """What to honour before sampling (``sync.gpu_ordered``: already waited on the device's queue)."""
    path: ExecutionPath
    """How the pixels got here."""
    steps: tuple[ExecutionPath, ...]
    """Every hop, in order (``(CPU_DOWNLOAD, CPU_UPLOAD)`` for CUDA frames uploaded through the CPU)."""
    bytes_crossed_cpu: int
    """Pixel bytes that passed through host memory for this frame (0 on the GPU-copy path)."""
    image_state: NativeImageState
    """Native layout / queue family / timeline value observed at import."""

    @property
    def plane_resources(self) -> tuple[WgpuTexture, ...]:
        """The plane textures as GpuResource values (format and size from the plane descriptors).

        Borrowed, like the textures: valid while the lease is held (:attr:`ImportLease.plane_resources`
        keeps the lease alive as their ``keep_alive``).
        """
        return tuple(
            WgpuTexture(
                texture=texture,
                texture_format=plane.texture_format,
                width=plane.width,
                height=plane.height,
                usage=_usage_of(texture),
            )
            for texture, plane in zip(self.textures, self.planes)
        )


def _usage_of(texture: Any) -> int:
    usage = getattr(texture, "usage", 0)
    return usage if isinstance(usage, int) and not isinstance(usage, bool) else 0


@dataclass(frozen=True)
class ImportTicketStats:
    """A snapshot of an importer's (or a pairing's) tickets and texture sets."""

    allocations: int = 0
    """Texture sets / ring slots created."""
    reuses: int = 0
    """Imports served by an existing texture set or slot."""
    in_flight: int = 0
    """Leases not yet released."""
    peak_in_flight: int = 0
    """Most leases held at once."""
    acquired: int = 0
    """Leases handed out."""
    released: int = 0
    """Leases released."""
    failed: int = 0
    """Imports that failed (and were undone)."""
    fallbacks: int = 0
    """Imports that took a path other than the preferred one (each lease says why)."""
    pool_sets: int = 0
    """Texture sets / slots alive now (idle and in use)."""
    pool_idle: int = 0
    """Texture sets / slots waiting for reuse."""
    live_textures: int = 0
    """Plane textures alive now."""
    drained: int = 0
    """Texture sets destroyed because their decoder generation ended (or the importer closed)."""
    surfaces_held: int = 0
    """Decoded surfaces still held by the importer (GPU copy: until the copy is done)."""
    copied_ahead: int = 0
    """GPU copy: frames copied on their decoder's thread (``copy_ahead``) before they were imported."""
    not_copied_ahead: int = 0
    """GPU copy: frames offered to ``copy_ahead`` that were copied at import instead, as without it (no
    idle slot, Dawn's work on the slot not known done, or the copy failed on the decoder's thread)."""

    def __add__(self, other: ImportTicketStats) -> ImportTicketStats:
        """Combine two snapshots (the peak is the larger peak, an approximation)."""
        values = {}
        for name in self.__dataclass_fields__:
            a, b = getattr(self, name), getattr(other, name)
            values[name] = max(a, b) if name == "peak_in_flight" else a + b
        return ImportTicketStats(**values)


class TicketCounter:
    """Thread-safe counts behind :class:`ImportTicketStats` (one per importer)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.acquired = 0
        self.released = 0
        self.failed = 0
        self.fallbacks = 0
        self.peak_in_flight = 0

    def on_acquired(self, fallback: bool) -> None:
        with self._lock:
            self.acquired += 1
            self.fallbacks += int(fallback)
            self.peak_in_flight = max(self.peak_in_flight, self.acquired - self.released)

    def on_released(self) -> None:
        with self._lock:
            self.released += 1

    def on_failed(self) -> None:
        with self._lock:
            self.failed += 1

    def snapshot(self) -> ImportTicketStats:
        with self._lock:
            return ImportTicketStats(
                in_flight=self.acquired - self.released,
                peak_in_flight=self.peak_in_flight,
                acquired=self.acquired,
                released=self.released,
                failed=self.failed,
                fallbacks=self.fallbacks,
            )


# ---------------------------------------------------------------------------------------------------
# the surface lease


class _SurfaceState:
    """What the surface lease's GC backstop may touch (never the lease itself)."""

    __slots__ = ("frame", "give_back", "lock")

    def __init__(self, frame: DecodedFrame, give_back: Callable[[], None] | None) -> None:
        self.frame: DecodedFrame | None = frame
        self.give_back = give_back
        self.lock = threading.Lock()


def _release_surface(state: _SurfaceState) -> None:
    with state.lock:
        frame, state.frame = state.frame, None
    if frame is None:
        return
    if state.give_back is not None:
        state.give_back()
    else:
        frame.release()


class NativeSurfaceLease:
    """Keeps a decoded surface (a :class:`DecodedFrame`) alive until the import no longer needs it.

    A pairing releases it as early as is safe (CPU upload: once ``write_texture`` has copied the bytes;
    GPU copy: once the CUDA copy has completed), and the import lease releases it at the latest.
    Releasing calls :meth:`DecodedFrame.release`, which gives back the frame's SurfaceReservation;
    for a lent frame (``give_back`` given: the frame stays its owner's, who releases it) it calls
    ``give_back()`` instead, which says the import is done with the frame (any thread). Exactly once;
    idempotent; a GC backstop.
    """

    __slots__ = ("__weakref__", "_finalizer", "_state", "identity")

    def __init__(self, frame: DecodedFrame, *, give_back: Callable[[], None] | None = None) -> None:
        self._state = _SurfaceState(frame, give_back)
        self.identity: SurfaceIdentity = frame.identity
        """The surface's decoder and generation."""
        self._finalizer = weakref.finalize(self, _release_surface, self._state)
        self._finalizer.atexit = False

    @property
    def frame(self) -> DecodedFrame:
        """The decoded frame (raises ClosedError once released)."""
        frame = self._state.frame
        if frame is None:
            raise ClosedError("the decoded surface was already released")
        return frame

    @property
    def released(self) -> bool:
        """Whether the surface has been let go."""
        return self._state.frame is None

    def release(self) -> None:
        """Let the decoded surface go (DecodedFrame.release()). Idempotent."""
        self._finalizer()

    def disown(self) -> None:
        """Stop holding the surface without releasing it (a failed import hands the frame back)."""
        self._finalizer.detach()
        with self._state.lock:
            self._state.frame = None

    def __enter__(self) -> NativeSurfaceLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<NativeSurfaceLease {'released' if self.released else 'held'} {self.identity}>"


# ---------------------------------------------------------------------------------------------------
# the pairing lifecycle


@dataclass(eq=False)
class PairingTicket:
    """What a pairing's ``acquire`` hands back: the imported frame and how to give its slot back.

    ``release`` is called exactly once, by the lease (never by the GC thread holding a lock).
    """

    frame: ImportedFrame
    """The imported frame."""
    release: Callable[[], None]
    """Gives the texture set / slot back (after ending any access); must not raise for normal use."""


class InteropPairing(abc.ABC):
    """One interop pairing (CPU upload, CUDA -> Vulkan -> Dawn...) behind the acquire / release lifecycle.

    Subclasses say which :class:`ExecutionPath` they give, whether they can work with a device
    (:meth:`unavailable_reason`) and with a frame (:meth:`refuses`), and implement :meth:`acquire`,
    which must either complete or undo every step it took, in reverse order.
    """

    path: ClassVar[ExecutionPath]
    """The path frames imported by this pairing take."""
    name: ClassVar[str]
    """Short name for reports (``"cpu_upload"``, ``"cuda_vk"``)."""

    @classmethod
    @abc.abstractmethod
    def unavailable_reason(
        cls, device: WebGpuDevice, info: WebGpuDeviceInfo, options: dict[str, Any]
    ) -> str | None:
        """Why this pairing cannot work with the device (None when it can). Cheap; never raises."""

    @classmethod
    @abc.abstractmethod
    def create(
        cls,
        device: WebGpuDevice,
        info: WebGpuDeviceInfo,
        *,
        gpu_module: Any,
        options: dict[str, Any],
        wait_timeout: Callable[[], float],
    ) -> InteropPairing:
        """Set the pairing up for a device (on first use). Raises a typed alpha2 error when it cannot."""

    @classmethod
    def takes(cls, on_gpu: bool) -> bool:
        """Whether the pairing is meant for CUDA frames (``on_gpu``) or host-memory frames."""
        return True

    @classmethod
    def not_applicable_reason(cls, on_gpu: bool) -> str:
        """Why the pairing is not meant for CUDA (``on_gpu``) or host-memory frames, when asked for it."""
        return f"{cls.name} does not take {'CUDA' if on_gpu else 'host-memory'} frames"

    def prepare_stream(self, identity: SurfaceIdentity, *, ahead: bool = False) -> None:  # noqa: B027
        """Allocate what frames of ``identity`` will take (a texture set, a ring slot) before the first;
        ``ahead``: their decoder copies them ahead (:meth:`copy_ahead`), so what that holds too.

        Raises a typed alpha2 error when it cannot; nothing is left half-made. (An optional hook.)
        """

    @abc.abstractmethod
    def refuses(self, frame: DecodedFrame) -> str | None:
        """Why this pairing cannot import this frame (None when it can). Never raises."""

    @abc.abstractmethod
    def acquire(self, frame: DecodedFrame, surface: NativeSurfaceLease, note: str | None) -> PairingTicket:
        """Import the frame; on any error undo what was done and raise a typed alpha2 error.

        ``note`` is the fallback reason the importer recorded (folded into descriptions and reports).
        """

    @abc.abstractmethod
    def stats(self) -> ImportTicketStats:
        """Counts of texture sets / slots (allocations, reuses, pool sizes, live textures)."""

    def poll(self) -> None:  # noqa: B027 - optional hook
        """Non-blocking housekeeping (e.g. let go of surfaces whose copies finished)."""

    def copy_ahead(self, frame: DecodedFrame) -> AheadWork | None:
        """Do the part of ``frame``'s import that needs no WebGPU call now, on the calling thread (a
        decoder's); its :meth:`acquire` then finishes it. None when the pairing has no such part, or
        cannot do it now. Thread-safe; sets nothing up."""
        return None

    @abc.abstractmethod
    def close(self) -> None:
        """Destroy everything the pairing made; leases still held become invalid. Idempotent."""


# ---------------------------------------------------------------------------------------------------
# the import lease


class _LeaseState:
    """The part of a lease its GC backstop may touch (never the lease itself)."""

    __slots__ = ("counter", "lock", "release_slot", "surface")

    def __init__(
        self, release_slot: Callable[[], None], surface: NativeSurfaceLease | None, counter: TicketCounter
    ) -> None:
        self.release_slot: Callable[[], None] | None = release_slot
        self.surface: NativeSurfaceLease | None = surface
        self.counter: TicketCounter | None = counter
        self.lock = threading.Lock()


def _release_lease(state: _LeaseState) -> None:
    with state.lock:
        release_slot, state.release_slot = state.release_slot, None
        surface, state.surface = state.surface, None
        counter, state.counter = state.counter, None
    if release_slot is None:
        return
    try:
        release_slot()
    finally:
        if surface is not None:
            surface.release()
        if counter is not None:
            counter.on_released()


class ImportLease:
    """An imported frame held until its sampling work is submitted; released exactly once.

    Release it with :meth:`release` (idempotent) or a ``with`` block once the work that samples the
    textures has been *submitted* on the device's queue: the queue orders that work before the slot's
    next use (CPU upload: later ``write_texture`` calls; GPU copy: Dawn's end-of-access fence, which
    the next CUDA copy into the slot waits for). Dropping the last reference releases it too (a
    backstop, not a substitute).
    """

    __slots__ = ("__weakref__", "_finalizer", "_frame", "_path", "_state", "reason", "surface", "ticket_id")

    def __init__(
        self,
        frame: ImportedFrame,
        release_slot: Callable[[], None],
        surface: NativeSurfaceLease | None,
        counter: TicketCounter,
        *,
        ticket_id: int,
        reason: str | None = None,
    ) -> None:
        self._frame: ImportedFrame | None = frame
        self._path = frame.path
        self._state = _LeaseState(release_slot, surface, counter)
        self.surface = surface
        """The decoded surface this import holds (released early where safe); None for a frame whose
        surface is another process's (:class:`~alpha2.api.decode_process.DecodeProcess`)."""
        self.ticket_id = ticket_id
        """Sequence number of this import within its importer."""
        self.reason = reason
        """Why this frame did not take the preferred path (None when it did)."""
        self._finalizer = weakref.finalize(self, _release_lease, self._state)
        self._finalizer.atexit = False

    @property
    def frame(self) -> ImportedFrame:
        """The imported frame (raises ClosedError once the lease is released)."""
        frame = self._frame
        if frame is None:
            raise ClosedError("this ImportLease was released; its textures belong to the pool again")
        return frame

    @property
    def plane_resources(self) -> tuple[WgpuTexture, ...]:
        """The frame's planes as GpuResource values whose ``keep_alive`` is this lease.

        Raises:
            ClosedError: the lease was released.
        """
        return tuple(dataclasses.replace(r, keep_alive=self) for r in self.frame.plane_resources)

    @property
    def path(self) -> ExecutionPath:
        """The path the frame took (kept after release, for reports)."""
        return self._path

    @property
    def released(self) -> bool:
        """Whether the lease has been released."""
        return self._frame is None

    def release(self) -> None:
        """Give the texture set back and let the decoded surface go. Idempotent; exactly once."""
        self._frame = None
        self._finalizer()

    def __enter__(self) -> ImportLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"<ImportLease #{self.ticket_id} {state}>"


# ---------------------------------------------------------------------------------------------------
# the seeds' names (alpha2_native_gpu's reference documents): the one place they are kept

VulkanImportLease = ImportLease
"""The reference documents' name of :class:`ImportLease` (the lease is not Vulkan-specific)."""
ImportedVulkanFrame = ImportedFrame
"""The reference documents' name of :class:`ImportedFrame` (the textures are WebGPU textures)."""
