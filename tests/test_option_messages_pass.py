"""Faults a pass over the error messages of ``alpha2 transcode`` and ``alpha2 batch`` options found, each
as a person at an 80-column terminal reads them: what was wrong and what would do, in one line, the
option named as typed (and, from Python, the field as written)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from media import make_clip

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.api.transcoder import transcode
from alpha2.apps.cli import main
from alpha2.apps.transcode_cli import OPTION_NAMES
from alpha2.gpu.errors import Error, InvalidInputError

Capsys = pytest.CaptureFixture[str]


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_clip(tmp_path_factory.mktemp("clip") / "in.mp4", frames=4).path


def _error(argv: list[str], capsys: Capsys) -> str:
    """The one error line of a refused command (usage error or runtime refusal)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code not in (0, None)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("alpha2: error:")]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    ("cli", "fields", "said", "python_said"),
    [
        (
            ["--from", "2", "--to", "1"],
            {"from_seconds": 2, "to_seconds": 1},
            "--to 1 s is not after --from 2 s: nothing to write",
            "to_seconds 1 s is not after from_seconds 2 s: nothing to write",
        ),
        (["--duration", "0"], {"duration_seconds": 0}, "--duration must be more than 0 s", None),
        (["--crf", "-1"], {"crf": -1}, "--crf must be 0 or more, got -1.0", "crf must be 0 or more, got -1"),
        (["--bitrate", "999"], {"bitrate": 999}, "--bitrate must be from 1000 (1k)", "bitrate must be from"),
        (
            ["--segments", "2", "--frames", "3"],
            {"segments": 2, "frames": 3},
            "--segments cannot go with --frames",
            "segments cannot go with frames",
        ),
        (
            ["--sdr", "--colour", "keep"],
            {"sdr": True, "colour": "keep"},
            "--sdr tone maps to BT.709: it cannot go with --colour keep",
            "sdr tone maps to BT.709: it cannot go with colour keep",
        ),
    ],
)
def test_a_refused_option_is_named_as_typed_and_a_field_as_written(
    tmp_path: Path,
    capsys: Capsys,
    clip: str,
    cli: list[str],
    fields: dict[str, object],
    said: str,
    python_said: str | None,
) -> None:
    """``--from 2 --to 1`` said 'to_seconds (--to) 1 s is not after from_seconds (--from) 2 s', the
    Python field names to a command-line user; ``--crf -1`` said 'crf must be a number from 0 or more'
    (the field name, and 'from 0 or more'); and from Python ``sdr=True, colour='keep'`` said '--sdr
    ... --colour keep'. One check in TranscodeOptions; each caller sees its own spelling."""
    line = _error(["transcode", clip, str(tmp_path / "out.mp4"), "--quiet", *cli], capsys)
    assert line.startswith(f"alpha2: error: {said}"), line
    assert "_seconds" not in line and "(--" not in line, line
    assert not (tmp_path / "out.mp4").exists()
    with pytest.raises(InvalidInputError) as refused:
        TranscodeOptions(**fields)  # type: ignore[arg-type]
    python_line = str(refused.value)
    assert python_line.startswith(python_said or said.replace("--duration", "duration_seconds")), python_line
    assert "--" not in python_line, python_line


def test_batch_names_its_options_as_typed(tmp_path: Path, capsys: Capsys, clip: str) -> None:
    line = _error(["batch", clip, "--out", str(tmp_path / "out"), "--from", "3", "--to", "1"], capsys)
    assert line == "alpha2: error: --to 1 s is not after --from 3 s: nothing to write", line


@pytest.mark.parametrize(("size", "shown"), [("99999x99999", "99999x99999"), ("100000x-1", "100000 wide")])
def test_a_size_out_of_the_encoders_range_blames_size(
    tmp_path: Path, capsys: Capsys, clip: str, size: str, shown: str
) -> None:
    """``--size 99999x99999`` said '... made 99998x74998: 99998x74998 cannot be encoded with libx264
    (h264) ...; --size scales them into range', the way out the option that caused it, and said the box
    as '99999 high' (a side of 65536 or more was taken for a free one)."""
    line = _error(["transcode", clip, str(tmp_path / "out.mp4"), "--size", size, "--quiet"], capsys)
    assert line.startswith(f"alpha2: error: --size {shown} makes the 64x48 pictures "), line
    assert ": libx264 encodes 2x2 to 16384x16384; give a --size in range" in line, line
    assert "scales them into range" not in line, line
    assert not (tmp_path / "out.mp4").exists()


