"""The video wall in a window: a StreamGroup's wall, paced by the system clock at the display's refresh.

:class:`WallWindow` draws in a rendercanvas window with vsync: at each draw it asks the
:class:`~alpha2.api.streams.StreamGroup` for every stream's latest frame due at the clock's media time
(one ``queue.submit`` for all the streams' work; frames overtaken are counted as dropped), then scales the
wall texture, aspect kept, into the window's current texture with black bars (a second, small submit),
with the on-screen display's messages and key help over it. The sound of one tile plays (the first with
sound; ``a`` cycles through them and silence) and its clock paces the wall; without sound the system
clock does. Keys: space pauses, the arrows seek every tile, 9 / 0, the wheel and m set the volume, f or a
double click goes fullscreen, ? shows the keys, q or Escape quits. The run ends when every stream has
ended (or after ``--frames`` wall updates).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from alpha2.api import pipeline
from alpha2.api.media import media_kinds
from alpha2.api.streams import StreamGroup
from alpha2.apps.audio_out import ClockKind, MediaClock, SystemClock, open_clock
from alpha2.apps.avsync import AVScheduler
from alpha2.apps.keys import WALL_BINDINGS, help_lines
from alpha2.apps.osd import Osd, OsdView
from alpha2.apps.window import (
    NO_AUDIO_DELAY_WALL,
    _Keys,
    _Overlay,
    _SignalsClose,
    import_canvas_backend,
    letterbox,
    open_canvas,
    seek_step,
)
from alpha2.gpu.errors import Error
from alpha2.gpu.geometry import Rect, Size

__all__ = ["NO_SOUND_REASON", "WallWindow"]

NO_SOUND_REASON = "the wall plays without sound"
"""Why the wall's clock is the system clock."""


# The wall's texels are already sRGB-encoded: they are sampled and written as they are.
_BLIT_WGSL = """
@group(0) @binding(0) var wall: texture_2d<f32>;
@group(0) @binding(1) var wall_sampler: sampler;

struct Out {
    @builtin(position) position: vec4<f32>,
    @location(0) uv: vec2<f32>,
};

@vertex
fn vs_main(@builtin(vertex_index) index: u32) -> Out {
    // One triangle covering the target; uv (0, 0) is the wall's top-left corner.
    let xy = vec2<f32>(f32((index << 1u) & 2u), f32(index & 2u));
    var out: Out;
    out.position = vec4<f32>(xy * 2.0 - 1.0, 0.0, 1.0);
    out.uv = vec2<f32>(xy.x, 1.0 - xy.y);
    return out;
}

@fragment
fn fs_main(in: Out) -> @location(0) vec4<f32> {
    return vec4<f32>(textureSample(wall, wall_sampler, in.uv).rgb, 1.0);
}
"""


class _Blit:
    """Scales the wall texture into a texture of the window's size class (linear filtering)."""

    def __init__(self, device: Any, gpu: Any, wall: Any, output_format: str) -> None:
        self.device = device
        self.gpu = gpu
        self.output_format = output_format
        module = device.create_shader_module(label="alpha2 wall blit", code=_BLIT_WGSL)
        stage = gpu.ShaderStage.FRAGMENT
        layout = device.create_bind_group_layout(
            label="alpha2 wall blit",
            entries=[
                {"binding": 0, "visibility": stage, "texture": {"sample_type": "float"}},
                {"binding": 1, "visibility": stage, "sampler": {"type": "filtering"}},
            ],
        )
        self.pipeline = device.create_render_pipeline(
            label=f"alpha2 wall blit -> {output_format}",
            layout=device.create_pipeline_layout(label="alpha2 wall blit", bind_group_layouts=[layout]),
            vertex={"module": module, "entry_point": "vs_main", "buffers": []},
            primitive={"topology": "triangle-list"},
            fragment={"module": module, "entry_point": "fs_main", "targets": [{"format": output_format}]},
        )
        sampler = device.create_sampler(label="alpha2 wall blit", mag_filter="linear", min_filter="linear")
        self.bind_group = device.create_bind_group(
            label="alpha2 wall blit",
            layout=layout,
            entries=[
                {"binding": 0, "resource": wall.create_view()},
                {"binding": 1, "resource": sampler},
            ],
        )
        self.target: Any = None

    def target_for(self, size: Size) -> Any:
        """The scaled wall's texture at ``size`` (made again when the window's letterbox changes)."""
        target = self.target
        if target is None or (int(target.size[0]), int(target.size[1])) != (size.width, size.height):
            if target is not None:
                target.destroy()
            usage = self.gpu.TextureUsage
            self.target = self.device.create_texture(
                label="alpha2 wall scaled",
                size=(size.width, size.height, 1),
                format=self.output_format,
                usage=usage.RENDER_ATTACHMENT | usage.COPY_SRC,
            )
        return self.target

    def encode(self, encoder: Any, size: Size) -> Any:
        """Record the wall's scaling into the ``size`` texture on ``encoder``; returns that texture."""
        target = self.target_for(size)
        render = encoder.begin_render_pass(
            color_attachments=[
                {
                    "view": target.create_view(),
                    "clear_value": (0.0, 0.0, 0.0, 1.0),
                    "load_op": "clear",
                    "store_op": "store",
                }
            ]
        )
        render.set_pipeline(self.pipeline)
        render.set_bind_group(0, self.bind_group)
        render.draw(3, 1, 0, 0)
        render.end()
        return target

    def close(self) -> None:
        if self.target is not None:
            self.target.destroy()
            self.target = None


