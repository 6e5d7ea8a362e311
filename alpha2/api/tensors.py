"""RGB tensors of frames for machine learning: :func:`to_tensor`.

Frames are rendered by their source's renderer (colour-exact, HDR tone-mapped to SDR BT.709, turned by
the file's rotation as shown, resized bilinearly, cropped by a source rectangle) and packed by a compute
pass into the tensor's bytes: ``layout`` HWC or CHW, ``dtype`` uint8, float16 or float32, optionally
normalised as ``(x / 255 - mean[c]) / std[c]``; a list of frames gives one stacked ``(N, ...)`` tensor.
A smaller picture is antialiased by default (a tent filter, as PIL's and torchvision's resize).
Where the source's device is a Dawn device on an NVIDIA GPU with CUDA, the tensor goes to CUDA memory on
the GPU (no byte through the CPU) and is handed out through DLPack; elsewhere it is read back into a
numpy array. Which way it went is reported (:attr:`RgbTensor.path`, :attr:`RgbTensor.report`), never
implied; ``require="gpu"`` (or ``device="cuda"``) makes the CPU way an error with the reason.

Two routes convert the frames (``route``, reported as :attr:`RgbTensor.route` with
:attr:`TensorReport.route_reason`): ``'cuda'``, alpha2's CUDA kernel
(:mod:`alpha2.native_gpu.render.cuda_tensor`), which reads NVDEC frames' planes where they lie and writes
the tensor into CUDA memory in one launch a frame, with no Dawn work (the renderer's plain pass and the
tensor pass's arithmetic: frames whose colour needs no management); and ``'dawn'``, the renderer on the
source's device and the tensor pass (every frame: HDR tone-mapped, software-decoded, numpy out). By
default (``route='auto'``) NVDEC frames going to CUDA take the kernel where it can convert them, and the
report says why when it cannot.

Example::

    import torch
    import alpha2
    from alpha2.api.tensors import to_tensor

    with alpha2.open("clip.mp4") as source:
        frames = [source.frame_at(t) for t in (0.0, 1.0, 2.0)]   # or source.frames_at(...)
        batch = to_tensor(frames, size=(224, 224), layout="CHW", dtype="float32",
                          mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
        print(batch.shape, batch.path)   # (3, 3, 224, 224) ExecutionPath.GPU_COPY on Dawn + CUDA
        x = torch.from_dlpack(batch)     # a CUDA tensor there; a CPU tensor (numpy's memory) elsewhere
        for frame in frames:
            frame.release()

Sizes are ``(width, height)`` as everywhere in alpha2 (the tensor's shape has ``H`` before ``W``).

Speed: on the Dawn route the caller's thread does the conversion's CPU work (the frames' imports, the
GPU submission, the copy out), so reading a video in order is fastest a few frames a call (one
submission and one copy for them all, where a frame a call costs one each); the CUDA kernel's CPU work
is a launch a frame (on an H100 it kept pace with decoding: 224x224 float16 at 1.01 of decoding alone,
BENCHMARKS.md). On NVDEC, a source whose frames go to tensors by the Dawn route copies
each frame on the decoder's thread from the first such ``to_tensor`` on (``copy_ahead``, which
:func:`alpha2.open` leaves to alpha2 by default; its NVDEC surface is given back at once). On the H200
that took 224x224 float16 tensors from 0.50-0.64 of decoding alone to 0.73-0.91 (BENCHMARKS.md). An NVDEC
session lends 8 frames at once by default: keep lists to 8, or use ``frames_at``, whose batches of more
than 4 frames are copied out of the decoder's surfaces as they are found (up to 4 keep theirs, within
the 8).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from alpha2.api.devices import texture_limit
from alpha2.gpu.dlpack import DLDeviceType, array_protocol, dlpack_capsule
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.geometry import Rotation, Size
from alpha2.gpu.identity import ExecutionPath
from alpha2.native_gpu.render.cuda_tensor import FrameWork, KernelPlanes, format_refusal, tensor_kernel
from alpha2.native_gpu.render.params import shader_params
from alpha2.native_gpu.render.tensor import (
    RgbTensorPass,
    TensorDType,
    TensorLayout,
    TensorSpec,
    batch_words,
    frame_words,
    max_frame_words,
)

if TYPE_CHECKING:
    from alpha2.api.source import Frame
    from alpha2.native_gpu.interop.leases import ImportLease
    from alpha2.native_gpu.interop.tensor_export import CudaTensorMemory, TensorExporter

__all__ = [
    "LAYOUTS",
    "REQUIRES",
    "ROUTES",
    "TENSOR_DEVICES",
    "TENSOR_DTYPES",
    "RgbTensor",
    "TensorReport",
    "close_tensor_routes",
    "to_tensor",
]

LAYOUTS: tuple[str, ...] = tuple(m.value for m in TensorLayout)
"""The ``layout`` values :func:`to_tensor` takes."""
TENSOR_DTYPES: tuple[str, ...] = tuple(m.value for m in TensorDType)
"""The ``dtype`` values :func:`to_tensor` takes."""
TENSOR_DEVICES: tuple[str, ...] = ("auto", "cuda", "cpu")
"""The ``device`` values: CUDA where the source's device can, else numpy; CUDA or an error; numpy."""
REQUIRES: tuple[str | None, ...] = (None, "gpu")
"""The ``require`` values: None (the CPU way is a reported fallback) or 'gpu' (it is an error)."""

