"""What ``alpha2 transcode`` was asked for and what it will do: options, the plan, the output colour.

Pure planning, no GPU and no FFmpeg: :func:`plan_transcode` decides from the first frame between
passthrough and GPU processing, and picks the output size, pixel format and colour (only matrices the
encode copier writes, :data:`~alpha2.native_gpu.encode.routes.WRITABLE_MATRICES`). HDR inputs (PQ,
HLG) keep their transfer, primaries and static metadata at 10 bits, or are tone mapped to SDR BT.709
(``--colour bt709`` / ``bt601``, ``--sdr``, or an 8-bit output: HDR tags are never written on 8 bits).
"""

from __future__ import annotations

import dataclasses
import fractions
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from alpha2.api import arguments, pipeline
from alpha2.api.frame_rate import parse_rate
from alpha2.api.languages import language_matches
from alpha2.api.transcode_choices import (
    DEFAULT_CRF,
    DEFAULT_PRESETS,
    ENCODER_PRESET_RANGES,
    ENCODER_PRESETS,
    TRACK_OPTIONS,
    X26X_PRESETS,
    ColourChoice,
    DepthChoice,
    TrackSpec,
    track_specs,
)
from alpha2.ffmpeg_bridge.containers import default_codec
from alpha2.ffmpeg_bridge.encoders import (
    BT601_ONLY_ENCODERS,
    FIDELITY_ENCODERS,
    LIMITED_RANGE_ENCODERS,
    colour_kept_or_refused,
    matrix_for_readers,
    nearest_encoder_format,
    read_as_limited,
)
from alpha2.ffmpeg_bridge.palette import PALETTE_ENCODERS, PALETTE_NOTE
from alpha2.ffmpeg_bridge.side_streams import (
    CHAPTER_MUXERS,
    TIMECODE_MUXERS,
    DroppedStream,
    InputStream,
    StreamKind,
    subtitle_not_held,
)
from alpha2.gpu.codecs import EVEN_WIDTH_ENCODERS, ODD_SIDE_ENCODERS
from alpha2.gpu.colour import (
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourPrimaries,
    ColourRange,
    TransferCharacteristic,
)
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import DEFAULT_MAX_PIXELS, Rotation, Size
from alpha2.gpu.option_names import named as _named
from alpha2.gpu.option_names import option_names
from alpha2.native_gpu.encode.routes import WRITABLE_MATRICES

__all__ = [
    "BITRATE_RANGE",
    "DEFAULT_CRF",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_PRESETS",
    "ENCODER_PRESETS",
    "ENCODER_PRESET_RANGES",
    "HDR_TRANSFERS",
    "HD_MIN_HEIGHT",
    "X26X_PRESETS",
    "ColourChoice",
    "DepthChoice",
    "StreamChoice",
    "StreamChoiceError",
    "StreamPlan",
    "Track",
    "TranscodeOptions",
    "TranscodePlan",
    "check_preset",
    "choose_streams",
    "default_codec",
    "effective_preset",
    "option_names",
    "output_depth",
    "plan_streams",
    "plan_transcode",
]

HD_MIN_HEIGHT = 720
"""Outputs at least this tall (or 1280 wide) are HD: BT.709 by default when converted."""


TEN_BIT_CODECS = frozenset({"hevc", "av1", "vp9"})
"""Codec families whose 10-bit profiles players commonly decode (AUTO keeps 10 bits for HDR in them)."""

HDR_TRANSFERS = (TransferCharacteristic.SMPTE2084, TransferCharacteristic.ARIB_STD_B67)
"""Transfers alpha2 treats as HDR."""
_HDR_TRANSFERS = HDR_TRANSFERS
_SDR = ColourInfo(
    ColourMatrix.BT709,
    ColourPrimaries.BT709,
    TransferCharacteristic.BT709,
    ColourRange.LIMITED,
    ChromaLocation.LEFT,
)


def _deep_formats(formats: tuple[str, ...]) -> bool:
    """Whether an encoder's pixel formats (FFmpeg names; () when not known) take more than 8 bits."""
    if not formats:
        return True
    deep = []
    for name in formats:
        try:
            deep.append(PixelFormat.from_ffmpeg_name(name).bit_depth > 8)
        except Exception:
            deep.append(any(mark in name for mark in ("10", "12", "16")))
    return any(deep)


def _chroma(pixel_format: PixelFormat) -> str:
    """4:2:0, 4:2:2 or 4:4:4 (RGB and gray: 4:4:4)."""
    return {(1, 1): "4:2:0", (1, 0): "4:2:2"}.get(
        (pixel_format.log2_chroma_w, pixel_format.log2_chroma_h), "4:4:4"
    )


def output_depth(
    input_format: PixelFormat,
    input_colour: ColourInfo,
    codec: str,
    choice: DepthChoice,
    encoder: str | None = None,
    encoder_formats: tuple[str, ...] = (),
) -> tuple[int, str | None]:
    """The output's bit depth (8, 10, or the input's for :data:`FIDELITY_ENCODERS`) and, when that is
    fewer bits than the input's, why.

    ``encoder_formats``: the pixel formats the chosen encoder takes (FFmpeg names; () when not known):
    an encoder that takes 8 bits only (libvpx in some builds) gets 8, said.

    Raises:
        UnsupportedError: ``--depth 10`` with an encoder that takes 8 bits only.
    """
    if not _deep_formats(encoder_formats):
        # Only a codec with deeper profiles is 8-bit 'in this build' (libvpx, libx264 built for 8 bits);
        # a GIF or FFmpeg's MJPEG encoder is 8-bit in every build.
        only = "8 bits only in this FFmpeg build" if codec in TEN_BIT_CODECS | {"h264"} else "8 bits only"
        if choice is DepthChoice.TEN:
            way_out = "choose another codec (hevc, av1)"
            if codec == "gif":
                way_out = f"leave {_named('depth')} out, or write .mp4 with {_named('codec')} hevc or av1"
            raise UnsupportedError(
                f"{_named('depth')} 10: {encoder or codec} encodes {only} (it takes "
                f"{', '.join(encoder_formats)}); {way_out}"
            )
        bits = input_format.bit_depth
        why = f"{encoder or codec} encodes {only}"
        return 8, (f"depth reduced from {bits} to 8 bits: {why}" if bits > 8 else None)
    bits = input_format.bit_depth
    if choice is DepthChoice.TEN:
        return 10, None
    if choice is DepthChoice.EIGHT:
        depth, why = 8, "--depth 8"
    elif bits <= 8:
        return 8, None
    elif (encoder or "") in FIDELITY_ENCODERS:
        return bits, None  # a master's or an archive's encoder keeps the input's depth (ProRes, FFV1)
    elif codec in TEN_BIT_CODECS and input_colour.transfer in _HDR_TRANSFERS:
        return 10, None
    elif codec in TEN_BIT_CODECS:
        depth, why = 8, f"the output is SDR (--depth 10 keeps {min(bits, 10)} bits in {codec})"
    else:
        depth, why = 8, f"{codec} players rarely decode more than 8 bits (--depth 10 keeps {min(bits, 10)})"
    if bits <= depth:
        return depth, None
    return depth, f"depth reduced from {bits} to {depth} bits: {why}"


def eight_bit_format(fmt: PixelFormat) -> PixelFormat:
    """The 8-bit layout with ``fmt``'s chroma (yuv420p10le -> yuv420p, p010le -> nv12, ...)."""
    if fmt.bit_depth <= 8:
        return fmt
    name = fmt.ffmpeg_name
    for high, low in (("p010le", "nv12"), ("p210le", "nv16"), ("p410le", "nv24")):
        if name == high:
            return PixelFormat.from_ffmpeg_name(low)
    for suffix in ("p10le", "p12le", "p16le"):
        if name.endswith(suffix):
            return PixelFormat.from_ffmpeg_name(name[: -len(suffix)] + "p")
    return PixelFormat.YUV420P


