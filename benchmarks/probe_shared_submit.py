"""What a shared texture costs the CPU in one Dawn submission (issue 27's caller's thread, a frame a call).

Each iteration writes three small rgba8uint storage textures with one compute pass each and submits them,
as a tensor of one frame does (the frame's two planes, the export texture); K of the three are shared
textures (SharedTextureMemory on exportable Vulkan memory, the tensor exporter's ring slots: their access
begun before, ended after, its end-of-access fence exported and closed), the others plain Dawn textures.
The GPU work is the same in every row; only the CPU's time in the calls is counted (the queue is drained
every 16 iterations, outside the timing). ``fenced`` rows also begin each shared texture's access waiting
on its binary semaphore, signalled by CUDA just before (as the export texture's access waits for CUDA's
last copy out of it).

    python3 benchmarks/probe_shared_submit.py --iterations 600   # NVIDIA: Dawn, shared Vulkan device, CUDA

Dawn's source (mirror at v20260820, read in the eighth session of 2026-12-05) does, per shared texture in a
submission: a vkCreateSemaphore for export, a vkGetSemaphoreFdKHR, later a vkDestroySemaphore, and per begin
fence a vkCreateSemaphore + vkImportSemaphoreFdKHR + vkDestroySemaphore; one vkQueueSubmit in all. This
measures what that adds up to.

``--threaded`` asks whether the frame's two plane textures could be taken off the caller's thread (issue
27's lever): the device is made with Dawn's ``implicit-device-synchronization`` (a device lock around every
call), a second thread (the decoder's, in the library) begins two shared textures, copies them into plain
textures and submits, a frame at a time ahead through a queue of two, while the caller's thread submits
one shared texture (the export) and two plain ones a frame; against the same work on one thread.

    python3 benchmarks/probe_shared_submit.py --threaded --iterations 600
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

SHADER = """
@group(0) @binding(0) var out: texture_storage_2d<rgba8uint, write>;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    textureStore(out, vec2<i32>(id.xy), vec4<u32>(id.x, id.y, 1u, 255u));
}
"""
TEXTURES = 3
SIDE = 16


def _drain_queue(device: Any) -> None:
    from alpha2.gpu.webgpu import wait_promise

    promise = device.queue.on_submitted_work_done_async()
    if not wait_promise(promise, 10.0, device):
        raise TimeoutError("the queue did not drain in 10 s")
    promise.sync_wait()


def _drain(parts: dict[str, Any]) -> None:
    """Wait for Dawn's queue and CUDA's stream; destroy CUDA's imports of Dawn's fences waited on."""
    from alpha2.native_gpu._cuda import interop

    _drain_queue(parts["device"])
    exporter = parts["exporter"]
    with exporter._ctx:
        event = interop.CudaEvent(exporter._ctx)
        event.record(exporter._stream.handle)
        event.wait(10.0)
        event.close()
        for slot in parts["slots"]:
            waited, slot.waited = slot.waited, []
            for semaphore in waited:
                semaphore.close()


def run(iterations: int, shared: int, fenced: bool, parts: dict[str, Any]) -> dict[str, float]:
    """Median microseconds a call of each stage, and of the iteration."""
    from alpha2.native_gpu.interop import dawn_planes
    from alpha2.native_gpu.interop.cuda import wait_release_fences

    device, pipeline, exporter = parts["device"], parts["pipeline"], parts["exporter"]
    slots, plain = parts["slots"], parts["plain"]
    used = slots[:shared]
    views = [slot.planes[0].view for slot in used] + [t.create_view() for t in plain[: TEXTURES - shared]]
    groups = [
        device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0), entries=[{"binding": 0, "resource": view}]
        )
        for view in views
    ]
    times: dict[str, list[float]] = {"begin": [], "encode": [], "submit": [], "end": [], "all": []}
    for index in range(iterations):
        if index % 16 == 0:
            _drain(parts)
        if fenced:  # as the exporter's copy out: CUDA waits for Dawn's last access, then signals
            handle = exporter._stream.handle
            with exporter._ctx:
                for slot in used:
                    wait_release_fences(exporter._ctx, slot, handle)
                    slot.planes[0].cu_semaphore.signal(handle)
        t0 = time.perf_counter()
        for slot in used:
            dawn_planes.begin_access(slot, [1] if fenced else None)
        t1 = time.perf_counter()
        encoder = device.create_command_encoder()
        for group in groups:
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups(SIDE // 8, SIDE // 8, 1)
            compute.end()
        buffer = encoder.finish()
        t2 = time.perf_counter()
        device.queue.submit([buffer])
        t3 = time.perf_counter()
        for slot in used:
            plane = slot.planes[0]
            dawn_planes.end_plane(plane, collect_fences=True)
            if not fenced:  # nothing waits on them: closed (fenced rows hand them to CUDA next time)
                for fd in plane.release_fence_fds + plane.release_sync_fds:
                    fd.close()
                plane.release_fence_fds, plane.release_sync_fds = [], []
        t4 = time.perf_counter()
        if index >= 16:  # the first ones warm up
            for name, seconds in (
                ("begin", t1 - t0),
                ("encode", t2 - t1),
                ("submit", t3 - t2),
                ("end", t4 - t3),
                ("all", t4 - t0),
            ):
                times[name].append(seconds)
    if fenced:  # the last fences: waited on by CUDA, so that the semaphores are unsignalled again
        with exporter._ctx:
            for slot in used:
                wait_release_fences(exporter._ctx, slot, exporter._stream.handle)
    _drain(parts)
    return {name: statistics.median(values) * 1e6 for name, values in times.items()}


def run_threaded(iterations: int, parts: dict[str, Any], *, threaded: bool) -> dict[str, float]:
    """A frame's three textures as the library would have them with the planes copied ahead: the
    planes' two shared textures begun, copied into plain textures and submitted on a second thread
    (``threaded``) or on the caller's; then the caller's submission writing the export (shared) and
    reading nothing else shared. Median microseconds of the caller's calls a frame, and frames a second."""
    import queue
    import threading

    from alpha2.native_gpu.interop import dawn_planes

    device, pipeline = parts["device"], parts["pipeline"]
    slots, plain = parts["slots"], parts["plain"]
    export, planes = slots[0], slots[1:3]
    copies = parts["copies"]
    export_group = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0), entries=[{"binding": 0, "resource": export.planes[0].view}]
    )
    plain_groups = [
        device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0), entries=[{"binding": 0, "resource": t.create_view()}]
        )
        for t in plain[:2]
    ]

    def copy_planes() -> None:
        for slot in planes:
            dawn_planes.begin_access(slot, None)
        encoder = device.create_command_encoder()
        for slot, target in zip(planes, copies, strict=True):
            encoder.copy_texture_to_texture(
                {"texture": slot.planes[0].texture, "mip_level": 0, "origin": (0, 0, 0)},
                {"texture": target, "mip_level": 0, "origin": (0, 0, 0)},
                target.size,
            )
        device.queue.submit([encoder.finish()])
        for slot in planes:
            plane = slot.planes[0]
            dawn_planes.end_plane(plane, collect_fences=True)
            for fd in plane.release_fence_fds + plane.release_sync_fds:
                fd.close()
            plane.release_fence_fds, plane.release_sync_fds = [], []

    ready: queue.Queue[int | None] = queue.Queue(maxsize=2)
    failed: list[BaseException] = []

    def ahead() -> None:
        try:
            for index in range(iterations):
                copy_planes()
                ready.put(index)
        except BaseException as exc:
            failed.append(exc)
        finally:
            ready.put(None)

    worker = threading.Thread(target=ahead, name="planes ahead") if threaded else None
    if worker is not None:
        worker.start()
    times: list[float] = []
    start = time.perf_counter()
    for index in range(iterations):
        if worker is not None:
            if ready.get(timeout=30) is None:
                break
        t0 = time.perf_counter()
        if worker is None:
            copy_planes()
        dawn_planes.begin_access(export, None)
        encoder = device.create_command_encoder()
        for group in (export_group, *plain_groups):
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups(SIDE // 8, SIDE // 8, 1)
            compute.end()
        device.queue.submit([encoder.finish()])
        plane = export.planes[0]
        dawn_planes.end_plane(plane, collect_fences=True)
        for fd in plane.release_fence_fds + plane.release_sync_fds:
            fd.close()
        plane.release_fence_fds, plane.release_sync_fds = [], []
        if index >= 16:
            times.append(time.perf_counter() - t0)
        if index % 16 == 15:
            _drain_queue(device)
    seconds = time.perf_counter() - start
    if worker is not None:
        worker.join(30)
    _drain_queue(device)
    if failed:
        raise failed[0]
    return {"caller": statistics.median(times) * 1e6, "fps": len(times) / seconds if times else 0.0}


def _with_implicit_synchronization() -> None:
    """Make every wgpudawn device ask for Dawn's implicit-device-synchronization where the adapter has it
    (the probe's own patch: the library does not ask for it). The backend's ``_request_device_async`` is
    what ``request_device_sync`` and ``request_device_async`` both end in."""
    from wgpudawn.backends.dawn import _api

    original = _api.GPUAdapter._request_device_async

    def request(self: Any, label: str, required_features: Any, *args: Any, **kwargs: Any) -> Any:
        features = list(required_features)
        have = {str(f) for f in self.features}
        print(f"adapter features: {sorted(have)}")
        if "implicit-device-synchronization" in have:
            features.append("implicit-device-synchronization")
        return original(self, label, features, *args, **kwargs)

    _api.GPUAdapter._request_device_async = request


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--threaded",
        action="store_true",
        help="the planes' two shared textures on a second thread, against one thread (Dawn's implicit "
        "device synchronization asked for)",
    )
    args = parser.parse_args(argv)
    if args.threaded:
        _with_implicit_synchronization()

    from alpha2.native_gpu.device.device import Device
    from alpha2.native_gpu.interop.tensor_export import TensorExporter, _export_key, export_geometry

    device = Device.open(want_gpu_copy=True)
    webgpu = device.webgpu_device
    exporter = TensorExporter.create(device, slots=TEXTURES)
    key = _export_key(export_geometry(SIDE * SIDE))
    slots = []
    with exporter._ctx:
        for _ in range(TEXTURES):
            slot, _reused = exporter._ring.take(key, 10.0)
            slots.append(slot)
    from alpha2.gpu.webgpu import gpu_module_of

    gpu = gpu_module_of(webgpu)
    texture_usage = gpu.TextureUsage.STORAGE_BINDING | gpu.TextureUsage.COPY_SRC
    plain = [
        webgpu.create_texture(size=(SIDE, SIDE, 1), format="rgba8uint", usage=texture_usage)
        for _ in range(TEXTURES)
    ]
    module = webgpu.create_shader_module(code=SHADER)
    pipeline = webgpu.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )
    copy_usage = gpu.TextureUsage.COPY_DST | gpu.TextureUsage.TEXTURE_BINDING
    ring_texture = slots[0].planes[0].texture  # the ring's geometry (SIDE * SIDE texels in a row)
    copies = [
        webgpu.create_texture(size=ring_texture.size, format=ring_texture.format, usage=copy_usage)
        for _ in range(2)
    ]
    parts = {
        "device": webgpu,
        "pipeline": pipeline,
        "exporter": exporter,
        "slots": slots,
        "plain": plain,
        "copies": copies,
    }
    if args.threaded:
        print(f"{device.adapter_name}; features: {sorted(str(f) for f in webgpu.features)}")
        if "implicit-device-synchronization" not in {str(f) for f in webgpu.features}:
            print("no implicit-device-synchronization: a second thread would race Dawn; not measured")
            threaded_rows: tuple[bool, ...] = (False,)
        else:
            threaded_rows = (False, True)
        print(f"{args.iterations} frames a row; the caller's median microseconds a frame, frames a second")
        for round_ in range(args.rounds):
            for threaded in threaded_rows:
                row = run_threaded(args.iterations, parts, threaded=threaded)
                where = "planes on a second thread" if threaded else "all on the caller's thread"
                print(f"{where:>28}: caller {row['caller']:8.1f} us, {row['fps']:8.1f} frames/s", end="")
                print(f" (round {round_ + 1})")
    else:
        _rows(args, parts, device.adapter_name)
    with exporter._ctx:
        for slot in slots:
            exporter._ring.give_back(slot, broken=False)
    exporter.close()
    device.close()
    return 0


def _rows(args: argparse.Namespace, parts: dict[str, Any], adapter_name: str) -> None:
    """The table of 0-3 shared textures, with and without begin fences."""
    print(f"{adapter_name}; {args.iterations} iterations a row, medians in microseconds a call")
    print(f"{'shared':>6} {'fenced':>6} {'begin':>8} {'encode':>8} {'submit':>8} {'end':>8} {'all':>8}")
    for round_ in range(args.rounds):
        for shared in range(TEXTURES + 1):
            for fenced in (False, True) if shared else (False,):
                row = run(args.iterations, shared, fenced, parts)
                print(
                    f"{shared:>6} {fenced!s:>6} {row['begin']:8.1f} {row['encode']:8.1f} "
                    f"{row['submit']:8.1f} {row['end']:8.1f} {row['all']:8.1f}   (round {round_ + 1})"
                )


if __name__ == "__main__":
    sys.exit(main())
