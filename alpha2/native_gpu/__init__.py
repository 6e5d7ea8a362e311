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
    "AdapterPolicy": "candidates",
    "AdapterReport": "shared",
    "DecodedFrame": "frames",
    "EncodeTarget": "encode",
    "EncodedPlanes": "encode",
    "ExtentSource": "encode",
    "ExternalHandleSupport": "candidates",
    "ExternalHandleType": "candidates",
    "ExternalSyncPoint": "leases",
    "FrameImporter": "importer",
    "FrameRenderer": "shader",
    "ImageOwner": "leases",
    "ImportPathReport": "importer",
    "ImportTicketStats": "leases",
    "ImportedPlaneDescriptor": "leases",
    "ImportedVulkanFrame": "leases",
    "InteropPairing": "leases",
    "LayoutKind": "shader",
    "NativeImageState": "leases",
    "NativeSurfaceLease": "leases",
    "OUTPUT_FORMATS": "shader",
    "PAIRINGS": "importer",
    "PairingTicket": "leases",
    "PathStatus": "importer",
    "QueueRole": "shared",
    "ShaderParams": "shader",
    "SharedDeviceIndex": "shared",
    "SharedVulkanChoice": "shared",
    "SharedVulkanContext": "shared",
    "SharedVulkanError": "shared",
    "SharedVulkanRawHandles": "shared",
    "SlotPool": "leases",
    "SubmissionProbeResult": "probe",
    "SurfaceBudget": "surfaces",
    "SurfaceBudgetError": "surfaces",
    "SurfaceBudgetPolicy": "surfaces",
    "SurfaceIdentity": "surfaces",
    "SurfaceReservation": "surfaces",
    "SurfaceUsage": "surfaces",
    "VideoCodecSupport": "candidates",
    "VideoEncodeExtent": "encode",
    "VideoOperation": "candidates",
    "VideoProfileCapabilities": "candidates",
    "VulkanCandidate": "candidates",
    "VulkanDeviceState": "shared",
    "VulkanEncodeCopier": "encode",
    "VulkanImportLease": "leases",
    "VulkanLayerVersion": "candidates",
    "VulkanMemoryHeap": "candidates",
    "VulkanQueue": "shared",
    "VulkanQueueFamily": "candidates",
    "VulkanTimelineSemaphore": "vk_sync",
    "VulkanTimelineSyncPoint": "vk_sync",
    "VulkanUnavailableError": "candidates",
    "VulkanVersion": "candidates",
    "WebGpuDeviceInfo": "leases",
    "WebGpuImplementation": "leases",
    "YuvSampler": "shader",
    "adapter_memory_budget": "candidates",
    "adapter_pin": "candidates",
    "adapter_pinned": "candidates",
    "choose_shared_vulkan": "shared",
    "create_timeline_semaphore": "vk_sync",
    "decode_driver_version": "candidates",
    "detect_webgpu_device": "importer",
    "gpu_module_of": "shader",
    "gpu_wait_timeout": "probe",
    "layout_kind": "shader",
    "load_wgsl": "shader",
    "probe_vulkan_submission": "probe",
    "read_texture_rgba": "shader",
    "set_gpu_wait_timeout": "probe",
    "shader_params": "shader",
    "shared_device_index": "shared",
    "signal_timeline_semaphore": "vk_sync",
    "vendor_name": "candidates",
    "vulkan_candidates": "candidates",
    "vulkan_instance_layers": "candidates",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
