"""The containers alpha2 writes video into, by the output's extension.

Kept out of :mod:`alpha2.ffmpeg_bridge.encode` (which names them too and opens the muxers) so that the
command line lists them in its help without loading PyAV.
"""

from __future__ import annotations

__all__ = ["OUTPUT_CONTAINERS"]

OUTPUT_CONTAINERS: dict[str, str] = {
    ".mp4": "mp4",
    ".mov": "mov",
    ".mkv": "matroska",
    ".webm": "webm",
    ".ts": "mpegts",
    ".m2ts": "mpegts",
    ".avi": "avi",
    ".nut": "nut",
}
"""Output extensions alpha2 writes video into, and the FFmpeg muxer each names."""
