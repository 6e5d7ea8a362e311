"""``alpha2 sample``: the test clip's content, tags, size and atomic writing; the atomic helpers."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.atomic import atomic_path, check_output_path, write_bytes_atomic
from alpha2.apps.sample import pattern_planes, sample_colour, write_sample
from alpha2.gpu.colour import ColourMatrix, ColourRange, rgb_to_yuv
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.geometry import Size


def test_pattern_planes_are_the_rgb_waves_in_ycbcr() -> None:
    size = Size(64, 36)
    colour = sample_colour(size)
    y, cb, cr = pattern_planes(size, 7, 30.0, colour)
    assert y.shape == (36, 64) and cb.shape == cr.shape == (18, 32)
    # Recompute one luma sample from the RGB formula, straight.
    t, x, row = 7 / 30, 10, 20
    u, v = x / 64, row / 36
    rgb = np.array(
        [
            0.5 + 0.4 * np.sin(2 * np.pi * (u + 0.2 * t)),
            0.5 + 0.4 * np.sin(2 * np.pi * (v - 0.15 * t)),
            0.5 + 0.4 * np.sin(2 * np.pi * (0.75 * u + 0.3 * t + 0.75 * v)),
        ]
    )
    codes = rgb_to_yuv(colour.matrix, colour.range, 8).apply(rgb)
    assert abs(int(y[row, x]) - codes[0]) <= 0.5 + 1e-9
    assert 16 <= y.min() and y.max() <= 235
    assert not np.array_equal(pattern_planes(size, 8, 30.0, colour)[0], y), "the pattern moves"


def test_colour_by_size() -> None:
    assert sample_colour(Size(1280, 720)).matrix is ColourMatrix.BT709
    assert sample_colour(Size(640, 360)).matrix is ColourMatrix.SMPTE170M
    assert sample_colour(Size(640, 360)).range is ColourRange.LIMITED


def test_write_sample(tmp_path: Path) -> None:
    out = tmp_path / "s.mp4"
    result = write_sample(str(out), duration_s=0.4, size=Size(128, 72))
    assert result.frames == 12 and result.codec == "libx264"
    assert [p.name for p in tmp_path.iterdir()] == ["s.mp4"]
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        frames = list(container.decode(stream))
        assert len(frames) == 12
        assert (stream.codec_context.width, stream.codec_context.height) == (128, 72)
        assert int(frames[0].colorspace) == int(ColourMatrix.SMPTE170M)
        assert int(frames[0].color_range) == int(ColourRange.LIMITED)
        has_audio = len(container.streams.audio) > 0
        luma = frames[5].to_ndarray(format="yuv420p")[:72]
    assert has_audio and result.audio
    expected = pattern_planes(Size(128, 72), 5, 30.0, sample_colour(Size(128, 72)))[0]
    mse = np.mean((luma.astype(float) - expected.astype(float)) ** 2)
    assert 10 * np.log10(255**2 / max(mse, 1e-9)) > 40


def test_write_sample_refuses(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        write_sample(str(tmp_path / "a.mp4"), size=Size(101, 50))
    with pytest.raises(InvalidInputError):
        write_sample(str(tmp_path / "a.mp4"), duration_s=0)
    with pytest.raises(UnsupportedError):
        write_sample(str(tmp_path / "a.mp4"), codec="no-such-encoder", duration_s=0.1)
    assert list(tmp_path.iterdir()) == []


def test_atomic_path(tmp_path: Path) -> None:
    target = tmp_path / "f.bin"
    write_bytes_atomic(target, b"abc")
    assert target.read_bytes() == b"abc"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            Path(tmp).write_bytes(b"partial")
            raise RuntimeError("fail half-way")
    assert target.read_bytes() == b"abc", "a failed write leaves the old file alone"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]
    with pytest.raises(InvalidInputError, match="does not exist"):
        check_output_path(tmp_path / "missing" / "x")
    with pytest.raises(InvalidInputError, match="directory"):
        check_output_path(tmp_path)


@pytest.mark.parametrize("ext", [".mp4", ".webm"])
def test_sample_tone(tmp_path: Path, ext: str) -> None:
    out = tmp_path / f"t{ext}"
    codec = "vp9" if ext == ".webm" else "h264"
    write_sample(str(out), duration_s=0.5, size=Size(64, 36), codec=codec)
    with av.open(str(out)) as container:
        stream = container.streams.audio[0]
        assert stream.codec_context.name == ("opus" if ext == ".webm" else "aac")
        pcm = np.concatenate(
            [
                f.to_ndarray().reshape(f.layout.nb_channels if f.format.is_planar else 1, -1)[0]
                for f in container.decode(stream)
            ]
        ).astype(np.float64)
        rate = stream.rate
    assert len(pcm) >= 0.45 * rate
    middle = pcm[len(pcm) // 4 : 3 * len(pcm) // 4]
    spectrum = np.abs(np.fft.rfft(middle * np.hanning(len(middle))))
    peak_hz = np.argmax(spectrum) * rate / len(middle)
    assert abs(peak_hz - 440) < 15, peak_hz
    assert 0.1 < np.sqrt(np.mean(middle**2)) < 0.2  # 0.2 amplitude sine: RMS 0.141


def test_no_audio(tmp_path: Path) -> None:
    out = tmp_path / "v.mp4"
    result = write_sample(str(out), duration_s=0.2, size=Size(64, 36), audio=False)
    assert not result.audio and result.audio_note == "--no-audio"
    with av.open(str(out)) as container:
        assert not container.streams.audio


def test_outputs_get_the_usual_file_mode(tmp_path: Path) -> None:
    out = tmp_path / "m.png"
    write_bytes_atomic(out, b"\x89PNG")  # mkstemp underneath: 0600 unless the mode is set
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


def test_a_replaced_output_keeps_its_permissions(tmp_path: Path) -> None:
    out = tmp_path / "m.png"
    out.write_bytes(b"old")
    out.chmod(0o640)  # a group-readable file written over with -y stays so, as ffmpeg -y leaves it
    write_bytes_atomic(out, b"\x89PNG")
    assert out.read_bytes() == b"\x89PNG"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    out.chmod(0o4755)  # set-id bits are not carried over to the new file
    write_bytes_atomic(out, b"\x89PNG2")
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
