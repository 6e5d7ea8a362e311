"""Why CUDA driver calls from Python threads get slow: GIL hand-off or driver-internal locks?

Under load (many Python threads busy in one process) a ``cuMemcpy2DAsync`` made from a Python thread has
been seen to take ~300 µs instead of ~27 µs. Two hypotheses:

* (A) GIL hand-off: cuda-python's ``cuda.bindings.driver`` functions release the GIL around every driver
  call, so each call pays a GIL re-acquisition while other threads hold it (up to the switch interval,
  5 ms by default, or until the holder blocks);
* (B) driver-internal lock contention between the threads of one process calling the driver at once.

Each worker thread does the same "frame copy" N times on a non-blocking stream of its own: a pitched
device-to-device ``cuMemcpy2DAsync`` for a 1920x1080 plane and one for a 1920x540 plane (pitch 2048),
``cuEventRecord``, one ``cuEventQuery`` (no wait), and a ``cuStreamSynchronize`` every 8 frames. The calls
are made in one of three ways:

* ``bindings``: cuda-python, a ``CUDA_MEMCPY2D`` filled in anew for every copy (as a naive user does);
  the GIL is released around each driver call;
* ``ctypes-nogil``: ``ctypes.CDLL("libcuda.so.1")``; ctypes releases the GIL around each call too;
* ``ctypes-gil``: ``ctypes.PyDLL("libcuda.so.1")``; the GIL stays held during the call, so there is no
  re-acquisition to pay, and the driver calls of the worker threads cannot overlap either.

``--busy K`` adds K threads of pure-Python work that, like decoder threads, drop the GIL briefly
(``time.sleep(0)``) about every 200 µs. Per-call times are wall times (``time.perf_counter_ns``) around the
call alone, so they include the GIL re-acquisition where the GIL was released.

How to read it:

* threads=1, busy=8: one thread calls the driver, so there is nothing for a driver lock to contend with.
  If ``bindings`` and ``ctypes-nogil`` calls go from tens to hundreds of µs while ``ctypes-gil`` stays as
  at busy=0, the time is the GIL hand-off (A).
* threads=14, busy=0: the driver is called from 14 threads at once. ``ctypes-gil`` serialises the calls
  (no driver contention possible), ``ctypes-nogil`` lets them overlap. Per-call times of ``ctypes-nogil``
  growing with the thread count while ``ctypes-gil`` stays flat point at (B) (or at GIL hand-off between
  the copy threads themselves; compare with the busy=8 rows).
* ``bindings`` against ``ctypes-nogil``: the same GIL behaviour, so a difference is the bindings' own
  Python-side cost (argument conversion, the result enum, the struct filled in).
* ``ctypes-gil`` per-call times are not always the bare driver cost: the interpreter can still hand the
  GIL to a waiting thread between the bytecodes inside the timed region (after the switch interval), so
  with many threads they include the odd multi-ms wait. Its frames/s is the serialised driver's rate.

Each (busy, threads, way) run stops at ``--iterations`` frames per thread or after ``--max-seconds``,
whichever comes first (the ``frames`` column says how many were done). Needs an NVIDIA GPU, the driver and
cuda-python; numpy for the start-up check that the ctypes struct copies what it should.

    python3 benchmarks/bench_cuda_calls.py --threads 1,4,14 --busy 0,8
    python3 benchmarks/bench_cuda_calls.py --threads 14 --busy 8 --switch-interval 0.0005
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

WIDTH = 1920
HEIGHT = 1080
CHROMA_HEIGHT = 540
PITCH = 2048
PLANE_ROWS = (HEIGHT, CHROMA_HEIGHT)
PLANE_OFFSETS = (0, PITCH * HEIGHT)
BUFFER_BYTES = PITCH * (HEIGHT + CHROMA_HEIGHT)
SYNC_EVERY = 8
WARMUP_FRAMES = 16

CU_STREAM_NON_BLOCKING = 1
CU_EVENT_DISABLE_TIMING = 2
CU_MEMORYTYPE_DEVICE = 2
CUDA_SUCCESS = 0
CUDA_ERROR_NOT_READY = 600

BUSY_YIELD_NS = 200_000
BUSY_DATA = tuple(range(32))

WAYS = ("bindings", "ctypes-nogil", "ctypes-gil")
LIBCUDA = "libcuda.so.1"


class CudaCallError(RuntimeError):
    """A driver call returned something other than CUDA_SUCCESS (or NOT_READY where that is allowed)."""


class CUDA_MEMCPY2D(ctypes.Structure):
    """``CUDA_MEMCPY2D_v2`` as in cuda.h (64-bit: 128 bytes)."""

    _fields_ = (
        ("srcXInBytes", ctypes.c_size_t),
        ("srcY", ctypes.c_size_t),
        ("srcMemoryType", ctypes.c_int),  # CUmemorytype
        ("srcHost", ctypes.c_void_p),
        ("srcDevice", ctypes.c_uint64),  # CUdeviceptr
        ("srcArray", ctypes.c_void_p),  # CUarray
        ("srcPitch", ctypes.c_size_t),
        ("dstXInBytes", ctypes.c_size_t),
        ("dstY", ctypes.c_size_t),
        ("dstMemoryType", ctypes.c_int),
        ("dstHost", ctypes.c_void_p),
        ("dstDevice", ctypes.c_uint64),
        ("dstArray", ctypes.c_void_p),
        ("dstPitch", ctypes.c_size_t),
        ("WidthInBytes", ctypes.c_size_t),
        ("Height", ctypes.c_size_t),
    )


# --- cuda-python helpers ------------------------------------------------------------------------------


def import_driver() -> Any:
    """``cuda.bindings.driver`` (cuda-python >= 12.6), else the older ``cuda.cuda``."""
    try:
        return importlib.import_module("cuda.bindings.driver")
    except ImportError:
        return importlib.import_module("cuda.cuda")


def cuda_python_version() -> str:
    from importlib import metadata

    for dist in ("cuda-python", "cuda-bindings"):
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def check(result: Any, what: str) -> Any:
    """Unpack cuda-python's ``(CUresult, *values)``; raise unless CUDA_SUCCESS."""
    err, values = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if int(err) != CUDA_SUCCESS:
        raise CudaCallError(f"{what} failed: {getattr(err, 'name', err)} ({int(err)})")
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def handle_value(obj: Any) -> int:
    """The raw handle a cuda-python object wraps: the pointer of a CUstream / CUevent / CUcontext, the
    address of a CUdeviceptr. ``int(obj)`` is that value; ``getPtr()`` is the address of the object's own
    storage for it, so it has to be dereferenced. Where both work they are checked against each other."""
    via_storage = None
    if hasattr(obj, "getPtr"):
        via_storage = ctypes.c_uint64.from_address(int(obj.getPtr())).value
    try:
        value = int(obj)
    except TypeError:
        if via_storage is None:
            raise
        return via_storage
    if via_storage is not None and via_storage != value:
        raise CudaCallError(f"{type(obj).__name__}: int() gives {value:#x}, getPtr() holds {via_storage:#x}")
    return value


