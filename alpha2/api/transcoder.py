"""``alpha2 transcode INPUT OUTPUT``: decode, import, scale and convert on the GPU, encode, mux.

Two ways through, decided from the first frame and reported:

* passthrough (``ExecutionPath.SOFTWARE``): nothing asks for processing (same size, colour kept, no
  ``--gpu``), so decoded frames go straight to the encoder with no GPU work;
* GPU: each frame is imported into plane textures (:class:`~alpha2.native_gpu.interop.importer.FrameImporter`)
  and scaled and converted straight into NV12 / P010 at the output size, with the output's matrix and
  range, by one compute pass of the :class:`~alpha2.native_gpu.encode.copier.EncodeCopier`
  (``submit_planes``); gray and packed RGB inputs, which it cannot read, are rendered to RGBA by the
  sampling shader first. Which of the two each frame takes is the encode room's choice
  (:func:`~alpha2.native_gpu.encode.routes.choose_encode_route`), reported with its reasons under
  ``encode_routes``. The copier's ring hands frames back about two submissions later, so the encoder
  works on frame N while the GPU converts N + 2.

The options and the plan (passthrough or GPU, output size, format and colour) are
:mod:`alpha2.api.transcode_plan`, re-exported here. Timestamps pass through (variable frame rate
included), shifted so that the output starts at zero (the first time across the kept streams, as
FFmpeg does), made strictly increasing where the input's repeat, go back or reset, re-timed at a
discontinuity (:mod:`alpha2.ffmpeg_bridge.timestamps`), and counted; frames the decoder flags corrupt
are kept and counted; frames whose picture size differs from the first's (joined MPEG-TS or H.264
files) are scaled to the output size (swscale on a passthrough, the route's own scaler otherwise),
counted and said; the input's other streams are kept where the output's container holds them (all
audio, subtitles, cover art, attachments; the audio and subtitle streams ``--audio-track`` and
``--subtitle-track`` choose, by number or language, :func:`~alpha2.api.transcode_plan.choose_streams`)
and every one left out is reported with the reason (:func:`~alpha2.api.transcode_plan.plan_streams`);
its chapters are kept as ffmpeg keeps them (moved with the output's start, cut to the part; a cut, or a
container without chapters such as AVI and MPEG-TS, is said); the output appears under its name only
when complete.

A part of the input (``--from``, ``--to``, ``--duration``, as FFmpeg's ``-ss`` / ``-to`` / ``-t``, counted
from the input's start) starts at 0 with the frame on display at ``--from`` (the decoder's frame-exact
seek) and ends before the first frame at ``--to``; the audio is cut at the same times, to the sample
(decoded and encoded again: a copy cuts only between packets), subtitles shortened to the part. So is it
with ``--frames``, the audio ending where the next frame would have begun.

``--fps R`` (:mod:`alpha2.api.frame_rate`) puts the frames on a clock of ``1 / R`` instead, as FFmpeg's fps
filter does: the encoder opens at R, each kept frame is encoded at the slots it fills (a repeat encoded
again; on the GPU converted again from the same imported planes), dropped frames are never imported,
and ``--frames`` counts the output's frames; the timestamp fix-ups are not needed then.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fractions
import functools
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from alpha2.api import pipeline
from alpha2.api.atomic import check_output_path, input_refusal
from alpha2.api.devices import nvdec_possible, open_decoder, open_device, texture_limit
from alpha2.api.frame_rate import FrameRateCounts, RateFrames
from alpha2.api.scale_route import ScaleRoute, ScaleRouteKind, choose_scale_route, run_swscale
from alpha2.api.transcode_plan import (
    DEFAULT_CRF,
    ColourChoice,
    DepthChoice,
    StreamChoice,
    StreamChoiceError,
    StreamPlan,
    Track,
    TranscodeOptions,
    TranscodePlan,
    check_preset,
    choose_streams,
    default_codec,
    effective_preset,
    plan_streams,
    plan_transcode,
)
from alpha2.api.transcode_report import TranscodeStats, decode_dict, input_notes
from alpha2.ffmpeg_bridge import DecodeSession, EncodeSession, choose_encoder
from alpha2.ffmpeg_bridge.containers import AUDIO_CONTAINERS
from alpha2.ffmpeg_bridge.describe import describe_file
from alpha2.ffmpeg_bridge.encode import (
    ROTATION_CONTAINERS,
    encoder_pixel_formats,
    keeps_pixel_shape,
    output_container,
)
from alpha2.ffmpeg_bridge.errors import NoVideoStreamError, OutputFormatError
from alpha2.ffmpeg_bridge.media import StreamInfo
from alpha2.ffmpeg_bridge.palette import PALETTE_ENCODERS, PALETTE_NOTE
from alpha2.ffmpeg_bridge.side_streams import (
    InputStream,
    StreamKind,
    container_duration_seconds,
    describe_holdings,
    probe_streams,
)
from alpha2.ffmpeg_bridge.timestamps import TimestampFixer, jump_seconds
from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.errors import Error, InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Rotation, Size
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.option_names import named as _named
from alpha2.native_gpu.device.device import Device
from alpha2.native_gpu.encode.routes import EncodeConversion, choose_encode_route

if TYPE_CHECKING:
    from alpha2.api.segmented_transcode import SegmentPart
    from alpha2.ffmpeg_bridge.concat import JoinReport
    from alpha2.ffmpeg_bridge.encode import EncodeStats

__all__ = [
    "DEFAULT_CRF",
    "ColourChoice",
    "DepthChoice",
    "StreamChoiceError",
    "TranscodeOptions",
    "TranscodePlan",
    "TranscodeStats",
    "check_options",
    "input_tracks",
    "plan_transcode",
    "transcode",
]


def _frame_bytes(frame: DecodedFrame) -> int:
    planes = frame.planes
    if isinstance(planes, tuple):
        return sum(p.width_bytes * p.height for p in planes)
    return sum(p.width_bytes * p.height for p in planes.planes)


@dataclass
class _GpuParts:
    """The GPU objects of one run's GPU way (closed by the transcoder's teardown)."""

    device: Any
    """The WebGPU device."""
    importer: Any
    """The FrameImporter."""
    copier: Any
    """The EncodeCopier."""
    takes_cuda: bool
    """Whether the encoder takes CUDA frames (the encode routes that deliver them apply)."""
    ten_bit: bool
    """Whether the output is P010 (the RGBA route renders to rgba16float then)."""
    renderer: Any = None
    """The FrameRenderer of the RGBA route, made for the first frame that needs it."""
    target: Any = None
    """The RGBA texture it renders into."""
    output_colour: ColourInfo | None = None
    """The output's colour: the renderer's colour target (an HDR input tone mapped to it when SDR)."""

    def rgba_target(self) -> Any:
        """The RGBA texture of the RGBA route (the renderer and texture are made on first use)."""
        if self.renderer is None:
            from alpha2.gpu.colour_manage import ColourTarget
            from alpha2.native_gpu.render.renderer import FrameRenderer

            target = ColourTarget.of(self.output_colour) if self.output_colour is not None else None
            self.renderer = FrameRenderer(self.device, colour_target=target)
            self.target = self.renderer.target_texture(
                self.copier.width, self.copier.height, "rgba16float" if self.ten_bit else "rgba8unorm"
            )
        return self.target


def _fraction(seconds: float) -> fractions.Fraction:
    return fractions.Fraction(seconds).limit_denominator(1_000_000)


def _seconds(frame: DecodedFrame) -> fractions.Fraction | None:
    """The frame's timestamp in seconds of the input (None: it has none)."""
    meta = frame.metadata
    if meta.pts is None or meta.time_base is None:
        return None
    return meta.pts * fractions.Fraction(meta.time_base)


class _CutFrames:
    """The decoder's frames up to the cut's end: :meth:`next_frame` gives None at the first frame at or
    after ``end`` (input seconds) or after ``limit`` frames, and records when the output ends then (the
    copied streams are cut at the same time)."""

    def __init__(
        self, decoder: DecodeSession, end: fractions.Fraction | None, limit: int | None, handed: int
    ) -> None:
        self._decoder = decoder
        self._end = end
        self._limit = limit
        self._handed = handed  # frames given out already (the first, taken before the loop)
        self.cut = False
        """Whether the frames were cut before the input's end."""
        self.ended_at: fractions.Fraction | None = None
        """The input time they were cut at (None: not cut, or the frame after the last has no time)."""

    def next_frame(self) -> DecodedFrame | None:
        """The next frame, or None at the end of the input or of the cut."""
        if self.cut:
            return None
        frame = self._decoder.next_frame()
        if frame is None:
            return None
        at = _seconds(frame)
        if self._end is not None and at is not None and at >= self._end:
            self.ended_at = self._end
        elif self._limit is not None and self._handed >= self._limit:
            # The frame after the last one: the output ends when it would have been shown.
            self.ended_at = at
        else:
            self._handed += 1
            return frame
        self.cut = True
        frame.release()
        return None


