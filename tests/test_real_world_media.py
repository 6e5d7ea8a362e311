"""Real-world media: timestamps that repeat, go back or reset; concealed frames; metadata that is not
UTF-8; unknown output extensions; seeks on MPEG-TS / PS; 10-bit into H.264. Media made by the tests."""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

import av
import pytest

from alpha2.api.atomic import write_bytes_atomic
from alpha2.apps import cli
from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.ffmpeg_bridge.audio import AudioDecodeSession
from alpha2.gpu.errors import OutputWriteError
from alpha2.gpu.formats import PixelFormat

sys.path.insert(0, os.path.dirname(__file__))
from media import (
    concat_files,
    flip_bits,
    make_clip,
    make_interlaced_mpeg2,
    make_non_utf8_metadata,
    make_rgb_clip,
    mux_with_pts,
    remux,
    swap_mkv_clusters,
    zero_mp4_stts,
)

Capsys = pytest.CaptureFixture[str]


def _transcode(capsys: Capsys, src: str, out: str, *extra: str) -> tuple[int, Any, str]:
    code = cli.main(["transcode", src, out, "--json", *extra])
    captured = capsys.readouterr()
    data = json.loads(captured.out) if code == 0 else None
    return code, data, captured.err


def _video_pts(path: str) -> list[int]:
    with av.open(path) as container:
        stream = container.streams.video[0]
        return [f.pts for f in container.decode(stream)]


def _strictly_increasing(values: list[int]) -> bool:
    return all(b > a for a, b in itertools.pairwise(values))


def _no_partials(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if ".partial" in p.name]


def test_duplicate_pts_in_matroska_are_nudged(tmp_path: Path, capsys: Capsys) -> None:
    src = mux_with_pts(tmp_path / "dup.mkv", [0, 1, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8])
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mkv"))
    assert code == 0, err
    assert data["frames"] == 12
    assert data["timestamps_adjusted"]["video"] == {"duplicate": 3}
    pts = _video_pts(str(tmp_path / "out.mkv"))
    assert len(pts) == 12 and _strictly_increasing(pts)


def test_swapped_matroska_clusters_are_rebased(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "c.mkv", frames=24)
    clustered = remux(clip.path, str(tmp_path / "cl.mkv"), {"cluster_time_limit": "150"})
    src = swap_mkv_clusters(clustered, str(tmp_path / "sw.mkv"))
    decoded = len(_video_pts(src))
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mp4"))
    assert code == 0, err
    assert data["frames"] == decoded
    assert data["timestamps_adjusted"]["video"].get("backward", 0) >= 1
    assert _strictly_increasing(_video_pts(str(tmp_path / "out.mp4")))


def test_all_zero_stts_mp4_keeps_every_frame(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "c.mp4", frames=12)
    src = zero_mp4_stts(clip.path, str(tmp_path / "z.mp4"))
    assert set(_video_pts(src)) == {0}
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mkv"))
    assert code == 0, err
    assert data["frames"] == 12 and data["timestamps_adjusted"]["video"] == {"duplicate": 11}
    code = cli.main(["transcode", src, str(tmp_path / "out2.mkv")])
    assert code == 0 and "video timestamps adjusted 11 (11 duplicate)" in capsys.readouterr().err


def test_concatenated_ts_with_a_reset_video_and_audio(tmp_path: Path, capsys: Capsys) -> None:
    part = make_clip(tmp_path / "a.ts", frames=12, audio=True)
    src = concat_files(str(tmp_path / "cat.ts"), part.path, part.path)
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mkv"))
    assert code == 0, err
    assert data["frames"] == 24
    assert data["timestamps_adjusted"]["video"] == {"reset": 1}
    audio = data["timestamps_adjusted"]["audio"]
    assert audio.get("reset", 0) + audio.get("dropped", 0) >= 1, audio
    assert _strictly_increasing(_video_pts(str(tmp_path / "out.mkv")))


def test_concealed_frames_are_kept_counted_and_reported(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "t.mkv", "h264", 128, 96, 30)
    bad = ""
    for seed in range(12):
        bad = flip_bits(clip.path, str(tmp_path / "bad.mkv"), count=30, seed=seed)
        with DecodeSession(bad, hwaccel="none", threads=2) as session:
            kept = list(session)
            stats = session.stats
        if stats.corrupt_frames_kept:
            break
    assert stats.corrupt_frames_kept > 0, "no seed made FFmpeg conceal a frame"
    with DecodeSession(bad, hwaccel="none", threads=2, on_corrupt="skip") as session:
        skipped = list(session)
        assert len(skipped) + session.stats.corrupt_frames_skipped == len(kept)
    # Software decoding: NVDEC decodes the macroblocks in hardware, where FFmpeg sees no errors to flag.
    code, data, err = _transcode(capsys, bad, str(tmp_path / "out.mkv"), "--hwaccel", "none")
    assert code == 0, err
    assert data["decode"]["corrupt_frames_kept"] > 0
    assert data["frames"] == len(_video_pts(str(tmp_path / "out.mkv")))


@pytest.mark.parametrize("ext", [".mkv", ".mp4"])
def test_metadata_that_is_not_utf8(tmp_path: Path, capsys: Capsys, ext: str) -> None:
    src = make_non_utf8_metadata(tmp_path / f"m{ext}", audio=True)
    with pytest.raises(UnicodeDecodeError):
        av.open(src).close()  # the file really is bad for a plain open
    with DecodeSession(src, hwaccel="none") as session:
        assert len(list(session)) == 6
    with AudioDecodeSession(src) as audio:
        assert audio.info.sample_rate > 0
    code, data, err = _transcode(capsys, src, str(tmp_path / f"out{ext}"))
    assert code == 0, err
    assert data["frames"] == 6 and data["audio_packets_copied"] > 0


