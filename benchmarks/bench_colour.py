"""The colour-managed sampling pass against the plain pass, side by side in one run.

The same 10-bit 4:2:0 planes (P010 when 16-bit textures exist, else yuv420p at 8 bits) rendered N times
into an RGBA texture by one FrameRenderer, tagged three ways: SDR BT.709 (the plain pass, an identity
plan), PQ BT.2020 (decode PQ, BT.2020 -> BT.709, BT.2390 tone map 1000 -> 203 cd/m², gamut, BT.1886) and
HLG BT.2020 (the same with the BT.2100 OOTF). Rounds are interleaved so load changes hit all three; each
round ends in a read-back wait. Prints frames/s and the cost of each managed pass against the plain one.

    XDG_RUNTIME_DIR=/tmp python benchmarks/bench_colour.py [--width 1280 --height 720 --frames 150]
    python benchmarks/bench_colour.py --width 3840 --height 2160 --frames 600        # the H200 at 4K
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

import wgpu

from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, ColourPrimaries, ColourRange
from alpha2.gpu.colour import TransferCharacteristic as Trc
from alpha2.gpu.formats import PixelFormat
from alpha2.native_gpu.render.renderer import FrameRenderer

TAGS = {
    "plain (SDR BT.709)": (ColourMatrix.BT709, ColourPrimaries.BT709, Trc.BT709),
    "PQ -> SDR": (ColourMatrix.BT2020_NCL, ColourPrimaries.BT2020, Trc.SMPTE2084),
    "HLG -> SDR": (ColourMatrix.BT2020_NCL, ColourPrimaries.BT2020, Trc.ARIB_STD_B67),
}


def make_planes(device: Any, width: int, height: int, ten_bit: bool) -> tuple[list[Any], PixelFormat]:
    fmt = PixelFormat.P010 if ten_bit else PixelFormat.NV12
    y, x = np.mgrid[0:height, 0:width]
    luma = (64 + (x * 876) // max(width - 1, 1)).astype(np.uint16)
    cb = (512 + 300 * np.sin(x[::2, ::2] / 40.0)).astype(np.uint16)
    cr = (512 + 300 * np.cos(y[::2, ::2] / 30.0)).astype(np.uint16)
    usage = wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST
    if ten_bit:
        planes_data = [(luma << 6).astype("<u2"), (np.stack([cb, cr], -1) << 6).astype("<u2")]
        formats, texel = ["r16unorm", "rg16unorm"], [2, 4]
    else:
        planes_data = [(luma >> 2).astype(np.uint8), (np.stack([cb, cr], -1) >> 2).astype(np.uint8)]
        formats, texel = ["r8unorm", "rg8unorm"], [1, 2]
    textures = []
    for data, name, size in zip(planes_data, formats, texel, strict=True):
        h, w = data.shape[:2]
        texture = device.create_texture(size=(w, h, 1), format=name, usage=usage)
        device.queue.write_texture(
            {"texture": texture}, np.ascontiguousarray(data).tobytes(), {"bytes_per_row": w * size}, (w, h, 1)
        )
        textures.append(texture)
    return textures, fmt


def wait(device: Any, texture: Any, buffer: Any) -> None:
    encoder = device.create_command_encoder()
    encoder.copy_texture_to_buffer(
        {"texture": texture, "mip_level": 0, "origin": (0, 0, 0)},
        {"buffer": buffer, "offset": 0, "bytes_per_row": 256, "rows_per_image": 1},
        (1, 1, 1),
    )
    device.queue.submit([encoder.finish()])
    buffer.map_sync(wgpu.MapMode.READ)
    buffer.unmap()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        sys.exit("no WebGPU adapter")
    ten_bit = "texture-format16bit-norm" in adapter.features
    device = adapter.request_device_sync(required_features=["texture-format16bit-norm"] if ten_bit else [])
    planes, fmt = make_planes(device, args.width, args.height, ten_bit)
    renderer = FrameRenderer(device)
    target = renderer.target_texture(args.width, args.height)
    buffer = device.create_buffer(size=256, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)
    colours = {
        name: ColourInfo(m, p, t, ColourRange.LIMITED, ChromaLocation.LEFT)
        for name, (m, p, t) in TAGS.items()
    }
    managed = {}
    for name, colour in colours.items():  # warm-up: pipelines compiled
        renderer.render(planes, fmt, colour, args.width, args.height, target)
        assert renderer.last_colour is not None
        managed[name] = not renderer.last_colour.identity
        wait(device, target, buffer)
    seconds = dict.fromkeys(colours, 0.0)
    per_round = max(args.frames // args.rounds, 1)
    for _ in range(args.rounds):
        for name, colour in colours.items():
            start = time.perf_counter()
            for _ in range(per_round):
                renderer.render(planes, fmt, colour, args.width, args.height, target)
            wait(device, target, buffer)
            seconds[name] += time.perf_counter() - start
    n = per_round * args.rounds
    info = adapter.info
    print(f"{info.get('device', '?')} ({info.get('backend_type', '?')}), {args.width}x{args.height} "
          f"{fmt.ffmpeg_name}, {n} frames each")  # fmt: skip
    plain = seconds["plain (SDR BT.709)"] / n
    for name in colours:
        per = seconds[name] / n
        print(
            f"  {name:20s} managed={managed[name]!s:5s} {1 / per:8.1f} fps  {per * 1e3:7.2f} ms/frame  "
            f"x{per / plain:.2f} of plain (+{(per - plain) * 1e3:.2f} ms)"
        )


if __name__ == "__main__":
    main()
