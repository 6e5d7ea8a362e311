"""An outside pass of the multi-stream and parallel parts (the wall, StreamGroup, segment-parallel
reading, decoder processes): each test is a fault found and fixed, with its input made here by PyAV."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from media import child_processes, make_clip

import alpha2
from alpha2.api.decode_process import DecodeProcess
from alpha2.api.devices import open_device
from alpha2.api.playback import PlayOptions
from alpha2.api.segments import SegmentReader
from alpha2.api.streams import StreamGroup
from alpha2.apps.wall import play_wall
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.surfaces import SurfaceBudget

NO_DISPLAY = {"PATH": "/usr/bin"}


@pytest.mark.vulkan
def test_offscreen_wall_loops_until_frames(tmp_path: Path) -> None:
    """'alpha2 play a.mp4 b.mp4 --wall --offscreen --loop --frames 400' stopped at the longest input's
    end (120 frames), where --help says a looping wall plays all again, offscreen until --frames; the
    window looped, the offscreen run ignored --loop."""
    long = make_clip(tmp_path / "long.mp4", frames=12).path
    short = make_clip(tmp_path / "short.mp4", frames=5).path
    options = PlayOptions(offscreen=True, loop=True, frames=30, hwaccel="none")
    stats = play_wall([long, short], options, environ=NO_DISPLAY)
    assert stats.frames == 30
    assert [s["frames_shown"] for s in stats.streams] == [30, 15]  # 12+12+6 frames; 5 a round of 12


@pytest.mark.vulkan
def test_offscreen_wall_says_loop_needs_frames(tmp_path: Path) -> None:
    """Offscreen with --loop and no --frames the wall plays once, and says why, as the player does."""
    clip = make_clip(tmp_path / "a.mp4", frames=6).path
    options = PlayOptions(offscreen=True, loop=True, hwaccel="none")
    stats = play_wall([clip, clip], options, environ=NO_DISPLAY)
    assert stats.frames == 6
    assert "--loop not taken: offscreen it loops until --frames" in stats.mode_reason


@pytest.mark.vulkan
@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("prefetch", "x", "prefetch must be a whole number >= 0 frames, got 'x'"),
        ("prefetch", None, "prefetch must be a whole number >= 0 frames, got None"),
        ("prefetch", 1.5, "prefetch must be a whole number >= 0 frames, got 1.5"),
        ("prefetch", True, "prefetch must be a whole number >= 0 frames, got True"),
        ("threads", "x", "threads must be a whole number >= 0"),
        ("threads", 1.5, "threads must be a whole number >= 0"),
        ("start_timeout_s", "x", "start_timeout_s must be a number, got 'x'"),
        ("start_timeout_s", float("nan"), "start_timeout_s must be a finite number, got nan"),
        ("start_timeout_s", -1, "start_timeout_s must be more than 0, got -1"),
    ],
)
def test_decode_process_refuses_bad_numbers_before_it_starts(
    tmp_path: Path, option: str, value: object, said: str
) -> None:
    """DecodeProcess(prefetch='x') (and StreamGroup(decoders='processes', prefetch='x')) raised a bare
    TypeError from a comparison; prefetch=1.5 and True were taken where a DecodeSession refuses them;
    threads='x' started a decoder process that failed with 'DecodeError: ... ValueError: invalid literal
    for int()'; start_timeout_s='x' was a TypeError and -1 a GpuTimeoutError after a process started."""
    clip = make_clip(tmp_path / "a.mp4", frames=3).path
    device = open_device("none")
    try:
        with pytest.raises(InvalidInputError, match=re.escape(said)):
            DecodeProcess(clip, device=device, hwaccel="none", **{option: value})
        assert not child_processes("alpha2.api.decode_worker")
    finally:
        device.close()


@pytest.mark.vulkan
def test_group_of_decoder_processes_refuses_a_bad_prefetch(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "a.mp4", frames=3).path
    with pytest.raises(InvalidInputError, match="prefetch must be a whole number >= 0 frames, got 'x'"):
        StreamGroup([clip], hwaccel="none", decoders="processes", prefetch="x")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["x", 1.5, -1, True])
def test_segment_reader_refuses_a_bad_stream_index(tmp_path: Path, value: object) -> None:
    """SegmentReader(path, sessions=2, stream_index='x') raised a bare TypeError ('<=' not supported
    between 'int' and 'str') from the key frame index, which reads the file before any session checks
    its options."""
    clip = make_clip(tmp_path / "a.mp4", frames=8).path
    said = f"stream_index must be a whole number >= 0 (or None: the best video stream), got {value!r}"
    with pytest.raises(InvalidInputError, match=re.escape(said)):
        SegmentReader(clip, sessions=2, hwaccel="none", stream_index=value)


@pytest.mark.vulkan
@pytest.mark.parametrize("decoders", ["threads", "processes"])
def test_group_closed_from_another_thread_mid_tick(tmp_path: Path, decoders: str) -> None:
    """A StreamGroup closed on one thread while another ticked tore the GPU objects down under the
    tick: the ticking thread got 'IndexError: list index out of range' from the submit throttle (seen
    with decoder processes, one close in three), not the ClosedError a closed group raises. close()
    now lets a running tick finish first (stopping the decoders it may wait on)."""
    clip = make_clip(tmp_path / "a.mp4", frames=60).path
    group = StreamGroup([clip, clip], hwaccel="none", decoders=decoders)
    drawing = threading.Event()
    draw = group._draw

    def slow_draw(leases: list[object]) -> bool:
        drawing.set()
        time.sleep(0.3)  # close() comes from the main thread now
        return draw(leases)

    group._draw = slow_draw  # type: ignore[method-assign]
    raised: list[BaseException] = []

    def ticker() -> None:
        try:
            while not group.finished:
                group.tick()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=ticker)
    thread.start()
    assert drawing.wait(10)
    group.close()
    thread.join(10)
    assert not thread.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], ClosedError), raised
    assert group.budget.usage().surfaces == 0
    assert not child_processes("alpha2.api.decode_worker")


