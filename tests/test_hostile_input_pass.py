"""Hostile and odd input, from outside: pipes, damaged headers, ... (an outside pass)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import alpha2
from alpha2.api.transcoder import transcode
from alpha2.ffmpeg_bridge.errors import MediaFormatError
from alpha2.gpu.errors import InvalidInputError

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip, mux_with_pts, remux

REPO = str(Path(__file__).resolve().parent.parent)


def run_alpha2(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (REPO, os.environ.get("PYTHONPATH")))))
    return subprocess.run(
        [sys.executable, "-m", "alpha2", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "args",
    [
        ["transcode", "pipe.mkv", "out.mkv"],
        ["probe", "pipe.mkv"],
        ["play", "pipe.mkv", "--snapshot", "shot.png"],
    ],
)
def test_fifo_input_is_refused_not_waited_on(args: list[str], tmp_path: Path) -> None:
    # A FIFO with no writer: the first open waited for ever; with one, the second open did.
    os.mkfifo(tmp_path / "pipe.mkv")
    done = run_alpha2(args, tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "alpha2: error: input 'pipe.mkv' is a FIFO, not a file: alpha2 opens its input more than once and "
        "seeks in it; save the stream to a file and give its name"
    ]
    assert sorted(os.listdir(tmp_path)) == ["pipe.mkv"]


def test_library_transcode_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.mkv"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInputError, match="is a FIFO, not a file"):
        transcode(fifo, tmp_path / "out.mkv")
    clip = make_clip(tmp_path / "clip.mkv", frames=3)
    transcode(clip.path, tmp_path / "out.mkv")  # a file still goes
    assert (tmp_path / "out.mkv").stat().st_size > 0


def _cut(src: str, dst: Path, size: int) -> str:
    dst.write_bytes(Path(src).read_bytes()[:size])
    return str(dst)


def _moov(path: str) -> tuple[int, int]:
    data = Path(path).read_bytes()
    offset = 0
    while offset + 8 <= len(data):
        length, kind = int.from_bytes(data[offset : offset + 4], "big"), data[offset + 4 : offset + 8]
        if kind == b"moov":
            return offset, length
        offset += length
    raise AssertionError("no moov")


CUT_INDEX = "an MP4 / MOV cut short inside its 'moov' index: the file ends"


def test_mp4_cut_inside_its_index_says_so(tmp_path: Path) -> None:
    # The index last (as a muxer writes it): FFmpeg refused the file with 'Invalid data', said 'not a
    # video or sound file, or damaged from its start'.
    clip = make_clip(tmp_path / "clip.mp4", frames=12, audio=True).path
    start, length = _moov(clip)
    cut = _cut(clip, tmp_path / "cut.mp4", start + 300)  # inside the video's track
    with pytest.raises(MediaFormatError) as info:
        alpha2.open(cut, hwaccel="none")
    assert f"{CUT_INDEX} 300 bytes into the index's {length}" in str(info.value)
    # Its last bytes (metadata) missing, FFmpeg still reads it: it plays, nothing refused.
    whole = _cut(clip, tmp_path / "nearly.mp4", start + length - 7)
    with alpha2.open(whole, hwaccel="none") as source:
        assert sum(1 for _ in source) == 12


def test_faststart_mp4_cut_inside_its_index_says_so(tmp_path: Path) -> None:
    # The index first ('faststart'): FFmpeg opened the file with a data stream or none, said 'has no
    # video stream (streams: data)' by alpha2.open and 'holds no video or audio' by a transcode.
    clip = make_clip(tmp_path / "clip.mp4", frames=12, audio=True).path
    fast = remux(clip, str(tmp_path / "fast.mp4"), {"movflags": "faststart"})
    start, _ = _moov(fast)
    for size in (start + 40, start + 170, start + 300):
        cut = _cut(fast, tmp_path / "cut.mp4", size)
        with pytest.raises(MediaFormatError, match=CUT_INDEX):
            alpha2.open(cut, hwaccel="none")
    for args in (
        ["probe", "cut.mp4"],
        ["transcode", "cut.mp4", "out.mkv"],
        ["transcode", "cut.mp4", "o.m4a"],
    ):
        done = run_alpha2(args, tmp_path)
        assert done.returncode == 1, args
        assert done.stderr.startswith(f"alpha2: error: opening 'cut.mp4': {CUT_INDEX}"), (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "out.mkv").exists() and not (tmp_path / "o.m4a").exists()


def test_matroska_cut_inside_its_header_says_so(tmp_path: Path) -> None:
    # FFmpeg's answers alone were said: 'opening 'cut.mkv': Input/output error' (or 'End of file').
    clip = make_clip(tmp_path / "clip.mkv", frames=12).path
    for size in (50, 100, 300):
        cut = _cut(clip, tmp_path / "cut.mkv", size)
        with pytest.raises(MediaFormatError) as info:
            alpha2.open(cut, hwaccel="none")
        message = str(info.value)
        assert "could not read the container's header" in message, message
        assert "the file ends or is damaged inside it" in message


def test_output_name_too_long_is_refused_before_the_work(tmp_path: Path) -> None:
    # A name of 256 bytes: the whole transcode ran, then 'moving the finished output to ... failed:
    # [Errno 36] File name too long'. Now refused before the input is read.
    clip = make_clip(tmp_path / "clip.mkv", frames=3).path
    long_name = "M" * 252 + ".mp4"
    said = (
        f"output name {long_name[:40]!r}... is 256 bytes long; a file name in {str(tmp_path)!r} may be "
        "255 at most"
    )
    done = run_alpha2(["transcode", "clip.mkv", long_name], tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"alpha2: error: {said}"]
    with pytest.raises(InvalidInputError) as info:
        alpha2.create(tmp_path / ("é" * 130 + ".mp4"))  # 264 bytes in UTF-8
    assert "is 264 bytes long" in str(info.value)
    assert sorted(os.listdir(tmp_path)) == ["clip.mkv"]
    # The longest name there may be is written.
    fits = "M" * 251 + ".mp4"
    transcode(clip, tmp_path / fits)
    assert (tmp_path / fits).stat().st_size > 0


def test_probe_says_how_long_a_late_mkv_lasts_where_ffmpeg_gives_its_start(tmp_path: Path) -> None:
    # Packets from 10 h on (mux_with_pts: FFmpeg gives this file a start, 36000 s): 'alpha2 probe' said
    # 'Matroska / WebM, 10:00:00.333, 6.1 kB, 0 kb/s' of 10 frames at 30 fps, where the transcode of it
    # said 0.333 s.
    import json

    mux_with_pts(tmp_path / "late.mkv", [30 * 36000 + i for i in range(10)])
    done = run_alpha2(["probe", "late.mkv"], tmp_path)
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    assert head.startswith("late.mkv: Matroska / WebM, 0.333 s, "), head
    facts = json.loads(run_alpha2(["probe", "--json", "late.mkv"], tmp_path).stdout)["files"][0]
    assert facts["start_seconds"] == pytest.approx(36000.0)
    assert facts["duration_seconds"] == pytest.approx(0.333, abs=0.001)
    size = (tmp_path / "late.mkv").stat().st_size
    assert facts["bit_rate"] == pytest.approx(size * 8 / 0.333, rel=0.01)


def test_a_data_stream_is_named_by_its_codec_as_the_probe_names_it(tmp_path: Path) -> None:
    # An MPEG-TS of one bin_data stream: the probe said '#0 data bin_data', the transcode 'holds no
    # video or audio to transcode: data (unknown codec)'.
    import av

    path = tmp_path / "data.ts"
    with av.open(str(path), "w") as out:
        stream = out.add_data_stream("bin_data")
        for i in range(5):
            packet = av.Packet(b"hello")
            packet.stream, packet.pts, packet.dts = stream, i * 3000, i * 3000
            out.mux(packet)
    probe = run_alpha2(["probe", "data.ts"], tmp_path)
    assert "#0 data  bin_data" in probe.stdout, probe.stdout
    with pytest.raises(InvalidInputError) as info:
        transcode(path, tmp_path / "out.mkv")
    assert str(info.value) == f"{str(path)!r} holds no video or audio to transcode: data (bin_data)"
    assert sorted(os.listdir(tmp_path)) == ["data.ts"]


def test_a_file_cut_before_its_first_picture_says_its_video_holds_no_packets(tmp_path: Path) -> None:
    # An MPEG-TS cut after its tables (580 bytes: SDT, PAT, PMT, the start of a video packet): the
    # transcode said 'has no decodable video frames, and its decoder gave no picture size under the
    # limit on decoded pictures ...; if its pictures are larger, raise the limit (--max-pixels)'.
    clip = make_clip(tmp_path / "clip.ts", frames=12, audio=True).path
    _cut(clip, tmp_path / "cut.ts", 580)
    done = run_alpha2(["transcode", "cut.ts", "out.mkv"], tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "alpha2: error: 'cut.ts' has no video frames: its video stream (#0, h264) holds no packets; the "
        "file is cut short before its first picture, or the stream is empty"
    ]
    assert sorted(os.listdir(tmp_path)) == ["clip.ts", "cut.ts"]
