"""RGB tensors of NVDEC frames by one CUDA kernel a frame: the renderer's conversion without Dawn.

:func:`~alpha2.api.tensors.to_tensor` of NVDEC frames on the Dawn route renders each frame from
textures the GPU copy fills and packs it through textures CUDA copies out of: three shared textures a
frame, whose semaphores cost Dawn's queue submission 170-260 us each on the caller's thread
(BENCHMARKS.md, "224x224"). Where the frame needs no colour management (the renderer's plain pass),
:data:`KERNEL_SOURCE` does the same arithmetic on CUDA, reading the decoder's planes where they lie:

* the plain pass of ``yuv_to_rgb.wgsl`` (``fs_biplanar`` / ``fs_triplanar``): each output pixel's
  centre turned back by the display rotation, walked over the source rectangle (mirrored: from its
  right edge), as luma position ``p``; the chroma at ``(p - siting) * (1/sx, 1/sy)``; bilinear samples
  clamped to the centres of the displayed texels (the luma to the crop, the chroma to the picture);
  antialiased, ``TAPS_X x TAPS_Y`` of them over a tent two output pixels wide less the bilinear blur
  (``sqrt(s^2 - 1)``), weighted by the tent; the matrix (columns scaled by ``value_scale``, so P010's
  high bits are read as 10-bit codes) and offset; clamped to 0..1;
* the rgba8unorm target and ``rgb_tensor.wgsl``: the value rounded to an 8-bit code; uint8 writes it,
  float16 / float32 its entry of :func:`~alpha2.native_gpu.render.tensor.element_table` (the same
  table, so the floats are exactly the codes' transform, as on the Dawn route); HWC or CHW, the frames
  of a batch one after another.

The numbers are the renderer's own (:func:`~alpha2.native_gpu.render.params.shader_params`,
:func:`~alpha2.native_gpu.render.renderer.antialias_taps`), packed by :func:`kernel_argument`, a pure
function. The kernel runs on a CUDA stream of alpha2's own, ordered after the frames' stream (NVDEC's),
and that stream is ordered after the kernel in turn, so the decoder reuses no surface the kernel still
reads; the tensor's memory comes from a stream-ordered pool and is handed out through DLPack as the
Dawn route's is (:class:`~alpha2.native_gpu.interop.tensor_export.CudaTensorMemory`).

What it does not do keeps the Dawn route (:func:`kernel_refusal` says why): colour management (HDR
tone mapping, SDR primaries with ``sdr_gamut``), gray and packed RGB frames, float planes, frames in
host memory. Its bilinear fractions are exact (the renderer's are the sampler's: 8 bits of fraction on
NVIDIA), so its codes may differ from the Dawn route's by a code here and there (probe_cuda_tensor.py:
0.07 mean, 1 max against lavapipe's, antialiased).
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation
from alpha2.native_gpu.render.params import LayoutKind, ShaderParams, layout_kind
from alpha2.native_gpu.render.renderer import antialias_taps
from alpha2.native_gpu.render.tensor import TensorDType, TensorLayout, TensorSpec, element_table

if TYPE_CHECKING:
    from alpha2.native_gpu.interop.tensor_export import CudaTensorMemory

__all__ = [
    "ARGUMENT_BYTES",
    "BLOCK",
    "KERNEL_NAME",
    "KERNEL_SOURCE",
    "CudaTensorKernel",
    "KernelPlanes",
    "format_refusal",
    "kernel_argument",
    "tensor_kernel",
]

KERNEL_NAME = "rgb_tensor"
BLOCK = (16, 16, 1)
"""Threads a block: one an output pixel."""

KERNEL_SOURCE = r"""
// Y'CbCr planes (bi-planar: NV12, P010, NV16, ...; tri-planar: yuv420p, yuv444p16, ...) -> an RGB
// tensor, as alpha2's renderer draws the plain pass (yuv_to_rgb.wgsl) and rgb_tensor.wgsl packs it.
// Index space: luma sample (i, j) sits at (i, j); chroma sample (k, l) at luma position
// (k * sx + siting.x, l * sy + siting.y). cuda_tensor.py packs TensorArgument (kernel_argument).

