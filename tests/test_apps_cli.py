"""The ``alpha2`` commands' contract: exit 0 / 1 (one line ``alpha2: error: ...``) / 2 (usage), no traceback,
no output left behind on failure; ``--json`` stats with per-path counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alpha2.apps.cli import main
from alpha2.apps.sample import write_sample
from alpha2.ffmpeg_bridge import HwAccelMode, plan_hw_device
from alpha2.gpu.errors import Error
from alpha2.gpu.geometry import Size

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.path.dirname(__file__))
from media import garbage  # noqa: E402


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("cli_clips")
    return write_sample(str(root / "clip.mp4"), duration_s=0.3, size=Size(160, 90), audio=False).path


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(args)
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_error_line(err: str, *needles: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got: {err!r}"
    assert lines[0].startswith("alpha2: error: "), lines[0]
    assert "Traceback" not in err
    for needle in needles:
        assert needle.lower() in lines[0].lower(), f"{needle!r} not in {lines[0]!r}"


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# ---------------------------------------------------------------------------------------------------
# runtime failures: exit 1, one line, nothing written


@pytest.mark.parametrize("command", ["transcode", "play"])
def test_missing_input(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [command, str(tmp_path / "nope.mp4")]
    args += [str(tmp_path / "out.mp4")] if command == "transcode" else ["--offscreen"]
    code, _, err = run_cli(args, capsys)
    assert code == 1
    assert_one_error_line(err, "nope.mp4")
    assert files_in(tmp_path) == []


@pytest.mark.parametrize("kind", ["garbage", "subtitles-only"])
def test_bad_input(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # (An audio-only input was refused here until audio-only transcoding came: it is transcoded now.)
    src = tmp_path / "in"
    if kind == "garbage":
        bad = garbage(str(src) + ".mp4")
    else:
        bad = str(src) + ".srt"
        Path(bad).write_text("1\n00:00:00,000 --> 00:00:01,000\nhello\n\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, _, err = run_cli(["transcode", bad, str(out_dir / "o.mp4")], capsys)
    assert code == 1
    assert_one_error_line(err, *(["no video or audio"] if kind != "garbage" else []))
    assert files_in(out_dir) == []


def test_unknown_codec(clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["transcode", clip, str(tmp_path / "o.mp4"), "--codec", "nosuchcodec"], capsys)
    assert code == 1
    assert_one_error_line(err, "nosuchcodec", "h264")
    assert files_in(tmp_path) == []


def test_unwritable_output(clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    code, _, err = run_cli(["transcode", clip, str(not_a_dir / "o.mp4")], capsys)
    assert code == 1
    assert_one_error_line(err, "is a file, not a folder")  # (it was said not to exist)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            # Root writes anywhere permissions say; /proc still refuses new files.
            if not os.path.isdir("/proc"):
                pytest.skip("running as root: permissions do not stop writes")
            for args in (
                ["transcode", clip, "/proc/alpha2-o.mp4"],
                ["play", clip, "--snapshot", "/proc/a2.png"],
            ):
                code, _, err = run_cli(args, capsys)
                assert code == 1
                assert_one_error_line(err)
            return
        code, _, err = run_cli(["transcode", clip, str(locked / "o.mp4")], capsys)
        assert code == 1
        assert_one_error_line(err, "not writable")
        assert files_in(locked) == []
    finally:
        locked.chmod(0o700)


def test_unwritable_snapshot(clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["play", clip, "--snapshot", str(tmp_path / "missing" / "s.png")], capsys)
    assert code == 1
    assert_one_error_line(err, "does not exist")


def test_hwaccel_cuda_unavailable_is_an_error(
    clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        plan_hw_device(HwAccelMode.CUDA)
    except Error:
        pass
    else:
        pytest.skip("NVDEC can be had here")
    code, _, err = run_cli(["transcode", clip, str(tmp_path / "o.mp4"), "--hwaccel", "cuda"], capsys)
    assert code == 1
    assert_one_error_line(err, "cuda")
    assert files_in(tmp_path) == []


# ---------------------------------------------------------------------------------------------------
# usage errors: exit 2


@pytest.mark.parametrize(
    "args",
    [
        ["transcode", "in.mp4"],
        ["transcode", "in.mp4", "out.mp4", "--size", "0x10"],
        ["transcode", "in.mp4", "out.mp4", "--size", "big"],
        ["transcode", "in.mp4", "out.mp4", "--crf", "20", "--bitrate", "1M"],
        ["transcode", "in.mp4", "out.mp4", "--hwaccel", "vaapi"],
        ["transcode", "in.mp4", "out.mp4", "--frames", "0"],
        ["play", "in.mp4", "--at", "-1"],
        ["play", "in.mp4", "--frames", "x"],
        ["sample", "s.mp4", "--size", "11x3"],
        ["sample", "s.mp4", "--duration", "0"],
        ["sample", "s.mp4", "--audio", "--no-audio"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(args, capsys)
    assert code == 2
    assert "Traceback" not in err and "usage:" in err
    assert files_in(tmp_path) == []


# ---------------------------------------------------------------------------------------------------
# success, JSON, and a real process


def test_sample_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.mkv"
    code, stdout, _ = run_cli(
        ["sample", str(out), "--duration", "0.2", "--size", "96x64", "--no-audio", "--json"], capsys
    )
    assert code == 0
    data = json.loads(stdout)
    assert data["frames"] == 6 and data["size"] == [96, 64] and data["audio"] is False
    assert files_in(tmp_path) == ["s.mkv"]


def test_transcode_json_passthrough(clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run_cli(["transcode", clip, str(tmp_path / "o.mp4"), "--json"], capsys)
    assert code == 0
    data = json.loads(stdout)
    assert data["mode"] == "passthrough"
    # Software decoding hands frames straight over; NVDEC frames (where auto finds NVDEC) are downloaded
    # for the software encoder, and reported as such.
    expected = "cpu_download" if data["hwaccel"]["active"] == "cuda" else "software"
    assert data["paths"] == {expected: data["frames"]}
    assert data["encoder"]["name"]
    assert files_in(tmp_path) == ["o.mp4"]


@pytest.mark.vulkan
def test_play_json_reports_cpu_upload(clip: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Software decoding: the planes are in host memory, so the import is a CPU upload on any device.
    code, stdout, _ = run_cli(
        ["play", clip, "--offscreen", "--frames", "3", "--json", "--hwaccel", "none"], capsys
    )
    assert code == 0
    data = json.loads(stdout)
    assert data["paths"] == {"cpu_upload": 3}
    assert data["frames"] == 3 and data["peak_surfaces"] >= 1


def test_subprocess_exit_codes(clip: str, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    bad = subprocess.run(
        [sys.executable, "-m", "alpha2", "transcode", str(tmp_path / "missing.mp4"), str(tmp_path / "o.mp4")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert bad.returncode == 1
    assert_one_error_line(bad.stderr)
    usage = subprocess.run(
        [sys.executable, "-m", "alpha2", "transcode"], capture_output=True, text=True, env=env, timeout=120
    )
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
    ok = subprocess.run(
        [sys.executable, "-m", "alpha2", "transcode", clip, str(tmp_path / "ok.mp4"), "--frames", "3"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stderr
    assert "Traceback" not in ok.stderr and "re-encoded (libx264" in ok.stderr
    assert files_in(tmp_path) == ["ok.mp4"]


@pytest.mark.vulkan
def test_no_runtime_dir_warnings_without_xdg_runtime_dir(clip: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run(
        [sys.executable, "-m", "alpha2", "play", clip, "--offscreen", "--frames", "2", "--hwaccel", "none"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "XDG_RUNTIME_DIR" not in run.stderr


def _has_svt_av1() -> bool:
    import av

    return "libsvtav1" in av.codecs_available


@pytest.mark.skipif(not _has_svt_av1(), reason="PyAV's FFmpeg has no libsvtav1")
def test_svt_av1_says_only_its_errors(clip: str, tmp_path: Path) -> None:
    """SVT-AV1 writes its banner, its configuration and notes on its own choices (``Svt[info]: ...``,
    about 20 lines a file) to stderr itself, past FFmpeg's log: the encoder's opening sets its level to
    errors (SVT_LOG) unless the user set one, with or without ``--quiet`` (x265 says nothing either)."""
    env = {k: v for k, v in os.environ.items() if k != "SVT_LOG"}
    env["XDG_RUNTIME_DIR"] = os.environ.get("XDG_RUNTIME_DIR", "/tmp")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")

    def transcode(*extra: str, **more_env: str) -> subprocess.CompletedProcess[str]:
        args = ["transcode", clip, str(tmp_path / "o.mkv"), "--codec", "av1", "-y", "--frames", "3", *extra]
        return subprocess.run(
            [sys.executable, "-m", "alpha2", *args],
            capture_output=True,
            text=True,
            env={**env, **more_env},
            timeout=300,
        )

    quiet = transcode("--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert "Svt[" not in quiet.stderr and quiet.stderr.strip() == "", quiet.stderr
    plain = transcode()
    assert plain.returncode == 0 and "Svt[" not in plain.stderr, plain.stderr
    asked = transcode("--quiet", SVT_LOG="3")
    assert asked.returncode == 0 and "Svt[info]" in asked.stderr, asked.stderr


def test_an_error_is_folded_to_a_terminal_and_one_line_elsewhere() -> None:
    """At 80 columns the terminal cut a long error mid-word (an outside pass); a pipe or a file still
    gets the one line a script reads."""
    import io

    from alpha2.apps.cli import print_error

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    message = "the input's pictures are 641x361: " + "cannot be encoded with this encoder " * 4
    term, pipe = Terminal(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        print_error(message, term)
        print_error(message, pipe)
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    lines = term.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert " ".join(line.strip() for line in lines) == pipe.getvalue().strip()
    assert len(pipe.getvalue().splitlines()) == 1


def test_size_takes_a_free_side_as_ffmpeg_s_scale_does(tmp_path: Path) -> None:
    """``--size -1x720`` (ffmpeg's scale=-1:720 habit) was 'argument --size: expected one argument'."""
    from alpha2.api.pipeline import FREE_SIDE, box_text, parse_fit_size
    from alpha2.apps.cli import build_parser
    from alpha2.gpu.geometry import Size

    for text, box in (
        ("-1x720", Size(FREE_SIDE, 720)),
        ("x720", Size(FREE_SIDE, 720)),
        ("1280x-2", Size(1280, FREE_SIDE)),
    ):
        assert parse_fit_size(text) == box, text
    assert box_text(Size(FREE_SIDE, 720)) == "720 high" and box_text(Size(640, 360)) == "640x360"
    words = ["transcode", "in.mp4", "out.mp4", "--size", "-1x720"]
    args = build_parser(words).parse_args(words)
    assert args.size == Size(FREE_SIDE, 720)
