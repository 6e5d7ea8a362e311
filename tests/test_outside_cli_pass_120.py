"""Faults an outside pass over ``alpha2 probe``, ``alpha2 sample`` and ``alpha2 batch`` at an 80-column
terminal found, each against what a person typing them instead of ffprobe / ffmpeg meets."""

from __future__ import annotations

import fractions
import io
import json
import os
import shutil
import sys
from pathlib import Path

import av
import pytest
from media import make_audio_only, make_clip

from alpha2.apps.cli import main

Capsys = pytest.CaptureFixture[str]


@pytest.mark.parametrize("name", ["take:2.mp4", "2024-05-01T10:30:00.mp4", "http:clip.mp4"])
def test_a_local_file_named_like_a_url_is_read_as_the_file(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A relative name whose first colon follows URL scheme letters ('take:2.mp4', an ISO time) made
    FFmpeg look for a protocol of that name: probe and transcode said 'Protocol not found' (or, for
    'http:', that the file was damaged) for a file that was there, one 'alpha2 sample' had just
    written."""
    clip = make_clip(tmp_path / "clip.mp4", frames=4, audio=True)
    shutil.copy(clip.path, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    assert main(["probe", "--json", "--no-decode", name]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not report["errors"] and [f["path"] for f in report["files"]] == [name]
    assert [s["kind"] for s in report["files"][0]["streams"]] == ["video", "audio"]
    assert main(["transcode", name, "out.mkv", "--quiet"]) == 0, capsys.readouterr().err
    with av.open(str(tmp_path / "out.mkv")) as out:
        assert [s.type for s in out.streams] == ["video", "audio"]
        assert sum(1 for _ in out.decode(video=0)) == 4


def _subtitles_alone(path: Path) -> str:
    """A Matroska file holding one SubRip cue and nothing else."""
    ms = fractions.Fraction(1, 1000)
    with av.open(str(path), "w") as out:
        text = out.add_mux_stream("subrip", time_base=ms)
        cue = av.Packet(b"Hello")
        cue.pts = cue.dts = 0
        cue.duration, cue.time_base, cue.stream = 500, ms, text
        out.mux(cue)
    return str(path)


@pytest.mark.parametrize("option", [["--size", "64x48"], ["--no-audio"], ["--frames", "3"]])
def test_subtitles_alone_with_a_video_option_say_there_is_nothing_to_transcode(
    tmp_path: Path, capsys: Capsys, option: list[str]
) -> None:
    """A file of subtitles alone, given --size (as every file of a batch is), was refused as 'this
    output is sound alone ('subs.mkv' to an audio file)': it holds no sound, and the output was .mp4."""
    source = _subtitles_alone(tmp_path / "subs.mkv")
    assert main(["transcode", source, str(tmp_path / "out.mp4"), "--quiet", *option]) == 1
    err = capsys.readouterr().err
    assert err == f"alpha2: error: {source!r} holds no video or audio to transcode: subtitle (srt)\n", err
    assert not (tmp_path / "out.mp4").exists()


def test_sound_alone_into_a_video_container_is_not_called_an_audio_file(
    tmp_path: Path, capsys: Capsys
) -> None:
    """'alpha2 transcode song.mka out.mp4 --size 64x48' said the output was sound alone because of
    ''song.mka' to an audio file'; .mp4 is no audio file: the input holds no video."""
    song = make_audio_only(tmp_path / "song.mka")
    assert main(["transcode", song, str(tmp_path / "out.mp4"), "--quiet", "--size", "64x48"]) == 1
    err = capsys.readouterr().err
    assert f"this output is sound alone ({song!r} holds no video); leave it out" in err, err
    assert main(["transcode", song, str(tmp_path / "out.mp3"), "--quiet", "--size", "64x48"]) == 1
    assert f"({song!r} to an audio file)" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_probe_errors_are_folded_at_words_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capsys
) -> None:
    """Every other command folds its one error line at words on a terminal; probe's per-file errors were
    printed whole, so an 80-column terminal cut them mid-word ('the f' / 'ile ends before ...')."""
    clip = make_clip(tmp_path / "clip.mp4", frames=4)
    (tmp_path / "cut.mp4").write_bytes(Path(clip.path).read_bytes()[: Path(clip.path).stat().st_size // 2])
    monkeypatch.chdir(tmp_path)
    # Not a terminal (a pipe, a log): the one line a script reads.
    assert main(["probe", "--no-decode", "cut.mp4"]) == 1
    one_line = capsys.readouterr().err
    assert one_line.startswith("alpha2: error: opening 'cut.mp4': an MP4 / MOV without its 'moov' index")
    assert one_line.count("\n") == 1 and len(one_line) > 80
    terminal = _Terminal()
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["probe", "--no-decode", "cut.mp4"]) == 1
    lines = terminal.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines), lines
    assert all(line.startswith("  ") for line in lines[1:]), lines
    assert " ".join(terminal.getvalue().split()) == " ".join(one_line.split())  # no word cut


