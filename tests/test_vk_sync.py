"""VulkanTimelineSyncPoint on lavapipe: timeouts, host signals from another thread, async waits."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.identity import BackendKind
from alpha2.gpu.sync import SyncPoint, WaitStatus
from alpha2.native_gpu.device.candidates import vulkan_candidates
from alpha2.native_gpu.device.shared import SharedVulkanContext
from alpha2.native_gpu.device.timeline import (
    VulkanTimelineSemaphore,
    VulkanTimelineSyncPoint,
    create_timeline_semaphore,
    signal_timeline_semaphore,
)

pytestmark = pytest.mark.vulkan


@pytest.fixture(scope="module")
def context() -> Iterator[SharedVulkanContext]:
    ctx = SharedVulkanContext(vulkan_candidates()[0], decode=False)
    if "timelineSemaphore" not in ctx.enabled_features:
        ctx.close()
        pytest.skip("no timeline semaphores")
    yield ctx
    ctx.close()


def test_wait_times_out_then_a_signal_from_another_thread_resolves(context: SharedVulkanContext) -> None:
    with create_timeline_semaphore(context) as sem:
        point = sem.sync_point(2)
        assert isinstance(point, SyncPoint) and point.backend is BackendKind.VULKAN
        assert not point.is_signaled()
        timed_out = point.wait(0.05)
        assert timed_out.status is WaitStatus.TIMED_OUT and not timed_out
        assert timed_out.waited_s >= 0.04
        timer = threading.Timer(0.05, signal_timeline_semaphore, args=(sem, 2))
        timer.start()
        result = point.wait(5.0)
        timer.join()
        assert result.signaled, result
        assert point.is_signaled() and sem.value == 2
        assert sem.sync_point(1).wait(0).signaled  # earlier values are already reached


def test_async_wait_resolves(context: SharedVulkanContext) -> None:
    sem = create_timeline_semaphore(context, initial_value=10)

    async def main() -> WaitStatus:
        point = VulkanTimelineSyncPoint(context, sem, 11)
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, sem.signal, 11)
        result = await point.wait_async(5.0)
        return result.status

    assert asyncio.run(main()) is WaitStatus.SIGNALED
    sem.close()
    sem.close()
    assert sem.closed


def test_raw_handle_points_and_validation(context: SharedVulkanContext) -> None:
    sem = VulkanTimelineSemaphore(context, 5)
    assert sem.as_raw() != 0
    assert VulkanTimelineSyncPoint(context, sem.as_raw(), 5).wait(0).signaled
    assert VulkanTimelineSyncPoint(context, sem.handle, 6).wait(0.01).status is WaitStatus.TIMED_OUT
    with pytest.raises(InvalidInputError):
        sem.signal(5)  # must exceed the current value
    with pytest.raises(InvalidInputError):
        VulkanTimelineSyncPoint(context, sem, -1)
    sem.close()
    with pytest.raises(ClosedError):
        sem.value  # noqa: B018
    failed = VulkanTimelineSyncPoint(context, sem, 6).wait(0.01)
    assert failed.status is WaitStatus.FAILED and isinstance(failed.error, ClosedError)


def test_closing_the_context_destroys_its_semaphores() -> None:
    ctx = SharedVulkanContext(vulkan_candidates()[0], decode=False)
    sem = create_timeline_semaphore(ctx)
    point = sem.sync_point(1)
    ctx.close()
    assert sem.closed
    result = point.wait(0.01)
    assert result.status is WaitStatus.FAILED
