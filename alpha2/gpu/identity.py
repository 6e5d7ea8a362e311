"""Identity: which API a resource belongs to, which physical device, and which path a frame took."""

from __future__ import annotations

import enum
import uuid as _uuid
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from alpha2.gpu.errors import InvalidInputError


class BackendKind(enum.Enum):
    """The API a resource, context or queue belongs to."""

    CPU = "cpu"
    VULKAN = "vulkan"
    CUDA = "cuda"
    WGPU = "wgpu"
    OPENGL = "opengl"
    D3D11 = "d3d11"
    D3D12 = "d3d12"
    METAL = "metal"
    OPENCL = "opencl"
    DMABUF = "dmabuf"
    ANDROID = "android"
    COREVIDEO = "corevideo"


class ExecutionPath(enum.Enum):
    """How a frame's pixels travelled. Every frame reports one; a silent fallback is a bug."""

    GPU_COPY = "gpu_copy"
    """Copied between APIs on the GPU (e.g. CUDA planes into Vulkan-owned images); no CPU bytes."""
    ZERO_COPY = "zero_copy"
    """The consumer reads the producer's memory directly, without any copy."""
    CPU_UPLOAD = "cpu_upload"
    """Planes in host memory uploaded to the GPU (queue.write_texture)."""
    CPU_DOWNLOAD = "cpu_download"
    """GPU memory read back to host memory (e.g. NVDEC frames downloaded, or a read-back ring)."""
    SOFTWARE = "software"
    """No GPU involved: decoded, converted or encoded on the CPU."""

    @property
    def crosses_cpu(self) -> bool:
        """Whether pixel bytes pass through host memory on this path."""
        return self in (ExecutionPath.CPU_UPLOAD, ExecutionPath.CPU_DOWNLOAD, ExecutionPath.SOFTWARE)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _id_bytes(value: object, what: str, size: int) -> bytes:
    """A bytes-like value of ``size`` bytes, as bytes. Ints are refused: ``bytes(16)`` is 16 zeros."""
    if isinstance(value, (int, str)):
        raise InvalidInputError(f"{what} must be {size} bytes (bytes-like), got {type(value).__name__}")
    try:
        with memoryview(value) as view:  # type: ignore[arg-type]
            raw = view.tobytes()
    except TypeError:
        raise InvalidInputError(
            f"{what} must be {size} bytes (bytes-like), got {type(value).__name__}"
        ) from None
    if len(raw) != size:
        raise InvalidInputError(f"{what} must be {size} bytes, got {len(raw)}")
    return raw


def _uuid_bytes(value: object, what: str) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, _uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        try:
            return _uuid.UUID(value).bytes
        except ValueError as exc:
            raise InvalidInputError(f"{what} {value!r} is not a UUID") from exc
    if isinstance(value, int):
        raise InvalidInputError(
            f"{what} must be 16 bytes, a UUID string or a uuid.UUID, got {type(value).__name__}"
        )
    return _id_bytes(value, what, 16)


