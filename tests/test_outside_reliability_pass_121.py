"""Outside reliability pass 121 of the public API: leaks and refusals found as an adversarial user."""

from __future__ import annotations

import asyncio
import copy
import pickle
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from media import make_clip

import alpha2
from alpha2.api.streams import StreamGroup
from alpha2.gpu.errors import ErrorKind
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
