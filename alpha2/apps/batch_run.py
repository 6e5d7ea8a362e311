"""How ``alpha2 batch`` runs its files, whatever runs them: tasks, events, the driver loop, the lock.

A backend (the local process pool in :mod:`alpha2.apps.batch_local`, Ray in :mod:`alpha2.apps.batch_ray`)
takes :class:`FileTask` s and answers with events: :class:`Started`, :class:`Frames` and exactly one
:class:`Finished` per task. :func:`run_batch` drives it: it hands out tasks as the backend has room,
retries transient failures (:func:`~alpha2.apps.batch_plan.is_transient`), records each finished
output in the manifest and turns the rest into one-line reasons.

The work of one file is :func:`transcode_task`, the same in every backend: the output is written into
its own staging folder in the output folder, then renamed into place (one filesystem: the rename is
atomic). A worker killed half-way leaves only its staging folder, which the driver removes before the
file is tried again; so nothing half-written ever appears under an output's name.

The output folder may be one that others can write into, so nothing there is taken on trust: the
driver makes the staging root itself (mode 0700, after removing whatever had its name), each attempt
gets a staging folder with an unguessable name (:func:`staging_dir`, a random suffix) made exclusively
(``mkdir`` follows no link and fails on a name that exists), an output's folder must not lead out of
the output folder through a symbolic link, and the lock is opened without following a link or waiting
on a FIFO (:func:`~alpha2.api.atomic.open_regular`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import errno
import hashlib
import os
import re
import secrets
import shutil
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from alpha2.api import pipeline
from alpha2.api.atomic import open_regular
from alpha2.apps.batch_plan import (
    STAGING_NAME,
    BatchItem,
    FileResult,
    FileStatus,
    Manifest,
    is_transient,
    one_line,
)
from alpha2.gpu.errors import Error, ErrorKind, InvalidInputError
from alpha2.gpu.option_names import current_names, option_names

if TYPE_CHECKING:
    from alpha2.api.transcode_plan import TranscodeOptions
    from alpha2.api.transcode_report import TranscodeStats

__all__ = [
    "CRASH_KIND",
    "Backend",
    "BatchLock",
    "Event",
    "FileTask",
    "Finished",
    "Frames",
    "GaveUp",
    "Notice",
    "Outcome",
    "Planned",
    "Retrying",
    "Started",
    "prepare_staging",
    "run_batch",
    "staging_dir",
    "transcode_notes",
    "transcode_task",
]

CRASH_KIND = "crash"
"""``error_kind`` of a file whose worker died under it."""

LOCK_NAME = ".alpha2-batch.lock"
"""The lock file in the output folder: one batch run per output folder at a time."""


@dataclass(frozen=True)
class FileTask:
    """One attempt at one file, as a worker gets it (picklable)."""

    key: str
    """The item's key (its output path relative to the output folder)."""
    input: str
    """Absolute input path."""
    output: str
    """Absolute final output path."""
    staging: str
    """The folder this attempt writes into before the rename (removed before and after)."""
    options: TranscodeOptions
    """The transcode options."""
    attempt: int = 1
    """1 for the first attempt."""
    option_names: tuple[tuple[str, str], ...] = ()
    """How the run's errors name the options (field, spelling): the caller's
    :func:`~alpha2.gpu.option_names.option_names` when the batch began (``--size`` on the command line),
    set again where the file runs: a worker process or thread does not inherit the context."""


