"""The `alpha2` command.

Exit codes: 0 on success, 1 with one line ``alpha2: error: ...`` on a runtime failure, 2 on a usage
error (argparse's own convention; an output name that says no container alpha2 writes is one), and
128 + the signal number when SIGINT, SIGTERM or SIGHUP ends a command: all three unwind alike, so
outputs being written are removed and one line says what happened (``alpha2: interrupted``,
``alpha2: terminated (SIGTERM)``). The handlers are the first thing :func:`main` installs, so this holds
from the start, while the command's modules still load; a signal ignored when alpha2 starts (SIGHUP
under ``nohup``) stays ignored. A traceback reaching a user is a
bug: alpha2 errors and OS errors are turned into that one line; anything else is reported the same
way with its type, and ``ALPHA2_DEBUG=1`` re-raises it for a developer.

A mistyped command, option or choice is answered with the command's usage line and the closest name
(``alpha2: error: unknown option --prest; did you mean --preset?``), by :func:`parser_class` and
:func:`unknown_arguments`; a file whose name starts with ``-`` is told how to be given (``./-a.mp4``
or after ``--``), and a word after ``--`` is never taken for an option. Every ``--help`` ends with
examples (:func:`help_formatter`).

Subcommands are imported lazily: ``alpha2 --help`` (and any command) imports only the module of the
command named on the line, so that PyAV, wgpu and numpy load only when a command needs them. The
other commands appear in the listing through :data:`_SUBCOMMANDS`' help lines.
"""

from __future__ import annotations

# Only what main() needs before its signal handlers are in place: the window in which a signal still
# gets Python's own reaction (a KeyboardInterrupt traceback, or a silent death) stays as short as it can.
import os
import re
import signal
import sys
from typing import TYPE_CHECKING, Any, NoReturn, cast

from alpha2 import __version__

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

