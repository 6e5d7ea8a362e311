"""Choosing the audio track (``--aid N``, as mpv numbers them) and switching it while playing (``#``):
the sound heard changes at the time heard, the display says which track, the stats record it, and a
track the file does not have is one line before anything plays."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api import pipeline
from alpha2.api.playback import Player, PlayOptions, PlayStats
from alpha2.apps import window
from alpha2.apps.audio_out import NO_DEVICE_REASON, AudioOutput, SystemClock, audio_tracks
from alpha2.apps.avsync import AVScheduler
from alpha2.apps.keys import PLAYER_BINDINGS, key_name
from alpha2.apps.osd import Osd
from alpha2.ffmpeg_bridge import AudioDecodeSession
from alpha2.gpu.errors import InvalidInputError
from tests.media import ENCODERS, make_audio_only

RATE = 48000
TONES = {"eng": 440.0, "ger": 880.0}
"""The language of each track and the tone it plays: which track is heard is told by its pitch."""


def make_tracks(path: Path, seconds: float = 3.0, *, video: bool = True) -> str:
    """An MKV (or MKA, ``video=False``) of two AAC tracks, eng at 440 Hz and ger at 880 Hz, after a
    small H.264 video of 30 fps."""
    where = os.fspath(path)
    with av.open(where, "w") as out:
        stream: Any = None
        if video:
            name, options = ENCODERS["h264"]
            stream = out.add_stream(name, rate=30, options=dict(options))
            stream.width, stream.height, stream.pix_fmt = 160, 90, "yuv420p"
        tracks: list[tuple[Any, float]] = []
        for language, hz in TONES.items():  # every stream before the first packet
            astream: Any = out.add_stream("aac", rate=RATE)
            astream.layout = "stereo"
            astream.metadata["language"] = language
            tracks.append((astream, hz))
        if stream is not None:
            for i in range(round(seconds * 30)):
                rgb = np.full((90, 160, 3), (i * 8) % 256, np.uint8)
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
                frame.pts = i
                for packet in stream.encode(frame):
                    out.mux(packet)
            for packet in stream.encode(None):
                out.mux(packet)
        total = int(seconds * RATE)
        for astream, hz in tracks:
            tone = (0.3 * np.sin(2 * np.pi * hz * np.arange(total) / RATE)).astype(np.float32)
            chunk = astream.codec_context.frame_size or 1024
            for start in range(0, total, chunk):
                part = np.pad(tone[start : start + chunk], (0, max(0, start + chunk - total)))
                aframe = av.AudioFrame.from_ndarray(np.stack([part, part]), format="fltp", layout="stereo")
                aframe.sample_rate = RATE
                aframe.pts = start
                for packet in astream.encode(aframe):
                    out.mux(packet)
            for packet in astream.encode(None):
                out.mux(packet)
    return where


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_tracks(tmp_path_factory.mktemp("tracks") / "two.mkv")


@pytest.fixture(scope="module")
def two_sound(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_tracks(tmp_path_factory.mktemp("tracks") / "two.mka", video=False)


class _RecordingStream:
    """Stands in for ``sounddevice.OutputStream``: the test runs the callback and sees what the device
    would play (as in test_audio_keys.py)."""

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


def _output(source: str) -> tuple[AudioOutput, _RecordingStream]:
    streams: list[_RecordingStream] = []

    def make(**kwargs: Any) -> _RecordingStream:
        streams.append(_RecordingStream(**kwargs))
        return streams[-1]

    decoder = AudioDecodeSession(source, sample_rate=RATE, channels=2)
    return AudioOutput(SimpleNamespace(OutputStream=make), decoder, "recording"), streams[0]


def _settled(output: AudioOutput, frames: int = 9600) -> None:
    """Wait for the feeder to have queued ``frames`` of the current generation."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with output._cond:
            if output._seek_to is None and output._next_decoder is None and output._queued >= frames:
                return
        time.sleep(0.005)
    raise AssertionError("the feeder queued nothing")


def _pitch(samples: np.ndarray) -> float:
    assert not np.isnan(samples).any()
    spectrum = np.abs(np.fft.rfft(samples[:, 0] * np.hanning(len(samples))))
    return float(np.argmax(spectrum)) * RATE / len(samples)


def test_the_tracks_are_listed_as_mpv_numbers_them(two: str) -> None:
    tracks = audio_tracks(two)
    assert [t.label() for t in tracks] == ["1/2 eng (aac, 2 ch)", "2/2 ger (aac, 2 ch)"]
    assert [t.stream_index for t in tracks] == [0, 1]
    assert tracks[1].as_dict()["label"] == "2/2 ger (aac, 2 ch)"


