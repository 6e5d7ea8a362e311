"""The player's window: video paced against the media clock at the display's refresh, or a level visual.

:class:`WindowPlayback` draws in a rendercanvas window with vsync: at each draw it asks the
:class:`~alpha2.apps.avsync.AVScheduler` which decoded frame is due against the clock (the sound's,
from :mod:`alpha2.apps.audio_out`, or the system clock, which says why), letterboxes it, and counts
frames shown, dropped and late with their A/V offsets. Keys: space pauses, arrows seek (5 s / 30 s), m
mutes, 9 / 0 lower / raise the volume, q or Escape quits. :class:`AudioOnlyPlayback` plays a file
without video: a window whose colour follows the sound's level, or no window at all.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from alpha2.api import pipeline
from alpha2.api.media import media_kinds
from alpha2.api.playback import displayed_size
from alpha2.apps.avsync import AVScheduler
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Rect, Size
from alpha2.gpu.webgpu import gpu_module_of

if TYPE_CHECKING:
    # Sound (PortAudio, the audio decoder) is loaded when a window plays: a snapshot never needs it.
    from alpha2.apps.audio_out import MediaClock

__all__ = [
    "SEEK_STEPS_S",
    "VOLUME_STEP",
    "AudioOnlyPlayback",
    "WindowPlayback",
    "letterbox",
]

SEEK_STEPS_S: dict[str, float] = {"ArrowLeft": -5.0, "ArrowRight": 5.0, "ArrowDown": -30.0, "ArrowUp": 30.0}
"""Seek per arrow key, in seconds."""
VOLUME_STEP = 0.1
"""Volume change per 9 / 0 key press."""


_RENDER_FORMATS = ("rgba8unorm", "bgra8unorm", "rgba16float")


def open_canvas(backend: Any, title: str, size: Size, device: Any) -> tuple[Any, Any, str, str]:
    """A continuously drawn ``backend.RenderCanvas`` of ``size``, its wgpu context configured for
    ``device`` (a GPUDevice): ``(canvas, context, present format, render format)``.

    The render format is the present format without ``-srgb``: the shader's values are already
    sRGB-encoded, and an -srgb surface and its plain format are copy-compatible, so they are copied as
    they are, never encoded twice.
    """
    canvas = backend.RenderCanvas(
        title=title, size=(size.width, size.height), update_mode="continuous", max_fps=240, vsync=True
    )
    context = canvas.get_context("wgpu")
    preferred = str(context.get_preferred_format(device.adapter))
    base = preferred.replace("-srgb", "")
    gpu = gpu_module_of(device)
    context.configure(
        device=device, format=preferred, usage=gpu.TextureUsage.RENDER_ATTACHMENT | gpu.TextureUsage.COPY_DST
    )
    return canvas, context, preferred, base if base in _RENDER_FORMATS else "bgra8unorm"


def letterbox(frame: Size, window: Size) -> Rect:
    """Where ``frame`` goes in ``window`` with its aspect kept: centred, bars on two sides."""
    if frame.width <= 0 or frame.height <= 0 or window.width <= 0 or window.height <= 0:
        return Rect(0, 0, max(window.width, 1), max(window.height, 1))
    scale = min(window.width / frame.width, window.height / frame.height)
    width = max(1, min(window.width, round(frame.width * scale)))
    height = max(1, min(window.height, round(frame.height * scale)))
    return Rect((window.width - width) // 2, (window.height - height) // 2, width, height)


def make_clock(player: Any, start_s: float, duration_s: float | None) -> MediaClock:
    """The run's media clock (sound unless ``--no-audio`` or it cannot be had), recorded in the stats."""
    from alpha2.apps.audio_out import open_clock

    kinds = media_kinds(player.source)
    clock = open_clock(
        player.source,
        want_audio=player.options.audio,
        has_audio="audio" in kinds,
        start_s=start_s,
        duration_s=duration_s,
    )
    clock.set_volume(player.options.volume)
    player.stats.clock = clock.as_dict()
    return clock


class _Keys:
    """The keys shared by the video and the audio-only window."""

    canvas: Any
    clock: MediaClock | None
    scheduler: AVScheduler

    def _common_key(self, key: str) -> bool:
        clock = self.clock
        if key in ("q", "Q", "Escape"):
            self.canvas.close()
        elif clock is None:
            return False
        elif key == " ":
            if getattr(clock, "paused", False):
                clock.resume()
                self.scheduler.mark("resume")
            else:
                clock.pause()
        elif key in ("m", "M"):
            clock.toggle_mute()
        elif key in ("9", "0"):
            step = VOLUME_STEP if key == "0" else -VOLUME_STEP
            clock.set_volume(getattr(clock, "volume", 1.0) + step)
        else:
            return False
        return True


