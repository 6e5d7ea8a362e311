"""``alpha2 play --snapshot`` on a CPU device: the one frame converted by swscale, no WebGPU device.

On a CPU Vulkan device (lavapipe) a snapshot through the GPU route costs seconds of fixed work for one
frame: the adapter enumeration, the device and its pipelines, lavapipe compiling the shader. This
route decodes the same frame (the same DecodeSession, the same seek), converts it to RGB with
swscale exactly as the sampling shader does (the frame's matrix and range resolved the same way,
bilinear chroma at the same siting, ``full_chroma_int`` and accurate rounding, full-range 8-bit
output with opaque alpha), applies the frame's rotation and writes the PNG (the same pixels; zlib
level 1). It is chosen only
where the device is a CPU one (:func:`~alpha2.api.scale_route.cpu_device_reason`, which looks at the
GPU device nodes first) and ``--gpu`` does not ask for the GPU; a frame whose conversion swscale does
not do as the shader does is left to the GPU route. The route and its reason are in the stats
(``snapshot_route``).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from alpha2.api import pipeline
from alpha2.api.atomic import check_output_path, png_bytes, write_bytes_atomic
from alpha2.api.transcode_plan import HDR_TRANSFERS
from alpha2.ffmpeg_bridge.scale import rgba_like_shader, rgba_unsupported_reason
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Rotation, Size
from alpha2.gpu.identity import ExecutionPath

if TYPE_CHECKING:
    from alpha2.api.playback import Player, PlayStats

__all__ = [
    "SnapshotRoute",
    "SnapshotRouteKind",
    "choose_snapshot_route",
    "rotate",
    "snapshot_on_cpu",
    "swscale_rgba",
    "unsupported_reason",
]


class SnapshotRouteKind(enum.Enum):
    """How the snapshot's frame is converted to RGB."""

    GPU = "gpu"
    """Imported into the WebGPU device and rendered by the sampling shader."""
    SWSCALE = "swscale"
    """On the CPU by FFmpeg's swscale; no GPU device is made."""


@dataclass(frozen=True)
class SnapshotRoute:
    """The snapshot route taken, and why."""

    kind: SnapshotRouteKind
    """GPU or swscale."""
    reason: str
    """Why this route."""

    def as_dict(self) -> dict[str, str]:
        """For JSON stats."""
        return {"route": self.kind.value, "reason": self.reason}


def _cpu_device_reason() -> str | None:
    from alpha2.api.scale_route import cpu_device_reason

    return cpu_device_reason()


def choose_snapshot_route(
    *, forced_gpu: bool, hwaccel: str, cpu_reason: Callable[[], str | None] = _cpu_device_reason
) -> SnapshotRoute:
    """The route for ``--snapshot``, decided before anything is opened.

    Args:
        forced_gpu: ``--gpu`` asked for the GPU.
        hwaccel: the decoding asked for (``cuda`` decodes on NVDEC: the GPU route).
        cpu_reason: why the device is a CPU one, or None (for tests).
    """
    if forced_gpu:
        return SnapshotRoute(SnapshotRouteKind.GPU, "--gpu asks for the GPU")
    if hwaccel == "cuda":
        return SnapshotRoute(SnapshotRouteKind.GPU, "--hwaccel cuda decodes on the GPU")
    cpu = cpu_reason()
    if cpu is None:
        return SnapshotRoute(SnapshotRouteKind.GPU, "a GPU device is at hand")
    return SnapshotRoute(
        SnapshotRouteKind.SWSCALE,
        f"{cpu}: swscale converts the one frame as the sampling shader does, without device set-up",
    )


def unsupported_reason(frame: DecodedFrame) -> str | None:
    """Why swscale cannot convert ``frame`` exactly as the sampling shader does (None: it can)."""
    shape = frame.metadata.sample_aspect
    if shape is not None and shape != 1:
        return f"its pixels are not square ({shape.numerator}:{shape.denominator}): the renderer scales them"
    return rgba_unsupported_reason(frame, HDR_TRANSFERS)


def swscale_rgba(frame: DecodedFrame) -> np.ndarray:
    """``frame``'s picture as the sampling shader renders it: (H, W, 4) uint8, full range, alpha 255,
    with the shader's chroma siting (swscale does the work, on the CPU).

    Raises:
        InvalidInputError: a frame :func:`unsupported_reason` refuses, or not a PyAV frame.
    """
    from alpha2.native_gpu.render.params import shader_params

    size = frame.metadata.display_size
    offset = shader_params(frame.pixel_format, frame.colour, size.width, size.height).chroma_offset
    return rgba_like_shader(frame, offset, HDR_TRANSFERS)


def rotate(pixels: np.ndarray, rotation: Rotation, mirrored: bool = False) -> np.ndarray:
    """``pixels`` flipped left to right where ``mirrored``, then turned clockwise by ``rotation``
    (contiguous): a frame's display matrix applied."""
    if mirrored:
        pixels = pixels[:, ::-1]
    return np.ascontiguousarray(np.rot90(pixels, k=-(int(rotation) // 90)))


def snapshot_on_cpu(player: Player, route: SnapshotRoute, mode_reason: str) -> PlayStats | None:
    """The snapshot through swscale, or None when the frame is one swscale does not convert as the
    shader does (the decoder is closed again; the route says why, and the GPU route takes over).

    Raises:
        InvalidInputError: no frame at ``--at``, an unwritable path.
    """
    from alpha2.api.devices import open_decoder

    stats, options = player.stats, player.options
    stats.mode, stats.mode_reason = "offscreen", mode_reason
    assert options.snapshot is not None
    snapshot_path = check_output_path(
        options.snapshot, what="snapshot", overwrite=options.overwrite, inputs=(player.source,)
    )
    timer = pipeline.RunTimer()
    clock = time.perf_counter
    t0 = clock()
    decoder = player.decoder = open_decoder(player.source, None, hwaccel=options.hwaccel)
    stats.hwaccel = decoder.hwaccel_report.as_dict()
    player._seek_start(decoder)
    frame = decoder.next_frame()
    stats.stages.add("decode", clock() - t0)
    if frame is None:
        where = f" at {options.at_s:g} s" if options.at_s else ""
        raise InvalidInputError(f"{player.source!r} has no decodable video frame{where}")
    try:
        why = unsupported_reason(frame)
        if why is not None:
            stats.snapshot_route = SnapshotRoute(
                SnapshotRouteKind.GPU, f"{route.reason}; but {why}"
            ).as_dict()
            player.decoder = None
            stats.stages = pipeline.StageTimes()
            decoder.close()
            return None
        t0 = clock()
        pixels = rotate(swscale_rgba(frame), frame.metadata.rotation, frame.metadata.mirrored)
        stats.stages.add("convert", clock() - t0)
        stats.size = Size(pixels.shape[1], pixels.shape[0])  # as displayed (rotation applied)
        stats.snapshot_pts_s = frame.pts_seconds
    finally:
        frame.release()
    t0 = clock()
    # zlib level 1: half the time of the default's 6 on a 720p frame (about 40 ms here), 1.5x the bytes.
    stats.snapshot = write_bytes_atomic(snapshot_path, png_bytes(pixels, level=1))
    stats.stages.add("snapshot", clock() - t0)
    stats.paths.add(ExecutionPath.SOFTWARE, int(pixels.nbytes), note="snapshot: swscale on the CPU")
    stats.snapshot_route = route.as_dict()
    stats.frames = 1
    stats.seconds = timer.stop()
    return stats
