"""``alpha2 transcode --segments K``: the video encoded in parts at once and joined
(:mod:`alpha2.api.segmented_transcode`, :mod:`alpha2.ffmpeg_bridge.concat`).

Every joined output is checked against a one-pipeline transcode of the same input: the same frames at
the same times (each frame of the test clips differs, so a frame lost, doubled or moved at a boundary
shows), pictures equal within encoder noise, timestamps continuous, the audio whole. CPU only (libx264),
small clips; each segmented run starts its worker processes (about a second on 2 cores).
"""

from __future__ import annotations

import fractions
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from media import ENCODERS, make_clip, pattern

from alpha2.api import segmented_transcode
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps import cli
from alpha2.gpu.errors import InvalidInputError, UnsupportedError

# B-frames in the output, so that decode and presentation order differ at the boundaries.
PRESET = "veryfast"


def _decode(path: str) -> tuple[list[fractions.Fraction], list[np.ndarray]]:
    """Every frame's time (seconds) and luma plane."""
    times: list[fractions.Fraction] = []
    lumas: list[np.ndarray] = []
    with av.open(path) as container:
        stream = container.streams.video[0]
        for frame in container.decode(stream):
            assert frame.pts is not None and frame.time_base is not None
            times.append(frame.pts * fractions.Fraction(frame.time_base))
            lumas.append(frame.to_ndarray(format="gray").astype(np.float64))
    return times, lumas


def _audio_seconds(path: str) -> float | None:
    """How long the audio plays, from its packets (None: no audio stream)."""
    with av.open(path) as container:
        if not container.streams.audio:
            return None
        stream = container.streams.audio[0]
        end = 0.0
        for packet in container.demux(stream):
            if packet.pts is not None and packet.time_base is not None:
                end = max(end, float((packet.pts + (packet.duration or 0)) * packet.time_base))
        return end


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a - b) ** 2))
    return 99.0 if mse == 0 else 10 * np.log10(255.0**2 / mse)


def _key_times(path: str) -> list[fractions.Fraction]:
    with av.open(path) as container:
        stream = container.streams.video[0]
        return [
            p.pts * fractions.Fraction(p.time_base)
            for p in container.demux(stream)
            if p.is_keyframe and p.pts is not None and p.time_base is not None
        ]


def _dts_increase(path: str) -> bool:
    with av.open(path) as container:
        dts = [p.dts for p in container.demux(container.streams.video[0]) if p.dts is not None]
    return all(b > a for a, b in itertools.pairwise(dts))


def _compare(src: str, tmp_path: Path, segments: int, name: str = "out.mp4") -> tuple[Any, Any, str, str]:
    """Transcode ``src`` in one pipeline and in ``segments`` parts; check what every joined output must
    hold; return both reports and paths."""
    one_path, seg_path = str(tmp_path / f"one_{name}"), str(tmp_path / f"seg_{name}")
    one = transcode(src, one_path, TranscodeOptions(preset=PRESET))
    seg = transcode(src, seg_path, TranscodeOptions(preset=PRESET, segments=segments))
    report = seg.segments
    assert report is not None and report["segments"] == segments, report
    assert report["done"] == f"video encoded in {segments} segments at once, joined"
    parts = report["parts"]
    assert [p["index"] for p in parts] == list(range(segments))
    assert all(p["frames"] > 0 for p in parts) and sum(p["frames"] for p in parts) == one.frames == seg.frames
    one_times, one_lumas = _decode(one_path)
    seg_times, seg_lumas = _decode(seg_path)
    assert len(seg_times) == len(one_times) == one.frames
    assert seg_times == one_times  # the same frames at the same times: none lost, doubled or moved
    assert all(b > a for a, b in itertools.pairwise(seg_times))
    worst = min(_psnr(a, b) for a, b in zip(one_lumas, seg_lumas))
    assert worst > 30, f"a joined frame differs from the one-pipeline frame: {worst:.1f} dB"
    # Each segment starts with a key frame, where the report says it starts.
    keys = _key_times(seg_path)
    for part in parts[1:]:
        assert any(abs(float(k) - part["from_seconds"]) < 1e-6 for k in keys), (part, keys)
    assert _dts_increase(seg_path)
    # No worker files left beside the output.
    assert sorted(os.listdir(tmp_path)) == sorted(n for n in os.listdir(tmp_path) if not n.startswith(".")), (
        os.listdir(tmp_path)
    )
    return one, seg, one_path, seg_path


