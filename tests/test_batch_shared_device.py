"""``alpha2 batch --shared-device``: one worker process per device, its files on threads that share one
Device (each transcode holding ``Device.work_lock`` around its GPU work), rather than a process and a
Device per file. On this machine the device is lavapipe (wgpu-native); the GPU figures are in
BENCHMARKS.md when measured on the H200."""

from __future__ import annotations

import threading
from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps import batch_run
from alpha2.apps.batch import BatchSettings, batch
from alpha2.apps.batch_local import DeviceChoice, plan_workers
from alpha2.apps.batch_plan import FileStatus
from alpha2.gpu.adapters import ADAPTER_ENV, AdapterType
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size
from tests.media import make_clip


class _Candidate:
    def __init__(self, name: str, uuid: bytes, device_type: AdapterType) -> None:
        self.name, self.uuid, self.device_type, self.error = name, uuid, device_type, None
        self.uuid_str = uuid.hex()


GPU_A = _Candidate("GPU A", bytes(range(16)), AdapterType.DISCRETE_GPU)
GPU_B = _Candidate("GPU B", bytes(range(1, 17)), AdapterType.DISCRETE_GPU)
CPU = _Candidate("llvmpipe", bytes(range(2, 18)), AdapterType.CPU)


@pytest.fixture(autouse=True)
def _no_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ADAPTER_ENV, raising=False)


def test_one_worker_per_device_with_its_streams_as_threads() -> None:
    slots = plan_workers(candidates=[GPU_A, GPU_B], cuda_uuids=[GPU_B.uuid], cores=16, shared_device=True)
    assert [(s.label, s.streams, s.shared_device) for s in slots] == [("gpu0", 8, True), ("gpu1", 8, True)]
    assert [s.env[ADAPTER_ENV] for s in slots] == [GPU_A.uuid_str, GPU_B.uuid_str]
    assert [s.cuda_ordinal for s in slots] == [None, 0]
    assert slots[0].as_dict()["shared_device"] is True
    (one,) = plan_workers(candidates=[GPU_A], cuda_uuids=[], streams=5, shared_device=True)
    assert (one.streams, one.shared_device) == (5, True)
    (few,) = plan_workers(candidates=[GPU_A], cuda_uuids=[], cores=16, workers=3, shared_device=True)
    assert few.streams == 3  # --workers caps the files at once
    (cpu,) = plan_workers(candidates=[CPU], cuda_uuids=[], cores=4, shared_device=True)
    assert (cpu.label, cpu.streams, cpu.shared_device) == ("cpu0", 4, True)
    # Without the flag, a process per file, as before.
    assert all(not s.shared_device and s.streams == 1 for s in plan_workers(candidates=[GPU_A], cores=4))


def test_ray_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="--shared-device is for local workers"):
        BatchSettings(ray="auto", shared_device=True)


@pytest.fixture
def shared() -> object:
    batch_run.share_device_between_threads()
    try:
        yield batch_run._shared
    finally:
        state = batch_run._shared
        batch_run._shared = None
        if state is not None and state.device is not None:
            state.device.close()


@pytest.mark.vulkan
def test_threads_share_one_device_and_a_failure_closes_it_only_when_the_last_leaves(shared: object) -> None:
    options = TranscodeOptions(gpu=True, hwaccel="none")
    first = batch_run._thread_device(options)
    second = batch_run._thread_device(options)
    assert first is not None and first is second
    assert batch_run._thread_device(TranscodeOptions(hwaccel="none")) is None  # needs none
    batch_run._done_with_device(first, ok=False)
    assert not first._closed, "another file is still on it"
    batch_run._done_with_device(second, ok=True)
    assert first._closed, "closed once the last file on it has ended, after a failure"
    third = batch_run._thread_device(options)
    assert third is not None and third is not first
    batch_run._done_with_device(third, ok=True)
    assert not third._closed


def _decoded(path: str) -> list[np.ndarray]:
    with av.open(path) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


@pytest.mark.vulkan
def test_transcodes_on_threads_of_one_device_make_the_same_frames(tmp_path: Path, shared: object) -> None:
    # Four GPU transcodes (scaled on the device) at once on four threads sharing one Device, against
    # the same four one after another, each on a Device of its own.
    from alpha2.api.transcoder import transcode

    clips = [
        make_clip(tmp_path / f"in{i}.mp4", width=160 + 16 * i, height=96, frames=24).path for i in range(4)
    ]
    options = TranscodeOptions(
        gpu=True, hwaccel="none", size=Size(96, 64), preset="ultrafast", overwrite=True
    )
    alone = []
    for i, clip in enumerate(clips):
        out = str(tmp_path / f"alone{i}.mp4")
        transcode(clip, out, options)
        alone.append(_decoded(out))
    errors: list[BaseException] = []
    devices: list[object] = []
    start = threading.Barrier(len(clips))

    def work(i: int, clip: str) -> None:
        try:
            device = batch_run._thread_device(options)
            devices.append(device)
            start.wait(timeout=60)
            transcode(clip, str(tmp_path / f"shared{i}.mp4"), options, device=device)
            batch_run._done_with_device(device, ok=True)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i, c)) for i, c in enumerate(clips)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert len({id(d) for d in devices}) == 1
    for i in range(len(clips)):
        together = _decoded(str(tmp_path / f"shared{i}.mp4"))
        assert len(together) == len(alone[i]) == 24
        assert all(np.array_equal(a, b) for a, b in zip(alone[i], together)), f"file {i} differs"


@pytest.mark.vulkan
def test_a_batch_with_a_shared_device(tmp_path: Path) -> None:
    clips = tmp_path / "clips"
    clips.mkdir()
    for i in range(3):
        make_clip(clips / f"c{i}.mp4", width=128, height=96, frames=12)
    out = tmp_path / "out"
    report = batch(
        [str(clips)],
        out,
        TranscodeOptions(gpu=True, hwaccel="none", size=Size(64, 48), preset="ultrafast"),
        BatchSettings(device=DeviceChoice.CPU, streams=3, shared_device=True),
    )
    assert [r.status for r in report.results] == [FileStatus.DONE] * 3, [r.error for r in report.results]
    (worker,) = report.runner["workers"]
    assert (worker["streams"], worker["shared_device"]) == (3, True)
    for i in range(3):
        assert len(_decoded(str(out / f"c{i}.mp4"))) == 12


def test_a_note_says_a_pixel_format_change_only_where_the_samples_change() -> None:
    # The GPU route hands libx264 nv12: the same 8-bit 4:2:0 samples as yuv420p, which every batch
    # file's notes called "pixel format yuv420p made nv12".
    from alpha2.apps.batch_run import _samples_differ

    assert not _samples_differ("yuv420p", "nv12")
    assert not _samples_differ("yuv420p10le", "p010le")
    assert _samples_differ("yuv420p", "yuv444p")  # chroma
    assert _samples_differ("yuv420p10le", "nv12")  # depth
    assert _samples_differ("yuva420p", "yuv420p")  # alpha
    assert _samples_differ("gray", "yuv420p")
    assert _samples_differ("no such format", "nv12")  # unknown to alpha2: said
