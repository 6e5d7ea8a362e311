"""``alpha2 transcode`` of a stream whose picture size changes part-way (joined MPEG-TS or raw H.264
files): the frames of the other size are scaled to the output size on purpose (swscale on a passthrough,
the route's own scaler otherwise), counted and said in the summary; the GPU route scales them whole
(the plan's odd-side crop is the first size's). A pixel format change alone (4:2:0, then 4:2:2) is
converted and said the same way."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.apps import cli

sys.path.insert(0, os.path.dirname(__file__))
from media import concat_files, make_clip, pattern

Capsys = pytest.CaptureFixture[str]


def _joined(
    tmp_path: Path, ext: str = ".ts", first: tuple[int, int] = (64, 48), pix_fmt: str = "yuv420p"
) -> str:
    a = make_clip(tmp_path / f"a{ext}", width=first[0], height=first[1], frames=10, rate=25, pix_fmt=pix_fmt)
    b = make_clip(tmp_path / f"b{ext}", width=128, height=96, frames=10, rate=25, pix_fmt=pix_fmt)
    return concat_files(str(tmp_path / f"joined{ext}"), a.path, b.path)


def _run(capsys: Capsys, src: str, out: str, *extra: str) -> tuple[dict[str, Any], str]:
    assert cli.main(["transcode", src, out, "-y", "--json", *extra]) == 0
    data = json.loads(capsys.readouterr().out)
    assert cli.main(["transcode", src, out, "-y", *extra]) == 0
    return data, capsys.readouterr().err


def _frames(path: str) -> list[np.ndarray]:
    with av.open(path) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def _like_pattern(frame: np.ndarray, index: int) -> float:
    """Mean difference from the joined file's second part's frame ``index`` scaled to ``frame``'s size."""
    h, w = frame.shape[:2]
    ref = av.VideoFrame.from_ndarray(pattern(index, 128, 96), format="rgb24").reformat(w, h)
    return float(np.abs(ref.to_ndarray().astype(float) - frame.astype(float)).mean())


@pytest.mark.parametrize("ext", [".ts", ".h264"])
def test_passthrough_scales_a_size_change_and_says_so(tmp_path: Path, capsys: Capsys, ext: str) -> None:
    src = _joined(tmp_path, ext)
    out = str(tmp_path / "out.mp4")
    data, err = _run(capsys, src, out)
    assert data["frames"] == 20
    notes = [n for n in data["input_notes"] if n.startswith("picture size changed")]
    assert len(notes) == 1, data["input_notes"]
    assert "(128x96): 10 frames scaled to 64x48" in notes[0]
    assert "at 0.400 s" in notes[0]
    assert "picture size changed" in err
    frames = _frames(out)
    assert len(frames) == 20 and all(f.shape == (48, 64, 3) for f in frames)
    assert _like_pattern(frames[15], 5) < 12  # the whole 128x96 picture, scaled


def test_cpu_scale_route_says_the_size_change(tmp_path: Path, capsys: Capsys) -> None:
    src = _joined(tmp_path)
    out = str(tmp_path / "out.mp4")
    data, _ = _run(capsys, src, out, "--size", "32x24")
    notes = [n for n in data["input_notes"] if n.startswith("picture size changed")]
    assert len(notes) == 1 and "10 frames scaled to 32x24" in notes[0], data["input_notes"]
    frames = _frames(out)
    assert len(frames) == 20 and all(f.shape == (24, 32, 3) for f in frames)


@pytest.mark.vulkan
def test_gpu_route_scales_a_size_change_whole(tmp_path: Path, capsys: Capsys) -> None:
    # An odd first size in 4:4:4 makes the GPU route crop it to even sides; the 128x96 frames after it
    # are scaled whole, not cropped to the first size's corner.
    src = _joined(tmp_path, first=(65, 49), pix_fmt="yuv444p")
    out = str(tmp_path / "out.mp4")
    data, _ = _run(capsys, src, out, "--gpu")
    assert data["frames"] == 20
    notes = [n for n in data["input_notes"] if n.startswith("picture size changed")]
    assert len(notes) == 1 and "10 frames scaled to 64x48 on the GPU" in notes[0], data["input_notes"]
    frames = _frames(out)
    assert len(frames) == 20 and all(f.shape == (48, 64, 3) for f in frames)
    assert _like_pattern(frames[15], 5) < 12


