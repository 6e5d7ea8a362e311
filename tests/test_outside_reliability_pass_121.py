"""Outside reliability pass 121 of the public API: leaks and refusals found as an adversarial user."""

from __future__ import annotations

import asyncio
import threading

import pytest

from alpha2.gpu.sync import CpuSyncPoint, WaiterThread, WaitStatus


@pytest.mark.parametrize("timeout", [1e10, 1e300])
def test_a_wait_with_a_timeout_past_threadings_limit_waits_for_the_work(timeout: float) -> None:
    # Past threading.TIMEOUT_MAX the wait failed at once with OverflowError, the work not done.
    point = CpuSyncPoint()
    timer = threading.Timer(0.05, point.signal)
    timer.start()
    result = point.wait(timeout)
    timer.join()
    assert result.status is WaitStatus.SIGNALED, result


def test_an_async_wait_with_a_huge_timeout_does_not_kill_the_waiter_thread() -> None:
    # The WaiterThread parked with that timeout, raised OverflowError and died, failing every wait on it.
    async def main() -> tuple[WaitStatus, WaitStatus]:
        other = CpuSyncPoint()
        other_wait = asyncio.ensure_future(other.wait_async(None))
        huge = CpuSyncPoint()
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, huge.signal)
        loop.call_later(0.1, other.signal)
        first = await huge.wait_async(1e12)
        return first.status, (await other_wait).status

    waiter = WaiterThread.instance()
    assert asyncio.run(main()) == (WaitStatus.SIGNALED, WaitStatus.SIGNALED)
    assert WaiterThread.instance() is waiter
