"""Overlays: RGBA images alpha-blended over a render target (the player's on-screen display, subtitles).

:class:`OverlayRenderer` keeps one blending pipeline per target format (``overlay.wgsl``) and draws
:class:`OverlaySprite` images, each at a pixel rectangle with an opacity, in one render pass that loads
what the target holds (the video) and blends over it. A sprite is an ``rgba8unorm`` texture of straight
(not premultiplied) alpha with sRGB-encoded values, one texel per target pixel; on an ``-srgb`` target
the shader decodes the values first, so the stored pixels are the image's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.webgpu import HasWebGpuDevice, WebGpuDevice, gpu_module_of, webgpu_device_of

__all__ = ["OverlayPlacement", "OverlayRenderer", "OverlaySprite"]

_UNIFORM_BYTES = 32


def _load_wgsl() -> str:
    return resources.files("alpha2.native_gpu.render").joinpath("overlay.wgsl").read_text(encoding="utf-8")


def _checked_pixels(pixels: np.ndarray) -> np.ndarray:
    array = np.asarray(pixels)
    if array.ndim != 3 or array.shape[2] != 4 or array.dtype != np.uint8:
        raise InvalidInputError(
            f"an overlay image is (height, width, 4) uint8 RGBA, got {array.shape} {array.dtype}"
        )
    if array.shape[0] < 1 or array.shape[1] < 1:
        raise InvalidInputError(f"an overlay image needs at least one pixel, got {array.shape[:2]}")
    return np.ascontiguousarray(array)


class OverlaySprite:
    """An RGBA image on the GPU, drawn by :meth:`OverlayRenderer.encode`; made by
    :meth:`OverlayRenderer.sprite`."""

    def __init__(self, renderer: OverlayRenderer, pixels: np.ndarray) -> None:
        self._renderer = renderer
        self._texture: Any = None
        self._bind_group: Any = None
        device = renderer.device
        self._uniform: Any = device.create_buffer(
            label="alpha2 overlay placement",
            size=_UNIFORM_BYTES,
            usage=renderer.gpu.BufferUsage.UNIFORM | renderer.gpu.BufferUsage.COPY_DST,
        )
        self.width = 0
        """Width in pixels."""
        self.height = 0
        """Height in pixels."""
        self.update(pixels)

    def update(self, pixels: np.ndarray) -> None:
        """Replace the image (a new texture when the size changed).

        Raises:
            InvalidInputError: not (H, W, 4) uint8.
            ClosedError: the sprite was closed.
        """
        if self._uniform is None:
            raise ClosedError("this overlay sprite was closed")
        array = _checked_pixels(pixels)
        height, width = int(array.shape[0]), int(array.shape[1])
        renderer = self._renderer
        device = renderer.device
        if self._texture is None or (width, height) != (self.width, self.height):
            if self._texture is not None:
                self._texture.destroy()
            usage = renderer.gpu.TextureUsage
            self._texture = device.create_texture(
                label="alpha2 overlay image",
                size=(width, height, 1),
                format="rgba8unorm",
                usage=usage.TEXTURE_BINDING | usage.COPY_DST,
            )
            self._bind_group = device.create_bind_group(
                label="alpha2 overlay",
                layout=renderer.bind_group_layout,
                entries=[
                    {"binding": 0, "resource": self._texture.create_view()},
                    {
                        "binding": 1,
                        "resource": {"buffer": self._uniform, "offset": 0, "size": _UNIFORM_BYTES},
                    },
                ],
            )
            self.width, self.height = width, height
        device.queue.write_texture(
            {"texture": self._texture, "mip_level": 0, "origin": (0, 0, 0)},
            array,
            {"offset": 0, "bytes_per_row": width * 4, "rows_per_image": height},
            (width, height, 1),
        )

    def _place(self, x: int, y: int, target_size: tuple[int, int], opacity: float, srgb: bool) -> Any:
        values = np.array(
            [x, y, self.width, self.height, target_size[0], target_size[1], opacity, 1.0 if srgb else 0.0],
            np.float32,
        )
        self._renderer.device.queue.write_buffer(self._uniform, 0, values.tobytes())
        return self._bind_group

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._uniform is None

    def close(self) -> None:
        """Free the texture and the placement buffer (idempotent)."""
        texture, self._texture = self._texture, None
        uniform, self._uniform = self._uniform, None
        self._bind_group = None
        if texture is not None:
            texture.destroy()
        if uniform is not None:
            uniform.destroy()


@dataclass(frozen=True)
class OverlayPlacement:
    """Where one sprite goes in one draw."""

    sprite: OverlaySprite
    """The image."""
    x: int
    """Left edge in target pixels (may be negative or past the edge: what is outside is cut)."""
    y: int
    """Top edge in target pixels."""
    opacity: float = 1.0
    """0..1, multiplies the image's alpha."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.opacity <= 1.0:
            raise InvalidInputError(f"an overlay's opacity must be within 0..1, got {self.opacity}")