@pytest.mark.parametrize("name", ["x.xyz", "x.txt", "x.webm.", "noext"])
def test_unknown_output_extension_is_a_usage_error(tmp_path: Path, capsys: Capsys, name: str) -> None:
    clip = make_clip(tmp_path / "c.mkv", frames=3)
    code = cli.main(["transcode", clip.path, str(tmp_path / name)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("alpha2: error: ") and ".mp4" in err[0] and ".mkv" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.mkv"]


def _first_after_seek(path: str, seconds: float) -> tuple[int | None, float | None]:
    with DecodeSession(path, hwaccel="none") as session:
        session.seek(seconds)
        frame = session.next_frame()
        if frame is None:
            return None, None
        start = session.info.start_time or 0
        tb = frame.metadata.time_base
        assert tb is not None and frame.pts is not None
        return frame.pts, float((frame.pts - start) * tb)


def test_seek_on_a_ts_with_one_key_frame(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "one.ts", frames=30, gop=1000)
    for seconds in (0.3, 0.9, 0.0, 0.5):
        _, at = _first_after_seek(clip.path, seconds)
        assert at == pytest.approx(seconds, abs=1e-6)


def test_seek_on_a_ts_lands_on_the_target(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "g.ts", frames=60, gop=12, width=160, height=120)
    for seconds in (0.2, 0.5, 1.5, 0.0):
        _, at = _first_after_seek(clip.path, seconds)
        assert at == pytest.approx(seconds, abs=1e-6)


def test_seek_on_an_interlaced_ps_not_starting_at_zero(tmp_path: Path) -> None:
    src = make_interlaced_mpeg2(tmp_path / "il.mpg")
    first = _video_pts(src)[0]
    assert first > 0, "the program stream starts after 0"
    pts, at = _first_after_seek(src, 0.0)
    assert pts == first and at == 0.0
    _, at = _first_after_seek(src, 1.0)
    assert at == pytest.approx(1.0, abs=1e-6)


def test_seek_past_the_end_and_on_a_stream_without_frames(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "s.ts", frames=12)
    assert _first_after_seek(clip.path, 5.0) == (None, None)


def test_interlaced_passthrough_is_coded_interlaced(tmp_path: Path, capsys: Capsys) -> None:
    src = make_interlaced_mpeg2(tmp_path / "il.mkv", frames=12)
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mkv"))
    assert code == 0, err
    assert any("interlaced" in note and "kept" in note for note in data["input_notes"])
    with av.open(str(tmp_path / "out.mkv")) as container:
        assert next(container.decode(video=0)).interlaced_frame


def test_interlaced_scaled_on_the_cpu_is_not_said_gpu(tmp_path: Path, capsys: Capsys) -> None:
    """Scaled by swscale, an interlaced input was said made progressive by 'the GPU path'."""
    src = make_interlaced_mpeg2(tmp_path / "il.mkv", frames=6)
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mp4"), "--size", "160x-1")
    assert code == 0, err
    notes = [note for note in data["input_notes"] if "interlaced" in note]
    assert notes and "not deinterlaced" in notes[0] and "GPU" not in notes[0], notes


def test_alpha_input_is_reported(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "a.mkv", "ffv1", frames=4, pix_fmt="yuva420p")
    code, data, err = _transcode(capsys, clip.path, str(tmp_path / "out.mkv"))
    assert code == 0, err
    assert any(note.startswith("alpha dropped") for note in data["input_notes"])


@pytest.mark.parametrize("pix_fmt", ["bgr0", "gbrp"])
def test_rgb_without_alpha_is_not_reported_as_alpha(tmp_path: Path, capsys: Capsys, pix_fmt: str) -> None:
    """bgr0's fourth byte is padding and gbrp has no alpha: decoded as rgb24, with no alpha note."""
    codec, ext = ("ffv1", "mkv") if pix_fmt == "bgr0" else ("ffvhuff", "avi")
    src = make_rgb_clip(tmp_path / f"{pix_fmt}.{ext}", codec=codec, pix_fmt=pix_fmt)
    with DecodeSession(src, hwaccel="none") as session:
        frame = session.next_frame()
        assert frame is not None and frame.pixel_format is PixelFormat.RGB24
        frame.release()
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mkv"))
    assert code == 0, err
    assert not any(note.startswith("alpha dropped") for note in data["input_notes"]), data["input_notes"]


def test_ten_bit_into_h264_is_eight_bit_unless_asked(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "ten.mkv", pix_fmt="yuv420p10le", frames=4)
    code, data, err = _transcode(capsys, clip.path, str(tmp_path / "eight.mp4"))
    assert code == 0, err
    assert data["depth_reduced"] and "10 to 8" in data["depth_reduced"]
    with av.open(str(tmp_path / "eight.mp4")) as container:
        assert container.streams.video[0].codec_context.pix_fmt == "yuv420p"
    code, data, err = _transcode(capsys, clip.path, str(tmp_path / "ten.mp4"), "--depth", "10")
    assert code == 0, err
    assert data["depth_reduced"] is None
    with av.open(str(tmp_path / "ten.mp4")) as container:
        assert container.streams.video[0].codec_context.pix_fmt == "yuv420p10le"
    code = cli.main(["transcode", clip.path, str(tmp_path / "again.mp4")])
    assert code == 0 and "depth reduced from 10 to 8 bits" in capsys.readouterr().err


def test_a_write_error_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "snap.png"
    with pytest.raises(OutputWriteError, match=r"snap\.png.*No space left"):
        write_bytes_atomic(target, b"x")
    assert list(tmp_path.iterdir()) == []
