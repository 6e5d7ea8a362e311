"""Many streams into one device: decode alone (threads, processes), decode + import, decode + import + wall.

For each codec and each N, in one run (start-up excluded: every session is open before the clock starts):

* ``decode-threads``: N DecodeSessions on N threads in one process, frames released at once;
* ``decode-procs``: the same as N processes (the NVDEC reference the issue measured);
* ``import``: N sessions (decoding ahead on their threads) imported into one Device, one importer each;
* ``wall``: the same plus one composed grid render per tick, ONE submit per tick (StreamGroup);
* ``import-procs``: N decoder processes (``StreamGroup(decoders="processes")``) handing frames over to
  one Device in this process (NVDEC frames copied on the GPU by the decoder process into Vulkan images
  that Dawn imports here); ``wall-procs``: ``wall`` with them;
* ``import-queue`` (asked for by name): ``import`` with ``ALPHA2_GPU_COPY_RELEASE=queue``, the GPU copy's
  experimental release order that imports no CUDA fence per frame.

Ratios are against ``decode-threads`` at the same N. ``--wall-check`` also plays a 16-stream wall paced at
30 fps (``StreamGroup.tick(at_s)``) and counts late ticks and dropped frames.

Targets on the H200 (issue 14): import >= 2500 fps aggregate at 1080p H.264 with N >= 14; import >= 0.9
of decode alone at the same N; a 16-stream 1080p30 HEVC wall at 30 fps with no drops.

    python benchmarks/bench_streams.py                       # H200: 1080p, 900 frames, N = 1..28
    python benchmarks/bench_streams.py --hwaccel none --size 320x180 --frames 60 --streams 1,2,4
    python benchmarks/bench_streams.py --codecs h264 --modes decode-threads,import,import-queue  # A/B
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from alpha2.api.streams import StreamGroup
from alpha2.apps.sample import write_sample
from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.gpu.geometry import Size
from alpha2.gpu.surfaces import SurfaceBudget

TARGET_FPS = 2500.0
TARGET_RATIO = 0.9


def make_clips(root: str, codecs: list[str], size: Size, frames: int) -> dict[str, str]:
    clips = {}
    for codec in codecs:
        path = os.path.join(root, f"bench_{codec}_{size.width}x{size.height}_{frames}.mkv")
        if not os.path.exists(path):
            print(f"making {path} ...", file=sys.stderr, flush=True)
            write_sample(path, duration_s=frames / 30, size=size, codec=codec, audio=False, preset="veryfast")
        clips[codec] = path
    return clips


def _run_together(work: list[Callable[[], int]]) -> tuple[int, float]:
    """Run each of ``work`` on a thread of its own, all started together; (sum of their counts, seconds
    from the start until the last one ended). The first exception a thread raised is raised here."""
    counts = [0] * len(work)
    errors: list[BaseException] = []
    start = threading.Barrier(len(work) + 1)

    def run(index: int) -> None:
        start.wait()
        try:
            counts[index] = work[index]()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return sum(counts), seconds


def _drain(session: DecodeSession) -> int:
    n = 0
    for frame in session:
        frame.release()
        n += 1
    return n


def decode_threads(clip: str, n: int, hwaccel: str) -> tuple[int, float]:
    sessions = [DecodeSession(clip, hwaccel=hwaccel) for _ in range(n)]
    try:
        return _run_together([functools.partial(_drain, s) for s in sessions])
    finally:
        for s in sessions:
            s.close()


def _proc(clip: str, hwaccel: str, start: Any, out: Any) -> None:
    with DecodeSession(clip, hwaccel=hwaccel) as session:
        start.wait()
        t0 = time.perf_counter()
        n = 0
        for frame in session:
            frame.release()
            n += 1
        out.put((n, t0, time.perf_counter()))


def decode_procs(clip: str, n: int, hwaccel: str) -> tuple[int, float]:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(n)
    out = ctx.Queue()
    procs = [ctx.Process(target=_proc, args=(clip, hwaccel, start, out)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    frames = sum(r[0] for r in results)
    return frames, max(r[2] for r in results) - min(r[1] for r in results)


NOTES: list[str] = []
"""Lines printed after the table: what each import cell's frames did (copied ahead or at import)."""


