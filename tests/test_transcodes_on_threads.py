"""Two transcodes set up at the same moment on two threads of one process, each on a Device of its own
(the guide's "Threads and processes": on the H200 this once aborted the process, wgpu's backends making
their global instance without a lock; ``Device.open`` and ``alpha2.adapters()`` now enumerate and create
devices one thread at a time). On lavapipe here; on the GPU machine (``ALPHA2_REQUIRE``) with NVDEC's
``hwaccel='auto'`` and the NVIDIA Vulkan device."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import av
import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.api.transcoder import transcode
from alpha2.gpu.geometry import Size
from tests.media import make_clip


def _on_threads_at_once(count: int, work: Callable[[int, threading.Barrier], None]) -> None:
    """``work(i, start)`` on ``count`` threads, each to wait at ``start`` before the part to run at once;
    raises the first error a thread met, and fails if one is still running after 300 s."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i, start)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)


@pytest.mark.vulkan
def test_two_transcodes_set_up_at_once_on_two_threads_each_with_its_own_device(tmp_path: Path) -> None:
    clips = [make_clip(tmp_path / f"in{i}.mp4", width=320, height=192, frames=30).path for i in range(2)]
    options = TranscodeOptions(
        gpu=True, hwaccel="auto", size=Size(160, 96), preset="ultrafast", overwrite=True
    )
    stats: dict[int, object] = {}

    def work(i: int, start: threading.Barrier) -> None:
        start.wait(timeout=60)  # both open their devices and decoders at the same moment
        stats[i] = transcode(clips[i], str(tmp_path / f"out{i}.mp4"), options)

    _on_threads_at_once(len(clips), work)
    for i in range(len(clips)):
        with av.open(str(tmp_path / f"out{i}.mp4")) as container:
            frames = list(container.decode(video=0))
        assert len(frames) == 30
        assert (frames[0].width, frames[0].height) == (160, 96)
        assert stats[i].frames == 30  # type: ignore[attr-defined]


@pytest.mark.vulkan
def test_two_sources_on_two_threads_each_with_its_own_device_render_tensors(tmp_path: Path) -> None:
    """The same for sources: each thread opens a file (a Device of its own) and renders its frames into
    tensors by the renderer, at once. On a Dawn device this crashed the process (an H100, 2026-12-06:
    "Fatal Python error"): a source's GPU work does not hold the process's work lock that a transcode's
    does, and Dawn's event pump ticks every Dawn device (the guide's "Threads and processes" says to keep
    sources' GPU work on one thread, or in processes); so it is run where the device is wgpu-native."""
    import numpy as np

    import alpha2
    from alpha2.gpu.webgpu import WebGpuImplementation

    clips = [make_clip(tmp_path / f"in{i}.mp4", width=320, height=192, frames=24).path for i in range(2)]
    with alpha2.open(clips[0], hwaccel="auto") as first:
        if first.device.implementation is WebGpuImplementation.DAWN:
            pytest.skip("sources on threads, each on a Dawn device of its own, crash in Dawn (a known fault)")
    means: dict[int, list[float]] = {}

    def work(i: int, start: threading.Barrier) -> None:
        with alpha2.open(clips[i], hwaccel="auto") as source:
            start.wait(timeout=60)
            means[i] = []
            for frame in source:
                tensor = source.to_tensor(frame, size=(64, 64), route="dawn", device="cpu")
                means[i].append(float(np.asarray(tensor.numpy()).mean()))
                frame.release()

    _on_threads_at_once(len(clips), work)
    assert [len(means[i]) for i in range(2)] == [24, 24]
    assert all(0 < m < 255 for m in means[0] + means[1])
