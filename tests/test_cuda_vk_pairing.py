"""The GPU copy's ring, slot and fence logic and copy completions, with fakes: no GPU, runs in CI.

The fakes stand in for the CUDA driver objects (``_cuda.interop``: context, copy stream, events,
external images and semaphores, the plane copy), the Vulkan exports (``_vk.export``) and Dawn's shared
texture memory and fences (``wgpudawn``'s extras), and record what was called, in order. The real
:class:`CudaVkPairing`, :class:`Ring` and :class:`CopyCompletions` run over them; the same code on the
H200 is covered by ``tests/test_importer.py::test_nvdec_gpu_copy_into_dawn_is_bit_exact``.
"""

from __future__ import annotations

import gc
import os
import pickle
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from alpha2.gpu.budget import BudgetCaps, MemoryBudget
from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.errors import BudgetExceededError, GpuTimeoutError, InternalError, InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import FrameMetadata, Size
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet, CudaPtr2D, OwnedFd
from alpha2.gpu.identity import BackendKind
from alpha2.gpu.surfaces import SurfaceIdentity
from alpha2.gpu.sync import WaiterThread
from alpha2.gpu.webgpu import (
    FEATURE_SHARED_FENCE_OPAQUE_FD,
    FEATURE_SHARED_TEXTURE_OPAQUE_FD,
    WebGpuDeviceInfo,
    WebGpuImplementation,
)
from alpha2.native_gpu._cuda import interop, streams
from alpha2.native_gpu._vk import export
from alpha2.native_gpu.device.shared import QueueRole
from alpha2.native_gpu.interop import cuda_vk, dawn_planes, handoff
from alpha2.native_gpu.interop.cpu_upload import frame_geometry
from alpha2.native_gpu.interop.cuda import CopyCompletions, CudaEventSyncPoint, order_after_last_access
from alpha2.native_gpu.interop.cuda_vk import CudaVkPairing
from alpha2.native_gpu.interop.leases import NativeSurfaceLease
from alpha2.native_gpu.interop.ring import Ring, RingKey, RingPlane, RingSlot, ring_slot_bytes, wait_sync_fds

NV12 = PixelFormat.NV12

# ---------------------------------------------------------------------------------------------------
# fakes


class FakeEvent:
    """A CUDA event: recorded on a stream; done once the fake GPU 'runs' it (``complete``)."""

    def __init__(self, cuda: FakeCuda, name: str) -> None:
        self.cuda = cuda
        self.name = name
        self.done = threading.Event()
        self.done.set()  # never recorded: nothing to wait for
        self.records = 0
        self.queries = 0
        self.wait_threads: list[str] = []
        self.closed = 0
        self.fail_wait: BaseException | None = None

    def record(self, stream: object) -> None:
        self.cuda.log.append(("record", self.name))
        self.records += 1
        if self.cuda.auto_complete:
            self.done.set()
        else:
            self.done.clear()

    def query(self) -> bool:
        self.queries += 1
        return self.done.is_set()

    def wait(self, timeout_s: float, what: str = "CUDA work") -> None:
        self.wait_threads.append(threading.current_thread().name)
        if self.fail_wait is not None:
            raise self.fail_wait
        if not self.done.wait(timeout_s):
            raise GpuTimeoutError(f"{what} did not finish within {timeout_s} s")

    def complete(self) -> None:
        self.done.set()

    def close(self) -> None:
        self.closed += 1


class FakeCuSemaphore:
    """A Vulkan semaphore imported into CUDA: a plane's copy-done semaphore, or a Dawn release fence."""

    def __init__(self, cuda: FakeCuda, name: str) -> None:
        self.cuda = cuda
        self.name = name
        self.waits = 0
        self.signals = 0
        self.closed = 0

    def wait(self, stream: object, value: int = 0) -> None:
        self.cuda.log.append(("wait", self.name))
        self.waits += 1

    def signal(self, stream: object, value: int = 0) -> None:
        self.cuda.log.append(("signal", self.name))
        self.signals += 1

    def close(self) -> None:
        self.closed += 1


class FakeClosable:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class FakeStream:
    handle = "copy-stream"

    def __init__(self, cuda: FakeCuda) -> None:
        self.cuda = cuda
        self.closed = 0

    def order_after(self, producer: int | None) -> None:
        self.cuda.log.append(("order_after", producer))

    def wait_for(self, event: FakeEvent) -> None:
        self.cuda.log.append(("wait_for", event.name))

    def close(self) -> None:
        self.closed += 1


class FakeCuda:
    """What CudaVkPairing takes from ``_cuda.interop``, recording the calls in ``log``."""

    def __init__(self, log: list[tuple[str, Any]]) -> None:
        self.log = log
        self.auto_complete = True
        self.ctx = SimpleNamespace(__enter__=None)
        self.events: list[FakeEvent] = []
        self.plane_semaphores: list[FakeCuSemaphore] = []
        self.release_fences: list[FakeCuSemaphore] = []
        self.images: list[FakeClosable] = []
        self.plane_semaphore_fds: set[int] = set()
        self.streams: list[FakeStream] = []
        self.fail_copy: BaseException | None = None

    def primary_context(self, ordinal: int) -> FakeContext:
        return FakeContext()

    def CopyStream(self, ctx: object) -> FakeStream:
        stream = FakeStream(self)
        self.streams.append(stream)
        return stream

    def CudaEvent(self, ctx: object) -> FakeEvent:
        event = FakeEvent(self, f"event{len(self.events)}")
        self.events.append(event)
        return event

    def ExternalImage(self, ctx: object, fd: OwnedFd, **kwargs: Any) -> FakeClosable:
        fd.close()  # CUDA takes the fd
        image = FakeClosable(f"cu_image{len(self.images)}")
        self.images.append(image)
        return image

    def ExternalSemaphore(self, ctx: object, fd: OwnedFd, *, timeline: bool) -> FakeCuSemaphore:
        raw = fd.fileno()
        fd.close()
        if raw in self.plane_semaphore_fds:  # a ring plane's semaphore
            self.plane_semaphore_fds.discard(raw)
            semaphore = FakeCuSemaphore(self, f"plane_sem{len(self.plane_semaphores)}")
            self.plane_semaphores.append(semaphore)
        else:  # Dawn's end-of-access fence
            semaphore = FakeCuSemaphore(self, f"release_fence{len(self.release_fences)}")
            self.release_fences.append(semaphore)
        return semaphore

    def copy_plane_to_array(self, ctx: object, src: CudaPtr2D, dst: FakeClosable, stream: object) -> None:
        if self.fail_copy is not None:
            raise self.fail_copy
        self.log.append(("copy", dst.name))


class FakeContext:
    """A CUDA primary context: ``with ctx`` pushes it."""

    def __enter__(self) -> FakeContext:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class FakeVkImage(FakeClosable):
    size_bytes = 4096
    create_info_address = 0x1234
    memory_type_index = 0
    layout = export.VK_IMAGE_LAYOUT_GENERAL

    def export_memory_fd(self) -> OwnedFd:
        return OwnedFd(os.open(os.devnull, os.O_RDONLY))


class FakeVkSemaphore(FakeClosable):
    def __init__(self, name: str, cuda: FakeCuda) -> None:
        super().__init__(name)
        self.cuda = cuda

    def export_fd(self) -> OwnedFd:
        fd = OwnedFd(os.open(os.devnull, os.O_RDONLY))
        self.cuda.plane_semaphore_fds.add(fd.fileno())
        return fd


class FakeDawnFence:
    """A fence Dawn's end_access hands back: an opaque-fd semaphore, or a sync fd (a pipe here)."""

    def __init__(self, kind: str, fd: int) -> None:
        self.kind = kind
        self.fd = fd

    def export(self) -> dict[str, Any]:
        return {"type": self.kind, "fd": self.fd}


class FakeMemory:
    """Dawn's SharedTextureMemory of one plane image."""

    def __init__(self, dawn: FakeDawn, label: str) -> None:
        self.dawn = dawn
        self.label = label

    def create_texture(self, label: str) -> Any:
        return SimpleNamespace(label=label, create_view=lambda label: SimpleNamespace(label=label))

    def begin_access(self, texture: Any, **kwargs: Any) -> None:
        self.dawn.log.append(("begin_access", self.label))
        self.dawn.begin_fences.append(len(kwargs.get("fences", ())))
        if self.label in self.dawn.fail_begin:
            raise RuntimeError("begin_access failed")

    def end_access(self, texture: Any) -> Any:
        self.dawn.log.append(("end_access", self.label))
        if self.label in self.dawn.fail_end:
            raise RuntimeError("end_access failed")
        return SimpleNamespace(vk_image_layout=(1, 1), fences=[self.dawn.end_fence()])


