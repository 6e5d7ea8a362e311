"""One-shot command work on the shared device: plane images, one command buffer of layout barriers, one
submission and a bounded fence wait (what the submission probe does).

:class:`CommandBatch` owns everything it creates and destroys it in reverse order (:meth:`~CommandBatch.
destroy`, idempotent). After a wait that timed out the GPU may still use the objects, so the caller hands
``destroy`` to :meth:`~alpha2.native_gpu._vk.device.VulkanDeviceState.defer_destroy` instead.
:meth:`~CommandBatch.wait` returns a :class:`FenceWait`: a timeout is a result, never an exception.

:class:`ImageFormat`, :class:`ImageLayout` and :class:`Access` name Vulkan constants, whose values are read
from the ``vulkan`` package when they are used.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from alpha2.gpu.sync import WaitStatus
from alpha2.native_gpu._vk.core import VK_SUCCESS, VK_TIMEOUT, VulkanApi, check
from alpha2.native_gpu._vk.device import VulkanDeviceState

__all__ = ["Access", "CommandBatch", "FenceWait", "ImageFormat", "ImageLayout"]


class _Named(enum.Enum):
    """An enum whose values are the names of Vulkan constants."""

    def vk_value(self, api: VulkanApi) -> int:
        """The constant's value, from the ``vulkan`` package."""
        return int(getattr(api.vk, self.value))


class ImageFormat(_Named):
    """VkFormat of a plane image."""

    R8_UNORM = "VK_FORMAT_R8_UNORM"
    R8G8_UNORM = "VK_FORMAT_R8G8_UNORM"


class ImageLayout(_Named):
    """VkImageLayout."""

    UNDEFINED = "VK_IMAGE_LAYOUT_UNDEFINED"
    GENERAL = "VK_IMAGE_LAYOUT_GENERAL"
    SHADER_READ_ONLY = "VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL"
    TRANSFER_DST = "VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL"


class Access(_Named):
    """One VkAccessFlagBits value (the low bits of VkAccessFlags2 are the same)."""

    NONE = "VK_ACCESS_NONE"
    SHADER_READ = "VK_ACCESS_SHADER_READ_BIT"
    TRANSFER_READ = "VK_ACCESS_TRANSFER_READ_BIT"
    TRANSFER_WRITE = "VK_ACCESS_TRANSFER_WRITE_BIT"


@dataclass(frozen=True)
class FenceWait:
    """How a bounded fence wait ended."""

    status: WaitStatus
    """SIGNALED, TIMED_OUT, or FAILED (the VkResult says why)."""
    vk_result: int
    """vkWaitForFences' VkResult."""


def _color_subresource(vk: Any) -> dict[str, int]:
    return {
        "aspectMask": vk.VK_IMAGE_ASPECT_COLOR_BIT,
        "baseMipLevel": 0,
        "levelCount": 1,
        "baseArrayLayer": 0,
        "layerCount": 1,
    }


