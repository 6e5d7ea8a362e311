"""Validated, typed native handles: the GPU resources alpha2 produces or accepts, and owned fds.

This module holds the variants alpha2 itself makes or takes (Vulkan images, buffers and exported
memory; CUDA pointers and arrays; WebGPU textures; host planes). The vocabulary is larger and stays
reachable from here: the variants of other platforms live in :mod:`alpha2.gpu.platform_handles`
(DMA-BUF, OpenGL, Direct3D, Metal, IOSurface, CVPixelBuffer, AHardwareBuffer, OpenCL), contexts and
queues in :mod:`alpha2.gpu.contexts`; both are re-exported here (loaded on first use), so ``from
alpha2.gpu.handles import X`` works for every name of the vocabulary.

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

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from alpha2._lazy import lazy_names
from alpha2.gpu._handle_base import (
    _U64_LIMIT,
    FdLike,
    GpuResource,
    OwnedFd,
    _buffer_nbytes,
    _enum,
    _fd_field,
    _handle,
    _is_int,
    _keep_alive,
    _non_negative,
    _not_none,
    _positive,
    _raw_fd,
    _uuid16,
)
from alpha2.gpu.errors import InvalidHandleError, InvalidInputError
from alpha2.gpu.identity import BackendKind

if TYPE_CHECKING:
    from alpha2.gpu.contexts import (
        CU_STREAM_LEGACY,
        CU_STREAM_PER_THREAD,
        CudaContext,
        CudaStream,
        ExternalQueue,
        GlContext,
        GlPlatform,
        GpuContext,
        QueueRole,
        VulkanContext,
        VulkanQueue,
        WgpuContext,
        WgpuQueue,
        vk_make_api_version,
    )
    from alpha2.gpu.platform_handles import (
        DRM_FORMAT_MOD_INVALID,
        DRM_FORMAT_MOD_LINEAR,
        AHardwareBufferHandle,
        CVPixelBufferHandle,
        D3D11Resource,
        D3D12Resource,
        DmaBuf,
        DmaBufPlane,
        GlBuffer,
        GlTexture,
        IOSurfaceHandle,
        MetalBuffer,
        MetalTexture,
        OpenClMemory,
        drm_fourcc,
    )

# The other platforms' variants and the contexts are re-exported, loaded on first use: their dataclasses
# (20 ms on a 2-core machine) are not on the way to a player's first frame.
_REEXPORTS: dict[str, str] = {
    "CU_STREAM_LEGACY": "alpha2.gpu.contexts",
    "CU_STREAM_PER_THREAD": "alpha2.gpu.contexts",
    "CudaContext": "alpha2.gpu.contexts",
    "CudaStream": "alpha2.gpu.contexts",
    "ExternalQueue": "alpha2.gpu.contexts",
    "GlContext": "alpha2.gpu.contexts",
    "GlPlatform": "alpha2.gpu.contexts",
    "GpuContext": "alpha2.gpu.contexts",
    "QueueRole": "alpha2.gpu.contexts",
    "VulkanContext": "alpha2.gpu.contexts",
    "VulkanQueue": "alpha2.gpu.contexts",
    "WgpuContext": "alpha2.gpu.contexts",
    "WgpuQueue": "alpha2.gpu.contexts",
    "vk_make_api_version": "alpha2.gpu.contexts",
    "DRM_FORMAT_MOD_INVALID": "alpha2.gpu.platform_handles",
    "DRM_FORMAT_MOD_LINEAR": "alpha2.gpu.platform_handles",
    "AHardwareBufferHandle": "alpha2.gpu.platform_handles",
    "CVPixelBufferHandle": "alpha2.gpu.platform_handles",
    "D3D11Resource": "alpha2.gpu.platform_handles",
    "D3D12Resource": "alpha2.gpu.platform_handles",
    "DmaBuf": "alpha2.gpu.platform_handles",
    "DmaBufPlane": "alpha2.gpu.platform_handles",
    "GlBuffer": "alpha2.gpu.platform_handles",
    "GlTexture": "alpha2.gpu.platform_handles",
    "IOSurfaceHandle": "alpha2.gpu.platform_handles",
    "MetalBuffer": "alpha2.gpu.platform_handles",
    "MetalTexture": "alpha2.gpu.platform_handles",
    "OpenClMemory": "alpha2.gpu.platform_handles",
    "drm_fourcc": "alpha2.gpu.platform_handles",
}


__getattr__, __dir__ = lazy_names(__name__, _REEXPORTS)


# ---------------------------------------------------------------------------------------------------
# resources


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
        index = self.memory_type_index
        if index is not None and (not _is_int(index) or not 0 <= index < 32):
            raise InvalidHandleError(
                f"VkMemoryFd.memory_type_index must be an int in 0..31 or None, got {index!r}"
            )
        if not isinstance(self.dedicated, bool):
            raise InvalidHandleError(f"VkMemoryFd.dedicated must be a bool, got {self.dedicated!r}")
        _uuid16("VkMemoryFd", "device_uuid", self.device_uuid)
        _uuid16("VkMemoryFd", "driver_uuid", self.driver_uuid)

    def as_raw(self) -> int:
        """The raw fd (still owned by this handle's OwnedFd, if it has one)."""
        return _raw_fd(self.fd)


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
        if not _is_int(self.num_channels) or self.num_channels not in (1, 2, 4):
            raise InvalidHandleError(f"CudaArray.num_channels must be 1, 2 or 4, got {self.num_channels!r}")

    def as_raw(self) -> int:
        """The CUarray handle."""
        return self.array


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

    def __repr__(self) -> str:
        # The data is named by type and size: a frame's bytes in a repr run to megabytes.
        return f"CpuBytes(data=<{type(self.data).__name__}, {self.size_bytes} bytes>)"


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

    def __repr__(self) -> str:
        with memoryview(self.data) as view:
            nbytes = view.nbytes
        return (
            f"CpuPlane(data=<{type(self.data).__name__}, {nbytes} bytes>, "
            f"bytes_per_row={self.bytes_per_row}, width_bytes={self.width_bytes}, height={self.height})"
        )

    def to_ndarray(self, dtype: Any = "u1", channels: int = 1) -> Any:
        """The rows as a numpy array view, ``(height, width)`` or ``(height, width, channels)``; no copy.

        Args:
            dtype: Element type (default bytes); ``width`` is ``width_bytes`` over its size and channels.
            channels: Elements per texel (2 for an interleaved CbCr plane).

        Raises:
            InvalidInputError: ``width_bytes`` or ``bytes_per_row`` is not a whole number of texels.
        """
        return self._array(dtype, channels).to_ndarray()

    def _array(self, dtype: Any, channels: int) -> Any:
        import numpy as np

        from alpha2.gpu.dlpack import DLDeviceType, PlaneArray

        element = np.dtype(dtype)
        texel = element.itemsize * channels
        if channels < 1 or self.width_bytes % texel or self.bytes_per_row % element.itemsize:
            raise InvalidInputError(
                f"a CpuPlane of {self.width_bytes}-byte rows every {self.bytes_per_row} bytes does not "
                f"hold whole {channels}-channel {element} texels; pass the plane's dtype and channels"
            )
        with memoryview(self.data) as view:
            address = np.frombuffer(view.cast("B"), dtype=np.uint8).ctypes.data if view.nbytes else 0
        return PlaneArray(
            data_ptr=address,
            height=self.height,
            width=self.width_bytes // texel,
            channels=channels,
            dtype=element,
            row_stride_bytes=self.bytes_per_row,
            device=(DLDeviceType.CPU, 0),
            owner=self,
            buffer=self.data,
        )

    def __dlpack__(self, *, stream: int | None = None, **kwargs: Any) -> object:
        """DLPack export of :meth:`to_ndarray` (bytes; numpy's exporter)."""
        return self.to_ndarray().__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


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
    "QueueRole",
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
