"""The player's volume and mute keys change what the sound device is handed, and an audio-only file
plays in a window whose colour follows the sound's level."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from alpha2.apps import player, window
from alpha2.apps.audio_out import AudioOutput
from alpha2.apps.avsync import AVScheduler
from alpha2.apps.player import PlayOptions
from alpha2.ffmpeg_bridge import AudioDecodeSession
from tests.media import make_audio_only


class _RecordingStream:
    """Stands in for ``sounddevice.OutputStream`` so the test drives the callback itself and sees the
    samples the device would play. The real stream is tested in test_audio.py."""

    latency = 0.01

    def __init__(self, *, samplerate: int, channels: int, dtype: str, callback: Any) -> None:
        self.callback = callback
        self.channels = channels

    def start(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass

    def play(self, frames: int) -> np.ndarray:
        out = np.full((frames, self.channels), np.nan, np.float32)
        self.callback(out, frames, SimpleNamespace(outputBufferDacTime=0.0, currentTime=0.0), None)
        return out


def _output(tone: str) -> tuple[AudioOutput, _RecordingStream]:
    streams: list[_RecordingStream] = []

    def make(**kwargs: Any) -> _RecordingStream:
        streams.append(_RecordingStream(**kwargs))
        return streams[-1]

    decoder = AudioDecodeSession(tone, sample_rate=48000, channels=2)
    output = AudioOutput(SimpleNamespace(OutputStream=make), decoder, "recording")
    deadline = time.monotonic() + 5
    while output._queued < 4096 and time.monotonic() < deadline:  # the feeder thread decodes ahead
        time.sleep(0.01)
    return output, streams[0]


def test_volume_and_mute_keys_scale_what_the_device_plays(tmp_path: Path) -> None:
    tone = make_audio_only(tmp_path / "tone.mka", seconds=1.0)
    output, stream = _output(tone)
    keys = window._Keys()
    keys.clock, keys.scheduler, keys.canvas = output, AVScheduler(), SimpleNamespace(close=lambda: None)
    try:
        full = stream.play(1024)
        assert not np.isnan(full).any()
        rms = float(np.sqrt(np.mean(np.square(full))))
        assert rms > 0.05  # the tone is there

        for _ in range(5):
            assert keys._common_key("9")  # five steps down
        assert output.volume == pytest.approx(1.0 - 5 * window.VOLUME_STEP)
        quieter = stream.play(1024)
        assert float(np.sqrt(np.mean(np.square(quieter)))) == pytest.approx(rms * output.volume, rel=0.05)

        assert keys._common_key("m")
        assert np.all(stream.play(1024) == 0.0)  # muted: silence, and the clock still runs
        assert keys._common_key("M")
        assert float(np.sqrt(np.mean(np.square(stream.play(1024))))) > 0.0

        for _ in range(60):  # 2 % a step
            keys._common_key("0")
        assert output.volume == 2.0  # bounded above
        for _ in range(110):
            keys._common_key("9")
        assert output.volume == 0.0  # and below
        assert not keys._common_key("x")  # not a key of ours
    finally:
        output.close()


@pytest.mark.vulkan
def test_audio_only_window_follows_the_level(audio_server: str, tmp_path: Path) -> None:
    """The audio-only window on rendercanvas's offscreen canvas, with a loop that draws at 60 Hz."""
    pytest.importorskip("rendercanvas")
    import rendercanvas.offscreen as offscreen

    tone = make_audio_only(tmp_path / "tone.mka", seconds=0.5)
    run = player.Player(tone, PlayOptions(), player.pipeline.Progress())
    playback = window.AudioOnlyPlayback(run)
    colours: list[tuple[float, ...]] = []
    clear = window._clear

    def recording_clear(encoder: Any, texture: Any, colour: tuple[float, ...]) -> None:
        colours.append(colour)
        clear(encoder, texture, colour)

    class Loop:
        @staticmethod
        def run() -> None:
            deadline = time.monotonic() + 5
            while not playback.canvas.get_closed() and time.monotonic() < deadline:
                playback.canvas.draw()
                time.sleep(1 / 60)

    backend = types.ModuleType("alpha2_test_canvas")
    backend.RenderCanvas = offscreen.RenderCanvas  # type: ignore[attr-defined]
    backend.loop = Loop  # type: ignore[attr-defined]
    sys.modules[backend.__name__] = backend
    monkey = pytest.MonkeyPatch()
    monkey.setattr(window, "_clear", recording_clear)
    try:
        stats = playback.run_window(backend.__name__)
    finally:
        monkey.undo()
        del sys.modules[backend.__name__]
        run.close()
    assert stats.mode == "window" and stats.clock["kind"] == "audio", stats.clock
    assert stats.frames == len(colours) >= 10
    # The tone is loud: once it plays the window lights up; it ends when the sound has been heard.
    assert max(c[2] for c in colours) > 0.2
    assert stats.audio_seconds is not None and 0.45 <= stats.audio_seconds <= 0.7


