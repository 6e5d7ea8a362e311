"""Text subtitles through FFmpeg: the tracks of a file and their cues as (start, end, text).

:func:`subtitle_tracks` lists a file's subtitle streams (an ``.srt`` / ``.ass`` / ``.vtt`` file is one
track itself); :func:`read_cues` demuxes one stream and decodes its packets with FFmpeg's subtitle
decoders (SubRip, ASS / SSA, mov_text, WebVTT: each hands out ASS events), keeping the text: ASS
override tags (``{\\i1}``, ``{\\pos(..)}``, ...) are stripped, ``\\N`` becomes a line break. Text that is not
UTF-8 (a Shift-JIS, GBK or Windows-1251 ``.srt``, a mov_text track written in one) is read as mpv's
``--sub-codepage=auto`` reads it: its encoding is detected (charset-normalizer, as mpv asks uchardet),
or named (``codepage=``), the text converted before FFmpeg's decoder sees it, and
:func:`read_subtitles` says which encoding that was (:attr:`SubtitleCues.encoding`,
:attr:`SubtitleCues.notes`); a byte no encoding explains becomes U+FFFD and is counted, the rest of the
track kept. Where a cue is
placed (:attr:`SubtitleCue.placement`: bottom, middle or top) is kept from its ``{\\an8}`` / ``{\\a6}`` tag
or its ASS style's alignment, as signs and overlapping speakers use it; the rest of the styling is not. Bitmap
subtitles (PGS, DVD, DVB) are listed with ``text=False`` and have no cues here. No PyAV object leaves
this module.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import av
import av.container

from alpha2.ffmpeg_bridge.channel_layouts import open_input
from alpha2.ffmpeg_bridge.errors import MediaFormatError, from_ffmpeg, from_ffmpeg_open
from alpha2.ffmpeg_bridge.media import stream_language
from alpha2.gpu.errors import InvalidInputError

__all__ = [
    "PLACEMENTS",
    "SubtitleCue",
    "SubtitleCues",
    "SubtitleTrackInfo",
    "ass_placement",
    "ass_text",
    "detect_encoding",
    "encoding_name",
    "read_cues",
    "read_subtitles",
    "style_placements",
    "subtitle_codepage",
    "subtitle_path",
    "subtitle_tracks",
]

_BITMAP_CODECS = frozenset({"hdmv_pgs_subtitle", "dvd_subtitle", "dvb_subtitle", "xsub", "dvb_teletext"})
_PLAIN_TEXT_CODECS = frozenset(
    "srt subrip ssa ass webvtt text microdvd subviewer subviewer1 mpl2 pjs vplayer realtext sami jacosub "
    "stl".split()
)
"""Decoders whose packets are the cue's text itself (mov_text's hold its length and style boxes)."""
_DEFAULT_CUE_S = 4.0
"""How long a cue with no duration stays (until the next one, at most this)."""
_OVERRIDE = re.compile(r"\{[^}]*\}")
_DRAWING = re.compile(r"\{[^}]*\\p[1-9][^}]*\}.*?(\{[^}]*\\p0[^}]*\}|$)", re.S)


@dataclass(frozen=True)
class SubtitleCue:
    """One subtitle on display from ``start_s`` to ``end_s``."""

    start_s: float
    """When it appears, media seconds."""
    end_s: float
    """When it goes, media seconds."""
    text: str
    """Its text, lines split at ``\\n``, without styling."""
    placement: str = "bottom"
    """Where it goes: ``bottom`` (centre), ``middle`` or ``top``, from its ASS alignment."""


@dataclass(frozen=True)
class SubtitleTrackInfo:
    """A subtitle stream of a file."""

    source: str
    """The file."""
    stream_index: int
    """The stream's index in the container."""
    codec: str
    """FFmpeg's codec name (``subrip``, ``ass``, ``mov_text``, ``webvtt``, ...)."""
    language: str | None
    """Its ISO 639 language tag (``eng``); None when untagged (missing or ``und``)."""
    title: str | None
    """Its title, if any."""
    text: bool
    """Whether it is text (cues can be read); bitmap subtitles are not."""
    default: bool = False
    """Whether the file marks it as the default track."""


def ass_text(event: str) -> str:
    """The text of an ASS dialogue text field: override tags and drawings stripped, ``\\N`` / ``\\n``
    as line breaks, ``\\h`` as a space."""
    text = _DRAWING.sub("", event)
    text = _OVERRIDE.sub("", text)
    text = text.replace("\\N", "\n").replace("\\n", "\n").replace("\\h", "\u00a0")
    lines = [line.strip() for line in text.split("\n")]
    return "\n".join(lines).strip("\n")


PLACEMENTS = ("bottom", "middle", "top")
"""Where a cue is drawn (:attr:`SubtitleCue.placement`)."""
_AN_TAG = re.compile(r"\\an([1-9])")
_A_TAG = re.compile(r"\\a([1-9]|1[01])(?![0-9])")


