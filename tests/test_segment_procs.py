"""Segment-parallel decoding with the sessions in decoder processes (``SegmentReader(decoders='processes')``)
gives what one session gives, frame by frame; failures arrive typed; nothing is left behind.

Software frames go through real decoder processes and shared host pages. The NVDEC path (blocks of
device memory shared through :mod:`alpha2.native_gpu._cuda.ipc`) runs here with the decoder process in a
thread of this process and fakes of the CUDA pieces (device memory is memfd pages at made-up addresses);
the real thing, on NVDEC, is the test marked ``cuda`` and ``nvidia``.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.api import segment_worker, segments
from alpha2.api.devices import open_decoder
from alpha2.api.segments import SegmentReader
from alpha2.ffmpeg_bridge.errors import DecodeError, MediaNotFoundError, UnsupportedCodecError
from alpha2.gpu import frames as frames_module
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet, CudaPtr2D, OwnedFd
from alpha2.gpu.surfaces import SurfaceBudgetError
from alpha2.native_gpu._cuda import ipc
from alpha2.native_gpu.device.waits import gpu_wait_timeout, set_gpu_wait_timeout
from tests.media import child_processes
from tests.test_segments import _X264_CLOSED, _X264_OPEN, _X265_OPEN, SEGMENT_CLIPS, encode, one_session

Planes = list[tuple[int | None, list[bytes]]]


def _workers() -> set[int]:
    """Segment decoder processes that are children of this one."""
    return child_processes("alpha2.api.segment_worker")


def _fds() -> int:
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def read_all(reader: SegmentReader) -> Planes:
    out = []
    for frame in reader:
        with frame:
            out.append((frame.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
    return out


def in_processes(path: str, sessions: int, **options: Any) -> tuple[Planes, Any]:
    options.setdefault("hwaccel", "none")
    with SegmentReader(path, sessions=sessions, decoders="processes", **options) as reader:
        return read_all(reader), reader.report


@pytest.mark.parametrize(("name", "codec", "params", "vfr"), SEGMENT_CLIPS)
def test_process_segments_equal_one_session(
    tmp_path: Path, name: str, codec: str, params: str, vfr: bool
) -> None:
    path = encode(tmp_path / name, codec, params, vfr=vfr)
    reference = one_session(path)
    assert len(reference) == 90
    for sessions in (2, 3):
        frames, report = in_processes(path, sessions, min_packets=12)
        assert report.sessions == sessions and report.chunks >= 4, report
        assert report.decoders == "processes" and report.as_dict()["decoders"] == "processes"
        assert [pts for pts, _ in frames] == [pts for pts, _ in reference]
        for (pts, planes), (_, expected) in zip(frames, reference):
            assert planes == expected, f"frame at pts {pts} differs ({name}, {sessions} processes)"
        assert report.frames == len(reference) and report.pooled == 0
        assert len(report.hwaccel) == sessions and all(h["active"] == "none" for h in report.hwaccel)
        assert {"decode", "pool", "queue", "wait"} <= set(report.stages)
    assert not _workers()


def test_frames_are_their_own_and_one_chunk_is_one_process(tmp_path: Path) -> None:
    path = encode(tmp_path / "short.mp4", "libx264", _X264_CLOSED, frames=20)
    frames, report = in_processes(path, 4)
    assert report.sessions == 1 and "one session" in report.reason and len(frames) == 20
    path = encode(tmp_path / "ids.mp4", "libx264", _X264_CLOSED, frames=60)
    with SegmentReader(path, sessions=3, hwaccel="none", min_packets=10, decoders="processes") as reader:
        ids = set()
        for frame in reader:
            with frame:
                assert not frame.on_gpu and frame.cuda_stream is None
                ids.add(frame.identity.decoder_id)
        assert len(ids) == 3  # one decoder id per process, from this process's numbering


def test_bad_values_are_refused(tmp_path: Path) -> None:
    path = encode(tmp_path / "f.mp4", "libx264", _X264_CLOSED, frames=20)
    with pytest.raises(InvalidInputError, match="'threads' or 'processes'"):
        SegmentReader(path, sessions=2, decoders="fibers")
    with open(path, "rb") as handle, pytest.raises(InvalidInputError, match="give a path"):
        SegmentReader(handle, sessions=2, decoders="processes")


def test_an_error_opening_in_a_process_is_typed_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = encode(tmp_path / "real.mp4", "libx264", _X264_CLOSED, frames=60)
    index = segments.keyframe_index(real)
    # The reader plans from a file that is there; its decoder processes open one that is not.
    monkeypatch.setattr(segments, "keyframe_index", lambda source, stream_index=None: index)
    fds = _fds()
    with pytest.raises(MediaNotFoundError):
        SegmentReader(
            str(tmp_path / "gone.mp4"), sessions=2, hwaccel="none", min_packets=10, decoders="processes"
        )
    assert not _workers()
    assert _fds() == fds


def test_a_killed_process_is_a_decode_error_naming_it(tmp_path: Path) -> None:
    path = encode(tmp_path / "k.mp4", "libx264", _X264_CLOSED, frames=120)
    reader = SegmentReader(path, sessions=3, hwaccel="none", ahead=2, min_packets=10, decoders="processes")
    try:
        first = reader.next_frame()
        assert first is not None
        first.release()
        victim = reader._procs._links[1].process  # type: ignore[union-attr]
        assert victim is not None and victim.poll() is None  # held back: it may have 4 frames here
        os.kill(victim.pid, signal.SIGKILL)
        start = time.monotonic()
        with pytest.raises(DecodeError, match=r"segment decoder process 1 .* ended unexpectedly"):
            while (frame := reader.next_frame()) is not None:
                frame.release()
        assert time.monotonic() - start < 10
        assert reader.report.frames >= 10  # chunk 0 came whole, and what process 1 sent before it died
    finally:
        reader.close()
    with pytest.raises(ClosedError):
        reader.next_frame()
    assert not _workers()


def test_buffers_are_bounded_and_close_leaves_no_process_fd_or_mapping(tmp_path: Path) -> None:
    path = encode(tmp_path / "b.mp4", "libx264", _X264_CLOSED, frames=120)
    in_processes(path, 2, min_packets=10)  # whatever is made once per process (imports, caches)
    fds = _fds()
    reader = SegmentReader(path, sessions=3, hwaccel="none", ahead=2, min_packets=10, decoders="processes")
    assert len(_workers()) == 3
    held = [reader.next_frame() for _ in range(3)]
    assert all(f is not None for f in held)
    time.sleep(0.5)
    reader.next_frame()  # (dropped at once) takes in what the processes sent meanwhile
    procs = reader._procs
    assert procs is not None
    for link in procs._links:
        assert len(link.held) <= 4  # 2 x ahead: each process waits for its frames to come back
    kept = held[1]
    assert kept is not None
    expected = [a.copy() for a in kept.plane_arrays()]
    array = kept.plane_arrays()[0]
    reader.close()
    assert not _workers()
    # A frame held across close stays valid (its slot is let go with it), and so does an array of it.
    assert all(np.array_equal(a, b) for a, b in zip(kept.plane_arrays(), expected))
    for frame in held:
        assert frame is not None
        frame.release()
    del frame, kept, held
    assert np.array_equal(array, expected[0])
    del array
    assert _fds() == fds


def test_frames_held_too_long_stop_the_reader_with_a_budget_error(tmp_path: Path) -> None:
    path = encode(tmp_path / "s.mp4", "libx264", _X264_CLOSED, frames=60)
    before = gpu_wait_timeout()
    set_gpu_wait_timeout(0.5)
    try:
        with SegmentReader(
            path, sessions=2, hwaccel="none", ahead=1, min_packets=10, decoders="processes"
        ) as r:
            held = [r.next_frame(), r.next_frame()]  # both of process 0's slots
            start = time.monotonic()
            with pytest.raises(SurfaceBudgetError, match="release frames you hold"):
                r.next_frame()
            assert time.monotonic() - start < 5
            for frame in held:
                assert frame is not None
                frame.release()
    finally:
        set_gpu_wait_timeout(before)
    assert not _workers()


# -- the decoder process in a thread of this process, over fakes -------------------------------------------


class FakeGpu:
    """Device memory as pages at made-up addresses (mmaps), so that copies and reads can find them."""

    def __init__(self) -> None:
        self.ranges: dict[int, Any] = {}
        self.next = 1 << 40
        self.imports = 0  # ImportedMemory mappings alive

    def add(self, buffer: Any) -> int:
        base = self.next
        self.next += (len(buffer) // (1 << 20) + 2) << 20
        self.ranges[base] = buffer
        return base

    def remove(self, base: int) -> None:
        del self.ranges[base]

    def view(self, address: int, size: int) -> memoryview:
        for base, buffer in self.ranges.items():
            if base <= address and address + size <= base + len(buffer):
                return memoryview(buffer)[address - base : address - base + size]
        raise AssertionError(f"no fake device memory at {address:#x}+{size}")

    def rows(self, address: int, pitch: int, width: int, height: int) -> np.ndarray:
        data = np.frombuffer(self.view(address, pitch * (height - 1) + width), np.uint8)
        return np.lib.stride_tricks.as_strided(data, (height, width), (pitch, 1))


class FakeMemory:
    def __init__(self, gpu: FakeGpu, fd: int, size: int) -> None:
        self.gpu = gpu
        self.fd = fd
        self.map = mmap.mmap(fd, size)
        self.pointer = gpu.add(self.map)
        self.size_bytes = size

    def close(self) -> None:
        if self.map is not None:
            self.gpu.remove(self.pointer)
            self.map.close()
            self.map = None


class FakeCuda:
    """Stand-ins for alpha2.native_gpu._cuda.ipc (and the planes' host copies), on a FakeGpu."""

    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu
        self.copies = 0
        self.exported = 0

    def ExportedMemory(self, ordinal: int, size_bytes: int) -> Any:
        size = -(-size_bytes // (1 << 16)) << 16  # a granularity
        fd = os.memfd_create("fake-block", os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        memory = FakeMemory(self.gpu, fd, size)
        memory.export_fd = lambda: OwnedFd(os.dup(fd))  # type: ignore[attr-defined]
        closing = memory.close

        def close() -> None:
            closing()
            if memory.fd >= 0:
                os.close(memory.fd)
                memory.fd = -1

        memory.close = close  # type: ignore[method-assign]
        self.exported += 1
        return memory

    def ImportedMemory(self, ordinal: int, fd: OwnedFd, size_bytes: int) -> Any:
        try:
            memory = FakeMemory(self.gpu, fd.fileno(), size_bytes)
        finally:
            fd.close()
        memory.ordinal = ordinal  # type: ignore[attr-defined]
        self.gpu.imports += 1
        closing = memory.close

        def close() -> None:
            if memory.map is not None:
                self.gpu.imports -= 1
            closing()

        memory.close = close  # type: ignore[method-assign]
        return memory

    def BlockCopier(self, ordinal: int) -> Any:
        cuda = self

        class Copier:
            context = contextlib.nullcontext()

            def copy(
                self, planes: Sequence[CudaPtr2D], stream: Any, dst: int, layout: ipc.BlockLayout
            ) -> Any:
                cuda.copies += 1
                if layout.together:
                    first = planes[0]
                    width = max(p.width_bytes for p in planes)
                    rows = sum(p.height for p in planes)
                    pairs = [(first.device_ptr, first.pitch_bytes, dst, layout.pitches[0], width, rows)]
                else:
                    pairs = [
                        (p.device_ptr, p.pitch_bytes, dst + off, pitch, p.width_bytes, p.height)
                        for p, off, pitch in zip(planes, layout.offsets, layout.pitches)
                    ]
                for src, src_pitch, to, to_pitch, width, rows in pairs:
                    target = cuda.gpu.rows(to, to_pitch, width, rows)
                    target[...] = cuda.gpu.rows(src, src_pitch, width, rows)
                return FakeEvent()

            def recycle(self, event: Any) -> None:
                pass

            def close(self) -> None:
                pass

        return Copier()

    def download_planes(self, planes: tuple[CudaPtr2D, ...], stream: int | None) -> CpuPlaneSet:
        return CpuPlaneSet(
            tuple(
                CpuPlane(
                    data=bytearray(
                        self.gpu.rows(p.device_ptr, p.pitch_bytes, p.width_bytes, p.height).tobytes()
                    ),
                    bytes_per_row=p.width_bytes,
                    width_bytes=p.width_bytes,
                    height=p.height,
                )
                for p in planes
            )
        )

    def order_consumer_stream(self, ordinal: int, producer: int, consumer: int | None) -> None:
        pass


class FakeEvent:
    def query(self) -> bool:
        return True

    def wait(self, timeout_s: float, what: str = "") -> None:
        pass


class FakeNvdecSession:
    """A software session whose frames come out as 'CUDA' frames in FakeGpu memory, as NVDEC's do: planes
    back to back with one pitch (``together``), or each in an allocation of its own."""

    def __init__(self, gpu: FakeGpu, options: dict[str, Any], together: bool, fail_after: int | None) -> None:
        self.inner = open_decoder(options["source"], None, hwaccel="none")
        self.gpu = gpu
        self.together = together
        self.fail_after = fail_after
        self.hwaccel_report = self.inner.hwaccel_report
        self.stats = self.inner.stats
        self.out = 0

    def seek(self, seconds: float) -> None:
        self.inner.seek(seconds)

    def next_frame(self) -> DecodedFrame | None:
        if self.fail_after is not None and self.out >= self.fail_after:
            raise UnsupportedCodecError("the fake decoder gave up")
        frame = self.inner.next_frame()
        if frame is None:
            return None
        self.out += 1
        with frame:
            arrays = [np.ascontiguousarray(a) for a in frame.plane_arrays()]
            widths = [a.shape[1] * (a.shape[2] if a.ndim == 3 else 1) * a.itemsize for a in arrays]
            pitch = -(-max(widths) // 64) * 64 + 64
            if self.together:
                store = bytearray(pitch * sum(a.shape[0] for a in arrays))
                bases = [self.gpu.add(store)]
                pointers = []
                offset = 0
                for a in arrays:
                    pointers.append(bases[0] + offset)
                    offset += pitch * a.shape[0]
                stores = [store]
            else:
                stores = [bytearray(pitch * a.shape[0] + 64) for a in arrays]
                bases = [self.gpu.add(store) for store in stores]
                pointers = [base + 64 for base in bases]
            planes = []
            for a, width, pointer in zip(arrays, widths, pointers):
                self.gpu.rows(pointer, pitch, width, a.shape[0])[...] = a.view(np.uint8).reshape(
                    a.shape[0], width
                )
                planes.append(CudaPtr2D(pointer, pitch, width, a.shape[0], 0, keep_alive=stores))
            owner = _Owner()
            for base in bases:
                weakref.finalize(owner, self.gpu.remove, base)
            return DecodedFrame(
                tuple(planes),
                frame.pixel_format,
                frame.colour,
                frame.metadata,
                frame.identity,
                cuda_stream=0,
                keep_alive=owner,
            )

    def close(self) -> None:
        self.inner.close()


class _Owner:
    pass


class _ThreadProcess:
    """What the reader needs of a decoder process, for one running in a thread."""

    pid = -1

    def __init__(self, thread: threading.Thread) -> None:
        self.thread = thread

    def poll(self) -> int | None:
        return None if self.thread.is_alive() else 0

    def wait(self, timeout: float | None = None) -> int:
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise subprocess.TimeoutExpired("segment worker thread", timeout or 0)
        return 0

    def kill(self) -> None:
        pass


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCuda]:
    """Decoder processes run as threads here (serve() over a socket pair), and ipc's pieces are fakes."""
    gpu = FakeGpu()
    cuda = FakeCuda(gpu)
    threads: list[threading.Thread] = []

    def start(self: Any, link: Any) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        link.sock = parent

        def run() -> None:
            try:
                segment_worker.serve(child)
            finally:
                child.close()

        thread = threading.Thread(target=run, name=f"fake-segment-worker-{link.number}", daemon=True)
        thread.start()
        threads.append(thread)
        link.process = _ThreadProcess(thread)

    monkeypatch.setattr(segments._ProcessSessions, "_start", start)
    for name in ("ExportedMemory", "ImportedMemory", "BlockCopier"):
        monkeypatch.setattr(ipc, name, getattr(cuda, name))
    monkeypatch.setattr(frames_module, "_cuda_ops", cuda)
    for where in ("alpha2.native_gpu._cuda.streams", "alpha2.api.devices"):  # or they put the real ones back
        monkeypatch.setattr(f"{where}.install_cuda_plane_ops", lambda: None)
    yield cuda
    for thread in threads:
        thread.join(5)
        assert not thread.is_alive()


def _fake_sessions(
    monkeypatch: pytest.MonkeyPatch,
    cuda: FakeCuda,
    *,
    together: bool = True,
    fail: dict[int, int] | None = None,
) -> None:
    def open_session(options: dict[str, Any]) -> FakeNvdecSession:
        number = options["chunks"][0].index  # process k decodes chunks k, k + K, ...
        return FakeNvdecSession(cuda.gpu, options, together, (fail or {}).get(number))

    monkeypatch.setattr(segment_worker, "open_session", open_session)


@pytest.mark.parametrize("together", [True, False])
def test_nvdec_frames_through_shared_blocks_equal_one_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cuda: FakeCuda, together: bool
) -> None:
    path = encode(tmp_path / "n.mkv", "libx264", _X264_OPEN)
    reference = one_session(path)
    _fake_sessions(monkeypatch, fake_cuda, together=together)
    with SegmentReader(
        path, sessions=3, hwaccel="none", ahead=4, min_packets=12, decoders="processes"
    ) as reader:
        frames = []
        for frame in reader:
            with frame:
                assert frame.on_gpu and frame.cuda_stream is None
                planes = frame.planes
                assert isinstance(planes, tuple)
                assert all(p.pitch_bytes % ipc.PITCH_ALIGN == 0 for p in planes)
                del planes  # a plane keeps its block, as an array of it does
                frames.append((frame.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
        report = reader.report
        assert report.pooled == len(reference) == fake_cuda.copies
        # 2 x ahead = 8 blocks a process at most, in slabs of 4 and 4: each mapped here once
        assert fake_cuda.exported <= 3 * 2
        assert report.stages["map"] >= 0
    assert [p for p, _ in frames] == [p for p, _ in reference]
    assert all(a == b for (_, a), (_, b) in zip(frames, reference))
    gc.collect()
    assert fake_cuda.gpu.imports == 0  # every block unmapped here


def test_a_block_held_after_close_stays_mapped_until_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cuda: FakeCuda
) -> None:
    path = encode(tmp_path / "h.mkv", "libx264", _X264_CLOSED, frames=60)
    _fake_sessions(monkeypatch, fake_cuda)
    reader = SegmentReader(path, sessions=2, hwaccel="none", ahead=4, min_packets=10, decoders="processes")
    frame = reader.next_frame()
    assert frame is not None
    expected = [a.copy() for a in frame.plane_arrays()]
    reader.close()
    gc.collect()
    assert fake_cuda.gpu.imports == 1
    assert all(np.array_equal(a, b) for a, b in zip(frame.plane_arrays(), expected))
    capsule_owner = frame.plane(0)  # an array of it keeps the block, as DLPack consumers do
    frame.release()
    del frame
    gc.collect()
    assert fake_cuda.gpu.imports == 1
    del capsule_owner
    gc.collect()
    assert fake_cuda.gpu.imports == 0


def test_an_error_in_a_process_arrives_typed_after_its_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cuda: FakeCuda
) -> None:
    path = encode(tmp_path / "e.mkv", "libx264", _X264_CLOSED, frames=60)
    _fake_sessions(monkeypatch, fake_cuda, fail={1: 4})
    reader = SegmentReader(path, sessions=2, hwaccel="none", min_packets=10, decoders="processes")
    got = []
    with pytest.raises(UnsupportedCodecError, match="the fake decoder gave up"):
        while (frame := reader.next_frame()) is not None:
            got.append(frame.metadata.pts)
            frame.release()
    assert len(got) == 10 + 4  # chunk 0, and the 4 frames process 1 sent before it failed
    with pytest.raises(ClosedError):
        reader.next_frame()


def test_an_error_of_another_kind_is_a_decode_error_naming_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cuda: FakeCuda
) -> None:
    path = encode(tmp_path / "x.mkv", "libx264", _X264_CLOSED, frames=60)

    def open_session(options: dict[str, Any]) -> Any:
        if options["chunks"][0].index == 1:
            raise RuntimeError("no such thing")
        return FakeNvdecSession(fake_cuda.gpu, options, True, None)

    monkeypatch.setattr(segment_worker, "open_session", open_session)
    with pytest.raises(
        DecodeError, match=r"segment decoder process 1 of .* failed: RuntimeError: no such thing"
    ):
        SegmentReader(path, sessions=2, hwaccel="none", min_packets=10, decoders="processes")


def test_blocks_come_in_growing_slabs_and_larger_frames_make_room(fake_cuda: FakeCuda) -> None:
    from alpha2.api import decode_worker as wire

    mine, reader = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    worker = segment_worker._Worker(mine, None, {"chunks": [], "blocks": 8})  # type: ignore[arg-type]
    try:
        taken = [worker.take_block(1000, 0) for _ in range(8)]
        assert sorted(taken) == list(range(8))
        said = []
        while (got := wire.receive(reader, 0.0)) is not None:
            said.append(got[0])
            for fd in got[1]:
                fd.close()
        assert [m[0] for m in said] == ["slab", "slab"] and [len(m[4]) for m in said] == [4, 4]
        assert len({worker.blocks[b][1] for b in taken}) == 8  # each its own place
        worker.free_blocks.extend(taken[:5])  # slab 0 is back whole, slab 1 in part
        big = worker.take_block(100_000, 0)  # too large for any: slab 0 goes, a new one comes
        said = []
        while (got := wire.receive(reader, 0.0)) is not None:
            said.append(got[0])
            for fd in got[1]:
                fd.close()
        assert [m[0] for m in said] == ["drop", "slab"] and said[0][1] == 0
        assert worker.blocks[big][2] >= 100_000 and len(worker.blocks) == 8
    finally:
        worker.close()
        mine.close()
        reader.close()
    assert not fake_cuda.gpu.ranges  # every slab let go


def test_block_layout_places_planes_at_an_aligned_pitch() -> None:
    together = [
        CudaPtr2D(0x10000, 2048, 1920, 1088),
        CudaPtr2D(0x10000 + 2048 * 1088, 2048, 1920, 544),
    ]
    layout = ipc.block_layout(together)
    assert layout.together and layout.pitches == (2048, 2048)
    assert layout.offsets == (0, 2048 * 1088) and layout.size_bytes == 2048 * (1088 + 544)
    apart = [CudaPtr2D(0x10000, 128, 96, 64), CudaPtr2D(0x90000, 64, 48, 32), CudaPtr2D(0xA0000, 64, 48, 32)]
    layout = ipc.block_layout(apart)
    assert not layout.together and layout.pitches == (256, 256, 256)
    assert layout.offsets == (0, 256 * 64, 256 * 96)


def test_nvdec_without_shareable_memory_decodes_in_software_or_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from alpha2.gpu.errors import UnsupportedError
    from alpha2.gpu.identity import DecoderPlacement

    monkeypatch.setattr(ipc, "shared_memory_unavailable_reason", lambda ordinal: "no POSIX descriptors here")
    on_gpu = DecoderPlacement(0, None, "placed")
    hwaccel, note = segments._shared_route(on_gpu, "auto")
    assert hwaccel == "none" and note is not None and "no POSIX descriptors here" in note
    with pytest.raises(UnsupportedError, match="decoders='threads'"):
        segments._shared_route(on_gpu, "cuda")
    assert segments._shared_route(DecoderPlacement(None, None, "no GPU"), "auto") == ("auto", None)
    assert segments._shared_route(on_gpu, "none") == ("none", None)


# -- on NVDEC ---------------------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.nvidia
@pytest.mark.parametrize("codec", ["libx264", "libx265"])
def test_nvdec_process_segments_equal_one_nvdec_session(tmp_path: Path, codec: str) -> None:
    """On NVDEC: the same planes (downloaded) and timestamps as one NVDEC session, through blocks of device
    memory the decoder processes share; frames held past close (and past the processes' end) stay valid,
    and then nothing is left: no process, no descriptor."""
    params = _X264_OPEN if codec == "libx264" else _X265_OPEN
    path = encode(tmp_path / "n.mkv", codec, params, size=(320, 240))
    with open_decoder(path, None, hwaccel="cuda") as session:
        reference = []
        for frame in session:
            with frame:
                assert frame.on_gpu
                reference.append((frame.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
    for run in range(2):
        if run == 1:
            fds = _fds()  # after a first run: the CUDA driver's own descriptors are open by now
        held = []
        with SegmentReader(path, sessions=3, hwaccel="cuda", min_packets=12, decoders="processes") as reader:
            frames = []
            for frame in reader:
                assert frame.on_gpu and frame.cuda_stream is None
                frames.append((frame.metadata.pts, [a.tobytes() for a in frame.plane_arrays()]))
                if len(held) < 3:
                    held.append(frame)
                else:
                    frame.release()
            report = reader.report
            assert report.pooled == len(frames) and report.decoders == "processes"
            assert all(h["active"] == "cuda" for h in report.hwaccel), report.hwaccel
        assert [p for p, _ in frames] == [p for p, _ in reference]
        assert all(a == b for (_, a), (_, b) in zip(frames, reference))
        assert not _workers()  # every process ended; the blocks held here are mapped still
        for frame, (_, expected) in zip(held, frames):
            assert [a.tobytes() for a in frame.plane_arrays()] == expected
            frame.release()
        del frame, held
    assert _fds() == fds
