"""Audio decode: one audio stream, resampled by FFmpeg to the rate and channels asked for.

:class:`AudioDecodeSession` opens its own container (the video's :class:`DecodeSession` is left as it is),
decodes and resamples with ``av.AudioResampler`` (FFmpeg's swresample) to float32 interleaved at the rate
and channel count asked for (the player's output device, or the stream's own), and hands out
:class:`AudioBlock` values: numpy samples with a pts in seconds. No PyAV object leaves this module.

Seeking is sample-exact: after :meth:`AudioDecodeSession.seek` the blocks hold the samples a decode from
the start has at the same times. A demuxer's seek and a flushed decoder do not give that by themselves:

* the decoder of a lossy codec needs the frames before the target: an MP3 frame's data may begin in the
  frames before it (the bit reservoir, up to 511 bytes back), MP3's and AAC's filter banks overlap the
  frame before, and Opus's state converges over a few hundred milliseconds. The demuxer is sent back a
  codec's *preroll* (:func:`_preroll_samples`) before the target and the samples decoded there are dropped;
* a sample's place is counted from the first sample of a decode from the start, whose time (MP3's
  encoder delay makes it 1105 samples in, for LAME's files with a Xing header) is learnt once by
  decoding it; a frame's place after a seek comes from its timestamp, snapped to the codec's frame grid
  where the container rounds times (WebM and Matroska: milliseconds);
* a target near the start is reached by opening the file again: a demuxer's seek to 0 can pass over the
  priming packet (AAC's in MP4), and a new decoder starts as the first decode did;
* resampling keeps history too: the resampler is started on its own output grid (an input sample where
  the rates' ratio gives a whole output sample), some of its filter's length before the target.

What remains inexact, by the format: AAC's perceptual noise substitution (FFmpeg's encoder uses it by
default) fills some bands with noise from a generator the decoder keeps running, so after a seek those
bands carry other noise of the same loudness (the other bands are exact), as do the dithered mantissas
of AC-3 and E-AC-3 (about 1e-4 on a tone, more on noise); Opus agrees to about 1e-6
rather than to the bit; where a container rounds times and the codec has no fixed frame grid (Vorbis,
PCM and variable-block FLAC in Matroska), a place is as exact as the container's clock. Places after a
seek come from timestamps, those of a decode from the start from counting samples, kept on the timestamps:
a gap in them is filled with silence and an overlap's repeated samples left out (as the transcoder
does), so the two agree past a gap too.
"""

from __future__ import annotations

import math
import numbers
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import av.container
import numpy as np

from alpha2.ffmpeg_bridge.channel_layouts import (
    AUDIO_DRIFT_SECONDS,
    ChannelOrder,
    kept_on_time,
    local_name,
    make_layouts_safe,
    open_input,
    trimmed_frame,
)
from alpha2.ffmpeg_bridge.errors import MediaFormatError, NoAudioStreamError, from_ffmpeg, from_ffmpeg_open
from alpha2.ffmpeg_bridge.media import DEFAULT_MAX_PIXELS, probe_options, stream_language
from alpha2.gpu.errors import ClosedError, InvalidInputError

__all__ = ["AudioBlock", "AudioDecodeSession", "AudioStreamInfo", "NoAudioStreamError", "media_kinds"]

_LAYOUTS = {1: "mono", 2: "stereo", 3: "2.1", 4: "quad", 5: "5.0", 6: "5.1", 7: "6.1", 8: "7.1"}
"""FFmpeg's layout for each channel count alpha2 resamples to (the stream's own when it has as many)."""

MIN_SAMPLE_RATE = 1_000
"""Lowest sample rate (per second) a session resamples to."""
MAX_SAMPLE_RATE = 768_000
"""Highest sample rate (per second) a session resamples to."""
_LATEST_SECONDS = 1e9
"""Where a seek past it goes instead (31 years: past any stream's end)."""


@dataclass(frozen=True)
class AudioBlock:
    """Decoded, resampled audio: ``samples`` is float32, shape (frames, channels), interleaved."""

    samples: np.ndarray
    """The samples, float32, C-contiguous, shape (frames, channels)."""
    pts_seconds: float
    """Media time of the first sample."""
    sample_rate: int
    """Samples per second per channel."""
    tempo: float = 1.0
    """Media seconds per second played: a block made at a tempo (FFmpeg's ``atempo``, pitch kept) other
    than 1 covers ``frames * tempo / sample_rate`` seconds of the media from ``pts_seconds``."""

    @property
    def frames(self) -> int:
        """Sample frames in the block."""
        return int(self.samples.shape[0])

    @property
    def duration_seconds(self) -> float:
        """How long the block plays."""
        return self.frames / self.sample_rate


