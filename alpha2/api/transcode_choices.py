"""What ``alpha2 transcode`` can be asked for, in names and numbers: the output containers, each codec
family's default crf, the encoders' presets, the colour and depth choices, the largest picture taken,
and which audio and subtitle streams to keep (:func:`track_specs`: ``--audio-track``,
``--subtitle-track``).

Kept out of :mod:`alpha2.api.transcode_plan` (which plans with them and names them too) so that the
command line's options list them without loading PyAV or numpy: ``alpha2 transcode --help`` and
``alpha2 batch --help`` answer at once.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from alpha2.ffmpeg_bridge.containers import AUDIO_CONTAINERS, OUTPUT_CONTAINERS
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.limits import DEFAULT_MAX_PIXELS
from alpha2.gpu.option_names import named

__all__ = [
    "AUDIO_CONTAINERS",
    "DEFAULT_CRF",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_PRESETS",
    "ENCODER_PRESETS",
    "OUTPUT_CONTAINERS",
    "X26X_PRESETS",
    "ColourChoice",
    "DepthChoice",
    "TrackSpec",
    "track_specs",
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


TRACK_OPTIONS = {
    "audio": "--audio-track",
    "subtitle": "--subtitle-track",
    "a": "--audio-track",
    "s": "--subtitle-track",
}
"""The option that chooses the streams of each kind (also by ffmpeg's letter), as messages name it."""


@dataclass(frozen=True)
class TrackSpec:
    """One word of ``--audio-track`` / ``--subtitle-track``: a stream's number among the streams of its
    kind (``1``: the second audio stream, as ffmpeg's ``-map 0:a:1`` counts), or a language code matched
    in any of its ISO 639 forms (``en``, ``eng``), as mpv's ``--alang`` matches it; with a trailing ``?``
    it may match nothing (ffmpeg's ``-map 0:a:1?``), else a file without such a stream is refused."""

    text: str
    """The word as normalised (lower case): ``1``, ``jpn``, ``eng?``."""

    @property
    def optional(self) -> bool:
        """Matching nothing is no error (a trailing ``?``)."""
        return self.text.endswith("?")

    @property
    def number(self) -> int | None:
        """The stream's number among those of its kind, from 0; None: a language."""
        word = self.text.rstrip("?")
        return int(word) if word.isdigit() else None

    @property
    def language(self) -> str | None:
        """The language code asked for; None: a number."""
        word = self.text.rstrip("?")
        return None if word.isdigit() else word


def track_specs(value: object, kind: str = "audio") -> tuple[str, ...]:
    """The words of ``audio_tracks`` / ``subtitle_tracks`` (``kind`` ``audio`` or ``subtitle``; errors name
    the field as :func:`~alpha2.gpu.option_names.option_names` spells it, ``--audio-track`` on the command
    line), normalised: numbers (0, 1, ...) and language codes (``eng``, ``en``, ``jpn``), each optionally
    ending in ``?``, from a comma-separated string, a number, or a list or tuple of them (lists may hold
    comma lists).

    Raises:
        InvalidInputError: a word that is neither, or no word at all.
    """
    option = named(f"{kind}_tracks")
    items = list(value) if isinstance(value, list | tuple) else [value]
    words: list[str] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise InvalidInputError(
                f"{option} takes stream numbers (0, 1, ...) and language codes (eng, jpn, de ...), got "
                f"{type(item).__name__} {item!r:.60}"
            )
        for word in str(item).split(","):
            if word.strip() or not isinstance(item, str):
                words.append(_track_word(word, option, kind, item))
    if not words:
        none = named("audio=False" if kind == "audio" else "subtitles=False")
        raise InvalidInputError(
            f"{option} names no stream; leave it out to keep them all, or drop them all with {none}"
        )
    return tuple(dict.fromkeys(words))  # each once, in the order given


def _track_word(word: str, option: str, kind: str, given: object) -> str:
    """One word normalised (``1``, ``jpn``, ``eng?``), or why it is neither a number nor a language."""
    text = word.strip().lower()
    bare = text.removesuffix("?")
    if bare.isdigit() and bare.isascii():
        return str(int(bare)) + text[len(bare) :]
    if bare.isascii() and bare.isalpha() and 2 <= len(bare) <= 8:
        return text
    said = (
        f"{option} takes stream numbers (0: the first) or languages (eng, de), comma-separated; "
        f"got {word.strip()!r}"
    )
    if str(given).strip() != word.strip():
        said += f" in {given!r}"
    ffmpeg = re.fullmatch(r"(?:(\d+):)?([as]):(\d+)(\??)", text)
    if ffmpeg is not None and ffmpeg[1] is not None and int(ffmpeg[1]) != 0:
        # ffmpeg's 1:a:0 is a second input's stream: transcode has one input (an outside pass: it was
        # said to be --audio-track 0, the first input's).
        said += f" (ffmpeg's {text} names input {int(ffmpeg[1])}; transcode takes one input, ffmpeg's 0)"
    elif ffmpeg is not None:  # ffmpeg's -map 0:a:1: the number alone here, with the option of its kind
        letter = named("audio_tracks" if ffmpeg[2] == "a" else "subtitle_tracks")
        said += f" (ffmpeg's {text} is {letter} {ffmpeg[3]}{ffmpeg[4]} here)"
    raise InvalidInputError(said)