class WindowPlayback(_Keys):
    """Playback in a rendercanvas window: paced by the media clock at the refresh, letterboxed, keys."""

    def __init__(self, player: Any) -> None:
        self.player = player
        self.stats = player.stats
        self.shown: Any = None  # (texture, letterbox rect) of the last frame rendered
        self.pending: DecodedFrame | None = None
        self.clock: MediaClock | None = None
        self.scheduler = AVScheduler()
        self.ended = False
        self.canvas: Any = None
        self.context: Any = None
        self.present_format = "bgra8unorm"
        self.render_format = "bgra8unorm"
        self.last_window = Size(0, 0)

    @property
    def paused(self) -> bool:
        return bool(getattr(self.clock, "paused", False))

    def open(self, canvas_module: str = "rendercanvas.auto", *, size: Size | None = None) -> Any:
        """Decode the first frame, make the device and the canvas (the clock starts on the first frame shown).

        ``canvas_module`` is a rendercanvas backend module (``rendercanvas.auto`` picks glfw or Qt;
        tests drive ``rendercanvas.offscreen``). ``size``: the canvas size (default the frame's).
        """
        player, stats = self.player, self.stats
        backend = importlib.import_module(canvas_module)
        decoder = player._open(gpu_copy=False)  # rendercanvas presents wgpu-native devices
        player._seek_start(decoder)
        first = decoder.next_frame()
        if first is None:
            raise InvalidInputError(f"{player.source!r} has no decodable video frame")
        self.pending = first
        player._make_gpu(on_gpu=False)  # rendercanvas presents wgpu-native devices
        stats.size = displayed_size(first)
        window = size if size is not None else stats.size
        title = f"alpha2 play - {os.path.basename(player.source)}"
        self.canvas, self.context, self.present_format, self.render_format = open_canvas(
            backend, title, window, player.device
        )
        self.canvas.add_event_handler(self._on_key, "key_down")
        self.canvas.request_draw(self._draw)
        player.progress.start(player.options.frames or decoder.info.frame_count)
        return backend

    def finish(self, seconds: float) -> Any:
        """Release what is held and complete the stats."""
        if self.pending is not None:
            self.pending.release()
            self.pending = None
        clock, self.clock = self.clock, None
        if clock is not None:
            self.stats.clock = clock.as_dict()
            clock.close()
        self.stats.seconds = seconds
        self.stats.mode, self.stats.mode_reason = "window", "vsync, letterboxed"
        self.stats.dropped_frames = self.scheduler.dropped
        self.stats.late_frames = self.scheduler.late
        self.stats.sync = self.scheduler.as_dict()
        self.player._finish_stats()
        return self.stats

    def run(self) -> Any:
        timer = pipeline.RunTimer()
        try:
            backend = self.open()
            backend.loop.run()
        finally:
            self.finish(timer.stop())
        return self.stats

    def media_time(self) -> float:
        return self.clock.now() if self.clock is not None else 0.0

    def _on_key(self, event: Mapping[str, Any]) -> None:
        key = str(event.get("key", ""))
        if self._common_key(key):
            return
        decoder = self.player.decoder
        if key in SEEK_STEPS_S and decoder is not None and self.clock is not None:
            self.seek(self.media_time() + SEEK_STEPS_S[key])

    def seek(self, seconds: float) -> None:
        """Jump to ``seconds`` (clamped to the clip): the video and the sound resync there."""
        decoder = self.player.decoder
        target = max(0.0, seconds)
        duration = decoder.info.duration_seconds
        if duration is not None:
            target = min(target, max(0.0, duration - 0.05))
        if self.pending is not None:
            self.pending.release()
            self.pending = None
        decoder.seek(target)
        self.pending = decoder.next_frame()
        if self.clock is not None:
            self.clock.seek(target)
        self.scheduler.mark("seek")
        self.ended = False

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
            if self.paused:
                break
        if self.pending is None and due is None and self.shown is not None:
            from alpha2.apps.audio_out import ClockKind

            clock = self.clock
            self.ended = clock is None or clock.kind is ClockKind.SYSTEM or clock.ended()
        return due

    def _draw(self) -> None:
        player, stats = self.player, self.stats
        limit = player.options.frames
        frame = self._advance()
        if self.ended or (limit is not None and stats.frames >= limit):
            if frame is not None:
                frame.release()
            self.canvas.close()
            return
        width, height = (int(v) for v in self.canvas.get_physical_size())
        window = Size(max(width, 1), max(height, 1))
        if window != self.last_window:
            player.renderer.clear_cache()
            self.last_window = window
        pts = (frame.pts_seconds or 0.0) if frame is not None else 0.0
        if frame is not None:
            box = letterbox(displayed_size(frame), window)
            target = player.renderer.target_texture(box.width, box.height, self.render_format)
            self.shown = (player._render(frame, target), box)
        if self.shown is None:
            return
        texture, _ = self.shown
        tex_w, tex_h = int(texture.size[0]), int(texture.size[1])
        if tex_w > window.width or tex_h > window.height:
            return  # the window shrank while paused: the next frame is rendered at the new size
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
        device.queue.submit([encoder.finish()])
        if self.clock is None:
            # The sound starts once the first frame is up (its first render may take long), in sync with it.
            decoder = player.decoder
            self.clock = make_clock(player, pts, decoder.info.duration_seconds if decoder else None)
        if frame is not None:
            self.scheduler.presented(pts, self.media_time())
            stats.frames += 1
            player.progress.update(stats.frames)


