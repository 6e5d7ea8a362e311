"""Video decode / encode capabilities of a physical device (vkGetPhysicalDeviceVideoCapabilitiesKHR).

:func:`codec_operations` lists the codec operations alpha2 asks about (H.264, H.265, AV1, VP9 decode;
H.264, H.265, AV1 encode), each with its extension, the Vulkan constants of its profile and capability
structures, and the profiles to query. :func:`video_capabilities` asks for one profile at one bit depth
(4:2:0) and returns plain values; a refusal by the driver is a result (``supported=False`` with the
VkResult's name), not an exception.

The codec structures are filled through a generic layout rather than their own declarations: AV1 and
VP9 are newer than the ``vulkan`` package's headers. Every codec profile structure starts
``{sType, pNext, <32-bit profile>, <32-bit second field>}`` (H.264 decode's layout fits them all), and the
capability structures put ``maxLevel`` right after the header (decode) or after one 32-bit flags word
(encode).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from alpha2.gpu.adapters import VideoCodec
from alpha2.native_gpu._vk.core import VulkanApi, result_name, vulkan_api
from alpha2.native_gpu._vk.query import PhysicalDevice
from alpha2.native_gpu._vk.structs import constant, raw_struct

__all__ = ["CodecOperation", "VideoCapabilities", "VideoProfile", "codec_operations", "video_capabilities"]


@dataclass(frozen=True)
class VideoProfile:
    """A codec profile to query."""

    name: str
    """Profile name ('High', 'Main 10', ...)."""
    std_profile: int
    """The StdVideo*Profile(Idc) value."""
    bit_depth: int
    """Luma and chroma bit depth."""


@dataclass(frozen=True)
class CodecOperation:
    """One codec operation (decode or encode of one codec) and how to ask the driver about it."""

    codec: VideoCodec
    """The codec."""
    decode: bool
    """Decode (True) or encode (False)."""
    operation_bit: int
    """VkVideoCodecOperationFlagBitsKHR."""
    extension: str
    """The codec's device extension (VK_KHR_video_decode_h264, ...)."""
    queue_extension: str
    """VK_KHR_video_decode_queue or VK_KHR_video_encode_queue."""
    profile_stype: int
    """VkStructureType of the codec's profile structure."""
    capabilities_stype: int
    """VkStructureType of the codec's capability structure."""
    profiles: tuple[VideoProfile, ...]
    """Profiles to query."""


@dataclass(frozen=True)
class VideoCapabilities:
    """What vkGetPhysicalDeviceVideoCapabilitiesKHR said about one profile."""

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
    """The refusing VkResult's name, or None."""


# (codec, decode, constant stem, profiles as (name, StdVideo profile value, bit depth)). The StdVideo
# values come from the vk_video headers, which the vulkan package does not carry.
_CODECS: tuple[tuple[VideoCodec, bool, str, tuple[tuple[str, int, int], ...]], ...] = (
    (VideoCodec.H264, True, "DECODE_H264", (("Baseline", 66, 8), ("Main", 77, 8), ("High", 100, 8))),
    (VideoCodec.H265, True, "DECODE_H265", (("Main", 1, 8), ("Main 10", 2, 10))),
    (VideoCodec.AV1, True, "DECODE_AV1", (("Main", 0, 8), ("Main", 0, 10))),
    (VideoCodec.VP9, True, "DECODE_VP9", (("Profile 0", 0, 8), ("Profile 2", 2, 10))),
    (VideoCodec.H264, False, "ENCODE_H264", (("Main", 77, 8), ("High", 100, 8))),
    (VideoCodec.H265, False, "ENCODE_H265", (("Main", 1, 8), ("Main 10", 2, 10))),
    (VideoCodec.AV1, False, "ENCODE_AV1", (("Main", 0, 8), ("Main", 0, 10))),
)