class FakeDawn:
    """``wgpudawn.backends.dawn.extras``: shared texture memory and shared fences."""

    def __init__(self, log: list[tuple[str, Any]]) -> None:
        self.log = log
        self.fail_begin: set[str] = set()
        self.fail_end: set[str] = set()
        self.begin_fences: list[int] = []  # fences each begin_access waited on
        self.fence_kind = "vk-semaphore-opaque-fd"
        self.sync_fd_signalled = True
        self._fds: list[int] = []
        self.memories = 0

    def import_shared_texture_memory(
        self, device: object, *, label: str, opaque_fd: dict[str, Any]
    ) -> FakeMemory:
        os.fstat(opaque_fd["fd"])  # an open fd, as Dawn needs
        self.memories += 1
        return FakeMemory(self, label)

    def import_shared_fence(self, device: object, *, label: str, vk_semaphore_opaque_fd: int) -> Any:
        return SimpleNamespace(label=label)

    def end_fence(self) -> FakeDawnFence:
        if self.fence_kind == "sync-fd":
            read, write = os.pipe()
            if self.sync_fd_signalled:
                os.write(write, b"x")
            self._fds += [read, write]
            return FakeDawnFence("sync-fd", read)
        fd = os.open(os.devnull, os.O_RDONLY)
        self._fds.append(fd)
        return FakeDawnFence(self.fence_kind, fd)

    def close(self) -> None:
        self.close_fences()

    def close_fences(self) -> None:
        """Close the fds of the fences handed out so far (Dawn owns its fences' fds: alpha2 dups them)."""
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)


class FakeVulkan:
    """The SharedVulkanContext (and its ``_internal`` state) the pairing is given."""

    def __init__(self) -> None:
        self.deferred: list[Callable[[], None]] = []
        self._internal = self
        self.queue_families = {QueueRole.GRAPHICS: 0}
        self.closed = 0

    def defer_destroy(self, destroy: Callable[[], None]) -> None:
        self.deferred.append(destroy)

    def close(self) -> None:
        self.closed += 1


class FakeDawnDevice:
    """The Dawn device the pairing is given (the fakes of ``wgpudawn``'s extras do the work)."""


