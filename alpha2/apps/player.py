"""``alpha2 play INPUT``: decode, import, render with the sampling shader, show or keep offscreen.

With a display (``DISPLAY`` / ``WAYLAND_DISPLAY`` on Linux) and rendercanvas with a glfw or Qt backend
installed, a window shows the video with vsync, the aspect kept with letterboxing, each frame presented
when its pts is due against the media clock (:mod:`alpha2.apps.window`): the sound's when there is sound
(``alpha2[audio]``, :mod:`alpha2.apps.audio_out`), else the system clock, with the reason in the stats;
space pauses, the arrow keys seek (left/right 5 s, down/up 30 s), m mutes, 9 / 0 set the volume, q or
Escape quits. A file without video plays its sound (a level visual in a window). rendercanvas is not a
dependency: it is imported only when a window is possible, and when it (or a backend) is missing,
playback falls back to offscreen and says why. Offscreen (no display, ``--offscreen``, or ``--snapshot``),
frames are rendered into a texture as fast as the device allows, without sound; ``--snapshot PATH.png
[--at SECONDS]`` writes the frame on display at that time as a PNG, atomically.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Mapping

from alpha2.api import pipeline
from alpha2.api.media import media_kinds
from alpha2.api.playback import Player, PlayOptions, PlayStats
from alpha2.apps.cli import add_overwrite_arguments
from alpha2.apps.window import SEEK_STEPS_S, AudioOnlyPlayback, letterbox
from alpha2.apps.window import WindowPlayback as _WindowPlayback
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.tonemap import ToneCurve

__all__ = [
    "SEEK_STEPS_S",
    "PlayOptions",
    "PlayStats",
    "letterbox",
    "play",
    "register",
    "run",
    "window_unavailable_reason",
]

_QT_BINDINGS = ("PySide6", "PyQt6", "PyQt5", "PySide2")


def window_unavailable_reason(environ: Mapping[str, str] | None = None) -> str | None:
    """Why a window cannot be opened here (None when it can: a display, rendercanvas and a backend)."""
    env = os.environ if environ is None else environ
    if sys.platform.startswith("linux") and not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return "no display (neither DISPLAY nor WAYLAND_DISPLAY is set)"
    if importlib.util.find_spec("rendercanvas") is None:
        return "rendercanvas is not installed (pip install rendercanvas glfw)"
    if importlib.util.find_spec("glfw") is None and not any(
        importlib.util.find_spec(name) is not None for name in _QT_BINDINGS
    ):
        return "rendercanvas has no window backend: install glfw (pip install glfw) or a Qt binding (PySide6)"
    return None


def _audio_only(player: Player, environ: Mapping[str, str] | None) -> PlayStats:
    options = player.options
    if options.snapshot is not None:
        raise InvalidInputError(f"{player.source!r} has no video stream to snapshot")
    playback = AudioOnlyPlayback(player)
    why = "--offscreen" if options.offscreen else window_unavailable_reason(environ)
    if why is not None:
        return playback.run_windowless(f"no window: {why}")
    return playback.run_window()


def play(
    source: str | os.PathLike[str],
    options: PlayOptions | None = None,
    *,
    progress: pipeline.Progress | None = None,
    environ: Mapping[str, str] | None = None,
) -> PlayStats:
    """Play ``source`` (the in-process form of ``alpha2 play``).

    Raises:
        alpha2.gpu.Error subclasses: bad input, a bad ``--at``, an unwritable snapshot path, device errors.
    """
    options = options if options is not None else PlayOptions()
    player = Player(os.fspath(source), options, progress if progress is not None else pipeline.Progress())
    completed = False
    try:
        if "video" not in media_kinds(player.source):
            stats = _audio_only(player, environ)
        elif options.snapshot is not None:
            stats = player.offscreen("--snapshot renders to a texture")
        elif options.offscreen:
            stats = player.offscreen("--offscreen")
        else:
            why = window_unavailable_reason(environ)
            stats = (
                player.offscreen(f"no window: {why}") if why is not None else _WindowPlayback(player).run()
            )
        completed = True
    finally:
        player.close(completed)
    return stats


# ---------------------------------------------------------------------------------------------------
# the command line


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``alpha2 play``."""
    parser = subparsers.add_parser(
        "play",
        help="play a video (window, or offscreen with a snapshot)",
        description="Decode, import and render a video with the sampling shader: in a window when there is "
        "a display (space pauses, arrows seek, q quits), otherwise into an offscreen texture.",
    )
    parser.add_argument(
        "input", metavar="INPUT", nargs="+", help="input video file (several: a grid of them, a video wall)"
    )
    parser.add_argument("--offscreen", action="store_true", help="render into a texture, no window")
    parser.add_argument("--snapshot", metavar="PATH.png", help="write the rendered frame as a PNG")
    add_overwrite_arguments(parser, what="the --snapshot file")
    parser.add_argument(
        "--at", type=pipeline.non_negative_float, metavar="SECONDS", help="start (and snapshot) at this time"
    )
    parser.add_argument("--frames", type=pipeline.positive_int, metavar="N", help="stop after N frames")
    pipeline.add_hwaccel_argument(parser)
    parser.add_argument(
        "--decoders",
        choices=("threads", "processes"),
        default="threads",
        help="a wall's decoders: threads of this process (default), or a process each, which hands its "
        "frames over through shared GPU memory (faster with many NVDEC streams)",
    )
    parser.add_argument("--no-audio", dest="audio", action="store_false", help="no sound: the system clock")
    parser.add_argument(
        "--volume",
        type=float,
        default=1.0,
        metavar="V",
        help="initial volume factor 0..2 (9/0 keys, m mutes)",
    )
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="render the snapshot on the GPU even on a CPU device (default: swscale)",
    )
    parser.add_argument(
        "--tone-curve",
        choices=[c.name.lower() for c in ToneCurve],
        default="bt2390",
        help="how HDR (PQ, HLG) highlights above the display's peak come down (default bt2390)",
    )
    parser.add_argument(
        "--target-peak",
        type=float,
        metavar="CD_M2",
        help="the SDR display's peak in cd/m² (default 203: HDR reference white = SDR white)",
    )
    parser.add_argument("--stats", action="store_true", help="print frames, fps, paths and bytes at the end")
    parser.add_argument("--json", action="store_true", help="print the stats as JSON at the end")
    parser.set_defaults(func=run)


