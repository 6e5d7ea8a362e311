"""PyAV objects -> alpha2 vocabulary: pixel formats, colour, rotation, planes and stream info."""

from __future__ import annotations

import fractions
import functools
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import av
import av.video.stream
from av.sidedata.sidedata import SideDataContainer

from alpha2.ffmpeg_bridge.hdr import hdr_metadata_of
from alpha2.ffmpeg_bridge.side_streams import InputStream, input_streams
from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.errors import InvalidInputError, OutOfMemoryError, UnknownFormatError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import DEFAULT_MAX_PIXELS, Rotation, Size
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet, CudaPtr2D
from alpha2.gpu.hdr import HdrMetadata
from alpha2.gpu.option_names import named

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "AudioTrack",
    "StreamInfo",
    "audio_tracks",
    "average_rate",
    "check_picture_size",
    "codec_name",
    "colour_of",
    "cpu_planes_of",
    "cuda_planes_of",
    "ends_early",
    "frame_size_bytes",
    "pixel_format_of",
    "pixel_shape",
    "probe_options",
    "rotation_from_degrees_ccw",
    "stream_info",
    "stream_language",
    "stream_packets",
    "with_first_frame",
    "within_pixel_limit",
    "without_truncated_tail",
]

_TS_DISCONT = 0x0200  # AVFMT_TS_DISCONT: the format allows timestamp discontinuities


# AVFieldOrder: AV_FIELD_TT and AV_FIELD_TB code the top field first.
_TOP_FIELD_FIRST_ORDERS = (2, 4)


@dataclass(frozen=True)
class AudioTrack:
    """One audio stream of a container, as its parameters say (nothing decoded)."""

    index: int
    """Index of the stream in the container."""
    codec: str
    """FFmpeg's codec name (``aac``, ``opus``, ...)."""
    sample_rate: int
    """Samples per second per channel (0 when the container does not say)."""
    channels: int
    """Number of channels (0 when the container does not say)."""
    language: str | None
    """ISO 639 language tag (``eng``), or None when untagged (``und``)."""


@dataclass(frozen=True)
class StreamInfo:
    """What the container says about the video stream being decoded, and what its first frame says.

    ``width`` and ``height`` are the stream parameters' (the picture as stored); :attr:`display_width`
    and :attr:`display_height` are the picture as shown, turned by :attr:`rotation`.
    """

    index: int
    """Index of the stream in the container."""
    codec_name: str
    """FFmpeg's codec name (``h264``, ``hevc``, ``vp9``, ...)."""
    width: int
    """Display width in pixels, as the stream parameters say."""
    height: int
    """Display height in pixels, as the stream parameters say."""
    ffmpeg_pixel_format: str | None
    """The decoder's software pixel format name, if known before decoding."""
    frame_count: int | None
    """Number of frames if the container records it, else None."""
    average_rate: fractions.Fraction | None
    """Average frame rate in frames per second, if known."""
    time_base: fractions.Fraction
    """Unit of the stream's timestamps, in seconds."""
    duration: int | None
    """Stream duration in ``time_base`` units, if known."""
    start_time: int | None
    """First timestamp in ``time_base`` units, if known."""
    rotation: Rotation
    """Clockwise rotation to apply for display: the first frame's display matrix (the stream's, which
    FFmpeg hands to every frame), else the legacy ``rotate`` tag."""
    has_audio: bool
    """Whether the container has at least one audio stream."""
    coded_width: int = 0
    """The decoder's coded width (the stored picture plus alignment padding); 0 when unknown."""
    coded_height: int = 0
    """The decoder's coded height; 0 when unknown."""
    mirrored: bool = False
    """Whether the first frame's display matrix flips the picture left to right before
    :attr:`rotation` (a vertical flip is a mirror and a half turn)."""
    colour: ColourInfo | None = None
    """The first frame's colour, resolved as FFmpeg would; None when no frame could be decoded."""
    hdr: HdrMetadata | None = None
    """The first frame's HDR static metadata, or None when it carries none."""
    audio_tracks: tuple[AudioTrack, ...] = ()
    """The container's audio streams, in container order."""
    streams: tuple[InputStream, ...] = ()
    """Every stream of the container (audio, subtitles, cover art, attachments, data), described."""
    discontinuous_timestamps: bool = False
    """The container's format lets its clock jump (MPEG-TS, FLV: FFmpeg's ``AVFMT_TS_DISCONT``)."""
    sample_aspect_ratio: fractions.Fraction | None = None
    """The shape of one stored pixel, width : height, where it is not square (anamorphic video: a
    16:9 DVD's 720x480 has 32:27); None: square, or not said."""
    duration_is_container: bool = False
    """:attr:`duration` is the container's, the stream saying none of its own: the longest stream's
    (audio that runs on after the video, a late subtitle), not necessarily this one's."""
    attached_picture: bool = False
    """The stream is a picture attached to the file (a song's cover art: FFmpeg's ``attached_pic``
    disposition), one still shown for the file's length, not a video."""

    @property
    def duration_seconds(self) -> float | None:
        """Stream duration in seconds, if known."""
        return None if self.duration is None else float(self.duration * self.time_base)

    @property
    def expected_frames(self) -> int | None:
        """The frames the stream holds: :attr:`frame_count` where the container records it, else its
        duration times its average rate (Matroska, WebM and MPEG-TS record no count); None when neither
        is known. For a progress display: the decoder's count is the truth."""
        if self.frame_count is not None:
            return self.frame_count
        seconds = self.duration_seconds
        if seconds and self.average_rate:
            return max(1, round(seconds * float(self.average_rate)))
        return None

    @property
    def display_size(self) -> Size:
        """The picture as shown: width and height swapped by a quarter-turn :attr:`rotation`."""
        size = Size(self.width, self.height)
        return size.transposed() if self.rotation in (Rotation.CW90, Rotation.CW270) else size

    @property
    def display_width(self) -> int:
        """Width of the picture as shown (after :attr:`rotation`)."""
        return self.display_size.width

    @property
    def display_height(self) -> int:
        """Height of the picture as shown (after :attr:`rotation`)."""
        return self.display_size.height


