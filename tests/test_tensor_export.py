"""RGB tensors out to CUDA (alpha2.native_gpu.interop.tensor_export): the orchestration over fakes, and
the real thing on an NVIDIA GPU.

The fakes stand in for the CUDA driver objects (``_cuda.interop``), the Vulkan exports (``_vk.export``)
and Dawn's shared texture memory and fences, and record what was called, in order, as
tests/test_cuda_vk_pairing.py does; but the export textures Dawn "imports" are real ``wgpu`` rgba8uint
storage textures (lavapipe in CI), which the real compute pass writes, and the fake CUDA copy reads
them back into fake device memory. So the bytes a batch hands out are checked too: equal, bit for bit,
to the CPU path's. On the H200 (markers cuda, dawn, nvidia) the same comparison runs for real.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from alpha2.gpu.budget import MemoryBudget
from alpha2.gpu.errors import GpuTimeoutError, InvalidInputError, UnsupportedError
from alpha2.gpu.handles import OwnedFd
from alpha2.gpu.identity import BackendKind, ExecutionPath
from alpha2.native_gpu._cuda import interop, streams
from alpha2.native_gpu._vk import export
from alpha2.native_gpu.device.shared import QueueRole
from alpha2.native_gpu.interop import dawn_planes, tensor_export
from alpha2.native_gpu.interop.tensor_export import (
    EXPORT_IMAGE_USAGE,
    MAX_ROW_WORDS,
    TensorExporter,
    export_geometry,
)
from alpha2.native_gpu.render.tensor import (
    RgbTensorPass,
    TensorDType,
    TensorLayout,
    TensorSpec,
    batch_words,
    frame_words,
    max_frame_words,
)

# ---------------------------------------------------------------------------------------------------
# fakes


class FakeEvent:
    def __init__(self, log: list[tuple[str, Any]], name: str) -> None:
        self.log = log
        self.name = name
        self.recorded = False
        self.closed = 0

    def record(self, stream: object) -> None:
        self.log.append(("record", self.name))
        self.recorded = True

    def query(self) -> bool:
        return True

    def wait(self, timeout_s: float, what: str = "CUDA work") -> None:
        # The copies' waiter thread waits too; the caller's thread (the main one here) must not.
        self.log.append(("cpu wait", threading.current_thread() is threading.main_thread()))

    def close(self) -> None:
        self.closed += 1


class FakeStream:
    handle = 0x5EED

    def __init__(self) -> None:
        self.closed = 0

    def order_after(self, producer: int | None) -> None:
        pass

    def wait_for(self, event: FakeEvent) -> None:
        pass

    def close(self) -> None:
        self.closed += 1


class FakeContext:
    def __enter__(self) -> FakeContext:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class FakeSemaphore:
    """A Vulkan semaphore imported into CUDA: a slot's copied-out semaphore, or Dawn's release fence."""

    def __init__(self, log: list[tuple[str, Any]], name: str) -> None:
        self.log = log
        self.name = name
        self.closed = 0

    def wait(self, stream: object, value: int = 0) -> None:
        self.log.append(("wait", self.name))

    def signal(self, stream: object, value: int = 0) -> None:
        self.log.append(("signal", self.name))

    def close(self) -> None:
        self.closed += 1


class FakeVkImage:
    """An exportable Vulkan image: its "memory" is a real wgpu texture once Dawn imports it."""

    size_bytes = 4096
    create_info_address = 0x1234
    memory_type_index = 0
    layout = export.VK_IMAGE_LAYOUT_GENERAL

    def __init__(self, rig: Rig, width: int, height: int, vk_format: int, usage: int) -> None:
        self.rig = rig
        self.width, self.height, self.vk_format, self.usage = width, height, vk_format, usage
        self.texture: Any = None
        self.closed = 0

    def export_memory_fd(self) -> OwnedFd:
        fd = OwnedFd(os.open(os.devnull, os.O_RDONLY))
        self.rig.fd_images[fd.fileno()] = self
        return fd

    def close(self) -> None:
        self.closed += 1


class FakeVkSemaphore:
    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.closed = 0

    def export_fd(self) -> OwnedFd:
        fd = OwnedFd(os.open(os.devnull, os.O_RDONLY))
        self.rig.semaphore_fds.add(fd.fileno())
        return fd

    def close(self) -> None:
        self.closed += 1


class FakeCuImage:
    def __init__(
        self, image: FakeVkImage, width: int, height: int, bytes_per_channel: int, channels: int
    ) -> None:
        self.image = image
        self.width, self.height = width, height
        self.row_bytes = width * bytes_per_channel * channels
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class FakeMemory:
    """Device memory: a bytearray at a made-up address."""

    def __init__(self, rig: Rig, size_bytes: int) -> None:
        self.pointer = 0x1000_0000 * (len(rig.memories) + 1)
        self.size_bytes = size_bytes
        self.data = bytearray(size_bytes)
        self.closed = 0
        rig.memories.append(self)

    def close(self) -> None:
        self.closed += 1


class FakePoolMemory(FakeMemory):
    """Stream-ordered pool memory: frees are logged with the streams they wait for."""

    def __init__(self, rig: Rig, size_bytes: int) -> None:
        super().__init__(rig, size_bytes)
        self.frees: list[tuple[Any, bool]] = []

    def free_after(self, consumer_streams: tuple[int, ...], *, everything: bool = False) -> None:
        self.frees.append((consumer_streams, everything))
        self.closed += 1

    def close(self) -> None:
        self.frees.append(("own stream", False))
        self.closed += 1


class FakePool:
    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.closed = 0

    def allocate(self, size_bytes: int, stream: object) -> FakePoolMemory:
        return FakePoolMemory(self.rig, size_bytes)

    def close(self) -> None:
        self.closed += 1


class FakeSharedMemory:
    """Dawn's SharedTextureMemory of an export image: a real wgpu rgba8uint storage texture."""

    def __init__(self, rig: Rig, image: FakeVkImage) -> None:
        import wgpu

        self.rig = rig
        self.image = image
        usage = wgpu.TextureUsage
        image.texture = rig.device.create_texture(
            size=(image.width, image.height, 1),
            format="rgba8uint",
            usage=usage.STORAGE_BINDING | usage.COPY_SRC | usage.COPY_DST | usage.TEXTURE_BINDING,
        )

    def create_texture(self, label: str) -> Any:
        return self.image.texture

    def begin_access(self, texture: Any, **kwargs: Any) -> None:
        self.rig.log.append(("begin_access", len(kwargs.get("fences", ()))))
        if self.rig.fail_begin:
            raise RuntimeError("begin_access failed")

    def end_access(self, texture: Any) -> Any:
        self.rig.log.append(("end_access", None))
        fd = os.open(os.devnull, os.O_RDONLY)
        self.rig.dawn_fds.append(fd)
        fence = SimpleNamespace(export=lambda: {"type": "vk-semaphore-opaque-fd", "fd": fd})
        return SimpleNamespace(vk_image_layout=(1, 1), fences=[fence])


