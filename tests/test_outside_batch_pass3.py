"""Faults a third outside pass found in ``alpha2 batch`` and ``alpha2 sample``, each with the case
that showed it."""

from __future__ import annotations

import codecs
import io
import os
import sys
from pathlib import Path

import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps.batch import BatchSettings, batch
from alpha2.apps.batch_local import DeviceChoice
from alpha2.apps.batch_plan import MANIFEST_NAME, FileStatus, expand_inputs
from alpha2.apps.cli import main
from alpha2.apps.sample import write_sample
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

CPU = BatchSettings(device=DeviceChoice.CPU, workers=1)


def test_an_output_path_longer_than_the_file_system_takes_fails_before_its_transcode(
    tmp_path: Path,
) -> None:
    # Every name fits (200 bytes) but the output's whole path passes PATH_MAX (4096 with its NUL).
    # The file was transcoded, then failed with "[Errno 36] File name too long: '<4 kB of path>'"
    # and left the 18 empty folders made on its way under --out.
    src = tmp_path / "in"
    part = "b" * 200
    deep = src.joinpath(*[part] * 18)
    deep.mkdir(parents=True)
    make_clip(deep / "v.mp4", width=64, height=48, frames=4)
    make_clip(src / "ok.mp4", width=64, height=48, frames=4)
    out = tmp_path / ("o" * 200) / ("p" * 240)
    assert len(os.fsencode(out / deep.relative_to(src) / "v.mp4")) >= 4096
    report = batch([str(src)], out, TranscodeOptions(), CPU)
    by_name = {r.item.key: r for r in report.results}
    assert by_name["ok.mp4"].status is FileStatus.DONE
    [failed] = [r for r in report.results if r.item.key != "ok.mp4"]
    assert failed.status is FileStatus.FAILED and failed.attempts == 0
    assert failed.error is not None and "more than the 4095" in failed.error
    assert "Errno" not in failed.error
    assert sorted(os.listdir(out)) == sorted(["ok.mp4", MANIFEST_NAME])


def test_a_local_batch_starts_no_more_workers_than_files(tmp_path: Path) -> None:
    # 'alpha2 batch one.mp4 --out o --workers 64' started 64 worker processes (5.9 s where one
    # takes 0.6 s); the default, one a core, does the same with one file on a 64-core machine.
    src = tmp_path / "in"
    src.mkdir()
    for i in range(2):
        make_clip(src / f"c{i}.mp4", width=64, height=48, frames=4)
    report = batch(
        [str(src)], tmp_path / "out", TranscodeOptions(), BatchSettings(device=DeviceChoice.CPU, workers=6)
    )
    assert [r.status for r in report.results] == [FileStatus.DONE] * 2
    assert len(report.runner["workers"]) == 2


def test_sample_writes_a_gif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 'alpha2 sample c.gif' (.gif is among the containers it names) failed with 'gif takes no crf:
    # ... leave crf out', a crf the user never gave; with the crf left out it failed on the tone
    # ("'gif' format does not support 'aac' codec"). A GIF holds no sound: the tone is left out, said.
    out = tmp_path / "c.gif"
    code = main(["sample", str(out), "--duration", "0.2", "--size", "64x48"])
    assert code == 0 and out.stat().st_size > 0
    err = capsys.readouterr().err
    assert "a GIF holds no sound" in err and "error" not in err
    result = write_sample(str(tmp_path / "d.gif"), duration_s=0.1, size=Size(64, 48))
    assert (result.audio, result.audio_note, result.codec) == (False, "a GIF holds no sound", "gif")


def test_sample_says_one_frame_and_refuses_every_duration_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 'wrote c.mp4: 1 frames 64x48'; '--duration -1' said 'expected a number of seconds >= 0' and
    # '--duration 0' then 'duration must be more than 0 seconds'.
    assert main(["sample", str(tmp_path / "c.mp4"), "--duration", "0.01", "--size", "64x48"]) == 0
    assert ": 1 frame 64x48 at 30 fps" in capsys.readouterr().err
    for text in ("0", "-1", "nan", "abc"):
        with pytest.raises(SystemExit):
            main(["sample", str(tmp_path / "d.mp4"), "--duration", text])
        err = capsys.readouterr().err
        assert f"expected a number of seconds > 0, got '{text}'" in err, err


@pytest.mark.parametrize(
    ("encoding", "newline"), [("utf-8-sig", "\r\n"), ("utf-16", "\r\n"), ("utf-16-be", "\n")]
)
def test_a_list_file_written_by_windows_tools_is_read(tmp_path: Path, encoding: str, newline: str) -> None:
    # Notepad's 'UTF-8 with BOM' list failed with "input '.../\ufeffa.mp4' does not exist", and
    # PowerShell 5's 'dir -name > list.txt' (UTF-16) with a path of NULs.
    make_clip(tmp_path / "a.mp4", width=64, height=48, frames=4)
    make_clip(tmp_path / "b c.mp4", width=64, height=48, frames=4)
    text = newline.join(["a.mp4", "b c.mp4", ""])
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    (tmp_path / "list.txt").write_bytes(data)
    found = expand_inputs([str(tmp_path / "list.txt")])
    assert [os.path.basename(p) for p, _ in found] == ["a.mp4", "b c.mp4"]


