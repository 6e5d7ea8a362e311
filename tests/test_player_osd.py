"""The player's on-screen display, keys and mouse: the display's layout and fading (pure), the overlay
blended on the GPU (rendercanvas's offscreen canvas, in-process), and a real glfw window on Xvfb whose
surface is read back as PNG screenshots with each overlay (kept under $ALPHA2_SCREENSHOTS when set)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.api import pipeline
from alpha2.api.playback import Player, PlayOptions
from alpha2.apps import keys as keymap
from alpha2.apps.osd import FADE_S, SHOW_S, Osd, OsdView, format_time, text_image
from alpha2.apps.window import WindowPlayback, letterbox, screenshot_path
from alpha2.gpu.geometry import Size

W, H = 320, 180
FRAMES = 30


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.media import make_clip

    root = tmp_path_factory.mktemp("osd")
    return make_clip(root / "clip.mkv", width=W, height=H, frames=FRAMES).path


def screenshots_dir(tmp_path: Path) -> Path:
    """Where screenshots go: $ALPHA2_SCREENSHOTS (kept for a person to look at) or the test's tmp."""
    where = os.environ.get("ALPHA2_SCREENSHOTS")
    path = Path(where) if where else tmp_path / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def save_png(path: Path, pixels: np.ndarray) -> None:
    from alpha2.api.atomic import write_png

    write_png(path, np.ascontiguousarray(pixels))


# ---------------------------------------------------------------------------------------------------
# pure parts


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_format_time() -> None:
    assert format_time(0) == "0:00"
    assert format_time(12.7) == "0:12"
    assert format_time(90) == "1:30"
    assert format_time(3723) == "1:02:03"
    assert format_time(None) == "--:--"


def test_text_is_white_on_a_dark_outline() -> None:
    image = text_image("Volume: 80%", 32)
    assert image.dtype == np.uint8 and image.shape[2] == 4
    alpha = image[..., 3]
    assert alpha.max() == 255 and (alpha == 0).mean() > 0.3  # glyphs on transparency
    solid = image[alpha == 255][:, :3]
    assert (solid.min(axis=1) > 240).any() and (solid.max(axis=1) < 15).any()  # white glyphs, dark outline
    boxed = text_image("stats", 16, box_alpha=150, outline_px=0, mono=True)
    assert boxed[..., 3].min() >= 149  # a box behind every pixel
    two = text_image("a\nb", 20)
    assert two.shape[0] > text_image("a", 20).shape[0] * 1.6


def test_without_dejavu_pillows_own_font_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without fonts-dejavu-core draws with Pillow's scalable default font."""
    from alpha2.apps import osd

    monkeypatch.setattr(osd, "_font_file", lambda mono: None)
    osd._font.cache_clear()
    try:
        assert osd.font_source() == "Pillow's default font"
        image = text_image("0:12 / 1:30", 40)
        assert image.shape[0] >= 40 and image[..., 3].max() == 255
    finally:
        osd._font.cache_clear()


def test_characters_dejavu_lacks_are_drawn_in_a_fallback_font() -> None:
    """A Japanese subtitle is drawn in the font fontconfig names for it, as mpv draws it, not as DejaVu's
    missing-glyph boxes (an outside pass: '«quotes» 日本語' showed three boxes)."""
    if shutil.which("fc-match") is None:
        pytest.skip("no fontconfig")
    found = subprocess.run(
        ["fc-match", "--format=%{file}", "sans-serif:charset=65e5"], capture_output=True, text=True
    ).stdout
    if not found or "DejaVu" in found:
        pytest.skip("no font with Japanese glyphs here (fonts-droid-fallback, fonts-noto-cjk)")
    box = text_image("\U0010fffe", 40)  # a noncharacter: the missing-glyph box
    glyphs = [text_image(char, 40) for char in "日本語"]
    assert len({glyph.tobytes() for glyph in glyphs}) == 3
    assert not any(np.array_equal(glyph, box) for glyph in glyphs)
    line = text_image("Ünïcödé 日本語", 40)
    assert line.shape[0] == text_image("Ünïcödé", 40).shape[0]  # on the line's baseline, same height


