"""SurfaceBudget, SurfaceReservation, SurfaceIdentity and DecodedFrame accounting (no FFmpeg here)."""

from __future__ import annotations

import fractions
import gc
import math
import threading
import time

import pytest

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.errors import ClosedError, ErrorKind, InvalidInputError, OutOfMemoryError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import FrameMetadata, Size
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet
from alpha2.gpu.surfaces import (
    SurfaceBudget,
    SurfaceBudgetError,
    SurfaceBudgetPolicy,
    SurfaceIdentity,
    SurfaceReservation,
)

IDENT = SurfaceIdentity(decoder_id=1, generation=0, width=64, height=48, pixel_format=PixelFormat.NV12)


def test_reserve_release_counts_and_peaks() -> None:
    budget = SurfaceBudget(max_surfaces=4, max_bytes=10_000)
    a = budget.reserve(1000, IDENT)
    b = budget.reserve(2000, IDENT)
    u = budget.usage()
    assert (u.surfaces, u.size_bytes, u.max_surfaces, u.max_bytes) == (2, 3000, 4, 10_000)
    a.release()
    a.release()  # idempotent: released exactly once
    assert a.released and not b.released
    assert budget.usage().surfaces == 1 and budget.usage().size_bytes == 2000
    b.release()
    u = budget.usage()
    assert (u.surfaces, u.size_bytes, u.peak_surfaces, u.peak_bytes) == (0, 0, 2, 3000)


def test_gc_backstop_releases() -> None:
    budget = SurfaceBudget(max_surfaces=2)
    r = budget.reserve(10, IDENT)
    assert budget.usage().surfaces == 1
    del r
    gc.collect()
    assert budget.usage().surfaces == 0


def test_fail_policy_raises_at_once() -> None:
    budget = SurfaceBudget(max_surfaces=1, policy=SurfaceBudgetPolicy.FAIL)
    held = budget.reserve(1, IDENT)
    t0 = time.monotonic()
    with pytest.raises(SurfaceBudgetError) as info:
        budget.reserve(1, IDENT)
    assert time.monotonic() - t0 < 0.5
    assert isinstance(info.value, OutOfMemoryError) and isinstance(info.value, MemoryError)
    assert info.value.kind is ErrorKind.OUT_OF_MEMORY
    held.release()
    budget.reserve(1, IDENT).release()


def test_wait_policy_times_out_then_succeeds_after_release() -> None:
    budget = SurfaceBudget(max_surfaces=1, wait_timeout_s=0.1)
    held = budget.reserve(1, IDENT)
    t0 = time.monotonic()
    with pytest.raises(SurfaceBudgetError, match="stayed full"):
        budget.reserve(1, IDENT)
    assert 0.08 <= time.monotonic() - t0 < 2.0

    threading.Timer(0.05, held.release).start()
    got = budget.reserve(1, IDENT, timeout=5.0)  # woken by the release on another thread
    assert budget.usage().surfaces == 1
    got.release()
    assert budget.usage().surfaces == 0


def test_byte_limit_and_never_fitting_request() -> None:
    budget = SurfaceBudget(max_bytes=100, policy="fail")  # type: ignore[arg-type]
    r = budget.reserve(60, IDENT)
    with pytest.raises(SurfaceBudgetError):
        budget.reserve(50, IDENT)
    with pytest.raises(SurfaceBudgetError, match="can never fit"):
        budget.reserve(101, IDENT)
    r.release()
    budget.reserve(100, IDENT).release()


