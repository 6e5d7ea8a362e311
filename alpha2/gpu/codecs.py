"""Video codec vocabulary: the names alpha2 accepts for codecs and encoders, and their coded-size limits.

Pure data, shared by the encode hand-off in ``alpha2.native_gpu.encode`` (which checks sizes before any
GPU work) and by the encoder table in ``alpha2.ffmpeg_bridge.encoders`` (which picks an encoder), so
neither keeps its own copy. Names are FFmpeg's: codec families (``h264``, ``hevc``, ``av1`` ...) and
encoder names (``libx264``, ``hevc_nvenc`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat

__all__ = [
    "CODEC_LIMITS",
    "ENCODER_LIMITS",
    "EVEN_WIDTH_ENCODERS",
    "NAME_ALIASES",
    "ODD_SIDE_ENCODERS",
    "CodedSizeLimits",
    "canonical_name",
    "chroma_alignment",
    "flush_hang_refusal",
    "odd_width_refusal",
    "size_refusal",
]

NAME_ALIASES: dict[str, str] = {
    "avc": "h264",
    "h265": "hevc",
    "mpeg1video": "mpeg1",
    "mpeg2video": "mpeg2",
    "x264": "libx264",
    "x265": "libx265",
    "libsvt_av1": "libsvtav1",
}
"""Other spellings -> the name alpha2 uses: a codec family (``avc`` -> ``h264``) or an encoder
(``x264`` -> ``libx264``, ``libsvt_av1`` -> ``libsvtav1``)."""


def canonical_name(name: str) -> str:
    """``name`` lower-cased, with an alias replaced by the name it stands for."""
    key = name.lower()
    return NAME_ALIASES.get(key, key)


@dataclass(frozen=True)
class CodedSizeLimits:
    """Smallest and largest coded size one encoder (or a codec's bitstream) takes, before alignment."""

    codec: str
    """Codec family the limits belong to (``h264``, ``hevc``, ``av1``, ``vp9``, ``vp8``)."""
    min_width: int
    """Smallest coded width in pixels."""
    min_height: int
    """Smallest coded height in pixels."""
    max_width: int
    """Largest coded width in pixels."""
    max_height: int
    """Largest coded height in pixels."""

    def __post_init__(self) -> None:
        if min(self.min_width, self.min_height) < 1:
            raise InvalidInputError(f"CodedSizeLimits minimums must be positive, got {self!r}")
        if self.min_width > self.max_width or self.min_height > self.max_height:
            raise InvalidInputError(f"CodedSizeLimits minimum exceeds maximum: {self!r}")


# Sources: x264 encoder.c validate_parameters (1..16384 each side); x265: 16 each side at least, measured
# with PyAV 18.1's (16x16 and 200x16 encode and decode back, a side of 14 or 8 is refused: 'Image size is
# too small', as the ffmpeg command says; 64, one default CTU, was taken before and refused 64x48, which
# ffmpeg writes); no hard maximum: 16384 is alpha2's cap, above HEVC level 6.2's 8192x4320;
# SVT-AV1 enc_settings.c (4x4 .. 16384x8704; releases before 1.x needed 64x64); NVIDIA's NVENC support
# matrix (H.264 145x49 .. 4096x4096, HEVC 129x33 .. 8192x8192, AV1 8192x8192).
ENCODER_LIMITS: dict[str, CodedSizeLimits] = {
    "libx264": CodedSizeLimits("h264", 2, 2, 16384, 16384),
    "libx264rgb": CodedSizeLimits("h264", 2, 2, 16384, 16384),
    "libopenh264": CodedSizeLimits("h264", 16, 16, 4096, 2304),
    "libx265": CodedSizeLimits("hevc", 16, 16, 16384, 16384),
    "libsvtav1": CodedSizeLimits("av1", 4, 4, 16384, 8704),
    "libaom-av1": CodedSizeLimits("av1", 2, 2, 65536, 65536),
    "librav1e": CodedSizeLimits("av1", 2, 2, 65536, 65536),
    "libvpx-vp9": CodedSizeLimits("vp9", 2, 2, 16384, 16384),
    "libvpx": CodedSizeLimits("vp8", 2, 2, 16383, 16383),
    "h264_nvenc": CodedSizeLimits("h264", 146, 50, 4096, 4096),
    "hevc_nvenc": CodedSizeLimits("hevc", 130, 34, 8192, 8192),
    "av1_nvenc": CodedSizeLimits("av1", 130, 34, 8192, 8192),
}
"""Known coded-size limits per FFmpeg encoder (the alignment comes from the pixel format)."""

SVTAV1_HANG_SHORT_SIDE = 24
"""SVT-AV1 (4.1.0, in PyAV 18.1's FFmpeg) takes a picture with a side of this or less and the other side
over :data:`SVTAV1_HANG_LONG_SIDE` (more than one 64-pixel superblock), encodes its frames, and then never
returns from the flush that finishes the file (``avcodec_send_frame(NULL)`` / ``stream.encode(None)``):
4096x8, 128x16, 1024x24 and 24x4096 hang, 4096x25, 25x4096, 64x8 and 8x64 finish. Measured with plain PyAV
(3 frames, then the flush, in a subprocess killed after 2.5 s where a thin picture finishes in 0.2 s) at
1,000+ sizes, every one on this rule: each side 8..80 against 8..4096 both ways, odd and even."""
SVTAV1_HANG_LONG_SIDE = 64
"""See :data:`SVTAV1_HANG_SHORT_SIDE`: a longer side than this (and a short one of 24 or less) hangs."""


def flush_hang_refusal(encoder: str, width: int, height: int) -> str | None:
    """Why ``encoder`` must not be given a ``width`` x ``height`` picture although its limits take it,
    or None: SVT-AV1 hangs for ever at the flush for thin pictures (:data:`SVTAV1_HANG_SHORT_SIDE`); the
    reason names the sizes near it that finish."""
    if canonical_name(encoder) != "libsvtav1":
        return None
    short, long = min(width, height), max(width, height)
    if short > SVTAV1_HANG_SHORT_SIDE or long <= SVTAV1_HANG_LONG_SIDE:
        return None
    fix = SVTAV1_HANG_SHORT_SIDE + 2  # even, for 4:2:0 routes that need even sides
    padded = f"{width}x{fix}" if height == short else f"{fix}x{height}"
    return (
        f"{width}x{height} cannot be encoded with libsvtav1: SVT-AV1 never finishes the flush (the file "
        f"hangs at close) when one side is {SVTAV1_HANG_SHORT_SIDE} or less and the other over "
        f"{SVTAV1_HANG_LONG_SIDE}; pad the short side to {fix} or more (e.g. {padded}), cut the long side to "
        f"{SVTAV1_HANG_LONG_SIDE}, or use another AV1 encoder (libaom-av1)"
    )


EVEN_WIDTH_ENCODERS = frozenset({"prores", "prores_aw"})
"""Encoders that refuse an odd width whatever the chroma (4:4:4 too): FFmpeg's ProRes encoder
(``prores``, also named ``prores_aw``) fails to open ('Invalid argument') at 65x49 and 65x50 in
yuv422p10 and yuv444p10, and opens at 66x49; ``prores_ks`` takes all three (PyAV 18.1's FFmpeg)."""


def odd_width_refusal(encoder: str, width: int, height: int) -> str | None:
    """Why ``encoder`` cannot take a picture ``width`` wide (:data:`EVEN_WIDTH_ENCODERS`), or None."""
    if width % 2 == 0 or canonical_name(encoder) not in EVEN_WIDTH_ENCODERS:
        return None
    return (
        f"{width}x{height} cannot be encoded with {encoder}: FFmpeg's ProRes encoder takes even widths "
        f"only; crop or pad to {width - 1 if width > 1 else 2}x{height} or {width + 1}x{height}, or use "
        "codec='prores_ks', which takes odd widths"
    )


def size_refusal(encoder: str, width: int, height: int) -> str | None:
    """Why ``encoder`` cannot take a ``width`` x ``height`` picture its limits take (SVT-AV1's flush
    hangs on thin pictures, :func:`flush_hang_refusal`; ProRes opens at even widths only,
    :func:`odd_width_refusal`), or None."""
    return flush_hang_refusal(encoder, width, height) or odd_width_refusal(encoder, width, height)


CODEC_LIMITS: dict[str, CodedSizeLimits] = {
    "h264": CodedSizeLimits("h264", 2, 2, 16384, 16384),
    "hevc": CodedSizeLimits("hevc", 16, 16, 16888, 16888),
    "av1": CodedSizeLimits("av1", 2, 2, 65536, 65536),
    "vp9": CodedSizeLimits("vp9", 2, 2, 65536, 65536),
}
"""A codec's own limits at its highest common level, for a bare codec name (no particular encoder)."""


ODD_SIDE_ENCODERS = frozenset({"libvpx", "libvpx-vp9", "libsvtav1", "ffv1", "mpeg4", "gif"})
"""Encoders that take 4:2:0 pictures of odd sides (the chroma rounded up), as ``ffmpeg`` hands them such
a picture: checked with FFmpeg 7.1's at 641x361 and 5x5 (SVT-AV1 takes no side under 4, FFV1 no 3x3);
GIF's pictures are RGB made into palettes, of any size.
x264, x265 and NVENC refuse them: their outputs are cut to even sides."""


def chroma_alignment(pixel_format: PixelFormat) -> tuple[int, int]:
    """Coded width and height must be multiples of these for ``pixel_format`` (2, 2 for 4:2:0)."""
    return 1 << pixel_format.log2_chroma_w, 1 << pixel_format.log2_chroma_h
