"""Outside reliability pass 121 of the public API: leaks and refusals found as an adversarial user."""

from __future__ import annotations

import asyncio
import copy
import gc
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from media import make_clip

import alpha2
from alpha2.api.streams import StreamGroup
from alpha2.ffmpeg_bridge import EncodeSession
from alpha2.gpu.errors import ErrorKind
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet
from alpha2.gpu.sync import CpuSyncPoint, WaiterThread, WaitStatus


@pytest.mark.parametrize("timeout", [1e10, 1e300])
def test_a_wait_with_a_timeout_past_threadings_limit_waits_for_the_work(timeout: float) -> None:
    # Past threading.TIMEOUT_MAX the wait failed at once with OverflowError, the work not done.
    point = CpuSyncPoint()
    timer = threading.Timer(0.05, point.signal)
    timer.start()
    result = point.wait(timeout)
    timer.join()
    assert result.status is WaitStatus.SIGNALED, result


def test_an_async_wait_with_a_huge_timeout_does_not_kill_the_waiter_thread() -> None:
    # The WaiterThread parked with that timeout, raised OverflowError and died, failing every wait on it.
    async def main() -> tuple[WaitStatus, WaitStatus]:
        other = CpuSyncPoint()
        other_wait = asyncio.ensure_future(other.wait_async(None))
        huge = CpuSyncPoint()
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, huge.signal)
        loop.call_later(0.1, other.signal)
        first = await huge.wait_async(1e12)
        return first.status, (await other_wait).status

    waiter = WaiterThread.instance()
    assert asyncio.run(main()) == (WaitStatus.SIGNALED, WaitStatus.SIGNALED)
    assert WaiterThread.instance() is waiter


def _refuses_every_copy(thing: Any, words: str) -> None:
    copies: list[Callable[[Any], Any]] = [pickle.dumps, copy.copy, copy.deepcopy]
    for make_copy in copies:
        with pytest.raises(alpha2.Error, match=words) as caught:
            make_copy(thing)
        assert caught.value.kind is ErrorKind.INVALID_INPUT


def test_a_writer_refuses_to_be_pickled_or_copied_and_still_writes(tmp_path: Path) -> None:
    # pickle raised TypeError ("cannot pickle '_thread.RLock' object"), and copy.copy made a second Writer
    # on the same encoder whose writes were refused with words about timing.
    out = tmp_path / "out.mp4"
    with alpha2.create(out) as writer:
        _refuses_every_copy(writer, "Writer .* cannot be pickled or copied")
        writer.write(np.zeros((48, 64, 3), np.uint8))
    with alpha2.open(out, hwaccel="none") as source:
        assert len(list(source)) == 1


def test_an_audio_source_refuses_to_be_pickled_or_copied(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "clip.mkv", frames=6, audio=True)
    with alpha2.open_audio(clip.path) as audio:
        _refuses_every_copy(audio, "AudioSource .* cannot be pickled or copied")
        assert audio.next_block() is not None


@pytest.mark.vulkan
def test_a_stream_group_and_a_renderer_refuse_to_be_pickled_or_copied(tmp_path: Path) -> None:
    # The renderer's deepcopy also left a GPUDevice without its poller, whose __del__ raised at exit.
    clip = make_clip(tmp_path / "clip.mkv", frames=4)
    with StreamGroup([clip.path], hwaccel="none") as group:
        _refuses_every_copy(group, "StreamGroup cannot be pickled or copied")
    with alpha2.open(clip.path, hwaccel="none") as source:
        _refuses_every_copy(source.renderer, "FrameRenderer cannot be pickled or copied")


