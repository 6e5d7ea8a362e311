"""MemoryBudget: caps, exactly-once release, usage, pressure events, eviction, thread safety."""

from __future__ import annotations

import collections
import gc
import random
import sys
import threading
import time

import pytest

from alpha2.gpu.budget import (
    BudgetCaps,
    BudgetReservation,
    MemoryBudget,
    PressureEvent,
    PressureKind,
    _Ledger,
)
from alpha2.gpu.errors import BudgetExceededError, InvalidInputError, OutOfMemoryError
from alpha2.gpu.identity import BackendKind

VK = BackendKind.VULKAN
CUDA = BackendKind.CUDA


class YieldingLedger(_Ledger):
    """A ledger that gives the GIL away on every read, so that an unlocked check-then-update would race."""

    def __getattribute__(self, name: str) -> object:
        if name == "reserved":
            time.sleep(0)
        return super().__getattribute__(name)


class Pool:
    """An evictable pool: holds idle reservations, frees them when asked."""

    def __init__(self, budget: MemoryBudget, backend: BackendKind = VK) -> None:
        self.budget = budget
        self.backend = backend
        self.idle: list[BudgetReservation] = []
        self.lock = threading.Lock()
        self.asked: list[int] = []

    def fill(self, count: int, size_bytes: int) -> None:
        for _ in range(count):
            self.idle.append(self.budget.reserve(size_bytes, self.backend, label="pool"))

    def evict(self, wanted: int) -> int:
        self.asked.append(wanted)
        freed = 0
        while freed < wanted:
            with self.lock:
                if not self.idle:
                    break
                reservation = self.idle.pop()
            reservation.release()
            freed += reservation.size_bytes
        return freed


def test_caps_validation() -> None:
    assert BudgetCaps() == BudgetCaps(None, None)
    with pytest.raises(InvalidInputError):
        BudgetCaps(soft_bytes=10, hard_bytes=5)
    with pytest.raises(InvalidInputError):
        BudgetCaps(hard_bytes=-1)
    with pytest.raises(InvalidInputError):
        MemoryBudget().reserve(-1, VK)


def test_reserve_release_exactly_once_and_usage() -> None:
    budget = MemoryBudget({VK: BudgetCaps(hard_bytes=100)})
    a = budget.reserve(60, VK, label="frame")
    with budget.reserve(30, VK) as b:
        usage = budget.usage(VK)
        assert (usage.reserved_bytes, usage.peak_bytes, usage.reservation_count) == (90, 90, 2)
    assert b.released
    a.release()
    a.release()
    b.release()
    usage = budget.usage(VK)
    assert (usage.reserved_bytes, usage.peak_bytes, usage.reservation_count) == (0, 90, 0)
    assert budget.usage(CUDA).reserved_bytes == 0, "backends are counted apart"
    budget.reset_peak(VK)
    assert budget.usage(VK).peak_bytes == 0
    assert set(budget.usages()) == {VK}, "only backends with caps or reservations"


def test_garbage_collection_releases() -> None:
    budget = MemoryBudget()
    reservation = budget.reserve(1000, CUDA)
    assert budget.usage(CUDA).reserved_bytes == 1000
    del reservation
    gc.collect()
    assert budget.usage(CUDA).reserved_bytes == 0
    assert budget.usage(CUDA).reservation_count == 0


def test_hard_cap_refuses_without_eviction() -> None:
    budget = MemoryBudget(default_caps=BudgetCaps(hard_bytes=100))
    held = budget.reserve(80, VK)
    with pytest.raises(BudgetExceededError, match="hard cap of 100") as info:
        budget.reserve(30, VK, label="surface")
    assert isinstance(info.value, OutOfMemoryError) and isinstance(info.value, MemoryError)
    assert budget.try_reserve(30, VK) is None
    assert budget.usage(VK).reserved_bytes == 80
    assert budget.reserve(20, VK) is not None, "exactly at the cap is allowed"
    held.release()


