"""Reading a rendered RGBA texture back to host memory (snapshots, tests): :func:`read_texture_rgba`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from alpha2.gpu.errors import UnsupportedError
from alpha2.gpu.webgpu import HasWebGpuDevice, WebGpuDevice, gpu_module_of, webgpu_device_of

__all__ = ["read_texture_rgba"]


def read_texture_rgba(
    device: HasWebGpuDevice | WebGpuDevice, texture: Any, *, gpu_module: Any = None
) -> np.ndarray:
    """Read a 2D rgba8unorm / bgra8unorm / rgba16float texture back as an (H, W, 4) uint8 RGBA array.

    Blocks until the GPU work before it is done (the mapped read-back is the wait: wgpu-py 0.32's
    ``on_submitted_work_done_sync`` is broken). bgra8unorm comes back in RGBA order; rgba16float is
    clamped to 0..1 and rounded to 8 bits. The texture needs COPY_SRC usage.
    """
    device = webgpu_device_of(device)
    gpu = gpu_module if gpu_module is not None else gpu_module_of(device)
    fmt = str(texture.format)
    texel_bytes = {"rgba8unorm": 4, "bgra8unorm": 4, "rgba16float": 8}.get(fmt)
    if texel_bytes is None:
        raise UnsupportedError(f"read_texture_rgba reads rgba8unorm, bgra8unorm and rgba16float, not {fmt}")
    width, height = int(texture.size[0]), int(texture.size[1])
    bytes_per_row = math.ceil(width * texel_bytes / 256) * 256
    buffer = device.create_buffer(
        label="alpha2 read-back",
        size=bytes_per_row * height,
        usage=gpu.BufferUsage.COPY_DST | gpu.BufferUsage.MAP_READ,
    )
    try:
        encoder = device.create_command_encoder(label="alpha2 read-back")
        encoder.copy_texture_to_buffer(
            {"texture": texture, "mip_level": 0, "origin": (0, 0, 0)},
            {"buffer": buffer, "offset": 0, "bytes_per_row": bytes_per_row, "rows_per_image": height},
            (width, height, 1),
        )
        device.queue.submit([encoder.finish()])
        buffer.map_sync(gpu.MapMode.READ)
        try:
            raw = bytes(buffer.read_mapped())
        finally:
            buffer.unmap()
    finally:
        buffer.destroy()
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, bytes_per_row)[:, : width * texel_bytes]
    if fmt == "rgba16float":
        values = rows.copy().view(np.float16).reshape(height, width, 4).astype(np.float32)
        return np.round(np.clip(values, 0.0, 1.0) * 255.0).astype(np.uint8)
    pixels = rows.reshape(height, width, 4)
    if fmt == "bgra8unorm":
        pixels = pixels[:, :, [2, 1, 0, 3]]
    return np.ascontiguousarray(pixels)
