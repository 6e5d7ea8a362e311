"""What the player and the transcoder share: the device, the bookkeeping and the progress display.

Composition only: the WebGPU device is chosen with :mod:`alpha2.gpu.adapters` (``ALPHA2_GPU_ADAPTER``
honoured, Vulkan candidates from :mod:`alpha2.native_gpu.device.candidates` for matching), frames are
counted per :class:`~alpha2.gpu.identity.ExecutionPath` with the bytes that crossed the CPU, the time of
each stage is summed, and progress goes to a rich bar on a terminal or to plain lines otherwise.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import math
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from alpha2.gpu.errors import InvalidInputError

# Size, ExecutionPath and json are imported where they are used: the command line's parsers take their
# option types from here (``alpha2 COMMAND --help`` loads this module and answers at once).
if TYPE_CHECKING:
    from alpha2.gpu.geometry import Size
    from alpha2.gpu.identity import ExecutionPath

__all__ = [
    "FREE_SIDE",
    "PathCounter",
    "PlainProgress",
    "Progress",
    "RichProgress",
    "StageTimes",
    "box_text",
    "emit_json",
    "fit_inside",
    "make_progress",
    "non_negative_float",
    "parse_even_size",
    "parse_fit_size",
    "parse_size",
    "positive_int",
]


ENCODER_OPTIONS: dict[str, dict[str, str]] = {
    # PyAV opens encoders with slice threading only, which libx264 takes as sliced threads (slower, and a
    # different stream from ffmpeg's); the ffmpeg command's default is frame threads: the same here.
    "libx264": {"thread_type": "frame"},
    "libx265": {"x265-params": "log-level=error"},
}
"""Encoder options alpha2 always passes: x264 threaded as by the ffmpeg command, x265 without its banner."""

QUIET_ENCODER_OPTIONS = ENCODER_OPTIONS
"""The earlier name of :data:`ENCODER_OPTIONS`."""


# ---------------------------------------------------------------------------------------------------
# command-line values


FREE_SIDE = 1 << 16
"""A side of a ``--size`` box left free (``-1x720``, ``x720``): longer than any picture alpha2 writes, so
the other side alone bounds the fit."""


def parse_size(text: str) -> Size:
    """``WxH`` (e.g. ``1280x720``) -> Size; an argparse ``type`` (a bad value is a usage error)."""
    from alpha2.gpu.geometry import Size

    parts = text.lower().replace("*", "x").split("x")
    try:
        width, height = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be WIDTHxHEIGHT (e.g. 1280x720), got {text!r}") from None
    if width <= 0 or height <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    return Size(width, height)


def parse_fit_size(text: str) -> Size:
    """A box to fit a picture in: ``WxH``, or one side left free as ffmpeg's scale filter takes it
    (``-1x720``, ``-2x720``, ``x720``: 720 high; ``1280x-1``, ``1280x``: 1280 wide), the free side
    :data:`FREE_SIDE` (not ``0``, which is the input's side to ffmpeg, shape lost); an argparse ``type``."""
    from alpha2.gpu.geometry import Size

    parts = text.lower().replace("*", "x").split("x")
    if len(parts) == 2:
        free = [p.strip() in ("", "-1", "-2") for p in parts]
        if free[0] != free[1]:
            try:
                side = int(parts[1] if free[0] else parts[0])
            except ValueError:
                side = 0
            if side > 0:
                return Size(FREE_SIDE, side) if free[0] else Size(side, FREE_SIDE)
    return parse_size(text)


def box_text(box: Size) -> str:
    """``1280x720``, or ``720 high`` / ``1280 wide`` for a box with a free side (a side typed as
    99999 is said as typed)."""
    if box.width == FREE_SIDE:
        return f"{box.height} high"
    if box.height == FREE_SIDE:
        return f"{box.width} wide"
    return f"{box.width}x{box.height}"


def parse_even_size(text: str) -> Size:
    """``WxH`` with even sides (4:2:0 video); an argparse ``type``."""
    size = parse_size(text)
    if size.width % 2 or size.height % 2:
        raise argparse.ArgumentTypeError(f"size must have even sides (4:2:0 video), got {text!r}")
    return size


def positive_int(text: str) -> int:
    """An argparse ``type`` for counts >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse ``type`` for seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def add_hwaccel_argument(parser: argparse.ArgumentParser) -> None:
    """``--hwaccel auto|cuda|none``, as the decode session takes it."""
    parser.add_argument(
        "--hwaccel",
        choices=("auto", "cuda", "none"),
        default="auto",
        help="decode on NVDEC (cuda), in software (none), or NVDEC when possible (auto)",
    )


def fit_inside(width: int, height: int, box: Size) -> Size:
    """The largest size with ``width:height``'s aspect that fits in ``box``, both sides even (>= 2)."""
    from alpha2.gpu.geometry import Size

    if width <= 0 or height <= 0:
        raise InvalidInputError(f"cannot scale a {width}x{height} picture")
    # The side the box limits takes the box's (even) length; the other follows from it, so that an
    # odd box side does not bend the shape (320x240 in 641x361 is 480x360, not 482x360).
    box_w, box_h = max(2, box.width - box.width % 2), max(2, box.height - box.height % 2)
    if box.width * height <= box.height * width:
        fit_w = box_w
        fit_h = min(box_h, max(2, round(fit_w * height / width / 2) * 2))
    else:
        fit_h = box_h
        fit_w = min(box_w, max(2, round(fit_h * width / height / 2) * 2))
    return Size(fit_w, fit_h)


# ---------------------------------------------------------------------------------------------------
# accounting


class PathCounter:
    """Frames and pixel bytes per ExecutionPath, plus notes (fallback reasons, passthrough) with counts."""

    def __init__(self) -> None:
        self.frames: collections.Counter[ExecutionPath] = collections.Counter()
        self.bytes: collections.Counter[ExecutionPath] = collections.Counter()
        self.notes: collections.Counter[str] = collections.Counter()

    def add(
        self, path: ExecutionPath, bytes_crossed: int = 0, frames: int = 1, note: str | None = None
    ) -> None:
        """Count ``frames`` that took ``path`` and the bytes that crossed the CPU doing it."""
        self.frames[path] += frames
        if path.crosses_cpu:
            self.bytes[path] += bytes_crossed
        if note:
            self.notes[note] += frames

    def merge_counts(self, frames_by_path: Mapping[ExecutionPath, int], fallbacks: Mapping[str, int]) -> None:
        """Add an importer's per-path counts and fallback reasons."""
        for path, count in frames_by_path.items():
            self.frames[path] += count
        for reason, count in fallbacks.items():
            self.notes[reason] += count

    @property
    def bytes_through_cpu(self) -> int:
        """Pixel bytes that crossed host memory, over all paths."""
        return sum(self.bytes.values())

    def as_dict(self) -> dict[str, Any]:
        """``{"frames": {path: n}, "bytes": {path: n}, "notes": {text: n}}``, keyed by ExecutionPath value."""
        return {
            "frames": {p.value: n for p, n in sorted(self.frames.items(), key=lambda kv: kv[0].value)},
            "bytes": {p.value: n for p, n in sorted(self.bytes.items(), key=lambda kv: kv[0].value)},
            "notes": dict(self.notes),
        }


class StageTimes:
    """Seconds spent per stage (decode, import, render, ...), summed; ``with times.stage('x'):`` or add()."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, stage: str, seconds: float) -> None:
        """Add ``seconds`` to ``stage``."""
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block into ``name``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def as_dict(self, wall_s: float) -> dict[str, dict[str, float]]:
        """Per stage: seconds and share of ``wall_s``; ``other`` is the wall time no stage covered."""
        out = {
            name: {"seconds": round(s, 4), "share": round(s / wall_s, 4) if wall_s > 0 else 0.0}
            for name, s in self.seconds.items()
        }
        rest = wall_s - sum(self.seconds.values())
        if wall_s > 0 and rest > 0:
            out["other"] = {"seconds": round(rest, 4), "share": round(rest / wall_s, 4)}
        return out

    def summary(self, wall_s: float) -> str:
        """``decode 12% · render 40% · ...``."""
        parts = sorted(self.as_dict(wall_s).items(), key=lambda kv: -kv[1]["seconds"])
        return ", ".join(f"{name} {100 * v['share']:.0f}%" for name, v in parts)


# ---------------------------------------------------------------------------------------------------
# progress


def clock_text(seconds: float) -> str:
    """A length as a progress line says it: ``12.3 s`` under a minute, else ``3:00``, ``1:02:03``."""
    if seconds < 59.95:
        return f"{max(seconds, 0.0):.1f} s"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def media_time_text(done_seconds: float, total_seconds: float | None, elapsed_s: float) -> str:
    """``12.3 s of 3:00, 45x``: the media's time done, of its length where known, and the speed (media
    seconds a second of work, as ffmpeg's ``speed=``)."""
    text = clock_text(done_seconds)
    if total_seconds:
        text += f" of {clock_text(total_seconds)}"
    if elapsed_s > 0 and done_seconds > 0:
        speed = done_seconds / elapsed_s
        text += f", {speed:.0f}x" if speed >= 9.95 else f", {speed:.1f}x"
    return text


class Progress:
    """Progress display: a no-op base (``--json`` runs and the in-process API use it)."""

    def start(self, total: int | None) -> None:
        """Begin; ``total`` frames when known."""

    def update(self, frames: int) -> None:
        """``frames`` done so far."""

    def start_seconds(self, total_seconds: float | None) -> None:
        """Begin a run counted in the media's time, not frames (sound alone: its frames of a thousand
        samples mean nothing to a user, ffmpeg says the time done and the speed); ``total_seconds``
        when known. The base begins a count of frames (a callback of frames gets them)."""
        self.start(None)

    def update_seconds(self, done_seconds: float, frames: int) -> None:
        """``done_seconds`` of the media done so far, in ``frames``; the base counts the frames."""
        self.update(frames)

    def set_rate(self, fps: float) -> None:
        """The frames a second to show from now on, where the count is no rate: a player's bar follows
        the position (a seek moves it, a pause holds it), so counted frames over elapsed time said 50.8
        fps for a 30 fps file started at 10 s. Unset, the rate is the count over the elapsed time."""

    def set_position(self, text: str) -> None:
        """A player's position, as ``0:12 / 1:00 (paused)``, said from now on in place of the run's
        elapsed time, as mpv's status line says it: the elapsed time ran on while the player stood
        paused and did not follow its seeks, and read as the position."""

    def finishing(self, what: str) -> None:
        """Every frame is in; ``what`` is still being done (an encoder's last frames), which may take
        a while: said rather than a bar at its end that does not move."""

    def close(self, completed: bool = True, *, ended: bool = True) -> None:
        """End the display; ``completed`` False (a failure) skips the final line. ``ended`` False: the run
        stopped before its input's end (a player quit with q), and a bar keeps its total."""


class PlainProgress(Progress):
    """A line every ``every_frames`` frames or ``every_s`` seconds, whichever comes first (not a terminal)."""

    def __init__(
        self,
        label: str,
        stream: IO[str] | None = None,
        every_frames: int = 100,
        every_s: float = 5.0,
        *,
        time_left: bool = True,
    ) -> None:
        self.label = label
        self.time_left = time_left
        self.stream = stream if stream is not None else sys.stderr
        self.every_frames = every_frames
        self.every_s = every_s
        self._total: int | None = None
        self._start = 0.0
        self._last_frames = 0
        self._last_time = 0.0
        self._frames = 0
        self._rate: float | None = None
        self._timed = False
        self._total_seconds: float | None = None
        self._done_seconds = 0.0
        self._last_done_seconds = 0.0

    def start(self, total: int | None) -> None:
        self._total = total
        self._start = self._last_time = time.monotonic()

    def start_seconds(self, total_seconds: float | None) -> None:
        self.start(None)
        self._timed, self._total_seconds = True, total_seconds

    def update_seconds(self, done_seconds: float, frames: int) -> None:
        self._frames, self._done_seconds = frames, done_seconds
        now = time.monotonic()
        # Every every_s seconds, or every tenth of the length: a log's lines, not one per second.
        tenth = (self._total_seconds or math.inf) / 10
        if now - self._last_time < self.every_s and done_seconds - self._last_done_seconds < tenth:
            return
        self._last_done_seconds, self._last_time = done_seconds, now
        print(self._line(frames, now), file=self.stream, flush=True)

    def set_rate(self, fps: float) -> None:
        self._rate = fps

    def _line(self, frames: int, now: float) -> str:
        if self._timed:
            done = media_time_text(self._done_seconds, self._total_seconds, now - self._start)
            return f"{self.label}: {done}"
        elapsed = max(now - self._start, 1e-9)
        fps = frames / elapsed if self._rate is None else self._rate
        text = f"{self.label}: {frames}"
        if self._total:
            text += f"/{self._total}"
        text += f" frame{'' if (self._total or frames) == 1 else 's'}, {fps:.1f} fps"
        if self.time_left and self._total and fps > 0 and frames < self._total:
            text += f", {(self._total - frames) / fps:.0f} s left"
        return text

    def update(self, frames: int) -> None:
        self._frames = frames
        if frames - self._last_frames < self.every_frames:
            now = time.monotonic()
            if now - self._last_time < self.every_s:
                return
        else:
            now = time.monotonic()
        self._last_frames, self._last_time = frames, now
        print(self._line(frames, now), file=self.stream, flush=True)

    def finishing(self, what: str) -> None:
        frames = f"{self._frames} frame{'' if self._frames == 1 else 's'}"
        if self._timed:
            frames = clock_text(self._done_seconds)
        print(f"{self.label}: {frames} in, finishing {what}", file=self.stream, flush=True)

    def close(self, completed: bool = True, *, ended: bool = True) -> None:
        if self._timed:
            if completed and ended and self._total_seconds not in (None, self._done_seconds):
                self._total_seconds = self._done_seconds  # the length was the header's estimate
                self._last_done_seconds = -1.0
            if completed and self._done_seconds != self._last_done_seconds:
                print(self._line(self._frames, time.monotonic()), file=self.stream, flush=True)
            return
        if completed and self._frames != self._last_frames:
            print(self._line(self._frames, time.monotonic()), file=self.stream, flush=True)


class RichProgress(Progress):
    """A rich progress bar with frames, fps and time left (a terminal)."""

    def __init__(self, label: str, stream: IO[str] | None = None, *, time_left: bool = True) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import (
            Progress as _RichProgress,
        )
        from rich.text import Text

        class CountColumn(MofNCompleteColumn):
            """``45/90``, and ``45`` alone where no total is known (it said ``45/?``)."""

            def render(self, task: Any) -> Any:
                if task.total is None:
                    return Text(str(int(task.completed)), style="progress.download")
                return super().render(task)

        self._progress = _RichProgress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            CountColumn(),
            TextColumn("frames {task.fields[fps]} fps"),
            TimeElapsedColumn(),
            *((TextColumn("left"), TimeRemainingColumn()) if time_left else ()),
            console=Console(file=stream if stream is not None else sys.stderr),
            transient=False,
        )
        # Counted in time (start_seconds): the media's time done of its length and the speed, in one
        # column, where frames show their count and rate.
        self._timed_columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[done]}"),
            TimeElapsedColumn(),
            *((TextColumn("left"), TimeRemainingColumn()) if time_left else ()),
        )
        self._label = label
        self._task: Any = None
        self._start = 0.0
        self._last_refresh = 0.0
        self._frames = 0
        self._rate: float | None = None
        self._timed = False
        self._total_seconds: float | None = None
        self._done_seconds = 0.0
        self._position: str | None = None

    def set_rate(self, fps: float) -> None:
        self._rate = fps

    def set_position(self, text: str) -> None:
        if self._task is None or text == self._position:
            return
        if self._position is None:
            from rich.progress import TextColumn, TimeElapsedColumn

            position = TextColumn("{task.fields[position]}")
            # Counted in time (sound alone), the position is the time done: its 'done' column goes.
            done = self._timed_columns[2] if self._timed else None
            columns = [c for c in self._progress.columns if c is not done]
            self._progress.columns = tuple(
                position if isinstance(c, TimeElapsedColumn) else c for c in columns
            )
        self._position = text
        self._progress.update(self._task, position=text)

    def _fps(self, now: float) -> float:
        """The rate given, else the frames counted over the elapsed time."""
        return self._frames / max(now - self._start, 1e-9) if self._rate is None else self._rate

    def start(self, total: int | None) -> None:
        self._progress.start()
        self._task = self._progress.add_task(self._label, total=total, fps="0.0")
        self._start = time.monotonic()

    def update(self, frames: int) -> None:
        self._frames = frames
        now = time.monotonic()
        if now - self._last_refresh < 0.1:
            return
        self._last_refresh = now
        self._progress.update(self._task, completed=frames, fps=f"{self._fps(now):.1f}")

    def start_seconds(self, total_seconds: float | None) -> None:
        self._timed, self._total_seconds = True, total_seconds
        self._progress.columns = self._timed_columns
        self._progress.start()
        self._task = self._progress.add_task(self._label, total=total_seconds, fps="", done="")
        self._start = time.monotonic()

    def _done_text(self, now: float) -> str:
        return media_time_text(self._done_seconds, self._total_seconds, now - self._start)

    def update_seconds(self, done_seconds: float, frames: int) -> None:
        self._frames, self._done_seconds = frames, done_seconds
        now = time.monotonic()
        if now - self._last_refresh < 0.1:
            return
        self._last_refresh = now
        self._progress.update(self._task, completed=done_seconds, done=self._done_text(now))

    def finishing(self, what: str) -> None:
        # The bar's label becomes 'finishing', as wide as most labels: the columns keep their room.
        if self._task is not None:
            fps = self._fps(time.monotonic())
            self._progress.update(
                self._task,
                description="finishing",
                completed=self._done_seconds if self._timed else self._frames,
                fps=f"{fps:.1f}",
            )

    def close(self, completed: bool = True, *, ended: bool = True) -> None:
        if completed and self._task is not None:
            # At the input's end the total becomes the frames counted (an estimate's total is not left
            # short or over); a player quit early keeps its total: 277/1800, not a full bar.
            fps = self._fps(time.monotonic())
            total = (
                self._frames if ended else next(t.total for t in self._progress.tasks if t.id == self._task)
            )
            if self._timed:
                # At the end the length is the time done (the container's was an estimate).
                if ended:
                    self._total_seconds = self._done_seconds
                done = self._done_text(time.monotonic())
                self._progress.update(
                    self._task,
                    description=self._label,
                    completed=self._done_seconds,
                    total=self._total_seconds if ended else total,
                    done=done,
                )
            else:
                self._progress.update(
                    self._task,
                    description=self._label,
                    completed=self._frames,
                    total=total,
                    fps=f"{fps:.1f}",
                )
        elif not completed:
            # Interrupted: the bar goes (the line after it says why); kept, a Ctrl-C's echo moved the
            # cursor under rich's feet and the bar was printed twice.
            self._progress.live.transient = True
        self._progress.stop()


