"""``alpha2 transcode INPUT OUTPUT``: the command line of :mod:`alpha2.api.transcoder`.

The options (:func:`add_transcode_arguments`, shared with ``alpha2 batch``), reading them back into
:class:`~alpha2.api.transcode_plan.TranscodeOptions`, and the summary line or JSON at the end.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

# What the parser needs, and no more: the transcoder (PyAV, numpy, the GPU) loads when a file is
# transcoded, so that ``alpha2 transcode --help`` (and ``batch --help``) answer at once.
from alpha2.api import pipeline
from alpha2.api.transcode_choices import (
    AUDIO_CONTAINERS,
    DEFAULT_CRF,
    DEFAULT_MAX_PIXELS,
    DEFAULT_PRESETS,
    ENCODER_PRESET_RANGES,
    OUTPUT_CONTAINERS,
    TRACK_OPTIONS,
    X26X_PRESETS,
    ColourChoice,
    DepthChoice,
    track_specs,
)
from alpha2.apps.cli import (
    EXAMPLES_HEADING,
    TIME_SYNTAX,
    add_overwrite_arguments,
    help_formatter,
    parse_time,
    rate_text,
    shown_name,
    size_text,
    standard_stream_refusal,
    terminal_columns,
    time_text,
    wrap_fields,
)

if TYPE_CHECKING:
    import fractions

    from alpha2.api.transcode_plan import TranscodeOptions
    from alpha2.api.transcode_report import TranscodeStats

__all__ = [
    "OPTION_NAMES",
    "add_max_pixels_argument",
    "add_transcode_arguments",
    "options_from_args",
    "register",
    "run",
]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``alpha2 transcode``."""
    parser = subparsers.add_parser(
        "transcode",
        help="decode, scale and convert on the GPU, encode",
        description="Transcode a video: decode, import, scale and convert colour on the GPU (with FFmpeg's "
        "swscale where the Vulkan device alpha2 would use is a CPU one, such as lavapipe; --gpu asks for "
        "the GPU there), encode, mux. With nothing to change, frames go straight from the decoder to the "
        "encoder. The audio is copied, or re-encoded where it must be cut (--from, --to, --duration, "
        "--frames) or the container cannot hold it. Every audio and subtitle stream is kept unless chosen "
        "(--audio-track, --subtitle-track) or dropped (--no-audio, --no-subtitles). An input without "
        "video, or an audio OUTPUT (" + ", ".join(AUDIO_CONTAINERS) + "), writes the sound alone: "
        "encoded for the container (mp3: libmp3lame; m4a, mp4, mov, mka, mkv: aac; flac; opus, ogg, "
        "webm: opus; wav: 16-bit PCM, 24 where the input has more), resampled or downmixed where the "
        "encoder needs it (said), cut by --from / --to, at --bitrate; --codec copy copies it.",
        epilog=EXAMPLES_HEADING + "\n"
        "  alpha2 transcode in.mp4 out.mp4 --size 1280x720 --crf 20\n"
        "  alpha2 transcode in.mp4 part.mp4 --from 1:30 --to 2:00\n"
        "  alpha2 transcode in.mp4 clip.mp4 --from 90 --duration 10 --preset veryfast\n"
        "  alpha2 transcode in.mkv out.webm               (VP9 and Opus)\n"
        "  alpha2 transcode hdr.mkv sdr.mp4 --sdr -y      (tone mapped to SDR)\n"
        "  alpha2 transcode long.mp4 out.mp4 --segments 4 (encoded in 4 parts, joined)\n"
        "  alpha2 transcode in.mkv out.mp4 --codec copy   (remuxed: nothing encoded)\n"
        "  alpha2 transcode in.mkv out.mp4 --audio-track jpn --no-subtitles\n"
        "  alpha2 transcode song.flac song.mp3 --bitrate 192k  (sound alone)\n"
        "  alpha2 transcode film.mkv film.m4a --audio-track eng (the film's audio)",
        formatter_class=help_formatter(),
    )
    parser.add_argument("input", metavar="INPUT", help="input file (video, or sound alone)")
    parser.add_argument(
        "output",
        metavar="OUTPUT",
        help="output file; its extension picks the container: "
        + ", ".join([*OUTPUT_CONTAINERS, *AUDIO_CONTAINERS]),
    )
    add_transcode_arguments(parser)
    parser.add_argument(
        "--segments",
        type=_segments,
        metavar="K|auto",
        help="encode the video in K parts of the file at once (worker processes, split at key frames) "
        "and join them into one output; auto: as many as help (one pipeline on 4 cores or fewer)",
    )
    add_overwrite_arguments(parser, what="OUTPUT")
    parser.add_argument("--json", action="store_true", help="print stats as JSON at the end")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress display and no summary (errors are still said)"
    )
    parser.set_defaults(func=run)