def import_only(clip: str, n: int, hwaccel: str, copy_ahead: bool = True) -> tuple[int, float]:
    """Decode + import, no render: the StreamGroup's sessions and importers, leases released at once.
    The GPU copy runs on each decoder's thread (``copy_ahead``), as StreamGroup does by default."""
    with StreamGroup(
        [clip] * n, hwaccel=hwaccel, budget=SurfaceBudget(max_surfaces=2 * n), copy_ahead=copy_ahead
    ) as group:
        streams = group.streams
        t0 = time.perf_counter()
        frames = 0
        live = list(streams)
        while live:
            for stream in list(live):
                frame = stream.decoder.next_frame()
                if frame is None:
                    live.remove(stream)
                    continue
                stream.importer.import_frame(frame).release()
                frames += 1
        group.device.webgpu_device.queue.submit([])
        seconds = time.perf_counter() - t0
        _note_copies(f"N={n} import{'' if copy_ahead else '-inline'}", group)
        return frames, seconds


def import_procs(clip: str, n: int, hwaccel: str) -> tuple[int, float]:
    """Decode in N decoder processes (``StreamGroup(decoders="processes")``), each frame handed over to
    this process's Device (NVDEC frames: copied by the decoder process into Vulkan images Dawn imports
    here), leases released at once: the textures are this process's, the decoding is not."""
    with StreamGroup([clip] * n, hwaccel=hwaccel, decoders="processes") as group:
        live = list(group.streams)
        t0 = time.perf_counter()
        frames = 0
        while live:
            # Frames as they come: a stream with none waiting here is passed over, so that one slow
            # decoder process holds up no other (each can only get `slots` frames ahead of this loop).
            waiting = [s for s in live if s.decoder.decoded_ahead[0]] or live[:1]
            for stream in waiting:
                lease = stream.decoder.next_frame()
                if lease is None:
                    live.remove(stream)
                    continue
                lease.release()
                frames += 1
        group.device.webgpu_device.queue.submit([])
        seconds = time.perf_counter() - t0
        paths = group.path_counts()
        NOTES.append(f"N={n} import-procs: paths {dict((p.value, c) for p, c in paths.frames.items())}")
        return frames, seconds


def wall_procs(clip: str, n: int, hwaccel: str) -> tuple[int, float]:
    """``wall`` with the decoders in processes of their own."""
    return wall(clip, n, hwaccel, decoders="processes")


def _note_copies(cell: str, group: StreamGroup) -> None:
    stats = [s.importer.stats() for s in group.streams]
    ahead = sum(s.copied_ahead for s in stats)
    inline = sum(s.not_copied_ahead for s in stats)
    paths: dict[str, int] = {}
    for stream in group.streams:
        for path, count in stream.importer.path_report.frames_by_path.items():
            paths[path.value] = paths.get(path.value, 0) + count
    NOTES.append(f"{cell}: paths {paths}; copied on the decoders' threads {ahead}, at import {inline}")


def import_inline(clip: str, n: int, hwaccel: str) -> tuple[int, float]:
    """``import`` with the GPU copy made at import, on the importing thread (before copy-ahead)."""
    return import_only(clip, n, hwaccel, copy_ahead=False)


def import_queue_order(clip: str, n: int, hwaccel: str) -> tuple[int, float]:
    """``import`` with the GPU copy's experimental queue release order (no CUDA fence import per frame)."""
    from alpha2.native_gpu.interop.cuda_vk import RELEASE_ENV

    before = os.environ.get(RELEASE_ENV)
    os.environ[RELEASE_ENV] = "queue"
    try:
        return import_only(clip, n, hwaccel)
    finally:
        if before is None:
            del os.environ[RELEASE_ENV]
        else:
            os.environ[RELEASE_ENV] = before


