"""The frame importer: paths, plane textures read back bit-exactly, pools, exactly-once release, failures.

CPU-upload tests run on any Vulkan device through wgpu-py (lavapipe on CI). The GPU-copy tests need
an NVIDIA GPU with CUDA, PyAV's NVDEC and a wgpudawn adapter with the shared-memory features; they
are marked ``nvidia`` + ``cuda`` + ``dawn`` (run them with ALPHA2_REQUIRE=vulkan,cuda,dawn,nvidia).
"""

from __future__ import annotations

import gc
import itertools
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import av
import numpy as np
import pytest

from alpha2.ffmpeg_bridge import media as bridge_media
from alpha2.gpu.errors import ClosedError, GpuTimeoutError, InternalError, InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import FrameMetadata, Size
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.surfaces import SurfaceBudget, SurfaceIdentity
from alpha2.gpu.webgpu import WebGpuImplementation, detect_webgpu_device
from alpha2.native_gpu.device.waits import gpu_wait_timeout, set_gpu_wait_timeout
from alpha2.native_gpu.interop import cpu_upload
from alpha2.native_gpu.interop.importer import FrameImporter
from alpha2.native_gpu.interop.leases import ImageOwner, ImportLease, SlotPool
from alpha2.native_gpu.render.renderer import gpu_module_of

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

# ---------------------------------------------------------------------------------------------------
# helpers


@pytest.fixture(scope="module")
def device() -> Any:
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    wanted = [f for f in ("texture-format16bit-norm",) if f in adapter.features]
    return adapter.request_device_sync(required_features=wanted)


@pytest.fixture
def importer(device: Any) -> Iterator[FrameImporter]:
    with FrameImporter(device, slots=2) as imp:
        yield imp


def av_frame(pix_fmt: str, width: int, height: int, index: int = 0) -> av.VideoFrame:
    """A frame of a moving pattern in ``pix_fmt`` (FFmpeg pads its rows: strides > widths)."""
    y, x = np.mgrid[0:height, 0:width]
    rgb = np.stack([(x * 5 + index * 7) % 256, (y * 3 + index) % 256, (x ^ y) % 256], axis=-1).astype(
        np.uint8
    )
    return av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format=pix_fmt)


def decoded(
    frame: av.VideoFrame,
    budget: SurfaceBudget | None = None,
    decoder_id: int = 1,
    generation: int = 0,
) -> DecodedFrame:
    """A DecodedFrame over a PyAV frame's own buffers, as the bridge makes them."""
    pixel_format = bridge_media.pixel_format_of(frame)
    identity = SurfaceIdentity(decoder_id, generation, frame.width, frame.height, pixel_format)
    size = Size(frame.width, frame.height)
    metadata = FrameMetadata(
        pts=0, time_base=None, duration=None, key_frame=True, coded_size=size, display_size=size
    )
    reservation = None
    if budget is not None:
        reservation = budget.reserve(bridge_media.frame_size_bytes(frame), identity)
    return DecodedFrame(
        planes=bridge_media.cpu_planes_of(frame, pixel_format),
        pixel_format=pixel_format,
        colour=bridge_media.colour_of(frame, pixel_format),
        metadata=metadata,
        identity=identity,
        reservation=reservation,
        keep_alive=frame,
    )


