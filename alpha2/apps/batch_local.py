"""``alpha2 batch`` on one machine: several worker processes per GPU, one file each, or CPU workers.

:func:`plan_workers` decides the workers. A GPU is a Vulkan physical device
(:func:`~alpha2.native_gpu.device.candidates.vulkan_candidates`) that is not a CPU device (lavapipe is
one) and has a device UUID; its worker is pinned with ``ALPHA2_GPU_ADAPTER=<uuid>``, so its Device,
and through it NVDEC, land on that GPU (the Device finds the CUDA ordinal with the same UUID: the
ordinal is reported, and ``CUDA_VISIBLE_DEVICES`` is left alone so that ordinals stay the machine's).
Each GPU gets several workers (``--streams``, default cores / GPUs up to :data:`MAX_GPU_STREAMS`; or
``--workers`` in all, spread over the GPUs), each a process transcoding one file at a time, listed
round-robin over the GPUs so that a short batch uses every GPU. Processes, not threads: on the H200,
NVDEC decoding as 14 processes reached 3945 fps against 2704 as 14 threads of one process, and two
transcodes set up at once on threads of one worker aborted it (SIGABRT, or the Vulkan enumeration
seeing no device), while one per process ran clean. Without a GPU, one single-stream worker per core.

:class:`LocalBackend` is the pool: ``spawn`` processes (no fork of a process that may hold a CUDA
context), each with its own pipe (a worker killed mid-write cannot corrupt a queue the others share).
The parent knows which files each worker holds, so when one dies, exactly its files come back as
crashed attempts and a new worker takes its place.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from alpha2.apps.batch_plan import DeviceChoice
from alpha2.apps.batch_run import (
    CRASH_KIND,
    Event,
    FileTask,
    Finished,
    Frames,
    Outcome,
    Started,
    share_device_between_threads,
    transcode_task,
)
from alpha2.gpu.adapters import ADAPTER_ENV, AdapterType, adapter_pin, resolve_adapter_pin
from alpha2.gpu.errors import InternalError, InvalidInputError, UnsupportedError

__all__ = [
    "DeviceChoice",
    "LocalBackend",
    "RssRecord",
    "WorkerSlot",
    "cpu_cores",
    "plan_workers",
    "resident_bytes",
]

MAX_GPU_STREAMS = 8
"""The most streams a GPU worker gets by default (more with ``--streams``)."""

START_FAILURES_ALLOWED = 3
"""Worker deaths in a row with no file finished before the pool gives up (a worker that cannot start)."""


@dataclass(frozen=True)
class WorkerSlot:
    """One worker process to run."""

    label: str
    """``gpu0``, ``cpu3``, ..."""
    streams: int
    """Files it transcodes at once."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment it gets (the adapter pin)."""
    device_type: AdapterType = AdapterType.CPU
    """What it works on."""
    adapter_uuid: str | None = None
    """The pinned GPU's device UUID."""
    cuda_ordinal: int | None = None
    """The pinned GPU's CUDA ordinal, where CUDA sees it."""
    name: str = ""
    """The device's name."""
    shared_device: bool = False
    """Its ``streams`` files run on threads that share one Device (one Vulkan device and CUDA context),
    rather than a Device each (``--shared-device``)."""

    def __post_init__(self) -> None:
        if self.streams < 1:
            raise InvalidInputError(f"streams must be >= 1, got {self.streams}")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "label": self.label,
            "streams": self.streams,
            "device_type": self.device_type.value,
            "name": self.name,
            "adapter_uuid": self.adapter_uuid,
            "cuda_ordinal": self.cuda_ordinal,
            "shared_device": self.shared_device,
        }


def cpu_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _vulkan_candidates() -> list[Any]:
    try:
        from alpha2.api.machine import vulkan_candidates

        return list(vulkan_candidates())
    except Exception:  # no loader or no driver: no GPU to pin, CPU workers
        return []


def _cuda_uuids() -> list[bytes]:
    try:
        from alpha2.api.machine import cuda_device_uuids

        return cuda_device_uuids()
    except Exception:  # no cuda-python or no driver: GPUs without a CUDA ordinal
        return []


