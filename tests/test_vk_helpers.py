"""The typed helpers of alpha2.native_gpu._vk: constants by name, physical-device queries, device creation,
timeline semaphores and one-shot command batches, on lavapipe (and against fake drivers)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alpha2.gpu.adapters import VideoCodec
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.sync import WaitStatus
from alpha2.native_gpu._vk import commands, structs, sync
from alpha2.native_gpu._vk.core import Instance, VulkanApi, vulkan_api
from alpha2.native_gpu._vk.device import VulkanDeviceState, open_device
from alpha2.native_gpu._vk.query import (
    Feature,
    HandleType,
    MemoryHeapFlag,
    PhysicalDevice,
    QueueFlag,
    instance_layers,
    physical_devices,
)
from alpha2.native_gpu._vk.video import CodecOperation, VideoProfile, codec_operations, video_capabilities
from alpha2.native_gpu.device.candidates import VulkanCandidate, vulkan_candidates
from alpha2.native_gpu.device.shared import SharedVulkanContext

pytestmark = pytest.mark.vulkan

VK_DIR = Path(__file__).resolve().parent.parent / "alpha2" / "native_gpu" / "_vk"


@pytest.fixture(scope="module")
def api() -> VulkanApi:
    return vulkan_api()


# -- constants ----------------------------------------------------------------------------------------


def test_constants_come_from_the_vulkan_package(api: VulkanApi) -> None:
    vk = api.vk
    for name in (
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES",
        "VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO",
        "VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2",
        "VK_FORMAT_R8G8_UNORM",
    ):
        assert structs.constant(name, api) == getattr(vk, name)
    assert structs.constant("VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES") == 1000071004
    with pytest.raises(InvalidInputError, match="VK_NO_SUCH_THING"):
        structs.constant("VK_NO_SUCH_THING", api)


def test_constants_newer_than_the_package_follow_the_registry(api: VulkanApi) -> None:
    # Structure types: 1000000000 + (extension number - 1) * 1000 + offset, per extension.
    extension_numbers = {"DECODE_AV1": 513, "ENCODE_AV1": 514, "DECODE_VP9": 515}
    for name, value in structs.NEWER_THAN_PACKAGE.items():
        # Where a newer package has it, it must agree (then the entry here may go).
        assert getattr(api.vk, name, value) == value, name
        assert structs.constant(name, api) == value
        stem = next(s for s in extension_numbers if s in name)
        if name.startswith("VK_STRUCTURE_TYPE_"):
            assert (value - 1_000_000_000) // 1000 == extension_numbers[stem] - 1, name
        else:  # a VkVideoCodecOperationFlagBitsKHR value: a single bit
            assert value & (value - 1) == 0, name


def test_every_constant_named_in_vk_resolves(api: VulkanApi) -> None:
    """Every name _vk reads lazily (``vk.VK_*``, enum values, strings) exists: typos fail on CPU machines."""
    names: set[str] = set()
    for path in VK_DIR.glob("*.py"):
        text = path.read_text()
        names |= set(re.findall(r"\bvk\.(VK_[A-Z0-9_]*[A-Z0-9])\b", text))
        names |= set(re.findall(r'"(VK_[A-Z0-9_]*[A-Z0-9])"', text))
    names -= {"VK_SUCCESS", "VK_NOT_READY", "VK_TIMEOUT", "VK_ERROR_INCOMPATIBLE_DRIVER"}  # VkResult table
    assert len(names) > 50
    for name in sorted(names):
        assert isinstance(structs.constant(name, api), int), name
    for enum_type in (commands.ImageFormat, commands.ImageLayout, commands.Access):
        for member in enum_type:
            assert member.vk_value(api) == getattr(api.vk, member.value)
    assert commands.ImageLayout.SHADER_READ_ONLY.vk_value(api) == 5
    assert commands.Access.NONE.vk_value(api) == 0


def test_flag_enums_match_the_package(api: VulkanApi) -> None:
    vk = api.vk
    queue_bits = {
        QueueFlag.GRAPHICS: "VK_QUEUE_GRAPHICS_BIT",
        QueueFlag.COMPUTE: "VK_QUEUE_COMPUTE_BIT",
        QueueFlag.TRANSFER: "VK_QUEUE_TRANSFER_BIT",
        QueueFlag.SPARSE_BINDING: "VK_QUEUE_SPARSE_BINDING_BIT",
        QueueFlag.PROTECTED: "VK_QUEUE_PROTECTED_BIT",  # missing from the package's 1.3.275 headers
        QueueFlag.VIDEO_DECODE: "VK_QUEUE_VIDEO_DECODE_BIT_KHR",
        QueueFlag.VIDEO_ENCODE: "VK_QUEUE_VIDEO_ENCODE_BIT_KHR",
        QueueFlag.OPTICAL_FLOW: "VK_QUEUE_OPTICAL_FLOW_BIT_NV",
    }
    assert set(queue_bits) == set(QueueFlag)
    checked = [flag for flag, name in queue_bits.items() if hasattr(vk, name)]
    assert len(checked) >= 7
    for flag in checked:
        assert flag.value == getattr(vk, queue_bits[flag]), flag
    assert MemoryHeapFlag.DEVICE_LOCAL == vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
    assert HandleType.OPAQUE_FD.memory_bit(api) == vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT == 0x1
    assert HandleType.DMA_BUF.memory_bit(api) == 0x200
    assert HandleType.SYNC_FD.semaphore_bit(api) == vk.VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT == 0x10
    # Unknown bits survive the conversion (a newer driver's flags are kept, not dropped).
    assert int(QueueFlag(0x7 | 0x200)) == 0x207


def test_link_chains_through_pnext(api: VulkanApi) -> None:
    ffi = api.ffi
    head = ffi.new("VkPhysicalDeviceFeatures2*")
    a = ffi.new("VkPhysicalDeviceTimelineSemaphoreFeatures*")
    b = ffi.new("VkPhysicalDeviceSynchronization2Features*")
    assert structs.link(head, a, None, b) is head
    assert head.pNext == ffi.cast("void*", a) and a.pNext == ffi.cast("void*", b) and b.pNext == ffi.NULL
    raw = structs.raw_struct(api, 1234, 64)
    assert ffi.cast("VkBaseOutStructure*", raw).sType == 1234 and len(raw) == 64


# -- queries on lavapipe ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def instance(api: VulkanApi) -> Iterator[Instance]:
    with Instance(api, extensions=("VK_KHR_get_physical_device_properties2",)) as inst:
        yield inst


@pytest.fixture(scope="module")
def candidate() -> VulkanCandidate:
    return vulkan_candidates()[0]


@pytest.fixture(scope="module")
def device(instance: Instance) -> PhysicalDevice:
    devices = physical_devices(instance)
    assert devices and all(isinstance(d, PhysicalDevice) for d in devices)
    return devices[0]


def test_queries_return_sane_plain_values(device: PhysicalDevice, candidate: VulkanCandidate) -> None:
    props = device.properties()
    assert props.name == candidate.name and props.vendor_id == candidate.vendor_id
    assert props.api_version >> 22 == 1 and 0 <= props.device_type <= 4
    extensions = device.extensions()
    assert extensions == candidate.extensions and all(isinstance(e, str) for e in extensions)
    ident = device.identity(ids=True, driver=True)
    assert ident.uuid == candidate.uuid and ident.uuid is not None and len(ident.uuid) == 16
    assert ident.driver_uuid is not None and len(ident.driver_uuid) == 16
    assert ident.driver_name == candidate.driver_name != ""
    assert device.identity(ids=False).uuid is None  # nothing chained, nothing read
    memory = device.memory(budget=False)
    assert memory.heaps and not memory.budget_reported and memory.heaps[0].budget_bytes is None
    assert any(h.flags & MemoryHeapFlag.DEVICE_LOCAL and h.size_bytes > 0 for h in memory.heaps)
    types = device.memory_types()
    assert types and all(0 <= heap < len(memory.heaps) for _flags, heap in types)
    families = device.queue_families()
    assert [f.queue_count for f in families] == [f.queue_count for f in candidate.queue_families]
    assert all(isinstance(f.flags, QueueFlag) for f in families)
    assert any(f.flags & QueueFlag.COMPUTE for f in families)


@pytest.mark.parametrize("timeline", [False, True])
def test_external_handle_queries(device: PhysicalDevice, candidate: VulkanCandidate, timeline: bool) -> None:
    memory = device.external_buffer_features(HandleType.OPAQUE_FD)
    assert isinstance(memory.exportable, bool) and isinstance(memory.importable, bool)
    if "VK_KHR_external_memory_fd" in candidate.extensions:
        assert memory.exportable and memory.importable  # lavapipe: opaque-fd memory yes
    semaphore = device.external_semaphore_features(HandleType.OPAQUE_FD, timeline=timeline)
    if candidate.vendor_id == 0x10005:  # lavapipe (Mesa 22): no semaphore fd export
        assert not semaphore.exportable


def test_features_and_the_creation_chain(
    api: VulkanApi, device: PhysicalDevice, candidate: VulkanCandidate
) -> None:
    everything = set(Feature)
    supported = device.features(everything)
    assert supported <= everything
    assert (Feature.TIMELINE_SEMAPHORE in supported) == candidate.timeline_semaphores
    assert (Feature.SYNCHRONIZATION2 in supported) == candidate.synchronization2
    assert device.features([]) == frozenset()
    chain = device.feature_chain([Feature.TIMELINE_SEMAPHORE])
    ffi = api.ffi
    size = ffi.sizeof("VkPhysicalDeviceFeatures")
    core = ffi.addressof(chain.head, "features")
    assert bytes(ffi.buffer(core, size)) != bytes(size)  # the driver reported some core features
    head = chain.for_device_creation()
    assert bytes(ffi.buffer(core, size)) == bytes(size)  # none of them is enabled
    assert head.pNext != ffi.NULL  # the chained feature stays


def _chain(api: VulkanApi, struct: Any) -> dict[int, Any]:
    """The structures behind ``struct``'s pNext, by sType."""
    ffi = api.ffi
    out = {}
    node = ffi.cast("VkBaseOutStructure*", struct).pNext
    while node != ffi.NULL:
        out[int(node.sType)] = node
        node = node.pNext
    return out


