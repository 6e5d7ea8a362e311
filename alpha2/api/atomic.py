"""Outputs that appear whole or not at all, and the PNG writer the player's snapshots use.

A file is written under a temporary name in its destination directory and renamed over the final name
only once complete; on any failure the temporary file is removed, so a half-written output never
appears. The temporary file is created exclusively and without following a symbolic link
(``O_EXCL | O_NOFOLLOW``), and :func:`write_bytes_atomic` writes through that descriptor, so a name
planted in a folder others may write into (a batch's ``--out``) cannot send the bytes elsewhere.
:func:`open_regular` opens a file that must be a plain one (a lock, a manifest) without following a
link or blocking on a FIFO. PNG encoding is zlib + struct (RGBA, 8 bits per channel, no filtering): no
new dependency.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from alpha2.gpu.errors import InvalidInputError, output_write_error

# numpy (for the PNG writer) and secrets (for temporary names) are imported where they are used: the
# batch's manifest and lock are written through this module, and ``alpha2 batch --help`` loads it.
if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "atomic_path",
    "check_output_path",
    "input_refusal",
    "open_regular",
    "png_bytes",
    "same_file",
    "write_bytes_atomic",
    "write_png",
]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` name one file (a hard link, a symbolic link or another spelling of it)."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
        return os.path.realpath(a) == os.path.realpath(b)
    except OSError:
        return False


def check_output_path(
    path: str | os.PathLike[str],
    *,
    what: str = "output",
    overwrite: bool = True,
    inputs: Sequence[str | os.PathLike[str]] = (),
) -> str:
    """The absolute output path, after checking that it may be written.

    Args:
        what: How messages name the file (``output``, ``snapshot``).
        overwrite: Whether an existing file may be replaced; False refuses it, naming ``-y``.
        inputs: Files being read: the output is never one of them, whatever ``overwrite`` says.

    Raises:
        InvalidInputError: the directory is missing or not writable, the path is a directory, its name
            is longer than the file system takes, it is one of ``inputs``, or exists and ``overwrite``
            is False.
    """
    given = os.fspath(path)
    if not given.strip():
        raise InvalidInputError(f"the {what} path is empty; give a file name (e.g. out.mp4)")
    full = os.path.abspath(given)
    directory = os.path.dirname(full)
    if os.path.isdir(full):
        raise InvalidInputError(f"{what} {given!r} is a directory; give a file name")
    if given.endswith(os.sep):
        raise InvalidInputError(f"{what} {given!r} ends with {os.sep!r}, as a folder does; give a file name")
    try:
        mode = os.lstat(full).st_mode
    except OSError:
        mode = stat.S_IFREG  # nothing there yet (or unreadable: the writing says why)
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        # The output is written beside the name and renamed over it: /dev/null (ffmpeg's way of
        # encoding for nothing) was replaced by a plain file, run as root, after the whole encode.
        raise InvalidInputError(
            f"{what} {given!r} is {_file_kind(mode)}, not a file: alpha2 writes its output beside the name "
            f"and renames it over it, which would replace {_file_kind(mode)}; give a file name (to encode "
            "without keeping the output, write into a temporary folder and delete it)"
        )
    if not os.path.isdir(directory):
        if os.path.lexists(directory):
            raise InvalidInputError(f"{what} {given!r}: {directory!r} is a file, not a folder")
        raise InvalidInputError(f"{what} directory {directory!r} does not exist")
    name_bytes, name_max = len(os.fsencode(os.path.basename(full))), _name_max(directory)
    if name_bytes > name_max:
        # Refused before the work: the rename at the end failed, 'File name too long', after it all.
        raise InvalidInputError(
            f"{what} name {os.path.basename(full)[:40]!r}... is {name_bytes} bytes long; a file name in "
            f"{directory!r} may be {name_max} at most"
        )
    for source in inputs:
        if same_file(full, source):
            raise InvalidInputError(f"the {what} {given!r} is the input; choose another name")
    if not overwrite and os.path.lexists(full):
        # A name with a newline or another control character said as repr says it: the one-line error
        # kept its first line alone ('alpha2: error: o' for 'o\nut.mkv').
        named = given if given.isprintable() else repr(given)
        raise InvalidInputError(f"{named} exists; pass -y (--overwrite) to replace it")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{what} directory {directory!r} is not writable")
    return full


def input_refusal(path: str | os.PathLike[str]) -> str | None:
    """Why an input that is a FIFO, a socket or a device is refused, or None (a file, a folder, a name
    that does not exist: opening says what is wrong with those). alpha2 opens its input more than once
    (to probe it, to decode, to copy its audio) and seeks in it: a FIFO's second open waited for a writer
    for ever, after the first had read it, and the command hung."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return (
        f"input {os.fspath(path)!r} is {_file_kind(mode)}, not a file: alpha2 opens its input more than "
        "once and seeks in it; save the stream to a file and give its name"
    )


