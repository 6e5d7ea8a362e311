"""The player's media clock: sound through PortAudio (the master clock), or the system clock, saying why.

:class:`AudioOutput` plays the input's audio through ``sounddevice`` (an optional extra, imported only
here and only when sound is wanted): a feeder thread decodes blocks into a bounded queue, the stream's
callback pulls from it, and the clock is the media time of the samples handed to the device minus the
output latency the callback's time info reports, interpolated with the system clock between callbacks.
:class:`SystemClock` has the same interface and runs on ``time.perf_counter``. :func:`open_clock` picks one
and each says why in ``reason``.
The file's audio tracks are :class:`AudioTrack` values (:func:`audio_tracks`), numbered from 1 among the
audio tracks as mpv numbers them (``--aid``, ``#``); :meth:`AudioOutput.switch_track` changes the one
heard at the time heard.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import enum
import importlib
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from alpha2.api.media import AudioBlock, AudioDecodeSession
from alpha2.gpu.errors import Error, InvalidInputError

__all__ = [
    "MISSING_EXTRA_REASON",
    "NO_AUDIO_FLAG_REASON",
    "NO_AUDIO_STREAM_REASON",
    "NO_DEVICE_REASON",
    "AudioOutput",
    "AudioTrack",
    "ClockKind",
    "MediaClock",
    "SystemClock",
    "audio_tracks",
    "check_audio_track",
    "open_clock",
    "track_at",
]

NO_AUDIO_FLAG_REASON = "--no-audio"
NO_AUDIO_STREAM_REASON = "the input has no audio stream"
MISSING_EXTRA_REASON = "sounddevice is not installed (pip install 'alpha2[audio]')"
NO_DEVICE_REASON = "no audio output device (PortAudio lists none)"

QUEUE_SECONDS = 0.5
"""Decoded audio the feeder keeps ahead of the device."""
MAX_VOLUME = 2.0
"""Upper bound of the volume factor (1.0 plays the samples as decoded)."""
SKIP_S = 0.05
"""How far past a packet that does not decode the sound goes on (doubled at each failure in a row)."""
MAX_SKIPS = 8
"""Failures in a row (12.75 s skipped in all) after which the sound is taken to have ended."""
SETTLE_S = 5.0
"""Longest wait for PortAudio's start before the player reports, and at exit."""


class ClockKind(enum.Enum):
    """What drives the media clock."""

    AUDIO = "audio"
    SYSTEM = "system"


@dataclass(frozen=True)
class AudioTrack:
    """One audio track of a file, as its container says."""

    number: int
    """Its place among the file's audio tracks, from 1 (mpv's ``--aid``)."""
    count: int
    """How many audio tracks the file has."""
    codec: str
    """FFmpeg's codec name (``aac``, ``opus``)."""
    channels: int
    """The stream's channel count (0 when not said)."""
    language: str | None = None
    """ISO 639 language tag (``ger``); None when untagged."""
    title: str | None = None
    """The stream's title tag."""

    def __post_init__(self) -> None:
        if not 1 <= self.number <= self.count:
            raise InvalidInputError(f"an audio track's number is 1 to {self.count}, got {self.number}")

    @property
    def stream_index(self) -> int:
        """Its index among the audio streams, as :class:`~alpha2.api.media.AudioDecodeSession` takes it."""
        return self.number - 1

    def label(self) -> str:
        """``2/2 ger 'Commentary' (aac, 2 ch)``: what the display and the stats say of it."""
        words = [f"{self.number}/{self.count}"]
        if self.language:
            words.append(self.language)
        if self.title:
            words.append(f"'{self.title}'")
        channels = f", {self.channels} ch" if self.channels else ""
        return " ".join(words) + f" ({self.codec or '?'}{channels})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "count": self.count,
            "codec": self.codec,
            "channels": self.channels,
            "language": self.language,
            "title": self.title,
            "label": self.label(),
        }


def audio_tracks(source: str) -> tuple[AudioTrack, ...]:
    """The audio tracks of ``source`` in the container's order (nothing decoded; a few milliseconds).

    Raises:
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """
    from alpha2.api.media import describe

    streams = [s for s in describe(source, decode=False).file.streams if s.kind.value == "audio"]
    return tuple(
        AudioTrack(
            number=number,
            count=len(streams),
            codec=s.codec,
            channels=int(s.channels or 0),
            language=s.language,
            title=s.title,
        )
        for number, s in enumerate(streams, 1)
    )


