"""Faults an outside pass over the writing API found (``alpha2.create`` / ``Writer``, its options, audio,
``StreamGroup.run``), each kept from coming back. Every clip is made here."""

from __future__ import annotations

import os
from pathlib import Path

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