@pytest.mark.parametrize("segments", [2, 3])
def test_joined_output_matches_one_pipeline(tmp_path: Path, segments: int) -> None:
    clip = make_clip(tmp_path / "in.mp4", width=96, height=64, frames=90, gop=15, audio=True)
    one, seg, one_path, seg_path = _compare(clip.path, tmp_path, segments)
    times, lumas = _decode(seg_path)
    # Continuous: one frame every 1/30 s, from 0.
    assert times[0] == 0 and {b - a for a, b in itertools.pairwise(times)} == {fractions.Fraction(1, 30)}
    # Close to the source too (the per-frame pattern: a frame out of place would be far off).
    _, source = _decode(clip.path)
    assert min(_psnr(a, b) for a, b in zip(source, lumas)) > 28
    # The audio is copied once over the whole output: as long as the video, as in one pipeline.
    audio = _audio_seconds(seg_path)
    assert audio is not None and audio == pytest.approx(_audio_seconds(one_path), abs=1e-3)
    assert audio == pytest.approx(clip.frames / 30, abs=0.03)
    assert seg.encoder["audio"] == one.encoder["audio"] == "copied"
    assert seg.as_dict()["segments"]["parts"][1]["from_seconds"] > 0
    assert seg.encoder["name"] == one.encoder["name"] == "libx264"


