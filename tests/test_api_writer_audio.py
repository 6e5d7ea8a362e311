"""The Writer's timing, lifetime and errors, and ``alpha2.open_audio``; every clip is made here with PyAV.

Writing decoded frames needs no GPU; tests that write textures or arrays carry the ``vulkan`` marker.
"""

from __future__ import annotations

import asyncio
import fractions
import gc
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

import alpha2
from alpha2.gpu.errors import ClosedError, InvalidInputError
from tests.media import VFR_STEPS_MS, make_clip


def _video_times(path: Path | str) -> tuple[list[float], float]:
    """Presentation times of every decoded frame, and the container's duration, in seconds."""
    with av.open(str(path)) as container:
        times = [float(f.pts * f.time_base) for f in container.decode(video=0)]
        return times, container.duration / 1_000_000


def _reencode(src: str, dst: Path, **options: Any) -> alpha2.Writer:
    with alpha2.open(src, hwaccel="none") as source, alpha2.create(dst, **options) as writer:
        for frame in source:
            writer.write(frame)
    return writer


# -- 1. timing from what is written --------------------------------------------------------------------


def test_reencoding_a_25fps_clip_frame_by_frame_keeps_its_duration(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "25.mp4", frames=50, rate=25)
    writer = _reencode(clip.path, tmp_path / "out.mp4")
    assert writer.rate == 25 and writer.frames_written == 50
    assert writer.timing is not None and "own timestamps" in writer.timing
    times, duration = _video_times(tmp_path / "out.mp4")
    assert len(times) == 50
    assert duration == pytest.approx(2.0, abs=1 / 25)
    assert np.allclose(np.diff(times), 1 / 25, atol=1e-4)


def test_a_variable_frame_rate_input_keeps_its_timestamps(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "vfr.mkv", frames=16, vfr=True)
    expected = [p / 1000 for p in clip.pts]
    assert len(set(np.diff(expected).round(3))) > 3  # really variable: VFR_STEPS_MS
    for name in ("out.mkv", "out.mp4"):
        _reencode(clip.path, tmp_path / name)
        times, _ = _video_times(tmp_path / name)
        assert times == pytest.approx(expected, abs=1e-3), name
    assert VFR_STEPS_MS[0] / 1000 == pytest.approx(expected[1])


def test_frames_count_from_the_first_written_and_a_given_rate_retimes_them(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "25.mkv", frames=50, rate=25)
    with alpha2.open(clip.path, hwaccel="none") as source, alpha2.create(tmp_path / "cut.mp4") as writer:
        source.seek(1.0)  # a cut from 1.0 s starts at 0 s
        for frame in source:
            writer.write(frame)
            if writer.frames_written == 10:
                break
    times, _ = _video_times(tmp_path / "cut.mp4")
    assert times == pytest.approx([i / 25 for i in range(10)], abs=1e-3)

    writer = _reencode(clip.path, tmp_path / "fast.mp4", rate=50)
    assert writer.rate == 50 and writer.timing is not None and "as asked" in writer.timing
    times, duration = _video_times(tmp_path / "fast.mp4")
    assert len(times) == 50 and duration == pytest.approx(1.0, abs=1 / 50)


def test_frames_whose_timestamps_do_not_increase_are_refused_with_the_fix(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "c.mkv", frames=4)
    with alpha2.open(clip.path, hwaccel="none") as source:
        writer = alpha2.create(tmp_path / "o.mkv")
        first = source.next_frame()
        assert first is not None
        writer.write(first, pts_seconds=1.0)
        second = source.next_frame()
        assert second is not None
        with pytest.raises(InvalidInputError, match=r"timestamps must increase.*rate="):
            writer.write(second, pts_seconds=0.5)
        with pytest.raises(InvalidInputError, match="pts_seconds must be a time >= 0"):
            writer.write(second, pts_seconds=-1.0)
        writer.write(second, pts_seconds=1.5)
        writer.close()
        first.release()
        second.release()
    times, _ = _video_times(tmp_path / "o.mkv")
    assert times == pytest.approx([1.0, 1.5], abs=1e-3)


