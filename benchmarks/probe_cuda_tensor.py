"""NVDEC frames into 224x224 RGB tensors by one CUDA kernel, no Dawn: exact and fast enough (issue 27)?

``to_tensor`` reaches 0.58-0.86 of decoding alone at 224x224 float16 (target >= 0.9): Dawn's
``wgpuQueueSubmit`` costs the caller's thread 170-260 us a shared texture (BENCHMARKS.md, "224x224").
This probe converts each NVDEC frame's NV12 planes with one NVRTC kernel (cupy.RawKernel) instead and asks
(1) whether it stays within the exactness targets against alpha2's renderer (mean <= 0.5, max <= 2 codes)
and (2) what it does to frames per second and the caller's CPU time a frame:

1. the 1080p H.264 clip of the tensor benchmarks (``ml-N-gop250.mp4``, bench_ml.make_clip), made if absent;
2. an NVDEC frame's planes: formats, strides, CUDA stream, colour, and the renderer's numbers for a
   224x224 render (``shader_params``, ``antialias_taps``: the matrix, range, chroma siting and taps the
   kernel is given, so that they are alpha2's own);
3. cupy: the kernel compiled (NVRTC), run on that frame through DLPack, its GPU time (CUDA events);
4. exactness: the first ``--check-frames`` frames by the kernel (antialiased and bilinear; the bilinear
   weights exact, and held in 8 bits as NVIDIA's texture filter holds them) against alpha2's
   ``to_tensor(frame, size=(224, 224), layout='CHW')`` uint8 and float16 of the same frames decoded again
   (the step fails when no antialiased row meets the targets; the bilinear rows are said);
5. timing, one process, ``--rounds`` alternating rounds of ``--frames`` frames a mode: decoding alone
   (each frame's CUDA planes taken and released), decoding + the kernel (antialiased; bilinear), and
   ``to_tensor`` a frame at a time (profile_tensor_threads.py's row); frames per second, the ratio to
   decoding alone in the same round, and the caller thread's CPU time a frame (``time.thread_time``).

The kernel (``KERNEL_SOURCE``) does what the renderer does for an SDR frame (the plain pass of
yuv_to_rgb.wgsl, fs_biplanar, no colour management: SDR BT.709 only; step 4 says whether the renderer
managed colour) and then what rgb_tensor.wgsl does: the output pixel's centre mapped to source luma
position p, the chroma position (p - siting) / 2, each sample clamped to the centres of the displayed
texels and bilinear, TAPS_X x TAPS_Y of them spread over a tent two output pixels wide with the
bilinear blur taken out (sqrt(s^2 - 1)), weighted by the tent; the matrix and offset on the mean
Y'CbCr; clamped to 0..1 and rounded to an 8-bit code as an rgba8unorm target stores it; uint8 writes
the code, float16 the code's entry of alpha2's own 3 x 256 table (``element_table``: (code / 255 - mean)
/ std rounded to float16 by numpy), so float16 is exact wherever the code is. The kernel runs on the
frame's CUDA stream (NVDEC's: the legacy default stream, FFmpeg's), so the decoder's later reuse of
the surface is ordered after it; the frame is released once the kernel is enqueued.

Each step prints one line, OK or the exception; the exit status is 0 when all passed, 1 otherwise (the
failing step named). Needs NVDEC, cupy (NVRTC) and alpha2's Dawn + CUDA device.

    python3 benchmarks/probe_cuda_tensor.py --clip-frames 600 --frames 600 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

OUT_W = 224
OUT_H = 224
MEAN = 0.5
STD = 0.25
"""profile_tensor_threads.py's SMALL row: 224x224 float16 CHW, mean 0.5, std 0.25 (checked in step 2)."""
MEAN_LIMIT = 0.5
MAX_LIMIT = 2
"""The exactness targets, in codes, against the renderer's conversion."""
BLOCK = (16, 16, 1)