def test_invalid_arguments() -> None:
    with pytest.raises(InvalidInputError):
        SurfaceBudget(max_surfaces=0)
    with pytest.raises(InvalidInputError, match="wait, fail"):
        SurfaceBudget(policy="sometimes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        SurfaceIdentity(decoder_id=1, generation=0, width=0, height=4, pixel_format=PixelFormat.NV12)


def test_identity_generations() -> None:
    later = SurfaceIdentity(1, 1, 64, 48, PixelFormat.NV12)
    assert not IDENT.same_configuration(later)
    assert IDENT.same_configuration(SurfaceIdentity(1, 0, 64, 48, PixelFormat.NV12))


def test_many_threads_never_exceed_limit_and_return_to_zero() -> None:
    budget = SurfaceBudget(max_surfaces=3, max_bytes=3000, wait_timeout_s=10.0)
    seen_over = []

    def worker() -> None:
        for _ in range(50):
            r = budget.reserve(1000, IDENT)
            u = budget.usage()
            if u.surfaces > 3 or u.size_bytes > 3000:
                seen_over.append(u)
            r.release()

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not seen_over
    u = budget.usage()
    assert (u.surfaces, u.size_bytes) == (0, 0) and u.peak_surfaces <= 3


def _decoded(budget: SurfaceBudget) -> DecodedFrame:
    data = bytearray(64 * 48 * 3 // 2)
    y = CpuPlane(memoryview(data)[: 64 * 48], 64, 64, 48)
    uv = CpuPlane(memoryview(data)[64 * 48 :], 64, 64, 24)
    meta = FrameMetadata(
        pts=3,
        time_base=fractions.Fraction(1, 30),
        duration=1,
        key_frame=True,
        coded_size=Size(64, 48),
        display_size=Size(64, 48),
    )
    colour = ColourInfo.from_ffmpeg(1, 1, 1, 1, 1)
    reservation = budget.reserve(len(data), IDENT)
    assert isinstance(reservation, SurfaceReservation)
    return DecodedFrame(CpuPlaneSet((y, uv)), PixelFormat.NV12, colour, meta, IDENT, reservation, None, data)


def test_decoded_frame_release_and_gc() -> None:
    budget = SurfaceBudget(max_surfaces=2)
    frame = _decoded(budget)
    assert not frame.on_gpu and (frame.width, frame.height) == (64, 48)
    assert frame.pts == 3 and frame.pts_seconds == pytest.approx(0.1)
    assert budget.usage().surfaces == 1
    with frame:
        pass
    assert frame.released and budget.usage().surfaces == 0
    frame.release()  # idempotent
    with pytest.raises(ClosedError):
        _ = frame.planes
    other = _decoded(budget)
    assert budget.usage().surfaces == 1
    del other
    gc.collect()
    assert budget.usage().surfaces == 0


@pytest.mark.parametrize("bad", [float("nan"), -1, "x", None, True])
def test_a_budget_s_timeouts_are_numbers_of_seconds(bad: object) -> None:
    # Found by an outside pass: NaN waited forever, a negative timeout was taken as 0, 'x' and None
    # were a bare ValueError / TypeError.
    with pytest.raises(InvalidInputError, match="wait_timeout_s"):
        SurfaceBudget(max_surfaces=1, wait_timeout_s=bad)  # type: ignore[arg-type]
    budget = SurfaceBudget(max_surfaces=1)
    held = budget.reserve(1, IDENT)
    if bad is not None:  # None is the budget's own timeout there
        with pytest.raises(InvalidInputError, match="timeout"):
            budget.reserve(1, IDENT, timeout=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="timeout"):
            budget.wait_for_room(0, bad)  # type: ignore[arg-type]
    held.release()


def test_an_infinite_timeout_waits_without_a_bound() -> None:
    budget = SurfaceBudget(max_surfaces=1, wait_timeout_s=math.inf)  # was an OverflowError at once
    held = budget.reserve(1, IDENT)
    threading.Timer(0.05, held.release).start()
    t0 = time.monotonic()
    again = budget.reserve(1, IDENT)
    assert 0.03 < time.monotonic() - t0 < 5
    threading.Timer(0.05, again.release).start()
    assert budget.wait_for_room(0, math.inf)
    with budget.reserve(1, IDENT, timeout=math.inf):
        pass


@pytest.mark.parametrize(
    "kwargs", [{"max_surfaces": 1.5}, {"max_surfaces": "2"}, {"max_surfaces": True}, {"max_bytes": 2.0}]
)
def test_limits_are_ints(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError, match="must be an int"):
        SurfaceBudget(**kwargs)  # type: ignore[arg-type]


def test_reserve_and_identity_check_their_arguments() -> None:
    budget = SurfaceBudget(max_surfaces=2)
    with pytest.raises(InvalidInputError, match="size_bytes"):
        budget.reserve("5", IDENT)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="identity"):
        budget.reserve(5, None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="pixel_format"):
        SurfaceIdentity(1, 0, 64, 48, pixel_format="nv12")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="width"):
        SurfaceIdentity(1, 0, 64.0, 48, PixelFormat.NV12)  # type: ignore[arg-type]
    assert budget.usage().surfaces == 0
