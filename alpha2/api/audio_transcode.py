"""``alpha2 transcode`` of sound alone: an input with no video (``song.flac`` to ``song.mp3``), or any
input into an audio container (a film's audio to ``.m4a``), said as a transcode is said.

The output's extension picks the container and its codec (:data:`~alpha2.ffmpeg_bridge.containers.
AUDIO_CONTAINERS`: MP3, AAC in M4A / MP4 / MOV / Matroska, FLAC, Opus in Ogg / WebM, WAV 16-bit or
24-bit as the input); ``--codec`` names another encoder, ``--codec copy`` copies the packets where the
container holds them, ``--bitrate`` sets a lossy encoder's rate. FFmpeg's resampler converts the format,
rate and channels the encoder takes (said where the rate or the channels change); ``--from`` / ``--to`` /
``--duration`` cut to the sample; ``--audio-track`` chooses (a container of one audio stream takes the
first, the others said dropped); tags, chapters and cover art go over where the container holds them.
What shapes pictures (``--size``, ``--crf``, ``--gpu`` ...) is refused, naming the option. The output
appears under its name only when complete (:func:`~alpha2.api.atomic.atomic_path`).
"""

from __future__ import annotations

import dataclasses
import os
import time

from alpha2.api import pipeline
from alpha2.api.atomic import atomic_path
from alpha2.api.transcode_plan import TranscodeOptions, choose_streams
from alpha2.api.transcode_report import TranscodeStats
from alpha2.ffmpeg_bridge.audio_transcode import audio_encoder, transcode_audio
from alpha2.ffmpeg_bridge.containers import AUDIO_CONTAINERS, OUTPUT_CONTAINERS
from alpha2.ffmpeg_bridge.errors import NoVideoStreamError, OutputFormatError
from alpha2.ffmpeg_bridge.side_streams import (
    DroppedStream,
    InputStream,
    StreamKind,
    container_duration_seconds,
    describe_holdings,
)
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.option_names import named as _named

__all__ = ["audio_muxer", "check_sound_options", "is_audio_output", "moving_video", "transcode_audio_only"]

PRIMED_CODECS = frozenset({"mp3", "mp2", "aac", "opus", "vorbis", "ac3", "eac3"})
"""Lossy audio codecs whose streams start a little after 0 by their encoder's priming (FFmpeg's start
of an MP3 made by LAME: 0.023 s at 48 kHz), which the decoder skips."""

PRIMING_SECONDS = 0.1
"""The longest start taken as priming: a later one is a late start, said where it is shifted to 0."""

ONE_STREAM_MUXERS = frozenset({"mp3", "flac", "wav", "ogg", "opus", "ipod"})
"""Audio containers alpha2 writes one audio stream into (players play the first of several, if any)."""


def is_audio_output(output: str | os.PathLike[str]) -> bool:
    """Whether ``output``'s extension names a container of sound alone (``.mp3``, ``.m4a`` ...)."""
    return os.path.splitext(os.fspath(output))[1].lower() in AUDIO_CONTAINERS


def audio_muxer(output: str) -> str:
    """The muxer of an audio-only output: its audio container's, else its video container's."""
    ext = os.path.splitext(output)[1].lower()
    muxer = AUDIO_CONTAINERS.get(ext) or OUTPUT_CONTAINERS.get(ext)
    if muxer is None or muxer == "gif":
        known = ", ".join([*AUDIO_CONTAINERS, *(e for e in OUTPUT_CONTAINERS if e != ".gif")])
        raise OutputFormatError(
            f"cannot write sound into {os.path.basename(output)!r}: alpha2 writes {known}"
        )
    return muxer


def moving_video(streams: tuple[InputStream, ...]) -> bool:
    """Whether ``streams`` hold a video that is no cover art (a picture attached to the file)."""
    return any(s.kind is StreamKind.VIDEO and not s.attached_picture for s in streams)


