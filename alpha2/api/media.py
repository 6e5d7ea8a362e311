"""What a media file holds, and its sound: the front door's audio side.

``media_kinds(path)`` tells which kinds of stream a file has ({"video", "audio", ...}) without decoding;
:func:`describe` says everything about it (container, streams, the video's colour and decoder:
:mod:`alpha2.api.describe`);
:func:`open_audio` -> :class:`AudioSource` reads sound as float32 :class:`AudioBlock`s (resampled on
request); :class:`AudioDecodeSession`, underneath it, is the decoder the player's sound plays from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from alpha2.api.audio import AudioSource, open_audio
from alpha2.ffmpeg_bridge.audio import (
    AudioBlock,
    AudioDecodeSession,
    AudioStreamInfo,
    NoAudioStreamError,
    media_kinds,
)

if TYPE_CHECKING:
    from alpha2.api.describe import MediaDescription, describe

__all__ = [
    "AudioBlock",
    "AudioDecodeSession",
    "AudioSource",
    "AudioStreamInfo",
    "MediaDescription",
    "NoAudioStreamError",
    "describe",
    "media_kinds",
    "open_audio",
]


def __getattr__(name: str) -> Any:
    # describe loads on first use: the player imports this module on its way to the first frame.
    if name in ("describe", "MediaDescription"):
        from alpha2.api import describe as module

        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
