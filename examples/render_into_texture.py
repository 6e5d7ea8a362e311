"""Render decoded video into a texture of your own wgpu device.

alpha2 decodes (NVDEC where it can), imports the planes into your device and converts them to RGB
with the clip's own colour description, scaled to your texture. Each frame says which path its pixels
took (``gpu_copy`` on an NVIDIA GPU with Dawn, else ``cpu_upload``).

Usage: python render_into_texture.py [VIDEO]   (default: the clip ``alpha2 sample`` writes)
"""

import sys

import numpy as np
import wgpu

import alpha2

path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/alpha2-sample.mp4"

device = wgpu.gpu.request_adapter_sync().request_device_sync()
target = device.create_texture(
    size=(640, 360, 1),
    format="rgba8unorm",
    usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
)

with alpha2.open(path, device=device) as source:
    print(f"{path}: {source.width}x{source.height}, {source.colour.matrix.name}, decoder: {source.hwaccel}")
    for frame in source:  # each frame is released when the next one comes
        frame.render(target)  # scaled into your texture and submitted on your device
        print(f"  {frame.pts_seconds:.3f} s: {frame.path.value}")
        if frame.pts_seconds >= 0.2:
            break

# The texture is yours: sample it in your own passes, or read it back as here.
data = device.queue.read_texture(
    {"texture": target, "origin": (0, 0, 0), "mip_level": 0},
    {"offset": 0, "bytes_per_row": 640 * 4, "rows_per_image": 360},
    (640, 360, 1),
)
pixels = np.frombuffer(data, np.uint8).reshape(360, 640, 4)
print("mean RGB of the last frame:", pixels[..., :3].mean(axis=(0, 1)).round(1))
