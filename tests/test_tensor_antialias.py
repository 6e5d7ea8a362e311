"""Antialiased downscaling of RGB tensors (``to_tensor(..., antialias=True)``, the default): each value
is the mean of the source under a tent two output pixels wide, as PIL's and torchvision's bilinear
resize; one bilinear sample a pixel (``antialias=False``) lets a zone plate alias into moire. Checked
against PIL's ``resize(BILINEAR)`` of the full-size tensor."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from alpha2.gpu.errors import InvalidInputError
from alpha2.native_gpu.render.params import shader_params
from alpha2.native_gpu.render.renderer import MAX_ANTIALIAS_TAPS, antialias_taps

W, H = 320, 180


def _zone_plate(path: Path, rotation_ccw: int | None = None, width: int = W, height: int = H) -> str:
    """A losslessly coded 4:4:4 picture: a zone plate (every frequency up to the sampling limit) in red
    and blue, a gradient in green."""
    y, x = np.mgrid[0:height, 0:width]
    radius2 = (x - width / 2) ** 2 + (y - height / 2) ** 2
    plate = (127.5 + 127.5 * np.cos(radius2 * np.pi / width)).astype(np.uint8)
    rgb = np.stack([plate, (x * 255 // width).astype(np.uint8), 255 - plate], axis=-1)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25, options={"qp": "0", "preset": "ultrafast"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv444p"
        if rotation_ccw is not None:
            stream.set_display_rotation(rotation_ccw)
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv444p")
        frame.pts = 0
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def test_taps_follow_the_scale() -> None:
    from alpha2.gpu.colour import ColourInfo
    from alpha2.gpu.formats import PixelFormat

    def taps(out: tuple[int, int]) -> tuple[int, int]:
        params = shader_params(PixelFormat.YUV420P, ColourInfo(), 640, 360, output_size=out)
        return antialias_taps(params)

    assert taps((640, 360)) == (1, 1)  # 1:1
    assert taps((1280, 720)) == (1, 1)  # larger: one bilinear sample
    assert taps((320, 180)) == (5, 5)  # half: ceil(2 * 2) + 1, a source pixel or less apart
    assert taps((320, 360)) == (5, 1)  # one axis only
    assert taps((64, 36)) == (MAX_ANTIALIAS_TAPS, MAX_ANTIALIAS_TAPS)  # 10x: capped


@pytest.mark.vulkan
@pytest.mark.parametrize("factor", [2, 3, 5])
def test_a_downscale_matches_pil_and_a_plain_one_aliases(tmp_path: Path, factor: int) -> None:
    import alpha2

    with alpha2.open(_zone_plate(tmp_path / "plate.mkv"), hwaccel="none") as source:
        frames = source.frames_at_index([0])
        try:
            full = source.to_tensor(frames, device="cpu").numpy()[0]
            size = (W // factor, H // factor)
            smooth = source.to_tensor(frames, device="cpu", size=size).numpy()[0].astype(float)
            plain = source.to_tensor(frames, device="cpu", size=size, antialias=False).numpy()[0]
        finally:
            for frame in frames:
                frame.release()
    want = np.asarray(Image.fromarray(full).resize(size, Image.Resampling.BILINEAR)).astype(float)
    assert np.abs(smooth - want).mean() < 2.0, np.abs(smooth - want).mean()
    assert np.abs(plain.astype(float) - want).mean() > 8.0  # the moire the filter removes
    # The gradient channel has no detail to alias: both ways agree there.
    assert np.abs(smooth[..., 1] - plain[..., 1]).max() <= 2


@pytest.mark.vulkan
def test_a_sixteenth_matches_pil_too(tmp_path: Path) -> None:
    """16x smaller (4K to 240x135, 1080p to 120x68: what ML crops do): with 8 taps an axis the taps
    were 4.5 source pixels apart and the plate's fine rings aliased (1920x1080 -> 120x67: 2.36 codes
    from PIL on average, 118 at most; an outside pass, helper 90, saw 65 against torchvision). 16 taps:
    0.61 and 23."""
    import alpha2

    width, height = 1280, 720
    with alpha2.open(_zone_plate(tmp_path / "big.mkv", width=width, height=height), hwaccel="none") as source:
        frames = source.frames_at_index([0])
        try:
            full = source.to_tensor(frames, device="cpu").numpy()[0]
            size = (width // 16, height // 16)
            smooth = source.to_tensor(frames, device="cpu", size=size).numpy()[0].astype(float)
        finally:
            for frame in frames:
                frame.release()
    want = np.asarray(Image.fromarray(full).resize(size, Image.Resampling.BILINEAR)).astype(float)
    error = np.abs(smooth - want)
    assert error.mean() < 1.2 and error.max() < 50, (error.mean(), error.max())


@pytest.mark.vulkan
def test_a_turned_picture_is_filtered_as_shown(tmp_path: Path) -> None:
    import alpha2

    with alpha2.open(_zone_plate(tmp_path / "turned.mp4", rotation_ccw=90), hwaccel="none") as source:
        frames = source.frames_at_index([0])
        try:
            full = source.to_tensor(frames, device="cpu").numpy()[0]
            assert full.shape == (W, H, 3)  # turned
            size = (H // 4, W // 4)
            smooth = source.to_tensor(frames, device="cpu", size=size).numpy()[0].astype(float)
            with pytest.raises(InvalidInputError, match="antialias must be True or False"):
                source.to_tensor(frames, size=size, antialias="yes")
        finally:
            for frame in frames:
                frame.release()
    want = np.asarray(Image.fromarray(full).resize(size, Image.Resampling.BILINEAR)).astype(float)
    assert np.abs(smooth - want).mean() < 2.0


@pytest.mark.vulkan
def test_a_transcode_of_a_gray_input_filters_what_it_makes_smaller(tmp_path: Path) -> None:
    # Gray and packed RGB inputs take the RGBA route (rendered, then converted), which scaled with one
    # bilinear sample while the planes pass filtered Y'CbCr inputs: a zone plate's fine rings, 4x down,
    # came out as moire (a corner's standard deviation 31.6 codes; now 0, the rings' mean).
    from alpha2.api.transcoder import TranscodeOptions, transcode
    from alpha2.gpu.geometry import Size

    y, x = np.mgrid[0:H, 0:W]
    plate = (127.5 + 127.5 * np.cos(((x - W / 2) ** 2 + (y - H / 2) ** 2) * np.pi / W)).astype(np.uint8)
    src = str(tmp_path / "gray.mkv")
    with av.open(src, "w") as out:
        stream = out.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = W, H, "gray"
        frame = av.VideoFrame.from_ndarray(plate, format="gray")
        frame.pts = 0
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            out.mux(packet)
    made = str(tmp_path / "small.mkv")
    stats = transcode(
        src, made, TranscodeOptions(gpu=True, hwaccel="none", size=Size(80, 45), overwrite=True)
    )
    assert stats.encode_routes["frames"] == {"rgba_cpu": 1}
    with av.open(made) as container:
        luma = next(container.decode(video=0)).to_ndarray(format="gray").astype(float)
    assert luma[:10, :20].std() < 4.0  # the corner's rings, finer than the output's pixels: their mean
    assert luma[18:27, 35:45].std() > 40.0  # the centre's coarse rings stay


@pytest.mark.vulkan
def test_frame_render_into_a_thumbnail_filters_with_antialias(tmp_path: Path) -> None:
    import alpha2
    from alpha2.native_gpu.render.renderer import read_texture_rgba

    with alpha2.open(_zone_plate(tmp_path / "plate.mkv"), hwaccel="none") as source:
        gpu = source.device.webgpu_device
        usage = _render_usage()
        shots = {}
        (frame,) = source.frames_at_index([0])
        try:
            full = frame.to_ndarray()
            for antialias in (True, False):
                target = gpu.create_texture(size=(W // 4, H // 4, 1), format="rgba8unorm", usage=usage)
                frame.render(target, antialias=antialias)
                shots[antialias] = read_texture_rgba(gpu, target)[..., :3].astype(float)
            with pytest.raises(InvalidInputError, match="antialias must be True or False"):
                frame.render(antialias=1)  # type: ignore[arg-type]
        finally:
            frame.release()
    want = np.asarray(Image.fromarray(full).resize((W // 4, H // 4), Image.Resampling.BILINEAR)).astype(float)
    assert np.abs(shots[True] - want).mean() < 2.0
    assert np.abs(shots[False] - want).mean() > 8.0


def _render_usage() -> int:
    """A thumbnail texture's usage: rendered into, read back."""
    import wgpu

    return int(
        wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC | wgpu.TextureUsage.TEXTURE_BINDING
    )