class Rig:
    """A CudaVkPairing over fakes, and the fakes."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        slots: int,
        memory_budget: MemoryBudget | None = None,
    ) -> None:
        self.log: list[tuple[str, Any]] = []
        self.device = FakeDawnDevice()
        self.cuda = FakeCuda(self.log)
        self.dawn = FakeDawn(self.log)
        self.vulkan = FakeVulkan()
        self.timeout_s = 2.0
        self.vk_images: list[FakeVkImage] = []
        self.vk_semaphores: list[FakeVkSemaphore] = []
        for name in (
            "primary_context",
            "CopyStream",
            "CudaEvent",
            "ExternalImage",
            "ExternalSemaphore",
            "copy_plane_to_array",
        ):
            monkeypatch.setattr(interop, name, getattr(self.cuda, name))
        monkeypatch.setattr(export, "ExportableImage", self._vk_image)
        monkeypatch.setattr(export, "ExportableSemaphore", self._vk_semaphore)
        monkeypatch.setattr(export, "transition_for_external", self._transition)
        monkeypatch.setattr(dawn_planes, "dawn_extras", lambda: self.dawn)
        info = WebGpuDeviceInfo(
            WebGpuImplementation.DAWN,
            frozenset({FEATURE_SHARED_TEXTURE_OPAQUE_FD, FEATURE_SHARED_FENCE_OPAQUE_FD}),
        )
        self.pairing = CudaVkPairing(
            self.device,
            info,
            context=self.vulkan,  # type: ignore[arg-type]
            owns_context=False,
            cuda_ordinal=0,
            slots=slots,
            wait_timeout=lambda: self.timeout_s,
            memory_budget=memory_budget,
        )

    def _vk_image(self, vk: object, width: int, height: int, vk_format: int) -> FakeVkImage:
        image = FakeVkImage(f"vk_image{len(self.vk_images)}")
        self.vk_images.append(image)
        return image

    def _vk_semaphore(self, vk: object, *, timeline: bool) -> FakeVkSemaphore:
        semaphore = FakeVkSemaphore(f"vk_semaphore{len(self.vk_semaphores)}", self.cuda)
        self.vk_semaphores.append(semaphore)
        return semaphore

    def _transition(self, vk: object, images: list[FakeVkImage], family: int, timeout_s: float) -> None:
        self.log.append(("transition", len(images)))

    def calls(self, *kinds: str) -> list[tuple[str, Any]]:
        return [entry for entry in self.log if entry[0] in kinds]


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    made = Rig(monkeypatch, slots=1)
    yield made
    made.pairing.close()
    made.dawn.close()


def cuda_frame(
    decoder_id: int = 1,
    generation: int = 0,
    width: int = 64,
    height: int = 36,
    ahead: Any = None,
    keep_alive: Any = None,
) -> DecodedFrame:
    """An NV12 frame 'decoded by NVDEC': two pitched CUDA planes on device 0, decode work on stream 0."""
    identity = SurfaceIdentity(decoder_id, generation, width, height, NV12)
    size = Size(width, height)
    metadata = FrameMetadata(
        pts=0, time_base=None, duration=None, key_frame=True, coded_size=size, display_size=size
    )
    planes = (
        CudaPtr2D(device_ptr=0x10000, pitch_bytes=256, width_bytes=width, height=height),
        CudaPtr2D(device_ptr=0x90000, pitch_bytes=256, width_bytes=width, height=height // 2),
    )
    return DecodedFrame(
        planes,
        NV12,
        ColourInfo().resolved(NV12, width, height),
        metadata,
        identity,
        cuda_stream=0,
        keep_alive=keep_alive,
        ahead=ahead,
    )


def wait_until(condition: Callable[[], bool], timeout_s: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)
    return True


def key_of(decoder_id: int = 1, generation: int = 0, width: int = 64, height: int = 36) -> RingKey:
    identity = SurfaceIdentity(decoder_id, generation, width, height, NV12)
    return RingKey.of(identity, NV12, frame_geometry(NV12, width, height))


# ---------------------------------------------------------------------------------------------------
# the ring key


def test_ring_keys_are_equal_by_value() -> None:
    a, b = key_of(), key_of()
    assert a is b, "RingKey.of gives the same key for the same frames: dicts find it by identity"
    made = RingKey(a.decoder_id, a.generation, a.pixel_format, frame_geometry(NV12, 64, 36))
    assert made == a and hash(made) == hash(a) and made is not a, "equal by value, and hashed alike"
    assert frame_geometry(NV12, 64, 36) is a.geometry and hash(a.geometry[0]) == hash(made.geometry[0])
    # The cached hash is not pickled (another process hashes strings differently): each is made anew.
    assert b"_hash" not in pickle.dumps(a)
    again = pickle.loads(pickle.dumps(a))
    assert again == a and hash(again) == hash(a) and again.geometry == a.geometry
    assert a.pool_key == (1, 0, a)
    assert [g.width for g in a.geometry] == [64, 32] and [g.height for g in a.geometry] == [36, 18]
    assert key_of(generation=1) != a
    assert key_of(decoder_id=2) != a
    assert key_of(width=66) != a
    assert len({a, b, key_of(generation=1), key_of(width=66)}) == 3
    with pytest.raises(InvalidInputError, match="generation"):
        RingKey(1, -1, NV12, a.geometry)
    with pytest.raises(InvalidInputError, match="plane"):
        RingKey(1, 0, NV12, ())


# ---------------------------------------------------------------------------------------------------
# the ring: reuse, retirement, bounds


class RingHooks:
    """The four callables a Ring is given, recording what the ring asked for."""

    def __init__(self, textures_per_slot: int = 2) -> None:
        self.textures_per_slot = textures_per_slot
        self.made: list[RingSlot] = []
        self.destroyed: list[RingSlot] = []
        self.ordered: list[RingSlot] = []
        self.busy: set[int] = set()  # ids of slots whose CUDA work is still running
        self.fail_create = False

    def create(self, key: RingKey) -> RingSlot:
        slot = RingSlot.for_key(key)
        for plane in slot.planes[: self.textures_per_slot]:
            plane.texture = object()
        if self.fail_create:
            raise InternalError("half-made")
        self.made.append(slot)
        return slot

    def work_done(self, slot: RingSlot) -> bool:
        return id(slot) not in self.busy

    def order_after_last_access(self, slot: RingSlot) -> None:
        self.ordered.append(slot)
        for plane in slot.planes:
            slot.waited += plane.release_fence_fds  # type: ignore[arg-type]
            plane.release_fence_fds = []

    def destroy(self, slot: RingSlot) -> None:
        assert slot not in self.destroyed, "destroyed once"
        self.destroyed.append(slot)

    def ring(
        self, per_key: int = 2, max_idle_keys: int = 8, memory_budget: MemoryBudget | None = None
    ) -> Ring:
        return Ring(
            create=self.create,
            work_done=self.work_done,
            order_after_last_access=self.order_after_last_access,
            destroy=self.destroy,
            per_key=per_key,
            max_idle_keys=max_idle_keys,
            memory_budget=memory_budget,
        )


def test_ring_reuses_a_key_s_idle_slots_up_to_per_key() -> None:
    hooks = RingHooks()
    ring = hooks.ring(per_key=2)
    key = key_of()
    first, reused = ring.take(key, 1.0)
    assert not reused and first.key == key and len(first.planes) == 2
    ring.give_back(first)
    again, reused = ring.take(key_of(), 1.0)  # an equal key, not the same object
    assert reused and again is first
    second, reused = ring.take(key, 1.0)
    assert not reused and second is not first
    start = time.monotonic()
    with pytest.raises(GpuTimeoutError, match="2 GPU-copy ring slots"):
        ring.take(key, 0.02)
    assert time.monotonic() - start >= 0.02
    assert (ring.allocations, ring.reuses, ring.counts(), ring.live_textures) == (2, 1, (2, 0), 4)
    ring.give_back(first)
    ring.give_back(second)
    assert ring.counts() == (2, 2) and hooks.destroyed == []


def test_ring_slots_count_against_the_memory_budget_as_vulkan_memory() -> None:
    budget = MemoryBudget()
    hooks = RingHooks()
    ring = hooks.ring(per_key=2, memory_budget=budget)
    key = key_of(width=64, height=36)  # NV12: 64 x 36 luma + 32 x 18 CbCr pairs
    assert ring_slot_bytes(key.pool_key) == 64 * 36 + 64 * 18
    first, _ = ring.take(key, 1.0)
    second, _ = ring.take(key, 1.0)
    assert budget.usage(BackendKind.VULKAN).reserved_bytes == 2 * (64 * 36 + 64 * 18)
    assert budget.usage(BackendKind.WGPU).reserved_bytes == 0
    ring.give_back(first, broken=True)  # retired and destroyed: its bytes go back
    assert hooks.destroyed == [first]
    assert budget.usage(BackendKind.VULKAN).reserved_bytes == 64 * 36 + 64 * 18
    ring.give_back(second)
    ring.close()
    assert budget.usage(BackendKind.VULKAN).reserved_bytes == 0


def test_a_full_budget_refuses_a_new_slot_and_counts_nothing() -> None:
    size = 64 * 36 + 64 * 18
    budget = MemoryBudget(caps={BackendKind.VULKAN: BudgetCaps(hard_bytes=size)})
    hooks = RingHooks()
    ring = hooks.ring(per_key=2, memory_budget=budget)
    held, _ = ring.take(key_of(), 1.0)
    with pytest.raises(BudgetExceededError):
        ring.take(key_of(), 1.0)
    assert len(hooks.made) == 1 and budget.usage(BackendKind.VULKAN).reserved_bytes == size
    ring.give_back(held)
    ring.close()


def test_a_broken_slot_is_retired_not_reused() -> None:
    hooks = RingHooks()
    ring = hooks.ring()
    key = key_of()
    slot, _ = ring.take(key, 1.0)
    ring.give_back(slot, broken=True)
    assert hooks.destroyed == [slot], "its CUDA work is done: destroyed at once"
    fresh, reused = ring.take(key, 1.0)
    assert not reused and fresh is not slot
    assert (ring.allocations, ring.reuses, ring.drained, ring.live_textures) == (2, 0, 1, 2)


def test_a_retired_slot_waits_for_its_cuda_work() -> None:
    hooks = RingHooks()
    ring = hooks.ring()
    slot, _ = ring.take(key_of(), 1.0)
    hooks.busy.add(id(slot))
    ring.give_back(slot, broken=True)
    assert hooks.destroyed == [] and ring.has_retired()
    ring.poll()
    assert hooks.destroyed == [] and ring.has_retired()
    hooks.busy.clear()
    ring.poll()
    ring.poll()
    assert hooks.destroyed == [slot] and not ring.has_retired()
    assert ring.live_textures == 0 and ring.counts() == (0, 0)


def test_retiring_a_slot_with_dawn_fences_pending_orders_it_after_them() -> None:
    hooks = RingHooks()
    ring = hooks.ring()
    slot, _ = ring.take(key_of(), 1.0)
    fence = FakeClosable("release_fence")
    slot.planes[0].release_fence_fds.append(fence)  # type: ignore[arg-type]
    ring.give_back(slot, broken=True)
    assert hooks.ordered == [slot], "CUDA waits on Dawn's fences before the slot is destroyed"
    assert slot.waited == [fence] and not slot.planes_have_pending_fences()
    assert hooks.destroyed == [] and ring.has_retired(), "destroyed only once the ordered work is seen done"
    ring.poll()
    assert hooks.destroyed == [slot]


def test_idle_streams_beyond_the_bound_are_retired() -> None:
    hooks = RingHooks()
    ring = hooks.ring(per_key=1, max_idle_keys=2)
    slots = {}
    for decoder_id in (1, 2, 3):
        slots[decoder_id], _ = ring.take(key_of(decoder_id), 1.0)
        ring.give_back(slots[decoder_id])
    assert hooks.destroyed == [slots[1]], "the least recently used stream's slot goes"
    assert ring.counts() == (2, 2)
    _, reused = ring.take(key_of(2), 1.0)
    assert reused
    again, reused = ring.take(key_of(1), 1.0)
    assert not reused and again is not slots[1] and ring.allocations == 4


def test_a_newer_generation_retires_the_older_one_s_slots() -> None:
    hooks = RingHooks()
    ring = hooks.ring(per_key=2)
    idle, _ = ring.take(key_of(generation=0), 1.0)
    out, _ = ring.take(key_of(generation=0), 1.0)
    ring.give_back(idle)
    newer, _ = ring.take(key_of(generation=1), 1.0)
    assert hooks.destroyed == [idle]
    ring.give_back(out)
    assert hooks.destroyed == [idle, out], "an out-standing slot of the old generation goes as it returns"
    # A frame of generation 0 still held, used now: a slot of its own, never reused, and no wait for
    # the per_key slots (both of generation 0's came back already; more may be held by the user).
    late = [ring.take(key_of(generation=0), 1.0) for _ in range(3)]
    assert all(not reused for _, reused in late)
    for slot, _ in late:
        ring.give_back(slot)
    assert hooks.destroyed == [idle, out] + [slot for slot, _ in late]
    ring.give_back(newer)
    ring.close()
    assert hooks.destroyed == [idle, out] + [slot for slot, _ in late] + [newer]
    assert ring.live_textures == 0
    with pytest.raises(InvalidInputError, match="closed"):
        ring.take(key_of(generation=1), 1.0)


def test_a_slot_that_fails_to_be_made_is_not_counted() -> None:
    hooks = RingHooks()
    ring = hooks.ring()
    hooks.fail_create = True
    with pytest.raises(InternalError):
        ring.take(key_of(), 1.0)
    assert (ring.allocations, ring.live_textures, ring.counts()) == (0, 0, (0, 0))
    hooks.fail_create = False
    ring.take(key_of(), 1.0)
    assert (ring.allocations, ring.live_textures) == (1, 2)


def test_destroy_objects_closes_each_once_and_ends_open_accesses() -> None:
    slot = RingSlot.for_key(key_of())
    objects: list[FakeClosable] = []
    ended: list[int] = []
    for index, plane in enumerate(slot.planes):
        plane.vk_image, plane.semaphore, plane.cu_image, plane.cu_semaphore = (  # type: ignore[assignment]
            FakeClosable(f"{name}{index}") for name in ("vk_image", "semaphore", "cu_image", "cu_semaphore")
        )
        objects += [plane.vk_image, plane.semaphore, plane.cu_image, plane.cu_semaphore]  # type: ignore[list-item]
        plane.texture = plane.memory = object()
        plane.release_fence_fds.append(FakeClosable(f"fence{index}"))  # type: ignore[arg-type]
        objects += plane.release_fence_fds  # type: ignore[arg-type]
    slot.planes[1].accessing = True
    slot.waited.append(FakeClosable("waited"))  # type: ignore[arg-type]
    objects += slot.waited  # type: ignore[arg-type]
    slot.copy_done = FakeClosable("copy_done")  # type: ignore[assignment]
    objects.append(slot.copy_done)  # type: ignore[arg-type]

    def end_access(plane: Any) -> None:
        ended.append(slot.planes.index(plane))
        raise RuntimeError("the device is lost")  # does not stop the rest

    slot.destroy_objects(end_access)
    assert ended == [1]
    assert [o.closed for o in objects] == [1] * len(objects)
    assert slot.copy_done is None and slot.waited == [] and slot.texture_count() == 0
    assert all(p.vk_image is None and p.cu_semaphore is None and not p.release_fence_fds for p in slot.planes)


def test_sync_fds_are_waited_on_the_cpu_and_closed() -> None:
    slot = RingSlot.for_key(key_of())
    read, write = os.pipe()
    os.write(write, b"x")  # signalled
    slot.planes[0].release_sync_fds.append(OwnedFd(read))
    wait_sync_fds(slot, 1.0)
    assert slot.planes[0].release_sync_fds == []
    with pytest.raises(OSError):
        os.fstat(read)  # closed
    os.close(write)

    read, write = os.pipe()  # never signalled
    fd = OwnedFd(read)
    slot.planes[1].release_sync_fds.append(fd)
    start = time.monotonic()
    with pytest.raises(GpuTimeoutError, match="sync fd"):
        wait_sync_fds(slot, 0.03)
    assert time.monotonic() - start >= 0.02
    assert fd.closed and slot.planes[1].release_sync_fds == [] and not slot.planes_have_pending_fences()
    os.close(write)


# ---------------------------------------------------------------------------------------------------
# copy completions: surfaces let go in order, once each copy's sync point signals


class FakeSurface:
    def __init__(self, name: str, released: list[str]) -> None:
        self.name = name
        self._released = released

    def release(self) -> None:
        self._released.append(self.name)


class Completions:
    """CopyCompletions on a WaiterThread of its own, with fake events."""

    def __init__(self, timeout_s: float = 2.0) -> None:
        self.cuda = FakeCuda([])
        self.cuda.auto_complete = False
        self.waiter = WaiterThread(name="alpha2-test-copy-done")
        self.timeout_s = timeout_s
        self.made = 0
        self.released: list[str] = []
        self.completions = CopyCompletions(
            FakeContext(),  # type: ignore[arg-type]
            lambda: self.timeout_s,
            waiter=self.waiter,
            new_event=self._event,
        )

    def _event(self) -> Any:
        self.made += 1
        return self.cuda.CudaEvent(None)

    def copy(self, name: str, waited: list[Any] | None = None) -> FakeEvent:
        event: Any = self.completions.event()
        event.record("copy-stream")
        self.completions.add(event, FakeSurface(name, self.released), waited or [])  # type: ignore[arg-type]
        return event  # type: ignore[no-any-return]


def test_surfaces_are_released_in_order_once_each_copy_signals() -> None:
    c = Completions()
    events = [c.copy(name) for name in ("f0", "f1", "f2")]
    assert c.completions.held() == 3
    events[2].complete()  # later copies seen done first ...
    events[1].complete()
    time.sleep(0.05)
    assert c.released == [] and c.completions.held() == 3, "nothing before the oldest"
    events[0].complete()
    assert wait_until(lambda: len(c.released) == 3)
    assert c.released == ["f0", "f1", "f2"] and c.completions.held() == 0
    assert [e.queries for e in events] == [0, 0, 0], "the waiter blocks on the events, never asks"
    assert all(e.wait_threads and set(e.wait_threads) == {"alpha2-test-copy-done"} for e in events)
    reused = {id(c.completions.event()) for _ in range(3)}
    assert reused == {id(e) for e in events} and c.made == 3, "events are reused"
    c.waiter.stop()


def test_the_fences_a_copy_waited_on_are_closed_once_it_is_done() -> None:
    c = Completions()
    fences = [FakeClosable("release_fence0"), FakeClosable("release_fence1")]
    event = c.copy("f0", waited=fences)
    time.sleep(0.02)
    assert [f.closed for f in fences] == [0, 0], "the copy may still be waiting on them"
    event.complete()
    assert wait_until(lambda: c.released == ["f0"])
    assert [f.closed for f in fences] == [1, 1]
    c.waiter.stop()


def test_a_copy_that_outlasts_the_timeout_keeps_its_surface_and_is_waited_again() -> None:
    c = Completions(timeout_s=0.02)
    event = c.copy("slow")
    later = c.copy("after")
    later.complete()
    assert wait_until(lambda: len(event.wait_threads) >= 3)
    assert c.released == [] and c.completions.held() == 2, "a timed-out copy may still read its frame"
    event.complete()
    assert wait_until(lambda: len(c.released) == 2)
    assert c.released == ["slow", "after"] and event.queries == 0
    c.waiter.stop()


def test_a_failed_copy_lets_its_surface_go_and_the_next_is_waited() -> None:
    c = Completions()
    failed = c.copy("f0")
    failed.fail_wait = InternalError("CUDA_ERROR_LAUNCH_FAILED")  # the context failed: nothing reads it
    after = c.copy("f1")
    after.complete()
    assert wait_until(lambda: len(c.released) == 2)
    assert c.released == ["f0", "f1"]
    c.waiter.stop()


def test_close_waits_for_pending_copies_and_destroys_free_events() -> None:
    c = Completions()
    first = c.copy("f0")
    first.complete()
    assert wait_until(lambda: c.released == ["f0"])  # its event is free again
    pending = c.copy("f1")
    assert pending is first, "the free event is reused"
    threading.Timer(0.03, pending.complete).start()
    start = time.monotonic()
    assert c.completions.close(2.0) is True
    assert time.monotonic() - start < 1.5
    assert wait_until(lambda: first.closed == 1), "recycled after close: destroyed"
    assert c.released == ["f0", "f1"]
    c.waiter.stop()


def test_close_is_bounded_and_a_running_copy_keeps_its_surface() -> None:
    c = Completions(timeout_s=0.05)
    spare: Any = c.completions.event()
    c.completions.recycle(spare)
    stuck = c.copy("stuck")
    spare2: Any = c.completions.event()
    c.completions.recycle(spare2)
    start = time.monotonic()
    assert c.completions.close(0.05) is False
    assert time.monotonic() - start < 0.5
    assert spare2.closed == 1, "free events are destroyed at close"
    time.sleep(0.15)  # the wait timed out after close began: given up
    stuck.complete()
    time.sleep(0.05)
    assert c.released == [] and c.completions.held() == 1 and stuck.closed == 0
    c.waiter.stop()


def test_a_stopped_waiter_leaves_the_surfaces_held() -> None:
    c = Completions(timeout_s=0.05)  # a blocking wait under way ends at its timeout, then the stop is seen
    first = c.copy("f0")
    c.copy("f1")
    # A blocking wait is under way (each ends at its 0.05 s timeout and starts again: a count of exactly
    # one is there for 50 ms only, which a loaded machine's polling missed).
    assert wait_until(lambda: len(first.wait_threads) >= 1)
    c.waiter.stop(timeout=2.0)
    assert not c.waiter.running
    start = time.monotonic()
    assert c.completions.close(2.0) is False
    assert time.monotonic() - start < 0.5, "nothing more will be waited: close does not wait"
    assert c.released == [] and c.completions.held() == 2


def test_a_copy_s_sync_point_blocks_and_never_polls() -> None:
    cuda = FakeCuda([])
    cuda.auto_complete = False
    event = cuda.CudaEvent(None)
    event.record("copy-stream")
    point = CudaEventSyncPoint(event, "a copy")  # type: ignore[arg-type]
    assert point.blocking_waits and point.wait(0.02).timed_out
    threading.Timer(0.02, event.complete).start()
    assert point.wait(2.0).signaled
    assert event.queries == 0 and len(event.wait_threads) == 2


# ---------------------------------------------------------------------------------------------------
# the pairing over fakes: slot state and fences


def test_a_reused_slot_s_copy_waits_for_dawn_s_last_access(rig: Rig) -> None:
    pairing = rig.pairing
    first = pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None)
    assert rig.calls("order_after", "copy", "signal", "begin_access") == [
        ("order_after", 0),
        ("copy", "cu_image0"),
        ("copy", "cu_image1"),
        ("signal", "plane_sem0"),
        ("signal", "plane_sem1"),
        ("begin_access", "alpha2 ring plane 0"),
        ("begin_access", "alpha2 ring plane 1"),
    ]
    assert first.frame.image_state.timeline_value == 1
    del rig.log[:]
    first.release()
    assert rig.calls("end_access") == [
        ("end_access", "alpha2 ring plane 1"),
        ("end_access", "alpha2 ring plane 0"),
    ]
    slot = rig.pairing._ring.idle_slots()[0]
    assert [len(p.release_fence_fds) for p in slot.planes] == [1, 0], "one fence a frame: the last ended"
    assert rig.cuda.release_fences == [], "imported into CUDA by the slot's next copy, not at release"
    del rig.log[:]
    second = pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None)
    assert [f.name for f in rig.cuda.release_fences] == ["release_fence0"]
    copies = rig.calls("wait", "copy")
    assert copies[0] == ("wait", "release_fence0"), "CUDA waits on Dawn's last access before copying"
    assert copies[1:] == [("copy", "cu_image0"), ("copy", "cu_image1")]
    assert second.frame.image_state.timeline_value == 2
    stats = pairing.stats()
    assert (stats.allocations, stats.reuses, stats.pool_sets, stats.live_textures) == (1, 1, 1, 2)
    assert wait_until(lambda: rig.cuda.release_fences[0].closed == 1), (
        "closed once the copy that waited is done"
    )
    second.release()


def test_the_frame_is_held_until_its_copy_completes(rig: Rig) -> None:
    rig.cuda.auto_complete = False
    frame = cuda_frame()
    surface = NativeSurfaceLease(frame)
    ticket = rig.pairing.acquire(frame, surface, None)
    time.sleep(0.03)
    assert not surface.released and rig.pairing.stats().surfaces_held == 1
    copy_event = rig.cuda.events[-1]  # the copy's own event (the slot's is events[0])
    assert copy_event is not rig.cuda.events[0]
    copy_event.complete()
    assert wait_until(lambda: surface.released)
    assert frame.released and rig.pairing.stats().surfaces_held == 0
    assert copy_event.queries == 0 and set(copy_event.wait_threads) == {"alpha2-sync-waiter"}
    ticket.release()
    # At close the slot (its CUDA work, ordered after Dawn's last access, still running) outlasts the
    # bounded wait: it goes to the Vulkan context's deferred destruction, not destroyed under the GPU.
    rig.timeout_s = 0.05
    rig.pairing.close()
    assert len(rig.vulkan.deferred) == 1 and [image.closed for image in rig.vk_images] == [0, 0]
    assert rig.pairing.stats().live_textures == 2
    rig.vulkan.deferred[0]()
    assert [image.closed for image in rig.vk_images] == [1, 1] and rig.pairing.stats().live_textures == 0


def test_a_slot_whose_release_failed_is_not_reused(rig: Rig) -> None:
    pairing = rig.pairing
    ticket = pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None)
    rig.dawn.fail_end.add("alpha2 ring plane 1")
    with pytest.raises(InternalError, match="end_access"):
        ticket.release()
    rig.dawn.fail_end.clear()
    pairing.poll()  # the retired slot's CUDA work is done: destroyed
    assert [image.closed for image in rig.vk_images] == [1, 1]
    assert [semaphore.closed for semaphore in rig.cuda.plane_semaphores] == [1, 1]
    assert rig.cuda.events[0].closed == 1
    pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None).release()
    stats = pairing.stats()
    assert (stats.allocations, stats.reuses, stats.drained, stats.live_textures) == (2, 0, 1, 2)
    assert len(rig.vk_images) == 4


def test_a_failed_begin_access_retires_the_slot_after_its_copy(rig: Rig) -> None:
    pairing = rig.pairing
    rig.dawn.fail_begin.add("alpha2 ring plane 1")
    frame = cuda_frame()
    surface = NativeSurfaceLease(frame)
    with pytest.raises(InternalError, match="begin_access"):
        pairing.acquire(frame, surface, None)
    assert rig.calls("begin_access", "end_access") == [
        ("begin_access", "alpha2 ring plane 0"),
        ("begin_access", "alpha2 ring plane 1"),
        ("end_access", "alpha2 ring plane 0"),
    ], "the access that began is ended"
    slot_event = rig.cuda.events[0]
    assert slot_event.wait_threads == ["MainThread"], "the abandoned copy is waited for (bounded)"
    # Recorded after the copy, after what of it reached the stream, and after the wait on the fence the
    # ended access left: the slot's destruction is ordered after Dawn's last access.
    assert slot_event.records == 3 and [f.waits for f in rig.cuda.release_fences] == [1]
    pairing.poll()
    assert [image.closed for image in rig.vk_images] == [1, 1] and rig.cuda.release_fences[0].closed == 1
    assert not surface.released and pairing.stats().surfaces_held == 0, "the frame goes back to the caller"
    rig.dawn.fail_begin.clear()
    events_before = len(rig.cuda.events)
    pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None).release()
    assert len(rig.cuda.events) == events_before + 1, "a new slot's event; the copy's event was reused"
    stats = pairing.stats()
    assert (stats.allocations, stats.reuses, stats.drained) == (2, 0, 1)


def test_sync_fd_fences_are_waited_before_the_slot_s_next_copy(rig: Rig) -> None:
    pairing = rig.pairing
    rig.dawn.fence_kind = "sync-fd"
    pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None).release()
    assert rig.cuda.release_fences == [], "a sync fd is not imported into CUDA"
    pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None).release()  # signalled: goes on
    assert pairing.stats().reuses == 1
    rig.dawn.sync_fd_signalled = False
    rig.timeout_s = 0.03
    pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None).release()  # leaves one unsignalled
    with pytest.raises(GpuTimeoutError, match="sync fd"):
        pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None)
    assert pairing.stats().drained == 1, "the slot whose fence never signalled is retired"


def test_a_decoder_process_s_slot_writer_makes_the_same_copy(rig: Rig) -> None:
    """The producer's side of the decoder processes' slots copies with the GPU copy's own function:
    the consumer's fences waited (a sync fd on the CPU, an opaque fd in CUDA), then the copy; waited for
    before the slot is named."""
    geometry = frame_geometry(NV12, 64, 36)
    layout = handoff.SlotLayout("vulkan", NV12, 0, 0, geometry, (4096, 4096), 2)
    fds = [OwnedFd(os.open(os.devnull, os.O_RDONLY)) for _ in range(4)]
    writer = handoff.CudaSlotWriter(0, layout, fds)
    assert len(rig.cuda.images) == 4 and all(fd.closed for fd in fds), "CUDA took every memory"
    read, write = os.pipe()
    os.write(write, b"x")
    fences = [
        (handoff.FENCE_SYNC_FD, OwnedFd(read)),
        (handoff.FENCE_OPAQUE_FD, OwnedFd(os.open(os.devnull, os.O_RDONLY))),
    ]
    del rig.log[:]
    strides = writer.write(1, cuda_frame(), fences, 1.0)
    os.close(write)
    assert strides == (256, 256) and fences == []
    assert rig.calls("order_after", "wait", "copy", "signal", "record") == [
        ("order_after", 0),
        ("wait", "release_fence0"),
        ("copy", "cu_image2"),
        ("copy", "cu_image3"),
        ("record", rig.cuda.events[-1].name),
    ]
    assert rig.cuda.events[-1].wait_threads, "the copy is waited for before the slot is named"
    assert rig.cuda.release_fences[0].closed == 1
    rig.cuda.auto_complete = False
    with pytest.raises(GpuTimeoutError, match="decoder process"):
        writer.write(0, cuda_frame(), [], 0.02)
    writer.close()
    writer.close()
    assert [image.closed for image in rig.cuda.images] == [1, 1, 1, 1]
    assert rig.cuda.streams[-1].closed == 1


class FakeDownloader:
    """``_cuda.interop.HostDownloader``: each plane 'downloaded' as bytes of its index + 7."""

    def __init__(self) -> None:
        self.streams: list[int | None] = []

    def download(self, planes: tuple[CudaPtr2D, ...], stream: int | None, timeout_s: float) -> CpuPlaneSet:
        self.streams.append(stream)
        return CpuPlaneSet(
            tuple(
                CpuPlane(
                    data=bytearray([7 + i]) * (p.width_bytes * p.height),
                    bytes_per_row=p.width_bytes,
                    width_bytes=p.width_bytes,
                    height=p.height,
                )
                for i, p in enumerate(planes)
            )
        )


def test_nvdec_frames_reach_host_memory_through_one_download(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decoder process's host slots take NVDEC frames from the one download's staging memory; the
    frames' own host copy is the same download, copied into memory of its own."""
    downloader = FakeDownloader()
    monkeypatch.setattr(streams, "_downloader", downloader)
    frame = cuda_frame()
    slots = handoff.HostSlotSet(NV12, frame_geometry(NV12, 64, 36), 1)
    writer = handoff.HostSlotWriter(slots.layout, slots.export_fds())
    try:
        assert writer.write(0, frame, [], 1.0) == (64, 64)
        luma, chroma = slots.planes(0).planes
        assert bytes(luma.data) == b"\x07" * (64 * 36) and bytes(chroma.data) == b"\x08" * (64 * 18)
    finally:
        writer.close()
        slots.close()
    owned = streams.download_planes(frame.planes, frame.cuda_stream, 1.0)  # type: ignore[arg-type]
    assert [bytes(p.data[:1]) for p in owned.planes] == [b"\x07", b"\x08"]
    assert all(isinstance(p.data, bytearray) for p in owned.planes)
    assert downloader.streams == [0, 0], "after the decode, on its stream"