def test_the_bar_shows_on_activity_and_fades() -> None:
    now = FakeTime()
    osd = Osd(clock=now)
    window = Size(640, 360)
    view = OsdView(position_s=30.0, duration_s=90.0)
    assert osd.layers(window, view) == []  # nothing until something happens
    osd.activity()
    layers = {layer.key: layer for layer in osd.layers(window, view)}
    assert set(layers) == {"bar", "time"}
    bar = layers["bar"]
    assert bar.rect == osd.bar_rect(window) and bar.opacity == 1.0
    assert bar.y + bar.pixels.shape[0] < window.height and layers["time"].y < bar.y
    # Filled up to a third: bright inside, dim beyond.
    row = bar.pixels[bar.pixels.shape[0] // 2]
    third = bar.pixels.shape[1] // 3
    assert row[third - 4, 3] > 200 and row[third + 4, 3] < 100
    now.now += SHOW_S + FADE_S / 2
    assert 0.3 < osd.layers(window, view)[0].opacity < 0.7  # fading
    now.now += FADE_S
    assert osd.layers(window, view) == []
    # Paused: the bar stays, and the pause sign is in the middle.
    paused = {layer.key: layer for layer in osd.layers(window, OsdView(30.0, 90.0, paused=True))}
    assert {"bar", "time", "pause"} <= set(paused)
    sign = paused["pause"].rect
    assert abs(sign.x + sign.width / 2 - window.width / 2) <= 1
    # A click on the bar gives the fraction under it; elsewhere nothing.
    rect = osd.bar_rect(window)
    assert osd.bar_fraction_at(window, rect.x + rect.width / 4, rect.y + 1) == pytest.approx(0.25)
    assert osd.bar_fraction_at(window, rect.x + 10, 20) is None


def test_messages_stats_help_and_subtitles_are_placed() -> None:
    now = FakeTime()
    osd = Osd(clock=now)
    window = Size(960, 540)
    osd.message("Volume: 80%")
    osd.show_stats = True
    view = OsdView(10.0, 60.0, subtitle="Hello\nworld", stats=["File: x.mkv"], help=["?  this help"])
    layers = {layer.key: layer for layer in osd.layers(window, view)}
    assert set(layers) == {"message", "stats", "subtitle"}
    osd.show_help = True  # the help hides the stats while it shows
    assert {layer.key for layer in osd.layers(window, view)} == {"message", "help", "subtitle"}
    osd.show_help = False
    assert layers["message"].y < layers["stats"].y  # the stats under the message, top left
    sub = layers["subtitle"].rect
    assert abs(sub.x + sub.width / 2 - window.width / 2) <= 1 and sub.y > window.height / 2
    now.now += 5
    assert "message" not in {layer.key for layer in osd.layers(window, view)}
    # Unchanged content is not drawn again: the same image object comes back.
    again = {layer.key: layer for layer in osd.layers(window, view)}
    assert again["stats"].pixels is layers["stats"].pixels


def test_keys_table_speeds_and_names() -> None:
    lines = keymap.help_lines(keymap.PLAYER_BINDINGS)
    assert any(line.startswith("?") for line in lines)
    assert len({line.index("  ") for line in lines if "  " in line}) >= 1
    assert keymap.scaled_speed(1.0, 1.1) == 1.1 and keymap.scaled_speed(1.1, 1 / 1.1) == 1.0
    assert keymap.scaled_speed(4.0, 2.0) == 4.0 and keymap.scaled_speed(0.25, 0.5) == 0.25
    assert keymap.key_name({"key": "/", "modifiers": ("Shift",)}) == "?"
    assert keymap.key_name({"key": "?", "modifiers": ()}) == "?"
    assert keymap.key_name({"key": "/", "modifiers": ()}) == "/"


def test_screenshot_names_never_overwrite(tmp_path: Path) -> None:
    source = str(tmp_path / "film.mkv")
    first = screenshot_path(source, 12.345)
    assert first == str(tmp_path / "film-0012.345.png")
    Path(first).write_bytes(b"x")
    assert screenshot_path(source, 12.345) == str(tmp_path / "film-0012.345-2.png")


def test_play_help_lists_the_keys(capsys: pytest.CaptureFixture[str]) -> None:
    from alpha2.apps.cli import main

    with pytest.raises(SystemExit):
        main(["play", "--help"])
    out = capsys.readouterr().out
    for needle in ("--loop", "--sub", "--no-sub", "--wall", "screenshot", "frame back", "fullscreen"):
        assert needle in out, needle


# ---------------------------------------------------------------------------------------------------
# the window, in-process on rendercanvas's offscreen canvas


def _playback(clip: str, **options: Any) -> WindowPlayback:
    pytest.importorskip("rendercanvas")
    options.setdefault("audio", False)
    run = Player(clip, PlayOptions(**options), pipeline.Progress())
    playback = WindowPlayback(run)
    playback.open("rendercanvas.offscreen", size=Size(640, 360))
    return playback


def _close(playback: WindowPlayback) -> Any:
    stats = playback.finish(1.0)
    playback.player.close()
    return stats


def _draw(playback: WindowPlayback) -> np.ndarray:
    return np.asarray(playback.canvas.draw())[..., :3].astype(np.int32)


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a - b).max(axis=2) > 24


