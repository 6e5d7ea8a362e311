"""Audio decode: one audio stream, resampled by FFmpeg to the rate and channels asked for.

:class:`AudioDecodeSession` opens its own container (the video's :class:`DecodeSession` is left as it is),
decodes and resamples with ``av.AudioResampler`` (FFmpeg's swresample) to float32 interleaved at the rate
and channel count asked for (the player's output device, or the stream's own), and hands out
:class:`AudioBlock` values: numpy samples with a pts in seconds. No PyAV object leaves this module.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import av.container
import numpy as np

from alpha2.ffmpeg_bridge.channel_layouts import make_layouts_safe, open_input
from alpha2.ffmpeg_bridge.errors import MediaFormatError, NoAudioStreamError, from_ffmpeg, from_ffmpeg_open
from alpha2.ffmpeg_bridge.media import DEFAULT_MAX_PIXELS, probe_options
from alpha2.gpu.errors import ClosedError, InvalidInputError

__all__ = ["AudioBlock", "AudioDecodeSession", "AudioStreamInfo", "NoAudioStreamError", "media_kinds"]

_LAYOUTS = {1: "mono", 2: "stereo", 3: "2.1", 4: "quad", 5: "5.0", 6: "5.1", 7: "6.1", 8: "7.1"}
"""FFmpeg's layout for each channel count alpha2 resamples to (the stream's own when it has as many)."""

MIN_SAMPLE_RATE = 1_000
"""Lowest sample rate (per second) a session resamples to."""
MAX_SAMPLE_RATE = 768_000
"""Highest sample rate (per second) a session resamples to."""


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


def media_kinds(source: str | os.PathLike[str]) -> frozenset[str]:
    """The stream kinds in ``source`` (``video``, ``audio``, ...), without decoding."""
    where = os.fspath(source)
    try:
        # Probing decodes a first picture of some formats: kept under the default limit.
        options = probe_options(DEFAULT_MAX_PIXELS)
        with open_input(where, mode="r", metadata_errors="replace", options=options) as container:
            return frozenset(str(s.type) for s in container.streams)
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(where)) from exc


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
    if channels is not None and (isinstance(channels, bool) or channels not in _LAYOUTS):
        raise InvalidInputError(
            f"channels must be 1 to {max(_LAYOUTS)} (1 mono, 2 stereo, 6 for 5.1 ...), or None for the "
            f"stream's own; got {channels!r}"
        )


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
        _check_output(sample_rate, channels)
        self.tempo = _checked_tempo(tempo)
        """Play speed of the blocks (:meth:`set_tempo`)."""
        self._stretch: _Stretch | None = None
        if stream_index is not None and (
            isinstance(stream_index, bool) or not isinstance(stream_index, numbers.Integral)
        ):
            raise InvalidInputError(f"stream_index must be an int or None, got {stream_index!r}")
        self.source = os.fspath(source)
        try:
            options = probe_options(DEFAULT_MAX_PIXELS)  # the video's first picture, decoded while probing
            container = av.open(self.source, mode="r", metadata_errors="replace", options=options)
        except av.error.FFmpegError as exc:
            raise from_ffmpeg_open(exc, repr(self.source)) from exc
        if not isinstance(container, av.container.InputContainer):
            container.close()
            raise MediaFormatError(f"{self.source!r} did not open as an input")
        try:
            orders = make_layouts_safe(container)
        except BaseException:
            container.close()
            raise
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
        self.channels: int = (
            int(channels) if channels is not None else min(max(own_channels, 1), max(_LAYOUTS))
        )
        """Channels of the blocks."""
        # The stream's own layout when the channel count is kept (5.1(side) stays itself), else FFmpeg's.
        keep = own_channels == self.channels and _named_layout(own_layout)
        self._layout = own_layout if keep else _LAYOUTS[self.channels]
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
        )
        self._order = orders.get(stream.index)  # a custom channel order: samples put into FFmpeg's
        self._frames: Iterator[Any] | None = None
        self._resampler: Any = None
        self._next_pts: float | None = None
        self._skip_before: float | None = None

    def _fresh(self) -> None:
        # A new resampler after a seek: the old one holds samples from before the jump.
        self._resampler = av.AudioResampler(format="flt", layout=self._layout, rate=self.sample_rate)
        self._next_pts = None

    def _live(self) -> av.container.InputContainer:
        if self._container is None:
            raise ClosedError(f"the audio decode session of {self.source!r} is closed; open the file again")
        return self._container

    def seek(self, seconds: float) -> None:
        """Go to ``seconds``: the next block starts there (samples before it are cut off)."""
        container = self._live()
        target = max(0.0, float(seconds))
        try:
            container.seek(int(target / self._stream.time_base), stream=self._stream, backward=True)
        except av.error.FFmpegError as exc:
            raise from_ffmpeg(exc, f"seeking {self.source!r} to {target:.3f} s") from exc
        self._frames = None
        self._resampler = None
        self._stretch = None
        self._skip_before = target

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
        if self._resampler is None:
            self._fresh()
        if frame is not None and self._next_pts is None and frame.time is not None:
            self._next_pts = float(frame.time)
        out = []
        for resampled in self._resampler.resample(frame):
            data = np.ascontiguousarray(resampled.to_ndarray().reshape(-1, self.channels), dtype=np.float32)
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
        container = self._live()
        while True:
            if self._frames is None:
                decoded = container.decode(self._stream)
                order = self._order
                self._frames = iter(decoded if order is None else map(order.apply, decoded))
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
            block = self._stretched(self._blocks_of(frame))
            if block is not None:
                return block

    def blocks(self) -> Iterator[AudioBlock]:
        """Every block from here to the end."""
        while (block := self.next_block()) is not None:
            yield block

    def close(self) -> None:
        """Close the container (idempotent)."""
        container, self._container = self._container, None
        self._frames = None
        self._resampler = None
        if container is not None:
            container.close()

    def __enter__(self) -> AudioDecodeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
