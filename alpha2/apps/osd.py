"""The player's on-screen display: what is drawn over the video, as RGBA images placed in the window.

Text is rasterised with Pillow's TrueType renderer (DejaVu Sans from Debian's ``fonts-dejavu-core`` when
it is installed, else Pillow's own scalable default font; a character it has no glyph for, such as
Chinese or Japanese, in the font fontconfig names for it, as libass finds one for mpv), white with a
dark outline so that it reads over any picture. :class:`Osd` decides what shows and where, from what the
window tells it (:class:`OsdView`) and the time: the time / duration and a progress bar on a seek or a
mouse move, fading after :data:`SHOW_S`; a pause sign; short messages (``Volume: 80%``, ``Mute: yes``);
the stats (``i``) and the key help (``?``); the subtitle on display, bottom centre. It hands out
:class:`Layer` values; the window uploads them (:mod:`alpha2.api.overlay`) and blends them over the
frame on the GPU. Rasterised images are cached by their content, so an unchanged display costs no Pillow
work.
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import textwrap
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from alpha2.gpu.geometry import Rect, Size

__all__ = [
    "FADE_S",
    "MESSAGE_S",
    "SHOW_S",
    "Layer",
    "Osd",
    "OsdView",
    "balanced_wrap",
    "font_source",
    "format_time",
    "help_columns",
    "text_image",
    "wrap_help_line",
    "wrap_to_width",
]

SHOW_S = 1.5
"""How long the time and progress bar stay after a seek or a mouse move, before fading."""
FADE_S = 0.3
"""How long they take to fade out."""
MESSAGE_S = 1.5
"""How long a message (volume, mute, speed, ...) stays."""

_FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/local/share/fonts")
_WHITE = (255, 255, 255)
_OUTLINE = (0, 0, 0)


def format_time(seconds: float | None) -> str:
    """``0:12``, ``1:02:03``; ``--:--`` when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "--:--"
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@functools.cache
def _font_file(mono: bool) -> str | None:
    name = "DejaVuSansMono.ttf" if mono else "DejaVuSans.ttf"
    for folder in _FONT_DIRS:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


def font_source() -> str:
    """Which font the text is drawn with: a DejaVu file, or Pillow's built-in default."""
    return _font_file(False) or "Pillow's default font"


@functools.lru_cache(maxsize=32)
def _font(size_px: int, mono: bool) -> Any:
    from PIL import ImageFont

    path = _font_file(mono) or _font_file(False)
    if path is not None:
        return ImageFont.truetype(path, size_px)
    return ImageFont.load_default(size=size_px)  # scalable since Pillow 10.1


@functools.lru_cache(maxsize=32)
def _fallback_font(path: str, size_px: int) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(path, size_px)


_NO_GLYPH = "\U0010fffe"  # a noncharacter: no font maps it, so it draws as the font's missing-glyph box


@functools.cache
def _has_glyph(path: str | None, char: str) -> bool:
    """Whether the font file at ``path`` (None: Pillow's default font) draws ``char``, not as its
    missing-glyph box (Pillow has no call that says)."""
    from PIL import ImageFont

    font = ImageFont.load_default(size=32) if path is None else _fallback_font(path, 32)
    mask, missing = font.getmask(char), font.getmask(_NO_GLYPH)
    return mask.size != missing.size or bytes(mask) != bytes(missing)


_fallbacks: list[str] = []
"""The fallback fonts found so far, asked first (one fontconfig look-up per script, not per character)."""


