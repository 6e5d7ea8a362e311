"""Physical-device queries that return plain Python values: properties, identity, memory, queue families,
features, external handle support and instance layers.

:class:`PhysicalDevice` wraps one VkPhysicalDevice with its instance's function table; each method fills
the cffi structures (``pNext`` chains included), calls the driver and copies the answer into a frozen
dataclass, so nothing above ``_vk`` sees cdata. Which optional structures to chain is the caller's
decision (it knows the device's extensions and version); a query raises a typed
:class:`~alpha2.native_gpu._vk.core.SharedVulkanError` when the driver refuses it.

:class:`QueueFlag` and :class:`MemoryHeapFlag` are the bits of ``VkQueueFlags`` / ``VkMemoryHeapFlags``
as Python flags: unlike the other constants they are needed without a loader (by the candidate
dataclasses), so their values are written here and checked against the ``vulkan`` package by the tests.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from alpha2.native_gpu._vk.core import (
    API_VERSION_1_1,
    API_VERSION_1_2,
    API_VERSION_1_3,
    FunctionTable,
    Instance,
    VulkanApi,
    check,
    cstr,
    vulkan_api,
)
from alpha2.native_gpu._vk.structs import link

__all__ = [
    "DeviceProperties",
    "ExternalFeatures",
    "Feature",
    "HandleType",
    "IdentityProperties",
    "LayerProperties",
    "MemoryHeapFlag",
    "MemoryHeapInfo",
    "MemoryProperties",
    "PhysicalDevice",
    "QueueFamilyInfo",
    "QueueFlag",
    "askable_features",
    "instance_layers",
    "physical_devices",
]


class QueueFlag(enum.IntFlag):
    """VkQueueFlagBits."""

    GRAPHICS = 0x1
    COMPUTE = 0x2
    TRANSFER = 0x4
    SPARSE_BINDING = 0x8
    PROTECTED = 0x10
    VIDEO_DECODE = 0x20
    VIDEO_ENCODE = 0x40
    OPTICAL_FLOW = 0x100


class MemoryHeapFlag(enum.IntFlag):
    """VkMemoryHeapFlagBits."""

    DEVICE_LOCAL = 0x1


class Feature(enum.Enum):
    """Optional device features alpha2 asks for; the value is the Vulkan feature member's name."""

    TIMELINE_SEMAPHORE = "timelineSemaphore"
    SYNCHRONIZATION2 = "synchronization2"
    SAMPLER_YCBCR_CONVERSION = "samplerYcbcrConversion"


_FEATURE_SOURCES: tuple[tuple[Feature, str, int], ...] = (
    (Feature.TIMELINE_SEMAPHORE, "VK_KHR_timeline_semaphore", API_VERSION_1_2),
    (Feature.SYNCHRONIZATION2, "VK_KHR_synchronization2", API_VERSION_1_3),
    (Feature.SAMPLER_YCBCR_CONVERSION, "VK_KHR_sampler_ycbcr_conversion", API_VERSION_1_1),
)
"""Each feature, the extension that provides it, and the core version that includes it."""


def askable_features(api_version: int, extensions: Iterable[str]) -> list[Feature]:
    """The features a device of ``api_version`` with ``extensions`` (available or enabled) provides,
    so that asking for them is legal (whether the driver has them is the query's answer)."""
    names = set(extensions)
    return [f for f, extension, core in _FEATURE_SOURCES if api_version >= core or extension in names]


# Feature -> (feature structure, its VkStructureType constant): chained in this order.
_FEATURE_STRUCTS: dict[Feature, tuple[str, str]] = {
    Feature.TIMELINE_SEMAPHORE: (
        "VkPhysicalDeviceTimelineSemaphoreFeatures",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES",
    ),
    Feature.SYNCHRONIZATION2: (
        "VkPhysicalDeviceSynchronization2Features",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES",
    ),
    Feature.SAMPLER_YCBCR_CONVERSION: (
        "VkPhysicalDeviceSamplerYcbcrConversionFeatures",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SAMPLER_YCBCR_CONVERSION_FEATURES",
    ),
}