def rotation_from_degrees_ccw(degrees_ccw: float | None) -> Rotation:
    """FFmpeg's display-matrix angle (counter-clockwise degrees) -> the clockwise rotation to display.

    Angles that are not a multiple of 90 degrees (which alpha2 cannot honour) give NONE.
    """
    if degrees_ccw is None:
        return Rotation.NONE
    try:
        return Rotation.from_ffmpeg_display_rotation(float(degrees_ccw))
    except InvalidInputError:
        return Rotation.NONE


def _rotation_from_tag(tag: str | None) -> Rotation:
    # The legacy 'rotate' tag is clockwise degrees.
    if not tag:
        return Rotation.NONE
    try:
        value = float(tag)
    except ValueError:
        return Rotation.NONE
    return rotation_from_degrees_ccw(-value)


def stream_rotation(stream: av.video.stream.VideoStream) -> Rotation:
    """Rotation from the stream's ``rotate`` metadata tag (older muxers)."""
    return _rotation_from_tag(stream.metadata.get("rotate"))


def frame_rotation(frame: av.VideoFrame, fallback: Rotation) -> Rotation:
    """Rotation from the frame's display matrix, else ``fallback`` (the stream's tag)."""
    return frame_orientation(frame, fallback)[0]


def frame_orientation(frame: av.VideoFrame, fallback: Rotation) -> tuple[Rotation, bool]:
    """The frame's display matrix as (clockwise rotation, mirrored): the picture is flipped left to
    right first where ``mirrored``, then turned. Without a matrix, ``fallback`` (the stream's tag).

    FFmpeg's command line reads a matrix with a flip the same way (``ffmpeg_filter.c``: ``hflip`` /
    ``vflip`` at half a turn, ``transpose`` with a flip at a quarter): a horizontal flip alone is a
    mirror, a vertical flip a mirror and a half turn, a transpose a mirror and three quarters.
    """
    try:
        degrees = frame.rotation
    except Exception:
        return fallback, False
    matrix = display_matrix(frame)
    if not degrees and (matrix is None or matrix[4] >= 0):
        return fallback, False
    rotation = rotation_from_degrees_ccw(float(degrees or 0.0))
    if matrix is None:
        return rotation, False
    a, c, d = matrix[0], matrix[3], matrix[4]
    if rotation is Rotation.NONE:
        return (Rotation.CW180, True) if d < 0 else (Rotation.NONE, False)
    if rotation is Rotation.CW90:
        return (Rotation.CW270, True) if c > 0 else (Rotation.CW90, False)
    if rotation is Rotation.CW270:
        return (Rotation.CW90, True) if c < 0 else (Rotation.CW270, False)
    if a < 0 and d >= 0:  # half a turn: a horizontal flip alone
        return Rotation.NONE, True
    if d < 0 and a >= 0:  # a vertical flip alone
        return Rotation.CW180, True
    return Rotation.CW180, False