# Indices into the kernel's float32 parameter array (filled by kernel_params).
KERNEL_SOURCE = r"""
// NV12 (8-bit, 4:2:0) -> a CHW RGB tensor of out_w x out_h, as alpha2's renderer makes it (yuv_to_rgb.wgsl,
// fs_biplanar, plain pass) and its tensor pass packs it (rgb_tensor.wgsl). Index space: luma texel (i, j)
// sits at (i, j), chroma texel (k, l) at luma position (k * 2 + siting.x, l * 2 + siting.y).

#define P_MATRIX 0        // p[0..8]: rows of M, R'G'B' (0..1) = M @ (Y, Cb, Cr) in codes + offset
#define P_OFFSET 9        // p[9..11]
#define P_SCALE 12        // p[12..13]: source luma pixels an output pixel (x, y): the shader's dst_map.xy
#define P_CHROMA_STEP 14  // p[14..15]: chroma samples a luma sample (x, y): chroma_map.xy (1/2, 1/2)
#define P_SITING 16       // p[16..17]: chroma sample (0, 0)'s position in luma pixels: chroma_map.zw

// The fraction of a bilinear sample; quantise != 0: held in 8 bits, as NVIDIA's texture filter holds
// it (the CUDA programming guide, "Linear Filtering": 9-bit fixed point, 8 bits of fraction).
__device__ float filter_fraction(float f, int quantise) {
    return quantise ? rintf(f * 256.0f) * (1.0f / 256.0f) : f;
}

// Channel `channel` of a plane of `texel_bytes`-byte texels, rows `pitch` bytes apart, sampled
// bilinearly at index-space position (x, y). As sample_clamped() does, the position is first clamped to
// the centres of the displayed texels [0, max_x] x [0, max_y]; a neighbour past max (fraction 0 there)
// is clamped too, so no byte outside the displayed texels is read.
__device__ float bilinear(const unsigned char* plane, long long pitch, int texel_bytes, int channel,
                          float x, float y, int max_x, int max_y, int quantise) {
    x = fminf(fmaxf(x, 0.0f), (float)max_x);
    y = fminf(fmaxf(y, 0.0f), (float)max_y);
    float x_floor = floorf(x);
    float y_floor = floorf(y);
    float fx = filter_fraction(x - x_floor, quantise);
    float fy = filter_fraction(y - y_floor, quantise);
    int x0 = (int)x_floor;
    int y0 = (int)y_floor;
    int x1 = min(x0 + 1, max_x);
    int y1 = min(y0 + 1, max_y);
    const unsigned char* row0 = plane + (long long)y0 * pitch;
    const unsigned char* row1 = plane + (long long)y1 * pitch;
    float a = (float)row0[x0 * texel_bytes + channel];
    float b = (float)row0[x1 * texel_bytes + channel];
    float c = (float)row1[x0 * texel_bytes + channel];
    float d = (float)row1[x1 * texel_bytes + channel];
    // WGSL's mix(a, b, f) = a * (1 - f) + b * f, along x and then y, as load_bilinear().
    float top = a * (1.0f - fx) + b * fx;
    float bottom = c * (1.0f - fx) + d * fx;
    return top * (1.0f - fy) + bottom * fy;
}

// tap_at(i, n): where tap i of n lies, in output pixels from the pixel's centre (-1..1).
__device__ float tap_at(int i, int n) {
    return ((float)i + 0.5f) / (float)n * 2.0f - 1.0f;
}

extern "C" __global__ void nv12_to_tensor(
    unsigned long long luma_address,    // the Y plane (uint8 texels)
    long long luma_pitch,               // bytes from one Y row to the next
    unsigned long long chroma_address,  // the CbCr plane (two uint8 a texel, Cb first)
    long long chroma_pitch,             // bytes from one CbCr row to the next
    int src_w, int src_h,               // the displayed picture, luma pixels (the planes may be larger)
    int chroma_w, int chroma_h,         // the displayed chroma texels: ceil(src_w / 2), ceil(src_h / 2)
    int out_w, int out_h,               // the tensor's W and H
    int taps_x, int taps_y,             // antialias_taps(); 1, 1: one bilinear sample
    int quantise,                       // filter fractions in 8 bits (filter_fraction)
    unsigned long long params_address,  // float32 p[18] (P_* above)
    unsigned long long table_address,   // uint16 [3][256]: float16 bits of (code / 255 - mean) / std
    unsigned long long u8_address,      // uint8 [3][out_h][out_w], or 0: not written
    unsigned long long f16_address)     // float16 bits [3][out_h][out_w], or 0: not written
{
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= out_w || oy >= out_h) {
        return;
    }
    const unsigned char* luma = (const unsigned char*)luma_address;
    const unsigned char* chroma = (const unsigned char*)chroma_address;
    const float* p = (const float*)params_address;
    const unsigned short* table = (const unsigned short*)table_address;

    // vs_main: the pixel's centre as a fraction t of the output, p = t * source size - 0.5 (no crop).
    float lx = ((float)ox + 0.5f) / (float)out_w * (float)src_w - 0.5f;
    float ly = ((float)oy + 0.5f) / (float)out_h * (float)src_h - 0.5f;
    // chroma_position(p) = (p - siting) * chroma_map.xy
    float cx = (lx - p[P_SITING]) * p[P_CHROMA_STEP];
    float cy = (ly - p[P_SITING + 1]) * p[P_CHROMA_STEP + 1];
    // tap_offset(): the tent's half-width, less the bilinear taps' own blur: sqrt(max(s^2 - 1, 0)).
    float half_x = sqrtf(fmaxf(p[P_SCALE] * p[P_SCALE] - 1.0f, 0.0f));
    float half_y = sqrtf(fmaxf(p[P_SCALE + 1] * p[P_SCALE + 1] - 1.0f, 0.0f));

    float sum_y = 0.0f, sum_cb = 0.0f, sum_cr = 0.0f, total = 0.0f;
    for (int j = 0; j < taps_y; ++j) {
        float ty = tap_at(j, taps_y);
        float wy = 1.0f - fabsf(ty);
        float dy = ty * half_y;
        for (int i = 0; i < taps_x; ++i) {
            float tx = tap_at(i, taps_x);
            float w = (1.0f - fabsf(tx)) * wy;  // tap_weight2(i, j)
            float dx = tx * half_x;
            // biplanar_at(): the luma at p + d, the chroma at its position + d * chroma_map.xy.
            sum_y += w * bilinear(luma, luma_pitch, 1, 0, lx + dx, ly + dy, src_w - 1, src_h - 1, quantise);
            float qx = cx + dx * p[P_CHROMA_STEP];
            float qy = cy + dy * p[P_CHROMA_STEP + 1];
            sum_cb += w * bilinear(chroma, chroma_pitch, 2, 0, qx, qy, chroma_w - 1, chroma_h - 1, quantise);
            sum_cr += w * bilinear(chroma, chroma_pitch, 2, 1, qx, qy, chroma_w - 1, chroma_h - 1, quantise);
            total += w;
        }
    }
    float y = sum_y / total;
    float cb = sum_cb / total;
    float cr = sum_cr / total;

    int plane_elements = out_w * out_h;
    int index = oy * out_w + ox;
    unsigned char* out_u8 = (unsigned char*)u8_address;
    unsigned short* out_f16 = (unsigned short*)f16_address;
    for (int c = 0; c < 3; ++c) {
        const float* m = p + P_MATRIX + 3 * c;
        float value = m[0] * y + m[1] * cb + m[2] * cr + p[P_OFFSET + c];
        // to_rgba()'s clamp, the rgba8unorm store and the tensor pass's round(clamp(x) * 255).
        value = fminf(fmaxf(value, 0.0f), 1.0f);
        int code = __float2int_rn(value * 255.0f);
        code = min(max(code, 0), 255);
        if (out_u8 != 0) {
            out_u8[c * plane_elements + index] = (unsigned char)code;
        }
        if (out_f16 != 0) {
            out_f16[c * plane_elements + index] = table[c * 256 + code];
        }
    }
}
"""


