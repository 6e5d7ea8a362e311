"""Faults an outside pass over the audio and subtitle API found (alpha2.open_audio, read_cues), each
with the input that showed it, made here with PyAV."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

import alpha2


def _flac_mkv(path: Path, samples: int, *, gap_after: int = 0, gap: int = 0) -> str:
    """Stereo FLAC at 48 kHz in Matroska (a millisecond clock), fed 4096 samples a frame; ``gap``
    samples of the timestamps skipped after the frame holding sample ``gap_after``."""
    rate, size = 48000, 4096
    t = np.arange(samples) / rate
    noise = np.random.default_rng(3).standard_normal(samples)
    mono = 0.3 * np.sin(2 * np.pi * (200 + 900 * t) * t) + 0.05 * noise
    signal = np.stack([mono, 0.5 * mono]).astype(np.float32)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("flac", rate=rate, layout="stereo")
        stream.format = "s16"
        resampler = av.AudioResampler(format="s16", layout="stereo", rate=rate)
        pts = 0
        for at in range(0, samples, size):
            chunk = np.ascontiguousarray(signal[:, at : at + size])
            frame = av.AudioFrame.from_ndarray(chunk, "fltp", "stereo")
            frame.sample_rate = rate
            for part in resampler.resample(frame):
                part.pts, part.time_base = pts, Fraction(1, rate)
                pts += part.samples
                out.mux(stream.encode(part))
            if gap and at <= gap_after < at + size:
                pts += gap
        out.mux(stream.encode(None))
    return str(path)


def _after_seeks(path: str, targets: tuple[float, ...]) -> list[float]:
    """The largest difference, at each target, between a read after ``seek(target)`` and a read of the
    whole stream from the start at the same times."""
    with alpha2.open_audio(path) as sound:
        whole = sound.read()
        worst = []
        for target in targets:
            sound.seek(target)
            part = sound.read()
            at = round(target * sound.sample_rate)
            assert len(part) == len(whole) - at, target
            worst.append(float(np.abs(whole[at:] - part).max()))
        return worst


def test_a_seek_into_a_short_last_frame_of_flac_in_matroska_is_exact(tmp_path: Path) -> None:
    # 94560 samples: the encoder's 20 frames of 4608 and a last one of 2400. Placed by its end on the
    # 4608 grid, that last frame was taken 2208 samples late, a jump that moved the target: a seek into
    # it gave samples from elsewhere and more of them than were left (found with 7.1 FLAC at 96 kHz).
    path = _flac_mkv(tmp_path / "short_end.mkv", 94560)
    assert max(_after_seeks(path, (0.5, 1.9, 1.93, 1.95, 1.96))) == 0.0


def test_a_seek_past_a_gap_of_no_whole_frames_in_matroska_is_exact(tmp_path: Path) -> None:
    # A gap of 0.5 s (24000 samples, not a whole number of 4096-sample frames): the frames after it were
    # snapped to the grid from the start, up to half a frame off, and a seek past the gap gave other
    # samples than a read from the start (0.57 off), with a made-up gap of 20 ms in gaps.
    path = _flac_mkv(tmp_path / "gap.mkv", 48000, gap_after=10000, gap=24000)
    assert max(_after_seeks(path, (0.1, 0.5, 0.8, 0.99, 1.2, 1.45))) == 0.0


@pytest.mark.parametrize("target", [1e300, 2.0**63, 1e12])
def test_a_seek_far_past_the_end_leaves_nothing_to_read(tmp_path: Path, target: float) -> None:
    # 1e300 (and 2**63) became a timestamp past an int64: OverflowError from PyAV's seek, untyped.
    path = _flac_mkv(tmp_path / "short.mkv", 9000)
    with alpha2.open_audio(path) as sound:
        sound.seek(target)
        assert sound.read().shape == (0, 2)
        assert sound.next_block() is None
        sound.seek(0.1)
        assert sound.read(0.05).shape == (2400, 2)


def test_a_session_seek_to_an_int_past_a_float_is_past_the_end(tmp_path: Path) -> None:
    from alpha2.ffmpeg_bridge.audio import AudioDecodeSession

    with AudioDecodeSession(_flac_mkv(tmp_path / "short.mkv", 9000)) as session:
        session.seek(10**400)  # type: ignore[arg-type]  # was OverflowError from float()
        assert session.next_block() is None


def test_a_gap_met_again_after_a_seek_is_listed_once(tmp_path: Path) -> None:
    # gaps listed the same gap again each time a seek back read past it (three times after three
    # seeks), and a seek into it added its tail as another gap beside the whole one.
    path = _flac_mkv(tmp_path / "gap.mkv", 48000, gap_after=10000, gap=24000)
    with alpha2.open_audio(path) as sound:
        sound.seek(0.5)
        sound.read()
        for target in (0.0, 0.1, 0.25, 0.0):
            sound.seek(target)
            sound.read()
        assert len(sound.gaps) == 1, sound.gaps
        where, seconds = sound.gaps[0]
        assert where == pytest.approx(0.288) and seconds == pytest.approx(0.5)
        assert sound.overlaps == []


def _srt(path: Path) -> str:
    path.write_text("1\n00:00:01,000 --> 00:00:02,000\nHello\n\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("bad", [b"cues.srt", None, 3])
def test_the_subtitle_readers_refuse_what_is_no_path_with_a_typed_error(tmp_path: Path, bad: object) -> None:
    # bytes went to PyAV as a file object (ValueError: 'File object has no read() method'), None and
    # 3 to os.fspath (TypeError), and open_subtitles joined bytes and '.srt' (TypeError).
    from alpha2.api.subtitles import check_subtitle_file, open_subtitles
    from alpha2.ffmpeg_bridge.subtitles import read_cues, subtitle_tracks
    from alpha2.gpu.errors import InvalidInputError

    good = _srt(tmp_path / "cues.srt")
    calls = [
        lambda: read_cues(bad),  # type: ignore[arg-type]
        lambda: subtitle_tracks(bad),  # type: ignore[arg-type]
        lambda: check_subtitle_file(bad),  # type: ignore[arg-type]
        lambda: open_subtitles(bad),  # type: ignore[arg-type]
    ]
    if bad is not None:
        calls.append(lambda: open_subtitles(good, sub=bad))  # type: ignore[arg-type]
    for call in calls:
        with pytest.raises(InvalidInputError, match=r"takes a path \(str or os\.PathLike\)"):
            call()
    assert [c.text for c in read_cues(Path(good))] == ["Hello"]


def test_a_seek_in_ac3_in_matroska_lands_on_the_sample(tmp_path: Path) -> None:
    # AC-3's decoder leaves frame_size at 0, so its 1536-sample grid went unused and a frame was placed
    # by its millisecond timestamp, 16 samples off at 48 kHz: after a seek every sample was 16 places
    # late (0.59 off on this tone). What is left is the decoder's dither of zero-bit mantissas.
    rate, samples = 48000, 96000
    t = np.arange(samples) / rate
    tone = np.stack([0.3 * np.sin(2 * np.pi * 440 * t), 0.3 * np.sin(2 * np.pi * 660 * t)]).astype(np.float32)
    path = str(tmp_path / "ac3.mkv")
    with av.open(path, "w") as out:
        stream = out.add_stream("ac3", rate=rate, layout="stereo")
        for at in range(0, samples, 1536):
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(tone[:, at : at + 1536]), "fltp", "stereo"
            )
            frame.sample_rate, frame.pts, frame.time_base = rate, at, Fraction(1, rate)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    with alpha2.open_audio(path) as sound:
        whole = sound.read()
        for target in (1.37, 0.7, 0.31):
            sound.seek(target)
            part = sound.read(0.2)
            at = round(target * rate)
            assert float(np.abs(whole[at : at + len(part)] - part).max()) < 1e-3, target


_CLOSE_WHILE_READING = """
import sys, threading, time
import alpha2
from alpha2.gpu.errors import ClosedError

for round_ in range(40):
    sound = alpha2.open_audio(sys.argv[1], sample_rate=44100)

    def reader():
        try:
            for _ in range(1000):
                sound.seek(0)
                sound.read()
        except ClosedError:
            pass

    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(0.005 * (round_ % 5))
    sound.close()
    thread.join()
print("ok")
"""


def test_closing_a_sound_while_another_thread_reads_it_is_safe(tmp_path: Path) -> None:
    # close() freed the container while the other thread's read was in FFmpeg's demuxer: a segfault
    # within a few rounds. It now waits for the block being decoded; the reader gets ClosedError.
    import subprocess
    import sys

    path = _flac_mkv(tmp_path / "long.mkv", 96000 * 3)
    run = subprocess.run(
        [sys.executable, "-c", _CLOSE_WHILE_READING, path], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-2000:])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q"]))
