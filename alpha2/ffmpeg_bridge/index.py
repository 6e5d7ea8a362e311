"""Where a video stream's key frames are: the places a decoder can start, read by demuxing alone.

Segment-parallel decoding splits a file at key frames; :func:`keyframe_index` finds them by reading the
video stream's packets (no decoding: a 10-minute 1080p file takes well under a second from the page
cache), since PyAV does not expose the container's own index. Only packets flagged as key frames with
a presentation timestamp count; a stream with none (or whose key frames carry no timestamps) has one
segment.
"""

from __future__ import annotations

import fractions
from dataclasses import dataclass

import av

from alpha2.ffmpeg_bridge.channel_layouts import open_input
from alpha2.ffmpeg_bridge.decode import MediaSource, _display_source
from alpha2.ffmpeg_bridge.errors import NoVideoStreamError, from_ffmpeg
from alpha2.ffmpeg_bridge.media import DEFAULT_MAX_PIXELS, probe_options, stream_packets
from alpha2.gpu.errors import InvalidInputError

__all__ = ["KeyframeIndex", "keyframe_index"]


@dataclass(frozen=True)
class KeyframeIndex:
    """The key frames of one video stream, in presentation order, with the packets between them."""

    time_base: fractions.Fraction
    """Seconds per timestamp unit."""
    start_time: int | None
    """The stream's first timestamp (times given in seconds count from it), where known."""
    keyframes: tuple[int, ...]
    """Presentation timestamps of the key frames, ascending and distinct."""
    packets_from: tuple[int, ...]
    """For each key frame, the number of video packets before it in the file (decode order)."""
    packets: int
    """Video packets in the stream."""

    def __post_init__(self) -> None:
        if len(self.keyframes) != len(self.packets_from):
            raise InvalidInputError("keyframes and packets_from must have one entry per key frame")
        if any(b <= a for a, b in zip(self.keyframes, self.keyframes[1:])):
            raise InvalidInputError("keyframes must be ascending and distinct")

    def seconds(self, pts: int) -> float:
        """``pts`` in seconds from the stream's start (what a session's ``seek`` takes)."""
        return float((pts - (self.start_time or 0)) * self.time_base)


def keyframe_index(source: MediaSource, stream_index: int | None = None) -> KeyframeIndex:
    """Read the video stream's packets and note its key frames.

    Args:
        source: A path or a seekable binary file object (rewound afterwards).
        stream_index: Which video stream (among the container's video streams); None: the first.

    Raises:
        MediaNotFoundError, MediaFormatError: the file cannot be opened or read.
        NoVideoStreamError: no such video stream.
    """
    try:
        # Only packets are read; the pictures FFmpeg decodes while probing stay under the default limit.
        container = open_input(
            source, mode="r", metadata_errors="replace", options=probe_options(DEFAULT_MAX_PIXELS)
        )
    except av.error.FFmpegError as exc:
        raise from_ffmpeg(exc, f"indexing {_display_source(source)}") from exc
    try:
        videos = list(container.streams.video)
        if not videos or (stream_index is not None and not 0 <= stream_index < len(videos)):
            raise NoVideoStreamError(f"{_display_source(source)} has no video stream {stream_index or 0}")
        stream = videos[stream_index or 0]
        time_base = fractions.Fraction(stream.time_base or fractions.Fraction(1, 1_000_000))
        points: list[tuple[int, int]] = []
        packets = 0
        for packet in stream_packets(container, stream):  # as the session's frame index counts them
            if packet.is_keyframe and packet.pts is not None:
                points.append((int(packet.pts), packets))
            packets += 1
        start = stream.start_time
    finally:
        container.close()
        rewind = getattr(source, "seek", None)
        if callable(rewind):
            rewind(0)
    # Distinct and ascending: a repeated or out-of-order key frame timestamp (broken muxing) cannot
    # bound a segment.
    keyframes: list[int] = []
    packets_from: list[int] = []
    for pts, before in points:
        if not keyframes or pts > keyframes[-1]:
            keyframes.append(pts)
            packets_from.append(before)
    return KeyframeIndex(
        time_base=time_base,
        start_time=None if start is None else int(start),
        keyframes=tuple(keyframes),
        packets_from=tuple(packets_from),
        packets=packets,
    )
