"""The only package that touches cuda-python (the CUDA driver API), imported lazily on first use.

Importing it needs neither cuda-python nor a CUDA driver: :func:`~alpha2.native_gpu._cuda.core.cuda_driver`
imports ``cuda.bindings.driver`` when first called and raises
:class:`~alpha2.native_gpu._cuda.core.CudaUnavailableError` when it cannot.
"""

from __future__ import annotations

from alpha2.native_gpu._cuda.core import (
    CudaError,
    CudaUnavailableError,
    check,
    cuda_available,
    cuda_device_count,
    cuda_device_uuids,
    cuda_driver,
    cuda_init,
    cuda_ordinal_for_uuid,
)

__all__ = [
    "CudaError",
    "CudaUnavailableError",
    "check",
    "cuda_available",
    "cuda_device_count",
    "cuda_device_uuids",
    "cuda_driver",
    "cuda_init",
    "cuda_ordinal_for_uuid",
]
