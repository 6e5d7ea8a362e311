"""Exportable Vulkan objects for the GPU-copy ring: plane images on OPAQUE_FD memory, and semaphores.

Each plane image is an OPTIMAL-tiling 2D image with ``VkExternalMemoryImageCreateInfo(OPAQUE_FD)`` and a
dedicated, exportable allocation, so that CUDA (``cuImportExternalMemory`` + a mipmapped array) and
Dawn (``SharedTextureMemory`` from the same ``VkImageCreateInfo``) can both use its memory. The
``VkImageCreateInfo`` stays alive as long as the image (Dawn reads it during the import and makes the
same image on the memory). Semaphores are binary or timeline, exportable as OPAQUE_FD for CUDA and Dawn.

Support is asked before anything is made (:func:`external_image_support`,
:func:`external_semaphore_support`): lavapipe exports memory fds but no semaphore fds, which is
reported as a reason, not a crash. Everything is destroyed exactly once (``close()`` or the GC
backstop), handles swapped to None first.

Calls go through H3's function tables (``dfn`` / ``ifn``), whose raw calls return the VkResult that
:func:`~alpha2.native_gpu._vk.core.check` turns into typed errors.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

from alpha2.gpu.errors import GpuTimeoutError, InvalidInputError
from alpha2.gpu.handles import OwnedFd
from alpha2.native_gpu._vk.core import VK_SUCCESS, VK_TIMEOUT, VulkanApi, check

__all__ = [
    "VK_QUEUE_FAMILY_EXTERNAL",
    "ExportableImage",
    "ExportableSemaphore",
    "ExternalSupport",
    "VulkanDeviceAccess",
    "external_image_support",
    "external_semaphore_support",
    "transition_for_external",
]

VK_QUEUE_FAMILY_EXTERNAL = 0xFFFFFFFE
VK_QUEUE_FAMILY_IGNORED = 0xFFFFFFFF
VK_IMAGE_LAYOUT_UNDEFINED = 0
VK_IMAGE_LAYOUT_GENERAL = 1
_OPAQUE_FD = 0x1  # VK_EXTERNAL_{MEMORY,SEMAPHORE}_HANDLE_TYPE_OPAQUE_FD_BIT
_MEMORY_DEDICATED_ONLY = 0x1
_MEMORY_EXPORTABLE = 0x2
_MEMORY_IMPORTABLE = 0x4
_SEMAPHORE_EXPORTABLE = 0x1
_SEMAPHORE_IMPORTABLE = 0x2
_DEVICE_LOCAL = 0x1
_USAGE_TRANSFER_SRC = 0x1
_USAGE_TRANSFER_DST = 0x2
_USAGE_SAMPLED = 0x4
DEFAULT_PLANE_USAGE = _USAGE_TRANSFER_SRC | _USAGE_TRANSFER_DST | _USAGE_SAMPLED
"""TRANSFER_SRC | TRANSFER_DST | SAMPLED: Dawn needs TRANSFER_DST on imported images."""


class VulkanDeviceAccess(Protocol):
    """The raw side of a SharedVulkanContext used here (``context._internal``: a VulkanDeviceState)."""

    api: VulkanApi
    device: Any
    physical_device: Any
    dfn: Any
    ifn: Any
    locks: dict[tuple[int, int], Any]

    def queue(self, family: int, index: int = 0) -> Any: ...

    def find_memory_type(self, type_bits: int, required_flags: int, preferred_flags: int = 0) -> int: ...


@dataclass(frozen=True)
class ExternalSupport:
    """Whether a kind of object can be exported / imported as an OPAQUE_FD on this device."""

    exportable: bool
    """vkGet*Fd works for it."""
    importable: bool
    """An fd of it can be imported back."""
    dedicated_only: bool = False
    """Memory only: it must be a dedicated allocation."""
    reason: str | None = None
    """Why it cannot be exported, when it cannot."""


def external_image_support(
    dev: VulkanDeviceAccess, vk_format: int, usage: int = DEFAULT_PLANE_USAGE
) -> ExternalSupport:
    """Whether an OPTIMAL 2D image of ``vk_format`` / ``usage`` can live on exportable OPAQUE_FD memory."""
    api = dev.api
    ffi, vk = api.ffi, api.vk
    if not dev.ifn.has("vkGetPhysicalDeviceImageFormatProperties2"):
        return ExternalSupport(False, False, reason="vkGetPhysicalDeviceImageFormatProperties2 is missing")
    ext_info = ffi.new(
        "VkPhysicalDeviceExternalImageFormatInfo*",
        {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO, "handleType": _OPAQUE_FD},
    )
    info = ffi.new(
        "VkPhysicalDeviceImageFormatInfo2*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2,
            "pNext": ext_info,
            "format": vk_format,
            "type": vk.VK_IMAGE_TYPE_2D,
            "tiling": vk.VK_IMAGE_TILING_OPTIMAL,
            "usage": usage,
            "flags": 0,
        },
    )
    ext_props = ffi.new(
        "VkExternalImageFormatProperties*", {"sType": vk.VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES}
    )
    props = ffi.new(
        "VkImageFormatProperties2*",
        {"sType": vk.VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2, "pNext": ext_props},
    )
    result = int(dev.ifn.vkGetPhysicalDeviceImageFormatProperties2(dev.physical_device, info, props))
    if result != VK_SUCCESS:
        return ExternalSupport(
            False, False, reason=f"format {vk_format} with OPAQUE_FD memory: VkResult {result}"
        )
    features = int(ext_props.externalMemoryProperties.externalMemoryFeatures)
    exportable = bool(features & _MEMORY_EXPORTABLE)
    return ExternalSupport(
        exportable=exportable,
        importable=bool(features & _MEMORY_IMPORTABLE),
        dedicated_only=bool(features & _MEMORY_DEDICATED_ONLY),
        reason=None if exportable else f"OPAQUE_FD memory of format {vk_format} is not exportable",
    )


def external_semaphore_support(dev: VulkanDeviceAccess, *, timeline: bool) -> ExternalSupport:
    """Whether a (binary or timeline) semaphore can be exported and imported as an OPAQUE_FD."""
    api = dev.api
    ffi, vk = api.ffi, api.vk
    kind = "timeline" if timeline else "binary"
    if not dev.ifn.has("vkGetPhysicalDeviceExternalSemaphoreProperties"):
        return ExternalSupport(
            False, False, reason="vkGetPhysicalDeviceExternalSemaphoreProperties is missing"
        )
    type_info = ffi.new(
        "VkSemaphoreTypeCreateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
            "semaphoreType": vk.VK_SEMAPHORE_TYPE_TIMELINE if timeline else vk.VK_SEMAPHORE_TYPE_BINARY,
            "initialValue": 0,
        },
    )
    info = ffi.new(
        "VkPhysicalDeviceExternalSemaphoreInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
            "pNext": type_info,
            "handleType": _OPAQUE_FD,
        },
    )
    props = ffi.new(
        "VkExternalSemaphoreProperties*", {"sType": vk.VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES}
    )
    dev.ifn.vkGetPhysicalDeviceExternalSemaphoreProperties(dev.physical_device, info, props)
    features = int(props.externalSemaphoreFeatures)
    exportable = bool(features & _SEMAPHORE_EXPORTABLE)
    reason = None
    if not exportable:
        reason = (
            f"this Vulkan driver cannot export {kind} semaphores as OPAQUE_FD "
            f"(externalSemaphoreFeatures={features:#x})"
        )
    elif not dev.dfn.has("vkGetSemaphoreFdKHR"):
        exportable = False
        reason = "VK_KHR_external_semaphore_fd is not enabled on the device (vkGetSemaphoreFdKHR missing)"
    return ExternalSupport(
        exportable=exportable, importable=bool(features & _SEMAPHORE_IMPORTABLE), reason=reason
    )


# ---------------------------------------------------------------------------------------------------
# images


class _ImageHandles:
    """What an image's GC backstop frees (never the image object)."""

    __slots__ = ("dev", "image", "memory")

    def __init__(self, dev: VulkanDeviceAccess) -> None:
        self.dev: VulkanDeviceAccess | None = dev
        self.image: Any = None
        self.memory: Any = None


