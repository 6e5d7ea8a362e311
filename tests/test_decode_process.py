"""Decoders in processes of their own (DecodeProcess, StreamGroup(decoders='processes')).

On lavapipe the frames come through shared host memory and the CPU upload; on the H200 NVDEC frames are
copied by the decoder process into Vulkan images that Dawn imports here. Each test checks the pixels or
the counts against the same work done in one process, and that nothing is left behind: no decoder
process, no slot counted in a budget.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import numpy as np
import pytest
from media import child_processes, concat_files, make_clip
from media import garbage as make_garbage

from alpha2.api import decode_worker as wire
from alpha2.api.decode_process import DecodeProcess, open_processes
from alpha2.api.devices import open_device
from alpha2.api.streams import StreamGroup
from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.ffmpeg_bridge.errors import DecodeError, MediaNotFoundError
from alpha2.gpu.errors import ClosedError, Error, GpuTimeoutError, InvalidInputError, UnsupportedError
from alpha2.gpu.handles import OwnedFd
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.surfaces import SurfaceBudget
from alpha2.native_gpu.device.waits import gpu_wait_timeout, set_gpu_wait_timeout


def _worker_pids() -> set[int]:
    """Decoder processes that are children of this one (the test's leftovers, if any)."""
    return child_processes("alpha2.api.decode_worker")


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_clip(tmp_path_factory.mktemp("procs") / "a.mkv", width=96, height=64, frames=9).path


@pytest.fixture(scope="module")
def device() -> object:

    dev = open_device("none")
    yield dev
    dev.close()


def test_messages_carry_fds_both_ways() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    read_end, write_end = os.pipe()
    try:
        wire.send(a, ("free", 3, 1, ["sync-fd"]), [OwnedFd(os.dup(write_end))])
        got = wire.receive(b, 5.0)
        assert got is not None
        message, fds = got
        assert message == ("free", 3, 1, ["sync-fd"]) and len(fds) == 1
        os.write(fds[0].fileno(), b"x")  # the same pipe, through a descriptor of this end's own
        assert os.read(read_end, 1) == b"x"
        fds[0].close()
        assert wire.receive(b, 0.0) is None
        a.close()
        with pytest.raises(wire.PeerGone):
            wire.receive(b, 5.0)
    finally:
        b.close()
        os.close(read_end)
        os.close(write_end)


@pytest.mark.vulkan
def test_frames_match_a_session_in_this_process(clip: str, device: object) -> None:
    with DecodeSession(clip, hwaccel="none") as session:
        expected = []
        for frame in session:
            expected.append((frame.pts_seconds, [a.copy() for a in frame.plane_arrays()]))
            frame.release()
    with DecodeProcess(clip, device=device, hwaccel="none") as stream:
        assert stream.path is ExecutionPath.CPU_UPLOAD
        assert stream.info.width == 96 and stream.hwaccel_report.active.value == "none"
        got = []
        while (lease := stream.next_frame()) is not None:
            with lease:
                frame = lease.frame
                assert frame.identity.decoder_id == stream.decoder_id
                got.append((frame.metadata.pts_seconds, _read_planes(device, lease)))
        assert stream.next_frame() is None  # the end stays the end
        assert stream.stats is not None and stream.stats.frames_out == len(expected)
        assert stream.path_report.frames_by_path == {ExecutionPath.CPU_UPLOAD: len(expected)}
    assert [pts for pts, _ in got] == [pts for pts, _ in expected]
    for (_, planes), (_, want) in zip(got, expected):
        if len(planes) < len(want):  # yuv420p's Cb and Cr are uploaded interleaved in one plane
            want = [want[0], np.stack([want[1], want[2]], axis=-1)]
        for plane, ref in zip(planes, want):
            assert np.array_equal(plane, ref.reshape(plane.shape))
    assert not _worker_pids()


def _read_planes(device: object, lease: object) -> list[np.ndarray]:
    from alpha2.native_gpu.render.renderer import read_texture_rgba  # noqa: F401 (the device is usable)

    webgpu = device.webgpu_device  # type: ignore[attr-defined]
    out = []
    for texture, plane in zip(lease.frame.textures, lease.frame.planes):  # type: ignore[attr-defined]
        texel = plane.plane_format.bytes_per_texel
        row = plane.width * texel
        padded = (row + 255) // 256 * 256
        data = webgpu.queue.read_texture(
            {"texture": texture, "mip_level": 0, "origin": (0, 0, 0)},
            {"offset": 0, "bytes_per_row": padded, "rows_per_image": plane.height},
            (plane.width, plane.height, 1),
        )
        rows = np.frombuffer(bytes(data), np.uint8).reshape(plane.height, padded)[:, :row]
        out.append(rows)
    return out


@pytest.mark.vulkan
def test_a_wall_of_processes_shows_what_a_wall_of_threads_shows(tmp_path: Path) -> None:
    sources = [
        make_clip(tmp_path / "a.mkv", width=64, height=48, frames=8).path,
        make_clip(tmp_path / "b.mkv", width=96, height=48, frames=6, gop=3).path,
        make_clip(tmp_path / "c.mkv", width=80, height=64, frames=7).path,
    ]
    walls, orders = [], []
    for decoders in ("threads", "processes"):
        with StreamGroup(sources, hwaccel="none", decoders=decoders, record_order=True) as group:
            assert group.run() == 8
            walls.append(group.read_wall())
            orders.append([s.shown_order for s in group.streams])
            assert group.path_counts().frames == {ExecutionPath.CPU_UPLOAD: 21}
            if decoders == "processes":
                assert all(s.importer is None for s in group.streams)
                assert group.budget.max_surfaces == 3 * 3  # slots x streams
                assert group.budget.usage().surfaces == 9  # each stream's slots
        assert group.budget.usage().surfaces == 0
    assert orders[0] == orders[1]
    assert np.array_equal(walls[0], walls[1])
    assert not _worker_pids()


@pytest.mark.vulkan
def test_a_size_change_mid_stream_makes_a_new_slot_set(tmp_path: Path, device: object) -> None:
    small = make_clip(tmp_path / "s.ts", width=64, height=48, frames=5).path
    large = make_clip(tmp_path / "l.ts", width=96, height=64, frames=4).path
    src = concat_files(str(tmp_path / "cat.ts"), small, large)
    with DecodeSession(src, hwaccel="none") as session:
        sizes = []
        for frame in session:
            sizes.append((frame.identity.width, frame.identity.height))
            frame.release()
    assert len(set(sizes)) == 2, sizes
    budget = SurfaceBudget(max_surfaces=6)
    with DecodeProcess(src, device=device, hwaccel="none", slots=2, budget=budget) as stream:
        got, generations = [], []
        held = None
        while (lease := stream.next_frame()) is not None:
            got.append((lease.frame.identity.width, lease.frame.identity.height))
            generations.append(lease.frame.identity.generation)
            if held is not None:
                held.release()
            held = lease  # one frame kept across the change, as a player shows one
        assert held is not None
        assert budget.usage().surfaces <= 4  # the new set, and the old one's slot still held
        held.release()
    assert got == sizes
    assert len(set(generations)) == 2 and generations == sorted(generations)
    assert budget.usage().surfaces == 0


@pytest.mark.vulkan
def test_opening_errors_come_with_their_type_and_leave_nothing(tmp_path: Path, device: object) -> None:
    with pytest.raises(MediaNotFoundError):
        DecodeProcess(str(tmp_path / "missing.mkv"), device=device)
    # Seeded bytes: random ones now and then probe as a stream FFmpeg opens (one CI run in many).
    garbage = Path(make_garbage(str(tmp_path / "garbage.mkv")))
    with pytest.raises(Error):
        DecodeProcess(str(garbage), device=device)
    with open(garbage, "rb") as f, pytest.raises(InvalidInputError):
        DecodeProcess(f, device=device)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        DecodeProcess(str(garbage), device=device, slots=0)
    with pytest.raises(MediaNotFoundError):
        open_processes([str(tmp_path / "missing.mkv")] * 2, device=device)
    assert not _worker_pids()


@pytest.mark.vulkan
def test_a_decoder_process_that_dies_is_a_decode_error(clip: str, device: object) -> None:
    stream = DecodeProcess(clip, device=device, hwaccel="none")
    try:
        first = stream.next_frame()
        assert first is not None
        first.release()
        assert stream._process is not None
        os.kill(stream._process.pid, signal.SIGKILL)
        with pytest.raises(DecodeError, match="ended unexpectedly"):
            for _ in range(20):  # the frames it sent before it died come first
                lease = stream.next_frame()
                assert lease is not None
                lease.release()
    finally:
        stream.close()
    with pytest.raises(ClosedError):
        stream.next_frame()
    assert not _worker_pids()


@pytest.mark.vulkan
def test_every_slot_held_times_out_and_close_keeps_held_leases(clip: str, device: object) -> None:
    before = gpu_wait_timeout()
    set_gpu_wait_timeout(0.5)
    try:
        stream = DecodeProcess(clip, device=device, hwaccel="none", slots=2)
        a, b = stream.next_frame(), stream.next_frame()
        assert a is not None and b is not None
        start = time.monotonic()
        with pytest.raises(GpuTimeoutError):
            stream.next_frame()
        assert time.monotonic() - start < 5
        a.release()
        c = stream.next_frame()  # a slot came back: the decoder process goes on
        assert c is not None
        stream.close()
        assert not _worker_pids()
        assert b.frame.textures  # still valid after close
        b.release()
        c.release()
    finally:
        set_gpu_wait_timeout(before)


@pytest.mark.vulkan
def test_cuda_decoding_in_a_process_needs_a_device_that_takes_the_gpu_copy(clip: str, device: object) -> None:
    # lavapipe: no CUDA twin. 'cuda' is refused, typed; 'auto' decodes in software and says why.
    with pytest.raises(Error):
        DecodeProcess(clip, device=device, hwaccel="cuda")
    with DecodeProcess(clip, device=device, hwaccel="auto") as stream:
        report = stream.hwaccel_report
        assert report.active.value == "none" and report.fallback_reason
        assert stream.path is ExecutionPath.CPU_UPLOAD
    assert not _worker_pids()


@pytest.mark.nvidia
@pytest.mark.cuda
@pytest.mark.dawn
def test_nvdec_frames_from_processes_are_copied_on_the_gpu_and_match_threads(tmp_path: Path) -> None:
    sources = [
        make_clip(tmp_path / "a.mkv", width=128, height=72, frames=12).path,
        make_clip(tmp_path / "b.mkv", width=96, height=72, frames=12, gop=3).path,
        make_clip(tmp_path / "c.mkv", codec="hevc", width=256, height=144, frames=12).path,  # NVDEC: >= 144
    ]
    walls = []
    for decoders in ("threads", "processes"):
        with StreamGroup(sources, hwaccel="cuda", decoders=decoders) as group:
            group.run(frames=10)
            group.drain()
            walls.append(group.read_wall())
            assert group.path_counts().frames == {ExecutionPath.GPU_COPY: 30}
            if decoders == "processes":
                assert all(s.decoder.path is ExecutionPath.GPU_COPY for s in group.streams)
                assert all(s.decoder.hwaccel_report.active.value == "cuda" for s in group.streams)
        assert group.budget.usage().surfaces == 0
    assert np.array_equal(walls[0], walls[1]), "the same pixels, whichever process decoded"
    assert not _worker_pids()


@pytest.mark.vulkan
def test_a_seek_before_the_first_frame_starts_there(tmp_path: Path, device: object) -> None:
    src = make_clip(tmp_path / "g.mkv", width=64, height=48, frames=24, gop=4).path
    with DecodeSession(src, hwaccel="none") as session:
        session.seek(0.4)
        first = session.next_frame()
        assert first is not None
        expected = first.pts_seconds
        first.release()
    with DecodeProcess(src, device=device, hwaccel="none") as stream:
        with pytest.raises(InvalidInputError):
            stream.seek(-1.0)
        stream.seek(0.4)
        lease = stream.next_frame()
        assert lease is not None
        assert lease.frame.metadata.pts_seconds == expected
        lease.release()
        with pytest.raises(UnsupportedError):
            stream.seek(0.0)


@pytest.mark.vulkan
def test_the_play_command_plays_a_wall_of_decoder_processes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from alpha2.apps.cli import main

    sources = [make_clip(tmp_path / f"{i}.mkv", width=64, height=48, frames=12).path for i in range(2)]
    code = main(["play", *sources, "--offscreen", "--decoders", "processes", "--at", "0.1", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert [s["frames_shown"] for s in data["streams"]] == [9, 9], data["streams"]
    # Every frame's GPU copy made by its decoder process with NVDEC (the H200); none on lavapipe.
    copies = [9 if mode == "cuda" else 0 for mode in data["hwaccel"]["streams"]]
    assert [s["gpu_copies"] for s in data["streams"]] == [{"decoder_process": n} for n in copies]
    code = main(["play", sources[0], "--offscreen", "--decoders", "processes"])
    assert code != 0 and "several inputs" in capsys.readouterr().err
    assert not _worker_pids()


@pytest.mark.vulkan
def test_a_lease_released_on_another_thread_frees_a_waiting_next_frame(clip: str, device: object) -> None:
    import threading

    with DecodeProcess(clip, device=device, hwaccel="none", slots=2) as stream:
        a, b = stream.next_frame(), stream.next_frame()
        assert a is not None and b is not None
        timer = threading.Timer(0.3, a.release)  # while the next call waits for a slot
        timer.start()
        start = time.monotonic()
        c = stream.next_frame(timeout_s=10.0)
        timer.join()
        assert c is not None and time.monotonic() - start < 5
        b.release()
        c.release()
