"""What a media file holds, as its demuxer and its streams' parameters say, nothing decoded:
:func:`describe_file` -> :class:`FileFacts` (the container) with a :class:`StreamFacts` per stream.

The front door adds what only decoding tells (the first frame's resolved colour, HDR metadata, the
decoder that runs): :func:`alpha2.api.media.describe`, which ``alpha2 probe FILE`` prints.
"""

from __future__ import annotations

import fractions
import itertools
import math
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import av

from alpha2.ffmpeg_bridge.channel_layouts import open_input
from alpha2.ffmpeg_bridge.errors import MediaFormatError, from_ffmpeg_open
from alpha2.ffmpeg_bridge.media import (
    DEFAULT_MAX_PIXELS,
    average_rate,
    codec_name,
    probe_options,
    rotation_from_degrees_ccw,
    stream_language,
    stream_rotation,
    subtitle_codec_name,
)
from alpha2.ffmpeg_bridge.side_streams import StreamKind, chapter_tracks, stream_kind
from alpha2.gpu.geometry import Rotation

__all__ = ["MARKS", "ChapterFacts", "FileFacts", "StreamFacts", "describe_file"]

_TEXT_SUBTITLES = frozenset(
    {"subrip", "srt", "ass", "ssa", "mov_text", "webvtt", "text", "microdvd", "subviewer"}
)


