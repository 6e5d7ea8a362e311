"""``alpha2 play INPUT``: decode, import, render with the sampling shader, show or keep offscreen.

With a display (``DISPLAY`` / ``WAYLAND_DISPLAY`` on Linux) and rendercanvas with a glfw or Qt backend
installed, a window shows the video with vsync, the aspect kept with letterboxing, each frame presented
when its pts is due against the media clock (:mod:`alpha2.apps.window`): the sound's when there is sound
(``alpha2[audio]``, :mod:`alpha2.apps.audio_out`), else the system clock, with the reason in the stats;
space pauses, the arrow keys seek (left/right 5 s, down/up 30 s), m mutes, 9 / 0 set the volume, q or
Escape quits. A file without video plays its sound (a level visual in a window). rendercanvas is not a
dependency: it is imported only when a window is possible, and when it (or a backend) is missing,
playback falls back to offscreen and says why. Offscreen (no display, ``--offscreen``, or ``--snapshot``),
frames are rendered into a texture as fast as the device allows, without sound; ``--snapshot PATH.png
[--at SECONDS]`` writes the frame on display at that time as a PNG, atomically.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from alpha2.apps import pipeline
from alpha2.apps.atomic import check_output_path, write_png
from alpha2.apps.colour_report import colour_report, colour_summary
from alpha2.apps.throttle import SubmitThrottle
from alpha2.apps.window import SEEK_STEPS_S, AudioOnlyPlayback, displayed_size, letterbox
from alpha2.apps.window import WindowPlayback as _WindowPlayback
from alpha2.ffmpeg_bridge import DecodeSession, media_kinds
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Size
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.tonemap import ToneCurve
from alpha2.native_gpu.device.device import Device

__all__ = [
    "SEEK_STEPS_S",
    "PlayOptions",
    "PlayStats",
    "letterbox",
    "play",
    "register",
    "run",
    "window_unavailable_reason",
]

_QT_BINDINGS = ("PySide6", "PyQt6", "PyQt5", "PySide2")


def window_unavailable_reason(environ: Mapping[str, str] | None = None) -> str | None:
    """Why a window cannot be opened here (None when it can: a display, rendercanvas and a backend)."""
    env = os.environ if environ is None else environ
    if sys.platform.startswith("linux") and not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return "no display (neither DISPLAY nor WAYLAND_DISPLAY is set)"
    if importlib.util.find_spec("rendercanvas") is None:
        return "rendercanvas is not installed (pip install rendercanvas glfw)"
    if importlib.util.find_spec("glfw") is None and not any(
        importlib.util.find_spec(name) is not None for name in _QT_BINDINGS
    ):
        return "rendercanvas has no window backend: install glfw (pip install glfw) or a Qt binding (PySide6)"
    return None


@dataclass(frozen=True)
class PlayOptions:
    """What ``alpha2 play`` was asked to do."""

    offscreen: bool = False
    """Render into a texture even when a window could be opened."""
    snapshot: str | None = None
    """Write the frame on display at ``at_s`` to this PNG path (renders offscreen)."""
    at_s: float | None = None
    """Start (and snapshot) at this time in seconds."""
    frames: int | None = None
    """Stop after this many frames."""
    hwaccel: str = "auto"
    """Decoding: ``auto``, ``cuda`` or ``none``."""
    decoders: str = "threads"
    """A wall's decoders: ``threads`` of this process, or ``processes`` of their own (``--decoders``)."""
    audio: bool = True
    """Play the sound (the master clock) when there is a stream and a device; ``--no-audio`` turns it off."""
    volume: float = 1.0
    """Initial volume factor, 0..2."""
    gpu: bool = False
    """Render a snapshot on the GPU even on a CPU device (where swscale is the faster route)."""
    tone_curve: ToneCurve = ToneCurve.BT2390
    """How HDR (PQ, HLG) light above the display's peak is brought down (``--tone-curve``)."""
    target_peak_cd_m2: float | None = None
    """The SDR display's peak (``--target-peak``); None: 203 cd/m², HDR reference white = SDR white."""

    def __post_init__(self) -> None:
        if not isinstance(self.tone_curve, ToneCurve):
            raise InvalidInputError(f"--tone-curve must be a ToneCurve, not {self.tone_curve!r}")
        if self.target_peak_cd_m2 is not None and not 80.0 <= self.target_peak_cd_m2 <= 10000.0:
            raise InvalidInputError(f"--target-peak must be 80..10000 cd/m², got {self.target_peak_cd_m2}")
        if not 0.0 <= self.volume <= 2.0:
            raise InvalidInputError(f"--volume must be within 0..2, got {self.volume}")
        if self.frames is not None and self.frames < 1:
            raise InvalidInputError(f"frames must be >= 1, got {self.frames}")
        if self.at_s is not None and self.at_s < 0:
            raise InvalidInputError(f"--at must be >= 0 seconds, got {self.at_s}")


