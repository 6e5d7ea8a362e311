"""Faults an outside pass over ``alpha2 probe``, ``alpha2 sample`` and ``alpha2 batch`` at an 80-column
terminal found, each against what a person typing them instead of ffprobe / ffmpeg meets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import av
import pytest
from media import make_clip

from alpha2.apps.cli import main

Capsys = pytest.CaptureFixture[str]


@pytest.mark.parametrize("name", ["take:2.mp4", "2024-05-01T10:30:00.mp4", "http:clip.mp4"])
def test_a_local_file_named_like_a_url_is_read_as_the_file(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A relative name whose first colon follows URL scheme letters ('take:2.mp4', an ISO time) made
    FFmpeg look for a protocol of that name: probe and transcode said 'Protocol not found' (or, for
    'http:', that the file was damaged) for a file that was there, one 'alpha2 sample' had just
    written."""
    clip = make_clip(tmp_path / "clip.mp4", frames=4, audio=True)
    shutil.copy(clip.path, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    assert main(["probe", "--json", "--no-decode", name]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not report["errors"] and [f["path"] for f in report["files"]] == [name]
    assert [s["kind"] for s in report["files"][0]["streams"]] == ["video", "audio"]
    assert main(["transcode", name, "out.mkv", "--quiet"]) == 0, capsys.readouterr().err
    with av.open(str(tmp_path / "out.mkv")) as out:
        assert [s.type for s in out.streams] == ["video", "audio"]
        assert sum(1 for _ in out.decode(video=0)) == 4
