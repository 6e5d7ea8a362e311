"""DLPack over raw pointers: CudaPtr2D planes or CPU plane sets -> ``av.VideoFrame.from_dlpack``, no copy.

The capsules are the vocabulary's (:func:`alpha2.gpu.dlpack.dlpack_capsule`).
"""

from __future__ import annotations

from typing import Any

import av
import numpy as np

from alpha2.gpu.dlpack import DLDeviceType, dlpack_capsule
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.handles import CpuPlaneSet, CudaPtr2D

__all__ = ["frame_from_dlpack"]


class _PitchedPlane:
    """A 2-D pitched plane exported through DLPack (``__dlpack__``), for PyAV's ``from_dlpack``."""

    def __init__(
        self,
        ptr: int,
        rows: int,
        cols: int,
        pitch_elems: int,
        bits: int,
        device: tuple[int, int],
        owner: object,
    ) -> None:
        self._ptr, self._rows, self._cols, self._pitch = ptr, rows, cols, pitch_elems
        self._bits, self._device, self._owner = bits, device, owner

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device

    def __dlpack__(self, *, stream: int | None = None, **_: object) -> object:
        return dlpack_capsule(
            self._ptr,
            (self._rows, self._cols),
            (self._pitch, 1),
            type_code=1,  # kDLUInt
            bits=self._bits,
            device=self._device,
            owner=self._owner,
        )


def _dlpack_planes(
    planes: tuple[CudaPtr2D, ...] | CpuPlaneSet, pixel_format: PixelFormat
) -> tuple[_PitchedPlane, ...]:
    bytes_per_elem = pixel_format.storage_bits // 8
    out = []
    if isinstance(planes, CpuPlaneSet):
        for plane in planes.planes:
            arr = np.frombuffer(memoryview(plane.data).cast("B"), dtype=np.uint8)
            out.append(
                _PitchedPlane(
                    arr.ctypes.data,
                    plane.height,
                    plane.width_bytes // bytes_per_elem,
                    plane.bytes_per_row // bytes_per_elem,
                    pixel_format.storage_bits,
                    (DLDeviceType.CPU, 0),
                    (arr, plane),
                )
            )
        return tuple(out)
    for cplane in planes:
        out.append(
            _PitchedPlane(
                cplane.device_ptr,
                cplane.height,
                cplane.width_bytes // bytes_per_elem,
                cplane.pitch_bytes // bytes_per_elem,
                pixel_format.storage_bits,
                (DLDeviceType.CUDA, cplane.device_ordinal),
                cplane,
            )
        )
    return tuple(out)


def frame_from_dlpack(
    planes: tuple[CudaPtr2D, ...] | CpuPlaneSet, pixel_format: PixelFormat, width: int, height: int
) -> av.VideoFrame:
    """Wrap bi-planar planes (nv12 / p010 / p016) as a PyAV frame without copying (DLPack)."""
    if pixel_format.ffmpeg_name not in ("nv12", "p010le", "p016le"):
        raise InvalidInputError(
            f"DLPack frames must be nv12, p010le or p016le, got {pixel_format.ffmpeg_name}; "
            "download CUDA planes of other formats first"
        )
    kwargs: dict[str, Any] = {}
    if not isinstance(planes, CpuPlaneSet):
        kwargs["device_id"] = planes[0].device_ordinal
    return av.VideoFrame.from_dlpack(
        _dlpack_planes(planes, pixel_format),
        format=pixel_format.ffmpeg_name,
        width=width,
        height=height,
        **kwargs,
    )
