"""Segment-parallel decoding gives what one session gives: the same frames, bit for bit, with the same
timestamps, in the same order (open GOPs, B-pyramids, VFR, HEVC, MPEG-TS), with bounded buffers."""

from __future__ import annotations

import fractions
import os
import threading
import time
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api.devices import open_decoder
from alpha2.api.segments import SegmentReader, plan_chunks
from alpha2.ffmpeg_bridge.decode import DecodeSession
from alpha2.ffmpeg_bridge.index import KeyframeIndex, keyframe_index
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.surfaces import SurfaceBudget
from tests.media import pattern

_X264_OPEN = "keyint=12:min-keyint=12:scenecut=0:open-gop=1:bframes=3:b-pyramid=normal"
_X264_CLOSED = "keyint=10:min-keyint=10:scenecut=0:bframes=2"
_X265_OPEN = "keyint=12:min-keyint=12:scenecut=0:open-gop=1:bframes=3:log-level=error"


def encode(
    path: Path,
    codec: str,
    params: str,
    frames: int = 90,
    *,
    vfr: bool = False,
    size: tuple[int, int] = (96, 64),
) -> str:
    """A clip made for segment tests: GOPs of about 12 frames, B-frames, optionally jittered timing."""
    time_base = fractions.Fraction(1, 1000) if vfr else fractions.Fraction(1, 25)
    with av.open(os.fspath(path), "w") as out:
        options = {"x264-params": params} if codec == "libx264" else {"x265-params": params}
        stream: Any = out.add_stream(codec, rate=25, options=options)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.codec_context.time_base = time_base
        stream.time_base = time_base
        t = 0
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(pattern(i, *size), format="rgb24").reformat(format="yuv420p")
            frame.pts = t if vfr else i
            frame.time_base = time_base
            t += (40, 33, 47, 40, 29)[i % 5]
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return os.fspath(path)


