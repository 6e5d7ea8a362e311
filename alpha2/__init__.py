"""alpha2: GPU video interop for Python.

Hardware-decoded video into WebGPU textures and back out to an encoder, by the best path the
hardware allows, and saying which path that was.

Packages (dependencies point one way, left to right):
    alpha2.gpu            the vocabulary: formats, colour, handles, sync, budgets, errors, adapter ranking
    alpha2.native_gpu     the shared Vulkan device, import leases, surface accounting, the encode copier
    alpha2.ffmpeg_bridge  FFmpeg through PyAV: containers, codecs, hardware devices, frames
    alpha2.apps           the `alpha2` command: probe, sample, play, transcode
"""

__version__ = "0.1.0"