def track_at(tracks: Sequence[AudioTrack], stream_index: int | None) -> AudioTrack | None:
    """The track of ``stream_index`` (an index among the audio streams); None when out of range or None."""
    if stream_index is None or not 0 <= stream_index < len(tracks):
        return None
    return tracks[stream_index]


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def check_audio_track(sources: Sequence[str], aid: int) -> None:
    """Refuse ``--aid aid`` when no input of ``sources`` has that many audio tracks (each file of a
    playlist that has fewer plays its default track). Files are looked at in order until one has it;
    one that cannot be read is left to playback to report.

    Raises:
        InvalidInputError: no input has an ``aid``-th audio track; the message says what they have.
    """
    from alpha2.gpu.errors import Error

    held: list[tuple[str, tuple[AudioTrack, ...]]] = []
    for source in sources:
        try:
            tracks = audio_tracks(source)
        except Error:
            continue
        if len(tracks) >= aid:
            return
        held.append((os.path.basename(source), tracks))
    if not held:
        return  # none could be read: each says why when it plays
    most = max(len(tracks) for _, tracks in held)
    way_out = (
        "leave --aid out" if most == 0 else f"give 1{f' to {most}' if most > 1 else ''}, or leave --aid out"
    )
    if len(held) == 1:
        ((name, tracks),) = held
        listed = ", ".join(f"{t.number} {t.language or t.codec}" for t in tracks)
        what = f"{name} has {len(tracks)} audio track{'s' if len(tracks) > 1 else ''} ({listed})"
        if not tracks:
            what = f"{name} has no audio track"
    else:
        counts = ", ".join(f"{name} {len(tracks) or 'none'}" for name, tracks in held[:4])
        more = ", ..." if len(held) > 4 else ""
        what = f"no input has a {_ordinal(aid)} audio track ({counts}{more})"
    raise InvalidInputError(f"--aid {aid}: {what}; {way_out}")


class MediaClock(Protocol):
    """The interface the player schedules against (both clocks have it)."""

    kind: ClockKind
    reason: str
    stream_index: int | None
    """The audio track heard, by its index among the audio streams; None: none is."""

    def now(self) -> float: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def seek(self, seconds: float) -> None: ...
    def set_speed(self, speed: float) -> None: ...
    def set_volume(self, volume: float) -> None: ...
    def set_delay(self, seconds: float) -> None: ...
    def switch_track(self, stream_index: int) -> None: ...
    def toggle_mute(self) -> None: ...
    def level(self) -> float: ...
    def ended(self) -> bool: ...
    def as_dict(self) -> dict[str, Any]: ...
    def close(self) -> None: ...


class SystemClock:
    """Media time on ``time.perf_counter``: used without sound."""

    kind = ClockKind.SYSTEM
    stream_index: int | None = None
    """No track is heard."""

    def __init__(self, reason: str, start_s: float = 0.0, duration_s: float | None = None) -> None:
        self.reason = f"system clock: {reason}"
        self.delay_s = 0.0
        """The audio delay asked for (Ctrl+- / Ctrl++): nothing is heard, so it moves nothing."""
        self.paused = False
        self.volume = 1.0
        self.muted = False
        self.speed = 1.0
        self._duration = duration_s
        self._media = start_s
        self._wall = time.perf_counter()

    def now(self) -> float:
        """Media seconds now."""
        if self.paused:
            return self._media
        return self._media + (time.perf_counter() - self._wall) * self.speed

    def set_speed(self, speed: float) -> None:
        """Run at ``speed`` media seconds per second from now."""
        self._media, self._wall = self.now(), time.perf_counter()
        self.speed = float(speed)

    def pause(self) -> None:
        if not self.paused:
            self._media, self.paused = self.now(), True

    def resume(self) -> None:
        if self.paused:
            self._wall, self.paused = time.perf_counter(), False

    def seek(self, seconds: float) -> None:
        self._media, self._wall = max(0.0, seconds), time.perf_counter()

    def set_volume(self, volume: float) -> None:
        self.volume = min(max(volume, 0.0), MAX_VOLUME)

    def set_delay(self, seconds: float) -> None:
        """Kept, and moving nothing: no sound to put later or earlier."""
        self.delay_s = float(seconds)

    def switch_track(self, stream_index: int) -> None:
        """Nothing is heard: nothing to switch."""

    def toggle_mute(self) -> None:
        self.muted = not self.muted

    def level(self) -> float:
        return 0.0

    def ended(self) -> bool:
        return self._duration is not None and self.now() >= self._duration

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "reason": self.reason}

    def close(self) -> None:
        """Nothing is held (idempotent)."""


