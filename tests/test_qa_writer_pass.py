"""Faults an outside pass over the writing API found (``alpha2.create`` / ``Writer``, its options, audio,
``StreamGroup.run``), each kept from coming back. Every clip is made here."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import alpha2
from alpha2.gpu.errors import InvalidInputError

# -- the output path -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [None, 5, b"/tmp/out.mp4"])
def test_a_path_that_is_no_path_is_refused_typed(path: object) -> None:
    with pytest.raises(InvalidInputError, match="path must name the output file"):
        alpha2.create(path)  # type: ignore[arg-type]


def test_a_directory_as_the_output_is_refused_at_create_not_after_encoding(tmp_path: Path) -> None:
    (tmp_path / "clip.mp4").mkdir()
    with pytest.raises(InvalidInputError, match="is a directory"):
        alpha2.create(tmp_path / "clip.mp4")
    assert os.listdir(tmp_path) == ["clip.mp4"]  # no partial file made either


def test_a_missing_folder_is_refused_at_create(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        alpha2.create(tmp_path / "missing" / "clip.mp4")


# -- rate and pts_seconds -------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [float("inf"), True, "30", float("nan"), 0])
def test_a_rate_that_is_no_positive_finite_number_is_refused_typed(tmp_path: Path, rate: object) -> None:
    with pytest.raises(InvalidInputError, match="rate must be positive frames per second"):
        alpha2.create(tmp_path / "clip.mp4", rate=rate)  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []


@pytest.mark.vulkan
def test_pts_seconds_takes_numbers_numpy_ones_too_and_refuses_the_rest_typed(tmp_path: Path) -> None:
    import av

    picture = np.zeros((16, 16, 3), np.uint8)
    with alpha2.create(tmp_path / "clip.mkv", rate=np.float32(25)) as writer:
        for bad in ("1.0", True, float("inf")):
            with pytest.raises(InvalidInputError, match="pts_seconds must be a time >= 0"):
                writer.write(picture, pts_seconds=bad)  # type: ignore[arg-type]
        writer.write(picture, pts_seconds=np.float32(0.5))
        writer.write(picture, pts_seconds=np.int64(1))
        writer.write(picture)  # one frame at 25 fps after the last
    assert writer.rate == 25
    with av.open(str(tmp_path / "clip.mkv")) as container:
        times = [float(frame.time) for frame in container.decode(video=0)]
    assert times == pytest.approx([0.5, 1.0, 1.04], abs=1e-3)
