"""Every Vulkan physical device as a :class:`VulkanCandidate`, read without opening a device.

:func:`vulkan_candidates` lists the loader's physical devices in enumeration order (the index FFmpeg's
Vulkan device string takes) with what alpha2 needs to choose one: identity (UUIDs, LUID, DRM node),
driver and API versions, memory heaps and budget, queue families, video decode/encode per codec with
each profile's capabilities, external memory and semaphore handle types, timeline semaphores, and the
instance layers. Each query is guarded: a candidate whose query fails is listed with the reason
(``problems``, or ``error`` when it cannot be described at all), never dropped.

Importing this module needs no Vulkan loader; calling :func:`vulkan_candidates` without one raises
:class:`~alpha2.native_gpu._vk.core.VulkanUnavailableError`.
"""

from __future__ import annotations

import enum
import sys
import uuid as _uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from alpha2.gpu.adapters import (
    AdapterPolicy,
    AdapterType,
    VideoCodec,
    WgpuAdapterFacts,
    adapter_pin,
    adapter_pinned,
    match_vulkan_candidate,
    wgpu_adapter_facts,
)
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.identity import DeviceId
from alpha2.native_gpu._vk.core import (
    Instance,
    VulkanApi,
    VulkanUnavailableError,
    VulkanVersion,
    check,
    cstr,
    result_name,
    vulkan_api,
)