# ---------------------------------------------------------------------------------------------------
# copies made ahead, on a decoder's thread


def on_thread(work: Callable[[], Any], name: str = "alpha2-decode test") -> Any:
    """Run ``work`` on a thread of its own (as a DecodeSession's prefetch thread) and give its result."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(work()), name=name)
    thread.start()
    thread.join()
    return box[0]


def test_a_frame_copied_ahead_is_imported_without_a_semaphore(rig: Rig) -> None:
    pairing = rig.pairing
    pairing.prepare_stream(cuda_frame().identity)  # the slot the decoder's thread may take
    del rig.log[:]
    ahead = on_thread(lambda: pairing.copy_ahead(cuda_frame()))
    assert ahead is not None
    assert rig.calls("order_after", "copy", "signal", "record", "begin_access") == [
        ("order_after", 0),
        ("copy", "cu_image0"),
        ("copy", "cu_image1"),
        ("record", "event0"),
    ], "copied, no semaphore signalled, no Dawn call"
    assert rig.cuda.events[0].wait_threads == [], "handed out at once, not waited for there"
    frame = cuda_frame(ahead=ahead)
    surface = NativeSurfaceLease(frame)
    del rig.log[:]
    ticket = pairing.acquire(frame, surface, None)
    assert rig.calls("copy", "signal", "begin_access") == [
        ("begin_access", "alpha2 ring plane 0"),
        ("begin_access", "alpha2 ring plane 1"),
    ]
    assert rig.dawn.begin_fences == [0, 0], "Dawn waits on nothing: the copy is done"
    assert surface.released and frame.released, "the surface goes at once: nothing reads it any more"
    assert ticket.frame.path.value == "gpu_copy" and ticket.frame.sync.is_signaled()
    assert rig.cuda.events[0].wait_threads == ["MainThread"], "the import came first: it waited"
    stats = pairing.stats()
    assert (stats.copied_ahead, stats.not_copied_ahead, stats.allocations, stats.surfaces_held) == (
        1,
        0,
        1,
        0,
    )
    ticket.release()
    del rig.log[:]
    # The slot's next copy ahead waits, on the GPU, on the fence Dawn's access ended with.
    again = on_thread(lambda: pairing.copy_ahead(cuda_frame()))
    assert again is not None
    assert rig.calls("wait", "copy")[:2] == [("wait", "release_fence0"), ("copy", "cu_image0")]
    assert rig.cuda.release_fences[0].closed == 0, "held until the copy is known done"
    again.discard()
    pairing.poll()
    assert rig.cuda.release_fences[0].closed == 1 and pairing.stats().pool_idle == 1


class Held:
    """Stands in for the decoded frame a copy reads (its ``keep_alive``)."""


def test_a_decoder_s_next_copy_ahead_lets_go_of_the_last_one_once_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = Rig(monkeypatch, slots=2)
    try:
        pairing = made.pairing
        pairing.prepare_stream(cuda_frame().identity)
        made.cuda.auto_complete = False
        decoded = cuda_frame(keep_alive=Held())
        gone = weakref.ref(decoded.keep_alive)
        results: list[Any] = []

        def decoder_thread() -> None:
            results.append(pairing.copy_ahead(decoded))
            for event in made.cuda.events:  # the GPU ran the first copy meanwhile
                event.complete()
            results.append(pairing.copy_ahead(cuda_frame()))

        on_thread(lambda: decoder_thread())
        decoded.release()  # the session hands out its own frame; only the slot holds this one now
        first, second = results
        assert first is not None and second is not None
        gc.collect()
        assert gone() is None, "the first copy was found done on the decoder's thread, its frame let go"
        assert sum(e.queries for e in made.cuda.events) == 1
        ticket = pairing.acquire(cuda_frame(ahead=first), NativeSurfaceLease(cuda_frame()), None)
        assert all(e.wait_threads == [] for e in made.cuda.events), "nothing to wait for at import"
        ticket.release()
        made.cuda.auto_complete = True
        for event in made.cuda.events:
            event.complete()
        pairing.acquire(cuda_frame(ahead=second), NativeSurfaceLease(cuda_frame()), None).release()
    finally:
        made.pairing.close()
        made.dawn.close()


def copied_ahead_unfinished(rig: Rig) -> tuple[Any, weakref.ref[Held]]:
    """A frame copied ahead on a decoder's thread whose copy the fake GPU has not run yet, and a weak
    reference to the decoded frame it reads (the decoder's own reference already dropped)."""
    rig.pairing.prepare_stream(cuda_frame().identity)
    rig.cuda.auto_complete = False
    decoded = cuda_frame(keep_alive=Held())
    gone = weakref.ref(decoded.keep_alive)
    ahead = on_thread(lambda: rig.pairing.copy_ahead(decoded))
    decoded.release()
    return ahead, gone


def test_an_import_waits_for_a_copy_ahead_and_a_timeout_keeps_the_frame_until_it_is_done(rig: Rig) -> None:
    pairing = rig.pairing
    ahead, gone = copied_ahead_unfinished(rig)
    rig.timeout_s = 0.02
    frame = cuda_frame(ahead=ahead)
    surface = NativeSurfaceLease(frame)
    with pytest.raises(GpuTimeoutError):
        pairing.acquire(frame, surface, None)
    assert rig.dawn.begin_fences == [], "Dawn never saw the slot"
    pairing.poll()
    gc.collect()
    assert gone() is not None, "the copy may still read the frame: the retired slot keeps it"
    assert rig.vk_images[0].closed == 0
    rig.cuda.events[0].complete()
    pairing.poll()
    gc.collect()
    assert gone() is None and rig.vk_images[0].closed == 1, "destroyed once done, and the frame let go"


def test_a_frame_dropped_before_its_copy_ahead_is_done_gives_its_slot_back_once_it_is(rig: Rig) -> None:
    pairing = rig.pairing
    ahead, gone = copied_ahead_unfinished(rig)
    frame = cuda_frame(ahead=ahead)
    frame.release()  # a wall dropped it
    threading.Timer(0.05, rig.cuda.events[0].complete).start()
    pairing.poll()  # the slot's next copy could run on another CUDA stream: it waits for this one
    gc.collect()
    assert gone() is None and pairing.stats().pool_idle == 1 and rig.vk_images[0].closed == 0


def test_a_decoder_s_thread_keeps_its_stream_and_a_later_thread_takes_it_over(rig: Rig) -> None:
    pairing = rig.pairing
    pairing.prepare_stream(cuda_frame().identity, ahead=True)

    def two_copies() -> None:
        for _ in range(2):
            ahead = pairing.copy_ahead(cuda_frame())
            assert ahead is not None
            ahead.discard()

    on_thread(two_copies, name="first decoder thread")
    pairing.poll()  # the discarded slots go back on the caller's thread
    gc.collect()  # the thread is gone: its stream goes back
    on_thread(two_copies, name="after a seek")
    pairing.poll()
    assert len(rig.cuda.streams) == 2, "the import's, and one for both decoder threads in turn"


def test_a_copy_ahead_for_another_stream_goes_back_once_done(rig: Rig) -> None:
    pairing = rig.pairing
    ahead, gone = copied_ahead_unfinished(rig)
    frame = cuda_frame(decoder_id=2, ahead=ahead)  # not the frames the slot was copied for
    threading.Timer(0.05, rig.cuda.events[0].complete).start()
    rig.cuda.auto_complete = True
    pairing.acquire(frame, NativeSurfaceLease(frame), None).release()  # copied at import instead
    gc.collect()
    assert gone() is None, "the slot's copy was waited for before the slot went back"
    assert rig.cuda.events[0].wait_threads == ["MainThread"]


def test_a_retired_slot_with_dawn_fences_waits_for_its_last_copy_on_whichever_stream_it_ran(
    rig: Rig,
) -> None:
    pairing = rig.pairing
    pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None).release()  # Dawn's fence pending
    (slot,) = pairing._ring.idle_slots()
    del rig.log[:]
    order_after_last_access(FakeContext(), slot, rig.cuda.streams[0], 1.0)  # type: ignore[arg-type]
    # Re-recorded on the import's stream, the slot's event still covers its last copy, wherever it ran.
    assert rig.calls("wait_for", "wait", "record") == [
        ("wait_for", "event0"),
        ("wait", "release_fence0"),
        ("record", "event0"),
    ]


