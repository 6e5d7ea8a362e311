"""The frame importer: DecodedFrame -> plane textures on an application's WebGPU device, by the best path.

:class:`FrameImporter` detects which WebGPU implementation a device belongs to (``wgpu`` or
``wgpudawn``, from the device object's module) and what it has enabled, then imports each frame through
one of the interop pairings in :data:`PAIRINGS` -- one module each, behind the same acquire / release
lifecycle (mpv's ``hwdec`` table):

====================  =============================  ===============================================
path                  module                         when
====================  =============================  ===============================================
``GPU_COPY``          :mod:`.cuda_vk`                CUDA (NVDEC) frames, a wgpudawn device with
                                                     'shared-texture-memory-opaque-f-d' and
                                                     'shared-fence-vk-semaphore-opaque-f-d' whose
                                                     UUIDs match the shared Vulkan and CUDA devices
``CPU_UPLOAD``        :mod:`.cpu_upload`             any frame, any device (CUDA frames downloaded)
====================  =============================  ===============================================

The path each frame takes is reported on its lease (``lease.frame.path``, ``.steps``,
``.bytes_crossed_cpu``, ``lease.reason``) and summed in :attr:`FrameImporter.path_report`. A fallback
(a CUDA frame uploaded through the CPU because the GPU copy cannot be had) is recorded with its reason,
never silent; ``require=`` turns it into an error.
"""

from __future__ import annotations

import collections
import importlib
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from alpha2.gpu.budget import MemoryBudget
from alpha2.gpu.errors import ClosedError, Error, InvalidInputError, UnsupportedError
from alpha2.gpu.frames import AheadWork, DecodedFrame
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.surfaces import SurfaceIdentity
from alpha2.gpu.webgpu import WebGpuDevice, WebGpuDeviceInfo
from alpha2.native_gpu.device.device import Device
from alpha2.native_gpu.device.waits import gpu_wait_timeout
from alpha2.native_gpu.interop import cpu_upload, cuda_vk
from alpha2.native_gpu.interop.leases import (
    ImportLease,
    ImportTicketStats,
    InteropPairing,
    NativeSurfaceLease,
    TicketCounter,
)
from alpha2.native_gpu.paths import PathReport, PathStatus

__all__ = [
    "PAIRINGS",
    "FrameImporter",
    "import_report",
]

PAIRINGS: tuple[type[InteropPairing], ...] = (
    cuda_vk.CudaVkPairing,
    cpu_upload.CpuUploadPairing,
)
"""The interop pairings, best first. The importer takes the first one that the device and frame allow."""


def import_report(
    info: WebGpuDeviceInfo,
    paths: tuple[PathStatus[ExecutionPath], ...] = (),
    frames_by_path: Mapping[ExecutionPath, int] | None = None,
    fallbacks: Mapping[str, int] | None = None,
    bytes_crossed_cpu: int = 0,
) -> PathReport[ExecutionPath]:
    """The :class:`~alpha2.native_gpu.paths.PathReport` of imports into the device ``info`` describes."""
    return PathReport(
        "importer",
        "paths",
        paths,
        dict(frames_by_path or {}),
        dict(fallbacks or {}),
        bytes_crossed_cpu,
        info.implementation,
        info.adapter_name,
    )


class _Entry:
    """One row of the importer's table: the pairing class, its instance once made, or why it is out."""

    def __init__(self, cls: type[InteropPairing], reason: str | None) -> None:
        self.cls = cls
        self.reason = reason
        self.instance: InteropPairing | None = None


