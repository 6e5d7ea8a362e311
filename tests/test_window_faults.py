"""Faults of the ``alpha2 play`` window found by a QA pass, checked by their effect through rendercanvas's
offscreen canvas (no display needed): the paused frame redrawn at a new window size, a frame step onto
the last frame that stays paused there, and ``s`` screenshots at the video's own size with the subtitle
on display and nothing else of the on-screen display."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.api import pipeline
from alpha2.api.playback import Player, PlayOptions
from alpha2.apps.window import WindowPlayback, letterbox
from alpha2.gpu.geometry import Size
from tests.media import make_clip
from tests.test_apps_play import ffmpeg_rgb, read_png

W, H = 320, 180
FRAMES = 30
RATE = 30
WINDOW = Size(640, 360)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("window_faults")
    return make_clip(root / "clip.mkv", width=W, height=H, frames=FRAMES, rate=RATE).path


def _playback(clip: str, window: Size = WINDOW, **options: Any) -> WindowPlayback:
    pytest.importorskip("rendercanvas")
    options.setdefault("audio", False)
    run = Player(clip, PlayOptions(**options), pipeline.Progress())
    playback = WindowPlayback(run)
    playback.open("rendercanvas.offscreen", size=window)
    return playback


def _close(playback: WindowPlayback) -> None:
    playback.finish(1.0)
    playback.player.close()


def _draw(playback: WindowPlayback) -> np.ndarray:
    return np.asarray(playback.canvas.draw())[..., :3].astype(np.int32)


def _drive(playback: WindowPlayback, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not playback.canvas.get_closed():
        playback.canvas.draw()
        time.sleep(1 / 60)


def _frame_index(playback: WindowPlayback) -> int:
    assert playback.shown_pts is not None
    return round(playback.shown_pts * RATE)


def _assert_letterboxed(playback: WindowPlayback, image: np.ndarray, window: Size) -> None:
    """The picture fills the letterbox of ``window`` (its corners too), black bars around it (where the
    on-screen display is not)."""
    assert image.shape[:2] == (window.height, window.width)
    box = letterbox(Size(W, H), window)
    inside = image[box.y : box.y + box.height, box.x : box.x + box.width]
    for corner in (inside[:12, :12], inside[:12, -12:], inside[-12:, :12], inside[-12:, -12:]):
        assert corner.mean() > 20, "the picture does not reach a corner of its letterbox"
    bars = np.ones(image.shape[:2], bool)
    bars[max(0, box.y - 1) : box.y + box.height + 1, max(0, box.x - 1) : box.x + box.width + 1] = False
    for layer in playback.osd.layers(window, playback._osd_view()):
        r = layer.rect
        bars[max(0, r.y) : r.y + r.height, max(0, r.x) : r.x + r.width] = False
    assert bars.any() == (box.width < window.width - 2 or box.height < window.height - 2)
    assert (image[bars] == 0).all(), "something is drawn in the black bars"


@pytest.mark.vulkan
def test_a_paused_frame_is_redrawn_at_the_new_window_size(clip: str) -> None:
    """Fullscreen, back, or a smaller window while paused: the held frame fills the new letterbox at once
    (it stayed at its old size, or was cut to its top-left part, until playback resumed)."""
    playback = _playback(clip)
    try:
        for _ in range(3):
            _draw(playback)
        playback._on_key({"key": " "})
        _draw(playback)
        shown, frames = playback.shown_pts, playback.stats.frames
        for window in (Size(1280, 720), Size(640, 360), Size(400, 400), Size(900, 300)):
            playback.canvas.set_physical_size(window.width, window.height)
            image = _draw(playback)
            _assert_letterboxed(playback, image, window)
            box = letterbox(Size(W, H), window)
            texture = playback.shown[0]
            assert (int(texture.size[0]), int(texture.size[1])) == (box.width, box.height)
            # The same frame, not a new one; the pause sign and the bar laid out for the new size.
            assert playback.shown_pts == shown and playback.stats.frames == frames and playback.paused
            layers = {layer.key: layer.rect for layer in playback.osd.layers(window, playback._osd_view())}
            pause = layers["pause"]
            assert abs(pause.x + pause.width / 2 - window.width / 2) <= 1
            assert layers["bar"].width == playback.osd.bar_rect(window).width > window.width * 0.9
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_a_frame_step_onto_the_last_frame_stays_paused(clip: str) -> None:
    """``.`` onto the last frame shows it and stays there (the window closed at once, the last frame
    never seen); playing on from there ends the file as usual."""
    playback = _playback(clip)
    try:
        _draw(playback)
        playback._on_key({"key": " "})
        playback.seek((FRAMES - 3) / RATE)
        _draw(playback)
        assert _frame_index(playback) == FRAMES - 3
        for key, index in ((".", FRAMES - 2), (",", FRAMES - 3), (".", FRAMES - 2), (".", FRAMES - 1)):
            playback._on_key({"key": key})
            _draw(playback)
            assert _frame_index(playback) == index, key
        _drive(playback, 0.5)
        assert not playback.canvas.get_closed(), "the window closed on the last frame while paused"
        assert _frame_index(playback) == FRAMES - 1 and playback.paused
        playback._on_key({"key": "."})  # nothing after the last frame: it stays
        _drive(playback, 0.3)
        assert not playback.canvas.get_closed() and _frame_index(playback) == FRAMES - 1
        playback._on_key({"key": " "})  # playing on: the end of the file
        _drive(playback, 2.0)
        assert playback.canvas.get_closed()
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_playing_on_from_the_last_frame_loops_with_loop(clip: str) -> None:
    playback = _playback(clip, loop=True)
    try:
        _draw(playback)
        playback._on_key({"key": " "})
        playback.seek((FRAMES - 2) / RATE)
        _draw(playback)
        playback._on_key({"key": "."})
        _draw(playback)
        assert _frame_index(playback) == FRAMES - 1
        _drive(playback, 0.3)
        assert not playback.canvas.get_closed()
        playback._on_key({"key": " "})
        _drive(playback, 0.3)
        assert not playback.canvas.get_closed() and _frame_index(playback) < FRAMES // 2
    finally:
        _close(playback)


def _screenshot(playback: WindowPlayback) -> np.ndarray:
    path = playback.screenshot()
    assert path is not None
    try:
        return read_png(Path(path))
    finally:
        Path(path).unlink()


@pytest.mark.vulkan
@pytest.mark.parametrize("window", [Size(640, 360), Size(900, 700), Size(200, 150)])
def test_a_screenshot_is_the_video_at_its_own_size(clip: str, window: Size) -> None:
    """``s`` writes the frame at the video's size whatever the window's (it was the window's letterbox:
    a 1260x540 clip fullscreen gave 1920x823), the picture as FFmpeg decodes it, without the pause sign,
    the bar or a message."""
    playback = _playback(clip, window=window)
    try:
        _draw(playback)
        playback._on_key({"key": " "})
        playback._on_key({"key": "9"})  # a message on screen
        _draw(playback)
        pixels = _screenshot(playback)
        assert pixels.shape[:2] == (H, W)
        assert playback.shown_pts is not None
        expected = ffmpeg_rgb(clip, playback.shown_pts).astype(np.int32)
        error = np.abs(pixels[..., :3].astype(np.int32) - expected)
        assert error.mean() < 3.0, error.mean()
        # No pause sign in the middle, no message at the top left (white over the picture there).
        middle = error[H // 2 - 30 : H // 2 + 30, W // 2 - 30 : W // 2 + 30]
        assert middle.mean() < 6.0 and error[:30, :120].mean() < 6.0, (middle.mean(), error[:30, :120].mean())
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_a_screenshot_of_a_turned_video_is_turned(tmp_path: Path) -> None:
    turned = make_clip(tmp_path / "turned.mp4", width=W, height=H, frames=6, rotation_ccw=90).path
    playback = _playback(turned, window=Size(640, 360))
    try:
        _draw(playback)
        assert _screenshot(playback).shape[:2] == (W, H)
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_a_screenshot_has_the_subtitle_on_display(clip: str, tmp_path: Path) -> None:
    """The subtitle on screen is in the screenshot, laid out for the video's size; nothing else is."""
    subs = tmp_path / "cues.srt"
    subs.write_text("1\n00:00:00,000 --> 00:00:05,000\nHello from the subtitles\n", encoding="utf-8")
    playback = _playback(clip, window=Size(900, 700), sub=str(subs))
    try:
        _draw(playback)
        playback._on_key({"key": " "})
        subtitles = playback.subtitles
        assert subtitles is not None and subtitles.selected is not None
        assert subtitles.selected.wait(10)
        _draw(playback)
        with_subtitle = _screenshot(playback)[..., :3].astype(np.int32)
        playback.subtitles = None
        try:
            plain = _screenshot(playback)[..., :3].astype(np.int32)
        finally:
            playback.subtitles = subtitles
        assert with_subtitle.shape == plain.shape == (H, W, 3)
        changed = np.abs(with_subtitle - plain).max(axis=2) > 24
        assert changed[H // 2 :].mean() > 0.01, "no subtitle in the screenshot"
        assert not changed[: H // 2].any(), "something other than the subtitle was drawn"
        rows = np.flatnonzero(changed.any(axis=1))
        cols = np.flatnonzero(changed.any(axis=0))
        # Centred, near the bottom, and inside the picture (sized for 320x180, not for the window).
        assert abs((cols[0] + cols[-1]) / 2 - W / 2) < W * 0.05
        assert rows[-1] < H and rows[-1] > H * 0.8 and cols[0] > 0 and cols[-1] < W - 1
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_back_steps_faster_than_the_window_draws_each_count(clip: str) -> None:
    """``,`` pressed ten times before the next draw goes back ten frames (found by a person's pass: the
    presses between two draws stepped back from the same frame, 10 presses went back 4)."""
    playback = _playback(clip)
    try:
        _draw(playback)
        playback._on_key({"key": " "})
        playback.seek(20 / RATE)
        _draw(playback)
        assert _frame_index(playback) == 20
        for _ in range(10):
            playback._on_key({"key": ","})
        _draw(playback)
        assert _frame_index(playback) == 10
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_a_paused_window_draws_on_demand_and_plays_on_continuously(clip: str) -> None:
    """Paused, the window is drawn on input and a few times a second, not at 240 Hz (a person's pass
    measured most of a core for a paused 720p window); playing, continuously again."""
    playback = _playback(clip)
    modes: list[tuple[str, Any]] = []
    set_mode = playback.canvas.set_update_mode

    def recording(mode: str, **kwargs: Any) -> None:
        modes.append((mode, kwargs.get("min_fps")))
        set_mode(mode, **kwargs)

    playback.canvas.set_update_mode = recording  # type: ignore[method-assign]
    try:
        _draw(playback)
        _draw(playback)
        assert modes == []
        playback._on_key({"key": " "})
        _draw(playback)
        assert modes == [("ondemand", 0)]  # the window's own timer draws 4 times a second
        _draw(playback)
        playback._on_key({"key": " "})
        _draw(playback)
        assert modes == [("ondemand", 0), ("continuous", None)]
    finally:
        _close(playback)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_closes_the_window_and_is_raised_after_its_loop(signame: str) -> None:
    """Ctrl-C or SIGTERM while the window's loop runs closes the window as q does, and is raised once
    the loop returned, as the command's handlers raise it (found by a person's pass: rendercanvas took
    Ctrl-C and the player ended with 0 as if the file had; SIGTERM printed asyncio's traceback)."""
    import os
    import signal

    from alpha2.apps.cli import Interrupted, Terminated, _SignalsUnwind
    from alpha2.apps.window import _SignalsClose

    closed: list[bool] = []
    canvas = type("Canvas", (), {"close": lambda self: closed.append(True)})()
    with _SignalsUnwind():  # the command's handlers, as alpha2's main installs them
        command = signal.getsignal(signal.SIGTERM)
        signals = _SignalsClose(canvas)
        signal.signal(signal.SIGINT, lambda s, f: None)  # what rendercanvas's loop sets as it starts
        signals.ensure()
        signum = getattr(signal, signame)
        os.kill(os.getpid(), signum)
        time.sleep(0.01)
        assert closed == [True] and signals.caught == signum
        expected = Interrupted if signame == "SIGINT" else Terminated
        with pytest.raises(expected):
            signals.restore()
        assert signal.getsignal(signal.SIGTERM) == command  # the command's handlers are back


@pytest.mark.vulkan
def test_ctrl_c_mid_draw_closes_the_window_after_that_draw(clip: str) -> None:
    """Ctrl-C lands anywhere in the main thread, also in a draw that holds the surface's texture: the
    window was closed there, and the process aborted at exit (wgpu-native's panic 'Trying to destroy a
    SwapchainAcquireSemaphore that is still in use by a SurfaceTexture', exit 134, after a 'Draw error'
    traceback; an outside pass, in a terminal at 80 columns). The loop closes it between two draws."""
    import os
    import signal
    import sys
    import types

    from alpha2.apps.cli import Interrupted, _SignalsUnwind

    offscreen = pytest.importorskip("rendercanvas.offscreen")
    playback = WindowPlayback(Player(clip, PlayOptions(audio=False), pipeline.Progress()))
    soon: list[Any] = []
    closed_mid_draw: list[bool] = []

    class Loop:
        @staticmethod
        def run() -> None:
            deadline = time.monotonic() + 20
            while not playback.canvas.get_closed() and time.monotonic() < deadline:
                playback.canvas.draw()
                while soon:
                    soon.pop(0)()
                time.sleep(1 / 60)

        @staticmethod
        def call_soon_threadsafe(callback: Any) -> None:
            soon.append(callback)

    def on_present(surface: Any) -> None:  # after the draw's submit, the surface's texture held
        if playback.stats.frames == 3 and not closed_mid_draw:
            signal.signal(signal.SIGINT, lambda s, f: None)  # what rendercanvas's loop sets as it starts
            playback._signals.ensure()  # type: ignore[union-attr]
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
            closed_mid_draw.append(playback.canvas.get_closed())

    playback.on_present = on_present
    backend = types.ModuleType("alpha2_test_signal_canvas")
    backend.RenderCanvas = offscreen.RenderCanvas  # type: ignore[attr-defined]
    backend.loop = Loop  # type: ignore[attr-defined]
    sys.modules[backend.__name__] = backend
    try:
        with _SignalsUnwind(), pytest.raises(Interrupted):
            playback.run(backend.__name__)
    finally:
        del sys.modules[backend.__name__]
        playback.player.close()
    assert closed_mid_draw == [False]  # not closed inside the draw
    assert playback.canvas.get_closed() and playback.stats.frames < FRAMES  # closed after it


def _chaptered_clip(path: Path) -> str:
    """3 s at 30 fps with chapters at 0, 1 and 2 s ('One', 'Two', and one untitled)."""
    import fractions

    import av

    with av.open(str(path), "w") as out:
        stream = out.add_stream("ffv1", rate=RATE)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        out.set_chapters(
            [
                {
                    "id": i + 1,
                    "start": start,
                    "end": start + 1000,
                    "time_base": fractions.Fraction(1, 1000),
                    "metadata": {"title": title} if title else {},
                }
                for i, (title, start) in enumerate((("One", 0), ("Two", 1000), ("", 2000)))
            ]
        )
        for i in range(3 * RATE):
            frame = av.VideoFrame.from_ndarray(np.full((H, W, 3), i, np.uint8), format="rgb24")
            for packet in stream.encode(frame.reformat(format="yuv420p")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return str(path)


@pytest.mark.vulkan
def test_page_keys_go_from_chapter_to_chapter(tmp_path: Path) -> None:
    """PgUp / PgDn as mpv's (its input.conf: PGUP add chapter 1, PGDWN add chapter -1; they were the
    other way round): PgUp the next chapter's start; PgDn back to the start of the one playing when more
    than 5 s into it, else the one before; said on screen ('Chapter 2/3: Two')."""
    playback = _playback(_chaptered_clip(tmp_path / "ch.mkv"))
    said: list[str] = []
    playback.osd.message = said.append  # type: ignore[method-assign]
    try:
        _draw(playback)
        playback._on_key({"key": " "})  # paused: the clock stays where the keys put it
        _draw(playback)
        for key, at, text in (
            ("PageUp", 1.0, "Chapter 2/3: Two"),
            ("PageUp", 2.0, "Chapter 3/3"),
            ("PageUp", 2.0, "No next chapter"),
            ("PageDown", 1.0, "Chapter 2/3: Two"),
            ("PageDown", 0.0, "Chapter 1/3: One"),
        ):
            playback._on_key({"key": key})
            _draw(playback)
            assert said[-1] == text and abs(playback.media_time() - at) < 0.05, (
                key,
                said,
                playback.media_time(),
            )
        assert _frame_index(playback) == 0
        # The bar has a tick where each chapter after the first begins, as mpv's.
        assert [round(m, 3) for m in playback._osd_view().marks] == [0.333, 0.667]
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_a_looping_file_s_progress_has_no_total(tmp_path: Path) -> None:
    """With --loop the count ran past the file's frames ('play: 300/250 frames', a person's pass)."""
    pytest.importorskip("rendercanvas")
    clip = make_clip(tmp_path / "c.mp4", width=W, height=H, frames=FRAMES, rate=RATE).path  # MP4: counted
    totals: list[int | None] = []

    class Recording(pipeline.Progress):
        def start(self, total: int | None) -> None:
            totals.append(total)

    for loop in (False, True):
        run = Player(clip, PlayOptions(audio=False, loop=loop), Recording())
        playback = WindowPlayback(run)
        playback.open("rendercanvas.offscreen", size=WINDOW)
        _close(playback)
    assert totals == [FRAMES, None]


@pytest.mark.vulkan
def test_a_matroska_file_s_progress_has_its_estimated_total(tmp_path: Path) -> None:
    """An MKV records no frame count: the progress said '312/? frames' though its length is known (a
    person's pass); its total is its duration times its rate, as the transcoder's is."""
    pytest.importorskip("rendercanvas")
    clip = make_clip(tmp_path / "c.mkv", width=W, height=H, frames=FRAMES, rate=RATE).path
    totals: list[int | None] = []

    class Recording(pipeline.Progress):
        def start(self, total: int | None) -> None:
            totals.append(total)

    run = Player(clip, PlayOptions(audio=False), Recording())
    playback = WindowPlayback(run)
    playback.open("rendercanvas.offscreen", size=WINDOW)
    _close(playback)
    assert totals == [FRAMES]


@pytest.mark.vulkan
def test_a_player_quit_early_keeps_its_bar_s_total(tmp_path: Path) -> None:
    """q at 0:09 of 1:00 left the bar full, '277/277 frames' (an outside pass): the bar's total became
    the frames counted, as at an input's end. A window closed before the end keeps the total."""
    pytest.importorskip("rendercanvas")
    clip = make_clip(tmp_path / "c.mp4", width=W, height=H, frames=FRAMES, rate=RATE).path
    closes: list[tuple[bool, bool]] = []

    class Recording(pipeline.Progress):
        def close(self, completed: bool = True, *, ended: bool = True) -> None:
            closes.append((completed, ended))

    for seconds in (0.2, 3.0):  # quit after a few frames; played to the end (1 s of frames)
        playback = WindowPlayback(Player(clip, PlayOptions(audio=False), Recording()))
        playback.open("rendercanvas.offscreen", size=WINDOW)
        _drive(playback, seconds)
        _close(playback)
    assert closes == [(True, False), (True, True)]


@pytest.mark.vulkan
def test_a_volume_change_while_muted_says_it_is_still_muted(tmp_path: Path) -> None:
    """m, then 0: the message said 'Volume: 110%' alone, which read as the sound back (an outside pass);
    mpv says '(Muted)'."""
    clip = make_clip(tmp_path / "c.mp4", width=W, height=H, frames=FRAMES, rate=RATE).path
    playback = _playback(clip)
    real = playback.clock

    class Clock:
        volume, muted = 1.0, True

        def set_volume(self, value: float) -> None:
            self.volume = value

    try:
        playback.clock = Clock()
        playback.change_volume(0.1)
        assert playback.osd.current_message == "Volume: 110% (muted)"
        playback.clock.muted = False
        playback.change_volume(0.1)
        assert playback.osd.current_message == "Volume: 120%"
    finally:
        playback.clock = real
        _close(playback)
