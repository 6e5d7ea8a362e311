"""``alpha2 batch`` planning, without transcoding: inputs, outputs, fingerprints, the manifest, retries,
the workers a machine gets, the Ray resources a task asks for, and the driver loop on a fake backend."""

from __future__ import annotations

import io
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps import batch_ray
from alpha2.apps.batch import BatchProgress, batch
from alpha2.apps.batch_local import DeviceChoice, plan_workers
from alpha2.apps.batch_plan import (
    DEFAULT_CONTAINER,
    FINGERPRINT_EDGE_BYTES,
    MANIFEST_NAME,
    STAGING_NAME,
    VIDEO_EXTENSIONS,
    BatchItem,
    FileResult,
    FileStatus,
    Manifest,
    container_extension,
    expand_inputs,
    input_fingerprint,
    is_transient,
    one_line,
    plan_items,
    scan_inputs,
    settings_fingerprint,
)
from alpha2.apps.batch_ray import NVDEC_RESOURCE, RayBackend, pin_assigned_gpu, task_resources
from alpha2.apps.batch_run import (
    CRASH_KIND,
    LOCK_NAME,
    BatchLock,
    Event,
    FileTask,
    Finished,
    Frames,
    Notice,
    Outcome,
    Planned,
    Retrying,
    Started,
    run_batch,
    staging_dir,
)
from alpha2.gpu.adapters import ADAPTER_ENV, AdapterPinError, AdapterType
from alpha2.gpu.errors import ErrorKind, InvalidInputError, UnsupportedError
from alpha2.gpu.geometry import Size


@pytest.fixture(autouse=True)
def _no_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine's own ALPHA2_GPU_ADAPTER (the GPU runs set one) must not change the fake machines."""
    monkeypatch.delenv(ADAPTER_ENV, raising=False)