def _in_a_fork(work: Callable[[], str]) -> str:
    """``work()`` in a forked child, which ends with os._exit (as multiprocessing's do); what it returned,
    or why it did not (a child stuck for 10 s is killed)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            said = work()
        except BaseException as exc:
            said = f"{type(exc).__name__}: {exc}"
        os.write(write_end, said.encode())
        os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + 10
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            return "stuck"
        time.sleep(0.02)
    with os.fdopen(read_end, "rb") as pipe:
        return pipe.read().decode()


@pytest.mark.vulkan
def test_a_writer_in_a_forked_process_refuses_and_leaves_the_output_to_its_maker(tmp_path: Path) -> None:
    # In the fork, a write waited forever on the GPU copier's read-back; the Writer and its EncodeSession
    # dropped there removed the partial output the first process was still writing.
    out = tmp_path / "out.mp4"
    writer = alpha2.create(out)
    for _ in range(3):
        writer.write(np.zeros((48, 64, 3), np.uint8))

    def child() -> str:
        nonlocal writer
        try:
            writer.write(np.zeros((48, 64, 3), np.uint8))
        except alpha2.Error as exc:
            said = f"{exc.kind.value}: {exc}"
        else:
            said = "written"
        writer.abort()
        del writer
        gc.collect()
        return said

    said = _in_a_fork(child)
    assert said.startswith("invalid_input: this Writer of") and "forked from" in said, said
    writer.write(np.zeros((48, 64, 3), np.uint8))
    writer.close()
    with alpha2.open(out, hwaccel="none") as source:
        assert len(list(source)) == 4


def test_an_audio_source_in_a_forked_process_refuses_and_closes_at_once(tmp_path: Path) -> None:
    # In the fork, close() (and the finalizer of one dropped there) waited forever on FFmpeg's codec
    # context, and reading went on through the file position shared with the first process.
    clip = make_clip(tmp_path / "clip.mkv", frames=12, audio=True)
    with alpha2.open_audio(clip.path) as audio:
        first = audio.next_block()
        assert first is not None

        def child() -> str:
            try:
                audio.next_block()
            except alpha2.Error as exc:
                said = f"{exc.kind.value}: {exc}"
            else:
                said = "read"
            audio.close()
            return said

        said = _in_a_fork(child)
        assert said.startswith("invalid_input: this AudioSource of") and "forked from" in said, said
        second = audio.next_block()
        assert second is not None and second.pts_seconds > first.pts_seconds


def test_an_encode_session_dropped_in_a_forked_process_leaves_the_partial_output(tmp_path: Path) -> None:
    # Its __del__ there closed the container (its end written through the shared file) and removed the
    # partial output the first process was still writing: that one's close then failed.
    out = tmp_path / "out.mkv"
    grey = CpuPlaneSet(
        tuple(CpuPlane(np.full((h, w), 128, np.uint8), w, w, h) for w, h in ((64, 48), (32, 24), (32, 24)))
    )
    session = EncodeSession(str(out), codec="mpeg4", rate=25)
    for _ in range(3):
        session.encode(grey, pixel_format=PixelFormat.YUV420P)

    def child() -> str:
        nonlocal session
        del session
        gc.collect()
        return "dropped"

    assert _in_a_fork(child) == "dropped"
    session.encode(grey, pixel_format=PixelFormat.YUV420P)
    session.close()
    with alpha2.open(out, hwaccel="none") as source:
        assert len(list(source)) == 4


@pytest.mark.vulkan
def test_a_stream_group_in_a_forked_process_refuses_and_closes_at_once(tmp_path: Path) -> None:
    # In the fork, a tick waited forever on decoder threads the fork did not copy.
    clip = make_clip(tmp_path / "clip.mkv", frames=8)
    with StreamGroup([clip.path], hwaccel="none") as group:
        group.tick()

        def child() -> str:
            try:
                group.tick()
            except alpha2.Error as exc:
                said = f"{exc.kind.value}: {exc}"
            else:
                said = "ticked"
            group.close()
            return said

        said = _in_a_fork(child)
        assert said.startswith("invalid_input: this StreamGroup was made in process"), said
        assert "forked from" in said
        assert group.run() > 0
