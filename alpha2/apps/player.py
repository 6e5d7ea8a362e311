"""``alpha2 play INPUT``: decode, import, render with the sampling shader, show or keep offscreen.

With a display (``DISPLAY`` / ``WAYLAND_DISPLAY`` on Linux) and rendercanvas with a glfw or Qt backend
installed, a window shows the video with vsync, the aspect kept with letterboxing, each frame presented
when its pts is due against the media clock (:mod:`alpha2.apps.window`): the sound's when there is sound
(``alpha2[audio]``, :mod:`alpha2.apps.audio_out`), else the system clock, with the reason in the stats;
the keys and the mouse are mpv's (:mod:`alpha2.apps.keys`; ``alpha2 play --help`` and ``?`` list them), and an
on-screen display, subtitles among it, is drawn over the video on the GPU. Several inputs play in turn in
one window (a playlist: > / <), or side by side with ``--wall``. A file without video plays its sound (a
level visual in a window, a playlist's own among them). ``--aid N`` picks the audio track as mpv numbers
them, ``#`` cycles them while playing. rendercanvas is not a
dependency: it is imported only when a window is possible, and when it (or a backend) is missing,
playback falls back to offscreen and says why. Offscreen (no display, ``--offscreen``, or ``--snapshot``),
frames are rendered into a texture as fast as the device allows, without sound; ``--snapshot PATH.png
[--at SECONDS]`` writes the frame on display at that time as a PNG, atomically.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

# What ``alpha2 play --help`` and the parser need, and no more: the playback (and through it PyAV, wgpu),
# the window and the sound load when a file plays (``play``), so that ``--help`` answers at once and the
# first frame comes sooner.
from alpha2.api import pipeline
from alpha2.apps.cli import (
    EXAMPLES_HEADING,
    TIME_SYNTAX,
    add_overwrite_arguments,
    help_formatter,
    parse_time,
    print_error,
    standard_stream_refusal,
    terminal_columns,
    wrap_lines,
)
from alpha2.apps.keys import MAX_SPEED, MIN_SPEED, PLAYER_BINDINGS, help_lines
from alpha2.gpu.errors import Error, InvalidInputError
from alpha2.gpu.limits import DEFAULT_MAX_PIXELS
from alpha2.gpu.tone_choices import ToneCurve

if TYPE_CHECKING:
    from alpha2.api.playback import Player
    from alpha2.api.playback import PlayOptions as PlayOptions
    from alpha2.api.playback import PlayStats as PlayStats
    from alpha2.apps.window import SEEK_STEPS_S as SEEK_STEPS_S
    from alpha2.apps.window import letterbox as letterbox

__all__ = [
    "SEEK_STEPS_S",
    "PlayOptions",
    "PlayStats",
    "letterbox",
    "play",
    "play_list",
    "register",
    "run",
    "window_unavailable_reason",
]

_LAZY = {
    "SEEK_STEPS_S": ("alpha2.apps.window", "SEEK_STEPS_S"),
    "letterbox": ("alpha2.apps.window", "letterbox"),
    "_WindowPlayback": ("alpha2.apps.window", "WindowPlayback"),
    "Player": ("alpha2.api.playback", "Player"),
    "PlayOptions": ("alpha2.api.playback", "PlayOptions"),
    "PlayStats": ("alpha2.api.playback", "PlayStats"),
}


def __getattr__(name: str) -> Any:
    """The window's names (and the playback's), loaded on first use (the window loads the GPU side)."""
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _window_class() -> Any:
    """The window's playback class (``_WindowPlayback``, which tests may replace), loaded on first use."""
    return globals()["_WindowPlayback"] if "_WindowPlayback" in globals() else __getattr__("_WindowPlayback")


_QT_BINDINGS = ("PySide6", "PyQt6", "PyQt5", "PySide2")


def _say_offscreen(why: str, environ: Mapping[str, str] | None) -> None:
    """With a display but no window to be had (a missing package), say so at once on stderr, with the
    line that installs it, before the file plays offscreen (not only in the report at its end)."""
    env = os.environ if environ is None else environ
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        line = f"alpha2: no window: {why}; playing offscreen, without sound"
        print("\n".join(wrap_lines([line], terminal_columns(sys.stderr))), file=sys.stderr, flush=True)


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
    from alpha2.apps.window import AudioOnlyPlayback

    options = player.options
    if options.snapshot is not None:
        raise InvalidInputError(f"{player.source!r} has no video stream to snapshot")
    playback = AudioOnlyPlayback(player)
    why = "--offscreen" if options.offscreen else window_unavailable_reason(environ)
    stats: PlayStats = (
        playback.run_windowless(f"no window: {why}") if why is not None else playback.run_window()
    )
    return stats


