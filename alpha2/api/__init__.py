"""The front door: the one package that joins decoding (``alpha2.ffmpeg_bridge``) and the GPU
(``alpha2.native_gpu``).

Everything a program does with video goes through here, the ``alpha2`` command included:

- :func:`open` -> :class:`VideoSource` (frames that render themselves, arrays, exact seeks);
- :func:`create` -> :class:`Writer` (textures, arrays or frames in, a tagged video file out);
- :func:`open_audio` -> :class:`AudioSource` (sound as float32 sample blocks, resampled on request);
- :class:`StreamGroup` (many streams on one device, ticked together; decoders in threads or processes);
- :func:`transcode` (the ``alpha2 transcode`` frame loop: decode, import, render or scale, encode).

Its modules hold the frame loops and the accounting the apps show (``pipeline``: paths, stages,
progress); the rule "open the device before the decoder, so that NVDEC lands on the GPU that
renders" is written once, in :mod:`alpha2.api.devices`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alpha2._lazy import lazy_names

_EXPORTS: dict[str, str] = {
    "AdapterInfo": "alpha2.api.source",
    "AudioSource": "alpha2.api.audio",
    "open_audio": "alpha2.api.audio",
    "AudioTrack": "alpha2.api.source",
    "ConcurrentIterationError": "alpha2.api.errors",
    "EndOfStreamError": "alpha2.api.errors",
    "Frame": "alpha2.api.source",
    "FrameIndexError": "alpha2.api.errors",
    "GpuWorkDone": "alpha2.api.source",
    "VideoInfo": "alpha2.api.source",
    "VideoSource": "alpha2.api.source",
    "Writer": "alpha2.api.writer",
    "adapters": "alpha2.api.source",
    "create": "alpha2.api.writer",
    "open": "alpha2.api.source",
    "open_async": "alpha2.api.source",
    "StreamGroup": "alpha2.api.streams",
    "DecodeProcess": "alpha2.api.decode_process",
    "open_processes": "alpha2.api.decode_process",
    "transcode": "alpha2.api.transcoder",
    "TranscodeOptions": "alpha2.api.transcode_plan",
    "SegmentReader": "alpha2.api.segments",
    "RgbTensor": "alpha2.api.tensors",
    "to_tensor": "alpha2.api.tensors",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from alpha2.api.audio import AudioSource as AudioSource
    from alpha2.api.audio import open_audio as open_audio
    from alpha2.api.decode_process import DecodeProcess as DecodeProcess
    from alpha2.api.decode_process import open_processes as open_processes
    from alpha2.api.errors import ConcurrentIterationError as ConcurrentIterationError
    from alpha2.api.errors import EndOfStreamError as EndOfStreamError
    from alpha2.api.errors import FrameIndexError as FrameIndexError
    from alpha2.api.segments import SegmentReader as SegmentReader
    from alpha2.api.source import AdapterInfo as AdapterInfo
    from alpha2.api.source import AudioTrack as AudioTrack
    from alpha2.api.source import Frame as Frame
    from alpha2.api.source import GpuWorkDone as GpuWorkDone
    from alpha2.api.source import VideoInfo as VideoInfo
    from alpha2.api.source import VideoSource as VideoSource
    from alpha2.api.source import adapters as adapters
    from alpha2.api.source import open as open
    from alpha2.api.source import open_async as open_async
    from alpha2.api.streams import StreamGroup as StreamGroup
    from alpha2.api.tensors import RgbTensor as RgbTensor
    from alpha2.api.tensors import to_tensor as to_tensor
    from alpha2.api.transcode_plan import TranscodeOptions as TranscodeOptions
    from alpha2.api.transcoder import transcode as transcode
    from alpha2.api.writer import Writer as Writer
    from alpha2.api.writer import create as create

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
