"""Faults an outside pass (helper 118) found in ``alpha2 transcode``, each pinned by what the output
really holds (read back with PyAV) against what the summary says of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps import cli
from tests.media import ENCODERS, pattern

Capsys = pytest.CaptureFixture[str]


def _short_sound(path: Path, video_s: float = 2.0, audio_s: float = 0.5) -> str:
    """An H.264 video of ``video_s`` and a tone of ``audio_s`` from 0 (AAC in .mp4, Opus otherwise)."""
    with av.open(str(path), "w") as out:
        video: Any = out.add_stream("libx264", rate=30, options=dict(ENCODERS["h264"][1]))
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        video.codec_context.gop_size = 10
        sound: Any = out.add_stream("aac" if path.suffix == ".mp4" else "libopus", rate=48000)
        sound.layout = "stereo"
        for i in range(round(video_s * 30)):
            frame = av.VideoFrame.from_ndarray(pattern(i, 64, 48), format="rgb24").reformat(format="yuv420p")
            frame.pts = i
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        chunk = sound.codec_context.frame_size or 960
        for start in range(0, round(audio_s * 48000), chunk):
            t = np.arange(start, start + chunk) / 48000
            tone = (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
            block = av.AudioFrame.from_ndarray(np.stack([tone, tone]), format="fltp", layout="stereo")
            block.sample_rate, block.pts = 48000, start
            for packet in sound.encode(block):
                out.mux(packet)
        for packet in sound.encode(None):
            out.mux(packet)
    return str(path)


def _audio_packets(path: str) -> list[int]:
    """The number of packets of each audio stream of the file at ``path`` (one entry a stream)."""
    with av.open(path) as container:
        counts = {s.index: 0 for s in container.streams.audio}
        if not counts:
            return []
        for packet in container.demux(*container.streams.audio):
            if packet.size:
                counts[packet.stream.index] += 1
    return list(counts.values())


# -- a part that holds none of a short audio stream ------------------------------------------------------


@pytest.mark.parametrize("copy", [False, True], ids=["transcoded", "copied"])
@pytest.mark.parametrize("ext", [".mp4", ".mkv"])
def test_a_part_past_the_end_of_the_audio_says_it_holds_none(tmp_path: Path, ext: str, copy: bool) -> None:
    """--from past the end of an audio stream shorter than the video: the summary said 'audio copied' or
    're-encoded (aac)' while an MP4 held no audio track at all (its muxer leaves an empty one out) and a
    Matroska file an empty one. It is said now: dropped from the MP4, said empty in the Matroska file."""
    src = _short_sound(tmp_path / f"in{ext}")
    out = str(tmp_path / f"out{ext}")
    stats = transcode(src, out, TranscodeOptions(from_seconds=1.0, codec="copy" if copy else "h264"))
    held = _audio_packets(out)
    audio = stats.encoder["audio"]
    kept = [s.index for s in stats.kept_streams if s.kind.value == "audio"]
    if ext == ".mp4":
        assert held == [], held
        assert kept == [], stats.kept_streams
        (dropped,) = [d for d in stats.dropped_streams if d.index == 1]
        assert "none of its sound lies in the part" in dropped.reason, dropped
        assert audio.startswith("dropped: none of its sound lies in the part"), audio
    else:
        assert held == [0], held
        assert kept == [1]
        assert "stream 1 written empty: none of its sound lies in the part" in audio, audio


def test_the_whole_of_the_audio_in_the_part_is_not_said_empty(tmp_path: Path) -> None:
    """The other side: a part that holds some of the short audio keeps it, saying nothing of empty."""
    src = _short_sound(tmp_path / "in.mp4")
    out = str(tmp_path / "out.mp4")
    stats = transcode(src, out, TranscodeOptions(from_seconds=0.2))
    assert _audio_packets(out)[0] > 5
    assert "empty" not in stats.encoder["audio"] and not stats.dropped_streams


def test_the_command_line_says_the_audio_the_part_lacks(tmp_path: Path, capsys: Capsys) -> None:
    src = _short_sound(tmp_path / "in.mp4")
    out = str(tmp_path / "out.mp4")
    assert cli.main(["transcode", src, out, "--from", "1", "--codec", "copy"]) == 0
    captured = capsys.readouterr()
    said = " ".join((captured.out + captured.err).split())
    assert "audio dropped: none of its sound lies in the part" in said, said


# -- an unknown output extension -------------------------------------------------------------------------


def test_an_unknown_extension_names_every_container_transcode_writes(tmp_path: Path, capsys: Capsys) -> None:
    """'alpha2 transcode film.mp4 out.xyz' listed the video containers alone ('alpha2 writes .mp4, ...,
    .gif'), while transcode writes sound alone into .mp3, .m4a, .flac, ... too (its help says so)."""
    src = _short_sound(tmp_path / "in.mp4")
    assert cli.main(["transcode", src, str(tmp_path / "out.xyz")]) == 2
    said = capsys.readouterr().err
    assert "'.xyz'" in said and ".mkv" in said and ".gif" in said, said
    assert ".mp3" in said and ".m4a" in said and ".wav" in said, said
    assert not (tmp_path / "out.xyz").exists()


def _second_picture_early(path: Path) -> str:
    """Two H.264 video streams: the first 2 s long, the second one picture at 0."""
    with av.open(str(path), "w") as out:
        made: list[Any] = []
        for _ in range(2):
            stream: Any = out.add_stream("libx264", rate=30, options=dict(ENCODERS["h264"][1]))
            stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
            stream.codec_context.gop_size = 10
            made.append(stream)
        for stream, count in zip(made, (60, 1), strict=True):
            for i in range(count):
                frame = av.VideoFrame.from_ndarray(pattern(i, 64, 48), format="rgb24")
                frame = frame.reformat(format="yuv420p")
                frame.pts = i
                for packet in stream.encode(frame):
                    out.mux(packet)
            for packet in stream.encode(None):
                out.mux(packet)
    return str(path)


def test_a_copy_s_part_that_holds_none_of_a_second_video_says_so(tmp_path: Path) -> None:
    """The same for a second video stream copied (--codec copy): 'kept beside the video: 1 video' while
    the MP4 held the first video alone."""
    src = _second_picture_early(tmp_path / "in.mkv")
    out = str(tmp_path / "out.mp4")
    stats = transcode(src, out, TranscodeOptions(from_seconds=1.0, codec="copy"))
    with av.open(out) as container:
        assert len(container.streams.video) == 1
    assert [s.index for s in stats.kept_streams] == []
    (dropped,) = stats.dropped_streams
    assert dropped.index == 1 and "none of its pictures lies in the part" in dropped.reason, dropped
    held = str(tmp_path / "out.mkv")
    stats = transcode(src, held, TranscodeOptions(from_seconds=1.0, codec="copy"))
    assert "video stream 1 written empty: none of its pictures lies in the part" in stats.stream_notes