def _touch(path: Path, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# -- inputs ------------------------------------------------------------------------------------------


def test_folder_is_searched_recursively_for_videos(tmp_path: Path) -> None:
    src = tmp_path / "in"
    _touch(src / "a.mp4")
    _touch(src / "sub" / "b.MKV")
    _touch(src / "notes.txt")
    _touch(src / ".hidden.mp4")
    _touch(src / ".cache" / "c.mp4")
    _touch(src / "out" / "old.mp4")  # the output folder inside the input folder
    _touch(src / "out" / "deeper" / "older.mkv")
    _touch(src / "out" / "manifest.txt")
    pairs = expand_inputs([str(src)], out_dir=str(src / "out"))
    assert [os.path.relpath(f, base) for f, base in pairs] == ["a.mp4", os.path.join("sub", "b.MKV")]
    scan = scan_inputs([str(src)], out_dir=str(src / "out"))
    assert scan.in_out_dir == 2 and scan.not_media == [str(src / "notes.txt")]  # counted, to be said
    items = plan_items(pairs, str(tmp_path / "dest"), container=".mkv")
    assert [i.key for i in items] == ["a.mkv", "sub/b.mkv"]
    assert items[1].output == str(tmp_path / "dest" / "sub" / "b.mkv")


def test_glob_and_list_file(tmp_path: Path) -> None:
    for name in ("x/one.mp4", "x/two.mp4", "y/three.webm"):
        _touch(tmp_path / name)
    listing = tmp_path / "files.txt"
    listing.write_text("# my files\nx/one.mp4\n\n  y/three.webm  \n")
    pairs = expand_inputs([str(listing), str(tmp_path / "x" / "*.mp4")])
    # one.mp4 is named twice: taken once, where it first came
    assert [os.path.basename(f) for f, _ in pairs] == ["one.mp4", "three.webm", "two.mp4"]
    items = plan_items(pairs, str(tmp_path / "out"))
    assert [i.key for i in items] == ["x/one.mp4", "y/three.mp4", "two.mp4"]  # the batch's one container


@pytest.mark.parametrize(
    "extension",
    ".ogg .ogv .mxf .wmv .asf .flv .m2ts .mts .ts .vob .mpg .mpeg .3gp .3g2 .m4v .webm .mkv .mov .mp4 "
    ".avi .nut .y4m .dv".split(),
)
def test_folders_take_the_containers_ffmpeg_commonly_reads(extension: str) -> None:
    """.ogg and .mxf were passed over unsaid: a folder of them gave nothing to do."""
    assert extension in VIDEO_EXTENSIONS


def test_files_a_folder_does_not_take_are_counted(tmp_path: Path) -> None:
    """What a folder holds besides video (its extension) is left out and said, never silently:
    hidden files are not counted; a glob or a list file takes any extension."""
    src = tmp_path / "in"
    for name in (
        "in_ogg.ogg",
        "tape.MXF",
        "sub/clip.mkv",
        "img.png",
        "notes.txt",
        "sub/cover.jpg",
        ".DS_Store",
    ):
        _touch(src / name)
    scan = scan_inputs([str(src)])
    assert [os.path.relpath(f, src) for f, _ in scan.pairs] == ["in_ogg.ogg", "tape.MXF", "sub/clip.mkv"]
    assert [os.path.relpath(f, src) for f in scan.not_media] == ["img.png", "notes.txt", "sub/cover.jpg"]
    assert expand_inputs([str(src)]) == scan.pairs
    assert scan_inputs([str(src / "*.png")]).not_media == []  # named by a glob: taken as it is
    _touch(tmp_path / "docs" / "readme.md")
    with pytest.raises(InvalidInputError, match=r"no input files found .*\.ogg.*; 1 other file there"):
        scan_inputs([str(tmp_path / "docs")])


@pytest.mark.parametrize("spec", ["missing.mp4", "nothing-*.mp4"])
def test_missing_inputs_are_errors(tmp_path: Path, spec: str) -> None:
    with pytest.raises(InvalidInputError, match=r"does not exist|matches no file"):
        expand_inputs([str(tmp_path / spec)])


def test_empty_folder_and_bad_list_entry(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match="no input files"):
        expand_inputs([str(tmp_path / "empty")])
    (tmp_path / "l.txt").write_text("gone.mp4\n")
    with pytest.raises(InvalidInputError, match="does not exist"):
        expand_inputs([str(tmp_path / "l.txt")])


def test_outputs_that_collide_or_overwrite_the_input(tmp_path: Path) -> None:
    a = _touch(tmp_path / "a.mp4")
    b = _touch(tmp_path / "a.mkv")
    pairs = [(str(a), str(tmp_path)), (str(b), str(tmp_path))]
    with pytest.raises(InvalidInputError, match="would both be written"):
        plan_items(pairs, str(tmp_path / "out"))
    with pytest.raises(InvalidInputError, match="would be the input"):
        plan_items([(str(a), str(tmp_path))], str(tmp_path))


@pytest.mark.parametrize("name", ["c.flv", "c.ogv", "c.mpg", "c.y4m", "c.ivf", "c.wmv", "c.3gp", "c.mkv"])
def test_outputs_take_the_batch_container_whatever_the_input(tmp_path: Path, name: str) -> None:
    """Inputs alpha2 reads but does not write (.flv, .ogv, .mpg, ...) get the batch's container."""
    source = _touch(tmp_path / "in" / name)
    pairs = expand_inputs([str(tmp_path / "in")])
    assert [f for f, _ in pairs] == [str(source)]
    (item,) = plan_items(pairs, str(tmp_path / "out"))
    assert item.key == "c.mp4" and item.output == str(tmp_path / "out" / "c.mp4")
    for given in ("mkv", ".MKV"):
        assert plan_items(pairs, str(tmp_path / "out"), container=given)[0].key == "c.mkv"
    assert container_extension(None) == DEFAULT_CONTAINER == ".mp4"
    with pytest.raises(InvalidInputError, match=r"not one alpha2 writes.*mp4"):
        plan_items(pairs, str(tmp_path / "out"), container="flv")


# -- fingerprints and the manifest -------------------------------------------------------------------


def test_input_fingerprint_sees_ends_size_and_time(tmp_path: Path) -> None:
    size = 3 * FINGERPRINT_EDGE_BYTES
    data = bytearray(os.urandom(size))
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    first = input_fingerprint(str(path))
    assert input_fingerprint(str(path)) == first
    stat = path.stat()

    def rewrite(change: int) -> str:
        copy = bytearray(data)
        copy[change] ^= 0xFF
        path.write_bytes(copy)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return input_fingerprint(str(path))

    assert rewrite(10) != first  # the first MiB
    assert rewrite(size - 10) != first  # the last MiB
    assert rewrite(size // 2) == first  # the middle is not read: the documented price of speed
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert input_fingerprint(str(path)) != first
    with pytest.raises(InvalidInputError):
        input_fingerprint(str(tmp_path / "gone"))


def test_settings_fingerprint_ignores_overwrite() -> None:
    assert settings_fingerprint(TranscodeOptions(overwrite=False), ".mp4") == settings_fingerprint(
        TranscodeOptions(overwrite=True), ".mp4"
    )


def test_settings_fingerprint() -> None:
    base = settings_fingerprint(TranscodeOptions(), ".mp4")
    assert base == settings_fingerprint(TranscodeOptions(), ".mp4")
    assert base != settings_fingerprint(TranscodeOptions(), ".mkv")
    assert base != settings_fingerprint(TranscodeOptions(crf=20), ".mp4")
    assert base != settings_fingerprint(TranscodeOptions(size=Size(640, 360)), ".mp4")


def test_manifest_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    item = BatchItem("a.mp4", str(tmp_path / "a.mp4"), str(out / "a.mp4"))
    manifest = Manifest.load(str(out))
    assert not manifest.done(item, "h1", "s1")
    (out / "a.mp4").write_bytes(b"12345")
    manifest.record(
        FileResult(item, FileStatus.DONE, frames=3, output_bytes=5, paths={"software": 3}), "h1", "s1"
    )
    again = Manifest.load(str(out))
    assert again.done(item, "h1", "s1")
    assert not again.done(item, "h2", "s1")
    assert not again.done(item, "h1", "s2")
    (out / "a.mp4").write_bytes(b"123")  # not the output that was recorded
    assert not again.done(item, "h1", "s1")
    (out / MANIFEST_NAME).write_text("{not json")
    damaged = Manifest.load(str(out))
    assert damaged.entries == {} and damaged.note is not None and "set aside" in damaged.note
    assert not (out / MANIFEST_NAME).exists()
    assert [p.read_text() for p in out.glob(MANIFEST_NAME + ".corrupt-*")] == ["{not json"]


@pytest.mark.parametrize(
    "text",
    [
        "[" * 200_000 + "]" * 200_000,  # nested past the parser's recursion limit: RecursionError
        '{"version": 1, "entries": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001,
        '{"version": 99, "entries": {}}',
        '{"version": 1, "entries": []}',
        "\xff\xfe not utf-8",
    ],
    ids=["nested-list", "nested-entries", "future-version", "entries-not-a-map", "not-utf8"],
)
def test_unusable_manifest_is_set_aside_and_the_run_starts_afresh(tmp_path: Path, text: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST_NAME).write_bytes(text.encode("latin-1"))
    manifest = Manifest.load(str(out))
    assert manifest.entries == {}
    assert manifest.note is not None and "\n" not in manifest.note and "starting afresh" in manifest.note
    (aside,) = out.glob(MANIFEST_NAME + ".corrupt-*")
    assert aside.read_bytes() == text.encode("latin-1") and str(aside) in manifest.note
    # The next run records into a fresh manifest, and the one after reads it.
    item = BatchItem("a.mp4", str(tmp_path / "a.mp4"), str(out / "a.mp4"))
    (out / "a.mp4").write_bytes(b"12345")
    manifest.record(FileResult(item, FileStatus.DONE, output_bytes=5), "h", "s")
    again = Manifest.load(str(out))
    assert again.note is None and again.done(item, "h", "s")


def test_nested_manifest_through_the_batch_is_one_line(tmp_path: Path) -> None:
    """The batch says once that it set the manifest aside, and runs (no RecursionError)."""
    src = _touch(tmp_path / "in" / "a.mp4")
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST_NAME).write_text("[" * 100_000)
    events: list[Event] = []
    backend = ScriptedBackend({"a.mp4": [{"ok": True}]})
    report = batch([str(src.parent)], out, TranscodeOptions(), on_event=events.append, backend=backend)
    assert [r.status for r in report.results] == [FileStatus.DONE]
    (notice,) = [e for e in events if isinstance(e, Notice)]
    assert "RecursionError" in notice.text and "set aside" in notice.text
    assert report.notes == [notice.text] and report.as_dict()["notes"] == [notice.text]
    assert "a.mp4" in Manifest.load(str(out)).entries
    stream = io.StringIO()
    BatchProgress(enabled=False, stream=stream)(notice)  # said even with the display off
    assert stream.getvalue().count("\n") == 1 and stream.getvalue().startswith("alpha2: batch: the manifest")


def test_pending_entries_let_a_cut_run_resume(tmp_path: Path) -> None:
    """Outputs a run may write are claimed first; those not written are forgotten at the end, and an
    output renamed into place just before a kill is known as the batch's own by the next run."""
    out = tmp_path / "out"
    out.mkdir()
    items = [BatchItem(k, str(tmp_path / k), str(out / k)) for k in ("a.mp4", "b.mp4")]
    manifest = Manifest.load(str(out))
    manifest.claim(items)
    assert Manifest.load(str(out)).knows("a.mp4") and Manifest.load(str(out)).knows("b.mp4")
    (out / "a.mp4").write_bytes(b"made, then the driver was killed before it recorded it")
    manifest.release()
    kept = Manifest.load(str(out))
    assert kept.knows("a.mp4") and not kept.knows("b.mp4")
    assert not kept.done(items[0], "h", "s")  # pending is not done: it is made again
    (out / "a.mp4").unlink()
    kept.release()
    assert not (out / MANIFEST_NAME).exists()  # nothing left to say


@pytest.mark.parametrize(
    ("kind", "crashed", "expected"),
    [
        (ErrorKind.RETRY, False, True),
        (ErrorKind.TIMEOUT, False, True),
        (ErrorKind.OUT_OF_MEMORY, False, True),
        (ErrorKind.DEVICE_LOST, False, True),
        (ErrorKind.INVALID_INPUT, False, False),
        (ErrorKind.UNSUPPORTED, False, False),
        (ErrorKind.INTERNAL, False, False),
        (None, False, False),
        (None, True, True),
    ],
)
def test_is_transient(kind: ErrorKind | None, crashed: bool, expected: bool) -> None:
    assert is_transient(kind, crashed=crashed) is expected


def test_one_line() -> None:
    assert one_line("first  line\nsecond") == "first line"
    assert one_line("") == "unknown error"


def test_lock_refuses_a_second_run(tmp_path: Path) -> None:
    with BatchLock(str(tmp_path)):
        with pytest.raises(InvalidInputError, match="another alpha2 batch") as info:
            with BatchLock(str(tmp_path)):
                pass
        assert info.value.kind is ErrorKind.RETRY
    with BatchLock(str(tmp_path)):
        pass
    assert not (tmp_path / LOCK_NAME).exists()


def test_stale_lock_is_taken_back_only_when_no_run_holds_it(tmp_path: Path) -> None:
    with BatchLock(str(tmp_path)):
        BatchLock.remove_stale(str(tmp_path))
        assert (tmp_path / LOCK_NAME).exists()  # held: left alone
    (tmp_path / LOCK_NAME).write_text("")  # left by a run interrupted while taking it
    BatchLock.remove_stale(str(tmp_path))
    assert not (tmp_path / LOCK_NAME).exists()
    lock = BatchLock(str(tmp_path))
    lock.close()  # never entered: nothing to do
    with lock:
        pass
    lock.close()  # idempotent


# -- workers -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FakeCandidate:
    name: str
    device_type: AdapterType
    uuid: bytes | None
    error: str | None = None
    index: int = 0
    vendor_id: int = 0x10DE
    device_id: int = 0x2335

    @property
    def uuid_str(self) -> str | None:
        return str(uuid.UUID(bytes=self.uuid)) if self.uuid else None


GPU_A = FakeCandidate("GPU A", AdapterType.DISCRETE_GPU, bytes(range(16)), index=0)
GPU_B = FakeCandidate("GPU B", AdapterType.DISCRETE_GPU, bytes(range(16, 32)), index=1)
LAVAPIPE = FakeCandidate("llvmpipe", AdapterType.CPU, bytes([7] * 16), index=2, vendor_id=0x10005)


def test_one_worker_per_gpu_pinned_by_uuid() -> None:
    slots = plan_workers(
        candidates=[LAVAPIPE, GPU_A, GPU_B, GPU_A], cuda_uuids=[GPU_B.uuid or b""], cores=16, environ={}
    )
    # Eight single-file worker processes per GPU (16 cores, 2 GPUs, at most MAX_GPU_STREAMS each),
    # listed round-robin over the GPUs so that the pool's first files land on both.
    assert [s.label for s in slots] == [f"gpu{g}.{k}" for k in range(8) for g in (0, 1)]
    assert all(s.streams == 1 for s in slots)
    assert {s.env[ADAPTER_ENV] for s in slots[0::2]} == {GPU_A.uuid_str}
    assert {s.env[ADAPTER_ENV] for s in slots[1::2]} == {GPU_B.uuid_str}
    assert {s.cuda_ordinal for s in slots[0::2]} == {None} and {s.cuda_ordinal for s in slots[1::2]} == {0}
    assert len(plan_workers(candidates=[GPU_A, GPU_B], cuda_uuids=[], cores=6)) == 6  # 3 per GPU
    # --workers is the processes in all, spread over the GPUs; --streams caps each GPU's share.
    three = plan_workers(candidates=[GPU_A, GPU_B], cuda_uuids=[], cores=16, workers=3)
    assert [(s.label, s.adapter_uuid) for s in three] == [
        ("gpu0.0", GPU_A.uuid_str),
        ("gpu1", GPU_B.uuid_str),
        ("gpu0.1", GPU_A.uuid_str),
    ]
    many = plan_workers(candidates=[GPU_A], cuda_uuids=[], cores=2, workers=12)
    assert len(many) == 12  # asked for: more than the cores' default
    capped = plan_workers(candidates=[GPU_A, GPU_B], cuda_uuids=[], workers=9, streams=2)
    assert [s.label for s in capped] == ["gpu0.0", "gpu1.0", "gpu0.1", "gpu1.1"]
    (one,) = plan_workers(candidates=[GPU_A, GPU_B], cuda_uuids=[], workers=1, streams=5)
    assert (one.label, one.streams, one.adapter_uuid) == ("gpu0", 1, GPU_A.uuid_str)
    (single,) = plan_workers(candidates=[GPU_A], cuda_uuids=[], streams=1)
    assert single.label == "gpu0"


def test_a_pin_limits_the_workers_to_its_device() -> None:
    both = [GPU_A, GPU_B, LAVAPIPE]
    slots = plan_workers(candidates=both, cuda_uuids=[], cores=4, environ={ADAPTER_ENV: "1"})
    assert [s.label for s in slots] == ["gpu0.0", "gpu0.1", "gpu0.2", "gpu0.3"]
    assert all(s.env == {ADAPTER_ENV: GPU_B.uuid_str} for s in slots)
    on_cpu = plan_workers(candidates=both, cuda_uuids=[], cores=2, environ={ADAPTER_ENV: "llvmpipe"})
    assert [s.label for s in on_cpu] == ["cpu0", "cpu1"]
    with pytest.raises(AdapterPinError, match="matches no adapter"):
        plan_workers(candidates=both, cuda_uuids=[], environ={ADAPTER_ENV: "no such gpu"})


def test_cpu_workers_sized_to_the_cores() -> None:
    slots = plan_workers(candidates=[LAVAPIPE], cuda_uuids=[], cores=3)
    assert [s.label for s in slots] == ["cpu0", "cpu1", "cpu2"]
    assert all(s.streams == 1 and s.device_type is AdapterType.CPU for s in slots)
    assert slots[0].env == {ADAPTER_ENV: LAVAPIPE.uuid_str}  # renders on lavapipe, never a GPU
    forced = plan_workers(device=DeviceChoice.CPU, candidates=[GPU_A, LAVAPIPE], cuda_uuids=[], cores=2)
    assert [s.label for s in forced] == ["cpu0", "cpu1"]
    assert plan_workers(candidates=[], cuda_uuids=[], cores=2, workers=4)[3].env == {}
    broken = FakeCandidate("GPU C", AdapterType.DISCRETE_GPU, bytes(16), error="boom")
    with pytest.raises(UnsupportedError, match="no GPU"):
        plan_workers(device=DeviceChoice.GPU, candidates=[LAVAPIPE, broken], cuda_uuids=[])
    with pytest.raises(InvalidInputError):
        plan_workers(candidates=[], workers=0)


# -- Ray resources -----------------------------------------------------------------------------------


def test_ray_task_resources() -> None:
    gpu = task_resources({"CPU": 32, "GPU": 2, NVDEC_RESOURCE: 6}, streams=4)
    assert (gpu.num_gpus, gpu.resources, gpu.concurrency) == (0.25, {NVDEC_RESOURCE: 1}, 6)
    no_nvdec = task_resources({"CPU": 16, "GPU": 1})
    assert (no_nvdec.num_gpus, no_nvdec.resources, no_nvdec.concurrency) == (1 / 8, {}, 8)
    assert "declares no 'nvdec'" in no_nvdec.note
    software = task_resources({"CPU": 16, "GPU": 1, NVDEC_RESOURCE: 4}, hwaccel="none", streams=2)
    assert (software.resources, software.concurrency) == ({}, 2)
    cpu = task_resources({"CPU": 2})
    assert (cpu.num_cpus, cpu.num_gpus, cpu.concurrency, cpu.uses_gpu) == (1, 0, 2, False)
    assert task_resources({"CPU": 8, "GPU": 1}, device=DeviceChoice.CPU).num_gpus == 0
    with pytest.raises(UnsupportedError, match="no GPU"):
        task_resources({"CPU": 2}, device=DeviceChoice.GPU)


def test_pin_assigned_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_ray, "_UNPINNED", None)  # the worker had no pin of its own
    assert pin_assigned_gpu(True, lambda: [GPU_B.uuid or b"", GPU_A.uuid or b""]) == GPU_B.uuid_str
    assert os.environ[ADAPTER_ENV] == GPU_B.uuid_str
    assert pin_assigned_gpu(False) is None
    assert ADAPTER_ENV not in os.environ

    def no_cuda() -> list[bytes]:
        raise RuntimeError("no driver")

    assert pin_assigned_gpu(True, no_cuda) is None
    assert ADAPTER_ENV not in os.environ


