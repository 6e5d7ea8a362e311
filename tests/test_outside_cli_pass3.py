"""Faults a third outside pass over ``alpha2 transcode`` and ``alpha2 probe FILE`` at an 80-column
terminal found, each against what a person typing them instead of ffmpeg / ffprobe meets."""

from __future__ import annotations

from pathlib import Path

import av
import pytest
from media import make_clip

from alpha2.api.transcode_plan import TranscodeOptions, plan_transcode
from alpha2.api.transcode_report import TranscodeStats
from alpha2.apps.cli import display_width, main, wrap_text
from alpha2.gpu.colour import (
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourPrimaries,
    ColourRange,
    TransferCharacteristic,
)
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Size

Capsys = pytest.CaptureFixture[str]


@pytest.mark.parametrize("text", ["inf", "1e400", "-inf"])
def test_bitrate_past_any_number_is_a_usage_error_not_a_traceback(
    tmp_path: Path, capsys: Capsys, text: str
) -> None:
    """``--bitrate inf`` (or 1e400) ended in a traceback: int(float('inf')) raises OverflowError, which
    argparse does not catch as it catches ValueError."""
    with pytest.raises(SystemExit) as exit_info:
        main(["transcode", str(tmp_path / "in.mp4"), str(tmp_path / "out.mp4"), f"--bitrate={text}"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "alpha2: error: argument --bitrate:" in err, err


@pytest.mark.parametrize("bitrate", [1, 999, 100_000_000_001, 10**29])
def test_bitrate_outside_what_encoders_take_is_refused_by_the_options(bitrate: int) -> None:
    """``--bitrate 999`` failed to open libx264 with 'Generic error in an external library' (it counts
    kilobits: 0), and 99999999999999999999G said 'internal error (OverflowError)'."""
    with pytest.raises(InvalidInputError, match=r"bitrate must be from 1000 \(1k\) to 100000000000"):
        TranscodeOptions(bitrate=bitrate)
    assert TranscodeOptions(bitrate=1000).bitrate == 1000


def test_transcode_bitrate_999_says_the_range_in_one_line(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "in.mp4", frames=2)
    code = main(["transcode", clip.path, str(tmp_path / "out.mp4"), "--bitrate", "999", "--quiet"])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("alpha2: error: --bitrate must be from 1000 (1k)"), err
    assert not (tmp_path / "out.mp4").exists()


@pytest.mark.parametrize(
    ("bitrate", "shown"), [(800_000, "800 kb/s"), (1000, "1 kb/s"), (4_000_000, "4 Mb/s")]
)
def test_summary_says_a_bitrate_under_a_megabit_in_kilobits(bitrate: int, shown: str) -> None:
    """The video line said '(libx264, 0.001 Mb/s, ...)' for --bitrate 1k and '0.8 Mb/s' for 800k, the
    value asked for on the command line."""
    stats = TranscodeStats(
        input="in.mp4", output="out.mp4", encoder={"name": "libx264", "bitrate": bitrate, "preset": "medium"}
    )
    assert stats.video_action() == f"re-encoded (libx264, {shown}, preset medium)"


@pytest.mark.parametrize("text", ["inf", "1e400", "nan"])
def test_a_time_that_is_no_number_says_the_time_format(tmp_path: Path, capsys: Capsys, text: str) -> None:
    """``--to inf`` said 'a time must be 0 or more, got 'inf'': as if it were below zero."""
    with pytest.raises(SystemExit):
        main(["transcode", str(tmp_path / "in.mp4"), str(tmp_path / "out.mp4"), "--to", text])
    err = capsys.readouterr().err
    assert "a time is [[hh:]mm:]ss[.ms]" in err and "0 or more" not in err, err


def test_probe_breaks_a_cjk_title_wider_than_the_line_between_its_characters(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Japanese title (no spaces: one 'word' of 78 columns) stayed whole on its line, 93 columns wide at
    an 80-column terminal, which broke it where it liked, under the label column. CJK text may break
    between any two of its characters; a path or a Latin word still stays whole."""
    monkeypatch.setenv("COLUMNS", "80")
    clip = make_clip(tmp_path / "base.mkv", frames=2)
    path = str(tmp_path / "cjk.mkv")
    title = "日本語のタイトル、とても長いタイトルです。これは八十桁の端末で折り返されるべきです"
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        out.metadata["title"] = title
        video = out.add_stream_from_template(inp.streams.video[0])
        for packet in inp.demux():
            if packet.dts is not None:
                packet.stream = video
                out.mux(packet)
    assert main(["probe", path, "--no-decode"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(display_width(line) <= 80 for line in lines), [display_width(line) for line in lines]
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("title"))
    label = lines[at].index("日")
    assert lines[at + 1][:label].strip() == "" and lines[at + 1][label] != " ", lines[at : at + 2]
    assert (lines[at][label:] + lines[at + 1][label:]).strip() == title
    assert wrap_text("/a/very/long/path/that/stays/whole", 10) == ["/a/very/long/path/that/stays/whole"]


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["-ss", "1"], "unknown option -ss; ffmpeg's -ss is --from here"),
        (["-t", "2"], "unknown option -t; ffmpeg's -t is --duration here (--to is an end time)"),
        (["-hwaccel", "cuda"], "unknown option -hwaccel; ffmpeg's -hwaccel is --hwaccel here"),
        (["-c:v", "libx264"], "unknown option -c:v; ffmpeg's -c:v is --codec here"),
        (["-an"], "unknown option -an; ffmpeg's -an is --no-audio here"),
        (["-b:v", "1M"], "unknown option -b:v; ffmpeg's -b:v is --bitrate here"),
        (["-nostdin"], "unknown option -nostdin; a file goes as ./-nostdin or after --"),
    ],
)
def test_ffmpeg_options_are_answered_with_the_transcode_option_that_does_their_work(
    tmp_path: Path, capsys: Capsys, words: list[str], said: str
) -> None:
    """A person used to ffmpeg typing its options met 'unknown option -ss; a file goes as ./-ss or after
    --', '-t' answered 'did you mean --to?' (an end time: -ss 1 -t 2 would have cut 1 s, not 2), and
    '-hwaccel cuda' 'argument -h/--help: ignored explicit argument 'waccel''."""
    with pytest.raises(SystemExit) as exit_info:
        main(["transcode", str(tmp_path / "in.mp4"), str(tmp_path / "out.mp4"), *words])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"alpha2: error: {said}" in err, err


def test_ffmpeg_i_is_said_as_not_needed(tmp_path: Path, capsys: Capsys) -> None:
    with pytest.raises(SystemExit):
        main(["transcode", "-i", str(tmp_path / "in.mp4"), str(tmp_path / "out.mp4")])
    assert "unknown option -i; the files go as they are, without ffmpeg's -i" in capsys.readouterr().err


def test_sdr_of_an_hdr_input_does_not_say_the_input_is_not_hdr() -> None:
    """``alpha2 transcode pq.mkv out.mkv --codec hevc --sdr`` said 'depth reduced from 10 to 8 bits: the
    input is not HDR' of a PQ input it had just tone mapped: the depth rule was handed the SDR colour
    --sdr asks for."""
    pq = ColourInfo(
        ColourMatrix.BT2020_NCL,
        ColourPrimaries.BT2020,
        TransferCharacteristic.SMPTE2084,
        ColourRange.LIMITED,
        ChromaLocation.LEFT,
    )
    plan = plan_transcode(
        Size(1920, 1080), PixelFormat.YUV420P10, pq, TranscodeOptions(sdr=True), codec="hevc"
    )
    assert plan.tone_map and plan.depth_note is not None
    assert "not HDR" not in plan.depth_note and "the output is SDR" in plan.depth_note, plan.depth_note


def test_dash_for_standard_input_or_output_is_said_as_such(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ffmpeg's '-' (``cat a.mp4 | alpha2 transcode - out.mp4``) said 'opening '-': No such file or
    directory', and as OUTPUT 'cannot tell the container of '-' from no extension'; a file named '-'
    is still a file."""
    monkeypatch.chdir(tmp_path)
    clip = make_clip(tmp_path / "in.mp4", frames=2)
    assert main(["transcode", "-", "out.mp4"]) == 1
    assert "alpha2: error: reading standard input ('-') is not supported" in capsys.readouterr().err
    assert main(["transcode", clip.path, "-"]) == 1
    assert "alpha2: error: writing to standard output ('-') is not supported" in capsys.readouterr().err
    assert main(["probe", "-", clip.path, "--no-decode"]) == 1
    captured = capsys.readouterr()
    assert "reading standard input ('-') is not supported" in captured.err and "in.mp4" in captured.out
    Path("-").write_bytes(Path(clip.path).read_bytes())
    assert main(["probe", "-", "--no-decode"]) == 0
    assert main(["transcode", "-", "out.mp4", "--quiet"]) == 0 and Path("out.mp4").exists()


def test_transcode_help_says_the_av1_encoders_preset_and_where_auto_colour_applies(
    capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--preset named cpu-used for libvpx-vp9 and libaom-av1 only, while --codec av1 runs libsvtav1 here
    (a preset of -2 to 13); --colour said BT.709 came 'for HD outputs processed on the GPU', and an HD
    output scaled by swscale on the CPU got it as well (the plan does not know the route)."""
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main(["transcode", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "libsvtav1 -2 to 13" in text and "processed on the GPU" not in text, text
    sd = ColourInfo(
        ColourMatrix.SMPTE170M,
        ColourPrimaries.BT709,
        TransferCharacteristic.BT709,
        ColourRange.LIMITED,
        ChromaLocation.LEFT,
    )
    scaled = plan_transcode(
        Size(640, 360), PixelFormat.YUV420P, sd, TranscodeOptions(size=Size(1280, 720)), codec="h264"
    )
    assert scaled.output_colour.matrix is ColourMatrix.BT709


# -- a variable frame rate into a container of one frame's clock ----------------------------------


def _fifteen_then_sixty(path: Path) -> str:
    """2 s at 15 fps, then 2 s at 60 fps (its stream says 15 fps), beside 4 s of sound."""
    import fractions

    import numpy as np

    tick = fractions.Fraction(1, 60)
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=15)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        video.codec_context.time_base = tick
        audio = out.add_stream("aac", rate=48000, layout="mono")
        for index, pts in enumerate([*range(0, 120, 4), *range(120, 240)]):
            rgb = np.full((48, 64, 3), index % 256, np.uint8)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
            frame.pts, frame.time_base = pts, tick
            out.mux(video.encode(frame))
        out.mux(video.encode(None))
        for start in range(0, 4 * 48000, 1024):
            sound = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            sound.sample_rate, sound.pts = 48000, start
            out.mux(audio.encode(sound))
        out.mux(audio.encode(None))
    return str(path)


def test_a_variable_rate_into_avi_keeps_the_pictures_with_the_sound(tmp_path: Path, capsys: Capsys) -> None:
    """Found by an outside pass: on AVI's clock of one frame (15 fps here) each frame of the 60 fps part
    was written a tick after the one before, so the pictures ran on to 6.07 s beside 4 s of sound, and
    nothing was said. The frames that fall on a tick already written are left out (as ffmpeg drops
    them) and the summary says how many and why."""
    src = _fifteen_then_sixty(tmp_path / "vfr.mkv")
    out = tmp_path / "out.avi"
    assert main(["transcode", src, str(out)]) == 0
    printed = capsys.readouterr()
    with av.open(str(out)) as container:
        frames = list(container.decode(video=0))
    assert 58 <= len(frames) <= 62
    assert frames[-1].time is not None and abs(frames[-1].time - 4.0) < 0.15, frames[-1].time
    said = " ".join((printed.out + printed.err).split())
    left_out = 150 - len(frames)
    assert f"{left_out} of 150 frames left out: the output's clock is one frame (15 fps in AVI)" in said


def test_a_word_a_flag_would_swallow_is_caught_before_argparse_reads_it() -> None:
    """On the H100's Python 3.12, '-hwaccel cuda' printed the help and exited 0 (argparse read -h with
    'waccel' joined) and '-nostdin' was said as 'unknown option -ostdin'; 3.11 said 'ignored explicit
    argument', which the error handler above rewrote. The words are now caught before argparse, on every
    Python: a one-letter flag with letters joined that are not all flags."""
    from alpha2.apps.cli import _subparser, _swallowed_by_a_flag, build_parser

    parser = build_parser(["transcode"])
    transcode = _subparser(parser, "transcode")
    assert transcode is not None
    for words, caught in (
        (["a.mp4", "b.mp4", "-hwaccel", "cuda"], "-hwaccel"),
        (["-nostdin", "a.mp4", "b.mp4"], "-nostdin"),
        (["a.mp4", "b.mp4", "-y"], None),
        (["a.mp4", "b.mp4", "--size", "-1x720"], None),
        (["--", "-hwaccel.mp4", "b.mp4"], None),
    ):
        assert _swallowed_by_a_flag(transcode, words) == caught, words
    assert _swallowed_by_a_flag(parser, ["transcode", "-hwaccel"]) is None  # the subcommand's to read
