"""What this machine's GPUs are, for tools that show or pin them (``alpha2 probe``, batch workers).

The front door's view of the inventory alpha2.native_gpu keeps: the Vulkan adapters with their video and
interop support, CUDA devices by UUID, and the submission probe that shows a device really runs work.
"""

from __future__ import annotations

from alpha2.native_gpu._cuda.core import cuda_device_uuids
from alpha2.native_gpu.device.candidates import ExternalHandleType, VulkanCandidate, vulkan_candidates
from alpha2.native_gpu.device.probe import probe_vulkan_submission
from alpha2.native_gpu.device.shared import SharedVulkanContext

__all__ = [
    "ExternalHandleType",
    "SharedVulkanContext",
    "VulkanCandidate",
    "cuda_device_uuids",
    "probe_vulkan_submission",
    "vulkan_candidates",
]
