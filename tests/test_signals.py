"""Signals end ``alpha2`` with one line and 128 + the signal, from the first moment ``main`` runs (while
the command's modules still load), never a traceback; a signal ignored at start (``nohup``, a shell's
background job) stays ignored; an interrupted batch takes back the ``--out`` folder it made when nothing
was written into it. Real processes (``python -m alpha2``), signalled as soon as their handlers are in."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps.batch import batch
from alpha2.apps.batch_run import Event, FileTask

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc/<pid>/status")

EXPECTED = {
    signal.SIGINT: "alpha2: interrupted",
    signal.SIGTERM: "alpha2: terminated (SIGTERM)",
    signal.SIGHUP: "alpha2: terminated (SIGHUP)",
}

# A command that runs for a long while: 60 s of 640x360 video to encode.
# Long enough to be still running when a test signals it, even on 16 fast cores (every test ends it).
LONG_SAMPLE = ["sample", "long.mp4", "--duration", "900", "--size", "1280x720", "--no-audio"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    return env


def _mask(pid: int, field: str) -> int:
    """A signal mask of /proc/<pid>/status (``SigCgt``: caught, ``SigIgn``: ignored)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1], 16)
    except FileNotFoundError:
        pass
    return 0


def _has(mask: int, signum: int) -> bool:
    return bool(mask & (1 << (signum - 1)))


def _start(args: list[str], cwd: Path, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "alpha2", *args],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _wait_for_handlers(process: subprocess.Popen[str], timeout_s: float = 60.0) -> None:
    """Until main() has put its handlers in (SIGTERM caught: Python itself never catches it)."""
    deadline = time.monotonic() + timeout_s
    while not _has(_mask(process.pid, "SigCgt"), signal.SIGTERM):
        assert process.poll() is None, f"ended before its handlers were in: {process.communicate()}"
        assert time.monotonic() < deadline, "no handler installed"
        time.sleep(0.0005)


