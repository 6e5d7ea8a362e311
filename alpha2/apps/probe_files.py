"""``alpha2 probe FILE ...``: what each media file holds, as a person reads it (or ``--json``).

Per file one heading (container, duration, size, bit rate), then a line per stream: its codec and
profile, and what its kind has (video: size as shown, rate, pixel format, frames; audio: rate, layout;
subtitles: text or pictures; data: what it is, a timecode track's start; languages, titles and the
marks a stream is picked by: default, forced, hearing impaired, commentary, ...). The video stream that
alpha2 decodes gets its colour (as tagged, or what was guessed for missing tags, as the player shows
it), its HDR metadata and the decoder that runs (NVDEC or software, and why). Built on
:func:`alpha2.api.media.describe`; lines are filled to the terminal's width.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from alpha2.apps.cli import (
    print_error,
    rate_text,
    shown_name,
    size_text,
    standard_stream_refusal,
    tag_text,
    terminal_columns,
    time_text,
    wrap_fields,
    wrap_text,
)
from alpha2.gpu.errors import Error, ErrorKind, InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from alpha2.api.describe import MediaDescription, StreamFacts
    from alpha2.api.source import VideoInfo

__all__ = ["channels_text", "describe_lines", "frames_text", "run_files"]


def run_files(args: argparse.Namespace) -> int:
    """Describe ``args.inputs``; a file that cannot be described is said on stderr (one line) and the
    others are still described; exit status 1 when any could not be."""
    from alpha2.api import pipeline
    from alpha2.api.media import describe

    if args.submit or str(args.policy) != "auto":
        raise InvalidInputError(
            "--policy and --submit are for the adapter table ('alpha2 probe' without files); "
            "'alpha2 probe FILE' describes media files"
        )
    described: list[MediaDescription] = []
    errors: list[tuple[str, str, ErrorKind]] = []  # (input, message, kind: batch's rows say it too)
    for path in args.inputs:
        refusal = standard_stream_refusal(path)
        if refusal is not None:
            errors.append((path, refusal, ErrorKind.INVALID_INPUT))
            continue
        try:
            described.append(describe(path, decode=not args.no_decode))
        except Error as exc:
            errors.append((path, exc.message, exc.kind))
    if args.json:
        pipeline.emit_json(
            {
                "command": "probe",
                "files": [d.as_dict() for d in described],
                "errors": [
                    {"input": path, "error": message, "error_kind": kind.value}
                    for path, message, kind in errors
                ],
            }
        )
    else:
        width = terminal_columns(sys.stdout, default=None)
        for n, description in enumerate(described):
            if n:
                print()
            print("\n".join(describe_lines(description, width)))
    for path, message, _kind in errors:
        named = path in message or repr(path) in message  # (a name with a newline is said as repr says it)
        print_error(message if named else f"{shown_name(path)}: {message}")  # folded as every error is
    return 1 if errors else 0


def describe_lines(description: MediaDescription, width: int | None) -> list[str]:
    """The description as lines filled to ``width`` columns (None: not wrapped)."""
    facts = description.file
    head = [facts.format_long]
    if facts.duration_seconds is not None:
        head.append(time_text(facts.duration_seconds))
    if facts.size_bytes is not None:
        head.append(size_text(facts.size_bytes))
    if facts.bit_rate:
        head.append(rate_text(facts.bit_rate))
    lines = _filled(f"{shown_name(facts.path)}: " + ", ".join(head), width)
    fields: list[tuple[str, str]] = []
    # The file's title (a film's, a recording's), first as ffprobe and players show it.
    title = next((v.strip() for k, v in facts.tags if k.lower() == "title" and v.strip()), None)
    if title:
        fields.append(("title", title))
    # A MOV's timecode is said on its timecode track; a Matroska's, on the stream tagged with it.
    tracked = any(s.kind.value == "data" and s.timecode for s in facts.streams)
    pictures = facts.format == "image2" or facts.format.endswith("_pipe")
    for stream in facts.streams:
        label = f"#{stream.index} {stream.kind.value}"
        decoded = description.video if stream.index == description.video_index else None
        fields.append((label, _stream_text(stream, decoded, timecode=not tracked, pictures=pictures)))
        if stream.index == description.video_index:
            fields.extend(("", text) for text in _video_texts(description))
        elif description.video is None and stream.colour_tags is not None and not stream.attached_picture:
            # Not decoded (--no-decode): the tags the stream's parameters carry, as they are.
            matrix, primaries, transfer, rng = stream.colour_tags
            tags = f"matrix {matrix}, primaries {primaries}, transfer {transfer}, range {rng}"
            if {matrix, primaries, transfer, rng} == {"unknown"}:
                tags = "none"
            fields.append(("", f"colour tags: {tags} (not decoded: nothing guessed)"))
    # An MXF's or an FFmpeg-written Matroska's start timecode is the file's tag, on no stream.
    file_timecode = next((v for k, v in facts.tags if k.lower() == "timecode" and v.strip()), None)
    if file_timecode and not any(s.timecode for s in facts.streams):
        fields.append(("timecode", file_timecode.strip()))
    if facts.chapters:
        starts = [_chapter_time(c.start_seconds, facts.chapters) for c in facts.chapters[:6]]
        shown = ", ".join(
            f"{start} {c.title}" if c.title else start
            for start, c in zip(starts, facts.chapters, strict=False)
        )
        more = f", and {len(facts.chapters) - 6} more" if len(facts.chapters) > 6 else ""
        fields.append(("chapters", f"{len(facts.chapters)}: {shown}{more}"))
    if not facts.streams:
        fields.append(("", "no streams"))
    elif description.video_error is not None:
        fields.append(("", f"video not decoded: {description.video_error}"))
    # Titles, languages and chapter names are the file's words: control characters made visible.
    return lines + wrap_fields([(label, tag_text(text)) for label, text in fields], width)


def _chapter_time(seconds: float, chapters: Sequence[Any]) -> str:
    """A chapter's start as the player shows a time (``1:02``), or to the millisecond (``0:00.800``)
    where a chapter of the file starts between whole seconds: two chapters 0.8 s apart were both said
    ``0:00``."""
    from alpha2.apps.osd import format_time  # as the player shows a time; here, not for --help

    if all(abs(c.start_seconds - round(c.start_seconds)) < 5e-4 for c in chapters):
        return format_time(round(seconds))
    milliseconds = round(max(0.0, seconds) * 1000)
    return f"{format_time(milliseconds // 1000)}.{milliseconds % 1000:03d}"


def _stream_text(
    stream: StreamFacts, decoded: VideoInfo | None = None, *, timecode: bool = True, pictures: bool = False
) -> str:
    """The stream in one line; ``decoded``: what decoding its first frame said (its rotation);
    ``timecode``: say its timecode tag (a data stream's is always said); ``pictures``: the file is
    still pictures (FFmpeg's image2 or ``*_pipe`` demuxers), whose frame rate is FFmpeg's default."""
    kind = stream.kind.value
    codec = "chapters" if stream.chapter_track else stream.codec or stream.codec_tag or "unknown codec"
    if kind == "data" and stream.timecode and not stream.codec:
        codec = f"timecode ({stream.codec_tag})" if stream.codec_tag else "timecode"
    parts = [f"{codec} ({stream.profile})" if stream.profile else codec]
    if kind == "data" and stream.timecode:
        parts[0] += f" {stream.timecode}"
    if kind == "video":
        rotation = decoded.rotation if decoded is not None else stream.rotation
        shown_w, shown_h = (decoded.width, decoded.height) if decoded is not None else stream.display_size
        size = f"{shown_w}x{shown_h}"
        mirrored = decoded is not None and decoded.mirrored
        if rotation.value or mirrored:
            turns = [f"turned {rotation.value}° clockwise"] if rotation.value else []
            how = ", ".join((["mirrored"] if mirrored else []) + turns)
            size += f" shown (stored {stream.width}x{stream.height}, {how})"
        if stream.attached_picture:
            parts[0] = f"cover art, {parts[0]}"
        parts.append(size)
        if stream.sample_aspect_ratio is not None:
            sar = stream.sample_aspect_ratio
            wide, high = max(1, round(stream.width * sar)), stream.height
            if rotation.value in (90, 270):  # the turn decoding found (a display matrix), else the tag's
                wide, high = high, wide
            parts.append(f"pixels {sar.numerator}:{sar.denominator} (shown {wide}x{high})")
        if stream.frame_rate and not stream.attached_picture:
            rate = _rate_text(stream.frame_rate) + " fps"
            if stream.variable_rate is not None:
                low, top = (_rate_text(r) for r in stream.variable_rate)
                rate += f" (variable: {low} to {top})"
            elif pictures:
                rate += " (FFmpeg's default: pictures carry no rate)"
            parts.append(rate)
        if stream.pixel_format:
            parts.append(stream.pixel_format)
        if stream.field_order:
            parts.append(f"interlaced ({stream.field_order})")
        if stream.alpha_beside:
            parts.append("alpha stored beside, not decoded (FFmpeg's decoder shows it opaque)")
        if stream.empty:
            parts.append("no frames (the stream holds no packets)")
        elif stream.frame_count:
            parts.append(frames_text(stream))
    elif kind == "audio":
        if stream.sample_rate:
            parts.append(f"{stream.sample_rate / 1000:g} kHz")
        if stream.layout or stream.channels:
            parts.append(channels_text(stream.channels, stream.layout))
        if stream.sample_format:
            parts.append(stream.sample_format)
    elif kind == "subtitle" and stream.text is not None:
        parts.append("text" if stream.text else "pictures")
    elif kind == "attachment" and stream.filename:
        parts = [f"{stream.filename} ({codec})"]
    if stream.bit_rate:
        parts.append(rate_text(stream.bit_rate))
    if stream.language:
        parts.append(stream.language)
    if stream.title and stream.title.strip():  # a blank title tag is none (as AudioStreamInfo.title says)
        parts.append(f'"{stream.title.strip()}"')
    if stream.timecode and timecode and kind != "data":
        parts.append(f"timecode {stream.timecode}")
    parts.extend(stream.marks)
    return ", ".join(parts)


def _rate_text(fps: float) -> str:
    """Frames per second in short: ``25``, ``29.97``, ``15.386``."""
    return f"{fps:.3f}".rstrip("0").rstrip(".")


_PLAIN_LAYOUTS = ("mono", "stereo", "5.1", "7.1")


def channels_text(channels: int, layout: str | None) -> str:
    """Audio channels in words, the same whatever the container: ``mono``, ``stereo``, ``5.1``, ``7.1``
    (FFmpeg's variants too: ``5.1(side)``), else ``N channels`` with the layout's name where FFmpeg
    gives one (``3 channels (3.0)``, ``4 channels (quad)``). Channels in no known order are counted:
    one is mono, two stereo."""
    if layout and layout.startswith(_PLAIN_LAYOUTS):
        return layout
    if layout and channels and not layout.startswith(f"{channels} channels"):
        return f"{channels} channels ({layout})"
    if layout:
        return layout
    return {1: "mono", 2: "stereo"}.get(channels, f"{channels} channels")


def frames_text(stream: StreamFacts) -> str:
    """A video stream's frame count, said as the container's (what the header or the index records;
    what decodes may differ). One that the stream's duration clearly contradicts (an MP4 edit list
    that plays part of the samples) is not given as the count: ``about 154 frames (the container lists
    235)``."""
    count = stream.frame_count
    if stream.frame_count_disagrees:
        return f"about {stream.frames_by_duration} frames (the container lists {count})"
    return f"{count} frame{'' if count == 1 else 's'} (container)"


def _video_texts(description: MediaDescription) -> list[str]:
    """The decoded video's colour, HDR metadata and decoder."""
    texts = []
    video = description.video
    if video is not None and video.colour is not None:
        colour = video.colour
        line = (
            f"colour: matrix {colour.matrix.name.lower()}, primaries {colour.primaries.name.lower()}, "
            f"transfer {colour.transfer.name.lower()}, range {colour.range.name.lower()}"
        )
        guesses = description.colour_guesses
        texts.append(line + ("; " + "; ".join(guesses) if guesses else " (as tagged)"))
    if video is not None and video.hdr is not None and not video.hdr.is_empty:
        texts.append("HDR: " + _hdr_text(video.hdr))
    if description.decoder is not None:
        mode, _, why = description.decoder.partition(": ")
        name = _DECODERS.get(mode, mode)
        texts.append(f"decoder: {name}" + (f" ({why})" if why else ""))
    return texts


_DECODERS = {"none": "software", "cuda": "NVDEC"}


def _filled(text: str, width: int | None) -> list[str]:
    if width is None:
        return [text]
    return wrap_text(text, max(width - 1, 40), "", "  ")


def _hdr_text(hdr: Any) -> str:
    parts = []
    if hdr.mastering is not None:
        m = hdr.mastering
        parts.append(
            f"mastered on {_display_primaries(m.primaries)}, "
            f"{m.min_luminance_cd_m2:g}-{m.max_luminance_cd_m2:g} cd/m²"
        )
    if hdr.light_level is not None:
        parts.append(
            f"MaxCLL {hdr.light_level.max_cll_cd_m2}, MaxFALL {hdr.light_level.max_fall_cd_m2} cd/m²"
        )
    return ", ".join(parts)


_DISPLAY_GAMUTS = (("BT2020", "BT.2020"), ("SMPTE432", "P3 D65"), ("SMPTE431", "DCI-P3"), ("BT709", "BT.709"))
"""Mastering displays' primaries by name (ColourPrimaries member, as said)."""


def _display_primaries(primaries: Any) -> str:
    """A mastering display's primaries by the gamut's name where they are one (to the 0.00002 steps of
    SMPTE ST 2086), else as xy: ``P3 D65``, ``R 0.68,0.32 G 0.265,0.69 B 0.15,0.06 W 0.3127,0.329``."""
    from alpha2.gpu.colour import ColourPrimaries
    from alpha2.gpu.primaries import chromaticities_of

    points = (primaries.red, primaries.green, primaries.blue, primaries.white)
    for member, name in _DISPLAY_GAMUTS:
        known = chromaticities_of(ColourPrimaries[member])
        ideal = (known.red, known.green, known.blue, known.white)
        if all(abs(a - b) <= 0.0005 for xy, ref in zip(points, ideal) for a, b in zip(xy, ref)):
            return name
    return " ".join(f"{c} {x:g},{y:g}" for c, (x, y) in zip("RGBW", points))
