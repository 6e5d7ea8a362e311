"""The player's window: video paced against the media clock at the display's refresh, or a level visual.

:class:`WindowPlayback` draws in a rendercanvas window with vsync: at each draw it asks the
:class:`~alpha2.apps.avsync.AVScheduler` which decoded frame is due against the clock (the sound's,
from :mod:`alpha2.apps.audio_out`, or the system clock, which says why), letterboxes it, and counts
frames shown, dropped and late with their A/V offsets. Over the frame, in the same submit, it blends
the on-screen display (:mod:`alpha2.apps.osd`, drawn on the GPU through :mod:`alpha2.api.overlay`):
time and progress bar, pause sign, messages, stats, key help and subtitles (:mod:`alpha2.api.subtitles`).
Keys and mouse as in mpv (:mod:`alpha2.apps.keys` lists them): space pauses, arrows seek (5 s / 60 s),
``,`` / ``.`` step a frame, ``[`` / ``]`` and ``{`` / ``}`` change the speed (the sound keeps its
pitch), m mutes, 9 / 0 and the wheel set the volume (2 % a step), f or a double click goes fullscreen,
s saves a screenshot (the frame at the video's own size, with its subtitle), l sets an A-B loop and L
loops the file, j cycles subtitles, v hides them and z / Z delay them, # the audio tracks (the sound
switches at the time heard; Ctrl+- / Ctrl++ delay it), > / < go to the next / previous file of a
playlist, i shows the stats, ? the keys, a click on the progress bar seeks, q, Escape or Ctrl+W quits.
The frame on display stays imported: a resize while paused renders it again at the new size, and paused
on the last frame the file has not ended. :class:`AudioOnlyPlayback` plays a file without video: a
window whose colour follows the sound's level, or no window at all; a playlist's file without video plays
in the playlist's window, under the same level visual.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from alpha2.api import pipeline
from alpha2.api.languages import language_codes
from alpha2.api.playback import (
    Background,
    displayed_size,
    import_glfw,
    known_frame_count,
    seconds_since_process_start,
    stream_displayed_size,
)
from alpha2.apps.avsync import AVScheduler
from alpha2.apps.keys import (
    AUDIO_BINDINGS,
    PLAYER_BINDINGS,
    PLAYLIST_AUDIO_BINDINGS,
    SPEED_FACTORS,
    help_lines,
    key_name,
    scaled_speed,
)
from alpha2.apps.osd import Layer, Osd, OsdView, format_time
from alpha2.gpu.errors import Error, InvalidInputError
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Rect, Size
from alpha2.gpu.webgpu import gpu_module_of

if TYPE_CHECKING:
    # Sound (PortAudio, the audio decoder) is loaded when a window plays: a snapshot never needs it. The
    # on-screen display's GPU side and the subtitles load after the first frame is up.
    from alpha2.api.overlay import OverlaySprite
    from alpha2.api.subtitles import Subtitles
    from alpha2.apps.audio_out import AudioTrack, MediaClock

__all__ = [
    "AUDIO_DELAY_STEP_S",
    "SEEK_STEPS_S",
    "SHIFT_SEEK_STEPS_S",
    "SUB_DELAY_STEP_S",
    "VOLUME_STEP",
    "AudioOnlyPlayback",
    "Playlist",
    "WindowPlayback",
    "letterbox",
    "screenshot_path",
    "seek_step",
    "set_fullscreen",
]

SEEK_STEPS_S: dict[str, float] = {"ArrowLeft": -5.0, "ArrowRight": 5.0, "ArrowDown": -60.0, "ArrowUp": 60.0}
"""Seek per arrow key, in seconds."""
SHIFT_SEEK_STEPS_S: dict[str, float] = {
    "ArrowLeft": -1.0,
    "ArrowRight": 1.0,
    "ArrowDown": -5.0,
    "ArrowUp": 5.0,
}
"""Seek per arrow key with Shift held, in seconds (mpv's smaller exact seeks)."""


def seek_step(event: Mapping[str, Any]) -> float | None:
    """The seconds a key event seeks (an arrow; with Shift, mpv's 1 s / 5 s), or None."""
    steps = SHIFT_SEEK_STEPS_S if "Shift" in tuple(event.get("modifiers", ()) or ()) else SEEK_STEPS_S
    return steps.get(key_name(event))


VOLUME_STEP = 0.02
"""Volume change per 9 / 0 key press (and per wheel notch): 2 %, as mpv's."""

SUB_DELAY_STEP_S = 0.1
"""Subtitle delay change per ``z`` / ``Z`` press, as mpv's."""

AUDIO_DELAY_STEP_S = 0.1
"""Audio delay change per Ctrl+- / Ctrl++ press, as mpv's."""


_RENDER_FORMATS = ("rgba8unorm", "bgra8unorm", "rgba16float")


_GLFW_SEARCH_PATHS = (
    "/usr/lib64",
    "/usr/local/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/opt/homebrew/lib",
    "/run/current-system/sw/lib",
)


def _only_glfw_library() -> str | None:
    """The one file pyGLFW's search could take for the GLFW library here (the package's own, the
    interpreter's and the system's library folders, ``LD_LIBRARY_PATH``, the working folder: every
    ``*glfw.*`` and ``*glfw3.*``), or None when there are several or none, and pyGLFW chooses as it
    does."""
    import glob

    spec = importlib.util.find_spec("glfw")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = os.path.abspath(next(iter(spec.submodule_search_locations)))
    variant = os.environ.get("PYGLFW_LIBRARY_VARIANT", "").lower()
    if variant not in ("wayland", "x11"):
        variant = "wayland" if os.environ.get("XDG_SESSION_TYPE") == "wayland" else "x11"
    folders = ["", package, os.path.join(package, variant), os.path.join(sys.prefix, "lib")]
    folders += [*_GLFW_SEARCH_PATHS, *glob.glob("/usr/lib/*-linux-gnu*")]
    folders += os.environ.get("LD_LIBRARY_PATH", "").split(":")
    found = {
        os.path.realpath(path)
        for folder in dict.fromkeys(folders)
        for pattern in ("*glfw.*", "*glfw3.*")
        for path in glob.glob(os.path.join(folder or os.curdir, pattern))
    }
    return found.pop() if len(found) == 1 else None


def import_canvas_backend(canvas_module: str) -> Any:
    """``importlib.import_module(canvas_module)`` (a rendercanvas backend), loading pyGLFW straight from
    its library where there is only one to choose from, and without cffi's C parser
    (:func:`alpha2.api.playback.import_glfw`).

    pyGLFW, told no library (``PYGLFW_LIBRARY``), checks the version of each it finds in a Python
    subprocess of its own, even of one: 30-50 ms of a 2-core machine's start-up, before the window.
    """
    if "glfw" in sys.modules or os.environ.get("PYGLFW_LIBRARY") or not sys.platform.startswith("linux"):
        return _import_backend(canvas_module)
    try:
        library = _only_glfw_library()
    except Exception:  # an odd install: pyGLFW's own search
        library = None
    if library is None:
        return _import_backend(canvas_module)
    os.environ["PYGLFW_LIBRARY"] = library
    try:
        return _import_backend(canvas_module)
    finally:
        os.environ.pop("PYGLFW_LIBRARY", None)


def _import_backend(canvas_module: str) -> Any:
    """The backend module, pyGLFW first (without cffi's parser) when the backend may want it."""
    if "glfw" not in sys.modules and canvas_module in ("rendercanvas.auto", "rendercanvas.glfw"):
        import_glfw()
    return importlib.import_module(canvas_module)


MAX_FPS = 240
"""The most draws a second of a playing window (vsync holds it to the display's rate)."""
LEVEL_FPS = 60
"""The most draws a second of the level visual (a file without video)."""
CHAPTER_BACK_S = 5.0
"""PgDn goes back to the start of the chapter playing when more than this into it (mpv's
``chapter-seek-threshold``), else to the chapter before."""
PAUSED_FPS = 4
"""Draws a second of a paused window with no input while something on screen changes (a message fading)."""
PAUSED_EVENTS_FPS = 60
"""A paused window's event ticks a second (rendercanvas's scheduler wakes max_fps times a second, also
when nothing is to be drawn): a key is answered within 1/60 s, before the next of a held one (25 a
second) or a quick hand: two frame steps in one tick went one frame."""


def make_canvas(backend: Any, title: str, size: Size) -> Any:
    """A continuously drawn ``backend.RenderCanvas`` of ``size`` (the window appears; nothing drawn yet)."""
    return backend.RenderCanvas(
        title=title, size=(size.width, size.height), update_mode="continuous", max_fps=MAX_FPS, vsync=True
    )


_HELD_KEYS_REPEAT = (
    *("KEY_LEFT", "KEY_RIGHT", "KEY_UP", "KEY_DOWN", "KEY_COMMA", "KEY_PERIOD"),
    *("KEY_9", "KEY_0", "KEY_LEFT_BRACKET", "KEY_RIGHT_BRACKET", "KEY_MINUS", "KEY_EQUAL"),
)
"""The glfw keys whose action goes on while the key is held (seek, frame step, volume, speed, the audio
delay), as mpv's do; the others act once a press (a held space does not pause and play in turn)."""


def repeat_held_keys(canvas: Any) -> None:
    """Let ``canvas``'s held keys of :data:`_HELD_KEYS_REPEAT` repeat: rendercanvas's glfw backend drops
    every key repeat, so a held Right arrow sought 5 s once where mpv seeks on until it is let go (an
    outside pass). Other backends are left as they are."""
    handle = getattr(canvas, "_window", None)
    if handle is None or "glfw" not in type(canvas).__module__:
        return
    import glfw

    repeating = frozenset(getattr(glfw, name) for name in _HELD_KEYS_REPEAT)
    previous: Any = None

    shifted = frozenset((glfw.KEY_COMMA, glfw.KEY_PERIOD))  # < and >: a file, once a press

    def forward(window: Any, key: int, scancode: int, action: int, mods: int) -> None:
        if action == glfw.REPEAT and key in repeating and not (key in shifted and mods & glfw.MOD_SHIFT):
            action = glfw.PRESS  # a key_down again; the release comes once, at the end
        if previous is not None:
            previous(window, key, scancode, action, mods)

    previous = glfw.set_key_callback(handle, forward)


def configure_canvas(canvas: Any, device: Any, *, readable: bool = False) -> tuple[Any, str, str]:
    """The canvas's wgpu context configured for ``device`` (a GPUDevice): ``(context, present format,
    render format)``.

    The render format is the present format without ``-srgb``: the shader's values are already
    sRGB-encoded, and an -srgb surface and its plain format are copy-compatible, so they are copied as
    they are, never encoded twice. ``readable``: the surface can also be copied from (tests read back
    what the window shows).
    """
    context = canvas.get_context("wgpu")
    preferred = str(context.get_preferred_format(device.adapter))
    base = preferred.replace("-srgb", "")
    gpu = gpu_module_of(device)
    usage = gpu.TextureUsage.RENDER_ATTACHMENT | gpu.TextureUsage.COPY_DST
    if readable:
        usage |= gpu.TextureUsage.COPY_SRC
    context.configure(device=device, format=preferred, usage=usage)
    return context, preferred, base if base in _RENDER_FORMATS else "bgra8unorm"


def open_canvas(
    backend: Any, title: str, size: Size, device: Any, *, readable: bool = False
) -> tuple[Any, Any, str, str]:
    """:func:`make_canvas` and :func:`configure_canvas`: ``(canvas, context, present format, render
    format)``."""
    canvas = make_canvas(backend, title, size)
    return (canvas, *configure_canvas(canvas, device, readable=readable))


def letterbox(frame: Size, window: Size) -> Rect:
    """Where ``frame`` goes in ``window`` with its aspect kept: centred, bars on two sides."""
    if frame.width <= 0 or frame.height <= 0 or window.width <= 0 or window.height <= 0:
        return Rect(0, 0, max(window.width, 1), max(window.height, 1))
    scale = min(window.width / frame.width, window.height / frame.height)
    width = max(1, min(window.width, round(frame.width * scale)))
    height = max(1, min(window.height, round(frame.height * scale)))
    return Rect((window.width - width) // 2, (window.height - height) // 2, width, height)


def set_fullscreen(canvas: Any, on: bool) -> str | None:
    """Make the canvas's window fullscreen (``on``) or windowed again; None when done, else why not.

    rendercanvas 2.7 has no fullscreen call: a glfw window is put on its monitor with
    ``glfw.set_window_monitor`` (its windowed place and size kept for the way back), a Qt one is asked
    with ``showFullScreen`` / ``showNormal``.
    """
    handle = getattr(canvas, "_window", None)
    if handle is not None and type(canvas).__module__.startswith("rendercanvas.glfw"):
        glfw = importlib.import_module("glfw")
        if on:
            monitor = glfw.get_window_monitor(handle) or glfw.get_primary_monitor()
            if not monitor:
                return "glfw finds no monitor"
            mode = glfw.get_video_mode(monitor)
            x, y = glfw.get_window_pos(handle)
            width, height = glfw.get_window_size(handle)
            canvas._alpha2_windowed = (x, y, width, height)
            glfw.set_window_monitor(
                handle, monitor, 0, 0, mode.size.width, mode.size.height, mode.refresh_rate
            )
        else:
            x, y, width, height = getattr(canvas, "_alpha2_windowed", (64, 64, 960, 540))
            glfw.set_window_monitor(handle, None, x, y, width, height, 0)
        return None
    top = canvas.window() if callable(getattr(canvas, "window", None)) else None
    if top is not None and hasattr(top, "showFullScreen"):
        (top.showFullScreen if on else top.showNormal)()
        return None
    return f"the {type(canvas).__module__} canvas has no fullscreen"


def screenshot_path(source: str, pts_s: float) -> str:
    """A free file name for a screenshot of ``source`` at ``pts_s``, next to it:
    ``name-0012.345.png``, then ``name-0012.345-2.png``, ... (an existing file is never replaced)."""
    stem = os.path.splitext(os.path.abspath(source))[0]
    base = f"{stem}-{max(0.0, pts_s):08.3f}"
    path, number = base + ".png", 1
    while os.path.lexists(path):
        number += 1
        path = f"{base}-{number}.png"
    return path


def make_clock(
    player: Any,
    start_s: float,
    duration_s: float | None,
    stream_index: int | None = None,
    *,
    silent: str | None = None,
) -> MediaClock:
    """The run's media clock (sound unless ``--no-audio`` or it cannot be had), recorded in the stats;
    ``stream_index``: the audio track to hear (an index among the audio streams; None: the default);
    ``silent``: the system clock, for this reason (sound turned off by ``#`` in an earlier file)."""
    from alpha2.api.media import media_kinds
    from alpha2.apps.audio_out import SystemClock, open_clock

    kinds = media_kinds(player.source)
    clock: MediaClock
    if silent is not None and player.options.audio and "audio" in kinds:
        clock = SystemClock(silent, start_s, duration_s)
    else:
        clock = open_clock(
            player.source,
            want_audio=player.options.audio,
            has_audio="audio" in kinds,
            start_s=start_s,
            duration_s=duration_s,
            stream_index=stream_index,
        )
    clock.set_volume(player.options.volume)
    player.stats.clock = clock.as_dict()
    return clock


AUDIO_OFF_REASON = "audio off (#)"
"""The system clock's reason once ``#`` has turned the sound off (kept for the playlist's next files)."""

NO_AUDIO_DELAY_SOUND_ONLY = "A-V delay: not in a sound-only window"
"""What Ctrl+- / Ctrl++ say in the window of a file without video: no picture to delay the sound against."""

NO_AUDIO_DELAY_WALL = "A-V delay: not in a video wall"
"""What Ctrl+- / Ctrl++ say in a wall's window (its tiles' clocks change with ``a``; no delay is kept)."""


class _SignalsClose:
    """While a window's loop runs: Ctrl-C, SIGTERM and SIGHUP close the window, as q does, and once the
    loop has returned they are raised as the command's own handlers raise them (``alpha2: interrupted``,
    exit 130; ``terminated``, 143).

    rendercanvas's loop takes SIGINT for itself (it logged 'Received signal Interrupt' and the player
    ended as if the file had, exit 0, the bar jumping to its end), and a SIGTERM raised by the command's
    handler inside the loop's task printed asyncio's 'Task exception was never retrieved' traceback.
    :meth:`ensure` is called on each draw: the loop sets its handler as it starts, after the first draw.

    The window is closed by the loop (``loop``: its ``call_soon_threadsafe``), between two draws, not in
    the handler: a signal lands anywhere in the main thread, also in a draw holding the surface's texture,
    and closing it there aborted the process (wgpu-native's panic 'Trying to destroy a
    SwapchainAcquireSemaphore that is still in use by a SurfaceTexture', exit 134, after a 'Draw error'
    traceback). Without a loop to ask (tests), it is closed at once.
    """

    SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))

    def __init__(self, canvas: Any, loop: Any = None) -> None:
        self.canvas = canvas
        self._call_soon = getattr(loop, "call_soon_threadsafe", None)
        self.caught: int | None = None
        self._saved: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            # The command's handlers (or the defaults); one ignored (nohup's SIGHUP) stays ignored.
            self._saved = {sig: signal.getsignal(sig) for sig in self.SIGNALS}

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.caught is None:
            self.caught = signum
        if self._call_soon is not None:
            self._call_soon(self.canvas.close)
        else:
            self.canvas.close()

    def ensure(self) -> None:
        for sig, old in self._saved.items():
            if old != signal.SIG_IGN and signal.getsignal(sig) != self._on_signal:
                signal.signal(sig, self._on_signal)

    def restore(self) -> None:
        """The command's handlers back; then what was caught, raised as they would have raised it."""
        saved, self._saved = self._saved, {}
        for sig, old in saved.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)
        if self.caught is not None:
            from alpha2.apps.cli import Interrupted, Terminated

            raise Interrupted() if self.caught == signal.SIGINT else Terminated(self.caught)


