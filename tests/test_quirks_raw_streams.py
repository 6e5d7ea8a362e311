"""Raw elementary streams (.h264, .hevc): no container, no timestamps.

FFmpeg's command line times their frames one after the other from the stream's frame rate; ``-to 1``
keeps the first second, ``-ss`` (as an output option) drops what comes before. alpha2 found no frame
at any time in them ("no decodable video frame at 0.5 s", "--from 0.5 s is past the last frame") and
wrote every frame whatever ``--to`` said.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from media import make_clip, pattern

from alpha2.apps.cli import main
from alpha2.ffmpeg_bridge.decode import DecodeSession

RATE = 25


@pytest.fixture(scope="module")
def raw_h264(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("raw") / "clip.h264"
    make_clip(path, "h264", frames=24, rate=RATE, gop=6)
    with av.open(str(path)) as container:  # the premise: the demuxer gives no timestamps
        assert all(p.pts is None for p in container.demux(container.streams.video[0]) if p.size)
    return str(path)


_REFERENCE: list[np.ndarray] = []


def _index_of(picture: np.ndarray) -> int:
    """Which frame (in presentation order, as PyAV decodes the file) an RGB picture is."""
    errors = [np.abs(picture.astype(int) - ref.astype(int)).mean() for ref in _REFERENCE]
    return int(np.argmin(errors))


@pytest.fixture(scope="module", autouse=True)
def _reference(raw_h264: str) -> None:
    with av.open(raw_h264) as container:
        _REFERENCE[:] = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(_REFERENCE) == 24


def test_frames_are_timed_from_the_rate(raw_h264: str) -> None:
    with DecodeSession(raw_h264, hwaccel="none") as session:
        pts = []
        for frame in session:
            pts.append(frame.metadata.pts)
            frame.release()
        assert session.stats.untimed
        tb = session.info.time_base
    step = round(1 / (RATE * tb))
    assert pts == [i * step for i in range(24)]


@pytest.mark.parametrize("prefetch", [0, 3])
def test_seek_forward_back_and_index(raw_h264: str, prefetch: int) -> None:
    with DecodeSession(raw_h264, hwaccel="none", prefetch=prefetch) as session:
        for seconds, want in ((0.5, 12), (0.1, 2), (0.9, 22), (0.0, 0)):
            session.seek(seconds)
            frame = session.next_frame()
            assert frame is not None, seconds
            got = _index_of(_rgb(frame))
            frame.release()
            assert got == want, (seconds, got)
            following = session.next_frame()  # decoding goes on in order from there
            assert following is not None and _index_of(_rgb(following)) == want + 1
            following.release()
        index = session.frame_index()
        assert len(index) == 24
        frames = session.frames_at([0.2, 0.6])
        assert [_index_of(_rgb(f)) for f in frames if f is not None] == [5, 15]
        for f in frames:
            if f is not None:
                f.release()
        session.seek(5.0)
        assert session.next_frame() is None


def _rgb(frame: object) -> np.ndarray:
    av_frame = frame.keep_alive  # type: ignore[attr-defined]
    return av_frame.to_ndarray(format="rgb24")


def test_transcode_cuts_by_time(raw_h264: str, tmp_path: Path) -> None:
    out = tmp_path / "cut.mp4"
    rc = main(["transcode", raw_h264, str(out), "--from", "0.2", "--to", "0.6", "--quiet", "-y"])
    assert rc == 0
    with av.open(str(out)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) == 10  # 0.2 (frame 5) up to 0.6 (frame 15), which is not written
    assert _index_of(frames[0]) == 5
    assert _index_of(frames[-1]) == 14
    assert np.abs(frames[0].astype(int) - pattern(5, 64, 48).astype(int)).mean() < 12
    assert np.abs(frames[0].astype(int) - _REFERENCE[5].astype(int)).mean() < 4


def test_the_rate_said_is_the_one_the_frames_are_timed_by(tmp_path: Path) -> None:
    """A raw stream's rate is its bitstream's: the demuxer's is its default of 25, so a 30 fps .h264
    was said to be 25 fps while its frames came 1/30 s apart (found by an outside pass)."""
    import alpha2

    path = tmp_path / "thirty.h264"
    make_clip(path, "h264", frames=12, rate=30, gop=6)
    with alpha2.open(str(path)) as source:
        assert source.info.frame_rate == 30.0
        frames = [source.next_frame() for _ in range(3)]
        times = [frame.pts_seconds for frame in frames]
        for frame in frames:
            frame.release()
    assert np.allclose(np.diff(times), 1 / 30)
