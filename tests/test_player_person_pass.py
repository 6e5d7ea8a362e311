"""Faults found playing files as an mpv user would (anamorphic DVD, playlists with broken files, long
messages, small windows, a wall of mixed inputs), each with the check that it stays fixed."""

from __future__ import annotations

import fractions
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api import pipeline
from alpha2.api.playback import Player, PlayOptions
from alpha2.apps.window import WindowPlayback
from alpha2.gpu.geometry import Size

DVD_WIDE = fractions.Fraction(32, 27)
"""A 16:9 NTSC DVD's 720x480 pixels."""


def _anamorphic_clip(path: Path, frames: int = 5) -> str:
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 720, 480, "yuv420p"
        stream.codec_context.sample_aspect_ratio = DVD_WIDE
        for index in range(frames):
            pixels = np.full((480, 720, 3), 200, np.uint8)
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24").reformat(format="yuv420p")
            frame.pts = index
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def _playback(clip: str, size: Size | None = None, **options: Any) -> WindowPlayback:
    pytest.importorskip("rendercanvas")
    options.setdefault("audio", False)
    playback = WindowPlayback(Player(clip, PlayOptions(**options), pipeline.Progress()))
    playback.open("rendercanvas.offscreen", size=size)
    return playback


def _close(playback: WindowPlayback) -> None:
    playback.finish(1.0)
    playback.player.close()


@pytest.mark.vulkan
def test_an_anamorphic_dvd_opens_a_window_of_its_shown_shape(tmp_path: Path) -> None:
    """720x480 stored at 32:27 is 853x480 on screen: the window opens at that size, the picture fills
    it, no bars (it opened at 720x480, the picture letterboxed inside)."""
    playback = _playback(_anamorphic_clip(tmp_path / "dvd.mkv"))
    try:
        assert tuple(playback.canvas.get_logical_size()) == (853, 480)
        image = np.asarray(playback.canvas.draw())[..., :3].astype(np.int32)
        assert image.shape[:2] == (480, 853)
        assert image[2, :].mean() > 150 and image[-3, :].mean() > 150  # no bars above or below
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_a_broken_file_passed_over_again_is_reported_once(tmp_path: Path) -> None:
    """p back over a broken file, and over it again on the way on: one error for it, not one a pass
    (the terminal said ``alpha2: error: broken.mkv ...`` three times, the JSON listed it three times)."""
    from tests.media import make_clip
    from tests.test_playlist import _run_window

    first = make_clip(tmp_path / "a.mkv", width=64, height=48, frames=6).path
    last = make_clip(tmp_path / "b.mkv", width=48, height=64, frames=60).path
    broken = tmp_path / "broken.mkv"
    broken.write_bytes(b"this is not a video file" * 40)
    # The first file to its end (6 frames; broken passed over), < 20 draws into the last (60 frames,
    # about 120 draws): back over broken to the first, which plays to its end, broken passed over again,
    # the last. (A press at the 45th draw flaked on a loaded machine: the first file took 45 draws.)
    results, errors, driver = _run_window([first, str(broken), last], {(last, 20): "<"})
    assert driver.sources == [first, last, first, last]
    assert errors == [(str(broken), errors[0][1])] and "broken.mkv" in errors[0][1]
    assert [s.input for s in results] == driver.sources


def _inside(rect: Any, window: Size) -> bool:
    return (
        rect.x >= 0
        and rect.y >= 0
        and rect.x + rect.width <= window.width
        and rect.y + rect.height <= window.height
    )


def test_a_long_message_is_wrapped_inside_the_window() -> None:
    """A playlist's error for a broken file ran off the window's right edge, cut mid-word."""
    from alpha2.apps.osd import Osd, OsdView

    osd = Osd()
    message = "junk.mkv: opening '/home/someone/Videos/junk.mkv': Invalid data found when processing input"
    osd.message(message)
    for window in (Size(640, 360), Size(320, 180)):
        (layer,) = [item for item in osd.layers(window, OsdView(0.0, 10.0)) if item.key == "message"]
        assert _inside(layer.rect, window), (window, layer.rect)
    # A word wider than the window (a path) is cut, not left to run off.
    osd.message("/" + "a-very-long-folder-name/" * 8 + "clip.mkv")
    window = Size(320, 180)
    (layer,) = [item for item in osd.layers(window, OsdView(0.0, 10.0)) if item.key == "message"]
    assert _inside(layer.rect, window)


