"""One accounting: surfaces, texture pools and other users under one MemoryBudget; pressure trims pools."""

from __future__ import annotations

import threading
import time

import pytest
from fake_webgpu import GPU_MODULE, INFO, FakeDevice, gray_frame

from alpha2.gpu.budget import BudgetCaps, MemoryBudget, PressureEvent, PressureKind
from alpha2.gpu.errors import BudgetExceededError, InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.handles import WgpuTexture
from alpha2.gpu.identity import BackendKind
from alpha2.gpu.surfaces import SurfaceBudget, SurfaceBudgetError, SurfaceBudgetPolicy, SurfaceIdentity
from alpha2.native_gpu.interop.cpu_upload import CpuUploadPairing, texture_set_bytes
from alpha2.native_gpu.interop.leases import (
    ImportedFrame,
    ImportedVulkanFrame,
    ImportLease,
    NativeSurfaceLease,
    SlotPool,
    TicketCounter,
    VulkanImportLease,
)

CPU, CUDA_, WGPU = BackendKind.CPU, BackendKind.CUDA, BackendKind.WGPU
IDENT = SurfaceIdentity(decoder_id=1, generation=0, width=64, height=48, pixel_format=PixelFormat.NV12)


# ---------------------------------------------------------------------------------------------------
# SurfaceBudget on a MemoryBudget


def test_own_memory_budget_counts_the_surfaces() -> None:
    surfaces = SurfaceBudget(max_bytes=1000)
    assert surfaces.memory_budget.caps(CPU).hard_bytes == 1000
    r = surfaces.reserve(600, IDENT)
    assert r.memory.size_bytes == 600 and not r.memory.released
    usage = surfaces.memory_budget.usage(CPU)
    assert (usage.reserved_bytes, usage.reservation_count) == (600, 1)
    r.release()
    assert r.memory.released and surfaces.memory_budget.usage(CPU).reserved_bytes == 0


def test_a_shared_memory_budget_is_one_cap_for_surfaces_and_others() -> None:
    shared = MemoryBudget({CUDA_: BudgetCaps(hard_bytes=1000)})
    surfaces = SurfaceBudget(memory_budget=shared, backend=CUDA_, policy=SurfaceBudgetPolicy.FAIL)
    other = shared.reserve(600, CUDA_, label="an encoder's buffers")
    first = surfaces.reserve(300, IDENT)
    assert shared.usage(CUDA_).reserved_bytes == 900
    with pytest.raises(SurfaceBudgetError, match="surface budget full"):
        surfaces.reserve(200, IDENT)  # 900 + 200 passes the one cap, though the surfaces hold only 300
    assert surfaces.usage().surfaces == 1 and shared.usage(CUDA_).reserved_bytes == 900
    with pytest.raises(BudgetExceededError):
        shared.reserve(101, CUDA_)  # and the other user sees the surfaces' bytes
    other.release()
    second = surfaces.reserve(200, IDENT)
    assert shared.usage(CUDA_).reserved_bytes == 500 and surfaces.usage().size_bytes == 500
    with pytest.raises(SurfaceBudgetError, match="can never fit"):
        surfaces.reserve(1001, IDENT)
    first.release()
    second.release()
    assert shared.usage(CUDA_).reserved_bytes == 0 and shared.usage(CUDA_).reservation_count == 0


def test_a_waiting_surface_gets_the_bytes_another_user_returns() -> None:
    shared = MemoryBudget({CPU: BudgetCaps(hard_bytes=1000)})
    surfaces = SurfaceBudget(memory_budget=shared, wait_timeout_s=0.1)
    other = shared.reserve(900, CPU)
    t0 = time.monotonic()
    with pytest.raises(SurfaceBudgetError, match="stayed full"):
        surfaces.reserve(200, IDENT)
    assert 0.08 <= time.monotonic() - t0 < 2.0
    assert surfaces.usage().surfaces == 0 and shared.usage(CPU).reserved_bytes == 900
    assert not surfaces.wait_for_room(200, timeout=0.05)
    threading.Timer(0.05, other.release).start()
    got = surfaces.reserve(200, IDENT, timeout=5.0)
    assert shared.usage(CPU).reserved_bytes == 200 and surfaces.wait_for_room(200, timeout=0)
    got.release()


