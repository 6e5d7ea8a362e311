"""A decode session in a process of its own, whose frames arrive as textures of this process's device.

:class:`DecodeProcess` starts a decoder process (:mod:`.decode_worker`) for one source and gives its
frames out as :class:`~alpha2.native_gpu.interop.leases.ImportLease` objects on this process's Device,
through slots both processes map (:mod:`alpha2.native_gpu.interop.handoff`):

* NVDEC frames and a Dawn device on the same GPU: the GPU copy. The decoder process copies each frame
  into a slot's Vulkan images on the GPU and waits for the copy; this process only begins and ends
  Dawn's access (its end-of-access fence goes back with the slot, and the next copy into it waits on
  it). No byte crosses the CPU, and this process makes no CUDA call.
* Software-decoded frames (or a device without that route): shared host memory, uploaded here by the
  CPU upload straight from the shared pages.

Why: with many streams in one process, each per-frame call that lets go of the GIL (PyAV's demux and
decode, the CUDA driver, Dawn) waits to get it back behind the others. A decoder process has a GIL of
its own. (On the H200, 14 NVDEC streams decoded at 2450 frames/s in one process, but imported at most
1150; BENCHMARKS.md has the figures with processes.)

What differs from a :class:`~alpha2.ffmpeg_bridge.DecodeSession` in this process: the source must be a
path; each process has its own CUDA context; the surfaces a stream holds in this process are its
``slots`` (counted against ``budget`` when one is given, one surface per slot); a failure in the
decoder process is raised here, typed, by the next :meth:`DecodeProcess.next_frame`.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import os
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from alpha2.api import arguments
from alpha2.api import decode_worker as wire
from alpha2.ffmpeg_bridge.errors import DecodeError
from alpha2.ffmpeg_bridge.hwdevice import HwAccelMode, HwAccelReport, plan_hw_device
from alpha2.gpu.errors import (
    ClosedError,
    GpuTimeoutError,
    InternalError,
    InvalidInputError,
    UnsupportedError,
)
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.handles import OwnedFd
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.surfaces import SurfaceBudget, SurfaceIdentity, SurfaceReservation

if TYPE_CHECKING:
    from alpha2.ffmpeg_bridge.decode import DecodeStats
    from alpha2.ffmpeg_bridge.media import StreamInfo
    from alpha2.native_gpu.device.device import Device
    from alpha2.native_gpu.interop.importer import FrameImporter
    from alpha2.native_gpu.interop.leases import ImportLease
    from alpha2.native_gpu.paths import PathReport

__all__ = ["DecodeProcess", "open_processes"]

_STOP_TIMEOUT_S = 5.0


class _Set:
    """One slot set of the stream (one layout): the memory, and which slots this process holds."""

    def __init__(
        self, set_id: int, slots: Any, identity: SurfaceIdentity, reservations: list[SurfaceReservation]
    ):
        self.set_id = set_id
        self.slots = slots  # a DawnSlotSet or a HostSlotSet
        self.identity = identity
        self.reservations = reservations
        self.here: set[int] = set()  # slots this process holds (a frame waiting, or handed out)
        self.destroyed: set[int] = set()
        self.uses = 0

    def destroy(self, index: int) -> None:
        if index in self.destroyed:
            return
        self.destroyed.add(index)
        self.slots.destroy(index)
        if len(self.destroyed) == len(self.reservations):
            for reservation in self.reservations:
                reservation.release()


class _SlotHold:
    """A host-memory frame's slot (the frame's ``ahead`` work: the decoder process wrote the planes);
    released with the frame, once the CPU upload has copied them, which gives the slot back."""

    __slots__ = ("_give_back",)

    def __init__(self, give_back: Any) -> None:
        self._give_back = give_back

    def discard(self) -> None:
        give_back, self._give_back = self._give_back, None
        if give_back is not None:
            give_back()


class DecodeProcess:
    """Decode ``source`` in a process of its own; its frames come out as leases on ``device``.

    Typical use::

        with DecodeProcess("a.mp4", device=device) as stream:
            while (lease := stream.next_frame()) is not None:
                with lease:
                    ...  # encode the passes that sample lease.frame.views, then submit them

    Args:
        source: a path (the decoder process opens it itself).
        device: the alpha2 Device the frames go to (or the application's GPUDevice, adopted).
        hwaccel: ``auto``, ``cuda`` or ``none``, as for a DecodeSession. NVDEC frames are handed over
            only by the GPU copy (a Dawn device on NVDEC's GPU): ``auto`` decodes in software when the
            device cannot take it, saying why in :attr:`hwaccel_report`; ``cuda`` raises.
        slots: frames the stream may hold in this process at once: handed out and decoded ahead.
        prefetch: frames the decoder process decodes ahead of a free slot.
        budget: where each slot counts as one surface (None: not counted; the slots bound it).
        on_corrupt, stream_index, threads: as for a DecodeSession.
        start_timeout_s: how long the decoder process may take to open the source.

    Raises:
        InvalidInputError: a source that is not a path, bad counts.
        UnsupportedError: ``hwaccel='cuda'`` on a device the GPU copy cannot reach.
        alpha2.gpu.Error subclasses: what opening the source raised in the decoder process
            (MediaNotFoundError, NoVideoStreamError, ...), raised here with its type.
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        *,
        device: Any,
        hwaccel: HwAccelMode | str = "auto",
        slots: int = 3,
        prefetch: int = 2,
        budget: SurfaceBudget | None = None,
        on_corrupt: str = "keep",
        stream_index: int | None = None,
        threads: int = 0,
        start_timeout_s: float = 60.0,
    ) -> None:
        from alpha2.ffmpeg_bridge.decode import _next_decoder_id
        from alpha2.native_gpu.device.device import Device
        from alpha2.native_gpu.device.waits import gpu_wait_timeout
        from alpha2.native_gpu.interop.handoff import gpu_route_unavailable_reason
        from alpha2.native_gpu.interop.leases import TicketCounter

        if not isinstance(source, str | os.PathLike):
            raise InvalidInputError(
                f"a DecodeProcess opens a path (its decoder process opens it), got {type(source).__name__}"
            )
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise InvalidInputError(f"slots must be an int >= 1, got {slots!r}")
        # Checked here, before a process starts, as a DecodeSession checks them: prefetch='x' was a
        # TypeError, 1.5 and True were taken, threads='x' came back as the decoder process's ValueError.
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
            raise InvalidInputError(f"prefetch must be a whole number >= 0 frames, got {prefetch!r}")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise InvalidInputError(f"threads must be a whole number >= 0 (0: one per core), got {threads!r}")
        start_timeout_s = arguments.real("start_timeout_s", start_timeout_s, above=0.0)
        self.source = os.fspath(source)
        """What was opened."""
        self.device: Device = Device.adopt(device)
        """The Device the frames go to."""
        self.slots = slots
        """Frames the stream may hold in this process at once."""
        self.budget = budget
        """Where each slot counts as one surface, or None."""
        self.decoder_id = _next_decoder_id()
        """This stream's decoder id in this process (its frames' ``SurfaceIdentity.decoder_id``)."""
        self._wait_timeout = gpu_wait_timeout
        self._lock = threading.RLock()  # the state: sets, ready messages, sends
        self._receiving = threading.Lock()  # taken by the one caller waiting for a message
        self._closed = False
        self._ended = False
        self._sets: dict[int, _Set] = {}
        self._current: _Set | None = None
        self._ready: collections.deque[tuple[Any, ...]] = collections.deque()
        self._importer: FrameImporter | None = None
        self._counter = TicketCounter()
        self._ids = itertools.count(1)
        self._frames_by_path: collections.Counter[ExecutionPath] = collections.Counter()
        self._notes: collections.Counter[str] = collections.Counter()  # slot sets that fell back
        self._stats: DecodeStats | None = None
        self._started = False  # the decoder process decodes once told to ("start"), from a seek or not
        self._seek_s: float | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._stderr: Any = None
        self._info: StreamInfo
        self._report: HwAccelReport

        mode = HwAccelMode.parse(hwaccel)
        plan = plan_hw_device(mode, None, self.device)
        gpu_reason = gpu_route_unavailable_reason(self.device) if plan.use_cuda else None
        note: str | None = None
        worker_mode, ordinal = (mode, plan.cuda_ordinal) if plan.use_cuda else (HwAccelMode.NONE, None)
        if plan.use_cuda and gpu_reason is not None:
            why = f"a decoder process hands NVDEC frames over only by the GPU copy, and {gpu_reason}"
            if mode is HwAccelMode.CUDA:
                raise UnsupportedError(
                    f"hwaccel='cuda' in a decoder process: {why}; use hwaccel='auto' or 'none'"
                )
            note, worker_mode, ordinal = f"{why}: decoding in software", HwAccelMode.NONE, None
        elif not plan.use_cuda and mode is HwAccelMode.AUTO:
            note = plan.reason
        self._gpu_route = plan.use_cuda and gpu_reason is None
        try:
            self._start(
                {
                    "source": self.source,
                    "hwaccel": worker_mode.value,
                    "cuda_ordinal": ordinal,
                    "prefetch": prefetch,
                    "on_corrupt": on_corrupt,
                    "stream_index": stream_index,
                    "threads": threads,
                    "wait_timeout_s": gpu_wait_timeout(),
                },
                start_timeout_s,
            )
        except BaseException:
            self.close()
            raise
        if note is not None:
            self._report = dataclasses.replace(
                self._report, requested=mode, fallback_reason=note, reason=note
            )

    # -- the decoder process ----------------------------------------------------------------------------

    def _start(self, options: dict[str, Any], timeout_s: float) -> None:
        parent, self._process, self._stderr = wire.start_worker(
            "alpha2.api.decode_worker", "a decoder process"
        )
        self._sock = parent
        wire.send(parent, ("open", options))
        message, fds = self._receive(time.monotonic() + timeout_s, "open the source")
        for fd in fds:
            fd.close()
        if message[0] == "error":
            raise self._error(message)
        if message[0] != "info":
            raise InternalError(f"a decoder process answered {message[0]!r} to open")
        self._info = message[1]
        self._report = message[2]

    def _receive(self, deadline: float | None, what: str) -> tuple[tuple[Any, ...], list[OwnedFd]]:
        """The decoder process's next message, waiting up to ``deadline`` (None: while it lives)."""
        if self._sock is None:
            raise ClosedError("this DecodeProcess was closed")
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise GpuTimeoutError(f"the decoder process of {self.source} did not {what} in time")
            try:
                got = wire.receive(self._sock, 1.0 if left is None else min(left, 1.0))
            except wire.PeerGone:
                raise self._died() from None
            if got is not None:
                return got
            if self._process is not None and self._process.poll() is not None:
                got = wire.receive(self._sock, 0.0) if self._readable() else None
                if got is not None:
                    return got
                raise self._died()

    def _readable(self) -> bool:
        import select

        assert self._sock is not None
        return bool(select.select([self._sock], [], [], 0)[0])

    def _died(self) -> DecodeError:
        code = None
        if self._process is not None:
            try:
                code = self._process.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass
        tail = ""
        if self._stderr is not None:
            try:
                self._stderr.seek(0)
                lines = self._stderr.read().decode(errors="replace").strip().splitlines()
                if lines:
                    tail = f": {lines[-1]}"
            except (OSError, ValueError):
                pass
        return DecodeError(
            f"the decoder process of {self.source} ended unexpectedly (exit code {code}){tail}"
        )

    def _error(self, message: tuple[Any, ...]) -> BaseException:
        _, module, name, text = message
        return wire.typed_error(module, name, text) or DecodeError(
            f"the decoder process of {self.source} failed: {name}: {text}"
        )

    # -- what it is ---------------------------------------------------------------------------------------

    @property
    def info(self) -> StreamInfo:
        """The video stream's codec, size, frame count, rate, time base and duration."""
        return self._info

    @property
    def hwaccel_report(self) -> HwAccelReport:
        """Where the decoder process decodes, and why."""
        return self._report

    @property
    def path(self) -> ExecutionPath:
        """How frames reach the device: GPU_COPY (NVDEC frames, a Dawn device on their GPU) or
        CPU_UPLOAD (host memory)."""
        return ExecutionPath.GPU_COPY if self._gpu_route and self._report.on_gpu else ExecutionPath.CPU_UPLOAD

    @property
    def stats(self) -> DecodeStats | None:
        """The decoder process's counters, once the stream has ended (None before)."""
        return self._stats

    @property
    def decoded_ahead(self) -> tuple[int, int]:
        """Frames waiting here to be handed out, and the most there can be (``slots``)."""
        with self._lock:
            if self._receiving.acquire(blocking=False):  # else a next_frame is taking them in now
                try:
                    self._pump()
                finally:
                    self._receiving.release()
            return sum(1 for m in self._ready if m[0] == "frame"), self.slots

    @property
    def path_report(self) -> PathReport[ExecutionPath]:
        """The paths frames took (a CPU-upload stream's own importer's report), with the fallbacks: a
        slot set of NVDEC frames the GPU copy does not take (their format) counts once, downloaded by
        the decoder process."""
        from alpha2.native_gpu.interop.importer import import_report

        if self._importer is not None:
            report = self._importer.path_report
            frames = collections.Counter(report.frames_by_path) + self._frames_by_path
            notes = collections.Counter(report.fallbacks) + self._notes
            return dataclasses.replace(report, frames_by_path=dict(frames), fallbacks=dict(notes))
        return import_report(self.device.info, frames_by_path=self._frames_by_path, fallbacks=self._notes)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    # -- frames -------------------------------------------------------------------------------------------

    def next_frame(self, timeout_s: float | None = None) -> ImportLease | None:
        """The next frame, as a lease on the device's textures (None at the end of the stream).

        Waits for the decoder process: up to ``timeout_s`` (None: while it lives); when every slot is
        held here by leases not released, up to the GPU wait timeout.

        Raises:
            ClosedError: the stream was closed.
            GpuTimeoutError: nothing came within the wait (every slot held: release leases).
            alpha2.gpu.Error subclasses: the decoder process failed (its error, with its type), or
                ended unexpectedly (DecodeError); importing failed here.
        """
        # One caller receives at a time; the state lock is not held while waiting, so that a lease
        # released on another thread gives its slot back meanwhile.
        with self._receiving:
            message = self._next_message(timeout_s)
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeProcess was closed")
            kind = message[0]
            if kind == "end":
                self._ended = True
                self._stats = message[1]
                return None
            if kind == "error":
                self._ended = True
                raise self._error(message)
            return self._deliver(message)

    def _next_message(self, timeout_s: float | None) -> tuple[Any, ...]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            with self._lock:
                if self._closed:
                    raise ClosedError("this DecodeProcess was closed")
                if self._ready:
                    return self._ready.popleft()
                if self._ended:
                    return ("end", self._stats)
                self._start_decoding()
                wait_until = deadline
                current = self._current
                if current is not None and len(current.here) >= self.slots:
                    held = time.monotonic() + self._wait_timeout()
                    wait_until = held if wait_until is None else min(wait_until, held)
            try:
                got = self._receive(wait_until, "send a frame")
            except (OSError, ValueError) as exc:  # closed by another thread meanwhile
                if self._closed:
                    raise ClosedError("this DecodeProcess was closed") from exc
                raise
            with self._lock:
                self._handle(*got)

    def seek(self, seconds: float) -> None:
        """Start at ``seconds`` (the frame a DecodeSession's seek gives there). Only before the first
        frame is asked for: the decoder process seeks before it decodes.

        Raises:
            ClosedError: the stream was closed.
            InvalidInputError: a negative time.
            UnsupportedError: frames were already asked for (:meth:`next_frame`, :attr:`decoded_ahead`).
        """
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeProcess was closed")
            if seconds < 0:
                raise InvalidInputError(f"seek needs a time >= 0 s, got {seconds}")
            if self._started:
                raise UnsupportedError(
                    "a DecodeProcess seeks only before its first frame (its decoder process has begun "
                    "decoding); open a new one to start elsewhere"
                )
            self._seek_s = float(seconds)

    def _start_decoding(self) -> None:
        if not self._started and self._sock is not None:
            self._started = True
            wire.send(self._sock, ("start", self._seek_s))

    def _pump(self) -> None:
        """Take in the messages waiting, without blocking."""
        if self._sock is None or self._ended:
            return
        self._start_decoding()
        while True:
            try:
                got = wire.receive(self._sock, 0.0)
            except wire.PeerGone:
                if self._ready and self._ready[-1][0] in ("end", "error"):
                    return
                raise self._died() from None
            if got is None:
                return
            self._handle(*got)

    def _handle(self, message: tuple[Any, ...], fds: list[OwnedFd]) -> None:
        for fd in fds:  # the decoder process sends none
            fd.close()
        kind = message[0]
        if kind == "layout":
            self._new_set(*message[1:])
        elif kind == "frame":
            stream_set = self._sets[message[1]]
            stream_set.here.add(message[2])
            self._ready.append(message)
        elif kind in ("end", "error"):
            self._ready.append(message)
        else:
            raise InternalError(f"a decoder process sent an unknown message {kind!r}")

    def _new_set(
        self, set_id: int, pixel_format: Any, width: int, height: int, geometry: Any, on_gpu: bool
    ) -> None:
        from alpha2.native_gpu.interop import handoff
        from alpha2.native_gpu.interop.cpu_upload import check_16bit
        from alpha2.native_gpu.interop.cuda_vk import _uncopyable_reason
        from alpha2.native_gpu.interop.ring import RingKey

        old = self._current
        if old is not None:  # the decoder process wrote its last frame into it: the rest is idle
            for index in range(self.slots):
                if index not in old.here:
                    old.destroy(index)
        identity = SurfaceIdentity(self.decoder_id, set_id, width, height, pixel_format)
        key = RingKey(self.decoder_id, set_id, pixel_format, geometry)
        reservations: list[SurfaceReservation] = []
        slots: Any = None
        check_16bit(self.device.info, geometry, pixel_format)
        uncopyable = _uncopyable_reason(pixel_format) if on_gpu else None
        if uncopyable is not None:  # downloaded by the decoder process, then uploaded here: said so
            self._notes[f"NVDEC frames downloaded by the decoder process: {uncopyable}"] += 1
        try:
            if on_gpu and self._gpu_route and uncopyable is None:
                slots = handoff.DawnSlotSet(self.device, key, self.slots, self._wait_timeout())
            else:
                slots = handoff.HostSlotSet(pixel_format, geometry, self.slots)
            if self.budget is not None:
                for _ in range(self.slots):
                    reservations.append(self.budget.reserve(slots.layout.slot_bytes, identity))
            fds = slots.export_fds()
            try:
                assert self._sock is not None
                wire.send(self._sock, ("slots", set_id, slots.layout), fds)
            finally:
                for fd in fds:
                    fd.close()
        except BaseException:
            for reservation in reservations:
                reservation.release()
            if slots is not None:
                slots.close()
            raise
        stream_set = _Set(set_id, slots, identity, reservations)
        self._sets[set_id] = stream_set
        self._current = stream_set

    def _deliver(self, message: tuple[Any, ...]) -> ImportLease:
        from alpha2.native_gpu.interop.handoff import DawnSlotSet
        from alpha2.native_gpu.interop.leases import ImportLease

        _, set_id, index, metadata, colour, strides = message
        stream_set = self._sets[set_id]
        identity = stream_set.identity
        give_back = functools.partial(self._give_back, stream_set, index)
        if isinstance(stream_set.slots, DawnSlotSet):
            try:
                stream_set.slots.begin(index)
            except BaseException:
                give_back()
                raise
            stream_set.uses += 1
            imported = stream_set.slots.imported(
                index,
                pixel_format=identity.pixel_format,
                colour=colour,
                metadata=metadata,
                identity=identity,
                strides=strides,
                uses=stream_set.uses,
            )
            self._frames_by_path[ExecutionPath.GPU_COPY] += 1
            self._counter.on_acquired(False)
            return ImportLease(imported, give_back, None, self._counter, ticket_id=next(self._ids))
        frame = DecodedFrame(
            stream_set.slots.planes(index),
            identity.pixel_format,
            colour,
            metadata,
            identity,
            ahead=_SlotHold(give_back),
        )
        try:
            return self._host_importer().import_frame(frame)
        except BaseException:
            frame.release()
            raise

    def _host_importer(self) -> FrameImporter:
        from alpha2.native_gpu.interop.importer import FrameImporter

        if self._importer is None:
            self._importer = FrameImporter(self.device, require=ExecutionPath.CPU_UPLOAD, slots=2)
        return self._importer

    def _give_back(self, stream_set: _Set, index: int) -> None:
        """A slot comes back from its lease (any thread): to the decoder process, with the fence its
        next write waits for; a slot of an older set, or of a closed stream, is destroyed."""
        from alpha2.native_gpu.interop.handoff import DawnSlotSet

        with self._lock:
            stream_set.here.discard(index)
            fences: list[tuple[str, OwnedFd]] = []
            try:
                if isinstance(stream_set.slots, DawnSlotSet) and index not in stream_set.destroyed:
                    fences = stream_set.slots.end(index)
            except BaseException:
                stream_set.destroy(index)  # broken: the decoder process goes on with one slot fewer
                raise
            try:
                if self._closed or stream_set is not self._current or self._sock is None:
                    stream_set.destroy(index)
                    return
                try:
                    wire.send(
                        self._sock,
                        ("free", stream_set.set_id, index, [kind for kind, _ in fences]),
                        [fd for _, fd in fences],
                    )
                except (wire.PeerGone, OSError):
                    stream_set.destroy(index)  # the next next_frame reports the decoder process's end
            finally:
                for _, fd in fences:
                    fd.close()

    # -- lifetime -----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the decoder process and destroy the slots not held (a lease still held keeps its slot
        until released). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            ready, self._ready = list(self._ready), collections.deque()
            for message in ready:
                if message[0] == "frame":
                    self._sets[message[1]].here.discard(message[2])
            sock, self._sock = self._sock, None
            if sock is not None:
                try:
                    wire.send(sock, ("close",))
                except (wire.PeerGone, OSError):
                    pass
            process = self._process
            if process is not None:
                try:
                    process.wait(timeout=_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if sock is not None:
                sock.close()
            for stream_set in self._sets.values():
                for index in range(self.slots):
                    if index not in stream_set.here:
                        stream_set.destroy(index)
            if self._stderr is not None:
                self._stderr.close()
        if self._importer is not None:
            self._importer.close()

    def __enter__(self) -> DecodeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("ended" if self._ended else "open")
        return f"<DecodeProcess {self.source!r} {self.path.value} {state}>"


def open_processes(sources: Sequence[str | os.PathLike[str]], **options: Any) -> list[DecodeProcess]:
    """One DecodeProcess per source (``options`` as for DecodeProcess), opened side by side: each
    decoder process starts and opens its source while the others do. On a failure the ones opened are
    closed and the first failure (in source order) is raised."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(16, max(1, len(sources)))) as pool:
        futures = [pool.submit(DecodeProcess, source, **options) for source in sources]
    opened: list[DecodeProcess] = []
    failure: BaseException | None = None
    for future in futures:
        error = future.exception()
        if error is None:
            opened.append(future.result())
        elif failure is None:
            failure = error
    if failure is not None:
        for stream in opened:
            stream.close()
        raise failure
    return opened