# -- the driver on a fake backend --------------------------------------------------------------------


class ScriptedBackend:
    """Answers each attempt from a script: key -> outcomes by attempt (the last one repeats)."""

    def __init__(self, script: dict[str, list[dict[str, Any]]], slots: int = 2) -> None:
        self.script = script
        self.slots = slots
        self.running: list[FileTask] = []
        self.submitted: list[tuple[str, int]] = []
        self.started = self.closed = False

    def start(self) -> None:
        self.started = True

    def capacity(self) -> int:
        return self.slots - len(self.running)

    def submit(self, task: FileTask) -> None:
        os.makedirs(task.staging, exist_ok=True)  # as a worker would, before it dies
        self.running.append(task)
        self.submitted.append((task.key, task.attempt))

    def poll(self, timeout: float) -> list[Event]:
        events: list[Event] = []
        for task in self.running:
            steps = self.script[task.key]
            step = steps[min(task.attempt, len(steps)) - 1]
            if step.get("ok"):
                with open(task.output, "wb") as f:
                    f.write(b"video")
            events.append(Finished(Outcome(task.key, worker="fake", output_bytes=5, frames=4, **step)))
        self.running = []
        return events

    def close(self) -> None:
        self.closed = True

    def describe(self) -> dict[str, Any]:
        return {"runner": "fake"}