def test_switching_plays_the_other_track_on_from_what_the_device_holds(two_sound: str) -> None:
    output, stream = _output(two_sound)
    try:
        assert output.stream_index == 0
        _settled(output)
        assert _pitch(stream.play(9600)) == pytest.approx(440, abs=10)
        stream.play(9600)
        heard = output._position  # 0.4 s handed to the device, which plays them out
        output.switch_track(1)
        assert output.stream_index == 1 and output.as_dict()["stream_index"] == 1
        _settled(output)
        with output._cond:
            first = output._queue[0].pts_seconds
        assert first == pytest.approx(heard, abs=0.002)  # on from there, not from the start
        assert _pitch(stream.play(9600)) == pytest.approx(880, abs=10)
        assert output._position == pytest.approx(heard + 0.2, abs=0.002)
        output.switch_track(0)  # and back
        _settled(output)
        assert _pitch(stream.play(9600)) == pytest.approx(440, abs=10)
        assert output._position == pytest.approx(heard + 0.4, abs=0.002)
        assert output.underruns == 0
    finally:
        output.close()


def test_a_switch_taken_twice_before_the_feeder_keeps_the_last(two_sound: str) -> None:
    output, stream = _output(two_sound)
    try:
        _settled(output)
        with output._cond:  # the feeder waits for the lock: the three come before it takes one
            output.switch_track(1)
            output.switch_track(0)
            output.switch_track(1)
        _settled(output)
        assert output.stream_index == 1
        assert _pitch(stream.play(9600)) == pytest.approx(880, abs=10)
    finally:
        output.close()
    assert output._next_decoder is None


def _keys(source: str, clock: Any, options: PlayOptions | None = None) -> Any:
    keys = window._Keys()
    keys.player = SimpleNamespace(source=source, options=options or PlayOptions(), stats=PlayStats(source))
    keys.clock, keys.scheduler, keys.osd = clock, AVScheduler(), Osd()
    keys.canvas = SimpleNamespace(close=lambda: None)
    return keys


def test_the_hash_key_cycles_the_tracks_and_says_which(two_sound: str, tmp_path: Path) -> None:
    assert key_name({"key": "3", "modifiers": ("Shift",)}) == "#"  # glfw: the key under the glyph
    assert key_name({"key": "3", "modifiers": ()}) == "3"
    assert any("#" in b.keys and "audio track" in b.action for b in PLAYER_BINDINGS)
    output, stream = _output(two_sound)
    keys = _keys(two_sound, output)
    try:
        assert keys._common_key("#")
        assert output.stream_index == 1
        assert keys.osd.current_message == "Audio: 2/2 ger (aac, 2 ch)"
        assert keys.player.stats.audio_track["label"] == "2/2 ger (aac, 2 ch)"
        assert keys.track_text() == "2/2 ger (aac, 2 ch)"
        _settled(output)
        assert _pitch(stream.play(9600)) == pytest.approx(880, abs=10)
        # After the last track, none (as mpv's 1, 2, no, 1): the system clock runs on from the time heard.
        heard = output.now()
        keys._common_key("#")
        assert keys.osd.current_message == "Audio: off"
        assert isinstance(keys.clock, SystemClock) and keys.clock.now() == pytest.approx(heard, abs=0.05)
        assert output._stream is None  # the sound's device stream is closed
        reopened: list[tuple[int, float]] = []

        def open_sound(stream_index: int, start_s: float) -> AudioOutput:
            reopened.append((stream_index, start_s))
            return _output(two_sound)[0]

        keys.open_sound = open_sound
        keys._common_key("#")  # then the first again, from the time on display
        assert reopened and reopened[0][0] == 0 and reopened[0][1] == pytest.approx(heard, abs=0.1)
        assert isinstance(keys.clock, AudioOutput) and keys.clock.stream_index == 0
        assert keys.osd.current_message == "Audio: 1/2 eng (aac, 2 ch)"
    finally:
        output.close()
        keys.clock.close()
    one = make_audio_only(tmp_path / "one.mka", seconds=0.5)
    single, _ = _output(one)
    keys = _keys(one, single)
    try:
        keys._common_key("#")  # one track: it and none in turn (it said 'the only track')
        assert keys.osd.current_message == "Audio: off" and isinstance(keys.clock, SystemClock)
    finally:
        single.close()
    keys = _keys(two_sound, SystemClock("--no-audio"), PlayOptions(audio=False))
    keys.open_sound = lambda stream_index, start_s: SystemClock(NO_DEVICE_REASON, start_s)
    keys._common_key("#")  # where no sound can be had, # says why
    assert keys.osd.current_message == f"Audio: none heard (system clock: {NO_DEVICE_REASON})"