@dataclass
class _PictureChanges:
    """Frames whose picture size or pixel format differs from the first's (a stream that changes
    part-way, as joined MPEG-TS or H.264 files do): each is scaled or converted to the output's, counted,
    and said."""

    first: Size
    """The first frame's size: the plan's."""
    first_format: PixelFormat
    """The first frame's pixel format: the plan's."""
    frames: int = 0
    """Frames of another size."""
    at_seconds: float | None = None
    """The output time of the first of them."""
    sizes: list[Size] = dataclasses.field(default_factory=list)
    """The other sizes met, in order."""
    format_frames: int = 0
    """Frames of another pixel format."""
    format_at_seconds: float | None = None
    """The output time of the first of them."""
    formats: list[PixelFormat] = dataclasses.field(default_factory=list)
    """The other pixel formats met, in order."""

    def same(self, frame: DecodedFrame) -> bool:
        """Whether ``frame`` has the first's size and pixel format."""
        return Size(frame.width, frame.height) == self.first and frame.pixel_format is self.first_format

    def met(self, frame: DecodedFrame, seconds: float | None) -> bool:
        """Whether ``frame`` is of another size or pixel format than the first (then counted)."""
        size = Size(frame.width, frame.height)
        if size != self.first:
            self.frames += 1
            if self.at_seconds is None:
                self.at_seconds = seconds
            if size not in self.sizes:
                self.sizes.append(size)
        pixel_format = frame.pixel_format
        if pixel_format is not self.first_format:
            self.format_frames += 1
            if self.format_at_seconds is None:
                self.format_at_seconds = seconds
            if pixel_format not in self.formats:
                self.formats.append(pixel_format)
        return not self.same(frame)

    def note(self, output: Size, how: str) -> str | None:
        """The summary's note (None: every frame had the first's size); ``how`` says the scaler."""
        if not self.frames:
            return None
        at = "" if self.at_seconds is None else f" at {self.at_seconds:.3f} s"
        first = self.sizes[0]
        more = len(self.sizes) - 1
        others = f", then {more} other size{'s' if more > 1 else ''}" if more else ""
        count = f"{self.frames} frame{'' if self.frames == 1 else 's'}"
        return (
            f"picture size changed{at} ({first.width}x{first.height}{others}): {count} scaled to "
            f"{output.width}x{output.height} {how}"
        )

    def format_note(self, output: PixelFormat, how: str) -> str | None:
        """The summary's note on pixel formats (None: every frame had the first's); ``how`` says the
        converter."""
        if not self.format_frames:
            return None
        at = "" if self.format_at_seconds is None else f" at {self.format_at_seconds:.3f} s"
        names = ", then ".join(f.ffmpeg_name for f in self.formats)
        count = f"{self.format_frames} frame{'' if self.format_frames == 1 else 's'}"
        return f"pixel format changed{at} ({names}): {count} converted to {output.ffmpeg_name} {how}"


@dataclass
class _SwscaleRun:
    """What the swscale loop (:func:`~alpha2.api.scale_route.run_swscale`) uses of a run, its frames
    taken through the cut."""

    decoder: _CutFrames | RateFrames
    session: EncodeSession
    stats: TranscodeStats
    progress: pipeline.Progress
    _limit_reached: Callable[[], bool]
    _frame_pts: Callable[[DecodedFrame], Sequence[int]]
    """A frame's output pts: one, or with ``--fps`` those of the slots it fills (none of them dropped)."""
    _durations: dict[int, int]
    """Frames' durations by their output pts (``_frame_pts`` fills it), for ``session.encode(duration=)``."""


@dataclass(frozen=True)
class TranscodeSurvey:
    """What a run decides before it encodes (:meth:`_Transcoder.survey`): the whole file's plan, encoder,
    streams, cut and timing, which each segment of a segmented transcode takes as given."""

    plan: TranscodePlan
    """Passthrough or processing, the output size, format and colour."""
    stats: TranscodeStats
    """The report so far (plan, encoder, input notes, dropped streams, decoding)."""
    info: StreamInfo
    """The video stream decoded."""
    encoder: str
    """The encoder chosen (an FFmpeg encoder name)."""
    time_base: fractions.Fraction
    """The encoder's time base (the input stream's)."""
    first_pts: int | None
    """The first frame's pts (at ``--from``), in ``first_time_base``; None: it has none."""
    first_time_base: fractions.Fraction | None
    """The unit of ``first_pts``."""
    origin: fractions.Fraction
    """The input's start (input seconds): what ``--from`` and ``--to`` count from."""
    zero: fractions.Fraction
    """The input time the output starts at (its 0)."""
    end: fractions.Fraction | None
    """The input time the output ends at (``--to``, ``--duration``); None: the input's end."""
    streams: StreamPlan
    """The other streams copied beside the video, and those left out."""
    trim: bool
    """Whether the copied streams are cut with the video (audio re-encoded)."""
    jump_seconds: float
    """A forward jump of a copied stream's timestamps longer than this is re-timed."""
    expected_frames: int | None
    """The frames the run will write, as far as the container tells."""


