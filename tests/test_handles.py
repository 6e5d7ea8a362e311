"""GpuResource variants, OwnedFd, contexts and queues: validation, ownership, keep-alive."""

from __future__ import annotations

import dataclasses
import gc
import os
import weakref
from typing import Any

import numpy as np
import pytest

from alpha2.gpu.errors import ClosedError, InvalidHandleError, InvalidInputError
from alpha2.gpu.handles import (
    DRM_FORMAT_MOD_INVALID,
    AHardwareBufferHandle,
    CpuBytes,
    CpuPlane,
    CpuPlaneSet,
    CudaArray,
    CudaContext,
    CudaPtr,
    CudaPtr2D,
    CudaStream,
    CVPixelBufferHandle,
    D3D11Resource,
    D3D12Resource,
    DmaBuf,
    DmaBufPlane,
    GlBuffer,
    GlContext,
    GlPlatform,
    GlTexture,
    GpuContext,
    GpuResource,
    IOSurfaceHandle,
    MetalBuffer,
    MetalTexture,
    OpenClMemory,
    OwnedFd,
    QueueRole,
    VkBuffer,
    VkImage,
    VkImageLayout,
    VkMemoryFd,
    VulkanContext,
    VulkanQueue,
    WgpuContext,
    WgpuQueue,
    WgpuTexture,
    drm_fourcc,
    vk_make_api_version,
)
from alpha2.gpu.identity import BackendKind, DeviceId


def _fd_is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.fixture
def pipe_fds() -> Any:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


# -- OwnedFd ----------------------------------------------------------------------------------------


def test_owned_fd_closes_exactly_once(pipe_fds: tuple[int, int]) -> None:
    r, _ = pipe_fds
    owned = OwnedFd(r)
    assert owned.fileno() == r and owned.as_raw() == r
    owned.close()
    assert owned.closed and not _fd_is_open(r)
    # A new descriptor may now reuse the number; a second close must not touch it.
    reuse = os.open(os.devnull, os.O_RDONLY)
    try:
        owned.close()
        assert _fd_is_open(reuse)
    finally:
        os.close(reuse)
    with pytest.raises(ClosedError):
        owned.fileno()


def test_owned_fd_context_manager_and_gc_backstop(pipe_fds: tuple[int, int]) -> None:
    r, w = pipe_fds
    with OwnedFd(r) as owned:
        assert not owned.closed
    assert not _fd_is_open(r)
    dropped = OwnedFd(w)
    ref = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert ref() is None
    assert not _fd_is_open(w)


def test_owned_fd_detach_hands_ownership_on(pipe_fds: tuple[int, int]) -> None:
    r, _ = pipe_fds
    owned = OwnedFd(r)
    raw = owned.detach()
    assert raw == r and owned.closed
    del owned
    gc.collect()
    assert _fd_is_open(r)  # now the caller's to close (the fixture does)
    with pytest.raises(ClosedError):
        _closed_owned_fd().detach()


def _closed_owned_fd() -> OwnedFd:
    owned = OwnedFd(os.open(os.devnull, os.O_RDONLY))
    owned.close()
    return owned


def test_owned_fd_dup_is_independent(pipe_fds: tuple[int, int]) -> None:
    r, _ = pipe_fds
    with OwnedFd(os.dup(r)) as owned, owned.dup() as copy:
        assert copy.fileno() != owned.fileno()
        owned.close()
        assert _fd_is_open(copy.fileno())


def test_owned_fd_rejects_bad_descriptors() -> None:
    for bad in (-1, True, "3", 1.0):
        with pytest.raises(InvalidHandleError):
            OwnedFd(bad)  # type: ignore[arg-type]
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    with pytest.raises(InvalidHandleError, match="not open"):
        OwnedFd(fd)


# -- resources --------------------------------------------------------------------------------------

DEV = 0x5000


