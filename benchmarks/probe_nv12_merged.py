"""One multi-planar shared texture for a frame's NV12 planes, against the ring's two (issue 27).

Dawn's ``wgpuQueueSubmit`` costs the CPU some 170-260 us per SharedTextureMemory texture used in a
submission (probe_shared_submit.py); a frame's two plane textures (R8 + RG8) are two of them. One
VK_FORMAT_G8_B8R8_2PLANE_420_UNORM image, imported into CUDA as an NV12 array and into Dawn as one
``r8bg8-biplanar-420-unorm`` texture sampled through two plane views, would be one. This probe asks
whether that works, and what it saves:

1. the alpha2 Device on Dawn, asked for ``dawn-multi-planar-formats`` (and
   ``multi-planar-format-extended-usages`` where the adapter has it), its shared Vulkan device and CUDA;
2. one exportable multi-planar VkImage (OPTIMAL, MUTABLE_FORMAT, SAMPLED | TRANSFER_SRC | TRANSFER_DST,
   dedicated OPAQUE_FD memory) on the shared Vulkan device, moved to GENERAL / external once;
3. its memory imported into CUDA as a mipmapped array of format CU_AD_FORMAT_NV12, level 0's planes
   (``cuArrayGetPlane`` 0 and 1) filled with a known pattern (``cuMemcpy2DAsync`` device -> array), then a
   binary semaphore signalled, as the ring's copy does;
4. the image imported into Dawn (SharedTextureMemory from the same VkImageCreateInfo, a texture, views
   ``plane0-only`` / ``plane1-only``), its access begun waiting on CUDA's semaphore, both planes read
   back by a compute shader and compared with the pattern texel for texel: whether CUDA's NV12 layout
   of the memory is Vulkan's multi-planar OPTIMAL layout;
5. the ring's slot of two textures (R8 + RG8, made the library's way) filled and read back the same
   way (a check of the readback itself);
6. the CPU's time in begin_access + one compute pass sampling both planes + submit + end_access, the
   merged texture against the two, without and with begin fences (CUDA signalling before each), medians
   in microseconds of ``--iterations`` iterations a row, ``--rounds`` rounds; the queue is drained every
   16 iterations, outside the timing;
7. everything ended and destroyed.

Each step prints one line, OK or the exception; the exit status is 0 when all passed, 1 otherwise (the
failing step named).

    python3 benchmarks/probe_nv12_merged.py --iterations 600 --rounds 2   # NVIDIA: Dawn, Vulkan, CUDA
    python3 benchmarks/probe_nv12_merged.py --format p010                  # 10-bit: P010 / R10X6BG10X6

``--format p010`` uses VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16 (Dawn's only 4:2:0 16-bit
biplanar format, ``r10x6bg10x6-biplanar-420-unorm``, feature ``multi-planar-format-p010``; the same
memory as P010: 10 bits high in 16), CU_AD_FORMAT_P010, plane views r16unorm / rg16unorm.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import sys
import time
import traceback
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

_MUTABLE_FORMAT = 0x8  # VK_IMAGE_CREATE_MUTABLE_FORMAT_BIT
_EXTENDED_USAGE = 0x100  # VK_IMAGE_CREATE_EXTENDED_USAGE_BIT
_OPAQUE_FD = 0x1
_MEMORY_EXPORTABLE = 0x2
_MEMORY_DEDICATED_ONLY = 0x1
_DEVICE_LOCAL = 0x1
_PLANE_USAGE = 0x1 | 0x2 | 0x4  # TRANSFER_SRC | TRANSFER_DST | SAMPLED
_WAIT_S = 10.0


@dataclass(frozen=True)
class Layout:
    """What a frame format is in each API."""

    name: str
    vk_format: int
    """The multi-planar VkFormat."""
    dawn_format: str
    """Dawn's texture format for it (what SharedTextureMemory reports)."""
    cuda_format: str
    """CUarray_format member name."""
    plane_views: tuple[str, str]
    """The plane views' formats."""
    bytes_per_channel: int
    features: tuple[str, ...]
    """Device features the merged texture needs."""
    optional_features: tuple[str, ...]
    """Asked for where the adapter has them."""
    pixel_format: str
    """alpha2's PixelFormat name of the ring's two-texture slot."""
    shift: int
    """Bits below the value in a 16-bit word (P010: 6)."""


LAYOUTS = {
    "nv12": Layout(
        "nv12",
        1000156003,  # VK_FORMAT_G8_B8R8_2PLANE_420_UNORM
        "r8bg8-biplanar-420-unorm",
        "CU_AD_FORMAT_NV12",
        ("r8unorm", "rg8unorm"),
        1,
        ("dawn-multi-planar-formats",),
        ("multi-planar-format-extended-usages",),
        "nv12",
        0,
    ),
    "p010": Layout(
        "p010",
        1000156013,  # VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16
        "r10x6bg10x6-biplanar-420-unorm",
        "CU_AD_FORMAT_P010",
        ("r16unorm", "rg16unorm"),
        2,
        ("dawn-multi-planar-formats", "multi-planar-format-p010", "unorm16-texture-formats"),
        ("multi-planar-format-extended-usages",),
        "p010le",
        6,
    ),
}

