"""The input's other streams (audio, subtitles, cover art, attachments, data) and copying them.

:func:`input_streams` lists what a container holds, as the demuxer says (before decoding);
:class:`StreamCopier` copies the streams asked for into an output container beside the encoded video:
packets as they are where the output's muxer holds their codec, audio decoded and encoded again where
it does not, cover art as the container keeps it (an MP4 ``covr`` picture, a Matroska attachment),
attachments into Matroska. What it cannot keep it reports as a :class:`DroppedStream` with the reason,
never silently: a subtitle codec the container has no place for, audio whose decoder cannot open (a
damaged ``CodecPrivate``: the copy would not play either). Timestamps are shifted by the output's start
and made increasing per stream (:class:`~alpha2.ffmpeg_bridge.timestamps.TimestampFixer`).

Audio encoded again keeps its channel layout where the encoder takes it (Opus's 5.1, AAC's 7.1; a
downmix that cannot be helped is said), and a lossless source stays lossless where the container holds
a lossless codec (FLAC, or the source's own when cut). PCM is not copied into MP4, whose PCM older
players read as noise.

As ``ffmpeg`` does by default, the copier also carries the input's tags over: the container's (title
...), and each kept stream's tags (language, title, handler name) and dispositions (default, forced,
hearing impaired ...; those the output's container cannot hold said), the output's video taking those
of the input's video (:func:`copy_tags`), and the chapters (moved with the output's start, cut to the
part; said where not a plain copy).
"""

from __future__ import annotations

import contextlib
import enum
import fractions
import functools
import io
import itertools
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import av
import av.audio.stream
import av.container
import av.error
import av.packet
import av.stream
import numpy as np

from alpha2.ffmpeg_bridge.channel_layouts import (
    PLANAR_CHANNELS_PYAV_READS,
    ChannelOrder,
    interleaved,
    kept_on_time,
    local_name,
    make_layouts_safe,
    open_input,
    packed_frame,
    with_layout,
)
from alpha2.ffmpeg_bridge.errors import EncoderError, from_ffmpeg
from alpha2.ffmpeg_bridge.timestamps import TimestampAdjustments, TimestampFixer
from alpha2.gpu.errors import InvalidInputError

__all__ = [
    "CHAPTER_MUXERS",
    "AudioTarget",
    "DroppedStream",
    "InputStream",
    "StreamCopier",
    "StreamKind",
    "add_audio_encoder",
    "container_duration_seconds",
    "copy_tags",
    "describe_holdings",
    "encoder_layout",
    "encoder_rate",
    "input_streams",
    "is_lossless_audio",
    "probe_streams",
    "stream_kind",
]

SOUNDLESS_MUXERS = frozenset({"gif"})
"""Muxers of pictures alone: an input's audio is dropped, and said."""

SUBTITLE_MUXERS = frozenset({"matroska", "mp4", "ipod", "mov", "webm"})
"""Muxers alpha2 copies subtitle packets into (each where its codec list takes the subtitle codec:
Matroska text and bitmap subtitles, MP4 / M4V (FFmpeg's ``ipod`` muxer) / MOV ``mov_text``, WebM
WebVTT)."""

COVER_ART_MUXERS = frozenset({"mp4", "mov", "matroska", "mp3", "flac"})
"""Muxers that keep cover art: MP4 / MOV as an attached picture (``covr``), Matroska as an attachment,
MP3 (ID3v2 APIC) and FLAC (a PICTURE block) as an attached picture. Not M4V or M4A: FFmpeg's ``ipod``
muxer takes no picture codec (MJPEG, PNG)."""

ATTACHMENT_MUXERS = frozenset({"matroska"})
"""Muxers that hold attachments (fonts and other files)."""

PREROLL_SECONDS = 0.5
"""Audio decoded before a cut's start (and dropped), so that the first samples kept are whole: a
decoder started cold gives a ramp (AAC's overlapping transforms)."""

SEEK_AFTER_SECONDS = 10.0
"""A cut starting further in than this seeks the copy's input there (MP4 / MOV and Matroska, whose
index lands at or before the time) instead of reading the file from its start."""

CUT_TAIL_SECONDS = 1.0
"""After a cut's end, packets are read this much further (interleaving) before the copy stops."""

_INDEXED_DEMUXERS = ("mov", "mp4", "matroska", "webm")

CHAPTER_MUXERS = frozenset({"mp4", "mov", "ipod", "matroska", "webm", "nut"})
"""Muxers that write chapters (MPEG-TS and AVI have no place for them)."""

_PICKED_MARKS = (
    "forced",
    "hearing_impaired",
    "visual_impaired",
    "comment",
    "original",
    "dub",
    "captions",
    "descriptions",
)

_MARKLESS = ("mov", "ipod", "avi", "ogg")
_MATROSKA_MARKS = frozenset({"forced", "hearing_impaired", "visual_impaired", "comment", "original", "dub"})
_MP4_MARKS = frozenset({"forced", "hearing_impaired", "visual_impaired", "comment", "dub", "captions"})

MARKS_HELD: dict[tuple[str, str], frozenset[str]] = {
    ("matroska", "audio"): _MATROSKA_MARKS,
    ("matroska", "subtitle"): _MATROSKA_MARKS | {"descriptions"},
    ("webm", "audio"): frozenset({"forced"}),
    ("webm", "subtitle"): frozenset({"forced", "captions", "descriptions"}),
    ("mp4", "audio"): _MP4_MARKS | {"descriptions"},
    ("mp4", "subtitle"): _MP4_MARKS | {"descriptions"},
    ("nut", "audio"): frozenset({"comment", "original", "dub"}),
    ("nut", "subtitle"): frozenset({"comment", "original", "dub"}),
    # MPEG-TS: the language descriptor's audio type (hearing / visually impaired, read back with the
    # descriptions mark too), the DVB subtitling descriptor's hard-of-hearing type.
    ("mpegts", "audio"): frozenset({"hearing_impaired", "visual_impaired"}),
    ("mpegts", "subtitle"): frozenset({"hearing_impaired"}),
    **{(muxer, kind): frozenset() for muxer in _MARKLESS for kind in ("audio", "subtitle")},
}
"""The marks (FFmpeg's dispositions a person picks a stream by, the default aside) each muxer writes
for an audio or subtitle stream, as FFmpeg 8's muxers do (read back with PyAV): others are lost, and
said. Muxers not named here are not judged."""

TAGS_HELD: dict[str, frozenset[str]] = {"mpegts": frozenset({"service_name", "service_provider"})}
"""Muxers that write only these container tags (FFmpeg's MPEG-TS muxer: its service description, the
``title`` standing in for a missing ``service_name``) and, like the marks of :data:`MARKS_HELD`, no
stream titles and no default mark (read back with PyAV): what else a transcode carries over is lost,
and said. Muxers not named here write the tags they are given."""

_TAGS_THE_MUXER_WRITES = frozenset(
    {"encoder", "major_brand", "minor_version", "compatible_brands", "duration"}
)

TIMECODE_MUXERS = {
    "mov": "the output's timecode track (tmcd)",
    "mp4": "the output's timecode track (tmcd)",
    "matroska": "the output video's TIMECODE tag",
    "webm": "the output video's TIMECODE tag",
    "nut": "the output video's timecode tag",
}
"""Muxers that keep a start timecode, from the ``timecode`` tag of the video stream (copied from the
input's), and where: MOV and MP4 write a timecode track of their own, Matroska and NUT the tag (MPEG-TS,
AVI and the ipod muxer's .m4v keep none)."""

DECODE_CHECK_PACKETS = 8
"""Packets of a copied audio stream decoded before the copy, to learn that its decoder opens and gives
sound (packets its demuxer marks as discarded pre-roll, such as those an MP4 edit list skips, do not
count: they decode to nothing by design)."""

DECODE_CHECK_MAX_PACKETS = 4096
"""At most this many packets of a stream are read in the decode check, discarded pre-roll included."""

AUDIO_MUXER_REFUSES = frozenset({("mov", "flac"), ("mov", "opus"), ("mov", "truehd")})
"""(muxer, codec) pairs the container's tags list but FFmpeg refuses when it writes the header ("flac
only supported in MP4"): such a stream is encoded again rather than copied, and not chosen."""

TS_VIDEO = frozenset({"mpeg1video", "mpeg2video", "mpeg4", "h264", "hevc", "cavs", "dirac", "vc1", "vvc"})
"""Video codecs FFmpeg's MPEG-TS muxer gives a stream type; any other it writes as a data stream that
nothing reads back as video (AV1 too: private data, which FFmpeg's demuxer reads as ``bin_data``)."""

VIDEO_MUXER_REFUSES: dict[tuple[str, str], str] = {
    ("mov", "vp9"): "FFmpeg's mov muxer takes vp9 only in .mp4",
    ("mov", "av1"): "FFmpeg's mov muxer takes av1 only in .mp4",
    ("mov", "vp8"): "FFmpeg's mov muxer takes no vp8",
}
"""(muxer, codec) pairs of a copied video that FFmpeg refuses when it writes the header or the first
packet ("vp9 only supported in MP4"; VP8: 'Not yet implemented in FFmpeg' mid-run; the copy said only
'Invalid argument'), and why they are refused."""

TS_AUDIO = frozenset({"mp2", "mp3", "aac", "aac_latm", "ac3", "eac3", "dts", "truehd", "opus", "s302m"})
"""Audio codecs FFmpeg's MPEG-TS muxer gives a stream type; any other (FLAC, PCM, Vorbis ...) it writes
as a data stream that nothing plays."""


_ASC_MUXERS = frozenset({"avi"})
"""Muxers that need AAC's AudioSpecificConfig (the stream's extradata) and cannot make it from ADTS
headers: ADTS AAC is encoded again for them (found writing each codec into each output)."""


_FRAME_CLOCK_COPIES = frozenset({"avi"})
"""Muxers whose clock is one frame (encode.FRAME_CLOCK_MUXERS): a copied video is given its frame rate's."""


def _constant_rate(stream_in: Any) -> fractions.Fraction | None:
    """The video's frame rate where the demuxer finds it constant (the average and the guessed rate
    agree); None: variable, or not known."""
    average, guessed = stream_in.average_rate, stream_in.guessed_rate
    if not average or not guessed or fractions.Fraction(average) != fractions.Fraction(guessed):
        return None
    return fractions.Fraction(average)


def _adts_refusal(muxer: str, codec: str, stream_in: Any) -> str | None:
    """Why ``muxer`` cannot take this AAC stream's packets as they are: ADTS AAC (from MPEG-TS, or a raw
    .aac) has no AudioSpecificConfig, which the AVI muxer needs and has no filter to make ('writing stream
    1 (audio aac): Invalid argument' mid-run of 'alpha2 transcode x.ts y.avi'); None: it can."""
    if muxer in _ASC_MUXERS and codec == "aac" and not bytes(stream_in.codec_context.extradata or b""):
        return f"the {muxer} container cannot hold aac in its ADTS form (as MPEG-TS carries it)"
    return None


def audio_refused(muxer: str, codec: str) -> bool:
    """Whether ``muxer`` cannot be given ``codec`` audio as it is (:data:`AUDIO_MUXER_REFUSES`, MPEG-TS's
    data streams)."""
    return (muxer, codec) in AUDIO_MUXER_REFUSES or (muxer == "mpegts" and codec not in TS_AUDIO)


def _refused_why(muxer: str, codec: str) -> str:
    """Why :func:`audio_refused` refuses ``codec`` audio in ``muxer``, as a report says it."""
    if muxer == "mpegts":
        return f"the mpegts container writes {codec} as a data stream nothing plays"
    return f"FFmpeg writes {codec} into .mp4 only, not into the {muxer} container"


LOSSLESS_MAX_CHANNELS = 8
"""The most channels FLAC and ALAC hold."""

LOSSLESS_AUDIO_TARGETS = ("flac", "alac")
"""Lossless codecs a lossless source is encoded again to (the first its container holds), where it must
be encoded again: lossless stays lossless."""

PCM_NOT_COPIED_INTO = frozenset({"mp4", "ipod"})
"""Muxers PCM is not copied into: MP4's PCM (``ipcm``, FFmpeg 6.0 on) reads as noise in older players
and FFmpeg (5.1 takes it for 16-bit big-endian), so it is encoded again, as ``ffmpeg``'s default does."""

_LAYOUTS = (
    "mono",
    "stereo",
    "2.1",
    "3.0",
    "3.0(back)",
    "4.0",
    "quad",
    "quad(side)",
    "3.1",
    "5.0",
    "5.0(side)",
    "4.1",
    "5.1",
    "5.1(side)",
    "6.0",
    "6.0(front)",
    "hexagonal",
    "6.1",
    "6.1(back)",
    "6.1(front)",
    "7.0",
    "7.0(front)",
    "7.1",
    "7.1(wide)",
    "7.1(wide-side)",
    "octagonal",
)
"""FFmpeg's named channel layouts, tried in this order (after the source's own) for an encoder that does
not take the source's layout; those sharing most channels with it first."""

