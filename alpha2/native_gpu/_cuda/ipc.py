"""Device memory shared between processes, and the copies of decoded frames into it.

A decoder process (:mod:`alpha2.api.segment_worker`) copies each NVDEC frame into a *block* of device
memory it allocated and exported; the reading process maps every block once and hands frames out as
CUDA planes pointing into it, without a byte crossing the CPU. This module holds both sides:

* :class:`ExportedMemory` -- the decoder process's block: ``cuMemCreate`` with
  ``CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR``, mapped read-write here, and exported as a file
  descriptor (``cuMemExportToShareableHandle``) that travels beside a message (``SCM_RIGHTS``);
* :class:`ImportedMemory` -- the reader's mapping of it: ``cuMemImportFromShareableHandle`` on that
  descriptor (closed at once: the imported handle holds the allocation), ``cuMemAddressReserve``,
  ``cuMemMap``, ``cuMemSetAccess``; undone by ``cuMemUnmap`` / ``cuMemAddressFree`` / ``cuMemRelease``;
* :class:`BlockCopier` -- a frame's planes copied device to device into a block (``cuMemcpy2DAsync``
  on the frame's own stream, one copy for planes that lie back to back, as FFmpeg's pools make them)
  and an event recorded after them, which the decoder process waits for before it says the frame is
  there; :func:`block_layout` places the planes in a block.

Why the virtual memory management API with a POSIX descriptor, not legacy CUDA IPC
(``cuIpcGetMemHandle`` / ``cuIpcOpenMemHandle``): an allocation shared that way lives as long as
anyone holds it. The reader's mapping keeps the memory even after the decoder process let go of it,
exited or was killed, so a frame handed out stays valid until it is released, and the reader may stop
a decoder process at any time (close, or a failure) without first waiting for every frame the
application still holds. With legacy IPC the exporting process must outlive every importer's mapping
(freeing first is undefined behaviour), which would tie a decoder process's life to the application's
frames. The descriptor also travels the way this package already moves memory between processes
(``SCM_RIGHTS`` on the decoder processes' socket), and the mapping is made once per block, which is
reused for frame after frame.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.handles import CudaPtr2D, OwnedFd
from alpha2.native_gpu._cuda.copy2d import DeviceCopy2D, back_to_back
from alpha2.native_gpu._cuda.core import CudaError, CudaUnavailableError, check, cuda_init
from alpha2.native_gpu._cuda.interop import CudaEvent, PrimaryContext, primary_context

__all__ = [
    "BlockCopier",
    "BlockLayout",
    "ExportedMemory",
    "ImportedMemory",
    "block_layout",
    "shared_memory_unavailable_reason",
]

PITCH_ALIGN = 256
"""Row pitch of the planes in a block (bytes): what texture and DLPack consumers read fastest."""


@dataclass(frozen=True)
class BlockLayout:
    """Where a frame's planes lie in a block."""

    offsets: tuple[int, ...]
    """Each plane's first byte, from the block's start."""
    pitches: tuple[int, ...]
    """Each plane's row pitch in bytes."""
    size_bytes: int
    """Bytes the planes take (a block at least this large holds them)."""
    together: bool
    """Whether the source planes lie back to back with one pitch, so one copy moves them all."""

    def __post_init__(self) -> None:
        if len(self.offsets) != len(self.pitches) or not self.offsets:
            raise InvalidInputError("a block layout needs one offset and one pitch per plane")


