"""FFmpeg (PyAV) for alpha2: the only package that imports ``av``.

Decode sessions hand frames onward as :class:`~alpha2.gpu.frames.DecodedFrame` (planes as
``alpha2.gpu`` vocabulary plus a keep-alive), encode sessions take planes back and write files
atomically; hardware decoding runs on the CUDA twin of the shared device or not at all.
"""

from __future__ import annotations

from alpha2.ffmpeg_bridge.audio import (
    AudioBlock,
    AudioDecodeSession,
    AudioStreamInfo,
    NoAudioStreamError,
    media_kinds,
)
from alpha2.ffmpeg_bridge.decode import CorruptPolicy, DecodeSession, DecodeStats, MediaSource, download_frame
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
