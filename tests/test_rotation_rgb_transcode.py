"""Rotation and RGB inputs through ``alpha2 transcode`` (issue 11, items 4 and 5)."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.transcode_plan import TranscodeOptions, plan_transcode
from alpha2.api.transcoder import transcode
from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourRange
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation, Size
from tests.media import RGB_MEANS, make_clip, make_rgb_clip

_SD = ColourInfo(matrix=ColourMatrix.SMPTE170M, range=ColourRange.LIMITED)
_CLIP_EXT = {"png": "mov", "ffv1": "mkv", "ffvhuff": "avi"}
_AV_MATRIX = {1: "ITU709", 5: "ITU601", 6: "ITU601"}


def test_plan_tags_or_turns_the_rotation() -> None:
    kept = plan_transcode(Size(64, 48), PixelFormat.YUV420P, _SD, TranscodeOptions(), rotation=Rotation.CW90)
    assert kept.passthrough and kept.display_rotation is Rotation.CW90 and kept.rotation is Rotation.NONE
    assert "display-matrix tag" in kept.reason
    turned = plan_transcode(
        Size(64, 48),
        PixelFormat.YUV420P,
        _SD,
        TranscodeOptions(),
        rotation=Rotation.CW90,
        container_holds_rotation=False,
    )
    assert not turned.passthrough and turned.rotation is Rotation.CW90 and turned.output_size == Size(48, 64)
    # --size fits the picture as displayed (48 x 64 shown): 30 wide fits 30 x 40.
    sized = plan_transcode(
        Size(64, 48), PixelFormat.YUV420P, _SD, TranscodeOptions(size=Size(30, 100)), rotation=Rotation.CW270
    )
    assert sized.output_size == Size(30, 40) and sized.rotation is Rotation.CW270
    odd = plan_transcode(Size(65, 49), PixelFormat.YUV420P, _SD, TranscodeOptions(), rotation=Rotation.CW90)
    assert odd.crop == (0, 0, 64, 48) and odd.output_size == Size(48, 64)


def test_plan_never_passes_rgb_through() -> None:
    rgb = ColourInfo(matrix=ColourMatrix.RGB, range=ColourRange.FULL)
    plan = plan_transcode(Size(64, 48), PixelFormat.RGB24, rgb, TranscodeOptions())
    assert plan.output_format is PixelFormat.YUV420P
    assert plan.output_colour.matrix is ColourMatrix.SMPTE170M
    assert plan.output_colour.range is ColourRange.LIMITED


def _rotation_of(path: Path) -> int:
    with av.open(str(path)) as container:
        return next(container.decode(video=0)).rotation


def test_passthrough_keeps_the_rotation_tag(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "rot.mp4", width=64, height=32, frames=3, rotation_ccw=-90)
    for ext in ("mp4", "mkv"):
        out = tmp_path / f"out.{ext}"
        stats = transcode(clip.path, out, TranscodeOptions(audio=False, hwaccel="none"))
        assert stats.plan is not None and stats.plan.passthrough
        assert _rotation_of(out) == -90


@pytest.mark.vulkan
def test_container_without_a_matrix_gets_turned_pixels(tmp_path: Path) -> None:
    pytest.importorskip("wgpu")
    clip = make_clip(tmp_path / "rot.mkv", codec="ffv1", width=64, height=32, frames=3, rotation_ccw=-90)
    out = tmp_path / "out.avi"
    stats = transcode(clip.path, out, TranscodeOptions(codec="ffv1", audio=False, hwaccel="none"))
    assert stats.as_dict()["output_size"] == [32, 64]
    with av.open(str(clip.path)) as src, av.open(str(out)) as got:
        a = next(src.decode(video=0)).to_ndarray(format="gray").astype(np.int32)
        b = next(got.decode(video=0)).to_ndarray(format="gray").astype(np.int32)
    assert b.shape == (64, 32)
    assert np.abs(np.rot90(a, -1) - b).mean() < 4


@pytest.mark.parametrize(("codec", "pix_fmt"), [("png", "rgb24"), ("ffv1", "bgr0"), ("ffvhuff", "gbrp")])
@pytest.mark.parametrize("ext", ["mp4", "webm"])
def test_rgb_inputs_keep_their_levels(tmp_path: Path, codec: str, pix_fmt: str, ext: str) -> None:
    src = make_rgb_clip(tmp_path / f"rgb_{pix_fmt}.{_CLIP_EXT[codec]}", codec, pix_fmt)
    out = tmp_path / f"out.{ext}"
    transcode(src, out, TranscodeOptions(audio=False, hwaccel="none", crf=10))
    with av.open(str(out)) as container:
        frames = list(container.decode(video=0))
    assert len(frames) == len(RGB_MEANS)
    for frame, level in zip(frames, RGB_MEANS, strict=True):
        assert frame.format.name.startswith("yuv")
        assert frame.color_range == 1  # limited (MPEG)
        assert frame.colorspace in _AV_MATRIX
        rgb = frame.reformat(
            format="rgb24", src_colorspace=_AV_MATRIX[frame.colorspace], src_color_range="MPEG"
        ).to_ndarray()
        assert abs(float(rgb.mean()) - level) <= 1.5, (float(rgb.mean()), level)


@pytest.mark.vulkan
def test_play_snapshot_shows_the_rotation(tmp_path: Path) -> None:
    pytest.importorskip("wgpu")
    from alpha2.apps.player import PlayOptions, play

    clip = make_clip(tmp_path / "rot.mkv", codec="ffv1", width=64, height=32, frames=2, rotation_ccw=-90)
    snap = tmp_path / "snap.png"
    stats = play(clip.path, PlayOptions(offscreen=True, snapshot=str(snap), hwaccel="none"))
    assert stats.size == Size(32, 64)
    with av.open(str(snap)) as png, av.open(str(clip.path)) as src:
        got = next(png.decode(video=0)).to_ndarray(format="gray").astype(np.int32)
        ref = next(src.decode(video=0)).to_ndarray(format="gray").astype(np.int32)
    assert got.shape == (64, 32)
    assert np.abs(got - np.rot90(ref, -1)).mean() < 6