def add_transcode_arguments(parser: argparse.ArgumentParser, *, segments: bool = True) -> None:
    """The options that shape one transcode (codec, size, quality, decoding, colour, audio); ``alpha2
    batch`` takes the same ones. :func:`options_from_args` reads them back.

    Args:
        parser: The command's parser.
        segments: The command has ``--segments`` (``alpha2 batch`` has not), which the help of ``--fps``
            names as an option it does not go with.
    """
    parser.add_argument(
        "--codec",
        help="h264, hevc, vp9, av1 or an FFmpeg encoder name (default: vp9 for .webm, else h264); "
        "copy: the streams as they are, nothing encoded (as ffmpeg -c copy; --from starts at the "
        "key frame at or before it)",
    )
    parser.add_argument(
        "--size",
        type=pipeline.parse_fit_size,
        metavar="WxH",
        help="fit the output inside WxH, aspect kept, even sides (-1x720: 720 high)",
    )
    quality = parser.add_mutually_exclusive_group()
    quality.add_argument(
        "--crf",
        type=_crf,
        help="constant-quality factor (default per codec: "
        + ", ".join(f"{k} {v:g}" for k, v in DEFAULT_CRF.items())
        + "); refused for an encoder that has none (ffv1, prores_ks)",
    )
    quality.add_argument(
        "--bitrate",
        type=_bitrate,
        help="target bit rate, e.g. 4M or 800k (of the audio, for sound alone); refused for an encoder "
        "that ignores it (ffv1, prores_ks)",
    )
    parser.add_argument(
        "--preset",
        metavar="NAME",
        help="encoder speed preset; libx264 and libx265: " + " ".join(X26X_PRESETS) + " (default "
        f"{DEFAULT_PRESETS['libx264']}); NVENC p1 to p7 (default {DEFAULT_PRESETS['h264_nvenc']}); "
        + ", ".join(f"{name} {low} to {high}" for name, (low, high) in ENCODER_PRESET_RANGES.items())
        + " (SVT-AV1's preset, libvpx's and libaom's cpu-used: lower is slower); refused for an "
        "encoder that has none (mpeg4, ffv1, prores_ks)",
    )
    parser.add_argument(
        "--frames",
        type=pipeline.positive_int,
        metavar="N",
        help="stop after N frames (the audio is cut at the same time)",
    )
    parser.add_argument(
        "--from",
        dest="from_time",
        type=parse_time,
        default=0.0,
        metavar="TIME",
        help=f"start at this time of the input, {TIME_SYNTAX} (1:30, 500ms); the output starts at 0 "
        "with the frame shown then, the audio cut there too",
    )
    end = parser.add_mutually_exclusive_group()
    end.add_argument(
        "--to",
        dest="to_time",
        type=parse_time,
        metavar="TIME",
        help=f"end at this time of the input, {TIME_SYNTAX}; the frame at it is not written",
    )
    end.add_argument(
        "--duration",
        type=parse_time,
        metavar="TIME",
        help=f"write this long a part, from --from on: {TIME_SYNTAX} (10s, 500ms)",
    )
    pipeline.add_hwaccel_argument(parser)
    parser.add_argument(
        "--colour",
        "--color",
        dest="colour",
        choices=[c.value for c in ColourChoice],
        default="auto",
        metavar="MATRIX",
        help="output matrix and range: " + ", ".join(c.value for c in ColourChoice) + " (default auto: "
        "kept, or BT.709 limited for an HD output scaled or converted, on the GPU or the CPU)",
    )
    parser.add_argument(
        "--depth",
        choices=[c.value for c in DepthChoice],
        default="auto",
        help="output bits per sample (default auto: 8, or 10 for HDR into hevc, av1 or vp9)",
    )
    parser.add_argument(
        "--sdr",
        action="store_true",
        help="tone map an HDR (PQ, HLG) input to SDR BT.709 even where the output could keep HDR (an "
        "8-bit output, h264's default, always is)",
    )
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="process on the GPU even when nothing needs it, and on a CPU Vulkan device (lavapipe), where "
        "swscale is the default",
    )
    parser.add_argument(
        "--audio", dest="audio", action="store_true", default=True, help="copy the input's audio (default)"
    )
    audio = parser.add_mutually_exclusive_group()
    audio.add_argument("--no-audio", dest="audio", action="store_false", help="drop the audio (ffmpeg's -an)")
    audio.add_argument(
        "--audio-track",
        dest="audio_tracks",
        action="extend",
        type=_track_words("audio"),
        metavar="N|LANG",
        help="keep only these audio streams: N, the Nth among the audio streams from 0 (ffmpeg's -map "
        "0:a:N), or LANG, every one in that language (eng, en, jpn; as mpv's --alang); repeat it or "
        "give a comma list, written in that order (as ffmpeg's -map), the first the default; end a word "
        "in ? where it may match none (else a file without it is refused)",
    )
    parser.add_argument(
        "--subtitles",
        dest="subtitles",
        action="store_true",
        default=True,
        help="keep the input's subtitle streams (default)",
    )
    subtitles = parser.add_mutually_exclusive_group()
    subtitles.add_argument(
        "--no-subtitles", dest="subtitles", action="store_false", help="drop the subtitles (ffmpeg's -sn)"
    )
    subtitles.add_argument(
        "--subtitle-track",
        dest="subtitle_tracks",
        action="extend",
        type=_track_words("subtitle"),
        metavar="N|LANG",
        help="keep only these subtitle streams, chosen and ordered as --audio-track chooses the audio",
    )
    parser.add_argument(
        "--fps",
        type=_fps,
        metavar="RATE",
        help="write the video at this constant frame rate, as ffmpeg's -r (the fps filter, round=near): "
        "frames dropped or repeated, the length and the audio kept; 30, 29.97, 30000/1001, ntsc, film, "
        "pal; --frames counts the output's frames; not with "
        + ("--segments or --codec copy" if segments else "--codec copy"),
    )
    add_max_pixels_argument(parser)


