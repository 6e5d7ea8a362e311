"""Faults an outside pass over ``alpha2 transcode``, ``probe`` and ``batch`` at 80 columns found,
each against what a person reads there."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from alpha2.api.describe import StreamFacts
from alpha2.apps.batch import BatchProgress, BatchReport, print_summary
from alpha2.apps.batch_plan import BatchItem, FileResult, FileStatus
from alpha2.apps.batch_run import Finished, Outcome, Planned, Retrying, Started
from alpha2.apps.probe_files import frames_text
from alpha2.ffmpeg_bridge.side_streams import StreamKind


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_batch_table_keeps_each_size_with_its_unit_at_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mixed folder's summary at 80 columns: every size ('384.6 kB') broke onto two lines ('384.6' /
    'kB'), so every row took two, while the paths column had room to give."""
    monkeypatch.setenv("COLUMNS", "80")
    names = ("alpha.mp4", "base.mp4", "pq.mp4", "sub/multi.mp4")
    paths = ({"software": 50}, {"software": 100}, {"cpu_download": 50, "cpu_upload": 50}, {"software": 75})
    results = [
        FileResult(
            BatchItem(name, str(tmp_path / "in" / name), str(tmp_path / "out" / name)),
            FileStatus.DONE,
            attempts=1,
            frames=100,
            seconds=0.1,
            output_bytes=384_600,
            paths=path,
        )
        for name, path in zip(names, paths)
    ]
    stream = io.StringIO()
    print_summary(BatchReport(str(tmp_path / "out"), results, 1.0, {"runner": "local"}), stream)
    text = stream.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert text.count("384.6 kB") == len(names), text


def test_batch_progress_counts_failed_files_as_over_and_says_1_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files bar stood at 9/12 when the batch was over with 3 failed; a 1-frame file was '1 frames'."""
    monkeypatch.setenv("TERM", "xterm")
    stream = _Terminal()
    progress = BatchProgress(stream=stream)
    for event in (
        Planned(3, 0),
        Started("one.mp4", 1, "cpu0", 1),
        Finished(Outcome("one.mp4", True, "cpu0", frames=1, seconds=0.5)),
        Started("bad.mp4", 1, "cpu1", 2),
        Finished(Outcome("bad.mp4", False, "cpu1", error="killed")),
        Retrying("bad.mp4", 1, "killed"),  # not over: tried again
    ):
        progress(event)
    files = progress._rich.tasks[0]
    assert files.completed == 1
    progress(Finished(Outcome("bad.mp4", False, "cpu1", error="killed")))  # over: failed for good
    progress(Finished(Outcome("empty.mp4", False, "cpu0", error="the file is empty (0 bytes)")))
    assert files.completed == files.total == 3
    progress.close()
    assert "1/3 one.mp4: 1 frame, 2.0 fps (cpu0)" in stream.getvalue()


def test_batch_totals_say_1_frame(tmp_path: Path) -> None:
    item = BatchItem("one.mp4", str(tmp_path / "in" / "one.mp4"), str(tmp_path / "out" / "one.mp4"))
    done = FileResult(item, FileStatus.DONE, attempts=1, frames=1, seconds=0.5, output_bytes=3398)
    stream = io.StringIO()
    print_summary(BatchReport(str(tmp_path / "out"), [done], 0.5, {"runner": "local"}), stream)
    assert "1 done, 0 skipped, 0 failed; 1 frame in 0.50 s" in stream.getvalue()


def test_probe_says_one_frame() -> None:
    facts = StreamFacts(0, StreamKind.VIDEO, "h264", frame_rate=25.0, frame_count=1)
    assert frames_text(facts) == "1 frame (container)"
