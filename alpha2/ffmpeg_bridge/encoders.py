"""The encoder table: every FFmpeg encoder alpha2 knows, its codec, preference, options and limits.

One row per encoder (:data:`ENCODERS`); :data:`ENCODER_PREFERENCE` (the order ``choose_encoder`` tries
for a codec) is derived from it. Name aliases and coded-size limits come from the vocabulary
(:mod:`alpha2.gpu.codecs`), which the encode hand-off in ``alpha2.native_gpu.encode`` reads too, so both
sides accept the same names and enforce the same limits. This module does not import ``av``: what an
FFmpeg build has is asked in :mod:`alpha2.ffmpeg_bridge.encode`.
"""

from __future__ import annotations

import dataclasses
import fractions
import math
from dataclasses import dataclass

from alpha2.gpu.codecs import ENCODER_LIMITS, NAME_ALIASES, CodedSizeLimits, canonical_name
from alpha2.gpu.colour import ColourMatrix, TransferCharacteristic, guess_matrix
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat

__all__ = [
    "BT601_ONLY_ENCODERS",
    "ENCODERS",
    "ENCODER_PREFERENCE",
    "FIDELITY_ENCODERS",
    "NAME_ALIASES",
    "EncoderSpec",
    "canonical_name",
    "encoder_spec",
    "is_nvenc",
    "matrix_for_readers",
    "nearest_encoder_format",
    "preferred_encoders",
    "read_as_limited",
    "written_tags",
]


def is_nvenc(name: str) -> bool:
    """Whether ``name`` is one of NVIDIA's NVENC encoders (which encode on the GPU)."""
    return name.lower().endswith("_nvenc")