@pytest.mark.parametrize("speed", [0.5, 2.0])
def test_speed_keeps_the_pitch_and_moves_the_clock(tmp_path: Path, speed: float) -> None:
    """``[`` / ``]``: FFmpeg's atempo plays the 440 Hz tone at another speed without changing its pitch,
    and the media clock advances ``speed`` seconds per second played."""
    tone = make_audio_only(tmp_path / "tone.mka", seconds=3.0)
    output, stream = _output(tone)
    try:
        stream.play(4800)
        output.set_speed(speed)
        assert output.speed == speed
        deadline = time.monotonic() + 5
        while output._queued < 19200 and time.monotonic() < deadline:
            time.sleep(0.01)
        stream.play(2400)
        before = output._position
        played = stream.play(9600)  # 0.2 s through the device
        assert not np.isnan(played).any()
        assert output._position - before == pytest.approx(0.2 * speed, rel=0.02)
        spectrum = np.abs(np.fft.rfft(played[:, 0] * np.hanning(len(played))))
        peak_hz = float(np.argmax(spectrum)) * 48000 / len(played)
        assert peak_hz == pytest.approx(440, abs=10), peak_hz
    finally:
        output.close()


def test_the_system_clock_runs_at_the_speed() -> None:
    from alpha2.apps.audio_out import SystemClock

    clock = SystemClock("test")
    clock.set_speed(4.0)
    start = clock.now()
    time.sleep(0.1)
    assert clock.now() - start == pytest.approx(0.4, abs=0.06)


