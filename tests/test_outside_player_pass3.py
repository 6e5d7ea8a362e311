"""Faults found by a third outside pass over ``alpha2 play`` in a window under Xvfb, as a person who
plays with mpv every day would meet them, each with the check that it stays fixed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from alpha2.apps.osd import Osd, OsdView
from alpha2.gpu.geometry import Size
from tests.media import make_clip
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