struct TensorArgument {
    unsigned long long luma;     // the Y plane's first byte
    unsigned long long cb;       // Cb sample (0, 0)'s first byte
    unsigned long long cr;       // Cr sample (0, 0)'s first byte
    unsigned long long table;    // uint32 [3][256]: element_table (float16 in the low half)
    unsigned long long out;      // this frame's first element
    long long luma_pitch;        // bytes from one row to the next
    long long cb_pitch;
    long long cr_pitch;
    long long unused;
    float matrix[9];             // rows of M, columns scaled by value_scale: on normalised samples
    float offset[3];
    float luma_norm;             // a luma sample's integer -> its normalised value (1/255, 1/65535)
    float chroma_norm;
    float src_origin[2];         // the source rectangle as walked: (x, y), or (x + w, y) mirrored
    float src_extent[2];         // (w, h), or (-w, h) mirrored
    float dst_map[2];            // source luma pixels an output pixel of the unrotated render
    float chroma_map[4];         // 1/sx, 1/sy, siting x, siting y
    int luma_clamp[4];           // texel centres sampled: min x, min y, max x, max y
    int chroma_clamp[4];
    int out_w;                   // the tensor's picture (as shown: rotated)
    int out_h;
    int taps_x;                  // antialias_taps(); 1, 1: one bilinear sample
    int taps_y;
    int rotation;                // clockwise quarter turns (0..3)
    int sample_bytes;            // 1 (8-bit planes) or 2 (16-bit planes)
    int luma_step;               // bytes from one luma texel to the next
    int chroma_step;             // bytes from one chroma texel to the next (2 samples bi-planar)
    int layout;                  // 0: HWC, 1: CHW
    int dtype;                   // 0: uint8, 1: float16, 2: float32
    int quantise;                // bilinear fractions in 8 bits, as NVIDIA's texture filter holds them
    int unused_int;
};

__device__ float filter_fraction(float f, int quantise) {
    return quantise ? rintf(f * 256.0f) * (1.0f / 256.0f) : f;
}

__device__ float load_sample(const unsigned char* base, long long pitch, int step, int bytes, int x, int y) {
    const unsigned char* at = base + (long long)y * pitch + (long long)x * step;
    if (bytes == 2) {
        return (float)(*(const unsigned short*)at);
    }
    return (float)(*at);
}

// A bilinear sample at index-space (x, y), the position clamped to the texel centres clamp[0..3] first
// (sample_clamped()); a neighbour past the clamp has weight 0 and is clamped too.
__device__ float bilinear(const unsigned char* base, long long pitch, int step, int bytes, float x, float y,
                          const int* clamp, int quantise) {
    x = fminf(fmaxf(x, (float)clamp[0]), (float)clamp[2]);
    y = fminf(fmaxf(y, (float)clamp[1]), (float)clamp[3]);
    float x_floor = floorf(x);
    float y_floor = floorf(y);
    float fx = filter_fraction(x - x_floor, quantise);
    float fy = filter_fraction(y - y_floor, quantise);
    int x0 = (int)x_floor;
    int y0 = (int)y_floor;
    int x1 = min(x0 + 1, clamp[2]);
    int y1 = min(y0 + 1, clamp[3]);
    float a = load_sample(base, pitch, step, bytes, x0, y0);
    float b = load_sample(base, pitch, step, bytes, x1, y0);
    float c = load_sample(base, pitch, step, bytes, x0, y1);
    float d = load_sample(base, pitch, step, bytes, x1, y1);
    // WGSL's mix(a, b, f) = a * (1 - f) + b * f, along x, then y.
    float top = a * (1.0f - fx) + b * fx;
    float bottom = c * (1.0f - fx) + d * fx;
    return top * (1.0f - fy) + bottom * fy;
}