@pytest.mark.vulkan
def test_arrays_are_written_at_30_fps_unless_told_and_say_so(tmp_path: Path) -> None:
    pixels = np.zeros((48, 64, 3), np.uint8)
    with alpha2.create(tmp_path / "default.mp4") as writer:
        assert writer.rate is None and writer.timing is None  # decided by the first write
        for _ in range(3):
            writer.write(pixels)
        assert writer.rate == 30 and writer.time_base == fractions.Fraction(1, 90000)
        assert writer.timing is not None and "30 fps, the default" in writer.timing
    times, _ = _video_times(tmp_path / "default.mp4")
    assert times == pytest.approx([0, 1 / 30, 2 / 30], abs=1e-4)

    with alpha2.create(tmp_path / "timed.mkv") as writer:
        for when in (0.0, 0.1, 0.25):
            writer.write(pixels, pts_seconds=when)
        writer.write(pixels)  # one frame (1/30 s) after the previous
    times, _ = _video_times(tmp_path / "timed.mkv")
    assert times == pytest.approx([0.0, 0.1, 0.25, 0.25 + 1 / 30], abs=1e-3)


# -- 2. every call after close() raises ----------------------------------------------------------------


def test_every_call_after_close_raises_a_closed_error_naming_the_file(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "c.mkv", frames=3)
    out = tmp_path / "closed.mp4"
    with alpha2.open(clip.path, hwaccel="none") as source:
        frames = [source.next_frame() for _ in range(3)]
        writer = alpha2.create(out)
        writer.write(frames[0])
        writer.close()
        assert writer.closed and out.exists()
        with pytest.raises(ClosedError, match=f"{out.name}.*was closed.*alpha2.create"):
            writer.write(frames[1])
        with pytest.raises(ClosedError, match=out.name):
            asyncio.run(writer.write_async(frames[1]))
        writer.close()  # idempotent
        writer.abort()  # and abort after close keeps the finished file
        assert out.exists() and writer.frames_written == 1

        aborted = alpha2.create(tmp_path / "aborted.mp4")
        aborted.write(frames[1])
        aborted.abort()
        with pytest.raises(ClosedError, match="was aborted"):
            aborted.write(frames[2])
        assert not (tmp_path / "aborted.mp4").exists()
        for frame in frames:
            assert frame is not None
            frame.release()


@pytest.mark.vulkan
def test_a_writer_on_a_closed_device_says_so_and_stays_usable(tmp_path: Path) -> None:
    """alpha2.create(path, device=d) after d.close() failed its first write inside cffi (TypeError:
    "initializer for ctype 'struct WGPUDeviceImpl *' must be a cdata pointer, not NoneType")."""
    device = alpha2.Device.open()
    texture = device.webgpu_device.create_texture(
        size=(16, 16, 1),
        format="rgba8unorm",
        usage=device.gpu_module.TextureUsage.TEXTURE_BINDING | device.gpu_module.TextureUsage.COPY_DST,
    )
    device.close()
    out = tmp_path / "closed_device.mp4"
    writer = alpha2.create(out, device=device)
    with pytest.raises(ClosedError, match=r"Device of this Writer.*closed_device\.mp4.*was closed"):
        writer.write(np.zeros((16, 16, 3), np.uint8))
    with pytest.raises(ClosedError, match=r"Device\.close\(\)"):
        writer.write(texture)
    assert not writer.closed  # refused, not aborted
    writer.abort()
    assert not out.exists()


# -- 3. the finalizer ----------------------------------------------------------------------------------


def _encode_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("alpha2-encode")]


@pytest.mark.vulkan
def test_a_writer_dropped_unclosed_removes_its_partial_output_and_warns(tmp_path: Path) -> None:
    out = tmp_path / "dropped.mp4"
    writer = alpha2.create(out)
    pixels = np.full((48, 64, 3), 90, np.uint8)
    for _ in range(60):  # past the encoder's look-ahead: packets reach the (temporary) file
        writer.write(pixels)
    asyncio.run(writer.write_async(pixels))
    copier = writer._held.copier
    assert copier is not None and _encode_threads() and os.listdir(tmp_path)  # the partial output
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del writer
        gc.collect()
    said = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert len(said) == 1 and "dropped.mp4" in said[0] and "partial output was removed" in said[0]
    assert os.listdir(tmp_path) == []  # no half-written output, under any name
    assert copier.closed and not _encode_threads()


def test_a_writer_dropped_before_writing_leaves_nothing(tmp_path: Path) -> None:
    writer = alpha2.create(tmp_path / "nothing.mkv")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del writer
        gc.collect()
    assert [w.category for w in caught] == [ResourceWarning]
    assert os.listdir(tmp_path) == []


# -- 4. errors in the user's terms ---------------------------------------------------------------------