class AudioOutput:
    """Sound through a ``sounddevice.OutputStream``; its clock is the master clock.

    Args:
        sd: The imported ``sounddevice`` module.
        decoder: An open audio decode session at the device's rate and channel count (owned from here on).
        device_name: For the reason line.
        start_s: Media time of the first sample (the decoder is seeked there when > 0).
    """

    kind = ClockKind.AUDIO

    def __init__(self, sd: Any, decoder: AudioDecodeSession, device_name: str, start_s: float = 0.0) -> None:
        self._decoder = decoder
        self._next_decoder: AudioDecodeSession | None = None  # switch_track's, taken by the feeder
        self.stream_index: int | None = decoder.info.stream_index
        """The audio track heard (:meth:`switch_track`), by its index among the audio streams."""
        self.rate = decoder.sample_rate
        self.channels = decoder.channels
        self.volume = 1.0
        self.muted = False
        self.paused = False
        self.delay_s = 0.0
        """How much later the sound is heard than the picture it goes with (:meth:`set_delay`, mpv's
        audio-delay): :meth:`now`, the picture's time, is the time heard plus this."""
        self.speed = decoder.tempo
        """Media seconds per second (:meth:`set_speed`: FFmpeg's atempo keeps the pitch)."""
        self.underruns = 0
        self.decode_errors = 0
        """Packets (or seeks) of the sound that failed and were skipped (a damaged file)."""
        self._damaged_before = 0  # packets the decoders of earlier tracks (switch_track) left out
        self._cond = threading.Condition()
        self._queue: collections.deque[AudioBlock] = collections.deque()
        self._queued = 0  # sample frames in _queue
        self._head = 0  # frames of _queue[0] already played
        self._eof = False
        self._stop = False
        self._seek_to: float | None = start_s if start_s > 0 else None
        self._generation = 0
        self._position = start_s  # media time of the next sample handed to the device
        self._data_end = start_s  # media time just after the last decoded sample handed over
        self._floor = start_s  # the clock never reads below this (start, seek or pause point)
        self._synced = False  # a sample of the current generation has reached the device
        # pts, perf, latency, advanced_s, tempo (media seconds per second) of the last samples handed over
        self._anchor: tuple[float, float, float, float, float] | None = None
        self._last = start_s
        self._level = 0.0
        self._latency = 0.0
        self._feeder = threading.Thread(target=self._feed, name="alpha2 audio feeder", daemon=True)
        self._feeder.start()
        self._stream: Any = None
        try:
            self._stream = sd.OutputStream(
                samplerate=self.rate, channels=self.channels, dtype="float32", callback=self._callback
            )
            self._stream.start()
        except BaseException:
            self.close()
            raise
        self._latency = float(self._stream.latency)
        self.reason = (
            f"audio clock: {device_name}, {self.rate} Hz, {self.channels} ch, "
            f"output latency {self._latency * 1000:.1f} ms"
        )

    # -- the feeder thread ----------------------------------------------------------------------------

    def _feed(self) -> None:
        capacity = int(QUEUE_SECONDS * self.rate)
        failures = 0  # decode errors in a row
        fed_end = self._position  # media time just after the last block queued
        while True:
            with self._cond:
                while not self._stop and self._seek_to is None and (self._eof or self._queued >= capacity):
                    self._cond.wait()
                if self._stop:
                    return
                seek_to, self._seek_to = self._seek_to, None
                switch, self._next_decoder = self._next_decoder, None
                generation = self._generation
                speed = self.speed
            if switch is not None:
                # Taken here, between two blocks: this thread is the decoder's only user while it plays.
                old, self._decoder = self._decoder, switch
                self._damaged_before += old.damaged_packets
                old.close()
            lead: AudioBlock | None = None
            try:
                if seek_to is not None:
                    fed_end = seek_to
                    if speed != self._decoder.tempo:
                        self._decoder.set_tempo(speed)
                    self._decoder.seek(max(0.0, seek_to))
                    if seek_to < 0:  # an audio delay at the start: silence until the sound's first sample
                        silence = np.zeros((round(-seek_to * self.rate / speed), self.channels), np.float32)
                        lead = AudioBlock(silence, seek_to, self.rate, speed)
                block = self._decoder.next_block()
            except Error:
                # A damaged file: the sound goes on a little past the packet, as mpv's does (this thread
                # died here, and the clock, waiting for samples, held the picture still for good).
                failures += 1
                self.decode_errors += 1
                with self._cond:
                    if generation == self._generation and self._seek_to is None:
                        if failures > MAX_SKIPS:
                            self._eof = True  # the clock runs on in silence to the picture's end
                        else:
                            self._seek_to = fed_end + SKIP_S * 2 ** (failures - 1)
                continue
            failures = 0
            with self._cond:
                if generation != self._generation or self._seek_to is not None:
                    continue  # a seek came while decoding: this block is from before it
                if lead is not None and lead.frames:
                    self._queue.append(lead)
                    self._queued += lead.frames
                if block is None:
                    self._eof = True
                else:
                    self._queue.append(block)
                    self._queued += block.frames
                    fed_end = block.pts_seconds + block.frames * block.tempo / self.rate

    # -- the PortAudio callback -----------------------------------------------------------------------

    def _callback(self, outdata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        now = time.perf_counter()
        latency = float(time_info.outputBufferDacTime - time_info.currentTime)
        if not 0.0 <= latency < 1.0:  # some host APIs report no DAC time: use the stream's figure
            latency = self._latency
        with self._cond:
            written = 0
            start_pts: float | None = None
            tempo = self.speed
            if not self.paused:
                while written < frames and self._queue:
                    block = self._queue[0]
                    if start_pts is None:
                        tempo = block.tempo
                        start_pts = block.pts_seconds + self._head * tempo / self.rate
                    take = min(frames - written, block.frames - self._head)
                    outdata[written : written + take] = block.samples[self._head : self._head + take]
                    written += take
                    self._head += take
                    self._queued -= take
                    if self._head >= block.frames:
                        self._queue.popleft()
                        self._head = 0
            outdata[written:] = 0.0
            if start_pts is not None:
                self._synced = True
                self._position = self._data_end = start_pts + written * tempo / self.rate
            advanced = written
            if not self.paused and written < frames:
                if self._eof and not self._queue and self._seek_to is None:
                    # Past the end of the sound: silence keeps the clock going, also where a seek or a
                    # resume lands there (no sample of that generation will ever sync it: the picture
                    # froze on such a seek, with the clock held at the seek's point).
                    advanced = frames
                    if start_pts is None:
                        start_pts = self._position
                    self._position += (frames - written) * tempo / self.rate
                    self._synced = True
                elif self._synced:
                    self.underruns += 1
            if start_pts is not None:
                self._anchor = (start_pts, now, latency, advanced / self.rate, tempo)
            self._cond.notify_all()
            gain = 0.0 if self.muted else self.volume
        if written:
            self._level = float(np.sqrt(np.mean(np.square(outdata[:written]))))
            if gain != 1.0:
                outdata[:written] *= gain

    # -- the clock ------------------------------------------------------------------------------------

    @property
    def duration_s(self) -> float | None:
        """How long the track heard lasts, as its file says (None when it does not): a video's sound
        may run on after its last frame."""
        return self._decoder.info.duration_seconds

    def now(self) -> float:
        """Media seconds now, the picture's: what the listener hears plus the audio delay."""
        return self._heard() + self.delay_s

    def _heard(self) -> float:
        """The media time the listener hears now."""
        with self._cond:
            if self.paused or not self._synced or self._anchor is None:
                return self._last if self.paused else self._floor
            pts, at, latency, advanced, tempo = self._anchor
            # Interpolate between callbacks, never past what was handed over (an underrun holds the clock).
            elapsed = min(time.perf_counter() - at, advanced + 0.002)
            value = max(pts + (elapsed - latency) * tempo, self._floor, self._last)
            self._last = value
            return value

    def pause(self) -> None:
        if self.paused:
            return
        now = self._heard()
        with self._cond:
            self._last = self._floor = now
            self.paused = True

    def resume(self) -> None:
        with self._cond:
            if self.paused:
                self.paused = False
                self._anchor = None
                self._synced = False  # resync on the next samples handed over

    def seek(self, seconds: float) -> None:
        """Flush what is queued and resync with the picture at ``seconds`` (the sound heard from
        ``seconds`` less the audio delay)."""
        with self._cond:
            self._seek_locked(seconds - self.delay_s)

    def _seek_locked(self, seconds: float) -> None:
        """:meth:`seek`, the lock held; ``seconds`` is the time heard (before 0 with an audio delay at
        the start: silence is heard first)."""
        target = max(min(0.0, -self.delay_s), seconds)
        self._generation += 1
        self._queue.clear()
        self._queued = self._head = 0
        self._eof = False
        self._seek_to = target
        self._position = self._data_end = self._floor = self._last = target
        self._synced = False
        self._anchor = None
        self._cond.notify_all()

    def set_speed(self, speed: float) -> None:
        """Play at ``speed`` (0.25 to 4) from the time heard now, the pitch kept: what is queued is
        decoded again at the new tempo (a seek to now)."""
        if speed == self.speed:
            return
        now = self.now()
        with self._cond:
            self.speed = float(speed)
        self.seek(now)

    def set_volume(self, volume: float) -> None:
        self.volume = min(max(volume, 0.0), MAX_VOLUME)

    def set_delay(self, seconds: float) -> None:
        """Hear the sound ``seconds`` after the picture it goes with (negative: before), as mpv's
        audio-delay: the picture's time runs on, and the sound is taken up again from that time less the
        delay (a seek of the sound alone)."""
        if seconds == self.delay_s:
            return
        now = self.now()
        with self._cond:
            self.delay_s = float(seconds)
            self._seek_locked(now - self.delay_s)

    def switch_track(self, stream_index: int) -> None:
        """Hear the audio track of ``stream_index`` (an index among the audio streams) from the next sample
        handed to the device: what the device holds plays out, what is queued of the old track is dropped,
        and the feeder decodes the new one from there, so the clock runs on without a jump (it holds, as
        in an underrun, for the few milliseconds until the new samples come). Its decoder opens here (a
        few milliseconds), at the device's rate, channels and speed.

        Raises:
            InvalidInputError: no such audio stream; the track heard is kept.
            MediaFormatError: it does not open; the track heard is kept.
        """
        if stream_index == self.stream_index:
            return
        decoder = AudioDecodeSession(
            self._decoder.source,
            sample_rate=self.rate,
            channels=self.channels,
            stream_index=stream_index,
            tempo=self.speed,
        )
        with self._cond:  # the decoder and where it starts together: no block of it from its start
            unused, self._next_decoder = self._next_decoder, decoder
            self.stream_index = decoder.info.stream_index
            self._generation += 1
            self._queue.clear()
            self._queued = self._head = 0
            self._eof = False
            self._seek_to = self._data_end = self._position
            self._cond.notify_all()
        if unused is not None:  # switched again before the feeder took the last one
            unused.close()

    def toggle_mute(self) -> None:
        self.muted = not self.muted

    def level(self) -> float:
        """RMS of the samples last handed to the device (before volume)."""
        return self._level

    @property
    def damaged_packets(self) -> int:
        """Packets of the sound its decoders refused and left out, their gaps filled with silence (every
        track heard): a damaged file, said in the player's report as the video's are."""
        return self._damaged_before + self._decoder.damaged_packets

    def ended(self) -> bool:
        """Every sample has been heard."""
        with self._cond:
            end = self._data_end
            done = self._eof and not self._queue and self._seek_to is None
        return done and self._heard() >= end + self._latency * self.speed

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "reason": self.reason,
            "sample_rate": self.rate,
            "channels": self.channels,
            "output_latency_ms": round(self._latency * 1000, 3),
            "underruns": self.underruns,
            "decode_errors": self.decode_errors,
            "damaged_packets": self.damaged_packets,
            "stream_index": self.stream_index,
        }

    def close(self) -> None:
        """Stop the stream and the feeder, close the decoder (idempotent)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.abort()
            stream.close()
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._feeder.is_alive() and self._feeder is not threading.current_thread():
            self._feeder.join(timeout=5)
        with self._cond:
            pending, self._next_decoder = self._next_decoder, None
        if pending is not None:
            pending.close()
        self._decoder.close()


_preloaded: threading.Thread | None = None


def preload_sound() -> None:
    """Load sounddevice (and PortAudio, which looks for the sound devices: a tenth of a second or more) on
    a thread now, so that the sound starts without that wait once the first frame is up. Idempotent; an
    error is left for :func:`open_clock` to meet and report."""
    global _preloaded
    if _preloaded is not None:
        return

    def load() -> None:
        try:
            importlib.import_module("sounddevice").query_devices(kind="output")
        except Exception:
            pass  # open_clock meets it again and says why there is no sound

    _preloaded = threading.Thread(target=load, name="alpha2 sound preload", daemon=True)
    atexit.register(_end_sound_at_exit)
    _preloaded.start()


def settle_sound(timeout_s: float = SETTLE_S) -> None:
    """Wait (bounded) for :func:`preload_sound`'s thread to be done. While PortAudio starts, sounddevice
    points the process's stderr at /dev/null (its devices' chatter): an error said meanwhile was lost.
    The player calls this before it reports and returns."""
    thread = _preloaded
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout_s)


def _end_sound_at_exit() -> None:
    """At exit, let a PortAudio start still under way finish, then end PortAudio (sounddevice's own exit
    handler, run again: it ran, if at all, while PortAudio was not up yet). A process that left while
    the start was under way, as a playlist none of whose files plays does, crashed: the interpreter
    unloaded the library under PortAudio's JACK thread."""
    settle_sound()
    module = sys.modules.get("sounddevice")
    handler = getattr(module, "_exit_handler", None)
    if callable(handler):
        with contextlib.suppress(Exception):
            handler()


