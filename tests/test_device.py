"""The one Device: chosen once, adopted from an application, handed to decoder, importer and renderer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.webgpu import (
    FEATURES_GPU_COPY,
    WebGpuImplementation,
    detect_webgpu_device,
    gpu_module_of,
    implementation_of,
    promise_settled,
    webgpu_device_of,
)
from alpha2.native_gpu import Device, FrameImporter, FrameRenderer, read_texture_rgba
from tests.media import make_clip


@pytest.fixture(scope="module")
def opened() -> Any:
    with Device.open() as device:
        yield device


@pytest.mark.vulkan
def test_open_ranks_once_and_reports(opened: Device) -> None:
    assert opened.implementation is WebGpuImplementation.WGPU
    assert implementation_of(opened.webgpu_device) is WebGpuImplementation.WGPU
    assert opened.info == detect_webgpu_device(opened.webgpu_device)
    record = opened.as_dict()
    assert record["implementation"] == "wgpu"
    assert record["adapter"] == opened.adapter_name != ""
    assert record["backend"] == "Vulkan"
    # Either way the report says why: lavapipe has no CUDA twin, an NVIDIA GPU has one matched by UUID.
    assert opened.cuda_reason
    assert record["cuda"] == opened.cuda_reason
    if "llvmpipe" in opened.adapter_name or "lavapipe" in opened.adapter_name.lower():
        assert record["cuda_ordinal"] is None
    if record["cuda_ordinal"] is not None:
        assert isinstance(record["cuda_ordinal"], int) and record["cuda_ordinal"] >= 0
        assert "UUID" in opened.cuda_reason


@pytest.mark.vulkan
def test_open_with_gpu_copy_says_why_dawn_was_not_had(opened: Device) -> None:
    with Device.open(want_gpu_copy=True) as device:
        if device.implementation is WebGpuImplementation.DAWN:
            assert set(FEATURES_GPU_COPY) <= set(device.features)
            assert device.info.has_shared_opaque_fd
        else:
            assert "no GPU copy:" in device.reason
            assert not device.info.has_shared_opaque_fd
            assert device.info.missing_gpu_copy_features == FEATURES_GPU_COPY


@pytest.mark.vulkan
def test_adopt_matches_the_vulkan_twin_by_name_and_ids(opened: Device) -> None:
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    raw = adapter.request_device_sync()
    device = Device.adopt(raw)
    assert device.webgpu_device is raw
    assert device.reason == "the application's own device"
    candidate = device.vulkan_candidate
    assert candidate is not None
    assert candidate.name == device.adapter_name
    assert device.vulkan_index == candidate.index
    assert device.uuid == candidate.uuid
    assert Device.adopt(device) is device
    assert webgpu_device_of(device) is raw
    assert webgpu_device_of(raw) is raw
    assert gpu_module_of(device) is wgpu


def test_adopt_refuses_what_is_not_a_device() -> None:
    with pytest.raises(InvalidInputError, match="not a WebGPU device"):
        Device.adopt(object())
    with pytest.raises(InvalidInputError, match="device must be an alpha2 Device"):
        DecodeSession("missing.mp4", device=object())  # type: ignore[arg-type]


@pytest.mark.vulkan
def test_shared_vulkan_is_opened_once_and_closed_with_the_device() -> None:
    device = Device.open()
    context = device.shared_vulkan()
    assert device.shared_vulkan() is context
    assert context.device_id.uuid == device.uuid
    device.close()
    assert context.closed
    device.close()  # idempotent
    with pytest.raises(ClosedError):
        device.shared_vulkan()


@pytest.mark.vulkan
def test_adopted_shared_context_stays_the_applications(opened: Device) -> None:
    from alpha2.native_gpu.device.shared import choose_shared_vulkan

    choice = choose_shared_vulkan(decode_allowed=False)
    assert choice.context is not None
    with choice.context as context:
        device = Device.adopt(opened.webgpu_device, shared_context=context)
        assert device.shared_vulkan() is context
        device.close()
        assert not context.closed


@pytest.mark.vulkan
def test_one_device_through_decoder_importer_and_renderer(opened: Device, tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "c.mkv", frames=3)
    with DecodeSession(clip.path, hwaccel="auto", device=opened) as session:
        report = session.hwaccel_report
        if opened.cuda_ordinal is None:
            # No CUDA twin: auto decodes in software and says it was the device's CUDA match that failed.
            assert not report.on_gpu
            from alpha2.native_gpu.device.device import _cuda_unusable

            if _cuda_unusable() is not None:  # no CUDA here at all: said as such, not as this GPU's lack
                assert "CUDA is not usable" in report.reason, report.reason
            else:
                assert "has no CUDA counterpart" in report.reason, report.reason
        else:
            # The device's CUDA twin decodes (NVDEC lands on the GPU the device is on).
            assert report.on_gpu and report.device_ordinal == opened.cuda_ordinal
        with FrameImporter(opened) as importer:
            assert importer.gpu_device is opened
            assert importer.device is opened.webgpu_device
            renderer = FrameRenderer(opened)
            frame = next(iter(session))
            with frame, importer.import_frame(frame) as lease:
                # wgpu-native has no GPU copy: host planes are uploaded, NVDEC planes downloaded first.
                assert lease.frame.path is ExecutionPath.CPU_UPLOAD
                if frame.on_gpu:
                    assert ExecutionPath.CPU_DOWNLOAD in lease.frame.steps
                target = renderer.render(lease.frame.views, frame.pixel_format, frame.colour, 64, 48)
                pixels = read_texture_rgba(opened, target)
    assert pixels.shape == (48, 64, 4)
    assert np.all(pixels[..., 3] == 255)


@pytest.mark.vulkan
def test_promise_settled_reads_a_real_map(opened: Device) -> None:
    gpu = opened.gpu_module
    buffer = opened.webgpu_device.create_buffer(size=256, usage=gpu.BufferUsage.MAP_READ)
    promise = buffer.map_async(gpu.MapMode.READ)
    from alpha2.gpu.webgpu import wait_promise

    assert wait_promise(promise, 5.0, opened)
    assert promise_settled(promise)
    promise.sync_wait()  # settled: resolves at once, and the buffer is mapped
    assert len(buffer.read_mapped()) == 256
    buffer.unmap()


@pytest.mark.vulkan
def test_no_cuda_means_no_enumeration_for_a_cuda_twin(
    opened: Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    from alpha2.native_gpu.device import candidates
    from alpha2.native_gpu.device import device as device_module

    calls: list[int] = []
    real = candidates.vulkan_candidates

    def counted() -> list[Any]:
        calls.append(1)
        return real()

    monkeypatch.setattr(candidates, "vulkan_candidates", counted)
    monkeypatch.setattr(device_module, "_cuda_unusable", lambda: "CUDA is not usable (no driver)")
    adopted = Device.adopt(opened.webgpu_device)
    assert adopted.cuda_ordinal is None
    assert adopted.cuda_reason == "CUDA is not usable (no driver)"
    assert calls == []  # nothing was enumerated to learn there is no CUDA twin
    # What needs the Vulkan twin still finds it, enumerating once.
    assert adopted.vulkan_candidate is not None
    assert calls == [1]


def test_no_cuda_skips_the_adapter_ranking_for_nvdec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from alpha2.ffmpeg_bridge import HwAccelUnavailableError
    from alpha2.native_gpu._cuda import core
    from alpha2.native_gpu.device import candidates

    calls: list[int] = []
    monkeypatch.setattr(candidates, "vulkan_candidates", lambda: calls.append(1) or [])
    monkeypatch.setattr(core, "cuda_available", lambda: False)
    from alpha2.api.devices import open_decoder

    clip = make_clip(tmp_path / "c.mkv", frames=2)
    with open_decoder(clip.path, None, hwaccel="auto") as session:
        assert not session.hwaccel_report.on_gpu
        assert "no CUDA device" in session.hwaccel_report.reason
    with pytest.raises(HwAccelUnavailableError, match="no CUDA device"):
        open_decoder(clip.path, None, hwaccel="cuda")
    assert calls == []  # no Vulkan enumeration to learn that there is no NVDEC


def test_a_bare_decode_session_without_a_driver_decodes_in_software(tmp_path: Path) -> None:
    """The bridge alone (no device to place it) says why NVDEC was not tried, and never fails for it."""
    from alpha2.ffmpeg_bridge import hwdevice

    if hwdevice._cuda_driver_present():
        pytest.skip("a CUDA driver is installed here")
    clip = make_clip(tmp_path / "c.mkv", frames=2)
    with DecodeSession(clip.path, hwaccel="auto") as session:
        assert not session.hwaccel_report.on_gpu
        assert "no CUDA driver" in session.hwaccel_report.reason


def test_devices_open_one_at_a_time_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """wgpu-py's backends make their global instance on first use without a lock: two threads opening
    devices at once aborted a process on the H200. Opening is serialized."""
    import threading
    import time

    from alpha2.native_gpu.device import device as device_module

    inside, peak = [0], [0]
    lock = threading.Lock()

    def slow_rank(module: Any, candidates: Any, pin: Any = None) -> list[Any]:
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        time.sleep(0.02)
        with lock:
            inside[0] -= 1
        return []  # no adapter: open raises, after the ranking

    monkeypatch.setattr(device_module, "_rank", slow_rank)
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            Device.open()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 1, "two threads ranked adapters at once"
    assert len(errors) == 6 and all("no WebGPU adapter" in str(e) for e in errors)


def test_cuda_python_without_the_driver_is_cuda_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda-python 13 raises its loader's DynamicLibNotFoundError from cuInit where no NVIDIA driver is
    installed (12 returned an error code): alpha2.open with hwaccel='auto' and alpha2 transcode ended in
    that exception. It is a CudaUnavailableError, and CUDA is simply not available."""
    from alpha2.native_gpu._cuda import core

    class DynamicLibNotFoundError(RuntimeError):
        pass

    class DriverWithoutLibcuda:
        @staticmethod
        def cuInit(_flags: int) -> Any:
            raise DynamicLibNotFoundError(
                '"cuda" is an NVIDIA driver library and can only be found via system search'
            )

    monkeypatch.setattr(core, "_driver", DriverWithoutLibcuda)
    monkeypatch.setattr(core, "_initialised", False)
    with pytest.raises(
        core.CudaUnavailableError, match=r"libcuda could not be loaded \(DynamicLibNotFoundError"
    ):
        core.cuda_init()
    assert core.cuda_available() is False
