"""The only package that touches the ``vulkan`` package and cffi.

Importing it needs no Vulkan loader: the ``vulkan`` package (which ``dlopen``\\ s the loader when it is
imported) is loaded on first use by :func:`alpha2.native_gpu._vk.core.vulkan_api`, and a missing loader
becomes :class:`~alpha2.native_gpu._vk.core.VulkanUnavailableError`.

Modules: ``core`` (loader, VkResult check, function tables, instance), ``structs`` (constants by name,
``pNext`` chains), ``query`` (physical-device queries as plain values), ``video`` (video capabilities),
``device`` (the device state and its creation), ``sync`` (timeline semaphores), ``commands`` (one-shot
images, barriers, submission and fence wait), ``export`` (exportable images and semaphores). Everything
above ``_vk`` calls these and deals in Python values.
"""

from __future__ import annotations

from alpha2.native_gpu._vk.core import (
    SharedVulkanError,
    VulkanApi,
    VulkanUnavailableError,
    VulkanVersion,
    check,
    result_name,
    vulkan_api,
)

__all__ = [
    "SharedVulkanError",
    "VulkanApi",
    "VulkanUnavailableError",
    "VulkanVersion",
    "check",
    "result_name",
    "vulkan_api",
]
