"""Encoded video segments joined into one stream, with the input's other streams copied once.

A segmented transcode encodes parts of one file at once, each into a file of its own
(:data:`SEGMENT_CONTAINER`: MP4 stores every timestamp exactly, in a time base that is a multiple of
the encoder's; it may shift them all alike, which the join undoes). :func:`join_segments` writes the
output in one mux pass: the segments' video packets in order, not decoded, each segment's timestamps
put back where its encoder had them (its first frame's pts, reported by whoever encoded it), the decode
timestamps kept increasing across a boundary, and the other streams (audio, subtitles, cover art)
copied or re-encoded by one :class:`~alpha2.ffmpeg_bridge.side_streams.StreamCopier` over the whole
output, as an :class:`~alpha2.ffmpeg_bridge.encode.EncodeSession` copies them: no gap at a boundary.

Only segments whose codec headers (H.264 SPS / PPS, HEVC VPS / SPS / PPS: the extradata) are the same
byte for byte are joined; segments that differ are refused, the decoder of the output would otherwise
read one segment with another's parameters.
"""

from __future__ import annotations

import contextlib
import fractions
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import av
import av.container
import av.error
import av.packet
import av.video.stream

from alpha2.ffmpeg_bridge.channel_layouts import open_input
from alpha2.ffmpeg_bridge.errors import EncoderError, from_ffmpeg
from alpha2.ffmpeg_bridge.side_streams import DroppedStream, InputStream, StreamCopier
from alpha2.ffmpeg_bridge.timestamps import TimestampAdjustments
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Rotation

__all__ = ["SEGMENT_CODECS", "SEGMENT_CONTAINER", "JoinReport", "JoinedSegment", "join_segments"]

SEGMENT_CONTAINER = ".mp4"
"""The extension the segments are written with: MP4 keeps every timestamp exactly (read back with its
edit list ignored), where Matroska rounds them to milliseconds and NUT may drop decode timestamps."""

SEGMENT_CODECS = frozenset({"h264", "hevc", "av1", "vp9", "mpeg4"})
"""Codecs whose segments MP4 holds (and the join takes)."""


@dataclass(frozen=True)
class JoinedSegment:
    """One encoded segment to join."""

    path: str
    """The segment's file (video only)."""
    first_pts: int
    """Its first frame's pts as its encoder had it, in the join's time base: where it goes."""


@dataclass
class JoinReport:
    """What :func:`join_segments` wrote."""

    packets: list[int] = field(default_factory=list)
    """Video packets taken from each segment."""
    first_pts: list[int] = field(default_factory=list)
    """Each segment's first (smallest) pts in the output, in the join's time base."""
    last_pts: list[int] = field(default_factory=list)
    """Each segment's last (largest) pts in the output."""
    end_pts: list[int] = field(default_factory=list)
    """Each segment's end: its last pts plus that packet's duration."""
    dts_raised: int = 0
    """Decode timestamps raised to stay after the segment before's (at a boundary)."""
    audio_packets_copied: int = 0
    """Audio packets copied as they were."""
    audio_note: str | None = None
    """How the audio was made when not a plain copy (re-encoded to be cut, and why)."""
    audio_timestamps: TimestampAdjustments = field(default_factory=TimestampAdjustments)
    """Copied audio packets whose timestamps were dropped or rebased."""
    copied_streams: tuple[InputStream, ...] = ()
    """The input's streams in the output beside the video."""
    dropped_streams: tuple[DroppedStream, ...] = ()
    """Streams asked to be copied that the output does not hold, with why."""
    stream_notes: tuple[str, ...] = ()
    """What was done to copied streams other than audio otherwise than a plain copy."""


def _open_segment(path: str) -> tuple[av.container.InputContainer, av.video.stream.VideoStream]:
    try:
        # The stored timestamps, not those the edit list would move (rounded to the movie's time scale).
        container = open_input(path, mode="r", options={"ignore_editlist": "1"})
    except av.error.FFmpegError as exc:
        raise from_ffmpeg(exc, f"opening the segment {path!r}", EncoderError) from exc
    assert isinstance(container, av.container.InputContainer)
    if not container.streams.video:
        container.close()
        raise EncoderError(f"the segment {path!r} holds no video")
    return container, container.streams.video[0]