class Rig:
    """A TensorExporter over fakes on a real wgpu device, and the fakes."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, device: Any, *, slots: int = 2, pool: bool = False, **kw: Any
    ) -> None:
        self.device = device
        self.log: list[tuple[str, Any]] = []
        self.fd_images: dict[int, FakeVkImage] = {}
        self.semaphore_fds: set[int] = set()
        self.images: list[FakeVkImage] = []
        self.memories: list[FakeMemory] = []
        self.cu_images: list[FakeCuImage] = []
        self.semaphores: list[FakeSemaphore] = []
        self.dawn_fds: list[int] = []
        self.orders: list[tuple[int, Any, Any]] = []
        self.fail_begin = False
        self.fail_copy: BaseException | None = None
        for name in ("primary_context", "CopyStream", "CudaEvent", "ExternalImage", "ExternalSemaphore"):
            monkeypatch.setattr(interop, name, getattr(self, name))
        monkeypatch.setattr(interop, "DeviceMemory", lambda ctx, size: FakeMemory(self, size))
        self.pools: list[FakePool] = []
        monkeypatch.setattr(interop, "StreamOrderedPool", self.stream_ordered_pool if pool else self.no_pools)
        monkeypatch.setattr(interop, "copy_array_to_device", self.copy_array_to_device)
        monkeypatch.setattr(export, "ExportableImage", self.vk_image)
        monkeypatch.setattr(export, "ExportableSemaphore", lambda vk, *, timeline: FakeVkSemaphore(self))
        monkeypatch.setattr(export, "transition_for_external", self.transition)
        monkeypatch.setattr(dawn_planes, "dawn_extras", lambda: self)
        monkeypatch.setattr(streams, "order_consumer_stream", self.order_consumer_stream)
        vulkan = SimpleNamespace(
            _internal=SimpleNamespace(defer_destroy=lambda fn: fn()), queue_families={QueueRole.GRAPHICS: 0}
        )
        self.exporter = TensorExporter(
            device,
            context=vulkan,  # type: ignore[arg-type]
            cuda_ordinal=0,
            slots=slots,
            wait_timeout=lambda: 2.0,
            **kw,
        )

    # _cuda.interop
    def primary_context(self, ordinal: int) -> FakeContext:
        return FakeContext()

    def stream_ordered_pool(self, ctx: object, *, keep_bytes: int) -> FakePool:
        made = FakePool(self)
        self.pools.append(made)
        return made

    def no_pools(self, ctx: object, *, keep_bytes: int) -> FakePool:
        raise UnsupportedError("CUDA device 0 has no stream-ordered memory pools")

    def CopyStream(self, ctx: object) -> FakeStream:
        return FakeStream()

    def CudaEvent(self, ctx: object) -> FakeEvent:
        return FakeEvent(self.log, "event")

    def ExternalImage(self, ctx: object, fd: OwnedFd, **kw: Any) -> FakeCuImage:
        image = self.fd_images.pop(fd.fileno())
        fd.close()
        cu_image = FakeCuImage(image, kw["width"], kw["height"], kw["bytes_per_channel"], kw["channels"])
        self.cu_images.append(cu_image)
        return cu_image

    def ExternalSemaphore(self, ctx: object, fd: OwnedFd, *, timeline: bool) -> FakeSemaphore:
        raw = fd.fileno()
        fd.close()
        name = "copied_out" if raw in self.semaphore_fds else "dawn_fence"
        self.semaphore_fds.discard(raw)
        semaphore = FakeSemaphore(self.log, name)
        self.semaphores.append(semaphore)
        return semaphore

    def copy_array_to_device(
        self, ctx: object, src: FakeCuImage, dst_pointer: int, size_bytes: int, stream: object
    ) -> None:
        if self.fail_copy is not None:
            raise self.fail_copy
        self.log.append(("copy", size_bytes))
        raw = read_words(self.device, src.image.texture)
        memory = next(m for m in self.memories if m.pointer <= dst_pointer < m.pointer + m.size_bytes)
        start = dst_pointer - memory.pointer
        memory.data[start : start + size_bytes] = raw[:size_bytes]

    def order_consumer_stream(self, ordinal: int, producer: Any, consumer: Any, **kw: Any) -> bool:
        self.orders.append((ordinal, producer, consumer))
        return True

    # _vk.export
    def vk_image(self, vk: object, width: int, height: int, vk_format: int, usage: int = 0) -> FakeVkImage:
        image = FakeVkImage(self, width, height, vk_format, usage)
        self.images.append(image)
        return image

    def transition(self, vk: object, images: list[FakeVkImage], family: int, timeout_s: float) -> None:
        self.log.append(("transition", len(images)))

    # wgpudawn extras
    def import_shared_texture_memory(self, device: object, *, label: str, opaque_fd: dict[str, Any]) -> Any:
        return FakeSharedMemory(self, self.fd_images.pop(opaque_fd["fd"]))

    def import_shared_fence(self, device: object, *, label: str, vk_semaphore_opaque_fd: int) -> Any:
        self.semaphore_fds.discard(vk_semaphore_opaque_fd)
        return SimpleNamespace(label=label)

    def calls(self, *kinds: str) -> list[tuple[str, Any]]:
        return [entry for entry in self.log if entry[0] in kinds]

    def close(self) -> None:
        self.exporter.close()
        for fd in self.dawn_fds:
            os.close(fd)


def read_words(device: Any, texture: Any) -> bytes:
    """An rgba8uint texture's rows, one after another (what CUDA's array copy reads)."""
    import wgpu

    width, height = int(texture.size[0]), int(texture.size[1])
    padded = -(-width * 4 // 256) * 256
    buffer = device.create_buffer(
        size=padded * height, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ
    )
    encoder = device.create_command_encoder()
    encoder.copy_texture_to_buffer(
        {"texture": texture},
        {"buffer": buffer, "bytes_per_row": padded, "rows_per_image": height},
        (width, height, 1),
    )
    device.queue.submit([encoder.finish()])
    buffer.map_sync(wgpu.MapMode.READ)
    rows = np.frombuffer(buffer.read_mapped(), np.uint8).reshape(height, padded)[:, : width * 4].copy()
    buffer.unmap()
    buffer.destroy()
    return rows.tobytes()


@pytest.fixture(scope="module")
def device() -> Any:
    wgpu = pytest.importorskip("wgpu")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        pytest.skip("wgpu has no adapter")
    return adapter.request_device_sync()


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch, device: Any) -> Iterator[Rig]:
    made = Rig(monkeypatch, device)
    yield made
    made.close()


class Pictures:
    """Random RGB pictures in rgba8unorm textures, 'rendered' by a copy into the pass's targets."""

    def __init__(self, device: Any, width: int, height: int, count: int, seed: int = 0) -> None:
        import wgpu

        rng = np.random.default_rng(seed)
        self.textures = []
        for _ in range(count):
            rgba = rng.integers(0, 256, (height, width, 4), dtype=np.uint8)
            texture = device.create_texture(
                size=(width, height, 1),
                format="rgba8unorm",
                usage=wgpu.TextureUsage.COPY_SRC | wgpu.TextureUsage.COPY_DST,
            )
            device.queue.write_texture(
                {"texture": texture}, rgba.tobytes(), {"bytes_per_row": width * 4}, (width, height, 1)
            )
            self.textures.append(texture)
        self.size = (width, height)

    def __call__(self, encoder: Any, index: int, target: Any) -> None:
        encoder.copy_texture_to_texture(
            {"texture": self.textures[index]}, {"texture": target}, (*self.size, 1)
        )