def test_help_and_stats_fit_a_small_window() -> None:
    """``?`` and ``i`` in a 320x180 window: their text shrinks with the window (as mpv's) instead of
    running off its bottom and right edges."""
    from alpha2.apps.keys import PLAYER_BINDINGS, help_lines
    from alpha2.apps.osd import Osd, OsdView

    stats = [
        "File: /home/someone/Videos/normal.mp4",
        "Decoder: h264 (h264, software); 1280x720, 30.000 fps",
        "Frames: 333 shown, 1 dropped, 120 late",
        "A/V offset: +16.7 ms (mean 6.0 ms, max 28.8 ms; refresh 200 Hz)",
        "Audio clock: system (JACK Audio Connection Kit), 48000 Hz, 2 ch, output latency 21.3 ms",
        "Speed: 1x; volume 100%; loop no",
        "Colour: no tone or gamut mapping (the frames' transfer and primaries, BT709 BT709, are the "
        "display's); matrix BT.709 guessed from the size",
        "Subtitles: none",
    ]
    for window in (Size(320, 180), Size(300, 700), Size(1280, 300)):
        osd = Osd(show_help=True)
        view = OsdView(0.0, 10.0, help=help_lines(PLAYER_BINDINGS), stats=stats)
        (help_layer,) = [item for item in osd.layers(window, view) if item.key == "help"]
        assert _inside(help_layer.rect, window), (window, help_layer.rect)
        osd = Osd(show_stats=True)
        (stats_layer,) = [item for item in osd.layers(window, view) if item.key == "stats"]
        assert _inside(stats_layer.rect, window), (window, stats_layer.rect)
    # A large window keeps the normal size: nothing is shrunk that fits.
    big = Osd(show_help=True).layers(Size(1280, 720), OsdView(0.0, 10.0, help=help_lines(PLAYER_BINDINGS)))
    assert big[0].rect.height > 400
    # With the bar and the time up (paused), the help keeps above them: at 400x225 it covered them (at
    # 320x180 its 17 lines at the smallest text cannot: it covers them there).
    for window in (Size(400, 225), Size(640, 360), Size(1280, 720)):
        view = OsdView(0.0, 10.0, paused=True, help=help_lines(PLAYER_BINDINGS))
        layers = {item.key: item.rect for item in Osd(show_help=True).layers(window, view)}
        assert layers["help"].y + layers["help"].height <= layers["time"].y, (window, layers)


@pytest.mark.vulkan
def test_the_wall_shows_an_anamorphic_tile_at_its_shown_shape(tmp_path: Path) -> None:
    """A 720x480 DVD at 32:27 next to a 16:9 clip of square pixels: both are 16:9 on screen, so both
    fill their tiles (the DVD was drawn 3:2, with bars at its sides, as if its pixels were square)."""
    from alpha2.apps.wall import play_wall
    from tests.media import make_clip
    from tests.test_apps_play import read_png

    dvd = _anamorphic_clip(tmp_path / "dvd.mkv", frames=3)
    wide = make_clip(tmp_path / "wide.mkv", width=854, height=480, frames=3).path
    options = PlayOptions(snapshot=str(tmp_path / "wall.png"), hwaccel="none", audio=False)
    stats = play_wall([dvd, wide], options, environ={"PATH": "/usr/bin"})
    wall = read_png(tmp_path / "wall.png")[..., :3].astype(np.int32)
    assert stats.size is not None and wall.shape[:2] == (stats.size.height, stats.size.width)
    tile_width = wall.shape[1] // 2
    dvd_tile = wall[:, :tile_width]
    # 853 wide in a tile of 854: a column of black at most, not 67 at each side
    assert dvd_tile[:, 2:6].mean() > 150 and dvd_tile[:, -6:-2].mean() > 150
    assert dvd_tile[:4].mean() > 150 and dvd_tile[-4:].mean() > 150  # nor above and below


