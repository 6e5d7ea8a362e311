"""Stream ordering for DLPack consumers and host copies of CUDA planes, through the CUDA driver API.

:func:`order_consumer_stream` is what a CUDA plane's ``__dlpack__(stream=...)`` calls: it records an event
on the producer's stream (the decode) and makes the consumer's stream wait for it (``cuStreamWaitEvent``),
so the consumer's kernels read the plane only once it is decoded, without blocking the CPU.
:func:`download_planes` copies CUDA planes to host memory on the producer's stream and waits (bounded):
the one download of NVDEC frames in alpha2.native_gpu, which the CPU upload, a decoder process's host
slots and the frames' own ``plane_arrays()`` all use. (``alpha2.ffmpeg_bridge.download_frame`` is the
other, FFmpeg's own transfer: the bridge cannot import this package, and serves users without it.)

The DLPack stream values map onto CUstream handles directly: ``1`` is ``CU_STREAM_LEGACY`` and ``2`` is
``CU_STREAM_PER_THREAD`` in both; ``None`` means the legacy default stream.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.handles import CpuPlaneSet, CudaPtr2D
from alpha2.native_gpu._cuda.core import check

if TYPE_CHECKING:
    # Loaded where a CUDA plane is first ordered or copied: its driver wrappers (6-9 ms on a 2-core
    # machine) are not on the way to a CPU-decoded first frame.
    from alpha2.native_gpu._cuda.interop import HostDownloader, PrimaryContext

__all__ = [
    "PLANE_OPS",
    "consumer_stream_handle",
    "download_planes",
    "install_cuda_plane_ops",
    "order_consumer_stream",
    "owned_copy",
    "same_stream",
]

CU_STREAM_LEGACY = 0x1
CU_STREAM_PER_THREAD = 0x2
_CU_EVENT_DISABLE_TIMING = 0x2


def consumer_stream_handle(stream: int | None) -> int:
    """The CUstream for a DLPack ``stream`` value (None: the legacy default stream).

    Raises:
        InvalidInputError: 0 or -1 (the protocol's "ambiguous" and "no ordering": not a stream).
    """
    if stream is None:
        return CU_STREAM_LEGACY
    if stream in (0, -1) or stream < -1:
        raise InvalidInputError(f"DLPack stream {stream} names no CUDA stream to order")
    return int(stream)


def _canonical(handle: int) -> int:
    # FFmpeg's 0 (the null stream) is the legacy default stream, as CU_STREAM_LEGACY is.
    return CU_STREAM_LEGACY if handle == 0 else handle


def same_stream(producer: int, consumer: int) -> bool:
    """Whether two CUstream handles are one stream (so work on them is already in order)."""
    return _canonical(producer) == _canonical(consumer)


def order_consumer_stream(
    ordinal: int, producer_stream: int | None, consumer_stream: int | None, *, ctx: Any = None
) -> bool:
    """Make ``consumer_stream`` wait, on the GPU, for the work enqueued so far on ``producer_stream``.

    Args:
        ordinal: The CUDA device the planes live on.
        producer_stream: The stream the decode is ordered on (0: legacy default); None: nothing to wait for.
        consumer_stream: A DLPack ``stream`` value from the consumer.
        ctx: The primary context to use (default: the process's for ``ordinal``; tests pass a fake).

    Returns:
        Whether a wait was enqueued (False: no producer, or the two are one stream).

    Raises:
        CudaError: a driver call failed.
    """
    if producer_stream is None:
        return False
    consumer = consumer_stream_handle(consumer_stream)
    if same_stream(producer_stream, consumer):
        return False
    from alpha2.native_gpu._cuda.interop import primary_context

    context: PrimaryContext = ctx if ctx is not None else primary_context(ordinal)
    cu = context._cu
    with context:
        event = check(cu.cuEventCreate(_CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        try:
            check(cu.cuEventRecord(event, producer_stream), "cuEventRecord (decode stream)")
            check(cu.cuStreamWaitEvent(consumer, event, 0), "cuStreamWaitEvent (consumer stream)")
        finally:
            # Destroying a recorded event is allowed at once: the driver frees it once it completes.
            cu.cuEventDestroy(event)
    return True


_downloader: HostDownloader | None = None
_downloader_lock = threading.Lock()
_T = TypeVar("_T")


def owned_copy(staged: CpuPlaneSet) -> CpuPlaneSet:
    """Planes in staging memory copied into memory of their own (what :func:`download_planes` returns
    by default)."""
    return CpuPlaneSet(
        planes=tuple(
            type(p)(
                data=bytearray(p.as_raw()),
                bytes_per_row=p.bytes_per_row,
                width_bytes=p.width_bytes,
                height=p.height,
            )
            for p in staged.planes
        )
    )


def download_planes(
    planes: tuple[CudaPtr2D, ...],
    stream: int | None,
    timeout_s: float,
    consume: Callable[[CpuPlaneSet], _T] = owned_copy,  # type: ignore[assignment]
) -> _T:
    """Copy CUDA planes into host memory on ``stream`` (the decode's), waiting up to ``timeout_s``, and
    give ``consume``'s result for them.

    ``consume`` gets the planes in the process's pinned staging memory, valid only while it runs (the
    next download reuses it; downloads take turns); the default copies them into memory the caller
    owns. Writing them straight where they go (a texture, shared pages) saves that copy.

    Raises:
        GpuTimeoutError: the copy did not finish in time.
        CudaError: a driver call failed.
    """
    global _downloader
    with _downloader_lock:
        if _downloader is None:
            from alpha2.native_gpu._cuda.interop import HostDownloader

            _downloader = HostDownloader()
        return consume(_downloader.download(planes, stream, timeout_s))


class _PlaneOps:
    """The CUDA operations :class:`~alpha2.gpu.frames.DecodedFrame` planes use (the vocabulary's
    :class:`~alpha2.gpu.frames.CudaPlaneOps`), bounded by the GPU wait timeout."""

    def order_consumer_stream(self, ordinal: int, producer: int, consumer: int | None) -> None:
        order_consumer_stream(ordinal, producer, consumer)

    def download_planes(self, planes: tuple[CudaPtr2D, ...], stream: int | None) -> CpuPlaneSet:
        from alpha2.native_gpu.device.waits import gpu_wait_timeout

        return download_planes(planes, stream, gpu_wait_timeout())


PLANE_OPS = _PlaneOps()
"""Installed into the vocabulary by :func:`install_cuda_plane_ops`."""


def install_cuda_plane_ops() -> None:
    """Let decoded frames' CUDA planes order DLPack consumers and copy to the host through this module.

    Importing needs no GPU; the driver is loaded on the first call that needs it. Idempotent.
    """
    from alpha2.gpu.frames import set_cuda_plane_ops

    set_cuda_plane_ops(PLANE_OPS)
