"""``.m4v`` outputs: FFmpeg's ``ipod`` muxer (MP4 with the M4V brand), treated as MP4 wherever alpha2's
rules are keyed by the muxer (rotation, pixel shape, subtitles, chapters), and what it refuses that MP4
takes (HEVC, VP9, AV1 video; cover art) said."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import av
import pytest

from alpha2.apps import cli
from alpha2.ffmpeg_bridge.encode import output_container

sys.path.insert(0, os.path.dirname(__file__))
from media import encoder_available, make_clip

Capsys = pytest.CaptureFixture[str]


def test_m4v_names_the_ipod_muxer() -> None:
    assert output_container("clip.M4V") == "ipod"


def test_m4v_transcode_keeps_rotation_and_audio(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "in.mp4", frames=10, rate=25, audio=True, rotation_ccw=90)
    out = str(tmp_path / "out.m4v")
    assert cli.main(["transcode", clip.path, out, "-y", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["frames"] == 10
    assert data["dropped_streams"] == []
    assert open(out, "rb").read(12)[8:12] == b"M4V "  # the ipod muxer's brand
    with av.open(out) as container:
        video = container.streams.video[0]
        assert [s.type for s in container.streams] == ["video", "audio"]
        assert container.streams.audio[0].codec_context.name == "aac"
        frame = next(container.decode(video))
        assert frame.rotation in (90, -270)


@pytest.mark.skipif(not encoder_available("hevc"), reason="no HEVC encoder")
def test_m4v_refuses_hevc_with_the_reason(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "in.mp4", width=64, height=64, frames=4)
    code = cli.main(["transcode", clip.path, str(tmp_path / "out.m4v"), "-y", "--codec", "hevc"])
    assert code != 0
    assert "ipod muxer (.m4v) takes H.264 and MPEG-4 video only" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out.m4v")
