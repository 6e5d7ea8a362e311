"""Sound alone transcoded: a file's audio streams decoded, converted and encoded into a new container
(``alpha2 transcode song.flac song.mp3``, a film's audio to ``.m4a``), or copied as they are.

The work is :class:`~alpha2.ffmpeg_bridge.side_streams.StreamCopier`'s, as for the audio beside a
transcoded video: every chosen audio stream is decoded, converted to the encoder's sample format, rate
and channel layout by FFmpeg's resampler (``av.AudioResampler``; what changed is said: the rate, a
downmix), encoded, and cut to the sample at ``from_seconds`` / ``to_seconds``; the container's tags, the
streams' tags, the chapters and the cover art go over where the output's container holds them (else
they are dropped and said). With ``codec=None`` the packets are copied (``ffmpeg -c:a copy``), whole,
where the container holds the codec; a cut then starts at the packet at ``from_seconds``.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import av
import av.container
import av.error

from alpha2.ffmpeg_bridge.channel_layouts import open_input
from alpha2.ffmpeg_bridge.containers import AUDIO_CODECS
from alpha2.ffmpeg_bridge.errors import UnsupportedCodecError, from_ffmpeg_open
from alpha2.ffmpeg_bridge.remux import written_output
from alpha2.ffmpeg_bridge.side_streams import (
    AudioTarget,
    DroppedStream,
    InputStream,
    StreamCopier,
    StreamKind,
    audio_refused,
    input_streams,
    is_lossless_audio,
)
from alpha2.ffmpeg_bridge.timestamps import TimestampAdjustments
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.option_names import named

__all__ = ["AudioTranscodeReport", "audio_encoder", "transcode_audio"]

STEP_SECONDS = 1.0
"""How much of the output is muxed between two progress reports."""

_WIDE_PCM = frozenset({"pcm_s24le", "pcm_s24be", "pcm_s32le", "pcm_s32be", "pcm_f32le", "pcm_f64le"})
"""PCM sources of more than 16 bits: a WAV output keeps 24 of them."""


@dataclass
class AudioTranscodeReport:
    """What :func:`transcode_audio` wrote."""

    start_seconds: float
    """Where the input starts (its first timestamp): ``from_seconds`` counts from it."""
    encoder: str | None
    """The encoder (``libmp3lame``, ``pcm_s24le`` ...); None: the packets were copied."""
    kept: list[InputStream] = field(default_factory=list)
    """The streams in the output (audio, cover art)."""
    dropped: list[DroppedStream] = field(default_factory=list)
    """The streams asked for that the output does not hold, with why."""
    audio_note: str | None = None
    """How the audio was made (encoded, resampled, downmixed), in one line."""
    other_notes: list[str] = field(default_factory=list)
    """What was done to the rest (chapters cut, ...)."""
    frames_encoded: int = 0
    """Audio frames encoded."""
    packets_copied: int = 0
    """Audio packets copied as they were."""
    timestamps: TimestampAdjustments = field(default_factory=TimestampAdjustments)
    """Copied audio packets whose times were dropped or rebased, by kind."""
    expected_seconds: float | None = None
    """How long the output should last by the input's header (its length from ``from_seconds``, to
    ``to_seconds``); None: the input does not say."""


def audio_encoder(muxer: str, codec: str | None) -> str:
    """The encoder for ``codec`` (an encoder or codec name; None: the muxer's default audio codec,
    :data:`~alpha2.ffmpeg_bridge.containers.AUDIO_CODECS`, AAC where it names none).

    Raises:
        UnsupportedCodecError: FFmpeg has no audio encoder of that name.
    """
    name = codec.strip().lower() if codec else AUDIO_CODECS.get(muxer, "aac")
    aliases = {"mp3": "libmp3lame", "opus": "libopus", "vorbis": "libvorbis", "wav": "pcm_s16le"}
    name = aliases.get(name, name)
    try:
        found = av.codec.Codec(name, "w")
    except (av.error.FFmpegError, ValueError):
        found = None
    if found is None or found.type != "audio":
        raise UnsupportedCodecError(
            f"no audio encoder {name!r} in this FFmpeg; audio-only outputs take libmp3lame (mp3), aac, "
            f"flac, libopus (opus), alac, ac3, pcm_s16le, pcm_s24le, or the output's default (leave "
            f"{named('codec')} out)"
        )
    return name


def _wide(stream: av.audio.stream.AudioStream) -> bool:
    """Whether the source has more than 16 bits a sample (kept as 24 in a WAV)."""
    context = stream.codec_context
    if context.name in _WIDE_PCM:
        return True
    # A lossless decoder gives 24-bit samples in 32 (FLAC's s32, ALAC's s32p), 16-bit ones in 16.
    return is_lossless_audio(context.name) and context.format is not None and context.format.bytes > 2


def _start(container: av.container.InputContainer) -> float:
    if container.start_time is not None:
        return max(0.0, float(container.start_time / av.time_base))
    times: list[float] = []
    with contextlib.suppress(av.error.FFmpegError):
        for count, packet in enumerate(container.demux()):
            if packet.pts is not None and packet.time_base is not None:
                times.append(float(packet.pts * packet.time_base))
            if count >= 32:
                break
    return max(0.0, min(times)) if times else 0.0


def _copy_refusal(stream_in: av.stream.Stream, muxer: str, codec: str) -> str | None:
    """Why ``muxer`` cannot hold ``stream_in``'s packets as they are (None: it can)."""
    if audio_refused(muxer, codec):
        return f"the {muxer} container cannot hold {codec}"
    try:
        probe = av.open(io.BytesIO(), "w", format=muxer)
    except (av.error.FFmpegError, ValueError):
        return None
    with probe:
        try:
            probe.add_stream_from_template(stream_in)
            # Some muxers take the stream and refuse it at the header (Ogg and FLAC: AC-3, MP3), which
            # was 'writing stream 0 (audio ac3): Invalid argument' once the copy had begun.
            probe.start_encoding()
        except (ValueError, av.error.FFmpegError):
            return f"the {muxer} container cannot hold {codec}"
    return None


