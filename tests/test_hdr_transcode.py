"""``alpha2 transcode`` of HDR inputs: tone mapped to SDR BT.709 (--colour bt709, --sdr, 8-bit outputs)
or kept (PQ / HLG, 10 bits, static metadata) for HEVC / AV1 / VP9 at 10 bits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from alpha2.api.transcode_plan import ColourChoice, DepthChoice, TranscodeOptions, plan_transcode
from alpha2.api.transcoder import transcode
from alpha2.apps.player import PlayOptions, play
from alpha2.ffmpeg_bridge.decode import DecodeSession
from alpha2.ffmpeg_bridge.scale import swscale_unsupported_reason
from alpha2.gpu.colour import (
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourPrimaries,
    ColourRange,
    TransferCharacteristic,
)
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Size
from alpha2.gpu.hdr import HdrMetadata
from tests.hdr_clips import HLG, PEAK_203, PQ, make_hdr_clip
from tests.test_apps_play import read_png
from tests.test_hdr_bridge import assert_close

HDR_PQ = ColourInfo(
    ColourMatrix.BT2020_NCL, ColourPrimaries.BT2020, PQ, ColourRange.LIMITED, ChromaLocation.LEFT
)
SIZE = Size(1920, 1080)


def plan(codec: str, **options: object):  # type: ignore[no-untyped-def]
    return plan_transcode(SIZE, PixelFormat.YUV420P10, HDR_PQ, TranscodeOptions(**options), codec=codec)  # type: ignore[arg-type]


def test_hdr_into_ten_bit_codecs_is_kept() -> None:
    for codec in ("hevc", "av1", "vp9"):
        kept = plan(codec)
        assert kept.passthrough and not kept.tone_map and kept.keeps_hdr
        assert kept.output_colour == HDR_PQ and kept.output_format is PixelFormat.YUV420P10
        assert kept.colour_note is not None and "HDR kept" in kept.colour_note
    scaled = plan("hevc", size=Size(1280, 720), colour=ColourChoice.KEEP)
    assert not scaled.passthrough and not scaled.tone_map and scaled.keeps_hdr
    assert scaled.output_colour.matrix is ColourMatrix.BT2020_NCL and scaled.output_format is PixelFormat.P010
    # AUTO keeps the BT.2020 matrix of an HDR output (an HD SDR output would get BT.709).
    assert plan("hevc", size=Size(1280, 720)).output_colour.transfer is PQ


def test_hdr_into_eight_bits_or_asked_sdr_is_tone_mapped() -> None:
    for p, why in (
        (plan("h264"), "8-bit output"),
        (plan("hevc", colour=ColourChoice.BT709), "--colour bt709"),
        (plan("hevc", sdr=True), "--sdr"),
        (plan("hevc", depth=DepthChoice.EIGHT), "8-bit output"),
    ):
        assert p.tone_map and not p.passthrough and not p.keeps_hdr, why
        assert p.output_colour.transfer is TransferCharacteristic.BT709
        assert p.output_colour.primaries is ColourPrimaries.BT709
        assert p.output_colour.matrix is ColourMatrix.BT709
        assert p.output_format is PixelFormat.NV12
        assert p.colour_note is not None and why in p.colour_note and "tone mapped" in p.colour_note
    ten = plan("hevc", sdr=True, depth=DepthChoice.TEN)
    assert ten.tone_map and ten.output_format is PixelFormat.P010 and not ten.keeps_hdr
    with pytest.raises(InvalidInputError):
        TranscodeOptions(sdr=True, colour=ColourChoice.KEEP)


def test_sdr_inputs_are_untouched() -> None:
    sdr = ColourInfo(
        ColourMatrix.BT709, ColourPrimaries.BT709, TransferCharacteristic.BT709, ColourRange.LIMITED
    )
    p = plan_transcode(SIZE, PixelFormat.YUV420P, sdr, TranscodeOptions(sdr=True), codec="h264")
    assert p.passthrough and not p.tone_map and p.colour_note is None


def test_swscale_refuses_tone_mapping() -> None:
    p = plan("h264")
    assert swscale_unsupported_reason(p.input_format, p.input_colour, p.output_colour) is not None


def test_colour_step_params() -> None:
    from alpha2.native_gpu.encode.params import COLOUR_STEP_SIZE_BYTES, colour_step_bytes, scale_yuv_params
    from alpha2.native_gpu.render.colour_params import colour_params

    plan = colour_params(HDR_PQ)
    common = dict(
        output_size=(64, 64),
        output_format=PixelFormat.NV12,
        matrix=ColourMatrix.BT709,
        colour_range=ColourRange.LIMITED,
        chroma_location=ChromaLocation.LEFT,
    )
    managed = scale_yuv_params(PixelFormat.P010, HDR_PQ, 64, 64, colour_plan=plan, **common)  # type: ignore[arg-type]
    plain = scale_yuv_params(PixelFormat.P010, HDR_PQ, 64, 64, **common)  # type: ignore[arg-type]
    assert managed.colour_managed and managed.luma_reads_chroma and managed.chroma_reads_luma
    assert not plain.colour_managed
    # Managed, the transform stops at R'G'B' (0..1): white (Y 940, Cb = Cr = 512 in 10 bits) -> 1, 1, 1.
    white = np.array([940, 512, 512]) * 64 / 65535
    assert np.allclose(managed.transform.apply(white), 1.0, atol=1e-3)
    step = colour_step_bytes(plan, ColourMatrix.BT709, ColourRange.LIMITED, 8)
    assert len(step) == COLOUR_STEP_SIZE_BYTES and step[:208] == plan.uniform
    rows = np.frombuffer(step[208:], np.float32).reshape(3, 4)
    assert rows[0, 3] == pytest.approx(16.0) and rows[1, 3] == pytest.approx(128.0)
    assert colour_step_bytes(None, ColourMatrix.BT709, ColourRange.LIMITED, 8) == bytes(
        COLOUR_STEP_SIZE_BYTES
    )


def snapshot(path: Path, tmp_path: Path) -> np.ndarray:
    out = tmp_path / f"{path.stem}.png"
    play(str(path), PlayOptions(snapshot=str(out), hwaccel="none", audio=False))
    return read_png(out)[:, :, :3].astype(np.float64)


@pytest.mark.parametrize(
    ("transfer", "hdr", "limit", "args"),
    [
        (PQ, PEAK_203, 3.0, {"colour": ColourChoice.BT709}),
        (PQ, None, 12.0, {"sdr": True, "codec": "hevc"}),
        (HLG, None, 12.0, {}),
    ],
    ids=["pq-peak203-bt709", "pq-sdr-hevc", "hlg-h264-auto"],
)
def test_tone_mapped_output_matches_the_pattern(
    tmp_path: Path, transfer: TransferCharacteristic, hdr: HdrMetadata | None, limit: float, args: dict
) -> None:
    pytest.importorskip("wgpu")
    clip = tmp_path / "hdr.mp4"
    pattern = make_hdr_clip(clip, transfer, hdr)
    out = tmp_path / "sdr.mp4"
    options = TranscodeOptions(audio=False, hwaccel="none", crf=1, **{"codec": "h264", **args})
    stats = transcode(clip, out, options)
    assert stats.plan is not None and stats.plan.tone_map
    # The planes pass's colour step did it (no RGBA texture), and swscale said why it could not.
    assert stats.encode_report is not None and "frames via planes" in stats.encode_report
    if stats.scale_route is not None and stats.scale_route["route"] == "gpu":
        # On a CPU device the GPU route is taken only because swscale cannot tone map; on a GPU, always.
        reason = stats.scale_route["reason"]
        assert "transfer or primaries" in reason or reason == "a GPU device is at hand", reason
    with DecodeSession(str(out), hwaccel="none") as session:
        frame = session.next_frame()
        assert frame is not None
        colour, meta = frame.colour, frame.metadata.hdr
        frame.release()
    assert colour.transfer is TransferCharacteristic.BT709 and colour.primaries is ColourPrimaries.BT709
    assert meta is None
    error = np.abs(snapshot(out, tmp_path) - pattern).mean()
    assert error <= limit, error


@pytest.mark.parametrize("gpu", [False, True], ids=["passthrough", "gpu-scaled"])
def test_keep_writes_tags_and_metadata(tmp_path: Path, gpu: bool) -> None:
    clip = tmp_path / "pq.mp4"
    make_hdr_clip(clip, PQ, PEAK_203)
    out = tmp_path / "kept.mp4"
    options = TranscodeOptions(
        codec="hevc",
        colour=ColourChoice.KEEP,
        audio=False,
        hwaccel="none",
        size=Size(96, 72) if gpu else None,
    )
    if gpu:
        pytest.importorskip("wgpu")
    stats = transcode(clip, out, options)
    assert stats.plan is not None and stats.plan.keeps_hdr and stats.plan.passthrough is not gpu
    with DecodeSession(str(out), hwaccel="none") as session:
        frame = session.next_frame()
        assert frame is not None
        colour, meta, fmt = frame.colour, frame.metadata.hdr, frame.pixel_format
        frame.release()
    assert colour.transfer is PQ and colour.primaries is ColourPrimaries.BT2020
    assert colour.matrix is ColourMatrix.BT2020_NCL and fmt.bit_depth == 10
    assert_close(meta, PEAK_203)
