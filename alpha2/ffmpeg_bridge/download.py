"""NVDEC frames copied to host memory, for consumers that need the pixels on the CPU.

This is FFmpeg's own transfer (``av_hwframe_transfer_data``, through PyAV), for users of the bridge
alone: the bridge never imports ``alpha2.native_gpu`` (the import contract), so it cannot use the
download everything else in alpha2 uses, ``alpha2.native_gpu._cuda.streams.download_planes`` (the CUDA
driver's ``cuMemcpy2DAsync`` into pinned staging, ordered after the decode; behind
``DecodedFrame.plane_arrays()``, the CPU upload and the decoder processes' host slots). Two downloads
remain for that reason only; nothing in alpha2 beyond the bridge calls this one.
"""

from __future__ import annotations

import av
import av.error

from alpha2.ffmpeg_bridge import media
from alpha2.ffmpeg_bridge.errors import DecodeError, from_ffmpeg
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.frames import DecodedFrame

__all__ = ["download_frame"]


def download_frame(frame: DecodedFrame) -> DecodedFrame:
    """A CPU copy of an NVDEC frame (``av_hwframe_transfer_data``); CPU frames are returned as they are.

    Consumes ``frame``: its reservation moves to the copy and ``frame`` is released, so the GPU
    surface goes back to the decoder's pool as soon as nothing else holds it.

    Raises:
        ClosedError: ``frame`` was already released.
        InvalidInputError: ``frame`` was not made by a DecodeSession.
    """
    if frame.released:
        raise ClosedError("download_frame got a released DecodedFrame")
    if not frame.on_gpu:
        return frame
    source = frame.keep_alive
    if not isinstance(source, av.VideoFrame):
        raise InvalidInputError("download_frame needs a DecodedFrame made by a DecodeSession")
    try:
        cpu = source.reformat(format=frame.pixel_format.ffmpeg_name)
    except av.error.FFmpegError as exc:
        raise from_ffmpeg(exc, "downloading an NVDEC frame", DecodeError) from exc
    reservation, frame.reservation = frame.reservation, None
    copy = DecodedFrame(
        planes=media.cpu_planes_of(cpu, frame.pixel_format),
        pixel_format=frame.pixel_format,
        colour=frame.colour,
        metadata=frame.metadata,
        identity=frame.identity,
        reservation=reservation,
        cuda_stream=None,
        keep_alive=cpu,
    )
    frame.release()
    return copy
