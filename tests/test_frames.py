"""DecodedFrame: what its constructor and plane() refuse."""

from __future__ import annotations

import fractions
from typing import Any

import pytest

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import FrameMetadata, Size
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet, CudaPtr2D
from alpha2.gpu.surfaces import SurfaceIdentity

W, H = 8, 4
NV12 = PixelFormat.NV12
COLOUR = ColourInfo().resolved(NV12, W, H)
META = FrameMetadata(0, fractions.Fraction(1, 30), 1, True, Size(W, H), Size(W, H))
IDENT = SurfaceIdentity(1, 0, W, H, NV12)
Y = CpuPlane(bytearray(16 * H), 16, W, H)
UV = CpuPlane(bytearray(16 * H // 2), 16, W, H // 2)


def _frame(planes: Any = None, **kwargs: Any) -> DecodedFrame:
    fields: dict[str, Any] = {"pixel_format": NV12, "colour": COLOUR, "metadata": META, "identity": IDENT}
    fields.update(kwargs)
    return DecodedFrame(CpuPlaneSet((Y, UV)) if planes is None else planes, **fields)


def test_a_valid_frame() -> None:
    frame = _frame()
    assert frame.plane(1).to_ndarray().shape == (H // 2, W // 2, 2)
    cuda = (CudaPtr2D(0x1000, 512, W, H), CudaPtr2D(0x9000, 512, W, H // 2))
    assert _frame(list(cuda)).planes == cuda


@pytest.mark.parametrize(
    ("planes", "match"),
    [
        (CpuPlaneSet((Y,)), "nv12 frame has 2 plane"),
        ([1, 2], "CpuPlaneSet or a tuple of CudaPtr2D, got list"),
        ((), "CpuPlaneSet or a tuple of CudaPtr2D"),
        # An odd number of bytes cannot be RG8 texels.
        (CpuPlaneSet((Y, CpuPlane(bytearray(64), 16, 7, 2))), "plane 1 of nv12"),
    ],
)
def test_planes_must_fit_the_format(planes: Any, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        _frame(planes)


def test_p010_rows_are_whole_16_bit_samples() -> None:
    planes = CpuPlaneSet((CpuPlane(bytearray(64), 16, 15, 4), CpuPlane(bytearray(32), 16, 16, 2)))
    with pytest.raises(InvalidInputError, match="plane 0 of p010le"):
        _frame(planes, pixel_format=PixelFormat.P010)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("pixel_format", "nv12", "must be a PixelFormat"),
        ("colour", ColourInfo(), "leaves matrix, primaries, transfer, range unspecified"),
        ("colour", None, "must be a ColourInfo"),
        ("metadata", None, "FrameMetadata"),
        ("identity", None, "SurfaceIdentity"),
        ("cuda_stream", True, "cuda_stream"),
    ],
)
def test_fields_are_type_checked(field: str, value: object, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        _frame(**{field: value})


@pytest.mark.parametrize("index", [True, "1", 1.0, None])
def test_plane_index_is_an_int(index: object) -> None:
    frame = _frame()
    with pytest.raises(InvalidInputError, match=r"plane index is an int 0\.\.1"):
        frame.plane(index)  # type: ignore[arg-type]
