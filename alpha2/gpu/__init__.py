"""alpha2.gpu: the vocabulary for passing GPU resources between libraries.

Pure Python + numpy: importable on a machine with no GPU and no Vulkan loader.

- formats: ``PixelFormat``, ``PlaneFormat``, ``PlaneLayout`` (plane layouts, bit depths, ordinals)
- colour: matrices, primaries, transfer, range, siting; exact YUV<->RGB transforms
- transfer, primaries, tonemap, colour_manage: transfer curves, primaries conversion, tone and gamut
  mapping, and the whole colour-management chain as a numpy reference
- hdr: HDR static metadata (mastering display, content light level)
- geometry: sizes, rectangles, rotation, frame metadata
- handles: validated native handles (``GpuResource`` variants alpha2 produces or accepts), owned fds;
  re-exports platform_handles (other platforms' variants) and contexts (contexts and queues)
- sync: ``SyncPoint`` with blocking, timeout-bounded and async waits; the one ``WaiterThread``
- budget: ``MemoryBudget`` with caps, reservations and pressure events
- identity: ``BackendKind``, ``DeviceId``, ``ExecutionPath``
- errors: ``Error`` with a ``kind`` and its subclasses
- adapters: adapter ranking and ``ALPHA2_GPU_ADAPTER`` pinning
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alpha2.gpu._handle_base import (
        GpuResource,
        OwnedFd,
    )
    from alpha2.gpu.budget import (
        BudgetCaps,
        BudgetReservation,
        BudgetUsage,
        MemoryBudget,
        PressureEvent,
        PressureKind,
    )
    from alpha2.gpu.colour import (
        ChromaLocation,
        ColourInfo,
        ColourMatrix,
        ColourPrimaries,
        ColourRange,
        ColourTransform,
        TransferCharacteristic,
        rgb_to_yuv,
        sample_to_rgb,
        yuv_to_rgb,
    )
    from alpha2.gpu.colour_manage import (
        ColourOptions,
        ColourPlan,
        ColourTarget,
        plan_colour,
    )
    from alpha2.gpu.contexts import (
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
    )
    from alpha2.gpu.errors import (
        BudgetExceededError,
        ClosedError,
        DeviceLostError,
        Error,
        ErrorKind,
        GpuTimeoutError,
        InternalError,
        InvalidHandleError,
        InvalidInputError,
        OutOfMemoryError,
        UnknownFormatError,
        UnsupportedError,
    )
    from alpha2.gpu.formats import (
        AlphaChannel,
        PixelFormat,
        PlaneFormat,
        PlaneInfo,
        PlaneLayout,
        UploadConversion,
    )
    from alpha2.gpu.frames import (
        DecodedFrame,
    )
    from alpha2.gpu.geometry import (
        FrameMetadata,
        Rect,
        Rotation,
        Size,
    )
    from alpha2.gpu.handles import (
        CpuBytes,
        CpuPlane,
        CpuPlaneSet,
        CudaArray,
        CudaPtr,
        CudaPtr2D,
        VkBuffer,
        VkExternalMemoryHandleType,
        VkImage,
        VkImageLayout,
        VkMemoryFd,
        WgpuTexture,
    )
    from alpha2.gpu.hdr import (
        ContentLightLevel,
        HdrMetadata,
        MasteringDisplay,
    )
    from alpha2.gpu.identity import (
        BackendKind,
        DeviceId,
        ExecutionPath,
    )
    from alpha2.gpu.primaries import (
        Chromaticities,
        primaries_conversion,
    )
    from alpha2.gpu.surfaces import (
        SurfaceBudget,
        SurfaceBudgetError,
        SurfaceBudgetPolicy,
        SurfaceIdentity,
        SurfaceReservation,
        SurfaceUsage,
    )
    from alpha2.gpu.sync import (
        CpuSyncPoint,
        SignaledSyncPoint,
        SyncPoint,
        SyncWaiter,
        WaiterThread,
        WaitResult,
        WaitStatus,
    )
    from alpha2.gpu.tonemap import (
        GamutMapping,
        ToneCurve,
        ToneMode,
    )
    from alpha2.gpu.transfer import (
        TransferCurve,
    )
    from alpha2.gpu.webgpu import (
        WebGpuDeviceInfo,
        WebGpuImplementation,
    )

# Names load on first use: ``import alpha2.gpu.errors`` (or any one module) does not import the whole
# vocabulary, which keeps the command line's start-up short.
_EXPORTS: dict[str, str] = {
    "AlphaChannel": "alpha2.gpu.formats",
    "BackendKind": "alpha2.gpu.identity",
    "BudgetCaps": "alpha2.gpu.budget",
    "BudgetExceededError": "alpha2.gpu.errors",
    "BudgetReservation": "alpha2.gpu.budget",
    "BudgetUsage": "alpha2.gpu.budget",
    "ChromaLocation": "alpha2.gpu.colour",
    "Chromaticities": "alpha2.gpu.primaries",
    "ClosedError": "alpha2.gpu.errors",
    "ColourInfo": "alpha2.gpu.colour",
    "ColourMatrix": "alpha2.gpu.colour",
    "ColourOptions": "alpha2.gpu.colour_manage",
    "ColourPlan": "alpha2.gpu.colour_manage",
    "ColourPrimaries": "alpha2.gpu.colour",
    "ColourRange": "alpha2.gpu.colour",
    "ColourTarget": "alpha2.gpu.colour_manage",
    "ColourTransform": "alpha2.gpu.colour",
    "ContentLightLevel": "alpha2.gpu.hdr",
    "CpuBytes": "alpha2.gpu.handles",
    "CpuPlane": "alpha2.gpu.handles",
    "CpuPlaneSet": "alpha2.gpu.handles",
    "CpuSyncPoint": "alpha2.gpu.sync",
    "CudaArray": "alpha2.gpu.handles",
    "CudaContext": "alpha2.gpu.contexts",
    "CudaPtr": "alpha2.gpu.handles",
    "CudaPtr2D": "alpha2.gpu.handles",
    "CudaStream": "alpha2.gpu.contexts",
    "DecodedFrame": "alpha2.gpu.frames",
    "DeviceId": "alpha2.gpu.identity",
    "DeviceLostError": "alpha2.gpu.errors",
    "Error": "alpha2.gpu.errors",
    "ErrorKind": "alpha2.gpu.errors",
    "ExecutionPath": "alpha2.gpu.identity",
    "ExternalQueue": "alpha2.gpu.contexts",
    "FrameMetadata": "alpha2.gpu.geometry",
    "GamutMapping": "alpha2.gpu.tonemap",
    "GlContext": "alpha2.gpu.contexts",
    "GlPlatform": "alpha2.gpu.contexts",
    "GpuContext": "alpha2.gpu.contexts",
    "GpuResource": "alpha2.gpu._handle_base",
    "GpuTimeoutError": "alpha2.gpu.errors",
    "HdrMetadata": "alpha2.gpu.hdr",
    "InternalError": "alpha2.gpu.errors",
    "InvalidHandleError": "alpha2.gpu.errors",
    "InvalidInputError": "alpha2.gpu.errors",
    "MasteringDisplay": "alpha2.gpu.hdr",
    "MemoryBudget": "alpha2.gpu.budget",
    "OutOfMemoryError": "alpha2.gpu.errors",
    "OwnedFd": "alpha2.gpu._handle_base",
    "PixelFormat": "alpha2.gpu.formats",
    "PlaneFormat": "alpha2.gpu.formats",
    "PlaneInfo": "alpha2.gpu.formats",
    "PlaneLayout": "alpha2.gpu.formats",
    "PressureEvent": "alpha2.gpu.budget",
    "PressureKind": "alpha2.gpu.budget",
    "QueueRole": "alpha2.gpu.contexts",
    "Rect": "alpha2.gpu.geometry",
    "Rotation": "alpha2.gpu.geometry",
    "SignaledSyncPoint": "alpha2.gpu.sync",
    "Size": "alpha2.gpu.geometry",
    "SurfaceBudget": "alpha2.gpu.surfaces",
    "SurfaceBudgetError": "alpha2.gpu.surfaces",
    "SurfaceBudgetPolicy": "alpha2.gpu.surfaces",
    "SurfaceIdentity": "alpha2.gpu.surfaces",
    "SurfaceReservation": "alpha2.gpu.surfaces",
    "SurfaceUsage": "alpha2.gpu.surfaces",
    "SyncPoint": "alpha2.gpu.sync",
    "SyncWaiter": "alpha2.gpu.sync",
    "ToneCurve": "alpha2.gpu.tonemap",
    "ToneMode": "alpha2.gpu.tonemap",
    "TransferCharacteristic": "alpha2.gpu.colour",
    "TransferCurve": "alpha2.gpu.transfer",
    "UnknownFormatError": "alpha2.gpu.errors",
    "UnsupportedError": "alpha2.gpu.errors",
    "UploadConversion": "alpha2.gpu.formats",
    "VkBuffer": "alpha2.gpu.handles",
    "VkExternalMemoryHandleType": "alpha2.gpu.handles",
    "VkImage": "alpha2.gpu.handles",
    "VkImageLayout": "alpha2.gpu.handles",
    "VkMemoryFd": "alpha2.gpu.handles",
    "VulkanContext": "alpha2.gpu.contexts",
    "VulkanQueue": "alpha2.gpu.contexts",
    "WaitResult": "alpha2.gpu.sync",
    "WaitStatus": "alpha2.gpu.sync",
    "WaiterThread": "alpha2.gpu.sync",
    "WebGpuDeviceInfo": "alpha2.gpu.webgpu",
    "WebGpuImplementation": "alpha2.gpu.webgpu",
    "WgpuContext": "alpha2.gpu.contexts",
    "WgpuQueue": "alpha2.gpu.contexts",
    "WgpuTexture": "alpha2.gpu.handles",
    "plan_colour": "alpha2.gpu.colour_manage",
    "primaries_conversion": "alpha2.gpu.primaries",
    "rgb_to_yuv": "alpha2.gpu.colour",
    "sample_to_rgb": "alpha2.gpu.colour",
    "yuv_to_rgb": "alpha2.gpu.colour",
}
"""The names ``__all__`` lists, and the module each is defined in."""

_REACHABLE: dict[str, str] = {
    "AHardwareBufferHandle": "alpha2.gpu.platform_handles",
    "CU_STREAM_LEGACY": "alpha2.gpu.contexts",
    "CU_STREAM_PER_THREAD": "alpha2.gpu.contexts",
    "CVPixelBufferHandle": "alpha2.gpu.platform_handles",
    "D3D11Resource": "alpha2.gpu.platform_handles",
    "D3D12Resource": "alpha2.gpu.platform_handles",
    "DEFAULT_WAIT_TIMEOUT": "alpha2.gpu.sync",
    "DRM_FORMAT_MOD_INVALID": "alpha2.gpu.platform_handles",
    "DRM_FORMAT_MOD_LINEAR": "alpha2.gpu.platform_handles",
    "DmaBuf": "alpha2.gpu.platform_handles",
    "DmaBufPlane": "alpha2.gpu.platform_handles",
    "EVICTION_ROUNDS": "alpha2.gpu.budget",
    "EvictCallback": "alpha2.gpu.budget",
    "EvictableRegistration": "alpha2.gpu.budget",
    "FdLike": "alpha2.gpu.platform_handles",
    "GlBuffer": "alpha2.gpu.platform_handles",
    "GlTexture": "alpha2.gpu.platform_handles",
    "IOSurfaceHandle": "alpha2.gpu.platform_handles",
    "MetalBuffer": "alpha2.gpu.platform_handles",
    "MetalTexture": "alpha2.gpu.platform_handles",
    "OpenClMemory": "alpha2.gpu.platform_handles",
    "PressureCallback": "alpha2.gpu.budget",
    "SPIN_S": "alpha2.gpu.sync",
    "SUPPORTED_MATRICES": "alpha2.gpu.colour",
    "WAITER_SLICE_S": "alpha2.gpu.sync",
    "WaitCallback": "alpha2.gpu.sync",
    "WaitTicket": "alpha2.gpu.sync",
    "drm_fourcc": "alpha2.gpu.platform_handles",
    "vk_make_api_version": "alpha2.gpu.contexts",
}
"""Reachable here too, but listed by their own modules: tuning constants, callback aliases and the
other platforms' handle variants (``alpha2.gpu.platform_handles``)."""