def _headers(stream: av.video.stream.VideoStream) -> bytes:
    return bytes(stream.codec_context.extradata or b"")


def _check_headers(streams: Sequence[av.video.stream.VideoStream], paths: Sequence[str]) -> None:
    """Refuse segments whose codec headers or pictures differ from the first one's."""
    first = streams[0]
    for i, stream in enumerate(streams[1:], start=1):
        a, b = _picture(first), _picture(stream)
        if a != b:
            raise EncoderError(
                f"segment {i + 1} ({paths[i]}) is {' '.join(b)}, segment 1 {' '.join(a)}: segments of one "
                "stream must match"
            )
        if _headers(stream) != _headers(first):
            raise EncoderError(
                f"segment {i + 1} ({paths[i]}) has other codec headers (SPS / PPS, "
                f"{len(_headers(stream))} bytes) than segment 1 ({len(_headers(first))} bytes): one stream "
                "cannot carry both; transcode in one pipeline"
            )


def _picture(stream: av.video.stream.VideoStream) -> tuple[str, str, str]:
    cc = stream.codec_context
    return cc.name, f"{cc.width}x{cc.height}", cc.format.name if cc.format is not None else "?"


def _ticks(value: int, scale: fractions.Fraction) -> int:
    return round(value * scale)


class _Demuxed:
    """One segment's video packets, its first one read ahead for its encoder's reorder delay."""

    def __init__(
        self,
        container: av.container.InputContainer,
        video: av.video.stream.VideoStream,
        time_base: fractions.Fraction,
    ) -> None:
        self.scale = fractions.Fraction(video.time_base or fractions.Fraction(1, 1_000_000)) / time_base
        self._rest = (p for p in container.demux(video) if p.size)
        self._first = next(self._rest, None)
        first = self._first
        self.delay = 0
        """How far (the join's time base) its first decode time is before its first pts."""
        if first is not None and first.pts is not None and first.dts is not None:
            self.delay = max(0, _ticks(first.pts, self.scale) - _ticks(first.dts, self.scale))

    def packets(self) -> list[av.packet.Packet[Any]]:
        """Every packet with data, in decode order."""
        return ([] if self._first is None else [self._first]) + list(self._rest)


