"""The sampling shader: plane textures (Y + CbCr, Y + Cb + Cr, gray, packed RGB) into an RGBA texture.

:func:`shader_params` turns a frame's vocabulary (:class:`~alpha2.gpu.formats.PixelFormat`,
:class:`~alpha2.gpu.colour.ColourInfo`, display size) into the shader's uniform block; it is a pure
function, so the numbers the GPU sees can be checked without a GPU. :class:`FrameRenderer` caches one
pipeline per (layout kind, output format) and one bind group per (plane views, parameters), encodes a
full-screen-triangle render pass and returns the RGBA texture. It works with any wgpu-py style module
(``wgpu`` on wgpu-native, ``wgpudawn`` on Dawn): the module is found from the device's class.

Y'CbCr planes are read through one linear sampler (a hardware bilinear sample per plane and pixel;
at 1:1 the luma is one exact ``textureLoad``): the position is clamped to the centres of the displayed
texels first, so the filter clamps to the edge of the displayed region rather than of the (possibly
padded) texture, and each chroma sample sits exactly where the frame's chroma siting says, the way
swscale's bilinear filter does with ``full_chroma_int`` and explicit ``in_h_chr_pos`` /
``in_v_chr_pos``. On lavapipe a ``textureLoad`` costs several times the arithmetic around it, so one
sample instead of four loads is most of a frame's cost. Packed RGB planes keep ``textureLoad`` and a
manual filter (rgba32float is filterable only with 'float32-filterable'): their layout binds no sampler.

16-bit planes (r16unorm / rg16unorm: P010, yuv420p10, ...) need the device feature that makes those
formats exist: 'texture-format16bit-norm' on wgpu-native, 'unorm16-texture-formats' on Dawn. The
shader itself requests nothing; whoever creates the plane textures does.
"""

from __future__ import annotations

import collections
import enum
import functools
import importlib
import importlib.resources
import struct
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, yuv_to_rgb
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import AlphaChannel, PixelFormat, PlaneFormat
from alpha2.gpu.webgpu import gpu_module_of, webgpu_device_of
from alpha2.native_gpu.render.readback import read_texture_rgba

__all__ = [
    "OUTPUT_FORMATS",
    "FrameRenderer",
    "LayoutKind",
    "ShaderParams",
    "YuvSampler",
    "gpu_module_of",
    "layout_kind",
    "load_wgsl",
    "read_texture_rgba",
    "shader_params",
]

OUTPUT_FORMATS: tuple[str, ...] = ("rgba8unorm", "bgra8unorm", "rgba16float")
"""Texture formats :class:`FrameRenderer` can render into."""

_WGSL_NAME = "yuv_to_rgb.wgsl"
_UNIFORM_SIZE_BYTES = 144
_SAMPLER_BINDING = 4
_NV21_ORDER = frozenset({"NV21", "NV42"})
"""Semi-planar formats whose interleaved plane is CrCb rather than CbCr."""


class LayoutKind(enum.Enum):
    """How a pixel format's planes are laid out for the shader; one pipeline (entry point) each."""

    BIPLANAR = "biplanar"
    """Y plane + interleaved CbCr plane: R8 + RG8 (NV12, NV16, NV24) or R16 + RG16 (P010, P016, ...)."""
    TRIPLANAR = "triplanar"
    """Y, Cb, Cr in three single-channel planes (yuv420p, yuv422p10, yuv444p16, ...)."""
    GRAY = "gray"
    """One luma plane (gray, gray10, gray16)."""
    RGB = "rgb"
    """One packed RGB(A) plane, passed through (rgba, bgra, rgba64, rgbaf16, ...)."""

    @property
    def plane_count(self) -> int:
        """How many plane textures the layout binds."""
        return {"biplanar": 2, "triplanar": 3, "gray": 1, "rgb": 1}[self.value]

    @property
    def entry_point(self) -> str:
        """The fragment entry point in ``yuv_to_rgb.wgsl``."""
        return f"fs_{self.value}"


