"""A to_tensor crop is a rectangle of the picture to_ndarray gives, edges included, also for 4:2:0
chroma (an outside pass: an edge row of the crop took its chroma from inside the crop only, up to 79
codes off the full picture). The clip is made here with PyAV, lossless, in bands of colour."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest


def _banded_clip(path: Path) -> str:
    """A 64x48 FFV1 yuv420p frame (lossless) of 2-row bands: chroma changes from one chroma row to the
    next, so an edge row's colour depends on the chroma row outside a crop."""
    av = pytest.importorskip("av")
    width, height = 64, 48
    rgb = np.zeros((height, width, 3), np.uint8)
    colours = np.array([[220, 30, 30], [30, 30, 220], [30, 200, 30]], np.uint8)
    for row in range(height):
        rgb[row] = colours[(row // 2) % 3]
    with av.open(str(path), "w") as out:
        stream: Any = out.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
        frame.pts = 0
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


@pytest.mark.vulkan
@pytest.mark.parametrize("crop", [(8, 4, 32, 8), (3, 10, 20, 17), (0, 40, 64, 8), (10, 0, 16, 6)])
def test_a_420_crop_is_the_shown_pictures_rectangle(tmp_path: Path, crop: tuple[int, int, int, int]) -> None:
    import alpha2

    with alpha2.open(_banded_clip(tmp_path / "bands.mkv"), hwaccel="none") as source:
        frame = source.next_frame()
        assert frame is not None
        with frame:
            shown = frame.to_ndarray().astype(int)
            x, y, w, h = crop
            cropped = frame.to_tensor(crop=crop).numpy().astype(int)
            assert cropped.shape == (h, w, 3)
            assert np.abs(cropped - shown[y : y + h, x : x + w]).max() <= 1
