"""Faults an outside correctness pass over ``alpha2 transcode --segments K`` found: each joined output is
checked against the same transcode in one pipeline (PyAV reads both). CPU only, small clips."""

from __future__ import annotations

import itertools
from pathlib import Path

import av
import numpy as np
from media import make_clip

from alpha2.api.transcoder import TranscodeOptions, transcode


def _video_timing(path: str) -> tuple[str, set[int], list[int]]:
    """The video stream's average rate, its decode-time steps and every frame's pts (decoded)."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        rate = str(stream.average_rate)  # read while open: a closed container's stream reads freed memory
        dts = [p.dts for p in container.demux(stream) if p.dts is not None]
    with av.open(path) as container:
        pts = [f.pts for f in container.decode(video=0)]
    return rate, {b - a for a, b in itertools.pairwise(dts)}, pts


def test_a_segment_shorter_than_the_encoder_s_delay_keeps_the_decode_times_even(tmp_path: Path) -> None:
    """``--to`` just after a key frame left a last segment of 2 frames, which libx264 encodes with its
    decode times at its pts (no B-frame delay to measure): joined as they were, the decode times jumped
    3 frames at that boundary, and the MP4's sample durations (taken from them) said one frame 3 frames
    long and an average rate of 28.8 fps where one pipeline's said 30."""
    clip = make_clip(tmp_path / "in.mp4", width=64, height=48, frames=30, gop=10)
    options = {"preset": "veryfast", "to_seconds": 22 / 30}  # key frames at 0, 10, 20: the last part 2 frames
    one = tmp_path / "one.mp4"
    seg = tmp_path / "seg.mp4"
    transcode(clip.path, str(one), TranscodeOptions(**options))
    stats = transcode(clip.path, str(seg), TranscodeOptions(segments=3, **options))
    assert stats.segments is not None
    assert [p["frames"] for p in stats.segments["parts"]] == [10, 10, 2]
    one_rate, one_steps, one_pts = _video_timing(str(one))
    seg_rate, seg_steps, seg_pts = _video_timing(str(seg))
    assert seg_pts == one_pts
    assert one_rate == "30" and len(one_steps) == 1
    assert (seg_rate, seg_steps) == (one_rate, one_steps)


def _lumas(path: str) -> tuple[list[int], list[np.ndarray]]:
    with av.open(path) as container:
        frames = list(container.decode(video=0))
    return [f.pts for f in frames], [f.to_ndarray(format="gray").astype(np.float64) for f in frames]


def test_a_turned_input_into_a_container_without_a_display_matrix(tmp_path: Path) -> None:
    """A rotated input into MPEG-TS (no display matrix: the pictures are turned) was refused by every
    segment, 'the input changes within the file ... passthrough True (the file starts with False)': each
    part planned for its own MP4 file, which holds the rotation, not for the output's container."""
    clip = make_clip(tmp_path / "in.mp4", width=64, height=48, frames=30, gop=10, rotation_ccw=90)
    one, seg = tmp_path / "one.ts", tmp_path / "seg.ts"
    transcode(clip.path, str(one), TranscodeOptions(preset="veryfast"))
    stats = transcode(clip.path, str(seg), TranscodeOptions(preset="veryfast", segments=2))
    assert stats.segments is not None and stats.segments["segments"] == 2
    one_pts, one_lumas = _lumas(str(one))
    seg_pts, seg_lumas = _lumas(str(seg))
    assert seg_pts == one_pts and len(seg_pts) == 30
    assert seg_lumas[0].shape == (64, 48)  # turned, as one pipeline turns it
    for a, b in zip(one_lumas, seg_lumas, strict=True):
        assert float(np.mean(np.abs(a - b))) < 4


def test_an_mpeg2_output_says_it_runs_one_pipeline_without_naming_mpeg2_as_joined(tmp_path: Path) -> None:
    """MPEG-2 was never segmented (the joinable codecs named it 'mpeg2video', alpha2's codec name is
    'mpeg2'), and the report contradicted itself: 'mpeg2video (mpeg2) segments cannot be joined here
    (joined: av1, h264, hevc, mpeg2video, mpeg4, vp9)'. Joined MPEG-2 segments came out a frame's
    rounding off one pipeline's times (0.034 s for 0.0333 s), so it stays one pipeline, said truly."""
    clip = make_clip(tmp_path / "in.mp4", width=64, height=48, frames=24, gop=8)
    stats = transcode(clip.path, str(tmp_path / "out.mkv"), TranscodeOptions(codec="mpeg2video", segments=2))
    assert stats.segments is not None and stats.segments["segments"] == 1
    reason = stats.segments["reason"]
    assert "segments cannot be joined here" in reason, reason
    joined = reason.split("(joined: ")[1]
    assert "mpeg2" not in joined and "h264" in joined, reason