def test_copies_ahead_on_several_decoders_threads_run_side_by_side(monkeypatch: pytest.MonkeyPatch) -> None:
    made = Rig(monkeypatch, slots=1)
    try:
        pairing = made.pairing
        for decoder_id in (1, 2):
            pairing.prepare_stream(cuda_frame(decoder_id).identity)
        both_copying = threading.Barrier(2, timeout=2.0)
        copy = made.cuda.copy_plane_to_array

        def copy_once_both_are_copying(ctx: object, src: CudaPtr2D, dst: FakeClosable, stream: Any) -> None:
            if dst.name in ("cu_image0", "cu_image2"):  # each stream's first plane
                both_copying.wait()  # broken (BrokenBarrierError) if one copy waited for the other
            copy(ctx, src, dst, stream)

        monkeypatch.setattr(interop, "copy_plane_to_array", copy_once_both_are_copying)
        results: dict[int, Any] = {}
        threads = [
            threading.Thread(target=lambda d=d: results.__setitem__(d, pairing.copy_ahead(cuda_frame(d))))
            for d in (1, 2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results[1] is not None and results[2] is not None, "both copied at once"
        assert len(made.cuda.streams) == 3, "the import's stream and one per copy running at once"
        for decoder_id, ahead in results.items():
            frame = cuda_frame(decoder_id, ahead=ahead)
            pairing.acquire(frame, NativeSurfaceLease(frame), None).release()
    finally:
        made.pairing.close()
        made.dawn.close()
    assert [stream.closed for stream in made.cuda.streams] == [1, 1, 1]


def test_copies_ahead_take_idle_slots_only_and_never_make_an_import_wait(rig: Rig) -> None:
    pairing = rig.pairing  # one slot per stream
    assert pairing.copy_ahead(cuda_frame()) is None, "no slot yet: making one is Dawn's work"
    pairing.prepare_stream(cuda_frame().identity)
    first = pairing.copy_ahead(cuda_frame())
    assert first is not None and pairing.copy_ahead(cuda_frame()) is None, "the one slot is taken"
    # An earlier frame, not copied ahead, is imported while the slot is held for a later one: the
    # import makes a slot rather than wait for it (slots taken ahead do not count against the bound).
    start = time.monotonic()
    earlier = pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None)
    assert time.monotonic() - start < 1.0
    later = pairing.acquire(cuda_frame(ahead=first), NativeSurfaceLease(cuda_frame()), None)
    stats = pairing.stats()
    assert (stats.allocations, stats.copied_ahead, stats.not_copied_ahead) == (2, 1, 2)
    assert rig.dawn.begin_fences == [1, 1, 0, 0]
    earlier.release()
    later.release()
    # Both slots are the stream's now, like any other: with both held, a third import waits (bounded).
    held = [pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None) for _ in range(2)]
    rig.timeout_s = 0.02
    with pytest.raises(GpuTimeoutError):
        pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None)
    for ticket in held:
        ticket.release()