@functools.cache
def _fallback_file(char: str) -> str | None:
    """A font file that draws ``char``: one found before, else the one fontconfig's ``fc-match`` names
    for it; None when neither does (no fontconfig, no such font: the missing-glyph box is drawn)."""
    for path in _fallbacks:
        if _has_glyph(path, char):
            return path
    try:
        found = subprocess.run(
            ["fc-match", "--format=%{file}", f"sans-serif:charset={ord(char):x}"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        if not found or not _has_glyph(found, char):
            return None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None  # no fontconfig, or a font Pillow cannot open
    _fallbacks.append(found)
    return found


def _runs(line: str, size_px: int, mono: bool) -> list[tuple[Any, str]]:
    """``line`` cut into runs of one font each: the OSD's, and fallback fonts for the characters it has
    no glyph for (a line of Latin text is one run)."""
    main, main_path = _font(size_px, mono), _font_file(mono) or _font_file(False)
    runs: list[tuple[Any, str]] = []
    for char in line:
        path = None if _has_glyph(main_path, char) else _fallback_file(char)
        font = main if path is None else _fallback_font(path, size_px)
        if runs and runs[-1][0] is font:
            runs[-1] = (font, runs[-1][1] + char)
        else:
            runs.append((font, char))
    return runs


def _length(line: str, size_px: int, mono: bool) -> float:
    """How wide ``line`` is drawn at ``size_px`` (without the outline)."""
    return float(sum(font.getlength(text) for font, text in _runs(line, size_px, mono)))


def text_image(
    text: str,
    size_px: int,
    *,
    outline_px: int | None = None,
    mono: bool = False,
    align: str = "left",
    box_alpha: int = 0,
) -> np.ndarray:
    """``text`` (lines split at ``\\n``) as an (H, W, 4) uint8 RGBA image of straight alpha: white
    glyphs with a dark outline of ``outline_px`` (default size / 12), on transparency or, with
    ``box_alpha`` > 0, on a dark box of that alpha with a margin."""
    from PIL import Image, ImageDraw

    size_px = max(6, int(size_px))
    font = _font(size_px, mono)
    outline = max(1, round(size_px / 12)) if outline_px is None else max(0, outline_px)
    lines = (text or " ").split("\n")
    ascent, descent = font.getmetrics()
    line_height = ascent + descent + max(2, size_px // 5)
    runs = [_runs(line, size_px, mono) for line in lines]
    widths = [math.ceil(sum(face.getlength(part) for face, part in line)) for line in runs]
    pad = max(size_px // 3, outline + 1) if box_alpha else outline + 1
    width = max(widths) + 2 * outline + 2 * pad
    height = line_height * (len(lines) - 1) + ascent + descent + 2 * outline + 2 * pad
    # Line by line, so that the glyphs and their outline share one origin (Pillow's multiline text
    # spaces stroked lines further apart than plain ones).
    origins = []
    for index, line_width in enumerate(widths):
        shift = {"center": (max(widths) - line_width) // 2, "right": max(widths) - line_width}.get(align, 0)
        origins.append((pad + outline + shift, pad + outline + index * line_height))

    def coverage(stroke: int) -> np.ndarray:
        mask = Image.new("L", (width, height), 0)
        draw = ImageDraw.Draw(mask)
        for line_runs, (x, y) in zip(runs, origins, strict=True):
            for face, part in line_runs:
                # A fallback font's run sits on the OSD font's baseline.
                at, anchor = ((x, y), "la") if face is font else ((x, y + ascent), "ls")
                draw.text(at, part, font=face, anchor=anchor, fill=255, stroke_width=stroke, stroke_fill=255)
                x += face.getlength(part)
        return np.asarray(mask, np.float32) / 255.0

    fill = coverage(0)
    shape = np.maximum(coverage(outline), fill) if outline else fill
    # The glyph over its outline: white where the glyph covers, dark where only the outline does.
    share = np.divide(fill, shape, out=np.zeros_like(fill), where=shape > 0)
    rgb = np.asarray(_OUTLINE, np.float32) + share[..., None] * (
        np.asarray(_WHITE, np.float32) - np.asarray(_OUTLINE, np.float32)
    )
    alpha = shape
    if box_alpha:
        # Over a dark box: composite the text over it (the box is black).
        box = box_alpha / 255.0
        out_alpha = alpha + box * (1.0 - alpha)
        rgb = np.divide(
            rgb * alpha[..., None],
            out_alpha[..., None],
            out=np.zeros_like(rgb),
            where=out_alpha[..., None] > 0,
        )
        alpha = out_alpha
    out = np.empty((height, width, 4), np.uint8)
    out[..., :3] = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    out[..., 3] = np.clip(np.rint(alpha * 255.0), 0, 255).astype(np.uint8)
    return out


def wrap_to_width(text: str, size_px: int, width_px: int, *, mono: bool = False) -> str:
    """``text`` with its lines broken at spaces (inside a word too long for a line of its own) so that
    each, drawn at ``size_px`` with its outline, is at most ``width_px`` wide."""
    size_px = max(6, int(size_px))
    room = max(1, width_px - 2 * (max(1, round(size_px / 12)) + 1))

    def length(part: str) -> float:
        return _length(part, size_px, mono)

    out: list[str] = []
    for line in (text or "").split("\n"):
        current = ""
        for word in line.split(" "):
            candidate = f"{current} {word}" if current else word
            if current and length(candidate) > room:
                out.append(current)
                candidate = word
            current = candidate
            while len(current) > 1 and length(current) > room:  # a path, a URL: cut it
                cut = len(current) - 1
                while cut > 1 and length(current[:cut]) > room:
                    cut -= 1
                out.append(current[:cut])
                current = current[cut:]
        out.append(current)
    return "\n".join(out)


def balanced_wrap(line: str, size_px: int, width_px: int) -> str:
    """``line`` broken as :func:`wrap_to_width` breaks it, measured in pixels, into as few lines but
    of even lengths, as libass wraps a subtitle by default (its WrapStyle 0): a long line is two
    halves, not a full line and one word under it. Wrapped by a count of characters, a line of
    Japanese ran off both sides of the window."""
    wrapped = wrap_to_width(line, size_px, width_px)
    count = wrapped.count("\n")
    if count == 0:
        return wrapped
    low, high = width_px // (count + 1), width_px  # the narrowest room that keeps the count
    while high - low > 2:
        middle = (low + high) // 2
        if wrap_to_width(line, size_px, middle).count("\n") == count:
            high = middle
        else:
            low = middle
    return wrap_to_width(line, size_px, high)


def bar_image(width: int, height: int, fraction: float, marks: Sequence[float] = ()) -> np.ndarray:
    """The progress bar: a dark-edged translucent track, filled white up to ``fraction``, with a dark
    tick at each of ``marks`` (fractions of the length: the chapters' starts, as mpv's bar has them)."""
    width, height = max(4, width), max(4, height)
    out = np.zeros((height, width, 4), np.uint8)
    out[...] = (0, 0, 0, 170)  # the edge
    out[1:-1, 1:-1] = (255, 255, 255, 70)  # the track
    filled = round((width - 2) * min(max(fraction, 0.0), 1.0))
    if filled > 0:
        out[1:-1, 1 : 1 + filled] = (255, 255, 255, 235)
    for mark in marks:
        if 0.0 < mark < 1.0:
            x = 1 + round((width - 2) * mark)
            out[1:-1, x : x + 1] = (0, 0, 0, 200)
    return out


def pause_image(size_px: int) -> np.ndarray:
    """The pause sign: two white bars with a dark outline on a round dark backdrop."""
    size = max(12, size_px)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    centre = size / 2
    disc = np.clip(centre - np.hypot(x - centre, y - centre), 0.0, 1.0)
    bar_w, bar_h = size * 0.14, size * 0.46
    gap = size * 0.09
    top, bottom = centre - bar_h / 2, centre + bar_h / 2

    def bar(left: float) -> np.ndarray:
        inside_x = np.clip(np.minimum(x - left, left + bar_w - x) + 0.5, 0.0, 1.0)
        inside_y = np.clip(np.minimum(y - top, bottom - y) + 0.5, 0.0, 1.0)
        return np.asarray(inside_x * inside_y, np.float32)

    bars = np.maximum(bar(centre - gap - bar_w), bar(centre + gap))
    backdrop = disc * 0.45
    alpha = bars + backdrop * (1.0 - bars)
    rgb = np.divide(bars * 255.0, alpha, out=np.zeros_like(alpha), where=alpha > 0)
    out = np.empty((size, size, 4), np.uint8)
    out[..., 0] = out[..., 1] = out[..., 2] = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    out[..., 3] = np.clip(np.rint(alpha * 255.0), 0, 255).astype(np.uint8)
    return out


@dataclass(frozen=True, eq=False)
class Layer:
    """One image of the display, placed in the window."""

    key: str
    """What it is: ``bar``, ``time``, ``pause``, ``message``, ``stats``, ``help``, ``subtitle`` (and
    ``subtitle_top``, ``subtitle_middle``), ... (one GPU sprite each)."""
    pixels: np.ndarray
    """(H, W, 4) uint8 RGBA, straight alpha; the same object while its content is unchanged."""
    x: int
    """Left edge in window pixels."""
    y: int
    """Top edge in window pixels."""
    opacity: float = 1.0
    """0..1 (fading)."""

    @property
    def rect(self) -> Rect:
        """Where it lies in the window."""
        return Rect(self.x, self.y, int(self.pixels.shape[1]), int(self.pixels.shape[0]))


@dataclass
class OsdView:
    """What the window tells the display at a draw."""

    position_s: float
    """The media time on screen."""
    duration_s: float | None
    """The clip's length, when known."""
    paused: bool = False
    """Whether playback is paused (the pause sign, and the bar stays)."""
    subtitle: str | None = None
    """The subtitle text on display now, if any (bottom centre)."""
    subtitle_top: str | None = None
    """Subtitle text placed at the top (an ASS ``{\\an8}`` sign, a second speaker), if any."""
    subtitle_middle: str | None = None
    """Subtitle text placed in the middle, if any."""
    stats: Sequence[str] = ()
    """The stats lines (drawn while the stats are toggled on)."""
    help: Sequence[str] = ()
    """The key help lines (drawn while the help is toggled on)."""
    marks: Sequence[float] = ()
    """Where the chapters begin, as fractions of the duration (ticks on the bar)."""


@dataclass
class Osd:
    """Decides what the display shows and where; rasterises it, cached by content."""

    clock: Callable[[], float] = time.monotonic
    """Seconds, for the fading (tests pass their own)."""
    show_stats: bool = False
    """The stats overlay (``i``)."""
    show_help: bool = False
    """The key help (``?``)."""
    always_bar: bool = False
    """The time and the bar show all the time (a file without video: nothing else is on screen)."""
    _active_until: float = -math.inf
    _message: tuple[str, float] | None = None
    _cache: OrderedDict[tuple[Any, ...], np.ndarray] = field(default_factory=OrderedDict)

    # -- what happened ------------------------------------------------------------------------------

    def activity(self) -> None:
        """A seek or a mouse move: the time and the bar show for :data:`SHOW_S`."""
        self._active_until = self.clock() + SHOW_S

    def message(self, text: str) -> None:
        """Show ``text`` (top left) for :data:`MESSAGE_S`."""
        self._message = (text, self.clock() + MESSAGE_S)

    def clear_message(self) -> None:
        """Take the message off (a file's own message does not stay over the next file)."""
        self._message = None

    @property
    def current_message(self) -> str | None:
        """The message on display now, if any."""
        if self._message is None or self.clock() >= self._message[1] + FADE_S:
            return None
        return self._message[0]

    # -- sizes --------------------------------------------------------------------------------------

    @staticmethod
    def _sizes(window: Size) -> dict[str, int]:
        # The window's short side: a portrait window (a phone's video, 360x640) sized its text from a
        # 16:9 box inside its width, 12 px where mpv's scales with the window.
        short = min(window.width, window.height)
        return {
            "margin": max(4, short // 36),
            "text": max(12, min(44, short // 18)),
            "small": max(10, min(24, short // 34)),
            "subtitle": max(14, min(64, short // 14)),
            "bar": max(6, short // 70),
            "pause": max(24, short // 6),
        }

    def bar_rect(self, window: Size) -> Rect:
        """Where the progress bar lies in ``window`` (whether it shows or not)."""
        sizes = self._sizes(window)
        margin, bar = sizes["margin"], sizes["bar"]
        return Rect(margin, window.height - margin - bar, max(4, window.width - 2 * margin), bar)

    def bar_fraction_at(self, window: Size, x: float, y: float) -> float | None:
        """The fraction of the clip at window pixel (``x``, ``y``) when it is on the progress bar (a
        little above and below counts), else None."""
        rect = self.bar_rect(window)
        slack = max(6, rect.height)
        if not (rect.y - slack <= y <= rect.y + rect.height + slack and rect.x <= x <= rect.x + rect.width):
            return None
        return min(max((x - rect.x) / rect.width, 0.0), 1.0)

    def showing_bar(self, paused: bool) -> bool:
        """Whether the time and the bar are on screen (or fading)."""
        return self._bar_opacity(paused) > 0.0

    def _bar_opacity(self, paused: bool) -> float:
        if paused or self.always_bar:
            return 1.0
        left = self._active_until - self.clock()
        if left >= 0:
            return 1.0
        return max(0.0, 1.0 + left / FADE_S)

    # -- what shows ---------------------------------------------------------------------------------

    def _cached(self, key: tuple[Any, ...], make: Callable[[], np.ndarray]) -> np.ndarray:
        image = self._cache.get(key)
        if image is None:
            image = make()
            self._cache[key] = image
            while len(self._cache) > 48:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return image

    def _text(self, text: str, size: int, **options: Any) -> np.ndarray:
        key = ("text", text, size, tuple(sorted(options.items())))
        return self._cached(key, lambda: text_image(text, size, **options))

    def _subtitle_pixels(self, text: str, sizes: dict[str, int], window: Size) -> Any:
        """A subtitle's text, wrapped to 90% of the window, outlined, centred line by line."""
        size = sizes["subtitle"]
        outline = max(2, size // 14)

        def make() -> np.ndarray:
            room = int(window.width * 0.9)
            wrapped = "\n".join(balanced_wrap(line, size, room) for line in text.split("\n"))
            return text_image(wrapped, size, align="center", outline_px=outline)

        return self._cached(("subtitle", text, size, window.width), make)

    def layers(self, window: Size, view: OsdView) -> list[Layer]:
        """The images to draw over the frame in ``window`` now, in drawing order."""
        if window.width < 16 or window.height < 16:
            return []
        sizes = self._sizes(window)
        margin = sizes["margin"]
        out: list[Layer] = []
        bar_opacity = self._bar_opacity(view.paused)
        bar = self.bar_rect(window)
        bottom = window.height - margin  # where the subtitle's lower edge goes
        if bar_opacity > 0:
            fraction = 0.0
            if view.duration_s:
                fraction = view.position_s / view.duration_s
            filled = round((bar.width - 2) * min(max(fraction, 0.0), 1.0))
            marks = tuple(view.marks)
            bar_pixels = self._cached(
                ("bar", bar.width, bar.height, filled, marks),
                lambda: bar_image(bar.width, bar.height, fraction, marks),
            )
            out.append(Layer("bar", bar_pixels, bar.x, bar.y, bar_opacity))
            label = f"{format_time(view.position_s)} / {format_time(view.duration_s)}"
            time_pixels = self._text(label, sizes["text"])
            time_y = bar.y - margin // 2 - int(time_pixels.shape[0])
            out.append(Layer("time", time_pixels, bar.x, time_y, bar_opacity))
            bottom = time_y - margin // 2
        if view.paused:
            pause = self._cached(("pause", sizes["pause"]), lambda: pause_image(sizes["pause"]))
            size = int(pause.shape[0])
            out.append(Layer("pause", pause, (window.width - size) // 2, (window.height - size) // 2))
        if view.subtitle:
            sub = self._subtitle_pixels(view.subtitle, sizes, window)
            out.append(
                Layer("subtitle", sub, (window.width - int(sub.shape[1])) // 2, bottom - int(sub.shape[0]))
            )
            bottom -= int(sub.shape[0])
        if view.subtitle_middle:
            sub = self._subtitle_pixels(view.subtitle_middle, sizes, window)
            x, y = (window.width - int(sub.shape[1])) // 2, (window.height - int(sub.shape[0])) // 2
            out.append(Layer("subtitle_middle", sub, x, y))
        if view.subtitle_top:
            sub = self._subtitle_pixels(view.subtitle_top, sizes, window)
            out.append(Layer("subtitle_top", sub, (window.width - int(sub.shape[1])) // 2, margin))
        top = margin
        message = self.current_message
        if message is not None and self._message is not None:
            left = self._message[1] - self.clock()
            opacity = 1.0 if left >= 0 else max(0.0, 1.0 + left / FADE_S)
            wrapped = wrap_to_width(message, sizes["text"], window.width - 2 * margin)
            pixels = self._text(wrapped, sizes["text"])
            out.append(Layer("message", pixels, margin, top, opacity))
            top += int(pixels.shape[0]) + margin // 2
        if self.show_stats and view.stats and not (self.show_help and view.help):
            lines = view.stats

            def stats(size: int) -> np.ndarray:
                chars = max(20, int((window.width - 2 * margin) / (size * 0.62)) - 2)
                pieces = [piece for line in lines for piece in (textwrap.wrap(line, chars) or [""])]
                return self._text("\n".join(pieces), size, mono=True, box_alpha=150, outline_px=0)

            room = Size(window.width - 2 * margin, window.height - top - margin)
            out.append(Layer("stats", _fitted(stats, sizes["small"], room), margin, top))
        if self.show_help and view.help:
            lines = tuple(view.help)
            # Between the message (if any) and the subtitle or the time over the bar: in a small window it
            # covered them (a person's pass at 400x225), and a subtitle showed through its last lines.
            low = bottom - (margin // 2 if view.subtitle else 0)
            room = Size(window.width - 2 * margin, max(1, low - top))
            boxed: dict[str, Any] = {"mono": True, "box_alpha": 215, "outline_px": 0}

            def keys_help(size: int) -> np.ndarray:
                # Wrapped to the room's width (in a window 180 px wide it ran off the right edge), in two
                # columns where one is too tall for it.
                width = room.width - 2 * max(size // 3, 1) - 2
                one = self._text(
                    "\n".join(help_columns(lines, _help_chars(lines, size, width, 1), 1)), size, **boxed
                )
                if one.shape[0] <= room.height:
                    return one
                two = self._text(
                    "\n".join(help_columns(lines, _help_chars(lines, size, width, 2), 2)), size, **boxed
                )
                return two if two.shape[0] < one.shape[0] and two.shape[1] <= room.width else one

            pixels = _fitted(keys_help, sizes["small"], room)
            x = max(0, (window.width - int(pixels.shape[1])) // 2)
            y = max(0, top + (low - top - int(pixels.shape[0])) // 2)
            out.append(Layer("help", pixels, x, y))
        return out


def wrap_help_line(line: str, chars: int) -> list[str]:
    """One line of the key help (keys, two spaces or more, what they do) in lines of at most ``chars``
    characters: what they do goes on under its own column, or under the keys where that column leaves
    it too little room."""
    if len(line) <= chars:
        return [line]
    cut = line.find("  ")
    if cut <= 0:
        return textwrap.wrap(line, chars, break_on_hyphens=False) or [""]
    action = line[cut:].lstrip()
    column = len(line) - len(action)
    if chars - column >= max(12, chars // 2):
        return textwrap.wrap(line, chars, subsequent_indent=" " * column, break_on_hyphens=False) or [""]
    return [
        *textwrap.wrap(line[:cut], chars),
        *textwrap.wrap(action, chars, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False),
    ]


def _aligned(lines: Sequence[str]) -> list[str]:
    """Key help lines with their keys aligned among themselves (a column's own key width)."""
    pairs = [
        (line[:cut], line[cut:].lstrip()) if (cut := line.find("  ")) > 0 else (line, "") for line in lines
    ]
    width = max((len(keys) for keys, _ in pairs), default=0)
    return [f"{keys.ljust(width)}  {action}".rstrip() for keys, action in pairs]


# Room for the one-column layouts that a two-column one tries (at 64 they pushed each other out, and a
# 320x180 window laid its help out again at every frame, 40 ms).
@functools.lru_cache(maxsize=1024)
def help_columns(lines: tuple[str, ...], chars: int, columns: int) -> tuple[str, ...]:
    """The key help's ``lines`` wrapped (:func:`wrap_help_line`) in ``columns`` columns side by side
    (1 or 2) within ``chars`` characters, a binding never split between them: of the ways to share
    the bindings and the width between two columns, the one of fewest rows."""
    if columns <= 1:
        return tuple(piece for line in lines for piece in wrap_help_line(line, chars))
    gap = 3
    best: tuple[str, ...] | None = None
    middle = (len(lines) + 1) // 2
    for half in range(max(1, middle - 3), min(len(lines), middle + 4)):
        first, second = _aligned(lines[:half]), _aligned(lines[half:])
        for width in range(12, chars - gap - 12 + 1, 2):
            left = help_columns(tuple(first), width, 1)
            right = help_columns(tuple(second), chars - gap - width, 1)
            if best is not None and max(len(left), len(right)) >= len(best):
                continue
            used = max((len(piece) for piece in left), default=0)
            rows = max(len(left), len(right))
            padded = zip(
                (*left, *[""] * (rows - len(left))), (*right, *[""] * (rows - len(right))), strict=True
            )
            best = tuple(f"{a.ljust(used)}{' ' * gap}{b}".rstrip() for a, b in padded)
    return best if best is not None else help_columns(lines, chars, 1)


@functools.lru_cache(maxsize=64)
def _help_chars(lines: tuple[str, ...], size_px: int, width_px: int, columns: int) -> int:
    """The most characters a row of the key help (:func:`help_columns`) may have for its widest row,
    drawn at ``size_px``, to be at most ``width_px`` wide: measured, not counted from the width of an
    "M" (Pillow's default font, drawn where DejaVu Sans Mono is missing, is proportional, its "M" twice
    its average letter: the help took half of a small window's width and ran off its bottom)."""
    chars = max(12, int(width_px / _length("M", size_px, True)))
    most = columns * max((len(line) for line in lines), default=0) + 3
    while most - chars > 1:  # a count that fits, and one known too wide (or of no use)
        middle = (chars + most) // 2
        rows = help_columns(lines, middle, columns)
        if max((_length(row, size_px, True) for row in rows), default=0.0) <= width_px:
            chars = middle
        else:
            most = middle
    return chars


_SMALLEST_PX = 6
"""The smallest text the display shrinks a block to (the stats, the key help) in a small window."""


def _fitted(make: Callable[[int], np.ndarray], size_px: int, room: Size) -> np.ndarray:
    """``make(size)``, the text size brought down from ``size_px`` until the image fits in ``room`` (as
    mpv's display scales with the window), or down to :data:`_SMALLEST_PX`."""
    size = size_px
    while True:
        pixels = make(size)
        height, width = int(pixels.shape[0]), int(pixels.shape[1])
        if (width <= room.width and height <= room.height) or size <= _SMALLEST_PX:
            return pixels
        shrink = min(room.width / width, room.height / height)
        size = max(_SMALLEST_PX, min(size - 1, int(size * shrink)))