def _valid_resources() -> list[GpuResource]:
    return [
        VkImage(image=0x1000, device=DEV, vk_format=9, width=64, height=32, usage=0x6),
        VkBuffer(buffer=0x2000, device=DEV, size_bytes=4096),
        CudaPtr(device_ptr=0x7F0000000000, size_bytes=1024),
        CudaPtr2D(device_ptr=0x7F0000000000, pitch_bytes=2048, width_bytes=1920, height=1080),
        CudaArray(array=0x3000, width=1920, height=1080, array_format=0x01, num_channels=2),
        GlTexture(name=3, target=0x0DE1, internal_format=0x8229, width=16, height=16),
        GlBuffer(name=4, size_bytes=256),
        D3D11Resource(resource_ptr=0x4000, subresource_index=3),
        D3D12Resource(resource_ptr=0x4000, size_bytes=1 << 20, shared_handle=0x88),
        MetalTexture(texture_ptr=0x6000, pixel_format=10, width=8, height=8),
        MetalBuffer(buffer_ptr=0x6000, size_bytes=64),
        IOSurfaceHandle(surface_ref=0x7000, pixel_format=0x34323076, width=8, height=8, plane_count=2),
        CVPixelBufferHandle(pixel_buffer_ref=0x7000, pixel_format=0x34323076, width=8, height=8),
        AHardwareBufferHandle(buffer_ptr=0x8000, ahb_format=1, width=8, height=8),
        OpenClMemory(mem=0x9000, context=0x9100, size_bytes=64),
        CpuBytes(b"abc"),
        CpuPlane(bytearray(16), bytes_per_row=4, width_bytes=4, height=4),
        CpuPlaneSet((CpuPlane(bytes(16), 4, 4, 4),)),
    ]


EXPECTED_BACKENDS = {
    VkImage: BackendKind.VULKAN,
    VkBuffer: BackendKind.VULKAN,
    CudaPtr: BackendKind.CUDA,
    CudaPtr2D: BackendKind.CUDA,
    CudaArray: BackendKind.CUDA,
    GlTexture: BackendKind.OPENGL,
    GlBuffer: BackendKind.OPENGL,
    D3D11Resource: BackendKind.D3D11,
    D3D12Resource: BackendKind.D3D12,
    MetalTexture: BackendKind.METAL,
    MetalBuffer: BackendKind.METAL,
    IOSurfaceHandle: BackendKind.COREVIDEO,
    CVPixelBufferHandle: BackendKind.COREVIDEO,
    AHardwareBufferHandle: BackendKind.ANDROID,
    OpenClMemory: BackendKind.OPENCL,
    CpuBytes: BackendKind.CPU,
    CpuPlane: BackendKind.CPU,
    CpuPlaneSet: BackendKind.CPU,
}


def test_every_variant_has_its_backend_and_is_frozen() -> None:
    for resource in _valid_resources():
        assert isinstance(resource, GpuResource)
        assert resource.backend is EXPECTED_BACKENDS[type(resource)]
        assert resource.as_raw() is not None
        field_name = dataclasses.fields(resource)[0].name  # type: ignore[arg-type]
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(resource, field_name, 1)


@pytest.mark.parametrize(
    "make",
    [
        lambda: VkImage(image=0, device=DEV, vk_format=9, width=64, height=32, usage=6),
        lambda: VkImage(image=1, device=DEV, vk_format=0, width=64, height=32, usage=6),
        lambda: VkImage(image=1, device=DEV, vk_format=9, width=4, height=4, usage=6, mip_levels=4),
        lambda: VkImage(image=1, device=DEV, vk_format=9, width=4, height=4, usage=6, layout=9),  # type: ignore[arg-type]
        lambda: VkBuffer(buffer=0x2000, device=0, size_bytes=4096),
        lambda: VkBuffer(buffer=0x2000, device=DEV, size_bytes=0),
        lambda: CudaPtr(device_ptr=0, size_bytes=1),
        lambda: CudaPtr(device_ptr=True, size_bytes=1),
        lambda: CudaPtr(device_ptr=1 << 64, size_bytes=1),
        lambda: CudaPtr((1 << 64) - 8, size_bytes=16),
        lambda: CudaPtr2D(device_ptr=0, pitch_bytes=2048, width_bytes=1920, height=1080),
        lambda: CudaPtr2D(device_ptr=0x1000, pitch_bytes=1024, width_bytes=1920, height=1080),
        lambda: CudaPtr2D(device_ptr=0x1000, pitch_bytes=2048, width_bytes=1920, height=0),
        lambda: CudaPtr2D(device_ptr=0x1000, pitch_bytes=2048, width_bytes=1920, height=1, device_ordinal=-1),
        lambda: CudaArray(array=0x3000, width=8, height=8, array_format=1, num_channels=3),
        lambda: GlTexture(name=0, target=0x0DE1, internal_format=0x8229, width=16, height=16),
        lambda: GlBuffer(name=1 << 32, size_bytes=1),
        lambda: D3D11Resource(resource_ptr=0x4000, shared_handle=0),
        lambda: D3D12Resource(resource_ptr=0, size_bytes=1),
        lambda: MetalTexture(texture_ptr=0x6000, pixel_format=0, width=8, height=8),
        lambda: IOSurfaceHandle(surface_ref=0x7000, pixel_format=1, width=8, height=8, plane_count=5),
        lambda: AHardwareBufferHandle(buffer_ptr=0, ahb_format=1, width=8, height=8),
        lambda: OpenClMemory(mem=0x9000, context=0, size_bytes=64),
        lambda: CpuBytes(b""),
        lambda: CpuBytes(object()),
        lambda: CpuPlaneSet(()),
        lambda: CpuPlaneSet(tuple(CpuPlane(bytes(4), 4, 4, 1) for _ in range(5))),
        lambda: CpuPlaneSet((b"1234",)),  # type: ignore[arg-type]
    ],
)
def test_null_zero_and_inconsistent_payloads_are_refused(make: Any) -> None:
    with pytest.raises(InvalidHandleError):
        make()


