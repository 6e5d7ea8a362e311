"""Leak suite for the importer (after wgpu-py's tests_mem): import and release many frames, then check
that surfaces, tickets, pool sizes and live texture objects are back at their baseline.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from typing import Any

import av
import numpy as np
import pytest

from alpha2.ffmpeg_bridge import media as bridge_media
from alpha2.gpu.errors import InternalError
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import FrameMetadata, Size
from alpha2.gpu.surfaces import SurfaceBudget, SurfaceIdentity
from alpha2.native_gpu.interop import cpu_upload
from alpha2.native_gpu.interop.importer import FrameImporter

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

FRAMES = 120


@pytest.fixture(scope="module")
def device() -> Any:
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    return adapter.request_device_sync()


@pytest.fixture(scope="module")
def sources() -> list[av.VideoFrame]:
    frames = []
    for i in range(4):
        rgb = np.full((24, 40, 3), i * 40, np.uint8)
        frames.append(av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="nv12"))
    return frames


def make_frame(frame: av.VideoFrame, budget: SurfaceBudget, decoder_id: int, generation: int) -> DecodedFrame:
    pixel_format = bridge_media.pixel_format_of(frame)
    identity = SurfaceIdentity(decoder_id, generation, frame.width, frame.height, pixel_format)
    size = Size(frame.width, frame.height)
    return DecodedFrame(
        planes=bridge_media.cpu_planes_of(frame, pixel_format),
        pixel_format=pixel_format,
        colour=bridge_media.colour_of(frame, pixel_format),
        metadata=FrameMetadata(
            pts=0, time_base=None, duration=None, key_frame=True, coded_size=size, display_size=size
        ),
        identity=identity,
        reservation=budget.reserve(bridge_media.frame_size_bytes(frame), identity),
        keep_alive=frame,
    )


def live_textures() -> int:
    import wgpu

    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, wgpu.GPUTexture))


@pytest.fixture
def importer(device: Any) -> Iterator[FrameImporter]:
    with FrameImporter(device, slots=3) as imp:
        yield imp


@pytest.mark.vulkan
def test_many_imports_return_to_baseline(importer: FrameImporter, sources: list[av.VideoFrame]) -> None:
    budget = SurfaceBudget()
    # Warm up: one full ring of sets.
    warm = [importer.import_frame(make_frame(sources[i], budget, 1, 0)) for i in range(3)]
    for lease in warm:
        lease.release()
    base_stats = importer.stats()
    base_textures = live_textures()
    held: list[Any] = []
    for i in range(FRAMES):
        lease = importer.import_frame(make_frame(sources[i % 4], budget, 1, 0))
        if i % 3 == 0:
            held.append(lease)  # released later, out of order
        elif i % 3 == 1:
            lease.release()
        else:
            del lease  # the GC backstop releases it
        if len(held) == 2:
            held.pop(0).release()
    for lease in held:
        lease.release()
    gc.collect()
    stats = importer.stats()
    assert stats.in_flight == 0 and stats.acquired == stats.released == FRAMES + 3
    assert stats.allocations == base_stats.allocations == 3
    assert stats.pool_sets == base_stats.pool_sets and stats.live_textures == base_stats.live_textures
    assert budget.usage().surfaces == 0
    assert live_textures() == base_textures


@pytest.mark.vulkan
def test_failures_and_generations_do_not_leak(
    importer: FrameImporter, sources: list[av.VideoFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = SurfaceBudget()
    original = cpu_upload.CpuUploadPairing._write_plane
    state = {"n": 0}

    def flaky(self: Any, texture: Any, data: Any, bytes_per_row: int, g: Any) -> None:
        state["n"] += 1
        if state["n"] % 7 == 0:
            raise InternalError("injected")
        original(self, texture, data, bytes_per_row, g)

    monkeypatch.setattr(cpu_upload.CpuUploadPairing, "_write_plane", flaky)
    base_textures = live_textures()
    failures = 0
    for generation in range(4):  # each generation drains the previous one's sets
        for i in range(20):
            frame = make_frame(sources[i % 4], budget, 7, generation)
            try:
                importer.import_frame(frame).release()
            except InternalError:
                failures += 1
                frame.release()
    monkeypatch.setattr(cpu_upload.CpuUploadPairing, "_write_plane", original)
    gc.collect()
    stats = importer.stats()
    assert failures > 0 and stats.failed == failures
    assert stats.in_flight == 0 and stats.released == stats.acquired
    assert stats.pool_sets == 1 and stats.live_textures == 2  # only the last generation's set
    assert budget.usage().surfaces == 0
    importer.close()
    assert importer.stats().live_textures == 0
    assert live_textures() <= base_textures
