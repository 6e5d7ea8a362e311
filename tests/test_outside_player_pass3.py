"""Faults found by a third outside pass over ``alpha2 play`` in a window under Xvfb, as a person who
plays with mpv every day would meet them, each with the check that it stays fixed."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api import pipeline
from alpha2.api.playback import Player, PlayOptions
from alpha2.apps.osd import Osd, OsdView
from alpha2.apps.window import WindowPlayback
from alpha2.gpu.geometry import Size
from tests.media import _write_tone, make_clip, pattern
from tests.xvfb import play_under_xvfb

JAPANESE = "これは日本語の字幕です。とても長い一行の字幕で、画面の幅を超えてしまうかどうかを確かめます。"


def _japanese_font() -> bool:
    if shutil.which("fc-match") is None:
        return False
    found = subprocess.run(
        ["fc-match", "--format=%{file}", "sans-serif:charset=65e5"], capture_output=True, text=True
    ).stdout
    return bool(found) and "DejaVu" not in found


def _subtitle(window: Size, text: str) -> tuple[int, int, int]:
    """The subtitle layer's x, width and its count of lines (by height against one line's)."""
    osd = Osd()
    layers = {layer.key: layer for layer in osd.layers(window, OsdView(1.0, 10.0, subtitle=text))}
    one = {layer.key: layer for layer in osd.layers(window, OsdView(1.0, 10.0, subtitle="Hi"))}
    rect, line = layers["subtitle"].rect, one["subtitle"].rect
    return rect.x, rect.width, round((rect.height - line.height) / (line.height * 0.75)) + 1


def test_a_japanese_subtitle_line_is_wrapped_inside_the_window() -> None:
    """A Japanese line (no spaces) was wrapped by a count of characters sized for Latin text: at 640x360
    it ran off both sides of the window, half of it unread. Now measured in pixels, it breaks into
    lines within the window, as mpv shows it."""
    if not _japanese_font():
        pytest.skip("no font with Japanese glyphs here (fonts-droid-fallback, fonts-noto-cjk)")
    window = Size(640, 360)
    x, width, lines = _subtitle(window, JAPANESE)
    assert x >= 0 and x + width <= window.width
    assert lines >= 2


def test_a_long_subtitle_line_breaks_into_even_lines() -> None:
    """A line a little too long for the window broke as a full line and one word under it ('... should
    wrap or' / 'fit'); libass, mpv's renderer, breaks it into lines of even length by default."""
    osd = Osd()
    window = Size(1000, 400)
    text = "First subtitle line, a fairly long one that should wrap or fit in the window"
    layers = {layer.key: layer for layer in osd.layers(window, OsdView(1.0, 10.0, subtitle=text))}
    sub = layers["subtitle"]
    assert sub.x >= 0 and sub.x + sub.rect.width <= window.width
    alpha = sub.pixels[..., 3] > 0
    half = alpha.shape[0] // 2
    extents = []
    for band in (alpha[:half], alpha[half:]):
        columns = np.flatnonzero(band.any(axis=0))
        extents.append(int(columns[-1] - columns[0]))
    assert min(extents) >= 0.6 * max(extents), extents


@pytest.mark.vulkan
def test_frames_ends_each_file_of_a_playlist_in_the_window(tmp_path: Path) -> None:
    """``alpha2 play a.mkv b.mkv --frames 3`` played 3 frames of a.mkv and closed the window: b.mkv never
    played (offscreen, each file played 3; mpv ends each file at --frames and goes on to the next)."""
    first = make_clip(tmp_path / "a.mkv", frames=8)
    second = make_clip(tmp_path / "b.mkv", width=48, height=64, frames=8)
    data = play_under_xvfb(first.path, second.path, "--frames", "3", "--no-audio")
    assert [(item["input"], item["frames"]) for item in data["playlist"]] == [
        (first.path, 3),
        (second.path, 3),
    ]


def _video_shorter_than_sound(path: Path, video_s: float = 0.4, sound_s: float = 2.0) -> str:
    """A Matroska file of ``video_s`` of pictures and ``sound_s`` of a tone (FFmpeg's muxer tags each
    track's own length)."""
    rate = 25
    with av.open(str(path), "w") as out:
        video: Any = out.add_stream("libx264", rate=rate)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        sound: Any = out.add_stream("libopus", rate=48000)
        sound.layout = "stereo"
        for index in range(round(video_s * rate)):
            frame = av.VideoFrame.from_ndarray(pattern(index, 64, 48), format="rgb24").reformat(
                format="yuv420p"
            )
            frame.pts = index
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        _write_tone(out, sound, sound_s)
    return str(path)


@pytest.mark.vulkan
def test_the_sound_after_the_last_frame_is_counted_and_sought(audio_server: str, tmp_path: Path) -> None:
    """A file whose sound runs on 1.6 s after its last frame: the display said '0:01 / 0:00' with a full
    bar while the sound played (the video's length), the title stayed on the last frame's time, and a
    click on the bar could not go there. Now the length is the sound's, the time is the sound's after
    the last frame (held, as mpv holds it), and a seek goes into it."""
    pytest.importorskip("rendercanvas")
    source = _video_shorter_than_sound(tmp_path / "tail.mkv")
    playback = WindowPlayback(Player(source, PlayOptions(hwaccel="none"), pipeline.Progress()))
    playback.open("rendercanvas.offscreen")
    try:
        deadline = time.monotonic() + 10
        while playback.media_time() < 1.0 and time.monotonic() < deadline:
            playback.canvas.draw()
            time.sleep(0.01)
        if playback.clock is None or playback.clock.kind.value != "audio":
            pytest.skip("no sound device: the clock is the system's")
        assert playback.duration_s is not None and abs(playback.duration_s - 2.0) < 0.1
        view = playback._osd_view()
        assert view.position_s >= 1.0 and view.duration_s == playback.duration_s
        assert playback._title_text().split(" — ")[1].startswith("0:01 / 0:02")
        playback.seek(1.5)
        assert playback.media_time() >= 1.4  # not clamped to the last frame's 0.35 s
    finally:
        playback.finish(1.0)
        playback.player.close()


def test_held_seek_and_volume_keys_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    """rendercanvas's glfw backend drops every key repeat: a held Right arrow sought 5 s once, a held 0
    raised the volume one step (mpv seeks and turns up on until the key is let go). The window's glfw
    key callback now hands the repeats of the seek, step, volume and speed keys on as presses; a held
    space still pauses once."""
    glfw = pytest.importorskip("glfw")
    from alpha2.apps.window import repeat_held_keys

    seen: list[tuple[int, int]] = []
    installed: list[Any] = []

    def rendercanvas_on_key(window: Any, key: int, scancode: int, action: int, mods: int) -> None:
        if action != glfw.REPEAT:  # as rendercanvas.glfw does
            seen.append((key, action))

    def set_key_callback(window: Any, callback: Any) -> Any:
        installed.append(callback)
        return rendercanvas_on_key

    monkeypatch.setattr(glfw, "set_key_callback", set_key_callback)
    canvas = type("GlfwRenderCanvas", (), {"__module__": "rendercanvas.glfw"})()
    canvas._window = object()
    repeat_held_keys(canvas)
    (forward,) = installed
    for key in (glfw.KEY_RIGHT, glfw.KEY_0, glfw.KEY_SPACE):
        forward(canvas._window, key, 0, glfw.PRESS, 0)
        forward(canvas._window, key, 0, glfw.REPEAT, 0)
        forward(canvas._window, key, 0, glfw.REPEAT, 0)
    presses = [key for key, action in seen if action == glfw.PRESS]
    assert presses.count(glfw.KEY_RIGHT) == 3 and presses.count(glfw.KEY_0) == 3
    assert presses.count(glfw.KEY_SPACE) == 1


@pytest.mark.vulkan
def test_mpv_playlist_keys_go_to_the_next_and_previous_file(tmp_path: Path) -> None:
    """mpv's playlist keys are > and < (Shift+. and Shift+, on a US keyboard, which glfw reports as .
    and , with Shift held): they did nothing (Shift+. stepped a frame); only n / p moved in the list."""
    from alpha2.apps.keys import key_name
    from tests.test_playlist import _run_window

    assert key_name({"key": ".", "modifiers": ("Shift",)}) == ">"
    assert key_name({"key": ",", "modifiers": ("Shift",)}) == "<"
    assert key_name({"key": ".", "modifiers": ()}) == "."
    first = make_clip(tmp_path / "a.mkv", frames=60)
    second = make_clip(tmp_path / "b.mkv", width=48, height=64, frames=60)
    _, errors, driver = _run_window([first.path, second.path], {3: ">", 6: "<", 9: ">"})
    assert not errors
    assert driver.sources == [first.path, second.path, first.path, second.path]


class _Counts(pipeline.Progress):
    def __init__(self) -> None:
        self.total: int | None = None
        self.counts: list[int] = []

    def start(self, total: int | None) -> None:
        self.total = total

    def update(self, frames: int) -> None:
        self.counts.append(frames)


def test_the_terminal_bar_follows_the_position_after_a_seek(tmp_path: Path) -> None:
    """The terminal's bar counted the frames shown against the file's frame count: after a backward
    seek it read '266/250', and after a seek forward '50/250' with the picture at its end. Without
    --frames it now counts the frame at the position, as mpv's status line shows the time."""
    pytest.importorskip("rendercanvas")
    source = make_clip(tmp_path / "c.mkv", frames=30, rate=30).path
    progress = _Counts()
    playback = WindowPlayback(Player(source, PlayOptions(hwaccel="none", audio=False), progress))
    playback.open("rendercanvas.offscreen")
    try:
        assert progress.total == 30

        def draw_until(done: Any) -> None:
            deadline = time.monotonic() + 10
            while not done() and time.monotonic() < deadline:
                playback.canvas.draw()
                time.sleep(0.005)

        draw_until(lambda: len(progress.counts) >= 20)
        playback.seek(0.0)
        before = len(progress.counts)
        draw_until(lambda: len(progress.counts) >= before + 3)
        after_back = progress.counts[before:]
        assert after_back[0] <= 2, progress.counts  # the first frames again, not 21, 22, ...
        playback.seek(0.9)
        before = len(progress.counts)
        draw_until(lambda: len(progress.counts) >= before + 1)
        assert progress.counts[before] >= 27, progress.counts  # near the end, not 24
        assert max(progress.counts) <= 30
    finally:
        playback.finish(1.0)
        playback.player.close()
