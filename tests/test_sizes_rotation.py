"""Odd sizes: the transcoder cuts an odd last column / row to the encoder's 4:2:0 alignment, pixel for
pixel, and says so; ``--size`` still scales."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.transcode_plan import TranscodeOptions, plan_transcode
from alpha2.api.transcode_report import TranscodeStats, summary_notes
from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourRange
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Size
from tests.media import make_clip

_COLOUR = ColourInfo(matrix=ColourMatrix.SMPTE170M, range=ColourRange.LIMITED)


def test_odd_sizes_are_cropped_not_scaled() -> None:
    plan = plan_transcode(Size(317, 179), PixelFormat.YUV420P, _COLOUR, TranscodeOptions())
    assert not plan.passthrough
    assert plan.output_size == Size(316, 178)
    assert plan.crop == (0, 0, 316, 178)
    assert "crop 317x179 -> 316x178" in plan.reason and "not resampled" in plan.reason
    one_side = plan_transcode(Size(320, 179), PixelFormat.YUV420P, _COLOUR, TranscodeOptions())
    assert one_side.output_size == Size(320, 178) and one_side.crop == (0, 0, 320, 178)
    # The summary line says it too, not only the plan's reason in --json.
    notes = summary_notes(TranscodeStats(input="in.mkv", output="out.mp4", plan=plan))
    assert any(n.startswith("cropped 317x179 to 316x178") for n in notes), notes


def test_size_still_scales_odd_inputs() -> None:
    plan = plan_transcode(Size(317, 179), PixelFormat.YUV420P, _COLOUR, TranscodeOptions(size=Size(160, 90)))
    assert plan.crop is None
    assert plan.output_size.width <= 160 and plan.output_size.height <= 90
    assert "scale 317x179" in plan.reason


def _frames_luma(path: str | Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="gray").astype(np.int32) for f in container.decode(video=0)]


@pytest.mark.vulkan
@pytest.mark.parametrize("pix_fmt", ["yuv444p", "gray"], ids=["planes-route", "rgba-route"])
def test_odd_transcode_keeps_the_pixels(tmp_path: Path, pix_fmt: str) -> None:
    wgpu = pytest.importorskip("wgpu")
    if wgpu.gpu.request_adapter_sync(power_preference="high-performance") is None:
        pytest.skip("wgpu has no adapter")
    from alpha2.api.transcoder import transcode

    clip = make_clip(tmp_path / "odd.mkv", codec="ffv1", width=65, height=49, frames=3, pix_fmt=pix_fmt)
    out = tmp_path / "out.mkv"
    # --gpu: the GPU route writes 4:2:0 and crops the odd sides (without it, a 4:4:4 or gray picture
    # passes through at its own size, as ffmpeg writes it: tests/test_tq_odd_sides.py).
    options = TranscodeOptions(codec="ffv1", audio=False, hwaccel="none", gpu=True)
    stats = transcode(clip.path, out, options)
    assert stats.as_dict()["crop"] == [0, 0, 64, 48]
    assert stats.as_dict()["output_size"] == [64, 48]
    source, result = _frames_luma(clip.path), _frames_luma(out)
    assert len(result) == len(source)
    for src, got in zip(source, result, strict=True):
        assert got.shape == (48, 64)
        # Cropped, not resampled: the top-left 64x48 of the luma comes through (lossless codec); a
        # 65x49 -> 64x48 resample (``--size 64x48``) is off by about 0.9 code values on average.
        error = np.abs(got - src[:48, :64]).mean()
        assert error < 0.1, error