def _frames(path: str, **options: object) -> list[tuple[float | None, bytes]]:
    with alpha2.open(path, hwaccel="none", **options) as source:  # type: ignore[arg-type]
        out = []
        for frame in source:
            with frame:
                out.append(
                    (
                        frame.pts_seconds,
                        b"".join(np.ascontiguousarray(p).tobytes() for p in frame.plane_arrays()),
                    )
                )
        return out


@pytest.mark.parametrize("limit", [{"max_surfaces": 1}, {"max_surfaces": 4}, {"max_bytes": 20_000}])
def test_parallel_reading_within_a_small_budget(tmp_path: Path, limit: dict[str, int]) -> None:
    """alpha2.open(path, parallel=3, budget=SurfaceBudget(max_surfaces=4)) failed with 'surface budget
    stayed full for 10 s' though every frame was released at once (one session reads within a budget of
    one): the sessions decoding chunks ahead of the reader took the budget's last surfaces, and the
    session of the reader's chunk, which alone frees them, waited for one. Now a chunk ahead decodes
    only while the budget keeps room for a frame of every session."""
    clip = make_clip(tmp_path / "a.mp4", width=64, height=48, frames=120, gop=8).path
    budget = SurfaceBudget(**limit, wait_timeout_s=2.0)
    assert _frames(clip, parallel=3, budget=budget) == _frames(clip)
    usage = budget.usage()
    assert usage.surfaces == 0
    assert usage.max_surfaces is None or usage.peak_surfaces <= usage.max_surfaces


@pytest.mark.vulkan
def test_group_of_threads_refuses_a_budget_its_timed_ticks_cannot_keep(tmp_path: Path) -> None:
    """StreamGroup(4 sources, budget=SurfaceBudget(max_surfaces=4 or 5)) was taken (the check asked for
    N), and its first timed tick waited out the budget and raised 'surface budget stayed full': a timed
    tick holds two frames a stream (the one it draws and the next, read to know it is not due yet)."""
    clips = [make_clip(tmp_path / f"{i}.mp4", frames=6).path for i in range(4)]
    for surfaces in (4, 7):
        with pytest.raises(InvalidInputError, match="4 streams decoding in threads need at least 8: a tick"):
            StreamGroup(clips, hwaccel="none", budget=SurfaceBudget(max_surfaces=surfaces))
    budget = SurfaceBudget(max_surfaces=8, wait_timeout_s=2.0)
    with StreamGroup(clips, hwaccel="none", budget=budget) as group:
        at_s = 0.0
        while not group.finished:
            group.tick(at_s=at_s)
            at_s += 0.01
        assert [s.frames_shown for s in group.streams] == [6, 6, 6, 6]
    assert budget.usage().surfaces == 0


@pytest.mark.vulkan
def test_group_of_decoder_processes_refuses_a_budget_below_its_slots(tmp_path: Path) -> None:
    """StreamGroup(4 sources, decoders='processes', budget=SurfaceBudget(max_surfaces=8)) was taken (the
    check asked for N), and the first tick waited out the budget and raised 'surface budget stayed
    full': each decoder process reserves its ``slots`` (3) surfaces together at its first frame."""
    clips = [make_clip(tmp_path / f"{i}.mp4", frames=4).path for i in range(4)]
    said = "4 streams in decoder processes of 3 slots each need at least 12"
    with pytest.raises(InvalidInputError, match=said):
        StreamGroup(clips, hwaccel="none", decoders="processes", budget=SurfaceBudget(max_surfaces=8))
    assert not child_processes("alpha2.api.decode_worker")
    budget = SurfaceBudget(max_surfaces=4, wait_timeout_s=2.0)
    with StreamGroup(clips, hwaccel="none", decoders="processes", slots=1, budget=budget) as group:
        group.run()
        assert [s.frames_shown for s in group.streams] == [4, 4, 4, 4]
    assert budget.usage().surfaces == 0


def test_parallel_reason_says_what_was_asked_when_no_reader_ran(tmp_path: Path) -> None:
    """'parallel decoding was not asked for' was said with parallel=3 asked, when frames_at came before
    any frame was read in order (and with parallel=1). Found by an outside pass."""
    clip = make_clip(tmp_path / "c.mp4", frames=12).path
    with alpha2.open(clip, hwaccel="none", parallel=3) as source:
        assert source.parallel_reason == "parallel=3: decided when the first frame is taken"
        for frame in source.frames_at([0.1, 0.2]):
            frame.release()
        assert "parallel=3 reads a file in order from its start" in source.parallel_reason
    with alpha2.open(clip, hwaccel="none", parallel=1) as source:
        assert source.parallel_reason == "one session: parallel=1 was asked for"
    with alpha2.open(clip, hwaccel="none") as source:
        assert source.parallel_reason == "parallel decoding was not asked for"
