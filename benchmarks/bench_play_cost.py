"""``alpha2 play --offscreen`` against a plain PyAV + wgpu player, per frame, on the same clip in one run.

The plain player is what a person would write without alpha2: PyAV decodes (frame threads, as alpha2
does), three plane textures are written with ``queue.write_texture`` straight from the frame's planes,
one ``textureSample`` shader (a linear sampler, the BT.709 limited matrix inline) renders into an
offscreen RGBA texture, and nothing waits per frame: one read-back wait at the end. Both sides are timed
the same way, from before the device and the decoder are opened to the last frame's work done (alpha2's
``seconds``), each in a process of its own, alternately, best of ``--rounds``.

A wall (``--wall N``): ``alpha2 play CLIP x N --wall --offscreen`` against N PyAV decoders in threads
with nothing else (the ceiling the decoders allow on this machine); with ``--wall-fit WxH`` also the
wall drawn to fit WxH as a window draws it (``StreamGroup(fit=...)``; a window's is 1920x1080).

    python benchmarks/bench_play_cost.py [--size 1280x720 --frames 300 --rounds 3 --wall 4 --wall-fit WxH]

Prints fps of each, and the ratio alpha2 / plain (at least 1 wanted).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

PLAIN_WGSL = """
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
    let y = (textureSample(y_tex, lin, in.uv).r * 255.0 - 16.0) / 219.0;
    let u = (textureSample(u_tex, lin, in.uv).r * 255.0 - 128.0) / 224.0;
    let v = (textureSample(v_tex, lin, in.uv).r * 255.0 - 128.0) / 224.0;
    let rgb = vec3<f32>(y + 1.5748 * v, y - 0.1873 * u - 0.4681 * v, y + 1.8556 * u);
    return vec4<f32>(clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)), 1.0);
}
"""


def plain_pipeline(wgpu: Any, device: Any, target_format: str) -> tuple[Any, Any]:
    """The plain player's bind group layout (three plane textures, a linear sampler) and its render
    pipeline (PLAIN_WGSL) into ``target_format``: what a person writes by hand."""
    module = device.create_shader_module(code=PLAIN_WGSL)
    stage = wgpu.ShaderStage.FRAGMENT
    tex = {"sample_type": "float", "view_dimension": "2d"}
    layout = device.create_bind_group_layout(
        entries=[
            *({"binding": i, "visibility": stage, "texture": tex} for i in range(3)),
            {"binding": 3, "visibility": stage, "sampler": {"type": "filtering"}},
        ]
    )
    pipeline = device.create_render_pipeline(
        layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
        vertex={"module": module, "entry_point": "vs", "buffers": []},
        primitive={"topology": "triangle-list"},
        fragment={"module": module, "entry_point": "fs", "targets": [{"format": target_format}]},
    )
    return layout, pipeline


def plain_play(clip: str, frames: int) -> dict[str, Any]:
    """The plain player: decode, three write_texture uploads, the sampler shader, no per-frame wait."""
    import av
    import wgpu

    start, cpu = time.perf_counter(), time.process_time()
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync()
    container = av.open(clip)
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    layout, pipeline = plain_pipeline(wgpu, device, "rgba8unorm")
    sampler = device.create_sampler(mag_filter="linear", min_filter="linear")
    queue = device.queue
    planes: list[Any] = []
    group: Any = None
    target: Any = None
    view: Any = None
    done = 0
    for frame in container.decode(stream):
        if target is None:
            usage = wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST
            sizes = [(frame.width, frame.height)] + [((frame.width + 1) // 2, (frame.height + 1) // 2)] * 2
            planes = [device.create_texture(size=(w, h, 1), format="r8unorm", usage=usage) for w, h in sizes]
            group = device.create_bind_group(
                layout=layout,
                entries=[
                    *({"binding": i, "resource": p.create_view()} for i, p in enumerate(planes)),
                    {"binding": 3, "resource": sampler},
                ],
            )
            target = device.create_texture(
                size=(frame.width, frame.height, 1),
                format="rgba8unorm",
                usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
            )
            view = target.create_view()
        for plane, texture in zip(frame.planes, planes):
            w, h = texture.size[0], texture.size[1]
            queue.write_texture(
                {"texture": texture},
                plane,
                {"offset": 0, "bytes_per_row": plane.line_size, "rows_per_image": h},
                (w, h, 1),
            )
        encoder = device.create_command_encoder()
        rp = encoder.begin_render_pass(
            color_attachments=[
                {"view": view, "clear_value": (0, 0, 0, 1), "load_op": "clear", "store_op": "store"}
            ]
        )
        rp.set_pipeline(pipeline)
        rp.set_bind_group(0, group)
        rp.draw(3, 1, 0, 0)
        rp.end()
        queue.submit([encoder.finish()])
        done += 1
        if done >= frames:
            break
    # The one wait: a texel of the last frame read back.
    buffer = device.create_buffer(size=256, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)
    encoder = device.create_command_encoder()
    encoder.copy_texture_to_buffer(
        {"texture": target}, {"buffer": buffer, "bytes_per_row": 256, "rows_per_image": 1}, (1, 1, 1)
    )
    queue.submit([encoder.finish()])
    buffer.map_sync(wgpu.MapMode.READ)
    buffer.unmap()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    container.close()
    return {"frames": done, "seconds": seconds, "fps": done / seconds, "cpu_s": cpu}


def alpha2_play(clips: list[str], frames: int, wall: bool) -> dict[str, Any]:
    """``alpha2 play CLIP --offscreen --frames N --no-audio`` in this process (``play`` / ``play_wall``),
    with the CPU time of all its threads (decoders and lavapipe's included) over the same span."""
    from alpha2.api.playback import PlayOptions

    options = PlayOptions(offscreen=True, frames=frames, audio=False)
    cpu = time.process_time()
    if wall:
        from alpha2.apps.wall import play_wall

        stats: Any = play_wall(clips, options)
    else:
        from alpha2.apps.player import play

        (clip,) = clips
        stats = play(clip, options)
    cpu = time.process_time() - cpu
    stages = {name: round(seconds, 3) for name, seconds in stats.stages.seconds.items()}
    return {
        "frames": stats.frames,
        "seconds": stats.seconds,
        "fps": stats.fps,
        "cpu_s": cpu,
        "stages": stages,
    }


def alpha2_group(clips: list[str], frames: int, fit: str) -> dict[str, Any]:
    """The wall as ``play_wall`` ticks it offscreen, but drawn to fit ``fit`` (WxH) as a window draws it:
    a StreamGroup made with ``fit``, ticked ``frames`` times, from before it opens to the GPU's end."""
    from alpha2.api.pipeline import parse_even_size
    from alpha2.api.streams import StreamGroup

    cpu, start = time.process_time(), time.perf_counter()
    with StreamGroup(clips, fit=parse_even_size(fit)) as group:
        done = group.run(frames)
        group.drain()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        stages = {name: round(s, 3) for name, s in group.stages.seconds.items()}
        size = f"{group.size.width}x{group.size.height}"
    return {
        "frames": done,
        "seconds": seconds,
        "fps": done / seconds,
        "cpu_s": cpu,
        "stages": stages,
        "wall": size,
    }


def plain_decode(clips: list[str], frames: int) -> dict[str, Any]:
    """N PyAV decoders in threads, nothing else: the most a wall of these clips can show here."""
    import av

    counts = [0] * len(clips)

    def decode(index: int) -> None:
        with av.open(clips[index]) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            for _ in container.decode(stream):
                counts[index] += 1
                if counts[index] >= frames:
                    break

    start = time.perf_counter()
    threads = [threading.Thread(target=decode, args=(i,)) for i in range(len(clips))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    return {"frames": min(counts), "seconds": seconds, "fps": min(counts) / seconds, "cpu_s": 0.0}


def _child(argv: list[str]) -> dict[str, Any]:
    run = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=ROOT, check=False)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{run.stderr}")
    data: dict[str, Any] = json.loads(run.stdout[run.stdout.index("{") :])
    return data


def _best(runs: list[dict[str, Any]]) -> tuple[float, float]:
    """The best fps of ``runs`` and the least CPU seconds a frame."""
    return max(r["fps"] for r in runs), min(r["cpu_s"] / max(r["frames"], 1) for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1280x720", help="the generated clip's size (default 1280x720)")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side; the best counts")
    parser.add_argument("--clip", help="play this file instead of a generated one")
    parser.add_argument("--wall", type=int, default=0, metavar="N", help="also a wall of N copies")
    parser.add_argument(
        "--wall-fit",
        metavar="WxH",
        help="the wall drawn to fit WxH, as in a window (a StreamGroup made with fit=), not play_wall's",
    )
    parser.add_argument(
        "--child",
        choices=("plain", "alpha2", "decode", "alpha2-wall", "alpha2-group"),
        help=argparse.SUPPRESS,
    )
    parser.add_argument("clips", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        work = {
            "plain": lambda: plain_play(args.clips[0], args.frames),
            "alpha2": lambda: alpha2_play(args.clips, args.frames, False),
            "alpha2-wall": lambda: alpha2_play(args.clips, args.frames, True),
            "alpha2-group": lambda: alpha2_group(args.clips, args.frames, args.wall_fit),
            "decode": lambda: plain_decode(args.clips, args.frames),
        }[args.child]
        print(json.dumps(work()))
        return
    from alpha2.api.pipeline import parse_even_size
    from alpha2.apps.sample import write_sample

    size = parse_even_size(args.size)
    script = str(Path(__file__).resolve())

    def child(kind: str, clips: list[str]) -> dict[str, Any]:
        fit = ["--wall-fit", args.wall_fit] if kind == "alpha2-group" else []
        return _child([script, "--child", kind, "--frames", str(args.frames), *fit, *clips])

    with tempfile.TemporaryDirectory() as tmp:
        clip = args.clip
        if clip is None:
            clip = os.path.join(tmp, "clip.mp4")
            write_sample(clip, duration_s=args.frames / 30 + 1, size=size, audio=False)
        runs: dict[str, list[dict[str, Any]]] = {"alpha2": [], "plain": []}
        for _ in range(args.rounds):  # alternately, so that a busy moment hits both sides alike
            for kind in runs:
                runs[kind].append(child(kind, [clip]))
        (a, a_cpu), (p, p_cpu) = _best(runs["alpha2"]), _best(runs["plain"])
        print(f"play --offscreen {os.path.basename(clip)}, {args.frames} frames, best of {args.rounds}:")
        print(
            f"  alpha2 {a:.1f} fps ({a_cpu * 1000:.1f} ms CPU a frame); stages {runs['alpha2'][-1]['stages']}"
        )
        print(f"  plain PyAV + wgpu {p:.1f} fps ({p_cpu * 1000:.1f} ms CPU a frame)")
        print(f"  ratio alpha2 / plain: {a / p:.2f} (fps), {p_cpu / a_cpu:.2f} (CPU a frame)")
        if args.wall:
            clips = [clip] * args.wall
            wall: dict[str, list[dict[str, Any]]] = {"alpha2-wall": [], "decode": []}
            if args.wall_fit:
                wall["alpha2-group"] = []
            for _ in range(args.rounds):
                for kind in wall:
                    wall[kind].append(child(kind, clips))
            (a, a_cpu), (d, _) = _best(wall["alpha2-wall"]), _best(wall["decode"])
            print(f"wall of {args.wall} x {os.path.basename(clip)} --offscreen, best of {args.rounds}:")
            print(
                f"  alpha2 {a:.1f} fps ({a_cpu * 1000:.1f} ms CPU a wall frame); "
                f"stages {wall['alpha2-wall'][-1]['stages']}"
            )
            if args.wall_fit:
                g, g_cpu = _best(wall["alpha2-group"])
                print(
                    f"  drawn to fit {args.wall_fit} ({wall['alpha2-group'][-1]['wall']}): {g:.1f} fps "
                    f"({g_cpu * 1000:.1f} ms CPU a wall frame)"
                )
            print(f"  {args.wall} PyAV decoders alone, in threads: {d:.1f} fps each")


if __name__ == "__main__":
    main()