@pytest.mark.vulkan
def test_each_overlay_is_drawn_over_the_frame(clip: str, tmp_path: Path) -> None:
    """Paused on one frame, each overlay changes the pixels where it lies and nowhere else."""
    playback = _playback(clip)
    shots = screenshots_dir(tmp_path)
    try:
        _draw(playback)
        assert playback.osd.layers(Size(640, 360), playback._osd_view()) == []
        playback._on_key({"key": " "})  # pause: the sign and the bar
        _draw(playback)
        overlay, playback.overlay = playback.overlay, None
        plain = _draw(playback)  # the same frame without the display
        playback.overlay = overlay
        save_png(shots / "offscreen-plain.png", plain.astype(np.uint8))
        window = Size(640, 360)
        box = letterbox(Size(W, H), window)
        playback.osd._active_until = -1e9  # the bar shows anyway while paused
        paused = _draw(playback)
        save_png(shots / "offscreen-paused.png", paused.astype(np.uint8))
        layers = {layer.key: layer.rect for layer in playback.osd.layers(window, playback._osd_view())}
        assert {"pause", "bar", "time"} <= set(layers)
        for key in ("pause", "bar", "time"):
            r = layers[key]
            assert _changed(paused, plain)[r.y : r.y + r.height, r.x : r.x + r.width].mean() > 0.1, key
        # Nothing changes far from the layers (the frame itself stays: the clock is paused).
        assert not _changed(paused, plain)[box.y : box.y + 40, box.x : box.x + 40].any()
        assert playback.title.endswith("[paused]") and "clip.mkv — 0:00 / 0:01" in playback.title

        before = paused
        for key, name, layer in (("0", "volume", "message"), ("i", "stats", "stats"), ("?", "help", "help")):
            playback._on_key({"key": key})
            image = _draw(playback)
            save_png(shots / f"offscreen-{name}.png", image.astype(np.uint8))
            rect = {item.key: item.rect for item in playback.osd.layers(window, playback._osd_view())}[layer]
            region = _changed(image, before)[rect.y : rect.y + rect.height, rect.x : rect.x + rect.width]
            assert region.mean() > 0.05, (name, region.mean())
            before = image
        assert playback.osd.current_message == "Volume: 102%"  # mpv's 2 % a step
        stats_text = "\n".join(playback._stats_lines())
        needles = ("File:", "Decoder: h264", "dropped", "late", "A/V offset", "Colour:", "System clock: ")
        for needle in needles:
            assert needle in stats_text, needle
        assert "Clock: system clock" not in stats_text  # the clock's kind said once (an outside pass)
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_keys_and_mouse(clip: str, tmp_path: Path) -> None:
    """Frame steps, speed, loop, screenshots, a click on the bar, the wheel, fullscreen's refusal here."""
    playback = _playback(clip)
    try:
        for _ in range(3):
            _draw(playback)
        playback._on_key({"key": " "})
        _draw(playback)
        at = playback.shown_pts
        assert at is not None
        playback._on_key({"key": "."})
        _draw(playback)
        assert playback.shown_pts == pytest.approx(at + 1 / 30, abs=1e-3) and playback.paused
        playback._on_key({"key": "."})
        _draw(playback)
        playback._on_key({"key": ","})
        _draw(playback)
        assert playback.shown_pts == pytest.approx(at + 1 / 30, abs=1e-3)
        playback._on_key({"key": ","})
        _draw(playback)
        assert playback.shown_pts == pytest.approx(at, abs=1e-3)

        playback._on_key({"key": "]"})  # mpv's: x1.1
        assert playback.speed == 1.1 and playback.clock is not None and playback.clock.speed == 1.1
        playback._on_key({"key": "["})
        playback._on_key({"key": "["})
        assert playback.speed == pytest.approx(1 / 1.1) and playback.osd.current_message == "Speed: 0.91"
        playback._on_key({"key": "Backspace"})
        assert playback.speed == 1.0

        playback._on_key({"key": "L"})  # mpv's loop-file key (l is its A-B loop)
        assert playback.loop and playback.osd.current_message == "Loop: yes"

        shot = playback.screenshot()
        assert shot is not None and Path(shot).parent == Path(clip).parent
        assert Path(shot).name == f"clip-{playback.shown_pts:08.3f}.png"
        playback._on_key({"key": "s"})
        second = playback.osd.current_message
        assert second is not None and second.endswith("-2.png")
        from tests.test_apps_play import read_png

        pixels = read_png(Path(shot))
        # The video's own size (as mpv's s takes it), not the 640x360 window's.
        assert pixels.shape[:2] == (H, W) and pixels[..., :3].mean() > 10
        for path in Path(clip).parent.glob("clip-*.png"):
            path.unlink()

        # A click on the bar's middle seeks to the middle of the clip.
        window = Size(640, 360)
        bar = playback.osd.bar_rect(window)
        ratio = playback.canvas.get_pixel_ratio()
        x, y = (bar.x + bar.width / 2) / ratio, (bar.y + bar.height / 2) / ratio
        playback._on_pointer_down({"x": x, "y": y, "button": 1})
        _draw(playback)
        duration = playback.duration_s
        assert duration is not None and playback.shown_pts == pytest.approx(duration / 2, abs=2 / 30)
        volume = playback.clock.volume
        playback._on_wheel({"dy": -100.0})
        assert playback.clock.volume == pytest.approx(min(2.0, volume + 0.02))  # a notch: mpv's 2 %
        assert playback.osd.current_message is not None and playback.osd.current_message.startswith("Volume")
        playback._on_key({"key": "f"})
        assert not playback.fullscreen and "Fullscreen: not here" in (playback.osd.current_message or "")
        playback._on_key({"key": "n"})
        assert playback.osd.current_message == "No next file"
        playback._on_key({"key": "Escape"})
        assert playback.canvas.get_closed()
    finally:
        _close(playback)