@contextlib.contextmanager
def _decoders_on_own_contexts() -> Iterator[None]:
    """Experimental: each NVDEC decoder on a CUDA context of its own (FFmpeg's ``primary_ctx=0``), as
    processes have, instead of all on the primary context alpha2's GPU copy uses."""
    from av.codec.hwaccel import HWAccel

    from alpha2.ffmpeg_bridge import decode

    plain = decode.make_hwaccel

    def own_context(plan: Any) -> Any:
        made = plain(plan)
        return HWAccel(
            device_type="cuda",
            device=str(plan.cuda_ordinal),
            allow_software_fallback=made.allow_software_fallback,
            options={"primary_ctx": "0"},
            is_hw_owned=True,
        )

    decode.make_hwaccel = own_context  # type: ignore[assignment]
    try:
        yield
    finally:
        decode.make_hwaccel = plain  # type: ignore[assignment]


def decode_threads_own_ctx(clip: str, n: int, hwaccel: str) -> tuple[int, float]:
    """``decode-threads`` with each decoder on a CUDA context of its own."""
    with _decoders_on_own_contexts():
        return decode_threads(clip, n, hwaccel)


def import_own_ctx(clip: str, n: int, hwaccel: str) -> tuple[int, float]:
    """``import-queue`` with each decoder on a CUDA context of its own (the copy reads across contexts)."""
    with _decoders_on_own_contexts():
        return import_queue_order(clip, n, hwaccel)


def _synchronized_dawn_device() -> Any:
    """A wgpudawn device like Device.open's, plus 'implicit-device-synchronization' (Dawn's device-wide
    mutex), which makes calling it from several threads legal."""
    import wgpudawn

    from alpha2.gpu.webgpu import FEATURE_SHARED_FENCE_OPAQUE_FD, FEATURE_SHARED_TEXTURE_OPAQUE_FD
    from alpha2.native_gpu.device.device import Device

    adapter = wgpudawn.gpu.request_adapter_sync(power_preference="high-performance")
    have = {str(f) for f in adapter.features}
    wanted = [
        FEATURE_SHARED_TEXTURE_OPAQUE_FD,
        FEATURE_SHARED_FENCE_OPAQUE_FD,
        "implicit-device-synchronization",
        "unorm16-texture-formats",
    ]
    missing = [f for f in wanted[:3] if f not in have]
    if missing:
        raise RuntimeError(f"the wgpudawn adapter lacks {missing}")
    return Device.adopt(adapter.request_device_sync(required_features=[f for f in wanted if f in have]))


def import_threads(clip: str, n: int, hwaccel: str) -> tuple[int, float]:
    """Decode + import with each stream imported on a thread of its own (experimental: a Dawn device
    with implicit device synchronization), leases released at once."""
    device = _synchronized_dawn_device()
    with StreamGroup(
        [clip] * n, hwaccel=hwaccel, device=device, budget=SurfaceBudget(max_surfaces=2 * n)
    ) as group:

        def drive(stream: Any) -> int:
            count = 0
            for frame in iter(stream.decoder.next_frame, None):
                stream.importer.import_frame(frame).release()
                count += 1
            return count

        result = _run_together([functools.partial(drive, stream) for stream in group.streams])
        group.device.webgpu_device.queue.submit([])
        return result


def wall(clip: str, n: int, hwaccel: str, decoders: str = "threads") -> tuple[int, float]:
    """Decode + import + one composed grid render (one submit) per tick."""
    with StreamGroup([clip] * n, hwaccel=hwaccel, decoders=decoders) as group:
        t0 = time.perf_counter()
        group.run()
        group.drain()
        seconds = time.perf_counter() - t0
        return sum(s.frames_shown for s in group.streams), seconds


