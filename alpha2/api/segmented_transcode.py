"""One file at the speed of several encoders: ``alpha2 transcode --segments K``.

Where the encoder is the limit, the video is encoded in K parts of the file at once, as NVIDIA's
segmented transcode does, and the parts are joined into one seamless output:

1. the whole file is surveyed as one pipeline would start it (``_Transcoder.survey``): its plan
   (size, pixel format, colour), its encoder and parameters, its streams, the cut, the timing;
2. its video is split at key frames into K time ranges of about equal frame counts
   (:func:`split_at_keyframes`, from :func:`~alpha2.ffmpeg_bridge.index.keyframe_index`);
3. K worker processes (``spawn``) each transcode one range, video only, into a file of a temporary
   folder beside the output, with the whole file's encoder, parameters and plan (a segment whose
   first frame would plan otherwise is refused, :meth:`SegmentPart.check_plan`) and the whole output's
   timestamps (the same pts one pipeline gives each frame). Each part is a new encoder, so it starts
   with a key frame that nothing before it refers to (an IDR for H.264 / HEVC: a closed GOP at every
   boundary), and nothing after it refers back;
4. one mux pass (:func:`~alpha2.ffmpeg_bridge.concat.join_segments`, through the atomic writer) writes
   the parts' packets in order, their codec headers checked equal, the timestamps continuous, and the
   audio and other streams copied (or re-encoded where cut) once over the whole output, as one
   pipeline copies them.

The temporary folder goes on every way out (success, an error, Ctrl-C): the workers are ended and
waited for first. What was done is said in :attr:`TranscodeStats.segments
<alpha2.api.transcode_report.TranscodeStats.segments>` (``--json``'s ``segments``): ``video encoded in
K segments at once, joined`` with each part's frames and seconds, or ``one pipeline: <why>`` when
segments would not help or cannot keep the output the same (``auto`` on 4 cores or fewer, too few key
frames, a container whose clock may reset, a codec MP4 does not hold). What cannot be segmented at all is
refused (:class:`~alpha2.gpu.errors.InvalidInputError`): ``--frames`` (:class:`~alpha2.api.transcode_plan.
TranscodeOptions`), an input that is not a seekable file.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import enum
import fractions
import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import os
import shutil
import sys
import tempfile
import threading
import time
import types
from dataclasses import dataclass, field
from typing import Any

from alpha2.api import pipeline
from alpha2.api.atomic import atomic_path
from alpha2.api.decode_worker import error_message, typed_error
from alpha2.api.transcode_plan import TranscodeOptions, TranscodePlan
from alpha2.api.transcode_report import TranscodeStats
from alpha2.api.transcoder import TranscodeSurvey, _Transcoder
from alpha2.ffmpeg_bridge.concat import (
    SEGMENT_CODECS,
    SEGMENT_CONTAINER,
    JoinedSegment,
    JoinReport,
    join_segments,
)
from alpha2.ffmpeg_bridge.encode import FRAME_CLOCK_MUXERS, output_container
from alpha2.ffmpeg_bridge.index import KeyframeIndex, keyframe_index
from alpha2.ffmpeg_bridge.side_streams import StreamKind, container_duration_seconds
from alpha2.gpu.errors import InternalError, InvalidInputError, UnsupportedError
from alpha2.gpu.geometry import Size
from alpha2.gpu.option_names import current_names, option_names
from alpha2.gpu.option_names import named as _named
from alpha2.native_gpu.paths import PathReport

__all__ = [
    "AUTO_MIN_CORES",
    "CORES_PER_SEGMENT",
    "MAX_AUTO_SEGMENTS",
    "SegmentPart",
    "SegmentResult",
    "SegmentRoutes",
    "SegmentedReport",
    "available_cores",
    "choose_segment_count",
    "merged_route_reports",
    "split_at_keyframes",
    "transcode_segmented",
]

PLAN_CHANGES = "the input changes within the file"
"""What a segment's refusal says (:meth:`SegmentPart.check_plan`): ``--segments auto`` then runs one
pipeline instead."""

AUTO_MIN_CORES = 5
"""``--segments auto`` splits on machines of at least this many cores; on fewer, the encoder's own
threads keep the cores busy and one pipeline runs."""

CORES_PER_SEGMENT = 4
"""``auto``: one segment per this many cores (libx264 and libx265 thread well up to about that many
per 1080p encoder; beyond it their frame threads stall on each other)."""

MAX_AUTO_SEGMENTS = 8
"""``auto`` splits into at most this many segments."""

_PROGRESS_EVERY_S = 0.25
_STOP_WAIT_S = 5.0


def available_cores() -> int:
    """The cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        with contextlib.suppress(OSError):
            return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)


