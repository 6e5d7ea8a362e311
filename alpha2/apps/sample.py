"""``alpha2 sample OUTPUT``: write a short test clip, so a new user has input for play and transcode.

The picture is a smooth moving colour pattern, computed per frame from 1-D waves (outer products, no
per-pixel Python) straight into Y'CbCr planes with the BT.709 (HD) or BT.601 (SD) matrix, and encoded
through the FFmpeg bridge's :class:`~alpha2.ffmpeg_bridge.EncodeSession`, which writes atomically.
A 440 Hz sine tone is added (AAC, or Opus in WebM), unless ``--no-audio``.
"""

from __future__ import annotations

import argparse
import fractions
import math
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

# What the parser needs, and no more: numpy, the colour vocabulary and the encoder (PyAV) load when a
# clip is written, so that ``alpha2 sample --help`` answers at once.
from alpha2.api import pipeline
from alpha2.apps.cli import EXAMPLES_HEADING, add_overwrite_arguments, help_formatter, parse_time
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size

if TYPE_CHECKING:
    import numpy as np

    from alpha2.gpu.colour import ColourInfo
    from alpha2.gpu.handles import CpuPlaneSet

__all__ = [
    "SampleResult",
    "pattern_planes",
    "register",
    "run",
    "sample_colour",
    "write_sample",
]

TONE_HZ = 440.0
SAMPLE_RATE = 48_000
DEFAULT_SIZE = Size(1280, 720)
"""The sample's default picture size."""
FAST_PRESETS: dict[str, str] = {
    "libx264": "veryfast",
    "libx265": "veryfast",
    "libsvtav1": "10",
    "libvpx-vp9": "8",
}
"""The speed preset the sample uses per encoder (the clip is simple; speed matters more than size)."""


def sample_colour(size: Size) -> ColourInfo:
    """BT.709 for HD sizes, BT.601 (SMPTE 170M) for SD; limited range, chroma sited left."""
    from alpha2.gpu.colour import (
        ChromaLocation,
        ColourInfo,
        ColourMatrix,
        ColourPrimaries,
        ColourRange,
        TransferCharacteristic,
    )

    if size.height >= 720 or size.width >= 1280:
        return ColourInfo(
            ColourMatrix.BT709,
            ColourPrimaries.BT709,
            TransferCharacteristic.BT709,
            ColourRange.LIMITED,
            ChromaLocation.LEFT,
        )
    return ColourInfo(
        ColourMatrix.SMPTE170M,
        ColourPrimaries.SMPTE170M,
        TransferCharacteristic.SMPTE170M,
        ColourRange.LIMITED,
        ChromaLocation.LEFT,
    )


class _Waves:
    """The pattern as three waves: R varies along x, G along y, B along the diagonal; all move with t."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height

    def rgb_terms(self, xs: np.ndarray, ys: np.ndarray, t: float) -> tuple[np.ndarray, ...]:
        """1-D pieces: R(x), G(y), and B(x, y) = b0 + b1 * (sx(x) cy(y) + cx(x) sy(y)) as outer parts."""
        import numpy as np

        u = xs / self.width
        v = ys / self.height
        r = 0.5 + 0.4 * np.sin(2 * np.pi * (u + 0.20 * t))[None, :]
        g = 0.5 + 0.4 * np.sin(2 * np.pi * (v - 0.15 * t))[:, None]
        a = 2 * np.pi * (0.75 * u + 0.30 * t)
        b = 2 * np.pi * (0.75 * v)
        return r, g, np.sin(a)[None, :], np.cos(a)[None, :], np.cos(b)[:, None], np.sin(b)[:, None]


def pattern_planes(size: Size, index: int, rate: float, colour: ColourInfo) -> tuple[np.ndarray, ...]:
    """The Y, Cb, Cr planes (uint8, 4:2:0, chroma sited left) of frame ``index``."""
    import numpy as np

    from alpha2.gpu.colour import rgb_to_yuv

    width, height = size.width, size.height
    t = index / rate
    transform = rgb_to_yuv(colour.matrix, colour.range, 8)
    m = np.asarray(transform.matrix, dtype=np.float64)
    offset = np.asarray(transform.offset, dtype=np.float64)
    waves = _Waves(width, height)
    planes = []
    # Luma at every pixel; chroma at (2k, 2l + 0.5) in luma coordinates (LEFT siting).
    grids = (
        (np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64)),
        (np.arange(0, width, 2, dtype=np.float64), np.arange(0, height, 2, dtype=np.float64) + 0.5),
    )
    for row in range(3):
        xs, ys = grids[0 if row == 0 else 1]
        r, g, sa, ca, cb, sb = waves.rgb_terms(xs, ys, t)
        kr, kg, kb = m[row]
        # B = 0.5 + 0.4 * sin(a + b) = 0.5 + 0.4 * (sin a cos b + cos a sin b)
        value = (kr * r + kg * g) + (kb * 0.4) * (sa * cb + ca * sb) + (kb * 0.5 + offset[row])
        planes.append(np.clip(np.rint(value), 0, 255).astype(np.uint8))
    return tuple(planes)


def _plane_set(planes: tuple[np.ndarray, ...]) -> CpuPlaneSet:
    from alpha2.gpu.handles import CpuPlane, CpuPlaneSet

    return CpuPlaneSet(
        planes=tuple(
            CpuPlane(data=p, bytes_per_row=p.strides[0], width_bytes=p.shape[1], height=p.shape[0])
            for p in planes
        ),
        keep_alive=planes,
    )


def _tone(start: int, count: int) -> np.ndarray:
    import numpy as np

    t = (np.arange(start, start + count, dtype=np.float64)) / SAMPLE_RATE
    mono = (0.2 * np.sin(2 * np.pi * TONE_HZ * t)).astype(np.float32)
    return np.stack([mono, mono])


@dataclass(frozen=True)
class SampleResult:
    """What ``alpha2 sample`` wrote."""

    path: str
    """The clip's path."""
    frames: int
    """Video frames written."""
    size: Size
    """Picture size."""
    rate: float
    """Frames per second."""
    codec: str
    """Encoder used."""
    audio: bool
    """Whether the tone was written."""
    audio_note: str | None
    """Why there is no tone, when there is none (``--no-audio``, or a GIF)."""