# -- a pixel format change alone (joined files of one size, 4:2:0 then 4:2:2) --------------------------


def _format_joined(tmp_path: Path) -> str:
    a = make_clip(tmp_path / "a.ts", width=64, height=48, frames=10, rate=25, pix_fmt="yuv420p")
    b = make_clip(tmp_path / "b.ts", width=64, height=48, frames=10, rate=25, pix_fmt="yuv422p")
    return concat_files(str(tmp_path / "joined.ts"), a.path, b.path)


def _decoded(path: str) -> list[np.ndarray]:
    """The joined file's pictures as FFmpeg converts them (each frame from its own format)."""
    with av.open(path) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def _format_notes(data: dict[str, Any]) -> list[str]:
    assert not [n for n in data["input_notes"] if n.startswith("picture size changed")], data["input_notes"]
    return [n for n in data["input_notes"] if n.startswith("pixel format changed")]


def test_passthrough_converts_a_pixel_format_change_and_says_so(tmp_path: Path, capsys: Capsys) -> None:
    """Found by an outside pass: the 4:2:2 frames were converted by PyAV's reformat in the encoder and
    the summary said nothing; now swscale converts them as the first's format and colour, and says so."""
    src = _format_joined(tmp_path)
    out = str(tmp_path / "out.mp4")
    # Software decoding: on NVIDIA the 4:2:0 part is NVDEC's (nv12) and the 4:2:2 part converted to nv12
    # (the H100 run of 2026-12-05), on the GPU route when scaled; this is the CPU's conversion.
    data, err = _run(capsys, src, out, "--crf", "0", "--hwaccel", "none")
    assert data["frames"] == 20
    notes = _format_notes(data)
    assert notes == [
        "pixel format changed at 0.400 s (yuv422p): 10 frames converted to yuv420p on the CPU (swscale)"
    ]
    assert "pixel format changed" in err
    frames, source = _frames(out), _decoded(src)
    assert len(frames) == 20
    for index in (5, 15):  # lossless x264 of the 4:2:0 picture: within rounding of FFmpeg's own conversion
        assert np.abs(frames[index].astype(int) - source[index].astype(int)).mean() < 3, index


def test_cpu_scale_route_says_the_pixel_format_change(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CPU scale route is taken where alpha2's device is a CPU one (lavapipe); on an NVIDIA machine
    # the GPU route scales software-decoded frames too ("a GPU device is at hand": the H100 run of
    # 2026-12-05 said "converted to nv12 on the GPU", rightly), so the device is said to be a CPU's here.
    from alpha2.api import scale_route

    monkeypatch.setattr(scale_route, "cpu_device_reason", lambda *_: "the device 'llvmpipe' is a CPU device")
    args = ("--size", "32x24", "--hwaccel", "none")  # on NVDEC's frames the GPU route scales
    data, _ = _run(capsys, _format_joined(tmp_path), str(tmp_path / "out.mp4"), *args)
    assert data["scale_route"]["route"] == "swscale", data["scale_route"]
    notes = _format_notes(data)
    assert len(notes) == 1 and "(yuv422p): 10 frames converted to" in notes[0], data["input_notes"]
    assert notes[0].endswith("on the CPU (swscale)")


@pytest.mark.vulkan
def test_gpu_route_says_the_pixel_format_change(tmp_path: Path, capsys: Capsys) -> None:
    data, _ = _run(capsys, _format_joined(tmp_path), str(tmp_path / "out.mp4"), "--gpu")
    notes = _format_notes(data)
    assert len(notes) == 1 and notes[0].endswith("on the GPU"), data["input_notes"]
    assert len(_frames(str(tmp_path / "out.mp4"))) == 20