def test_invalid_handle_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        CudaPtr(device_ptr=0, size_bytes=1)
    assert issubclass(InvalidHandleError, InvalidInputError)


def test_cuda_ptr_2d_matches_contract() -> None:
    plane = CudaPtr2D(0x1000, 2048, 1920, 1080, 1, keep_alive="frame")
    assert [f.name for f in dataclasses.fields(plane)] == [
        "device_ptr",
        "pitch_bytes",
        "width_bytes",
        "height",
        "device_ordinal",
        "keep_alive",
    ]
    assert plane.size_bytes == 2048 * 1079 + 1920
    assert plane.as_raw() == 0x1000
    assert plane.device_ordinal == 1


def test_vk_image_layout_is_coerced() -> None:
    image = VkImage(image=1, device=DEV, vk_format=9, width=4, height=4, usage=6, layout=5)  # type: ignore[arg-type]
    assert image.layout is VkImageLayout.SHADER_READ_ONLY_OPTIMAL


# -- CPU planes -------------------------------------------------------------------------------------


def test_cpu_plane_stores_the_object_without_copying() -> None:
    data = np.zeros((4, 8), dtype=np.uint8)
    plane = CpuPlane(data, bytes_per_row=8, width_bytes=6, height=4)
    assert plane.data is data
    data[1, 2] = 7
    assert plane.as_raw()[8 + 2] == 7
    # validation released its memoryview: a bytearray can still be resized afterwards
    raw = bytearray(32)
    CpuPlane(raw, 8, 8, 4)
    raw.extend(b"x")


def test_cpu_plane_size_check_uses_last_row_width_only() -> None:
    # 3 rows of 6 bytes every 8 bytes need 8*2 + 6 = 22 bytes, not 24
    CpuPlane(bytes(22), bytes_per_row=8, width_bytes=6, height=3)
    with pytest.raises(InvalidHandleError, match="need 22"):
        CpuPlane(bytes(21), bytes_per_row=8, width_bytes=6, height=3)
    with pytest.raises(InvalidHandleError):
        CpuPlane(bytes(64), bytes_per_row=4, width_bytes=8, height=2)
    wide = np.zeros((4, 16), dtype=np.uint8)
    with pytest.raises(InvalidHandleError, match="contiguous"):
        CpuPlane(wide[:, :8], bytes_per_row=8, width_bytes=8, height=4)


def test_cpu_plane_counts_bytes_not_elements() -> None:
    samples = np.zeros((2, 4), dtype=np.uint16)  # 16 bytes in 8 elements
    plane = CpuPlane(samples, bytes_per_row=8, width_bytes=8, height=2)
    assert plane.size_bytes == 16 and len(plane.as_raw()) == 16


def test_cpu_plane_set_coerces_to_tuple_and_sums() -> None:
    y = CpuPlane(bytes(16 * 4), 16, 16, 4)
    uv = CpuPlane(bytes(16 * 2), 16, 16, 2)
    planes = CpuPlaneSet([y, uv])  # type: ignore[arg-type]
    assert isinstance(planes.planes, tuple) and len(planes) == 2 and planes[1] is uv
    assert planes.size_bytes == 64 + 32
    assert [len(view) for view in planes.as_raw()] == [64, 32]


