"""What an encoder takes, said before it is taken: the plan knows the chosen encoder's pixel formats
(an 8-bit-only libvpx gets 8 bits and an HDR input tone mapped, not "HDR kept: 10 bits"; a 4:4:4 input
into an encoder without 4:4:4 says its chroma goes), the decoder keeps depth and chroma when it must
convert a layout alpha2 lacks and says so (AVI's one-frame clock and MOV's refusals are in
tests/test_encode.py)."""

from __future__ import annotations

import pytest

from alpha2.api.transcode_choices import DepthChoice
from alpha2.api.transcode_plan import TranscodeOptions, output_depth, plan_transcode
from alpha2.ffmpeg_bridge.decode import _fallback_software_format
from alpha2.ffmpeg_bridge.encoders import nearest_encoder_format
from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourPrimaries, ColourRange, TransferCharacteristic
from alpha2.gpu.errors import UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Size

VP9_8BIT = ("yuv420p", "yuva420p", "yuv422p", "yuva422p", "yuv440p", "yuv444p", "yuva444p", "gbrp", "gbrap")
"""libvpx-vp9's formats in a build without high bit depth (PyAV's wheels)."""

HDR10 = ColourInfo(
    ColourMatrix.BT2020_NCL,
    ColourPrimaries.BT2020,
    TransferCharacteristic.SMPTE2084,
    ColourRange.LIMITED,
)


def test_nearest_format_keeps_alpha_then_depth() -> None:
    ten = PixelFormat.from_ffmpeg_name("yuv422p10le")
    assert nearest_encoder_format(ten, ("yuv420p", "yuv420p10le")).ffmpeg_name == "yuv420p10le"
    assert nearest_encoder_format(ten, ()) is ten and nearest_encoder_format(ten, ("yuv422p10le",)) is ten
    alpha = PixelFormat.from_ffmpeg_name("yuva420p")
    assert nearest_encoder_format(alpha, VP9_8BIT).ffmpeg_name == "yuva420p"
    assert nearest_encoder_format(alpha, ("yuv420p", "nv12")).ffmpeg_name == "yuv420p"


def test_an_8_bit_only_encoder_gets_8_bits_and_hdr_is_tone_mapped() -> None:
    p010 = PixelFormat.from_ffmpeg_name("yuv420p10le")
    depth, note = output_depth(p010, HDR10, "vp9", DepthChoice.AUTO, "libvpx-vp9", VP9_8BIT)
    assert depth == 8 and note is not None and "libvpx-vp9 encodes 8 bits only" in note
    with pytest.raises(UnsupportedError, match="--depth 10: libvpx-vp9 encodes 8 bits only"):
        output_depth(p010, HDR10, "vp9", DepthChoice.TEN, "libvpx-vp9", VP9_8BIT)
    plan = plan_transcode(
        Size(64, 48),
        p010,
        HDR10,
        TranscodeOptions(),
        codec="vp9",
        encoder="libvpx-vp9",
        encoder_formats=VP9_8BIT,
    )
    assert plan.tone_map and not plan.keeps_hdr and plan.output_format.bit_depth == 8


def test_a_passthrough_says_what_the_encoder_cannot_take() -> None:
    yuv444 = PixelFormat.from_ffmpeg_name("yuv444p")
    plan = plan_transcode(
        Size(64, 48),
        yuv444,
        ColourInfo(),
        TranscodeOptions(),
        encoder="someenc",
        encoder_formats=("yuv420p",),
    )
    assert plan.passthrough and plan.output_format.ffmpeg_name == "yuv420p"
    assert "someenc has no yuv444p: chroma 4:4:4 -> 4:2:0" in plan.reason
    assert "same size, pixel format" not in plan.reason


def test_layouts_alpha2_lacks_are_converted_keeping_depth_and_chroma() -> None:
    assert _fallback_software_format("yuva444p12le") == "yuv444p12le"
    assert _fallback_software_format("yuv411p") == "yuv422p"
    assert _fallback_software_format("yuv420p9le") == "yuv420p10le"
    assert _fallback_software_format("bgr0") == "rgb24"
