"""alpha2: GPU video interop for Python.

Hardware-decoded video into WebGPU textures and back out to an encoder, by the best path the
hardware allows, and saying which path that was.

The three jobs, from the top level (names load on first use: ``import alpha2`` needs no GPU):

- ``alpha2.open(path, device=None, hwaccel="auto")`` -> :class:`~alpha2.api.source.VideoSource`: frames that
  render themselves into your texture (``frame.render(texture)``), with ``pts_seconds``, ``colour``
  and frame-accurate ``seek``;
- ``alpha2.create(path, codec=None, colour=None)`` -> :class:`~alpha2.api.writer.Writer`: textures, RGB(A)
  arrays (numpy, torch, cupy through DLPack) or frames in, a tagged video file out (the codec by the
  container: VP9 for .webm, GIF for .gif, else H.264; BT.709 unless ``colour`` says otherwise);
- ``alpha2.open_audio(path, sample_rate=None, channels=None)`` -> :class:`~alpha2.api.audio.AudioSource`:
  sound as float32 (frames, channels) blocks with ``pts_seconds``, resampled on request;
- ``alpha2.transcode(source, output, alpha2.TranscodeOptions(...))``: what ``alpha2 transcode`` does, as
  a function, its stats returned;
- ``frame.to_ndarray()`` / ``frame.plane(i)`` (DLPack) for arrays; ``alpha2.Device`` and
  ``alpha2.adapters()`` for the GPU; ``alpha2.describe(path)`` for what a file holds (streams,
  languages, the video's colour and decoder: what ``alpha2 probe FILE`` prints).

Packages (each imports only those below it; import-linter checks it), for finer control:
    alpha2.apps           the `alpha2` command: probe, sample, play, transcode, batch
    alpha2.api            the front door: everything above, stream groups, decoder processes, transcode
    alpha2.ffmpeg_bridge  FFmpeg through PyAV: containers, codecs, hardware devices, frames
    alpha2.native_gpu     the shared Vulkan device, import leases, surface accounting, the encode copier
    alpha2.gpu            the vocabulary: formats, colour, handles, sync, budgets, errors, adapter ranking
(``ffmpeg_bridge`` and ``native_gpu`` are siblings: neither imports the other.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alpha2._lazy import lazy_names

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "open": "alpha2.api.source",
    "open_async": "alpha2.api.source",
    "create": "alpha2.api.writer",
    "open_audio": "alpha2.api.audio",
    "AudioSource": "alpha2.api.audio",
    "adapters": "alpha2.api.source",
    "AdapterInfo": "alpha2.api.source",
    "Frame": "alpha2.api.source",
    "VideoSource": "alpha2.api.source",
    "VideoInfo": "alpha2.api.source",
    "Writer": "alpha2.api.writer",
    "to_tensor": "alpha2.api.tensors",
    "describe": "alpha2.api.describe",
    "Device": "alpha2.native_gpu.device.device",
    "ColourInfo": "alpha2.gpu.colour",
    "PixelFormat": "alpha2.gpu.formats",
    "ExecutionPath": "alpha2.gpu.identity",
    "Error": "alpha2.gpu.errors",
    "EndOfStreamError": "alpha2.api.errors",
    "FrameIndexError": "alpha2.api.errors",
    "ConcurrentIterationError": "alpha2.api.errors",
    "GpuWorkDone": "alpha2.api.source",
    "RgbTensor": "alpha2.api.tensors",
    "AudioTrack": "alpha2.api.source",
    "transcode": "alpha2.api.transcoder",
    "TranscodeOptions": "alpha2.api.transcode_plan",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from alpha2.api.audio import AudioSource as AudioSource
    from alpha2.api.audio import open_audio as open_audio
    from alpha2.api.describe import describe as describe
    from alpha2.api.errors import ConcurrentIterationError as ConcurrentIterationError
    from alpha2.api.errors import EndOfStreamError as EndOfStreamError
    from alpha2.api.errors import FrameIndexError as FrameIndexError
    from alpha2.api.source import AdapterInfo as AdapterInfo
    from alpha2.api.source import AudioTrack as AudioTrack
    from alpha2.api.source import Frame as Frame
    from alpha2.api.source import GpuWorkDone as GpuWorkDone
    from alpha2.api.source import VideoInfo as VideoInfo
    from alpha2.api.source import VideoSource as VideoSource
    from alpha2.api.source import adapters as adapters
    from alpha2.api.source import open as open
    from alpha2.api.source import open_async as open_async
    from alpha2.api.tensors import RgbTensor as RgbTensor
    from alpha2.api.tensors import to_tensor as to_tensor
    from alpha2.api.transcode_plan import TranscodeOptions as TranscodeOptions
    from alpha2.api.transcoder import transcode as transcode
    from alpha2.api.writer import Writer as Writer
    from alpha2.api.writer import create as create
    from alpha2.gpu.colour import ColourInfo as ColourInfo
    from alpha2.gpu.errors import Error as Error
    from alpha2.gpu.formats import PixelFormat as PixelFormat
    from alpha2.gpu.identity import ExecutionPath as ExecutionPath
    from alpha2.native_gpu.device.device import Device as Device


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