def _name_max(directory: str) -> int:
    """The longest file name (bytes) ``directory``'s file system takes (255 where it does not say)."""
    try:
        return int(os.pathconf(directory, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def open_regular(path: str, flags: int = os.O_RDONLY, mode: int = 0o600, *, what: str = "file") -> int:
    """A descriptor of ``path``, which must be a regular file: a symbolic link is not followed and a FIFO
    or a device is not waited on (``O_NOFOLLOW | O_NONBLOCK``), both refused.

    Raises:
        FileNotFoundError: there is no such file (and ``flags`` has no ``O_CREAT``).
        InvalidInputError: ``path`` is a symbolic link, or not a regular file.
        OSError: any other failure to open it.
    """
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENXIO and os.path.islink(path)):
            raise InvalidInputError(f"{what} {path!r} is a symbolic link; remove it") from None
        if exc.errno == errno.ENXIO:  # a FIFO with no reader, opened for writing
            raise InvalidInputError(f"{what} {path!r} is not a regular file (a FIFO); remove it") from None
        raise
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = _file_kind(st.st_mode)
        raise InvalidInputError(f"{what} {path!r} is not a regular file ({kind}); remove it")
    return fd


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _create_temp(final: str) -> tuple[int, str]:
    """A new file next to ``final``, created exclusively and without following a link, with the mode a
    plain ``open()`` would give it, or the permissions of the file it replaces (as writing over that
    file in place, ``ffmpeg -y``'s way, keeps them); returns its descriptor and path."""
    import secrets

    from alpha2.ffmpeg_bridge.containers import keep_replaced_mode, partial_name

    directory, name = os.path.split(final)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    for _ in range(100):
        tmp = os.path.join(directory, partial_name(name, secrets.token_hex(6)))
        try:
            fd = os.open(tmp, flags, 0o666 & ~_umask())
        except FileExistsError:
            continue
        except OSError as exc:
            raise InvalidInputError(f"cannot write {final!r}: {exc.strerror or exc}") from exc
        keep_replaced_mode(fd, final)
        return fd, tmp
    raise InvalidInputError(f"cannot write {final!r}: no free temporary name in its directory")


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """Yield a temporary path next to ``path``; rename it to ``path`` when the block succeeds.

    On an exception (or when the block wrote nothing) the temporary file is removed and ``path`` is
    left as it was.

    Raises:
        OutputWriteError: the block failed for the disk's reason (full, over quota, EIO ...), whatever
            error it raised for it: named by ``path``, not by the temporary name FFmpeg was writing.
    """
    final = check_output_path(path)
    fd, tmp = _create_temp(final)
    os.close(fd)
    try:
        yield tmp
        if os.path.getsize(tmp) == 0:
            raise InvalidInputError(f"nothing was written to {final!r}")
        os.replace(tmp, final)
    except BaseException as exc:
        _remove(tmp)
        disk_error = output_write_error(final, exc) if isinstance(exc, Exception) else None
        if disk_error is None or disk_error is exc:
            raise
        raise disk_error from exc


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> str:
    """Write ``data`` to ``path`` atomically (through the temporary file's own descriptor: a name swapped
    in its place cannot redirect the bytes); returns the absolute path.

    Raises:
        OutputWriteError: the disk did not take it (full, over quota, EIO ...); nothing is left.
        InvalidInputError: another failure to write it.
    """
    final = check_output_path(path)
    fd, tmp = _create_temp(final)
    try:
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if not data:
                raise InvalidInputError(f"nothing was written to {final!r}")
            os.replace(tmp, final)
        except OSError as exc:
            # A full disk or a lost mount: say which file (the bare errno names none).
            disk_error = output_write_error(final, exc)
            raise disk_error or InvalidInputError(f"cannot write {final!r}: {exc.strerror or exc}") from exc
    except BaseException:
        _remove(tmp)
        raise
    return final


def _chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def png_bytes(pixels: np.ndarray, *, level: int = 6) -> bytes:
    """Encode an (H, W, 4) RGBA or (H, W, 3) RGB uint8 array as PNG.

    Raises:
        InvalidInputError: another shape or dtype.
    """
    import numpy as np

    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] not in (3, 4):
        raise InvalidInputError(
            f"png_bytes takes an (H, W, 3) or (H, W, 4) uint8 array, got {pixels.shape} {pixels.dtype}"
        )
    height, width, channels = pixels.shape
    if width == 0 or height == 0:
        raise InvalidInputError("png_bytes: empty image")
    colour_type = 6 if channels == 4 else 2
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    # Each row: filter byte 0 (None), then the row's bytes.
    rows = np.empty((height, 1 + width * channels), dtype=np.uint8)
    rows[:, 0] = 0
    rows[:, 1:] = np.ascontiguousarray(pixels).reshape(height, width * channels)
    data = zlib.compress(rows.tobytes(), level)
    return _PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", data) + _chunk(b"IEND", b"")


def write_png(path: str | os.PathLike[str], pixels: np.ndarray) -> str:
    """Write ``pixels`` (RGBA or RGB uint8) as a PNG file, atomically; returns the absolute path."""
    return write_bytes_atomic(path, png_bytes(pixels))
