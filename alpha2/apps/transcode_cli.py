"""``alpha2 transcode INPUT OUTPUT``: the command line of :mod:`alpha2.api.transcoder`.

The options (:func:`add_transcode_arguments`, shared with ``alpha2 batch``), reading them back into
:class:`~alpha2.api.transcode_plan.TranscodeOptions`, and the summary line or JSON at the end.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from alpha2.api import pipeline
from alpha2.api.encoding import OUTPUT_CONTAINERS
from alpha2.api.transcode_plan import (
    DEFAULT_CRF,
    DEFAULT_MAX_PIXELS,
    ColourChoice,
    DepthChoice,
    TranscodeOptions,
)
from alpha2.api.transcode_report import TranscodeStats, summary_notes
from alpha2.api.transcoder import transcode
from alpha2.apps.cli import add_overwrite_arguments

__all__ = ["add_max_pixels_argument", "add_transcode_arguments", "options_from_args", "register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``alpha2 transcode``."""
    parser = subparsers.add_parser(
        "transcode",
        help="decode, scale and convert on the GPU, encode",
        description="Transcode a video: decode, import, scale and convert colour on the GPU, encode, mux. "
        "With nothing to change, frames go straight from the decoder to the encoder (passthrough).",
    )
    parser.add_argument("input", metavar="INPUT", help="input video file")
    parser.add_argument(
        "output",
        metavar="OUTPUT",
        help="output file; its extension picks the container: " + ", ".join(OUTPUT_CONTAINERS),
    )
    add_transcode_arguments(parser)
    add_overwrite_arguments(parser, what="OUTPUT")
    parser.add_argument("--json", action="store_true", help="print stats as JSON at the end")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=run)


def add_transcode_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that shape one transcode (codec, size, quality, decoding, colour, audio); ``alpha2
    batch`` takes the same ones. :func:`options_from_args` reads them back."""
    parser.add_argument(
        "--codec", help="h264, hevc, vp9, av1 or an FFmpeg encoder name (default: vp9 for .webm, else h264)"
    )
    parser.add_argument(
        "--size",
        type=pipeline.parse_size,
        metavar="WxH",
        help="fit the output inside WxH, aspect kept, even sides",
    )
    quality = parser.add_mutually_exclusive_group()
    quality.add_argument(
        "--crf",
        type=float,
        help="constant-quality factor (default per codec: "
        + ", ".join(f"{k} {v:g}" for k, v in DEFAULT_CRF.items())
        + ")",
    )
    quality.add_argument("--bitrate", type=_bitrate, help="target bit rate, e.g. 4M or 800k")
    parser.add_argument("--preset", help="encoder speed preset (e.g. veryfast for x264/x265)")
    parser.add_argument("--frames", type=pipeline.positive_int, metavar="N", help="stop after N frames")
    pipeline.add_hwaccel_argument(parser)
    parser.add_argument(
        "--colour",
        "--color",
        dest="colour",
        choices=[c.value for c in ColourChoice],
        default="auto",
        help="output matrix and range (default auto: kept, or BT.709 limited "
        "for HD outputs processed on the GPU)",
    )
    parser.add_argument(
        "--depth",
        choices=[c.value for c in DepthChoice],
        default="auto",
        help="output bits per sample (default auto: 8, or 10 for HDR into hevc, av1 or vp9)",
    )
    parser.add_argument(
        "--sdr", action="store_true", help="tone map an HDR (PQ, HLG) input to SDR BT.709 (as --colour bt709)"
    )
    parser.add_argument("--gpu", action="store_true", help="process on the GPU even when nothing needs it")
    parser.add_argument(
        "--audio", dest="audio", action="store_true", default=True, help="copy the input's audio (default)"
    )
    parser.add_argument("--no-audio", dest="audio", action="store_false", help="drop the audio")
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


def options_from_args(args: argparse.Namespace) -> TranscodeOptions:
    """The TranscodeOptions of parsed :func:`add_transcode_arguments` options (and ``-y``, which lets an
    existing output be replaced; without it, it is refused)."""
    return TranscodeOptions(
        codec=args.codec,
        size=args.size,
        crf=args.crf,
        bitrate=args.bitrate,
        preset=args.preset,
        frames=args.frames,
        hwaccel=args.hwaccel,
        audio=args.audio,
        colour=ColourChoice(args.colour),
        gpu=args.gpu,
        depth=DepthChoice(args.depth),
        sdr=getattr(args, "sdr", False),
        overwrite=getattr(args, "overwrite", False),
        max_pixels=getattr(args, "max_pixels", DEFAULT_MAX_PIXELS),
    )


def _bitrate(text: str) -> int:
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
    raw = text.strip().lower()
    factor = scale.get(raw[-1:], 1)
    number = raw[:-1] if raw[-1:] in scale else raw
    try:
        value = int(float(number) * factor)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bitrate must be bits per second like 4M or 800k, got {text!r}"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"bitrate must be positive, got {text!r}")
    return value


def _print_summary(stats: TranscodeStats, write: Callable[[str], None]) -> None:
    data = stats.as_dict()
    paths = ", ".join(f"{k} {v}" for k, v in data["paths"].items()) or "none"
    write(
        f"alpha2: transcoded {stats.frames} frames in {stats.seconds:.2f} s ({stats.fps:.1f} fps), "
        f"{data['mode']}; paths: {paths}; {data['bytes_through_cpu'] / 1e6:.1f} MB through the CPU; "
        f"encoder {data['encoder'].get('name')}; audio {data['encoder'].get('audio')}; "
        f"{stats.stages.summary(stats.seconds)}"
        + (
            f"; route {stats.scale_route['route']}: {stats.scale_route['reason']}"
            if stats.scale_route
            else ""
        )
        + "".join(f"; {note}" for note in summary_notes(stats))
    )


def run(args: argparse.Namespace) -> int:
    """``alpha2 transcode``."""
    import sys

    options = options_from_args(args)
    progress = pipeline.make_progress("transcode", enabled=not (args.json or args.quiet))
    stats = transcode(args.input, args.output, options, progress=progress)
    if args.json:
        pipeline.emit_json(stats.as_dict())
    elif not args.quiet:
        _print_summary(stats, lambda line: print(line, file=sys.stderr))
    return 0