def plan_workers(
    *,
    device: DeviceChoice = DeviceChoice.AUTO,
    workers: int | None = None,
    streams: int | None = None,
    candidates: Sequence[Any] | None = None,
    cuda_uuids: Sequence[bytes] | None = None,
    cores: int | None = None,
    environ: Mapping[str, str] | None = None,
    shared_device: bool = False,
) -> list[WorkerSlot]:
    """The workers of a local run.

    Args:
        device: GPUs, CPU or whichever the machine has.
        workers: Worker processes in all: on GPUs, spread over them round-robin (at most ``streams``
            per GPU when that is given too); without a GPU, CPU workers (default: one per core).
        streams: Files per GPU at once, as that many single-file workers (default: cores / GPUs, at
            most :data:`MAX_GPU_STREAMS`); a CPU worker takes this many files at once (default 1).
        candidates: Vulkan candidates (default: :func:`vulkan_candidates`, none when Vulkan is absent).
        cuda_uuids: CUDA device UUIDs by ordinal (default: asked of the CUDA driver).
        cores: CPU cores (default: :func:`cpu_cores`).
        environ: Where ``ALPHA2_GPU_ADAPTER`` is read (default ``os.environ``): a pin there limits the
            workers to the device it names.
        shared_device: One worker process per device, its files (``streams`` of them, default as above;
            on the CPU, ``workers`` or one per core) on threads that share one Device, rather than a
            process and a Device per file: one Vulkan device and one CUDA context a GPU, which the GPU
            does not switch between (``--shared-device``).

    Raises:
        UnsupportedError: ``gpu`` was asked for and there is none.
        AdapterPinError: ``ALPHA2_GPU_ADAPTER`` names no device, or several.
    """
    if workers is not None and workers < 1:
        raise InvalidInputError(f"workers must be >= 1, got {workers}")
    cores = cores if cores is not None else cpu_cores()
    found = list(candidates) if candidates is not None else _vulkan_candidates()
    pin = adapter_pin(environ)
    if pin is not None and found:
        found = resolve_adapter_pin(pin, found)
    gpu_types = (AdapterType.DISCRETE_GPU, AdapterType.INTEGRATED_GPU, AdapterType.VIRTUAL_GPU)
    gpus: list[Any] = []
    seen: set[bytes] = set()
    for c in found:
        if getattr(c, "error", None) is None and c.device_type in gpu_types and c.uuid and c.uuid not in seen:
            seen.add(c.uuid)
            gpus.append(c)
    if device is DeviceChoice.GPU and not gpus:
        raise UnsupportedError(
            "--device gpu: no GPU with a device UUID among the Vulkan devices "
            f"({', '.join(c.name for c in found) or 'none'}); use --device cpu"
        )
    if gpus and device is not DeviceChoice.CPU:
        uuids = list(cuda_uuids) if cuda_uuids is not None else _cuda_uuids()
        per_gpu = streams or max(1, min(MAX_GPU_STREAMS, cores // len(gpus)))
        if shared_device:
            if workers is not None:
                per_gpu = min(per_gpu, max(1, workers // len(gpus)))
            return [
                WorkerSlot(
                    label=f"gpu{i}",
                    streams=per_gpu,
                    env={ADAPTER_ENV: c.uuid_str},
                    device_type=c.device_type,
                    adapter_uuid=c.uuid_str,
                    cuda_ordinal=uuids.index(c.uuid) if c.uuid in uuids else None,
                    name=c.name,
                    shared_device=True,
                )
                for i, c in enumerate(gpus)
            ]
        if workers is None:
            counts = [per_gpu] * len(gpus)
        else:  # ``workers`` processes in all, spread over the GPUs (at most ``streams`` each, if given)
            total = workers if streams is None else min(workers, streams * len(gpus))
            counts = [total // len(gpus) + (i < total % len(gpus)) for i in range(len(gpus))]
        # Round-robin over the GPUs, so that the first files (the pool fills its slots in order) land on
        # every GPU, not all on the first.
        slots = []
        for k in range(max(counts)):
            for i, c in enumerate(gpus):
                if k >= counts[i]:
                    continue
                slots.append(
                    WorkerSlot(
                        label=f"gpu{i}" if counts[i] == 1 else f"gpu{i}.{k}",
                        streams=1,
                        env={ADAPTER_ENV: c.uuid_str},
                        device_type=c.device_type,
                        adapter_uuid=c.uuid_str,
                        cuda_ordinal=uuids.index(c.uuid) if c.uuid in uuids else None,
                        name=c.name,
                    )
                )
        return slots
    # CPU workers render (when asked) on the CPU Vulkan device, never on a GPU the machine may have.
    cpu = next((c for c in found if c.device_type is AdapterType.CPU and c.uuid), None)
    env = {ADAPTER_ENV: cpu.uuid_str} if cpu is not None else {}
    name = cpu.name if cpu is not None else "CPU"
    count = workers or cores
    if shared_device:
        return [
            WorkerSlot(
                label="cpu0",
                streams=streams or count,
                env=dict(env),
                adapter_uuid=None if cpu is None else cpu.uuid_str,
                name=name,
                shared_device=True,
            )
        ]
    return [
        WorkerSlot(
            label=f"cpu{i}",
            streams=streams or 1,
            env=dict(env),
            adapter_uuid=None if cpu is None else cpu.uuid_str,
            name=name,
        )
        for i in range(count)
    ]


# ---------------------------------------------------------------------------------------------------
# the worker process


def resident_bytes() -> int:
    """This process's resident set size now (``/proc/self/statm``; 0 where there is none).

    Not ``resource.getrusage``: its ``ru_maxrss`` is the peak, which never comes down.
    """
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class _Settler:
    """Between files, frees what the last file left in reference cycles, so that a worker's size after
    file N is its size after file 1, whatever the files were.

    Cyclic garbage is freed only by the cyclic collector, and in a process with many long-lived objects
    its full collections are rare: a worker let the GPUDevices of earlier files (each with threads and
    driver memory) and decoded frames pile up, 186 MB after the first files and 373 MB after 150.
    Those cycles are broken where they were made (``Device.close``, ``hdr_metadata_of``); this is the
    backstop for the next one. The first time no file is in flight, what is alive (modules, caches) is
    frozen (``gc.freeze``), so that each later collection visits only what the files made (about 1 ms
    instead of 10-30 ms).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._frozen = False
        self.files_done = 0

    def started(self) -> None:
        with self._lock:
            self._running += 1

    def finished(self) -> tuple[int, int]:
        """Collect; returns (files this process finished, its resident bytes)."""
        with self._lock:
            self._running -= 1
            self.files_done += 1
            done, alone = self.files_done, self._running == 0
        gc.collect()
        if alone and not self._frozen:
            self._frozen = True
            gc.freeze()
        return done, resident_bytes()


def _worker_main(
    conn: multiprocessing.connection.Connection,
    env: dict[str, str],
    streams: int,
    label: str,
    shared_device: bool = False,
) -> None:
    """A worker: transcode the tasks the parent sends, ``streams`` at a time, until told to stop; with
    ``shared_device``, all of them on one Device."""
    os.environ.update(env)
    if shared_device:
        share_device_between_threads()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    from alpha2.apps.cli import ensure_runtime_dir

    ensure_runtime_dir()
    lock = threading.Lock()
    settler = _Settler()

    def send(message: tuple[Any, ...]) -> None:
        with lock, contextlib.suppress(OSError):
            conn.send(message)

    def run(task: FileTask) -> None:
        send(("start", task.key, task.attempt, os.getpid()))
        settler.started()
        try:
            outcome = transcode_task(
                task, lambda frames, total: send(("frames", task.key, frames, total)), worker=label
            )
        finally:
            done, rss_bytes = settler.finished()
        send(("rss", task.key, done, rss_bytes))  # before "done": the parent may stop listening after it
        send(("done", outcome))

    send(("ready", os.getpid()))
    with ThreadPoolExecutor(max_workers=streams, thread_name_prefix=f"alpha2-{label}") as pool:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                break
            if task is None:
                break
            pool.submit(run, task)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


@dataclass(eq=False)
class _Worker:
    slot: WorkerSlot
    process: Any
    conn: multiprocessing.connection.Connection
    held: dict[str, FileTask] = field(default_factory=dict)
    pid: int | None = None


@dataclass(frozen=True)
class RssRecord:
    """A worker's resident size after one file (``--json``'s ``runner.worker_rss``)."""

    file: str
    """The item's key."""
    worker: str
    """The worker's label."""
    pid: int | None
    """Its process id."""
    files_done: int
    """Files that process had finished, this one included."""
    rss_bytes: int
    """Its resident set size then, after collecting what the file left."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "file": self.file,
            "worker": self.worker,
            "pid": self.pid,
            "files_done": self.files_done,
            "rss_bytes": self.rss_bytes,
        }


@contextlib.contextmanager
def _signals_held() -> Any:
    """Hold SIGINT, SIGTERM and SIGHUP while a worker process starts, then send them again: a signal's
    exception raised inside ``Process.start()`` cut the write of the worker's start-up data short, and
    the new process printed multiprocessing's ``EOFError: Ran out of input`` traceback under
    ``alpha2: interrupted`` (an interrupted batch, about one run in three). A signal ignored or left to
    the default stays as it is; outside the main thread nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous: dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        old = signal.getsignal(signum)
        if callable(old):
            previous[signum] = old
            signal.signal(signum, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(held):  # each once, in the order they came, to the handlers again
            os.kill(os.getpid(), number)


class LocalBackend:
    """The local process pool (see the module docstring)."""

    def __init__(self, slots: Sequence[WorkerSlot]) -> None:
        if not slots:
            raise InvalidInputError("a local batch needs at least one worker")
        self.slots = list(slots)
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self._deaths_in_a_row = 0
        self._closed = False
        self.rss: list[RssRecord] = []
        """Each worker's size after each file, in the order they finished."""

    def describe(self) -> dict[str, Any]:
        """The workers, and their resident size after each file."""
        return {
            "runner": "local",
            "workers": [s.as_dict() for s in self.slots],
            "worker_rss": [r.as_dict() for r in self.rss],
        }

    def _spawn(self, slot: WorkerSlot) -> _Worker:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main,
            args=(child, slot.env, slot.streams, slot.label, slot.shared_device),
            name=f"alpha2-batch-{slot.label}",
            daemon=True,
        )
        with _signals_held():
            process.start()
        child.close()
        return _Worker(slot, process, parent)

    def start(self) -> None:
        """Start one process per slot."""
        self._workers = [self._spawn(slot) for slot in self.slots]

    def capacity(self) -> int:
        """Free streams over all workers."""
        return sum(w.slot.streams - len(w.held) for w in self._workers)

    def submit(self, task: FileTask) -> None:
        """Give ``task`` to the worker with the most free streams."""
        worker = max(self._workers, key=lambda w: w.slot.streams - len(w.held))
        if len(worker.held) >= worker.slot.streams:
            raise InternalError("LocalBackend.submit with no free stream")
        worker.held[task.key] = task
        try:
            worker.conn.send(task)
        except OSError:
            pass  # the worker is dying: poll() sees it go and hands the task back as a crash

    def _receive(self, worker: _Worker, events: list[Event]) -> bool:
        """Take every message waiting on ``worker``'s pipe; False when the pipe is closed."""
        try:
            while worker.conn.poll():
                message = worker.conn.recv()
                kind = message[0]
                if kind == "ready":
                    worker.pid = message[1]
                elif kind == "start":
                    events.append(Started(message[1], message[2], worker.slot.label, message[3]))
                elif kind == "frames":
                    events.append(Frames(message[1], message[2], message[3]))
                elif kind == "rss":
                    key, done, rss_bytes = message[1:]
                    self.rss.append(RssRecord(key, worker.slot.label, worker.pid, done, rss_bytes))
                elif kind == "done":
                    outcome: Outcome = message[1]
                    if worker.held.pop(outcome.key, None) is not None:
                        events.append(Finished(outcome))
                        self._deaths_in_a_row = 0
        except (EOFError, OSError):
            return False
        return True

    def _buried(self, worker: _Worker, events: list[Event]) -> _Worker:
        """Hand a dead worker's files back as crashed attempts; a new worker takes its slot."""
        worker.process.join(timeout=5)
        code = worker.process.exitcode
        how = _exit_text(code)
        for key in list(worker.held):
            reason = f"the worker process {worker.pid or worker.process.pid} ({worker.slot.label}) {how}"
            events.append(
                Finished(Outcome(key, False, worker.slot.label, error=reason, error_kind=CRASH_KIND))
            )
        worker.held.clear()
        worker.conn.close()
        self._deaths_in_a_row += 1
        if self._deaths_in_a_row > START_FAILURES_ALLOWED * len(self.slots):
            raise InternalError(f"alpha2 batch workers keep dying (the last {how}); giving up")
        return self._spawn(worker.slot)

    def poll(self, timeout: float) -> list[Event]:
        """Messages from the workers; a dead worker's files come back as crashed attempts."""
        waitables: list[Any] = [w.conn for w in self._workers] + [w.process.sentinel for w in self._workers]
        multiprocessing.connection.wait(waitables, timeout)
        events: list[Event] = []
        for i, worker in enumerate(self._workers):
            open_pipe = self._receive(worker, events)
            if not open_pipe or not worker.process.is_alive():
                self._receive(worker, events)  # what it said before it went
                self._workers[i] = self._buried(worker, events)
        return events

    def close(self) -> None:
        """Ask the workers to stop, then end those that do not (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for worker in self._workers:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        for worker in self._workers:
            worker.process.join(timeout=10 if not worker.held else 0.5)
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        self._workers.clear()