def layout_kind(pixel_format: PixelFormat) -> LayoutKind:
    """The shader layout for ``pixel_format``.

    Raises:
        UnsupportedError: packed YUV formats (y210, ayuv64) and RGB formats without a WebGPU texture
            format (rgb24); the message names the formats that work.
    """
    planes = pixel_format.plane_formats
    if pixel_format.is_rgb:
        if len(planes) == 1:
            # Uploaded as wgpu_upload_format: rgb24 expanded to rgba8unorm, x2rgb10 swapped to rgb10a2unorm.
            return LayoutKind.RGB
    elif pixel_format.is_semi_planar and len(planes) == 2:
        return LayoutKind.BIPLANAR
    elif len(planes) >= 3 and all(p.channels == 1 for p in planes):
        return LayoutKind.TRIPLANAR
    elif len(planes) == 1 and planes[0].channels == 1:
        return LayoutKind.GRAY
    raise UnsupportedError(
        f"the YUV->RGB shader cannot sample {pixel_format.ffmpeg_name}: it takes bi-planar "
        "(nv12, p010, ...), tri-planar (yuv420p, yuv444p10, ...), gray and packed RGB formats; "
        f"convert to one of those first (e.g. {PixelFormat.NV12.ffmpeg_name})"
    )


@dataclass(frozen=True)
class ShaderParams:
    """The shader's uniform block for one (pixel format, colour, size) combination.

    Index space: luma sample (i, j) sits at (i, j); chroma sample (k, l) sits at luma position
    (k * sx + chroma_offset[0], l * sy + chroma_offset[1]).
    """

    layout: LayoutKind
    """Which pipeline samples the planes."""
    matrix: tuple[tuple[float, float, float], tuple[float, float, float], tuple[float, float, float]]
    """Rows of M in rgb01 = M @ [Y, Cb, Cr] (integer codes at the format's bit depth) + offset."""
    offset: tuple[float, float, float]
    """The offset added after the matrix (0..1 RGB units)."""
    value_scale: tuple[float, float, float, float]
    """Normalized sample -> integer code for the Y, Cb, Cr planes: (2^storage_bits - 1) / 2^msb_shift;
    .w is 1 when a packed RGB format's alpha passes through, else 0."""
    chroma_subsampling: tuple[int, int]
    """Luma samples per chroma sample (sx, sy): (2, 2) for 4:2:0, (2, 1) for 4:2:2, (1, 1) for 4:4:4."""
    chroma_offset: tuple[float, float]
    """Position of chroma sample (0, 0) in luma pixels (LEFT 4:2:0: (0, 0.5); CENTER: (0.5, 0.5))."""
    src_rect: tuple[int, int, int, int]
    """Source crop in luma pixels: x, y, width, height (display size inside the coded size)."""
    output_size: tuple[int, int]
    """Size of the rendered texture: width, height."""
    luma_clamp: tuple[int, int, int, int]
    """Inclusive texel range read from the luma plane: min x, min y, max x, max y."""
    chroma_clamp: tuple[int, int, int, int]
    """Inclusive texel range read from the chroma plane(s): min x, min y, max x, max y."""

    @property
    def one_to_one(self) -> bool:
        """Whether each output pixel is exactly one source luma pixel (no scaling)."""
        return (self.src_rect[2], self.src_rect[3]) == self.output_size

    def to_bytes(self) -> bytes:
        """The uniform block as the WGSL ``Params`` struct lays it out (144 bytes, little-endian)."""
        m, o = self.matrix, self.offset
        sx, sy = self.chroma_subsampling
        x, y, w, h = self.src_rect
        ow, oh = self.output_size
        floats = (
            *m[0], o[0], *m[1], o[1], *m[2], o[2],
            *self.value_scale,
            1.0 / sx, 1.0 / sy, *self.chroma_offset,
            float(x), float(y), float(w), float(h),
            w / ow, h / oh, 1.0 if self.one_to_one else 0.0, 0.0,
        )  # fmt: skip
        data = struct.pack("<28f", *floats) + struct.pack("<8i", *self.luma_clamp, *self.chroma_clamp)
        assert len(data) == _UNIFORM_SIZE_BYTES
        return data


def _row(values: np.ndarray) -> tuple[float, float, float]:
    return (float(values[0]), float(values[1]), float(values[2]))


