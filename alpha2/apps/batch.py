"""``alpha2 batch INPUTS... --out DIR``: transcode many files, on one machine or on a Ray cluster.

INPUTS are folders, globs or list files (:func:`~alpha2.apps.batch_plan.scan_inputs`); the options
are ``alpha2 transcode``'s. By default the files run on this machine, in worker processes: several
per GPU (``--streams``), one file each, or one per core without a GPU (:mod:`alpha2.apps.batch_local`); with
``--ray auto|ADDRESS`` each file is a Ray task (:mod:`alpha2.apps.batch_ray`). Either way a failure
stays with its file with a one-line reason, transient failures are retried, outputs appear whole or not
at all, and a run can be resumed: outputs the manifest in DIR records for the same input and settings
are skipped (:mod:`alpha2.apps.batch_plan`). Outputs are in one container, ``.mp4`` or ``--container``'s,
whatever the inputs' own. A file already at an output's name that no batch into DIR made is not
replaced unless ``-y`` (``--overwrite``, which also makes every output again, as ``--force``); an
interrupted run removes the ``--out`` folder it made when nothing was written into it. Progress shows
files and frames; the end is a table, or ``--json``, with each file's execution paths, fps, bytes,
error and notes (what its transcode changed: streams dropped, audio re-encoded, depth reduced), and the
files in the input folders that were left out as not video by their extension (audio, pictures, others).
An interrupted ``--json`` run still prints its document: the files done and failed so far, with
``interrupted`` naming the signal.

:func:`batch` is the in-process form.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from alpha2.api import pipeline
from alpha2.api.transcode_choices import AUDIO_CONTAINERS, OUTPUT_CONTAINERS
from alpha2.apps.batch_plan import (
    DEFAULT_CONTAINER,
    BatchItem,
    DeviceChoice,
    FileResult,
    FileStatus,
    Manifest,
    container_extension,
    fingerprints,
    plan_items,
    printable,
    scan_inputs,
    settings_fingerprint,
)
from alpha2.apps.cli import (
    EXAMPLES_HEADING,
    Terminated,
    add_overwrite_arguments,
    column_widths,
    display_width,
    fit_columns,
    help_formatter,
    terminal_columns,
    wrap_text,
)
from alpha2.apps.transcode_cli import OPTION_NAMES, add_transcode_arguments, options_from_args
from alpha2.gpu.errors import ErrorKind, InvalidInputError
from alpha2.gpu.option_names import option_names

# How the files run (batch_run, the local pool, Ray) and the transcode options' class load when a batch
# runs, so that ``alpha2 batch --help`` answers at once.
if TYPE_CHECKING:
    from alpha2.api.transcode_plan import TranscodeOptions
    from alpha2.apps.batch_run import Backend, Event, Finished, GaveUp, Outcome

__all__ = ["BatchReport", "BatchSettings", "batch", "register", "run"]


@dataclass(frozen=True)
class BatchSettings:
    """How a batch runs (what is not a transcode option)."""

    ray: str | None = None
    """None: local workers; ``auto`` or a cluster address: Ray."""
    ray_bind: str | None = None
    """The address a Ray cluster that alpha2 starts itself (``auto`` with none to join) listens on; None:
    127.0.0.1, this machine only."""
    device: DeviceChoice = DeviceChoice.AUTO
    """GPUs, CPU, or whichever the machine (cluster) has."""
    workers: int | None = None
    """Local worker processes in all (spread over the GPUs, or on the CPU); None: ``streams`` per GPU, or
    one per core."""
    streams: int | None = None
    """Files per GPU at once; None: cores / GPUs, at most 8."""
    retries: int = 2
    """Further attempts for a file whose failure is transient."""
    container: str = DEFAULT_CONTAINER
    """Every output's container, as an extension (``.mp4``, ``mkv``), whatever the input's."""
    force: bool = False
    """Transcode every file again, whatever the manifest says, replacing what is at the outputs' names
    (``-y``, ``--overwrite``, ``--force``)."""
    shared_device: bool = False
    """One local worker process per device, its files on threads sharing one Device, rather than a
    process and a Device per file (``--shared-device``; see :func:`~alpha2.apps.batch_local.plan_workers`)."""

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise InvalidInputError(f"retries must be >= 0, got {self.retries}")
        if self.shared_device and self.ray is not None:
            raise InvalidInputError(
                "--shared-device is for local workers; a Ray worker has a device of its own"
            )
        container_extension(self.container)  # an unknown container is refused before any work
        if self.ray_bind is not None and self.ray is None:
            raise InvalidInputError("--ray-bind is for a Ray cluster alpha2 starts: give --ray auto too")
        if self.ray_bind is not None and not self.ray_bind.strip():
            raise InvalidInputError("--ray-bind takes an address, e.g. 127.0.0.1")


@dataclass
class BatchReport:
    """What a batch did."""

    out_dir: str
    """The output folder."""
    results: list[FileResult]
    """One per input, in input order."""
    seconds: float
    """Wall time of the run."""
    runner: dict[str, Any] = field(default_factory=dict)
    """The backend's description (workers, or the Ray resources)."""
    notes: list[str] = field(default_factory=list)
    """What the run said on the way (a manifest set aside)."""
    not_media: list[str] = field(default_factory=list)
    """Files in the input folders left out: their extension is not a video container's."""
    not_files: list[str] = field(default_factory=list)
    """Entries in the input folders named like video left out: no regular file (a FIFO, a link to
    nothing)."""
    sound: bool = False
    """Each output is sound alone (``--container mp3``): no frames to count, the summary says none."""

    def count(self, status: FileStatus) -> int:
        """Files with ``status``."""
        return sum(1 for r in self.results if r.status is status)

    @property
    def frames(self) -> int:
        """Frames transcoded in this run."""
        return sum(r.frames for r in self.results if r.status is FileStatus.DONE)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: everything the table and the totals line say, and each failure's reason."""
        failed = self.count(FileStatus.FAILED)
        return {
            "command": "batch",
            "out": self.out_dir,
            "runner": self.runner,
            "files": [r.as_dict() for r in self.results],
            "done": self.count(FileStatus.DONE),
            "skipped": self.count(FileStatus.SKIPPED),
            "failed": failed,
            "frames": self.frames,
            "seconds": round(self.seconds, 4),
            "fps": round(self.frames / self.seconds, 3) if self.seconds > 0 else 0.0,
            "output_bytes": sum(r.output_bytes for r in self.results if r.status is FileStatus.DONE),
            "notes": list(self.notes),
            "not_media": len(self.not_media),
            "not_media_files": list(self.not_media),
            "not_files": list(self.not_files),
            "error": f"{failed} of {len(self.results)} files failed" if failed else None,
        }