TEXT_SUBTITLE_CODECS = frozenset({"subrip", "srt", "mov_text", "webvtt", "text", "ass", "ssa"})
"""Subtitle codecs whose packets are text (MP4 timed text: a length, the text, style boxes; ASS / SSA:
a dialogue line's fields, the text last)."""

_ASS_FIELDS_BEFORE_TEXT = 8
"""Fields of FFmpeg's ASS packet before its text: ReadOrder, Layer, Style, Name, MarginL, MarginR,
MarginV, Effect."""


def subtitle_not_held(muxer: str, codec: str) -> str | None:
    """Why the ``muxer``'s output cannot hold a subtitle stream of ``codec`` even converted, where that
    is sure before anything is written (no subtitles at all; a picture-based one into MP4 / MOV or WebM,
    which take text alone, but DVD subtitles into MP4); None where it is kept, converted, or left to the
    copier to find out (which drops it then, with its reason)."""
    if muxer not in SUBTITLE_MUXERS:
        return f"the {muxer} container holds no subtitles alpha2 can copy (.mkv does)"
    if muxer == "matroska" or codec in TEXT_SUBTITLE_CODECS:
        return None
    if (muxer in ("mp4", "ipod", "mov") and codec != "dvd_subtitle") or muxer == "webm":
        return f"the {muxer} container holds text subtitles only, not {codec} pictures (.mkv holds them)"
    return None


TEXT_SUBTITLE_TARGETS = {
    "matroska": "subrip",
    "mp4": "mov_text",
    "ipod": "mov_text",
    "mov": "mov_text",
    "webm": "webvtt",
}
"""The text subtitle codec each muxer takes, which other plain-text subtitles are converted to."""

CONTAINER_TAGS_NOT_COPIED = frozenset({"creation_time", "company_name", "product_name", "product_version"})
"""Container tags about the input's making, which FFmpeg leaves out of its output's (``encoder`` the
muxer writes itself)."""

STREAM_TAGS_OF_THE_CODING = frozenset(
    {
        "encoder",
        "duration",
        "bps",
        "number_of_frames",
        "number_of_bytes",
        "_statistics_tags",
        "_statistics_writing_app",
        "_statistics_writing_date_utc",
        "rotate",
        "alpha_mode",
    }
)
"""Stream tags that describe the input's coded packets (its encoder, mkvmerge's statistics, with or
without a ``-LANG`` suffix; an old rotation tag; WebM's ALPHA_MODE, which says the VP9 packets carry
alpha): not copied to a stream encoded again, cut, or converted, where they would be wrong (FFmpeg
drops ``encoder`` alone; the Matroska muxer writes its own duration)."""

_TAGS = re.compile(r"<[^>]*>|\{\\[^}]*\}")

_IMAGE_MIMETYPES = {"mjpeg": ("image/jpeg", "jpg"), "png": ("image/png", "png"), "bmp": ("image/bmp", "bmp")}


class StreamKind(enum.Enum):
    """What a stream carries."""

    VIDEO = "video"
    AUDIO = "audio"
    SUBTITLE = "subtitle"
    DATA = "data"
    ATTACHMENT = "attachment"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class InputStream:
    """One stream of an input container, as its demuxer describes it."""

    index: int
    """Index of the stream in the container."""
    kind: StreamKind
    """What it carries."""
    codec: str
    """FFmpeg's codec name (``aac``, ``subrip``, ``mjpeg``); for data without a codec, what it holds
    (``timecode``) or ""; for an attachment, its MIME type."""
    start_seconds: float | None = None
    """Its first timestamp in seconds, when the demuxer knows it."""
    attached_picture: bool = False
    """A video stream that is one picture attached to the file (cover art), not a video."""
    width: int = 0
    """Picture width in pixels (video)."""
    height: int = 0
    """Picture height in pixels (video)."""
    channels: int = 0
    """Audio channels."""
    sample_rate: int = 0
    """Audio samples per second."""
    filename: str = ""
    """An attachment's file name."""
    chapter_track: bool = False
    """An MP4 / MOV chapter track (a text track FFmpeg's mov demuxer reads as the file's chapters and
    shows as a data stream): its content is the chapters, which are copied as such."""
    timecode: str | None = None
    """The start timecode its ``timecode`` tag gives (``01:00:00:00``): a MOV timecode track's, and
    the video stream's that refers to it; None when untagged."""
    alpha_beside: bool = False
    """Video: its alpha is stored beside the pictures (WebM's ``alpha_mode``: VP8 / VP9 alpha in
    BlockAdditions), which FFmpeg's decoders leave out."""

    def describe(self) -> str:
        """``audio (aac, 2 ch, 48000 Hz)``, ``cover art (mjpeg 300x300)``, ``attachment font.ttf`` ..."""
        if self.attached_picture:
            return f"cover art ({self.codec} {self.width}x{self.height})"
        if self.kind is StreamKind.VIDEO:
            return f"video ({self.codec} {self.width}x{self.height})"
        if self.kind is StreamKind.AUDIO:
            return f"audio ({self.codec}, {self.channels} ch, {self.sample_rate} Hz)"
        if self.kind is StreamKind.ATTACHMENT:
            return f"attachment {self.filename or '(unnamed)'}"
        if self.chapter_track:
            return "the chapter track"
        return f"{self.kind.value} ({self.codec or 'unknown codec'})"


@dataclass(frozen=True)
class DroppedStream:
    """A stream of the input the output does not keep, and why."""

    index: int
    """Index of the stream in the input."""
    kind: StreamKind
    """What it carries."""
    codec: str
    """Its codec (or what it holds)."""
    reason: str
    """Why it is not in the output."""

    def as_dict(self) -> dict[str, Any]:
        """For JSON: ``{index, kind, codec, reason}``."""
        return {"index": self.index, "kind": self.kind.value, "codec": self.codec, "reason": self.reason}


_KINDS = {kind.value: kind for kind in StreamKind}


def stream_kind(stream: Any) -> StreamKind:
    """What a PyAV stream carries, by its ``type`` (UNKNOWN for a type alpha2 does not name)."""
    return _KINDS.get(stream.type, StreamKind.UNKNOWN)


def _codec_name(stream: Any) -> str:
    """Audio and video by the codec's own name (``mp3``, as ffprobe and the summary say it), not the
    decoder's (``mp3float``); subtitles by their decoder's (``srt``), which names the format (ASS as
    ``ass``: :func:`~alpha2.ffmpeg_bridge.media.subtitle_codec_name`)."""
    cc = getattr(stream, "codec_context", None)
    if cc is not None:
        from alpha2.ffmpeg_bridge.media import codec_name, subtitle_codec_name  # (media imports this module)

        return codec_name(cc) if stream.type in ("audio", "video") else subtitle_codec_name(cc)
    metadata = stream.metadata
    if stream.type == "attachment":
        return str(metadata.get("mimetype", "") or "")
    if "timecode" in metadata:
        return "timecode"
    if stream.type == "data" and getattr(stream, "name", None):
        # FFmpeg's codec of a data stream (bin_data, klv, scte_35), as the probe says it: a transcode
        # said 'data (unknown codec)' of a file 'alpha2 probe' showed as '#0 data bin_data'.
        return str(stream.name)
    return str(metadata.get("handler_name", "") or "")


def chapter_tracks(container: av.container.InputContainer) -> frozenset[int]:
    """The streams of an MP4 / MOV that are its chapter track: FFmpeg's mov demuxer reads such a text
    track into the file's chapters and leaves it a data stream without a codec, one sample a chapter."""
    if "mov" not in container.format.name.split(","):
        return frozenset()
    data = [s for s in container.streams if s.type == "data" and getattr(s, "codec_context", None) is None]
    if not data:
        return frozenset()
    count = len(container.chapters())
    if not count:
        return frozenset()
    return frozenset(s.index for s in data if s.frames == count and "timecode" not in s.metadata)


def input_streams(container: av.container.InputContainer) -> tuple[InputStream, ...]:
    """Every stream of ``container``, described without decoding."""
    found = []
    attached = int(av.stream.Disposition.attached_pic)
    chapter_indices = chapter_tracks(container)
    for stream in container.streams:
        kind = stream_kind(stream)
        start = None
        if stream.start_time is not None and stream.time_base is not None:
            start = float(stream.start_time * stream.time_base)
        cc: Any = getattr(stream, "codec_context", None)
        found.append(
            InputStream(
                index=stream.index,
                kind=kind,
                codec=_codec_name(stream),
                start_seconds=start,
                attached_picture=kind is StreamKind.VIDEO and bool(int(stream.disposition) & attached),
                width=int(getattr(cc, "width", 0) or 0) if kind is StreamKind.VIDEO else 0,
                height=int(getattr(cc, "height", 0) or 0) if kind is StreamKind.VIDEO else 0,
                channels=int(getattr(cc, "channels", 0) or 0) if kind is StreamKind.AUDIO else 0,
                sample_rate=int(getattr(cc, "sample_rate", 0) or 0) if kind is StreamKind.AUDIO else 0,
                filename=str(stream.metadata.get("filename", "") or "")
                if kind is StreamKind.ATTACHMENT
                else "",
                chapter_track=stream.index in chapter_indices,
                timecode=stream.metadata.get("timecode") or stream.metadata.get("TIMECODE") or None,
                alpha_beside=kind is StreamKind.VIDEO
                and str(stream.metadata.get("alpha_mode", "") or "").strip() == "1",
            )
        )
    return tuple(found)


def probe_streams(path: str | os.PathLike[str], max_pixels: int | None = None) -> tuple[InputStream, ...]:
    """The streams of the file at ``path`` (opened and closed here); empty when it does not open.
    ``max_pixels``: the largest picture FFmpeg's probing may decode (see ``probe_options``)."""
    from alpha2.ffmpeg_bridge.media import probe_options

    try:
        options = probe_options(max_pixels)
        with open_input(os.fspath(path), metadata_errors="replace", options=options) as container:
            if not isinstance(container, av.container.InputContainer):
                return ()
            return input_streams(container)
    except (av.error.FFmpegError, OSError):
        return ()


def container_duration_seconds(path: str | os.PathLike[str]) -> float | None:
    """How long the file at ``path`` plays, as its demuxer says: to its end from 0 (an encoder's
    priming samples before 0, such as AAC's in Matroska, do not count). None: it does not say, or
    does not open."""
    try:
        with open_input(os.fspath(path), metadata_errors="replace") as container:
            duration, start = container.duration, container.start_time
    except (av.error.FFmpegError, OSError):
        return None
    if duration is None:
        return None
    return (duration + min(start or 0, 0)) / av.time_base


def describe_holdings(streams: Sequence[InputStream]) -> str:
    """What a file holds, in words: ``audio (aac, 2 ch, 48000 Hz) and cover art (mjpeg 64x64)``."""
    parts = [s.describe() for s in streams]
    if not parts:
        return "no streams"
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def add_audio_encoder(
    out: av.container.OutputContainer,
    rate: int,
    channels: int,
    bit_rate: int | None = None,
    *,
    codec: str | None = None,
    layout: str | None = None,
    sample_format: str | None = None,
) -> tuple[av.audio.stream.AudioStream, int]:
    """An audio encoder stream in ``out``: ``codec`` when given, else Opus for WebM / Ogg (at an Opus
    rate), AAC otherwise, at ``bit_rate`` bits per second when given (a re-encoded source's own), else
    the encoder's default.

    ``layout`` (an FFmpeg channel layout name the encoder takes, see :func:`encoder_layout`) when given,
    else mono or stereo by ``channels``; ``sample_format``: the encoder's, else its first.

    Returns the stream and its sample rate (``rate``, or 48 kHz where Opus does not take ``rate``).
    """
    muxer = out.format.name
    if codec is None:
        codec = "libopus" if ("webm" in muxer or "ogg" in muxer) else "aac"
    if codec == "libopus" and rate not in (8_000, 12_000, 16_000, 24_000, 48_000):
        rate = 48_000  # Opus's rates; a re-encoded source is resampled to it
    stream = out.add_stream(codec, rate=rate)
    assert isinstance(stream, av.audio.stream.AudioStream)
    stream.layout = layout or ("stereo" if channels == 2 else "mono")
    options = encoder_options(codec, str(stream.layout.name), len(stream.layout.channels))
    if options:
        stream.codec_context.options = {**stream.codec_context.options, **options}
    if sample_format is not None:
        stream.format = sample_format
    stream.time_base = fractions.Fraction(1, rate)
    if bit_rate:
        stream.codec_context.bit_rate = bit_rate
    return stream, rate


def encoder_rate(codec: str, rate: int) -> int:
    """The sample rate to encode a source of ``rate`` with ``codec``: its own where the encoder takes it;
    else 48 kHz for Opus, the nearest rate above it (else the highest) for the others (AAC's 96 kHz for
    a 192 kHz source)."""
    try:
        rates = av.codec.Codec(codec, "w").audio_rates
    except (av.error.FFmpegError, ValueError):
        return rate
    if not rates or rate in rates:
        return rate
    if codec in ("libopus", "opus"):
        return 48_000  # a re-encoded source is resampled to it
    above = [r for r in rates if r >= rate]
    return min(above) if above else max(rates)