ROUTES: tuple[str, ...] = ("auto", "cuda", "dawn")
"""The ``route`` values: the CUDA kernel where it can convert the frames, else Dawn; the CUDA kernel or
an error; the Dawn renderer."""

_TYPE_CODES = {"u": 1, "f": 2}


@dataclass(frozen=True)
class TensorReport:
    """How a tensor was made: every frame's path, the tensor's path, and why."""

    path: ExecutionPath
    """How the tensor's bytes reached their memory: GPU_COPY (made on the GPU into CUDA memory: packed by
    Dawn and copied into it, or written there by the CUDA kernel; :attr:`route` says which) or
    CPU_DOWNLOAD (packed by the GPU and read back into host memory)."""
    frame_paths: tuple[ExecutionPath, ...]
    """How each frame's pixels reached the conversion: on the Dawn route its import into the renderer's
    textures (GPU_COPY, CPU_UPLOAD, ...); on the CUDA kernel's, ZERO_COPY (its planes read where NVDEC
    left them)."""
    reason: str
    """Why the tensor took :attr:`path` (why not CUDA, when it did not)."""
    bytes_crossed_cpu: int
    """Bytes that passed through host memory: the frames' uploads and the tensor's read-back."""
    route: str = "dawn"
    """What converted the frames: ``'cuda'`` (alpha2's CUDA kernel read the NVDEC planes where they lie
    and wrote the tensor into CUDA memory; :mod:`alpha2.native_gpu.render.cuda_tensor`) or ``'dawn'``
    (the renderer drew each frame on the Dawn device and a compute pass packed it)."""
    route_reason: str = ""
    """Why that route: on the Dawn route, why the CUDA kernel did not convert the frames."""

    @property
    def steps(self) -> tuple[tuple[ExecutionPath, ExecutionPath], ...]:
        """Per frame: (its import's path, the tensor's path)."""
        return tuple((frame_path, self.path) for frame_path in self.frame_paths)


