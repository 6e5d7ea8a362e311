"""Decoded frames as vocabulary: planes, format, colour and timing, plus an opaque keep-alive.

The FFmpeg bridge makes :class:`DecodedFrame` objects; the importer consumes them. Nothing here
touches FFmpeg: the decoder's own frame object rides along only in ``keep_alive``, which keeps the
plane memory valid for as long as the frame (or any of its planes) is referenced.
"""

from __future__ import annotations

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.errors import ClosedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import FrameMetadata
from alpha2.gpu.handles import CpuPlaneSet, CudaPtr2D
from alpha2.gpu.surfaces import SurfaceIdentity, SurfaceReservation

__all__ = ["DecodedFrame"]


class DecodedFrame:
    """One decoded picture, on the GPU (CUDA planes) or in host memory (a CPU plane set).

    Release it (:meth:`release`, the context manager, or dropping the last reference) to give its
    surface back to the session's :class:`~alpha2.gpu.surfaces.SurfaceBudget`.
    """

    __slots__ = (
        "_on_gpu",
        "_planes",
        "_released",
        "colour",
        "cuda_stream",
        "identity",
        "keep_alive",
        "metadata",
        "pixel_format",
        "reservation",
    )

    def __init__(
        self,
        planes: CpuPlaneSet | tuple[CudaPtr2D, ...],
        pixel_format: PixelFormat,
        colour: ColourInfo,
        metadata: FrameMetadata,
        identity: SurfaceIdentity,
        reservation: SurfaceReservation | None = None,
        cuda_stream: int | None = None,
        keep_alive: object = None,
    ) -> None:
        self._planes: CpuPlaneSet | tuple[CudaPtr2D, ...] | None = planes
        self._on_gpu = not isinstance(planes, CpuPlaneSet)
        self.pixel_format = pixel_format
        """Software layout of the planes (nv12 / p010 for NVDEC frames)."""
        self.colour = colour
        """Colour description, already resolved (no unspecified fields)."""
        self.metadata = metadata
        """Timing, sizes, rotation and interlacing."""
        self.identity = identity
        """Decoder, generation, coded size and format the surface belongs to."""
        self.reservation = reservation
        """The budget reservation this frame holds, or None when not accounted."""
        self.cuda_stream = cuda_stream
        """CUDA stream the decode work is ordered on (0: legacy default stream); None for CPU planes."""
        self.keep_alive = keep_alive
        """The decoder's frame object; keeps the plane memory valid."""
        self._released = False

    @property
    def planes(self) -> CpuPlaneSet | tuple[CudaPtr2D, ...]:
        """The planes: a :class:`CpuPlaneSet`, or one :class:`CudaPtr2D` per plane.

        Raises:
            ClosedError: The frame was released.
        """
        if self._planes is None:
            raise ClosedError("this DecodedFrame was released; its planes may be reused by the decoder")
        return self._planes

    @property
    def on_gpu(self) -> bool:
        """Whether the planes are CUDA device memory."""
        return self._on_gpu

    @property
    def width(self) -> int:
        """Display width in pixels (before rotation)."""
        return self.metadata.display_size.width

    @property
    def height(self) -> int:
        """Display height in pixels (before rotation)."""
        return self.metadata.display_size.height

    @property
    def pts(self) -> int | None:
        """Presentation timestamp in ``metadata.time_base`` units."""
        return self.metadata.pts

    @property
    def pts_seconds(self) -> float | None:
        """Presentation time in seconds."""
        return self.metadata.pts_seconds

    @property
    def key_frame(self) -> bool:
        """Whether the frame is a key frame."""
        return self.metadata.key_frame

    @property
    def released(self) -> bool:
        """Whether :meth:`release` was called."""
        return self._released

    def release(self) -> None:
        """Give the surface back to the budget and drop the decoder frame. Idempotent."""
        if self._released:
            return
        self._released = True
        reservation, self.reservation = self.reservation, None
        # Drop our references so the decoder may reuse the surface once nobody else holds it.
        self.keep_alive = None
        self._planes = None
        if reservation is not None:
            reservation.release()

    def __enter__(self) -> DecodedFrame:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        where = "cuda" if self.on_gpu else "cpu"
        state = " released" if self._released else ""
        return (
            f"<DecodedFrame {self.width}x{self.height} {self.pixel_format.ffmpeg_name} {where} "
            f"pts={self.metadata.pts} gen={self.identity.generation}{state}>"
        )
