"""``alpha2 play``'s frames a second count the seconds it played, not those it stood paused: a 30 fps
file paused for 5 s of 22 ended with 'played play20.mp4: 521 frames (23.0 fps)', which reads as frames
dropped (a person's pass at 80 columns, ninth session of 2026-12-05)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from alpha2.api.playback import PlayStats
from tests.test_window_faults import _close, _draw, _playback, clip  # noqa: F401 (the clip fixture)


def test_fps_leaves_the_paused_seconds_out_and_the_summary_says_them() -> None:
    stats = PlayStats(input="a.mp4", mode="window", frames=300, seconds=15.0, paused_seconds=5.0)
    assert stats.fps == pytest.approx(30.0)
    assert "(30.0 fps, 5.0 s paused)" in stats.summary()
    assert stats.as_dict()["paused_seconds"] == 5.0 and stats.as_dict()["fps"] == pytest.approx(30.0)
    unpaused = PlayStats(input="a.mp4", mode="window", frames=300, seconds=10.0)
    assert "(30.0 fps)" in unpaused.summary()  # no pause, nothing said of one
    assert PlayStats(input="a.mp4", frames=3, seconds=2.0, paused_seconds=2.0).fps == 0.0


@pytest.mark.vulkan
def test_a_window_paused_counts_its_pause(clip: str) -> None:  # noqa: F811 (the fixture)
    playback = _playback(clip)
    try:
        _draw(playback)
        _draw(playback)
        playback._on_key({"key": " "})  # pause
        _draw(playback)
        time.sleep(0.6)
        _draw(playback)
        playback._on_key({"key": " "})  # play on
        _draw(playback)
        time.sleep(0.2)
        _draw(playback)  # playing: this time is not a pause
    finally:
        _close(playback)
    stats = playback.stats
    assert 0.55 <= stats.paused_seconds <= 0.75, stats.paused_seconds
    assert stats.seconds > stats.paused_seconds + 0.15
    assert stats.fps == pytest.approx(stats.frames / (stats.seconds - stats.paused_seconds))


def test_plain_progress_shows_the_rate_given() -> None:
    import io

    from alpha2.api.pipeline import PlainProgress

    out = io.StringIO()
    progress = PlainProgress("play", out, every_frames=1, time_left=False)
    progress.start(600)
    progress.set_rate(29.5)
    progress.update(450)  # the position's count (a start at 15 s): no rate of its own
    progress.close()
    assert "450/600 frames, 29.5 fps" in out.getvalue(), out.getvalue()


@pytest.mark.vulkan
def test_the_window_bar_rate_is_frames_shown_not_the_position(clip: str) -> None:  # noqa: F811
    """Started at 0.5 s of a 1 s clip, the bar counts from frame 16; its rate is the frames shown a
    second of playing (it was the position's count over the elapsed time: 50.8 fps for a 30 fps file
    started at 10 s)."""
    from alpha2.api import pipeline

    class Rates(pipeline.Progress):
        def __init__(self) -> None:
            self.rates: list[float] = []
            self.counts: list[int] = []

        def set_rate(self, fps: float) -> None:
            self.rates.append(fps)

        def update(self, frames: int) -> None:
            self.counts.append(frames)

    playback = _playback(clip, at_s=0.5)
    rates = Rates()
    playback.player.progress = rates
    try:
        for _ in range(4):
            _draw(playback)
            time.sleep(0.05)
        elapsed = time.perf_counter() - playback._file_started
    finally:
        _close(playback)
    assert rates.counts and rates.counts[0] >= 15, rates.counts  # the position's count
    position_rate = rates.counts[-1] / elapsed  # what the bar said before: 15+ frames in a blink
    shown_rate = playback.stats.frames / elapsed
    assert rates.rates and rates.rates[-1] < position_rate / 2, (rates.rates, position_rate)
    assert rates.rates[-1] == pytest.approx(shown_rate, rel=0.5), (rates.rates, shown_rate)


@pytest.mark.vulkan
def test_a_wall_paused_counts_its_pause(tmp_path: Path) -> None:
    """The wall's line ('played a wall of 4 streams, N frames (fps)') counts the seconds played too."""
    pytest.importorskip("rendercanvas")
    from alpha2.api.devices import open_device
    from alpha2.api.streams import StreamGroup
    from alpha2.apps.wall_window import WallWindow
    from alpha2.gpu.geometry import Size
    from tests.media import make_clip
    from tests.test_wall_window import play_stats

    clips = [make_clip(tmp_path / f"{i}.mkv", width=64, height=48, frames=60, rate=30) for i in range(2)]
    device = open_device("none")
    group = StreamGroup([c.path for c in clips], device=device, hwaccel="none")
    window = WallWindow(group, play_stats(clips))
    try:
        window.open("rendercanvas.offscreen", size=Size(200, 200))
        for _ in range(3):
            window.canvas.draw()
        window._on_key({"key": " "})  # pause
        window.canvas.draw()
        time.sleep(0.5)
        window.canvas.draw()
        window._on_key({"key": " "})  # play on
        window.canvas.draw()
        window.finish()
    finally:
        group.close()
        device.close()
    stats = window.stats
    assert 0.45 <= stats.paused_seconds <= 0.7, stats.paused_seconds