class HandleType(enum.Enum):
    """External handle types; the value names the memory and semaphore handle-type bits' common stem."""

    OPAQUE_FD = "OPAQUE_FD"
    DMA_BUF = "DMA_BUF"
    SYNC_FD = "SYNC_FD"

    def memory_bit(self, api: VulkanApi) -> int:
        """VkExternalMemoryHandleTypeFlagBits (DMA_BUF is VK_EXT_external_memory_dma_buf's)."""
        suffix = "_EXT" if self is HandleType.DMA_BUF else ""
        return int(getattr(api.vk, f"VK_EXTERNAL_MEMORY_HANDLE_TYPE_{self.value}_BIT{suffix}"))

    def semaphore_bit(self, api: VulkanApi) -> int:
        """VkExternalSemaphoreHandleTypeFlagBits (there is no DMA_BUF semaphore)."""
        return int(getattr(api.vk, f"VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_{self.value}_BIT"))


@dataclass(frozen=True)
class DeviceProperties:
    """VkPhysicalDeviceProperties, the fields alpha2 reads."""

    name: str
    """deviceName."""
    vendor_id: int
    """vendorID."""
    device_id: int
    """deviceID."""
    device_type: int
    """VkPhysicalDeviceType."""
    api_version: int
    """Packed apiVersion."""
    driver_version: int
    """Packed driverVersion (vendor-specific packing)."""


@dataclass(frozen=True)
class IdentityProperties:
    """VkPhysicalDeviceIDProperties, DriverProperties and DrmPropertiesEXT, where they were asked for."""

    uuid: bytes | None = None
    """deviceUUID (16 bytes)."""
    driver_uuid: bytes | None = None
    """driverUUID (16 bytes)."""
    luid: bytes | None = None
    """deviceLUID (8 bytes) where deviceLUIDValid."""
    driver_name: str = ""
    """driverName."""
    driver_info: str = ""
    """driverInfo."""
    drm_render_node: tuple[int, int] | None = None
    """(major, minor) of the render node, where hasRender."""
    drm_primary_node: tuple[int, int] | None = None
    """(major, minor) of the primary node, where hasPrimary."""


@dataclass(frozen=True)
class MemoryHeapInfo:
    """One VkMemoryHeap, with VK_EXT_memory_budget's figures where asked for."""

    size_bytes: int
    """size."""
    flags: MemoryHeapFlag
    """VkMemoryHeapFlags."""
    budget_bytes: int | None = None
    """heapBudget, or None."""
    usage_bytes: int | None = None
    """heapUsage, or None."""


@dataclass(frozen=True)
class MemoryProperties:
    """VkPhysicalDeviceMemoryProperties2 (heaps), with the budget where asked for."""

    heaps: tuple[MemoryHeapInfo, ...]
    """memoryHeaps[0:memoryHeapCount]."""
    budget_reported: bool
    """Whether VkPhysicalDeviceMemoryBudgetPropertiesEXT was chained (budget fields are set)."""


@dataclass(frozen=True)
class QueueFamilyInfo:
    """VkQueueFamilyProperties2, with VkQueueFamilyVideoPropertiesKHR where asked for."""

    queue_count: int
    """queueCount."""
    flags: QueueFlag
    """queueFlags."""
    video_codec_operations: int
    """videoCodecOperations (0 when not asked for)."""
    timestamp_valid_bits: int
    """timestampValidBits."""


@dataclass(frozen=True)
class ExternalFeatures:
    """Whether a handle type can be exported / imported (VkExternal*Properties feature bits)."""

    exportable: bool
    """EXPORTABLE_BIT."""
    importable: bool
    """IMPORTABLE_BIT."""


@dataclass(frozen=True)
class LayerProperties:
    """VkLayerProperties."""

    name: str
    """layerName."""
    spec_version: int
    """Packed specVersion."""
    implementation_version: int
    """implementationVersion."""
    description: str
    """description."""


