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
    with pytest.raises(UnsupportedError, match="depth 10: libvpx-vp9 encodes 8 bits only"):
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


PRORES_KS = ("yuv422p10le", "yuv444p10le", "yuva444p10le")
FFV1_SOME = ("yuv420p", "yuva420p", "yuv444p", "yuv422p", "bgr0", "bgra", "yuv444p10le", "gray")
X264 = ("yuv420p", "yuvj420p", "yuv422p", "yuv444p", "nv12", "yuv420p10le", "yuv444p10le")
GIF = ("rgb8", "bgr8", "rgb4_byte", "bgr4_byte", "gray", "pal8")


def test_the_nearest_format_loses_least() -> None:
    """Found by an outside pass: after 4:2:0 the encoder's first format was taken, so ProRes 4444 came
    out 4:2:2 and an RGB picture went to FFV1 as 4:2:0."""
    fmt = PixelFormat.from_ffmpeg_name
    assert nearest_encoder_format(fmt("yuv444p"), PRORES_KS, "prores_ks").ffmpeg_name == "yuv444p10le"
    assert nearest_encoder_format(fmt("yuv422p"), PRORES_KS, "prores_ks").ffmpeg_name == "yuv422p10le"
    # RGB into a lossless encoder stays RGB (with an opaque alpha plane where no RGB without one is ours)
    assert nearest_encoder_format(PixelFormat.RGB24, FFV1_SOME, "ffv1").ffmpeg_name == "bgra"
    # ... and into a delivery encoder goes to 4:2:0, which every player plays (not 4:4:4).
    assert nearest_encoder_format(PixelFormat.RGB24, X264, "libx264").ffmpeg_name == "yuv420p"
    # Gray has no chroma to lose: 4:2:0 carries it whole; a colour picture never goes gray while a
    # colour format is there.
    assert nearest_encoder_format(PixelFormat.GRAY, ("yuv444p", "yuv420p"), "x").ffmpeg_name == "yuv420p"
    assert nearest_encoder_format(fmt("yuv420p"), ("gray", "yuv444p"), "x").ffmpeg_name == "yuv444p"
    assert nearest_encoder_format(PixelFormat.RGB24, GIF, "gif") is PixelFormat.GRAY


def test_a_master_s_encoder_keeps_the_depth_and_a_gray_gif_is_refused() -> None:
    ten = PixelFormat.from_ffmpeg_name("yuv422p10le")
    assert output_depth(ten, ColourInfo(), "prores", DepthChoice.AUTO, "prores_ks", PRORES_KS) == (10, None)
    depth, note = output_depth(ten, ColourInfo(), "h264", DepthChoice.AUTO, "libx264", X264)
    assert depth == 8 and note is not None and "players rarely decode" in note  # delivery: as before
    plan = plan_transcode(
        Size(64, 48),
        PixelFormat.RGB24,
        ColourInfo(),
        TranscodeOptions(),
        codec="ffv1",
        encoder="ffv1",
        encoder_formats=FFV1_SOME,
    )
    assert plan.passthrough and plan.output_format.ffmpeg_name == "bgra"  # RGB kept: lossless stays so
    plan = plan_transcode(
        Size(64, 48),
        PixelFormat.RGB24,
        ColourInfo(),
        TranscodeOptions(),
        codec="prores",
        encoder="prores_ks",
        encoder_formats=PRORES_KS,
    )
    assert plan.output_format.ffmpeg_name == "yuv444p10le" and "converted from rgb24" in plan.reason
    with pytest.raises(UnsupportedError, match="gif would write this colour picture gray"):
        plan_transcode(
            Size(64, 48),
            PixelFormat.YUV420P,
            ColourInfo(),
            TranscodeOptions(),
            codec="gif",
            encoder="gif",
            encoder_formats=GIF,
        )


def test_a_passthrough_of_a_converted_layout_does_not_say_same_pixel_format() -> None:
    """yuv410p (a layout alpha2 lacks) is converted to yuv420p on the CPU: the summary said 'same size,
    pixel format and colour; frames go straight to the encoder' beside the note saying it was converted
    (an outside pass)."""
    plan = plan_transcode(
        Size(64, 48),
        PixelFormat.YUV420P,
        ColourInfo(),
        TranscodeOptions(),
        codec="ffv1",
        encoder="ffv1",
        decoded_as="yuv410p",
    )
    assert plan.passthrough and "the decoder's yuv410p goes to the encoder as yuv420p" in plan.reason
    assert "pixel format" not in plan.reason
