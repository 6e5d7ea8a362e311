"""The sampling shader's uniform block: which layout a pixel format takes and the numbers it renders with.

:func:`shader_params` is a pure function of a frame's vocabulary (pixel format, colour, sizes), so the
numbers the GPU sees can be checked without a GPU; :class:`~alpha2.native_gpu.render.renderer.FrameRenderer`
binds them.
"""

from __future__ import annotations

import enum
import functools
import struct
from dataclasses import dataclass

import numpy as np

from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, yuv_to_rgb
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import AlphaChannel, PixelFormat, PlaneFormat

__all__ = ["LayoutKind", "ShaderParams", "layout_kind", "shader_params"]

_UNIFORM_SIZE_BYTES = 144
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
    mirrored: bool = False
    """The picture is flipped left to right (a display matrix's mirror): the shader walks the source
    rectangle from its right edge (``to_bytes`` writes its origin at the right and a negative width)."""

    @property
    def one_to_one(self) -> bool:
        """Whether each output pixel is exactly one source luma pixel (no scaling)."""
        return (self.src_rect[2], self.src_rect[3]) == self.output_size

    def colour_constants(self) -> dict[str, float]:
        """The matrix (columns scaled by ``value_scale``) and offset as the shader's pipeline constants."""
        vs = self.value_scale
        out: dict[str, float] = {}
        for r, row in enumerate(self.matrix):
            for c in range(3):
                out[f"M{r}{c}"] = float(row[c] * vs[c])
            out[f"O{r}"] = float(self.offset[r])
        return out

    def to_bytes(self) -> bytes:
        """The uniform block as the WGSL ``Params`` struct lays it out (144 bytes, little-endian).

        The rows written are the matrix with each column scaled by its plane's ``value_scale``, so that
        the shader applies it to normalized samples directly (one multiply a channel less per pixel).
        """
        vs = self.value_scale
        m = tuple(tuple(row[i] * vs[i] for i in range(3)) for row in self.matrix)
        o = self.offset
        sx, sy = self.chroma_subsampling
        x, y, w, h = self.src_rect
        ow, oh = self.output_size
        walk_x, walk_w = (x + w, -w) if self.mirrored else (x, w)
        floats = (
            *m[0], o[0], *m[1], o[1], *m[2], o[2],
            *self.value_scale,
            1.0 / sx, 1.0 / sy, *self.chroma_offset,
            float(walk_x), float(y), float(walk_w), float(h),
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
    return float((2**pixel_format.storage_bits - 1) / 2**pixel_format.msb_shift)


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
    # Chroma is clamped to the whole picture, not the crop: a crop is a rectangle of the RGB picture,
    # whose edge pixels take their chroma from both neighbouring samples as the full render does
    # (clamped to the crop, an edge row of a 4:2:0 crop was up to 79 codes off the full render's).
    chroma_clamp = (0, 0, -(-width // sx) - 1, -(-height // sy) - 1)

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
