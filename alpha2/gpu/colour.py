"""Colour: matrix coefficients, primaries, transfer, range and chroma siting, and exact Y'CbCr matrices.

The enums carry FFmpeg's ``AVCOL_*`` / ``AVCHROMA_LOC_*`` numbers (which are ITU-T H.273's code points
for the first three), so a PyAV frame's ``colorspace`` / ``color_range`` ints convert directly.

Quantisation follows ITU-T H.273 (and BT.601 / BT.709 / BT.2020) at ``n`` bits:

- limited range: Y' = (219 E'y + 16) 2^(n-8), Cb/Cr = (224 E'c + 128) 2^(n-8)
- full range:    Y' = (2^n - 1) E'y,         Cb/Cr = (2^n - 1) E'c + 2^(n-1)

:func:`yuv_to_rgb` and :func:`rgb_to_yuv` build those as a 3x3 matrix plus an offset in float64, with no
rounding of the coefficients; they agree with swscale (``VideoFrame.reformat``) within one code value
at 8 bits.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from alpha2.gpu.errors import InvalidInputError, UnknownFormatError, UnsupportedError
from alpha2.gpu.formats import PixelFormat

__all__ = [
    "SUPPORTED_MATRICES",
    "ChromaLocation",
    "ColourInfo",
    "ColourMatrix",
    "ColourPrimaries",
    "ColourRange",
    "ColourTransform",
    "TransferCharacteristic",
    "guess_matrix",
    "rgb_to_yuv",
    "sample_to_rgb",
    "yuv_to_rgb",
]

_E = TypeVar("_E", bound=enum.IntEnum)


class ColourMatrix(enum.IntEnum):
    """Matrix coefficients between R'G'B' and Y'CbCr (FFmpeg ``AVColorSpace``, H.273 MatrixCoefficients)."""

    RGB = 0
    """Identity: the components are G, B, R (gbrp and friends)."""
    BT709 = 1
    UNSPECIFIED = 2
    RESERVED = 3
    FCC = 4
    BT470BG = 5
    """BT.601 625-line (same matrix as SMPTE170M)."""
    SMPTE170M = 6
    """BT.601 525-line (same matrix as BT470BG)."""
    SMPTE240M = 7
    YCGCO = 8
    BT2020_NCL = 9
    BT2020_CL = 10
    SMPTE2085 = 11
    CHROMA_DERIVED_NCL = 12
    CHROMA_DERIVED_CL = 13
    ICTCP = 14
    IPT_C2 = 15
    YCGCO_RE = 16
    YCGCO_RO = 17


class ColourPrimaries(enum.IntEnum):
    """Chromaticities of the primaries and white point (FFmpeg ``AVColorPrimaries``)."""

    RESERVED0 = 0
    BT709 = 1
    UNSPECIFIED = 2
    RESERVED = 3
    BT470M = 4
    BT470BG = 5
    SMPTE170M = 6
    SMPTE240M = 7
    FILM = 8
    BT2020 = 9
    SMPTE428 = 10
    SMPTE431 = 11
    SMPTE432 = 12
    EBU3213 = 22


class TransferCharacteristic(enum.IntEnum):
    """Opto-electronic transfer function (FFmpeg ``AVColorTransferCharacteristic``)."""

    RESERVED0 = 0
    BT709 = 1
    UNSPECIFIED = 2
    RESERVED = 3
    GAMMA22 = 4
    GAMMA28 = 5
    SMPTE170M = 6
    SMPTE240M = 7
    LINEAR = 8
    LOG = 9
    LOG_SQRT = 10
    IEC61966_2_4 = 11
    BT1361_ECG = 12
    IEC61966_2_1 = 13
    """sRGB."""
    BT2020_10 = 14
    BT2020_12 = 15
    SMPTE2084 = 16
    """PQ (HDR10)."""
    SMPTE428 = 17
    ARIB_STD_B67 = 18
    """HLG."""


class ColourRange(enum.IntEnum):
    """Quantisation range (FFmpeg ``AVColorRange``)."""

    UNSPECIFIED = 0
    LIMITED = 1
    """"MPEG" / "TV": Y' 16..235, Cb/Cr 16..240 at 8 bits."""
    FULL = 2
    """"JPEG" / "PC": 0..2^n-1, chroma centred at 2^(n-1)."""