__device__ float tap_at(int i, int n) {
    return ((float)i + 0.5f) / (float)n * 2.0f - 1.0f;
}

extern "C" __global__ void rgb_tensor(const TensorArgument a) {
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= a.out_w || oy >= a.out_h) {
        return;
    }
    const unsigned char* luma = (const unsigned char*)a.luma;
    const unsigned char* cb_plane = (const unsigned char*)a.cb;
    const unsigned char* cr_plane = (const unsigned char*)a.cr;

    // vs_main: the pixel's centre as a fraction t of the target, turned back by the rotation
    // (unrotate_fraction), then p = src.xy + t * src.zw - 0.5.
    float tx = ((float)ox + 0.5f) / (float)a.out_w;
    float ty = ((float)oy + 0.5f) / (float)a.out_h;
    float ux = tx;
    float uy = ty;
    if (a.rotation == 1) {
        ux = ty;
        uy = 1.0f - tx;
    } else if (a.rotation == 2) {
        ux = 1.0f - tx;
        uy = 1.0f - ty;
    } else if (a.rotation == 3) {
        ux = 1.0f - ty;
        uy = tx;
    }
    float lx = a.src_origin[0] + ux * a.src_extent[0] - 0.5f;
    float ly = a.src_origin[1] + uy * a.src_extent[1] - 0.5f;
    // chroma_position(p) = (p - siting) * chroma_map.xy
    float cx = (lx - a.chroma_map[2]) * a.chroma_map[0];
    float cy = (ly - a.chroma_map[3]) * a.chroma_map[1];
    // tap_offset(): the tent's half-width less the bilinear taps' own blur, sqrt(max(s^2 - 1, 0)).
    float half_x = sqrtf(fmaxf(a.dst_map[0] * a.dst_map[0] - 1.0f, 0.0f));
    float half_y = sqrtf(fmaxf(a.dst_map[1] * a.dst_map[1] - 1.0f, 0.0f));

    float sum_y = 0.0f, sum_cb = 0.0f, sum_cr = 0.0f, total = 0.0f;
    for (int j = 0; j < a.taps_y; ++j) {
        float vy = tap_at(j, a.taps_y);
        float wy = 1.0f - fabsf(vy);
        float dy = vy * half_y;
        for (int i = 0; i < a.taps_x; ++i) {
            float vx = tap_at(i, a.taps_x);
            float w = (1.0f - fabsf(vx)) * wy;  // tap_weight2(i, j)
            float dx = vx * half_x;
            float qx = cx + dx * a.chroma_map[0];
            float qy = cy + dy * a.chroma_map[1];
            sum_y += w * bilinear(luma, a.luma_pitch, a.luma_step, a.sample_bytes, lx + dx, ly + dy,
                                  a.luma_clamp, a.quantise);
            sum_cb += w * bilinear(cb_plane, a.cb_pitch, a.chroma_step, a.sample_bytes, qx, qy,
                                   a.chroma_clamp, a.quantise);
            sum_cr += w * bilinear(cr_plane, a.cr_pitch, a.chroma_step, a.sample_bytes, qx, qy,
                                   a.chroma_clamp, a.quantise);
            total += w;
        }
    }
    float s0 = sum_y / total * a.luma_norm;
    float s1 = sum_cb / total * a.chroma_norm;
    float s2 = sum_cr / total * a.chroma_norm;

    long long plane_elements = (long long)a.out_w * a.out_h;
    long long pixel = (long long)oy * a.out_w + ox;
    const unsigned int* table = (const unsigned int*)a.table;
    for (int c = 0; c < 3; ++c) {
        // to_rgba(): the matrix, the offset and the clamp; the rgba8unorm store and the tensor pass's
        // round(clamp(x) * 255).
        const float* m = a.matrix + 3 * c;
        float value = m[0] * s0 + m[1] * s1 + m[2] * s2 + a.offset[c];
        value = fminf(fmaxf(value, 0.0f), 1.0f);
        int code = min(max(__float2int_rn(value * 255.0f), 0), 255);
        long long element = a.layout == 1 ? c * plane_elements + pixel : pixel * 3 + c;
        if (a.dtype == 0) {
            ((unsigned char*)a.out)[element] = (unsigned char)code;
        } else if (a.dtype == 1) {
            ((unsigned short*)a.out)[element] = (unsigned short)(table[c * 256 + code] & 0xffffu);
        } else {
            ((unsigned int*)a.out)[element] = table[c * 256 + code];
        }
    }
}
"""

_ARGUMENT_FORMAT = "<5Q4q9f3f2f2f2f2f4f4i4i12i"
ARGUMENT_BYTES = struct.calcsize(_ARGUMENT_FORMAT)
"""Bytes of the kernel's one argument (``TensorArgument``)."""
assert ARGUMENT_BYTES % 8 == 0

