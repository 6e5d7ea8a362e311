"""Every Vulkan physical device as a :class:`VulkanCandidate`, read without opening a device.

:func:`vulkan_candidates` lists the loader's physical devices in enumeration order (the index FFmpeg's
Vulkan device string takes) with what alpha2 needs to choose one: identity (UUIDs, LUID, DRM node),
driver and API versions, memory heaps and budget, queue families, video decode/encode per codec with
each profile's capabilities, external memory and semaphore handle types, timeline semaphores, and the
instance layers. Each query is guarded: a candidate whose query fails is listed with the reason
(``problems``, or ``error`` when it cannot be described at all), never dropped.

The parts of a candidate live in :mod:`.properties` (layers, heaps, queue families, external handles)
and :mod:`.video` (video support and its query); they are re-exported here. The Vulkan calls are
:class:`alpha2.native_gpu._vk.query.PhysicalDevice`'s; this module turns their plain answers into
candidates.

Importing this module needs no Vulkan loader; calling :func:`vulkan_candidates` without one raises
:class:`~alpha2.native_gpu._vk.core.VulkanUnavailableError`.
"""

from __future__ import annotations

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
    API_VERSION_1_1,
    API_VERSION_1_2,
    Instance,
    VulkanApi,
    VulkanUnavailableError,
    VulkanVersion,
    vulkan_api,
)
from alpha2.native_gpu._vk.query import (
    Feature,
    HandleType,
    MemoryHeapFlag,
    PhysicalDevice,
    askable_features,
    instance_layers,
    physical_devices,
)
from alpha2.native_gpu.device.properties import (
    ExternalHandleSupport,
    ExternalHandleType,
    VulkanLayerVersion,
    VulkanMemoryHeap,
    VulkanQueueFamily,
    decode_driver_version,
    vendor_name,
)
from alpha2.native_gpu.device.video import (
    VideoCodecSupport,
    VideoOperation,
    VideoProfileCapabilities,
    video_support,
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
# Enumeration

_INSTANCE_EXTENSIONS = (
    "VK_KHR_get_physical_device_properties2",
    "VK_KHR_external_memory_capabilities",
    "VK_KHR_external_semaphore_capabilities",
)
# (handle type, the device extension it needs) for buffer memory.
_MEMORY_HANDLES = (
    (ExternalHandleType.OPAQUE_FD, "VK_KHR_external_memory_fd"),
    (ExternalHandleType.DMA_BUF, "VK_EXT_external_memory_dma_buf"),
)
# (handle type, timeline) for semaphores.
_SEMAPHORE_HANDLES = (
    (ExternalHandleType.OPAQUE_FD, False),
    (ExternalHandleType.OPAQUE_FD, True),
    (ExternalHandleType.SYNC_FD, False),
)


def vulkan_instance_layers(api: VulkanApi | None = None) -> tuple[VulkanLayerVersion, ...]:
    """The instance layers the loader offers, with their versions."""
    return tuple(
        VulkanLayerVersion(
            name=layer.name,
            spec_version=VulkanVersion.from_packed(layer.spec_version),
            implementation_version=layer.implementation_version,
            description=layer.description,
        )
        for layer in instance_layers(api)
    )


class _Describer:
    """Queries of one physical device; each guarded so one failure becomes a problem, not a drop."""

    def __init__(self, device: PhysicalDevice) -> None:
        self.device = device
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

    def identity(self) -> dict[str, Any]:
        ident = self.device.identity(
            ids=self.has("VK_KHR_external_memory", API_VERSION_1_1) or self.has("VK_KHR_external_semaphore"),
            driver=self.has("VK_KHR_driver_properties", API_VERSION_1_2),
            drm=self.has("VK_EXT_physical_device_drm"),
        )
        return {
            "uuid": ident.uuid,
            "driver_uuid": ident.driver_uuid,
            "luid": ident.luid,
            "driver_name": ident.driver_name,
            "driver_info": ident.driver_info,
            "drm_render_node": ident.drm_render_node,
            "drm_primary_node": ident.drm_primary_node,
        }

    def memory(self) -> dict[str, Any]:
        mem = self.device.memory(budget=self.has("VK_EXT_memory_budget"))
        heaps = tuple(
            VulkanMemoryHeap(
                index=i,
                size_bytes=heap.size_bytes,
                device_local=bool(heap.flags & MemoryHeapFlag.DEVICE_LOCAL),
                budget_bytes=heap.budget_bytes,
                usage_bytes=heap.usage_bytes,
            )
            for i, heap in enumerate(mem.heaps)
        )
        return {"memory_heaps": heaps, "memory_budget_supported": mem.budget_reported}

    def queue_families(self) -> tuple[VulkanQueueFamily, ...]:
        families = self.device.queue_families(video="VK_KHR_video_queue" in self.extensions)
        return tuple(
            VulkanQueueFamily(
                index=i,
                queue_count=f.queue_count,
                flags=int(f.flags),
                video_codec_operations=f.video_codec_operations,
                timestamp_valid_bits=f.timestamp_valid_bits,
            )
            for i, f in enumerate(families)
        )

    def features(self) -> dict[str, bool]:
        supported = self.device.features(askable_features(self.api_version, self.extensions))
        return {
            "timeline_semaphores": Feature.TIMELINE_SEMAPHORE in supported,
            "synchronization2": Feature.SYNCHRONIZATION2 in supported,
            "sampler_ycbcr_conversion": Feature.SAMPLER_YCBCR_CONVERSION in supported,
        }

    def external_memory(self) -> tuple[ExternalHandleSupport, ...]:
        out = []
        for handle_type, extension in _MEMORY_HANDLES:
            if extension not in self.extensions:
                out.append(ExternalHandleSupport(handle_type, False, False, reason=f"{extension} missing"))
                continue
            got = self.device.external_buffer_features(HandleType[handle_type.name])
            out.append(ExternalHandleSupport(handle_type, got.exportable, got.importable))
        return tuple(out)

    def external_semaphores(self) -> tuple[ExternalHandleSupport, ...]:
        out = []
        for handle_type, timeline in _SEMAPHORE_HANDLES:
            reason = None
            if "VK_KHR_external_semaphore_fd" not in self.extensions:
                reason = "VK_KHR_external_semaphore_fd missing"
            elif timeline and not self.has("VK_KHR_timeline_semaphore", API_VERSION_1_2):
                reason = "no timeline semaphores"
            if reason is not None:
                out.append(ExternalHandleSupport(handle_type, False, False, timeline=timeline, reason=reason))
                continue
            got = self.device.external_semaphore_features(HandleType[handle_type.name], timeline=timeline)
            out.append(ExternalHandleSupport(handle_type, got.exportable, got.importable, timeline=timeline))
        return tuple(out)


def _describe(device: PhysicalDevice, index: int, layers: tuple[VulkanLayerVersion, ...]) -> VulkanCandidate:
    d = _Describer(device)
    basic = device.properties()
    d.api_version = basic.api_version
    fields: dict[str, Any] = {
        "index": index,
        "name": basic.name,
        "device_type": AdapterType.from_vulkan(basic.device_type),
        "vendor_id": basic.vendor_id,
        "device_id": basic.device_id,
        "api_version": VulkanVersion.from_packed(basic.api_version),
        "driver_version_raw": basic.driver_version,
        "driver_version": decode_driver_version(basic.vendor_id, basic.driver_version),
        "instance_layers": layers,
    }
    d.extensions = d.guard("device extensions", device.extensions, frozenset())
    fields["extensions"] = d.extensions
    fields.update(d.guard("identity properties", d.identity, {}))
    fields.update(d.guard("memory properties", d.memory, {}))
    families = d.guard("queue families", d.queue_families, ())
    fields["queue_families"] = families
    fields.update(d.guard("features", d.features, {}))
    fields["external_memory"] = d.guard("external memory", d.external_memory, ())
    fields["external_semaphores"] = d.guard("external semaphores", d.external_semaphores, ())
    fields["video"] = d.guard(
        "video capabilities", lambda: video_support(device, d.extensions, families, d.problems), ()
    )
    fields["problems"] = tuple(d.problems)
    return VulkanCandidate(**fields)


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
        out: list[VulkanCandidate] = []
        for index, device in enumerate(physical_devices(instance)):
            try:
                out.append(_describe(device, index, layers))
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
