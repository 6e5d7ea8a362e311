"""The sampling shader: plane textures (Y + CbCr, Y + Cb + Cr, gray, packed RGB) into an RGBA texture.

:func:`shader_params` turns a frame's vocabulary (:class:`~alpha2.gpu.formats.PixelFormat`,
:class:`~alpha2.gpu.colour.ColourInfo`, display size) into the shader's uniform block; it is a pure
function, so the numbers the GPU sees can be checked without a GPU. :class:`FrameRenderer` caches one
pipeline per (layout kind, output format, constants) and one bind group per (plane views,
parameters), encodes a full-screen-triangle render pass and returns the RGBA texture. It works with
any wgpu-py style module (``wgpu`` on wgpu-native, ``wgpudawn`` on Dawn): the module is found from the
device's class.

Y'CbCr planes are read through one linear sampler, one hardware bilinear sample per plane and pixel
(4:2:0 chroma at 8 bits then carries the sampler's 8-bit filter precision: a mean error of about half
a code value against the exact conversion). The vertex shader computes the texture coordinates (they
are affine in the pixel position); the fragment shader clamps them to the centres of the displayed
texels only when those are smaller than the textures (a pipeline constant), so the filter clamps at
the edge of the picture, never of the padding, and each chroma sample sits exactly where the frame's
siting says, the way swscale's bilinear filter does with ``full_chroma_int`` and explicit
``in_h_chr_pos`` / ``in_v_chr_pos``. The colour matrix is a set of pipeline constants too: on lavapipe
a uniform load, a clamp or a ``textureLoad`` a pixel is a measurable share of the frame, and a uniform
branch around texture reads made it build a shader variant on every draw. Packed RGB planes keep
``textureLoad`` and a manual filter (rgba32float is filterable only with 'float32-filterable').

Colour management: whenever the frame's primaries or transfer differ from the renderer's target
(SDR BT.709 by default, :class:`~alpha2.gpu.colour_manage.ColourTarget`), each pixel's R'G'B' goes
through ``colour_manage.wgsl`` (decode, primaries, tone map, gamut, encode; packed by
:mod:`~alpha2.native_gpu.render.colour_params` from the plan the numpy reference runs). Those
pipelines come from a second shader module with the colour uniform at binding 5; when the plan is an
identity the plain module and pipeline are used, so SDR BT.709 frames stay exactly as they were.

16-bit planes (r16unorm / rg16unorm: P010, yuv420p10, ...) need the device feature that makes those
formats exist: 'texture-format16bit-norm' on wgpu-native, 'unorm16-texture-formats' on Dawn. The
shader itself requests nothing; whoever creates the plane textures does.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import importlib
import importlib.resources
import math
import struct
from collections.abc import Hashable, Sequence
from typing import Any

from alpha2.gpu.colour import ColourInfo, TransferCharacteristic
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation
from alpha2.gpu.hdr import HdrMetadata
from alpha2.gpu.webgpu import HasWebGpuDevice, WebGpuDevice, gpu_module_of, webgpu_device_of
from alpha2.native_gpu.render.colour_params import ColourParams, colour_manage_wgsl, colour_params
from alpha2.native_gpu.render.params import (
    LayoutKind,
    ShaderParams,
    layout_kind,
    shader_params,
)
from alpha2.native_gpu.render.readback import read_texture_rgba

__all__ = [
    "MAX_ANTIALIAS_TAPS",
    "OUTPUT_FORMATS",
    "FrameRenderer",
    "LayoutKind",
    "ShaderParams",
    "YuvSampler",
    "antialias_taps",
    "gpu_module_of",
    "layout_kind",
    "load_wgsl",
    "read_texture_rgba",
    "shader_params",
    "warm_webgpu_bindings",
]

OUTPUT_FORMATS: tuple[str, ...] = ("rgba8unorm", "bgra8unorm", "rgba16float")
"""Texture formats :class:`FrameRenderer` can render into."""

_WGSL_NAME = "yuv_to_rgb.wgsl"
_MANAGED_WGSL_NAME = "yuv_to_rgb_managed.wgsl"
_SAMPLER_BINDING = 4
_COLOUR_BINDING = 5
_COLOUR_PLANS_CACHE = 32
_HDR_TRANSFERS = (TransferCharacteristic.SMPTE2084, TransferCharacteristic.ARIB_STD_B67)
_PLANE_BLOCK_SIZE_BYTES = 48
"""What the renderer appends to :meth:`ShaderParams.to_bytes` per bind group: the bound planes' texel
sizes and the clamp ranges as texture coordinates (they depend on the textures, not on the frame)."""


# The C types wgpu-py 0.32 (wgpu-native) asks cffi for while alpha2 opens a device, imports, renders and
# presents: each one cffi parses on first use by running pycparser over every typedef of webgpu.h (about
# 13 ms a type on two cores, 0.9 s before the first frame); :func:`warm_webgpu_bindings` parses them in one
# pass.
_WGPU_C_TYPES: tuple[str, ...] = (
    "WGPUAdapterInfo *",
    "WGPUAdapter[]",
    "WGPUBindGroupDescriptor *",
    "WGPUBindGroupEntry *",
    "WGPUBindGroupEntry[]",
    "WGPUBindGroupLayoutDescriptor *",
    "WGPUBindGroupLayoutEntry *",
    "WGPUBindGroupLayoutEntry[]",
    "WGPUBindGroupLayout[]",
    "WGPUBufferBindingLayout *",
    "WGPUBufferDescriptor *",
    "WGPUBufferMapCallbackInfo *",
    "WGPUChainedStruct *",
    "WGPUChainedStruct * ",
    "WGPUColor *",
    "WGPUColorTargetState *",
    "WGPUColorTargetState[]",
    "WGPUCommandBufferDescriptor *",
    "WGPUCommandBuffer[]",
    "WGPUCommandEncoderDescriptor *",
    "WGPUConstantEntry *",
    "WGPUConstantEntry[]",
    "WGPUDeviceDescriptor *",
    "WGPUDeviceExtras *",
    "WGPUDeviceLostCallbackInfo *",
    "WGPUExtent3D *",
    "WGPUFeatureName[]",
    "WGPUFragmentState *",
    "WGPUInstanceDescriptor *",
    "WGPULimits *",
    "WGPUMultisampleState *",
    "WGPUNativeLimits *",
    "WGPUOrigin3D *",
    "WGPUPipelineLayoutDescriptor *",
    "WGPUPrimitiveState *",
    "WGPUPrimitiveStateExtras *",
    "WGPUQueueDescriptor *",
    "WGPURenderPassColorAttachment *",
    "WGPURenderPassColorAttachment[]",
    "WGPURenderPassDescriptor *",
    "WGPURenderPipelineDescriptor *",
    "WGPURequestDeviceCallbackInfo *",
    "WGPUSamplerBindingLayout *",
    "WGPUSamplerDescriptor *",
    "WGPUShaderModuleDescriptor *",
    "WGPUShaderSourceWGSL *",
    "WGPUStringView *",
    "WGPUTexelCopyBufferLayout *",
    "WGPUTexelCopyTextureInfo *",
    "WGPUTexelCopyBufferInfo *",
    "WGPUTextureBindingLayout *",
    "WGPUTextureDescriptor *",
    "WGPUTextureViewDescriptor *",
    "WGPUUncapturedErrorCallbackInfo *",
    "WGPUVertexState *",
    "WGPUBlendState *",
    "WGPUBlendComponent *",
    "WGPUSurfaceConfiguration *",
    "WGPUSurfaceTexture *",
    "WGPUSurfaceCapabilities *",
    "WGPUSurfaceDescriptor *",
    "WGPUSurfaceSourceXlibWindow *",
    "WGPUSurfaceSourceWaylandSurface *",
    "WGPUSurfaceSourceXCBWindow *",
    "WGPUTextureFormat[]",
    "WGPUTextureView[]",
    "WGPURenderPassDepthStencilAttachment *",
    "WGPUPassTimestampWrites *",
    "char []",
    "intptr_t",
    "uint32_t []",
    "uint8_t *",
    "uint8_t []",
    "uintptr_t",
    "void(WGPUDevice const *, WGPUDeviceLostReason, WGPUStringView, void *, void *)",
    "void(WGPUDevice const *, WGPUErrorType, WGPUStringView, void *, void *)",
    "void(WGPULogLevel, WGPUStringView, void *)",
    "void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)",
    "void(WGPURequestDeviceStatus, WGPUDevice, WGPUStringView, void *, void *)",
    "void(WGPURequestAdapterStatus, WGPUAdapter, WGPUStringView, void *, void *)",
)


def warm_webgpu_bindings() -> int:
    """Have cffi know wgpu-py's C types before the device, the importer and the renderer ask for them;
    returns how many were parsed now.

    cffi parses a type written as text (``ffi.new("WGPUTextureDescriptor *")``) on its first use, each in a
    pycparser run over all of webgpu.h's typedefs: wgpu-py's first device, render and present ask for about
    70 such types, 0.9 s of a 2-core machine's start-up. Here they are parsed as the parameters of one
    declaration (what cffi's ``parse_type`` does with one) and put in cffi's own cache, as its ``typeof``
    would. Types the header lacks are left out; where cffi or wgpu-py are not as expected (another
    version), nothing is done and each type is parsed on its first use, as before. Thread-safe.
    """
    try:
        from wgpu.backends.wgpu_native._ffi import ffi

        parser, cache, lock = ffi._parser, ffi._parsed_types, ffi._lock
        known = parser._declarations
    except Exception:  # not wgpu-native 0.32, or not this cffi: nothing to warm
        return 0
    import re

    def declared(cdecl: str) -> bool:
        return all(f"typedef {name}" in known for name in re.findall(r"WGPU\w+", cdecl))

    with lock:
        todo = [cdecl for cdecl in _WGPU_C_TYPES if cdecl not in cache and declared(cdecl)]
        if not todo:
            return 0
        try:
            source = ",\n".join(todo)
            ast = parser._parse(f"void __dummy(\n{source}\n);")[0]
            params = ast.ext[-1].type.args.params
            if len(params) != len(todo):
                return 0
            found = []
            for cdecl, param in zip(todo, params):
                parsed, _quals = parser._get_type_and_quals(param.type)
                raw_function = bool(parsed.is_raw_function)
                if raw_function:
                    parsed = parsed.as_function_pointer()
                found.append((cdecl, (ffi._get_cached_btype(parsed), raw_function)))
        except Exception:  # left to cffi's own parse on first use
            return 0
        for cdecl, entry in found:
            cache.setdefault(cdecl, entry)
    return len(found)


@functools.lru_cache(maxsize=64)
def _colour_items(params: ShaderParams) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(params.colour_constants().items()))


@functools.lru_cache(maxsize=64)
def _managed_items(plan: ColourParams) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(plan.constants().items()))


def _plane_size(plane: Any) -> tuple[int, int]:
    size = getattr(plane, "size", None)
    if size is None:
        size = getattr(getattr(plane, "texture", None), "size", None)
    if size is None:
        raise InvalidInputError(f"cannot tell the size of plane {plane!r}: pass GPUTextures or their views")
    return int(size[0]), int(size[1])


def _plane_block(params: ShaderParams, views: Sequence[Any]) -> tuple[bytes, bool]:
    """The uniform block's tail for these plane textures (texel sizes, clamp ranges as coordinates), and
    whether those ranges are smaller than the textures (so that the shader must clamp)."""
    lw, lh = _plane_size(views[0])
    cw, ch = _plane_size(views[1]) if len(views) > 1 else (lw, lh)
    whole = params.luma_clamp == (0, 0, lw - 1, lh - 1) and (
        params.layout in (LayoutKind.GRAY, LayoutKind.RGB) or params.chroma_clamp == (0, 0, cw - 1, ch - 1)
    )
    inv = (1.0 / lw, 1.0 / lh, 1.0 / cw, 1.0 / ch)

    def bounds(limits: tuple[int, int, int, int], ix: float, iy: float) -> tuple[float, ...]:
        x0, y0, x1, y1 = limits
        return ((x0 + 0.5) * ix, (y0 + 0.5) * iy, (x1 + 0.5) * ix, (y1 + 0.5) * iy)

    values = (*inv, *bounds(params.luma_clamp, inv[0], inv[1]), *bounds(params.chroma_clamp, inv[2], inv[3]))
    data = struct.pack("<12f", *values)
    assert len(data) == _PLANE_BLOCK_SIZE_BYTES
    return data, not whole


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

    def __init__(
        self,
        device: HasWebGpuDevice | WebGpuDevice,
        *,
        gpu_module: Any = None,
        cache_size: int = 64,
        colour_target: ColourTarget | None = None,
        colour_options: ColourOptions | None = None,
        sdr_gamut: bool = False,
    ) -> None:
        """Args:
        device: an alpha2 :class:`~alpha2.native_gpu.device.device.Device`, or a ``GPUDevice`` from
            ``wgpu`` or ``wgpudawn``.
        gpu_module: the module the device comes from; found from the device's class when None.
        cache_size: how many bind groups (and plane views) to keep.
        colour_target: what the output is (primaries, transfer, peak); None: SDR BT.709.
        colour_options: tone curve and gamut mapping of the colour-managed pass; None: the defaults.
        sdr_gamut: convert an SDR frame's primaries too (BT.601, BT.2020 SDR -> the target's). Off by
            default, as FFmpeg's swscale and browsers do: an SDR frame into an SDR target is drawn by the
            plain pass, exactly; HDR frames (PQ, HLG) and HDR targets are always managed.
        """
        if cache_size < 1:
            raise InvalidInputError(f"cache_size must be at least 1, got {cache_size}")
        if colour_target is not None and not isinstance(colour_target, ColourTarget):
            raise InvalidInputError(f"colour_target must be a ColourTarget or None, not {colour_target!r}")
        if colour_options is not None and not isinstance(colour_options, ColourOptions):
            raise InvalidInputError(f"colour_options must be a ColourOptions or None, not {colour_options!r}")
        device = webgpu_device_of(device)
        self.device = device
        self.gpu = gpu_module if gpu_module is not None else gpu_module_of(device)
        self.colour_target = colour_target or ColourTarget()
        """The default target of every render (SDR BT.709 unless given)."""
        self.colour_options = colour_options or ColourOptions()
        """Tone curve and gamut mapping of the colour-managed pass."""
        self.sdr_gamut = bool(sdr_gamut)
        """Whether SDR frames into an SDR target have their primaries converted."""
        self.last_colour: ColourParams | None = None
        """The colour plan of the latest render (its ``identity`` says whether the pass managed colour);
        None when the frame's transfer or primaries have no formula (the plain pass draws it, as before)."""
        self._shader = device.create_shader_module(label="alpha2 yuv_to_rgb", code=load_wgsl())
        self._managed_shader: Any = None
        self._colour_plans: collections.OrderedDict[tuple[Any, ...], ColourParams | None] = (
            collections.OrderedDict()
        )
        self._layouts: dict[tuple[LayoutKind, bool], tuple[Any, Any]] = {}
        self._pipelines: dict[tuple[Any, ...], Any] = {}
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

    def __reduce__(self) -> Any:
        # Without this, pickle failed with "cannot pickle '_cffi_backend._CDataBase' object", and
        # copy.deepcopy left a GPUDevice without its poller, whose __del__ raised at exit.
        raise InvalidInputError(
            "an alpha2 FrameRenderer cannot be pickled or copied: its pipelines belong to this process's GPU "
            "device; make one in each process (source.renderer, or FrameRenderer(device))"
        )

    def clear_cache(self) -> None:
        """Drop cached bind groups, views and output textures (pipelines stay)."""
        self._bind_groups.clear()
        self._views.clear()
        self._targets.clear()

    def colour_plan(
        self,
        colour: ColourInfo,
        pixel_format: PixelFormat,
        hdr: HdrMetadata | None = None,
        colour_target: ColourTarget | None = None,
    ) -> ColourParams:
        """The colour-management plan (and uniform) from a frame's colour to ``colour_target``.

        Unspecified tags are resolved as FFmpeg does (BT.709 primaries and transfer).

        Raises:
            UnsupportedError: a transfer or primaries alpha2 has no formula for.
        """
        resolved = colour.resolved(pixel_format, 0, 0)
        target = colour_target or self.colour_target
        if (
            not self.sdr_gamut
            and resolved.transfer not in _HDR_TRANSFERS
            and target.transfer not in _HDR_TRANSFERS
        ):
            target = ColourTarget.of(resolved)  # SDR into SDR: the plain pass (an identity plan)
        return colour_params(resolved, target, hdr, self.colour_options)

    def _plan_of(
        self,
        colour: ColourInfo,
        pixel_format: PixelFormat,
        hdr: HdrMetadata | None,
        colour_target: ColourTarget | None,
    ) -> ColourParams | None:
        """:meth:`colour_plan`, cached; None for tags with no formula (drawn by the plain pass)."""
        key = (colour, pixel_format, hdr, colour_target or self.colour_target)
        if key in self._colour_plans:
            self._colour_plans.move_to_end(key)
            return self._colour_plans[key]
        cached: ColourParams | None
        try:
            cached = self.colour_plan(colour, pixel_format, hdr, colour_target)
        except (UnsupportedError, InvalidInputError):
            cached = (
                None  # e.g. a LOG or reserved transfer: shown as its code values, as before colour management
            )
        self._colour_plans[key] = cached
        while len(self._colour_plans) > _COLOUR_PLANS_CACHE:
            self._colour_plans.popitem(last=False)
        return cached

    def manages_colour(
        self,
        colour: ColourInfo,
        pixel_format: PixelFormat,
        hdr: HdrMetadata | None = None,
        colour_target: ColourTarget | None = None,
    ) -> bool:
        """Whether a render of a frame of this colour takes the colour-managed pass (its plan is not an
        identity: HDR tone mapping, an SDR frame's primaries with ``sdr_gamut``); False: the plain pass,
        which the CUDA tensor kernel (:mod:`~alpha2.native_gpu.render.cuda_tensor`) does too."""
        plan = self._plan_of(colour, pixel_format, hdr, colour_target)
        return plan is not None and not plan.identity

    def _module(self, managed: bool) -> Any:
        if not managed:
            return self._shader
        if self._managed_shader is None:
            code = colour_manage_wgsl() + "\n" + load_wgsl() + "\n" + load_wgsl(_MANAGED_WGSL_NAME)
            self._managed_shader = self.device.create_shader_module(
                label="alpha2 yuv_to_rgb colour-managed", code=code
            )
        return self._managed_shader

    def _layout(self, kind: LayoutKind, managed: bool = False) -> tuple[Any, Any]:
        cached = self._layouts.get((kind, managed))
        if cached is not None:
            return cached
        stage = self.gpu.ShaderStage.FRAGMENT
        both = self.gpu.ShaderStage.VERTEX | stage  # the vertex shader computes the texture coordinates
        entries: list[dict[str, Any]] = [{"binding": 0, "visibility": both, "buffer": {"type": "uniform"}}]
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
        if managed:
            entries.append({"binding": _COLOUR_BINDING, "visibility": stage, "buffer": {"type": "uniform"}})
        label = f"alpha2 {kind.value}{' colour-managed' if managed else ''}"
        bgl = self.device.create_bind_group_layout(label=label, entries=entries)
        pipeline_layout = self.device.create_pipeline_layout(label=label, bind_group_layouts=[bgl])
        self._layouts[(kind, managed)] = (bgl, pipeline_layout)
        return bgl, pipeline_layout

    def pipeline(
        self,
        kind: LayoutKind,
        output_format: str,
        one_to_one: bool = False,
        clamp_coords: bool = True,
        colour: tuple[tuple[str, float], ...] = (),
        rotation: Rotation = Rotation.NONE,
        managed: bool = False,
        taps: tuple[int, int] = (1, 1),
    ) -> Any:
        """The cached render pipeline for ``kind`` writing ``output_format``.

        Args:
            kind: the planes' layout.
            output_format: the target's texture format.
            one_to_one: no scaling (:attr:`ShaderParams.one_to_one`): the luma (or packed RGB) is read
                with direct loads.
            clamp_coords: clamp the sample positions to the displayed texels; False when those are the
                whole textures (the sampler's clamp-to-edge does the same, for less work a pixel).
            colour: :meth:`ShaderParams.colour_constants` as sorted items; empty: the identity.
            rotation: clockwise rotation applied to the picture (a vertex-stage constant).
            managed: the colour-managed entry point (colour uniform at binding 5).
            taps: samples a pixel along x and y for an antialiased downscale (:func:`antialias_taps`);
                (1, 1): one bilinear sample.
        """
        _check_output_format(output_format)
        key = (kind, output_format, one_to_one, clamp_coords, colour, rotation, managed, taps)
        cached = self._pipelines.get(key)
        if cached is not None:
            return cached
        _, pipeline_layout = self._layout(kind, managed)
        module = self._module(managed)
        pipeline = self.device.create_render_pipeline(
            label=f"alpha2 {kind.value} -> {output_format}{' colour-managed' if managed else ''}",
            layout=pipeline_layout,
            vertex={
                "module": module,
                "entry_point": "vs_main",
                "buffers": [],
                "constants": {"ROTATION": int(rotation) // 90},
            },
            primitive={"topology": "triangle-list"},
            fragment={
                "module": module,
                "entry_point": kind.entry_point + ("_managed" if managed else ""),
                "targets": [{"format": output_format}],
                "constants": {
                    "ONE_TO_ONE": int(one_to_one),
                    "CLAMP_COORDS": int(clamp_coords),
                    # unorm targets clamp what is stored; a float target needs the shader to.
                    "CLAMP_OUTPUT": int(output_format == "rgba16float"),
                    "TAPS_X": int(taps[0]),
                    "TAPS_Y": int(taps[1]),
                    **dict(colour),
                },
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

    def _bind_group(
        self, kind: LayoutKind, views: Sequence[Any], params: ShaderParams, colour: bytes | None = None
    ) -> tuple[Any, bool]:
        """The bind group for these planes and parameters (and colour uniform, when managed), and whether
        its sample positions need clamping."""
        key = (kind, tuple(id(v) for v in views), params, colour)
        cached = self._bind_groups.get(key)
        if cached is not None:
            return cached[0], cached[3]
        block, clamp_coords = _plane_block(params, views)
        data = params.to_bytes() + block
        bgl, _ = self._layout(kind, colour is not None)
        buffer = self.device.create_buffer_with_data(
            label="alpha2 yuv_to_rgb params", data=data, usage=self.gpu.BufferUsage.UNIFORM
        )
        entries: list[dict[str, Any]] = [
            {"binding": 0, "resource": {"buffer": buffer, "offset": 0, "size": len(data)}}
        ]
        entries += [{"binding": 1 + i, "resource": view} for i, view in enumerate(views)]
        if kind is not LayoutKind.RGB:
            entries.append({"binding": _SAMPLER_BINDING, "resource": self._sampler})
        buffers = [buffer]
        if colour is not None:
            colour_buffer = self.device.create_buffer_with_data(
                label="alpha2 colour_manage", data=colour, usage=self.gpu.BufferUsage.UNIFORM
            )
            buffers.append(colour_buffer)
            entries.append(
                {
                    "binding": _COLOUR_BINDING,
                    "resource": {"buffer": colour_buffer, "offset": 0, "size": len(colour)},
                }
            )
        bind_group = self.device.create_bind_group(label="alpha2 yuv_to_rgb", layout=bgl, entries=entries)
        self._bind_groups.put(key, (bind_group, tuple(buffers), tuple(views), clamp_coords))
        return bind_group, clamp_coords

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
        planes: Any,
        pixel_format: PixelFormat | None = None,
        colour: ColourInfo | None = None,
        width: int | None = None,
        height: int | None = None,
        target: Any = None,
        *,
        crop: tuple[int, int, int, int] | None = None,
        output_format: str = "rgba8unorm",
        rotation: Rotation = Rotation.NONE,
        hdr: HdrMetadata | None = None,
        colour_target: ColourTarget | None = None,
        antialias: bool = False,
        mirrored: bool | None = None,
    ) -> Any:
        """Encode the render of ``planes`` into ``target`` on ``command_encoder``; the caller submits.

        Args:
            command_encoder: a ``GPUCommandEncoder`` of this renderer's device.
            planes: the plane textures or texture views, in the pixel format's plane order; or an
                importer's ``ImportLease`` / ``ImportedFrame``, which brings format, colour and size.
            pixel_format: the planes' layout (bit depth, subsampling, plane formats).
            colour: matrix, range and chroma siting of the frame.
            width: display width (luma pixels); the planes may be larger (coded size).
            height: display height.
            target: the texture to render into, with RENDER_ATTACHMENT usage and a format from
                :data:`OUTPUT_FORMATS`; its size is the output size (the frame is scaled bilinearly
                when it differs). None: a cached ``width`` x ``height`` texture of ``output_format``.
            crop: the source rectangle inside ``width`` x ``height``; default the whole frame.
            output_format: the format of the created target (ignored when ``target`` is given).
            rotation: clockwise rotation applied to the picture (a frame's ``metadata.rotation``, from
                its display matrix): the target shows it turned, and a created target has the turned
                size (a quarter turn swaps width and height).
            hdr: the frame's HDR static metadata (a PQ source's peak); taken from an ImportedFrame's
                metadata when None.
            colour_target: what to render to; None: the renderer's :attr:`colour_target`. The pass
                manages colour (:meth:`colour_plan`) unless the plan is an identity.
            antialias: a downscale averages the source under each output pixel (a tent two output
                pixels wide, as PIL's and torchvision's antialiased bilinear; :func:`antialias_taps`);
                False: one bilinear sample a pixel, which aliases fine detail below half size.
            mirrored: the picture is flipped left to right before ``rotation`` (a frame's
                ``metadata.mirrored``, from its display matrix); None: an ImportedFrame's, else False.

        Returns:
            The target texture.

        Raises:
            InvalidInputError: too few planes, a bad size or an unsupported output format.
            UnsupportedError: a pixel format the shader cannot sample.
        """
        planes_in = planes
        planes, pixel_format, colour, width, height, hdr = _frame_args_hdr(
            planes, pixel_format, colour, width, height, hdr
        )
        if target is not None:
            _check_same_device(self.device, target, "target")
        if target is None:
            _check_output_format(output_format)
            crop_w, crop_h = (crop[2], crop[3]) if crop is not None else (width, height)
            if _quarter_turn(rotation):
                crop_w, crop_h = crop_h, crop_w
            target = self.target_texture(crop_w, crop_h, output_format)
        size = (int(target.size[0]), int(target.size[1]))
        pipeline, bind_group = self._prepare(
            planes,
            pixel_format,
            colour,
            width,
            height,
            crop,
            str(target.format),
            size,
            rotation,
            hdr,
            colour_target,
            antialias,
            _mirrored(planes_in, mirrored),
        )
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

    def encode_draw(
        self,
        render_pass: Any,
        planes: Any,
        *,
        rect: tuple[int, int, int, int],
        target_format: str = "rgba8unorm",
        crop: tuple[int, int, int, int] | None = None,
        rotation: Rotation = Rotation.NONE,
        hdr: HdrMetadata | None = None,
        colour_target: ColourTarget | None = None,
        antialias: bool = False,
        mirrored: bool | None = None,
    ) -> None:
        """Record the render of ``planes`` (an ImportLease / ImportedFrame) into the rectangle ``rect`` of
        an open render pass's target: no texture of its own, no copy (a video wall's tile).

        The pass's viewport and scissor are set to ``rect`` and left so; the pixels outside it keep what
        the pass loaded. The picture is the one :meth:`encode_render` makes into a ``rect``-sized target.

        Args:
            render_pass: an open ``GPURenderPassEncoder`` of this renderer's device.
            planes: an importer's ``ImportLease`` or ``ImportedFrame``.
            rect: x, y, width, height in the target's pixels, inside the target.
            target_format: the pass's colour attachment format, from :data:`OUTPUT_FORMATS`.
            crop, rotation, hdr, colour_target, antialias, mirrored: as :meth:`encode_render` takes
                them.

        Raises:
            InvalidInputError: a bad rectangle or format, too few planes.
            UnsupportedError: a pixel format the shader cannot sample.
        """
        x, y, width_px, height_px = rect
        if width_px < 1 or height_px < 1 or x < 0 or y < 0:
            raise InvalidInputError(f"a draw rectangle is x, y >= 0 and a positive size, got {rect}")
        _check_output_format(target_format, "target format")
        mirror = _mirrored(planes, mirrored)
        planes, pixel_format, colour, width, height, hdr = _frame_args_hdr(
            planes, None, None, None, None, hdr
        )
        pipeline, bind_group = self._prepare(
            planes,
            pixel_format,
            colour,
            width,
            height,
            crop,
            target_format,
            (width_px, height_px),
            rotation,
            hdr,
            colour_target,
            antialias,
            mirror,
        )
        render_pass.set_viewport(x, y, width_px, height_px, 0.0, 1.0)
        render_pass.set_scissor_rect(x, y, width_px, height_px)
        render_pass.set_pipeline(pipeline)
        render_pass.set_bind_group(0, bind_group)
        render_pass.draw(3, 1, 0, 0)

    def _prepare(
        self,
        planes: Sequence[Any],
        pixel_format: PixelFormat,
        colour: ColourInfo,
        width: int,
        height: int,
        crop: tuple[int, int, int, int] | None,
        target_format: str,
        size: tuple[int, int],
        rotation: Rotation,
        hdr: HdrMetadata | None,
        colour_target: ColourTarget | None,
        antialias: bool = False,
        mirrored: bool = False,
    ) -> tuple[Any, Any]:
        """The pipeline and bind group of one render of ``size`` output pixels in ``target_format``."""
        kind = layout_kind(pixel_format)
        twin = pixel_format.interleaved_chroma_format
        if twin is not None and len(planes) == 2:
            # The CPU upload's planes of yuv420p (...) are its twin's (nv12 ...): the same pixels.
            pixel_format, kind = twin, layout_kind(twin)
        if len(planes) < kind.plane_count:
            raise InvalidInputError(
                f"{pixel_format.ffmpeg_name} needs {kind.plane_count} plane textures "
                f"({kind.value}), got {len(planes)}"
            )
        # The uniform block is the unrotated render's; the vertex shader turns the picture.
        unrotated = (size[1], size[0]) if _quarter_turn(rotation) else size
        params = shader_params(pixel_format, colour, width, height, crop=crop, output_size=unrotated)
        if mirrored:
            params = dataclasses.replace(params, mirrored=True)
        for plane in planes[: kind.plane_count]:
            _check_same_device(self.device, plane, "plane texture")
        views = [self._view(p) for p in planes[: kind.plane_count]]
        plan = self._plan_of(colour, pixel_format, hdr, colour_target)
        self.last_colour = plan
        managed = plan is not None and not plan.identity
        uniform = plan.uniform if plan is not None and managed else None
        bind_group, clamp_coords = self._bind_group(kind, views, params, uniform)
        # At 1:1 the luma (fs_rgb: the pixel) is a direct load of one texel.
        pipeline = self.pipeline(
            kind,
            target_format,
            params.one_to_one,
            clamp_coords,
            _colour_items(params) + (_managed_items(plan) if plan is not None and managed else ()),
            rotation,
            managed,
            antialias_taps(params) if antialias else (1, 1),
        )
        return pipeline, bind_group

    def render(
        self,
        planes: Any,
        pixel_format: PixelFormat | None = None,
        colour: ColourInfo | None = None,
        width: int | None = None,
        height: int | None = None,
        target: Any = None,
        *,
        crop: tuple[int, int, int, int] | None = None,
        output_format: str = "rgba8unorm",
        rotation: Rotation = Rotation.NONE,
        hdr: HdrMetadata | None = None,
        colour_target: ColourTarget | None = None,
        antialias: bool = False,
        mirrored: bool | None = None,
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
            rotation=rotation,
            hdr=hdr,
            colour_target=colour_target,
            antialias=antialias,
            mirrored=mirrored,
        )
        self.device.queue.submit([encoder.finish()])
        return result


MAX_ANTIALIAS_TAPS = 16
"""Most samples a pixel along each axis of an antialiased downscale (256 in all): a source pixel apart up
to about an 8x downscale, two at 16x (each still bilinear), a little aliasing past that against a cost
that stays bounded. 8 (64 in all) aliased from 4x: a 1080p zone plate made 16x smaller was 2.36 codes
from PIL's antialiased resize on average and 118 at most, 0.61 and 23 with 16; on lavapipe 16 taps cost
4x the render at 8x smaller (56 against 14 ms a 1080p frame); on the H200 64 taps cost nothing
measurable, 256 are not measured there yet."""


def antialias_taps(params: ShaderParams) -> tuple[int, int]:
    """Samples a pixel along x and y for an antialiased render with these parameters: none more than one
    where that axis is not scaled down, else enough for a source pixel between them over the tent of
    two output pixels (``ceil(2 * scale) + 1``), at most :data:`MAX_ANTIALIAS_TAPS`."""
    if params.one_to_one:
        return 1, 1
    out_w, out_h = params.output_size
    taps = []
    for source, out in ((params.src_rect[2], out_w), (params.src_rect[3], out_h)):
        scale = source / out
        taps.append(1 if scale <= 1.0 else min(MAX_ANTIALIAS_TAPS, math.ceil(2 * scale) + 1))
    return taps[0], taps[1]


def _quarter_turn(rotation: Rotation) -> bool:
    return rotation in (Rotation.CW90, Rotation.CW270)


def _frame_args(
    planes: Any,
    pixel_format: PixelFormat | None,
    colour: ColourInfo | None,
    width: int | None,
    height: int | None,
) -> tuple[Sequence[Any], PixelFormat, ColourInfo, int, int]:
    """The render's arguments, from an ImportLease / ImportedFrame (its ``frame`` / ``views``) or as given."""
    frame = getattr(planes, "frame", planes)  # an ImportLease holds its ImportedFrame in .frame
    views = getattr(frame, "views", None)
    if views is not None and hasattr(frame, "pixel_format"):
        return (
            views,
            pixel_format or frame.pixel_format,
            colour or frame.colour,
            width or frame.metadata.display_size.width,
            height or frame.metadata.display_size.height,
        )
    if not isinstance(planes, Sequence) or pixel_format is None or colour is None or not width or not height:
        raise InvalidInputError(
            f"render takes an ImportLease (or its .frame), or plane views with pixel_format, colour, width "
            f"and height; got {type(planes).__name__} with pixel_format={pixel_format!r}"
        )
    return planes, pixel_format, colour, width, height


def _check_output_format(name: str, what: str = "output format") -> None:
    """Raise InvalidInputError naming the formats a render can write when ``name`` is not one of them."""
    if name not in OUTPUT_FORMATS:
        raise InvalidInputError(f"{what} {name!r} is not supported; use one of {', '.join(OUTPUT_FORMATS)}")


def _frame_args_hdr(
    planes: Any,
    pixel_format: PixelFormat | None,
    colour: ColourInfo | None,
    width: int | None,
    height: int | None,
    hdr: HdrMetadata | None,
) -> tuple[Sequence[Any], PixelFormat, ColourInfo, int, int, HdrMetadata | None]:
    """:func:`_frame_args`, plus the HDR metadata (an ImportedFrame's when ``hdr`` is None)."""
    if hdr is None:
        hdr = getattr(getattr(getattr(planes, "frame", planes), "metadata", None), "hdr", None)
    return (*_frame_args(planes, pixel_format, colour, width, height), hdr)


def _mirrored(planes: Any, mirrored: bool | None) -> bool:
    """``mirrored`` as given, else an ImportLease's / ImportedFrame's ``metadata.mirrored``."""
    if mirrored is not None:
        return bool(mirrored)
    return bool(getattr(getattr(getattr(planes, "frame", planes), "metadata", None), "mirrored", False))


def _check_same_device(device: Any, obj: Any, what: str) -> None:
    """Refuse a texture (or view) of another device: wgpu only says so in a raw validation error."""
    owner = getattr(obj, "_device", None)  # wgpu-py's GPUObjectBase keeps its device there
    if owner is not None and owner is not device and hasattr(owner, "create_texture"):
        raise InvalidInputError(
            f"the {what} belongs to another device ({getattr(owner, 'adapter_info', {}) or owner!r}); "
            "create it on the renderer's device (FrameRenderer(device).device), or make the renderer "
            "on the texture's device"
        )


YuvSampler = FrameRenderer
"""Alias: the design names the renderer both ways."""