# Reads both planes of one frame: the Y plane's texel (x, y) into out[y * W + x], the chroma plane's
# (x, y) below it, as U | V << 16; in values of the stored integers (unorm * MAX, rounded).
READ_SHADER = """
@group(0) @binding(0) var y_plane: texture_2d<f32>;
@group(0) @binding(1) var uv_plane: texture_2d<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
const W: u32 = {W}u;
const H: u32 = {H}u;
const CW: u32 = {CW}u;
const CH: u32 = {CH}u;
const MAX: f32 = {MAX};
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
    if (id.x >= W || id.y >= H) {{
        return;
    }}
    let y = textureLoad(y_plane, vec2<i32>(id.xy), 0).r;
    out[id.y * W + id.x] = u32(round(y * MAX));
    if (id.x < CW && id.y < CH) {{
        let uv = textureLoad(uv_plane, vec2<i32>(id.xy), 0).rg;
        out[W * H + id.y * CW + id.x] = u32(round(uv.r * MAX)) | (u32(round(uv.g * MAX)) << 16u);
    }}
}}
"""


class StepFailed(Exception):
    """A step's check failed (not an exception of a call)."""


class Steps:
    """Numbered steps, each printing OK or its exception; the first failure is remembered."""

    def __init__(self) -> None:
        self.failed: str | None = None
        self._number = 0

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        self._number += 1
        label = f"step {self._number} ({name})"
        print(f"{label} ...", flush=True)
        try:
            yield
        except BaseException as exc:
            if self.failed is None:
                self.failed = label
            print(f"{label}: FAILED: {type(exc).__name__}: {exc}", flush=True)
            if not isinstance(exc, StepFailed):
                traceback.print_exc(limit=6)
            raise
        print(f"{label}: OK", flush=True)


# ---------------------------------------------------------------------------------------------------
# step 1: the device


def _ask_features(wanted: tuple[str, ...]) -> None:
    """Make every wgpudawn device ask for ``wanted`` where the adapter has them (the probe's own patch:
    the library asks for none of them). ``_request_device_async`` is what ``request_device_sync`` and
    ``request_device_async`` both end in."""
    from wgpudawn.backends.dawn import _api

    original = _api.GPUAdapter._request_device_async

    def request(self: Any, label: str, required_features: Any, *args: Any, **kwargs: Any) -> Any:
        have = {str(f) for f in self.features}
        features = list(required_features)
        features += [name for name in wanted if name in have and name not in features]
        absent = [name for name in wanted if name not in have]
        if absent:
            print(f"  the adapter lacks {absent}")
        return original(self, label, features, *args, **kwargs)

    _api.GPUAdapter._request_device_async = request


@dataclass
class Parts:
    """What the steps make, for the next ones and the cleanup."""

    layout: Layout
    width: int
    height: int
    device: Any = None
    """alpha2's Device."""
    webgpu: Any = None
    gpu: Any = None
    """The wgpudawn module."""
    vk: Any = None
    """The shared Vulkan device's raw access."""
    queue_family: int = 0
    ctx: Any = None
    stream: Any = None
    merged: Any = None
    """The merged image's RingSlot (one RingPlane)."""
    merged_views: tuple[Any, Any] | None = None
    separate: Any = None
    """The ring's two-texture RingSlot."""
    sources: list[Any] = field(default_factory=list)
    """The pattern's device buffers (Y, UV)."""
    expected: Any = None
    read_pipeline: Any = None
    read_buffer: Any = None
    map_buffer: Any = None
    dawn_objects: list[Any] = field(default_factory=list)

    @property
    def chroma(self) -> tuple[int, int]:
        return (self.width + 1) // 2, (self.height + 1) // 2


def open_device(parts: Parts) -> None:
    from alpha2.gpu.webgpu import WebGpuImplementation, gpu_module_of
    from alpha2.native_gpu._cuda import interop
    from alpha2.native_gpu.device.device import Device
    from alpha2.native_gpu.device.shared import QueueRole
    from alpha2.native_gpu.interop.cuda_vk import CudaVkPairing, _find_shared_devices

    layout = parts.layout
    try:
        _ask_features(layout.features + layout.optional_features)
    except ImportError as exc:
        raise StepFailed(f"wgpudawn's backend cannot be imported ({exc})") from exc
    device = Device.open(want_gpu_copy=True)
    parts.device = device
    if device.implementation is not WebGpuImplementation.DAWN:
        raise StepFailed(f"no Dawn device (no Dawn adapter?): {device.reason}")
    webgpu = device.webgpu_device
    parts.webgpu = webgpu
    parts.gpu = gpu_module_of(webgpu)
    features = sorted(str(f) for f in webgpu.features)
    print(f"  {device.adapter_name}; device features: {features}")
    missing = [name for name in layout.features if name not in features]
    if missing:
        raise StepFailed(f"the Dawn device lacks {missing}")
    reason = CudaVkPairing.unavailable_reason(webgpu, device.info, {})
    if reason is not None:
        raise StepFailed(f"no GPU copy (shared Vulkan device / CUDA): {reason}")
    found = _find_shared_devices(device.info, {"gpu_device": device})
    parts.vk = found.context._internal
    parts.queue_family = found.context.queue_families[QueueRole.GRAPHICS]
    parts.ctx = interop.primary_context(found.cuda_ordinal)
    parts.stream = interop.CopyStream(parts.ctx)
    print(f"  CUDA device {found.cuda_ordinal}; Vulkan queue family {parts.queue_family}")


