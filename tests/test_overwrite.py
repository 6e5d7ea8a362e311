"""An existing file is replaced only when asked (``-y`` / ``--overwrite``, as ffmpeg; ``-n`` /
``--no-overwrite`` is the default said explicitly), and an input is never an output: transcode,
play --snapshot, sample and batch (where ``-y`` means: make every output again)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.api.atomic import check_output_path, write_png
from alpha2.api.playback import PlayOptions
from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.api.transcoder import transcode
from alpha2.apps.batch import BatchSettings, batch
from alpha2.apps.batch_plan import MANIFEST_NAME, BatchItem, FileStatus, Manifest
from alpha2.apps.batch_run import Event, FileTask, Finished, Outcome
from alpha2.apps.cli import main
from alpha2.apps.player import play
from alpha2.apps.sample import write_sample
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

SAMPLE = ["--duration", "0.1", "--size", "64x48", "--no-audio"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(args)
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("overwrite")
    return write_sample(str(root / "clip.mp4"), duration_s=0.2, size=Size(64, 48), audio=False).path


def _untouched(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


# ---------------------------------------------------------------------------------------------------
# the check itself


def test_check_output_path(tmp_path: Path) -> None:
    out = tmp_path / "out.mp4"
    assert check_output_path(out, overwrite=False) == str(out)  # nothing there: fine either way
    out.write_bytes(b"x")
    with pytest.raises(InvalidInputError) as info:
        check_output_path(str(out), overwrite=False)
    assert info.value.message == f"{out} exists; pass -y (--overwrite) to replace it"
    assert check_output_path(out, overwrite=True) == str(out)
    dangling = tmp_path / "link.mp4"
    dangling.symlink_to(tmp_path / "nowhere.mp4")
    with pytest.raises(InvalidInputError, match="exists"):
        check_output_path(dangling, overwrite=False)  # a name taken, even by a dangling link
    # An input is never an output, whatever overwrite says: by name, by link, by hard link.
    (tmp_path / "hard.mp4").hardlink_to(out)
    (tmp_path / "soft.mp4").symlink_to(out)
    for name in ("out.mp4", "hard.mp4", "soft.mp4", "./out.mp4"):
        with pytest.raises(InvalidInputError, match="is the input"):
            check_output_path(tmp_path / name, overwrite=True, inputs=[str(out)])


# ---------------------------------------------------------------------------------------------------
# sample


def test_sample_refuses_then_replaces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.mp4"
    assert run_cli(["sample", str(out), *SAMPLE], capsys)[0] == 0
    before = _untouched(out)
    code, _, err = run_cli(["sample", str(out), *SAMPLE], capsys)
    assert code == 1
    assert one_line(err) == f"alpha2: error: {out} exists; pass -y (--overwrite) to replace it"
    code, _, err = run_cli(["sample", str(out), *SAMPLE, "-n"], capsys)
    assert code == 1 and "pass -y" in one_line(err)
    assert _untouched(out) == before
    assert run_cli(["sample", str(out), *SAMPLE, "--size", "32x32", "-y"], capsys)[0] == 0
    assert out.read_bytes() != before[0]
    assert run_cli(["sample", str(out), *SAMPLE, "--overwrite"], capsys)[0] == 0
    code, _, err = run_cli(["sample", str(out), *SAMPLE, "-y", "-n"], capsys)
    assert code == 2 and "not allowed with" in err  # one or the other
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.mp4"]


def test_sample_relative_name_in_the_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out.mp4").write_bytes(b"mine")
    code, _, err = run_cli(["sample", "out.mp4", *SAMPLE], capsys)
    assert code == 1
    assert one_line(err) == "alpha2: error: out.mp4 exists; pass -y (--overwrite) to replace it"
    assert (tmp_path / "out.mp4").read_bytes() == b"mine"


# ---------------------------------------------------------------------------------------------------
# transcode


def test_transcode_refuses_then_replaces(
    clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o.mp4"
    out.write_bytes(b"someone's file")
    code, _, err = run_cli(["transcode", clip, str(out), "--quiet"], capsys)
    assert code == 1
    assert one_line(err) == f"alpha2: error: {out} exists; pass -y (--overwrite) to replace it"
    assert out.read_bytes() == b"someone's file"
    # Refused before the input is even opened.
    code, _, err = run_cli(["transcode", str(tmp_path / "missing.mp4"), str(out)], capsys)
    assert code == 1 and "exists; pass -y" in one_line(err)
    code, _, err = run_cli(["transcode", clip, str(out), "--quiet", "-y", "--frames", "2"], capsys)
    assert code == 0, err
    assert out.read_bytes() != b"someone's file" and out.stat().st_size > 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.mp4"]


def test_transcode_never_writes_its_input(
    clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.mp4"
    source.write_bytes(Path(clip).read_bytes())
    (tmp_path / "hard.mp4").hardlink_to(source)
    (tmp_path / "soft.mp4").symlink_to(source)
    before = _untouched(source)
    for name in ("in.mp4", "hard.mp4", "soft.mp4"):
        for flag in ([], ["-y"]):
            code, _, err = run_cli(["transcode", str(source), str(tmp_path / name), *flag], capsys)
            assert code == 1 and "is the input" in one_line(err), (name, flag, err)
    assert _untouched(source) == before


def test_transcode_library_option(clip: str, tmp_path: Path) -> None:
    out = tmp_path / "o.mkv"
    out.write_bytes(b"x")
    with pytest.raises(InvalidInputError, match="exists; pass -y"):
        transcode(clip, out, TranscodeOptions(overwrite=False, frames=2))
    assert out.read_bytes() == b"x"
    # The library replaces by default, as open(path, "w") does; the command line asks first.
    assert TranscodeOptions().overwrite is True
    transcode(clip, out, TranscodeOptions(frames=2, hwaccel="none"))
    assert out.stat().st_size > 100
    with pytest.raises(InvalidInputError, match="is the input"):
        transcode(clip, clip, TranscodeOptions(overwrite=True))


# ---------------------------------------------------------------------------------------------------
# play --snapshot


def test_snapshot_never_overwrites_its_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``alpha2 play X.png --snapshot X.png``: refused with and without -y, before any rendering."""
    picture = tmp_path / "x.png"
    write_png(picture, np.full((16, 16, 4), 200, dtype=np.uint8))
    before = _untouched(picture)
    for flag in ([], ["-y"]):
        code, _, err = run_cli(["play", str(picture), "--snapshot", str(picture), *flag], capsys)
        assert code == 1 and "is the input" in one_line(err), err
    assert _untouched(picture) == before
    with pytest.raises(InvalidInputError, match="is the input"):
        play(str(picture), PlayOptions(snapshot=str(picture)), environ={})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.png"]


