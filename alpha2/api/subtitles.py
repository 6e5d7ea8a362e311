"""Subtitles for a play run: the input's text subtitle tracks, a sidecar file, ``--sub FILE``; one shown.

:func:`open_subtitles` gathers the tracks as mpv does: a file given with ``--sub`` first, then sidecar
files with the input's name (``clip.srt``, ``clip.ass``, ``clip.ssa``, ``clip.vtt`` next to ``clip.mkv``),
then the input's own text subtitle streams (SubRip, ASS / SSA, mov_text, WebVTT); the first is selected
(none with ``enabled=False``) and :meth:`Subtitles.cycle` steps through them and "off". A track's cues are
read (:func:`alpha2.ffmpeg_bridge.subtitles.read_cues`) on a thread of its own when it is first selected,
so a long film starts playing at once; :meth:`Subtitles.text_at` gives the text on display at a time.

Text that is not UTF-8 (a Shift-JIS, GBK or Windows-1251 ``.srt``; a mov_text track written in one) is
read as mpv's ``--sub-codepage`` reads it: its encoding detected (``codepage=None`` or ``"auto"``) or
named (``codepage="cp1251"``; ``"+cp1250"`` for every cue, UTF-8 or not), and said: the track's
:attr:`SubtitleTrack.encoding` and :attr:`SubtitleTrack.notes`, and its line in
:meth:`Subtitles.describe` (``Subtitles: 1/1 film.srt (Shift-JIS, detected)``). A byte no encoding
explains is shown as U+FFFD and counted there; the track's other cues are kept.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from alpha2.ffmpeg_bridge.subtitles import (
    SubtitleCue,
    SubtitleTrackInfo,
    read_subtitles,
    subtitle_codepage,
    subtitle_path,
    subtitle_tracks,
)
from alpha2.gpu.errors import Error, InvalidInputError

__all__ = [
    "SIDECAR_EXTENSIONS",
    "SubtitleCue",
    "SubtitleTrack",
    "Subtitles",
    "check_subtitle_file",
    "open_subtitles",
    "sidecar_files",
    "subtitle_codepage",
]

SIDECAR_EXTENSIONS = (".srt", ".ass", ".ssa", ".vtt")
"""Subtitle files picked up next to the input, same name."""

_LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})?")
"""A language between the input's name and a sidecar's extension (``en``, ``eng``, ``pt-BR``)."""


def sidecar_files(source: str | os.PathLike[str]) -> list[str]:
    """The subtitle files next to ``source`` with its name (``clip.srt`` for ``clip.mkv``), in
    :data:`SIDECAR_EXTENSIONS` order, then those with a language between the name and the extension
    (``clip.en.srt``, ``clip.pt-BR.ass``), by name, as mpv's ``--sub-auto=exact`` finds them."""
    path = os.fspath(source)
    stem = os.path.splitext(path)[0]
    found = []
    for extension in SIDECAR_EXTENSIONS:
        for candidate in (stem + extension, stem + extension.upper()):
            if os.path.isfile(candidate) and candidate != path:
                found.append(candidate)
                break
    folder, name = os.path.split(stem)
    try:
        entries = sorted(os.listdir(folder or "."))
    except OSError:
        return found
    for entry in entries:
        base, extension = os.path.splitext(entry)
        if extension.lower() not in SIDECAR_EXTENSIONS or not base.startswith(name + "."):
            continue
        candidate = os.path.join(folder, entry)
        if _LANGUAGE_TAG.fullmatch(base[len(name) + 1 :]) and os.path.isfile(candidate):
            found.append(candidate)
    return found