def display_matrix(frame: av.VideoFrame) -> tuple[int, ...] | None:
    """The frame's display matrix (nine 32-bit values, 16.16 fixed point but the last column), or None.

    Read through a side-data container of its own: ``frame.side_data`` caches one on the frame that
    refers back to it, a reference cycle that would keep every frame (and its picture) until the cyclic
    collector runs (see :func:`~alpha2.ffmpeg_bridge.hdr.hdr_metadata_of`)."""
    try:
        side: Any = SideDataContainer(frame)  # type: ignore[call-arg]  # PyAV's stub lacks the frame
        for data in side:
            if str(getattr(data, "type", "")).endswith("DISPLAYMATRIX"):
                raw = bytes(data)
                return struct.unpack("<9i", raw[:36]) if len(raw) >= 36 else None
    except Exception:
        return None
    return None


def top_field_first(field_order: int | None) -> bool:
    """Whether an AVFieldOrder value codes the top field first."""
    return field_order in _TOP_FIELD_FIRST_ORDERS


def pixel_format_of(frame: av.VideoFrame) -> PixelFormat:
    """The software layout of a frame (``sw_format`` for hardware frames).

    Raises:
        UnknownFormatError: alpha2 has no PixelFormat for FFmpeg's format.
    """
    fmt = frame.format.name
    if fmt == "cuda":
        sw = frame.sw_format
        if sw is None:
            raise UnknownFormatError("a CUDA frame without a software format")
        fmt = sw.name
    return PixelFormat.from_ffmpeg_name(fmt)


def colour_of(frame: av.VideoFrame, pixel_format: PixelFormat) -> ColourInfo:
    """The frame's colour description with unspecified fields resolved as FFmpeg would."""
    tags = (int(frame.colorspace), int(frame.color_primaries), int(frame.color_trc), int(frame.color_range))
    return _resolved_colour(tags, pixel_format, frame.width, frame.height)


@functools.lru_cache(maxsize=64)
def _resolved_colour(
    tags: tuple[int, int, int, int], pixel_format: PixelFormat, width: int, height: int
) -> ColourInfo:
    """Cached: a stream's frames carry the same tags, and resolving them is Python work per frame."""
    # Fields alpha2 does not know (reserved values) count as unspecified, as swscale treats them.
    fields = list(tags)
    unspecified = (2, 2, 2, 0)

    def make(values: list[int] | tuple[int, ...]) -> ColourInfo:
        # PyAV does not expose chroma_location: left unspecified, resolved() supplies FFmpeg's default.
        return ColourInfo.from_ffmpeg(values[0], values[1], values[2], values[3], 0)

    try:
        info = make(fields)
    except UnknownFormatError:
        for i, value in enumerate(fields):
            probe = list(unspecified)
            probe[i] = value
            try:
                make(probe)
            except UnknownFormatError:
                fields[i] = unspecified[i]
        info = make(fields)
    return info.resolved(pixel_format, width, height)


def frame_size_bytes(frame: av.VideoFrame) -> int:
    """Bytes the frame's planes occupy (pitch times rows, summed over planes)."""
    total = 0
    for plane in frame.planes:
        total += abs(plane.line_size) * plane.height
    return total


def cpu_planes_of(frame: av.VideoFrame, pixel_format: PixelFormat) -> CpuPlaneSet:
    """The frame's planes in host memory as a CpuPlaneSet over PyAV's own buffers, without copies."""
    layout = pixel_format.plane_layout(frame.width, frame.height)
    planes = []
    for info, plane in zip(layout.planes, frame.planes):
        planes.append(
            CpuPlane(
                data=plane,
                bytes_per_row=plane.line_size,
                width_bytes=info.width * info.format.bytes_per_texel,
                height=info.height,
                keep_alive=frame,
            )
        )
    return CpuPlaneSet(planes=tuple(planes), keep_alive=frame)