class RgbTensor:
    """An RGB tensor of one frame ``(H, W, 3)`` / ``(3, H, W)`` or a batch ``(N, ...)``, on CUDA or the CPU.

    Give it to any DLPack consumer (``torch.from_dlpack``, ``cupy.from_dlpack``, ``np.from_dlpack`` for
    CPU tensors), or take :meth:`numpy` of a CPU tensor. A CUDA tensor's memory stays valid while this
    object or a consumer's tensor made from it lives; a consumer's stream waits for the copy on the GPU.
    """

    def __init__(
        self,
        spec: TensorSpec,
        count: int | None,
        report: TensorReport,
        *,
        array: np.ndarray | None = None,
        cuda: CudaTensorMemory | None = None,
    ) -> None:
        if (array is None) == (cuda is None):
            raise InvalidInputError("an RgbTensor holds a numpy array or CUDA memory, one of them")
        self.spec = spec
        """Size, layout, dtype and normalisation."""
        self.shape: tuple[int, ...] = spec.shape(count)
        """The array's shape."""
        self.dtype: np.dtype[Any] = spec.dtype.numpy
        """The element type."""
        self.report = report
        """Every frame's path, the tensor's, and why."""
        self._array = array
        self._cuda = cuda

    @property
    def path(self) -> ExecutionPath:
        """How the tensor's bytes reached their memory (:attr:`TensorReport.path`)."""
        return self.report.path

    @property
    def route(self) -> str:
        """What converted the frames, ``'cuda'`` or ``'dawn'`` (:attr:`TensorReport.route`; why in
        :attr:`TensorReport.route_reason`)."""
        return self.report.route

    @property
    def layout(self) -> str:
        """``'HWC'`` or ``'CHW'``."""
        return self.spec.layout.value

    @property
    def on_cuda(self) -> bool:
        """Whether the tensor is CUDA device memory."""
        return self._cuda is not None

    @property
    def device(self) -> str:
        """``'cuda:N'`` or ``'cpu'``."""
        return f"cuda:{self._cuda.ordinal}" if self._cuda is not None else "cpu"

    @property
    def data_ptr(self) -> int:
        """Address of the first element (device memory for a CUDA tensor). Taking it marks the memory as
        used on streams alpha2 does not know: its free then waits for all the device's work (DLPack,
        which names the consumer's stream, lets the free wait for that stream alone)."""
        if self._cuda is not None:
            self._cuda.used_unordered()  # used on streams not known: its free waits for the device
            return self._cuda.pointer
        assert self._array is not None
        return int(self._array.ctypes.data)

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor."""
        return int(np.prod(self.shape)) * self.dtype.itemsize

    def _strides(self) -> tuple[int, ...]:
        strides, step = [], 1
        for extent in reversed(self.shape):
            strides.append(step)
            step *= extent
        return tuple(reversed(strides))

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._cuda is not None:
            return (int(DLDeviceType.CUDA), self._cuda.ordinal)
        return (int(DLDeviceType.CPU), 0)

    def __dlpack__(self, *, stream: int | None = None, **kwargs: Any) -> object:
        """The DLPack capsule; a CUDA tensor first makes the consumer's ``stream`` wait for its copy.

        ``stream`` follows the protocol: None or 1 the legacy default stream, 2 the per-thread default
        stream, another integer a ``cudaStream_t``, -1 no ordering (then :meth:`wait` first).

        Raises:
            InvalidInputError: ``stream=0`` for a CUDA tensor (ambiguous in the protocol).
        """
        if self._cuda is None:
            assert self._array is not None
            return self._array.__dlpack__(stream=stream, **kwargs)
        if stream == 0:
            raise InvalidInputError(
                "stream=0 is ambiguous for CUDA in the DLPack protocol; pass 1 (legacy default stream), "
                "2 (per-thread default stream), a stream handle, or -1 to order the work yourself"
            )
        if stream == -1:
            self._cuda.used_unordered()
        else:
            self._cuda.order_consumer(stream)
        return dlpack_capsule(
            self._cuda.pointer,
            self.shape,
            self._strides(),
            type_code=_TYPE_CODES[self.dtype.kind],
            bits=self.dtype.itemsize * 8,
            device=self.__dlpack_device__(),
            owner=self._cuda.owner,
        )

    def wait(self, timeout_s: float | None = None) -> None:
        """Block until a CUDA tensor's copy is done (nothing to wait for on the CPU).

        Raises:
            GpuTimeoutError: not done within ``timeout_s`` (default: the GPU wait timeout).
        """
        if self._cuda is None:
            return
        if timeout_s is None:
            from alpha2.native_gpu.device.waits import gpu_wait_timeout

            timeout_s = gpu_wait_timeout()
        self._cuda.wait(timeout_s)

    def numpy(self) -> np.ndarray:
        """The tensor as a numpy array (CPU tensors only).

        Raises:
            UnsupportedError: a CUDA tensor (use ``torch.from_dlpack`` / ``cupy.from_dlpack``, or
                ``to_tensor(..., device='cpu')``).
        """
        if self._array is None:
            raise UnsupportedError(
                "this tensor is CUDA memory: use torch.from_dlpack / cupy.from_dlpack on it, or ask "
                "to_tensor(..., device='cpu') for a numpy array"
            )
        return self._array

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        hint = "leave copy out, or ask to_tensor for that dtype"
        return array_protocol(self.numpy(), dtype, copy, "tensor", hint)

    def __repr__(self) -> str:
        return (
            f"<alpha2.RgbTensor {self.shape} {self.dtype} {self.layout} on {self.device} "
            f"path={self.path.value} route={self.route}>"
        )


# ---------------------------------------------------------------------------------------------------
# routes: per Device, the compute pass and (where it can be had) the CUDA export


class _Routes:
    """The tensor pass of one Device, and its CUDA exporter (made on first use) or why there is none.

    The exporter's textures count against the memory budget of the first source's importer that asked
    (None: not counted)."""

    def __init__(self, device: Any, memory_budget: Any = None) -> None:
        self.device = device
        self.memory_budget = memory_budget
        self.lock = threading.Lock()
        self.packer = RgbTensorPass(device.webgpu_device)
        self._exporter: TensorExporter | None = None
        self._cuda_reason: str | None = None
        self._asked = False

    def exporter(self) -> tuple[TensorExporter | None, str | None]:
        """The exporter, or None and why not (asked once)."""
        if not self._asked:
            self._asked = True
            from alpha2.native_gpu.interop.tensor_export import TensorExporter

            self._cuda_reason = TensorExporter.unavailable_reason(self.device)
            if self._cuda_reason is None:
                try:
                    self._exporter = TensorExporter.create(self.device, memory_budget=self.memory_budget)
                except UnsupportedError as exc:
                    self._cuda_reason = exc.message
        return self._exporter, self._cuda_reason

    def close(self) -> None:
        exporter, self._exporter = self._exporter, None
        if exporter is not None:
            exporter.close()


_ROUTES_ATTRIBUTE = "_alpha2_tensor_routes"
"""Where a Device keeps its routes: they live and go with it. (A global WeakKeyDictionary kept every
Device alive, since its value refers to its key: a source's device, its threads and memory, for
every source that ever made a tensor.)"""

_routes_lock = threading.Lock()


def _routes_of(device: Any, memory_budget: Any = None) -> _Routes:
    with _routes_lock:
        routes = getattr(device, _ROUTES_ATTRIBUTE, None)
        if routes is None:
            routes = _Routes(device, memory_budget)
            setattr(device, _ROUTES_ATTRIBUTE, routes)
        return routes


def close_tensor_routes(device: Any) -> None:
    """Close the tensor pass and CUDA exporter kept for ``device`` (an alpha2 Device). Idempotent;
    a later :func:`to_tensor` on the device makes them again."""
    with _routes_lock:
        routes = getattr(device, _ROUTES_ATTRIBUTE, None)
        if routes is not None:
            delattr(device, _ROUTES_ATTRIBUTE)
    if routes is not None:
        with routes.lock:
            routes.close()


# ---------------------------------------------------------------------------------------------------
# arguments


def _is_torch(value: Any, kind: str) -> bool:
    """Whether ``value`` is a ``torch.dtype`` (``kind`` 'dtype') or ``torch.device`` ('device'), without
    importing torch (it is not a dependency)."""
    return type(value).__module__ == "torch" and type(value).__name__ == kind


def _choice(name: str, value: Any, allowed: Sequence[str | None]) -> Any:
    if isinstance(value, (TensorLayout, TensorDType)):
        value = value.value
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        value = np.dtype(value).name  # np.float32 or np.dtype('float32'): numpy's name, 'float32'
    if _is_torch(value, "dtype"):
        value = str(value).removeprefix("torch.")  # torch.float16 (torch.half too): 'float16'
    if value not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise InvalidInputError(f"{name} must be one of {shown}, got {value!r}")
    return allowed[list(allowed).index(value)]  # the name itself, not an object equal to it


def _device(device: Any) -> tuple[str, int | None]:
    """``device`` as one of :data:`TENSOR_DEVICES` and the CUDA ordinal asked for, if one was: 'cuda:1'
    and ``torch.device('cuda', 1)`` name ordinal 1, 'cuda' and ``torch.device('cuda')`` none."""
    if _is_torch(device, "device"):
        kind, index = str(device.type), device.index
        if kind not in ("cuda", "cpu"):
            raise InvalidInputError(
                f"device must be 'auto', 'cuda', 'cuda:N' or 'cpu' (or a torch.device of cuda or cpu), "
                f"got {device!r}"
            )
        return kind, (int(index) if kind == "cuda" and index is not None else None)
    if isinstance(device, str) and device.startswith("cuda:"):
        number = device.removeprefix("cuda:")
        if number.isdigit():
            return "cuda", int(number)
        raise InvalidInputError(f"device 'cuda:N' names a CUDA ordinal N (0, 1, ...), got {device!r}")
    value = _choice("device", device, TENSOR_DEVICES)
    return value, None


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidInputError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def _array_values(value: Any, ndim: int) -> Any:
    """A numpy array or torch tensor of ``ndim`` dimensions as Python numbers (``tolist``: a 1-d one as
    a tuple, a 0-d one as its number), so that it is checked like a tuple or a number; anything else as
    it is."""
    tolist = getattr(value, "tolist", None)
    if not callable(tolist) or getattr(value, "ndim", None) != ndim:
        return value
    values = tolist()
    return tuple(values) if isinstance(values, list) else values


def _size(size: Any) -> tuple[int, int] | None:
    if size is None:
        return None
    if isinstance(size, Size):
        size = (size.width, size.height)
    size = _array_values(size, 1)  # np.array([224, 224]) or torch.tensor([224, 224]): Python ints
    if not isinstance(size, Sequence) or isinstance(size, str) or len(size) != 2:
        raise InvalidInputError(f"size must be (width, height) in pixels, or None, got {size!r}")
    return _positive("size width", size[0]), _positive("size height", size[1])


def _crop(crop: Any) -> tuple[int, int, int, int] | None:
    if crop is None:
        return None
    crop = _array_values(crop, 1)
    if not isinstance(crop, Sequence) or isinstance(crop, str) or len(crop) != 4:
        raise InvalidInputError(
            f"crop must be (x, y, width, height) in pixels of the frame, or None, got {crop!r}"
        )
    x, y = crop[0], crop[1]
    for name, value in (("crop x", x), ("crop y", y)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InvalidInputError(f"{name} must be an int >= 0, got {value!r}")
    return int(x), int(y), _positive("crop width", crop[2]), _positive("crop height", crop[3])


def _channels(name: str, value: Any) -> tuple[float, float, float] | None:
    if value is None:
        return None
    value = _array_values(value, 0)  # np.array(0.5) or torch.tensor(0.5): one number
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        value = (value, value, value)
    try:
        values = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"{name} must be a number or three numbers (R, G, B) on the 0..1 scale, got {value!r}"
        ) from None
    if len(values) != 3:
        raise InvalidInputError(f"{name} must be a number or three numbers (R, G, B), got {value!r}")
    if not all(math.isfinite(v) for v in values):
        # Said here, before the scale check: mean=inf was told that its values in codes divided by 255
        # are (inf, inf, inf).
        raise InvalidInputError(f"{name} must be finite numbers (R, G, B), got {value!r}")
    if name == "mean" and any(abs(v) > 1.0 for v in values):
        # (123.675, 116.28, 103.53) is ImageNet's mean in codes: taken as it is, every value would be
        # about -120 and the model would see noise, with nothing said.
        scaled = ", ".join(f"{v / 255:.4g}" for v in values)
        raise InvalidInputError(
            f"mean is on the 0..1 scale (it is subtracted from code / 255), got {value!r}; means in "
            f"codes (0..255) divided by 255 are ({scaled}), and std likewise"
        )
    return values[0], values[1], values[2]


def _check_range(spec: TensorSpec) -> None:
    """Refuse a normalisation whose values the float dtype cannot hold: they would be inf."""
    if spec.dtype is TensorDType.UINT8 or (spec.mean is None and spec.std is None):
        return
    mean = spec.mean or (0.0, 0.0, 0.0)
    std = spec.std or (1.0, 1.0, 1.0)
    largest = max(abs((code - m) / s) for m, s in zip(mean, std, strict=True) for code in (0.0, 1.0))
    limit = float(np.finfo(spec.dtype.numpy).max)
    if largest > limit:
        way_out = "ask for float32, or a larger std" if spec.dtype is TensorDType.FLOAT16 else "a larger std"
        raise InvalidInputError(
            f"with mean {spec.mean} and std {spec.std}, {spec.dtype.value} values would reach {largest:.4g}, "
            f"past its largest {limit:.6g} (they would be inf); {way_out}"
        )


def _frames_of(frames: Any) -> tuple[list[Frame], bool]:
    """The frames as a list, and whether one frame (no batch axis) was given."""
    from alpha2.api.source import Frame as FrameClass  # here: source.py may delegate to this module

    if isinstance(frames, FrameClass):
        return [frames], True
    if isinstance(frames, Sequence) and not isinstance(frames, (str, bytes)):
        listed = list(frames)
        if not listed:
            raise InvalidInputError("to_tensor needs at least one frame; got an empty sequence")
        for item in listed:
            if not isinstance(item, FrameClass):
                raise InvalidInputError(
                    f"to_tensor takes alpha2 Frames (VideoSource.next_frame, frame_at, iteration), "
                    f"got {type(item).__name__}"
                )
        return listed, False
    raise InvalidInputError(
        f"to_tensor takes an alpha2 Frame or a sequence of them, got {type(frames).__name__}"
    )


def _picture_size(frames: Sequence[Any], size: tuple[int, int] | None, crop: Any) -> tuple[int, int]:
    for index, frame in enumerate(frames):
        if crop is not None:
            x, y, w, h = crop
            if x + w > frame.width or y + h > frame.height:
                raise InvalidInputError(
                    f"crop {crop} reaches past frame {index} ({frame.width}x{frame.height}): x + width must "
                    f"be at most {frame.width} and y + height at most {frame.height}"
                )
    if size is not None:
        return size
    if crop is not None:
        return crop[2], crop[3]
    sizes = {(f.width, f.height) for f in frames}
    if len(sizes) > 1:
        raise InvalidInputError(
            f"the frames have different sizes {sorted(sizes)}: pass size=(width, height) for one stacked "
            "tensor"
        )
    return next(iter(sizes))


def _stored_crop(
    crop: tuple[int, int, int, int], rotation: Rotation, frame: Frame
) -> tuple[int, int, int, int]:
    """``crop``, a rectangle of the picture as shown (``frame.width`` x ``frame.height``, the file's
    rotation applied), as the rectangle of the stored picture it covers (what the renderer crops, before
    it turns the picture; a mirrored picture's rectangle mirrored back too)."""
    x, y, w, h = crop
    shown_w, shown_h = frame.width, frame.height
    if rotation is Rotation.CW90:  # stored (sx, sy) is shown at (stored height - 1 - sy, sx)
        stored = (y, shown_w - x - w, h, w)
    elif rotation is Rotation.CW180:
        stored = (shown_w - x - w, shown_h - y - h, w, h)
    elif rotation is Rotation.CW270:  # stored (sx, sy) is shown at (sy, stored width - 1 - sx)
        stored = (shown_h - y - h, x, h, w)
    else:
        stored = crop
    if frame.mirrored:  # stored column sx is shown (before the turn) at stored width - 1 - sx
        stored_w = shown_h if rotation in (Rotation.CW90, Rotation.CW270) else shown_w
        sx, sy, sw, sh = stored
        stored = (stored_w - sx - sw, sy, sw, sh)
    return stored


# ---------------------------------------------------------------------------------------------------
# the CUDA kernel's route


def _kernel_refusal(frame: Frame) -> str | None:
    """Why the CUDA kernel cannot read ``frame``'s planes; None when it can."""
    decoded = frame.decoded
    if not decoded.on_gpu:
        return (
            "the frames are in host memory (decoded in software), not in CUDA memory (NVDEC's), which the "
            "CUDA kernel reads"
        )
    if decoded.released:
        return (
            "a frame's NVDEC surface went to the renderer's textures in an earlier render or conversion "
            "(a rendered NVDEC frame is converted from those)"
        )
    refusal = format_refusal(decoded.pixel_format)
    if refusal is not None:
        return refusal
    if decoded.cuda_stream is None:
        return "the frame's CUDA planes name no stream their decode is ordered on"
    return None


def _kernel_work(
    frames: Sequence[Frame], spec: TensorSpec, crop: tuple[int, int, int, int] | None, ordinal: int | None
) -> tuple[list[FrameWork] | None, int, str]:
    """The CUDA kernel's work for ``frames`` and their CUDA device, or None and why it cannot convert
    them (said in the tensor's report when the Dawn route takes them)."""
    source = frames[0]._source
    works: list[FrameWork] = []
    devices: set[int] = set()
    for frame in frames:
        frame._check()
        refusal = _kernel_refusal(frame)
        if refusal is not None:
            return None, 0, refusal
        decoded = frame.decoded
        metadata = decoded.metadata
        if source.renderer.manages_colour(decoded.colour, decoded.pixel_format, metadata.hdr):
            return (
                None,
                0,
                f"a frame's colour ({decoded.colour}) is colour-managed (HDR tone mapping, gamut): the Dawn "
                "renderer's colour-managed pass does that, the CUDA kernel draws the plain pass only",
            )
        planes = decoded.planes
        assert isinstance(planes, tuple)
        devices.add(int(planes[0].device_ordinal))
        rotation = frame.rotation
        stored = None if crop is None else _stored_crop(crop, rotation, frame)
        quarter = rotation in (Rotation.CW90, Rotation.CW270)
        unrotated = (spec.height, spec.width) if quarter else (spec.width, spec.height)
        size = metadata.display_size
        shader = shader_params(
            decoded.pixel_format, decoded.colour, size.width, size.height, crop=stored, output_size=unrotated
        )
        if frame.mirrored:
            shader = dataclasses.replace(shader, mirrored=True)
        located = KernelPlanes(
            luma=planes[0].device_ptr,
            luma_pitch=planes[0].pitch_bytes,
            chroma=tuple(p.device_ptr for p in planes[1:]),
            chroma_pitch=tuple(p.pitch_bytes for p in planes[1:]),
        )
        works.append(
            FrameWork(shader, decoded.pixel_format, located, rotation, int(decoded.cuda_stream or 0))
        )
    if len(devices) > 1:
        return None, 0, f"the frames lie on several CUDA devices {sorted(devices)}"
    device = devices.pop()
    if ordinal is not None and ordinal != device:
        return (
            None,
            0,
            f"the frames are on CUDA device {device} and device asks for CUDA device {ordinal}: the kernel "
            f"writes the tensor on the GPU that holds its frames (ask for device='cuda:{device}')",
        )
    return works, device, ""


# ---------------------------------------------------------------------------------------------------
# the front door


class _BatchImports:
    """The imports of a batch's frames (``Frame._import_for_work``), made as the packer renders them;
    those made for this work only are given back once their renders are submitted, so that a batch of
    any length holds at most ``at_once`` of them (:data:`~alpha2.api.source.LENT_IMPORTS_AT_ONCE`)."""

    def __init__(self, frames: Sequence[Frame]) -> None:
        from alpha2.api.source import LENT_IMPORTS_AT_ONCE

        self._frames = frames
        self._leases: list[ImportLease | None] = [None] * len(frames)
        self._lent: list[bool] = [False] * len(frames)
        self._given = 0  # frames before this one were given back
        self.paths: tuple[ExecutionPath, ...] = ()
        self._paths: list[ExecutionPath | None] = [None] * len(frames)
        self.uploaded = 0
        self.at_once = LENT_IMPORTS_AT_ONCE

    def lease(self, index: int) -> ImportLease:
        lease = self._leases[index]
        if lease is None:
            lease, self._lent[index] = self._frames[index]._import_for_work()
            self._leases[index] = lease
            self._paths[index] = lease.path
            self.uploaded += int(getattr(lease.frame, "bytes_crossed_cpu", 0) or 0)
        return lease

    def give_back(self, upto: int) -> None:
        """The renders of frames ``0 .. upto-1`` are submitted: their lent imports go back."""
        for index in range(self._given, upto):
            lease, self._leases[index] = self._leases[index], None
            if lease is not None and self._lent[index]:
                lease.release()
        self._given = max(self._given, upto)

    def __enter__(self) -> _BatchImports:
        return self

    def __exit__(self, *exc: object) -> None:
        self._given = 0
        self.give_back(len(self._frames))  # after a failure too
        self.paths = tuple(p for p in self._paths if p is not None)


def to_tensor(
    frames: Frame | Sequence[Frame],
    *,
    size: tuple[int, int] | Size | None = None,
    crop: tuple[int, int, int, int] | None = None,
    layout: str = "HWC",
    dtype: str = "uint8",
    mean: float | Sequence[float] | None = None,
    std: float | Sequence[float] | None = None,
    device: Any = "auto",
    require: str | None = None,
    antialias: bool = True,
    route: str = "auto",
) -> RgbTensor:
    """An RGB tensor of one frame, or one stacked tensor of a list of frames.

    Args:
        frames: an alpha2 Frame (the tensor has no batch axis) or a sequence of Frames of one source
            (``(N, ...)``); they stay the caller's to release.
        size: ``(width, height)`` of the tensor's pictures (scaled bilinearly, antialiased where smaller:
            see ``antialias``); None: the crop's size, or the frames' display size.
        crop: ``(x, y, width, height)``, the rectangle of each frame that is used, in pixels of the
            picture as shown (the file's rotation applied: ``frame.width`` x ``frame.height``);
            None: the whole frame.
        layout: ``'HWC'`` ``(H, W, 3)`` or ``'CHW'`` ``(3, H, W)``.
        dtype: ``'uint8'`` (codes 0..255), ``'float16'`` or ``'float32'`` (``code / 255``, normalised);
            numpy's ``np.uint8`` / ``np.float16`` / ``np.float32`` (or their ``np.dtype``) and torch's
            ``torch.uint8`` / ``torch.float16`` / ``torch.float32`` name them too.
        mean: per channel, subtracted from ``code / 255`` (floats only): a number or three (R, G, B).
        std: per channel, divides after the mean (floats only): a number or three.
        device: ``'auto'`` (CUDA memory where the source's device can take it there on the GPU, else a
            numpy array), ``'cuda'`` (CUDA or an error), ``'cuda:N'`` (CUDA on ordinal N, the GPU that
            holds the frames, or an error) or ``'cpu'`` (a numpy array); a ``torch.device`` of cuda or cpu
            says the same.
        require: ``'gpu'``: the tensor must go to CUDA without the CPU (an error with the reason
            otherwise); None: the numpy fallback is allowed, and reported.
        antialias: where the picture is made smaller, each value is the mean of the source under a
            tent two output pixels wide, as PIL's and torchvision's bilinear resize with antialiasing
            (torchvision's default); False: one bilinear sample (torch's ``antialias=False``), which
            lets fine detail alias into moire below half size. Up to 16 samples along each axis (256 a
            pixel): at 64 nothing measurable on the H200 (256 not measured there yet), several times
            the render on a CPU device (lavapipe: 150 against 18 ms for two 720p frames made half
            size, 56 against 6 ms for a 1080p frame made 8 times smaller;
            ``benchmarks/bench_tensor_antialias.py``). They cover the tent a source pixel apart up to
            about an 8x reduction, and two apart at 16x (a 1080p zone plate made 16x smaller: 0.61
            codes from PIL's on average, 23 at most; with the 8 samples of before, 2.36 and 118);
            beyond that fine detail aliases a little, far less than with False.
        route: what converts the frames. ``'auto'``: alpha2's CUDA kernel where it can (NVDEC frames in
            CUDA memory, 8- or 16-bit Y'CbCr in two or three planes, colour the renderer's plain pass
            draws: no HDR tone mapping; the tensor going to CUDA), else the Dawn renderer, the report
            saying why (:attr:`TensorReport.route_reason`); ``'cuda'``: the CUDA kernel, or an
            UnsupportedError saying why it cannot; ``'dawn'``: the renderer on the source's device. The
            kernel does the renderer's arithmetic (the same matrix, siting, clamps and antialiasing
            taps, codes rounded as an rgba8unorm target) with exact bilinear fractions where NVIDIA's
            sampler keeps 8 bits of them, so the two may differ by a code here and there.

    Returns:
        The :class:`RgbTensor`; its :attr:`~RgbTensor.report` says every frame's path, the tensor's,
        and why.

    Raises:
        InvalidInputError: a bad argument (the message names the allowed values), a ``mean`` / ``std``
            whose values the dtype cannot hold (float16's largest is 65504), frames of different
            sources, or a released frame.
        UnsupportedError: the CUDA route was required and cannot be had (the reason), ``route='cuda'``
            where the CUDA kernel cannot convert the frames (the reason), or a frame's
            tensor is larger than the device can pack at once, or a side of it larger than the
            device's textures (``max_texture_dimension_2d``).
    """
    listed, single = _frames_of(frames)
    layout_value = _choice("layout", layout, LAYOUTS)
    dtype_value = _choice("dtype", dtype, TENSOR_DTYPES)
    device_value, ordinal = _device(device)
    require_value = _choice("require", require, REQUIRES)
    if require_value == "gpu" and device_value == "cpu":
        raise InvalidInputError("require='gpu' asks for CUDA memory, device='cpu' for numpy: pick one")
    crop_rect = _crop(crop)
    if not isinstance(antialias, bool):
        raise InvalidInputError(f"antialias must be True or False, got {antialias!r}")
    picture = _picture_size(listed, _size(size), crop_rect)
    spec = TensorSpec(
        picture[0],
        picture[1],
        TensorLayout(layout_value),
        TensorDType(dtype_value),
        mean=_channels("mean", mean),
        std=_channels("std", std),
    )
    _check_range(spec)
    route_value = _choice("route", route, ROUTES)
    if route_value == "cuda" and device_value == "cpu":
        raise InvalidInputError("route='cuda' makes CUDA memory, device='cpu' asks for numpy: pick one")
    source = listed[0]._source
    if any(frame._source is not source for frame in listed):
        raise InvalidInputError(
            "to_tensor batches frames of one VideoSource; convert each source's frames apart"
        )
    kernel_reason = "device='cpu' asked for a numpy array"
    if device_value != "cpu":
        kernel_reason = "route='dawn' asked for"
        if route_value != "dawn":
            tensor = _kernel_tensor(listed, spec, crop_rect, ordinal, antialias, single)
            if isinstance(tensor, RgbTensor):
                return tensor
            kernel_reason = tensor
            if route_value == "cuda":
                raise UnsupportedError(
                    f"route='cuda': alpha2's CUDA kernel cannot convert these frames: {kernel_reason}; "
                    "route='dawn' (or 'auto') renders them on the Dawn device"
                )
    limit = texture_limit(source.device.webgpu_device)
    if limit is not None and max(picture) > limit:
        raise UnsupportedError(
            f"a {picture[0]}x{picture[1]} tensor picture does not fit the textures of "
            f"{source.device.adapter_name!r} (at most {limit} pixels a side, max_texture_dimension_2d), "
            "which each picture is rendered into; ask for a smaller size"
        )
    source._frames_go_to_tensors()  # the Dawn route: NVDEC frames copied ahead from now on
    routes = _routes_of(source.device, getattr(source.importer, "memory_budget", None))
    with routes.lock:
        exporter: TensorExporter | None = None
        reason: str | None = "device='cpu' asked for a numpy array"
        if device_value != "cpu":
            exporter, reason = routes.exporter()
            if exporter is None and (device_value == "cuda" or require_value == "gpu"):
                raise UnsupportedError(
                    f"the tensor cannot go to CUDA on the GPU: {reason}; to_tensor(..., device='cpu') reads "
                    "it back into a numpy array instead"
                )
            if exporter is not None and ordinal is not None and ordinal != exporter.cuda_ordinal:
                raise UnsupportedError(
                    f"the frames are on CUDA device {exporter.cuda_ordinal} ({source.device.adapter_name}) "
                    f"and device asks for CUDA device {ordinal}: a tensor is made on the GPU that holds its "
                    f"frames; ask for device='cuda:{exporter.cuda_ordinal}' and copy it (torch's .to('cuda:"
                    f"{ordinal}')), or open the video on that GPU"
                )
        renderer = source.renderer
        count = len(listed)
        memory: CudaTensorMemory | None = None
        imports = _BatchImports(listed)
        # The CUDA route keeps its context current for the batch: the imports' and the copies' many
        # short driver calls then push and pop it once.
        with (
            exporter.cuda_current() if exporter is not None else contextlib.nullcontext(),
            imports,
        ):

            def encode_render(encoder: Any, index: int, target: Any) -> None:
                frame = listed[index]
                rotation = frame.rotation
                stored = None if crop_rect is None else _stored_crop(crop_rect, rotation, frame)
                renderer.encode_render(
                    encoder,
                    imports.lease(index),
                    target=target,
                    crop=stored,
                    rotation=rotation,
                    antialias=antialias,
                )

            if exporter is not None:
                spans = [frame_words(spec, n) for n in range(count)]
                batch = exporter.batch(spans, max_frame_words(spec), batch_words(spec, count))
                routes.packer.pack_into_textures(
                    spec,
                    count,
                    encode_render,
                    batch,
                    renders_at_once=imports.at_once,
                    submitted=imports.give_back,
                )
                memory = batch.finish()
            else:
                array = routes.packer.to_numpy(
                    spec, count, encode_render, renders_at_once=imports.at_once, submitted=imports.give_back
                )
        frame_paths = imports.paths
        uploaded = imports.uploaded
        if memory is not None:
            report = TensorReport(
                ExecutionPath.GPU_COPY,
                frame_paths,
                "packed on the Dawn device and copied into CUDA memory on the GPU",
                uploaded,
                route="dawn",
                route_reason=kernel_reason,
            )
            return RgbTensor(spec, None if single else count, report, cuda=memory)
        report = TensorReport(
            ExecutionPath.CPU_DOWNLOAD,
            frame_paths,
            f"read back through the CPU: {reason}",
            uploaded + batch_words(spec, count) * 4,
            route="dawn",
            route_reason=kernel_reason,
        )
        return RgbTensor(spec, None if single else count, report, array=array[0] if single else array)


def _kernel_tensor(
    frames: Sequence[Frame],
    spec: TensorSpec,
    crop: tuple[int, int, int, int] | None,
    ordinal: int | None,
    antialias: bool,
    single: bool,
) -> RgbTensor | str:
    """The tensor by the CUDA kernel, or why the kernel cannot make it."""
    works, device, reason = _kernel_work(frames, spec, crop, ordinal)
    if works is None:
        return reason
    try:
        converter = tensor_kernel(device)
    except UnsupportedError as exc:
        return exc.message
    from alpha2.native_gpu.device.waits import gpu_wait_timeout

    memory = converter.convert(works, spec, antialias=antialias, wait_timeout_s=gpu_wait_timeout())
    count = len(frames)
    report = TensorReport(
        ExecutionPath.GPU_COPY,
        (ExecutionPath.ZERO_COPY,) * count,
        "converted on the GPU by alpha2's CUDA kernel, from the frames' CUDA planes into CUDA memory",
        0,
        route="cuda",
        route_reason=(
            "NVDEC frames in CUDA memory whose colour the renderer's plain pass draws: the CUDA kernel "
            "converts them, reading their planes where they lie"
        ),
    )
    return RgbTensor(spec, None if single else count, report, cuda=memory)
