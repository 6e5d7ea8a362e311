"""alpha2.native_gpu: platform GPU interop for native decoded surfaces.

- the device: ``Device`` (the WebGPU device with its Vulkan twin and CUDA ordinal, chosen once),
  ``SharedVulkanContext`` / ``choose_shared_vulkan``, ``vulkan_candidates``, ``probe_vulkan_submission``,
  ``set_gpu_wait_timeout``;
- import: ``FrameImporter`` -> ``ImportLease`` holding an ``ImportedFrame`` (plane textures, views, the
  sync point, the path taken);
- render: ``FrameRenderer``, ``read_texture_rgba``;
- encode: ``EncodeCopier`` -> ``EncodedPlanes``;
- reports: the importer's paths and the copier's routes, each a ``paths.PathReport`` of ``PathStatus``
  rows.

The reference documents' names ``VulkanImportLease``, ``ImportedVulkanFrame`` and ``VulkanEncodeCopier``
are aliases. Surface accounting (``SurfaceBudget``) and ``DecodedFrame`` are vocabulary, in
``alpha2.gpu``. Names are imported lazily on first use, so ``import alpha2.native_gpu`` needs neither a
Vulkan loader nor a WebGPU adapter. This package never imports ``av``: FFmpeg stays in
``alpha2.ffmpeg_bridge``. Importing it puts :mod:`.webgpu_ffi`'s hook in place, so that wgpu-py, whenever
it loads, takes its C declarations from the cache instead of parsing webgpu.h again.
"""

from __future__ import annotations

import importlib
from typing import Any

from alpha2.native_gpu import webgpu_ffi

webgpu_ffi.install()

_EXPORTS: dict[str, str] = {
    # the device
    "Device": "device.device",
    "SharedVulkanContext": "device.shared",
    "SharedVulkanChoice": "device.shared",
    "AdapterReport": "device.shared",
    "choose_shared_vulkan": "device.shared",
    "VulkanCandidate": "device.candidates",
    "vulkan_candidates": "device.candidates",
    "adapter_memory_budget": "device.candidates",
    "adapter_pinned": "device.candidates",
    "probe_vulkan_submission": "device.probe",
    "SubmissionProbeResult": "device.probe",
    "VulkanTimelineSyncPoint": "device.timeline",
    "set_gpu_wait_timeout": "device.waits",
    "gpu_wait_timeout": "device.waits",
    "install_cuda_plane_ops": "_cuda.streams",
    "SharedVulkanError": "device.shared",
    "VulkanUnavailableError": "device.candidates",
    # import
    "FrameImporter": "interop.importer",
    "ImportLease": "interop.leases",
    "ImportedFrame": "interop.leases",
    "ExternalSyncPoint": "interop.leases",
    # render
    "FrameRenderer": "render.renderer",
    "read_texture_rgba": "render.renderer",
    # encode
    "EncodeCopier": "encode.copier",
    "EncodedPlanes": "alpha2.gpu.encoded",
    "EncodeTarget": "alpha2.gpu.encoded",
    "EncodeRoute": "encode.routes",
    "VideoEncodeExtent": "encode.extent",
    # the seeds' names, kept as aliases (each defined once, beside the new name)
    "VulkanImportLease": "interop.leases",
    "ImportedVulkanFrame": "interop.leases",
    "VulkanEncodeCopier": "encode.copier",
}
"""What users need; everything else stays importable from its module (``alpha2.native_gpu.interop.pool``,
``...render.renderer``, ...)."""


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
