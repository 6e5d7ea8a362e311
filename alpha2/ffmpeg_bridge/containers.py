"""The containers alpha2 writes video into, by the output's extension, and the name an output is written
under until it is complete.

Kept out of :mod:`alpha2.ffmpeg_bridge.encode` (which names them too and opens the muxers) so that the
command line lists them in its help without loading PyAV.
"""

from __future__ import annotations

import contextlib
import os
import stat

__all__ = [
    "AUDIO_CODECS",
    "AUDIO_CONTAINERS",
    "CONTAINER_CODECS",
    "NAME_MAX_BYTES",
    "OUTPUT_CONTAINERS",
    "default_codec",
    "keep_replaced_mode",
    "partial_name",
]

NAME_MAX_BYTES = 255
"""The longest file name (in bytes, as the file system stores it) of the file systems alpha2 writes to:
ext4, XFS, Btrfs, tmpfs and NTFS's 255 UTF-16 units, the tightest of them in bytes."""

OUTPUT_CONTAINERS: dict[str, str] = {
    ".mp4": "mp4",
    ".m4v": "ipod",
    ".mov": "mov",
    ".mkv": "matroska",
    ".webm": "webm",
    ".ts": "mpegts",
    ".m2ts": "mpegts",
    ".avi": "avi",
    ".nut": "nut",
    ".gif": "gif",
}
"""Output extensions alpha2 writes video into, and the FFmpeg muxer each names."""

AUDIO_CONTAINERS: dict[str, str] = {
    ".mp3": "mp3",
    ".m4a": "ipod",
    ".flac": "flac",
    ".opus": "opus",
    ".ogg": "ogg",
    ".oga": "ogg",
    ".wav": "wav",
    ".mka": "matroska",
}
"""Output extensions of sound alone (``alpha2 transcode song.flac song.mp3``), and the FFmpeg muxer each
names; an audio-only input may also go into the video containers of :data:`OUTPUT_CONTAINERS`."""

AUDIO_CODECS: dict[str, str] = {
    "mp3": "libmp3lame",
    "flac": "flac",
    "opus": "libopus",
    "ogg": "libopus",
    "webm": "libopus",
    "wav": "pcm_s16le",
}
"""The audio encoder of an audio-only output by its muxer (FFmpeg's default but for Ogg, where
FFmpeg's libvorbis is not built in PyAV's wheels and its own Vorbis encoder is experimental: Opus);
AAC for the others (MP4, M4A, MOV, Matroska, MPEG-TS, ...); WAV keeps 24 bits where the input has more
than 16."""

CONTAINER_CODECS = {".webm": "vp9", ".gif": "gif"}
"""Containers whose muxers take no H.264, and their default codec."""


def default_codec(output: str | os.PathLike[str]) -> str:
    """The codec an output gets when none is asked for: VP9 for WebM, GIF for .gif, H.264 otherwise."""
    return CONTAINER_CODECS.get(os.path.splitext(os.fspath(output))[1].lower(), "h264")


def partial_name(name: str, token: str) -> str:
    """The hidden name an output called ``name`` is written under until complete, next to it:
    ``.NAME.TOKEN.partial.EXT``; its stem cut (on a character's boundary) where the whole would be longer
    than :data:`NAME_MAX_BYTES`, so that an output whose own name is as long as a name may be can be
    written (its partial file was 'File name too long')."""
    stem, ext = os.path.splitext(name)
    fixed = f"..{token}.partial{ext}"
    room = NAME_MAX_BYTES - len(os.fsencode(fixed))
    encoded = os.fsencode(stem)
    if len(encoded) > room:
        stem = os.fsdecode(encoded[: max(room, 0)].decode("utf-8", "ignore").encode("utf-8"))
    return f".{stem}.{token}.partial{ext}"


def keep_replaced_mode(fd: int, final: str) -> None:
    """Give the file open at ``fd`` (an output's partial file) the permission bits of the regular file
    at ``final`` it is about to replace, as writing over that file in place (``ffmpeg -y``) keeps them:
    a group-readable output stays so. Its set-id bits are not carried over; nothing where ``final`` is
    no regular file."""
    try:
        st = os.stat(final, follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o777)
