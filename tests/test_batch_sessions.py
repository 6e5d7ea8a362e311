"""frames_at batches spread over several decode sessions (issue "One file at the speed of all the
decoders": ``frames_at`` batches spread over sessions; issue "Frames for machine learning": random
access at NVDEC speed).

The lanes are ordinary ``frames_at_pts`` calls, so the CPU tests drive :class:`BatchSessions` over
software sessions (the front door spreads only NVDEC batches) and compare every frame with one
session's; the H200 test does the same through ``alpha2.open(..., parallel=...)`` on NVDEC.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from alpha2.api.batch_sessions import BatchSessions, plan_lanes
from alpha2.api.devices import open_decoder
from alpha2.ffmpeg_bridge.seeking import FrameIndex
from tests.test_segments import _X264_CLOSED, _X264_OPEN, encode


def _planes(frame: object) -> list[bytes]:
    return [a.tobytes() for a in frame.plane_arrays()]  # type: ignore[attr-defined]


def _index(keys: list[int], frames: int) -> FrameIndex:
    return FrameIndex(pts=tuple(range(frames)), key_pts=tuple(keys), end=frames)


def test_plan_lanes_puts_a_gop_on_one_lane_and_the_latest_on_the_first() -> None:
    index = _index([0, 10, 20, 30], 40)
    pts = [35, 3, 12, 4, 22, 38, 15]
    plan = plan_lanes(index, pts, 4)
    assert len(plan) == 4
    assert sorted(i for lane in plan for i in lane) == list(range(len(pts)))
    assert {pts[i] for i in plan[0]} == {35, 38}  # the latest time's GOP ends the source's session
    for lane in plan:  # one GOP a lane here: four GOPs, four lanes
        assert len({index.key_at_or_before(pts[i]) for i in lane}) == 1


def test_plan_lanes_balances_decoded_frames_and_never_makes_more_lanes_than_gops() -> None:
    index = _index([0, 10, 20, 30], 40)
    # GOP 0 asks frame 9 (10 frames to decode), GOP 10 frame 10 (1), GOP 20 frame 29 (10), GOP 30 frame 30 (1)
    plan = plan_lanes(index, [9, 10, 29, 30], 2)
    assert len(plan) == 2
    loads = [sum({9: 10, 10: 1, 29: 10, 30: 1}[[9, 10, 29, 30][i]] for i in lane) for lane in plan]
    assert sorted(loads) == [11, 11]
    assert len(plan_lanes(index, [1, 2, 3], 4)) == 1
    assert plan_lanes(index, [], 3) == []
    # Times before the first key frame are a group of their own (decoded from the stream's start).
    assert len(plan_lanes(_index([5, 20], 30), [1, 6, 25], 3)) == 3


@pytest.mark.parametrize(
    ("name", "params", "vfr"),
    [("open.mkv", _X264_OPEN, False), ("vfr.mp4", _X264_CLOSED, True), ("closed.ts", _X264_CLOSED, False)],
)
def test_a_spread_batch_equals_one_session(tmp_path: Path, name: str, params: str, vfr: bool) -> None:
    """Random times (duplicates, backwards, between frames) over 3 lanes: the same frames, in the
    order asked, as the session alone; the session then goes on after the latest."""
    path = encode(tmp_path / name, "libx264", params, vfr=vfr)
    rng = random.Random(7)
    with open_decoder(path, None, hwaccel="none") as session:
        duration = session.info.duration_seconds
        assert duration is not None
        times = [rng.uniform(0, duration * 0.98) for _ in range(20)] + [0.0, 0.0]
        pts = [session.target_pts(t) for t in times]
        expected = session.frames_at_pts(pts)
        reference = [(f.metadata.pts, _planes(f)) if f is not None else None for f in expected]
        for f in expected:
            if f is not None:
                f.release()
        after = session.next_frame()
        after_pts = after.metadata.pts if after is not None else None
        if after is not None:
            after.release()
    with open_decoder(path, None, hwaccel="none") as main:
        batches = BatchSessions(path, main, None, sessions=3, reason="test", options={})
        try:
            got = batches.frames_at_pts(pts, None)
            assert batches.last_lanes == 3
            assert [(f.metadata.pts, _planes(f)) if f is not None else None for f in got] == reference
            for f in got:
                if f is not None:
                    f.release()
            nxt = main.next_frame()
            assert (nxt.metadata.pts if nxt is not None else None) == after_pts
            if nxt is not None:
                nxt.release()
            again = batches.frames_at_pts(pts[:5], None)  # the helpers are kept and used again
            assert [(f.metadata.pts, _planes(f)) if f is not None else None for f in again] == reference[:5]
            for f in again:
                if f is not None:
                    f.release()
        finally:
            batches.close()


def test_a_time_past_the_end_is_none_and_an_error_in_a_lane_is_raised(tmp_path: Path) -> None:
    path = encode(tmp_path / "e.mp4", "libx264", _X264_CLOSED)
    with open_decoder(path, None, hwaccel="none") as main:
        batches = BatchSessions(path, main, None, sessions=2, reason="test", options={})
        try:
            got = batches.frames_at_pts([main.target_pts(0.1), main.target_pts(100.0)], None)
            assert got[0] is not None and got[1] is None
            got[0].release()

            def broken(frame: object) -> object:
                raise RuntimeError("keep failed")

            with pytest.raises(RuntimeError, match="keep failed"):
                batches.frames_at_pts([main.target_pts(0.1), main.target_pts(3.0)], broken)  # type: ignore[arg-type]
        finally:
            batches.close()


def test_software_batches_stay_on_one_session_and_say_why(tmp_path: Path) -> None:
    import alpha2

    path = encode(tmp_path / "s.mp4", "libx264", _X264_CLOSED)
    with alpha2.open(path, hwaccel="none", parallel=4) as source:
        frames = source.frames_at([0.1, 1.5, 3.0])
        for f in frames:
            f.release()
        assert "software" in source.batch_reason
    with alpha2.open(path, hwaccel="none") as source:
        assert "not asked" in source.batch_reason


@pytest.mark.cuda
@pytest.mark.nvidia
def test_an_nvdec_batch_spread_over_sessions_equals_one_session(tmp_path: Path) -> None:
    """On NVDEC with parallel=4: 40 random times (and frames_at_index) give the planes one NVDEC
    session gives, every frame on the GPU, over four sessions."""
    import alpha2

    path = encode(tmp_path / "n.mkv", "libx264", _X264_OPEN, size=(320, 240))
    with open_decoder(path, None, hwaccel="cuda") as session:
        reference = {}
        for frame in session:
            with frame:
                reference[frame.metadata.pts] = _planes(frame)
    rng = random.Random(3)
    times = [rng.uniform(0, 3.5) for _ in range(40)]
    with alpha2.open(path, hwaccel="cuda") as single:
        expected = [f.decoded.metadata.pts for f in _taken(single.frames_at(times))]
    with alpha2.open(path, hwaccel="cuda", parallel=4) as source:
        frames = source.frames_at(times)
        try:
            assert [f.decoded.metadata.pts for f in frames] == expected
            assert all(f.on_gpu for f in frames)
            for frame in frames:
                assert _planes(frame) == reference[frame.decoded.metadata.pts]
        finally:
            for frame in frames:
                frame.release()
        assert source.batch_reason.startswith("4 session(s)"), source.batch_reason
        by_index = source.frames_at_index([80, 3, 45, 20, 61])
        try:
            keys = sorted(reference)
            assert [f.decoded.metadata.pts for f in by_index] == [keys[i] for i in (80, 3, 45, 20, 61)]
        finally:
            for frame in by_index:
                frame.release()


def _taken(frames: list[object]) -> list[object]:
    """The frames, released (their facts stay readable)."""
    for frame in frames:
        frame.release()  # type: ignore[attr-defined]
    return frames


def test_a_helper_that_cannot_open_leaves_fewer_sessions_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No silent fallback: when a further session cannot be opened, the batch runs on the sessions
    there are, every frame still the one asked for, and the reason names the failure."""
    from alpha2.api import batch_sessions

    path = encode(tmp_path / "h.mkv", "libx264", _X264_OPEN)
    real = batch_sessions.open_decoder
    opened = []

    def second_only(*args: object, **kwargs: object) -> object:
        if opened:
            raise RuntimeError("no free decoder")
        opened.append(True)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(batch_sessions, "open_decoder", second_only)
    with open_decoder(path, None, hwaccel="none") as main:
        pts = [main.target_pts(t) for t in (0.1, 1.0, 2.0, 3.0)]
        alone = [f for f in main.frames_at_pts(pts) if f is not None]
        expected = [(f.metadata.pts, _planes(f)) for f in alone]
        for f in alone:
            f.release()
        batches = BatchSessions(path, main, None, sessions=4, reason="parallel=4 was asked for", options={})
        try:
            got = batches.frames_at_pts(pts, None)
            assert [(f.metadata.pts, _planes(f)) for f in got if f is not None] == expected
            assert batches.last_lanes == 2
            assert "decode session 3 could not be opened (no free decoder)" in batches.reason
            assert "batches run on 2 session(s)" in batches.reason
            for f in got:
                if f is not None:
                    f.release()
        finally:
            batches.close()