def test_driver_retries_transient_failures_only(tmp_path: Path) -> None:
    out = str(tmp_path)
    keys = ["ok.mp4", "flaky.mp4", "bad.mp4", "crashy.mp4"]
    items = [BatchItem(k, str(tmp_path / ("in-" + k)), str(tmp_path / k)) for k in keys]
    crash = {"ok": False, "error": "the worker was killed", "error_kind": CRASH_KIND}
    script: dict[str, list[dict[str, Any]]] = {
        "ok.mp4": [{"ok": True}],
        "flaky.mp4": [{"ok": False, "error": "busy", "error_kind": "retry"}, {"ok": True}],
        "bad.mp4": [{"ok": False, "error": "not a video", "error_kind": "invalid_input"}],
        "crashy.mp4": [crash],
    }
    backend = ScriptedBackend(script)
    events: list[Event] = []
    manifest = Manifest.load(out)
    results = run_batch(
        items,
        TranscodeOptions(),
        backend,
        out_dir=out,
        manifest=manifest,
        input_hashes={k: "h-" + k for k in keys},
        settings_hashes={k: "s" for k in keys},
        retries=2,
        on_event=events.append,
    )
    by_key = {r.item.key: r for r in results}
    assert [r.item.key for r in results] == keys
    assert (by_key["ok.mp4"].status, by_key["ok.mp4"].attempts) == (FileStatus.DONE, 1)
    assert (by_key["flaky.mp4"].status, by_key["flaky.mp4"].attempts) == (FileStatus.DONE, 2)
    assert (by_key["bad.mp4"].status, by_key["bad.mp4"].attempts) == (FileStatus.FAILED, 1)
    assert by_key["bad.mp4"].error == "not a video"
    assert (by_key["crashy.mp4"].status, by_key["crashy.mp4"].attempts) == (FileStatus.FAILED, 3)
    assert by_key["crashy.mp4"].error_kind == CRASH_KIND
    assert sorted(manifest.entries) == ["flaky.mp4", "ok.mp4"]
    assert Manifest.load(out).entries["flaky.mp4"]["input_hash"] == "h-flaky.mp4"
    assert [e.key for e in events if isinstance(e, Retrying)] == ["flaky.mp4", "crashy.mp4", "crashy.mp4"]
    assert backend.started and backend.closed
    assert not os.path.exists(os.path.join(out, STAGING_NAME))  # what the dead attempts left is gone
    assert staging_dir(out, "a/b.mp4").startswith(os.path.join(out, STAGING_NAME))


