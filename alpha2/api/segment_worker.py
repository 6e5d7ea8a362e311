"""A segment decoder process: one DecodeSession that decodes its chunks of a file into memory the reader
maps.

Started by :class:`~alpha2.api.segments.SegmentReader` (``decoders='processes'``) as
``python -m alpha2.api.segment_worker FD``, FD being its end of a ``SOCK_SEQPACKET`` socket pair; the
messages are :mod:`.decode_worker`'s (a pickled tuple per record, file descriptors beside it by
``SCM_RIGHTS``). Both ends are alpha2's own, made by the same user.

The conversation, reader (R) and this process (W):

* R: ``("open", options)`` -- the source, hwaccel and placement, the session's other options
  (``session``: ``stream_index``, ``threads``...), this process's chunks (index, start and end
  timestamps, the seek time), and how many frames it may have in the reader at once (``blocks``). W
  opens the source and answers ``("info", HwAccelReport)`` or ``("error", ...)``, then decodes its
  chunks one after another: seeks to a chunk's key frame, drops frames before its start, and stops at
  the first frame at or after its end.
* NVDEC frames: W copies each into a *block* of device memory (:mod:`alpha2.native_gpu._cuda.ipc`:
  ``cuMemCreate``, shared as a POSIX descriptor) on the GPU, waits for the copy, lets the decoder's frame
  go and sends ``("frame", chunk, ("cuda", block), refs, (pts, duration, key_frame), planes)`` with each
  plane's (offset, pitch, row bytes, rows) in the block. ``refs`` number the pixel format, ColourInfo,
  SurfaceIdentity and FrameMetadata (less its timing) of the frame: each value is sent once, the first
  time, as ``("value", number, value)`` (unpickling them for every frame cost the reader about 50 us).
  Blocks come in *slabs*, one allocation each (the reader imports and maps each slab once), each slab
  as large as the blocks so far (4, 4, 8, 16, ... blocks, up to ``blocks``): a slab is announced before
  its first frame, ``("slab", slab, ordinal, size_bytes, ((block, offset), ...))`` with its descriptor;
  one no longer wanted (frames grew, and all its blocks are back) is dropped with ``("drop", slab)``.
* Software frames: as :mod:`.decode_worker` does, through shared host memory the reader makes: W
  sends ``("layout", set_id, pixel_format, width, height, geometry)`` at the first frame and at every
  change, R answers ``("slots", set_id, SlotLayout)`` with the slots' memfds
  (:class:`~alpha2.native_gpu.interop.handoff.HostSlotSet`; beyond a few dozen, the first ones come
  before it in ``("slot-fds", set_id)`` messages); W writes each frame's rows into a free
  slot and sends ``("frame", chunk, ("host", set_id, slot), ...)`` with no planes.
* R gives each block or slot back once the frame and every array of it are gone: ``("free", key)``.
  W holds at most ``blocks`` frames in the reader: with none free it waits for one, which is the
  back-pressure (the reader reads chunks in order, so a process whose chunk is not being read waits).
* W, at each chunk's end: ``("end", chunk, stages)`` (seconds spent per stage since the last end); after
  the last: ``("done", DecodeStats)``, and it exits (the reader's mappings keep the blocks). On a
  failure: ``("error", module, class name, message)``, and it exits. R's ``("close",)``, or the socket's
  end, makes it exit at once.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import pickle
import select
import socket
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from alpha2.api.decode_worker import PeerGone, receive, send, send_failure, worker_main
from alpha2.gpu.errors import InternalError
from alpha2.gpu.handles import CudaPtr2D, OwnedFd

if TYPE_CHECKING:
    from alpha2.ffmpeg_bridge.decode import DecodeSession
    from alpha2.gpu.frames import DecodedFrame

__all__ = ["ChunkPlan", "main", "open_session", "serve"]

_PENDING = 2
"""Copies in flight at most before the oldest is waited for (the decoder goes on meanwhile)."""
_FIRST_SLAB = 4
"""Blocks in the first slab; each later slab holds as many as all before it (a short file maps few)."""
_BLOCK_ALIGN = 4096
"""Where blocks start in a slab (a multiple of the planes' pitch alignment)."""


@dataclass(frozen=True)
class ChunkPlan:
    """A chunk as a decoder process decodes it."""

    index: int
    """Position in the file (0 first)."""
    start_pts: int | None
    """First presentation timestamp it holds; None: from the stream's beginning (no seek)."""
    end_pts: int | None
    """The next chunk's start (exclusive); None: to the end of the stream."""
    seek_s: float | None
    """Where the session seeks for it (its key frame's time); None: no seek."""


def open_session(options: dict[str, Any]) -> DecodeSession:
    """The decode session of a decoder process, placed where the reader placed its decoders."""
    from alpha2.api.devices import open_decoder

    return open_decoder(
        options["source"],
        None,
        placement=options["placement"],
        hwaccel=options["hwaccel"],
        **options.get("session", {}),
    )


class _Worker:
    """The decoding loop: chunks decoded in order, frames into blocks or slots, as above."""

    def __init__(self, sock: socket.socket, session: DecodeSession, options: dict[str, Any]) -> None:
        self.sock = sock
        self.session = session
        self.chunks: list[ChunkPlan] = list(options["chunks"])
        self.max_blocks = int(options["blocks"])
        self.timeout_s = float(options.get("wait_timeout_s", 10.0))
        self.stages = {"decode": 0.0, "pool": 0.0, "queue": 0.0}
        self.hold = contextlib.ExitStack()
        # NVDEC frames: blocks of shared device memory
        self.copier: Any = None
        self.slabs: dict[int, Any] = {}  # id -> ExportedMemory
        self.slab_blocks: dict[int, list[int]] = {}
        self.blocks: dict[int, tuple[int, int, int]] = {}  # id -> (slab, address, size in bytes)
        self.free_blocks: list[int] = []
        self.next_block = 0
        self.next_slab = 0
        self.pending: collections.deque[tuple[Any, DecodedFrame, tuple[Any, ...]]] = collections.deque()
        # software frames: the reader's slots
        self.set_id = 0
        self.shape: tuple[Any, ...] | None = None
        self.writer: Any = None
        self.free_slots: collections.deque[int] = collections.deque()
        self.slots_message: tuple[tuple[Any, ...], list[OwnedFd]] | None = None
        self.slot_fds: list[OwnedFd] = []
        # values the reader knows by number: (type, value) -> number
        self.known: dict[tuple[type, Any], int] = {}
        self.next_value = 0

    # -- messages -------------------------------------------------------------------------------------

    def send(self, message: tuple[Any, ...], fds: list[OwnedFd] | tuple[OwnedFd, ...] = ()) -> None:
        """Send ``message``; while the socket is full, take in the reader's messages (its ``free``
        messages must never wait behind ours: each side would wait for the other)."""
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        raw = [fd.fileno() for fd in fds]
        while True:
            try:
                if raw:
                    socket.send_fds(self.sock, [data], raw, socket.MSG_DONTWAIT)
                else:
                    self.sock.send(data, socket.MSG_DONTWAIT)
                return
            except BlockingIOError:
                readable, _, _ = select.select([self.sock], [self.sock], [], 1.0)
                if readable:
                    self.handle_waiting(block=False)
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise PeerGone(str(exc)) from exc

    def handle_waiting(self, *, block: bool) -> None:
        """Take in the reader's messages waiting (``block``: at least one)."""
        timeout: float | None = None if block else 0.0
        while True:
            got = receive(self.sock, timeout)
            if got is None:
                return
            message, fds = got
            kind = message[0]
            if kind == "free":
                key = message[1]
                if key[0] == "cuda" and key[1] in self.blocks:
                    self.free_blocks.append(key[1])
                elif key[0] == "host" and key[1] == self.set_id and self.writer is not None:
                    self.free_slots.append(key[2])
            elif kind == "slot-fds":  # the first of a slot set's descriptors
                self.slot_fds += fds
                fds = []
            elif kind == "slots":
                self.slots_message = (message, self.slot_fds + fds)
                self.slot_fds, fds = [], []
            elif kind == "close":
                raise PeerGone("closed")
            else:
                for fd in fds:
                    fd.close()
                raise InternalError(f"a segment decoder process got an unknown message {kind!r}")
            for fd in fds:
                fd.close()
            timeout = 0.0

    def intern(self, value: Any) -> int:
        """The number the reader knows ``value`` by (sent the first time; every time if unhashable)."""
        key: tuple[type, Any] | None = (type(value), value)
        try:
            number = self.known.get(key)  # type: ignore[arg-type]
        except TypeError:
            key, number = None, None
        if number is None:
            number = self.next_value
            self.next_value += 1
            self.send(("value", number, value))
            if key is not None:
                self.known[key] = number
        return number

    def frame_message(
        self, chunk: int, key: tuple[Any, ...], frame: DecodedFrame, planes: Any
    ) -> tuple[Any, ...]:
        """The ``frame`` message of ``frame`` (its values sent first where new)."""
        metadata = frame.metadata
        timing = (metadata.pts, metadata.duration, metadata.key_frame)
        untimed = dataclasses.replace(metadata, pts=None, duration=None, key_frame=False)
        refs = tuple(self.intern(v) for v in (frame.pixel_format, frame.colour, frame.identity, untimed))
        return ("frame", chunk, key, refs, timing, planes)

    # -- decoding -------------------------------------------------------------------------------------

    def run(self) -> None:
        for chunk in self.chunks:
            self.decode_chunk(chunk)
            self.flush()
            stages = dict(self.stages)
            self.stages = dict.fromkeys(self.stages, 0.0)
            self.send(("end", chunk.index, stages))
        self.send(("done", self.session.stats))

    def decode_chunk(self, chunk: ChunkPlan) -> None:
        clock = time.perf_counter
        session = self.session
        if chunk.seek_s is not None:
            t0 = clock()
            session.seek(chunk.seek_s)
            self.stages["decode"] += clock() - t0
        while True:
            self.handle_waiting(block=False)
            t0 = clock()
            frame = session.next_frame()
            self.stages["decode"] += clock() - t0
            if frame is None:
                return
            pts = frame.metadata.pts
            if chunk.start_pts is not None and pts is not None and pts < chunk.start_pts:
                frame.release()  # a leading picture: the chunk before delivers it
                continue
            if chunk.end_pts is not None and pts is not None and pts >= chunk.end_pts:
                frame.release()  # the next chunk's first frame: this chunk is complete
                return
            if frame.on_gpu:
                self.deliver_cuda(chunk.index, frame)
            else:
                self.deliver_host(chunk.index, frame)

    # -- NVDEC frames ---------------------------------------------------------------------------------

    def deliver_cuda(self, chunk: int, frame: DecodedFrame) -> None:
        from alpha2.native_gpu._cuda import ipc

        try:
            planes = frame.planes
            assert isinstance(planes, tuple)
            ordinal = planes[0].device_ordinal
            if self.copier is None:
                self.copier = ipc.BlockCopier(ordinal)
                # Current for the whole run: no push and pop per driver call.
                self.hold.enter_context(self.copier.context)
            layout = ipc.block_layout(planes)
            block = self.take_block(layout.size_bytes, ordinal)
            t0 = time.perf_counter()
            event = self.copier.copy(planes, frame.cuda_stream, self.blocks[block][1], layout)
        except BaseException:
            frame.release()
            raise
        described = tuple(
            (offset, pitch, plane.width_bytes, plane.height)
            for plane, offset, pitch in zip(planes, layout.offsets, layout.pitches)
            if isinstance(plane, CudaPtr2D)
        )
        message = self.frame_message(chunk, ("cuda", block), frame, described)
        self.pending.append((event, frame, message))
        self.settle(wait=len(self.pending) > _PENDING)
        self.stages["pool"] += time.perf_counter() - t0

    def settle(self, *, wait: bool) -> None:
        """Send the frames whose copies are done, in order (``wait``: the oldest, waited for), and let
        their decoder frames go."""
        while self.pending:
            event, frame, message = self.pending[0]
            if not event.query():
                if not wait:
                    return
                event.wait(self.timeout_s, "copying a decoded frame into a block the reader maps")
            self.pending.popleft()
            frame.release()
            self.copier.recycle(event)
            self.send(message)
            wait = False

    def flush(self) -> None:
        """Send every frame copied so far (waiting for their copies)."""
        while self.pending:
            self.settle(wait=True)

    def take_block(self, size_bytes: int, ordinal: int) -> int:
        """A free block of at least ``size_bytes``: one given back, one of a new slab while there are
        fewer than ``max_blocks``, or the first given back once the reader reads on."""
        t0 = time.perf_counter()
        try:
            while True:
                for block in reversed(self.free_blocks):  # the latest given back: its pages are warm
                    if self.blocks[block][2] >= size_bytes:
                        self.free_blocks.remove(block)
                        return block
                if len(self.blocks) < self.max_blocks:
                    return self.new_slab(size_bytes, ordinal)
                free = set(self.free_blocks)
                idle = [slab for slab, ids in self.slab_blocks.items() if free.issuperset(ids)]
                if idle:  # all its blocks are back, but too small (the frames grew): make room
                    self.drop_slab(min(idle, key=lambda slab: self.slabs[slab].size_bytes))
                    continue
                # Every block is in the reader: the frames copied must reach it before it can give any
                # back; then wait for one.
                if self.pending:
                    self.flush()
                    continue
                self.handle_waiting(block=True)
        finally:
            self.stages["queue"] += time.perf_counter() - t0

    def new_slab(self, size_bytes: int, ordinal: int) -> int:
        """A slab of blocks of ``size_bytes``, announced to the reader; its first block, taken."""
        from alpha2.native_gpu._cuda import ipc

        count = min(self.max_blocks - len(self.blocks), max(_FIRST_SLAB, len(self.blocks)))
        stride = -(-size_bytes // _BLOCK_ALIGN) * _BLOCK_ALIGN
        memory = ipc.ExportedMemory(ordinal, stride * count)
        slab = self.next_slab
        self.next_slab += 1
        self.slabs[slab] = memory
        ids = list(range(self.next_block, self.next_block + count))
        self.next_block += count
        self.slab_blocks[slab] = ids
        for index, block in enumerate(ids):
            self.blocks[block] = (slab, memory.pointer + index * stride, stride)
        fd = memory.export_fd()
        try:
            places = tuple((block, index * stride) for index, block in enumerate(ids))
            self.send(("slab", slab, ordinal, memory.size_bytes, places), [fd])
        finally:
            fd.close()
        self.free_blocks[:0] = reversed(ids[1:])  # taken first to last, after any given back
        return ids[0]

    def drop_slab(self, slab: int) -> None:
        """Let go of a slab whose blocks are all free, and tell the reader."""
        for block in self.slab_blocks.pop(slab):
            del self.blocks[block]
            self.free_blocks.remove(block)
        self.slabs.pop(slab).close()
        self.send(("drop", slab))

    # -- software frames ------------------------------------------------------------------------------

    def deliver_host(self, chunk: int, frame: DecodedFrame) -> None:
        try:
            shape = (frame.pixel_format, frame.identity.width, frame.identity.height)
            if shape != self.shape:
                self.new_layout(frame)
                self.shape = shape
            t0 = time.perf_counter()
            while not self.free_slots:
                self.flush()
                self.handle_waiting(block=True)
            t1 = time.perf_counter()
            self.stages["queue"] += t1 - t0
            slot = self.free_slots.pop()  # the latest given back: its pages are warm
            self.writer.write(slot, frame, [], self.timeout_s)
            self.stages["pool"] += time.perf_counter() - t1
            message = self.frame_message(chunk, ("host", self.set_id, slot), frame, None)
        finally:
            frame.release()
        self.flush()  # NVDEC frames copied before it go first
        self.send(message)

    def new_layout(self, frame: DecodedFrame) -> None:
        from alpha2.native_gpu.interop import handoff
        from alpha2.native_gpu.interop.cpu_upload import frame_geometry

        self.drop_writer()
        self.set_id += 1
        width, height = frame.identity.width, frame.identity.height
        geometry = frame_geometry(frame.pixel_format, width, height)
        self.send(("layout", self.set_id, frame.pixel_format, width, height, geometry))
        while self.slots_message is None:
            self.handle_waiting(block=True)
        (_, set_id, layout), fds = self.slots_message
        self.slots_message = None
        if set_id != self.set_id:
            for fd in fds:
                fd.close()
            raise InternalError(f"slots of set {set_id} came for set {self.set_id}")
        self.writer = handoff.HostSlotWriter(layout, fds)
        self.free_slots = collections.deque(range(layout.count - 1, -1, -1))

    def drop_writer(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()
        self.free_slots.clear()

    def close(self) -> None:
        pending, self.pending = self.pending, collections.deque()
        for _, frame, _ in pending:
            frame.release()
        self.drop_writer()
        if self.slots_message is not None:
            for fd in self.slots_message[1]:
                fd.close()
            self.slots_message = None
        for fd in self.slot_fds:
            fd.close()
        self.slot_fds = []
        slabs, self.slabs = self.slabs, {}
        self.blocks.clear()
        for memory in slabs.values():
            memory.close()  # the reader's mappings keep what it holds
        copier, self.copier = self.copier, None
        if copier is not None:
            copier.close()
        self.hold.close()


def serve(sock: socket.socket) -> int:
    """Run the conversation on ``sock`` until the end, a failure (reported to the reader) or close."""
    worker: _Worker | None = None
    session: DecodeSession | None = None
    try:
        got = receive(sock, None)
        assert got is not None
        (kind, *rest), fds = got
        for fd in fds:
            fd.close()
        if kind != "open":
            raise InternalError(f"a segment decoder process must be opened first, got {kind!r}")
        options = rest[0]
        session = open_session(options)
        send(sock, ("info", session.hwaccel_report))
        worker = _Worker(sock, session, options)
        worker.run()
        return 0
    except PeerGone:
        return 0
    except BaseException as exc:  # reported to the reader, which raises it as a typed error
        return send_failure(sock, exc)
    finally:
        if worker is not None:
            worker.close()
        if session is not None:
            session.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m alpha2.api.segment_worker FD``."""
    return worker_main(argv, "alpha2.api.segment_worker", "SegmentReader", serve)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
