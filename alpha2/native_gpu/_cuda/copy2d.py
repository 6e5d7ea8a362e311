"""Device-to-device copies of a frame's CUDA planes, for the frame pool and the decoder processes' blocks.

A copy is one ``cuMemcpy2DAsync`` with a descriptor made once and reused (filling one costs less than
making one, and under many decoder threads every driver call waits to take the GIL back: the fewer
Python-side steps, the better). Planes that lie back to back with one pitch, as FFmpeg's CUDA pools make
NV12 and P010 frames, are copied as one (:func:`back_to_back`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from alpha2.gpu.handles import CudaPtr2D
from alpha2.native_gpu._cuda.core import check

__all__ = ["DeviceCopy2D", "back_to_back"]


def back_to_back(planes: Sequence[CudaPtr2D]) -> bool:
    """Whether the planes share one pitch and each begins where the one before ends (one copy takes all)."""
    if not planes:
        return False
    first = planes[0]
    return all(p.pitch_bytes == first.pitch_bytes for p in planes) and all(
        b.device_ptr == a.device_ptr + a.pitch_bytes * a.height for a, b in itertools.pairwise(planes)
    )


class DeviceCopy2D:
    """One reusable ``CUDA_MEMCPY2D`` descriptor for device-to-device copies. Not thread-safe: one per
    copying thread (or a lock around :meth:`enqueue`).

    Args:
        cu: cuda-python's driver module.
        what: Names the copies in a driver error (e.g. ``"into the frame pool"``).
    """

    def __init__(self, cu: Any, what: str) -> None:
        self._cu = cu
        self._what = what
        self._copy: Any = None

    def enqueue(
        self, src: int, src_pitch: int, dst: int, dst_pitch: int, width: int, height: int, stream: Any
    ) -> None:
        """Enqueue ``height`` rows of ``width`` bytes from ``src`` to ``dst`` on ``stream``.

        Raises:
            CudaError: the driver refused the copy.
        """
        cu = self._cu
        copy = self._copy
        if copy is None:
            copy = self._copy = cu.CUDA_MEMCPY2D()
            copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
            copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        copy.srcDevice = src
        copy.srcPitch = src_pitch
        copy.dstDevice = dst
        copy.dstPitch = dst_pitch
        copy.WidthInBytes = width
        copy.Height = height
        check(cu.cuMemcpy2DAsync(copy, stream), f"cuMemcpy2DAsync (D->D, {self._what})")