def test_hard_cap_asks_evictable_pools_first() -> None:
    budget = MemoryBudget({VK: BudgetCaps(hard_bytes=100)})
    pool = Pool(budget)
    budget.register_evictable(pool.evict, VK)
    other = Pool(budget, CUDA)
    budget.register_evictable(other.evict, CUDA)
    pool.fill(4, 20)
    big = budget.reserve(50, VK)
    assert pool.asked == [30] and other.asked == []
    assert budget.usage(VK).reserved_bytes == 90 and len(pool.idle) == 2
    # a request larger than the cap cannot be helped by eviction: no pool is asked
    with pytest.raises(BudgetExceededError):
        budget.reserve(101, VK)
    assert pool.asked == [30]
    big.release()


def test_eviction_that_frees_nothing_fails() -> None:
    budget = MemoryBudget({VK: BudgetCaps(hard_bytes=10)})
    calls: list[int] = []

    def frees_nothing(wanted: int) -> int:
        calls.append(wanted)
        return 0

    registration = budget.register_evictable(frees_nothing)
    held = budget.reserve(10, VK)
    with pytest.raises(BudgetExceededError):
        budget.reserve(1, VK)
    assert calls == [1]
    registration.unregister()
    with pytest.raises(BudgetExceededError):
        budget.reserve(1, VK)
    assert calls == [1]
    held.release()


def test_pressure_events_on_soft_cap_crossings() -> None:
    budget = MemoryBudget({VK: BudgetCaps(soft_bytes=50, hard_bytes=100)})
    events: list[PressureEvent] = []
    remove = budget.add_pressure_callback(events.append)
    a = budget.reserve(40, VK)
    assert events == []
    b = budget.reserve(20, VK)
    c = budget.reserve(20, VK)  # still above: no second event
    assert [e.kind for e in events] == [PressureKind.SOFT_CAP_EXCEEDED]
    assert events[0].reserved_bytes == 60 and events[0].excess_bytes == 10 and events[0].backend is VK
    c.release()
    b.release()
    assert [e.kind for e in events] == [PressureKind.SOFT_CAP_EXCEEDED, PressureKind.RELIEVED]
    assert events[-1].reserved_bytes == 40
    with pytest.raises(BudgetExceededError):
        budget.reserve(61, VK)
    assert events[-1].kind is PressureKind.HARD_CAP_REACHED and events[-1].requested_bytes == 61
    remove()
    budget.reserve(20, VK).release()
    assert len(events) == 3
    a.release()


def test_soft_cap_crossing_asks_pools_to_shrink() -> None:
    budget = MemoryBudget({VK: BudgetCaps(soft_bytes=50)})
    pool = Pool(budget)
    budget.register_evictable(pool.evict)
    pool.fill(2, 20)
    frame = budget.reserve(30, VK)
    assert pool.asked == [20]
    assert budget.usage(VK).reserved_bytes == 50
    frame.release()


def test_callbacks_run_outside_the_lock_and_may_use_the_budget() -> None:
    budget = MemoryBudget({VK: BudgetCaps(soft_bytes=10)})
    seen: list[int] = []

    def reentrant(event: PressureEvent) -> None:
        # would deadlock (or fail) if called with the lock held by another thread or mid-update
        seen.append(budget.usage(event.backend).reserved_bytes)
        budget.reserve(1, CUDA).release()

    budget.add_pressure_callback(reentrant)
    done = threading.Event()

    def worker() -> None:
        budget.reserve(20, VK).release()
        done.set()

    threading.Thread(target=worker).start()
    assert done.wait(2.0)
    assert seen == [20, 0]


def test_callback_errors_do_not_break_reservations() -> None:
    budget = MemoryBudget({VK: BudgetCaps(soft_bytes=0)})

    def broken_callback(event: PressureEvent) -> None:
        raise RuntimeError("callback bug")

    def broken_pool(wanted: int) -> int:
        raise RuntimeError("pool bug")

    budget.add_pressure_callback(broken_callback)
    budget.register_evictable(broken_pool)
    with budget.reserve(5, VK):
        assert budget.usage(VK).reserved_bytes == 5
    assert budget.usage(VK).reserved_bytes == 0


