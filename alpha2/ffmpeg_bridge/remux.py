"""A file's streams copied into another container as they are (``alpha2 transcode --codec copy``).

Nothing is decoded: the video's packets, and the audio, subtitles, cover art and attachments the output's
container holds, go into it with their timestamps moved so that the output starts at 0, as
:class:`~alpha2.ffmpeg_bridge.side_streams.StreamCopier` copies a transcode's other streams (audio the
container cannot hold is encoded again there, and said). A stream the container cannot hold is dropped
with the reason; a file without video is not taken here: its audio is copied by
:mod:`alpha2.ffmpeg_bridge.audio_transcode`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import av
import av.container
import av.error
import av.stream

from alpha2.ffmpeg_bridge.channel_layouts import open_input
from alpha2.ffmpeg_bridge.encode import ROTATION_CONTAINERS
from alpha2.ffmpeg_bridge.errors import EncoderError, from_ffmpeg, from_ffmpeg_open
from alpha2.ffmpeg_bridge.media import ends_early, frame_orientation, stream_info, stream_rotation
from alpha2.ffmpeg_bridge.side_streams import (
    CHAPTER_MUXERS,
    TIMECODE_MUXERS,
    DroppedStream,
    InputStream,
    StreamCopier,
    StreamKind,
    input_streams,
)
from alpha2.ffmpeg_bridge.timestamps import TimestampAdjustments, jump_seconds
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Rotation
from alpha2.gpu.option_names import named

__all__ = ["RemuxReport", "remux", "written_output"]

STEP_SECONDS = 1.0
"""How much of the output is muxed between two progress reports."""


@dataclass
class RemuxReport:
    """What :func:`remux` wrote."""

    video: InputStream
    """The video stream copied (the first that is no cover art)."""
    video_packets: int = 0
    """Its packets copied (its pictures)."""
    start_seconds: float = 0.0
    """Where the input starts: the output's timestamps are moved back by it."""
    kept: list[InputStream] = field(default_factory=list)
    """The streams in the output (copied, or audio encoded again)."""
    dropped: list[DroppedStream] = field(default_factory=list)
    """The streams the output does not hold, with why."""
    audio_note: str | None = None
    """How the audio was made where it was not a plain copy (encoded again, and why)."""
    stream_notes: list[str] = field(default_factory=list)
    """What was done to the other streams otherwise than a plain copy."""
    audio_packets: int = 0
    """Audio packets copied as they were."""
    audio_timestamps: TimestampAdjustments = field(default_factory=TimestampAdjustments)
    """Copied audio packets whose times were dropped or rebased, by kind."""
    video_timestamps: TimestampAdjustments = field(default_factory=TimestampAdjustments)
    """Copied video packets whose times were rebased (repeated, backwards, reset), by kind."""
    cut_from: float | None = None
    """With a cut: where the copy starts, the key frame at or before the start asked for (seconds of
    the input, from its start)."""
    past_to: tuple[int, float, bool] | None = None
    """With ``to_seconds``: the video's pictures copied at or past it, which a copy keeps as ffmpeg's
    does (it ends by decode time: pictures shown before ``to_seconds`` may refer to them): (how many,
    the last one's time in seconds from the input's start, whether pictures shown between are missing,
    so that the picture pauses before them); None: none."""
    ends_early: tuple[float, float] | None = None
    """The input's video ends well before the duration its container announces for it (a truncated
    file): (seconds its packets reach, seconds announced), from its start, as the decoder finds it in
    a transcode; None otherwise, and with ``to_seconds`` (the copy does not read to the end)."""


_TS_DISCONT = 0x0200
"""libavformat's AVFMT_TS_DISCONT: the format's clock may jump (MPEG-TS, FLV)."""

_START_CODE_MUXERS = frozenset({"avi"})
"""Muxers that take H.264 / HEVC only in its start-code form (Annex B), with no filter of their own to
make it (MPEG-TS has one)."""


def _check_copyable(container: av.container.InputContainer, stream: av.stream.Stream, muxer: str) -> None:
    """Refuse a video a copy cannot write as the muxer takes it: untimed packets (a raw elementary
    stream), or H.264 / HEVC in its MP4 form into a start-code muxer."""
    timed = False
    for count, packet in enumerate(container.demux(stream)):
        if packet.pts is not None or packet.dts is not None:
            timed = True
            break
        if count >= 8:
            break
    if not timed:
        raise InvalidInputError(
            "the video's packets carry no timestamps (a raw elementary stream): a copy cannot time them; "
            f"leave {named('codec')} copy out (a transcode times the frames from the frame rate)"
        )
    extradata = bytes(stream.codec_context.extradata or b"")
    codec = stream.codec_context.name
    if muxer in _START_CODE_MUXERS and codec in ("h264", "hevc") and extradata[:1] == b"\x01":
        raise InvalidInputError(
            f"the {muxer} container takes {codec} in its start-code form, which this stream (in its MP4 "
            f"form) is not in a copy; write .mkv, .mp4 or .ts, or leave {named('codec')} copy out"
        )