# ---------------------------------------------------------------------------------------------------
# step 2: the multi-planar Vulkan image


def image_support(dev: Any, vk_format: int, usage: int, flags: int) -> str:
    """Why an OPTIMAL 2D image of ``vk_format`` with ``flags`` cannot be on exportable OPAQUE_FD memory
    ('' when it can); its limits are printed."""
    ffi, vk = dev.api.ffi, dev.api.vk
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
            "flags": flags,
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
    if result != 0:
        name = " (VK_ERROR_FORMAT_NOT_SUPPORTED)" if result == -11 else ""
        return f"vkGetPhysicalDeviceImageFormatProperties2: VkResult {result}{name} for format {vk_format}"
    extent = props.imageFormatProperties.maxExtent
    features = int(ext_props.externalMemoryProperties.externalMemoryFeatures)
    print(
        f"  format {vk_format} flags {flags:#x}: max {extent.width}x{extent.height}, external memory "
        f"features {features:#x} (dedicated only: {bool(features & _MEMORY_DEDICATED_ONLY)})"
    )
    if not features & _MEMORY_EXPORTABLE:
        return "OPAQUE_FD memory of this image is not exportable"
    return ""


def _destroy_image(dev: Any, handles: list[Any]) -> None:
    image, memory = handles
    handles[0] = handles[1] = None
    if getattr(dev, "closed", False):
        return
    null = dev.api.ffi.NULL
    if image is not None:
        dev.dfn.vkDestroyImage(dev.device, image, null)
    if memory is not None:
        dev.dfn.vkFreeMemory(dev.device, memory, null)