class OverlayRenderer:
    """Blends RGBA sprites over render targets of a device (a GPUDevice or an alpha2 Device)."""

    def __init__(self, device: HasWebGpuDevice | WebGpuDevice) -> None:
        self.device = webgpu_device_of(device)
        """The GPUDevice."""
        self.gpu = gpu_module_of(self.device)
        self._module = self.device.create_shader_module(label="alpha2 overlay", code=_load_wgsl())
        stages = self.gpu.ShaderStage
        self.bind_group_layout = self.device.create_bind_group_layout(
            label="alpha2 overlay",
            entries=[
                {
                    "binding": 0,
                    "visibility": stages.FRAGMENT,
                    "texture": {"sample_type": "float", "view_dimension": "2d"},
                },
                {
                    "binding": 1,
                    "visibility": stages.VERTEX | stages.FRAGMENT,
                    "buffer": {"type": "uniform"},
                },
            ],
        )
        self._layout = self.device.create_pipeline_layout(
            label="alpha2 overlay", bind_group_layouts=[self.bind_group_layout]
        )
        self._pipelines: dict[str, Any] = {}
        self._sprites: list[OverlaySprite] = []

    def sprite(self, pixels: np.ndarray) -> OverlaySprite:
        """A sprite of ``pixels`` ((H, W, 4) uint8 RGBA, straight alpha); closed with the renderer."""
        sprite = OverlaySprite(self, pixels)
        self._sprites = [s for s in self._sprites if not s.closed]
        self._sprites.append(sprite)
        return sprite

    def _pipeline(self, target_format: str) -> Any:
        pipeline = self._pipelines.get(target_format)
        if pipeline is None:
            blend = {
                "color": {"src_factor": "src-alpha", "dst_factor": "one-minus-src-alpha", "operation": "add"},
                "alpha": {"src_factor": "one", "dst_factor": "one-minus-src-alpha", "operation": "add"},
            }
            pipeline = self.device.create_render_pipeline(
                label=f"alpha2 overlay -> {target_format}",
                layout=self._layout,
                vertex={"module": self._module, "entry_point": "vs_main", "buffers": []},
                primitive={"topology": "triangle-list"},
                fragment={
                    "module": self._module,
                    "entry_point": "fs_main",
                    "targets": [{"format": target_format, "blend": blend}],
                },
            )
            self._pipelines[target_format] = pipeline
        return pipeline

    def encode(self, command_encoder: Any, target: Any, placements: Sequence[OverlayPlacement]) -> None:
        """Record one render pass on ``command_encoder`` that blends ``placements`` over ``target`` (a
        texture with RENDER_ATTACHMENT usage), in order; the caller submits. Nothing is recorded when
        no placement is visible. A sprite appears at most once in ``placements`` (its placement is one
        buffer, written for this draw).

        Raises:
            ClosedError: a sprite was closed.
        """
        visible = [p for p in placements if p.opacity > 0.0]
        if not visible:
            return
        target_format = str(target.format)
        size = (int(target.size[0]), int(target.size[1]))
        srgb = target_format.endswith("-srgb")
        pipeline = self._pipeline(target_format)
        bind_groups = []
        for placement in visible:
            if placement.sprite.closed:
                raise ClosedError("an overlay sprite was closed before its draw")
            bind_groups.append(
                placement.sprite._place(placement.x, placement.y, size, placement.opacity, srgb)
            )
        render_pass = command_encoder.begin_render_pass(
            color_attachments=[{"view": target.create_view(), "load_op": "load", "store_op": "store"}]
        )
        render_pass.set_pipeline(pipeline)
        for bind_group in bind_groups:
            render_pass.set_bind_group(0, bind_group)
            render_pass.draw(6, 1, 0, 0)
        render_pass.end()

    def close(self) -> None:
        """Close every sprite made here and drop the pipelines (idempotent)."""
        sprites, self._sprites = self._sprites, []
        for sprite in sprites:
            sprite.close()
        self._pipelines.clear()
