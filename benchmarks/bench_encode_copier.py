"""Frames/s of the encode hand-off: rendered RGBA texture -> NV12 encoder frame (PyAV), two ways.

- copier: EncodeCopier (compute pass to NV12 on the GPU, asynchronous read-back ring), then the
  planes are copied into an ``av.VideoFrame('nv12')`` (the one copy an encoder frame needs).
- naive: copy the RGBA texture to a buffer, block on its map every frame, ``from_ndarray('rgba')`` and
  ``reformat('nv12')`` on the CPU (swscale).

Both end with an NV12 PyAV frame of the same content; rendering and encoding are not measured. Prints
frames/s, the execution path, bytes read back per frame and the ratio copier / naive.

    python benchmarks/bench_encode_copier.py [--width 1920 --height 1080 --frames 60 --ring 3 --p010]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import av
import wgpu

from alpha2.gpu.colour import ColourMatrix, ColourRange
from alpha2.gpu.formats import PixelFormat
from alpha2.native_gpu.encode.copier import EncodeCopier, EncodedPlanes


def make_texture(device: Any, width: int, height: int) -> Any:
    y, x = np.mgrid[0:height, 0:width]
    img = np.empty((height, width, 4), dtype=np.uint8)
    img[..., 0] = (x * 255 // max(1, width - 1)).astype(np.uint8)
    img[..., 1] = (y * 255 // max(1, height - 1)).astype(np.uint8)
    img[..., 2] = ((x ^ y) & 0xFF).astype(np.uint8)
    img[..., 3] = 255
    texture = device.create_texture(
        size=(width, height, 1),
        format="rgba8unorm",
        usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST | wgpu.TextureUsage.COPY_SRC,
    )
    device.queue.write_texture(
        {"texture": texture}, img, {"offset": 0, "bytes_per_row": width * 4}, (width, height, 1)
    )
    return texture


def to_av_frame(planes: EncodedPlanes) -> av.VideoFrame:
    """The consumer's one copy: mapped planes -> a PyAV frame (what the bridge's EncodeSession does)."""
    fmt = "nv12" if planes.pixel_format is PixelFormat.NV12 else "p010le"
    frame = av.VideoFrame(planes.width, planes.height, fmt)
    for src, dst in zip(planes.planes.planes, frame.planes):
        rows = np.frombuffer(src.data, dtype=np.uint8, count=src.bytes_per_row * src.height)
        rows = rows.reshape(src.height, src.bytes_per_row)[:, : src.width_bytes]
        out = np.frombuffer(memoryview(dst), dtype=np.uint8).reshape(dst.height, dst.line_size)
        out[:, : src.width_bytes] = rows
        del rows, out
    frame.pts = planes.pts
    return frame


def bench_copier(device: Any, texture: Any, args: argparse.Namespace) -> tuple[float, int, str]:
    pixel_format = PixelFormat.P010 if args.p010 else PixelFormat.NV12
    frames_out = 0
    with EncodeCopier(
        device,
        args.width,
        args.height,
        pixel_format=pixel_format,
        matrix=ColourMatrix.BT709,
        colour_range=ColourRange.LIMITED,
        ring_size=args.ring,
    ) as copier:

        def consume(done: list[EncodedPlanes]) -> None:
            nonlocal frames_out
            for planes in done:
                with planes:
                    to_av_frame(planes)
                frames_out += 1

        for i in range(args.warmup):
            consume(copier.submit(texture, pts=i))
        consume(copier.flush())
        frames_out = 0
        start = time.perf_counter()
        for i in range(args.frames):
            consume(copier.submit(texture, pts=i))
        consume(copier.flush())
        elapsed = time.perf_counter() - start
        assert frames_out == args.frames
        return args.frames / elapsed, copier.frame_size_bytes, "gpu compute + " + "cpu_download"


def bench_naive(device: Any, texture: Any, args: argparse.Namespace) -> tuple[float, int]:
    bytes_per_row = args.width * 4
    assert bytes_per_row % 256 == 0, "naive path needs 256-byte aligned RGBA rows (width % 64 == 0)"
    size = bytes_per_row * args.height
    buffer = device.create_buffer(size=size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    fmt = "p010le" if args.p010 else "nv12"

    def one() -> av.VideoFrame:
        encoder = device.create_command_encoder()
        encoder.copy_texture_to_buffer(
            {"texture": texture},
            {"buffer": buffer, "offset": 0, "bytes_per_row": bytes_per_row},
            (args.width, args.height, 1),
        )
        device.queue.submit([encoder.finish()])
        buffer.map_sync("READ")
        rgba = np.frombuffer(buffer.read_mapped(copy=True), dtype=np.uint8).reshape(
            args.height, args.width, 4
        )
        buffer.unmap()
        frame = av.VideoFrame.from_ndarray(rgba, format="rgba")
        return frame.reformat(format=fmt, dst_colorspace="ITU709", dst_color_range="MPEG")

    for _ in range(args.warmup):
        one()
    start = time.perf_counter()
    for _ in range(args.frames):
        one()
    elapsed = time.perf_counter() - start
    buffer.destroy()
    return args.frames / elapsed, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--ring", type=int, default=3)
    parser.add_argument("--p010", action="store_true", help="10-bit output (P010) instead of NV12")
    args = parser.parse_args()

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync()
    info = adapter.info
    print(
        f"adapter: {info.get('device', '?')} ({info.get('backend_type', '?')}); "
        f"{args.width}x{args.height} {'P010' if args.p010 else 'NV12'}, "
        f"{args.frames} frames, ring {args.ring}"
    )
    texture = make_texture(device, args.width, args.height)

    copier_fps, copier_bytes, path = bench_copier(device, texture, args)
    naive_fps, naive_bytes = bench_naive(device, texture, args)
    print(f"copier: {copier_fps:8.1f} frames/s  path={path}  read back {copier_bytes / 1e6:.2f} MB/frame")
    print(
        f"naive:  {naive_fps:8.1f} frames/s  path=cpu_download + software  read back "
        f"{naive_bytes / 1e6:.2f} MB/frame"
    )
    print(
        f"ratio copier/naive: {copier_fps / naive_fps:.2f}x  "
        f"(bytes read back: {copier_bytes / naive_bytes:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
