"""alpha2.native_gpu: platform GPU interop for native decoded surfaces.

The one device a program works on (``Device``: the WebGPU device with its Vulkan and CUDA twins), the
shared Vulkan device (``SharedVulkanContext``, ``choose_shared_vulkan``, ``vulkan_candidates``,
``shared_device_index``), import leases of decoded frames into WebGPU textures (``FrameImporter``,
``ImportLease``, ``ImportedFrame``; the reference documents' names ``VulkanImportLease`` and
``ImportedVulkanFrame`` are aliases, kept in ``interop.leases``), bounded surface accounting
(``SurfaceBudget``), the sampling shader (``FrameRenderer``), the encode hand-off
(``VulkanEncodeCopier``, ``VideoEncodeExtent``), ``probe_vulkan_submission`` and
``set_gpu_wait_timeout``.

Names are imported lazily on first use, so ``import alpha2.native_gpu`` needs neither a Vulkan loader
nor a WebGPU adapter. This package never imports ``av``: FFmpeg stays in ``alpha2.ffmpeg_bridge``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "Device": "device.device",
    "AdapterPolicy": "device.candidates",
    "AdapterReport": "device.shared",
    "DecodedFrame": "alpha2.gpu.frames",
    "EncodeCopier": "encode.copier",
    "EncodeRoute": "encode.routes",
    "EncodeRouteReport": "encode.routes",
    "EncodeTarget": "encode.planes",
    "EncodedPlanes": "encode.planes",
    "ExtentSource": "encode.extent",
    "ExternalHandleSupport": "device.properties",
    "ExternalHandleType": "device.properties",
    "ExternalSyncPoint": "interop.leases",
    "FrameImporter": "interop.importer",
    "FrameRenderer": "render.renderer",
    "ImageOwner": "interop.leases",
    "ImportPathReport": "interop.importer",
    "ImportTicketStats": "interop.leases",
    "ImportedPlaneDescriptor": "interop.leases",
    "ImportedFrame": "interop.leases",
    "ImportedVulkanFrame": "interop.leases",
    "ImportLease": "interop.leases",
    "InteropPairing": "interop.leases",
    "LayoutKind": "render.renderer",
    "NativeImageState": "interop.leases",
    "NativeSurfaceLease": "interop.leases",
    "OUTPUT_FORMATS": "render.renderer",
    "PAIRINGS": "interop.importer",
    "PairingTicket": "interop.leases",
    "PathStatus": "interop.importer",
    "QueueRole": "alpha2.gpu.contexts",
    "ShaderParams": "render.renderer",
    "SharedDeviceIndex": "device.shared",
    "SharedVulkanChoice": "device.shared",
    "SharedVulkanContext": "device.shared",
    "SharedVulkanError": "device.shared",
    "SlotPool": "interop.leases",
    "SubmissionProbeResult": "device.probe",
    "SurfaceBudget": "alpha2.gpu.surfaces",
    "SurfaceBudgetError": "alpha2.gpu.surfaces",
    "SurfaceBudgetPolicy": "alpha2.gpu.surfaces",
    "SurfaceIdentity": "alpha2.gpu.surfaces",
    "SurfaceReservation": "alpha2.gpu.surfaces",
    "SurfaceUsage": "alpha2.gpu.surfaces",
    "VideoCodecSupport": "device.video",
    "VideoEncodeExtent": "encode.extent",
    "VideoOperation": "device.video",
    "VideoProfileCapabilities": "device.video",
    "VulkanCandidate": "device.candidates",
    "VulkanDeviceState": "_vk.device",
    "VulkanEncodeCopier": "encode.copier",
    "VulkanImportLease": "interop.leases",
    "VulkanLayerVersion": "device.properties",
    "VulkanMemoryHeap": "device.properties",
    "VulkanQueueFamily": "device.properties",
    "VulkanTimelineSemaphore": "device.timeline",
    "VulkanTimelineSyncPoint": "device.timeline",
    "VulkanUnavailableError": "device.candidates",
    "VulkanVersion": "device.candidates",
    "WebGpuDeviceInfo": "alpha2.gpu.webgpu",
    "WebGpuImplementation": "alpha2.gpu.webgpu",
    "YuvSampler": "render.renderer",
    "adapter_memory_budget": "device.candidates",
    "adapter_pin": "device.candidates",
    "adapter_pinned": "device.candidates",
    "choose_encode_route": "encode.routes",
    "choose_shared_vulkan": "device.shared",
    "create_timeline_semaphore": "device.timeline",
    "decode_driver_version": "device.properties",
    "detect_webgpu_device": "alpha2.gpu.webgpu",
    "gpu_module_of": "alpha2.gpu.webgpu",
    "gpu_wait_timeout": "device.probe",
    "layout_kind": "render.renderer",
    "load_wgsl": "render.renderer",
    "probe_vulkan_submission": "device.probe",
    "read_texture_rgba": "render.renderer",
    "set_gpu_wait_timeout": "device.probe",
    "shader_params": "render.renderer",
    "shared_device_index": "device.shared",
    "signal_timeline_semaphore": "device.timeline",
    "vendor_name": "device.properties",
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
