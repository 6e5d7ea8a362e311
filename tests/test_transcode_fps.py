"""``alpha2 transcode --fps RATE`` (``TranscodeOptions.fps``, ``alpha2 batch --fps``): the output on a
constant clock by FFmpeg's fps rule (round=near), checked against PyAV's own ``fps`` filter and by
decoding the outputs."""

from __future__ import annotations

import fractions
import json
from pathlib import Path
from typing import Any

import av
import av.filter
import numpy as np
import pytest
from media import fps_filter_choice, make_clip

from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps.cli import main
from alpha2.gpu.errors import InvalidInputError

F = fractions.Fraction


def _decoded(path: str | Path) -> tuple[list[F], list[np.ndarray], F | None]:
    """The output's video frames: their times (seconds), pictures (rgb24) and the audio's length."""
    with av.open(str(path)) as c:
        times, pictures = [], []
        for frame in c.decode(video=0):
            times.append(frame.pts * F(frame.time_base))
            pictures.append(frame.to_ndarray(format="rgb24").astype(np.int16))
    with av.open(str(path)) as c:
        audio = None
        if c.streams.audio:
            end = F(0)
            for frame in c.decode(audio=0):
                end = max(end, frame.pts * F(frame.time_base) + F(frame.samples, frame.sample_rate))
            audio = end
    return times, pictures, audio


def _input_choice(path: str, rate: F) -> tuple[list[int], list[np.ndarray]]:
    """The input frames PyAV's fps filter writes at ``rate`` from the input's decoded frames (their own
    timestamps: a 24 fps Matroska clip's are whole milliseconds), and the input's pictures."""
    with av.open(path) as c:
        decoded = list(c.decode(video=0))
    pts = [f.pts for f in decoded]
    durations = [f.duration or 0 for f in decoded]
    chosen = fps_filter_choice(pts, durations, F(decoded[0].time_base), rate)
    return [i for _, i in chosen], [f.to_ndarray(format="rgb24").astype(np.int16) for f in decoded]


def _closest(picture: np.ndarray, inputs: list[np.ndarray]) -> int:
    return int(np.argmin([np.abs(picture - p).mean() for p in inputs]))


@pytest.mark.parametrize("text,rate", [("29.97", F(2997, 100)), ("ntsc", F(30000, 1001)), (25, F(25))])
def test_options_take_rates_exactly(text: Any, rate: F) -> None:
    assert TranscodeOptions(fps=text).fps == rate


@pytest.mark.parametrize("bad", ["abc", "0", "-5", "30/0", "1e9", "nan", "", True, [30]])
def test_bad_rates_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"^fps (must be|.* too fine)"):  # not 'unknown option'
        TranscodeOptions(fps=bad)


# ---------------------------------------------------------------------------------------------------
# outputs, decoded


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("fps")
    return {
        "60": make_clip(folder / "c60.mp4", frames=24, rate=60, audio=True).path,
        "24": make_clip(folder / "c24.mkv", frames=12, rate=24).path,
        "vfr": make_clip(folder / "vfr.mkv", frames=20, vfr=True).path,
    }