def cuda_planes_of(
    frame: av.VideoFrame, pixel_format: PixelFormat, device_ordinal: int
) -> tuple[CudaPtr2D, ...]:
    """The planes of a CUDA frame as pitched device pointers, the frame kept alive by each."""
    layout = pixel_format.plane_layout(frame.width, frame.height)
    return tuple(
        CudaPtr2D(
            device_ptr=plane.buffer_ptr,
            pitch_bytes=plane.line_size,
            width_bytes=info.width * info.format.bytes_per_texel,
            height=info.height,
            device_ordinal=device_ordinal,
            keep_alive=frame,
        )
        for info, plane in zip(layout.planes, frame.planes)
    )


def _fraction_or_none(value: Any) -> fractions.Fraction | None:
    if value is None:
        return None
    try:
        result = fractions.Fraction(value)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return result if result > 0 else None


def stream_language(metadata: Any) -> str | None:
    """A stream's ISO 639 language tag (``eng``); None when it is untagged (missing, empty, ``und``)."""
    language = str(metadata.get("language", "") or "").strip()
    return None if language in ("", "und") else language


def audio_tracks(container: av.container.InputContainer) -> tuple[AudioTrack, ...]:
    """The container's audio streams, from their parameters."""
    tracks = []
    for stream in container.streams.audio:
        cc = stream.codec_context
        tracks.append(
            AudioTrack(
                index=stream.index,
                codec=(
                    codec_name(cc) if cc is not None else str(getattr(stream, "codec_tag", "") or "unknown")
                ),
                sample_rate=int(getattr(cc, "sample_rate", 0) or 0),
                channels=int(getattr(cc, "channels", 0) or 0),
                language=stream_language(stream.metadata),
            )
        )
    return tuple(tracks)


_AVFMT_NOTIMESTAMPS = 0x80
"""FFmpeg's flag of a format whose packets carry no timestamps (raw elementary streams)."""


