"""``alpha2 play``'s keys against mpv's defaults (its input.conf), found by an outside pass of a person who
uses mpv daily, driven through rendercanvas's offscreen canvas (no display needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from alpha2.apps.keys import PLAYER_BINDINGS, help_lines
from tests.media import make_clip
from tests.test_window_faults import _close, _draw, _playback

LONG_S = 150
"""The long clip's seconds: one frame a second, so two minutes and a half are small and fast to make."""


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    root: Path = tmp_path_factory.mktemp("mpv_keys")
    return make_clip(root / "long.mkv", width=64, height=48, frames=LONG_S, rate=1, gop=10).path


@pytest.mark.vulkan
def test_up_and_down_seek_a_minute_as_mpv(long_clip: str) -> None:
    """mpv's Up / Down seek +60 / -60 s; they went 30 s."""
    playback = _playback(long_clip)
    try:
        _draw(playback)
        _draw(playback)
        playback._on_key({"key": " "})  # paused: the position is where the keys put it
        _draw(playback)
        playback._on_key({"key": "ArrowUp"})
        _draw(playback)
        _draw(playback)
        assert playback.shown_pts == pytest.approx(60.0, abs=1.0)
        playback._on_key({"key": "ArrowUp"})
        _draw(playback)
        _draw(playback)
        assert playback.shown_pts == pytest.approx(120.0, abs=1.0)
        playback._on_key({"key": "ArrowDown"})
        _draw(playback)
        _draw(playback)
        assert playback.shown_pts == pytest.approx(60.0, abs=1.0)
    finally:
        _close(playback)
    assert any(line.startswith("Down / Up") and "-60 / +60 s" in line for line in help_lines(PLAYER_BINDINGS))


@pytest.mark.vulkan
def test_o_shows_the_time_and_the_bar_as_mpv(long_clip: str) -> None:
    """mpv's o shows the progress bar and the time for a moment, playing; it did nothing."""
    playback = _playback(long_clip)
    try:
        _draw(playback)
        _draw(playback)
        playback.osd._active_until = float("-inf")  # the bar of the start has faded
        _draw(playback)
        assert not playback.osd.showing_bar(playback.paused)
        before = _draw(playback)
        playback._on_key({"key": "o"})
        after = _draw(playback)
        assert playback.osd.showing_bar(playback.paused) and not playback.paused
        # The bar's track is drawn over the frame's bottom rows (the picture itself holds still at 1 fps).
        bar = playback.osd.bar_rect(playback._window_size())
        rows = slice(bar.y, bar.y + bar.height)
        assert abs(after[rows] - before[rows]).mean() > 10
    finally:
        _close(playback)
    assert any("o shows it" in line for line in help_lines(PLAYER_BINDINGS))