class FrameImporter:
    """Imports decoded frames into plane textures on one WebGPU device, by the best path it allows.

    Typical use, with the set-up done at open rather than on the first frame::

        importer = FrameImporter(device)
        importer.prepare(
            gpu_frames=session.hwaccel_report.active is HwAccelMode.CUDA,
            identity=session.expected_identity(),
        )
        for frame in session:
            with importer.import_frame(frame) as lease:
                ...  # encode the passes that sample lease.frame.views, then submit them

    Args:
        device: An alpha2 :class:`~alpha2.native_gpu.device.device.Device`, or the application's own
            ``GPUDevice`` (``wgpu`` or ``wgpudawn``; adopted into a Device). For 10- to 16-bit formats
            it needs 16-bit normalized textures ('texture-format16bit-norm' on wgpu,
            'unorm16-texture-formats' on Dawn); for the GPU copy, Dawn's two shared-memory features.
        prefer: The path to try first; None: the best the device allows (GPU_COPY, then CPU_UPLOAD).
            A frame that cannot take it falls back, recorded on the lease and in :attr:`path_report`.
        require: The only path frames may take; a frame (or device) that cannot have it raises
            UnsupportedError with the reason instead of falling back.
        slots: Texture sets per stream (CPU upload) / ring slots (GPU copy). When all are held by
            unreleased leases, an import waits up to the GPU wait timeout, then raises GpuTimeoutError.
        shared_context: The SharedVulkanContext for the GPU copy (None: the Device's, opened on first
            use for a CUDA frame).
        memory_budget: The accounting the pairings' texture sets / ring slots count against (share it
            with a SurfaceBudget to put surfaces and textures under one cap); its pressure events trim
            idle sets and slots. None: not accounted.

    Raises:
        InvalidInputError: not a WebGPU device, or a path that is not one of the table's.
        UnsupportedError: ``require`` names a path this device cannot have (the message says why).
    """

    def __init__(
        self,
        device: Device | WebGpuDevice,
        *,
        prefer: ExecutionPath | None = None,
        require: ExecutionPath | None = None,
        slots: int = 4,
        shared_context: Any = None,
        memory_budget: MemoryBudget | None = None,
    ) -> None:
        self.gpu_device = Device.adopt(device, shared_context=shared_context)
        """The alpha2 Device: the WebGPU device with its Vulkan and CUDA twins."""
        self.device = self.gpu_device.webgpu_device
        """The WebGPU device frames are imported into."""
        self.info = self.gpu_device.info
        """What the importer detected about the device."""
        known = {cls.path: cls for cls in PAIRINGS}
        for what, value in (("prefer", prefer), ("require", require)):
            if value is not None and value not in known:
                allowed = ", ".join(f"ExecutionPath.{p.name}" for p in known)
                raise InvalidInputError(
                    f"{what}={value!r} is not a path the importer has; use {allowed} or None"
                )
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise InvalidInputError(f"slots must be an int >= 1, got {slots!r}")
        self.prefer = require if require is not None else prefer
        """The path tried first (None: table order)."""
        self.require = require
        """The only path allowed, or None."""
        self.slots = slots
        """Texture sets per stream / ring slots."""
        if memory_budget is not None and not isinstance(memory_budget, MemoryBudget):
            raise InvalidInputError(f"memory_budget must be a MemoryBudget or None, got {memory_budget!r}")
        self.memory_budget = memory_budget
        """The accounting of the pairings' pools, or None."""
        self._options: dict[str, Any] = {
            "slots": slots,
            "shared_context": shared_context,
            "memory_budget": memory_budget,
            "gpu_device": self.gpu_device,
        }
        self._gpu = importlib.import_module(self.info.implementation.value)
        self._lock = threading.RLock()
        self._entries = [_Entry(cls, self._device_reason(cls)) for cls in PAIRINGS]
        if self.prefer is not None:
            self._entries.sort(key=lambda e: e.cls.path is not self.prefer)
        if require is not None:
            entry = self._entry(require)
            if entry.reason is not None:
                raise UnsupportedError(f"{require.name} was required but cannot be had: {entry.reason}")
        self._counter = TicketCounter()
        self._ids = itertools.count(1)
        self._frames_by_path: collections.Counter[ExecutionPath] = collections.Counter()
        self._fallbacks: collections.Counter[str] = collections.Counter()
        self._bytes_crossed_cpu = 0
        self._gpu_pairing: InteropPairing | None = None  # where CUDA frames go, once known
        self._closed = False

    # -- table ---------------------------------------------------------------------------------------

    def _device_reason(self, cls: type[InteropPairing]) -> str | None:
        try:
            return cls.unavailable_reason(self.device, self.info, self._options)
        except Exception as exc:  # a probe must not take the importer down: the path is out, with why
            return f"probing {cls.name} failed: {type(exc).__name__}: {exc}"

    def _entry(self, path: ExecutionPath) -> _Entry:
        return next(e for e in self._entries if e.cls.path is path)

    def _instance(self, entry: _Entry) -> InteropPairing:
        if entry.instance is None:
            entry.instance = entry.cls.create(
                self.device,
                self.info,
                gpu_module=self._gpu,
                options=self._options,
                wait_timeout=gpu_wait_timeout,
            )
        return entry.instance

    def _choose(self, frame: DecodedFrame) -> tuple[InteropPairing, str | None]:
        """The pairing for this frame, and the fallback reason when it is not the preferred one."""
        return self._walk(frame.on_gpu, frame)

    def _walk(self, on_gpu: bool, frame: DecodedFrame | None) -> tuple[InteropPairing, str | None]:
        """The first pairing, in table order, that takes CUDA (``on_gpu``) or host-memory frames, sets
        up, and (given a frame) does not refuse it; plus the fallback reason when it is not the preferred
        one. Pairings are set up here on first use; one that fails to set up is out, with its reason."""
        skipped: list[str] = []
        for entry in self._entries:
            applies = entry.cls.takes(on_gpu)
            preferred = entry.cls.path is self.prefer
            if not applies and not preferred:
                continue  # e.g. the CUDA copy for a frame in host memory: not a fallback
            reason = entry.reason
            if reason is None and not applies:
                reason = entry.cls.not_applicable_reason(on_gpu)
            if reason is None:
                try:
                    pairing = self._instance(entry)
                except Error as exc:
                    # Setting the path up failed (no CUDA, UUID mismatch...): out for this importer.
                    entry.reason = f"setting up {entry.cls.name} failed: {exc}"
                    reason = entry.reason
                else:
                    reason = pairing.refuses(frame) if frame is not None else None
                    if reason is None:
                        if self.require is not None and entry.cls.path is not self.require:
                            break
                        return pairing, ("; ".join(skipped) if skipped else None)
            if self.require is not None and entry.cls.path is self.require:
                raise UnsupportedError(f"{self.require.name} was required but cannot be had: {reason}")
            skipped.append(f"{entry.cls.path.name} unavailable: {reason}")
        what = "this frame" if frame is not None else f"{'CUDA' if on_gpu else 'host-memory'} frames"
        raise UnsupportedError(
            f"no import path can take {what}: " + ("; ".join(skipped) if skipped else "nothing applies")
        )

    def prepare(
        self, *, gpu_frames: bool, identity: SurfaceIdentity | None = None, copy_ahead: bool = False
    ) -> ExecutionPath:
        """Set up now, at start-up, the path that frames of this kind will take, not on the first frame.

        Setting up the GPU copy makes a Vulkan device, a CUDA stream and a thread: about 0.1 s on the
        H200, which the first CUDA frame would otherwise wait for (a stall a player shows as a late
        first frame). A set-up that fails is recorded as it would be on the first frame: the path is
        out, with its reason in :attr:`path_report`, and frames fall back (under ``require``:
        UnsupportedError). Calling it again, or importing afterwards, sets nothing up twice.

        Args:
            gpu_frames: True for CUDA (NVDEC) frames, False for frames in host memory; for a
                DecodeSession, ``session.hwaccel_report.active is HwAccelMode.CUDA``.
            identity: The identity the stream's frames will have
                (``DecodeSession.expected_identity()``). The path's texture set or ring slot for them is
                made now too, and the CPU upload does its first (costly) upload, of zeros, into it.
            copy_ahead: The stream's decoder will copy ahead (``set_copy_ahead(importer.copy_ahead)``):
                the GPU copy's ring slots that a decoder's thread holds are made now too (up to twice
                ``slots``), not by the first frames' imports.

        Returns:
            The path such frames will take (a frame may still be refused for its format; its import
            says why).

        Raises:
            ClosedError: the importer was closed.
            UnsupportedError: no path can take such frames (``require``, or nothing sets up).
        """
        if self._closed:
            raise ClosedError("this FrameImporter was closed")
        with self._lock:
            pairing, _reason = self._walk(bool(gpu_frames), None)
            if gpu_frames:
                self._gpu_pairing = pairing
        if identity is not None:
            pairing.prepare_stream(identity, ahead=copy_ahead)
        return pairing.path

    # -- importing ------------------------------------------------------------------------------------

    def import_frame(
        self, frame: DecodedFrame, *, give_back: Callable[[], None] | None = None
    ) -> ImportLease:
        """Import ``frame`` into plane textures; the returned lease owns the frame from now on.

        The lease releases the frame (its SurfaceReservation) when it is released, or earlier once the
        import no longer needs the frame's memory. If the import fails, the frame stays the caller's.
        ``give_back``: the frame is lent, not given: it stays the caller's (its planes readable, for
        another import too), and the lease calls ``give_back()`` (once, from any thread) where it would
        have released the frame; the caller releases the frame, not before that call.

        Raises:
            ClosedError: the importer, or the frame, was closed.
            UnsupportedError: no path can take the frame (``require`` or format limits), with why.
            GpuTimeoutError: all texture sets / slots stayed held for the GPU wait timeout.
            DeviceLostError, OutOfMemoryError: the device failed; the importer remains usable.
        """
        if self._closed:
            raise ClosedError("this FrameImporter was closed")
        if not isinstance(frame, DecodedFrame):
            raise InvalidInputError(
                f"import_frame takes an alpha2 DecodedFrame, got {type(frame).__module__}."
                f"{type(frame).__name__}; decode with alpha2 (DecodeSession(path).next_frame(), or "
                "alpha2.open(path)) instead of handing over the decoder's own frame"
            )
        if frame.released:
            raise ClosedError("this DecodedFrame was already released")
        with self._lock:
            for entry in self._entries:
                if entry.instance is not None:
                    entry.instance.poll()
            pairing, reason = self._choose(frame)
            if frame.on_gpu:
                self._gpu_pairing = pairing
        surface = NativeSurfaceLease(frame, give_back=give_back)
        try:
            ticket = pairing.acquire(frame, surface, reason)
        except BaseException:
            surface.disown()  # the caller keeps the frame
            self._counter.on_failed()
            raise
        imported = ticket.frame
        with self._lock:
            self._frames_by_path[imported.path] += 1
            if reason is not None:
                self._fallbacks[reason] += 1
            self._bytes_crossed_cpu += imported.bytes_crossed_cpu
        self._counter.on_acquired(reason is not None)
        return ImportLease(
            imported, ticket.release, surface, self._counter, ticket_id=next(self._ids), reason=reason
        )

    def copy_ahead(self, frame: DecodedFrame) -> AheadWork | None:
        """Do the part of an NVDEC frame's import that needs no WebGPU call now, on the calling thread.

        Meant for a decoder's thread: ``session.set_copy_ahead(importer.copy_ahead)`` on a
        DecodeSession with ``prefetch``. The GPU copy then enqueues each frame's copy into its ring
        slot there, and finds it done there at the thread's next copy, so :meth:`import_frame` on the
        caller's thread only begins Dawn's access (no semaphore; a CUDA call only when the copy was not
        yet found done) and lets the frame's surface go. With many streams
        in one process this takes the CUDA work of every frame off the one importing thread.

        The path is the same either way (``GPU_COPY``, no byte through the CPU); ``stats()`` counts
        the frames copied ahead (``copied_ahead``) and those copied at import instead
        (``not_copied_ahead``: no idle slot, Dawn not known done with the slot, or the copy failed
        there, in which case the import copies again and reports any error). Returns None, and does
        nothing, until the path CUDA frames take is set up (:meth:`prepare`, or the first import),
        and when that path has nothing to do ahead (CPU upload). Thread-safe; sets nothing up and
        makes no WebGPU call.
        """
        pairing = self._gpu_pairing
        if self._closed or pairing is None or not frame.on_gpu:
            return None
        try:
            return pairing.copy_ahead(frame)
        except Exception:  # never the decoder's failure: the import does the work, and reports it
            return None

    def import_frames(self, frames: Sequence[DecodedFrame]) -> list[ImportLease]:
        """Import several frames; on a failure the leases made so far are released, then it raises."""
        leases: list[ImportLease] = []
        try:
            for frame in frames:
                leases.append(self.import_frame(frame))
        except BaseException:
            for lease in reversed(leases):
                lease.release()
            raise
        return leases

    # -- reports ------------------------------------------------------------------------------------

    @property
    def path_report(self) -> PathReport[ExecutionPath]:
        """Which paths the device allows, which ones frames took, and the fallbacks with reasons."""
        with self._lock:
            return import_report(
                self.info,
                tuple(PathStatus(e.cls.path, e.reason is None, e.reason, e.cls.name) for e in self._entries),
                self._frames_by_path,
                self._fallbacks,
                self._bytes_crossed_cpu,
            )

    def available_paths(self) -> tuple[ExecutionPath, ...]:
        """The paths the device allows (as far as known before a frame needed them), best first."""
        return tuple(e.cls.path for e in self._entries if e.reason is None)

    def stats(self) -> ImportTicketStats:
        """Tickets (in flight, peak, acquired, released, failed) plus every pairing's pool counts."""
        total = self._counter.snapshot()
        with self._lock:
            for entry in self._entries:
                if entry.instance is not None:
                    total = total + entry.instance.stats()
        return total

    def poll(self) -> None:
        """Non-blocking housekeeping (GPU copy: let go of surfaces whose copies have completed)."""
        with self._lock:
            for entry in self._entries:
                if entry.instance is not None:
                    entry.instance.poll()

    def close(self) -> None:
        """Destroy the pools and rings. Leases still held stay valid until released. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            entries = [e for e in self._entries if e.instance is not None]
        for entry in reversed(entries):
            assert entry.instance is not None
            entry.instance.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> FrameImporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        paths = ", ".join(p.name for p in self.available_paths())
        return f"<FrameImporter {self.info.implementation.value} paths=[{paths}]>"
