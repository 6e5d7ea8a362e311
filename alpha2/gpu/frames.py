"""Decoded frames as vocabulary: planes, format, colour and timing, plus an opaque keep-alive.

The FFmpeg bridge makes :class:`DecodedFrame` objects; the importer consumes them. Nothing here
touches FFmpeg: the producer's own object rides along only in ``keep_alive``, opaque, which keeps the
plane memory valid for as long as the frame (or any of its planes) is referenced.

Frames are arrays too: :meth:`DecodedFrame.plane` gives one plane as a
:class:`~alpha2.gpu.dlpack.PlaneArray` (DLPack, numpy), :meth:`DecodedFrame.to_ndarray` a numpy array.
For CUDA planes the stream ordering and the host copy need the CUDA driver, which only
``alpha2.native_gpu._cuda`` touches: it hands those two operations in through :func:`set_cuda_plane_ops`
(the front door does, before it decodes), and the vocabulary itself imports nothing of it.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import numpy as np

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.dlpack import DLDeviceType, PlaneArray, plane_element
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import FrameMetadata
from alpha2.gpu.handles import CpuPlaneSet, CudaPtr2D
from alpha2.gpu.surfaces import SurfaceIdentity, SurfaceReservation

__all__ = ["AheadWork", "CudaPlaneOps", "DecodedFrame", "set_cuda_plane_ops"]


class CudaPlaneOps(Protocol):
    """What CUDA planes need from the CUDA driver: stream ordering for DLPack, and host copies."""

    def order_consumer_stream(self, ordinal: int, producer: int, consumer: int | None) -> None:
        """Make the ``consumer`` stream wait for the work on ``producer`` (no CPU wait)."""

    def download_planes(self, planes: tuple[CudaPtr2D, ...], stream: int | None) -> CpuPlaneSet:
        """Copy ``planes`` to host memory after the work on ``stream``, waiting (bounded)."""


_cuda_ops: CudaPlaneOps | None = None


def set_cuda_plane_ops(ops: CudaPlaneOps) -> None:
    """Install the CUDA operations CUDA planes use (``alpha2.native_gpu._cuda.streams.PLANE_OPS``)."""
    global _cuda_ops
    _cuda_ops = ops


def _cuda_plane_ops() -> CudaPlaneOps:
    if _cuda_ops is None:
        raise InvalidInputError(
            "reading CUDA planes needs alpha2's CUDA support, which was not loaded: decode through "
            "alpha2.open(...), or call alpha2.native_gpu.install_cuda_plane_ops() first"
        )
    return _cuda_ops


@functools.cache
def _plane_units(pixel_format: PixelFormat) -> tuple[tuple[int, int], ...]:
    """Per plane: bytes per texel and bytes per array element (a row's length and stride must divide)."""
    return tuple((f.bytes_per_texel, plane_element(f)[0].itemsize) for f in pixel_format.plane_formats)


def _checked_planes(planes: object, pixel_format: PixelFormat) -> CpuPlaneSet | tuple[CudaPtr2D, ...]:
    """The planes, refused unless they are a plane set of ``pixel_format``'s planes. O(planes): per frame."""
    if isinstance(planes, CpuPlaneSet):
        checked: CpuPlaneSet | tuple[CudaPtr2D, ...] = planes
        rows = [(p.width_bytes, p.bytes_per_row) for p in planes.planes]
    elif isinstance(planes, (tuple, list)) and planes and all(isinstance(p, CudaPtr2D) for p in planes):
        checked = tuple(planes)
        rows = [(p.width_bytes, p.pitch_bytes) for p in checked]
    else:
        raise InvalidInputError(
            f"DecodedFrame.planes must be a CpuPlaneSet or a tuple of CudaPtr2D, got {type(planes).__name__}"
        )
    units = _plane_units(pixel_format)
    if len(rows) != len(units):
        raise InvalidInputError(
            f"a {pixel_format.ffmpeg_name} frame has {len(units)} plane(s), got {len(rows)}"
        )
    for index, ((width_bytes, stride), (texel, element)) in enumerate(zip(rows, units)):
        if width_bytes % texel or stride % element:
            raise InvalidInputError(
                f"plane {index} of {pixel_format.ffmpeg_name} ({texel}-byte texels of {element}-byte "
                f"elements) cannot have {width_bytes}-byte rows every {stride} bytes"
            )
    return checked


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class AheadWork(Protocol):
    """Work a consumer did on a frame's planes before the frame was handed out (on the decoder's
    thread): the GPU copy's slot, already copied into (:meth:`FrameImporter.copy_ahead
    <alpha2.native_gpu.interop.importer.FrameImporter.copy_ahead>`). Opaque to everything else.

    The consumer takes it with :meth:`DecodedFrame.take_ahead`; a frame released without that discards
    it, which gives back whatever it holds.
    """

    def discard(self) -> None:
        """Give back what the work holds (it is not used). Idempotent; any thread."""


class DecodedFrame:
    """One decoded picture, on the GPU (CUDA planes) or in host memory (a CPU plane set).

    Release it (:meth:`release`, the context manager, or dropping the last reference) to give its
    surface back to the session's :class:`~alpha2.gpu.surfaces.SurfaceBudget`.
    """

    __slots__ = (
        "__weakref__",
        "_ahead",
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
        ahead: AheadWork | None = None,
    ) -> None:
        """A frame of ``planes`` laid out as ``pixel_format``.

        Raises:
            InvalidInputError: ``planes`` is not a CpuPlaneSet or CudaPtr2D tuple, or its plane count or
                row sizes do not fit ``pixel_format``; ``pixel_format``, ``metadata`` or ``identity`` are
                not of their types; ``colour`` is not resolved (:meth:`ColourInfo.resolved`).
        """
        if not isinstance(pixel_format, PixelFormat):
            raise InvalidInputError(
                f"DecodedFrame.pixel_format must be a PixelFormat (PixelFormat.from_ffmpeg_name turns a name "
                f"into one), got {pixel_format!r}"
            )
        planes = _checked_planes(planes, pixel_format)
        if not isinstance(colour, ColourInfo):
            raise InvalidInputError(f"DecodedFrame.colour must be a ColourInfo, got {type(colour).__name__}")
        if not colour.is_resolved:
            unspecified = [
                name
                for name in ("matrix", "primaries", "transfer", "range")
                if getattr(colour, name).name == "UNSPECIFIED"
            ]
            raise InvalidInputError(
                f"DecodedFrame.colour leaves {', '.join(unspecified)} unspecified: pass "
                "colour.resolved(pixel_format, width, height)"
            )
        if not isinstance(metadata, FrameMetadata):
            raise InvalidInputError(
                f"DecodedFrame.metadata must be a FrameMetadata, got {type(metadata).__name__}"
            )
        if not isinstance(identity, SurfaceIdentity):
            raise InvalidInputError(
                f"DecodedFrame.identity must be a SurfaceIdentity, got {type(identity).__name__}"
            )
        if cuda_stream is not None and not _is_int(cuda_stream):
            raise InvalidInputError(f"DecodedFrame.cuda_stream must be an int or None, got {cuda_stream!r}")
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
        """Opaque: whatever the producer needs kept alive for the plane memory to stay valid.

        For frames from ``DecodeSession`` it is the decoder's own frame; its type is the producer's
        business, not part of this API (use :attr:`planes`, :meth:`plane` or :meth:`to_ndarray`)."""
        self._ahead = ahead
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

    def take_ahead(self) -> AheadWork | None:
        """The work done ahead on this frame, handed to the caller (None when there is none, or it was
        taken); the caller then gives back what it holds."""
        ahead, self._ahead = self._ahead, None
        return ahead

    # -- arrays ----------------------------------------------------------------------------------------

    def plane(self, index: int = 0) -> PlaneArray:
        """Plane ``index`` as a :class:`~alpha2.gpu.dlpack.PlaneArray`: DLPack (numpy, torch, cupy) or numpy.

        Shapes: ``(rows, texels)`` for one-channel planes, ``(rows, texels, channels)`` otherwise (an NV12
        CbCr plane is ``(h/2, w/2, 2)``); rows and texels are the stored ones (coded size, which may
        exceed the display size). For CUDA planes, ``__dlpack__(stream=s)`` makes stream ``s`` wait for
        the decode. Valid while the frame is not released.

        Raises:
            ClosedError: the frame was released.
            InvalidInputError: no such plane, or ``index`` is not an int.
        """
        planes = self.planes
        count = len(planes)
        if not _is_int(index):
            raise InvalidInputError(f"a plane index is an int 0..{count - 1}, got {index!r}")
        if not 0 <= index < count:
            raise InvalidInputError(
                f"{self.pixel_format.ffmpeg_name} has {count} plane(s); index must be 0..{count - 1}"
            )
        dtype, channels = plane_element(self.pixel_format.plane_formats[index])
        texel = dtype.itemsize * channels
        if isinstance(planes, CpuPlaneSet):
            cpu = planes.planes[index]
            array: PlaneArray = cpu._array(dtype, channels)
            return array
        cuda = planes[index]
        return PlaneArray(
            data_ptr=cuda.device_ptr,
            height=cuda.height,
            width=cuda.width_bytes // texel,
            channels=channels,
            dtype=dtype,
            row_stride_bytes=cuda.pitch_bytes,
            device=(DLDeviceType.CUDA, cuda.device_ordinal),
            owner=(cuda, self.keep_alive),
            stream_order=self._stream_order(cuda.device_ordinal),
        )

    def _stream_order(self, ordinal: int) -> Any:
        producer = self.cuda_stream
        if producer is None:
            return None

        def order(consumer: int | None) -> None:
            _cuda_plane_ops().order_consumer_stream(ordinal, producer, consumer)

        return order

    def to_ndarray(self, plane: int | None = None) -> np.ndarray:
        """A plane as a numpy array (see :meth:`plane` for shapes).

        Host planes are a view (no copy, valid while the frame is held); CUDA planes are copied to host
        memory after the decode (bounded by the GPU wait timeout).

        Args:
            plane: Which plane; None is allowed for one-plane formats (gray, rgba, ...) only.

        Raises:
            InvalidInputError: ``plane=None`` for a multi-plane format (the message names the planes), or
                no such plane.
            ClosedError: the frame was released.
        """
        if plane is None:
            count = len(self.planes)
            if count != 1:
                raise InvalidInputError(
                    f"{self.pixel_format.ffmpeg_name} has {count} planes: pass plane=0..{count - 1}, use "
                    "plane_arrays() for all of them, or alpha2's Frame.to_ndarray('rgb24') for RGB pixels"
                )
            plane = 0
        return self.plane_arrays(only=plane)[0]

    def plane_arrays(self, *, only: int | None = None) -> tuple[np.ndarray, ...]:
        """Every plane (or plane ``only``) as a numpy array; CUDA planes are copied to host memory."""
        indices = range(len(self.planes)) if only is None else (only,)
        arrays = [self.plane(i) for i in indices]
        if not self.on_gpu:
            return tuple(a.to_ndarray() for a in arrays)
        planes = self.planes
        assert not isinstance(planes, CpuPlaneSet)
        host = _cuda_plane_ops().download_planes(tuple(planes[i] for i in indices), self.cuda_stream)
        out = []
        for array, cpu in zip(arrays, host.planes):
            out.append(cpu.to_ndarray(array.dtype, array.channels))
        return tuple(out)

    def __dlpack__(self, *, stream: int | None = None, **kwargs: Any) -> object:
        """DLPack export of a one-plane frame; multi-plane formats export per plane (:meth:`plane`).

        Raises:
            InvalidInputError: a multi-plane format (the message names :meth:`plane`).
        """
        return self._only_plane().__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._only_plane().__dlpack_device__()

    def _only_plane(self) -> PlaneArray:
        count = len(self.planes)
        if count != 1:
            raise InvalidInputError(
                f"a {self.pixel_format.ffmpeg_name} frame has {count} planes and DLPack holds one array: "
                f"export frame.plane(0) .. frame.plane({count - 1}) instead"
            )
        return self.plane(0)

    def release(self) -> None:
        """Give the surface back to the budget and drop the decoder frame. Idempotent."""
        if self._released:
            return
        self._released = True
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.discard()
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
