"""Vulkan constants by name, from the ``vulkan`` package, and the few that are newer than its headers.

The ``vulkan`` package defines its constants only after it has opened the loader, so they are read on
first use (:func:`constant`), never copied by hand. The package's headers (1.3.275) lack the AV1 and VP9
video structures and codec operations: their values are kept in :data:`NEWER_THAN_PACKAGE`, as the
Vulkan registry derives them (``1000000000 + (extension number - 1) * 1000 + offset`` for structure
types). :func:`link` chains structures through ``pNext``; :func:`raw_struct` makes a zeroed buffer for a
structure the package has no declaration for.
"""

from __future__ import annotations

from typing import Any

from alpha2.gpu.errors import InvalidInputError
from alpha2.native_gpu._vk.core import VulkanApi, vulkan_api

__all__ = ["NEWER_THAN_PACKAGE", "constant", "link", "raw_struct"]

NEWER_THAN_PACKAGE: dict[str, int] = {
    # VK_KHR_video_decode_av1 (extension 513)
    "VK_STRUCTURE_TYPE_VIDEO_DECODE_AV1_CAPABILITIES_KHR": 1000512000,
    "VK_STRUCTURE_TYPE_VIDEO_DECODE_AV1_PROFILE_INFO_KHR": 1000512003,
    "VK_VIDEO_CODEC_OPERATION_DECODE_AV1_BIT_KHR": 0x4,
    # VK_KHR_video_encode_av1 (extension 514)
    "VK_STRUCTURE_TYPE_VIDEO_ENCODE_AV1_CAPABILITIES_KHR": 1000513000,
    "VK_STRUCTURE_TYPE_VIDEO_ENCODE_AV1_PROFILE_INFO_KHR": 1000513005,
    "VK_VIDEO_CODEC_OPERATION_ENCODE_AV1_BIT_KHR": 0x40000,
    # VK_KHR_video_decode_vp9 (extension 515)
    "VK_STRUCTURE_TYPE_VIDEO_DECODE_VP9_CAPABILITIES_KHR": 1000514001,
    "VK_STRUCTURE_TYPE_VIDEO_DECODE_VP9_PROFILE_INFO_KHR": 1000514003,
    "VK_VIDEO_CODEC_OPERATION_DECODE_VP9_BIT_KHR": 0x8,
}
"""Constants the ``vulkan`` package's headers do not have yet, by their Vulkan name."""


def constant(name: str, api: VulkanApi | None = None) -> int:
    """The value of the Vulkan constant ``name`` (``VK_STRUCTURE_TYPE_...``, ``VK_FORMAT_...``).

    Raises:
        InvalidInputError: neither the ``vulkan`` package nor :data:`NEWER_THAN_PACKAGE` has it.
        VulkanUnavailableError: no Vulkan loader (the package cannot be loaded).
    """
    vk = (api if api is not None else vulkan_api()).vk
    value = getattr(vk, name, None)
    if value is None:
        value = NEWER_THAN_PACKAGE.get(name)
    if not isinstance(value, int):
        raise InvalidInputError(f"{name} is not a Vulkan constant the vulkan package or alpha2 knows")
    return value


def link(head: Any, *structs: Any) -> Any:
    """Chain ``structs`` (None ones skipped) behind ``head`` through ``pNext``, in order; returns ``head``."""
    tail = head
    for struct in structs:
        if struct is not None:
            tail.pNext = struct
            tail = struct
    return head


def raw_struct(api: VulkanApi, stype: int, size_bytes: int = 512) -> Any:
    """A zeroed buffer whose first field (``sType``) is ``stype``, for a structure the package lacks.

    Vulkan's output structures all start ``{sType, pNext}``; the buffer is large enough for any of the
    capability structures read here, and the driver writes only what its own header declares.
    """
    buf = api.ffi.new("uint8_t[]", size_bytes)
    api.ffi.cast("VkBaseOutStructure*", buf).sType = stype
    return buf
