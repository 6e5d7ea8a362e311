"""Faults a third outside pass over the documented Python API found (``alpha2.open``, frames,
``alpha2.create`` / ``Writer``, ``open_audio``), each kept from coming back. Every clip is made here."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

import alpha2

# -- one stream, one colour --------------------------------------------------------------------------


def _bt601_clip(path: Path) -> str:
    """A small untagged clip of one flat colour, made by swscale (BT.601): alpha2 guesses BT.601 too."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for i in range(3):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), (200, 50, 20), np.uint8), format="rgb24")
            frame = frame.reformat(format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def _centres(path: str) -> list[list[int]]:
    with alpha2.open(path, hwaccel="none") as source:
        return [frame.to_ndarray()[24, 32].tolist() for frame in source]


@pytest.mark.vulkan
@pytest.mark.parametrize("first", ["array", "frame"])
def test_arrays_and_decoded_frames_of_another_colour_keep_their_colour_in_one_stream(
    tmp_path: Path, first: str
) -> None:
    """An array written before a BT.601 frame tagged the stream BT.709, and the frame's planes went in as
    they were (read back 14 codes too red); a frame written first tagged it BT.601 and the arrays after
    it were still converted with BT.709 (15 codes off). Now the first write fixes the stream's colour
    and the other kind is converted to it."""
    clip = _bt601_clip(tmp_path / "red601.mp4")
    red = np.full((48, 64, 3), (200, 50, 20), np.uint8)
    out = str(tmp_path / "mixed.mp4")
    with alpha2.open(clip, hwaccel="none") as source, alpha2.create(out) as writer:
        if first == "array":
            writer.write(red)
        for frame in source:
            writer.write(frame)
        if first == "frame":
            writer.write(red)
    centres = _centres(out)
    assert len(centres) == 4
    for rgb in centres:
        assert np.abs(np.array(rgb) - (200, 50, 20)).max() <= 4, centres


# -- what alpha2.open takes ----------------------------------------------------------------------------


def test_a_closed_or_write_only_file_object_is_refused_typed(tmp_path: Path) -> None:
    """A closed file object reached PyAV and came back as a bare ValueError ('I/O operation on closed
    file'), a write-only one as 'File object has no read() method'; both are InvalidInputErrors now."""
    from alpha2.gpu.errors import InvalidInputError

    closed = open(_bt601_clip(tmp_path / "clip.mp4"), "rb")
    closed.close()
    with pytest.raises(InvalidInputError, match="closed BufferedReader"):
        alpha2.open(closed, hwaccel="none")
    with open(tmp_path / "out.bin", "wb") as write_only:
        with pytest.raises(InvalidInputError, match="opened for writing only"):
            alpha2.open(write_only, hwaccel="none")


# -- render's target -----------------------------------------------------------------------------------


@pytest.mark.vulkan
@pytest.mark.parametrize(
    "shape",
    [
        {"size": (32, 32, 2), "dimension": "3d"},
        {"size": (32, 32, 1), "sample_count": 4},
        {"size": (32, 32, 1), "mip_level_count": 3},
    ],
)
def test_render_refuses_a_3d_multisampled_or_mipmapped_target_typed(
    tmp_path: Path, shape: dict[str, object]
) -> None:
    """Such a target reached WebGPU and came back as its bare GPUValidationError; it is refused with
    what render draws into now."""
    from alpha2.gpu.errors import InvalidInputError

    with alpha2.open(_bt601_clip(tmp_path / "clip.mp4"), hwaccel="none") as source:
        device = source.device.webgpu_device
        usage = source.device.gpu_module.TextureUsage.RENDER_ATTACHMENT
        target = device.create_texture(format="rgba8unorm", usage=usage, **shape)
        with source.next_frame() as frame:
            with pytest.raises(InvalidInputError, match="2d texture of one sample and one mip level"):
                frame.render(target)
            plain = device.create_texture(size=(32, 32, 1), format="rgba8unorm", usage=usage)
            assert frame.render(plain) is plain


@pytest.mark.vulkan
def test_the_writer_refuses_a_3d_texture_typed_and_stays_usable(tmp_path: Path) -> None:
    """A 3d texture reached the copier's bind group and came back as WebGPU's bare GPUValidationError."""
    from alpha2.gpu.errors import InvalidInputError
    from alpha2.native_gpu.device.device import Device

    device = Device.open()
    usage = device.gpu_module.TextureUsage.TEXTURE_BINDING
    volume = device.webgpu_device.create_texture(
        size=(64, 48, 2), dimension="3d", format="rgba8unorm", usage=usage
    )
    with alpha2.create(tmp_path / "out.mp4", device=device) as writer:
        with pytest.raises(InvalidInputError, match="reads 2d textures, not a 3d one"):
            writer.write(volume)
        writer.write(np.zeros((48, 64, 3), np.uint8))
    assert writer.frames_written == 1


# -- messages ------------------------------------------------------------------------------------------


def test_a_video_stream_without_frames_says_so_rather_than_asking_for_an_earlier_time(tmp_path: Path) -> None:
    """A Matroska file whose video track holds no frame (its sound does) answered frame_at(0) with 'is
    0.208 s long; ask for an earlier time', which no time can satisfy; the message says the stream has
    no frame now, and a time past the end of a clip with frames still gets its length."""
    from alpha2.api.errors import EndOfStreamError

    path = str(tmp_path / "no_frames.mkv")
    with av.open(path, "w") as out:
        video = out.add_stream("libx264", rate=25)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        sound = out.add_stream("libopus", rate=48000)
        sound.layout = "stereo"
        for i in range(10):
            block = av.AudioFrame.from_ndarray(np.zeros((2, 960), np.float32), format="fltp", layout="stereo")
            block.sample_rate, block.pts = 48000, i * 960
            for packet in sound.encode(block):
                out.mux(packet)
        for packet in sound.encode(None):
            out.mux(packet)
    with alpha2.open(path, hwaccel="none") as source:
        with pytest.raises(EndOfStreamError, match="has no frame to decode"):
            source.frame_at(0.0)
        with pytest.raises(EndOfStreamError, match="has no frame to decode"):
            source.frames_at([0.0])
    with alpha2.open(_bt601_clip(tmp_path / "clip.mp4"), hwaccel="none") as source:
        with pytest.raises(EndOfStreamError, match=r"is 0\.120 s long; ask for an earlier time"):
            source.frame_at(5.0)


def test_a_rate_finer_than_the_writer_times_is_refused_at_create(tmp_path: Path) -> None:
    """rate=1e9 was taken, and the second array written failed with 'timestamps must increase: the next
    frame's time (0.000000 s) is not after the previous frame's', though no time had been given: the
    time base is at finest a microsecond. Such a rate is refused at create now; 1000000 is taken."""
    from alpha2.gpu.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="at most 1000000 frames per second"):
        alpha2.create(tmp_path / "fast.mp4", rate=1e9)
    assert not list(tmp_path.iterdir())
    alpha2.create(tmp_path / "fast.mkv", rate=1_000_000).abort()