def instance_layers(api: VulkanApi | None = None) -> tuple[LayerProperties, ...]:
    """The instance layers the loader offers (vkEnumerateInstanceLayerProperties)."""
    api = api if api is not None else vulkan_api()
    ffi = api.ffi
    count = ffi.new("uint32_t*")
    check(api.lib.vkEnumerateInstanceLayerProperties(count, ffi.NULL), "vkEnumerateInstanceLayerProperties")
    props = ffi.new("VkLayerProperties[]", count[0])
    check(api.lib.vkEnumerateInstanceLayerProperties(count, props), "vkEnumerateInstanceLayerProperties")
    return tuple(
        LayerProperties(
            name=cstr(api, props[i].layerName),
            spec_version=int(props[i].specVersion),
            implementation_version=int(props[i].implementationVersion),
            description=cstr(api, props[i].description),
        )
        for i in range(count[0])
    )


class PhysicalDevice:
    """One VkPhysicalDevice and the instance functions that query it.

    Args:
        api: the loaded binding.
        fn: the instance's :class:`~alpha2.native_gpu._vk.core.FunctionTable` (or any object with the
            same ``vk*`` attributes: the tests pass a fake driver).
        handle: the VkPhysicalDevice cdata.
    """

    def __init__(self, api: VulkanApi, fn: FunctionTable | Any, handle: Any) -> None:
        self.api = api
        self.fn = fn
        self.handle = handle

    def properties(self) -> DeviceProperties:
        """vkGetPhysicalDeviceProperties (Vulkan 1.0, through the loader)."""
        basic = self.api.ffi.new("VkPhysicalDeviceProperties*")
        self.api.lib.vkGetPhysicalDeviceProperties(self.handle, basic)
        return DeviceProperties(
            name=cstr(self.api, basic.deviceName),
            vendor_id=int(basic.vendorID),
            device_id=int(basic.deviceID),
            device_type=int(basic.deviceType),
            api_version=int(basic.apiVersion),
            driver_version=int(basic.driverVersion),
        )

    def extensions(self) -> frozenset[str]:
        """Names of the device extensions (vkEnumerateDeviceExtensionProperties)."""
        ffi, lib = self.api.ffi, self.api.lib
        count = ffi.new("uint32_t*")
        check(lib.vkEnumerateDeviceExtensionProperties(self.handle, ffi.NULL, count, ffi.NULL), "extensions")
        props = ffi.new("VkExtensionProperties[]", count[0])
        check(lib.vkEnumerateDeviceExtensionProperties(self.handle, ffi.NULL, count, props), "extensions")
        return frozenset(cstr(self.api, props[i].extensionName) for i in range(count[0]))

    def identity(self, *, ids: bool = True, driver: bool = False, drm: bool = False) -> IdentityProperties:
        """vkGetPhysicalDeviceProperties2 with the ID / driver / DRM structures asked for chained."""
        ffi, vk = self.api.ffi, self.api.vk
        props = ffi.new(
            "VkPhysicalDeviceProperties2*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2}
        )
        id_props = drv = drm_props = None
        if ids:
            id_props = ffi.new(
                "VkPhysicalDeviceIDProperties*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES}
            )
        if driver:
            drv = ffi.new(
                "VkPhysicalDeviceDriverProperties*",
                {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES},
            )
        if drm:
            drm_props = ffi.new(
                "VkPhysicalDeviceDrmPropertiesEXT*",
                {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRM_PROPERTIES_EXT},
            )
        self.fn.vkGetPhysicalDeviceProperties2(self.handle, link(props, id_props, drv, drm_props))
        out: dict[str, Any] = {}
        if id_props is not None:
            out["uuid"] = bytes(ffi.buffer(id_props.deviceUUID, 16))
            out["driver_uuid"] = bytes(ffi.buffer(id_props.driverUUID, 16))
            if id_props.deviceLUIDValid:
                out["luid"] = bytes(ffi.buffer(id_props.deviceLUID, 8))
        if drv is not None:
            out["driver_name"] = cstr(self.api, drv.driverName)
            out["driver_info"] = cstr(self.api, drv.driverInfo)
        if drm_props is not None:
            if drm_props.hasRender:
                out["drm_render_node"] = (int(drm_props.renderMajor), int(drm_props.renderMinor))
            if drm_props.hasPrimary:
                out["drm_primary_node"] = (int(drm_props.primaryMajor), int(drm_props.primaryMinor))
        return IdentityProperties(**out)

    def memory(self, *, budget: bool = False) -> MemoryProperties:
        """vkGetPhysicalDeviceMemoryProperties2, with the memory budget structure if ``budget``."""
        ffi, vk = self.api.ffi, self.api.vk
        props = ffi.new(
            "VkPhysicalDeviceMemoryProperties2*",
            {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2},
        )
        budget_props = None
        if budget:
            budget_props = ffi.new(
                "VkPhysicalDeviceMemoryBudgetPropertiesEXT*",
                {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT},
            )
        self.fn.vkGetPhysicalDeviceMemoryProperties2(self.handle, link(props, budget_props))
        mp = props.memoryProperties
        heaps = tuple(
            MemoryHeapInfo(
                size_bytes=int(mp.memoryHeaps[i].size),
                flags=MemoryHeapFlag(int(mp.memoryHeaps[i].flags)),
                budget_bytes=int(budget_props.heapBudget[i]) if budget_props is not None else None,
                usage_bytes=int(budget_props.heapUsage[i]) if budget_props is not None else None,
            )
            for i in range(mp.memoryHeapCount)
        )
        return MemoryProperties(heaps=heaps, budget_reported=budget_props is not None)

    def memory_types(self) -> tuple[tuple[int, int], ...]:
        """(propertyFlags, heapIndex) per memory type (vkGetPhysicalDeviceMemoryProperties, Vulkan 1.0)."""
        mem = self.api.ffi.new("VkPhysicalDeviceMemoryProperties*")
        self.api.lib.vkGetPhysicalDeviceMemoryProperties(self.handle, mem)
        return tuple(
            (int(mem.memoryTypes[i].propertyFlags), int(mem.memoryTypes[i].heapIndex))
            for i in range(mem.memoryTypeCount)
        )

    def queue_families(self, *, video: bool = False) -> tuple[QueueFamilyInfo, ...]:
        """vkGetPhysicalDeviceQueueFamilyProperties2, with the video properties if ``video``."""
        ffi, vk = self.api.ffi, self.api.vk
        count = ffi.new("uint32_t*")
        self.fn.vkGetPhysicalDeviceQueueFamilyProperties2(self.handle, count, ffi.NULL)
        n = count[0]
        props = ffi.new("VkQueueFamilyProperties2[]", n)
        video_props = ffi.new("VkQueueFamilyVideoPropertiesKHR[]", max(n, 1))
        for i in range(n):
            props[i].sType = vk.VK_STRUCTURE_TYPE_QUEUE_FAMILY_PROPERTIES_2
            if video:
                video_props[i].sType = vk.VK_STRUCTURE_TYPE_QUEUE_FAMILY_VIDEO_PROPERTIES_KHR
                props[i].pNext = ffi.addressof(video_props, i)
        self.fn.vkGetPhysicalDeviceQueueFamilyProperties2(self.handle, count, props)
        return tuple(
            QueueFamilyInfo(
                queue_count=int(props[i].queueFamilyProperties.queueCount),
                flags=QueueFlag(int(props[i].queueFamilyProperties.queueFlags)),
                video_codec_operations=int(video_props[i].videoCodecOperations) if video else 0,
                timestamp_valid_bits=int(props[i].queueFamilyProperties.timestampValidBits),
            )
            for i in range(count[0])
        )

    def feature_chain(self, features: Iterable[Feature]) -> FeatureChain:
        """A VkPhysicalDeviceFeatures2 chain with the structures of ``features``, filled by the driver."""
        return FeatureChain(self, features)

    def features(self, features: Iterable[Feature]) -> frozenset[Feature]:
        """Which of ``features`` the device has (vkGetPhysicalDeviceFeatures2 with their structures)."""
        return self.feature_chain(features).supported

    def external_buffer_features(self, handle_type: HandleType) -> ExternalFeatures:
        """Export / import of buffer memory as ``handle_type`` (vkGetPhysicalDeviceExternalBufferProperties).

        Asked for a transfer / storage / vertex buffer, the usages a shared buffer has.
        """
        ffi, vk = self.api.ffi, self.api.vk
        usage = (
            vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
            | vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
            | vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT
        )
        info = ffi.new(
            "VkPhysicalDeviceExternalBufferInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
                "usage": usage,
                "handleType": handle_type.memory_bit(self.api),
            },
        )
        props = ffi.new(
            "VkExternalBufferProperties*", {"sType": vk.VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES}
        )
        self.fn.vkGetPhysicalDeviceExternalBufferProperties(self.handle, info, props)
        features = int(props.externalMemoryProperties.externalMemoryFeatures)
        return ExternalFeatures(
            exportable=bool(features & vk.VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT),
            importable=bool(features & vk.VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT),
        )

    def external_semaphore_features(self, handle_type: HandleType, *, timeline: bool) -> ExternalFeatures:
        """Export / import of a binary or timeline semaphore as ``handle_type``
        (vkGetPhysicalDeviceExternalSemaphoreProperties)."""
        ffi, vk = self.api.ffi, self.api.vk
        info = ffi.new(
            "VkPhysicalDeviceExternalSemaphoreInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
                "handleType": handle_type.semaphore_bit(self.api),
            },
        )
        type_info = None
        if timeline:
            type_info = ffi.new(
                "VkSemaphoreTypeCreateInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                    "semaphoreType": vk.VK_SEMAPHORE_TYPE_TIMELINE,
                    "initialValue": 0,
                },
            )
        props = ffi.new(
            "VkExternalSemaphoreProperties*", {"sType": vk.VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES}
        )
        self.fn.vkGetPhysicalDeviceExternalSemaphoreProperties(self.handle, link(info, type_info), props)
        features = int(props.externalSemaphoreFeatures)
        return ExternalFeatures(
            exportable=bool(features & vk.VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT),
            importable=bool(features & vk.VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT),
        )


