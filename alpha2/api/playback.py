"""One play run's decoding and rendering, for ``alpha2 play`` and any program that shows video.

:class:`Player` opens the device and the decoder side by side (the decoder at the GPU the device takes,
:func:`alpha2.api.devices.open_decoder`), seeks to the start, imports and renders each frame with the
sampling shader and counts what each frame cost and which path it took (:class:`PlayStats`). The app puts
it in a window (``alpha2.apps.window``) or runs it offscreen (:meth:`Player.offscreen`: as fast as the
device allows; ``snapshot`` writes one frame as a PNG).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from alpha2.api import pipeline
from alpha2.gpu.errors import Error, InvalidInputError, UnsupportedError
from alpha2.gpu.geometry import DEFAULT_MAX_PIXELS, Rotation, Size
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.tone_choices import ToneCurve

# PyAV, wgpu and the renderer load when a file is played, not when this module is imported: PlayOptions
# alone needs none of them.
if TYPE_CHECKING:
    from alpha2.api.throttle import SubmitThrottle
    from alpha2.ffmpeg_bridge import DecodeSession
    from alpha2.ffmpeg_bridge.media import StreamInfo
    from alpha2.gpu.frames import DecodedFrame
    from alpha2.native_gpu.device.device import Device
    from alpha2.native_gpu.interop.leases import ImportedFrame, ImportLease

_T = TypeVar("_T")

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "PlayOptions",
    "PlayStats",
    "Player",
    "displayed_size",
    "import_glfw",
    "seconds_since_process_start",
]

_IMPORTED_S = time.perf_counter()


def seconds_since_process_start() -> float:
    """Seconds since this process started: from the kernel's start time of the process where there is
    ``/proc`` (to its 10 ms tick, so the interpreter's own start is counted), else since this module
    was imported."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time after boot
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return time.perf_counter() - _IMPORTED_S


def import_glfw() -> None:
    """Import pyGLFW (when installed and not yet imported) without cffi's C parser, before a window's
    backend imports it (:mod:`alpha2.native_gpu.glfw_ffi`: 20-40 ms of a 2-core machine's start-up)."""
    from alpha2.native_gpu.glfw_ffi import import_glfw as import_without_parser

    import_without_parser()


class Background(Generic[_T]):
    """``work()`` on a thread of its own, started at once; :meth:`result` waits for it and returns its
    value or raises its exception (start-up work done side by side: the device, the sound)."""

    def __init__(self, work: Callable[[], _T], name: str) -> None:
        self._value: _T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(work,), name=name, daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[], _T]) -> None:
        try:
            self._value = work()
        except BaseException as exc:  # handed to the thread that waits for the result
            self._error = exc

    def done(self) -> bool:
        """Whether the work has finished (:meth:`result` would not wait)."""
        return not self._thread.is_alive()

    def result(self) -> _T:
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._value  # type: ignore[return-value]


def _shown(size: Size, shape: Any, rotation: Rotation) -> Size:
    if shape is not None and shape != 1:
        size = Size(max(1, round(size.width * shape)), size.height)
    return size.transposed() if rotation in (Rotation.CW90, Rotation.CW270) else size


def displayed_size(frame: DecodedFrame) -> Size:
    """The frame's size as shown: anamorphic pixels made square (the width scaled by the pixel's shape),
    then width and height swapped by a quarter-turn display rotation."""
    return _shown(Size(frame.width, frame.height), frame.metadata.sample_aspect, frame.metadata.rotation)


def stream_displayed_size(info: StreamInfo) -> Size:
    """The video stream's picture as shown, before a frame is decoded: as :func:`displayed_size`, from
    what the container says (the pixel shape and the display rotation)."""
    return _shown(Size(info.width, info.height), info.sample_aspect_ratio, info.rotation)