def _destroy_image(handles: _ImageHandles) -> None:
    dev, handles.dev = handles.dev, None
    image, handles.image = handles.image, None
    memory, handles.memory = handles.memory, None
    if dev is None or getattr(dev, "closed", False):
        return  # the device is gone, and everything made on it with it
    null = dev.api.ffi.NULL
    if image is not None:
        dev.dfn.vkDestroyImage(dev.device, image, null)
    if memory is not None:
        dev.dfn.vkFreeMemory(dev.device, memory, null)


class ExportableImage:
    """A 2D OPTIMAL image on its own exportable OPAQUE_FD allocation.

    Args:
        dev: The device's raw access.
        width, height: Size in texels.
        vk_format: The VkFormat (R8, R8G8, R16, R16G16 ... for planes).
        usage: VkImageUsageFlags (TRANSFER_DST is needed for Dawn's import).

    Raises:
        SharedVulkanError (typed by VkResult): creation, allocation or binding failed; nothing is left.
    """

    def __init__(
        self,
        dev: VulkanDeviceAccess,
        width: int,
        height: int,
        vk_format: int,
        usage: int = DEFAULT_PLANE_USAGE,
    ) -> None:
        if width <= 0 or height <= 0:
            raise InvalidInputError(f"image size must be positive, got {width}x{height}")
        api = dev.api
        ffi, vk = api.ffi, api.vk
        self._dev = dev
        self.width = width
        """Width in texels."""
        self.height = height
        """Height in texels."""
        self.vk_format = vk_format
        """The image's VkFormat."""
        self.usage = usage
        """The image's usage flags."""
        self.layout = VK_IMAGE_LAYOUT_UNDEFINED
        """The layout the image was last left in (tracked by the owner)."""
        self._external_info = ffi.new(
            "VkExternalMemoryImageCreateInfo*",
            {"sType": vk.VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO, "handleTypes": _OPAQUE_FD},
        )
        # Kept for the image's life: Dawn's import reads it to make the same image on the memory.
        self._create_info = ffi.new(
            "VkImageCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                "pNext": self._external_info,
                "flags": 0,
                "imageType": vk.VK_IMAGE_TYPE_2D,
                "format": vk_format,
                "extent": {"width": width, "height": height, "depth": 1},
                "mipLevels": 1,
                "arrayLayers": 1,
                "samples": vk.VK_SAMPLE_COUNT_1_BIT,
                "tiling": vk.VK_IMAGE_TILING_OPTIMAL,
                "usage": usage,
                "sharingMode": vk.VK_SHARING_MODE_EXCLUSIVE,
                "initialLayout": VK_IMAGE_LAYOUT_UNDEFINED,
            },
        )
        self._handles = _ImageHandles(dev)
        self._finalizer = weakref.finalize(self, _destroy_image, self._handles)
        try:
            out_image = ffi.new("VkImage*")
            check(dev.dfn.vkCreateImage(dev.device, self._create_info, ffi.NULL, out_image), "vkCreateImage")
            self._handles.image = out_image[0]
            reqs = ffi.new("VkMemoryRequirements*")
            dev.dfn.vkGetImageMemoryRequirements(dev.device, self._handles.image, reqs)
            self.size_bytes = int(reqs.size)
            """Size of the dedicated allocation (what importers must be told)."""
            self.memory_type_index = dev.find_memory_type(int(reqs.memoryTypeBits), _DEVICE_LOCAL)
            """Memory type of the allocation."""
            dedicated = ffi.new(
                "VkMemoryDedicatedAllocateInfo*",
                {"sType": vk.VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, "image": self._handles.image},
            )
            export = ffi.new(
                "VkExportMemoryAllocateInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                    "pNext": dedicated,
                    "handleTypes": _OPAQUE_FD,
                },
            )
            alloc = ffi.new(
                "VkMemoryAllocateInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                    "pNext": export,
                    "allocationSize": self.size_bytes,
                    "memoryTypeIndex": self.memory_type_index,
                },
            )
            out_memory = ffi.new("VkDeviceMemory*")
            check(
                dev.dfn.vkAllocateMemory(dev.device, alloc, ffi.NULL, out_memory),
                "vkAllocateMemory (exportable)",
            )
            self._handles.memory = out_memory[0]
            check(
                dev.dfn.vkBindImageMemory(dev.device, self._handles.image, self._handles.memory, 0),
                "vkBindImageMemory",
            )
        except BaseException:
            self._finalizer()
            raise

    @property
    def closed(self) -> bool:
        """Whether the image was destroyed."""
        return self._handles.image is None

    @property
    def handle(self) -> Any:
        """The VkImage (raises InvalidInputError once destroyed)."""
        if self._handles.image is None:
            raise InvalidInputError("the exportable image was destroyed")
        return self._handles.image

    @property
    def create_info_address(self) -> int:
        """Address of the image's VkImageCreateInfo (Dawn's opaque-fd import reads it; valid while open)."""
        if self._handles.image is None:
            raise InvalidInputError("the exportable image was destroyed")
        return int(self._dev.api.ffi.cast("uintptr_t", self._create_info))

    def export_memory_fd(self) -> OwnedFd:
        """A new OPAQUE_FD for the image's memory (each call makes one; an import takes ownership)."""
        if self._handles.memory is None:
            raise InvalidInputError("the exportable image was destroyed")
        return _export_fd(self._dev, "Memory", "memory", self._handles.memory)

    def close(self) -> None:
        """Destroy the image and free its memory (importers' own references keep theirs). Idempotent."""
        self._finalizer()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.size_bytes} bytes"
        return f"<ExportableImage {self.width}x{self.height} format={self.vk_format} {state}>"