_DTYPE_CODES = {TensorDType.UINT8: 0, TensorDType.FLOAT16: 1, TensorDType.FLOAT32: 2}
_LAYOUT_CODES = {TensorLayout.HWC: 0, TensorLayout.CHW: 1}
_ROTATION_TURNS = {Rotation.NONE: 0, Rotation.CW90: 1, Rotation.CW180: 2, Rotation.CW270: 3}


def format_refusal(pixel_format: PixelFormat) -> str | None:
    """Why the kernel cannot read planes of ``pixel_format``; None when it can (Y'CbCr in two or three
    integer planes of 8 or 16 bits a sample)."""
    try:
        kind = layout_kind(pixel_format)
    except UnsupportedError as exc:
        return exc.message
    if kind not in (LayoutKind.BIPLANAR, LayoutKind.TRIPLANAR):
        return (
            f"the CUDA kernel converts Y'CbCr in two or three planes; {pixel_format.ffmpeg_name} is "
            f"{kind.value}"
        )
    if any(plane.is_float for plane in pixel_format.plane_formats):
        return f"the CUDA kernel reads integer planes; {pixel_format.ffmpeg_name}'s are floats"
    if pixel_format.storage_bits not in (8, 16):
        return (
            f"the CUDA kernel reads 8- or 16-bit samples; {pixel_format.ffmpeg_name} stores "
            f"{pixel_format.storage_bits}"
        )
    return None


@dataclass(frozen=True)
class KernelPlanes:
    """Where one frame's planes lie: addresses and row pitches in bytes (CUDA memory on the GPU, host
    memory in the tests' C++ build of the kernel)."""

    luma: int
    luma_pitch: int
    chroma: tuple[int, ...]
    """The chroma plane (bi-planar) or the Cb and Cr planes (tri-planar)."""
    chroma_pitch: tuple[int, ...]