class _TimedProgress:
    """The bridge's reports (seconds done, seconds in all, frames) as a Progress counted in time: the
    display starts at the first, which knows the length."""

    def __init__(self, progress: pipeline.Progress) -> None:
        self._progress = progress
        self._started = False
        self._done_seconds = 0.0

    def update(self, done_seconds: float, total_seconds: float | None, frames: int) -> None:
        if not self._started:
            self._progress.start_seconds(total_seconds)
            self._started = True
        self._done_seconds = done_seconds
        self._progress.update_seconds(done_seconds, frames)

    def end(self, frames: int, written_seconds: float | None) -> None:
        """Everything is written, ``written_seconds`` long (None: as the bridge last said): the line
        ends at the output's length, not at the last step's mark or the header's estimate."""
        if not self._started:
            self._progress.start_seconds(None)
            self._started = True
        done = self._done_seconds if written_seconds is None else written_seconds
        self._progress.update_seconds(done, frames)


def check_sound_options(options: TranscodeOptions, why: str) -> None:
    """Refuse what shapes pictures, and ``--no-audio``, naming the option; ``why`` says why the output
    is sound alone (``'song.flac' to an audio file``, ``--container flac``).

    Raises:
        InvalidInputError: an option of the video's, or ``--no-audio``.
    """
    asked = options.picture_options + [_named("frames")] * (options.frames is not None)
    if asked:
        cut = " / ".join(_named(name) for name in ("from_seconds", "to_seconds", "duration_seconds"))
        raise InvalidInputError(
            f"{', '.join(asked)} shape{'s' if len(asked) == 1 else ''} the video, and this output is "
            f"sound alone ({why}); leave {'it' if len(asked) == 1 else 'them'} out "
            f"({_named('bitrate')} sets the audio's rate, {cut} cut it)"
        )
    if not options.audio:
        no_audio = _named("audio=False")
        raise InvalidInputError(
            f"{no_audio} leaves nothing to write: the output is sound alone ({why}); leave it out"
        )