def level_colour(level: float) -> tuple[float, float, float, float]:
    """The audio-only window's colour for a sound's RMS ``level``: dark blue when silent, brighter as it
    gets louder, dimmed a little so that the display's white text stays clear."""
    light = min(1.0, level * 4) * 0.6
    return (0.1 * light, 0.6 * light, light, 1.0)


class _Keys:
    """The keys shared by the video and the audio-only window, and the audio track heard (``#``)."""

    canvas: Any
    player: Any
    clock: MediaClock | None
    scheduler: AVScheduler
    osd: Osd | None = None
    fullscreen: bool = False
    _tracks: tuple[AudioTrack, ...] | None = None  # the file's audio tracks, listed on first use
    _chapters: tuple[Any, ...] | None = None  # the file's chapters, listed on first use
    seek: Callable[[float], None]  # each window's own: jump to a time in seconds
    one_file: bool = True  # the keys of one file (chapters, audio tracks); a wall of many has none
    _paused_since: float | None = None  # when the pause on now began (perf_counter)
    sound_off = False  # '#' went past the last track: no sound, in the next files too (mpv's aid=no)
    _paused_total: float = 0.0  # earlier pauses, seconds

    def _note_pause(self) -> None:
        """Follow the clock's pauses (noted at each draw and each key), so that the file's frames a
        second count the seconds it played, not those it stood paused: a 30 fps file paused for 5 s
        of 22 said '23.0 fps', which reads as frames dropped."""
        now = time.perf_counter()
        if getattr(self.clock, "paused", False):
            if self._paused_since is None:
                self._paused_since = now
        elif self._paused_since is not None:
            self._paused_total += now - self._paused_since
            self._paused_since = None

    def _paused_seconds(self) -> float:
        """The seconds this file has stood paused so far."""
        since = self._paused_since
        return self._paused_total + (0.0 if since is None else time.perf_counter() - since)

    def _say(self, text: str) -> None:
        if self.osd is not None:
            self.osd.message(text)

    def chapters(self) -> tuple[Any, ...]:
        """The file's chapters (``start_seconds``, ``title``), listed once per file (none when they
        cannot be listed)."""
        if self._chapters is None:
            from alpha2.api.media import describe

            try:
                self._chapters = tuple(describe(self.player.source, decode=False).file.chapters)
            except Error:
                self._chapters = ()
        return self._chapters

    def _next_file(self) -> bool:
        """Go to the playlist's next file, where there is one (the video window's); whether it went."""
        return False

    def chapter_marks(self, duration: float | None) -> tuple[float, ...]:
        """Where the chapters begin as fractions of ``duration`` (the bar's ticks); none without one."""
        if not duration or self.clock is None:  # listed once the first frame is up, not before it
            return ()
        return tuple(c.start_seconds / duration for c in self.chapters() if c.start_seconds > 0)

    def chapter_step(self, step: int) -> None:
        """The next (``+1``, PgUp) or previous (``-1``, PgDn) chapter, as mpv's: back goes to the start
        of the chapter playing when more than :data:`CHAPTER_BACK_S` into it, else to the one before."""
        clock = self.clock
        if clock is None:
            return
        chapters = self.chapters()
        if not chapters:
            self._say("No chapters")
            return
        now = clock.now()
        current = max((i for i, c in enumerate(chapters) if c.start_seconds <= now + 0.25), default=-1)
        if step > 0:
            index = current + 1
            if index >= len(chapters):
                if not self._next_file():  # past the last chapter: the playlist's next file, as mpv's
                    self._say("No next chapter")
                return
        elif current >= 0 and now - chapters[current].start_seconds > CHAPTER_BACK_S:
            index = current
        else:
            index = max(0, current - 1)
        chapter = chapters[index]
        self.seek(chapter.start_seconds)
        title = f": {chapter.title}" if chapter.title else ""
        self._say(f"Chapter {index + 1}/{len(chapters)}{title}")

    def audio_tracks(self) -> tuple[AudioTrack, ...]:
        """The file's audio tracks (none when they cannot be listed), listed once per file."""
        if self._tracks is None:
            from alpha2.apps.audio_out import audio_tracks

            try:
                self._tracks = audio_tracks(self.player.source)
            except Error:
                self._tracks = ()
        return self._tracks

    def asked_stream(self) -> int | None:
        """The audio stream ``--aid`` asks for in this file (its index among the audio streams); None for
        the default, also where the file has fewer tracks (said on screen: mpv plays none there)."""
        options = self.player.options
        aid: int | None = options.aid
        if not options.audio:
            return None
        if aid is None and options.alang:
            return self._stream_of_language(options.alang)
        if aid is None:
            return None
        tracks = self.audio_tracks()
        if aid <= len(tracks):
            return aid - 1
        if tracks:
            self._say(f"Audio: no track {aid} here ({len(tracks)} in all); the default plays")
        return None

    def _stream_of_language(self, languages: tuple[str, ...]) -> int | None:
        """The first audio stream (index among the audio streams) of the first of ``languages`` the file
        has (``--alang``); None, said, where it has none of them."""
        tracks = self.audio_tracks()
        for wanted in languages:
            names = language_codes(wanted)
            for track in tracks:
                if (track.language or "").lower() in names:
                    return track.stream_index
        if len(tracks) > 1:
            self._say(f"Audio: no {'/'.join(languages)} track here; the default plays")
        return None

    def audio_track(self) -> AudioTrack | None:
        """The audio track heard now (None: none is, or no clock yet)."""
        from alpha2.apps.audio_out import track_at

        clock = self.clock
        if clock is None or clock.stream_index is None:
            return None
        return track_at(self.audio_tracks(), clock.stream_index)

    def track_text(self) -> str:
        """What the stats say of the track heard: ``2/2 ger (aac, 2 ch)``, or why none is."""
        track = self.audio_track()
        if track is not None:
            return track.label()
        if not self.audio_tracks():
            return "none (the file has no audio track)"
        return "none heard" if self.clock is None else f"none heard ({self.clock.reason})"

    def note_track(self) -> None:
        """Record the track heard in the stats (``--stats``, ``--json``)."""
        track = self.audio_track()
        if track is not None:
            self.player.stats.audio_track = track.as_dict()

    def cycle_audio(self) -> None:
        """The next audio track, from the time heard now; after the last, none (the picture runs on the
        system clock), then the first again (``#``, as mpv's: 1, 2, ..., no, 1)."""
        clock = self.clock
        if clock is None:
            return
        tracks = self.audio_tracks()
        current = self.audio_track()
        if not tracks:
            self._say("Audio: none (the file has no audio track)")
        elif current is None:
            self._hear_again(tracks[0])
        elif current.stream_index + 1 >= len(tracks):
            self._replace_clock(self._silent_clock(clock), "audio off")
            self.sound_off = True
            self._say("Audio: off")
        else:
            following = tracks[current.stream_index + 1]
            try:
                clock.switch_track(following.stream_index)
            except Error as exc:
                self._say(f"Audio: track {following.number} does not play: {exc.message}")
                return
            self.scheduler.mark("audio track")
            self.note_track()
            self._say(f"Audio: {following.label()}")

    def _clock_duration(self) -> float | None:
        return getattr(self, "duration_s", None)

    def _silent_clock(self, clock: MediaClock) -> MediaClock:
        """The system clock at ``clock``'s time, for no sound (``#`` past the last track)."""
        from alpha2.apps.audio_out import SystemClock

        return SystemClock(AUDIO_OFF_REASON, clock.now(), self._clock_duration())

    def open_sound(self, stream_index: int, start_s: float) -> MediaClock:
        """The audio clock of the track of ``stream_index`` from ``start_s`` (the system clock, saying
        why, where the sound cannot be had)."""
        from alpha2.apps.audio_out import open_clock

        return open_clock(
            self.player.source,
            want_audio=True,
            has_audio=True,
            start_s=start_s,
            duration_s=self._clock_duration(),
            stream_index=stream_index,
        )

    def _hear_again(self, track: AudioTrack) -> None:
        """``#`` with no sound heard: the first track, from the time on display."""
        from alpha2.apps.audio_out import ClockKind

        clock = self.clock
        assert clock is not None
        try:
            sound = self.open_sound(track.stream_index, max(0.0, clock.now()))
        except Error as exc:
            self._say(f"Audio: track {track.number} does not play: {exc.message}")
            return
        if sound.kind is ClockKind.SYSTEM:
            sound.close()
            self._say(f"Audio: none heard ({sound.reason})")
            return
        self._replace_clock(sound, "audio track")
        self.sound_off = False
        self._say(f"Audio: {track.label()}")

    def _replace_clock(self, new: MediaClock, label: str) -> None:
        """Play on under ``new`` from the time on display, with the volume, mute, speed, audio delay and
        pause of the clock it replaces (which is closed)."""
        old = self.clock
        assert old is not None
        new.set_volume(getattr(old, "volume", 1.0))
        if getattr(old, "muted", False):
            new.toggle_mute()
        speed = getattr(old, "speed", 1.0)
        if speed != 1.0:
            new.set_speed(speed)
        delay = getattr(old, "delay_s", 0.0)
        if delay:
            new.set_delay(delay)
        if getattr(old, "paused", False):
            new.pause()
        self.clock = new
        old.close()
        self.player.stats.clock = new.as_dict()
        self.scheduler.mark(label)
        self.note_track()

    def toggle_fullscreen(self) -> None:
        """Fullscreen on or off (``f``, a double click)."""
        why = set_fullscreen(self.canvas, not self.fullscreen)
        if why is None:
            self.fullscreen = not self.fullscreen
        else:
            self._say(f"Fullscreen: not here ({why})")

    def change_volume(self, step: float) -> None:
        clock = self.clock
        if clock is None:
            return
        clock.set_volume(round(getattr(clock, "volume", 1.0) + step, 4))  # 50 steps of 2 % are 100 %
        # Still muted, said as mpv says it: 'Volume: 110%' alone read as if the sound were back.
        muted = " (muted)" if getattr(clock, "muted", False) else ""
        self._say(f"Volume: {round(getattr(clock, 'volume', 1.0) * 100)}%{muted}")

    def _common_key(self, key: str) -> bool:
        clock = self.clock
        if key in ("q", "Q", "Ctrl+w"):  # mpv's Ctrl+w quits too
            self.canvas.close()
        elif key == "Escape":
            if self.fullscreen:
                self.toggle_fullscreen()
            else:
                self.canvas.close()
        elif key in ("f", "F"):
            self.toggle_fullscreen()
        elif key in ("o", "P") and self.osd is not None:
            self.osd.activity()  # mpv's show-progress: the time and the bar for a moment
        elif clock is None:
            return False
        elif key in (" ", "p"):  # mpv's: p pauses too
            self.toggle_pause()
        elif key in ("m", "M"):
            clock.toggle_mute()
            self._say(f"Mute: {'yes' if getattr(clock, 'muted', False) else 'no'}")
        elif key in ("9", "0"):
            self.change_volume(VOLUME_STEP if key == "0" else -VOLUME_STEP)
        elif key in ("PageDown", "PageUp", "#") and not self.one_file:
            self._say("Chapters and audio tracks: one file's keys, not a wall's")
        elif key in ("PageDown", "PageUp"):
            self.chapter_step(+1 if key == "PageUp" else -1)  # mpv's: PgUp the next chapter
        elif key == "#":
            self.cycle_audio()
        else:
            return False
        return True

    def _on_double_click(self, event: Mapping[str, Any]) -> None:
        if int(event.get("button", 1) or 1) == 1:  # a right double click is two pauses, as mpv's
            self.toggle_fullscreen()

    def toggle_pause(self) -> None:
        """Pause or play on (space, p, a right click, as mpv's)."""
        clock = self.clock
        if clock is None:
            return
        if getattr(clock, "paused", False):
            clock.resume()
            self.scheduler.mark("resume")
        else:
            clock.pause()
        self._note_pause()
        if self.osd is not None:
            self.osd.activity()

    def _clock_if_due(self) -> None:
        """Start what waits for the first frame to be up, before an event acts on it (WindowPlayback)."""

    def _on_wheel(self, event: Mapping[str, Any]) -> None:
        self._clock_if_due()
        dy = float(event.get("dy", 0.0) or 0.0)
        if dy:
            self.change_volume(VOLUME_STEP if dy < 0 else -VOLUME_STEP)  # the wheel away: louder