def make_progress(
    label: str, *, enabled: bool = True, stream: IO[str] | None = None, time_left: bool = True
) -> Progress:
    """A rich bar on a terminal, plain lines otherwise, nothing when not ``enabled``. ``time_left``:
    say the time left, from the frames left at the rate so far (a transcode's); a player, paced by
    its clock, dropping frames and seeking, says none."""
    if not enabled:
        return Progress()
    out = stream if stream is not None else sys.stderr
    isatty = getattr(out, "isatty", None)
    if callable(isatty) and isatty() and os.environ.get("TERM") != "dumb":
        return RichProgress(label, out, time_left=time_left)
    return PlainProgress(label, out, time_left=time_left)


# ---------------------------------------------------------------------------------------------------
# output


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(_jsonable(k)): _jsonable(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_jsonable(v) for v in value]
    if hasattr(value, "value") and hasattr(value, "name") and not isinstance(value, int | float | str):
        return value.value  # enums
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def emit_json(stats: Mapping[str, Any], stream: IO[str] | None = None) -> None:
    """Write ``stats`` as one JSON document (stdout by default)."""
    import json

    out = stream if stream is not None else sys.stdout
    json.dump(_jsonable(stats), out, indent=2, sort_keys=False)
    out.write("\n")
    out.flush()


@dataclass
class RunTimer:
    """Wall time of a run."""

    start: float = field(default_factory=time.perf_counter)
    end: float | None = None

    def stop(self) -> float:
        """Stop (idempotent) and return the seconds."""
        if self.end is None:
            self.end = time.perf_counter()
        return self.end - self.start

    @property
    def seconds(self) -> float:
        """Seconds so far (or until stop)."""
        return (self.end if self.end is not None else time.perf_counter()) - self.start