def test_probe_shows_control_characters_of_tags_instead_of_sending_them_to_the_terminal(
    tmp_path: Path, capsys: Capsys
) -> None:
    """A file's title, stream title and language went to the terminal as they were: an ESC [2J in a
    title cleared the screen, an OSC sequence retitled the terminal, a newline broke the layout, and a
    language 'e<ESC>ng' showed as 'eg'. They are shown escaped (\\x1b), line breaks as spaces;
    --json keeps the tags as they are."""
    clip = make_clip(tmp_path / "base.mkv", frames=3, audio=True)
    path = str(tmp_path / "tags.mkv")
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        out.metadata["title"] = "Evil \x1b[2Jtitle\nsecond line"
        video = out.add_stream_from_template(inp.streams.video[0])
        video.metadata["title"] = "v\x1b]0;pwned\x07x"
        audio = out.add_stream_from_template(inp.streams.audio[0])
        audio.metadata["language"] = "e\x1bng"
        audio.metadata["title"] = "Kommentar 🎬 עברית"
        for packet in inp.demux():
            if packet.dts is not None:
                packet.stream = video if packet.stream.type == "video" else audio
                out.mux(packet)
    assert main(["probe", "--no-decode", path]) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text and "\x07" not in text, text
    assert "title     Evil \\x1b[2Jtitle second line\n" in text, text
    assert '"v\\x1b]0;pwned\\x07x"' in text and "e\\x1bng" in text
    assert '"Kommentar 🎬 עברית"' in text  # the rest as it is
    assert main(["probe", "--json", "--no-decode", path]) == 0
    tags = json.loads(capsys.readouterr().out)["files"][0]
    assert tags["tags"]["title"] == "Evil \x1b[2Jtitle\nsecond line"
    assert tags["streams"][1]["language"] == "e\x1bng"


def test_an_error_naming_a_tag_shows_its_control_characters_escaped(tmp_path: Path, capsys: Capsys) -> None:
    """'--audio-track fra' over a file whose one audio stream is tagged 'e<ESC>ng' sent the ESC to the
    terminal in the error's list of the streams there are."""
    clip = make_clip(tmp_path / "base.mkv", frames=3, audio=True)
    path = str(tmp_path / "tagged.mkv")
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        audio = out.add_stream_from_template(inp.streams.audio[0])
        audio.metadata["language"] = "e\x1b[2Jng"
        for packet in inp.demux():
            if packet.dts is not None:
                packet.stream = video if packet.stream.type == "video" else audio
                out.mux(packet)
    output = tmp_path / "out.mp4"
    assert main(["transcode", path, str(output), "--audio-track", "fra", "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "0 e\\x1b[2Jng (opus" in err, err
    assert not output.exists()


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(59.9996, "1:00.000"), (119.9996, "2:00.000"), (3599.9997, "1:00:00.000"), (61.5, "1:01.500")],
)
def test_a_time_just_under_a_minute_is_not_said_as_60_seconds(seconds: float, said: str) -> None:
    """probe's duration (and transcode's summary) rounded the seconds but not the minute: a file of
    119.9996 s was '1:60.000', a time no --from takes, and 59.9996 s was '60.000 s'."""
    from alpha2.apps.cli import time_text

    assert time_text(seconds) == said


def test_batch_says_the_entries_named_like_video_that_are_no_file(tmp_path: Path, capsys: Capsys) -> None:
    """A folder's FIFO and its link to a file that is not there (a drive not mounted), both named .mp4,
    were left out of a batch without a word: not in the table, not among the files 'not video by their
    extension', not in --json. They are said, and counted where nothing else was found."""
    folder = tmp_path / "in"
    folder.mkdir()
    make_clip(folder / "good.mp4", frames=3)
    os.mkfifo(folder / "pipe.mp4")
    os.symlink(tmp_path / "unmounted" / "film.mp4", folder / "gone.mp4")
    out = tmp_path / "out"
    assert main(["batch", str(folder), "--out", str(out), "--quiet", "--workers", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "no regular file (a FIFO, a device, a link to nothing), left out: 2" in text, text
    assert "gone.mp4" in text and "pipe.mp4" in text
    assert main(["batch", str(folder), "--out", str(out), "--json", "--workers", "1", "-y"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["not_files"] == [str(folder / "gone.mp4"), str(folder / "pipe.mp4")]
    assert [f["status"] for f in report["files"]] == ["done"]
    (folder / "good.mp4").unlink()
    assert main(["batch", str(folder), "--out", str(tmp_path / "out2"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "no input files found" in err and "2 entries named like video but no regular file" in err, err