class ChromaLocation(enum.IntEnum):
    """Where subsampled chroma sits relative to luma (FFmpeg ``AVChromaLocation``)."""

    UNSPECIFIED = 0
    LEFT = 1
    """Co-sited horizontally with the left luma sample, centred vertically (MPEG-2/H.264 4:2:0)."""
    CENTER = 2
    """Centred both ways (MPEG-1, JPEG)."""
    TOPLEFT = 3
    """Co-sited with the top-left luma sample (BT.2020 4:2:0, 4:2:2)."""
    TOP = 4
    BOTTOMLEFT = 5
    BOTTOM = 6


def _enum_value(cls: type[_E], value: int, what: str) -> _E:
    try:
        return cls(value)
    except ValueError:
        known = ", ".join(f"{m.name}={m.value}" for m in cls)
        raise UnknownFormatError(f"unknown {what} {value!r}; known: {known}") from None


@dataclass(frozen=True)
class ColourInfo:
    """How a frame's component values map to colours."""

    matrix: ColourMatrix = ColourMatrix.UNSPECIFIED
    """Matrix coefficients between R'G'B' and Y'CbCr."""
    primaries: ColourPrimaries = ColourPrimaries.UNSPECIFIED
    """Colour primaries and white point."""
    transfer: TransferCharacteristic = TransferCharacteristic.UNSPECIFIED
    """Transfer characteristic (gamma curve)."""
    range: ColourRange = ColourRange.UNSPECIFIED
    """Quantisation range."""
    chroma_location: ChromaLocation = ChromaLocation.UNSPECIFIED
    """Siting of subsampled chroma."""
    guessed: frozenset[str] = field(default=frozenset(), compare=False)
    """Fields that :meth:`resolved` filled in because the source left them unspecified (``matrix``,
    ``range``, ``primaries``, ``transfer``); not part of equality."""

    def __post_init__(self) -> None:
        for name, cls in (
            ("matrix", ColourMatrix),
            ("primaries", ColourPrimaries),
            ("transfer", TransferCharacteristic),
            ("range", ColourRange),
            ("chroma_location", ChromaLocation),
        ):
            value = getattr(self, name)
            if not isinstance(value, cls):
                if isinstance(value, int) and not isinstance(value, bool):
                    object.__setattr__(self, name, _enum_value(cls, value, f"ColourInfo.{name}"))
                else:
                    raise InvalidInputError(f"ColourInfo.{name} must be a {cls.__name__}, not {value!r}")

    @classmethod
    def from_ffmpeg(
        cls, colorspace: int, primaries: int, trc: int, color_range: int, chroma_location: int
    ) -> ColourInfo:
        """From an ``AVFrame``'s ints (PyAV: ``frame.colorspace``, ``.color_primaries``, ...), unresolved.

        Raises:
            UnknownFormatError: a value FFmpeg may define but alpha2 does not know; lists the known ones.
        """
        return cls(
            matrix=_enum_value(ColourMatrix, colorspace, "colorspace"),
            primaries=_enum_value(ColourPrimaries, primaries, "color primaries"),
            transfer=_enum_value(TransferCharacteristic, trc, "color transfer characteristic"),
            range=_enum_value(ColourRange, color_range, "color range"),
            chroma_location=_enum_value(ChromaLocation, chroma_location, "chroma location"),
        )

    @property
    def is_resolved(self) -> bool:
        """Whether matrix, primaries, transfer and range are all specified."""
        return (
            self.matrix is not ColourMatrix.UNSPECIFIED
            and self.primaries is not ColourPrimaries.UNSPECIFIED
            and self.transfer is not TransferCharacteristic.UNSPECIFIED
            and self.range is not ColourRange.UNSPECIFIED
        )

    def resolved(self, pixel_format: PixelFormat, width: int, height: int) -> ColourInfo:
        """Fill unspecified fields the way mpv (libplacebo's ``pl_color_space_infer``) guesses them.

        - matrix: RGB formats -> RGB; otherwise unspecified -> guessed from the size as mpv and
          libplacebo do: HD and above (``width >= 1280`` or ``height > 576``) BT.709, SD BT.601
          (``BT470BG``). (swscale, ``VideoFrame.reformat``, takes BT.601 at every size.)
        - range: RGB, gray and ``yuvj*`` -> FULL whatever the tag (swscale overrides those tags);
          other Y'CbCr unspecified -> LIMITED.
        - primaries and transfer: unspecified -> BT.709, swscale's SDR reference.
        - chroma siting: unspecified -> LEFT for horizontally subsampled formats (the H.264/HEVC/H.273
          default, which FFmpeg's decoders tag); UNSPECIFIED where there is no subsampling. Legacy
          swscale itself interpolates unspecified siting as CENTER.

        The fields filled here are named in the result's :attr:`guessed`.

        Raises:
            InvalidInputError: ``pixel_format`` is not a PixelFormat, or a size is not a non-negative int
                (0 x 0 where the size is unknown: an unspecified matrix is then guessed as SD's).
        """
        if not isinstance(pixel_format, PixelFormat):
            hint = (
                f" (PixelFormat.from_ffmpeg_name({pixel_format!r}))" if isinstance(pixel_format, str) else ""
            )
            raise InvalidInputError(f"resolved needs a PixelFormat{hint}, got {pixel_format!r}")
        for what, value in (("width", width), ("height", height)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"resolved needs a non-negative int {what}, got {value!r}")
        guessed = set(self.guessed)
        matrix = self.matrix
        if pixel_format.is_rgb:
            matrix = ColourMatrix.RGB
        elif matrix is ColourMatrix.UNSPECIFIED:
            matrix = guess_matrix(width, height)
            guessed.add("matrix")
        colour_range = self.range
        if pixel_format.is_rgb or pixel_format.is_gray or pixel_format is PixelFormat.YUVJ420P:
            colour_range = ColourRange.FULL
        elif colour_range is ColourRange.UNSPECIFIED:
            colour_range = ColourRange.LIMITED
            guessed.add("range")
        primaries = self.primaries
        if primaries is ColourPrimaries.UNSPECIFIED:
            primaries = ColourPrimaries.BT709
            guessed.add("primaries")
        transfer = self.transfer
        if transfer is TransferCharacteristic.UNSPECIFIED:
            transfer = TransferCharacteristic.BT709
            guessed.add("transfer")
        location = self.chroma_location
        if pixel_format.log2_chroma_w == 0 and pixel_format.log2_chroma_h == 0:
            location = ChromaLocation.UNSPECIFIED
        elif location is ChromaLocation.UNSPECIFIED:
            location = ChromaLocation.LEFT
        return ColourInfo(matrix, primaries, transfer, colour_range, location, frozenset(guessed))