def _ended_by(process: subprocess.Popen[str], signum: int) -> str:
    _, err = process.communicate(timeout=120)
    assert "Traceback" not in err, err
    assert process.returncode == 128 + signum, (process.returncode, err)
    assert err.splitlines() == [EXPECTED[signal.Signals(signum)]], err
    return err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_signal_while_the_command_loads(signum: signal.Signals, tmp_path: Path) -> None:
    """The first moments: the handlers are in, the command's modules (PyAV, numpy) are still loading."""
    started = time.monotonic()
    process = _start(LONG_SAMPLE, tmp_path)
    _wait_for_handlers(process)
    process.send_signal(signum)
    sent_after = time.monotonic() - started
    _ended_by(process, signum)
    assert sent_after < 5.0
    assert list(tmp_path.iterdir()) == []  # no output, no partial file


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_signal_while_encoding_leaves_nothing(signum: signal.Signals, tmp_path: Path) -> None:
    process = _start(LONG_SAMPLE, tmp_path)
    deadline = time.monotonic() + 120
    while not any(".partial" in p.name for p in tmp_path.iterdir()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(signum)
    _ended_by(process, signum)
    assert list(tmp_path.iterdir()) == []


def _nohup_like() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def test_sighup_ignored_at_start_stays_ignored(tmp_path: Path) -> None:
    """Under nohup, a hang-up must not end alpha2 (it used to install its own SIGHUP handler)."""
    args = ["sample", "s.mp4", "--duration", "0.5", "--size", "64x48", "--no-audio"]
    if shutil.which("nohup"):
        process = subprocess.Popen(
            ["nohup", sys.executable, "-m", "alpha2", *args],
            cwd=tmp_path,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    else:
        process = _start(args, tmp_path, preexec_fn=_nohup_like)
    _wait_for_handlers(process)
    assert _has(_mask(process.pid, "SigIgn"), signal.SIGHUP)
    assert not _has(_mask(process.pid, "SigCgt"), signal.SIGHUP)
    process.send_signal(signal.SIGHUP)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "Traceback" not in err and "terminated" not in err
    assert (tmp_path / "s.mp4").stat().st_size > 0


def _background_job() -> None:
    # As a shell starts a background job: SIGINT ignored, the rest at their defaults (whatever the
    # process running the tests inherited: a CI runner may ignore SIGTERM).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_sigint_ignored_at_start_stays_ignored(tmp_path: Path) -> None:
    """A shell's background job (``alpha2 ... &`` in a script) starts with SIGINT ignored."""
    process = _start(LONG_SAMPLE, tmp_path, preexec_fn=_background_job)
    _wait_for_handlers(process)
    assert _has(_mask(process.pid, "SigIgn"), signal.SIGINT)
    process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert process.poll() is None  # still running
    process.send_signal(signal.SIGTERM)
    _ended_by(process, signal.SIGTERM)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_interrupted_batch_removes_the_out_folder_it_made(signum: signal.Signals, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    # Long enough to be still encoding 0.3 s after the handlers are in: 120 frames were done by then on
    # an idle 2-core machine, a.mp4 and the manifest written before the signal came.
    make_clip(src / "a.mp4", width=320, height=240, frames=1200)
    made = tmp_path / "new"
    out = made / "deeper" / "out"
    process = _start(["batch", str(src), "--out", str(out), "--quiet", "--workers", "1"], tmp_path)
    deadline = time.monotonic() + 120
    while not out.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.0005)
    process.send_signal(signum)
    _ended_by(process, signum)
    left = sorted(str(p.relative_to(made)) for p in made.rglob("*")) if made.exists() else None
    assert left is None, left  # every folder it made, as nothing was written
    # A folder that was there before is left, even empty.
    out.mkdir(parents=True)
    process = _start(["batch", str(src), "--out", str(out), "--quiet", "--workers", "1"], tmp_path)
    _wait_for_handlers(process)
    time.sleep(0.3)
    process.send_signal(signum)
    _ended_by(process, signum)
    assert out.is_dir() and list(out.iterdir()) == []


class _InterruptedBackend:
    def start(self) -> None:
        raise KeyboardInterrupt

    def capacity(self) -> int:
        return 1

    def submit(self, task: FileTask) -> None:
        raise AssertionError("not started")

    def poll(self, timeout: float) -> list[Event]:
        return []

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"runner": "interrupted"}


def test_batch_interrupted_in_process(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.mp4").write_bytes(b"x")
    out = tmp_path / "a" / "b"
    with pytest.raises(KeyboardInterrupt):
        batch([str(src)], out, TranscodeOptions(), backend=_InterruptedBackend())
    assert not (tmp_path / "a").exists()
    out.mkdir(parents=True)
    (out / "mine.txt").write_text("kept")
    with pytest.raises(KeyboardInterrupt):
        batch([str(src)], out, TranscodeOptions(), backend=_InterruptedBackend())
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]  # the manifest's claim taken back


def test_a_signal_wrapped_by_python_is_still_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A signal that lands while a class is being made (a command's module loading) comes out of Python
    as a RuntimeError whose cause is the signal's exception: still one line and 128 + the signal."""
    from alpha2.apps import cli

    def loading(_: Any) -> int:
        try:
            raise cli.Terminated(signal.SIGTERM)
        except cli.Terminated as exc:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from exc

    assert cli.run_command(loading, argparse.Namespace()) == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert err == "alpha2: terminated (SIGTERM)\n"


# A command whose signal lands where the exception is lost: the loss seen on the H200, where PyAV's
# error check (the NVENC probe's failing open) dropped a Terminated raised inside it, and the command
# encoded on for its whole length with SIGTERM spent.
_LOSING_COMMAND = """
import argparse, os, signal, sys, time
from alpha2.apps.cli import run_command

class Dropped:
    def __del__(self):
        os.kill(os.getpid(), signal.{signal})
        time.sleep(0.05)  # the handler runs in here, inside a finalizer: Python prints it and goes on

def swallowed():
    try:
        os.kill(os.getpid(), signal.{signal})
        time.sleep(0.05)  # the handler runs here ...
    except BaseException:
        pass  # ... and the exception is dropped, as PyAV's error check drops it

def command(args):
    {where}
    time.sleep(20)  # the rest of the work: the signal must end it
    print("ran to the end")
    return 0

sys.exit(run_command(command, argparse.Namespace()))
"""


@pytest.mark.parametrize(
    ("signum", "where"),
    [
        (signal.SIGTERM, "swallowed()"),
        (signal.SIGINT, "swallowed()"),
        (signal.SIGTERM, "Dropped()"),
    ],
    ids=["SIGTERM-swallowed", "SIGINT-swallowed", "SIGTERM-in-finalizer"],
)
def test_a_signal_lost_on_its_way_is_sent_again(signum: signal.Signals, where: str) -> None:
    script = _LOSING_COMMAND.format(signal=signum.name, where=where)
    started = time.monotonic()
    process = subprocess.run(
        [sys.executable, "-c", script], env=_env(), capture_output=True, text=True, timeout=60
    )
    assert "ran to the end" not in process.stdout
    assert process.returncode == 128 + signum, (process.returncode, process.stderr)
    assert process.stderr.splitlines() == [EXPECTED[signum]], process.stderr
    assert time.monotonic() - started < 15


def test_a_signal_while_a_batch_worker_starts_waits_for_its_start() -> None:
    """A signal's exception raised inside ``Process.start()`` cut the write of the worker's start-up
    data short, and the new process printed multiprocessing's ``EOFError: Ran out of input`` under
    ``alpha2: interrupted`` (a CI run). While a worker starts, the signal is held, then raised."""
    from alpha2.apps.batch_local import _signals_held

    class Raised(Exception):
        pass

    def handler(signum: int, frame: object) -> None:
        raise Raised(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        reached = False
        with pytest.raises(Raised):
            with _signals_held():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)  # a handler would have run by now
                reached = True
        assert reached  # the block ran to its end, the signal raised after it
        assert signal.getsignal(signal.SIGTERM) is handler  # the handler is back
    finally:
        signal.signal(signal.SIGTERM, previous)