def test_queries_against_a_fake_driver(api: VulkanApi) -> None:
    """The chains lavapipe never fills (memory budget, DRM nodes, LUID, video queue families, timelines)."""
    ffi, vk = api.ffi, api.vk

    def properties2(_pd: Any, props: Any) -> None:
        chained = _chain(api, props)
        ids = ffi.cast(
            "VkPhysicalDeviceIDProperties*", chained[vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES]
        )
        ids.deviceUUID = list(range(16))
        ids.deviceLUID = list(range(8, 16))
        ids.deviceLUIDValid = 1
        drm = ffi.cast(
            "VkPhysicalDeviceDrmPropertiesEXT*",
            chained[vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRM_PROPERTIES_EXT],
        )
        drm.hasRender, drm.renderMajor, drm.renderMinor = 1, 226, 128
        drm.hasPrimary = 0

    def memory2(_pd: Any, props: Any) -> None:
        mp = props.memoryProperties
        mp.memoryHeapCount = 2
        mp.memoryHeaps[0].size, mp.memoryHeaps[0].flags = 140 << 30, 0x1
        mp.memoryHeaps[1].size, mp.memoryHeaps[1].flags = 64 << 30, 0
        key = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT
        budget = ffi.cast("VkPhysicalDeviceMemoryBudgetPropertiesEXT*", _chain(api, props)[key])
        budget.heapBudget[0], budget.heapUsage[0] = 130 << 30, 1 << 20
        budget.heapBudget[1], budget.heapUsage[1] = 60 << 30, 0

    def families2(_pd: Any, count: Any, props: Any) -> None:
        if props == ffi.NULL:
            count[0] = 2
            return
        for i, (flags, ops) in enumerate(((0x7, 0), (0x20 | 0x4, 0x3))):
            props[i].queueFamilyProperties.queueCount = 1
            props[i].queueFamilyProperties.queueFlags = flags
            key = vk.VK_STRUCTURE_TYPE_QUEUE_FAMILY_VIDEO_PROPERTIES_KHR
            ffi.cast(
                "VkQueueFamilyVideoPropertiesKHR*", _chain(api, ffi.addressof(props, i))[key]
            ).videoCodecOperations = ops

    semaphore_infos: list[tuple[int, int | None]] = []

    def semaphore_props(_pd: Any, info: Any, props: Any) -> None:
        chained = _chain(api, info)
        type_info = chained.get(vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO)
        kind = (
            None
            if type_info is None
            else int(ffi.cast("VkSemaphoreTypeCreateInfo*", type_info).semaphoreType)
        )
        semaphore_infos.append((int(info.handleType), kind))
        props.externalSemaphoreFeatures = 0x1 | 0x2 if kind is None else 0x2

    fake = type(
        "Fn",
        (),
        {
            "vkGetPhysicalDeviceProperties2": staticmethod(properties2),
            "vkGetPhysicalDeviceMemoryProperties2": staticmethod(memory2),
            "vkGetPhysicalDeviceQueueFamilyProperties2": staticmethod(families2),
            "vkGetPhysicalDeviceExternalSemaphoreProperties": staticmethod(semaphore_props),
        },
    )()
    device = PhysicalDevice(api, fake, None)
    ident = device.identity(ids=True, drm=True)
    assert ident.uuid == bytes(range(16)) and ident.luid == bytes(range(8, 16))
    assert ident.drm_render_node == (226, 128) and ident.drm_primary_node is None
    assert ident.driver_name == ""  # driver properties not asked for
    memory = device.memory(budget=True)
    assert memory.budget_reported and [h.size_bytes for h in memory.heaps] == [140 << 30, 64 << 30]
    assert [h.budget_bytes for h in memory.heaps] == [130 << 30, 60 << 30]
    assert memory.heaps[0].flags & MemoryHeapFlag.DEVICE_LOCAL and not memory.heaps[1].flags
    assert memory.heaps[0].usage_bytes == 1 << 20
    families = device.queue_families(video=True)
    assert [f.video_codec_operations for f in families] == [0, 0x3]
    assert families[1].flags == QueueFlag.VIDEO_DECODE | QueueFlag.TRANSFER
    binary = device.external_semaphore_features(HandleType.SYNC_FD, timeline=False)
    timeline = device.external_semaphore_features(HandleType.OPAQUE_FD, timeline=True)
    assert binary.exportable and binary.importable and not timeline.exportable and timeline.importable
    assert semaphore_infos == [(0x10, None), (0x1, vk.VK_SEMAPHORE_TYPE_TIMELINE)]


