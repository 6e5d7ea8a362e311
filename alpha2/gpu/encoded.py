"""What the encode copier hands back: :class:`EncodedPlanes` (NV12 / P010 in host memory) and where it
delivers them (:class:`EncodeTarget`)."""

from __future__ import annotations

import enum
from typing import Any

from alpha2.gpu.colour import (
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourPrimaries,
    ColourRange,
    TransferCharacteristic,
)
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.handles import CpuPlaneSet
from alpha2.gpu.identity import ExecutionPath

__all__ = ["EncodeTarget", "EncodedPlanes", "companion_colour", "parse_target"]

# The primaries and transfer that go with a matrix in the standards that define it (SDR).
_COMPANIONS: dict[ColourMatrix, tuple[ColourPrimaries, TransferCharacteristic]] = {
    ColourMatrix.BT709: (ColourPrimaries.BT709, TransferCharacteristic.BT709),
    ColourMatrix.BT470BG: (ColourPrimaries.BT470BG, TransferCharacteristic.BT709),
    ColourMatrix.SMPTE170M: (ColourPrimaries.SMPTE170M, TransferCharacteristic.SMPTE170M),
    ColourMatrix.SMPTE240M: (ColourPrimaries.SMPTE240M, TransferCharacteristic.SMPTE240M),
    ColourMatrix.BT2020_NCL: (ColourPrimaries.BT2020, TransferCharacteristic.BT709),
    ColourMatrix.BT2020_CL: (ColourPrimaries.BT2020, TransferCharacteristic.BT709),
}


def companion_colour(
    matrix: ColourMatrix, colour_range: ColourRange, chroma_location: ChromaLocation
) -> ColourInfo:
    """A full ColourInfo for planes written with ``matrix``: the matrix's standard primaries and transfer.

    The copier knows the matrix, range and siting it wrote; the primaries and transfer are the ones the
    matrix's own standard pairs it with (BT.709 with BT.709, BT.601 625-line with BT.470BG ...). Pass the
    source's own to :class:`EncodedPlanes` (``colour=``) when they differ (HDR, wide gamut).
    """
    primaries, transfer = _COMPANIONS.get(
        matrix, (ColourPrimaries.UNSPECIFIED, TransferCharacteristic.UNSPECIFIED)
    )
    return ColourInfo(matrix, primaries, transfer, colour_range, chroma_location)


class EncodeTarget(enum.StrEnum):
    """Where the copier delivers the planes."""

    CPU = "cpu"
    """Host memory through a ring of mapped buffers, for software encoders."""
    CUDA = "cuda"
    """CUDA frames for an encoder that takes them (NVENC): not in this build (refused with the reason)."""


class EncodedPlanes:
    """One frame converted for the encoder: NV12 / P010 planes in host memory, valid until :meth:`release`.

    The planes view the mapped read-back buffer directly (no copy) unless the copier was made with
    ``copy_planes=True``. Release it (or use it as a context manager) once the encoder frame is filled:
    that unmaps the ring slot for the next frame. The plane memoryviews are released with it (using them
    afterwards raises ``ValueError``), but arrays made from them (``np.frombuffer``) are not tracked by
    Python's buffer protocol: copy the data out, or drop such arrays, before the release.
    """

    def __init__(
        self,
        *,
        planes: CpuPlaneSet,
        pixel_format: PixelFormat,
        width: int,
        height: int,
        pts: int | None,
        matrix: ColourMatrix,
        colour_range: ColourRange,
        chroma_location: ChromaLocation,
        bytes_read: int,
        sequence: int,
        on_release: Any = None,
        views: tuple[memoryview, ...] = (),
        colour: ColourInfo | None = None,
    ) -> None:
        self.planes = planes
        """Y plane and interleaved CbCr plane (rows padded to 256 bytes)."""
        self.pixel_format = pixel_format
        """NV12 or P010."""
        self.width = width
        """Frame width in pixels."""
        self.height = height
        """Frame height in pixels."""
        self.pts = pts
        """The pts passed to :meth:`EncodeCopier.submit`."""
        self.matrix = matrix
        """YCbCr matrix the planes were written with."""
        self.colour_range = colour_range
        """Range the planes were written with."""
        self.chroma_location = chroma_location
        """Siting of the chroma samples (tag the encoder frame / stream with it)."""
        if colour is None:
            colour = companion_colour(matrix, colour_range, chroma_location)
        elif (colour.matrix, colour.range, colour.chroma_location) != (matrix, colour_range, chroma_location):
            raise InvalidInputError(
                f"EncodedPlanes colour {colour} disagrees with the planes' matrix {matrix.name}, range "
                f"{colour_range.name} and siting {chroma_location.name}"
            )
        self.colour = colour
        """The planes' full colour description; ``EncodeSession`` tags the stream with it."""
        self.path = ExecutionPath.CPU_DOWNLOAD
        """Converted by a GPU compute pass, then read back to host memory."""
        self.bytes_read = bytes_read
        """Bytes that crossed from GPU to host memory for this frame (padded rows included)."""
        self.sequence = sequence
        """Submission index within the copier (0, 1, 2 ...)."""
        self._on_release = on_release
        self._views = views

    @property
    def released(self) -> bool:
        """Whether :meth:`release` ran."""
        return self._views is None

    def release(self) -> None:
        """Give the ring slot back (unmap). Idempotent.

        Raises:
            InvalidInputError: a buffer export of a plane view is still open (e.g. a ``ctypes`` object
                made with ``from_buffer``); close it first, the slot stays mapped until then.
        """
        views = self._views
        if views is None:
            return
        for view in views:
            try:
                view.release()
            except BufferError as exc:
                raise InvalidInputError(
                    "EncodedPlanes.release(): a plane view is still exported (a buffer obtained from it "
                    "is open); close it or copy the data before releasing"
                ) from exc
        self._views = None  # type: ignore[assignment]
        callback, self._on_release = self._on_release, None
        if callback is not None:
            callback()

    def _invalidate(self) -> None:
        """The copier closed under this frame: drop the views so nothing reads unmapped memory."""
        for view in self._views or ():
            try:
                view.release()
            except BufferError:
                pass  # exported elsewhere; the owner of that export must not read it any more
        self._views = None  # type: ignore[assignment]
        self._on_release = None

    def __enter__(self) -> EncodedPlanes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else "mapped"
        return (
            f"EncodedPlanes({self.pixel_format.name} {self.width}x{self.height}, pts={self.pts}, "
            f"seq={self.sequence}, {self.bytes_read} bytes, {state})"
        )


def parse_target(target: EncodeTarget | str) -> EncodeTarget:
    """``target`` as an :class:`EncodeTarget`.

    Raises:
        InvalidInputError: not one of its values; the message names them.
    """
    try:
        return EncodeTarget(target)
    except ValueError:
        allowed = ", ".join(repr(t.value) for t in EncodeTarget)
        raise InvalidInputError(f"target must be one of {allowed}, got {target!r}") from None