def _clear(encoder: Any, surface: Any, colour: tuple[float, float, float, float]) -> None:
    bars = encoder.begin_render_pass(
        color_attachments=[
            {"view": surface.create_view(), "clear_value": colour, "load_op": "clear", "store_op": "store"}
        ]
    )
    bars.end()


class AudioOnlyPlayback(_Keys):
    """A file without video: the sound plays; a window (when there is one) glows with its level."""

    def __init__(self, player: Any) -> None:
        self.player = player
        self.stats = player.stats
        self.clock: MediaClock | None = None
        self.scheduler = AVScheduler()
        self.canvas: Any = None
        self.context: Any = None
        self.device: Any = None

    def _start(self) -> MediaClock:
        from alpha2.api.media import AudioDecodeSession

        with AudioDecodeSession(self.player.source) as probe:
            duration = probe.info.duration_seconds
        start = self.player.options.at_s or 0.0
        if duration is not None and start >= duration:
            raise InvalidInputError(f"--at {start:g} s is past the end of {self.player.source!r}")
        from alpha2.apps.audio_out import SystemClock

        self.clock = make_clock(self.player, start, duration)
        if isinstance(self.clock, SystemClock) and duration is None:
            raise InvalidInputError(f"{self.player.source!r}: no sound and no duration to wait for")
        return self.clock

    def run_windowless(self, reason: str) -> Any:
        """Play the sound to its end (or ``--frames`` tenths of a second), no picture."""
        self.stats.mode, self.stats.mode_reason = "audio", f"audio only; {reason}"
        timer = pipeline.RunTimer()
        clock = self._start()
        limit = self.player.options.frames
        try:
            while not clock.ended() and (limit is None or timer.seconds < limit / 10):
                time.sleep(0.01)
        finally:
            self._finish(timer.stop())
        return self.stats

    def run_window(self, canvas_module: str = "rendercanvas.auto") -> Any:
        """Play the sound with a window whose brightness follows the level; q quits."""
        self.stats.mode, self.stats.mode_reason = "window", "audio only, level visual"
        timer = pipeline.RunTimer()
        try:
            backend = importlib.import_module(canvas_module)
            self.player._make_gpu(on_gpu=False)
            self.device = self.player.device
            self.canvas = backend.RenderCanvas(
                title=f"alpha2 play - {os.path.basename(self.player.source)}",
                size=(320, 120),
                update_mode="continuous",
                max_fps=60,
                vsync=True,
            )
            self.context = self.canvas.get_context("wgpu")
            preferred = self.context.get_preferred_format(self.device.adapter)
            self.context.configure(device=self.device, format=preferred)
            self._start()
            self.canvas.add_event_handler(lambda e: self._common_key(str(e.get("key", ""))), "key_down")
            self.canvas.request_draw(self._draw)
            backend.loop.run()
        finally:
            self._finish(timer.stop())
        return self.stats

    def _draw(self) -> None:
        clock = self.clock
        if clock is None or clock.ended():
            self.canvas.close()
            return
        level = min(1.0, clock.level() * 4)
        encoder = self.device.create_command_encoder(label="alpha2 level")
        _clear(encoder, self.context.get_current_texture(), (0.1 * level, 0.6 * level, level, 1.0))
        self.device.queue.submit([encoder.finish()])
        self.stats.frames += 1

    def _finish(self, seconds: float) -> None:
        clock, self.clock = self.clock, None
        if clock is not None:
            self.stats.audio_seconds = clock.now() - (self.player.options.at_s or 0.0)
            self.stats.clock = clock.as_dict()
            clock.close()
        self.stats.seconds = seconds
