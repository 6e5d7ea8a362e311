"""The batch summary's file column breaks a long name after a '/', '-', '_', '.' or space, where it broke
at the column's width alone ('clip_from_the_ca' / 'mera_2024.mp4'; left alone by an outside pass)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from alpha2.apps.batch import BatchReport, fold_name, print_summary
from alpha2.apps.batch_plan import BatchItem, FileResult, FileStatus
from alpha2.apps.cli import display_width


def test_a_name_breaks_after_its_separators() -> None:
    assert fold_name("short.mp4", 16) == "short.mp4"
    assert fold_name("clip_from_the_camera_2024.mp4", 16).split("\n") == ["clip_from_the_", "camera_2024.mp4"]
    assert fold_name("holiday/day-one/beach.mp4", 12).split("\n") == ["holiday/day-", "one/beach.", "mp4"]


def test_lines_fit_and_keep_every_character() -> None:
    for name, width in (
        ("holiday/day-one/beach.mp4", 12),
        ("averyveryverylongnamewithoutanybreaks.mp4", 10),
        ("東京タワーの夜景_2024-12-05.mp4", 11),
        ("a b c d e f g h", 3),
    ):
        lines = fold_name(name, width).split("\n")
        assert "".join(lines) == name
        assert all(display_width(line) <= width for line in lines), lines
        for line in lines[:-1]:  # a line ends at a break where its text had one
            breaks = [i for i, c in enumerate(line) if c in "/-_. "]
            if breaks:
                assert line[-1] in "/-_. ", (name, lines)


@pytest.mark.parametrize("columns", [60, 80])
def test_the_summary_table_folds_names_at_their_breaks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    name = "family_holiday_recordings/2024-summer/camera_one_clip_0001.mp4"
    item = BatchItem(input=str(tmp_path / name), output=str(tmp_path / "out" / name), key=name)
    done = FileResult(item, FileStatus.DONE, attempts=1, frames=10, seconds=1.0, output_bytes=1000)
    stream = io.StringIO()
    print_summary(BatchReport(str(tmp_path / "out"), [done], 1.0, {"runner": "local"}), stream)
    text = stream.getvalue()
    assert all(len(line) <= columns for line in text.splitlines()), text
    cells = [line.split("│")[1].strip() for line in text.splitlines() if line.count("│") > 2]
    pieces = [c for c in cells if c and c != "file"]
    assert "".join(pieces).replace(" ", "") == name.replace(" ", ""), pieces
    for piece in pieces[:-1]:
        assert piece[-1] in "/-_.", pieces