@pytest.mark.parametrize(
    ("codec", "said"),
    [
        ("h246", "unknown codec or encoder 'h246'; nearest: "),
        ("libx26", "unknown codec or encoder 'libx26'; nearest: libx265, libx264"),
        ("nope", "unknown codec or encoder 'nope'; give h264, hevc, av1, vp9 or an FFmpeg encoder name"),
    ],
)
def test_an_unknown_codec_says_the_nearest_names_in_few_words(
    tmp_path: Path, capsys: Capsys, clip: str, codec: str, said: str
) -> None:
    """``--codec h246`` said every codec family and 'or an FFmpeg encoder name' (130 columns) and not
    that h264 was meant; now the nearest names this FFmpeg encodes, and where the names are said."""
    line = _error(["transcode", clip, str(tmp_path / "out.mp4"), "--codec", codec, "--quiet"], capsys)
    assert line.startswith(f"alpha2: error: {said}"), line
    assert line.endswith("(alpha2 transcode --help)") and len(line) <= 130, line
    if codec == "h246":
        assert "h264" in line and "mpeg1" not in line, line


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10.0), ("500ms", 0.5), ("1.5s", 1.5), ("250000us", 0.25), ("0ms", 0.0), ("1:30", 90.0)],
)
def test_a_time_takes_ffmpegs_units(text: str, seconds: float) -> None:
    """``--from 10s`` and ``--duration 500ms`` were refused ('a time is [[hh:]mm:]ss[.ms]'), which
    ffmpeg takes (its time duration syntax: S+[.m...][s|ms|us])."""
    from alpha2.apps.cli import build_parser, parse_time

    assert parse_time(text) == pytest.approx(seconds)
    args = build_parser(["play"]).parse_args(["play", "x.mp4", "--at", text])
    assert args.at == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["ms", "s", "1:30s", "10 sec", "5m", "infs", "abc"])
def test_a_time_that_is_none_says_the_units(tmp_path: Path, capsys: Capsys, clip: str, text: str) -> None:
    line = _error(["transcode", clip, str(tmp_path / "out.mp4"), "--from", text], capsys)
    assert line == (
        "alpha2: error: argument --from: a time is [[hh:]mm:]ss[.ms] or a number with s, ms or us "
        f"(90, 1:30, 500ms); got {text!r}"
    ), line