def test_a_stream_whose_copies_ahead_find_no_idle_slot_gets_more_slots(rig: Rig) -> None:
    pairing = rig.pairing  # one slot per stream: the imports alone would never make a second
    pairing.prepare_stream(cuda_frame().identity)
    held = [on_thread(lambda: pairing.copy_ahead(cuda_frame()))]
    assert on_thread(lambda: pairing.copy_ahead(cuda_frame())) is None, "the one slot is out"
    first = pairing.acquire(cuda_frame(ahead=held.pop()), NativeSurfaceLease(cuda_frame()), None)
    assert pairing.stats().pool_sets == 2, "the import made one more, for the decoder's thread"
    second = on_thread(lambda: pairing.copy_ahead(cuda_frame()))
    assert second is not None
    third = on_thread(lambda: pairing.copy_ahead(cuda_frame()))
    assert third is None
    first.release()
    pairing.acquire(cuda_frame(ahead=second), NativeSurfaceLease(cuda_frame()), None).release()
    # Twice ``slots`` at most: the bound holds however often the decoder's thread finds none idle.
    assert pairing.stats().pool_sets == 2
    stats = pairing.stats()
    assert (stats.copied_ahead, stats.not_copied_ahead) == (2, 2)


def test_a_frame_released_unimported_gives_its_slot_back(rig: Rig) -> None:
    pairing = rig.pairing
    pairing.prepare_stream(cuda_frame().identity)
    frame = cuda_frame(ahead=on_thread(lambda: pairing.copy_ahead(cuda_frame())))
    assert pairing.stats().pool_idle == 0
    frame.release()  # a wall dropped it, or a seek
    pairing.poll()  # given back on the caller's thread, where slots may be destroyed
    assert pairing.stats().pool_idle == 1
    dropped = on_thread(lambda: pairing.copy_ahead(cuda_frame()))
    del dropped  # dropped without a release: the same
    pairing.poll()
    stats = pairing.stats()
    assert (stats.pool_idle, stats.pool_sets, stats.reuses) == (1, 1, 2)