# Subcommands: (command, module, help line). Each module has register(subparsers), which adds the
# command's parser (with the same help line) and sets func=run on it. Only the module of the command
# being run is imported; the help lines list the others without importing them.
_SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "probe",
        "alpha2.apps.probe",
        "list GPU adapters and which one alpha2 chooses; with files, what each holds",
    ),
    ("sample", "alpha2.apps.sample", "write a short test clip (moving colour pattern, sine tone)"),
    ("play", "alpha2.apps.player", "play a video (window, or offscreen with a snapshot)"),
    ("transcode", "alpha2.apps.transcode_cli", "decode, scale and convert on the GPU, encode"),
    ("batch", "alpha2.apps.batch", "transcode many files, on this machine's GPUs or cores, or on Ray"),
)


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand on the command line: the first argument that is not an option."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def build_parser(argv: Sequence[str] | None = None, *, load_all: bool = False) -> argparse.ArgumentParser:
    """The ``alpha2`` parser: the command named in ``argv`` (or every one, with ``load_all``) fully
    registered from its module, the others as help lines only. Its parsers suggest the closest name
    for a mistyped command or choice (:func:`parser_class`)."""
    import importlib

    parser = parser_class()(
        prog="alpha2",
        description="GPU video interop: probe adapters, play and transcode video.",
        epilog=EXAMPLES_HEADING + "\n"
        "  alpha2 sample clip.mp4\n"
        "  alpha2 play clip.mp4\n"
        "  alpha2 transcode clip.mp4 small.mp4 --size 640x360\n\n"
        "'alpha2 COMMAND --help' has each command's options and examples.",
        formatter_class=help_formatter(),
    )
    parser.add_argument("--version", action="version", version=f"alpha2 {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = _command_named(sys.argv[1:] if argv is None else argv)
    for command, name, help_line in _SUBCOMMANDS:
        if not load_all and command != wanted:
            subparsers.add_parser(command, help=help_line, add_help=False)
            continue
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(subparsers)
    return parser


EXAMPLES_HEADING = "examples:"
"""The line that starts each command's examples (the end of its ``--help``)."""


def close_match(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to a mistyped ``word`` (``difflib``'s ratio of at least 0.6), or None."""
    import difflib

    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def close_option(word: str, options: Iterable[str]) -> str | None:
    """The long option closest to a mistyped one (``--snapshop`` -> ``--snapshot``), or None; the
    dashes are left out of the comparison, which they would dominate in short names."""
    names = {o.lstrip("-"): o for o in options if o.startswith("--")}
    near = close_match(word.split("=", 1)[0].lstrip("-"), names)
    return None if near is None else names[near]


def _fill_paragraphs(text: str, width: int, indent: str) -> str:
    """Description and epilog text: unindented lines are joined into paragraphs and filled to the
    width; indented lines (examples, key tables) and blank lines are kept as written."""
    out: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.append("\n".join(wrap_text(" ".join(paragraph), max(width, 20), indent, indent)))
            paragraph.clear()

    for line in text.splitlines():
        if line.strip() and not line[:1].isspace():
            paragraph.append(line.strip())
            continue
        flush()
        out.append(indent + line if line.strip() else "")
    flush()
    return "\n".join(out)


def help_formatter() -> type[argparse.HelpFormatter]:
    """The formatter of every alpha2 parser: argparse's RawDescriptionHelpFormatter, but filling plain
    paragraphs to the terminal's width (indented example lines are kept as they are)."""
    import argparse

    class _Formatter(argparse.RawDescriptionHelpFormatter):
        def _fill_text(self, text: str, width: int, indent: str) -> str:
            return _fill_paragraphs(text, width, indent)

    return _Formatter


def parser_class() -> type[argparse.ArgumentParser]:
    """The parser class of ``alpha2`` and its commands (subparsers take their parent's class): a
    mistyped command or choice is answered with the closest one (``did you mean transcode?``)."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def _check_value(self, action: argparse.Action, value: Any) -> None:
            choices = action.choices
            if choices is None or value in choices:
                return
            names = [str(c) for c in choices]
            near = close_match(str(value), names)
            if isinstance(action, argparse._SubParsersAction):
                said = f"unknown command {value!r}"
                said += f"; did you mean {near}?" if near else f" ({', '.join(names)})"
                raise argparse.ArgumentError(None, said)
            name = next((o for o in action.option_strings if o.startswith("--")), None)
            said = f"{name or action.metavar or action.dest}: invalid choice {value!r}"
            said += f"; did you mean {near}?" if near else f" (choose from {', '.join(names)})"
            raise argparse.ArgumentError(None, said)

        def short_usage(self) -> str:
            """``usage: alpha2 transcode [options] INPUT OUTPUT``: the command's usage on one line."""
            formatter = self._get_formatter()
            words = [
                formatter._format_args(action, str(action.metavar or action.dest).upper())
                for action in self._get_positional_actions()
            ]
            return " ".join(["usage:", self.prog, "[options]", *words])

        @property
        def command(self) -> str | None:
            """The subcommand this parser reads (``transcode`` of ``alpha2 transcode``), or None."""
            words = self.prog.split()
            return words[1] if len(words) > 1 else None

        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            """argparse's, keeping the words parsed for :meth:`error`. ``--size -1x720`` (ffmpeg's
            habit of a free side) is taken as ``--size=-1x720``: argparse read the value as an
            option ('expected one argument')."""
            words = list(sys.argv[1:] if args is None else args)
            joined: list[str] = []
            for word in words:
                if joined and joined[-1] == "--size" and re.match(r"-\d+[x*]", word):
                    joined[-1] = f"--size={word}"
                else:
                    joined.append(word)
            self._words = joined
            swallowed = _swallowed_by_a_flag(self, joined)
            if swallowed is not None:
                self.print_usage_and_exit(unknown_arguments(self, self.command, [swallowed]))
            return super().parse_known_args(joined, namespace)

        def error(self, message: str) -> NoReturn:
            """The usage line and one line ``alpha2: error: ...``; exit status 2. A positional missing
            because argparse took a word for an unknown option (``transcode -dash.mp4 out.mp4``) is
            said as that unknown option, as when nothing was missing."""
            command = self.command
            if message.startswith("the following arguments are required"):
                unknown = _unknown_options(self, getattr(self, "_words", []))
                if unknown:
                    message = unknown_arguments(self, command, unknown)
            # '-hwaccel' read as -h with 'waccel' joined ('argument -h/--help: ignored explicit
            # argument'): said as the unknown option it is.
            joined = re.match(r"argument (-[^-/])[^:]*: ignored explicit argument '(.*)'$", message)
            if joined:
                message = unknown_arguments(self, command, [joined[1] + joined[2]])
            self.print_usage_and_exit(message)

        def print_usage_and_exit(self, message: str) -> NoReturn:
            sys.stderr.write(f"{self.short_usage()}\n")
            print_error(message)
            self.exit(2)

    return _Parser


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser | None:
    """The parser of ``command`` under ``parser`` (None: no such command, or none named)."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command is not None:
            found = action.choices.get(command) if isinstance(action.choices, dict) else None
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def _swallowed_by_a_flag(parser: argparse.ArgumentParser, words: Sequence[str]) -> str | None:
    """The first ``-word`` that argparse would read as a flag of one letter with more joined to it
    (ffmpeg's ``-hwaccel`` as ``-h``, ``-nostdin`` as ``-n``), where the letters joined are not all
    flags of their own (``-yq``): Python 3.11 calls it 'ignored explicit argument', 3.12 prints the
    help for ``-hwaccel`` and calls ``-nostdin`` 'unknown option -ostdin'. None: no such word (and for
    a parser of subcommands, whose words are its subcommand's to read)."""
    import argparse

    actions = parser._option_string_actions
    if any(isinstance(action, argparse._SubParsersAction) for action in parser._actions):
        return None

    def flag(text: str) -> bool:
        action = actions.get(text)
        return action is not None and action.nargs == 0

    for word in words:
        if word == "--":
            return None
        if len(word) < 3 or word[0] != "-" or word[1] == "-" or word[1].isdigit() or word in actions:
            continue
        if "=" in word or not flag(word[:2]):
            continue
        if not all(flag(f"-{letter}") for letter in word[2:]):
            return word
    return None


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [o for action in parser._actions for o in action.option_strings]


def _elsewhere(word: str, command: str | None) -> tuple[str, str] | None:
    """A command other than ``command`` with an option close to ``word``: (command, option)."""
    try:
        everything = build_parser([], load_all=True)
    except Exception:  # a module that does not load here: no hint, the error stands alone
        return None
    for other, _module, _help in _SUBCOMMANDS:
        sub = _subparser(everything, other)
        if other == command or sub is None:
            continue
        near = close_option(word, _option_strings(sub))
        if near is not None:
            return other, near
    return None


def _unknown_options(parser: argparse.ArgumentParser, words: Sequence[str]) -> list[str]:
    """The words before ``--`` that argparse reads as options but ``parser`` has none of (not an
    abbreviation of one, nor a short option with its value or others joined: ``-y``, ``-yn``)."""
    import re

    options = _option_strings(parser)
    unknown = []
    for word in words:
        if word == "--":
            break
        name = word.split("=", 1)[0]
        if not word.startswith("-") or word == "-" or re.fullmatch(r"-\d+|-\d*\.\d+", word):
            continue
        if any(o.startswith(name) for o in options if o.startswith("--")) or word[:2] in options:
            continue
        unknown.append(word)
    return unknown


Hint = tuple[str | None, str]
"""An option's hint: the option of the command that does its work (None: every command) and the words."""

FFMPEG_OPTIONS: dict[str, Hint | tuple[Hint, ...]] = {
    "-i": (None, "the files go as they are, without ffmpeg's -i"),
    "-ss": ("--from", "ffmpeg's -ss is --from here"),
    "-to": ("--to", "ffmpeg's -to is --to here"),
    "-t": ("--duration", "ffmpeg's -t is --duration here (--to is an end time)"),
    "-c": ("--codec", "ffmpeg's -c is --codec here (-c copy: --codec copy)"),
    "-c:v": ("--codec", "ffmpeg's -c:v is --codec here"),
    "-codec": ("--codec", "ffmpeg's -codec is --codec here"),
    "-codec:v": ("--codec", "ffmpeg's -codec:v is --codec here"),
    "-vcodec": ("--codec", "ffmpeg's -vcodec is --codec here"),
    "-c:a": ("--no-audio", "the audio is copied, or re-encoded where it must be (--no-audio drops it)"),
    "-acodec": ("--no-audio", "the audio is copied, or re-encoded where it must be (--no-audio drops it)"),
    "-an": ("--no-audio", "ffmpeg's -an is --no-audio here"),
    "-sn": ("--no-subtitles", "ffmpeg's -sn is --no-subtitles here"),
    "-map": (
        "--audio-track",
        "there is no -map here: --audio-track and --subtitle-track keep streams by number (0:a:1 is "
        "--audio-track 1) or language (jpn); --no-audio, --no-subtitles drop them",
    ),
    "--alang": (
        "--audio-track",
        "mpv's --alang is --audio-track here (every audio stream of the languages kept)",
    ),
    "--slang": ("--subtitle-track", "mpv's --slang is --subtitle-track here"),
    "--sid": (
        "--subtitle-track",
        "--subtitle-track N keeps the subtitle stream N, counted from 0 (mpv's --sid is from 1)",
    ),
    "--aid": (
        "--audio-track",
        "--audio-track N keeps the audio stream N, counted from 0 (mpv's --aid is from 1)",
    ),
    # mpv's own options, which a person used to it types after 'alpha2 play' (--start was 'did you mean
    # --stats?'); gated on an option only the player has.
    "--start": (
        ("--at", "mpv's --start is --at here (90, 1:30, 0:01:30.5)"),
        ("--from", "--start is --from here (90, 1:30, 0:01:30.5)"),
    ),
    "--mute": ("--volume", "mpv's --mute is --volume 0 here (m mutes in the window)"),
    "--loop-file": ("--loop", "mpv's --loop-file is --loop here (L in the window)"),
    "--keep-open": (
        "--loop",
        "no --keep-open here: the player quits after the last file, as mpv does without it (--loop "
        "plays it again)",
    ),
    "--sub-file": ("--sub", "mpv's --sub-file is --sub here"),
    "--fs": ("--wall", "no --fs here: f or a double click goes fullscreen in the window"),
    "--fullscreen": ("--wall", "no --fullscreen here: f or a double click goes fullscreen in the window"),
    "-b": ("--bitrate", "ffmpeg's -b is --bitrate here"),
    "-b:v": ("--bitrate", "ffmpeg's -b:v is --bitrate here"),
    "-s": ("--size", "ffmpeg's -s is --size here (it fits the picture in WxH, aspect kept)"),
    "-vf": ("--size", "no filter graphs here: --size scales (WxH, -1x720), --colour converts"),
    "-filter:v": ("--size", "no filter graphs here: --size scales (WxH, -1x720), --colour converts"),
    "-vframes": ("--frames", "ffmpeg's -vframes is --frames here"),
    "-frames:v": ("--frames", "ffmpeg's -frames:v is --frames here"),
    "-hwaccel": ("--hwaccel", "ffmpeg's -hwaccel is --hwaccel here (auto, cuda, none)"),
    "-f": ("--codec", "the OUTPUT's extension picks the container here (.mp4, .mkv, .webm, ...)"),
}
"""ffmpeg's options (and mpv's track choices) that a person used to it types, each with the option of
``alpha2 transcode`` (and
``batch``) that does its work and the words that say so; said only where the command has that option
(None: everywhere). Without them, ``-ss`` was 'a file goes as ./-ss', ``-t`` 'did you mean --to?' (an
end time, not a duration) and ``-hwaccel`` 'argument -h/--help: ignored explicit argument'. An option
name may have several hints, one a command (``--start``: the player's ``--at``, the transcoder's
``--from``): the first whose option the command has is said."""


def option_hints(word: str) -> tuple[Hint, ...]:
    """The hints of :data:`FFMPEG_OPTIONS` for the option ``word``, in order (none: no entry)."""
    entry = FFMPEG_OPTIONS.get(word)
    if entry is None:
        return ()
    hints = [hint for hint in entry if isinstance(hint, tuple)]
    return tuple(hints) if hints else (cast("Hint", entry),)


_UNIT = re.compile(r"(?:[kmg](?:b|bps|bit/s)?|b/s|bps|s|ms|us|fps)", re.IGNORECASE)
"""A word that is a unit alone (``Mb``, ``k``, ``ms``): typed apart from its number."""


def _looks_like_a_file(word: str) -> bool:
    """An unknown ``-word`` meant as a file: one that exists, or a name no alpha2 option has (one dash
    and more than one letter, or a dot or a slash in it: ``-dash.mp4``)."""
    name = word.lstrip("-")
    return os.path.exists(word) or (
        bool(name) and ((not word.startswith("--") and len(name) > 1) or "." in name or "/" in name)
    )


def unknown_arguments(
    parser: argparse.ArgumentParser,
    command: str | None,
    extras: Sequence[str],
    after_dashes: Sequence[str] = (),
) -> str:
    """The one line for arguments no option took: the first unknown option with the closest one of the
    command (or of another command), or the stray words. ``after_dashes``: the words after ``--`` on
    the line, which are never options (``transcode a.mp4 -- -b.mp4 --quiet``: one argument too many)."""
    options = [e for e in extras if e.startswith("-") and e not in ("-", "--")]
    if options and all(o in after_dashes for o in options):
        stray = [e for e in extras if e != "--"]
        plural = "s" if len(stray) > 1 else ""
        return f"unexpected argument{plural} {' '.join(stray)} (after -- no option is read)"
    if not options:
        said = f"unexpected argument{'s' if len(extras) > 1 else ''}: {' '.join(extras)}"
        if any(_UNIT.fullmatch(e) for e in extras):  # '--bitrate 5 Mb', '--from 10 s'
            said += " (a unit goes with its number, without a space: 5M, 800k, 500ms)"
        return said
    word = options[0].split("=", 1)[0]
    said = f"unknown option {word}"
    for option, words in option_hints(word):
        if option is None or option in _option_strings(parser):
            return f"{said}; {words}"
    near = close_option(word, _option_strings(parser))
    if near is not None and near != word:
        return f"{said}; did you mean {near}?"
    if _looks_like_a_file(options[0]):
        return f"{said}; a file goes as ./{options[0]} or after --"
    other = _elsewhere(word, command)
    if other is not None:
        return f"{said} (alpha2 {other[0]} has {other[1]})"
    where = f"alpha2 {command} --help" if command else "alpha2 --help"
    return f"{said} ('{where}' lists the options)"


def standard_stream_refusal(path: str, output: bool = False) -> str | None:
    """Why ``-`` (ffmpeg's standard input or output) is refused where a file is named, or None: a
    file named ``-`` there is a file. It said 'opening '-': No such file or directory' as an input and
    'cannot tell the container of '-' from no extension' as an output. An input that is a FIFO, a
    socket or a device is refused too (:func:`~alpha2.api.atomic.input_refusal`): it hung."""
    if not output and path != "-":
        from alpha2.api.atomic import input_refusal

        return input_refusal(path)
    if path != "-" or os.path.exists(path):
        return None
    if output:
        return (
            "writing to standard output ('-') is not supported: give OUTPUT a file name (its extension "
            "picks the container)"
        )
    return (
        "reading standard input ('-') is not supported: alpha2 seeks in its input; save the stream to a "
        "file and give its name"
    )


TIME_SYNTAX = "[[hh:]mm:]ss[.ms] or a number with s, ms or us"
"""What :func:`parse_time` takes, as help texts say it."""

_TIME_UNITS = {"ms": 1e-3, "us": 1e-6, "s": 1.0}


def parse_time(text: str) -> float:
    """An argparse ``type`` for a time, as FFmpeg's ``-ss`` takes it (its time duration syntax):
    ``[[hh:]mm:]ss[.ms]`` (``90``, ``1:30``, ``0:01:30.5``) or seconds with a unit, ``s``, ``ms`` or
    ``us`` (``10s``, ``500ms``); in seconds (>= 0)."""
    import argparse
    import math

    why = f"a time is [[hh:]mm:]ss[.ms] or a number with s, ms or us (90, 1:30, 500ms); got {text!r}"
    parts = text.strip().split(":")
    if len(parts) > 3 or any(not p.strip() for p in parts):
        raise argparse.ArgumentTypeError(why)
    scale = 1.0
    suffix = next((u for u in _TIME_UNITS if parts[0].endswith(u)), None) if len(parts) == 1 else None
    if suffix is not None:  # '10s', '500ms' (ms before s); not after minutes, as FFmpeg
        parts, scale = [parts[0].removesuffix(suffix)], _TIME_UNITS[suffix]
    try:
        seconds = float(parts[-1]) * scale
        units = [int(p) for p in parts[:-1]]
    except ValueError:
        raise argparse.ArgumentTypeError(why) from None
    if not math.isfinite(seconds):  # 'inf', '1e400': no time, not one below 0
        raise argparse.ArgumentTypeError(why)
    if seconds < 0 or any(u < 0 for u in units):
        raise argparse.ArgumentTypeError(f"a time must be 0 or more, got {text!r}")
    if units and seconds >= 60:
        raise argparse.ArgumentTypeError(f"seconds must be below 60 after minutes: {text!r}")
    if len(units) == 2 and units[1] >= 60:
        raise argparse.ArgumentTypeError(f"minutes must be below 60 after hours: {text!r}")
    total = 0
    for unit in units:
        total = total * 60 + unit
    return total * 60 + seconds if units else seconds


def terminal_columns(stream: Any = None, default: int | None = None) -> int | None:
    """The width to lay text out in: the terminal's that ``stream`` (stderr by default) writes to, else
    ``COLUMNS``, else ``default`` (None: no terminal; do not wrap)."""
    stream = sys.stderr if stream is None else stream
    try:
        if stream.isatty():
            return max(os.get_terminal_size(stream.fileno()).columns, 20)
    except (AttributeError, OSError, ValueError):
        pass
    columns = os.environ.get("COLUMNS", "")
    return max(int(columns), 20) if columns.isdigit() else default


_UNITS = frozenset(
    {
        "B",
        "kB",
        "MB",
        "GB",
        "TB",
        "b/s",
        "kb/s",
        "Mb/s",
        "Gb/s",
        "s",
        "ms",
        "fps",
        "Hz",
        "kHz",
        "MiB",
        "GiB",
        "%",
    }
)
"""Units kept on the line of the number before them when a line is wrapped (``311.6 kB``)."""


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: East Asian wide and full-width characters two, combining
    marks none, the rest one."""
    import unicodedata

    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def _words(text: str) -> list[str]:
    """``text``'s words, a number and the unit after it as one."""
    words: list[str] = []
    for word in text.split():
        if words and word.rstrip(",;):") in _UNITS and words[-1][-1:].isdigit():
            words[-1] += " " + word
        else:
            words.append(word)
    return words


def _wide_pieces(word: str, room: int) -> list[str]:
    """``word`` in pieces of at most ``room`` columns, cut only beside a wide (CJK) character, which
    may end a line without a space; a word that fits, or has no such place to cut, stays whole."""
    import unicodedata

    if display_width(word) <= room:
        return [word]
    pieces: list[str] = []
    start = cut = 0  # the piece's start, and the last place it may be cut (0: none yet)
    for i in range(1, len(word) + 1):
        if display_width(word[start:i]) > room and cut > start:
            pieces.append(word[start:cut])
            start = cut
        if i < len(word) and any(unicodedata.east_asian_width(c) in ("W", "F") for c in word[i - 1 : i + 1]):
            cut = i
    pieces.append(word[start:])
    return pieces


def wrap_text(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "") -> list[str]:
    """``text`` filled to ``width`` terminal columns (:func:`display_width`: a CJK character takes two),
    words never broken (a path longer than the line stays whole) but beside a CJK character, a number
    kept with its unit."""
    lines: list[str] = []
    line, used, empty = initial_indent, display_width(initial_indent), True
    room = max(1, width - display_width(subsequent_indent))
    for word in (piece for whole in _words(text) for piece in _wide_pieces(whole, room)):
        size = display_width(word)
        if not empty and used + 1 + size > width:
            lines.append(line)
            line, used, empty = subsequent_indent, display_width(subsequent_indent), True
        line, used = (line + word, used + size) if empty else (f"{line} {word}", used + 1 + size)
        empty = False
    if not empty:
        lines.append(line)
    return lines


def wrap_fields(fields: Sequence[tuple[str, str]], width: int | None, indent: str = "  ") -> list[str]:
    """``label  text`` lines, the labels in one column, each text filled to ``width`` (None: not
    wrapped) under itself, words never broken (a path longer than the line stays whole)."""
    pad = max((len(label) for label, _ in fields), default=0) + 2
    lines: list[str] = []
    for label, text in fields:
        head = f"{indent}{label:<{pad}}"
        if width is None:
            lines.append(head + text)
            continue
        lines.extend(
            wrap_text(text, max(width - 1, len(head) + 20), head, " " * len(head)) or [head.rstrip()]
        )
    return lines


def wrap_lines(lines: Iterable[str], width: int | None) -> list[str]:
    """Report lines filled to ``width`` columns (None: as they are), words never broken (a path longer
    than the line stays whole): a headline continues two columns in, an indented ``label: text`` line
    under its text (``  colour: as tagged ...``), or two columns past its indent when the label would
    leave the text too little room."""
    import re

    out: list[str] = []
    for line in lines:
        if width is None or display_width(line) < width:
            out.append(line)
            continue
        text = line.lstrip()
        indent = line[: len(line) - len(text)]
        label = re.match(r"[^\s:;][^:;]*: ", text) if indent else None
        hang = len(indent) + (len(label.group()) if label else 2)
        if hang > width // 3:
            hang = len(indent) + 2
        out.extend(wrap_text(text, max(width - 1, hang + 20), indent, " " * hang) or [line])
    return out


def fit_columns(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    priority: Sequence[int],
    *,
    fold: Mapping[int, int] | None = None,
) -> tuple[list[int], list[int]]:
    """Which columns of a rich table (heavy head box: a column takes its text, 2 of padding and a
    border) fit in ``width`` with no word broken, taken in ``priority`` order (column indices, most
    wanted first): the kept and the left-out columns, each in table order. A column's least width is its
    longest word, header included; ``fold`` caps it for the columns whose words may be broken (a file
    name, folded: by column index, the width below which they are not folded)."""
    least = word_widths(headers, rows, fold=fold)
    kept: list[int] = []
    used = 1  # the left border
    for index in priority:
        if used + least[index] + 3 <= width or not kept:
            kept.append(index)
            used += least[index] + 3
    return sorted(kept), [i for i in range(len(headers)) if i not in kept]


def column_widths(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    kept: Sequence[int],
    width: int,
    *,
    fold: Mapping[int, int] | None = None,
    whole: Collection[int] = (),
) -> dict[int, int]:
    """Widths for the ``kept`` columns that fill at most ``width``: each its longest word (capped as
    :func:`fit_columns`' ``fold`` says), and what is left shared by how much more each column's longest
    text needs. The columns in ``whole`` (a short cell of several words: ``pinned chosen``) take their
    whole text first, as the columns not in ``fold`` do where some are, the others sharing what they
    leave. Given to rich as fixed widths, so that its own squeezing (which can leave a table a column
    too wide) does not come into it."""
    from rich.cells import cell_len

    least = word_widths(headers, rows, fold=fold)
    natural = [
        max(cell_len(text) for text in (header, *(row[i] for row in rows)))
        for i, header in enumerate(headers)
    ]
    widths = {i: least[i] for i in kept}
    spare = width - (sum(widths.values()) + 3 * len(kept) + 1)
    need = {i: natural[i] - widths[i] for i in kept if natural[i] > widths[i]}
    total = sum(need.values())
    if spare <= 0 or not total:
        return widths
    if total <= spare:
        return {i: max(least[i], natural[i]) for i in kept}
    if whole:
        folded = [i for i in need if i not in whole]
    else:
        folded = [i for i in need if fold and i in fold]
    if folded:
        # The columns that fold take what the others leave: the others first take their whole text,
        # the shortest first (a size, a count), so that one long cell does not break them all.
        for i in sorted((i for i in need if i not in folded), key=lambda i: need[i]):
            extra = min(need.pop(i), spare)
            widths[i] += extra
            spare -= extra
        total = sum(need.values())
        if spare <= 0 or not total:
            return widths
    given = {i: spare * n // total for i, n in need.items()}
    left = spare - sum(given.values())
    for i in sorted(need, key=lambda i: need[i] - given[i], reverse=True)[:left]:
        given[i] += 1
    return {i: widths[i] + given.get(i, 0) for i in kept}


def word_widths(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, fold: Mapping[int, int] | None = None
) -> list[int]:
    """Each column's longest word (header included; a number and its unit one word, as in
    :func:`wrap_text`): the width below which rich breaks words. A column in ``fold`` (index: width)
    takes at most that width, or its header's, whichever is wider."""
    from rich.cells import cell_len

    widths = [
        max([cell_len(word) for text in (header, *(row[i] for row in rows)) for word in _words(text)] or [1])
        for i, header in enumerate(headers)
    ]
    for i, cap in (fold or {}).items():
        widths[i] = min(widths[i], max(cap, cell_len(headers[i])))
    return widths


def add_overwrite_arguments(
    parser: argparse.ArgumentParser,
    *,
    what: str = "the output",
    yes_help: str | None = None,
    yes_aliases: Sequence[str] = (),
) -> None:
    """``-y`` / ``--overwrite`` and ``-n`` / ``--no-overwrite`` (the default), as ffmpeg has them: an
    existing file is replaced only when asked (``args.overwrite``). ``yes_aliases``: more spellings of
    ``-y`` (batch's ``--force``), refused beside ``-n`` as ``-y`` is."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-y",
        "--overwrite",
        *yes_aliases,
        dest="overwrite",
        action="store_true",
        help=yes_help or f"replace {what} when it exists",
    )
    group.add_argument(
        "-n",
        "--no-overwrite",
        dest="overwrite",
        action="store_false",
        help=f"refuse to replace {what} when it exists (the default)",
    )
    parser.set_defaults(overwrite=False)


def size_text(size_bytes: int) -> str:
    """``165.5 kB``, ``1.2 GB``: a file's size as the summaries say it (decimal units)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size_bytes >= scale:
            return f"{size_bytes / scale:.1f} {unit}"
    return f"{size_bytes} bytes"


def rate_text(bits_per_second: float) -> str:
    """``265 kb/s``, ``1.52 Mb/s``."""
    if bits_per_second >= 1e6:
        return f"{bits_per_second / 1e6:.2f} Mb/s"
    return f"{bits_per_second / 1e3:.0f} kb/s"


def time_text(seconds: float) -> str:
    """``12.500 s``, ``1:30.000``, ``1:02:03.500``: a time as ``transcode --from`` and ``--to`` take it."""
    # In whole milliseconds first: 119.9996 s was '1:60.000' (the seconds rounded up, the minute not).
    milliseconds = round(seconds * 1000)
    if milliseconds < 60_000:
        return f"{milliseconds / 1000:.3f} s"
    minutes, rest = divmod(milliseconds, 60_000)
    hours, minutes = divmod(minutes, 60)
    return (f"{hours}:{minutes:02d}" if hours else f"{minutes}") + f":{rest / 1000:06.3f}"


def shown_name(name: str) -> str:
    """A file name as a one-line message shows it: as it is, unless it holds a character a terminal does
    not print as itself (a newline, a tab, an escape sequence, a right-to-left override); then quoted and
    escaped as Python's ``repr`` shows it (``'a\\nb.mkv'``), as ``ls`` quotes such a name. A name whose
    only odd bytes are not UTF-8 keeps batch's form, those bytes escaped unquoted (``bad\\xffname.mp4``).

    The bytes of a name that are not UTF-8 (lone surrogates, ``os.fsdecode``'s way) are said as the
    bytes they are (``\\xff``) in both forms."""
    if all(ch.isprintable() or 0xDC80 <= ord(ch) <= 0xDCFF for ch in name):
        return "".join(f"\\x{ord(ch) - 0xDC00:02x}" if 0xDC80 <= ord(ch) <= 0xDCFF else ch for ch in name)
    quote = '"' if "'" in name and '"' not in name else "'"
    out = []
    for ch in name:
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ch == "\\" or ch == quote:
            out.append("\\" + ch)
        elif not ch.isprintable():
            out.append(repr(ch)[1:-1])
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def tag_text(text: str) -> str:
    """Text a file brings (a title, a language, a chapter's name) as a terminal is to show it: a tab,
    newline or other line break as a space, and any other control character escaped as Python writes
    it (``\\x1b``), so that a tag cannot clear the screen, colour the text after it, retitle the
    terminal or break the layout; the rest (right-to-left scripts, emoji) as it is."""
    import unicodedata

    out = []
    for ch in text:
        if unicodedata.category(ch) != "Cc":
            out.append(ch)
        elif ch.isspace():
            out.append(" ")
        else:
            out.append(repr(ch)[1:-1])
    return "".join(out)


def error_line(message: str) -> str:
    # A file's words in it (a stream's language, a title) with its control characters made visible.
    first = " ".join(tag_text(str(message).split("\n")[0]).split()) or "unknown error"
    return f"alpha2: error: {first}"


def print_error(message: str, stream: Any = None) -> None:
    """``alpha2: error: ...`` on ``stream`` (stderr): one line, folded at words to a terminal's width
    where the stream is one (the terminal cut a long one mid-word at 80 columns; a pipe or a file
    still gets the one line a script reads)."""
    out = sys.stderr if stream is None else stream
    line = error_line(message)
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    width = terminal_columns(out) if tty else None
    if width is not None:
        line = "\n".join(wrap_text(line, width, "", "  "))
    print(line, file=out)


RUNTIME_DIR_MODE = 0o700
"""The mode the XDG base directory specification asks of ``XDG_RUNTIME_DIR``."""


def _private_dir(path: str, uid: int) -> bool:
    """Whether ``path`` is a directory (not a link to one) owned by ``uid`` with mode 0700.

    Checked on a descriptor opened without following a link, against the ``lstat`` of the name, so a
    directory swapped in between the two is not taken."""
    import stat

    try:
        named = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(named.st_mode):  # a symbolic link (to anything), or not a folder
        return False
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        opened = os.fstat(fd)
    finally:
        os.close(fd)
    return (
        (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino)
        and opened.st_uid == uid
        and stat.S_IMODE(opened.st_mode) == RUNTIME_DIR_MODE
    )


def ensure_runtime_dir() -> None:
    """Give the process an ``XDG_RUNTIME_DIR`` when it has none (a bare server, a container, CI).

    Mesa's Vulkan drivers and the WebGPU backends print "XDG_RUNTIME_DIR is invalid or not set" on every
    device they create without one. ``<TMPDIR>/alpha2-runtime-<uid>`` stands in for the session's when
    it is what the specification asks (a directory, not a symbolic link, owned by this user, mode
    0700); it is never changed to become so, since anyone may make that name first. Otherwise a new
    private directory (``tempfile.mkdtemp``) is made for this process and removed at its exit.
    """
    current = os.environ.get("XDG_RUNTIME_DIR")
    if current and os.path.isdir(current):
        return
    import tempfile

    uid = os.getuid()
    path = os.path.join(tempfile.gettempdir(), f"alpha2-runtime-{uid}")
    try:
        os.mkdir(path, RUNTIME_DIR_MODE)  # never follows a link; a umask may take bits, never add them
    except OSError:
        pass  # there already (then checked below), or not makeable
    if not _private_dir(path, uid):
        try:
            path = tempfile.mkdtemp(prefix=f"alpha2-runtime-{uid}-")
        except OSError:
            return  # the drivers only warn; nothing to fail for
        import atexit
        import shutil

        atexit.register(shutil.rmtree, path, True)
    os.environ["XDG_RUNTIME_DIR"] = path


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: raised in the main thread so that the command unwinds as for Ctrl-C
    (a BaseException, like KeyboardInterrupt, so that ``except Exception`` does not swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        """The signal's number."""


class Interrupted(KeyboardInterrupt):
    """SIGINT, raised by alpha2's own handler: a KeyboardInterrupt (caught as one) of a class of its own,
    because CPython marks an exact KeyboardInterrupt that passes through code some extensions run (by
    ``PyRun_String``) as unhandled, and then ends the process by SIGINT at exit, after alpha2 has handled
    it and said so."""


_TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class _SignalsUnwind:
    """For the block: SIGINT raises KeyboardInterrupt (:class:`Interrupted`), SIGTERM and SIGHUP raise
    :class:`Terminated` (the first one only: a second one while cleaning up must not cut the cleanup
    short). A signal ignored when the block begins (``nohup`` ignores SIGHUP; a shell's background job
    ignores SIGINT) stays ignored. Nested blocks leave the outer one's handlers in place; outside the
    main thread the block changes nothing."""

    _active = False
    _seen = False
    """Set when the command's exit has caught a signal's exception (:func:`_signal_exit`)."""

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}
        self._owner = False
        self._raised = False
        self._hook: Any = None

    def _handler(self, signum: int, frame: object) -> None:
        if not self._raised:
            self._raised = True
            raise self._watched(Terminated(signum), signum)

    def _interrupt(self, signum: int, frame: object) -> None:
        raise self._watched(Interrupted(), signum)

    def _watched(self, exc: BaseException, signum: int) -> BaseException:
        """``exc``, watched on its way to the command's exit. Python runs a handler at whatever bytecode
        comes next, and an exception raised there can be lost: PyAV's error check replaces it with its
        own error (seen on the H200: a SIGTERM while the NVENC probe's ``open`` failed, and the command
        encoded on), and a finalizer prints it and goes on. The command would then run on with its
        handler spent. When the exception dies before the exit has seen it, the signal is sent again
        a moment later, from another thread, so that it lands outside the code that lost it."""
        import weakref  # here: the start of every command does without it

        weakref.finalize(exc, self._lost, signum)
        return exc

    def _lost(self, signum: int) -> None:
        if not self._owner or _SignalsUnwind._seen:
            return
        self._raised = False
        # Not from here: this runs inside whatever dropped the exception (a raise now is lost again).
        import threading

        resend = threading.Timer(0.005, self._resend, (signum,))
        resend.daemon = True
        resend.start()

    def _resend(self, signum: int) -> None:
        if self._owner and not _SignalsUnwind._seen:
            os.kill(os.getpid(), signum)

    def _unraisable(self, unraisable: Any) -> None:
        # A signal's exception raised inside a finalizer: sent again by _lost, not printed.
        if isinstance(unraisable.exc_value, KeyboardInterrupt | Terminated):
            return
        self._hook(unraisable)

    def __enter__(self) -> _SignalsUnwind:
        if _SignalsUnwind._active:
            return self
        try:
            for signum in (signal.SIGINT, *_TERMINATING):
                old = signal.getsignal(signum)
                if old == signal.SIG_IGN:
                    continue
                handler = self._interrupt if signum == signal.SIGINT else self._handler
                signal.signal(signum, handler)
                self._previous[signum] = old
        except ValueError:  # not the main thread: signals are the main thread's business
            return self
        self._owner = _SignalsUnwind._active = True
        _SignalsUnwind._seen = False
        self._hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._owner:
            return
        self._owner = _SignalsUnwind._active = False
        if sys.unraisablehook == self._unraisable:
            sys.unraisablehook = self._hook
        previous, self._previous = self._previous, {}
        for signum, old in previous.items():
            # None: a handler not installed from Python; the default is the closest there is.
            signal.signal(signum, signal.SIG_DFL if old is None else old)


def _mute_signals() -> None:
    """Ignore the unwinding signals until the block ends (its exit puts the old handlers back): the
    command is ending already, and its last line must not be cut by a second signal."""
    if not _SignalsUnwind._active:
        return
    for signum in (signal.SIGINT, *_TERMINATING):
        try:
            signal.signal(signum, signal.SIG_IGN)
        except ValueError:  # not the main thread
            return


def _signal_in(exc: BaseException) -> BaseException | None:
    """The signal's exception behind ``exc``, when Python wrapped it on its way up (a signal that lands
    while a class is being made comes out as a RuntimeError whose cause it is); None when there is none."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt | Terminated):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return None


def _signal_exit(exc: BaseException) -> int:
    """The one line for a command ended by a signal, and its exit status (128 + the signal)."""
    _SignalsUnwind._seen = True
    _mute_signals()
    if isinstance(exc, Terminated):
        print(f"alpha2: terminated ({signal.Signals(exc.signum).name})", file=sys.stderr)
        return 128 + exc.signum
    print("alpha2: interrupted", file=sys.stderr)
    return 128 + signal.SIGINT


def run_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run one command's ``func``; errors become the one-line message and exit status 1."""
    # Here, not at the top: the command's module has imported them already, and ``--help`` needs neither.
    from alpha2.api.errors import OutputFormatError
    from alpha2.gpu.errors import Error

    try:
        with _SignalsUnwind():
            ensure_runtime_dir()
            return int(func(args) or 0)
    except (KeyboardInterrupt, Terminated) as exc:
        return _signal_exit(exc)
    except BrokenPipeError:
        # The reader went away (``alpha2 probe | head``): nothing to report; silence the final flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OutputFormatError as exc:
        print_error(exc.message)
        return 2  # a usage error, as argparse's own
    except Error as exc:
        print_error(exc.message)
        return 1
    except OSError as exc:
        print_error(str(exc))
        return 1
    except Exception as exc:
        wrapped = _signal_in(exc)
        if wrapped is not None:
            return _signal_exit(wrapped)
        if os.environ.get("ALPHA2_DEBUG"):
            raise
        print_error(f"internal error ({type(exc).__name__}): {exc}")
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """The ``alpha2`` command. The signal handlers go in first, so that a signal at any moment, even
    while the command's modules load, ends it with one line and 128 + its number."""
    with _SignalsUnwind():
        try:
            parser = build_parser(argv)
            args, extras = parser.parse_known_args(argv)
            if extras:
                # Told by the command's own parser (its usage line), with the closest option.
                command = getattr(args, "command", None)
                sub = _subparser(parser, command) or parser
                words = list(sys.argv[1:] if argv is None else argv)
                after = words[words.index("--") + 1 :] if "--" in words else []
                sub.error(unknown_arguments(sub, command, extras, after))
            func = getattr(args, "func", None)
            if func is None:
                parser.print_help(sys.stderr)
                return 2
            return run_command(func, args)
        except (KeyboardInterrupt, Terminated) as exc:
            return _signal_exit(exc)
        except Exception as exc:  # a signal while the command's modules load, wrapped by Python
            wrapped = _signal_in(exc)
            if wrapped is None:
                raise
            return _signal_exit(wrapped)


if __name__ == "__main__":
    sys.exit(main())
