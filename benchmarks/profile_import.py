"""Profile: where the per-frame time of decode + import (+ a sampling pass) goes, call by call, per thread.

Wraps alpha2's per-frame functions (decoding, describing frames, importing, the CUDA copy, the fence
imports, releasing) and the WebGPU device's command encoding and submit with timers, runs
``bench_import``'s modes in one process, and prints for each function and thread the time per frame,
per call and the longest call. A timer costs about a microsecond a call, so the frame rates printed here
run a little below ``bench_import``'s. Not a test; run it by hand::

    python benchmarks/profile_import.py --hwaccel cuda --backend wgpudawn --sample      # the H200
    python benchmarks/profile_import.py --hwaccel none --backend wgpu                   # lavapipe

``--blocking-stream`` makes the GPU copy's CUDA stream synchronize with the legacy default stream (the
old behaviour, for an A/B). ``--dawn-submit-baseline`` times the same sampling pass over ordinary
textures, without shared memory or fences: what a Dawn submit costs without the interop.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_import

from alpha2.ffmpeg_bridge import decode as decode_module
from alpha2.ffmpeg_bridge import prefetch as prefetch_module
from alpha2.gpu.webgpu import gpu_module_of
from alpha2.native_gpu._cuda import interop
from alpha2.native_gpu.interop import cpu_upload, cuda_vk, leases
from alpha2.native_gpu.interop import importer as importer_module
from alpha2.native_gpu.render import renderer as shader

# (function, thread) -> [total seconds, calls, longest call]
STATS: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0.0, 0, 0.0])


def timed(owner: Any, name: str, label: str | None = None) -> None:
    """Replace ``owner.name`` with a timed wrapper (per thread)."""
    original = getattr(owner, name)
    label = label or f"{getattr(owner, '__name__', owner)}.{name}"

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            dt = time.perf_counter() - t0
            entry = STATS[(label, threading.current_thread().name.split(" ")[0])]
            entry[0] += dt
            entry[1] += 1
            entry[2] = max(entry[2], dt)

    setattr(owner, name, wrapper)


def install_timers() -> None:
    """Timers on alpha2's per-frame functions, and on the device's encoding and submit once it exists."""
    timed(decode_module.DecodeSession, "_raw_next", "DecodeSession._raw_next (decoding)")
    timed(decode_module.DecodeSession, "_describe")
    timed(decode_module.DecodeSession, "_to_decoded")
    timed(prefetch_module.Prefetcher, "get", "Prefetcher.get (waiting for a frame)")
    timed(importer_module.FrameImporter, "import_frame")
    timed(leases.ImportLease, "release")
    timed(cuda_vk.CudaVkPairing, "_acquire")
    timed(cuda_vk.CudaVkPairing, "_enqueue_copy")
    timed(cuda_vk.CudaVkPairing, "copy_ahead")
    timed(cuda_vk.CudaVkPairing, "_acquire_copied")
    timed(interop.CudaEvent, "wait")
    timed(cuda_vk.CudaVkPairing, "_release_slot_current")
    timed(cuda_vk.CudaVkPairing, "_end_plane")
    timed(cpu_upload.CpuUploadPairing, "_write_plane")
    timed(interop, "copy_plane_to_array")
    timed(interop.ExternalSemaphore, "__init__", "ExternalSemaphore.__init__ (CUDA import)")
    timed(interop.ExternalSemaphore, "signal")
    timed(interop.ExternalSemaphore, "wait")
    timed(interop.ExternalSemaphore, "close")
    timed(interop.CopyStream, "order_after")
    timed(interop.CudaEvent, "record")
    timed(interop.CudaEvent, "query")
    timed(shader.FrameRenderer, "encode_render")
    make_device = bench_import.make_device
    patched: set[type] = set()

    def make_timed_device(backend: str) -> Any:
        device = make_device(backend)
        if type(device) not in patched:
            patched.add(type(device))
            timed(type(device), "create_command_encoder", "device.create_command_encoder")
            timed(type(device.queue), "submit", "queue.submit")
            timed(type(device.queue), "write_texture", "queue.write_texture")
            encoder = device.create_command_encoder()
            timed(type(encoder), "finish", "encoder.finish")
            timed(type(encoder), "begin_render_pass", "encoder.begin_render_pass")
            encoder.finish()
        return device

    bench_import.make_device = make_timed_device


def report(title: str, frames: int) -> None:
    print(f"  {title}: time per frame, per call and the longest call, by function and thread")
    for (label, thread), (total, calls, longest) in sorted(STATS.items(), key=lambda kv: -kv[1][0]):
        print(
            f"    {label:<48} {thread:<22} {1e3 * total / max(frames, 1):7.3f} ms/frame  "
            f"{int(calls):6d} calls  {1e6 * total / max(calls, 1):8.1f} us/call  max {1e3 * longest:7.2f} ms"
        )
    STATS.clear()


def blocking_stream() -> Callable[[], None]:
    """Make new copy streams blocking (flags 0, CU_STREAM_DEFAULT, for ``cuStreamCreate``); returns the
    undo. The library has no such option: its copy streams are non-blocking."""
    original = interop._CU_STREAM_NON_BLOCKING
    interop._CU_STREAM_NON_BLOCKING = 0
    return lambda: setattr(interop, "_CU_STREAM_NON_BLOCKING", original)


def dawn_submit_baseline(backend: str, frames: int) -> None:
    """The sampling pass over ordinary 1080p nv12 plane textures: encode and submit, timed."""
    from alpha2.gpu.colour import ColourInfo
    from alpha2.gpu.formats import PixelFormat

    device = bench_import.make_device(backend)
    gpu = gpu_module_of(device)
    usage = gpu.TextureUsage.TEXTURE_BINDING | gpu.TextureUsage.COPY_DST
    planes = [
        device.create_texture(size=(1920, 1080, 1), format="r8unorm", usage=usage).create_view(),
        device.create_texture(size=(960, 540, 1), format="rg8unorm", usage=usage).create_view(),
    ]
    renderer = shader.FrameRenderer(device)
    nv12, colour = PixelFormat.NV12, ColourInfo()
    for count in (50, frames):  # the first round compiles and warms up
        submit = 0.0
        start = time.perf_counter()
        for _ in range(count):
            encoder = device.create_command_encoder()
            renderer.encode_render(encoder, planes, nv12, colour, 1920, 1080)
            commands = encoder.finish()
            t0 = time.perf_counter()
            device.queue.submit([commands])
            submit += time.perf_counter() - t0
        bench_import.gpu_finish(device)
        total = time.perf_counter() - start
    print(
        f"  sampling pass over ordinary textures: {1e3 * total / frames:.3f} ms a frame, of which "
        f"queue.submit {1e3 * submit / frames:.3f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clip", default=bench_import.DEFAULT_CLIP)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--hwaccel", choices=("auto", "none", "cuda"), default="auto")
    parser.add_argument("--backend", choices=("auto", "wgpu", "wgpudawn"), default="auto")
    parser.add_argument("--sample", action="store_true", help="a sampling pass per imported frame")
    parser.add_argument("--prefetch", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="rounds of decode + import, interleaved")
    parser.add_argument("--blocking-stream", action="store_true")
    parser.add_argument("--dawn-submit-baseline", action="store_true")
    options = parser.parse_args()
    if not os.path.exists(options.clip):
        bench_import.make_clip(options.clip, max(300, options.frames))
    install_timers()
    undo = blocking_stream() if options.blocking_stream else None
    best: dict[str, float] = {}
    try:
        for round_ in range(max(1, options.repeat)):
            for mode in ("decode", "import"):
                STATS.clear()
                result = bench_import.run_mode(
                    mode,
                    options.clip,
                    options.frames,
                    options.hwaccel,
                    options.backend,
                    options.sample and mode == "import",
                    4,
                    options.prefetch,
                )
                fps = result["frames"] / result["seconds"]
                best[mode] = max(best.get(mode, 0.0), fps)
                print(f"[round {round_}] {mode}: {fps:.1f} fps, paths {result.get('paths')}")
                report(mode, result["frames"])
    finally:
        if undo is not None:
            undo()
    if "decode" in best and "import" in best:
        print(f"import / decode (best of each): {best['import'] / best['decode']:.3f}")
    if options.dawn_submit_baseline:
        dawn_submit_baseline(options.backend, options.frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