def _rotation_lost(container: av.container.InputContainer, stream: Any, muxer: str) -> str | None:
    """What is said where the video is shown turned (its display matrix, read off its first frame) and
    ``muxer`` holds no display matrix (MPEG-TS, AVI, NUT): the copy shows it unturned. None otherwise."""
    if muxer in ROTATION_CONTAINERS:
        return None
    container.seek(0)
    for frame in container.decode(stream):
        rotation, mirrored = frame_orientation(frame, stream_rotation(stream))
        break
    else:
        return None
    if rotation is Rotation.NONE and not mirrored:
        return None
    turn = f"turned {int(rotation)} degrees clockwise" if rotation is not Rotation.NONE else "mirrored"
    return (
        f"the video is shown {turn} (its display matrix), which the {muxer} container holds no place for: "
        "the copy shows it as stored (write .mp4, .mov or .mkv to keep it)"
    )


def _first_time(container: av.container.InputContainer) -> float | None:
    """The earliest timestamp (seconds) among the first packets of ``container`` (None: none timed)."""
    times: list[float] = []
    try:
        container.seek(0)
        for count, packet in enumerate(container.demux()):
            if packet.pts is not None and packet.time_base is not None:
                times.append(float(packet.pts * packet.time_base))
            if count >= 32:
                break
        container.seek(0)
    except av.error.FFmpegError:  # a stream that cannot seek: its start is taken as 0, as before
        return None
    return min(times) if times else None


def _key_frame_at(
    container: av.container.InputContainer, stream: Any, seconds: float, source: str, start: float
) -> float:
    """The time of the video's key frame at or before ``seconds`` (its first key frame where none is
    before it). Reads the video's packets up to there (nothing decoded).

    Raises:
        InvalidInputError: ``seconds`` lies at or past the end of the video's last picture (said
            counted from ``start``, the input's start, as ``--from`` is).
    """
    container.seek(0)
    key: float | None = None
    last: float | None = None
    shown = True  # whether the last picture says how long it is shown
    for packet in container.demux(stream):
        if packet.pts is None or packet.time_base is None:
            continue
        at = float(packet.pts * packet.time_base)
        # Where its picture ends: a 1-frame clip's video ends at 0.04 s, not at 0 (where a transcode
        # takes --from 0.02 as that frame's).
        end = float((packet.pts + max(packet.duration or 0, 0)) * packet.time_base)
        if last is None or end > last:
            last, shown = end, end > at
        if packet.is_keyframe:
            if at <= seconds + 1e-6 or key is None:
                key = at
            else:
                break
    if key is None or last is None or seconds > last + 1e-6 or (shown and seconds >= last - 1e-6):
        ends = f"at {last - start:.3f} s" if last is not None else "before it"
        raise InvalidInputError(
            f"{named('from_seconds')} lies past the end of the video of {source!r} (it ends {ends})"
        )
    return key