class CommandBatch:
    """Plane images (with views), one primary command buffer and a fence, for one queue family.

    Call in order: :meth:`add_image` (any number), :meth:`begin`, :meth:`barrier` (any number),
    :meth:`end`, :meth:`submit` (under the queue's lock), :meth:`wait`; then :meth:`destroy`.
    """

    def __init__(self, dev: VulkanDeviceState, queue_family: int) -> None:
        self._dev = dev
        self._family = queue_family
        self._images: list[Any] = []
        self._memories: list[Any] = []
        self._views: list[Any] = []
        self._pool: Any = None
        self._cmd: Any = None
        self._fence: Any = None

    @property
    def image_count(self) -> int:
        """Images created so far."""
        return len(self._images)

    def add_image(self, fmt: ImageFormat, width: int, height: int) -> None:
        """An OPTIMAL 2D image (transfer src/dst, sampled) on device-local memory, and a view over it."""
        dev = self._dev
        api = dev.api
        ffi, vk, dfn, device = api.ffi, api.vk, dev.dfn, dev.device
        vk_format = fmt.vk_value(api)
        info = ffi.new(
            "VkImageCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                "imageType": vk.VK_IMAGE_TYPE_2D,
                "format": vk_format,
                "extent": {"width": width, "height": height, "depth": 1},
                "mipLevels": 1,
                "arrayLayers": 1,
                "samples": vk.VK_SAMPLE_COUNT_1_BIT,
                "tiling": vk.VK_IMAGE_TILING_OPTIMAL,
                "usage": vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT
                | vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT
                | vk.VK_IMAGE_USAGE_SAMPLED_BIT,
                "sharingMode": vk.VK_SHARING_MODE_EXCLUSIVE,
                "initialLayout": vk.VK_IMAGE_LAYOUT_UNDEFINED,
            },
        )
        image_out = ffi.new("VkImage*")
        check(dfn.vkCreateImage(device, info, ffi.NULL, image_out), "vkCreateImage")
        image = image_out[0]
        self._images.append(image)
        reqs = ffi.new("VkMemoryRequirements*")
        dfn.vkGetImageMemoryRequirements(device, image, reqs)
        memory_type = dev.find_memory_type(
            int(reqs.memoryTypeBits), 0, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
        )
        alloc = ffi.new(
            "VkMemoryAllocateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                "allocationSize": reqs.size,
                "memoryTypeIndex": memory_type,
            },
        )
        memory_out = ffi.new("VkDeviceMemory*")
        check(dfn.vkAllocateMemory(device, alloc, ffi.NULL, memory_out), "vkAllocateMemory")
        self._memories.append(memory_out[0])
        check(dfn.vkBindImageMemory(device, image, memory_out[0], 0), "vkBindImageMemory")
        view_info = ffi.new(
            "VkImageViewCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
                "image": image,
                "viewType": vk.VK_IMAGE_VIEW_TYPE_2D,
                "format": vk_format,
                "subresourceRange": _color_subresource(vk),
            },
        )
        view_out = ffi.new("VkImageView*")
        check(dfn.vkCreateImageView(device, view_info, ffi.NULL, view_out), "vkCreateImageView")
        self._views.append(view_out[0])

    def begin(self) -> None:
        """Create the command pool and buffer and begin recording (one-time submit)."""
        dev = self._dev
        api = dev.api
        ffi, vk, dfn, device = api.ffi, api.vk, dev.dfn, dev.device
        pool_info = ffi.new(
            "VkCommandPoolCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                "flags": vk.VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                "queueFamilyIndex": self._family,
            },
        )
        pool_out = ffi.new("VkCommandPool*")
        check(dfn.vkCreateCommandPool(device, pool_info, ffi.NULL, pool_out), "vkCreateCommandPool")
        self._pool = pool_out[0]
        alloc = ffi.new(
            "VkCommandBufferAllocateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                "commandPool": self._pool,
                "level": vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                "commandBufferCount": 1,
            },
        )
        cmd_out = ffi.new("VkCommandBuffer*")
        check(dfn.vkAllocateCommandBuffers(device, alloc, cmd_out), "vkAllocateCommandBuffers")
        self._cmd = cmd_out[0]
        begin = ffi.new(
            "VkCommandBufferBeginInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                "flags": vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
            },
        )
        check(dfn.vkBeginCommandBuffer(self._cmd, begin), "vkBeginCommandBuffer")

    def barrier(
        self, old: ImageLayout, new: ImageLayout, src: Access, dst: Access, *, synchronization2: bool
    ) -> None:
        """Record one layout transition of every image (all commands to all commands).

        ``synchronization2`` records it with vkCmdPipelineBarrier2, else with vkCmdPipelineBarrier.
        """
        api = self._dev.api
        ffi, vk = api.ffi, api.vk
        n = len(self._images)
        old_layout, new_layout = old.vk_value(api), new.vk_value(api)
        src_access, dst_access = src.vk_value(api), dst.vk_value(api)
        if synchronization2:
            all_commands_2 = vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT
            barriers = ffi.new("VkImageMemoryBarrier2[]", n)
            for i, image in enumerate(self._images):
                b = barriers[i]
                b.sType = vk.VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2
                b.srcStageMask = all_commands_2
                b.srcAccessMask = src_access
                b.dstStageMask = all_commands_2
                b.dstAccessMask = dst_access
                b.oldLayout = old_layout
                b.newLayout = new_layout
                b.srcQueueFamilyIndex = vk.VK_QUEUE_FAMILY_IGNORED
                b.dstQueueFamilyIndex = vk.VK_QUEUE_FAMILY_IGNORED
                b.image = image
                b.subresourceRange = _color_subresource(vk)
            dep = ffi.new(
                "VkDependencyInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                    "imageMemoryBarrierCount": n,
                    "pImageMemoryBarriers": barriers,
                },
            )
            self._dev.dfn.vkCmdPipelineBarrier2(self._cmd, dep)
            return
        barriers1 = ffi.new("VkImageMemoryBarrier[]", n)
        for i, image in enumerate(self._images):
            b1 = barriers1[i]
            b1.sType = vk.VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER
            b1.srcAccessMask = src_access
            b1.dstAccessMask = dst_access
            b1.oldLayout = old_layout
            b1.newLayout = new_layout
            b1.srcQueueFamilyIndex = vk.VK_QUEUE_FAMILY_IGNORED
            b1.dstQueueFamilyIndex = vk.VK_QUEUE_FAMILY_IGNORED
            b1.image = image
            b1.subresourceRange = _color_subresource(vk)
        all_commands = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
        self._dev.dfn.vkCmdPipelineBarrier(
            self._cmd, all_commands, all_commands, 0, 0, ffi.NULL, 0, ffi.NULL, n, barriers1
        )

    def end(self) -> None:
        """End recording."""
        check(self._dev.dfn.vkEndCommandBuffer(self._cmd), "vkEndCommandBuffer")

    def submit(self, queue: Any, *, wait_timeline: tuple[Any, int] | None = None) -> None:
        """Submit the command buffer once on ``queue`` with a new fence; the caller holds the queue's lock.

        Args:
            queue: the VkQueue (from ``VulkanDeviceState.queue``) of this batch's family.
            wait_timeline: (VkSemaphore, value): the submission waits for that timeline value first.
        """
        dev = self._dev
        api = dev.api
        ffi, vk, dfn = api.ffi, api.vk, dev.dfn
        fence_out = ffi.new("VkFence*")
        fence_info = ffi.new("VkFenceCreateInfo*", {"sType": vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO})
        check(dfn.vkCreateFence(dev.device, fence_info, ffi.NULL, fence_out), "vkCreateFence")
        self._fence = fence_out[0]
        cmds = ffi.new("VkCommandBuffer[]", [self._cmd])
        submit = ffi.new(
            "VkSubmitInfo*",
            {"sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, "commandBufferCount": 1, "pCommandBuffers": cmds},
        )
        keep: list[Any] = []
        if wait_timeline is not None:
            semaphore, value = wait_timeline
            sems = ffi.new("VkSemaphore[]", [semaphore])
            values = ffi.new("uint64_t[]", [int(value)])
            stages = ffi.new("VkPipelineStageFlags[]", [vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT])
            timeline_info = ffi.new(
                "VkTimelineSemaphoreSubmitInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                    "waitSemaphoreValueCount": 1,
                    "pWaitSemaphoreValues": values,
                },
            )
            submit.pNext = timeline_info
            submit.waitSemaphoreCount = 1
            submit.pWaitSemaphores = sems
            submit.pWaitDstStageMask = stages
            keep += [sems, values, stages, timeline_info]
        check(dfn.vkQueueSubmit(queue, 1, submit, self._fence), "vkQueueSubmit")

    def wait(self, timeout_ns: int) -> FenceWait:
        """Wait for the submission's fence at most ``timeout_ns``; a timeout or a failure is a result."""
        dev = self._dev
        fences = dev.api.ffi.new("VkFence[]", [self._fence])
        # A raw call: VK_TIMEOUT comes back as a result (the vulkan package's wrapper would raise VkTimeout).
        result = int(dev.dfn.vkWaitForFences(dev.device, 1, fences, 1, int(timeout_ns)))
        if result == VK_SUCCESS:
            return FenceWait(WaitStatus.SIGNALED, result)
        if result == VK_TIMEOUT:
            return FenceWait(WaitStatus.TIMED_OUT, result)
        return FenceWait(WaitStatus.FAILED, result)

    def destroy(self) -> None:
        """Destroy the fence, the pool (and its command buffer), views, images and memory. Idempotent."""
        dev = self._dev
        device, dfn, null = dev.device, dev.dfn, dev.api.ffi.NULL
        if device is None:
            return  # the device is gone, and everything made on it with it
        fence, self._fence = self._fence, None
        pool, self._pool, self._cmd = self._pool, None, None
        views, self._views = self._views, []
        images, self._images = self._images, []
        memories, self._memories = self._memories, []
        if fence is not None:
            dfn.vkDestroyFence(device, fence, null)
        if pool is not None:
            dfn.vkDestroyCommandPool(device, pool, null)
        for view in views:
            dfn.vkDestroyImageView(device, view, null)
        for image in images:
            dfn.vkDestroyImage(device, image, null)
        for memory in memories:
            dfn.vkFreeMemory(device, memory, null)