def play(
    source: str | os.PathLike[str],
    options: PlayOptions | None = None,
    *,
    progress: pipeline.Progress | None = None,
    environ: Mapping[str, str] | None = None,
) -> PlayStats:
    """Play ``source`` (the in-process form of ``alpha2 play``).

    Raises:
        alpha2.gpu.Error subclasses: bad input, a bad ``--at`` or ``--aid``, an unwritable snapshot path,
            device errors.
    """
    _check_aid([os.fspath(source)], options)
    return _play(source, options, progress, environ, notice=True)


def _check_aid(sources: Sequence[str], options: PlayOptions | None) -> None:
    """Refuse an ``--aid`` that no input has, before anything plays (one line, not a window that opens
    and plays the default track)."""
    if options is not None and options.aid is not None and options.audio:
        from alpha2.apps.audio_out import check_audio_track

        check_audio_track(sources, options.aid)


def _play(
    source: str | os.PathLike[str],
    options: PlayOptions | None,
    progress: pipeline.Progress | None,
    environ: Mapping[str, str] | None,
    *,
    notice: bool,
) -> PlayStats:
    """:func:`play`; ``notice``: say on stderr at once when a display is set but no window can be had."""
    from alpha2.api.media import media_kinds
    from alpha2.api.playback import Player, PlayOptions

    options = options if options is not None else PlayOptions()
    player = Player(os.fspath(source), options, progress if progress is not None else pipeline.Progress())
    completed = False
    try:
        # A song's cover art is no video: without a window (--offscreen, no display) its sound plays, as
        # a song's without a cover; it rendered the cover once into a texture and stopped, unheard.
        video = "video" in media_kinds(player.source)
        cover_only = video and "video" not in media_kinds(player.source, covers=False)
        if not video:
            stats = _audio_only(player, environ)
        elif options.snapshot is not None:
            stats = player.offscreen("--snapshot renders to a texture")
        elif cover_only and (options.offscreen or window_unavailable_reason(environ) is not None):
            stats = _audio_only(player, environ)
        elif options.offscreen:
            stats = player.offscreen("--offscreen")
        else:
            why = window_unavailable_reason(environ)
            if why is None:
                stats = _window_class()(player).run()
            else:
                if notice:
                    _say_offscreen(why, environ)
                stats = player.offscreen(f"no window: {why}")
        completed = True
    finally:
        player.close(completed)
    return stats


def play_list(
    sources: Sequence[str | os.PathLike[str]],
    options: PlayOptions | None = None,
    *,
    progress: Callable[[], pipeline.Progress] | None = None,
    environ: Mapping[str, str] | None = None,
    canvas_module: str = "rendercanvas.auto",
    on_error: Callable[[str, str], None] | None = None,
) -> tuple[list[PlayStats], list[tuple[str, str]]]:
    """Play ``sources`` in turn (``alpha2 play A B C``): in one window when there is a display (``n`` /
    ``p`` go to the next / previous file; a file without video plays its sound there, under the level
    visual), else each offscreen. A file that cannot be played is passed over; returns every file's
    stats and the (input, message) of those that failed.

    ``progress`` makes each file's progress line. ``on_error`` is called with (input, message) as soon
    as a file is passed over, as mpv says it when it skips the file (not only at the list's end).

    Raises:
        alpha2.gpu.Error subclasses: when no file could be played in the window; an ``--aid`` that no
            file has.
    """
    from alpha2.api.playback import PlayOptions

    options = options if options is not None else PlayOptions()
    make_progress = progress if progress is not None else pipeline.Progress
    names = [os.fspath(s) for s in sources]
    _check_aid(names, options)
    results: list[PlayStats] = []
    errors: list[tuple[str, str]] = []
    why = "--offscreen" if options.offscreen else window_unavailable_reason(environ)
    if why is not None or options.snapshot is not None:
        if why is not None and not options.offscreen and options.snapshot is None:
            _say_offscreen(why, environ)  # once for the list
        for name in names:
            try:
                results.append(_play(name, options, make_progress(), environ, notice=False))
            except Error as exc:
                errors.append((name, exc.message))
                if on_error is not None:
                    on_error(name, exc.message)
        return results, errors
    from alpha2.api.devices import open_device
    from alpha2.api.playback import Player
    from alpha2.apps.window import Playlist

    device = open_device(options.hwaccel, gpu_copy=False)  # one device for the window's whole life
    try:
        playlist = Playlist(
            names, lambda name: Player(name, options, make_progress(), device=device), on_error=on_error
        )
        window = _window_class()(playlist.make_player(names[0]), playlist=playlist)
        timer = pipeline.RunTimer()
        completed = False  # as play's: a Ctrl-C's file is no finished run (its bar goes, not printed again)
        try:
            window.run(canvas_module)
            completed = True
        finally:
            timer.stop()
            window.player.close(completed)
        errors = list(playlist.errors)
        last = window.stats  # the file playing at the end, unless the last tried could not be played
        failed = {name for name, _ in errors}
        results = [*window.results, *([] if last.input in failed and not last.frames else [last])]
    finally:
        device.close()
    return results, errors


