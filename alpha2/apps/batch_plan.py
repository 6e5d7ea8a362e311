"""What ``alpha2 batch`` will do: the inputs, their outputs, the manifest that lets a run resume, retries.

Pure planning, no GPU and no FFmpeg:

* :func:`expand_inputs` turns folders, globs and list files into input files, each with the output it
  gets under ``--out`` (the layout below the inputs' common folder is kept, in the batch's one container,
  ``.mp4`` unless ``--container`` says otherwise, whatever each input's own: an input's extension is
  often one alpha2 reads but does not write, such as ``.flv``, ``.ogv`` or ``.mpg``);
* :func:`input_fingerprint` is a fast hash of an input: its size, its modification time and the first
  and last MiB of its bytes (not the whole file: a change in the middle that keeps the size and the
  time goes unseen, which is the price of not reading terabytes again to resume);
* :func:`settings_fingerprint` hashes the transcode options and the output's extension;
* :class:`Manifest` (``alpha2-batch.json`` in the output folder) records each finished output with
  both fingerprints; a resumed run skips the outputs whose record still matches. A manifest that
  cannot be parsed (damaged, cut short, nested past what the parser takes) is set aside as
  ``alpha2-batch.json.corrupt-<time>`` and the run starts afresh, saying so;
* :func:`is_transient` says which failures are retried.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import enum
import fractions
import glob
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from alpha2.api.atomic import open_regular, write_bytes_atomic
from alpha2.api.transcode_choices import AUDIO_CONTAINERS, OUTPUT_CONTAINERS
from alpha2.gpu.errors import ErrorKind, InvalidInputError

if TYPE_CHECKING:
    from alpha2.api.transcode_plan import TranscodeOptions

__all__ = [
    "AUDIO_EXTENSIONS",
    "DEFAULT_CONTAINER",
    "LIST_EXTENSIONS",
    "MANIFEST_NAME",
    "STAGING_NAME",
    "VIDEO_EXTENSIONS",
    "BatchItem",
    "DeviceChoice",
    "FileResult",
    "FileStatus",
    "InputScan",
    "Manifest",
    "container_extension",
    "expand_inputs",
    "input_fingerprint",
    "is_transient",
    "one_line",
    "plan_items",
    "printable",
    "scan_inputs",
    "settings_fingerprint",
]

VIDEO_EXTENSIONS = frozenset(
    (
        ".mp4 .m4v .mov .qt .mkv .mk3d .webm .avi .divx .nut .ogg .ogv .ogm .mxf .wmv .asf .flv .f4v "
        ".ts .m2t .mts .m2ts .vob .mpg .mpeg .mpe .m2v .3gp .3g2 .dv .dif .rm .rmvb .wtv .y4m .ivf"
    ).split()
)
"""What a folder is searched for (case-insensitive): the video containers FFmpeg commonly reads. A glob or
a list file may name any file. ``.ogg`` is taken although it often holds audio alone: such a file fails
with its reason in the summary rather than being passed over unsaid."""

AUDIO_EXTENSIONS = frozenset(
    (
        ".mp3 .m4a .m4b .aac .flac .wav .wave .w64 .aif .aiff .aifc .caf .opus .oga .spx .mka .wma .ac3 "
        ".eac3 .dts .mp2 .ape .wv .tta .mpc .amr .au .snd"
    ).split()
)
"""What a folder is searched for besides :data:`VIDEO_EXTENSIONS` where the batch writes sound alone
(``--container mp3``): the audio files FFmpeg commonly reads (a video's audio is taken too)."""

LIST_EXTENSIONS = frozenset({".txt", ".lst", ".list"})
"""An input with one of these extensions is a list file: one path a line, ``#`` starts a comment."""

MANIFEST_NAME = "alpha2-batch.json"
"""The manifest's file name in the output folder."""

STAGING_NAME = ".alpha2-staging"
"""The folder in the output folder where outputs are written before they are renamed into place."""

FINGERPRINT_EDGE_BYTES = 1 << 20
"""How much of each end of an input the fingerprint reads."""

MANIFEST_VERSION = 1

DEFAULT_CONTAINER = ".mp4"
"""The outputs' container when ``--container`` does not name one."""


class DeviceChoice(enum.Enum):
    """What the workers run on."""

    AUTO = "auto"
    """GPUs when the machine has any, else the CPU."""
    GPU = "gpu"
    """GPUs; an error when there is none."""
    CPU = "cpu"
    """The CPU (lavapipe renders when something must be rendered), GPUs or not."""


def printable(text: str) -> str:
    """``text`` as a terminal can print it: the bytes of a file name that are not UTF-8 (which Python holds
    as lone surrogates, ``os.fsdecode``'s way) become backslash escapes, ``bad\\xffname.mp4``.

    A name's own characters are kept and only its undecodable bytes are escaped: writing the surrogates
    themselves fails on a UTF-8 terminal. A character a terminal does not print as itself (a newline, a
    tab, an escape) is escaped as ``repr`` escapes it, ``a\\nb.mp4``. JSON (``--json``, the manifest)
    keeps undecodable bytes as ``\\udcff`` escapes instead, which read back as the same name.
    """
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to (from a hand-edited manifest)
        shown = text.encode("utf-8", "backslashreplace").decode("utf-8")
    else:
        shown = raw.decode("utf-8", "backslashreplace")
    if shown.isprintable():
        return shown
    # A newline, a tab or an escape sequence in a name broke the table's rows and the one-line notices:
    # escaped as repr escapes it (a\nb.mkv).
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in shown)


