"""A Matroska track that starts late: FFmpeg's muxer tags where it ends (its DURATION tag, from the file's
0), not how long it lasts. A video from 0.48 s tagged 4.48 s was taken as 4.48 s long: the transcode said
'the input ends before the duration its container announces' of a whole file, and the progress expected
12 frames too many (an outside pass)."""

from __future__ import annotations

import fractions
import os
from pathlib import Path
from typing import Any

import av
import numpy as np

from alpha2.ffmpeg_bridge.decode import DecodeSession
from tests.media import pattern


def _late_video(path: Path) -> str:
    """100 frames of 25 fps video from 0.48 s, and 4.5 s of silence from 0, in Matroska."""
    with av.open(os.fspath(path), "w") as out:
        video: Any = out.add_stream("libx264", rate=25, options={"preset": "ultrafast"})
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio: Any = out.add_stream("libopus", rate=48000)
        audio.layout = "stereo"
        for index in range(100):
            frame = av.VideoFrame.from_ndarray(pattern(index, 64, 48), format="rgb24").reformat(
                format="yuv420p"
            )
            frame.pts, frame.time_base = 12 + index, fractions.Fraction(1, 25)  # from 0.48 s
            out.mux(video.encode(frame))
        out.mux(video.encode(None))
        for index in range(0, 48000 * 9 // 2, 960):
            chunk = av.AudioFrame.from_ndarray(np.zeros((1, 1920), np.float32), format="flt", layout="stereo")
            chunk.sample_rate, chunk.pts = 48000, index
            out.mux(audio.encode(chunk))
        out.mux(audio.encode(None))
    return os.fspath(path)


def test_a_late_track_s_tagged_end_is_not_taken_for_its_length(tmp_path: Path) -> None:
    path = _late_video(tmp_path / "late.mkv")
    with av.open(path) as container:
        stream = container.streams.video[0]
        assert stream.duration is None and stream.start_time and stream.start_time > 0
    with DecodeSession(path, hwaccel="none") as session:
        info = session.info
        assert info.duration is not None
        assert float(info.duration * info.time_base) == 4.0  # 100 frames at 25 fps, not the tag's 4.48 s
        assert info.expected_frames == 100
        frames = 0
        for frame in session:
            frames += 1
            frame.release()
        assert frames == 100 and not session.stats.truncated and session.stats.decode_errors == 0