def add_max_pixels_argument(parser: argparse.ArgumentParser) -> None:
    """``--max-pixels N``: the largest decoded picture taken (``alpha2 transcode``, ``batch``, ``play``)."""
    parser.add_argument(
        "--max-pixels",
        type=pipeline.positive_int,
        default=DEFAULT_MAX_PIXELS,
        metavar="N",
        help=f"refuse pictures of more than N pixels before decoding them (default {DEFAULT_MAX_PIXELS}, "
        "8192x4320): a stream that claims a huge size takes gigabytes to decode",
    )


OPTION_NAMES: dict[str, str] = {
    "codec": "--codec",
    "size": "--size",
    "crf": "--crf",
    "bitrate": "--bitrate",
    "preset": "--preset",
    "frames": "--frames",
    "from_seconds": "--from",
    "to_seconds": "--to",
    "duration_seconds": "--duration",
    "hwaccel": "--hwaccel",
    "colour": "--colour",
    "depth": "--depth",
    "sdr": "--sdr",
    "gpu": "--gpu",
    "max_pixels": "--max-pixels",
    "segments": "--segments",
    "fps": "--fps",
    "audio_tracks": "--audio-track",
    "subtitle_tracks": "--subtitle-track",
    "audio=False": "--no-audio",
    "subtitles=False": "--no-subtitles",
}
"""The options of :func:`add_transcode_arguments` by the TranscodeOptions field each sets (``audio=False``:
a field's value that is an option of its own): a refusal, of the options or met while the run goes, names
the option a person typed (``--to``), not the field (``to_seconds``). :func:`run` and ``alpha2 batch``
hold them around the whole run (:func:`~alpha2.gpu.option_names.option_names`)."""