@dataclass(frozen=True)
class EncoderSpec:
    """One FFmpeg encoder: its codec, whether it is tried by codec, how it takes options, its limits."""

    name: str
    """FFmpeg encoder name (``libx264``, ``h264_nvenc`` ...)."""
    codec: str
    """Codec family (``h264``, ``hevc``, ``av1``, ``vp9``, ``vp8``, ``mpeg2``, ``mpeg4``, ``ffv1``)."""
    preferred: bool
    """Whether choosing by codec tries it (in table order); others are used only when named."""
    preset_option: str = "preset"
    """The encoder option a speed preset goes into."""
    crf_option: str = "crf"
    """The encoder option a constant-quality factor goes into."""
    crf_extra: tuple[tuple[str, str], ...] = ()
    """Options set together with a constant-quality factor (libvpx-vp9 needs ``b=0`` for it)."""
    crf_also: tuple[str, ...] = ()
    """Further options that take the constant-quality value too (MPEG-1/2/4 fix their quantiser with
    ``qmin`` and ``qmax``)."""
    crf_range: tuple[float, float] | None = None
    """The constant-quality values it takes, inclusive (None: not known, passed on as given)."""
    crf_whole: bool = False
    """Whether it takes whole numbers only."""
    takes_crf: bool = True
    """Whether it has a constant-quality mode at all (FFV1 is lossless)."""
    frame_time_base: bool = False
    """Whether its time base must be one frame (MPEG-1/2 video refuses a finer clock)."""
    max_time_base_den: int | None = None
    """The largest time base denominator it takes (MPEG-4 part 2: 65535), or None."""
    rate_clock: bool = False
    """Whether its rate control needs a time base of one frame to meet a bit rate (FFmpeg's MPEG-4 part
    2 encoder: asked for 300 kb/s on a clock of 1/15360 s it wrote 3.7 Mb/s, on one of 1/300 2.5 Mb/s,
    on one frame 0.77 Mb/s, its least at that picture's quantiser limit)."""

    def crf_options(self, crf: float) -> dict[str, str]:
        """The encoder options a constant-quality factor becomes (``crf_extra`` included).

        Raises:
            InvalidInputError: the encoder takes no crf, or not this one (the message gives its range).
        """
        if not self.takes_crf:
            raise InvalidInputError(f"{self.name} takes no crf: it is lossless; leave crf out")
        low, high = self.crf_range if self.crf_range is not None else (0.0, math.inf)
        if not low <= crf <= high or (self.crf_whole and crf != int(crf)):
            whole = "whole numbers " if self.crf_whole else ""
            raise InvalidInputError(f"crf {crf:g} is not one {self.name} takes: {whole}{low:g} to {high:g}")
        value = f"{int(crf)}" if self.crf_whole else f"{crf:g}"
        options = {option: value for option in (self.crf_option, *self.crf_also)}
        options.update(self.crf_extra)
        return options

    def time_base(self, unit: fractions.Fraction, rate: fractions.Fraction) -> fractions.Fraction:
        """The encoder's time base for timestamps in ``unit`` at nominal ``rate``: ``unit`` where the
        encoder takes it, else one frame (MPEG-1/2), else the finest whole fraction of a frame within
        its denominator limit."""
        frame = 1 / fractions.Fraction(rate)
        if self.frame_time_base:
            return frame
        limit = self.max_time_base_den
        if limit is None or unit.denominator <= limit:
            return unit
        return frame / max(1, limit // frame.denominator)

    @property
    def hardware(self) -> bool:
        """Whether it encodes on a GPU (NVENC)."""
        return is_nvenc(self.name)

    @property
    def takes_cuda_frames(self) -> bool:
        """Whether it takes frames in CUDA memory (NVENC), besides frames in host memory."""
        return is_nvenc(self.name)

    @property
    def limits(self) -> CodedSizeLimits | None:
        """Its known coded-size limits (:data:`alpha2.gpu.codecs.ENCODER_LIMITS`), or None."""
        return ENCODER_LIMITS.get(self.name)


_H26X_CRF = (0.0, 51.0)
_AV1_VP9_CRF = (0.0, 63.0)
_MPEG_QUANTISER = (1.0, 31.0)

_MPEG2 = EncoderSpec(
    "mpeg2video",
    "mpeg2",
    True,
    crf_option="qmin",
    crf_also=("qmax",),
    crf_range=_MPEG_QUANTISER,
    crf_whole=True,
    frame_time_base=True,
)
"""MPEG-2's row: quantiser for crf, a frame's time base."""

ENCODERS: tuple[EncoderSpec, ...] = (
    EncoderSpec("h264_nvenc", "h264", True, crf_option="cq", crf_range=_H26X_CRF),
    EncoderSpec("libx264", "h264", True, crf_range=_H26X_CRF),
    EncoderSpec("libx264rgb", "h264", False, crf_range=_H26X_CRF),
    EncoderSpec("libopenh264", "h264", False),
    EncoderSpec("hevc_nvenc", "hevc", True, crf_option="cq", crf_range=_H26X_CRF),
    EncoderSpec("libx265", "hevc", True, crf_range=_H26X_CRF),
    EncoderSpec("av1_nvenc", "av1", True, crf_option="cq"),
    # FFmpeg's libsvtav1 wrapper reads crf 0 as 'not set' (SVT's default, 35, was used): from 1.
    EncoderSpec("libsvtav1", "av1", True, crf_range=(1.0, _AV1_VP9_CRF[1])),
    EncoderSpec("libaom-av1", "av1", True, preset_option="cpu-used", crf_range=_AV1_VP9_CRF),
    EncoderSpec("librav1e", "av1", False),
    EncoderSpec(
        "libvpx-vp9", "vp9", True, preset_option="cpu-used", crf_extra=(("b", "0"),), crf_range=_AV1_VP9_CRF
    ),
    EncoderSpec("libvpx", "vp8", False, preset_option="cpu-used", crf_range=_AV1_VP9_CRF),
    _MPEG2,
    # MPEG-1 takes only its standard frame rates as a time base (as MPEG-2): at FFmpeg's 1/90000 of
    # the container it refused to open ('Invalid argument') into every output but AVI.
    dataclasses.replace(_MPEG2, name="mpeg1video", codec="mpeg1"),
    EncoderSpec(
        "mpeg4",
        "mpeg4",
        True,
        crf_option="qmin",
        crf_also=("qmax",),
        crf_range=_MPEG_QUANTISER,
        crf_whole=True,
        max_time_base_den=65535,
        rate_clock=True,
    ),
    EncoderSpec("ffv1", "ffv1", True, takes_crf=False),
)
"""The encoders alpha2 knows, best first within each codec (NVENC where present and working first)."""

_BY_NAME = {spec.name: spec for spec in ENCODERS}


def _preference() -> dict[str, tuple[str, ...]]:
    order: dict[str, list[str]] = {}
    for spec in ENCODERS:
        if spec.preferred:
            order.setdefault(spec.codec, []).append(spec.name)
    return {codec: tuple(names) for codec, names in order.items()}


ENCODER_PREFERENCE: dict[str, tuple[str, ...]] = _preference()
"""Encoders tried for each codec, best first (the preferred rows of :data:`ENCODERS`)."""


def encoder_spec(name: str) -> EncoderSpec | None:
    """The table's row for an encoder name (aliases accepted), or None when alpha2 does not know it."""
    key = name.lower()
    # An encoder's own name first: "mpeg2video" is an encoder here, and an alias of the codec family.
    return _BY_NAME.get(key) or _BY_NAME.get(canonical_name(key))


def preferred_encoders(codec: str) -> tuple[str, ...]:
    """The encoders tried for a codec family (aliases accepted), best first; () when it is not one."""
    return ENCODER_PREFERENCE.get(canonical_name(codec), ())


FIDELITY_ENCODERS = frozenset(
    {
        "ffv1",
        "prores",
        "prores_aw",
        "prores_ks",
        "dnxhd",
        "utvideo",
        "huffyuv",
        "ffvhuff",
        "magicyuv",
        "png",
        "qtrle",
        "rawvideo",
        "v210",
        "libx264rgb",
    }
)
"""Encoders of masters and archives (lossless or intermediate): an RGB picture goes to the format that
loses least (4:4:4), not to 4:2:0 as it does for a delivery codec, where 4:4:4 plays in few players
(``ffmpeg`` picks 4:4:4 for H.264 and warns of just that)."""


LIMITED_RANGE_ENCODERS = frozenset(
    {"vp8", "libvpx", "mpeg1video", "mpeg2video", "prores", "prores_aw", "prores_ks"}
)
"""Encoders (by name, or by the codec they write: ``--codec vp8`` is named vp8) whose pictures
FFmpeg's decoders read as limited range whatever the stream's tag says (the bitstreams carry no range,
or only limited: FFmpeg's own table marks them so): a full-range picture (MJPEG's yuvj, gray) is
converted to limited range for them, as ffmpeg's scale does. Found by an outside pass (helper 91):
written with its full-range levels and read as limited, gray 54 came back 43."""


BT601_ONLY_ENCODERS = frozenset({"vp8", "libvpx"})
"""Encoders (by name, or by the codec they write) whose pictures are read as BT.601 whatever the stream's
tag says: VP8's bitstream has one colour space, BT.601 (FFmpeg's decoder tags every VP8 frame bt470bg,
and browsers decode it so). A picture of another matrix (BT.709, BT.2020, SMPTE 240M, FCC) is converted
to BT.601 for them, its primaries and transfer kept: written as it was, a BT.709 red came back with its
hue and level moved (BT.709's pure red, Y'CbCr 63/102/240, read as BT.601 is R'G'B' 233/0/2)."""


UNTAGGED_CODECS = frozenset({"ffv1", "mpeg4"})
"""Codecs whose bitstream, as FFmpeg writes it, carries no colour description: in a container that holds
none either (:data:`UNTAGGED_MUXERS`) every reader guesses the matrix from the picture's size."""

UNTAGGED_MUXERS = frozenset({"avi", "nut"})
"""Muxers that keep no colour tags (FFV1 or MPEG-4 written into them read back 'unspecified')."""


def read_as_limited(encoder: str | None, codec: str | None, muxer: str | None) -> bool:
    """Whether every reader takes this output's pictures as limited range whatever alpha2 tags: an
    encoder of :data:`LIMITED_RANGE_ENCODERS`, or FFV1 / MPEG-4 in AVI or NUT, which keep no tags (a
    full-range picture written as it was there came back with its blacks and whites clipped)."""
    names = {encoder or "", codec or ""}
    return bool(names & LIMITED_RANGE_ENCODERS) or (
        muxer in UNTAGGED_MUXERS and bool(names & UNTAGGED_CODECS)
    )


CONVERTIBLE_MATRICES = frozenset(
    {
        ColourMatrix.BT709,
        ColourMatrix.BT470BG,
        ColourMatrix.SMPTE170M,
        ColourMatrix.SMPTE240M,
        ColourMatrix.FCC,
        ColourMatrix.BT2020_NCL,
    }
)
"""The matrices swscale converts between (``scale.SWSCALE_MATRICES``)."""

_BT601_PAIR = frozenset({ColourMatrix.BT470BG, ColourMatrix.SMPTE170M})

_PRORES_AW = frozenset({"prores", "prores_aw"})
_PRORES_AW_TWINS: dict[tuple[str, int], int] = {
    ("matrix", int(ColourMatrix.BT470BG)): int(ColourMatrix.SMPTE170M),
    ("transfer", int(TransferCharacteristic.SMPTE170M)): int(TransferCharacteristic.BT709),
}
"""FFmpeg's ProRes encoder (``prores``, also named ``prores_aw``) writes the matrices BT.709, SMPTE 170M and
BT.2020 and the transfer BT.709 only, any other as 0 (PyAV 18.1's FFmpeg): a BT.470BG picture came back
with matrix 0, RGB, and alpha2 and FFmpeg read it so (PSNR 16 dB), and SMPTE 170M's transfer came back
'reserved'. Their twins (the same coefficients, the same curve) are written instead; prores_ks keeps all."""


def written_tags(encoder: str, matrix: int, transfer: int) -> tuple[int, int]:
    """The matrix and transfer (FFmpeg's numbers) ``encoder`` is given so that it writes them: their twins
    where it writes 0 for them (:data:`_PRORES_AW_TWINS`), else as they are."""
    if canonical_name(encoder) not in _PRORES_AW:
        return matrix, transfer
    return _PRORES_AW_TWINS.get(("matrix", matrix), matrix), _PRORES_AW_TWINS.get(
        ("transfer", transfer), transfer
    )


def matrix_for_readers(
    encoder: str | None, codec: str | None, muxer: str | None, width: int, height: int, matrix: ColourMatrix
) -> ColourMatrix | None:
    """The matrix a picture of ``matrix`` is converted to for this output, because every reader takes its
    pictures as that one whatever alpha2 tags: BT.601 for VP8 (:data:`BT601_ONLY_ENCODERS`); the size's
    guess (BT.709 for HD, BT.601 below, as mpv and libplacebo guess) for FFV1 and MPEG-4 in AVI and NUT,
    which keep no tags (a Writer's 160x96 BT.709 green came back 15/234/5 from an MPEG-4 AVI). None: the
    tags hold, or ``matrix`` is that one already (or one swscale does not convert)."""
    names = {encoder or "", codec or ""}
    if names & BT601_ONLY_ENCODERS:
        read = ColourMatrix.BT470BG
    elif muxer in UNTAGGED_MUXERS and names & UNTAGGED_CODECS:
        read = guess_matrix(width, height)
    else:
        return None
    if matrix not in CONVERTIBLE_MATRICES or matrix is read or {matrix, read} <= _BT601_PAIR:
        return None
    return read


def _chroma_steps(fmt: PixelFormat) -> tuple[int, int]:
    return (0, 0) if fmt.is_rgb or fmt.is_gray else (fmt.log2_chroma_w, fmt.log2_chroma_h)


def nearest_encoder_format(
    input_format: PixelFormat, formats: tuple[str, ...], encoder: str | None = None
) -> PixelFormat:
    """What an encoder taking ``formats`` (FFmpeg names; () when not known) is handed for frames of
    ``input_format``: the same where it takes it; else the format alpha2 knows that loses least, in
    this order: colour (gray for a colour picture), alpha, bits of depth, chroma resolution, then a
    change between RGB and Y'CbCr, then what it would add for nothing (chroma, depth, alpha), then the
    encoder's own order. An RGB picture for a delivery encoder (not :data:`FIDELITY_ENCODERS`) goes to
    4:2:0 at its depth where the encoder takes it, for players' sake.

    Found by an outside pass: the first format in the encoder's list was taken after 4:2:0, so ProRes
    4444 came out 4:2:2, an RGB picture went to FFV1 as 4:2:0 and a GIF came out gray."""
    if not formats or input_format.ffmpeg_name in formats:
        return input_format
    known: list[tuple[int, PixelFormat]] = []
    for order, name in enumerate(formats):
        try:
            known.append((order, PixelFormat.from_ffmpeg_name(name)))
        except Exception:
            continue  # a format alpha2 does not write (pal8, bgr0, gbrp, ...)
    if not known:
        return input_format
    if input_format.is_rgb and not input_format.has_alpha and (encoder or "") not in FIDELITY_ENCODERS:
        deep = input_format.bit_depth > 8
        for name in ("yuv420p10le", "p010le") if deep else ("yuv420p", "nv12"):
            for _, fmt in known:
                if fmt.ffmpeg_name == name:
                    return fmt
    # A gray picture has no chroma to lose: the most subsampled chroma carries it whole.
    in_w, in_h = (1, 1) if input_format.is_gray else _chroma_steps(input_format)

    def loss(item: tuple[int, PixelFormat]) -> tuple[int, ...]:
        order, fmt = item
        w, h = _chroma_steps(fmt)
        return (
            int(not input_format.is_gray and fmt.is_gray),
            int(input_format.has_alpha and not fmt.has_alpha),
            max(0, input_format.bit_depth - fmt.bit_depth),
            max(0, w - in_w) + max(0, h - in_h),
            int(fmt.is_rgb != input_format.is_rgb),
            max(0, in_w - w) + max(0, in_h - h),
            max(0, fmt.bit_depth - input_format.bit_depth),
            int(fmt.has_alpha and not input_format.has_alpha),
            order,
        )

    return min(known, key=loss)[1]


def colour_kept_or_refused(input_format: PixelFormat, taken: PixelFormat, encoder: str) -> None:
    """Refuse an encoder that would turn a colour picture gray (the only format of its that alpha2
    writes is gray: GIF's are palettes, rgb8 and gray); a gray output nobody asked for is no answer."""
    if taken.is_gray and not input_format.is_gray:
        from alpha2.ffmpeg_bridge.errors import UnsupportedCodecError

        raise UnsupportedCodecError(
            f"{encoder} would write this colour picture gray: of the pictures it takes, alpha2 writes "
            "only gray (not its palette formats); for a GIF, ffmpeg's palettegen and paletteuse filters "
            "make one in colour"
        )
