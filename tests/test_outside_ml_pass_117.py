"""Faults an outside pass (helper 117) over the machine-learning API found, from the docs alone. Clips
are made here with PyAV (tests/media.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.media import make_interlaced_mpeg2, mux_with_pts


@pytest.fixture(scope="module")
def fine_ticks(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Frames at 0, 4.1, 4.2 and 4.3 s in an MP4 whose time base is 1/90000 s (as MPEG-TS's): a float32
    4.2 (4.1999998 s) lies 0.017 ticks before the frame at 4.2 s."""
    pytest.importorskip("av")
    folder: Path = tmp_path_factory.mktemp("ml_pass_117")
    return mux_with_pts(folder / "ticks.mp4", [0, 369000, 378000, 387000], rate=90000)


def test_float32_times_find_the_frame_at_their_time(fine_ticks: str) -> None:
    """A time given as float32 (a torch tensor's default dtype, or a numpy float32 array) found the frame
    before the one stamped at it: float32(4.2) is 4.1999998 s, a little before the frame at 4.2 s, and
    frames_at gave the frame at 4.1. A float32 time now stands for the moment it rounds from."""
    import alpha2

    with alpha2.open(fine_ticks, hwaccel="none") as source:
        asked = [np.float32(4.2), *np.array([4.2, 4.3], np.float32), np.array(4.2, np.float16)]
        frames = source.frames_at(asked)
        try:
            assert [round(frame.pts_seconds, 6) for frame in frames] == [4.2, 4.2, 4.3, 4.2]
        finally:
            for frame in frames:
                frame.release()
        with source.frame_at(np.float32(4.2)) as frame:
            assert round(frame.pts_seconds, 6) == 4.2
        # A float32 a little before a frame's time, beyond its own rounding, is still the frame before.
        with source.frame_at(np.float32(4.199)) as frame:
            assert round(frame.pts_seconds, 6) == 4.1


def test_float32_times_in_a_torch_tensor(fine_ticks: str) -> None:
    """torch.tensor([4.2]) is float32: its items found the frame at 4.1 s."""
    torch = pytest.importorskip("torch")
    import alpha2

    with alpha2.open(fine_ticks, hwaccel="none") as source:
        for times, want in (
            (torch.tensor([4.2, 0.0]), [4.2, 0.0]),
            # bfloat16 holds 4.2 as 4.1875: the moments that round to it reach past 4.2 s.
            (torch.tensor([4.2, 0.0], dtype=torch.bfloat16), [4.2, 0.0]),
        ):
            frames = source.frames_at(times)
            try:
                assert [round(frame.pts_seconds, 6) for frame in frames] == want, times
            finally:
                for frame in frames:
                    frame.release()


def _luma(frame: Any) -> np.ndarray:
    plane = frame.planes[0]
    return np.frombuffer(plane, np.uint8).reshape(plane.height, -1)[:, : frame.width].copy()


def test_frames_at_index_in_a_program_stream_of_small_pictures(tmp_path: Path) -> None:
    """In an MPEG-PS whose pictures are smaller than its 2048-byte packs, most packets carry no timestamp
    and the demuxer stamps them by frame durations; after a seek its parser does not know them yet, so
    the frames decoded from there took a neighbour's time (frame 13 was stamped 0.54 s, frame 14's), and
    frames_at_index([13]) gave frame 12. A landing whose first frame has a time the frame index does not
    know is now refused like one after the target, and an earlier place is tried."""
    import av

    import alpha2

    path = make_interlaced_mpeg2(tmp_path / "small.mpg", frames=20)
    with av.open(path) as container:
        want = [_luma(frame) for frame in container.decode(video=0)]
    asked = [13, 5, 19, 2, 16, 9, 13, 0, 11, 18, 7, 15]
    with alpha2.open(path, hwaccel="none") as source:
        assert len(source) == len(want)
        wrong = []
        for pair in zip(asked[::2], asked[1::2], strict=True):
            frames = source.frames_at_index(list(pair))
            try:
                for index, frame in zip(pair, frames, strict=True):
                    luma = frame.plane_arrays()[0]
                    if not np.array_equal(luma, want[index]):
                        wrong.append((index, [i for i, w in enumerate(want) if np.array_equal(w, luma)]))
            finally:
                for frame in frames:
                    frame.release()
        assert not wrong, f"(index asked, frames given): {wrong}"
