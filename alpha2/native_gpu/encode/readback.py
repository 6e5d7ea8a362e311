"""The CPU read-back ring: mapped buffers that carry converted frames from the GPU to a CPU encoder.

Each converted frame is copied into one slot of a ring of mappable buffers, which is then mapped
asynchronously. The CPU never waits for a frame that is not done, except when the ring is full: then the
oldest frame is waited for (bounded) and handed back. Frames come back in submission order as
:class:`~alpha2.gpu.encoded.EncodedPlanes` viewing the mapped memory (no copy); releasing
one unmaps its slot.
"""

from __future__ import annotations

import collections
import enum
import time
import weakref
from typing import Any

from alpha2.gpu.colour import ChromaLocation, ColourMatrix, ColourRange
from alpha2.gpu.encoded import EncodedPlanes
from alpha2.gpu.errors import GpuTimeoutError, InternalError, OutOfMemoryError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet
from alpha2.gpu.webgpu import polled, promise_settled, pump_events, wait_promise
from alpha2.native_gpu.encode.params import ReadbackLayout

__all__ = ["ReadbackRing", "destroy_buffers"]


class _SlotState(enum.Enum):
    FREE = "free"
    IN_FLIGHT = "in_flight"  # compute + copy submitted, map requested, not handed out yet
    HELD = "held"  # handed out as EncodedPlanes, mapped until released


class _Slot:
    __slots__ = ("buffer", "index", "promise", "pts", "sequence", "state")

    def __init__(self, index: int, buffer: Any) -> None:
        self.index = index
        self.buffer = buffer
        self.state = _SlotState.FREE
        self.promise: Any = None
        self.pts: int | None = None
        self.sequence = -1


def destroy_buffers(buffers: list[Any]) -> None:
    """Unmap and destroy ``buffers``; safe at interpreter shutdown and on a lost device."""
    for buffer in buffers:
        try:
            if str(getattr(buffer, "map_state", "unmapped")) == "mapped":
                buffer.unmap()
            buffer.destroy()
        except Exception:
            pass  # interpreter shutdown or device already lost: nothing left to free


