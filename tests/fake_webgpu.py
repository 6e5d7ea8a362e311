"""A WebGPU device stand-in for the CPU-upload pairing's pool and timeout logic, where no adapter is needed.

It records what the pairing asks of it (textures made and destroyed, writes, submits) and checks the
calls' shapes; it renders nothing. Tests of pixels use a real device (the ``vulkan`` marker).
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import FrameMetadata, Size
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet
from alpha2.gpu.surfaces import SurfaceBudget, SurfaceIdentity
from alpha2.gpu.webgpu import WebGpuDeviceInfo, WebGpuImplementation

GPU_MODULE = types.SimpleNamespace(
    TextureUsage=types.SimpleNamespace(TEXTURE_BINDING=4, COPY_DST=2, COPY_SRC=1, RENDER_ATTACHMENT=16)
)
"""What the pairing reads from the wgpu module: the texture usage flags."""

INFO = WebGpuDeviceInfo(implementation=WebGpuImplementation.WGPU, features=frozenset())
"""A wgpu device without optional features."""


class FakeTexture:
    """A texture that describes itself like wgpu-py's (width, height, format, usage)."""

    def __init__(self, size: tuple[int, int, int], texture_format: str, usage: int) -> None:
        self.width, self.height, self.depth_or_array_layers = size
        self.format = texture_format
        self.usage = usage
        self.destroyed = False

    def create_view(self, label: str = "") -> object:
        return ("view", self)

    def destroy(self) -> None:
        assert not self.destroyed, "a texture was destroyed twice"
        self.destroyed = True


class FakeQueue:
    """Counts writes and submits."""

    def __init__(self) -> None:
        self.writes = 0
        self.submits = 0

    def write_texture(
        self, destination: dict[str, Any], data: Any, layout: dict[str, Any], size: Any
    ) -> None:
        assert isinstance(destination["texture"], FakeTexture) and not destination["texture"].destroyed
        self.writes += 1

    def submit(self, command_buffers: list[Any]) -> None:
        self.submits += 1


class FakeDevice:
    """Makes FakeTextures; keeps every one it made."""

    def __init__(self) -> None:
        self.queue = FakeQueue()
        self.textures: list[FakeTexture] = []

    def create_texture(
        self, *, label: str, size: tuple[int, int, int], format: str, usage: int
    ) -> FakeTexture:
        texture = FakeTexture(size, format, usage)
        self.textures.append(texture)
        return texture

    def live_textures(self) -> list[FakeTexture]:
        return [t for t in self.textures if not t.destroyed]


def gray_frame(
    width: int = 16,
    height: int = 16,
    *,
    decoder_id: int = 1,
    generation: int = 0,
    budget: SurfaceBudget | None = None,
) -> DecodedFrame:
    """A gray8 DecodedFrame in host memory (one plane), counted against ``budget`` when given."""
    data = np.zeros((height, width), np.uint8)
    identity = SurfaceIdentity(decoder_id, generation, width, height, PixelFormat.GRAY)
    size = Size(width, height)
    metadata = FrameMetadata(
        pts=0, time_base=None, duration=None, key_frame=True, coded_size=size, display_size=size
    )
    reservation = budget.reserve(data.nbytes, identity) if budget is not None else None
    return DecodedFrame(
        planes=CpuPlaneSet((CpuPlane(data, width, width, height),)),
        pixel_format=PixelFormat.GRAY,
        colour=ColourInfo.from_ffmpeg(1, 1, 1, 1, 1),
        metadata=metadata,
        identity=identity,
        reservation=reservation,
        keep_alive=data,
    )
