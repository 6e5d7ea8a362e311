"""Songs that carry cover art (an MP3's APIC picture, an M4A's ``covr``, a FLAC PICTURE block, a
Matroska ``cover.jpg`` attachment) play as songs, as mpv plays them: the cover in the window, and the
status line, the bar, the seeks and the report following the sound. The player took the cover for a
one-frame video: its terminal bar was full at 0:03 of 0:08 ('1 frames 5.9 fps') and its report said
'2 frames (0.5 fps)' where a song without a cover says '1.5 s of sound' (an outside pass)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.api import pipeline
from alpha2.api.playback import Player, PlayOptions
from tests.media import COVER_RGB, make_clip, make_song_with_cover

SONG_S = 2.0
"""Each song's length."""


class _Seconds(pipeline.Progress):
    """What the terminal's line is told: a count of frames or of seconds."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.total_seconds: float | None = None
        self.timed = False
        self.counts: list[int] = []
        self.seconds: list[float] = []

    def start(self, total: int | None) -> None:
        self.total = total

    def update(self, frames: int) -> None:
        self.counts.append(frames)

    def start_seconds(self, total_seconds: float | None) -> None:
        self.timed, self.total_seconds = True, total_seconds

    def update_seconds(self, done_seconds: float, frames: int) -> None:
        self.seconds.append(done_seconds)


@pytest.mark.parametrize("ext", ["mp3", "m4a", "flac", "mkv"])
def test_probe_and_the_api_tell_a_cover_from_a_video(tmp_path: Path, ext: str) -> None:
    """probe said 'cover art' and ``attached_picture`` of the stream; the decoder's StreamInfo and the
    public VideoInfo had no word for it, so a caller (the player) could not tell a song's cover from a
    one-frame video."""
    from alpha2.ffmpeg_bridge.decode import DecodeSession
    from alpha2.ffmpeg_bridge.describe import describe_file

    song = make_song_with_cover(tmp_path / f"song.{ext}")
    facts = describe_file(song)
    (cover,) = [s for s in facts.streams if s.kind.value == "video"]
    assert cover.attached_picture, ext
    with DecodeSession(song) as session:
        assert session.info.attached_picture, ext
    with DecodeSession(make_clip(tmp_path / "film.mkv", frames=2).path) as session:
        assert not session.info.attached_picture


@pytest.mark.vulkan
def test_the_public_video_info_says_cover_art(tmp_path: Path) -> None:
    import alpha2

    with alpha2.open(make_song_with_cover(tmp_path / "song.mp3")) as source:
        assert source.info.attached_picture
    with alpha2.open(make_clip(tmp_path / "film.mkv", frames=2).path) as source:
        assert not source.info.attached_picture


def _window(song: str, progress: pipeline.Progress, **options: Any) -> Any:
    pytest.importorskip("rendercanvas")
    from alpha2.apps.window import WindowPlayback

    options.setdefault("audio", False)
    playback = WindowPlayback(Player(song, PlayOptions(hwaccel="none", **options), progress))
    playback.readable_surface = True
    playback.open("rendercanvas.offscreen")
    return playback


def _draw_until(playback: Any, done: Any, limit_s: float = 10.0) -> None:
    deadline = time.monotonic() + limit_s
    while not done() and time.monotonic() < deadline:
        playback.canvas.draw()
        time.sleep(0.01)


@pytest.mark.vulkan
@pytest.mark.parametrize("ext", ["mp3", "m4a", "flac", "mkv"])
def test_a_song_with_cover_art_plays_as_a_song_with_its_cover_shown(tmp_path: Path, ext: str) -> None:
    song = make_song_with_cover(tmp_path / f"song.{ext}", seconds=SONG_S)
    progress = _Seconds()
    playback = _window(song, progress)
    try:
        # The terminal's line counts the sound's seconds of its length, not 1 frame of 1.
        assert progress.timed and progress.total is None, (progress.total, progress.total_seconds)
        assert progress.total_seconds is not None and abs(progress.total_seconds - SONG_S) < 0.1
        assert playback.duration_s is not None and abs(playback.duration_s - SONG_S) < 0.1
        _draw_until(playback, lambda: bool(progress.seconds) and progress.seconds[-1] >= 0.3)
        assert 0.3 <= progress.seconds[-1] <= 1.5 and playback.clock is not None, progress.seconds[-5:]
        # The cover fills the window (its colour at the centre), not the level visual.
        image = np.asarray(playback.canvas.draw())[..., :3].astype(np.int32)
        centre = image[image.shape[0] // 2, image.shape[1] // 2]
        assert np.abs(centre - np.array(COVER_RGB)).max() < 40, centre
        assert playback._title_text().split(" — ")[1].startswith("0:00 / 0:02")
        # A seek goes into the sound, and the time and the bar follow it.
        playback.seek(1.2)
        _draw_until(playback, lambda: bool(progress.seconds) and progress.seconds[-1] >= 1.2, 3.0)
        assert 1.2 <= playback.media_time() < 1.8, playback.media_time()
        assert 1.2 <= progress.seconds[-1] < 1.8
        assert playback._osd_view().position_s >= 1.2
        # The cover stays on display after the seek.
        image = np.asarray(playback.canvas.draw())[..., :3].astype(np.int32)
        assert np.abs(image[image.shape[0] // 2, image.shape[1] // 2] - np.array(COVER_RGB)).max() < 40
        # It plays on to the sound's end (the system clock: a one-frame video ended at once).
        assert not playback.ended
        _draw_until(playback, lambda: playback.canvas.get_closed(), 4.0)
        assert playback.canvas.get_closed()
    finally:
        stats = playback.finish(1.0)
        playback.player.close()
    assert stats.audio_only and stats.mode_reason == "audio only, cover art", stats.mode_reason
    assert stats.audio_seconds is not None and abs(stats.audio_seconds - SONG_S) < 0.2
    assert stats.sync is None  # no video to be in sync with
    assert "s of sound" in stats.summary().splitlines()[0]


@pytest.mark.vulkan
def test_the_report_line_says_seconds_of_sound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The closing line of a song with a cover: '2.0 s of sound ... (audio only, cover art)', not
    '2 frames (0.5 fps)'."""
    import argparse

    from alpha2.apps.player import _report

    song = make_song_with_cover(tmp_path / "song.mp3", seconds=1.0)
    playback = _window(song, pipeline.Progress())
    try:
        playback.seek(0.6)
        _draw_until(playback, lambda: playback.canvas.get_closed(), 4.0)
    finally:
        stats = playback.finish(1.0)
        playback.player.close()
    _report(stats, argparse.Namespace(json=False, stats=False))
    line = capsys.readouterr().err.replace("\n", " ")
    assert "s of sound window (audio only, cover art)" in line, line
    assert "frame" not in line


@pytest.mark.vulkan
def test_without_a_window_a_song_with_cover_art_plays_its_sound(tmp_path: Path) -> None:
    """No window (--offscreen, or no display): a song with a cover plays its sound as one without, where
    it rendered its cover once into a texture and stopped ('1 frame', nothing heard)."""
    from alpha2.apps.player import play

    song = make_song_with_cover(tmp_path / "song.flac", seconds=1.0)
    stats = play(song, PlayOptions(offscreen=True, audio=False, frames=3), environ={})
    assert stats.mode == "audio" and stats.audio_only, (stats.mode, stats.mode_reason)
    # --snapshot still renders the cover.
    out = tmp_path / "cover.png"
    stats = play(song, PlayOptions(snapshot=str(out), audio=False), environ={})
    assert out.is_file() and stats.frames == 1