class ReadbackRing:
    """A ring of ``ring_size`` mappable buffers, each holding one converted frame until it is released.

    Not thread-safe: the copier that owns it calls it from one thread.
    """

    def __init__(
        self,
        device: Any,
        gpu: Any,
        readback: ReadbackLayout,
        ring_size: int,
        *,
        pixel_format: PixelFormat,
        matrix: ColourMatrix,
        colour_range: ColourRange,
        chroma_location: ChromaLocation,
        copy_planes: bool,
    ) -> None:
        self.readback = readback
        """Where the planes sit in each slot."""
        self.ring_size = ring_size
        """Number of slots."""
        self.copy_planes = copy_planes
        """Whether handed-out planes are copies (True) or views of the mapped slot (False)."""
        self.bytes_read_total = 0
        """Bytes read back over the ring's life."""
        self._device = device
        self._pixel_format = pixel_format
        self._matrix = matrix
        self._colour_range = colour_range
        self._chroma_location = chroma_location
        self._closed = False
        self._sequence = 0
        self._held = 0
        self._peak_in_use = 0
        usage = gpu.BufferUsage
        self._slots = [
            _Slot(
                i,
                device.create_buffer(
                    label=f"alpha2 encode readback {i}",
                    size=readback.frame_size_bytes,
                    usage=usage.MAP_READ | usage.COPY_DST,
                ),
            )
            for i in range(ring_size)
        ]
        self._in_flight: collections.deque[_Slot] = collections.deque()
        self._handed_out: weakref.WeakSet[EncodedPlanes] = weakref.WeakSet()
        # The ring frees its own slots: a held frame keeps the ring (not the copier) alive.
        self._finalizer = weakref.finalize(self, destroy_buffers, [slot.buffer for slot in self._slots])

    @property
    def in_flight(self) -> int:
        """Frames submitted and not yet handed out."""
        return len(self._in_flight)

    @property
    def held(self) -> int:
        """Frames handed out and not yet released."""
        return self._held

    @property
    def peak_slots_in_use(self) -> int:
        """Most slots in use (in flight or held) at once."""
        return self._peak_in_use

    def take_free_slot(self) -> _Slot:
        """A free slot for the next frame.

        Raises:
            OutOfMemoryError: every slot is held by an unreleased frame.
        """
        slot = self._free_slot()
        if slot is None:
            raise OutOfMemoryError(
                f"EncodeCopier: all {self.ring_size} read-back slots are held by unreleased "
                "EncodedPlanes; release() each returned frame (or use it in a with block) before the next "
                "submit, or make the copier with copy_planes=True or a larger ring_size"
            )
        return slot

    def start(self, slot: _Slot, pts: int | None) -> None:
        """The copy into ``slot`` was submitted: map it asynchronously and queue it for hand-out."""
        slot.pts = pts
        slot.sequence = self._sequence
        self._sequence += 1
        slot.promise = polled(slot.buffer.map_async("READ", 0, self.readback.frame_size_bytes))
        slot.state = _SlotState.IN_FLIGHT
        self._in_flight.append(slot)
        self._note_usage()

    def full(self) -> bool:
        """Whether no slot is free (the next submission would need one handed out and released first)."""
        return self._free_slot() is None

    def collect(self, *, block_for_one: bool, timeout: float) -> list[EncodedPlanes]:
        """Frames that are done, oldest first; with ``block_for_one``, wait up to ``timeout`` for one.

        Raises:
            GpuTimeoutError: the oldest frame did not finish in time (it stays in flight).
        """
        ready: list[EncodedPlanes] = []
        if self._in_flight:
            pump_events(self._device)
        if block_for_one and self._in_flight:
            ready.append(self._take_oldest(timeout))
        while self._in_flight and promise_settled(self._in_flight[0].promise):
            ready.append(self._take_oldest(0.0))
        return ready

    def next_frame(self, timeout: float) -> EncodedPlanes | None:
        """Wait up to ``timeout`` for the oldest in-flight frame; None when nothing is in flight.

        Raises:
            GpuTimeoutError: it did not finish in time (it stays in flight).
        """
        if not self._in_flight:
            return None
        return self._take_oldest(timeout)

    def close(self, timeout: float) -> None:
        """Wait (bounded) for in-flight maps, invalidate held frames, destroy the slots. Idempotent."""
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + timeout
        for slot in self._slots:
            if slot.state is _SlotState.IN_FLIGHT and self._settle(
                slot, max(0.0, deadline - time.monotonic())
            ):
                try:
                    slot.promise.sync_wait()
                except Exception:
                    pass  # a failed map leaves nothing to unmap
        for frame in list(self._handed_out):
            frame._invalidate()
        self._in_flight.clear()
        self._finalizer()

    # -- internals ------------------------------------------------------------------------------------

    def _free_slot(self) -> _Slot | None:
        for slot in self._slots:
            if slot.state is _SlotState.FREE:
                return slot
        return None

    def _note_usage(self) -> None:
        in_use = sum(1 for slot in self._slots if slot.state is not _SlotState.FREE)
        self._peak_in_use = max(self._peak_in_use, in_use)

    def _take_oldest(self, timeout: float) -> EncodedPlanes:
        slot = self._in_flight.popleft()
        self._wait_slot(slot, timeout)  # puts the slot back at the head when it times out
        return self._hand_out(slot)

    def _settle(self, slot: _Slot, timeout: float) -> bool:
        """Wait up to ``timeout`` for the slot's map; True when settled (mapped or failed)."""
        return wait_promise(slot.promise, timeout, self._device)

    def _wait_slot(self, slot: _Slot, timeout: float) -> None:
        if not self._settle(slot, timeout):
            self._in_flight.appendleft(slot)
            raise GpuTimeoutError(
                f"EncodeCopier: frame {slot.sequence} (pts {slot.pts}) was not read back within "
                f"{timeout:.3g} s; the GPU is busy or hung (raise the timeout with wait_timeout_s)"
            )
        try:
            slot.promise.sync_wait()  # settled: resolves it (marks the buffer mapped), no wait
        except Exception as exc:
            slot.state = _SlotState.FREE
            slot.promise = None
            raise InternalError(f"EncodeCopier: mapping read-back slot {slot.index} failed: {exc}") from exc
        slot.promise = None

    def _hand_out(self, slot: _Slot) -> EncodedPlanes:
        layout = self.readback
        size = layout.frame_size_bytes
        views: tuple[memoryview, ...]
        if self.copy_planes:
            data = slot.buffer.read_mapped(0, size, copy=True)
            slot.buffer.unmap()
            slot.state = _SlotState.FREE
            on_release = None
            keep_alive: object = data
            mapped = memoryview(data)
        else:
            mapped = slot.buffer.read_mapped(0, size, copy=False)
            slot.state = _SlotState.HELD
            self._held += 1
            on_release = _SlotReleaser(self, slot)
            keep_alive = slot.buffer
        y_view = mapped[: layout.uv_offset_bytes]
        uv_view = mapped[layout.uv_offset_bytes : size]
        views = (y_view, uv_view)
        planes = CpuPlaneSet(
            planes=(
                CpuPlane(
                    data=y_view,
                    bytes_per_row=layout.bytes_per_row,
                    width_bytes=layout.width_bytes,
                    height=layout.height,
                    keep_alive=keep_alive,
                ),
                CpuPlane(
                    data=uv_view,
                    bytes_per_row=layout.bytes_per_row,
                    width_bytes=layout.width_bytes,
                    height=layout.height // 2,
                    keep_alive=keep_alive,
                ),
            ),
            keep_alive=keep_alive,
        )
        self.bytes_read_total += size
        frame = EncodedPlanes(
            planes=planes,
            pixel_format=self._pixel_format,
            width=layout.width,
            height=layout.height,
            pts=slot.pts,
            matrix=self._matrix,
            colour_range=self._colour_range,
            chroma_location=self._chroma_location,
            bytes_read=size,
            sequence=slot.sequence,
            on_release=on_release,
            views=() if self.copy_planes else views,
        )
        if not self.copy_planes:
            self._handed_out.add(frame)
        return frame

    def _release_slot(self, slot: _Slot) -> None:
        if slot.state is not _SlotState.HELD:
            return
        self._held -= 1
        if not self._closed:
            slot.buffer.unmap()
        slot.state = _SlotState.FREE


class _SlotReleaser:
    """Callback of one handed-out frame. Holds the ring, so its buffers (and the mapped memory the frame
    views) stay alive until the frame is released, even when the application drops the copier."""

    __slots__ = ("_ring", "_slot")

    def __init__(self, ring: ReadbackRing, slot: _Slot) -> None:
        self._ring: ReadbackRing | None = ring
        self._slot = slot

    def __call__(self) -> None:
        ring, self._ring = self._ring, None
        if ring is not None:
            ring._release_slot(self._slot)
