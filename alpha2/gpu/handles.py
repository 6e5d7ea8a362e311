"""Validated, typed native handles: GPU resources, owned file descriptors, contexts and queues.

Every resource variant is a frozen dataclass whose constructor refuses null, zero or inconsistent
payloads with :class:`~alpha2.gpu.errors.InvalidHandleError`, and every variant says which API it
belongs to through ``.backend``. Raw handles are reached through an explicit :meth:`as_raw`.

Ownership:

- Integer handles (``VkImage``, CUDA pointers, GL names, COM pointers...) are *borrowed*: the producer
  owns them. A borrowed handle carries ``keep_alive``, an object from the producer (a PyAV frame, a
  pool slot, a lease) that keeps the native object alive. It is a dataclass field, so every copy of the
  handle -- ``dataclasses.replace`` included -- holds it for as long as the copy lives.
- File descriptors are *owned* through :class:`OwnedFd`: closed exactly once (``close()``, the
  context manager, or a ``weakref.finalize`` backstop), handed on with :meth:`OwnedFd.detach`
  (e.g. to a Vulkan import that takes ownership of the fd) or duplicated with :meth:`OwnedFd.dup`.
  Where a variant takes an fd it accepts an :class:`OwnedFd` (owned) or a plain ``int`` (borrowed,
  kept open by ``keep_alive``).
"""

from __future__ import annotations

import abc
import enum
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from alpha2.gpu.errors import ClosedError, InvalidHandleError
from alpha2.gpu.identity import BackendKind, DeviceId

_U64_LIMIT = 1 << 64
_E = TypeVar("_E", bound=enum.Enum)

# ---------------------------------------------------------------------------------------------------
# validation helpers


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _handle(owner: str, name: str, value: object) -> None:
    """A non-null 64-bit native handle or pointer."""
    if not _is_int(value):
        raise InvalidHandleError(f"{owner}.{name} must be an int handle, got {type(value).__name__}")
    assert isinstance(value, int)
    if value == 0:
        raise InvalidHandleError(f"{owner}.{name} is null (0)")
    if not 0 < value < _U64_LIMIT:
        raise InvalidHandleError(f"{owner}.{name} = {value:#x} is not a 64-bit handle")


def _positive(owner: str, name: str, value: object) -> None:
    if not _is_int(value) or value <= 0:  # type: ignore[operator]
        raise InvalidHandleError(f"{owner}.{name} must be a positive int, got {value!r}")


def _non_negative(owner: str, name: str, value: object) -> None:
    if not _is_int(value) or value < 0:  # type: ignore[operator]
        raise InvalidHandleError(f"{owner}.{name} must be a non-negative int, got {value!r}")


def _uuid16(owner: str, name: str, value: bytes | None) -> None:
    if value is not None and (not isinstance(value, bytes) or len(value) != 16):
        raise InvalidHandleError(f"{owner}.{name} must be 16 bytes or None, got {value!r}")


def _not_none(owner: str, name: str, value: object) -> None:
    if value is None:
        raise InvalidHandleError(f"{owner}.{name} is None")


def _enum(owner: str, name: str, enum_cls: type[_E], value: object) -> _E:
    try:
        return enum_cls(value)
    except ValueError as exc:
        allowed = ", ".join(member.name for member in enum_cls)
        raise InvalidHandleError(f"{owner}.{name} = {value!r} is not one of {allowed}") from exc


def _buffer_nbytes(owner: str, data: object) -> int:
    """Size of a buffer-protocol object, without copying it; refuses non-contiguous buffers."""
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError as exc:
        raise InvalidHandleError(
            f"{owner}.data must support the buffer protocol (bytes, bytearray, numpy array, memoryview, "
            f"PyAV plane), got {type(data).__name__}"
        ) from exc
    with view:
        if not view.c_contiguous:
            raise InvalidHandleError(
                f"{owner}.data is not C-contiguous; pass the underlying contiguous buffer and describe "
                "its rows with bytes_per_row"
            )
        return view.nbytes


# ---------------------------------------------------------------------------------------------------
# owned file descriptors


def _close_fd(fd: int, close: Callable[[int], None] = os.close) -> None:
    try:
        close(fd)
    except OSError:
        # Already closed behind our back; nothing left to release.
        pass


class OwnedFd:
    """An owned OS file descriptor, closed exactly once.

    ``close()`` (or leaving the ``with`` block) closes it; a ``weakref.finalize`` closes it when the object
    is collected or at interpreter exit. :meth:`detach` hands ownership on (the fd is then never closed
    here), e.g. to ``vkAllocateMemory`` with ``VkImportMemoryFdInfoKHR``, which takes ownership on success.
    """

    __slots__ = ("__weakref__", "_fd", "_finalizer", "_lock")

    def __init__(self, fd: int) -> None:
        """Take ownership of ``fd``.

        Raises:
            InvalidHandleError: ``fd`` is not a non-negative int or is not an open descriptor.
        """
        if not _is_int(fd) or fd < 0:
            raise InvalidHandleError(f"OwnedFd needs a non-negative int file descriptor, got {fd!r}")
        try:
            os.fstat(fd)
        except OSError as exc:
            raise InvalidHandleError(f"file descriptor {fd} is not open: {exc.strerror}") from exc
        self._lock = threading.Lock()
        self._fd: int | None = fd
        self._finalizer = weakref.finalize(self, _close_fd, fd)

    @property
    def closed(self) -> bool:
        """True once closed or detached."""
        return self._fd is None

    def fileno(self) -> int:
        """The descriptor, still owned here. Raises ClosedError once closed or detached."""
        fd = self._fd
        if fd is None:
            raise ClosedError("OwnedFd is closed or detached")
        return fd

    def as_raw(self) -> int:
        """The raw descriptor (still owned here; do not close it yourself)."""
        return self.fileno()

    def close(self) -> None:
        """Close the descriptor. Idempotent."""
        with self._lock:
            if self._fd is None:
                return
            self._fd = None
        self._finalizer()

    def detach(self) -> int:
        """Give up ownership and return the descriptor; the caller (or the API it goes to) must close it.

        Raises:
            ClosedError: already closed or detached.
        """
        with self._lock:
            fd = self._fd
            if fd is None:
                raise ClosedError("OwnedFd is closed or detached; nothing to detach")
            self._fd = None
        self._finalizer.detach()
        return fd

    def dup(self) -> OwnedFd:
        """A new OwnedFd on a duplicate of this descriptor (``os.dup``), closed independently."""
        return OwnedFd(os.dup(self.fileno()))

    def __enter__(self) -> OwnedFd:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OwnedFd({self._fd})" if self._fd is not None else "OwnedFd(<closed>)"