def known_frame_count(source: str | os.PathLike[str], info: StreamInfo) -> int | None:
    """The frames of ``source``'s video stream ``info`` where they are known: the container's count, or
    (an MKV records none) its duration times its rate where that rate is constant (the first packets'
    times, as ``alpha2 probe`` reads them); None for a variable rate, whose average times its duration
    said '122/122 frames' for a file of 90, or where the file cannot be read again."""
    if info.frame_count is not None:
        return info.frame_count
    from alpha2.api.describe import describe

    try:
        streams = describe(source, decode=False).file.streams
    except Error:
        return None
    video = next((s for s in streams if s.index == info.index), None)
    return None if video is None or video.variable_rate is not None else info.expected_frames


SPEED_RANGE = (0.25, 4.0)
"""The speeds the player plays at: FFmpeg's atempo keeps the sound's pitch from 0.25 to 4 (the window's
keys clamp to the same, ``alpha2.apps.keys.MIN_SPEED`` .. ``MAX_SPEED``)."""


@dataclass(frozen=True)
class PlayOptions:
    """What ``alpha2 play`` was asked to do."""

    def __new__(cls, *args: Any, **kwargs: Any) -> PlayOptions:
        # A misspelt field (ofscreen=...) is the dataclass's TypeError otherwise, not alpha2's typed error.
        if kwargs:
            from alpha2.api import arguments

            arguments.known_options("PlayOptions()", kwargs, cls.__init__)
        return super().__new__(cls)

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
    aid: int | None = None
    """The audio track to hear, numbered from 1 among the file's audio tracks as mpv numbers them
    (``--aid``); a file with fewer plays its default one. None: the default (the one FFmpeg ranks best)."""
    alang: tuple[str, ...] = ()
    """Languages to hear, first found first (``--alang jpn,eng``), matched against the tracks' language
    tags in any of their ISO 639 codes (``de``, ``deu`` and ``ger`` alike), as mpv's; ``aid`` wins over
    it. A file with none of them plays its default track."""
    loop: bool = False
    """Play the file again from its start when it ends (``--loop``; ``l`` in the window)."""
    sub: str | None = None
    """A subtitle file to show (``--sub``), before the sidecar files and the input's own tracks."""
    subtitles: bool = True
    """Show the first subtitle track (``--no-sub``: none until ``j`` picks one)."""
    sub_codepage: str | None = None
    """How subtitle text that is not UTF-8 is read (``--sub-codepage``, as mpv's): None or ``auto``, its
    encoding detected; a name (``cp1251``), read in it; ``+name``, every cue read in it."""
    speed: float = 1.0
    """Play at this speed from the first frame (``--speed``, as mpv's; ``[`` / ``]`` change it), within
    :data:`SPEED_RANGE`; kept from file to file of a playlist."""
    audio_delay_s: float = 0.0
    """Seconds the sound comes later than the picture (``--audio-delay``, as mpv's; Ctrl+- / Ctrl++);
    negative: earlier."""
    sub_delay_s: float = 0.0
    """Seconds the subtitles come later than their cues say (``--sub-delay``, as mpv's; ``z`` / ``Z``)."""
    sub_visible: bool = True
    """Draw the subtitles (``--sub-visibility``, as mpv's; ``v``): hidden, the track stays chosen."""
    gpu: bool = False
    """Render a snapshot on the GPU even on a CPU device (where swscale is the faster route)."""
    tone_curve: ToneCurve = ToneCurve.BT2390
    """How HDR (PQ, HLG) light above the display's peak is brought down (``--tone-curve``)."""
    target_peak_cd_m2: float | None = None
    """The SDR display's peak (``--target-peak``); None: 203 cd/m², HDR reference white = SDR white."""
    overwrite: bool = True
    """Replace an existing snapshot file (the input itself never); ``alpha2 play`` passes False unless
    given ``-y`` (``--overwrite``), and an existing file is then refused."""
    max_pixels: int | None = DEFAULT_MAX_PIXELS
    """Refuse pictures of more pixels than this before decoding them (``--max-pixels``); None: no limit."""

    def __post_init__(self) -> None:
        if not isinstance(self.tone_curve, ToneCurve):
            raise InvalidInputError(f"--tone-curve must be a ToneCurve, not {self.tone_curve!r}")
        if self.target_peak_cd_m2 is not None and not 80.0 <= self.target_peak_cd_m2 <= 10000.0:
            raise InvalidInputError(f"--target-peak must be 80..10000 cd/m², got {self.target_peak_cd_m2}")
        if not 0.0 <= self.volume <= 2.0:
            raise InvalidInputError(f"--volume must be within 0..2, got {self.volume}")
        aid = self.aid
        if aid is not None and (isinstance(aid, bool) or not isinstance(aid, int) or aid < 1):
            raise InvalidInputError(
                f"--aid is an audio track's number, 1 for the first (as mpv counts), got {self.aid!r}"
            )
        if isinstance(self.alang, str):
            object.__setattr__(self, "alang", tuple(self.alang.split(",")))
        languages = tuple(str(code).strip().lower() for code in self.alang)
        if not all(code.isalpha() and 2 <= len(code) <= 8 for code in languages):
            raise InvalidInputError(
                f"--alang takes language codes (eng, jpn, de ...), comma-separated, got {self.alang!r}"
            )
        object.__setattr__(self, "alang", languages)
        if self.frames is not None and self.frames < 1:
            raise InvalidInputError(f"frames must be >= 1, got {self.frames}")
        if self.at_s is not None and self.at_s < 0:
            raise InvalidInputError(f"--at must be >= 0 seconds, got {self.at_s}")
        low, high = SPEED_RANGE
        if not low <= self.speed <= high:
            raise InvalidInputError(f"--speed must be within {low:g}..{high:g}, got {self.speed:g}")
        for name, delay in (("--audio-delay", self.audio_delay_s), ("--sub-delay", self.sub_delay_s)):
            if not math.isfinite(delay):
                raise InvalidInputError(f"{name} is in seconds (0.2, -0.5), got {delay}")


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
    audio_track: dict[str, Any] | None = None
    """The audio track heard last: ``number`` (from 1), ``count``, ``codec``, ``channels``, ``language``,
    ``title`` and ``label`` (``2/2 ger (aac, 2 ch)``); None when none was."""
    snapshot_route: dict[str, Any] | None = None
    colour: dict[str, Any] | None = None
    first_frame_s: float | None = None
    """Seconds from the process's start to the first frame shown (a window) or rendered (offscreen)."""
    paused_seconds: float = 0.0
    """Of :attr:`seconds`, those the window stood paused (the last file's, in a playlist)."""
    decode: dict[str, Any] = field(default_factory=dict)
    """The decoder's counts of damage met: ``corrupt_frames_kept`` (concealed and shown),
    ``corrupt_frames_skipped``, ``decode_errors`` (packets skipped), ``truncated``; empty before the
    decoder closes."""

    @property
    def fps(self) -> float:
        """Frames rendered per second of playing (the seconds paused left out)."""
        playing = self.seconds - self.paused_seconds
        return self.frames / playing if playing > 0 else 0.0

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
            "paused_seconds": round(self.paused_seconds, 4),
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
            "audio_track": self.audio_track,
            "size": None if self.size is None else [self.size.width, self.size.height],
            "snapshot": self.snapshot,
            "snapshot_pts_s": self.snapshot_pts_s,
            "snapshot_route": self.snapshot_route,
            "device": self.device,
            "hwaccel": self.hwaccel,
            "import_report": self.import_report,
            "colour": self.colour,
            "first_frame_s": None if self.first_frame_s is None else round(self.first_frame_s, 4),
            "decode": dict(self.decode),
            "stages": self.stages.as_dict(self.seconds),
        }

    @property
    def sound_seconds(self) -> float:
        """How much of a file played as sound alone was played: the clock's seconds from the start (or
        ``--at``) to where it stopped, where the clock said; else the run's seconds. A pause is no sound:
        the run's seconds said '11.9 s of sound' of a song paused after 1.5 s."""
        return self.audio_seconds if self.audio_seconds is not None else self.seconds

    @property
    def audio_only(self) -> bool:
        """Whether the file played as sound alone (its frames are the level visual's draws, or none)."""
        return self.mode_reason.startswith("audio only")

    def damage_note(self) -> str | None:
        """What the decoder met of a damaged input, as a person reads it ('2 packets failed to decode
        and were skipped; 5 corrupt frames shown as the decoder concealed them'), or None: it played
        such a file with its broken frames left out or smeared and said nothing of it, where mpv's
        terminal shows FFmpeg's decode errors."""
        decode = self.decode
        notes = []
        failed = int(decode.get("decode_errors") or 0) - (1 if decode.get("truncated") else 0)
        if failed > 0:
            were = "s failed to decode and were" if failed > 1 else " failed to decode and was"
            notes.append(f"{failed} packet{were} skipped")
        if decode.get("truncated"):
            notes.append("the video ends before the length its container says (the file is cut short)")
        kept = int(decode.get("corrupt_frames_kept") or 0)
        if kept:
            frames = "1 corrupt frame" if kept == 1 else f"{kept} corrupt frames"
            notes.append(f"{frames} shown as the decoder concealed {'it' if kept == 1 else 'them'}")
        skipped = int(decode.get("corrupt_frames_skipped") or 0)
        if skipped:
            notes.append(f"{skipped} corrupt frame{'s' if skipped > 1 else ''} left out")
        sound = int(self.clock.get("damaged_packets") or 0) + int(self.clock.get("decode_errors") or 0)
        if sound:
            were = "s failed to decode and were" if sound > 1 else " failed to decode and was"
            notes.append(f"{sound} sound packet{were} skipped (silence in its place)")
        return "; ".join(notes) if notes else None

    def _paused_note(self) -> str:
        """', 5.2 s paused' where the window stood paused a tenth of a second or more."""
        return f", {self.paused_seconds:.1f} s paused" if self.paused_seconds >= 0.1 else ""

    def summary(self) -> str:
        """A few lines for ``--stats``."""
        data = self.as_dict()
        paths = ", ".join(f"{k} {v}" for k, v in data["paths"].items()) or "none"
        lines = [
            f"alpha2: played {os.path.basename(self.input)}: "
            + (
                f"{self.sound_seconds:.2f} s of sound, {self.mode}"
                if self.audio_only
                else f"{self.frames} frame{'' if self.frames == 1 else 's'} in {self.seconds:.2f} s "
                f"({self.fps:.1f} fps{self._paused_note()}), {self.mode}"
            )
            + (f" ({self.mode_reason})" if self.mode_reason else ""),
            f"  paths: {paths}; {data['bytes_through_cpu'] / 1e6:.1f} MB through the CPU; "
            f"peak surfaces {self.peak_surfaces}",
            f"  time: {self.stages.summary(self.seconds)}",
            f"  {self.clock['reason']}",  # 'audio clock: ...', not 'clock: audio clock: ...'
        ]
        if self.audio_track is not None:
            lines.append(f"  audio track: {self.audio_track['label']}")
        if self.first_frame_s is not None:
            lines.append(f"  first frame: {self.first_frame_s:.3f} s after the process started")
        if self.colour is not None:
            from alpha2.api.colour_report import colour_summary

            lines.append(f"  colour: {colour_summary(self.colour)}")
        damage = self.damage_note()
        if damage is not None:
            lines.append(f"  damaged input: {damage}")
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