def guess_matrix(width: int, height: int) -> ColourMatrix:
    """The matrix of untagged Y'CbCr of that size, as mpv and libplacebo guess it: BT.709 for HD and
    above (``width >= 1280`` or ``height > 576``), else BT.601 (``BT470BG``)."""
    return ColourMatrix.BT709 if width >= 1280 or height > 576 else ColourMatrix.BT470BG


@dataclass(frozen=True, eq=False)
class ColourTransform:
    """An affine colour transform: ``out = matrix @ in + offset`` on the last axis of 3 components."""

    matrix: NDArray[np.float64]
    """3x3 float64 matrix (read-only)."""
    offset: NDArray[np.float64]
    """3 float64 offsets added after the matrix (read-only)."""

    def __post_init__(self) -> None:
        matrix = np.array(self.matrix, dtype=np.float64)
        offset = np.array(self.offset, dtype=np.float64)
        if matrix.shape != (3, 3):
            raise InvalidInputError(f"ColourTransform.matrix must be 3x3, not {matrix.shape}")
        if offset.shape != (3,):
            raise InvalidInputError(f"ColourTransform.offset must have shape (3,), not {offset.shape}")
        if not (np.isfinite(matrix).all() and np.isfinite(offset).all()):
            raise InvalidInputError("ColourTransform values must be finite")
        matrix.flags.writeable = False
        offset.flags.writeable = False
        object.__setattr__(self, "matrix", matrix)
        object.__setattr__(self, "offset", offset)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ColourTransform):
            return NotImplemented
        return bool(np.array_equal(self.matrix, other.matrix) and np.array_equal(self.offset, other.offset))

    def __hash__(self) -> int:
        return hash((self.matrix.tobytes(), self.offset.tobytes()))

    def __repr__(self) -> str:
        return f"ColourTransform(matrix={self.matrix.tolist()!r}, offset={self.offset.tolist()!r})"

    def apply(self, values: NDArray[np.floating] | NDArray[np.integer]) -> NDArray[np.float64]:
        """Transform ``values`` (shape ``(..., 3)``) into float64, unrounded and unclipped.

        Raises:
            InvalidInputError: the last axis is not 3 long.
        """
        array = np.asarray(values, dtype=np.float64)
        if array.ndim == 0 or array.shape[-1] != 3:
            raise InvalidInputError(f"values must have shape (..., 3), not {array.shape}")
        result: NDArray[np.float64] = array @ self.matrix.T + self.offset
        return result

    def inverse(self) -> ColourTransform:
        """The transform that undoes this one."""
        inv: NDArray[np.float64] = np.linalg.inv(self.matrix).astype(np.float64)
        return ColourTransform(inv, -inv @ self.offset)

    def then(self, other: ColourTransform) -> ColourTransform:
        """This transform followed by ``other``."""
        return ColourTransform(other.matrix @ self.matrix, other.matrix @ self.offset + other.offset)

    def shader_constants(self) -> NDArray[np.float32]:
        """16 float32s for a WGSL / std140 uniform ``{ m: mat3x3<f32>, offset: vec3<f32> }``.

        Column-major, each column padded to 4 floats (WGSL's ``mat3x3<f32>`` layout, 48 bytes),
        then the offset padded to 4: 64 bytes, ``out = m * in + offset`` in the shader.
        """
        out = np.zeros(16, dtype=np.float32)
        for column in range(3):
            out[column * 4 : column * 4 + 3] = self.matrix[:, column]
        out[12:15] = self.offset
        return out


