"""Text subtitles through FFmpeg: the tracks of a file and their cues as (start, end, text).

:func:`subtitle_tracks` lists a file's subtitle streams (an ``.srt`` / ``.ass`` / ``.vtt`` file is one
track itself); :func:`read_cues` demuxes one stream and decodes its packets with FFmpeg's subtitle
decoders (SubRip, ASS / SSA, mov_text, WebVTT: each hands out ASS events), keeping the text: ASS
override tags (``{\\i1}``, ``{\\pos(..)}``, ...) are stripped, ``\\N`` becomes a line break; a SubRip, ASS or
WebVTT cue that is not UTF-8 is read as Windows-1252 (Latin-1's superset). Where a cue is
placed (:attr:`SubtitleCue.placement`: bottom, middle or top) is kept from its ``{\\an8}`` / ``{\\a6}`` tag
or its ASS style's alignment, as signs and overlapping speakers use it; the rest of the styling is not. Bitmap
subtitles (PGS, DVD, DVB) are listed with ``text=False`` and have no cues here. No PyAV object leaves
this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import av
import av.container

from alpha2.ffmpeg_bridge.channel_layouts import open_input
from alpha2.ffmpeg_bridge.errors import MediaFormatError, from_ffmpeg, from_ffmpeg_open
from alpha2.gpu.errors import InvalidInputError

__all__ = [
    "PLACEMENTS",
    "SubtitleCue",
    "SubtitleTrackInfo",
    "ass_placement",
    "ass_text",
    "read_cues",
    "style_placements",
    "subtitle_path",
    "subtitle_tracks",
]

_BITMAP_CODECS = frozenset({"hdmv_pgs_subtitle", "dvd_subtitle", "dvb_subtitle", "xsub", "dvb_teletext"})
_PLAIN_TEXT_CODECS = frozenset({"srt", "subrip", "ssa", "ass", "webvtt", "text"})
"""Decoders whose packets are the cue's text itself (mov_text's hold its length and style boxes)."""
_DEFAULT_CUE_S = 4.0
"""How long a cue with no duration stays (until the next one, at most this)."""
_OVERRIDE = re.compile(r"\{[^}]*\}")
_DRAWING = re.compile(r"\{[^}]*\\p[1-9][^}]*\}.*?(\{[^}]*\\p0[^}]*\}|$)", re.S)


@dataclass(frozen=True)
class SubtitleCue:
    """One subtitle on display from ``start_s`` to ``end_s``."""

    start_s: float
    """When it appears, media seconds."""
    end_s: float
    """When it goes, media seconds."""
    text: str
    """Its text, lines split at ``\\n``, without styling."""
    placement: str = "bottom"
    """Where it goes: ``bottom`` (centre), ``middle`` or ``top``, from its ASS alignment."""


@dataclass(frozen=True)
class SubtitleTrackInfo:
    """A subtitle stream of a file."""

    source: str
    """The file."""
    stream_index: int
    """The stream's index in the container."""
    codec: str
    """FFmpeg's codec name (``subrip``, ``ass``, ``mov_text``, ``webvtt``, ...)."""
    language: str | None
    """Its language tag, if any."""
    title: str | None
    """Its title, if any."""
    text: bool
    """Whether it is text (cues can be read); bitmap subtitles are not."""
    default: bool = False
    """Whether the file marks it as the default track."""


def ass_text(event: str) -> str:
    """The text of an ASS dialogue text field: override tags and drawings stripped, ``\\N`` / ``\\n``
    as line breaks, ``\\h`` as a space."""
    text = _DRAWING.sub("", event)
    text = _OVERRIDE.sub("", text)
    text = text.replace("\\N", "\n").replace("\\n", "\n").replace("\\h", "\u00a0")
    lines = [line.strip() for line in text.split("\n")]
    return "\n".join(lines).strip("\n")


PLACEMENTS = ("bottom", "middle", "top")
"""Where a cue is drawn (:attr:`SubtitleCue.placement`)."""
_AN_TAG = re.compile(r"\\an([1-9])")
_A_TAG = re.compile(r"\\a([1-9]|1[01])(?![0-9])")


