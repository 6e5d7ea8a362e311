"""Audio decode for playback: the first audio stream, resampled by FFmpeg to the output's format.

:class:`AudioDecodeSession` opens its own container (the video's :class:`DecodeSession` is left as it is),
decodes and resamples with ``av.AudioResampler`` to float32 interleaved at the rate and channel count the
output device asks for, and hands out :class:`AudioBlock` values: numpy samples with a pts in seconds.
No PyAV object leaves this module.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import av
import av.container
import numpy as np

from alpha2.ffmpeg_bridge.errors import BridgeError, MediaFormatError, from_ffmpeg
from alpha2.gpu.errors import ClosedError, InvalidInputError

__all__ = ["AudioBlock", "AudioDecodeSession", "AudioStreamInfo", "NoAudioStreamError", "media_kinds"]

_LAYOUTS = {1: "mono", 2: "stereo"}


class NoAudioStreamError(BridgeError, InvalidInputError):
    """The input has no audio stream."""


@dataclass(frozen=True)
class AudioBlock:
    """Decoded, resampled audio: ``samples`` is float32, shape (frames, channels), interleaved."""

    samples: np.ndarray
    """The samples, float32, C-contiguous, shape (frames, channels)."""
    pts_seconds: float
    """Media time of the first sample."""
    sample_rate: int
    """Samples per second per channel."""

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


def media_kinds(source: str | os.PathLike[str]) -> frozenset[str]:
    """The stream kinds in ``source`` (``video``, ``audio``, ...), without decoding."""
    where = os.fspath(source)
    try:
        with av.open(where, mode="r", metadata_errors="replace") as container:
            return frozenset(str(s.type) for s in container.streams)
    except av.error.FFmpegError as exc:
        raise from_ffmpeg(exc, f"opening {where!r}") from exc


class AudioDecodeSession:
    """Decodes the first audio stream of ``source`` into float32 blocks at ``sample_rate``/``channels``."""

    def __init__(
        self, source: str | os.PathLike[str], *, sample_rate: int = 48000, channels: int = 2
    ) -> None:
        if sample_rate <= 0 or channels not in _LAYOUTS:
            raise InvalidInputError(
                f"audio output must be > 0 Hz with 1 or 2 channels, got {sample_rate} Hz, {channels}"
            )
        self.source = os.fspath(source)
        self.sample_rate = sample_rate
        self.channels = channels
        try:
            container = av.open(self.source, mode="r", metadata_errors="replace")
        except av.error.FFmpegError as exc:
            raise from_ffmpeg(exc, f"opening {self.source!r}") from exc
        if not isinstance(container, av.container.InputContainer):
            container.close()
            raise MediaFormatError(f"{self.source!r} did not open as an input")
        if not container.streams.audio:
            kinds = ", ".join(sorted({str(s.type) for s in container.streams})) or "none"
            container.close()
            raise NoAudioStreamError(f"{self.source!r} has no audio stream (streams: {kinds})")
        self._container: av.container.InputContainer | None = container
        self._stream: Any = container.streams.audio[0]
        ctx = self._stream.codec_context
        duration = None
        if self._stream.duration is not None and self._stream.time_base is not None:
            duration = float(self._stream.duration * self._stream.time_base)
        elif container.duration is not None:
            duration = container.duration / 1_000_000
        self.info = AudioStreamInfo(
            codec=str(ctx.name),
            sample_rate=int(ctx.sample_rate or 0),
            channels=int(ctx.channels or 0),
            duration_seconds=duration,
        )
        self._frames: Iterator[Any] | None = None
        self._resampler: Any = None
        self._next_pts: float | None = None
        self._skip_before: float | None = None

    def _fresh(self) -> None:
        # A new resampler after a seek: the old one holds samples from before the jump.
        self._resampler = av.AudioResampler(
            format="flt", layout=_LAYOUTS[self.channels], rate=self.sample_rate
        )
        self._next_pts = None

    def _live(self) -> av.container.InputContainer:
        if self._container is None:
            raise ClosedError("the audio decode session is closed")
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
        self._skip_before = target

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
                self._frames = iter(container.decode(self._stream))
            try:
                frame = next(self._frames)
            except StopIteration:
                if self._resampler is None:
                    return None
                tail = self._blocks_of(None)  # flush what the resampler holds
                self._resampler = None
                self._frames = iter(())
                if tail:
                    return _joined(tail)
                return None
            except av.error.FFmpegError as exc:
                raise from_ffmpeg(exc, f"decoding audio of {self.source!r}") from exc
            blocks = self._blocks_of(frame)
            if blocks:
                return _joined(blocks)

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
