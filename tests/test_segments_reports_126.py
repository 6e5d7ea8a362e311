"""Segmented transcoding (``--segments K``), two faults an outside pass found: the importer's and the
encode copier's reports (``import_report``, ``encode_report``, ``encode_routes``) said the first segment's
frames only ('frames via cpu_upload: 10' of 30) while ``paths`` counted them all; and a script calling it
without ``if __name__ == "__main__":`` failed after the survey with 'segment 1 of 3: its worker process
ended (exit code 1) without a result'. Small clips on lavapipe's CPU device."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
import textwrap
from pathlib import Path

from media import make_clip

from alpha2.api.segmented_transcode import SegmentResult, merged_route_reports
from alpha2.api.transcode_report import TranscodeStats, segments_summary
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.gpu.identity import ExecutionPath
from alpha2.native_gpu.paths import PathReport

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def test_the_reports_count_every_segment_s_frames_as_one_pipeline_does(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "in.mp4", width=64, height=48, frames=30, gop=10)
    options = {"preset": "veryfast", "size": "32x24", "gpu": True}  # through the importer and copier
    one = transcode(clip.path, str(tmp_path / "one.mp4"), TranscodeOptions(**options)).as_dict()
    seg = transcode(clip.path, str(tmp_path / "seg.mp4"), TranscodeOptions(segments=3, **options)).as_dict()
    assert seg["segments"]["segments"] == 3
    assert [p["frames"] for p in seg["segments"]["parts"]] == [10, 10, 10]
    assert seg["paths"] == one["paths"] == {"cpu_download": 30, "cpu_upload": 30}
    assert one["encode_routes"]["frames"] == {"planes_cpu": 30}
    assert seg["encode_routes"] == one["encode_routes"]  # frames, fallbacks and bytes summed
    assert "frames via cpu_upload: 30" in one["import_report"]
    assert seg["import_report"] == one["import_report"]
    assert seg["encode_report"] == one["encode_report"]
    # Each segment's own routes are in its part, and alike here: no difference said.
    for part in seg["segments"]["parts"]:
        assert part["import_frames"] == {"cpu_upload": 10}
        assert part["encode_frames"] == {"planes_cpu": 10}
    assert seg["segments"]["route_differences"] is None


def _part(index: int, frames: dict[ExecutionPath, int], fallbacks: dict[str, int]) -> SegmentResult:
    stats = TranscodeStats("in.mp4", "out.mp4", frames=sum(frames.values()))
    stats.import_paths = PathReport("importer", "paths", (), frames, fallbacks, 100 * (index + 1))
    return SegmentResult(index, float(index), stats.frames, 1.0, 0, 0, stats)


def test_segments_that_took_different_paths_are_said_each() -> None:
    parts = [
        _part(0, {ExecutionPath.GPU_COPY: 10}, {}),
        _part(1, {ExecutionPath.CPU_UPLOAD: 10}, {"the GPU copy failed: no memory": 10}),
    ]
    merged = merged_route_reports(parts)
    assert merged.imports is not None
    assert merged.imports.frames_by_path == {ExecutionPath.GPU_COPY: 10, ExecutionPath.CPU_UPLOAD: 10}
    assert merged.imports.fallbacks == {"the GPU copy failed: no memory": 10}
    assert merged.imports.bytes_crossed_cpu == 300
    assert merged.differences == (
        "segment 1: import gpu_copy 10; "
        "segment 2: import cpu_upload 10 (fallback x10: the GPU copy failed: no memory)"
    )
    stats = TranscodeStats("in.mp4", "out.mp4")
    stats.segments = {
        "done": "video encoded in 2 segments at once, joined",
        "reason": "--segments 2",
        "join_seconds": 0.1,
        "parts": [p.as_dict() for p in parts],
        "route_differences": merged.differences,
    }
    said = segments_summary(stats)
    assert said is not None and said.endswith(f"; the segments took different paths: {merged.differences}")


_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from media import make_clip
from alpha2.api.transcoder import TranscodeOptions, transcode
{body}
"""


def _run_script(
    tmp_path: Path, body: str, name: str = "job.py", compiled: bool = False
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / name
    script.write_text(_SCRIPT.format(tests=TESTS, body=textwrap.dedent(body)))
    run = str(script)
    if compiled:  # no source beside it: the check before the survey cannot read the script
        run = str(tmp_path / (name + "c"))
        py_compile.compile(str(script), cfile=run, doraise=True)
        script.unlink()
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, run], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


_UNGUARDED = """
clip = make_clip("in.mp4", width=64, height=48, frames=30, gop=10)
transcode(clip.path, "out.mp4", TranscodeOptions(preset="veryfast", segments=3))
print("done")
"""


def test_a_script_without_the_main_guard_is_refused_before_the_survey(tmp_path: Path) -> None:
    done = _run_script(tmp_path, _UNGUARDED)
    assert done.returncode != 0
    assert "UnsupportedError" in done.stderr, done.stderr
    assert 'if __name__ == "__main__":' in done.stderr, done.stderr
    assert "without a result" not in done.stderr
    assert "An attempt has been made to start a new process" not in done.stderr  # no worker started
    assert not (tmp_path / "out.mp4").exists()
    assert not [n for n in os.listdir(tmp_path) if ".segments." in n]


def test_a_guarded_script_runs_its_segments(tmp_path: Path) -> None:
    body = "if __name__ == '__main__':\n" + textwrap.indent(textwrap.dedent(_UNGUARDED), "    ")
    done = _run_script(tmp_path, body)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert (tmp_path / "out.mp4").exists()


def test_an_unguarded_script_without_its_source_is_told_by_its_workers(tmp_path: Path) -> None:
    """Run from a .pyc, the script cannot be read before the survey: its workers, running it again,
    find themselves starting a transcode while Python imports it, and end saying so; the parent then
    raises the same typed error, not 'ended (exit code 1) without a result'."""
    done = _run_script(tmp_path, _UNGUARDED, compiled=True)
    assert done.returncode != 0
    tail = done.stderr.strip().splitlines()[-1]
    assert tail.startswith("alpha2.gpu.errors.UnsupportedError: "), done.stderr
    assert 'if __name__ == "__main__":' in tail
    assert "without a result" not in done.stderr
    assert not (tmp_path / "out.mp4").exists()
    assert not [n for n in os.listdir(tmp_path) if ".segments." in n]


def test_python_m_alpha2_is_not_taken_for_an_unguarded_script(tmp_path: Path) -> None:
    """A package's ``__main__`` (``python -m alpha2``) is not run again by spawn: its segments run."""
    clip = make_clip(tmp_path / "in.mp4", width=64, height=48, frames=30, gop=10)
    out = tmp_path / "out.mp4"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "alpha2",
            "transcode",
            clip.path,
            str(out),
            "--segments",
            "3",
            "--preset",
            "veryfast",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "video encoded in 3 segments at once" in done.stdout + done.stderr
    assert out.exists()