def read_plane(device: Any, texture: Any, width: int, height: int, bytes_per_texel: int) -> np.ndarray:
    """A plane texture's bytes as (height, width * bytes_per_texel) uint8 (a wgpu or wgpudawn device)."""
    gpu = gpu_module_of(device)
    row = width * bytes_per_texel
    bytes_per_row = -(-row // 256) * 256
    buffer = device.create_buffer(
        size=bytes_per_row * height, usage=gpu.BufferUsage.COPY_DST | gpu.BufferUsage.MAP_READ
    )
    encoder = device.create_command_encoder()
    encoder.copy_texture_to_buffer(
        {"texture": texture},
        {"buffer": buffer, "bytes_per_row": bytes_per_row, "rows_per_image": height},
        (width, height, 1),
    )
    device.queue.submit([encoder.finish()])
    buffer.map_sync(gpu.MapMode.READ)
    data = np.frombuffer(buffer.read_mapped(), np.uint8).reshape(height, bytes_per_row)[:, :row].copy()
    buffer.unmap()
    buffer.destroy()
    return data


def source_plane(frame: av.VideoFrame, index: int, width_bytes: int, height: int) -> np.ndarray:
    plane = frame.planes[index]
    rows = np.frombuffer(plane, np.uint8).reshape(-1, plane.line_size)
    return rows[:height, :width_bytes]


def assert_planes_equal(device: Any, lease: ImportLease, frame: av.VideoFrame) -> None:
    imported = lease.frame
    assert len(imported.textures) == len(imported.planes) == len(imported.views)
    interleaved = len(frame.planes) > len(imported.planes)  # yuv420p's Cb, Cr uploaded as one plane
    for descriptor, texture in zip(imported.planes, imported.textures):
        bpt = descriptor.plane_format.bytes_per_texel
        got = read_plane(device, texture, descriptor.width, descriptor.height, bpt)
        if interleaved and descriptor.plane_index == 1:
            cb = source_plane(frame, 1, descriptor.width, descriptor.height)
            cr = source_plane(frame, 2, descriptor.width, descriptor.height)
            want = np.stack([cb, cr], axis=-1).reshape(descriptor.height, descriptor.width * 2)
            assert descriptor.source_stride_bytes == descriptor.width * 2
        else:
            want = source_plane(frame, descriptor.plane_index, descriptor.width * bpt, descriptor.height)
            assert descriptor.source_stride_bytes == frame.planes[descriptor.plane_index].line_size
        assert np.array_equal(got, want), f"plane {descriptor.plane_index} differs"


# ---------------------------------------------------------------------------------------------------
# detection and paths (no GPU needed beyond the device fixture)


@pytest.mark.vulkan
def test_detects_wgpu_device_and_reports_paths(device: Any, importer: FrameImporter) -> None:
    info = detect_webgpu_device(device)
    assert info.implementation is WebGpuImplementation.WGPU
    assert importer.available_paths() == (ExecutionPath.CPU_UPLOAD,)
    report = importer.path_report
    gpu = next(p for p in report.paths if p.path is ExecutionPath.GPU_COPY)
    assert not gpu.available and "wgpudawn" in (gpu.reason or "")
    assert "cpu_upload" in report.summary()


def test_rejects_non_devices() -> None:
    with pytest.raises(InvalidInputError, match="not a WebGPU device"):
        FrameImporter(object())


@pytest.mark.vulkan
def test_required_path_that_cannot_be_had_is_an_error(device: Any) -> None:
    with pytest.raises(UnsupportedError, match=r"GPU_COPY was required but cannot be had: .*wgpudawn"):
        FrameImporter(device, require=ExecutionPath.GPU_COPY)
    with pytest.raises(InvalidInputError, match=r"prefer=.*use ExecutionPath"):
        FrameImporter(device, prefer=ExecutionPath.ZERO_COPY)


@pytest.mark.vulkan
def test_prepare_sets_the_path_up_before_the_first_frame(device: Any) -> None:
    with FrameImporter(device, prefer=ExecutionPath.GPU_COPY) as imp:
        cpu_entry = next(e for e in imp._entries if e.cls.path is ExecutionPath.CPU_UPLOAD)
        assert cpu_entry.instance is None  # nothing set up by the constructor
        # CUDA frames on a wgpu device: the GPU copy is out (wgpu-native), they are downloaded.
        assert imp.prepare(gpu_frames=True) is ExecutionPath.CPU_UPLOAD
        made = cpu_entry.instance
        assert made is not None
        assert imp.prepare(gpu_frames=False) is ExecutionPath.CPU_UPLOAD
        frame = av_frame("nv12", 64, 36)
        with imp.import_frame(decoded(frame)) as lease:
            assert lease.frame.path is ExecutionPath.CPU_UPLOAD
        assert cpu_entry.instance is made  # the import set nothing up again
    with pytest.raises(ClosedError):
        imp.prepare(gpu_frames=False)


@pytest.mark.vulkan
def test_prepare_makes_the_streams_textures(device: Any, tmp_path: Any) -> None:
    from alpha2.ffmpeg_bridge.decode import DecodeSession
    from tests.media import make_clip

    clip = make_clip(tmp_path / "p.mkv", codec="h264", width=64, height=36, frames=3)
    with FrameImporter(device, slots=2) as imp, DecodeSession(clip.path, hwaccel="none") as session:
        identity = session.expected_identity()
        assert imp.prepare(gpu_frames=False, identity=identity) is ExecutionPath.CPU_UPLOAD
        assert imp.stats().allocations == 1  # made and initialized before the first frame
        prepared = imp.stats()
        first = session.next_frame()
        assert first is not None
        source = first.keep_alive  # the import lets go of the frame once uploaded
        with imp.import_frame(first) as lease:
            assert lease.frame.identity == identity
            assert_planes_equal(device, lease, source)
        stats = imp.stats()
        assert stats.allocations == prepared.allocations and stats.reuses == prepared.reuses + 1
        # A prediction the frames do not match: its set is dropped when their generation arrives.
        wrong = SurfaceIdentity(identity.decoder_id, identity.generation, 80, 36, identity.pixel_format)
        imp.prepare(gpu_frames=False, identity=wrong)
        assert imp.stats().allocations == 2
        later = SurfaceIdentity(identity.decoder_id, identity.generation + 1, 64, 36, identity.pixel_format)
        frame = av_frame("yuv420p", 64, 36)
        with imp.import_frame(decoded(frame, decoder_id=later.decoder_id, generation=later.generation)):
            pass
        assert imp.stats().drained >= 2  # both sets of the older generation


@pytest.mark.vulkan
def test_prepare_records_a_failed_set_up_like_a_first_frame(
    device: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError("no staging memory here")

    monkeypatch.setattr(cpu_upload.CpuUploadPairing, "create", refuse)
    with FrameImporter(device) as imp:
        with pytest.raises(UnsupportedError, match=r"no import path can take host-memory frames: .*staging"):
            imp.prepare(gpu_frames=False)
        status = next(p for p in imp.path_report.paths if p.path is ExecutionPath.CPU_UPLOAD)
        assert not status.available
        assert "setting up cpu_upload failed: no staging memory" in (status.reason or "")
        with pytest.raises(UnsupportedError, match="no import path can take this frame"):
            imp.import_frame(decoded(av_frame("nv12", 64, 36)))


# ---------------------------------------------------------------------------------------------------
# CPU upload: bit-exact planes


@pytest.mark.vulkan
@pytest.mark.parametrize(
    ("pix_fmt", "textures"),
    [
        ("nv12", ("r8unorm", "rg8unorm")),
        # 8-bit planar chroma is uploaded interleaved, as its semi-planar twin (nv12, nv16, nv24).
        ("yuv420p", ("r8unorm", "rg8unorm")),
        ("yuv422p", ("r8unorm", "rg8unorm")),
        ("yuv444p", ("r8unorm", "rg8unorm")),
        ("p010le", ("r16unorm", "rg16unorm")),
        ("yuv420p10le", ("r16unorm", "r16unorm", "r16unorm")),
        ("gray", ("r8unorm",)),
        ("rgba", ("rgba8unorm",)),
    ],
)
def test_cpu_upload_is_bit_exact(
    device: Any, importer: FrameImporter, pix_fmt: str, textures: tuple[str, ...]
) -> None:
    frame = av_frame(pix_fmt, 70, 38)  # odd-ish sizes: FFmpeg pads rows, chroma rounds up
    budget = SurfaceBudget()
    with importer.import_frame(decoded(frame, budget)) as lease:
        imported = lease.frame
        assert imported.path is ExecutionPath.CPU_UPLOAD
        assert imported.steps == (ExecutionPath.CPU_UPLOAD,)
        assert lease.reason is None
        assert tuple(d.texture_format for d in imported.planes) == textures
        assert imported.image_state.owner is ImageOwner.WGPU_MANAGED
        assert imported.sync.gpu_ordered and imported.sync.is_signaled()
        expected = sum(d.width * d.plane_format.bytes_per_texel * d.height for d in imported.planes)
        assert imported.bytes_crossed_cpu == expected
        assert_planes_equal(device, lease, frame)
        twin = PixelFormat.from_ffmpeg_name(pix_fmt).interleaved_chroma_format
        assert imported.pixel_format is (twin or PixelFormat.from_ffmpeg_name(pix_fmt))
    assert budget.usage().surfaces == 0


@pytest.mark.vulkan
@pytest.mark.parametrize("pix_fmt", ["yuv420p", "yuv422p", "yuv444p"])
@pytest.mark.parametrize("size", [(70, 38), (71, 37)])
def test_interleaved_chroma_renders_like_separate_planes(
    device: Any, importer: FrameImporter, pix_fmt: str, size: tuple[int, int]
) -> None:
    """The CPU upload's one (Cb, Cr) plane renders byte-identical to three planes sampled as before,
    also cropped, scaled and rotated, and given the decoded frame's own format with the lease's views."""
    from alpha2.gpu.geometry import Rotation
    from alpha2.native_gpu.render.readback import read_texture_rgba
    from alpha2.native_gpu.render.renderer import FrameRenderer

    gpu = gpu_module_of(device)
    renderer = FrameRenderer(device)
    frame = av_frame(pix_fmt, *size)
    pixel_format = PixelFormat.from_ffmpeg_name(pix_fmt)
    layout = pixel_format.plane_layout(frame.width, frame.height)
    separate = []
    for info, plane in zip(layout.planes, frame.planes):
        texture = device.create_texture(
            size=(info.width, info.height, 1),
            format=info.format.wgpu_format,
            usage=gpu.TextureUsage.TEXTURE_BINDING | gpu.TextureUsage.COPY_DST,
        )
        device.queue.write_texture(
            {"texture": texture},
            memoryview(plane),
            {"offset": 0, "bytes_per_row": plane.line_size, "rows_per_image": info.height},
            (info.width, info.height, 1),
        )
        separate.append(texture)
    source = decoded(frame)
    w, h = size
    renders: list[dict[str, Any]] = [
        {},
        {"crop": (2, 2, w - 4, h - 6)},
        {
            "target": device.create_texture(
                size=(w * 2 + 1, h + 3, 1),
                format="rgba8unorm",
                usage=gpu.TextureUsage.RENDER_ATTACHMENT | gpu.TextureUsage.COPY_SRC,
            )
        },
        {"rotation": Rotation.CW90},
    ]
    with importer.import_frame(source) as lease:
        assert lease.frame.path is ExecutionPath.CPU_UPLOAD and len(lease.frame.views) == 2
        for kwargs in renders:
            old = renderer.render(separate, pixel_format, source.colour, w, h, **kwargs)
            want = read_texture_rgba(device, old)
            views = lease.frame.views
            for fmt in (lease.frame.pixel_format, pixel_format):
                got = read_texture_rgba(device, renderer.render(views, fmt, source.colour, w, h, **kwargs))
                assert np.array_equal(got, want), (kwargs, fmt)


@pytest.mark.vulkan
def test_odd_sizes_round_chroma_up(device: Any, importer: FrameImporter) -> None:
    frame = av_frame("yuv420p", 37, 23)
    with importer.import_frame(decoded(frame)) as lease:
        sizes = [(d.width, d.height) for d in lease.frame.planes]
        assert sizes == [(37, 23), (19, 12)]  # Cb and Cr interleaved in one 19x12 plane
        assert_planes_equal(device, lease, frame)


@pytest.mark.vulkan
def test_frames_from_the_decode_session(device: Any, importer: FrameImporter, tmp_path: Any) -> None:
    from alpha2.ffmpeg_bridge.decode import DecodeSession
    from tests.media import make_clip

    clip = make_clip(tmp_path / "clip.mkv", codec="h264", width=64, height=48, frames=4)
    with DecodeSession(clip.path, hwaccel="none") as session:
        for frame in session:
            keep = frame.keep_alive
            assert isinstance(keep, av.VideoFrame)
            with importer.import_frame(frame) as lease:
                assert_planes_equal(device, lease, keep)
            assert frame.released
        assert session.budget.usage().surfaces == 0


# ---------------------------------------------------------------------------------------------------
# pools, tickets, release


@pytest.mark.vulkan
def test_pool_reuse_stops_allocations(importer: FrameImporter) -> None:
    for i in range(8):
        importer.import_frame(decoded(av_frame("nv12", 32, 16, i))).release()
    stats = importer.stats()
    assert stats.allocations == 1
    assert stats.reuses == 7
    assert stats.acquired == stats.released == 8 and stats.in_flight == 0
    assert stats.peak_in_flight == 1
    assert stats.pool_sets == stats.pool_idle == 1 and stats.live_textures == 2


@pytest.mark.vulkan
def test_all_sets_held_waits_then_times_out(importer: FrameImporter) -> None:
    leases = [importer.import_frame(decoded(av_frame("gray", 16, 16, i))) for i in range(2)]
    assert importer.stats().peak_in_flight == 2
    previous = set_gpu_wait_timeout(0.05)
    try:
        frame = decoded(av_frame("gray", 16, 16, 9))
        with pytest.raises(GpuTimeoutError, match="held by unreleased leases"):
            importer.import_frame(frame)
        assert not frame.released  # a failed import leaves the frame to the caller
        # A release from another thread lets a waiting import through.
        set_gpu_wait_timeout(5.0)
        timer = threading.Timer(0.05, leases[0].release)
        timer.start()
        with importer.import_frame(frame):
            pass
        timer.join()
    finally:
        set_gpu_wait_timeout(previous)
        for lease in leases:
            lease.release()
    stats = importer.stats()
    assert stats.failed == 1 and stats.in_flight == 0 and stats.allocations == 2


@pytest.mark.vulkan
def test_generation_change_drains_the_old_pool(importer: FrameImporter) -> None:
    importer.import_frame(decoded(av_frame("nv12", 32, 16), generation=0)).release()
    held = importer.import_frame(decoded(av_frame("nv12", 32, 16), generation=0))
    other = importer.import_frame(decoded(av_frame("nv12", 32, 16), generation=0))
    held.release()
    assert importer.stats().pool_sets == 2
    with importer.import_frame(decoded(av_frame("nv12", 48, 32), generation=1)) as lease:
        stats = importer.stats()
        assert stats.drained == 1  # the idle set of generation 0
        assert stats.pool_sets == 2  # generation 0's busy set + generation 1's
        assert lease.frame.identity.generation == 1
    other.release()  # comes back to a dead generation: destroyed
    stats = importer.stats()
    assert stats.drained == 2 and stats.pool_sets == 1 and stats.live_textures == 2
    # A frame of generation 0 still held (kept across a seek) is imported into a set of its own,
    # destroyed as it comes back; generation 1's set is not touched.
    with importer.import_frame(decoded(av_frame("nv12", 32, 16), generation=0)) as old:
        assert old.frame.identity.generation == 0
        assert importer.stats().pool_sets == 2
    stats = importer.stats()
    assert stats.drained == 3 and stats.pool_sets == 1


@pytest.mark.vulkan
def test_release_exactly_once_explicit_context_and_gc(importer: FrameImporter) -> None:
    budget = SurfaceBudget()
    lease = importer.import_frame(decoded(av_frame("nv12", 32, 16), budget))
    lease.release()
    lease.release()
    assert lease.released and lease.path is ExecutionPath.CPU_UPLOAD
    with pytest.raises(ClosedError):
        _ = lease.frame
    with importer.import_frame(decoded(av_frame("nv12", 32, 16), budget)) as lease2:
        pass
    lease2.release()
    importer.import_frame(decoded(av_frame("nv12", 32, 16), budget))  # dropped at once
    gc.collect()
    stats = importer.stats()
    assert stats.acquired == stats.released == 3 and stats.in_flight == 0
    assert stats.allocations == 1
    assert budget.usage().surfaces == 0


@pytest.mark.vulkan
def test_surface_is_let_go_once_uploaded(importer: FrameImporter) -> None:
    budget = SurfaceBudget()
    frame = decoded(av_frame("nv12", 32, 16), budget)
    lease = importer.import_frame(frame)
    assert frame.released and lease.surface.released  # write_texture copied the bytes
    assert budget.usage().surfaces == 0
    lease.release()


@pytest.mark.vulkan
def test_failure_half_way_is_undone_and_importer_stays_usable(
    importer: FrameImporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = SurfaceBudget()
    importer.import_frame(decoded(av_frame("yuv420p", 32, 16), budget)).release()
    original = cpu_upload.CpuUploadPairing._write_plane
    calls = {"n": 0}

    def failing(self: Any, texture: Any, data: Any, bytes_per_row: int, g: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # the second plane of three
            raise InternalError("injected failure")
        original(self, texture, data, bytes_per_row, g)

    monkeypatch.setattr(cpu_upload.CpuUploadPairing, "_write_plane", failing)
    frame = decoded(av_frame("yuv420p", 32, 16), budget)
    with pytest.raises(InternalError, match="injected"):
        importer.import_frame(frame)
    assert not frame.released and budget.usage().surfaces == 1  # still the caller's
    stats = importer.stats()
    assert stats.failed == 1 and stats.in_flight == 0 and stats.pool_idle == stats.pool_sets == 1
    monkeypatch.setattr(cpu_upload.CpuUploadPairing, "_write_plane", original)
    with importer.import_frame(frame):
        pass
    stats = importer.stats()
    assert stats.allocations == 1 and stats.in_flight == 0 and budget.usage().surfaces == 0


@pytest.mark.vulkan
def test_closed_importer_and_released_frame_are_refused(device: Any) -> None:
    imp = FrameImporter(device)
    frame = decoded(av_frame("gray", 16, 16))
    lease = imp.import_frame(frame)
    with pytest.raises(ClosedError, match="already released"):
        imp.import_frame(frame)
    imp.close()
    lease.release()  # after close: its set is destroyed instead of pooled
    assert imp.stats().live_textures == 0
    with pytest.raises(ClosedError):
        imp.import_frame(decoded(av_frame("gray", 16, 16)))


@pytest.mark.vulkan
def test_16bit_formats_need_the_feature(monkeypatch: pytest.MonkeyPatch) -> None:
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync()
    plain = adapter.request_device_sync()
    with FrameImporter(plain) as imp:
        if imp.info.has_16bit_norm:
            pytest.skip("the device has 16-bit normalized textures without asking")
        frame = decoded(av_frame("p010le", 32, 16))
        with pytest.raises(UnsupportedError, match="texture-format16bit-norm"):
            imp.import_frame(frame)
        assert not frame.released


def test_slot_pool_waits_and_reuses() -> None:
    made: list[int] = []
    destroyed: list[int] = []
    pool: SlotPool[int] = SlotPool(
        lambda key: made.append(len(made)) or len(made), destroyed.append, per_key=1
    )
    item, reused = pool.take((1, 0), 0.01)
    assert not reused
    with pytest.raises(GpuTimeoutError):
        pool.take((1, 0), 0.01)
    pool.give_back((1, 0), item)
    again, reused = pool.take((1, 0), 0.01)
    assert reused and again == item
    pool.give_back((1, 0), again, broken=True)
    assert destroyed == [item] and pool.counts() == (0, 0)
    pool.close()
    with pytest.raises(InvalidInputError, match="closed"):
        pool.take((1, 0), 0.01)


def test_gpu_wait_timeout_is_the_bound() -> None:
    from fake_webgpu import GPU_MODULE, INFO, FakeDevice, gray_frame

    from alpha2.native_gpu.device.waits import bounded_timeout
    from alpha2.native_gpu.interop.leases import NativeSurfaceLease

    previous = set_gpu_wait_timeout(0.2)
    try:
        assert gpu_wait_timeout() == 0.2
        assert bounded_timeout(None) == 0.2 and bounded_timeout(5.0) == 0.2 and bounded_timeout(0.1) == 0.1
        # The pairing the importer makes is handed gpu_wait_timeout itself: a held slot is waited for
        # exactly the bound, then the import gives up.
        pairing = cpu_upload.CpuUploadPairing.create(
            FakeDevice(), INFO, gpu_module=GPU_MODULE, options={"slots": 1}, wait_timeout=gpu_wait_timeout
        )
        first = gray_frame()
        ticket = pairing.acquire(first, NativeSurfaceLease(first), None)
        second = gray_frame()
        t0 = time.monotonic()
        with pytest.raises(GpuTimeoutError, match=r"waited 0\.2 s"):
            pairing.acquire(second, NativeSurfaceLease(second), None)
        assert 0.2 <= time.monotonic() - t0 < 1.0
        ticket.release()
        pairing.close()
    finally:
        assert set_gpu_wait_timeout(previous) == 0.2


@pytest.mark.vulkan
def test_the_importer_waits_for_a_slot_exactly_the_gpu_wait_timeout(device: Any) -> None:
    previous = set_gpu_wait_timeout(0.3)
    try:
        with FrameImporter(device, slots=1) as imp:
            held = imp.import_frame(decoded(av_frame("gray", 16, 16)))
            frame = decoded(av_frame("gray", 16, 16, 1))
            t0 = time.monotonic()
            with pytest.raises(GpuTimeoutError, match=r"waited 0\.3 s"):
                imp.import_frame(frame)
            assert 0.3 <= time.monotonic() - t0 < 1.5
            held.release()
    finally:
        set_gpu_wait_timeout(previous)


# ---------------------------------------------------------------------------------------------------
# the renderer on imported planes (H5a's shader)


@pytest.mark.vulkan
def test_imported_planes_feed_the_renderer(device: Any, importer: FrameImporter) -> None:
    from alpha2.native_gpu.render.renderer import FrameRenderer, read_texture_rgba

    frame = av_frame("nv12", 32, 16)
    renderer = FrameRenderer(device)
    with importer.import_frame(decoded(frame)) as lease:
        f = lease.frame
        target = renderer.render(f.views, f.pixel_format, f.colour, f.width, f.height)
    rgba = read_texture_rgba(device, target)
    want = frame.to_ndarray(format="rgb24")
    assert rgba.shape == (16, 32, 4)
    # Chroma upsampling differs from swscale's on this busy pattern: compare on average.
    assert np.abs(rgba[..., :3].astype(int) - want.astype(int)).mean() < 3


# ---------------------------------------------------------------------------------------------------
# the H200: NVDEC -> GPU copy -> Dawn, bit-exact against software decoding


def _dawn_device() -> Any:
    import wgpudawn

    adapter = wgpudawn.gpu.request_adapter_sync(power_preference="high-performance")
    need = ["shared-texture-memory-opaque-f-d", "shared-fence-vk-semaphore-opaque-f-d"]
    missing = [f for f in need if f not in adapter.features]
    if missing:
        pytest.fail(f"the Dawn adapter lacks {missing}")
    extra = [f for f in ("unorm16-texture-formats", "texture-formats-tier1") if f in adapter.features]
    return adapter.request_device_sync(required_features=need + extra[:1])


def _nvdec_clip(path: Any, pix_fmt: str, frames: int) -> tuple[str, list[av.VideoFrame]]:
    """A 256x144 clip NVDEC decodes (H.264 8-bit, HEVC 10-bit) and its frames as NVDEC lays them out."""
    from tests.media import make_clip

    codec = "h264" if pix_fmt == "yuv420p" else "hevc"
    clip = make_clip(path, codec=codec, width=256, height=144, frames=frames, pix_fmt=pix_fmt)
    with av.open(clip.path) as container:
        layout = "nv12" if pix_fmt == "yuv420p" else "p010le"
        return clip.path, [f.reformat(format=layout) for f in container.decode(video=0)]


def _assert_bit_exact(device: Any, f: Any, want_frame: av.VideoFrame, index: int) -> None:
    """Every plane texture of an imported frame read back equals the software decoder's plane."""
    for d, texture in zip(f.planes, f.textures):
        bpt = d.plane_format.bytes_per_texel
        got = read_plane(device, texture, d.width, d.height, bpt)
        want = source_plane(want_frame, d.plane_index, d.width * bpt, d.height)
        assert np.array_equal(got, want), f"frame {index} plane {d.plane_index} differs"


@pytest.mark.nvidia
@pytest.mark.cuda
@pytest.mark.dawn
@pytest.mark.parametrize("pix_fmt", ["yuv420p", "yuv420p10le"])
def test_nvdec_gpu_copy_into_dawn_is_bit_exact(tmp_path: Any, pix_fmt: str) -> None:
    from alpha2.ffmpeg_bridge.decode import DecodeSession

    path, soft = _nvdec_clip(tmp_path / f"clip_{pix_fmt}.mkv", pix_fmt, 10)
    device = _dawn_device()
    with FrameImporter(device, require=ExecutionPath.GPU_COPY, slots=3) as imp:
        with DecodeSession(path, hwaccel="cuda") as session:
            assert imp.prepare(gpu_frames=True) is ExecutionPath.GPU_COPY
            first = session.next_frame()
            assert first is not None
            identity = first.identity  # NVDEC's format is known from its first frame on
            assert session.expected_identity() == identity
            assert imp.prepare(gpu_frames=True, identity=identity) is ExecutionPath.GPU_COPY
            assert imp.stats().allocations == 3  # the ring's slots, before the first import
            held: list[ImportLease] = []
            for index, frame in enumerate(itertools.chain([first], session)):
                assert frame.on_gpu and frame.identity == identity
                lease = imp.import_frame(frame)
                f = lease.frame
                assert f.path is ExecutionPath.GPU_COPY and f.bytes_crossed_cpu == 0
                assert f.image_state.owner is ImageOwner.SHARED_VULKAN
                _assert_bit_exact(device, f, soft[index], index)
                held.append(lease)
                if len(held) == 2:  # keep two in flight: the ring turns over with fences both ways
                    held.pop(0).release()
            for lease in held:
                lease.release()
        imp.poll()
        stats = imp.stats()
        assert stats.in_flight == 0 and stats.allocations <= 3 and stats.reuses >= 7
        report = imp.path_report
        assert report.frames_by_path == {ExecutionPath.GPU_COPY: 10} and report.bytes_crossed_cpu == 0
    assert session.budget.usage().surfaces == 0


@pytest.mark.nvidia
@pytest.mark.cuda
@pytest.mark.dawn
@pytest.mark.parametrize("pix_fmt", ["yuv420p", "yuv420p10le"])
def test_nvdec_frames_copied_on_the_decode_thread_are_bit_exact(tmp_path: Any, pix_fmt: str) -> None:
    from alpha2.ffmpeg_bridge.decode import DecodeSession

    path, soft = _nvdec_clip(tmp_path / f"ahead_{pix_fmt}.mkv", pix_fmt, 30)
    device = _dawn_device()
    with FrameImporter(device, require=ExecutionPath.GPU_COPY, slots=3) as imp:
        with DecodeSession(path, hwaccel="cuda", prefetch=3) as session:
            imp.prepare(gpu_frames=True, identity=session.expected_identity())
            session.set_copy_ahead(imp.copy_ahead)
            held: list[ImportLease] = []
            for index, frame in enumerate(session):
                lease = imp.import_frame(frame)
                f = lease.frame
                assert f.path is ExecutionPath.GPU_COPY and f.bytes_crossed_cpu == 0
                _assert_bit_exact(device, f, soft[index], index)
                held.append(lease)
                if len(held) == 2:  # two in flight: slots turn over between the threads, fenced both ways
                    held.pop(0).release()
            for lease in held:
                lease.release()
        imp.poll()
        stats = imp.stats()
        assert stats.copied_ahead > 0, stats
        assert stats.in_flight == 0 and stats.surfaces_held == 0
        assert imp.path_report.frames_by_path == {ExecutionPath.GPU_COPY: 30}
    assert imp.stats().live_textures == 0
    assert session.budget.usage().surfaces == 0


@pytest.mark.nvidia
@pytest.mark.cuda
@pytest.mark.vulkan
def test_nvdec_frames_on_wgpu_are_downloaded_and_reported(device: Any, tmp_path: Any) -> None:
    from alpha2.ffmpeg_bridge.decode import DecodeSession
    from tests.media import make_clip

    clip = make_clip(tmp_path / "clip.mkv", codec="h264", width=256, height=144, frames=3)
    with av.open(clip.path) as container:
        soft = [f.reformat(format="nv12") for f in container.decode(video=0)]
    with FrameImporter(device) as imp, DecodeSession(clip.path, hwaccel="cuda") as session:
        for index, frame in enumerate(session):
            with imp.import_frame(frame) as lease:
                f = lease.frame
                assert f.path is ExecutionPath.CPU_UPLOAD
                assert f.steps == (ExecutionPath.CPU_DOWNLOAD, ExecutionPath.CPU_UPLOAD)
                assert lease.reason is not None and "GPU_COPY unavailable" in lease.reason
                for d, texture in zip(f.planes, f.textures):
                    bpt = d.plane_format.bytes_per_texel
                    got = read_plane(device, texture, d.width, d.height, bpt)
                    assert np.array_equal(
                        got, source_plane(soft[index], d.plane_index, d.width * bpt, d.height)
                    )
        assert imp.path_report.fallback_count == 3


# ---------------------------------------------------------------------------------------------------
# _vk.export on any Vulkan device (lavapipe: memory fds yes, semaphore fds no)


@pytest.fixture(scope="module")
def shared_context() -> Iterator[Any]:
    from alpha2.native_gpu.device.shared import choose_shared_vulkan

    choice = choose_shared_vulkan(decode_allowed=False)
    if choice.context is None:
        pytest.fail(f"no shared Vulkan context: {choice.reason}")
    yield choice.context
    choice.context.close()


@pytest.mark.vulkan
def test_exportable_images_export_memory_fds(shared_context: Any) -> None:
    from alpha2.native_gpu._vk import export
    from alpha2.native_gpu.device.shared import QueueRole

    state = shared_context._internal
    if "VK_KHR_external_memory_fd" not in shared_context.enabled_extensions:
        pytest.skip("the Vulkan driver has no VK_KHR_external_memory_fd")
    images = []
    for plane_format in PixelFormat.P010.plane_formats + PixelFormat.NV12.plane_formats:
        support = export.external_image_support(state, plane_format.vk_format)
        assert support.exportable, support.reason
        images.append(export.ExportableImage(state, 64, 36, plane_format.vk_format))
    for image in images:
        assert image.size_bytes >= 64 * 36 and image.create_info_address != 0
        with image.export_memory_fd() as fd:
            assert os.fstat(fd.fileno()).st_size >= 0
    export.transition_for_external(state, images, shared_context.queue_families[QueueRole.GRAPHICS], 5.0)
    assert all(image.layout == export.VK_IMAGE_LAYOUT_GENERAL for image in images)
    for image in images:
        image.close()
        image.close()
        assert image.closed
        with pytest.raises(InvalidInputError):
            image.export_memory_fd()


@pytest.mark.vulkan
def test_semaphore_export_support_is_reported(shared_context: Any) -> None:
    from alpha2.native_gpu._vk import export

    state = shared_context._internal
    for timeline in (False, True):
        support = export.external_semaphore_support(state, timeline=timeline)
        if support.exportable:
            semaphore = export.ExportableSemaphore(state, timeline=timeline)
            with semaphore.export_fd() as fd:
                assert fd.fileno() >= 0
            semaphore.close()
        else:  # lavapipe: a reason, and a typed refusal instead of a crash
            assert support.reason
            with pytest.raises(UnsupportedError, match="semaphore"):
                export.ExportableSemaphore(state, timeline=timeline)