def _numpad_row(alignment: int) -> str:
    """An ASS (v4+) alignment, the numpad's digit (1-3 bottom, 4-6 middle, 7-9 top), as a placement."""
    return "bottom" if alignment <= 3 else "middle" if alignment <= 6 else "top"


def _legacy_row(alignment: int) -> str:
    """An SSA (v4) alignment: 1-3 bottom, 5-7 top, 9-11 middle (4 and 8 unused)."""
    return "top" if 5 <= alignment <= 7 else "middle" if alignment >= 9 else "bottom"


def ass_placement(event: str, style: str = "bottom") -> str:
    """Where an ASS dialogue text goes: its first ``{\\an..}`` or ``{\\a..}`` override (only the first
    counts, as in libass), else ``style``'s (the placement of the event's style)."""
    for block in _OVERRIDE.findall(event):
        numpad = _AN_TAG.search(block)
        if numpad:
            return _numpad_row(int(numpad.group(1)))
        legacy = _A_TAG.search(block)
        if legacy:
            return _legacy_row(int(legacy.group(1)))
    return style


def style_placements(header: bytes | str | None) -> dict[str, str]:
    """The placement of each style an ASS / SSA script header (a stream's extradata) names, from its
    ``Alignment`` field; empty when it has none."""
    if not header:
        return {}
    text = header.decode("utf-8", "replace") if isinstance(header, bytes) else header
    legacy = "[v4 styles]" in text.lower() and "[v4+ styles]" not in text.lower()
    fields: list[str] = []
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "format" and "alignment" in value.lower() and "name" in value.lower():
            fields = [f.strip().lower() for f in value.split(",")]
        elif key == "style" and fields:
            values = [v.strip() for v in value.split(",")]
            if len(values) < len(fields):
                continue
            try:
                alignment = int(values[fields.index("alignment")])
            except ValueError:
                continue
            row = _legacy_row(alignment) if legacy else _numpad_row(min(max(alignment, 1), 9))
            found[values[fields.index("name")]] = row
    return found


def _open(source: str) -> av.container.InputContainer:
    try:
        container = open_input(source, mode="r", metadata_errors="replace")
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(source)) from exc
    if not isinstance(container, av.container.InputContainer):
        container.close()
        raise MediaFormatError(f"{source!r} did not open as an input")
    return container


def subtitle_path(source: object, who: str) -> str:
    """``source`` as a path string; an :class:`InvalidInputError` naming ``who`` where it is none
    (bytes went to PyAV as a file object and came back as its untyped ValueError; None a TypeError)."""
    where = os.fspath(source) if isinstance(source, str | os.PathLike) else None
    if not isinstance(where, str):
        raise InvalidInputError(f"{who} takes a path (str or os.PathLike), got {type(source).__name__}")
    return where


def _info(source: str, stream: Any) -> SubtitleTrackInfo:
    cc = stream.codec_context
    # The codec's name, as ffprobe says it (hdmv_pgs_subtitle, subrip), not its decoder's (pgssub, srt)
    name = str(getattr(getattr(cc, "codec", None), "canonical_name", None) or cc.name)
    metadata = stream.metadata or {}
    disposition = getattr(stream, "disposition", 0)
    return SubtitleTrackInfo(
        source=source,
        stream_index=int(stream.index),
        codec=name,
        language=stream_language(metadata),
        title=metadata.get("title") or None,
        text=name not in _BITMAP_CODECS,
        default=bool(int(disposition) & 1),
    )


def subtitle_tracks(source: str | os.PathLike[str]) -> list[SubtitleTrackInfo]:
    """The subtitle streams of ``source``, in the container's order.

    Raises:
        InvalidInputError: ``source`` is not a path (str or os.PathLike).
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """
    where = subtitle_path(source, "subtitle_tracks")
    with _open(where) as container:
        return [_info(where, stream) for stream in container.streams.subtitles]


def _event_text(item: Any, styles: dict[str, str] | None = None) -> tuple[str, str]:
    """An event's text and placement (``styles``: each style's placement, :func:`style_placements`)."""
    dialogue = getattr(item, "dialogue", None)
    if dialogue:
        raw = dialogue.decode("utf-8", "replace") if isinstance(dialogue, bytes) else str(dialogue)
        style = "bottom"
        event = getattr(item, "ass", None)
        if styles and event:
            line = event.decode("utf-8", "replace") if isinstance(event, bytes) else str(event)
            fields = line.split(
                ",", 8
            )  # ReadOrder, Layer, Style, Name, MarginL, MarginR, MarginV, Effect, Text
            if len(fields) > 2:
                style = styles.get(fields[2].strip(), "bottom")
        return ass_text(raw), ass_placement(raw, style)
    text = getattr(item, "text", None)
    if text:
        return (text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)).strip(), "bottom"
    return "", "bottom"