def transcode_audio(
    source: str,
    target: str,
    muxer: str,
    indices: Sequence[int],
    *,
    codec: str | None,
    bit_rate: int | None = None,
    from_seconds: float = 0.0,
    to_seconds: float | None = None,
    progress: Callable[[float, float | None, int], object] | None = None,
    default_first: Sequence[str] = (),
) -> AudioTranscodeReport:
    """Write the streams ``indices`` of ``source`` (audio, and cover art) into a new ``muxer``
    container at ``target``: the audio encoded with ``codec`` (an encoder name, see
    :func:`audio_encoder`; None: copied as it is), cut to ``from_seconds`` .. ``to_seconds`` (counted
    from the input's start).

    ``progress`` is called with the seconds of output written, the seconds it will last (None where
    the input does not say), and the audio frames encoded (packets copied) so far: once before the
    first packet, then every :data:`STEP_SECONDS` of output. ``default_first``: the kinds whose
    streams ``indices`` lists in the order a person chose them (the copier's ``default_first``).

    Raises:
        InvalidInputError: ``from_seconds`` past the end; a copy the container cannot hold; no audio
            stream left in the output.
        MediaNotFoundError, MediaFormatError: the input cannot be opened.
        EncoderError: the output cannot be written.
    """
    try:
        with open_input(source, metadata_errors="replace") as probe:
            streams = {s.index: s for s in input_streams(probe)}
            start = _start(probe)
            length = float(probe.duration / av.time_base) if probe.duration else None
            if length is not None and "matroska" in str(probe.format.name).split(","):
                # Matroska's duration counts from 0, not from a late start (a file of 2 s to 5 s
                # said 5 s: --from 3.5 went on and wrote nothing); the others' is the span.
                length = max(0.0, length - start)
            audio = [i for i in indices if streams[i].kind is StreamKind.AUDIO]
            wide = any(_wide(probe.streams[i]) for i in audio)  # type: ignore[arg-type]
            refusals = (
                {}
                if codec is not None
                else {i: _copy_refusal(probe.streams[i], muxer, streams[i].codec) for i in audio}
            )
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(source)) from exc
    if length is not None and from_seconds >= length:
        raise InvalidInputError(
            f"{named('from_seconds')} {from_seconds:g} s is past the end of {source!r} ({length:.3f} s long)"
        )
    refused = {i: why for i, why in refusals.items() if why is not None}
    if refused:
        index, why = next(iter(refused.items()))
        copy = f"{named('codec')} copy"
        raise InvalidInputError(
            f"{copy}: audio stream {index} cannot be copied: {why}; leave {copy} out (it is then encoded "
            "again) or write a container that holds it (.mka holds any)"
        )
    audio_target = None
    if codec is not None:
        sample_format = None
        if codec == "pcm_s16le" and muxer == "wav" and wide:
            codec = "pcm_s24le"  # 24-bit (and wider) sources keep 24 bits, as a demanding user expects
        if codec == "flac" and not all(is_lossless_audio(streams[i].codec) for i in audio):
            sample_format = "s16"  # a lossy source holds no more than 16 bits' worth (FFmpeg's choice)
        audio_target = AudioTarget(codec, None if is_lossless_audio(codec) else bit_rate, sample_format)
    shift = start + from_seconds
    end = None if to_seconds is None else to_seconds - from_seconds
    window = None
    if codec is None and (from_seconds > 0 or to_seconds is not None):
        window = (shift, None if to_seconds is None else start + to_seconds)
    report = AudioTranscodeReport(start_seconds=start, encoder=codec)
    with written_output(target, muxer) as out:
        copier = StreamCopier(
            out,
            source,
            list(indices),
            shift_seconds=shift,
            trim=codec is not None,
            end_seconds=end,
            window=window,
            audio_target=audio_target,
            default_first=default_first,
        )
        try:
            report.kept = list(copier.report.kept)
            report.dropped = list(copier.report.dropped)
            if not any(s.kind is StreamKind.AUDIO for s in report.kept):
                why = "; ".join(f"stream {d.index}: {d.reason}" for d in report.dropped) or "none kept"
                raise InvalidInputError(f"no audio stream of {source!r} can be written into {muxer}: {why}")
            total = None if length is None else max(0.0, length - from_seconds)
            if total is not None and to_seconds is not None:
                total = min(total, to_seconds - from_seconds)
            report.expected_seconds = total
            if progress is not None:
                progress(0.0, total, 0)
            until = STEP_SECONDS
            while not copier.exhausted:
                copier.mux_until(until)
                if progress is not None:
                    done = until if total is None else min(until, total)
                    progress(done, total, copier.frames_reencoded + copier.audio_packets_copied)
                until += STEP_SECONDS
            copier.finish()
            if copier.frames_reencoded + copier.audio_packets_copied == 0:
                cut = f"{named('from_seconds')} / {named('to_seconds')}"
                part = f" in the part asked ({cut})" if from_seconds > 0 or to_seconds else ""
                which = ", ".join(str(i) for i in audio)
                raise InvalidInputError(
                    f"the audio of {source!r} (stream {which}) holds no samples{part}: nothing to write"
                )
        finally:
            copier.close()
        report.frames_encoded = copier.frames_reencoded
        report.packets_copied = copier.audio_packets_copied
        report.timestamps = copier.adjustments
        report.kept = list(copier.report.kept)
        report.dropped = sorted(copier.report.dropped, key=lambda d: d.index)
        report.audio_note = copier.report.audio_note()
        report.other_notes = list(copier.report.other_notes)
    return report