def kernel_argument(
    shader: ShaderParams,
    pixel_format: PixelFormat,
    planes: KernelPlanes,
    *,
    spec: TensorSpec,
    rotation: Rotation,
    antialias: bool,
    table: int,
    out: int,
    quantise: bool = False,
) -> bytes:
    """The kernel's argument for one frame: the render's numbers (``shader``, the renderer's
    ``shader_params`` of the unrotated render, with ``mirrored`` set as the frame's), where the
    planes lie, the tensor's layout and dtype, the table's address (``element_table(spec)`` as uint32)
    and the frame's first element. Pure.

    Raises:
        InvalidInputError: planes of a pixel format the kernel cannot read (:func:`format_refusal`), or
            a shader whose output size is not the spec's picture turned back by ``rotation``.
    """
    refusal = format_refusal(pixel_format)
    if refusal is not None:
        raise InvalidInputError(refusal)
    quarter = rotation in (Rotation.CW90, Rotation.CW270)
    out_w, out_h = spec.width, spec.height
    expected = (out_h, out_w) if quarter else (out_w, out_h)
    if shader.output_size != expected:
        raise InvalidInputError(
            f"the render's output size {shader.output_size} is not the tensor's {out_w}x{out_h} turned back "
            f"by {rotation.name} {expected}"
        )
    sample_bytes = pixel_format.storage_bits // 8
    vs = shader.value_scale
    matrix = [float(row[c] * vs[c]) for row in shader.matrix for c in range(3)]
    norm = 1.0 / float(2**pixel_format.storage_bits - 1)
    x, y, w, h = shader.src_rect
    origin_x, extent_w = (x + w, -w) if shader.mirrored else (x, w)
    ow, oh = shader.output_size
    sx, sy = shader.chroma_subsampling
    taps = antialias_taps(shader) if antialias else (1, 1)
    if layout_kind(pixel_format) is LayoutKind.BIPLANAR:
        if len(planes.chroma) != 1:
            raise InvalidInputError(
                f"{pixel_format.ffmpeg_name} has one chroma plane, got {len(planes.chroma)}"
            )
        cb = planes.chroma[0]
        cr = cb + sample_bytes
        cb_pitch = cr_pitch = planes.chroma_pitch[0]
        chroma_step = 2 * sample_bytes
    else:
        if len(planes.chroma) != 2:
            raise InvalidInputError(
                f"{pixel_format.ffmpeg_name} has two chroma planes, got {len(planes.chroma)}"
            )
        cb, cr = planes.chroma
        cb_pitch, cr_pitch = planes.chroma_pitch
        chroma_step = sample_bytes
    return struct.pack(
        _ARGUMENT_FORMAT,
        planes.luma,
        cb,
        cr,
        table,
        out,
        planes.luma_pitch,
        cb_pitch,
        cr_pitch,
        0,
        *matrix,
        *shader.offset,
        norm,
        norm,
        float(origin_x),
        float(y),
        float(extent_w),
        float(h),
        w / ow,
        h / oh,
        1.0 / sx,
        1.0 / sy,
        *shader.chroma_offset,
        *shader.luma_clamp,
        *shader.chroma_clamp,
        out_w,
        out_h,
        taps[0],
        taps[1],
        _ROTATION_TURNS[rotation],
        sample_bytes,
        sample_bytes,
        chroma_step,
        _LAYOUT_CODES[spec.layout],
        _DTYPE_CODES[spec.dtype],
        1 if quantise else 0,
        0,
    )


