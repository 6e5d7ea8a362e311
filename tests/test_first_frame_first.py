"""The window's first frame goes up before the sound opens (issue 28, start fast): the sound's stream
takes 50-60 ms to open on the 2-core machine, and the first picture waited for it. Now the first draw
presents the frame, the next draw (or the first key, click or wheel) starts the clock at its time, and
``run`` draws that first frame before rendercanvas's loop starts."""

from __future__ import annotations

import pytest

from alpha2.apps import player
from alpha2.apps.player import PlayOptions
from alpha2.apps.sample import write_sample
from alpha2.gpu.geometry import Size


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("first_frame")
    return write_sample(str(root / "clip.mp4"), duration_s=0.5, size=Size(160, 96), audio=False).path


def _playback(clip: str) -> tuple[player.Player, player._WindowPlayback]:
    pytest.importorskip("rendercanvas")
    stats_player = player.Player(clip, PlayOptions(frames=6), player.pipeline.Progress())
    playback = player._WindowPlayback(stats_player)
    playback.open("rendercanvas.offscreen", size=Size(160, 96))
    return stats_player, playback


@pytest.mark.vulkan
def test_the_first_draw_presents_and_the_next_starts_the_clock(clip: str) -> None:
    stats_player, playback = _playback(clip)
    try:
        playback.canvas.draw()
        assert playback.shown is not None and playback.stats.first_frame_s is not None
        assert playback.clock is None, "the first frame is not to wait for the sound"
        assert playback.stats.frames == 1
        playback.canvas.draw()
        assert playback.clock is not None
        assert playback.clock.now() == pytest.approx(playback.shown_pts or 0.0, abs=0.05)
        assert playback.stats.frames == 1  # that draw only started the clock
    finally:
        playback.finish(1.0)
        stats_player.close()


@pytest.mark.vulkan
def test_a_key_right_after_the_first_frame_acts(clip: str) -> None:
    stats_player, playback = _playback(clip)
    try:
        playback.canvas.draw()
        assert playback.clock is None
        playback._on_key({"key": " "})  # the clock starts first, then the pause takes
        assert playback.clock is not None and playback.paused
    finally:
        playback.finish(1.0)
        stats_player.close()


def test_run_draws_before_the_loop_starts(clip: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # run() forces the first draw, then starts the loop: the order of the calls says it.
    calls: list[str] = []

    class Loop:
        def run(self) -> None:
            calls.append("loop")

    class Backend:
        loop = Loop()

    class Canvas:
        def force_draw(self) -> None:
            calls.append("draw")

    playback = player._WindowPlayback.__new__(player._WindowPlayback)
    playback.canvas = Canvas()
    playback.stats = None
    monkeypatch.setattr(player._WindowPlayback, "open", lambda self, module: Backend())
    monkeypatch.setattr(player._WindowPlayback, "finish", lambda self, seconds: None)
    playback.run()
    assert calls == ["draw", "loop"]
