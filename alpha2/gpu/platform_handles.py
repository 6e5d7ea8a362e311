"""Validated handles of other platforms: DMA-BUF, OpenGL, Direct3D, Metal, Apple, Android, OpenCL.

alpha2 neither produces nor imports these today; they are part of the vocabulary so that a library
bringing such a resource can describe it, validated, in the same terms (``GpuResource``, ``backend``,
``as_raw()``, ``keep_alive``) as the variants of :mod:`alpha2.gpu.handles`, which re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from alpha2.gpu._handle_base import (
    _U64_LIMIT,
    FdLike,
    GpuResource,
    _fd_field,
    _handle,
    _is_int,
    _keep_alive,
    _non_negative,
    _positive,
    _raw_fd,
)
from alpha2.gpu.errors import InvalidHandleError
from alpha2.gpu.identity import BackendKind


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


__all__ = [
    "DRM_FORMAT_MOD_INVALID",
    "DRM_FORMAT_MOD_LINEAR",
    "AHardwareBufferHandle",
    "CVPixelBufferHandle",
    "D3D11Resource",
    "D3D12Resource",
    "DmaBuf",
    "DmaBufPlane",
    "GlBuffer",
    "GlTexture",
    "IOSurfaceHandle",
    "MetalBuffer",
    "MetalTexture",
    "OpenClMemory",
    "drm_fourcc",
]