__all__ = [
    "AdapterPolicy",
    "ExternalHandleSupport",
    "ExternalHandleType",
    "VideoCodecSupport",
    "VideoOperation",
    "VideoProfileCapabilities",
    "VulkanCandidate",
    "VulkanLayerVersion",
    "VulkanMemoryHeap",
    "VulkanQueueFamily",
    "VulkanUnavailableError",
    "VulkanVersion",
    "adapter_memory_budget",
    "adapter_pin",
    "adapter_pinned",
    "decode_driver_version",
    "vendor_name",
    "vulkan_candidates",
    "vulkan_instance_layers",
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
    (0x1, "graphics"),
    (0x2, "compute"),
    (0x4, "transfer"),
    (0x8, "sparse"),
    (0x10, "protected"),
    (0x20, "video_decode"),
    (0x40, "video_encode"),
    (0x100, "optical_flow"),
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
        return bool(self.flags & 0x1)

    @property
    def compute(self) -> bool:
        """Compute queues."""
        return bool(self.flags & 0x2)

    @property
    def transfer(self) -> bool:
        """Transfer queues (graphics and compute queues transfer too, without the bit)."""
        return bool(self.flags & 0x7)

    @property
    def video_decode(self) -> bool:
        """Video decode queues."""
        return bool(self.flags & 0x20)

    @property
    def video_encode(self) -> bool:
        """Video encode queues."""
        return bool(self.flags & 0x40)


class VideoOperation(enum.Enum):
    """Decode or encode."""

    DECODE = "decode"
    ENCODE = "encode"


@dataclass(frozen=True)
class VideoProfileCapabilities:
    """One video profile and what vkGetPhysicalDeviceVideoCapabilitiesKHR says about it."""

    codec: VideoCodec
    """The codec."""
    operation: VideoOperation
    """Decode or encode."""
    profile: str
    """Profile name ('High', 'Main 10', ...)."""
    bit_depth: int
    """Luma and chroma bit depth queried (4:2:0)."""
    supported: bool
    """Whether the query succeeded."""
    max_coded_extent: tuple[int, int] | None = None
    """Largest (width, height)."""
    min_coded_extent: tuple[int, int] | None = None
    """Smallest (width, height)."""
    max_dpb_slots: int | None = None
    """Decoded picture buffer slots."""
    max_active_reference_pictures: int | None = None
    """Reference pictures one operation may use."""
    max_level: int | None = None
    """Codec-specific maximum level (StdVideo*Level value)."""
    reason: str | None = None
    """Why it is unsupported (the VkResult name), or None."""


@dataclass(frozen=True)
class VideoCodecSupport:
    """A codec operation a queue family advertises, with each profile's capabilities."""

    codec: VideoCodec
    """The codec."""
    operation: VideoOperation
    """Decode or encode."""
    queue_families: tuple[int, ...]
    """Families whose video codec operations include it."""
    profiles: tuple[VideoProfileCapabilities, ...] = ()
    """Queried profiles (supported or not)."""
    problem: str | None = None
    """Why the capabilities could not be queried (missing extension...), or None."""

    @property
    def supported(self) -> bool:
        """A queue family advertises it and a profile is supported (or profiles could not be queried)."""
        return bool(self.queue_families) and (
            any(p.supported for p in self.profiles) or (not self.profiles and self.problem is None)
        )

    @property
    def bit_depths(self) -> tuple[int, ...]:
        """Supported bit depths."""
        return tuple(sorted({p.bit_depth for p in self.profiles if p.supported}))

    @property
    def max_coded_extent(self) -> tuple[int, int] | None:
        """Largest max coded extent among supported profiles."""
        extents = [p.max_coded_extent for p in self.profiles if p.supported and p.max_coded_extent]
        return max(extents, key=lambda e: e[0] * e[1]) if extents else None


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


_VULKAN_1_0 = VulkanVersion(1, 0, 0)


@dataclass(frozen=True)
class VulkanCandidate:
    """A Vulkan physical device, described without opening a device. Satisfies AdapterFactsLike."""

    index: int
    """Loader enumeration index (what FFmpeg's Vulkan device string takes)."""
    name: str
    """deviceName."""
    device_type: AdapterType = AdapterType.OTHER
    """Discrete, integrated, virtual, CPU or other."""
    vendor_id: int = 0
    """PCI vendor id."""
    device_id: int = 0
    """PCI device id."""
    api_version: VulkanVersion = _VULKAN_1_0
    """Vulkan API version of the device."""
    driver_version: str = ""
    """Driver version decoded per vendor."""
    driver_version_raw: int = 0
    """Packed driverVersion."""
    driver_name: str = ""
    """VkPhysicalDeviceDriverProperties.driverName ('' when unknown)."""
    driver_info: str = ""
    """VkPhysicalDeviceDriverProperties.driverInfo."""
    uuid: bytes | None = None
    """deviceUUID (the UUID CUDA and Dawn report for the same GPU)."""
    driver_uuid: bytes | None = None
    """driverUUID (memory is shareable between instances only with equal driver UUIDs)."""
    luid: bytes | None = None
    """deviceLUID where valid (Windows)."""
    drm_render_node: tuple[int, int] | None = None
    """(major, minor) of the render node, where VK_EXT_physical_device_drm reports it."""
    drm_primary_node: tuple[int, int] | None = None
    """(major, minor) of the primary node, where reported."""
    memory_heaps: tuple[VulkanMemoryHeap, ...] = ()
    """Memory heaps, with budgets where VK_EXT_memory_budget exists."""
    memory_budget_supported: bool = False
    """Whether VK_EXT_memory_budget reported the budgets."""
    queue_families: tuple[VulkanQueueFamily, ...] = ()
    """Queue families."""
    video: tuple[VideoCodecSupport, ...] = ()
    """Video decode/encode operations the queue families advertise, with profile capabilities."""
    external_memory: tuple[ExternalHandleSupport, ...] = ()
    """External memory handle types (buffers)."""
    external_semaphores: tuple[ExternalHandleSupport, ...] = ()
    """External semaphore handle types (opaque fd binary and timeline, sync fd)."""
    timeline_semaphores: bool = False
    """timelineSemaphore feature."""
    synchronization2: bool = False
    """synchronization2 feature."""
    sampler_ycbcr_conversion: bool = False
    """samplerYcbcrConversion feature."""
    extensions: frozenset[str] = frozenset()
    """Device extension names."""
    instance_layers: tuple[VulkanLayerVersion, ...] = ()
    """Instance layers the loader offers."""
    problems: tuple[str, ...] = ()
    """Queries that failed (the candidate is still described by the others)."""
    error: str | None = None
    """Set when the device could not be described at all; such a candidate is not usable."""

    @property
    def usable(self) -> bool:
        """Whether the device was described (no fatal error)."""
        return self.error is None

    @property
    def vendor(self) -> str:
        """Vendor name."""
        return vendor_name(self.vendor_id)

    @property
    def identity(self) -> DeviceId:
        """The device as alpha2.gpu.identity names it."""
        return DeviceId(
            vendor_id=self.vendor_id,
            device_id=self.device_id,
            name=self.name,
            uuid=self.uuid,
            luid=self.luid,
            drm_render_node=self.drm_render_node,
        )

    @property
    def uuid_str(self) -> str | None:
        """deviceUUID in canonical text form."""
        return str(_uuid.UUID(bytes=self.uuid)) if self.uuid else None

    def _codecs(self, operation: VideoOperation) -> frozenset[VideoCodec]:
        return frozenset(v.codec for v in self.video if v.operation is operation and v.supported)

    @property
    def decode_codecs(self) -> frozenset[VideoCodec]:
        """Codecs decoded on a video queue."""
        return self._codecs(VideoOperation.DECODE)

    @property
    def encode_codecs(self) -> frozenset[VideoCodec]:
        """Codecs encoded on a video queue."""
        return self._codecs(VideoOperation.ENCODE)

    @property
    def video_encode_capabilities(self) -> dict[str, VideoProfileCapabilities]:
        """Per codec (FFmpeg's names: h264, hevc, av1, vp9), the supported encode profile with the largest
        maximum coded extent: what :meth:`alpha2.native_gpu.encode.copier.VideoEncodeExtent.resolve` reads."""
        best: dict[str, tuple[int, VideoProfileCapabilities]] = {}
        for support in self.video:
            if support.operation is not VideoOperation.ENCODE or not support.supported:
                continue
            name = "hevc" if support.codec is VideoCodec.H265 else support.codec.value
            for profile in support.profiles:
                if not profile.supported or profile.max_coded_extent is None:
                    continue
                area = profile.max_coded_extent[0] * profile.max_coded_extent[1]
                if name not in best or area > best[name][0]:
                    best[name] = (area, profile)
        return {name: profile for name, (_, profile) in best.items()}

    @property
    def memory_budget_bytes(self) -> int | None:
        """Device-local budget in bytes (sum over device-local heaps); None without VK_EXT_memory_budget."""
        if not self.memory_budget_supported:
            return None
        budgets = [h.budget_bytes for h in self.memory_heaps if h.device_local and h.budget_bytes is not None]
        return sum(budgets) if budgets else None

    @property
    def device_local_bytes(self) -> int:
        """Total size of device-local heaps."""
        return sum(h.size_bytes for h in self.memory_heaps if h.device_local)

    def external_memory_support(self, handle_type: ExternalHandleType) -> ExternalHandleSupport | None:
        """External memory support for a handle type, or None when not queried."""
        return next((e for e in self.external_memory if e.handle_type is handle_type), None)

    def external_semaphore_support(
        self, handle_type: ExternalHandleType, *, timeline: bool = False
    ) -> ExternalHandleSupport | None:
        """External semaphore support for a handle type (binary or timeline), or None when not queried."""
        return next(
            (e for e in self.external_semaphores if e.handle_type is handle_type and e.timeline == timeline),
            None,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description."""
        return {
            "index": self.index,
            "name": self.name,
            "device_type": self.device_type.value,
            "vendor": self.vendor,
            "vendor_id": self.vendor_id,
            "device_id": self.device_id,
            "api_version": str(self.api_version),
            "driver_version": self.driver_version,
            "driver_name": self.driver_name,
            "driver_info": self.driver_info,
            "uuid": self.uuid_str,
            "driver_uuid": str(_uuid.UUID(bytes=self.driver_uuid)) if self.driver_uuid else None,
            "luid": self.luid.hex() if self.luid else None,
            "drm_render_node": list(self.drm_render_node) if self.drm_render_node else None,
            "memory_heaps": [
                {
                    "index": h.index,
                    "size_bytes": h.size_bytes,
                    "device_local": h.device_local,
                    "budget_bytes": h.budget_bytes,
                    "usage_bytes": h.usage_bytes,
                }
                for h in self.memory_heaps
            ],
            "memory_budget_bytes": self.memory_budget_bytes,
            "queue_families": [
                {
                    "index": q.index,
                    "queue_count": q.queue_count,
                    "flags": list(q.flag_names),
                    "video_codec_operations": q.video_codec_operations,
                }
                for q in self.queue_families
            ],
            "decode_codecs": sorted(c.value for c in self.decode_codecs),
            "encode_codecs": sorted(c.value for c in self.encode_codecs),
            "video": [
                {
                    "codec": v.codec.value,
                    "operation": v.operation.value,
                    "queue_families": list(v.queue_families),
                    "supported": v.supported,
                    "problem": v.problem,
                    "profiles": [
                        {
                            "profile": p.profile,
                            "bit_depth": p.bit_depth,
                            "supported": p.supported,
                            "max_coded_extent": list(p.max_coded_extent) if p.max_coded_extent else None,
                            "max_dpb_slots": p.max_dpb_slots,
                            "max_active_reference_pictures": p.max_active_reference_pictures,
                            "max_level": p.max_level,
                            "reason": p.reason,
                        }
                        for p in v.profiles
                    ],
                }
                for v in self.video
            ],
            "external_memory": [_handle_dict(e) for e in self.external_memory],
            "external_semaphores": [_handle_dict(e) for e in self.external_semaphores],
            "timeline_semaphores": self.timeline_semaphores,
            "synchronization2": self.synchronization2,
            "sampler_ycbcr_conversion": self.sampler_ycbcr_conversion,
            "instance_layers": [
                {
                    "name": la.name,
                    "spec_version": str(la.spec_version),
                    "implementation_version": la.implementation_version,
                }
                for la in self.instance_layers
            ],
            "problems": list(self.problems),
            "error": self.error,
        }


def _handle_dict(e: ExternalHandleSupport) -> dict[str, Any]:
    return {
        "handle_type": e.handle_type.value,
        "timeline": e.timeline,
        "exportable": e.exportable,
        "importable": e.importable,
        "reason": e.reason,
    }


# --------------------------------------------------------------------------------------------------
# Queries

_INSTANCE_EXTENSIONS = (
    "VK_KHR_get_physical_device_properties2",
    "VK_KHR_external_memory_capabilities",
    "VK_KHR_external_semaphore_capabilities",
)

# sTypes (raw ints: some of these structs are newer than the vulkan package's headers).
_ST_PROPERTIES_2 = 1000059001
_ST_ID_PROPERTIES = 1000071004
_ST_DRIVER_PROPERTIES = 1000196000
_ST_DRM_PROPERTIES = 1000353000
_ST_MEMORY_PROPERTIES_2 = 1000059006
_ST_MEMORY_BUDGET = 1000237000
_ST_QUEUE_FAMILY_PROPERTIES_2 = 1000059005
_ST_QUEUE_FAMILY_VIDEO = 1000023012
_ST_FEATURES_2 = 1000059000
_ST_TIMELINE_FEATURES = 1000207000
_ST_SYNC2_FEATURES = 1000314007
_ST_YCBCR_FEATURES = 1000156004
_ST_EXTERNAL_BUFFER_INFO = 1000071002
_ST_EXTERNAL_BUFFER_PROPERTIES = 1000071003
_ST_EXTERNAL_SEMAPHORE_INFO = 1000076000
_ST_EXTERNAL_SEMAPHORE_PROPERTIES = 1000076001
_ST_SEMAPHORE_TYPE_CREATE_INFO = 1000207002
_ST_VIDEO_PROFILE_INFO = 1000023000
_ST_VIDEO_CAPABILITIES = 1000023001
_ST_VIDEO_DECODE_CAPABILITIES = 1000024001
_ST_VIDEO_ENCODE_CAPABILITIES = 1000299003

_CHROMA_420 = 0x2
_BIT_DEPTH_FLAG = {8: 0x1, 10: 0x4, 12: 0x10}


@dataclass(frozen=True)
class _CodecOp:
    codec: VideoCodec
    operation: VideoOperation
    bit: int
    extension: str
    profile_stype: int
    caps_stype: int
    profiles: tuple[tuple[str, int, int], ...]  # (name, StdVideo profile value, bit depth)


_CODEC_OPS = (
    _CodecOp(
        VideoCodec.H264,
        VideoOperation.DECODE,
        0x1,
        "VK_KHR_video_decode_h264",
        1000040003,
        1000040000,
        (("Baseline", 66, 8), ("Main", 77, 8), ("High", 100, 8)),
    ),
    _CodecOp(
        VideoCodec.H265,
        VideoOperation.DECODE,
        0x2,
        "VK_KHR_video_decode_h265",
        1000187003,
        1000187000,
        (("Main", 1, 8), ("Main 10", 2, 10)),
    ),
    _CodecOp(
        VideoCodec.AV1,
        VideoOperation.DECODE,
        0x4,
        "VK_KHR_video_decode_av1",
        1000512003,
        1000512000,
        (("Main", 0, 8), ("Main", 0, 10)),
    ),
    _CodecOp(
        VideoCodec.VP9,
        VideoOperation.DECODE,
        0x8,
        "VK_KHR_video_decode_vp9",
        1000514003,
        1000514001,
        (("Profile 0", 0, 8), ("Profile 2", 2, 10)),
    ),
    _CodecOp(
        VideoCodec.H264,
        VideoOperation.ENCODE,
        0x10000,
        "VK_KHR_video_encode_h264",
        1000038007,
        1000038000,
        (("Main", 77, 8), ("High", 100, 8)),
    ),
    _CodecOp(
        VideoCodec.H265,
        VideoOperation.ENCODE,
        0x20000,
        "VK_KHR_video_encode_h265",
        1000039007,
        1000039000,
        (("Main", 1, 8), ("Main 10", 2, 10)),
    ),
    _CodecOp(
        VideoCodec.AV1,
        VideoOperation.ENCODE,
        0x40000,
        "VK_KHR_video_encode_av1",
        1000513005,
        1000513000,
        (("Main", 0, 8), ("Main", 0, 10)),
    ),
)

_MEMORY_HANDLES = (
    (ExternalHandleType.OPAQUE_FD, 0x1, "VK_KHR_external_memory_fd"),
    (ExternalHandleType.DMA_BUF, 0x200, "VK_EXT_external_memory_dma_buf"),
)
_SEMAPHORE_HANDLES = (
    (ExternalHandleType.OPAQUE_FD, 0x1, False),
    (ExternalHandleType.OPAQUE_FD, 0x1, True),
    (ExternalHandleType.SYNC_FD, 0x10, False),
)


def vulkan_instance_layers(api: VulkanApi | None = None) -> tuple[VulkanLayerVersion, ...]:
    """The instance layers the loader offers, with their versions."""
    api = api if api is not None else vulkan_api()
    ffi = api.ffi
    count = ffi.new("uint32_t*")
    check(api.lib.vkEnumerateInstanceLayerProperties(count, ffi.NULL), "vkEnumerateInstanceLayerProperties")
    props = ffi.new("VkLayerProperties[]", count[0])
    check(api.lib.vkEnumerateInstanceLayerProperties(count, props), "vkEnumerateInstanceLayerProperties")
    return tuple(
        VulkanLayerVersion(
            name=cstr(api, props[i].layerName),
            spec_version=VulkanVersion.from_packed(props[i].specVersion),
            implementation_version=int(props[i].implementationVersion),
            description=cstr(api, props[i].description),
        )
        for i in range(count[0])
    )


class _Query:
    """Queries of one physical device; each guarded so one failure becomes a problem, not a drop."""

    def __init__(self, api: VulkanApi, instance: Instance, physical_device: Any) -> None:
        self.api = api
        self.ffi = api.ffi
        self.fn = instance.fn
        self.pd = physical_device
        self.problems: list[str] = []
        self.extensions: frozenset[str] = frozenset()
        self.api_version = 0

    def guard(self, what: str, query: Callable[[], Any], default: Any) -> Any:
        try:
            return query()
        except Exception as exc:
            self.problems.append(f"{what}: {exc}")
            return default

    def has(self, extension: str, core: int | None = None) -> bool:
        return extension in self.extensions or (core is not None and self.api_version >= core)

    def raw_struct(self, stype: int, size: int = 512) -> Any:
        buf = self.ffi.new("uint8_t[]", size)
        self.ffi.cast("VkBaseOutStructure*", buf).sType = stype
        return buf

    def device_extensions(self) -> frozenset[str]:
        ffi = self.ffi
        count = ffi.new("uint32_t*")
        check(
            self.api.lib.vkEnumerateDeviceExtensionProperties(self.pd, ffi.NULL, count, ffi.NULL),
            "extensions",
        )
        props = ffi.new("VkExtensionProperties[]", count[0])
        check(
            self.api.lib.vkEnumerateDeviceExtensionProperties(self.pd, ffi.NULL, count, props), "extensions"
        )
        return frozenset(cstr(self.api, props[i].extensionName) for i in range(count[0]))


_V11 = (1 << 22) | (1 << 12)
_V12 = (1 << 22) | (2 << 12)
_V13 = (1 << 22) | (3 << 12)


def _describe(
    api: VulkanApi, instance: Instance, pd: Any, index: int, layers: tuple[VulkanLayerVersion, ...]
) -> VulkanCandidate:
    ffi = api.ffi
    q = _Query(api, instance, pd)
    basic = ffi.new("VkPhysicalDeviceProperties*")
    api.lib.vkGetPhysicalDeviceProperties(pd, basic)
    q.api_version = int(basic.apiVersion)
    name = cstr(api, basic.deviceName)
    vendor_id = int(basic.vendorID)
    fields: dict[str, Any] = {
        "index": index,
        "name": name,
        "device_type": AdapterType.from_vulkan(basic.deviceType),
        "vendor_id": vendor_id,
        "device_id": int(basic.deviceID),
        "api_version": VulkanVersion.from_packed(basic.apiVersion),
        "driver_version_raw": int(basic.driverVersion),
        "driver_version": decode_driver_version(vendor_id, int(basic.driverVersion)),
        "instance_layers": layers,
    }
    q.extensions = q.guard("device extensions", q.device_extensions, frozenset())
    fields["extensions"] = q.extensions
    fields.update(q.guard("identity properties", lambda: _identity(q), {}))
    fields.update(q.guard("memory properties", lambda: _memory(q), {}))
    families = q.guard("queue families", lambda: _queue_families(q), ())
    fields["queue_families"] = families
    fields.update(q.guard("features", lambda: _features(q), {}))
    fields["external_memory"] = q.guard("external memory", lambda: _external_memory(q), ())
    fields["external_semaphores"] = q.guard("external semaphores", lambda: _external_semaphores(q), ())
    fields["video"] = q.guard("video capabilities", lambda: _video(q, families), ())
    fields["problems"] = tuple(q.problems)
    return VulkanCandidate(**fields)


def _identity(q: _Query) -> dict[str, Any]:
    ffi = q.ffi
    keep: list[Any] = []
    props = ffi.new("VkPhysicalDeviceProperties2*")
    props.sType = _ST_PROPERTIES_2
    chain = props
    id_props = drv = drm = None
    if q.has("VK_KHR_external_memory", _V11) or q.has("VK_KHR_external_semaphore"):
        id_props = ffi.new("VkPhysicalDeviceIDProperties*", {"sType": _ST_ID_PROPERTIES})
        chain.pNext, chain = id_props, id_props
    if q.has("VK_KHR_driver_properties", _V12):
        drv = ffi.new("VkPhysicalDeviceDriverProperties*", {"sType": _ST_DRIVER_PROPERTIES})
        chain.pNext, chain = drv, drv
    if q.has("VK_EXT_physical_device_drm"):
        drm = ffi.new("VkPhysicalDeviceDrmPropertiesEXT*", {"sType": _ST_DRM_PROPERTIES})
        chain.pNext, chain = drm, drm
    keep += [id_props, drv, drm]
    q.fn.vkGetPhysicalDeviceProperties2(q.pd, props)
    out: dict[str, Any] = {}
    if id_props is not None:
        out["uuid"] = bytes(ffi.buffer(id_props.deviceUUID, 16))
        out["driver_uuid"] = bytes(ffi.buffer(id_props.driverUUID, 16))
        if id_props.deviceLUIDValid:
            out["luid"] = bytes(ffi.buffer(id_props.deviceLUID, 8))
    if drv is not None:
        out["driver_name"] = cstr(q.api, drv.driverName)
        out["driver_info"] = cstr(q.api, drv.driverInfo)
    if drm is not None:
        if drm.hasRender:
            out["drm_render_node"] = (int(drm.renderMajor), int(drm.renderMinor))
        if drm.hasPrimary:
            out["drm_primary_node"] = (int(drm.primaryMajor), int(drm.primaryMinor))
    return out


def _memory(q: _Query) -> dict[str, Any]:
    ffi = q.ffi
    props = ffi.new("VkPhysicalDeviceMemoryProperties2*", {"sType": _ST_MEMORY_PROPERTIES_2})
    budget = None
    if q.has("VK_EXT_memory_budget"):
        budget = ffi.new("VkPhysicalDeviceMemoryBudgetPropertiesEXT*", {"sType": _ST_MEMORY_BUDGET})
        props.pNext = budget
    q.fn.vkGetPhysicalDeviceMemoryProperties2(q.pd, props)
    mp = props.memoryProperties
    heaps = tuple(
        VulkanMemoryHeap(
            index=i,
            size_bytes=int(mp.memoryHeaps[i].size),
            device_local=bool(mp.memoryHeaps[i].flags & 0x1),
            budget_bytes=int(budget.heapBudget[i]) if budget is not None else None,
            usage_bytes=int(budget.heapUsage[i]) if budget is not None else None,
        )
        for i in range(mp.memoryHeapCount)
    )
    return {"memory_heaps": heaps, "memory_budget_supported": budget is not None}


def _queue_families(q: _Query) -> tuple[VulkanQueueFamily, ...]:
    ffi = q.ffi
    count = ffi.new("uint32_t*")
    q.fn.vkGetPhysicalDeviceQueueFamilyProperties2(q.pd, count, ffi.NULL)
    n = count[0]
    props = ffi.new("VkQueueFamilyProperties2[]", n)
    video = ffi.new("VkQueueFamilyVideoPropertiesKHR[]", max(n, 1))
    with_video = "VK_KHR_video_queue" in q.extensions
    for i in range(n):
        props[i].sType = _ST_QUEUE_FAMILY_PROPERTIES_2
        if with_video:
            video[i].sType = _ST_QUEUE_FAMILY_VIDEO
            props[i].pNext = ffi.addressof(video, i)
    q.fn.vkGetPhysicalDeviceQueueFamilyProperties2(q.pd, count, props)
    return tuple(
        VulkanQueueFamily(
            index=i,
            queue_count=int(props[i].queueFamilyProperties.queueCount),
            flags=int(props[i].queueFamilyProperties.queueFlags),
            video_codec_operations=int(video[i].videoCodecOperations) if with_video else 0,
            timestamp_valid_bits=int(props[i].queueFamilyProperties.timestampValidBits),
        )
        for i in range(count[0])
    )


def _features(q: _Query) -> dict[str, bool]:
    ffi = q.ffi
    feats = ffi.new("VkPhysicalDeviceFeatures2*", {"sType": _ST_FEATURES_2})
    chain: Any = feats
    timeline = sync2 = ycbcr = None
    if q.has("VK_KHR_timeline_semaphore", _V12):
        timeline = ffi.new("VkPhysicalDeviceTimelineSemaphoreFeatures*", {"sType": _ST_TIMELINE_FEATURES})
        chain.pNext, chain = timeline, timeline
    if q.has("VK_KHR_synchronization2", _V13):
        sync2 = ffi.new("VkPhysicalDeviceSynchronization2Features*", {"sType": _ST_SYNC2_FEATURES})
        chain.pNext, chain = sync2, sync2
    if q.has("VK_KHR_sampler_ycbcr_conversion", _V11):
        ycbcr = ffi.new("VkPhysicalDeviceSamplerYcbcrConversionFeatures*", {"sType": _ST_YCBCR_FEATURES})
        chain.pNext, chain = ycbcr, ycbcr
    q.fn.vkGetPhysicalDeviceFeatures2(q.pd, feats)
    return {
        "timeline_semaphores": bool(timeline is not None and timeline.timelineSemaphore),
        "synchronization2": bool(sync2 is not None and sync2.synchronization2),
        "sampler_ycbcr_conversion": bool(ycbcr is not None and ycbcr.samplerYcbcrConversion),
    }


def _external_memory(q: _Query) -> tuple[ExternalHandleSupport, ...]:
    ffi = q.ffi
    out = []
    for handle_type, bit, extension in _MEMORY_HANDLES:
        if extension not in q.extensions:
            out.append(ExternalHandleSupport(handle_type, False, False, reason=f"{extension} missing"))
            continue
        info = ffi.new(
            "VkPhysicalDeviceExternalBufferInfo*",
            {"sType": _ST_EXTERNAL_BUFFER_INFO, "usage": 0x1 | 0x2 | 0x20 | 0x80, "handleType": bit},
        )
        props = ffi.new("VkExternalBufferProperties*", {"sType": _ST_EXTERNAL_BUFFER_PROPERTIES})
        q.fn.vkGetPhysicalDeviceExternalBufferProperties(q.pd, info, props)
        features = int(props.externalMemoryProperties.externalMemoryFeatures)
        out.append(ExternalHandleSupport(handle_type, bool(features & 0x2), bool(features & 0x4)))
    return tuple(out)


def _external_semaphores(q: _Query) -> tuple[ExternalHandleSupport, ...]:
    ffi = q.ffi
    out = []
    for handle_type, bit, timeline in _SEMAPHORE_HANDLES:
        if "VK_KHR_external_semaphore_fd" not in q.extensions:
            reason = "VK_KHR_external_semaphore_fd missing"
            out.append(ExternalHandleSupport(handle_type, False, False, timeline=timeline, reason=reason))
            continue
        type_info = ffi.new(
            "VkSemaphoreTypeCreateInfo*",
            {"sType": _ST_SEMAPHORE_TYPE_CREATE_INFO, "semaphoreType": 1, "initialValue": 0},
        )
        info = ffi.new(
            "VkPhysicalDeviceExternalSemaphoreInfo*",
            {"sType": _ST_EXTERNAL_SEMAPHORE_INFO, "handleType": bit},
        )
        if timeline:
            if not q.has("VK_KHR_timeline_semaphore", _V12):
                out.append(
                    ExternalHandleSupport(
                        handle_type, False, False, timeline=True, reason="no timeline semaphores"
                    )
                )
                continue
            info.pNext = type_info
        props = ffi.new("VkExternalSemaphoreProperties*", {"sType": _ST_EXTERNAL_SEMAPHORE_PROPERTIES})
        q.fn.vkGetPhysicalDeviceExternalSemaphoreProperties(q.pd, info, props)
        features = int(props.externalSemaphoreFeatures)
        out.append(
            ExternalHandleSupport(handle_type, bool(features & 0x1), bool(features & 0x2), timeline=timeline)
        )
    return tuple(out)


def _video(q: _Query, families: tuple[VulkanQueueFamily, ...]) -> tuple[VideoCodecSupport, ...]:
    if "VK_KHR_video_queue" not in q.extensions:
        return ()
    out = []
    for op in _CODEC_OPS:
        fams = tuple(f.index for f in families if f.video_codec_operations & op.bit)
        if not fams:
            continue
        queue_ext = (
            "VK_KHR_video_decode_queue"
            if op.operation is VideoOperation.DECODE
            else "VK_KHR_video_encode_queue"
        )
        missing = [e for e in (queue_ext, op.extension) if e not in q.extensions]
        if missing:
            out.append(
                VideoCodecSupport(op.codec, op.operation, fams, problem=f"{', '.join(missing)} missing")
            )
            continue
        profiles = []
        problem = None
        for profile_name, std_profile, depth in op.profiles:
            try:
                profiles.append(_video_profile(q, op, profile_name, std_profile, depth))
            except Exception as exc:
                problem = f"{op.codec.value} {op.operation.value} {profile_name}: {exc}"
                q.problems.append(problem)
        out.append(VideoCodecSupport(op.codec, op.operation, fams, tuple(profiles), problem))
    return tuple(out)


def _video_profile(
    q: _Query, op: _CodecOp, profile_name: str, std_profile: int, depth: int
) -> VideoProfileCapabilities:
    ffi = q.ffi
    # Codec profile structs all start {sType, pNext, <32-bit profile>, <32-bit second field>}: the
    # H.264 decode layout fits every codec's, including those newer than the package's headers.
    codec_profile_buf = q.raw_struct(op.profile_stype, 64)
    codec_profile = ffi.cast("VkVideoDecodeH264ProfileInfoKHR*", codec_profile_buf)
    codec_profile.stdProfileIdc = std_profile
    codec_profile.pictureLayout = 0  # progressive (H.264 decode); 0 film grain (AV1); unused elsewhere
    depth_flag = _BIT_DEPTH_FLAG[depth]
    profile = ffi.new(
        "VkVideoProfileInfoKHR*",
        {
            "sType": _ST_VIDEO_PROFILE_INFO,
            "pNext": codec_profile_buf,
            "videoCodecOperation": op.bit,
            "chromaSubsampling": _CHROMA_420,
            "lumaBitDepth": depth_flag,
            "chromaBitDepth": depth_flag,
        },
    )
    op_caps = q.raw_struct(
        _ST_VIDEO_DECODE_CAPABILITIES
        if op.operation is VideoOperation.DECODE
        else _ST_VIDEO_ENCODE_CAPABILITIES,
        256,
    )
    codec_caps = q.raw_struct(op.caps_stype, 1024)
    ffi.cast("VkBaseOutStructure*", op_caps).pNext = ffi.cast("VkBaseOutStructure*", codec_caps)
    caps = ffi.new("VkVideoCapabilitiesKHR*", {"sType": _ST_VIDEO_CAPABILITIES, "pNext": op_caps})
    result = int(q.fn.vkGetPhysicalDeviceVideoCapabilitiesKHR(q.pd, profile, caps))
    if result != 0:
        return VideoProfileCapabilities(
            op.codec, op.operation, profile_name, depth, supported=False, reason=result_name(result)
        )
    words = ffi.cast("uint32_t*", codec_caps)
    # maxLevel follows the header in decode caps; encode caps have 32-bit flags first.
    level = int(words[4] if op.operation is VideoOperation.DECODE else words[5])
    return VideoProfileCapabilities(
        op.codec,
        op.operation,
        profile_name,
        depth,
        supported=True,
        max_coded_extent=(int(caps.maxCodedExtent.width), int(caps.maxCodedExtent.height)),
        min_coded_extent=(int(caps.minCodedExtent.width), int(caps.minCodedExtent.height)),
        max_dpb_slots=int(caps.maxDpbSlots),
        max_active_reference_pictures=int(caps.maxActiveReferencePictures),
        max_level=level,
    )


def vulkan_candidates() -> list[VulkanCandidate]:
    """Every Vulkan physical device in loader enumeration order, described without opening a device.

    Returns:
        One candidate per physical device (an empty list when the loader has drivers but no device).
        A device whose description fails is listed with ``error`` set.

    Raises:
        VulkanUnavailableError: no Vulkan loader, or the loader finds no driver.
    """
    api = vulkan_api()
    with Instance(api, extensions=_INSTANCE_EXTENSIONS) as instance:
        try:
            layers = vulkan_instance_layers(api)
        except Exception:
            layers = ()
        devices = instance.physical_devices()
        out: list[VulkanCandidate] = []
        for index, pd in enumerate(devices):
            try:
                out.append(_describe(api, instance, pd, index, layers))
            except Exception as exc:
                out.append(
                    VulkanCandidate(
                        index=index,
                        name=f"<physical device {index}>",
                        instance_layers=layers,
                        error=f"{type(exc).__name__}: {exc}",
                    )
                )
        return out


# --------------------------------------------------------------------------------------------------
# Memory budget


def adapter_memory_budget(adapter: Any, candidates: Iterable[VulkanCandidate] | None = None) -> int | None:
    """The device-local memory budget in bytes, or None where the API reports none.

    Args:
        adapter: a :class:`VulkanCandidate`, a ranked entry holding one, :class:`WgpuAdapterFacts`, or a
            wgpu adapter (matched to a Vulkan candidate by UUID, else vendor id, device id and name:
            WebGPU itself reports no budget).
        candidates: Vulkan candidates to match against (default: :func:`vulkan_candidates`, when a loader
            is there).
    """
    inner = getattr(adapter, "adapter", None)
    if inner is not None and hasattr(adapter, "rank"):
        adapter = inner  # a RankedAdapter
    if isinstance(adapter, VulkanCandidate):
        return adapter.memory_budget_bytes
    candidate = getattr(adapter, "candidate", None)
    if isinstance(candidate, VulkanCandidate):  # a SharedVulkanContext
        return candidate.memory_budget_bytes
    if isinstance(adapter, WgpuAdapterFacts) and isinstance(adapter.vulkan_candidate, VulkanCandidate):
        return adapter.vulkan_candidate.memory_budget_bytes
    if not isinstance(adapter, WgpuAdapterFacts) and getattr(adapter, "info", None) is None:
        raise InvalidInputError(
            f"adapter_memory_budget takes a VulkanCandidate, WgpuAdapterFacts or a wgpu adapter, "
            f"got {type(adapter).__name__}"
        )
    if candidates is None:
        try:
            candidates = vulkan_candidates()
        except VulkanUnavailableError:
            return None
    cand_list = list(candidates)
    facts = adapter if isinstance(adapter, WgpuAdapterFacts) else wgpu_adapter_facts(adapter, 0, cand_list)
    match = facts.vulkan_candidate
    if match is None:
        match, _ = match_vulkan_candidate(facts, cand_list)
    return match.memory_budget_bytes if isinstance(match, VulkanCandidate) else None