# -- keep-alive -------------------------------------------------------------------------------------


class _Producer:
    pass


def test_keep_alive_lives_as_long_as_any_copy() -> None:
    producer = _Producer()
    ref = weakref.ref(producer)
    plane = CudaPtr2D(0x1000, 2048, 1920, 1080, keep_alive=producer)
    copy = dataclasses.replace(plane, height=540)
    del producer, plane
    gc.collect()
    assert ref() is not None and copy.keep_alive is ref()
    assert copy.height == 540
    del copy
    gc.collect()
    assert ref() is None


def test_keep_alive_is_not_compared_or_shown() -> None:
    a = CudaPtr(0x1000, 64, keep_alive=_Producer())
    b = CudaPtr(0x1000, 64, keep_alive=_Producer())
    assert a == b and hash(a) == hash(b)
    assert "keep_alive" not in repr(a)


# -- DMA-BUF and Vulkan fd export -------------------------------------------------------------------


def test_dmabuf_nv12_layout(pipe_fds: tuple[int, int]) -> None:
    r, _ = pipe_fds
    owned = OwnedFd(os.dup(r))
    nv12 = drm_fourcc("NV12")
    buf = DmaBuf(
        width=1920,
        height=1080,
        drm_format=nv12,
        planes=[DmaBufPlane(owned, 0, 2048), DmaBufPlane(owned, 2048 * 1088, 2048)],  # type: ignore[arg-type]
    )
    assert buf.backend is BackendKind.DMABUF
    assert buf.as_raw() == (owned.fileno(), owned.fileno())
    with pytest.raises(InvalidHandleError, match="2 planes"):
        DmaBuf(1920, 1080, nv12, (DmaBufPlane(owned, 0, 2048),))
    with pytest.raises(InvalidHandleError, match="stride"):
        DmaBuf(1920, 1080, nv12, (DmaBufPlane(owned, 0, 1024), DmaBufPlane(owned, 0, 2048)))
    # a tiled modifier: strides are the driver's business, auxiliary planes allowed
    tiled = DmaBuf(
        1920, 1080, nv12, (DmaBufPlane(r, 0, 512),) * 3, modifier=0x0100000000000002, keep_alive=owned
    )
    assert len(tiled.planes) == 3
    with pytest.raises(InvalidHandleError, match="modifier"):
        DmaBuf(1920, 1080, nv12, (DmaBufPlane(r, 0, 2048),) * 2, modifier=1 << 64)
    DmaBuf(16, 16, nv12, (DmaBufPlane(r, 0, 16),) * 2, modifier=DRM_FORMAT_MOD_INVALID)
    owned.close()
    with pytest.raises(InvalidHandleError, match="closed"):
        DmaBufPlane(owned, 0, 2048)
    with pytest.raises(InvalidHandleError):
        DmaBufPlane(-1, 0, 2048)


def test_drm_fourcc() -> None:
    assert drm_fourcc("NV12") == 0x3231564E
    with pytest.raises(InvalidHandleError):
        drm_fourcc("NV1")


def test_vk_memory_fd(pipe_fds: tuple[int, int]) -> None:
    r, _ = pipe_fds
    owned = OwnedFd(os.dup(r))
    export = VkMemoryFd(fd=owned, size_bytes=1 << 20, device_uuid=bytes(16), memory_type_index=3)
    assert export.backend is BackendKind.VULKAN and export.as_raw() == owned.fileno()
    with pytest.raises(InvalidHandleError):
        VkMemoryFd(fd=owned, size_bytes=0)
    with pytest.raises(InvalidHandleError):
        VkMemoryFd(fd=owned, size_bytes=1, device_uuid=b"short")
    with pytest.raises(InvalidHandleError):
        VkMemoryFd(fd=owned, size_bytes=1, memory_type_index=32)
    taken = owned.detach()  # what an importer that takes the fd does
    os.close(taken)


# -- wgpu -------------------------------------------------------------------------------------------


class _FakeTexture:
    width = 64
    height = 32
    depth_or_array_layers = 1
    format = "r8unorm"
    usage = 4


