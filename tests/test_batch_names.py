"""``alpha2 batch`` with file names that are not UTF-8 (bytes Python holds as lone surrogates): such a
file is transcoded like any other, its output keeps the name byte for byte, the manifest reads back so
that a resumed run skips it, and the terminal shows the odd bytes as ``\\xff`` escapes."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps.batch import BatchProgress, BatchSettings, batch, print_summary
from alpha2.apps.batch_local import DeviceChoice
from alpha2.apps.batch_plan import MANIFEST_NAME, FileStatus, expand_inputs, printable
from alpha2.apps.batch_run import Finished, Outcome, Planned, Retrying, Started, staging_dir
from alpha2.apps.cli import main

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

BAD = b"bad\xff\xfename.mp4"
BAD_NAME = os.fsdecode(BAD)  # 'bad\udcff\udcfename.mp4'
SHOWN = "bad\\xff\\xfename.mp4"


def _strict() -> io.TextIOWrapper:
    """A stream that writes UTF-8 strictly, as stdout does in a UTF-8 locale."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / BAD_NAME, width=96, height=64, frames=12)
    make_clip(src / "ok.mp4", width=96, height=64, frames=12)
    make_clip(src / "[red]c.mp4", width=96, height=64, frames=12)  # brackets are not markup
    return src


def test_printable() -> None:
    assert printable(BAD_NAME) == SHOWN
    assert printable("clé.mp4") == "clé.mp4"  # a name's own characters are kept
    assert printable("x\ud800.mp4") == "x\\ud800.mp4"  # a surrogate no file name decodes to
    assert staging_dir("/out", BAD_NAME) != staging_dir("/out", "bad.mp4")  # hashed as the name's bytes


def test_a_name_that_is_not_utf8_is_transcoded_and_resumed(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    # capsys's stdout writes UTF-8 strictly: the table and the JSON must not hold the bare surrogates.
    assert main(["batch", str(folder), "--out", str(out), "--quiet", "--workers", "2"]) == 0
    captured = capsys.readouterr()
    assert SHOWN in captured.out and "[red]c.mp4" in captured.out and "3 done" in captured.out
    assert sorted(os.listdir(os.fsencode(out))) == sorted(
        [BAD, b"[red]c.mp4", b"ok.mp4", b"alpha2-batch.json"]
    )
    manifest = json.loads((out / MANIFEST_NAME).read_bytes())  # ASCII JSON: \udcff escapes
    assert sorted(manifest["entries"]) == sorted([BAD_NAME, "[red]c.mp4", "ok.mp4"])

    # Resumed: the manifest read back names the same file, so it is skipped.
    assert main(["batch", str(folder), "--out", str(out), "--json", "--workers", "2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {os.path.basename(f["output"]): f["status"] for f in report["files"]} == {
        BAD_NAME: "skipped",
        "[red]c.mp4": "skipped",
        "ok.mp4": "skipped",
    }


def test_the_terminal_shows_the_bytes_as_escapes(folder: Path, tmp_path: Path) -> None:
    report = batch(
        [str(folder)], tmp_path / "out", TranscodeOptions(), BatchSettings(device=DeviceChoice.CPU)
    )
    assert [r.status for r in report.results] == [FileStatus.DONE] * 3
    table = _strict()
    print_summary(report, table)
    assert SHOWN in _text(table)

    lines = _strict()
    progress = BatchProgress(stream=lines)
    for event in (
        Planned(1, 0),
        Started(BAD_NAME, 1, "cpu0", 1),
        Retrying(BAD_NAME, 1, f"opening {BAD_NAME}: failed"),
        Finished(Outcome(BAD_NAME, True, "cpu0", frames=12, seconds=1.0)),
    ):
        progress(event)
    progress.close()
    assert f"retrying {SHOWN} (attempt 1 failed: opening {SHOWN}: failed)" in _text(lines)
    assert f"1/1 {SHOWN}: 12 frames" in _text(lines)


def test_a_list_file_may_name_a_file_that_is_not_utf8(folder: Path, tmp_path: Path) -> None:
    listing = tmp_path / "list.txt"
    listing.write_bytes(os.path.join(os.fsencode(folder), BAD) + b"\n")
    [(found, _)] = expand_inputs([str(listing)])
    assert os.fsencode(found) == os.path.join(os.fsencode(folder), BAD)