@dataclass(frozen=True)
class Resources:
    """One worker thread's stream, event and buffers (cuda-python objects and their raw values)."""

    stream: Any
    event: Any
    src: Any
    dst: Any
    stream_h: int
    event_h: int
    src_h: int
    dst_h: int


def create_resources(cu: Any, count: int) -> list[Resources]:
    made = []
    for _ in range(count):
        stream = check(cu.cuStreamCreate(CU_STREAM_NON_BLOCKING), "cuStreamCreate")
        event = check(cu.cuEventCreate(CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        src = check(cu.cuMemAlloc(BUFFER_BYTES), "cuMemAlloc")
        dst = check(cu.cuMemAlloc(BUFFER_BYTES), "cuMemAlloc")
        check(cu.cuMemsetD8(src, 0x5A, BUFFER_BYTES), "cuMemsetD8")
        handles = [handle_value(x) for x in (stream, event, src, dst)]
        if not all(handles):
            raise CudaCallError(f"a null handle among stream/event/src/dst: {handles}")
        made.append(Resources(stream, event, src, dst, *handles))
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize")  # the memsets are on the legacy stream
    return made


def free_resources(cu: Any, resources: Sequence[Resources]) -> None:
    for res in resources:
        check(cu.cuStreamSynchronize(res.stream), "cuStreamSynchronize")
        check(cu.cuStreamDestroy(res.stream), "cuStreamDestroy")
        check(cu.cuEventDestroy(res.event), "cuEventDestroy")
        check(cu.cuMemFree(res.src), "cuMemFree")
        check(cu.cuMemFree(res.dst), "cuMemFree")


# --- the three ways of making the calls ---------------------------------------------------------------


@dataclass(frozen=True)
class FrameCalls:
    """One thread's per-frame calls for one way: the raw callables, their handle arguments, ``params``
    (plane -> the copy's parameters) and ``code`` (a call's return value -> CUresult as an int)."""

    set_current: Callable[[], Any]
    memcpy: Callable[[Any, Any], Any]
    record: Callable[[Any, Any], Any]
    query: Callable[[Any], Any]
    sync: Callable[[Any], Any]
    stream: Any
    event: Any
    params: Callable[[int], Any]
    code: Callable[[Any], int]


def _bindings_code(result: Any) -> int:
    return int(result[0])


def _ctypes_code(result: int) -> int:
    return result


def bindings_calls(cu: Any, ctx: Any, res: Resources) -> FrameCalls:
    device = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
    srcs = [res.src_h + off for off in PLANE_OFFSETS]
    dsts = [res.dst_h + off for off in PLANE_OFFSETS]

    def params(plane: int) -> Any:
        p = cu.CUDA_MEMCPY2D()
        p.srcMemoryType = device
        p.srcDevice = srcs[plane]
        p.srcPitch = PITCH
        p.dstMemoryType = device
        p.dstDevice = dsts[plane]
        p.dstPitch = PITCH
        p.WidthInBytes = WIDTH
        p.Height = PLANE_ROWS[plane]
        return p

    return FrameCalls(
        set_current=lambda: cu.cuCtxSetCurrent(ctx),
        memcpy=cu.cuMemcpy2DAsync,
        record=cu.cuEventRecord,
        query=cu.cuEventQuery,
        sync=cu.cuStreamSynchronize,
        stream=res.stream,
        event=res.event,
        params=params,
        code=_bindings_code,
    )


@dataclass(frozen=True)
class CtypesDriver:
    """The five driver functions the frame loop needs, from a CDLL (GIL released) or a PyDLL (GIL held)."""

    ctx_set_current: Any
    memcpy2d_async: Any
    event_record: Any
    event_query: Any
    stream_synchronize: Any


def load_ctypes_driver(hold_gil: bool) -> CtypesDriver:
    lib = ctypes.PyDLL(LIBCUDA) if hold_gil else ctypes.CDLL(LIBCUDA)
    signatures = {
        "cuCtxSetCurrent": [ctypes.c_void_p],
        "cuMemcpy2DAsync_v2": [ctypes.POINTER(CUDA_MEMCPY2D), ctypes.c_void_p],
        "cuEventRecord": [ctypes.c_void_p, ctypes.c_void_p],
        "cuEventQuery": [ctypes.c_void_p],
        "cuStreamSynchronize": [ctypes.c_void_p],
    }
    funcs = []
    for name, argtypes in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int  # CUresult
        funcs.append(fn)
    return CtypesDriver(*funcs)


def copy_struct(src: int, dst: int, rows: int) -> CUDA_MEMCPY2D:
    return CUDA_MEMCPY2D(
        srcMemoryType=CU_MEMORYTYPE_DEVICE,
        srcDevice=src,
        srcPitch=PITCH,
        dstMemoryType=CU_MEMORYTYPE_DEVICE,
        dstDevice=dst,
        dstPitch=PITCH,
        WidthInBytes=WIDTH,
        Height=rows,
    )


def ctypes_calls(lib: CtypesDriver, ctx_h: int, res: Resources) -> FrameCalls:
    structs = [
        copy_struct(res.src_h + off, res.dst_h + off, rows) for off, rows in zip(PLANE_OFFSETS, PLANE_ROWS)
    ]
    pointers = [ctypes.pointer(s) for s in structs]  # keeps ``structs`` alive too
    ctx = ctypes.c_void_p(ctx_h)
    return FrameCalls(
        set_current=lambda: lib.ctx_set_current(ctx),
        memcpy=lib.memcpy2d_async,
        record=lib.event_record,
        query=lib.event_query,
        sync=lib.stream_synchronize,
        stream=ctypes.c_void_p(res.stream_h),
        event=ctypes.c_void_p(res.event_h),
        params=pointers.__getitem__,
        code=_ctypes_code,
    )


# --- the measured loop --------------------------------------------------------------------------------


@dataclass
class ThreadStats:
    frames: int = 0
    memcpy_ns: int = 0
    memcpy_calls: int = 0
    query_ns: int = 0
    query_calls: int = 0


def result_name(code: int) -> str:
    try:
        return str(import_driver().CUresult(code).name)
    except Exception:
        return f"CUresult({code})"


def fail(what: str, code: int) -> NoReturn:
    raise CudaCallError(f"{what} failed: {result_name(code)} ({code})")


def frame_loop(calls: FrameCalls, frames: int, deadline_ns: int | None, stats: ThreadStats) -> None:
    """``frames`` frame copies (or fewer, if ``deadline_ns`` passes first) with per-call timing."""
    clock = time.perf_counter_ns
    memcpy, record, query, sync = calls.memcpy, calls.record, calls.query, calls.sync
    stream, event, params, code = calls.stream, calls.event, calls.params, calls.code
    memcpy_ns = query_ns = 0
    done = 0
    while done < frames:
        for plane in (0, 1):
            p = params(plane)
            t0 = clock()
            r = memcpy(p, stream)
            memcpy_ns += clock() - t0
            if c := code(r):
                fail("cuMemcpy2DAsync", c)
        if c := code(record(event, stream)):
            fail("cuEventRecord", c)
        t0 = clock()
        r = query(event)
        query_ns += clock() - t0
        if (c := code(r)) and c != CUDA_ERROR_NOT_READY:
            fail("cuEventQuery", c)
        done += 1
        if done % SYNC_EVERY == 0:
            if c := code(sync(stream)):
                fail("cuStreamSynchronize", c)
            if deadline_ns is not None and clock() > deadline_ns:
                break
    if c := code(sync(stream)):
        fail("cuStreamSynchronize", c)
    stats.frames += done
    stats.memcpy_ns += memcpy_ns
    stats.memcpy_calls += 2 * done
    stats.query_ns += query_ns
    stats.query_calls += done


def busy_loop(stop: threading.Event, rates: list[float], index: int) -> None:
    """Pure-Python work, dropping the GIL (``time.sleep(0)``) about every BUSY_YIELD_NS, like a decoder;
    ``rates[index]`` becomes its loops per second."""
    clock = time.perf_counter_ns
    data = list(BUSY_DATA)
    loops = 0
    started = clock()
    next_yield = started + BUSY_YIELD_NS
    while not stop.is_set():
        sum(data)
        loops += 1
        if clock() >= next_yield:
            time.sleep(0)
            next_yield = clock() + BUSY_YIELD_NS
    rates[index] = loops * 1e9 / max(clock() - started, 1)


@dataclass(frozen=True)
class RunResult:
    way: str
    threads: int
    busy: int
    frames: int
    seconds: float
    memcpy_us: float
    query_us: float
    busy_loops_per_s: float

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0


def run_once(way: str, calls: Sequence[FrameCalls], busy: int, frames: int, max_seconds: float) -> RunResult:
    """All ``calls`` on threads of their own, started together, with ``busy`` busy threads alongside."""
    stop = threading.Event()
    busy_rates = [0.0] * busy
    busy_threads = [threading.Thread(target=busy_loop, args=(stop, busy_rates, i)) for i in range(busy)]
    stats = [ThreadStats() for _ in calls]
    errors: list[BaseException] = []
    deadline = [0]

    def start_clock() -> None:  # run once, when all have reached the barrier
        deadline[0] = time.perf_counter_ns() + int(max_seconds * 1e9)

    barrier = threading.Barrier(len(calls) + 1, action=start_clock)

    def worker(index: int) -> None:
        try:
            try:
                own = calls[index]
                if c := own.code(own.set_current()):
                    fail("cuCtxSetCurrent", c)
                frame_loop(own, WARMUP_FRAMES, None, ThreadStats())
            finally:
                barrier.wait()
            frame_loop(own, frames, deadline[0], stats[index])
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(len(calls))]
    for t in busy_threads:
        t.start()
    try:
        for t in workers:
            t.start()
        barrier.wait()
        t0 = time.perf_counter()
        for t in workers:
            t.join()
        seconds = time.perf_counter() - t0
    finally:
        stop.set()
        for t in busy_threads:
            t.join()
    if errors:
        raise errors[0]
    memcpy_calls = sum(s.memcpy_calls for s in stats)
    query_calls = sum(s.query_calls for s in stats)
    return RunResult(
        way=way,
        threads=len(calls),
        busy=busy,
        frames=sum(s.frames for s in stats),
        seconds=seconds,
        memcpy_us=sum(s.memcpy_ns for s in stats) / max(memcpy_calls, 1) / 1e3,
        query_us=sum(s.query_ns for s in stats) / max(query_calls, 1) / 1e3,
        busy_loops_per_s=sum(busy_rates),
    )


# --- start-up check and report ------------------------------------------------------------------------


def verify_way(cu: Any, calls: FrameCalls, res: Resources) -> None:
    """One frame copy through ``calls`` into a cleared destination; the copied bytes must be the source's
    pattern and the pitch padding must be untouched (this checks the ctypes struct layout)."""
    import numpy as np

    check(cu.cuMemsetD8(res.dst, 0, BUFFER_BYTES), "cuMemsetD8")
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize")  # legacy stream; ours does not wait for it
    if c := calls.code(calls.set_current()):
        fail("cuCtxSetCurrent", c)
    frame_loop(calls, 1, None, ThreadStats())
    host = np.empty((HEIGHT + CHROMA_HEIGHT, PITCH), dtype=np.uint8)
    check(cu.cuMemcpyDtoH(host.ctypes.data, res.dst, BUFFER_BYTES), "cuMemcpyDtoH")
    if not (host[:, :WIDTH] == 0x5A).all() or host[:, WIDTH:].any():
        raise CudaCallError("the copy check failed: the destination is not the pitched source")


def print_header(cu: Any, device: Any) -> None:
    interval_ms = sys.getswitchinterval() * 1e3
    print(f"python {sys.version.split()[0]} ({sys.implementation.name}), switch interval {interval_ms:g} ms")
    print(f"cuda-python: {cuda_python_version()} ({cu.__name__})")
    version = int(check(cu.cuDriverGetVersion(), "cuDriverGetVersion"))
    print(f"driver: CUDA {version // 1000}.{version % 1000 // 10} ({version})")
    name = bytes(check(cu.cuDeviceGetName(256, device), "cuDeviceGetName")).split(b"\0", 1)[0]
    print(f"gpu: {name.decode(errors='replace')}")


ROW = "{:<13} {:>7} {:>5} {:>8} {:>10} {:>12} {:>11} {:>13}"


def print_row(r: RunResult) -> None:
    print(
        ROW.format(
            r.way,
            r.threads,
            r.busy,
            r.frames,
            f"{r.frames_per_s:,.0f}",
            f"{r.memcpy_us:.1f}",
            f"{r.query_us:.1f}",
            f"{r.busy_loops_per_s / 1e3:,.0f}",
        ),
        flush=True,
    )


def print_ratios(results: Sequence[RunResult]) -> None:
    by_key = {(r.threads, r.busy, r.way): r for r in results}
    for threads, busy in sorted({(r.threads, r.busy) for r in results}, key=lambda k: (k[1], k[0])):
        base = by_key.get((threads, busy, "bindings"))
        if base is None or base.frames_per_s <= 0:
            continue
        parts = [
            f"{way} / bindings {by_key[(threads, busy, way)].frames_per_s / base.frames_per_s:.2f}x"
            for way in ("ctypes-gil", "ctypes-nogil")
            if (threads, busy, way) in by_key
        ]
        if parts:
            print(f"ratio threads={threads} busy={busy}: " + ", ".join(parts))


# --- main ---------------------------------------------------------------------------------------------


def int_list(text: str) -> list[int]:
    values = [int(x) for x in text.split(",") if x.strip()]
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of counts, got {text!r}")
    return values


def way_list(text: str) -> list[str]:
    ways = [x.strip() for x in text.split(",") if x.strip()]
    unknown = sorted(set(ways) - set(WAYS))
    if not ways or unknown:
        raise argparse.ArgumentTypeError(f"ways are {', '.join(WAYS)}; got {text!r}")
    return ways


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="CUDA driver call cost from Python threads: cuda-python against ctypes with and "
        "without the GIL, with busy Python threads alongside (GIL hand-off or driver locks?).",
        epilog="example: python3 benchmarks/bench_cuda_calls.py --threads 1,4,14 --busy 0,8",
    )
    parser.add_argument("--threads", type=int_list, default=[1, 4, 14], help="copy threads (default 1,4,14)")
    parser.add_argument(
        "--ways", type=way_list, default=list(WAYS), help=f"call paths (default {','.join(WAYS)})"
    )
    parser.add_argument("--iterations", type=int, default=2000, help="frames per thread (default 2000)")
    parser.add_argument("--busy", type=int_list, default=[0, 8], help="busy Python threads (default 0,8)")
    parser.add_argument("--switch-interval", type=float, default=None, help="sys.setswitchinterval, seconds")
    parser.add_argument(
        "--max-seconds", type=float, default=2.0, help="cap on each run's measured time (default 2.0)"
    )
    args = parser.parse_args(argv)
    if min(args.threads) < 1 or args.iterations < 1 or args.max_seconds <= 0:
        parser.error("--threads and --iterations must be >= 1 and --max-seconds > 0")
    return args