def test_wgpu_texture_checks_against_the_object() -> None:
    texture = _FakeTexture()
    described = WgpuTexture.from_texture(texture)
    assert (described.width, described.height, described.texture_format, described.usage) == (
        64,
        32,
        "r8unorm",
        4,
    )
    assert described.as_raw() is texture and described.backend is BackendKind.WGPU
    with pytest.raises(InvalidHandleError, match="height"):
        WgpuTexture(texture, "r8unorm", 64, 16)
    with pytest.raises(InvalidHandleError, match="rg8unorm"):
        WgpuTexture(texture, "rg8unorm", 64, 32)
    with pytest.raises(InvalidHandleError):
        WgpuTexture(None, "r8unorm", 64, 32)
    with pytest.raises(InvalidHandleError, match="explicit"):
        WgpuTexture.from_texture(object())


# -- contexts and queues ----------------------------------------------------------------------------


def _vk_context(**overrides: Any) -> VulkanContext:
    fields: dict[str, Any] = dict(
        instance=0x10,
        physical_device=0x20,
        device=0x30,
        api_version=vk_make_api_version(1, 3, 275),
        enabled_extensions=["VK_KHR_external_memory_fd", "VK_KHR_timeline_semaphore"],
    )
    fields.update(overrides)
    return VulkanContext(**fields)


def test_vulkan_context_and_queue() -> None:
    ctx = _vk_context(device_id=DeviceId(0x10DE, 0x2335, "H200"))
    assert isinstance(ctx, GpuContext) and ctx.backend is BackendKind.VULKAN
    assert ctx.api_version_tuple == (1, 3, 275) and ctx.api_version_str == "1.3.275"
    assert isinstance(ctx.enabled_extensions, frozenset) and ctx.has_extension("VK_KHR_timeline_semaphore")
    queue = VulkanQueue(ctx, queue=0x40, queue_family_index=0, queue_index=1, queue_flags=0x7)
    assert queue.as_raw() == 0x40 and queue.backend is BackendKind.VULKAN
    for bad in (
        dict(device=0),
        dict(instance=None),
        dict(api_version=vk_make_api_version(1, 0)),
        dict(enabled_extensions="VK_KHR_external_memory_fd"),
        dict(enabled_extensions=[""]),
        dict(device_id="H200"),
    ):
        with pytest.raises(InvalidHandleError):
            _vk_context(**bad)
    with pytest.raises(InvalidHandleError):
        VulkanQueue(ctx, queue=0, queue_family_index=0)
    with pytest.raises(InvalidHandleError):
        VulkanQueue(ctx, queue=0x40, queue_family_index=-1)
    with pytest.raises(InvalidHandleError):
        VulkanQueue(ctx, queue=0x40, queue_family_index=0, lock=object())


def test_vulkan_queue_role() -> None:
    ctx = _vk_context()
    assert VulkanQueue(ctx, queue=0x40, queue_family_index=0).role is None
    graphics = VulkanQueue(ctx, queue=0x40, queue_family_index=0, role="graphics")  # type: ignore[arg-type]
    assert graphics.role is QueueRole.GRAPHICS
    transfer = VulkanQueue(ctx, queue=0x40, queue_family_index=0, role=QueueRole.TRANSFER)
    assert transfer != graphics and transfer.as_raw() == graphics.as_raw()  # one VkQueue, two roles
    with pytest.raises(InvalidHandleError, match="VIDEO_DECODE"):
        VulkanQueue(ctx, queue=0x40, queue_family_index=0, role="present")  # type: ignore[arg-type]


def test_handles_module_reexports_the_whole_vocabulary() -> None:
    import alpha2.gpu as gpu
    from alpha2.gpu import contexts, handles, platform_handles

    for module in (contexts, platform_handles):
        for name in module.__all__:
            assert getattr(handles, name) is getattr(module, name) is getattr(gpu, name)
            assert name in handles.__all__
    # The package lists the contexts; the other platforms' variants are listed by their own module.
    assert set(contexts.__all__) - {"CU_STREAM_LEGACY", "CU_STREAM_PER_THREAD", "vk_make_api_version"} <= set(
        gpu.__all__
    )
    assert not set(platform_handles.__all__) & set(gpu.__all__)


def test_cuda_context_and_stream() -> None:
    ctx = CudaContext(context=0xC0, device_ordinal=0)
    legacy = CudaStream(ctx, stream=0)
    assert legacy.is_default and legacy.backend is BackendKind.CUDA
    assert not CudaStream(ctx, stream=0xABC).is_default
    with pytest.raises(InvalidHandleError):
        CudaContext(context=0, device_ordinal=0)
    with pytest.raises(InvalidHandleError):
        CudaStream(ctx, stream=-1)
    with pytest.raises(InvalidHandleError):
        CudaStream(object(), stream=0)  # type: ignore[arg-type]


