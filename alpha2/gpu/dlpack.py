"""Planes as arrays: :class:`PlaneArray` exports one image plane through DLPack or as a numpy array.

A plane in host memory is a strided numpy view of the producer's buffer (no copy); its ``__dlpack__`` is
numpy's own. A plane in CUDA memory is exported as a DLPack capsule over its device pointer and pitch,
and honours the DLPack stream protocol: before the capsule is handed out, the consumer's stream is made
to wait for the producer's (``stream_order``, given by whoever knows the CUDA driver: the vocabulary
does not). PyAV's own ``VideoPlane.__dlpack__`` ignores ``stream``; this one does not.

The capsule code is plain ``ctypes`` over the Python C API; it touches no GPU API.
"""

from __future__ import annotations

import ctypes
import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PlaneFormat

__all__ = ["DLDeviceType", "PlaneArray", "StreamOrder", "array_protocol", "dlpack_capsule", "plane_element"]


class DLDeviceType(enum.IntEnum):
    """The DLPack device types alpha2 exports (``DLDeviceType`` in ``dlpack.h``)."""

    CPU = 1
    """Host memory."""
    CUDA = 2
    """CUDA device memory."""


StreamOrder = Callable[[int | None], None]
"""Makes the consumer's CUDA stream (a DLPack ``stream`` value) wait for the producer's work."""


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

# Tensors handed out and not yet deleted, with what keeps their memory valid.
_dl_live: dict[int, tuple[object, ...]] = {}
_dl_lock = threading.Lock()


def _let_go(managed: Any) -> None:
    with _dl_lock:
        _dl_live.pop(ctypes.addressof(managed.contents), None)


_dl_deleter = _DELETER_T(_let_go)


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


def _destroy_capsule(capsule: int | None) -> None:
    # A capsule nobody consumed is still named "dltensor": then the tensor is ours to let go.
    if capsule and _PyCapsule_IsValid(capsule, b"dltensor"):
        address = _PyCapsule_GetPointer(capsule, b"dltensor")
        with _dl_lock:
            _dl_live.pop(address, None)


_capsule_destructor = _CAPSULE_DESTRUCTOR_T(_destroy_capsule)


def live_exports() -> int:
    """Capsules made and not yet deleted by their consumer (for leak tests)."""
    with _dl_lock:
        return len(_dl_live)


def dlpack_capsule(
    data_ptr: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    *,
    type_code: int,
    bits: int,
    device: tuple[int, int],
    owner: object,
) -> object:
    """A ``"dltensor"`` capsule over ``data_ptr`` (strides in elements); ``owner`` lives until deleted.

    Args:
        data_ptr: Address of the first element (host or device).
        shape: Extent per dimension.
        strides: Elements from one index to the next, per dimension.
        type_code: DLPack dtype code (0 int, 1 uint, 2 float).
        bits: Bits per element.
        device: ``(DLDeviceType, device id)``.
        owner: Kept alive until the consumer's deleter runs (or the unconsumed capsule is freed).
    """
    if len(shape) != len(strides) or not shape:
        raise InvalidInputError(f"shape {shape} and strides {strides} must be non-empty and of one length")
    ndim = len(shape)
    c_shape = (ctypes.c_int64 * ndim)(*shape)
    c_strides = (ctypes.c_int64 * ndim)(*strides)
    managed = _DLManagedTensor()
    managed.dl_tensor.data = data_ptr
    managed.dl_tensor.device = _DLDevice(int(device[0]), int(device[1]))
    managed.dl_tensor.ndim = ndim
    managed.dl_tensor.dtype = _DLDataType(type_code, bits, 1)
    managed.dl_tensor.shape = c_shape
    managed.dl_tensor.strides = c_strides
    managed.dl_tensor.byte_offset = 0
    managed.deleter = _dl_deleter
    address = ctypes.addressof(managed)
    with _dl_lock:
        _dl_live[address] = (managed, c_shape, c_strides, owner)
    return _PyCapsule_New(address, b"dltensor", _capsule_destructor)


def plane_element(plane_format: PlaneFormat) -> tuple[np.dtype[Any], int]:
    """The numpy dtype of one array element of a plane and the elements per texel.

    Channels of 8, 16 or 32 bits are one element each (RG8: two uint8 per texel); packed formats whose
    channels are not whole bytes (RGB10A2) are one uint32 per texel.
    """
    bytes_per_texel, channels = plane_format.bytes_per_texel, plane_format.channels
    bits = plane_format.bits_per_channel
    if bits in (8, 16, 32) and bits * channels == bytes_per_texel * 8:
        kind = "f" if plane_format.is_float else "u"
        return np.dtype(f"{kind}{bits // 8}"), channels
    return np.dtype("u4" if bytes_per_texel == 4 else "u1"), 1 if bytes_per_texel == 4 else bytes_per_texel


_TYPE_CODES = {"u": 1, "i": 0, "f": 2}