def open_driver() -> tuple[Any, Any, Any]:
    """cuda-python's driver module, device 0 and its retained primary context; exits 2 if unusable."""
    try:
        cu = import_driver()
    except ImportError:
        print("error: cuda-python is not installed (pip install cuda-python)", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        check(cu.cuInit(0), "cuInit")
        device = check(cu.cuDeviceGet(0), "cuDeviceGet")
        ctx = check(cu.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
        ctypes.CDLL(LIBCUDA)
    except (CudaCallError, OSError, RuntimeError) as exc:
        print(f"error: no usable CUDA driver or device: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return cu, device, ctx


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    if ctypes.sizeof(CUDA_MEMCPY2D) != 128:
        raise SystemExit(f"error: CUDA_MEMCPY2D is {ctypes.sizeof(CUDA_MEMCPY2D)} bytes, expected 128")
    cu, device, ctx = open_driver()
    resources: list[Resources] = []
    try:
        check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        print_header(cu, device)
        ctx_h = handle_value(ctx)
        resources = create_resources(cu, max(args.threads))
        libs = {"ctypes-nogil": load_ctypes_driver(False), "ctypes-gil": load_ctypes_driver(True)}

        def make_calls(way: str, res: Resources) -> FrameCalls:
            return bindings_calls(cu, ctx, res) if way == "bindings" else ctypes_calls(libs[way], ctx_h, res)

        for way in args.ways:
            verify_way(cu, make_calls(way, resources[0]), resources[0])
        print(
            f"copy check passed for {', '.join(args.ways)}; {args.iterations} frames per thread, "
            f"at most {args.max_seconds:g} s per run\n"
        )
        print(
            ROW.format(
                "way", "threads", "busy", "frames", "frames/s", "memcpy µs", "query µs", "busy kloop/s"
            )
        )
        results = []
        for busy in args.busy:
            for threads in args.threads:
                for way in args.ways:
                    calls = [make_calls(way, res) for res in resources[:threads]]
                    result = run_once(way, calls, busy, args.iterations, args.max_seconds)
                    print_row(result)
                    results.append(result)
        print()
        print_ratios(results)
    finally:
        check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        free_resources(cu, resources)
        check(cu.cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease")
    return 0


if __name__ == "__main__":
    sys.exit(main())