def test_a_portrait_window_sizes_its_text_from_its_short_side() -> None:
    # A phone's portrait video (360x640) had its display's text sized from a 16:9 box inside its width:
    # 12 px time and 14 px subtitles, where a 640x360 window has 20 and 25. The short side sizes both.
    from alpha2.apps.osd import Osd
    from alpha2.gpu.geometry import Size

    portrait, landscape = Osd._sizes(Size(360, 640)), Osd._sizes(Size(640, 360))
    assert portrait == landscape
    assert portrait["text"] == 20 and portrait["subtitle"] == 25
    assert Osd._sizes(Size(1280, 720))["text"] == 40  # a landscape window as before


@pytest.mark.vulkan
def test_a_file_whose_timestamps_start_late_seeks_to_the_clock_and_counts_from_its_start(
    tmp_path: Path,
) -> None:
    """An MPEG-TS file's frames begin at 1.4 s. A seek went 1.4 s past where the clock went (the decoder
    counts from the stream's start, the clock from the file's zero): playing, the picture froze that
    long; paused, the frame sought to never came up. The display said 0:01 at the first frame and
    0:21 / 0:20 near the end of a 20 s file; mpv counts from the first frame."""
    from tests.media import mux_with_pts

    clip = mux_with_pts(tmp_path / "late.mkv", [35 + i for i in range(75)], rate=25)  # 1.4 s to 4.4 s
    playback = _playback(clip)
    try:
        playback.canvas.draw()  # the first frame
        playback.canvas.draw()  # the clock starts at its time
        assert playback.shown_pts == pytest.approx(1.4)
        assert playback._osd_view().position_s == pytest.approx(0.0, abs=0.02)
        playback._on_key({"key": " ", "modifiers": ()})  # pause
        playback.seek(playback.media_time() + 1.0)
        playback.canvas.draw()
        assert playback.shown_pts == pytest.approx(2.4, abs=0.05)
        assert playback._osd_view().position_s == pytest.approx(1.0, abs=0.05)
        assert " — 0:01 / " in playback._title_text()
        shot = playback.screenshot()  # named by the time on display, as the display counts it
        assert shot is not None and shot.endswith("late-0001.000.png"), shot
    finally:
        _close(playback)


def test_a_subtitle_file_played_alone_is_said_as_such(tmp_path: Path) -> None:
    """``alpha2 play s.srt`` said "'s.srt' has no audio stream (it has 1 subtitle); give a file with
    sound" (the audio decoder's words): a player's error now, with where a subtitle file goes."""
    from types import SimpleNamespace

    from alpha2.apps.window import audio_duration
    from alpha2.gpu.errors import Error

    cue = tmp_path / "s.srt"
    cue.write_text("1\n00:00:00,000 --> 00:00:01,000\nhi\n")
    player = SimpleNamespace(source=str(cue), options=SimpleNamespace(at_s=None, audio=True))
    with pytest.raises(Error) as caught:
        audio_duration(player)
    message = caught.value.message
    assert "has no video and no sound to play (it has 1 subtitle)" in message, message
    assert message.endswith(f"a subtitle file goes with a video: alpha2 play VIDEO --sub {cue}"), message


def test_a_paused_song_is_said_as_the_sound_it_played(capsys: pytest.CaptureFixture[str]) -> None:
    """A song paused after 1.5 s and quit 10 s later said 'played song.flac: 11.9 s of sound' (the run's
    time, the pause in it); the clock's seconds are the sound played, as mpv's position says."""
    import argparse

    from alpha2.api.playback import PlayStats
    from alpha2.apps.player import _report

    stats = PlayStats(
        "song.flac", mode="window", mode_reason="audio only, level visual", seconds=11.9, audio_seconds=1.5
    )
    stats.clock = {"kind": "audio", "reason": "audio clock: test"}
    _report(stats, argparse.Namespace(json=False, stats=False))
    assert "played song.flac: 1.5 s of sound" in capsys.readouterr().err
    assert stats.summary().startswith("alpha2: played song.flac: 1.50 s of sound, window")


def test_stats_say_the_clock_once() -> None:
    """--stats said 'clock: audio clock: system (JACK ...)', the word twice (the window's i says it once)."""
    from alpha2.api.playback import PlayStats

    stats = PlayStats("a.mp4", mode="window", seconds=1.0, frames=25)
    stats.clock = {"kind": "audio", "reason": "audio clock: system (JACK Audio Connection Kit), 48000 Hz"}
    assert "  audio clock: system (JACK Audio Connection Kit), 48000 Hz" in stats.summary().splitlines()
