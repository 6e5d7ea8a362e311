"""The command line a person would choose over mpv and ffmpeg: examples in every ``--help``, the closest
name for a typo, option values checked up front, ``--from`` / ``--to`` / ``--duration`` cutting audio and
video alike, a summary and tables that fit 80 columns, JSON that stands on its own."""

from __future__ import annotations

import argparse
import fractions
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api.transcode_plan import X26X_PRESETS, TranscodeOptions
from alpha2.api.transcoder import transcode
from alpha2.apps import cli
from alpha2.apps.batch import BatchReport, print_summary
from alpha2.apps.batch_plan import BatchItem, FileResult, FileStatus
from alpha2.apps.cli import fit_columns, main, parse_time
from alpha2.apps.transcode_cli import summary_lines
from alpha2.apps.wall import WallStats
from alpha2.gpu.errors import InvalidInputError

REPO = Path(__file__).resolve().parent.parent
RATE = 30
FRAMES = 60
BURST_S = (1.2, 1.3)
"""When the clip's audio sounds (a 1 kHz burst in silence): where a cut lands is heard."""
CUES = ((0.0, 0.5, b"A"), (0.8, 1.3, b"B"), (1.4, 2.0, b"C"))
"""The clip's subtitles: (start s, end s, text)."""


def _luma(i: int) -> int:
    """Frame ``i``'s grey level (Y'): every frame is told apart by it."""
    return 16 + 3 * i


def _make_cut_clip(path: Path) -> str:
    """2 s at 30 fps, frame i a flat grey ``_luma(i)`` coded losslessly, AAC silence with a burst at
    ``BURST_S``, and SubRip cues ``CUES``."""
    ms = fractions.Fraction(1, 1000)
    with av.open(str(path), "w") as out:
        video: Any = out.add_stream("libx264", rate=RATE, options={"qp": "0", "preset": "ultrafast"})
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        video.codec_context.gop_size = 10
        audio: Any = out.add_stream("aac", rate=48_000)
        audio.layout = "stereo"
        text = out.add_mux_stream("subrip", time_base=ms)
        for i in range(FRAMES):
            planes = np.full((72, 64), 128, np.uint8)
            planes[:48] = _luma(i)
            frame = av.VideoFrame.from_ndarray(planes, format="yuv420p")
            frame.pts, frame.time_base = i, fractions.Fraction(1, RATE)
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        total = FRAMES * 48_000 // RATE
        t = np.arange(total) / 48_000
        sound = np.where((t >= BURST_S[0]) & (t < BURST_S[1]), 0.5 * np.sin(2 * np.pi * 1000 * t), 0.0)
        chunk = audio.codec_context.frame_size or 1024
        for start in range(0, total, chunk):
            part = np.zeros(chunk, np.float32)
            piece = sound[start : start + chunk].astype(np.float32)
            part[: len(piece)] = piece
            samples = av.AudioFrame.from_ndarray(np.stack([part, part]), format="fltp", layout="stereo")
            samples.sample_rate, samples.pts = 48_000, start
            for packet in audio.encode(samples):
                out.mux(packet)
        for packet in audio.encode(None):
            out.mux(packet)
        for start, end, words in CUES:
            cue = av.Packet(words)
            cue.pts = cue.dts = round(start * 1000)
            cue.duration, cue.time_base, cue.stream = round((end - start) * 1000), ms, text
            out.mux(cue)
    return str(path)


@pytest.fixture(scope="module")
def cut_clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _make_cut_clip(tmp_path_factory.mktemp("cut") / "in.mkv")


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(args)
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("alpha2: error:")]


# ---------------------------------------------------------------------------------------------------
# 1. an example in every command's --help