def _import_sounddevice() -> Any:
    if _preloaded is not None:
        _preloaded.join()
    return importlib.import_module("sounddevice")


def open_clock(
    source: str,
    *,
    want_audio: bool,
    has_audio: bool,
    start_s: float = 0.0,
    duration_s: float | None = None,
    stream_index: int | None = None,
    importer: Any = _import_sounddevice,
) -> MediaClock:
    """The audio clock when sound can be played, else the system clock; the result's ``reason`` says why.

    ``stream_index``: the audio track to hear, by its index among the audio streams; None: the one FFmpeg
    ranks best. ``importer`` returns the sounddevice module (tests pass one that raises).
    """
    if not want_audio:
        return SystemClock(NO_AUDIO_FLAG_REASON, start_s, duration_s)
    if not has_audio:
        return SystemClock(NO_AUDIO_STREAM_REASON, start_s, duration_s)
    try:
        sd = importer()
    except ImportError:
        return SystemClock(MISSING_EXTRA_REASON, start_s, duration_s)
    except OSError as exc:  # sounddevice raises OSError when libportaudio is absent
        return SystemClock(
            f"PortAudio is not usable (apt-get install libportaudio2): {exc}", start_s, duration_s
        )
    try:
        info = sd.query_devices(kind="output")
    except Exception:
        return SystemClock(NO_DEVICE_REASON, start_s, duration_s)
    if not info or int(info.get("max_output_channels", 0)) < 1:
        return SystemClock(NO_DEVICE_REASON, start_s, duration_s)
    rate = int(info.get("default_samplerate") or 48000)
    channels = min(2, int(info["max_output_channels"]))
    decoder = AudioDecodeSession(source, sample_rate=rate, channels=channels, stream_index=stream_index)
    try:
        hostapi = sd.query_hostapis(int(info["hostapi"]))["name"]
        return AudioOutput(sd, decoder, f"{info['name']} ({hostapi})", start_s)
    except Exception as exc:
        decoder.close()
        return SystemClock(f"the audio output could not be opened: {exc}", start_s, duration_s)