@dataclass
class Playlist:
    """The files of one ``alpha2 play`` run, played in turn in one window (``n`` / ``p``)."""

    sources: list[str]
    """The inputs, in order."""
    make_player: Callable[[str], Any]
    """Makes the :class:`~alpha2.api.playback.Player` of one input (on the window's device)."""
    index: int = 0
    """The file playing."""
    errors: list[tuple[str, str]] = field(default_factory=list)
    """(input, message) of each file that could not be played, once each however often it was tried."""
    on_error: Callable[[str, str], None] | None = None
    """Called with each of those as it is passed over (the terminal's line at once, as mpv's)."""


class _Overlay:
    """The display's layers as GPU sprites (one per kind, re-uploaded when its image changes)."""

    def __init__(self, device: Any) -> None:
        from alpha2.api.overlay import OverlayRenderer

        self.renderer = OverlayRenderer(device)
        self._sprites: dict[str, tuple[Any, OverlaySprite]] = {}

    def encode(self, encoder: Any, target: Any, layers: list[Layer]) -> None:
        from alpha2.api.overlay import OverlayPlacement

        placements = []
        for layer in layers:
            held = self._sprites.get(layer.key)
            if held is None:
                sprite = self.renderer.sprite(layer.pixels)
            else:
                pixels, sprite = held
                if pixels is not layer.pixels:
                    sprite.update(layer.pixels)
            self._sprites[layer.key] = (layer.pixels, sprite)
            placements.append(OverlayPlacement(sprite, layer.x, layer.y, min(max(layer.opacity, 0.0), 1.0)))
        self.renderer.encode(encoder, target, placements)

    def close(self) -> None:
        self._sprites.clear()
        self.renderer.close()


