"""The last frame's duration reaches the output: the encoders hand packets out without durations, and a
muxer then guessed the last frame's from the frames before it (an outside pass: a VFR MP4 of 4.533 s came
out 4.560 s, where ``ffmpeg -i in.mp4 out.mp4`` keeps 4.533)."""

from __future__ import annotations

import fractions
import os
from pathlib import Path
from typing import Any

import av
import pytest

from alpha2.apps import cli
from tests.media import pattern

PTS_MS = (0, 40, 80, 200, 240)  # variable rate: a 120 ms frame in the middle
DURATIONS_MS = (40, 40, 120, 40, 160)  # the last frame shows 160 ms: the file ends at 400 ms


def _vfr_clip(path: Path) -> str:
    """H.264 in Matroska whose packets carry their frames' durations (the last one's is the file's end)."""
    durations = dict(zip(PTS_MS, DURATIONS_MS, strict=True))
    with av.open(os.fspath(path), "w") as out:
        stream: Any = out.add_stream("libx264", rate=25, options={"preset": "ultrafast", "bf": "0"})
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.codec_context.time_base = stream.time_base = fractions.Fraction(1, 1000)

        def mux(packets: list[Any]) -> None:
            for packet in packets:
                packet.duration = durations[packet.pts]
                out.mux(packet)

        for index, pts in enumerate(PTS_MS):
            frame = av.VideoFrame.from_ndarray(pattern(index, 64, 48), format="rgb24").reformat(
                format="yuv420p"
            )
            frame.pts, frame.time_base = pts, fractions.Fraction(1, 1000)
            mux(stream.encode(frame))
        mux(stream.encode(None))
    return os.fspath(path)


def _seconds(path: Path) -> float:
    """The file's length as players read it (the container's duration)."""
    with av.open(os.fspath(path)) as container:
        assert container.duration is not None
        return container.duration / av.time_base


@pytest.mark.parametrize("route", [[], ["--size", "32x24"], ["--gpu"]])
def test_a_vfr_input_s_last_frame_keeps_its_duration(tmp_path: Path, route: list[str]) -> None:
    """Matroska keeps a block's duration as given (0.28 s without it: the last frame shown 40 ms, as the
    one before). MP4's sample durations follow the decode times, whose B-frame delay is not the pictures'
    gaps, so a clip this uneven has no exact length there (``ffmpeg -fps_mode passthrough`` writes 0.28 s
    of it); the outside pass's 30 fps VFR MP4 now comes out 4.533 s as ffmpeg's, where it was 4.560."""
    clip = _vfr_clip(tmp_path / "in.mkv")
    assert _seconds(Path(clip)) == pytest.approx(0.4, abs=0.002)
    out = tmp_path / "out.mkv"
    assert cli.main(["transcode", clip, str(out), "--quiet", *route]) == 0
    assert _seconds(out) == pytest.approx(0.4, abs=0.002)