@pytest.mark.vulkan
def test_loop_plays_the_file_again(clip: str) -> None:
    import time

    playback = _playback(clip, loop=True, frames=FRAMES + 10)
    try:
        deadline = time.monotonic() + 20
        while not playback.canvas.get_closed() and time.monotonic() < deadline:
            playback.canvas.draw()
            time.sleep(1 / 60)
    finally:
        stats = _close(playback)
    assert stats.frames == FRAMES + 10  # past the clip's end: it started again


# ---------------------------------------------------------------------------------------------------
# a real glfw window on Xvfb, its surface read back after each draw


def _xvfb_screenshots(clip: str, subs: str, out: Path) -> dict[str, Any]:
    """Run under xvfb-run (``python tests/test_player_osd.py``): play ``clip`` in a glfw window, take a
    screenshot of the window's surface with each overlay, go fullscreen; a JSON report on stdout."""
    import time

    from alpha2.api.overlay import read_texture_rgba

    run = Player(clip, PlayOptions(audio=False, sub=subs), pipeline.Progress())
    playback = WindowPlayback(run)
    playback.readable_surface = True
    captured: dict[str, np.ndarray] = {}
    want: list[str] = []

    def grab(surface: Any) -> None:
        if want:
            name = want.pop(0)
            view_format = str(surface.format).replace("-srgb", "")
            pixels = _read_surface(run.device, surface, view_format, read_texture_rgba)
            captured[name] = pixels
            save_png(out / f"xvfb-{name}.png", pixels)

    report: dict[str, Any] = {}
    playback.on_present = grab
    try:
        playback.open("rendercanvas.glfw", size=Size(640, 360))
        canvas = playback.canvas
        glfw = __import__("glfw")

        def settle(size: tuple[int, int] | None) -> None:
            # Without a window manager the size asked for arrives with the next events.
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                glfw.poll_events()
                now = tuple(canvas.get_physical_size())
                if (size is None and now != tuple(report["window"])) or now == size:
                    return
                time.sleep(0.02)

        settle((640, 360))

        def draw(name: str | None = None) -> None:
            if name:
                want.append(name)
            canvas.force_draw()

        draw()
        playback._on_key({"key": " "})
        playback.seek(0.2, show_bar=False)  # paused on the subtitle's first cue
        playback.osd._active_until = -1e9
        playback.osd.show_help = playback.osd.show_stats = False
        subtitles = playback.subtitles
        assert subtitles is not None and subtitles.selected is not None
        subtitles.selected.wait(10)
        draw("paused")
        layers = playback.osd.layers(Size(640, 360), playback._osd_view())
        report["paused_layers"] = {layer.key: list(layer.rect.__dict__.values()) for layer in layers}
        playback._on_key({"key": "9"})
        draw("volume")
        playback._on_key({"key": "i"})
        draw("stats")
        report["stats_rect"] = _rect_of(playback, "stats")
        playback._on_key({"key": "i"})
        playback._on_key({"key": "/", "modifiers": ("Shift",)})
        draw("help")
        report["help_rect"] = _rect_of(playback, "help")
        playback._on_key({"key": "?"})
        playback._on_key({"key": " "})  # playing: no pause sign, the bar fades
        playback.osd._active_until = -1e9
        playback.osd._message = None
        playback.subtitles = None
        playback.seek(0.0, show_bar=False)
        draw("plain")
        report["window"] = list(canvas.get_physical_size())
        playback._on_key({"key": "f"})
        settle(None)
        draw()
        report["fullscreen"] = list(canvas.get_physical_size())
        report["fullscreen_flag"] = playback.fullscreen
        playback._on_key({"key": "Escape"})  # leaves fullscreen, does not quit
        report["closed_after_escape"] = canvas.get_closed()
        playback._on_key({"key": "q"})
        report["title"] = playback.title
    finally:
        playback.finish(1.0)
        run.close()
    report["captured"] = sorted(captured)
    return report