FdLike = OwnedFd | int
"""An owned descriptor, or a borrowed ``int`` kept open by the handle's ``keep_alive``."""


def _fd_field(owner: str, name: str, value: object) -> None:
    if isinstance(value, OwnedFd):
        if value.closed:
            raise InvalidHandleError(f"{owner}.{name} is a closed OwnedFd")
        return
    if not _is_int(value) or value < 0:  # type: ignore[operator]
        raise InvalidHandleError(f"{owner}.{name} must be an OwnedFd or a non-negative int fd, got {value!r}")


def _raw_fd(value: FdLike) -> int:
    return value.fileno() if isinstance(value, OwnedFd) else value


# ---------------------------------------------------------------------------------------------------
# resources


class GpuResource(abc.ABC):
    """A native GPU (or host) resource handed between libraries. Subclasses are frozen dataclasses."""

    backend: ClassVar[BackendKind]
    """The API this resource belongs to."""

    @abc.abstractmethod
    def as_raw(self) -> Any:
        """The raw native handle (int, fd, object or buffer), borrowed: valid while this handle lives."""


def _keep_alive() -> Any:
    return field(default=None, repr=False, compare=False)


class VkImageLayout(enum.IntEnum):
    """The VkImageLayout values a hand-off uses (numeric values from the Vulkan headers)."""

    UNDEFINED = 0
    GENERAL = 1
    COLOR_ATTACHMENT_OPTIMAL = 2
    DEPTH_STENCIL_ATTACHMENT_OPTIMAL = 3
    DEPTH_STENCIL_READ_ONLY_OPTIMAL = 4
    SHADER_READ_ONLY_OPTIMAL = 5
    TRANSFER_SRC_OPTIMAL = 6
    TRANSFER_DST_OPTIMAL = 7
    PREINITIALIZED = 8
    PRESENT_SRC_KHR = 1000001002
    VIDEO_DECODE_DST_KHR = 1000024000
    VIDEO_DECODE_SRC_KHR = 1000024001
    VIDEO_DECODE_DPB_KHR = 1000024002
    READ_ONLY_OPTIMAL = 1000314000
    ATTACHMENT_OPTIMAL = 1000314001


@dataclass(frozen=True)
class VkImage(GpuResource):
    """A Vulkan image (borrowed), with the facts an importer needs to use it."""

    backend: ClassVar[BackendKind] = BackendKind.VULKAN
    image: int
    """VkImage handle (non-dispatchable, non-null)."""
    device: int
    """VkDevice the image belongs to."""
    vk_format: int
    """VkFormat numeric value (non-zero: VK_FORMAT_UNDEFINED is refused)."""
    width: int
    """Width in texels of mip level 0."""
    height: int
    """Height in texels of mip level 0."""
    usage: int
    """VkImageUsageFlags the image was created with (non-zero)."""
    layout: VkImageLayout = VkImageLayout.UNDEFINED
    """Layout the image is in when handed over."""
    mip_levels: int = 1
    """Number of mip levels."""
    array_layers: int = 1
    """Number of array layers."""
    queue_family_index: int | None = None
    """Queue family that owns the image (exclusive sharing), or None for concurrent sharing."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("VkImage", "image", self.image)
        _handle("VkImage", "device", self.device)
        _positive("VkImage", "vk_format", self.vk_format)
        _positive("VkImage", "width", self.width)
        _positive("VkImage", "height", self.height)
        _positive("VkImage", "usage", self.usage)
        _positive("VkImage", "mip_levels", self.mip_levels)
        _positive("VkImage", "array_layers", self.array_layers)
        object.__setattr__(self, "layout", _enum("VkImage", "layout", VkImageLayout, self.layout))
        if self.queue_family_index is not None:
            _non_negative("VkImage", "queue_family_index", self.queue_family_index)
        if self.mip_levels > max(self.width, self.height).bit_length():
            raise InvalidHandleError(
                f"VkImage has {self.mip_levels} mip levels; a {self.width}x{self.height} image has at most "
                f"{max(self.width, self.height).bit_length()}"
            )

    def as_raw(self) -> int:
        """The VkImage handle."""
        return self.image


@dataclass(frozen=True)
class VkBuffer(GpuResource):
    """A range of a Vulkan buffer (borrowed)."""

    backend: ClassVar[BackendKind] = BackendKind.VULKAN
    buffer: int
    """VkBuffer handle (non-null)."""
    device: int
    """VkDevice the buffer belongs to."""
    size_bytes: int
    """Size of the range in bytes."""
    offset: int = 0
    """Offset of the range within the buffer, in bytes."""
    usage: int = 0
    """VkBufferUsageFlags, where known (0 = not stated)."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("VkBuffer", "buffer", self.buffer)
        _handle("VkBuffer", "device", self.device)
        _positive("VkBuffer", "size_bytes", self.size_bytes)
        _non_negative("VkBuffer", "offset", self.offset)
        _non_negative("VkBuffer", "usage", self.usage)

    def as_raw(self) -> int:
        """The VkBuffer handle."""
        return self.buffer


class VkExternalMemoryHandleType(enum.IntEnum):
    """VkExternalMemoryHandleTypeFlagBits an fd export can carry."""

    OPAQUE_FD = 0x00000001
    DMA_BUF = 0x00000200


