"""The uniform blocks of the encode copier's two compute passes, and the read-back buffer's layout.

:func:`rgb_to_yuv_params` packs the RGBA pass's block (``rgb_to_yuv.wgsl``: the output matrix and
range as one affine transform of R'G'B'); :func:`scale_yuv_params` builds the planes pass's block
(``encode_scale_yuv.wgsl``: the input's planes scaled to the output size, and the input's matrix and
range turned into the output's by one affine transform of the samples). Both write the planes as
:class:`ReadbackLayout` lays them out. :func:`colour_step_bytes` packs the planes pass's colour step (the
colour-management chain, ``colour_manage.wgsl``, and the output's matrix) for outputs whose transfer or
primaries differ from the input's.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from alpha2.gpu.colour import (
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourRange,
    ColourTransform,
    rgb_to_yuv,
)
from alpha2.gpu.errors import UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation
from alpha2.native_gpu.encode.extent import round_up
from alpha2.native_gpu.render.colour_params import UNIFORM_SIZE_BYTES, ColourParams
from alpha2.native_gpu.render.renderer import LayoutKind, shader_params

__all__ = [
    "COLOUR_STEP_SIZE_BYTES",
    "DOWNSCALE_FOOTPRINT",
    "MAX_TAPS",
    "PLANES_PARAMS_SIZE_BYTES",
    "RGB_PARAMS_SIZE_BYTES",
    "ROW_ALIGNMENT_BYTES",
    "ReadbackLayout",
    "ScaleYuvParams",
    "colour_step_bytes",
    "filter_taps",
    "rgb_to_yuv_params",
    "scale_yuv_params",
]

ROW_ALIGNMENT_BYTES = 256
"""Rows of the read-back planes are padded to this (WebGPU's copy alignment)."""

RGB_PARAMS_SIZE_BYTES = 80  # 3 x vec4<f32> + 2 x vec4<u32>
"""Size of the RGBA pass's uniform block."""

PLANES_PARAMS_SIZE_BYTES = 160  # 8 x vec4<f32> + 2 x vec4<u32>
"""Size of the planes pass's uniform block."""

MAX_TAPS = 8
"""Most bilinear taps per axis an output sample averages (64 in all): beyond an 8x downscale the taps
are more than a texel apart, a little aliasing against a cost that stays bounded."""

DOWNSCALE_FOOTPRINT = 1.15
"""How wide, in output pixels, the taps of a downscaled output sample are spread (its chroma: twice
that). A box of exactly one output pixel (1.0) is the exact area mean at integer factors, but its first
sidelobe lets fine grain alias, which the encoder pays for: on a zone plate with white grain, 1080p ->
360p, the file was 1.14 times that of ffmpeg's ``scale`` (bicubic) at the same crf. Spread over 1.15
pixels, with the same taps (each bilinear, so neighbouring pixels' texels now get a small weight), it
was 1.05 times, at 0.14 dB below bicubic; on a natural source 0.95 times the size, 0.39 dB above
(BENCHMARKS.md, "Downscaling filter"). A pipeline constant of the planes pass."""

COLOUR_STEP_SIZE_BYTES = UNIFORM_SIZE_BYTES + 48  # ColourManage + 3 x vec4<f32>
"""Size of the planes pass's colour-step uniform (``ColourStep``)."""

_NEGLIGIBLE_CODES = 1e-3
"""A matrix term that moves the output by less than this many codes over the whole sample range is
dropped (and the texture read it needs skipped): same-matrix conversions leave ~1e-16 there."""


@dataclass(frozen=True)
class ReadbackLayout:
    """Where the two output planes (Y, interleaved CbCr) sit in the plane buffer and each read-back slot."""

    width: int
    """Output width in pixels."""
    height: int
    """Output height in pixels."""
    bytes_per_row: int
    """Row pitch of both planes (256-byte aligned)."""
    width_bytes: int
    """Meaningful bytes per row of either plane (Y: width samples; CbCr: width / 2 pairs)."""
    uv_offset_bytes: int
    """Offset of the CbCr plane."""
    frame_size_bytes: int
    """Bytes per frame (padded rows included)."""

    @classmethod
    def of(cls, width: int, height: int, pixel_format: PixelFormat) -> ReadbackLayout:
        """The layout of a ``width`` x ``height`` NV12 / P010 frame."""
        width_bytes = width * (pixel_format.storage_bits // 8)
        bytes_per_row = round_up(width_bytes, ROW_ALIGNMENT_BYTES)
        return cls(
            width=width,
            height=height,
            bytes_per_row=bytes_per_row,
            width_bytes=width_bytes,
            uv_offset_bytes=bytes_per_row * height,
            frame_size_bytes=bytes_per_row * (height + height // 2),
        )


def rgb_to_yuv_params(
    layout: ReadbackLayout,
    pixel_format: PixelFormat,
    matrix: ColourMatrix,
    colour_range: ColourRange,
    chroma_location: ChromaLocation,
) -> bytes:
    """The WGSL ``Params`` struct of ``rgb_to_yuv.wgsl`` (80 bytes, little-endian) for one output.

    Raises:
        InvalidInputError, UnsupportedError: a matrix or range :func:`~alpha2.gpu.colour.rgb_to_yuv`
            cannot express.
    """
    transform = rgb_to_yuv(matrix, colour_range, pixel_format.bit_depth)
    params = np.zeros(20, dtype=np.float32)
    rows = np.asarray(transform.matrix, dtype=np.float64)
    offset = np.asarray(transform.offset, dtype=np.float64)
    for i in range(3):
        params[i * 4 : i * 4 + 3] = rows[i]
        params[i * 4 + 3] = offset[i]
    uints = params.view(np.uint32)
    uints[12:16] = (layout.width, layout.height, layout.bytes_per_row // 4, layout.uv_offset_bytes // 4)
    uints[16:20] = (
        (1 << pixel_format.bit_depth) - 1,
        pixel_format.msb_shift,
        1 if chroma_location is ChromaLocation.LEFT else 0,
        0,
    )
    data = params.tobytes()
    assert len(data) == RGB_PARAMS_SIZE_BYTES
    return data


@dataclass(frozen=True)
class ScaleYuvParams:
    """The uniform block of ``encode_scale_yuv.wgsl`` for one (input, output) combination.

    Index space as in :class:`~alpha2.native_gpu.render.renderer.ShaderParams`: luma sample (i, j) sits
    at (i, j); output pixel o reads source luma position ``src_rect.xy + q * scale - 0.5``, with q the
    pixel centre ``o + 0.5`` turned back by ``rotation`` into the unrotated output's axes.
    """

    layout: LayoutKind
    """BIPLANAR or TRIPLANAR: which bindings carry the chroma."""
    transform: ColourTransform
    """Output codes = matrix @ [Y, Cb, Cr] samples (normalised, as the textures return them) + offset."""
    luma_reads_chroma: bool
    """Whether the output luma depends on the input chroma (a matrix change): one more read per pixel.
    A pipeline constant, not part of the uniform block."""
    chroma_reads_luma: bool
    """Whether the output chroma depends on the input luma (pipeline constant; false for every matrix
    alpha2 writes, since white has no chroma in any of them)."""
    src_rect: tuple[int, int, int, int]
    """Source crop in luma pixels: x, y, width, height."""
    output_size: tuple[int, int]
    """Output width, height."""
    chroma_subsampling: tuple[int, int]
    """Input luma samples per chroma sample (sx, sy)."""
    chroma_offset: tuple[float, float]
    """Input chroma sample (0, 0) in luma pixels (the input's siting)."""
    output_chroma_site: tuple[float, float]
    """Output chroma sample of a 2 x 2 block relative to its top-left pixel (LEFT: (0, 0.5))."""
    luma_clamp: tuple[int, int, int, int]
    """Inclusive luma texel range read: min x, min y, max x, max y."""
    chroma_clamp: tuple[int, int, int, int]
    """Inclusive chroma texel range read."""
    row_words: int
    """Output row pitch in u32 words."""
    uv_word_offset: int
    """Start of the output CbCr plane in u32 words."""
    max_code: int
    """Largest output code (255 or 1023)."""
    msb_shift: int
    """Output codes are shifted up by this (6 for P010)."""
    rotation: Rotation = Rotation.NONE
    """Clockwise rotation applied to the picture (``output_size`` is the rotated size); a pipeline
    constant."""
    luma_taps: tuple[int, int] = (1, 1)
    """Bilinear taps per output pixel along the output's x and y (:func:`filter_taps`); pipeline
    constants."""
    chroma_taps: tuple[int, int] = (1, 1)
    """Bilinear taps per output chroma sample (its 2 x 2 block) along x and y; pipeline constants."""
    colour_managed: bool = False
    """The colour step runs (pipeline constant): ``transform`` is then samples -> R'G'B' only, and the
    colour step's uniform (:func:`colour_step_bytes`) carries the chain and the output matrix."""
    mirrored: bool = False
    """The picture is flipped left to right before ``rotation`` (a display matrix's mirror): the pass
    walks the source rectangle from its right edge (origin at the right, a negative step)."""

    @property
    def unrotated_size(self) -> tuple[int, int]:
        """The output size in the source's axes (width and height swapped by a quarter turn)."""
        ow, oh = self.output_size
        return (oh, ow) if self.rotation in (Rotation.CW90, Rotation.CW270) else (ow, oh)

    def constants(self) -> dict[str, float]:
        """The geometry's pipeline constants (rotation in quarter turns, tap counts, their footprint)."""
        return {
            "ROTATION": int(self.rotation) // 90,
            "FOOTPRINT": DOWNSCALE_FOOTPRINT,
            "LUMA_TAPS_X": self.luma_taps[0],
            "LUMA_TAPS_Y": self.luma_taps[1],
            "CHROMA_TAPS_X": self.chroma_taps[0],
            "CHROMA_TAPS_Y": self.chroma_taps[1],
        }

    def to_bytes(self) -> bytes:
        """The WGSL ``Params`` struct (160 bytes, little-endian)."""
        m = self.transform.matrix
        o = self.transform.offset
        x, y, w, h = self.src_rect
        ow, oh = self.output_size
        uw, uh = self.unrotated_size
        sx, sy = self.chroma_subsampling
        walk_x, walk_w = (x + w, -w) if self.mirrored else (x, w)
        floats = (
            *m[0], o[0], *m[1], o[1], *m[2], o[2],
            float(walk_x), float(y), walk_w / uw, h / uh,
            1.0 / sx, 1.0 / sy, *self.chroma_offset,
            *self.output_chroma_site, 0.0, 0.0,
            *(float(v) for v in self.luma_clamp),
            *(float(v) for v in self.chroma_clamp),
        )  # fmt: skip
        uints = (
            ow, oh, self.row_words, self.uv_word_offset,
            self.max_code, self.msb_shift, 0, 0,
        )  # fmt: skip
        data = struct.pack("<32f", *floats) + struct.pack("<8I", *uints)
        assert len(data) == PLANES_PARAMS_SIZE_BYTES
        return data


def filter_taps(source_per_output: float) -> int:
    """Bilinear taps along one axis for an output sample that covers ``source_per_output`` source texels.

    Enough that neighbouring taps are at most one texel apart over one output pixel (each bilinear tap
    then blends the texels between them: together an area filter; the pass spreads them a little wider,
    :data:`DOWNSCALE_FOOTPRINT`), 1 when not downscaling, at most :data:`MAX_TAPS`.
    """
    if source_per_output <= 1.0:
        return 1
    return min(MAX_TAPS, math.ceil(source_per_output - 1e-9))


def scale_yuv_params(
    pixel_format: PixelFormat,
    colour: ColourInfo,
    width: int,
    height: int,
    *,
    output_size: tuple[int, int],
    output_format: PixelFormat,
    matrix: ColourMatrix,
    colour_range: ColourRange,
    chroma_location: ChromaLocation,
    crop: tuple[int, int, int, int] | None = None,
    rotation: Rotation = Rotation.NONE,
    colour_plan: ColourParams | None = None,
    mirrored: bool = False,
) -> ScaleYuvParams:
    """The uniform block that scales ``pixel_format`` planes to ``output_format`` at ``output_size``.

    Geometry, siting and input colour come from :func:`~alpha2.native_gpu.render.renderer.shader_params` (the
    renderer's rules, unspecified tags resolved as FFmpeg does); the colour transform is the renderer's
    sample -> R'G'B' followed by :func:`~alpha2.gpu.colour.rgb_to_yuv` of the output, with no clipping of
    R'G'B' in between (swscale's Y'CbCr -> Y'CbCr does not clip either).

    Args:
        pixel_format: the input planes' layout: bi-planar (nv12, p010 ...) or tri-planar (yuv420p ...).
        colour: the input's colour tags.
        width, height: the input's display size in luma pixels.
        output_size: output width, height (even).
        output_format: NV12 or P010.
        matrix, colour_range, chroma_location: the output's (resolved: LEFT or CENTER siting).
        crop: source rectangle inside ``width`` x ``height``; default the whole frame.
        rotation: clockwise rotation applied to the picture; ``output_size`` is the rotated size.
        mirrored: the picture is flipped left to right before the rotation (a display matrix's mirror).
        colour_plan: the chain from the input's colour to the output's, when it is not an identity
            (HDR -> SDR): the transform stops at R'G'B' and every output sample reads all three planes.

    Raises:
        UnsupportedError: a gray, RGB or packed input (render it to RGBA and use ``submit`` instead).
        InvalidInputError: bad sizes or crop.
    """
    out_w, out_h = output_size
    quarter = rotation in (Rotation.CW90, Rotation.CW270)
    unrotated = (out_h, out_w) if quarter else (out_w, out_h)
    params = shader_params(pixel_format, colour, width, height, crop=crop, output_size=unrotated)
    if params.layout not in (LayoutKind.BIPLANAR, LayoutKind.TRIPLANAR):
        raise UnsupportedError(
            f"EncodeCopier.submit_planes reads bi-planar (nv12, p010 ...) and tri-planar (yuv420p, "
            f"yuv444p10 ...) Y'CbCr planes, not {pixel_format.ffmpeg_name}; render it to an RGBA texture "
            "(FrameRenderer) and use submit(texture)"
        )
    to_rgb = ColourTransform(
        np.array(params.matrix, dtype=np.float64) * np.array(params.value_scale[:3], dtype=np.float64),
        np.array(params.offset, dtype=np.float64),
    )
    managed = colour_plan is not None and not colour_plan.identity
    composed = to_rgb if managed else to_rgb.then(rgb_to_yuv(matrix, colour_range, output_format.bit_depth))
    m = np.array(composed.matrix)
    luma_reads_chroma = managed or bool(np.abs(m[0, 1:]).max() >= _NEGLIGIBLE_CODES)
    chroma_reads_luma = managed or bool(np.abs(m[1:, 0]).max() >= _NEGLIGIBLE_CODES)
    if not luma_reads_chroma:
        m[0, 1:] = 0.0
    if not chroma_reads_luma:
        m[1:, 0] = 0.0
    site = (0.5 if chroma_location is ChromaLocation.CENTER else 0.0, 0.5)
    # Source texels one output pixel covers along the source's x and y, then along the output's axes.
    _, _, src_w, src_h = params.src_rect
    per_x, per_y = src_w / unrotated[0], src_h / unrotated[1]
    csx, csy = params.chroma_subsampling
    luma = (filter_taps(per_x), filter_taps(per_y))
    chroma = (filter_taps(2 * per_x / csx), filter_taps(2 * per_y / csy))  # a 2 x 2 output block
    if quarter:
        luma, chroma = (luma[1], luma[0]), (chroma[1], chroma[0])
    readback = ReadbackLayout.of(out_w, out_h, output_format)
    return ScaleYuvParams(
        layout=params.layout,
        transform=ColourTransform(m, composed.offset),
        luma_reads_chroma=luma_reads_chroma,
        chroma_reads_luma=chroma_reads_luma,
        src_rect=params.src_rect,
        output_size=(out_w, out_h),
        chroma_subsampling=params.chroma_subsampling,
        chroma_offset=params.chroma_offset,
        output_chroma_site=site,
        luma_clamp=params.luma_clamp,
        chroma_clamp=params.chroma_clamp,
        row_words=readback.bytes_per_row // 4,
        uv_word_offset=readback.uv_offset_bytes // 4,
        max_code=(1 << output_format.bit_depth) - 1,
        msb_shift=output_format.msb_shift,
        rotation=rotation,
        luma_taps=luma,
        chroma_taps=chroma,
        colour_managed=managed,
        mirrored=mirrored,
    )


def colour_step_bytes(
    plan: ColourParams | None, matrix: ColourMatrix, colour_range: ColourRange, bit_depth: int
) -> bytes:
    """The ``ColourStep`` uniform of ``encode_scale_yuv.wgsl``: the chain's ``ColourManage`` block, then
    the output's R'G'B' -> codes rows (:data:`COLOUR_STEP_SIZE_BYTES`); zeros when ``plan`` is None (the
    step does not run, but the binding exists in every pipeline)."""
    if plan is None:
        return bytes(COLOUR_STEP_SIZE_BYTES)
    transform = rgb_to_yuv(matrix, colour_range, bit_depth)
    rows = np.zeros(12, dtype=np.float32)
    for i in range(3):
        rows[i * 4 : i * 4 + 3] = np.asarray(transform.matrix, dtype=np.float64)[i]
        rows[i * 4 + 3] = float(np.asarray(transform.offset, dtype=np.float64)[i])
    data = plan.uniform + rows.tobytes()
    assert len(data) == COLOUR_STEP_SIZE_BYTES
    return data
