"""The encoder table: every FFmpeg encoder alpha2 knows, its codec, preference, options and limits.

One row per encoder (:data:`ENCODERS`); :data:`ENCODER_PREFERENCE` (the order ``choose_encoder`` tries
for a codec) is derived from it. Name aliases and coded-size limits come from the vocabulary
(:mod:`alpha2.gpu.codecs`), which the encode hand-off in ``alpha2.native_gpu.encode`` reads too, so both
sides accept the same names and enforce the same limits. This module does not import ``av``: what an
FFmpeg build has is asked in :mod:`alpha2.ffmpeg_bridge.encode`.
"""

from __future__ import annotations

from dataclasses import dataclass

from alpha2.gpu.codecs import ENCODER_LIMITS, NAME_ALIASES, CodedSizeLimits, canonical_name

__all__ = [
    "ENCODERS",
    "ENCODER_PREFERENCE",
    "NAME_ALIASES",
    "EncoderSpec",
    "canonical_name",
    "encoder_spec",
    "is_nvenc",
    "preferred_encoders",
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


ENCODERS: tuple[EncoderSpec, ...] = (
    EncoderSpec("h264_nvenc", "h264", True, crf_option="cq"),
    EncoderSpec("libx264", "h264", True),
    EncoderSpec("libx264rgb", "h264", False),
    EncoderSpec("libopenh264", "h264", False),
    EncoderSpec("hevc_nvenc", "hevc", True, crf_option="cq"),
    EncoderSpec("libx265", "hevc", True),
    EncoderSpec("av1_nvenc", "av1", True, crf_option="cq"),
    EncoderSpec("libsvtav1", "av1", True),
    EncoderSpec("libaom-av1", "av1", True, preset_option="cpu-used"),
    EncoderSpec("librav1e", "av1", False),
    EncoderSpec("libvpx-vp9", "vp9", True, preset_option="cpu-used", crf_extra=(("b", "0"),)),
    EncoderSpec("libvpx", "vp8", False, preset_option="cpu-used"),
    EncoderSpec("mpeg2video", "mpeg2", True, crf_option="qscale"),
    EncoderSpec("mpeg4", "mpeg4", True),
    EncoderSpec("ffv1", "ffv1", True),
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
    return _BY_NAME.get(canonical_name(name))


def preferred_encoders(codec: str) -> tuple[str, ...]:
    """The encoders tried for a codec family (aliases accepted), best first; () when it is not one."""
    return ENCODER_PREFERENCE.get(canonical_name(codec), ())
