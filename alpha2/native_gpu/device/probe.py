"""Submission probe: can the shared device move an NV12-like plane pair through the layouts an import uses?

:func:`probe_vulkan_submission` makes an R8 W×H image and an RG8 W/2×H/2 image (the portable NV12 plane
pair), image views over them as an import makes, and one command buffer that moves both from UNDEFINED
to SHADER_READ_ONLY_OPTIMAL and back to GENERAL (or TRANSFER_DST_OPTIMAL). It submits once on the chosen
queue under that queue's lock and waits on a fence with a bounded timeout. The result says whether it
worked and how long it took; a timeout is a result, never a hang, and never an exception.

Every GPU wait in alpha2.native_gpu is bounded by :func:`set_gpu_wait_timeout` (re-exported here).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from alpha2.gpu.errors import Error, InvalidInputError
from alpha2.native_gpu._vk.core import VK_TIMEOUT, check, result_name
from alpha2.native_gpu.device.shared import QueueRole, SharedVulkanContext, VulkanDeviceState
from alpha2.native_gpu.device.waits import bounded_timeout, gpu_wait_timeout, set_gpu_wait_timeout, timeout_ns

__all__ = [
    "SubmissionProbeResult",
    "gpu_wait_timeout",
    "probe_vulkan_submission",
    "set_gpu_wait_timeout",
]

_FORMAT_R8_UNORM = 9
_FORMAT_R8G8_UNORM = 16
_LAYOUT_UNDEFINED = 0
_LAYOUT_GENERAL = 1
_LAYOUT_SHADER_READ_ONLY = 5
_LAYOUT_TRANSFER_DST = 7
_USAGE = 0x1 | 0x2 | 0x4  # transfer src, transfer dst, sampled
_ST_IMAGE_CREATE_INFO = 14
_ST_MEMORY_ALLOCATE_INFO = 5
_ST_IMAGE_VIEW_CREATE_INFO = 15
_ST_COMMAND_POOL_CREATE_INFO = 39
_ST_COMMAND_BUFFER_ALLOCATE_INFO = 40
_ST_COMMAND_BUFFER_BEGIN_INFO = 42
_ST_FENCE_CREATE_INFO = 8
_ST_SUBMIT_INFO = 4
_ST_IMAGE_MEMORY_BARRIER = 45
_ST_IMAGE_MEMORY_BARRIER_2 = 1000314002
_ST_DEPENDENCY_INFO = 1000314003
_ST_TIMELINE_SEMAPHORE_SUBMIT_INFO = 1000207003
_QUEUE_FAMILY_IGNORED = 0xFFFFFFFF
_ALL_COMMANDS = 0x10000
_ACCESS_SHADER_READ = 0x20
_ACCESS_TRANSFER_READ = 0x800
_ACCESS_TRANSFER_WRITE = 0x1000
_MEMORY_DEVICE_LOCAL = 0x1


@dataclass(frozen=True)
class SubmissionProbeResult:
    """What the submission probe found."""

    ok: bool
    """The submission completed within the timeout."""
    elapsed_s: float
    """Wall time of the whole probe (creation, recording, submission, wait, clean-up)."""
    wait_s: float
    """Time spent waiting on the fence."""
    queue_family: int
    """Queue family submitted to."""
    queue_index: int
    """Queue index submitted to."""
    width: int
    """Luma width."""
    height: int
    """Luma height."""
    final_layout: str
    """'general' or 'transfer'."""
    synchronization2: bool
    """Whether the barriers were recorded with vkCmdPipelineBarrier2."""
    timed_out: bool = False
    """The fence wait ran out (the objects are destroyed when the context closes)."""
    reason: str | None = None
    """Why it failed, or None."""
    vk_result: int | None = None
    """The failing VkResult, where one failed."""

    def __bool__(self) -> bool:
        return self.ok


class _Objects:
    """Everything the probe creates, destroyed in reverse order (now, or at context close)."""

    def __init__(self, state: VulkanDeviceState) -> None:
        self.state = state
        self.images: list[Any] = []
        self.memories: list[Any] = []
        self.views: list[Any] = []
        self.pool: Any = None
        self.fence: Any = None

    def destroy(self) -> None:
        state = self.state
        device, dfn, null = state.device, state.dfn, state.api.ffi.NULL
        if device is None:
            return
        if self.fence is not None:
            dfn.vkDestroyFence(device, self.fence, null)
        if self.pool is not None:
            dfn.vkDestroyCommandPool(device, self.pool, null)  # frees its command buffers
        for view in self.views:
            dfn.vkDestroyImageView(device, view, null)
        for image in self.images:
            dfn.vkDestroyImage(device, image, null)
        for memory in self.memories:
            dfn.vkFreeMemory(device, memory, null)
        self.images, self.memories, self.views, self.pool, self.fence = [], [], [], None, None


def _plane(state: VulkanDeviceState, objects: _Objects, fmt: int, width: int, height: int) -> Any:
    ffi, dfn, device = state.api.ffi, state.dfn, state.device
    info = ffi.new(
        "VkImageCreateInfo*",
        {
            "sType": _ST_IMAGE_CREATE_INFO,
            "imageType": 1,  # 2D
            "format": fmt,
            "extent": {"width": width, "height": height, "depth": 1},
            "mipLevels": 1,
            "arrayLayers": 1,
            "samples": 1,
            "tiling": 0,  # optimal
            "usage": _USAGE,
            "sharingMode": 0,
            "initialLayout": _LAYOUT_UNDEFINED,
        },
    )
    image_out = ffi.new("VkImage*")
    check(dfn.vkCreateImage(device, info, ffi.NULL, image_out), "vkCreateImage")
    image = image_out[0]
    objects.images.append(image)
    reqs = ffi.new("VkMemoryRequirements*")
    dfn.vkGetImageMemoryRequirements(device, image, reqs)
    alloc = ffi.new(
        "VkMemoryAllocateInfo*",
        {
            "sType": _ST_MEMORY_ALLOCATE_INFO,
            "allocationSize": reqs.size,
            "memoryTypeIndex": state.find_memory_type(int(reqs.memoryTypeBits), 0, _MEMORY_DEVICE_LOCAL),
        },
    )
    memory_out = ffi.new("VkDeviceMemory*")
    check(dfn.vkAllocateMemory(device, alloc, ffi.NULL, memory_out), "vkAllocateMemory")
    objects.memories.append(memory_out[0])
    check(dfn.vkBindImageMemory(device, image, memory_out[0], 0), "vkBindImageMemory")
    view_info = ffi.new(
        "VkImageViewCreateInfo*",
        {
            "sType": _ST_IMAGE_VIEW_CREATE_INFO,
            "image": image,
            "viewType": 1,  # 2D
            "format": fmt,
            "subresourceRange": {
                "aspectMask": 1,
                "baseMipLevel": 0,
                "levelCount": 1,
                "baseArrayLayer": 0,
                "layerCount": 1,
            },
        },
    )
    view_out = ffi.new("VkImageView*")
    check(dfn.vkCreateImageView(device, view_info, ffi.NULL, view_out), "vkCreateImageView")
    objects.views.append(view_out[0])
    return image


def _record_barriers(
    state: VulkanDeviceState, cmd: Any, images: list[Any], old: int, new: int, src: int, dst: int, sync2: bool
) -> None:
    ffi = state.api.ffi
    n = len(images)
    subresource = {"aspectMask": 1, "baseMipLevel": 0, "levelCount": 1, "baseArrayLayer": 0, "layerCount": 1}
    if sync2:
        barriers = ffi.new("VkImageMemoryBarrier2[]", n)
        for i, image in enumerate(images):
            b = barriers[i]
            b.sType = _ST_IMAGE_MEMORY_BARRIER_2
            b.srcStageMask = _ALL_COMMANDS
            b.srcAccessMask = src
            b.dstStageMask = _ALL_COMMANDS
            b.dstAccessMask = dst
            b.oldLayout = old
            b.newLayout = new
            b.srcQueueFamilyIndex = _QUEUE_FAMILY_IGNORED
            b.dstQueueFamilyIndex = _QUEUE_FAMILY_IGNORED
            b.image = image
            b.subresourceRange = subresource
        dep = ffi.new(
            "VkDependencyInfo*",
            {"sType": _ST_DEPENDENCY_INFO, "imageMemoryBarrierCount": n, "pImageMemoryBarriers": barriers},
        )
        state.dfn.vkCmdPipelineBarrier2(cmd, dep)
        return
    barriers1 = ffi.new("VkImageMemoryBarrier[]", n)
    for i, image in enumerate(images):
        b1 = barriers1[i]
        b1.sType = _ST_IMAGE_MEMORY_BARRIER
        b1.srcAccessMask = src
        b1.dstAccessMask = dst
        b1.oldLayout = old
        b1.newLayout = new
        b1.srcQueueFamilyIndex = _QUEUE_FAMILY_IGNORED
        b1.dstQueueFamilyIndex = _QUEUE_FAMILY_IGNORED
        b1.image = image
        b1.subresourceRange = subresource
    state.dfn.vkCmdPipelineBarrier(
        cmd, _ALL_COMMANDS, _ALL_COMMANDS, 0, 0, ffi.NULL, 0, ffi.NULL, n, barriers1
    )


def probe_vulkan_submission(
    context: SharedVulkanContext,
    *,
    width: int = 64,
    height: int = 64,
    role: QueueRole = QueueRole.GRAPHICS,
    final_layout: str = "general",
    timeout_s: float | None = None,
    wait_timeline: tuple[Any, int] | None = None,
) -> SubmissionProbeResult:
    """Move an R8 W×H + RG8 W/2×H/2 pair to SHADER_READ_ONLY_OPTIMAL and back in one bounded submission.

    Args:
        context: the shared device.
        width, height: luma size (even, >= 2).
        role: which of the context's queues to submit on.
        final_layout: 'general' or 'transfer' (TRANSFER_DST_OPTIMAL).
        timeout_s: fence wait bound (None: :func:`gpu_wait_timeout`; never more than it).
        wait_timeline: (VulkanTimelineSemaphore, value) the submission waits on first, to check a
            stalled queue is reported as a timeout (signal it before closing the context).

    Returns:
        A :class:`SubmissionProbeResult`; failures and timeouts are results, not exceptions.

    Raises:
        InvalidInputError: bad size, layout, or a role the context has no queue for.
        ClosedError: the context is closed.
    """
    if width < 2 or height < 2 or width % 2 or height % 2:
        raise InvalidInputError(f"width and height must be even and >= 2, got {width}x{height}")
    layouts = {"general": _LAYOUT_GENERAL, "transfer": _LAYOUT_TRANSFER_DST}
    if final_layout not in layouts:
        raise InvalidInputError(f"final_layout must be one of {sorted(layouts)}, got {final_layout!r}")
    queue_info = context.queue_for(role)
    if queue_info is None:
        roles = [q.role.value for q in context.queues if q.role]
        raise InvalidInputError(f"the shared device has no {role.value} queue; it has {roles}")
    wait_bound = bounded_timeout(timeout_s)
    state = context._internal
    ffi, dfn, device = state.api.ffi, state.dfn, state.device
    sync2 = "synchronization2" in context.enabled_features
    family, index = queue_info.queue_family_index, queue_info.queue_index
    start = time.monotonic()
    objects = _Objects(state)
    wait_s = 0.0

    def result(ok: bool, reason: str | None = None, **extra: Any) -> SubmissionProbeResult:
        return SubmissionProbeResult(
            ok=ok,
            elapsed_s=time.monotonic() - start,
            wait_s=wait_s,
            queue_family=family,
            queue_index=index,
            width=width,
            height=height,
            final_layout=final_layout,
            synchronization2=sync2,
            reason=reason,
            **extra,
        )

    deferred = False
    try:
        images = [
            _plane(state, objects, _FORMAT_R8_UNORM, width, height),
            _plane(state, objects, _FORMAT_R8G8_UNORM, width // 2, height // 2),
        ]
        pool_info = ffi.new(
            "VkCommandPoolCreateInfo*",
            {"sType": _ST_COMMAND_POOL_CREATE_INFO, "flags": 0x1, "queueFamilyIndex": family},
        )
        pool_out = ffi.new("VkCommandPool*")
        check(dfn.vkCreateCommandPool(device, pool_info, ffi.NULL, pool_out), "vkCreateCommandPool")
        objects.pool = pool_out[0]
        alloc = ffi.new(
            "VkCommandBufferAllocateInfo*",
            {
                "sType": _ST_COMMAND_BUFFER_ALLOCATE_INFO,
                "commandPool": objects.pool,
                "level": 0,
                "commandBufferCount": 1,
            },
        )
        cmd_out = ffi.new("VkCommandBuffer*")
        check(dfn.vkAllocateCommandBuffers(device, alloc, cmd_out), "vkAllocateCommandBuffers")
        cmd = cmd_out[0]
        begin = ffi.new("VkCommandBufferBeginInfo*", {"sType": _ST_COMMAND_BUFFER_BEGIN_INFO, "flags": 0x1})
        check(dfn.vkBeginCommandBuffer(cmd, begin), "vkBeginCommandBuffer")
        sampled_access = (
            _ACCESS_SHADER_READ
            if queue_info.queue_flags & 0x3  # VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT
            else _ACCESS_TRANSFER_READ
        )
        _record_barriers(
            state, cmd, images, _LAYOUT_UNDEFINED, _LAYOUT_SHADER_READ_ONLY, 0, sampled_access, sync2
        )
        _record_barriers(
            state,
            cmd,
            images,
            _LAYOUT_SHADER_READ_ONLY,
            layouts[final_layout],
            sampled_access,
            _ACCESS_TRANSFER_WRITE,
            sync2,
        )
        check(dfn.vkEndCommandBuffer(cmd), "vkEndCommandBuffer")
        fence_out = ffi.new("VkFence*")
        fence_info = ffi.new("VkFenceCreateInfo*", {"sType": _ST_FENCE_CREATE_INFO})
        check(dfn.vkCreateFence(device, fence_info, ffi.NULL, fence_out), "vkCreateFence")
        objects.fence = fence_out[0]
        cmds = ffi.new("VkCommandBuffer[]", [cmd])
        submit = ffi.new(
            "VkSubmitInfo*", {"sType": _ST_SUBMIT_INFO, "commandBufferCount": 1, "pCommandBuffers": cmds}
        )
        keep: list[Any] = []
        if wait_timeline is not None:
            semaphore, value = wait_timeline
            handle = getattr(semaphore, "handle", semaphore)
            sems = ffi.new("VkSemaphore[]", [handle])
            values = ffi.new("uint64_t[]", [int(value)])
            stages = ffi.new("VkPipelineStageFlags[]", [_ALL_COMMANDS])
            timeline_info = ffi.new(
                "VkTimelineSemaphoreSubmitInfo*",
                {
                    "sType": _ST_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                    "waitSemaphoreValueCount": 1,
                    "pWaitSemaphoreValues": values,
                },
            )
            submit.pNext = timeline_info
            submit.waitSemaphoreCount = 1
            submit.pWaitSemaphores = sems
            submit.pWaitDstStageMask = stages
            keep += [sems, values, stages, timeline_info]
        with context.queue_lock(family, index):
            check(dfn.vkQueueSubmit(state.queue(family, index), 1, submit, objects.fence), "vkQueueSubmit")
        fences = ffi.new("VkFence[]", [objects.fence])
        wait_start = time.monotonic()
        # A raw call: VK_TIMEOUT comes back as a result (the vulkan package's wrapper would raise VkTimeout).
        status = int(dfn.vkWaitForFences(device, 1, fences, 1, timeout_ns(wait_bound)))
        wait_s = time.monotonic() - wait_start
        if status == VK_TIMEOUT:
            # The GPU may still use these objects: destroy them when the context closes, after idle.
            state.defer_destroy(objects.destroy)
            deferred = True
            return result(
                False,
                f"the submission did not complete within {wait_bound:g} s (VK_TIMEOUT)",
                timed_out=True,
                vk_result=VK_TIMEOUT,
            )
        if status != 0:
            state.defer_destroy(objects.destroy)
            deferred = True
            return result(False, f"vkWaitForFences failed: {result_name(status)}", vk_result=status)
        return result(True)
    except Error as exc:
        return result(False, exc.message, vk_result=getattr(exc, "vk_result", None))
    finally:
        if not deferred:
            objects.destroy()