def ten_bit_format(fmt: PixelFormat) -> PixelFormat:
    """A 10-bit layout with ``fmt``'s chroma where one exists (yuv420p -> yuv420p10le), else 4:2:0."""
    if fmt.bit_depth >= 10:
        return fmt
    name = fmt.ffmpeg_name
    if name in ("yuv420p", "yuv422p", "yuv444p"):
        return PixelFormat.from_ffmpeg_name(name + "10le")
    return PixelFormat.YUV420P10


def check_preset(encoder: str, preset: str | None) -> None:
    """Refuse a preset the encoder does not have, before anything is opened (libx264 and libx265
    would only say "Invalid argument" when they open, after their own log line).

    Raises:
        InvalidInputError: ``preset`` is not one of :data:`ENCODER_PRESETS` for ``encoder`` (the message
            names the closest one and all of them), or not a number in its
            :data:`ENCODER_PRESET_RANGES` range.
    """
    import difflib

    span = ENCODER_PRESET_RANGES.get(encoder)
    if preset is not None and span is not None:
        low, high = span
        try:
            number = int(str(preset).strip())
        except ValueError:
            number = None
        if number is None or not low <= number <= high:
            raise InvalidInputError(
                f"unknown {encoder} preset {preset!r}: it takes a number from {low} to {high} (lower is "
                "slower and better)"
            )
        return
    names = ENCODER_PRESETS.get(encoder)
    if preset is None or names is None or preset in names:
        return
    near = difflib.get_close_matches(preset.lower(), names, n=1, cutoff=0.6)
    said = f"unknown {encoder} preset {preset!r}"
    raise InvalidInputError(f"{said}; did you mean {near[0]}?" if near else f"{said} ({' '.join(names)})")


def effective_preset(encoder: str, preset: str | None) -> str | None:
    """The preset the encoder runs with: the one asked for, else its default (None: not known)."""
    return preset if preset is not None else DEFAULT_PRESETS.get(encoder)


BITRATE_RANGE = (1_000, 100_000_000_000)
"""The bit rates (bits per second) TranscodeOptions takes: 1k to 100G."""


