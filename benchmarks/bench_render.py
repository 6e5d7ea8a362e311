"""The sampling shader against a straightforward hand-written plane shader, side by side in one run.

- ``render``: the same yuv420p planes rendered N times into an RGBA texture by alpha2's FrameRenderer
  and by a plain three-sample shader (one ``textureSample`` per plane with a hardware linear sampler,
  BT.709 limited matrix inline, chroma offset for LEFT siting), each run ending in a read-back wait;
- ``play``: ``alpha2 play --offscreen`` (decode + import + render) on a generated clip against the same
  loop written by hand (PyAV decode, three ``write_texture`` uploads, the plain shader).

Prints frames/s of each and the ratio alpha2 / hand-written (issue 14: at least 1 on lavapipe).

    python benchmarks/bench_render.py [--width 1280 --height 720 --frames 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import av
import wgpu

from alpha2.apps.player import PlayOptions, play
from alpha2.apps.sample import write_sample
from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourRange
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Size
from alpha2.native_gpu.render.renderer import FrameRenderer

HAND_WGSL = """
@group(0) @binding(0) var y_tex: texture_2d<f32>;
@group(0) @binding(1) var u_tex: texture_2d<f32>;
@group(0) @binding(2) var v_tex: texture_2d<f32>;
@group(0) @binding(3) var lin: sampler;

struct Out { @builtin(position) pos: vec4<f32>, @location(0) uv: vec2<f32> };

@vertex fn vs(@builtin(vertex_index) i: u32) -> Out {
    let x = f32(i32(i & 1u) * 4 - 1);
    let y = f32(i32(i >> 1u) * 4 - 1);
    var o: Out;
    o.pos = vec4<f32>(x, y, 0.0, 1.0);
    o.uv = vec2<f32>((x + 1.0) * 0.5, (1.0 - y) * 0.5);
    return o;
}

@fragment fn fs(in: Out) -> @location(0) vec4<f32> {
    let dims = vec2<f32>(textureDimensions(y_tex));
    // LEFT siting: chroma sample 0 sits on luma column 0, a quarter chroma texel left of its centre.
    let cuv = in.uv + vec2<f32>(0.5 / dims.x, 0.0);
    let y = (textureSample(y_tex, lin, in.uv).r * 255.0 - 16.0) / 219.0;
    let u = (textureSample(u_tex, lin, cuv).r * 255.0 - 128.0) / 224.0;
    let v = (textureSample(v_tex, lin, cuv).r * 255.0 - 128.0) / 224.0;
    let rgb = vec3<f32>(y + 1.5748 * v, y - 0.1873 * u - 0.4681 * v, y + 1.8556 * u);
    return vec4<f32>(clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)), 1.0);
}
"""


class HandShader:
    """The straightforward plane shader: three samples, one pipeline, one bind group per plane set."""

    def __init__(self, device: Any) -> None:
        self.device = device
        module = device.create_shader_module(code=HAND_WGSL)
        stage = wgpu.ShaderStage.FRAGMENT
        tex = {"sample_type": "float", "view_dimension": "2d"}
        self.layout = device.create_bind_group_layout(
            entries=[
                *({"binding": i, "visibility": stage, "texture": tex} for i in range(3)),
                {"binding": 3, "visibility": stage, "sampler": {"type": "filtering"}},
            ]
        )
        self.pipeline = device.create_render_pipeline(
            layout=device.create_pipeline_layout(bind_group_layouts=[self.layout]),
            vertex={"module": module, "entry_point": "vs", "buffers": []},
            primitive={"topology": "triangle-list"},
            fragment={"module": module, "entry_point": "fs", "targets": [{"format": "rgba8unorm"}]},
        )
        self.sampler = device.create_sampler(mag_filter="linear", min_filter="linear")
        self.groups: dict[tuple[int, ...], Any] = {}

    def render(self, planes: list[Any], target_view: Any) -> None:
        key = tuple(id(p) for p in planes)
        group = self.groups.get(key)
        if group is None:
            entries = [{"binding": i, "resource": p.create_view()} for i, p in enumerate(planes)]
            entries.append({"binding": 3, "resource": self.sampler})
            group = self.groups[key] = self.device.create_bind_group(layout=self.layout, entries=entries)
        encoder = self.device.create_command_encoder()
        rp = encoder.begin_render_pass(
            color_attachments=[
                {"view": target_view, "clear_value": (0, 0, 0, 1), "load_op": "clear", "store_op": "store"}
            ]
        )
        rp.set_pipeline(self.pipeline)
        rp.set_bind_group(0, group)
        rp.draw(3, 1, 0, 0)
        rp.end()
        self.device.queue.submit([encoder.finish()])


class Waiter:
    """Waits for the GPU by mapping a one-texel read-back of the target (as the player's throttle does)."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.buffer = device.create_buffer(
            size=256, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ
        )

    def wait(self, texture: Any) -> None:
        encoder = self.device.create_command_encoder()
        encoder.copy_texture_to_buffer(
            {"texture": texture, "mip_level": 0, "origin": (0, 0, 0)},
            {"buffer": self.buffer, "offset": 0, "bytes_per_row": 256, "rows_per_image": 1},
            (1, 1, 1),
        )
        self.device.queue.submit([encoder.finish()])
        self.buffer.map_sync(wgpu.MapMode.READ)
        self.buffer.unmap()


