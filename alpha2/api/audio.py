"""Reading sound: a file's audio stream as float32 sample blocks, resampled on request.

Made by :func:`open_audio`; the sound-side sibling of :mod:`alpha2.api.source`::

    with alpha2.open_audio("clip.mp4", sample_rate=48000, channels=2) as sound:
        for block in sound:                 # AudioBlock: samples (frames, channels) float32, pts_seconds
            ...
        sound.seek(1.0)
        half_second = sound.read(0.5)       # one (24000, 2) float32 array

Built on :class:`~alpha2.ffmpeg_bridge.audio.AudioDecodeSession` (FFmpeg's decoder and resampler through
PyAV), the decoder the player's sound plays from.
"""

from __future__ import annotations

import os
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from alpha2.api import arguments
from alpha2.ffmpeg_bridge.audio import AudioBlock, AudioDecodeSession, AudioStreamInfo, NoAudioStreamError
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.forks import keep_in_fork

__all__ = ["AudioBlock", "AudioSource", "AudioStreamInfo", "NoAudioStreamError", "open_audio"]


def _close_here(session: AudioDecodeSession, pid: int) -> None:
    """Close ``session``, opened in process ``pid``; in a fork of that process, keep it instead."""
    if pid != os.getpid():
        keep_in_fork(session)  # FFmpeg's codec context, freed here, waits for threads the fork lacks
        return
    session.close()


def _abandoned(session: AudioDecodeSession, path: str, pid: int) -> None:
    """The backstop of an AudioSource dropped without close(): the file is closed, with a warning."""
    _close_here(session, pid)
    warnings.warn(
        f"an alpha2 AudioSource of {path!r} was dropped without close(); it is closed now: call close() "
        "or use `with alpha2.open_audio(...) as sound:`",
        ResourceWarning,
        stacklevel=2,
    )