# ---------------------------------------------------------------------------------------------------
# semaphores


class _SemaphoreHandles:
    __slots__ = ("dev", "semaphore")

    def __init__(self, dev: VulkanDeviceAccess) -> None:
        self.dev: VulkanDeviceAccess | None = dev
        self.semaphore: Any = None


def _destroy_semaphore(handles: _SemaphoreHandles) -> None:
    dev, handles.dev = handles.dev, None
    semaphore, handles.semaphore = handles.semaphore, None
    if dev is not None and semaphore is not None and not getattr(dev, "closed", False):
        dev.dfn.vkDestroySemaphore(dev.device, semaphore, dev.api.ffi.NULL)


class ExportableSemaphore:
    """A binary or timeline semaphore exportable as an OPAQUE_FD.

    Raises:
        UnsupportedError: the driver cannot export such semaphores (the reason from
            :func:`external_semaphore_support`); nothing is made.
    """

    def __init__(self, dev: VulkanDeviceAccess, *, timeline: bool, initial_value: int = 0) -> None:
        from alpha2.gpu.errors import UnsupportedError

        support = external_semaphore_support(dev, timeline=timeline)
        if not support.exportable:
            raise UnsupportedError(support.reason or "semaphore export is not supported")
        api = dev.api
        ffi, vk = api.ffi, api.vk
        self._dev = dev
        self.timeline = timeline
        """Whether it is a timeline semaphore."""
        type_info = ffi.new(
            "VkSemaphoreTypeCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                "semaphoreType": vk.VK_SEMAPHORE_TYPE_TIMELINE if timeline else vk.VK_SEMAPHORE_TYPE_BINARY,
                "initialValue": initial_value if timeline else 0,
            },
        )
        export = ffi.new(
            "VkExportSemaphoreCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                "pNext": type_info,
                "handleTypes": _OPAQUE_FD,
            },
        )
        info = ffi.new(
            "VkSemaphoreCreateInfo*", {"sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, "pNext": export}
        )
        self._handles = _SemaphoreHandles(dev)
        self._finalizer = weakref.finalize(self, _destroy_semaphore, self._handles)
        out = ffi.new("VkSemaphore*")
        check(dev.dfn.vkCreateSemaphore(dev.device, info, ffi.NULL, out), "vkCreateSemaphore (exportable)")
        self._handles.semaphore = out[0]

    @property
    def handle(self) -> Any:
        """The VkSemaphore."""
        if self._handles.semaphore is None:
            raise InvalidInputError("the exportable semaphore was destroyed")
        return self._handles.semaphore

    def export_fd(self) -> OwnedFd:
        """A new OPAQUE_FD for the semaphore (an import takes ownership of it)."""
        return _export_fd(self._dev, "Semaphore", "semaphore", self.handle)

    def close(self) -> None:
        """Destroy the semaphore (no submitted work may still use it). Idempotent."""
        self._finalizer()


def _export_fd(dev: VulkanDeviceAccess, kind: str, member: str, handle: Any) -> OwnedFd:
    """A new OPAQUE_FD of a ``kind`` (``Memory``, ``Semaphore``) through ``vkGet<kind>FdKHR``."""
    api = dev.api
    ffi, vk = api.ffi, api.vk
    info = ffi.new(
        f"Vk{kind}GetFdInfoKHR*",
        {
            "sType": getattr(vk, f"VK_STRUCTURE_TYPE_{kind.upper()}_GET_FD_INFO_KHR"),
            member: handle,
            "handleType": _OPAQUE_FD,
        },
    )
    out = ffi.new("int*")
    function = f"vkGet{kind}FdKHR"
    check(getattr(dev.dfn, function)(dev.device, info, out), function)
    return OwnedFd(int(out[0]))


# ---------------------------------------------------------------------------------------------------
# the one-time layout transition


def transition_for_external(
    dev: VulkanDeviceAccess, images: list[ExportableImage], queue_family: int, timeout_s: float
) -> None:
    """UNDEFINED -> GENERAL and release to VK_QUEUE_FAMILY_EXTERNAL, once, before CUDA writes the images.

    Without it the first consumer's acquire from UNDEFINED could discard what CUDA wrote. Waits for the
    submission with a fence, bounded by ``timeout_s``.

    Raises:
        GpuTimeoutError: the submission did not finish in time (its command pool and fence are then
            handed to the context's ``defer_destroy``, freed once the device is idle at close).
        SharedVulkanError: a Vulkan call failed.
    """
    if not images:
        return
    api = dev.api
    ffi, vk = api.ffi, api.vk
    fn = dev.dfn
    null = ffi.NULL
    pool_info = ffi.new(
        "VkCommandPoolCreateInfo*",
        {"sType": vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, "queueFamilyIndex": queue_family},
    )
    out_pool = ffi.new("VkCommandPool*")
    check(fn.vkCreateCommandPool(dev.device, pool_info, null, out_pool), "vkCreateCommandPool")
    pool = out_pool[0]
    fence = None
    in_flight = False
    try:
        alloc = ffi.new(
            "VkCommandBufferAllocateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                "commandPool": pool,
                "level": vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                "commandBufferCount": 1,
            },
        )
        out_cb = ffi.new("VkCommandBuffer*")
        check(fn.vkAllocateCommandBuffers(dev.device, alloc, out_cb), "vkAllocateCommandBuffers")
        cb = out_cb[0]
        begin = ffi.new(
            "VkCommandBufferBeginInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                "flags": vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
            },
        )
        check(fn.vkBeginCommandBuffer(cb, begin), "vkBeginCommandBuffer")
        barriers = ffi.new("VkImageMemoryBarrier[]", len(images))
        for i, image in enumerate(images):
            b = barriers[i]
            b.sType = vk.VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER
            b.srcAccessMask = 0
            b.dstAccessMask = 0
            b.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED
            b.newLayout = VK_IMAGE_LAYOUT_GENERAL
            b.srcQueueFamilyIndex = queue_family
            b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_EXTERNAL
            b.image = image.handle
            b.subresourceRange.aspectMask = vk.VK_IMAGE_ASPECT_COLOR_BIT
            b.subresourceRange.baseMipLevel = 0
            b.subresourceRange.levelCount = 1
            b.subresourceRange.baseArrayLayer = 0
            b.subresourceRange.layerCount = 1
        fn.vkCmdPipelineBarrier(
            cb,
            vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
            vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
            0,
            0,
            null,
            0,
            null,
            len(images),
            barriers,
        )
        check(fn.vkEndCommandBuffer(cb), "vkEndCommandBuffer")
        fence_info = ffi.new("VkFenceCreateInfo*", {"sType": vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO})
        out_fence = ffi.new("VkFence*")
        check(fn.vkCreateFence(dev.device, fence_info, null, out_fence), "vkCreateFence")
        fence = out_fence[0]
        cbs = ffi.new("VkCommandBuffer[]", [cb])
        submit = ffi.new(
            "VkSubmitInfo*",
            {"sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, "commandBufferCount": 1, "pCommandBuffers": cbs},
        )
        with dev.locks[(queue_family, 0)]:  # every submitter to a shared queue holds its lock
            check(
                fn.vkQueueSubmit(dev.queue(queue_family), 1, submit, fence),
                "vkQueueSubmit (layout transition)",
            )
        in_flight = True
        fences = ffi.new("VkFence[]", [fence])
        deadline = time.monotonic() + timeout_s
        while True:
            left = max(0.0, deadline - time.monotonic())
            result = check(
                fn.vkWaitForFences(dev.device, 1, fences, 1, min(int(left * 1e9), 100_000_000)),
                "vkWaitForFences",
            )
            if result == VK_SUCCESS:
                in_flight = False
                break
            if result == VK_TIMEOUT and time.monotonic() >= deadline:
                raise GpuTimeoutError(
                    f"the one-time layout transition of {len(images)} plane images did not finish in "
                    f"{timeout_s:.3g} s (raise it with set_gpu_wait_timeout)"
                )
        for image in images:
            image.layout = VK_IMAGE_LAYOUT_GENERAL
    finally:

        def free() -> None:
            if fence is not None:
                fn.vkDestroyFence(dev.device, fence, null)
            fn.vkDestroyCommandPool(dev.device, pool, null)

        if in_flight:  # never free what the GPU may still use
            defer = getattr(dev, "defer_destroy", None)
            if defer is not None:
                defer(free)
        else:
            free()
