"""An output the disk does not take (full, over quota, a file size limit, EIO): one typed error naming
the output and the cause, and nothing left behind, for every way alpha2 writes a file."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av.error
import numpy as np
import pytest

import alpha2
from alpha2.api.atomic import write_png
from alpha2.ffmpeg_bridge.encode import EncodeSession
from alpha2.gpu.errors import ErrorKind, OutputWriteError, output_write_error
from tests.media import make_audio_only, make_clip

REPO = str(Path(__file__).resolve().parent.parent)


def _cli(
    *args: str, limit_bytes: int | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # writes past limit_bytes fail with EFBIG (SIGXFSZ ignored, as a shell may)
        if limit_bytes is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (REPO, os.environ.get("PYTHONPATH")))),
        "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp"),
    }
    return subprocess.run(
        [sys.executable, "-m", "alpha2", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        preexec_fn=limit,
        timeout=240,
    )


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("sources")
    video = make_clip(folder / "in.mkv", width=320, height=240, frames=30, gop=30, audio=True).path
    sound = make_audio_only(folder / "sound.mkv", seconds=6.0)
    return {"video": video, "sound": sound}


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("alpha2: error:")]
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("source", "name", "extra"),
    [
        ("video", "out.mp4", ()),
        ("video", "out.mkv", ("--codec", "copy")),
        ("sound", "out.flac", ()),
        ("video", "seg.mkv", ("--segments", "2")),
    ],
)
def test_a_transcode_past_a_file_size_limit_names_the_output(
    sources: dict[str, str], tmp_path: Path, source: str, name: str, extra: tuple[str, ...]
) -> None:
    result = _cli(
        "transcode", sources[source], name, "--quiet", *extra, limit_bytes=20_000, cwd=str(tmp_path)
    )
    line = _one_error_line(result)
    assert f"writing {str(tmp_path / name)!r} failed: the file grew past the largest size allowed" in line
    assert line.endswith("(File too large); nothing was kept"), line
    assert list(tmp_path.iterdir()) == []


def test_alpha2_sample_past_a_file_size_limit_names_the_output(tmp_path: Path) -> None:
    result = _cli(
        "sample", "s.mp4", "--duration", "2", "--size", "320x240", limit_bytes=10_000, cwd=str(tmp_path)
    )
    line = _one_error_line(result)
    assert f"writing {str(tmp_path / 's.mp4')!r} failed" in line and "nothing was kept" in line
    assert list(tmp_path.iterdir()) == []


def _noise(height: int, width: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def test_a_writer_whose_muxer_hits_a_full_disk_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = EncodeSession._encode_one
    calls = {"n": 0}

    def full_after_two(self: EncodeSession, frame: Any) -> None:
        calls["n"] += 1
        if calls["n"] > 2:
            av.error.err_check(-errno.ENOSPC)  # what PyAV raises when FFmpeg's write gets ENOSPC
        real(self, frame)

    monkeypatch.setattr(EncodeSession, "_encode_one", full_after_two)
    target = tmp_path / "w.mkv"
    with pytest.raises(OutputWriteError) as info:
        with alpha2.create(target, width=64, height=48, rate=30) as writer:
            for i in range(10):
                writer.write(_noise(48, 64, i))
    assert (
        str(info.value)
        == f"writing {str(target)!r} failed: the disk is full (No space left on device); nothing was kept"
    )
    assert info.value.errno == errno.ENOSPC and info.value.path == str(target)
    assert list(tmp_path.iterdir()) == []


def test_a_snapshot_on_a_failing_disk_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(
        OutputWriteError,
        match=r"^writing '.*snap\.png' failed: the disk or its connection failed "
        r"\(Input/output error\); nothing was kept$",
    ):
        write_png(tmp_path / "snap.png", np.zeros((4, 4, 4), np.uint8))
    assert list(tmp_path.iterdir()) == []


def test_only_disk_errors_are_said_as_write_failures() -> None:
    quota = OSError(errno.EDQUOT, "Disk quota exceeded")
    wrapped = RuntimeError("muxing")
    wrapped.__cause__ = quota
    said = output_write_error("/x/out.mp4", wrapped)
    assert said is not None and str(said) == (
        "writing '/x/out.mp4' failed: the disk quota is used up (Disk quota exceeded); nothing was kept"
    )
    assert output_write_error("/x/out.mp4", OSError(errno.EINVAL, "Invalid argument")) is None
    assert output_write_error("/x/out.mp4", ValueError("no")) is None
    assert output_write_error(None, OSError(errno.ENOSPC, "No space left on device")) is not None
    # A place without room is the caller's to mend (the same call fails the same way): not a bug, not
    # retried; the disk's own failure is unexpected.
    assert said.kind is ErrorKind.INVALID_INPUT and not said.kind.retryable
    broken = output_write_error("/x/out.mp4", OSError(errno.EIO, "Input/output error"))
    assert broken is not None and broken.kind is ErrorKind.INTERNAL


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 300 kB tmpfs (skipped where mounting is not permitted: not root, or in a container)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"mounting a small tmpfs is not permitted here: {made.stderr.strip() or made.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_real_disk_is_said_for_a_transcode_a_copy_and_a_writer(
    tiny_disk: Path, tmp_path: Path
) -> None:
    big = make_clip(tmp_path / "big.mkv", width=640, height=480, frames=60, gop=60, audio=True).path
    for name, extra in (("out.mp4", ()), ("out.mkv", ("--codec", "copy"))):
        line = _one_error_line(_cli("transcode", big, str(tiny_disk / name), "--quiet", *extra))
        assert line == (
            f"alpha2: error: writing {str(tiny_disk / name)!r} failed: the disk is full (No space left on "
            "device); nothing was kept"
        )
        assert list(tiny_disk.iterdir()) == []
    with pytest.raises(OutputWriteError, match="the disk is full"):
        with alpha2.create(tiny_disk / "w.mkv", width=640, height=480, rate=30) as writer:
            for i in range(40):
                writer.write(_noise(480, 640, i))
    with pytest.raises(OutputWriteError, match="the disk is full"):
        write_png(tiny_disk / "snap.png", np.random.default_rng(1).integers(0, 256, (400, 400, 4), np.uint8))
    assert list(tiny_disk.iterdir()) == []