def test_60_to_30_keeps_every_other_frame_and_the_audio(clips: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "o.mkv"
    stats = transcode(clips["60"], str(out), TranscodeOptions(fps=30, codec="ffv1"))
    times, pictures, audio = _decoded(out)
    inputs = _decoded(clips["60"])[1]
    assert len(pictures) == stats.frames == 12
    # Matroska's clock is 1 ms; it starts the video after the AAC's priming samples, with or without --fps.
    assert all(abs(t - times[0] - F(n, 30)) <= F(1, 1000) for n, t in enumerate(times))
    for n, picture in enumerate(pictures):  # lossless: each is the input's frame 2n, exactly
        assert np.array_equal(picture, inputs[2 * n]), n
    assert stats.frame_rate is not None
    assert (stats.frame_rate.dropped, stats.frame_rate.repeated) == (12, 0)
    # The audio is untouched and keeps its length (0.4 s of video, its tone 0.4 s and one AAC frame).
    assert audio is not None and abs(float(audio) - 0.4) < 0.03
    assert stats.output_seconds is not None and abs(stats.output_seconds - 0.4) < 0.03


def test_60_to_30_timestamps_exact_on_the_rate_clock(clips: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "o.mp4"
    transcode(clips["60"], str(out), TranscodeOptions(fps="30"))
    with av.open(str(out)) as c:
        stream = c.streams.video[0]
        assert stream.average_rate == 30
        times = [f.pts * F(f.time_base) for f in c.decode(video=0)]
    assert times == [F(n, 30) for n in range(12)]


def test_24_to_30_repeats_as_the_filter_does(clips: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "o.mkv"
    stats = transcode(clips["24"], str(out), TranscodeOptions(fps=30, codec="ffv1"))
    _, pictures, _ = _decoded(out)
    expected, inputs = _input_choice(clips["24"], F(30))
    assert len(expected) == 15 and len(set(expected)) == 12
    assert [_closest(p, inputs) for p in pictures] == expected
    for picture, index in zip(pictures, expected, strict=True):
        assert np.array_equal(picture, inputs[index])
    assert stats.frame_rate is not None
    assert (stats.frames, stats.frame_rate.dropped, stats.frame_rate.repeated) == (15, 0, 3)


def test_vfr_to_cfr_chooses_the_filters_frames(clips: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "o.mkv"
    rate = F(24000, 1001)
    stats = transcode(clips["vfr"], str(out), TranscodeOptions(fps="24000/1001", codec="ffv1"))
    expected, inputs = _input_choice(clips["vfr"], rate)
    times, pictures, _ = _decoded(out)
    assert [_closest(p, inputs) for p in pictures] == expected
    for picture, index in zip(pictures, expected, strict=True):
        assert np.array_equal(picture, inputs[index])
    assert all(abs(t - n / rate) <= F(1, 1000) for n, t in enumerate(times))
    assert stats.frame_rate is not None and stats.frame_rate.dropped + stats.frame_rate.repeated > 0


def test_frames_counts_output_frames_and_cuts_the_audio(clips: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "o.mp4"
    stats = transcode(clips["60"], str(out), TranscodeOptions(fps=30, frames=5))
    times, pictures, audio = _decoded(out)
    assert len(pictures) == stats.frames == 5
    assert times == [F(n, 30) for n in range(5)]
    assert audio is not None and abs(float(audio) - 5 / 30) < 0.025  # cut where slot 5 begins


def test_swscale_route_repeats(clips: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "s.mkv"
    stats = transcode(clips["24"], str(out), TranscodeOptions(fps=30, size=(32, 24), codec="ffv1"))
    if stats.scale_route is None or stats.scale_route["route"] != "swscale":
        pytest.skip("a GPU device here: --size takes the GPU route")
    expected, _ = _input_choice(clips["24"], F(30))
    with av.open(clips["24"]) as c:
        small = [
            f.reformat(32, 24, interpolation="BICUBIC").to_ndarray(format="rgb24").astype(np.int16)
            for f in c.decode(video=0)
        ]
    times, pictures, _ = _decoded(out)
    assert len(pictures) == stats.frames == 15
    assert all(abs(t - times[0] - F(n, 30)) <= F(1, 1000) for n, t in enumerate(times))
    assert [_closest(p, small) for p in pictures] == expected
    assert stats.as_dict()["paths"] == {"software": 15}


@pytest.mark.vulkan
def test_gpu_path_repeats_and_drops(clips: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "g.mp4"
    options = TranscodeOptions(fps=30, gpu=True, hwaccel="none", preset="ultrafast", crf=10)
    stats = transcode(clips["24"], str(out), options)
    data = stats.as_dict()
    assert data["mode"] == "gpu"
    assert data["paths"] == {"cpu_upload": 12, "cpu_download": 15}  # uploaded once, read back per slot
    times, pictures, _ = _decoded(out)
    expected, inputs = _input_choice(clips["24"], F(30))
    assert times == [F(n, 30) for n in range(15)]
    assert [_closest(p, inputs) for p in pictures] == expected
    stats = transcode(clips["60"], str(tmp_path / "g60.mp4"), options)
    assert stats.frames == 12 and stats.frame_rate is not None and stats.frame_rate.dropped == 12


# ---------------------------------------------------------------------------------------------------
# the command line: summary, JSON, refusals, batch


def test_cli_summary_and_json(
    clips: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["transcode", clips["60"], str(tmp_path / "a.mp4"), "--fps", "30"]) == 0
    err = capsys.readouterr().err
    assert "rate    60 -> 30 fps: 12 dropped, 0 repeated" in err
    assert main(["transcode", clips["60"], str(tmp_path / "b.mp4"), "--fps", "ntsc", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["frame_rate"] == {
        "input_fps": 60.0,
        "input_rate": "60/1",
        "fps": round(30000 / 1001, 6),
        "rate": "30000/1001",
        "dropped": data["frame_rate"]["dropped"],
        "repeated": 0,
    }
    with av.open(str(tmp_path / "b.mp4")) as c:
        assert c.streams.video[0].average_rate == F(30000, 1001)
        assert c.streams.video[0].frames == data["frames"] == 24 - data["frame_rate"]["dropped"]


@pytest.mark.parametrize(
    "extra,code,said",
    [
        (["--fps", "fast"], 2, "argument --fps: must be a frame rate"),
        (["--fps", "0"], 2, "argument --fps: must be more than 0"),
        (["--fps", "30", "--codec", "copy"], 1, "--codec copy copies the pictures as they are: --fps"),
        (["--fps", "30", "--segments", "2"], 1, "--segments cannot go with --fps"),
    ],
)
def test_cli_refusals(
    clips: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    code: int,
    said: str,
) -> None:
    out = tmp_path / "r.mp4"
    if code == 2:
        with pytest.raises(SystemExit) as exc:
            main(["transcode", clips["60"], str(out), *extra])
        assert exc.value.code == 2
    else:
        assert main(["transcode", clips["60"], str(out), *extra]) == code
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("alpha2: error")]) == 1
    assert not out.exists()


def test_batch_takes_fps(clips: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in"
    src.mkdir()
    make_clip(src / "one.mp4", frames=24, rate=60)
    out = tmp_path / "out"
    assert main(["batch", str(src), "--out", str(out), "--fps", "30", "--workers", "1", "--quiet"]) == 0
    capsys.readouterr()
    times, pictures, _ = _decoded(out / "one.mp4")
    assert len(pictures) == 12 and times == [F(n, 30) for n in range(12)]
    # Another rate is another setting: the output is made again, not skipped as done.
    assert main(["batch", str(src), "--out", str(out), "--fps", "20", "--workers", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["files"][0]["status"] == "done"
    # The file's notes say the change, as transcode's summary does (a batch's said nothing of it).
    assert "frame rate 60 -> 20 fps: 16 dropped, 0 repeated" in report["files"][0]["notes"]
    assert len(_decoded(out / "one.mp4")[1]) == 8