def test_stress_many_threads_never_pass_the_hard_cap() -> None:
    hard = 10_000
    budget = MemoryBudget({VK: BudgetCaps(soft_bytes=6_000, hard_bytes=hard)})
    budget._ledgers = collections.defaultdict(YieldingLedger)
    pool = Pool(budget)
    budget.register_evictable(pool.evict, VK)
    observed_max = [0]
    observed_lock = threading.Lock()
    exceeded = [0]

    def observe(event: PressureEvent) -> None:
        with observed_lock:
            observed_max[0] = max(observed_max[0], event.reserved_bytes)

    budget.add_pressure_callback(observe)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        held: list[BudgetReservation] = []
        for _ in range(250):
            if held and rng.random() < 0.5:
                held.pop(rng.randrange(len(held))).release()
            else:
                try:
                    reservation = budget.reserve(rng.randrange(1, 1500), VK)
                except BudgetExceededError:
                    with observed_lock:
                        exceeded[0] += 1
                    continue
                if rng.random() < 0.1:
                    with pool.lock:
                        pool.idle.append(reservation)  # hand to the pool: evictable later
                else:
                    held.append(reservation)
            usage = budget.usage(VK).reserved_bytes
            with observed_lock:
                observed_max[0] = max(observed_max[0], usage)
        for reservation in held:
            reservation.release()

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the threads finely, so races would show
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert not any(thread.is_alive() for thread in threads)
    pool.evict(hard * 10)
    usage = budget.usage(VK)
    assert usage.reserved_bytes == 0 and usage.reservation_count == 0
    assert 0 < observed_max[0] <= hard and usage.peak_bytes <= hard
    assert usage.peak_bytes > 6_000, "the stress must actually press against the caps"
    assert exceeded[0] > 0 or pool.asked, "the hard cap must have been reached at least once"


def test_backends_are_kinds_or_their_values() -> None:
    budget = MemoryBudget({"cuda": BudgetCaps(hard_bytes=10)})  # type: ignore[dict-item]
    assert budget.caps(CUDA).hard_bytes == 10
    with budget.reserve(1, "vulkan") as held:  # type: ignore[arg-type]
        assert held.backend is VK
    for call in (
        lambda: budget.reserve(1, "gpu"),  # type: ignore[arg-type]
        lambda: budget.reserve(1, None),  # type: ignore[arg-type]
        lambda: budget.usage("nope"),  # type: ignore[arg-type]
        lambda: budget.set_caps("CUDA", BudgetCaps()),  # type: ignore[arg-type]
        lambda: MemoryBudget({"gpu": BudgetCaps()}),  # type: ignore[dict-item]
    ):
        with pytest.raises(InvalidInputError, match="'cpu', 'vulkan', 'cuda'"):
            call()


def test_default_caps_and_callbacks_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="default_caps must be BudgetCaps"):
        MemoryBudget(default_caps=100)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="caps\\['cpu'\\] must be BudgetCaps"):
        MemoryBudget({BackendKind.CPU: 100})  # type: ignore[dict-item]
    with pytest.raises(InvalidInputError, match="callable"):
        MemoryBudget().add_pressure_callback(5)  # type: ignore[arg-type]


def test_reprs_say_usage_and_caps() -> None:
    budget = MemoryBudget({VK: BudgetCaps(soft_bytes=100, hard_bytes=200)})
    held = budget.reserve(150, VK)
    text = repr(budget)
    assert "vulkan: 150 bytes in 1 reservations (soft cap 100, hard cap 200)" in text, text
    assert "other backends no caps" in text

    def pool(wanted: int) -> int:
        return 0

    registration = budget.register_evictable(pool, CUDA)
    assert repr(registration).endswith("<locals>.pool, cuda, registered)")
    registration.unregister()
    assert repr(registration).endswith("unregistered)")
    held.release()