_SUBMODULES = (
    "adapters",
    "budget",
    "colour",
    "colour_manage",
    "contexts",
    "errors",
    "formats",
    "geometry",
    "handles",
    "hdr",
    "identity",
    "platform_handles",
    "primaries",
    "sync",
    "tonemap",
    "transfer",
    "webgpu",
)

__all__ = [
    "AlphaChannel",
    "BackendKind",
    "BudgetCaps",
    "BudgetExceededError",
    "BudgetReservation",
    "BudgetUsage",
    "ChromaLocation",
    "Chromaticities",
    "ClosedError",
    "ColourInfo",
    "ColourMatrix",
    "ColourOptions",
    "ColourPlan",
    "ColourPrimaries",
    "ColourRange",
    "ColourTarget",
    "ColourTransform",
    "ContentLightLevel",
    "CpuBytes",
    "CpuPlane",
    "CpuPlaneSet",
    "CpuSyncPoint",
    "CudaArray",
    "CudaContext",
    "CudaPtr",
    "CudaPtr2D",
    "CudaStream",
    "DecodedFrame",
    "DeviceId",
    "DeviceLostError",
    "Error",
    "ErrorKind",
    "ExecutionPath",
    "ExternalQueue",
    "FrameMetadata",
    "GamutMapping",
    "GlContext",
    "GlPlatform",
    "GpuContext",
    "GpuResource",
    "GpuTimeoutError",
    "HdrMetadata",
    "InternalError",
    "InvalidHandleError",
    "InvalidInputError",
    "MasteringDisplay",
    "MemoryBudget",
    "OutOfMemoryError",
    "OwnedFd",
    "PixelFormat",
    "PlaneFormat",
    "PlaneInfo",
    "PlaneLayout",
    "PressureEvent",
    "PressureKind",
    "QueueRole",
    "Rect",
    "Rotation",
    "SignaledSyncPoint",
    "Size",
    "SurfaceBudget",
    "SurfaceBudgetError",
    "SurfaceBudgetPolicy",
    "SurfaceIdentity",
    "SurfaceReservation",
    "SurfaceUsage",
    "SyncPoint",
    "SyncWaiter",
    "ToneCurve",
    "ToneMode",
    "TransferCharacteristic",
    "TransferCurve",
    "UnknownFormatError",
    "UnsupportedError",
    "UploadConversion",
    "VkBuffer",
    "VkExternalMemoryHandleType",
    "VkImage",
    "VkImageLayout",
    "VkMemoryFd",
    "VulkanContext",
    "VulkanQueue",
    "WaitResult",
    "WaitStatus",
    "WaiterThread",
    "WebGpuDeviceInfo",
    "WebGpuImplementation",
    "WgpuContext",
    "WgpuQueue",
    "WgpuTexture",
    "adapters",
    "budget",
    "colour",
    "colour_manage",
    "contexts",
    "errors",
    "formats",
    "geometry",
    "handles",
    "hdr",
    "identity",
    "plan_colour",
    "platform_handles",
    "primaries",
    "primaries_conversion",
    "rgb_to_yuv",
    "sample_to_rgb",
    "sync",
    "tonemap",
    "transfer",
    "webgpu",
    "yuv_to_rgb",
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value: Any = importlib.import_module(f"{__name__}.{name}")
    else:
        module = _EXPORTS.get(name) or _REACHABLE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_REACHABLE))
