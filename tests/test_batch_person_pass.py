"""Faults an outside pass found in ``alpha2 batch`` used as a person converting a folder would use it
(a tmux terminal of 80 columns: mixed inputs, re-runs, Ctrl-C), each with the case that showed it."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps.batch import BatchProgress, BatchSettings, batch, print_summary
from alpha2.apps.batch_local import DeviceChoice
from alpha2.apps.batch_plan import MANIFEST_NAME, FileStatus

sys.path.insert(0, os.path.dirname(__file__))
from media import garbage, make_audio_only, make_clip

REPO = Path(__file__).resolve().parent.parent

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


def _batch_stopped_after_one(tmp_path: Path, signum: int, *extra: str) -> tuple[int, str, str, Path]:
    """``alpha2 batch`` of a short and a long file, sent ``signum`` once the short one is written (the
    long one still encoding): its exit status, stdout, stderr and output folder."""
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / "a short.mp4", width=64, height=48, frames=4)
    make_clip(src / "b long.mp4", width=320, height=240, frames=1200)  # still encoding when interrupted
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    command = [sys.executable, "-m", "alpha2", "batch", str(src), "--out", str(out), "--workers", "1", *extra]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / "a short.mp4").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.3)
    process.send_signal(signum)
    stdout, err = process.communicate(timeout=120)
    return process.returncode, stdout, err, out


def test_ctrl_c_says_what_was_kept_and_that_the_same_command_resumes(tmp_path: Path) -> None:
    # Ctrl-C in the middle ended with the bars frozen at '1/2' and 'alpha2: interrupted': nothing said
    # whether the outputs done were kept, the half-written one removed, or how to go on.
    code, _, err, out = _batch_stopped_after_one(tmp_path, signal.SIGINT)
    assert code == 128 + signal.SIGINT, err
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert lines[-1] == "alpha2: interrupted", err
    said = " ".join(lines[-3:-1])
    assert "stopped with 1 of 2 files done;" in said, err
    assert "kept and those in progress removed: the same command again does the rest" in said, err
    assert sorted(os.listdir(out)) == ["a short.mp4", MANIFEST_NAME]


def test_ctrl_c_under_json_prints_what_was_done(tmp_path: Path) -> None:
    # 'alpha2 batch --json' interrupted printed nothing on stdout: a script reading the JSON learnt
    # nothing of the file done and kept.
    code, stdout, err, out = _batch_stopped_after_one(tmp_path, signal.SIGTERM, "--json")
    assert code == 128 + signal.SIGTERM, err
    assert err.splitlines()[-1] == "alpha2: terminated (SIGTERM)", err
    report = json.loads(stdout)
    assert report["interrupted"] == "SIGTERM" and report["error"] == "interrupted by SIGTERM"
    assert (report["planned"], report["done"], report["skipped"], report["failed"]) == (2, 1, 0, 0)
    (done,) = report["files"]
    assert done["output"] == str(out / "a short.mp4") and done["status"] == "done"
    assert done["frames"] == 4 and done["output_bytes"] == (out / "a short.mp4").stat().st_size
    assert sorted(os.listdir(out)) == ["a short.mp4", MANIFEST_NAME]


def test_ctrl_c_before_the_plan_and_under_quiet_says_nothing_more() -> None:
    from alpha2.apps.batch import RunTally
    from alpha2.apps.batch_run import Finished, GaveUp, Outcome, Planned

    tally = RunTally(lambda event: None)
    assert tally.interrupted_line() is None  # nothing planned yet: 'alpha2: interrupted' alone
    for event in (
        Planned(4, 1),
        Finished(Outcome("a.mp4", True, "cpu0", frames=3, seconds=0.1)),
        Finished(Outcome("b.mp4", False, "cpu0", error="bad")),
        GaveUp("b.mp4", "/in/b.avi", "bad"),
    ):
        tally(event)
    line = tally.interrupted_line(force=True)
    assert line is not None and "stopped with 2 of 4 files done, 1 failed;" in line
    assert line.endswith("the same command without -y does the rest")
    report = tally.interrupted_report("/out", "SIGINT")
    assert (report["planned"], report["done"], report["skipped"], report["failed"]) == (4, 1, 1, 1)
    assert report["frames"] == 3 and report["interrupted"] == "SIGINT"
    assert [(f["output"], f["status"]) for f in report["files"]] == [
        ("/out/a.mp4", "done"),
        ("/out/b.mp4", "failed"),
    ]
    assert report["files"][1]["input"] == "/in/b.avi" and report["files"][1]["error"] == "bad"


def test_a_sound_file_in_a_video_batch_is_not_said_as_an_empty_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # song.ogg in a folder of videos becomes song.mp4 with its audio; its line read 'song.mp4: 0 frames,
    # 0.0 fps' and its row '0 | 0.0', as if nothing had been written ('alpha2 transcode' of the same
    # file says '1.000 s of audio').
    monkeypatch.setenv("COLUMNS", "80")
    src = tmp_path / "in"
    src.mkdir()
    make_audio_only(str(src / "song.ogg"), seconds=0.5)
    make_clip(src / "clip.mp4", width=64, height=48, frames=4)
    stream = io.StringIO()
    progress = BatchProgress(stream=stream)
    report = batch([str(src)], tmp_path / "out", TranscodeOptions(), CPU, on_event=progress)
    progress.close()
    song = next(r for r in report.results if r.item.key == "song.mp4")
    assert song.status is FileStatus.DONE and song.output_bytes > 0
    line = next(line for line in stream.getvalue().splitlines() if "song.mp4" in line)
    assert "song.mp4: sound alone, " in line and " kB in " in line, line
    assert "0 frames" not in line and "fps" not in line, line
    table = io.StringIO()
    print_summary(report, table)
    row = next(line for line in table.getvalue().splitlines() if line.startswith("│ song.mp4"))
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert cells[1] == "done" and cells[3] == "-", cells  # no rate for no video
    clip = next(line for line in table.getvalue().splitlines() if line.startswith("│ clip.mp4"))
    assert [cell.strip() for cell in clip.strip("│").split("│")][2] == "4"


def test_a_silent_video_into_a_sound_alone_output_is_said_to_lack_audio(tmp_path: Path) -> None:
    # 'alpha2 batch videos/ --out mp3/ --container mp3' (and 'alpha2 transcode clip.mp4 x.mp3') with a
    # video without sound said "'clip.mp4' holds no video or audio to transcode: video (h264 64x48)".
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / "clip.mp4", width=64, height=48, frames=4)
    settings = BatchSettings(device=DeviceChoice.CPU, workers=1, container="mp3")
    report = batch([str(src)], tmp_path / "out", TranscodeOptions(), settings)
    [result] = report.results
    assert result.status is FileStatus.FAILED and result.error is not None
    assert "no video or audio" not in result.error, result.error
    wanted = "holds no audio for the .mp3 output (sound alone); it holds video (h264 64x48)"
    assert result.error.endswith(wanted), result.error