def options_from_args(args: argparse.Namespace) -> PlayOptions:
    """``alpha2 play``'s options, for one input or a wall."""
    return PlayOptions(
        offscreen=args.offscreen,
        snapshot=args.snapshot,
        at_s=args.at,
        frames=args.frames,
        hwaccel=args.hwaccel,
        decoders=args.decoders,
        audio=args.audio,
        volume=args.volume,
        gpu=args.gpu,
        tone_curve=ToneCurve[args.tone_curve.upper()],
        target_peak_cd_m2=args.target_peak,
        overwrite=getattr(args, "overwrite", False),
    )


def run(args: argparse.Namespace) -> int:
    """``alpha2 play``."""
    if args.snapshot is not None and not str(args.snapshot).lower().endswith(".png"):
        raise InvalidInputError(f"--snapshot writes PNG; give a .png path, got {args.snapshot!r}")
    if len(args.input) == 1 and args.decoders != "threads":
        raise InvalidInputError("--decoders processes is for a wall: give several inputs")
    if len(args.input) > 1:
        from alpha2.apps.wall import run_wall

        return run_wall(args)
    (source,) = args.input
    options = options_from_args(args)
    progress = pipeline.make_progress("play", enabled=not args.json and args.snapshot is None)
    stats = play(source, options, progress=progress)
    if args.json:
        pipeline.emit_json(stats.as_dict())
    elif args.stats:
        print(stats.summary(), file=sys.stderr)
    else:
        note = f" ({stats.mode_reason})" if stats.mode_reason else ""
        line = f"alpha2: played {stats.frames} frames ({stats.fps:.1f} fps) {stats.mode}{note}"
        line += f"; {stats.clock['reason']}"
        if stats.snapshot:
            line += f"; snapshot {stats.snapshot}"
        print(line, file=sys.stderr)
    return 0
