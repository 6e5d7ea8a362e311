"""CUDA driver API access (cuda-python): lazy import, cuInit, device count, ordinal <-> UUID, check function.

cuda-python is optional (the ``cuda`` extra). Nothing here imports it at module import time;
:func:`cuda_driver` does on first use, preferring ``cuda.bindings.driver`` (cuda-python >= 12.6) and
falling back to the older ``cuda.cuda``. Every driver call returns ``(CUresult, *values)``;
:func:`check` turns a non-success CUresult into a typed alpha2 error.
"""

from __future__ import annotations

import threading
from typing import Any

from alpha2.gpu.errors import (
    DeviceLostError,
    Error,
    ErrorKind,
    InvalidInputError,
    OutOfMemoryError,
    UnsupportedError,
)

# CUresult values that map to a specific error class.
CUDA_SUCCESS = 0
_CUDA_ERROR_INVALID_VALUE = 1
_CUDA_ERROR_OUT_OF_MEMORY = 2
_CUDA_ERROR_NOT_INITIALIZED = 3
_CUDA_ERROR_NO_DEVICE = 100
_CUDA_ERROR_INVALID_DEVICE = 101
_CUDA_ERROR_NOT_SUPPORTED = 801
_CUDA_ERROR_NOT_READY = 600
_CUDA_ERROR_LAUNCH_FAILED = 719
_CUDA_ERROR_ILLEGAL_ADDRESS = 700
_CUDA_ERROR_INSUFFICIENT_DRIVER = 35
_CUDA_ERROR_STUB_LIBRARY = 34
_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803
_CUDA_ERROR_OPERATING_SYSTEM = 304


class CudaUnavailableError(UnsupportedError):
    """No usable CUDA: cuda-python is not installed, there is no driver, or no device."""


class CudaError(Error):
    """A CUDA driver call failed. ``cu_result`` is the CUresult as an int, ``result_name`` its name."""

    def __init__(
        self, message: str, *, cu_result: int, result_name: str, kind: ErrorKind | None = None
    ) -> None:
        super().__init__(message, kind=kind)
        self.cu_result = int(cu_result)
        self.result_name = result_name


class CudaOutOfMemoryError(CudaError, OutOfMemoryError):
    """CUDA_ERROR_OUT_OF_MEMORY."""


class CudaDeviceLostError(CudaError, DeviceLostError):
    """A sticky error (illegal address, launch failure): the context is unusable."""


class CudaUnsupportedError(CudaError, UnsupportedError):
    """CUDA_ERROR_NOT_SUPPORTED and driver/device absence."""


class CudaInvalidValueError(CudaError, InvalidInputError):
    """CUDA_ERROR_INVALID_VALUE / INVALID_DEVICE: the caller passed something wrong."""


_driver_lock = threading.Lock()
_driver: Any = None
_initialised = False


def cuda_driver() -> Any:
    """The cuda-python driver module (``cuda.bindings.driver``), imported on first use.

    Raises:
        CudaUnavailableError: cuda-python is not installed.
    """
    global _driver
    with _driver_lock:
        if _driver is None:
            try:
                from cuda.bindings import driver as cu
            except ImportError:
                try:
                    from cuda import cuda as cu
                except ImportError as exc:
                    raise CudaUnavailableError(
                        "cuda-python is not installed; install alpha2[cuda] (pip install cuda-python) "
                        "for CUDA interop"
                    ) from exc
            _driver = cu
        return _driver


def _result_parts(result: Any) -> tuple[int, str]:
    code = int(result)
    name = getattr(result, "name", None) or f"CUresult({code})"
    return code, str(name)