class _Transcoder:
    """One run: owns the sessions and the GPU objects, and tears them down on every way out."""

    def __init__(
        self,
        source: str,
        output: str,
        options: TranscodeOptions,
        progress: pipeline.Progress,
        part: SegmentPart | None = None,
        device: Device | None = None,
    ) -> None:
        self.source = source
        self._part = part  # one segment of a segmented transcode: its frames, video only, the whole's plan
        self.first_pts_out: int | None = None
        """The first frame's pts as encoded (the encoder's time base); None before it."""
        self._durations: dict[int, int] = {}  # frames' durations by their output pts, until encoded
        self.last_pts_out: int | None = None
        """The last frame's pts as encoded."""
        self.output = output
        self.options = options
        self.progress = progress
        self.stats = TranscodeStats(input=source, output=output)
        self.decoder: DecodeSession | None = None
        self.session: EncodeSession | None = None
        self.gpu_device: Device | None = device
        self._owns_device = device is None  # a Device given is the caller's: kept open at the end
        self._gpu_objects: list[Any] = []
        self._pending_planes: list[Any] = []
        self._extent: Any = None  # the encoder's VideoEncodeExtent, once resolved (None: no table for it)
        self._first: DecodedFrame | None = None
        self._timestamps = TimestampFixer()  # made again for the output once its time base is known
        self._interlaced = False  # the first frame is interlaced
        self._streams = StreamPlan((), ())
        self._choice: StreamChoice | None = None  # the audio and subtitle streams asked for, if any
        self._origin = fractions.Fraction(0)  # the input's start: what --from and --to count from
        self._start = fractions.Fraction(0)  # the input time the output starts at (its 0)
        self._start_ticks = 0  # the same, in the encoder's time base
        self._first_pts = True  # the next _pts is the first frame's
        self._frames: _CutFrames | None = None
        self._rate: RateFrames | None = None  # --fps: the frames with the output slots each fills
        self._trim = False  # the copied streams are cut with the video (audio re-encoded)
        self._sizes: _PictureChanges | None = None  # frames of another size or format than the first's
        self._resizer: Any = None  # a passthrough's FrameScaler for them (made when one comes)
        self._resized_how = ""  # how the passthrough scaled them, for the note

    # -- setup ----------------------------------------------------------------------------------------

    def _open(self) -> DecodeSession:
        """The decoder; when NVDEC may decode, the device first, so that NVDEC lands on its GPU.

        With software decoding the device waits until something renders (a passthrough needs none).
        """
        if self.gpu_device is None and nvdec_possible(self.options.hwaccel)[0]:
            self.gpu_device = open_device(self.options.hwaccel)
        hwaccel, max_pixels = self.options.hwaccel, self.options.max_pixels
        try:
            self.decoder = open_decoder(self.source, self.gpu_device, hwaccel=hwaccel, max_pixels=max_pixels)
        except NoVideoStreamError as exc:
            raise NoVideoStreamError(self._no_video(probe_streams(self.source), exc.message)) from exc
        info = self.decoder.info
        chosen = next((s for s in info.streams if s.index == info.index), None)
        if chosen is not None and chosen.attached_picture:
            # FFmpeg's pick was a picture attached to the file (cover art), not a video.
            videos = [s for s in info.streams if s.kind is StreamKind.VIDEO]
            moving = [i for i, s in enumerate(videos) if not s.attached_picture]
            if not moving:
                self.decoder.close()
                self.decoder = None
                raise NoVideoStreamError(self._no_video(info.streams, None))
            self.decoder.close()
            self.decoder = open_decoder(
                self.source, self.gpu_device, hwaccel=hwaccel, max_pixels=max_pixels, stream_index=moving[0]
            )
        return self.decoder

    def _choose_streams(self) -> StreamChoice | None:
        """The audio and subtitle streams the options keep (``--audio-track`` ...), from the input's
        streams and their language tags (read from the container, nothing decoded). None where only
        ``--no-audio`` / ``--no-subtitles`` were asked and the container does not describe (the
        decoder's error then says why, as without them).

        Raises:
            StreamChoiceError: a word that matches none of the input's streams of its kind.
        """
        try:
            tracks = input_tracks(self.source)
        except Error:
            if self.options.audio_tracks is None and self.options.subtitle_tracks is None:
                return None
            raise
        return choose_streams(tracks, self.options, repr(self.source))

    def _no_video(self, streams: tuple[InputStream, ...], fallback: str | None) -> str:
        """One line saying that the input holds no video, and what it holds instead."""
        if not streams:
            return fallback or f"{self.source!r} has no video stream"
        what = describe_holdings(streams)
        pictures = any(s.attached_picture for s in streams)
        return (
            f"{self.source!r} holds no video to transcode: {what}"
            + ("; cover art is one still picture, not a video" if pictures else "")
            + "; alpha2 transcode writes video"
        )

    def _shift_seconds(self, first: DecodedFrame) -> fractions.Fraction:
        """How much earlier every output timestamp is than the input's: the first time across the
        kept streams (the decoded video's first frame, exactly; the copied streams' starts). A start
        before zero (an MPEG-TS clock FFmpeg unwrapped near its 33-bit wrap) gives a negative shift:
        the output is moved later, as ffmpeg moves it, to start at zero all the same."""
        assert self.decoder is not None
        meta = first.metadata
        starts: list[fractions.Fraction] = []
        if meta.pts is not None and meta.time_base is not None:
            starts.append(meta.pts * fractions.Fraction(meta.time_base))
        copied = set(self._streams.copy)
        for stream in self.decoder.info.streams:
            if stream.index in copied and stream.start_seconds is not None and not stream.attached_picture:
                if stream.kind in (StreamKind.AUDIO, StreamKind.SUBTITLE):
                    starts.append(fractions.Fraction(stream.start_seconds).limit_denominator(1_000_000))
        return min(starts) if starts else fractions.Fraction(0)

    def _encode_session(self, decoder: DecodeSession, plan: TranscodePlan) -> EncodeSession:
        options = self.options
        codec = options.codec or default_codec(self.output)
        choice = choose_encoder(codec)
        crf = options.crf
        if crf is None and options.bitrate is None:
            crf = DEFAULT_CRF.get(choice.codec)
        self._extent = self._resolve_extent(choice.name, plan, options.size)
        info = decoder.info
        rate = info.average_rate if info.average_rate else None
        time_base = info.time_base
        if options.fps is not None:  # --fps: slot n at pts n, on the output rate's own clock
            rate, time_base = options.fps, 1 / options.fps
        # The input's other streams, and its tags (title, the video's language) even with none to copy;
        # a segment's tags come with the join.
        copy_from = self.source if self._streams.copy or self._part is None else None
        assert self._first is not None
        shift = self._start
        jump = jump_seconds(info.discontinuous_timestamps)
        end = self._end_time()
        streams_end = None if end is None else float(end - shift)
        session = EncodeSession(
            self.output,
            codec=codec,
            width=plan.output_size.width,
            height=plan.output_size.height,
            rate=rate,
            time_base=time_base,
            crf=crf,
            bitrate=options.bitrate,
            preset=options.preset,
            colour=plan.output_colour,
            audio_from=copy_from,
            copy_streams=self._streams.copy if copy_from is not None else None,
            default_first=self._streams.default_first,
            start_shift_seconds=float(shift),
            jump_seconds=jump,
            trim_streams=self._trim,
            streams_end_seconds=streams_end,
            options=pipeline.QUIET_ENCODER_OPTIONS.get(choice.name),
            # A passthrough whose depth changes hands the decoder's frames over as they are; the
            # encoder converts them to this (the GPU path writes the depth itself).
            pixel_format=plan.output_format
            if plan.passthrough and plan.output_format is not plan.input_format
            else None,
            interlaced=self._interlaced and plan.passthrough,
            top_field_first=self._first.metadata.top_field_first,
            display_rotation=plan.display_rotation,
            sample_aspect_ratio=plan.sample_aspect,
            hdr=self._first.metadata.hdr if plan.keeps_hdr and self._first is not None else None,
        )
        encoder = session.encoder
        tb = session.time_base
        self._start_ticks = round(shift / tb)
        self._timestamps = TimestampFixer(
            jump_limit=max(1, round(fractions.Fraction(jump) / tb)), shift=self._start_ticks
        )
        self.stats.start_shift_seconds = float(self._origin)
        self.stats.dropped_streams = list(self._streams.dropped)
        self.stats.input_notes = input_notes(self._first, plan, encoder.name)
        self.stats.encoder = {
            "name": encoder.name,
            "codec": encoder.codec,
            "hardware": encoder.hardware,
            "reason": encoder.reason,
            "crf": crf,
            "bitrate": options.bitrate,
            "preset": effective_preset(encoder.name, options.preset),
            "preset_asked": options.preset is not None,
            "audio": "copied"
            if options.audio and info.has_audio
            else ("dropped (--no-audio)" if info.has_audio else "none in the input"),
        }
        return session

    @staticmethod
    def _resolve_extent(encoder_name: str, plan: TranscodePlan, box: Size | None) -> Any:
        """The encoder's coded-size limits, after checking the output size against them (``box``: the
        ``--size`` asked, which a refusal then names); None when alpha2 has no table for the encoder
        (FFmpeg refuses bad sizes when it opens)."""
        from alpha2.native_gpu.encode.extent import VideoEncodeExtent

        # A passthrough hands the encoder its own format (4:4:4 and 4:2:2 take odd sides where 4:2:0
        # does not); the GPU route writes NV12 or P010.
        fmt = (
            plan.output_format
            if plan.passthrough or plan.output_format in (PixelFormat.NV12, PixelFormat.P010)
            else PixelFormat.NV12
        )
        try:
            extent = VideoEncodeExtent.resolve(encoder_name, fmt)
        except UnsupportedError:
            return None
        try:
            extent.check(plan.output_size.width, plan.output_size.height)
        except InvalidInputError as exc:
            size, out = plan.input_size, plan.output_size
            in_range = extent.min_width <= out.width <= extent.max_width and (
                extent.min_height <= out.height <= extent.max_height
            )
            if box is not None and size != out and not in_range:  # --size made it: say so
                low = f"{extent.min_width}x{extent.min_height}"
                high = f"{extent.max_width}x{extent.max_height}"
                asked = _named("size")
                raise InvalidInputError(
                    f"{asked} {pipeline.box_text(box)} makes the {size.width}x{size.height} pictures "
                    f"{out.width}x{out.height}: {encoder_name} encodes {low} to {high}; "
                    f"give a {asked} in range"
                ) from exc
            made = "" if size == out else f", made {out.width}x{out.height}"
            raise InvalidInputError(
                f"the input's pictures are {size.width}x{size.height}{made}: {exc.message}; "
                f"{_named('size')} scales them into range (or choose another {_named('codec')})"
            ) from exc
        return extent

    # -- the run --------------------------------------------------------------------------------------

    def _video_holds_no_packets(self, index: int) -> str | None:
        """Why no frame came, where the video stream holds no packets (a file cut short before its first
        picture: an MPEG-TS cut after its tables said 'raise the limit (--max-pixels)'); None otherwise."""
        try:
            facts = describe_file(self.source)
        except Error:
            return None
        stream = next((f for f in facts.streams if f.index == index), None)
        if stream is None or not stream.empty:
            return None
        return (
            f"{self.source!r} has no video frames: its video stream (#{index}, {stream.codec or 'video'}) "
            "holds no packets; the file is cut short before its first picture, or the stream is empty"
        )

    def _prepare(self) -> tuple[DecodeSession, DecodedFrame, TranscodePlan]:
        """Open the decoder, take the first frame (at ``--from``, or at the segment's start), plan the
        streams, the cut and the frames; nothing is encoded yet."""
        stages = self.stats.stages
        if self._part is None and self.options.chooses_streams:
            # A word of --audio-track that matches nothing is refused before the decoder and the GPU open.
            self._choice = self.stats.stream_choice = self._choose_streams()
        decoder = self._open()
        self.stats.hwaccel = decoder.hwaccel_report.as_dict()
        start = time.perf_counter()
        first = decoder.next_frame()
        stages.add("decode", time.perf_counter() - start)
        if first is None:
            info = decoder.info
            empty = self._video_holds_no_packets(info.index)
            if empty is not None:
                raise InvalidInputError(empty)
            limit = self.options.max_pixels
            if limit is not None and not (info.width and info.height):
                # A decoder that refuses a picture over libavcodec's max_pixels while the streams are
                # probed (FFV1 does) leaves no size to name: say the limit may be why.
                raise InvalidInputError(
                    f"{self.source!r} has no decodable video frames and gave no picture size under "
                    f"{_named('max_pixels')} {limit} ({limit / 1e6:.3g} MP): raise it if its pictures are "
                    "larger"
                )
            raise InvalidInputError(f"{self.source!r} has no decodable video frames")
        self._first = first  # released in teardown if a failure comes before the loop takes it
        info = decoder.info
        part = self._part
        # A segment is video only: the join copies the other streams once, over the whole output.
        self._streams = (
            plan_streams(info.streams, info.index, self.options, output_container(self.output), self._choice)
            if part is None
            else StreamPlan((), ())
        )
        # The input's start (the first time across the kept streams): the output's 0, and what
        # --from and --to count from, as FFmpeg's -ss and -to count from the file's start.
        self._origin = self._start = self._shift_seconds(first)
        if part is not None:
            self._origin, self._start = part.origin, part.zero  # the whole output's, not the segment's
            if part.start is not None:
                t0 = time.perf_counter()
                first = self._seek_to(decoder, first, part.start, f"segment {part.index + 1}")
                stages.add("decode", time.perf_counter() - t0)
        elif self.options.from_seconds > 0:
            t0 = time.perf_counter()
            first = self._seek_from(decoder, first)
            stages.add("decode", time.perf_counter() - t0)
        self._trim = self._cuts(info)
        fps = self.options.fps
        self._frames = _CutFrames(
            decoder,
            part.end if part is not None else self._end_time(),
            self.options.frames if fps is None else None,  # --fps: --frames counts the output's slots
            handed=1,
        )
        if fps is not None:
            self._rate = self._rate_frames(self._frames, fps, info)
        encoder = choose_encoder(self.options.codec or default_codec(self.output))
        codec = encoder.codec
        # A segment plans for the whole output's container, not for its own MP4 file.
        muxer = output_container(self.output) if part is None else part.muxer
        plan = plan_transcode(
            Size(first.width, first.height),
            first.pixel_format,
            first.colour,
            self.options,
            codec=codec,
            rotation=first.metadata.rotation,
            mirrored=first.metadata.mirrored,
            container_holds_rotation=muxer in ROTATION_CONTAINERS,
            sample_aspect=info.sample_aspect_ratio,
            encoder=encoder.name,
            encoder_formats=encoder_pixel_formats(encoder.name),
            keeps_pixel_shape=keeps_pixel_shape(muxer, codec),
            decoded_as=decoder.stats.converted.split(" -> ")[0] or None,
            muxer=muxer,
        )
        if encoder.name in PALETTE_ENCODERS and PALETTE_NOTE not in plan.reason:
            plan = dataclasses.replace(plan, reason=f"{plan.reason}; then {PALETTE_NOTE}")  # scaled, ...
        if part is not None:
            part.check_plan(plan)  # the whole file's encoder parameters, size and colour, or a refusal
        self.stats.plan = plan
        self._interlaced = first.metadata.interlaced
        self._sizes = _PictureChanges(Size(first.width, first.height), first.pixel_format)
        return decoder, first, plan

    def survey(self) -> TranscodeSurvey:
        """What :meth:`run` decides before it encodes (the plan, the encoder, the streams, the cut, the
        timing), with nothing written: the whole file's, for its segments."""
        ok = False
        try:
            decoder, first, plan = self._prepare()
            session = self._encode_session(decoder, plan)
            session.abort()  # opened on a first frame only: nothing was written
            meta = first.metadata
            info = decoder.info
            end = self._end_time()
            survey = TranscodeSurvey(
                plan=plan,
                stats=self.stats,
                info=info,
                encoder=session.encoder.name,
                time_base=session.time_base,
                first_pts=meta.pts,
                first_time_base=None if meta.time_base is None else fractions.Fraction(meta.time_base),
                origin=self._origin,
                zero=self._start,
                end=end,
                streams=self._streams,
                trim=self._trim,
                jump_seconds=jump_seconds(info.discontinuous_timestamps),
                expected_frames=self._expected_frames(info),
            )
            ok = True
            return survey
        finally:
            self._teardown(ok)

    def run(self) -> TranscodeStats:
        timer = pipeline.RunTimer()
        stages = self.stats.stages
        ok = False
        try:
            decoder, first, plan = self._prepare()
            info = decoder.info
            self.session = self._encode_session(decoder, plan)
            self.progress.start(self._expected_frames(info))
            assert self._frames is not None
            if self._rate is not None:
                self._first = None  # the rate frames hold it now (and let go of it when it fills no slot)
                begun = self._rate.begin(first)
                assert begun is not None  # the last frame fills at least one slot where none was filled
                first = begun
            if plan.passthrough:
                self._passthrough(first)
            elif self._fit_gpu(first, plan, self._scale_route(first, plan)).kind is ScaleRouteKind.SWSCALE:
                run_swscale(
                    _SwscaleRun(
                        self._source,
                        self.session,
                        self.stats,
                        self.progress,
                        self._limit_reached,
                        self._frame_pts,
                        self._durations,
                    ),
                    first,
                    plan,
                )
            else:
                self._gpu(first, plan)
            self._size_note(plan)
            rate = self._rate
            if rate is not None and rate.limited and self.options.fps is not None:
                # --frames N at --fps R: the output (and the audio cut with it) ends where slot N begins.
                self._frames.cut = True
                self._frames.ended_at = self._start + fractions.Fraction(rate.handed) / self.options.fps
            start = time.perf_counter()
            ended = self._frames.ended_at
            if ended is not None:
                self.session.end_streams_at(float(ended - self._start))
            self.progress.finishing("the encoder's last frames")  # a slow preset's look-ahead: seconds
            self.session.close()
            stages.add("finish", time.perf_counter() - start)
            self._record_output(self._frames)
            ok = True
        finally:
            self.stats.seconds = timer.stop()
            self._teardown(ok)
        return self.stats

    def _seek_from(self, decoder: DecodeSession, first: DecodedFrame) -> DecodedFrame:
        """Go to ``--from`` (after the input's start): the frame on display then, frame-exact (the
        decoder decodes forward from the key frame before it). The output's 0 moves there."""
        asked, start = self.options.from_seconds, _named("from_seconds")
        length = self._video_length(decoder.info)
        if length is not None and asked >= length:
            raise InvalidInputError(
                f"{start} {asked:g} s is past the end of {self.source!r} ({length:.3f} s long)"
            )
        target = self._origin + _fraction(asked)
        found = self._seek_to(decoder, first, target, f"{start} {asked:g} s")
        # The output starts with the frame on display at --from, at its own time: every frame keeps
        # its length (a cut between two frames would make the first one short, the output VFR), and the
        # sound is cut at the same time, so they stay in step.
        shown = _seconds(found)
        self._start = shown if shown is not None and self._origin <= shown <= target else target
        return found

    def _video_length(self, info: StreamInfo) -> float | None:
        """How long the video lasts, as its container says. FFmpeg gives a Matroska video that starts
        late no start, and its length counted from 0: from the input's start then (a 0.6 s clip from
        5 s showed '4/54 frames', and --from 10:00:00.2 of one from 10 h was 'past the last frame')."""
        length = info.duration_seconds
        if length is not None and info.start_time is None and 0 < self._origin < length:
            return length - float(self._origin)
        return length

    def _end_time(self) -> fractions.Fraction | None:
        """The input time the output ends at: --duration after its start, --to counted from the
        input's start, or None (its end)."""
        options = self.options
        if options.duration_seconds is not None:
            return self._start + _fraction(options.duration_seconds)
        if options.to_seconds is not None:
            return self._origin + _fraction(options.to_seconds)
        return None

    def _seek_to(
        self, decoder: DecodeSession, first: DecodedFrame, target: fractions.Fraction, what: str
    ) -> DecodedFrame:
        """The frame on display at ``target`` (input seconds), frame-exact; ``what`` names it in errors."""
        video_start = _seconds(first) or fractions.Fraction(0)
        info = decoder.info
        if info.start_time is None:
            # The decoder counts from the stream's start, 0 where FFmpeg gives none (a Matroska video
            # from 5 s: --from 0.2 wrote it all from 0, said 'from 0.000 s': an outside pass, helper 91).
            video_start = fractions.Fraction(0)
        first.release()
        self._first = None
        decoder.seek(float(max(fractions.Fraction(0), target - video_start)))  # counts from the video's start
        found = decoder.next_frame()
        if found is None:
            raise InvalidInputError(f"{what} is past the last frame of {self.source!r}")
        self._first = found
        return found

    @functools.cached_property
    def _input_seconds(self) -> float | None:
        """The input container's duration, read once (whether a cut ends inside it is asked twice)."""
        return container_duration_seconds(self.source)

    def _cuts(self, info: StreamInfo) -> bool:
        """Whether the copied streams are cut with the video: a part asked for (--from, --to,
        --duration), or fewer frames (--frames) than the input has (or may have). An end at or past the
        input's (``to_seconds=100`` of a 3 s file) cuts nothing, as more frames than it has do not: its
        audio was re-encoded, said 'cut with the video to the sample' (an outside pass)."""
        options = self.options
        if options.cuts:
            end = options.end_seconds
            if options.from_seconds > 0 or end is None:
                return True
            length = self._input_seconds
            return length is None or end < length - 1e-6
        frames = self.options.frames
        if frames is None:
            return False
        total = info.expected_frames
        if options.fps is not None:  # --frames counts the output's frames, on its clock
            length = self._video_length(info)
            total = None if length is None else round(length * options.fps)
        return total is None or frames < total

    def _expected_frames(self, info: StreamInfo) -> int | None:
        """The frames the run will write, as far as the container tells (for the progress display)."""
        total = info.expected_frames
        rate = float(info.average_rate) if info.average_rate else None
        options = self.options
        length = self._video_length(info)
        if total is not None and rate and length is not None and length != info.duration_seconds:
            total = max(1, math.ceil(length * rate - 1e-6))  # counted from 0, not from the video's start
        if options.cuts and rate:
            # Frames from the one on display at --from to the last before the end, counted from the
            # video's first frame, which may come after the input's start that --from and --to count
            # from (a video from 0.021 s cut at 0.3 to 0.8 s showed '16/15 frames'), and --duration from
            # the frame on display at --from, where the output starts (an outside pass).
            length = self._video_length(info)
            video = info.start_time * info.time_base if info.start_time is not None else self._origin
            start = float(video - self._origin)
            first = max(0, math.floor((options.from_seconds - start) * rate + 1e-6))
            end = start + length if length else None
            if options.duration_seconds is not None:
                asked = start + first / rate + options.duration_seconds
                end = min(end, asked) if end is not None else asked
            elif options.to_seconds is not None:
                end = min(end, options.to_seconds) if end is not None else options.to_seconds
            if end is not None:
                total = max(1, math.ceil((end - start) * rate - 1e-6) - first)
        if options.fps is not None and total and rate:
            total = max(1, round(total * float(options.fps) / rate))  # on the output's clock
        if options.frames is not None:
            total = min(total, options.frames) if total else options.frames
        return total

    def _record_output(self, frames: _CutFrames) -> None:
        """The output's size, duration and bit rate, and the part of the input it holds."""
        stats = self.stats
        stats.output_bytes = os.path.getsize(self.output)
        stats.output_seconds = container_duration_seconds(self.output)
        if self.options.cuts or frames.cut:
            ended = frames.ended_at
            end = self._end_time()
            if ended is None and end is not None:
                # The video ran out before --to / --duration, but the input goes on (a longer audio):
                # the other streams were cut there, which 'to the end' did not say.
                length = self._input_seconds
                if length is not None and float(end - self._origin) < length - 1e-6:
                    ended = end
            stats.cut = {
                "from_seconds": round(float(self._start - self._origin), 6),
                "asked_from_seconds": self.options.from_seconds,
                "to_seconds": None if ended is None else round(float(ended - self._origin), 6),
                "frames": self.options.frames,
                "streams_trimmed": self._trim,
            }

    def _scale_route(self, first: DecodedFrame, plan: TranscodePlan) -> ScaleRoute:
        """GPU or swscale (on a CPU device), recorded with the reason."""
        from alpha2.ffmpeg_bridge.scale import swscale_unsupported_reason

        route = choose_scale_route(
            on_gpu=first.on_gpu,
            forced_gpu=self.options.gpu,
            unsupported=(
                "the plan crops odd sides pixel for pixel, which swscale would resample"
                if plan.crop is not None
                else swscale_unsupported_reason(
                    first.pixel_format, first.colour, plan.output_colour, plan.rotation, plan.mirrored
                )
            ),
            device=self.gpu_device,
        )
        self.stats.scale_route = route.as_dict()
        return route

    def _limit_reached(self) -> bool:
        return self.options.frames is not None and self.stats.frames >= self.options.frames

    @property
    def _source(self) -> _CutFrames | RateFrames:
        """Where the loops take their frames: the cut's, or with ``--fps`` those that fill a slot."""
        if self._rate is not None:
            return self._rate
        assert self._frames is not None
        return self._frames

    def _rate_frames(self, frames: _CutFrames, fps: fractions.Fraction, info: StreamInfo) -> RateFrames:
        """``--fps``: the cut's frames put on the output's clock by FFmpeg's fps rule
        (:mod:`alpha2.api.frame_rate`), timed from the output's start; counted in the stats."""
        average = info.average_rate
        counts = FrameRateCounts(None if not average else fractions.Fraction(average), fps)
        self.stats.frame_rate = counts

        def seconds(frame: DecodedFrame) -> fractions.Fraction | None:
            at = _seconds(frame)
            return None if at is None else at - self._start

        def length(frame: DecodedFrame) -> fractions.Fraction | None:
            meta = frame.metadata
            if meta.duration and meta.time_base is not None:
                return meta.duration * fractions.Fraction(meta.time_base)
            return 1 / counts.input_rate if counts.input_rate else None  # as long as the average frame

        def end() -> fractions.Fraction | None:
            return None if frames.ended_at is None else frames.ended_at - self._start

        return RateFrames(fps, frames.next_frame, seconds, length, end, self.options.frames, counts)

    def _frame_pts(self, frame: DecodedFrame) -> Sequence[int]:
        """The output pts of ``frame``: its own (:meth:`_pts`), or with ``--fps`` the slots it fills, each
        one tick of the ``1 / fps`` clock long."""
        rate = self._rate
        if rate is None:
            return (self._pts(frame),)
        slots = rate.pts
        for pts in slots:
            self._durations[pts] = 1
        if self._sizes is not None:
            assert self.options.fps is not None
            self._sizes.met(frame, float(slots[0] / self.options.fps))
        if self.first_pts_out is None:
            self.first_pts_out = slots[0]
        self.last_pts_out = slots[-1]
        return slots

    def _pts(self, frame: DecodedFrame) -> int:
        """The frame's pts in the encoder's time base, made strictly increasing (repeats, backward
        jumps and resets are fixed up and counted: FFmpeg decodes such files, muxers refuse them)."""
        assert self.session is not None
        meta = frame.metadata
        out_tb = self.session.time_base
        pts, duration = meta.pts, meta.duration
        if meta.time_base is not None and meta.time_base != out_tb:
            scale = meta.time_base / out_tb
            pts = None if pts is None else round(fractions.Fraction(pts) * scale)
            duration = None if duration is None else round(duration * scale)
        if self._first_pts and pts is not None:
            # The frame on display at --from began before it: it is shown from the output's 0.
            pts = max(pts, self._start_ticks)
        self._first_pts = False
        fixed = self._timestamps.fix(pts, duration)
        assert fixed is not None  # video timestamps are nudged, never dropped
        if duration:  # for its packet (session.encode(duration=)): the last frame's end is the output's
            self._durations[fixed] = duration
        if self._sizes is not None:  # every route times each frame here: its size is looked at too
            self._sizes.met(frame, float(fixed * out_tb))
        self.stats.timestamps = self._timestamps.adjustments
        if self.first_pts_out is None:
            self.first_pts_out = fixed
        self.last_pts_out = fixed
        return fixed

    def _size_note(self, plan: TranscodePlan) -> None:
        """Say the frames of another size or pixel format than the first's, and how they were scaled or
        converted."""
        if self._sizes is None or (self.stats.scale_route is None and not plan.passthrough):
            return
        if plan.passthrough:
            how = self._resized_how
            converted = "on the CPU (swscale)" if self._resizer is not None else self._resized_how
            output_format = self._sizes.first_format
        elif self.stats.scale_route is not None and self.stats.scale_route.get("route") == "swscale":
            how = converted = "on the CPU (swscale)"
            output_format = plan.output_format
        else:
            how = converted = "on the GPU"
            output_format = plan.output_format
        for note in (
            self._sizes.note(plan.output_size, how),
            self._sizes.format_note(output_format, converted),
        ):
            if note is not None:
                self.stats.input_notes.append(note)

    def _resized(
        self, frame: DecodedFrame, pixel_format: PixelFormat, colour: ColourInfo
    ) -> DecodedFrame | None:
        """A passthrough frame of another size or pixel format than the first, scaled to the output size
        and converted to the first's ``pixel_format`` and ``colour`` by swscale, as the CPU scale route
        does (bicubic, as ffmpeg's scale filter scales at a size change); None when it has the first's
        size and format, or when swscale cannot take it (on the GPU, or a conversion it does not do):
        PyAV's reformat in the encoder converts it then, as the note says."""
        from alpha2.ffmpeg_bridge.scale import FrameScaler, swscale_unsupported_reason

        plan = self.stats.plan
        assert plan is not None and self._sizes is not None
        if self._sizes.same(frame):
            return None
        why = (
            "the frames are on the GPU"
            if frame.on_gpu
            else swscale_unsupported_reason(frame.pixel_format, frame.colour, colour)
        )
        if why is not None:
            self._resized_how = f"by PyAV's reformat in the encoder (bilinear; swscale here: {why})"
            return None
        if self._resizer is None:
            self._resizer = FrameScaler(plan.output_size, pixel_format, colour)
            self._resized_how = "on the CPU (swscale, bicubic, as ffmpeg scales at a size change)"
        scaled: DecodedFrame = self._resizer(frame)
        return scaled

    def _passthrough(self, first: DecodedFrame) -> None:
        frames, session, stats = self._source, self.session, self.stats
        assert session is not None
        pixel_format, colour = first.pixel_format, first.colour  # what a frame of another size is made
        add = stats.stages.add
        clock = time.perf_counter
        paths = stats.paths
        on_gpu_note = "passthrough: NVDEC frames downloaded for the software encoder"
        frame: DecodedFrame | None = first
        while frame is not None:
            if self._limit_reached():
                frame.release()
                break
            path = ExecutionPath.CPU_DOWNLOAD if frame.on_gpu else ExecutionPath.SOFTWARE
            t0 = clock()
            scaled: DecodedFrame | None = None
            try:
                slots = self._frame_pts(frame)
                scaled = self._resized(frame, pixel_format, colour)  # another size than the first's
                if scaled is not None:
                    add("scale", clock() - t0)
                    t0 = clock()
                for pts in slots:  # more than one: --fps repeats it (the encoder copies the frame it takes)
                    paths.add(path, _frame_bytes(frame), note=on_gpu_note if frame.on_gpu else "passthrough")
                    session.encode(
                        frame if scaled is None else scaled, pts=pts, duration=self._durations.pop(pts, None)
                    )
            finally:
                if scaled is not None:
                    scaled.release()
                frame.release()
            t1 = clock()
            stats.frames += len(slots)
            self.progress.update(stats.frames)
            frame = frames.next_frame()
            add("encode", t1 - t0)
            add("decode", clock() - t1)

    def _gpu(self, first: DecodedFrame, plan: TranscodePlan) -> None:
        frames, stats = self._source, self.stats
        add = stats.stages.add
        clock = time.perf_counter
        parts = self._gpu_setup(first, plan)
        frame: DecodedFrame | None = first
        while frame is not None:
            if self._limit_reached():
                frame.release()
                break
            slots = self._frame_pts(frame)
            t0 = clock()
            with self._work():
                try:
                    lease = parts.importer.import_frame(frame)
                except BaseException:
                    frame.release()
                    raise
            t1 = clock()
            render_seconds = drain_seconds = 0.0
            try:
                # The plan's crop (odd sides) is the first frame's: one of another size is scaled whole.
                same = self._sizes is None or Size(frame.width, frame.height) == self._sizes.first
                crop = plan.crop if same else None
                # More than one slot (--fps repeats the frame): converted again from the same imported
                # planes for each, each repeat drained before the next, so that the ring never holds
                # more than it would; the last drained once the planes are let go, as a frame of one slot.
                for index, pts in enumerate(slots):
                    with self._work():
                        ready, rendered = self._convert(
                            parts, lease.frame, pts, crop, plan.rotation, plan.mirrored
                        )
                    render_seconds += rendered
                    if index + 1 < len(slots):
                        t2 = clock()
                        self._drain(ready)
                        drain_seconds += clock() - t2
            finally:
                with self._work():
                    lease.release()  # after the submits that read the planes: later uploads queue behind
            t2 = clock()
            self._drain(ready)
            drain_seconds += clock() - t2
            t3 = clock()
            stats.frames += len(slots)
            self.progress.update(stats.frames)
            frame = frames.next_frame()
            t4 = clock()
            add("import", t1 - t0)
            if render_seconds > 0:
                add("render", render_seconds)
            add("convert", t3 - t1 - render_seconds - drain_seconds)
            add("encode", drain_seconds)
            add("decode", t4 - t3)
        self._gpu_finish(parts)

    def _work(self) -> contextlib.AbstractContextManager[Any]:
        """Held around GPU work: the device's :attr:`~alpha2.native_gpu.device.device.Device.work_lock`
        (other transcodes may share the device from other threads, as a batch worker's do)."""
        device = self.gpu_device
        return device.work_lock if device is not None else contextlib.nullcontext()

    def _gpu_setup(self, first: DecodedFrame, plan: TranscodePlan) -> _GpuParts:
        """The device, the importer (set up for the first frame's kind) and the encode copier."""
        start = time.perf_counter()
        if self.gpu_device is None:
            self.gpu_device = Device.open(want_gpu_copy=first.on_gpu)
        with self._work():
            parts = self._gpu_parts(first, plan)
        self.stats.stages.add("setup", time.perf_counter() - start)
        return parts

    def _gpu_parts(self, first: DecodedFrame, plan: TranscodePlan) -> _GpuParts:
        from alpha2.gpu.colour_manage import ColourTarget
        from alpha2.native_gpu.encode.copier import EncodeCopier
        from alpha2.native_gpu.interop.importer import FrameImporter

        assert self.session is not None and self.gpu_device is not None
        self.stats.device = self.gpu_device.as_dict()
        device = self.gpu_device.webgpu_device
        importer = FrameImporter(self.gpu_device)
        self._gpu_objects.append(importer)
        importer.prepare(gpu_frames=first.on_gpu, identity=first.identity)
        takes_cuda = self.session.encoder.takes_cuda_frames
        route = choose_encode_route(first.pixel_format, encoder_takes_cuda=takes_cuda)
        colour = plan.output_colour
        copier = EncodeCopier(
            device,
            plan.output_size.width,
            plan.output_size.height,
            pixel_format=plan.output_format,
            matrix=colour.matrix,
            colour_range=colour.range,
            chroma_location=colour.chroma_location,
            ring_size=self.options.ring_size,
            target=route.pairing.target,
            extent=self._extent,
            # The planes pass's colour step tone maps an HDR input when the output is SDR.
            colour_target=ColourTarget.of(colour) if plan.tone_map else None,
        )
        self._gpu_objects.insert(0, copier)
        return _GpuParts(
            device,
            importer,
            copier,
            takes_cuda,
            plan.output_format is PixelFormat.P010,
            output_colour=plan.output_colour,
        )

    def _fit_gpu(self, first: DecodedFrame, plan: TranscodePlan, route: ScaleRoute) -> ScaleRoute:
        """The route, checked against the device's largest texture before any texture is made: a
        picture wider or taller than ``max_texture_dimension_2d`` takes swscale when nothing asked for
        the GPU and swscale can do the plan, else is refused with the way out."""
        if route.kind is not ScaleRouteKind.GPU:
            return route
        from alpha2.ffmpeg_bridge.scale import swscale_unsupported_reason

        if self.gpu_device is None:
            self.gpu_device = Device.open(want_gpu_copy=first.on_gpu)
        limit = texture_limit(self.gpu_device.webgpu_device)
        if limit is None:
            return route
        coded = first.metadata.coded_size
        sides = {
            "input": (max(coded.width, first.width), max(coded.height, first.height)),
            "output": (plan.output_size.width, plan.output_size.height),
        }
        over = [(what, w, h) for what, (w, h) in sides.items() if max(w, h) > limit]
        if not over:
            return route
        what, width, height = over[0]
        name = self.gpu_device.as_dict().get("adapter") or "the GPU"
        said = (
            f"the {what} picture is {width}x{height}, but {name!r} makes textures of at most {limit} "
            "pixels a side (max_texture_dimension_2d)"
        )
        swscale_why = (
            "it crops odd sides pixel for pixel"
            if plan.crop is not None
            else swscale_unsupported_reason(
                first.pixel_format, first.colour, plan.output_colour, plan.rotation, plan.mirrored
            )
        )
        if not self.options.gpu and not first.on_gpu and swscale_why is None:
            fitted = ScaleRoute(ScaleRouteKind.SWSCALE, f"{said}: swscale on the CPU takes it")
            self.stats.scale_route = fitted.as_dict()
            return fitted
        if what == "output":
            way_out = f"choose a smaller {_named('size')}"
        elif self.options.gpu:
            way_out = (
                f"drop {_named('gpu')}: the CPU route (swscale) takes it, and {_named('size')} scales it "
                "down there"
            )
        elif first.on_gpu:
            way_out = (
                f"NVDEC decodes it on the GPU, where swscale cannot reach it: {_named('hwaccel')} none "
                "decodes it on the CPU, where swscale takes it"
            )
        else:
            way_out = f"the CPU route cannot take this plan either ({swscale_why})"
        raise UnsupportedError(f"{said}: {way_out}")

    def _convert(
        self,
        parts: _GpuParts,
        imported: Any,
        pts: int | None,
        crop: tuple[int, int, int, int] | None = None,
        rotation: Rotation = Rotation.NONE,
        mirrored: bool = False,
    ) -> tuple[list[Any], float]:
        """Submit one imported frame to the copier by the route the encode room chooses for its format;
        returns the frames the copier handed back and the seconds spent rendering to RGBA (0: none)."""
        route = choose_encode_route(imported.pixel_format, encoder_takes_cuda=parts.takes_cuda)
        size = imported.metadata.display_size
        if route.pairing.conversion is EncodeConversion.PLANES:
            ready = parts.copier.submit_planes(
                imported.views,
                imported.pixel_format,
                imported.colour,
                size.width,
                size.height,
                pts,
                crop=crop,
                reason=route.reason,
                rotation=rotation,
                hdr=imported.metadata.hdr,
                mirrored=mirrored,
            )
            return ready, 0.0
        start = time.perf_counter()
        target = parts.rgba_target()
        parts.renderer.render(
            imported.views,
            imported.pixel_format,
            imported.colour,
            size.width,
            size.height,
            target,
            crop=crop,
            rotation=rotation,
            hdr=imported.metadata.hdr,
            mirrored=mirrored,
            antialias=True,  # a smaller output filtered, as the planes pass filters Y'CbCr inputs
        )
        rendered = time.perf_counter() - start
        return parts.copier.submit(target, pts, reason=route.reason), rendered

    def _drain(self, ready: list[Any]) -> None:
        """Encode the planes the copier handed back, oldest first, releasing each."""
        session, pending = self.session, self._pending_planes
        assert session is not None
        plan = self.stats.plan
        assert plan is not None
        pending.extend(ready)
        while pending:
            planes = pending.pop(0)
            try:
                session.encode(
                    planes.planes,
                    pts=planes.pts,
                    duration=None if planes.pts is None else self._durations.pop(planes.pts, None),
                    pixel_format=planes.pixel_format,
                    width=plan.output_size.width,
                    height=plan.output_size.height,
                )
                self.stats.paths.add(planes.path, planes.bytes_read, note="encode copier read-back ring")
            finally:
                with self._work():
                    planes.release()

    def _gpu_finish(self, parts: _GpuParts) -> None:
        """Flush the copier's ring into the encoder and record the import and encode reports."""
        stats = self.stats
        clock = time.perf_counter
        t0 = clock()
        with self._work():
            flushed = parts.copier.flush()
        t1 = clock()
        self._drain(flushed)
        stats.stages.add("convert", t1 - t0)
        stats.stages.add("encode", clock() - t1)
        report = parts.importer.path_report
        stats.paths.merge_counts(report.frames_by_path, report.fallbacks)
        stats.paths.bytes[ExecutionPath.CPU_UPLOAD] += report.bytes_crossed_cpu
        stats.import_report = report.summary()
        stats.import_paths = report
        routes = parts.copier.route_report
        stats.encode_paths = routes
        stats.encode_report = routes.summary()
        stats.encode_routes = routes.as_dict()
        stats.peak_copier_slots = parts.copier.peak_slots_in_use

    # -- teardown -------------------------------------------------------------------------------------

    def _stream_report(self, copied: EncodeStats | JoinReport) -> None:
        """What became of the copied streams (an encode session's or a join's counts): kept, dropped with
        the reason, audio said in the encoder's."""
        self.stats.kept_streams = list(copied.copied_streams)
        self.stats.stream_notes = list(self._streams.notes) + list(copied.stream_notes)
        self.stats.dropped_streams = list(self._streams.dropped) + list(copied.dropped_streams)
        self.stats.dropped_streams.sort(key=lambda d: d.index)
        if not self.stats.encoder or not self.options.audio:
            return
        audio = [s for s in copied.copied_streams if s.kind is StreamKind.AUDIO]
        lost = [d for d in copied.dropped_streams if d.kind is StreamKind.AUDIO]
        # Audio --audio-track did not choose: said where it leaves none ('copied' said nothing of it).
        unchosen = [d for d in self._streams.dropped if d.kind is StreamKind.AUDIO]
        said = str(self.stats.encoder.get("audio"))
        if audio:
            said = "copied" if len(audio) == 1 else f"{len(audio)} streams copied"
        elif lost:
            said = "dropped: " + lost[0].reason
        elif unchosen:
            said = "dropped: " + unchosen[0].reason
        # Not a plain copy: say how (a note says how many streams it is about); of none kept, nothing.
        if copied.audio_note and audio:
            said = copied.audio_note if len(audio) <= 1 else f"{len(audio)} streams kept; {copied.audio_note}"
        if audio and lost:
            said += f"; {len(lost)} dropped"
        self.stats.encoder["audio"] = said

    def _teardown(self, ok: bool) -> None:
        if self._rate is not None:
            self._rate.close()  # the frame held ahead, where the run ended early
        if self._first is not None:
            self._first.release()  # idempotent: a no-op when the loop already let it go
            self._first = None
        with self._work():
            for planes in self._pending_planes:
                planes.release()
        self._pending_planes.clear()
        session, self.session = self.session, None
        if session is not None:
            if not ok:
                session.abort()
            self.stats.packets_out = session.stats.packets_out
            self.stats.audio_packets_copied = session.stats.audio_packets_copied
            self.stats.audio_timestamps = session.stats.audio_timestamps
            self._stream_report(session.stats)
            left_out = session.stats.frames_left_out
            if left_out:
                count, why = f"{left_out} of {session.stats.frames_in}", session.stats.left_out_reason
                self.stats.input_notes.append(f"{count} frames left out: {why}")
        with self._work():
            for obj in self._gpu_objects:
                try:
                    obj.close()
                except Exception:
                    if ok:
                        raise
            self._gpu_objects.clear()
        decoder, self.decoder = self.decoder, None
        if decoder is not None:
            self.stats.peak_surfaces = decoder.budget.usage().peak_surfaces
            self.stats.decode = decode_dict(decoder)
            decoder.close()
        gpu_device, self.gpu_device = self.gpu_device, None
        if gpu_device is not None and self._owns_device:
            gpu_device.close()  # after the importer and the decoder: it holds their shared context
        self.progress.close(completed=ok)


