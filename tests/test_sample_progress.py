"""``alpha2 sample`` shows how far it is (a bar on a terminal, lines otherwise), as transcode does; it
showed nothing for a minute of 1080p (left alone by an outside pass). ``--quiet`` and ``--json`` show none."""

from __future__ import annotations

from pathlib import Path

import pytest

from alpha2.api import pipeline
from alpha2.apps.cli import main
from alpha2.apps.sample import write_sample
from alpha2.gpu.geometry import Size


class Recorder(pipeline.Progress):
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def start(self, total: int | None) -> None:
        self.events.append(("start", total))

    def update(self, frames: int) -> None:
        self.events.append(("update", frames))

    def finishing(self, what: str) -> None:
        self.events.append(("finishing", what))

    def close(self, completed: bool = True, *, ended: bool = True) -> None:
        self.events.append(("close", completed))


def test_write_sample_tells_the_frames_written(tmp_path: Path) -> None:
    recorder = Recorder()
    write_sample(str(tmp_path / "s.mp4"), duration_s=0.2, size=Size(64, 48), rate=20, progress=recorder)
    assert recorder.events[0] == ("start", 4)
    assert [e for e in recorder.events if e[0] == "update"] == [("update", n) for n in range(1, 5)]
    assert recorder.events[-2][0] == "finishing" and recorder.events[-1] == ("close", True)


def test_a_failed_sample_closes_its_progress_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from alpha2.apps import sample

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("no pattern")

    monkeypatch.setattr(sample, "pattern_planes", broken)
    recorder = Recorder()
    out = tmp_path / "s.mp4"
    with pytest.raises(RuntimeError, match="no pattern"):
        write_sample(str(out), duration_s=0.2, size=Size(64, 48), rate=20, progress=recorder)
    assert recorder.events[-1] == ("close", False)
    assert not out.exists() and not list(tmp_path.iterdir()), "no half-written output"


def test_the_command_shows_progress_lines_off_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s.mp4"
    assert main(["sample", str(out), "--duration", "0.2", "--size", "64x48", "--no-audio"]) == 0
    err = capsys.readouterr().err
    assert "sample: 6/6" in err and "wrote" in err, err
    assert main(["sample", str(out), "--duration", "0.2", "--size", "64x48", "-y", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "sample:" not in err and "wrote" in err, err