@dataclass(frozen=True)
class AudioStreamInfo:
    """The source's audio stream, as the file says."""

    codec: str
    """Decoder name, e.g. ``aac``."""
    sample_rate: int
    """The stream's own rate (the blocks are at the session's output rate)."""
    channels: int
    """The stream's own channel count."""
    duration_seconds: float | None
    """Stream (or container) duration, when known."""
    stream_index: int = 0
    """Which audio stream: its index among the container's audio streams."""
    layout: str = ""
    """The stream's channel layout as FFmpeg names it (``stereo``, ``5.1(side)`` ...), when known."""
    language: str | None = None
    """The stream's language tag as the file has it (ISO 639: ``eng``, ``jpn``); None when untagged
    (no tag, or ``und``), as :func:`alpha2.describe` and ``alpha2 play --alang`` read it."""
    title: str | None = None
    """The stream's title tag (``Commentary``), None when it has none."""


def media_kinds(source: str | os.PathLike[str], *, covers: bool = True) -> frozenset[str]:
    """The stream kinds in ``source`` (``video``, ``audio``, ...), without decoding. ``covers=False``:
    a picture attached to the file (a song's cover art, FFmpeg's ``attached_pic``) is no ``video``.

    Raises:
        InvalidInputError: ``source`` is not a path.
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """
    where = _path(source, "media_kinds")
    try:
        # Probing decodes a first picture of some formats: kept under the default limit.
        options = probe_options(DEFAULT_MAX_PIXELS)
        with open_input(where, mode="r", metadata_errors="replace", options=options) as container:
            attached = int(av.stream.Disposition.attached_pic)
            return frozenset(
                str(s.type)
                for s in container.streams
                if covers or not (s.type == "video" and int(s.disposition) & attached)
            )
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(where)) from exc


def _path(source: object, who: str) -> str:
    """``source`` as a path string; an :class:`InvalidInputError` where it is no path."""
    if not isinstance(source, str | os.PathLike):
        raise InvalidInputError(f"{who} takes a path (str or os.PathLike), got {type(source).__name__}")
    return os.fspath(source)


def _stream_counts(container: av.container.InputContainer) -> str:
    """``1 video, 2 subtitle``: what a container holds, for messages."""
    kinds: dict[str, int] = {}
    for stream in container.streams:
        kinds[str(stream.type)] = kinds.get(str(stream.type), 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) or "no streams"


def _named_layout(name: str) -> bool:
    """Whether FFmpeg knows ``name`` as a layout (not an unordered ``3 channels``)."""
    if not name or name.endswith(" channels"):
        return False
    try:
        av.AudioLayout(name)
    except (ValueError, av.error.FFmpegError):
        return False
    return True


def _check_output(sample_rate: int | None, channels: int | None) -> None:
    """Refuse a rate or channel count the resampler is not asked for, naming the allowed values."""
    if sample_rate is not None and (
        isinstance(sample_rate, bool)
        or not isinstance(sample_rate, numbers.Integral)
        or not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE
    ):
        raise InvalidInputError(
            f"sample_rate must be a whole number of samples per second from {MIN_SAMPLE_RATE} to "
            f"{MAX_SAMPLE_RATE} (e.g. 48000, 44100), or None for the stream's own; got {sample_rate!r}"
        )
    if channels is not None and (
        isinstance(channels, bool) or not isinstance(channels, numbers.Integral) or channels not in _LAYOUTS
    ):  # (2.0 was taken, where sample_rate=44100.0 is refused)
        raise InvalidInputError(
            f"channels must be 1 to {max(_LAYOUTS)} (1 mono, 2 stereo, 6 for 5.1 ...), or None for the "
            f"stream's own; got {channels!r}"
        )


def _opened(source: str) -> tuple[av.container.InputContainer, dict[int, ChannelOrder]]:
    """``source`` opened for reading, its layouts made safe (:func:`make_layouts_safe`)."""
    try:
        options = probe_options(DEFAULT_MAX_PIXELS)  # the video's first picture, decoded while probing
        container = av.open(local_name(source), mode="r", metadata_errors="replace", options=options)
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(source)) from exc
    if not isinstance(container, av.container.InputContainer):
        container.close()
        raise MediaFormatError(f"{source!r} did not open as an input")
    try:
        orders = make_layouts_safe(container)
    except BaseException:
        container.close()
        raise
    return container, orders


