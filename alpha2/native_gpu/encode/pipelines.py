"""The encode copier's two compute passes: their pipelines, bind groups and uniform buffers.

:class:`RgbaPass` (``rgb_to_yuv.wgsl``) reads a rendered RGBA texture; :class:`PlanesPass`
(``encode_scale_yuv.wgsl``) reads an importer's plane textures with a bilinear sampler and scales them.
Both write NV12 / P010 into the copier's plane buffer, laid out as
:class:`~alpha2.native_gpu.encode.params.ReadbackLayout` says; :func:`submit_conversion` records one
pass and the copy of the plane buffer into a read-back slot.
"""

from __future__ import annotations

import collections
import importlib.resources
from collections.abc import Sequence
from typing import Any

from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, ColourRange
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation
from alpha2.gpu.hdr import HdrMetadata
from alpha2.native_gpu.encode.extent import round_up
from alpha2.native_gpu.encode.params import (
    COLOUR_STEP_SIZE_BYTES,
    PLANES_PARAMS_SIZE_BYTES,
    RGB_PARAMS_SIZE_BYTES,
    ReadbackLayout,
    ScaleYuvParams,
    colour_step_bytes,
    scale_yuv_params,
)
from alpha2.native_gpu.render.colour_params import ColourParams, colour_manage_wgsl, colour_params
from alpha2.native_gpu.render.renderer import LayoutKind

__all__ = [
    "SOURCE_TEXTURE_FORMATS",
    "PlanesPass",
    "RgbaPass",
    "load_shader_source",
    "submit_conversion",
    "workgroups",
]

SOURCE_TEXTURE_FORMATS = ("rgba8unorm", "bgra8unorm", "rgba16float")
"""Texture formats the RGBA pass reads (``*-srgb`` views would decode the transfer function: refused)."""

_SHADER_FILE = "rgb_to_yuv.wgsl"
_PLANES_SHADER_FILE = "encode_scale_yuv.wgsl"
_WORKGROUP = 8
_BIND_GROUP_CACHE = 4
_PLANES_BIND_GROUP_CACHE = 16  # the importer's pools hold a few texture sets per stream
_PLANES_PARAMS_CACHE = 8


def load_shader_source(name: str = _SHADER_FILE) -> str:
    """The WGSL source of one of the encode room's shaders."""
    return importlib.resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _entry_point(pixel_format: PixelFormat) -> str:
    return "nv12_main" if pixel_format is PixelFormat.NV12 else "p010_main"


