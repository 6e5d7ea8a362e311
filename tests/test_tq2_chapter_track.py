"""``alpha2 transcode`` of an MP4 with chapters: MP4 stores them as a text track that FFmpeg's mov
demuxer reads as the file's chapters and shows as a data stream. The chapters are written to the output;
the summary says the chapter track's chapters were kept, not that the track was dropped."""

from __future__ import annotations

import fractions
import json
import os
import sys
from pathlib import Path

import av
import pytest

from alpha2.apps import cli
from alpha2.ffmpeg_bridge.side_streams import probe_streams

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

Capsys = pytest.CaptureFixture[str]


def _with_chapters(tmp_path: Path) -> str:
    clip = make_clip(tmp_path / "c.mp4", frames=20, rate=25)
    path = str(tmp_path / "chapters.mp4")
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        stream = out.add_stream_from_template(inp.streams.video[0])
        tb = fractions.Fraction(1, 1000)
        out.set_chapters(
            [
                {"id": 1, "start": 0, "end": 400, "time_base": tb, "metadata": {"title": "one"}},
                {"id": 2, "start": 400, "end": 800, "time_base": tb, "metadata": {"title": "two"}},
            ]
        )
        for packet in inp.demux(inp.streams.video[0]):
            if packet.dts is None:
                continue
            packet.stream = stream
            out.mux(packet)
    return path


def test_chapter_track_is_found(tmp_path: Path) -> None:
    streams = probe_streams(_with_chapters(tmp_path))
    assert [s.chapter_track for s in streams] == [False, True]


@pytest.mark.parametrize("ext", [".mp4", ".mkv"])
def test_chapters_kept_not_called_dropped(tmp_path: Path, capsys: Capsys, ext: str) -> None:
    src = _with_chapters(tmp_path)
    out = str(tmp_path / f"out{ext}")
    assert cli.main(["transcode", src, out, "-y", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dropped_streams"] == []
    assert any("chapter track" in n and "kept" in n for n in data["stream_notes"]), data["stream_notes"]
    with av.open(out) as container:
        assert [c["metadata"].get("title") for c in container.chapters()] == ["one", "two"]
    assert cli.main(["transcode", src, out, "-y"]) == 0
    err = capsys.readouterr().err
    assert "dropped stream" not in err
    assert "chapters kept" in err


def test_chapter_track_into_a_container_without_chapters(tmp_path: Path, capsys: Capsys) -> None:
    src = _with_chapters(tmp_path)
    assert cli.main(["transcode", src, str(tmp_path / "out.ts"), "-y", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["reason"] for d in data["dropped_streams"]] == [
        "the chapter track: the mpegts container holds no chapters"
    ]


@pytest.mark.parametrize(
    ("ext", "reasons"), [(".mkv", []), (".ts", ["the mpegts container holds no chapters"])]
)
def test_a_copy_says_the_chapter_track_as_a_transcode_does(
    tmp_path: Path, capsys: Capsys, ext: str, reasons: list[str]
) -> None:
    """--codec copy said the chapter track 'dropped: alpha2 copies no data streams' while the output
    held its chapters; now said kept, or dropped for the container's want of chapters."""
    src = _with_chapters(tmp_path)
    out = str(tmp_path / f"out{ext}")
    assert cli.main(["transcode", src, out, "-y", "--json", "--codec", "copy"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["reason"].removeprefix("the chapter track: ") for d in data["dropped_streams"]] == reasons
    kept = [n for n in data["stream_notes"] if "chapter track" in n and "kept" in n]
    assert bool(kept) is not bool(reasons), data["stream_notes"]


def test_probe_names_the_chapter_track(tmp_path: Path, capsys: Capsys) -> None:
    src = _with_chapters(tmp_path)
    assert cli.main(["probe", src]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "#1" in line]
    assert lines and "chapters" in lines[0] and "unknown codec" not in lines[0], lines