def check_options(options: TranscodeOptions, output: str | os.PathLike[str]) -> None:
    """What can be refused before an input is opened: the codec (no encoder for it) and the encoder's
    preset (libx264 and libx265 name theirs; :func:`~alpha2.api.transcode_plan.check_preset`). A batch
    refuses them once, not once a file.

    Raises:
        InvalidInputError: a preset the encoder does not have.
        UnsupportedCodecError: no encoder for the codec.
    """
    from alpha2.api.remux import check_copy_options, is_copy

    if is_copy(options):
        check_copy_options(options)
        asked = [
            _named(name)
            for name, set_ in (
                ("audio_tracks", options.audio_tracks is not None),
                ("subtitle_tracks", options.subtitle_tracks is not None),
                ("subtitles=False", not options.subtitles),
            )
            if set_
        ]
        if asked:
            # The copy (alpha2.ffmpeg_bridge.remux) keeps every stream but with --no-audio: refused, not
            # ignored (an output with every stream would have been said as the choice made).
            copy = f"{_named('codec')} copy"
            raise InvalidInputError(
                f"{copy} keeps every audio and subtitle stream ({_named('audio=False')} drops the audio): "
                f"{', '.join(asked)} {'is' if len(asked) == 1 else 'are'} not taken with it; leave {copy} out"
            )
        return
    if options.preset is None and options.codec is None:
        return
    encoder = choose_encoder(options.codec or default_codec(output))
    if options.preset is not None:
        check_preset(encoder.name, options.preset)


