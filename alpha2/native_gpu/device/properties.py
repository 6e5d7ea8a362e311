"""The parts a :class:`~alpha2.native_gpu.device.candidates.VulkanCandidate` is made of: instance layers,
memory heaps, queue families and external handle support, with vendor names and driver versions.

Plain values, importable without a Vulkan loader; re-exported by :mod:`alpha2.native_gpu.device.candidates`.
"""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass

from alpha2.native_gpu._vk.core import VulkanVersion
from alpha2.native_gpu._vk.query import QueueFlag

__all__ = [
    "VENDOR_NAMES",
    "ExternalHandleSupport",
    "ExternalHandleType",
    "VulkanLayerVersion",
    "VulkanMemoryHeap",
    "VulkanQueueFamily",
    "decode_driver_version",
    "vendor_name",
]

VENDOR_NAMES = {
    0x10DE: "NVIDIA",
    0x1002: "AMD",
    0x1022: "AMD",
    0x8086: "Intel",
    0x13B5: "ARM",
    0x5143: "Qualcomm",
    0x1010: "Imagination",
    0x106B: "Apple",
    0x14E4: "Broadcom",
    0x10005: "Mesa",
    0x10002: "VeriSilicon",
    0x10003: "Kazan",
    0x10004: "Codeplay",
    0x1AE0: "Google",
}


def vendor_name(vendor_id: int) -> str:
    """Vendor name of a PCI (or Khronos) vendor id, or its hex form."""
    return VENDOR_NAMES.get(vendor_id, f"0x{vendor_id:04x}")


def decode_driver_version(vendor_id: int, raw: int, platform: str = sys.platform) -> str:
    """The driver version as the vendor writes it.

    NVIDIA packs 10.8.8.6 bits, Intel on Windows 18.14 bits; everyone else (Mesa, AMD, Intel on Linux)
    uses Vulkan's major.minor.patch packing.
    """
    raw = int(raw) & 0xFFFFFFFF
    if vendor_id == 0x10DE:
        return f"{(raw >> 22) & 0x3FF}.{(raw >> 14) & 0xFF}.{(raw >> 6) & 0xFF}.{raw & 0x3F}"
    if vendor_id == 0x8086 and platform.startswith("win"):
        return f"{raw >> 14}.{raw & 0x3FFF}"
    return f"{(raw >> 22) & 0x3FF}.{(raw >> 12) & 0x3FF}.{raw & 0xFFF}"


@dataclass(frozen=True)
class VulkanLayerVersion:
    """An instance layer and its versions."""

    name: str
    """Layer name (VK_LAYER_...)."""
    spec_version: VulkanVersion
    """Vulkan version the layer was written against."""
    implementation_version: int
    """The layer's own version number."""
    description: str = ""
    """The layer's description."""


@dataclass(frozen=True)
class VulkanMemoryHeap:
    """One memory heap, with the budget where VK_EXT_memory_budget reports it."""

    index: int
    """Heap index."""
    size_bytes: int
    """Heap size."""
    device_local: bool
    """VK_MEMORY_HEAP_DEVICE_LOCAL_BIT."""
    budget_bytes: int | None = None
    """How much this process may allocate (VK_EXT_memory_budget), or None."""
    usage_bytes: int | None = None
    """How much this process uses now (VK_EXT_memory_budget), or None."""


_QUEUE_FLAG_NAMES = (
    (QueueFlag.GRAPHICS, "graphics"),
    (QueueFlag.COMPUTE, "compute"),
    (QueueFlag.TRANSFER, "transfer"),
    (QueueFlag.SPARSE_BINDING, "sparse"),
    (QueueFlag.PROTECTED, "protected"),
    (QueueFlag.VIDEO_DECODE, "video_decode"),
    (QueueFlag.VIDEO_ENCODE, "video_encode"),
    (QueueFlag.OPTICAL_FLOW, "optical_flow"),
)


@dataclass(frozen=True)
class VulkanQueueFamily:
    """A queue family: its flags and, for video families, the codec operations."""

    index: int
    """Queue family index."""
    queue_count: int
    """Number of queues."""
    flags: int
    """VkQueueFlags."""
    video_codec_operations: int = 0
    """VkVideoCodecOperationFlagsKHR (VkQueueFamilyVideoPropertiesKHR), 0 without video."""
    timestamp_valid_bits: int = 0
    """Valid bits of timestamps written on this family."""

    @property
    def flag_names(self) -> tuple[str, ...]:
        """Names of the set flags ('graphics', 'compute', 'transfer', 'video_decode', ...)."""
        return tuple(name for bit, name in _QUEUE_FLAG_NAMES if self.flags & bit)

    @property
    def graphics(self) -> bool:
        """Graphics queues."""
        return bool(self.flags & QueueFlag.GRAPHICS)

    @property
    def compute(self) -> bool:
        """Compute queues."""
        return bool(self.flags & QueueFlag.COMPUTE)

    @property
    def transfer(self) -> bool:
        """Transfer queues (graphics and compute queues transfer too, without the bit)."""
        return bool(self.flags & (QueueFlag.GRAPHICS | QueueFlag.COMPUTE | QueueFlag.TRANSFER))

    @property
    def video_decode(self) -> bool:
        """Video decode queues."""
        return bool(self.flags & QueueFlag.VIDEO_DECODE)

    @property
    def video_encode(self) -> bool:
        """Video encode queues."""
        return bool(self.flags & QueueFlag.VIDEO_ENCODE)


class ExternalHandleType(enum.Enum):
    """External handle types alpha2 cares about (Linux)."""

    OPAQUE_FD = "opaque_fd"
    DMA_BUF = "dma_buf"
    SYNC_FD = "sync_fd"


@dataclass(frozen=True)
class ExternalHandleSupport:
    """Whether memory or semaphores can be exported / imported as a handle type."""

    handle_type: ExternalHandleType
    """The handle type."""
    exportable: bool
    """Can be exported."""
    importable: bool
    """Can be imported."""
    timeline: bool = False
    """For semaphores: queried for a timeline semaphore (False: binary)."""
    reason: str | None = None
    """Why it is unsupported (missing extension, failed query), or None."""

    @property
    def supported(self) -> bool:
        """Exportable and importable."""
        return self.exportable and self.importable
