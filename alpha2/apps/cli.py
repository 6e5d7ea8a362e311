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

Subcommands are imported lazily: ``alpha2 --help`` (and any command) imports only the module of the
command named on the line, so that PyAV, wgpu and numpy load only when a command needs them. The
other commands appear in the listing through :data:`_SUBCOMMANDS`' help lines.
"""

from __future__ import annotations

# Only what main() needs before its signal handlers are in place: the window in which a signal still
# gets Python's own reaction (a KeyboardInterrupt traceback, or a silent death) stays as short as it can.
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from alpha2 import __version__

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

# Subcommands: (command, module, help line). Each module has register(subparsers), which adds the
# command's parser (with the same help line) and sets func=run on it. Only the module of the command
# being run is imported; the help lines list the others without importing them.
_SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "probe",
        "alpha2.apps.probe",
        "list GPU adapters, their video and interop support, and which one alpha2 chooses",
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
    registered from its module, the others as help lines only."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(
        prog="alpha2", description="GPU video interop: probe adapters, play and transcode video."
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


def add_overwrite_arguments(
    parser: argparse.ArgumentParser, *, what: str = "the output", yes_help: str | None = None
) -> None:
    """``-y`` / ``--overwrite`` and ``-n`` / ``--no-overwrite`` (the default), as ffmpeg has them: an
    existing file is replaced only when asked (``args.overwrite``)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-y",
        "--overwrite",
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


def error_line(message: str) -> str:
    first = " ".join(str(message).split("\n")[0].split()) or "unknown error"
    return f"alpha2: error: {first}"


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


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted


_TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class _SignalsUnwind:
    """For the block: SIGINT raises KeyboardInterrupt (:class:`Interrupted`), SIGTERM and SIGHUP raise
    :class:`Terminated` (the first one only: a second one while cleaning up must not cut the cleanup
    short). A signal ignored when the block begins (``nohup`` ignores SIGHUP; a shell's background job
    ignores SIGINT) stays ignored. Nested blocks leave the outer one's handlers in place; outside the
    main thread the block changes nothing."""

    _active = False

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}
        self._owner = False
        self._raised = False

    def _handler(self, signum: int, frame: object) -> None:
        if not self._raised:
            self._raised = True
            raise Terminated(signum)

    def __enter__(self) -> _SignalsUnwind:
        if _SignalsUnwind._active:
            return self
        try:
            for signum in (signal.SIGINT, *_TERMINATING):
                old = signal.getsignal(signum)
                if old == signal.SIG_IGN:
                    continue
                handler = _interrupt if signum == signal.SIGINT else self._handler
                signal.signal(signum, handler)
                self._previous[signum] = old
        except ValueError:  # not the main thread: signals are the main thread's business
            return self
        self._owner = _SignalsUnwind._active = True
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._owner:
            return
        self._owner = _SignalsUnwind._active = False
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


def _signal_exit(exc: BaseException) -> int:
    """The one line for a command ended by a signal, and its exit status (128 + the signal)."""
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
        print(error_line(exc.message), file=sys.stderr)
        return 2  # a usage error, as argparse's own
    except Error as exc:
        print(error_line(exc.message), file=sys.stderr)
        return 1
    except OSError as exc:
        print(error_line(str(exc)), file=sys.stderr)
        return 1
    except Exception as exc:
        if os.environ.get("ALPHA2_DEBUG"):
            raise
        print(error_line(f"internal error ({type(exc).__name__}): {exc}"), file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """The ``alpha2`` command. The signal handlers go in first, so that a signal at any moment, even
    while the command's modules load, ends it with one line and 128 + its number."""
    with _SignalsUnwind():
        try:
            parser = build_parser(argv)
            args = parser.parse_args(argv)
            func = getattr(args, "func", None)
            if func is None:
                parser.print_help(sys.stderr)
                return 2
            return run_command(func, args)
        except (KeyboardInterrupt, Terminated) as exc:
            return _signal_exit(exc)


if __name__ == "__main__":
    sys.exit(main())