# -- the text's encoding ---------------------------------------------------------------------------------

_MULTI_BYTE = ("cp932", "gb18030", "cp949", "big5", "euc_jp")
"""The East Asian encodings (Shift-JIS's Windows form, GBK's superset, EUC-KR's, Big5, EUC-JP) that one
stray byte keeps from reading a whole track, and a second look finds past it (:func:`detect_encoding`)."""
_PREFERRED = ("cp1252", "cp1251", "cp1250", "iso8859-15", "iso8859-1")
"""Among single-byte guesses that read the text equally well (a short Western line reads alike in
Windows-1250 and -1252), the one taken: the most common first."""
_NOT_GUESSED = ("utf_16", "utf_16_be", "utf_16_le", "utf_32", "utf_32_be", "utf_32_le", "utf_7")
"""Encodings never guessed: subtitle text in them has a byte order mark (FFmpeg reads a UTF-16 file's)."""
_NAMES = {
    "utf-8": "UTF-8",
    "utf-16": "UTF-16",
    "cp932": "Shift-JIS",
    "shift_jis": "Shift-JIS",
    "euc_jp": "EUC-JP",
    "gb18030": "GB18030 (GBK)",
    "gbk": "GBK",
    "gb2312": "GB2312",
    "big5": "Big5",
    "cp949": "EUC-KR (CP949)",
    "euc_kr": "EUC-KR",
    "koi8-r": "KOI8-R",
}
_CLEAR = (0.1, 0.4)
"""A single-byte guess is taken at once when its reading is this clean (charset-normalizer's chaos at
most) and its letters fit a language this well (its coherence at least); garbage reads ~0.2 and ~0.25."""
_STRAY_CUES = 20
"""A second look leaves out at most one cue in this many (at least one) as holding stray bytes."""
_NO_TEXT = re.compile("[\x80-\x9f\ue000-\uf8ff]")
"""Characters a code page gives a byte with no letter in it: C1 controls (Latin-1's reading of the bytes
Windows-1252 leaves empty, Shift-JIS's 0x80) and private use (CP932's 0xA0 and 0xFD to 0xFF)."""


def encoding_name(encoding: str) -> str:
    """How an encoding is said to a person: ``Shift-JIS`` for ``cp932`` (its Windows form, which alpha2
    reads it as), ``Windows-1251`` for ``cp1251``, ``UTF-8``; else Python's name for it."""
    name = codecs.lookup(encoding).name
    if name in _NAMES:
        return _NAMES[name]
    if name.startswith("cp125") and len(name) == 6:
        return f"Windows-{name[2:]}"
    return name.upper() if name.startswith("iso8859") else name


def subtitle_codepage(codepage: object) -> str | None:
    """``codepage`` checked, as mpv's ``--sub-codepage`` takes it: None or ``auto`` (detect the encoding
    of text that is not UTF-8), an encoding's name (``cp1251``, ``shift_jis``, ``gbk``: text that is not
    UTF-8 is read in it), or ``+`` and a name (``+cp1250``: every cue is read in it, UTF-8 or not).
    Returned as Python names it (``+cp1250``, ``shift_jis``), None for auto.

    Raises:
        InvalidInputError: not a string, or no text encoding Python knows.
    """
    if codepage is None:
        return None
    if not isinstance(codepage, str):
        raise InvalidInputError(f"codepage takes an encoding's name (str) or None, got {codepage!r}")
    forced = codepage.strip().startswith("+")
    name = codepage.strip().removeprefix("+").strip()
    if name.lower() == "auto" and not forced:
        return None
    try:
        info = codecs.lookup(name)
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise InvalidInputError(
            f"codepage {codepage!r} is not a text encoding Python knows; give auto (the default: detect), "
            "a name (cp1251, shift_jis, gbk, euc-kr, latin-1 ...) or +name (read every cue in it)"
        )
    return ("+" if forced else "") + info.name


_replaced = threading.local()
"""The bytes :data:`_COUNTING` replaced in this thread's decode."""
_COUNTING = "alpha2-subtitles-count"