def export_batch(rig: Rig, packer: RgbTensorPass, spec: TensorSpec, pictures: Pictures, count: int) -> Any:
    spans = [frame_words(spec, n) for n in range(count)]
    batch = rig.exporter.batch(spans, max_frame_words(spec), batch_words(spec, count))
    packer.pack_into_textures(spec, count, pictures, batch)
    return batch.finish()


def exported_bytes(rig: Rig, memory: Any, spec: TensorSpec, count: int) -> bytes:
    fake = next(m for m in rig.memories if m.pointer == memory.pointer)
    return bytes(fake.data[: count * spec.frame_bytes])


# ---------------------------------------------------------------------------------------------------
# geometry


def test_export_geometry() -> None:
    g = export_geometry(10)
    assert (g.width, g.height, g.texture_format, g.width_bytes) == (10, 1, "rgba8uint", 40)
    g = export_geometry(3 * MAX_ROW_WORDS + 1)
    assert (g.width, g.height) == (MAX_ROW_WORDS, 4)
    with pytest.raises(UnsupportedError, match="smaller size, or uint8"):
        export_geometry(MAX_ROW_WORDS * 9000, max_dimension=8192)
    with pytest.raises(InvalidInputError):
        export_geometry(0)


# ---------------------------------------------------------------------------------------------------
# the orchestration over fakes, real bytes