@dataclass
class SubtitleTrack:
    """One track: where it comes from and, once read, its cues."""

    info: SubtitleTrackInfo
    """The stream (a subtitle file's is its only stream)."""
    external: bool
    """A file of its own (``--sub`` or a sidecar), not a stream of the input."""
    cues: list[SubtitleCue] = field(default_factory=list)
    """The cues, sorted by start (empty until read)."""
    error: str | None = None
    """Why the cues could not be read, if they could not."""
    codepage: str | None = None
    """How its text is to be read where it is not UTF-8: None (detect), an encoding, ``+`` an encoding
    (every cue), as :func:`~alpha2.ffmpeg_bridge.subtitles.subtitle_codepage` takes it."""
    encoding: str | None = None
    """Once read: the encoding its text was read in, as Python names it (``utf-8``; ``cp932`` for
    Shift-JIS, ``gb18030`` for GBK, ``cp1251`` ... where it was not UTF-8)."""
    notes: tuple[str, ...] = ()
    """Once read: what was done to its text, a sentence each (the encoding detected or given, bytes
    shown as U+FFFD, cues left out); none for a track that is UTF-8 whole."""
    summary: str = ""
    """Once read: :attr:`notes` in a few words for the track's line (``Shift-JIS, detected``)."""
    _starts: list[float] = field(default_factory=list)
    _reach: list[float] = field(default_factory=list)
    """The latest end among the cues up to each one (a long cue stays on under many short ones)."""
    _loaded: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _stop: bool = False

    @property
    def label(self) -> str:
        """How the track is named on screen: the file's name, or the stream's language, title and codec."""
        if self.external:
            return os.path.basename(self.info.source)
        parts = [p for p in (self.info.language, self.info.title) if p]
        return " ".join([*parts, f"({self.info.codec})"])

    @property
    def loaded(self) -> bool:
        """Whether the cues have been read (or failed to be)."""
        return self._loaded.is_set()

    def load(self) -> None:
        """Start reading the cues on a thread of their own (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._read, name="alpha2 subtitles", daemon=True)
            self._thread.start()

    def _read(self) -> None:
        try:
            reading = read_subtitles(
                self.info.source, self.info.stream_index, stop=lambda: self._stop, codepage=self.codepage
            )
            cues = reading.cues
            self.encoding, self.notes, self.summary = reading.encoding, reading.notes, reading.summary
            self._starts = [c.start_s for c in cues]
            self._reach = list(itertools.accumulate((c.end_s for c in cues), max))
            self.cues = cues
        except Error as exc:
            self.error = str(exc)
        finally:
            self._loaded.set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until the cues are read (starting the reading); whether they are."""
        self.load()
        return self._loaded.wait(timeout_s)

    def text_at(self, seconds: float) -> str | None:
        """The text on display at ``seconds`` (overlapping cues one under the other), or None."""
        placed = self.placed_at(seconds)
        return "\n".join(placed.values()) if placed else None

    def placed_at(self, seconds: float) -> dict[str, str]:
        """The text on display at ``seconds`` by where it goes (``top``, ``middle``, ``bottom``: a cue's
        :attr:`~alpha2.ffmpeg_bridge.subtitles.SubtitleCue.placement`), overlapping cues one under the
        other; empty when none is."""
        cues, starts, reach = self.cues, self._starts, self._reach
        if not cues or len(starts) != len(cues) or len(reach) != len(cues):
            return {}
        end = bisect.bisect_right(starts, seconds)
        first = bisect.bisect_right(reach, seconds)  # every cue before it has ended
        placed: dict[str, list[str]] = {}
        for cue in cues[first:end]:
            if cue.end_s > seconds:
                placed.setdefault(cue.placement, []).append(cue.text)
        return {where: "\n".join(texts) for where, texts in placed.items()}

    def close(self) -> None:
        """Stop reading (the thread ends at its next packet)."""
        self._stop = True


class Subtitles:
    """The tracks of one play run, one of them (or none) selected."""

    def __init__(self, tracks: Sequence[SubtitleTrack], selected: int | None = 0) -> None:
        self.tracks = list(tracks)
        """Every track, in the order ``j`` steps through them."""
        self.selected_index: int | None = None
        """The selected track's index in :attr:`tracks`, None: off."""
        self.select(selected if self.tracks else None)

    @property
    def selected(self) -> SubtitleTrack | None:
        """The track shown, if any."""
        return None if self.selected_index is None else self.tracks[self.selected_index]

    def select(self, index: int | None) -> SubtitleTrack | None:
        """Show track ``index`` (None: none); its cues start loading."""
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise InvalidInputError(f"select takes a track's index (an int) or None, got {index!r}")
        if index is not None and not 0 <= index < len(self.tracks):
            raise InvalidInputError(f"subtitle track {index} does not exist; there are {len(self.tracks)}")
        self.selected_index = index
        track = self.selected
        if track is not None:
            track.load()
        return track

    def cycle(self) -> SubtitleTrack | None:
        """The next track, after the last none, then the first again (``j``)."""
        if not self.tracks:
            return None
        if self.selected_index is None:
            return self.select(0)
        following = self.selected_index + 1
        return self.select(following if following < len(self.tracks) else None)

    def describe(self) -> str:
        """``Subtitles: 1/2 clip.srt``, ``Subtitles: off``, or ``Subtitles: none``; once read, what was done
        to a track's text that is not UTF-8 follows (``Subtitles: 1/1 clip.srt (Shift-JIS, detected)``)."""
        if not self.tracks:
            return "Subtitles: none"
        track = self.selected
        if track is None or self.selected_index is None:
            return "Subtitles: off"
        said = track.error or track.summary  # why it failed, else the encoding read where not UTF-8
        note = f" ({said})" if said else ""
        return f"Subtitles: {self.selected_index + 1}/{len(self.tracks)} {track.label}{note}"

    def text_at(self, seconds: float) -> str | None:
        """The selected track's text at ``seconds``, or None."""
        track = self.selected
        return None if track is None else track.text_at(seconds)

    def placed_at(self, seconds: float) -> dict[str, str]:
        """The selected track's text at ``seconds`` by where it goes (:meth:`SubtitleTrack.placed_at`)."""
        track = self.selected
        return {} if track is None else track.placed_at(seconds)

    def close(self) -> None:
        """Stop every track's reading."""
        for track in self.tracks:
            track.close()


