"""Text subtitles through FFmpeg: the tracks of a file and their cues as (start, end, text).

:func:`subtitle_tracks` lists a file's subtitle streams (an ``.srt`` / ``.ass`` / ``.vtt`` file is one
track itself); :func:`read_cues` demuxes one stream and decodes its packets with FFmpeg's subtitle
decoders (SubRip, ASS / SSA, mov_text, WebVTT: each hands out ASS events), keeping the text: ASS
override tags (``{\\i1}``, ``{\\pos(..)}``, ...) are stripped, ``\\N`` becomes a line break. Bitmap
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

__all__ = ["SubtitleCue", "SubtitleTrackInfo", "ass_text", "read_cues", "subtitle_tracks"]

_BITMAP_CODECS = frozenset({"hdmv_pgs_subtitle", "dvd_subtitle", "dvb_subtitle", "xsub", "dvb_teletext"})
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


def _open(source: str) -> av.container.InputContainer:
    try:
        container = open_input(source, mode="r", metadata_errors="replace")
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(source)) from exc
    if not isinstance(container, av.container.InputContainer):
        container.close()
        raise MediaFormatError(f"{source!r} did not open as an input")
    return container


def _info(source: str, stream: Any) -> SubtitleTrackInfo:
    name = str(stream.codec_context.name)
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
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """
    where = os.fspath(source)
    with _open(where) as container:
        return [_info(where, stream) for stream in container.streams.subtitles]


def _event_text(item: Any) -> str:
    dialogue = getattr(item, "dialogue", None)
    if dialogue:
        raw = dialogue.decode("utf-8", "replace") if isinstance(dialogue, bytes) else str(dialogue)
        return ass_text(raw)
    text = getattr(item, "text", None)
    if text:
        return (text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)).strip()
    return ""


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
        InvalidInputError: no such subtitle stream, or a bitmap one.
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """
    where = os.fspath(source)
    with _open(where) as container:
        streams = list(container.streams.subtitles)
        chosen = [s for s in streams if stream_index is None or s.index == stream_index][:1]
        if not chosen:
            have = ", ".join(str(s.index) for s in streams) or "none"
            raise InvalidInputError(
                f"{where!r} has no subtitle stream {stream_index} (its subtitle streams: {have})"
            )
        stream = chosen[0]
        info = _info(where, stream)
        if not info.text:
            raise InvalidInputError(f"subtitle stream {stream.index} of {where!r} is a bitmap ({info.codec})")
        cues: list[tuple[float, float | None, str]] = []
        try:
            for packet in container.demux(stream):
                if stop is not None and stop():
                    break
                if packet.pts is None or packet.time_base is None:
                    continue
                start = float(packet.pts * packet.time_base)
                end = start + float(packet.duration * packet.time_base) if packet.duration else None
                texts = [t for t in (_event_text(item) for item in stream.decode(packet)) if t]
                if texts:
                    cues.append((start, end, "\n".join(texts)))
        except av.error.FFmpegError as exc:
            raise from_ffmpeg(exc, f"reading subtitles of {where!r}") from exc
    cues.sort(key=lambda cue: cue[0])
    out = []
    for index, (start, end, text) in enumerate(cues):
        if end is None or end <= start:
            following = cues[index + 1][0] if index + 1 < len(cues) else start + _DEFAULT_CUE_S
            end = min(start + _DEFAULT_CUE_S, max(following, start + 0.1))
        out.append(SubtitleCue(start, end, text))
    return out