def test_driver_without_retries(tmp_path: Path) -> None:
    item = BatchItem("f.mp4", str(tmp_path / "in.mp4"), str(tmp_path / "f.mp4"))
    backend = ScriptedBackend({"f.mp4": [{"ok": False, "error": "busy", "error_kind": "retry"}]})
    kwargs: dict[str, Any] = {
        "out_dir": str(tmp_path),
        "manifest": Manifest.load(str(tmp_path)),
        "input_hashes": {"f.mp4": "h"},
        "settings_hashes": {"f.mp4": "s"},
    }
    (result,) = run_batch([item], TranscodeOptions(), backend, retries=0, **kwargs)
    assert (result.status, result.attempts) == (FileStatus.FAILED, 1)
    with pytest.raises(InvalidInputError):
        run_batch([item], TranscodeOptions(), backend, retries=-1, **kwargs)


# -- the display and Ray's absence -------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [False, True])
def test_progress_display(terminal: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    stream: io.StringIO = _Terminal() if terminal else io.StringIO()
    progress = BatchProgress(stream=stream)
    assert (progress._rich is not None) is terminal
    ok = Outcome("a.mp4", True, "cpu0", frames=10, seconds=0.5)
    for event in (
        Planned(3, 1),
        Started("a.mp4", 1, "cpu0", 123),
        Frames("a.mp4", 4, 10),
        Started("b.mp4", 1, "cpu1", 124),
        Finished(Outcome("b.mp4", False, "cpu1", error="killed", error_kind=CRASH_KIND)),
        Retrying("b.mp4", 1, "killed"),
        Finished(ok),
        Started("a.mp4", 1, "cpu0", 123),  # a late message about a finished file changes nothing
    ):
        progress(event)
    progress.close()
    progress.close()
    text = stream.getvalue()
    assert "1 of 3 files done by an earlier run" in text
    assert "retrying b.mp4 (attempt 1 failed: killed)" in text
    assert "2/3 a.mp4: 10 frames, 20.0 fps (cpu0)" in text
    quiet = io.StringIO()
    silent = BatchProgress(enabled=False, stream=quiet)
    silent(Planned(1, 0))
    silent.close()
    assert quiet.getvalue() == ""


def test_ray_missing_is_unsupported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(UnsupportedError, match=r"alpha2\[ray\]"):
        RayBackend("auto").start()
    with pytest.raises(InvalidInputError):
        RayBackend("")