class StepFailed(Exception):
    """A step's check failed (not an exception of a call)."""


class Steps:
    """Numbered steps, each printing OK or its exception; the first failure is remembered."""

    def __init__(self) -> None:
        self.failed: str | None = None
        self._number = 0

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        self._number += 1
        label = f"step {self._number} ({name})"
        print(f"{label} ...", flush=True)
        try:
            yield
        except BaseException as exc:
            if self.failed is None:
                self.failed = label
            print(f"{label}: FAILED: {type(exc).__name__}: {exc}", flush=True)
            if not isinstance(exc, StepFailed):
                traceback.print_exc(limit=8)
            raise
        print(f"{label}: OK", flush=True)


# ---------------------------------------------------------------------------------------------------
# step 1: the clip


def find_clip(clip_dir: str, clip_frames: int) -> str:
    """profile_tensor_threads.py's clip: bench_ml.make_clip's 1080p H.264, GOP 250."""
    from bench_ml import make_clip

    os.makedirs(clip_dir, exist_ok=True)
    path = os.path.join(clip_dir, f"ml-{clip_frames}-gop250.mp4")
    if os.path.exists(path):
        print(f"  {path} (there)")
        return path
    t0 = time.perf_counter()
    make_clip(path + ".part.mp4", clip_frames, 250)
    os.replace(path + ".part.mp4", path)
    print(f"  {path} made in {time.perf_counter() - t0:.1f} s")
    return path


# ---------------------------------------------------------------------------------------------------
# step 2: the planes and the renderer's numbers


@dataclass(frozen=True)
class FrameFacts:
    """What the kernel is given for every frame of the clip (checked the same on each)."""

    width: int
    """Displayed luma pixels (before rotation)."""
    height: int
    chroma_w: int
    """Displayed chroma texels: the renderer's chroma clamp + 1."""
    chroma_h: int
    ordinal: int
    """The CUDA device of the planes."""
    stream: int
    """The frames' CUDA stream (0: the legacy default stream)."""
    params: np.ndarray
    """float32 p[18]: matrix rows, offset, scale, chroma step, siting (KERNEL_SOURCE's P_*)."""
    taps: tuple[int, int]
    """antialias_taps() of the 224x224 render."""
    table: np.ndarray
    """uint16 (3, 256): float16 bits of (code / 255 - mean) / std, alpha2's element_table."""


def kernel_params(shader: Any) -> np.ndarray:
    """The kernel's float32 parameters from the renderer's ShaderParams of the render."""
    matrix = np.array(shader.matrix, dtype=np.float64).reshape(9)
    offset = np.array(shader.offset, dtype=np.float64)
    _x, _y, w, h = shader.src_rect
    out_w, out_h = shader.output_size
    sx, sy = shader.chroma_subsampling
    values = [*matrix, *offset, w / out_w, h / out_h, 1.0 / sx, 1.0 / sy, *shader.chroma_offset]
    params = np.array(values, dtype=np.float32)
    assert params.shape == (18,)
    return params


