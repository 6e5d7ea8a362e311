"""Faults an outside QA pass found in ``alpha2 batch`` and adapter pinning, each with the case that
showed it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps.batch import BatchSettings, batch
from alpha2.apps.batch_local import DeviceChoice
from alpha2.apps.batch_plan import MANIFEST_NAME, FileStatus

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

CPU = BatchSettings(device=DeviceChoice.CPU, workers=1)


def test_an_output_name_at_the_file_systems_limit_is_written(tmp_path: Path) -> None:
    # 255 bytes: the longest name a file may have. The output was staged under its own name, beside
    # which the encoder made '.<name>.<hex>.partial.mp4', too long: "File name too long".
    src = tmp_path / "in"
    src.mkdir()
    name = "x" * 251 + ".mp4"
    make_clip(src / name, width=64, height=48, frames=4)
    out = tmp_path / "out"
    report = batch([str(src)], out, TranscodeOptions(), CPU)
    [result] = report.results
    assert result.status is FileStatus.DONE, result.error
    assert sorted(os.listdir(out)) == sorted([name, MANIFEST_NAME])
