"""HDR static metadata between FFmpeg and the vocabulary: read from decoded frames, written by encoders.

Reading: FFmpeg attaches ``AV_FRAME_DATA_MASTERING_DISPLAY_METADATA`` (an ``AVMasteringDisplayMetadata``,
88 bytes) and ``AV_FRAME_DATA_CONTENT_LIGHT_LEVEL`` (an ``AVContentLightMetadata``, 8 bytes) to every
decoded frame of a stream that has them, whether they came from SEI / OBUs or from the container
(FFmpeg copies the stream's coded side data onto frames). PyAV 18 exposes them as raw buffers in
``frame.side_data``; :func:`hdr_metadata_of` parses them into :class:`~alpha2.gpu.hdr.HdrMetadata`.
PyAV 18 names each item's type by its ``av.sidedata.sidedata.Type`` enum, which lacks the types its
bundled FFmpeg added after it (EXIF, which FFmpeg 8.1 attaches to every PNG, JPEG or WebP picture that
has it; LCEVC; the view id of MV-HEVC; 3D reference displays): one such item made ``frame.side_data``
raise ``ValueError`` (``31 is not a valid Type``) and the whole file fail. :func:`name_unknown_side_data`
gives the enum a ``_missing_`` that names such a type ``UNKNOWN_<n>``, so the rest are read.

Writing: PyAV 18 has no way to attach these side data to an encoder or a stream, so they go through
the encoders' own parameters: ``x265-params`` ``master-display`` / ``max-cll`` for libx265 and
``svtav1-params`` ``mastering-display`` / ``content-light`` for libsvtav1 (both put them in the
bitstream, and FFmpeg's decoders read them back). :func:`hdr_encoder_options` merges them into an
encoder's options; other encoders (libvpx-vp9, libx264, NVENC) get none, and the result says why.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av.sidedata.sidedata

from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata, MasteringDisplay
from alpha2.gpu.primaries import Chromaticities

__all__ = [
    "HDR_PARAMS_OPTION",
    "HdrEncoderOptions",
    "hdr_encoder_options",
    "hdr_metadata_of",
    "name_unknown_side_data",
    "pack_content_light",
    "pack_mastering_display",
    "parse_content_light",
    "parse_mastering_display",
]

_MASTERING = struct.Struct("<20i2i")  # 10 AVRationals (num, den), has_primaries, has_luminance
_LIGHT = struct.Struct("<2I")  # MaxCLL, MaxFALL


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else float(Fraction(num, den))


def parse_mastering_display(raw: bytes) -> MasteringDisplay | None:
    """An ``AVMasteringDisplayMetadata`` -> :class:`MasteringDisplay`; None when it lacks primaries or
    luminance, or holds values that are not a display (zero denominators, black above peak)."""
    if len(raw) < _MASTERING.size:
        return None
    values = _MASTERING.unpack_from(raw)
    has_primaries, has_luminance = values[20], values[21]
    if not (has_primaries and has_luminance):
        return None
    numbers = [_ratio(values[i], values[i + 1]) for i in range(0, 20, 2)]
    if any(n is None for n in numbers):
        return None
    rx, ry, gx, gy, bx, by, wx, wy, low, high = (float(n) for n in numbers if n is not None)
    try:
        return MasteringDisplay(Chromaticities((rx, ry), (gx, gy), (bx, by), (wx, wy)), low, high)
    except ValueError:
        return None  # garbage in a stream is not a reason to stop decoding it


def parse_content_light(raw: bytes) -> ContentLightLevel | None:
    """An ``AVContentLightMetadata`` -> :class:`ContentLightLevel`; None when both levels are 0."""
    if len(raw) < _LIGHT.size:
        return None
    max_cll, max_fall = _LIGHT.unpack_from(raw)
    if max_cll == 0 and max_fall == 0:
        return None
    return ContentLightLevel(min(max_cll, 65535), min(max_fall, 65535))


def pack_mastering_display(display: MasteringDisplay) -> bytes:
    """:class:`MasteringDisplay` -> an ``AVMasteringDisplayMetadata`` (the units FFmpeg's HEVC decoder
    uses: chromaticity / 50000, luminance / 10000), for tests and side-data writers."""
    p = display.primaries
    chroma = [round(c * 50000) for xy in (p.red, p.green, p.blue, p.white) for c in xy]
    fields: list[int] = []
    for value in chroma:
        fields += [value, 50000]
    fields += [round(display.min_luminance_cd_m2 * 10000), 10000]
    fields += [round(display.max_luminance_cd_m2 * 10000), 10000]
    return _MASTERING.pack(*fields, 1, 1)


def pack_content_light(level: ContentLightLevel) -> bytes:
    """:class:`ContentLightLevel` -> an ``AVContentLightMetadata``."""
    return _LIGHT.pack(level.max_cll_cd_m2, level.max_fall_cd_m2)


def _unknown_side_data_type(cls: Any, value: object) -> Any:
    """``Type._missing_``: a member for a side data type FFmpeg has and PyAV's enum has not, made once
    (the enum's map keeps it, so ``Type(n) is Type(n)``)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    member = object.__new__(cls)
    member._name_ = f"UNKNOWN_{value}"
    member._value_ = value
    return cls._value2member_map_.setdefault(value, member)


def name_unknown_side_data() -> None:
    """Let ``frame.side_data`` list items of side data types newer than PyAV's enum (named
    ``UNKNOWN_<n>``, their bytes readable) where it raised ``ValueError`` for the whole frame. Idempotent;
    done when this module is imported."""
    kind = av.sidedata.sidedata.Type
    if "_missing_" not in vars(kind):
        kind._missing_ = classmethod(_unknown_side_data_type)  # type: ignore[assignment,method-assign]


name_unknown_side_data()


_HDR_TRC = (16, 18)
"""AVColorTransferCharacteristic of PQ (SMPTE ST 2084) and HLG (ARIB STD-B67): the transfers whose
frames' static metadata alpha2 uses."""


def hdr_metadata_of(frame: Any) -> HdrMetadata | None:
    """The HDR static metadata a decoded PyAV frame carries, or None when it has none (or is not PQ /
    HLG: the metadata is only used for those).

    PyAV 18's ``frame.side_data`` makes a container that refers back to the frame and is cached on it:
    a reference cycle, so a frame whose side data was looked at (with its picture, 3 MB at 1080p) is
    freed by the cyclic collector, not when its last reference goes. SDR frames are never asked.
    """
    trc = getattr(frame, "color_trc", None)
    if trc is not None and int(trc) not in _HDR_TRC:
        return None
    side_data = getattr(frame, "side_data", None)
    if side_data is None or len(side_data) == 0:
        return None
    mastering = light = None
    for item in side_data:
        name = getattr(item.type, "name", "")
        if name == "MASTERING_DISPLAY_METADATA":
            mastering = parse_mastering_display(bytes(item))
        elif name == "CONTENT_LIGHT_LEVEL":
            light = parse_content_light(bytes(item))
    if mastering is None and light is None:
        return None
    return HdrMetadata(mastering, light)


@dataclass(frozen=True)
class HdrEncoderOptions:
    """An encoder's options with the HDR static metadata merged in, and whether it could be."""

    options: dict[str, str]
    """The options to open the encoder with (the caller's, plus the HDR parameters)."""
    written: bool
    """Whether the metadata will be in the bitstream."""
    reason: str
    """Why not, or what was written (for the transcoder's summary)."""


def _merge_params(existing: str | None, extra: list[str]) -> str:
    parts = [p for p in (existing or "").split(":") if p]
    keys = {p.split("=", 1)[0] for p in parts}
    parts += [p for p in extra if p.split("=", 1)[0] not in keys]  # the caller's own values win
    return ":".join(parts)


@dataclass(frozen=True)
class _ParamsSyntax:
    """How an encoder spells the two HDR parameters, and the option they go in."""

    option: str
    mastering_key: str
    light_key: str
    xy: Callable[[tuple[float, float]], str]
    """A chromaticity, parenthesised."""
    luminance: Callable[[float], str]
    """A luminance in cd/m²."""


_SYNTAX = {
    # x265: chromaticities in 0.00002 units, luminance in 0.0001 cd/m².
    "libx265": _ParamsSyntax(
        "x265-params",
        "master-display",
        "max-cll",
        lambda c: f"({round(c[0] * 50000)},{round(c[1] * 50000)})",
        lambda v: str(round(v * 10000)),
    ),
    # SVT-AV1: plain decimals.
    "libsvtav1": _ParamsSyntax(
        "svtav1-params",
        "mastering-display",
        "content-light",
        lambda c: f"({c[0]:.4f},{c[1]:.4f})",
        lambda v: f"{v:.4f}",
    ),
}


HDR_PARAMS_OPTION: dict[str, str] = {name: syntax.option for name, syntax in _SYNTAX.items()}
"""The encoders that can write HDR static metadata, and the option their parameters go in."""


def _hdr_params(hdr: HdrMetadata, syntax: _ParamsSyntax) -> list[str]:
    params = []
    if hdr.mastering is not None:
        m, xy = hdr.mastering, syntax.xy
        p = m.primaries
        luminance = f"L({syntax.luminance(m.max_luminance_cd_m2)},{syntax.luminance(m.min_luminance_cd_m2)})"
        params.append(
            f"{syntax.mastering_key}=G{xy(p.green)}B{xy(p.blue)}R{xy(p.red)}WP{xy(p.white)}{luminance}"
        )
    if hdr.light_level is not None:
        light = hdr.light_level
        params.append(f"{syntax.light_key}={light.max_cll_cd_m2},{light.max_fall_cd_m2}")
    return params


def hdr_encoder_options(
    encoder_name: str, hdr: HdrMetadata | None, options: dict[str, str] | None = None, *, bit_depth: int
) -> HdrEncoderOptions:
    """Merge ``hdr`` into an encoder's options (call it before ``codec_context.options = ...``).

    Nothing is written on fewer than 10 bits (HDR on 8 bits bands; the transcoder tone maps instead),
    nor by encoders without HDR parameters. Parameters the caller already set are kept.
    """
    merged = dict(options or {})
    if hdr is None or hdr.is_empty:
        return HdrEncoderOptions(merged, False, "no HDR static metadata")
    if bit_depth < 10:
        return HdrEncoderOptions(merged, False, f"HDR metadata is not written on {bit_depth} bits")
    syntax = _SYNTAX.get(encoder_name)
    if syntax is None:
        able = ", ".join(_SYNTAX)
        return HdrEncoderOptions(merged, False, f"{encoder_name} cannot write HDR metadata (only {able})")
    merged[syntax.option] = _merge_params(merged.get(syntax.option), _hdr_params(hdr, syntax))
    what = " and ".join(
        name
        for name, part in (("mastering display", hdr.mastering), ("content light level", hdr.light_level))
        if part is not None
    )
    return HdrEncoderOptions(merged, True, f"{what} written by {encoder_name}")