@dataclass(frozen=True)
class Outcome:
    """How one attempt ended (picklable)."""

    key: str
    """The item's key."""
    ok: bool
    """Whether the output is in place."""
    worker: str = ""
    """Which worker ran it."""
    frames: int = 0
    """Frames transcoded."""
    seconds: float = 0.0
    """The transcode's wall time."""
    output_bytes: int = 0
    """Size of the output."""
    paths: dict[str, int] = field(default_factory=dict)
    """Frames per ExecutionPath value."""
    mode: str | None = None
    """``passthrough`` or ``gpu``."""
    error: str | None = None
    """One line: why it failed."""
    error_kind: str | None = None
    """The ErrorKind value, :data:`CRASH_KIND` for a dead worker, None for a non-alpha2 error."""
    notes: tuple[str, ...] = ()
    """What the transcode changed or met, as its summary says it
    (:func:`~alpha2.api.transcode_report.summary_notes`)."""
    dropped_streams: tuple[dict[str, Any], ...] = ()
    """The streams left out of the output, ``{index, kind, codec, reason}`` each."""

    @property
    def crashed(self) -> bool:
        """Whether the worker died under the file."""
        return self.error_kind == CRASH_KIND

    @property
    def kind(self) -> ErrorKind | None:
        """The failure's ErrorKind (None for a crash or a non-alpha2 error)."""
        try:
            return ErrorKind(self.error_kind) if self.error_kind else None
        except ValueError:
            return None


@dataclass(frozen=True)
class Started:
    """A worker began an attempt."""

    key: str
    """The item's key."""
    attempt: int
    """Which attempt."""
    worker: str
    """The worker's label."""
    pid: int | None = None
    """Its process id, where it is a local process."""


@dataclass(frozen=True)
class Frames:
    """Progress inside a file."""

    key: str
    """The item's key."""
    frames: int
    """Frames done so far in this attempt."""
    total: int | None
    """Frames expected, when known."""


@dataclass(frozen=True)
class Finished:
    """An attempt ended."""

    outcome: Outcome
    """How."""


@dataclass(frozen=True)
class Retrying:
    """A failed attempt will be tried again (the driver's own event)."""

    key: str
    """The item's key."""
    attempt: int
    """The attempt that failed."""
    reason: str
    """Its one-line reason."""


@dataclass(frozen=True)
class GaveUp:
    """A file failed for good: its failure is not transient, or its retries are spent (the driver's
    own event, after its last :class:`Finished`)."""

    key: str
    """The item's key."""
    input: str
    """The input's path."""
    reason: str
    """The one-line reason."""


@dataclass(frozen=True)
class Planned:
    """The inputs are known (the first event of a batch)."""

    files: int
    """Inputs in all."""
    skipped: int
    """Of those, done by an earlier run."""


@dataclass(frozen=True)
class Notice:
    """Something the run says once, in one line (a manifest set aside)."""

    text: str
    """The line, without the ``alpha2: batch:`` prefix."""


Event = Planned | Started | Frames | Finished | Retrying | GaveUp | Notice


class Backend(Protocol):
    """What runs the tasks: a local process pool or Ray."""

    def start(self) -> None:
        """Bring the workers up."""

    def capacity(self) -> int:
        """How many more tasks it can run at once now."""

    def submit(self, task: FileTask) -> None:
        """Run ``task``; its events come from :meth:`poll`."""

    def poll(self, timeout: float) -> list[Event]:
        """The events since the last call, waiting up to ``timeout`` seconds for the first."""

    def close(self) -> None:
        """Stop the workers (idempotent)."""

    def describe(self) -> dict[str, Any]:
        """What it runs on (for ``--json`` and the summary)."""


# ---------------------------------------------------------------------------------------------------
# one file


class _Reporter(pipeline.Progress):
    """Hands the transcoder's progress to a callback, at most every ``every_s`` seconds."""

    def __init__(self, report: Callable[[int, int | None], None], every_s: float = 0.1) -> None:
        self._report = report
        self._every_s = every_s
        self._total: int | None = None
        self._last = 0.0

    def start(self, total: int | None) -> None:
        self._total = total
        self._report(0, total)

    def update(self, frames: int) -> None:
        now = time.monotonic()
        if now - self._last >= self._every_s:
            self._last = now
            self._report(frames, self._total)