def wall_check(
    clip: str, n: int, hwaccel: str, rate: float = 30.0, preroll: bool = True, decoders: str = "threads"
) -> dict[str, Any]:
    """A wall paced at ``rate``: ticks at k / rate against the clock; late ticks and drops counted.

    The clock starts when the first tick has shown every stream's first frame, as a player's does
    (``first_tick_s``, from the group's opening, is reported apart: the decoders' start-up), after the
    group's pre-roll (``StreamGroup.preroll``: every decoder's queue filled, ``preroll_s``) unless
    ``preroll`` is False. ``decoders``: as StreamGroup's (``processes``: a decoder process a stream)."""
    with StreamGroup([clip] * n, hwaccel=hwaccel, decoders=decoders) as group:
        opened = time.perf_counter()
        group.tick(at_s=0.5 / rate)
        preroll_s = group.preroll() if preroll else 0.0
        t0 = time.perf_counter()
        first_tick_s = t0 - opened - preroll_s
        ticks, late = 1, 0
        late_at: list[int] = []
        # Each tick's own time, split as the group does (waiting for decoded frames, imports, render):
        # what a late tick was late for.
        spans: list[tuple[float, dict[str, float]]] = []
        while not group.finished:
            due = ticks / rate
            now = time.perf_counter() - t0
            if now < due:
                time.sleep(due - now)
            elif now > due + 1 / rate:
                late += 1
                late_at.append(ticks)
            before = dict(group.stages.seconds)
            start = time.perf_counter()
            group.tick(at_s=due + 0.5 / rate)  # mid-interval: pts rounding never lands two frames in a tick
            took = time.perf_counter() - start
            parts = {k: v - before.get(k, 0.0) for k, v in group.stages.seconds.items()}
            spans.append((took, {"at": ticks, **parts}))
            ticks += 1
        group.drain()
        seconds = time.perf_counter() - t0
        dropped = sum(s.frames_dropped for s in group.streams)
        durations = sorted(took for took, _ in spans)
        slowest = sorted(spans, key=lambda span: span[0], reverse=True)[:3]
        return {
            "ticks": ticks,
            "seconds": seconds,
            "fps": (ticks - 1) / seconds,  # the ticks after the first, which started the clock
            "late": late,
            "late_at": late_at[:12],
            "dropped": dropped,
            "first_tick_s": first_tick_s,
            "preroll_s": preroll_s,
            "tick_ms_median": 1e3 * durations[len(durations) // 2] if durations else 0.0,
            "tick_ms_p99": 1e3 * durations[int(len(durations) * 0.99)] if durations else 0.0,
            "ticks_over_interval": sum(1 for took in durations if took > 1 / rate),
            "slowest_ticks_ms": [
                {
                    "ms": round(1e3 * took, 1),
                    **{k: v if k == "at" else round(1e3 * v, 1) for k, v in parts.items()},
                }
                for took, parts in slowest
            ],
        }


MODES: dict[str, Callable[[str, int, str], tuple[int, float]]] = {
    "decode-threads": decode_threads,
    "decode-procs": decode_procs,
    "import": import_only,
    "import-inline": import_inline,
    "wall": wall,
    "import-queue": import_queue_order,
    "import-threads": import_threads,
    "decode-threads-own-ctx": decode_threads_own_ctx,
    "import-own-ctx": import_own_ctx,
    "import-procs": import_procs,
    "wall-procs": wall_procs,
}
DEFAULT_MODES = ("decode-threads", "decode-procs", "import", "import-procs", "wall", "wall-procs")
"""What a plain run measures; ``import-queue`` (the experimental release order) is asked for by name."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--streams", default="1,2,4,7,14,28", help="comma-separated N (default 1,2,4,7,14,28)"
    )
    parser.add_argument("--codecs", default="h264,hevc")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--frames", type=int, default=900, help="frames per session (default 900)")
    parser.add_argument("--hwaccel", default="cuda", help="cuda (default), auto or none")
    parser.add_argument(
        "--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated, of {', '.join(MODES)}"
    )
    parser.add_argument(
        "--wall-check", type=int, default=0, metavar="N", help="also pace an N-stream wall at 30 fps"
    )
    parser.add_argument(
        "--wall-decoders",
        default="threads",
        help="where the --wall-check wall decodes: threads (default), processes, or threads,processes",
    )
    parser.add_argument(
        "--no-preroll", action="store_true", help="start the wall's clock right after its first tick"
    )
    parser.add_argument(
        "--switch-interval",
        type=float,
        metavar="S",
        help="sys.setswitchinterval (default Python's 0.005): how long a thread may keep the GIL",
    )
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "alpha2_bench_streams"))
    args = parser.parse_args()
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    width, height = (int(v) for v in args.size.lower().split("x"))
    os.makedirs(args.dir, exist_ok=True)
    clips = make_clips(args.dir, args.codecs.split(","), Size(width, height), args.frames)
    modes = args.modes.split(",")
    counts = [int(v) for v in args.streams.split(",")]
    print(
        f"{args.size}, {args.frames} frames per session, hwaccel {args.hwaccel}, "
        f"switch interval {sys.getswitchinterval() * 1e3:g} ms"
    )
    print(f"{'codec':<6}{'N':>4}  " + "".join(f"{m:>16}" for m in modes) + "   ratios vs decode-threads")
    verdicts: list[str] = []
    for codec, clip in clips.items():
        for n in counts:
            fps: dict[str, float] = {}
            for mode in modes:
                try:
                    frames, seconds = MODES[mode](clip, n, args.hwaccel)
                except Exception as exc:  # one failed cell is reported; the others still run
                    print(f"{codec} N={n} {mode}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                    frames, seconds = 0, 0.0
                fps[mode] = frames / seconds if seconds > 0 else 0.0
            base = fps.get("decode-threads")
            ratios = "  ".join(f"{m} {fps[m] / base:.2f}" for m in modes if base and m != "decode-threads")
            print(
                f"{codec:<6}{n:>4}  " + "".join(f"{fps[m]:>16.1f}" for m in modes) + f"   {ratios}",
                flush=True,
            )
            for mode in ("import", "import-procs"):
                if codec == "h264" and n >= 14 and mode in fps and base:
                    ok = fps[mode] >= TARGET_FPS and fps[mode] / base >= TARGET_RATIO
                    verdicts.append(
                        f"h264 N={n}: {mode} {fps[mode]:.0f} fps (target >= {TARGET_FPS:.0f}), "
                        f"{fps[mode] / base:.2f} of decode alone in threads (target >= {TARGET_RATIO}): "
                        + ("met" if ok else "NOT met")
                    )
    for decoders in args.wall_decoders.split(",") if args.wall_check else ():
        codec = "hevc" if "hevc" in clips else next(iter(clips))
        result = wall_check(
            clips[codec], args.wall_check, args.hwaccel, preroll=not args.no_preroll, decoders=decoders
        )
        ok = result["late"] == 0 and result["dropped"] == 0 and result["fps"] >= 29.5
        verdicts.append(
            f"{codec} wall of {args.wall_check} at 30 fps, decoders in {decoders}: {result['fps']:.1f} fps, "
            f"{result['late']} late ticks, {result['dropped']} dropped frames (first tick "
            f"{result['first_tick_s'] * 1e3:.0f} ms after opening, then a pre-roll of "
            f"{result['preroll_s'] * 1e3:.0f} ms): " + ("met" if ok else "NOT met")
        )
        NOTES.append(
            f"wall ({decoders}) ticks: median {result['tick_ms_median']:.1f} ms, p99 "
            f"{result['tick_ms_p99']:.1f} ms, {result['ticks_over_interval']} longer than the interval; "
            f"late at ticks {result['late_at']}; slowest (ms, by stage) {result['slowest_ticks_ms']}"
        )
    for line in NOTES:
        print(line)
    for line in verdicts:
        print("target: " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