# -- a frame kept across a seek ----------------------------------------------------------------------


@pytest.mark.vulkan
@pytest.mark.parametrize("how", ["frame_at", "seek", "frames_at"])
def test_a_frame_kept_across_a_seek_is_usable_after_newer_ones(tmp_path: Path, how: str) -> None:
    """Found by an outside API pass: ``a = frame_at(0.0)``, then ``frame_at(1.0).to_ndarray()``, then
    ``a.to_ndarray()`` raised 'a frame of decoder N generation 2 arrived after generation 3' (the texture
    pool refused an older generation), though the docs say a frame stays valid until it is released.
    The kept frame now gets textures of its own and gives what a fresh read gives."""
    from media import make_clip, pattern

    clip = make_clip(tmp_path / "c.mp4", width=64, height=48, frames=40, rate=20, gop=8)
    with alpha2.open(clip.path, hwaccel="none") as source:
        if how == "frame_at":
            early = source.frame_at(0.1)
            late = [source.frame_at(1.5)]
        elif how == "seek":
            early = source.next_frame()
            source.seek(1.5)
            late = [source.next_frame()]
        else:
            early = source.frames_at([0.1])[0]
            late = source.frames_at([1.5, 1.0])
        assert early is not None and all(frame is not None for frame in late)
        for frame in late:
            frame.to_ndarray()
        kept = early.to_ndarray()
        again = early.to_ndarray()
        when = early.pts_seconds
        assert when is not None and when < 0.5
        for frame in (early, *late):
            frame.release()
    with alpha2.open(clip.path, hwaccel="none") as fresh:
        want = fresh.frame_at(when).to_ndarray()
    assert np.array_equal(kept, want) and np.array_equal(again, want)
    assert kept.shape == pattern(0, 64, 48).shape


# -- times finer than an AVI's clock ---------------------------------------------------------------


@pytest.mark.vulkan
def test_the_writer_says_the_frames_an_avi_clock_leaves_out(tmp_path: Path) -> None:
    """Arrays at 60 a second into an AVI written at 15 fps: each on the tick of the one before is left
    out (as ffmpeg drops it), where it used to be pushed a tick later, the pictures running on past
    their times; the Writer says how many and why."""
    path = tmp_path / "out.avi"
    with alpha2.create(str(path), rate=15) as writer:
        for index in range(60):
            writer.write(np.full((48, 64, 3), index * 4, np.uint8), pts_seconds=index / 60)
    assert writer.frames_written == 60
    assert writer.frames_left_out == 44, writer.left_out_reason
    assert "clock is one frame (15 fps in AVI)" in writer.left_out_reason
    with av.open(str(path)) as container:
        times = [frame.time for frame in container.decode(video=0)]
    assert len(times) == 16 and abs(times[-1] - 1.0) < 0.1, times
