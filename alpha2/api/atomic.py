"""Outputs that appear whole or not at all, and the PNG writer the player's snapshots use.

A file is written under a temporary name in its destination directory and renamed over the final name
only once complete; on any failure the temporary file is removed, so a half-written output never
appears. PNG encoding is zlib + struct (RGBA, 8 bits per channel, no filtering): no new dependency.
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import zlib
from collections.abc import Iterator

import numpy as np

from alpha2.gpu.errors import InvalidInputError

__all__ = ["atomic_path", "check_output_path", "png_bytes", "write_bytes_atomic", "write_png"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_output_path(path: str | os.PathLike[str], *, what: str = "output") -> str:
    """The absolute output path, after checking that its directory exists and is writable.

    Raises:
        InvalidInputError: the directory is missing or not writable, or the path is a directory.
    """
    full = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(full)
    if os.path.isdir(full):
        raise InvalidInputError(f"{what} {os.fspath(path)!r} is a directory; give a file name")
    if not os.path.isdir(directory):
        raise InvalidInputError(f"{what} directory {directory!r} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{what} directory {directory!r} is not writable")
    return full


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """Yield a temporary path next to ``path``; rename it to ``path`` when the block succeeds.

    On an exception (or when the block wrote nothing) the temporary file is removed and ``path`` is
    left as it was.
    """
    final = check_output_path(path)
    directory, name = os.path.split(final)
    stem, ext = os.path.splitext(name)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=f".partial{ext}", dir=directory)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {final!r}: {exc.strerror or exc}") from exc
    os.close(fd)
    try:
        # mkstemp makes the file 0600; the output gets the mode a plain open() would give it.
        os.chmod(tmp, 0o666 & ~_umask())
        yield tmp
        if os.path.getsize(tmp) == 0:
            raise InvalidInputError(f"nothing was written to {final!r}")
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> str:
    """Write ``data`` to ``path`` atomically; returns the absolute path."""
    with atomic_path(path) as tmp:
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            # A full disk or a lost mount: say which file (the bare errno names none).
            raise InvalidInputError(
                f"cannot write {os.path.abspath(os.fspath(path))!r}: {exc.strerror or exc}"
            ) from exc
    return os.path.abspath(os.fspath(path))


def _chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def png_bytes(pixels: np.ndarray, *, level: int = 6) -> bytes:
    """Encode an (H, W, 4) RGBA or (H, W, 3) RGB uint8 array as PNG.

    Raises:
        InvalidInputError: another shape or dtype.
    """
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
