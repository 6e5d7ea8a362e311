"""Faults an outside QA pass found in ``alpha2 batch`` and adapter pinning, each with the case that
showed it."""

from __future__ import annotations

import errno
import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps.batch import BatchReport, BatchSettings, batch, print_summary
from alpha2.apps.batch_local import DeviceChoice
from alpha2.apps.batch_plan import MANIFEST_NAME, BatchItem, FileResult, FileStatus
from alpha2.apps.batch_run import STAGING_NAME

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

CPU = BatchSettings(device=DeviceChoice.CPU, workers=1)


def test_an_output_name_at_the_file_systems_limit_is_written(tmp_path: Path) -> None:
    # 255 bytes: the longest name a file may have. The output was staged under its own name, beside
    # which the encoder made '.<name>.<hex>.partial.mp4', too long: "File name too long".
    src = tmp_path / "in"
    src.mkdir()
    name = "x" * 251 + ".mp4"
    make_clip(src / name, width=64, height=48, frames=4)
    out = tmp_path / "out"
    report = batch([str(src)], out, TranscodeOptions(), CPU)
    [result] = report.results
    assert result.status is FileStatus.DONE, result.error
    assert sorted(os.listdir(out)) == sorted([name, MANIFEST_NAME])


def test_an_output_name_longer_than_the_file_system_takes_fails_before_its_transcode(
    tmp_path: Path,
) -> None:
    # 'y' * 252 + '.ts' is a valid input name; its output, '.mp4', is 256 bytes. It failed only after
    # the whole transcode, naming the staging folder.
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / ("y" * 252 + ".ts"), width=64, height=48, frames=4)
    make_clip(src / "ok.mp4", width=64, height=48, frames=4)
    out = tmp_path / "out"
    report = batch([str(src)], out, TranscodeOptions(), CPU)
    by_name = {r.item.key: r for r in report.results}
    assert by_name["ok.mp4"].status is FileStatus.DONE
    failed = by_name["y" * 252 + ".mp4"]
    assert failed.status is FileStatus.FAILED and failed.attempts == 0
    assert failed.error is not None and "256 bytes, more than the 255" in failed.error
    assert STAGING_NAME not in failed.error
    assert sorted(os.listdir(out)) == sorted(["ok.mp4", MANIFEST_NAME])


def _result(key: str, status: FileStatus) -> FileResult:
    item = BatchItem(key, f"/in/{key}", f"/out/{key}")
    if status is FileStatus.DONE:
        return FileResult(item, status, 1, 30, 0.5, 27_162, {"software": 30})
    return FileResult(item, status, 1, error="opening it: Invalid data found when processing input")


def test_a_long_name_keeps_the_status_in_an_80_column_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    # A name is one word; a 255-byte one was the file column's least width, so at 80 columns every
    # other column was left out, status included, and which file failed was not in the table.
    monkeypatch.setenv("COLUMNS", "80")
    long_key = "x" * 251 + ".mp4"
    results = [_result(long_key, FileStatus.DONE), _result("b.mp4", FileStatus.FAILED)]
    report = BatchReport("/out", results, 1.0)
    stream = io.StringIO()
    print_summary(report, stream)
    lines = stream.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    header = next(line for line in lines if "file" in line and "status" in line)
    assert "frames" in header and "size" in header and "paths" in header
    assert any("b.mp4" in line and "failed" in line for line in lines)
    assert any(line.startswith("│ xxxx") and "done" in line and "27.2 kB" in line for line in lines)
    assert "not shown to fit" not in stream.getvalue()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_name_leaves_the_progress_bars_their_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    # The rich display's name column took a 255-byte name whole: at 80 columns the bars and the
    # files' and frames' counts went, the fps cut to '194…'.
    from rich.console import Console

    from alpha2.apps.batch import BatchProgress
    from alpha2.apps.batch_run import Frames, Planned, Started

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERM", "xterm")
    progress = BatchProgress(stream=_Terminal())
    try:
        long_key = "x" * 251 + ".mp4"
        for event in (
            Planned(2, 0),
            Started(long_key, 1, "cpu0", 1),
            Started("b.mp4", 1, "cpu1", 2),
            Frames(long_key, 7, 30),
            Frames("b.mp4", 5, 30),
        ):
            progress(event)
        screen = io.StringIO()
        Console(file=screen, width=80).print(progress._rich.get_renderable())
    finally:
        progress.close()
    lines = screen.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    files = next(line for line in lines if line.startswith("files"))
    frames = next(line for line in lines if line.startswith("frames"))
    assert "0/2" in files, lines
    assert "12/60" in frames and " fps" in frames
    assert any(line.startswith("xxxx") and "…" in line and "7/30" in line for line in lines)


def _read_only(*args: object, **kwargs: object) -> int:
    raise OSError(errno.EROFS, os.strerror(errno.EROFS))