@pytest.mark.vulkan
def test_batches_are_the_cpu_paths_bytes_and_fenced_both_ways(
    rig: Rig, device: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    packer = RgbTensorPass(device)
    # The whole batch in one texture (the default), and chunks of a frame or a few, cut mid-batch.
    for chunk_words in (tensor_export.CHUNK_WORDS, 1, 40, 100):
        monkeypatch.setattr(tensor_export, "CHUNK_WORDS", chunk_words)
        for width, height, count, layout, dtype in (
            (7, 5, 3, TensorLayout.HWC, TensorDType.UINT8),  # frames that do not start on a word
            (7, 5, 3, TensorLayout.CHW, TensorDType.FLOAT16),
            (9, 4, 4, TensorLayout.CHW, TensorDType.FLOAT32),
            (1, 1, 5, TensorLayout.HWC, TensorDType.UINT8),  # a frame wholly in its predecessor's last word
        ):
            spec = TensorSpec(width, height, layout, dtype)
            pictures = Pictures(device, width, height, count, seed=width)
            memory = export_batch(rig, packer, spec, pictures, count)
            want = packer.to_numpy(spec, count, pictures)
            assert exported_bytes(rig, memory, spec, count) == want.tobytes(), (
                chunk_words,
                width,
                height,
                layout,
                dtype,
            )
            assert memory.ordinal == 0 and memory.size_bytes == batch_words(spec, count) * 4

    images = rig.images
    assert all(
        i.vk_format == tensor_export.VK_FORMAT_R8G8B8A8_UINT and i.usage == EXPORT_IMAGE_USAGE for i in images
    )
    assert EXPORT_IMAGE_USAGE & 0x8, "Dawn writes the images as storage textures"
    assert all(c.row_bytes == c.image.width * 4 for c in rig.cu_images), "CUDA maps them as uchar4 arrays"

    # Per chunk (here a frame: 6x4 RGB uint8 is 18 words): Dawn's access (waiting on the slot's semaphore
    # once CUDA has read the slot), its end, then on CUDA's stream: wait on Dawn's fence, copy out,
    # signal the slot's semaphore, record.
    monkeypatch.setattr(tensor_export, "CHUNK_WORDS", 18)
    rig.log.clear()
    spec = TensorSpec(6, 4)
    export_batch(rig, packer, spec, Pictures(device, 6, 4, 3), 3)
    kinds = [entry for entry in rig.log if entry[0] not in ("record", "transition", "cpu wait")]
    copy_out = [("end_access", None), ("wait", "dawn_fence"), ("copy", 72), ("signal", "copied_out")]
    # A new size: two new textures, whose first access waits on nothing; the third frame reuses the
    # first frame's texture and waits, on the GPU, for CUDA's copy out of it.
    assert kinds == [("begin_access", 0), *copy_out] * 2 + [("begin_access", 1), *copy_out]
    alive, idle = rig.exporter.counts()
    assert alive == idle, "every texture is back in the ring"

    # By default the three frames go in one chunk: one access, one submission, one copy out.
    monkeypatch.setattr(tensor_export, "CHUNK_WORDS", 8 << 20)
    rig.log.clear()
    export_batch(rig, packer, TensorSpec(6, 4), Pictures(device, 6, 4, 3), 3)
    kinds = [entry for entry in rig.log if entry[0] in ("begin_access", "end_access", "copy")]
    assert kinds == [("begin_access", 0), ("end_access", None), ("copy", 216)]


@pytest.mark.vulkan
def test_textures_are_reused_and_counted(monkeypatch: pytest.MonkeyPatch, device: Any) -> None:
    budget = MemoryBudget()
    rig = Rig(monkeypatch, device, slots=2, memory_budget=budget)
    monkeypatch.setattr(tensor_export, "CHUNK_WORDS", 144)  # a frame a chunk (8x6x3 floats)
    try:
        packer = RgbTensorPass(device)
        spec = TensorSpec(8, 6, TensorLayout.CHW, TensorDType.FLOAT32)
        pictures = Pictures(device, 8, 6, 4)
        export_batch(rig, packer, spec, pictures, 4)
        made = len(rig.images)
        assert made == 2, "a batch rotates through `slots` textures"
        for _ in range(3):
            export_batch(rig, packer, spec, pictures, 4)
        assert len(rig.images) == made, "later batches of the size reuse them"
        g = export_geometry(max_frame_words(spec))
        assert budget.usage(BackendKind.VULKAN).reserved_bytes == 2 * g.width_bytes * g.height
        assert budget.usage(BackendKind.CUDA).reserved_bytes == 0
    finally:
        rig.close()
    assert all(i.closed for i in rig.images) and all(c.closed for c in rig.cu_images)
    assert budget.usage(BackendKind.VULKAN).reserved_bytes == 0


@pytest.mark.vulkan
def test_a_failed_frame_retires_its_texture(rig: Rig, device: Any) -> None:
    packer = RgbTensorPass(device)
    spec = TensorSpec(5, 3)
    pictures = Pictures(device, 5, 3, 3)
    export_batch(rig, packer, spec, pictures, 3)
    before = list(rig.images)

    rig.fail_begin = True
    with pytest.raises(RuntimeError, match="begin_access failed"):
        export_batch(rig, packer, spec, pictures, 3)
    rig.fail_begin = False
    assert sum(i.closed for i in before) == 1, "the texture whose access failed is destroyed"
    assert rig.memories[-1].closed == 1, "the batch's memory is freed"

    rig.fail_copy = GpuTimeoutError("copy refused")
    with pytest.raises(GpuTimeoutError):
        export_batch(rig, packer, spec, pictures, 3)
    rig.fail_copy = None
    assert rig.memories[-1].closed == 1

    memory = export_batch(rig, packer, spec, pictures, 3)  # new textures where old ones were retired
    assert exported_bytes(rig, memory, spec, 3) == packer.to_numpy(spec, 3, pictures).tobytes()
    alive, idle = rig.exporter.counts()
    assert alive == idle <= 2


@pytest.mark.vulkan
def test_memory_orders_consumers_and_outlives_the_batch(rig: Rig, device: Any) -> None:
    import gc

    packer = RgbTensorPass(device)
    spec = TensorSpec(4, 4)
    memory = export_batch(rig, packer, spec, Pictures(device, 4, 4, 1), 1)
    memory.order_consumer(7)
    assert rig.orders == [(0, FakeStream.handle, 7)]
    fake = next(m for m in rig.memories if m.pointer == memory.pointer)
    owner = memory.owner
    del memory
    gc.collect()
    assert fake.closed == 0, "the owner (a DLPack consumer's) keeps the memory"
    del owner
    gc.collect()
    assert fake.closed == 1
    assert [e for e in rig.calls("cpu wait") if e[1]], "without pools, cuMemFree after a wait for the copy"

    spans = [frame_words(spec, 0)]
    with pytest.raises(InvalidInputError, match="do not fit"):
        rig.exporter.batch(spans, 1, 1)
    with pytest.raises(InvalidInputError, match="at least one frame"):
        rig.exporter.batch([], 1, 1)
    batch = rig.exporter.batch(spans, max_frame_words(spec), batch_words(spec, 1))
    batch.abort()
    batch.abort()
    with pytest.raises(InvalidInputError, match="finished or aborted"):
        batch.finish()


@pytest.mark.vulkan
def test_pool_memory_is_freed_after_its_consumers_streams(
    monkeypatch: pytest.MonkeyPatch, device: Any
) -> None:
    import gc

    rig = Rig(monkeypatch, device, pool=True)
    try:
        packer = RgbTensorPass(device)
        spec = TensorSpec(4, 4)
        pictures = Pictures(device, 4, 4, 1)

        def freed(use: Any) -> list[Any]:
            memory = export_batch(rig, packer, spec, pictures, 1)
            fake = next(m for m in rig.memories if m.pointer == memory.pointer)
            use(memory)
            owner = memory.owner
            del memory
            gc.collect()
            assert fake.frees == [], "the owner (a DLPack consumer's) keeps the memory"
            del owner
            gc.collect()
            return list(fake.frees)

        assert freed(lambda m: None) == [((), False)]
        assert freed(lambda m: m.order_consumer(7)) == [((7,), False)]
        assert freed(lambda m: (m.order_consumer(7), m.order_consumer(9), m.order_consumer(7))) == [
            ((7, 9), False)
        ]
        assert freed(lambda m: m.order_consumer(None)) == [((1,), False)], "None: the legacy stream"
        assert freed(lambda m: m.order_consumer(2)) == [((2,), True)], "per-thread: another thread's"
        assert freed(lambda m: m.used_unordered()) == [((), True)]
        assert not [e for e in rig.calls("cpu wait") if e[1]], "no wait on the caller's thread"

        spans = [frame_words(spec, 0)]
        batch = rig.exporter.batch(spans, max_frame_words(spec), batch_words(spec, 1))
        aborted = rig.memories[-1]
        batch.abort()
        assert aborted.frees == [("own stream", False)]
    finally:
        rig.close()
    assert [p.closed for p in rig.pools] == [1]


class FakeDriver:
    """The driver calls a pool free makes, logged; ``bad`` streams fail to record an event."""

    def __init__(self, bad: tuple[int, ...] = ()) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.bad = bad
        self.events = 0

    def cuCtxPushCurrent(self, ctx: object) -> tuple[int]:
        return (0,)

    def cuCtxPopCurrent(self) -> tuple[int, None]:
        return (0, None)

    def cuEventCreate(self, flags: int) -> tuple[int, str]:
        self.events += 1
        return (0, f"e{self.events}")

    def cuEventRecord(self, event: str, stream: int) -> tuple[int]:
        self.log.append(("record", event, stream))
        return (400,) if stream in self.bad else (0,)

    def cuStreamWaitEvent(self, stream: object, event: str, flags: int) -> tuple[int]:
        self.log.append(("wait", stream, event))
        return (0,)

    def cuEventDestroy(self, event: str) -> tuple[int]:
        return (0,)

    def cuCtxSynchronize(self) -> tuple[int]:
        self.log.append(("synchronize",))
        return (0,)

    def cuMemFreeAsync(self, pointer: int, stream: object) -> tuple[int]:
        self.log.append(("free", pointer, stream))
        return (0,)


def _pool_memory(driver: FakeDriver, stream_handle: object) -> Any:
    from alpha2.native_gpu._cuda.interop import PoolMemory, PrimaryContext

    ctx = PrimaryContext.__new__(PrimaryContext)
    ctx._cu = driver
    ctx._holder = ["ctx"]
    ctx._local = threading.local()
    stream = SimpleNamespace(_holder=[stream_handle])
    return PoolMemory(ctx, 0xA000, 64, stream)  # type: ignore[arg-type]


def test_pool_free_waits_on_the_gpu_for_each_consumer_stream() -> None:
    driver = FakeDriver()
    _pool_memory(driver, "own").free_after((7, 9))
    assert driver.log == [
        ("record", "e1", 7),
        ("wait", "own", "e1"),
        ("record", "e2", 9),
        ("wait", "own", "e2"),
        ("free", 0xA000, "own"),
    ]

    driver = FakeDriver()
    memory = _pool_memory(driver, "own")
    memory.close()
    memory.close()
    memory.free_after((7,))
    assert driver.log == [("free", 0xA000, "own")], "freed once, after its own stream's work"

    driver = FakeDriver()
    _pool_memory(driver, "own").free_after((), everything=True)
    assert driver.log == [("synchronize",), ("free", 0xA000, "own")]

    driver = FakeDriver(bad=(9,))  # a consumer's stream that is gone: after all the device's work
    _pool_memory(driver, "own").free_after((9,))
    assert driver.log[-2:] == [("synchronize",), ("free", 0xA000, "own")]

    driver = FakeDriver()  # the copy stream is gone (the exporter closed): the legacy stream, after all
    _pool_memory(driver, None).free_after((7,))
    assert driver.log == [("synchronize",), ("free", 0xA000, 1)]


def test_a_pool_is_destroyed_only_once_its_last_allocation_is_freed() -> None:
    """Closing a pool with memory still out defers its destruction to the last free, after the device
    is done with it (on the H200 a cuMemPoolDestroy crashed in a process where a pool had been
    destroyed with an allocation still out); with nothing out it goes at once; the device's work is
    done first either way."""
    from alpha2.native_gpu._cuda.interop import PoolMemory, PrimaryContext, _PoolLife

    driver = FakeDriver()
    driver.cuMemPoolDestroy = lambda pool: driver.log.append(("destroy pool", pool)) or (0,)  # type: ignore[attr-defined]
    ctx = PrimaryContext.__new__(PrimaryContext)
    ctx._cu = driver
    ctx._holder = ["ctx"]
    ctx._local = threading.local()
    stream = SimpleNamespace(_holder=["own"])
    life = _PoolLife(driver, ctx, "pool")
    first, second = (PoolMemory(ctx, p, 64, stream, life) for p in (0xA000, 0xB000))  # type: ignore[arg-type]
    life.outstanding = 2
    life.close()
    assert driver.log == [] and life.closing, "memory is still out: the pool stays"
    first.close()
    assert ("destroy pool", "pool") not in driver.log
    second.free_after((7,))
    assert driver.log[-3:] == [("free", 0xB000, "own"), ("synchronize",), ("destroy pool", "pool")]
    life.close()
    second.close()
    assert driver.log.count(("destroy pool", "pool")) == 1

    driver.log.clear()
    idle = _PoolLife(driver, ctx, "idle pool")
    idle.close()
    assert driver.log == [("synchronize",), ("destroy pool", "idle pool")], "nothing out: destroyed at once"


def test_unavailable_reason_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from alpha2.gpu.webgpu import WebGpuDeviceInfo, WebGpuImplementation

    wgpu_device = SimpleNamespace(
        webgpu_device=object(), info=WebGpuDeviceInfo(WebGpuImplementation.WGPU, frozenset())
    )
    reason = TensorExporter.unavailable_reason(wgpu_device)
    assert reason is not None and "wgpudawn" in reason
    dawn_device = SimpleNamespace(
        webgpu_device=object(), info=WebGpuDeviceInfo(WebGpuImplementation.DAWN, frozenset())
    )
    reason = TensorExporter.unavailable_reason(dawn_device)
    assert reason is not None and "shared-texture-memory-opaque-f-d" in reason


# ---------------------------------------------------------------------------------------------------
# the front door over the fake exporter


@pytest.mark.vulkan
def test_to_tensor_takes_the_cuda_route_when_it_can(
    monkeypatch: pytest.MonkeyPatch, device: Any, tmp_path: Any
) -> None:
    pytest.importorskip("av")
    import alpha2
    from alpha2.api import tensors
    from tests.media import make_clip

    clip = make_clip(tmp_path / "clip.mp4", width=40, height=30, frames=3).path
    with alpha2.open(clip, hwaccel="none") as source:
        rig = Rig(monkeypatch, source.device.webgpu_device)
        monkeypatch.setattr(tensors._Routes, "exporter", lambda self: (rig.exporter, None))
        frames = [source.next_frame() for _ in range(2)]
        try:
            kwargs: dict[str, Any] = {
                "size": (17, 11),
                "layout": "CHW",
                "dtype": "float16",
                "mean": 0.5,
                "std": 0.25,
            }
            gpu = tensors.to_tensor(frames, require="gpu", **kwargs)
            cpu = tensors.to_tensor(frames, device="cpu", **kwargs)
            assert gpu.on_cuda and gpu.path is ExecutionPath.GPU_COPY and gpu.device == "cuda:0"
            assert gpu.report.frame_paths == (ExecutionPath.CPU_UPLOAD,) * 2
            assert gpu.report.bytes_crossed_cpu == cpu.report.bytes_crossed_cpu - batch_words(gpu.spec, 2) * 4
            assert gpu.shape == cpu.shape == (2, 3, 11, 17) and gpu.dtype == np.float16
            assert exported_bytes(rig, gpu._cuda, gpu.spec, 2) == cpu.numpy().tobytes()
            assert gpu.__dlpack_device__() == (2, 0)
            from alpha2.gpu.dlpack import live_exports

            exports = live_exports()
            capsule = gpu.__dlpack__(stream=5)
            assert type(capsule).__name__ == "PyCapsule" and rig.orders[-1][2] == 5
            assert live_exports() == exports + 1
            del capsule  # never consumed: the capsule lets go of the tensor's owner
            assert live_exports() == exports
            gpu.__dlpack__(stream=-1)
            assert len(rig.orders) == 1, "stream=-1: the consumer orders the work itself"
            with pytest.raises(InvalidInputError, match="ambiguous"):
                gpu.__dlpack__(stream=0)
            with pytest.raises(UnsupportedError, match="from_dlpack"):
                gpu.numpy()
            gpu.wait()
            assert "gpu_copy" in repr(gpu)
        finally:
            for frame in frames:
                if frame is not None:
                    frame.release()
            rig.close()


# ---------------------------------------------------------------------------------------------------
# the real thing


@pytest.mark.cuda
@pytest.mark.dawn
@pytest.mark.nvidia
def test_cuda_tensor_equals_the_cpu_path_bit_for_bit(tmp_path: Any) -> None:
    """NVDEC frames on the H200 (Dawn device with the GPU copy): the CUDA tensor, downloaded, is the CPU
    path's numpy array byte for byte, in every layout and dtype, resized, cropped and normalised."""
    pytest.importorskip("av")
    import alpha2
    from alpha2.api.tensors import close_tensor_routes, to_tensor
    from alpha2.native_gpu._cuda.core import check
    from alpha2.native_gpu.device.device import Device
    from tests.media import make_clip

    clip = make_clip(tmp_path / "clip.mp4", width=322, height=182, frames=6).path
    device = Device.open(want_gpu_copy=True)
    with alpha2.open(clip, device=device) as source:
        frames = [source.next_frame() for _ in range(5)]
        try:
            for kwargs in (
                {},
                {
                    "layout": "CHW",
                    "dtype": "float32",
                    "mean": (0.485, 0.456, 0.406),
                    "std": (0.229, 0.224, 0.225),
                },
                {"size": (97, 61), "dtype": "float16"},
                {"crop": (10, 6, 201, 143), "size": (224, 224), "layout": "CHW"},
            ):
                # route='dawn': this is the Dawn route's export (NVDEC frames go to the CUDA kernel by
                # default, tests/test_cuda_tensor_kernel.py).
                gpu = to_tensor(frames, require="gpu", route="dawn", **kwargs)
                cpu = to_tensor(frames, device="cpu", **kwargs)
                assert gpu.path is ExecutionPath.GPU_COPY and gpu.report.bytes_crossed_cpu == 0, gpu.report
                assert cpu.path is ExecutionPath.CPU_DOWNLOAD
                gpu.wait()
                host = np.empty(cpu.numpy().nbytes, np.uint8)
                ctx = interop.primary_context(int(gpu.device.split(":")[1]))
                with ctx:
                    check(ctx._cu.cuMemcpyDtoH(host.ctypes.data, gpu.data_ptr, host.nbytes), "cuMemcpyDtoH")
                assert host.tobytes() == cpu.numpy().tobytes(), kwargs
                try:
                    import torch
                except ImportError:
                    continue
                tensor = torch.from_dlpack(gpu)
                assert tensor.is_cuda and tuple(tensor.shape) == gpu.shape
                assert np.array_equal(tensor.cpu().numpy(), cpu.numpy())
        finally:
            for frame in frames:
                if frame is not None:
                    frame.release()
            close_tensor_routes(device)
    device.close()


@pytest.mark.cuda
@pytest.mark.dawn
@pytest.mark.nvidia
@pytest.mark.parametrize("copy_ahead", [None, False])
def test_frames_going_to_tensors_are_copied_ahead_by_default(tmp_path: Any, copy_ahead: bool | None) -> None:
    """NVDEC on the H200: from a source's first to_tensor on, its frames' GPU copies are made on the
    decoder's thread (counted as copied ahead); ``copy_ahead=False`` keeps them at import. The tensors
    are the same bytes either way."""
    pytest.importorskip("av")
    import alpha2
    from alpha2.api.tensors import close_tensor_routes, to_tensor
    from alpha2.native_gpu.device.device import Device
    from tests.media import make_clip

    clip = make_clip(tmp_path / "clip.mp4", width=320, height=180, frames=40).path
    device = Device.open(want_gpu_copy=True)
    options = {} if copy_ahead is None else {"copy_ahead": copy_ahead}
    with alpha2.open(clip, device=device, hwaccel="cuda", **options) as source:
        try:
            sums = []
            for frame in source:
                tensor = to_tensor(frame, require="gpu", device="cuda", route="dawn")
                sums.append(to_tensor(frame, device="cpu").numpy().sum())
                assert tensor.path is ExecutionPath.GPU_COPY
                frame.release()
            stats = source.importer.stats()
            assert len(sums) == 40
            if copy_ahead is None:
                assert stats.copied_ahead >= 30, stats  # all but those decoded before the first call
            else:
                assert stats.copied_ahead == 0, stats
        finally:
            close_tensor_routes(device)