def test_snapshot_refuses_an_existing_file(
    clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = tmp_path / "s.png"
    snap.write_bytes(b"mine")
    code, _, err = run_cli(["play", clip, "--snapshot", str(snap)], capsys)
    assert code == 1
    assert one_line(err) == f"alpha2: error: {snap} exists; pass -y (--overwrite) to replace it"
    assert snap.read_bytes() == b"mine"
    assert PlayOptions().overwrite is True  # the library's default, as for transcode


@pytest.mark.vulkan
def test_snapshot_replaced_with_y(clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "s.png"
    snap.write_bytes(b"mine")
    code, _, err = run_cli(["play", clip, "--snapshot", str(snap), "-y", "--hwaccel", "none"], capsys)
    assert code == 0, err
    assert snap.read_bytes().startswith(b"\x89PNG")


# ---------------------------------------------------------------------------------------------------
# batch: -y means make every output again; a file no batch made is not replaced without it


class WritingBackend:
    """Writes each output as a worker would (``video`` bytes), one attempt each."""

    def __init__(self) -> None:
        self.tasks: list[FileTask] = []
        self._running: list[FileTask] = []

    def start(self) -> None:
        pass

    def capacity(self) -> int:
        return 4 - len(self._running)

    def submit(self, task: FileTask) -> None:
        self._running.append(task)
        self.tasks.append(task)

    def poll(self, timeout: float) -> list[Event]:
        events: list[Event] = []
        for task in self._running:
            with open(task.output, "wb") as f:
                f.write(b"video")
            events.append(Finished(Outcome(task.key, True, "fake", frames=1, output_bytes=5)))
        self._running = []
        return events

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"runner": "fake"}


def _inputs(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.mp4", "b.mp4"):
        (src / name).write_bytes(name.encode())
    return src


def test_batch_keeps_resume_and_refuses_foreign_files(tmp_path: Path) -> None:
    src = _inputs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "b.mp4").write_bytes(b"someone's file")
    first = batch([str(src)], out, TranscodeOptions(), backend=WritingBackend())
    status = {r.item.key: r for r in first.results}
    assert status["a.mp4"].status is FileStatus.DONE
    refused = status["b.mp4"]
    assert refused.status is FileStatus.FAILED and refused.attempts == 0
    assert "exists and no batch into this folder made it; pass -y (--overwrite)" in (refused.error or "")
    assert (out / "b.mp4").read_bytes() == b"someone's file"
    assert sorted(Manifest.load(str(out)).entries) == ["a.mp4"]  # the refused one is not claimed

    # Resumed: what is done is skipped; the foreign file is still refused.
    backend = WritingBackend()
    again = batch([str(src)], out, TranscodeOptions(), backend=backend)
    assert [r.status for r in again.results] == [FileStatus.SKIPPED, FileStatus.FAILED]
    assert backend.tasks == []

    # -y: every output again, the foreign file replaced.
    backend = WritingBackend()
    forced = batch([str(src)], out, TranscodeOptions(), BatchSettings(force=True), backend=backend)
    assert [r.status for r in forced.results] == [FileStatus.DONE, FileStatus.DONE]
    assert sorted(t.key for t in backend.tasks) == ["a.mp4", "b.mp4"]
    assert (out / "b.mp4").read_bytes() == b"video"


def test_batch_makes_again_what_it_made_when_the_settings_change(tmp_path: Path) -> None:
    src = _inputs(tmp_path)
    out = tmp_path / "out"
    batch([str(src)], out, TranscodeOptions(), backend=WritingBackend())
    backend = WritingBackend()
    redone = batch([str(src)], out, TranscodeOptions(crf=30), backend=backend)
    assert [r.status for r in redone.results] == [FileStatus.DONE, FileStatus.DONE]  # its own: no -y needed


def test_batch_command_line_y(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / "a.mp4", width=64, height=48, frames=3)
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.mp4").write_bytes(b"someone's file")
    code, stdout, err = run_cli(["batch", str(src), "--out", str(out), "--quiet"], capsys)
    assert code == 1 and "pass -y (--overwrite)" in stdout and "1 of 1 files failed" in err
    assert (out / "a.mp4").read_bytes() == b"someone's file"
    assert not (out / MANIFEST_NAME).exists()
    code, _, err = run_cli(["batch", str(src), "--out", str(out), "--quiet", "-y", "--workers", "1"], capsys)
    assert code == 0, err
    assert (out / "a.mp4").read_bytes() != b"someone's file"
    assert Manifest.load(str(out)).done(
        BatchItem("a.mp4", str(src / "a.mp4"), str(out / "a.mp4")),
        Manifest.load(str(out)).entries["a.mp4"]["input_hash"],
        Manifest.load(str(out)).entries["a.mp4"]["settings_hash"],
    )
    for flag in ("-n", "--no-overwrite", "--force", "--overwrite"):
        assert (
            run_cli(["batch", str(src), "--out", str(out), "--quiet", flag, "--workers", "1"], capsys)[0] == 0
        )


@pytest.mark.vulkan
def test_every_snapshot_route_refuses_an_existing_file_and_its_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The swscale snapshot (the CPU machines' default) and the wall's snapshot keep the same rules as
    the GPU one: an existing file needs -y, and the input is never written over."""
    clip = make_clip(tmp_path / "c.mp4", frames=3).path
    png = tmp_path / "s.png"
    png.write_bytes(b"keep")
    for args in (["play", clip, "--snapshot", str(png)], ["play", clip, clip, "--snapshot", str(png)]):
        assert main(args) == 1
        assert "pass -y" in capsys.readouterr().err
        assert png.read_bytes() == b"keep"
    picture = tmp_path / "in.png"
    write_png(str(picture), np.zeros((8, 8, 4), np.uint8))
    before = picture.read_bytes()
    assert main(["play", str(picture), "--snapshot", str(picture), "-y"]) == 1
    assert "is the input" in capsys.readouterr().err
    assert picture.read_bytes() == before