@pytest.mark.parametrize("command", [c for c, _m, _h in cli._SUBCOMMANDS])
def test_every_help_has_examples_within_80_columns(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run([command, "--help"], capsys)
    assert code == 0
    examples = out.split("\nexamples:\n", 1)[1].splitlines()
    assert examples and all(line.startswith(f"  alpha2 {command}") or "=" in line for line in examples)
    too_wide = [line for line in out.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    if command == "play":  # the keys table stays
        assert "keys and mouse in the window" in out and "pause / play" in out
    if command == "transcode":  # the default preset is said
        assert "(default medium)" in " ".join(out.split())


# ---------------------------------------------------------------------------------------------------
# 2. the closest name for a typo, with the command's own usage line


@pytest.mark.parametrize(
    "args,usage,said",
    [
        (
            ["transcod"],
            "usage: alpha2 [options] COMMAND",
            "unknown command 'transcod'; did you mean transcode?",
        ),
        (
            ["transcode", "a.mp4", "b.mp4", "--prest", "fast"],
            "usage: alpha2 transcode [options] INPUT OUTPUT",
            "unknown option --prest; did you mean --preset?",
        ),
        (
            ["play", "a.mp4", "--snapshop", "f.png"],
            "usage: alpha2 play [options] INPUT [INPUT ...]",
            "unknown option --snapshop; did you mean --snapshot?",
        ),
        (
            ["transcode", "a.mp4", "b.mp4", "--snapshop", "f.png"],
            "usage: alpha2 transcode [options] INPUT OUTPUT",
            "unknown option --snapshop (alpha2 play has --snapshot)",
        ),
        (
            ["transcode", "a.mp4", "b.mp4", "--colour", "bt70"],
            "usage: alpha2 transcode",
            "--colour: invalid choice 'bt70'; did you mean bt709?",
        ),
        (["batch", "x", "--out", "o", "--wrokers", "2"], "usage: alpha2 batch", "did you mean --workers?"),
        (
            ["--verison"],
            "usage: alpha2 [options] COMMAND",
            "unknown option --verison; did you mean --version?",
        ),
    ],
)
def test_typos_get_the_closest_name(
    args: list[str],
    usage: str,
    said: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 2, err
    assert lines[0].startswith(usage), lines[0]
    assert lines[1].startswith("alpha2: error: ") and lines[1].endswith(said), lines[1]
    assert len(lines[1]) <= 80
    assert os.listdir(tmp_path) == []


def test_typo_with_nothing_close_lists_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["frobnicate"], capsys)
    assert code == 2
    assert _error_lines(err) == [
        "alpha2: error: unknown command 'frobnicate' (probe, sample, play, transcode, batch)"
    ]
    code, _, err = _run(["transcode", "a.mp4", "b.mp4", "--xyzzy"], capsys)
    assert code == 2 and _error_lines(err) == [
        "alpha2: error: unknown option --xyzzy ('alpha2 transcode --help' lists the options)"
    ]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # After --, every word is a positional: --quiet is one too many, not an option to suggest.
        (
            ["transcode", "in.mp4", "--", "-out.mp4", "--quiet"],
            "unexpected argument --quiet (after -- no option is read)",
        ),
        (
            ["transcode", "in.mp4", "--", "-out.mp4", "--quiet", "x"],
            "unexpected arguments --quiet x (after -- no option is read)",
        ),
        # A file whose name starts with '-', before --: argparse takes it for an option, and OUTPUT is
        # missing; said as the unknown option, with the two ways to give such a file.
        (
            ["transcode", "-dash.mp4", "out.mp4"],
            "unknown option -dash.mp4; a file goes as ./-dash.mp4 or after --",
        ),
        (
            ["transcode", "in.mp4", "-dash.mp4"],
            "unknown option -dash.mp4; a file goes as ./-dash.mp4 or after --",
        ),
        (["probe", "-x.mkv"], "unknown option -x.mkv; a file goes as ./-x.mkv or after --"),
        # Options still get their suggestions, and a plain missing argument is said as argparse says it.
        (["transcode", "-quiet", "in.mp4"], "unknown option -quiet; did you mean --quiet?"),
        (["transcode", "-y"], "the following arguments are required: INPUT, OUTPUT"),
        (["transcode", "--", "a.mp4", "b.mp4", "c.mp4"], "unexpected argument: c.mp4"),
    ],
)
def test_arguments_that_start_with_a_dash(
    args: list[str],
    said: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 2, err
    assert lines[0].startswith(f"usage: alpha2 {args[0]} [options]"), lines[0]
    assert lines[1] == f"alpha2: error: {said}" and len(lines[1]) <= 80
    assert os.listdir(tmp_path) == []


def test_wrap_lines_continues_under_the_text() -> None:
    colour = (
        "  colour: no tone or gamut mapping (the frames' transfer and primaries, BT709 BT709, are the "
        "display's); matrix BT.709 guessed from the size "
        "(untagged); range limited, primaries BT709, transfer BT709 assumed (untagged)"
    )
    head = (
        "alpha2: played a.mp4: 1 frame (9.9 fps) offscreen (--snapshot renders to a texture); snapshot a.png"
    )
    short = "  device: wgpu on llvmpipe"
    lines = cli.wrap_lines([head, colour, short], 80)
    assert all(len(line) < 80 for line in lines), lines
    assert lines[0].startswith("alpha2: played") and lines[1].startswith("  ") and lines[1][2] != " "
    at = next(i for i, line in enumerate(lines) if line.startswith("  colour: "))
    assert lines[at + 1].startswith(" " * 10) and lines[at + 1][10] != " "
    assert lines[-1] == short
    assert " ".join(" ".join(lines).split()) == " ".join(" ".join([head, colour, short]).split())
    assert cli.wrap_lines([head, colour], None) == [head, colour]
    # A word longer than the line stays whole, on a line of its own.
    path = "/" + "x" * 100 + ".png"
    assert f"  {path}" in cli.wrap_lines([f"alpha2: played a.mp4; snapshot {path}"], 80)


# ---------------------------------------------------------------------------------------------------
# 3. option values checked before anything is opened, the default preset said


def test_bad_preset_is_refused_up_front_with_a_suggestion(
    cut_clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o.mp4"
    code, _, err = _run(["transcode", cut_clip, str(out), "--preset", "superfastt"], capsys)
    assert code == 1
    assert err.strip().splitlines() == [
        "alpha2: error: unknown libx264 preset 'superfastt'; did you mean superfast?"
    ], err
    assert not out.exists()
    code, _, err = _run(["transcode", cut_clip, str(out), "--codec", "hevc", "--preset", "zzz"], capsys)
    assert code == 1 and _error_lines(err) == [
        f"alpha2: error: unknown libx265 preset 'zzz' ({' '.join(X26X_PRESETS)})"
    ]


def test_json_states_the_default_preset(
    cut_clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(["transcode", cut_clip, str(tmp_path / "o.mkv"), "--json", "--frames", "2"], capsys)
    assert code == 0, err
    encoder = json.loads(out)["encoder"]
    assert encoder["name"] == "libx264" and encoder["preset"] == "medium" and encoder["preset_asked"] is False


# ---------------------------------------------------------------------------------------------------
# 4. --from / --to / --duration / --frames cut audio, video and subtitles alike


@pytest.mark.parametrize(
    "text,seconds",
    [("90", 90.0), ("1:30", 90.0), ("01:02:03.5", 3723.5), ("0:00.040", 0.04), ("2.5", 2.5), ("0", 0.0)],
)
def test_time_syntax(text: str, seconds: float) -> None:
    assert parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "a", "-1", "1:75", "1:60:00", "1::2", "1:2:3:4", "inf", "1:-5"])
def test_bad_times_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_time(text)


def test_play_at_takes_the_time_syntax() -> None:
    args = cli.build_parser(["play"]).parse_args(["play", "x.mp4", "--at", "0:01.5"])
    assert args.at == pytest.approx(1.5)


def _streams(path: str) -> dict[str, Any]:
    """The output's frames' grey levels and times, its sound's times and level, its cues."""
    found: dict[str, Any] = {"luma": [], "video_pts": [], "cues": []}
    with av.open(path) as container:
        for frame in container.decode(video=0):
            found["luma"].append(float(frame.to_ndarray()[:48].mean()))
            found["video_pts"].append(float(frame.pts * frame.time_base))
        container.seek(0)
        times, levels = [], []
        for frame in container.decode(audio=0):
            data = frame.to_ndarray()
            start = float(frame.pts * frame.time_base)
            times.append(start + np.arange(data.shape[-1]) / frame.sample_rate)
            levels.append(np.abs(data.reshape(-1, data.shape[-1])).max(axis=0))
        found["audio_t"] = np.concatenate(times)
        found["audio_level"] = np.concatenate(levels)
        container.seek(0)
        if container.streams.subtitles:
            for packet in container.demux(container.streams.subtitles[0]):
                if packet.size and packet.pts is not None:
                    tb = packet.time_base
                    found["cues"].append(
                        (float(packet.pts * tb), float((packet.pts + packet.duration) * tb), bytes(packet))
                    )
        found["duration"] = container.duration / av.time_base
    return found


def _onset(found: dict[str, Any]) -> float:
    loud = found["audio_level"] > 0.1
    return float(found["audio_t"][np.argmax(loud)])


@pytest.mark.parametrize("cut", [["--from", "1.0", "--to", "1.5"], ["--from", "0:01", "--duration", "0.5"]])
def test_from_to_cut_video_audio_and_subtitles_alike(
    cut_clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: list[str]
) -> None:
    out = str(tmp_path / "part.mkv")
    code, stdout, err = _run(
        ["transcode", cut_clip, out, "--crf", "0", "--preset", "ultrafast", "--json", *cut], capsys
    )
    assert code == 0, err
    data = json.loads(stdout)
    found = _streams(out)
    # Video: frames 30 to 44 (1.0 s to 1.5 s), the first at 0, frame-exact.
    assert data["frames"] == len(found["luma"]) == 15
    assert found["luma"] == pytest.approx([_luma(i) for i in range(30, 45)], abs=1.5)
    assert found["video_pts"][0] == 0
    # Audio: cut at the same times, to the sample: the burst at 1.2 s of the input is at 0.2 s.
    assert _onset(found) == pytest.approx(BURST_S[0] - 1.0, abs=0.003)
    assert found["audio_t"][-1] == pytest.approx(0.5, abs=0.025)
    assert "cut with the video" in data["encoder"]["audio"]
    # Subtitles: A (before) left out, B and C shortened to the part.
    assert [c[2] for c in found["cues"]] == [b"B", b"C"]
    assert [c[:2] for c in found["cues"]] == [pytest.approx((0.0, 0.3)), pytest.approx((0.4, 0.5))]
    assert data["cut"] == {
        "from_seconds": 1.0,
        "asked_from_seconds": 1.0,
        "to_seconds": 1.5,
        "frames": None,
        "streams_trimmed": True,
    }
    assert data["output_seconds"] == pytest.approx(0.5, abs=0.04)


def test_from_between_frames_starts_with_the_frame_on_display(
    cut_clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "mid.mkv")
    code, _, err = _run(
        [
            "transcode",
            cut_clip,
            out,
            "--crf",
            "0",
            "--preset",
            "ultrafast",
            "--quiet",
            "--from",
            "1.01",
            "--to",
            "1.4",
        ],
        capsys,
    )
    assert code == 0, err
    found = _streams(out)
    assert found["luma"][0] == pytest.approx(_luma(30), abs=1.5)  # on display at 1.01 s
    # It starts the output at its own time (1.0 s): every frame keeps its length (no short first
    # frame), and the sound is cut there too, in step.
    assert found["video_pts"][0] == 0 and found["video_pts"][1] == pytest.approx(1 / RATE, abs=0.002)
    assert _onset(found) == pytest.approx(BURST_S[0] - 30 / RATE, abs=0.003)


def test_frames_cuts_the_audio_too(cut_clip: str, tmp_path: Path) -> None:
    out = str(tmp_path / "ten.mkv")
    stats = transcode(cut_clip, out, TranscodeOptions(frames=10, preset="ultrafast"))
    found = _streams(out)
    assert stats.frames == len(found["luma"]) == 10
    assert found["audio_t"][-1] == pytest.approx(10 / RATE, abs=0.025)  # not the input's 2 s
    assert stats.cut is not None and stats.cut["to_seconds"] == pytest.approx(10 / RATE, abs=0.001)
    # The first cue, shown from 0 to 0.5 s, ends with the video (held until where that is was known).
    assert [c[2] for c in found["cues"]] == [b"A"]
    assert found["cues"][0][:2] == pytest.approx((0.0, 10 / RATE), abs=0.001)
    assert found["duration"] <= 10 / RATE + 0.025  # AAC's priming (21 ms) before 0 counts in it


def test_cut_options_are_checked(cut_clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["transcode", cut_clip, str(tmp_path / "o.mkv"), "--from", "3"], capsys)
    [line] = _error_lines(err)
    assert code == 1 and line.startswith(f"alpha2: error: --from 3 s is past the end of {cut_clip!r} (2.0")
    code, _, err = _run(
        ["transcode", cut_clip, str(tmp_path / "o.mkv"), "--from", "1", "--to", "0:00.5"], capsys
    )
    assert code == 1 and "--to 0.5 s is not after --from 1 s" in err
    code, _, err = _run(["transcode", cut_clip, "o.mkv", "--to", "1", "--duration", "1"], capsys)
    assert code == 2 and "not allowed with argument" in err
    with pytest.raises(InvalidInputError):
        TranscodeOptions(from_seconds=float("nan"))
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------------------------
# 5. the summary: what was done to video and audio, the output, in 80 columns


def test_summary_says_re_encoded_and_fits_80_columns(cut_clip: str, tmp_path: Path) -> None:
    out = tmp_path / "a-rather-long-output-name-for-the-summary.mkv"
    stats = transcode(cut_clip, str(out), TranscodeOptions(crf=20, preset="veryfast", from_seconds=0.5))
    lines = summary_lines(stats, 80)
    text = "\n".join(lines)
    # Within 80 columns, but for the line of the output's path, one word longer than that.
    assert all(len(line) <= 80 for line in lines if str(out) not in line), text
    assert "re-encoded (libx264, crf 20, preset veryfast)" in " ".join(text.split())
    assert "passthrough" not in text
    output = next(line for line in lines if line.startswith("  output"))
    size = f"{out.stat().st_size / 1e3:.1f} kB"
    assert str(out) in output and size in text and "b/s" in text and " 1.5" in text
    assert any(line.startswith("  audio   re-encoded (aac): cut with the video") for line in lines), text
    assert any(line.startswith("  part    from 0.500 s to the end of the input") for line in lines), text
    # Words are never broken: every word of the unwrapped text is in the wrapped one.
    assert " ".join(text.split()) == " ".join("\n".join(summary_lines(stats, None)).split())


def test_summary_of_a_copy_says_copied(tmp_path: Path) -> None:
    sys.path.insert(0, os.path.dirname(__file__))
    from media import make_clip

    clip = make_clip(tmp_path / "c.mp4", frames=6, audio=True)
    stats = transcode(clip.path, str(tmp_path / "o.mp4"), TranscodeOptions(preset="ultrafast"))
    lines = summary_lines(stats, 80)
    assert "  audio   copied (aac, 2 ch, 48000 Hz)" in lines
    assert stats.as_dict()["video"] == "re-encoded (libx264, crf 23, preset ultrafast)"


# ---------------------------------------------------------------------------------------------------
# 6. tables that fit the terminal, JSON that stands on its own


def test_fit_columns_keeps_whole_words_and_says_what_it_left_out() -> None:
    headers = ("#", "name", "driver", "interop")
    rows = [("0", "llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe 0.0.1", "mem fd, sem fd+fd-timeline")]
    kept, left = fit_columns(headers, rows, 200, (0, 1, 2, 3))
    assert kept == [0, 1, 2, 3] and left == []
    # Least widths: 1, 8 ("llvmpipe"), 8, 14 ("fd+fd-timeline"); each column 3 more, and 1 for the edge.
    kept, left = fit_columns(headers, rows, 30, (0, 1, 3, 2))
    assert kept == [0, 1, 2] and left == [3]  # interop (18) does not fit after # and name; driver does
    kept, left = fit_columns(headers, rows, 5, (1, 0, 2, 3))
    assert kept == [1] and left == [0, 2, 3]  # the first wanted column stays, whatever the width


_H200 = (
    "0",
    "NVIDIA H200",
    "discrete GPU",
    "NVIDIA 580.159.4.0",
    "1.4.312",
    "h264 (8-bit 4096x4096), h265 (8/10-bit 8192x8192)",
    "-",
    "139.8 GiB",
    "mem fd, sem fd+fd-timeline, timeline",
    "1",
    "chosen",
)


_H100 = (
    "0",
    "NVIDIA H100 80GB HBM3",
    "discrete GPU",
    "NVIDIA 580.159.4.0",
    "1.4.312",
    "h264 (8-bit 4096x4096), h265 (8/10-bit 8192x8192), vp9 (8/10-bit 8192x8192), av1 (8/10-bit 8192x8192)",
    "-",
    "78.4 GiB",
    "mem fd, sem fd+fd-timeline, timeline",
    "1",
    "pinned chosen",
)


def _probe_table(row: tuple[str, ...], columns: int) -> tuple[str, list[int]]:
    from rich.console import Console

    from alpha2.apps.probe import adapter_table

    table, left = adapter_table([row], columns)
    console = Console(width=columns, file=io.StringIO())
    with console.capture() as captured:
        console.print(table)
    return captured.get(), left


@pytest.mark.parametrize("row", [_H200, _H100], ids=["h200", "h100"])
@pytest.mark.parametrize("columns", [200, 100, 80, 60])
def test_probe_table_of_an_nvidia_gpu_fits(row: tuple[str, ...], columns: int) -> None:
    """The H200's and H100's rows (as ``alpha2 probe`` printed them there) at each width: no line wider,
    no word broken; rich left to squeeze by itself made it one column too wide at 80."""
    from alpha2.apps.probe import _HEADERS

    text, left = _probe_table(row, columns)
    assert max(len(line) for line in text.splitlines()) <= columns, text
    cells = text.replace("│", " ").replace("┃", " ").split()
    for i in range(len(_HEADERS)):
        if i not in left:
            for word in row[i].split() + _HEADERS[i].split():
                assert word in cells, (word, text)
    if row is _H200:
        assert (left == []) == (columns >= 200)


@pytest.mark.parametrize("columns", [200, 140])
def test_the_marks_stay_on_one_line_beside_a_long_codec_list(columns: int) -> None:
    """Found by the H100 run of 2026-12-05: at 200 columns the marks column got the width of its longest
    word and ``pinned chosen`` broke over two lines (the codec list took the room); the short columns
    now take their whole text first."""
    text, left = _probe_table(_H100, columns)
    assert 10 not in left
    row = next(line for line in text.splitlines() if line.startswith("│ 0 "))
    assert row.rstrip(" │").endswith("pinned chosen"), text


def _report(tmp_path: Path) -> BatchReport:
    def item(name: str) -> BatchItem:
        return BatchItem(name, str(tmp_path / "in" / name), str(tmp_path / "out" / name))

    done = FileResult(
        item("a-long-folder-name/with-a-long-file-name.mp4"),
        FileStatus.DONE,
        attempts=1,
        frames=1200,
        seconds=4.0,
        output_bytes=12_345_678,
        paths={"cpu_upload": 1200, "cpu_download": 1200},
        mode="gpu",
        worker="gpu0",
    )
    failed = FileResult(
        item("broken.mp4"),
        FileStatus.FAILED,
        attempts=1,
        error="cannot open '/some/where/broken.mp4': Invalid data found when processing input",
        error_kind="invalid_input",
    )
    skipped = FileResult(
        item("old.mp4"), FileStatus.SKIPPED, reason="done by an earlier run (same input and settings)"
    )
    return BatchReport(str(tmp_path / "out"), [done, failed, skipped], 4.5, {"runner": "local"})


@pytest.mark.parametrize("columns", [80, 60])
def test_batch_table_fits_the_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    stream = io.StringIO()
    print_summary(_report(tmp_path), stream)
    text = stream.getvalue()
    too_wide = [line for line in text.splitlines() if len(line) > columns]
    assert not too_wide, text
    assert "broken.mp4: cannot open" in text  # the reason, under the table
    for header in ("file", "status", "frames"):
        assert header in text
    assert "1 done, 1 skipped, 1 failed" in text
    assert "12.3 MB" in text or columns < 80


def test_batch_json_stands_on_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "broken.mp4").write_bytes(b"not a video")
    code, out, err = _run(
        ["batch", str(folder), "--out", str(tmp_path / "out"), "--json", "--workers", "1"], capsys
    )
    assert code == 1
    data = json.loads(out)
    assert data["error"] == "1 of 1 files failed" and data["files"][0]["error"]
    assert "table" not in out + err
    assert _error_lines(err) == ['alpha2: error: 1 of 1 files failed (each one\'s "error" in the JSON)']