def staging_dir(out_dir: str, key: str) -> str:
    """A new staging folder name for one attempt at one item: a hash of its key (keys may hold
    folders) and a random suffix, so that no one can plant something at the name beforehand. The key is
    hashed as the file system's bytes (``os.fsencode``): a name that is not UTF-8 is one too."""
    digest = hashlib.sha256(os.fsencode(key)).hexdigest()[:16]
    return os.path.join(os.path.abspath(out_dir), STAGING_NAME, f"{digest}-{secrets.token_hex(8)}")


def prepare_staging(out_dir: str) -> str:
    """Make the staging root in ``out_dir`` afresh (mode 0700), removing whatever had its name: a
    previous run's leftovers, or a symbolic link or a file planted there. Returns its path.

    Raises:
        InvalidInputError: the name cannot be cleared (someone else's folder) or the folder not made.
    """
    root = os.path.join(os.path.abspath(out_dir), STAGING_NAME)
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        st = None
    try:
        if st is not None and stat.S_ISDIR(st.st_mode):
            shutil.rmtree(root)  # does not follow the links inside
        elif st is not None:
            os.remove(root)  # a link or a file: the name goes, never what it points at
        os.mkdir(root, 0o700)
    except OSError as exc:
        raise InvalidInputError(
            f"cannot make the staging folder {root!r} ({exc.strerror or exc}); remove it"
        ) from None
    return root


def _check_inside(output: str, out_root: str, key: str) -> None:
    """Refuse an output whose folder leads out of the output folder (a symbolic link planted on the way)."""
    expected = os.path.join(os.path.realpath(out_root), *key.split("/")[:-1])
    found = os.path.realpath(os.path.dirname(output))
    if found != expected:
        raise InvalidInputError(
            f"the folder of {output!r} leads to {found!r} through a symbolic link; outputs stay inside --out"
        )


_devices = threading.local()
"""Each worker thread's Device (``.device``), kept from one file to the next."""


