"""Faults a second outside pass over the writing API found (``alpha2.create`` / ``Writer``,
``transcode``), each kept from coming back. Every clip is made here."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import alpha2
from alpha2.gpu.errors import InvalidInputError
from tests.media import make_clip


@pytest.mark.vulkan
def test_an_odd_sided_array_for_an_encoder_of_odd_sides_is_refused_at_write_not_at_close(
    tmp_path: Path,
) -> None:
    """VP9 takes odd sides, but the GPU conversion writes even-sided chroma: a 63x47 array into .webm was
    taken, and close() failed with 'plane 1 is 63 bytes x 23 rows', losing every frame written."""
    writer = alpha2.create(tmp_path / "clip.webm")
    with pytest.raises(InvalidInputError, match="must be a multiple of 2; crop to 62x46"):
        writer.write(np.zeros((47, 63, 3), np.uint8))
    writer.write(np.zeros((46, 62, 3), np.uint8))  # the Writer stays usable, at the cropped size
    writer.close()
    assert os.listdir(tmp_path) == ["clip.webm"]


@pytest.mark.vulkan
@pytest.mark.parametrize(("shape", "pad"), [((1, 1, 3), "2x2"), ((1, 64, 3), "64x2"), ((47, 1, 3), "2x48")])
def test_a_one_pixel_side_is_told_to_pad_not_to_crop_to_nothing(
    tmp_path: Path, shape: tuple[int, int, int], pad: str
) -> None:
    """A 1x1 array was told 'crop to 0x0', a picture of nothing."""
    with alpha2.create(tmp_path / "clip.mp4") as writer:
        with pytest.raises(InvalidInputError, match=f"multiple of 2; pad to {pad} "):
            writer.write(np.zeros(shape, np.uint8))
        writer.write(np.zeros((2, 2, 3), np.uint8))


def test_a_progress_class_instead_of_an_instance_is_refused_typed(tmp_path: Path) -> None:
    """The reference says progress= takes 'a subclass of Progress': passed as the class, it was called
    with the frames done, a TypeError ('P() takes no arguments') from inside the frame loop."""
    from alpha2.api.pipeline import Progress
    from alpha2.api.transcoder import TranscodeOptions, transcode

    class Shown(Progress):
        pass

    clip = make_clip(tmp_path / "c.mp4", width=64, height=48, frames=2)
    with pytest.raises(InvalidInputError, match=r"progress takes an instance: progress=Shown\(\)"):
        transcode(clip.path, str(tmp_path / "o.mp4"), TranscodeOptions(), progress=Shown)  # type: ignore[arg-type]
    assert not (tmp_path / "o.mp4").exists()


def _blocks() -> np.ndarray:
    """Eight flat 32x48 blocks of saturated and mid colours, whose centres survive compression."""
    picture = np.zeros((96, 128, 3), np.uint8)
    for index, colour in enumerate(_COLOURS):
        row, column = divmod(index, 4)
        picture[row * 48 : (row + 1) * 48, column * 32 : (column + 1) * 32] = colour
    return picture


_COLOURS = [
    (255, 0, 0),
    (0, 255, 0),
    (0, 0, 255),
    (255, 255, 255),
    (16, 16, 16),
    (200, 120, 40),
    (40, 200, 180),
]


def _worst_centre_error(path: Path) -> int:
    with alpha2.open(path, hwaccel="none") as source:
        shown = next(iter(source)).to_ndarray("rgb24").astype(int)
    centres = [shown[(i // 4) * 48 + 24, (i % 4) * 32 + 16] for i in range(len(_COLOURS))]
    return max(int(np.abs(centre - colour).max()) for centre, colour in zip(centres, _COLOURS, strict=True))


@pytest.mark.vulkan
def test_mjpeg_from_arrays_keeps_their_colours(tmp_path: Path) -> None:
    """MJPEG's pictures are read as BT.601 whatever the tags (JFIF): arrays converted by the default
    BT.709 came back 22 code values off (orange 200,120,40 as 192,117,45), where ffmpeg's are 2 off."""
    with alpha2.create(tmp_path / "clip.avi", codec="mjpeg") as writer:
        writer.write(_blocks())
    assert _worst_centre_error(tmp_path / "clip.avi") <= 4


@pytest.mark.vulkan
def test_full_range_pictures_into_mjpeg_are_not_stretched_twice(tmp_path: Path) -> None:
    """Full-range NV12 went to MJPEG's yuvj420p through PyAV's conversion, which reads NV12 as limited:
    stretched again, black 16 came back 0 and red 248."""
    from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourRange

    full = ColourInfo(matrix=ColourMatrix.SMPTE170M, range=ColourRange.FULL)
    with alpha2.create(tmp_path / "clip.avi", codec="mjpeg", colour=full) as writer:
        writer.write(_blocks())
    assert _worst_centre_error(tmp_path / "clip.avi") <= 4