def _rect_of(playback: WindowPlayback, key: str) -> list[int]:
    width, height = playback.canvas.get_physical_size()
    for layer in playback.osd.layers(Size(width, height), playback._osd_view()):
        if layer.key == key:
            r = layer.rect
            return [r.x, r.y, r.width, r.height]
    raise AssertionError(f"no {key} layer")


def _read_surface(device: Any, surface: Any, view_format: str, read: Any) -> np.ndarray:
    """The surface's pixels: its bytes through a plain-format copy (an -srgb format is not read back)."""
    from alpha2.gpu.webgpu import gpu_module_of

    gpu = gpu_module_of(device)
    plain = device.create_texture(
        size=(int(surface.size[0]), int(surface.size[1]), 1),
        format=view_format,
        usage=gpu.TextureUsage.COPY_DST | gpu.TextureUsage.COPY_SRC,
    )
    encoder = device.create_command_encoder()
    encoder.copy_texture_to_texture(
        {"texture": surface, "mip_level": 0, "origin": (0, 0, 0)},
        {"texture": plain, "mip_level": 0, "origin": (0, 0, 0)},
        (int(surface.size[0]), int(surface.size[1]), 1),
    )
    device.queue.submit([encoder.finish()])
    pixels = read(device, plain)
    plain.destroy()
    return np.asarray(pixels)