def one_line(message: str) -> str:
    """The first line of ``message``, whitespace collapsed (a failure's reason in the summary)."""
    return " ".join(str(message).strip().split("\n")[0].split()) or "unknown error"


class FileStatus(enum.Enum):
    """What became of one input."""

    DONE = "done"
    """Transcoded in this run."""
    SKIPPED = "skipped"
    """Already done by an earlier run, with the same input and settings (the manifest says so)."""
    FAILED = "failed"
    """Failed after its attempts; the reason is in the result."""


@dataclass(frozen=True)
class BatchItem:
    """One input and where its output goes."""

    key: str
    """The output's path relative to the output folder (the manifest's key)."""
    input: str
    """Absolute input path."""
    output: str
    """Absolute output path."""


@dataclass
class FileResult:
    """What happened to one input (a row of the summary, an entry of ``--json``)."""

    item: BatchItem
    """The input and its output."""
    status: FileStatus
    """Done, skipped or failed."""
    attempts: int = 0
    """Attempts made in this run (0: skipped)."""
    frames: int = 0
    """Frames transcoded."""
    seconds: float = 0.0
    """The transcode's own wall time (the successful attempt)."""
    output_bytes: int = 0
    """Size of the output file."""
    paths: dict[str, int] = field(default_factory=dict)
    """Frames per execution path (ExecutionPath values), from the transcode's stats."""
    mode: str | None = None
    """``passthrough`` or ``gpu``."""
    worker: str | None = None
    """The worker that did it (``cpu0``, ``gpu1``, a Ray node)."""
    error: str | None = None
    """One line: why it failed (the last attempt's reason); None for a file done or skipped."""
    error_kind: str | None = None
    """The failure's ErrorKind value (``crash`` for a worker that died), or None."""
    notes: list[str] = field(default_factory=list)
    """What the transcode changed or met, one line each, as ``alpha2 transcode`` says it (streams
    dropped, audio re-encoded or downmixed, depth or colour changed, timestamps adjusted)."""
    dropped_streams: list[dict[str, Any]] = field(default_factory=list)
    """The input's streams left out of the output: ``{index, kind, codec, reason}`` each."""
    reason: str | None = None
    """Why a skipped file was skipped (done by an earlier run); None otherwise. Not an error: a run whose
    files were all done before ends well."""

    @property
    def fps(self) -> float:
        """Frames per second of the transcode."""
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "input": self.item.input,
            "output": self.item.output,
            "status": self.status.value,
            "attempts": self.attempts,
            "frames": self.frames,
            "seconds": round(self.seconds, 4),
            "fps": round(self.fps, 3),
            "output_bytes": self.output_bytes,
            "mode": self.mode,
            "paths": dict(self.paths),
            "worker": self.worker,
            "error": self.error,
            "error_kind": self.error_kind,
            "reason": self.reason,
            "notes": list(self.notes),
            "dropped_streams": [dict(d) for d in self.dropped_streams],
        }