def test_a_copy_ahead_that_fails_retires_its_slot_and_the_import_copies(rig: Rig) -> None:
    pairing = rig.pairing
    pairing.prepare_stream(cuda_frame().identity)
    rig.cuda.fail_copy = InternalError("cuMemcpy2DAsync failed")
    assert on_thread(lambda: pairing.copy_ahead(cuda_frame())) is None
    assert rig.vk_images[0].closed == 0, "not destroyed on the decoder's thread"
    rig.cuda.fail_copy = None
    ticket = pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None)
    assert [image.closed for image in rig.vk_images] == [1, 1, 0, 0], "retired at the next import"
    stats = pairing.stats()
    assert (stats.copied_ahead, stats.not_copied_ahead, stats.drained, stats.allocations) == (0, 1, 1, 2)
    ticket.release()


class ForeignAhead:
    """Work done ahead by something else (another importer's pairing)."""

    def __init__(self) -> None:
        self.discarded = 0

    def discard(self) -> None:
        self.discarded += 1


def test_work_ahead_that_is_not_this_pairing_s_is_discarded_and_the_import_copies(rig: Rig) -> None:
    foreign = ForeignAhead()
    frame = cuda_frame(ahead=foreign)
    rig.pairing.acquire(frame, NativeSurfaceLease(frame), None).release()
    assert rig.dawn.begin_fences == [1, 1], "copied at import"
    assert foreign.discarded == 1 and frame.take_ahead() is None


def test_closing_with_a_frame_copied_ahead_still_out_destroys_its_slot_at_release(rig: Rig) -> None:
    rig.pairing.prepare_stream(cuda_frame().identity)
    frame = cuda_frame(ahead=rig.pairing.copy_ahead(cuda_frame()))
    rig.pairing.close()
    assert rig.pairing.copy_ahead(cuda_frame()) is None
    assert [image.closed for image in rig.vk_images] == [0, 0]
    frame.release()
    assert [image.closed for image in rig.vk_images] == [1, 1] and rig.pairing.stats().live_textures == 0


def test_prepare_stream_makes_the_slot_frames_then_reuse(rig: Rig) -> None:
    frame = cuda_frame()
    rig.pairing.prepare_stream(frame.identity)
    assert rig.pairing.stats().allocations == 1 and rig.dawn.memories == 2
    rig.pairing.acquire(frame, NativeSurfaceLease(frame), None).release()
    stats = rig.pairing.stats()
    assert (stats.allocations, stats.reuses) == (1, 1)


