"""The top-level API: open, render, arrays, write (tagged), misuse errors, async that keeps the loop free."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import av
import numpy as np
import pytest
from media import make_clip

from alpha2.gpu.errors import InvalidInputError

pytestmark = pytest.mark.vulkan


def test_import_alpha2_is_cheap_and_lists_the_api() -> None:
    code = (
        "import sys, alpha2; assert 'alpha2.api' not in sys.modules and 'wgpu' not in sys.modules; "
        "print(sorted(alpha2.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    for name in ("open", "create", "Writer", "Device", "adapters", "Frame", "VideoSource"):
        assert repr(name) in out


def test_transcode_is_a_top_level_name_as_open_and_create_are(tmp_path: Path) -> None:
    # A program replacing ffmpeg calls alpha2.transcode: it was AttributeError ('module alpha2 has no
    # attribute transcode'), the function only at alpha2.api.transcode.
    import alpha2
    import alpha2.api

    assert alpha2.transcode is alpha2.api.transcode
    assert alpha2.TranscodeOptions is alpha2.api.TranscodeOptions
    assert {"transcode", "TranscodeOptions"} <= set(alpha2.__all__)
    clip = make_clip(tmp_path / "in.mp4", width=64, height=48, frames=6).path
    stats = alpha2.transcode(clip, str(tmp_path / "out.mp4"), alpha2.TranscodeOptions(frames=4))
    assert stats.frames == 4


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_clip(tmp_path_factory.mktemp("api") / "clip.mp4", width=64, height=48, frames=8).path


def test_open_render_arrays_and_seek(clip: str) -> None:
    import alpha2

    with alpha2.open(clip, hwaccel="none") as source:
        assert (source.width, source.height) == (64, 48)
        device = source.device
        usage = device.gpu_module.TextureUsage
        target = device.webgpu_device.create_texture(
            size=(32, 24, 1), format="rgba8unorm", usage=usage.RENDER_ATTACHMENT | usage.COPY_SRC
        )
        seen = []
        for frame in source:
            luma = frame.plane(0).to_ndarray()
            assert luma.shape[0] >= 48
            assert frame.render(target) is target
            assert frame.path is alpha2.ExecutionPath.CPU_UPLOAD
            seen.append(frame.pts_seconds)
            # The planes stay the frame's after rendering (until it is released).
            assert np.array_equal(frame.plane(0).to_ndarray(), luma)
        assert len(seen) == 8
        frame = source.frame_at(4 / 30)
        assert frame is not None
        with frame:
            assert frame.pts_seconds == pytest.approx(4 / 30)
            rgb = frame.to_ndarray()
            assert rgb.shape == (48, 64, 3) and rgb.dtype == np.uint8


def test_writer_tags_textures_and_arrays(clip: str, tmp_path: Path) -> None:
    import alpha2

    out = tmp_path / "out.mp4"
    pixels = np.zeros((48, 64, 3), np.uint8)
    pixels[:, :, 0] = 200
    with alpha2.create(out) as writer:
        for _ in range(3):
            writer.write(pixels)
    with av.open(str(out)) as container:
        cc = container.streams.video[0].codec_context
        assert (int(cc.colorspace), int(cc.color_primaries), int(cc.color_range)) == (1, 1, 1)
        frames = list(container.decode(video=0))
    assert len(frames) == 3
    rgb = frames[0].to_ndarray(format="rgb24", src_colorspace="ITU709", dst_colorspace="ITU709")
    assert abs(int(rgb[24, 32, 0]) - 200) <= 3

    untagged = tmp_path / "untagged.mp4"
    with alpha2.create(untagged, untagged=True) as writer:
        writer.write(pixels)
    with av.open(str(untagged)) as container:
        assert int(container.streams.video[0].codec_context.colorspace) == 2  # unspecified, as asked


def test_misuse_errors_name_the_fix(clip: str) -> None:
    import alpha2
    from alpha2.ffmpeg_bridge.decode import DecodeSession
    from alpha2.native_gpu.interop.importer import FrameImporter

    with pytest.raises(InvalidInputError, match="path"):
        DecodeSession(123)  # type: ignore[arg-type]
    with alpha2.open(clip, hwaccel="none") as source:
        importer = FrameImporter(source.device)
        with av.open(clip) as container:
            av_frame = next(container.decode(video=0))
        with pytest.raises(InvalidInputError, match="DecodedFrame"):
            importer.import_frame(av_frame)  # type: ignore[arg-type]
        frame = source.next_frame()
        assert frame is not None
        with importer.import_frame(frame.decoded) as lease:
            texture = source.renderer.render(lease)  # the lease itself is accepted
            assert tuple(texture.size[:2]) == (64, 48)
        with pytest.raises(InvalidInputError, match="ImportLease"):
            source.renderer.render(object())
        other = alpha2.Device.open()
        foreign = other.webgpu_device.create_texture(
            size=(64, 48, 1), format="rgba8unorm", usage=other.gpu_module.TextureUsage.RENDER_ATTACHMENT
        )
        next_frame = source.next_frame()
        assert next_frame is not None
        with next_frame, pytest.raises(InvalidInputError, match="another device"):
            next_frame.render(foreign)
        importer.close()


def test_async_playback_keeps_the_event_loop_ticking(clip: str, tmp_path: Path) -> None:
    import alpha2

    async def main() -> tuple[int, float, int]:
        ticks = 0
        stop = False

        async def heartbeat() -> None:
            nonlocal ticks
            while not stop:
                await asyncio.sleep(0.005)
                ticks += 1

        beat = asyncio.create_task(heartbeat())
        start = time.monotonic()
        frames = 0
        with alpha2.open(clip, hwaccel="none") as source:
            target = source.renderer.target_texture(64, 48)
            with alpha2.create(tmp_path / "async.mp4", device=source.device) as writer:
                async for frame in source:
                    await frame.ready()
                    await frame.render_async(target)
                    await writer.write_async(target)
                    frames += 1
        elapsed = time.monotonic() - start
        stop = True
        await beat
        return ticks, elapsed, frames

    ticks, elapsed, frames = asyncio.run(main())
    assert frames == 8
    # Blocking calls on the loop would starve the heartbeat; allow for a loaded 2-core machine.
    assert ticks >= 0.25 * elapsed / 0.005 - 2, (ticks, elapsed)


def test_adapters_lists_the_ranked_adapters() -> None:
    import alpha2

    found = alpha2.adapters()
    assert found and found[0].rank == 1 and found[0].name
    # Those Device.open chooses among: lavapipe's OpenGL twin was listed at rank 2, though Device.open
    # never takes an OpenGL adapter where there is a Vulkan one (found by an outside pass).
    assert [a.backend for a in found] == ["Vulkan"] * len(found)
    # The loader index ALPHA2_GPU_ADAPTER takes (the reasons' '#0'), where it was only in the prose:
    # pinning by it pins that adapter.
    index = found[0].index
    assert isinstance(index, int)
    old = os.environ.get("ALPHA2_GPU_ADAPTER")
    os.environ["ALPHA2_GPU_ADAPTER"] = str(index)
    try:
        pinned = [a for a in alpha2.adapters() if a.pinned]
    finally:
        if old is None:
            del os.environ["ALPHA2_GPU_ADAPTER"]
        else:
            os.environ["ALPHA2_GPU_ADAPTER"] = old
    assert pinned and all(a.index == index for a in pinned)


def test_a_host_plane_s_repr_is_short() -> None:
    import numpy as np

    from alpha2.gpu.dlpack import PlaneArray

    rows = np.zeros((1080, 1920), np.uint8)
    plane = PlaneArray(rows.ctypes.data, 1080, 1920, 1, np.dtype(np.uint8), 1920, (1, 0), rows, rows)
    assert len(repr(plane)) < 400  # was the whole buffer: 8 MB of text (an outside pass)