class MultiPlanarImage:
    """_vk.export.ExportableImage with create flags (it makes its images with none): a 2D OPTIMAL image
    on its own exportable OPAQUE_FD allocation, bound at offset 0 (not disjoint)."""

    def __init__(self, dev: Any, width: int, height: int, vk_format: int, usage: int, flags: int) -> None:
        from alpha2.native_gpu._vk.core import check

        ffi, vk = dev.api.ffi, dev.api.vk
        self._dev = dev
        self.width, self.height, self.vk_format, self.usage = width, height, vk_format, usage
        self.layout = 0  # UNDEFINED; transition_for_external sets GENERAL
        self._external_info = ffi.new(
            "VkExternalMemoryImageCreateInfo*",
            {"sType": vk.VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO, "handleTypes": _OPAQUE_FD},
        )
        self._create_info = ffi.new(  # kept: Dawn's import reads it
            "VkImageCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                "pNext": self._external_info,
                "flags": flags,
                "imageType": vk.VK_IMAGE_TYPE_2D,
                "format": vk_format,
                "extent": {"width": width, "height": height, "depth": 1},
                "mipLevels": 1,
                "arrayLayers": 1,
                "samples": vk.VK_SAMPLE_COUNT_1_BIT,
                "tiling": vk.VK_IMAGE_TILING_OPTIMAL,
                "usage": usage,
                "sharingMode": vk.VK_SHARING_MODE_EXCLUSIVE,
                "initialLayout": 0,
            },
        )
        self._handles: list[Any] = [None, None]
        self._finalizer = weakref.finalize(self, _destroy_image, dev, self._handles)
        try:
            out_image = ffi.new("VkImage*")
            check(dev.dfn.vkCreateImage(dev.device, self._create_info, ffi.NULL, out_image), "vkCreateImage")
            self._handles[0] = out_image[0]
            reqs = ffi.new("VkMemoryRequirements*")
            dev.dfn.vkGetImageMemoryRequirements(dev.device, self._handles[0], reqs)
            self.size_bytes = int(reqs.size)
            self.memory_type_index = dev.find_memory_type(int(reqs.memoryTypeBits), _DEVICE_LOCAL)
            dedicated = ffi.new(
                "VkMemoryDedicatedAllocateInfo*",
                {"sType": vk.VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, "image": self._handles[0]},
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
            check(dev.dfn.vkAllocateMemory(dev.device, alloc, ffi.NULL, out_memory), "vkAllocateMemory")
            self._handles[1] = out_memory[0]
            check(
                dev.dfn.vkBindImageMemory(dev.device, self._handles[0], self._handles[1], 0),
                "vkBindImageMemory",
            )
        except BaseException:
            self._finalizer()
            raise

    @property
    def handle(self) -> Any:
        return self._handles[0]

    @property
    def create_info_address(self) -> int:
        return int(self._dev.api.ffi.cast("uintptr_t", self._create_info))

    def export_memory_fd(self) -> Any:
        from alpha2.native_gpu._vk.export import _export_fd

        return _export_fd(self._dev, "Memory", "memory", self._handles[1])

    def close(self) -> None:
        self._finalizer()


def make_image(parts: Parts, extended_usage: bool) -> MultiPlanarImage:
    from alpha2.native_gpu._vk import export
    from alpha2.native_gpu.interop.ring import RingPlane, RingSlot

    flags = _MUTABLE_FORMAT | (_EXTENDED_USAGE if extended_usage else 0)
    reason = image_support(parts.vk, parts.layout.vk_format, _PLANE_USAGE, flags)
    if reason:
        raise StepFailed(reason)
    image = MultiPlanarImage(parts.vk, parts.width, parts.height, parts.layout.vk_format, _PLANE_USAGE, flags)
    key = _ring_key(parts)  # the merged slot pretends to be the stream's; only its planes are used
    parts.merged = RingSlot(key=key, planes=[RingPlane(key.geometry[0])])
    plane = parts.merged.planes[0]
    plane.vk_image = image  # closed with the slot
    # COLOR is the aspect of a whole non-disjoint multi-planar image in a barrier (VUID-...-01672)
    export.transition_for_external(parts.vk, [image], parts.queue_family, _WAIT_S)
    print(
        f"  {parts.width}x{parts.height} image, {image.size_bytes} bytes, "
        f"memory type {image.memory_type_index}"
    )
    return image


def _ring_key(parts: Parts) -> Any:
    from alpha2.gpu.formats import PixelFormat
    from alpha2.native_gpu.interop.cpu_upload import frame_geometry
    from alpha2.native_gpu.interop.ring import RingKey

    pixel_format = PixelFormat(parts.layout.pixel_format)
    return RingKey(0, 0, pixel_format, frame_geometry(pixel_format, parts.width, parts.height))


# ---------------------------------------------------------------------------------------------------
# step 3: CUDA


def _destroy_cuda_image(cu: Any, ctx: Any, holder: list[Any]) -> None:
    memory, mip = holder
    holder[0] = holder[1] = None
    try:
        with ctx:
            if mip is not None:
                cu.cuMipmappedArrayDestroy(mip)
            if memory is not None:
                cu.cuDestroyExternalMemory(memory)
    except Exception:
        pass


class CudaPlanarImage:
    """The multi-planar image's memory imported into CUDA as a mipmapped array of a multi-planar format
    (NV12, P010); ``planes``: level 0's planes (``cuArrayGetPlane``), not owned (they go with the array).
    NumChannels of such an array is tried 3 (the runtime's cudaCreateChannelDescNV12 is 8,8,8), 1, 2."""

    def __init__(self, ctx: Any, fd: Any, size_bytes: int, width: int, height: int, cuda_format: str) -> None:
        from alpha2.native_gpu._cuda.core import CudaError, check

        cu = self._cu = ctx._cu
        self._ctx = ctx
        self._holder: list[Any] = [None, None]
        self._finalizer = weakref.finalize(self, _destroy_cuda_image, cu, ctx, self._holder)
        array_format = getattr(cu.CUarray_format, cuda_format, None)
        if array_format is None:
            fd.close()
            raise StepFailed(f"this cuda-python has no CUarray_format.{cuda_format}")
        with ctx:
            desc = cu.CUDA_EXTERNAL_MEMORY_HANDLE_DESC()
            desc.type = cu.CUexternalMemoryHandleType.CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
            desc.handle.fd = fd.fileno()
            desc.size = size_bytes
            desc.flags = cu.CUDA_EXTERNAL_MEMORY_DEDICATED
            self._holder[0] = check(cu.cuImportExternalMemory(desc), "cuImportExternalMemory")
            fd.detach()
            try:
                errors = []
                for channels in (3, 1, 2):
                    mip_desc = cu.CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC()
                    mip_desc.offset = 0
                    mip_desc.arrayDesc.Width = width
                    mip_desc.arrayDesc.Height = height
                    mip_desc.arrayDesc.Depth = 0
                    mip_desc.arrayDesc.Format = array_format
                    mip_desc.arrayDesc.NumChannels = channels
                    mip_desc.arrayDesc.Flags = 0
                    mip_desc.numLevels = 1
                    try:
                        self._holder[1] = check(
                            cu.cuExternalMemoryGetMappedMipmappedArray(self._holder[0], mip_desc),
                            f"cuExternalMemoryGetMappedMipmappedArray({cuda_format}, NumChannels={channels})",
                        )
                    except CudaError as exc:
                        errors.append(str(exc))
                        continue
                    print(f"  {cuda_format} mipmapped array with NumChannels={channels}")
                    break
                if self._holder[1] is None:
                    raise StepFailed("; ".join(errors))
                level = check(cu.cuMipmappedArrayGetLevel(self._holder[1], 0), "cuMipmappedArrayGetLevel")
                self.planes = [check(cu.cuArrayGetPlane(level, i), f"cuArrayGetPlane({i})") for i in (0, 1)]
                for i, plane in enumerate(self.planes):
                    d = check(cu.cuArrayGetDescriptor(plane), f"cuArrayGetDescriptor(plane {i})")
                    print(f"  plane {i}: {d.Width}x{d.Height}, {d.Format!r}, {d.NumChannels} channels")
            except BaseException:
                self._finalizer()
                raise

    def close(self) -> None:
        self._finalizer()


def pattern(parts: Parts) -> tuple[Any, Any, Any]:
    """The planes' contents (Y: H x W, UV: CH x CW x 2, in the stored integer type) and the readback's
    expected words (Y, then U | V << 16)."""
    import numpy as np

    layout = parts.layout
    w, h = parts.width, parts.height
    cw, ch = parts.chroma
    mask = 255 if layout.bytes_per_channel == 1 else 1023
    dtype = np.uint8 if layout.bytes_per_channel == 1 else np.uint16
    yy, xx = np.mgrid[0:h, 0:w]
    y_plane = (((xx + 3 * yy) & mask) << layout.shift).astype(dtype)
    cy, cx = np.mgrid[0:ch, 0:cw]
    u = (((2 * cx + cy + 17) & mask) << layout.shift).astype(dtype)
    v = (((cx + 5 * cy + 101) & mask) << layout.shift).astype(dtype)
    uv_plane = np.stack([u, v], axis=-1)
    expected = np.concatenate(
        [y_plane.astype(np.uint32).ravel(), (u.astype(np.uint32) | (v.astype(np.uint32) << 16)).ravel()]
    )
    return y_plane, uv_plane, expected


def upload_pattern(parts: Parts) -> None:
    """The pattern in two tightly pitched device buffers (``parts.sources``)."""
    from alpha2.native_gpu._cuda import interop
    from alpha2.native_gpu._cuda.core import check

    y_plane, uv_plane, parts.expected = pattern(parts)
    cu = parts.ctx._cu
    for host in (y_plane, uv_plane):
        memory = interop.DeviceMemory(parts.ctx, host.nbytes)
        parts.sources.append(memory)
        with parts.ctx:
            check(cu.cuMemcpyHtoD(memory.pointer, host.ctypes.data, host.nbytes), "cuMemcpyHtoD")


def _source_planes(parts: Parts) -> list[tuple[int, int, int]]:
    """(device pointer, row bytes, rows) of the pattern's planes."""
    b = parts.layout.bytes_per_channel
    cw, ch = parts.chroma
    y, uv = parts.sources
    return [(y.pointer, parts.width * b, parts.height), (uv.pointer, cw * 2 * b, ch)]


def copy_into_merged(parts: Parts) -> None:
    """Copy the pattern into the merged image's CUDA planes, then signal its semaphore (the ring's copy)."""
    from alpha2.native_gpu._cuda.core import check

    cu = parts.ctx._cu
    plane = parts.merged.planes[0]
    stream = parts.stream.handle
    with parts.ctx:
        for array, (pointer, row_bytes, rows) in zip(
            plane.cu_image.planes, _source_planes(parts), strict=True
        ):
            copy = cu.CUDA_MEMCPY2D()
            copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
            copy.srcDevice = pointer
            copy.srcPitch = row_bytes
            copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_ARRAY
            copy.dstArray = array
            copy.WidthInBytes = row_bytes
            copy.Height = rows
            check(cu.cuMemcpy2DAsync(copy, stream), "cuMemcpy2DAsync (device -> plane array)")
        plane.cu_semaphore.signal(stream)


def import_into_cuda(parts: Parts, image: MultiPlanarImage) -> None:
    from alpha2.native_gpu._cuda import interop
    from alpha2.native_gpu._vk import export

    plane = parts.merged.planes[0]
    plane.cu_image = CudaPlanarImage(
        parts.ctx,
        image.export_memory_fd(),
        image.size_bytes,
        parts.width,
        parts.height,
        parts.layout.cuda_format,
    )
    semaphore = export.ExportableSemaphore(parts.vk, timeline=False)
    plane.semaphore = semaphore
    plane.cu_semaphore = interop.ExternalSemaphore(parts.ctx, semaphore.export_fd(), timeline=False)
    parts.merged.copy_done = interop.CudaEvent(parts.ctx)
    upload_pattern(parts)
    copy_into_merged(parts)
    _wait_cuda(parts)


def _wait_cuda(parts: Parts) -> None:
    """Wait for the CUDA stream's work so far; close CUDA's imports of Dawn's fences it waited on."""
    from alpha2.native_gpu._cuda import interop

    with parts.ctx:
        event = interop.CudaEvent(parts.ctx)
        event.record(parts.stream.handle)
        event.wait(_WAIT_S, "the probe's CUDA work")
        event.close()
        for slot in (parts.merged, parts.separate):
            if slot is not None:
                waited, slot.waited = slot.waited, []
                for semaphore in waited:
                    semaphore.close()


# ---------------------------------------------------------------------------------------------------
# step 4: Dawn


@contextlib.contextmanager
def dawn_errors(webgpu: Any, what: str) -> Iterator[None]:
    """Raise Dawn's validation / internal / out-of-memory errors of the calls inside (reported
    asynchronously otherwise, and the objects made invalid)."""
    for kind in ("validation", "internal", "out-of-memory"):
        webgpu.push_error_scope(kind)
    try:
        yield
    finally:
        errors = [webgpu.pop_error_scope_sync() for _ in range(3)]
        found = [f"{type(e).__name__}: {getattr(e, 'message', e)}" for e in errors if e is not None]
        if found and sys.exc_info()[0] is None:
            raise StepFailed(f"Dawn, {what}: " + "; ".join(found))
        for text in found:
            print(f"  Dawn, {what}: {text}")


def _drain_queue(webgpu: Any) -> None:
    from alpha2.gpu.webgpu import wait_promise

    promise = webgpu.queue.on_submitted_work_done_async()
    if not wait_promise(promise, _WAIT_S, webgpu):
        raise TimeoutError(f"the queue did not drain in {_WAIT_S} s")
    promise.sync_wait()


def import_into_dawn(parts: Parts, image: MultiPlanarImage) -> None:
    from alpha2.native_gpu.interop import dawn_planes

    extras = dawn_planes.dawn_extras()
    webgpu, gpu, layout = parts.webgpu, parts.gpu, parts.layout
    plane = parts.merged.planes[0]
    with dawn_errors(webgpu, "importing the multi-planar image"):
        with image.export_memory_fd() as memory_fd:
            plane.memory = extras.import_shared_texture_memory(
                webgpu,
                label="probe merged planes",
                opaque_fd={
                    "fd": memory_fd.fileno(),
                    "vk_image_create_info": image.create_info_address,
                    "memory_type_index": image.memory_type_index,
                    "allocation_size": image.size_bytes,
                    "dedicated_allocation": True,
                },
            )
    props = plane.memory.properties
    print(f"  SharedTextureMemory: {props['format']}, {props['size']}, usage {props['usage']:#x}")
    if props["format"] != layout.dawn_format:
        raise StepFailed(f"Dawn made it {props['format']}, not {layout.dawn_format}")
    usage = gpu.TextureUsage.TEXTURE_BINDING | (props["usage"] & gpu.TextureUsage.COPY_SRC)
    with dawn_errors(webgpu, "the texture and its plane views"):
        plane.texture = plane.memory.create_texture(label="probe merged planes", usage=usage)
        parts.merged_views = (
            plane.texture.create_view(
                label="probe plane 0", format=layout.plane_views[0], aspect="plane0-only"
            ),
            plane.texture.create_view(
                label="probe plane 1", format=layout.plane_views[1], aspect="plane1-only"
            ),
        )
    plane.layout = image.layout
    with plane.semaphore.export_fd() as fd:
        with dawn_errors(webgpu, "importing CUDA's semaphore"):
            plane.fence = extras.import_shared_fence(
                webgpu, label="probe merged copy-done", vk_semaphore_opaque_fd=fd.fileno()
            )
    make_readback(parts)
    check_readback(parts, parts.merged, parts.merged_views, "merged")


def make_readback(parts: Parts) -> None:
    webgpu, gpu, layout = parts.webgpu, parts.gpu, parts.layout
    cw, ch = parts.chroma
    words = parts.width * parts.height + cw * ch
    code = READ_SHADER.format(
        W=parts.width,
        H=parts.height,
        CW=cw,
        CH=ch,
        MAX="255.0" if layout.bytes_per_channel == 1 else "65535.0",
    )
    with dawn_errors(webgpu, "the readback pipeline and buffers"):
        module = webgpu.create_shader_module(code=code)
        parts.read_pipeline = webgpu.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main"}
        )
        parts.read_buffer = webgpu.create_buffer(
            size=words * 4, usage=gpu.BufferUsage.STORAGE | gpu.BufferUsage.COPY_SRC
        )
        parts.map_buffer = webgpu.create_buffer(
            size=words * 4, usage=gpu.BufferUsage.MAP_READ | gpu.BufferUsage.COPY_DST
        )
    parts.dawn_objects += [parts.read_buffer, parts.map_buffer]