def upload(device: Any, frame: Any, textures: list[Any] | None) -> list[Any]:
    layout = PixelFormat.YUV420P.plane_layout(frame.width, frame.height)
    if textures is None:
        usage = wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST
        textures = [
            device.create_texture(size=(p.width, p.height, 1), format="r8unorm", usage=usage)
            for p in layout.planes
        ]
    for info, plane, texture in zip(layout.planes, frame.planes, textures, strict=True):
        device.queue.write_texture(
            {"texture": texture},
            memoryview(plane),
            {"offset": 0, "bytes_per_row": plane.line_size, "rows_per_image": info.height},
            (info.width, info.height, 1),
        )
    return textures


def bench_render(device: Any, width: int, height: int, frames: int) -> tuple[float, float]:
    """Frames/s of the renderer and of the hand shader on the same planes, interleaved in rounds."""
    rgb = np.zeros((height, width, 3), np.uint8)
    rgb[..., 0] = np.linspace(0, 255, width, dtype=np.uint8)[None, :]
    rgb[..., 1] = np.linspace(0, 255, height, dtype=np.uint8)[:, None]
    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(
        format="yuv420p", dst_colorspace="itu709"
    )
    planes = upload(device, frame, None)
    renderer = FrameRenderer(device)
    hand = HandShader(device)
    colour = ColourInfo(matrix=ColourMatrix.BT709, range=ColourRange.LIMITED)
    target = renderer.target_texture(width, height)
    view = target.create_view()
    waiter = Waiter(device)
    seconds = {"alpha2": 0.0, "hand": 0.0}
    rounds = 5
    for name, fn in (("alpha2", None), ("hand", None)):  # warm-up: pipelines compiled
        del fn
        (renderer.render(planes, PixelFormat.YUV420P, colour, width, height, target) if name == "alpha2"
         else hand.render(planes, view))  # fmt: skip
        waiter.wait(target)
    for _ in range(rounds):
        for name in ("alpha2", "hand"):
            start = time.perf_counter()
            for _ in range(frames // rounds):
                if name == "alpha2":
                    renderer.render(planes, PixelFormat.YUV420P, colour, width, height, target)
                else:
                    hand.render(planes, view)
            waiter.wait(target)
            seconds[name] += time.perf_counter() - start
    n = rounds * (frames // rounds)
    return n / seconds["alpha2"], n / seconds["hand"]


def bench_play(device: Any, clip: str, frames: int) -> tuple[float, float]:
    """Frames/s of ``alpha2 play --offscreen`` and of the hand-written decode + upload + shader loop."""
    stats = play(clip, PlayOptions(offscreen=True, frames=frames, audio=False, hwaccel="none"))
    # Start-up (device, importer and renderer set-up) is outside the hand-written loop's timing too.
    alpha2_fps = stats.frames / (stats.seconds - stats.stages.seconds.get("setup", 0.0))
    hand = HandShader(device)
    waiter = Waiter(device)
    textures: list[Any] | None = None
    target: Any = None
    start = time.perf_counter()
    done = 0
    with av.open(clip) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for frame in container.decode(stream):
            textures = upload(device, frame, textures)
            if target is None:
                target = device.create_texture(
                    size=(frame.width, frame.height, 1),
                    format="rgba8unorm",
                    usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
                )
                view = target.create_view()
            hand.render(textures, view)
            waiter.wait(target)
            done += 1
            if done >= frames:
                break
    return alpha2_fps, done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--no-play", action="store_true", help="only the render comparison")
    args = parser.parse_args()
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync()
    print(f"adapter: {adapter.info.get('device', '?')} ({adapter.info.get('backend_type', '?')})")
    a, h = bench_render(device, args.width, args.height, args.frames)
    print(
        f"render {args.width}x{args.height}: alpha2 {a:.1f} fps, hand-written {h:.1f} fps, ratio {a / h:.2f}"
    )
    if not args.no_play:
        with tempfile.TemporaryDirectory() as tmp:
            clip = os.path.join(tmp, "clip.mp4")
            write_sample(
                clip, duration_s=args.frames / 30 + 1, size=Size(args.width, args.height), audio=False
            )
            a, h = bench_play(device, clip, args.frames)
        print(
            f"play --offscreen {args.width}x{args.height}: alpha2 {a:.1f} fps, "
            f"hand-written decode+upload+shader {h:.1f} fps, ratio {a / h:.2f}"
        )


if __name__ == "__main__":
    main()
