"""What a media file holds, and its sound: the front door's audio side.

``media_kinds(path)`` tells which kinds of stream a file has ({"video", "audio", ...}) without decoding;
:class:`AudioDecodeSession` decodes (and resamples) sound into :class:`AudioBlock`s, the decoder the
player's sound plays from.
"""

from __future__ import annotations

from alpha2.ffmpeg_bridge.audio import AudioBlock, AudioDecodeSession, media_kinds

__all__ = ["AudioBlock", "AudioDecodeSession", "media_kinds"]
