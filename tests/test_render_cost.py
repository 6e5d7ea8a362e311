"""The per-frame cost of rendering: no GPU object is created per frame, and memory stays flat on lavapipe.

GPU objects are counted through a wrapper around the wgpu-native device's (and textures') ``create_*``
methods, over a short and a longer run of the same work: after warm-up the counts must not grow.
"""

from __future__ import annotations

import collections
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Size
from tests.media import make_clip

wgpu = pytest.importorskip("wgpu")

_DEVICE_FACTORIES = (
    "create_bind_group",
    "create_buffer",
    "create_buffer_with_data",
    "create_texture",
    "create_sampler",
    "create_bind_group_layout",
    "create_render_pipeline",
    "create_compute_pipeline",
    "create_shader_module",
)


@pytest.fixture
def gpu_objects(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """Counts of GPU objects created, by factory name, while the test runs."""
    from wgpu.backends.wgpu_native import GPUDevice, GPUTexture

    counts: collections.Counter[str] = collections.Counter()

    def counting(cls: type, name: str) -> None:
        original = getattr(cls, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(cls, name, wrapper)

    for name in _DEVICE_FACTORIES:
        counting(GPUDevice, name)
    counting(GPUTexture, "create_view")
    return counts


def _adapter_or_skip() -> None:
    if wgpu.gpu.request_adapter_sync(power_preference="high-performance") is None:
        pytest.skip("wgpu has no adapter")


def _per_run(run: Any, short: int, long: int, counts: collections.Counter[str]) -> dict[str, int]:
    """Objects the longer run created beyond the shorter one (zero when nothing is made per frame)."""
    counts.clear()
    run(short)
    first = dict(counts)
    counts.clear()
    run(long)
    second = dict(counts)
    return {k: second.get(k, 0) - first.get(k, 0) for k in set(first) | set(second)}


@pytest.mark.vulkan
def test_play_offscreen_creates_nothing_per_frame(
    tmp_path: Path, gpu_objects: collections.Counter[str]
) -> None:
    from alpha2.apps.player import PlayOptions, play

    _adapter_or_skip()
    clip = make_clip(tmp_path / "a.mkv", width=96, height=64, frames=40)

    def run(frames: int) -> None:
        stats = play(clip.path, PlayOptions(offscreen=True, frames=frames, audio=False, hwaccel="none"))
        assert stats.frames == frames

    extra = _per_run(run, 5, 35, gpu_objects)
    assert all(v == 0 for v in extra.values()), f"objects created per frame: {extra}"


@pytest.mark.vulkan
@pytest.mark.parametrize("pix_fmt", ["yuv420p", "gray"], ids=["planes-route", "rgba-route"])
def test_transcode_creates_nothing_per_frame(
    tmp_path: Path, gpu_objects: collections.Counter[str], pix_fmt: str
) -> None:
    from alpha2.api.transcoder import TranscodeOptions, transcode

    _adapter_or_skip()
    clip = make_clip(tmp_path / "a.mkv", width=96, height=64, frames=40, pix_fmt=pix_fmt)

    def run(frames: int) -> None:
        out = tmp_path / f"o{frames}.mp4"
        options = TranscodeOptions(size=Size(48, 32), frames=frames, audio=False, hwaccel="none")
        stats = transcode(clip.path, out, options)
        assert stats.frames == frames and stats.plan is not None and not stats.plan.passthrough

    extra = _per_run(run, 5, 35, gpu_objects)
    assert all(v == 0 for v in extra.values()), f"objects created per frame: {extra}"


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.vulkan
@pytest.mark.parametrize("pixel_format", [PixelFormat.NV12, PixelFormat.YUV420P, PixelFormat.GRAY])
@pytest.mark.parametrize("scaled", [False, True], ids=["1to1", "scaled"])
def test_memory_stays_flat_while_rendering(pixel_format: PixelFormat, scaled: bool) -> None:
    """A render costs no memory that outlives it: lavapipe once built a shader variant (~0.4 MB) per draw."""
    from alpha2.native_gpu.render.renderer import FrameRenderer, read_texture_rgba

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        pytest.skip("wgpu has no adapter")
    device = adapter.request_device_sync()
    usage = wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST
    layout = pixel_format.plane_layout(64, 48)
    planes = [
        device.create_texture(size=(p.width, p.height, 1), format=p.format.wgpu_format, usage=usage)
        for p in layout.planes
    ]
    renderer = FrameRenderer(device)
    target = renderer.target_texture(32, 24) if scaled else None
    colour = ColourInfo()

    def frames(n: int) -> Any:
        texture = None
        for _ in range(n):
            texture = renderer.render(planes, pixel_format, colour, 64, 48, target)
        return read_texture_rgba(device, texture)

    frames(20)
    before = _rss_bytes()
    pixels = frames(200)
    grown = _rss_bytes() - before
    assert pixels.shape[2] == 4 and np.isfinite(pixels).all()
    assert grown < 20 * 2**20, f"RSS grew {grown / 2**20:.1f} MB over 200 renders"


_TYPES_SEEN = """
import sys
from wgpu.backends.wgpu_native._ffi import ffi  # first: cffi's own parse, not alpha2's cache of it
from alpha2.native_gpu.render.renderer import _WGPU_C_TYPES, warm_webgpu_bindings
warmed = warm_webgpu_bindings() if sys.argv[1] == "warm" else 0
seen = []
for cdecl in _WGPU_C_TYPES:
    try:
        seen.append(str(ffi.typeof(cdecl)))
    except Exception as exc:  # a raw function type: what ffi.callback takes
        seen.append(type(exc).__name__)
print(warmed, "|".join(seen))
"""


def test_warmed_webgpu_types_are_cffi_own() -> None:
    """The types parsed in one pass are the ones cffi parses one by one (in fresh interpreters)."""
    import subprocess
    import sys

    def seen(mode: str) -> tuple[int, str]:
        run = subprocess.run(
            [sys.executable, "-c", _TYPES_SEEN, mode], capture_output=True, text=True, check=True
        )
        warmed, types = run.stdout.strip().split(" ", 1)
        return int(warmed), types

    warmed, types = seen("warm")
    cold_warmed, cold = seen("cold")
    assert cold_warmed == 0 and warmed > 50
    assert types == cold


@pytest.mark.vulkan
def test_throttle_bounds_frames_without_reading_them() -> None:
    """The throttle waits on its own buffers (never on a copy of the frame's texture), in the frame's
    submit or one of its own, and makes nothing per frame."""
    from alpha2.api.throttle import SubmitThrottle

    _adapter_or_skip()
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync()
    throttle = SubmitThrottle(device, wgpu, depth=2)
    texture = device.create_texture(
        size=(16, 16, 1), format="rgba8unorm", usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )  # no COPY_SRC: a mark that read it would fail validation
    for _ in range(5):
        encoder = device.create_command_encoder()
        view = texture.create_view()
        attachment = {"view": view, "clear_value": (0, 0, 0, 1), "load_op": "clear", "store_op": "store"}
        pass_ = encoder.begin_render_pass(color_attachments=[attachment])
        pass_.end()
        throttle.encode(encoder, texture)
        device.queue.submit([encoder.finish()])
        throttle.submitted()
        throttle.mark(texture)
    throttle.drain()
    assert all(m is None for m in throttle._maps)
    throttle.close()
    throttle.close()  # idempotent