_KR_KB: dict[ColourMatrix, tuple[float, float]] = {
    ColourMatrix.BT709: (0.2126, 0.0722),
    ColourMatrix.FCC: (0.30, 0.11),
    ColourMatrix.BT470BG: (0.299, 0.114),
    ColourMatrix.SMPTE170M: (0.299, 0.114),
    ColourMatrix.SMPTE240M: (0.212, 0.087),
    ColourMatrix.BT2020_NCL: (0.2627, 0.0593),
}

SUPPORTED_MATRICES: tuple[ColourMatrix, ...] = (*_KR_KB, ColourMatrix.YCGCO, ColourMatrix.RGB)
"""Matrices :func:`yuv_to_rgb` and :func:`rgb_to_yuv` can express as a 3x3 matrix."""


def _rgb_to_ecc(matrix: ColourMatrix) -> NDArray[np.float64]:
    """[E'y, E'cb, E'cr] (E'y 0..1, E'c -0.5..0.5) from [R', G', B'] (0..1)."""
    if matrix is ColourMatrix.YCGCO:
        return np.array([[0.25, 0.5, 0.25], [-0.25, 0.5, -0.25], [0.5, 0.0, -0.5]])
    if matrix is ColourMatrix.RGB:
        return np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    if matrix not in _KR_KB:
        supported = ", ".join(m.name for m in SUPPORTED_MATRICES)
        if matrix in (ColourMatrix.UNSPECIFIED, ColourMatrix.RESERVED):
            raise InvalidInputError(
                f"matrix {matrix.name} has no coefficients: resolve it first (ColourInfo.resolved); "
                f"supported: {supported}"
            )
        raise UnsupportedError(
            f"matrix {matrix.name} is not a plain 3x3 matrix (constant-luminance, ICtCp and lossless "
            f"YCgCo-R need their transfer function or integer lifting); supported: {supported}"
        )
    kr, kb = _KR_KB[matrix]
    kg = 1.0 - kr - kb
    return np.array(
        [
            [kr, kg, kb],
            [-kr / (2 * (1 - kb)), -kg / (2 * (1 - kb)), 0.5],
            [0.5, -kg / (2 * (1 - kr)), -kb / (2 * (1 - kr))],
        ]
    )