def _open_gop_clip(path: str, frames: int = 96) -> str:
    """An H.264 clip with B-frames and open GOPs (leading B-frames refer to the GOP before)."""
    name, _ = ENCODERS["h264"]
    with av.open(path, "w") as out:
        stream: Any = out.add_stream(
            name,
            rate=30,
            options={
                "preset": "veryfast",
                "x264-params": "open-gop=1:bframes=3:b-adapt=0:keyint=24:min-keyint=24:scenecut=0",
            },
        )
        stream.width, stream.height, stream.pix_fmt = 96, 64, "yuv420p"
        stream.codec_context.thread_count = 1
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(pattern(i, 96, 64), format="rgb24").reformat(format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def test_bframes_and_open_gops_in_the_input(tmp_path: Path) -> None:
    src = _open_gop_clip(str(tmp_path / "open.mkv"))
    with av.open(src) as container:
        packets = [p for p in container.demux(container.streams.video[0]) if p.pts is not None]
    # The input is what the test is about: frames out of order, and key frames with frames after them
    # in decode order that are shown before them (the open GOP's leading B-frames).
    assert any(p.pts != p.dts for p in packets)
    order = [p.pts for p in packets]
    keys = [i for i, p in enumerate(packets) if p.is_keyframe and i > 0]
    assert keys and any(order[k + 1] < order[k] for k in keys if k + 1 < len(order))
    _compare(src, tmp_path, 3)


def test_variable_frame_rate_input(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "vfr.mkv", width=64, height=48, frames=48, gop=8, vfr=True)
    *_, seg_path = _compare(clip.path, tmp_path, 2, name="vfr.mkv")
    times, _ = _decode(seg_path)
    # The input's own irregular timing, not a constant rate.
    assert times == [fractions.Fraction(p, 1000) for p in clip.pts]


def test_part_of_the_input(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "in.mp4", width=64, height=48, frames=90, gop=10, audio=True)
    options = {"preset": PRESET, "from_seconds": 0.5, "to_seconds": 2.5}
    one = transcode(clip.path, str(tmp_path / "one.mp4"), TranscodeOptions(**options))
    seg = transcode(clip.path, str(tmp_path / "seg.mp4"), TranscodeOptions(**options, segments=2))
    assert seg.segments is not None and seg.segments["segments"] == 2
    one_times, one_lumas = _decode(str(tmp_path / "one.mp4"))
    seg_times, seg_lumas = _decode(str(tmp_path / "seg.mp4"))
    assert seg_times == one_times and len(seg_times) == 60
    assert min(_psnr(a, b) for a, b in zip(one_lumas, seg_lumas)) > 30
    audio = _audio_seconds(str(tmp_path / "seg.mp4"))
    assert audio == pytest.approx(_audio_seconds(str(tmp_path / "one.mp4")), abs=1e-3)
    assert seg.cut == one.cut


def _size_change_clip(path: str) -> str:
    """An H.264 stream whose picture grows at its second second (the headers in-band at each key frame)."""
    name, _ = ENCODERS["h264"]
    packets: list[Any] = []
    tb = fractions.Fraction(1, 30)
    with av.open(path, "w") as out:
        stream: Any = None
        for part, (width, height) in enumerate(((64, 48), (96, 64))):
            codec = av.CodecContext.create(name, "w")
            codec.width, codec.height, codec.pix_fmt = width, height, "yuv420p"
            codec.time_base = tb
            codec.framerate = fractions.Fraction(30)
            codec.gop_size = 15
            codec.options = {"preset": "ultrafast", "x264-params": "repeat-headers=1"}
            if stream is None:
                stream = out.add_stream(name, rate=30)
                stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
                stream.time_base = tb
            for i in range(30):
                frame = av.VideoFrame.from_ndarray(pattern(i, width, height), format="rgb24")
                frame = frame.reformat(format="yuv420p")
                frame.pts, frame.time_base = part * 30 + i, tb
                packets.extend(codec.encode(frame))
            packets.extend(codec.encode(None))
        for packet in packets:
            packet.stream = stream
            packet.time_base = tb
            out.mux(packet)
    return path


def test_a_failing_segment_leaves_no_output_and_no_temporary_files(tmp_path: Path) -> None:
    src = _size_change_clip(str(tmp_path / "grows.mkv"))
    before = set(os.listdir(tmp_path))
    out = tmp_path / "out.mp4"
    with pytest.raises(
        UnsupportedError,
        match=r"^segment 2 of 2 \(from 1\.000 s\): the input changes .* 96x64 \(the file starts with 64x48\)",
    ):
        transcode(src, str(out), TranscodeOptions(preset="ultrafast", segments=2))
    assert set(os.listdir(tmp_path)) == before  # no output, no segment folder, no partial file


def test_auto_runs_one_pipeline_where_the_input_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--segments auto`` promises as many segments as help: where a segment would be encoded
    otherwise than the rest (the picture grows part-way), one pipeline transcodes it, and says why."""
    src = _size_change_clip(str(tmp_path / "grows.mkv"))
    monkeypatch.setattr(segmented_transcode, "available_cores", lambda: 8)
    out = tmp_path / "out.mp4"
    stats = transcode(src, str(out), TranscodeOptions(preset="ultrafast", segments="auto"))
    assert stats.segments is not None and stats.segments["segments"] == 1
    done = stats.segments["done"]
    assert done.startswith("one pipeline: --segments auto on 8 cores") and "the input changes" in done, done
    assert stats.frames == 60 and out.exists()
    assert sorted(os.listdir(tmp_path)) == ["grows.mkv", "out.mp4"]  # no segment folder left


def test_refusals(tmp_path: Path) -> None:
    for bad in (1, 0, "many", True):
        with pytest.raises(InvalidInputError, match="segments must be 2 or more"):
            TranscodeOptions(segments=bad)
    with pytest.raises(InvalidInputError, match=r"^segments cannot go with frames"):
        TranscodeOptions(segments=2, frames=10)
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInputError, match="is a FIFO, not a file"):
        transcode(str(fifo), str(tmp_path / "out.mp4"), TranscodeOptions(segments=2))
    with pytest.raises(InvalidInputError, match="not a local file"):
        transcode("http://example.invalid/a.mp4", str(tmp_path / "out.mp4"), TranscodeOptions(segments=2))
    assert sorted(os.listdir(tmp_path)) == ["pipe.mp4"]


def test_one_pipeline_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clip = make_clip(tmp_path / "in.mp4", width=64, height=48, frames=30, gop=15)
    monkeypatch.setattr(segmented_transcode, "available_cores", lambda: 4)
    stats = transcode(clip.path, str(tmp_path / "auto.mp4"), TranscodeOptions(segments="auto"))
    assert stats.segments is not None and stats.segments["segments"] == 1
    assert stats.segments["done"].startswith("one pipeline: --segments auto on 4 cores")
    assert stats.frames == 30
    # Key frames every 100 frames: no place to split 30 frames.
    single = make_clip(tmp_path / "one_gop.mp4", width=64, height=48, frames=30, gop=100)
    stats = transcode(single.path, str(tmp_path / "k.mp4"), TranscodeOptions(segments=3))
    assert stats.segments is not None and stats.segments["segments"] == 1
    assert "no place to split" in stats.segments["done"] and stats.frames == 30
    monkeypatch.setattr(segmented_transcode, "available_cores", lambda: 32)
    assert segmented_transcode.choose_segment_count("auto", 32) == (
        8,
        "--segments auto on 32 cores: one segment per 4 cores",
    )


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clip = make_clip(tmp_path / "in.mp4", width=64, height=48, frames=40, gop=10)
    out = str(tmp_path / "out.mp4")
    assert cli.main(["transcode", clip.path, out, "--segments", "2", "--json", "--preset", PRESET]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["segments"]["done"] == "video encoded in 2 segments at once, joined"
    assert [p["frames"] for p in data["segments"]["parts"]] == [20, 20] and data["frames"] == 40
    assert cli.main(["transcode", clip.path, out, "-y", "--segments", "2", "--preset", PRESET]) == 0
    err = capsys.readouterr().err
    assert "segments" in err and "video encoded in 2 segments at once, joined" in err
    with pytest.raises(SystemExit) as usage:  # argparse's usage error
        cli.main(["transcode", clip.path, out, "-y", "--segments", "1"])
    assert usage.value.code == 2
    assert "segments must be 2 or more" in capsys.readouterr().err
    assert cli.main(["transcode", clip.path, out, "-y", "--segments", "2", "--frames", "5"]) == 1
    assert "--segments cannot go with --frames" in capsys.readouterr().err


def test_a_worker_ends_with_its_parent_and_a_killed_run_s_folder_goes_next_time(tmp_path: Path) -> None:
    """SIGKILL of a segmented transcode left its workers encoding as orphans and its segments folder
    beside the output (an outside pass): the workers now end with their parent, and the next run of that
    output removes a folder whose owner is gone (one whose owner runs is left)."""
    import signal
    import subprocess
    import textwrap

    from alpha2.api.segmented_transcode import _OWNER, _remove_abandoned

    code = textwrap.dedent(
        """
        import multiprocessing, os, sys, time
        from alpha2.api.segmented_transcode import _exit_with_parent

        def child(parent, delay):
            time.sleep(delay)  # a slow start: the parent may be gone before the watch begins
            _exit_with_parent(parent)
            time.sleep(60)

        if __name__ == "__main__":
            delay = float(sys.argv[1])
            p = multiprocessing.get_context("spawn").Process(target=child, args=(os.getpid(), delay))
            p.start()
            print(p.pid, flush=True)
            time.sleep(60)
        """
    )
    script = tmp_path / "parent.py"
    script.write_text(code)

    def alive(pid: int) -> bool:
        # A zombie counts as ended: where pid 1 reaps no orphans (some containers) it stays listed.
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return False
        return stat.rsplit(")", 1)[1].split()[0] != "Z"

    # The worker's watch begun before the parent is killed, and after it (the H100 run of 2026-12-05: the
    # worker, slow to import, read its parent's pid once it was already an orphan's, and lived on).
    for delay in ("0", "1.5"):
        parent = subprocess.Popen([sys.executable, str(script), delay], stdout=subprocess.PIPE, text=True)
        try:
            assert parent.stdout is not None
            child = int(parent.stdout.readline())
            time.sleep(0.5)
            parent.send_signal(signal.SIGKILL)
            parent.wait(5)
            deadline = time.monotonic() + 5 + float(delay)
            while time.monotonic() < deadline and alive(child):
                time.sleep(0.1)
            if alive(child):
                os.kill(child, signal.SIGKILL)
                raise AssertionError(f"the worker outlived its parent (its watch begun after {delay} s)")
        finally:
            if parent.poll() is None:
                parent.kill()

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for name, pid in ((".out.segments.dead", gone.pid), (".out.segments.live", os.getpid())):
        folder = tmp_path / name
        folder.mkdir()
        (folder / _OWNER).write_text(str(pid))
    (tmp_path / ".out.segments.other").mkdir()  # no owner file: not ours to remove
    _remove_abandoned(str(tmp_path), ".out.segments.")
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out."))
    assert left == [".out.segments.live", ".out.segments.other"]
