"""What a media file holds, and its sound: the front door's audio side.

``media_kinds(path)`` tells which kinds of stream a file has ({"video", "audio", ...}) without decoding;
:func:`open_audio` -> :class:`AudioSource` reads sound as float32 :class:`AudioBlock`s (resampled on
request); :class:`AudioDecodeSession`, underneath it, is the decoder the player's sound plays from.
"""

from __future__ import annotations

from alpha2.api.audio import AudioSource, open_audio
from alpha2.ffmpeg_bridge.audio import (
    AudioBlock,
    AudioDecodeSession,
    AudioStreamInfo,
    NoAudioStreamError,
    media_kinds,
)

__all__ = [
    "AudioBlock",
    "AudioDecodeSession",
    "AudioSource",
    "AudioStreamInfo",
    "NoAudioStreamError",
    "media_kinds",
    "open_audio",
]
