"""Seeking an :class:`AudioDecodeSession` is sample-exact: after ``seek(t)`` the blocks hold the samples
that a decode of the same file from the start has at the same times (aligned by ``pts_seconds``).

Every input is made here with PyAV: MP3 (CBR and VBR, with and without a Xing header), AAC in MP4 and
ADTS, Opus in Ogg and WebM, FLAC and PCM WAV, of a rising chirp under seeded noise with a changing
loudness, so that a misplaced sample, a decoder missing its preroll (MP3's bit reservoir, the MDCT's
overlap, Opus's converging state) or a resampler started off its grid shows as a large difference.
AAC with perceptual noise substitution cannot be exact after a seek (its decoder's noise generator runs
on): its test bounds the difference instead.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.ffmpeg_bridge.audio import AudioDecodeSession

SECONDS = 3.0
TARGETS = (1.37, 0.0, 2.2, 0.05, 0.61, 2.93)
"""Seek targets, in this order: far in first (the session learns where its stream starts), back to the
start and near it (within every codec's preroll: a new opening of the file), and into the last frames."""
COMPARED = 4096
"""Samples compared after each seek (fewer at the end of the stream)."""
EXACT = 1e-4
"""Largest difference taken as the same sample (Opus's decoder converges to about 1e-6 after a seek)."""


def _chirp(rate: int, seed: int = 7) -> np.ndarray:
    """Stereo float32: a chirp from 150 Hz to 4 kHz and seeded noise, their loudness swelling twice
    (so that VBR frames differ in size), the right channel quieter and a quarter turn behind."""
    t = np.arange(int(rate * SECONDS)) / rate
    phase = 2 * np.pi * (150 * t + (4000 - 150) * t * t / (2 * SECONDS))
    swell = 0.55 + 0.45 * np.sin(2 * np.pi * t / SECONDS * 2) ** 2
    noise = np.random.default_rng(seed).standard_normal((t.size, 2))
    left = swell * (0.45 * np.sin(phase) + 0.08 * noise[:, 0])
    right = swell * (0.3 * np.cos(phase) + 0.08 * noise[:, 1])
    return np.stack([left, right], axis=1).astype(np.float32)


def _encode(
    path: Path,
    codec: str,
    rate: int,
    signal: np.ndarray,
    *,
    fmt: str | None = None,
    options: dict[str, str] | None = None,
    muxer: dict[str, str] | None = None,
    bit_rate: int | None = None,
    vbr_quality: int | None = None,
) -> str:
    """``signal`` (float32, shape (samples, 2)) encoded with ``codec`` into ``path``."""
    with av.open(str(path), "w", format=fmt, options=muxer or {}) as out:
        stream: Any = out.add_stream(codec, rate=rate, options=options or {})
        stream.layout = "stereo"
        if bit_rate is not None:
            stream.bit_rate = bit_rate
        if vbr_quality is not None:  # LAME's -V: FFmpeg's qscale flag and global_quality in lambda units
            stream.codec_context.qscale = True
            stream.codec_context.global_quality = vbr_quality * 118
        fmt_name = stream.codec_context.format.name
        resampler = av.AudioResampler(format=fmt_name, layout="stereo", rate=rate)
        frames: list[Any] = []
        for start in range(0, len(signal), 1024):
            part = np.ascontiguousarray(signal[start : start + 1024].reshape(1, -1))
            frame = av.AudioFrame.from_ndarray(part, format="flt", layout="stereo")
            frame.sample_rate, frame.pts, frame.time_base = rate, start, Fraction(1, rate)
            frames += resampler.resample(frame)
        for each in [*frames, *resampler.resample(None), None]:
            for packet in stream.encode(each):
                out.mux(packet)
    return str(path)


MP3 = {"bit_rate": 128_000}
MP3_VBR = {"vbr_quality": 5}
NO_XING = {"muxer": {"write_xing": "0"}}
NO_PNS = {"options": {"aac_pns": "0"}}  # FFmpeg's AAC encoder substitutes noise by default: see below
FORMATS: dict[str, tuple[str, str, int, dict[str, Any]]] = {
    "mp3-cbr-xing": ("cbr.mp3", "libmp3lame", 44100, MP3),
    "mp3-cbr-no-xing": ("cbr-bare.mp3", "libmp3lame", 44100, {**MP3, **NO_XING}),
    "mp3-vbr-xing": ("vbr.mp3", "libmp3lame", 44100, MP3_VBR),
    "mp3-vbr-no-xing": ("vbr-bare.mp3", "libmp3lame", 44100, {**MP3_VBR, **NO_XING}),
    "aac-mp4": ("aac.m4a", "aac", 44100, {"bit_rate": 128_000, **NO_PNS}),
    "aac-adts": ("aac.aac", "aac", 48000, {"bit_rate": 128_000, "fmt": "adts", **NO_PNS}),
    "opus-ogg": ("opus.ogg", "libopus", 48000, {"bit_rate": 96_000, "fmt": "ogg"}),
    "opus-webm": ("opus.webm", "libopus", 48000, {"bit_rate": 96_000, "fmt": "webm"}),
    "flac": ("a.flac", "flac", 44100, {}),
    "pcm-wav": ("a.wav", "pcm_s16le", 44100, {}),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("seek")
    out = {}
    for name, (file, codec, rate, how) in FORMATS.items():
        out[name] = _encode(folder / file, codec, rate, _chirp(rate), **how)
    return out


def _from_start(path: str, **output: Any) -> tuple[float, np.ndarray, int]:
    """The first sample's time, every sample and the rate of a decode from the start."""
    with AudioDecodeSession(path, **output) as session:
        blocks = list(session.blocks())
        return blocks[0].pts_seconds, np.concatenate([b.samples for b in blocks]), session.sample_rate


def _seek_errors(
    session: AudioDecodeSession, start: float, whole: np.ndarray, target: float
) -> tuple[float, float]:
    """After ``session.seek(target)``: how far (in samples) the first block starts from where a decode
    from the start has the target, and the largest difference from that decode's samples there."""
    rate = session.sample_rate
    session.seek(target)
    first = session.next_block()
    assert first is not None, f"nothing after a seek to {target} s"
    parts, have = [first.samples], first.frames
    while have < COMPARED and (block := session.next_block()) is not None:
        parts.append(block.samples)
        have += block.frames
    got = np.concatenate(parts)[:COMPARED]
    place = (first.pts_seconds - start) * rate
    expected = max(0.0, (target - start) * rate)
    index = round(place)
    want = whole[index : index + len(got)]
    assert len(want) == len(got), f"{len(got)} samples after {target} s, {len(want)} there from the start"
    return abs(place - round(expected)), float(np.abs(got - want).max())


@pytest.mark.parametrize("resampled", [False, True], ids=["own-rate", "resampled"])
@pytest.mark.parametrize("name", list(FORMATS))
def test_samples_after_a_seek_are_those_of_a_decode_from_the_start(
    made: dict[str, str], name: str, resampled: bool
) -> None:
    path = made[name]
    rate = FORMATS[name][2]
    # Resampled: 44.1 kHz up to 48 kHz, 48 kHz down to 44.1 kHz and to five channels from two.
    output = (
        {"sample_rate": 48000 if rate == 44100 else 44100, "channels": 2 if rate == 44100 else 5}
        if resampled
        else {"sample_rate": None, "channels": None}
    )
    start, whole, out_rate = _from_start(path, **output)
    with AudioDecodeSession(path, **output) as session:
        found = {target: _seek_errors(session, start, whole, target) for target in TARGETS}
    misplaced = {t: off for t, (off, _) in found.items() if off > 0.5 + 1e-6}
    differing = {t: diff for t, (_, diff) in found.items() if diff >= EXACT}
    assert not misplaced, f"{name}: first block off its place by (samples at {out_rate} Hz) {misplaced}"
    assert not differing, f"{name}: samples after a seek differ from a decode from the start by {differing}"


class _LateDemuxer:
    """An input container whose seeks stop ``late`` (in the stream's time base) after the place asked
    for, as a demuxer without an index may: the session must see it and seek further back."""

    def __init__(self, container: Any, late: int) -> None:
        self._container, self._late, self.seeks = container, late, 0

    def seek(self, offset: int, **how: Any) -> None:
        self.seeks += 1
        self._container.seek(offset + self._late, **how)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._container, name)


@pytest.mark.parametrize("name", ["flac", "mp3-vbr-no-xing"])
def test_a_demuxer_stopping_after_the_place_asked_for_is_sent_further_back(
    made: dict[str, str], name: str
) -> None:
    path = made[name]
    start, whole, _ = _from_start(path, sample_rate=48000, channels=2)
    with AudioDecodeSession(path, sample_rate=48000, channels=2) as session:
        session.seek(0.5)  # the stream's start learnt, the file read from there
        late = _LateDemuxer(session._container, round(0.4 / session._stream.time_base))
        session._container = late  # type: ignore[assignment]
        misplaced, difference = _seek_errors(session, start, whole, 2.4)
    assert late.seeks >= 2, "the late landing went unseen"
    assert misplaced <= 0.5 and difference < EXACT, (misplaced, difference)


def _band_rms(samples: np.ndarray, rate: int, low: float, high: float) -> float:
    """Root-mean-square level of ``samples`` (one channel) between ``low`` and ``high`` Hz."""
    window = np.hanning(len(samples))
    spectrum = np.fft.rfft(samples * window)
    hz = np.fft.rfftfreq(len(samples), 1 / rate)
    return float(np.sqrt(np.sum(np.abs(spectrum[(hz >= low) & (hz < high)]) ** 2) / np.sum(window**2)))


def test_aac_noise_substitution_changes_only_the_noise_bands_after_a_seek(tmp_path: Path) -> None:
    """AAC's perceptual noise substitution (on in FFmpeg's encoder by default) makes a band's samples
    from a generator the decoder keeps running across seeks: after a seek those bands hold other noise
    of the same loudness. The tone below them stays exact to the sample, so a misplacement still shows."""
    rate = 48000
    t = np.arange(int(rate * SECONDS)) / rate
    tone = 0.4 * np.sin(2 * np.pi * (300 * t + 600 * t * t / SECONDS))  # 300 Hz to 1.5 kHz
    noise = np.fft.rfft(np.random.default_rng(3).standard_normal(t.size))
    noise[np.fft.rfftfreq(t.size, 1 / rate) < 8000] = 0
    hiss = np.fft.irfft(noise, t.size)
    hiss *= 0.15 / hiss.std()
    signal = np.repeat((tone + hiss)[:, None], 2, axis=1).astype(np.float32)
    path = _encode(tmp_path / "pns.m4a", "aac", rate, signal, bit_rate=96_000)
    start, whole, _ = _from_start(path, sample_rate=None, channels=None)
    with AudioDecodeSession(path, sample_rate=None, channels=None) as session:
        for target in (0.8, 1.9):
            session.seek(target)
            first = session.next_block()
            assert first is not None
            got = first.samples
            while len(got) < 8192 and (block := session.next_block()) is not None:
                got = np.concatenate([got, block.samples])
            got = got[:8192, 0]
            index = round((first.pts_seconds - start) * rate)
            assert index == round((target - start) * rate)
            want = whole[index : index + len(got), 0]
            tone_band = _band_rms(want, rate, 200, 2000)
            tone_error = _band_rms(got - want, rate, 200, 2000)
            hiss_band = _band_rms(want, rate, 8000, 20000)
            hiss_error = _band_rms(got - want, rate, 8000, 20000)
            assert hiss_error > 0.1 * hiss_band, "no noise substituted: this test no longer tests that"
            assert tone_error < 1e-3 * tone_band, (target, tone_error / tone_band)
            # Other noise of the same loudness: the difference of two is about sqrt(2) times either.
            assert hiss_error < 2.0 * hiss_band, (target, hiss_error / hiss_band)
            assert _band_rms(got, rate, 8000, 20000) == pytest.approx(hiss_band, rel=0.3)


@pytest.mark.parametrize("resampled", [False, True], ids=["own-rate", "resampled"])
def test_a_seek_in_planar_sound_of_eight_channels_keeps_the_frames_format(
    tmp_path: Path, resampled: bool
) -> None:
    """A frame cut at a seek's target is rebuilt; PyAV cannot fill a planar frame of 8 channels, so it
    came back packed, and the resampler, set up by it, met the planar frames after it: at the stream's
    own rate it took the packed frame as needing nothing and passed the planar ones through to numpy,
    which read past their planes (the process crashed); resampled, a ValueError (found by an outside
    pass, 7.1 Opus and AAC)."""
    rate = 48000
    t = np.arange(int(rate * SECONDS)) / rate
    tones = np.stack([0.1 * np.sin(2 * np.pi * (200 + 110 * c) * t) for c in range(8)], axis=1)
    path = str(tmp_path / "surround.m4a")
    with av.open(path, "w") as out:
        stream: Any = out.add_stream("aac", rate=rate, options={"aac_pns": "0"})
        stream.layout = "7.1"
        for start in range(0, len(t), 1024):
            part = np.ascontiguousarray(tones[start : start + 1024].astype(np.float32).reshape(1, -1))
            frame = av.AudioFrame.from_ndarray(part, format="flt", layout="7.1")
            frame.sample_rate, frame.pts, frame.time_base = rate, start, Fraction(1, rate)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    output = {"sample_rate": 44100 if resampled else None, "channels": None}
    start, whole, _ = _from_start(path, **output)
    assert whole.shape[1] == 8
    with AudioDecodeSession(path, **output) as session:
        for target in (1.37, 2.2):
            misplaced, difference = _seek_errors(session, start, whole, target)
            assert misplaced <= 0.5 and difference < EXACT, (target, misplaced, difference)


def test_a_demuxer_that_refuses_a_seek_is_read_from_the_start(tmp_path: Path) -> None:
    """FFmpeg's FLAC demuxer refuses some seeks outright (here a 1 s 5.1 FLAC, to 0.77 to 0.86 s:
    'Operation not permitted', which came out as a MediaNotFoundError): the file is then decoded from
    its start to the target, as ffmpeg's -ss does (found by an outside pass)."""
    rate = 48000
    path = str(tmp_path / "refuses.flac")
    with av.open(path, "w") as out:
        stream: Any = out.add_stream("flac", rate=rate)
        stream.layout = "5.1(side)"
        noise = np.random.default_rng(1).standard_normal((rate, 6)) * 3000
        frame = av.AudioFrame.from_ndarray(
            noise.astype(np.int16).reshape(1, -1), format="s16", layout="5.1(side)"
        )
        frame.sample_rate, frame.pts = rate, 0
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            out.mux(packet)
    with av.open(path) as probe, pytest.raises(av.error.FFmpegError):  # the demuxer's refusal, still there
        probe.seek(round(0.8 * rate), stream=probe.streams.audio[0], backward=True)
    start, whole, _ = _from_start(path, sample_rate=None, channels=None)
    with AudioDecodeSession(path, sample_rate=None, channels=None) as session:
        for target in (0.8, 0.3, 0.85):
            misplaced, difference = _seek_errors(session, start, whole, target)
            assert misplaced <= 0.5 and difference == 0.0, (target, misplaced, difference)