def write_sample(
    path: str,
    *,
    duration_s: float = 5.0,
    size: Size = DEFAULT_SIZE,
    rate: int = 30,
    codec: str | None = None,
    audio: bool = True,
    crf: float | None = 18,
    preset: str | None = None,
    overwrite: bool = True,
    progress: pipeline.Progress | None = None,
) -> SampleResult:
    """Write the test clip to ``path`` (atomically, through EncodeSession).

    Args:
        codec: h264, hevc, vp9, av1 or an encoder name; None: the container's (VP9 for WebM, else
            H.264).
        audio: add the 440 Hz tone (48 kHz stereo).
        crf: the constant-quality factor; left out for an encoder that has none (FFV1, lossless).
        preset: the encoder's speed preset; None: :data:`FAST_PRESETS` for the encoder, if listed.
        overwrite: replace ``path`` when it exists (``alpha2 sample`` passes False unless given ``-y``).
        progress: told the frames written (``alpha2 sample`` shows a bar on a terminal); None: nothing.

    Raises:
        InvalidInputError: a bad duration or size, an unwritable output, or one that exists when
            ``overwrite`` is False.
        UnsupportedError: an unknown codec.
    """
    from alpha2.api.atomic import check_output_path
    from alpha2.api.encoding import EncodeSession, choose_encoder
    from alpha2.api.transcode_plan import default_codec
    from alpha2.gpu.formats import PixelFormat

    if not (duration_s > 0 and math.isfinite(duration_s)):
        raise InvalidInputError(f"duration must be a positive number of seconds, got {duration_s}")
    if size.width < 2 or size.height < 2 or size.width % 2 or size.height % 2:
        raise InvalidInputError(
            f"size must have even sides >= 2 (4:2:0 video), got {size.width}x{size.height}"
        )
    if rate < 1:
        raise InvalidInputError(f"rate must be >= 1, got {rate}")
    full = check_output_path(path, overwrite=overwrite)
    codec = codec or default_codec(full)
    # A GIF holds pictures only: the tone is left out of it, said, rather than refused by the muxer.
    gif = os.path.splitext(full)[1].lower() == ".gif"
    with_audio = bool(audio) and not gif
    colour = sample_colour(size)
    frames = max(1, round(duration_s * rate))
    encoder = choose_encoder(codec)
    encoder_name = encoder.name
    # FFV1 is lossless and a GIF frame is its 256 colours: a crf is refused by both, and means nothing.
    if not encoder.takes_crf or encoder.codec == "gif":
        crf = None
    if preset is None:
        preset = FAST_PRESETS.get(encoder_name)
    session = EncodeSession(
        full,
        codec=codec,
        width=size.width,
        height=size.height,
        rate=rate,
        time_base=fractions.Fraction(1, rate),
        crf=crf,
        preset=preset,
        colour=colour,
        gop_size=rate,
        options=pipeline.QUIET_ENCODER_OPTIONS.get(encoder_name),
        audio_rate=SAMPLE_RATE if with_audio else None,
    )
    shown = progress if progress is not None else pipeline.Progress()
    shown.start(frames)
    completed = False
    try:
        samples_done = 0
        for index in range(frames):
            session.encode(
                _plane_set(pattern_planes(size, index, rate, colour)),
                pts=index,
                pixel_format=PixelFormat.YUV420P,
                width=size.width,
                height=size.height,
            )
            if with_audio:
                until = round((index + 1) * SAMPLE_RATE / rate)
                session.encode_audio(_tone(samples_done, until - samples_done), sample_rate=SAMPLE_RATE)
                samples_done = until
            shown.update(index + 1)
        shown.finishing("the encoder's last frames")
        session.close()
        completed = True
    except BaseException:
        session.abort()
        raise
    finally:
        shown.close(completed)
    return SampleResult(
        path=full,
        frames=frames,
        size=size,
        rate=float(rate),
        codec=session.encoder.name,
        audio=with_audio,
        audio_note=None if with_audio else "--no-audio" if not audio else "a GIF holds no sound",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``alpha2 sample``."""
    parser = subparsers.add_parser(
        "sample",
        help="write a short test clip (moving colour pattern, sine tone)",
        description="Write a short test clip: a moving colour pattern and, where the FFmpeg bridge can "
        "encode audio, a 440 Hz tone. Input for 'alpha2 play' and 'alpha2 transcode'.",
        epilog=f"{EXAMPLES_HEADING}\n"
        "  alpha2 sample clip.mp4                    (5 s, 1280x720, 30 fps, a tone)\n"
        "  alpha2 sample long.mkv --duration 60 --size 1920x1080 --codec hevc\n"
        "  alpha2 sample quiet.webm --no-audio -y",
        formatter_class=help_formatter(),
    )
    parser.add_argument("output", metavar="OUTPUT", help="output file, e.g. sample.mp4")
    parser.add_argument(
        "--duration",
        type=_positive_seconds,
        default=5.0,
        metavar="TIME",
        help="how long: seconds (default 5), [[hh:]mm:]ss[.ms], or with s, ms or us (500ms)",
    )
    parser.add_argument(
        "--size",
        type=pipeline.parse_even_size,
        default=DEFAULT_SIZE,
        metavar="WxH",
        help="picture size, even sides (default 1280x720)",
    )
    parser.add_argument(
        "--rate", type=pipeline.positive_int, default=30, help="frames per second (default 30)"
    )
    parser.add_argument(
        "--codec", help="h264, hevc, vp9, av1 or an encoder name (default: vp9 for .webm, else h264)"
    )
    parser.add_argument(
        "--no-audio", dest="audio", action="store_false", help="no audio track (default: a 440 Hz tone)"
    )
    add_overwrite_arguments(parser, what="OUTPUT")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress display (the line saying what was written stays)"
    )
    parser.set_defaults(func=run)


def _positive_seconds(text: str) -> float:
    try:
        value = parse_time(text)  # 5, 1:30, 500ms, as --from and --duration of transcode
    except argparse.ArgumentTypeError:
        value = 0.0  # -1, nan, inf: refused as 0 is, with the same words
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """``alpha2 sample``."""
    from alpha2.apps.cli import shown_name

    result = write_sample(
        args.output,
        duration_s=args.duration,
        size=args.size,
        rate=args.rate,
        codec=args.codec,
        audio=args.audio,
        overwrite=args.overwrite,
        progress=pipeline.make_progress("sample", enabled=not (args.json or args.quiet)),
    )
    if args.json:
        pipeline.emit_json(
            {
                "command": "sample",
                "path": result.path,
                "frames": result.frames,
                "size": [result.size.width, result.size.height],
                "rate": result.rate,
                "codec": result.codec,
                "audio": result.audio,
                "audio_note": result.audio_note,
            }
        )
    else:
        note = "" if result.audio else f" (no audio: {result.audio_note})"
        print(
            f"alpha2: wrote {shown_name(result.path)}: {result.frames} "
            f"frame{'' if result.frames == 1 else 's'} {result.size.width}x{result.size.height} "
            f"at {result.rate:g} fps, {result.codec}{note}",
            file=sys.stderr,
        )
    return 0