def test_instance_layers(api: VulkanApi) -> None:
    layers = instance_layers(api)
    assert all(layer.name.startswith("VK_LAYER_") and layer.spec_version >> 22 == 1 for layer in layers)


def test_open_device_enables_what_was_asked_and_the_driver_has(
    api: VulkanApi, candidate: VulkanCandidate
) -> None:
    inst = Instance(api, extensions=("VK_KHR_get_physical_device_properties2",))
    state = VulkanDeviceState(api, inst)
    try:
        pd = physical_devices(inst)[candidate.index]
        family = candidate.queue_families[0].index
        enabled = open_device(state, pd, queue_families=[family], extensions=[], features=[])
        assert enabled == frozenset()
        assert state.device is not None and state.physical_device is pd.handle
        assert set(state.queues) == set(state.locks) == {(family, 0)}
        assert state.memory_types == list(pd.memory_types())
        assert state.dfn.has("vkCreateImage")
    finally:
        state.destroy()
    assert state.closed and state.device is None and inst.closed
    state.destroy()  # idempotent


# -- video, against a fake driver -----------------------------------------------------------------------


def test_codec_operations_table(api: VulkanApi) -> None:
    ops = codec_operations(api)
    assert [op.decode for op in ops] == sorted((op.decode for op in ops), reverse=True)  # decode first
    by_key = {(op.codec, op.decode): op for op in ops}
    h264 = by_key[(VideoCodec.H264, True)]
    assert (
        h264.extension == "VK_KHR_video_decode_h264" and h264.queue_extension == "VK_KHR_video_decode_queue"
    )
    assert h264.operation_bit == api.vk.VK_VIDEO_CODEC_OPERATION_DECODE_H264_BIT_KHR
    assert h264.profile_stype == api.vk.VK_STRUCTURE_TYPE_VIDEO_DECODE_H264_PROFILE_INFO_KHR
    vp9 = by_key[(VideoCodec.VP9, True)]
    assert vp9.extension == "VK_KHR_video_decode_vp9" and vp9.capabilities_stype == 1000514001
    assert by_key[(VideoCodec.AV1, False)].queue_extension == "VK_KHR_video_encode_queue"
    assert len({op.operation_bit for op in ops}) == len(ops)