class WallWindow(_Keys):
    """A StreamGroup's wall in a rendercanvas window: paced by the media clock at the refresh, keys.

    Args:
        group: the open group (on a wgpu-native Device: rendercanvas presents wgpu-native devices).
        stats: the run's :class:`~alpha2.apps.wall.WallStats` (frames: draws that updated the wall).
        frames: stop after this many wall updates (None: when every stream has ended).
        progress: the progress line.
        audio: play the sound of one tile (the first with sound); False: none, the system clock.
        volume: the initial volume factor, 0..2.
        loop: when every tile has ended, play them all again from the start (a wall of decoders in
            threads: processes cannot seek; the window then ends, and says why).
    """

    osd: Osd
    one_file = False  # PgUp / PgDn and # are one file's keys: the wall says so

    def __init__(
        self,
        group: StreamGroup,
        stats: Any,
        *,
        frames: int | None = None,
        progress: pipeline.Progress | None = None,
        audio: bool = False,
        volume: float = 1.0,
        loop: bool = False,
    ) -> None:
        self.group = group
        self.loop = loop
        """Play every tile again from the start once the longest has ended (``--loop``)."""
        self.stats = stats
        self.frames = frames
        self.progress = progress if progress is not None else pipeline.Progress()
        self.clock: MediaClock | None = None
        self.scheduler = AVScheduler()
        self.osd = Osd()
        self.overlay: _Overlay | None = None
        self.fullscreen = False
        self.audio = audio
        self.volume = volume
        self.sound_index: int | None = None
        """The tile whose sound plays (None: none)."""
        self.canvas: Any = None
        self.context: Any = None
        self.blit: _Blit | None = None
        self.present_format = "bgra8unorm"
        self.presents = 0
        """``queue.submit`` calls that put the wall into the window (one per draw)."""
        self.ticks = 0
        """Draws that asked the group for due frames."""
        self._started = time.perf_counter()  # the window's loop's start (its bar's rate counts from it)
        self._signals: _SignalsClose | None = None  # while the loop runs

    @property
    def paused(self) -> bool:
        return self.clock is not None and bool(getattr(self.clock, "paused", False))

    def _with_sound(self) -> list[int]:
        """The tiles whose source has sound (and opened)."""
        found = []
        for index, stream in enumerate(self.group.streams):
            if stream.error is not None:
                continue
            try:
                if "audio" in media_kinds(stream.source):
                    found.append(index)
            except Error:
                pass
        return found

    def open(self, canvas_module: str = "rendercanvas.auto", *, size: Size | None = None) -> Any:
        """Make the canvas and the blit; returns the rendercanvas backend module.

        ``canvas_module``: ``rendercanvas.auto`` picks glfw or Qt; tests drive ``rendercanvas.offscreen``.
        ``size``: the canvas size (default the wall's, halved until it fits in 1920 x 1080).
        """
        backend = import_canvas_backend(canvas_module)
        group = self.group
        window = size if size is not None else _window_size(group.size)
        device = group.device
        title = f"alpha2 play - a wall of {len(group.streams)}"
        self.canvas, self.context, self.present_format, render_format = open_canvas(
            backend, title, window, device.webgpu_device
        )
        self.blit = _Blit(device.webgpu_device, device.gpu_module, group.wall, render_format)
        self.overlay = _Overlay(device.webgpu_device)
        self.canvas.add_event_handler(self._on_key, "key_down")
        self.canvas.add_event_handler(lambda e: self.toggle_fullscreen(), "double_click")
        self.canvas.add_event_handler(self._on_wheel, "wheel")
        self.canvas.request_draw(self._draw)
        self.progress.start(self.frames)
        self._started = time.perf_counter()
        return backend

    def run(self, canvas_module: str = "rendercanvas.auto") -> None:
        """Open the window and run its loop until it closes; Ctrl-C, SIGTERM and SIGHUP close it, as the
        player's window, and are raised once the loop returned (rendercanvas took Ctrl-C: the wall ended
        with 0, as if it had played to its end)."""
        backend = self.open(canvas_module)
        signals = self._signals = _SignalsClose(self.canvas, backend.loop)
        try:
            backend.loop.run()
        finally:
            self._signals = None
            signals.restore()

    def finish(self) -> None:
        """Release the blit and record the clock (idempotent)."""
        if self.blit is not None:
            self.blit.close()
            self.blit = None
        if self.overlay is not None:
            self.overlay.close()
            self.overlay = None
        sound = NO_SOUND_REASON
        self._note_pause()
        self.stats.paused_seconds = self._paused_seconds()
        if self.clock is not None:
            self.stats.clock = self.clock.as_dict()
            if self.clock.kind is ClockKind.AUDIO and self.sound_index is not None:
                sound = f"the sound of {self.group.streams[self.sound_index].source}"
            self.clock.close()
            self.clock = None
        self.stats.mode = "window"
        self.stats.mode_reason = f"vsync, letterboxed; {sound}"

    def media_time(self) -> float:
        return self.clock.now() if self.clock is not None else 0.0

    def _on_key(self, event: Mapping[str, Any]) -> None:
        from alpha2.apps.keys import key_name

        key = key_name(event)
        if self._common_key(key):
            return
        if (step := seek_step(event)) is not None and self.clock is not None:
            self.seek(self.media_time() + step)
        elif key in ("a", "A"):
            self.cycle_sound()
        elif key in ("Ctrl+-", "Ctrl++"):
            self._say(NO_AUDIO_DELAY_WALL)  # said, not ignored (the video window's keys)
        elif key == "?":
            self.osd.show_help = not self.osd.show_help

    def _open_clock(self, index: int | None, start_s: float) -> MediaClock:
        """The clock of tile ``index``'s sound from ``start_s`` (None: the system clock, silent)."""
        if index is None:
            return SystemClock(NO_SOUND_REASON, start_s)
        return open_clock(self.group.streams[index].source, want_audio=True, has_audio=True, start_s=start_s)

    def cycle_sound(self) -> None:
        """The next tile with sound plays it (after the last: silence), from the time now (``a``)."""
        choices: list[int | None] = [*self._with_sound(), None]
        at = choices.index(self.sound_index) if self.sound_index in choices else -1
        self._switch_sound(choices[(at + 1) % len(choices)])

    def _switch_sound(self, index: int | None) -> None:
        old = self.clock
        now = self.media_time()
        clock = self._open_clock(index, now)
        if old is not None:
            clock.set_volume(getattr(old, "volume", self.volume))
            if getattr(old, "muted", False):
                clock.toggle_mute()
            if getattr(old, "paused", False):
                clock.pause()
            old.close()
        else:
            clock.set_volume(self.volume)
        self.clock = clock
        self.sound_index = index if clock.kind is ClockKind.AUDIO else None
        self.stats.clock = clock.as_dict()
        if self.sound_index is None:
            self._say("Sound: off" if index is None else f"Sound: off ({clock.reason})")
        else:
            name = os.path.basename(self.group.streams[self.sound_index].source)
            self._say(f"Sound: tile {self.sound_index + 1} ({name})")

    def _longest_s(self) -> float | None:
        """The longest stream's duration, when one is known."""
        known = [
            s.decoder.info.duration_seconds
            for s in self.group.streams
            if s.decoder is not None and s.decoder.info.duration_seconds is not None
        ]
        return max(known) if known else None

    def seek(self, seconds: float) -> None:
        """Every tile to ``seconds`` (clamped to the longest stream)."""
        longest = self._longest_s()
        target = max(0.0, seconds)
        if longest is not None:
            target = min(target, max(0.0, longest - 0.05))
        try:
            self.group.seek(target)
        except Error as exc:
            self._say(f"No seek: {exc.message}")
            return
        if self.clock is not None:
            self.clock.seek(target)
        self.osd.activity()

    def _draw(self) -> None:
        if self._signals is not None:
            self._signals.ensure()  # the loop sets its own handler as it starts
        self._note_pause()
        group, stats = self.group, self.stats
        limited = self.frames is not None and stats.frames >= self.frames
        if group.finished and self.loop and not limited and group.decoders == "threads":
            self.seek(0.0)  # every tile from its start, the clock with them
            return
        if group.finished or limited:
            self.canvas.close()
            return
        # Before the first wall is on screen there is no clock: every stream's first frame is due now.
        tick = group.tick(self.media_time())
        self.ticks += 1
        if group.finished and not tick.submitted:
            self.canvas.close()
            return
        width, height = (int(v) for v in self.canvas.get_physical_size())
        window = Size(max(width, 1), max(height, 1))
        box = letterbox(group.size, window)
        self._present(box)
        if self.clock is None:
            # The first wall is on screen: let every decoder fill its queue before the clock runs.
            self.stats.stages.add("preroll", group.preroll())
            with_sound = self._with_sound() if self.audio else []
            self._switch_sound(with_sound[0] if with_sound else None)
            self.osd._message = None  # the first sound is not news
        if tick.submitted:
            stats.frames += 1
            playing = time.perf_counter() - self._started - self._paused_seconds()
            self.progress.set_rate(stats.frames / playing if playing > 0 else 0.0)
            self.progress.update(stats.frames)

    @staticmethod
    def _surface_size(surface: Any) -> tuple[int, int]:
        return int(surface.size[0]), int(surface.size[1])

    def _present(self, box: Rect) -> None:
        assert self.blit is not None
        webgpu = self.group.device.webgpu_device
        surface = self.context.get_current_texture()
        t0 = time.perf_counter()
        encoder = webgpu.create_command_encoder(label="alpha2 wall present")
        scaled = self.blit.encode(encoder, Size(box.width, box.height))
        bars = encoder.begin_render_pass(
            color_attachments=[
                {
                    "view": surface.create_view(),
                    "clear_value": (0.0, 0.0, 0.0, 1.0),
                    "load_op": "clear",
                    "store_op": "store",
                }
            ]
        )
        bars.end()
        encoder.copy_texture_to_texture(
            {"texture": scaled, "mip_level": 0, "origin": (0, 0, 0)},
            {"texture": surface, "mip_level": 0, "origin": (box.x, box.y, 0)},
            (box.width, box.height, 1),
        )
        if self.overlay is not None:
            view = OsdView(
                position_s=self.media_time(),
                duration_s=self._longest_s(),
                paused=self.paused,
                help=help_lines(WALL_BINDINGS) if self.osd.show_help else (),
            )
            self.overlay.encode(encoder, surface, self.osd.layers(Size(*self._surface_size(surface)), view))
        webgpu.queue.submit([encoder.finish()])
        self.presents += 1
        self.stats.stages.add("present", time.perf_counter() - t0)


WINDOW_FIT = Size(1920, 1080)
"""The screen a wall's window is sized for: the wall halved until it fits (the group draws it that size)."""


def _window_size(wall: Size) -> Size:
    """The wall's size, halved until it fits a 1920 x 1080 screen."""
    width, height = wall.width, wall.height
    while width > WINDOW_FIT.width or height > WINDOW_FIT.height:
        width, height = max(1, width // 2), max(1, height // 2)
    return Size(width, height)