def input_tracks(source: str | os.PathLike[str]) -> tuple[Track, ...]:
    """The audio and subtitle streams of the file at ``source``, each with its number among the streams
    of its kind, language, title and codec, as ``--audio-track`` / ``--subtitle-track`` choose among them
    (the container's word: nothing decoded).

    Raises:
        MediaNotFoundError, MediaFormatError: the file cannot be read, or is not media.
    """
    facts = describe_file(source, rates=False)
    tracks: list[Track] = []
    for kind in (StreamKind.AUDIO, StreamKind.SUBTITLE):
        of_kind = [f for f in facts.streams if f.kind is kind]
        tracks.extend(
            Track(
                index=f.index,
                kind=kind,
                number=number,
                codec=f.codec,
                language=f.language,
                title=f.title,
                channels=f.channels,
            )
            for number, f in enumerate(of_kind)
        )
    return tuple(sorted(tracks, key=lambda t: t.index))


def _sound_alone(source: str, output: str, max_pixels: int | None) -> tuple[InputStream, ...] | None:
    """The input's streams where the transcode writes its sound alone (an output of an audio container,
    ``.mp3``; an input without video, cover art aside); None: the video is transcoded. An input that
    cannot be probed goes the video's way, which says why."""
    from alpha2.api.audio_transcode import is_audio_output, moving_video

    audio_out = is_audio_output(output)
    if not audio_out and not os.path.isfile(source):
        # A pipe, a device or a URL is not opened twice (a FIFO's open waits for a writer, and the
        # video's way refuses some before opening them: --segments); the video's way says what it holds.
        return None
    # Under --max-pixels: probing decodes a first picture of some formats (a 4 KB H.264 claiming
    # 8192x8192 took 364 MB here before the decoder's refusal).
    streams = probe_streams(source, max_pixels)  # empty where it does not open
    if not streams:
        if audio_out:
            describe_file(source, rates=False)  # why it does not open (not found, not media)
            return streams
        return None
    return streams if audio_out or not moving_video(streams) else None