def test_prepare_stream_for_copies_ahead_makes_the_slots_the_decoder_holds_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = Rig(monkeypatch, slots=2)
    try:
        made.pairing.prepare_stream(cuda_frame().identity, ahead=True)
        stats = made.pairing.stats()
        assert (stats.allocations, stats.pool_sets, stats.pool_idle) == (4, 4, 4), "twice slots, at open"
        held = [on_thread(lambda: made.pairing.copy_ahead(cuda_frame())) for _ in range(4)]
        assert all(ahead is not None for ahead in held), "every copy ahead finds an idle slot"
        for ahead in held:
            ahead.discard()
        made.pairing.poll()
        assert made.pairing.stats().allocations == 4, "nothing made per frame"
    finally:
        made.pairing.close()
        made.dawn.close()
    # A memory budget with room for three slots: the growth stops there, and prepare does not fail.
    slot_bytes = 64 * 36 + 64 * 18
    budget = MemoryBudget(caps={BackendKind.VULKAN: BudgetCaps(hard_bytes=3 * slot_bytes)})
    made = Rig(monkeypatch, slots=2, memory_budget=budget)
    try:
        made.pairing.prepare_stream(cuda_frame().identity, ahead=True)
        assert made.pairing.stats().pool_sets == 3
    finally:
        made.pairing.close()
        made.dawn.close()


def test_the_pairing_s_slots_count_against_the_importer_s_memory_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budget = MemoryBudget()
    made = Rig(monkeypatch, slots=1, memory_budget=budget)
    try:
        frame = cuda_frame(width=64, height=36)
        made.pairing.acquire(frame, NativeSurfaceLease(frame), None).release()
        assert budget.usage(BackendKind.VULKAN).reserved_bytes == 64 * 36 + 64 * 18
    finally:
        made.pairing.close()
        made.dawn.close()
    assert budget.usage(BackendKind.VULKAN).reserved_bytes == 0


def test_close_destroys_every_slot_and_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    made = Rig(monkeypatch, slots=2)
    try:
        pairing = made.pairing
        held = pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None)
        pairing.acquire(cuda_frame(), NativeSurfaceLease(cuda_frame()), None).release()
        held.release()
        assert pairing.stats().pool_sets == 2
        pairing.close()
        pairing.close()
        stats = pairing.stats()
        assert (stats.pool_sets, stats.live_textures, stats.surfaces_held) == (0, 0, 0)
        assert [image.closed for image in made.vk_images] == [1, 1, 1, 1]
        assert [s.closed for s in made.cuda.plane_semaphores + made.cuda.release_fences] == [1] * 6
        assert all(event.closed == 1 for event in made.cuda.events)
        assert made.cuda.streams[0].closed == 1 and made.vulkan.closed == 0, (
            "the context is not the pairing's"
        )
        assert pairing.refuses(cuda_frame()) == "the GPU-copy pairing is closed"
    finally:
        made.dawn.close()


def test_after_the_process_waiter_is_replaced_the_oldest_copy_is_waited_first() -> None:
    cuda = FakeCuda([])
    cuda.auto_complete = False
    released: list[str] = []
    completions = CopyCompletions(FakeContext(), lambda: 0.05)  # type: ignore[arg-type]
    events: list[Any] = []
    for name in ("f0", "f1"):
        event = cuda.CudaEvent(None)
        event.record("copy-stream")
        completions.add(event, FakeSurface(name, released), [])  # type: ignore[arg-type]
        events.append(event)
    assert wait_until(lambda: len(events[0].wait_threads) == 1)
    WaiterThread.instance().stop(timeout=2.0)  # its waits fail with ClosedError: the surfaces stay held
    time.sleep(0.02)
    assert released == [] and completions.held() == 2
    last = cuda.CudaEvent(None)
    last.record("copy-stream")
    completions.add(last, FakeSurface("f2", released), [])  # type: ignore[arg-type]
    for event in (*events, last):
        event.complete()
    assert wait_until(lambda: len(released) == 3)
    assert released == ["f0", "f1", "f2"], "the new waiter starts from the oldest copy"
    assert completions.close(1.0) is True


# ---------------------------------------------------------------------------------------------------
# the devices: taken from the importer's Device, never enumerated again


def _device_with(uuid: bytes, context: Any, cuda_ordinal: int | None) -> Any:
    from alpha2.native_gpu.device.device import Device, _Twins

    info = WebGpuDeviceInfo(WebGpuImplementation.DAWN, frozenset(), "fake gpu", "Vulkan", uuid, b"d" * 16)
    twins = _Twins(uuid, None, cuda_ordinal, "matched" if cuda_ordinal is not None else "no CUDA twin")
    return Device(object(), info, "test", _twins=twins, _shared_context=context, _owns_context=False), info


def _fake_context(uuid: bytes, extensions: tuple[str, ...]) -> Any:
    return SimpleNamespace(
        device_id=SimpleNamespace(uuid=uuid, name="fake gpu"),
        candidate=SimpleNamespace(driver_uuid=b"d" * 16),
        enabled_extensions=frozenset(extensions),
        _internal=object(),
    )


EXTENSIONS = ("VK_KHR_external_memory_fd", "VK_KHR_external_semaphore_fd")


def test_shared_devices_come_from_the_importers_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from alpha2.gpu.errors import UnsupportedError

    support = SimpleNamespace(exportable=True, reason=None)
    monkeypatch.setattr(export, "external_semaphore_support", lambda state, timeline: support)
    context = _fake_context(b"u" * 16, EXTENSIONS)
    device, info = _device_with(b"u" * 16, context, 3)
    found = cuda_vk._find_shared_devices(info, {"gpu_device": device})
    assert found.context is context and found.cuda_ordinal == 3 and not found.owns_context

    with pytest.raises(UnsupportedError, match="needs the importer's alpha2 Device"):
        cuda_vk._find_shared_devices(info, {})
    other, other_info = _device_with(b"v" * 16, context, 3)
    with pytest.raises(UnsupportedError, match="device UUIDs differ"):
        cuda_vk._find_shared_devices(other_info, {"gpu_device": other})
    no_cuda, no_cuda_info = _device_with(b"u" * 16, context, None)
    with pytest.raises(UnsupportedError, match=r"no CUDA device .*no CUDA twin"):
        cuda_vk._find_shared_devices(no_cuda_info, {"gpu_device": no_cuda})
    bare, bare_info = _device_with(b"u" * 16, _fake_context(b"u" * 16, EXTENSIONS[:1]), 3)
    with pytest.raises(UnsupportedError, match="VK_KHR_external_semaphore_fd"):
        cuda_vk._find_shared_devices(bare_info, {"gpu_device": bare})


class LayoutMemory:
    """A plane's shared texture memory that records each acquire's layouts and releases in
    ``released`` (Dawn's (old, new) pair), or (UNDEFINED, UNDEFINED) for an access that went unused."""

    def __init__(self) -> None:
        self.acquired: list[tuple[int, int]] = []
        self.released = (5, 5)  # VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, where a sampled plane is left

    def begin_access(
        self, texture: Any, *, initialized: bool, vk_image_layout: tuple[int, int], **_: Any
    ) -> None:
        assert initialized
        self.acquired.append(vk_image_layout)

    def end_access(self, texture: Any) -> Any:
        return SimpleNamespace(vk_image_layout=self.released, fences=[])


def test_acquires_mirror_dawn_s_last_release_and_an_unused_access_keeps_the_layout() -> None:
    memory = LayoutMemory()
    plane = RingPlane(geometry=frame_geometry(NV12, 64, 36)[0], memory=memory, texture=object())
    slot = RingSlot(RingKey(1, 0, NV12, frame_geometry(NV12, 64, 36)), [plane])
    dawn_planes.begin_access(slot, None)  # first: the GENERAL layout the image was released in once
    dawn_planes.end_plane(plane, collect_fences=False)
    dawn_planes.begin_access(slot, None)  # then the layout Dawn's release left it in, old and new alike
    memory.released = (0, 0)  # the frame was let go undrawn: Dawn reports UNDEFINED
    dawn_planes.end_plane(plane, collect_fences=False)
    dawn_planes.begin_access(slot, None)  # never acquired from UNDEFINED (the driver may discard then)
    assert memory.acquired == [(1, 1), (5, 5), (5, 5)]
