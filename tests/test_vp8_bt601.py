"""VP8's pictures are read as BT.601 whatever the stream's tag says (FFmpeg's decoder tags every VP8 frame
bt470bg; browsers decode it so): a BT.709 picture is converted to BT.601 for it, on the passthrough and
the scaled route, and the summary says so. Written as it was, BT.709's pure red came back 233/0/2."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.api.transcoder import transcode


def _red_709(path: Path) -> str:
    """Twelve frames of BT.709 limited pure red (Y'CbCr 63/102/240), tagged so."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
        stream.codec_context.colorspace = 1
        stream.codec_context.color_primaries = 1
        stream.codec_context.color_trc = 1
        stream.codec_context.color_range = 1
        stream.options = {"crf": "0"}
        for i in range(12):
            frame = av.VideoFrame(128, 96, "yuv420p")
            for plane, value in zip(frame.planes, (63, 102, 240), strict=True):
                np.frombuffer(plane, np.uint8)[:] = value
            frame.colorspace, frame.color_range, frame.pts = 1, 1, i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


@pytest.mark.parametrize("size", [None, (64, 48)], ids=["passthrough", "scaled"])
def test_a_bt709_picture_into_vp8_is_written_as_bt601(tmp_path: Path, size: tuple[int, int] | None) -> None:
    source = _red_709(tmp_path / "red.mp4")
    output = tmp_path / "red.webm"
    stats = transcode(source, output, TranscodeOptions(codec="vp8", size=size))
    assert stats.plan is not None
    said = stats.plan.reason
    with av.open(str(output)) as container:
        frame = next(container.decode(video=0))
        assert frame.colorspace in (5, 6)  # bt470bg / smpte170m: how every reader takes VP8
        rgb = frame.to_ndarray(format="rgb24").reshape(-1, 3).mean(axis=0)
    assert rgb[0] > 245 and rgb[1] < 10 and rgb[2] < 10, (rgb, said)
    assert "BT709 -> BT.601" in said, said


def test_rgb_arrays_written_into_vp8_are_converted_by_bt601(tmp_path: Path) -> None:
    """A Writer's RGB arrays of an HD size are converted by BT.601 for VP8, not BT.709 tagged BT.601."""
    import alpha2

    output = tmp_path / "red.webm"
    red = np.zeros((720, 1280, 3), np.uint8)
    red[..., 0] = 255
    with alpha2.create(output, codec="vp8") as writer:
        for _ in range(3):
            writer.write(red)
    with av.open(str(output)) as container:
        frame = next(container.decode(video=0))
        rgb = frame.to_ndarray(format="rgb24").reshape(-1, 3).mean(axis=0)
    assert rgb[0] > 245 and rgb[1] < 10 and rgb[2] < 10, rgb


def test_an_hd_rgb_picture_into_vp8_is_converted_by_bt601_and_said(tmp_path: Path) -> None:
    """RGB into VP8 at an HD size: converted by BT.601 (not BT.709, the usual HD matrix), and said so."""
    source = tmp_path / "rgb.mkv"
    with av.open(str(source), "w") as out:
        stream = out.add_stream("libx264rgb", rate=25)
        stream.width, stream.height, stream.pix_fmt = 1280, 720, "rgb24"
        stream.options = {"crf": "0"}
        red = np.zeros((720, 1280, 3), np.uint8)
        red[..., 0] = 255
        for i in range(3):
            frame = av.VideoFrame.from_ndarray(red, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    output = tmp_path / "rgb.webm"
    stats = transcode(str(source), output, TranscodeOptions(codec="vp8"))
    assert (
        stats.plan is not None and "BT470BG matrix (vp8's pictures are read as BT.601)" in stats.plan.reason
    )
    with av.open(str(output)) as container:
        rgb = next(container.decode(video=0)).to_ndarray(format="rgb24").reshape(-1, 3).mean(axis=0)
    assert rgb[0] > 245 and rgb[1] < 10 and rgb[2] < 10, rgb
