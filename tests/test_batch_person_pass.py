"""Faults an outside pass found in ``alpha2 batch`` used as a person converting a folder would use it
(a tmux terminal of 80 columns: mixed inputs, re-runs, Ctrl-C), each with the case that showed it."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps.batch import BatchProgress, BatchSettings, batch
from alpha2.apps.batch_local import DeviceChoice
from alpha2.apps.batch_plan import FileStatus

sys.path.insert(0, os.path.dirname(__file__))
from media import garbage, make_clip

CPU = BatchSettings(device=DeviceChoice.CPU, workers=1)


def test_a_file_that_fails_is_said_as_it_fails_and_counted(tmp_path: Path) -> None:
    # The line a file: only the files done were said ('1/2 ok.mp4'), numbered without the failures, so
    # the log of a run with a broken file ended at 1/2 and named no failure until the table (none at
    # all when the run was interrupted).
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    garbage(str(src / "sub" / "broken.avi"))
    make_clip(src / "ok.mp4", width=64, height=48, frames=4)
    stream = io.StringIO()
    progress = BatchProgress(stream=stream)
    report = batch([str(src)], tmp_path / "out", TranscodeOptions(), CPU, on_event=progress)
    progress.close()
    assert sorted(r.status.value for r in report.results) == ["done", "failed"]
    lines = stream.getvalue().splitlines()
    failed = [line for line in lines if "broken" in line]
    assert len(failed) == 1, lines
    assert failed[0].startswith("alpha2: batch: ") and " sub/broken.avi: failed: opening " in failed[0]
    assert "no media FFmpeg can read" in failed[0]
    numbers = sorted(line.split()[2] for line in lines if line.startswith("alpha2: batch: "))
    assert numbers == ["1/2", "2/2"], lines
    assert next(r for r in report.results if r.status is FileStatus.FAILED).attempts == 1
