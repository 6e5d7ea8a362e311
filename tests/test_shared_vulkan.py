"""SharedVulkanContext, choose_shared_vulkan (with pins), shared_device_index and the submission probe."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from alpha2.gpu.adapters import ADAPTER_ENV, AdapterPinError, AdapterPolicy
from alpha2.gpu.contexts import VulkanContext, VulkanQueue, vk_make_api_version
from alpha2.gpu.errors import ClosedError, Error, InvalidInputError
from alpha2.native_gpu._vk.core import SharedVulkanError, check, error_for_result, result_name
from alpha2.native_gpu.device.candidates import VulkanCandidate, vulkan_candidates
from alpha2.native_gpu.device.probe import (
    SubmissionProbeResult,
    gpu_wait_timeout,
    probe_vulkan_submission,
    set_gpu_wait_timeout,
)
from alpha2.native_gpu.device.shared import (
    QueueRole,
    SharedVulkanContext,
    choose_shared_vulkan,
    shared_device_index,
)


@pytest.fixture(autouse=True)
def _no_env_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ADAPTER_ENV, raising=False)


def test_check_maps_results_to_typed_errors() -> None:
    assert check(0, "x") == 0 and check(5, "x") == 5  # VK_INCOMPLETE is not an error
    with pytest.raises(SharedVulkanError) as info:
        check(-2, "vkAllocateMemory")
    assert info.value.vk_result == -2 and isinstance(info.value, MemoryError)
    assert "VK_ERROR_OUT_OF_DEVICE_MEMORY" in str(info.value)
    assert error_for_result(-4, "x").kind.value == "device_lost"
    assert error_for_result(-7, "x").kind.value == "unsupported"
    assert isinstance(error_for_result(-13, "x"), Error)
    assert result_name(2) == "VK_TIMEOUT" and result_name(-999) == "VkResult(-999)"


def test_gpu_wait_timeout_setting() -> None:
    previous = set_gpu_wait_timeout(2.5)
    try:
        assert gpu_wait_timeout() == 2.5
        for bad in (0, -1, float("inf"), float("nan"), "x"):
            with pytest.raises(InvalidInputError):
                set_gpu_wait_timeout(bad)  # type: ignore[arg-type]
    finally:
        set_gpu_wait_timeout(previous)


def test_shared_device_index_of_a_candidate_without_cuda() -> None:
    cand = VulkanCandidate(index=2, name="gpu", uuid=b"\x42" * 16)
    index = shared_device_index(cand)
    assert index.vulkan_index == 2 and index.uuid == b"\x42" * 16
    assert index.cuda_ordinal is None  # no CUDA device has this UUID (or no CUDA at all)
    with pytest.raises(InvalidInputError):
        shared_device_index(42)  # type: ignore[arg-type]


def test_choice_without_candidates() -> None:
    choice = choose_shared_vulkan(candidates=[])
    assert choice.context is None and choice.reason == "no Vulkan adapter found" and choice.report == ()
    broken = VulkanCandidate(index=0, name="<physical device 0>", error="boom")
    choice = choose_shared_vulkan(candidates=[broken])
    assert choice.context is None and choice.report[0].rank is None and "boom" in choice.report[0].reason


def test_pin_without_adapters_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ADAPTER_ENV, "0")
    with pytest.raises(AdapterPinError):
        choose_shared_vulkan(candidates=[])


# -- on lavapipe ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def candidates() -> list[VulkanCandidate]:
    return vulkan_candidates()


@pytest.fixture(scope="module")
def context(candidates: list[VulkanCandidate]) -> Iterator[SharedVulkanContext]:
    ctx = SharedVulkanContext(candidates[0])
    yield ctx
    ctx.close()


@pytest.mark.vulkan
def test_context_reports_what_it_enabled(
    context: SharedVulkanContext, candidates: list[VulkanCandidate]
) -> None:
    assert context.candidate is candidates[0]
    assert context.adapter_index == 0
    assert context.device_id == candidates[0].identity
    roles = {q.role for q in context.queues}
    assert {QueueRole.GRAPHICS, QueueRole.COMPUTE, QueueRole.TRANSFER} <= roles
    assert set(context.queue_families) == roles
    if candidates[0].timeline_semaphores:
        assert "timelineSemaphore" in context.enabled_features
    if candidates[0].synchronization2:
        assert "synchronization2" in context.enabled_features
    if "VK_KHR_external_memory_fd" in candidates[0].extensions:
        assert "VK_KHR_external_memory_fd" in context.enabled_extensions
    assert context.enabled_extensions <= candidates[0].extensions
    raw = context.as_raw()
    assert isinstance(raw, VulkanContext) and raw.keep_alive is context
    assert raw.device and raw.instance and raw.physical_device and raw.get_instance_proc_addr
    assert raw.enabled_extensions == context.enabled_extensions and raw.device_id == context.device_id
    assert raw.api_version >= vk_make_api_version(1, 1)
    for q in context.queues:
        assert isinstance(q, VulkanQueue) and q.context == raw and q.queue
        assert q.queue_family_index == context.queue_families[q.role] and q.queue_index == 0
        assert q.lock is context.queue_lock(q.queue_family_index, q.queue_index)
    assert context.queue_for(QueueRole.GRAPHICS) in context.queues


@pytest.mark.vulkan
def test_queue_locks(context: SharedVulkanContext) -> None:
    q = context.queues[0]
    lock = context.queue_lock(q.queue_family_index, q.queue_index)
    assert lock is context.queue_lock(q.queue_family_index, q.queue_index)
    context.lock_queue(q.queue_family_index, q.queue_index)
    try:
        got: list[bool] = []
        t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=0.05)))
        t.start()
        t.join()
        assert got == [False]  # another thread cannot submit meanwhile
        assert lock.acquire(timeout=0)  # re-entrant for the holder
        lock.release()
    finally:
        context.unlock_queue(q.queue_family_index, q.queue_index)
    with pytest.raises(InvalidInputError):
        context.queue_lock(99, 0)


@pytest.mark.vulkan
def test_submission_probe(context: SharedVulkanContext) -> None:
    result = probe_vulkan_submission(context, width=128, height=72)
    assert isinstance(result, SubmissionProbeResult)
    assert result.ok and bool(result), result.reason
    assert result.elapsed_s >= result.wait_s >= 0 and not result.timed_out
    other = probe_vulkan_submission(context, role=QueueRole.TRANSFER, final_layout="transfer")
    assert other.ok, other.reason
    with pytest.raises(InvalidInputError):
        probe_vulkan_submission(context, width=3, height=2)
    with pytest.raises(InvalidInputError):
        probe_vulkan_submission(context, final_layout="present")


@pytest.mark.vulkan
def test_submission_probe_times_out_instead_of_hanging(candidates: list[VulkanCandidate]) -> None:
    from alpha2.native_gpu.device.timeline import create_timeline_semaphore

    with SharedVulkanContext(candidates[0]) as ctx:
        if "timelineSemaphore" not in ctx.enabled_features:
            pytest.skip("no timeline semaphores")
        sem = create_timeline_semaphore(ctx)
        # The submission waits on a value nobody signals yet: the fence wait must run out.
        result = probe_vulkan_submission(ctx, timeout_s=0.1, wait_timeline=(sem, 1))
        assert not result.ok and result.timed_out and result.vk_result == 2
        assert "VK_TIMEOUT" in (result.reason or "")
        sem.signal(1)  # let the stuck submission finish so close() can idle the device
    assert ctx.closed


@pytest.mark.vulkan
def test_close_once_context_manager_and_gc(candidates: list[VulkanCandidate]) -> None:
    ctx = SharedVulkanContext(candidates[0])
    ctx.close()
    ctx.close()
    assert ctx.closed
    with pytest.raises(ClosedError):
        ctx.as_raw()
    with pytest.raises(ClosedError):
        probe_vulkan_submission(ctx)
    with SharedVulkanContext(candidates[0]) as ctx2:
        assert not ctx2.closed
    assert ctx2.closed
    ctx3 = SharedVulkanContext(candidates[0])
    state = ctx3._internal
    ref = weakref.ref(ctx3)
    del ctx3
    gc.collect()
    assert ref() is None and state.closed  # weakref.finalize backstop


@pytest.mark.vulkan
def test_choose_shared_vulkan_reports_every_candidate(candidates: list[VulkanCandidate]) -> None:
    choice = choose_shared_vulkan()
    try:
        assert choice.context is not None and choice.reason is None
        assert len(choice.report) == len(candidates)
        assert [e.rank for e in choice.report] == list(range(1, len(candidates) + 1))
        chosen = [e for e in choice.report if e.chosen]
        assert len(chosen) == 1 and chosen[0].candidate.index == choice.context.adapter_index
        assert choice.candidate is chosen[0].candidate and not choice.pinned
        assert all(e.reason for e in choice.report)
    finally:
        if choice.context is not None:
            choice.context.close()
    report_only = choose_shared_vulkan(wanted=False)
    assert report_only.context is None and "not wanted" in (report_only.reason or "")
    assert report_only.candidate is not None


@pytest.mark.vulkan
@pytest.mark.parametrize("form", ["index", "uuid", "name"])
def test_choose_with_each_pin_form(
    monkeypatch: pytest.MonkeyPatch, candidates: list[VulkanCandidate], form: str
) -> None:
    target = candidates[-1]
    value = {"index": str(target.index), "uuid": target.uuid_str or "", "name": target.name[:6].upper()}[form]
    monkeypatch.setenv(ADAPTER_ENV, value)
    if form == "name" and sum(value.lower() in c.name.lower() for c in candidates) > 1:
        # Several GPUs of one model (seen on a two-H200 machine): a name pin must be refused, not guessed.
        with pytest.raises(AdapterPinError, match="ambiguous"):
            choose_shared_vulkan(decode_allowed=False)
        return
    choice = choose_shared_vulkan(decode_allowed=False)
    try:
        assert choice.pinned
        assert choice.context is not None and choice.context.adapter_index == target.index
        assert choice.report[0].pinned and choice.report[0].chosen
        assert shared_device_index().vulkan_index == target.index
    finally:
        if choice.context is not None:
            choice.context.close()


@pytest.mark.vulkan
@pytest.mark.parametrize("value", ["99", "ffffffff-ffff-ffff-ffff-ffffffffffff", "no such gpu"])
def test_bad_pins_are_errors(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ADAPTER_ENV, value)
    with pytest.raises(AdapterPinError) as info:
        choose_shared_vulkan()
    assert "candidates:" in str(info.value)
    with pytest.raises(AdapterPinError):
        shared_device_index()


@pytest.mark.vulkan
def test_named_policy(candidates: list[VulkanCandidate]) -> None:
    choice = choose_shared_vulkan(AdapterPolicy.named(str(candidates[0].index)), wanted=False)
    assert choice.candidate is not None and choice.candidate.index == candidates[0].index


@pytest.mark.vulkan
def test_shared_device_index_on_lavapipe(context: SharedVulkanContext) -> None:
    index = shared_device_index(context)
    assert index.vulkan_index == context.adapter_index
    assert index.uuid == context.candidate.uuid
    if context.candidate.vendor_id != 0x10DE:
        assert index.cuda_ordinal is None


@pytest.mark.cuda
@pytest.mark.vulkan
def test_shared_device_index_matches_cuda() -> None:
    from alpha2.native_gpu._cuda.core import cuda_device_uuids

    uuids = cuda_device_uuids()
    assert uuids and all(len(u) == 16 for u in uuids)
    nvidia = [c for c in vulkan_candidates() if c.uuid in uuids]
    if not nvidia:
        pytest.skip("no Vulkan device is a CUDA device")
    index = shared_device_index(nvidia[0])
    assert nvidia[0].uuid is not None
    assert index.cuda_ordinal == uuids.index(nvidia[0].uuid)


def test_cuda_absent_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from alpha2.native_gpu._cuda import core as cuda_core

    monkeypatch.setitem(sys.modules, "cuda", None)
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    monkeypatch.setattr(cuda_core, "_driver", None)
    monkeypatch.setattr(cuda_core, "_initialised", False)
    with pytest.raises(cuda_core.CudaUnavailableError, match="cuda-python"):
        cuda_core.cuda_device_uuids()
    assert not cuda_core.cuda_available()
    assert cuda_core.cuda_ordinal_for_uuid(b"\x00" * 16) is None


def test_cuda_check_function() -> None:
    from alpha2.native_gpu._cuda.core import CudaError, CudaInvalidValueError, CudaOutOfMemoryError, check

    class FakeResult(int):
        name = "CUDA_ERROR_OUT_OF_MEMORY"

    assert check((0, 7), "x") == 7 and check((0,), "x") is None and check((0, 1, 2), "x") == (1, 2)
    with pytest.raises(CudaOutOfMemoryError) as info:
        check((FakeResult(2), None), "cuMemAlloc")
    assert info.value.cu_result == 2 and isinstance(info.value, MemoryError)
    with pytest.raises(CudaInvalidValueError):
        check(101, "cuDeviceGet")
    with pytest.raises(CudaError):
        check(999, "cuWhatever")