def _backend(settings: BatchSettings, options: TranscodeOptions, files: int) -> Backend:
    if settings.ray is not None:
        from alpha2.apps.batch_ray import RayBackend

        return RayBackend(
            settings.ray,
            device=settings.device,
            streams=settings.streams,
            hwaccel=options.hwaccel,
            bind=settings.ray_bind,
        )
    from alpha2.apps.batch_local import LocalBackend, WorkerSlot, plan_workers

    slots = plan_workers(
        device=settings.device,
        workers=settings.workers,
        streams=settings.streams,
        shared_device=settings.shared_device,
    )
    # No more workers than files to run (the slots come round-robin over the GPUs): one file with
    # the default of one worker per core started 64 processes on a 64-core machine, each a device.
    kept: list[WorkerSlot] = []
    for slot in slots:
        if sum(k.streams for k in kept) >= files:
            break
        kept.append(slot)
    return LocalBackend(kept or slots[:1])


def _folders_to_make(path: str) -> list[str]:
    """The folders ``os.makedirs(path)`` would make, deepest first."""
    missing: list[str] = []
    while path and not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


def _refused(item: BatchItem) -> FileResult:
    return FileResult(
        item,
        FileStatus.FAILED,
        error=f"{item.output} exists and no batch into this folder made it; pass -y (--overwrite) to "
        "replace it",
        error_kind=ErrorKind.INVALID_INPUT.value,
    )


