"""DLPack over raw pointers: CudaPtr2D planes or CPU plane sets -> ``av.VideoFrame.from_dlpack``, no copy."""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import av
import numpy as np

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.handles import CpuPlaneSet, CudaPtr2D

__all__ = ["frame_from_dlpack"]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER_T = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER_T),
]

_KDL_CPU = 1
_KDL_CUDA = 2
_dl_live: dict[int, tuple[object, ...]] = {}
_dl_lock = threading.Lock()


@_DELETER_T
def _dl_deleter(managed: Any) -> None:
    with _dl_lock:
        _dl_live.pop(ctypes.addressof(managed.contents), None)


_CAPSULE_DESTRUCTOR_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR_T]
_PyCapsule_IsValid = ctypes.pythonapi.PyCapsule_IsValid
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


@_CAPSULE_DESTRUCTOR_T
def _capsule_destructor(capsule: int | None) -> None:
    # Called for a capsule nobody consumed (still named "dltensor"): release the tensor ourselves.
    if capsule and _PyCapsule_IsValid(capsule, b"dltensor"):
        address = _PyCapsule_GetPointer(capsule, b"dltensor")
        with _dl_lock:
            _dl_live.pop(address, None)


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
        shape = (ctypes.c_int64 * 2)(self._rows, self._cols)
        strides = (ctypes.c_int64 * 2)(self._pitch, 1)
        managed = _DLManagedTensor()
        managed.dl_tensor.data = self._ptr
        managed.dl_tensor.device = _DLDevice(self._device[0], self._device[1])
        managed.dl_tensor.ndim = 2
        managed.dl_tensor.dtype = _DLDataType(1, self._bits, 1)  # kDLUInt
        managed.dl_tensor.shape = shape
        managed.dl_tensor.strides = strides
        managed.dl_tensor.byte_offset = 0
        managed.deleter = _dl_deleter
        address = ctypes.addressof(managed)
        with _dl_lock:
            _dl_live[address] = (managed, shape, strides, self._owner)
        return _PyCapsule_New(address, b"dltensor", _capsule_destructor)


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
                    (_KDL_CPU, 0),
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
                (_KDL_CUDA, cplane.device_ordinal),
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