def test_an_input_that_is_there_but_no_file_is_not_said_missing(tmp_path: Path) -> None:
    # 'alpha2 batch fifo.mp4' and a dangling link both said "input ... does not exist".
    fifo = tmp_path / "fifo.mp4"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInputError, match="is not a file or a folder"):
        expand_inputs([str(fifo)])
    link = tmp_path / "gone.mp4"
    link.symlink_to(tmp_path / "moved.mp4")
    with pytest.raises(InvalidInputError, match=r"is a link to .*moved\.mp4', which does not exist"):
        expand_inputs([str(link)])
    with pytest.raises(InvalidInputError, match="does not exist"):
        expand_inputs([str(tmp_path / "nothing.mp4")])


def test_the_summarys_reasons_are_wrapped_by_terminal_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    # A failure under a CJK name was wrapped by its characters (two columns each): the console folded
    # the too-wide lines again, unindented ('MP4 / MOV without its' alone on a line); and a number
    # was parted from its unit ('(0.033' / 's long)').
    from alpha2.apps.batch import BatchReport, print_summary
    from alpha2.apps.batch_plan import BatchItem, FileResult
    from alpha2.apps.cli import display_width

    monkeypatch.setenv("COLUMNS", "80")
    key = "壊れた動画ファイル壊れた動画ファイル壊れた動画.mp4"
    item = BatchItem(key, f"/in/{key}", f"/out/{key}")
    error = (
        f"opening '/tmp/batch-pass/cj/{key}': an MP4 / MOV without its 'moov' index: the file ends "
        "before its index was written, as a recording stopped short leaves it"
    )
    short = BatchItem("s.mp4", "/in/s.mp4", "/out/s.mp4")
    late = "--from 10 s is past the end of '/tmp/batch-pass/in/short.mp4/xxxxxx' (0.033 s long)"
    results = [
        FileResult(item, FileStatus.FAILED, 1, error=error),
        FileResult(short, FileStatus.FAILED, 1, error=late),
    ]
    stream = io.StringIO()
    print_summary(BatchReport("/out", results, 1.0), stream)
    lines = stream.getvalue().splitlines()
    assert all(display_width(line) <= 80 for line in lines), max(lines, key=display_width)
    start = next(i for i, line in enumerate(lines) if line.startswith(key + ":"))
    reason = lines[start : start + 4]
    assert all(line.startswith("  ") for line in reason[1:]), reason
    assert not any(line.endswith("0.033") for line in lines)


def test_a_ray_address_ray_cannot_read_is_refused_as_the_users(tmp_path: Path) -> None:
    # 'alpha2 batch ... --ray nonsense' said 'internal error (ValueError): Invalid address format'.
    pytest.importorskip("ray")
    from alpha2.apps.batch_ray import RayBackend

    backend = RayBackend("nonsense")
    try:
        with pytest.raises(InvalidInputError, match=r"--ray 'nonsense': .*give 'auto'"):
            backend.start()
    finally:
        backend.close()


def test_a_ray_address_where_nothing_listens_is_refused_at_once() -> None:
    # 'alpha2 batch ... --ray 127.0.0.1:1' hung in ray.init for good, printing 'Failed to connect to
    # GCS' every 40 s, deaf to Ctrl-C and SIGTERM, its lock left in --out.
    import socket

    from alpha2.apps.batch_ray import RayBackend
    from alpha2.gpu.errors import UnsupportedError

    pytest.importorskip("ray")
    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        backend = RayBackend(f"127.0.0.1:{port}")
        try:
            with pytest.raises(UnsupportedError, match="no Ray cluster answers there"):
                backend.start()
        finally:
            backend.close()


def test_sample_says_a_name_that_is_not_utf8_as_batch_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 'wrote .../x\udcff.mp4' (the surrogate Python holds the byte as); batch says 'x\xff.mp4'.
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/x\xff.mp4")
    assert main(["sample", out, "--duration", "0.1", "--size", "64x48"]) == 0
    err = capsys.readouterr().err
    assert "x\\xff.mp4: 3 frames" in err and "\udcff" not in err, ascii(err)


@pytest.mark.parametrize("words", [["-n", "--force"], ["--force", "--no-overwrite"]])
def test_force_beside_no_overwrite_is_refused_as_y_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: list[str]
) -> None:
    """'-n --force' was taken, --force winning (every output made again and replaced), where '-n -y' is
    refused: --force is -y's other spelling, in the same either-or group now (an outside pass)."""
    (tmp_path / "in").mkdir()
    clip = make_clip(tmp_path / "in" / "a.mp4", frames=3).path
    with pytest.raises(SystemExit) as exited:
        main(["batch", os.path.dirname(clip), "--out", str(tmp_path / "out"), *words])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
