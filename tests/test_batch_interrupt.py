"""``alpha2 batch`` interrupted: a second signal while the workers are being stopped (``timeout -s INT``
sends one to the process and one to its group; a second Ctrl-C) must not cut the cleanup short, or the
staging folders of the files in progress stay behind in ``--out``."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps.batch import BatchSettings, batch
from alpha2.apps.batch_local import DeviceChoice, LocalBackend, plan_workers
from alpha2.apps.batch_plan import MANIFEST_NAME, STAGING_NAME
from alpha2.apps.batch_run import Event, Frames, Started

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip


def _everything(folder: Path) -> list[str]:
    return sorted(os.path.join(root, name) for root, dirs, files in os.walk(folder) for name in dirs + files)


class _SecondSignal(LocalBackend):
    """The pool, sent a second SIGINT just as it is asked to stop its workers: the race of a real run,
    made certain (Python acts on the signal at the next line, before the workers are stopped)."""

    def close(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        super().close()


def test_a_second_interrupt_while_the_workers_stop_leaves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / "long.mp4", width=320, height=240, frames=240)  # still encoding when interrupted
    make_clip(src / "short.mp4", width=96, height=64, frames=12)
    out = tmp_path / "out"
    pids: dict[str, int] = {}
    staged: list[str] = []

    def on_event(event: Event) -> None:
        if isinstance(event, Started) and event.pid is not None:
            pids[event.key] = event.pid
        if isinstance(event, Frames) and event.key == "long.mp4" and not staged:
            found = _everything(out / STAGING_NAME)
            if any(".partial" in name for name in found):  # the output is being written
                staged.extend(found)
                os.kill(os.getpid(), signal.SIGINT)  # the first: Ctrl-C with a file half-written

    backend = _SecondSignal(plan_workers(device=DeviceChoice.CPU, workers=2))
    previous: Any = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            batch(
                [str(src)],
                out,
                TranscodeOptions(),
                BatchSettings(device=DeviceChoice.CPU, workers=2),
                on_event=on_event,
                backend=backend,
            )
    finally:
        LocalBackend.close(backend)  # stops the workers should the run not have
        signal.signal(signal.SIGINT, previous)
    assert staged, "the long file finished before the test could interrupt it"
    # The short file may have finished, and the long one too where its worker renamed it into place
    # before being stopped (whole then: checked); nothing else is left: no staging folder, no partial
    # output, no lock.
    kept = {MANIFEST_NAME, "short.mp4"}
    if (out / "long.mp4").exists():
        import av

        with av.open(str(out / "long.mp4")) as container:
            assert sum(1 for _ in container.decode(video=0)) == 240, "a long.mp4 in --out is whole"
        kept.add("long.mp4")
    assert [name for name in _everything(out) if os.path.basename(name) not in kept] == []
    for key, pid in pids.items():  # every worker stopped and waited for
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        assert key