def remux(
    source: str,
    target: str,
    muxer: str,
    *,
    audio: bool = True,
    progress: Callable[[int], object] | None = None,
    from_seconds: float = 0.0,
    to_seconds: float | None = None,
) -> RemuxReport:
    """Copy ``source``'s streams into a new ``muxer`` container at ``target`` (``audio``: its audio too).

    ``progress`` is called with the video packets copied so far, every :data:`STEP_SECONDS` of output.
    ``from_seconds`` / ``to_seconds`` (counted from the input's start) cut the copy as ``ffmpeg -ss
    ... -to ... -c copy`` does: from the key frame at or before ``from_seconds`` (the copy cannot start
    between key frames), every stream's packets whole, up to ``to_seconds``.

    Raises:
        InvalidInputError: the file has no video stream.
        MediaNotFoundError, MediaFormatError: the input cannot be opened.
        EncoderError: the output cannot be written.
    """
    try:
        with open_input(source, metadata_errors="replace") as probe:
            streams = input_streams(probe)
            start = float(probe.start_time / av.time_base) if probe.start_time else 0.0
            # MPEG-TS and FLV clocks may jump (concatenated recordings): re-timed as a transcode re-times
            # them, and as ffmpeg -c copy does; a 4 s copy of two joined TS files was 51.9 s long, frozen
            # for the 48 s between their clocks.
            jump = jump_seconds(bool(probe.format.flags & _TS_DISCONT))
            videos = [s for s in streams if s.kind is StreamKind.VIDEO and not s.attached_picture]
            if not videos:
                kinds = "streams: " + (", ".join(sorted({s.kind.value for s in streams})) or "none")
                if any(s.attached_picture for s in streams):
                    kinds = "its only picture is cover art"  # 'streams: audio, video' read as a riddle
                raise InvalidInputError(f"{source!r} has no video stream to copy ({kinds})")
            _check_copyable(probe, probe.streams[videos[0].index], muxer)
            video_info = stream_info(probe, cast(Any, probe.streams[videos[0].index]))
            if probe.start_time is None:
                # FFmpeg gives no start for a Matroska video from 5 s: --from 0.2 counted from 0 copied it
                # all, said 'from 10:00:00.000' for one from 10 h (an outside pass, helper 91).
                start = _first_time(probe) or 0.0
            turned = _rotation_lost(probe, probe.streams[videos[0].index], muxer)
            key = None
            if from_seconds > 0 or to_seconds is not None:
                video_in = probe.streams[videos[0].index]
                key = _key_frame_at(probe, video_in, start + from_seconds, source, start)
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(source)) from exc
    report = RemuxReport(video=videos[0], start_seconds=max(0.0, start))
    window: tuple[float, float | None] | None = None
    if key is not None:
        report.start_seconds, report.cut_from = key, key - start
        window = (key, None if to_seconds is None else start + to_seconds)
    if turned is not None:
        report.stream_notes.append(turned)
    indices = []
    timecode = videos[0].timecode
    for stream in streams:
        if stream.kind is StreamKind.AUDIO and not audio:
            report.dropped.append(DroppedStream(stream.index, stream.kind, stream.codec, "--no-audio"))
        elif stream.chapter_track:
            # The file's chapters, which the copier writes as the output's (said dropped as a data track
            # while the output held them), as a transcode says them.
            if muxer in CHAPTER_MUXERS:
                report.stream_notes.append(
                    f"stream {stream.index} (the chapter track): its chapters kept as the output's"
                )
            else:
                why = f"the chapter track: the {muxer} container holds no chapters"
                report.dropped.append(DroppedStream(stream.index, stream.kind, "chapters", why))
        elif stream.codec == "timecode" and timecode is not None and muxer in TIMECODE_MUXERS:
            # The muxer writes the start timecode again from the video's tag, copied with the video's
            # tags (said dropped while the output held it).
            note = f"stream {stream.index} (the timecode track): its start {timecode} kept as "
            note += TIMECODE_MUXERS[muxer]
            if report.cut_from:
                note += (
                    f", not moved by --from: the output's first frame, the input's at {report.cut_from:g} s,"
                    f" is said to be at {timecode}"
                )
            report.stream_notes.append(note)
        else:
            indices.append(stream.index)
    with written_output(target, muxer) as out:
        copier = StreamCopier(
            out, source, indices, shift_seconds=report.start_seconds, jump_seconds=jump, window=window
        )
        try:
            until = STEP_SECONDS
            while not copier.exhausted:
                copier.mux_until(until)
                until += STEP_SECONDS
                if progress is not None:
                    progress(copier.video_packets_copied)
            copier.finish()
        finally:
            copier.close()
        report.video_packets = copier.video_packets_copied
        past = copier.video_past_window
        if past is not None:
            report.past_to = (past[0], past[1] - start, past[2])
        if to_seconds is None:
            # A copy reads no frame: the video's packets say where it ends, weighed as a transcode's
            # decoder weighs its frames (a cut file was copied saying nothing; an outside pass).
            report.ends_early = ends_early(video_info, copier.read_end(report.video.index))
        report.audio_packets = copier.audio_packets_copied
        report.audio_timestamps = copier.adjustments
        report.video_timestamps = copier.video_adjustments
        report.kept = list(copier.report.kept)
        report.dropped += copier.report.dropped
        report.dropped.sort(key=lambda d: d.index)
        report.audio_note = copier.report.audio_note()
        report.stream_notes += copier.report.other_notes
        if not any(s.index == report.video.index for s in report.kept):
            why = next((d.reason for d in report.dropped if d.index == report.video.index), "not kept")
            raise InvalidInputError(f"the video cannot be copied into the {muxer} container: {why}")
    return report


@contextlib.contextmanager
def written_output(target: str, muxer: str) -> Iterator[Any]:
    """An output container of ``muxer`` at ``target`` for the block, closed (its trailer written) when the
    block ends; on an error in it, closed quietly and the error raised, FFmpeg's as an
    :class:`EncoderError` that names the file.

    Raises:
        EncoderError: FFmpeg could not open ``target``, write to it or finish it.
    """
    try:
        out = av.open(target, "w", format=muxer)
    except (av.error.FFmpegError, OSError) as exc:
        raise from_ffmpeg(exc, f"opening {target!r} to write", EncoderError) from exc
    try:
        yield out
        out.close()
    except av.error.FFmpegError as exc:
        with contextlib.suppress(Exception):
            out.close()
        raise from_ffmpeg(exc, f"writing {target!r}", EncoderError) from exc
    except BaseException:
        with contextlib.suppress(Exception):
            out.close()
        raise