@dataclass(frozen=True)
class StreamFacts:
    """One stream of a file, as the container and the stream's parameters say."""

    index: int
    """Index of the stream in the container."""
    kind: StreamKind
    """What it carries."""
    codec: str
    """FFmpeg's codec name (``h264``, ``aac``, ``subrip``); an attachment's MIME type; "" if none."""
    profile: str | None = None
    """The codec profile (``High``, ``Main 10``, ``LC``), where the parameters say."""
    language: str | None = None
    """ISO 639 language tag (``eng``); None when untagged (``und``)."""
    title: str | None = None
    """The stream's title tag."""
    default: bool = False
    """Marked as the default of its kind."""
    forced: bool = False
    """Marked forced (subtitles shown even when subtitles are off)."""
    hearing_impaired: bool = False
    """Marked for the hearing impaired (subtitles with sounds said: SDH)."""
    visual_impaired: bool = False
    """Marked for the visually impaired (audio that describes the picture)."""
    commentary: bool = False
    """Marked as a commentary (FFmpeg's ``comment`` disposition)."""
    original: bool = False
    """Marked as the original language's."""
    dub: bool = False
    """Marked as a dub (not the original language's)."""
    captions: bool = False
    """Marked as captions (FFmpeg's ``captions`` disposition)."""
    descriptions: bool = False
    """Marked as descriptions of the picture (FFmpeg's ``descriptions`` disposition)."""
    attached_picture: bool = False
    """A video stream that is one picture attached to the file (cover art)."""
    bit_rate: int | None = None
    """Bits per second, where the container or the parameters say."""
    duration_seconds: float | None = None
    """The stream's duration, where the container says."""
    start_seconds: float | None = None
    """The stream's first timestamp in seconds, where the container says."""
    width: int = 0
    """Video: the stored picture's width in pixels (before :attr:`rotation`)."""
    height: int = 0
    """Video: the stored picture's height in pixels."""
    sample_aspect_ratio: fractions.Fraction | None = None
    """Video: the shape of a pixel, where it is not square (None: square or not said)."""
    rotation: Rotation = Rotation.NONE
    """Video: the clockwise turn of the legacy ``rotate`` tag, else of an MP4 / MOV track's matrix (not
    mirrored). Another display matrix (Matroska's) is read from the first frame, which this does not
    decode: :func:`alpha2.api.describe.describe` puts that turn here where it decodes."""
    frame_rate: float | None = None
    """Video: average frames per second, where the container says."""
    frame_count: int | None = None
    """Video: frames the container records (its header or index), where it does; not always what
    decodes (an MP4 edit list shows part of the samples, an AVI may count a frame more)."""
    pixel_format: str | None = None
    """Video: FFmpeg's pixel format name of the decoded pictures (``yuv420p``, ``yuv420p10le``)."""
    colour_tags: tuple[str, str, str, str] | None = None
    """Video: the matrix, primaries, transfer and range as the stream is tagged (``unknown`` where it
    is not), before any guess."""
    chapter_track: bool = False
    """Data: an MP4 / MOV chapter track (FFmpeg reads it into the file's chapters and shows it as a data
    stream without a codec)."""
    alpha_beside: bool = False
    """Video: the stream carries its alpha beside the picture (WebM's ``alpha_mode``: VP8 / VP9 alpha
    in BlockAdditions), which FFmpeg's own decoders leave out: the pictures decode opaque."""
    variable_rate: tuple[float, float] | None = None
    """Video: the lowest and highest frame rates (fps) among the first :data:`RATE_SCAN_PACKETS`
    packets' times, where they differ by more than a fifth (variable frame rate; a phone's, a screen
    recording's); None for a constant rate, or where it was not looked at."""
    field_order: str | None = None
    """Video: how the stream's parameters say it is interlaced (``top field first``, ``bottom field
    first``, or either with its fields coded in the other order); None for progressive or not said."""
    sample_rate: int = 0
    """Audio: samples per second per channel (0 when not said)."""
    channels: int = 0
    """Audio: channels (0 when not said)."""
    layout: str | None = None
    """Audio: the channel layout's name (``stereo``, ``5.1``); None when the file gives the channels'
    count and not their order (FFmpeg's ``1 channels`` for WMA, MXF's PCM), or nothing."""
    sample_format: str | None = None
    """Audio: FFmpeg's sample format name (``fltp``, ``s16``)."""
    text: bool | None = None
    """Subtitles: True for text, False for pictures (PGS, DVD); None for other kinds."""
    filename: str | None = None
    """Attachment: its file name."""
    codec_tag: str | None = None
    """Data without an FFmpeg codec: the four-character code of its format in an MP4 / MOV (``tmcd``,
    ``mebx``), which PyAV does not give and is read from the file's ``moov`` box; None elsewhere."""
    timecode: str | None = None
    """The start timecode the stream's ``timecode`` tag gives (``01:00:00:00``): a MOV timecode
    track's (and its video stream's), or a Matroska stream's TIMECODE tag; None when untagged."""
    empty: bool = False
    """Video: the stream holds no packets, so no frames (its packets read to the end of the file by
    :func:`describe_file`'s scan found none, or Matroska's statistics tags count none)."""

    @property
    def marks(self) -> tuple[str, ...]:
        """The marks (dispositions) a person picks a stream by, in words: ``default``, ``forced``,
        ``hearing impaired``, ``visual impaired``, ``commentary``, ``original``, ``dub``,
        ``captions``, ``descriptions``."""
        return tuple(name.replace("_", " ") for name in MARKS if getattr(self, name))

    @property
    def frames_by_duration(self) -> int | None:
        """Video: the frames the stream's duration holds at its frame rate, where both are said
        (what :attr:`frame_count` is checked against, cheaply: nothing is decoded)."""
        if self.duration_seconds is None or not self.frame_rate or self.attached_picture:
            return None
        return round(self.duration_seconds * self.frame_rate)

    @property
    def frame_count_disagrees(self) -> bool:
        """Video: whether :attr:`frame_count` is clearly not what the stream's duration holds (more than
        2 frames and 2% apart): an MP4 edit list that plays part of the samples the container counts.
        Not said of a variable rate (:attr:`variable_rate`), whose average FFmpeg takes from the first
        frames: a GIF of 60 frames in 2.000 s with delays of 3 and 4 hundredths has 33.3 fps there, and
        its true count was given as 'about 67 frames (the container lists 60)'."""
        expected = self.frames_by_duration
        if not self.frame_count or expected is None or self.variable_rate is not None:
            return False
        return abs(self.frame_count - expected) > max(2, 0.02 * self.frame_count)

    @property
    def display_size(self) -> tuple[int, int]:
        """Video: (width, height) as shown, swapped by a quarter-turn :attr:`rotation`."""
        if self.rotation in (Rotation.CW90, Rotation.CW270):
            return self.height, self.width
        return self.width, self.height

    @property
    def shown_size(self) -> tuple[int, int]:
        """Video: (width, height) as a player shows it: the width scaled by the pixels' shape
        (:attr:`sample_aspect_ratio`, rounded), then swapped by a quarter-turn :attr:`rotation`."""
        width = self.width
        if self.sample_aspect_ratio is not None:
            width = max(1, round(width * self.sample_aspect_ratio))
        if self.rotation in (Rotation.CW90, Rotation.CW270):
            return self.height, width
        return width, self.height