def _quantisation(
    matrix: ColourMatrix, colour_range: ColourRange, bit_depth: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-component (scale, offset): code = scale * E' + offset."""
    if isinstance(bit_depth, bool) or not isinstance(bit_depth, int) or not 8 <= bit_depth <= 16:
        raise InvalidInputError(f"bit_depth must be an int from 8 to 16, not {bit_depth!r}")
    if not isinstance(colour_range, ColourRange):
        colour_range = _enum_value(ColourRange, colour_range, "colour range")
    if colour_range is ColourRange.UNSPECIFIED:
        raise InvalidInputError(
            "range UNSPECIFIED: resolve it first (ColourInfo.resolved); use LIMITED or FULL"
        )
    if colour_range is ColourRange.FULL:
        full = float((1 << bit_depth) - 1)
        centre = float(1 << (bit_depth - 1))
        if matrix is ColourMatrix.RGB:
            return np.full(3, full), np.zeros(3)
        return np.full(3, full), np.array([0.0, centre, centre])
    unit = float(1 << (bit_depth - 8))
    if matrix is ColourMatrix.RGB:  # H.273: limited-range RGB scales every component like luma
        return np.full(3, 219.0 * unit), np.full(3, 16.0 * unit)
    return np.array([219.0, 224.0, 224.0]) * unit, np.array([16.0, 128.0, 128.0]) * unit


def _as_matrix(matrix: ColourMatrix | int) -> ColourMatrix:
    if isinstance(matrix, ColourMatrix):
        return matrix
    return _enum_value(ColourMatrix, matrix, "colour matrix")


def _ecc_to_rgb(matrix: ColourMatrix) -> NDArray[np.float64]:
    """[R', G', B'] from [E'y, E'cb, E'cr]: the closed-form inverse of :func:`_rgb_to_ecc`."""
    if matrix is ColourMatrix.YCGCO:
        return np.array([[1.0, -1.0, 1.0], [1.0, 1.0, 0.0], [1.0, -1.0, -1.0]])
    if matrix is ColourMatrix.RGB:
        return np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    _rgb_to_ecc(matrix)  # raises for the matrices without coefficients
    kr, kb = _KR_KB[matrix]
    kg = 1.0 - kr - kb
    return np.array(
        [
            [1.0, 0.0, 2 * (1 - kr)],
            [1.0, -2 * kb * (1 - kb) / kg, -2 * kr * (1 - kr) / kg],
            [1.0, 2 * (1 - kb), 0.0],
        ]
    )


def rgb_to_yuv(matrix: ColourMatrix, range: ColourRange, bit_depth: int) -> ColourTransform:
    """[Y', Cb, Cr] integer codes (float, unrounded) = M @ [R', G', B'] (0..1) + offset.

    For ``ColourMatrix.RGB`` the "Y'CbCr" codes are G, B, R (FFmpeg's gbrp order).

    Raises:
        InvalidInputError: unspecified matrix or range, or a bit depth outside 8..16.
        UnsupportedError: a matrix that is not linear in R'G'B' (BT.2020 CL, ICtCp, YCgCo-R...).
    """
    matrix = _as_matrix(matrix)
    to_ecc = _rgb_to_ecc(matrix)
    scale, offset = _quantisation(matrix, range, bit_depth)
    return ColourTransform(scale[:, None] * to_ecc, offset)


def yuv_to_rgb(matrix: ColourMatrix, range: ColourRange, bit_depth: int) -> ColourTransform:
    """[R', G', B'] (0..1, unclipped) = M @ [Y', Cb, Cr] (integer codes at ``bit_depth``) + offset.

    Raises:
        InvalidInputError: unspecified matrix or range, or a bit depth outside 8..16.
        UnsupportedError: a matrix that is not linear in R'G'B' (BT.2020 CL, ICtCp, YCgCo-R...).
    """
    matrix = _as_matrix(matrix)
    from_ecc = _ecc_to_rgb(matrix)
    scale, offset = _quantisation(matrix, range, bit_depth)
    to_rgb = from_ecc / scale[None, :]
    return ColourTransform(to_rgb, -(to_rgb @ offset))


def sample_to_rgb(colour: ColourInfo, pixel_format: PixelFormat) -> ColourTransform:
    """[R', G', B'] (0..1) from the normalised texture samples a shader reads from the plane textures.

    Folds the unorm normalisation and the bit position into :func:`yuv_to_rgb`: a sample ``s`` of a
    plane texture is ``stored / (2^storage_bits - 1)`` and the code is ``stored >> msb_shift``, so P010
    and yuv420p10 get different transforms from the same colour tags. ``colour`` must be resolved.

    Raises:
        InvalidInputError: ``pixel_format`` is not Y'CbCr, is a float format, or ``colour`` is unresolved.
        UnsupportedError: the matrix is not a plain 3x3 matrix.
    """
    if not pixel_format.is_yuv:
        raise InvalidInputError(
            f"{pixel_format.ffmpeg_name} is not Y'CbCr; sample_to_rgb needs a Y'CbCr pixel format"
        )
    to_rgb = yuv_to_rgb(colour.matrix, colour.range, pixel_format.bit_depth)
    code_per_sample = ((1 << pixel_format.storage_bits) - 1) / float(1 << pixel_format.msb_shift)
    return ColourTransform(to_rgb.matrix * code_per_sample, to_rgb.offset)
