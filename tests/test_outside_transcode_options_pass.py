"""An outside pass over ``alpha2 transcode``'s encoder options as an ffmpeg user gives them (helper 112):
a crf, bit rate or preset the chosen encoder has no use for was passed on, ignored by FFmpeg, and said in
the summary as done."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import av
import pytest

from alpha2.apps import cli

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

Capsys = pytest.CaptureFixture[str]


@pytest.mark.parametrize(
    ("codec", "ext", "options", "said"),
    [
        ("prores_ks", "mkv", ["--crf", "5"], "prores_ks takes no crf"),
        ("prores_ks", "mkv", ["--bitrate", "800k"], "prores_ks takes no bitrate"),
        ("prores_ks", "mov", ["--preset", "fast"], "prores_ks takes no preset"),
        ("ffv1", "mkv", ["--bitrate", "1M"], "ffv1 takes no bitrate"),
        ("ffv1", "mkv", ["--preset", "fast"], "ffv1 takes no preset"),
        ("mpeg4", "mp4", ["--preset", "fast"], "mpeg4 takes no preset"),
    ],
)
def test_an_option_the_encoder_would_ignore_is_refused(
    tmp_path: Path, capsys: Capsys, codec: str, ext: str, options: list[str], said: str
) -> None:
    """prores_ks at crf 5 and at crf 30 wrote the same bytes, and at --bitrate 800k 13.6 Mb/s, each said
    're-encoded (prores_ks, crf 5)' / '(prores_ks, 800 kb/s)'; ffv1 and mpeg4 took a preset the same way.
    Now refused in one line, before anything is written."""
    clip = make_clip(tmp_path / "c.mp4", width=64, height=48, frames=3)
    out = tmp_path / f"o.{ext}"
    rc = cli.main(["transcode", clip.path, str(out), "--codec", codec, *options])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert said in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.mp4"]


@pytest.mark.parametrize(
    ("codec", "ext", "options"),
    [
        ("mpeg4", "mp4", ["--crf", "5"]),
        ("libx264", "mp4", ["--preset", "veryfast"]),
        ("libvpx-vp9", "webm", ["--preset", "6", "--crf", "40"]),
        ("prores_ks", "mkv", []),
    ],
)
def test_options_the_encoder_has_still_go_through(
    tmp_path: Path, capsys: Capsys, codec: str, ext: str, options: list[str]
) -> None:
    try:
        av.codec.Codec(codec, "w")
    except av.error.FFmpegError:
        pytest.skip(f"{codec} is not in this FFmpeg build")
    clip = make_clip(tmp_path / "c.mp4", width=64, height=48, frames=3)
    out = tmp_path / f"o.{ext}"
    assert cli.main(["transcode", clip.path, str(out), "--codec", codec, "--quiet", *options]) == 0
    with av.open(str(out)) as container:
        assert len(list(container.decode(video=0))) == 3


@pytest.mark.parametrize("bitrate", [1_000_000, 2_000_000])
def test_mpeg4_meets_its_bit_rate(tmp_path: Path, bitrate: int) -> None:
    """FFmpeg's MPEG-4 part 2 encoder on the input's 1/15360 s clock wrote 3.7 Mb/s whatever was asked
    (300k, 1M, 2M); on one frame's clock it meets the rate."""
    clip = make_clip(tmp_path / "c.mp4", width=320, height=240, frames=30, gop=30)
    out = tmp_path / "o.mp4"
    rc = cli.main(
        ["transcode", clip.path, str(out), "--codec", "mpeg4", "--bitrate", str(bitrate), "--quiet"]
    )
    assert rc == 0
    with av.open(str(out)) as container:
        assert len(list(container.decode(video=0))) == 30
        written = container.streams.video[0].bit_rate or container.bit_rate
    assert 0.7 * bitrate < written < 1.3 * bitrate, written