_NO_CLOCK: dict[str, Any] = {
    "kind": "none",
    "reason": "offscreen: rendered as fast as the device allows, no sound",
}


@dataclass
class PlayStats:
    """What a play run did (``--stats`` prints it, ``--json`` emits :meth:`as_dict`)."""

    input: str
    mode: str = "offscreen"
    mode_reason: str = ""
    frames: int = 0
    seconds: float = 0.0
    paths: pipeline.PathCounter = field(default_factory=pipeline.PathCounter)
    stages: pipeline.StageTimes = field(default_factory=pipeline.StageTimes)
    peak_surfaces: int = 0
    device: dict[str, Any] | None = None
    hwaccel: dict[str, Any] = field(default_factory=dict)
    import_report: str | None = None
    snapshot: str | None = None
    snapshot_pts_s: float | None = None
    size: Size | None = None
    dropped_frames: int = 0
    late_frames: int = 0
    clock: dict[str, Any] = field(default_factory=lambda: dict(_NO_CLOCK))
    sync: dict[str, Any] | None = None
    audio_seconds: float | None = None
    snapshot_route: dict[str, Any] | None = None
    colour: dict[str, Any] | None = None

    @property
    def fps(self) -> float:
        """Frames rendered per second."""
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready stats."""
        paths = self.paths.as_dict()
        return {
            "command": "play",
            "input": self.input,
            "mode": self.mode,
            "mode_reason": self.mode_reason,
            "frames": self.frames,
            "seconds": round(self.seconds, 4),
            "fps": round(self.fps, 3),
            "paths": paths["frames"],
            "path_bytes": paths["bytes"],
            "path_notes": paths["notes"],
            "bytes_through_cpu": self.paths.bytes_through_cpu,
            "peak_surfaces": self.peak_surfaces,
            "dropped_frames": self.dropped_frames,
            "late_frames": self.late_frames,
            "clock": self.clock,
            "sync": self.sync,
            "audio_seconds": None if self.audio_seconds is None else round(self.audio_seconds, 4),
            "size": None if self.size is None else [self.size.width, self.size.height],
            "snapshot": self.snapshot,
            "snapshot_pts_s": self.snapshot_pts_s,
            "snapshot_route": self.snapshot_route,
            "device": self.device,
            "hwaccel": self.hwaccel,
            "import_report": self.import_report,
            "colour": self.colour,
            "stages": self.stages.as_dict(self.seconds),
        }

    def summary(self) -> str:
        """A few lines for ``--stats``."""
        data = self.as_dict()
        paths = ", ".join(f"{k} {v}" for k, v in data["paths"].items()) or "none"
        lines = [
            f"alpha2: played {self.frames} frames in {self.seconds:.2f} s ({self.fps:.1f} fps), {self.mode}"
            + (f" ({self.mode_reason})" if self.mode_reason else ""),
            f"  paths: {paths}; {data['bytes_through_cpu'] / 1e6:.1f} MB through the CPU; "
            f"peak surfaces {self.peak_surfaces}",
            f"  time: {self.stages.summary(self.seconds)}",
            f"  clock: {self.clock['reason']}",
        ]
        if self.colour is not None:
            lines.append(f"  colour: {colour_summary(self.colour)}")
        if self.sync:
            sync = self.sync
            lines.append(
                f"  sync: {sync['shown']} shown, {sync['dropped']} dropped, {sync['late']} late; "
                f"A/V offset mean {sync['offset_mean_abs_ms']:.1f} ms, "
                f"max {sync['offset_max_abs_ms']:.1f} ms (refresh {sync['refresh_hz']:.0f} Hz)"
            )
        if self.device:
            lines.append(f"  device: {self.device['implementation']} on {self.device['adapter']}")
        if self.snapshot:
            lines.append(f"  snapshot: {self.snapshot} (frame at {self.snapshot_pts_s:.3f} s)")
        if self.snapshot_route:
            lines.append(
                f"  snapshot route: {self.snapshot_route['route']} ({self.snapshot_route['reason']})"
            )
        return "\n".join(lines)


class _Player:
    """One play run: the decoder, the device objects, the stats; torn down on every way out."""

    def __init__(self, source: str, options: PlayOptions, progress: pipeline.Progress) -> None:
        self.source = source
        self.options = options
        self.progress = progress
        self.stats = PlayStats(input=source)
        self.decoder: DecodeSession | None = None
        self._closables: list[Any] = []
        self.gpu_device: Device | None = None
        self.device: Any = None
        self.importer: Any = None
        self.renderer: Any = None

    # -- shared pieces --------------------------------------------------------------------------------

    def _open(self, *, gpu_copy: bool = True) -> DecodeSession:
        """The device first, then the decoder on its GPU (``gpu_copy``: a device that may take the
        GPU copy; a window presents through wgpu-native, so it asks for none)."""
        self.gpu_device = pipeline.create_device(want_gpu_copy=gpu_copy and self._nvdec_possible())
        self._closables.append(self.gpu_device)
        self.decoder = DecodeSession(self.source, hwaccel=self.options.hwaccel, device=self.gpu_device)
        self.stats.hwaccel = self.decoder.hwaccel_report.as_dict()
        return self.decoder

    def _nvdec_possible(self) -> bool:
        from alpha2.ffmpeg_bridge.hwdevice import nvdec_possible

        return nvdec_possible(self.options.hwaccel)[0]

    def _seek_start(self, decoder: DecodeSession) -> None:
        at = self.options.at_s
        if at is None or at == 0:
            return
        duration = decoder.info.duration_seconds
        if duration is not None and at >= duration:
            raise InvalidInputError(
                f"--at {at:g} s is past the end of {self.source!r} ({duration:.3f} s long)"
            )
        decoder.seek(at)

    def _make_gpu(self, on_gpu: bool) -> None:
        from alpha2.native_gpu.interop.importer import FrameImporter
        from alpha2.native_gpu.render.renderer import FrameRenderer

        if self.gpu_device is None:  # audio only: no decoder was opened
            self.gpu_device = pipeline.create_device(want_gpu_copy=on_gpu)
            self._closables.append(self.gpu_device)
        self.stats.device = self.gpu_device.as_dict()
        self.device = self.gpu_device.webgpu_device
        self.importer = FrameImporter(self.gpu_device)
        self._closables.append(self.importer)
        # The path's set-up and the stream's textures now, not on the first frame.
        identity = self.decoder.expected_identity() if self.decoder is not None else None
        self.importer.prepare(gpu_frames=on_gpu, identity=identity)
        self.renderer = FrameRenderer(
            self.gpu_device,
            colour_target=ColourTarget.sdr_bt709(self.options.target_peak_cd_m2),
            colour_options=ColourOptions(tone_curve=self.options.tone_curve),
        )

    def _render(self, frame: DecodedFrame, target: Any = None, output_format: str = "rgba8unorm") -> Any:
        """Import ``frame`` (the importer owns it from then on) and render it; returns the target texture."""
        clock = time.perf_counter
        t0 = clock()
        try:
            lease = self.importer.import_frame(frame)
        except BaseException:
            frame.release()
            raise
        t1 = clock()
        try:
            imported = lease.frame
            size = imported.metadata.display_size
            texture = self.renderer.render(
                imported.views,
                imported.pixel_format,
                imported.colour,
                size.width,
                size.height,
                target,
                output_format=output_format,
                rotation=imported.metadata.rotation,  # the display matrix is honoured on screen
                hdr=imported.metadata.hdr,
            )
            if self.stats.colour is None:
                self.stats.colour = colour_report(self.renderer, self.options)
        finally:
            lease.release()
        self.stats.stages.add("import", t1 - t0)
        self.stats.stages.add("render", clock() - t1)
        return texture

    def _finish_stats(self) -> None:
        if self.importer is not None:
            report = self.importer.path_report
            self.stats.paths.merge_counts(report.frames_by_path, report.fallbacks)
            self.stats.paths.bytes[ExecutionPath.CPU_UPLOAD] += report.bytes_crossed_cpu
            self.stats.import_report = report.summary()

    def close(self, completed: bool = True) -> None:
        for obj in reversed(self._closables):
            try:
                obj.close()
            except Exception:
                pass  # tear-down after a failure must not hide the failure
        self._closables.clear()
        decoder, self.decoder = self.decoder, None
        if decoder is not None:
            self.stats.peak_surfaces = decoder.budget.usage().peak_surfaces
            decoder.close()
        self.progress.close(completed)

    # -- offscreen ------------------------------------------------------------------------------------

    def offscreen(self, reason: str) -> PlayStats:
        from alpha2.native_gpu.render.renderer import gpu_module_of, read_texture_rgba

        stats, options = self.stats, self.options
        if options.snapshot is not None and stats.snapshot_route is None:
            from alpha2.apps.snapshot_cpu import SnapshotRouteKind, choose_snapshot_route, snapshot_on_cpu

            route = choose_snapshot_route(forced_gpu=options.gpu, hwaccel=options.hwaccel)
            stats.snapshot_route = route.as_dict()
            if route.kind is SnapshotRouteKind.SWSCALE:
                done = snapshot_on_cpu(self, route, reason)
                if done is not None:
                    return done
        stats.mode, stats.mode_reason = "offscreen", reason
        snapshot_path = check_output_path(options.snapshot, what="snapshot") if options.snapshot else None
        timer = pipeline.RunTimer()
        decoder = self._open()
        self._seek_start(decoder)
        clock = time.perf_counter
        t0 = clock()
        frame = decoder.next_frame()
        stats.stages.add("decode", clock() - t0)
        if frame is None:
            where = f" at {options.at_s:g} s" if options.at_s else ""
            raise InvalidInputError(f"{self.source!r} has no decodable video frame{where}")
        t0 = clock()
        try:
            self._make_gpu(frame.on_gpu)
            throttle = SubmitThrottle(self.device, gpu_module_of(self.device), label="alpha2 play throttle")
        except BaseException:
            frame.release()
            raise
        self._closables.append(throttle)
        stats.stages.add("setup", clock() - t0)
        limit = options.frames if options.frames is not None else (1 if snapshot_path else None)
        total = decoder.info.frame_count
        self.progress.start(limit if limit is not None else total)
        while frame is not None:
            stats.size = displayed_size(frame)
            pts_s = frame.pts_seconds
            target = self._render(frame)
            if snapshot_path is not None and stats.snapshot is None:
                t0 = clock()
                pixels = read_texture_rgba(self.device, target)
                stats.paths.add(ExecutionPath.CPU_DOWNLOAD, int(pixels.nbytes), note="snapshot read-back")
                stats.snapshot = write_png(snapshot_path, pixels)
                stats.snapshot_pts_s = pts_s
                stats.stages.add("snapshot", clock() - t0)
            else:
                t0 = clock()
                throttle.mark(target)
                stats.stages.add("wait", clock() - t0)
            stats.frames += 1
            self.progress.update(stats.frames)
            if limit is not None and stats.frames >= limit:
                break
            t0 = clock()
            frame = decoder.next_frame()
            stats.stages.add("decode", clock() - t0)
        t0 = clock()
        throttle.drain()
        stats.stages.add("wait", clock() - t0)
        stats.seconds = timer.stop()
        self._finish_stats()
        return stats

    # -- window ---------------------------------------------------------------------------------------

    def window(self) -> PlayStats:
        return _WindowPlayback(self).run()


def _audio_only(player: _Player, environ: Mapping[str, str] | None) -> PlayStats:
    options = player.options
    if options.snapshot is not None:
        raise InvalidInputError(f"{player.source!r} has no video stream to snapshot")
    playback = AudioOnlyPlayback(player)
    why = "--offscreen" if options.offscreen else window_unavailable_reason(environ)
    if why is not None:
        return playback.run_windowless(f"no window: {why}")
    return playback.run_window()


def play(
    source: str | os.PathLike[str],
    options: PlayOptions | None = None,
    *,
    progress: pipeline.Progress | None = None,
    environ: Mapping[str, str] | None = None,
) -> PlayStats:
    """Play ``source`` (the in-process form of ``alpha2 play``).

    Raises:
        alpha2.gpu.Error subclasses: bad input, a bad ``--at``, an unwritable snapshot path, device errors.
    """
    options = options if options is not None else PlayOptions()
    player = _Player(os.fspath(source), options, progress if progress is not None else pipeline.Progress())
    completed = False
    try:
        if "video" not in media_kinds(player.source):
            stats = _audio_only(player, environ)
        elif options.snapshot is not None:
            stats = player.offscreen("--snapshot renders to a texture")
        elif options.offscreen:
            stats = player.offscreen("--offscreen")
        else:
            why = window_unavailable_reason(environ)
            stats = player.offscreen(f"no window: {why}") if why is not None else player.window()
        completed = True
    finally:
        player.close(completed)
    return stats


# ---------------------------------------------------------------------------------------------------
# the command line


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``alpha2 play``."""
    parser = subparsers.add_parser(
        "play",
        help="play a video (window, or offscreen with a snapshot)",
        description="Decode, import and render a video with the sampling shader: in a window when there is "
        "a display (space pauses, arrows seek, q quits), otherwise into an offscreen texture.",
    )
    parser.add_argument(
        "input", metavar="INPUT", nargs="+", help="input video file (several: a grid of them, a video wall)"
    )
    parser.add_argument("--offscreen", action="store_true", help="render into a texture, no window")
    parser.add_argument("--snapshot", metavar="PATH.png", help="write the rendered frame as a PNG")
    parser.add_argument(
        "--at", type=pipeline.non_negative_float, metavar="SECONDS", help="start (and snapshot) at this time"
    )
    parser.add_argument("--frames", type=pipeline.positive_int, metavar="N", help="stop after N frames")
    pipeline.add_hwaccel_argument(parser)
    parser.add_argument(
        "--decoders",
        choices=("threads", "processes"),
        default="threads",
        help="a wall's decoders: threads of this process (default), or a process each, which hands its "
        "frames over through shared GPU memory (faster with many NVDEC streams)",
    )
    parser.add_argument("--no-audio", dest="audio", action="store_false", help="no sound: the system clock")
    parser.add_argument(
        "--volume",
        type=float,
        default=1.0,
        metavar="V",
        help="initial volume factor 0..2 (9/0 keys, m mutes)",
    )
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="render the snapshot on the GPU even on a CPU device (default: swscale)",
    )
    parser.add_argument(
        "--tone-curve",
        choices=[c.name.lower() for c in ToneCurve],
        default="bt2390",
        help="how HDR (PQ, HLG) highlights above the display's peak come down (default bt2390)",
    )
    parser.add_argument(
        "--target-peak",
        type=float,
        metavar="CD_M2",
        help="the SDR display's peak in cd/m² (default 203: HDR reference white = SDR white)",
    )
    parser.add_argument("--stats", action="store_true", help="print frames, fps, paths and bytes at the end")
    parser.add_argument("--json", action="store_true", help="print the stats as JSON at the end")
    parser.set_defaults(func=run)


