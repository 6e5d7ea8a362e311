"""RGB tensors out to CUDA on the GPU: Dawn packs them into shared storage textures, CUDA copies them out.

The export direction of the GPU copy (:mod:`.cuda_vk` is the import): a Dawn device cannot share a
buffer with CUDA on Vulkan, but it shares textures. So :class:`~alpha2.native_gpu.render.tensor.RgbTensorPass`
packs each frame's tensor words into an rgba8uint storage texture (a word a texel, rows of
``row_words``) that lives in exportable Vulkan memory, and CUDA copies the words out into one linear
allocation for the batch, which the front door hands out through DLPack. No byte crosses the CPU.

The textures are ring slots of one plane (:class:`~alpha2.native_gpu.interop.ring.RingSlot`, kept by a
:class:`~alpha2.native_gpu.interop.ring.Ring` per texture size, counted against a
:class:`~alpha2.gpu.budget.MemoryBudget`), made as the GPU copy's are:

* Vulkan (``_vk.export``): an OPTIMAL R8G8B8A8_UINT image with STORAGE usage on dedicated OPAQUE_FD
  memory, moved once to GENERAL and released to ``VK_QUEUE_FAMILY_EXTERNAL``; a binary semaphore.
* CUDA (``_cuda.interop`` through :func:`~alpha2.native_gpu.interop.cuda.import_plane_image`): the
  memory as a mipmapped array of uchar4, the semaphore imported to signal.
* Dawn (:mod:`.dawn_planes`): the memory as a SharedTextureMemory with a texture and a view, the
  semaphore as a SharedFence.

Per chunk of a batch's frames (:class:`ExportBatch`; up to :data:`CHUNK_WORDS` words, one frame when
a frame is larger): Dawn ``begin_access`` on the slot's texture, waiting on its semaphore when CUDA
read the slot before (the slot's last copy out is done before Dawn writes it again); the chunk's
renders and packs, one submission; ``end_access``, whose fence (an opaque-fd semaphore) CUDA imports
and waits on, on alpha2's copy stream; ``cuMemcpy2DAsync`` from the array into the batch's allocation
at the chunk's first word; a signal of the slot's semaphore; an event, after which the fence's import is
closed (:class:`~alpha2.native_gpu.interop.cuda.CopyCompletions`). A consumer's CUDA stream waits for the
copy stream through an event (``_cuda.streams.order_consumer_stream``), on the GPU. A slot that fails
half-way is retired (destroyed once its CUDA work is done), never reused in an unknown state.

Requirements are those of the GPU copy (a wgpudawn device with 'shared-texture-memory-opaque-f-d' and
'shared-fence-vk-semaphore-opaque-f-d', its Vulkan and CUDA twins by UUID), plus exportable STORAGE
images of R8G8B8A8_UINT: :meth:`TensorExporter.unavailable_reason` says which is missing.

Usage (the front door, :func:`alpha2.api.tensors.to_tensor`, does this)::

    exporter = TensorExporter.create(device)                 # an alpha2 Device on Dawn
    spans = [frame_words(spec, n) for n in range(count)]
    batch = exporter.batch(spans, max_frame_words(spec), batch_words(spec, count))
    packer.pack_into_textures(spec, count, encode_render, batch)
    memory = batch.finish()            # CudaTensorMemory: pointer, owner, order_consumer(stream)
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from alpha2.gpu.budget import MemoryBudget
from alpha2.gpu.errors import Error, GpuTimeoutError, InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat, PlaneFormat
from alpha2.gpu.webgpu import polled, wait_promise
from alpha2.native_gpu._vk.export import DEFAULT_PLANE_USAGE
from alpha2.native_gpu.interop import dawn_planes
from alpha2.native_gpu.interop.cpu_upload import PlaneGeometry
from alpha2.native_gpu.interop.cuda import (
    CopyCompletions,
    abandon_copy,
    import_plane_image,
    order_after_last_access,
    slot_work_done,
    wait_release_fences,
)
from alpha2.native_gpu.interop.ring import Ring, RingKey, RingSlot, wait_sync_fds

if TYPE_CHECKING:
    from alpha2.native_gpu._cuda.interop import CudaEvent, DeviceMemory, PoolMemory, StreamOrderedPool
    from alpha2.native_gpu.device.shared import SharedVulkanContext

__all__ = [
    "CHUNK_WORDS",
    "EXPORT_IMAGE_USAGE",
    "EXPORT_TEXTURE_FORMAT",
    "KEEP_POOL_BYTES",
    "CudaTensorMemory",
    "ExportBatch",
    "TensorExporter",
    "cuda_tensor_memory",
    "export_geometry",
]

VK_FORMAT_R8G8B8A8_UINT = 41
_USAGE_STORAGE = 0x8  # VK_IMAGE_USAGE_STORAGE_BIT
EXPORT_IMAGE_USAGE = DEFAULT_PLANE_USAGE | _USAGE_STORAGE
"""TRANSFER_SRC | TRANSFER_DST | SAMPLED | STORAGE: Dawn writes the image as a storage texture."""
EXPORT_TEXTURE_FORMAT = "rgba8uint"
"""The WebGPU format of the export textures: one tensor word a texel (RgbTensorPass's storage format)."""
MAX_ROW_WORDS = 4096
"""Words (texels) a row of an export texture holds at most: 16 KiB rows, whole ones copied in one go."""
DEFAULT_EXPORT_SLOTS = 2
"""Export textures per size a batch rotates through: Dawn packs one while CUDA copies out the other."""
CHUNK_WORDS = 8 << 20
"""Words (32 MiB) of frames packed into one export texture in one submission, at most (a frame larger
goes alone)."""
_DEFAULT_MAX_DIMENSION = 8192


def export_geometry(words: int, max_dimension: int = _DEFAULT_MAX_DIMENSION) -> PlaneGeometry:
    """The export texture of one frame's ``words``: up to :data:`MAX_ROW_WORDS` a row, as many rows as
    needed. Described as an RGBA8 plane: four bytes a texel, which CUDA maps as uchar4.

    Raises:
        UnsupportedError: the frame needs more rows than a texture of the device may have.
    """
    if words < 1:
        raise InvalidInputError(f"an export texture holds at least one word, got {words}")
    row_words = min(MAX_ROW_WORDS, words, max_dimension)
    rows = -(-words // row_words)
    if rows > max_dimension:
        raise UnsupportedError(
            f"one frame's tensor is {words * 4} bytes, more than an export texture holds on this device "
            f"({row_words * max_dimension * 4} bytes); ask for a smaller size, or uint8"
        )
    return PlaneGeometry(PlaneFormat.RGBA8, EXPORT_TEXTURE_FORMAT, row_words, rows)


def _export_key(geometry: PlaneGeometry) -> RingKey:
    # The ring's pool is keyed by stream; the export textures' "stream" is their size. PixelFormat.RGBA:
    # one 4-byte-a-texel plane, which is what a texture of words is.
    return RingKey(0, 0, PixelFormat.RGBA, (geometry,))


class _Span(Protocol):
    """A frame's words in the batch (:class:`~alpha2.native_gpu.render.tensor.WordSpan`)."""

    @property
    def first_word(self) -> int: ...

    @property
    def words(self) -> int: ...


@dataclass(eq=False)
class CudaTensorMemory:
    """A packed batch in CUDA device memory: what :meth:`ExportBatch.finish` hands out."""

    pointer: int
    """Device address of the first byte (the first frame's first element)."""
    size_bytes: int
    """Bytes of the allocation (whole words: the tensor may end before)."""
    ordinal: int
    """The CUDA device."""
    owner: _TensorOwner
    """Keeps the memory allocated: hand it to DLPack consumers; freed once they and this are gone."""
    producer_stream: Any
    """The CUDA stream the copies were enqueued on."""
    done: CudaEvent
    """Recorded after the batch's last copy."""

    def order_consumer(self, consumer_stream: int | None) -> None:
        """Make a consumer's CUDA stream (a DLPack ``stream`` value) wait for the copies, on the GPU; the
        memory's free will wait for the work that stream has enqueued by then."""
        from alpha2.native_gpu._cuda import streams

        streams.order_consumer_stream(self.ordinal, int(self.producer_stream), consumer_stream)
        self.owner.used_on(streams.consumer_stream_handle(consumer_stream))

    def used_unordered(self) -> None:
        """The memory was handed out without a stream (DLPack ``stream=-1``, the raw address): its free
        waits for all the device's work."""
        self.owner.used_on(None)

    def wait(self, timeout_s: float) -> None:
        """Block until the copies are done.

        Raises:
            GpuTimeoutError: they were not done within ``timeout_s``.
        """
        self.done.wait(timeout_s, "the copy of an RGB tensor out of its export textures")


_CU_STREAM_PER_THREAD = 0x2
KEEP_POOL_BYTES = 256 << 20
"""Bytes of freed tensor memory the exporter's CUDA pool keeps for the next batches."""


class _TensorOwner:
    """The allocation of a handed-out batch, freed once it and its consumers' tensors are dropped.

    Pool memory (:class:`~alpha2.native_gpu._cuda.interop.PoolMemory`) is freed in stream order: after
    the copies, and after the work its consumers' streams had enqueued when it was dropped (the streams
    their DLPack ``stream`` named, as torch's ``record_stream`` does), with no wait on the CPU. Memory
    handed out without a stream, or used on a per-thread default stream (which names another stream on
    the thread that frees), is freed after all the device's work. Plain ``cuMemAlloc`` memory (no pools)
    is freed once the copies are done (bounded), by ``cuMemFree``, which waits for the device.
    """

    __slots__ = ("__weakref__", "_consumers", "memory")

    def __init__(self, memory: DeviceMemory | PoolMemory, done: CudaEvent, timeout_s: float) -> None:
        self.memory = memory
        self._consumers: list[int | None] = []
        # Not at exit: the driver tears its contexts down, and a wait then would only stall the exit.
        weakref.finalize(self, _free_when_done, memory, done, timeout_s, self._consumers).atexit = False

    def used_on(self, stream: int | None) -> None:
        """Note a stream (a CUstream handle; None: unknown) the memory is used on."""
        if stream not in self._consumers:
            self._consumers.append(stream)


def _free_when_done(
    memory: DeviceMemory | PoolMemory, done: CudaEvent, timeout_s: float, consumers: Sequence[int | None] = ()
) -> None:
    free_after = getattr(memory, "free_after", None)  # PoolMemory: freed in stream order
    if free_after is not None:
        known = all(c is not None and c != _CU_STREAM_PER_THREAD for c in consumers)
        free_after(tuple(c for c in consumers if c is not None), everything=not known)
        return
    try:
        done.wait(timeout_s, "the copy of an RGB tensor")
    except Error:
        pass  # a failed context runs nothing more; a copy past the timeout: cuMemFree still waits for it
    memory.close()


def cuda_tensor_memory(
    memory: DeviceMemory | PoolMemory,
    done: CudaEvent,
    *,
    ordinal: int,
    producer_stream: Any,
    timeout_s: float,
) -> CudaTensorMemory:
    """A tensor's CUDA memory written by work on ``producer_stream`` (``done`` recorded after it), as
    :meth:`ExportBatch.finish` hands its own out: kept until it and its consumers' tensors are dropped,
    then freed in stream order (pool memory) or once ``done`` is reached (``cuMemAlloc`` memory). The
    CUDA tensor kernel's memory (:mod:`alpha2.native_gpu.render.cuda_tensor`) goes out this way."""
    return CudaTensorMemory(
        pointer=memory.pointer,
        size_bytes=memory.size_bytes,
        ordinal=ordinal,
        owner=_TensorOwner(memory, done, timeout_s),
        producer_stream=producer_stream,
        done=done,
    )


@dataclass(frozen=True)
class _Chunk:
    """Frames ``first`` to ``end - 1`` of a batch, packed into one export texture, copied out at once."""

    first: int
    end: int
    first_word: int
    """The chunk's first word in the batch."""
    words: int


def _chunks(spans: Sequence[_Span], limit_words: int) -> list[_Chunk]:
    """The batch's frames in runs of at most ``limit_words`` words (a frame larger: a chunk of its own)."""
    chunks: list[_Chunk] = []
    start = 0
    while start < len(spans):
        first_word = spans[start].first_word
        end = start + 1
        while end < len(spans) and spans[end].first_word + spans[end].words - first_word <= limit_words:
            end += 1
        last = spans[end - 1]
        chunks.append(_Chunk(start, end, first_word, last.first_word + last.words - first_word))
        start = end
    return chunks


def _texture_words(words: int, max_dimension: int) -> int:
    """Words an export texture for ``words`` holds: past one row, rounded up to a power of two (whole
    rows), so that batches of nearby sizes share the ring's textures; never past what a texture holds."""
    if words <= MAX_ROW_WORDS:
        return words
    rounded = 1 << (words - 1).bit_length()
    return rounded if rounded <= MAX_ROW_WORDS * max_dimension else words


class ExportBatch:
    """One batch's export: frames packed by Dawn into the ring's textures, copied out by CUDA.

    The frames go in chunks (up to :data:`CHUNK_WORDS` words, or one frame where a frame is larger):
    a chunk's frames are packed into one export texture in one submission, whose words CUDA copies out
    with one copy, so a batch of N small frames costs one Dawn submission and one access to shared
    memory, not N. The :class:`~alpha2.native_gpu.render.tensor.TextureFrames` that
    ``RgbTensorPass.pack_into_textures`` drives: :meth:`begin_frame` before a frame's pack is encoded,
    :meth:`end_frame` after a submission that :meth:`ends_chunk` asked for; then :meth:`finish` (or
    :meth:`abort`, which the pass calls on a failure). Made by :meth:`TensorExporter.batch`.
    """

    def __init__(
        self,
        exporter: TensorExporter,
        spans: Sequence[_Span],
        chunks: Sequence[_Chunk],
        key: RingKey,
        total_words: int,
    ) -> None:
        self._exporter = exporter
        self._spans = list(spans)
        self._chunks = list(chunks)
        self._chunk_of = [n for n, c in enumerate(self._chunks) for _ in range(c.first, c.end)]
        self._begun: set[int] = set()
        self._key = key
        self.row_words = key.geometry[0].width
        """Words a row of the export textures holds."""
        self._memory: DeviceMemory | PoolMemory | None = exporter._allocate(total_words * 4)
        self._slots: list[RingSlot] = []
        self._rotation = max(1, min(len(self._chunks), exporter.slots))
        self._finished = False

    @property
    def chunk_count(self) -> int:
        """Chunks (submissions, export textures used in turn) of the batch."""
        return len(self._chunks)

    def _slot(self, chunk: int) -> RingSlot:
        place = chunk % self._rotation
        if place == len(self._slots):
            slot, _reused = self._exporter._ring.take(self._key, self._exporter._wait_timeout())
            self._slots.append(slot)
        return self._slots[place]

    def frame_base(self, index: int) -> int:
        """Where frame ``index``'s words start in its chunk's texture (row after row of
        :attr:`row_words`)."""
        return self._spans[index].first_word - self._chunks[self._chunk_of[index]].first_word

    def ends_chunk(self, index: int) -> bool:
        """Whether frame ``index`` is its chunk's last: the pass submits after it and calls
        :meth:`end_frame`."""
        return index == self._chunks[self._chunk_of[index]].end - 1

    def begin_frame(self, index: int) -> Any:
        """The storage view frame ``index``'s pack writes: its chunk's export texture, whose Dawn access
        begins with the chunk's first frame (after CUDA's last copy out of the texture, on the GPU)."""
        chunk = self._chunk_of[index]
        slot = self._slot(chunk)
        plane = slot.planes[0]
        if chunk not in self._begun:
            try:
                dawn_planes.begin_access(slot, [1] if plane.uses else None)
            except BaseException:
                slot.broken = True
                raise
            self._begun.add(chunk)
        return plane.view

    def end_frame(self, index: int) -> None:
        """Once the submission with frame ``index`` went, if it ends its chunk: end Dawn's access, and copy
        the chunk's words out on CUDA's copy stream, after Dawn's end-of-access fence."""
        chunk_index = self._chunk_of[index]
        if not self.ends_chunk(index) or chunk_index not in self._begun:
            return  # more frames to pack into the texture, or a chunk with no words of its own
        exporter = self._exporter
        slot = self._slot(chunk_index)
        plane = slot.planes[0]
        chunk = self._chunks[chunk_index]
        memory = self._memory
        assert memory is not None, "finish() or abort() ran"
        copy_enqueued = False
        try:
            self._begun.discard(chunk_index)
            dawn_planes.end_plane(plane, collect_fences=True)
            if not plane.release_fence_fds and not plane.release_sync_fds:
                exporter._wait_dawn_queue()  # no fence to hand to CUDA: the CPU waits for Dawn's work
            wait_sync_fds(slot, exporter._wait_timeout())
            ctx, stream = exporter._ctx, exporter._stream
            with ctx:
                handle = stream.handle
                copy_enqueued = True
                wait_release_fences(ctx, slot, handle)
                cu_image, cu_semaphore = plane.cu_image, plane.cu_semaphore
                assert cu_image is not None and cu_semaphore is not None, "made with the slot"
                from alpha2.native_gpu._cuda import interop

                interop.copy_array_to_device(
                    ctx, cu_image, memory.pointer + chunk.first_word * 4, chunk.words * 4, handle
                )
                cu_semaphore.signal(handle)  # Dawn's next access to the slot waits on it
                plane.uses += 1
                copy_done = slot.copy_done
                assert copy_done is not None, "made with the slot"
                copy_done.record(handle)
                event = exporter._copies.event()
                event.record(handle)
            waited, slot.waited = slot.waited, []
            exporter._copies.add(event, None, waited)
        except BaseException:
            slot.broken = True
            if copy_enqueued:
                abandon_copy(slot, exporter._stream, exporter._wait_timeout())
            raise

    def finish(self) -> CudaTensorMemory:
        """The batch's memory, once every frame is ended; the textures go back to the ring.

        Raises:
            InvalidInputError: finished (or aborted) already.
        """
        from alpha2.native_gpu._cuda import interop

        memory = self._memory
        if memory is None or self._finished:
            raise InvalidInputError("this export batch was finished or aborted already")
        exporter = self._exporter
        self._finished = True
        self._memory = None
        self._give_back()
        done = interop.CudaEvent(exporter._ctx)
        done.record(exporter._stream.handle)
        owner = _TensorOwner(memory, done, exporter._wait_timeout())
        return CudaTensorMemory(
            pointer=memory.pointer,
            size_bytes=memory.size_bytes,
            ordinal=exporter.cuda_ordinal,
            owner=owner,
            producer_stream=exporter._stream.handle,
            done=done,
        )

    def abort(self) -> None:
        """End what began; the slots used are retired (their state is unknown), the memory freed once
        the copies that reached the stream are done. Idempotent."""
        if self._finished:
            return
        self._finished = True
        for slot in self._slots:
            plane = slot.planes[0]
            if plane.accessing:
                slot.broken = True
                try:
                    dawn_planes.end_plane(plane, collect_fences=True)
                except BaseException:
                    pass  # retired either way
        self._give_back()
        memory, self._memory = self._memory, None
        if memory is not None:
            try:
                with self._exporter._ctx:
                    self._exporter._stream_done(memory)
            except Error:
                memory.close()

    def _give_back(self) -> None:
        slots, self._slots = self._slots, []
        for slot in slots:
            self._exporter._ring.give_back(slot, broken=slot.broken)


class TensorExporter:
    """Export textures (a ring per size) and the CUDA copy stream of one Dawn device.

    Thread-safe for batches made one at a time on one thread; :meth:`close` once done (or let the
    Device's shared Vulkan context go: the objects have GC backstops).
    """

    def __init__(
        self,
        device: Any,
        *,
        context: SharedVulkanContext,
        cuda_ordinal: int,
        slots: int = DEFAULT_EXPORT_SLOTS,
        wait_timeout: Callable[[], float],
        memory_budget: MemoryBudget | None = None,
        max_dimension: int = _DEFAULT_MAX_DIMENSION,
    ) -> None:
        """Args:
        device: the ``wgpudawn`` GPUDevice the frames are rendered and packed on.
        context: the SharedVulkanContext on the same GPU (it owns the export images).
        cuda_ordinal: the CUDA device of the same GPU.
        slots: export textures per size (a batch rotates through them).
        wait_timeout: the GPU wait timeout, asked at each wait.
        memory_budget: where the export textures are counted (Vulkan memory); None: not counted.
        max_dimension: the largest texture side the device takes.
        """
        from alpha2.native_gpu._cuda import interop
        from alpha2.native_gpu.device.shared import QueueRole

        if slots < 1:
            raise InvalidInputError(f"slots must be at least 1, got {slots}")
        self._device = device
        self._context = context
        self._vk = context._internal
        self._queue_family = context.queue_families[QueueRole.GRAPHICS]
        self.cuda_ordinal = cuda_ordinal
        """The CUDA device the batches are copied to."""
        self.slots = slots
        """Export textures per size."""
        self.max_dimension = max_dimension
        """The largest texture side used."""
        self._wait_timeout = wait_timeout
        self._ctx = interop.primary_context(cuda_ordinal)
        self._stream = interop.CopyStream(self._ctx)
        self._pool: StreamOrderedPool | None = None
        try:
            self._pool = interop.StreamOrderedPool(self._ctx, keep_bytes=KEEP_POOL_BYTES)
        except UnsupportedError:
            pass  # no memory pools on this device: cuMemAlloc / cuMemFree, which wait for the device
        self._copies = CopyCompletions(self._ctx, wait_timeout)
        self._lock = threading.Lock()
        self._closed = False
        self._ring = Ring(
            create=self._new_slot,
            work_done=slot_work_done,
            order_after_last_access=lambda slot: order_after_last_access(
                self._ctx, slot, self._stream, wait_timeout()
            ),
            destroy=self._destroy_slot,
            per_key=slots,
            memory_budget=memory_budget,
        )

    # -- whether it can be had -------------------------------------------------------------------------

    @classmethod
    def unavailable_reason(cls, device: Any) -> str | None:
        """Why tensors of frames rendered on ``device`` (an alpha2 Device) cannot go to CUDA on the GPU;
        None when they can. Opens the Device's shared Vulkan context to ask. Never raises."""
        try:
            _context_of(device)
        except UnsupportedError as exc:
            return exc.message
        except Error as exc:
            return f"{type(exc).__name__}: {exc.message}"
        return None

    @classmethod
    def create(
        cls,
        device: Any,
        *,
        slots: int = DEFAULT_EXPORT_SLOTS,
        memory_budget: MemoryBudget | None = None,
        wait_timeout: Callable[[], float] | None = None,
    ) -> TensorExporter:
        """The exporter of an alpha2 Device on Dawn.

        Raises:
            UnsupportedError: the device cannot export (the reason :meth:`unavailable_reason` gives).
        """
        from alpha2.native_gpu.device.waits import gpu_wait_timeout

        context, ordinal = _context_of(device)
        limits = getattr(device.webgpu_device, "limits", None) or {}
        max_dimension = int(limits.get("max-texture-dimension-2d", _DEFAULT_MAX_DIMENSION))
        return cls(
            device.webgpu_device,
            context=context,
            cuda_ordinal=ordinal,
            slots=slots,
            wait_timeout=wait_timeout or gpu_wait_timeout,
            memory_budget=memory_budget,
            max_dimension=max_dimension,
        )

    # -- batches ---------------------------------------------------------------------------------------

    def cuda_current(self) -> Any:
        """A context manager that keeps the exporter's CUDA context current on this thread: the many
        short driver calls of a batch (the frames' imports, the copies out) then push and pop it once,
        not each time (the primary context is shared with the GPU copy's importer)."""
        return self._ctx

    def batch(self, spans: Sequence[_Span], frame_words_max: int, total_words: int) -> ExportBatch:
        """A batch whose frame ``n`` writes ``spans[n].words`` words at word ``spans[n].first_word`` of a
        ``total_words`` allocation; its textures hold ``frame_words_max`` words.

        Raises:
            InvalidInputError: no frames, a span outside the allocation, or the exporter is closed.
            UnsupportedError: a frame larger than an export texture.
            CudaError: the allocation failed.
        """
        if not spans:
            raise InvalidInputError("an export batch needs at least one frame")
        for span in spans:
            if span.words > frame_words_max or span.first_word + span.words > total_words:
                raise InvalidInputError(
                    f"frame words {span.first_word}..{span.first_word + span.words} do not fit textures of "
                    f"{frame_words_max} words and an allocation of {total_words}"
                )
        with self._lock:
            if self._closed:
                raise InvalidInputError("the tensor exporter is closed")
        with self._ctx:
            self._ring.poll()
        capacity = MAX_ROW_WORDS * self.max_dimension
        chunks = _chunks(spans, min(max(CHUNK_WORDS, frame_words_max), capacity))
        words = max(max(c.words for c in chunks), 1)
        if words > capacity:  # one frame larger than a texture: say so in the frame's terms
            export_geometry(words, self.max_dimension)
        key = _export_key(export_geometry(_texture_words(words, self.max_dimension), self.max_dimension))
        return ExportBatch(self, spans, chunks, key, total_words)

    # -- slots ----------------------------------------------------------------------------------------

    def _new_slot(self, key: RingKey) -> RingSlot:
        """An export texture: the Vulkan image and semaphore, imported into CUDA and Dawn; undone on
        failure."""
        from alpha2.native_gpu._cuda import interop
        from alpha2.native_gpu._vk import export

        slot = RingSlot.for_key(key)
        plane = slot.planes[0]
        g = plane.geometry
        extras = dawn_planes.dawn_extras()
        try:
            image = export.ExportableImage(
                self._vk, g.width, g.height, VK_FORMAT_R8G8B8A8_UINT, usage=EXPORT_IMAGE_USAGE
            )
            plane.vk_image = image
            export.transition_for_external(self._vk, [image], self._queue_family, self._wait_timeout())
            semaphore = export.ExportableSemaphore(self._vk, timeline=False)
            plane.semaphore = semaphore
            import_plane_image(self._ctx, plane, image.export_memory_fd(), image.size_bytes)
            plane.cu_semaphore = interop.ExternalSemaphore(self._ctx, semaphore.export_fd(), timeline=False)
            dawn_planes.import_plane(self._device, image, plane, 0)
            with semaphore.export_fd() as semaphore_fd:
                plane.fence = extras.import_shared_fence(
                    self._device,
                    label="alpha2 tensor copied out",
                    vk_semaphore_opaque_fd=semaphore_fd.fileno(),
                )
            slot.copy_done = interop.CudaEvent(self._ctx)
        except BaseException:
            self._destroy_slot(slot)
            raise
        return slot

    def _destroy_slot(self, slot: RingSlot) -> None:
        slot.destroy_objects(functools.partial(dawn_planes.end_plane, collect_fences=False))

    def _wait_dawn_queue(self) -> None:
        """Wait (bounded) on the CPU for the work submitted to Dawn's queue so far."""
        promise = polled(self._device.queue.on_submitted_work_done_async())
        if not wait_promise(promise, self._wait_timeout(), self._device):
            raise GpuTimeoutError(
                "Dawn's pack of an RGB tensor did not finish within the GPU wait timeout (raise it with "
                "set_gpu_wait_timeout)"
            )
        promise.sync_wait()

    def _allocate(self, size_bytes: int) -> DeviceMemory | PoolMemory:
        """A batch's memory: from the stream-ordered pool (no wait on the CPU), else ``cuMemAlloc``."""
        from alpha2.native_gpu._cuda import interop

        if self._pool is not None:
            return self._pool.allocate(size_bytes, self._stream)
        return interop.DeviceMemory(self._ctx, size_bytes)

    def _stream_done(self, memory: DeviceMemory | PoolMemory) -> None:
        """Free ``memory`` once the copy stream's work so far is done (bounded for plain memory)."""
        from alpha2.native_gpu._cuda import interop

        if hasattr(memory, "free_after"):  # PoolMemory
            memory.close()  # in the copy stream's order
            return
        done = interop.CudaEvent(self._ctx)
        done.record(self._stream.handle)
        _free_when_done(memory, done, self._wait_timeout())
        done.close()

    # -- reports and teardown -------------------------------------------------------------------------

    def counts(self) -> tuple[int, int]:
        """(export textures alive, idle ones)."""
        return self._ring.counts()

    def close(self) -> None:
        """Wait (bounded) for the copies in flight, destroy the textures and the stream. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        timeout_s = self._wait_timeout()
        self._copies.close(timeout_s)
        self._ring.close()
        deadline = time.monotonic() + timeout_s
        while True:
            with self._ctx:
                self._ring.poll()
            if not self._ring.has_retired() or time.monotonic() >= deadline:
                break
            time.sleep(0.001)
        for slot in self._ring.take_retired():  # still running after the timeout: the context's teardown
            self._vk.defer_destroy(functools.partial(self._ring.destroy, slot))
        if self._pool is not None:
            self._pool.close()  # destroyed once the tensors still handed out are freed
        self._stream.close()


def _context_of(device: Any) -> tuple[SharedVulkanContext, int]:
    """The shared Vulkan context and CUDA ordinal of an alpha2 Device that can export tensors.

    Raises:
        UnsupportedError: why it cannot (the GPU copy's requirements, or no exportable storage image).
    """
    from alpha2.native_gpu._vk import export
    from alpha2.native_gpu.interop.cuda_vk import CudaVkPairing, _find_shared_devices

    info = device.info
    reason = CudaVkPairing.unavailable_reason(device.webgpu_device, info, {})
    if reason is not None:
        raise UnsupportedError(reason)
    found = _find_shared_devices(info, {"gpu_device": device})
    support = export.external_image_support(
        found.context._internal, VK_FORMAT_R8G8B8A8_UINT, EXPORT_IMAGE_USAGE
    )
    if not support.exportable:
        raise UnsupportedError(
            "the Vulkan device cannot export R8G8B8A8_UINT storage images: "
            f"{support.reason or 'no reason given'}"
        )
    return found.context, found.cuda_ordinal