@pytest.mark.vulkan
def test_speed_keys_in_the_window_with_sound(audio_server: str, tmp_path: Path) -> None:
    """] and [ in the window: the sound's clock runs at the speed and the frames keep in step with it."""
    pytest.importorskip("rendercanvas")
    from alpha2.apps.window import WindowPlayback
    from alpha2.gpu.geometry import Size
    from tests.media import make_av_clip

    clip = make_av_clip(tmp_path / "av.mp4", seconds=8.0)
    run = player.Player(clip, PlayOptions(), player.pipeline.Progress())
    playback = WindowPlayback(run)

    def drive(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end and not playback.canvas.get_closed():
            playback.canvas.draw()
            time.sleep(1 / 60)

    try:
        playback.open("rendercanvas.offscreen", size=Size(160, 90))
        drive(0.3)
        assert playback.clock is not None and playback.clock.kind.value == "audio"
        for key, speed in (("}", 2.0), ("]", 2.2), ("Backspace", 1.0), ("{", 0.5)):
            playback._on_key({"key": key})
            drive(0.2)
            rates = []
            for _ in range(3):  # a window of 0.5 s; another where the loaded machine starved the sound
                wall0, media0 = time.perf_counter(), playback.clock.now()
                drive(0.5)
                rates.append((playback.clock.now() - media0) / (time.perf_counter() - wall0))
                if rates[-1] == pytest.approx(speed, rel=0.15):
                    break
            assert rates[-1] == pytest.approx(speed, rel=0.15), (key, rates)
    finally:
        stats = playback.finish(1.0)
        run.close()
    assert stats.sync is not None
    for segment in stats.sync["segments"][1:]:
        assert segment["label"] == "speed" and segment["mean_abs_ms"] <= 1000 / 30, segment


@pytest.mark.vulkan
def test_audio_only_window_shows_the_time_and_seeks(audio_server: str, tmp_path: Path) -> None:
    """The window of a file without video shows the time and the bar all the time, the pause sign and
    the key help; the arrows and a click on the bar seek, as in the video window (it had only the
    level's colour, and the arrows did nothing)."""
    pytest.importorskip("rendercanvas")
    from alpha2.gpu.geometry import Size

    tone = make_audio_only(tmp_path / "tone.mka", seconds=3.0)
    run = player.Player(tone, PlayOptions(), player.pipeline.Progress())
    playback = window.AudioOnlyPlayback(run)
    try:
        playback.open("rendercanvas.offscreen")
        playback.canvas.draw()
        size = Size(*(int(v) for v in playback.canvas.get_physical_size()))
        view = window.OsdView(position_s=playback.clock.now(), duration_s=playback.duration_s)
        keys = {layer.key for layer in playback.osd.layers(size, view)}
        assert {"bar", "time"} <= keys  # always, not only after a mouse move
        assert playback.duration_s == pytest.approx(3.0, abs=0.1)
        playback._on_key({"key": "ArrowRight"})
        assert playback.clock.now() == pytest.approx(5.0 if playback.duration_s > 5 else 2.95, abs=0.3)
        bar = playback.osd.bar_rect(size)
        playback._on_pointer_down({"x": bar.x + bar.width * 0.25, "y": bar.y + bar.height / 2, "button": 1})
        assert playback.clock.now() == pytest.approx(0.75, abs=0.3)
        playback._on_key({"key": " "})
        assert playback.clock.paused
        playback._on_key({"key": "?"})
        assert playback.osd.show_help
        playback.canvas.draw()  # paused: the window stays, with the help over it
        assert not playback.canvas.get_closed()
        playback._on_key({"key": "q"})
        assert playback.canvas.get_closed()
    finally:
        playback._finish(1.0)
        run.close()


def _settle(output: AudioOutput) -> None:
    """Wait for the feeder to have acted on the last seek (decoded, or met the end)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with output._cond:
            if output._seek_to is None and (output._eof or output._queued):
                return
        time.sleep(0.005)


def test_the_clock_runs_on_after_a_seek_or_resume_past_the_end_of_the_sound(tmp_path: Path) -> None:
    # Found by a person's pass: video longer than its sound froze for good on a seek (or a pause and
    # resume) past the sound's end: the clock waited for a sample to sync on, and none came.
    tone = make_audio_only(tmp_path / "tone.mka", seconds=1.0)
    output, stream = _output(tone)
    try:
        output.seek(5.0)
        _settle(output)
        before = output.now()
        for _ in range(10):
            assert np.all(stream.play(480) == 0.0)  # silence past the end ...
        time.sleep(0.05)
        assert output.now() > before  # ... and the clock goes on
        time.sleep(0.05)
        assert output.ended()
        output.pause()
        stream.play(480)
        paused_at = output.now()
        output.resume()
        for _ in range(5):
            stream.play(480)
        time.sleep(0.03)
        assert output.now() > paused_at and output.underruns == 0
    finally:
        output.close()


def test_sound_started_on_the_preload_thread_is_waited_for_and_ended_at_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found by a person's pass: a playlist none of whose files plays left while PortAudio was still
    # starting on the preload thread: its error went to /dev/null (sounddevice silences stderr while it
    # starts) and the process crashed at exit (PortAudio's JACK thread ran on in an unloaded library).
    from alpha2.apps import audio_out

    events: list[str] = []

    def slow_start(kind: str) -> None:
        time.sleep(0.2)
        events.append("started")

    fake = types.ModuleType("sounddevice")
    fake.query_devices = slow_start  # type: ignore[attr-defined]
    fake._exit_handler = lambda: events.append("ended")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    monkeypatch.setattr(audio_out, "_preloaded", None)
    registered: list[Any] = []
    monkeypatch.setattr(audio_out.atexit, "register", registered.append)
    audio_out.preload_sound()
    audio_out.settle_sound()
    assert events == ["started"]  # the player reports only after PortAudio's start
    assert registered == [audio_out._end_sound_at_exit]
    registered[0]()
    assert events == ["started", "ended"]  # and PortAudio is ended at exit, after its start


class _DamagedPacket:
    """An audio decode session whose ``fail_at``-th block does not decode (a damaged packet), as FFmpeg
    says of a broken file's AAC ('Invalid data found when processing input'); the rest decodes."""

    def __init__(self, decoder: AudioDecodeSession, fail_at: int) -> None:
        self._decoder = decoder
        self._blocks = 0
        self.fail_at = fail_at

    def __getattr__(self, name: str) -> Any:
        return getattr(self._decoder, name)

    def next_block(self) -> Any:
        from alpha2.ffmpeg_bridge.errors import MediaFormatError

        self._blocks += 1
        if self._blocks == self.fail_at:
            raise MediaFormatError("decoding audio: Invalid data found when processing input")
        return self._decoder.next_block()


def test_the_sound_goes_on_past_a_packet_that_does_not_decode(tmp_path: Path) -> None:
    # Found by an outside pass: a file damaged in its middle froze the picture there for good (mpv plays
    # on): the feeder thread died on the packet's error, with a traceback, and the clock waited for
    # samples that never came.
    tone = make_audio_only(tmp_path / "tone.mka", seconds=2.0)
    streams: list[_RecordingStream] = []

    def make(**kwargs: Any) -> _RecordingStream:
        streams.append(_RecordingStream(**kwargs))
        return streams[-1]

    decoder = _DamagedPacket(AudioDecodeSession(tone, sample_rate=48000, channels=2), fail_at=20)
    output = AudioOutput(SimpleNamespace(OutputStream=make), decoder, "recording")  # type: ignore[arg-type]
    try:
        deadline = time.monotonic() + 10
        while not output.ended() and time.monotonic() < deadline:
            streams[0].play(4800)
            time.sleep(0.005)
        assert output.ended() and output.now() > 1.9  # to the end of the sound, not stuck before it
        assert output.decode_errors == 1 and output.as_dict()["decode_errors"] == 1
    finally:
        output.close()
