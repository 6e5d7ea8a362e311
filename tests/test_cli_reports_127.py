"""Outside-pass faults of the command line's reports (helper 127): a copy's frames past --to said."""

from __future__ import annotations

import fcntl
import fractions
import itertools
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import av
import pytest
from media import make_clip, pattern

from alpha2.apps.cli import main

REPO = Path(__file__).resolve().parent.parent


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(args)
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _shown_times(path: str) -> list[float]:
    with av.open(path) as container:
        stream = container.streams.video[0]
        return sorted(float(p.pts * p.time_base) for p in container.demux(stream) if p.pts is not None)


@pytest.mark.parametrize("b_frames", [2, 0])
def test_copy_to_says_the_frames_it_keeps_past_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], b_frames: int
) -> None:
    # A copy ends by decode time (as ffmpeg's): with B-frames, a P-frame shown after --to that earlier
    # B-frames refer to is written, after a pause; the summary and --json said nothing of it.
    clip = make_clip(tmp_path / "b.mp4", frames=60, gop=12, b_frames=b_frames)
    out = str(tmp_path / "o.mp4")
    code, text, err = _run(["transcode", clip.path, out, "--codec", "copy", "--to", "1", "--json"], capsys)
    assert code == 0, err
    past = json.loads(text)["cut"]["past_to"]
    times = _shown_times(out)
    after = [t for t in times if t >= 1.0 - 1e-6]
    if b_frames == 0:
        assert after == [] and past is None
        return
    assert len(after) >= 2  # the case the note is for: more than the frame at --to itself
    assert past["frames"] == len(after)
    assert past["last_seconds"] == pytest.approx(after[-1], abs=1e-3)
    step = 1 / 30
    assert past["gap"] is any(b - a > step * 1.5 for a, b in itertools.pairwise(times))
    assert past["gap"] and "decode order" in past["reason"]
    code, _, err = _run(["transcode", clip.path, out, "--codec", "copy", "--to", "1", "-y"], capsys)
    assert code == 0, err
    said = " ".join(err.split())
    head = f"{len(after)} frames at or past the part's end (1.000 s) copied"
    assert f"{head}, the last at {after[-1]:.3f} s" in said
    assert "after a pause" in said


def _anamorphic(path: Path, rotation_ccw: int | None = None) -> str:
    """A 64x48 clip whose pixels are 4:3 (shown 85x48), turned by ``rotation_ccw``."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.codec_context.sample_aspect_ratio = fractions.Fraction(4, 3)
        if rotation_ccw is not None:
            stream.set_display_rotation(rotation_ccw)
        for index in range(2):
            frame = av.VideoFrame.from_ndarray(pattern(index, 64, 48), format="rgb24").reformat(
                format="yuv420p"
            )
            frame.pts = index
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def test_probe_json_says_the_decoded_video_s_shown_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The decoded video said display_size [352, 288] (stored pixels) where its stream's shown_size was
    # [512, 288], with nothing saying which a player shows; it now says both, named.
    flat = _anamorphic(tmp_path / "wide.mp4")
    turned = _anamorphic(tmp_path / "turned.mp4", rotation_ccw=90)
    code, text, err = _run(["probe", "--json", flat, turned], capsys)
    assert code == 0, err
    files = json.loads(text)["files"]
    videos = [f["video"] for f in files]
    assert [v["display_size"] for v in videos] == [[64, 48], [48, 64]]  # meaning kept: stored pixels
    assert [v["shown_size"] for v in videos] == [[85, 48], [48, 85]]
    assert [v["sample_aspect_ratio"] for v in videos] == ["4:3", "4:3"]
    assert [v["shown_size"] for v in videos] == [f["streams"][0]["shown_size"] for f in files]
    square = make_clip(tmp_path / "square.mp4", frames=2).path
    code, text, err = _run(["probe", "--json", square], capsys)
    video = json.loads(text)["files"][0]["video"]
    assert video["shown_size"] == video["display_size"] == [64, 48] and video["sample_aspect_ratio"] is None


def test_batch_of_standard_input_says_it_reads_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 'alpha2 batch -' said "input '-' does not exist", as of a file gone missing.
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(["batch", "-", "--out", str(tmp_path / "out")], capsys)
    said = " ".join(err.split())
    assert code != 0 and "Traceback" not in err
    assert "batch reads files, not standard input ('-')" in said, said
    assert "list file (.txt, one path a line" in said and "does not exist" not in said
    assert not (tmp_path / "out").exists()


def _screen_lines(data: str, columns: int) -> list[str]:
    """What a terminal ``columns`` wide shows for ``data`` (carriage returns and newlines; a line
    that reaches past the last column wraps onto the next, as a terminal's does)."""
    lines, line, col = [], [" "] * columns, 0
    for char in data:
        if char == "\r":
            col = 0
        elif char == "\n":
            lines.append("".join(line).rstrip())
            line, col = [" "] * columns, 0
        else:
            if col == columns:  # wrapped by the terminal
                lines.append("".join(line).rstrip())
                line, col = [" "] * columns, 0
            line[col] = char
            col += 1
    lines.append("".join(line).rstrip())
    return lines


@pytest.mark.skipif(sys.platform != "linux", reason="a pseudo-terminal of Linux's line discipline")
def test_batch_stopped_line_fits_beside_the_terminal_s_ctrl_c_echo(tmp_path: Path) -> None:
    # On a terminal, Ctrl-C is echoed as '^C' at the cursor (the start of the line under the lines per
    # file); the 'stopped' line, filled to 80 columns, started after it and wrapped 2 characters over.
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / "a.mp4", frames=4)
    make_clip(src / "b.mp4", width=320, height=240, frames=1500)  # still encoding when interrupted
    env = dict(
        os.environ,
        TERM="dumb",
        PYTHONPATH=str(REPO),
        XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"),
    )
    env.pop("COLUMNS", None)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    command = [
        sys.executable,
        "-m",
        "alpha2",
        "batch",
        str(src),
        "--out",
        str(tmp_path / "out"),
        "--workers",
        "1",
    ]
    process = subprocess.Popen(
        command,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        close_fds=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(slave)
    data = b""
    try:
        deadline = time.monotonic() + 120
        while b"1/2 a.mp4" not in data:
            assert time.monotonic() < deadline, data
            if select.select([master], [], [], 0.5)[0]:
                data += os.read(master, 4096)
        time.sleep(0.3)
        os.write(master, b"\x03")  # Ctrl-C, as typed: the line discipline sends SIGINT and echoes '^C'
        while True:
            try:
                chunk = os.read(master, 4096) if select.select([master], [], [], 30)[0] else b""
            except OSError:  # EIO: the process and its terminal are gone
                break
            if not chunk:
                break
            data += chunk
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    text = data.decode(errors="replace")
    assert "^C" in text  # the terminal did echo it
    screen = _screen_lines(text, 80)
    stopped = next(i for i, line in enumerate(screen) if "stopped with 1 of 2 files done" in line)
    assert screen[stopped].startswith("alpha2: batch: stopped"), screen
    assert screen[stopped + 1].startswith("  in progress removed"), screen  # its own wrap, not the terminal's
    assert screen[stopped + 2] == "alpha2: interrupted", screen