def test_pressure_events_reach_the_surface_budget() -> None:
    shared = MemoryBudget({CPU: BudgetCaps(soft_bytes=500)})
    surfaces = SurfaceBudget(memory_budget=shared)
    r = surfaces.reserve(400, IDENT)
    assert surfaces.pressure_events == 0
    other = shared.reserve(200, CPU)  # crosses the soft cap
    assert surfaces.pressure_events == 1
    other.release()  # relieved
    assert surfaces.pressure_events == 2
    shared.reserve(1000, BackendKind.VULKAN).release()  # another backend's pressure is not this budget's
    assert surfaces.pressure_events == 2
    r.release()


def test_surface_budget_refuses_a_non_budget() -> None:
    with pytest.raises(InvalidInputError, match="MemoryBudget"):
        SurfaceBudget(memory_budget=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="backend"):
        SurfaceBudget(backend="quantum")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# SlotPool under pressure


def _pool(budget: MemoryBudget, destroyed: list[int], size: int = 100) -> SlotPool[int]:
    made = iter(range(1000))
    return SlotPool(
        lambda key: next(made),
        destroyed.append,
        per_key=4,
        memory_budget=budget,
        backend=WGPU,
        item_bytes=lambda key: size,
        what="test slots",
    )


def test_pool_items_count_against_the_budget() -> None:
    budget = MemoryBudget()
    destroyed: list[int] = []
    pool = _pool(budget, destroyed)
    a, _ = pool.take((1, 0), 1.0)
    b, _ = pool.take((1, 0), 1.0)
    assert budget.usage(WGPU).reserved_bytes == 200
    pool.give_back((1, 0), a)
    pool.give_back((1, 0), b, broken=True)
    assert destroyed == [b] and budget.usage(WGPU).reserved_bytes == 100
    pool.close()
    assert destroyed == [b, a] and budget.usage(WGPU).reserved_bytes == 0
    with pytest.raises(InvalidInputError, match="item_bytes"):
        SlotPool(lambda key: 0, destroyed.append, memory_budget=budget)


def test_a_pressure_event_trims_idle_pool_entries_only() -> None:
    budget = MemoryBudget({WGPU: BudgetCaps(soft_bytes=450)})
    destroyed: list[int] = []
    events: list[PressureEvent] = []
    budget.add_pressure_callback(events.append)
    pool = _pool(budget, destroyed)
    items = [pool.take((1, 0), 1.0)[0] for _ in range(3)]
    held, _ = pool.take((2, 0), 1.0)
    for item in items:
        pool.give_back((1, 0), item)
    assert pool.counts() == (4, 3) and budget.usage(WGPU).reserved_bytes == 400
    other = budget.reserve(150, WGPU, label="a renderer's target")  # 550 > 450: a pressure event
    assert [e.kind for e in events] == [PressureKind.SOFT_CAP_EXCEEDED, PressureKind.RELIEVED]
    # Asked for the 100 bytes of excess: one idle item (the least recently used) went, the held one stays.
    assert destroyed == [items[0]] and pool.trimmed == 1
    assert pool.counts() == (3, 2) and budget.usage(WGPU).reserved_bytes == 450
    pool.give_back((2, 0), held)
    other.release()
    pool.close()
    assert budget.usage(WGPU).reserved_bytes == 0


def test_hard_cap_takes_room_from_idle_entries_before_failing() -> None:
    budget = MemoryBudget({WGPU: BudgetCaps(hard_bytes=300)})
    destroyed: list[int] = []
    pool = _pool(budget, destroyed)
    a, _ = pool.take((1, 0), 1.0)
    b, _ = pool.take((1, 0), 1.0)
    pool.give_back((1, 0), a)
    big = budget.reserve(200, WGPU)  # 200 + 200 > 300: the idle item makes room
    assert destroyed == [a] and budget.usage(WGPU).reserved_bytes == 300
    with pytest.raises(BudgetExceededError):
        budget.reserve(100, WGPU)  # only the held item is left: nothing to trim
    assert destroyed == [a]
    pool.give_back((1, 0), b)
    big.release()
    pool.close()


def test_growing_at_a_full_budget_by_trimming_the_key_s_own_idle_item_is_no_growth() -> None:
    budget = MemoryBudget({WGPU: BudgetCaps(hard_bytes=200)})
    destroyed: list[int] = []
    pool = _pool(budget, destroyed)
    assert pool.grow((1, 0), limit=4) and pool.grow((1, 0), limit=4), "room for two"
    assert pool.counts() == (2, 2)
    # A third only fits by trimming one of the two idle ones: the key is no larger, and says so.
    assert not pool.grow((1, 0), limit=4)
    assert pool.counts() == (2, 2) and len(destroyed) == 1
    assert not pool.grow((1, 0), limit=2), "at the limit nothing is made"
    assert len(destroyed) == 1
    pool.close()


