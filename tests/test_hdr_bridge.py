"""HDR static metadata through FFmpeg: encoders write it (x265 / SVT-AV1 parameters), the bridge reads
it from the decoded frames' side data onto FrameMetadata.hdr."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from alpha2.ffmpeg_bridge.decode import DecodeSession
from alpha2.ffmpeg_bridge.hdr import (
    hdr_encoder_options,
    hdr_metadata_of,
    pack_content_light,
    pack_mastering_display,
    parse_content_light,
    parse_mastering_display,
)
from alpha2.gpu.colour import ColourPrimaries
from alpha2.gpu.geometry import FrameMetadata, Size
from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata, MasteringDisplay
from alpha2.gpu.primaries import Chromaticities, chromaticities_of

av = pytest.importorskip("av")

P3_D65 = chromaticities_of(ColourPrimaries.SMPTE432)
HDR = HdrMetadata(MasteringDisplay(P3_D65, 0.005, 1000.0), ContentLightLevel(1000, 400))


def test_side_data_round_trip() -> None:
    display = HDR.mastering
    assert display is not None
    assert parse_mastering_display(pack_mastering_display(display)) == display
    assert parse_content_light(pack_content_light(ContentLightLevel(1000, 400))) == ContentLightLevel(
        1000, 400
    )
    assert parse_content_light(pack_content_light(ContentLightLevel(0, 0))) is None
    assert parse_mastering_display(b"\0" * 88) is None  # has_primaries / has_luminance unset
    assert parse_mastering_display(b"short") is None


def test_encoder_options() -> None:
    x265 = hdr_encoder_options(
        "libx265", HDR, {"x265-params": "log-level=none:max-cll=500,100"}, bit_depth=10
    )
    assert x265.written
    params = x265.options["x265-params"].split(":")
    assert "log-level=none" in params and "max-cll=500,100" in params  # the caller's value wins
    master = next(p for p in params if p.startswith("master-display="))
    assert master == "master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50)"
    svt = hdr_encoder_options("libsvtav1", HDR, bit_depth=10)
    assert "content-light=1000,400" in svt.options["svtav1-params"]
    assert not hdr_encoder_options("libx265", HDR, bit_depth=8).written
    refused = hdr_encoder_options("libvpx-vp9", HDR, {"crf": "30"}, bit_depth=10)
    assert not refused.written and refused.options == {"crf": "30"} and "libx265" in refused.reason
    assert not hdr_encoder_options("libx265", None, bit_depth=10).written


def test_frame_metadata_carries_hdr() -> None:
    meta = FrameMetadata(None, None, None, True, Size(16, 16), Size(16, 16), hdr=HDR)
    assert meta.hdr is HDR
    assert FrameMetadata(None, None, None, True, Size(16, 16), Size(16, 16)).hdr is None
    with pytest.raises(ValueError):
        FrameMetadata(None, None, None, True, Size(16, 16), Size(16, 16), hdr="pq")  # type: ignore[arg-type]


def make_hdr_clip(path: Path, encoder: str, hdr: HdrMetadata | None) -> None:
    try:
        av.codec.Codec(encoder, "w")
    except Exception:
        pytest.skip(f"{encoder} is not in this FFmpeg")
    out = av.open(str(path), "w")
    stream = out.add_stream(encoder, rate=25)
    stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p10le"
    stream.color_primaries, stream.color_trc, stream.colorspace = 9, 16, 9
    base = {"x265-params": "log-level=none"} if encoder == "libx265" else {"preset": "12"}
    stream.options = hdr_encoder_options(encoder, hdr, base, bit_depth=10).options
    for i in range(3):
        rgb = np.full((64, 64, 3), 60 * i + 40, dtype=np.uint8)
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p10le")
        frame.pts, frame.time_base = i, Fraction(1, 25)
        for packet in stream.encode(frame):
            out.mux(packet)
    for packet in stream.encode():
        out.mux(packet)
    out.close()


def assert_close(got: HdrMetadata | None, want: HdrMetadata) -> None:
    assert got is not None and got.mastering is not None and want.mastering is not None
    assert got.light_level == want.light_level
    for name in ("red", "green", "blue", "white"):
        assert getattr(got.mastering.primaries, name) == pytest.approx(
            getattr(want.mastering.primaries, name), abs=1e-4
        )
    assert got.mastering.max_luminance_cd_m2 == pytest.approx(want.mastering.max_luminance_cd_m2, rel=1e-4)
    assert got.mastering.min_luminance_cd_m2 == pytest.approx(want.mastering.min_luminance_cd_m2, abs=1e-3)


@pytest.mark.parametrize("encoder", ["libx265", "libsvtav1"])
def test_metadata_survives_encode_and_decode(tmp_path: Path, encoder: str) -> None:
    path = tmp_path / "hdr.mp4"
    make_hdr_clip(path, encoder, HDR)
    with DecodeSession(str(path), hwaccel="none") as session:
        frames = list(session)
        assert frames
        for frame in frames:
            assert_close(frame.metadata.hdr, HDR)
            frame.release()


def test_no_metadata_no_hdr(tmp_path: Path) -> None:
    path = tmp_path / "plain.mp4"
    make_hdr_clip(path, "libx265", None)
    with av.open(str(path)) as container:
        assert all(hdr_metadata_of(frame) is None for frame in container.decode(video=0))
    assert hdr_metadata_of(object()) is None


def test_odd_mastering_values_are_dropped() -> None:
    bad = MasteringDisplay(Chromaticities((0.7, 0.3), (0.2, 0.7), (0.1, 0.05), (0.3, 0.3)), 0.0, 100.0)
    raw = bytearray(pack_mastering_display(bad))
    raw[64:72] = (5000 * 10000).to_bytes(4, "little", signed=True) + (10000).to_bytes(
        4, "little", signed=True
    )
    assert parse_mastering_display(bytes(raw)) is None  # black above peak