@dataclass(frozen=True)
class ChapterFacts:
    """One chapter of a file, as its container marks it."""

    start_seconds: float
    """Where it begins."""
    end_seconds: float
    """Where it ends."""
    title: str | None
    """Its title tag, if any."""


@dataclass(frozen=True)
class FileFacts:
    """A media file: its container and every stream."""

    path: str
    """The path as given."""
    format: str
    """The demuxer's name (``mov,mp4,m4a,3gp,3g2,mj2``, ``matroska,webm``)."""
    format_long: str
    """The demuxer's long name (``QuickTime / MOV``, ``Matroska / WebM``)."""
    size_bytes: int | None
    """The file's size in bytes (None when it is not a regular file)."""
    duration_seconds: float | None
    """How long it plays, where the container says."""
    start_seconds: float | None
    """Its first timestamp in seconds, where the container says."""
    bit_rate: int | None
    """Bits per second over the whole file, where the container says."""
    streams: tuple[StreamFacts, ...]
    """Every stream, in container order."""
    tags: tuple[tuple[str, str], ...] = ()
    """The container's metadata tags (title, encoder, creation time, ...), in the file's order."""
    chapters: tuple[ChapterFacts, ...] = ()
    """Its chapters, in order (empty: none)."""


MARKS = (
    "default",
    "forced",
    "hearing_impaired",
    "visual_impaired",
    "commentary",
    "original",
    "dub",
    "captions",
    "descriptions",
)
"""The :class:`StreamFacts` fields of the marks, in the order they are said."""

_DISPOSITIONS = {name: "comment" if name == "commentary" else name for name in MARKS}
"""Each mark's name in FFmpeg's dispositions."""


def _chapters(container: Any) -> tuple[ChapterFacts, ...]:
    """The container's chapters (PyAV's dicts: start, end and time_base, metadata)."""
    found = []
    for chapter in getattr(container, "chapters", lambda: [])():
        base = chapter.get("time_base")
        if not base:
            continue
        title = (chapter.get("metadata") or {}).get("title")
        found.append(
            ChapterFacts(
                float(chapter["start"] * base), float(chapter["end"] * base), str(title) if title else None
            )
        )
    return tuple(found)


def describe_file(path: str | os.PathLike[str], *, rates: bool = True) -> FileFacts:
    """Describe the file at ``path`` without decoding it; ``rates``: read the first video packets'
    times for :attr:`StreamFacts.variable_rate` (False: the headers alone).

    Raises:
        MediaNotFoundError: no such file, or it cannot be read.
        MediaFormatError: it is not a media file FFmpeg can open.
    """
    where = os.fspath(path)
    try:
        container = open_input(
            where, mode="r", metadata_errors="replace", options=probe_options(DEFAULT_MAX_PIXELS)
        )
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(where)) from exc
    try:
        if not isinstance(container, av.container.InputContainer):
            raise MediaFormatError(f"{where!r} did not open as an input")
        tracks = chapter_tracks(container)
        streams = tuple(
            replace(facts, chapter_track=True) if facts.index in tracks else facts
            for facts in (_stream_facts(stream) for stream in container.streams)
        )
        if any(f.kind is StreamKind.DATA and not f.codec for f in streams):
            streams = _with_codec_tags(container, where, streams)
        if any(f.kind is StreamKind.VIDEO and f.rotation is Rotation.NONE for f in streams):
            streams = _with_track_turns(container, where, streams)
        video = next((f for f in streams if f.kind is StreamKind.VIDEO and not f.attached_picture), None)
        if video is not None and rates:
            span, empty = _rate_span(container, container.streams[video.index])
            if span is not None or empty:
                found = replace(video, variable_rate=span, empty=video.empty or empty)
                streams = tuple(found if f is video else f for f in streams)
        fmt = container.format
        size: int | None = None
        try:
            stat = os.stat(where)
            size = stat.st_size if os.path.isfile(where) else None
        except OSError:
            pass
        duration = None if container.duration is None else container.duration / av.time_base
        bit_rate = int(container.bit_rate) if container.bit_rate else None
        start = None if container.start_time is None else container.start_time / av.time_base
        if duration is not None and "matroska" in str(fmt.name).split(","):
            # FFmpeg gives a Matroska file that starts late a duration counted from 0 (its muxer writes
            # where the file ends), and no start where its video's packets carry no duration: a 0.6 s
            # clip from 10 h was said 10:00:00.600 long (and where a start was given, 0 kb/s).
            first = _first_seconds(container) if start is None else start
            if first is not None and 0 < first < duration:
                start, duration = first, round(duration - first, 6)
                # FFmpeg's bit rate is the size over that duration (6 kb/s for 56): over the real one.
                if size is not None and container.bit_rate:
                    bit_rate = round(size * 8 / duration)
        return FileFacts(
            path=where,
            format=str(fmt.name),
            format_long=str(fmt.long_name or fmt.name),
            size_bytes=size,
            duration_seconds=duration,
            start_seconds=start,
            bit_rate=bit_rate,
            streams=streams,
            tags=tuple((str(k), str(v)) for k, v in container.metadata.items()),
            chapters=_chapters(container),
        )
    finally:
        container.close()