def float16_table() -> np.ndarray:
    """alpha2's float16 look-up table of the SMALL row, as uint16 bits (3, 256)."""
    from alpha2.native_gpu.render.tensor import TensorDType, TensorLayout, TensorSpec, element_table

    spec = TensorSpec(OUT_W, OUT_H, TensorLayout.CHW, TensorDType.FLOAT16, mean=(MEAN,) * 3, std=(STD,) * 3)
    words = element_table(spec)
    table = np.asarray(words, dtype=np.uint16).reshape(3, 256)  # float16 in the low half of each word
    expected = ((np.arange(256) / 255.0 - MEAN) / STD).astype(np.float16)
    for c in range(3):
        if not np.array_equal(table[c].view(np.float16), expected):
            raise StepFailed(f"element_table's channel {c} is not (code / 255 - {MEAN}) / {STD} in float16")
    return table


def frame_facts(path: str) -> FrameFacts:
    from profile_tensor_threads import SMALL

    import alpha2
    from alpha2.gpu.geometry import Rotation
    from alpha2.native_gpu._cuda.interop import primary_context
    from alpha2.native_gpu.render.params import LayoutKind, shader_params
    from alpha2.native_gpu.render.renderer import antialias_taps

    wanted = {"size": (OUT_W, OUT_H), "dtype": "float16", "layout": "CHW", "mean": MEAN, "std": STD}
    if wanted != SMALL:
        raise StepFailed(f"profile_tensor_threads.SMALL is {SMALL}, this probe's row {wanted}")
    with alpha2.open(path, hwaccel="cuda") as source:
        frame = source.next_frame()
        if frame is None:
            raise StepFailed(f"{path} gave no frame")
        try:
            decoded = frame.decoded
            print(f"  decoder: {source.hwaccel}")
            print(
                f"  frame {frame.width}x{frame.height} {decoded.pixel_format.name} on_gpu={frame.on_gpu} "
                f"rotation={frame.rotation.name} mirrored={frame.mirrored} cuda_stream={decoded.cuda_stream}"
            )
            print(f"  colour: {decoded.colour}")
            if not frame.on_gpu or decoded.pixel_format.name != "NV12":
                raise StepFailed("the probe takes NVDEC NV12 frames (8-bit 4:2:0 in CUDA memory)")
            if frame.rotation is not Rotation.NONE or frame.mirrored:
                raise StepFailed("the probe's kernel renders unrotated, unmirrored pictures only")
            if decoded.cuda_stream is None:
                raise StepFailed("the NVDEC frame names no CUDA stream to order the kernel on")
            y, uv = frame.plane(0), frame.plane(1)
            for name, plane in (("Y", y), ("CbCr", uv)):
                print(
                    f"  plane {name}: shape {plane.shape} {plane.dtype} pitch {plane.row_stride_bytes} B "
                    f"device {plane.device} ordered={plane.stream_order is not None}"
                )
            width, height = decoded.width, decoded.height
            shader = shader_params(
                decoded.pixel_format, decoded.colour, width, height, output_size=(OUT_W, OUT_H)
            )
            taps = antialias_taps(shader)
            chroma_w, chroma_h = shader.chroma_clamp[2] + 1, shader.chroma_clamp[3] + 1
            print(
                f"  renderer: layout {shader.layout.value}, matrix {shader.matrix}, offset {shader.offset}, "
                f"value_scale {shader.value_scale}, subsampling {shader.chroma_subsampling}, siting "
                f"{shader.chroma_offset}, src {shader.src_rect}, chroma clamp {shader.chroma_clamp}, "
                f"antialias taps {taps}"
            )
            if shader.layout is not LayoutKind.BIPLANAR or shader.chroma_subsampling != (2, 2):
                raise StepFailed("the kernel samples 4:2:0 bi-planar frames only")
            if shader.value_scale[:3] != (255.0, 255.0, 255.0):
                raise StepFailed(f"8-bit planes have value_scale 255, these {shader.value_scale}")
            if shader.src_rect != (0, 0, width, height) or shader.mirrored:
                raise StepFailed(
                    f"the kernel takes the whole picture, the render's source is {shader.src_rect}"
                )
            if y.shape[0] < height or y.shape[1] < width or uv.shape[0] < chroma_h or uv.shape[1] < chroma_w:
                raise StepFailed(f"planes {y.shape} / {uv.shape} smaller than the picture {width}x{height}")
            if uv.channels != 2 or y.dtype != np.uint8 or uv.dtype != np.uint8:
                raise StepFailed("NV12's planes are uint8 Y and uint8 (Cb, Cr) pairs")
            params = kernel_params(shader)
            table = float16_table()
            white = params[0:3] @ np.array([235.0, 128.0, 128.0]) + params[9]
            black = params[0:3] @ np.array([16.0, 128.0, 128.0]) + params[9]
            print(
                f"  R of (235, 128, 128): {white:.6f}, of (16, 128, 128): {black:.6f} (limited range: 1, 0)"
            )
            ordinal = int(y.device[1])
            # Retained for the process's life with FFmpeg's flags before cupy touches the device (as
            # alpha2's GPU copy does): FFmpeg refuses a primary context another library made first.
            primary_context(ordinal)
            return FrameFacts(
                width, height, chroma_w, chroma_h, ordinal, int(decoded.cuda_stream), params, taps, table
            )
        finally:
            frame.release()