def block_layout(planes: Sequence[CudaPtr2D]) -> BlockLayout:
    """The planes of ``planes`` placed one after another in a block, rows of one pitch (the widest row
    rounded up to :data:`PITCH_ALIGN`)."""
    if not planes:
        raise InvalidInputError("a frame without planes has no block layout")
    pitch = -(-max(p.width_bytes for p in planes) // PITCH_ALIGN) * PITCH_ALIGN
    offsets = []
    offset = 0
    for plane in planes:
        offsets.append(offset)
        offset += pitch * plane.height
    return BlockLayout(tuple(offsets), (pitch,) * len(planes), offset, back_to_back(planes))


def _enum(cu: Any, kind: str, name: str) -> Any:
    return getattr(getattr(cu, kind), name)


def _allocation_prop(cu: Any, ordinal: int) -> Any:
    prop = cu.CUmemAllocationProp()
    prop.type = _enum(cu, "CUmemAllocationType", "CU_MEM_ALLOCATION_TYPE_PINNED")
    prop.location.type = _enum(cu, "CUmemLocationType", "CU_MEM_LOCATION_TYPE_DEVICE")
    prop.location.id = ordinal
    prop.requestedHandleTypes = _posix_fd(cu)
    return prop


def _posix_fd(cu: Any) -> Any:
    return _enum(cu, "CUmemAllocationHandleType", "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR")


def shared_memory_unavailable_reason(ordinal: int) -> str | None:
    """Why device ``ordinal`` cannot share memory with another process through a POSIX descriptor
    (None when it can). Never raises."""
    try:
        cu = cuda_init()
        device = check(cu.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        for attribute, what in (
            ("CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", "virtual memory management"),
            ("CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", "POSIX descriptor export"),
        ):
            value = check(
                cu.cuDeviceGetAttribute(_enum(cu, "CUdevice_attribute", attribute), device),
                f"cuDeviceGetAttribute({attribute})",
            )
            if not value:
                return f"CUDA device {ordinal} has no {what} ({attribute} is 0)"
    except CudaUnavailableError as exc:
        return exc.message
    except CudaError as exc:
        return exc.message
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


class _Mapping:
    """An allocation handle mapped into this process's address space, read-write for its device.

    Owns the handle from the start: a failure half-way undoes what was done and releases it."""

    def __init__(self, ctx: PrimaryContext, handle: Any, size_bytes: int) -> None:
        cu = ctx._cu
        # [handle, (address, mapped)]; swapped to None before each is undone, so that undoing happens once.
        self._holder: list[Any] = [handle, None]
        self._finalizer = weakref.finalize(self, _unmap, cu, ctx, self._holder, size_bytes)
        self._finalizer.atexit = False  # the driver frees everything at exit
        try:
            granularity = _granularity(ctx)
            with ctx:
                address = check(cu.cuMemAddressReserve(size_bytes, granularity, 0, 0), "cuMemAddressReserve")
                self._holder[1] = (address, False)
                check(cu.cuMemMap(address, size_bytes, 0, handle, 0), "cuMemMap")
                self._holder[1] = (address, True)
                access = cu.CUmemAccessDesc()
                access.location.type = _enum(cu, "CUmemLocationType", "CU_MEM_LOCATION_TYPE_DEVICE")
                access.location.id = ctx.ordinal
                access.flags = _enum(cu, "CUmemAccess_flags", "CU_MEM_ACCESS_FLAGS_PROT_READWRITE")
                check(cu.cuMemSetAccess(address, size_bytes, [access], 1), "cuMemSetAccess")
        except BaseException:
            self._finalizer()
            raise
        self.pointer = int(address)
        """The device address of the first byte, in this process."""
        self.size_bytes = size_bytes
        """Bytes mapped (the allocation's size)."""

    @property
    def closed(self) -> bool:
        """Whether it was unmapped."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Unmap and let go of the allocation (it lives on while another process holds it). Idempotent."""
        self._finalizer()


def _unmap(cu: Any, ctx: PrimaryContext, holder: list[Any], size_bytes: int) -> None:
    handle, mapped = holder
    holder[0] = holder[1] = None
    try:
        with ctx:
            if mapped is not None:
                address, is_mapped = mapped
                if is_mapped:
                    cu.cuMemUnmap(address, size_bytes)
                cu.cuMemAddressFree(address, size_bytes)
            if handle is not None:
                cu.cuMemRelease(handle)
    except Exception:
        pass  # the context is gone (interpreter shutdown): so is the memory


def _granularity(ctx: PrimaryContext) -> int:
    cu = ctx._cu
    with ctx:
        return int(
            check(
                cu.cuMemGetAllocationGranularity(
                    _allocation_prop(cu, ctx.ordinal),
                    _enum(cu, "CUmemAllocationGranularity_flags", "CU_MEM_ALLOC_GRANULARITY_MINIMUM"),
                ),
                "cuMemGetAllocationGranularity",
            )
        )


class ExportedMemory:
    """Device memory another process can map: ``cuMemCreate`` (shareable as a POSIX descriptor),
    mapped read-write here.

    Args:
        ordinal: The CUDA device.
        size_bytes: Bytes wanted; rounded up to the allocation granularity (:attr:`size_bytes`).

    Raises:
        CudaError: a driver call failed (nothing is left allocated).
    """

    def __init__(self, ordinal: int, size_bytes: int) -> None:
        if size_bytes < 1:
            raise InvalidInputError(f"shared device memory needs at least one byte, got {size_bytes}")
        ctx = primary_context(ordinal)
        cu = ctx._cu
        granularity = _granularity(ctx)
        size = -(-size_bytes // granularity) * granularity
        self.ordinal = ordinal
        """The CUDA device."""
        with ctx:
            handle = check(cu.cuMemCreate(size, _allocation_prop(cu, ordinal), 0), f"cuMemCreate({size})")
        self._mapping = _Mapping(ctx, handle, size)  # owns the handle, also on failure
        self._handle = handle
        self._cu = cu
        self._ctx = ctx
        self.pointer = self._mapping.pointer
        """The device address of the first byte, in this process."""
        self.size_bytes = size
        """Bytes allocated (a multiple of the allocation granularity)."""

    def export_fd(self) -> OwnedFd:
        """A new descriptor of the allocation, for another process to import (the caller closes it).

        Raises:
            CudaError: the driver refused the export.
            InvalidInputError: the memory was closed.
        """
        if self._mapping.closed:
            raise InvalidInputError("this shared device memory was closed")
        with self._ctx:
            fd = check(
                self._cu.cuMemExportToShareableHandle(self._handle, _posix_fd(self._cu), 0),
                "cuMemExportToShareableHandle",
            )
        return OwnedFd(int(fd))

    def close(self) -> None:
        """Unmap it here and let go of it (an importer's mapping keeps the memory). Idempotent."""
        self._mapping.close()


class ImportedMemory:
    """Another process's :class:`ExportedMemory`, mapped here.

    Args:
        ordinal: The CUDA device the memory lives on.
        fd: The exported descriptor; closed here whatever happens (the import holds the allocation).
        size_bytes: The allocation's size (:attr:`ExportedMemory.size_bytes`).

    Raises:
        CudaError: a driver call failed (nothing is left mapped).
    """

    def __init__(self, ordinal: int, fd: OwnedFd, size_bytes: int) -> None:
        try:
            if size_bytes < 1:
                raise InvalidInputError(f"shared device memory has at least one byte, got {size_bytes}")
            ctx = primary_context(ordinal)
            cu = ctx._cu
            with ctx:
                handle = check(
                    cu.cuMemImportFromShareableHandle(fd.fileno(), _posix_fd(cu)),
                    "cuMemImportFromShareableHandle",
                )
        finally:
            fd.close()
        self._mapping = _Mapping(ctx, handle, size_bytes)  # owns the handle, also on failure
        self.ordinal = ordinal
        """The CUDA device."""
        self.pointer = self._mapping.pointer
        """The device address of the first byte, in this process."""
        self.size_bytes = size_bytes
        """Bytes mapped."""

    def close(self) -> None:
        """Unmap it (the memory goes once no process holds it). Idempotent. Whoever calls it makes sure
        nothing still reads the memory."""
        self._mapping.close()


class BlockCopier:
    """Copies decoded frames' CUDA planes into blocks on one device, each copy followed by an event.

    Not thread-safe (one copying thread). Keep the context current around many copies
    (``with copier.context:``): each driver call then pushes nothing.

    Args:
        ordinal: The CUDA device (the decoder's).
    """

    def __init__(self, ordinal: int) -> None:
        self._ctx = primary_context(ordinal)
        self._cu = self._ctx._cu
        self._copier = DeviceCopy2D(self._cu, "into a shared block")
        self._events: list[CudaEvent] = []
        self.ordinal = ordinal
        """The CUDA device."""

    @property
    def context(self) -> PrimaryContext:
        """The device's primary context."""
        return self._ctx

    def copy(
        self, planes: Sequence[CudaPtr2D], stream: int | None, destination: int, layout: BlockLayout
    ) -> CudaEvent:
        """Enqueue the copies of ``planes`` to ``destination`` (a block's address) as ``layout`` places
        them, on ``stream`` (the decode's: ordered after it without a wait), and record an event after
        them. Give the event back with :meth:`recycle` once it is done.

        Raises:
            CudaError: the driver refused a copy.
        """
        stream_handle = 0 if stream is None else stream
        with self._ctx:
            if layout.together:
                first = planes[0]
                self._copier.enqueue(
                    first.device_ptr,
                    first.pitch_bytes,
                    destination,
                    layout.pitches[0],
                    max(p.width_bytes for p in planes),
                    sum(p.height for p in planes),
                    stream_handle,
                )
            else:
                for plane, offset, pitch in zip(planes, layout.offsets, layout.pitches):
                    self._copier.enqueue(
                        plane.device_ptr,
                        plane.pitch_bytes,
                        destination + offset,
                        pitch,
                        plane.width_bytes,
                        plane.height,
                        stream_handle,
                    )
            event = self._events.pop() if self._events else CudaEvent(self._ctx)
            event.record(stream_handle)
        return event

    def recycle(self, event: CudaEvent) -> None:
        """Keep ``event`` (done) for a later copy."""
        self._events.append(event)

    def close(self) -> None:
        """Destroy the events kept. Idempotent."""
        events, self._events = self._events, []
        for event in events:
            event.close()