RATE_SCAN_PACKETS = 240
"""Packets of the video stream whose times :func:`describe_file` reads to tell a variable frame rate
(demuxed, not decoded: a few milliseconds)."""


def _first_seconds(container: Any) -> float | None:
    """The earliest time (seconds) among the file's first packets; None where none is timed or the file
    cannot be read again from its start."""
    times: list[float] = []
    try:
        container.seek(0)
        for count, packet in enumerate(container.demux()):
            if packet.pts is not None and packet.time_base is not None and packet.size:
                times.append(float(packet.pts * packet.time_base))
            if count >= 32:
                break
    except (av.error.FFmpegError, ValueError):
        return None
    return min(times) if times else None


def _rate_span(container: Any, stream: Any) -> tuple[tuple[float, float] | None, bool]:
    """The lowest and highest frame rates among the stream's first packets' times (the 5th and 95th
    percentile of the gaps between them in presentation order, so that one dropped frame is not a
    variable rate), where they differ by more than a fifth, else None (also where unreadable); and
    whether the file ended before any packet of the stream came (it holds no frames)."""
    times: list[int] = []
    packets = 0
    try:
        for packet in container.demux(stream):
            if packet.size:
                packets += 1
            if packet.pts is not None and packet.size:
                times.append(int(packet.pts))
            if len(times) >= RATE_SCAN_PACKETS:
                break
    except (av.error.FFmpegError, ValueError):
        return None, False
    empty = packets == 0  # demux() ends at the file's end only
    times.sort()
    # The last few: B-frames whose packets come after the ones read would sit between them.
    gaps = sorted(b - a for a, b in itertools.pairwise(times[:-8]) if b > a)
    if len(gaps) < 10 or stream.time_base is None:
        return None, empty
    short, long = gaps[len(gaps) // 20], gaps[(len(gaps) * 19) // 20]
    if long <= short * 1.2:
        return None, empty
    tb = float(stream.time_base)
    return (_snapped(1 / (long * tb)), _snapped(1 / (short * tb))), empty


def _snapped(fps: float) -> float:
    """A rate from timestamps of a coarse clock (Matroska's millisecond: 30 fps as gaps of 33 ms, read
    as 30.303) to the whole number of frames it is within 2% of, else to 3 decimals."""
    near = round(fps)
    return float(near) if near and abs(fps - near) <= 0.02 * near else round(fps, 3)


def _seconds(value: int | None, time_base: Any) -> float | None:
    if value is None or time_base is None:
        return None
    return float(value * time_base)


def _stream_facts(stream: Any) -> StreamFacts:
    kind = stream_kind(stream)
    metadata = stream.metadata
    disposition = int(stream.disposition)
    flags = av.stream.Disposition
    cc: Any = getattr(stream, "codec_context", None)
    # Video and audio by the codec's own name (av1, mp3, as ffprobe says), where the decoder's differs
    # (libdav1d, mp3float); subtitles keep their decoder's (srt, ass), which say the format.
    if cc is None:
        # A data stream's codec where FFmpeg has one (klv, scte_35, bin_data); PyAV gives it no context.
        codec = str(getattr(stream, "name", None) or "") if kind is StreamKind.DATA else ""
    elif kind in (StreamKind.VIDEO, StreamKind.AUDIO):
        codec = codec_name(cc)
    else:
        codec = subtitle_codec_name(cc) if kind is StreamKind.SUBTITLE else str(cc.name)
    if kind is StreamKind.ATTACHMENT:
        codec = str(metadata.get("mimetype", "") or "")
    profile = getattr(cc, "profile", None) if cc is not None else None
    bit_rate = getattr(cc, "bit_rate", None) if cc is not None else None
    common: dict[str, Any] = {
        "index": int(stream.index),
        "kind": kind,
        "codec": codec,
        "profile": str(profile) if profile else None,
        "language": stream_language(metadata),
        "title": str(metadata.get("title")) if metadata.get("title") else None,
        **{name: bool(disposition & int(flags[ffmpeg])) for name, ffmpeg in _DISPOSITIONS.items()},
        "timecode": _tag(metadata, "timecode"),
        "bit_rate": int(bit_rate) if bit_rate else None,
        "duration_seconds": _seconds(stream.duration, stream.time_base),
        "start_seconds": _seconds(stream.start_time, stream.time_base),
    }
    if kind is StreamKind.VIDEO and cc is not None:
        # The container's pixel shape (Matroska's display size, MP4's pasp) before the bitstream's, as
        # FFmpeg's av_guess_sample_aspect_ratio, ffprobe and players take it.
        sar = getattr(stream, "sample_aspect_ratio", None) or getattr(cc, "sample_aspect_ratio", None)
        # A raw .h264's by its bitstream, as the decoder times its frames (the demuxer's is its default 25).
        rate = average_rate(stream.container, stream) or getattr(stream, "guessed_rate", None)
        return StreamFacts(
            **common,
            attached_picture=bool(disposition & int(flags.attached_pic)),
            width=int(cc.width or 0),
            height=int(cc.height or 0),
            sample_aspect_ratio=fractions.Fraction(sar) if sar and sar != 1 else None,
            rotation=stream_rotation(stream),
            frame_rate=float(rate) if rate else None,
            frame_count=int(stream.frames) if stream.frames else None,
            pixel_format=str(cc.format.name) if cc.format is not None else None,
            colour_tags=_colour_tags(cc),
            alpha_beside=_alpha_beside(metadata, cc),
            field_order=_FIELD_ORDERS.get(int(getattr(cc, "field_order", 0) or 0)),
            empty=_tag(metadata, "NUMBER_OF_FRAMES") == "0",
        )
    if kind is StreamKind.AUDIO and cc is not None:
        layout = getattr(cc, "layout", None)
        sample_format = getattr(cc, "format", None)
        return StreamFacts(
            **common,
            sample_rate=int(cc.sample_rate or 0),
            channels=int(getattr(cc, "channels", 0) or 0),
            layout=_layout_name(layout),
            sample_format=str(sample_format.name) if sample_format is not None else None,
        )
    if kind is StreamKind.SUBTITLE:
        return StreamFacts(**common, text=_is_text(cc, codec))
    if kind is StreamKind.ATTACHMENT:
        return StreamFacts(**common, filename=str(metadata.get("filename", "") or "") or None)
    return StreamFacts(**common)


def _is_text(cc: Any, codec: str) -> bool:
    """Whether a subtitle stream is text, as FFmpeg's codec descriptor marks it (text or bitmap), else by
    the known text formats' names: SAMI, JACOsub, RealText, closed captions, ... are text, and a list
    of names alone said them 'pictures'."""
    descriptor = getattr(cc, "codec", None) if cc is not None else None
    text = bool(getattr(descriptor, "text_sub", False))
    bitmap = bool(getattr(descriptor, "bitmap_sub", False))
    if text != bitmap:  # (DVB teletext is marked both: its decoder gives either)
        return text
    return codec in _TEXT_SUBTITLES


def _tag(metadata: Any, name: str) -> str | None:
    """The stream's tag ``name`` whatever its case (Matroska's are upper case) and language suffix
    (mkvmerge's ``NUMBER_OF_FRAMES-eng``); None when missing or empty."""
    wanted = name.lower()
    for key, value in metadata.items():
        if str(key).lower().split("-")[0] == wanted and str(value).strip():
            return str(value).strip()
    return None


def _with_codec_tags(container: Any, path: str, streams: tuple[StreamFacts, ...]) -> tuple[StreamFacts, ...]:
    """``streams`` with the codec tags of an MP4 / MOV's data tracks that FFmpeg has no codec for,
    read from its ``moov`` box (FFmpeg's stream id is the track's ID)."""
    if "mov" not in container.format.name.split(",") or not os.path.isfile(path):
        return streams
    tags = _mov_sample_entries(path)
    found = []
    for facts in streams:
        tag = tags.get(int(container.streams[facts.index].id))
        if facts.kind is StreamKind.DATA and not facts.codec and tag:
            facts = replace(facts, codec_tag=tag)
        found.append(facts)
    return tuple(found)


def _with_track_turns(container: Any, path: str, streams: tuple[StreamFacts, ...]) -> tuple[StreamFacts, ...]:
    """``streams`` with an MP4 / MOV video track's turn, read from its ``tkhd`` matrix, where no
    ``rotate`` tag gave one: FFmpeg shows that matrix (a phone's portrait video) as the stream's
    display matrix, which PyAV gives only on decoded frames; ffprobe says it without decoding."""
    if "mov" not in container.format.name.split(",") or not os.path.isfile(path):
        return streams
    turns = _mov_track_turns(path)
    found = []
    for facts in streams:
        turn = turns.get(int(container.streams[facts.index].id), Rotation.NONE)
        if facts.kind is StreamKind.VIDEO and facts.rotation is Rotation.NONE and turn is not Rotation.NONE:
            facts = replace(facts, rotation=turn)
        found.append(facts)
    return tuple(found)


def _mov_track_turns(path: str) -> dict[int, Rotation]:
    """Each track's ID -> the clockwise turn of its ``tkhd`` matrix (a quarter turn's multiple, not
    mirrored; others are left to decoding, which reads them from the frames), read as FFmpeg's
    ``av_display_rotation_get`` reads it; empty where unreadable."""
    found: dict[int, Rotation] = {}
    try:
        with open(path, "rb") as file:
            end = os.fstat(file.fileno()).st_size
            for _, start, stop in _boxes(file, 0, end, b"moov"):
                for _, track, track_end in _boxes(file, start, stop, b"trak"):
                    for _, body, _ in _boxes(file, track, track_end, b"tkhd"):
                        file.seek(body)
                        wide = file.read(1) == b"\1"
                        file.seek(body + (20 if wide else 12))
                        track_id = struct.unpack(">I", file.read(4))[0]
                        # Then (reserved,) duration, 8 reserved, layer, group, volume, 2 reserved.
                        file.seek(body + (44 if wide else 32) + 8)
                        a, b, _, c, d = struct.unpack(">5i", file.read(20))
                        if a * d - b * c <= 0:  # mirrored (or no picture): left to decoding
                            continue
                        degrees_ccw = -math.degrees(math.atan2(b / math.hypot(b, d), a / math.hypot(a, c)))
                        found[track_id] = rotation_from_degrees_ccw(degrees_ccw)
    except (OSError, struct.error, ZeroDivisionError):
        return {}
    return found


def _mov_sample_entries(path: str) -> dict[int, str]:
    """Each track's ID -> the four-character code of its first sample description (``avc1``, ``tmcd``,
    ``mebx``), read from the file's ``moov`` box (the media data is skipped); empty where unreadable
    (a compressed ``cmov``, a truncated file)."""
    found: dict[int, str] = {}
    try:
        with open(path, "rb") as file:
            end = os.fstat(file.fileno()).st_size
            for _, start, stop in _boxes(file, 0, end, b"moov"):
                for _, track, track_end in _boxes(file, start, stop, b"trak"):
                    entry = _track_entry(file, track, track_end)
                    if entry is not None:
                        found[entry[0]] = entry[1]
    except (OSError, struct.error):
        return {}
    return found


def _track_entry(file: Any, start: int, stop: int) -> tuple[int, str] | None:
    """A ``trak`` box's track ID (its ``tkhd``) and first sample description's code."""
    track_id: int | None = None
    for _, body, _ in _boxes(file, start, stop, b"tkhd"):
        file.seek(body)
        version = file.read(1)
        file.seek(body + (20 if version == b"\1" else 12))
        track_id = struct.unpack(">I", file.read(4))[0]
    spans = [(start, stop)]
    for kind in (b"mdia", b"minf", b"stbl", b"stsd"):
        spans = [(body, end) for a, b in spans for _, body, end in _boxes(file, a, b, kind)][:1]
    if track_id is None or not spans:
        return None
    file.seek(spans[0][0] + 8)  # version, flags, entry count; then the first entry's size and code
    head = file.read(8)
    if len(head) < 8 or struct.unpack(">I", head[:4])[0] == 0:
        return None
    code = head[4:].decode("latin-1")
    return (track_id, code) if code.isprintable() else None


def _boxes(file: Any, start: int, stop: int, kind: bytes) -> Iterator[tuple[bytes, int, int]]:
    """The ISO BMFF boxes of type ``kind`` between ``start`` and ``stop``: (type, body start, end)."""
    at = start
    while at + 8 <= stop:
        file.seek(at)
        head = file.read(8)
        if len(head) < 8:
            return
        size, name = struct.unpack(">I4s", head)
        body = at + 8
        if size == 1:
            size = struct.unpack(">Q", file.read(8))[0]
            body += 8
        elif size == 0:
            size = stop - at
        if size < body - at:
            return
        if name == kind:
            yield name, body, min(at + size, stop)
        at += size


_FIELD_ORDERS = {
    2: "top field first",
    3: "bottom field first",
    4: "top field first, coded bottom first",
    5: "bottom field first, coded top first",
}
"""FFmpeg's AVFieldOrder values of interlaced video (0: not said, 1: progressive)."""


def _alpha_beside(metadata: Any, cc: Any) -> bool:
    """Whether a video stream's alpha is stored beside its pictures (Matroska's ``alpha_mode`` 1) and
    left out by the decoder (its pixel format has no alpha)."""
    if str(metadata.get("alpha_mode", "")).strip() != "1":
        return False
    fmt = getattr(cc, "format", None)
    return fmt is None or not any(component.is_alpha for component in fmt.components)


def _layout_name(layout: Any) -> str | None:
    """The layout's name; None for none, or for a count of channels in no known order, which FFmpeg
    names ``1 channels``, ``2 channels`` (ASF's WMA, MXF's PCM)."""
    name = str(layout.name) if layout is not None and layout.name else ""
    if not name or _UNORDERED.fullmatch(name):
        return None
    return name


_UNORDERED = re.compile(r"\d+ channels")


def _colour_tags(cc: Any) -> tuple[str, str, str, str]:
    """The stream parameters' matrix, primaries, transfer and range by alpha2's names (``bt709``,
    ``limited``); ``unknown`` where the stream does not say."""
    from alpha2.gpu.colour import ColourMatrix, ColourPrimaries, ColourRange, TransferCharacteristic

    return (
        _tag_name(ColourMatrix, getattr(cc, "colorspace", None), ColourMatrix.UNSPECIFIED),
        _tag_name(ColourPrimaries, getattr(cc, "color_primaries", None), ColourPrimaries.UNSPECIFIED),
        _tag_name(TransferCharacteristic, getattr(cc, "color_trc", None), TransferCharacteristic.UNSPECIFIED),
        _tag_name(ColourRange, getattr(cc, "color_range", None), ColourRange.UNSPECIFIED),
    )


def _tag_name(kind: Any, value: Any, unspecified: Any) -> str:
    if value is None:
        return "unknown"
    try:
        member = kind(int(value))
    except (ValueError, TypeError):
        return f"reserved ({value})"
    if member is unspecified or member.name.startswith("RESERVED"):
        return "unknown"
    return str(member.name.lower())