def test_transcode_batch_and_sample_cut_by_ffmpegs_units(tmp_path: Path, capsys: Capsys) -> None:
    import json

    import av

    clip = make_clip(tmp_path / "in.mp4", frames=30).path  # 1 s at 30 fps
    out = str(tmp_path / "out.mp4")
    assert main(["transcode", clip, out, "--from", "500ms", "--duration", "0.2s", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["frames"] == 6 and data["cut"]["asked_from_seconds"] == pytest.approx(0.5), data
    assert main(["batch", clip, "--out", str(tmp_path / "b"), "--to", "100ms", "--quiet"]) == 0
    with av.open(str(tmp_path / "b" / "in.mp4")) as container:
        assert sum(1 for _ in container.decode(video=0)) == 3
    sample = str(tmp_path / "s.mp4")
    assert main(["sample", sample, "--duration", "100ms", "--size", "64x48", "--no-audio", "--quiet"]) == 0
    with av.open(sample) as container:
        assert sum(1 for _ in container.decode(video=0)) == 3
    for command in (["transcode", "--help"], ["play", "--help"], ["sample", "--help"]):
        with pytest.raises(SystemExit):
            main(command)
        assert "ms or us" in capsys.readouterr().out, command


@pytest.mark.parametrize("text", ["abc", "20k", ""])
def test_crf_that_is_no_number_says_what_would_do(tmp_path: Path, capsys: Capsys, text: str) -> None:
    """``--crf abc`` said argparse's 'invalid float value: 'abc'': what was wrong, not what would do."""
    line = _error(["transcode", str(tmp_path / "in.mp4"), str(tmp_path / "o.mp4"), f"--crf={text}"], capsys)
    assert line == (
        f"alpha2: error: argument --crf: give a number, 0 or more (lower: better pictures, a bigger file), "
        f"got {text!r}"
    ), line


# -- errors met while the run goes: the field from Python, the option on the command line ---------------


def _refused(call: Callable[[], object]) -> str:
    with pytest.raises(Error) as refused:
        call()
    return str(refused.value)


def test_a_runs_refusals_name_the_field_from_python_and_the_option_on_the_command_line(
    tmp_path: Path, capsys: Capsys, clip: str
) -> None:
    """Errors raised while a transcode ran (not by TranscodeOptions) named the command line's options to
    a Python caller: 'give a --size in range', '--depth 10: ...', '(--max-pixels, or max_pixels= in
    Python)' (237 columns), '--audio-track fre matches none ...'. Each now says the field from Python and
    the option, as typed, from the command line (which holds option_names around the whole run)."""
    audio = make_clip(tmp_path / "audio.mp4", frames=4, audio=True).path
    deep = make_clip(tmp_path / "ten.mkv", codec="ffv1", pix_fmt="yuv420p10le", frames=2).path
    cases = [
        (
            clip,
            "out.mp4",
            {"size": "99999x99999"},
            ["--size", "99999x99999"],
            "{size} 99999x99999 makes the 64x48 pictures ",
            ": libx264 encodes 2x2 to 16384x16384; give a {size} in range",
        ),
        (
            deep,
            "out.gif",
            {"depth": "10"},
            ["--depth", "10"],
            "{depth} 10: gif encodes 8 bits only (it takes bgra); ",
            "leave {depth} out, or write .mp4 with {codec} hevc or av1",
        ),
        (
            clip,
            "out.mp4",
            {"max_pixels": 3000},
            ["--max-pixels", "3000"],
            "holds 64x48 pictures, over {max_pixels} 3000 (0.003 MP): ",
            "raise {max_pixels} if they are meant",
        ),
        (
            audio,
            "out.mp4",
            {"audio_tracks": "fre"},
            ["--audio-track", "fre"],
            "{audio_tracks} fre does not match the one audio stream of ",
            "",
        ),
    ]
    fields = {name: name for name in ("size", "codec", "depth", "max_pixels", "audio_tracks")}
    options = dict(OPTION_NAMES)
    for source, name, asked, argv, head, tail in cases:
        out = tmp_path / name
        with pytest.raises(Error) as refused:
            transcode(source, str(out), TranscodeOptions(**asked))  # type: ignore[arg-type]
        said = str(refused.value)
        assert head.format(**fields) in said and said.endswith(tail.format(**fields)), said
        assert "--" not in said, said
        line = _error(["transcode", source, str(out), "--quiet", *argv], capsys)
        assert head.format(**options) in line and line.endswith(tail.format(**options)), line
        assert "_tracks" not in line and "max_pixels" not in line, line
        assert len(line.replace(repr(source), "'in.mp4'")) <= 130, line
        assert not out.exists()


def test_a_bad_track_word_is_short_and_named_as_the_caller_spells_it(capsys: Capsys, clip: str) -> None:
    """``--audio-track x!`` said 211 columns ('takes a stream's number among the audio streams (0 for the
    first) or a language code (eng, en, jpn, de ...), comma-separated, a trailing ? where ...'), and
    ``audio_tracks="x!"`` from Python said '--audio-track takes ...'."""
    said = _refused(lambda: TranscodeOptions(audio_tracks="x!"))
    assert said.startswith("audio_tracks takes stream numbers (0: the first) or languages (eng, de)"), said
    assert said.endswith("comma-separated; got 'x!'") and "--" not in said, said
    said = _refused(lambda: TranscodeOptions(subtitle_tracks="s:1"))
    assert said.endswith("(ffmpeg's s:1 is subtitle_tracks 1 here)") and "--" not in said, said
    line = _error(["transcode", clip, "o.mp4", "--audio-track", "x!"], capsys)
    assert line.startswith("alpha2: error: argument --audio-track: takes stream numbers (0: the first)"), line
    assert line.endswith("got 'x!'") and len(line) <= 130, line


def test_batch_workers_name_the_option_and_pythons_batch_the_field(
    tmp_path: Path, capsys: Capsys, clip: str
) -> None:
    """A file of ``alpha2 batch`` runs in a worker process, which does not inherit the command line's
    option_names: the names travel with each FileTask."""
    from alpha2.apps.batch import batch
    from alpha2.apps.batch_plan import FileStatus

    code = main(["batch", clip, "--out", str(tmp_path / "cli"), "--size", "99999x99999", "--json"])
    assert code == 1
    import json

    error = json.loads(capsys.readouterr().out)["files"][0]["error"]
    assert error.startswith("--size 99999x99999 makes the 64x48 pictures"), error
    report = batch([clip], tmp_path / "py", TranscodeOptions(size="99999x99999"))  # type: ignore[arg-type]
    (result,) = report.results
    assert result.status is FileStatus.FAILED and result.error is not None
    assert result.error.startswith("size 99999x99999 makes the 64x48 pictures"), result.error


def test_a_unit_typed_apart_from_its_number_is_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # '--bitrate 5 Mb' said 'unexpected argument: Mb' and no more (left by helper 112's options pass).
    with pytest.raises(SystemExit) as exit_:
        main(["transcode", str(tmp_path / "in.mp4"), str(tmp_path / "out.mp4"), "--bitrate", "5", "Mb"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unexpected argument: Mb (a unit goes with its number, without a space: 5M, 800k, 500ms)" in err
    with pytest.raises(SystemExit):
        main(["transcode", str(tmp_path / "in.mp4"), str(tmp_path / "out.mp4"), "extra.mp4"])
    assert "without a space" not in capsys.readouterr().err
