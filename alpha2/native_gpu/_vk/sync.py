"""Timeline semaphores on a :class:`~alpha2.native_gpu._vk.device.VulkanDeviceState`: create, destroy,
read the counter, signal from the host and wait with a timeout.

A timed wait returns a :class:`~alpha2.gpu.sync.WaitStatus` (``TIMED_OUT`` on VK_TIMEOUT), it does not
raise: the call is raw, so VK_TIMEOUT comes back as a result code (the ``vulkan`` package's wrapper would
raise VkTimeout). Other failures raise the typed error of :func:`~alpha2.native_gpu._vk.core.check`.
Handles are opaque to the caller; :func:`semaphore_from_address` turns another library's integer
VkSemaphore into one.
"""

from __future__ import annotations

from typing import Any

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.sync import WaitStatus
from alpha2.native_gpu._vk.core import VK_TIMEOUT, VulkanApi, check
from alpha2.native_gpu._vk.device import VulkanDeviceState

__all__ = [
    "UINT64_MAX",
    "counter_value",
    "create_timeline",
    "destroy_semaphore",
    "semaphore_from_address",
    "signal_timeline",
    "wait_timeline",
]

UINT64_MAX = (1 << 64) - 1
"""The largest timeline value."""


def create_timeline(dev: VulkanDeviceState, initial_value: int = 0) -> Any:
    """A new timeline VkSemaphore at ``initial_value``; the caller destroys it (:func:`destroy_semaphore`)."""
    api = dev.api
    ffi, vk = api.ffi, api.vk
    if not 0 <= int(initial_value) <= UINT64_MAX:
        raise InvalidInputError(f"initial_value must be a uint64, got {initial_value}")
    type_info = ffi.new(
        "VkSemaphoreTypeCreateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
            "semaphoreType": vk.VK_SEMAPHORE_TYPE_TIMELINE,
            "initialValue": int(initial_value),
        },
    )
    info = ffi.new(
        "VkSemaphoreCreateInfo*", {"sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, "pNext": type_info}
    )
    out = ffi.new("VkSemaphore*")
    check(dev.dfn.vkCreateSemaphore(dev.device, info, ffi.NULL, out), "vkCreateSemaphore (timeline)")
    return out[0]


def destroy_semaphore(dev: VulkanDeviceState, semaphore: Any) -> None:
    """vkDestroySemaphore; nothing when the device is already gone (it took its semaphores with it)."""
    if semaphore is not None and dev.device is not None:
        dev.dfn.vkDestroySemaphore(dev.device, semaphore, dev.api.ffi.NULL)


def counter_value(dev: VulkanDeviceState, semaphore: Any) -> int:
    """The semaphore's current counter value (vkGetSemaphoreCounterValue)."""
    out = dev.api.ffi.new("uint64_t*")
    check(dev.dfn.vkGetSemaphoreCounterValue(dev.device, semaphore, out), "vkGetSemaphoreCounterValue")
    return int(out[0])


def signal_timeline(dev: VulkanDeviceState, semaphore: Any, value: int) -> None:
    """Signal ``value`` from the host (vkSignalSemaphore); it must exceed the current value."""
    api = dev.api
    info = api.ffi.new(
        "VkSemaphoreSignalInfo*",
        {
            "sType": api.vk.VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
            "semaphore": semaphore,
            "value": int(value),
        },
    )
    check(dev.dfn.vkSignalSemaphore(dev.device, info), "vkSignalSemaphore")


def wait_timeline(dev: VulkanDeviceState, semaphore: Any, value: int, timeout_ns: int) -> WaitStatus:
    """Wait until the counter reaches ``value``, at most ``timeout_ns``: SIGNALED or TIMED_OUT.

    Raises:
        SharedVulkanError: vkWaitSemaphores failed (device lost, out of memory).
    """
    api = dev.api
    ffi = api.ffi
    semaphores = ffi.new("VkSemaphore[]", [semaphore])
    values = ffi.new("uint64_t[]", [int(value)])
    info = ffi.new(
        "VkSemaphoreWaitInfo*",
        {
            "sType": api.vk.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
            "semaphoreCount": 1,
            "pSemaphores": semaphores,
            "pValues": values,
        },
    )
    result = int(dev.dfn.vkWaitSemaphores(dev.device, info, int(timeout_ns)))
    if result == VK_TIMEOUT:
        return WaitStatus.TIMED_OUT
    check(result, "vkWaitSemaphores")
    return WaitStatus.SIGNALED


def semaphore_from_address(api: VulkanApi, address: int) -> Any:
    """A VkSemaphore handle from its integer value (another library's semaphore).

    Raises:
        InvalidInputError: ``address`` is 0 (VK_NULL_HANDLE).
    """
    if address == 0:
        raise InvalidInputError("VkSemaphore handle is 0")
    return api.ffi.cast("VkSemaphore", address)
