"""One file on several decoders at once: segment-parallel decoding, frames delivered in order.

A GPU has several video decoders (an H200 has seven NVDEC engines) and one decoding session runs on
one, so a single long file decodes at one engine's pace in every Python library. :class:`SegmentReader`
splits the file at key frames into chunks (:func:`plan_chunks`, from the demuxer's packets alone:
:func:`~alpha2.ffmpeg_bridge.index.keyframe_index`), decodes the chunks on ``sessions`` decode sessions
at once (chunk ``c`` on session ``c % sessions``, each session in a thread of its own; PyAV lets go of
the GIL while it decodes) and hands the frames out in presentation order with their own timestamps,
exactly as one session would have:

- chunk ``c`` holds the frames with ``start <= pts < end`` (its key frame's timestamp and the next
  chunk's). Its session seeks to the key frame and drops what comes before it: with open GOPs, the
  leading pictures of a key frame belong to the chunk before, whose session decodes them with their
  references (it goes on past the next key frame until a frame at or after ``end`` comes out);
- memory is bounded: a chunk buffers at most ``ahead`` frames, and a session starts its next chunk only
  once the reader has reached the chunk before it (at most two chunks a session are alive); NVDEC
  frames are copied into a pool of alpha2's own (:class:`~alpha2.native_gpu._cuda.frame_pool.CudaFramePool`)
  so that buffered frames never pin the decoders' few surfaces, counted against the pool's budget;
- every session's decoder and path is reported (:attr:`SegmentReader.report`).

``decoders='processes'`` runs each session in a decoder process of its own
(:mod:`alpha2.api.segment_worker`) instead of a thread: with many busy threads, every PyAV and CUDA call
waits to take the GIL back (about 1 ms a call under load, BENCHMARKS.md), and a process has a GIL of its
own. A decoder process decodes its chunks one after another and hands each frame over without the CPU:
NVDEC frames are copied on the GPU into blocks of device memory this process maps once each, a slab of
blocks at a time (:mod:`alpha2.native_gpu._cuda.ipc`), software frames are written into shared host pages
(:class:`~alpha2.native_gpu.interop.handoff.HostSlotSet`). A process holds at most ``2 * ahead`` frames
here (waiting to be read, or handed out): with none left it waits, which bounds the memory; a frame's
block or slot goes back when the frame and every array of it are gone. A failure in a decoder process is
raised here with its type; one that dies is a DecodeError naming it.

A stream whose key frames carry no timestamps, or that has fewer than two chunks' worth of packets,
is read by one session (and the report says why).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import os
import queue
import select
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from alpha2.api import arguments
from alpha2.api import decode_worker as wire
from alpha2.api.devices import open_decoder, place_decoder
from alpha2.api.segment_worker import ChunkPlan
from alpha2.ffmpeg_bridge.decode import DecodeSession, MediaSource, _next_decoder_id
from alpha2.ffmpeg_bridge.errors import DecodeError
from alpha2.ffmpeg_bridge.hwdevice import HwAccelMode
from alpha2.ffmpeg_bridge.index import KeyframeIndex, keyframe_index
from alpha2.gpu.errors import (
    ClosedError,
    GpuTimeoutError,
    InternalError,
    InvalidInputError,
    UnsupportedError,
)
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet, CudaPtr2D, OwnedFd
from alpha2.gpu.surfaces import SurfaceBudget, SurfaceBudgetError
from alpha2.native_gpu.device.device import Device

if TYPE_CHECKING:
    from alpha2.ffmpeg_bridge.hwdevice import HwAccelReport

__all__ = ["Chunk", "SegmentReader", "SegmentReport", "auto_sessions", "plan_chunks"]

DEFAULT_CHUNK_PACKETS = 48
"""Packets a chunk holds at least (whole GOPs are added until it does): enough frames to pay for a
seek and a decoder flush, few enough to buffer."""

DEFAULT_AHEAD = 64
"""Frames a chunk buffers at most before its session waits for the reader."""

_POLL_S = 0.05

NVDEC_ENGINES = {"H100": 7, "H200": 7, "H800": 7, "H20": 7, "A100": 5, "A800": 5, "L40": 3, "L4": 4}
"""Decoding engines by GPU model (NVIDIA's NVDEC support matrix); ``auto`` runs a session on each. On
the H200, 7 sessions read one 1080p HEVC file at 2199 fps against 1932 with 4 and 2031 with 10
(BENCHMARKS.md, "One file on all the decoders")."""

_UNKNOWN_ENGINES = 2


def auto_sessions(cuda_ordinal: int | None) -> tuple[int, str]:
    """How many sessions ``parallel='auto'`` runs, and why: one per NVDEC engine of the decoding GPU;
    one for software decoding (FFmpeg's frame threads already use every core)."""
    if cuda_ordinal is None:
        return 1, "software decoding: FFmpeg's frame threads already use every core, so one session"
    from alpha2.native_gpu._cuda.core import cuda_device_name

    try:
        name = cuda_device_name(cuda_ordinal)
    except Exception as exc:  # the name only picks the count: without it, the cautious default
        return _UNKNOWN_ENGINES, f"GPU name unknown ({exc}): {_UNKNOWN_ENGINES} sessions"
    words = name.replace("-", " ").split()
    for model in sorted(NVDEC_ENGINES, key=len, reverse=True):
        if model in words:
            engines = NVDEC_ENGINES[model]
            return engines, f"{name} has {engines} NVDEC engines: a session on each"
    return _UNKNOWN_ENGINES, f"{name}: its NVDEC engine count is not in alpha2's table, so {_UNKNOWN_ENGINES}"


@dataclass(frozen=True)
class Chunk:
    """A run of whole GOPs decoded by one session."""

    index: int
    """Position in the file (0 first)."""
    start_pts: int | None
    """First presentation timestamp it holds (its key frame's); None: from the stream's beginning."""
    end_pts: int | None
    """The next chunk's start (exclusive); None: to the end of the stream."""
    packets: int
    """Video packets from its key frame to the next chunk's, in decode order."""


def plan_chunks(index: KeyframeIndex, *, min_packets: int = DEFAULT_CHUNK_PACKETS) -> list[Chunk]:
    """Chunks of whole GOPs, each of at least ``min_packets`` packets but the last.

    The first chunk starts at the stream's beginning (no seek: frames before the first key frame are
    handled as one session handles them).
    """
    arguments.whole("min_packets", min_packets, low=1)
    starts: list[tuple[int | None, int]] = [(None, 0)]
    for pts, before in zip(index.keyframes, index.packets_from):
        if before - starts[-1][1] >= min_packets:
            starts.append((pts, before))
    # A last chunk shorter than half the minimum joins the one before (a seek for a few frames).
    if len(starts) > 1 and index.packets - starts[-1][1] < min_packets // 2:
        starts.pop()
    chunks = []
    for i, (first, before) in enumerate(starts):
        end, after = starts[i + 1] if i + 1 < len(starts) else (None, index.packets)
        chunks.append(Chunk(index=i, start_pts=first, end_pts=end, packets=after - before))
    return chunks


@dataclass
class SegmentReport:
    """How a :class:`SegmentReader` read its file."""

    sessions: int
    """Decode sessions that ran at once."""
    chunks: int
    """Chunks the file was split into."""
    reason: str
    """Why that many sessions (or why one)."""
    hwaccel: list[dict[str, Any]] = field(default_factory=list)
    """Each session's decoder report (where it decoded, and why)."""
    frames: int = 0
    """Frames handed out."""
    pooled: int = 0
    """NVDEC frames copied into the frame pool (so that buffered frames never pin decoder surfaces)."""
    stages: dict[str, float] = field(default_factory=dict)
    """Seconds per stage, summed over the sessions' threads (``decode``, ``pool`` copy, ``turn``: waiting
    for the reader to reach the chunk before, ``queue``: waiting for room in a chunk's buffer) and the
    reader's (``wait``: for the next frame). Decoder processes: ``decode``, ``pool`` (the copy into a
    block or slot, and handing it over), ``queue`` (waiting for a free block or slot), and the reader's
    ``map`` (importing and mapping their shared device memory, part of ``wait``)."""
    decoders: str = "threads"
    """Where the sessions ran: ``threads`` of this process, or decoder ``processes``."""

    def as_dict(self) -> dict[str, Any]:
        """For ``--json`` and benchmarks."""
        return {
            "sessions": self.sessions,
            "chunks": self.chunks,
            "reason": self.reason,
            "hwaccel": self.hwaccel,
            "frames": self.frames,
            "pooled": self.pooled,
            "stages": {name: round(seconds, 4) for name, seconds in self.stages.items()},
            "decoders": self.decoders,
        }

    def _add(self, stages: dict[str, float]) -> None:
        for name, seconds in stages.items():
            self.stages[name] = self.stages.get(name, 0.0) + seconds


class _End:
    """The end of a chunk (``error`` set when its session failed)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


class SegmentReader:
    """Frames of one video stream decoded on several sessions at once, in presentation order.

    Args:
        source: A path (file objects cannot be read by several sessions at once).
        sessions: Decode sessions to run at once (>= 1).
        device: The Device frames go to (NVDEC runs on its GPU); None: placed as ``Device.open()``
            would rank the adapters.
        hwaccel: ``'auto'``, ``'cuda'`` or ``'none'``, for every session.
        ahead: Frames a chunk buffers at most.
        min_packets: Packets a chunk holds at least (:func:`plan_chunks`).
        decoders: ``'threads'`` (each session in a thread of this process), ``'processes'`` (each in a
            decoder process of its own; see the module's notes) or ``'auto'``: processes where NVDEC
            decodes (7 processes read a 1080p HEVC file at 4834 fps on the H200, 7 threads at 2383:
            BENCHMARKS.md), threads for software decoding.
        options: The rest go to every session's
            :class:`~alpha2.ffmpeg_bridge.decode.DecodeSession` (``stream_index``, ``threads``,
            ``on_corrupt``, ``max_pixels``, ``budget``...), as :func:`alpha2.open` passes them on.

    Iterate it (or call :meth:`next_frame`); release each frame when done with it. Close it (or use
    ``with``) to stop the sessions.

    Raises:
        InvalidInputError: a file object, bad numbers, an unknown option, or a ``budget`` with decoder
            processes (whose frames ``ahead`` bounds).
        MediaNotFoundError, MediaFormatError, NoVideoStreamError: as :class:`DecodeSession`.
    """

    def __init__(
        self,
        source: MediaSource,
        *,
        sessions: int,
        device: Device | None = None,
        hwaccel: str = "auto",
        ahead: int = DEFAULT_AHEAD,
        min_packets: int = DEFAULT_CHUNK_PACKETS,
        decoders: str = "auto",
        **options: Any,
    ) -> None:
        if decoders not in ("auto", "threads", "processes"):
            raise InvalidInputError(f"decoders must be 'auto', 'threads' or 'processes', got {decoders!r}")
        if callable(getattr(source, "read", None)):
            raise InvalidInputError("segment-parallel decoding reads the file several times: give a path")
        if not isinstance(source, str | os.PathLike):
            raise InvalidInputError(f"source must be a path (str or PathLike), got {type(source).__name__}")
        arguments.whole("sessions", sessions, low=1)
        arguments.whole("ahead", ahead, low=1)
        arguments.known_options(
            "SegmentReader()",
            options,
            DecodeSession.__init__,
            skip=2,
            also=("sessions", "device", "hwaccel", "ahead", "min_packets", "decoders"),
        )
        if device is not None and not isinstance(device, Device):
            # alpha2.open takes 'cuda:1' or a torch.device and opens the Device; the reader takes one made
            raise InvalidInputError(
                f"device must be an alpha2 Device or None, got {type(device).__name__} (alpha2.open(path, "
                "device=..., parallel=K) takes a CUDA ordinal, 'cuda:N' or a torch.device)"
            )
        HwAccelMode.parse(hwaccel)  # None or a typo: the modes named, before anything opens
        self.source = source
        """What was opened."""
        self._device = device
        self._hwaccel = hwaccel
        self._ahead = ahead
        stream_index = options.get("stream_index")
        if stream_index is not None and (
            isinstance(stream_index, bool) or not isinstance(stream_index, int) or stream_index < 0
        ):
            # Refused as a DecodeSession refuses it: the key frame index met it first, a bare TypeError.
            raise InvalidInputError(
                "stream_index must be a whole number >= 0 (or None: the best video stream), "
                f"got {stream_index!r}"
            )
        index = keyframe_index(source, stream_index)
        chunks = plan_chunks(index, min_packets=min_packets)
        if not index.keyframes:
            reason = "the stream has no key frames with timestamps to split at: one session"
        elif len(chunks) < 2:
            reason = f"{index.packets} packets make one chunk of at least {min_packets}: one session"
        else:
            reason = f"{len(chunks)} chunks of whole GOPs on {min(sessions, len(chunks))} sessions"
        self._index = index
        self._chunks = chunks
        count = min(sessions, len(chunks))
        placement = place_decoder(device, hwaccel)  # once: every session decodes on that GPU
        if decoders == "auto":
            on_nvdec = count > 1 and placement.cuda_ordinal is not None
            decoders = "processes" if on_nvdec else "threads"
        self.report = SegmentReport(sessions=count, chunks=len(chunks), reason=reason, decoders=decoders)
        """How the file is being read."""
        self._procs: _ProcessSessions | None = None
        if decoders == "processes":
            if options.get("budget") is not None:
                raise InvalidInputError(
                    "budget counts the frames of this process's sessions: decoder processes hold at most "
                    "2 * ahead frames each; use decoders='threads' for a budget"
                )
            self._closed = False
            placement = dataclasses.replace(placement, join_current_context=False)
            self._procs = _ProcessSessions(
                os.fspath(source),
                chunks,
                index,
                count,
                placement=placement,
                hwaccel=hwaccel,
                blocks=2 * ahead,
                report=self.report,
                session_options=options,
            )
            self._finalizer: Any = weakref.finalize(self, self._procs.close)
            return
        self._queues: list[queue.Queue[DecodedFrame | _End]] = [queue.Queue(maxsize=ahead) for _ in chunks]
        self._reading = 0  # the chunk the reader is in
        self._wait_s = 0.0
        self._progress = threading.Condition()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._closed = False
        self._budget: SurfaceBudget | None = options.get("budget")
        self._frame_bytes = 0  # the largest frame's reservation seen: the room a session ahead leaves
        self._sessions: list[DecodeSession] = []
        self._pools: list[Any] = []
        self._threads: list[threading.Thread] = []
        try:
            for _ in range(count):
                session = open_decoder(source, device, placement=placement, hwaccel=hwaccel, **options)
                self._sessions.append(session)
                self.report.hwaccel.append(session.hwaccel_report.as_dict())
        except BaseException:
            self._close_sessions()
            raise
        for worker, session in enumerate(self._sessions):
            thread = threading.Thread(
                target=self._run, args=(worker, session), name=f"alpha2-segment-{worker}", daemon=True
            )
            self._threads.append(thread)
        for thread in self._threads:
            thread.start()
        self._finalizer = weakref.finalize(self, _stop_all, self._stop, self._queues)

    # -- the sessions' side ----------------------------------------------------------------------------

    def _pool_for(self, worker: int, frame: DecodedFrame, hold: contextlib.ExitStack) -> Any:
        with self._lock:
            while len(self._pools) <= worker:
                self._pools.append(None)
            pool = self._pools[worker]
        if pool is None:
            from alpha2.native_gpu._cuda.frame_pool import CudaFramePool

            planes = frame.planes
            assert isinstance(planes, tuple)
            # Two chunks a session are alive at most, plus what the reader holds.
            pool = CudaFramePool(planes[0].device_ordinal, max_frames=2 * self._ahead + 8)
            with self._lock:
                self._pools[worker] = pool
            # The context stays current on this thread: no push and pop per copy (each driver call lets
            # go of the GIL, and taking it back waits behind the other decoders' threads).
            hold.enter_context(pool.context)
        return pool

    def _put(self, chunk: int, item: DecodedFrame | _End) -> bool:
        """Queue ``item`` for ``chunk``; False when the reader stopped (the item is released)."""
        target = self._queues[chunk]
        while not self._stop.is_set():
            try:
                target.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        if isinstance(item, DecodedFrame):
            item.release()
        return False

    def _wait_turn(self, chunk: int) -> bool:
        """Wait until the reader reached the chunk this session decoded before ``chunk``."""
        previous = chunk - len(self._sessions)
        with self._progress:
            while self._reading < previous and not self._stop.is_set():
                self._progress.wait(_POLL_S)
        return not self._stop.is_set()

    def _room_ahead(self, chunk: int) -> bool:
        """Wait until a session may decode a frame of ``chunk``; False when the reader stopped.

        The reader's own chunk always may. A chunk ahead of it may only while the budget keeps room for
        a frame of every session: the sessions ahead filled a small budget and the reader's chunk, which
        alone frees it, could get no surface (parallel=3 with SurfaceBudget(max_surfaces=4) failed with
        'surface budget stayed full for 10 s' while every frame was released at once).
        """
        budget = self._budget
        if budget is None or (budget.max_surfaces is None and budget.max_bytes is None):
            return not self._stop.is_set()
        room = len(self._sessions)
        with self._progress:
            while not self._stop.is_set() and chunk > self._reading:
                usage = budget.usage()
                surfaces = usage.max_surfaces is None or usage.max_surfaces - usage.surfaces >= room
                # Bytes: once a frame's size is known (the reader's chunk decodes the first).
                size = usage.max_bytes is None or (
                    self._frame_bytes > 0 and usage.max_bytes - usage.size_bytes >= room * self._frame_bytes
                )
                if surfaces and size:
                    break
                self._progress.wait(_POLL_S)
        return not self._stop.is_set()

    def _run(self, worker: int, session: DecodeSession) -> None:
        stages: dict[str, float] = {"decode": 0.0, "pool": 0.0, "turn": 0.0, "queue": 0.0}
        hold = contextlib.ExitStack()
        try:
            for chunk in self._chunks[worker :: len(self._sessions)]:
                t0 = time.perf_counter()
                if not self._wait_turn(chunk.index):
                    return
                stages["turn"] += time.perf_counter() - t0
                try:
                    self._decode_chunk(worker, session, chunk, stages, hold)
                except BaseException as exc:  # handed to the reader, raised there
                    self._put(chunk.index, _End(exc))
                    return
                if not self._put(chunk.index, _End()):
                    return
        finally:
            hold.close()
            with self._lock:
                self.report._add(stages)

    def _decode_chunk(
        self,
        worker: int,
        session: DecodeSession,
        chunk: Chunk,
        stages: dict[str, float],
        hold: contextlib.ExitStack,
    ) -> None:
        clock = time.perf_counter
        if chunk.start_pts is not None:  # chunk 0 starts where its session is: at the beginning
            t0 = clock()
            session.seek(self._index.seconds(chunk.start_pts))
            stages["decode"] += clock() - t0
        while not self._stop.is_set():
            t0 = clock()
            if not self._room_ahead(chunk.index):
                return
            frame = session.next_frame()
            t1 = clock()
            stages["decode"] += t1 - t0
            if frame is None:
                return
            if frame.reservation is not None:
                self._frame_bytes = max(self._frame_bytes, frame.reservation.size_bytes)
            pts = frame.metadata.pts
            if chunk.start_pts is not None and pts is not None and pts < chunk.start_pts:
                # A leading picture (the seek lands on the key frame, so the session drops these
                # itself; kept as the chunk's own bound): the chunk before delivers it.
                frame.release()
                continue
            if chunk.end_pts is not None and pts is not None and pts >= chunk.end_pts:
                frame.release()  # the next chunk's first frame: this chunk is complete
                return
            if frame.on_gpu:
                frame = self._pool_for(worker, frame, hold).detach(frame)
                pooled = True
            else:
                pooled = False
            t2 = clock()
            stages["pool"] += t2 - t1
            if not self._put(chunk.index, frame):
                return
            stages["queue"] += clock() - t2
            if pooled:
                with self._lock:
                    self.report.pooled += 1

    # -- the reader's side -----------------------------------------------------------------------------

    def next_frame(self) -> DecodedFrame | None:
        """The next frame in presentation order (the caller releases it), or None at the end.

        Raises:
            ClosedError: the reader was closed.
            The error a session met (bad data, a budget that stayed full), as that session raised it.
        """
        if self._closed:
            raise ClosedError("this SegmentReader was closed")
        if self._procs is not None:
            try:
                frame = self._procs.next_frame()
            except Exception:
                self.close()
                raise
            if frame is not None:
                self.report.frames += 1
            return frame
        while self._reading < len(self._chunks):
            t0 = time.perf_counter()
            item = self._queues[self._reading].get()
            self._wait_s += time.perf_counter() - t0
            if isinstance(item, DecodedFrame):
                self.report.frames += 1
                return item
            if item.error is not None:
                self.close()
                raise item.error
            with self._progress:
                self._reading += 1
                self._progress.notify_all()
        return None

    def __iter__(self) -> Iterator[DecodedFrame]:
        while True:
            frame = self.next_frame()
            if frame is None:
                return
            yield frame

    def _close_sessions(self) -> None:
        for session in self._sessions:
            try:
                session.close()
            except Exception:
                pass  # closing after a failure must not hide it

    def close(self) -> None:
        """Stop the sessions, release buffered frames, close the decoders. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._finalizer()
        if self._procs is not None:
            return
        if threading.current_thread() in self._threads:
            # Closed on a session's own thread (the garbage collector ran a finalizer there: a
            # VideoSource dropped unclosed), which can join no thread of its own nor close the session
            # it decodes with: the rest is done on a thread of its own once the sessions' threads end.
            threading.Thread(target=self._finish, name="alpha2-segment-close", daemon=True).start()
            return
        self._finish()

    def _finish(self) -> None:
        """The end of :meth:`close`: the sessions' threads joined, buffered frames and decoders freed."""
        deadline = time.monotonic() + 10.0
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.report._add({"wait": self._wait_s})
        _drain(self._queues)
        self._close_sessions()
        for pool in self._pools:
            if pool is not None:
                pool.close()

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drain(queues: list[queue.Queue[DecodedFrame | _End]]) -> None:
    for waiting in queues:
        while True:
            try:
                item = waiting.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, DecodedFrame):
                item.release()


def _stop_all(stop: threading.Event, queues: list[queue.Queue[DecodedFrame | _End]]) -> None:
    stop.set()
    _drain(queues)


# -- decoder processes (decoders='processes') --------------------------------------------------------------

_STOP_TIMEOUT_S = 5.0
_START_TIMEOUT_S = 60.0
_TAKE_IN_EVERY_S = 0.002
"""How often the reader takes in messages while frames of the chunk it reads are already here."""
_SOCKET_BUFFER_BYTES = 1 << 20
"""Each end's send buffer (the system's maximum where that is lower): room for a few hundred messages."""
_FDS_PER_MESSAGE = 48
"""Descriptors sent beside one message at most (a decoder process takes 64)."""


class _Held:
    """What a handed-out frame and every array of it keep alive; its block or slot goes back to its
    decoder process when it goes."""

    __slots__ = ("__weakref__",)


class _HeldBytes(np.ndarray):
    """Shared host pages that keep a :class:`_Held` alive (numpy arrays of a plane hold their buffer)."""

    holder: _Held


def _held_bytes(data: Any, holder: _Held) -> _HeldBytes:
    view = np.frombuffer(data, dtype=np.uint8).view(_HeldBytes)
    view.holder = holder
    return view


@functools.cache
def _sent_slots() -> type[Any]:
    """:class:`~alpha2.native_gpu.interop.handoff.HostSlotSet` whose descriptors go to the decoder
    process instead of a copy of them: its mappings here keep the pages, and a reader of K processes
    would otherwise keep K x slots x planes descriptors open."""
    from alpha2.native_gpu.interop.handoff import HostSlotSet

    class SentSlots(HostSlotSet):
        def take_fds(self) -> list[OwnedFd]:
            """Every slot's plane memories, slot by slot, handed over (the caller sends, then closes)."""
            fds = [fd for slot in self._fds for fd in slot]
            for slot in self._fds:
                slot.clear()
            return fds

    return SentSlots


class _Link:
    """One decoder process of a reader: its socket, the memory it shares with this process, and which
    of its blocks or slots this process holds (frames waiting to be read, or handed out)."""

    def __init__(self, number: int, chunks: list[int], capacity: int) -> None:
        self.number = number
        self.chunks = chunks
        self.capacity = capacity
        self.decoder_id = _next_decoder_id()
        self.lock = threading.RLock()  # its socket's sends and the memory (frames go on any thread)
        self.process: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.stderr: Any = None
        self.slabs: dict[int, tuple[Any, set[int]]] = {}  # id -> (ImportedMemory, its blocks mapped)
        self.blocks: dict[int, tuple[int, int, int]] = {}  # id -> (slab, address here, CUDA ordinal)
        self.sets: dict[int, Any] = {}  # set id -> HostSlotSet
        self.current_set: int | None = None
        self.held: set[tuple[Any, ...]] = set()
        self.values: dict[int, Any] = {}  # what its frames refer to by number
        self.identities: dict[int, Any] = {}  # its surface identities, with this process's decoder id
        self.closed = False  # the reader closed: what comes back is unmapped
        self.finished = False  # it said "done"
        self.failed = False  # it said "error", or died

    def give_back(self, key: tuple[Any, ...]) -> None:
        """A frame's block or slot is free (any thread): back to the decoder process, or let go."""
        with self.lock:
            self.held.discard(key)
            current = key[1] in self.blocks if key[0] == "cuda" else key[1] == self.current_set
            if current and not self.closed and not self.finished and self.sock is not None:
                try:
                    wire.send(self.sock, ("free", key))
                    return
                except (wire.PeerGone, OSError):
                    pass  # gone: the reader hears of it from the socket
            self.discard(key)

    def discard(self, key: tuple[Any, ...]) -> None:
        """Unmap a block, or destroy a slot, that nobody here holds."""
        if key[0] == "cuda":
            block = self.blocks.pop(key[1], None)
            if block is not None:
                memory, blocks = self.slabs[block[0]]
                blocks.discard(key[1])
                if not blocks:  # the last of its blocks: unmap the slab
                    del self.slabs[block[0]]
                    memory.close()
        else:
            slots = self.sets.get(key[1])
            if slots is not None:
                slots.destroy(key[2])

    def let_go(self) -> None:
        """Unmap every block and destroy every slot not held here (the decoder process has ended, or
        the reader closed): held ones go when their frames do."""
        with self.lock:
            for block in list(self.blocks):
                if ("cuda", block) not in self.held:
                    self.discard(("cuda", block))
            for set_id, slots in list(self.sets.items()):
                for index in range(slots.layout.count):
                    if ("host", set_id, index) not in self.held:
                        slots.destroy(index)

    def stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        try:
            self.stderr.seek(0)
            lines = self.stderr.read().decode(errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return f": {lines[-1]}" if lines else ""


class _ProcessSessions:
    """The chunks decoded by decoder processes (:mod:`alpha2.api.segment_worker`), one per session, and
    read here in order.

    No thread here: the reader takes in the processes' messages while it waits for the next frame
    (frames of chunks not read yet wait here as messages), and a frame becomes a DecodedFrame over
    memory this process maps only when it is handed out. Each decoder process holds at most
    ``blocks`` frames here (waiting or handed out): with none left it waits, which is the back-pressure.
    """

    def __init__(
        self,
        source: str,
        chunks: list[Chunk],
        index: KeyframeIndex,
        count: int,
        *,
        placement: Any,
        hwaccel: str,
        blocks: int,
        report: SegmentReport,
        session_options: dict[str, Any],
    ) -> None:
        from alpha2.native_gpu._cuda.streams import install_cuda_plane_ops
        from alpha2.native_gpu.device.waits import gpu_wait_timeout

        install_cuda_plane_ops()  # NVDEC frames' planes: host copies and DLPack stream order here
        hwaccel, note = _shared_route(placement, hwaccel)
        self._source = source
        self._report = report
        self._count = count
        self._wait_timeout = gpu_wait_timeout
        self._waiting: list[collections.deque[tuple[_Link, tuple[Any, ...]]]] = [
            collections.deque() for _ in chunks
        ]
        self._ends: list[bool | BaseException] = [False] * len(chunks)
        self._reading = 0
        self._wait_s = 0.0
        self._taken_in = 0.0
        self._closed = False
        self._links = [_Link(k, [c.index for c in chunks[k::count]], blocks) for k in range(count)]
        plans = [
            ChunkPlan(
                c.index, c.start_pts, c.end_pts, None if c.start_pts is None else index.seconds(c.start_pts)
            )
            for c in chunks
        ]
        try:
            for link in self._links:
                self._start(link)
                options = {
                    "source": source,
                    "hwaccel": hwaccel,
                    "placement": placement,
                    "chunks": plans[link.number :: count],
                    "blocks": blocks,
                    "wait_timeout_s": gpu_wait_timeout(),
                    "session": session_options,
                }
                assert link.sock is not None
                wire.send(link.sock, ("open", options))
            deadline = time.monotonic() + _START_TIMEOUT_S
            for link in self._links:
                said = self._info(link, deadline).as_dict()
                if note is not None:
                    said.update(requested="auto", fallback_reason=note, reason=note)
                report.hwaccel.append(said)
        except BaseException:
            self.close()
            raise

    # -- the processes ------------------------------------------------------------------------------------

    def _start(self, link: _Link) -> None:
        link.sock, link.process, link.stderr = wire.start_worker(
            "alpha2.api.segment_worker", "a segment decoder process", buffer_bytes=_SOCKET_BUFFER_BYTES
        )

    def _info(self, link: _Link, deadline: float) -> HwAccelReport:
        """The decoder process's answer to ``open``: its decoder's report, or its error raised here."""
        assert link.sock is not None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GpuTimeoutError(
                    f"segment decoder process {link.number} did not open {self._source} within "
                    f"{_START_TIMEOUT_S:g} s"
                )
            try:
                got = wire.receive(link.sock, min(left, 1.0))
            except wire.PeerGone:
                raise self._died(link) from None
            if got is None:
                if link.process is not None and link.process.poll() is not None:
                    raise self._died(link)
                continue
            message, fds = got
            for fd in fds:
                fd.close()
            if message[0] == "error":
                raise _error_from(message, self._who(link))
            if message[0] != "info":
                raise InternalError(f"a segment decoder process answered {message[0]!r} to open")
            report: HwAccelReport = message[1]
            return report

    def _who(self, link: _Link) -> str:
        return f"segment decoder process {link.number} of {self._source}"

    def _died(self, link: _Link) -> DecodeError:
        code = None
        if link.process is not None:
            try:
                code = link.process.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass
        return DecodeError(
            f"segment decoder process {link.number} of {self._source} ended unexpectedly "
            f"(exit code {code}){link.stderr_tail()}"
        )

    # -- messages -----------------------------------------------------------------------------------------

    def _take_in(self, timeout_s: float) -> None:
        """Handle every message the decoder processes sent, waiting up to ``timeout_s`` for one."""
        socks = {link.sock: link for link in self._links if link.sock is not None}
        if not socks:
            return
        readable, _, _ = select.select(list(socks), [], [], timeout_s)
        for sock in readable:
            link = socks[sock]
            failures = 0
            while link.sock is not None:
                try:
                    got = wire.receive(sock, 0.0)
                except wire.PeerGone:
                    # A process that ends with messages of ours unread (``free``) makes the next receive
                    # fail once (ECONNRESET), before the messages it sent last: read on; a second
                    # failure in a row is the end of the socket.
                    failures += 1
                    if failures > 1:
                        self._lost(link)
                        break
                    continue
                if got is None:
                    break
                failures = 0
                self._handle(link, *got)
        if not readable:  # a process may have died without closing its end (a stuck child)
            for link in self._links:
                if link.sock is not None and link.process is not None and link.process.poll() is not None:
                    if not select.select([link.sock], [], [], 0)[0]:
                        self._lost(link)

    def _handle(self, link: _Link, message: tuple[Any, ...], fds: list[OwnedFd]) -> None:
        kind = message[0]
        try:
            if kind == "frame":
                chunk, key = message[1], message[2]
                with link.lock:
                    link.held.add(key)
                self._waiting[chunk].append((link, message))
                if key[0] == "cuda":
                    self._report.pooled += 1
            elif kind == "value":
                link.values[message[1]] = message[2]
            elif kind == "slab":
                from alpha2.native_gpu._cuda.ipc import ImportedMemory

                _, slab, ordinal, size_bytes, places = message
                t0 = time.perf_counter()
                memory = ImportedMemory(ordinal, fds.pop(0), size_bytes)
                self._report._add({"map": time.perf_counter() - t0})
                with link.lock:
                    link.slabs[slab] = (memory, {block for block, _ in places})
                    for block, offset in places:
                        link.blocks[block] = (slab, memory.pointer + offset, ordinal)
            elif kind == "drop":  # a slab whose blocks are all back there
                with link.lock:
                    for block in list(link.slabs.get(message[1], (None, ()))[1]):
                        link.discard(("cuda", block))
            elif kind == "layout":
                self._new_set(link, *message[1:])
            elif kind == "end":
                _, chunk, stages = message
                self._ends[chunk] = True
                self._report._add(stages)
            elif kind == "done":
                with link.lock:
                    link.finished = True
                link.let_go()
            elif kind == "error":
                link.failed = True
                self._fail(link, _error_from(message, self._who(link)))
            else:
                raise InternalError(f"a segment decoder process sent an unknown message {kind!r}")
        finally:
            for fd in fds:
                fd.close()

    def _new_set(
        self, link: _Link, set_id: int, pixel_format: Any, width: int, height: int, geometry: Any
    ) -> None:
        with link.lock:
            old = link.current_set
            slots = _sent_slots()(pixel_format, geometry, link.capacity)
            link.sets[set_id] = slots
            link.current_set = set_id
            if old is not None:  # its slots not held here are idle: the decoder process let go of them
                for index in range(link.capacity):
                    if ("host", old, index) not in link.held:
                        link.sets[old].destroy(index)
            fds = slots.take_fds()
            try:
                assert link.sock is not None
                # A message carries a few dozen descriptors at most (SCM_RIGHTS): the rest go before it.
                while len(fds) > _FDS_PER_MESSAGE:
                    part, fds = fds[:_FDS_PER_MESSAGE], fds[_FDS_PER_MESSAGE:]
                    try:
                        wire.send(link.sock, ("slot-fds", set_id), part)
                    finally:
                        for fd in part:
                            fd.close()
                wire.send(link.sock, ("slots", set_id, slots.layout), fds)
            finally:
                for fd in fds:
                    fd.close()

    def _fail(self, link: _Link, error: BaseException) -> None:
        """The chunks ``link`` has not finished end with ``error`` (after the frames it sent)."""
        for chunk in link.chunks:
            if self._ends[chunk] is False:
                self._ends[chunk] = error
        self._drop_socket(link)

    def _lost(self, link: _Link) -> None:
        """``link``'s socket ended: normal after ``done`` or ``error``, else the process died."""
        if link.finished or link.failed:
            self._drop_socket(link)
            return
        link.failed = True
        self._fail(link, self._died(link))

    def _drop_socket(self, link: _Link) -> None:
        with link.lock:
            sock, link.sock = link.sock, None
        if sock is not None:
            sock.close()
        link.let_go()

    # -- frames -------------------------------------------------------------------------------------------

    def next_frame(self) -> DecodedFrame | None:
        """The next frame in presentation order, or None at the end (see SegmentReader.next_frame)."""
        if self._closed:
            raise ClosedError("this SegmentReader was closed")
        stalled: float | None = None
        now = time.perf_counter()
        if now - self._taken_in > _TAKE_IN_EVERY_S:
            # Frames are waiting here, but the other processes' messages (a slot layout to answer, a
            # full socket) must not wait until the chunk read now runs out.
            self._take_in(0.0)
            self._taken_in = now
        while self._reading < len(self._waiting):
            waiting = self._waiting[self._reading]
            if waiting:
                link, message = waiting.popleft()
                return self._frame(link, message)
            end = self._ends[self._reading]
            if end is True:
                self._reading += 1
                continue
            if isinstance(end, BaseException):
                raise end
            t0 = time.perf_counter()
            self._take_in(_POLL_S)
            self._taken_in = time.perf_counter()
            self._wait_s += self._taken_in - t0
            if waiting or self._ends[self._reading] is not False:
                stalled = None
                continue
            link = self._links[self._reading % self._count]
            if len(link.held) < link.capacity:
                stalled = None
                continue
            # Every frame the decoder process may have here is handed out and still held.
            now = time.monotonic()
            if stalled is None:
                stalled = now
            elif now - stalled > self._wait_timeout():
                raise SurfaceBudgetError(
                    f"all {link.capacity} frames of segment decoder process {link.number} stayed held for "
                    f"{self._wait_timeout():g} s; release frames you hold (or read with a larger ahead)"
                )
        return None

    def _frame(self, link: _Link, message: tuple[Any, ...]) -> DecodedFrame:
        _, _, key, refs, (pts, duration, key_frame), described = message
        values = link.values
        pixel_format, colour = values[refs[0]], values[refs[1]]
        identity = link.identities.get(refs[2])
        if identity is None:  # the decoder id is this process's
            identity = dataclasses.replace(values[refs[2]], decoder_id=link.decoder_id)
            link.identities[refs[2]] = identity
        metadata = dataclasses.replace(values[refs[3]], pts=pts, duration=duration, key_frame=key_frame)
        holder = _Held()
        planes: CpuPlaneSet | tuple[CudaPtr2D, ...]
        with link.lock:
            if key[0] == "cuda":
                _, address, ordinal = link.blocks[key[1]]
                planes = tuple(
                    CudaPtr2D(
                        device_ptr=address + offset,
                        pitch_bytes=pitch,
                        width_bytes=width_bytes,
                        height=height,
                        device_ordinal=ordinal,
                        keep_alive=holder,
                    )
                    for offset, pitch, width_bytes, height in described
                )
            else:
                shared = link.sets[key[1]].planes(key[2])
                planes = CpuPlaneSet(
                    tuple(
                        CpuPlane(
                            data=_held_bytes(plane.data, holder),
                            bytes_per_row=plane.bytes_per_row,
                            width_bytes=plane.width_bytes,
                            height=plane.height,
                            keep_alive=holder,
                        )
                        for plane in shared.planes
                    ),
                    keep_alive=holder,
                )
        giving_back = weakref.finalize(holder, link.give_back, key)
        giving_back.atexit = False  # the processes' end frees it all
        # The decoder process waited for its copy: nothing to order after (cuda_stream None).
        return DecodedFrame(planes, pixel_format, colour, metadata, identity, keep_alive=holder)

    # -- lifetime -----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every decoder process, and let go of the memory no frame holds (a frame still held keeps
        its block or slot until released). Idempotent."""
        if self._closed:
            return
        self._closed = True
        for link in self._links:
            with link.lock:
                link.closed = True
                sock = link.sock
            if sock is not None:
                try:
                    wire.send(sock, ("close",))
                except (wire.PeerGone, OSError):
                    pass
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        for link in self._links:
            process = link.process
            if process is None:
                continue
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for link in self._links:
            self._drop_socket(link)
        for waiting in self._waiting:  # frames never handed out
            while waiting:
                link, message = waiting.popleft()
                link.give_back(message[2])
        for link in self._links:
            link.let_go()
            if link.stderr is not None:
                link.stderr.close()
                link.stderr = None
        self._report._add({"wait": self._wait_s})


def _shared_route(placement: Any, hwaccel: str) -> tuple[str, str | None]:
    """The hwaccel decoder processes run with, and why it is not the one asked for: NVDEC frames reach
    this process only through device memory shared between processes (a POSIX descriptor), so where
    the GPU cannot share it ``auto`` decodes in software and ``cuda`` is refused."""
    mode = HwAccelMode.parse(hwaccel)
    if placement.cuda_ordinal is None or mode is HwAccelMode.NONE:
        return hwaccel, None
    from alpha2.native_gpu._cuda.ipc import shared_memory_unavailable_reason

    why = shared_memory_unavailable_reason(placement.cuda_ordinal)
    if why is None:
        return hwaccel, None
    why = f"decoder processes hand NVDEC frames over in shared device memory, and {why}"
    if mode is HwAccelMode.CUDA:
        raise UnsupportedError(f"hwaccel='cuda' with decoders='processes': {why}; use decoders='threads'")
    return "none", f"{why}: decoding in software"


def _error_from(message: tuple[Any, ...], who: str) -> BaseException:
    """A decoder process's ``error`` message as the alpha2 error it raised, or a DecodeError naming it."""
    _, module, name, text = message
    return wire.typed_error(module, name, text) or DecodeError(f"{who} failed: {name}: {text}")
