"""``alpha2 play A B C ...``: several inputs as one grid (a video wall), composed on one device.

The streams go through one :class:`~alpha2.api.streams.StreamGroup`: one Device, one decoder thread and
one importer per stream, one surface budget, one submit per display frame. With a display (the rules of
single-input play: :func:`~alpha2.apps.player.window_unavailable_reason`) the wall plays in a window
(:mod:`alpha2.apps.wall_window`): paced by the clock of one tile's sound (or the system clock) at the
refresh, each stream showing its latest due frame, turned as its display matrix says, letterboxed.
Otherwise it renders offscreen (``--offscreen``, ``--snapshot``, or no display), each tick advancing
every stream by one frame as fast as the device allows; ``--snapshot WALL.png [--at SECONDS]`` writes the
wall with every stream's frame at that time. An input that cannot be opened gets a tile with its error
written on it (the on-screen display's text) while the others play.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from alpha2.api import pipeline
from alpha2.api.atomic import check_output_path, write_png
from alpha2.api.colour_report import colour_report, plan_dict
from alpha2.api.devices import open_device
from alpha2.api.playback import PlayOptions, PlayStats
from alpha2.api.streams import StreamGroup
from alpha2.apps.osd import text_image, wrap_to_width
from alpha2.apps.player import options_from_args, window_unavailable_reason
from alpha2.apps.wall_window import WINDOW_FIT, WallWindow
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size
from alpha2.gpu.identity import ExecutionPath

__all__ = ["WallStats", "play_wall", "run_wall"]


@dataclass
class WallStats(PlayStats):
    """What a wall run did: the play stats (frames are display ticks) plus one entry per stream."""

    streams: list[dict[str, Any]] = field(default_factory=list)
    """Per stream: source, frames shown, frames dropped, its tile's origin, its colour plan, and where
    its GPU copies ran (``gpu_copies``: on its decoder's thread, or at import)."""
    submissions: int = 0
    """``queue.submit`` calls of the ticks (one per tick)."""
    inputs: list[str] = field(default_factory=list)
    """The wall's inputs, in tile order (``input`` says them in one line)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready stats; ``input`` is the list of the wall's inputs."""
        data = super().as_dict()
        data["input"] = list(self.inputs)
        data["streams"] = self.streams
        data["submissions"] = self.submissions
        return data

    def summary(self) -> str:
        """A few lines for ``--stats``."""
        lines = [super().summary(), f"  wall: {len(self.streams)} streams, {self.submissions} submits"]
        for s in self.streams:
            line = f"    {s['source']}: {s['frames_shown']} shown, {s['frames_dropped']} dropped"
            if s.get("error"):
                line += f"; not played: {s['error']}"
            copies = s.get("gpu_copies") or {}
            if any(copies.values()):
                line += (
                    f"; GPU copies {copies['decoder_thread']} on its decoder's thread, "
                    f"{copies['at_import']} at import"
                )
            lines.append(line)
        return "\n".join(lines)


def _window_refusal(options: PlayOptions, environ: Mapping[str, str] | None) -> str | None:
    """Why the wall renders offscreen (None: it plays in a window)."""
    if options.snapshot is not None:
        return "--snapshot renders the wall to a texture"
    if options.offscreen:
        return "--offscreen"
    why = window_unavailable_reason(environ)
    return None if why is None else f"no window: {why}"


def play_wall(
    sources: Sequence[str | os.PathLike[str]],
    options: PlayOptions | None = None,
    *,
    progress: pipeline.Progress | None = None,
    environ: Mapping[str, str] | None = None,
    canvas_module: str = "rendercanvas.auto",
) -> WallStats:
    """Play several ``sources`` as one grid (the in-process form of ``alpha2 play A B ...``).

    A window when there is a display (``environ``: the environment to judge that by, default
    ``os.environ``; ``canvas_module``: the rendercanvas backend), offscreen otherwise.

    Raises:
        alpha2.gpu.Error subclasses: bad input, a bad ``--at``, an unwritable snapshot path, device errors.
    """
    options = options if options is not None else PlayOptions()
    if options.loop and options.decoders == "processes":
        raise InvalidInputError(
            "--loop plays the wall again from its start, and a wall of decoder processes cannot seek; "
            "use --decoders threads (the default)"
        )
    progress = progress if progress is not None else pipeline.Progress()
    names = [os.fspath(s) for s in sources]
    refusal = _window_refusal(options, environ)
    stats = WallStats(input=", ".join(names), mode="offscreen", mode_reason=refusal or "", inputs=list(names))
    snapshot = (
        check_output_path(options.snapshot, what="snapshot", overwrite=options.overwrite, inputs=names)
        if options.snapshot
        else None
    )
    timer = pipeline.RunTimer()
    clock = time.perf_counter
    completed = False
    t0 = clock()
    # A window presents wgpu-native devices: the group's Device asks for no GPU copy then.
    device = None if refusal is not None else open_device("none")
    window: WallWindow | None = None
    try:
        group = StreamGroup(
            names,
            hwaccel=options.hwaccel,
            device=device,
            decoders=options.decoders,
            colour_target=ColourTarget.sdr_bt709(options.target_peak_cd_m2),
            colour_options=ColourOptions(tone_curve=options.tone_curve),
            broken="tile" if options.decoders == "threads" else "raise",
            # In a window the wall is drawn at the window's size (the wall's, halved until it fits
            # the screen): rendered larger, it was scaled down at every present.
            fit=None if refusal is not None else WINDOW_FIT,
        )
    except BaseException:
        if device is not None:
            device.close()
        raise
    try:
        stats.stages.add("setup", clock() - t0)
        stats.device = group.device.as_dict()
        stats.size = group.size
        _seek_all(group, options.at_s)
        for index, stream in enumerate(group.streams):
            if stream.error is not None:
                group.paint_tile(index, error_tile(stream.source, stream.error, group.tile))
        if refusal is None:
            window = WallWindow(
                group,
                stats,
                frames=options.frames,
                progress=progress,
                audio=options.audio,
                volume=options.volume,
                loop=options.loop,
            )
            try:
                window.run(canvas_module)
            finally:
                window.finish()
        else:
            limit = options.frames if options.frames is not None else (1 if snapshot else None)
            if options.loop and limit is None:
                stats.mode_reason += (
                    "; --loop not taken: offscreen it loops until --frames, and none was given"
                )
            _run_offscreen(group, stats, limit, progress, loop=options.loop and limit is not None)
        # A window quit before its first draw showed nothing, which is no fault of the inputs.
        if stats.frames == 0 and (refusal is not None or group.finished):
            raise InvalidInputError(f"none of {names!r} has a decodable video frame")
        if snapshot is not None:
            t0 = clock()
            pixels = group.read_wall()
            stats.paths.add(ExecutionPath.CPU_DOWNLOAD, int(pixels.nbytes), note="snapshot read-back")
            stats.snapshot = write_png(snapshot, pixels)
            shown = [s.shown_pts_s for s in group.streams if s.shown_pts_s is not None]
            stats.snapshot_pts_s = min(shown) if shown else None
            stats.stages.add("snapshot", clock() - t0)
        t0 = clock()
        group.drain()
        stats.stages.add("wait", clock() - t0)
        stats.seconds = timer.stop()
        _group_stats(stats, group, options)
        completed = True
    finally:
        stats.peak_surfaces = group.budget.usage().peak_surfaces
        group.close()
        if device is not None:
            device.close()
        progress.close(completed)
    return stats


def _seek_all(group: StreamGroup, at: float | None) -> None:
    """Seek every stream to ``--at``; a stream that ends before it shows its last frame, as it does at
    the end of playing (the whole wall was refused for one short file), and past the end of every one
    ``--at`` is refused."""
    if not at:
        return
    live = [stream for stream in group.streams if stream.decoder is not None]  # not a broken input's
    ends = [stream.decoder.info.duration_seconds for stream in live]
    if ends and all(end is not None and at >= end for end in ends):
        longest = max(end for end in ends if end is not None)
        raise InvalidInputError(
            f"--at {at:g} s is past the end of every input (the longest is {longest:.3f} s)"
        )
    for stream, end in zip(live, ends):
        rate = stream.decoder.info.average_rate
        last = None if end is None else max(0.0, end - (float(1 / rate) if rate else 0.05))
        stream.decoder.seek(at if last is None or at < end else last)


def _run_offscreen(
    group: StreamGroup,
    stats: WallStats,
    limit: int | None,
    progress: pipeline.Progress,
    *,
    loop: bool = False,
) -> None:
    """Tick (every stream one frame a tick) as fast as the device allows, until the end or ``limit``;
    with ``loop``, every stream again from its start once the longest has ended, as the window does
    (``--loop`` was dropped offscreen: the wall stopped at its end, short of ``--frames``)."""
    progress.start(limit)
    rewound = False  # a rewind that drew nothing ends it (no stream has a frame to show)
    while limit is None or stats.frames < limit:
        tick = group.tick()
        if not tick.submitted:
            if loop and group.finished and not rewound:
                group.seek(0.0)
                rewound = True
                continue
            break
        rewound = False
        stats.frames += 1
        progress.update(stats.frames)


def _group_stats(stats: WallStats, group: StreamGroup, options: PlayOptions) -> None:
    """The group's stages, paths, submits, colour and per-stream counts into ``stats``."""
    for name, seconds in group.stages.seconds.items():
        stats.stages.add(name, seconds)
    counts = group.path_counts()
    stats.paths.merge_counts(counts.frames, counts.notes)
    stats.paths.bytes[ExecutionPath.CPU_UPLOAD] += counts.bytes[ExecutionPath.CPU_UPLOAD]
    stats.submissions = group.submissions
    stats.dropped_frames = sum(s.frames_dropped for s in group.streams)
    stats.hwaccel = {
        "streams": [
            "error" if s.decoder is None else s.decoder.hwaccel_report.active.value for s in group.streams
        ]
    }
    curve = options.tone_curve.name.lower()
    stats.streams = []
    for s in group.streams:
        if s.decoder is None:
            copies = {}  # a broken input: nothing decoded
        elif s.importer is not None:
            imports = s.importer.stats()
            copies = {"decoder_thread": imports.copied_ahead, "at_import": imports.not_copied_ahead}
        else:  # a DecodeProcess: its decoder process made every GPU copy
            copies = {"decoder_process": s.decoder.path_report.frames_by_path.get(ExecutionPath.GPU_COPY, 0)}
        stats.streams.append(
            {
                "source": s.source,
                "frames_shown": s.frames_shown,
                "frames_dropped": s.frames_dropped,
                "tile_origin": list(s.origin),
                "colour": plan_dict(s.colour, curve) if s.frames_shown else None,
                # Where each frame's GPU copy ran (copy-ahead, or a decoder process); 0 on the CPU upload.
                "gpu_copies": copies,
                "error": s.error,
            }
        )
    if any(s.frames_shown for s in group.streams):
        stats.colour = colour_report(group.renderer, options)  # the latest frame's; per stream above


def error_tile_lines(source: str, error: str, size: int, tile: Size) -> list[str]:
    """The lines of a broken input's tile at ``size`` px: its name, then the error, each wrapped to the
    width the font draws it (a count of characters let long words run off the tile); where the error
    has more lines than the tile's height holds, the last one kept ends with an ellipsis (they were
    left out without a sign)."""
    room = int(tile.width * 0.9)
    name = wrap_to_width(os.path.basename(source), size, room).split("\n")
    lines = wrap_to_width(error, size, room).split("\n")
    fits = max(1, tile.height // (size * 2) - 2)
    if len(lines) > fits:
        lines = lines[:fits]
        lines[-1] = lines[-1].rstrip() + " …"
    return name + lines


def error_tile(source: str, error: str, tile: Size) -> np.ndarray:
    """A tile saying why ``source`` does not play: its name and the error, white on dark grey."""
    width, height = tile.width, tile.height
    out = np.zeros((height, width, 4), np.uint8)
    out[...] = (48, 16, 16, 255)
    size = max(8, min(32, height // 12))
    lines = error_tile_lines(source, error, size, tile)
    text = text_image("\n".join(lines), size, align="center")[:height, :width]
    th, tw = text.shape[:2]
    y, x = (height - th) // 2, (width - tw) // 2
    alpha = text[..., 3:4].astype(np.float32) / 255.0
    under = out[y : y + th, x : x + tw, :3].astype(np.float32)
    out[y : y + th, x : x + tw, :3] = np.rint(under * (1 - alpha) + text[..., :3] * alpha).astype(np.uint8)
    return out


def run_wall(args: argparse.Namespace) -> int:
    """``alpha2 play --wall`` (several inputs in one grid)."""
    options = options_from_args(args)
    enabled = not args.json and args.snapshot is None
    progress = pipeline.make_progress("play", enabled=enabled, time_left=False)
    stats = play_wall(args.input, options, progress=progress)
    from alpha2.apps.cli import terminal_columns, wrap_lines

    width = terminal_columns(sys.stderr)
    lines: list[str] = []
    if args.json:
        pipeline.emit_json(stats.as_dict())
    elif args.stats:
        lines = stats.summary().splitlines()
    else:
        line = (
            f"alpha2: played a wall of {len(stats.streams)} streams, {stats.frames} "
            f"frame{'' if stats.frames == 1 else 's'} ({stats.fps:.1f} fps) "
            f"{stats.mode} ({stats.mode_reason})"
        )
        if stats.snapshot:
            line += f"; snapshot {stats.snapshot}"
        lines = [line]
    broken = [s for s in stats.streams if s.get("error")]
    lines += [f"alpha2: error: {stream['source']}: {stream['error']}" for stream in broken]
    if lines:
        print("\n".join(wrap_lines(lines, width)), file=sys.stderr)
    return 1 if broken else 0