# ---------------------------------------------------------------------------------------------------
# step 3: the kernel


class Converter:
    """The compiled kernel, its parameters on the device, and the frames' stream."""

    def __init__(self, facts: FrameFacts, planes: str) -> None:
        import cupy

        self.cupy = cupy
        self.facts = facts
        self.planes = planes
        """'dlpack' (cupy.from_dlpack on each plane) or 'pointer' (PlaneArray's address and order)."""
        self.device = cupy.cuda.Device(facts.ordinal)
        with self.device:
            self.kernel = cupy.RawKernel(KERNEL_SOURCE, "nv12_to_tensor")
            self.kernel.compile()
            self.params = cupy.asarray(facts.params)
            self.table = cupy.asarray(facts.table)
        # The frames' own stream: NVDEC's work on a surface and its reuse are ordered on it.
        if facts.stream == 0:
            self.stream = cupy.cuda.Stream.null
        else:
            self.stream = cupy.cuda.ExternalStream(facts.stream, facts.ordinal)
        # The DLPack stream value of that stream (1: the legacy default stream).
        self.dlpack_stream = 1 if facts.stream == 0 else facts.stream

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """The device and the frames' stream current (cupy's allocations and launches go there)."""
        with self.device, self.stream:
            yield

    def planes_of(self, frame: Any) -> tuple[int, int, int, int, tuple[Any, ...]]:
        """(Y address, Y pitch, CbCr address, CbCr pitch, what keeps them readable) of a frame, ordered
        after its decode on the frames' stream. Call under :meth:`current`."""
        decoded = frame.decoded
        if decoded.cuda_stream != self.facts.stream:
            raise StepFailed(
                f"a frame on CUDA stream {decoded.cuda_stream}, the first on {self.facts.stream}"
            )
        y, uv = frame.plane(0), frame.plane(1)
        if self.planes == "dlpack":
            cy = self.cupy.from_dlpack(y)
            cuv = self.cupy.from_dlpack(uv)
            if cy.strides[0] != y.row_stride_bytes or cuv.strides[0] != uv.row_stride_bytes:
                raise StepFailed(
                    f"cupy's row strides {cy.strides[0]} / {cuv.strides[0]} B, the planes' "
                    f"{y.row_stride_bytes} / {uv.row_stride_bytes} B"
                )
            return cy.data.ptr, cy.strides[0], cuv.data.ptr, cuv.strides[0], (cy, cuv)
        for plane in (y, uv):
            if plane.stream_order is not None:
                plane.stream_order(self.dlpack_stream)
        return y.data_ptr, y.row_stride_bytes, uv.data_ptr, uv.row_stride_bytes, (y, uv)

    def launch(
        self,
        frame: Any,
        *,
        antialias: bool,
        out_u8: Any = None,
        out_f16: Any = None,
        quantise: bool = False,
    ) -> None:
        """Enqueue the conversion of ``frame`` into ``out_u8`` / ``out_f16`` (cupy (3, 224, 224) uint8 /
        float16, or None) on the frames' stream. Call under :meth:`current`; release the frame after."""
        facts = self.facts
        luma, luma_pitch, chroma, chroma_pitch, keep = self.planes_of(frame)
        taps_x, taps_y = facts.taps if antialias else (1, 1)
        for out, dtype in ((out_u8, np.uint8), (out_f16, np.float16)):
            if out is not None and (
                out.shape != (3, OUT_H, OUT_W) or out.dtype != dtype or not out.flags.c_contiguous
            ):
                raise StepFailed(
                    f"an output is {out.shape} {out.dtype}, the kernel writes (3, {OUT_H}, {OUT_W}) {dtype}"
                )
        grid = (-(-OUT_W // BLOCK[0]), -(-OUT_H // BLOCK[1]), 1)
        args = (
            np.uint64(luma),
            np.int64(luma_pitch),
            np.uint64(chroma),
            np.int64(chroma_pitch),
            np.int32(facts.width),
            np.int32(facts.height),
            np.int32(facts.chroma_w),
            np.int32(facts.chroma_h),
            np.int32(OUT_W),
            np.int32(OUT_H),
            np.int32(taps_x),
            np.int32(taps_y),
            np.int32(1 if quantise else 0),
            np.uint64(self.params.data.ptr),
            np.uint64(self.table.data.ptr),
            np.uint64(0 if out_u8 is None else out_u8.data.ptr),
            np.uint64(0 if out_f16 is None else out_f16.data.ptr),
        )
        self.kernel(grid, BLOCK, args)
        del keep  # the planes' arrays may go: the frame (the caller's) keeps the surface until released

    def empty(self, dtype: Any) -> Any:
        return self.cupy.empty((3, OUT_H, OUT_W), dtype=dtype)


def make_converter(path: str, facts: FrameFacts, planes: str) -> Converter:
    """The kernel compiled and run on the first frame (its GPU time printed); falls back from DLPack to
    the planes' addresses, saying so, where cupy cannot take alpha2's capsules."""
    import alpha2

    converter = Converter(facts, planes)
    cupy = converter.cupy
    print(f"  cupy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}, kernel compiled")
    with alpha2.open(path, hwaccel="cuda") as source:
        frame = source.next_frame()
        assert frame is not None
        try:
            with converter.current():
                out = converter.empty(np.uint8)
                try:
                    converter.launch(frame, antialias=True, out_u8=out)
                except StepFailed:
                    raise
                except Exception as exc:
                    if converter.planes != "dlpack":
                        raise
                    print(f"  cupy.from_dlpack failed ({type(exc).__name__}: {exc}); the planes by address")
                    converter.planes = "pointer"
                    converter.launch(frame, antialias=True, out_u8=out)
                converter.stream.synchronize()
                codes = cupy.asnumpy(out)
                print(
                    f"  first frame: codes {codes.min()}..{codes.max()}, mean per channel "
                    f"{[round(float(codes[c].mean()), 2) for c in range(3)]}"
                )
                for antialias in (True, False):
                    f16 = converter.empty(np.float16)
                    start, end = cupy.cuda.Event(), cupy.cuda.Event()
                    runs = 50
                    start.record(converter.stream)
                    for _ in range(runs):
                        converter.launch(frame, antialias=antialias, out_f16=f16)
                    end.record(converter.stream)
                    end.synchronize()
                    us = cupy.cuda.get_elapsed_time(start, end) * 1000.0 / runs
                    taps = facts.taps if antialias else (1, 1)
                    kind = "antialiased" if antialias else "bilinear"
                    print(f"  GPU time a frame, {kind} {taps}: {us:.1f} us")
        finally:
            frame.release()
    print(f"  planes taken by {converter.planes}")
    return converter


# ---------------------------------------------------------------------------------------------------
# step 4: exactness


VARIANTS = (
    ("antialiased", True, False),
    ("antialiased, 8-bit filter fractions", True, True),
    ("bilinear", False, False),
    ("bilinear, 8-bit filter fractions", False, True),
)
"""(name, antialias, quantise) of the kernel's rows against alpha2's."""


def _host(tensor: Any) -> np.ndarray:
    """An alpha2 RgbTensor as a numpy array (through cupy's DLPack, else torch's)."""
    if not tensor.on_cuda:
        return np.asarray(tensor.numpy())
    import cupy

    try:
        return np.asarray(cupy.asnumpy(cupy.from_dlpack(tensor)))
    except Exception as exc:
        print(f"  cupy.from_dlpack of an RgbTensor failed ({type(exc).__name__}: {exc}); through torch")
        from torch.utils.dlpack import from_dlpack

        return np.asarray(from_dlpack(tensor).cpu().numpy())


def _difference(mine: np.ndarray, theirs: np.ndarray) -> tuple[float, int, float]:
    """Mean and max absolute difference, and the share of values that differ at all."""
    diff = np.abs(mine.astype(np.int32) - theirs.astype(np.int32))
    return float(diff.mean()), int(diff.max()), float((diff > 0).mean())


def exactness(path: str, converter: Converter, count: int) -> None:
    import alpha2

    cupy = converter.cupy
    mine: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {name: [] for name, _, _ in VARIANTS}
    pts_mine: list[float | None] = []
    # Pass 1: the kernel. Its own source: to_tensor on a source makes its decoder hand NVDEC surfaces
    # to the textures (copy_ahead), after which a frame's planes cannot be read.
    with alpha2.open(path, hwaccel="cuda") as source:
        for frame in source:
            try:
                pts_mine.append(frame.pts_seconds)
                with converter.current():
                    outs = []
                    for _name, antialias, quantise in VARIANTS:
                        u8, f16 = converter.empty(np.uint8), converter.empty(np.float16)
                        converter.launch(
                            frame, antialias=antialias, quantise=quantise, out_u8=u8, out_f16=f16
                        )
                        outs.append((u8, f16))
                    converter.stream.synchronize()
                for (name, _, _), (u8, f16) in zip(VARIANTS, outs):
                    mine[name].append((cupy.asnumpy(u8), cupy.asnumpy(f16)))
            finally:
                frame.release()
            if len(pts_mine) >= count:
                break
    # Pass 2: alpha2's to_tensor of the same frames, decoded again.
    theirs: dict[bool, list[tuple[np.ndarray, np.ndarray]]] = {True: [], False: []}
    pts_theirs: list[float | None] = []
    managed: set[str] = set()
    paths: set[str] = set()
    with alpha2.open(path, hwaccel="cuda") as source:
        for frame in source:
            try:
                pts_theirs.append(frame.pts_seconds)
                for antialias in (True, False):
                    # route='dawn': the renderer's conversion (NVDEC frames take alpha2's own CUDA kernel,
                    # render/cuda_tensor.py, by default since it was built from this probe).
                    common = {
                        "size": (OUT_W, OUT_H),
                        "layout": "CHW",
                        "antialias": antialias,
                        "route": "dawn",
                    }
                    u8 = frame.to_tensor(dtype="uint8", **common)
                    f16 = frame.to_tensor(dtype="float16", mean=MEAN, std=STD, **common)
                    paths.update((u8.path.name, f16.path.name))
                    theirs[antialias].append((_host(u8), _host(f16)))
                plan = source.renderer.last_colour
                managed.add("plain pass" if plan is None or plan.identity else "colour-managed pass")
            finally:
                frame.release()
            if len(pts_theirs) >= count:
                break
    print(f"  {len(pts_mine)} frames; alpha2's tensors: {sorted(paths)}, the renderer's {sorted(managed)}")
    if pts_mine != pts_theirs:
        raise StepFailed(
            f"the two decodes gave different frames: {pts_mine[:5]} ... against {pts_theirs[:5]} ..."
        )
    table = converter.facts.table.view(np.float16)
    failures = []
    for name, antialias, _quantise in VARIANTS:
        pairs = list(zip(mine[name], theirs[antialias]))
        u8_mine = np.stack([m[0] for m, _ in pairs])
        u8_theirs = np.stack([t[0] for _, t in pairs])
        f16_mine = np.stack([m[1] for m, _ in pairs])
        f16_theirs = np.stack([t[1] for _, t in pairs])
        mean, largest, share = _difference(u8_mine, u8_theirs)
        # float16: alpha2's own is its table at its codes; the kernel's likewise, so the float rows
        # differ exactly where the codes do.
        own = all(np.array_equal(table[np.arange(3)[:, None, None], t[0]], t[1]) for _, t in pairs)
        kernel_own = all(np.array_equal(table[np.arange(3)[:, None, None], m[0]], m[1]) for m, _ in pairs)
        f16_diff = np.abs(f16_mine.astype(np.float32) - f16_theirs.astype(np.float32))
        met = mean <= MEAN_LIMIT and largest <= MAX_LIMIT
        print(
            f"  {name:38} uint8: mean {mean:.4f}, max {largest} codes, {share * 100:.2f}% differ -> "
            f"{'within' if met else 'OUTSIDE'} the targets (mean <= {MEAN_LIMIT}, max <= {MAX_LIMIT}); "
            f"float16: mean {float(f16_diff.mean()):.5f}, max {float(f16_diff.max()):.5f} "
            f"(= {float(f16_diff.max()) * STD * 255:.2f} codes); alpha2's float16 = table[its uint8]: {own}, "
            f"the kernel's: {kernel_own}"
        )
        if not (own and kernel_own):
            failures.append(f"{name}: float16 is not the table at the codes")
    # The step's verdict is the antialiased row's (to_tensor's default, issue 27's row). A single
    # bilinear sample of this clip's grain moves by codes for a hundredth of a texel, so the bilinear
    # rows measure the samplers' precision as much as the kernel: said, not failed (on lavapipe the
    # kernel was 0.07 / 1 code from the renderer antialiased, 0.49 / 3 bilinear, 0.56 / 11 with its
    # positions moved by 0.03 texel).
    within = []
    for name, antialias, _quantise in VARIANTS:
        if antialias:
            pairs = list(zip(mine[name], theirs[antialias]))
            mean, largest, _ = _difference(
                np.stack([m[0] for m, _ in pairs]), np.stack([t[0] for _, t in pairs])
            )
            within.append(mean <= MEAN_LIMIT and largest <= MAX_LIMIT)
    if not any(within):
        failures.append("antialiased: no variant within the targets")
    if failures:
        raise StepFailed("; ".join(failures))


# ---------------------------------------------------------------------------------------------------
# step 5: timing


@dataclass(frozen=True)
class Timed:
    frames: int
    seconds: float
    cpu_seconds: float
    """The caller thread's CPU time (time.thread_time) over the timed frames."""

    @property
    def fps(self) -> float:
        return self.frames / self.seconds

    @property
    def cpu_us(self) -> float:
        return self.cpu_seconds / self.frames * 1e6


MODES = ("decode", "kernel", "kernel-bilinear", "tensor", "tensor-dawn")
"""decode: each frame's CUDA planes taken and released (profile_tensor_threads.py's decode row takes
plane 0); kernel: + the CUDA kernel to a new float16 tensor, antialiased; kernel-bilinear: one bilinear
sample a pixel; tensor: alpha2's to_tensor(**SMALL), a frame a call (profile_tensor_threads.py's row: the
library's CUDA kernel route by default); tensor-dawn: the same with route='dawn' (the Dawn renderer)."""


def run_mode(path: str, mode: str, frames: int, converter: Converter) -> Timed:
    from profile_tensor_threads import SMALL

    import alpha2

    cupy = converter.cupy

    def work(frame: Any) -> Any:
        if mode == "decode":
            frame.plane(0)
            frame.plane(1)
            return None
        if mode == "tensor":
            return frame.to_tensor(**SMALL)
        if mode == "tensor-dawn":
            return frame.to_tensor(route="dawn", **SMALL)
        out = cupy.empty((3, OUT_H, OUT_W), dtype=cupy.float16)
        converter.launch(frame, antialias=mode == "kernel", out_f16=out)
        return out

    def finish(last: Any) -> None:
        if mode.startswith("tensor") and last is not None:
            last.wait()
        elif mode.startswith("kernel"):
            converter.stream.synchronize()

    with alpha2.open(path, hwaccel="cuda") as source, converter.current():
        first = source.next_frame()
        assert first is not None
        finish(work(first))
        first.release()
        n = 0
        last: Any = None
        c0 = time.thread_time()
        t0 = time.perf_counter()
        for frame in source:
            last = work(frame)
            frame.release()
            n += 1
            if n >= frames:
                break
        finish(last)
        seconds = time.perf_counter() - t0
        cpu = time.thread_time() - c0
    if n < frames:
        print(f"  note: the clip gave {n} frames after the first, fewer than --frames {frames}")
    return Timed(n, seconds, cpu)


def timing(path: str, converter: Converter, modes: list[str], frames: int, rounds: int) -> None:
    results: dict[str, list[Timed]] = {mode: [] for mode in modes}
    for r in range(rounds):
        order = modes[r % len(modes) :] + modes[: r % len(modes)]  # each mode first in some round
        for mode in order:
            timed = run_mode(path, mode, frames, converter)
            results[mode].append(timed)
            print(
                f"  round {r + 1} {mode:16} {timed.fps:8.1f} fps, caller CPU {timed.cpu_us:7.1f} us a frame"
            )
    base = results.get("decode")
    header = f"{'fps by round':>30} {'median':>9} {'ratio':>6} {'ratios by round':>24} {'CPU us/frame':>13}"
    print(f"  {'mode':16} {header}")
    for mode in modes:
        rows = results[mode]
        fps = [t.fps for t in rows]
        ratios = [t.fps / b.fps for t, b in zip(rows, base)] if base else []
        ratio = f"{statistics.median(ratios):6.3f}" if ratios else "     -"
        print(
            f"  {mode:16} {' '.join(f'{f:7.1f}' for f in fps):>30} {statistics.median(fps):9.1f} {ratio} "
            f"{' '.join(f'{x:.3f}' for x in ratios):>24} {statistics.median([t.cpu_us for t in rows]):13.1f}"
        )
    if base and "kernel" in results:
        kernel_ratio = statistics.median([t.fps / b.fps for t, b in zip(results["kernel"], base)])
        verdict = "met" if kernel_ratio >= 0.9 else "NOT met"
        print(f"  the CUDA kernel (antialiased): {kernel_ratio:.3f} of decoding alone, target 0.9 {verdict}")


# ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clip-dir", default="/tmp/clips")
    parser.add_argument("--clip-frames", type=int, default=600, help="the clip's length (GOP 250)")
    parser.add_argument("--frames", type=int, default=600, help="timed frames a mode a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check-frames", type=int, default=30, help="frames compared with to_tensor's")
    parser.add_argument("--modes", default=",".join(MODES), help=f"timed modes, of {', '.join(MODES)}")
    parser.add_argument(
        "--planes",
        choices=("dlpack", "pointer"),
        default="dlpack",
        help="how the kernel gets a frame's planes: cupy.from_dlpack, or the PlaneArray's address (ordered "
        "by its stream_order); dlpack falls back to pointer, saying so, where cupy refuses the capsule",
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        parser.error(f"--modes takes {', '.join(MODES)}; got {args.modes!r}")
    if min(args.frames, args.rounds, args.check_frames, args.clip_frames) < 1:
        parser.error("--frames, --rounds, --check-frames and --clip-frames must be positive")
    steps = Steps()
    try:
        with steps.step("the 1080p H.264 clip"):
            path = find_clip(args.clip_dir, args.clip_frames)
        with steps.step("an NVDEC frame's NV12 planes and the renderer's numbers for 224x224"):
            facts = frame_facts(path)
        with steps.step("cupy: the kernel compiled (NVRTC), run on a frame, its GPU time"):
            converter = make_converter(path, facts, args.planes)
    except Exception:
        converter = None  # said by its step; nothing after it can run
    if converter is not None:
        # The two questions apart: a row outside the exactness targets still gets its timing.
        with contextlib.suppress(Exception):  # said by its step
            with steps.step(f"exactness: {args.check_frames} frames against to_tensor's uint8 and float16"):
                exactness(path, converter, args.check_frames)
        with contextlib.suppress(Exception):
            with steps.step(
                f"timing: {args.rounds} rounds of {args.frames} frames, modes {', '.join(modes)}"
            ):
                timing(path, converter, modes, args.frames, args.rounds)
    if steps.failed is not None:
        print(f"FAILED at {steps.failed}")
        return 1
    print("all steps OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