@dataclass(frozen=True, eq=False)
class DeviceId:
    """A physical device as APIs identify it. Equal by UUID when both sides know it.

    Equality (:meth:`same_device`) compares UUIDs when both sides have one, else LUIDs when both have one,
    else (vendor_id, device_id, name). It is not transitive where one side lacks a UUID: two H100s with
    different UUIDs differ, yet a DeviceId of the same model without a UUID equals each of them. Compare
    ids that come from APIs reporting UUIDs (Vulkan, CUDA) when several GPUs of one model are present.
    """

    vendor_id: int
    """PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel, 0x10005 Mesa for lavapipe)."""
    device_id: int
    """PCI device id, or the driver's own id for software devices."""
    name: str = ""
    """Human-readable device name as the driver reports it."""
    uuid: bytes | None = None
    """16-byte device UUID (VkPhysicalDeviceIDProperties.deviceUUID, cuDeviceGetUuid). Also given as a
    UUID string or ``uuid.UUID``; stored as bytes."""
    luid: bytes | None = None
    """8-byte LUID where the platform has one (Windows), else None. Given as bytes-like; stored as bytes."""
    drm_render_node: tuple[int, int] | None = None
    """(major, minor) of the DRM render node, where VK_EXT_physical_device_drm reports it."""

    def __post_init__(self) -> None:
        for field_name in ("vendor_id", "device_id"):
            value = getattr(self, field_name)
            if not _is_int(value) or not 0 <= value < 1 << 32:
                raise InvalidInputError(f"DeviceId.{field_name} must be an int in 0..2**32-1, got {value!r}")
        if not isinstance(self.name, str):
            raise InvalidInputError(f"DeviceId.name must be a str, got {type(self.name).__name__}")
        object.__setattr__(self, "uuid", _uuid_bytes(self.uuid, "DeviceId.uuid"))
        if self.luid is not None:
            object.__setattr__(self, "luid", _id_bytes(self.luid, "DeviceId.luid", 8))
        node = self.drm_render_node
        if node is not None:
            if (
                not isinstance(node, (tuple, list))
                or len(node) != 2
                or not all(_is_int(n) and n >= 0 for n in node)
            ):
                raise InvalidInputError(
                    f"DeviceId.drm_render_node must be (major, minor) non-negative ints or None, got {node!r}"
                )
            object.__setattr__(self, "drm_render_node", tuple(node))

    @property
    def uuid_str(self) -> str | None:
        """The UUID in its canonical text form, or None."""
        return str(_uuid.UUID(bytes=self.uuid)) if self.uuid else None

    def same_device(self, other: DeviceId) -> bool:
        """True when both name the same physical device: by UUID when both know it, else by ids and name."""
        if self.uuid is not None and other.uuid is not None:
            return self.uuid == other.uuid
        if self.luid is not None and other.luid is not None:
            return self.luid == other.luid
        return (self.vendor_id, self.device_id, self.name) == (other.vendor_id, other.device_id, other.name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeviceId):
            return NotImplemented
        return self.same_device(other)

    def __hash__(self) -> int:
        # Consistent with __eq__: devices equal by UUID share vendor and device ids.
        return hash((self.vendor_id, self.device_id))

    def __repr__(self) -> str:
        parts = [
            f"vendor_id={self.vendor_id:#06x}",
            f"device_id={self.device_id:#06x}",
            f"name={self.name!r}",
        ]
        if self.uuid is not None:
            parts.append(f"uuid={self.uuid_str!r}")
        if self.luid is not None:
            parts.append(f"luid={self.luid.hex()!r}")
        if self.drm_render_node is not None:
            parts.append(f"drm_render_node={self.drm_render_node!r}")
        return f"DeviceId({', '.join(parts)})"


@dataclass(frozen=True)
class DecoderPlacement:
    """Where a hardware decoder must run so that its frames land on the GPU that renders them.

    Made by whoever chose the GPU (``alpha2.native_gpu.Device.decoder_placement()``, or the front door's
    ranking when no device was given) and handed to the decoder, which knows nothing of devices.
    """

    cuda_ordinal: int | None
    """The CUDA ordinal of the rendering GPU; None when it has no CUDA counterpart (no NVDEC)."""
    vulkan_index: int | None
    """The rendering GPU's index in the Vulkan loader's enumeration, where known."""
    reason: str
    """How the ordinal was found, or why there is none (shown in the decoder's report)."""
    join_current_context: bool = False
    """Open the decoder in the CUDA context current on the opening thread (another library's primary
    context, made current there by the placer) instead of retaining the primary context itself."""
    cuda_present: bool = True
    """Whether this machine has a usable CUDA device at all; False says the missing ordinal is not a
    matter of which GPU renders (no driver, no cuda-python, no device), so no other GPU would do."""

    def __post_init__(self) -> None:
        if self.cuda_ordinal is not None and self.cuda_ordinal < 0:
            raise InvalidInputError(f"cuda_ordinal must be non-negative, got {self.cuda_ordinal}")


@runtime_checkable
class PlacesDecoders(Protocol):
    """Anything that can say where a decoder must run for its frames (an alpha2 Device does)."""

    def decoder_placement(self) -> DecoderPlacement:
        """Where NVDEC must run for frames this object renders."""
        ...
