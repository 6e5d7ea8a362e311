"""Odd-sided 4:4:4 and 4:2:2 pictures pass through at their own size, as the ffmpeg command passes
them: only 4:2:0 (and the GPU route, which writes NV12) needs even sides. Before, a 321x241 yuv444p
clip lost a column and a row and its chroma detail (cropped into 4:2:0), and with the crop skipped
the encoder's size check refused it as 4:2:0."""

from __future__ import annotations

import sys
from pathlib import Path

import av
import pytest

from alpha2.api.transcoder import TranscodeOptions, plan_transcode, transcode
from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourPrimaries, ColourRange
from alpha2.gpu.colour import TransferCharacteristic as Trc
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Size

sys.path.insert(0, str(Path(__file__).parent))
from media import make_clip

_SD = ColourInfo(ColourMatrix.SMPTE170M, ColourPrimaries.SMPTE170M, Trc.BT709, ColourRange.LIMITED)
_X264 = ("yuv420p", "yuv422p", "yuv444p", "nv12")


@pytest.mark.parametrize(
    ("fmt", "size"),
    [(PixelFormat.YUV444P, Size(321, 241)), (PixelFormat.YUV422P, Size(320, 241))],
)
def test_plan_keeps_odd_sides_the_chroma_allows(fmt: PixelFormat, size: Size) -> None:
    plan = plan_transcode(size, fmt, _SD, TranscodeOptions(), encoder="libx264", encoder_formats=_X264)
    assert plan.passthrough
    assert plan.output_size == size
    assert plan.output_format == fmt
    assert plan.crop is None


def test_plan_still_crops_odd_sides_for_420_and_the_gpu_route() -> None:
    odd = Size(321, 241)
    plan = plan_transcode(odd, PixelFormat.YUV420P, _SD, TranscodeOptions(), encoder_formats=_X264)
    assert plan.output_size == Size(320, 240) and plan.crop == (0, 0, 320, 240)
    gpu = plan_transcode(odd, PixelFormat.YUV444P, _SD, TranscodeOptions(gpu=True), encoder_formats=_X264)
    assert not gpu.passthrough
    assert gpu.output_size == Size(320, 240) and gpu.crop == (0, 0, 320, 240)
    assert "crop 321x241 -> 320x240" in gpu.reason
    # An encoder that takes only 4:2:0 gets the crop too.
    svt = plan_transcode(odd, PixelFormat.YUV444P, _SD, TranscodeOptions(), encoder_formats=("yuv420p",))
    assert svt.output_size == Size(320, 240)


def test_transcode_writes_an_odd_sided_444_clip_whole(tmp_path: Path) -> None:
    src = tmp_path / "odd.mkv"
    make_clip(src, width=321, height=241, frames=6, pix_fmt="yuv444p")
    out = tmp_path / "out.mkv"
    stats = transcode(str(src), str(out), TranscodeOptions(codec="h264", preset="ultrafast"))
    assert stats.frames == 6
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert (stream.codec_context.width, stream.codec_context.height) == (321, 241)
        assert stream.codec_context.pix_fmt == "yuv444p"


def test_encoders_that_take_odd_420_keep_odd_sides(tmp_path: Path) -> None:
    """VP9, VP8, SVT-AV1, FFV1 and MPEG-4 take a 4:2:0 picture of odd sides, as ffmpeg hands it them
    (found by an outside pass: a 641x361 clip into .webm was cut to 640x360, 'needs even sides')."""
    odd = Size(321, 241)
    for encoder in ("libvpx-vp9", "libsvtav1", "ffv1"):
        plan = plan_transcode(odd, PixelFormat.YUV420P, _SD, TranscodeOptions(), encoder=encoder)
        assert plan.passthrough and plan.output_size == odd and plan.crop is None, encoder
    tiny = plan_transcode(Size(3, 3), PixelFormat.YUV420P, _SD, TranscodeOptions(), encoder="ffv1")
    assert tiny.output_size == Size(2, 2)  # FFV1 takes no 3x3 4:2:0: cut as before
    src = tmp_path / "odd.mkv"
    make_clip(src, codec="ffv1", width=321, height=241, frames=4)
    out = tmp_path / "out.webm"
    stats = transcode(str(src), str(out), TranscodeOptions(codec="vp9"))
    assert stats.frames == 4
    with av.open(str(out)) as container:
        frames = list(container.decode(video=0))
    assert len(frames) == 4 and (frames[0].width, frames[0].height) == (321, 241)


def test_the_gpu_route_says_it_writes_420() -> None:
    """Scaled, a 4:2:2 or 4:4:4 picture comes out 4:2:0 (both routes write NV12 / P010): said, where
    the summary said only 'output nv12' (an outside pass); not as the GPU route's alone, which the CPU
    route said too (another)."""
    for fmt, chroma in ((PixelFormat.YUV444P, "4:4:4"), (PixelFormat.YUV422P, "4:2:2")):
        plan = plan_transcode(Size(320, 240), fmt, _SD, TranscodeOptions(size=Size(160, 120)))
        assert f"chroma {chroma} -> 4:2:0 (processed pictures are written as nv12)" in plan.reason
    plain = plan_transcode(Size(320, 240), PixelFormat.YUV420P, _SD, TranscodeOptions(size=Size(160, 120)))
    assert "chroma" not in plain.reason