def unmixable(layout: Any) -> bool:
    """Whether FFmpeg's resampler cannot mix a layout (an ``av.AudioLayout``) into another: ambisonic
    channels, or channels in no known place (the unspecified order). Such channels are passed through
    one for one under the encoder's layout (:func:`with_layout`), or read in FFmpeg's default order
    where they must be mixed down."""
    names = [str(c.name) for c in layout.channels]
    return bool(names) and all(n == "NONE" or n.startswith("AMBI") for n in names)


_OPUS_MISPLACED_COUNTS = frozenset({5, 7})
"""Counts of channels (5.0, 6.1) whose places FFmpeg's libopus wrapper mixes up unless told mapping
family 1: by default it hands libopus the channels in its own order under a stream map for another
(its ``libavcodec_libopus_channel_map``) and writes libopus's family 1 table in the header, so 6.1's
front centre came back at back centre, back centre at side left, side left at front centre (and 5.0's
centre at back right), in FFmpeg's decoder and libopus's alike. Told family 1, it puts the channels in
Vorbis order first (``ff_vorbis_channel_layout_offsets``) for libopus's surround encoder, as opus-tools'
opusenc does, and each comes back in its place; 3.0, quad, 5.1 and 7.1 do by default too."""


def encoder_options(codec: str, layout: str, channels: int) -> dict[str, str]:
    """Options ``codec`` needs to take ``layout`` (its FFmpeg name; ``channels`` of them): Opus's
    mapping family 2 for ambisonics, 255 for more than 8 channels or channels in no known place,
    1 (libopus's default, which holds the named layouts up to 7.1) said outright for 5.0 and 6.1,
    which FFmpeg misplaces otherwise (:data:`_OPUS_MISPLACED_COUNTS`)."""
    if codec not in ("libopus", "opus"):
        return {}
    if layout.startswith("ambisonic"):
        return {"mapping_family": "2"}
    if channels > 8 or layout.endswith(" channels"):
        return {"mapping_family": "255"}
    if channels in _OPUS_MISPLACED_COUNTS:
        return {"mapping_family": "1"}
    return {}


@functools.lru_cache(maxsize=256)
def _encoder_opens(codec: str, layout: str, rate: int) -> bool:
    """Whether FFmpeg's ``codec`` encoder opens with this channel layout and rate."""
    try:
        cc: Any = av.codec.CodecContext.create(codec, "w")
        cc.sample_rate = rate
        cc.layout = layout
        options = encoder_options(codec, layout, len(av.AudioLayout(layout).channels))
        if options:
            cc.options = options
        formats = av.codec.Codec(codec, "w").audio_formats
        if formats:
            cc.format = formats[0].name
        cc.time_base = fractions.Fraction(1, rate)
        cc.open()
    except (av.error.FFmpegError, ValueError, TypeError):
        return False
    return True


_SURROUND_ALIKE = {"SL": "BL", "SR": "BR"}
"""Channels that name the same speakers as others where a layout has one pair or the other."""

_AAC_PLACED = frozenset({"mono", "stereo", "2.1", "3.0", "3.0(back)", "4.0", "quad", "5.0", "5.1", "7.1"})
"""The named layouts FFmpeg's AAC encoder writes in a form FFmpeg's AAC decoder reads back in place: the
seven of ``aac_normal_chan_layouts`` (AAC's channel configurations, ``libavcodec/aacenctab.h``) and the
program config elements it reads back as 2.1, 3.0(back) and quad (measured, a tone per channel). Every
other layout it takes goes into a program config element that reads back as 'N channels' in no known
place: quad(side), 5.0(side) and 5.1(side) (their same speakers here: quad, 5.0, 5.1), and 6.1, 6.1(back),
6.1(front), 7.0 and 7.1(wide), of which none holds 7 or 8 channels in place but 7.1."""


