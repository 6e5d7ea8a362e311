"""Hostile and odd input, from outside: pipes, damaged headers, ... (an outside pass)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from alpha2.api.transcoder import transcode
from alpha2.gpu.errors import InvalidInputError

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

REPO = str(Path(__file__).resolve().parent.parent)


def run_alpha2(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run(
        [sys.executable, "-m", "alpha2", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "args",
    [
        ["transcode", "pipe.mkv", "out.mkv"],
        ["probe", "pipe.mkv"],
        ["play", "pipe.mkv", "--snapshot", "shot.png"],
    ],
)
def test_fifo_input_is_refused_not_waited_on(args: list[str], tmp_path: Path) -> None:
    # A FIFO with no writer: the first open waited for ever; with one, the second open did.
    os.mkfifo(tmp_path / "pipe.mkv")
    done = run_alpha2(args, tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "alpha2: error: input 'pipe.mkv' is a FIFO, not a file: alpha2 opens its input more than once and "
        "seeks in it; save the stream to a file and give its name"
    ]
    assert sorted(os.listdir(tmp_path)) == ["pipe.mkv"]


def test_library_transcode_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.mkv"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInputError, match="is a FIFO, not a file"):
        transcode(fifo, tmp_path / "out.mkv")
    clip = make_clip(tmp_path / "clip.mkv", frames=3)
    transcode(clip.path, tmp_path / "out.mkv")  # a file still goes
    assert (tmp_path / "out.mkv").stat().st_size > 0
