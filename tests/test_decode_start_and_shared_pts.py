"""Times count from the video's first frame, and frame ``i`` is the ``i``-th frame shown.

A Matroska video of a few frames from 5 s gets no start from FFmpeg (``start_time`` None, alone) or the
container's 0 (beside audio from 0), and a length counted from 0: ``frame_at(0.15)`` gave the frame at
5.0 s (0.15 s counted from 0, before the video), ``seek(0.3)`` and ``frames_at`` likewise, while
``info.start_seconds`` said 0 and ``duration_seconds`` 5.6 s for 0.6 s of video.

Two frames that share a timestamp (duplicates in some AVI and MKV remuxes): ``frames_at_index([2, 3])``
gave the later one twice, index -> timestamp -> the frame on display then.

Frames are told apart by their pictures (each a different gray), not by their timestamps.
"""

from __future__ import annotations

import fractions
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

import alpha2

MS = fractions.Fraction(1, 1000)


def _encode(
    path: Path, times_ms: list[int], *, audio: bool = False, same_as_before: int | None = None
) -> str:
    """An H.264 MKV of ``len(times_ms)`` gray frames (20 + 35 * i; 7 * i past 6 frames) at those times,
    key frames every 2 (with audio from 0 where asked); the packet of frame ``same_as_before`` takes the
    time of the one before it (two frames that share a timestamp)."""
    with av.open(str(path), "w") as out:
        stream: Any = out.add_stream(
            "libx264", rate=10, options={"preset": "ultrafast", "tune": "zerolatency"}
        )
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.codec_context.time_base = stream.time_base = MS
        stream.codec_context.gop_size = 2
        packets = []
        step = 35 if len(times_ms) <= 6 else 7
        for i, ms in enumerate(times_ms):
            rgb = np.full((48, 64, 3), 20 + step * i, np.uint8)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
            frame.pts, frame.time_base = ms, MS
            packets += stream.encode(frame)
        packets += stream.encode(None)
        if audio:
            sound: Any = out.add_stream("aac", rate=48000)
            samples = 48000 * (times_ms[-1] // 1000 + 2)
            for start in range(0, samples, 1024):
                chunk = av.AudioFrame.from_ndarray(
                    np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
                )
                chunk.sample_rate, chunk.pts, chunk.time_base = 48000, start, fractions.Fraction(1, 48000)
                for packet in sound.encode(chunk):
                    out.mux(packet)
            for packet in sound.encode(None):
                out.mux(packet)
        for packet in packets:
            if same_as_before is not None and packet.pts == times_ms[same_as_before]:
                packet.pts = packet.dts = times_ms[same_as_before - 1]
            out.mux(packet)
    return str(path)


def _lumas(path: str) -> list[float]:
    """Each frame's mean luma as FFmpeg decodes the file, in order."""
    with av.open(path) as container:
        return [float(f.to_ndarray()[:48, :64].mean()) for f in container.decode(video=0)]


def _which(frame: alpha2.Frame, lumas: list[float]) -> int:
    """Which frame of the file (by its picture) ``frame`` is."""
    luma = float(frame.plane_arrays()[0][:48, :64].mean())  # (NVDEC's CUDA planes copied to the host)
    found = int(np.argmin([abs(luma - want) for want in lumas]))
    assert abs(luma - lumas[found]) < 2, (luma, lumas)
    frame.release()
    return found


@pytest.fixture(params=["alone", "beside audio"])
def late(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Six frames 100 ms apart from 5 s: FFmpeg gives the video no start of its own."""
    path = _encode(tmp_path / "late.mkv", [5000 + 100 * i for i in range(6)], audio=request.param != "alone")
    with av.open(path) as container:
        stream = container.streams.video[0]
        assert stream.start_time is None or stream.start_time == 0  # the case: not the video's 5 s
    return path


def test_a_late_video_counts_its_times_from_its_first_frame(late: str) -> None:
    lumas = _lumas(late)
    with alpha2.open(late) as source:
        assert source.info.start_seconds == pytest.approx(5.0)
        if not source.info.audio:  # (beside audio, FFmpeg's length is the file's, ending with the sound)
            assert source.duration_seconds == pytest.approx(0.6)  # was 5.6 s: counted from 0
        assert _which(source.frame_at(0.0), lumas) == 0
        assert _which(source.frame_at(0.15), lumas) == 1  # was frame 0: 0.15 s counted from 0
        assert _which(source.frame_at(0.45), lumas) == 4
        first = source.frame_at(0.0)
        assert first.pts_seconds == pytest.approx(5.0)
        assert source.frame_at(first.pts_seconds - source.info.start_seconds).pts_seconds == pytest.approx(
            5.0
        )
        first.release()
    with alpha2.open(late) as source:
        source.seek(0.3)
        frame = source.next_frame()
        assert frame is not None and _which(frame, lumas) == 3
        source.seek(0.1)
        assert [_which(f, lumas) for f in _taken(source)] == [1, 2, 3, 4, 5]
    with alpha2.open(late) as source:
        assert [_which(f, lumas) for f in source.frames_at([0.55, 0.0, 0.25, 0.35])] == [5, 0, 2, 3]
        assert [_which(f, lumas) for f in source.frames_at_index([0, 2, -1])] == [0, 2, 5]
    with alpha2.open(late) as source:
        times = [f.pts_seconds for f in source]
        assert times == pytest.approx([5.0 + 0.1 * i for i in range(6)])


def test_a_video_that_starts_late_alone_ends_at_its_length(tmp_path: Path) -> None:
    """Past its 0.6 s, a video from 5 s has no frame (5.2 s counted from 0 was its frame 2)."""
    path = _encode(tmp_path / "late.mkv", [5000 + 100 * i for i in range(6)])
    with alpha2.open(path) as source:
        with pytest.raises(alpha2.EndOfStreamError, match=r"0\.600 s long"):
            source.frame_at(5.2)


def _taken(source: alpha2.VideoSource) -> list[alpha2.Frame]:
    frames = []
    while (frame := source.next_frame()) is not None:
        frames.append(frame)
    return frames


@pytest.mark.parametrize("start_ms", [0, 2000])
def test_a_video_with_a_start_of_its_own_is_counted_as_before(tmp_path: Path, start_ms: int) -> None:
    """Thirty frames, long enough for FFmpeg to time the stream: its start is its own (0, or 2 s)."""
    long = _encode(tmp_path / "long.mkv", [start_ms + 100 * i for i in range(30)])
    with av.open(long) as container:
        assert container.streams.video[0].start_time == start_ms
    lumas = _lumas(long)
    with alpha2.open(long) as source:
        assert source.info.start_seconds == pytest.approx(start_ms / 1000)
        assert source.duration_seconds == pytest.approx(3.0)
        assert _which(source.frame_at(0.25), lumas) == 2
        assert [_which(f, lumas) for f in source.frames_at([1.05, 0.0, 2.95])] == [10, 0, 29]
        source.seek(1.5)
        frame = source.next_frame()
        assert frame is not None and _which(frame, lumas) == 15


def test_frames_that_share_a_timestamp_are_each_found_by_index(tmp_path: Path) -> None:
    """Frames 2 and 3 both at 0.2 s: index 2 is the first shown, 3 the second (was the second twice)."""
    times = [100 * i for i in range(6)]
    path = _encode(tmp_path / "dup.mkv", times, same_as_before=3)
    lumas = _lumas(path)
    assert len({round(luma) for luma in lumas}) == 6
    with av.open(path) as container:
        assert [p.pts for p in container.demux(video=0) if p.pts is not None] == [0, 100, 200, 200, 400, 500]
    with alpha2.open(path) as source:
        assert [_which(f, lumas) for f in source.frames_at_index(range(6))] == [0, 1, 2, 3, 4, 5]
    with alpha2.open(path) as source:
        assert [_which(f, lumas) for f in source.frames_at_index([3, 2, 4, 2])] == [3, 2, 4, 2]
        # One at a time, forward and back, and after a time ask that left the later one on display.
        assert [_which(f, lumas) for f in source.frames_at_index([2])] == [2]
        assert [_which(f, lumas) for f in source.frames_at_index([3])] == [3]
        assert [_which(f, lumas) for f in source.frames_at_index([2])] == [2]
        assert _which(source.frame_at(0.2), lumas) == 3  # by time: the one on display at 0.2 s
        assert [_which(f, lumas) for f in source.frames_at_index([-4, -3])] == [2, 3]
    with alpha2.open(path) as source:  # iteration is untouched: every frame once, in order
        assert [_which(f, lumas) for f in _taken(source)] == [0, 1, 2, 3, 4, 5]