class _SharedDevice:
    """The worker's one Device, when its threads share it (``--shared-device``): opened for the first
    file that needs one, closed after a failed file only once no other file is on it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.device: Any = None
        self.users = 0
        self.failed = False


_shared: _SharedDevice | None = None


def share_device_between_threads() -> None:
    """From now on this process's transcodes share one Device (see :class:`_SharedDevice`); each holds
    its :attr:`~alpha2.native_gpu.device.device.Device.work_lock` around its GPU work."""
    global _shared
    _shared = _SharedDevice()


def _thread_device(options: TranscodeOptions) -> Any:
    """This thread's Device for a file that decodes on NVDEC or processes on the GPU: opened for the
    thread's first such file and used for the next ones, so that a worker does not open and close a
    device (its Vulkan context, CUDA twin and queue thread) per file; the process's one Device when its
    threads share one. None when the file needs none (software decoding on the CPU route opens no
    device at all)."""
    from alpha2.api.devices import nvdec_possible, open_device

    if not (options.gpu or nvdec_possible(options.hwaccel)[0]):
        return None
    shared = _shared
    if shared is not None:
        with shared.lock:
            if shared.device is None:
                shared.device = open_device(options.hwaccel)
            shared.users += 1
            return shared.device
    device = getattr(_devices, "device", None)
    if device is None:
        device = _devices.device = open_device(options.hwaccel)
    return device


def _done_with_device(device: Any, ok: bool) -> None:
    """A file that used ``device`` (from :func:`_thread_device`) has ended: after a failure its Device is
    closed, so that the next file starts on a fresh one: at once when it is the thread's own, once the
    last file on it has ended when threads share it."""
    shared = _shared
    if shared is not None and device is not None and device is shared.device:
        with shared.lock:
            shared.users -= 1
            shared.failed = shared.failed or not ok
            if not shared.failed or shared.users > 0:
                return
            shared.device, shared.failed = None, False
        with contextlib.suppress(Exception):
            device.close()
        return
    if ok:
        return
    own, _devices.device = getattr(_devices, "device", None), None
    if own is not None:
        with contextlib.suppress(Exception):
            own.close()


_PLAIN_AUDIO = re.compile(r"copied|none in the input|\d+ streams copied|dropped\b.*")
"""What the transcode's audio word is when nothing was changed that the user did not ask for (a stream
dropped has a note of its own)."""


def transcode_notes(stats: TranscodeStats, data: dict[str, Any]) -> list[str]:
    """What a transcode changed or met, one line each, for a batch file's ``notes``: the audio when it
    was not simply copied (re-encoded, downmixed), the pixel format when it changed (its depth, its
    chroma), then the notes of
    ``alpha2 transcode``'s summary (streams dropped, depth reduced, colour, timestamps, corrupt frames).
    ``data`` is ``stats.as_dict()``."""
    from alpha2.api.transcode_report import summary_notes

    notes: list[str] = []
    audio = str(data.get("encoder", {}).get("audio") or "")
    if audio and not _PLAIN_AUDIO.fullmatch(audio):
        notes.append(f"audio {audio}")
    before, after = data.get("input_pixel_format"), data.get("output_pixel_format")
    if before and after and _samples_differ(str(before), str(after)):
        notes.append(f"pixel format {before} made {after}")
    notes.extend(note for note in summary_notes(stats) if note not in notes)
    return notes


def _samples_differ(before: str, after: str) -> bool:
    """Whether two pixel formats (FFmpeg's names) hold different samples: another depth, chroma
    subsampling, alpha or family. yuv420p and nv12 do not (the same 8-bit 4:2:0 samples, planes laid
    out otherwise; the GPU route hands libx264 nv12, and the file decodes as yuv420p again)."""
    if before == after:
        return False
    from alpha2.gpu.errors import UnknownFormatError
    from alpha2.gpu.formats import PixelFormat

    try:
        a, b = PixelFormat.from_ffmpeg_name(before), PixelFormat.from_ffmpeg_name(after)
    except UnknownFormatError:
        return True
    return _sample_shape(a) != _sample_shape(b)


def _sample_shape(f: Any) -> tuple[Any, ...]:
    return (f.bit_depth, f.log2_chroma_w, f.log2_chroma_h, f.has_alpha, f.is_yuv, f.is_rgb, f.is_gray)


def transcode_task(
    task: FileTask, report: Callable[[int, int | None], None] | None = None, *, worker: str = ""
) -> Outcome:
    """Transcode one file into its staging folder and rename it into place; never raises for the file's
    own failures (they are the outcome). The thread's Device (or the worker's, shared) is used file
    after file (:func:`_thread_device`), and closed after a failure (:func:`_done_with_device`)."""
    used: list[Any] = []
    with option_names(dict(task.option_names)):
        outcome = _transcode_task(task, report, worker=worker, used=used)
    for device in used or [None]:
        _done_with_device(device, outcome.ok)
    return outcome


def _transcode_task(
    task: FileTask, report: Callable[[int, int | None], None] | None, *, worker: str, used: list[Any]
) -> Outcome:
    from alpha2.api.transcoder import transcode

    # A short name of its own, not the output's: the encoder writes beside it under a longer one
    # (".<name>.<hex>.partial<ext>"), which an output name near the file system's limit would pass.
    staged = os.path.join(task.staging, "output" + os.path.splitext(task.output)[1])
    progress = _Reporter(report) if report is not None else pipeline.Progress()
    out_root = os.path.dirname(os.path.dirname(task.staging))
    made = False
    try:
        # Exclusive (fails when the name exists, follows no link), private; the driver made the root.
        os.mkdir(task.staging, 0o700)
        made = True
        options = dataclasses.replace(task.options, overwrite=True)  # the staging folder is new
        device = None if options.segments is not None else _thread_device(options)
        if device is not None:
            used.append(device)
        stats = transcode(task.input, staged, options, progress=progress, device=device)
        os.makedirs(os.path.dirname(task.output), exist_ok=True)
        _check_inside(task.output, out_root, task.key)
        os.replace(staged, task.output)
        data = stats.as_dict()
        return Outcome(
            key=task.key,
            ok=True,
            worker=worker,
            frames=stats.frames,
            seconds=stats.seconds,
            output_bytes=os.path.getsize(task.output),
            paths=dict(data["paths"]),
            mode=data["mode"],
            notes=tuple(transcode_notes(stats, data)),
            dropped_streams=tuple(dict(d) for d in data["dropped_streams"]),
        )
    except Error as exc:
        return Outcome(task.key, False, worker, error=one_line(exc.message), error_kind=exc.kind.value)
    except OSError as exc:
        # A full disk or a vanished folder: the OS's word for it, retried only when it says so.
        kind = ErrorKind.RETRY.value if exc.errno in (errno.EAGAIN, errno.EINTR, errno.EBUSY) else None
        return Outcome(task.key, False, worker, error=one_line(str(exc)), error_kind=kind)
    except Exception as exc:
        return Outcome(task.key, False, worker, error=one_line(f"{type(exc).__name__}: {exc}"))
    finally:
        if made:
            shutil.rmtree(task.staging, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------
# the lock


class BatchLock:
    """An exclusive lock on the output folder (``fcntl.flock`` on :data:`LOCK_NAME`); a second run into
    the same folder is refused rather than let two runs share a staging folder and a manifest. The lock
    file is opened without following a symbolic link or waiting on a FIFO, and must be a regular file."""

    def __init__(self, out_dir: str) -> None:
        self.path = os.path.join(os.path.abspath(out_dir), LOCK_NAME)
        self._fd: int | None = None
        self._held = False

    def __enter__(self) -> BatchLock:
        import fcntl

        try:
            self._fd = open_regular(self.path, os.O_RDWR | os.O_CREAT, 0o600, what="the batch lock")
        except OSError as exc:  # read-only, not ours: the folder's problem, not the lock's
            raise InvalidInputError(
                f"cannot write into the output folder {os.path.dirname(self.path)!r} "
                f"({exc.strerror or exc}); choose another --out"
            ) from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.close()
            raise InvalidInputError(
                f"another alpha2 batch is writing into {os.path.dirname(self.path)!r}; wait for it or "
                "choose another --out",
                kind=ErrorKind.RETRY,
            ) from None
        self._held = True  # the file is ours to remove from here on
        return self

    def close(self) -> None:
        """Release the lock (idempotent; also after an interrupted ``__enter__`` or ``__exit__``): the
        file is removed while still held, so that no second run has locked this very file, then closed."""
        fd = self._fd
        if fd is None:
            return
        try:
            if self._held:  # marked not held only once removed: a signal before that leaves it to remove
                with contextlib.suppress(OSError):
                    os.remove(self.path)
        finally:
            self._held = False
            self._fd = None
            os.close(fd)  # closing releases the lock

    @staticmethod
    def remove_stale(out_dir: str) -> None:
        """Remove a lock file that no run holds (one left by a run interrupted while taking it)."""
        import fcntl

        path = os.path.join(os.path.abspath(out_dir), LOCK_NAME)
        try:
            fd = open_regular(path, os.O_RDWR, what="the batch lock")
        except (OSError, InvalidInputError):
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.remove(path)
        except OSError:
            pass  # held by a run, or gone already
        finally:
            os.close(fd)

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------------
# the driver


_HELD_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """For the block, SIGINT, SIGTERM and SIGHUP are noted, not acted on; each one noted is raised again
    when the block ends, so that it reaches the handler it had (Ctrl-C's KeyboardInterrupt) then.

    For the driver's cleanup: a second signal while the workers are being stopped (``timeout -s INT``
    sends one to the process and one to its group; an impatient second Ctrl-C) would otherwise raise
    in the middle of it, and the staging folders of the files in progress stay behind. A signal that
    is ignored stays ignored; outside the main thread (where signals cannot be handled) nothing changes.
    """
    noted: list[int] = []
    previous: dict[int, Any] = {}
    try:
        for signum in _HELD_SIGNALS:
            old = signal.getsignal(signum)
            if old is None or old == signal.SIG_IGN:
                continue  # ignored, or a handler not set from Python (left alone)
            signal.signal(signum, lambda number, frame: noted.append(number))
            previous[signum] = old
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


def _result(item: BatchItem, outcome: Outcome, attempts: int) -> FileResult:
    return FileResult(
        item=item,
        status=FileStatus.DONE if outcome.ok else FileStatus.FAILED,
        attempts=attempts,
        frames=outcome.frames,
        seconds=outcome.seconds,
        output_bytes=outcome.output_bytes,
        paths=dict(outcome.paths),
        mode=outcome.mode,
        worker=outcome.worker or None,
        error=outcome.error,
        error_kind=outcome.error_kind,
        notes=list(outcome.notes),
        dropped_streams=[dict(d) for d in outcome.dropped_streams],
    )


def run_batch(
    items: Sequence[BatchItem],
    options: TranscodeOptions,
    backend: Backend,
    *,
    out_dir: str,
    manifest: Manifest,
    input_hashes: dict[str, str],
    settings_hashes: dict[str, str],
    retries: int = 2,
    on_event: Callable[[Event], None] | None = None,
    poll_s: float = 0.2,
) -> list[FileResult]:
    """Run ``items`` on ``backend``; each gets up to ``1 + retries`` attempts when its failures are
    transient. ``input_hashes`` and ``settings_hashes`` (by key) go into the manifest. Returns one result
    per item, in the items' order; the backend is started here and closed at the end."""
    if retries < 0:
        raise InvalidInputError(f"retries must be >= 0, got {retries}")
    by_key = {item.key: item for item in items}
    names = tuple(current_names().items())
    pending = collections.deque(
        FileTask(
            item.key, item.input, item.output, staging_dir(out_dir, item.key), options, option_names=names
        )
        for item in items
    )
    attempts: dict[str, int] = collections.Counter()
    running: dict[str, FileTask] = {}
    results: dict[str, FileResult] = {}
    notify = on_event if on_event is not None else (lambda event: None)
    staging_root = os.path.join(os.path.abspath(out_dir), STAGING_NAME)
    try:
        prepare_staging(out_dir)
        backend.start()
        while pending or running:
            while pending and backend.capacity() > 0:
                task = pending.popleft()
                attempts[task.key] += 1
                task = dataclasses.replace(task, attempt=attempts[task.key])
                running[task.key] = task
                backend.submit(task)
            for event in backend.poll(poll_s):
                notify(event)
                if not isinstance(event, Finished):
                    continue
                outcome = event.outcome
                task = running.pop(outcome.key)
                item = by_key[outcome.key]
                if outcome.ok:
                    result = _result(item, outcome, attempts[item.key])
                    manifest.record(result, input_hashes[item.key], settings_hashes[item.key])
                    results[item.key] = result
                    continue
                shutil.rmtree(task.staging, ignore_errors=True)  # what a dead worker left
                transient = is_transient(outcome.kind, crashed=outcome.crashed)
                if transient and attempts[item.key] <= retries:
                    notify(Retrying(item.key, task.attempt, outcome.error or "failed"))
                    pending.append(dataclasses.replace(task, staging=staging_dir(out_dir, item.key)))
                else:
                    results[item.key] = _result(item, outcome, attempts[item.key])
                    notify(GaveUp(item.key, item.input, outcome.error or "failed"))
    finally:
        # Whole even when a second signal comes: the workers stopped, then their staging removed.
        with _signals_held():
            backend.close()
            shutil.rmtree(staging_root, ignore_errors=True)
    return [results[item.key] for item in items]
