"""Existing contexts and queues an application brings: Vulkan, CUDA, WebGPU and OpenGL (borrowed).

A :class:`GpuContext` names a device/context alpha2 did not make and must not destroy; an
:class:`ExternalQueue` names a queue or stream on one, which alpha2 may submit to (holding the owner's
lock where it has one). :mod:`alpha2.gpu.handles` re-exports every name here.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from alpha2.gpu._handle_base import (
    _U64_LIMIT,
    _enum,
    _handle,
    _is_int,
    _keep_alive,
    _non_negative,
    _not_none,
    _positive,
)
from alpha2.gpu.errors import InvalidHandleError, InvalidInputError
from alpha2.gpu.identity import BackendKind, DeviceId


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


_VK_VERSION_FIELDS = (("major", 0x7F), ("minor", 0x3FF), ("patch", 0xFFF), ("variant", 0x7))


def vk_make_api_version(major: int, minor: int, patch: int = 0, variant: int = 0) -> int:
    """VK_MAKE_API_VERSION.

    Raises:
        InvalidInputError: a part is not an int within its bits (major 0..127, minor 0..1023, patch
            0..4095, variant 0..7), where it would spill into the next part.
    """
    for (name, limit), value in zip(_VK_VERSION_FIELDS, (major, minor, patch, variant)):
        if not _is_int(value) or not 0 <= value <= limit:
            raise InvalidInputError(f"vk_make_api_version {name} must be an int in 0..{limit}, got {value!r}")
    return (variant << 29) | (major << 22) | (minor << 12) | patch


def _names(owner: str, name: str, values: Iterable[str]) -> frozenset[str]:
    if isinstance(values, str):
        raise InvalidHandleError(f"{owner}.{name} must be a collection of names, not one string")
    try:
        out = frozenset(values)
    except TypeError:
        raise InvalidHandleError(
            f"{owner}.{name} must be a collection of names (empty for none), got {type(values).__name__}"
        ) from None
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
        if self.api_version >= 1 << 32:
            raise InvalidHandleError(
                f"VulkanContext.api_version {self.api_version:#x} is not a 32-bit VK_MAKE_API_VERSION value"
            )
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


class QueueRole(enum.Enum):
    """What a Vulkan queue is used for (several roles may share one VkQueue)."""

    GRAPHICS = "graphics"
    """Graphics (and, where the family has it, compute) work: the queue WebGPU-style consumers share."""
    COMPUTE = "compute"
    """Compute work (a compute-only family where there is one)."""
    TRANSFER = "transfer"
    """Copies (a transfer-only family where there is one)."""
    VIDEO_DECODE = "video_decode"
    """Vulkan Video decode."""


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
    role: QueueRole | None = None
    """What the owner uses the queue for (None: not stated); one VkQueue may appear once per role."""

    def __post_init__(self) -> None:
        if self.role is not None:
            object.__setattr__(self, "role", _enum("VulkanQueue", "role", QueueRole, self.role))
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
        if not isinstance(self.is_primary, bool):
            raise InvalidHandleError(f"CudaContext.is_primary must be a bool, got {self.is_primary!r}")
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
        version = tuple(self.version) if isinstance(self.version, (tuple, list)) else ()
        if len(version) != 2 or not all(_is_int(v) and v >= 0 for v in version) or version[0] < 1:
            raise InvalidHandleError(f"GlContext.version must be (major, minor), got {self.version!r}")
        object.__setattr__(self, "version", version)
        if not isinstance(self.is_gles, bool):
            raise InvalidHandleError(f"GlContext.is_gles must be a bool, got {self.is_gles!r}")

    def as_raw(self) -> int:
        """The native context handle."""
        return self.context


__all__ = [
    "CU_STREAM_LEGACY",
    "CU_STREAM_PER_THREAD",
    "CudaContext",
    "CudaStream",
    "ExternalQueue",
    "GlContext",
    "GlPlatform",
    "GpuContext",
    "QueueRole",
    "VulkanContext",
    "VulkanQueue",
    "WgpuContext",
    "WgpuQueue",
    "vk_make_api_version",
]