class _FakeDevice:
    def __init__(self) -> None:
        self.queue = object()
        self.features = {"texture-format-nv12", "float32-filterable"}
        self.adapter = object()


def test_wgpu_context_and_queue() -> None:
    device = _FakeDevice()
    ctx = WgpuContext.from_device(device)
    assert ctx.features == frozenset(device.features) and ctx.adapter is device.adapter
    queue = WgpuQueue(ctx, device.queue)
    assert queue.as_raw() is device.queue and queue.backend is BackendKind.WGPU
    with pytest.raises(InvalidHandleError, match="not the queue"):
        WgpuQueue(ctx, object())
    with pytest.raises(InvalidHandleError):
        WgpuContext(device=None)


def test_gl_context() -> None:
    egl = GlContext(GlPlatform.EGL, context=0x1, display=0x2, version=(4, 6))
    assert egl.backend is BackendKind.OPENGL and egl.as_raw() == 0x1
    assert GlContext("wgl", context=0x1).platform is GlPlatform.WGL  # type: ignore[arg-type]
    with pytest.raises(InvalidHandleError, match="display"):
        GlContext(GlPlatform.GLX, context=0x1)
    with pytest.raises(InvalidHandleError, match="EGL, GLX"):
        GlContext("vulkan", context=0x1)  # type: ignore[arg-type]
    with pytest.raises(InvalidHandleError):
        GlContext(GlPlatform.CGL, context=0x1, version=(0, 1))


def test_cpu_buffer_reprs_name_the_size_not_the_bytes() -> None:
    data = bytes(1920 * 1080)
    plane = CpuPlane(data, 1920, 1920, 1080)
    for handle in (plane, CpuBytes(data), CpuPlaneSet((plane,))):
        text = repr(handle)
        assert len(text) < 200 and "2073600 bytes" in text, text
    assert "bytes_per_row=1920" in repr(plane)


@pytest.mark.parametrize(
    ("parts", "match"),
    [
        ((-1, 3), "major must be an int in 0..127"),
        ((1, 5000), "minor must be an int in 0..1023"),
        ((1, 3, 4096), "patch must be an int in 0..4095"),
        ((1, 3, 0, 8), "variant must be an int in 0..7"),
        (("1", 3), "major"),
        ((True, 3), "major"),
    ],
)
def test_vk_make_api_version_keeps_each_part_in_its_bits(parts: tuple[Any, ...], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        vk_make_api_version(*parts)


def test_vk_make_api_version_at_the_limits() -> None:
    ctx = _vk_context(api_version=vk_make_api_version(127, 1023, 4095))
    assert ctx.api_version_tuple == (127, 1023, 4095)


def test_context_fields_are_type_checked() -> None:
    with pytest.raises(InvalidHandleError, match="not a 32-bit"):
        _vk_context(api_version=2**40)
    for value in (None, 5):
        with pytest.raises(InvalidHandleError, match="collection of names"):
            _vk_context(enabled_extensions=value)
    with pytest.raises(InvalidHandleError, match="is_primary must be a bool"):
        CudaContext(1, 0, is_primary="no")  # type: ignore[arg-type]
    with pytest.raises(InvalidHandleError, match="version must be"):
        GlContext(GlPlatform.WGL, 5, version=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidHandleError, match="is_gles must be a bool"):
        GlContext(GlPlatform.WGL, 5, is_gles=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("channels", [True, 2.0, "2"])
def test_cuda_array_channels_are_ints(channels: object) -> None:
    with pytest.raises(InvalidHandleError, match="num_channels must be 1, 2 or 4"):
        CudaArray(1, 4, 4, 1, channels)  # type: ignore[arg-type]


@pytest.mark.parametrize("index", [True, "3", 3.0])
def test_vk_memory_fd_type_index_is_an_int(index: object) -> None:
    with pytest.raises(InvalidHandleError, match="memory_type_index must be an int"):
        VkMemoryFd(0, 100, memory_type_index=index)  # type: ignore[arg-type]
    with pytest.raises(InvalidHandleError, match="dedicated must be a bool"):
        VkMemoryFd(0, 100, dedicated="no")  # type: ignore[arg-type]