def join_segments(
    output: str,
    segments: Sequence[JoinedSegment],
    *,
    time_base: fractions.Fraction,
    container_format: str,
    display_rotation: Rotation = Rotation.NONE,
    rate: fractions.Fraction | None = None,
    copy_from: str | None = None,
    copy_streams: Sequence[int] | None = None,
    default_first: Sequence[str] = (),
    start_shift_seconds: float = 0.0,
    jump_seconds: float | None = None,
    trim_streams: bool = False,
    streams_end_seconds: float | None = None,
) -> JoinReport:
    """Write ``output`` (a path the caller makes atomic) from ``segments``, in order, and the streams of
    ``copy_from`` (as :class:`~alpha2.ffmpeg_bridge.encode.EncodeSession` copies them; the same arguments).

    Args:
        time_base: The unit of each segment's ``first_pts`` and of the output's video timestamps.
        container_format: The output's muxer (``mp4``, ``matroska``, ...).
        display_rotation: Clockwise rotation written as the stream's display matrix.
        rate: The video's frame rate, written as the stream's (Matroska's default frame duration);
            None: the segments' codec parameters say it.

    Raises:
        InvalidInputError: no segments.
        EncoderError: a segment cannot be read, its headers differ from the first's, its frames overlap
            the segment before's, or muxing failed.
    """
    if not segments:
        raise InvalidInputError("join_segments needs at least one segment")
    report = JoinReport()
    opened: list[tuple[av.container.InputContainer, av.video.stream.VideoStream]] = []
    out: av.container.OutputContainer | None = None
    copier: StreamCopier | None = None
    try:
        for segment in segments:
            opened.append(_open_segment(segment.path))
        _check_headers([s for _, s in opened], [s.path for s in segments])
        try:
            made = av.open(output, mode="w", format=container_format)
        except av.error.FFmpegError as exc:
            raise from_ffmpeg(exc, f"creating {output!r}", EncoderError) from exc
        assert isinstance(made, av.container.OutputContainer)
        out = made
        template = opened[0][1]
        stream: Any = out.add_stream_from_template(template)
        stream.time_base = time_base
        if rate:
            # Else the muxer takes the codec parameters' rate, which for H.264 is the VUI's tick of the
            # encoder's time base (12800 fps for a 1/12800 clock): a Matroska output said 1000 fps.
            stream.codec_context.framerate = rate
        if display_rotation is not Rotation.NONE:
            stream.set_display_rotation(-int(display_rotation))  # PyAV takes counter-clockwise
        if copy_from is not None:
            copier = StreamCopier(
                out,
                copy_from,
                copy_streams,
                shift_seconds=start_shift_seconds,
                jump_seconds=jump_seconds,
                trim=trim_streams,
                end_seconds=streams_end_seconds,
                default_first=default_first,
            )
        last_dts: int | None = None
        demuxers = [_Demuxed(container, video, time_base) for container, video in opened]
        # An encoder given fewer frames than its reorder delay (libx264: a segment of 1 or 2 frames)
        # starts its decode times at its pts; joined as they are, the decode times jumped at that
        # boundary, and MP4's sample durations (taken from them) said a frame 3 frames long and another
        # average rate. Such a segment's decode times are lowered to the others' delay.
        delay = max(d.delay for d in demuxers)
        for i, (demuxed, segment) in enumerate(zip(demuxers, segments, strict=True)):
            scale = demuxed.scale
            packets = demuxed.packets()
            stamped = [p.pts for p in packets if p.pts is not None]
            if not stamped:
                raise EncoderError(f"segment {i + 1} ({segment.path}) holds no timed video packets")
            shift = segment.first_pts - _ticks(min(stamped), scale)
            lowered = delay - demuxed.delay
            first = segment.first_pts
            if report.last_pts and first <= report.last_pts[-1]:
                raise EncoderError(
                    f"segment {i + 1} starts at pts {first}, not after segment {i}'s last frame "
                    f"({report.last_pts[-1]}): the segments overlap"
                )
            end = first
            for packet in packets:
                pts = None if packet.pts is None else _ticks(packet.pts, scale) + shift
                dts = None if packet.dts is None else _ticks(packet.dts, scale) + shift - lowered
                duration = _ticks(packet.duration or 0, scale)
                if dts is not None and last_dts is not None and dts <= last_dts:
                    # At a boundary the new encoder's first decode times may reach back into the segment
                    # before's (its reorder delay): raised, never past the packet's own pts.
                    dts = last_dts + 1
                    if pts is not None and dts > pts:
                        raise EncoderError(
                            f"segment {i + 1}: no decode timestamp fits between {last_dts} and pts {pts}"
                        )
                    report.dts_raised += 1
                if dts is not None:
                    last_dts = dts
                if pts is not None:
                    end = max(end, pts + duration)
                packet.stream = stream
                packet.pts, packet.dts = pts, dts
                packet.duration = duration
                packet.time_base = time_base
                if copier is not None and pts is not None:
                    copier.mux_until(float(pts * time_base))
                out.mux(packet)
            report.packets.append(len(packets))
            report.first_pts.append(first)
            report.end_pts.append(end)
            report.last_pts.append(_ticks(max(stamped), scale) + shift)
        if copier is not None:
            copier.finish()
            report.audio_packets_copied = copier.audio_packets_copied
            report.audio_note = copier.report.audio_note()
            report.audio_timestamps = copier.adjustments
            report.copied_streams = tuple(copier.report.kept)
            report.dropped_streams = tuple(copier.report.dropped)
            report.stream_notes = tuple(copier.report.other_notes)
        done, out = out, None
        done.close()
    except (av.error.FFmpegError, ValueError) as exc:
        raise from_ffmpeg(exc, f"joining the segments into {output!r}", EncoderError) from exc
    finally:
        if copier is not None:
            copier.close()
        if out is not None:
            with contextlib.suppress(Exception):
                out.close()
        for container, _ in opened:
            container.close()
    return report