def average_rate(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> Any:
    """The stream's average frame rate; for a raw elementary stream (.h264, .hevc: a format without
    timestamps) the bitstream's own, by which its frames are timed, where the demuxer's is its default
    (25: a 30 fps .h264 was said to be 25 fps while its frames came 1/30 s apart)."""
    rate = stream.average_rate
    own = stream.codec_context.framerate
    if container.format.flags & _AVFMT_NOTIMESTAMPS and own:
        return own
    return rate


def stream_info(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> StreamInfo:
    """Describe a video stream from its parameters (before any decoding: the session adds what its
    first frame says, :func:`with_first_frame`)."""
    cc = stream.codec_context
    time_base = stream.time_base if stream.time_base is not None else fractions.Fraction(1, 1_000_000)
    duration = stream.duration
    if duration is None:
        duration = _tagged_duration(stream.metadata, time_base)  # Matroska's per-track DURATION tag
        if duration is not None and stream.start_time and 0 < stream.start_time < duration:
            # FFmpeg's Matroska muxer tags where a track ends (from the file's 0), not how long it lasts: a
            # video from 0.541 s tagged 4.541 s lasts 4 s (it was said 'ends before the duration its
            # container announces', and its frames counted 13 too many).
            duration -= stream.start_time
    from_container = False
    if duration is None and container.duration is not None:
        duration, from_container = int(container.duration / 1_000_000 / time_base), True
    pix = None
    try:
        pix = cc.format.name if cc.format is not None else None
    except Exception:
        pix = None
    return StreamInfo(
        index=stream.index,
        codec_name=codec_name(cc),
        width=cc.width,
        height=cc.height,
        ffmpeg_pixel_format=pix,
        frame_count=stream.frames or None,
        average_rate=_fraction_or_none(average_rate(container, stream)),
        time_base=fractions.Fraction(time_base),
        duration=duration,
        start_time=stream.start_time,
        rotation=stream_rotation(stream),
        has_audio=len(container.streams.audio) > 0,
        coded_width=int(cc.coded_width or 0),
        coded_height=int(cc.coded_height or 0),
        audio_tracks=audio_tracks(container),
        streams=input_streams(container),
        discontinuous_timestamps=bool(container.format.flags & _TS_DISCONT),
        sample_aspect_ratio=stream_pixel_shape(stream),
        duration_is_container=from_container,
        attached_picture=bool(int(stream.disposition) & int(av.stream.Disposition.attached_pic)),
    )


def ends_early(info: StreamInfo, reached_end: int | None) -> tuple[float, float] | None:
    """Where a stream read to its end stopped well before the duration its container announces for it
    (a truncated file): (seconds reached, seconds announced), counted from the stream's start; None where
    it reached its duration, or where the container announces none of the stream's own.

    ``reached_end`` is the latest end (pts + duration, in the stream's time base) of its frames or
    packets; None: none came. The duration of a container of several streams is its longest stream's:
    audio that runs on after the video, a late subtitle, are no truncation of this stream (Matroska
    without per-track DURATION tags), and are not taken for one.
    """
    if info.duration is None or info.duration <= 0:
        return None
    if info.duration_is_container and len(info.streams) > 1:
        return None
    start = info.start_time or 0
    frame_ticks = 0.0
    if info.average_rate:
        frame_ticks = float(1 / (info.average_rate * info.time_base))
    tolerance = max(2.5 * frame_ticks, 0.02 * info.duration)
    reached = (reached_end - start) if reached_end is not None else 0
    if info.duration - reached <= tolerance:
        return None
    return float(reached * info.time_base), float(info.duration * info.time_base)


_DURATION_TAG = re.compile(r"^(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$")


def _tagged_duration(metadata: Any, time_base: fractions.Fraction) -> int | None:
    """A stream's ``DURATION`` tag (``00:01:02.500000000``, which FFmpeg's and mkvmerge's Matroska
    muxers write per track) in ``time_base`` units; None when it has none that reads."""
    text = next((str(v) for k, v in dict(metadata or {}).items() if str(k).upper() == "DURATION"), None)
    match = _DURATION_TAG.match(text.strip()) if text else None
    if match is None:
        return None
    hours, minutes, seconds = int(match.group(1)), int(match.group(2)), fractions.Fraction(match.group(3))
    total = hours * 3600 + minutes * 60 + seconds
    return int(total / time_base) if total > 0 else None


def codec_name(cc: Any) -> str:
    """The codec's own name (``av1``, ``mp3``), as ffprobe says it, not its decoder's (``libdav1d``,
    ``mp3float``)."""
    codec = getattr(cc, "codec", None)
    canonical = getattr(codec, "canonical_name", None)
    return str(canonical or cc.name)


def subtitle_codec_name(cc: Any) -> str:
    """A subtitle stream's format as its decoder names it (``srt``, ``mov_text``, ``webvtt``), but ASS
    as ``ass``: FFmpeg decodes SSA and ASS with one decoder called ``ssa``, and ffprobe, players and the
    files themselves ('ScriptType: v4.00+') call ASS ``ass``."""
    name = str(cc.name)
    canonical = getattr(getattr(cc, "codec", None), "canonical_name", None)
    return "ass" if name == "ssa" and canonical == "ass" else name


def stream_pixel_shape(stream: Any) -> fractions.Fraction | None:
    """A video stream's pixel shape as FFmpeg's ``av_guess_sample_aspect_ratio`` takes it (and ffprobe,
    the ffmpeg command and players): the container's where it gives one (Matroska's display size, MP4's
    pasp), else the bitstream's. The bitstream's alone made a remux given ``-aspect 16:9`` over square
    coded pixels play and transcode square, where ffmpeg keeps 16:9."""
    container_shape = getattr(stream, "sample_aspect_ratio", None)
    if container_shape:
        return pixel_shape(container_shape)
    return pixel_shape(getattr(stream.codec_context, "sample_aspect_ratio", None))


def pixel_shape(ratio: Any) -> fractions.Fraction | None:
    """A sample aspect ratio that says something: positive and not square."""
    if not ratio:
        return None
    shape = fractions.Fraction(ratio)
    return shape if shape > 0 and shape != 1 else None


def with_first_frame(
    info: StreamInfo,
    frame: av.VideoFrame,
    rotation: Rotation,
    colour: ColourInfo | None,
    mirrored: bool = False,
) -> StreamInfo:
    """``info`` with what the stream's first decoded frame says: its display matrix (PyAV exposes no
    stream side data, and FFmpeg hands the stream's matrix to every frame), coded size, colour and HDR."""
    return replace(
        info,
        rotation=rotation,
        mirrored=mirrored,
        coded_width=max(info.coded_width, frame.width),
        coded_height=max(info.coded_height, frame.height),
        colour=colour,
        hdr=hdr_metadata_of(frame),
    )


def probe_options(max_pixels: int | None) -> dict[str, str]:
    """``av.open`` options that keep the decoders FFmpeg runs while probing the streams
    (``avformat_find_stream_info``) under ``max_pixels`` (libavcodec's ``max_pixels``).

    Probing decodes a first picture of formats that do not say everything in their headers (raw H.264
    and HEVC, MP4 and Matroska too): a 4 KB stream whose SPS claims 8192x8192 peaked at 344 MB while
    being opened, before :func:`check_picture_size` could look at it, and at 56 MB with these. The
    stream's claimed size still reaches the codec parameters (from the parameter sets), so the refusal
    names it. Formats whose streams appear only while probing (MPEG-TS) get none: FFmpeg takes options
    for the streams it knows before.
    """
    return {} if max_pixels is None else {"max_pixels": str(max_pixels)}


def check_picture_size(width: int, height: int, max_pixels: int | None, where: str) -> None:
    """Refuse a picture of more than ``max_pixels`` pixels before its frames are allocated.

    Raises:
        OutOfMemoryError: ``width`` x ``height`` is over the limit (the message names both, and the way out).
    """
    if max_pixels is None or width * height <= max_pixels:
        return
    limit = named("max_pixels")
    raise OutOfMemoryError(
        f"{where} holds {width}x{height} pictures, over {limit} {max_pixels} ({max_pixels / 1e6:.3g} MP): "
        f"raise {limit} if they are meant"
    )


def within_pixel_limit(
    frames: Iterator[av.VideoFrame], max_pixels: int | None, where: str
) -> Iterator[av.VideoFrame]:
    """``frames``, refusing (:func:`check_picture_size`) the first one when it is over the limit
    (a stream whose parameters did not say its size at open)."""
    checked = max_pixels is None
    for frame in frames:
        if not checked:
            check_picture_size(frame.width, frame.height, max_pixels, where)
            checked = True
        yield frame


def without_truncated_tail(
    packets: Iterator[av.Packet[Any]], on_dropped: Callable[[], None]
) -> Iterator[av.Packet[Any]]:
    """``packets``, less a last one the demuxer flagged corrupt (read short at the end of a cut file).

    Such a packet cannot decode to a whole picture, and sent to a frame-threaded decoder its error
    comes back in the middle of the drain, where PyAV stops receiving: the frames decoded before it
    that the decoder still holds were lost (an MP4 cut at 60 % gave 9 of its 11 frames). Skipped (and
    counted by ``on_dropped``), they all come out, as with FFmpeg.
    """
    held: av.Packet[Any] | None = None
    while True:
        try:
            packet = next(packets)
        except StopIteration:
            break
        except av.error.FFmpegError:
            if held is not None:
                if held.is_corrupt:
                    on_dropped()
                else:
                    yield held
            raise
        if not packet.size:  # the flush packet: what is held was the last one
            if held is not None:
                if held.is_corrupt:
                    on_dropped()
                else:
                    yield held
                held = None
            yield packet
            continue
        if held is not None:
            yield held
        held = packet
    if held is not None:
        if held.is_corrupt:
            on_dropped()
        else:
            yield held


def stream_packets(
    container: av.container.InputContainer, stream: av.video.stream.VideoStream
) -> Iterator[av.Packet[Any]]:
    """The stream's packets in decode order, as an index counts them: not the demuxer's flush packet,
    not the samples an edit list cuts (the decoder drops them); a read error ends them (a damaged
    tail: what came before still holds)."""
    packets = container.demux(stream)
    while True:
        try:
            packet = next(packets)
        except StopIteration:
            return
        except av.error.FFmpegError:
            return
        if packet.size == 0 or packet.is_discard:
            continue
        yield packet