def test_a_read_only_output_folder_is_said_in_one_typed_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The OSError came out as it was: "[Errno 30] Read-only file system: '<out>/.alpha2-batch.lock'",
    # naming the lock file rather than the folder given.
    from alpha2.apps import batch_run
    from alpha2.apps.cli import main

    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / "a.mp4", width=64, height=48, frames=2)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(batch_run, "open_regular", _read_only)
    assert main(["batch", str(src), "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f"alpha2: error: cannot write into the output folder {str(out)!r} (Read-only file system); "
        "choose another --out"
    )
    monkeypatch.setattr(os, "makedirs", _read_only)
    assert main(["batch", str(src), "--out", str(out / "new"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"alpha2: error: cannot make the output folder {str(out / 'new')!r}")
    assert "Errno" not in err


def _webgpu(index: int, backend: str, vulkan_index: int | None, uuid: bytes | None) -> Any:
    from alpha2.gpu.adapters import AdapterType, WgpuAdapterFacts

    return WgpuAdapterFacts(
        index=index,
        name="llvmpipe (LLVM 15.0.6, 256 bits)",
        device_type=AdapterType.CPU,
        vendor_id=0x10005,
        device_id=0,
        uuid=uuid,
        encode_codecs=frozenset(),
        decode_codecs=frozenset(),
        backend=backend,
        vulkan_index=vulkan_index,
    )


def test_a_refused_pin_lists_the_webgpu_adapters_by_the_index_a_pin_takes() -> None:
    # alpha2.adapters() on lavapipe: wgpu shows the one device twice (Vulkan, OpenGL). The refusal of
    # ALPHA2_GPU_ADAPTER=1 listed '#0 llvmpipe ...; #1 llvmpipe ...' (wgpu's own order), though a pin
    # by index takes the Vulkan loader's and '1' had just been refused.
    from alpha2.gpu.adapters import AdapterPinError, resolve_adapter_pin

    uuid = bytes.fromhex("6d65736132322e332e36000000000000")
    adapters = [_webgpu(0, "Vulkan", 0, uuid), _webgpu(1, "OpenGL", 0, uuid)]
    with pytest.raises(AdapterPinError) as refused:
        resolve_adapter_pin("1", adapters)
    message = refused.value.message
    assert "#1" not in message
    assert message.count("#0 llvmpipe") == 1  # one device, named once
    assert [a.backend for a in resolve_adapter_pin("0", adapters)] == ["Vulkan", "OpenGL"]

    # An adapter no Vulkan device matched has no index to pin by, and the listing says how instead.
    with pytest.raises(AdapterPinError) as refused:
        resolve_adapter_pin("0", [_webgpu(0, "OpenGL", None, uuid)])
    assert "#0" not in refused.value.message
    assert "no index: pin it by UUID or name" in refused.value.message
    # Found by an outside pass: without a UUID either (wgpu-native's OpenGL adapter where there is no
    # Vulkan), it said 'pin it by UUID or name' too, though only the name can pin it.
    with pytest.raises(AdapterPinError) as refused:
        resolve_adapter_pin("0", [_webgpu(0, "OpenGL", None, None)])
    assert "no index or UUID: pin it by name" in refused.value.message


@pytest.mark.parametrize("value", ["-1", "two"])
def test_retries_below_zero_is_a_usage_error_naming_the_option(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # '--retries -1' ended with 'alpha2: error: retries must be >= 0, got -1', exit status 1, after the
    # inputs were scanned; --workers 0 is argparse's usage error (2) naming the option.
    from alpha2.apps.cli import main

    with pytest.raises(SystemExit) as ended:
        main(["batch", str(tmp_path), "--out", str(tmp_path / "out"), "--retries", value])
    assert ended.value.code == 2
    assert f"argument --retries: expected a whole number >= 0, got '{value}'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_listed_file_that_is_not_there_is_said_to_not_exist(tmp_path: Path) -> None:
    # It was 'input ... (from ...) is not a file', as for a folder.
    from alpha2.apps.batch_plan import scan_inputs
    from alpha2.gpu.errors import InvalidInputError

    (tmp_path / "folder.mp4").mkdir()
    listing = tmp_path / "list.txt"
    listing.write_text("missing.mp4\n")
    with pytest.raises(InvalidInputError, match=r"missing\.mp4' \(from .*\) does not exist$"):
        scan_inputs([str(listing)])
    listing.write_text("folder.mp4\n")
    with pytest.raises(InvalidInputError, match=r"folder\.mp4' \(from .*\) is not a file$"):
        scan_inputs([str(listing)])


@pytest.mark.parametrize("out_name", [".", ".."])
def test_an_input_folder_that_is_or_is_inside_out_is_refused_as_such(tmp_path: Path, out_name: str) -> None:
    # 'alpha2 batch videos --out videos' said 'no input files found (folders are searched for .3g2
    # ...)': the output folder's files are passed over as outputs, and the input folder was all of it.
    from alpha2.gpu.errors import InvalidInputError

    src = tmp_path / "videos"
    src.mkdir()
    make_clip(src / "a.mkv", width=64, height=48, frames=2)
    out = (src / out_name).resolve()
    where = "is" if out_name == "." else "is inside"
    with pytest.raises(InvalidInputError, match=f"the input folder .* {where} --out .*; choose an --out"):
        batch([str(src)], out, TranscodeOptions(), CPU)
    assert sorted(os.listdir(src)) == ["a.mkv"]


def test_an_unknown_codec_is_refused_once_before_any_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 'alpha2 batch b --out o --codec nope' started its workers and failed each file with the same
    # 'unknown codec or encoder' line (found by an outside pass); --container foo was refused at once.
    from alpha2.apps.cli import main

    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.mkv", "b.mkv"):
        make_clip(src / name, width=64, height=48, frames=2)
    code = main(["batch", str(src), "--out", str(tmp_path / "out"), "--codec", "nope"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("unknown codec or encoder 'nope'") == 1, err
    assert not (tmp_path / "out").exists()