def one_session(path: str) -> list[tuple[int | None, list[bytes]]]:
    with open_decoder(path, None, hwaccel="none") as session:
        out = []
        for frame in session:
            with frame:
                out.append((frame.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
        return out


def segmented(path: str, sessions: int, **options: Any) -> tuple[list[tuple[int | None, list[bytes]]], Any]:
    with SegmentReader(path, sessions=sessions, hwaccel="none", **options) as reader:
        out = []
        for frame in reader:
            with frame:
                out.append((frame.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
        return out, reader.report


SEGMENT_CLIPS = [
    ("closed.mp4", "libx264", _X264_CLOSED, False),
    ("open-pyramid.mp4", "libx264", _X264_OPEN, False),
    ("open-pyramid.mkv", "libx264", _X264_OPEN, False),
    ("vfr.mkv", "libx264", _X264_OPEN, True),
    ("vfr.mp4", "libx264", _X264_CLOSED, True),
    ("hevc-open.mkv", "libx265", _X265_OPEN, False),
    ("closed.ts", "libx264", _X264_CLOSED, False),
]
"""The clips segment-parallel decoding is checked on (name, encoder, its parameters, VFR): closed and
open GOPs with B-pyramids, MP4, Matroska and MPEG-TS, jittered timing, HEVC."""


@pytest.mark.parametrize(("name", "codec", "params", "vfr"), SEGMENT_CLIPS)
def test_segments_equal_one_session(tmp_path: Path, name: str, codec: str, params: str, vfr: bool) -> None:
    path = encode(tmp_path / name, codec, params, vfr=vfr)
    reference = one_session(path)
    assert len(reference) == 90
    for sessions in (2, 3):
        frames, report = segmented(path, sessions, min_packets=12)
        assert report.sessions == sessions and report.chunks >= 4, report
        assert [pts for pts, _ in frames] == [pts for pts, _ in reference]
        for (pts, planes), (_, expected) in zip(frames, reference):
            assert planes == expected, f"frame at pts {pts} differs ({name}, {sessions} sessions)"
        assert report.frames == len(reference)


def test_the_open_gop_clips_have_leading_pictures(tmp_path: Path) -> None:
    """The open-GOP cases above mean something: after a key frame in decode order come pictures shown
    before it (they reference the GOP before, so only the chunk before can decode them)."""
    path = encode(tmp_path / "open.mkv", "libx264", _X264_OPEN)
    with av.open(path) as container:
        packets = [(p.pts, p.is_keyframe) for p in container.demux(video=0) if p.size]
    leading = 0
    for i, (pts, key) in enumerate(packets):
        if key and i > 0:
            leading += sum(1 for later, _ in packets[i + 1 : i + 4] if later is not None and later < pts)
    assert leading > 0


def test_plan_chunks_takes_whole_gops() -> None:
    index = KeyframeIndex(
        time_base=fractions.Fraction(1, 25),
        start_time=0,
        keyframes=(0, 12, 24, 36, 48, 60),
        packets_from=(0, 12, 24, 36, 48, 60),
        packets=66,
    )
    chunks = plan_chunks(index, min_packets=20)
    assert [(c.start_pts, c.end_pts) for c in chunks] == [(None, 24), (24, 48), (48, None)]
    assert sum(c.packets for c in chunks) == 66
    # A last chunk of fewer than half the minimum joins the one before.
    assert [c.end_pts for c in plan_chunks(index, min_packets=30)] == [36, None]
    with pytest.raises(InvalidInputError):
        plan_chunks(index, min_packets=0)


def test_one_chunk_is_one_session(tmp_path: Path) -> None:
    path = encode(tmp_path / "short.mp4", "libx264", _X264_CLOSED, frames=20)
    frames, report = segmented(path, 4)
    assert report.sessions == 1 and "one session" in report.reason
    assert len(frames) == 20


def test_keyframe_index(tmp_path: Path) -> None:
    path = encode(tmp_path / "k.mp4", "libx264", _X264_CLOSED, frames=40)
    index = keyframe_index(path)
    assert [index.seconds(pts) for pts in index.keyframes] == pytest.approx([0.0, 0.4, 0.8, 1.2])
    assert index.packets == 40
    assert index.packets_from == (0, 10, 20, 30)


def test_buffers_are_bounded_and_close_stops_the_sessions(tmp_path: Path) -> None:
    path = encode(tmp_path / "b.mp4", "libx264", _X264_CLOSED, frames=120)
    before = threading.active_count()
    reader = SegmentReader(path, sessions=3, hwaccel="none", ahead=4, min_packets=10)
    first = reader.next_frame()
    assert first is not None
    first.release()
    # The reader holds chunk 0; the others wait with at most ``ahead`` frames each.
    for waiting in reader._queues:
        assert waiting.qsize() <= 4
    reader.close()
    assert threading.active_count() <= before
    with pytest.raises(Exception, match="closed"):
        reader.next_frame()


def test_close_on_a_sessions_own_thread_frees_the_sessions(tmp_path: Path, monkeypatch: Any) -> None:
    """A VideoSource dropped unclosed is closed by its finalizer on whichever thread the garbage
    collector runs on, a session's own among them: that close must not fail there (a thread cannot join
    itself) and must still close every decoder (it raised RuntimeError, and left them open)."""
    path = encode(tmp_path / "c.mp4", "libx264", _X264_CLOSED, frames=60)
    made = threading.Event()
    once = threading.Lock()
    readers: list[SegmentReader] = []
    failures: list[BaseException] = []
    decode = DecodeSession.next_frame

    def next_frame(session: DecodeSession) -> Any:
        if threading.current_thread().name == "alpha2-segment-1" and once.acquire(blocking=False):
            made.wait(5.0)  # the reader is made (its threads start in its constructor)
            try:
                readers[0].close()  # as a finalizer run by the garbage collector here would
            except BaseException as exc:
                failures.append(exc)
        return decode(session)

    monkeypatch.setattr(DecodeSession, "next_frame", next_frame)
    readers.append(SegmentReader(path, sessions=2, hwaccel="none", ahead=4, min_packets=10))
    made.set()
    reader = readers[0]
    deadline = time.monotonic() + 10.0
    while not all(session.closed for session in reader._sessions) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not failures, failures
    assert all(session.closed for session in reader._sessions)
    assert not any(thread.is_alive() for thread in reader._threads)


def two_videos(path: Path, frames: int = 60) -> str:
    """Two H.264 video streams in one file, 96x64 and 64x48, key frames every 10 frames."""
    with av.open(os.fspath(path), "w") as out:
        streams: list[Any] = []
        for size in ((96, 64), (64, 48)):
            stream: Any = out.add_stream("libx264", rate=25, options={"x264-params": _X264_CLOSED})
            stream.width, stream.height = size
            stream.pix_fmt = "yuv420p"
            streams.append(stream)
        for i in range(frames):
            for stream in streams:
                picture = pattern(i, stream.width, stream.height)
                frame = av.VideoFrame.from_ndarray(picture, format="rgb24").reformat(format="yuv420p")
                frame.pts = i
                out.mux(stream.encode(frame))
        for stream in streams:
            out.mux(stream.encode(None))
    return os.fspath(path)


@pytest.mark.parametrize("decoders", ["threads", "processes"])
def test_session_options_reach_every_session(tmp_path: Path, decoders: str) -> None:
    """``stream_index`` and the other session options go to every session (the sessions read the first
    video stream whatever was asked for, as ``alpha2.open(path, parallel=2, stream_index=1)`` did)."""
    path = two_videos(tmp_path / "two.mkv")
    with open_decoder(path, None, hwaccel="none", stream_index=1) as session:
        reference = []
        for frame in session:
            with frame:
                reference.append((frame.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
    frames, report = segmented(path, 2, min_packets=10, decoders=decoders, stream_index=1, threads=1)
    assert report.sessions == 2 and report.chunks >= 3, report
    assert len(frames) == len(reference) == 60
    assert frames == reference


def test_bad_arguments_are_refused_by_name(tmp_path: Path) -> None:
    path = encode(tmp_path / "a.mp4", "libx264", _X264_CLOSED, frames=20)
    for options, message in [
        ({"sessions": "2"}, "sessions must be a whole number"),
        ({"sessions": 0}, "sessions must be 1 or more"),
        ({"sessions": 2, "ahead": 2.5}, "ahead must be a whole number"),
        ({"sessions": 2, "min_packets": None}, "min_packets must be a whole number"),
        ({"sessions": 2, "stream": 1}, "unknown option 'stream'"),
        ({"sessions": 2, "decoders": "processes", "budget": SurfaceBudget(max_surfaces=8)}, "budget"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            SegmentReader(path, **{"hwaccel": "none", **options})
    with pytest.raises(InvalidInputError, match="source must be a path"):
        SegmentReader(b"not a path", sessions=2)  # type: ignore[arg-type]
    # 'cuda:0' was taken and failed deep inside; a typo of hwaccel at the first session's open
    with pytest.raises(InvalidInputError, match="device must be an alpha2 Device or None, got str"):
        SegmentReader(path, sessions=2, device="cuda:0")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="hwaccel must be one of"):
        SegmentReader(path, sessions=2, hwaccel="cudaa")


def test_a_file_object_is_refused(tmp_path: Path) -> None:
    path = encode(tmp_path / "f.mp4", "libx264", _X264_CLOSED, frames=20)
    with open(path, "rb") as handle, pytest.raises(InvalidInputError, match="give a path"):
        SegmentReader(handle, sessions=2)


def test_planes_match_numpy(tmp_path: Path) -> None:
    """Sanity: the frames are real pictures (the gradient's level changes with the index)."""
    path = encode(tmp_path / "n.mp4", "libx264", _X264_CLOSED, frames=30)
    frames, _ = segmented(path, 2, min_packets=10)
    lumas = [np.frombuffer(planes[0], np.uint8).mean() for _, planes in frames]
    assert len(set(np.round(lumas, 3))) > 20


@pytest.mark.cuda
@pytest.mark.nvidia
@pytest.mark.parametrize("codec", ["libx264", "libx265"])
def test_nvdec_segments_equal_one_nvdec_session(tmp_path: Path, codec: str) -> None:
    """On NVDEC: the same planes (downloaded) and timestamps as one NVDEC session, through the frame pool."""
    params = _X264_OPEN if codec == "libx264" else _X265_OPEN
    path = encode(tmp_path / "n.mkv", codec, params, size=(320, 240))
    with open_decoder(path, None, hwaccel="cuda") as session:
        reference = []
        for frame in session:
            with frame:
                assert frame.on_gpu
                reference.append((frame.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
    with SegmentReader(path, sessions=3, hwaccel="cuda", min_packets=12) as reader:
        frames = []
        for frame in reader:
            with frame:
                assert frame.on_gpu
                frames.append((frame.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
        assert reader.report.pooled == len(frames)
        assert all(h["active"] == "cuda" for h in reader.report.hwaccel)
    assert [p for p, _ in frames] == [p for p, _ in reference]
    assert all(a == b for (_, a), (_, b) in zip(frames, reference))


def test_open_parallel_reads_in_order_like_one_session(tmp_path: Path) -> None:
    import alpha2

    path = encode(tmp_path / "p.mkv", "libx264", _X264_OPEN)
    reference = one_session(path)
    with alpha2.open(path, hwaccel="none", parallel=3) as source:
        got = []
        for frame in source:
            got.append((frame.decoded.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
        report = source.segments
        assert report is not None and report.sessions == 2 == report.chunks, source.parallel_reason
    assert got == reference


def test_open_parallel_hands_back_to_one_session_on_a_seek(tmp_path: Path) -> None:
    import alpha2

    path = encode(tmp_path / "s.mp4", "libx264", _X264_CLOSED)
    reference = one_session(path)
    with alpha2.open(path, hwaccel="none", parallel=2) as source:
        first = source.next_frame()
        assert first is not None and source.segments is not None
        first.release()
        frame = source.frame_at(2.0)  # the 51st frame at 25 fps
        assert frame.decoded.metadata.pts == reference[50][0]
        frame.release()
        assert source.segments is None and "seek" in source.parallel_reason
        nxt = source.next_frame()
        assert nxt is not None and nxt.decoded.metadata.pts == reference[51][0]
        nxt.release()


def test_open_parallel_auto_is_one_session_in_software(tmp_path: Path) -> None:
    import alpha2

    path = encode(tmp_path / "a.mp4", "libx264", _X264_CLOSED, frames=30)
    with alpha2.open(path, hwaccel="none", parallel="auto") as source:
        assert sum(1 for _ in source) == 30
        assert source.segments is None and "software" in source.parallel_reason


def test_open_parallel_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    import alpha2

    path = encode(tmp_path / "r.mp4", "libx264", _X264_CLOSED, frames=20)
    with pytest.raises(InvalidInputError, match="give its path"):
        alpha2.open(Path(path).read_bytes(), parallel=2)
    with pytest.raises(InvalidInputError, match="parallel must be"):
        alpha2.open(path, parallel=0)


@pytest.mark.cuda
@pytest.mark.nvidia
def test_an_nvdec_batch_larger_than_the_decoders_pool(tmp_path: Path) -> None:
    """frames_at of 40 NVDEC frames: the batch is copied into the frame pool (NVDEC lends about 14
    surfaces), every frame equals the one asked for, and all are held at once."""
    import alpha2

    path = encode(tmp_path / "b.mkv", "libx264", _X264_OPEN, size=(320, 240))
    with open_decoder(path, None, hwaccel="cuda") as session:  # NV12, as the batch's frames
        reference = {}
        for frame in session:
            with frame:
                reference[frame.metadata.pts] = [a.tobytes() for a in frame.plane_arrays()]
    times = [i * 0.04 for i in range(89, 49, -1)]  # 40 frames, asked backwards
    with alpha2.open(path, hwaccel="cuda") as source:
        frames = source.frames_at(times)
        try:
            assert len(frames) == 40 and all(f.on_gpu for f in frames)
            for frame in frames:
                assert [a.tobytes() for a in frame.plane_arrays()] == reference[frame.decoded.metadata.pts]
        finally:
            for frame in frames:
                frame.release()


def test_open_with_parallel_reads_the_stream_asked_for_with_its_options(tmp_path: Path) -> None:
    """``alpha2.open(path, parallel=2, stream_index=1)`` read stream 0 (96x64): the source passed none
    of its options to the segment reader. A budget keeps the sessions on threads, where it counts."""
    import alpha2

    path = two_videos(tmp_path / "two.mkv", frames=200)
    budget = SurfaceBudget(max_surfaces=256)
    with alpha2.open(path, hwaccel="none", stream_index=1) as source:
        reference = [(f.pts_seconds, f.width, f.height) for f in source]
    with alpha2.open(path, hwaccel="none", stream_index=1, parallel=2, budget=budget) as source:
        frames = []
        for frame in source:
            frames.append((frame.pts_seconds, frame.width, frame.height))
            frame.release()
        report = source.segments
    assert report is not None and report.sessions == 2 and report.decoders == "threads", report
    assert frames == reference and len(frames) == 200 and frames[0][1:] == (64, 48)
