"""Sync points: timeouts honoured, async waits, many waits, cross-thread signals, failures, the waiter."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable

import pytest

from alpha2.gpu.errors import ClosedError, DeviceLostError, InternalError, InvalidInputError
from alpha2.gpu.identity import BackendKind
from alpha2.gpu.sync import (
    DEFAULT_WAIT_TIMEOUT,
    WAITER_BLOCKING_SLICE_S,
    CpuSyncPoint,
    SignaledSyncPoint,
    SyncPoint,
    SyncWaiter,
    WaiterThread,
    WaitResult,
    WaitStatus,
)


class NativeOnlyPoint(SyncPoint):
    """Like a Vulkan timeline semaphore: pollable, with a blocking native wait and no push notification."""

    backend = BackendKind.VULKAN

    def __init__(self) -> None:
        super().__init__()
        self.done_at: float | None = None
        self.error: BaseException | None = None
        self.native_calls: list[float] = []

    def finish_after(self, delay_s: float, error: BaseException | None = None) -> None:
        self.error = error
        self.done_at = time.monotonic() + delay_s

    def _poll(self) -> bool:
        return self.done_at is not None and time.monotonic() >= self.done_at

    def _failure(self) -> BaseException | None:
        return self.error

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        self.native_calls.append(timeout_s)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self._poll():
                return WaitStatus.FAILED if self.error else WaitStatus.SIGNALED
            time.sleep(min(0.001, max(0.0, end - time.monotonic())))
        return WaitStatus.SIGNALED if self._poll() and not self.error else WaitStatus.TIMED_OUT


class RaisingPoint(SyncPoint):
    def _poll(self) -> bool:
        return False

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        raise DeviceLostError("VK_ERROR_DEVICE_LOST")


def test_default_timeout() -> None:
    assert DEFAULT_WAIT_TIMEOUT == 10.0


def test_timeout_is_honoured_and_not_raised() -> None:
    point = CpuSyncPoint()
    start = time.monotonic()
    result = point.wait(0.05)
    elapsed = time.monotonic() - start
    assert result.status is WaitStatus.TIMED_OUT and not result and result.timed_out
    assert 0.05 <= elapsed < 0.5
    assert result.waited_s >= 0.05
    zero = point.wait(0)
    assert zero.status is WaitStatus.TIMED_OUT and zero.waited_s < 0.05


def test_native_only_timeout_is_honoured() -> None:
    point = NativeOnlyPoint()
    start = time.monotonic()
    assert point.wait(0.05).status is WaitStatus.TIMED_OUT
    assert 0.05 <= time.monotonic() - start < 0.5
    assert point.native_calls, "the blocking wait hands off to _wait_native in the caller's thread"


def test_bad_timeouts_are_refused() -> None:
    point = SignaledSyncPoint()
    for bad in (-1, float("nan"), "1", True):
        with pytest.raises(InvalidInputError):
            point.wait(bad)  # type: ignore[arg-type]


def test_a_callback_that_cannot_be_called_is_refused_at_submit() -> None:
    """Found by an outside pass: submit(point, t, "not callable") was taken, and the waiter thread
    logged a TypeError from inside when the wait ended."""
    waiter = WaiterThread(name="alpha2-test-callback")
    try:
        for bad in ("not callable", None, 3):
            with pytest.raises(InvalidInputError, match="callable callback"):
                waiter.submit(CpuSyncPoint(), 0.01, bad)  # type: ignore[arg-type]
            with pytest.raises(InvalidInputError, match="callable callback"):
                SyncWaiter(waiter).submit(CpuSyncPoint(), 0.01, bad)  # type: ignore[arg-type]
    finally:
        waiter.stop()


def test_signaled_point() -> None:
    point = SignaledSyncPoint(BackendKind.CUDA)
    assert point.backend is BackendKind.CUDA and point.is_signaled()
    result = point.wait()
    assert result and result.signaled and result.error is None
    assert point.wait_blocking().signaled
    assert asyncio.run(point.wait_async()).signaled


def test_signal_from_another_thread_wakes_a_blocking_wait() -> None:
    point = CpuSyncPoint()
    timer = threading.Timer(0.03, point.signal)
    timer.start()
    start = time.monotonic()
    result = point.wait(5.0)
    assert result.signaled and 0.02 <= time.monotonic() - start < 1.0
    assert point.is_signaled()
    assert not point.signal() and not point.fail(RuntimeError("late")), "first completion wins"
    assert point.wait(0).signaled


def test_failure_propagates_to_every_kind_of_wait() -> None:
    point = CpuSyncPoint()
    error = DeviceLostError("lost")
    assert point.fail(error)
    assert not point.is_signaled()
    result = point.wait(1.0)
    assert result.status is WaitStatus.FAILED and result.error is error and not result
    assert asyncio.run(point.wait_async(1.0)).error is error
    # failing later, while a waiter blocks
    late = CpuSyncPoint()
    threading.Timer(0.02, late.fail, args=(error,)).start()
    blocked = late.wait(5.0)
    assert blocked.failed and blocked.error is error


def test_exceptions_from_subclasses_are_failures_not_raises() -> None:
    result = RaisingPoint().wait(1.0)
    assert result.status is WaitStatus.FAILED and isinstance(result.error, DeviceLostError)
    assert asyncio.run(RaisingPoint().wait_async(1.0)).failed


def test_native_failure_status_carries_the_error() -> None:
    point = NativeOnlyPoint()
    point.finish_after(0.01, DeviceLostError("lost"))
    result = point.wait(2.0)
    assert result.failed and isinstance(result.error, DeviceLostError)


def test_wait_result_validation() -> None:
    with pytest.raises(InvalidInputError):
        WaitResult(WaitStatus.SIGNALED, 0.0, error=RuntimeError())
    with pytest.raises(InvalidInputError):
        WaitResult(WaitStatus.SIGNALED, -1.0)


def test_async_wait_resolves_when_signalled_from_a_thread() -> None:
    async def main() -> WaitResult:
        point = CpuSyncPoint()
        threading.Timer(0.02, point.signal).start()
        return await point.wait_async(5.0)

    result = asyncio.run(main())
    assert result.signaled and result.waited_s >= 0.015


def test_async_timeout_is_honoured() -> None:
    async def main() -> tuple[WaitResult, float]:
        start = time.monotonic()
        result = await NativeOnlyPoint().wait_async(0.05)
        return result, time.monotonic() - start

    result, elapsed = asyncio.run(main())
    assert result.timed_out and 0.05 <= elapsed < 0.5


def test_hundreds_of_async_waits_resolve_and_the_loop_stays_responsive() -> None:
    async def main() -> tuple[list[WaitResult], float, int]:
        cpu_points = [CpuSyncPoint() for _ in range(300)]
        native_points = [NativeOnlyPoint() for _ in range(50)]
        tasks = [asyncio.ensure_future(p.wait_async(5.0)) for p in cpu_points + native_points]
        await asyncio.sleep(0)
        # signal from another thread, staggered, while the loop keeps ticking
        for index, native in enumerate(native_points):
            native.finish_after(0.001 * (index % 20), error=None)

        def signal_all() -> None:
            for index, point in enumerate(cpu_points):
                point.signal()
                if index % 50 == 0:
                    time.sleep(0.002)

        threading.Thread(target=signal_all).start()
        ticks = 0
        worst_gap = 0.0
        last = time.monotonic()
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0.001)
            now = time.monotonic()
            worst_gap = max(worst_gap, now - last)
            last = now
            ticks += 1
        return [task.result() for task in tasks], worst_gap, ticks

    start = time.monotonic()
    results, worst_gap, ticks = asyncio.run(main())
    assert len(results) == 350 and all(result.signaled for result in results)
    assert time.monotonic() - start < 3.0
    assert ticks > 0 and worst_gap < 0.25, f"event loop stalled for {worst_gap:.3f} s"


def test_cancelled_async_wait_is_withdrawn() -> None:
    waiter = WaiterThread()
    point = CpuSyncPoint()
    calls: list[WaitResult] = []
    ticket = waiter.submit(point, 5.0, calls.append)
    assert ticket.cancel()
    point.signal()
    time.sleep(0.05)
    assert calls == [] and ticket.cancelled and not ticket.done
    waiter.stop()

    async def main() -> None:
        task = asyncio.ensure_future(CpuSyncPoint().wait_async(5.0))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_waiter_thread_submit_callback_style() -> None:
    waiter = WaiterThread(name="alpha2-test-waiter")
    assert not waiter.running, "started lazily"
    done = threading.Event()
    results: list[tuple[WaitResult, str]] = []

    def callback(result: WaitResult) -> None:
        results.append((result, threading.current_thread().name))
        done.set()

    point = NativeOnlyPoint()
    waiter.submit(point, 2.0, callback)
    assert waiter.running
    point.finish_after(0.02)
    assert done.wait(2.0)
    result, thread_name = results[0]
    assert result.signaled and thread_name == "alpha2-test-waiter"
    assert all(slice_s <= 0.005 + 1e-9 for slice_s in point.native_calls), "bounded slices"

    timed_out = threading.Event()
    outcome: list[WaitResult] = []
    waiter.submit(CpuSyncPoint(), 0.05, lambda r: (outcome.append(r), timed_out.set()))
    assert timed_out.wait(2.0) and outcome[0].timed_out and outcome[0].waited_s >= 0.05
    waiter.stop()
    assert not waiter.running
    with pytest.raises(ClosedError):
        waiter.submit(CpuSyncPoint(), 1.0, callback)


def test_stop_fails_pending_waits_and_instance_is_replaced() -> None:
    waiter = WaiterThread()
    got: list[WaitResult] = []
    waiter.submit(CpuSyncPoint(), None, got.append)
    waiter.stop()
    assert len(got) == 1 and got[0].failed and isinstance(got[0].error, ClosedError)
    first = WaiterThread.instance()
    assert WaiterThread.instance() is first


def test_sync_waiter_groups_waits() -> None:
    waiter = WaiterThread()
    group = SyncWaiter(waiter)
    points = [CpuSyncPoint() for _ in range(3)]
    points[0].signal()
    points[1].fail(DeviceLostError("x"))
    start = time.monotonic()
    results = group.wait_all(points, timeout=0.05)
    assert [r.status for r in results] == [WaitStatus.SIGNALED, WaitStatus.FAILED, WaitStatus.TIMED_OUT]
    assert time.monotonic() - start < 0.5, "one shared deadline"

    points[2].signal()
    async_results = asyncio.run(group.wait_all_async(points, timeout=1.0))
    assert [r.status for r in async_results] == [r.status for r in results[:2]] + [WaitStatus.SIGNALED]

    calls: list[WaitResult] = []
    group.submit(CpuSyncPoint(), 5.0, calls.append)
    group.submit(CpuSyncPoint(), 5.0, calls.append)
    assert group.cancel_all() == 2
    waiter.stop()
    assert calls == []


def test_timeouts_do_not_pile_up_wakers() -> None:
    waiter = WaiterThread()
    point = CpuSyncPoint()
    for _ in range(20):
        finished = threading.Event()

        def on_done(_result: WaitResult, flag: threading.Event = finished) -> None:
            flag.set()

        waiter.submit(point, 0.0, on_done)
        assert finished.wait(1.0)
    assert len(point._wakers) == 1
    waiter.stop()


class BlockingOnlyPoint(SyncPoint):
    """Like a CUDA event under NVDEC: a status query is dear, a blocking wait cheap (``blocking_waits``)."""

    backend = BackendKind.CUDA
    blocking_waits = True

    def __init__(self, name: str = "", longest_block_s: float = math.inf) -> None:
        super().__init__()
        self.name = name
        self.done = threading.Event()
        self.polls = 0
        self.native_calls: list[tuple[float, str]] = []
        self._longest_block_s = longest_block_s

    def _poll(self) -> bool:
        self.polls += 1
        return self.done.is_set()

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        self.native_calls.append((timeout_s, threading.current_thread().name))
        if self.done.wait(min(timeout_s, self._longest_block_s)):
            return WaitStatus.SIGNALED
        return WaitStatus.TIMED_OUT


def test_waiter_blocks_on_a_blocking_point_once_without_polling_it() -> None:
    waiter = WaiterThread(name="alpha2-test-blocking")
    point = BlockingOnlyPoint()
    got: list[WaitResult] = []
    finished = threading.Event()
    waiter.submit(point, 2.0, lambda r: (got.append(r), finished.set()))
    threading.Timer(0.03, point.done.set).start()
    assert finished.wait(2.0)
    assert got[0].signaled and got[0].waited_s >= 0.03
    assert point.polls == 0, "the waiter never asks a blocking point"
    assert len(point.native_calls) == 1, "a wait shorter than a slice: one call"
    timeout_s, thread_name = point.native_calls[0]
    assert timeout_s == WAITER_BLOCKING_SLICE_S and thread_name == "alpha2-test-blocking"

    late = BlockingOnlyPoint()
    outcome: list[WaitResult] = []
    timed_out = threading.Event()
    waiter.submit(late, 0.05, lambda r: (outcome.append(r), timed_out.set()))
    assert timed_out.wait(2.0)
    assert outcome[0].timed_out and outcome[0].waited_s >= 0.05
    assert late.polls == 0 and len(late.native_calls) == 1
    waiter.stop()


def test_blocking_points_are_waited_in_submission_order() -> None:
    waiter = WaiterThread()
    points = [BlockingOnlyPoint(name) for name in "abc"]
    order: list[str] = []
    all_done = threading.Event()

    def on_done(result: WaitResult, name: str) -> None:
        assert result.signaled
        order.append(name)
        if len(order) == 3:
            all_done.set()

    for point in points:
        waiter.submit(point, 5.0, lambda r, n=point.name: on_done(r, n))
    points[2].done.set()  # the newest finishes first ...
    points[1].done.set()
    time.sleep(0.05)
    assert order == [], "nothing completes before the oldest"
    points[0].done.set()  # ... yet they complete oldest first
    assert all_done.wait(2.0)
    assert order == ["a", "b", "c"]
    assert [p.polls for p in points] == [0, 0, 0]
    calls = [t for p in points for t, _ in p.native_calls]
    assert calls and all(t <= WAITER_BLOCKING_SLICE_S for t in calls), "blocking calls of 50 ms at most"
    waiter.stop()


def test_a_blocking_point_shares_the_waiter_with_other_waits() -> None:
    waiter = WaiterThread()
    blocking = BlockingOnlyPoint()
    other = NativeOnlyPoint()
    other.finish_after(0.02)
    other_done = threading.Event()
    blocking_done = threading.Event()
    waiter.submit(other, 5.0, lambda r: other_done.set())
    waiter.submit(blocking, 5.0, lambda r: blocking_done.set())
    assert other_done.wait(1.0), "the other wait keeps its turn while the blocking point is pending"
    assert not blocking_done.is_set()
    time.sleep(0.02)
    blocking.done.set()
    assert blocking_done.wait(2.0)
    *shares, alone = [timeout_s for timeout_s, _ in blocking.native_calls]
    assert shares and all(t <= 0.005 + 1e-9 for t in shares), "slices while the other wait was pending"
    assert alone == WAITER_BLOCKING_SLICE_S, "then the longer slices of a blocking point alone"
    assert blocking.polls == 0
    waiter.stop()


def test_wait_and_wait_async_of_a_blocking_point_do_not_poll() -> None:
    point = BlockingOnlyPoint()
    result = point.wait(0)
    assert result.timed_out and point.native_calls == [(0.0, threading.current_thread().name)]
    threading.Timer(0.02, point.done.set).start()
    assert point.wait(2.0).signaled
    assert len(point.native_calls) == 2 and point.native_calls[1][0] > 1.9

    later = BlockingOnlyPoint()

    async def main() -> WaitResult:
        threading.Timer(0.02, later.done.set).start()
        return await later.wait_async(2.0)

    assert asyncio.run(main()).signaled
    assert point.polls == 0 and later.polls == 0
    assert later.native_calls and {name for _, name in later.native_calls} == {"alpha2-sync-waiter"}


def test_a_wait_submitted_beside_a_long_blocking_one_is_not_held_up() -> None:
    # Found by an outside pass: a blocking point pending with a 2 s deadline held a 0.2 s wait_async of
    # another point for 1.95 s, and one withdrawn (cancelled) held it to its whole deadline.
    blocking = BlockingOnlyPoint()
    quick = CpuSyncPoint()

    async def main() -> tuple[WaitResult, float]:
        long_wait = asyncio.ensure_future(blocking.wait_async(3.0))
        await asyncio.sleep(0.1)  # the waiter is blocked on it now
        threading.Timer(0.02, quick.signal).start()
        t0 = time.monotonic()
        result = await quick.wait_async(0.5)
        waited = time.monotonic() - t0
        long_wait.cancel()
        return result, waited

    result, waited = asyncio.run(main())
    assert result.signaled and waited < 0.2, waited

    withdrawn = BlockingOnlyPoint()
    after = CpuSyncPoint()

    async def cancel_then_wait() -> float:
        task = asyncio.ensure_future(withdrawn.wait_async(3.0))
        await asyncio.sleep(0.1)
        task.cancel()
        t0 = time.monotonic()
        assert (await after.wait_async(0.2)).timed_out
        return time.monotonic() - t0

    assert asyncio.run(cancel_then_wait()) < 0.45  # its 0.2 s, not the withdrawn wait's 3 s
    assert blocking.polls == 0 and withdrawn.polls == 0


class BrokenWakerPoint(SyncPoint):
    """A subclass whose waker registration raises (a fault of its own)."""

    def _poll(self) -> bool:
        return False

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        time.sleep(min(timeout_s, 0.001))
        return WaitStatus.TIMED_OUT

    def _add_waker(self, waker: Callable[[], None]) -> bool:
        raise RuntimeError("waker broke")


def test_a_point_whose_waker_raises_fails_its_own_wait_and_the_waiter_goes_on() -> None:
    async def main() -> tuple[WaitResult, WaitResult]:
        broken = await asyncio.wait_for(BrokenWakerPoint().wait_async(0.2), 3)
        point = CpuSyncPoint()
        threading.Timer(0.02, point.signal).start()
        return broken, await asyncio.wait_for(point.wait_async(1.0), 3)

    broken, later = asyncio.run(main())
    assert broken.failed and isinstance(broken.error, RuntimeError) and "waker broke" in str(broken.error)
    assert later.signaled and WaiterThread.instance().running


class FaultyPoint(SyncPoint):
    """A point whose very ``blocking_waits`` raises when the waiter reads it: a fault in the waiter's own
    loop, which must not leave the waits on it hanging."""

    def _poll(self) -> bool:
        return False

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        return WaitStatus.TIMED_OUT

    @property  # type: ignore[override]
    def blocking_waits(self) -> bool:
        if threading.current_thread().name.startswith("alpha2-test-faulty"):
            raise RuntimeError("the loop broke")
        return False


def test_a_waiter_that_fails_fails_its_waits_and_a_new_one_takes_over() -> None:
    waiter = WaiterThread(name="alpha2-test-faulty")
    other = NativeOnlyPoint()  # never finishes: pending when the loop breaks
    got: list[WaitResult] = []
    done = threading.Event()
    waiter.submit(other, 5.0, lambda r: (got.append(r), done.set()))
    time.sleep(0.02)
    waiter.submit(FaultyPoint(), 5.0, got.append)
    assert done.wait(2.0), "the pending wait resolves at once"
    assert got and all(r.failed and isinstance(r.error, InternalError) for r in got)
    assert "the loop broke" in str(got[0].error)
    with pytest.raises(ClosedError):
        waiter.submit(CpuSyncPoint(), 1.0, got.append)


def test_instance_replaces_a_waiter_whose_thread_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    dead = WaiterThread()
    dead._thread = threading.Thread(target=lambda: None)
    dead._thread.start()
    dead._thread.join()
    monkeypatch.setattr(WaiterThread, "_instance", dead)
    assert WaiterThread.instance() is not dead


def test_stop_fails_pending_blocking_waits() -> None:
    waiter = WaiterThread()
    point = BlockingOnlyPoint(longest_block_s=0.02)  # returns early, as a native wait may
    got: list[WaitResult] = []
    waiter.submit(point, None, got.append)
    time.sleep(0.05)
    assert got == [], "an unbounded wait is waited again after each early return"
    waiter.stop(timeout=2.0)
    assert len(got) == 1 and got[0].failed and isinstance(got[0].error, ClosedError)
    assert point.polls == 0


def test_reprs_say_the_state_and_misuse_is_typed() -> None:
    point = CpuSyncPoint()
    assert repr(point) == "<CpuSyncPoint cpu: pending>"
    point.fail(RuntimeError("x"))
    assert repr(point) == "<CpuSyncPoint cpu: failed: RuntimeError('x')>"
    assert repr(SignaledSyncPoint()) == "<SignaledSyncPoint cpu: done>"
    assert "not polled" in repr(BlockingOnlyPoint())  # a dear poll is not made for a repr
    waiter = WaiterThread(name="alpha2-test-repr")
    assert repr(waiter) == "<WaiterThread 'alpha2-test-repr' not started>"
    ticket = waiter.submit(CpuSyncPoint(), 5.0, lambda r: None)
    assert repr(waiter) == "<WaiterThread 'alpha2-test-repr' running>"
    assert repr(ticket).startswith("<WaitTicket pending on <CpuSyncPoint cpu: pending>, ")
    waiter.stop()
    assert repr(waiter) == "<WaiterThread 'alpha2-test-repr' stopped>"
    with pytest.raises(InvalidInputError, match="backend must be a BackendKind or one of"):
        SignaledSyncPoint("x")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"points\[1\] is not a SyncPoint"):
        SyncWaiter().wait_all([SignaledSyncPoint(), "x"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match=r"points\[0\] is not a SyncPoint"):
        asyncio.run(SyncWaiter().wait_all_async(["x"]))  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="waited_s"):
        WaitResult(WaitStatus.SIGNALED, "x")  # type: ignore[arg-type]
