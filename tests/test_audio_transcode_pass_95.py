"""An outside pass over ``alpha2 transcode`` of sound alone and ``alpha2 batch`` into audio files, as
a demanding ffmpeg user runs them: the progress counted in time, a batch of songs into .mp3 / .m4a /
.flac, and odd inputs (8 kHz mono, 5.1 AC-3, ADPCM and u-law WAV, 96 kHz planar float, tags and
cover art, a late start, a gap, no samples, a cut file, two tracks). Inputs are made here with PyAV;
outputs are decoded and their lengths and streams checked.
"""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest

from alpha2.api import pipeline
from alpha2.apps import cli
from tests.test_audio_transcode import seconds_of, tone


def test_plain_progress_of_sound_says_time_of_length_and_speed() -> None:
    out = io.StringIO()
    shown = pipeline.PlainProgress("transcode", out, every_s=0.0)
    shown.start_seconds(180.0)
    shown.update_seconds(12.3, 100)
    time.sleep(0.01)
    shown.update_seconds(72.0, 700)
    shown.close()
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"transcode: 12\.3 s of 3:00, [0-9.]+x", lines[0]), lines
    assert re.fullmatch(r"transcode: 1:12 of 3:00, [0-9.]+x", lines[1]), lines
    assert "frame" not in out.getvalue()


def test_plain_progress_of_unknown_length_and_long_files() -> None:
    out = io.StringIO()
    shown = pipeline.PlainProgress("transcode", out, every_s=0.0)
    shown.start_seconds(None)
    shown.update_seconds(3725.0, 9)
    shown.close()
    assert re.fullmatch(r"transcode: 1:02:05, [0-9.]+x\n", out.getvalue()), out.getvalue()


def test_rich_progress_of_sound_fits_80_columns() -> None:
    out = io.StringIO()
    shown = pipeline.RichProgress("transcode", out)
    shown._progress.console.width = 80  # (a terminal of 80 columns)
    shown.start_seconds(36000.0)
    shown.update_seconds(35999.0, 1)
    time.sleep(0.15)
    shown.update_seconds(36000.0, 2)
    shown.close()
    text = out.getvalue()
    assert "frames" not in text and "fps" not in text, text
    last = [line for line in text.splitlines() if line.strip()][-1]
    assert "10:00:00 of 10:00:00, " in last and len(last) <= 80, last


def test_base_progress_of_sound_counts_frames_for_a_callback() -> None:
    seen: list[int] = []

    class Frames(pipeline.Progress):
        def update(self, frames: int) -> None:
            seen.append(frames)

    shown = Frames()
    shown.start_seconds(3.0)
    shown.update_seconds(1.0, 43)
    assert seen == [43]


def test_transcode_progress_of_sound_is_time_not_frames(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    song = tone(tmp_path / "song.flac", "flac", sample_format="s16", seconds=4.0)
    code = cli.main(["transcode", song, str(tmp_path / "song.mp3")])
    err = capsys.readouterr().err
    assert code == 0, err
    progress = [line for line in err.splitlines() if line.startswith("transcode: ")]
    assert progress and all("frame" not in line and "fps" not in line for line in progress), err
    assert re.fullmatch(r"transcode: 4\.0 s of 4\.0 s, [0-9.]+x", progress[-1]), err
    assert seconds_of(str(tmp_path / "song.mp3")) == pytest.approx(4.0, abs=0.06)