@pytest.mark.vulkan
def test_overlays_in_a_real_window_on_a_virtual_display(clip: str, tmp_path: Path) -> None:
    """Screenshots of a glfw window's surface on Xvfb: the pause sign, bar, time, volume message, stats,
    help and a subtitle each change the picture where they lie; f makes the window the screen's size."""
    pytest.importorskip("rendercanvas")
    pytest.importorskip("glfw")
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run is not installed (apt-get install xvfb)")
    subs = tmp_path / "cues.srt"
    subs.write_text("1\n00:00:00,000 --> 00:00:05,000\nHello from the subtitles\n", encoding="utf-8")
    out = screenshots_dir(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    root = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    screen = ["-s", "-screen 0 1280x720x24"]
    command = ["xvfb-run", "-a", *screen, sys.executable, __file__, clip, str(subs), str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout[done.stdout.index("{") :])
    assert report["captured"] == sorted(["paused", "volume", "stats", "help", "plain"])
    from tests.test_apps_play import read_png

    shots = {n: read_png(out / f"xvfb-{n}.png")[..., :3].astype(np.int32) for n in report["captured"]}
    plain = shots["plain"]
    assert plain.shape[:2] == (360, 640)

    def changed(name: str, rect: list[int], against: np.ndarray = plain) -> float:
        x, y, w, h = rect
        return float(_changed(shots[name], against)[y : y + h, x : x + w].mean())

    for key in ("pause", "bar", "time", "subtitle"):
        assert changed("paused", report["paused_layers"][key]) > 0.05, key
    assert changed("stats", report["stats_rect"], shots["volume"]) > 0.05
    assert changed("help", report["help_rect"], shots["volume"]) > 0.05
    assert report["fullscreen_flag"] and report["fullscreen"] == [1280, 720], report
    assert not report["closed_after_escape"]


if __name__ == "__main__":
    # The Xvfb test's window, run under xvfb-run: CLIP SUBS OUT_DIR.
    print(json.dumps(_xvfb_screenshots(sys.argv[1], sys.argv[2], Path(sys.argv[3]))))


def test_the_bar_ticks_where_chapters_begin() -> None:
    from alpha2.apps.osd import bar_image

    bar = bar_image(102, 6, 0.5, (0.25, 0.75))
    ticks = [x for x in range(1, 101) if tuple(bar[3, x]) == (0, 0, 0, 200)]
    assert ticks == [26, 76]  # 1 + 100 * mark: dark on the filled part and on the track alike
    assert not (bar_image(102, 6, 0.5)[3, 1:101, 3] == 200).any()


@pytest.mark.parametrize("window", [Size(180, 320), Size(200, 356), Size(320, 180)])
def test_the_key_help_fits_a_narrow_window(window: Size) -> None:
    """``?`` in a window 180 px wide (a phone's clip, rotated): the help ran off the right edge, its
    lines cut after 'pause / pl'; they wrap now, under what they say, and go in two columns where one
    is too tall (in 320x180 one column ran off the bottom, at 18 lines)."""
    from alpha2.apps.keys import PLAYER_BINDINGS, help_lines
    from alpha2.apps.osd import Osd, OsdView, help_columns, wrap_help_line

    view = OsdView(0.0, 10.0, help=help_lines(PLAYER_BINDINGS))
    (layer,) = [item for item in Osd(show_help=True).layers(window, view) if item.key == "help"]
    rect = layer.rect
    assert rect.x >= 0 and rect.x + rect.width <= window.width, (window, rect)
    assert rect.y >= 0 and rect.y + rect.height <= window.height, (window, rect)
    # Every word of the help is still there, wrapped.
    for chars in (24, 40):
        pieces = help_columns(tuple(help_lines(PLAYER_BINDINGS)), chars, 1)
        assert max(len(piece) for piece in pieces) <= chars
        words = " ".join(pieces).split()
        assert words == " ".join(help_lines(PLAYER_BINDINGS)).split()
    line = "space, p         pause / play (a right click too)"
    assert wrap_help_line(line, 40) == [
        "space, p         pause / play (a right",
        "                 click too)",
    ]
    assert wrap_help_line(line, 30) == [
        "space, p",
        "  pause / play (a right click",
        "  too)",
    ]  # under the keys
    assert wrap_help_line(line, 60) == [line]


@pytest.fixture
def no_dejavu(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The OSD as on the GPU machine: no DejaVu font (Pillow's own, proportional, draws the text), and
    no fontconfig (``fc-match`` is not found). The module's caches (fonts, glyphs, layouts) are emptied
    before and after, so that no other test sees its fonts."""
    from alpha2.apps import osd

    def clear() -> None:
        for value in vars(osd).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()

    clear()
    monkeypatch.setattr(osd, "_font_file", lambda mono: None)
    monkeypatch.setenv("PATH", "")
    yield
    monkeypatch.undo()
    clear()


@pytest.mark.parametrize("window", [Size(180, 320), Size(200, 356), Size(320, 180), Size(300, 700)])
def test_the_key_help_and_stats_fit_without_the_dejavu_font(no_dejavu: None, window: Size) -> None:
    """With Pillow's own font (the GPU machine has no DejaVu): the help's characters a row were counted
    from the width of an "M", twice this font's average letter, so it was laid out for half the window's
    width and ran off its bottom (86x392 in 180x320, 154x222 in 320x180). They are measured now."""
    from alpha2.apps.keys import PLAYER_BINDINGS, help_lines
    from alpha2.apps.osd import font_source

    assert font_source() == "Pillow's default font"
    stats = [
        "File: /home/someone/Videos/normal.mp4",
        "Decoder: h264 (h264, software); 1280x720, 30.000 fps",
        "A/V offset: +16.7 ms (mean 6.0 ms, max 28.8 ms; refresh 200 Hz)",
        "Audio clock: system (JACK Audio Connection Kit), 48000 Hz, 2 ch, output latency 21.3 ms",
    ]
    view = OsdView(0.0, 10.0, help=help_lines(PLAYER_BINDINGS), stats=stats)
    for key, osd in (("help", Osd(show_help=True)), ("stats", Osd(show_stats=True))):
        (layer,) = [item for item in osd.layers(window, view) if item.key == key]
        rect = layer.rect
        assert rect.x >= 0 and rect.x + rect.width <= window.width, (key, window, rect)
        assert rect.y >= 0 and rect.y + rect.height <= window.height, (key, window, rect)
    # It uses the room: not a narrow column down the middle.
    (layer,) = [item for item in Osd(show_help=True).layers(window, view) if item.key == "help"]
    assert layer.rect.width > window.width * 0.7, (window, layer.rect)
