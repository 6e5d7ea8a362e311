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