@functools.lru_cache(maxsize=64)
def _mix(source: str, target: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Where FFmpeg's resampler puts each channel of the layout ``source`` (an FFmpeg layout name) mixed
    into ``target``: (channel, the channels of ``target`` it is heard in), measured by passing each
    channel alone through a resampler of the defaults the copier's resampler uses."""
    names = [str(c.name) for c in av.AudioLayout(source).channels]
    into = [str(c.name) for c in av.AudioLayout(target).channels]
    pulses = np.eye(len(names), dtype=np.float32).reshape(1, -1)  # sample i: channel i alone
    frame = av.AudioFrame.from_ndarray(pulses, format="flt", layout=source)
    frame.sample_rate = 48_000
    resampler = av.AudioResampler(format="flt", layout=target, rate=48_000)
    parts = [interleaved(f)[0] for f in [*resampler.resample(frame), *resampler.resample(None)]]
    heard = np.abs(np.concatenate(parts)) > 1e-4  # same rate: no delay, one row a source channel
    return tuple((name, tuple(into[j] for j in np.flatnonzero(heard[i]))) for i, name in enumerate(names))


def _mix_said(source: str, target: str) -> str:
    """Where :func:`_mix` puts the channels of ``source`` that do not go one for one into their own
    place of ``target``, in words (``BC into BL+BR, SL+SR silent``)."""
    mix = _mix(source, target)
    said = [
        f"{name} into {'+'.join(heard)}" if heard else f"{name} left out"
        for name, heard in mix
        if heard != (name,)
    ]
    heard_at = {c for _, heard in mix for c in heard}
    silent = [str(c.name) for c in av.AudioLayout(target).channels if str(c.name) not in heard_at]
    if silent:
        said.append(f"{'+'.join(silent)} silent")
    return ", ".join(said)


def _same_speakers_order(source: list[str], target: list[str]) -> tuple[int, ...] | None:
    """For layouts of the same speakers (:data:`_SURROUND_ALIKE`: 6.1(back)'s BL BR BC are 6.1's SL SR
    BC), the source channel each channel of ``target`` takes; None where they are not the same."""
    alike = [_SURROUND_ALIKE.get(c, c) for c in source]
    if len(source) != len(target) or len(set(alike)) != len(alike):
        return None
    wanted = [_SURROUND_ALIKE.get(c, c) for c in target]
    if set(wanted) != set(alike):
        return None
    return tuple(alike.index(c) for c in wanted)


_FIXED_LAYOUTS = {
    "flac": ("mono", "stereo", "3.0", "quad", "5.0(side)", "5.1(side)", "6.1", "7.1"),
    "alac": ("mono", "stereo", "3.0", "4.0", "5.0", "5.1", "6.1(back)", "7.1(wide)"),
}
"""The layout FLAC and ALAC give each count of channels (1 to 8; FFmpeg's decoders read it back so):
channels in no known place take it."""

_FLOAT_FORMATS = ("flt", "dbl")
_WIDER_THAN_24_BITS = ("pcm_s32", "pcm_u32", "pcm_s64")


def _lossless_said(source_codec: str, source: Any, target: str) -> str:
    """How much of a lossless source's samples ``target`` keeps, decoded to ``source`` (an
    ``av.AudioFormat`` or None): FLAC and ALAC write integers of 24 bits at most (FLAC's 32 only where
    FFmpeg is told to be experimental), so floats and 32-bit samples are rounded."""
    if target in LOSSLESS_AUDIO_TARGETS:
        if source is not None and str(source.name).startswith(_FLOAT_FORMATS):
            return f"its floating-point samples rounded to 24-bit integers: {target} holds no floats"
        if source_codec.startswith(_WIDER_THAN_24_BITS):
            return f"its {source_codec[5:7]}-bit samples rounded to 24 bits, the most {target} holds"
    return "lossless, as the source"


def encoder_layout(codec: str, layout: Any, rate: int) -> str | None:
    """The channel layout (its FFmpeg name) to encode a source of ``layout`` (an ``av.AudioLayout``)
    with ``codec`` at ``rate``: the source's own where the encoder takes it (for AAC, where it reads back
    in place: :data:`_AAC_PLACED`); else one of the same speakers (5.1 for 5.1(side), 6.1 for
    6.1(back)); else the smallest named layout it takes that holds every one of the source's channels
    (each passed as it is, the others silent: quad as 5.0, as FFmpeg's command line picks for ALAC);
    else one of as many channels (for AAC, or more: 7.1 for 6.1) that shares most channels with the
    source, FFmpeg's resampler mixing the others (:func:`_mix_said`); None where it takes none of as
    many channels (a downmix to stereo is then unavoidable)."""
    name = str(layout.name)
    placed_only = codec == "aac" and not unmixable(layout)

    def takes(other: str) -> bool:
        return _encoder_opens(codec, other, rate) and (not placed_only or other in _AAC_PLACED)

    if takes(name):
        return name
    count = len(layout.channels)
    own = {str(c.name) for c in layout.channels}
    ranked = []
    for rank, other in enumerate(_LAYOUTS):
        if other == name:
            continue
        try:
            names = [str(c.name) for c in av.AudioLayout(other).channels]
        except (ValueError, TypeError):
            continue
        if _same_speakers_order([str(c.name) for c in layout.channels], names) is not None:
            # Side and back pairs name the same surround speakers (FFmpeg's 5.1 and 5.1(side)): the
            # source's own layout, before any other.
            ranked.append((0, 0, 0, rank, other))
        elif len(names) > count and own <= set(names):
            ranked.append((1, len(names), 0, rank, other))  # holds every channel: the smallest first
        elif len(names) == count or (placed_only and len(names) > count):
            # Mixed: the most shared first, then the smallest (AAC places no 7 channels: 7.1 for 6.1).
            ranked.append((2, -len(own & set(names)), len(names), rank, other))
    for *_, other in sorted(ranked):
        if takes(other):
            return other
    return None


def is_lossless_audio(codec: str) -> bool:
    """Whether the audio codec ``codec`` (a decoder's name) is lossless: FLAC, ALAC, PCM, WavPack,
    TrueHD, Monkey's Audio ... (not DTS, whose core is lossy, nor A-law / mu-law PCM)."""
    try:
        found = av.codec.Codec(codec, "r")
    except (av.error.FFmpegError, ValueError):
        return False
    return bool(found.lossless) and (not found.lossy or codec == "wavpack")


@functools.lru_cache(maxsize=64)
def mov_language(code: str) -> str | None:
    """The form of the ISO 639 code ``code`` that FFmpeg's MOV muxer writes (its QuickTime table holds
    ``ger``, ``fra``, ``dut``, ``ces``, a mix of both three-letter forms, and writes any other as no
    language), asked of the muxer itself; None: it holds none of the language's forms."""
    import pycountry

    found = pycountry.languages.get(alpha_3=code) or pycountry.languages.get(bibliographic=code)
    forms = [code] + [str(getattr(found, f)) for f in ("alpha_3", "bibliographic") if getattr(found, f, None)]
    for form in dict.fromkeys(forms):
        buffer = io.BytesIO()
        try:
            with av.open(buffer, "w", format="mov") as probe:
                stream: Any = probe.add_stream("pcm_s16le", rate=8000, layout="mono")
                stream.metadata["language"] = form
                frame = av.AudioFrame(format="s16", layout="mono", samples=16)
                frame.sample_rate, frame.pts = 8000, 0
                for packet in [*stream.encode(frame), *stream.encode(None)]:
                    probe.mux(packet)
            buffer.seek(0)
            with open_input(buffer) as written:
                if written.streams[0].metadata.get("language") == form:
                    return form
        except (av.error.FFmpegError, ValueError, IndexError):
            return None
    return None


def copy_tags(source: dict[str, str], target: dict[str, str], left_out: frozenset[str] = frozenset()) -> None:
    """Copy the tags of ``source`` that ``target`` does not have (names compared without case, as
    FFmpeg's dictionaries do), but those in ``left_out`` (lower case; a ``-LANG`` suffix ignored)."""
    have = {key.lower() for key in target}
    for key, value in source.items():
        name = key.lower()
        if name in have or name in left_out or name.split("-", 1)[0] in left_out:
            continue
        target[key] = value
        have.add(name)


def stream_tags(stream: Any) -> dict[str, str]:
    """A stream's tags with its title as ``title``: the MP4 / QuickTime demuxer says a track's name
    (``udta/name``) as ``name``, a key no muxer writes back as one (the MP4 muxer writes the name from
    ``title`` alone, the Matroska one a NAME tag, not the track's name), so copied as it is the title
    was lost (by ``ffmpeg`` too)."""
    tags = dict(stream.metadata)
    keys = {key.lower(): key for key in tags}
    if "name" in keys and "title" not in keys:
        tags["title"] = tags.pop(keys["name"])
    return tags


def _main_video(source: av.container.InputContainer) -> Any:
    """The input's video stream a decoder picks (FFmpeg's best, else the first), cover art left out;
    None when it has none."""
    attached = int(av.stream.Disposition.attached_pic)
    moving = [s for s in source.streams.video if not int(s.disposition) & attached]
    if not moving:
        return None
    try:
        best = source.streams.best("video")
    except Exception:
        best = None
    return best if best in moving else moving[0]


def _undecodable(path: str, audio: Sequence[int]) -> dict[int, str]:
    """Audio streams (by index) whose decoder does not open or whose first packets do not decode, with
    why; one read of the file."""
    if not audio:
        return {}
    failed: dict[int, str] = {}
    try:
        container = open_input(path, metadata_errors="replace")
    except (av.error.FFmpegError, OSError):
        return {}
    with container:
        assert isinstance(container, av.container.InputContainer)
        streams = []
        for stream in container.streams:
            if stream.index not in audio or stream.codec_context is None:
                continue
            try:
                stream.codec_context.open()
            except av.error.FFmpegError as exc:
                # A damaged CodecPrivate (Opus / Vorbis headers cut short) stops the decoder here.
                failed[stream.index] = f"its decoder does not open: {exc.strerror or exc}"
                continue
            streams.append(stream)
        left = {s.index: DECODE_CHECK_PACKETS for s in streams}
        read = dict.fromkeys(left, 0)
        decoded: set[int] = set()
        try:
            for packet in container.demux(*streams) if streams else ():
                index = packet.stream.index
                if index in decoded or index in failed or not packet.size:
                    continue
                try:
                    if packet.decode():
                        decoded.add(index)
                except av.error.FFmpegError as exc:
                    failed[index] = str(exc.strerror or exc)
                read[index] += 1
                if not packet.is_discard:  # pre-roll an edit list skips decodes to nothing
                    left[index] -= 1
                if index in decoded or index in failed:
                    pass
                elif left[index] <= 0:
                    failed[index] = f"no sound from its first {DECODE_CHECK_PACKETS} packets"
                elif read[index] >= DECODE_CHECK_MAX_PACKETS:
                    failed[index] = f"no sound from its first {read[index]} packets, all discarded pre-roll"
                if all(i in decoded or i in failed for i in left):
                    break
        except av.error.FFmpegError:
            pass  # damaged data further on is the copy's to meet and report
    return failed


@dataclass
class _Entry:
    """One stream being copied (or decoded and encoded again)."""

    source: InputStream
    stream_in: Any
    stream_out: Any
    fixer: TimestampFixer
    reencode: bool = False
    resampler: Any = None
    rate: int = 0
    samples: int | None = None
    frames: int = 0
    packets: int = 0
    written: int = 0
    """Packets muxed into the output, copied or encoded again (none: the output's track is empty)."""
    text_to: str | None = None
    """The text subtitle codec the packets are converted to (None: copied as they are)."""
    order: ChannelOrder | None = None
    """A custom channel order whose decoded samples are put into FFmpeg's (encoded again only)."""
    last_dts: int | None = None
    """The decoding time of the stream's packet written last (subtitles: kept in order)."""
    read_end: int | None = None
    """The latest end (pts + duration, in the input stream's time base) of the packets read, before any
    retiming: where the stream's input ends (:meth:`StreamCopier.read_end`)."""
    relabel: str | None = None
    """The layout decoded frames are given, their samples unmoved, before the resampler (ambisonic or
    unplaced channels, which it cannot mix)."""
    moved: ChannelOrder | None = None
    """Where decoded samples go, unmixed, in the encoder's layout of the same speakers (6.1(back) into
    6.1: BL, BR, BC as SL, SR, BC), before the resampler."""
    in_origin: float | None = None
    """Encoded again: the time (s) of the first decoded frame, where the samples fed are counted from."""
    in_fed: float = 0.0
    """Encoded again: the seconds of samples fed to the resampler (silence put in, overlaps left out)."""
    gaps: list[tuple[float, float]] = field(default_factory=list)
    """Encoded again: (where, how long) of each gap in the timestamps filled with silence, in seconds."""
    overlaps: list[tuple[float, float]] = field(default_factory=list)
    """Encoded again: (where, how long) of each overlap in the timestamps whose repeated samples were
    left out."""


@dataclass
class _Picture:
    """Cover art to write once: its stream (MP4 / MOV) and its coded picture."""

    source: InputStream
    stream_out: Any
    data: bytes


@dataclass
class CopyReport:
    """What a :class:`StreamCopier` kept, changed and dropped."""

    kept: list[InputStream] = field(default_factory=list)
    """Streams in the output (copied, or audio encoded again)."""
    dropped: list[DroppedStream] = field(default_factory=list)
    """Streams asked for that the output does not hold, with why."""
    notes: list[str] = field(default_factory=list)
    """What was done to the audio otherwise than a plain copy (encoded again, ending early)."""
    other_notes: list[str] = field(default_factory=list)
    """What was done to the other streams otherwise than a plain copy (subtitles converted)."""

    def audio_note(self) -> str | None:
        """:attr:`notes` in one line, each said once (``(20 streams)`` after one that 20 streams share:
        a file of 20 tracks encoded again the same way); None when there are none."""
        counts: dict[str, int] = {}
        for note in self.notes:
            counts[note] = counts.get(note, 0) + 1
        said = [note if n == 1 else f"{note} ({n} streams)" for note, n in counts.items()]
        return "; ".join(said) or None


def _lossless_format(codec: str, source: Any) -> str | None:
    """The sample format to encode a lossless ``codec`` in from a source decoded to ``source`` (an
    ``av.AudioFormat`` or None): the source's own (packed) where the encoder takes it, else the
    smallest as wide, else the widest (FLAC: 16 bits for 16-bit sources, 24 in 32 for wider)."""
    formats = av.codec.Codec(codec, "w").audio_formats or ()
    names = [f.name for f in formats]
    if not names:
        return None
    if source is None:
        return names[0]
    packed = source.packed.name
    if packed in names:
        return str(packed)
    if source.planar.name in names:
        return str(source.planar.name)
    wide = sorted((f.bytes, f.name) for f in formats if f.bytes >= source.bytes)
    return str(wide[0][1]) if wide else str(max((f.bytes, f.name) for f in formats)[1])


def _first_packet(path: str, index: int) -> bytes | None:
    try:
        with open_input(path, metadata_errors="replace") as container:
            assert isinstance(container, av.container.InputContainer)
            for packet in container.demux(container.streams[index]):
                if packet.size:
                    return bytes(packet)
    except (av.error.FFmpegError, OSError, IndexError):
        return None
    return None


_EMPTY_TRACKS_LEFT_OUT = frozenset({"mp4", "mov", "ipod"})
"""Muxers that write no track for a stream given no packet (FFmpeg's MOV muxer family)."""

_TS_NONSTRICT = 0x20000
"""libavformat's AVFMT_TS_NONSTRICT: the muxer takes equal (not only increasing) decode times."""


@dataclass(frozen=True)
class AudioTarget:
    """The encoder every copied audio stream is encoded again with (an audio-only transcode's output
    codec), whatever the container could hold as it is."""

    codec: str
    """The FFmpeg encoder (``libmp3lame``, ``aac``, ``flac``, ``pcm_s24le`` ...)."""
    bit_rate: int | None = None
    """Bits per second; None: the encoder's default (lossless codecs take none)."""
    sample_format: str | None = None
    """The encoder's sample format; None: a lossless codec's as wide as the source, else its first."""


class StreamCopier:
    """Copy streams of an input file into an output container, interleaved with its video.

    Made before the output's header is written (streams and attachments are added then); the encoder's
    loop calls :meth:`mux_until` with each video packet's time, :meth:`finish` at the end.

    Args:
        out: The output container (header not yet written).
        path: The input file.
        indices: Input stream indices to copy (audio, subtitles, cover art, attachments); None: the
            first audio stream.
        shift_seconds: Subtracted from every timestamp (the output starts at zero).
        jump_seconds: A forward jump longer than this is a discontinuity, re-timed; None: kept.
        trim: Cut the streams with the video: nothing before the output's zero, nothing from
            ``end_seconds`` (or :meth:`set_end`) on. Audio is decoded and encoded again, cut to the
            sample (a copy could cut only between packets); subtitles are shortened to the part.
        end_seconds: The output time the streams end at (with ``trim``); None: not known yet.
        window: A remux's cut, in input seconds: ``(start, end)`` (end None: to the end of the input);
            packets are taken whole (the video from the key frame at ``start``). None: everything.
        audio_target: Encode every audio stream again with this encoder (an audio-only transcode);
            None: audio is copied where the container holds it.
        copy_metadata: Carry the input's tags and dispositions over, as ``ffmpeg`` does: the
            container's tags (but :data:`CONTAINER_TAGS_NOT_COPIED`); each kept stream's tags and
            dispositions; those of the input's video to the video streams ``out`` already holds; the
            chapters (moved by ``shift_seconds``, cut to the part with ``trim``). Then,
            as ``ffmpeg`` does, where the output has several video, audio or subtitle streams and none
            of them is the default, the first is made it.
        default_first: The kinds (``"audio"``, ``"subtitle"``) whose streams ``indices`` lists in the
            order a person chose them (``--audio-track fra,eng``): where the input had a default stream
            of that kind, the first of them kept takes the default and the others lose it (said where
            that moves it off the input's default).

    Raises:
        InvalidInputError: ``indices`` is None and the input has no audio stream.
        EncoderError: The input cannot be opened.
    """

    def __init__(
        self,
        out: av.container.OutputContainer,
        path: str,
        indices: Sequence[int] | None = None,
        *,
        shift_seconds: float = 0.0,
        jump_seconds: float | None = None,
        trim: bool = False,
        end_seconds: float | None = None,
        copy_metadata: bool = True,
        window: tuple[float, float | None] | None = None,
        audio_target: AudioTarget | None = None,
        default_first: Sequence[str] = (),
    ) -> None:
        self._out = out
        self._target = audio_target
        self._path = path
        self._shift = fractions.Fraction(shift_seconds).limit_denominator(1_000_000)
        self._jump = jump_seconds
        self._trim = trim
        self._end = end_seconds
        self._window = window
        self._video_done = False  # a window's video passed its end: no later video packet is taken
        self._shown_before_end = 0.0  # where the window's video taken before its end stops showing
        self._past_end: list[tuple[float, float]] = []  # (pts, end) seconds of video taken past its end
        self.report = CopyReport()
        """What was kept, dropped and changed."""
        try:
            source = av.open(local_name(path), mode="r", metadata_errors="replace")
        except av.error.FFmpegError as exc:
            raise from_ffmpeg(exc, f"opening {path!r} to copy its streams", EncoderError) from exc
        assert isinstance(source, av.container.InputContainer)
        try:
            self._orders = make_layouts_safe(source)
        except BaseException:
            source.close()
            raise
        self._in: av.container.InputContainer | None = source
        described = {s.index: s for s in input_streams(source)}
        if indices is None:
            audio = [s.index for s in described.values() if s.kind is StreamKind.AUDIO]
            if not audio:
                source.close()
                raise InvalidInputError(f"audio_from {path!r} has no audio stream")
            indices = audio[:1]
        self._entries: dict[int, _Entry] = {}
        self._timing_said = False  # the audio's gaps and overlaps are said once, at the end
        self._pictures: list[_Picture] = []
        self._copy_metadata = copy_metadata
        ours = list(out.streams)  # the caller's (the encoded video), made before the copies
        if copy_metadata:
            self._copy_container_tags(source, ours)
            self._copy_chapters(source)
        broken = _undecodable(
            path, [i for i in indices if i in described and described[i].kind is StreamKind.AUDIO]
        )
        for index in indices:
            if index not in described:
                raise InvalidInputError(f"{path!r} has no stream {index}")
            self._add(described[index], broken.get(index))
        if copy_metadata:
            for kind in default_first:
                self._default_to_first(source, kind)
            for stream_out, count in _infer_defaults(out):
                # Players show a default subtitle stream unasked: one that was not is a change to say. (A
                # first audio or video stream made the default is the one players take anyway.)
                source_index = next((i for i, e in self._entries.items() if e.stream_out is stream_out), None)
                if stream_out.type == "subtitle" and source_index is not None:
                    self.report.other_notes.append(
                        f"subtitle stream {source_index} made the default, so shown unasked: none of the "
                        f"{count} subtitle streams was (as ffmpeg does)"
                    )
            self._say_tags_lost()
        streams = [source.streams[i] for i in self._entries]
        self._packets: Iterator[av.packet.Packet[Any]] | None = (
            self._demux(source, streams) if streams else None
        )
        self._pending: av.packet.Packet[Any] | None = None
        self._held: list[tuple[_Entry, av.packet.Packet[Any]]] = []

    def set_end(self, seconds: float) -> None:
        """The output time the streams end at (with ``trim``): what is after it is not written."""
        self._end = seconds

    def _demux(
        self, source: av.container.InputContainer, streams: list[Any]
    ) -> Iterator[av.packet.Packet[Any]]:
        """The packets of ``streams``; for a cut far into an indexed file, from a little before it."""
        start = float(self._shift) - SEEK_AFTER_SECONDS / 2
        if (
            not self._trim
            or self._shift < SEEK_AFTER_SECONDS
            or not any(name in _INDEXED_DEMUXERS for name in source.format.name.split(","))
        ):
            return source.demux(*streams)
        try:
            source.seek(int(start * av.time_base), backward=True, any_frame=False)
        except av.error.FFmpegError:
            source.seek(0)
            return source.demux(*streams)
        packets = source.demux(*streams)
        for packet in packets:
            if packet.pts is None or packet.time_base is None:
                continue
            if float(packet.pts * packet.time_base) > start + PREROLL_SECONDS:
                source.seek(0)  # landed after the cut's start: read from the beginning instead
                return source.demux(*streams)
            return itertools.chain([packet], packets)
        return iter(())

    # -- setting up ----------------------------------------------------------------------------

    def _copy_container_tags(self, source: av.container.InputContainer, ours: list[Any]) -> None:
        """The container's tags into the output's, and the input's video's tags and dispositions into
        the output's video streams made before the copier (encoded again: its coding tags left out)."""
        left_out = CONTAINER_TAGS_NOT_COPIED | ({"duration"} if self._trim else frozenset())
        copy_tags(source.metadata, self._out.metadata, left_out)
        video = _main_video(source)
        if video is None:
            return
        for stream_out in ours:
            if stream_out.type != "video":
                continue
            if not int(stream_out.disposition):  # none set by the caller
                stream_out.disposition = video.disposition
            copy_tags(stream_tags(video), stream_out.metadata, STREAM_TAGS_OF_THE_CODING)

    def _copy_chapters(self, source: av.container.InputContainer) -> None:
        """The input's chapters into the output, as ``ffmpeg`` copies them: moved by the output's start
        shift, and with ``trim`` or a ``window`` cut to the part (those wholly outside it left out). What
        is not a plain copy is said in the report's notes."""
        chapters = source.chapters()
        if not chapters:
            return
        count = f"{len(chapters)} chapter{'' if len(chapters) == 1 else 's'}"
        muxer = self._out.format.name
        if muxer not in CHAPTER_MUXERS:
            self.report.other_notes.append(f"{count} dropped: the {muxer} container holds no chapters")
            return
        end = fractions.Fraction(self._end).limit_denominator(1_000_000) if self._trim and self._end else None
        if self._window is not None and self._window[1] is not None:
            # A remux's cut ends there too: its chapters ran on to the input's end past the copy's.
            end = fractions.Fraction(self._window[1]).limit_denominator(1_000_000) - self._shift
        kept: list[av.container.Chapter] = []
        cut = 0
        for chapter in chapters:
            tb = fractions.Fraction(chapter["time_base"] or fractions.Fraction(1, 1000))
            start = chapter["start"] * tb - self._shift
            stop = chapter["end"] * tb - self._shift
            if stop <= 0 or (end is not None and start >= end):
                continue
            if start < 0 or (end is not None and stop > end):
                cut += 1
            start, stop = max(start, fractions.Fraction(0)), stop if end is None else min(stop, end)
            kept.append(
                {
                    "id": chapter["id"],
                    "start": round(start / tb),
                    "end": round(stop / tb),
                    "time_base": tb,
                    "metadata": dict(chapter["metadata"]),
                }
            )
        self._out.set_chapters(kept)
        left = len(chapters) - len(kept)
        if left or cut:
            said = [f"{len(kept)} kept"]
            if left:
                said.append(f"{left} outside the part left out")
            if cut:
                said.append(f"{cut} cut at the part's edges")
            self.report.other_notes.append(f"{count}: " + ", ".join(said))
        elif self._shift:
            self.report.other_notes.append(
                f"{count} moved by {float(-self._shift):+.3f} s with the output's start"
            )

    def _keep(
        self,
        stream_in: Any,
        stream_out: Any,
        changed: bool,
        extra: av.stream.Disposition | None = None,
    ) -> None:
        """``stream_in``'s tags and dispositions onto the stream made for it (``changed``: encoded
        again, cut or converted, its coding tags left out); ``extra``: dispositions added."""
        if not self._copy_metadata:
            if extra is not None:
                stream_out.disposition = extra
            return
        stream_out.disposition = stream_in.disposition if extra is None else stream_in.disposition | extra
        self._say_marks_lost(stream_in.index, stream_out)
        copy_tags(
            stream_tags(stream_in), stream_out.metadata, STREAM_TAGS_OF_THE_CODING if changed else frozenset()
        )
        language = stream_out.metadata.get("language")
        if self._out.format.name == "mov" and language and language.lower() != "und":
            quicktime = mov_language(language.lower())
            if quicktime is not None:
                stream_out.metadata["language"] = quicktime
            else:
                self.report.other_notes.append(
                    f"stream {stream_in.index}'s language {language!r} is not written: the mov container "
                    "holds only QuickTime's languages (.mp4 and .mkv hold any)"
                )

    def _default_to_first(self, source: av.container.InputContainer, kind: str) -> None:
        """Make the first kept stream of ``kind`` the default, the others not, where one of the input's
        streams of that kind was the default (none made where none was: a subtitle stream made the
        default is shown unasked); said where the default moves off the input's."""
        default = av.stream.Disposition.default
        was = [s.index for s in source.streams if s.type == kind and int(s.disposition) & int(default)]
        kept = [(i, e.stream_out) for i, e in self._entries.items() if e.stream_out.type == kind]
        if not was or not kept:
            return
        for _, stream_out in kept:
            stream_out.disposition = av.stream.Disposition(int(stream_out.disposition) & ~int(default))
        first, stream_out = kept[0]
        stream_out.disposition = stream_out.disposition | default
        if first in was:
            return
        language = source.streams[first].metadata.get("language")
        named = f"{kind} stream {first}" + (f" ({language})" if language else "")
        before = ", ".join(str(i) for i in was)
        where = "not kept" if not any(i in was for i, _ in kept) else "kept after it"
        self.report.other_notes.append(
            f"{named} made the default, the first chosen; the input's default, stream {before}, is {where}"
        )

    def _say_tags_lost(self) -> None:
        """Say, one line per kind of loss, the tags a muxer of :data:`TAGS_HELD` leaves out: the
        container's, the streams' titles, the default marks (a lone audio stream's aside: players
        take it all the same)."""
        muxer = self._out.format.name
        held = TAGS_HELD.get(muxer)
        if held is None:
            return
        tags = {key.lower() for key in self._out.metadata}
        lost = sorted(tags - held - _TAGS_THE_MUXER_WRITES - {"title"})
        moved = "title" in tags and "service_name" not in tags
        if lost:
            self.report.other_notes.append(
                f"the container's {', '.join(lost)} tag{'s' if len(lost) > 1 else ''} dropped: the {muxer} "
                "container holds a service name and provider alone"
                + ("; its title kept as the service name" if moved else "")
            )
        elif moved:
            self.report.other_notes.append(
                f"the container's title kept as the {muxer} service name (the container holds no title)"
            )
        sources = {id(e.stream_out): i for i, e in self._entries.items()}
        ours = [(sources.get(id(s)), s) for s in self._out.streams]
        named = [
            f"{s.type} stream {i}" if i is not None else f"the {s.type}"
            for i, s in ours
            if any(key.lower() == "title" for key in s.metadata)
        ]
        if named:
            self.report.other_notes.append(
                f"the title{'s' if len(named) > 1 else ''} of {_listed(named)} dropped: the {muxer} "
                "container holds no stream titles"
            )
        default = int(av.stream.Disposition.default)
        audio = [s for _, s in ours if s.type == "audio"]
        marked = [
            f"{s.type} stream {i}"
            for i, s in ours
            if i is not None
            and int(s.disposition) & default
            and (s.type == "subtitle" or (s.type == "audio" and len(audio) > 1))
        ]
        if marked:
            self.report.other_notes.append(
                f"the default mark of {_listed(marked)} dropped: the {muxer} container holds none (players "
                "take the first audio stream and show no subtitles unasked)"
            )

    def _say_marks_lost(self, index: int, stream_out: Any) -> None:
        """Say the marks of input stream ``index`` the output's muxer leaves out of ``stream_out``."""
        held = MARKS_HELD.get((self._out.format.name, stream_out.type))
        if held is None:
            return
        flags = int(stream_out.disposition)
        marked = [m for m in _PICKED_MARKS if flags & int(getattr(av.stream.Disposition, m))]
        lost = [m for m in marked if m not in held]
        if "captions" in lost and "hearing_impaired" in marked and "hearing_impaired" in held:
            lost.remove("captions")  # the MP4 demuxer says both for one SDH kind; Matroska's flag is one
        if "descriptions" in lost and "visual_impaired" in marked and self._out.format.name == "mpegts":
            lost.remove("descriptions")  # its demuxer says both for the visually impaired audio type
        if not lost:
            return
        named = ["commentary" if m == "comment" else m.replace("_", " ") for m in lost]
        words = " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)
        many = len(lost) > 1
        self.report.other_notes.append(
            f"{stream_out.type} stream {index}'s {words} mark{'s' if many else ''} dropped: the "
            f"{self._out.format.name} container cannot hold {'them' if many else 'it'}"
        )

    def _drop(self, stream: InputStream, reason: str) -> None:
        self.report.dropped.append(DroppedStream(stream.index, stream.kind, stream.codec, reason))

    def _fixer(self, stream_in: Any, drop_behind: bool) -> TimestampFixer:
        tb = fractions.Fraction(stream_in.time_base or fractions.Fraction(1, 1_000_000))
        jump = None if self._jump is None else max(1, round(fractions.Fraction(self._jump) / tb))
        # Equal decode times stay where the muxer takes them (AVFMT_TS_NONSTRICT: Matroska, WebM): a
        # copy of TrueHD from Matroska lost 600 of its 3600 packets as duplicates.
        equal = bool(getattr(self._out.format, "flags", 0) & _TS_NONSTRICT)
        return TimestampFixer(
            drop_behind=drop_behind, jump_limit=jump, shift=round(self._shift / tb), keep_equal=equal
        )

    def _add(self, stream: InputStream, undecodable: str | None) -> None:
        assert self._in is not None
        muxer = self._out.format.name
        stream_in = self._in.streams[stream.index]
        if stream.attached_picture:
            self._add_picture(stream, muxer)
            return
        if stream.kind is StreamKind.ATTACHMENT:
            if muxer not in ATTACHMENT_MUXERS:
                self._drop(stream, f"the {muxer} container holds no attachments (.mkv does)")
                return
            data = bytes(getattr(stream_in, "data", b"") or b"")
            mimetype = str(stream_in.metadata.get("mimetype", "") or "application/octet-stream")
            made = self._out.add_attachment(stream.filename or f"attachment{stream.index}", mimetype, data)
            if self._copy_metadata:
                copy_tags(stream_in.metadata, made.metadata)
            self.report.kept.append(stream)
            return
        if stream.kind is StreamKind.AUDIO:
            if muxer in SOUNDLESS_MUXERS:
                self._drop(stream, f"a {muxer.upper()} holds no sound")
                return
            if not stream.sample_rate:
                # FFmpeg found none of its data while probing (a file cut short after its header):
                # no muxer writes an audio stream without a rate.
                self._drop(
                    stream, f"its sample rate is not known: the file holds no {stream.codec} audio data"
                )
                return
            if undecodable is not None and self._trim:
                self._drop(
                    stream,
                    f"the {stream.codec} audio does not decode ({undecodable}): it cannot be cut with "
                    "the video",
                )
                return
            if self._target is not None:
                if undecodable is not None:
                    self._drop(stream, f"the {stream.codec} audio does not decode ({undecodable})")
                    return
                self._add_reencoded(stream, stream_in, muxer, None)
                return
            if self._trim:
                # Cut to the sample, so encoded again; where the container could not hold it as it is
                # either, that is said first (a WebM cut from AAC said only the cut).
                refusal = self._audio_refusal(stream, stream_in, muxer)
                cut = None if refusal is None else f"{refusal}; cut with the video to the sample"
                self._add_reencoded(stream, stream_in, muxer, cut)
                return
            if undecodable is not None:
                self._drop(
                    stream,
                    f"the {stream.codec} audio does not decode ({undecodable}): a copy would not play "
                    "either, and what does not decode cannot be encoded again",
                )
                return
            order = self._orders.get(stream.index)
            if order is not None and order.reorders:
                self._add_reencoded(
                    stream,
                    stream_in,
                    muxer,
                    f"its channels are in an order FFmpeg's layouts lack ({order.source}); a copy "
                    f"would label them wrongly, so they are put into {order.layout}'s",
                    own_first=True,
                )
                return
            if audio_refused(muxer, stream.codec):
                self._add_reencoded(stream, stream_in, muxer, _refused_why(muxer, stream.codec))
                return
            adts = _adts_refusal(muxer, stream.codec, stream_in)
            if adts is not None:
                self._add_reencoded(stream, stream_in, muxer, adts)
                return
            if stream.codec.startswith("pcm_") and muxer in PCM_NOT_COPIED_INTO and self._wide_placed(stream):
                self.report.other_notes.append(
                    f"audio stream {stream.index} ({stream.channels} channels of {stream.codec}) copied "
                    f"as PCM into {muxer}, which FFmpeg before 6.0 reads as noise: FLAC and ALAC hold "
                    f"at most {LOSSLESS_MAX_CHANNELS} channels"
                )
            elif stream.codec.startswith("pcm_") and muxer in PCM_NOT_COPIED_INTO:
                self._add_reencoded(
                    stream,
                    stream_in,
                    muxer,
                    f"the {muxer} container's PCM plays as noise in players and in FFmpeg before 6.0",
                )
                return
            try:
                stream_out = self._out.add_stream_from_template(stream_in)
            except ValueError as exc:
                # PyAV's "'webm' format does not support 'aac' codec" says again what the note says.
                said = "" if "does not support" in str(exc) else f" ({exc})"
                self._add_reencoded(
                    stream, stream_in, muxer, f"the {muxer} container cannot hold {stream.codec}{said}"
                )
                return
            self._keep(stream_in, stream_out, False)
            self._entries[stream.index] = _Entry(stream, stream_in, stream_out, self._fixer(stream_in, True))
            self.report.kept.append(stream)
            return
        if stream.kind is StreamKind.SUBTITLE:
            if muxer not in SUBTITLE_MUXERS:
                self._drop(stream, str(subtitle_not_held(muxer, stream.codec)))
                return
            try:
                stream_out = self._out.add_stream_from_template(stream_in)
            except ValueError:
                self._add_converted_subtitles(stream, stream_in, muxer)
                return
            self._keep(stream_in, stream_out, self._trim)
            self._entries[stream.index] = _Entry(stream, stream_in, stream_out, self._fixer(stream_in, False))
            self.report.kept.append(stream)
            return
        if stream.kind is StreamKind.VIDEO:  # a remux's (--codec copy): its packets as they are
            if self._trim:
                self._drop(stream, "a video stream copied cannot be cut to the frame")
                return
            if muxer == "mpegts" and stream.codec not in TS_VIDEO:
                self._drop(stream, f"the mpegts container writes {stream.codec} as a data stream, not video")
                return
            refused = VIDEO_MUXER_REFUSES.get((muxer, stream.codec))
            if refused is not None:
                self._drop(stream, refused)
                return
            try:
                # The decoder's codec, not an encoder of its name: AV1 (libdav1d), Theora and WMV have
                # no encoder here, and a copy needs none.
                stream_out = self._out.add_stream_from_template(stream_in, opaque=True)
            except (ValueError, av.error.FFmpegError) as exc:
                self._drop(stream, f"the {muxer} container cannot hold {stream.codec} ({exc})")
                return
            self._keep(stream_in, stream_out, False)
            self._keep_pixel_shape(stream, stream_in, stream_out, muxer)
            rate = _constant_rate(stream_in)
            if muxer in _FRAME_CLOCK_COPIES and rate is not None:
                # AVI stores a frame rate, not timestamps: on the input's clock (a TS's 1/90000 came out
                # 1/600 and 166 frames for 8, a WebM's 1/1000 and 288) it says that rate and pads the
                # index with empty frames. One frame a tick, as ffmpeg's copy into AVI.
                stream_out.time_base = 1 / rate
            self._entries[stream.index] = _Entry(stream, stream_in, stream_out, self._fixer(stream_in, False))
            self.report.kept.append(stream)
            return
        self._drop(stream, f"alpha2 copies no {stream.kind.value} streams")

    def _in_window(self, entry: _Entry, packet: av.packet.Packet[Any]) -> bool:
        """Whether a packet lies in the copy's ``window`` (input seconds, packets whole: a remux's cut).
        The video from its key frame at the start on, up to the first packet at or past the end (what
        follows it in decode order may refer to it); the other streams' packets that start in it."""
        time_base = packet.time_base
        stamp = packet.pts if packet.pts is not None else packet.dts
        if time_base is None or stamp is None:
            return False
        assert self._window is not None
        start, end = self._window
        seconds = float(stamp * time_base)
        if entry.source.kind is StreamKind.VIDEO:
            if self._video_done:
                return False
            # The end by decode time, as ffmpeg's stream copy: a picture shown before it that is decoded
            # after a later one (a B-frame) keeps what it refers to (a frame or two may show past it).
            decoded = float(packet.dts * time_base) if packet.dts is not None else seconds
            if end is not None and decoded >= end - 1e-9:
                self._video_done = True
                return False
            if seconds < start - 1e-6:
                return False  # the open GOP's leading pictures before the key frame go
            shown_to = float((stamp + max(packet.duration or 0, 0)) * time_base)
            if end is not None and seconds >= end - 1e-9:
                self._past_end.append((seconds, shown_to))
            else:
                self._shown_before_end = max(self._shown_before_end, shown_to)
            return True
        return start - 1e-6 <= seconds and (end is None or seconds < end - 1e-9)

    def _keep_pixel_shape(self, stream: InputStream, stream_in: Any, stream_out: Any, muxer: str) -> None:
        """A copied video's pixel shape that its container, not its stream, holds (Matroska's display
        size, MP4's pasp): written where the output's muxer takes it from the stream's parameters (MP4,
        MOV), else said lost (PyAV sets no Matroska display size). It was lost unsaid: an anamorphic
        16:9 picture came out 4:3."""
        shape = stream_in.sample_aspect_ratio
        coded = stream_in.codec_context.sample_aspect_ratio
        if not shape or shape == 1 or shape == coded:
            return
        if muxer in ("mp4", "ipod", "mov"):
            stream_out.codec_context.sample_aspect_ratio = shape
            return
        self.report.other_notes.append(
            f"video stream {stream.index}'s pixel shape {shape.numerator}:{shape.denominator}, which its "
            f"container holds, is not written into the {muxer} container: the picture shows with square "
            "pixels (write .mp4 or .mov to keep it, or transcode with --size)"
        )

    @property
    def exhausted(self) -> bool:
        """Whether every packet of the input has been read and muxed (or let go)."""
        return self._packets is None and self._pending is None and not self._held

    @property
    def video_past_window(self) -> tuple[int, float, bool] | None:
        """The window's video pictures copied at or past its end (kept by decode time, see
        :meth:`_in_window`): (how many, the last one's time in input seconds, whether pictures between
        them and those before the end are missing, so that the picture pauses before them); None: none."""
        if not self._past_end:
            return None
        times = sorted(self._past_end)
        gap, shown = False, self._shown_before_end
        for at, shown_to in times:
            gap = gap or at > shown + 1e-3
            shown = max(shown, shown_to)
        return len(times), times[-1][0], gap

    @property
    def video_packets_copied(self) -> int:
        """Video packets muxed as they were (a remux's pictures)."""
        return sum(e.packets for e in self._entries.values() if e.source.kind is StreamKind.VIDEO)

    def read_end(self, index: int) -> int | None:
        """Where input stream ``index``'s packets read so far end: the latest pts + duration, in its time
        base, as the input has them (before the copy's shift); None: none read, or not copied."""
        entry = self._entries.get(index)
        return None if entry is None else entry.read_end

    def _add_converted_subtitles(self, stream: InputStream, stream_in: Any, muxer: str) -> None:
        """Plain-text subtitles into the container's own text codec (SubRip, MP4 timed text, WebVTT:
        their text kept, inline styling not), as FFmpeg converts them; others dropped, with why."""
        target = TEXT_SUBTITLE_TARGETS.get(muxer)
        hint = "" if muxer == "matroska" else " (.mkv holds them)"
        if target is None or stream.codec not in TEXT_SUBTITLE_CODECS:
            self._drop(
                stream,
                f"the {muxer} container cannot hold {stream.codec} subtitles, and alpha2 converts only "
                f"plain-text ones ({', '.join(sorted(TEXT_SUBTITLE_CODECS))}){hint}",
            )
            return
        stream_out = self._out.add_mux_stream(target, time_base=stream_in.time_base)
        self._keep(stream_in, stream_out, True)
        entry = _Entry(stream, stream_in, stream_out, self._fixer(stream_in, False), text_to=target)
        self._entries[stream.index] = entry
        self.report.kept.append(stream)
        self.report.other_notes.append(
            f"subtitle stream {stream.index} converted from {stream.codec} to {target}: the {muxer} "
            f"container cannot hold {stream.codec} (text kept, inline styling not)"
        )

    def _lossless_target(self, stream: InputStream, muxer: str, cut: bool) -> str | None:
        """The lossless encoder for a lossless source that must be encoded again: its own codec where
        cut (PCM, FLAC, ALAC ... that the container holds), else the first of
        :data:`LOSSLESS_AUDIO_TARGETS` the container holds; None: the source is lossy, or no lossless
        codec fits (the container's lossy one, then)."""
        if not is_lossless_audio(stream.codec):
            return None
        try:
            holds = set(self._out.supported_codecs)
        except (AttributeError, av.error.FFmpegError):
            holds = set()
        for name in ([stream.codec] if cut else []) + list(LOSSLESS_AUDIO_TARGETS):
            wide = stream.channels > LOSSLESS_MAX_CHANNELS
            pcm_here = not (name.startswith("pcm_") and muxer in PCM_NOT_COPIED_INTO) or self._wide_placed(
                stream
            )
            if name not in holds or not pcm_here:
                continue
            if audio_refused(muxer, name) or (wide and name in LOSSLESS_AUDIO_TARGETS):
                continue
            try:
                encoder = av.codec.Codec(name, "w")
            except (av.error.FFmpegError, ValueError):
                continue
            if not encoder.experimental:
                return name
        return None

    def _wide_placed(self, stream: InputStream) -> bool:
        """Whether ``stream`` has more channels than FLAC and ALAC hold, each in a known place: PCM
        copied into MP4 then (its muxer refuses PCM channels in no known place)."""
        if stream.channels <= LOSSLESS_MAX_CHANNELS or self._in is None:
            return False
        context: Any = self._in.streams[stream.index].codec_context
        return not unmixable(context.layout)

    def _holds_opus(self, muxer: str) -> bool:
        try:
            holds = set(self._out.supported_codecs)
        except (AttributeError, av.error.FFmpegError):
            return False
        return "opus" in holds and (muxer, "opus") not in AUDIO_MUXER_REFUSES

    def _audio_refusal(self, stream: InputStream, stream_in: Any, muxer: str) -> str | None:
        """Why ``muxer`` cannot take ``stream``'s audio as it is (None: it can): FFmpeg's own check on a
        container in memory, and the refusals of :func:`audio_refused`."""
        if audio_refused(muxer, stream.codec):
            return _refused_why(muxer, stream.codec)
        adts = _adts_refusal(muxer, stream.codec, stream_in)
        if adts is not None:
            return adts
        try:
            probe = av.open(io.BytesIO(), "w", format=muxer)
        except (av.error.FFmpegError, ValueError):
            return None  # a muxer that writes to files only: the copy itself finds out
        with probe:
            try:
                probe.add_stream_from_template(stream_in)
            except ValueError:
                return f"the {muxer} container cannot hold {stream.codec}"
        return None

    def _add_reencoded(
        self, stream: InputStream, stream_in: Any, muxer: str, why: str | None, own_first: bool = False
    ) -> None:
        """Audio decoded and encoded again: ``why`` the container's copy is refused; None: it is cut
        with the video (``trim``); ``own_first``: the source's own codec first where it must be encoded
        again losslessly (its samples reordered). A lossless source stays lossless where the container holds a
        lossless codec; the source's channel layout is kept where the encoder takes it."""
        forced = self._target
        lossless = (
            None if forced is not None else self._lossless_target(stream, muxer, why is None or own_first)
        )
        codec = lossless or ("libopus" if ("webm" in muxer or "ogg" in muxer) else "aac")
        if forced is not None:
            codec = forced.codec
        source_layout = stream_in.codec_context.layout
        kept = None
        if lossless is None and forced is None and self._holds_opus(muxer):
            if str(source_layout.name).startswith("ambisonic"):
                codec = "libopus"  # the one lossy codec with an ambisonic layout (its mapping family 2)
            elif len(source_layout.channels) > LOSSLESS_MAX_CHANNELS:
                codec = "libopus"  # every channel kept (its mapping family 255), where AAC would mix
                kept = f"Opus keeps all {len(source_layout.channels)} channels"
                if is_lossless_audio(stream.codec):
                    kept += f" (FLAC and ALAC hold at most {LOSSLESS_MAX_CHANNELS})"
        rate = encoder_rate(codec, stream.sample_rate or 48_000)
        count = len(source_layout.channels) if source_layout is not None else 0
        if count <= 0:
            count = stream.channels or 2
            named = (n for n in _LAYOUTS if len(av.AudioLayout(n).channels) == count)
            source_layout = av.AudioLayout(next(named, "stereo"))
        layout = encoder_layout(codec, source_layout, rate)
        downmix = None
        moved = None
        own_names = [str(c.name) for c in source_layout.channels]
        if layout is None:
            layout = "mono" if count == 1 else "stereo"
            downmix = f"downmixed from {count} channels to {layout}: {codec} takes no {count}-channel layout"
        elif layout != str(source_layout.name) and not unmixable(source_layout):
            target = [str(c.name) for c in av.AudioLayout(layout).channels]
            said_own = str(source_layout.name)
            why = f"{codec} takes no {said_own} layout"
            if _encoder_opens(codec, said_own, rate):  # AAC's, read back as 'N channels' (_AAC_PLACED)
                why = f"{codec}'s {said_own} reads back as {count} channels in no known place"
            speakers = _same_speakers_order(own_names, target)
            if speakers is not None and speakers != tuple(range(count)):
                # The resampler would mix them as other speakers (6.1(back)'s BL and BR into 6.1's BC,
                # its SL and SR silent, unsaid: found by an outside pass): put in place instead.
                moved = ChannelOrder(stream.index, said_own, layout, speakers)
                renamed = ", ".join(
                    f"{c} as {target[speakers.index(i)]}"
                    for i, c in enumerate(own_names)
                    if c != target[speakers.index(i)]
                )
                downmix = (
                    f"its {said_own} channels passed one for one as {layout} ({renamed}: the same speakers)"
                )
            elif set(own_names) <= set(target) and len(target) > count:
                silent = "+".join(c for c in target if c not in own_names)
                downmix = f"its {said_own} channels kept as they are in {layout} ({silent} silent): {why}"
            elif speakers is None:
                downmix = (
                    f"its {said_own} channels mixed into {layout} ({_mix_said(said_own, layout)}): {why}"
                )
        relabel = None
        own = str(source_layout.name)
        if unmixable(source_layout) and layout != own:
            same = len(av.AudioLayout(layout).channels) == count
            said_own = own if own.endswith("channels") else f"{own} channels"
            relabel = layout if same else f"{count} channels"
            passed: str | None = (
                f"its {said_own} passed one for one as {layout}: {codec} has no such layout"
                if same
                else f"its {said_own} mixed down as if in FFmpeg's default order"
            )
            if same and layout == {1: "mono", 2: "stereo"}.get(count):
                # One or two channels of no named layout are mono or stereo to FFmpeg and every player:
                # not said (every mono WAV said 'its 1 channels passed one for one as mono': helper 95).
                passed = None
            if passed is not None:
                downmix = passed if downmix is None else f"{downmix}; {passed}"
            if relabel == own:
                relabel = None  # unplaced already: the resampler reads them in the default order
        fixed = _FIXED_LAYOUTS.get(codec, ())
        # Two such channels are stereo to FFmpeg and every player, as one is mono (above): not said
        # (every plain stereo WAV into .flac said 'its 2 channels, in no known place, labelled stereo').
        if (
            unmixable(source_layout)
            and layout == own
            and own.endswith("channels")
            and 2 < count <= len(fixed)
        ):
            placed = (
                f"its {own}, in no known place, labelled {fixed[count - 1]}: {codec} names one layout a count"
            )
            downmix = placed if downmix is None else f"{downmix}; {placed}"
        sample_format = None
        if lossless is not None:
            sample_format = _lossless_format(lossless, stream_in.codec_context.format)
        source_rate = int(getattr(stream_in.codec_context, "bit_rate", 0) or 0)
        bit_rate = None
        if lossless is None and 32_000 <= source_rate <= 160_000 * max(2, count):
            bit_rate = source_rate
        if forced is not None:
            bit_rate = forced.bit_rate
            sample_format = forced.sample_format
            if sample_format is None and is_lossless_audio(codec):
                sample_format = _lossless_format(codec, stream_in.codec_context.format)
        stream_out, rate = add_audio_encoder(
            self._out,
            rate,
            count,
            bit_rate,
            codec=codec,
            layout=layout,
            sample_format=sample_format,
        )
        self._keep(stream_in, stream_out, True)
        # Planar frames of 8 channels or more crash PyAV's planes (see interleaved): packed then.
        wanted = av.AudioFormat(sample_format or "fltp")
        wide = len(av.AudioLayout(layout).channels) >= PLANAR_CHANNELS_PYAV_READS
        form = wanted.packed.name if wide else wanted.planar.name
        resampler = av.AudioResampler(format=form, layout=layout, rate=rate)
        self._entries[stream.index] = _Entry(
            stream,
            stream_in,
            stream_out,
            self._fixer(stream_in, True),
            reencode=True,
            resampler=resampler,
            rate=rate,
            order=self._orders.get(stream.index),
            relabel=relabel,
            moved=moved,
        )
        self.report.kept.append(stream)
        name = stream_out.codec_context.name
        if forced is not None:
            said = f"encoded {stream.codec} to {name}" if name != stream.codec else f"encoded again ({name})"
            if bit_rate:
                said += f" at {bit_rate / 1000:g} kb/s"
        elif why is None:
            same = name.removeprefix("lib") == stream.codec
            said = f"re-encoded ({name})" if same else f"re-encoded {stream.codec} to {name}"
            said += ": cut with the video to the sample (a copy cuts only between packets)"
            order = self._orders.get(stream.index)
            if order is not None and order.reorders:  # (encoded again for it, the reason says so)
                said += f"; {order.note}"
        elif name.removeprefix("lib") == stream.codec:
            said = f"re-encoded ({name}): {why}"
        else:
            said = f"re-encoded {stream.codec} to {name}: {why}"
        if lossless is not None:
            said += f"; {_lossless_said(stream.codec, stream_in.codec_context.format, lossless)}"
        if kept is not None:
            said += f"; {kept}"
        if downmix is not None:
            said += f"; {downmix}"
        if stream.sample_rate and rate != stream.sample_rate:
            # Resampled: said (11025 Hz into WebM came out 48000 Hz with no word: helper 91).
            said += (
                f"; resampled {stream.sample_rate} Hz -> {rate} Hz ({name} takes no {stream.sample_rate} Hz)"
            )
        self.report.notes.append(said)

    def _add_picture(self, stream: InputStream, muxer: str) -> None:
        if muxer not in COVER_ART_MUXERS:
            self._drop(stream, f"the {muxer} container holds no cover art (.mp4 and .mkv do)")
            return
        data = _first_packet(self._path, stream.index)
        if data is None:
            self._drop(stream, "its picture could not be read")
            return
        if muxer == "matroska":
            mimetype, ext = _IMAGE_MIMETYPES.get(stream.codec, ("application/octet-stream", "bin"))
            self._out.add_attachment(f"cover.{ext}", mimetype, data)
            self.report.kept.append(stream)
            return
        assert self._in is not None
        try:
            stream_out = self._out.add_stream_from_template(self._in.streams[stream.index])
        except ValueError as exc:
            self._drop(stream, f"the {muxer} container cannot hold a {stream.codec} picture ({exc})")
            return
        self._keep(self._in.streams[stream.index], stream_out, False, av.stream.Disposition.attached_pic)
        self._pictures.append(_Picture(stream, stream_out, data))
        self.report.kept.append(stream)

    # -- copying -------------------------------------------------------------------------------

    @property
    def packets_copied(self) -> int:
        """Packets muxed as they were (subtitles converted to the container's text codec included)."""
        return sum(e.packets for e in self._entries.values())

    @property
    def audio_packets_copied(self) -> int:
        """Audio packets muxed as they were."""
        return sum(e.packets for e in self._entries.values() if e.source.kind is StreamKind.AUDIO)

    @property
    def frames_reencoded(self) -> int:
        """Audio frames encoded again."""
        return sum(e.frames for e in self._entries.values())

    def _adjustments_of(self, kind: StreamKind) -> TimestampAdjustments:
        total = TimestampAdjustments()
        for entry in self._entries.values():
            if entry.source.kind is kind:
                total = total + entry.fixer.adjustments
        return total

    @property
    def adjustments(self) -> TimestampAdjustments:
        """Copied packets whose timestamps were dropped or rebased, over the copied audio streams."""
        return self._adjustments_of(StreamKind.AUDIO)

    @property
    def video_adjustments(self) -> TimestampAdjustments:
        """Copied video packets whose decode times repeated, went backwards or reset (--codec copy)."""
        return self._adjustments_of(StreamKind.VIDEO)

    def _write_pictures(self) -> None:
        pictures, self._pictures = self._pictures, []
        for picture in pictures:
            packet = av.packet.Packet(picture.data)
            packet.pts = packet.dts = 0
            packet.time_base = picture.stream_out.time_base or fractions.Fraction(1, 90_000)
            packet.stream = picture.stream_out
            packet.is_keyframe = True
            self._out.mux(packet)

    def _retime(self, entry: _Entry, packet: av.packet.Packet[Any]) -> bool:
        """Shift the packet and make its dts follow the last one's (pts moved alike); False: drop it."""
        if packet.dts is None and entry.source.kind is StreamKind.VIDEO and packet.pts is not None:
            # A copied video's packets without decode times (Matroska's, with B-frames): only shifted;
            # the muxer works their dts out from the reorder depth, as for ffmpeg -c copy. Taken from
            # the pts, the fixer moved every picture after a reordered one (an MKV's second frame landed
            # at 0.2 s, not 0.04).
            packet.pts = packet.pts + entry.fixer.offset
            return True
        if packet.dts is None:
            packet.dts = packet.pts
        assert packet.dts is not None
        dts = entry.fixer.fix(packet.dts, packet.duration or None)
        if dts is None:
            return False
        moved = dts - packet.dts
        if moved:
            if packet.pts is not None:
                packet.pts = packet.pts + moved
            packet.dts = dts
        return True

    def mux_until(self, limit_seconds: float | None) -> None:
        """Mux the copied packets up to ``limit_seconds`` (output time); all the rest when None."""
        self._write_pictures()
        self._release_held(limit_seconds)
        while self._packets is not None:
            packet = self._pending
            self._pending = None
            if packet is None:
                try:
                    packet = next(self._packets)
                except (StopIteration, av.error.FFmpegError) as exc:
                    if isinstance(exc, av.error.FFmpegError):
                        # A damaged packet ends the copy, as a demuxer error ends the video.
                        self.report.notes.append(
                            f"copied streams end early at damaged data ({exc.strerror or exc})"
                        )
                    self._packets = None
                    self._drain()
                    return
                if packet.size == 0 or (packet.dts is None and packet.pts is None):
                    continue
                entry = self._entries[packet.stream.index]
                if packet.pts is not None:
                    end = packet.pts + max(packet.duration or 0, 0)
                    entry.read_end = end if entry.read_end is None else max(entry.read_end, end)
                if self._window is not None and not self._in_window(entry, packet):
                    continue
                if not self._retime(entry, packet):
                    continue
            entry = self._entries[packet.stream.index]
            if limit_seconds is not None and packet.pts is not None and packet.time_base is not None:
                if float(packet.pts * packet.time_base) > limit_seconds:
                    self._pending = packet
                    return
            if self._trim:
                keep, done = self._cut(entry, packet)
                if done:  # past the cut's end in every stream: the rest of the file is not read
                    self._packets = None
                    self._drain()
                    return
                if not keep:
                    continue
                subtitle = entry.source.kind is StreamKind.SUBTITLE
                if subtitle and self._end is None and limit_seconds is not None:
                    behind = any(held is entry for held, _ in self._held)
                    if behind or _ends_after(packet, limit_seconds):
                        # Shown past the video so far, while where the video ends is not known yet
                        # (--frames): held until it is, or until the video passes its end; the
                        # stream's later packets wait behind it, so that its times keep their order.
                        self._held.append((entry, packet))
                        continue
            if entry.reencode:
                self._reencode(entry, packet)
                continue
            self._write(entry, packet)

    def _write(self, entry: _Entry, packet: av.packet.Packet[Any]) -> None:
        if entry.text_to is not None:
            packet = _converted_text(packet, entry.source.codec, entry.text_to)
            if entry.text_to != "mov_text" and not bytes(packet).strip():
                # An empty cue: mov_text fills the time between cues with empty samples; WebVTT and
                # SubRip have no such thing (FFmpeg 5.1 stops reading a WebM's cues at the first one).
                return
        if entry.source.kind is StreamKind.SUBTITLE and packet.dts is not None:
            # Cues that overlap, cut to the part, can land on a time before the one written last;
            # a muxer takes a stream's times in order only: such a cue starts with the one before.
            if entry.last_dts is not None and packet.dts < entry.last_dts:
                packet.dts = entry.last_dts
                if packet.pts is not None and packet.pts < packet.dts:
                    packet.pts = packet.dts
            entry.last_dts = packet.dts
        packet.stream = entry.stream_out
        try:
            self._out.mux(packet)
        except (av.error.FFmpegError, ValueError) as exc:
            # Called while the video is muxed: said as this stream's, not the video encoder's.
            source = entry.source
            raise from_ffmpeg(
                exc, f"writing stream {source.index} ({source.kind.value} {source.codec})", EncoderError
            ) from exc
        entry.packets += 1
        entry.written += 1

    def _release_held(self, limit_seconds: float | None) -> None:
        """Mux the held subtitles the video has passed (all of them when ``limit_seconds`` is None or
        the end is known), cut to the part."""
        held, self._held = self._held, []
        waiting: set[int] = set()  # streams with a packet still held: their later ones wait too
        for entry, packet in held:
            stays = self._end is None and limit_seconds is not None and _ends_after(packet, limit_seconds)
            if stays or id(entry) in waiting:
                waiting.add(id(entry))
                self._held.append((entry, packet))
            elif self._cut(entry, packet)[0]:
                self._write(entry, packet)

    def _cut(self, entry: _Entry, packet: av.packet.Packet[Any]) -> tuple[bool, bool]:
        """With ``trim``: whether to keep the (retimed) packet, and whether the copy is over (a packet
        well past the end). Audio is kept from a little before the start (its samples are cut when
        decoded); a subtitle is shortened to the part, or left out."""
        if packet.pts is None or packet.time_base is None:
            return True, False
        tb = packet.time_base
        start = float(packet.pts * tb)
        end = self._end
        if end is not None and start >= end + CUT_TAIL_SECONDS:
            return False, True
        if end is not None and start >= end:
            return False, False
        duration = packet.duration or 0
        if entry.source.kind is StreamKind.AUDIO:
            return float((packet.pts + duration) * tb) > -PREROLL_SECONDS, False
        if entry.source.kind is not StreamKind.SUBTITLE:
            return start >= 0, False
        duration = _shown_ticks(packet)
        pts, stop = packet.pts, packet.pts + duration
        gone = stop <= 0 if duration else pts < 0  # over before the part starts
        if gone:
            return False, False
        if end is not None:
            stop = min(stop, round(fractions.Fraction(end).limit_denominator(1_000_000) / tb))
        pts = max(pts, 0)
        packet.pts = packet.dts = pts
        if duration:
            packet.duration = max(stop - pts, 1)
        return True, False

    def _reencode(self, entry: _Entry, packet: av.packet.Packet[Any] | None) -> None:
        """Decode a source packet (None: drain) and encode its samples into the entry's encoder."""
        if entry.samples is None and not self._trim:
            start = 0.0
            if packet is not None and packet.pts is not None and packet.time_base is not None:
                start = float(packet.pts * packet.time_base)
            entry.samples = max(0, round(start * entry.rate))
        try:
            frames = entry.stream_in.decode(packet)
        except av.error.FFmpegError:
            return  # a damaged audio packet: skipped, as the video decoder skips corrupt data
        if entry.samples is None and frames:
            # Cut: the samples are counted from where the first decoded ones lie (before 0 too: the
            # decoder has dropped its priming samples), and those outside the part left out.
            first = frames[0]
            if first.pts is not None and first.time_base is not None:
                entry.samples = round(first.pts * first.time_base * entry.rate)
            elif packet is not None and packet.pts is not None and packet.time_base is not None:
                entry.samples = round(packet.pts * packet.time_base * entry.rate)
            else:
                entry.samples = 0
        if entry.samples is None:
            return  # nothing decoded yet (drained before any sound)
        tb = fractions.Fraction(1, entry.rate)
        frames = self._on_time(entry, frames)
        if entry.order is not None:
            frames = [entry.order.apply(f) for f in frames]
        if entry.relabel is not None:
            frames = [with_layout(f, entry.relabel) for f in frames]
        if entry.moved is not None:
            frames = [entry.moved.apply(f) for f in frames]
        for frame in [*frames, None] if packet is None else frames:
            for out_frame in self._resampled(entry, frame):
                first = entry.samples
                entry.samples += out_frame.samples
                if self._trim:
                    out_frame, first = self._cut_samples(entry, out_frame, first)
                    if out_frame is None:
                        continue
                out_frame.pts = first
                out_frame.time_base = tb
                self._encode(entry, out_frame)
                entry.frames += 1

    def _on_time(self, entry: _Entry, frames: list[Any]) -> list[Any]:
        """Decoded frames kept on their timestamps: the encoder's samples are counted one after the other,
        so a gap in the input's timestamps would close up (everything after it playing early against the
        picture) and an overlap would push the rest late. Where the timestamps run more than
        :data:`~alpha2.ffmpeg_bridge.channel_layouts.AUDIO_DRIFT_SECONDS` ahead of the samples fed,
        silence fills the gap; where they run behind, the repeated samples are left out
        (:func:`~alpha2.ffmpeg_bridge.channel_layouts.kept_on_time`, as the audio decode session's).
        Both are counted for the summary. FFmpeg's command line keeps the same timing by passing the
        timestamps on to the muxer; counted samples need the silence."""
        kept: list[Any] = []
        for frame in frames:
            rate = frame.sample_rate
            if frame.pts is None or frame.time_base is None or not rate or not frame.samples:
                kept.append(frame)
                if rate:
                    entry.in_fed += frame.samples / rate
                continue
            at = float(frame.pts * frame.time_base)
            if entry.in_origin is None:
                entry.in_origin = at
            expected = entry.in_origin + entry.in_fed
            pieces, added, cut = kept_on_time(frame, expected)
            if added:
                entry.gaps.append((expected, added / rate))
            if cut:
                entry.overlaps.append((at, cut / rate))
            kept.extend(pieces)
            entry.in_fed += (added + frame.samples - cut) / rate
        return kept

    def _timing_notes(self) -> None:
        """Say the gaps filled and the overlaps left out of the streams encoded again."""
        for entry in self._entries.values():
            for found, said in (
                (
                    entry.gaps,
                    "its timestamps skip {length:.3f} s at {where:.3f} s of the output{more}: "
                    "filled with silence",
                ),
                (
                    entry.overlaps,
                    "its timestamps go back {length:.3f} s at {where:.3f} s of the output{more}: "
                    "the repeated samples left out",
                ),
            ):
                if not found:
                    continue
                where, length = found[0]
                more = (
                    f" ({len(found)} times, {sum(s for _, s in found):.3f} s in all)"
                    if len(found) > 1
                    else ""
                )
                self.report.notes.append(
                    f"audio stream {entry.source.index}: "
                    + said.format(length=length, where=where, more=more)
                    # (Sound alone has no picture to stay with: its time is what is kept.)
                    + (
                        ", so that the sound after it stays with the picture"
                        if self._target is None
                        else ", so that the sound after it keeps its time"
                    )
                )

    def _resampled(self, entry: _Entry, frame: Any) -> list[Any]:
        """``frame`` converted for the entry's encoder; FFmpeg's refusal said as the audio's (it is
        called while the video is muxed, whose encoder would otherwise be named)."""
        try:
            return list(entry.resampler.resample(frame))
        except (av.error.FFmpegError, ValueError) as exc:
            source = entry.source
            raise from_ffmpeg(
                exc,
                f"converting audio stream {source.index} ({source.codec}, {source.channels} channels) "
                f"for {entry.stream_out.codec_context.name}",
                EncoderError,
            ) from exc

    def _cut_samples(self, entry: _Entry, frame: Any, first: int) -> tuple[Any, int]:
        """The part of a resampled frame (its first sample at ``first`` on the output's timeline)
        between 0 and the end, and where it starts; (None, first) when nothing of it is."""
        count = frame.samples
        low = max(0, -first)
        high = count
        if self._end is not None:
            high = min(count, round(self._end * entry.rate) - first)
        if high <= low:
            return None, first
        if low == 0 and high == count:
            return frame, first
        samples, packed = interleaved(frame)
        part = packed_frame(samples[low:high], packed, frame.layout.name, frame, keep_format=True)
        part.sample_rate = entry.rate
        return part, first + low

    def _encode(self, entry: _Entry, frame: Any) -> None:
        try:
            for packet in entry.stream_out.encode(frame):
                self._out.mux(packet)
                entry.written += 1
        except (av.error.FFmpegError, ValueError) as exc:
            raise from_ffmpeg(
                exc, f"encoding audio with {entry.stream_out.codec_context.name}", EncoderError
            ) from exc

    def _drain(self) -> None:
        for entry in self._entries.values():
            if entry.reencode:
                self._reencode(entry, None)
                self._encode(entry, None)
        if not self._timing_said:
            self._timing_said = True
            self._timing_notes()
            self._say_empty()

    def _say_empty(self) -> None:
        """Say the audio and video streams that got no packet: a part that holds none of a short stream
        (--from past its end), or a stream with none at all. The MP4 and MOV muxers leave such a track
        out (said dropped); the others write it empty (said in the notes). Both were said copied or
        encoded again (an outside pass, helper 118)."""
        cut = bool(self._trim or self._window)
        muxer = self._out.format.name
        for index, entry in self._entries.items():
            source = entry.source
            if source.kind not in (StreamKind.AUDIO, StreamKind.VIDEO) or entry.written:
                continue
            what = "sound" if source.kind is StreamKind.AUDIO else "pictures"
            why = f"none of its {what} lies in the part" if cut else f"it holds no {what}"
            if muxer in _EMPTY_TRACKS_LEFT_OUT:
                self.report.kept = [s for s in self.report.kept if s.index != index]
                reason = f"{why}: the {muxer} container leaves an empty track out"
                self.report.dropped.append(DroppedStream(index, source.kind, source.codec, reason))
            elif source.kind is StreamKind.AUDIO:
                self.report.notes.append(f"stream {index} written empty: {why}")
            else:
                self.report.other_notes.append(f"video stream {index} written empty: {why}")

    def finish(self) -> None:
        """Mux what is left and flush the audio encoders."""
        self.mux_until(None)
        self.close()

    def close(self) -> None:
        """Close the input. Idempotent."""
        source, self._in = self._in, None
        self._packets = None
        if source is not None:
            with contextlib.suppress(Exception):
                source.close()


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _infer_defaults(out: av.container.OutputContainer) -> list[tuple[Any, int]]:
    """Where ``out`` has several video, audio or subtitle streams and none is the default, make the
    first (cover art aside) the default, as ``ffmpeg`` does (``set_dispositions``). Returns each stream
    made the default with how many of its kind there are."""
    default = int(av.stream.Disposition.default)
    attached = int(av.stream.Disposition.attached_pic)
    made: list[tuple[Any, int]] = []
    for kind in ("video", "audio", "subtitle"):
        streams = [s for s in out.streams if s.type == kind]
        if len(streams) < 2 or any(int(s.disposition) & default for s in streams):
            continue
        first = next((s for s in streams if not int(s.disposition) & attached), None)
        if first is not None:
            first.disposition = first.disposition | av.stream.Disposition.default
            made.append((first, len(streams)))
    return made


def _ends_after(packet: av.packet.Packet[Any], seconds: float) -> bool:
    """Whether the packet (a subtitle) is shown past ``seconds``."""
    if packet.pts is None or packet.time_base is None:
        return False
    return float((packet.pts + _shown_ticks(packet)) * packet.time_base) > seconds


SUBTITLE_LONGEST_SECONDS = 24 * 3600
"""A subtitle shown longer than this is taken to have no duration: a cue whose end comes before its
start reads as 4294967096 ticks (FFmpeg's unsigned difference), which would hold it to the end."""


def _shown_ticks(packet: av.packet.Packet[Any]) -> int:
    """How long a subtitle packet is shown, in its ticks; 0 when it does not say or says nonsense."""
    duration = packet.duration or 0
    if duration <= 0 or packet.time_base is None:
        return 0
    return duration if float(duration * packet.time_base) <= SUBTITLE_LONGEST_SECONDS else 0


def _subtitle_text(data: bytes, codec: str) -> str:
    """The text of a plain-text subtitle packet, inline tags removed."""
    if codec == "mov_text":
        length = int.from_bytes(data[:2], "big") if len(data) >= 2 else 0
        data = data[2 : 2 + length]
    text = data.decode("utf-8", errors="replace")
    if codec in ("ass", "ssa"):
        # ASS into MP4 or WebM was dropped where ffmpeg converts it: its text kept, its styling not.
        text = text.split(",", _ASS_FIELDS_BEFORE_TEXT)[-1]
        text = text.replace("\\N", "\n").replace("\\n", "\n").replace("\\h", " ")
    return _TAGS.sub("", text).strip("\x00")


def _converted_text(packet: av.packet.Packet[Any], codec: str, target: str) -> av.packet.Packet[Any]:
    """A packet of subtitle text in ``target``'s layout, with ``packet``'s timing."""
    body = _subtitle_text(bytes(packet), codec).encode("utf-8")
    if target == "mov_text":
        body = len(body).to_bytes(2, "big") + body
    out = av.packet.Packet(body)
    out.pts, out.dts, out.duration, out.time_base = packet.pts, packet.dts, packet.duration, packet.time_base
    return out