def _numpad_row(alignment: int) -> str:
    """An ASS (v4+) alignment, the numpad's digit (1-3 bottom, 4-6 middle, 7-9 top), as a placement."""
    return "bottom" if alignment <= 3 else "middle" if alignment <= 6 else "top"


def _legacy_row(alignment: int) -> str:
    """An SSA (v4) alignment: 1-3 bottom, 5-7 top, 9-11 middle (4 and 8 unused)."""
    return "top" if 5 <= alignment <= 7 else "middle" if alignment >= 9 else "bottom"


def ass_placement(event: str, style: str = "bottom") -> str:
    """Where an ASS dialogue text goes: its first ``{\\an..}`` or ``{\\a..}`` override (only the first
    counts, as in libass), else ``style``'s (the placement of the event's style)."""
    for block in _OVERRIDE.findall(event):
        numpad = _AN_TAG.search(block)
        if numpad:
            return _numpad_row(int(numpad.group(1)))
        legacy = _A_TAG.search(block)
        if legacy:
            return _legacy_row(int(legacy.group(1)))
    return style


def style_placements(header: bytes | str | None) -> dict[str, str]:
    """The placement of each style an ASS / SSA script header (a stream's extradata) names, from its
    ``Alignment`` field; empty when it has none."""
    if not header:
        return {}
    text = header.decode("utf-8", "replace") if isinstance(header, bytes) else header
    legacy = "[v4 styles]" in text.lower() and "[v4+ styles]" not in text.lower()
    fields: list[str] = []
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "format" and "alignment" in value.lower() and "name" in value.lower():
            fields = [f.strip().lower() for f in value.split(",")]
        elif key == "style" and fields:
            values = [v.strip() for v in value.split(",")]
            if len(values) < len(fields):
                continue
            try:
                alignment = int(values[fields.index("alignment")])
            except ValueError:
                continue
            row = _legacy_row(alignment) if legacy else _numpad_row(min(max(alignment, 1), 9))
            found[values[fields.index("name")]] = row
    return found


def _open(source: str) -> av.container.InputContainer:
    try:
        container = open_input(source, mode="r", metadata_errors="replace")
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(source)) from exc
    if not isinstance(container, av.container.InputContainer):
        container.close()
        raise MediaFormatError(f"{source!r} did not open as an input")
    return container


def subtitle_path(source: object, who: str) -> str:
    """``source`` as a path string; an :class:`InvalidInputError` naming ``who`` where it is none
    (bytes went to PyAV as a file object and came back as its untyped ValueError; None a TypeError)."""
    where = os.fspath(source) if isinstance(source, str | os.PathLike) else None
    if not isinstance(where, str):
        raise InvalidInputError(f"{who} takes a path (str or os.PathLike), got {type(source).__name__}")
    return where


def _info(source: str, stream: Any) -> SubtitleTrackInfo:
    cc = stream.codec_context
    # The codec's name, as ffprobe says it (hdmv_pgs_subtitle, subrip), not its decoder's (pgssub, srt)
    name = str(getattr(getattr(cc, "codec", None), "canonical_name", None) or cc.name)
    metadata = stream.metadata or {}
    disposition = getattr(stream, "disposition", 0)
    return SubtitleTrackInfo(
        source=source,
        stream_index=int(stream.index),
        codec=name,
        language=metadata.get("language") or None,
        title=metadata.get("title") or None,
        text=name not in _BITMAP_CODECS,
        default=bool(int(disposition) & 1),
    )


def subtitle_tracks(source: str | os.PathLike[str]) -> list[SubtitleTrackInfo]:
    """The subtitle streams of ``source``, in the container's order.

    Raises:
        InvalidInputError: ``source`` is not a path (str or os.PathLike).
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """
    where = subtitle_path(source, "subtitle_tracks")
    with _open(where) as container:
        return [_info(where, stream) for stream in container.streams.subtitles]


