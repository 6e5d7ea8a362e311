"""The player's keys and mouse, in one table: ``alpha2 play --help`` and the ``?`` overlay print it, and
:func:`key_name` turns a rendercanvas key event into the names the windows dispatch on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AUDIO_BINDINGS",
    "MAX_SPEED",
    "MIN_SPEED",
    "PLAYER_BINDINGS",
    "PLAYLIST_AUDIO_BINDINGS",
    "SPEED_FACTORS",
    "WALL_BINDINGS",
    "Binding",
    "help_lines",
    "key_name",
    "scaled_speed",
]


@dataclass(frozen=True)
class Binding:
    """One line of the key help."""

    keys: str
    """The keys or mouse gesture, as shown."""
    action: str
    """What they do."""


PLAYER_BINDINGS: tuple[Binding, ...] = (
    Binding("space, p", "pause / play (a right click too)"),
    Binding("Left / Right", "seek -5 / +5 s (Shift: 1 s)"),
    Binding("Down / Up", "seek -60 / +60 s (Shift: 5 s)"),
    Binding(", / .", "one frame back / forward (pauses)"),
    Binding("[ / ], { / }", "speed x1/1.1 / x1.1, x0.5 / x2 (0.25 to 4)"),
    Binding("Backspace", "normal speed (the sound keeps its pitch)"),
    Binding("9 / 0, wheel", "volume -2 / +2 %"),
    Binding("m / #", "mute / next audio track (or none)"),
    Binding("Ctrl+- / Ctrl++", "audio delay -0.1 / +0.1 s"),
    Binding("f, double-click", "fullscreen"),
    Binding("click the bar", "seek there (moving the mouse, o or P shows it)"),
    Binding("s", "screenshot: NAME-SECONDS.png next to the input"),
    Binding("l / L", "A-B loop (A, B, off) / loop the file"),
    Binding("j / v", "next subtitle track (or none) / hide or show them"),
    Binding("z / Z", "subtitle delay -0.1 / +0.1 s"),
    Binding("> / <, Enter", "next / previous file (PgUp / PgDn: chapter)"),
    Binding("i", "stats"),
    Binding("?", "this help"),
    Binding("q, Esc, Ctrl+W", "quit (Esc leaves fullscreen first)"),
)
"""What the single-video window does with each key."""

WALL_BINDINGS: tuple[Binding, ...] = (
    Binding("space, p", "pause / play every tile"),
    Binding("Left / Right", "seek every tile -5 / +5 s"),
    Binding("Down / Up", "seek every tile -60 / +60 s"),
    Binding("a", "play the next tile's sound (or none)"),
    Binding("9 / 0, wheel", "volume -2 / +2 %"),
    Binding("m", "mute"),
    Binding("f, double-click", "fullscreen"),
    Binding("?", "this help"),
    Binding("q, Esc, Ctrl+W", "quit (Esc leaves fullscreen first)"),
)
"""What the wall's window does with each key."""

AUDIO_BINDINGS: tuple[Binding, ...] = (
    Binding("space, p", "pause / play (a right click too)"),
    Binding("Left / Right", "seek -5 / +5 s (Shift: 1 s)"),
    Binding("Down / Up", "seek -60 / +60 s (Shift: 5 s)"),
    Binding("9 / 0, wheel", "volume -2 / +2 %"),
    Binding("m / #", "mute / next audio track (or none)"),
    Binding("PgUp / PgDn", "next / previous chapter"),
    Binding("f, double-click", "fullscreen"),
    Binding("click the bar", "seek there"),
    Binding("?", "this help"),
    Binding("q, Esc, Ctrl+W", "quit (Esc leaves fullscreen first)"),
)
"""What the window of a file without video does with each key."""

PLAYLIST_AUDIO_BINDINGS: tuple[Binding, ...] = (
    Binding("space, p", "pause / play (a right click too)"),
    Binding("Left / Right", "seek -5 / +5 s (Shift: 1 s)"),
    Binding("Down / Up", "seek -60 / +60 s (Shift: 5 s)"),
    Binding("[ / ], { / }", "speed x1/1.1 / x1.1, x0.5 / x2 (0.25 to 4)"),
    Binding("Backspace", "normal speed (the sound keeps its pitch)"),
    Binding("9 / 0, wheel", "volume -2 / +2 %"),
    Binding("m / #", "mute / next audio track (or none)"),
    Binding("PgUp / PgDn", "next / previous chapter"),
    Binding("f, double-click", "fullscreen"),
    Binding("click the bar", "seek there"),
    Binding("l / L", "A-B loop (A, B, off) / loop the file"),
    Binding("> / <, Enter", "next / previous file"),
    Binding("i", "stats"),
    Binding("?", "this help"),
    Binding("q, Esc, Ctrl+W", "quit (Esc leaves fullscreen first)"),
)
"""What the window of a playlist does with each key while a file without video plays."""

MIN_SPEED = 0.25
"""The slowest speed (FFmpeg's atempo keeps the pitch from 0.25 to 4)."""
MAX_SPEED = 4.0
"""The fastest speed."""
SPEED_FACTORS: dict[str, float] = {"[": 1 / 1.1, "]": 1.1, "{": 0.5, "}": 2.0}
"""What each speed key multiplies the speed by, as mpv's input.conf (``multiply speed 1.1`` ...)."""


def scaled_speed(speed: float, factor: float) -> float:
    """``speed`` times ``factor``, clamped to :data:`MIN_SPEED` .. :data:`MAX_SPEED` (rounded to 6
    places, so that ``]`` then ``[`` comes back to exactly 1)."""
    return min(MAX_SPEED, max(MIN_SPEED, round(speed * factor, 6)))


def help_lines(bindings: Sequence[Binding]) -> list[str]:
    """The bindings as aligned lines (keys, then what they do)."""
    width = max(len(b.keys) for b in bindings)
    return [f"{b.keys.ljust(width)}  {b.action}" for b in bindings]


_SHIFTED = {"/": "?", "3": "#", ",": "<", ".": ">", "[": "{", "]": "}"}
"""The shifted glyphs the windows use, by the key under them on a US layout."""

_WITH_CONTROL = {"w": "Ctrl+w", "-": "Ctrl+-", "=": "Ctrl++", "+": "Ctrl++"}
"""The keys the windows bind with Ctrl held, by the key under them (``Ctrl+w``, mpv's quit; ``Ctrl+-`` /
``Ctrl++``, its audio delay: + is Shift+= on a US layout, and Ctrl+= is taken as it); with others Ctrl
changes nothing."""


def key_name(event: Mapping[str, Any]) -> str:
    """The key of a rendercanvas ``key_down`` event as the windows name it: glfw reports the key under
    the glyph (Shift+/ arrives as ``/`` with Shift held, Shift+3 as ``3``), so the shifted glyphs used
    here are mapped; the keys bound with Ctrl are named ``Ctrl+w``, ``Ctrl+-``, ``Ctrl++``."""
    key = str(event.get("key", ""))
    modifiers = tuple(event.get("modifiers", ()) or ())
    if "Shift" in modifiers:
        key = _SHIFTED.get(key, key)
    if "Control" in modifiers:
        return _WITH_CONTROL.get(key.lower(), key)
    return key
