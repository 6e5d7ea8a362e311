"""Faults an outside pass (helper 91) found in ``alpha2 transcode`` with odd but decodable inputs, each
pinned by what the output really holds (read back with PyAV) and what the summary said."""

from __future__ import annotations

import fractions
import json
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.apps import cli
from tests.media import make_clip, swap_mkv_clusters

Capsys = pytest.CaptureFixture[str]

LEVELS = (16, 128, 235)
"""Gray levels (full range, 0-255) of the frames of _full_range_clip, one per frame."""


def _full_range_clip(path: Path, pix_fmt: str) -> str:
    """Flat full-range frames at LEVELS: gray (FFV1, which FFmpeg reads as full range) or yuvj420p
    (MJPEG in AVI, as cameras write)."""
    codec = "ffv1" if pix_fmt == "gray" else "mjpeg"
    with av.open(str(path), "w") as out:
        stream: Any = out.add_stream(codec, rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, pix_fmt
        for i, level in enumerate(LEVELS):
            rgb = np.full((48, 64, 3), level, np.uint8)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame = frame.reformat(format=pix_fmt, dst_color_range=2)
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def _grey_levels(path: str) -> list[float]:
    """Each frame's mean as full-range gray, converted by FFmpeg by the range the decoder reports."""
    with av.open(path) as container:
        return [float(f.to_ndarray(format="gray").mean()) for f in container.decode(video=0)]


@pytest.mark.parametrize(
    ("pix_fmt", "source", "codec", "output", "extra"),
    [
        ("gray", "in.mkv", "prores_ks", "out.mov", []),
        ("gray", "in.mkv", "mpeg2video", "out.mkv", []),
        ("yuvj420p", "in.avi", "libvpx", "out.webm", []),
        ("gray", "in.mkv", "prores_ks", "small.mov", ["--size", "32x24"]),
        ("gray", "in.mkv", "vp8", "vp8.webm", []),  # the codec's name: FFmpeg's libvpx
    ],
)
def test_full_range_into_a_limited_only_encoder_keeps_the_levels(
    tmp_path: Path, capsys: Capsys, pix_fmt: str, source: str, codec: str, output: str, extra: list[str]
) -> None:
    """ProRes, MPEG-1/2 and VP8 pictures are read as limited range whatever the tag: a gray or MJPEG
    (full-range) input went in with its full-range levels, so gray 54 came back 43 and black 16 came
    back 0, the summary saying 'same size and colour'. The levels are converted now, and said."""
    src = _full_range_clip(tmp_path / source, pix_fmt)
    out = str(tmp_path / output)
    assert cli.main(["transcode", src, out, "--codec", codec, *extra]) == 0
    said = " ".join(line.strip() for line in capsys.readouterr().err.splitlines())
    assert f"full range -> limited ({codec}'s pictures are read as limited range)" in said, said
    assert "same size and colour" not in said, said
    got = _grey_levels(out)
    assert len(got) == len(LEVELS)
    for want, level in zip(LEVELS, got, strict=True):
        assert abs(level - want) <= 3, (got, LEVELS)


def test_full_range_into_h264_is_still_kept_full(tmp_path: Path, capsys: Capsys) -> None:
    """An encoder that carries full range keeps it (the fix is for the limited-only encoders)."""
    src = _full_range_clip(tmp_path / "in.avi", "yuvj420p")
    out = str(tmp_path / "out.mp4")
    assert cli.main(["transcode", src, out]) == 0
    assert "full range -> limited" not in capsys.readouterr().err
    with av.open(out) as container:
        assert next(container.decode(video=0)).color_range == 2
    for want, level in zip(LEVELS, _grey_levels(out), strict=True):
        assert abs(level - want) <= 3


def test_gray_into_an_encoder_without_gray_is_not_called_chroma_4_4_4(tmp_path: Path, capsys: Capsys) -> None:
    """A gray picture has no chroma: going to 4:2:0 loses none. The summary said 'mpeg4 has no gray:
    chroma 4:4:4 -> 4:2:0'."""
    src = _full_range_clip(tmp_path / "in.mkv", "gray")
    assert cli.main(["transcode", src, str(tmp_path / "out.mkv"), "--codec", "mpeg4"]) == 0
    said = " ".join(line.strip() for line in capsys.readouterr().err.splitlines())
    assert "mpeg4 has no gray: written as 4:2:0, its chroma neutral" in said, said
    assert "4:4:4" not in said, said


def test_a_copy_says_the_video_timestamps_it_moved(tmp_path: Path, capsys: Capsys) -> None:
    """An MKV whose second and third clusters are swapped (its times go back at 0.533 s): ``--codec
    copy`` moved the late cluster's packets after the early one's (0.8 s of video written 1.066 s long)
    and said nothing, where the transcode says 'video timestamps adjusted 1 (1 backward)'."""
    src = make_clip(tmp_path / "src.mkv", frames=24, gop=4).path
    back = swap_mkv_clusters(src, str(tmp_path / "back.mkv"), first=1)
    out = str(tmp_path / "out.mp4")
    assert cli.main(["transcode", back, out, "--codec", "copy"]) == 0
    assert "video timestamps adjusted 1 (1 backward)" in capsys.readouterr().err
    assert cli.main(["transcode", back, out, "--codec", "copy", "--json", "-y"]) == 0
    assert json.loads(capsys.readouterr().out)["timestamps_adjusted"]["video"] == {"backward": 1}
    with av.open(out) as container:
        times = [f.time for f in container.decode(video=0)]
    assert len(times) == 24 and times == sorted(times)
    # A clean copy says none.
    assert cli.main(["transcode", src, str(tmp_path / "clean.mp4"), "--codec", "copy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["timestamps_adjusted"]["video"] == {}


def _clip_with_audio_at(path: Path, sample_rate: int) -> str:
    """A 1 s MKV: FFV1 video (10 frames) and a FLAC tone at ``sample_rate``."""
    with av.open(str(path), "w") as out:
        video: Any = out.add_stream("ffv1", rate=10)
        video.width, video.height, video.pix_fmt = 32, 24, "yuv420p"
        audio: Any = out.add_stream("flac", rate=sample_rate)
        audio.layout = "stereo"
        for i in range(10):
            frame = av.VideoFrame.from_ndarray(np.full((24, 32, 3), i * 20, np.uint8), format="rgb24")
            frame.pts = i
            for packet in video.encode(frame.reformat(format="yuv420p")):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        tone = (np.sin(np.arange(sample_rate) * 0.05) * 8000).astype(np.int16)
        chunk = 4096
        for start in range(0, sample_rate, chunk):
            part = tone[start : start + chunk]
            samples = np.repeat(part, 2).reshape(1, -1)
            aframe = av.AudioFrame.from_ndarray(samples, format="s16", layout="stereo")
            aframe.sample_rate, aframe.pts = sample_rate, start
            for packet in audio.encode(aframe):
                out.mux(packet)
        for packet in audio.encode(None):
            out.mux(packet)
    return str(path)


def test_audio_resampled_for_its_encoder_is_said(tmp_path: Path, capsys: Capsys) -> None:
    """11025 Hz (or 96 kHz) audio into WebM is encoded as Opus at 48 kHz: the summary said only
    're-encoded flac to libopus: the webm container cannot hold flac', not that the rate changed."""
    src = _clip_with_audio_at(tmp_path / "in.mkv", 11025)
    out = str(tmp_path / "out.webm")
    assert cli.main(["transcode", src, out]) == 0
    said = " ".join(line.strip() for line in capsys.readouterr().err.splitlines())
    assert "resampled 11025 Hz -> 48000 Hz (libopus takes no 11025 Hz)" in said, said
    with av.open(out) as container:
        assert container.streams.audio[0].codec_context.sample_rate == 48000
    # A rate the encoder takes is kept, and nothing is said of it.
    kept = _clip_with_audio_at(tmp_path / "keep.mkv", 48000)
    assert cli.main(["transcode", kept, str(tmp_path / "keep.webm")]) == 0
    assert " Hz -> " not in capsys.readouterr().err


def _late_mkv(path: Path, start_ms: int = 5000) -> str:
    """An H.264 MKV of 6 frames 100 ms apart from ``start_ms`` (key frames every 2), for which FFmpeg
    gives no start time (``start_time`` None), only the packets' own."""
    ms = fractions.Fraction(1, 1000)
    with av.open(str(path), "w") as out:
        stream: Any = out.add_stream(
            "libx264", rate=10, options={"preset": "ultrafast", "tune": "zerolatency"}
        )
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.codec_context.time_base = stream.time_base = ms
        stream.codec_context.gop_size = 2
        for i in range(6):
            rgb = np.full((48, 64, 3), 30 + 40 * i, np.uint8)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
            frame.pts, frame.time_base = start_ms + 100 * i, ms
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def _frame_levels(path: str) -> list[int]:
    with av.open(path) as container:
        return [round(float(f.to_ndarray(format="rgb24").mean())) for f in container.decode(video=0)]


@pytest.mark.parametrize("copy", [False, True])
def test_from_counts_from_the_start_of_an_mkv_that_starts_late(
    tmp_path: Path, capsys: Capsys, copy: bool
) -> None:
    """A Matroska video from 5 s (FFmpeg gives it no start time): ``--from 0.2`` counted from 0, before
    the video, so every frame was written and the summary said 'from 0.000 s'; a copy said the key frame
    before it at the video's start. It counts from the video's first frame now, as --to does."""
    src = _late_mkv(tmp_path / "late.mkv")
    with av.open(src) as container:
        assert container.streams.video[0].start_time is None  # the case: FFmpeg's own
    levels = _frame_levels(src)
    out = str(tmp_path / "out.mp4")
    extra = ["--codec", "copy", "--from", "0.25"] if copy else ["--from", "0.2"]
    assert cli.main(["transcode", src, out, *extra]) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert "part from 0.200 s to the end of the input" in said, said
    assert "timestamps shifted by -5.000 s" in said, said
    got = _frame_levels(out)
    assert len(got) == 4
    for want, level in zip(levels[2:], got, strict=True):
        assert abs(want - level) <= 4, (levels, got)


def test_probe_says_how_long_an_mkv_that_starts_late_lasts(tmp_path: Path, capsys: Capsys) -> None:
    """FFmpeg gives a Matroska video from 5 s no start and a duration counted from 0: ``alpha2 probe``
    said a 0.6 s clip from 10 h was 10:00:00.600 long (and one from 5 s 5.600 s, at 6 kb/s for 56)."""
    src = _late_mkv(tmp_path / "late.mkv")
    assert cli.main(["probe", src]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "Matroska / WebM, 0.600 s," in said and "5.600" not in said, said
    assert cli.main(["probe", "--json", src]) == 0
    facts = json.loads(capsys.readouterr().out)["files"][0]
    assert facts["duration_seconds"] == pytest.approx(0.6)
    assert facts["start_seconds"] == pytest.approx(5.0)
    size = (tmp_path / "late.mkv").stat().st_size
    assert facts["bit_rate"] == pytest.approx(size * 8 / 0.6, rel=0.01)


def test_a_late_mkv_is_counted_and_refused_by_its_own_length(tmp_path: Path, capsys: Capsys) -> None:
    """The progress and --from's check took the Matroska length counted from 0 (5.6 s for a 0.6 s video
    from 5 s): '6/56 frames' ('6/360006' from 10 h), '4/54 frames' with --from 0.2, and --from past the
    end was 'past the last frame' where the input's length is said."""
    src = _late_mkv(tmp_path / "late.mkv")
    assert cli.main(["transcode", src, str(tmp_path / "all.mp4")]) == 0
    assert "6/6 frames" in capsys.readouterr().err
    assert cli.main(["transcode", src, str(tmp_path / "part.mp4"), "--from", "0.2"]) == 0
    assert "4/4 frames" in capsys.readouterr().err
    assert cli.main(["transcode", src, str(tmp_path / "never.mp4"), "--from", "5.2"]) == 1
    said = " ".join(capsys.readouterr().err.split())
    assert "--from 5.2 s is past the end of" in said and "(0.600 s long)" in said, said
    assert not (tmp_path / "never.mp4").exists()