def _name_max(out: str) -> int:
    """The longest file name, in bytes, the file system of ``out`` takes (255 where it does not say)."""
    try:
        return int(os.pathconf(out, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


def _path_max(out: str) -> int:
    """The longest path, in bytes and with its closing NUL, the file system of ``out`` takes (4096
    where it does not say)."""
    try:
        return int(os.pathconf(out, "PC_PATH_MAX"))
    except (OSError, ValueError):
        return 4096


def _too_long(item: BatchItem, limit: int, path_max: int = 4096) -> FileResult | None:
    """A failed result for an item whose output name (or a folder on its way), or its whole path, is
    longer than the file system takes: found before its transcode, not at the rename after it (which
    left the folders made on its way behind); None when it fits."""
    size = len(os.fsencode(item.output))
    if size >= path_max:
        return FileResult(
            item,
            FileStatus.FAILED,
            error=f"its output's path is {size} bytes, more than the {path_max - 1} the file "
            "system takes; choose a shorter --out, or move the input to a shorter path",
            error_kind=ErrorKind.INVALID_INPUT.value,
        )
    for part in item.key.split("/"):
        size = len(os.fsencode(part))
        if size > limit:
            return FileResult(
                item,
                FileStatus.FAILED,
                error=f"a name in its output's path is {size} bytes, more than the {limit} the "
                "file system of --out takes; rename the input",
                error_kind=ErrorKind.INVALID_INPUT.value,
            )
    return None


def batch(
    inputs: Sequence[str],
    out_dir: str | os.PathLike[str],
    options: TranscodeOptions | None = None,
    settings: BatchSettings | None = None,
    *,
    on_event: Callable[[Event], None] | None = None,
    backend: Backend | None = None,
) -> BatchReport:
    """Transcode every input into ``out_dir`` (the in-process form of ``alpha2 batch``).

    An output already done by an earlier run (the manifest's record matches) is skipped; a file at an
    output's name that no batch into ``out_dir`` made fails that input, unless ``settings.force``. When
    the run ends by an exception (Ctrl-C included), the folders it made for ``out_dir`` are removed
    again if nothing is in them.

    Raises:
        InvalidInputError: no inputs, an input that is missing, two inputs with one output, an output
            folder another batch writes into, a lock or manifest that is not a regular file.
        UnsupportedError: ``--ray`` without Ray installed, ``--device gpu`` without a GPU.
    """
    from alpha2.api.transcode_plan import TranscodeOptions
    from alpha2.apps.batch_run import BatchLock

    options = options if options is not None else TranscodeOptions()
    settings = settings if settings is not None else BatchSettings()
    out = os.path.abspath(os.fspath(out_dir))
    if os.path.exists(out) and not os.path.isdir(out):
        raise InvalidInputError(f"--out {os.fspath(out_dir)!r} is a file; give a folder")
    extension = container_extension(settings.container)
    from alpha2.api.audio_transcode import check_sound_options, is_audio_output
    from alpha2.api.transcoder import check_options

    sound = is_audio_output(f"output{extension}")  # --container mp3: each input's audio alone
    if sound:
        check_sound_options(options, f"--container {extension[1:]}")  # refused once, not per file
    else:
        check_options(options, f"output{extension}")  # a bad preset is refused once, not per file
    scan = scan_inputs(inputs, out_dir=out, sound=sound)
    items = plan_items(scan.pairs, out, container=settings.container)
    start = time.perf_counter()
    made = _folders_to_make(out)
    lock = BatchLock(out)
    try:
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as exc:
            raise InvalidInputError(
                f"cannot make the output folder {out!r} ({exc.strerror or exc}); choose another --out"
            ) from None
        scan_notes = []
        if scan.in_out_dir:
            scan_notes.append(
                "--out lies inside an input folder: the video files in it are this batch's outputs, not "
                f"inputs ({scan.in_out_dir} passed over)"
            )
        with lock:
            report = _run_locked(
                items, out, options, settings, extension, start, on_event, backend, scan_notes
            )
        report.not_media = list(scan.not_media)
        report.not_files = list(scan.not_files)
        report.sound = sound
        return report
    except BaseException:
        lock.close()  # when the interruption came inside the lock's own enter or exit
        if made:  # a stale lock is taken back only in a folder this run made
            BatchLock.remove_stale(out)
        for folder in made:  # deepest first; stops at the first that is not empty
            try:
                os.rmdir(folder)
            except OSError:
                break
        raise


def _run_locked(
    items: list[BatchItem],
    out: str,
    options: TranscodeOptions,
    settings: BatchSettings,
    extension: str,
    start: float,
    on_event: Callable[[Event], None] | None,
    backend: Backend | None,
    scan_notes: Sequence[str] = (),
) -> BatchReport:
    from alpha2.apps.batch_run import Notice, Planned, run_batch

    notify = on_event if on_event is not None else (lambda event: None)
    manifest = Manifest.load(out)
    notes = [*scan_notes, *([manifest.note] if manifest.note else [])]
    for note in notes:
        notify(Notice(note))
    hashes = fingerprints(items)
    by_settings = {item.key: settings_fingerprint(options, extension) for item in items}
    todo: list[BatchItem] = []
    skipped: dict[str, FileResult] = {}
    limit = _name_max(out)
    path_max = _path_max(out)
    for item in items:
        too_long = _too_long(item, limit, path_max)
        if too_long is not None:
            skipped[item.key] = too_long
        elif settings.force:
            todo.append(item)
        elif manifest.done(item, hashes[item.key], by_settings[item.key]):
            skipped[item.key] = FileResult(
                item, FileStatus.SKIPPED, reason="done by an earlier run (same input and settings)"
            )
        elif os.path.lexists(item.output) and not manifest.knows(item.key):
            skipped[item.key] = _refused(item)
        else:
            todo.append(item)
    notify(Planned(len(items), sum(1 for r in skipped.values() if r.status is FileStatus.SKIPPED)))
    ran: dict[str, FileResult] = {}
    runner: dict[str, Any] = {"runner": "none (nothing to do)"}
    if todo:
        backend = backend if backend is not None else _backend(settings, options, len(todo))
        try:
            manifest.claim(todo)
            results = run_batch(
                todo,
                options,
                backend,
                out_dir=out,
                manifest=manifest,
                input_hashes=hashes,
                settings_hashes=by_settings,
                retries=settings.retries,
                on_event=on_event,
            )
        finally:
            manifest.release()
        ran = {r.item.key: r for r in results}
        runner = backend.describe()
    results_all = [ran.get(i.key) or skipped[i.key] for i in items]
    return BatchReport(out, results_all, time.perf_counter() - start, runner, notes)


# ---------------------------------------------------------------------------------------------------
# progress and summary


class BatchProgress:
    """Files and frames as the events come: rich bars on a terminal, a line per file otherwise."""

    def __init__(self, *, enabled: bool = True, stream: IO[str] | None = None, sound: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.sound = sound  # outputs of sound alone: files, no frames (an audio frame means nothing)
        self.total_files = 0
        self._skipped = 0
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}
        self._frames: dict[str, int] = {}
        self._totals: dict[str, int] = {}
        self._finished: set[str] = set()
        self._failed: set[str] = set()  # failed for good: a Retrying event takes one back
        self.enabled = enabled
        isatty = getattr(self.stream, "isatty", None)
        if enabled and callable(isatty) and isatty() and os.environ.get("TERM") != "dumb":
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress
            from rich.table import Column

            console = Console(file=self.stream)
            # A file's name is cut short (with an ellipsis) to a third of the line: a long one took
            # the whole line, and the bars and the counts of files and frames went.
            name_column = Column(max_width=max(12, console.width // 3), no_wrap=True, overflow="ellipsis")
            self._rich = RichProgress(
                TextColumn("[bold]{task.description}", table_column=name_column),
                BarColumn(),
                # Sound alone: a file's count of audio frames means nothing; the files' count alone.
                TextColumn("{task.fields[count]}") if sound else MofNCompleteColumn(),
                TextColumn("{task.fields[note]}"),
                TimeElapsedColumn(),
                console=console,
            )
            # Started at the first event: a run refused before its plan (--size into .flac, a bad
            # preset) printed empty bars of files and frames above its error.
            self._files_task = self._rich.add_task("files", total=None, note="", count="")
            self._frames_task = None if sound else self._rich.add_task("frames", total=None, note="")
            self._start = time.monotonic()

    def __call__(self, event: Event) -> None:
        from alpha2.apps.batch_run import Finished, Frames, GaveUp, Notice, Planned, Retrying, Started

        if isinstance(event, Notice):  # said even with the display off: it is about the user's files
            self._line(f"alpha2: batch: {event.text}")
            return
        if not self.enabled:
            return
        if self._rich is not None and not self._rich.live.is_started:
            self._rich.start()
        if isinstance(event, Planned):
            self.total_files, self._skipped = event.files, event.skipped
            if event.skipped:
                self._line(f"alpha2: batch: {event.skipped} of {event.files} files done by an earlier run")
            if self._rich is not None:
                self._rich.update(self._files_task, total=event.files, count=f"0/{event.files}")
        elif isinstance(event, Started) and event.key not in self._finished:
            self._frames[event.key] = 0
            if self._rich is not None and event.key not in self._tasks:
                from rich.markup import escape

                # The description is read as markup: a name's brackets are escaped, as are its bytes.
                name = escape(printable(event.key))
                self._tasks[event.key] = self._rich.add_task(name, total=None, note=event.worker, count="")
        elif isinstance(event, Frames) and event.key not in self._finished and not self.sound:
            self._frames[event.key] = event.frames
            if event.total:
                self._totals[event.key] = event.total
            if self._rich is not None and event.key in self._tasks:
                self._rich.update(self._tasks[event.key], completed=event.frames, total=event.total)
        elif isinstance(event, Retrying):
            self._failed.discard(event.key)
            self._frames[event.key] = 0
            self._line(
                f"alpha2: batch: retrying {event.key} (attempt {event.attempt} failed: {event.reason})"
            )
        elif isinstance(event, Finished):
            self._finished_file(event)
        elif isinstance(event, GaveUp):
            # Said as it happens, named as the table names it (the input's name): only the files done
            # were, so a failure was unseen until the end (or never, after a Ctrl-C).
            name = os.path.join(os.path.dirname(event.key), os.path.basename(event.input))
            self._line(f"alpha2: batch: {self._over()}/{self.total_files} {name}: failed: {event.reason}")
        self._refresh()

    def _over(self) -> int:
        """The files over: done, failed for good, or skipped (as the files bar counts them)."""
        return len(self._finished) + len(self._failed) + self._skipped

    def _finished_file(self, event: Finished) -> None:
        outcome = event.outcome
        if outcome.ok:
            self._finished.add(outcome.key)
            self._frames[outcome.key] = outcome.frames
            self._totals[outcome.key] = outcome.frames
        else:
            self._failed.add(outcome.key)
        task = self._tasks.pop(outcome.key, None)
        if self._rich is not None and task is not None:
            self._rich.remove_task(task)
        done = self._over()  # failed files count too: the lines' numbers end at the files' total
        if outcome.ok and (self.sound or not outcome.frames):
            # No frames into a video container: an input of sound alone, whose audio was written; said
            # as such, not as '0 frames, 0.0 fps', which read as an empty output.
            what = "" if self.sound else "sound alone, "
            self._line(
                f"alpha2: batch: {done}/{self.total_files} {outcome.key}: {what}"
                f"{_size_text(outcome.output_bytes)} in {outcome.seconds:.2f} s ({outcome.worker})"
            )
        elif outcome.ok:
            fps = outcome.frames / outcome.seconds if outcome.seconds > 0 else 0.0
            frames = "1 frame" if outcome.frames == 1 else f"{outcome.frames} frames"
            self._line(
                f"alpha2: batch: {done}/{self.total_files} {outcome.key}: {frames}, "
                f"{fps:.1f} fps ({outcome.worker})"
            )

    def _line(self, text: str) -> None:
        text = printable(text)  # names that are not UTF-8 (and reasons that quote them)
        width = terminal_columns(self.stream)
        if width is not None:  # a notice longer than the terminal is folded at words, not cut
            text = "\n".join(wrap_text(text, width, "", "  "))
        if self._rich is not None:
            self._rich.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)

    def _refresh(self) -> None:
        if self._rich is None:
            return
        frames = sum(self._frames.values())
        total = sum(self._totals.get(k, 0) for k in self._frames) or None
        fps = frames / max(time.monotonic() - self._start, 1e-9)
        # A file that failed is over too: the bar stood at 9/12 when 3 of 12 failed and all were over.
        over = self._over()
        self._rich.update(self._files_task, completed=over, count=f"{over}/{self.total_files}")
        if self._frames_task is not None:
            self._rich.update(self._frames_task, completed=frames, total=total, note=f"{fps:.1f} fps")

    def close(self) -> None:
        """End the display (idempotent)."""
        rich, self._rich = self._rich, None
        if rich is not None:
            rich.stop()


class RunTally:
    """What a run has got through, counted from its events whether or not progress is shown: the line
    an interrupted run ends with (:meth:`interrupted_line`)."""

    def __init__(self, then: Callable[[Event], None]) -> None:
        self.then = then
        self.files = 0
        self.skipped = 0
        self.done: dict[str, Outcome] = {}
        self.failed: dict[str, GaveUp] = {}

    def __call__(self, event: Event) -> None:
        from alpha2.apps.batch_run import Finished, GaveUp, Planned

        if isinstance(event, Planned):
            self.files, self.skipped = event.files, event.skipped
        elif isinstance(event, Finished) and event.outcome.ok:
            self.done[event.outcome.key] = event.outcome
        elif isinstance(event, GaveUp):
            self.failed[event.key] = event
        self.then(event)

    def interrupted_report(self, out_dir: str, signal_name: str) -> dict[str, Any]:
        """``--json``'s document for an interrupted run: the files done and failed so far (a script
        reading the JSON got nothing at all), the counts as a whole run's JSON has them, and ``error``
        saying what stopped it. Files in progress are not listed: their outputs were removed."""
        files: list[dict[str, Any]] = [
            {
                "output": os.path.join(out_dir, *key.split("/")),
                "status": "done",
                "frames": outcome.frames,
                "seconds": round(outcome.seconds, 4),
                "output_bytes": outcome.output_bytes,
                "mode": outcome.mode,
                "paths": dict(outcome.paths),
                "worker": outcome.worker,
            }
            for key, outcome in self.done.items()
        ]
        files.extend(
            {
                "input": gave_up.input,
                "output": os.path.join(out_dir, *key.split("/")),
                "status": "failed",
                "error": gave_up.reason,
            }
            for key, gave_up in self.failed.items()
        )
        return {
            "command": "batch",
            "out": out_dir,
            "interrupted": signal_name,
            "planned": self.files,
            "files": files,
            "done": len(self.done),
            "skipped": self.skipped,
            "failed": len(self.failed),
            "frames": sum(outcome.frames for outcome in self.done.values()),
            "output_bytes": sum(outcome.output_bytes for outcome in self.done.values()),
            "error": f"interrupted by {signal_name}",
        }

    def interrupted_line(self, *, force: bool = False) -> str | None:
        """Where an interrupted run stopped and that the same command (without ``-y``, which makes every
        output again) resumes it; None before its plan."""
        if not self.files:
            return None
        kept = len(self.done) + self.skipped
        failed = f", {len(self.failed)} failed" if self.failed else ""
        again = "the same command without -y" if force else "the same command again"
        return (
            f"alpha2: batch: stopped with {kept} of {self.files} files done{failed}; their outputs are "
            f"kept and those in progress removed: {again} does the rest"
        )


def _paths_text(paths: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in paths.items()) or "-"


def _size_text(size_bytes: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size_bytes >= scale:
            return f"{size_bytes / scale:.1f} {unit}"
    return f"{size_bytes} B"


_HEADERS = ("file", "status", "frames", "fps", "size", "tries", "paths")
_RIGHT = frozenset({"frames", "fps", "size", "tries", "time"})
_PRIORITY = (0, 1, 2, 4, 3, 6, 5)
"""The columns kept first on a narrow terminal: file, status, frames, size, fps, paths, tries."""

_SOUND_HEADERS = ("file", "status", "size", "time", "tries")
"""The columns of a batch of sound alone: no frames, no rate of them, no GPU paths."""

FILE_COLUMN_FOLD = 16
"""The least width of the summary's file column: a longer name is folded onto more lines there rather
than leave the other columns out (the file column takes what the others leave)."""

NOTE_LINES = 12
"""The most notes the summary lists under the table; ``--json`` has every file's."""

NOT_MEDIA_NAMES = 5
"""The most names of files left out as not media that the summary gives; ``--json`` has them all."""


_NAME_BREAKS = frozenset("/-_. ")
"""Characters after which a file name in the summary's table may go on to the next line."""


def fold_name(name: str, width: int) -> str:
    """``name`` on lines of at most ``width`` terminal columns, each ended after a ``/``, ``-``, ``_``,
    ``.`` or space where one lies on the line, else cut at the width (a word longer than a line): the
    table's file column broke names at its width alone ('clip_from_the_ca' / 'mera_2024.mp4')."""
    if width < 1 or display_width(name) <= width:
        return name
    lines: list[str] = []
    rest = name
    while display_width(rest) > width:
        end = 0  # the longest head of rest that fits
        while end < len(rest) and display_width(rest[: end + 1]) <= width:
            end += 1
        end = max(end, 1)
        cut = max((i + 1 for i in range(end) if rest[i] in _NAME_BREAKS), default=end)
        if cut < end and _head_width(rest[cut:]) > width:
            # What follows the break is cut anyway, so it starts on this line (as textwrap breaks a long
            # word): 'a.' stood alone on a line, a row spent, before 'bcdefghijklmnopq' (an outside pass).
            cut = end
        lines.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        lines.append(rest)
    return "\n".join(lines)


def _head_width(text: str) -> int:
    """The columns of ``text`` up to and with its first break (all of it where it has none)."""
    end = next((i + 1 for i, char in enumerate(text) if char in _NAME_BREAKS), len(text))
    return display_width(text[:end])


def _wrapped(text: str, width: int, indent: str = "", subsequent: str = "  ") -> list[str]:
    # By terminal columns (textwrap counted a CJK name's characters, and the console folded the lines
    # it made again, unindented), a number kept with its unit ('(0.033 s long)' broke after 0.033).
    return wrap_text(printable(text), width - 1, indent, subsequent)


def _shown_path(path: str) -> str:
    """``path`` relative to the current folder when it is below it, else as it is."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith(os.pardir) else relative


def note_lines(report: BatchReport, width: int) -> list[str]:
    """What the files' transcodes changed or met, each note after its file's name, at most
    :data:`NOTE_LINES` notes (then how many more, on how many files), wrapped to ``width``."""
    noted = [r for r in report.results if r.status is FileStatus.DONE and r.notes]
    if not noted:
        return []
    lines = ["notes (what the transcodes changed):"]
    left: dict[str, int] = {}
    shown = 0
    for r in noted:
        for note in r.notes:
            if shown < NOTE_LINES:
                lines.extend(_wrapped(f"{r.item.key}: {note}", width, "  ", "    "))
                shown += 1
            else:
                left[r.item.key] = left.get(r.item.key, 0) + 1
    if left:
        more = sum(left.values())
        on = "1 file" if len(left) == 1 else f"{len(left)} files"
        lines.extend(_wrapped(f"and {more} more on {on}; --json has each file's notes", width, "  ", "    "))
    return lines


def _row_name(result: FileResult) -> str:
    """A file's name in the summary: its output's (relative to the output folder) once written, its
    input's (in the same folder) where it failed, whose output was never made under that name."""
    if result.status is not FileStatus.FAILED:
        return result.item.key
    return os.path.join(os.path.dirname(result.item.key), os.path.basename(result.item.input))


def not_media_lines(report: BatchReport, width: int) -> list[str]:
    """The files in the input folders left out as not video by their extension, and the entries named
    like video that are no regular file (the first :data:`NOT_MEDIA_NAMES` of each named), wrapped to
    ``width``; none when there were none."""
    lines = []
    what = "audio or video" if report.sound else "video"
    for left, said in (
        (report.not_media, f"not {what} by their extension"),
        (report.not_files, "no regular file (a FIFO, a device, a link to nothing)"),
    ):
        if not left:
            continue
        count = len(left)
        names = ", ".join(_shown_path(p) for p in left[:NOT_MEDIA_NAMES])
        more = f", and {count - NOT_MEDIA_NAMES} more (--json lists them)" if count > NOT_MEDIA_NAMES else ""
        lines.extend(_wrapped(f"{said}, left out: {count} ({names}{more})", width))
    return lines


def print_summary(report: BatchReport, stream: IO[str] | None = None) -> None:
    """The per-file table (fitted to the terminal: a column that does not fit is left out, and said),
    each failure's reason under it, the files' notes, a totals line, and the files in the input folders
    that were left out as not media."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    out = stream if stream is not None else sys.stdout
    width = terminal_columns(out, default=160) or 160
    console = Console(file=out, width=width, highlight=False)
    rows: list[tuple[str, ...]] = []
    headers, priority = (_SOUND_HEADERS, tuple(range(5))) if report.sound else (_HEADERS, _PRIORITY)
    for r in report.results:
        ran = r.status is FileStatus.DONE
        size = _size_text(r.output_bytes) if ran else "-"
        if report.sound:
            rows.append(
                (
                    printable(_row_name(r)),
                    r.status.value,
                    size,
                    f"{r.seconds:.2f} s" if ran else "-",
                    str(r.attempts),
                )
            )
            continue
        rows.append(
            (
                printable(_row_name(r)),
                r.status.value,
                str(r.frames) if ran else "-",
                f"{r.fps:.1f}" if ran and r.frames else "-",  # no video: no rate
                size,
                str(r.attempts),
                _paths_text(r.paths) if ran else "-",
            )
        )
    # The file column folds a name longer than it (a name is one long word), so that a long name does
    # not push the status out of a narrow terminal's table.
    fold = {0: FILE_COLUMN_FOLD}
    kept, left_out = fit_columns(headers, rows, width, priority, fold=fold)
    widths = column_widths(headers, rows, kept, width, fold=fold)
    table = Table(title=Text(f"alpha2 batch into {printable(report.out_dir)}"))
    for i in kept:
        name = headers[i]
        table.add_column(
            name, justify="right" if name in _RIGHT else "left", overflow="fold", width=widths[i]
        )
    for row in rows:
        cells = [fold_name(row[i], widths[i]) if i == 0 else row[i] for i in kept]
        table.add_row(*(Text(cell) for cell in cells))  # Text: a name's brackets are not markup
    console.print(table)
    if left_out:
        said = ", ".join(headers[i] for i in left_out)
        console.print(f"(not shown to fit {width} columns: {said}; --json has every field)", markup=False)
    for r in report.results:
        if r.status is FileStatus.FAILED and r.error:
            for line in _wrapped(f"{_row_name(r)}: {r.error}", width):
                console.print(line, markup=False)
    for line in note_lines(report, width):
        console.print(line, markup=False)
    data = report.as_dict()
    frames = "1 frame" if data["frames"] == 1 else f"{data['frames']} frames"
    counted = f"; {frames} in {report.seconds:.2f} s ({data['fps']:.1f} fps in all)"
    if report.sound:
        counted = f" in {report.seconds:.2f} s"
    if data["skipped"] and not data["done"] and not data["failed"]:
        # Every output was there from an earlier run: '0 frames in 0.64 s (0.0 fps in all)' said nothing.
        counted = ": every output is there from an earlier batch (-y makes them again)"
    console.print(
        f"{data['done']} done, {data['skipped']} skipped, {data['failed']} failed{counted}",
        markup=False,
    )
    for line in not_media_lines(report, width):
        console.print(line, markup=False)


# ---------------------------------------------------------------------------------------------------
# the command line


def _retries(text: str) -> int:
    """An argparse ``type`` for ``--retries``: a whole number >= 0 (a usage error otherwise, as
    ``--workers``' is, rather than the batch's own refusal without the option's name)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``alpha2 batch``."""
    parser = subparsers.add_parser(
        "batch",
        help="transcode many files, on this machine's GPUs or cores, or on Ray",
        description="Transcode folders, globs or list files into --out DIR with transcode's options "
        "(all but --segments: each worker transcodes a file of its own). "
        "Runs on this machine (--streams worker processes per GPU, or one per core) or, with --ray, on a Ray "
        "cluster. "
        "Resumable: outputs done by an earlier run with the same input and settings are skipped.",
        epilog=f"{EXAMPLES_HEADING}\n"
        "  alpha2 batch videos/ --out small/ --size 1280x720\n"
        "  alpha2 batch 'clips/*.mov' --out out/ --container mkv --crf 20\n"
        "  alpha2 batch list.txt --out out/ --from 10 --duration 30 --json\n"
        "  alpha2 batch songs/ --out mp3/ --container mp3      (sound alone)\n"
        "  alpha2 batch videos/ --out out/ --ray auto          (needs alpha2[ray])",
        formatter_class=help_formatter(),
    )
    parser.add_argument(
        "inputs",
        metavar="INPUT",
        nargs="+",
        help="a folder (searched recursively), a glob, or a .txt list file",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (made when missing)")
    parser.add_argument(
        "--container",
        "--ext",
        dest="container",
        default=DEFAULT_CONTAINER,
        metavar="EXT",
        help="every output's container, whatever the input's: "
        + ", ".join(e.lstrip(".") for e in OUTPUT_CONTAINERS)
        + f" (default {DEFAULT_CONTAINER.lstrip('.')}); sound alone: "
        + ", ".join(e.lstrip(".") for e in AUDIO_CONTAINERS)
        + " (each input's audio; audio files are then taken from the folders too)",
    )
    add_transcode_arguments(parser, segments=False)
    parser.add_argument(
        "--ray",
        metavar="auto|ADDRESS",
        help="run each file as a Ray task: 'auto' joins this machine's cluster or starts one "
        "(needs alpha2[ray])",
    )
    parser.add_argument(
        "--ray-bind",
        metavar="ADDRESS",
        help="the address a Ray cluster started by --ray auto listens on (default 127.0.0.1: this machine "
        "only; give this machine's network address to let other nodes join it)",
    )
    parser.add_argument(
        "--device",
        choices=[c.value for c in DeviceChoice],
        default="auto",
        help="work on GPUs, the CPU, or whichever there is (default auto)",
    )
    parser.add_argument(
        "--workers",
        type=pipeline.positive_int,
        metavar="N",
        help="local worker processes in all, spread over the GPUs "
        "(default: --streams per GPU, or one per core)",
    )
    parser.add_argument(
        "--streams",
        type=pipeline.positive_int,
        metavar="N",
        help="files per GPU at once, a worker process each (threads of one with --shared-device; "
        "default: the cores per GPU, at most 8)",
    )
    parser.add_argument(
        "--shared-device",
        action="store_true",
        help="one worker process per device, its --streams files on threads sharing one "
        "device (one Vulkan device and CUDA context a GPU), not a process and device each",
    )
    parser.add_argument(
        "--retries", type=_retries, default=2, metavar="N", help="retries of transient failures (2)"
    )
    add_overwrite_arguments(
        parser,
        what="a file at an output's name that no batch into DIR made",
        yes_help="transcode every file again, ignoring the manifest, replacing what is at the outputs' names",
        yes_aliases=("--force",),
    )
    parser.add_argument("--json", action="store_true", help="print the per-file report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``alpha2 batch``; exit status 1 when a file failed."""
    options = options_from_args(args)
    settings = BatchSettings(
        ray=args.ray,
        ray_bind=args.ray_bind,
        device=DeviceChoice(args.device),
        workers=args.workers,
        streams=args.streams,
        retries=args.retries,
        container=args.container,
        force=args.overwrite,
        shared_device=args.shared_device,
    )
    from alpha2.api.audio_transcode import is_audio_output

    sound = is_audio_output(f"output{container_extension(args.container)}")
    progress = BatchProgress(enabled=not (args.json or args.quiet), sound=sound)
    tally = RunTally(progress)
    try:
        try:
            with option_names(OPTION_NAMES):  # the workers' errors say --size, not size
                report = batch(args.inputs, args.out, options, settings, on_event=tally)
        finally:
            progress.close()
    except (KeyboardInterrupt, Terminated) as stop:
        if args.json:  # what was done before the signal (a script reading stdout got nothing)
            name = signal.Signals(stop.signum).name if isinstance(stop, Terminated) else "SIGINT"
            pipeline.emit_json(tally.interrupted_report(os.path.abspath(args.out), name))
        # Said under the display's last lines (then 'alpha2: interrupted'): what was kept, and that a
        # run resumes; the bars alone stood at '2/4' with nothing on the outputs. --quiet: one line.
        line = tally.interrupted_line(force=args.overwrite)
        if line is not None and not args.quiet:
            # A terminal echoes Ctrl-C as '^C' where its cursor is, at the start of the line under the
            # lines per file: the line filled to the width then ran 2 columns over. It starts at that
            # line's start (a carriage return: over the '^C'; nothing where there is none).
            start = "\r" if isinstance(stop, KeyboardInterrupt) and sys.stderr.isatty() else ""
            for part in wrap_text(line, terminal_columns(sys.stderr) or len(line), "", "  "):
                print(start + part, file=sys.stderr)
                start = ""
        raise
    if args.json:
        pipeline.emit_json(report.as_dict())
    else:
        print_summary(report)
    failed = [r for r in report.results if r.status is FileStatus.FAILED]
    if failed:
        where = 'each one\'s "error" in the JSON' if args.json else "the reasons above"
        print(
            f"alpha2: error: {len(failed)} of {len(report.results)} files failed ({where})", file=sys.stderr
        )
        return 1
    return 0