@functools.cache
def _codec_operations(api: VulkanApi) -> tuple[CodecOperation, ...]:
    return tuple(
        CodecOperation(
            codec=codec,
            decode=decode,
            operation_bit=constant(f"VK_VIDEO_CODEC_OPERATION_{stem}_BIT_KHR", api),
            extension=f"VK_KHR_video_{stem.lower()}",
            queue_extension="VK_KHR_video_decode_queue" if decode else "VK_KHR_video_encode_queue",
            profile_stype=constant(f"VK_STRUCTURE_TYPE_VIDEO_{stem}_PROFILE_INFO_KHR", api),
            capabilities_stype=constant(f"VK_STRUCTURE_TYPE_VIDEO_{stem}_CAPABILITIES_KHR", api),
            profiles=tuple(VideoProfile(*p) for p in profiles),
        )
        for codec, decode, stem, profiles in _CODECS
    )


def codec_operations(api: VulkanApi | None = None) -> tuple[CodecOperation, ...]:
    """The codec operations alpha2 queries, decode first."""
    return _codec_operations(api if api is not None else vulkan_api())


def video_capabilities(
    device: PhysicalDevice, operation: CodecOperation, profile: VideoProfile
) -> VideoCapabilities:
    """Ask the driver about one profile of ``operation`` at ``profile.bit_depth``, 4:2:0.

    Raises:
        SharedVulkanUnsupportedError: the instance has no vkGetPhysicalDeviceVideoCapabilitiesKHR.
    """
    api = device.api
    ffi, vk = api.ffi, api.vk
    codec_profile_buf = raw_struct(api, operation.profile_stype, 64)
    codec_profile = ffi.cast("VkVideoDecodeH264ProfileInfoKHR*", codec_profile_buf)
    codec_profile.stdProfileIdc = profile.std_profile
    codec_profile.pictureLayout = 0  # progressive (H.264 decode); 0 film grain (AV1); unused elsewhere
    depth_flag = constant(f"VK_VIDEO_COMPONENT_BIT_DEPTH_{profile.bit_depth}_BIT_KHR", api)
    profile_info = ffi.new(
        "VkVideoProfileInfoKHR*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_VIDEO_PROFILE_INFO_KHR,
            "pNext": codec_profile_buf,
            "videoCodecOperation": operation.operation_bit,
            "chromaSubsampling": vk.VK_VIDEO_CHROMA_SUBSAMPLING_420_BIT_KHR,
            "lumaBitDepth": depth_flag,
            "chromaBitDepth": depth_flag,
        },
    )
    op_caps = raw_struct(
        api,
        vk.VK_STRUCTURE_TYPE_VIDEO_DECODE_CAPABILITIES_KHR
        if operation.decode
        else vk.VK_STRUCTURE_TYPE_VIDEO_ENCODE_CAPABILITIES_KHR,
        256,
    )
    codec_caps = raw_struct(api, operation.capabilities_stype, 1024)
    ffi.cast("VkBaseOutStructure*", op_caps).pNext = ffi.cast("VkBaseOutStructure*", codec_caps)
    caps = ffi.new(
        "VkVideoCapabilitiesKHR*", {"sType": vk.VK_STRUCTURE_TYPE_VIDEO_CAPABILITIES_KHR, "pNext": op_caps}
    )
    result = int(device.fn.vkGetPhysicalDeviceVideoCapabilitiesKHR(device.handle, profile_info, caps))
    if result != 0:
        return VideoCapabilities(supported=False, reason=result_name(result))
    words = ffi.cast("uint32_t*", codec_caps)
    level = int(words[4] if operation.decode else words[5])
    return VideoCapabilities(
        supported=True,
        max_coded_extent=(int(caps.maxCodedExtent.width), int(caps.maxCodedExtent.height)),
        min_coded_extent=(int(caps.minCodedExtent.width), int(caps.minCodedExtent.height)),
        max_dpb_slots=int(caps.maxDpbSlots),
        max_active_reference_pictures=int(caps.maxActiveReferencePictures),
        max_level=level,
    )
