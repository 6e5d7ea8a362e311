"""A/V scheduling, pure logic, with a fake clock: due frames, drops, late frames, offset segments."""

from __future__ import annotations

import pytest

from alpha2.apps.avsync import DEFAULT_REFRESH_S, AVScheduler


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


def run_schedule(fps: float, refresh_hz: float, seconds: float, stall_at: float | None = None) -> AVScheduler:
    """Draw at ``refresh_hz`` against a fake clock with a 30 fps stream; returns the scheduler."""
    clock, sched = FakeClock(), AVScheduler()
    pending = [i / fps for i in range(int(seconds * fps))]
    draws = int(seconds * refresh_hz)
    for n in range(draws):
        clock.t = n / refresh_hz
        if stall_at is not None and stall_at <= clock.t < stall_at + 0.1:
            continue  # the display stalled: no draws for 100 ms
        sched.on_draw(clock.t)
        due = None
        while pending and sched.is_due(pending[0], clock.now()):
            if due is not None:
                sched.drop()
            due = pending.pop(0)
        if due is not None:
            sched.presented(due, clock.now())
    return sched


def test_30fps_on_60hz_shows_every_frame_on_time() -> None:
    sched = run_schedule(30, 60, 2.0)
    assert sched.shown == 60 and sched.dropped == 0 and sched.late == 0
    assert sched.total.max_abs <= 1e-9
    assert sched.refresh_s == pytest.approx(1 / 60, rel=1e-3)


def test_refresh_is_learned_and_offsets_stay_within_half_a_refresh() -> None:
    sched = run_schedule(30, 75, 2.0)  # 75 Hz: frames land between refreshes
    assert sched.refresh_s == pytest.approx(1 / 75, rel=0.02)
    assert sched.dropped == 0 and sched.late == 0
    assert sched.total.max_abs <= 1 / 75 / 2 + 1e-3


def test_60fps_on_30hz_drops_every_other_frame() -> None:
    sched = run_schedule(60, 30, 1.0)
    assert sched.shown == 30 and sched.dropped == 29
    assert sched.total.max_abs <= 1 / 30 / 2 + 1e-9


def test_a_stall_drops_and_counts_a_late_frame() -> None:
    sched = run_schedule(30, 60, 1.0, stall_at=0.5)
    assert sched.dropped >= 2
    assert sched.late == 0  # after the stall the newest due frame is shown, near its time
    late = AVScheduler()
    late.presented(0.0, 0.05)  # shown 50 ms after its pts: it missed its refresh
    assert late.late == 1 and late.total.max_abs == pytest.approx(0.05)


def test_early_frame_waits() -> None:
    sched = AVScheduler()
    assert not sched.is_due(0.1, 0.1 - DEFAULT_REFRESH_S)
    assert sched.is_due(0.1, 0.1 - DEFAULT_REFRESH_S / 2)


def test_segments_split_at_seek_and_resume() -> None:
    sched = AVScheduler()
    sched.mark("seek")  # nothing shown yet: the empty start segment is replaced
    assert [s.label for s in sched.segments] == ["seek"]
    sched.presented(1.0, 1.01)
    sched.mark("resume")
    sched.presented(2.0, 1.98)
    sched.presented(2.1, 2.1)
    data = sched.as_dict()
    assert [s["label"] for s in data["segments"]] == ["seek", "resume"]
    assert data["segments"][1]["frames"] == 2
    assert data["segments"][1]["max_abs_ms"] == pytest.approx(20.0)
    assert data["offset_mean_abs_ms"] == pytest.approx(10.0)
    assert data["offset_mean_ms"] == pytest.approx((10 - 20 + 0) / 3, abs=1e-3)
    assert data["shown"] == 3


def test_outlier_intervals_do_not_move_the_refresh() -> None:
    sched = AVScheduler()
    sched.on_draw(0.0)
    sched.on_draw(1.0)  # a 1 s stall
    sched.on_draw(1.0001)  # a burst
    assert sched.refresh_s == DEFAULT_REFRESH_S
