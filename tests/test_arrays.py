"""Frames and planes as arrays: numpy views, DLPack export, CUDA stream ordering (with a fake driver)."""

from __future__ import annotations

import fractions

import numpy as np
import pytest

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.dlpack import DLDeviceType, PlaneArray, live_exports, plane_element
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat, PlaneFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import FrameMetadata, Size
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet, CudaPtr2D
from alpha2.gpu.surfaces import SurfaceIdentity

# DecodedFrame takes resolved colour only.
_COLOUR = ColourInfo().resolved(PixelFormat.NV12, 64, 16)
_RGB = ColourInfo().resolved(PixelFormat.RGBA, 4, 4)


def _metadata(width: int, height: int) -> FrameMetadata:
    return FrameMetadata(
        pts=3,
        time_base=fractions.Fraction(1, 30),
        duration=1,
        key_frame=True,
        coded_size=Size(width, height),
        display_size=Size(width, height),
    )


def _identity(width: int, height: int, fmt: PixelFormat) -> SurfaceIdentity:
    return SurfaceIdentity(decoder_id=1, generation=0, width=width, height=height, pixel_format=fmt)


def _nv12_frame(
    width: int = 8, height: int = 4, pitch: int = 16
) -> tuple[DecodedFrame, bytearray, bytearray]:
    y = bytearray(range(pitch * height))
    uv = bytearray((i * 3) % 256 for i in range(pitch * height // 2))
    planes = CpuPlaneSet(
        planes=(
            CpuPlane(data=y, bytes_per_row=pitch, width_bytes=width, height=height),
            CpuPlane(data=uv, bytes_per_row=pitch, width_bytes=width, height=height // 2),
        )
    )
    frame = DecodedFrame(
        planes,
        PixelFormat.NV12,
        _COLOUR,
        _metadata(width, height),
        _identity(width, height, PixelFormat.NV12),
    )
    return frame, y, uv


def test_cpu_plane_to_ndarray_is_a_strided_view() -> None:
    data = bytearray(range(48))
    plane = CpuPlane(data=data, bytes_per_row=16, width_bytes=8, height=3)
    array = plane.to_ndarray()
    assert array.shape == (3, 8) and array.strides == (16, 1)
    assert array[2].tolist() == list(range(32, 40))
    data[33] = 200  # a view, not a copy
    assert array[2, 1] == 200
    assert np.from_dlpack(plane)[1].tolist() == list(range(16, 24))
    assert plane.to_ndarray("u2", 2).shape == (3, 2, 2)
    with pytest.raises(InvalidInputError, match="whole"):
        plane.to_ndarray("u2", 3)


def test_decoded_frame_planes_shapes_and_values() -> None:
    frame, y, uv = _nv12_frame()
    luma = frame.to_ndarray(plane=0)
    chroma = frame.plane(1).to_ndarray()
    assert luma.shape == (4, 8) and chroma.shape == (2, 4, 2)
    assert luma[1].tolist() == list(y[16:24])
    assert chroma[1, 2].tolist() == [uv[16 + 4], uv[16 + 5]]
    assert [a.shape for a in frame.plane_arrays()] == [(4, 8), (2, 4, 2)]
    assert np.from_dlpack(frame.plane(0)).tolist() == luma.tolist()
    with pytest.raises(InvalidInputError, match=r"plane=0\.\.1"):
        frame.to_ndarray()
    with pytest.raises(InvalidInputError, match=r"frame.plane\(0\)"):
        frame.__dlpack__()
    with pytest.raises(InvalidInputError, match="index must be"):
        frame.plane(2)


def test_numpy_asarray_of_a_plane_is_its_pixels() -> None:
    # np.asarray(frame.plane(0)) was a 0-d object array holding the PlaneArray: shape (), no pixels,
    # nothing said (found by a PyTorch user's pass over the docs, which say the plane is for "numpy").
    frame, y, _ = _nv12_frame()
    luma = np.asarray(frame.plane(0))
    assert luma.shape == (4, 8) and luma.dtype == np.uint8
    assert luma.tolist() == frame.to_ndarray(plane=0).tolist()
    y[17] = 250  # a view of the plane, as to_ndarray is
    assert luma[1, 1] == 250
    assert np.asarray(frame.plane(1), dtype=np.float32).tolist() == frame.plane(1).to_ndarray().tolist()
    assert np.array(frame.plane(0)).tolist() == luma.tolist()
    cuda = PlaneArray(
        data_ptr=0x7F0000000000,
        height=4,
        width=8,
        channels=1,
        dtype=np.dtype("u1"),
        row_stride_bytes=64,
        device=(DLDeviceType.CUDA, 0),
        owner=object(),
    )
    with pytest.raises(UnsupportedError, match=r"torch\.from_dlpack"):
        np.asarray(cuda)


def test_one_plane_frame_exports_itself() -> None:
    data = bytearray(range(4 * 4 * 4))
    planes = CpuPlaneSet(planes=(CpuPlane(data=data, bytes_per_row=16, width_bytes=16, height=4),))
    frame = DecodedFrame(planes, PixelFormat.RGBA, _RGB, _metadata(4, 4), _identity(4, 4, PixelFormat.RGBA))
    assert frame.to_ndarray().shape == (4, 4, 4)
    assert np.from_dlpack(frame).shape == (4, 4, 4)


def test_plane_elements() -> None:
    assert plane_element(PlaneFormat.R16) == (np.dtype("u2"), 1)
    assert plane_element(PlaneFormat.RG8) == (np.dtype("u1"), 2)
    assert plane_element(PlaneFormat.RGBA16F) == (np.dtype("f2"), 4)
    assert plane_element(PlaneFormat.RGB10A2) == (np.dtype("u4"), 1)


def test_cuda_plane_capsule_orders_the_consumer_stream() -> None:
    calls: list[int | None] = []
    plane = PlaneArray(
        data_ptr=0x7F0000000000,
        height=4,
        width=8,
        channels=2,
        dtype=np.dtype("u2"),
        row_stride_bytes=64,
        device=(DLDeviceType.CUDA, 1),
        owner=object(),
        stream_order=calls.append,
    )
    before = live_exports()
    capsule = plane.__dlpack__(stream=7)
    assert calls == [7]
    assert type(capsule).__name__ == "PyCapsule"
    assert live_exports() == before + 1
    del capsule  # never consumed: the capsule's destructor lets the tensor go
    assert live_exports() == before
    plane.__dlpack__(stream=-1)  # the consumer orders the work itself
    assert calls == [7]
    assert plane.__dlpack_device__() == (2, 1)
    with pytest.raises(InvalidInputError, match="ambiguous"):
        plane.__dlpack__(stream=0)
    with pytest.raises(UnsupportedError, match="cupy"):
        plane.to_ndarray()


def test_cuda_decoded_frame_plane_carries_the_decode_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    from alpha2.native_gpu._cuda import streams

    streams.install_cuda_plane_ops()  # what the front door does before it decodes
    seen: list[tuple[int, int | None, int | None]] = []
    monkeypatch.setattr(streams, "order_consumer_stream", lambda o, p, c: seen.append((o, p, c)))
    planes = (
        CudaPtr2D(device_ptr=0x1000, pitch_bytes=512, width_bytes=64, height=16, device_ordinal=3),
        CudaPtr2D(device_ptr=0x9000, pitch_bytes=512, width_bytes=64, height=8, device_ordinal=3),
    )
    frame = DecodedFrame(
        planes,
        PixelFormat.NV12,
        _COLOUR,
        _metadata(64, 16),
        _identity(64, 16, PixelFormat.NV12),
        cuda_stream=0,
    )
    chroma = frame.plane(1)
    assert chroma.shape == (8, 32, 2) and chroma.strides_elements == (512, 2, 1)
    chroma.__dlpack__(stream=None)
    assert seen == [(3, 0, None)]


class _FakeCu:
    def __init__(self) -> None:
        self.log: list[tuple[str, object]] = []

    def cuEventCreate(self, flags: int) -> tuple[int, str]:
        self.log.append(("create", flags))
        return 0, "event"

    def cuEventRecord(self, event: str, stream: int) -> tuple[int]:
        self.log.append(("record", stream))
        return (0,)

    def cuStreamWaitEvent(self, stream: int, event: str, flags: int) -> tuple[int]:
        self.log.append(("wait", stream))
        return (0,)

    def cuEventDestroy(self, event: str) -> tuple[int]:
        self.log.append(("destroy", event))
        return (0,)


class _FakeContext:
    def __init__(self) -> None:
        self._cu = _FakeCu()

    def __enter__(self) -> _FakeContext:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def test_order_consumer_stream_records_and_waits() -> None:
    from alpha2.native_gpu._cuda.streams import consumer_stream_handle, order_consumer_stream, same_stream

    ctx = _FakeContext()
    assert order_consumer_stream(0, 0, 0xABC, ctx=ctx)
    assert ctx._cu.log == [("create", 2), ("record", 0), ("wait", 0xABC), ("destroy", "event")]
    ctx = _FakeContext()
    # The decode on FFmpeg's null stream and a consumer on the legacy default stream: already in order.
    assert not order_consumer_stream(0, 0, None, ctx=ctx)
    assert not order_consumer_stream(0, None, 5, ctx=ctx)
    assert ctx._cu.log == []
    assert same_stream(0, 1) and not same_stream(0, 2)
    assert consumer_stream_handle(2) == 2
    with pytest.raises(InvalidInputError):
        consumer_stream_handle(-1)


def test_cuda_planes_without_alpha2s_cuda_support_say_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The vocabulary imports nothing of native_gpu: CUDA planes read through the operations the front
    door installs, and without them the error names the two ways to get them."""
    from alpha2.gpu import frames

    monkeypatch.setattr(frames, "_cuda_ops", None)
    planes = (
        CudaPtr2D(device_ptr=0x1000, pitch_bytes=512, width_bytes=64, height=16, device_ordinal=0),
        CudaPtr2D(device_ptr=0x9000, pitch_bytes=512, width_bytes=64, height=8, device_ordinal=0),
    )
    frame = DecodedFrame(
        planes,
        PixelFormat.NV12,
        _COLOUR,
        _metadata(64, 16),
        _identity(64, 16, PixelFormat.NV12),
        cuda_stream=0,
    )
    with pytest.raises(InvalidInputError, match=r"alpha2\.open"):
        frame.plane_arrays()