class WindowPlayback(_Keys):
    """Playback in a rendercanvas window: paced by the media clock at the refresh, letterboxed, the
    on-screen display over it, keys and mouse; with a :class:`Playlist`, its files in turn."""

    osd: Osd

    def __init__(self, player: Any, *, playlist: Playlist | None = None) -> None:
        self.player = player
        self.stats = player.stats
        self.playlist = playlist
        self.results: list[Any] = []
        """The stats of the files finished before the one playing (a playlist)."""
        self.shown: Any = None  # (texture, letterbox rect) of the last frame rendered
        self.shown_pts: float | None = None
        self._clock_from: float | None = None  # where the clock starts, when sought before it did
        self.held: Any = None
        """The import lease of the frame on display: it is rendered again when the window's size changes
        (paused too) and at the video's own size for a screenshot; let go when the next frame comes."""
        self.held_size: Size | None = None
        """The frame on display's size as shown (rotation and pixel aspect applied)."""
        self.pending: DecodedFrame | None = None
        self.clock: MediaClock | None = None
        self.scheduler = AVScheduler()
        self.ended = False
        self.canvas: Any = None
        self.context: Any = None
        self.present_format = "bgra8unorm"
        self.render_format = "bgra8unorm"
        self.last_window = Size(0, 0)
        self.osd = Osd()
        self.overlay: _Overlay | None = None
        self._overlay_build: Background[_Overlay] | None = None
        self.subtitles: Subtitles | None = None
        self._subtitles_opened = False
        options = player.options
        self.sub_visible = options.sub_visible
        """Subtitles drawn (``v``, ``--sub-visibility``), as mpv's sub-visibility; kept from file to file."""
        self.sub_delay_s = options.sub_delay_s
        """Seconds the subtitles come later (``z`` / ``Z``, ``--sub-delay``; negative: earlier), as mpv's
        sub-delay."""
        self.audio_delay_s = options.audio_delay_s
        """Seconds the sound comes later than the picture (Ctrl+- / Ctrl++, ``--audio-delay``), as mpv's
        audio-delay; kept from file to file."""
        self.volume: float | None = None
        """The volume set by 9 / 0, mute by m and pause in an earlier file of the playlist, kept for the
        next as mpv keeps them (None: ``--volume``'s, at the first file)."""
        self.muted = False
        self.stay_paused = False
        self.loop = bool(options.loop)
        self.ab_loop: tuple[float, float | None] | None = None  # l: (A, B), B None until set
        self.speed = options.speed
        """Media seconds a second (``[`` / ``]``, ``--speed``); kept from file to file."""
        self.scheduler.speed = self.speed
        self.fullscreen = False
        self.readable_surface = False
        """Tests: the window's surface can be read back (``on_present``)."""
        self.on_present: Callable[[Any], None] | None = None
        """Tests: called with the surface texture after each draw's submit, before it is presented."""
        self.title = ""
        self._file_started = time.perf_counter()
        self._paused_since = None
        self._paused_total = 0.0
        self._stats_cache: tuple[float, list[str]] | None = None
        self._cursor_hidden = False
        self._update_mode = ("continuous", MAX_FPS)  # the canvas's (make_canvas), switched by _pace
        self._tick_pending = False  # a paused window's next timed draw is asked for
        self._signals: _SignalsClose | None = None  # while the loop runs
        self._seek_pts: float | None = None  # the frame a seek went to, until it is on display
        self._position_total: int | None = None  # the bar's total where it follows the position
        self._video_seconds: float | None = None  # the video's length, for that position
        self.audio_only = False
        """The file playing has no video (a playlist's entry): its sound plays under the level visual."""
        self.cover_art = False
        """The file playing is a song whose only picture is its cover art (an attached picture): the
        cover stays on display while the sound plays, and the sound leads the time, the bar, the seeks
        and the report, as in :attr:`audio_only`."""
        self._audio_duration: float | None = None  # that file's duration (audio_only, cover_art)

    @property
    def paused(self) -> bool:
        return bool(getattr(self.clock, "paused", False))

    def _restart_file_time(self) -> None:
        """A file starts: its time and its pauses count from now."""
        self._file_started = time.perf_counter()
        self._paused_total, self._paused_since = 0.0, None
        self._note_pause()

    @property
    def sound_led(self) -> bool:
        """Whether the sound leads the file playing: it has no video, or only its cover art."""
        return self.audio_only or self.cover_art

    @property
    def duration_s(self) -> float | None:
        if self.sound_led:
            return self._audio_duration
        decoder = self.player.decoder
        video = decoder.info.duration_seconds if decoder is not None else None
        # The sound heard may run on after the last frame, as the file's length says (mpv's too): the
        # display read '0:03 / 0:01' and the bar stayed full while it played.
        sound = getattr(self.clock, "duration_s", None)
        if video is not None and sound is not None and sound > video + self.start_s:
            return float(sound) - self.start_s
        return video

    @property
    def start_s(self) -> float:
        """Where the video's timestamps begin, in seconds (1.4 s in many MPEG-TS files). The frames and
        the clock count from the file's zero; the decoder seeks, and the display counts, from here."""
        decoder = self.player.decoder
        if self.sound_led or decoder is None or not decoder.info.start_time:
            return 0.0
        return float(decoder.info.start_time * decoder.info.time_base)

    def _start(self, player: Any, backend: Any = None, size: Size | None = None) -> DecodedFrame | None:
        """Open ``player``'s device and decoder, seek to the start, decode the first frame and make its GPU
        objects; the frame is pending. With a rendercanvas ``backend``, the canvas is made meanwhile, as
        soon as the decoder knows the picture's size (``size``: the canvas's, default the picture's).

        A playlist's file without video plays its sound under the level visual (None: no frame)."""
        if self.playlist is not None:
            from alpha2.api.media import media_kinds

            if "video" not in media_kinds(player.source):
                self._start_audio_only(player)
                return None
        decoder = player._open(gpu_copy=False)  # rendercanvas presents wgpu-native devices
        # A song's cover art is one still, not a one-frame video: the sound leads the time and the bar
        # (the terminal's bar was full at 0:03 of 0:08, '1 frames 5.9 fps').
        self.cover_art = bool(decoder.info.attached_picture and decoder.info.has_audio)
        if self.cover_art:
            self._audio_duration = audio_duration(player)
        if backend is not None:
            # The window now, while the device opens on its thread and before the first frame is decoded.
            self.title = self._title_text()
            # The picture as shown: an anamorphic DVD's 720x480 opens a 853x480 window, as in mpv.
            shown = size if size is not None else stream_displayed_size(decoder.info)
            self.canvas = make_canvas(backend, self.title, shown)
            repeat_held_keys(self.canvas)
        player._seek_start(decoder)
        first: DecodedFrame | None = decoder.next_frame()
        if first is None:
            raise InvalidInputError(f"{player.source!r} has no decodable video frame")
        self.pending = first
        player._make_gpu(on_gpu=False, size=displayed_size(first))  # rendercanvas: wgpu-native devices
        player.stats.size = displayed_size(first)
        options = player.options
        self.subtitles = None  # opened once the first frame is up (:meth:`_after_first_frame`)
        self._subtitles_opened = False
        if self.cover_art:  # the terminal's line follows the sound, as a song's without a cover
            player.progress.start_seconds(self._audio_duration)
            self._position_total = None
        else:
            # Looping, the file's frame count is no total: the count ran past it ('300/250 frames').
            total = options.frames or (None if self.loop else known_frame_count(player.source, decoder.info))
            player.progress.start(total)
            # Without --frames, the bar follows the position, as mpv's status line does: counting the
            # frames shown, it read '266/250' after a backward seek and '50/250' with the picture at its end.
            self._position_total = None if options.frames else total
        self._video_seconds = decoder.info.duration_seconds
        self._restart_file_time()
        return first

    def _start_audio_only(self, player: Any) -> None:
        """A playlist's file without video: its duration checked against ``--at``, the device's objects
        made; the sound starts on the first draw, as :class:`AudioOnlyPlayback` plays such a file."""
        self._audio_duration = audio_duration(player)
        if self._audio_duration is None and not player.options.audio:
            raise InvalidInputError(f"{player.source!r}: no sound (--no-audio) and no duration to wait for")
        player._make_gpu(on_gpu=False)
        player.stats.size = None
        self.audio_only = True
        self.osd.always_bar = True  # nothing to hide under it
        self.subtitles = None
        self._subtitles_opened = True  # no picture to put them on
        self._restart_file_time()
        # The terminal's line follows the sound's time, as mpv's 'A: 0:03 / 1:00': it had none.
        player.progress.start_seconds(self._audio_duration)

    def _open_subtitles(self) -> None:
        if self._subtitles_opened:
            return
        from alpha2.api.subtitles import open_subtitles

        self._subtitles_opened = True
        options = self.player.options
        self.subtitles = open_subtitles(
            self.player.source, sub=options.sub, enabled=options.subtitles, codepage=options.sub_codepage
        )

    def open(self, canvas_module: str = "rendercanvas.auto", *, size: Size | None = None) -> Any:
        """Decode the first frame, make the device and the canvas (the clock starts on the first frame shown).

        ``canvas_module`` is a rendercanvas backend module (``rendercanvas.auto`` picks glfw or Qt;
        tests drive ``rendercanvas.offscreen``). ``size``: the canvas size (default the frame's).

        One file: the device opens on a thread while the decoder opens here, the window is made as soon as
        the picture's size is known, and the sound's library loads on a third thread; the on-screen
        display's GPU pipeline and the subtitles follow the first frame.
        """
        from alpha2.apps.audio_out import preload_sound

        if self.player.options.audio:
            preload_sound()
        if self.playlist is None:
            backend = import_canvas_backend(canvas_module)
            self._start(self.player, backend, size)
        else:
            backend = import_canvas_backend(canvas_module)
            if not self._play_from(self.playlist.index, +1, first=True):
                source, message = self.playlist.errors[0]
                count = len(self.playlist.sources)
                raise InvalidInputError(f"none of the {count} files could be played ({source}: {message})")
        player, stats = self.player, self.stats
        if self.canvas is None:
            window = size if size is not None else stats.size or AudioOnlyPlayback.WINDOW
            self.title = self._title_text()
            self.canvas = make_canvas(backend, self.title, window)
            repeat_held_keys(self.canvas)
        self.context, self.present_format, self.render_format = configure_canvas(
            self.canvas, player.device, readable=self.readable_surface
        )
        # The on-screen display's pipeline is built on a thread (lavapipe compiles it on the CPU) while the
        # first frame is drawn; the first frame goes up without it, the next ones wait for it.
        device = player.device
        self._overlay_build = Background(lambda: _Overlay(device), "alpha2 osd")
        self.canvas.add_event_handler(self._on_key, "key_down")
        self.canvas.add_event_handler(self._on_pointer_move, "pointer_move")
        self.canvas.add_event_handler(self._on_pointer_down, "pointer_down")
        self.canvas.add_event_handler(self._on_double_click, "double_click")
        self.canvas.add_event_handler(self._on_wheel, "wheel")
        # Paused, the window is drawn on demand (see _pace): any input draws at once.
        self.canvas.add_event_handler(
            self._wake, "key_down", "pointer_move", "pointer_down", "double_click", "wheel", order=1
        )
        self.canvas.request_draw(self._draw)
        return backend

    def _wake(self, event: Mapping[str, Any]) -> None:
        self.canvas.request_draw()

    def _pace(self) -> None:
        """Draw continuously while playing; paused, only on input and, while something on screen changes
        by itself (:meth:`_changes_while_paused`), :data:`PAUSED_FPS` times a second, as mpv idles: a
        paused 720p window drew at 240 Hz, most of a core on lavapipe. Paused, rendercanvas's scheduler
        wakes :data:`PAUSED_EVENTS_FPS` times a second for input, not 240.

        The few draws a second are asked by a timer thread of this window's (asking only sets the
        scheduler's flag): rendercanvas 2.7's ``min_fps`` never notes when it last drew (its scheduler's
        ``last_draw_time`` stays 0), so it draws at ``max_fps``; and its loop's ``call_later`` leaves an
        un-awaited coroutine where the loop does not run (a canvas driven by hand)."""
        self._note_pause()
        mode = "ondemand" if self.paused else "continuous"
        # A file without video has no frames to meet: the level visual is drawn at 60 Hz, not at 240.
        fps = LEVEL_FPS if self.sound_led else PAUSED_EVENTS_FPS if mode == "ondemand" else MAX_FPS
        if (mode, fps) != self._update_mode and self.canvas is not None:
            self._update_mode = (mode, fps)
            if mode == "ondemand":
                self.canvas.set_update_mode("ondemand", min_fps=0, max_fps=fps)
            else:
                self.canvas.set_update_mode("continuous", max_fps=fps)
        if mode == "ondemand" and not self._tick_pending and self._changes_while_paused():
            self._tick_pending = True
            timer = threading.Timer(1 / PAUSED_FPS, self._tick)
            timer.daemon = True
            timer.start()

    def _changes_while_paused(self) -> bool:
        """Whether the paused window changes by itself: a message on screen (it fades), the stats (their
        figures) or a file without video's level visual. Otherwise the picture, the bar and the time
        stand still and nothing is drawn until an input comes (as mpv idles): the timed draws of a
        paused window with nothing moving kept the main thread at 3 to 4 % of a core on lavapipe."""
        osd = self.osd
        return self.audio_only or osd.show_stats or osd.current_message is not None

    def _tick(self) -> None:
        self._tick_pending = False
        canvas = self.canvas
        if canvas is not None and not canvas.get_closed():
            canvas.request_draw()

    def _ready_overlay(self, *, wait: bool) -> _Overlay | None:
        """The on-screen display's renderer once built (``wait``: wait for it)."""
        build = self._overlay_build
        if self.overlay is None and build is not None and (wait or build.done()):
            self._overlay_build = None
            self.overlay = build.result()
        return self.overlay

    def _finish_file(self) -> None:
        """Release what the file holds (its pending frame, clock, subtitles) and complete its stats."""
        self._let_go_held()
        if self.pending is not None:
            self.pending.release()
            self.pending = None
        self.note_track()
        clock, self.clock = self.clock, None
        if clock is not None:  # the next file of the playlist plays as loud, and muted or not
            self.volume = getattr(clock, "volume", None)
            self.muted = bool(getattr(clock, "muted", False))
            self.stay_paused = bool(getattr(clock, "paused", False)) and not clock.ended()
        if self.sound_led:  # quit before the sound's end: its terminal line keeps its length
            self.player.ended_early = clock is not None and not clock.ended()
        if clock is not None:
            if self.sound_led:  # the system clock runs on past the end (draws late on a busy machine)
                end = clock.now() if self._audio_duration is None else min(clock.now(), self._audio_duration)
                self.stats.audio_seconds = end - (self.player.options.at_s or 0.0)
            self.stats.clock = clock.as_dict()
            clock.close()
        subtitles, self.subtitles = self.subtitles, None
        if subtitles is not None:
            subtitles.close()
        self.stats.seconds = time.perf_counter() - self._file_started
        self._note_pause()
        self.stats.paused_seconds = self._paused_seconds()
        if not self.sound_led:
            limit = self.player.options.frames
            self.player.ended_early = not self.ended and (limit is None or self.stats.frames < limit)
        if self.audio_only:
            self.stats.mode, self.stats.mode_reason = "window", "audio only, level visual"
        elif self.cover_art:  # a song: its report says the seconds of sound, not '2 frames (0.5 fps)'
            self.stats.mode, self.stats.mode_reason = "window", "audio only, cover art"
        else:
            self.stats.mode, self.stats.mode_reason = "window", "vsync, letterboxed"
            self.stats.dropped_frames = self.scheduler.dropped
            self.stats.late_frames = self.scheduler.late
            self.stats.sync = self.scheduler.as_dict()
        self.player._finish_stats()

    def finish(self, seconds: float) -> Any:
        """Release what is held and complete the stats (of the file playing last)."""
        self._finish_file()
        if self.playlist is None:
            self.stats.seconds = seconds
        if self._overlay_build is not None:
            try:
                self._ready_overlay(wait=True)
            except Exception:
                pass  # the display never came up: nothing of it to close
        overlay, self.overlay = self.overlay, None
        if overlay is not None:
            overlay.close()
        return self.stats

    def run(self, canvas_module: str = "rendercanvas.auto") -> Any:
        timer = pipeline.RunTimer()
        signals: _SignalsClose | None = None
        try:
            backend = self.open(canvas_module)
            # The first frame now, before the loop starts (starting rendercanvas's asyncio loop takes
            # about 20 ms on the 2-core machine); the loop draws the next ones.
            self.canvas.force_draw()
            signals = self._signals = _SignalsClose(self.canvas, backend.loop)
            backend.loop.run()
        finally:
            self._signals = None
            try:
                if signals is not None:
                    signals.restore()
            finally:
                self.finish(timer.stop())
        return self.stats

    def media_time(self) -> float:
        return self.clock.now() if self.clock is not None else 0.0

    # -- input --------------------------------------------------------------------------------------

    def _on_key(self, event: Mapping[str, Any]) -> None:
        self._clock_if_due()
        key = key_name(event)
        if self._common_key(key):
            return
        action = self._actions().get(key)
        if action is not None:
            action()
        elif (step := seek_step(event)) is not None and self.clock is not None:
            if self.player.decoder or self.audio_only:
                self.seek(self.media_time() + step)

    def _actions(self) -> dict[str, Callable[[], Any]]:
        return {
            ".": lambda: self.step(forward=True),
            ",": lambda: self.step(forward=False),
            **{key: self._speed_key(factor) for key, factor in SPEED_FACTORS.items()},  # mpv's [ ] { }
            "Backspace": lambda: self.set_speed(1.0),
            "s": self.screenshot,
            "l": self.set_ab_loop,  # mpv's keys: l the A-B loop, L the file's
            "L": self.toggle_loop,
            "j": self.cycle_subtitles,
            "J": self.cycle_subtitles,
            "v": self.toggle_subtitles,  # mpv's sub-visibility
            "z": lambda: self.add_sub_delay(-SUB_DELAY_STEP_S),  # mpv's sub-delay
            "Z": lambda: self.add_sub_delay(+SUB_DELAY_STEP_S),
            "Ctrl+-": lambda: self.add_audio_delay(-AUDIO_DELAY_STEP_S),  # mpv's audio-delay
            "Ctrl++": lambda: self.add_audio_delay(+AUDIO_DELAY_STEP_S),
            "n": lambda: self.go(+1),
            "N": lambda: self.go(+1),
            "Enter": lambda: self.go(+1),  # mpv's (p is its pause, P its show-progress)
            ">": lambda: self.go(+1),  # mpv's playlist keys
            "<": lambda: self.go(-1),
            "i": self.toggle_stats,
            "I": self.toggle_stats,
            "?": self.toggle_help,
        }

    def _window_size(self) -> Size:
        width, height = (int(v) for v in self.canvas.get_physical_size())
        return Size(max(width, 1), max(height, 1))

    def _pointer(self, event: Mapping[str, Any]) -> tuple[float, float]:
        """The event's position in physical pixels (rendercanvas gives logical ones)."""
        ratio = float(self.canvas.get_pixel_ratio() or 1.0)
        return float(event.get("x", 0.0)) * ratio, float(event.get("y", 0.0)) * ratio

    def _on_pointer_move(self, event: Mapping[str, Any]) -> None:
        self.osd.activity()
        if self._cursor_hidden:
            self._cursor_hidden = False
            self.canvas.set_cursor("default")

    def _on_pointer_down(self, event: Mapping[str, Any]) -> None:
        self._clock_if_due()
        button = int(event.get("button", 1) or 1)
        if button == 2:  # mpv's right click: pause / play
            self.toggle_pause()
        if button != 1:
            return
        x, y = self._pointer(event)
        fraction = self.osd.bar_fraction_at(self._window_size(), x, y)
        duration = self.duration_s
        if fraction is not None and duration and self.clock is not None:
            self.seek(self.start_s + fraction * duration)

    # -- what the keys do ---------------------------------------------------------------------------

    def toggle_stats(self) -> None:
        self.osd.show_stats = not self.osd.show_stats
        self._stats_cache = None

    def toggle_help(self) -> None:
        self.osd.show_help = not self.osd.show_help

    def toggle_loop(self) -> None:
        self.loop = not self.loop
        self._say(f"Loop: {'yes' if self.loop else 'no'}")

    def set_ab_loop(self) -> None:
        """mpv's ``l``: the first press sets A at the time on display, the second B (playing from B goes
        back to A), the third clears it."""
        position = self._position()
        loop = self.ab_loop
        if loop is None:
            self.ab_loop = (position, None)
            self._say(f"A-B loop: A {format_time(position - self.start_s)}")
            return
        a, b = loop
        if b is None and abs(position - a) >= 0.01:
            a, b = min(a, position), max(a, position)
            self.ab_loop = (a, b)
            self._say(f"A-B loop: {format_time(a - self.start_s)} - {format_time(b - self.start_s)}")
        elif b is not None:
            self.ab_loop = None
            self._say("A-B loop: off")

    def _loop_ab_if_due(self) -> bool:
        """Back to A once the clock passes B (playing); whether it went."""
        loop = self.ab_loop
        if loop is None or loop[1] is None or self.clock is None or self.paused:
            return False
        if self.media_time() < loop[1]:
            return False
        self.seek(loop[0], show_bar=False)
        return True

    def cycle_subtitles(self) -> None:
        if self.subtitles is None:
            return
        self.subtitles.cycle()
        self._say(self.subtitles.describe())

    def toggle_subtitles(self) -> None:
        """Show or hide the subtitles (``v``); the track chosen stays."""
        self.sub_visible = not self.sub_visible
        self._say(f"Subtitles {'visible' if self.sub_visible else 'hidden'}")

    def add_sub_delay(self, step_s: float) -> None:
        """Show the subtitles ``step_s`` later (earlier where negative) than their cues say."""
        self.sub_delay_s = round(self.sub_delay_s + step_s, 3)
        self._say(f"Sub delay: {round(self.sub_delay_s * 1000)} ms")

    def add_audio_delay(self, step_s: float) -> None:
        """Hear the sound ``step_s`` later (earlier where negative) against the picture: the media clock
        is the time heard plus the delay, so the frames follow it (:meth:`AudioOutput.set_delay`). A
        playlist's file without video has no picture: the delay is kept for the videos, and said so."""
        self.audio_delay_s = round(self.audio_delay_s + step_s, 3)
        if self.clock is not None and not self.sound_led:
            self.clock.set_delay(self.audio_delay_s)
            self.scheduler.mark("audio delay")
        ms = round(self.audio_delay_s * 1000)
        self._say(
            f"A-V delay: {ms} ms" + (" (for the videos: this file is sound only)" if self.sound_led else "")
        )

    def _speed_key(self, factor: float) -> Callable[[], None]:
        return lambda: self.set_speed(scaled_speed(self.speed, factor))

    def set_speed(self, speed: float) -> None:
        """Play at ``speed`` (0.25 to 4); the sound keeps its pitch (FFmpeg's atempo)."""
        self.speed = speed
        self.scheduler.speed = speed
        if self.clock is not None:
            self.clock.set_speed(speed)
            self.scheduler.mark("speed")
        self._say(f"Speed: {speed:.2f}")  # as mpv says it

    def _frame_duration(self) -> float:
        decoder = self.player.decoder
        rate = decoder.info.average_rate if decoder is not None else None
        return float(1 / rate) if rate else 1 / 30

    def step(self, *, forward: bool) -> None:
        """One frame forward or back, paused (``.`` / ``,``)."""
        clock = self.clock
        if clock is None or self.sound_led:  # a song's cover art has no frames to step through
            return
        if not self.paused:
            clock.pause()
            self._note_pause()
        if forward:
            if self.pending is not None:
                clock.seek(self.pending.pts_seconds or 0.0)
            return
        # From the frame the last step went to where it is not on display yet: back-steps pressed
        # faster than the window draws each count (they went back from the same frame).
        shown = self._seek_pts if self._seek_pts is not None else self.shown_pts
        if shown is None:
            shown = self.media_time()
        self.seek(max(0.0, shown - self._frame_duration() / 2), show_bar=False)

    def screenshot(self) -> str | None:
        """Write the frame on display as ``NAME-SECONDS.png`` next to the input (``s``); its path.

        As mpv's ``s``: the video's own size as shown (rotation and pixel aspect applied), whatever the
        window's, with the subtitle on display drawn over it (laid out for that size), and no other part
        of the on-screen display."""
        held, size = self.held, self.held_size
        if self.shown is None or held is None or size is None:
            return None
        from alpha2.api.atomic import write_png
        from alpha2.api.overlay import OverlayPlacement, read_texture_rgba

        device = self.player.device
        usage = gpu_module_of(device).TextureUsage
        target = device.create_texture(
            label="alpha2 screenshot",
            size=(size.width, size.height, 1),
            format=self.render_format,
            usage=usage.RENDER_ATTACHMENT | usage.COPY_SRC,
        )
        sprites: list[Any] = []
        try:
            self._render_held(target)
            subtitle = self._subtitle_now()
            overlay = self._ready_overlay(wait=True) if subtitle else None
            if overlay is not None:
                # A display of its own: no bar, pause sign, message, stats or help; the subtitle only.
                view = OsdView(
                    position_s=self.shown_pts or 0.0,
                    duration_s=self.duration_s,
                    subtitle=subtitle.get("bottom"),
                    subtitle_top=subtitle.get("top"),
                    subtitle_middle=subtitle.get("middle"),
                )
                placements = []
                for layer in Osd().layers(size, view):
                    sprites.append(overlay.renderer.sprite(layer.pixels))
                    placements.append(OverlayPlacement(sprites[-1], layer.x, layer.y))
                encoder = device.create_command_encoder(label="alpha2 screenshot subtitle")
                overlay.renderer.encode(encoder, target, placements)
                device.queue.submit([encoder.finish()])
            pixels = read_texture_rgba(device, target)
        finally:
            for sprite in sprites:
                sprite.close()
            target.destroy()
        # Named by the time on display (from the first frame, as the display counts)
        path = write_png(screenshot_path(self.player.source, (self.shown_pts or 0.0) - self.start_s), pixels)
        self._say(f"Screenshot: {os.path.basename(path)}")
        return path

    def _subtitle_now(self) -> dict[str, str]:
        """The subtitle text on display now, by where it goes (``bottom``, ``middle``, ``top``): none while
        hidden (``v``); with a delay (``z`` / ``Z``) the cue of that much earlier."""
        if self.subtitles is None or not self.sub_visible:
            return {}
        position = self.shown_pts if self.shown_pts is not None else 0.0
        now = self.media_time() if self.clock is not None else position
        return self.subtitles.placed_at(now - self.sub_delay_s)

    def _render_held(self, target: Any, frame: DecodedFrame | None = None) -> Any:
        """Render into ``target`` the frame on display again, or ``frame``, which becomes the frame on
        display (imported here, the importer owns it; its lease is kept and the last one let go);
        returns ``target``. As :meth:`~alpha2.api.playback.Player._render`, which lets the lease go."""
        player = self.player
        if frame is not None:
            self._let_go_held()  # before the import: the importer's texture sets as before, one in use
            self.held = player._import(frame)
        assert self.held is not None
        return player._render_imported(self.held.frame, target)

    def _let_go_held(self) -> None:
        held, self.held = self.held, None
        if held is not None:
            held.release()

    def _next_file(self) -> bool:
        playlist = self.playlist
        if playlist is None or playlist.index + 1 >= len(playlist.sources):
            return False
        self.go(+1)
        return True

    def go(self, step: int) -> None:
        """The next (``+1``) or previous (``-1``) file of the playlist (``n`` / ``p``)."""
        playlist = self.playlist
        if playlist is None or not 0 <= playlist.index + step < len(playlist.sources):
            self._say("No next file" if step > 0 else "No previous file")
            return
        self._switch(playlist.index + step, step)

    def _switch(self, index: int, step: int) -> None:
        """Finish the file playing and play ``playlist.sources[index]`` in this window (a file that
        cannot be played is said and passed over in the ``step`` direction); closes at the end."""
        self._finish_file()
        self.results.append(self.stats)
        self.player.close(True)
        self.osd.clear_message()  # 'No chapters' stayed over the next file (a person's pass)
        if not self._play_from(index, step):
            self.canvas.close()

    def _play_from(self, index: int, step: int, *, first: bool = False) -> bool:
        """Start the first file that plays from ``index`` on, in the ``step`` direction; whether one did.
        ``first``: the window's first file, whose player exists already."""
        playlist = self.playlist
        assert playlist is not None
        window_open = self.canvas is not None
        while 0 <= index < len(playlist.sources):
            source = playlist.sources[index]
            player = self.player if first else playlist.make_player(source)
            first = False
            try:
                self._reset(player)
                self._start(player)
                if window_open and not self.fullscreen and player.decoder is not None:
                    # The window takes the next file's size, as mpv's does (a 4:3 file after a 16:9 one
                    # is not letterboxed in the old window).
                    shown = stream_displayed_size(player.decoder.info)
                    self.canvas.set_logical_size(shown.width, shown.height)
            except Error as exc:
                said = any(name == source for name, _ in playlist.errors)  # passed over again (n / p)
                if not said:
                    playlist.errors.append((source, exc.message))
                self.pending = None
                player.close(False)
                if not said and playlist.on_error is not None:  # its bar gone, before the next file's
                    playlist.on_error(source, exc.message)
                self._say(f"{os.path.basename(source)}: {exc.message}")
                index += step
                continue
            playlist.index = index
            return True
        return False

    def _reset(self, player: Any) -> None:
        self._let_go_held()
        self.player, self.stats = player, player.stats
        self.shown = self.shown_pts = None
        self._seek_pts = None
        self._clock_from = None
        self.pending = None
        self.scheduler = AVScheduler(speed=self.speed)
        self.ended = False
        self.last_window = Size(0, 0)
        self.audio_only = self.cover_art = False
        self._audio_duration = None
        self._tracks = self._chapters = None
        self.ab_loop = None  # a file's A-B loop is not the next file's
        self.osd.always_bar = False
        self.osd.activity()

    def seek(self, seconds: float, *, show_bar: bool = True) -> None:
        """Jump to ``seconds`` (clamped to the clip): the video and the sound resync there."""
        if self.sound_led:  # a song's cover stays on display: the sound alone is sought
            self._seek_sound(seconds)
            return
        decoder = self.player.decoder
        # ``seconds`` is a frame's or the clock's time; the decoder counts from the stream's start (a
        # seek in an MPEG-TS file went 1.4 s too far: the picture froze that long, and paused, the frame
        # sought to never came up).
        start = self.start_s
        target = max(start, seconds)
        duration = self.duration_s
        if duration is not None:
            target = min(target, start + max(0.0, duration - 0.05))
        frame_target = target  # past the last frame, in the sound that runs on: the last frame, held
        video = decoder.info.duration_seconds
        if video is not None:
            frame_target = min(target, start + max(0.0, video - 0.05))
        if self.pending is not None:
            self.pending.release()
            self.pending = None
        decoder.seek(frame_target - start)
        self.pending = decoder.next_frame()
        self._seek_pts = self.pending.pts_seconds if self.pending is not None else None
        if self.clock is not None:
            self.clock.seek(target)
        elif self.shown is not None:
            self._clock_from = target  # a seek between the first frame and the clock's start
        self.scheduler.mark("seek")
        self.ended = False
        if show_bar:
            self.osd.activity()

    def _seek_sound(self, seconds: float) -> None:
        """:meth:`seek` of a file without video: the sound alone, clamped to the file."""
        target = max(0.0, seconds)
        if self._audio_duration is not None:
            target = min(target, max(0.0, self._audio_duration - 0.05))
        if self.clock is not None:
            self.clock.seek(target)
        else:
            self._clock_from = target
        self.osd.activity()

    # -- drawing ------------------------------------------------------------------------------------

    def _advance(self) -> DecodedFrame | None:
        """The newest frame due at the media time (older due frames are dropped), or None."""
        decoder = self.player.decoder
        assert decoder is not None
        self.scheduler.on_draw(time.perf_counter())
        # Before the first frame is on screen there is no clock: that frame is due now.
        first = self.pending.pts_seconds if self.clock is None and self.pending is not None else None
        now = (first or 0.0) if self.clock is None else self.media_time()
        due: DecodedFrame | None = None
        while self.pending is not None and self.scheduler.is_due(self.pending.pts_seconds or 0.0, now):
            if due is not None:
                due.release()
                self.scheduler.drop()
            due = self.pending
            t0 = time.perf_counter()
            self.pending = decoder.next_frame()
            self.stats.stages.add("decode", time.perf_counter() - t0)
        if self.pending is None and due is None and self.shown is not None and self.cover_art:
            # A song's cover is its only frame: the song ends with its sound (the system clock's too).
            clock = self.clock
            self.ended = clock is not None and not self.paused and clock.ended()
        elif self.pending is None and due is None and self.shown is not None:
            from alpha2.apps.audio_out import ClockKind

            clock = self.clock
            # Paused on the last frame (a frame step onto it, a pause at the end): the file has not ended
            # until it plays on, as in mpv.
            self.ended = clock is None or (
                not self.paused and (clock.kind is ClockKind.SYSTEM or clock.ended())
            )
        return due

    def _progress_count(self, pts: float, shown: int) -> int:
        """What the terminal's bar counts for the frame at ``pts`` just shown: the frames shown where
        ``--frames`` counts them (or the length is not known), else the frame at the position, 1 for the
        first and the total at the end."""
        total, seconds = self._position_total, self._video_seconds
        if not total or not seconds or seconds <= 0:
            return shown
        index = int((pts - self.start_s) / seconds * total + 1e-6)
        return min(total, max(1, index + 1))

    def _position(self) -> float:
        """The time on display: the clock's; paused, the frame's (a frame step's); a file without video,
        or past the last frame (the sound runs on), the clock's."""
        position = self.shown_pts if self.shown_pts is not None else 0.0
        if self.clock is None:
            return position
        after_last = self.pending is None and self.media_time() > position + self._frame_duration()
        return self.media_time() if not self.paused or self.sound_led or after_last else position

    def _position_text(self) -> str:
        """``0:12 / 1:00``: the time on display of the file's length."""
        return f"{format_time(self._position() - self.start_s)} / {format_time(self.duration_s)}"

    def _title_text(self) -> str:
        name = os.path.basename(self.player.source)
        title = f"{name} — {self._position_text()}"
        if self.paused:
            title += " [paused]"
        if self.playlist is not None and len(self.playlist.sources) > 1:
            title += f" ({self.playlist.index + 1}/{len(self.playlist.sources)})"
        return title

    def _stats_lines(self) -> list[str]:
        stats, sync, player = self.stats, self.scheduler, self.player
        decoder = player.decoder
        hwaccel = stats.hwaccel or {}
        lines = [f"File: {player.source}"]
        if decoder is not None:
            info = decoder.info
            rate = f", {float(info.average_rate):.3f} fps" if info.average_rate else ""
            size = f"{stats.size.width}x{stats.size.height}" if stats.size else "?"
            where = "NVDEC" if hwaccel.get("active") == "cuda" else "software"
            name = hwaccel.get("decoder") or info.codec_name
            lines.append(f"Decoder: {info.codec_name} ({name}, {where}); {size}{rate}")
        if self.audio_only:
            lines.append("Video: none (the level of the sound)")
        elif self.cover_art:
            lines.append("Video: cover art (one picture attached to the song)")
        else:
            lines.append(f"Frames: {sync.shown} shown, {sync.dropped} dropped, {sync.late} late")
            offset = "n/a" if sync.last_offset is None else f"{sync.last_offset * 1000:+.1f} ms"
            lines.append(
                f"A/V offset: {offset} (mean {sync.total.mean_abs * 1000:.1f} ms, "
                f"max {sync.total.max_abs * 1000:.1f} ms; refresh {1 / sync.refresh_s:.0f} Hz)"
            )
        clock = self.clock
        if clock is not None:
            volume = round(getattr(clock, "volume", 1.0) * 100)
            muted = " (muted)" if getattr(clock, "muted", False) else ""
            reason = clock.reason  # 'audio clock: ...' / 'system clock: ...': not "Clock: audio clock: ..."
            lines.append(reason[:1].upper() + reason[1:])
            lines.append(f"Audio: {self.track_text()}")
            loop = "yes" if self.loop else "no"
            delay = f"; A-V delay {round(self.audio_delay_s * 1000)} ms" if self.audio_delay_s else ""
            lines.append(f"Speed: {self.speed:g}x; volume {volume}%{muted}; loop {loop}{delay}")
        if stats.colour is not None:
            from alpha2.api.colour_report import colour_summary

            lines.append(f"Colour: {colour_summary(stats.colour)}")
        if self.subtitles is not None:
            shown = "" if self.sub_visible else " (hidden)"
            delay = f" (delay {round(self.sub_delay_s * 1000)} ms)" if self.sub_delay_s else ""
            lines.append(self.subtitles.describe() + shown + delay)
        return lines

    def _stats_now(self) -> list[str]:
        """The stats lines, worked out again twice a second (each new text is rasterised anew)."""
        now = time.monotonic()
        cached = self._stats_cache
        if cached is None or now - cached[0] >= 0.5:
            cached = self._stats_cache = (now, self._stats_lines())
        return cached[1]

    def _osd_view(self) -> OsdView:
        position = self._position()
        placed = self._subtitle_now()
        return OsdView(
            position_s=position - self.start_s,  # as mpv counts: 0:00 at the first frame
            duration_s=self.duration_s,
            paused=self.paused,
            subtitle=placed.get("bottom"),
            subtitle_top=placed.get("top"),
            subtitle_middle=placed.get("middle"),
            stats=self._stats_now() if self.osd.show_stats else (),
            help=help_lines(PLAYLIST_AUDIO_BINDINGS if self.audio_only else PLAYER_BINDINGS)
            if self.osd.show_help
            else (),
            marks=self.chapter_marks(self.duration_s),
        )

    def _draw(self) -> None:
        if self._signals is not None:
            self._signals.ensure()
        self._pace()
        self._loop_ab_if_due()
        if self.audio_only:
            self._draw_level()
            return
        player, stats = self.player, self.stats
        if self.clock is None and self.shown is not None:
            # The first frame went up with the draw before: the subtitles open and the sound starts now,
            # at its time (opening the sound takes 50-60 ms on the 2-core machine, which the first
            # picture no longer waits for; it stays on screen until the clock runs).
            self._clock_if_due()
            return
        limit = player.options.frames
        frame = self._advance()
        if self.ended and self.loop and (limit is None or stats.frames < limit):
            if frame is not None:
                frame.release()
            self.seek(0.0, show_bar=False)
            return
        if self.ended or (limit is not None and stats.frames >= limit):
            if frame is not None:
                frame.release()
            # --frames ends each file, as mpv's does and as the offscreen list plays them: it closed the
            # window after a playlist's first file.
            self._next_or_close()
            return
        window = self._window_size()
        if window != self.last_window:
            player.renderer.clear_cache()
            self.last_window = window
        pts = (frame.pts_seconds or 0.0) if frame is not None else 0.0
        if frame is not None:
            self.held_size = displayed_size(frame)
            box = letterbox(self.held_size, window)
            target = player.renderer.target_texture(box.width, box.height, self.render_format)
            self.shown = (self._render_held(target, frame), box)
            self.shown_pts = pts
            self._seek_pts = None
        elif self.shown is not None and self.held is not None and self.held_size is not None:
            # The window's size changed with no new frame due (paused, or between frames): the frame on
            # display is rendered again, fitted to the new size, at once.
            box = letterbox(self.held_size, window)
            texture = self.shown[0]
            if (int(texture.size[0]), int(texture.size[1])) != (box.width, box.height):
                target = player.renderer.target_texture(box.width, box.height, self.render_format)
                self.shown = (self._render_held(target), box)
        if self.shown is None:
            return
        texture, _ = self.shown
        tex_w, tex_h = int(texture.size[0]), int(texture.size[1])
        if tex_w > window.width or tex_h > window.height:
            return  # no frame to render again at the new size (cannot happen once one is held)
        box = Rect((window.width - tex_w) // 2, (window.height - tex_h) // 2, tex_w, tex_h)
        surface = self.context.get_current_texture()
        device = player.device
        encoder = device.create_command_encoder(label="alpha2 present")
        _clear(encoder, surface, (0.0, 0.0, 0.0, 1.0))
        encoder.copy_texture_to_texture(
            {"texture": texture, "mip_level": 0, "origin": (0, 0, 0)},
            {"texture": surface, "mip_level": 0, "origin": (box.x, box.y, 0)},
            (box.width, box.height, 1),
        )
        # The first frame does not wait for the display's pipeline.
        self._display_and_submit(encoder, surface, window, wait=self.clock is not None)
        if frame is not None:
            self.scheduler.presented(pts, self.media_time())
            stats.frames += 1
        if self.cover_art:  # the sound's time, as a song's without a cover ('A: 0:03 / 0:08' in mpv)
            player.progress.update_seconds(self._position() - self.start_s, stats.frames)
        elif frame is not None:
            playing = time.perf_counter() - self._file_started - self._paused_seconds()
            player.progress.set_rate(stats.frames / playing if playing > 0 else 0.0)  # not the position's
            player.progress.update(self._progress_count(pts, stats.frames))
        title = self._title_text()
        if title != self.title:
            self.title = title
            self.canvas.set_title(title)
        player.progress.set_position(self._position_text() + (" (paused)" if self.paused else ""))
        if self.fullscreen and not self._cursor_hidden and not self.osd.showing_bar(self.paused):
            self._cursor_hidden = True  # as mpv: the pointer goes with the bar, and comes back on a move
            self.canvas.set_cursor("none")

    def _display_and_submit(self, encoder: Any, surface: Any, window: Size, *, wait: bool) -> None:
        """Encode the on-screen display over ``surface`` (once its pipeline is built; ``wait``: wait for
        it), submit the draw, and note the first frame's time."""
        stats = self.stats
        overlay = self._ready_overlay(wait=wait)
        if overlay is not None:
            t0 = time.perf_counter()
            overlay.encode(encoder, surface, self.osd.layers(window, self._osd_view()))
            stats.stages.add("osd", time.perf_counter() - t0)
        self.player.device.queue.submit([encoder.finish()])
        if self.on_present is not None:
            self.on_present(surface)
        if stats.first_frame_s is None:
            stats.first_frame_s = seconds_since_process_start()

    def _next_or_close(self) -> None:
        """The file has ended: the playlist's next file, or the window closes."""
        playlist = self.playlist
        if playlist is not None and playlist.index + 1 < len(playlist.sources):
            self._switch(playlist.index + 1, +1)
        else:
            self.canvas.close()

    def _draw_level(self) -> None:
        """A draw of a file without video (a playlist's entry): the level visual, as
        :class:`AudioOnlyPlayback` draws it, and the display over it; the next file at its end."""
        self._clock_if_due()
        clock, stats = self.clock, self.stats
        assert clock is not None
        if not self.paused and clock.ended():
            self.player.progress.set_position(self._position_text())  # the end's time (it stayed short)
            if self.loop:
                self._seek_sound(0.0)
            else:
                self._next_or_close()
            return
        window = self._window_size()
        surface = self.context.get_current_texture()
        device = self.player.device
        encoder = device.create_command_encoder(label="alpha2 level")
        _clear(encoder, surface, level_colour(clock.level()))
        self._display_and_submit(encoder, surface, window, wait=True)
        stats.frames += 1
        title = self._title_text()
        if title != self.title:
            self.title = title
            self.canvas.set_title(title)
        self.player.progress.update_seconds(clock.now(), stats.frames)
        self.player.progress.set_position(self._position_text() + (" (paused)" if self.paused else ""))

    def _clock_if_due(self) -> None:
        """Once the first frame is up (a file without video: at once): start the clock, at its time (or
        where a seek since went)."""
        if self.clock is None and (self.shown is not None or self.audio_only):
            if self._clock_from is not None:
                start = self._clock_from
            elif self.sound_led:  # a song's cover is stamped with the stream's start, not --at's time
                start = self.player.options.at_s or 0.0
            else:
                start = self.shown_pts or 0.0
            self._clock_from = None
            self._start_clock(start)

    def _start_clock(self, pts: float) -> None:
        """Open the subtitles and start the sound and the clock at ``pts``, the first frame's time: once
        that frame is up (its first render may take long), in sync with it."""
        self._open_subtitles()
        silent = AUDIO_OFF_REASON if self.sound_off else None
        self.clock = make_clock(self.player, pts, self.duration_s, self.asked_stream(), silent=silent)
        if self.volume is not None:
            self.clock.set_volume(self.volume)
        if self.muted:
            self.clock.toggle_mute()
        if silent is not None and self.audio_tracks():
            self._say("Audio: off (# turns it on)")
        if self.stay_paused:  # n / Enter while paused: the next file's first frame, paused
            self.stay_paused = False
            self.toggle_pause()
        if self.speed != 1.0:
            self.clock.set_speed(self.speed)
        if self.audio_delay_s and not self.sound_led:
            self.clock.set_delay(self.audio_delay_s)


def audio_duration(player: Any) -> float | None:
    """The duration of ``player``'s file without video, by its sound (None when not known).

    Raises:
        InvalidInputError: ``--at`` is past its end.
        NoAudioStreamError, MediaFormatError: it has no sound, or is not media.
    """
    from alpha2.api.errors import NoAudioStreamError
    from alpha2.api.media import AudioDecodeSession
    from alpha2.api.subtitles import SIDECAR_EXTENSIONS

    try:
        with AudioDecodeSession(player.source) as probe:
            duration = probe.info.duration_seconds
    except NoAudioStreamError as exc:
        # Neither video nor sound: said as a player's error, not the audio decoder's ('give a file with
        # sound' for a subtitle file given alone; an outside pass).
        held = re.search(r" \(it has [^)]*\)", exc.message)
        text = f"{player.source!r} has no video and no sound to play{held.group(0) if held else ''}"
        if os.path.splitext(os.fspath(player.source))[1].lower() in SIDECAR_EXTENSIONS:
            text += f"; a subtitle file goes with a video: alpha2 play VIDEO --sub {player.source}"
        raise NoAudioStreamError(text) from None
    start = player.options.at_s or 0.0
    if duration is not None and start >= duration:
        raise InvalidInputError(f"--at {start:g} s is past the end of {player.source!r}")
    return duration


def _clear(encoder: Any, surface: Any, colour: tuple[float, float, float, float]) -> None:
    bars = encoder.begin_render_pass(
        color_attachments=[
            {"view": surface.create_view(), "clear_value": colour, "load_op": "clear", "store_op": "store"}
        ]
    )
    bars.end()


class AudioOnlyPlayback(_Keys):
    """A file without video: the sound plays; a window (when there is one) glows with its level, and
    shows the time, the bar and the display's messages, with the keys and mouse of the video window that
    apply (:data:`~alpha2.apps.keys.AUDIO_BINDINGS`)."""

    WINDOW = Size(480, 160)
    """The window's size."""

    osd: Osd

    def __init__(self, player: Any) -> None:
        self.player = player
        self.stats = player.stats
        self.clock: MediaClock | None = None
        self.scheduler = AVScheduler()
        self.canvas: Any = None
        self.context: Any = None
        self.device: Any = None
        self._signals: _SignalsClose | None = None  # while the loop runs
        self.osd = Osd(always_bar=True)
        self.overlay: _Overlay | None = None
        self.duration_s: float | None = None
        self._update_mode = "continuous"  # the canvas's (open), switched by _pace
        self._tick_pending = False  # a paused window's next timed draw is asked for

    def _start(self) -> MediaClock:
        duration = self.duration_s = audio_duration(self.player)
        from alpha2.apps.audio_out import SystemClock

        self.clock = make_clock(self.player, self.player.options.at_s or 0.0, duration, self.asked_stream())
        if isinstance(self.clock, SystemClock) and duration is None:
            raise InvalidInputError(f"{self.player.source!r}: no sound and no duration to wait for")
        speed = self.player.options.speed
        if speed != 1.0:  # --speed (a sound alone has no speed keys, but the option holds from the start)
            self.clock.set_speed(speed)
        # The terminal's line follows the sound's time, as mpv's 'A: 0:03 / 1:00': it had none.
        self.player.progress.start_seconds(duration)
        return self.clock

    def _say_position(self, clock: MediaClock) -> None:
        """The terminal's line: the time heard of the length, and the pause."""
        paused = " (paused)" if getattr(clock, "paused", False) else ""
        now = clock.now()
        self.player.progress.update_seconds(now, self.stats.frames)
        self.player.progress.set_position(f"{format_time(now)} / {format_time(self.duration_s)}{paused}")

    def run_windowless(self, reason: str) -> Any:
        """Play the sound to its end (or ``--frames`` tenths of a second), no picture."""
        self.stats.mode, self.stats.mode_reason = "audio", f"audio only; {reason}"
        timer = pipeline.RunTimer()
        clock = self._start()
        limit = self.player.options.frames
        try:
            while not clock.ended() and (limit is None or timer.seconds < limit / 10):
                self._say_position(clock)
                time.sleep(0.01)
        finally:
            self._finish(timer.stop())
        return self.stats

    def run_window(self, canvas_module: str = "rendercanvas.auto") -> Any:
        """Play the sound with a window: its brightness follows the level, the time and bar show over
        it; q quits."""
        self.stats.mode, self.stats.mode_reason = "window", "audio only, level visual"
        timer = pipeline.RunTimer()
        signals: _SignalsClose | None = None
        try:
            backend = self.open(canvas_module)
            signals = self._signals = _SignalsClose(self.canvas, backend.loop)
            backend.loop.run()
        finally:
            self._signals = None
            try:
                if signals is not None:
                    signals.restore()
            finally:
                self._finish(timer.stop())
        return self.stats

    def open(self, canvas_module: str = "rendercanvas.auto") -> Any:
        """Make the device, the window and its display, and start the sound; the canvas backend."""
        backend = import_canvas_backend(canvas_module)
        self.player._make_gpu(on_gpu=False)
        self.device = self.player.device
        window = self.WINDOW
        self.canvas = backend.RenderCanvas(
            title=f"alpha2 play - {os.path.basename(self.player.source)}",
            size=(window.width, window.height),
            update_mode="continuous",
            max_fps=LEVEL_FPS,
            vsync=True,
        )
        repeat_held_keys(self.canvas)
        self.context = self.canvas.get_context("wgpu")
        preferred = self.context.get_preferred_format(self.device.adapter)
        self.context.configure(device=self.device, format=preferred)
        self.overlay = _Overlay(self.device)
        self._start()
        if self.player.options.audio_delay_s:  # --audio-delay: said, not ignored
            self._say(NO_AUDIO_DELAY_SOUND_ONLY)
        self.canvas.add_event_handler(self._on_key, "key_down")
        self.canvas.add_event_handler(self._on_pointer_down, "pointer_down")
        self.canvas.add_event_handler(self._on_wheel, "wheel")
        self.canvas.add_event_handler(self._on_double_click, "double_click")
        # Paused, the window is drawn on demand (see _pace): any input draws at once.
        self.canvas.add_event_handler(
            lambda e: self.canvas.request_draw(), "key_down", "pointer_down", "double_click", "wheel", order=1
        )
        self.canvas.request_draw(self._draw)
        return backend

    def _pace(self, paused: bool) -> None:
        """Draw the level at :data:`LEVEL_FPS` while playing; paused, only on input and while a message
        fades (:data:`PAUSED_FPS` times a second), as the video window does: a paused song's window drew
        at 60 Hz, 14 % of a core on lavapipe."""
        mode = "ondemand" if paused else "continuous"
        if mode != self._update_mode:
            self._update_mode = mode
            if paused:
                self.canvas.set_update_mode("ondemand", min_fps=0, max_fps=PAUSED_EVENTS_FPS)
            else:
                self.canvas.set_update_mode("continuous", max_fps=LEVEL_FPS)
        if paused and not self._tick_pending and self.osd.current_message is not None:
            self._tick_pending = True
            timer = threading.Timer(1 / PAUSED_FPS, self._tick)
            timer.daemon = True
            timer.start()

    def _tick(self) -> None:
        self._tick_pending = False
        canvas = self.canvas
        if canvas is not None and not canvas.get_closed():
            canvas.request_draw()

    def _on_key(self, event: Mapping[str, Any]) -> None:
        key = key_name(event)
        if self._common_key(key):
            return
        if key == "?":
            self.osd.show_help = not self.osd.show_help
        elif key in ("Ctrl+-", "Ctrl++"):
            self._say(NO_AUDIO_DELAY_SOUND_ONLY)  # said, not ignored: no picture to delay the sound against
        elif (step := seek_step(event)) is not None and self.clock is not None:
            self.seek(self.clock.now() + step)

    def _window_size(self) -> Size:
        width, height = (int(v) for v in self.canvas.get_physical_size())
        return Size(max(width, 1), max(height, 1))

    def _on_pointer_down(self, event: Mapping[str, Any]) -> None:
        button = int(event.get("button", 1) or 1)
        if button == 2:  # mpv's right click: pause / play
            self.toggle_pause()
        if button != 1:
            return
        ratio = float(self.canvas.get_pixel_ratio() or 1.0)
        x, y = float(event.get("x", 0.0)) * ratio, float(event.get("y", 0.0)) * ratio
        fraction = self.osd.bar_fraction_at(self._window_size(), x, y)
        if fraction is not None and self.duration_s and self.clock is not None:
            self.seek(fraction * self.duration_s)

    def seek(self, seconds: float) -> None:
        """Jump to ``seconds`` (clamped to the file)."""
        clock = self.clock
        if clock is None:
            return
        target = max(0.0, seconds)
        if self.duration_s is not None:
            target = min(target, max(0.0, self.duration_s - 0.05))
        clock.seek(target)
        self.osd.activity()

    def _draw(self) -> None:
        if self._signals is not None:
            self._signals.ensure()
        clock = self.clock
        paused = bool(getattr(clock, "paused", False))
        if clock is None or (clock.ended() and not paused):
            if clock is not None:
                self._say_position(clock)  # the end's time on the terminal's line (it stayed at 0:07)
            self.canvas.close()
            return
        self._pace(paused)
        self._say_position(clock)
        surface = self.context.get_current_texture()
        encoder = self.device.create_command_encoder(label="alpha2 level")
        _clear(encoder, surface, level_colour(clock.level()))
        if self.overlay is not None:
            view = OsdView(
                position_s=clock.now(),
                duration_s=self.duration_s,
                paused=paused,
                help=help_lines(AUDIO_BINDINGS) if self.osd.show_help else (),
                marks=self.chapter_marks(self.duration_s),
            )
            self.overlay.encode(encoder, surface, self.osd.layers(self._window_size(), view))
        self.device.queue.submit([encoder.finish()])
        self.stats.frames += 1

    def _finish(self, seconds: float) -> None:
        overlay, self.overlay = self.overlay, None
        if overlay is not None:
            overlay.close()
        self.note_track()
        clock, self.clock = self.clock, None
        # Quit before the sound's end: its terminal line keeps its length (not a full bar at 0:02).
        self.player.ended_early = clock is not None and not clock.ended()
        if clock is not None:
            self.stats.audio_seconds = clock.now() - (self.player.options.at_s or 0.0)
            self.stats.clock = clock.as_dict()
            clock.close()
        self.stats.seconds = seconds
