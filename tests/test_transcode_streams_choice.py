"""Choosing the audio and subtitle streams of ``alpha2 transcode`` (``--audio-track``,
``--subtitle-track``, ``--no-audio``, ``--no-subtitles``; ``TranscodeOptions.audio_tracks`` ...): by
number among the streams of a kind or by language (in any of its ISO 639 codes, as ``play --alang``
matches), a word that matches nothing refused before anything is written (naming the streams the file
has), and the report saying which streams were kept and which dropped. The outputs are read back with
PyAV; one pipeline, ``--segments`` and ``alpha2 batch`` alike. The inputs are ``make_clip``'s video and
tone, muxed again with more audio and subtitle streams, each tagged with a language."""

from __future__ import annotations

import fractions
import json
import os
from pathlib import Path
from typing import Any

import av
import pytest

from alpha2.api import transcoder
from alpha2.api.transcode_plan import StreamChoiceError
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps import cli
from alpha2.apps.cli import display_width
from alpha2.gpu.errors import InvalidInputError
from tests.media import copy_video_and_audio, make_clip

Capsys = pytest.CaptureFixture[str]
MS = fractions.Fraction(1, 1000)


def _clip(
    tmp_path: Path,
    name: str = "in.mkv",
    audio: tuple[str | None, ...] = ("eng", "jpn"),
    subtitles: tuple[str | None, ...] = ("eng",),
    frames: int = 30,
    gop: int | None = None,
    defaults: tuple[int | None, int | None] = (None, None),
) -> str:
    """``make_clip``'s video and AAC tone, with the tone as one audio stream per ``audio`` language and a
    subtitle stream (SubRip in .mkv, mov_text in .mp4) per ``subtitles`` language (None: untagged); each
    audio stream titled with its language in capitals. ``defaults``: the number of the audio and of the
    subtitle stream marked the default (None: none marked)."""
    base = make_clip(tmp_path / f"base-{name}.mp4", frames=frames, audio=True, gop=gop)
    path = str(tmp_path / name)
    sub = "subrip" if name.endswith(".mkv") else "mov_text"
    with av.open(base.path) as inp, av.open(path, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        sounds = []
        for language in audio:
            stream = out.add_stream_from_template(inp.streams.audio[0])
            if language is not None:
                stream.metadata.update({"language": language, "title": language.upper()})
            sounds.append(stream)
        texts = []
        for language in subtitles:
            text = out.add_mux_stream(sub, time_base=MS)
            if language is not None:
                text.metadata["language"] = language
            texts.append(text)
        for streams, number in zip((sounds, texts), defaults, strict=True):
            if number is not None:
                streams[number].disposition = av.stream.Disposition.default
        copy_video_and_audio(inp, video, sounds, out)
        for number, text in enumerate(texts):
            words = f"cue {number}".encode()
            body = words if sub == "subrip" else len(words).to_bytes(2, "big") + words
            cue = av.Packet(body)
            cue.pts = cue.dts = 100
            cue.duration, cue.time_base, cue.stream = 500, MS, text
            out.mux(cue)
    return path


def _streams(path: str) -> list[tuple[str, str, str | None]]:
    """Each stream of the file at ``path``: its kind, codec and language tag (None: none, or ``und``)."""
    with av.open(path) as container:
        return [
            (
                s.type,
                s.codec_context.name if s.codec_context is not None else "",
                s.metadata.get("language") if s.metadata.get("language") not in (None, "und") else None,
            )
            for s in container.streams
        ]


def _kinds(path: str, kind: str) -> list[tuple[str, str | None]]:
    """The codec and language of each stream of ``kind`` in the file at ``path``."""
    return [(codec, language) for k, codec, language in _streams(path) if k == kind]


# -- by language, by number -----------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["jpn", "ja", "JPN"])
def test_an_audio_language_keeps_that_stream_only_and_the_report_says_what_went(
    tmp_path: Path, word: str
) -> None:
    src = _clip(tmp_path)
    out = str(tmp_path / "out.mkv")
    stats = transcode(src, out, TranscodeOptions(audio_tracks=word))
    assert _kinds(out, "audio") == [("aac", "jpn")]
    assert _kinds(out, "subtitle") == [("srt", "eng")]  # subtitles kept, as by default
    asked = word.lower()
    assert [(d.index, d.reason) for d in stats.dropped_streams] == [
        (1, f"not chosen by --audio-track {asked}")
    ]
    assert [s.index for s in stats.kept_streams] == [2, 3]
    data = stats.as_dict()
    choice = data["stream_choice"]
    assert choice["audio"]["asked"] == [asked]
    assert choice["audio"]["kept"] == [
        {"index": 2, "number": 1, "language": "jpn", "title": "JPN", "codec": "aac"}
    ]
    assert choice["audio"]["dropped"] == [
        {
            "index": 1,
            "number": 0,
            "language": "eng",
            "title": "ENG",
            "codec": "aac",
            "reason": f"not chosen by --audio-track {asked}",
        }
    ]
    assert choice["subtitle"] == {
        "asked": "all",
        "kept": [{"index": 3, "number": 0, "language": "eng", "title": None, "codec": "srt"}],
        "dropped": [],
    }
    assert data["encoder"]["audio"] == "copied"


def test_numbers_and_languages_together_keep_the_order_asked(tmp_path: Path) -> None:
    """``2,eng``: the third audio stream, then the English one, in the order asked (as ffmpeg writes
    its ``-map`` streams); ``de`` matches a stream tagged ``ger`` (any of the language's ISO 639
    codes), as ``play --alang`` matches."""
    src = _clip(tmp_path, audio=("ger", "eng", "fra", "jpn"), subtitles=())
    out = str(tmp_path / "out.mp4")
    stats = transcode(src, out, TranscodeOptions(audio_tracks=("2", "eng")))
    assert _kinds(out, "audio") == [("aac", "fra"), ("aac", "eng")]
    assert stats.encoder["audio"] == "2 streams copied"
    stats = transcode(src, out, TranscodeOptions(audio_tracks=["de", 3]))
    assert _kinds(out, "audio") == [("aac", "ger"), ("aac", "jpn")]
    choice = stats.as_dict()["stream_choice"]["audio"]
    assert [t["number"] for t in choice["kept"]] == [0, 3]
    assert [t["language"] for t in choice["dropped"]] == ["eng", "fra"]


def test_a_language_keeps_every_stream_in_it(tmp_path: Path) -> None:
    src = _clip(tmp_path, audio=("eng", "jpn", "eng"), subtitles=())
    out = str(tmp_path / "out.mkv")
    transcode(src, out, TranscodeOptions(audio_tracks="en"))
    assert _kinds(out, "audio") == [("aac", "eng"), ("aac", "eng")]


def _defaults(path: str, kind: str) -> list[str | None]:
    """The language of each stream of ``kind`` in the file at ``path`` marked the default."""
    with av.open(path) as container:
        return [
            s.metadata.get("language")
            for s in container.streams
            if s.type == kind and int(s.disposition) & int(av.stream.Disposition.default)
        ]


@pytest.mark.parametrize("name", ["out.mkv", "out.mp4"])
def test_the_streams_follow_the_order_asked_and_the_first_takes_the_default(
    tmp_path: Path, name: str
) -> None:
    """``--audio-track fra,eng`` means French first: it was written after the English stream (the
    input's order), which stayed the default, unsaid. Now as ffmpeg's ``-map`` orders: the streams in
    the order asked (a language's several streams in the input's order at its place, a stream named
    twice at its first), the first the default, said where the input's default was another."""
    src = _clip(tmp_path, audio=("eng", "fra", "eng"), subtitles=("eng", "fra"), defaults=(0, 0))
    out = str(tmp_path / name)
    stats = transcode(src, out, TranscodeOptions(audio_tracks="fra,eng,1", subtitle_tracks="fra,eng"))
    subtitle = "srt" if name.endswith(".mkv") else "mov_text"
    assert _kinds(out, "audio") == [("aac", "fra"), ("aac", "eng"), ("aac", "eng")]
    with av.open(out) as container:  # eng's two streams in the input's order: ENG of stream 1, then 3
        assert [s.index for s in container.streams.audio] == [1, 2, 3]
    assert _kinds(out, "subtitle") == [(subtitle, "fra"), (subtitle, "eng")]
    assert _defaults(out, "audio") == ["fra"] and _defaults(out, "subtitle") == ["fra"]
    notes = [n for n in stats.stream_notes if "made the default" in n]
    assert notes == [
        "audio stream 2 (fra) made the default, the first chosen; the input's default, stream 1, is kept "
        "after it",
        "subtitle stream 5 (fra) made the default, the first chosen; the input's default, stream 4, is kept "
        "after it",
    ]
    choice = stats.as_dict()["stream_choice"]
    assert [t["index"] for t in choice["audio"]["kept"]] == [2, 1, 3]  # the output's order
    # The input's default chosen first: nothing moves, nothing said.
    stats = transcode(src, out, TranscodeOptions(audio_tracks="eng,fra"))
    assert _kinds(out, "audio") == [("aac", "eng"), ("aac", "eng"), ("aac", "fra")]
    assert _defaults(out, "audio") == ["eng"]
    assert not [n for n in stats.stream_notes if "made the default" in n]


def test_a_chosen_subtitle_is_not_made_the_default_where_none_was(tmp_path: Path) -> None:
    """A subtitle stream that is the default is shown unasked: the choice's first takes the default only
    where the input had a default subtitle stream."""
    src = _clip(tmp_path, audio=("eng",), subtitles=("eng", "fra"), defaults=(0, None))
    out = str(tmp_path / "out.mkv")
    stats = transcode(src, out, TranscodeOptions(subtitle_tracks="fra"))
    assert _kinds(out, "subtitle") == [("srt", "fra")]
    assert _defaults(out, "subtitle") == []
    assert not [n for n in stats.stream_notes if "made the default" in n]


def test_a_sound_alone_output_follows_the_order_asked(tmp_path: Path) -> None:
    """A ``.mka`` (sound alone), copied or encoded again: the order asked, the first the default; an
    ``.m4a`` or ``.mp3`` (one audio stream) keeps the first asked, not the input's first."""
    src = _clip(tmp_path, audio=("eng", "fra"), subtitles=(), defaults=(0, None))
    out = str(tmp_path / "out.mka")
    for codec in ("copy", None):
        stats = transcode(src, out, TranscodeOptions(audio_tracks="fra,eng", codec=codec))
        assert [language for _, language in _kinds(out, "audio")] == ["fra", "eng"], codec
        assert _defaults(out, "audio") == ["fra"], codec
        assert "audio stream 2 (fra) made the default" in " ".join(stats.stream_notes)
    for name, codec in (("out.m4a", "copy"), ("out.mp3", None)):
        one = str(tmp_path / name)
        stats = transcode(src, one, TranscodeOptions(audio_tracks="fra,eng", codec=codec))
        assert len(_kinds(one, "audio")) == 1, name
        if name.endswith(".m4a"):  # (an MP3 holds no language)
            assert _kinds(one, "audio") == [("aac", "fra")]
        ext = name.removeprefix("out")
        assert {d.index: d.reason for d in stats.dropped_streams}[1] == (
            f"the {ext} container holds one audio stream (--audio-track chooses another)"
        )


def test_no_subtitles_and_a_subtitle_track(tmp_path: Path) -> None:
    src = _clip(tmp_path, subtitles=("eng", "fre", None))
    out = str(tmp_path / "out.mkv")
    stats = transcode(src, out, TranscodeOptions(subtitles=False))
    assert _kinds(out, "subtitle") == []
    assert len(_kinds(out, "audio")) == 2  # the audio as it was
    assert {d.index: d.reason for d in stats.dropped_streams} == {
        3: "--no-subtitles",
        4: "--no-subtitles",
        5: "--no-subtitles",
    }
    choice = stats.as_dict()["stream_choice"]
    assert choice["subtitle"]["asked"] == "none" and choice["audio"]["asked"] == "all"
    assert [t["language"] for t in choice["subtitle"]["dropped"]] == ["eng", "fre", None]
    # fra matches the stream tagged fre (ISO 639-2/B), and 2 the untagged one.
    stats = transcode(src, out, TranscodeOptions(subtitle_tracks="fra,2"))
    assert _kinds(out, "subtitle") == [("srt", "fre"), ("srt", None)]
    assert [(d.index, d.reason) for d in stats.dropped_streams] == [
        (3, "not chosen by --subtitle-track fra,2")
    ]
    # Into MP4: chosen, then converted to mov_text as every SubRip stream is.
    stats = transcode(src, str(tmp_path / "out.mp4"), TranscodeOptions(subtitle_tracks="eng", audio=False))
    assert _streams(str(tmp_path / "out.mp4")) == [("video", "h264", None), ("subtitle", "mov_text", "eng")]
    assert stats.encoder["audio"] == "dropped (--no-audio)"


def test_the_choice_is_said_in_the_summary_within_80_columns(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _clip(tmp_path)
    out = str(tmp_path / "out.mp4")
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["transcode", src, out, "--audio-track", "jpn", "--no-subtitles"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("transcode:")]
    # (The output's path is one word, never broken: the pytest folder's is longer than 80 columns.)
    assert all(display_width(line) <= 80 for line in lines if out not in line), lines
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("streams"))
    said = " ".join(line.strip().removeprefix("streams").strip() for line in lines[at : at + 2])
    assert said == (
        "audio 1 jpn kept; audio 0 eng dropped (not chosen by --audio-track jpn); subtitle 0 eng dropped "
        "(--no-subtitles)"
    ), lines[at : at + 3]
    assert "dropped stream" not in err  # said once, on the streams line, not again as notes
    assert _streams(out) == [("video", "h264", None), ("audio", "aac", "jpn")]


def test_command_line_words_repeat_and_json_says_the_choice(tmp_path: Path, capsys: Capsys) -> None:
    src = _clip(tmp_path, audio=("eng", "jpn", "fra"), subtitles=("eng", "jpn"))
    out = str(tmp_path / "out.mkv")
    words = ["--audio-track", "fra", "--audio-track", "0", "--subtitle-track", "ja", "--json"]
    assert cli.main(["transcode", src, out, *words]) == 0
    data = json.loads(capsys.readouterr().out)
    choice = data["stream_choice"]
    assert choice["audio"]["asked"] == ["fra", "0"]
    assert [(t["number"], t["language"]) for t in choice["audio"]["kept"]] == [(2, "fra"), (0, "eng")]
    assert [(t["number"], t["reason"]) for t in choice["audio"]["dropped"]] == [
        (1, "not chosen by --audio-track fra,0")
    ]
    assert [t["language"] for t in choice["subtitle"]["kept"]] == ["jpn"]
    assert choice["matched_none"] == []
    assert _kinds(out, "audio") == [("aac", "fra"), ("aac", "eng")]  # in the order asked
    assert _kinds(out, "subtitle") == [("srt", "jpn")]
    # Nothing asked: no choice said (null), every stream kept.
    assert cli.main(["transcode", src, out, "-y", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stream_choice"] is None
    assert len(_kinds(out, "audio")) == 3 and len(_kinds(out, "subtitle")) == 2


# -- refusals -----------------------------------------------------------------------------------------


def test_a_word_that_matches_nothing_is_refused_before_anything_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _clip(tmp_path)
    out = tmp_path / "out.mp4"

    def no_decoder(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the decoder was opened")

    monkeypatch.setattr(transcoder, "open_decoder", no_decoder)
    with pytest.raises(StreamChoiceError) as refused:
        transcode(src, str(out), TranscodeOptions(audio_tracks="fre"))
    assert str(refused.value) == (
        f"audio_tracks fre matches none of the 2 audio streams of {src!r}: 0 eng 'ENG' (aac, 2 ch), "
        "1 jpn 'JPN' (aac, 2 ch)"
    )
    assert refused.value.option == "--audio-track" and refused.value.spec == "fre"
    assert [t.language for t in refused.value.tracks] == ["eng", "jpn"]
    assert isinstance(refused.value, InvalidInputError)  # and so a ValueError
    with pytest.raises(StreamChoiceError, match=r"audio_tracks 2 matches none of the 2 audio streams"):
        transcode(src, str(out), TranscodeOptions(audio_tracks="0,2"))
    with pytest.raises(
        StreamChoiceError,
        match=r"subtitle_tracks jpn does not match the one subtitle stream of .*: 0 eng \(srt\)",
    ):
        transcode(src, str(out), TranscodeOptions(subtitle_tracks="jpn"))
    bare = make_clip(tmp_path / "bare.mp4", frames=5)
    with pytest.raises(
        StreamChoiceError, match=r"subtitle_tracks 0 matches nothing: .* has no subtitle stream"
    ):
        transcode(bare.path, str(out), TranscodeOptions(subtitle_tracks=0))
    assert sorted(os.listdir(tmp_path)) == sorted(["base-in.mkv.mp4", "in.mkv", "bare.mp4"])


def test_a_word_ending_in_a_question_mark_may_match_nothing(tmp_path: Path) -> None:
    """As ffmpeg's ``-map 0:a:m:language:jpn?``: a batch of files some of which lack the language."""
    src = _clip(tmp_path)
    out = str(tmp_path / "out.mkv")
    stats = transcode(src, out, TranscodeOptions(audio_tracks="fre?"))
    assert _kinds(out, "audio") == []
    assert stats.encoder["audio"] == "dropped: not chosen by --audio-track fre?"
    choice = stats.as_dict()["stream_choice"]
    assert choice["matched_none"] == ["--audio-track fre?"]
    assert [t["language"] for t in choice["audio"]["dropped"]] == ["eng", "jpn"]
    stats = transcode(src, out, TranscodeOptions(audio_tracks="fre?,jpn"))
    assert _kinds(out, "audio") == [("aac", "jpn")]


def test_bad_options_are_refused_when_made() -> None:
    assert TranscodeOptions(audio_tracks=" JPN, 01 ,eng?").audio_tracks == ("jpn", "1", "eng?")
    assert TranscodeOptions(subtitle_tracks=[0, "en,fr"]).subtitle_tracks == ("0", "en", "fr")
    for bad, said in (
        ("a:1", "ffmpeg's a:1 is audio_tracks 1 here"),
        ("0:s:1", "ffmpeg's 0:s:1 is subtitle_tracks 1 here"),
        ("english language", "got 'english language'"),
        ("-1", "got '-1'"),
        ([True], "got bool True"),
        ([], "names no stream"),
        ("", "names no stream"),
    ):
        with pytest.raises(InvalidInputError, match=said):
            TranscodeOptions(audio_tracks=bad)
    with pytest.raises(InvalidInputError, match=r"give audio=False \(--no-audio.*or audio_tracks"):
        TranscodeOptions(audio=False, audio_tracks="jpn")
    with pytest.raises(InvalidInputError, match=r"give subtitles=False .* or subtitle_tracks"):
        TranscodeOptions(subtitles=False, subtitle_tracks="0")
    with pytest.raises(InvalidInputError, match="subtitles must be"):
        TranscodeOptions(subtitles="no")  # type: ignore[arg-type]


def test_a_copy_refuses_a_choice_it_cannot_make(tmp_path: Path) -> None:
    """``--codec copy`` keeps every stream (but with ``--no-audio``): a choice is refused, not ignored."""
    src = _clip(tmp_path)
    out = tmp_path / "out.mkv"
    for asked, said in (
        ({"audio_tracks": "jpn"}, "audio_tracks is"),
        ({"subtitles": False}, "subtitles=False is"),
        ({"audio_tracks": "0", "subtitle_tracks": "0"}, "audio_tracks, subtitle_tracks are"),
    ):
        with pytest.raises(
            InvalidInputError, match=f"codec copy keeps every audio and subtitle stream.*{said}"
        ):
            transcode(src, str(out), TranscodeOptions(codec="copy", **asked))
    assert not out.exists()
    transcode(src, str(out), TranscodeOptions(codec="copy", audio=False))  # as before
    assert [k for k, _, _ in _streams(str(out))] == ["video", "subtitle"]


@pytest.mark.parametrize(
    ("words", "said", "code"),
    [
        (
            ["-map", "0:a:1"],
            "unknown option -map; there is no -map here: --audio-track and --subtitle-track",
            2,
        ),
        (["-sn"], "unknown option -sn; ffmpeg's -sn is --no-subtitles here", 2),
        (["-an"], "unknown option -an; ffmpeg's -an is --no-audio here", 2),
        (["--alang", "jpn"], "unknown option --alang; mpv's --alang is --audio-track here", 2),
        (
            ["--audio-track", "jpn", "--no-audio"],
            "argument --no-audio: not allowed with argument --audio-track",
            2,
        ),
        (
            ["--no-subtitles", "--subtitle-track", "0"],
            "argument --subtitle-track: not allowed with argument --no-subtitles",
            2,
        ),
        (
            ["--audio-track", "x"],
            "argument --audio-track: takes stream numbers (0: the first) or languages (eng, de), ",
            2,
        ),
        (["--audio-track", "fre"], "--audio-track fre matches none of the 2 audio streams", 1),
    ],
)
def test_command_line_refusals(
    tmp_path: Path, capsys: Capsys, words: list[str], said: str, code: int
) -> None:
    src = _clip(tmp_path)
    out = tmp_path / "out.mp4"
    if code == 2:  # argparse's usage errors
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["transcode", src, str(out), *words])
        assert exit_info.value.code == 2
    else:
        assert cli.main(["transcode", src, str(out), *words]) == code
    assert f"alpha2: error: {said}" in capsys.readouterr().err
    assert not out.exists()


def test_no_sub_abbreviates_no_subtitles(tmp_path: Path) -> None:
    """mpv's ``--no-sub`` is taken (an abbreviation of ``--no-subtitles``)."""
    src = _clip(tmp_path)
    out = str(tmp_path / "out.mkv")
    assert cli.main(["transcode", src, out, "--no-sub", "--quiet"]) == 0
    assert _kinds(out, "subtitle") == []


# -- segments and batch -----------------------------------------------------------------------------


def test_segments_keep_the_choice(tmp_path: Path) -> None:
    """The segments are video only; the join copies the chosen streams once over the whole output."""
    src = _clip(tmp_path, frames=40, gop=10)
    out = str(tmp_path / "out.mkv")
    stats = transcode(src, out, TranscodeOptions(segments=2, audio_tracks="jpn", subtitles=False))
    assert stats.segments is not None and stats.segments["segments"] == 2, stats.segments
    assert _streams(out) == [("video", "h264", None), ("audio", "aac", "jpn")]
    choice = stats.as_dict()["stream_choice"]
    assert [t["language"] for t in choice["audio"]["kept"]] == ["jpn"]
    assert [(t["language"], t["reason"]) for t in choice["audio"]["dropped"]] == [
        ("eng", "not chosen by --audio-track jpn")
    ]
    assert [t["reason"] for t in choice["subtitle"]["dropped"]] == ["--no-subtitles"]
    with pytest.raises(StreamChoiceError, match="audio_tracks fre matches none"):
        transcode(src, str(tmp_path / "no.mkv"), TranscodeOptions(segments=2, audio_tracks="fre"))
    assert not (tmp_path / "no.mkv").exists()
    assert not [name for name in os.listdir(tmp_path) if ".segments." in name]


def test_batch_takes_the_choice_file_by_file(tmp_path: Path, capsys: Capsys) -> None:
    """Each file is chosen from on its own: one without the language fails (said), the others are done;
    with ``jpn?`` it is done without audio."""
    folder = tmp_path / "in"
    folder.mkdir()
    _clip(folder, name="both.mkv")
    _clip(folder, name="english.mkv", audio=("eng",), subtitles=())
    for name in os.listdir(folder):
        if name.startswith("base-"):
            os.remove(folder / name)
    out = tmp_path / "out"
    code = cli.main(
        ["batch", str(folder), "--out", str(out), "--audio-track", "jpn", "--json", "--workers", "1"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 1, report
    files = {os.path.basename(f["input"]): f for f in report["files"]}
    assert files["both.mkv"]["status"] == "done" and files["english.mkv"]["status"] == "failed"
    assert "--audio-track jpn does not match the one audio stream" in json.dumps(files["english.mkv"])
    assert _kinds(str(out / "both.mp4"), "audio") == [("aac", "jpn")]
    assert not (out / "english.mp4").exists()
    code = cli.main(
        ["batch", str(folder), "--out", str(out), "--audio-track", "jpn?", "--no-subtitles", "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert _streams(str(out / "english.mp4")) == [("video", "h264", None)]
    assert _streams(str(out / "both.mp4")) == [("video", "h264", None), ("audio", "aac", "jpn")]


def test_a_batch_resumed_across_the_new_options_keeps_its_outputs() -> None:
    """The stream-choice options joined TranscodeOptions after batches had written manifests: at their
    defaults they are left out of the settings' hash, which stays what those manifests hold (the hashes
    below are what the code before them gave), so a resumed batch does not make every file again."""
    from alpha2.api.transcode_plan import TranscodeOptions
    from alpha2.apps.batch_plan import settings_fingerprint

    assert settings_fingerprint(TranscodeOptions(), ".mp4") == (
        "sha256:545a97e9f71ecae584eafb5e98ab4dc7983cbb4d53e25d16f22edef9648d28c9"
    )
    assert settings_fingerprint(TranscodeOptions(crf=30, size=(640, 360)), ".mkv") == (
        "sha256:761a19faed3ab4f71fc15baee2cffebfbe46e528265cade1a395ac3b4adc6307"
    )
    chosen = settings_fingerprint(TranscodeOptions(audio_tracks="jpn"), ".mp4")
    assert chosen != settings_fingerprint(TranscodeOptions(), ".mp4")
    assert settings_fingerprint(TranscodeOptions(subtitles=False), ".mp4") != chosen
