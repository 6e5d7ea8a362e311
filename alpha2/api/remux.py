"""``alpha2 transcode IN OUT --codec copy``: the streams copied into the output's container, nothing
decoded or encoded (``ffmpeg -c copy``), said as a transcode is said.

What a copy cannot do is refused before anything is read: a size, a quality, a preset, a colour, a
depth, tone mapping, GPU processing, segments, and ``--frames``. ``--from`` / ``--to`` / ``--duration``
cut it as ``ffmpeg -ss ... -c copy`` does: from the key frame at or before ``--from`` (a copy cannot start
between key frames; said), every stream's packets whole.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from alpha2.api import pipeline
from alpha2.api.atomic import atomic_path
from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.api.transcode_report import TranscodeStats
from alpha2.ffmpeg_bridge.encode import output_container
from alpha2.ffmpeg_bridge.remux import remux
from alpha2.ffmpeg_bridge.side_streams import StreamKind, container_duration_seconds
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.option_names import named as _named

__all__ = ["COPY", "check_copy_options", "is_copy", "remux_transcode"]

COPY = "copy"
"""The codec name that asks for a copy, as ``ffmpeg -c copy`` does."""


PAST_TO_REASON = (
    "a copy ends by decode order, as ffmpeg's stream copy does: frames shown before the end may refer "
    "to these"
)
"""Why a copy holds video frames at or past ``--to`` (``cut["past_to"]["reason"]``)."""


def is_copy(options: TranscodeOptions) -> bool:
    """Whether ``options`` ask for the streams to be copied (``codec='copy'``)."""
    return isinstance(options.codec, str) and options.codec.strip().lower() == COPY


def check_copy_options(options: TranscodeOptions) -> None:
    """Refuse what a copy cannot do, naming the option.

    Raises:
        InvalidInputError: an option that needs the pictures decoded, or a cut.
    """
    asked = options.picture_options
    if options.bitrate is not None:
        asked.insert(2, _named("bitrate"))  # (after size and crf, as the help lists them)
    copy = f"{_named('codec')} copy"
    if asked:
        raise InvalidInputError(
            f"{copy} copies the pictures as they are: {', '.join(asked)} would need them decoded "
            f"and encoded again; leave {copy} out"
        )
    if options.frames is not None:
        cut = f"{_named('to_seconds')} or {_named('duration_seconds')}"
        raise InvalidInputError(
            f"{copy} counts no frames (it decodes none): cut with {cut}, or leave {copy} out"
        )


def remux_transcode(
    source: str, output: str, options: TranscodeOptions, progress: pipeline.Progress
) -> TranscodeStats:
    """Copy ``source``'s streams into ``output`` (written whole or not at all), said as a transcode.

    Raises:
        InvalidInputError: an option a copy cannot take, no video, a video the container cannot hold.
        alpha2.gpu.Error subclasses: the input cannot be read, the output cannot be written.
    """
    check_copy_options(options)
    muxer = output_container(output)
    stats = TranscodeStats(source, output)
    started = time.perf_counter()
    update: Callable[[int], object] = progress.update
    progress.start(None)
    ok = False
    try:
        to = options.to_seconds
        if options.duration_seconds is not None:
            to = options.from_seconds + options.duration_seconds
        with atomic_path(output) as tmp:
            report = remux(
                source,
                tmp,
                muxer,
                audio=options.audio,
                progress=update,
                from_seconds=options.from_seconds,
                to_seconds=to,
            )
        ok = True
    finally:
        progress.close(completed=ok)
    stats.seconds = time.perf_counter() - started
    stats.stages.add("copy", stats.seconds)
    stats.frames = stats.packets_out = report.video_packets
    stats.audio_packets_copied = report.audio_packets
    stats.audio_timestamps = report.audio_timestamps
    # Said as a transcode says them (a copy moved a backward cluster later, saying nothing: helper 91).
    stats.timestamps = report.video_timestamps
    video = report.video
    shown = f"{video.codec}, {video.width}x{video.height}" if video.width else video.codec
    stats.encoder = {"name": COPY, "codec": video.codec, "video": f"copied ({shown})"}
    stats.kept_streams = [s for s in report.kept if s.index != video.index]
    stats.dropped_streams = list(report.dropped)
    stats.stream_notes = list(report.stream_notes)
    if report.ends_early is not None:  # said as a transcode's decoder says it
        stats.decode = {"truncated": True}
    # The input's own start (a cut's start is said as the part's, not as a shift).
    stats.start_shift_seconds = report.start_seconds - (report.cut_from or 0.0)
    audio = [s for s in stats.kept_streams if s.kind is StreamKind.AUDIO]
    lost = [d for d in report.dropped if d.kind is StreamKind.AUDIO]
    said = "none in the input"
    if not options.audio:
        said = "dropped (--no-audio)"
    elif audio:
        said = "copied" if len(audio) == 1 else f"{len(audio)} streams copied"
        if report.audio_note:
            said = report.audio_note
        if lost:
            said += f"; {len(lost)} dropped"
    elif lost:
        said = "dropped: " + lost[0].reason
    stats.encoder["audio"] = said
    if report.cut_from is not None:
        length = container_duration_seconds(source)
        if to is not None and length is not None and to >= length - 1e-6:
            to = None  # said 'to the end of the input', as a transcode says it (not 'to 1:42.000' of 4 s)
        stats.cut = {
            "from_seconds": round(report.cut_from, 6),
            "asked_from_seconds": options.from_seconds,
            "to_seconds": to,
            "frames": None,
            "streams_trimmed": False,
            "key_frame": True,  # a copy starts at the key frame at or before --from
            "past_to": None,
        }
        if report.past_to is not None:
            # Kept as ffmpeg's stream copy keeps them (the copy ends by decode time), said: they showed
            # past --to, after a pause, with nothing saying so (an outside pass, helper 127).
            count, last, gap = report.past_to
            stats.cut["past_to"] = {
                "frames": count,
                "last_seconds": round(last, 6),
                "gap": gap,
                "reason": PAST_TO_REASON,
            }
    stats.output_bytes = os.path.getsize(output)
    stats.output_seconds = container_duration_seconds(output)
    return stats