def _count_replaced(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    _replaced.count = getattr(_replaced, "count", 0) + max(exc.end - exc.start, 1)
    return "\ufffd", max(exc.end, exc.start + 1)


codecs.register_error(_COUNTING, _count_replaced)


def _read(data: bytes, encoding: str) -> tuple[str, int]:
    """``data`` read in ``encoding``, each run of bytes it cannot read replaced by U+FFFD, and how many
    bytes those were. Outside UTF-8 a C1 control or private-use character (:data:`_NO_TEXT`) is no
    text either: it counts too, as U+FFFD."""
    # One decode with a counting error handler: a loop that decoded on after each error was quadratic in
    # a cue's bad bytes, and the whole track is read so in each candidate (100k cues took 10 s).
    _replaced.count = 0
    try:
        text = data.decode(encoding, _COUNTING)
        bad = int(_replaced.count)
    finally:
        _replaced.count = 0
    if codecs.lookup(encoding).name != "utf-8":
        text, controls = _NO_TEXT.subn("\ufffd", text)
        bad += controls
    return text, bad


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _utf8_but_strays(data: bytes) -> bool:
    """Whether ``data``, not UTF-8, is UTF-8 with a few stray bytes: its UTF-8 characters past ASCII
    outnumber the bytes that are none (a Windows-1252, Shift-JIS or Cyrillic line has few or none)."""
    text = data.decode("utf-8", "replace")  # not _read: this runs on every cue, mostly not UTF-8
    kept = text.replace("\ufffd", "")
    bad = len(data) - len(kept.encode("utf-8"))
    return sum(1 for char in kept if char > "\x7f") > bad


def _guesses(data: bytes, only: Sequence[str] = ()) -> list[tuple[str, float, float]]:
    """charset-normalizer's readings of ``data`` (``only``: in these encodings) as (encoding, chaos,
    coherence), the best first; among single-byte ones that read it equally well, the most common
    (:data:`_PREFERRED`)."""
    from charset_normalizer import from_bytes
    from charset_normalizer.utils import is_multi_byte_encoding

    if only:
        matches = from_bytes(data, cp_isolation=list(only))
    else:
        matches = from_bytes(data, cp_exclusion=list(_NOT_GUESSED))
    found = [(codecs.lookup(m.encoding).name, float(m.chaos), float(m.coherence)) for m in matches]
    if not found or is_multi_byte_encoding(found[0][0]):
        return found
    chaos, coherence = found[0][1], found[0][2]
    ties = [
        f
        for f in found
        if not is_multi_byte_encoding(f[0]) and abs(f[1] - chaos) < 0.005 and abs(f[2] - coherence) <= 0.02
    ]
    ties.sort(key=lambda f: _PREFERRED.index(f[0]) if f[0] in _PREFERRED else len(_PREFERRED))
    return ties + [f for f in found if f not in ties]


def _clean(text: bytes, encoding: str) -> bool:
    """Whether ``text`` reads in ``encoding`` with no byte left unexplained."""
    return _read(text, encoding)[1] == 0


def _past_strays(texts: list[bytes]) -> str | None:
    """The East Asian encoding that reads all of ``texts`` but a few (one in :data:`_STRAY_CUES`), as
    charset-normalizer judges it on the texts that each such encoding reads cleanly; None if none does."""
    allowed = max(1, len(texts) // _STRAY_CUES)
    clean: dict[str, list[bool]] = {}
    for name in _MULTI_BYTE:
        read: list[bool] = []
        failed = 0
        for text in texts:  # an encoding past its allowance of cues with strays is dropped at once
            read.append(_clean(text, name))
            failed += not read[-1]
            if failed > allowed:
                break
        clean[name] = read
    fits = [name for name in _MULTI_BYTE if len(clean[name]) == len(texts) and 0 < sum(clean[name])]
    kept = [text for i, text in enumerate(texts) if all(clean[name][i] for name in fits)]
    if not fits or not kept:
        return None
    guesses = _guesses(b"\n".join(kept), only=fits)
    return guesses[0][0] if guesses else None


_SHORT_CANDIDATES = ("cp1252", "cp1251", "cp1250", "cp1253", "koi8-r")
"""The single-byte encodings weighed for a text too short for charset-normalizer (:func:`_plausible`),
beside its own guesses and :data:`_MULTI_BYTE`: where two read it equally well, the first is taken."""
_SHORT_BYTES = 24
"""Bytes past ASCII up to which a text with no language evidence is judged by :func:`_plausible`: a word or
two, where charset-normalizer's guess is arbitrary; past that its multi-byte guesses hold."""
_WORD = re.compile(r"[^\W\d_]+")


def _common_han(char: str, encoding: str) -> bool:
    """Whether a Han character is among the common ones of ``encoding``'s set (its first level: GB2312's
    3755, Big5's frequent 5401, JIS X 0208's first 2965); Korean text rarely has Han at all."""
    try:
        lead = char.encode(encoding)[0]
    except UnicodeEncodeError:
        return False
    if encoding == "gb18030":
        return 0xB0 <= lead <= 0xD7
    if encoding == "big5":
        return 0xA4 <= lead <= 0xC6
    if encoding == "cp932":
        return 0x88 <= lead <= 0x98
    return False


def _common_hangul(char: str) -> bool:
    try:
        pair = char.encode("cp949")
    except UnicodeEncodeError:
        return False
    return len(pair) == 2 and 0xB0 <= pair[0] <= 0xC8 and pair[1] >= 0xA1


def _reading_score(text: str, encoding: str) -> float:
    """How plausible ``text`` (a short text read in ``encoding``) is as subtitle text: the share of its
    characters past ASCII that sit as a language puts them. A Latin word holds an ASCII letter too
    (``Café``, not ``Ïðèâåò``), a Cyrillic or Greek word is all in its script with no capital after a
    small letter, kana and Hangul count as written, Han only where common (:func:`_common_han`)."""
    wide = [char for char in text if char > "\x7f"]
    if not wide:
        return 0.0
    good = 0.0
    for word in _WORD.findall(text):
        if word.isascii():
            continue
        scripts = {unicodedata.name(char, "?").split()[0] for char in word if char > "\x7f"}
        if scripts <= {"HIRAGANA", "KATAKANA", "HANGUL", "CJK", "KATAKANA-HIRAGANA"}:
            for char in word:
                if char <= "\x7f":
                    continue
                name = unicodedata.name(char, "?")
                if name.startswith("HANGUL"):  # KS X 1001's 2350 syllables, not CP949's 8822 added
                    good += 1.0 if _common_hangul(char) else 0.0
                elif not name.startswith("CJK"):
                    good += 1.0  # kana: a reading in them is seldom an accident
                elif _common_han(char, encoding):
                    good += 0.9
            continue
        # Small letters, a capital first, or all capitals (less likely: 'БВБВ' is Big5's '謝謝' misread)
        weight = 1.0 if word[1:].islower() or len(word) == 1 else 0.6 if word.isupper() else 0.0
        wide_letters = sum(1 for char in word if char > "\x7f")
        if scripts == {"LATIN"} and any(c.isascii() for c in word):
            good += weight * wide_letters
        elif len(scripts) == 1 and scripts <= {"CYRILLIC", "GREEK"} and wide_letters == len(word):
            good += weight * wide_letters
    return good / len(wide)


def _plausible(data: bytes, guesses: Sequence[str]) -> str | None:
    """The encoding that reads a short ``data`` most plausibly (:func:`_reading_score`) among
    charset-normalizer's ``guesses`` and :data:`_SHORT_CANDIDATES`, read with no byte unexplained; ties go
    to the single-byte code pages, most common first, then to charset-normalizer's order."""
    names = list(dict.fromkeys([*_SHORT_CANDIDATES, *guesses, *_MULTI_BYTE]))
    scored = []
    for order, name in enumerate(names):
        text, bad = _read(data, name)
        if bad == 0:
            scored.append((-_reading_score(text, name), order, name))
    if not scored or min(scored)[0] == 0:  # nothing reads as words: charset-normalizer's guess stands
        return guesses[0] if guesses else None
    return min(scored)[2]


def detect_encoding(texts: bytes | Sequence[bytes]) -> str | None:
    """The encoding that ``texts`` (a track's cues that are not UTF-8, or one text) are most likely in,
    as Python names it (``cp932`` for Shift-JIS, ``gb18030`` for GBK, ``cp949`` for EUC-KR, ``cp1251``);
    None when nothing reads them.

    charset-normalizer guesses (a pure-Python library; mpv asks uchardet). It reads strictly: one stray
    byte in a Shift-JIS file rules Shift-JIS out, and a single-byte code page reads the rest as garbage.
    So where its guess is weak (none, or a single-byte one whose reading is not clean and fitting a
    language, :data:`_CLEAR`), a second look takes the East Asian encodings that read all cues but a few
    (one in twenty, at least one) and asks charset-normalizer which of them reads the cues they all read
    best: the cues with the strays are read in it too, their strays as U+FFFD.
    """
    from charset_normalizer.utils import is_multi_byte_encoding

    cues = [texts] if isinstance(texts, bytes) else [bytes(text) for text in texts]
    strict = _guesses(b"\n".join(cues))
    joined = b"\n".join(cues)
    if strict and strict[0][2] == 0.0 and sum(byte > 0x7F for byte in joined) <= _SHORT_BYTES:
        # No language evidence at all (a word or two: 'Да', 'Café'), where charset-normalizer's first
        # guess is arbitrary: Big5 for Windows-1251's 'Привет', Windows-1251 for 'Café'.
        return _plausible(b"\n".join(cues), [found[0] for found in strict])
    if strict:
        name, chaos, coherence = strict[0]
        if is_multi_byte_encoding(name) or (chaos <= _CLEAR[0] and coherence >= _CLEAR[1]):
            return name
    second = _past_strays(cues)
    if second is not None:
        return second
    return strict[0][0] if strict else None


@dataclass(frozen=True)
class SubtitleCues:
    """A text subtitle stream's cues and how their text was read (:func:`read_subtitles`)."""

    cues: list[SubtitleCue]
    """The cues, sorted by start."""
    encoding: str = "utf-8"
    """The encoding the text was read in, as Python names it: ``utf-8``; for text that was not, the one
    detected or given (``cp932``: Shift-JIS, ``gb18030``: GBK, ``cp949``: EUC-KR, ``cp1251`` ...)."""
    found_by: str = "utf-8"
    """How :attr:`encoding` was chosen: ``utf-8`` (the text is UTF-8), ``bom`` (the file starts with a
    byte order mark), ``detected`` (not UTF-8: charset-normalizer's guess), ``given`` (the ``codepage``
    argument), ``fallback`` (nothing read it: Windows-1252, as mpv falls back)."""
    converted_cues: int = 0
    """Cues read in :attr:`encoding` where it is not UTF-8 (a file mixing UTF-8 cues in keeps those)."""
    replaced_bytes: int = 0
    """Bytes that the encoding does not explain, each run shown as U+FFFD."""
    left_out_cues: int = 0
    """Cues FFmpeg's decoder refused (a damaged mov_text box) and that were left out."""

    @property
    def summary(self) -> str:
        """A few words on the reading, for a track's line (``Shift-JIS, detected; 1 byte replaced``); empty
        for a track that is UTF-8 whole."""
        parts = []
        if self.found_by in ("detected", "given", "fallback"):
            parts.append(f"{encoding_name(self.encoding)}, {self.found_by}")
        if self.replaced_bytes:
            parts.append(f"{self.replaced_bytes} byte{'s' * (self.replaced_bytes != 1)} replaced")
        if self.left_out_cues:
            parts.append(f"{self.left_out_cues} cue{'s' * (self.left_out_cues != 1)} left out")
        return "; ".join(parts)

    @property
    def notes(self) -> tuple[str, ...]:
        """What was done to the text, a sentence each; none for a track that is UTF-8 whole."""
        said: list[str] = []
        name = encoding_name(self.encoding)
        how = {
            "detected": "detected (charset-normalizer)",
            "given": "as the codepage given says",
            "fallback": "no encoding was detected, so Windows-1252 (mpv's fallback)",
        }
        if self.found_by in how:
            cues = f"{self.converted_cues} cue{'s' * (self.converted_cues != 1)}"
            said.append(f"text not in UTF-8: {cues} read as {name} ({self.encoding}), {how[self.found_by]}")
        if self.replaced_bytes:
            count = f"{self.replaced_bytes} byte{'s' * (self.replaced_bytes != 1)}"
            said.append(f"{count} that {name} does not explain shown as U+FFFD (\ufffd)")
        if self.left_out_cues:
            count = f"{self.left_out_cues} cue{'s' * (self.left_out_cues != 1)}"
            said.append(f"{count} that FFmpeg's decoder refused left out")
        return tuple(said)


_UTF16_BOMS = (b"\xfe\xff", b"\xff\xfe")


def _split(codec: str, data: bytes) -> tuple[bytes, bytes, bytes]:
    """A packet as (head, text, tail): mov_text's starts with the text's length (2 bytes) and ends with
    style boxes; a plain-text decoder's is its text."""
    if codec != "mov_text":
        return b"", data, b""
    if len(data) < 2:
        return data, b"", b""
    length = int.from_bytes(data[:2], "big")
    return data[:2], data[2 : 2 + length], data[2 + length :]


def _join(codec: str, head: bytes, text: bytes, tail: bytes) -> bytes:
    if codec == "mov_text":
        text = text[:0xFFFF]
        head = len(text).to_bytes(2, "big")
    return head + text + tail


def _file_start(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read(4)
    except OSError:
        return b""


_WIDE_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)
_MAX_WIDE_BYTES = 256 << 20
"""A UTF-16 / UTF-32 subtitle file up to this size is read into memory as UTF-8 (a film's is some MB)."""


def _open_track_file(where: str) -> tuple[av.container.InputContainer, str | None]:
    """``where`` opened for its cues, and the wide encoding (``utf-16``, ``utf-32``) a subtitle file alone
    was in, read by its byte order mark, where it was one: such a file is given to FFmpeg as UTF-8 from
    memory, as mpv converts it, because FFmpeg's own UTF-16 reading of an ``.srt`` loses the first
    character of each cue (it peeks at the line after the times)."""
    container = _open(where)
    start = _file_start(where)
    wide = next((name for mark, name in _WIDE_BOMS if start.startswith(mark)), None)
    if wide is None or len(container.streams) != len(container.streams.subtitles):
        return container, None
    form = str(container.format.name).split(",")[0]
    container.close()
    with open(where, "rb") as file:
        data = file.read(_MAX_WIDE_BYTES + 1)
    if len(data) > _MAX_WIDE_BYTES:
        limit = _MAX_WIDE_BYTES >> 20
        raise InvalidInputError(f"{where!r} is a {wide.upper()} subtitle file over {limit} MiB")
    text = data.decode(wide, "replace").encode("utf-8")
    try:
        return open_input(io.BytesIO(text), format=form, metadata_errors="replace"), wide
    except av.error.FFmpegError as exc:
        raise from_ffmpeg_open(exc, repr(where)) from exc


def _plan(texts: list[bytes], codepage: str | None, bom: bool) -> tuple[str, str, list[bool]]:
    """(encoding, how it was chosen, whether each text is read in it) for a track's cue texts; the
    others are UTF-8 (those with a few stray bytes among them get U+FFFD for these)."""
    forced = codepage is not None and codepage.startswith("+")
    if forced and codepage is not None:
        return codepage[1:], "given", [bool(t) for t in texts]
    if codepage is not None:
        convert = [not _utf8(t) for t in texts]
        return (codepage, "given", convert) if any(convert) else ("utf-8", "utf-8", convert)
    if bom:
        return "utf-8", "bom", [False] * len(texts)
    convert = [not _utf8(t) and not _utf8_but_strays(t) for t in texts]
    if not any(convert):
        return "utf-8", "utf-8", convert
    found = detect_encoding([t for t, c in zip(texts, convert, strict=True) if c])
    return (found, "detected", convert) if found else ("cp1252", "fallback", convert)


class _Recoder:
    """Turns a track's packets into UTF-8 for FFmpeg's decoder, as :func:`_plan` chose, counting."""

    def __init__(self, codec: str, packets: list[bytes], codepage: str | None, bom: bool) -> None:
        self.codec = codec
        self.active = codec in _PLAIN_TEXT_CODECS or codec == "mov_text"
        texts = [_split(codec, p)[1] for p in packets] if self.active else []
        if codec == "mov_text":  # 3GPP's UTF-16 cues (a byte order mark first) are said by their mark
            texts = [b"" if text.startswith(_UTF16_BOMS) else text for text in texts]
        self.encoding, self.found_by, convert = _plan(texts, codepage, bom)
        self.convert = convert
        self.converted = 0
        self.replaced = 0

    def text(self, data: bytes, encoding: str) -> str:
        text, bad = _read(data, encoding)
        self.replaced += bad
        return text

    def packet(self, index: int, data: bytes) -> bytes | None:
        """Packet ``index``'s bytes as the decoder is to get them; None: unchanged."""
        if not self.active:
            return None
        head, text, tail = _split(self.codec, data)
        if self.codec == "mov_text" and text.startswith(_UTF16_BOMS):
            return _join(self.codec, head, self.text(text, "utf-16").encode("utf-8"), tail)  # 3GPP's UTF-16
        if self.convert[index]:
            self.converted += 1
            return _join(self.codec, head, self.text(text, self.encoding).encode("utf-8"), tail)
        if _utf8(text):
            return None
        return _join(self.codec, head, self.text(text, "utf-8").encode("utf-8"), tail)

    def header(self, extradata: bytes | None) -> str | None:
        """An ASS script header (styles' names) in the track's encoding where it is not UTF-8."""
        if not extradata:
            return None
        if _utf8(extradata) or self.encoding == "utf-8":
            return extradata.decode("utf-8", "replace")
        return extradata.decode(self.encoding, "replace")


def read_subtitles(
    source: str | os.PathLike[str],
    stream_index: int | None = None,
    *,
    stop: Callable[[], bool] | None = None,
    codepage: str | None = None,
) -> SubtitleCues:
    """Every cue of a text subtitle stream of ``source``, sorted by start, and how its text was read.

    Text that is not UTF-8 is read in the encoding detected (charset-normalizer; :func:`detect_encoding`)
    or given, and said (:attr:`SubtitleCues.encoding`, :attr:`~SubtitleCues.found_by`,
    :attr:`~SubtitleCues.notes`); bytes that the encoding does not explain become U+FFFD and are counted
    (:attr:`~SubtitleCues.replaced_bytes`), the other cues kept. A cue FFmpeg's decoder refuses is left out
    and counted (:attr:`~SubtitleCues.left_out_cues`). This is done in Python rather than with FFmpeg's
    ``sub_charenc`` option (iconv), which converts a whole packet: mov_text's binary length and boxes with
    it (such a cue still fails), and a cue with a bad byte as a whole.

    Args:
        source: A media file, or a subtitle file (``.srt``, ``.ass``, ``.vtt``).
        stream_index: The stream's index in the container; None: the first subtitle stream.
        stop: Called between packets; returning True ends the reading early (with the cues so far).
        codepage: As mpv's ``--sub-codepage`` (:func:`subtitle_codepage`): None or ``auto`` detects the
            encoding of text that is not UTF-8; a name (``cp1251``, ``shift_jis``) reads such text in it;
            ``+name`` reads every cue in it.

    Raises:
        InvalidInputError: no such subtitle stream, or a bitmap one; ``source`` is not a path; an unknown
            ``codepage``.
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """
    if stream_index is not None and (isinstance(stream_index, bool) or not isinstance(stream_index, int)):
        # '2' matched no stream and was said as 'no subtitle stream 2' beside a stream 2 (an outside pass)
        raise InvalidInputError(
            f"stream_index must be an int (the stream's index) or None, got {stream_index!r}"
        )
    where = subtitle_path(source, "read_cues")
    codepage = subtitle_codepage(codepage)
    container, wide = _open_track_file(where)
    with container:
        streams = list(container.streams.subtitles)
        chosen = [s for s in streams if stream_index is None or s.index == stream_index][:1]
        if not chosen and stream_index is None:
            raise InvalidInputError(f"{where!r} has no subtitle streams")
        if not chosen:
            have = ", ".join(str(s.index) for s in streams) or "none"
            raise InvalidInputError(
                f"{where!r} has no subtitle stream {stream_index} (its subtitle streams: {have})"
            )
        stream = chosen[0]
        info = _info(where, stream)
        if not info.text:
            raise InvalidInputError(f"subtitle stream {stream.index} of {where!r} is a bitmap ({info.codec})")
        # The whole track first (a film's is some hundred kilobytes): its encoding is guessed from all of it.
        packets: list[Any] = []
        try:
            for packet in container.demux(stream):
                if stop is not None and stop():
                    break
                if packet.pts is not None and packet.time_base is not None:
                    packets.append(packet)
        except av.error.FFmpegError as exc:
            raise from_ffmpeg(exc, f"reading subtitles of {where!r}") from exc
        # A subtitle file alone with a UTF-8 byte order mark (FFmpeg skips it) is UTF-8, whatever else.
        bom = wide is not None or (
            len(container.streams) == len(streams) and _file_start(where).startswith(b"\xef\xbb\xbf")
        )
        datas = [bytes(packet) for packet in packets]
        recoder = _Recoder(str(stream.codec_context.name), datas, codepage, bom)
        styles = style_placements(recoder.header(getattr(stream.codec_context, "extradata", None)))
        cues: list[tuple[float, float | None, str, str]] = []
        left_out = 0
        refused: av.error.FFmpegError | None = None
        for index, packet in enumerate(packets):
            if stop is not None and stop():
                break
            start = float(packet.pts * packet.time_base)
            end = start + float(packet.duration * packet.time_base) if packet.duration else None
            fed: Any = packet
            data = recoder.packet(index, datas[index])
            if data is not None:  # the text in UTF-8, the timing kept
                fed = av.Packet(data)
                fed.pts, fed.dts, fed.duration = packet.pts, packet.dts, packet.duration
                fed.time_base = packet.time_base
            try:
                items = list(stream.decode(fed))
            except av.error.InvalidDataError as exc:
                left_out += 1  # one damaged cue; the track goes on
                refused = refused or exc
                continue
            except av.error.FFmpegError as exc:
                raise from_ffmpeg(exc, f"reading subtitles of {where!r}") from exc
            placed: dict[str, list[str]] = {}
            for text, placement in (_event_text(item, styles) for item in items):
                if text:
                    placed.setdefault(placement, []).append(text)
            for placement, texts in placed.items():
                cues.append((start, end, "\n".join(texts), placement))
        if refused is not None and left_out == len(packets):  # none read: the track, not a cue, is bad
            raise from_ffmpeg(refused, f"reading subtitles of {where!r}") from refused
    cues.sort(key=lambda cue: cue[0])
    out = []
    for index, (start, end, text, placement) in enumerate(cues):
        if end is None or end <= start:
            following = next((c[0] for c in cues[index + 1 :] if c[3] == placement), start + _DEFAULT_CUE_S)
            end = min(start + _DEFAULT_CUE_S, max(following, start + 0.1))
        out.append(SubtitleCue(start, end, text, placement))
    return SubtitleCues(
        cues=out,
        encoding=wide or recoder.encoding,
        found_by=recoder.found_by,
        converted_cues=recoder.converted,
        replaced_bytes=recoder.replaced,
        left_out_cues=left_out,
    )


def read_cues(
    source: str | os.PathLike[str],
    stream_index: int | None = None,
    *,
    stop: Callable[[], bool] | None = None,
    codepage: str | None = None,
) -> list[SubtitleCue]:
    """Every cue of a text subtitle stream of ``source``, sorted by start: :func:`read_subtitles`'s cues
    (which also says how the text was read: the encoding detected where it is not UTF-8).

    Args:
        source: A media file, or a subtitle file (``.srt``, ``.ass``, ``.vtt``).
        stream_index: The stream's index in the container; None: the first subtitle stream.
        stop: Called between packets; returning True ends the reading early (with the cues so far).
        codepage: None or ``auto`` (detect), an encoding's name, or ``+name`` (:func:`read_subtitles`).

    Raises:
        InvalidInputError: no such subtitle stream, or a bitmap one; ``source`` is not a path; an unknown
            ``codepage``.
        MediaNotFoundError, MediaFormatError: the file is missing or not media.
    """
    return read_subtitles(source, stream_index, stop=stop, codepage=codepage).cues