def test_a_bad_aid_is_one_line_before_anything_plays(
    two: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from alpha2.apps import player
    from alpha2.apps.cli import main

    def no_window(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a window was opened")

    monkeypatch.setattr(player, "_window_class", lambda: no_window)
    monkeypatch.setattr(player, "window_unavailable_reason", lambda environ=None: None)
    assert main(["play", two, "--aid", "3"]) == 1
    err = capsys.readouterr().err
    said = "--aid 3: two.mkv has 2 audio tracks (1 eng, 2 ger); give 1 to 2, or leave --aid out"
    assert err == f"alpha2: error: {said}\n"
    silent = make_audio_only(tmp_path / "one.mka", seconds=0.2)
    assert main(["play", two, silent, "--aid", "3"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("alpha2: error: --aid 3: no input has a 3rd audio track (two.mkv 2, one.mka 1)")
    assert len(err.strip().splitlines()) == 1
    assert main(["play", two, "--aid", "2", "--no-audio"]) == 1
    assert "--no-audio plays none" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["play", two, "--aid", "0"])
    assert exit_.value.code == 2


@pytest.mark.vulkan
def test_aid_and_hash_in_the_window_with_sound(audio_server: str, two: str) -> None:
    """``--aid 2`` plays the ger track from the start; ``#`` goes to none (the last track is the last, as
    mpv's), the frames running on the system clock, and ``#`` again to eng at the time on display, the
    frames in step with the sound; the stats (``i``, ``--stats``, ``--json``) say which track plays."""
    pytest.importorskip("rendercanvas")
    from alpha2.gpu.geometry import Size

    run = Player(two, PlayOptions(aid=2, hwaccel="none"), pipeline.Progress())
    playback = window.WindowPlayback(run)

    def drive(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end and not playback.canvas.get_closed():
            playback.canvas.draw()
            time.sleep(1 / 60)

    try:
        playback.open("rendercanvas.offscreen", size=Size(160, 90))
        drive(0.5)
        assert playback.clock is not None and playback.clock.kind.value == "audio", playback.clock.reason
        assert playback.clock.stream_index == 1
        assert "Audio: 2/2 ger (aac, 2 ch)" in playback._stats_lines()
        before = playback.clock.now()
        playback._on_key({"key": "#"})
        assert playback.osd.current_message == "Audio: off"
        assert playback.clock.kind.value == "system" and playback.clock.stream_index is None
        shown = playback.shown_pts
        drive(0.5)  # no sound: the frames go on, on the system clock
        assert shown is not None and playback.shown_pts is not None and playback.shown_pts > shown + 0.25
        assert "Audio: none heard (system clock: audio off (#))" in playback._stats_lines()
        playback._on_key({"key": "#"})
        assert playback.clock.kind.value == "audio" and playback.clock.stream_index == 0
        assert playback.osd.current_message == "Audio: 1/2 eng (aac, 2 ch)"
        drive(0.6)
        after = playback.clock.now()
        assert before + 0.7 < after < before + 1.6  # on from where it was, not from the start
        assert "Audio: 1/2 eng (aac, 2 ch)" in playback._stats_lines()
    finally:
        stats = playback.finish(1.0)
        run.close()
    assert stats.audio_track is not None and stats.audio_track["label"] == "1/2 eng (aac, 2 ch)"
    assert stats.as_dict()["audio_track"]["number"] == 1
    assert "  audio track: 1/2 eng (aac, 2 ch)" in stats.summary().splitlines()
    assert stats.sync is not None
    switched = [s for s in stats.sync["segments"] if s["label"] == "audio track"]
    assert switched and switched[0]["frames"] > 0
    assert switched[0]["mean_abs_ms"] <= 100, switched


def test_alang_picks_a_track_by_language_as_mpv(two_sound: str) -> None:
    """--alang ger (or de, or jpn,ger) asks for the German track; --aid wins over it; a file with none of
    the languages plays its default one, said."""
    for alang, stream in ((("ger",), 1), (("de",), 1), (("jpn", "ger", "eng"), 1), (("eng",), 0)):
        keys = _keys(two_sound, SystemClock("test"), PlayOptions(alang=alang))
        assert keys.asked_stream() == stream, alang
    keys = _keys(two_sound, SystemClock("test"), PlayOptions(alang=("ger",), aid=1))
    assert keys.asked_stream() == 0
    keys = _keys(two_sound, SystemClock("test"), PlayOptions(alang=("jpn",)))
    assert keys.asked_stream() is None
    assert keys.osd.current_message == "Audio: no jpn track here; the default plays"
    assert PlayOptions(alang="jpn,eng").alang == ("jpn", "eng")
    with pytest.raises(InvalidInputError, match="--alang takes language codes"):
        PlayOptions(alang=("e",))