def bind_group(parts: Parts, views: tuple[Any, Any]) -> Any:
    return parts.webgpu.create_bind_group(
        layout=parts.read_pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": views[0]},
            {"binding": 1, "resource": views[1]},
            {"binding": 2, "resource": parts.read_buffer},
        ],
    )


def check_readback(parts: Parts, slot: Any, views: tuple[Any, Any], name: str) -> None:
    """Begin the slot's access waiting on CUDA's signal, read both planes back, compare with the pattern."""
    import numpy as np

    from alpha2.native_gpu.interop import dawn_planes

    webgpu, gpu = parts.webgpu, parts.gpu
    size = parts.read_buffer.size
    with dawn_errors(webgpu, f"reading the {name} planes back"):
        dawn_planes.begin_access(slot, [1] * len(slot.planes))
        try:
            group = bind_group(parts, views)
            encoder = webgpu.create_command_encoder()
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(parts.read_pipeline)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups((parts.width + 7) // 8, (parts.height + 7) // 8, 1)
            compute.end()
            encoder.copy_buffer_to_buffer(parts.read_buffer, 0, parts.map_buffer, 0, size)
            webgpu.queue.submit([encoder.finish()])
        finally:
            for plane in slot.planes:
                dawn_planes.end_plane(plane, collect_fences=True)
        _drain_queue(webgpu)
        parts.map_buffer.map_sync(gpu.MapMode.READ)
        try:
            got = np.frombuffer(bytes(parts.map_buffer.read_mapped()), dtype=np.uint32)
        finally:
            parts.map_buffer.unmap()
    luma = parts.width * parts.height
    expected = parts.expected
    bad_y = np.flatnonzero(got[:luma] != expected[:luma])
    bad_uv = np.flatnonzero(got[luma:] != expected[luma:])
    print(
        f"  {name}: {len(bad_y)} of {luma} Y texels and {len(bad_uv)} of {len(expected) - luma} "
        "UV texels differ"
    )
    cw = parts.chroma[0]
    for label, bad, base, row in (("Y", bad_y, 0, parts.width), ("UV", bad_uv, luma, cw)):
        for index in bad[:5]:
            x, y = int(index) % row, int(index) // row
            print(
                f"    {label} ({x}, {y}): got {int(got[base + index]):#x}, "
                f"expected {int(expected[base + index]):#x}"
            )
    if len(bad_y) or len(bad_uv):
        raise StepFailed(f"the {name} planes read back differ from what CUDA wrote")


# ---------------------------------------------------------------------------------------------------
# step 5: the ring's two textures


def make_separate(parts: Parts) -> None:
    """A ring slot of two textures (R8 + RG8 or R16 + RG16) as CudaVkPairing._new_slot makes it, filled
    with the same pattern through the library's copy, and read back."""
    from alpha2.gpu.handles import CudaPtr2D
    from alpha2.native_gpu._cuda import interop
    from alpha2.native_gpu._vk import export
    from alpha2.native_gpu.interop import dawn_planes
    from alpha2.native_gpu.interop.cuda import import_plane_image
    from alpha2.native_gpu.interop.ring import RingSlot

    extras = dawn_planes.dawn_extras()
    slot = RingSlot.for_key(_ring_key(parts))
    parts.separate = slot
    with dawn_errors(parts.webgpu, "the ring's two textures"):
        images = dawn_planes.make_plane_images(parts.vk, slot, parts.queue_family, _WAIT_S)
        for index, (plane, image) in enumerate(zip(slot.planes, images, strict=True)):
            semaphore = export.ExportableSemaphore(parts.vk, timeline=False)
            plane.semaphore = semaphore
            import_plane_image(parts.ctx, plane, image.export_memory_fd(), image.size_bytes)
            plane.cu_semaphore = interop.ExternalSemaphore(parts.ctx, semaphore.export_fd(), timeline=False)
            dawn_planes.import_plane(parts.webgpu, image, plane, index)
            with semaphore.export_fd() as fd:
                plane.fence = extras.import_shared_fence(
                    parts.webgpu, label=f"probe copy-done {index}", vk_semaphore_opaque_fd=fd.fileno()
                )
        slot.copy_done = interop.CudaEvent(parts.ctx)
    ordinal = parts.ctx.ordinal
    handle = parts.stream.handle
    with parts.ctx:
        for plane, (pointer, row_bytes, rows) in zip(slot.planes, _source_planes(parts), strict=True):
            source = CudaPtr2D(pointer, row_bytes, row_bytes, rows, ordinal)
            interop.copy_plane_to_array(parts.ctx, source, plane.cu_image, handle)
            plane.cu_semaphore.signal(handle)
    _wait_cuda(parts)
    views = (slot.planes[0].view, slot.planes[1].view)
    check_readback(parts, slot, views, "two-texture")


# ---------------------------------------------------------------------------------------------------
# step 6: timing


def _drain(parts: Parts) -> None:
    _drain_queue(parts.webgpu)
    _wait_cuda(parts)


def run(parts: Parts, slot: Any, views: tuple[Any, Any], iterations: int, fenced: bool) -> dict[str, float]:
    """Median microseconds a call of each stage, and of the iteration (as probe_shared_submit.run)."""
    from alpha2.native_gpu.interop import dawn_planes
    from alpha2.native_gpu.interop.cuda import wait_release_fences

    webgpu, pipeline, ctx = parts.webgpu, parts.read_pipeline, parts.ctx
    group = bind_group(parts, views)
    values = [1] * len(slot.planes)
    times: dict[str, list[float]] = {"begin": [], "encode": [], "submit": [], "end": [], "all": []}
    for index in range(iterations):
        if index % 16 == 0:
            _drain(parts)
        if fenced:  # as the ring's copy: CUDA waits for Dawn's last access, then signals
            handle = parts.stream.handle
            with ctx:
                wait_release_fences(ctx, slot, handle)
                for plane in slot.planes:
                    plane.cu_semaphore.signal(handle)
        t0 = time.perf_counter()
        dawn_planes.begin_access(slot, values if fenced else None)
        t1 = time.perf_counter()
        encoder = webgpu.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(1, 1, 1)  # an 8x8 corner of both planes
        compute.end()
        buffer = encoder.finish()
        t2 = time.perf_counter()
        webgpu.queue.submit([buffer])
        t3 = time.perf_counter()
        for plane in slot.planes:
            dawn_planes.end_plane(plane, collect_fences=True)
            if not fenced:  # nothing waits on them
                for fd in plane.release_fence_fds + plane.release_sync_fds:
                    fd.close()
                plane.release_fence_fds, plane.release_sync_fds = [], []
        t4 = time.perf_counter()
        if index >= 16:  # the first ones warm up
            for name, seconds in (
                ("begin", t1 - t0),
                ("encode", t2 - t1),
                ("submit", t3 - t2),
                ("end", t4 - t3),
                ("all", t4 - t0),
            ):
                times[name].append(seconds)
    if fenced:  # the last fences: waited on by CUDA, so that the semaphores are unsignalled again
        with ctx:
            wait_release_fences(ctx, slot, parts.stream.handle)
    _drain(parts)
    return {name: statistics.median(v) * 1e6 if v else float("nan") for name, v in times.items()}


def time_rows(parts: Parts, iterations: int, rounds: int) -> None:
    assert parts.merged_views is not None
    separate_views = (parts.separate.planes[0].view, parts.separate.planes[1].view)
    rows = (
        ("merged (1 shared)", parts.merged, parts.merged_views),
        ("two (2 shared)", parts.separate, separate_views),
    )
    print(f"  {iterations} iterations a row, medians in microseconds a call")
    print(f"  {'textures':>18} {'fenced':>6} {'begin':>8} {'encode':>8} {'submit':>8} {'end':>8} {'all':>8}")
    with dawn_errors(parts.webgpu, "the timed submissions"):
        for round_ in range(rounds):
            for fenced in (False, True):
                for name, slot, views in rows:
                    row = run(parts, slot, views, iterations, fenced)
                    print(
                        f"  {name:>18} {fenced!s:>6} {row['begin']:8.1f} {row['encode']:8.1f} "
                        f"{row['submit']:8.1f} {row['end']:8.1f} {row['all']:8.1f}   (round {round_ + 1})",
                        flush=True,
                    )


# ---------------------------------------------------------------------------------------------------
# step 7: cleanup


def cleanup(parts: Parts) -> None:
    """End the accesses, wait for the GPU, destroy everything (each part tried; the first failure raised)."""
    from alpha2.native_gpu.interop import dawn_planes

    failures: list[str] = []

    def attempt(what: str, call: Callable[[], object]) -> None:
        try:
            call()
        except Exception as exc:
            failures.append(f"{what}: {type(exc).__name__}: {exc}")

    slots = [s for s in (parts.merged, parts.separate) if s is not None]
    for slot in slots:
        for plane in slot.planes:
            if plane.accessing:
                attempt("end_access", functools.partial(dawn_planes.end_plane, plane, collect_fences=False))
    if parts.webgpu is not None:
        attempt("draining Dawn's queue", functools.partial(_drain_queue, parts.webgpu))
    if parts.ctx is not None and parts.stream is not None:
        attempt("waiting for CUDA", functools.partial(_wait_cuda, parts))
    parts.merged_views = None
    for slot in slots:
        attempt("destroying a slot", functools.partial(slot.destroy_objects, lambda p: None))
    parts.merged = parts.separate = None
    for memory in parts.sources:
        attempt("freeing device memory", memory.close)
    parts.sources = []
    for obj in parts.dawn_objects:
        attempt("destroying a buffer", obj.destroy)
    parts.dawn_objects = []
    parts.read_buffer = parts.map_buffer = parts.read_pipeline = None
    if parts.stream is not None:
        attempt("closing the CUDA stream", parts.stream.close)
    if parts.device is not None:
        attempt("closing the Device", parts.device.close)
    parts.device = parts.webgpu = None
    if failures:
        raise StepFailed("; ".join(failures))


# ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--format", choices=sorted(LAYOUTS), default="nv12")
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument(
        "--extended-usage",
        action="store_true",
        help="make the image with VK_IMAGE_CREATE_EXTENDED_USAGE_BIT too (MUTABLE_FORMAT alone by default)",
    )
    args = parser.parse_args(argv)
    if args.width % 2 or args.height % 2 or args.width <= 0 or args.height <= 0:
        parser.error("--width and --height must be positive and even (4:2:0)")
    parts = Parts(LAYOUTS[args.format], args.width, args.height)
    steps = Steps()
    try:
        with steps.step("open the Dawn device with multi-planar formats, its Vulkan device and CUDA"):
            open_device(parts)
        with steps.step(f"one exportable {args.format} multi-planar VkImage, moved to GENERAL / external"):
            image = make_image(parts, args.extended_usage)
        with steps.step(
            f"CUDA: {parts.layout.cuda_format} array on its memory, pattern copied, semaphore signalled"
        ):
            import_into_cuda(parts, image)
        with steps.step("Dawn: one SharedTextureMemory, two plane views, read back against the pattern"):
            import_into_dawn(parts, image)
        with steps.step("the ring's two textures, made the library's way, read back the same"):
            make_separate(parts)
        with steps.step("timing: one merged shared texture against two"):
            time_rows(parts, args.iterations, args.rounds)
    except Exception:
        pass  # said by its step
    finally:
        try:
            with steps.step("cleanup"):
                cleanup(parts)
        except Exception:
            pass  # said by its step
    if steps.failed is not None:
        print(f"FAILED at {steps.failed}")
        return 1
    print("all steps OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