def test_video_capabilities_refusal_is_a_result(api: VulkanApi) -> None:
    op: CodecOperation = codec_operations(api)[0]
    seen: list[int] = []

    def refuse(_pd: Any, profile: Any, _caps: Any) -> int:
        seen.append(int(profile.lumaBitDepth))
        return -1000023004  # VK_ERROR_VIDEO_PROFILE_CODEC_NOT_SUPPORTED_KHR

    fake = type("Fn", (), {"vkGetPhysicalDeviceVideoCapabilitiesKHR": staticmethod(refuse)})()
    caps = video_capabilities(PhysicalDevice(api, fake, None), op, VideoProfile("Main 10", 2, 10))
    assert not caps.supported and caps.reason == "VK_ERROR_VIDEO_PROFILE_CODEC_NOT_SUPPORTED_KHR"
    assert caps.max_coded_extent is None and seen == [api.vk.VK_VIDEO_COMPONENT_BIT_DEPTH_10_BIT_KHR]


# -- timeline semaphores and command batches on a shared device ---------------------------------------------


@pytest.fixture(scope="module")
def context(candidate: VulkanCandidate) -> Iterator[SharedVulkanContext]:
    ctx = SharedVulkanContext(candidate, decode=False)
    if "timelineSemaphore" not in ctx.enabled_features:
        ctx.close()
        pytest.skip("no timeline semaphores")
    yield ctx
    ctx.close()