@dataclass(frozen=True)
class TranscodeOptions:
    """What ``alpha2 transcode`` was asked to do."""

    codec: str | None = None
    """Codec (``h264``, ``hevc``, ``vp9``, ``av1``) or an FFmpeg encoder name; None: by the output's
    container (:func:`default_codec`); ``copy``: the streams as they are, nothing encoded
    (:mod:`alpha2.api.remux`)."""
    size: Size | None = None
    """Box to fit the output in, aspect kept, even sides; None keeps the input's size. Also taken as
    ``(width, height)`` or ``"WIDTHxHEIGHT"``; one side left free as ``--size`` and ffmpeg's scale filter
    take it: ``(-1, 720)``, ``(None, 720)`` or ``"-1x720"`` is 720 high, ``(1280, -1)`` 1280 wide."""
    crf: float | None = None
    """Constant-quality factor; None with no bitrate: :data:`DEFAULT_CRF` for the codec. Refused for an
    encoder with no constant-quality option (ffv1, prores_ks), which FFmpeg would ignore."""
    bitrate: int | None = None
    """Target bit rate in bits per second (instead of crf), from :data:`BITRATE_RANGE`'s first to its
    last. Refused for an encoder that writes the same at any rate (ffv1 and the other lossless ones,
    prores_ks)."""
    preset: str | None = None
    """Encoder speed preset; None: the encoder's default. Refused for an encoder with none (mpeg4,
    ffv1, prores_ks)."""
    frames: int | None = None
    """Stop after this many frames (the audio is cut at the same time)."""
    from_seconds: float = 0.0
    """Start this far into the input (``--from``; FFmpeg's ``-ss``), counted from its start: the
    output's 0 is the frame on display then, at its own time (a time between two frames starts the
    output up to a frame earlier, so that every frame keeps its length), the audio cut at the same
    time; ``duration_seconds`` counts from there."""
    to_seconds: float | None = None
    """End at this time of the input (``--to``), counted like ``from_seconds``; None: its end."""
    duration_seconds: float | None = None
    """End this long after ``from_seconds`` (``--duration``; FFmpeg's ``-t``); not with ``to_seconds``."""
    hwaccel: str = "auto"
    """Decoding: ``auto``, ``cuda`` or ``none``."""
    audio: bool = True
    """Copy the input's audio (when it has some)."""
    colour: ColourChoice = ColourChoice.AUTO
    """The output's matrix and range."""
    gpu: bool = False
    """Process on the GPU even when nothing asks for it (no passthrough)."""
    ring_size: int = 3
    """Read-back slots of the encode copier (frames the GPU may run ahead of the encoder)."""
    depth: DepthChoice = DepthChoice.AUTO
    """The output's bits per sample (:func:`output_depth`); also taken as "8", "10", 8, 10 or "auto"."""
    sdr: bool = False
    """Tone map an HDR input to SDR BT.709 (``--sdr``) whatever the codec and depth."""
    max_pixels: int | None = DEFAULT_MAX_PIXELS
    """Refuse decoded pictures of more pixels than this (``--max-pixels``); None: no limit."""
    overwrite: bool = True
    """Replace an existing output (the input itself never); ``alpha2 transcode`` passes False unless
    given ``-y`` (``--overwrite``), and an existing output is then refused."""
    segments: int | str | None = None
    """Encode the video in this many parts of the file at once, in worker processes, and join them
    (``--segments K``; :mod:`alpha2.api.segmented_transcode`); ``"auto"``: as many as help (one
    pipeline on a machine of 4 cores or fewer); None: one pipeline. The workers are started by
    ``multiprocessing``'s spawn method, which imports the calling script again in each: a script that
    transcodes with segments keeps its work under ``if __name__ == "__main__":``."""
    audio_tracks: tuple[str, ...] | None = None
    """The audio streams to keep (``--audio-track``), each by its number among the input's audio
    streams (``0`` the first, as ffmpeg's ``-map 0:a:0`` counts them) or by language (``"jpn"``,
    ``"en"``: every audio stream tagged in it, matched in any of its ISO 639 codes as mpv's ``--alang``
    matches); a word ending in ``?`` may match nothing (as ffmpeg's ``-map 0:a:1?``). Also taken as one
    string, comma-separated (``"jpn,eng"``), or a number. The kept streams are written in the order
    asked, as ffmpeg writes them in the order of its ``-map`` options (a language's streams in the
    input's order at its place; a stream named twice at its first place), and the first takes the
    default where the input had a default audio stream (said where that moves it). A word that matches
    none of the input's streams is refused (:class:`StreamChoiceError`, naming them) before anything is
    written. None: every audio stream (unless ``audio`` is False)."""
    subtitles: bool = True
    """Keep the input's subtitle streams (``--no-subtitles`` drops them all)."""
    subtitle_tracks: tuple[str, ...] | None = None
    """The subtitle streams to keep (``--subtitle-track``), chosen and ordered as ``audio_tracks``
    chooses the audio: by number among the subtitle streams or by language; the first takes the
    default where the input had a default subtitle stream (one shown unasked). None: every one (unless
    ``subtitles`` is False)."""
    fps: fractions.Fraction | None = None
    """The output's constant frame rate (``--fps``; FFmpeg's ``-r`` / ``fps`` filter, round=near):
    frames dropped or repeated to fill each 1/fps slot (:mod:`alpha2.api.frame_rate`), the length and the
    audio kept. Also taken as ``30``, ``29.97`` (2997/100, exactly), ``"30000/1001"`` or a name
    (``"ntsc"``, ``"film"``, ``"pal"``). ``frames`` counts output frames then. Not with ``segments``.
    None: the input's timing, kept."""

    def _check_types(self) -> None:
        """Each field's type, as :mod:`alpha2.api.arguments` checks the front door's arguments: a
        ``(w, h)`` size becomes a Size, a choice's value its member."""

        def put(name: str, value: object) -> None:
            object.__setattr__(self, name, value)  # frozen: the normalised value

        if self.codec is not None:
            arguments.text("codec", self.codec)
            if not self.codec.strip():  # '' was taken as the container's default codec, unsaid
                raise InvalidInputError(
                    "codec must name a codec ('h264', 'hevc', 'copy', ...), got an empty name; leave it out "
                    "for the container's default"
                )
        if self.size is not None:
            size: Any = self.size
            free = (
                [v is None or (isinstance(v, int) and v in (-1, -2)) for v in size]
                if isinstance(size, tuple | list) and len(size) == 2
                else []
            )
            if free.count(True) == 1:  # (-1, 720): as "-1x720", which --size takes (it was refused)
                size = "x".join("-1" if f else str(v) for f, v in zip(free, size, strict=True))
            put("size", arguments.size("size", size, free_side=True))
        if self.crf is not None:
            arguments.real(_named("crf"), self.crf, low=0)
        if self.bitrate is not None:
            bitrate = arguments.whole(_named("bitrate"), self.bitrate, low=1)
            low, high = BITRATE_RANGE
            if not low <= bitrate <= high:
                # Encoders count kilobits (libx264 took 999 as 0 and failed to open) in C integers.
                raise InvalidInputError(
                    f"{_named('bitrate')} must be from {low} (1k) to {high} (100G) bits per second, "
                    f"got {bitrate}"
                )
            put("bitrate", bitrate)
        if self.preset is not None:
            arguments.text("preset", self.preset)
        if self.frames is not None:
            arguments.whole(_named("frames"), self.frames)
        arguments.real(_named("from_seconds"), self.from_seconds)
        for name in ("to_seconds", "duration_seconds"):
            if getattr(self, name) is not None:
                arguments.real(_named(name), getattr(self, name))
        arguments.choice("hwaccel", self.hwaccel, ("auto", "cuda", "none"))
        for name in ("audio", "subtitles", "gpu", "sdr", "overwrite"):
            arguments.flag(name, getattr(self, name))
        if self.audio_tracks is not None:
            put("audio_tracks", track_specs(self.audio_tracks, "audio"))
        if self.subtitle_tracks is not None:
            put("subtitle_tracks", track_specs(self.subtitle_tracks, "subtitle"))
        put("colour", arguments.member("colour", self.colour, ColourChoice))
        put("depth", arguments.member("depth", self.depth, DepthChoice))
        arguments.whole("ring_size", self.ring_size)
        if self.max_pixels is not None:
            arguments.whole(_named("max_pixels"), self.max_pixels)
        if self.fps is not None:
            put("fps", parse_rate(self.fps, _named("fps")))

    @property
    def chooses_streams(self) -> bool:
        """Whether some of the input's audio or subtitle streams are left out on purpose
        (``--audio-track``, ``--subtitle-track``, ``--no-audio``, ``--no-subtitles``)."""
        return (
            not self.audio
            or not self.subtitles
            or self.audio_tracks is not None
            or self.subtitle_tracks is not None
        )

    @property
    def picture_options(self) -> list[str]:
        """The options given that shape the pictures (``size``, ``crf``, ``preset``, ``colour``, ``depth``,
        ``sdr``, ``gpu``, ``segments``, ``fps``), named as the caller spells them (the command line's
        ``--size`` ...: :func:`option_names`): what a copy and sound alone refuse."""
        return [
            _named(name)
            for name, given in (
                ("size", self.size is not None),
                ("crf", self.crf is not None),
                ("preset", self.preset is not None),
                ("colour", self.colour is not ColourChoice.AUTO),
                ("depth", self.depth is not DepthChoice.AUTO),
                ("sdr", self.sdr),
                ("gpu", self.gpu),
                ("segments", self.segments is not None),
                ("fps", self.fps is not None),
            )
            if given
        ]

    @property
    def cuts(self) -> bool:
        """Whether a part of the input is asked for (``--from``, ``--to``, ``--duration``)."""
        return self.from_seconds > 0 or self.to_seconds is not None or self.duration_seconds is not None

    @property
    def end_seconds(self) -> float | None:
        """The input time the output ends at (``--to``, or ``--from`` + ``--duration``); None: its end."""
        if self.duration_seconds is not None:
            return self.from_seconds + self.duration_seconds
        return self.to_seconds

    def __new__(cls, *args: Any, **kwargs: Any) -> TranscodeOptions:
        # A misspelt field (sizee=...) is the dataclass's TypeError otherwise, not alpha2's typed error.
        if kwargs:
            arguments.known_options("TranscodeOptions()", kwargs, cls.__init__)
        return super().__new__(cls)

    def __post_init__(self) -> None:
        self._check_types()
        if self.crf is not None and self.bitrate is not None:
            raise InvalidInputError("give crf or bitrate, not both")
        if not self.audio and self.audio_tracks is not None:
            raise InvalidInputError(
                "give audio=False (--no-audio: no audio stream) or audio_tracks (--audio-track: the ones "
                "kept), not both"
            )
        if not self.subtitles and self.subtitle_tracks is not None:
            raise InvalidInputError(
                "give subtitles=False (--no-subtitles: no subtitle stream) or subtitle_tracks "
                "(--subtitle-track: the ones kept), not both"
            )
        if self.sdr and self.colour in (ColourChoice.KEEP, ColourChoice.BT2020):
            raise InvalidInputError(
                f"{_named('sdr')} tone maps to BT.709: it cannot go with {_named('colour')} "
                f"{self.colour.value}"
            )
        if self.frames is not None and self.frames < 1:
            raise InvalidInputError(f"{_named('frames')} must be >= 1, got {self.frames}")
        for name in ("from_seconds", "to_seconds", "duration_seconds"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise InvalidInputError(f"{_named(name)} must be a time of 0 s or more, got {value}")
        start, to, duration = (_named(n) for n in ("from_seconds", "to_seconds", "duration_seconds"))
        if self.to_seconds is not None and self.duration_seconds is not None:
            raise InvalidInputError(f"give {to} or {duration}, not both")
        if self.to_seconds is not None and self.to_seconds <= self.from_seconds:
            raise InvalidInputError(
                f"{to} {self.to_seconds:g} s is not after {start} {self.from_seconds:g} s: nothing to write"
            )
        if self.duration_seconds is not None and self.duration_seconds <= 0:
            raise InvalidInputError(f"{duration} must be more than 0 s")
        if self.ring_size < 2:
            raise InvalidInputError(f"ring_size must be >= 2, got {self.ring_size}")
        if self.max_pixels is not None and self.max_pixels < 1:
            raise InvalidInputError(f"{_named('max_pixels')} must be >= 1, got {self.max_pixels}")
        segments = self.segments
        if segments is not None and segments != "auto":
            if isinstance(segments, bool) or not isinstance(segments, int) or segments < 2:
                raise InvalidInputError(
                    f"{_named('segments')} must be 2 or more, or 'auto', got {segments!r} (leave it out for "
                    "one pipeline)"
                )
        if segments is not None and self.fps is not None:
            raise InvalidInputError(
                f"{_named('segments')} cannot go with {_named('fps')}: each part would choose its frames on "
                f"its own clock; leave out {_named('segments')} (one pipeline)"
            )
        if segments is not None and self.frames is not None:
            parts = _named("segments")
            raise InvalidInputError(
                f"{parts} cannot go with {_named('frames')}: a count of frames is known only by decoding "
                f"from the start; give the part as {to} or {duration}, or leave out {parts}"
            )


@dataclass(frozen=True)
class TranscodePlan:
    """What happens to the frames, decided from the first one."""

    passthrough: bool
    """Decoded frames go straight to the encoder (no GPU work)."""
    reason: str
    """Why passthrough or why GPU processing."""
    input_size: Size
    """The first frame's display size."""
    output_size: Size
    """The encoded size."""
    input_format: PixelFormat
    """The decoder's pixel format."""
    output_format: PixelFormat
    """What the frames are handed to the encoder as (the input's for passthrough; NV12 or P010)."""
    input_colour: ColourInfo
    """The input's colour (resolved)."""
    output_colour: ColourInfo
    """The colour written and tagged."""
    depth_note: str | None = None
    """Why the output has fewer bits per sample than the input, when it has (None: not reduced)."""
    crop: tuple[int, int, int, int] | None = None
    """Source rectangle (x, y, width, height) that is encoded, pixel for pixel, when the input's odd
    sides are cut to the encoder's 4:2:0 alignment (no resampling); None: the whole picture."""
    rotation: Rotation = Rotation.NONE
    """Clockwise turn applied to the pixels on the GPU route (``output_size`` is the turned size; the
    output then carries no rotation tag)."""
    display_rotation: Rotation = Rotation.NONE
    """Rotation written into the output's display matrix, the pixels passing through unturned."""
    mirrored: bool = False
    """The GPU route flips the pixels left to right before :attr:`rotation` (the input's display matrix
    has a mirror, which no output tag keeps)."""
    tone_map: bool = False
    """The GPU pass tone maps the HDR input to SDR BT.709 (the colour-managed renderer)."""
    colour_note: str | None = None
    """What happens to an HDR input (tone mapped and why, or kept with its metadata); None for SDR."""
    padded_from: Size | None = None
    """The input's size when a 1-pixel side was padded to the encoder's 2 (that row or column
    repeated); None: not padded."""
    sample_aspect: fractions.Fraction | None = None
    """The output's pixel shape (width : height) where it is not square: the input's, kept when the
    picture is not scaled (inverted when the GPU route turns it a quarter); a scaled picture has
    square pixels (None)."""

    @property
    def keeps_hdr(self) -> bool:
        """Whether the output is HDR (PQ / HLG kept): its static metadata is written too."""
        return self.output_colour.transfer in HDR_TRANSFERS and self.output_format.bit_depth >= 10


def _hd(size: Size) -> bool:
    return size.height >= HD_MIN_HEIGHT or size.width >= 1280


def _wanted_matrix(
    choice: ColourChoice, colour: ColourInfo, out: Size
) -> tuple[ColourMatrix, ColourRange, str]:
    if choice is ColourChoice.BT709:
        return ColourMatrix.BT709, ColourRange.LIMITED, "BT.709 limited (--colour bt709)"
    if choice is ColourChoice.BT601:
        return ColourMatrix.SMPTE170M, ColourRange.LIMITED, "BT.601 limited (--colour bt601)"
    if choice is ColourChoice.BT2020:
        return ColourMatrix.BT2020_NCL, ColourRange.LIMITED, "BT.2020 limited (--colour bt2020)"
    if choice is ColourChoice.AUTO and _hd(out):
        return ColourMatrix.BT709, ColourRange.LIMITED, "BT.709 limited for an HD output"
    return colour.matrix, colour.range, "the input's matrix and range"


def _same_matrix(a: ColourMatrix, b: ColourMatrix) -> bool:
    bt601 = (ColourMatrix.BT470BG, ColourMatrix.SMPTE170M)
    return a == b or (a in bt601 and b in bt601)


def _rgb_output(input_colour: ColourInfo, out: Size) -> ColourInfo:
    """The Y'CbCr colour RGB input is converted to: BT.709 for HD, BT.601 below, limited range."""
    matrix = ColourMatrix.BT709 if _hd(out) else ColourMatrix.SMPTE170M
    return ColourInfo(
        matrix=matrix,
        primaries=input_colour.primaries,
        transfer=input_colour.transfer,
        range=ColourRange.LIMITED,
        chroma_location=ChromaLocation.LEFT,
    )


_LIMITED_NOTE = "full range -> limited ({encoder}'s pictures are read as limited range)"
"""Said where a full-range picture goes to an encoder of LIMITED_RANGE_ENCODERS."""


def _for_readers(
    encoder: str | None, codec: str, muxer: str | None, size: Size, matrix: ColourMatrix
) -> tuple[ColourMatrix, str] | None:
    """The matrix a picture of ``matrix`` is converted to for this output, and the words that say why,
    where every reader takes its pictures as that one whatever alpha2 tags (VP8's as BT.601; FFV1's and
    MPEG-4's in AVI or NUT, which keep no tags, as their size's guess); None: the tags hold."""
    read = matrix_for_readers(encoder, codec, muxer, size.width, size.height, matrix)
    if read is None:
        return None
    name = "BT.601" if read in (ColourMatrix.BT470BG, ColourMatrix.SMPTE170M) else read.name
    if (encoder or "") in BT601_ONLY_ENCODERS or codec in BT601_ONLY_ENCODERS:
        return read, f"matrix {matrix.name} -> {name} ({encoder or codec}'s pictures are read as BT.601)"
    return read, (
        f"matrix {matrix.name} -> {name} (the {muxer} container keeps no colour tags for {codec}: "
        f"readers take a {size.width}x{size.height} picture as {name})"
    )


def _limited_only(encoder: str | None, codec: str, colour: ColourInfo, muxer: str | None = None) -> bool:
    """Whether a picture of ``colour`` is full range and the output is read as limited whatever its tag
    (``encoder`` of ``codec`` writes only limited, or ``muxer`` keeps no tags for it): its levels are
    converted (written as they are, readers take them as limited, the contrast grows)."""
    return colour.range is ColourRange.FULL and read_as_limited(encoder, codec, muxer)


def _limited_note(encoder: str | None, codec: str, muxer: str | None) -> str:
    """Why the levels are converted (:func:`_limited_only`), as the plan says it."""
    if {encoder or "", codec} & LIMITED_RANGE_ENCODERS:
        return _LIMITED_NOTE.format(encoder=encoder or codec)
    return f"full range -> limited (the {muxer} container keeps no colour tags for {codec}: read as limited)"


def _even_sides(
    input_size: Size, reasons: list[str]
) -> tuple[Size, tuple[int, int, int, int] | None, Size | None]:
    """The even size a 4:2:0 output of an odd-sided picture takes, the crop to it and the size padded
    from (None: none); what is done said in ``reasons``. The last column / row is cut rather than the
    whole picture resampled (that blurs every edge); a side of one pixel cannot lose it: it is
    repeated to two, the encoders' smallest side."""
    w, h = input_size.width, input_size.height
    cut_w, cut_h = (w % 2 if w > 1 else 0), (h % 2 if h > 1 else 0)
    out = Size(max(2, w - cut_w), max(2, h - cut_h))
    crop: tuple[int, int, int, int] | None = None
    padded_from: Size | None = None
    if cut_w or cut_h:
        crop = (0, 0, w - cut_w, h - cut_h)
        reasons.append(
            f"crop {w}x{h} -> {w - cut_w}x{h - cut_h}: 4:2:0 output needs even sides here "
            f"({cut_w} column, {cut_h} row cut at the right / bottom edge, pixels not resampled)"
        )
    if w == 1 or h == 1:
        padded_from = input_size
        reasons.append(
            f"pad {w}x{h} -> {out.width}x{out.height}: no encoder takes a side of one pixel "
            "(the single column / row repeated)"
        )
    return out, crop, padded_from


def _odd_sides_kept(
    input_format: PixelFormat, encoder_formats: tuple[str, ...], w: int, h: int, encoder: str | None
) -> bool:
    """Whether a picture of ``w`` x ``h`` (a side odd) goes to the encoder as it is: an encoder of
    :data:`ODD_SIDE_ENCODERS` (sides of 4 or more), or the format it takes for ``input_format``
    subsamples the chroma along no odd side (4:4:4, or 4:2:2 with an odd height), as the ffmpeg command
    passes such a picture. RGB is converted to 4:2:0, and a side of one pixel is padded. A palette
    encoder (GIF) takes RGB, whatever the sides: any picture goes to it as it is."""
    if (encoder or "") in PALETTE_ENCODERS:
        return True
    if input_format.is_rgb or w == 1 or h == 1:
        return False
    if w % 2 and (encoder or "") in EVEN_WIDTH_ENCODERS:  # 4:4:4 too: cut like 4:2:0 (it failed to open)
        return False
    if (encoder or "") in ODD_SIDE_ENCODERS and min(w, h) >= 4:
        return True
    taken = nearest_encoder_format(input_format, encoder_formats, encoder)
    return not (w % 2 and taken.log2_chroma_w) and not (h % 2 and taken.log2_chroma_h)


def plan_transcode(
    input_size: Size,
    input_format: PixelFormat,
    input_colour: ColourInfo,
    options: TranscodeOptions,
    *,
    codec: str = "h264",
    rotation: Rotation = Rotation.NONE,
    container_holds_rotation: bool = True,
    mirrored: bool = False,
    sample_aspect: fractions.Fraction | None = None,
    encoder: str | None = None,
    encoder_formats: tuple[str, ...] = (),
    keeps_pixel_shape: bool = True,
    decoded_as: str | None = None,
    muxer: str | None = None,
) -> TranscodePlan:
    """Decide passthrough or GPU processing, the output size, format, bit depth and colour.

    ``decoded_as``: the decoder's own pixel format where it is none of alpha2's and the frames were
    converted to ``input_format`` on the CPU (a passthrough then does not say "same pixel format").
    ``muxer``: the output's FFmpeg muxer, where known (some keep no colour tags for some codecs).

    ``codec`` is the output's codec family (``h264``, ``hevc``, ...): the default depth depends on it.
    ``rotation`` is the input's display rotation: a passthrough tags it (where the output container
    holds a display matrix, ``container_holds_rotation``), processing turns the pixels; ``--size``
    fits the picture as displayed. RGB input is never passed through as RGB: the encoder is handed
    Y'CbCr converted by a matrix the output is tagged with. ``sample_aspect``: the input's pixel shape
    where it is not square: ``--size`` fits the picture as shown (its width times that) with square
    pixels; otherwise the output keeps it. ``mirrored``: the input's display matrix flips the picture
    left to right (before ``rotation``): the GPU route flips the pixels (and then turns them too), as
    FFmpeg's command line does; the encoders' display matrix holds no flip.

    Raises:
        UnsupportedError: the asked colour cannot be written by the encode copier.
    """
    quarter = rotation in (Rotation.CW90, Rotation.CW270)
    shown = input_size.transposed() if quarter else input_size
    w, h = input_size.width, input_size.height
    reasons: list[str] = []
    crop: tuple[int, int, int, int] | None = None
    padded_from: Size | None = None
    shape = sample_aspect if sample_aspect is not None and sample_aspect > 0 and sample_aspect != 1 else None
    # Odd sides a passthrough hands the encoder as they are; the GPU route (NV12, P010) cuts them below.
    odd_kept = (w % 2 or h % 2) and _odd_sides_kept(input_format, encoder_formats, w, h, encoder)
    lost_shape = shape is not None and options.size is None and not keeps_pixel_shape
    if options.size is not None or lost_shape:
        # Anamorphic pixels: the picture as shown is wider (or taller) than stored. An output that
        # cannot say the pixel shape gets square pixels at the shown size.
        wide = shown.width * (shape if shape is not None and not quarter else 1)
        tall = shown.height * (shape if shape is not None and quarter else 1)
        box = options.size if options.size is not None else Size(round(wide), round(tall))
        out = pipeline.fit_inside(round(wide), round(tall), box)
        if out != shown or shape is not None:
            w, h = shown.width, shown.height
            pixels = f" (pixels {shape.numerator}:{shape.denominator})" if shape is not None else ""
            square = ", square pixels" if shape is not None else ""
            fit = (
                f"fit in {pipeline.box_text(options.size)}{square}"
                if options.size is not None
                else f"square pixels: {encoder or codec} in this container cannot say the pixel shape"
            )
            reasons.append(f"scale {w}x{h}{pixels} -> {out.width}x{out.height} ({fit})")
        shape = None
    elif (w % 2 or h % 2) and not odd_kept:
        out, crop, padded_from = _even_sides(input_size, reasons)
    else:
        out = input_size
    if quarter and options.size is None and not lost_shape:
        out = out.transposed()
    if rotation is not Rotation.NONE and not container_holds_rotation:
        reasons.append(
            f"turn the picture {int(rotation)} degrees clockwise: the container holds no display matrix"
        )
    # The GPU route turns the picture whatever sends it there (a size, a colour, tone mapping, --gpu):
    # where it goes, the turn is said once every reason is known (below).
    turn = rotation is not Rotation.NONE and container_holds_rotation
    hdr_in = input_colour.transfer in HDR_TRANSFERS
    asked_sdr = hdr_in and (options.sdr or options.colour in (ColourChoice.BT709, ColourChoice.BT601))
    # An asked SDR output is not HDR any more: AUTO depth treats it as SDR (8 bits).
    depth_colour = _SDR if asked_sdr else input_colour
    depth, depth_note = output_depth(
        input_format, depth_colour, codec, options.depth, encoder, encoder_formats
    )
    tone_map = hdr_in and (asked_sdr or depth < 10)
    colour_note: str | None = None
    if tone_map:
        why = (
            "--sdr"
            if options.sdr
            else f"--colour {options.colour.value}"
            if asked_sdr
            else f"{depth}-bit output: HDR tags are never written on 8 bits"
        )
        colour_note = f"HDR ({input_colour.transfer.name}) tone mapped to SDR BT.709 ({why})"
        reasons.append(f"tone map {input_colour.transfer.name} to SDR BT.709")
    elif hdr_in:
        colour_note = f"HDR kept: {input_colour.transfer.name}, {input_colour.primaries.name}, {depth} bits"
    explicit = options.colour not in (ColourChoice.AUTO, ColourChoice.KEEP)
    if explicit and not tone_map:
        matrix, rng, _ = _wanted_matrix(options.colour, input_colour, out)
        if not _same_matrix(matrix, input_colour.matrix) or rng != input_colour.range:
            reasons.append(f"convert colour to {options.colour.value}")
    if options.gpu:
        reasons.append("--gpu asks for GPU processing")
    if mirrored:
        reasons.append("flip the picture left to right (its display matrix: no output tag keeps a mirror)")
    if odd_kept and reasons and options.size is None and not lost_shape:
        # Processed after all: the GPU route writes 4:2:0, whose sides are even.
        out, crop, padded_from = _even_sides(input_size, reasons)
        out = out.transposed() if quarter else out
    if turn and reasons:
        reasons.append(f"turn the picture {int(rotation)} degrees clockwise (its display matrix)")
    kept = (
        f"; the {int(rotation)} degree rotation stays a display-matrix tag"
        if rotation is not Rotation.NONE and not reasons
        else ""
    )
    if shape is not None and not reasons:
        kept += f"; pixels {shape.numerator}:{shape.denominator} kept"
    elif shape is not None and quarter and reasons:
        shape = 1 / shape  # the GPU route turns the picture: a pixel's sides swap
    # A GIF's palette is made from RGB: an RGB picture goes to it as it is, not through a matrix.
    rgb_kept = input_format.is_rgb and (
        (encoder or "") in PALETTE_ENCODERS
        or (
            (encoder or "") in FIDELITY_ENCODERS
            and nearest_encoder_format(input_format, encoder_formats, encoder).is_rgb
        )
    )
    if not reasons and input_format.is_rgb and not rgb_kept:
        # An RGB picture into a Y'CbCr encoder: converted by a known matrix, and tagged with it; 4:2:0
        # for a delivery encoder, the format losing least for a master's (4:4:4 into ProRes).
        passed = ten_bit_format(PixelFormat.YUV420P) if depth > 8 else PixelFormat.YUV420P
        if (encoder or "") in FIDELITY_ENCODERS and encoder_formats:
            passed = nearest_encoder_format(input_format, encoder_formats, encoder)
        rgb_colour = _rgb_output(input_colour, input_size)
        only = ""
        readers = _for_readers(encoder, codec, muxer, input_size, rgb_colour.matrix)
        if readers is not None:
            # The encode session converts RGB by the matrix the readers take (VP8's BT.601, ...).
            rgb_colour = dataclasses.replace(rgb_colour, matrix=readers[0])
            only = f" ({readers[1].split(' (', 1)[1]}"
        return TranscodePlan(
            passthrough=True,
            reason=(
                f"passthrough: same size; the encoder takes {passed.ffmpeg_name}, converted from "
                f"{input_format.ffmpeg_name} by the {rgb_colour.matrix.name} matrix{only}, limited "
                f"range{kept}"
            ),
            input_size=input_size,
            output_size=input_size,
            input_format=input_format,
            output_format=passed,
            input_colour=input_colour,
            output_colour=rgb_colour,
            depth_note=depth_note,
            display_rotation=rotation,
            sample_aspect=shape,
        )
    if not reasons:
        passed = input_format
        # A full-range picture into an encoder that writes only limited range has its levels converted
        # by the encode session: said as such, never as "same colour" (an outside pass, helper 91).
        limited = _limited_only(encoder, codec, input_colour, muxer) and not input_format.is_rgb
        readers = (
            None
            if input_format.is_rgb
            else _for_readers(encoder, codec, muxer, input_size, input_colour.matrix)
        )
        same = "same size" if limited or readers else "same size and colour"
        reason = (
            "passthrough: same size and pixel format"
            if limited or readers
            else "passthrough: same size, pixel format and colour; frames go straight to the encoder"
        )
        if decoded_as is not None and decoded_as != input_format.ffmpeg_name:
            # The decoder's layout is none of alpha2's: converted on the CPU first (its note says more).
            reason = (
                f"passthrough: {same}; the decoder's {decoded_as} goes to the encoder as "
                f"{input_format.ffmpeg_name}"
            )
        if depth < input_format.bit_depth:
            passed = eight_bit_format(input_format)
            reason = f"passthrough: {same}; the encoder takes {passed.ffmpeg_name} ({depth_note})"
        elif depth > input_format.bit_depth:
            passed = ten_bit_format(input_format)
            reason = f"passthrough: {same}; the encoder takes {passed.ffmpeg_name} (--depth 10)"
        taken = nearest_encoder_format(passed, encoder_formats, encoder)
        colour_kept_or_refused(passed, taken, encoder or codec)
        if taken != passed and (encoder or "") in PALETTE_ENCODERS:
            # GIF: the colours are the palette's, not the input's: said as what is done, not as chroma.
            by = "" if passed.is_rgb else f" by the {input_colour.matrix.name} matrix"
            reason = (
                f"passthrough: same size; {PALETTE_NOTE}, from {passed.ffmpeg_name} converted to "
                f"{taken.ffmpeg_name}{by}"
            )
            passed = taken
        elif taken != passed:
            lost = []
            if taken.bit_depth < passed.bit_depth:
                lost.append(f"{passed.bit_depth} -> {taken.bit_depth} bits")
            if passed.is_gray and not taken.is_gray:
                # A gray picture has no chroma to lose (it said 'chroma 4:4:4 -> 4:2:0': helper 91).
                lost.append(f"written as {_chroma(taken)}, its chroma neutral")
            elif (taken.log2_chroma_w, taken.log2_chroma_h) != (passed.log2_chroma_w, passed.log2_chroma_h):
                lost.append("chroma " + " -> ".join(_chroma(f) for f in (passed, taken)))
            if passed.has_alpha and not taken.has_alpha:
                lost.append("alpha dropped")
            reason = (
                f"passthrough: {same}; the encoder takes {taken.ffmpeg_name}, not "
                f"{passed.ffmpeg_name} ({encoder or codec} has no {passed.ffmpeg_name}"
                + (f": {', '.join(lost)}" if lost else "")
                + ")"
            )
            passed = taken
        written_colour = input_colour
        if readers is not None:
            # The encode session converts the matrix (the one every reader takes the pictures as).
            written_colour = dataclasses.replace(written_colour, matrix=readers[0])
            reason += f"; {readers[1]}"
        if limited:
            written_colour = dataclasses.replace(written_colour, range=ColourRange.LIMITED)
            reason += f"; {_limited_note(encoder, codec, muxer)}"
        return TranscodePlan(
            passthrough=True,
            reason=reason + kept,
            input_size=input_size,
            output_size=input_size,
            input_format=input_format,
            output_format=passed,
            input_colour=input_colour,
            output_colour=written_colour,
            depth_note=depth_note,
            display_rotation=rotation,
            colour_note=colour_note,
            sample_aspect=shape,
        )
    if tone_map:
        choice = options.colour if options.colour is ColourChoice.BT601 else ColourChoice.BT709
        matrix, rng, why = _wanted_matrix(choice, input_colour, out)
        if options.colour is not choice:
            # Not asked by --colour: say what asked it (--sdr, or the depth), and an asked matrix not taken.
            cause = "--sdr" if options.sdr else f"tone mapped for the {depth}-bit output"
            why = f"BT.709 limited ({cause}"
            if options.colour not in (ColourChoice.AUTO, ColourChoice.BT709):
                why += f"; --colour {options.colour.value} not taken: tone mapping writes SDR BT.709"
            why += ")"
    elif hdr_in and options.colour is ColourChoice.AUTO:
        matrix, rng, why = input_colour.matrix, input_colour.range, "the input's matrix and range (HDR kept)"
    else:
        matrix, rng, why = _wanted_matrix(options.colour, input_colour, out)
    if matrix not in WRITABLE_MATRICES or rng is ColourRange.UNSPECIFIED:
        if options.colour is ColourChoice.KEEP:
            raise UnsupportedError(
                f"{_named('colour')} keep: the encode copier cannot write the input's matrix {matrix.name}; "
                f"use {_named('colour')} bt709, bt601 or bt2020"
            )
        matrix, rng = (
            (ColourMatrix.BT709, ColourRange.LIMITED)
            if _hd(out)
            else (ColourMatrix.SMPTE170M, ColourRange.LIMITED)
        )
        why = f"{matrix.name} limited (the input's {input_colour.matrix.name} cannot be written)"
    if rng is ColourRange.FULL and _limited_only(encoder, codec, input_colour, muxer):
        why = why.replace("matrix and range", "matrix")
        rng, why = ColourRange.LIMITED, f"{why}; {_limited_note(encoder, codec, muxer)}"
    readers = _for_readers(encoder, codec, muxer, out, matrix)
    if readers is not None:
        # Rendered in the matrix every reader takes the pictures as, whatever was wanted (VP8's BT.601).
        why = why.replace("the input's matrix and range", "the input's range")
        why = f"{why}; {readers[1]}"
        matrix = readers[0]
    output_format = PixelFormat.P010 if depth > 8 else PixelFormat.NV12
    if depth_note is not None:
        reasons.append(depth_note)
    finer = _chroma(input_format) if not input_format.is_gray else None
    if finer is not None and finer != "4:2:0":
        # Said, not silent (found by an outside pass: 4:2:2 and 4:4:4 scaled came out 4:2:0, the summary
        # saying only 'output nv12'). ffmpeg's scale filter keeps the chroma; both of alpha2's routes write
        # the plan's 4:2:0 (it said 'the GPU route writes nv12' on the CPU route too: an outside pass).
        written = output_format.ffmpeg_name
        reasons.append(f"chroma {finer} -> 4:2:0 (processed pictures are written as {written})")
    output_colour = ColourInfo(
        matrix=matrix,
        primaries=_SDR.primaries if tone_map else input_colour.primaries,
        transfer=_SDR.transfer if tone_map else input_colour.transfer,
        range=rng,
        chroma_location=ChromaLocation.LEFT,
    )
    return TranscodePlan(
        passthrough=False,
        reason="GPU: " + "; ".join(reasons) + f"; output {output_format.ffmpeg_name}, {why}",
        input_size=input_size,
        output_size=out,
        input_format=input_format,
        output_format=output_format,
        input_colour=input_colour,
        output_colour=output_colour,
        depth_note=depth_note,
        crop=crop,
        rotation=rotation,
        mirrored=mirrored,
        tone_map=tone_map,
        colour_note=colour_note,
        padded_from=padded_from,
        sample_aspect=shape,
    )


UNTAGGED = "und"
"""ISO 639's 'undetermined': how an untagged stream is named, and the word that chooses one."""


@dataclass(frozen=True)
class Track:
    """An audio or subtitle stream of the input, as ``--audio-track`` / ``--subtitle-track`` choose
    among them (and the report names them)."""

    index: int
    """Index of the stream in the input."""
    kind: StreamKind
    """``AUDIO`` or ``SUBTITLE``."""
    number: int
    """Its place among the input's streams of its kind, from 0 (what a number chooses)."""
    codec: str
    """Its codec (``aac``, ``srt``)."""
    language: str | None = None
    """Its ISO 639 language tag (``eng``); None: untagged."""
    title: str | None = None
    """Its title tag."""
    channels: int = 0
    """Audio channels (0: not said, or a subtitle stream)."""

    def label(self) -> str:
        """``1 jpn 'Japanese' (aac, 2 ch)``: its number, language (``und`` untagged), title, codec."""
        words = [str(self.number), self.language or UNTAGGED]
        if self.title:
            words.append(repr(self.title))
        channels = f", {self.channels} ch" if self.channels else ""
        return " ".join(words) + f" ({self.codec or '?'}{channels})"

    def as_dict(self) -> dict[str, Any]:
        """For JSON: ``{index, number, language, title, codec}``."""
        return {
            "index": self.index,
            "number": self.number,
            "language": self.language,
            "title": self.title,
            "codec": self.codec,
        }


class StreamChoiceError(InvalidInputError):
    """A word of ``--audio-track`` / ``--subtitle-track`` that matches none of the input's streams of
    its kind (the message names them all: number, language, codec); raised before anything is written."""

    def __init__(self, message: str, *, option: str = "", spec: str = "", tracks: tuple[Track, ...] = ()):
        super().__init__(message)
        self.option = option
        """The option: ``--audio-track`` or ``--subtitle-track``."""
        self.spec = spec
        """The word that matched nothing (``fre``, ``2``)."""
        self.tracks = tracks
        """The input's streams of that kind."""


_CHOICE_KINDS = (StreamKind.AUDIO, StreamKind.SUBTITLE)


@dataclass(frozen=True)
class StreamChoice:
    """Which of the input's audio and subtitle streams the options keep (:func:`choose_streams`)."""

    tracks: tuple[Track, ...]
    """The input's audio and subtitle streams, in its order."""
    kept: dict[StreamKind, frozenset[int] | None]
    """Per kind, the input indices kept; None: all of that kind (nothing asked)."""
    asked: dict[StreamKind, str]
    """Per kind, the option that chose (``--audio-track jpn``, ``--no-subtitles``); "": none."""
    matched_none: tuple[str, ...] = ()
    """Words ending in ``?`` that matched no stream (``--audio-track eng?``), said in the report."""
    order: dict[StreamKind, tuple[int, ...]] = field(default_factory=dict)
    """Per kind chosen by words, the input indices kept in the order asked (a language's streams in the
    input's order at its place; a stream named twice at its first place)."""

    def arrange(self, indices: Sequence[int]) -> list[int]:
        """``indices`` (input indices, in the input's order) with the streams of each kind chosen by
        words put in the order asked, as ``ffmpeg`` writes streams in the order of its ``-map``
        options; each kind keeps the places its streams held (the audio before the subtitles, as in
        the input)."""
        out = list(indices)
        for wanted in self.order.values():
            places = [n for n, index in enumerate(out) if index in wanted]
            ordered = [index for index in wanted if index in out]
            for place, index in zip(places, ordered, strict=True):
                out[place] = index
        return out

    def left_out(self, index: int) -> str | None:
        """Why the stream of input index ``index`` is left out by the choice; None: not left out by it
        (the output's container may still drop it, said by the copier)."""
        track = next((t for t in self.tracks if t.index == index), None)
        if track is None:
            return None
        kept = self.kept.get(track.kind)
        if kept is None or index in kept:
            return None
        asked = self.asked[track.kind]
        return asked if asked.startswith("--no-") else f"not chosen by {asked}"

    def as_dict(self, kept: set[int], dropped: dict[int, str]) -> dict[str, Any]:
        """For JSON, per kind: what was ``asked`` (``all``, ``none``, or the words), the streams ``kept``
        in the output (``kept``: their input indices) and those ``dropped`` with ``reason`` (``dropped``:
        the output's, the choice's and the container's alike); ``matched_none``: words with ``?`` that
        matched no stream."""
        out: dict[str, Any] = {}
        for kind in _CHOICE_KINDS:
            asked = self.asked.get(kind, "")
            words: Any = "all" if not asked else "none" if asked.startswith("--no-") else asked.split()[1]
            if isinstance(words, str) and words not in ("all", "none"):
                words = words.split(",")
            tracks = [t for t in self.tracks if t.kind is kind]
            order = self.order.get(kind, ())
            if order:  # the output's order: the order asked
                tracks.sort(key=lambda t: order.index(t.index) if t.index in order else len(order))
            out[kind.value] = {
                "asked": words,
                "kept": [t.as_dict() for t in tracks if t.index in kept],
                "dropped": [
                    {**t.as_dict(), "reason": dropped[t.index]} for t in tracks if t.index in dropped
                ],
            }
        out["matched_none"] = list(self.matched_none)
        return out


def choose_streams(
    tracks: tuple[Track, ...], options: TranscodeOptions, source: str = "the input"
) -> StreamChoice:
    """Which of ``tracks`` (the input's audio and subtitle streams) ``options`` keep: all of a kind by
    default; none with ``audio=False`` / ``subtitles=False``; with ``audio_tracks`` /
    ``subtitle_tracks``, every stream any word matches (a number: its place among the streams of its
    kind; a language: every stream tagged in it, in any of its ISO 639 codes). ``source`` names the
    input in errors.

    Raises:
        StreamChoiceError: a word (without a trailing ``?``) that matches no stream; the message names
            the input's streams of that kind (number, language, title, codec).
    """
    kept: dict[StreamKind, frozenset[int] | None] = {}
    asked: dict[StreamKind, str] = {}
    order: dict[StreamKind, tuple[int, ...]] = {}
    matched_none: list[str] = []
    for kind, keep, words, none in (
        (StreamKind.AUDIO, options.audio, options.audio_tracks, "--no-audio"),
        (StreamKind.SUBTITLE, options.subtitles, options.subtitle_tracks, "--no-subtitles"),
    ):
        option = TRACK_OPTIONS[kind.value]
        if not keep:
            kept[kind], asked[kind] = frozenset(), none
            continue
        if words is None:
            kept[kind], asked[kind] = None, ""
            continue
        of_kind = tuple(t for t in tracks if t.kind is kind)
        found: dict[int, None] = {}  # in the order asked
        for word in words:
            spec = TrackSpec(word)
            number, language = spec.number, spec.language
            matched = {
                t.index
                for t in of_kind
                if (number is not None and t.number == number)
                or (language is not None and _language_matches(t.language, language))
            }
            if not matched and spec.optional:
                matched_none.append(f"{option} {word}")
            elif not matched:
                raise StreamChoiceError(
                    _matches_none(_named(f"{kind.value}_tracks"), word, kind, of_kind, source),
                    option=option,
                    spec=word,
                    tracks=of_kind,
                )
            found.update(dict.fromkeys(sorted(matched)))
        kept[kind], asked[kind] = frozenset(found), f"{option} {','.join(words)}"
        order[kind] = tuple(found)
    return StreamChoice(tracks, kept, asked, tuple(matched_none), order)


def _language_matches(tag: str | None, code: str) -> bool:
    """Whether a stream tagged ``tag`` (None: untagged, or tagged ``und``) is in the language ``code``;
    ``und`` (undetermined, as the messages and ``alpha2 probe`` name an untagged stream) matches the
    untagged streams. Found by an outside pass: ``--audio-track und`` was refused with 'matches none of
    the 2 audio streams: 0 und (aac), 1 und (aac)'."""
    if code == UNTAGGED:
        return tag is None or tag.strip().lower() == UNTAGGED
    return language_matches(tag, code)


def _matches_none(option: str, word: str, kind: StreamKind, of_kind: tuple[Track, ...], source: str) -> str:
    """``--audio-track fre matches none of the 2 audio streams of 'in.mkv': 0 eng ..., 1 jpn ...``."""
    if not of_kind:
        return f"{option} {word} matches nothing: {source} has no {kind.value} stream"
    listed = ", ".join(t.label() for t in of_kind)
    if len(of_kind) == 1:
        return f"{option} {word} does not match the one {kind.value} stream of {source}: {listed}"
    return f"{option} {word} matches none of the {len(of_kind)} {kind.value} streams of {source}: {listed}"


@dataclass(frozen=True)
class StreamPlan:
    """Which of the input's other streams go into the output beside the transcoded video."""

    copy: tuple[int, ...]
    """Input stream indices handed to the encoder session to copy (audio, subtitles, cover art,
    attachments); the session may still drop some, with the reason."""
    dropped: tuple[DroppedStream, ...]
    """Streams left out by the plan, with why."""
    notes: tuple[str, ...] = ()
    """Streams neither copied nor dropped, said (an MP4 chapter track: kept as the output's chapters)."""
    default_first: tuple[str, ...] = ()
    """The kinds (``audio``, ``subtitle``) whose streams in ``copy`` are in the order a person asked
    (``--audio-track fra,eng``): the first kept takes the default (the copier's ``default_first``)."""


def plan_streams(
    streams: tuple[InputStream, ...],
    video_index: int,
    options: TranscodeOptions,
    muxer: str | None = None,
    choice: StreamChoice | None = None,
) -> StreamPlan:
    """Keep every stream the output may hold, as FFmpeg keeps what its container takes: all audio and
    subtitles (but with ``--no-audio`` / ``--no-subtitles``; with ``--audio-track`` /
    ``--subtitle-track``, those ``choice`` keeps: :func:`choose_streams`), cover art, attachments; one
    video stream is transcoded, data tracks are not written. What is left out is listed with the
    reason. An MP4 / MOV chapter track is
    the input's chapters, which the output's ``muxer`` keeps as its own chapters (said in ``notes``), or
    has no place for (dropped); a MOV timecode track is the start timecode the video's tag repeats,
    which MOV, MP4, Matroska and NUT outputs keep (said in ``notes``) and others drop."""
    if choice is None and (options.audio_tracks is not None or options.subtitle_tracks is not None):
        raise InvalidInputError(
            "plan_streams: the options choose streams by number or language (audio_tracks, "
            "subtitle_tracks): pass choice=choose_streams(tracks, options)"
        )
    copy: list[int] = []
    dropped: list[DroppedStream] = []
    notes: list[str] = []
    for stream in streams:
        if stream.index == video_index:
            if stream.alpha_beside:
                # Found by an outside pass: a VP9 with alpha came out opaque, the summary saying 'same
                # size, pixel format and colour' (ffmpeg drops it the same way, and says nothing either).
                notes.append(
                    "the video's alpha, stored beside its pictures (WebM's alpha_mode), is not decoded "
                    "by FFmpeg's decoder: dropped, the output is opaque"
                )
            continue
        why: str | None = None
        if stream.chapter_track:
            if muxer is None or muxer in CHAPTER_MUXERS:
                notes.append(f"stream {stream.index} (the chapter track): its chapters kept as the output's")
            else:
                dropped.append(
                    DroppedStream(
                        stream.index,
                        stream.kind,
                        "chapters",
                        f"the chapter track: the {muxer} container holds no chapters",
                    )
                )
            continue
        if stream.kind is StreamKind.VIDEO and not stream.attached_picture:
            why = f"one video stream is transcoded (stream {video_index})"
        elif stream.kind is StreamKind.AUDIO and not options.audio:
            why = "--no-audio"
        elif stream.kind is StreamKind.SUBTITLE and not options.subtitles:
            why = "--no-subtitles"
        elif choice is not None and choice.left_out(stream.index) is not None:
            why = choice.left_out(stream.index)
        elif stream.kind is StreamKind.DATA and stream.codec == "timecode":
            kept = _timecode_kept(stream, streams, video_index, options, muxer)
            if kept is not None:
                notes.append(kept)
                continue
            if muxer is None or muxer in TIMECODE_MUXERS:
                why = "a timecode track the video does not refer to: alpha2 writes no data tracks"
            else:
                why = f"a timecode track: the {muxer} container keeps no timecode"
        elif stream.kind is StreamKind.DATA:
            why = "a data track: alpha2 writes no data tracks"
        elif stream.kind is StreamKind.UNKNOWN:
            why = "a stream of unknown kind"
        if why is None:
            _check_chosen_subtitle(stream, options, muxer, choice)
            copy.append(stream.index)
        else:
            dropped.append(DroppedStream(stream.index, stream.kind, stream.codec, why))
    if choice is None:
        return StreamPlan(tuple(copy), tuple(dropped), tuple(notes))
    return StreamPlan(
        tuple(choice.arrange(copy)), tuple(dropped), tuple(notes), tuple(k.value for k in choice.order)
    )


def _check_chosen_subtitle(
    stream: InputStream, options: TranscodeOptions, muxer: str | None, choice: StreamChoice | None
) -> None:
    """Refuse a subtitle stream ``--subtitle-track`` named (no word of it optional, ``eng?``) that the
    output's ``muxer`` cannot hold: the output without it was written and the exit was 0, the stream
    dropped in a note (ffmpeg refuses such an explicit ``-map`` too).

    Raises:
        StreamChoiceError: the choice and why the container cannot hold it, before anything is written.
    """
    words = options.subtitle_tracks
    if stream.kind is not StreamKind.SUBTITLE or muxer is None or choice is None or words is None:
        return
    if any(TrackSpec(word).optional for word in words):
        return  # 'where it has one': a stream the container cannot hold may be left out, said
    why = subtitle_not_held(muxer, stream.codec)
    if why is None:
        return
    option = TRACK_OPTIONS[StreamKind.SUBTITLE.value]
    track = next((t for t in choice.tracks if t.index == stream.index), None)
    named = track.label() if track is not None else f"stream {stream.index} ({stream.codec})"
    raise StreamChoiceError(
        f"{_named('subtitle_tracks')} {','.join(words)} chose the subtitle stream {named}, which the output "
        f"cannot hold: {why}; {_named('subtitles=False')} leaves the subtitles out",
        option=option,
        spec=",".join(words),
        tracks=tuple(t for t in choice.tracks if t.kind is StreamKind.SUBTITLE),
    )


def _timecode_kept(
    track: InputStream,
    streams: tuple[InputStream, ...],
    video_index: int,
    options: TranscodeOptions,
    muxer: str | None,
) -> str | None:
    """The note of a MOV timecode track whose start the output keeps: its ``muxer`` writes it again
    from the video's ``timecode`` tag, copied with the video's tags. The timecode is the input's first
    frame's: a cut (``--from``) does not move it, which is said. None where it is not kept."""
    video = next((s for s in streams if s.index == video_index), None)
    start = video.timecode if video is not None else None
    where = TIMECODE_MUXERS.get(muxer or "")
    if start is None or where is None:
        return None
    note = f"stream {track.index} (the timecode track): its start {start} kept as {where}"
    if options.from_seconds > 0:
        note += (
            f", not moved by --from: the output's first frame, the input's at {options.from_seconds:g} s, "
            f"is said to be at {start}"
        )
    return note