def is_transient(kind: ErrorKind | None, *, crashed: bool = False) -> bool:
    """Whether a failure of this kind may pass when the file is tried again.

    Retryable kinds (RETRY, TIMEOUT) are, and so are OUT_OF_MEMORY (other streams on the GPU free
    their memory as they finish) and DEVICE_LOST (the next attempt opens a new device), and a worker
    that died (killed, or crashed in native code). Bad input, unsupported requests and internal errors
    fail the same way again; an error that is not alpha2's (``kind`` None) is not retried either.
    """
    if crashed:
        return True
    if kind is None:
        return False
    return kind.retryable or kind in (ErrorKind.OUT_OF_MEMORY, ErrorKind.DEVICE_LOST)


# ---------------------------------------------------------------------------------------------------
# inputs


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _read_list(path: str) -> list[str]:
    base = os.path.dirname(os.path.abspath(path))
    out: list[str] = []
    try:
        with open(path, "rb") as f:
            raw = f.read()
        # A list saved by Windows tools starts with a byte-order mark (Notepad's UTF-8), or is UTF-16
        # (PowerShell 5's '>'): the mark was read as part of the first path, UTF-16 as NULs in each.
        if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            text = raw.decode("utf-16")
        else:
            # surrogateescape: a listed name that is not UTF-8 stays the file's own bytes (os.fsdecode's way).
            text = raw.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
        lines = text.splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the list file {path!r}: {exc}") from exc
    for line in lines:
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        out.append(os.path.normpath(os.path.join(base, os.path.expanduser(entry))))
    return out


@dataclass
class InputScan:
    """What :func:`scan_inputs` found: the inputs, and the files in the folders that were not taken."""

    pairs: list[tuple[str, str]]
    """Each input file with the folder its output path is taken relative to."""
    not_media: list[str] = field(default_factory=list)
    """Files in the folders searched whose extension is not a video container's (:data:`VIDEO_EXTENSIONS`),
    left out; hidden files are not counted."""
    in_out_dir: int = 0
    """Video files under ``out_dir`` where it lies inside an input folder: outputs, not taken as inputs."""
    not_files: list[str] = field(default_factory=list)
    """Entries in the folders named like video that are no regular file (a FIFO, a device, a socket, a
    link to nothing), left out."""


def _scan_folder(
    folder: str,
    skip: str | None,
    not_media: list[str],
    passed: list[str],
    taken: frozenset[str],
    not_files: list[str],
) -> list[str]:
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if skip is not None and os.path.join(os.path.abspath(root), "").startswith(skip):
            # The output folder inside an input folder: its outputs are not inputs (counted, and said).
            passed.extend(
                os.path.join(root, n)
                for n in files
                if not n.startswith(".") and os.path.splitext(n)[1].lower() in taken
            )
            continue
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = os.path.join(root, name)
            if os.path.splitext(name)[1].lower() not in taken:
                not_media.append(os.path.abspath(path))
            # Regular files only: a FIFO named like a video would hang the fingerprint's read. The others
            # are said (a link to a file on a drive not mounted was left out unsaid).
            elif os.path.isfile(path):
                found.append(path)
            else:
                not_files.append(os.path.abspath(path))
    return found


def expand_inputs(
    specs: Sequence[str], *, out_dir: str | None = None, sound: bool = False
) -> list[tuple[str, str]]:
    """:func:`scan_inputs`' inputs alone."""
    return scan_inputs(specs, out_dir=out_dir, sound=sound).pairs