def _value_scale(pixel_format: PixelFormat, plane: PlaneFormat) -> float:
    if plane.is_float:
        return float(2**pixel_format.bit_depth - 1)
    return (2**pixel_format.storage_bits - 1) / 2**pixel_format.msb_shift


def _siting_offset(location: ChromaLocation, sx: int, sy: int) -> tuple[float, float]:
    """Chroma sample (0, 0) in luma pixels; UNSPECIFIED reads as LEFT (MPEG-2 and later, FFmpeg's default)."""
    left = location in (
        ChromaLocation.UNSPECIFIED,
        ChromaLocation.LEFT,
        ChromaLocation.TOPLEFT,
        ChromaLocation.BOTTOMLEFT,
    )
    x = 0.0 if left else (sx - 1) / 2
    if location in (ChromaLocation.TOPLEFT, ChromaLocation.TOP):
        y = 0.0
    elif location in (ChromaLocation.BOTTOMLEFT, ChromaLocation.BOTTOM):
        y = float(sy - 1)
    else:
        y = (sy - 1) / 2
    return x, y


@functools.lru_cache(maxsize=256)
def shader_params(
    pixel_format: PixelFormat,
    colour: ColourInfo,
    width: int,
    height: int,
    *,
    crop: tuple[int, int, int, int] | None = None,
    output_size: tuple[int, int] | None = None,
) -> ShaderParams:
    """The uniform block that renders ``pixel_format`` planes of a ``width`` x ``height`` frame.

    Cached (the last 256 combinations): a stream asks for the same block frame after frame, and
    working it out (colour resolution, the matrix) is a tenth of a millisecond of Python.

    Args:
        pixel_format: the planes' software layout.
        colour: the frame's colour description; unspecified fields are resolved as FFmpeg does.
        width: display width in luma pixels.
        height: display height in luma pixels.
        crop: source rectangle (x, y, width, height) in luma pixels; default (0, 0, width, height).
            Chroma sample (0, 0) stays where the siting puts it relative to luma pixel (0, 0) of the
            plane, so crop x / y should be multiples of the subsampling factors.
        output_size: size of the rendered texture; default the crop size (no scaling).

    Raises:
        InvalidInputError: a non-positive size or a crop outside width x height.
        UnsupportedError: a pixel format the shader cannot sample (see :func:`layout_kind`).
    """
    if width <= 0 or height <= 0:
        raise InvalidInputError(f"frame size must be positive, got {width}x{height}")
    x, y, cw, ch = crop if crop is not None else (0, 0, width, height)
    if cw <= 0 or ch <= 0 or x < 0 or y < 0 or x + cw > width or y + ch > height:
        raise InvalidInputError(
            f"crop {(x, y, cw, ch)} must be a non-empty rectangle inside {width}x{height}"
        )
    ow, oh = output_size if output_size is not None else (cw, ch)
    if ow <= 0 or oh <= 0:
        raise InvalidInputError(f"output size must be positive, got {ow}x{oh}")

    kind = layout_kind(pixel_format)
    luma_clamp = (x, y, x + cw - 1, y + ch - 1)

    if kind is LayoutKind.RGB:
        identity = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
        has_alpha = pixel_format.alpha in (AlphaChannel.STRAIGHT, AlphaChannel.PREMULTIPLIED)
        return ShaderParams(
            layout=kind,
            matrix=identity,
            offset=(0.0, 0.0, 0.0),
            value_scale=(1.0, 1.0, 1.0, 1.0 if has_alpha else 0.0),
            chroma_subsampling=(1, 1),
            chroma_offset=(0.0, 0.0),
            src_rect=(x, y, cw, ch),
            output_size=(ow, oh),
            luma_clamp=luma_clamp,
            chroma_clamp=luma_clamp,
        )

    resolved = colour.resolved(pixel_format, width, height)
    matrix_kind = resolved.matrix
    if kind is LayoutKind.GRAY:
        # Gray has neutral chroma, so the result does not depend on the matrix; any YCbCr one will do.
        matrix_kind = ColourMatrix.BT709
    transform = yuv_to_rgb(matrix_kind, resolved.range, pixel_format.bit_depth)
    m = np.array(transform.matrix, dtype=np.float64).reshape(3, 3)
    off = np.array(transform.offset, dtype=np.float64).reshape(3)
    if kind is LayoutKind.GRAY:
        neutral = float(2 ** (pixel_format.bit_depth - 1))
        off = off + (m[:, 1] + m[:, 2]) * neutral
        m = m.copy()
        m[:, 1:] = 0.0
    elif pixel_format.name in _NV21_ORDER:
        m = m[:, [0, 2, 1]]

    planes = pixel_format.plane_formats
    y_scale = _value_scale(pixel_format, planes[0])
    c_scale = _value_scale(pixel_format, planes[1]) if kind is not LayoutKind.GRAY else y_scale

    sx, sy = 1 << pixel_format.log2_chroma_w, 1 << pixel_format.log2_chroma_h
    if kind is LayoutKind.GRAY:
        sx = sy = 1
    chroma_offset = _siting_offset(resolved.chroma_location, sx, sy)
    chroma_clamp = (x // sx, y // sy, -(-(x + cw) // sx) - 1, -(-(y + ch) // sy) - 1)

    rows = (_row(m[0]), _row(m[1]), _row(m[2]))
    return ShaderParams(
        layout=kind,
        matrix=rows,
        offset=(float(off[0]), float(off[1]), float(off[2])),
        value_scale=(y_scale, c_scale, c_scale, 0.0),
        chroma_subsampling=(sx, sy),
        chroma_offset=chroma_offset,
        src_rect=(x, y, cw, ch),
        output_size=(ow, oh),
        luma_clamp=luma_clamp,
        chroma_clamp=chroma_clamp,
    )


def load_wgsl(name: str = _WGSL_NAME) -> str:
    """The source of a shader shipped with alpha2.native_gpu (package data)."""
    return importlib.resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


class _Lru:
    """A small bounded LRU map; values hold strong references so id()-based keys cannot be reused."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()

    def get(self, key: Hashable) -> Any:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


class FrameRenderer:
    """Renders plane textures into an RGBA texture on one WebGPU device (wgpu or wgpudawn).

    Caches: one shader module; a pipeline per (layout kind, output format); a bind group with its own
    uniform buffer per (plane views, parameters), so a pool that reuses its textures writes no
    uniform and builds no bind group after the first frame; a view per plane texture passed as a
    GPUTexture; an output texture per (size, format) when no target is given. Bind groups and views
    keep their textures alive until evicted (``cache_size`` entries, least recently used first) or
    until :meth:`clear_cache`.

    Not thread-safe: use one renderer per thread, or lock around it.
    """

    def __init__(self, device: Any, *, gpu_module: Any = None, cache_size: int = 64) -> None:
        """Args:
        device: an alpha2 :class:`~alpha2.native_gpu.device.device.Device`, or a ``GPUDevice`` from
            ``wgpu`` or ``wgpudawn``.
        gpu_module: the module the device comes from; found from the device's class when None.
        cache_size: how many bind groups (and plane views) to keep.
        """
        if cache_size < 1:
            raise InvalidInputError(f"cache_size must be at least 1, got {cache_size}")
        device = webgpu_device_of(device)
        self.device = device
        self.gpu = gpu_module if gpu_module is not None else gpu_module_of(device)
        self._shader = device.create_shader_module(label="alpha2 yuv_to_rgb", code=load_wgsl())
        self._layouts: dict[LayoutKind, tuple[Any, Any]] = {}
        self._pipelines: dict[tuple[LayoutKind, str, bool], Any] = {}
        self._bind_groups = _Lru(cache_size)
        self._views = _Lru(cache_size)
        self._targets: dict[tuple[int, int, str], Any] = {}
        self._sampler = device.create_sampler(
            label="alpha2 yuv_to_rgb linear",
            address_mode_u="clamp-to-edge",
            address_mode_v="clamp-to-edge",
            mag_filter="linear",
            min_filter="linear",
            mipmap_filter="nearest",
        )

    def clear_cache(self) -> None:
        """Drop cached bind groups, views and output textures (pipelines stay)."""
        self._bind_groups.clear()
        self._views.clear()
        self._targets.clear()

    def _layout(self, kind: LayoutKind) -> tuple[Any, Any]:
        cached = self._layouts.get(kind)
        if cached is not None:
            return cached
        stage = self.gpu.ShaderStage.FRAGMENT
        entries: list[dict[str, Any]] = [{"binding": 0, "visibility": stage, "buffer": {"type": "uniform"}}]
        sampled = kind is not LayoutKind.RGB
        entries += [
            {
                "binding": 1 + i,
                "visibility": stage,
                "texture": {
                    "sample_type": "float" if sampled else "unfilterable-float",
                    "view_dimension": "2d",
                },
            }
            for i in range(kind.plane_count)
        ]
        if sampled:
            sampler = {"type": "filtering"}
            entries.append({"binding": _SAMPLER_BINDING, "visibility": stage, "sampler": sampler})
        bgl = self.device.create_bind_group_layout(label=f"alpha2 {kind.value}", entries=entries)
        pipeline_layout = self.device.create_pipeline_layout(
            label=f"alpha2 {kind.value}", bind_group_layouts=[bgl]
        )
        self._layouts[kind] = (bgl, pipeline_layout)
        return bgl, pipeline_layout

    def pipeline(self, kind: LayoutKind, output_format: str, one_to_one: bool = False) -> Any:
        """The cached render pipeline for ``kind`` writing ``output_format``; ``one_to_one``: the one
        for renders with no scaling (:attr:`ShaderParams.one_to_one`), which loads luma directly."""
        if output_format not in OUTPUT_FORMATS:
            raise InvalidInputError(
                f"output format {output_format!r} is not supported; use one of {', '.join(OUTPUT_FORMATS)}"
            )
        key = (kind, output_format, one_to_one)
        cached = self._pipelines.get(key)
        if cached is not None:
            return cached
        _, pipeline_layout = self._layout(kind)
        pipeline = self.device.create_render_pipeline(
            label=f"alpha2 {kind.value} -> {output_format}",
            layout=pipeline_layout,
            vertex={"module": self._shader, "entry_point": "vs_main", "buffers": []},
            primitive={"topology": "triangle-list"},
            fragment={
                "module": self._shader,
                "entry_point": kind.entry_point,
                "targets": [{"format": output_format}],
                "constants": {"ONE_TO_ONE": int(one_to_one)},
            },
        )
        self._pipelines[key] = pipeline
        return pipeline

    def _view(self, plane: Any) -> Any:
        if not hasattr(plane, "create_view"):
            return plane  # already a GPUTextureView
        key = ("view", id(plane))
        cached = self._views.get(key)
        if cached is None:
            cached = (plane, plane.create_view())
            self._views.put(key, cached)
        return cached[1]

    def _bind_group(self, kind: LayoutKind, views: Sequence[Any], params: ShaderParams) -> Any:
        key = (kind, tuple(id(v) for v in views), params)
        cached = self._bind_groups.get(key)
        if cached is not None:
            return cached[0]
        data = params.to_bytes()
        bgl, _ = self._layout(kind)
        buffer = self.device.create_buffer_with_data(
            label="alpha2 yuv_to_rgb params", data=data, usage=self.gpu.BufferUsage.UNIFORM
        )
        entries: list[dict[str, Any]] = [
            {"binding": 0, "resource": {"buffer": buffer, "offset": 0, "size": _UNIFORM_SIZE_BYTES}}
        ]
        entries += [{"binding": 1 + i, "resource": view} for i, view in enumerate(views)]
        if kind is not LayoutKind.RGB:
            entries.append({"binding": _SAMPLER_BINDING, "resource": self._sampler})
        bind_group = self.device.create_bind_group(label="alpha2 yuv_to_rgb", layout=bgl, entries=entries)
        self._bind_groups.put(key, (bind_group, buffer, tuple(views)))
        return bind_group

    def target_texture(self, width: int, height: int, output_format: str = "rgba8unorm") -> Any:
        """The cached output texture of that size and format (RENDER_ATTACHMENT | TEXTURE_BINDING | COPY_SRC).

        The same texture comes back for every render of that size: copy or consume it before the next.
        """
        key = (width, height, output_format)
        texture = self._targets.get(key)
        if texture is None:
            usage = self.gpu.TextureUsage
            texture = self.device.create_texture(
                label=f"alpha2 rgb {width}x{height}",
                size=(width, height, 1),
                format=output_format,
                usage=usage.RENDER_ATTACHMENT | usage.TEXTURE_BINDING | usage.COPY_SRC,
            )
            self._targets[key] = texture
        return texture

    def encode_render(
        self,
        command_encoder: Any,
        planes: Sequence[Any],
        pixel_format: PixelFormat,
        colour: ColourInfo,
        width: int,
        height: int,
        target: Any = None,
        *,
        crop: tuple[int, int, int, int] | None = None,
        output_format: str = "rgba8unorm",
    ) -> Any:
        """Encode the render of ``planes`` into ``target`` on ``command_encoder``; the caller submits.

        Args:
            command_encoder: a ``GPUCommandEncoder`` of this renderer's device.
            planes: the plane textures or texture views, in the pixel format's plane order.
            pixel_format: the planes' layout (bit depth, subsampling, plane formats).
            colour: matrix, range and chroma siting of the frame.
            width: display width (luma pixels); the planes may be larger (coded size).
            height: display height.
            target: the texture to render into, with RENDER_ATTACHMENT usage and a format from
                :data:`OUTPUT_FORMATS`; its size is the output size (the frame is scaled bilinearly
                when it differs). None: a cached ``width`` x ``height`` texture of ``output_format``.
            crop: the source rectangle inside ``width`` x ``height``; default the whole frame.
            output_format: the format of the created target (ignored when ``target`` is given).

        Returns:
            The target texture.

        Raises:
            InvalidInputError: too few planes, a bad size or an unsupported output format.
            UnsupportedError: a pixel format the shader cannot sample.
        """
        kind = layout_kind(pixel_format)
        if len(planes) < kind.plane_count:
            raise InvalidInputError(
                f"{pixel_format.ffmpeg_name} needs {kind.plane_count} plane textures "
                f"({kind.value}), got {len(planes)}"
            )
        if target is None:
            if output_format not in OUTPUT_FORMATS:
                raise InvalidInputError(
                    f"output format {output_format!r} is not supported; "
                    f"use one of {', '.join(OUTPUT_FORMATS)}"
                )
            crop_w, crop_h = (crop[2], crop[3]) if crop is not None else (width, height)
            target = self.target_texture(crop_w, crop_h, output_format)
        target_format = str(target.format)
        size = target.size
        params = shader_params(
            pixel_format, colour, width, height, crop=crop, output_size=(int(size[0]), int(size[1]))
        )
        pipeline = self.pipeline(kind, target_format, params.one_to_one)
        views = [self._view(p) for p in planes[: kind.plane_count]]
        bind_group = self._bind_group(kind, views, params)
        render_pass = command_encoder.begin_render_pass(
            color_attachments=[
                {
                    "view": self._view(target),
                    "clear_value": (0.0, 0.0, 0.0, 1.0),
                    "load_op": "clear",
                    "store_op": "store",
                }
            ]
        )
        render_pass.set_pipeline(pipeline)
        render_pass.set_bind_group(0, bind_group)
        render_pass.draw(3, 1, 0, 0)
        render_pass.end()
        return target

    def render(
        self,
        planes: Sequence[Any],
        pixel_format: PixelFormat,
        colour: ColourInfo,
        width: int,
        height: int,
        target: Any = None,
        *,
        crop: tuple[int, int, int, int] | None = None,
        output_format: str = "rgba8unorm",
    ) -> Any:
        """Render ``planes`` into ``target`` (or a cached texture) and submit; see :meth:`encode_render`."""
        encoder = self.device.create_command_encoder(label="alpha2 yuv_to_rgb")
        result = self.encode_render(
            encoder,
            planes,
            pixel_format,
            colour,
            width,
            height,
            target,
            crop=crop,
            output_format=output_format,
        )
        self.device.queue.submit([encoder.finish()])
        return result


YuvSampler = FrameRenderer
"""Alias: the design names the renderer both ways."""