# ---------------------------------------------------------------------------------------------------
# the command line


def _volume(text: str) -> float:
    """An argparse ``type`` for ``--volume``: a finite factor from 0 to 2 (a usage error otherwise)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 2, got {text!r}") from None
    if not 0.0 <= value <= 2.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 2, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``alpha2 play``."""
    parser = subparsers.add_parser(
        "play",
        help="play a video (window, or offscreen with a snapshot)",
        description=textwrap.fill(
            "Decode, import and render a video with the sampling shader: in a window when there is a "
            "display, with an on-screen display and subtitles drawn over it on the GPU, otherwise into an "
            "offscreen texture. Several inputs play one after the other (a playlist), or side by side "
            "with --wall.",
            width=78,
        ),
        epilog="keys and mouse in the window (as mpv has them):\n  "
        + "\n  ".join(help_lines(PLAYER_BINDINGS))
        + "\n\nthe wall (--wall): space pauses, the arrows seek every tile, a plays the next tile's\n"
        "sound (then none), 9 / 0 and m the volume, f fullscreen, ? the keys, q or Ctrl+W quits\n\n"
        "a file without video: space, the arrows, 9 / 0, m, #, PgUp / PgDn, f, a click on the bar,\n"
        "? and q or Ctrl+W "
        "(in a playlist also [ / ], { / }, Backspace, l / L, > / <, Enter and i)"
        f"\n\n{EXAMPLES_HEADING}\n"
        "  alpha2 play clip.mp4\n"
        "  alpha2 play clip.mp4 --at 1:30 --loop\n"
        "  alpha2 play a.mp4 b.mp4 c.mp4             (a playlist: > / <)\n"
        "  alpha2 play film.mkv --aid 2              (its second audio track; # cycles)\n"
        "  alpha2 play a.mp4 b.mp4 c.mp4 d.mp4 --wall  (side by side)\n"
        "  alpha2 play clip.mp4 --snapshot frame.png --at 0:02.5 -y",
        formatter_class=help_formatter(),
    )
    parser.add_argument(
        "input",
        metavar="INPUT",
        nargs="+",
        help="input file, a video or sound alone (several: a playlist, > / < go to the next / "
        "previous one, Enter to the next; with --wall or --snapshot, a grid of them)",
    )
    parser.add_argument(
        "--wall", action="store_true", help="several inputs side by side in one grid (a video wall)"
    )
    parser.add_argument(
        "--loop",
        action="store_true",
        help="play each file again when it ends (L toggles; a --wall plays all again once the "
        "longest has ended; offscreen, until --frames)",
    )
    parser.add_argument(
        "--sub",
        metavar="FILE",
        help="show this subtitle file (.srt, .ass, .ssa, .vtt); one with the input's name next to it "
        "(clip.srt, clip.en.srt for clip.mkv) is found by itself, and j cycles the tracks",
    )
    parser.add_argument(
        "--no-sub", dest="subtitles", action="store_false", help="no subtitles until j picks a track"
    )
    parser.add_argument(
        "--sub-visibility",
        dest="sub_visible",
        type=_yes_no,
        default=True,
        metavar="yes|no",
        help="no: the subtitles are hidden from the start, their track chosen (v shows them), as mpv's",
    )
    parser.add_argument(
        "--no-sub-visibility",
        dest="sub_visible",
        action="store_false",
        help="as --sub-visibility=no",
    )
    parser.add_argument(
        "--sub-delay",
        type=_seconds,
        default=0.0,
        metavar="S",
        help="show the subtitles S seconds later (negative: earlier) than their cues, as mpv's (z / Z)",
    )
    parser.add_argument(
        "--sub-codepage",
        type=_codepage,
        metavar="CP",
        help="how subtitle text that is not UTF-8 is read, as mpv's: auto (the default: detected), an "
        "encoding (cp1251, shift_jis, gbk) or +encoding (every cue read in it)",
    )
    parser.add_argument("--offscreen", action="store_true", help="render into a texture, no window")
    parser.add_argument("--snapshot", metavar="PATH.png", help="write the rendered frame as a PNG")
    add_overwrite_arguments(parser, what="the --snapshot file")
    parser.add_argument(
        "--at",
        type=parse_time,
        metavar="TIME",
        help=f"start (and snapshot) at this time, {TIME_SYNTAX}: 90, 1:30, 0:01:30.5, 500ms",
    )
    parser.add_argument("--frames", type=pipeline.positive_int, metavar="N", help="stop after N frames")
    pipeline.add_hwaccel_argument(parser)
    parser.add_argument(
        "--max-pixels",
        type=pipeline.positive_int,
        default=DEFAULT_MAX_PIXELS,
        metavar="N",
        help=f"refuse pictures of more than N pixels before decoding them (default {DEFAULT_MAX_PIXELS}, 8K)",
    )
    parser.add_argument(
        "--decoders",
        choices=("threads", "processes"),
        default="threads",
        help="a wall's decoders: threads of this process (default), or a process each, which hands its "
        "frames over through shared GPU memory (faster with many NVDEC streams)",
    )
    parser.add_argument("--no-audio", dest="audio", action="store_false", help="no sound: the system clock")
    parser.add_argument(
        "--aid",
        type=pipeline.positive_int,
        metavar="N",
        help="hear the Nth audio track, 1 the first (as mpv counts; # cycles them); a playlist's file "
        "with fewer plays its default one",
    )
    parser.add_argument(
        "--alang",
        metavar="LANG[,LANG]",
        default="",
        help="hear the first audio track in one of these languages (eng, jpn, de ...), as mpv; --aid "
        "wins over it",
    )
    parser.add_argument(
        "--volume",
        type=_volume,
        default=1.0,
        metavar="V",
        help="initial volume factor 0..2 (9/0 keys, m mutes)",
    )
    parser.add_argument(
        "--audio-delay",
        type=_seconds,
        default=0.0,
        metavar="S",
        help="hear the sound S seconds later (negative: earlier) than the picture, as mpv's (Ctrl+- / "
        "Ctrl++)",
    )
    parser.add_argument(
        "--speed",
        type=_speed,
        default=1.0,
        metavar="X",
        help=f"play at X times the speed, {MIN_SPEED:g} to {MAX_SPEED:g}, the sound at its pitch, as "
        "mpv's ([ / ], { / }, Backspace)",
    )
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="render the snapshot on the GPU even on a CPU device (where swscale is the default)",
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


