"""FFmpeg (PyAV) for alpha2: the only package that imports ``av``.

Decode sessions hand frames onward as :class:`~alpha2.gpu.frames.DecodedFrame` (planes as
``alpha2.gpu`` vocabulary plus a keep-alive), encode sessions take planes back and write files
atomically; hardware decoding runs on the CUDA twin of the shared device or not at all.

Names load on first use (``import alpha2.ffmpeg_bridge.decode`` does not import the encoders, audio
or scaling): a command that needs one module pays for that one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alpha2._lazy import lazy_names

if TYPE_CHECKING:
    from alpha2.ffmpeg_bridge.audio import (
        AudioBlock,
        AudioDecodeSession,
        AudioStreamInfo,
        NoAudioStreamError,
        media_kinds,
    )
    from alpha2.ffmpeg_bridge.decode import (
        CorruptPolicy,
        DecodeSession,
        DecodeStats,
        MediaSource,
        download_frame,
    )
    from alpha2.ffmpeg_bridge.encode import EncoderChoice, EncodeSession, EncodeStats, choose_encoder
    from alpha2.ffmpeg_bridge.encoders import ENCODER_PREFERENCE, ENCODERS, EncoderSpec, encoder_spec
    from alpha2.ffmpeg_bridge.errors import (
        BridgeError,
        DecodeError,
        EncoderError,
        HwAccelUnavailableError,
        MediaFormatError,
        MediaNotFoundError,
        NoVideoStreamError,
        UnsupportedCodecError,
    )
    from alpha2.ffmpeg_bridge.hwdevice import HwAccelMode, HwAccelReport, HwDevicePlan, plan_hw_device
    from alpha2.ffmpeg_bridge.media import StreamInfo

_EXPORTS: dict[str, str] = {
    "AudioBlock": "alpha2.ffmpeg_bridge.audio",
    "AudioDecodeSession": "alpha2.ffmpeg_bridge.audio",
    "AudioStreamInfo": "alpha2.ffmpeg_bridge.audio",
    "BridgeError": "alpha2.ffmpeg_bridge.errors",
    "CorruptPolicy": "alpha2.ffmpeg_bridge.decode",
    "DecodeError": "alpha2.ffmpeg_bridge.errors",
    "DecodeSession": "alpha2.ffmpeg_bridge.decode",
    "DecodeStats": "alpha2.ffmpeg_bridge.decode",
    "ENCODERS": "alpha2.ffmpeg_bridge.encoders",
    "ENCODER_PREFERENCE": "alpha2.ffmpeg_bridge.encoders",
    "EncodeSession": "alpha2.ffmpeg_bridge.encode",
    "EncodeStats": "alpha2.ffmpeg_bridge.encode",
    "EncoderChoice": "alpha2.ffmpeg_bridge.encode",
    "EncoderError": "alpha2.ffmpeg_bridge.errors",
    "EncoderSpec": "alpha2.ffmpeg_bridge.encoders",
    "HwAccelMode": "alpha2.ffmpeg_bridge.hwdevice",
    "HwAccelReport": "alpha2.ffmpeg_bridge.hwdevice",
    "HwAccelUnavailableError": "alpha2.ffmpeg_bridge.errors",
    "HwDevicePlan": "alpha2.ffmpeg_bridge.hwdevice",
    "MediaFormatError": "alpha2.ffmpeg_bridge.errors",
    "MediaNotFoundError": "alpha2.ffmpeg_bridge.errors",
    "MediaSource": "alpha2.ffmpeg_bridge.decode",
    "NoAudioStreamError": "alpha2.ffmpeg_bridge.audio",
    "NoVideoStreamError": "alpha2.ffmpeg_bridge.errors",
    "StreamInfo": "alpha2.ffmpeg_bridge.media",
    "UnsupportedCodecError": "alpha2.ffmpeg_bridge.errors",
    "choose_encoder": "alpha2.ffmpeg_bridge.encode",
    "download_frame": "alpha2.ffmpeg_bridge.decode",
    "encoder_spec": "alpha2.ffmpeg_bridge.encoders",
    "media_kinds": "alpha2.ffmpeg_bridge.audio",
    "plan_hw_device": "alpha2.ffmpeg_bridge.hwdevice",
}

__all__ = [
    "ENCODERS",
    "ENCODER_PREFERENCE",
    "AudioBlock",
    "AudioDecodeSession",
    "AudioStreamInfo",
    "BridgeError",
    "CorruptPolicy",
    "DecodeError",
    "DecodeSession",
    "DecodeStats",
    "EncodeSession",
    "EncodeStats",
    "EncoderChoice",
    "EncoderError",
    "EncoderSpec",
    "HwAccelMode",
    "HwAccelReport",
    "HwAccelUnavailableError",
    "HwDevicePlan",
    "MediaFormatError",
    "MediaNotFoundError",
    "MediaSource",
    "NoAudioStreamError",
    "NoVideoStreamError",
    "StreamInfo",
    "UnsupportedCodecError",
    "choose_encoder",
    "download_frame",
    "encoder_spec",
    "media_kinds",
    "plan_hw_device",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
