"""Writing the frames of a file with a display matrix: the output shows them as the source did (an
outside pass: their planes were written as stored, without the matrix, so a phone video came out
sideways, and an array of the shown size written after one was squeezed into the stored size)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.media import make_clip


@pytest.mark.vulkan
@pytest.mark.parametrize("ccw", [90, 180])
def test_written_rotated_frames_show_as_the_source_shows_them(tmp_path: Path, ccw: int) -> None:
    import alpha2

    clip = make_clip(tmp_path / f"rot{ccw}.mp4", width=64, height=48, frames=3, rotation_ccw=ccw).path
    out = tmp_path / "out.mkv"
    shown: list[np.ndarray] = []
    with alpha2.open(clip, hwaccel="none") as source, alpha2.create(out, codec="ffv1") as writer:
        for frame in source:
            shown.append(frame.to_ndarray())
            writer.write(frame)
        writer.write(np.zeros_like(shown[0]))  # an array of the shown size goes with them
        assert writer.timing is not None and "own timestamps" in writer.timing
    with alpha2.open(out, hwaccel="none") as written:
        assert (written.width, written.height) == (shown[0].shape[1], shown[0].shape[0])
        pictures = [frame.to_ndarray() for frame in written]
    assert len(pictures) == 4
    for made, expected in zip(pictures, shown, strict=False):
        assert np.abs(made.astype(int) - expected.astype(int)).mean() < 3
    assert pictures[3].max() <= 8