def test_frames_of_another_size_are_refused_in_the_users_terms(tmp_path: Path) -> None:
    big = make_clip(tmp_path / "big.mkv", width=64, height=48, frames=2)
    small = make_clip(tmp_path / "small.mkv", width=32, height=24, frames=2)
    with (
        alpha2.open(big.path, hwaccel="none") as a,
        alpha2.open(small.path, hwaccel="none") as b,
        alpha2.create(tmp_path / "o.mkv") as writer,
    ):
        for frame in a:
            writer.write(frame)
        frame = b.next_frame()
        assert frame is not None
        with (
            frame,
            pytest.raises(
                InvalidInputError,
                match=r"first frame's size \(64x48\); got 32x24: resize before writing, or create another",
            ),
        ):
            writer.write(frame)


@pytest.mark.vulkan
def test_arrays_and_textures_the_writer_cannot_take_are_refused_with_the_fix(tmp_path: Path) -> None:
    device = alpha2.Device.open()
    usage = device.gpu_module.TextureUsage
    with alpha2.create(tmp_path / "o.mp4", device=device) as writer:
        writer.write(np.zeros((48, 64, 4), np.uint8))
        with pytest.raises(InvalidInputError, match=r"first frame's size \(64x48\); got 32x24: resize"):
            writer.write(np.zeros((24, 32, 3), np.uint8))
        with pytest.raises(InvalidInputError, match=r"uint8.*float32.*\* 255\)\.clip"):
            writer.write(np.zeros((48, 64, 3), np.float32))
        with pytest.raises(InvalidInputError, match=r"np\.repeat"):
            writer.write(np.zeros((48, 64), np.uint8))
        with pytest.raises(InvalidInputError, match=r"transpose\(1, 2, 0\)"):
            writer.write(np.zeros((3, 48, 64), np.uint8))
        unbound = device.webgpu_device.create_texture(
            size=(64, 48, 1), format="rgba8unorm", usage=usage.COPY_DST | usage.RENDER_ATTACHMENT
        )
        with pytest.raises(InvalidInputError, match=r"usage=\.\.\. \| TextureUsage\.TEXTURE_BINDING"):
            writer.write(unbound)
        gray = device.webgpu_device.create_texture(
            size=(64, 48, 1), format="r8unorm", usage=usage.TEXTURE_BINDING
        )
        with pytest.raises(InvalidInputError, match="render into one of those"):
            writer.write(gray)
        other = alpha2.Device.open()
        foreign = other.webgpu_device.create_texture(
            size=(64, 48, 1), format="rgba8unorm", usage=other.gpu_module.TextureUsage.TEXTURE_BINDING
        )
        with pytest.raises(InvalidInputError, match=r"another device.*device=source\.device"):
            writer.write(foreign)
        good = device.webgpu_device.create_texture(
            size=(64, 48, 1), format="rgba8unorm", usage=usage.TEXTURE_BINDING | usage.COPY_DST
        )
        writer.write(good)  # the refusals left the Writer usable
        assert writer.frames_written == 2
    times, _ = _video_times(tmp_path / "o.mp4")
    assert len(times) == 2


# -- 5. alpha2.open_audio -------------------------------------------------------------------------------

RATE = 44100


def _ramp(frames: int) -> np.ndarray:
    """(frames, 2) int16: a sawtooth on the left, its negation on the right (every sample known)."""
    left = ((np.arange(frames) * 7) % 2000 - 1000).astype(np.int16) * 16
    return np.stack([left, -left], axis=1)


def make_wav(path: Path, seconds: float = 1.0) -> tuple[str, np.ndarray]:
    """A 16-bit stereo WAV of :func:`_ramp`, and its samples as float32 (what decoding must give)."""
    samples = _ramp(round(seconds * RATE))
    with av.open(str(path), "w") as out:
        stream: Any = out.add_stream("pcm_s16le", rate=RATE)
        stream.layout = "stereo"
        for start in range(0, len(samples), 1024):
            part = np.ascontiguousarray(samples[start : start + 1024])
            frame = av.AudioFrame.from_ndarray(part.reshape(1, -1), format="s16", layout="stereo")
            frame.sample_rate, frame.pts = RATE, start
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path), samples.astype(np.float32) / 32768