def grid_of(spec: TensorSpec) -> tuple[int, int, int]:
    """The launch grid of one frame's kernel: a thread an output pixel in :data:`BLOCK` blocks."""
    return (-(-spec.width // BLOCK[0]), -(-spec.height // BLOCK[1]), 1)


@dataclass(frozen=True)
class FrameWork:
    """One frame of a conversion: its render's numbers and its planes on CUDA."""

    shader: ShaderParams
    pixel_format: PixelFormat
    planes: KernelPlanes
    rotation: Rotation
    stream: int
    """The CUDA stream the frame's planes are ordered on (0: the legacy default stream, NVDEC's)."""


_TABLES_KEPT = 8
_POOL_KEEP_BYTES = 256 << 20


class CudaTensorKernel:
    """The compiled kernel of one CUDA device, its stream, its memory pool and tables: converts batches
    of frames into tensors. Thread-safe (a conversion at a time)."""

    def __init__(self, ordinal: int) -> None:
        """Compile (once per process) and set up for CUDA device ``ordinal``.

        Raises:
            UnsupportedError: no CUDA, no NVRTC (the reason), or the kernel does not compile or load.
        """
        from alpha2.native_gpu._cuda import interop
        from alpha2.native_gpu._cuda.core import CudaError
        from alpha2.native_gpu._cuda.kernels import compiled_kernel

        try:
            self._kernel = compiled_kernel(KERNEL_SOURCE, KERNEL_NAME, ordinal)
        except UnsupportedError:
            raise
        except CudaError as exc:
            raise UnsupportedError(
                f"alpha2's CUDA tensor kernel cannot run on CUDA device {ordinal}: {exc}"
            ) from exc
        self.ordinal = ordinal
        """The CUDA device."""
        self._ctx = self._kernel.ctx
        self._stream = interop.CopyStream(self._ctx)
        self._pool: Any = None
        try:
            self._pool = interop.StreamOrderedPool(self._ctx, keep_bytes=_POOL_KEEP_BYTES)
        except UnsupportedError:
            pass  # cuMemAlloc / cuMemFree then, which wait for the device
        self._tables: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()

    def _table(self, spec: TensorSpec) -> int:
        """The device address of ``element_table(spec)`` (uploaded once a key; a few kept)."""
        from alpha2.native_gpu._cuda import interop
        from alpha2.native_gpu._cuda.core import check

        key = spec.table_key
        memory = self._tables.get(key)
        if memory is None:
            words = np.ascontiguousarray(element_table(spec), dtype=np.uint32)
            memory = interop.DeviceMemory(self._ctx, words.nbytes)
            with self._ctx:
                check(
                    self._ctx._cu.cuMemcpyHtoD(memory.pointer, words.ctypes.data, words.nbytes),
                    "cuMemcpyHtoD",
                )
            if len(self._tables) >= _TABLES_KEPT:
                # cuMemFree waits for the device: the kernels reading the old table are done first.
                oldest = next(iter(self._tables))
                self._tables.pop(oldest).close()
            self._tables[key] = memory
        return int(memory.pointer)

    def convert(
        self, frames: Sequence[FrameWork], spec: TensorSpec, *, antialias: bool, wait_timeout_s: float
    ) -> CudaTensorMemory:
        """Enqueue the conversion of ``frames`` into one stacked tensor of ``spec``; returns its memory
        (handed out through DLPack: a consumer's stream waits for the kernels on the GPU).

        Raises:
            InvalidInputError: no frames.
            CudaError: a driver call failed.
        """
        from alpha2.native_gpu._cuda import interop
        from alpha2.native_gpu._cuda.kernels import stream_wait_event
        from alpha2.native_gpu.interop.tensor_export import cuda_tensor_memory

        if not frames:
            raise InvalidInputError("a CUDA tensor conversion needs at least one frame")
        grid = grid_of(spec)
        size = spec.frame_bytes * len(frames)
        with self._lock, self._ctx:
            table = self._table(spec)
            streams = sorted({work.stream for work in frames})
            for stream in streams:
                self._stream.order_after(stream)  # the decode of the planes first
            memory = (
                self._pool.allocate(size, self._stream)
                if self._pool is not None
                else interop.DeviceMemory(self._ctx, size)
            )
            try:
                for index, work in enumerate(frames):
                    argument = kernel_argument(
                        work.shader,
                        work.pixel_format,
                        work.planes,
                        spec=spec,
                        rotation=work.rotation,
                        antialias=antialias,
                        table=table,
                        out=memory.pointer + index * spec.frame_bytes,
                    )
                    self._kernel.launch(grid, BLOCK, self._stream.handle, argument)
                done = interop.CudaEvent(self._ctx)
                done.record(self._stream.handle)
                # The decoder's later work on the frames' stream (a surface reused) waits for the kernels.
                for stream in streams:
                    stream_wait_event(self._ctx, stream, done)
            except BaseException:
                memory.close()
                raise
            return cuda_tensor_memory(
                memory,
                done,
                ordinal=self.ordinal,
                producer_stream=self._stream.handle,
                timeout_s=wait_timeout_s,
            )


_converters: dict[int, CudaTensorKernel] = {}
_converters_lock = threading.Lock()


def tensor_kernel(ordinal: int) -> CudaTensorKernel:
    """The process's :class:`CudaTensorKernel` of CUDA device ``ordinal`` (made on first use).

    Raises:
        UnsupportedError: it cannot be had (no CUDA, no NVRTC, the kernel does not compile): the reason.
    """
    with _converters_lock:
        converter = _converters.get(ordinal)
        if converter is None:
            converter = CudaTensorKernel(ordinal)
            _converters[ordinal] = converter
        return converter