def _file_track(path: str, codepage: str | None = None) -> SubtitleTrack:
    tracks = [t for t in subtitle_tracks(path) if t.text]
    if not tracks:
        raise InvalidInputError(f"{path!r} has no text subtitles (SubRip, ASS / SSA, WebVTT)")
    return SubtitleTrack(tracks[0], external=True, codepage=codepage)


def check_subtitle_file(path: str | os.PathLike[str], *, codepage: str | None = None) -> None:
    """Raise, with why, where ``path`` cannot be read as a subtitle file (``alpha2 play --sub``'s check
    before the window opens; the player then plays without it as the first frame is up).

    Args:
        path: The subtitle file.
        codepage: The encoding it is to be read in, checked too (:func:`subtitle_codepage`).

    Raises:
        InvalidInputError: no such file, not a subtitle file, or no text subtitles in it; not a path; a
            codepage that names no text encoding.
    """
    where = subtitle_path(path, "check_subtitle_file")
    subtitle_codepage(codepage)
    if not os.path.isfile(where):
        raise InvalidInputError(f"--sub {where!r}: no such file")
    try:
        _file_track(where)
    except Error as exc:
        raise InvalidInputError(f"--sub {where!r} cannot be read as subtitles: {exc.message}") from exc


def open_subtitles(
    source: str | os.PathLike[str],
    *,
    sub: str | os.PathLike[str] | None = None,
    enabled: bool = True,
    codepage: str | None = None,
) -> Subtitles:
    """The subtitle tracks for playing ``source``: ``sub`` (a file), sidecar files, the input's own text
    streams; the first selected unless ``enabled`` is False.

    Args:
        source: The file played.
        sub: A subtitle file to show first (``--sub``).
        enabled: Whether the first track is selected (False: off until :meth:`Subtitles.cycle`).
        codepage: How text that is not UTF-8 is read, in every track, as mpv's ``--sub-codepage``: None
            or ``auto`` detects its encoding; a name (``cp1251``, ``shift_jis``, ``gbk``) reads it in that
            encoding; ``+`` and a name reads every cue in it, UTF-8 or not (:func:`subtitle_codepage`).

    Raises:
        InvalidInputError, MediaNotFoundError, MediaFormatError: ``sub`` cannot be read as subtitles;
            ``source`` or ``sub`` is not a path; ``codepage`` names no text encoding.
    """
    where = subtitle_path(source, "open_subtitles")
    sub_path = None if sub is None else subtitle_path(sub, "open_subtitles' sub")
    codepage = subtitle_codepage(codepage)
    tracks: list[SubtitleTrack] = []
    if sub_path is not None:
        tracks.append(_file_track(sub_path, codepage))
    for path in sidecar_files(where):
        if sub_path is not None and os.path.abspath(path) == os.path.abspath(sub_path):
            continue
        try:
            tracks.append(_file_track(path, codepage))
        except Error:
            pass  # a stray file with a subtitle extension is not worth stopping the film for
    try:
        embedded = [
            SubtitleTrack(info, external=False, codepage=codepage)
            for info in subtitle_tracks(where)
            if info.text
        ]
    except Error:
        embedded = []
    # A stream the file marks as default comes first among its own.
    embedded.sort(key=lambda track: not track.info.default)
    tracks.extend(embedded)
    return Subtitles(tracks, 0 if enabled and tracks else None)