def options_from_args(args: argparse.Namespace) -> TranscodeOptions:
    """The TranscodeOptions of parsed :func:`add_transcode_arguments` options (and ``-y``, which lets an
    existing output be replaced; without it, it is refused)."""
    from alpha2.api.transcode_plan import TranscodeOptions, option_names

    with option_names(OPTION_NAMES):
        return TranscodeOptions(
            codec=args.codec,
            size=args.size,
            crf=args.crf,
            bitrate=args.bitrate,
            preset=args.preset,
            frames=args.frames,
            from_seconds=getattr(args, "from_time", 0.0),
            to_seconds=getattr(args, "to_time", None),
            duration_seconds=getattr(args, "duration", None),
            hwaccel=args.hwaccel,
            audio=args.audio,
            colour=ColourChoice(args.colour),
            gpu=args.gpu,
            depth=DepthChoice(args.depth),
            sdr=getattr(args, "sdr", False),
            overwrite=getattr(args, "overwrite", False),
            max_pixels=getattr(args, "max_pixels", DEFAULT_MAX_PIXELS),
            segments=getattr(args, "segments", None),
            audio_tracks=_words_or_none(getattr(args, "audio_tracks", None)),
            subtitles=getattr(args, "subtitles", True),
            subtitle_tracks=_words_or_none(getattr(args, "subtitle_tracks", None)),
            fps=getattr(args, "fps", None),
        )


def _track_words(kind: str) -> Callable[[str], list[str]]:
    """The argparse type of ``--audio-track`` (``kind`` audio) or ``--subtitle-track``: the words of one
    value (``jpn,1``), normalised."""
    option = TRACK_OPTIONS[kind]

    def words(text: str) -> list[str]:
        from alpha2.api.transcode_plan import option_names
        from alpha2.gpu.errors import InvalidInputError

        try:
            with option_names(OPTION_NAMES):
                return list(track_specs(text, kind))
        except InvalidInputError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{option} ")) from None

    return words


def _words_or_none(words: list[str] | None) -> tuple[str, ...] | None:
    return tuple(words) if words else None


def _segments(text: str) -> int | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"give a number of segments (2 or more) or auto, got {text!r}"
        ) from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"segments must be 2 or more (or auto), got {value}")
    return value