class FeatureChain:
    """A queried VkPhysicalDeviceFeatures2 chain, kept alive to be passed on to vkCreateDevice.

    ``supported`` is what the driver reported. :meth:`for_device_creation` zeroes the core 1.0 features
    so that a device created with the chain enables exactly the chained features the driver has.
    """

    def __init__(self, device: PhysicalDevice, features: Iterable[Feature]) -> None:
        ffi, vk = device.api.ffi, device.api.vk
        self._api = device.api
        self.head: Any = ffi.new(
            "VkPhysicalDeviceFeatures2*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2}
        )
        asked = list(dict.fromkeys(features))
        self._structs: dict[Feature, Any] = {}
        for feature in _FEATURE_STRUCTS:  # a fixed order, whatever order they were asked in
            if feature in asked:
                ctype, stype = _FEATURE_STRUCTS[feature]
                self._structs[feature] = ffi.new(f"{ctype}*", {"sType": getattr(vk, stype)})
        link(self.head, *self._structs.values())
        device.fn.vkGetPhysicalDeviceFeatures2(device.handle, self.head)
        self.supported = frozenset(f for f, s in self._structs.items() if getattr(s, f.value))
        """The chained features the driver reported."""

    def for_device_creation(self) -> Any:
        """The chain, with every core 1.0 feature zeroed (the chained ones keep the driver's answer)."""
        ffi = self._api.ffi
        size = ffi.sizeof("VkPhysicalDeviceFeatures")
        ffi.memmove(ffi.addressof(self.head, "features"), bytes(size), size)
        return self.head


def physical_devices(instance: Instance) -> list[PhysicalDevice]:
    """The instance's physical devices in the loader's enumeration order."""
    return [PhysicalDevice(instance.api, instance.fn, handle) for handle in instance.physical_devices()]