def choose_segment_count(asked: int | str, cores: int) -> tuple[int, str]:
    """How many segments for ``--segments asked`` on ``cores`` cores, and why (1: one pipeline)."""
    if asked != "auto":
        return int(asked), f"--segments {asked}"
    if cores < AUTO_MIN_CORES:
        return 1, (
            f"--segments auto on {cores} cores (fewer than {AUTO_MIN_CORES}): the encoder's own threads "
            "keep them busy"
        )
    count = max(2, min(MAX_AUTO_SEGMENTS, cores // CORES_PER_SEGMENT))
    return count, f"--segments auto on {cores} cores: one segment per {CORES_PER_SEGMENT} cores"


def split_at_keyframes(index: KeyframeIndex, count: int, first_pts: int, end_pts: int | None) -> list[int]:
    """The key frames (pts, the index's time base) the later segments start at: ``count`` - 1 of them
    at most, strictly between ``first_pts`` (the first frame written) and ``end_pts`` (None: the end),
    chosen so that the segments hold about equal numbers of packets (frames, in decode order)."""
    inside = [
        (pts, before)
        for pts, before in zip(index.keyframes, index.packets_from, strict=True)
        if pts > first_pts and (end_pts is None or pts < end_pts)
    ]
    if count < 2 or not inside:
        return []
    begin = max(
        (b for p, b in zip(index.keyframes, index.packets_from, strict=True) if p <= first_pts), default=0
    )
    after = [
        b
        for p, b in zip(index.keyframes, index.packets_from, strict=True)
        if end_pts is not None and p >= end_pts
    ]
    stop = after[0] if after else index.packets
    chosen: list[int] = []
    for j in range(1, count):
        target = begin + (stop - begin) * j / count
        later = [(pts, before) for pts, before in inside if not chosen or pts > chosen[-1]]
        if not later:
            break
        pts, _ = min(later, key=lambda kb: abs(kb[1] - target))
        chosen.append(pts)
    return chosen


@dataclass(frozen=True)
class SegmentPart:
    """One segment's share of a segmented transcode, handed to its worker."""

    index: int
    """Its place, from 0."""
    count: int
    """Segments in all."""
    origin: fractions.Fraction
    """The input's start (input seconds), as the whole file's run has it."""
    zero: fractions.Fraction
    """The input time the whole output starts at: every segment's pts count from it."""
    start: fractions.Fraction | None
    """The input time the segment starts at (its first frame is the one on display then); None: the
    input's first frame."""
    end: fractions.Fraction | None
    """The input time it ends before; None: the input's end."""
    plan: TranscodePlan
    """The whole file's plan: the segment's must be the same."""
    muxer: str
    """The whole output's muxer (``mpegts``, ``matroska``): what the segment's plan is made for, its own
    file being MP4 (a display matrix MPEG-TS cannot hold is turned into the pictures in every part)."""

    def describe(self) -> str:
        """``segment 2 of 3 (from 4.000 s)``."""
        where = "" if self.start is None else f" (from {float(self.start - self.origin):.3f} s)"
        return f"segment {self.index + 1} of {self.count}{where}"

    def check_plan(self, plan: TranscodePlan) -> None:
        """Refuse a segment whose first frame plans otherwise than the whole file's (a size, pixel format
        or colour that changes within the file): its encoder would not match the others'.

        Raises:
            UnsupportedError: naming what differs.
        """
        if plan == self.plan:
            return
        pairs = [
            (f.name, getattr(plan, f.name), getattr(self.plan, f.name)) for f in dataclasses.fields(plan)
        ]
        differ = [
            f"{name} {_said(mine)} (the file starts with {_said(whole)})"
            for name, mine, whole in pairs
            if name != "reason" and mine != whole
        ] or [f"the plan: {plan.reason} (the file's: {self.plan.reason})"]
        raise UnsupportedError(
            f"{self.describe()}: {PLAN_CHANGES}, so the segment would be encoded "
            f"otherwise than the rest: {differ[0]}; transcode it in one pipeline "
            f"(leave out {_named('segments')})"
        )


def _said(value: object) -> str:
    """A plan's value in words: ``96x64``, ``NV12``."""
    if isinstance(value, Size):
        return f"{value.width}x{value.height}"
    if isinstance(value, enum.Enum):
        return value.name
    return str(value)


@dataclass(frozen=True)
class SegmentResult:
    """What one segment's worker did."""

    index: int
    """Its place, from 0."""
    from_seconds: float
    """Where it starts in the output."""
    frames: int
    """Frames encoded."""
    seconds: float
    """Wall time of its transcode (in its process)."""
    first_pts: int
    """Its first frame's pts (the encoder's time base)."""
    last_pts: int
    """Its last frame's pts."""
    stats: TranscodeStats
    """Its own report."""

    def as_dict(self) -> dict[str, Any]:
        """For ``--json``: also the frames per import path and per encode route it took (None: that
        stage was not on its way, as in a passthrough)."""
        imports, encodes = self.stats.import_paths, self.stats.encode_paths
        return {
            "index": self.index,
            "from_seconds": round(self.from_seconds, 6),
            "frames": self.frames,
            "seconds": round(self.seconds, 4),
            "fps": round(self.frames / self.seconds, 3) if self.seconds > 0 else 0.0,
            "import_frames": None if imports is None else imports.as_dict()["frames"],
            "encode_frames": None if encodes is None else encodes.as_dict()["frames"],
        }


@dataclass(frozen=True)
class SegmentRoutes:
    """The segments' import and encode reports as one (:func:`merged_route_reports`)."""

    imports: PathReport[Any] | None
    """The importer's, every segment's frames summed (None: no segment imported to the GPU)."""
    encodes: PathReport[Any] | None
    """The encode copier's, summed alike."""
    differences: str | None
    """Where the segments took different ways (paths, fallbacks, scale route, device): each segment's,
    ``segment 1: import gpu_copy 10, encode planes_cpu 10; segment 2: ...``; None: all took the same."""


def _route_key(stats: TranscodeStats) -> tuple[Any, ...]:
    """What two segments that took the same way have alike (not their frame counts)."""
    imports, encodes = stats.import_paths, stats.encode_paths
    return (
        None
        if imports is None
        else (frozenset(p.value for p in imports.frames_by_path), frozenset(imports.fallbacks)),
        None
        if encodes is None
        else (frozenset(p.value for p in encodes.frames_by_path), frozenset(encodes.fallbacks)),
        None if stats.scale_route is None else stats.scale_route.get("route"),
        None if stats.device is None else (stats.device.get("implementation"), stats.device.get("adapter")),
    )


def _route_words(stats: TranscodeStats) -> str:
    """``import cpu_upload 10 (fallback x10: why), encode planes_cpu 10``: the frames per path taken."""
    words: list[str] = []
    for what, report in (("import", stats.import_paths), ("encode", stats.encode_paths)):
        if report is None:
            continue
        said = f"{what} " + (" + ".join(f"{p.value} {n}" for p, n in report.frames_by_path.items()) or "none")
        if report.fallbacks:
            said += " (" + ", ".join(f"fallback x{n}: {why}" for why, n in report.fallbacks.items()) + ")"
        words.append(said)
    return ", ".join(words)


def merged_route_reports(parts: list[SegmentResult]) -> SegmentRoutes:
    """The segments' importer and encode-copier reports summed, so that every frame of the file is
    counted where one pipeline would count it, and each segment's way said where they differ."""
    imports = [p.stats.import_paths for p in parts if p.stats.import_paths is not None]
    encodes = [p.stats.encode_paths for p in parts if p.stats.encode_paths is not None]
    differences = None
    keys = [_route_key(p.stats) for p in parts]
    if len(set(keys)) > 1:
        scale = len({key[2] for key in keys}) > 1
        devices = len({key[3] for key in keys}) > 1
        said = []
        for part, key in zip(parts, keys, strict=True):
            route = _route_words(part.stats)
            words = [route] if route else []
            if scale:
                words.append(f"scale {key[2] or 'none'}")
            if devices:
                device = part.stats.device
                words.append(f"on {'no device' if device is None else device.get('adapter')}")
            said.append(f"segment {part.index + 1}: {', '.join(words) or 'no GPU stage'}")
        differences = "; ".join(said)
    return SegmentRoutes(
        PathReport.summed(imports) if imports else None,
        PathReport.summed(encodes) if encodes else None,
        differences,
    )


@dataclass
class SegmentedReport:
    """Whether the video was encoded in segments, and how (``--json``'s ``segments``)."""

    asked: int | str
    """``--segments`` as given."""
    segments: int
    """Segments encoded at once; 1: one pipeline."""
    reason: str
    """Why that many (or why one pipeline)."""
    cores: int
    """Cores this process may run on."""
    parts: list[SegmentResult] = field(default_factory=list)
    """Each segment's frames and seconds."""
    encode_seconds: float = 0.0
    """Wall time from starting the workers to the last one done."""
    join_seconds: float = 0.0
    """Wall time of the join."""
    dts_raised: int = 0
    """Decode timestamps raised at boundaries to stay increasing."""
    route_differences: str | None = None
    """Each segment's import path and encode route where they differ (:class:`SegmentRoutes`)."""

    @property
    def done(self) -> str:
        """``video encoded in 3 segments at once, joined`` or ``one pipeline: <why>``."""
        if self.segments < 2:
            return f"one pipeline: {self.reason}"
        return f"video encoded in {self.segments} segments at once, joined"

    def as_dict(self) -> dict[str, Any]:
        """For ``--json``."""
        return {
            "asked": self.asked,
            "segments": self.segments,
            "done": self.done,
            "reason": self.reason,
            "cores": self.cores,
            "parts": [p.as_dict() for p in self.parts],
            "encode_seconds": round(self.encode_seconds, 4),
            "join_seconds": round(self.join_seconds, 4),
            "dts_raised": self.dts_raised,
            "route_differences": self.route_differences,
        }


# -- the worker's side --------------------------------------------------------------------------------


class _PipeProgress(pipeline.Progress):
    """A worker's progress, sent to the parent every quarter second."""

    def __init__(self, conn: multiprocessing.connection.Connection, index: int) -> None:
        self._conn = conn
        self._index = index
        self._last = 0.0

    def update(self, frames: int) -> None:
        now = time.monotonic()
        if now - self._last >= _PROGRESS_EVERY_S:
            self._last = now
            with contextlib.suppress(OSError):
                self._conn.send(("progress", self._index, frames))


_PARENT_POLL_S = 0.5

_OWNER = "owner.pid"
"""The file in a segments folder that names the process writing it."""


def _remove_abandoned(directory: str, prefix: str) -> None:
    """Remove the segments folders of this output that a process killed outright left (SIGKILL, a
    power cut): those whose owner is no running process. Another run's, still going, is left alone."""
    try:
        names = [n for n in os.listdir(directory or ".") if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        folder = os.path.join(directory, name)
        try:
            with open(os.path.join(folder, _OWNER), encoding="ascii") as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue  # not one of ours, or being made: left alone
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue  # alive, another user's


def _exit_with_parent(parent: int) -> None:
    """End this worker when ``parent``, the pid of the process that started it, is gone (killed with
    SIGKILL, it can stop nothing): a thread sees the worker's parent change and exits at once. The
    segments' workers went on encoding for their whole segment as orphans (an outside pass); the decoder
    processes end on their socket's EOF the same way. The pid comes from the parent: read here, after a
    slow start (imports), it would already be the orphan's new parent when the old one died first."""

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(_PARENT_POLL_S)

    threading.Thread(target=watch, name="alpha2 parent watch", daemon=True).start()


def _segment_main(
    parent: int,
    conn: multiprocessing.connection.Connection,
    source: str,
    path: str,
    options: TranscodeOptions,
    part: SegmentPart,
    names: dict[str, str],
) -> None:
    """A worker process: transcode one segment into ``path``; send ``done`` or ``error``. ``names``: the
    parent's :func:`~alpha2.gpu.option_names.option_names` (a new process starts without them)."""
    _exit_with_parent(parent)
    try:
        with option_names(names):
            run = _Transcoder(source, path, options, _PipeProgress(conn, part.index), part=part)
            stats = run.run()
            if run.first_pts_out is None or run.last_pts_out is None:
                raise InternalError(f"{part.describe()} encoded no frames")
            conn.send(("done", part.index, stats, run.first_pts_out, run.last_pts_out))
    except BaseException as exc:  # Ctrl-C included: the parent says it, and cleans up
        _, module, name, text = error_message(exc)
        with contextlib.suppress(OSError):
            conn.send(("error", part.index, module, name, text))
    finally:
        conn.close()


# -- the parent's side --------------------------------------------------------------------------------


def _error_from(message: tuple[Any, ...], part: SegmentPart) -> BaseException:
    """A worker's ``error`` as the alpha2 error it raised, said with the segment; else an InternalError."""
    _, _, module, name, text = message
    said = text if text.startswith(part.describe()) else f"{part.describe()}: {text}"
    error = typed_error(module, name, said)
    if error is not None:
        return error
    if name == "KeyboardInterrupt":
        return KeyboardInterrupt()
    return InternalError(f"{part.describe()} failed: {name}: {text}")


_MAIN_RAN_AGAIN_EXIT = 86
"""A worker's exit status where spawn's import of the main script began a segmented transcode again (a
script without the ``__main__`` guard whose source :func:`_check_spawnable` could not read)."""


def _unguarded(where: str) -> UnsupportedError:
    """The error for a script that starts its segmented transcode outside the ``__main__`` guard."""
    return UnsupportedError(
        "a segmented transcode starts a worker process per segment by 'spawn', which runs the main "
        f"script again in each: {where}, so each worker would start the transcode again instead of its "
        "segment; put the script's work under 'if __name__ == \"__main__\":' (as multiprocessing asks), "
        "or leave segments out for one pipeline"
    )


def _main_frame(main: Any) -> types.FrameType | None:
    """The main script's own frame on the main thread (its top-level code running), or None."""
    frame = sys._current_frames().get(threading.main_thread().ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is vars(main):
            return frame
        frame = frame.f_back
    return None


def _under_name_guard(filename: str, line: int) -> bool | None:
    """Whether ``line`` of the script ``filename`` lies under an ``if`` on ``__name__`` (the
    ``__main__`` guard); None: its source cannot be read or parsed."""
    try:
        with open(filename, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    body: list[ast.stmt] = tree.body
    while True:
        node = next(
            (n for n in body if n.lineno <= line <= (n.end_lineno or n.lineno)),
            None,
        )
        if node is None:
            return False
        if isinstance(node, ast.If) and any(
            isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(node.test)
        ):
            return True
        inner = [b for name in ("body", "orelse", "finalbody", "handlers") for b in getattr(node, name, [])]
        body = [b for b in inner if isinstance(b, ast.stmt)]
        for handler in (b for b in inner if isinstance(b, ast.ExceptHandler)):
            body += handler.body


def _check_spawnable() -> None:
    """Refuse segments where their worker processes cannot start: ``spawn`` runs the main module again in
    each, by its file (or by name, ``python -m``). A script read from standard input (``python - <<EOF``)
    has none (``<stdin>``); a script that starts the transcode outside ``if __name__ == "__main__":``
    would start it again in each worker, whose start multiprocessing then refuses (its bootstrapping
    RuntimeError). Each was said after the survey as 'its worker process ended (exit code ...) without a
    result'. A worker that finds itself here while its main script is imported ends with
    :data:`_MAIN_RAN_AGAIN_EXIT`, which the parent says as this error.

    Raises:
        UnsupportedError: the main module names a file that is not there, or its line that started this
            transcode is not under the ``__main__`` guard.
    """
    if getattr(multiprocessing.process.current_process(), "_inheriting", False):
        # A segment's worker importing the main script (spawn's bootstrapping): it would fail to start
        # workers of its own; its parent says why.
        raise SystemExit(_MAIN_RAN_AGAIN_EXIT)
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None:
        return  # python -c, an interactive session, a notebook: nothing to run again
    if getattr(main, "__spec__", None) is None:  # python -m module: spawn imports it by name
        # Where spawn looks for a relative one (the folder at start; typeshed does not list the name).
        folder = getattr(multiprocessing.process, "ORIGINAL_DIR", None) or os.getcwd()
        if not os.path.isfile(path if os.path.isabs(path) else os.path.join(folder, path)):
            what = "was read from standard input" if path == "<stdin>" else f"({path!r}) is no file"
            raise UnsupportedError(
                "a segmented transcode starts a worker process per segment by 'spawn', which runs the main "
                f"script again, and this script {what}: save it to a file and run that (its transcode "
                "under 'if __name__ == \"__main__\":'), or leave segments out for one pipeline"
            )
    spec_name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    if spec_name.endswith("__main__") or os.path.splitext(os.path.basename(path))[0] == "__main__":
        return  # a package's __main__ (python -m alpha2, a folder, a zip): spawn does not run it again
    frame = _main_frame(main)
    if frame is None:
        return  # its top-level code is done: a thread or a callback at exit
    line, filename = frame.f_lineno, frame.f_code.co_filename
    if line is not None and _under_name_guard(filename, line) is False:
        name = os.path.basename(filename)
        raise _unguarded(
            f"line {line} of {name}, which started this transcode, runs outside the __main__ guard"
        )


class _Workers:
    """The segments' worker processes; :meth:`stop` ends those still running and waits for them."""

    def __init__(self) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.processes: dict[int, Any] = {}
        self.conns: dict[int, multiprocessing.connection.Connection] = {}

    def start(self, index: int, args: tuple[Any, ...]) -> None:
        parent, child = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=_segment_main,
            args=(os.getpid(), child, *args),
            name=f"alpha2-segment-{index + 1}",
            daemon=True,
        )
        self.conns[index] = parent
        self.processes[index] = process
        try:
            process.start()
        finally:
            child.close()

    def wait_all(
        self, parts: list[SegmentPart], progress: pipeline.Progress
    ) -> dict[int, tuple[TranscodeStats, int, int]]:
        """Each segment's report, first pts and last pts; the first failure raised as the error it was."""
        done: dict[int, tuple[TranscodeStats, int, int]] = {}
        frames: dict[int, int] = {}
        open_conns = dict(self.conns)

        def handle(message: tuple[Any, ...]) -> None:
            kind, index = message[0], message[1]
            if kind == "progress":
                frames[index] = message[2]
                progress.update(sum(frames.values()))
            elif kind == "done":
                done[index] = (message[2], message[3], message[4])
                frames[index] = message[2].frames
                progress.update(sum(frames.values()))
            elif kind == "error":
                raise _error_from(message, parts[index])

        while len(done) < len(parts):
            waiting: list[Any] = list(open_conns.values())
            waiting += [p.sentinel for i, p in self.processes.items() if i not in done]
            for ready in multiprocessing.connection.wait(waiting):
                index = next((i for i, c in open_conns.items() if c is ready), None)
                if index is not None:
                    try:
                        handle(open_conns[index].recv())
                    except EOFError:
                        del open_conns[index]
                    continue
                index = next(i for i, p in self.processes.items() if p.sentinel == ready)
                conn = open_conns.pop(index, None)
                while conn is not None and index not in done:
                    try:
                        handle(conn.recv())  # what it said before it ended
                    except EOFError:
                        break
                if index not in done:
                    process = self.processes[index]
                    process.join(_STOP_WAIT_S)  # its sentinel may be ready before its status is
                    code = process.exitcode
                    if code == _MAIN_RAN_AGAIN_EXIT:
                        raise _unguarded(
                            f"the worker of {parts[index].describe()}, running it, started a segmented "
                            "transcode again (outside the __main__ guard)"
                        )
                    raise InternalError(
                        f"{parts[index].describe()}: its worker process ended (exit code {code}) "
                        "without a result"
                    )
        return done

    def stop(self) -> None:
        """End the workers still running (SIGTERM, then SIGKILL) and wait for every one."""
        started = [p for p in self.processes.values() if p.pid is not None]
        for process in started:
            if process.is_alive():
                process.terminate()
        deadline = time.monotonic() + _STOP_WAIT_S
        for process in started:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
        for conn in self.conns.values():
            conn.close()


def _check_seekable(source: str) -> None:
    """Refuse an input the workers cannot each open and seek: a pipe, a device, a URL."""
    segments = _named("segments")
    if "://" in source and not source.startswith("file://"):
        raise InvalidInputError(
            f"{segments} reads the input in several processes, each seeking to its part: {source!r} is "
            f"not a local file; leave out {segments}"
        )
    if os.path.exists(source) and not os.path.isfile(source):
        raise InvalidInputError(
            f"{segments} reads the input in several processes, each seeking to its part: {source!r} is "
            f"not a regular file (a pipe or a device cannot be read twice); leave out {segments}"
        )


def _video_position(survey: TranscodeSurvey) -> int:
    """The decoded stream's place among the input's video streams (what keyframe_index takes)."""
    videos = [s.index for s in survey.info.streams if s.kind is StreamKind.VIDEO]
    return videos.index(survey.info.index) if survey.info.index in videos else 0


def _why_one_pipeline(survey: TranscodeSurvey, output: str) -> str | None:
    """Why the surveyed file is encoded in one pipeline whatever was asked (None: it can be split)."""
    muxer = output_container(output)
    if muxer in FRAME_CLOCK_MUXERS:
        # The join writes the segments' packets at their timestamps; this muxer takes one frame per
        # tick of its clock, and refused them ('Invalid data found when processing input').
        return f"the {muxer} container keeps a frame count, not the timestamps segments are joined by"
    codec = survey.stats.encoder.get("codec")
    if codec not in SEGMENT_CODECS:
        joined = ", ".join(sorted(SEGMENT_CODECS))
        return f"{survey.encoder} ({codec}) segments cannot be joined here (joined: {joined})"
    if survey.info.discontinuous_timestamps:
        return (
            "the input's container (MPEG-TS / PS) may reset its clock: one pipeline re-times such jumps "
            "over the whole file, segments could not"
        )
    if survey.first_pts is None or survey.first_time_base is None:
        return "the input's first frame has no timestamp to split the file by"
    return None


def _one_pipeline(
    source: str, output: str, options: TranscodeOptions, progress: pipeline.Progress, report: SegmentedReport
) -> TranscodeStats:
    stats = _Transcoder(source, output, dataclasses.replace(options, segments=None), progress).run()
    stats.segments = report.as_dict()
    return stats


def _parts(survey: TranscodeSurvey, index: KeyframeIndex, count: int, muxer: str) -> list[SegmentPart]:
    """The segments: the first from the output's first frame, the others from key frames."""
    assert survey.first_pts is not None and survey.first_time_base is not None
    tb = index.time_base
    first_input_time = survey.first_pts * survey.first_time_base
    first_pts = round(first_input_time / tb)
    end_pts = None if survey.end is None else -(-survey.end // tb)  # the first tick at or after the end
    starts = split_at_keyframes(index, count, first_pts, None if end_pts is None else int(end_pts))
    bounds: list[fractions.Fraction | None] = [survey.zero if survey.zero > survey.origin else None]
    bounds += [pts * tb for pts in starts]
    ends: list[fractions.Fraction | None] = [pts * tb for pts in starts]
    ends.append(survey.end)
    return [
        SegmentPart(i, len(bounds), survey.origin, survey.zero, start, end, survey.plan, muxer)
        for i, (start, end) in enumerate(zip(bounds, ends, strict=True))
    ]


def transcode_segmented(
    source: str, output: str, options: TranscodeOptions, progress: pipeline.Progress
) -> TranscodeStats:
    """Transcode ``source`` into ``output`` (both checked by :func:`~alpha2.api.transcoder.transcode`) with
    its video encoded in ``options.segments`` parts at once, or in one pipeline, said in the report.

    Raises:
        InvalidInputError: the input is not a seekable file.
        alpha2.gpu.Error subclasses: as :func:`~alpha2.api.transcoder.transcode`; a segment's failure
            says which segment. No output and no temporary file is left behind on failure.
    """
    assert options.segments is not None
    timer = pipeline.RunTimer()
    _check_seekable(source)
    cores = available_cores()
    count, reason = choose_segment_count(options.segments, cores)
    report = SegmentedReport(options.segments, 1, reason, cores)
    if count < 2:
        return _one_pipeline(source, output, options, progress, report)
    _check_spawnable()
    whole = dataclasses.replace(options, segments=None)
    t0 = time.perf_counter()
    surveyor = _Transcoder(source, output, whole, pipeline.Progress())
    survey = surveyor.survey()
    why = _why_one_pipeline(survey, output)
    if why is not None:
        report.reason = why
        return _one_pipeline(source, output, options, progress, report)
    index = keyframe_index(source, _video_position(survey))
    parts = _parts(survey, index, count, output_container(output))
    survey_seconds = time.perf_counter() - t0
    if len(parts) < 2:
        report.reason = (
            f"{len(index.keyframes)} key frame(s) in the part written: no place to split it "
            f"({reason} asked for {count})"
        )
        return _one_pipeline(source, output, options, progress, report)
    if len(parts) < count:
        reason += f"; {len(parts)} segments, as the key frames allow"
    report.segments, report.reason = len(parts), reason
    # Every segment takes the whole file's encoder (not chosen again) and the whole cut's frames.
    worker_options = dataclasses.replace(
        whole, codec=survey.encoder, from_seconds=0.0, to_seconds=None, duration_seconds=None
    )
    stats = survey.stats
    stats.stages.add("survey", survey_seconds)
    prefix = f".{os.path.splitext(os.path.basename(output))[0]}.segments."
    _remove_abandoned(os.path.dirname(output), prefix)
    folder = tempfile.mkdtemp(prefix=prefix, dir=os.path.dirname(output))
    with open(os.path.join(folder, _OWNER), "w", encoding="ascii") as owner:
        owner.write(str(os.getpid()))
    workers = _Workers()
    ok = False
    changed: str | None = None  # --segments auto: a segment planned otherwise; one pipeline instead
    progress.start(survey.expected_frames)
    try:
        t1 = time.perf_counter()
        paths = [os.path.join(folder, f"segment{i + 1}{SEGMENT_CONTAINER}") for i in range(len(parts))]
        for part, path in zip(parts, paths, strict=True):
            workers.start(part.index, (source, path, worker_options, part, current_names()))
        try:
            results = workers.wait_all(parts, progress)
        except UnsupportedError as exc:
            if options.segments != "auto" or PLAN_CHANGES not in str(exc):
                raise
            changed = str(exc).split("; transcode it in one pipeline")[0]
        if changed is None:
            report.encode_seconds = time.perf_counter() - t1
            stats.stages.add("segments", report.encode_seconds)
            t2 = time.perf_counter()
            joined = _join(survey, source, output, parts, paths, results)
            report.join_seconds = time.perf_counter() - t2
            stats.stages.add("join", report.join_seconds)
            report.dts_raised = joined.dts_raised
            for part in parts:
                seg_stats, first, last = results[part.index]
                # A size change within a segment is scaled there: its note is the whole run's to say.
                stats.input_notes.extend(
                    f"{part.describe()}: {note}"
                    for note in seg_stats.input_notes
                    if note.startswith("picture size changed")
                )
                start = fractions.Fraction(first) * survey.time_base
                report.parts.append(
                    SegmentResult(
                        part.index, float(start), seg_stats.frames, seg_stats.seconds, first, last, seg_stats
                    )
                )
            surveyor._stream_report(
                joined
            )  # kept, dropped and re-encoded streams, said as one pipeline says them
            _fill_stats(stats, report, joined, survey, output, options)
            ok = True
    finally:
        workers.stop()
        shutil.rmtree(folder, ignore_errors=True)
        progress.close(completed=ok)
    if changed is not None:
        report.segments, report.reason = 1, f"{reason}, but {changed}"
        return _one_pipeline(source, output, options, progress, report)
    stats.seconds = timer.stop()
    return stats


def _join(
    survey: TranscodeSurvey,
    source: str,
    output: str,
    parts: list[SegmentPart],
    paths: list[str],
    results: dict[int, tuple[TranscodeStats, int, int]],
) -> JoinReport:
    """The one mux pass: the segments' video in order, the other streams as one pipeline copies them."""
    segments = [JoinedSegment(path, results[part.index][1]) for part, path in zip(parts, paths, strict=True)]
    copy = survey.streams.copy
    streams_end = None if survey.end is None else float(survey.end - survey.zero)
    with atomic_path(output) as tmp:
        return join_segments(
            tmp,
            segments,
            time_base=survey.time_base,
            container_format=output_container(output),
            display_rotation=survey.plan.display_rotation,
            rate=survey.info.average_rate or None,
            # Also with no stream to copy: the container's and the video's tags (its timecode) and the
            # chapters come from the input, as one pipeline takes them.
            copy_from=source,
            copy_streams=copy,
            default_first=survey.streams.default_first,
            start_shift_seconds=float(survey.zero),
            jump_seconds=survey.jump_seconds,
            trim_streams=survey.trim,
            streams_end_seconds=streams_end,
        )


def _fill_stats(
    stats: TranscodeStats,
    report: SegmentedReport,
    joined: JoinReport,
    survey: TranscodeSurvey,
    output: str,
    options: TranscodeOptions,
) -> None:
    """The whole run's report from the survey's, the segments' and the join's."""
    parts = report.parts
    stats.frames = sum(p.frames for p in parts)
    routes = merged_route_reports(parts)
    report.route_differences = routes.differences
    stats.segments = report.as_dict()
    stats.packets_out = sum(joined.packets)
    stats.audio_packets_copied = joined.audio_packets_copied
    stats.audio_timestamps = joined.audio_timestamps
    # Every segment's frames counted, as one pipeline's reports count the file's; where the segments
    # took different ways, the scale route and device are the first's and route_differences says each.
    first = parts[0].stats
    stats.scale_route = first.scale_route
    stats.device = first.device
    stats.import_paths, stats.encode_paths = routes.imports, routes.encodes
    stats.import_report = None if routes.imports is None else routes.imports.summary()
    stats.encode_report = None if routes.encodes is None else routes.encodes.summary()
    stats.encode_routes = None if routes.encodes is None else routes.encodes.as_dict()
    for part in parts:
        seg = part.stats
        stats.paths.frames.update(seg.paths.frames)
        stats.paths.bytes.update(seg.paths.bytes)
        stats.paths.notes.update(seg.paths.notes)
        stats.timestamps = stats.timestamps + seg.timestamps
        stats.peak_surfaces = max(stats.peak_surfaces, seg.peak_surfaces)
        stats.peak_copier_slots = max(stats.peak_copier_slots, seg.peak_copier_slots)
        for key, value in seg.decode.items():
            if isinstance(value, str):  # what was converted: the same for every part
                stats.decode[key] = stats.decode.get(key) or value
            else:
                stats.decode[key] = (stats.decode.get(key) or 0) + int(value)
    stats.output_bytes = os.path.getsize(output)
    stats.output_seconds = container_duration_seconds(output)
    if options.cuts:
        ended = survey.end
        length = container_duration_seconds(stats.input) if ended is not None else None
        if ended is not None and length is not None and float(ended - survey.origin) >= length - 1e-6:
            ended = None  # an end at or past the input's cuts nothing, as one pipeline says it
        stats.cut = {
            "from_seconds": round(float(survey.zero - survey.origin), 6),
            "asked_from_seconds": options.from_seconds,
            "to_seconds": None if ended is None else round(float(ended - survey.origin), 6),
            "frames": None,
            "streams_trimmed": survey.trim,
        }
