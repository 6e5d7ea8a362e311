"""What ``alpha2 transcode`` can be asked for, in names and numbers: the output containers, each codec
family's default crf, the encoders' presets, the colour and depth choices, the largest picture taken.

Kept out of :mod:`alpha2.api.transcode_plan` (which plans with them and names them too) so that the
command line's options list them without loading PyAV or numpy: ``alpha2 transcode --help`` and
``alpha2 batch --help`` answer at once.
"""

from __future__ import annotations

import enum

from alpha2.ffmpeg_bridge.containers import OUTPUT_CONTAINERS
from alpha2.gpu.limits import DEFAULT_MAX_PIXELS

__all__ = [
    "DEFAULT_CRF",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_PRESETS",
    "ENCODER_PRESETS",
    "OUTPUT_CONTAINERS",
    "X26X_PRESETS",
    "ColourChoice",
    "DepthChoice",
]

DEFAULT_CRF: dict[str, float] = {"h264": 23, "hevc": 28, "vp9": 32, "av1": 35}
"""Constant-quality factor used when neither ``crf`` nor ``bitrate`` is given, per codec family."""

X26X_PRESETS = (
    "ultrafast",
    "superfast",
    "veryfast",
    "faster",
    "fast",
    "medium",
    "slow",
    "slower",
    "veryslow",
    "placebo",
)
"""libx264's and libx265's speed presets, fastest first."""

ENCODER_PRESETS: dict[str, tuple[str, ...]] = {"libx264": X26X_PRESETS, "libx265": X26X_PRESETS}
"""The presets of the encoders whose preset names alpha2 checks before anything is opened."""

ENCODER_PRESET_RANGES: dict[str, tuple[int, int]] = {
    "libsvtav1": (-2, 13),
    "libvpx-vp9": (-8, 8),
    "libvpx": (-16, 16),
    "libaom-av1": (0, 8),
}
"""The encoders whose preset is a number (SVT-AV1's ``preset``, libvpx's and libaom's ``cpu-used``:
lower is slower and better), and the range each takes (as FFmpeg's options are declared; measured with
this build's libsvtav1 and libvpx)."""

DEFAULT_PRESETS: dict[str, str] = {
    "libx264": "medium",
    "libx265": "medium",
    "h264_nvenc": "p4",
    "hevc_nvenc": "p4",
    "av1_nvenc": "p4",
    "libvpx-vp9": "1",
    "libaom-av1": "1",
}
"""The preset (``cpu-used`` for libvpx-vp9 and libaom-av1) each encoder uses when none is asked for:
FFmpeg's defaults, which alpha2 keeps."""


class ColourChoice(enum.Enum):
    """The output's Y'CbCr matrix and range; for HDR inputs also whether they stay HDR."""

    AUTO = "auto"
    """Kept when frames pass through; when scaled or converted (on the GPU or by swscale), BT.709
    limited for HD outputs, the input's for smaller ones. HDR inputs: KEEP at 10 bits, tone mapped to
    SDR BT.709 at 8."""
    KEEP = "keep"
    """The input's matrix and range; HDR inputs keep PQ / HLG, BT.2020 and their static metadata."""
    BT709 = "bt709"
    """BT.709 matrix, limited range; HDR inputs are tone mapped to SDR BT.709."""
    BT601 = "bt601"
    """BT.601 matrix (SMPTE 170M), limited range; HDR inputs are tone mapped to SDR BT.709 first."""
    BT2020 = "bt2020"
    """BT.2020 non-constant-luminance matrix, limited range."""


class DepthChoice(enum.Enum):
    """The output's bits per sample."""

    AUTO = "auto"
    """8 bits, but 10 for HEVC, AV1 and VP9 when the input is 10-bit HDR (PQ or HLG): most browsers and
    hardware decoders play no 10-bit H.264 (High 10)."""
    EIGHT = "8"
    """8 bits, whatever the input."""
    TEN = "10"
    """10 bits, whatever the input (for H.264 that is High 10)."""