class AudioSource:
    """A file's audio stream as :class:`~alpha2.ffmpeg_bridge.audio.AudioBlock` values; made by
    :func:`open_audio`.

    Iterating gives blocks from the current position on: ``samples`` float32 shaped (frames,
    channels), at :attr:`sample_rate` and :attr:`channels`, with the ``pts_seconds`` of their first
    sample. :meth:`read` gives a span as one array; :meth:`seek` moves (sample-exact: samples before the
    target are cut off). Close it (or use ``with``); one dropped unclosed is closed by a backstop, with
    a ``ResourceWarning``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sample_rate: int | None = None,
        channels: int | None = None,
        stream_index: int | None = None,
    ) -> None:
        if not isinstance(path, str | os.PathLike):
            raise InvalidInputError(
                f"open_audio takes a path (str or os.PathLike), got {type(path).__name__}"
            )
        self._session = AudioDecodeSession(
            path, sample_rate=sample_rate, channels=channels, stream_index=stream_index
        )
        self.path = os.fspath(path)
        """What was opened."""
        self._pending: AudioBlock | None = None  # what read() split off and did not hand out
        self._pid = os.getpid()  # the process whose decoder this is
        self._finalizer = weakref.finalize(self, _abandoned, self._session, self.path, self._pid)

    # -- what it is ----------------------------------------------------------------------------------

    @property
    def info(self) -> AudioStreamInfo:
        """The stream as the file has it: codec, its own sample rate and channels, duration, language and
        title tags."""
        return self._session.info

    @property
    def sample_rate(self) -> int:
        """Samples per second of the blocks (the one asked for, else the stream's)."""
        return self._session.sample_rate

    @property
    def channels(self) -> int:
        """Channels of the blocks (the count asked for, else the stream's)."""
        return self._session.channels

    @property
    def duration_seconds(self) -> float | None:
        """Duration the file announces for the stream, else the container's (Matroska and WebM give
        none of a stream's own: a track that starts late or ends early gets the file's), when it does."""
        return self._session.info.duration_seconds

    @property
    def damaged_packets(self) -> int:
        """Packets the decoder refused as damaged (or cut short, at the end of a truncated file): each
        was left out and decoding went on after it, as FFmpeg's does; one in the middle leaves a gap that
        is filled with silence (in :attr:`gaps`), one at the end shortens the sound. 0 for a sound file
        whole."""
        return self._session.damaged_packets

    @property
    def gaps(self) -> list[tuple[float, float]]:
        """(where, how long), in seconds, of each gap in the stream's timestamps met so far, filled with
        silence so that the sound after it keeps its time (blocks' ``pts_seconds`` and a seek agree with
        the timestamps, as with a player's clock); empty for a stream without gaps."""
        return list(self._session.gaps)

    @property
    def overlaps(self) -> list[tuple[float, float]]:
        """(where, how long), in seconds, of each place met so far where the stream's timestamps go back:
        the repeated samples were left out."""
        return list(self._session.overlaps)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran."""
        return not self._finalizer.alive

    def _check_open(self) -> None:
        if self._pid != os.getpid():
            # Decoding here read on through the file position it shares with the process it was opened in.
            raise ClosedError(
                f"this AudioSource of {self.path!r} was opened in process {self._pid}, which this one was "
                "forked from: its decoder did not come with the fork; open_audio() the file again in this "
                "process (in a DataLoader worker: on first use in __getitem__, or in worker_init_fn)"
            )
        if self.closed:
            raise ClosedError(
                f"this AudioSource of {self.path!r} was closed; open it again (alpha2.open_audio)"
            )

    # -- samples -------------------------------------------------------------------------------------

    def next_block(self) -> AudioBlock | None:
        """The next block, or None at the end of the stream.

        A packet the decoder refuses is left out and counted (:attr:`damaged_packets`), as FFmpeg's
        decode skips it.

        Raises:
            ClosedError: the source was closed.
            MediaFormatError: the container cannot be read on (its demuxer's error).
        """
        self._check_open()
        pending, self._pending = self._pending, None
        if pending is not None:
            return pending
        return self._session.next_block()

    def __iter__(self) -> Iterator[AudioBlock]:
        while (block := self.next_block()) is not None:
            yield block

    def read(self, seconds: float | None = None) -> np.ndarray:
        """The next ``seconds`` of sound (all that is left when None) as one float32 array.

        Returns:
            Shape (frames, :attr:`channels`): ``round(seconds * sample_rate)`` frames, fewer at the end
            of the stream (none past it).

        Raises:
            InvalidInputError: ``seconds`` is negative or not a number.
            ClosedError: the source was closed.
        """
        if seconds is not None:
            seconds = arguments.real("seconds (None for the rest of the stream)", seconds, low=0)
        wanted = None if seconds is None else round(seconds * self.sample_rate)
        parts: list[np.ndarray] = []
        have = 0
        while wanted is None or have < wanted:
            block = self.next_block()
            if block is None:
                break
            if wanted is not None and have + block.frames > wanted:
                keep = wanted - have
                self._pending = AudioBlock(
                    samples=block.samples[keep:],
                    pts_seconds=block.pts_seconds + keep / block.sample_rate,
                    sample_rate=block.sample_rate,
                )
                block = AudioBlock(block.samples[:keep], block.pts_seconds, block.sample_rate)
            parts.append(block.samples)
            have += block.frames
        if not parts:
            return np.zeros((0, self.channels), np.float32)
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)

    def seek(self, seconds: float) -> None:
        """Make the next sample the one at ``seconds`` (0 or later).

        The samples from there are those a read from the start gives at the same times, to the sample;
        the formats that cannot give that (AAC's noise-substituted bands, Opus's decoder that converges
        to about 1e-6) are listed in :mod:`alpha2.ffmpeg_bridge.audio`.

        Raises:
            InvalidInputError: ``seconds`` is not a number, or is negative.
            ClosedError: the source was closed.
        """
        seconds = arguments.real("seconds", seconds, low=0)
        self._check_open()
        self._pending = None
        self._session.seek(seconds)

    # -- lifetime ------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file. Idempotent. In a process forked after the file was opened it frees nothing (that
        hung there): the process that opened it closes it."""
        self._finalizer.detach()
        self._pending = None
        _close_here(self._session, self._pid)

    def __enter__(self) -> AudioSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        # Without this, pickle failed with "cannot pickle '_thread.RLock' object", and copy.copy made a
        # second source on the same decoder.
        raise InvalidInputError(
            f"an alpha2 AudioSource ({self.path!r}) cannot be pickled or copied: its decoder belongs to "
            "this process; keep the path and open_audio() it in each process"
        )

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.sample_rate} Hz, {self.channels} ch"
        language = f" {self.info.language}" if self.info.language else ""
        title = f" {self.info.title!r}" if self.info.title else ""
        return f"<alpha2.AudioSource {self.path!r} {self.info.codec}{language}{title} {state}>"


def open_audio(
    path: str | os.PathLike[str],
    *,
    sample_rate: int | None = None,
    channels: int | None = None,
    stream_index: int | None = None,
) -> AudioSource:
    """Open a media file's sound for decoding.

    Args:
        path: A media file with an audio stream (audio only, or beside video).
        sample_rate: Samples per second to resample to (FFmpeg's resampler), 1000 to 768000; None: the
            stream's own.
        channels: Channels to mix to, 1 to 8 (1 mono, 2 stereo, 6 for 5.1); None: the stream's own.
        stream_index: Which audio stream, by its index among the file's audio streams; None: the best
            (FFmpeg's choice; the only one in most files).

    Raises:
        NoAudioStreamError: the file has no audio stream; the message names the file and what it has.
        InvalidInputError: a sample rate, channel count or stream index out of range (the message names
            the allowed values), or a path that is not one.
        MediaNotFoundError, MediaFormatError: see :mod:`alpha2.ffmpeg_bridge.errors`.
    """
    return AudioSource(path, sample_rate=sample_rate, channels=channels, stream_index=stream_index)