class Player:
    """One play run: the decoder, the device objects, the stats; torn down on every way out."""

    def __init__(
        self, source: str, options: PlayOptions, progress: pipeline.Progress, device: Device | None = None
    ) -> None:
        """``device``: the Device to play on, kept open at :meth:`close` (a playlist's window shares one
        between its files); None: one is opened, and closed with the player."""
        self.source = source
        self.options = options
        self.progress = progress
        self.stats = PlayStats(input=source)
        self.ended_early = False
        """The window closed before the input's end (q, a signal, the next file): the bar keeps its total."""
        self.decoder: DecodeSession | None = None
        self._closables: list[Any] = []
        self._shared_device = device
        self.gpu_device: Device | None = None
        self.device: Any = None
        self.importer: Any = None
        self.renderer: Any = None
        self._gpu_objects: Background[tuple[Any, Any]] | None = None

    # -- shared pieces --------------------------------------------------------------------------------

    def _open(self, *, gpu_copy: bool = True) -> DecodeSession:
        """The device and the decoder, side by side (``gpu_copy``: a device that may take the GPU copy; a
        window presents through wgpu-native, so it asks for none).

        The device opens on a thread of its own, with the importer and the renderer (its shader), while
        this thread opens the decoder at the device's GPU: the adapter ``Device.open()`` takes, ranked
        without opening it (:func:`~alpha2.api.devices.open_decoder` without a device). A device given to
        the player is used as it is, before the decoder.
        """
        from alpha2.api.devices import open_decoder, open_device

        if self._shared_device is not None:
            self.gpu_device = self._shared_device
            self.decoder = open_decoder(
                self.source, self.gpu_device, hwaccel=self.options.hwaccel, max_pixels=self.options.max_pixels
            )
        else:
            hwaccel = self.options.hwaccel

            def make() -> Device:
                return open_device(hwaccel, gpu_copy=gpu_copy)

            self._start_gpu(make)
            try:
                self.decoder = open_decoder(
                    self.source, None, hwaccel=hwaccel, max_pixels=self.options.max_pixels
                )
            except BaseException:
                self._join_gpu(raise_errors=False)
                raise
        self.stats.hwaccel = self.decoder.hwaccel_report.as_dict()
        return self.decoder

    def _start_gpu(self, make_device: Callable[[], Device]) -> None:
        """Open the device (``make_device``), then the importer and the renderer, on a thread."""

        def work() -> tuple[Any, Any]:
            from alpha2.native_gpu.render.renderer import warm_webgpu_bindings

            warm_webgpu_bindings()  # wgpu-py's C types in one parse, not one parse each
            device = make_device()
            self.gpu_device = device
            self._closables.append(device)
            return self._gpu_pieces(device)

        self._gpu_objects = Background(work, "alpha2 device")

    def _gpu_pieces(self, device: Device) -> tuple[Any, Any]:
        """The importer and the renderer on ``device``."""
        from alpha2.gpu.colour_manage import ColourOptions, ColourTarget
        from alpha2.native_gpu.interop.importer import FrameImporter
        from alpha2.native_gpu.render.renderer import FrameRenderer

        importer = FrameImporter(device)
        self._closables.append(importer)
        renderer = FrameRenderer(
            device,
            colour_target=ColourTarget.sdr_bt709(self.options.target_peak_cd_m2),
            colour_options=ColourOptions(tone_curve=self.options.tone_curve),
        )
        return importer, renderer

    def _join_gpu(self, *, raise_errors: bool = True) -> tuple[Any, Any] | None:
        """Wait for the device thread; its importer and renderer (None when none was started, or it failed
        and ``raise_errors`` is False)."""
        pending, self._gpu_objects = self._gpu_objects, None
        if pending is None:
            return None
        try:
            return pending.result()
        except BaseException:
            if raise_errors:
                raise
            return None

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

    def check_fits(self, size: Size) -> None:
        """Refuse a picture larger than the device's textures (before a texture of it is made).

        Raises:
            UnsupportedError: a side over ``max_texture_dimension_2d``, with the way out.
        """
        from alpha2.api.devices import texture_limit

        limit = texture_limit(self.device) if self.device is not None else None
        if limit is not None and max(size.width, size.height) > limit:
            name = self.gpu_device.adapter_name if self.gpu_device is not None else "the GPU"
            raise UnsupportedError(
                f"{self.source!r} is {size.width}x{size.height}, but {name!r} makes textures of at most "
                f"{limit} pixels a side (max_texture_dimension_2d): alpha2 play cannot show it; scale it "
                "down first (alpha2 transcode --size), or take one frame with --snapshot (on the CPU)"
            )

    def _make_gpu(self, on_gpu: bool, size: Size | None = None) -> None:
        """The device's importer and renderer, and the stream's textures; ``size`` (the picture's, as
        shown) is checked against the device's textures first."""
        pieces = self._join_gpu()
        if self.gpu_device is None and self._shared_device is not None:
            self.gpu_device = self._shared_device
        if self.gpu_device is None:  # audio only: no decoder was opened
            from alpha2.native_gpu.device.device import Device

            self.gpu_device = Device.open(want_gpu_copy=on_gpu)
            self._closables.append(self.gpu_device)
        if pieces is None:
            pieces = self._gpu_pieces(self.gpu_device)
        self.importer, self.renderer = pieces
        # stats.device waits for the end (:meth:`_report_device`): the device's Vulkan and CUDA twins are
        # matched on first use, through a Vulkan instance of their own (60 ms of a 2-core machine that
        # came before the first frame).
        self.device = self.gpu_device.webgpu_device
        if size is not None:
            self.check_fits(size)
        # The path's set-up and the stream's textures now, not on the first frame.
        identity = self.decoder.expected_identity() if self.decoder is not None else None
        self.importer.prepare(gpu_frames=on_gpu, identity=identity)

    def _render(
        self,
        frame: DecodedFrame,
        target: Any = None,
        output_format: str = "rgba8unorm",
        throttle: SubmitThrottle | None = None,
    ) -> Any:
        """Import ``frame`` (the importer owns it from then on) and render it; returns the target texture.

        ``throttle``: wait for its turn first (timed as the ``wait`` stage), and mark the frame in the
        render's own submit (one submit a frame)."""
        lease = self._import(frame)
        try:
            return self._render_imported(lease.frame, target, output_format, throttle)
        finally:
            lease.release()

    def _import(self, frame: DecodedFrame) -> ImportLease:
        """Import ``frame`` (the importer owns it from then on; released here if the import fails),
        timed as the ``import`` stage."""
        t0 = time.perf_counter()
        try:
            lease: ImportLease = self.importer.import_frame(frame)
        except BaseException:
            frame.release()
            raise
        self.stats.stages.add("import", time.perf_counter() - t0)
        return lease

    def _render_imported(
        self,
        imported: ImportedFrame,
        target: Any = None,
        output_format: str = "rgba8unorm",
        throttle: SubmitThrottle | None = None,
    ) -> Any:
        """Render an imported frame into ``target`` (None: a texture of its shown size) and submit, timed
        as the ``wait`` and ``render`` stages; the colour report is taken at the first. Returns the
        target texture. The window renders a held frame again with it (a resize while paused)."""
        clock = time.perf_counter
        t1 = clock()
        if throttle is not None:
            throttle.wait_turn()
            t2 = clock()
            self.stats.stages.add("wait", t2 - t1)
            t1 = t2
        size = imported.metadata.display_size
        shape = imported.metadata.sample_aspect
        if target is None and shape is not None and shape != 1:
            # Anamorphic pixels: drawn into a target of the picture's shown shape (square pixels).
            shown = imported.metadata.shown_size
            target = self.renderer.target_texture(shown.width, shown.height, output_format)
        device = self.renderer.device
        encoder = device.create_command_encoder(label="alpha2 play")
        texture = self.renderer.encode_render(
            encoder,
            imported.views,
            imported.pixel_format,
            imported.colour,
            size.width,
            size.height,
            target,
            output_format=output_format,
            rotation=imported.metadata.rotation,  # the display matrix is honoured on screen
            hdr=imported.metadata.hdr,
            mirrored=imported.metadata.mirrored,
        )
        if throttle is not None:
            throttle.encode(encoder, texture)
        device.queue.submit([encoder.finish()])
        if throttle is not None:
            throttle.submitted()
        if self.stats.colour is None:
            from alpha2.api.colour_report import colour_report

            self.stats.colour = colour_report(self.renderer, self.options, imported.colour)
        self.stats.stages.add("render", clock() - t1)
        return texture

    def _report_device(self) -> None:
        """``stats.device``, once the GPU objects are made (:meth:`_make_gpu`)."""
        if self.stats.device is None and self.device is not None and self.gpu_device is not None:
            self.stats.device = self.gpu_device.as_dict()

    def _finish_stats(self) -> None:
        self._report_device()
        if self.importer is not None:
            report = self.importer.path_report
            self.stats.paths.merge_counts(report.frames_by_path, report.fallbacks)
            self.stats.paths.bytes[ExecutionPath.CPU_UPLOAD] += report.bytes_crossed_cpu
            self.stats.import_report = report.summary()

    def close(self, completed: bool = True) -> None:
        self._join_gpu(raise_errors=False)  # a device still opening is closed with the rest
        if completed:
            self._report_device()  # the runs that do not finish their stats (the audio-only window)
        for obj in reversed(self._closables):
            try:
                obj.close()
            except Exception:
                pass  # tear-down after a failure must not hide the failure
        self._closables.clear()
        decoder, self.decoder = self.decoder, None
        if decoder is not None:
            self.stats.peak_surfaces = decoder.budget.usage().peak_surfaces
            damage = decoder.stats
            self.stats.decode = {
                "corrupt_frames_kept": damage.corrupt_frames_kept,
                "corrupt_frames_skipped": damage.corrupt_frames_skipped,
                "decode_errors": damage.decode_errors,
                "truncated": damage.truncated,
            }
            decoder.close()
        self.progress.close(completed, ended=not self.ended_early)

    # -- offscreen ------------------------------------------------------------------------------------

    def offscreen(self, reason: str) -> PlayStats:
        from alpha2.api.atomic import check_output_path, write_png
        from alpha2.api.throttle import SubmitThrottle
        from alpha2.native_gpu.render.renderer import gpu_module_of, read_texture_rgba

        stats, options = self.stats, self.options
        snapshot_path = (
            check_output_path(
                options.snapshot, what="snapshot", overwrite=options.overwrite, inputs=(self.source,)
            )
            if options.snapshot
            else None
        )
        if options.snapshot is not None and stats.snapshot_route is None:
            from alpha2.api.snapshot_cpu import SnapshotRouteKind, choose_snapshot_route, snapshot_on_cpu

            route = choose_snapshot_route(forced_gpu=options.gpu, hwaccel=options.hwaccel)
            stats.snapshot_route = route.as_dict()
            if route.kind is SnapshotRouteKind.SWSCALE:
                done = snapshot_on_cpu(self, route, reason)
                if done is not None:
                    return done
        stats.mode, stats.mode_reason = "offscreen", reason
        if options.loop and options.frames is None and not snapshot_path:
            stats.mode_reason += "; --loop not taken: offscreen it loops until --frames, and none was given"
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
            self._make_gpu(frame.on_gpu, displayed_size(frame))
            throttle = SubmitThrottle(self.device, gpu_module_of(self.device), label="alpha2 play throttle")
        except BaseException:
            frame.release()
            raise
        self._closables.append(throttle)
        stats.stages.add("setup", clock() - t0)
        limit = options.frames if options.frames is not None else (1 if snapshot_path else None)
        total = known_frame_count(self.source, decoder.info)  # an MKV's from its duration, where exact
        self.progress.start(limit if limit is not None else total)
        while frame is not None:
            stats.size = displayed_size(frame)
            pts_s = frame.pts_seconds
            snap = snapshot_path if stats.snapshot is None else None
            target = self._render(frame, throttle=None if snap else throttle)  # a snapshot reads it back
            if snap is not None:
                t0 = clock()
                pixels = read_texture_rgba(self.device, target)
                stats.paths.add(ExecutionPath.CPU_DOWNLOAD, int(pixels.nbytes), note="snapshot read-back")
                stats.snapshot = write_png(snap, pixels)
                stats.snapshot_pts_s = pts_s
                stats.stages.add("snapshot", clock() - t0)
            if stats.first_frame_s is None:
                stats.first_frame_s = seconds_since_process_start()
            stats.frames += 1
            self.progress.update(stats.frames)
            if limit is not None and stats.frames >= limit:
                break
            t0 = clock()
            frame = decoder.next_frame()
            if frame is None and options.loop and limit is not None:
                decoder.seek(0.0)  # --loop: from the start again, until --frames are rendered
                frame = decoder.next_frame()
            stats.stages.add("decode", clock() - t0)
        t0 = clock()
        throttle.drain()
        stats.stages.add("wait", clock() - t0)
        stats.seconds = timer.stop()
        self._finish_stats()
        return stats