def workgroups(width: int, height: int, pixel_format: PixelFormat) -> tuple[int, int, int]:
    """Workgroups of either pass for one output: each invocation writes one u32 word of a chroma row."""
    words_per_invocation_x = 4 if pixel_format is PixelFormat.NV12 else 2
    return (
        -(-round_up(width, words_per_invocation_x) // words_per_invocation_x // _WORKGROUP),
        -(-(height // 2) // _WORKGROUP),
        1,
    )


def submit_conversion(
    device: Any,
    pipeline: Any,
    bind_group: Any,
    dispatch: tuple[int, int, int],
    planes_buffer: Any,
    slot_buffer: Any,
    size_bytes: int,
    label: str,
) -> None:
    """Submit one pass into the plane buffer and the copy of that buffer into a read-back slot."""
    encoder = device.create_command_encoder(label="alpha2 encode")
    compute = encoder.begin_compute_pass(label=label)
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, bind_group)
    compute.dispatch_workgroups(*dispatch)
    compute.end()
    encoder.copy_buffer_to_buffer(planes_buffer, 0, slot_buffer, 0, size_bytes)
    device.queue.submit([encoder.finish()])


class RgbaPass:
    """Rendered RGBA texture -> NV12 / P010 in the plane buffer; everything is made once, up front."""

    def __init__(
        self,
        device: Any,
        gpu: Any,
        readback: ReadbackLayout,
        pixel_format: PixelFormat,
        params: bytes,
        planes_buffer: Any,
    ) -> None:
        self._device = device
        self._gpu = gpu
        self._readback = readback
        self._planes_buffer = planes_buffer
        usage = gpu.BufferUsage
        self.params_buffer = device.create_buffer(
            label="alpha2 encode params", size=RGB_PARAMS_SIZE_BYTES, usage=usage.UNIFORM | usage.COPY_DST
        )
        """The uniform block (:func:`~alpha2.native_gpu.encode.params.rgb_to_yuv_params`)."""
        device.queue.write_buffer(self.params_buffer, 0, params)
        shader = device.create_shader_module(label="alpha2 rgb_to_yuv", code=load_shader_source())
        stage = gpu.ShaderStage.COMPUTE
        self._bind_group_layout = device.create_bind_group_layout(
            label="alpha2 encode",
            entries=[
                {
                    "binding": 0,
                    "visibility": stage,
                    "texture": {"sample_type": "unfilterable-float", "view_dimension": "2d"},
                },
                {"binding": 1, "visibility": stage, "buffer": {"type": "storage"}},
                {"binding": 2, "visibility": stage, "buffer": {"type": "uniform"}},
            ],
        )
        layout = device.create_pipeline_layout(
            label="alpha2 encode", bind_group_layouts=[self._bind_group_layout]
        )
        entry_point = _entry_point(pixel_format)
        self.pipeline = device.create_compute_pipeline(
            label=f"alpha2 rgb_to_yuv {entry_point}",
            layout=layout,
            compute={"module": shader, "entry_point": entry_point},
        )
        """The compute pipeline."""
        # Bind groups per source texture, most recent last (renderers reuse one or a few textures).
        self._bind_groups: collections.OrderedDict[int, tuple[Any, Any]] = collections.OrderedDict()

    def check_texture(self, texture: Any) -> None:
        """Refuse a texture the pass cannot read.

        Raises:
            InvalidInputError: its format, size or usage does not fit; the message says what would.
        """
        fmt = str(texture.format)
        if fmt not in SOURCE_TEXTURE_FORMATS:
            raise InvalidInputError(
                f"EncodeCopier reads {', '.join(SOURCE_TEXTURE_FORMATS)} textures, not {fmt!r}"
                + (
                    " (an sRGB format would decode the transfer function; render to the unorm format)"
                    if "srgb" in fmt
                    else ""
                )
            )
        size = tuple(texture.size)
        width, height = self._readback.width, self._readback.height
        if (size[0], size[1]) != (width, height):
            raise InvalidInputError(
                f"texture is {size[0]}x{size[1]}, the copier was made for {width}x{height}; "
                "make one copier per output size"
            )
        if not int(texture.usage) & int(self._gpu.TextureUsage.TEXTURE_BINDING):
            raise InvalidInputError("the texture needs TextureUsage.TEXTURE_BINDING for the compute pass")

    def bind_group(self, texture: Any) -> Any:
        """The bind group that reads ``texture`` (cached for the last few textures)."""
        key = id(texture)
        entry = self._bind_groups.get(key)
        if entry is not None and entry[0] is texture:
            self._bind_groups.move_to_end(key)
            return entry[1]
        bind_group = self._device.create_bind_group(
            label="alpha2 encode",
            layout=self._bind_group_layout,
            entries=[
                {"binding": 0, "resource": texture.create_view()},
                {
                    "binding": 1,
                    "resource": {
                        "buffer": self._planes_buffer,
                        "offset": 0,
                        "size": self._readback.frame_size_bytes,
                    },
                },
                {
                    "binding": 2,
                    "resource": {"buffer": self.params_buffer, "offset": 0, "size": RGB_PARAMS_SIZE_BYTES},
                },
            ],
        )
        self._bind_groups[key] = (texture, bind_group)
        while len(self._bind_groups) > _BIND_GROUP_CACHE:
            self._bind_groups.popitem(last=False)
        return bind_group

    def clear(self) -> None:
        """Drop the cached bind groups (and the textures they hold)."""
        self._bind_groups.clear()


class PlanesPass:
    """Decoded Y'CbCr plane textures -> NV12 / P010 at the output's size, matrix and range, in one pass.

    Pipelines, the sampler and bind groups are made on first use (a copier fed RGBA textures never needs
    them); the uniform buffer exists up front so that the copier's finalizer owns it, and it is written
    only when the parameters change.
    """

    def __init__(
        self,
        device: Any,
        gpu: Any,
        readback: ReadbackLayout,
        pixel_format: PixelFormat,
        matrix: ColourMatrix,
        colour_range: ColourRange,
        chroma_location: ChromaLocation,
        planes_buffer: Any,
        colour_target: ColourTarget | None = None,
        colour_options: ColourOptions | None = None,
    ) -> None:
        self._device = device
        self._colour_target = colour_target
        self._colour_options = colour_options
        self._gpu = gpu
        self._readback = readback
        self._pixel_format = pixel_format
        self._matrix = matrix
        self._colour_range = colour_range
        self._chroma_location = chroma_location
        self._planes_buffer = planes_buffer
        usage = gpu.BufferUsage
        self.params_buffer = device.create_buffer(
            label="alpha2 encode planes params",
            size=PLANES_PARAMS_SIZE_BYTES,
            usage=usage.UNIFORM | usage.COPY_DST,
        )
        """The uniform block (:class:`~alpha2.native_gpu.encode.params.ScaleYuvParams`)."""
        self.colour_buffer = device.create_buffer(
            label="alpha2 encode planes colour step",
            size=COLOUR_STEP_SIZE_BYTES,
            usage=usage.UNIFORM | usage.COPY_DST,
        )
        """The colour step's uniform (:func:`~alpha2.native_gpu.encode.params.colour_step_bytes`)."""
        self._colour_written: bytes | None = None
        self._written: bytes | None = None
        self._params: collections.OrderedDict[tuple[Any, ...], tuple[ScaleYuvParams, bytes, bytes, Any]] = (
            collections.OrderedDict()
        )
        self._layout: Any = None
        self._sampler: Any = None
        self._module: tuple[Any, Any] | None = None  # (pipeline layout, shader module)
        self._pipelines: dict[tuple[Any, ...], Any] = {}
        self._bind_groups: collections.OrderedDict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = (
            collections.OrderedDict()
        )

    def prepare(
        self,
        views: Sequence[Any],
        pixel_format: PixelFormat,
        colour: ColourInfo,
        width: int,
        height: int,
        crop: tuple[int, int, int, int] | None,
        rotation: Rotation = Rotation.NONE,
        hdr: HdrMetadata | None = None,
        mirrored: bool = False,
    ) -> tuple[Any, Any, tuple[bytes, bytes]]:
        """The pipeline, bind group and uniform bytes (params, colour step) that convert these planes;
        nothing is submitted. ``hdr``: the frame's static metadata (a PQ input's peak).

        Raises:
            UnsupportedError: a gray, RGB or packed input format.
            InvalidInputError: too few planes, or a bad size or crop.
        """
        twin = pixel_format.interleaved_chroma_format
        if twin is not None and len(views) == 2:
            pixel_format = twin  # the CPU upload's planes of yuv420p (...) are its twin's: the same pixels
        params, data, colour_data, colour_constants = self._scale_params(
            pixel_format, colour, width, height, crop, rotation, hdr, mirrored
        )
        triplanar = params.layout is LayoutKind.TRIPLANAR
        count = 3 if triplanar else 2
        if len(views) < count:
            raise InvalidInputError(
                f"{pixel_format.ffmpeg_name} needs {count} plane textures ({params.layout.value}), "
                f"got {len(views)}"
            )
        bind_group = self._bind_group(tuple(views[:count]), triplanar)
        pipeline = self._pipeline(
            triplanar,
            params.luma_reads_chroma,
            params.chroma_reads_luma,
            tuple(params.constants().items()),
            colour_constants,
        )
        return pipeline, bind_group, (data, colour_data)

    def write_params(self, data: tuple[bytes, bytes]) -> None:
        """Queue the uniform bytes (params, colour step) into their buffers unless they hold them already."""
        params, colour = data
        if params != self._written:
            self._device.queue.write_buffer(self.params_buffer, 0, params)
            self._written = params
        if colour != self._colour_written:
            self._device.queue.write_buffer(self.colour_buffer, 0, colour)
            self._colour_written = colour

    def clear(self) -> None:
        """Drop the cached bind groups (and the plane textures they hold)."""
        self._bind_groups.clear()

    def _scale_params(
        self,
        pixel_format: PixelFormat,
        colour: ColourInfo,
        width: int,
        height: int,
        crop: tuple[int, int, int, int] | None,
        rotation: Rotation,
        hdr: HdrMetadata | None,
        mirrored: bool = False,
    ) -> tuple[ScaleYuvParams, bytes, bytes, tuple[tuple[str, int], ...]]:
        key = (pixel_format, colour, width, height, crop, rotation, hdr, mirrored)
        cached = self._params.get(key)
        if cached is not None:
            return cached
        plan = self._colour_plan(pixel_format, colour, hdr)
        params = scale_yuv_params(
            pixel_format,
            colour,
            width,
            height,
            output_size=(self._readback.width, self._readback.height),
            output_format=self._pixel_format,
            matrix=self._matrix,
            colour_range=self._colour_range,
            chroma_location=self._chroma_location,
            crop=crop,
            rotation=rotation,
            colour_plan=plan,
            mirrored=mirrored,
        )
        colour_data = colour_step_bytes(plan, self._matrix, self._colour_range, self._pixel_format.bit_depth)
        constants = tuple(sorted(plan.constants().items())) if plan is not None else ()
        entry = (params, params.to_bytes(), colour_data, constants)
        self._params[key] = entry
        while len(self._params) > _PLANES_PARAMS_CACHE:
            self._params.popitem(last=False)
        return entry

    def _colour_plan(
        self, pixel_format: PixelFormat, colour: ColourInfo, hdr: HdrMetadata | None
    ) -> ColourParams | None:
        """The chain from the input's colour to the copier's target; None when there is none or it is
        an identity (the affine pass then does it all, exactly as before)."""
        if self._colour_target is None:
            return None
        resolved = colour.resolved(pixel_format, 0, 0)
        plan = colour_params(resolved, self._colour_target, hdr, self._colour_options)
        return None if plan.identity else plan

    def _bind_group_layout(self) -> Any:
        if self._layout is None:
            stage = self._gpu.ShaderStage.COMPUTE
            texture = {"sample_type": "float", "view_dimension": "2d"}
            self._layout = self._device.create_bind_group_layout(
                label="alpha2 encode planes",
                entries=[
                    {"binding": 0, "visibility": stage, "texture": texture},
                    {"binding": 1, "visibility": stage, "texture": texture},
                    {"binding": 2, "visibility": stage, "texture": texture},
                    {"binding": 3, "visibility": stage, "sampler": {"type": "filtering"}},
                    {"binding": 4, "visibility": stage, "buffer": {"type": "storage"}},
                    {"binding": 5, "visibility": stage, "buffer": {"type": "uniform"}},
                    {"binding": 6, "visibility": stage, "buffer": {"type": "uniform"}},
                ],
            )
            self._sampler = self._device.create_sampler(
                label="alpha2 encode bilinear",
                address_mode_u="clamp-to-edge",
                address_mode_v="clamp-to-edge",
                mag_filter="linear",
                min_filter="linear",
                mipmap_filter="nearest",
            )
        return self._layout

    def _pipeline(
        self,
        triplanar: bool,
        luma_reads_chroma: bool,
        chroma_reads_luma: bool,
        geometry: tuple[tuple[str, float], ...] = (),
        colour: tuple[tuple[str, int], ...] = (),
    ) -> Any:
        """The compute pipeline for these reads, geometry (:meth:`ScaleYuvParams.constants` items) and
        colour step (its plan's ids; empty: the affine pass)."""
        key = (triplanar, luma_reads_chroma, chroma_reads_luma, geometry, colour)
        pipeline = self._pipelines.get(key)
        if pipeline is None:
            if self._module is None:
                self._module = (
                    self._device.create_pipeline_layout(
                        label="alpha2 encode planes", bind_group_layouts=[self._bind_group_layout()]
                    ),
                    self._device.create_shader_module(
                        label="alpha2 encode_scale_yuv",
                        code=colour_manage_wgsl() + "\n" + load_shader_source(_PLANES_SHADER_FILE),
                    ),
                )
            layout, shader = self._module
            entry_point = _entry_point(self._pixel_format)
            pipeline = self._device.create_compute_pipeline(
                label=f"alpha2 encode_scale_yuv {entry_point}{' triplanar' if triplanar else ''}",
                layout=layout,
                compute={
                    "module": shader,
                    "entry_point": entry_point,
                    "constants": {
                        "TRIPLANAR": int(triplanar),
                        "LUMA_READS_CHROMA": int(luma_reads_chroma),
                        "CHROMA_READS_LUMA": int(chroma_reads_luma),
                        "LEFT_SITED": int(self._chroma_location is not ChromaLocation.CENTER),
                        **dict(geometry),
                        # The colour step and its plan's ids (empty: the affine pass of before).
                        "COLOUR_MANAGED": int(bool(colour)),
                        **dict(colour),
                    },
                },
            )
            self._pipelines[key] = pipeline
        return pipeline

    def _bind_group(self, planes: tuple[Any, ...], triplanar: bool) -> Any:
        key = tuple(id(p) for p in planes)
        cache = self._bind_groups
        entry = cache.get(key)
        if entry is not None and all(a is b for a, b in zip(entry[0], planes, strict=True)):
            cache.move_to_end(key)
            return entry[1]
        views = [p.create_view() if hasattr(p, "create_view") else p for p in planes]
        if not triplanar:
            views.append(views[1])  # the shader's Cr binding is unused for bi-planar input
        bind_group = self._device.create_bind_group(
            label="alpha2 encode planes",
            layout=self._bind_group_layout(),
            entries=[
                *({"binding": i, "resource": view} for i, view in enumerate(views)),
                {"binding": 3, "resource": self._sampler},
                {
                    "binding": 4,
                    "resource": {
                        "buffer": self._planes_buffer,
                        "offset": 0,
                        "size": self._readback.frame_size_bytes,
                    },
                },
                {
                    "binding": 5,
                    "resource": {"buffer": self.params_buffer, "offset": 0, "size": PLANES_PARAMS_SIZE_BYTES},
                },
                {
                    "binding": 6,
                    "resource": {"buffer": self.colour_buffer, "offset": 0, "size": COLOUR_STEP_SIZE_BYTES},
                },
            ],
        )
        cache[key] = (planes, bind_group)  # holds the planes: their ids cannot be reused while cached
        while len(cache) > _PLANES_BIND_GROUP_CACHE:
            cache.popitem(last=False)
        return bind_group
