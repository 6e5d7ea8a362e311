"""A MOV timecode track through ``alpha2 transcode``: MOV and MP4 outputs write it again and Matroska
keeps it as the video's TIMECODE tag, from the video's ``timecode`` tag (FFmpeg's muxers do it), which
the summary says instead of 'alpha2 writes no data tracks'; MPEG-TS drops it, saying why; a cut
(``--from``) does not move it, which is said. Each note is checked against what the output holds."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import av
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

from alpha2.api.media import describe
from alpha2.api.transcode_plan import TranscodeOptions, plan_streams
from alpha2.apps import cli
from alpha2.ffmpeg_bridge.side_streams import InputStream, StreamKind

Capsys = pytest.CaptureFixture[str]
START = "01:00:00:00"


def _timecoded(tmp_path: Path, frames: int = 15) -> str:
    """A MOV whose video is tagged with a start timecode: FFmpeg's muxer adds a tmcd track for it."""
    clip = make_clip(tmp_path / "base.mkv", frames=frames, gop=5)
    path = str(tmp_path / "tc.mov")
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        video.metadata["timecode"] = START
        for packet in inp.demux():
            if packet.dts is not None:
                packet.stream = video
                out.mux(packet)
    return path


def _transcode(capsys: Capsys, src: str, out: str, *extra: str) -> dict[str, Any]:
    code = cli.main(["transcode", src, out, "--json", "-y", *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report: dict[str, Any] = json.loads(captured.out)
    return report


def _timecodes(path: str) -> list[tuple[str, str | None]]:
    """Each stream's kind and timecode tag, as ``alpha2 probe`` reads them."""
    return [(s.kind.value, s.timecode) for s in describe(path, decode=False).file.streams]


def test_plan_says_where_the_timecode_goes() -> None:
    streams = (
        InputStream(0, StreamKind.VIDEO, "h264", timecode=START),
        InputStream(1, StreamKind.DATA, "timecode", timecode=START),
    )
    for muxer, where in (
        ("mov", "the output's timecode track (tmcd)"),
        ("matroska", "the output video's TIMECODE tag"),
    ):
        plan = plan_streams(streams, 0, TranscodeOptions(), muxer)
        assert plan.dropped == () and plan.notes == (
            f"stream 1 (the timecode track): its start {START} kept as {where}",
        )
    plan = plan_streams(streams, 0, TranscodeOptions(from_seconds=0.5), "mp4")
    assert plan.notes[0].endswith(
        f"not moved by --from: the output's first frame, the input's at 0.5 s, is said to be at {START}"
    )
    plan = plan_streams(streams, 0, TranscodeOptions(), "mpegts")
    assert [d.reason for d in plan.dropped] == ["a timecode track: the mpegts container keeps no timecode"]
    # A timecode track the video's tag does not repeat: nothing writes it.
    plan = plan_streams((InputStream(0, StreamKind.VIDEO, "h264"), streams[1]), 0, TranscodeOptions(), "mov")
    assert plan.notes == () and "writes no data tracks" in plan.dropped[0].reason


def test_timecode_kept_in_mov_and_mkv_and_said(tmp_path: Path, capsys: Capsys) -> None:
    src = _timecoded(tmp_path)
    assert _timecodes(src) == [("video", START), ("data", START)]
    for name, held in (
        ("out.mov", [("video", START), ("data", START)]),
        ("out.mkv", [("video", START)]),
    ):
        out = str(tmp_path / name)
        report = _transcode(capsys, src, out)
        assert report["dropped_streams"] == [], report["dropped_streams"]
        assert [n for n in report["stream_notes"] if "timecode" in n] == [
            f"stream 1 (the timecode track): its start {START} kept as "
            + (
                "the output's timecode track (tmcd)"
                if name == "out.mov"
                else "the output video's TIMECODE tag"
            )
        ]
        assert _timecodes(out) == held, name


def test_timecode_not_moved_by_from_and_dropped_by_ts(tmp_path: Path, capsys: Capsys) -> None:
    src = _timecoded(tmp_path)
    out = str(tmp_path / "cut.mov")
    report = _transcode(capsys, src, out, "--from", "0.2")
    (note,) = [n for n in report["stream_notes"] if "timecode" in n]
    assert "not moved by --from" in note, note
    assert _timecodes(out) == [("video", START), ("data", START)]  # what the note says: not moved
    out = str(tmp_path / "out.ts")
    report = _transcode(capsys, src, out)
    assert [d["reason"] for d in report["dropped_streams"]] == [
        "a timecode track: the mpegts container keeps no timecode"
    ]
    assert [tc for _, tc in _timecodes(out)] == [None]


def test_segments_keep_the_timecode_too(tmp_path: Path, capsys: Capsys) -> None:
    src = _timecoded(tmp_path, frames=60)
    out = str(tmp_path / "seg.mov")
    report = _transcode(capsys, src, out, "--segments", "2")
    assert report["segments"]["segments"] == 2, report["segments"]
    assert any("kept as the output's timecode track" in n for n in report["stream_notes"])
    # The join copies the input's video tags also with no other stream to copy (it lost them).
    assert _timecodes(out) == [("video", START), ("data", START)]