def _path(name: str, value: object) -> str:
    """``value`` as a path string: ``transcode(src, None)`` was os.fspath's TypeError, not alpha2's."""
    path = os.fspath(value) if isinstance(value, str | os.PathLike) else None
    if not isinstance(path, str):
        raise InvalidInputError(
            f"{name} must be a path (a str or pathlib.Path, e.g. 'video.mp4'), got {type(value).__name__} "
            f"{value!r:.60}"
        )
    return path


class _CallbackProgress(pipeline.Progress):
    """A function of the frames done, as a Progress."""

    def __init__(self, call: Callable[[int], object]) -> None:
        self._call = call

    def update(self, frames: int) -> None:
        self._call(frames)


def transcode(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    options: TranscodeOptions | Mapping[str, Any] | None = None,
    *,
    progress: pipeline.Progress | Callable[[int], object] | None = None,
    device: Device | None = None,
) -> TranscodeStats:
    """Transcode ``source`` into ``output`` (the in-process form of ``alpha2 transcode``).

    ``options``: a :class:`TranscodeOptions`, or a dict of its fields (``{"frames": 5}``).

    ``progress``: a :class:`~alpha2.api.pipeline.Progress` (start, update, finishing, close), or a
    function called with the frames done so far. It is also the way to stop a run: an exception raised
    from it (``KeyboardInterrupt`` too) comes out of ``transcode`` after the teardown, nothing written
    under ``output``'s name (a file already there is kept) and no temporary file left.

    ``device``: the Device to decode (NVDEC) and process on, left open afterwards: a batch worker's,
    used file after file instead of one opened and closed per file. None: one is opened when something
    needs it, and closed at the end. A segmented transcode (``options.segments``) does not take one
    (refused): its parts run in processes of their own.

    Raises:
        alpha2.gpu.Error subclasses: bad input (MediaNotFoundError, MediaFormatError, ...), an unknown
            codec (UnsupportedCodecError), an unwritable output (InvalidInputError), encoder failures
            (EncoderError). No output file is left behind on failure.
    """
    if isinstance(options, Mapping):  # transcode(src, out, {"frames": 5}): the fields by name
        names = {f.name for f in dataclasses.fields(TranscodeOptions)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise InvalidInputError(
                f"unknown transcode option {unknown[0]!r}; TranscodeOptions takes {', '.join(sorted(names))}"
            )
        options = TranscodeOptions(**options)
    elif options is not None and not isinstance(options, TranscodeOptions):
        raise InvalidInputError(
            f"options must be a TranscodeOptions (alpha2.api.transcoder.TranscodeOptions(frames=5, ...)) "
            f"or a dict of its fields, got {type(options).__name__}"
        )
    options = options if options is not None else TranscodeOptions()
    src, output = _path("source", source), _path("output", output)
    refusal = input_refusal(src)
    if refusal is not None:
        raise InvalidInputError(refusal)
    sound = _sound_alone(src, output, options.max_pixels)  # the streams, where only its audio is written
    if sound is None:
        check_options(options, output)  # what the options alone tell, before any file is looked at
    out = check_output_path(output, overwrite=options.overwrite, inputs=(src,))
    if sound is None:
        try:
            output_container(out)  # an unknown extension is refused before the input is opened
        except OutputFormatError as exc:
            # The video containers alone were named, as if transcode wrote no sound alone.
            alone = ", ".join(AUDIO_CONTAINERS)
            raise OutputFormatError(f"{exc}; and sound alone into {alone}") from None
    if device is not None and not isinstance(device, Device):
        raise InvalidInputError(
            f"transcode takes an alpha2 Device (alpha2.api.devices.device_on_cuda(0) for a CUDA GPU's) or "
            f"None, got {type(device).__name__} {device!r}; a transcode chooses its GPU itself "
            "(ALPHA2_GPU_ADAPTER pins one)"
        )
    if progress is None:
        shown: pipeline.Progress = pipeline.Progress()
    elif isinstance(progress, pipeline.Progress):
        shown = progress
    elif isinstance(progress, type):  # callable, but called with the frames done it is a TypeError
        raise InvalidInputError(
            f"progress takes an instance: progress={progress.__name__}(), not the class {progress.__name__}"
        )
    elif callable(progress):
        shown = _CallbackProgress(progress)
    else:
        raise InvalidInputError(
            "progress must be an alpha2 Progress or a function of the frames done, got "
            f"{type(progress).__name__}"
        )
    from alpha2.api.remux import is_copy, remux_transcode

    if sound is not None:  # no video in the input, or an audio container: the sound alone
        from alpha2.api.audio_transcode import transcode_audio_only

        return transcode_audio_only(src, out, options, sound, shown)
    if is_copy(options):  # --codec copy: nothing decoded (ffmpeg -c copy)
        return remux_transcode(src, out, options, shown)
    if options.segments is not None:
        from alpha2.api.segmented_transcode import transcode_segmented

        if device is not None:  # it was ignored, said nowhere (an outside pass)
            raise InvalidInputError(
                "a segmented transcode does not take a device: its parts run in processes of their own, "
                "each opening the GPU that ALPHA2_GPU_ADAPTER pins; leave device out, or segments"
            )
        return transcode_segmented(src, out, options, shown)
    return _Transcoder(src, out, options, shown, device=device).run()


# ---------------------------------------------------------------------------------------------------
# the command line