@dataclass(frozen=True)
class VkMemoryFd(GpuResource):
    """Vulkan device memory exported as a file descriptor (vkGetMemoryFdKHR), to import elsewhere.

    The importer must run on the same physical device and driver: compare ``device_uuid`` and
    ``driver_uuid`` with its own before importing (CUDA, Dawn and Vulkan refuse or misbehave otherwise).
    """

    backend: ClassVar[BackendKind] = BackendKind.VULKAN
    fd: FdLike
    """The exported descriptor: an OwnedFd (owned; an import that takes it should ``detach()`` it)."""
    size_bytes: int
    """Allocation size in bytes (VkMemoryRequirements.size of the exporting allocation)."""
    handle_type: VkExternalMemoryHandleType = VkExternalMemoryHandleType.OPAQUE_FD
    """Kind of fd: opaque (same driver only) or DMA-BUF."""
    dedicated: bool = False
    """Whether the allocation was dedicated to one image or buffer (the importer must match)."""
    memory_type_index: int | None = None
    """Memory type index of the exporting allocation, where known."""
    device_uuid: bytes | None = None
    """VkPhysicalDeviceIDProperties.deviceUUID of the exporter."""
    driver_uuid: bytes | None = None
    """VkPhysicalDeviceIDProperties.driverUUID of the exporter."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _fd_field("VkMemoryFd", "fd", self.fd)
        _positive("VkMemoryFd", "size_bytes", self.size_bytes)
        object.__setattr__(
            self,
            "handle_type",
            _enum("VkMemoryFd", "handle_type", VkExternalMemoryHandleType, self.handle_type),
        )
        if self.memory_type_index is not None and not 0 <= self.memory_type_index < 32:
            raise InvalidHandleError(
                f"VkMemoryFd.memory_type_index must be in 0..31, got {self.memory_type_index}"
            )
        _uuid16("VkMemoryFd", "device_uuid", self.device_uuid)
        _uuid16("VkMemoryFd", "driver_uuid", self.driver_uuid)

    def as_raw(self) -> int:
        """The raw fd (still owned by this handle's OwnedFd, if it has one)."""
        return _raw_fd(self.fd)


def drm_fourcc(code: str) -> int:
    """The DRM fourcc integer of a four-character code, e.g. ``drm_fourcc("NV12")``."""
    if len(code) != 4 or not code.isascii():
        raise InvalidHandleError(f"a DRM fourcc is four ASCII characters, got {code!r}")
    raw = code.encode("ascii")
    return raw[0] | raw[1] << 8 | raw[2] << 16 | raw[3] << 24


DRM_FORMAT_MOD_LINEAR = 0
"""The linear (untiled) DRM format modifier."""
DRM_FORMAT_MOD_INVALID = 0x00FFFFFFFFFFFFFF
"""The 'no explicit modifier' value (implicit, driver-chosen layout)."""

# fourcc -> per plane (bytes per texel, horizontal subsampling, vertical subsampling)
_DRM_PLANES: dict[int, tuple[tuple[int, int, int], ...]] = {
    drm_fourcc("R8  "): ((1, 1, 1),),
    drm_fourcc("R16 "): ((2, 1, 1),),
    drm_fourcc("GR88"): ((2, 1, 1),),
    drm_fourcc("AR24"): ((4, 1, 1),),
    drm_fourcc("XR24"): ((4, 1, 1),),
    drm_fourcc("AB24"): ((4, 1, 1),),
    drm_fourcc("XB24"): ((4, 1, 1),),
    drm_fourcc("AR30"): ((4, 1, 1),),
    drm_fourcc("XR30"): ((4, 1, 1),),
    drm_fourcc("NV12"): ((1, 1, 1), (2, 2, 2)),
    drm_fourcc("NV21"): ((1, 1, 1), (2, 2, 2)),
    drm_fourcc("NV16"): ((1, 1, 1), (2, 2, 1)),
    drm_fourcc("P010"): ((2, 1, 1), (4, 2, 2)),
    drm_fourcc("P012"): ((2, 1, 1), (4, 2, 2)),
    drm_fourcc("P016"): ((2, 1, 1), (4, 2, 2)),
    drm_fourcc("YU12"): ((1, 1, 1), (1, 2, 2), (1, 2, 2)),
    drm_fourcc("YV12"): ((1, 1, 1), (1, 2, 2), (1, 2, 2)),
    drm_fourcc("YU24"): ((1, 1, 1), (1, 1, 1), (1, 1, 1)),
}


@dataclass(frozen=True)
class DmaBufPlane:
    """One memory plane of a DMA-BUF."""

    fd: FdLike
    """The plane's dma-buf descriptor; planes may share one descriptor (or one OwnedFd)."""
    offset: int
    """Byte offset of the plane within the dma-buf."""
    stride: int
    """Bytes per row (pitch)."""

    def __post_init__(self) -> None:
        _fd_field("DmaBufPlane", "fd", self.fd)
        _non_negative("DmaBufPlane", "offset", self.offset)
        _positive("DmaBufPlane", "stride", self.stride)


@dataclass(frozen=True)
class DmaBuf(GpuResource):
    """A Linux DMA-BUF image: descriptors, plane layout and DRM format modifier."""

    backend: ClassVar[BackendKind] = BackendKind.DMABUF
    width: int
    """Width in pixels."""
    height: int
    """Height in pixels."""
    drm_format: int
    """DRM fourcc (see :func:`drm_fourcc`), e.g. NV12."""
    planes: tuple[DmaBufPlane, ...]
    """Memory planes, 1 to 4 (a modifier may add auxiliary planes beyond the format's own)."""
    modifier: int = DRM_FORMAT_MOD_LINEAR
    """DRM format modifier (tiling/compression); DRM_FORMAT_MOD_INVALID for an implicit layout."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _positive("DmaBuf", "width", self.width)
        _positive("DmaBuf", "height", self.height)
        _positive("DmaBuf", "drm_format", self.drm_format)
        if not 0 <= self.modifier < _U64_LIMIT:
            raise InvalidHandleError(f"DmaBuf.modifier must be a 64-bit value, got {self.modifier!r}")
        planes = tuple(self.planes)
        object.__setattr__(self, "planes", planes)
        if not 1 <= len(planes) <= 4:
            raise InvalidHandleError(f"DmaBuf needs 1 to 4 planes, got {len(planes)}")
        for plane in planes:
            if not isinstance(plane, DmaBufPlane):
                raise InvalidHandleError(f"DmaBuf.planes must hold DmaBufPlane, got {type(plane).__name__}")
        layout = _DRM_PLANES.get(self.drm_format)
        if layout is None:
            return
        name = self.drm_format.to_bytes(4, "little").decode("ascii", "replace")
        if self.modifier == DRM_FORMAT_MOD_LINEAR and len(planes) != len(layout):
            raise InvalidHandleError(f"DmaBuf {name} (linear) has {len(layout)} planes, got {len(planes)}")
        if len(planes) < len(layout):
            raise InvalidHandleError(f"DmaBuf {name} needs at least {len(layout)} planes, got {len(planes)}")
        if self.modifier == DRM_FORMAT_MOD_LINEAR:
            for index, (plane, (bpp, hsub, _vsub)) in enumerate(zip(planes, layout)):
                row = -(-self.width // hsub) * bpp
                if plane.stride < row:
                    raise InvalidHandleError(
                        f"DmaBuf {name} plane {index}: stride {plane.stride} < row size {row} bytes"
                    )

    def as_raw(self) -> tuple[int, ...]:
        """The raw descriptors, one per plane."""
        return tuple(_raw_fd(plane.fd) for plane in self.planes)


@dataclass(frozen=True)
class CudaPtr(GpuResource):
    """A flat CUDA device allocation range (CUdeviceptr, borrowed)."""

    backend: ClassVar[BackendKind] = BackendKind.CUDA
    device_ptr: int
    """CUdeviceptr (non-null)."""
    size_bytes: int
    """Size of the range in bytes."""
    device_ordinal: int = 0
    """CUDA device ordinal the memory lives on."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("CudaPtr", "device_ptr", self.device_ptr)
        _positive("CudaPtr", "size_bytes", self.size_bytes)
        _non_negative("CudaPtr", "device_ordinal", self.device_ordinal)
        if self.device_ptr + self.size_bytes > _U64_LIMIT:
            raise InvalidHandleError("CudaPtr range passes the end of the 64-bit address space")

    def as_raw(self) -> int:
        """The CUdeviceptr."""
        return self.device_ptr


@dataclass(frozen=True)
class CudaPtr2D(GpuResource):
    """A pitched CUDA device allocation (one image plane: rows of ``width_bytes`` every ``pitch_bytes``)."""

    backend: ClassVar[BackendKind] = BackendKind.CUDA
    device_ptr: int
    """CUdeviceptr of the first row (non-null)."""
    pitch_bytes: int
    """Bytes from one row to the next (>= width_bytes)."""
    width_bytes: int
    """Bytes of pixel data in a row."""
    height: int
    """Number of rows."""
    device_ordinal: int = 0
    """CUDA device ordinal the memory lives on."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("CudaPtr2D", "device_ptr", self.device_ptr)
        _positive("CudaPtr2D", "pitch_bytes", self.pitch_bytes)
        _positive("CudaPtr2D", "width_bytes", self.width_bytes)
        _positive("CudaPtr2D", "height", self.height)
        _non_negative("CudaPtr2D", "device_ordinal", self.device_ordinal)
        if self.pitch_bytes < self.width_bytes:
            raise InvalidHandleError(
                f"CudaPtr2D.pitch_bytes {self.pitch_bytes} < width_bytes {self.width_bytes}"
            )
        if self.device_ptr + self.size_bytes > _U64_LIMIT:
            raise InvalidHandleError("CudaPtr2D range passes the end of the 64-bit address space")

    @property
    def size_bytes(self) -> int:
        """Bytes spanned from the first row to the end of the last row's data."""
        return self.pitch_bytes * (self.height - 1) + self.width_bytes

    def as_raw(self) -> int:
        """The CUdeviceptr of the first row."""
        return self.device_ptr


@dataclass(frozen=True)
class CudaArray(GpuResource):
    """A CUDA array (CUarray), e.g. one level of a mipmapped array mapped from external memory."""

    backend: ClassVar[BackendKind] = BackendKind.CUDA
    array: int
    """CUarray handle (non-null)."""
    width: int
    """Width in elements."""
    height: int
    """Height in elements."""
    array_format: int
    """CUarray_format numeric value (CU_AD_FORMAT_UNSIGNED_INT8 = 0x01, ...; non-zero)."""
    num_channels: int
    """Channels per element: 1, 2 or 4."""
    device_ordinal: int = 0
    """CUDA device ordinal the array lives on."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("CudaArray", "array", self.array)
        _positive("CudaArray", "width", self.width)
        _positive("CudaArray", "height", self.height)
        _positive("CudaArray", "array_format", self.array_format)
        _non_negative("CudaArray", "device_ordinal", self.device_ordinal)
        if self.num_channels not in (1, 2, 4):
            raise InvalidHandleError(f"CudaArray.num_channels must be 1, 2 or 4, got {self.num_channels!r}")

    def as_raw(self) -> int:
        """The CUarray handle."""
        return self.array


@dataclass(frozen=True)
class GlTexture(GpuResource):
    """An OpenGL texture name (borrowed; valid in its context and those sharing with it)."""

    backend: ClassVar[BackendKind] = BackendKind.OPENGL
    name: int
    """Texture name (non-zero: 0 is the default texture)."""
    target: int
    """Texture target enum, e.g. GL_TEXTURE_2D = 0x0DE1."""
    internal_format: int
    """Sized internal format enum, e.g. GL_R8 = 0x8229."""
    width: int
    """Width in texels."""
    height: int
    """Height in texels."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _positive("GlTexture", "name", self.name)
        if self.name >= 1 << 32:
            raise InvalidHandleError(f"GlTexture.name {self.name} is not a GLuint")
        _positive("GlTexture", "target", self.target)
        _positive("GlTexture", "internal_format", self.internal_format)
        _positive("GlTexture", "width", self.width)
        _positive("GlTexture", "height", self.height)

    def as_raw(self) -> int:
        """The texture name."""
        return self.name


@dataclass(frozen=True)
class GlBuffer(GpuResource):
    """An OpenGL buffer object name (borrowed)."""

    backend: ClassVar[BackendKind] = BackendKind.OPENGL
    name: int
    """Buffer name (non-zero)."""
    size_bytes: int
    """Size of the buffer's data store in bytes."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _positive("GlBuffer", "name", self.name)
        if self.name >= 1 << 32:
            raise InvalidHandleError(f"GlBuffer.name {self.name} is not a GLuint")
        _positive("GlBuffer", "size_bytes", self.size_bytes)

    def as_raw(self) -> int:
        """The buffer name."""
        return self.name


@dataclass(frozen=True)
class D3D11Resource(GpuResource):
    """A Direct3D 11 resource (ID3D11Resource*, borrowed), optionally with a shareable handle."""

    backend: ClassVar[BackendKind] = BackendKind.D3D11
    resource_ptr: int
    """ID3D11Resource* (non-null COM pointer)."""
    subresource_index: int = 0
    """Subresource (array slice of a texture array: D3D11VA decoders hand out slices)."""
    shared_handle: int | None = None
    """NT handle (or legacy shared handle) for opening on another device, or None."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("D3D11Resource", "resource_ptr", self.resource_ptr)
        _non_negative("D3D11Resource", "subresource_index", self.subresource_index)
        if self.shared_handle is not None:
            _handle("D3D11Resource", "shared_handle", self.shared_handle)

    def as_raw(self) -> int:
        """The ID3D11Resource pointer."""
        return self.resource_ptr


@dataclass(frozen=True)
class D3D12Resource(GpuResource):
    """A Direct3D 12 resource (ID3D12Resource*, borrowed), optionally with a shared NT handle."""

    backend: ClassVar[BackendKind] = BackendKind.D3D12
    resource_ptr: int
    """ID3D12Resource* (non-null COM pointer)."""
    size_bytes: int
    """Size of the resource's allocation in bytes (needed to import it into Vulkan or CUDA)."""
    shared_handle: int | None = None
    """NT handle from CreateSharedHandle, or None."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("D3D12Resource", "resource_ptr", self.resource_ptr)
        _positive("D3D12Resource", "size_bytes", self.size_bytes)
        if self.shared_handle is not None:
            _handle("D3D12Resource", "shared_handle", self.shared_handle)

    def as_raw(self) -> int:
        """The ID3D12Resource pointer."""
        return self.resource_ptr


@dataclass(frozen=True)
class MetalTexture(GpuResource):
    """A Metal texture (id<MTLTexture>, borrowed)."""

    backend: ClassVar[BackendKind] = BackendKind.METAL
    texture_ptr: int
    """id<MTLTexture> (non-null)."""
    pixel_format: int
    """MTLPixelFormat numeric value (non-zero: MTLPixelFormatInvalid is refused)."""
    width: int
    """Width in texels."""
    height: int
    """Height in texels."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("MetalTexture", "texture_ptr", self.texture_ptr)
        _positive("MetalTexture", "pixel_format", self.pixel_format)
        _positive("MetalTexture", "width", self.width)
        _positive("MetalTexture", "height", self.height)

    def as_raw(self) -> int:
        """The id<MTLTexture> pointer."""
        return self.texture_ptr


@dataclass(frozen=True)
class MetalBuffer(GpuResource):
    """A range of a Metal buffer (id<MTLBuffer>, borrowed)."""

    backend: ClassVar[BackendKind] = BackendKind.METAL
    buffer_ptr: int
    """id<MTLBuffer> (non-null)."""
    size_bytes: int
    """Size of the range in bytes."""
    offset: int = 0
    """Offset of the range in bytes."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("MetalBuffer", "buffer_ptr", self.buffer_ptr)
        _positive("MetalBuffer", "size_bytes", self.size_bytes)
        _non_negative("MetalBuffer", "offset", self.offset)

    def as_raw(self) -> int:
        """The id<MTLBuffer> pointer."""
        return self.buffer_ptr


@dataclass(frozen=True)
class IOSurfaceHandle(GpuResource):
    """An IOSurfaceRef (borrowed), as VideoToolbox decoders produce behind CVPixelBuffers."""

    backend: ClassVar[BackendKind] = BackendKind.COREVIDEO
    surface_ref: int
    """IOSurfaceRef (non-null)."""
    pixel_format: int
    """OSType pixel format fourcc, e.g. '420v' (non-zero)."""
    width: int
    """Width in pixels."""
    height: int
    """Height in pixels."""
    plane_count: int = 1
    """Number of planes (1 to 4; 0 for a non-planar surface is given as 1)."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("IOSurfaceHandle", "surface_ref", self.surface_ref)
        _positive("IOSurfaceHandle", "pixel_format", self.pixel_format)
        _positive("IOSurfaceHandle", "width", self.width)
        _positive("IOSurfaceHandle", "height", self.height)
        if not _is_int(self.plane_count) or not 1 <= self.plane_count <= 4:
            raise InvalidHandleError(f"IOSurfaceHandle.plane_count must be 1 to 4, got {self.plane_count!r}")

    def as_raw(self) -> int:
        """The IOSurfaceRef."""
        return self.surface_ref


@dataclass(frozen=True)
class CVPixelBufferHandle(GpuResource):
    """A CVPixelBufferRef (borrowed, retained by ``keep_alive``)."""

    backend: ClassVar[BackendKind] = BackendKind.COREVIDEO
    pixel_buffer_ref: int
    """CVPixelBufferRef (non-null)."""
    pixel_format: int
    """OSType pixel format fourcc (kCVPixelFormatType_*; non-zero)."""
    width: int
    """Width in pixels."""
    height: int
    """Height in pixels."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("CVPixelBufferHandle", "pixel_buffer_ref", self.pixel_buffer_ref)
        _positive("CVPixelBufferHandle", "pixel_format", self.pixel_format)
        _positive("CVPixelBufferHandle", "width", self.width)
        _positive("CVPixelBufferHandle", "height", self.height)

    def as_raw(self) -> int:
        """The CVPixelBufferRef."""
        return self.pixel_buffer_ref


@dataclass(frozen=True)
class AHardwareBufferHandle(GpuResource):
    """An Android AHardwareBuffer* (borrowed, acquired by ``keep_alive``)."""

    backend: ClassVar[BackendKind] = BackendKind.ANDROID
    buffer_ptr: int
    """AHardwareBuffer* (non-null)."""
    ahb_format: int
    """AHARDWAREBUFFER_FORMAT_* value (non-zero)."""
    width: int
    """Width in pixels."""
    height: int
    """Height in pixels."""
    layers: int = 1
    """Number of image layers."""
    usage: int = 0
    """AHARDWAREBUFFER_USAGE_* flags."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("AHardwareBufferHandle", "buffer_ptr", self.buffer_ptr)
        _positive("AHardwareBufferHandle", "ahb_format", self.ahb_format)
        _positive("AHardwareBufferHandle", "width", self.width)
        _positive("AHardwareBufferHandle", "height", self.height)
        _positive("AHardwareBufferHandle", "layers", self.layers)
        _non_negative("AHardwareBufferHandle", "usage", self.usage)

    def as_raw(self) -> int:
        """The AHardwareBuffer pointer."""
        return self.buffer_ptr


@dataclass(frozen=True)
class OpenClMemory(GpuResource):
    """An OpenCL memory object (cl_mem, borrowed)."""

    backend: ClassVar[BackendKind] = BackendKind.OPENCL
    mem: int
    """cl_mem (non-null)."""
    context: int
    """cl_context the memory belongs to (non-null)."""
    size_bytes: int
    """Size in bytes."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("OpenClMemory", "mem", self.mem)
        _handle("OpenClMemory", "context", self.context)
        _positive("OpenClMemory", "size_bytes", self.size_bytes)

    def as_raw(self) -> int:
        """The cl_mem handle."""
        return self.mem


def _attr_int(obj: object, name: str) -> int | None:
    value = getattr(obj, name, None)
    return value if _is_int(value) else None


@dataclass(frozen=True)
class WgpuTexture(GpuResource):
    """A WebGPU texture object (wgpu-py or wgpudawn ``GPUTexture``), with its description.

    Where the texture object exposes ``width``/``height``/``format`` (wgpu-py does), they must agree with
    the fields; :meth:`from_texture` fills the fields from the object.
    """

    backend: ClassVar[BackendKind] = BackendKind.WGPU
    texture: object
    """The GPUTexture object (not None)."""
    texture_format: str
    """WebGPU format name, e.g. 'r8unorm'."""
    width: int
    """Width in texels."""
    height: int
    """Height in texels."""
    depth_or_array_layers: int = 1
    """Depth or number of array layers."""
    usage: int = 0
    """GPUTextureUsage flags (0 = not stated)."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _not_none("WgpuTexture", "texture", self.texture)
        if not isinstance(self.texture_format, str) or not self.texture_format:
            raise InvalidHandleError(
                f"WgpuTexture.texture_format must be a format name, got {self.texture_format!r}"
            )
        _positive("WgpuTexture", "width", self.width)
        _positive("WgpuTexture", "height", self.height)
        _positive("WgpuTexture", "depth_or_array_layers", self.depth_or_array_layers)
        _non_negative("WgpuTexture", "usage", self.usage)
        for name in ("width", "height", "depth_or_array_layers"):
            actual = _attr_int(self.texture, name)
            if actual is not None and actual != getattr(self, name):
                raise InvalidHandleError(
                    f"WgpuTexture.{name} = {getattr(self, name)} but the texture has {actual}"
                )
        actual_format = getattr(self.texture, "format", None)
        if isinstance(actual_format, str) and actual_format != self.texture_format:
            raise InvalidHandleError(
                f"WgpuTexture.texture_format = {self.texture_format!r} but the texture is {actual_format!r}"
            )

    @classmethod
    def from_texture(cls, texture: object, keep_alive: object = None) -> WgpuTexture:
        """Describe a wgpu-py style texture from its own attributes (width, height, format, usage...)."""
        width, height = _attr_int(texture, "width"), _attr_int(texture, "height")
        texture_format = getattr(texture, "format", None)
        if width is None or height is None or not isinstance(texture_format, str):
            raise InvalidHandleError(
                f"{type(texture).__name__} does not describe itself (width, height, format); "
                "construct WgpuTexture with explicit fields"
            )
        return cls(
            texture=texture,
            texture_format=texture_format,
            width=width,
            height=height,
            depth_or_array_layers=_attr_int(texture, "depth_or_array_layers") or 1,
            usage=_attr_int(texture, "usage") or 0,
            keep_alive=keep_alive,
        )

    def as_raw(self) -> object:
        """The GPUTexture object."""
        return self.texture


@dataclass(frozen=True, eq=False)
class CpuBytes(GpuResource):
    """Bytes in host memory (any buffer-protocol object; stored, never copied)."""

    backend: ClassVar[BackendKind] = BackendKind.CPU
    data: Any
    """The buffer-protocol object (bytes, bytearray, numpy array, memoryview...)."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        if _buffer_nbytes("CpuBytes", self.data) == 0:
            raise InvalidHandleError("CpuBytes.data is empty")

    @property
    def size_bytes(self) -> int:
        """Size of the data in bytes."""
        with memoryview(self.data) as view:
            return view.nbytes

    def as_raw(self) -> memoryview:
        """A memoryview on the data (no copy)."""
        return memoryview(self.data)


@dataclass(frozen=True, eq=False)
class CpuPlane(GpuResource):
    """One image plane in host memory: ``height`` rows of ``width_bytes``, every ``bytes_per_row`` bytes."""

    backend: ClassVar[BackendKind] = BackendKind.CPU
    data: Any
    """Buffer-protocol object holding the rows (stored as given, never copied)."""
    bytes_per_row: int
    """Bytes from one row to the next (>= width_bytes)."""
    width_bytes: int
    """Bytes of pixel data in a row."""
    height: int
    """Number of rows."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _positive("CpuPlane", "bytes_per_row", self.bytes_per_row)
        _positive("CpuPlane", "width_bytes", self.width_bytes)
        _positive("CpuPlane", "height", self.height)
        if self.bytes_per_row < self.width_bytes:
            raise InvalidHandleError(
                f"CpuPlane.bytes_per_row {self.bytes_per_row} < width_bytes {self.width_bytes}"
            )
        nbytes = _buffer_nbytes("CpuPlane", self.data)
        if nbytes < self.size_bytes:
            raise InvalidHandleError(
                f"CpuPlane.data has {nbytes} bytes; {self.height} rows of {self.width_bytes} every "
                f"{self.bytes_per_row} bytes need {self.size_bytes}"
            )

    @property
    def size_bytes(self) -> int:
        """Bytes spanned from the first row to the end of the last row's data."""
        return self.bytes_per_row * (self.height - 1) + self.width_bytes

    def as_raw(self) -> memoryview:
        """A flat byte memoryview on the data (no copy)."""
        return memoryview(self.data).cast("B")


@dataclass(frozen=True, eq=False)
class CpuPlaneSet(GpuResource):
    """The planes of one image in host memory (1 to 4 planes, in the pixel format's plane order)."""

    backend: ClassVar[BackendKind] = BackendKind.CPU
    planes: tuple[CpuPlane, ...]
    """The planes, 1 to 4."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        planes = tuple(self.planes)
        object.__setattr__(self, "planes", planes)
        if not 1 <= len(planes) <= 4:
            raise InvalidHandleError(f"CpuPlaneSet needs 1 to 4 planes, got {len(planes)}")
        for plane in planes:
            if not isinstance(plane, CpuPlane):
                raise InvalidHandleError(f"CpuPlaneSet.planes must hold CpuPlane, got {type(plane).__name__}")

    def __len__(self) -> int:
        return len(self.planes)

    def __getitem__(self, index: int) -> CpuPlane:
        return self.planes[index]

    @property
    def size_bytes(self) -> int:
        """Sum of the planes' sizes."""
        return sum(plane.size_bytes for plane in self.planes)

    def as_raw(self) -> tuple[memoryview, ...]:
        """One flat memoryview per plane (no copies)."""
        return tuple(plane.as_raw() for plane in self.planes)


# ---------------------------------------------------------------------------------------------------
# contexts and queues


class GpuContext(abc.ABC):
    """An existing device/context an application brings (alpha2 borrows it). Subclasses are frozen."""

    backend: ClassVar[BackendKind]
    """The API of the context."""

    @abc.abstractmethod
    def as_raw(self) -> Any:
        """The raw context handle (borrowed)."""


class ExternalQueue(abc.ABC):
    """An existing queue or stream on a :class:`GpuContext` that alpha2 submits work to (borrowed)."""

    backend: ClassVar[BackendKind]
    """The API of the queue."""

    @abc.abstractmethod
    def as_raw(self) -> Any:
        """The raw queue or stream handle (borrowed)."""


def vk_make_api_version(major: int, minor: int, patch: int = 0, variant: int = 0) -> int:
    """VK_MAKE_API_VERSION."""
    return (variant << 29) | (major << 22) | (minor << 12) | patch


def _names(owner: str, name: str, values: Iterable[str]) -> frozenset[str]:
    if isinstance(values, str):
        raise InvalidHandleError(f"{owner}.{name} must be a collection of names, not one string")
    out = frozenset(values)
    for value in out:
        if not isinstance(value, str) or not value:
            raise InvalidHandleError(f"{owner}.{name} holds {value!r}; extension names are non-empty strings")
    return out


@dataclass(frozen=True)
class VulkanContext(GpuContext):
    """An existing Vulkan instance, physical device and device (borrowed)."""

    backend: ClassVar[BackendKind] = BackendKind.VULKAN
    instance: int
    """VkInstance."""
    physical_device: int
    """VkPhysicalDevice."""
    device: int
    """VkDevice."""
    api_version: int
    """API version the device was created for (VK_MAKE_API_VERSION; at least 1.1)."""
    enabled_extensions: frozenset[str] = frozenset()
    """Device extensions enabled on ``device``."""
    enabled_instance_extensions: frozenset[str] = frozenset()
    """Instance extensions enabled on ``instance``."""
    device_id: DeviceId | None = None
    """Identity of the physical device, where known (to match with CUDA and WebGPU)."""
    get_instance_proc_addr: int | None = None
    """vkGetInstanceProcAddr of the loader the handles came from, where it is not the default loader."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("VulkanContext", "instance", self.instance)
        _handle("VulkanContext", "physical_device", self.physical_device)
        _handle("VulkanContext", "device", self.device)
        _positive("VulkanContext", "api_version", self.api_version)
        if self.api_version < vk_make_api_version(1, 1):
            raise InvalidHandleError(f"VulkanContext.api_version {self.api_version_str} is below 1.1")
        object.__setattr__(
            self, "enabled_extensions", _names("VulkanContext", "enabled_extensions", self.enabled_extensions)
        )
        object.__setattr__(
            self,
            "enabled_instance_extensions",
            _names("VulkanContext", "enabled_instance_extensions", self.enabled_instance_extensions),
        )
        if self.device_id is not None and not isinstance(self.device_id, DeviceId):
            raise InvalidHandleError(f"VulkanContext.device_id must be a DeviceId, got {self.device_id!r}")
        if self.get_instance_proc_addr is not None:
            _handle("VulkanContext", "get_instance_proc_addr", self.get_instance_proc_addr)

    @property
    def api_version_tuple(self) -> tuple[int, int, int]:
        """(major, minor, patch)."""
        return (self.api_version >> 22) & 0x7F, (self.api_version >> 12) & 0x3FF, self.api_version & 0xFFF

    @property
    def api_version_str(self) -> str:
        """'major.minor.patch'."""
        return ".".join(str(part) for part in self.api_version_tuple)

    def has_extension(self, name: str) -> bool:
        """Whether a device extension is enabled."""
        return name in self.enabled_extensions

    def as_raw(self) -> int:
        """The VkDevice."""
        return self.device


@dataclass(frozen=True)
class VulkanQueue(ExternalQueue):
    """An existing Vulkan queue of a :class:`VulkanContext` (borrowed; the owner serialises submissions)."""

    backend: ClassVar[BackendKind] = BackendKind.VULKAN
    context: VulkanContext
    """The device the queue belongs to."""
    queue: int
    """VkQueue."""
    queue_family_index: int
    """Queue family index."""
    queue_index: int = 0
    """Index of the queue within its family."""
    queue_flags: int = 0
    """VkQueueFlags of the family (0 = not stated)."""
    lock: object = field(default=None, repr=False, compare=False)
    """Lock (with acquire/release) the owner uses to serialise vkQueueSubmit, or None if alpha2 is alone."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        if not isinstance(self.context, VulkanContext):
            raise InvalidHandleError(f"VulkanQueue.context must be a VulkanContext, got {self.context!r}")
        _handle("VulkanQueue", "queue", self.queue)
        _non_negative("VulkanQueue", "queue_family_index", self.queue_family_index)
        _non_negative("VulkanQueue", "queue_index", self.queue_index)
        _non_negative("VulkanQueue", "queue_flags", self.queue_flags)
        if self.lock is not None and not (hasattr(self.lock, "acquire") and hasattr(self.lock, "release")):
            raise InvalidHandleError("VulkanQueue.lock must have acquire() and release()")

    def as_raw(self) -> int:
        """The VkQueue."""
        return self.queue


@dataclass(frozen=True)
class CudaContext(GpuContext):
    """An existing CUDA context (CUcontext, borrowed)."""

    backend: ClassVar[BackendKind] = BackendKind.CUDA
    context: int
    """CUcontext (non-null)."""
    device_ordinal: int
    """CUDA device ordinal."""
    is_primary: bool = True
    """Whether it is the device's primary context (FFmpeg's CUDA device uses the primary context)."""
    device_id: DeviceId | None = None
    """Identity of the device, where known (cuDeviceGetUuid)."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _handle("CudaContext", "context", self.context)
        _non_negative("CudaContext", "device_ordinal", self.device_ordinal)
        if self.device_id is not None and not isinstance(self.device_id, DeviceId):
            raise InvalidHandleError(f"CudaContext.device_id must be a DeviceId, got {self.device_id!r}")

    def as_raw(self) -> int:
        """The CUcontext."""
        return self.context


CU_STREAM_LEGACY = 0x1
"""The legacy default stream handle."""
CU_STREAM_PER_THREAD = 0x2
"""The per-thread default stream handle."""


@dataclass(frozen=True)
class CudaStream(ExternalQueue):
    """A CUDA stream (CUstream, borrowed). 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are valid."""

    backend: ClassVar[BackendKind] = BackendKind.CUDA
    context: CudaContext
    """The context the stream belongs to."""
    stream: int
    """CUstream handle (0 is the legacy default stream, a valid stream)."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        if not isinstance(self.context, CudaContext):
            raise InvalidHandleError(f"CudaStream.context must be a CudaContext, got {self.context!r}")
        if not _is_int(self.stream) or not 0 <= self.stream < _U64_LIMIT:
            raise InvalidHandleError(f"CudaStream.stream must be a 64-bit int handle, got {self.stream!r}")

    @property
    def is_default(self) -> bool:
        """Whether this is one of the default streams (0, legacy or per-thread)."""
        return self.stream in (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD)

    def as_raw(self) -> int:
        """The CUstream."""
        return self.stream


@dataclass(frozen=True)
class WgpuContext(GpuContext):
    """An existing WebGPU device (wgpu-py or wgpudawn ``GPUDevice``), borrowed."""

    backend: ClassVar[BackendKind] = BackendKind.WGPU
    device: object
    """The GPUDevice (not None)."""
    features: frozenset[str] = frozenset()
    """Features enabled on the device (read from ``device.features`` by :meth:`from_device`)."""
    adapter: object = None
    """The GPUAdapter it was requested from, where known."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        _not_none("WgpuContext", "device", self.device)
        object.__setattr__(self, "features", _names("WgpuContext", "features", self.features))

    @classmethod
    def from_device(cls, device: object, keep_alive: object = None) -> WgpuContext:
        """Describe a device from its own ``features`` and ``adapter`` attributes."""
        _not_none("WgpuContext", "device", device)
        features = getattr(device, "features", None) or ()
        return cls(
            device=device,
            features=frozenset(str(name) for name in features),
            adapter=getattr(device, "adapter", None),
            keep_alive=keep_alive,
        )

    def as_raw(self) -> object:
        """The GPUDevice object."""
        return self.device


@dataclass(frozen=True)
class WgpuQueue(ExternalQueue):
    """The queue of a WebGPU device."""

    backend: ClassVar[BackendKind] = BackendKind.WGPU
    context: WgpuContext
    """The device the queue belongs to."""
    queue: object
    """The GPUQueue (must be ``context.device.queue`` where the device exposes one)."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        if not isinstance(self.context, WgpuContext):
            raise InvalidHandleError(f"WgpuQueue.context must be a WgpuContext, got {self.context!r}")
        _not_none("WgpuQueue", "queue", self.queue)
        own = getattr(self.context.device, "queue", None)
        if own is not None and own is not self.queue:
            raise InvalidHandleError("WgpuQueue.queue is not the queue of WgpuQueue.context.device")

    def as_raw(self) -> object:
        """The GPUQueue object."""
        return self.queue


class GlPlatform(enum.Enum):
    """The window-system binding an OpenGL context was made with."""

    EGL = "egl"
    GLX = "glx"
    WGL = "wgl"
    CGL = "cgl"


@dataclass(frozen=True)
class GlContext(GpuContext):
    """An existing OpenGL context (borrowed)."""

    backend: ClassVar[BackendKind] = BackendKind.OPENGL
    platform: GlPlatform
    """The window-system binding."""
    context: int
    """EGLContext / GLXContext / HGLRC / CGLContextObj (non-null)."""
    display: int | None = None
    """EGLDisplay or X11 Display*; required for EGL and GLX, None for WGL and CGL."""
    version: tuple[int, int] = (3, 3)
    """(major, minor) OpenGL version of the context."""
    is_gles: bool = False
    """Whether it is an OpenGL ES context."""
    keep_alive: object = _keep_alive()
    """Keeps the producer's native object alive as long as any copy of this handle."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "platform", _enum("GlContext", "platform", GlPlatform, self.platform))
        _handle("GlContext", "context", self.context)
        if self.platform in (GlPlatform.EGL, GlPlatform.GLX):
            if self.display is None:
                raise InvalidHandleError(f"GlContext on {self.platform.value} needs its display")
            _handle("GlContext", "display", self.display)
        elif self.display is not None:
            _handle("GlContext", "display", self.display)
        version = tuple(self.version)
        if len(version) != 2 or not all(_is_int(v) and v >= 0 for v in version) or version[0] < 1:
            raise InvalidHandleError(f"GlContext.version must be (major, minor), got {self.version!r}")
        object.__setattr__(self, "version", version)

    def as_raw(self) -> int:
        """The native context handle."""
        return self.context


__all__ = [
    "CU_STREAM_LEGACY",
    "CU_STREAM_PER_THREAD",
    "DRM_FORMAT_MOD_INVALID",
    "DRM_FORMAT_MOD_LINEAR",
    "AHardwareBufferHandle",
    "CVPixelBufferHandle",
    "CpuBytes",
    "CpuPlane",
    "CpuPlaneSet",
    "CudaArray",
    "CudaContext",
    "CudaPtr",
    "CudaPtr2D",
    "CudaStream",
    "D3D11Resource",
    "D3D12Resource",
    "DmaBuf",
    "DmaBufPlane",
    "ExternalQueue",
    "FdLike",
    "GlBuffer",
    "GlContext",
    "GlPlatform",
    "GlTexture",
    "GpuContext",
    "GpuResource",
    "IOSurfaceHandle",
    "MetalBuffer",
    "MetalTexture",
    "OpenClMemory",
    "OwnedFd",
    "VkBuffer",
    "VkExternalMemoryHandleType",
    "VkImage",
    "VkImageLayout",
    "VkMemoryFd",
    "VulkanContext",
    "VulkanQueue",
    "WgpuContext",
    "WgpuQueue",
    "WgpuTexture",
    "drm_fourcc",
    "vk_make_api_version",
]
