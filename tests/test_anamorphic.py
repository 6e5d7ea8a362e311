"""Anamorphic video (pixels that are not square). ``alpha2 transcode``: the output keeps the pixel
shape where the picture is not scaled, and ``--size`` fits the picture as shown (stored width times the
pixel shape) with square pixels; ``--size`` keeps the shape when a box side is odd. ``alpha2 play``:
frames carry the shape, and the picture is shown (and snapshotted) at its shown size."""

from __future__ import annotations

import fractions
from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.pipeline import fit_inside
from alpha2.api.transcode_plan import TranscodeOptions, plan_transcode
from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation, Size

DVD_WIDE = fractions.Fraction(32, 27)
"""A 16:9 NTSC DVD's 720x480 pixels."""


def _anamorphic_clip(path: Path, shape: fractions.Fraction, frames: int = 5) -> str:
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 720, 480, "yuv420p"
        stream.codec_context.sample_aspect_ratio = shape
        for index in range(frames):
            pixels = np.full((480, 720, 3), 40 * index, np.uint8)
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24").reformat(format="yuv420p")
            frame.pts = index
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def _shape_of(path: Path) -> tuple[int, int, fractions.Fraction | None]:
    with av.open(str(path)) as container:
        cc = container.streams.video[0].codec_context
        ratio = cc.sample_aspect_ratio
        return cc.width, cc.height, fractions.Fraction(ratio) if ratio else None


def test_fit_inside_rounds_the_limited_side_first() -> None:
    assert fit_inside(320, 240, Size(641, 361)) == Size(480, 360)  # was 482x360
    assert fit_inside(1920, 1080, Size(640, 640)) == Size(640, 360)
    assert fit_inside(853, 480, Size(640, 360)) == Size(640, 360)
    assert fit_inside(1, 1000, Size(100, 100)) == Size(2, 100)


def test_the_plan_keeps_or_squares_the_pixels() -> None:
    colour = ColourInfo()
    size = Size(720, 480)
    kept = plan_transcode(size, PixelFormat.YUV420P, colour, TranscodeOptions(), sample_aspect=DVD_WIDE)
    assert kept.passthrough and kept.sample_aspect == DVD_WIDE and "pixels 32:27 kept" in kept.reason
    scaled = plan_transcode(
        size, PixelFormat.YUV420P, colour, TranscodeOptions(size=Size(640, 360)), sample_aspect=DVD_WIDE
    )
    assert scaled.output_size == Size(640, 360) and scaled.sample_aspect is None
    assert "(pixels 32:27) -> 640x360" in scaled.reason and "square pixels" in scaled.reason
    # Turned a quarter on the GPU route (a container with no display matrix): the pixel turns too.
    turned = plan_transcode(
        size,
        PixelFormat.YUV420P,
        colour,
        TranscodeOptions(),
        rotation=Rotation.CW90,
        container_holds_rotation=False,
        sample_aspect=DVD_WIDE,
    )
    assert turned.output_size == Size(480, 720) and turned.sample_aspect == 1 / DVD_WIDE
    square = plan_transcode(size, PixelFormat.YUV420P, colour, TranscodeOptions(), sample_aspect=None)
    assert square.sample_aspect is None and "pixels" not in square.reason


@pytest.mark.parametrize("extension", ["mp4", "mkv"])
def test_transcode_keeps_the_pixel_shape_or_fits_the_shown_picture(tmp_path: Path, extension: str) -> None:
    from alpha2.api.transcoder import transcode

    clip = _anamorphic_clip(tmp_path / "dvd.mp4", DVD_WIDE)
    kept = tmp_path / f"kept.{extension}"
    transcode(clip, kept, TranscodeOptions(hwaccel="none"))
    assert _shape_of(kept) == (720, 480, DVD_WIDE)
    fitted = tmp_path / f"fitted.{extension}"
    stats = transcode(clip, fitted, TranscodeOptions(size=Size(640, 360), hwaccel="none"))
    width, height, shape = _shape_of(fitted)
    assert (width, height) == (640, 360) and shape in (None, 1)
    assert stats.plan is not None and "square pixels" in stats.plan.reason


def test_frames_carry_the_shape_and_play_shows_it(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from alpha2.ffmpeg_bridge.decode import DecodeSession

    clip = _anamorphic_clip(tmp_path / "dvd.mp4", DVD_WIDE)
    with DecodeSession(clip) as session:
        frame = session.next_frame()
        assert frame is not None
        with frame:
            assert frame.metadata.sample_aspect == DVD_WIDE
            assert frame.metadata.shown_size == Size(853, 480)
    snapshot = tmp_path / "shot.png"
    run = subprocess.run(
        [sys.executable, "-m", "alpha2", "play", "--offscreen", clip, "--snapshot", str(snapshot), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["size"] == [853, 480]
    from PIL import Image

    with Image.open(snapshot) as image:
        assert image.size == (853, 480)


def test_an_output_that_cannot_say_the_shape_gets_square_pixels(tmp_path: Path) -> None:
    """VP9 in WebM carries no pixel shape (PyAV sets no AVStream aspect for the Matroska muxer): the
    picture is scaled to its shown size with square pixels, and the plan says why."""
    from alpha2.api.transcoder import transcode

    plan = plan_transcode(
        Size(720, 480),
        PixelFormat.YUV420P,
        ColourInfo(),
        TranscodeOptions(),
        codec="vp9",
        encoder="libvpx-vp9",
        sample_aspect=DVD_WIDE,
        keeps_pixel_shape=False,
    )
    assert plan.output_size == Size(852, 480) and plan.sample_aspect is None
    assert "cannot say the pixel shape" in plan.reason
    if "libvpx-vp9" not in av.codecs_available:
        pytest.skip("no libvpx-vp9 in this PyAV")
    out = tmp_path / "dvd.webm"
    transcode(
        _anamorphic_clip(tmp_path / "dvd.mp4", DVD_WIDE, frames=3), out, TranscodeOptions(hwaccel="none")
    )
    width, height, shape = _shape_of(out)
    assert (width, height) == (852, 480) and shape in (None, 1)


def test_probe_says_the_shown_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by an outside pass: probe said '720x480, pixels 32:27' and gave display_size [720, 480] in
    --json, where a player (and ffprobe's DAR 16:9) shows 853x480."""
    import json

    from alpha2.apps import cli

    clip = _anamorphic_clip(tmp_path / "wide.mp4", DVD_WIDE, frames=2)
    assert cli.main(["probe", clip]) == 0
    assert "720x480, pixels 32:27 (shown 853x480)" in " ".join(capsys.readouterr().out.split())
    assert cli.main(["probe", clip, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    streams = data["files"][0]["streams"] if "files" in data else data["streams"]
    assert streams[0]["shown_size"] == [853, 480] and streams[0]["field_order"] is None