def scan_inputs(specs: Sequence[str], *, out_dir: str | None = None, sound: bool = False) -> InputScan:
    """Each input file with the folder its output path is taken relative to, in a stable order, and the
    files in the folders that were left out.

    A folder gives its video files (:data:`VIDEO_EXTENSIONS`, searched recursively, hidden entries and
    ``out_dir`` left out; ``sound``: the batch writes sound alone, and its audio files
    (:data:`AUDIO_EXTENSIONS`) are taken too) relative to itself; its other files are
    :attr:`InputScan.not_media`. A glob
    (``*``, ``?``, ``[``; ``**`` recursive) and a list file (:data:`LIST_EXTENSIONS`) give theirs
    relative to their common folder, whatever their extensions; any other path is one input. A file
    named twice is taken once.

    Raises:
        InvalidInputError: a path that does not exist, a glob that matches nothing, no inputs at all.
    """
    skip = None if out_dir is None else os.path.join(os.path.abspath(out_dir), "")
    taken = VIDEO_EXTENSIONS | AUDIO_EXTENSIONS if sound else VIDEO_EXTENSIONS
    pairs: list[tuple[str, str]] = []
    not_media: list[str] = []
    not_files: list[str] = []
    passed: list[str] = []
    for spec in specs:
        path = os.path.expanduser(spec)
        if os.path.isdir(path):
            base = os.path.abspath(path)
            if out_dir is not None and _inside(base, out_dir):
                # Its files would all be passed over as outputs ('no input files found' was said).
                where = "is" if os.path.realpath(base) == os.path.realpath(out_dir) else "is inside"
                raise InvalidInputError(
                    f"the input folder {spec!r} {where} --out {out_dir!r}; choose an --out outside the "
                    "input folders"
                )
            found = _scan_folder(path, skip, not_media, passed, taken, not_files)
            pairs.extend((os.path.abspath(f), base) for f in found)
            continue
        if os.path.isfile(path):
            files = _read_list(path) if os.path.splitext(path)[1].lower() in LIST_EXTENSIONS else [path]
        elif _is_glob(path):
            files = sorted(f for f in glob.glob(path, recursive=True) if os.path.isfile(f))
            if not files:
                raise InvalidInputError(f"the pattern {spec!r} matches no file")
        elif os.path.islink(path) and not os.path.exists(path):
            raise InvalidInputError(
                f"input {spec!r} is a link to {os.readlink(path)!r}, which does not exist"
            )
        elif os.path.lexists(path):  # a FIFO, a device, a socket: said 'does not exist'
            raise InvalidInputError(
                f"input {spec!r} is not a file or a folder (give a folder, a glob or a file)"
            )
        elif spec == "-":
            # Said 'input '-' does not exist', where probe and transcode say standard input is refused.
            raise InvalidInputError(
                "batch reads files, not standard input ('-'): give a folder, a glob ('clips/*.mp4') or a "
                "list file (.txt, one path a line; 'find ... > list.txt' makes one)"
            )
        else:
            raise InvalidInputError(f"input {spec!r} does not exist (give a folder, a glob or a list file)")
        for f in files:
            if not os.path.isfile(f):
                # A listed name that is not there is the usual case: said as such, not 'not a file'.
                what = "is not a file" if os.path.lexists(f) else "does not exist"
                raise InvalidInputError(f"input {f!r} (from {spec!r}) {what}")
        absolute = [os.path.abspath(f) for f in files]
        base = os.path.commonpath([os.path.dirname(f) for f in absolute])
        pairs.extend((f, base) for f in absolute)
    seen: set[str] = set()
    unique = []
    for f, base in pairs:
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            unique.append((f, base))
    if not unique:
        other = f"; {_count(len(not_media), 'other file')} there" if not_media else ""
        if not_files:
            named = "1 entry" if len(not_files) == 1 else f"{len(not_files)} entries"
            other += f"; {named} named like video but no regular file (a FIFO, a link to nothing)"
        raise InvalidInputError(
            "no input files found (folders are searched for "
            + " ".join(sorted(taken))
            + other
            + "; a glob or a list file may name any file)"
        )
    return InputScan(unique, list(dict.fromkeys(not_media)), len(set(passed)), list(dict.fromkeys(not_files)))


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it, links resolved."""
    return os.path.join(os.path.realpath(path), "").startswith(os.path.join(os.path.realpath(folder), ""))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def container_extension(container: str | None = None) -> str:
    """The batch's output extension: ``container`` (``mkv`` or ``.mkv``; one of sound alone, ``mp3``,
    ``m4a``, ``flac`` ..., writes each input's audio), or :data:`DEFAULT_CONTAINER`.

    Raises:
        InvalidInputError: a container alpha2 does not write (the message lists those it does).
    """
    if not container:
        return DEFAULT_CONTAINER
    ext = container.lower() if container.startswith(".") else "." + container.lower()
    if ext not in OUTPUT_CONTAINERS and ext not in AUDIO_CONTAINERS:
        raise InvalidInputError(
            f"--container {container!r} is not one alpha2 writes; give one of "
            + ", ".join(e.lstrip(".") for e in OUTPUT_CONTAINERS)
            + " (video), or "
            + ", ".join(e.lstrip(".") for e in AUDIO_CONTAINERS)
            + " (sound alone)"
        )
    return ext


def plan_items(
    inputs: Sequence[tuple[str, str]], out_dir: str, *, container: str | None = None
) -> list[BatchItem]:
    """One item per input, its output under ``out_dir`` at the input's path below its base folder, in
    the batch's container (:func:`container_extension`) whatever the input's own extension.

    Raises:
        InvalidInputError: an unknown container, two inputs that would write the same output, or an
            output that would be its input.
    """
    root = os.path.abspath(out_dir)
    extension = container_extension(container)
    items: list[BatchItem] = []
    by_key: dict[str, str] = {}
    for source, base in inputs:
        relative = os.path.relpath(source, base)
        key = os.path.splitext(relative)[0] + extension
        key = key.replace(os.sep, "/")
        if key in by_key:
            raise InvalidInputError(
                f"{by_key[key]!r} and {source!r} would both be written to {key!r}; batch them separately"
            )
        by_key[key] = source
        output = os.path.join(root, *key.split("/"))
        if os.path.realpath(output) == os.path.realpath(source):
            raise InvalidInputError(f"the output of {source!r} would be the input; choose another --out")
        items.append(BatchItem(key=key, input=source, output=output))
    return items


# ---------------------------------------------------------------------------------------------------
# fingerprints and the manifest


def input_fingerprint(path: str) -> str:
    """A fast hash of an input: sha256 over its size, mtime (ns) and first and last MiB.

    Raises:
        InvalidInputError: the file cannot be read.
    """
    import hashlib  # here: it loads OpenSSL, and ``alpha2 batch --help`` loads this module

    try:
        st = os.stat(path)
        digest = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}:".encode())
        with open(path, "rb") as f:
            digest.update(f.read(FINGERPRINT_EDGE_BYTES))
            if st.st_size > FINGERPRINT_EDGE_BYTES:
                f.seek(max(FINGERPRINT_EDGE_BYTES, st.st_size - FINGERPRINT_EDGE_BYTES))
                digest.update(f.read(FINGERPRINT_EDGE_BYTES))
    except OSError as exc:
        raise InvalidInputError(f"cannot read input {path!r}: {exc.strerror or exc}") from exc
    return "sha256:" + digest.hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, fractions.Fraction):  # --fps: exactly, as 30000/1001
        return f"{value.numerator}/{value.denominator}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


_ADDED_LATER = {"audio_tracks": None, "subtitles": True, "subtitle_tracks": None, "fps": None}
"""Transcode options added after manifests were written, and their defaults: left out of the settings'
hash while at their default, so that a batch resumed across the change keeps what it made."""


def settings_fingerprint(options: TranscodeOptions, extension: str) -> str:
    """A hash of what shapes an output: every transcode option (but ``overwrite``, which says what may be
    replaced, not what is made) and the output's extension."""
    import hashlib

    shaping = {k: v for k, v in _plain(options).items() if k != "overwrite"}
    for name, default in _ADDED_LATER.items():
        if shaping.get(name) == default:  # as a manifest written before the option was added hashed it
            shaping.pop(name, None)
    text = json.dumps({"options": shaping, "extension": extension}, sort_keys=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _corrupt_name(path: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    name = f"{path}.corrupt-{stamp}"
    n = 1
    while os.path.lexists(name):
        n += 1
        name = f"{path}.corrupt-{stamp}-{n}"
    return name


class Manifest:
    """``alpha2-batch.json``: per output, the fingerprints it was made from and what the run reported.

    An entry is either a finished output (its fingerprints, size and report) or, while a run is under
    way, ``{"pending": true}``: an output the run may write. A run cut short (a kill, a power cut) may
    have renamed an output into place without recording it; its pending entry says that the output is
    the batch's own, so that the next run may make it again rather than refuse to replace it.
    """

    def __init__(self, path: str, entries: dict[str, dict[str, Any]] | None = None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = dict(entries or {})
        self.note: str | None = None
        """One line when the file found could not be used (set aside, or unreadable); None otherwise."""

    @classmethod
    def load(cls, out_dir: str) -> Manifest:
        """The manifest in ``out_dir``: empty when there is none, or when it cannot be read; one that
        cannot be parsed is renamed ``<name>.corrupt-<time>`` (the outputs are then made again, never
        trusted blindly) and :attr:`note` says so.

        Raises:
            InvalidInputError: the manifest's name is a symbolic link, a FIFO or anything but a file.
        """
        path = os.path.join(os.path.abspath(out_dir), MANIFEST_NAME)
        try:
            fd = open_regular(path, what="the batch manifest")
        except FileNotFoundError:
            return cls(path)
        except OSError as exc:
            manifest = cls(path)
            manifest.note = f"cannot read {path} ({exc.strerror or exc}); every output is made again"
            return manifest
        try:
            with os.fdopen(fd, "rb") as f:
                raw = f.read()
        except OSError as exc:
            manifest = cls(path)
            manifest.note = f"cannot read {path} ({exc.strerror or exc}); every output is made again"
            return manifest
        try:
            data = json.loads(raw.decode("utf-8"))
            why = None
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than json parses
            data, why = None, type(exc).__name__
        if why is None and not isinstance(data, dict):
            why = "not a JSON object"
        elif why is None and data.get("version") != MANIFEST_VERSION:
            why = f"version {data.get('version')!r}, not {MANIFEST_VERSION}"
        elif why is None and not isinstance(data.get("entries"), dict):
            why = "no entries"
        if why is None:
            return cls(path, data["entries"])
        return cls._set_aside(path, why)

    @classmethod
    def _set_aside(cls, path: str, why: str) -> Manifest:
        manifest = cls(path)
        aside = _corrupt_name(path)
        try:
            os.rename(path, aside)
        except OSError as exc:
            manifest.note = (
                f"the manifest {path} is unusable ({why}) and could not be set aside "
                f"({exc.strerror or exc}); starting afresh"
            )
        else:
            manifest.note = f"the manifest {path} is unusable ({why}); set aside as {aside}; starting afresh"
        return manifest

    def _output(self, key: str) -> str:
        return os.path.join(os.path.dirname(self.path), *key.split("/"))

    def done(self, item: BatchItem, input_hash: str, settings_hash: str) -> bool:
        """Whether ``item``'s output exists as recorded, made from this input with these settings."""
        entry = self.entries.get(item.key)
        if not isinstance(entry, dict):
            return False
        if entry.get("input_hash") != input_hash or entry.get("settings_hash") != settings_hash:
            return False
        try:
            return os.path.getsize(item.output) == entry.get("output_bytes")
        except OSError:
            return False

    def knows(self, key: str) -> bool:
        """Whether the output ``key`` is the batch's own (finished or pending in some run)."""
        return isinstance(self.entries.get(key), dict)

    def claim(self, items: Iterable[BatchItem]) -> None:
        """Mark the outputs a run is about to write as pending (those not recorded yet), and save."""
        changed = False
        for item in items:
            if not self.knows(item.key):
                self.entries[item.key] = {"input": item.input, "pending": True}
                changed = True
        if changed:
            self.save()

    def release(self) -> None:
        """Forget the pending outputs that were not written; the file goes when no entry is left."""
        gone = [
            key
            for key, entry in self.entries.items()
            if isinstance(entry, dict) and entry.get("pending") and not os.path.lexists(self._output(key))
        ]
        if not gone:
            return
        for key in gone:
            del self.entries[key]
        if self.entries:
            self.save()
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)

    def record(self, result: FileResult, input_hash: str, settings_hash: str) -> None:
        """Record a finished output and write the manifest (atomically)."""
        self.entries[result.item.key] = {
            "input": result.item.input,
            "input_hash": input_hash,
            "settings_hash": settings_hash,
            "output_bytes": result.output_bytes,
            "frames": result.frames,
            "paths": dict(result.paths),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        self.save()

    def save(self) -> None:
        """Write the manifest atomically."""
        data = {
            "version": MANIFEST_VERSION,
            "input_hash": "sha256 over size, mtime_ns and the first and last MiB of the input",
            "entries": dict(sorted(self.entries.items())),
        }
        write_bytes_atomic(self.path, (json.dumps(data, indent=2) + "\n").encode())


def fingerprints(items: Iterable[BatchItem]) -> dict[str, str]:
    """``input_fingerprint`` of each item, by key."""
    return {item.key: input_fingerprint(item.input) for item in items}