def test_open_audio_gives_blocks_reads_and_seeks_sample_exactly(tmp_path: Path) -> None:
    path, expected = make_wav(tmp_path / "ramp.wav")
    with alpha2.open_audio(path) as sound:
        info = sound.info
        assert (info.codec, info.sample_rate, info.channels) == ("pcm_s16le", RATE, 2)
        assert info.duration_seconds == pytest.approx(1.0, abs=0.01)
        assert (sound.sample_rate, sound.channels) == (RATE, 2)  # the stream's own when not asked
        blocks = list(sound)
        assert all(b.samples.dtype == np.float32 and b.samples.shape[1] == 2 for b in blocks)
        starts = [b.pts_seconds for b in blocks]
        ends = [b.pts_seconds + b.duration_seconds for b in blocks]
        assert starts[0] == 0 and np.allclose(starts[1:], ends[:-1])
        np.testing.assert_allclose(np.concatenate([b.samples for b in blocks]), expected, atol=1e-6)

        sound.seek(0.5)
        part = sound.read(0.25)
        assert part.shape == (round(0.25 * RATE), 2)
        np.testing.assert_allclose(part, expected[RATE // 2 : RATE // 2 + part.shape[0]], atol=1e-6)
        block = sound.next_block()
        assert block is not None and block.pts_seconds == pytest.approx(0.75, abs=1 / RATE)
        rest = sound.read()
        assert block.frames + rest.shape[0] == RATE - RATE // 2 - part.shape[0]
        assert sound.read(0.1).shape == (0, 2)  # past the end
        sound.seek(0.0)
        np.testing.assert_allclose(sound.read(), expected, atol=1e-6)
    assert sound.closed
    with pytest.raises(ClosedError, match=r"ramp\.wav.*closed"):
        sound.read()
    sound.close()  # idempotent


def test_open_audio_resamples_on_request(tmp_path: Path) -> None:
    path, _ = make_wav(tmp_path / "ramp.wav")
    with alpha2.open_audio(path, sample_rate=48000, channels=1) as sound:
        assert (sound.sample_rate, sound.channels) == (48000, 1)
        assert sound.info.sample_rate == RATE  # the file's own, still
        mono = sound.read()
    assert mono.dtype == np.float32 and mono.shape[1] == 1
    assert abs(mono.shape[0] - 48000) <= 64
    assert float(np.abs(mono).max()) < 0.1  # left + right cancel in the mix down

    clip = make_clip(tmp_path / "av.mkv", frames=15, audio=True)  # Opus beside video
    with alpha2.open_audio(clip.path, channels=2) as sound:
        assert sound.info.codec == "opus" and sound.info.stream_index == 0
        tone = sound.read(0.3)
    assert tone.shape == (round(0.3 * 48000), 2) and float(np.abs(tone).max()) > 0.1


def test_open_audio_refuses_what_it_cannot_do_with_typed_errors(tmp_path: Path) -> None:
    from alpha2.api.audio import NoAudioStreamError

    silent = make_clip(tmp_path / "silent.mp4", frames=3).path
    with pytest.raises(NoAudioStreamError, match=r"silent\.mp4.*no audio stream \(it has 1 video\)"):
        alpha2.open_audio(silent)
    path, _ = make_wav(tmp_path / "ramp.wav", seconds=0.1)
    with pytest.raises(InvalidInputError, match=r"sample_rate must be .* 1000 to 768000"):
        alpha2.open_audio(path, sample_rate=0)
    with pytest.raises(InvalidInputError, match="sample_rate"):
        alpha2.open_audio(path, sample_rate=44100.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"channels must be 1 to 8"):
        alpha2.open_audio(path, channels=9)
    with pytest.raises(InvalidInputError, match=r"channels must be 1 to 8.*got 2\.0"):
        alpha2.open_audio(path, channels=2.0)  # type: ignore[arg-type]  # as sample_rate=44100.0 is
    with pytest.raises(InvalidInputError, match=r"has 1 audio stream\(s\); stream_index must be 0 to 0"):
        alpha2.open_audio(path, stream_index=1)
    with alpha2.open_audio(path) as sound, pytest.raises(InvalidInputError, match=r"seconds .* from 0"):
        sound.read(-1)


def test_an_audio_source_dropped_unclosed_is_closed_with_a_warning(tmp_path: Path) -> None:
    path, _ = make_wav(tmp_path / "ramp.wav", seconds=0.1)
    sound = alpha2.open_audio(path)
    session = sound._session
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del sound
        gc.collect()
    said = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert len(said) == 1 and "ramp.wav" in said[0]
    with pytest.raises(ClosedError):
        session.next_block()


def test_open_audio_is_exported_from_the_front_door() -> None:
    import alpha2.api
    import alpha2.api.audio

    assert alpha2.open_audio is alpha2.api.open_audio is alpha2.api.audio.open_audio
    assert alpha2.AudioSource is alpha2.api.AudioSource is alpha2.api.audio.AudioSource
    assert {"open_audio", "AudioSource"} <= set(alpha2.__all__) & set(alpha2.api.__all__)
