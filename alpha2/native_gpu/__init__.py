"""alpha2.native_gpu: platform GPU interop for native decoded surfaces.

The shared Vulkan device (``SharedVulkanContext``, ``choose_shared_vulkan``, ``vulkan_candidates``,
``shared_device_index``), import leases of decoded frames into WebGPU textures (``FrameImporter``,
``VulkanImportLease``), bounded surface accounting (``SurfaceBudget``), the sampling shader
(``FrameRenderer``), the encode hand-off (``VulkanEncodeCopier``, ``VideoEncodeExtent``),
``probe_vulkan_submission`` and ``set_gpu_wait_timeout``.

Names are imported lazily on first use, so ``import alpha2.native_gpu`` needs neither a Vulkan loader
nor a WebGPU adapter. This package never imports ``av``: FFmpeg stays in ``alpha2.ffmpeg_bridge``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "AdapterPolicy": "device.candidates",
    "AdapterReport": "device.shared",
    "DecodedFrame": "alpha2.gpu.frames",
    "EncodeCopier": "encode.copier",
    "EncodeRoute": "encode.routes",
    "EncodeRouteReport": "encode.routes",
    "EncodeTarget": "encode.planes",
    "EncodedPlanes": "encode.planes",
    "ExtentSource": "encode.extent",
    "ExternalHandleSupport": "device.candidates",
    "ExternalHandleType": "device.candidates",
    "ExternalSyncPoint": "interop.leases",
    "FrameImporter": "interop.importer",
    "FrameRenderer": "render.renderer",
    "ImageOwner": "interop.leases",
    "ImportPathReport": "interop.importer",
    "ImportTicketStats": "interop.leases",
    "ImportedPlaneDescriptor": "interop.leases",
    "ImportedVulkanFrame": "interop.leases",
    "InteropPairing": "interop.leases",
    "LayoutKind": "render.renderer",
    "NativeImageState": "interop.leases",
    "NativeSurfaceLease": "interop.leases",
    "OUTPUT_FORMATS": "render.renderer",
    "PAIRINGS": "interop.importer",
    "PairingTicket": "interop.leases",
    "PathStatus": "interop.importer",
    "QueueRole": "device.shared",
    "ShaderParams": "render.renderer",
    "SharedDeviceIndex": "device.shared",
    "SharedVulkanChoice": "device.shared",
    "SharedVulkanContext": "device.shared",
    "SharedVulkanError": "device.shared",
    "SharedVulkanRawHandles": "device.shared",
    "SlotPool": "interop.leases",
    "SubmissionProbeResult": "device.probe",
    "SurfaceBudget": "alpha2.gpu.surfaces",
    "SurfaceBudgetError": "alpha2.gpu.surfaces",
    "SurfaceBudgetPolicy": "alpha2.gpu.surfaces",
    "SurfaceIdentity": "alpha2.gpu.surfaces",
    "SurfaceReservation": "alpha2.gpu.surfaces",
    "SurfaceUsage": "alpha2.gpu.surfaces",
    "VideoCodecSupport": "device.candidates",
    "VideoEncodeExtent": "encode.extent",
    "VideoOperation": "device.candidates",
    "VideoProfileCapabilities": "device.candidates",
    "VulkanCandidate": "device.candidates",
    "VulkanDeviceState": "device.shared",
    "VulkanEncodeCopier": "encode.copier",
    "VulkanImportLease": "interop.leases",
    "VulkanLayerVersion": "device.candidates",
    "VulkanMemoryHeap": "device.candidates",
    "VulkanQueue": "device.shared",
    "VulkanQueueFamily": "device.candidates",
    "VulkanTimelineSemaphore": "device.timeline",
    "VulkanTimelineSyncPoint": "device.timeline",
    "VulkanUnavailableError": "device.candidates",
    "VulkanVersion": "device.candidates",
    "WebGpuDeviceInfo": "interop.leases",
    "WebGpuImplementation": "interop.leases",
    "YuvSampler": "render.renderer",
    "adapter_memory_budget": "device.candidates",
    "adapter_pin": "device.candidates",
    "adapter_pinned": "device.candidates",
    "choose_encode_route": "encode.routes",
    "choose_shared_vulkan": "device.shared",
    "create_timeline_semaphore": "device.timeline",
    "decode_driver_version": "device.candidates",
    "detect_webgpu_device": "interop.importer",
    "gpu_module_of": "render.renderer",
    "gpu_wait_timeout": "device.probe",
    "layout_kind": "render.renderer",
    "load_wgsl": "render.renderer",
    "probe_vulkan_submission": "device.probe",
    "read_texture_rgba": "render.renderer",
    "set_gpu_wait_timeout": "device.probe",
    "shader_params": "render.renderer",
    "shared_device_index": "device.shared",
    "signal_timeline_semaphore": "device.timeline",
    "vendor_name": "device.candidates",
    "vulkan_candidates": "device.candidates",
    "vulkan_instance_layers": "device.candidates",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    target = module if module.startswith("alpha2.") else f"{__name__}.{module}"
    value = getattr(importlib.import_module(target), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
