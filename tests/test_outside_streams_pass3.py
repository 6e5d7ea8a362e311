"""An outside pass of the multi-stream and parallel parts (the wall, StreamGroup, segment-parallel
reading, decoder processes): each test is a fault found and fixed, with its input made here by PyAV."""

from __future__ import annotations

from pathlib import Path

import pytest
from media import make_clip

from alpha2.api.playback import PlayOptions
from alpha2.apps.wall import play_wall

NO_DISPLAY = {"PATH": "/usr/bin"}


@pytest.mark.vulkan
def test_offscreen_wall_loops_until_frames(tmp_path: Path) -> None:
    """'alpha2 play a.mp4 b.mp4 --wall --offscreen --loop --frames 400' stopped at the longest input's
    end (120 frames), where --help says a looping wall plays all again, offscreen until --frames; the
    window looped, the offscreen run ignored --loop."""
    long = make_clip(tmp_path / "long.mp4", frames=12).path
    short = make_clip(tmp_path / "short.mp4", frames=5).path
    options = PlayOptions(offscreen=True, loop=True, frames=30, hwaccel="none")
    stats = play_wall([long, short], options, environ=NO_DISPLAY)
    assert stats.frames == 30
    assert [s["frames_shown"] for s in stats.streams] == [30, 15]  # 12+12+6 frames; 5 a round of 12


@pytest.mark.vulkan
def test_offscreen_wall_says_loop_needs_frames(tmp_path: Path) -> None:
    """Offscreen with --loop and no --frames the wall plays once, and says why, as the player does."""
    clip = make_clip(tmp_path / "a.mp4", frames=6).path
    options = PlayOptions(offscreen=True, loop=True, hwaccel="none")
    stats = play_wall([clip, clip], options, environ=NO_DISPLAY)
    assert stats.frames == 6
    assert "--loop not taken: offscreen it loops until --frames" in stats.mode_reason