def transcode_audio_only(
    source: str,
    output: str,
    options: TranscodeOptions,
    streams: tuple[InputStream, ...],
    progress: pipeline.Progress,
) -> TranscodeStats:
    """Write ``source``'s audio (its ``streams``, as probed) into ``output``, written whole or not at
    all, said as a transcode.

    Raises:
        InvalidInputError: an option that shapes pictures, no audio in the input, a cut past its end,
            a copy the container cannot hold.
        StreamChoiceError: an ``--audio-track`` word that matches none of its audio streams.
        UnsupportedCodecError: ``--codec`` names no audio encoder.
        alpha2.gpu.Error subclasses: the input cannot be read, the output cannot be written.
    """
    from alpha2.api.remux import is_copy
    from alpha2.api.transcoder import input_tracks

    audio = [s for s in streams if s.kind is StreamKind.AUDIO]
    if not audio:
        what = describe_holdings(streams) if streams else "no streams"
        video = any(s.kind is StreamKind.VIDEO and not s.attached_picture for s in streams)
        # A video without sound into a sound-alone output: 'no video or audio' was said of it.
        lacks = (
            f"no audio for the {os.path.splitext(output)[1].lower()} output (sound alone); it holds"
            if video
            else "no video or audio to transcode:"
        )
        raise NoVideoStreamError(
            f"{source!r} holds {lacks} {what}"
            + (
                "; cover art is one still picture, not a video"
                if any(s.attached_picture for s in streams)
                else ""
            )
        )
    # After the check above: a file of subtitles alone, given --size, was said to be sound alone.
    alone = "to an audio file" if is_audio_output(output) else "holds no video"
    check_sound_options(options, f"{source!r} {alone}")
    muxer = audio_muxer(output)
    copy = is_copy(options)
    codec = None if copy else audio_encoder(muxer, options.codec)
    choice = choose_streams(input_tracks(source), options, repr(source))
    keep: list[int] = []
    dropped: list[DroppedStream] = []
    held = f"the {os.path.splitext(output)[1].lower()} output is sound alone"
    for stream in streams:
        if stream.kind is StreamKind.AUDIO:
            why = choice.left_out(stream.index)
            if why is None:
                keep.append(stream.index)
            else:
                dropped.append(DroppedStream(stream.index, stream.kind, stream.codec, why))
        elif stream.attached_picture:
            keep.append(stream.index)  # cover art: the copier keeps it where the container holds it
        else:
            dropped.append(DroppedStream(stream.index, stream.kind, stream.codec, held))
    keep = choice.arrange(keep)  # in the order asked (--audio-track fra,eng: fra first)
    if muxer in ONE_STREAM_MUXERS:
        by_index = {s.index: s for s in streams if s.kind is StreamKind.AUDIO}
        # The first asked is kept (the first in the input where none was asked).
        for extra in [by_index[i] for i in keep if i in by_index][1:]:
            why = f"the {muxer} container holds one audio stream (--audio-track chooses another)"
            dropped.append(DroppedStream(extra.index, extra.kind, extra.codec, why))
            keep.remove(extra.index)
    stats = TranscodeStats(source, output)
    stats.stream_choice = choice if (options.audio_tracks is not None) else None
    started = time.perf_counter()
    to = options.to_seconds
    if options.duration_seconds is not None:
        to = options.from_seconds + options.duration_seconds
    shown = _TimedProgress(progress)
    ok = False
    try:
        with atomic_path(output) as tmp:
            report = transcode_audio(
                source,
                tmp,
                muxer,
                keep,
                codec=codec,
                bit_rate=options.bitrate,
                from_seconds=options.from_seconds,
                to_seconds=to,
                progress=shown.update,
                default_first=tuple(kind.value for kind in choice.order),
            )
            written_seconds = container_duration_seconds(tmp)
            shown.end(report.frames_encoded + report.packets_copied, written_seconds)
        ok = True
    finally:
        progress.close(completed=ok)
    stats.seconds = time.perf_counter() - started
    stats.stages.add("encode" if codec else "copy", stats.seconds)
    kept_audio = [s for s in report.kept if s.kind is StreamKind.AUDIO]
    stats.kept_streams = list(report.kept)
    ext = os.path.splitext(output)[1].lower()
    # The copier names FFmpeg's muxer ('the ipod container holds no cover art'); the user wrote .m4a.
    named = [
        dataclasses.replace(d, reason=d.reason.replace(f"the {muxer} container", f"the {ext} container"))
        for d in dropped + report.dropped
    ]
    stats.dropped_streams = sorted(named, key=lambda d: d.index)
    stats.stream_notes = list(report.other_notes)
    expected = report.expected_seconds
    if expected is not None and written_seconds is not None:
        if written_seconds < expected - max(0.5, expected / 20):
            # A file cut short (a download stopped half way) ends early with no error from FFmpeg.
            stats.stream_notes.append(
                f"the audio ends at {written_seconds:.3f} s of the {expected:.3f} s the input's header "
                "says: the file is cut short or damaged"
            )
    stats.audio_packets_copied = report.packets_copied
    stats.audio_timestamps = report.timestamps
    primed = report.start_seconds < PRIMING_SECONDS and all(s.codec in PRIMED_CODECS for s in kept_audio)
    # An MP3's or AAC's start a few ms in is its encoder's priming, which the decoder skips: every
    # player starts it at 0, as ffmpeg does unsaid ('timestamps shifted by -0.023 s' on every MP3).
    stats.start_shift_seconds = 0.0 if primed else report.start_seconds
    if codec is None:
        said = "copied" if len(kept_audio) == 1 else f"{len(kept_audio)} streams copied"
        if report.audio_note:
            said = report.audio_note
    else:
        said = report.audio_note or f"encoded to {codec}"
        if len(kept_audio) > 1:
            said = f"{len(kept_audio)} streams: {said.removesuffix(f' ({len(kept_audio)} streams)')}"
    videos = [s for s in streams if s.kind is StreamKind.VIDEO and not s.attached_picture]
    stats.encoder = {
        "name": codec or "copy",
        "codec": codec or "copy",
        "audio_only": True,
        "bitrate": options.bitrate if codec else None,
        "video": f"dropped: {held}" if videos else "none in the input",
        "audio": said,
    }
    if options.from_seconds > 0 or to is not None:
        length = container_duration_seconds(source)
        shown_to = None if to is None or (length is not None and to >= length - 1e-6) else to
        stats.cut = {
            "from_seconds": options.from_seconds,
            "asked_from_seconds": options.from_seconds,
            "to_seconds": shown_to,
            "frames": None,
            "streams_trimmed": codec is not None,
            "key_frame": False,
        }
    stats.output_bytes = os.path.getsize(output)
    stats.output_seconds = written_seconds
    return stats
