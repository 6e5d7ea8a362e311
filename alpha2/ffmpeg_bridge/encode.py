"""Encode sessions: planes in, a finished file out, or no file at all.

An :class:`EncodeSession` picks an encoder (by name, or by codec with a preference order: NVENC where
present and working, then libx264 / libx265 / libsvtav1 / libaom-av1), opens it on the first frame,
takes CPU plane sets, CUDA planes or decoded frames, sets colour metadata and rate control, passes
timestamps through (variable frame rate included), copies an input's audio packets when asked, and
muxes into the container the output's extension names. It writes to a temporary name in the same
directory and renames on success; on failure or :meth:`EncodeSession.abort` the temporary file is
removed, so a half-written output never appears under the final name.

The encoders, their preference order and option names are the table of
:mod:`alpha2.ffmpeg_bridge.encoders`; DLPack wrapping of raw planes is :mod:`alpha2.ffmpeg_bridge.dlpack`.
This module is over the 600-line guide because :class:`EncodeSession` (about 550 lines) is one state
machine (open on the first frame, encode, copy or re-encode audio, finish or remove) over shared state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fractions
import functools
import io
import numbers
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import av
import av.audio.stream
import av.codec
import av.container
import av.error
import av.packet
import av.video.stream
import numpy as np

from alpha2.ffmpeg_bridge.containers import OUTPUT_CONTAINERS, keep_replaced_mode, partial_name
from alpha2.ffmpeg_bridge.decode import DecodeSession
from alpha2.ffmpeg_bridge.dlpack import frame_from_dlpack
from alpha2.ffmpeg_bridge.encoders import (
    ENCODER_PREFERENCE,
    EncoderSpec,
    canonical_name,
    colour_kept_or_refused,
    encoder_spec,
    is_nvenc,
    matrix_for_readers,
    nearest_encoder_format,
    preferred_encoders,
    read_as_limited,
    written_tags,
)
from alpha2.ffmpeg_bridge.errors import EncoderError, OutputFormatError, UnsupportedCodecError, from_ffmpeg
from alpha2.ffmpeg_bridge.hdr import hdr_encoder_options
from alpha2.ffmpeg_bridge.palette import PALETTE_ENCODERS, PaletteFilter
from alpha2.ffmpeg_bridge.scale import (
    SWSCALE_MATRICES,
    rgb_to_yuv_frame,
    yuv_colour_for_rgb,
    yuv_to_rgb_frame,
)
from alpha2.ffmpeg_bridge.side_streams import DroppedStream, InputStream, StreamCopier, add_audio_encoder
from alpha2.ffmpeg_bridge.timestamps import TimestampAdjustments
from alpha2.gpu.codecs import NAME_ALIASES, size_refusal
from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourPrimaries, ColourRange, TransferCharacteristic
from alpha2.gpu.encoded import EncodedPlanes
from alpha2.gpu.errors import ClosedError, ErrorKind, InvalidInputError, output_write_error
from alpha2.gpu.forks import keep_in_fork
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Rotation
from alpha2.gpu.handles import CpuPlaneSet, CudaPtr2D
from alpha2.gpu.hdr import HdrMetadata

__all__ = [
    "ENCODER_PREFERENCE",
    "FRAME_CLOCK_MUXERS",
    "GIF_MIN_DELAY_CS",
    "INTERLACED_ENCODERS",
    "OUTPUT_CONTAINERS",
    "ROTATION_CONTAINERS",
    "EncodeSession",
    "EncodeStats",
    "EncoderChoice",
    "choose_encoder",
    "frame_from_dlpack",
    "output_container",
]

INTERLACED_ENCODERS = frozenset({"libx264", "mpeg2video", "h264_nvenc", "hevc_nvenc"})
"""Encoders that code interlaced frames as such (field order kept) when the session asks for it."""

_FIELD_ORDER_TT = 2
_FIELD_ORDER_BB = 3
# AVFieldOrder values: top field coded and shown first, or bottom field coded and shown first.

FRAME_CLOCK_MUXERS = frozenset({"avi"})
"""Muxers that store a frame rate, not timestamps: the stream's clock is one frame (an AVI written at
1/90000 says 90000 fps and a frame of its own for every tick)."""

_MUXER_REFUSES: dict[tuple[str, str], str] = {
    ("mov", "vp9"): "FFmpeg's mov muxer refuses it",
    ("mov", "av1"): "FFmpeg's mov muxer refuses it",
    # .m4v: MP4 with Apple's M4V brand, whose codec list is H.264 and MPEG-4 Part 2 video only.
    ("ipod", "hevc"): "FFmpeg's ipod muxer (.m4v) takes H.264 and MPEG-4 video only",
    ("ipod", "vp9"): "FFmpeg's ipod muxer (.m4v) takes H.264 and MPEG-4 video only",
    ("ipod", "av1"): "FFmpeg's ipod muxer (.m4v) takes H.264 and MPEG-4 video only",
    # FFmpeg's mpegts muxer writes them without complaint, as a stream of private data that no demuxer
    # (FFmpeg's own included) reads back as video: the file would hold audio only.
    ("mov", "vp8"): "FFmpeg's mov muxer refuses it",
}
"""(muxer, codec family) pairs refused before anything is written, and why: FFmpeg refuses them when it
writes the header ("vp9 only supported in MP4"; VP8 into MOV: "Not yet implemented in FFmpeg"), or
writes a file whose video cannot be read."""

_MPEGTS_VIDEO_CODECS = frozenset({"h264", "hevc", "mpeg1", "mpeg2", "mpeg4"})
"""The codec families alpha2 writes that FFmpeg's mpegts muxer has a stream type for. It writes the
others (VP8, VP9, AV1, ProRes, MJPEG, FFV1) without complaint, as a stream of private data that no
demuxer (FFmpeg's own included) reads back as video: the file would hold audio only (found by writing
each codec into each output: VP8, ProRes, MJPEG and FFV1 .ts files held a 'bin_data' stream)."""


def _muxer_refusal(muxer: str, codec: str) -> str | None:
    """Why ``muxer`` cannot hold video of ``codec`` though FFmpeg adds the stream; None: it can."""
    refused = _MUXER_REFUSES.get((muxer, codec))
    if refused is None and muxer == "mpegts" and codec not in _MPEGTS_VIDEO_CODECS:
        refused = "FFmpeg's mpegts muxer writes it as a data stream that nothing reads back as video"
    return refused


def _way_out(encoder: str, codec: str, muxer: str) -> str:
    """What to do instead of writing ``encoder``'s video (of ``codec``) into ``muxer``: the outputs
    whose containers do hold it (it said 'write .mp4, .mkv or .webm' of ProRes, which two of them refuse)."""
    holding = [
        ext
        for ext, name in OUTPUT_CONTAINERS.items()
        if name not in (muxer, "gif") and _muxer_refusal(name, codec) is None and _muxer_takes(name, encoder)
    ]
    if not holding:
        return "choose another codec: no output alpha2 writes holds it"
    return f"write it into {', '.join(holding)}, or choose another codec"


PIXEL_SHAPE_CODECS = frozenset({"h264", "hevc", "mpeg2", "mpeg4"})
"""Codec families whose bitstream carries the pixel shape (H.264 / HEVC VUI, the MPEG aspect codes)."""

PIXEL_SHAPE_MUXERS = frozenset({"mp4", "ipod", "mov"})
"""Muxers that write an encoder's pixel shape whatever the codec (the 'pasp' box). Matroska and WebM
take it from the AVStream, which PyAV does not set: VP9, AV1 or FFV1 there would lose it."""


def keeps_pixel_shape(muxer: str, codec: str) -> bool:
    """Whether an output of ``codec`` in ``muxer`` keeps a pixel shape that is not square."""
    return muxer in PIXEL_SHAPE_MUXERS or codec in PIXEL_SHAPE_CODECS


GIF_MIN_DELAY_CS = 2
"""The shortest time a GIF frame is written to show, in hundredths of a second (the format's clock).
Browsers show a frame of delay 0 or 1 for 10 hundredths (Chrome, Firefox and Safari alike), so a 60 fps
clip written frame for frame (delays 2, 1, 2, 2, 1, ...) plays slower and unevenly; a frame closer than
this to the last one written is left out, and the count said: at most 50 frames a second."""

ROTATION_CONTAINERS = frozenset({"mp4", "ipod", "mov", "matroska", "webm"})
"""Muxers that store a display matrix (MP4 / MOV track matrix, Matroska projection): a rotation tag
survives in them; MPEG-TS, AVI and NUT drop it."""


_ENCODER_CHOOSES = av.video.frame.PictureType.NONE
"""The picture type that leaves the frame's type to the encoder."""


def output_container(path: str | os.PathLike[str]) -> str:
    """The muxer an output path's extension names.

    Raises:
        OutputFormatError: the extension is none of :data:`OUTPUT_CONTAINERS` (or there is none).
    """
    name = os.path.basename(os.fspath(path))
    ext = os.path.splitext(name)[1].lower()
    if ext not in OUTPUT_CONTAINERS:
        said = f"its extension {ext!r}" if ext else "no extension"
        raise OutputFormatError(
            f"cannot tell the container of {name!r} from {said}; alpha2 writes "
            + ", ".join(OUTPUT_CONTAINERS)
        )
    return OUTPUT_CONTAINERS[ext]


@dataclass(frozen=True)
class EncoderChoice:
    """The encoder a session uses and why."""

    name: str
    """FFmpeg encoder name (``libx264``, ``h264_nvenc``, ...)."""
    codec: str
    """Codec family (``h264``, ``hevc``, ``av1``, ...) or the encoder's codec name."""
    hardware: bool
    """Whether it encodes on a GPU (NVENC)."""
    reason: str
    """Why this encoder: what was preferred and why it was passed over."""
    takes_cuda_frames: bool = False
    """Whether it also takes frames in CUDA memory (NVENC): the encode copier's CUDA routes apply."""

    @property
    def takes_crf(self) -> bool:
        """Whether a constant-quality factor applies to it (False for a lossless encoder such as FFV1)."""
        spec = encoder_spec(self.name)
        return spec is None or spec.takes_crf


def _encoder_exists(name: str) -> bool:
    try:
        av.codec.Codec(name, "w")
    except Exception:
        return False
    return True


def quiet_svt_log() -> None:
    """Errors only from SVT-AV1 (``SVT_LOG=1``) unless the caller set ``SVT_LOG``: it prints its banner,
    its configuration and notes on its own choices ('AQ mode 2 is unsupported with source dimensions',
    'Failed to set thread priority'), about 20 lines a file, to stderr through a logger of its own that
    FFmpeg's log level does not reach (libx265's does), read when an encoder is made."""
    os.environ.setdefault("SVT_LOG", "1")


@functools.cache
def _nvenc_probe(name: str) -> str | None:
    """Test-open an NVENC encoder once per process; None when it works, else why not."""
    try:
        cc: Any = av.codec.CodecContext.create(name, "w")
        cc.width, cc.height = 256, 256
        cc.pix_fmt = "yuv420p"
        cc.time_base = fractions.Fraction(1, 30)
        cc.open()
    except Exception as exc:
        return f"{name} is in this FFmpeg build but does not open here ({exc})"
    return None


def encoder_pixel_formats(name: str) -> tuple[str, ...]:
    """The pixel formats (FFmpeg names) encoder ``name`` takes in this FFmpeg build; () when unknown.
    A palette encoder (GIF) takes the RGB format its palette filter does (:mod:`.palette`)."""
    if name in PALETTE_ENCODERS:
        return (PALETTE_ENCODERS[name],)
    try:
        return tuple(f.name for f in (av.codec.Codec(name, "w").video_formats or ()))
    except Exception:
        return ()


@functools.cache
def _encoder_option_names(name: str) -> frozenset[str]:
    """The AVOption names FFmpeg's encoder ``name`` takes (its own and every encoder's)."""
    options = av.CodecContext.create(name, "w").supported_options
    return frozenset(option.name for option in (*options.generic, *options.private))


BITRATE_BLIND_ENCODERS = frozenset(
    {
        "ffv1",
        "huffyuv",
        "ffvhuff",
        "magicyuv",
        "utvideo",
        "png",
        "qtrle",
        "rawvideo",
        "v210",
        "prores",
        "prores_aw",
        "prores_ks",
    }
)
"""Encoders that write their pictures whatever bit rate they are given (lossless, uncompressed, or
ProRes, whose rate is its profile): FFmpeg has every encoder take ``b``, so their options do not tell."""


def _refuse_ignored_rate_options(
    encoder: str, *, crf: float | None, bitrate: int | None, preset: str | int | None
) -> None:
    """Refuse a crf, bit rate or preset that ``encoder`` would ignore. FFmpeg drops an option an encoder
    does not have and only logs it (ffmpeg's 'Codec AVOption ... has not been used'); the summary then
    said 'prores_ks, crf 5' for an output that was the same file at any crf. Found by an outside pass
    (helper 112): prores_ks at crf 5 and 30, at 800 kb/s (13.6 Mb/s written), mpeg4 and ffv1 with a
    preset."""
    spec = encoder_spec(encoder) or EncoderSpec(encoder, encoder, False)
    try:
        names = _encoder_option_names(encoder)
    except (av.error.FFmpegError, ValueError):
        return  # not in this build: opening it says so
    asked = []
    if crf is not None and not {spec.crf_option, *spec.crf_also} <= names:
        asked.append("crf")
    if bitrate is not None and encoder in BITRATE_BLIND_ENCODERS:
        asked.append("bitrate")
    if preset is not None and spec.preset_option not in names:
        asked.append("preset")
    if asked:
        raise InvalidInputError(
            f"{encoder} takes no {' or '.join(asked)} (FFmpeg's {encoder} would ignore "
            f"{'it' if len(asked) == 1 else 'them'}); leave {' and '.join(asked)} out"
        )


def choose_encoder(codec: str) -> EncoderChoice:
    """Choose an encoder by codec (``h264``, ``hevc``, ``av1``, ...) or take an encoder by name.

    Codecs are tried in the order of :data:`~alpha2.ffmpeg_bridge.encoders.ENCODER_PREFERENCE`; names
    and aliases (``h265``, ``x264`` ...) are those of :mod:`alpha2.gpu.codecs`.

    Raises:
        UnsupportedCodecError: No encoder for the codec works here, or no encoder has that name.
    """
    key = canonical_name(codec)
    preferred = preferred_encoders(key)
    if preferred:
        skipped: list[str] = []
        for name in preferred:
            if not _encoder_exists(name):
                skipped.append(f"{name} is not in this FFmpeg build")
                continue
            hardware = is_nvenc(name)
            if hardware:
                why_not = _nvenc_probe(name)
                if why_not is not None:
                    skipped.append(why_not)
                    continue
            reason = f"{name}: preferred order for {key} is {', '.join(preferred)}"
            if skipped:
                reason += "; passed over: " + "; ".join(skipped)
            return EncoderChoice(name, key, hardware, reason, takes_cuda_frames=hardware)
        raise UnsupportedCodecError(f"no working encoder for {key}: " + "; ".join(skipped))
    if _encoder_exists(key):
        found = av.codec.Codec(key, "w")
        if found.type != "video":
            raise UnsupportedCodecError(
                f"{key} is an FFmpeg {found.type} encoder, not a video one; give "
                f"{', '.join(list(ENCODER_PREFERENCE)[:4])} or a video encoder's name (alpha2 transcode "
                "--help)"
            )
        # The codec the encoder writes (libvpx-vp9 -> vp9): what the containers' refusals, the pixel
        # shape and the default quality are keyed on. The encoder's own name here lost them all: VP9
        # by name went into MPEG-TS as an unreadable data stream, exit 0.
        family = canonical_name(found.canonical_name)
        hardware = is_nvenc(key)
        if hardware:
            why_not = _nvenc_probe(key)
            if why_not is not None:
                raise UnsupportedCodecError(why_not)
        reason = f"{key} was asked for by name"
        if key != codec.lower():
            reason += f" (as {codec!r})"
        return EncoderChoice(key, family, hardware, reason, takes_cuda_frames=hardware)
    near = _nearest_names(key)
    if near:
        raise UnsupportedCodecError(
            f"unknown codec or encoder {codec!r}; nearest: {', '.join(near)} (alpha2 transcode --help)"
        )
    raise UnsupportedCodecError(
        f"unknown codec or encoder {codec!r}; give {', '.join(list(ENCODER_PREFERENCE)[:4])} or an FFmpeg "
        "encoder name (alpha2 transcode --help)"
    )


def _nearest_names(word: str, count: int = 3) -> list[str]:
    """The codec names and video encoders of this FFmpeg nearest a misspelt ``word``, nearest first."""
    import difflib

    ours = [*ENCODER_PREFERENCE, *NAME_ALIASES]
    near = difflib.get_close_matches(word, dict.fromkeys([*ours, *sorted(av.codecs_available)]), n=12)
    found = [name for name in near if name in ours or _video_encoder_exists(name)]
    return found[:count]


def _video_encoder_exists(name: str) -> bool:
    try:
        return av.codec.Codec(name, "w").type == "video"
    except Exception:
        return False


def _full_range_layout(frame: av.VideoFrame, pixel_format: str) -> av.VideoFrame:
    """A full-range Y'CbCr frame in another Y'CbCr layout, still full range, pts kept: PyAV's own
    conversion in ``encode`` reads nv12 as limited, so full-range pictures into MJPEG's yuvj420p were
    stretched twice (black 16 came out 0)."""
    out = frame.reformat(format=pixel_format, src_color_range="JPEG", dst_color_range="JPEG")
    out.pts, out.time_base = frame.pts, frame.time_base
    return out


def _encoder_layout(
    frame: av.VideoFrame, pixel_format: str, source: ColourInfo, limited: bool, matrix: ColourMatrix | None
) -> av.VideoFrame:
    """A Y'CbCr (or gray) frame of colour ``source`` as ``pixel_format``, pts kept, converted by swscale
    to limited range where ``source`` is full and ``limited`` (for :data:`LIMITED_RANGE_ENCODERS`, whose
    pictures decoders read as limited) and to ``matrix`` (:func:`matrix_for_readers`; None: kept)."""
    full = limited and source.range is ColourRange.FULL
    out = frame.reformat(
        format=pixel_format,
        src_colorspace=SWSCALE_MATRICES[source.matrix] if matrix is not None else None,
        dst_colorspace=SWSCALE_MATRICES[matrix] if matrix is not None else None,
        src_color_range="JPEG" if full else None,
        dst_color_range="MPEG" if full else None,
    )
    out.pts, out.time_base = frame.pts, frame.time_base
    if full:
        out.color_range = int(ColourRange.LIMITED)
    if matrix is not None:
        out.colorspace = int(matrix)
    return out


_FULL_RANGE_ENCODERS = frozenset({"mjpeg", "ljpeg"})
"""Encoders that refuse limited-range Y'CbCr unless told its standard may be bent."""


def _keep_mode_of(tmp: str, final: str) -> None:
    """The finished partial file ``tmp`` takes the permissions of the file at ``final`` it replaces
    (opened without following a link: the partial file's name is alpha2's, not a path to trust)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags)
    try:
        keep_replaced_mode(fd, final)
    finally:
        os.close(fd)


def _check_writable(tmp_path: str, directory: str) -> None:
    """Create and remove the partial file once, so that a folder no file can be made in (read-only,
    a full disk's inodes, /proc) is refused before any work, not at the first frame's write.

    Raises:
        InvalidInputError: the file cannot be created (the OS's reason).
    """
    try:
        fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        raise InvalidInputError(f"cannot create the output in {directory!r}: {exc.strerror}") from exc
    os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        os.remove(tmp_path)


# -- the session -----------------------------------------------------------------------------------


def _check_muxer_takes(muxer: str, encoder: str, codec: str) -> None:
    """Refuse an encoder whose stream ``muxer`` takes none of, when the session is made: PyAV refused it
    only at the first frame ("'webm' format does not support 'libx264' codec"), which cost a Writer
    its file. PyAV's own check, on a container in memory, so that it refuses exactly what PyAV would.

    Raises:
        InvalidInputError: the message names the container and the encoder.
    """
    if _muxer_takes(muxer, encoder):
        return
    what = codec if codec == encoder else f"{codec} (from {encoder})"
    # (It said 'cannot hold vp8 from vp8' and named no container that would.)
    raise InvalidInputError(
        f"the {muxer} container cannot hold {what} (FFmpeg's {muxer} muxer takes none): "
        + _way_out(encoder, codec, muxer)
    )


@functools.cache
def _muxer_takes(muxer: str, encoder: str) -> bool:
    """Whether FFmpeg's ``muxer`` takes a stream of ``encoder`` (PyAV's own check, a container in memory)."""
    with av.open(io.BytesIO(), "w", format=muxer) as probe:
        try:
            probe.add_stream(encoder)
        except ValueError:
            return False
    return True


def muxer_holds_sound(muxer: str) -> bool:
    """Whether FFmpeg's ``muxer`` takes an audio stream (GIF, APNG, IVF and raw video take none: their
    muxers name no audio codec)."""
    with av.open(io.BytesIO(), "w", format=muxer) as probe:
        return str(probe.default_audio_codec or "none") != "none"


def _fill_colour_tags(frame: av.VideoFrame, colour: ColourInfo) -> None:
    """Give ``frame`` the stream's matrix, primaries and transfer where it carries none: an encoder that
    writes each frame's own rather than the stream's (prores_ks) wrote none for planes from arrays or
    textures, and readers took BT.601 for BT.709."""
    if frame.colorspace == int(ColourMatrix.UNSPECIFIED):
        frame.colorspace = int(colour.matrix)
    if frame.color_primaries == int(ColourPrimaries.UNSPECIFIED):
        frame.color_primaries = int(colour.primaries)
    if frame.color_trc == int(TransferCharacteristic.UNSPECIFIED):
        frame.color_trc = int(colour.transfer)


def _plane_copy(frame: av.VideoFrame, planes: CpuPlaneSet, pixel_format: PixelFormat) -> None:
    layout = pixel_format.plane_layout(frame.width, frame.height)
    if len(planes.planes) != len(layout.planes):
        raise InvalidInputError(
            f"{pixel_format.ffmpeg_name} has {len(layout.planes)} planes, got {len(planes.planes)}"
        )
    for index, (src, info) in enumerate(zip(planes.planes, layout.planes)):
        dst_plane = frame.planes[index]
        width_bytes = info.width * info.format.bytes_per_texel
        rows = info.height
        if src.width_bytes < width_bytes or src.height < rows:
            raise InvalidInputError(
                f"plane {index} is {src.width_bytes} bytes x {src.height} rows; "
                f"{pixel_format.ffmpeg_name} {frame.width}x{frame.height} needs {width_bytes} x {rows}"
            )
        buf = memoryview(src.data).cast("B")
        src_arr = np.ndarray((rows, width_bytes), dtype=np.uint8, buffer=buf, strides=(src.bytes_per_row, 1))
        dst = np.frombuffer(memoryview(dst_plane), dtype=np.uint8).reshape(-1, dst_plane.line_size)
        dst[:rows, :width_bytes] = src_arr


@dataclass(frozen=True)
class EncodeStats:
    """Counters of an encode session."""

    frames_in: int
    """Frames accepted by :meth:`EncodeSession.encode`."""
    packets_out: int
    """Video packets muxed."""
    audio_packets_copied: int
    """Audio packets remuxed from the audio source."""
    audio_frames_reencoded: int = 0
    """Audio frames of the source decoded and encoded again (the output's container cannot hold its codec)."""
    audio_note: str | None = None
    """How the audio track was made when it was not a plain copy or ``encode_audio`` (re-encoded, and why)."""
    audio_timestamps: TimestampAdjustments = field(default_factory=TimestampAdjustments)
    """Copied audio packets whose dts repeated or went backwards: dropped (behind the last one) or
    rebased (a jump back or a reset), by kind."""
    copied_streams: tuple[InputStream, ...] = ()
    """Streams of the copy source in the output (copied, or audio encoded again)."""
    dropped_streams: tuple[DroppedStream, ...] = ()
    """Streams asked to be copied that the output does not hold, with why."""
    stream_notes: tuple[str, ...] = ()
    """What was done to copied streams other than audio otherwise than a plain copy (subtitles converted)."""
    frames_left_out: int = 0
    """Frames not written: a GIF's that would show for less than :data:`GIF_MIN_DELAY_CS` hundredths, or
    on a clock of one frame (AVI, MPEG-1/2) one that falls on the tick of the frame before it."""
    left_out_reason: str = ""
    """Why :attr:`frames_left_out` were left out (empty when none were)."""


def _audio_source_path(audio_from: DecodeSession | str | os.PathLike[str]) -> str:
    if isinstance(audio_from, DecodeSession):
        src = audio_from.source
        if not isinstance(src, str | os.PathLike):
            raise InvalidInputError(
                "audio_from is a DecodeSession over a file object, which cannot be read twice; pass the path"
            )
        return os.fspath(src)
    return os.fspath(audio_from)


def _pixel_format_argument(value: Any) -> PixelFormat | None:
    """A ``pixel_format`` argument as a PixelFormat: one already, or FFmpeg's name of one (``'yuv444p'``).

    Raises:
        UnknownFormatError: a name alpha2 does not know, or neither a name nor a PixelFormat.
    """
    if value is None or isinstance(value, PixelFormat):
        return value
    return PixelFormat.from_ffmpeg_name(value)


def _options_argument(value: Any) -> dict[str, str]:
    """An ``options`` argument (the encoder's own AVOptions) as a dict of str to str.

    Raises:
        InvalidInputError: not a mapping of names to values.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise InvalidInputError(
            f"options must be a dict of the encoder's option names to values (e.g. {{'tune': 'film'}}), "
            f"got {value!r:.80}"
        )
    return {key: str(item) for key, item in value.items()}


class EncodeSession:
    """Encode frames into a file (or a writable file object), atomically.

    Args:
        path_or_file: Output path (the extension picks the container) or a writable binary file object
            (then ``container_format`` is required and atomicity is the caller's).
        codec: ``'h264'``, ``'hevc'``, ``'av1'``, ``'vp9'``, ``'mpeg2'``, ``'ffv1'``, or an encoder name.
        width, height: Output size; None takes the first frame's.
        rate: Nominal frame rate (frames per second); default 30 unless ``time_base`` says otherwise.
        time_base: Unit of ``pts`` passed to :meth:`encode`; default ``1 / rate``.
        pixel_format: Encoder pixel format (a PixelFormat or FFmpeg's name of one, ``'yuv444p'``); None
            takes the first frame's when the encoder supports it.
        crf: Constant-quality factor (crf / cq / qscale, per encoder).
        bitrate: Target bit rate in bits per second.
        preset: Encoder speed preset (``'veryfast'`` for x264/x265, a number for SVT-AV1 / libaom).
        colour: Colour metadata written to the stream; None takes the first DecodedFrame's, if any.
        audio_from: Copy the first audio stream of this source (a DecodeSession or a path), packets
            as they are (audio the container cannot hold is encoded again; audio that does not decode is
            dropped, said in :attr:`stats`).
        copy_streams: Which streams of ``audio_from`` to copy, by index in its container (audio,
            subtitles, cover art, attachments: :class:`~alpha2.ffmpeg_bridge.side_streams.StreamCopier`);
            None: its first audio stream.
        default_first: The kinds whose streams ``copy_streams`` lists in the order a person chose
            them: the first takes the default (the copier's ``default_first``).
        start_shift_seconds: Subtracted from the copied streams' timestamps (the caller subtracts the
            same from the video's pts: the output starts at zero).
        jump_seconds: A forward jump of a copied stream's timestamps longer than this is a
            discontinuity, re-timed; None: kept.
        trim_streams: Cut the copied streams with the video (a part of the input: ``--from``,
            ``--to``): nothing before the output's zero, nothing after ``streams_end_seconds``; the
            audio is encoded again, cut to the sample.
        streams_end_seconds: The output time the copied streams end at (with ``trim_streams``); None:
            not known yet (:meth:`end_streams_at`).
        sample_aspect_ratio: The shape of one pixel (width : height) written into the stream, for
            anamorphic video; None: square.
        audio_rate: Add an encoded audio track at this sample rate, fed by :meth:`encode_audio` (AAC,
            or Opus for WebM / Ogg). Not together with ``audio_from``.
        audio_channels: Channels of that track (1 or 2).
        container_format: FFmpeg muxer name, when the extension does not say it.
        options: Extra encoder options (FFmpeg AVOptions, strings).
        gop_size: Key frame interval in frames.
        interlaced: Code the frames as interlaced where the encoder can (:data:`INTERLACED_ENCODERS`);
            others code them progressive.
        top_field_first: The field order of interlaced coding (and of the stream's tag): the top field
            first, or the bottom one.
        display_rotation: Clockwise rotation a player applies, stored as the stream's display matrix
            (only in :data:`ROTATION_CONTAINERS`).
        hdr: HDR static metadata (mastering display, content light level) to write into the stream,
            through the encoder's own parameters (libx265, libsvtav1; :func:`~alpha2.ffmpeg_bridge.hdr.
            hdr_encoder_options`); never on 8 bits. :attr:`hdr_note` says what happened.

    RGB frames handed to a Y'CbCr encoder are converted by the session's matrix and range where those
    are Y'CbCr ones, else BT.709 / BT.601 limited (:func:`~alpha2.ffmpeg_bridge.scale.yuv_colour_for_rgb`),
    and the stream is tagged with what they were converted by.
    """

    def __init__(
        self,
        path_or_file: str | os.PathLike[str] | IO[bytes],
        *,
        codec: str = "h264",
        width: int | None = None,
        height: int | None = None,
        rate: fractions.Fraction | int | float | None = None,
        time_base: fractions.Fraction | None = None,
        pixel_format: PixelFormat | str | None = None,
        crf: float | None = None,
        bitrate: int | None = None,
        preset: str | int | None = None,
        colour: ColourInfo | None = None,
        audio_from: DecodeSession | str | os.PathLike[str] | None = None,
        container_format: str | None = None,
        options: Mapping[str, Any] | None = None,
        gop_size: int | None = None,
        audio_rate: int | None = None,
        audio_channels: int = 2,
        interlaced: bool = False,
        display_rotation: Rotation = Rotation.NONE,
        hdr: HdrMetadata | None = None,
        copy_streams: Sequence[int] | None = None,
        default_first: Sequence[str] = (),
        start_shift_seconds: float = 0.0,
        jump_seconds: float | None = None,
        top_field_first: bool = True,
        trim_streams: bool = False,
        streams_end_seconds: float | None = None,
        sample_aspect_ratio: fractions.Fraction | None = None,
    ) -> None:
        pixel_format = _pixel_format_argument(pixel_format)
        options = _options_argument(options)
        if container_format is not None and (
            not isinstance(container_format, str) or container_format not in av.formats_available
        ):
            raise OutputFormatError(
                f"container_format must name one of FFmpeg's muxers ('mp4', 'matroska', 'mov', 'webm', "
                f"'mpegts', ...; av.formats_available lists them all), got {container_format!r}"
            )
        if hdr is not None and not isinstance(hdr, HdrMetadata):  # it failed at the first frame, raw
            raise InvalidInputError(
                "hdr must be an alpha2.gpu.hdr.HdrMetadata (mastering display, content light level) or "
                f"None, got {type(hdr).__name__} {hdr!r}"
            )
        if audio_rate is not None:
            whole = isinstance(audio_rate, numbers.Integral) and not isinstance(audio_rate, bool)
            if not whole or audio_rate <= 0:
                raise InvalidInputError(f"audio_rate must be positive samples per second, got {audio_rate!r}")
            audio_rate = int(audio_rate)
        if audio_rate is not None and audio_from is not None:
            raise InvalidInputError("one audio track: copy one (audio_from) or encode one (audio_rate)")
        if copy_streams is not None and audio_from is None:
            raise InvalidInputError("copy_streams names streams of audio_from: give audio_from too")
        if audio_channels not in (1, 2):
            raise InvalidInputError(f"audio_channels must be 1 or 2, got {audio_channels}")
        if (width is None) != (height is None):
            raise InvalidInputError("give both width and height, or neither (the first frame's size is used)")
        if width is not None and height is not None and (width <= 0 or height <= 0):
            raise InvalidInputError(f"width and height must be positive, got {width}x{height}")
        if crf is not None and crf < 0:
            raise InvalidInputError(f"crf must be non-negative, got {crf}")
        if bitrate is not None and bitrate <= 0:
            raise InvalidInputError(f"bitrate must be positive bits per second, got {bitrate}")
        if rate is None:
            rate = fractions.Fraction(1, 1) / time_base if time_base is not None and time_base < 1 else 30
        self.rate = fractions.Fraction(rate).limit_denominator(1_000_000)
        """Nominal frame rate in frames per second."""
        if self.rate <= 0:
            raise InvalidInputError(f"rate must be positive, got {rate}")
        self.time_base = fractions.Fraction(time_base) if time_base is not None else 1 / self.rate
        """Unit of the pts given to :meth:`encode`, in seconds."""
        self.encoder = choose_encoder(codec)
        """The encoder chosen, and why."""
        known = encoder_spec(self.encoder.name)
        if crf is not None and known is not None:
            known.crf_options(crf)  # refused here, before anything is written
        limits = known.limits if known is not None else None
        if width is not None and height is not None and limits is not None:
            # Refused here, before any frame is made: the encoder's own word, when it opens at the
            # first frame, is "Invalid argument" (libx265 below 64x64) or nothing before the frames
            # take all memory.
            if not (
                limits.min_width <= width <= limits.max_width
                and limits.min_height <= height <= limits.max_height
            ):
                raise InvalidInputError(
                    f"{width}x{height} cannot be encoded with {self.encoder.name}: its coded size must "
                    f"be between {limits.min_width}x{limits.min_height} and "
                    f"{limits.max_width}x{limits.max_height}"
                )
        if width is not None and height is not None:
            refusal = size_refusal(self.encoder.name, width, height)
            if refusal is not None:  # refused here: the encoder takes it, and hangs when the file is finished
                raise InvalidInputError(refusal)
        if isinstance(path_or_file, str | os.PathLike):
            self.path: str | None = os.path.abspath(os.fspath(path_or_file))
            directory, name = os.path.split(self.path)
            if container_format is None:
                container_format_name = output_container(name)  # refused here, before anything is written
            else:
                container_format_name = container_format
            if not os.path.isdir(directory):
                raise InvalidInputError(f"output directory {directory!r} does not exist")
            self._tmp_path: str | None = os.path.join(directory, partial_name(name, uuid.uuid4().hex[:12]))
            _check_writable(self._tmp_path, directory)
            self._file: IO[bytes] | None = None
        else:
            if container_format is None:
                raise InvalidInputError(
                    "writing to a file object needs container_format (e.g. 'mp4', 'matroska')"
                )
            self.path = None
            self._tmp_path = None
            self._file = path_or_file
            container_format_name = container_format
        if display_rotation is not Rotation.NONE and container_format_name not in ROTATION_CONTAINERS:
            raise InvalidInputError(
                f"the {container_format_name} container holds no display rotation; write "
                f"{', '.join(sorted(ROTATION_CONTAINERS))}, or turn the pixels"
            )
        self._display_rotation = display_rotation
        self._rgb_colour: ColourInfo | None = None  # set when RGB frames are converted for the encoder
        self._yuv_colour: ColourInfo | None = None  # set when Y'CbCr frames are converted for an RGB one
        self._to_limited = False  # full-range frames are converted to limited (LIMITED_RANGE_ENCODERS)
        self._read_as: tuple[int, int] | None = None  # (width, height) where readers ignore the matrix tag
        self._palette: PaletteFilter | None = None  # a GIF's: RGB frames to palette pictures
        self._tags: ColourInfo | None = None  # the stream's colour, given to frames that carry none
        self._width, self._height = width, height
        self._pixel_format = pixel_format
        self._crf, self._bitrate, self._preset = crf, bitrate, preset
        self._colour = colour
        self._audio_path = _audio_source_path(audio_from) if audio_from is not None else None
        self._container_format = container_format
        self.muxer = container_format_name
        """FFmpeg's muxer of the output (``mp4``, ``matroska``, ``gif`` ...)."""
        refused = _muxer_refusal(container_format_name, self.encoder.codec)
        if refused is not None:
            raise InvalidInputError(
                f"the {container_format_name} container cannot hold {self.encoder.codec} ({refused}): "
                + _way_out(self.encoder.name, self.encoder.codec, container_format_name)
            )
        if container_format_name == "gif" and self.encoder.name not in PALETTE_ENCODERS:
            raise InvalidInputError(
                f"a GIF holds GIF pictures only, not {self.encoder.codec}: leave the codec out (or give "
                "gif), or write .mp4, .mkv or .webm"
            )
        _check_muxer_takes(container_format_name, self.encoder.name, self.encoder.codec)
        if self.encoder.name in PALETTE_ENCODERS:
            # FFmpeg's GIF encoder has no such options: it would ignore them, and the summary say them.
            asked = [
                name
                for name, value in (("crf", crf), ("bitrate", bitrate), ("preset", preset))
                if value is not None
            ]
            if asked:
                raise InvalidInputError(
                    f"{self.encoder.name} takes no {' or '.join(asked)}: a GIF frame is its 256 colours, "
                    f"with no quality or speed to set; leave {' and '.join(asked)} out"
                )
        _refuse_ignored_rate_options(self.encoder.name, crf=crf, bitrate=bitrate, preset=preset)
        self._options = options
        self._gop_size = gop_size
        self._interlaced = interlaced
        self._top_field_first = top_field_first
        self._copy_streams = None if copy_streams is None else tuple(copy_streams)
        self._default_first = tuple(default_first)
        self._start_shift = start_shift_seconds
        self._jump_seconds = jump_seconds
        self._trim_streams = trim_streams
        self._streams_end = streams_end_seconds
        self._copier: StreamCopier | None = None
        self._hdr = hdr
        self.hdr_note: str | None = None
        """What became of ``hdr`` (written by the encoder's own parameters, or why not); set on open."""
        self._out: av.container.OutputContainer | None = None
        self._vstream: av.video.stream.VideoStream | None = None
        self._last_pts: int | None = None
        self._codec_time_base = self.time_base  # the encoder's own (EncoderSpec.time_base), set at open
        self._sample_aspect = sample_aspect_ratio
        self._last_codec_pts: int | None = None
        self._frames_in = 0
        self._left_out = 0  # a GIF's frames too short to show (GIF_MIN_DELAY_CS)
        # Frames' durations by their pts in the encoder's time base, given to their packets: the encoders
        # hand packets out without them, and a muxer then guessed the last frame's (a VFR input's 4.533 s
        # came out 4.560 s, where the ffmpeg command keeps 4.533).
        self._durations: dict[int, int] = {}
        self._last_shown_cs: int | None = None
        self._packets_out = 0
        self._last_dts: int | None = None  # the decode time of the video packet written last (_sane_dts)
        self._audio_rate = audio_rate
        self._audio_channels = audio_channels
        self._audio_enc: av.audio.stream.AudioStream | None = None  # the encoded track (audio_rate)
        self._audio_samples = 0
        self._audio_waiting: list[av.AudioFrame] = []  # given before the output opened
        self._done = False
        self._pid = os.getpid()  # a fork's copy frees nothing: the partial output is this process's
        self._lock = threading.RLock()

    # -- state -----------------------------------------------------------------------------------

    @property
    def stats(self) -> EncodeStats:
        """Frames in, packets out, audio packets copied."""
        copier = self._copier
        if copier is None:
            return EncodeStats(
                self._frames_in,
                self._packets_out,
                0,
                frames_left_out=self._left_out,
                left_out_reason=self._left_out_reason(),
            )
        report = copier.report
        return EncodeStats(
            self._frames_in,
            self._packets_out,
            copier.audio_packets_copied,
            copier.frames_reencoded,
            report.audio_note(),
            copier.adjustments,
            tuple(report.kept),
            tuple(report.dropped),
            tuple(report.other_notes),
            self._left_out,
            self._left_out_reason(),
        )

    def _left_out_reason(self) -> str:
        if not self._left_out:
            return ""
        if self._palette is not None:
            return (
                f"a GIF frame shows for {GIF_MIN_DELAY_CS} hundredths of a second at least (browsers show "
                "a shorter one for a tenth), so 50 frames a second at most"
            )
        container = " in AVI" if self.muxer == "avi" else ""
        return (
            f"the output's clock is one frame ({float(self.rate):g} fps{container}), "
            "and each fell on the tick of the frame before it (as ffmpeg drops them); written later, "
            "the pictures would fall behind the sound"
        )

    @property
    def closed(self) -> bool:
        """Whether the session is over: closed, aborted, or failed (its partial output removed); it
        encodes nothing more."""
        return self._done

    @property
    def opened(self) -> bool:
        """Whether the encoder was opened (by the first frame)."""
        return self._out is not None

    @property
    def pixel_format(self) -> PixelFormat | None:
        """The encoder's pixel format once known."""
        return self._pixel_format

    def set_timing(self, *, rate: fractions.Fraction | int | float, time_base: fractions.Fraction) -> None:
        """Set the nominal frame rate and the unit of ``pts`` before the first frame is encoded.

        For a caller that learns its timing from the first frame (the front door's Writer takes a decoded
        frame's time base and its source's frame rate).

        Raises:
            InvalidInputError: a frame was already encoded, or a rate or time base that is not positive.
        """
        with self._lock:
            if self._out is not None or self._frames_in:
                raise InvalidInputError("the first frame fixed the timing: set it before encoding any frame")
            nominal = fractions.Fraction(rate).limit_denominator(1_000_000)
            unit = fractions.Fraction(time_base)
            if nominal <= 0 or unit <= 0:
                raise InvalidInputError(f"rate and time_base must be positive, got {rate} and {time_base}")
            self.rate, self.time_base = nominal, unit

    def end_streams_at(self, seconds: float) -> None:
        """End the copied streams at this output time (made with ``trim_streams``: the video was cut
        there, at ``--frames``); call before :meth:`close`."""
        with self._lock:
            self._streams_end = seconds
            if self._copier is not None and self._trim_streams:
                self._copier.set_end(seconds)

    # -- opening ----------------------------------------------------------------------------------

    def _encoder_pixel_format(self, first: PixelFormat) -> str:
        supported = list(encoder_pixel_formats(self.encoder.name))
        if self._pixel_format is not None:
            wanted = self._pixel_format.ffmpeg_name
            if supported and wanted not in supported:
                raise UnsupportedCodecError(
                    f"{self.encoder.name} cannot encode {wanted}; it takes: {', '.join(supported)}"
                )
            return wanted
        # Keep alpha and the bit depth where the encoder allows it (the plan says the same).
        taken = nearest_encoder_format(first, tuple(supported), self.encoder.name)
        colour_kept_or_refused(first, taken, self.encoder.name)
        return taken.ffmpeg_name

    def _open(
        self, width: int, height: int, first_format: PixelFormat, first_colour: ColourInfo | None
    ) -> None:
        pix_name = self._encoder_pixel_format(first_format)
        self._pixel_format = PixelFormat.from_ffmpeg_name(pix_name)
        colour = self._colour if self._colour is not None else first_colour
        if first_format.is_rgb and not self._pixel_format.is_rgb:
            colour = self._rgb_colour = yuv_colour_for_rgb(colour, width, height)
        elif self._pixel_format.is_rgb and not first_format.is_rgb:
            # An RGB encoder (libx264rgb, ffv1 as bgr0, ...): the Y'CbCr frames are converted by their own
            # matrix and range, and the stream is tagged RGB, full range (tagged with the frames' matrix,
            # decoders read the RGB planes as Y'CbCr).
            self._yuv_colour = colour if colour is not None else ColourInfo()
            colour = dataclasses.replace(self._yuv_colour, matrix=ColourMatrix.RGB, range=ColourRange.FULL)
        limited_only = read_as_limited(self.encoder.name, self.encoder.codec, self.muxer)
        if limited_only and not self._pixel_format.is_rgb:
            # Decoders read these encoders' pictures as limited: a full-range stream is written so.
            self._to_limited = True
            if colour is not None and colour.range is ColourRange.FULL:
                colour = dataclasses.replace(colour, range=ColourRange.LIMITED)
        if not self._pixel_format.is_rgb:
            # VP8's pictures are read as BT.601, FFV1's and MPEG-4's in AVI or NUT by their size's guess,
            # whatever the tags say: a stream of another matrix is converted and written so.
            self._read_as = (width, height)
            read = self._matrix_for_readers(colour.matrix) if colour is not None else None
            if colour is not None and read is not None:
                colour = dataclasses.replace(colour, matrix=read)
                if self._rgb_colour is not None:
                    self._rgb_colour = colour  # RGB frames (a Writer's arrays) converted by it itself
        target: Any = self._tmp_path if self._tmp_path is not None else self._file
        try:
            out = av.open(target, mode="w", format=self._container_format)
        except av.error.FFmpegError as exc:
            disk_error = output_write_error(self.path, exc)
            raise disk_error or from_ffmpeg(
                exc, f"creating {self.path or 'the output'}", EncoderError
            ) from exc
        assert isinstance(out, av.container.OutputContainer)
        self._out = out
        # An encoder the table does not know takes FFmpeg's usual option names (preset, crf).
        spec = encoder_spec(self.encoder.name) or EncoderSpec(self.encoder.name, self.encoder.codec, False)
        self._codec_time_base = spec.time_base(self.time_base, self.rate)
        if self.muxer in FRAME_CLOCK_MUXERS or (spec.rate_clock and self._bitrate is not None):
            # On one frame's clock, a frame landing on the tick of the one before is dropped (said).
            self._codec_time_base = 1 / self.rate
        if self.encoder.name == "libsvtav1":
            quiet_svt_log()
        try:
            stream = out.add_stream(self.encoder.name, rate=self.rate)
            assert isinstance(stream, av.video.stream.VideoStream)
            cc = stream.codec_context
            cc.width, cc.height = width, height
            cc.time_base = self._codec_time_base
            if self.encoder.name in PALETTE_ENCODERS:  # GIF: each frame's 256 colours made on the way
                self._palette = PaletteFilter(width, height, pix_name, self._codec_time_base)
                cc.pix_fmt = "pal8"
            else:
                cc.pix_fmt = pix_name
            stream.time_base = self._codec_time_base
            if self._sample_aspect is not None:  # anamorphic pixels, written into the stream's header
                cc.sample_aspect_ratio = self._sample_aspect
            if self._display_rotation is not Rotation.NONE:
                stream.set_display_rotation(-int(self._display_rotation))  # PyAV takes counter-clockwise
            if self._gop_size is not None:
                cc.gop_size = self._gop_size
            opts = dict(self._options)
            if self._interlaced and self.encoder.name in INTERLACED_ENCODERS:
                flags = av.codec.context.Flags
                cc.flags |= flags.interlaced_dct | flags.interlaced_me
                cc.field_order = _FIELD_ORDER_TT if self._top_field_first else _FIELD_ORDER_BB
                if self.encoder.name == "libx264":
                    # libx264 codes the top field first unless told (the frames' flags do not reach it).
                    order = "tff=1" if self._top_field_first else "bff=1"
                    params = opts.get("x264-params")
                    opts["x264-params"] = f"{params}:{order}" if params else order
            if colour is not None:
                cc.colorspace, cc.color_trc = written_tags(
                    self.encoder.name, int(colour.matrix), int(colour.transfer)
                )
                cc.color_primaries = int(colour.primaries)
                if colour.range is not ColourRange.UNSPECIFIED:
                    cc.color_range = int(colour.range)
                self._tags = colour
            if self._crf is not None:
                for option, value in spec.crf_options(self._crf).items():
                    opts.setdefault(option, value)
            if self._preset is not None:
                opts.setdefault(spec.preset_option, str(self._preset))
            if self._bitrate is not None:
                cc.bit_rate = int(self._bitrate)
            if self._hdr is not None:
                # PyAV cannot attach the side data to a stream: the encoders' own parameters carry it.
                written = hdr_encoder_options(
                    self.encoder.name, self._hdr, opts, bit_depth=self._pixel_format.bit_depth
                )
                opts, self.hdr_note = written.options, written.reason
            if (
                self.encoder.name in _FULL_RANGE_ENCODERS
                and not self._pixel_format.ffmpeg_name.startswith("yuvj")
                and (colour is None or colour.range is not ColourRange.FULL)
            ):
                # MJPEG wants full range ('Non full-range YUV is non-standard'): limited-range pictures
                # are written as they are, tagged limited, which FFmpeg's decoders read (it was
                # "opening encoder mjpeg: Invalid argument").
                opts.setdefault("strict", "unofficial")
            cc.options = opts
            self._vstream = stream
            if self._audio_path is not None:
                # Copies, audio encoded again where the container cannot hold its codec, drops said.
                self._copier = StreamCopier(
                    out,
                    self._audio_path,
                    self._copy_streams,
                    shift_seconds=self._start_shift,
                    jump_seconds=self._jump_seconds,
                    trim=self._trim_streams,
                    end_seconds=self._streams_end,
                    default_first=self._default_first,
                )
            elif self._audio_rate is not None:
                self._open_audio_encoder(out)
            cc.open()
        except (av.error.FFmpegError, ValueError, TypeError) as exc:
            self._fail()
            raise from_ffmpeg(
                exc, f"opening encoder {self.encoder.name} at {width}x{height} {pix_name}", EncoderError
            ) from exc
        except BaseException:
            self._fail()
            raise

    def _open_audio_encoder(self, out: av.container.OutputContainer) -> None:
        assert self._audio_rate is not None
        self._audio_enc, self._audio_rate = add_audio_encoder(out, self._audio_rate, self._audio_channels)

    def encode_audio(self, samples: Any, *, sample_rate: int) -> None:
        """Encode PCM samples into the audio track declared with ``audio_rate``.

        Args:
            samples: A ``(channels, n)`` float32 array in -1..1 (numpy or anything ``np.asarray`` takes),
                continuing the track: timestamps follow from the samples already encoded. Samples given
                before the first video frame opened the output (a Writer's copier hands frames on a
                frame or two late) are kept, and encoded when it opens.
            sample_rate: Must be the track's ``audio_rate`` (no resampling of the timeline here).

        Raises:
            InvalidInputError: No audio track was declared, or the rate or shape is wrong.
            EncoderError: FFmpeg refused the samples.
        """
        import numpy as np

        with self._lock:
            if self._done:
                raise ClosedError("this EncodeSession was closed")
            if self._audio_rate is None or self._audio_path is not None:
                raise InvalidInputError(
                    "no audio track to feed: create the EncodeSession with audio_rate=... (not audio_from)"
                )
            if sample_rate != self._audio_rate:
                raise InvalidInputError(f"sample_rate {sample_rate} is not the track's {self._audio_rate}")
            try:
                pcm = np.ascontiguousarray(np.asarray(samples, dtype=np.float32))
            except (TypeError, ValueError) as exc:
                got = type(samples).__name__
                raise InvalidInputError(
                    f"samples must be a ({self._audio_channels}, n) float32 array, got {got}"
                ) from exc
            if pcm.ndim != 2 or pcm.shape[0] != self._audio_channels:
                raise InvalidInputError(
                    f"samples must be ({self._audio_channels}, n) float32, got shape {pcm.shape}"
                )
            if pcm.shape[1] == 0:
                return
            frame = av.AudioFrame.from_ndarray(
                pcm, format="fltp", layout="stereo" if self._audio_channels == 2 else "mono"
            )
            frame.sample_rate = self._audio_rate
            frame.pts = self._audio_samples
            frame.time_base = fractions.Fraction(1, self._audio_rate)
            self._audio_samples += pcm.shape[1]
            if self._out is None:  # the first video frame opens the output: encoded then
                self._audio_waiting.append(frame)
            else:
                self._encode_audio_frame(frame)

    def _encode_audio_frame(self, frame: av.AudioFrame | None) -> None:
        assert self._out is not None and self._audio_enc is not None
        try:
            for packet in self._audio_enc.encode(frame):
                self._out.mux(packet)
        except (av.error.FFmpegError, ValueError) as exc:
            disk_error = output_write_error(self.path, exc)
            if disk_error is not None:
                self._fail()
                raise disk_error from exc
            raise from_ffmpeg(
                exc, f"encoding audio with {self._audio_enc.codec_context.name}", EncoderError
            ) from exc

    # -- frames in -------------------------------------------------------------------------------

    def size_refusal(self, width: int, height: int) -> str | None:
        """Why frames of ``width`` x ``height`` cannot be encoded although the encoder's limits take
        them (SVT-AV1's flush never returns for thin pictures; ProRes opens at even widths only), or
        None; the session's own size, where it scales to one, is what counts."""
        return size_refusal(self.encoder.name, self._width or width, self._height or height)

    def _to_av_frame(
        self,
        frame: DecodedFrame | EncodedPlanes | CpuPlaneSet | tuple[CudaPtr2D, ...],
        pixel_format: PixelFormat | None,
        width: int | None,
        height: int | None,
    ) -> tuple[av.VideoFrame, PixelFormat, ColourInfo | None]:
        if isinstance(frame, EncodedPlanes):
            # The copier's planes carry their colour: the stream is tagged from it, not left untagged.
            av_frame, fmt, _ = self._to_av_frame(frame.planes, frame.pixel_format, frame.width, frame.height)
            return av_frame, fmt, frame.colour
        if isinstance(frame, DecodedFrame):
            keep = frame.keep_alive
            if isinstance(keep, av.VideoFrame):
                # The decoder's own frame: no copy (a CUDA frame is downloaded by PyAV for a CPU encoder).
                return keep, frame.pixel_format, frame.colour
            planes: CpuPlaneSet | tuple[CudaPtr2D, ...] = frame.planes
            fmt = frame.pixel_format
            w, h = frame.metadata.display_size.width, frame.metadata.display_size.height
            colour: ColourInfo | None = frame.colour
        else:
            if pixel_format is None:
                raise InvalidInputError(
                    "pass pixel_format with raw planes (a CpuPlaneSet or CudaPtr2D tuple)"
                )
            planes, fmt, colour = frame, pixel_format, None
            w = width or self._width or 0
            h = height or self._height or 0
            if not w or not h:
                first = planes.planes[0] if isinstance(planes, CpuPlaneSet) else planes[0]
                w = w or first.width_bytes // fmt.plane_formats[0].bytes_per_texel
                h = h or first.height
        if isinstance(planes, CpuPlaneSet):
            av_frame = av.VideoFrame(w, h, fmt.ffmpeg_name)
            _plane_copy(av_frame, planes, fmt)
            return av_frame, fmt, colour
        return frame_from_dlpack(planes, fmt, w, h), fmt, colour

    def encode(
        self,
        frame: DecodedFrame | EncodedPlanes | CpuPlaneSet | tuple[CudaPtr2D, ...],
        *,
        pts: int | None = None,
        pixel_format: PixelFormat | None = None,
        width: int | None = None,
        height: int | None = None,
        duration: int | None = None,
    ) -> None:
        """Encode one frame.

        Args:
            frame: A DecodedFrame, an EncodeCopier's EncodedPlanes (the stream is tagged with their
                ``colour`` unless the session was given one), a CpuPlaneSet or a tuple of CudaPtr2D
                planes (nv12 / p010). Raw planes carry no colour: pass ``colour=`` to the session.
            pts: Timestamp in ``time_base`` units. None: the DecodedFrame's own pts (rescaled), the
                EncodedPlanes' pts, else the frame index at ``rate``. Must increase from frame to frame.
            pixel_format: Layout of raw planes (required for CpuPlaneSet / CudaPtr2D input).
            width, height: Size of raw planes; default the session's, else derived from plane 0.
            duration: How long the frame shows, in ``time_base`` units (its packet says it: the muxer
                takes the last frame's end from it); None: the muxer's guess, from the frames before.

        Raises:
            EncoderError: The encoder or muxer failed; the partial output was removed.
            InvalidInputError: Inconsistent planes, or a pts that does not increase.
        """
        with self._lock:
            if self._done:
                raise ClosedError("this EncodeSession was closed or aborted")
            av_frame, fmt, colour = self._to_av_frame(frame, pixel_format, width, height)
            if pts is None:
                pts = self._default_pts(frame)
            if self._last_pts is not None and pts <= self._last_pts:
                raise InvalidInputError(
                    f"pts must increase: {pts} after {self._last_pts} (time_base {self.time_base})"
                )
            if self._out is None:
                size = (self._width or av_frame.width, self._height or av_frame.height)
                refusal = self.size_refusal(*size)
                if refusal is not None:  # before the encoder opens: its flush would never return
                    raise InvalidInputError(refusal)
                self._open(*size, fmt, colour)
                waiting, self._audio_waiting = self._audio_waiting, []
                for audio in waiting:
                    self._encode_audio_frame(audio)
            # Timed before the RGB conversion, which keeps them: a frame drained from the decoder after
            # a read error (an image sequence's gap) comes with no time base of its own.
            codec_pts = self._codec_pts(pts)
            if codec_pts is None:  # on a one-frame clock, on the tick of the frame before it
                self._last_pts = pts
                self._frames_in += 1
                self._left_out += 1
                return
            av_frame.pts = codec_pts
            av_frame.time_base = self._codec_time_base
            source = colour if colour is not None else self._colour  # raw planes: the session's colour
            read = None if source is None or fmt.is_rgb else self._matrix_for_readers(source.matrix)
            if self._rgb_colour is not None and fmt.is_rgb:
                assert self._pixel_format is not None
                av_frame = rgb_to_yuv_frame(av_frame, self._pixel_format.ffmpeg_name, self._rgb_colour)
            elif self._yuv_colour is not None and not fmt.is_rgb:
                assert self._pixel_format is not None
                av_frame = yuv_to_rgb_frame(
                    av_frame, self._pixel_format.ffmpeg_name, colour or self._yuv_colour
                )
            elif (
                source is not None
                and not fmt.is_rgb
                and ((self._to_limited and source.range is ColourRange.FULL) or read is not None)
            ):
                assert self._pixel_format is not None
                av_frame = _encoder_layout(
                    av_frame, self._pixel_format.ffmpeg_name, source, self._to_limited, read
                )
            elif (
                colour is not None
                and colour.range is ColourRange.FULL
                and not fmt.is_rgb
                and self._palette is None
                and self._pixel_format is not None
                and av_frame.format.name != self._pixel_format.ffmpeg_name
            ):
                av_frame = _full_range_layout(av_frame, self._pixel_format.ffmpeg_name)
            elif self._palette is not None and av_frame.format.name != self._palette.pixel_format:
                # Another RGB layout (rgb24, rgba, bgr0): the palette filter takes the one it was made for.
                pts_kept, base_kept = av_frame.pts, av_frame.time_base
                av_frame = av_frame.reformat(format=self._palette.pixel_format)
                av_frame.pts, av_frame.time_base = pts_kept, base_kept
            self._last_pts = pts
            self._frames_in += 1
            if self._palette is not None and self._too_short(pts):
                self._left_out += 1
                return
            if self._tags is not None and self._palette is None:
                _fill_colour_tags(av_frame, self._tags)
                av_frame.colorspace, av_frame.color_trc = written_tags(
                    self.encoder.name, av_frame.colorspace, av_frame.color_trc
                )
            if duration is not None and duration > 0:  # kept only for a frame that goes to the encoder
                self._durations[codec_pts] = max(1, round(duration * self.time_base / self._codec_time_base))
            self._encode_av(av_frame)

    def _matrix_for_readers(self, matrix: ColourMatrix) -> ColourMatrix | None:
        """The matrix a picture of ``matrix`` is converted to for this output (None: none), as
        :func:`~alpha2.ffmpeg_bridge.encoders.matrix_for_readers` says."""
        if self._read_as is None:
            return None
        width, height = self._read_as
        return matrix_for_readers(self.encoder.name, self.encoder.codec, self.muxer, width, height, matrix)

    def _too_short(self, pts: int) -> bool:
        """Whether a GIF's frame at ``pts`` comes less than :data:`GIF_MIN_DELAY_CS` hundredths after the
        last one written (the GIF muxer's clock): then it is left out, as browsers would show the frame
        before it for a tenth of a second."""
        shown = round(pts * self.time_base * 100)
        if self._last_shown_cs is not None and shown - self._last_shown_cs < GIF_MIN_DELAY_CS:
            return True
        self._last_shown_cs = shown
        return False

    def _codec_pts(self, pts: int) -> int | None:
        """``pts`` (in :attr:`time_base`) in the encoder's time base: the same where the encoder takes
        that unit; else rounded to its coarser clock, one tick after the previous frame at least. On a
        clock of one frame (AVI's, MPEG-1/2's) None for a frame that falls on the tick of the one
        before: it is left out, as ffmpeg drops it, where a tick later each such frame would push the
        pictures after it later and later behind the sound (a 60 fps part of a 15 fps clip)."""
        if self._codec_time_base == self.time_base:
            return pts
        ticks = round(pts * self.time_base / self._codec_time_base)
        if self._last_codec_pts is not None and ticks <= self._last_codec_pts:
            if self._codec_time_base == 1 / self.rate and self._palette is None:
                return None
            ticks = self._last_codec_pts + 1
        self._last_codec_pts = ticks
        return ticks

    def _default_pts(self, frame: object) -> int:
        if isinstance(frame, EncodedPlanes) and frame.pts is not None:
            return frame.pts
        if isinstance(frame, DecodedFrame) and frame.metadata.pts is not None and frame.metadata.time_base:
            return round(frame.metadata.pts * frame.metadata.time_base / self.time_base)
        return round(self._frames_in / self.rate / self.time_base)

    def _sane_dts(self, packet: av.packet.Packet[Any]) -> None:
        """A packet's decode time that is no time at all made one: FFmpeg's libx265 wrapper hands a
        stream of a single frame out with an uninitialised dts now and then (-2577530385, -94617440999596
        ticks at 1/90000), which the MP4 muxer refuses ('pts/dts pair unsupported': 'Not yet implemented
        in FFmpeg', in 9 of 20 one-frame writes) and Matroska sometimes too. A dts after its pts, or more
        than a minute before it (no reordering delays a frame that long), becomes the pts, kept after
        the decode time written last."""
        pts, dts, base = packet.pts, packet.dts, packet.time_base
        if pts is None or dts is None or not base:
            if dts is not None:
                self._last_dts = dts
            return
        if dts > pts or (pts - dts) * base > 60:
            dts = pts if self._last_dts is None else self._last_dts + 1
            packet.dts = dts
        self._last_dts = dts

    def _encode_av(self, av_frame: av.VideoFrame | None) -> None:
        assert self._out is not None and self._vstream is not None
        if av_frame is not None and av_frame.pict_type != _ENCODER_CHOOSES:
            # A decoded frame keeps its picture type (every frame of FFV1, ProRes or MJPEG is intra), and
            # x264 takes a typed frame as an order: a key frame each, files several times the size. The
            # encoder chooses, as the ffmpeg command lets it.
            av_frame.pict_type = _ENCODER_CHOOSES
        try:
            if self._palette is None:
                self._encode_one(av_frame)
            else:
                for picture in self._palette.feed(av_frame):
                    self._encode_one(picture)
                if av_frame is None:
                    self._encode_one(None)
        except (av.error.FFmpegError, ValueError) as exc:
            self._fail()
            disk_error = output_write_error(self.path, exc)
            raise disk_error or from_ffmpeg(exc, f"encoding with {self.encoder.name}", EncoderError) from exc
        except BaseException as exc:
            self._fail()
            # A copied stream's packets that the disk did not take (the copier's EncoderError).
            disk_error = output_write_error(self.path, exc)
            if disk_error is None:
                raise
            raise disk_error from exc

    def _encode_one(self, av_frame: av.VideoFrame | None) -> None:
        assert self._out is not None and self._vstream is not None
        for packet in self._vstream.encode(av_frame):
            duration = self._durations.pop(packet.pts, None) if packet.pts is not None else None
            if duration is not None and not packet.duration:
                packet.duration = duration
            self._sane_dts(packet)
            self._mux_audio_until(packet)
            self._out.mux(packet)
            self._packets_out += 1

    def _mux_audio_until(self, packet: av.packet.Packet[Any] | None) -> None:
        """Mux copied packets up to the video packet's time (all of them when ``packet`` is None)."""
        if self._copier is None or self._out is None:
            return
        limit: float | None = None
        if packet is not None and packet.pts is not None and packet.time_base is not None:
            limit = float(packet.pts * packet.time_base)
        self._copier.mux_until(limit)

    # -- finishing ---------------------------------------------------------------------------------

    def _fail(self) -> None:
        """Close everything and remove the partial output."""
        self._done = True
        out, self._out = self._out, None
        if out is not None:
            with contextlib.suppress(Exception):
                out.close()
        if self._copier is not None:
            self._copier.close()
        if self._tmp_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self._tmp_path)

    def abort(self) -> None:
        """Stop without output: the temporary file is removed. Idempotent."""
        with self._lock:
            if not self._done:
                self._fail()

    def close(self) -> None:
        """Flush the encoder, finish the container and move it to its final name.

        Raises:
            EncoderError: Flushing or muxing failed, or no frame was ever encoded (no output then).
        """
        with self._lock:
            if self._done:
                return
            if self._out is None:
                self._fail()
                raise EncoderError(  # the caller wrote nothing: not a fault of the encoder
                    f"no frames were encoded; {self.path or 'the output'} was not written",
                    kind=ErrorKind.INVALID_INPUT,
                )
            self._encode_av(None)
            try:
                if self._copier is not None:
                    self._copier.finish()
                if self._audio_enc is not None:
                    self._encode_audio_frame(None)
                out, self._out = self._out, None
                out.close()
            except (av.error.FFmpegError, ValueError) as exc:
                self._fail()
                disk_error = output_write_error(self.path, exc)
                raise disk_error or from_ffmpeg(
                    exc, f"finishing {self.path or 'the output'}", EncoderError
                ) from exc
            except BaseException:
                self._fail()  # the copier's or the audio encoder's error: the partial file goes too
                raise
            self._done = True
            if self._tmp_path is not None and self.path is not None:
                try:
                    _keep_mode_of(self._tmp_path, self.path)
                    os.replace(self._tmp_path, self.path)
                except OSError as exc:
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(self._tmp_path)
                    disk_error = output_write_error(self.path, exc)
                    raise disk_error or EncoderError(
                        f"moving the finished output to {self.path!r} failed: {exc}"
                    ) from exc

    def __enter__(self) -> EncodeSession:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __del__(self) -> None:
        # Never leave a temporary file behind, even when the caller forgot close() / abort().
        if getattr(self, "_done", True):
            return
        if getattr(self, "_pid", None) != os.getpid():
            # A copy dropped in a forked process removed the partial output the process it was forked
            # from was still writing, and freeing its encoder there waited forever for threads the fork
            # did not copy: what it holds is kept, never freed in the fork.
            keep_in_fork(self.__dict__)
            return
        with contextlib.suppress(Exception):
            self._fail()