def _event_text(item: Any, styles: dict[str, str] | None = None) -> tuple[str, str]:
    """An event's text and placement (``styles``: each style's placement, :func:`style_placements`)."""
    dialogue = getattr(item, "dialogue", None)
    if dialogue:
        raw = dialogue.decode("utf-8", "replace") if isinstance(dialogue, bytes) else str(dialogue)
        style = "bottom"
        event = getattr(item, "ass", None)
        if styles and event:
            line = event.decode("utf-8", "replace") if isinstance(event, bytes) else str(event)
            fields = line.split(
                ",", 8
            )  # ReadOrder, Layer, Style, Name, MarginL, MarginR, MarginV, Effect, Text
            if len(fields) > 2:
                style = styles.get(fields[2].strip(), "bottom")
        return ass_text(raw), ass_placement(raw, style)
    text = getattr(item, "text", None)
    if text:
        return (text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)).strip(), "bottom"
    return "", "bottom"


def _decode(stream: Any, packet: Any) -> list[Any]:
    """A packet's subtitles; a plain-text cue that is not UTF-8 (FFmpeg's decoders refuse it) is read as
    Windows-1252, Latin-1's superset, as mpv's fallback reads a Western European file."""
    try:
        return list(stream.decode(packet))
    except av.error.InvalidDataError:
        if stream.codec_context.name not in _PLAIN_TEXT_CODECS:
            raise
        data = bytes(packet)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            retry = av.Packet(data.decode("cp1252", "replace").encode("utf-8"))
            retry.pts, retry.dts, retry.duration = packet.pts, packet.dts, packet.duration
            retry.time_base = packet.time_base
            return list(stream.decode(retry))
        raise


def read_cues(
    source: str | os.PathLike[str],
    stream_index: int | None = None,
    *,
    stop: Callable[[], bool] | None = None,
) -> list[SubtitleCue]:
    """Every cue of a text subtitle stream of ``source``, sorted by start.

    Args:
        source: A media file, or a subtitle file (``.srt``, ``.ass``, ``.vtt``).
        stream_index: The stream's index in the container; None: the first subtitle stream.
        stop: Called between packets; returning True ends the reading early (with the cues so far).

    Raises:
        InvalidInputError: no such subtitle stream, or a bitmap one; ``source`` is not a path.
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """
    if stream_index is not None and (isinstance(stream_index, bool) or not isinstance(stream_index, int)):
        # '2' matched no stream and was said as 'no subtitle stream 2' beside a stream 2 (an outside pass)
        raise InvalidInputError(
            f"stream_index must be an int (the stream's index) or None, got {stream_index!r}"
        )
    where = subtitle_path(source, "read_cues")
    with _open(where) as container:
        streams = list(container.streams.subtitles)
        chosen = [s for s in streams if stream_index is None or s.index == stream_index][:1]
        if not chosen and stream_index is None:
            raise InvalidInputError(f"{where!r} has no subtitle streams")
        if not chosen:
            have = ", ".join(str(s.index) for s in streams) or "none"
            raise InvalidInputError(
                f"{where!r} has no subtitle stream {stream_index} (its subtitle streams: {have})"
            )
        stream = chosen[0]
        info = _info(where, stream)
        if not info.text:
            raise InvalidInputError(f"subtitle stream {stream.index} of {where!r} is a bitmap ({info.codec})")
        styles = style_placements(getattr(stream.codec_context, "extradata", None))
        cues: list[tuple[float, float | None, str, str]] = []
        try:
            for packet in container.demux(stream):
                if stop is not None and stop():
                    break
                if packet.pts is None or packet.time_base is None:
                    continue
                start = float(packet.pts * packet.time_base)
                end = start + float(packet.duration * packet.time_base) if packet.duration else None
                placed: dict[str, list[str]] = {}
                for text, placement in (_event_text(item, styles) for item in _decode(stream, packet)):
                    if text:
                        placed.setdefault(placement, []).append(text)
                for placement, texts in placed.items():
                    cues.append((start, end, "\n".join(texts), placement))
        except av.error.FFmpegError as exc:
            raise from_ffmpeg(exc, f"reading subtitles of {where!r}") from exc
    cues.sort(key=lambda cue: cue[0])
    out = []
    for index, (start, end, text, placement) in enumerate(cues):
        if end is None or end <= start:
            following = next((c[0] for c in cues[index + 1 :] if c[3] == placement), start + _DEFAULT_CUE_S)
            end = min(start + _DEFAULT_CUE_S, max(following, start + 0.1))
        out.append(SubtitleCue(start, end, text, placement))
    return out