def test_timeline_helpers(context: SharedVulkanContext) -> None:
    state = context._internal
    handle = sync.create_timeline(state, 3)
    try:
        assert sync.counter_value(state, handle) == 3
        assert sync.wait_timeline(state, handle, 3, 0) is WaitStatus.SIGNALED
        assert sync.wait_timeline(state, handle, 4, 10_000_000) is WaitStatus.TIMED_OUT  # a result, no raise
        sync.signal_timeline(state, handle, 4)
        assert sync.wait_timeline(state, handle, 4, 0) is WaitStatus.SIGNALED
        address = int(state.api.ffi.cast("uintptr_t", handle))
        assert sync.counter_value(state, sync.semaphore_from_address(state.api, address)) == 4
    finally:
        sync.destroy_semaphore(state, handle)
    with pytest.raises(InvalidInputError):
        sync.semaphore_from_address(state.api, 0)
    with pytest.raises(InvalidInputError):
        sync.create_timeline(state, -1)


@pytest.mark.parametrize("synchronization2", [False, True])
def test_command_batch_round_trip(context: SharedVulkanContext, synchronization2: bool) -> None:
    if synchronization2 and "synchronization2" not in context.enabled_features:
        pytest.skip("no synchronization2")
    state = context._internal
    queue = context.queues[0]
    batch = commands.CommandBatch(state, queue.queue_family_index)
    try:
        batch.add_image(commands.ImageFormat.R8_UNORM, 32, 16)
        batch.add_image(commands.ImageFormat.R8G8_UNORM, 16, 8)
        assert batch.image_count == 2
        batch.begin()
        layout = commands.ImageLayout
        access = commands.Access
        batch.barrier(
            layout.UNDEFINED,
            layout.SHADER_READ_ONLY,
            access.NONE,
            access.SHADER_READ,
            synchronization2=synchronization2,
        )
        batch.barrier(
            layout.SHADER_READ_ONLY,
            layout.GENERAL,
            access.SHADER_READ,
            access.TRANSFER_WRITE,
            synchronization2=synchronization2,
        )
        batch.end()
        with context.queue_lock(queue.queue_family_index, queue.queue_index):
            batch.submit(state.queue(queue.queue_family_index, queue.queue_index))
        waited = batch.wait(5_000_000_000)
        assert waited.status is WaitStatus.SIGNALED and waited.vk_result == 0
    finally:
        batch.destroy()
    assert batch.image_count == 0
    batch.destroy()  # idempotent


def test_command_batch_wait_times_out_as_a_result(context: SharedVulkanContext) -> None:
    state = context._internal
    queue = context.queues[0]
    semaphore = sync.create_timeline(state, 0)
    batch = commands.CommandBatch(state, queue.queue_family_index)
    try:
        batch.begin()
        batch.end()
        with context.queue_lock(queue.queue_family_index, queue.queue_index):
            batch.submit(
                state.queue(queue.queue_family_index, queue.queue_index), wait_timeline=(semaphore, 1)
            )
        waited = batch.wait(20_000_000)
        assert waited.status is WaitStatus.TIMED_OUT and waited.vk_result == 2
        sync.signal_timeline(state, semaphore, 1)  # release the submission
        assert batch.wait(5_000_000_000).status is WaitStatus.SIGNALED
    finally:
        batch.destroy()
        sync.destroy_semaphore(state, semaphore)
