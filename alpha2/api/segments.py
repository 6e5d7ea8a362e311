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

A stream whose key frames carry no timestamps, or that has fewer than two chunks' worth of packets,
is read by one session (and the report says why).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from alpha2.api.devices import open_decoder, place_decoder
from alpha2.ffmpeg_bridge.decode import DecodeSession, MediaSource
from alpha2.ffmpeg_bridge.index import KeyframeIndex, keyframe_index
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.frames import DecodedFrame
from alpha2.native_gpu.device.device import Device

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
    if min_packets < 1:
        raise InvalidInputError(f"min_packets must be >= 1, got {min_packets}")
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
    reader's (``wait``: for the next frame)."""

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

    Iterate it (or call :meth:`next_frame`); release each frame when done with it. Close it (or use
    ``with``) to stop the sessions.

    Raises:
        InvalidInputError: a file object, or bad numbers.
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
    ) -> None:
        if callable(getattr(source, "read", None)):
            raise InvalidInputError("segment-parallel decoding reads the file several times: give a path")
        if sessions < 1:
            raise InvalidInputError(f"sessions must be >= 1, got {sessions}")
        if ahead < 1:
            raise InvalidInputError(f"ahead must be >= 1 frame, got {ahead}")
        self.source = source
        """What was opened."""
        self._device = device
        self._hwaccel = hwaccel
        self._ahead = ahead
        index = keyframe_index(source)
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
        self.report = SegmentReport(sessions=count, chunks=len(chunks), reason=reason)
        """How the file is being read."""
        self._queues: list[queue.Queue[DecodedFrame | _End]] = [queue.Queue(maxsize=ahead) for _ in chunks]
        self._reading = 0  # the chunk the reader is in
        self._wait_s = 0.0
        self._progress = threading.Condition()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._closed = False
        self._sessions: list[DecodeSession] = []
        self._pools: list[Any] = []
        self._threads: list[threading.Thread] = []
        try:
            placement = place_decoder(device, hwaccel)  # once: every session decodes on that GPU
            for _ in range(count):
                session = open_decoder(source, device, placement=placement, hwaccel=hwaccel)
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
            frame = session.next_frame()
            t1 = clock()
            stages["decode"] += t1 - t0
            if frame is None:
                return
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