def options_from_args(args: argparse.Namespace) -> PlayOptions:
    """``alpha2 play``'s options, for one input or a wall."""
    return PlayOptions(
        offscreen=args.offscreen,
        snapshot=args.snapshot,
        at_s=args.at,
        frames=args.frames,
        hwaccel=args.hwaccel,
        decoders=args.decoders,
        audio=args.audio,
        volume=args.volume,
        gpu=args.gpu,
        tone_curve=ToneCurve[args.tone_curve.upper()],
        target_peak_cd_m2=args.target_peak,
    )


def run(args: argparse.Namespace) -> int:
    """``alpha2 play``."""
    if args.snapshot is not None and not str(args.snapshot).lower().endswith(".png"):
        raise InvalidInputError(f"--snapshot writes PNG; give a .png path, got {args.snapshot!r}")
    if len(args.input) == 1 and args.decoders != "threads":
        raise InvalidInputError("--decoders processes is for a wall: give several inputs")
    if len(args.input) > 1:
        from alpha2.apps.wall import run_wall

        return run_wall(args)
    (source,) = args.input
    options = options_from_args(args)
    progress = pipeline.make_progress("play", enabled=not args.json and args.snapshot is None)
    stats = play(source, options, progress=progress)
    if args.json:
        pipeline.emit_json(stats.as_dict())
    elif args.stats:
        print(stats.summary(), file=sys.stderr)
    else:
        note = f" ({stats.mode_reason})" if stats.mode_reason else ""
        line = f"alpha2: played {stats.frames} frames ({stats.fps:.1f} fps) {stats.mode}{note}"
        line += f"; {stats.clock['reason']}"
        if stats.snapshot:
            line += f"; snapshot {stats.snapshot}"
        print(line, file=sys.stderr)
    return 0
