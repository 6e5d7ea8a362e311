"""The player's keys and mouse, in one table: ``alpha2 play --help`` and the ``?`` overlay print it, and
:func:`key_name` turns a rendercanvas key event into the names the windows dispatch on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AUDIO_BINDINGS",
    "PLAYER_BINDINGS",
    "PLAYLIST_AUDIO_BINDINGS",
    "SPEEDS",
    "WALL_BINDINGS",
    "Binding",
    "help_lines",
    "key_name",
    "next_speed",
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
    Binding("[ / ]", "slower / faster, 0.25x to 4x (the sound keeps its pitch)"),
    Binding("Backspace", "normal speed"),
    Binding("9 / 0, wheel", "volume down / up"),
    Binding("m / #", "mute / next audio track"),
    Binding("f, double-click", "fullscreen"),
    Binding("click the bar", "seek there (moving the mouse, o or P shows it)"),
    Binding("s", "screenshot: NAME-SECONDS.png next to the input"),
    Binding("l / L", "A-B loop (A, B, off) / loop the file"),
    Binding("j", "next subtitle track (or none)"),
    Binding("> / <, Enter", "next / previous file (PgUp / PgDn: chapter)"),
    Binding("i", "stats"),
    Binding("?", "this help"),
    Binding("q, Esc", "quit (Esc leaves fullscreen first)"),
)
"""What the single-video window does with each key."""

WALL_BINDINGS: tuple[Binding, ...] = (
    Binding("space, p", "pause / play every tile"),
    Binding("Left / Right", "seek every tile -5 / +5 s"),
    Binding("Down / Up", "seek every tile -60 / +60 s"),
    Binding("a", "play the next tile's sound (or none)"),
    Binding("9 / 0, wheel", "volume down / up"),
    Binding("m", "mute"),
    Binding("f, double-click", "fullscreen"),
    Binding("?", "this help"),
    Binding("q, Esc", "quit (Esc leaves fullscreen first)"),
)
"""What the wall's window does with each key."""

AUDIO_BINDINGS: tuple[Binding, ...] = (
    Binding("space, p", "pause / play (a right click too)"),
    Binding("Left / Right", "seek -5 / +5 s (Shift: 1 s)"),
    Binding("Down / Up", "seek -60 / +60 s (Shift: 5 s)"),
    Binding("9 / 0, wheel", "volume down / up"),
    Binding("m / #", "mute / next audio track"),
    Binding("PgUp / PgDn", "next / previous chapter"),
    Binding("f, double-click", "fullscreen"),
    Binding("click the bar", "seek there"),
    Binding("?", "this help"),
    Binding("q, Esc", "quit (Esc leaves fullscreen first)"),
)
"""What the window of a file without video does with each key."""

PLAYLIST_AUDIO_BINDINGS: tuple[Binding, ...] = (
    Binding("space, p", "pause / play (a right click too)"),
    Binding("Left / Right", "seek -5 / +5 s (Shift: 1 s)"),
    Binding("Down / Up", "seek -60 / +60 s (Shift: 5 s)"),
    Binding("[ / ]", "slower / faster, 0.25x to 4x (the sound keeps its pitch)"),
    Binding("Backspace", "normal speed"),
    Binding("9 / 0, wheel", "volume down / up"),
    Binding("m / #", "mute / next audio track"),
    Binding("PgUp / PgDn", "next / previous chapter"),
    Binding("f, double-click", "fullscreen"),
    Binding("click the bar", "seek there"),
    Binding("l / L", "A-B loop (A, B, off) / loop the file"),
    Binding("> / <, Enter", "next / previous file"),
    Binding("i", "stats"),
    Binding("?", "this help"),
    Binding("q, Esc", "quit (Esc leaves fullscreen first)"),
)
"""What the window of a playlist does with each key while a file without video plays."""

SPEEDS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0)
"""The playback speeds ``[`` and ``]`` step through."""


def next_speed(speed: float, step: int) -> float:
    """The speed one ``step`` (+1 faster, -1 slower) from ``speed`` along :data:`SPEEDS`, clamped."""
    if step > 0:
        faster = [s for s in SPEEDS if s > speed + 1e-9]
        return faster[0] if faster else SPEEDS[-1]
    slower = [s for s in SPEEDS if s < speed - 1e-9]
    return slower[-1] if slower else SPEEDS[0]


def help_lines(bindings: Sequence[Binding]) -> list[str]:
    """The bindings as aligned lines (keys, then what they do)."""
    width = max(len(b.keys) for b in bindings)
    return [f"{b.keys.ljust(width)}  {b.action}" for b in bindings]


_SHIFTED = {"/": "?", "3": "#", ",": "<", ".": ">"}
"""The shifted glyphs the windows use, by the key under them on a US layout."""


def key_name(event: Mapping[str, Any]) -> str:
    """The key of a rendercanvas ``key_down`` event as the windows name it: glfw reports the key under
    the glyph (Shift+/ arrives as ``/`` with Shift held, Shift+3 as ``3``), so the shifted glyphs used
    here are mapped."""
    key = str(event.get("key", ""))
    if "Shift" in tuple(event.get("modifiers", ()) or ()):
        return _SHIFTED.get(key, key)
    return key
