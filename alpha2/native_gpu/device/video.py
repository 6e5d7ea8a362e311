"""Video decode / encode support of a Vulkan adapter: per codec operation, the queue families that
advertise it and each queried profile's capabilities.

:func:`video_support` reads it for one physical device (through :mod:`alpha2.native_gpu._vk.video`):
every codec operation a queue family advertises is listed, with a ``problem`` where its extensions are
missing or a profile query failed, never dropped. The types are re-exported by
:mod:`alpha2.native_gpu.device.candidates`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from alpha2.gpu.adapters import VideoCodec
from alpha2.native_gpu._vk.query import PhysicalDevice
from alpha2.native_gpu._vk.video import codec_operations, video_capabilities

__all__ = [
    "VideoCodecSupport",
    "VideoOperation",
    "VideoProfileCapabilities",
    "VideoQueueFamily",
    "video_support",
]


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


class VideoQueueFamily(Protocol):
    """What :func:`video_support` reads of a queue family (a VulkanQueueFamily)."""

    @property
    def index(self) -> int:
        """Queue family index."""
        ...

    @property
    def video_codec_operations(self) -> int:
        """VkVideoCodecOperationFlagsKHR."""
        ...


def video_support(
    device: PhysicalDevice,
    extensions: Collection[str],
    families: Sequence[VideoQueueFamily],
    problems: list[str],
) -> tuple[VideoCodecSupport, ...]:
    """The codec operations the queue families advertise, each with its profiles' capabilities.

    Args:
        device: the physical device.
        extensions: its device extensions (nothing is queried without VK_KHR_video_queue).
        families: the queue families (with their video codec operations).
        problems: failed profile queries are appended here (and named in the support's ``problem``).
    """
    if "VK_KHR_video_queue" not in extensions:
        return ()
    out = []
    for op in codec_operations(device.api):
        operation = VideoOperation.DECODE if op.decode else VideoOperation.ENCODE
        fams = tuple(f.index for f in families if f.video_codec_operations & op.operation_bit)
        if not fams:
            continue
        missing = [e for e in (op.queue_extension, op.extension) if e not in extensions]
        if missing:
            out.append(VideoCodecSupport(op.codec, operation, fams, problem=f"{', '.join(missing)} missing"))
            continue
        profiles = []
        problem = None
        for profile in op.profiles:
            try:
                caps = video_capabilities(device, op, profile)
            except Exception as exc:
                problem = f"{op.codec.value} {operation.value} {profile.name}: {exc}"
                problems.append(problem)
                continue
            # The raw query's fields, as they are, under the codec, operation and profile they answer.
            profiles.append(
                VideoProfileCapabilities(
                    op.codec, operation, profile.name, profile.bit_depth, **dataclasses.asdict(caps)
                )
            )
        out.append(VideoCodecSupport(op.codec, operation, fams, tuple(profiles), problem))
    return tuple(out)