def _crf(text: str) -> float:
    """``--crf``'s number; its range is TranscodeOptions' check (argparse said only 'invalid float value')."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"give a number, 0 or more (lower: better pictures, a bigger file), got {text!r}"
        ) from None


def _fps(text: str) -> fractions.Fraction:
    from alpha2.api.frame_rate import parse_rate
    from alpha2.gpu.errors import InvalidInputError

    try:
        return parse_rate(text, "--fps")
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--fps ")) from None


def _bitrate(text: str) -> int:
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
    raw = text.strip().lower()
    factor = scale.get(raw[-1:], 1)
    number = raw[:-1] if raw[-1:] in scale else raw
    try:
        value = int(float(number) * factor)
    except (ValueError, OverflowError):  # 'inf' and '1e400' overflow int(); 'nan' is a ValueError
        raise argparse.ArgumentTypeError(
            f"bitrate must be bits per second like 4M or 800k, got {text!r}"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"bitrate must be positive, got {text!r}")
    return value


def summary_lines(stats: TranscodeStats, width: int | None) -> list[str]:
    """The summary at the end of ``alpha2 transcode``: a headline, then one field a line (output, video,
    audio, the part cut, paths, time, notes), each filled to ``width`` columns (None: not wrapped)."""
    import textwrap

    from alpha2.api.transcode_report import choice_summary, segments_summary, summary_notes

    data = stats.as_dict()
    output = stats.output
    facts = [size_text(stats.output_bytes)]
    if stats.output_bitrate is not None:
        facts.append(rate_text(stats.output_bitrate))
    if stats.output_seconds is not None:
        facts.append(time_text(stats.output_seconds))
    fields = [("output", f"{shown_name(output)}: {', '.join(facts)}")]
    if stats.encoder.get("audio_only"):
        return _sound_summary(stats, fields, width)
    route = stats.video_route()
    fields.append(("video", stats.video_action() + (f": {route}" if route else "")))
    if stats.frame_rate is not None:
        fields.append(("rate", stats.frame_rate.summary()))
    if stats.scale_route and not (stats.plan is not None and stats.plan.passthrough):
        where = "the CPU (swscale)" if stats.scale_route["route"] == "swscale" else "the GPU"
        fields.append(("route", f"on {where}: {stats.scale_route['reason']}"))
    audio = str(stats.encoder.get("audio", "none"))
    kept = [s for s in stats.kept_streams if s.kind.value == "audio"]
    if audio == "copied" and len(kept) == 1:
        audio += " " + kept[0].describe().removeprefix("audio ")  # copied (aac, 2 ch, 48000 Hz)
    fields.append(("audio", audio))
    chosen = choice_summary(stats)
    if chosen is not None:
        fields.append(("streams", chosen))
    if stats.cut is not None:
        cut = stats.cut
        to = cut.get("to_seconds")
        part = f"from {time_text(cut['from_seconds'])} " + (
            f"to {time_text(to)}" if to is not None else "to the end"
        )
        part += " of the input"
        asked = cut.get("asked_from_seconds")
        if asked and abs(float(asked) - float(cut["from_seconds"])) > 1e-6:
            shown = "the key frame at or before" if cut.get("key_frame") else "the frame on display at"
            part += f" ({shown} --from {time_text(asked)})"
        if cut.get("frames") is not None:
            part += f" (--frames {cut['frames']})"
        fields.append(("part", part))
    paths = ", ".join(f"{k} {v}" for k, v in data["paths"].items()) or "none"
    if stats.encoder.get("name") == "copy":
        fields.append(("paths", "none: the video's packets copied, not decoded"))
    else:
        fields.append(("paths", f"{paths}; {data['bytes_through_cpu'] / 1e6:.1f} MB through the CPU"))
    segments = segments_summary(stats)
    if segments is not None:
        fields.append(("segments", segments))
    fields.append(("time", stats.stages.summary(stats.seconds)))
    fields.extend(("note", note) for note in summary_notes(stats, streams_line=True, rate_line=True))
    frames = "1 frame" if stats.frames == 1 else f"{stats.frames} frames"
    head = f"alpha2: transcoded {frames} in {stats.seconds:.2f} s ({stats.fps:.1f} fps)"
    if stats.encoder.get("name") == "copy":
        head = f"alpha2: copied {frames} in {stats.seconds:.2f} s"
    lines = [head] if width is None else textwrap.wrap(head, width - 1, break_long_words=False) or [head]
    return lines + wrap_fields(fields, width)


def _part_text(cut: dict[str, Any]) -> str:
    to = cut.get("to_seconds")
    part = f"from {time_text(cut['from_seconds'])} " + (
        f"to {time_text(to)}" if to is not None else "to the end"
    )
    return part + " of the input"


def _sound_summary(stats: TranscodeStats, fields: list[tuple[str, str]], width: int | None) -> list[str]:
    """The summary of a transcode of sound alone (an audio-only input, or an audio container)."""
    import textwrap

    from alpha2.api.transcode_report import choice_summary, summary_notes

    encoder = stats.encoder
    fields.append(("audio", str(encoder.get("audio"))))  # (a video dropped is said in the notes)
    chosen = choice_summary(stats)
    if chosen is not None:
        fields.append(("streams", chosen))
    if stats.cut is not None:
        fields.append(("part", _part_text(stats.cut)))
    fields.append(("time", stats.stages.summary(stats.seconds)))
    fields.extend(("note", note) for note in summary_notes(stats, streams_line=True, rate_line=True))
    copied = encoder.get("name") == "copy"
    done = "copied" if copied else "transcoded"
    length = (
        f"{time_text(stats.output_seconds)} of audio" if stats.output_seconds is not None else "the audio"
    )
    head = f"alpha2: {done} {length} in {stats.seconds:.2f} s"
    if stats.output_seconds and stats.seconds > 0:
        head += f" ({stats.output_seconds / stats.seconds:.0f}x real time)"
    lines = [head] if width is None else textwrap.wrap(head, width - 1, break_long_words=False) or [head]
    return lines + wrap_fields(fields, width)


def run(args: argparse.Namespace) -> int:
    """``alpha2 transcode``."""
    import sys

    from alpha2.api.transcode_plan import option_names
    from alpha2.api.transcoder import transcode
    from alpha2.gpu.errors import InvalidInputError

    refusal = standard_stream_refusal(args.input) or standard_stream_refusal(args.output, output=True)
    if refusal is not None:
        raise InvalidInputError(refusal)
    options = options_from_args(args)
    progress = pipeline.make_progress("transcode", enabled=not (args.json or args.quiet))
    with option_names(OPTION_NAMES):
        stats = transcode(args.input, args.output, options, progress=progress)
    if args.json:
        pipeline.emit_json(stats.as_dict())
    elif not args.quiet:
        print("\n".join(summary_lines(stats, terminal_columns(sys.stderr))), file=sys.stderr)
    return 0
