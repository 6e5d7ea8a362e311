"""The `alpha2` command.

Exit codes: 0 on success, 1 with one line ``alpha2: error: ...`` on a runtime failure, 2 on a usage
error (argparse's own convention; an output name that says no container alpha2 writes is one), and
128 + the signal number when SIGINT, SIGTERM or SIGHUP ends a command: all three unwind alike, so
outputs being written are removed and one line says what happened. A traceback reaching a user is a
bug: alpha2 errors and OS errors are turned into that one line; anything else is reported the same
way with its type, and ``ALPHA2_DEBUG=1`` re-raises it for a developer.

Subcommands are imported lazily: ``alpha2 --help`` (and any command) imports only the module of the
command named on the line, so that PyAV, wgpu and numpy load only when a command needs them. The
other commands appear in the listing through :data:`_SUBCOMMANDS`' help lines.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence

from alpha2 import __version__

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


def error_line(message: str) -> str:
    first = " ".join(str(message).split("\n")[0].split()) or "unknown error"
    return f"alpha2: error: {first}"


def ensure_runtime_dir() -> None:
    """Give the process an ``XDG_RUNTIME_DIR`` when it has none (a bare server, a container, CI).

    Mesa's Vulkan drivers and the WebGPU backends print "XDG_RUNTIME_DIR is invalid or not set" on every
    device they create without one. A private directory (mode 0700, as the spec asks) under the
    temporary directory stands in for the session's.
    """
    current = os.environ.get("XDG_RUNTIME_DIR")
    if current and os.path.isdir(current):
        return
    path = os.path.join(tempfile.gettempdir(), f"alpha2-runtime-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)
    except OSError:
        return  # the drivers only warn; nothing to fail for
    os.environ["XDG_RUNTIME_DIR"] = path


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: raised in the main thread so that the command unwinds as for Ctrl-C
    (a BaseException, like KeyboardInterrupt, so that ``except Exception`` does not swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        """The signal's number."""


_TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def _signals_unwind() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` for the block (the first one only: a second
    one while cleaning up must not cut the cleanup short)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def handler(signum: int, frame: object) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise Terminated(signum)

    previous = {signum: signal.signal(signum, handler) for signum in _TERMINATING}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def run_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run one command's ``func``; errors become the one-line message and exit status 1."""
    # Here, not at the top: the command's module has imported them already, and ``--help`` needs neither.
    from alpha2.api.errors import OutputFormatError
    from alpha2.gpu.errors import Error

    ensure_runtime_dir()
    try:
        with _signals_unwind():
            return int(func(args) or 0)
    except KeyboardInterrupt:
        print("alpha2: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Terminated as exc:
        print(f"alpha2: terminated ({signal.Signals(exc.signum).name})", file=sys.stderr)
        return 128 + exc.signum
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
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    return run_command(func, args)


if __name__ == "__main__":
    sys.exit(main())