_OPUS = frozenset({"opus", "libopus"})
_MP3 = frozenset({"mp3", "mp3float", "mp3adu", "mp3adufloat"})
_AAC = frozenset({"aac", "aac_fixed", "aac_latm", "libfdk_aac"})
_FRAME_SAMPLES = {"ac3": 1536, "eac3": 1536}
"""Samples a frame of the codecs whose decoder leaves ``frame_size`` at 0 (E-AC-3's may be shorter: a
grid that does not fit a frame's time is not used, :meth:`AudioDecodeSession._placed`)."""
_STANDALONE = frozenset({"flac", "alac", "wavpack", "tta"})
"""Decoders whose frames need nothing of the frames before them (PCM's too)."""


def _preroll_samples(codec: str, rate: int, channels: int, frame_size: int) -> int:
    """Samples the decoder of ``codec`` is fed before a seek's first kept sample (and their output
    dropped), so that its state there is the state a decode from the start has.

    * PCM, FLAC and the other lossless codecs: none, their frames stand alone.
    * MP3: a frame's main data may begin up to 511 bytes back (255 in MPEG-2 and 2.5), in the frames
      before it (the bit reservoir), and its filter bank overlaps the frame before: as many frames as
      hold that many bytes of main data at the format's lowest bitrate (32 kbit/s; 8 in MPEG-2 and 2.5),
      and two more. At 44.1 kHz stereo that is 10 frames (0.26 s); a 60 kbit/s VBR stream measured
      needed about 4.
    * AAC: its MDCT overlaps the frame before (one frame was needed, measured); four frames, for the
      state that HE-AAC's SBR and PS add (not measured: FFmpeg has no encoder for them).
    * Opus: its decoder's state converges rather than resets; RFC 7845's 80 ms left errors of 0.07,
      0.3 s less than 1e-4, 0.5 s less than 1e-6 (measured on CELT streams of 5, 20 and 60 ms frames
      and a 12 kbit/s SILK one).
    * Others (Vorbis, AC-3 ...): a quarter second, more than one frame of any of them.
    """
    if codec.startswith("pcm_") or codec in _STANDALONE:
        return 0
    if codec in _MP3:
        mpeg1 = rate >= 32000
        frame = 1152 if mpeg1 else 576
        frame_bytes = (32000 if mpeg1 else 8000) * frame // 8 // rate
        side_info = (32 if channels > 1 else 17) if mpeg1 else (17 if channels > 1 else 9)
        main_bytes = max(1, frame_bytes - 4 - side_info)
        return (-(-(511 if mpeg1 else 255) // main_bytes) + 2) * frame
    if codec in _AAC:
        return 4 * (frame_size or 1024)
    if codec in _OPUS:
        return rate // 2
    return max(4 * frame_size, rate // 4)


def _flac_block_size(extradata: bytes) -> int:
    """The block size of every FLAC frame but the last, from the stream's STREAMINFO (``extradata``,
    the block alone or after ``fLaC`` and a block header), where its least and greatest are one; else 0."""
    info = extradata[8:] if extradata[:4] == b"fLaC" else extradata
    if len(info) < 4 or info[0:2] != info[2:4]:
        return 0
    return int.from_bytes(info[0:2], "big")


def _resampler_grid(in_rate: int, out_rate: int) -> tuple[int, int]:
    """Where a new resampler may start so that its samples are those of one started at the first
    sample: (``step``, ``margin``). It starts on a multiple of ``step`` input samples (there the
    rates' ratio gives a whole output sample, and FFmpeg's exact-ratio filter is at its first phase),
    at least ``margin`` before the target: its first outputs lack the history before it (FFmpeg mirrors
    the first samples there), for about half its filter, 16 taps times the rates' ratio when it
    lowers the rate."""
    if in_rate == out_rate:
        return 1, 0
    return in_rate // math.gcd(in_rate, out_rate), 64 * -(-in_rate // out_rate)


def _decoded(
    container: av.container.InputContainer, stream: Any, damaged: Callable[[], None]
) -> Iterator[Any]:
    """The frames of ``stream``, decoded packet by packet: a packet its decoder refuses (damaged, or cut
    short at the end of a truncated file) is left out and ``damaged`` called, and decoding goes on after
    it, as FFmpeg's and mpv's do (PyAV's ``container.decode`` stops there with the error). Whatever the
    error: a damaged AAC packet is refused as invalid data, but also with EPERM or a code of no name,
    which stopped the sound there. The demuxer's errors are raised."""
    for packet in container.demux(stream):
        try:
            frames = packet.decode()
        except av.error.FFmpegError:
            damaged()
            continue
        yield from frames


class AudioDecodeSession:
    """Decodes one audio stream of ``source`` into float32 blocks at ``sample_rate`` / ``channels``.

    Args:
        source: The media file.
        sample_rate: Samples per second of the blocks (resampled); None: the stream's own.
        channels: Channels of the blocks (1 to 8, mixed up or down by FFmpeg); None: the stream's own.
        stream_index: Which audio stream, by its index among the container's audio streams; None: the
            one FFmpeg ranks best (the first, in a file with one).
        tempo: Play speed, 0.25 to 4, the pitch kept (FFmpeg's ``atempo``); 1: as decoded.

    Raises:
        InvalidInputError: a sample rate, channel count or stream index out of range.
        NoAudioStreamError: the file has no audio stream (the message lists what it has).
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        *,
        sample_rate: int | None = 48000,
        channels: int | None = 2,
        stream_index: int | None = None,
        tempo: float = 1.0,
    ) -> None:
        # One call at a time: close() from another thread while a block is decoded freed the demuxer
        # under it (a segfault); close now waits for that block.
        self._lock = threading.RLock()
        _check_output(sample_rate, channels)
        self.tempo = _checked_tempo(tempo)
        """Play speed of the blocks (:meth:`set_tempo`)."""
        self._stretch: _Stretch | None = None
        if stream_index is not None and (
            isinstance(stream_index, bool) or not isinstance(stream_index, numbers.Integral)
        ):
            raise InvalidInputError(f"stream_index must be an int or None, got {stream_index!r}")
        self.source = _path(source, "AudioDecodeSession")
        container, orders = _opened(self.source)
        audio = list(container.streams.audio)
        if not audio:
            held = _stream_counts(container)
            container.close()
            raise NoAudioStreamError(
                f"{self.source!r} has no audio stream (it has {held}); give a file with sound"
            )
        stream: Any
        if stream_index is None:
            stream = container.streams.best("audio") or audio[0]
        elif 0 <= stream_index < len(audio):
            stream = audio[int(stream_index)]
        else:
            container.close()
            raise InvalidInputError(
                f"{self.source!r} has {len(audio)} audio stream(s); stream_index must be 0 to "
                f"{len(audio) - 1} (an index among its audio streams) or None, got {stream_index}"
            )
        self._container: av.container.InputContainer | None = container
        self._stream: Any = stream
        ctx = self._stream.codec_context
        own_channels = int(ctx.channels or 0)
        own_layout = str(getattr(ctx.layout, "name", "") or "")
        self.sample_rate: int = int(sample_rate) if sample_rate is not None else int(ctx.sample_rate or 48000)
        """Samples per second of the blocks."""
        self.channels: int = int(channels) if channels is not None else max(own_channels, 1)
        """Channels of the blocks."""
        # The stream's own layout when the channel count is kept (5.1(side) stays itself), else FFmpeg's;
        # past 8 channels the stream's own count in no order (each channel kept in its place).
        keep = own_channels == self.channels and _named_layout(own_layout)
        self._layout = own_layout if keep else _LAYOUTS.get(self.channels, f"{self.channels} channels")
        metadata = self._stream.metadata or {}
        duration = None
        if self._stream.duration is not None and self._stream.time_base is not None:
            duration = float(self._stream.duration * self._stream.time_base)
        elif container.duration is not None:
            duration = container.duration / 1_000_000
        self.info = AudioStreamInfo(
            codec=str(ctx.name),
            sample_rate=int(ctx.sample_rate or 0),
            channels=own_channels,
            duration_seconds=duration,
            stream_index=next(i for i, s in enumerate(audio) if s.index == stream.index),
            layout=own_layout,
            language=stream_language(metadata),
            title=str(metadata.get("title") or "").strip() or None,
        )
        self._order: ChannelOrder | None = orders.get(stream.index)  # a custom order, put into FFmpeg's
        self.damaged_packets = 0
        """Packets the decoder refused as damaged (or cut short, at the end of a truncated file) and that
        were left out, decoding going on after them as FFmpeg's does: one in the middle leaves a gap
        filled with silence (:attr:`gaps`), one at the end shortens the sound."""
        self.gaps: list[tuple[float, float]] = []
        """(where, how long) in seconds of each gap in the stream's timestamps, filled with silence so
        that the sound after it keeps its time (a damaged packet left out is one)."""
        self.overlaps: list[tuple[float, float]] = []
        """(where, how long) in seconds of each place the stream's timestamps go back, whose repeated
        samples were left out."""
        self._clock: float | None = None  # where the next frame's first sample belongs, in seconds
        self._clock_fresh = False  # the clock was just set from the first frame after an open or seek
        self._clock_rate = 0  # the sample rate the clock was set at
        self._gap_at_target = False  # a seek's target lies in a gap: the next frame's drift is silence
        self._frames: Iterator[Any] | None = None
        self._resampler: Any = None
        self._fed: tuple[str, str, int] | None = None  # format, layout and rate of the frames it takes
        self._next_pts: float | None = None
        self._skip_before: float | None = None
        # Sample places, counted from the first sample of a decode from the start (see the module's text).
        self._start_time: float | None = None  # media time of that first sample, once learnt
        self._start_rate = int(ctx.sample_rate or self.sample_rate)  # the decoder's rate there
        self._start_frame = 0  # samples in its first frame: where the packet after it begins
        self._untouched = True  # nothing demuxed since the file was opened
        self._first_next = True  # the next frame decoded is the first of a decode from the start
        self._position: int | None = None  # place of the next frame's first sample, once known
        self._keep_from: int | None = None  # after a seek: the first sample handed to the resampler
        self._landing: int | None = None  # after a demuxer's seek: the place asked for

    def _fresh(self) -> None:
        # A new resampler after a seek: the old one holds samples from before the jump.
        self._resampler = av.AudioResampler(format="flt", layout=self._layout, rate=self.sample_rate)

    def _live(self) -> av.container.InputContainer:
        if self._container is None:
            raise ClosedError(f"the audio decode session of {self.source!r} is closed; open the file again")
        return self._container

    def seek(self, seconds: float) -> None:
        """Go to ``seconds``: the next block starts at the sample there, and holds the samples that a
        decode from the start has at the same times (see the module's text for how, and for what the
        formats leave inexact). ``seconds`` before the stream's first sample: from that sample."""
        with self._lock:
            self._seek(seconds)

    def _seek(self, seconds: float) -> None:
        self._live()
        try:
            target = float(seconds)
        except OverflowError:  # an int past a float's range (10**400): past any stream's end too
            target = math.inf
        # Past any stream's end, and short of an int64 timestamp at any time base (1e300 overflowed it).
        target = min(max(0.0, target), _LATEST_SECONDS)
        if self._start_time is None:
            self._learn_start()
        assert self._start_time is not None
        self._frames = None
        self._resampler = None
        self._stretch = None
        self._next_pts = None
        self._clock = None
        self._skip_before = target
        rate = self._start_rate
        step, margin = _resampler_grid(rate, self.sample_rate)
        place = (target - self._start_time) * rate
        self._keep_from = max(0, math.floor((place - margin) / step) * step)
        ctx = self._stream.codec_context
        preroll = _preroll_samples(str(ctx.name), rate, int(ctx.channels or 1), int(ctx.frame_size or 0))
        if self._grid():
            preroll = max(preroll, 2 * self._grid())  # the first frame, placed by its end, is not the last
        self._demux_seek(self._keep_from - preroll, target)

    def _demux_seek(self, place: int, target: float) -> None:
        """Decode from the packet holding sample ``place`` or one before it (checked by
        :meth:`_admitted`); from the start, in a new opening of the file, where ``place`` is not after
        the first sample or the demuxer refuses the seek."""
        self._frames = None
        self._position = None
        self._landing = None
        if place <= 0:
            if not self._untouched:
                self._reopen()
            self._first_next = True
            return
        assert self._start_time is not None
        time_base = self._stream.time_base
        at = math.floor((self._start_time + place / self._start_rate) / time_base)
        self._untouched = False
        try:
            self._live().seek(at, stream=self._stream, backward=True)
        except av.error.FFmpegError:
            # A demuxer that refuses the seek (FFmpeg's FLAC one, for some places: 'Operation not
            # permitted') is read from the start, the samples before the target dropped, as ffmpeg's -ss.
            self._demux_seek(0, target)
            return
        self._first_next = False
        self._landing = place

    def _reopen(self) -> None:
        """Open the file again, the same stream chosen: decoding starts as the first decode did."""
        container, orders = _opened(self.source)
        old, self._container = self._container, container
        self._stream = container.streams[self._stream.index]
        self._order = orders.get(self._stream.index)
        self._untouched = True
        if old is not None:
            old.close()

    def _learn_start(self) -> None:
        """Learn where a decode from the start begins (time, rate, first frame's size) by decoding its
        first frame, in a second opening of the file (this one may be anywhere)."""
        container, _ = _opened(self.source)
        try:
            for frame in _decoded(container, container.streams[self._stream.index], lambda: None):
                self._start_at(frame)
                return
        except av.error.FFmpegError as exc:
            raise from_ffmpeg(exc, f"decoding audio of {self.source!r}") from exc
        finally:
            container.close()
        self._start_time = 0.0  # no frame at all: nothing to place

    def _start_at(self, frame: Any) -> None:
        self._start_time = float(frame.time) if frame.time is not None else 0.0
        self._start_rate = int(frame.sample_rate)
        self._start_frame = int(frame.samples)

    def _grid(self) -> int:
        """Samples between packet starts, where the container rounds times to coarser than a sample
        and the codec's frames have a fixed grid (0: places are taken as the timestamps give them)."""
        rate = self._start_rate
        tick = float(self._stream.time_base) * rate  # samples per unit of the container's clock
        ctx = self._stream.codec_context
        if str(ctx.name) in _OPUS:
            grid = rate // 400  # Opus frames last a multiple of 2.5 ms
        elif str(ctx.name) == "flac":
            grid = _flac_block_size(bytes(ctx.extradata or b""))
        else:
            grid = int(ctx.frame_size or 0) or _FRAME_SAMPLES.get(str(ctx.name), 0)
        return grid if tick > 1 and 2 * tick < grid else 0

    def _placed(self, frame: Any) -> int:
        """The place of ``frame``'s first sample, from its timestamp (the first frame after a seek)."""
        assert self._start_time is not None
        if frame.time is None:
            return self._landing or 0
        estimate = (float(frame.time) - self._start_time) * self._start_rate
        grid = self._grid()
        if not grid:
            return round(estimate)
        # The frame's end is a packet's start; its own start may not be (a decoder's skip after a seek
        # drops the head of Opus's first packet), and a rounded time is off by up to a tick twice over.
        # The last frame, cut short, starts on the grid and ends off it; after a gap of other than whole
        # frames neither does: there the timestamp is all there is (as exact as the container's clock).
        samples = int(frame.samples)
        end = estimate + samples - self._start_frame
        by_end = self._start_frame + round(end / grid) * grid - samples
        by_start = self._start_frame + round((estimate - self._start_frame) / grid) * grid
        near = 2 * float(self._stream.time_base) * self._start_rate + 1
        return next((p for p in (by_end, by_start) if abs(p - estimate) <= near), round(estimate))

    def _admitted(self, frame: Any) -> Any:
        """``frame`` as it goes to the resampler: None where it lies before a seek's target (the
        decoder's preroll), the part from the target where it holds it."""
        if self._first_next:
            self._first_next = False
            if self._start_time is None:
                self._start_at(frame)
            start = 0
        elif self._position is not None:
            start = self._position
            if self._keep_from is not None and frame.time is not None:
                # Looking for a seek's target: a jump in the timestamps (a gap, an overlap) moves the
                # places on with it, as a decode from the start keeps them (:meth:`_on_time`).
                placed = self._placed(frame)
                if abs(placed - start) > AUDIO_DRIFT_SECONDS * self._start_rate:
                    start = placed
        else:
            start = self._placed(frame)
        self._position = start + int(frame.samples)
        landing, self._landing = self._landing, None
        keep = self._keep_from
        # A decoder may drop its start delay again from the first frame after a seek (Opus's pre-skip).
        slack = int(getattr(self._stream.codec_context, "delay", 0) or 0)
        if landing is not None and keep is not None and start > landing + slack:
            # The demuxer stopped after the place asked for: ask again, further back.
            further = max(keep - landing, self._start_rate // 10)
            self._demux_seek(keep - 4 * further, self._skip_before or 0.0)
            return None
        if keep is not None:
            if start + frame.samples <= keep:
                return None
            self._keep_from = None
            if keep > start:
                frame = trimmed_frame(frame, keep - start)
                start = keep
            elif start > keep and self._next_pts is None:
                # The target lies in a gap of the timestamps (the places jumped over it): silence from
                # it up to this frame, as a decode from the start has there (:meth:`_on_time` fills it).
                assert self._start_time is not None
                self._next_pts = self._clock = self._start_time + keep / self._start_rate
                self._clock_fresh, self._clock_rate = False, int(frame.sample_rate or 0)
                self._gap_at_target = True
                return frame
        if self._next_pts is None:
            assert self._start_time is not None
            self._next_pts = self._start_time + start / self._start_rate
            self._clock, self._clock_fresh = self._next_pts, True
        return frame

    def _on_time(self, frame: Any) -> list[Any]:
        """``frame`` kept on its timestamp, as the frames to resample: the blocks' times are counted in
        samples, so a gap in the timestamps (a damaged packet left out, a broadcast's dropout) would
        close up, everything after it early, and an overlap push the rest late. Where a frame's time runs
        more than :data:`AUDIO_DRIFT_SECONDS` ahead of the samples before it, silence fills the gap
        first; where it runs behind, its repeated samples are left out. Both are listed
        (:attr:`gaps`, :attr:`overlaps`). Places after a seek come from timestamps, so a decode from the
        start and one after a seek agree past a gap."""
        rate, samples = int(frame.sample_rate or 0), int(frame.samples)
        fresh, self._clock_fresh = self._clock_fresh, False
        if fresh:
            self._clock_rate = rate
        elif rate != self._clock_rate:
            # The rate changed mid-stream (ADTS or MP3 streams joined end to end): a raw stream's
            # timestamps are made up by the demuxer from the first rate's frame lengths, so from here
            # the samples are counted as they come.
            self._clock = None
        if self._clock is None or not rate or not samples:
            return [frame]
        if fresh or frame.time is None:
            self._clock += samples / rate
            return [frame]
        at_target, self._gap_at_target = self._gap_at_target, False
        # A gap is as exact as the container's clock (Matroska: a millisecond).
        kept, added, cut = kept_on_time(frame, self._clock, exact=at_target)
        if added:
            _note(self.gaps, self._clock, added / rate)
        if cut:
            _note(self.overlaps, float(frame.time), cut / rate)
        self._clock += (added + samples - cut) / rate
        return kept

    def set_tempo(self, tempo: float) -> None:
        """Play at ``tempo`` (0.25 to 4, the pitch kept) from the next :meth:`seek` on."""
        self.tempo = _checked_tempo(tempo)
        self._stretch = None

    def _stretched(self, blocks: list[AudioBlock], flush: bool = False) -> AudioBlock | None:
        if self.tempo == 1.0:
            return _joined(blocks) if blocks else None
        if self._stretch is None:
            self._stretch = _Stretch(self.tempo, self.sample_rate, self._layout, self.channels)
        return self._stretch.run(blocks, flush)

    def _blocks_of(self, frame: Any) -> list[AudioBlock]:
        out = []
        if frame is not None:
            fed = (frame.format.name, frame.layout.name, int(frame.sample_rate))
            if self._resampler is not None and fed != self._fed:
                # The stream's rate, channels or sample format changed (ADTS or MP3 streams joined end
                # to end, a broadcast's): what the resampler holds goes out, a new one takes the rest.
                out = self._blocks_of(None)
                self._resampler = None
            self._fed = fed
        if self._resampler is None:
            self._fresh()
        for resampled in self._resampler.resample(frame):
            # Packed float32 ("flt", the resampler's format): the plane read as it is, once; PyAV's
            # to_ndarray stacks the planes through numpy's vstack, which cost as much as the decode.
            plane = np.frombuffer(resampled.planes[0], np.float32, count=resampled.samples * self.channels)
            data = plane.reshape(-1, self.channels).copy()
            if self._next_pts is None:
                self._next_pts = 0.0
            pts = self._next_pts
            self._next_pts = pts + data.shape[0] / self.sample_rate
            if self._skip_before is not None:
                cut = round((self._skip_before - pts) * self.sample_rate)
                if cut >= data.shape[0]:
                    continue
                if cut > 0:
                    data, pts = data[cut:], pts + cut / self.sample_rate
                self._skip_before = None
            if data.shape[0]:
                out.append(AudioBlock(samples=data, pts_seconds=pts, sample_rate=self.sample_rate))
        return out

    def next_block(self) -> AudioBlock | None:
        """The next block, or None at the end of the stream."""
        with self._lock:
            return self._next_block()

    def _next_block(self) -> AudioBlock | None:
        self._live()
        while True:
            if self._frames is None:
                # The container a seek may have opened anew.
                decoded = _decoded(self._live(), self._stream, self._count_damaged)
                order = self._order
                self._frames = iter(decoded if order is None else map(order.apply, decoded))
                self._untouched = False
            try:
                frame = next(self._frames)
            except StopIteration:
                if self._resampler is None:
                    return None
                tail = self._blocks_of(None)  # flush what the resampler holds
                self._resampler = None
                self._frames = iter(())
                return self._stretched(tail, flush=True)
            except av.error.FFmpegError as exc:
                raise from_ffmpeg(exc, f"decoding audio of {self.source!r}") from exc
            frame = self._admitted(frame)
            if frame is None:
                continue
            block = self._stretched([b for kept in self._on_time(frame) for b in self._blocks_of(kept)])
            if block is not None:
                return block

    def _count_damaged(self) -> None:
        self.damaged_packets += 1

    def blocks(self) -> Iterator[AudioBlock]:
        """Every block from here to the end."""
        while (block := self.next_block()) is not None:
            yield block

    def close(self) -> None:
        """Close the container (idempotent; from any thread: it waits for a block being decoded)."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        container, self._container = self._container, None
        self._frames = None
        self._resampler = None
        if container is not None:
            container.close()

    def __enter__(self) -> AudioDecodeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _note(spans: list[tuple[float, float]], where: float, seconds: float) -> None:
    """Add (``where``, ``seconds``) to ``spans`` once: a gap or overlap met again after a seek back (or
    met in part, from a seek into it) is one already listed, up to the container's clock. Spans shorter
    than :data:`AUDIO_DRIFT_SECONDS` are never noted, so two distinct ones never cover each other."""
    slack = AUDIO_DRIFT_SECONDS

    def covers(a: tuple[float, float], b: tuple[float, float]) -> bool:
        return a[0] - slack <= b[0] and b[0] + b[1] <= a[0] + a[1] + slack

    new = (where, seconds)
    if any(covers(old, new) for old in spans):
        return
    spans[:] = [old for old in spans if not covers(new, old)]
    spans.append(new)
    spans.sort()


def _joined(blocks: list[AudioBlock]) -> AudioBlock:
    if len(blocks) == 1:
        return blocks[0]
    samples = np.concatenate([b.samples for b in blocks])
    return AudioBlock(samples=samples, pts_seconds=blocks[0].pts_seconds, sample_rate=blocks[0].sample_rate)


def _checked_tempo(tempo: float) -> float:
    if isinstance(tempo, bool) or not isinstance(tempo, numbers.Real) or not 0.25 <= float(tempo) <= 4.0:
        raise InvalidInputError(f"tempo must be a number from 0.25 to 4 (1: as decoded), got {tempo!r}")
    return float(tempo)


class _Stretch:
    """FFmpeg's ``atempo`` over float32 interleaved blocks (chained: one filter takes 0.5 to 2)."""

    def __init__(self, tempo: float, rate: int, layout: str, channels: int) -> None:
        self.tempo, self.rate, self.channels = tempo, rate, channels
        self._layout = layout
        graph = av.filter.Graph()
        last: Any = graph.add_abuffer(
            format="flt", sample_rate=rate, layout=layout, time_base=Fraction(1, rate)
        )
        factors, left = [], tempo
        while left < 0.5 or left > 2.0:
            factors.append(0.5 if left < 0.5 else 2.0)
            left /= factors[-1]
        for factor in [*factors, left]:
            node = graph.add("atempo", f"{factor:.6f}")
            last.link_to(node)
            last = node
        last.link_to(graph.add("abuffersink"))
        graph.configure()
        self._graph = graph
        self._pushed = 0  # samples in
        self._pts: float | None = None  # media time of the next sample out

    def run(self, blocks: list[AudioBlock], flush: bool) -> AudioBlock | None:
        for block in blocks:
            if self._pts is None:
                self._pts = block.pts_seconds
            frame = av.AudioFrame.from_ndarray(
                block.samples.reshape(1, -1), format="flt", layout=self._layout
            )
            frame.sample_rate, frame.pts, frame.time_base = self.rate, self._pushed, Fraction(1, self.rate)
            self._pushed += block.frames
            self._graph.push(frame)
        if flush:
            self._graph.push(None)
        out = []
        while True:
            try:
                out.append(self._graph.pull().to_ndarray().reshape(-1, self.channels))
            except (av.error.BlockingIOError, av.error.EOFError):
                break
        if not out or self._pts is None:
            return None
        samples = np.ascontiguousarray(np.concatenate(out), dtype=np.float32)
        pts = self._pts
        self._pts = pts + samples.shape[0] * self.tempo / self.rate
        return AudioBlock(samples=samples, pts_seconds=pts, sample_rate=self.rate, tempo=self.tempo)