def _yes_no(text: str) -> bool:
    """``--sub-visibility``'s value, as mpv takes it: yes or no."""
    answer = {"yes": True, "no": False}.get(text.strip().lower())
    if answer is None:
        raise argparse.ArgumentTypeError(f"yes or no, got {text!r}")
    return answer


def _seconds(text: str) -> float:
    """A delay in seconds, as mpv's ``--audio-delay`` and ``--sub-delay`` take it: ``0.2``, ``-0.5``."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds):
        raise argparse.ArgumentTypeError(f"seconds, e.g. 0.2 or -0.5; got {text!r}")
    return seconds


def _speed(text: str) -> float:
    """``--speed``'s value: a factor within the keys' range (:data:`~alpha2.apps.keys.MIN_SPEED` ..)."""
    low, high = MIN_SPEED, MAX_SPEED
    try:
        speed = float(text)
    except ValueError:
        speed = math.nan
    if not low <= speed <= high:  # NaN too
        raise argparse.ArgumentTypeError(
            f"the speed is {low:g} to {high:g} (FFmpeg's atempo keeps the pitch there), got {text!r}"
        )
    return speed


def _codepage(text: str) -> str | None:
    """``--sub-codepage``'s value checked as the subtitle readers take it (None: auto)."""
    from alpha2.api.subtitles import subtitle_codepage

    try:
        return subtitle_codepage(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def options_from_args(args: argparse.Namespace) -> PlayOptions:
    """``alpha2 play``'s options, for one input or a wall."""
    from alpha2.api.playback import PlayOptions

    return PlayOptions(
        offscreen=args.offscreen,
        snapshot=args.snapshot,
        at_s=args.at,
        frames=args.frames,
        hwaccel=args.hwaccel,
        decoders=args.decoders,
        audio=args.audio,
        volume=args.volume,
        aid=getattr(args, "aid", None),
        alang=tuple(code for code in str(getattr(args, "alang", "") or "").split(",") if code.strip()),
        gpu=args.gpu,
        tone_curve=ToneCurve[args.tone_curve.upper()],
        target_peak_cd_m2=args.target_peak,
        loop=getattr(args, "loop", False),
        sub=getattr(args, "sub", None),
        subtitles=getattr(args, "subtitles", True),
        sub_codepage=getattr(args, "sub_codepage", None),
        speed=getattr(args, "speed", 1.0),
        audio_delay_s=getattr(args, "audio_delay", 0.0),
        sub_delay_s=getattr(args, "sub_delay", 0.0),
        sub_visible=getattr(args, "sub_visible", True),
        overwrite=getattr(args, "overwrite", False),
        max_pixels=getattr(args, "max_pixels", DEFAULT_MAX_PIXELS),
    )


PLAY_OPTION_NAMES = {"max_pixels": "--max-pixels"}
"""The fields of ``alpha2.open`` that a refusal met while playing names by the option that set them."""


def run(args: argparse.Namespace) -> int:
    """``alpha2 play``."""
    from alpha2.apps.audio_out import settle_sound
    from alpha2.gpu.option_names import option_names

    try:
        with option_names(PLAY_OPTION_NAMES):  # the decoder's refusals say --max-pixels, not max_pixels
            return _run(args)
    finally:
        settle_sound()  # before the error, if any, is said: PortAudio's start silences stderr


def _run(args: argparse.Namespace) -> int:
    for path in args.input:
        refusal = standard_stream_refusal(os.fspath(path))  # '-', a FIFO (its second open hung)
        if refusal is not None:
            raise InvalidInputError(refusal)
    if args.snapshot is not None and not str(args.snapshot).lower().endswith(".png"):
        raise InvalidInputError(f"--snapshot writes PNG; give a .png path, got {args.snapshot!r}")
    if len(args.input) == 1 and args.decoders != "threads":
        raise InvalidInputError("--decoders processes is for a wall: give several inputs")
    wall = getattr(args, "wall", False) or args.decoders != "threads" or args.snapshot is not None
    if getattr(args, "aid", None) is not None:
        if not args.audio:
            raise InvalidInputError(
                "--aid picks the track to hear and --no-audio plays none: give one of them"
            )
        if len(args.input) > 1 and wall:
            raise InvalidInputError(
                "--aid is for one file or a playlist; a --wall plays each tile's default track"
            )
    if len(args.input) > 1 and wall and getattr(args, "alang", ""):
        raise InvalidInputError(
            "--alang is for one file or a playlist; a --wall plays each tile's default track"
        )
    if len(args.input) > 1 and wall and getattr(args, "sub", None) is not None:
        # Refused, not ignored: the wall played without it, said nowhere (an outside pass).
        raise InvalidInputError("--sub is for one file or a playlist; a --wall draws no subtitles")
    window_only = _window_only_options(args)
    if window_only and len(args.input) > 1 and wall:
        # Refused, not ignored: the wall has no speed, no delay and no subtitles to apply them to.
        raise InvalidInputError(f"{window_only} is for one file or a playlist; a --wall plays without it")
    if window_only and (args.snapshot is not None or args.offscreen):
        flag = "--snapshot" if args.snapshot is not None else "--offscreen"
        raise InvalidInputError(
            f"{window_only} is for the player's window; {flag} renders the frames alone: leave one out"
        )
    if len(args.input) > 1 and wall:
        from alpha2.apps.wall import run_wall

        return run_wall(args)
    options = options_from_args(args)
    if getattr(args, "sub", None) is not None:
        from alpha2.api.subtitles import check_subtitle_file

        # One line now, not a traceback from the window's first draw.
        check_subtitle_file(args.sub, codepage=getattr(args, "sub_codepage", None))
        if args.snapshot is not None or args.offscreen:
            # Refused, not ignored: subtitles are drawn in the window only, and the PNG came without
            # them, said nowhere (an outside pass).
            flag = "--snapshot" if args.snapshot is not None else "--offscreen"
            raise InvalidInputError(
                f"--sub is drawn in the window; {flag} renders the video alone: leave one out"
            )
    enabled = not args.json and args.snapshot is None
    if len(args.input) == 1:
        (source,) = args.input
        progress = pipeline.make_progress("play", enabled=enabled, time_left=False)
        stats = play(source, options, progress=progress)
        _report(stats, args)
        return 0
    results, errors = play_list(
        args.input,
        options,
        progress=lambda: pipeline.make_progress("play", enabled=enabled, time_left=False),
        on_error=_say_passed_over,
    )
    from alpha2.apps.audio_out import settle_sound

    settle_sound()  # the files' errors below would go nowhere while PortAudio starts
    if args.json:
        data = {
            "command": "play",
            "playlist": [stats.as_dict() for stats in results if stats.frames or stats.mode != "offscreen"],
            "errors": [{"input": name, "error": message} for name, message in errors],
        }
        pipeline.emit_json(data)
    else:
        for stats in results:
            if stats.frames or stats.seconds:
                _report(stats, args)
    for name, message in errors:
        print_error(_file_error(name, message))  # folded at words on a terminal (it was cut mid-word at 80)
    return 1 if errors else 0


def _file_error(name: str, message: str) -> str:
    """A playlist file's error, led by its name once: FFmpeg's open errors begin ``opening 'name': ``,
    which after the name said ``b.mp4: opening 'b.mp4': ...``."""
    opening = f"opening {name!r}: "
    if message.startswith(opening):
        message = message[len(opening) :]
    return f"{name}: {message}"


def _say_passed_over(name: str, message: str) -> None:
    """A playlist's file that cannot be played, said as it is passed over (as mpv's terminal says it)
    and again in the list's end summary: it was said only at the end. Rich prints what goes to stderr
    above a bar that is live; PortAudio's start silences stderr, so that is waited for first."""
    from alpha2.apps.audio_out import settle_sound

    settle_sound()
    print_error(_file_error(name, message))


def _window_only_options(args: argparse.Namespace) -> str | None:
    """The first of mpv's options that only the window applies (``--speed``, ``--audio-delay``,
    ``--sub-delay``, ``--sub-visibility``) given a value other than its default, or None."""
    given = (
        ("--speed", getattr(args, "speed", 1.0) != 1.0),
        ("--audio-delay", getattr(args, "audio_delay", 0.0) != 0.0),
        ("--sub-delay", getattr(args, "sub_delay", 0.0) != 0.0),
        ("--sub-visibility", not getattr(args, "sub_visible", True)),
    )
    return next((name for name, set_ in given if set_), None)


def _report(stats: PlayStats, args: argparse.Namespace) -> None:
    """One file's report: its JSON, its ``--stats`` lines, or one line."""
    if args.json:
        pipeline.emit_json(stats.as_dict())
        return
    if args.stats:
        lines = stats.summary().splitlines()
    else:
        note = f" ({stats.mode_reason})" if stats.mode_reason else ""
        frames = f"{stats.frames} frame{'' if stats.frames == 1 else 's'} ({stats.fps:.1f} fps)"
        if stats.audio_only:  # its 'frames' are the level visual's draws, which mean nothing to a listener
            frames = f"{stats.sound_seconds:.1f} s of sound"
        line = f"alpha2: played {os.path.basename(stats.input)}: {frames} "
        line += f"{stats.mode}{note}; {stats.clock['reason']}"
        damage = stats.damage_note()
        if damage is not None:
            line += f"; damaged input: {damage}"
        if stats.snapshot:
            line += f"; snapshot {stats.snapshot}"
        lines = [line]
    print("\n".join(wrap_lines(lines, terminal_columns(sys.stderr))), file=sys.stderr)