@pytest.mark.vulkan
def test_probe_table_fits_80_columns() -> None:
    env = {**os.environ, "COLUMNS": "80", "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    env.pop("ALPHA2_GPU_ADAPTER", None)
    done = subprocess.run(
        [sys.executable, "-m", "alpha2", "probe"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), done.stdout
    header = next(line for line in lines if "name" in line)
    assert "# ┃ name" in header  # whole words, not "na" / "me"
    assert "chosen:" in done.stdout


# ---------------------------------------------------------------------------------------------------
# 7. a wall's inputs are a list


def test_wall_json_input_is_a_list() -> None:
    stats = WallStats(input="a.mp4, b, c.mp4", inputs=["a.mp4", "b, c.mp4"])
    assert stats.as_dict()["input"] == ["a.mp4", "b, c.mp4"]


def test_the_players_progress_says_no_time_left() -> None:
    """A transcode's progress says the time left (frames left at its rate); a player's, paced by its
    clock, dropping frames and seeking, says none (it had said 7 s left on a 5 s clip)."""
    import io

    from alpha2.api.pipeline import PlainProgress

    lines = {}
    for left in (True, False):
        out = io.StringIO()
        progress = PlainProgress("x", out, every_frames=1, time_left=left)
        progress.start(100)
        progress.update(10)
        lines[left] = out.getvalue()
    assert "s left" in lines[True] and "s left" not in lines[False]


def test_lines_are_wrapped_by_the_columns_a_terminal_gives_them() -> None:
    """Found by an outside pass at 80 columns: a note naming 'with space ünïcødé 日本.mkv' was filled by
    character count, so the terminal broke it again (a CJK character takes two columns) and a word
    landed unindented; and '311.6 kB' was split across two rows."""
    from alpha2.apps.cli import display_width, wrap_lines, wrap_text

    assert display_width("日本") == 4 and display_width("ünïcødé") == 7
    assert display_width("e\u0301") == 1  # a combining accent takes no column
    line = "  with space ünïcødé 日本.mkv: colour tags the input lacks written as alpha2 took them: matrix"
    wrapped = wrap_lines([line], 80)
    assert all(display_width(w) <= 79 for w in wrapped), wrapped
    assert len(wrapped) == 2 and wrapped[1].startswith(" " * 4), wrapped
    sized = wrap_text("out.mkv: 311.6 kB written at 1.2 Mb/s in 3 s", 14)
    assert "311.6 kB" in " | ".join(sized) and "1.2 Mb/s" in " | ".join(sized), sized


def test_progress_says_when_every_frame_is_in_and_the_encoder_is_finishing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by an outside pass: with --preset veryslow the bar stood at 90/90, 0 s left, for 5-15 s
    while the encoder finished its look-ahead, and nothing said why."""
    import io

    from alpha2.api import pipeline

    out = io.StringIO()
    plain = pipeline.PlainProgress("transcode", out)
    plain.start(90)
    plain.update(90)
    plain.finishing("the encoder's last frames")
    assert "transcode: 90 frames in, finishing the encoder's last frames" in out.getvalue()
    recorded: list[str] = []

    class Recording(pipeline.Progress):
        def finishing(self, what: str) -> None:
            recorded.append(what)

    from media import make_clip

    from alpha2.api.transcoder import TranscodeOptions, transcode

    clip = make_clip(tmp_path / "c.mp4", width=64, height=48, frames=4)
    transcode(clip.path, str(tmp_path / "o.mp4"), TranscodeOptions(), progress=Recording())
    assert recorded == ["the encoder's last frames"]


def test_an_interrupted_bar_is_taken_off_the_screen() -> None:
    """Interrupted, the bar is a transient display: with Ctrl-C's echo moving the cursor under rich's
    feet it was left on the screen twice (an outside pass, in tmux at 80 columns)."""
    import io

    from alpha2.api.pipeline import RichProgress

    done, cut = RichProgress("transcode", io.StringIO()), RichProgress("transcode", io.StringIO())
    for progress in (done, cut):
        progress.start(10)
        progress.update(4)
    done.close(True)
    cut.close(False)
    assert not done._progress.live.transient and cut._progress.live.transient


def test_hwaccel_cuda_without_nvdec_names_the_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--hwaccel cuda`` where NVDEC cannot be had told a command-line user to 'use hwaccel='auto' or
    'none'', Python's spelling; now the option's too."""
    from alpha2.ffmpeg_bridge import hwdevice

    sys.path.insert(0, os.path.dirname(__file__))
    from media import make_clip

    monkeypatch.setattr(hwdevice, "no_cuda_device_type_reason", lambda: "no CUDA here")
    src = make_clip(tmp_path / "in.mp4", frames=3).path
    assert main(["transcode", src, str(tmp_path / "out.mp4"), "--hwaccel", "cuda"]) == 1
    err = capsys.readouterr().err
    assert "--hwaccel cuda" in err and "--hwaccel auto or none" in err, err


def test_hwaccel_cuda_off_the_renderers_gpu_names_cuda_ordinal_as_pythons(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the renderer's GPU has no CUDA twin, the refusal ended 'or pass cuda_ordinal explicitly',
    which read as an option the command line does not have (an outside pass)."""
    from alpha2.ffmpeg_bridge import hwdevice
    from alpha2.gpu.identity import DecoderPlacement

    monkeypatch.setattr(hwdevice, "no_cuda_device_type_reason", lambda: None)
    placement = DecoderPlacement(None, 0, "the device 'llvmpipe' is a CPU Vulkan device")
    with pytest.raises(hwdevice.HwAccelUnavailableError) as caught:
        hwdevice.plan_hw_device(hwdevice.HwAccelMode.CUDA, placement=placement)
    said = str(caught.value)
    assert "--hwaccel auto or none" in said and "from Python, cuda_ordinal=" in said, said
    assert "or pass cuda_ordinal" not in said


def test_plain_progress_says_one_frame() -> None:
    """Piped to a file, a 1-frame input's lines said 'transcode: 1 frames in, ...', '1/1 frames'."""
    import io

    from alpha2.api.pipeline import PlainProgress

    out = io.StringIO()
    progress = PlainProgress("transcode", out)
    progress.start(1)
    progress.update(1)
    progress.finishing("the encoder's last frames")
    progress.close(True)
    text = out.getvalue()
    assert "1 frames" not in text and "1/1 frames" not in text, text
    assert "transcode: 1 frame in, finishing" in text and "transcode: 1/1 frame," in text, text