def check(result: Any, what: str) -> Any:
    """Unpack a cuda-python return value ``(CUresult, *values)``; raise a typed error unless CUDA_SUCCESS.

    Returns:
        None for no values, the value for one, a tuple for several.

    Raises:
        CudaError: (or the subclass for the result) carrying ``cu_result``.
    """
    if isinstance(result, tuple):
        err, values = result[0], result[1:]
    else:
        err, values = result, ()
    if int(err) != CUDA_SUCCESS:  # the per-frame path makes some 30 checks a frame: the name on failure only
        code, name = _result_parts(err)
        message = f"{what} failed: {name}"
        detail = _error_string(err)
        if detail:
            message += f" ({detail})"
        cls: type[CudaError]
        if code == _CUDA_ERROR_OUT_OF_MEMORY:
            cls = CudaOutOfMemoryError
        elif code in (_CUDA_ERROR_ILLEGAL_ADDRESS, _CUDA_ERROR_LAUNCH_FAILED):
            cls = CudaDeviceLostError
        elif code in (
            _CUDA_ERROR_NOT_SUPPORTED,
            _CUDA_ERROR_NO_DEVICE,
            _CUDA_ERROR_INSUFFICIENT_DRIVER,
            _CUDA_ERROR_STUB_LIBRARY,
            _CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
        ):
            cls = CudaUnsupportedError
        elif code in (_CUDA_ERROR_INVALID_VALUE, _CUDA_ERROR_INVALID_DEVICE):
            cls = CudaInvalidValueError
        else:
            cls = CudaError
        raise cls(message, cu_result=code, result_name=name)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _error_string(err: Any) -> str:
    try:
        cu = cuda_driver()
        res, text = cu.cuGetErrorString(err)
        if int(res) == 0 and text:
            return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:
        pass
    return ""


def cuda_init() -> Any:
    """cuInit(0) once; returns the driver module.

    Raises:
        CudaUnavailableError: cuda-python missing, or no driver / no device.
    """
    global _initialised
    cu = cuda_driver()
    if not _initialised:
        try:
            check(cu.cuInit(0), "cuInit")
        except CudaError as exc:
            raise CudaUnavailableError(f"CUDA is not usable: {exc.message}") from exc
        except Exception as exc:
            # cuda-python 13 loads libcuda on the first call and raises its loader's error
            # (DynamicLibNotFoundError) on a machine without the NVIDIA driver, where 12 returned
            # CUDA_ERROR_NO_DEVICE or similar.
            raise CudaUnavailableError(
                f"CUDA is not usable: the NVIDIA driver's libcuda could not be loaded ({type(exc).__name__}: "
                f"{str(exc).strip()})"
            ) from exc
        _initialised = True
    return cu


def cuda_available() -> bool:
    """Whether cuda-python and a CUDA driver with at least one device are there."""
    try:
        return cuda_device_count() > 0
    except (CudaUnavailableError, CudaError):
        return False


def cuda_device_count() -> int:
    """Number of CUDA devices."""
    cu = cuda_init()
    return int(check(cu.cuDeviceGetCount(), "cuDeviceGetCount"))


def _uuid_bytes(value: Any) -> bytes:
    raw = getattr(value, "bytes", value)
    if isinstance(raw, str):
        raw = raw.encode("latin-1")
    data = bytes(raw)
    if len(data) != 16:
        raise CudaError(f"cuDeviceGetUuid returned {len(data)} bytes, not 16", cu_result=0, result_name="?")
    return data


def cuda_device_uuid(ordinal: int) -> bytes:
    """The 16-byte UUID of CUDA device ``ordinal`` (equal to Vulkan's deviceUUID for the same GPU)."""
    cu = cuda_init()
    device = check(cu.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
    getter = getattr(cu, "cuDeviceGetUuid_v2", None) or cu.cuDeviceGetUuid
    return _uuid_bytes(check(getter(device), f"cuDeviceGetUuid({ordinal})"))


def cuda_device_uuids() -> list[bytes]:
    """UUIDs of all CUDA devices, by ordinal.

    Raises:
        CudaUnavailableError: no cuda-python, no driver or no device.
    """
    return [cuda_device_uuid(i) for i in range(cuda_device_count())]


def cuda_ordinal_for_uuid(uuid: bytes) -> int | None:
    """The CUDA ordinal of the device with this UUID; None when CUDA is absent or no device matches."""
    try:
        uuids = cuda_device_uuids()
    except (CudaUnavailableError, CudaError):
        return None
    for ordinal, value in enumerate(uuids):
        if value == bytes(uuid):
            return ordinal
    return None


def cuda_device_name(ordinal: int) -> str:
    """The name CUDA gives device ``ordinal`` (``NVIDIA H200``)."""
    cu = cuda_init()
    device = check(cu.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
    raw = check(cu.cuDeviceGetName(256, device), f"cuDeviceGetName({ordinal})")
    data = bytes(raw) if not isinstance(raw, str) else raw.encode()
    return data.split(b"\0", 1)[0].decode(errors="replace")