@dataclass(frozen=True, eq=False)
class PlaneArray:
    """One plane of a frame as an array: ``(height, width)`` or ``(height, width, channels)``.

    Use it with any DLPack consumer (``np.from_dlpack``, ``torch.from_dlpack``, ``cupy.from_dlpack``) or
    call :meth:`to_ndarray` (``np.asarray(plane)`` is the same view). Valid while the frame it came from
    is not released.
    """

    data_ptr: int
    """Address of the first row (host or CUDA device memory)."""
    height: int
    """Rows."""
    width: int
    """Texels per row."""
    channels: int
    """Elements per texel (1: the array is 2-D)."""
    dtype: np.dtype[Any]
    """Element type."""
    row_stride_bytes: int
    """Bytes from one row to the next."""
    device: tuple[int, int]
    """``(DLDeviceType, device id)``: ``(1, 0)`` for host memory, ``(2, ordinal)`` for CUDA."""
    owner: object = field(repr=False)
    """Keeps the plane memory valid (the frame's keep-alive, or the buffer)."""
    buffer: Any = field(default=None, repr=False)
    """For host planes: the buffer-protocol object holding the rows (not in the repr: a 1080p plane's
    bytes made it 8 MB long)."""
    stream_order: StreamOrder | None = None
    """For CUDA planes: makes a consumer's stream wait for the decode (None: nothing to wait for)."""

    def __post_init__(self) -> None:
        if self.row_stride_bytes % self.dtype.itemsize:
            raise UnsupportedError(
                f"a row pitch of {self.row_stride_bytes} bytes is not a whole number of {self.dtype} "
                "elements; read the plane as bytes (CpuPlane.to_ndarray(dtype=numpy.uint8))"
            )

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return (self.height, self.width) if self.channels == 1 else (self.height, self.width, self.channels)

    @property
    def strides_elements(self) -> tuple[int, ...]:
        """Elements from one index to the next, per dimension."""
        row = self.row_stride_bytes // self.dtype.itemsize
        return (row, 1) if self.channels == 1 else (row, self.channels, 1)

    @property
    def on_cuda(self) -> bool:
        """Whether the plane is CUDA device memory."""
        return self.device[0] == DLDeviceType.CUDA

    def __dlpack_device__(self) -> tuple[int, int]:
        return (int(self.device[0]), int(self.device[1]))

    def __dlpack__(self, *, stream: int | None = None, **kwargs: Any) -> object:
        """The DLPack capsule; for CUDA planes the consumer's ``stream`` first waits for the decode.

        ``stream`` follows the protocol: None or 1 the legacy default stream, 2 the per-thread default
        stream, another integer a ``cudaStream_t``, -1 no ordering (the consumer orders the work itself).

        Raises:
            InvalidInputError: ``stream=0`` for a CUDA plane (the protocol forbids it: ambiguous).
        """
        if not self.on_cuda:
            return self.to_ndarray().__dlpack__(stream=stream, **kwargs)
        if stream == 0:
            raise InvalidInputError(
                "stream=0 is ambiguous for CUDA in the DLPack protocol; pass 1 (legacy default stream), "
                "2 (per-thread default stream), a stream handle, or -1 to order the work yourself"
            )
        if self.stream_order is not None and stream != -1:
            self.stream_order(stream)
        return dlpack_capsule(
            self.data_ptr,
            self.shape,
            self.strides_elements,
            type_code=_TYPE_CODES[self.dtype.kind],
            bits=self.dtype.itemsize * 8,
            device=self.device,
            owner=self.owner,
        )

    def to_ndarray(self) -> np.ndarray:
        """A numpy view of a host plane (no copy; valid while the frame is held).

        Raises:
            UnsupportedError: a CUDA plane (use ``DecodedFrame.to_ndarray()``, which downloads, or a CUDA
                array library through DLPack).
        """
        if self.on_cuda:
            raise UnsupportedError(
                "this plane is CUDA memory: use torch.from_dlpack / cupy.from_dlpack on it, or "
                "DecodedFrame.to_ndarray(), which copies the planes to host memory"
            )
        flat = np.frombuffer(memoryview(self.buffer).cast("B"), dtype=np.uint8)
        itemsize = self.dtype.itemsize
        elements = np.frombuffer(flat.data, dtype=self.dtype, count=flat.size // itemsize)
        strides = tuple(s * itemsize for s in self.strides_elements)
        # Writeable exactly when the producer's buffer is (numpy's DLPack export refuses read-only arrays).
        return np.lib.stride_tricks.as_strided(elements, shape=self.shape, strides=strides)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        # Without it np.asarray(plane) was a 0-d object array holding the PlaneArray, nothing said.
        return array_protocol(self.to_ndarray(), dtype, copy, "plane", "leave copy out")


def array_protocol(array: np.ndarray, dtype: Any, copy: bool | None, what: str, hint: str) -> np.ndarray:
    """``__array__(dtype, copy)`` of an object whose pixels are ``array`` (numpy 2's protocol: ``copy``
    False asks for no copy, or an error; None a copy only where needed; True a copy).

    Raises:
        InvalidInputError: another ``dtype`` with ``copy=False`` (the message names ``what`` and ends
            with ``hint``, what to do instead).
    """
    if dtype is not None and np.dtype(dtype) != array.dtype:
        if copy is False:
            raise InvalidInputError(
                f"this {array.dtype} {what} cannot be made {np.dtype(dtype)} without a copy, and copy=False "
                f"was asked; {hint}"
            )
        return array.astype(dtype)
    return array.copy() if copy else array
