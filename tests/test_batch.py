"""``alpha2 batch`` end to end on clips the tests make: the local default (CPU workers here), a resumed
run, a worker killed in the middle of a file, and Ray started by the test itself (one module-scoped
session: Ray takes seconds to start)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps.batch import BatchReport, BatchSettings, batch, print_summary
from alpha2.apps.batch_local import DeviceChoice
from alpha2.apps.batch_plan import MANIFEST_NAME, STAGING_NAME, BatchItem, FileResult, FileStatus
from alpha2.apps.batch_run import Event, Finished, Frames, Retrying, Started
from alpha2.apps.cli import main
from alpha2.gpu.identity import ExecutionPath

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

FRAMES = 12


def _frames(path: str | Path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


def _leftovers(out: Path) -> list[str]:
    """Anything under ``out`` that is not a finished output or the manifest."""
    names = []
    for root, dirs, files in os.walk(out):
        names += [os.path.join(root, d) for d in dirs if d.startswith(".")]
        names += [os.path.join(root, f) for f in files if ".partial" in f or f.startswith(".")]
    return names


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("batch-in")
    make_clip(folder / "one.mp4", width=96, height=64, frames=FRAMES)
    (folder / "sub").mkdir()
    make_clip(folder / "sub" / "two.mkv", width=96, height=64, frames=FRAMES)
    make_clip(folder / "three.mp4", width=96, height=64, frames=FRAMES, audio=True)
    (folder / "broken.mp4").write_bytes(b"this is not a video at all")
    return folder


def test_local_default_then_resume(clips: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(["batch", str(clips), "--out", str(out), "--json", "--workers", "2"])
    assert code == 1  # one input is broken
    report = json.loads(capsys.readouterr().out)
    files = {os.path.relpath(f["output"], out): f for f in report["files"]}
    assert sorted(files) == ["broken.mp4", "one.mp4", os.path.join("sub", "two.mp4"), "three.mp4"]
    runner = report["runner"]
    assert runner["runner"] == "local" and 1 <= len(runner["workers"]) <= 2
    labels = {w["label"] for w in runner["workers"]}
    on_cpu = all(w["device_type"] == "cpu" for w in runner["workers"])  # a GPU machine has GPU workers
    broken = files.pop("broken.mp4")
    assert broken["status"] == "failed" and broken["attempts"] == 1  # bad input is not retried
    assert broken["error_kind"] == "invalid_input" and "\n" not in broken["error"]
    for name, entry in files.items():
        assert entry["status"] == "done", (entry.get("error_kind"), entry.get("error"))
        assert sum(entry["paths"].values()) == FRAMES  # the path each frame took
        if on_cpu:
            assert entry["paths"] == {"software": FRAMES}  # passthrough, decoded in software
        assert entry["frames"] == FRAMES and entry["fps"] > 0
        assert entry["output_bytes"] == os.path.getsize(out / name) > 0
        assert entry["worker"] in labels
        assert _frames(out / name) == FRAMES
    assert (report["done"], report["skipped"], report["failed"]) == (3, 0, 1)
    assert not _leftovers(out)
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    assert sorted(manifest["entries"]) == ["one.mp4", "sub/two.mp4", "three.mp4"]  # not the failure

    # Resumed: what is done is skipped, the failure is tried again.
    before = (out / "one.mp4").stat().st_mtime_ns
    assert main(["batch", str(clips), "--out", str(out), "--json", "--workers", "1"]) == 1
    files = json.loads(capsys.readouterr().out)["files"]
    again = {os.path.relpath(f["output"], out): f["status"] for f in files}
    for entry in files:  # a skip is not an error: its reason has a field of its own
        if entry["status"] == "skipped":
            assert entry["error"] is None and entry["reason"].startswith("done by an earlier run"), entry
        else:
            assert entry["error"] and entry["reason"] is None, entry
    assert again == {
        "broken.mp4": "failed",
        "one.mp4": "skipped",
        os.path.join("sub", "two.mp4"): "skipped",
        "three.mp4": "skipped",
    }
    assert (out / "one.mp4").stat().st_mtime_ns == before

    # Other settings make every output again; so does a changed input.
    report2 = batch([str(clips / "one.mp4"), str(clips / "three.mp4")], out, TranscodeOptions(crf=30))
    assert [r.status for r in report2.results] == [FileStatus.DONE, FileStatus.DONE]
    changed = tmp_path / "changed"
    changed.mkdir()
    make_clip(changed / "one.mp4", width=96, height=64, frames=FRAMES // 2)
    first = batch([str(changed)], tmp_path / "out-changed", TranscodeOptions(), BatchSettings(workers=1))
    assert first.results[0].status is FileStatus.DONE
    make_clip(changed / "one.mp4", width=96, height=64, frames=FRAMES)
    second = batch([str(changed)], tmp_path / "out-changed", TranscodeOptions(), BatchSettings(workers=1))
    assert second.results[0].status is FileStatus.DONE and second.results[0].frames == FRAMES


def test_summary_table(clips: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["batch", str(clips / "one.mp4"), str(clips / "broken.mp4"), "--out", str(tmp_path), "--quiet"]
    )
    assert code == 1
    captured = capsys.readouterr()
    # The path its 12 frames took: software here; a GPU machine's worker decodes on NVDEC.
    paths = "|".join(p.value for p in ExecutionPath)
    assert re.search(rf"({paths}) 12", captured.out), captured.out
    assert "one.mp4" in captured.out and "failed" in captured.out, captured.out
    assert "1 done, 0 skipped, 1 failed" in captured.out
    assert "alpha2: error: 1 of 2 files failed" in captured.err
    # Into another container the failed file is named as the input it is, not as the output it is not.
    code = main(
        ["batch", str(clips / "broken.mp4"), "--out", str(tmp_path / "mkv"), "--container", "mkv", "--quiet"]
    )
    shown = capsys.readouterr().out
    assert code == 1 and "broken.mp4" in shown and "broken.mkv" not in shown, shown


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) == 1
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["batch", str(tmp_path)])  # no --out
    assert info.value.code == 2


def test_worker_killed_mid_file_is_retried(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    # Long enough that the kill lands while the worker is still encoding (x264 at its default preset).
    frames = 240
    make_clip(src / "long.mp4", width=320, height=240, frames=frames)
    make_clip(src / "short.mp4", width=96, height=64, frames=FRAMES)
    out = tmp_path / "out"
    killed: list[int] = []
    seen: list[Event] = []
    pids: dict[str, int] = {}

    def on_event(event: Event) -> None:
        seen.append(event)
        if isinstance(event, Started) and event.pid is not None:
            pids[event.key] = event.pid
        if isinstance(event, Frames) and event.key == "long.mp4" and event.frames > 0 and not killed:
            assert not (out / "long.mp4").exists()
            os.kill(pids["long.mp4"], signal.SIGKILL)
            killed.append(pids["long.mp4"])

    # Two single-stream CPU workers, so that the kill hits the long file alone, on any machine.
    settings = BatchSettings(device=DeviceChoice.CPU, workers=2)
    report = batch([str(src)], out, TranscodeOptions(), settings, on_event=on_event)
    assert killed, "the long file finished before the test could kill its worker"
    results = {r.item.key: r for r in report.results}
    long = results["long.mp4"]
    assert (long.status, long.attempts, long.frames) == (FileStatus.DONE, 2, frames)
    assert results["short.mp4"].status is FileStatus.DONE
    retries = [e for e in seen if isinstance(e, Retrying)]
    assert [e.key for e in retries] == ["long.mp4"] and "SIGKILL" in retries[0].reason
    crashed = [e.outcome for e in seen if isinstance(e, Finished) and not e.outcome.ok]
    assert [o.error_kind for o in crashed] == ["crash"]
    assert _frames(out / "long.mp4") == frames
    assert not _leftovers(out)
    assert not (out / STAGING_NAME).exists()


def _ogv(path: Path, frames: int) -> None:
    """A VP8 clip in Ogg (this PyAV has no Theora encoder; FFmpeg's Ogg muxer takes VP8)."""
    with av.open(str(path), "w", format="ogg") as container:
        stream: Any = container.add_stream("libvpx", rate=30)
        stream.width, stream.height, stream.pix_fmt = 96, 64, "yuv420p"
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(
                np.full((64, 96, 3), (i * 20) % 256, dtype=np.uint8), format="rgb24"
            ).reformat(format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def test_inputs_alpha2_does_not_write_get_the_batch_container(tmp_path: Path) -> None:
    """.flv, .ogv and .mpg inputs (read, not written by alpha2) become .mp4 outputs, or --container's."""
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / "a.flv", width=96, height=64, frames=FRAMES)
    make_clip(src / "b.mpg", codec="mpeg2", width=96, height=64, frames=FRAMES)
    _ogv(src / "c.ogv", FRAMES)
    out = tmp_path / "out"
    report = batch([str(src)], out, TranscodeOptions(), BatchSettings(device=DeviceChoice.CPU, workers=1))
    results = {r.item.key: r for r in report.results}
    assert sorted(results) == ["a.mp4", "b.mp4", "c.mp4"]
    for key, result in results.items():
        assert result.status is FileStatus.DONE, (key, result.error)
        with av.open(str(out / key)) as container:
            assert "mp4" in container.format.name
        assert _frames(out / key) == FRAMES
    mkv = batch(
        [str(src / "a.flv")],
        tmp_path / "out-mkv",
        TranscodeOptions(),
        BatchSettings(device=DeviceChoice.CPU, workers=1, container="mkv"),
    )
    assert [r.item.key for r in mkv.results] == ["a.mkv"] and mkv.results[0].status is FileStatus.DONE


@pytest.fixture(scope="module")
def ray_session() -> Any:
    module = pytest.importorskip("ray")
    module.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield module
    module.shutdown()


def test_ray_batch(ray_session: Any, clips: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    events: list[Event] = []
    report = batch([str(clips)], out, TranscodeOptions(), BatchSettings(ray="auto"), on_event=events.append)
    assert report.runner["runner"] == "ray"
    resources = report.runner["resources"]
    if not ray_session.cluster_resources().get("GPU"):  # Ray counts a GPU machine's GPUs itself
        assert (resources["num_gpus"], resources["concurrency"]) == (0, 2)
    else:
        assert 0 < resources["num_gpus"] <= 1
    results = {r.item.key: r for r in report.results}
    assert results["broken.mp4"].status is FileStatus.FAILED
    assert results["broken.mp4"].error_kind == "invalid_input" and results["broken.mp4"].attempts == 1
    for key in ("one.mp4", "sub/two.mp4", "three.mp4"):
        result = results[key]
        assert (result.status, result.frames, sum(result.paths.values())) == (FileStatus.DONE, FRAMES, FRAMES)
        assert result.worker and ":" in result.worker  # host:pid of the Ray worker
        assert _frames(out / key) == FRAMES
    assert any(isinstance(e, Started) for e in events)
    assert not _leftovers(out)
    assert ray_session.is_initialized()  # the test's own session stays up
    resumed = batch([str(clips)], out, TranscodeOptions(), BatchSettings(ray="auto"))
    assert [r.status for r in resumed.results].count(FileStatus.SKIPPED) == 3


@pytest.mark.vulkan
def test_a_worker_thread_keeps_its_device_from_file_to_file(tmp_path: Path) -> None:
    """A batch worker's thread opens one Device for its first GPU file and uses it for the next ones
    (``transcode(..., device=)`` leaves it open); after a failed file it is closed and the next file
    gets a fresh one; files that need no device get none."""
    from alpha2.api.transcoder import transcode
    from alpha2.apps import batch_run

    clip = make_clip(tmp_path / "c.mp4", width=64, height=48, frames=4)
    options = TranscodeOptions(gpu=True, hwaccel="none", overwrite=True)
    try:
        first = batch_run._thread_device(options)
        assert first is not None and batch_run._thread_device(options) is first
        for name in ("a.mp4", "b.mp4"):
            stats = transcode(clip.path, str(tmp_path / name), options, device=first)
            assert stats.frames == 4 and stats.device, stats.device
            assert not first._closed, "a Device given to transcode stays the caller's, open"
        batch_run._done_with_device(first, ok=False)
        assert first._closed
        second = batch_run._thread_device(options)
        assert second is not None and second is not first
        assert batch_run._thread_device(TranscodeOptions(hwaccel="none")) is None
    finally:
        batch_run._done_with_device(None, ok=False)


def _ffmpeg(*args: str) -> None:
    subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args],
        check=True,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg command")
def test_ogg_and_mxf_are_taken_other_files_said_and_each_files_notes_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder's .ogg and .mxf are transcoded (they were passed over unsaid), its other files are
    counted as not media, and what each transcode changed (a subtitle stream dropped) is in the file's
    JSON entry and under the table, within 80 columns."""
    src = tmp_path / "in"
    src.mkdir()
    # -t as an input option: it must bound the test source, not the next input
    lavfi = ["-f", "lavfi", "-t", "0.48", "-i", "testsrc=size=96x64:rate=25"]
    _ffmpeg(*lavfi, "-c:v", "libtheora", str(src / "in_ogg.ogg"))
    _ffmpeg(*lavfi, "-c:v", "mpeg2video", str(src / "tape.mxf"))
    cue = tmp_path / "cue.srt"
    cue.write_text("1\n00:00:00,000 --> 00:00:00,400\nhi\n")
    _ffmpeg(
        *lavfi,
        "-i",
        str(cue),
        "-map",
        "0",
        "-map",
        "1",
        "-c:v",
        "libx264",
        "-c:s",
        "ass",
        str(src / "subs.mkv"),
    )
    (src / "img.png").write_bytes(b"\x89PNG")
    (src / "notes.txt").write_text("not a video\n")
    out = tmp_path / "out"
    code = main(["batch", str(src), "--out", str(out), "--json", "--workers", "2"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    files = {os.path.basename(f["input"]): f for f in report["files"]}
    assert sorted(files) == ["in_ogg.ogg", "subs.mkv", "tape.mxf"]
    assert all(f["status"] == "done" and f["frames"] == FRAMES for f in files.values()), files
    assert report["not_media"] == 2
    assert [os.path.basename(p) for p in report["not_media_files"]] == ["img.png", "notes.txt"]
    subs = files["subs.mkv"]
    # ASS into MP4 is converted to mov_text, as ffmpeg does (it was dropped before f2a90b2): said per file.
    assert subs["dropped_streams"] == []
    assert any("converted from ass to mov_text" in n for n in subs["notes"]), subs["notes"]
    assert files["in_ogg.ogg"]["dropped_streams"] == [] and isinstance(files["in_ogg.ogg"]["notes"], list)

    os.environ["COLUMNS"] = "80"
    try:
        assert main(["batch", str(src), "--out", str(tmp_path / "out2"), "--quiet"]) == 0
    finally:
        os.environ.pop("COLUMNS", None)
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    joined = " ".join(" ".join(line.split()) for line in lines)
    assert "notes (what the transcodes changed):" in joined
    assert "subs.mp4: subtitle stream 1 converted from ass to mov_text" in joined, text
    assert "not video by their extension, left out: 2 (" in joined and "notes.txt)" in joined, text


def test_summary_lists_the_notes_and_caps_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Notes are listed under the table, a file's after its name, up to a dozen; the rest are counted."""
    from alpha2.apps import batch as batch_app

    results = []
    for n in range(3):
        item = BatchItem(f"f{n}.mp4", str(tmp_path / f"f{n}.mkv"), str(tmp_path / "out" / f"f{n}.mp4"))
        notes = [
            f"audio re-encoded pcm_s16le to flac: note {i} of file {n}, long enough to wrap" for i in range(5)
        ]
        results.append(FileResult(item, FileStatus.DONE, attempts=1, frames=3, seconds=0.1, notes=notes))
    others = [str(tmp_path / f"x{n}.txt") for n in range(7)]
    report = BatchReport(str(tmp_path / "out"), results, 1.0, not_media=others)
    data = report.as_dict()
    assert data["files"][0]["notes"] == results[0].notes and data["files"][0]["dropped_streams"] == []
    assert data["not_media"] == 7
    os.environ["COLUMNS"] = "80"
    try:
        print_summary(report)
    finally:
        os.environ.pop("COLUMNS", None)
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    listed = [line for line in lines if line.startswith("  f")]
    assert len(listed) == batch_app.NOTE_LINES
    joined = " ".join(" ".join(line.split()) for line in lines)
    assert "and 3 more on 1 file; --json has each file's notes" in joined
    assert "not video by their extension, left out: 7 (" in joined
    assert "and 2 more (--json lists them))" in joined


def test_outputs_inside_the_input_folder_are_said_not_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    make_clip(folder / "one.mp4", width=96, height=64, frames=FRAMES)
    out = folder / "out"
    assert main(["batch", str(folder), "--out", str(out), "--json", "--workers", "1"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["done"] == 1 and not first["notes"]  # nothing there yet to pass over
    assert main(["batch", str(folder), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "the video files in it are this batch's outputs, not inputs (1 passed over)" in said
    assert (
        "0 done, 1 skipped, 0 failed: every output is there from an earlier batch (-y makes them again)"
        in (captured.out)
    )
    assert "fps in all" not in captured.out  # '0 frames in 0.64 s (0.0 fps in all)' said nothing