def test_trim_idle_without_a_budget_destroys_all_idle() -> None:
    destroyed: list[int] = []
    pool: SlotPool[int] = SlotPool(lambda key: len(destroyed) + 7, destroyed.append, per_key=2)
    item, _ = pool.take((1, 0), 1.0)
    pool.give_back((1, 0), item)
    assert pool.trim_idle() == 0 and destroyed == [item] and pool.counts() == (0, 0)


# ---------------------------------------------------------------------------------------------------
# the CPU-upload pairing's texture sets, and surfaces, under one cap


def _pairing(device: FakeDevice, budget: MemoryBudget) -> CpuUploadPairing:
    return CpuUploadPairing.create(
        device,
        INFO,
        gpu_module=GPU_MODULE,
        options={"slots": 2, "memory_budget": budget},
        wait_timeout=lambda: 1.0,
    )


def _lease(pairing: CpuUploadPairing, frame_kwargs: dict[str, int]) -> ImportLease:
    frame = gray_frame(**frame_kwargs)
    surface = NativeSurfaceLease(frame)
    ticket = pairing.acquire(frame, surface, None)
    return ImportLease(ticket.frame, ticket.release, surface, TicketCounter(), ticket_id=1)


def test_texture_sets_count_and_pressure_trims_the_idle_ones() -> None:
    device = FakeDevice()
    budget = MemoryBudget({WGPU: BudgetCaps(soft_bytes=16 * 16 + 8 * 8)})
    pairing = _pairing(device, budget)
    key_bytes = texture_set_bytes((1, 0, PixelFormat.GRAY, (("r8unorm", 16, 16),)))
    assert key_bytes == 256
    _lease(pairing, {}).release()  # decoder 1: a 16x16 set, now idle
    held = _lease(pairing, {"decoder_id": 2, "width": 8, "height": 8})
    assert budget.usage(WGPU).reserved_bytes == 256 + 64
    assert pairing.stats().pool_idle == 1 and len(device.live_textures()) == 2
    budget.reserve(100, WGPU).release()  # over the soft cap: the idle set goes, the leased one stays
    assert len(device.live_textures()) == 1 and device.live_textures()[0] is held.frame.textures[0]
    assert budget.usage(WGPU).reserved_bytes == 64 and pairing.stats().pool_idle == 0
    held.release()
    pairing.close()
    assert budget.usage(WGPU).reserved_bytes == 0 and not device.live_textures()


def test_a_surface_reservation_evicts_idle_pool_entries_of_the_same_budget() -> None:
    budget = MemoryBudget({CPU: BudgetCaps(hard_bytes=1000)})
    destroyed: list[int] = []
    pool: SlotPool[int] = SlotPool(
        lambda key: len(destroyed) + 1,
        destroyed.append,
        memory_budget=budget,
        backend=CPU,
        item_bytes=lambda key: 256,
        what="staging buffers",
    )
    surfaces = SurfaceBudget(memory_budget=budget, policy=SurfaceBudgetPolicy.FAIL)
    item, _ = pool.take((1, 0), 1.0)
    pool.give_back((1, 0), item)  # 256 idle bytes
    big = surfaces.reserve(700, IDENT)
    assert not destroyed
    more = surfaces.reserve(100, IDENT)  # 256 + 700 + 100 > 1000: the idle entry makes room
    assert destroyed == [item] and budget.usage(CPU).reserved_bytes == 800
    big.release()
    more.release()
    pool.close()


def test_lease_planes_are_gpu_resources() -> None:
    device = FakeDevice()
    pairing = _pairing(device, MemoryBudget())
    lease = _lease(pairing, {"width": 12, "height": 6})
    (plane,) = lease.frame.plane_resources
    assert isinstance(plane, WgpuTexture) and plane.as_raw() is lease.frame.textures[0]
    assert (plane.texture_format, plane.width, plane.height, plane.usage) == ("r8unorm", 12, 6, 7)
    assert plane.keep_alive is None
    (held,) = lease.plane_resources
    assert held.keep_alive is lease and held == plane
    assert isinstance(lease.frame, ImportedFrame)
    assert VulkanImportLease is ImportLease and ImportedVulkanFrame is ImportedFrame
    lease.release()
    with pytest.raises(Exception, match="released"):
        _ = lease.plane_resources
    pairing.close()
