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
from alpha2.apps.batch_run import STAGING_NAME

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


def test_an_output_name_longer_than_the_file_system_takes_fails_before_its_transcode(
    tmp_path: Path,
) -> None:
    # 'y' * 252 + '.ts' is a valid input name; its output, '.mp4', is 256 bytes. It failed only after
    # the whole transcode, naming the staging folder.
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / ("y" * 252 + ".ts"), width=64, height=48, frames=4)
    make_clip(src / "ok.mp4", width=64, height=48, frames=4)
    out = tmp_path / "out"
    report = batch([str(src)], out, TranscodeOptions(), CPU)
    by_name = {r.item.key: r for r in report.results}
    assert by_name["ok.mp4"].status is FileStatus.DONE
    failed = by_name["y" * 252 + ".mp4"]
    assert failed.status is FileStatus.FAILED and failed.attempts == 0
    assert failed.error is not None and "256 bytes, more than the 255" in failed.error
    assert STAGING_NAME not in failed.error
    assert sorted(os.listdir(out)) == sorted(["ok.mp4", MANIFEST_NAME])
