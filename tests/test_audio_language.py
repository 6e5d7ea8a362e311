"""An audio stream's language and title tags: :class:`AudioStreamInfo` gives them (``und`` as None, as
``alpha2 play --alang`` and :func:`alpha2.describe` read it), ``AudioSource``'s repr shows them, and
``alpha2 probe FILE`` lists them for each audio stream (text and ``--json``)."""

from __future__ import annotations

import json
from pathlib import Path

import av
import pytest

import alpha2
from alpha2.apps.cli import main
from alpha2.ffmpeg_bridge.audio import AudioStreamInfo
from tests.media import copy_video_and_audio, make_clip


def _two_languages(tmp_path: Path, ext: str) -> str:
    """Video, an English stream titled ``English``, a Japanese one titled ``Japanese commentary``, and a
    third tagged ``und`` with no title: the clip's tone copied into each."""
    clip = make_clip(tmp_path / f"base{ext}", frames=12, audio=True)
    path = str(tmp_path / f"languages{ext}")
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        tags = [("eng", "English"), ("jpn", "Japanese commentary"), ("und", None)]
        audio = []
        for language, title in tags:
            stream = out.add_stream_from_template(inp.streams.audio[0])
            stream.metadata["language"] = language
            if title:
                stream.metadata["title"] = title
            audio.append(stream)
        copy_video_and_audio(inp, video, audio, out)
    return path


@pytest.mark.parametrize("ext", [".mkv", ".mp4"])
def test_each_audio_stream_says_its_language_and_title(tmp_path: Path, ext: str) -> None:
    path = _two_languages(tmp_path, ext)
    said = []
    for index in range(3):
        with alpha2.open_audio(path, stream_index=index) as sound:
            info = sound.info
            assert isinstance(info, AudioStreamInfo) and info.stream_index == index
            said.append((info.language, info.title))
            if index == 1:
                assert " jpn" in repr(sound)
            block = next(iter(sound))  # the tags take nothing from the sound
            assert block.frames > 0
    assert [language for language, _ in said] == ["eng", "jpn", None]  # und: untagged
    if ext == ".mkv":  # FFmpeg's MP4 muxer keeps no stream title (a handler name only)
        assert [title for _, title in said] == ["English", "Japanese commentary", None]


def test_the_repr_shows_the_tags(tmp_path: Path) -> None:
    path = _two_languages(tmp_path, ".mkv")
    with alpha2.open_audio(path, stream_index=1) as sound:
        assert " opus jpn 'Japanese commentary' 48000 Hz" in repr(sound)


def test_an_untagged_stream_has_none(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "plain.mkv", frames=6, audio=True)
    with alpha2.open_audio(clip.path) as sound:
        assert sound.info.language is None and sound.info.title is None
        assert repr(sound).startswith(f"<alpha2.AudioSource {clip.path!r} opus 48000 Hz")


def test_probe_lists_each_audio_streams_language(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _two_languages(tmp_path, ".mkv")
    assert main(["probe", path, "--no-decode"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if " audio " in line]
    assert len(lines) == 3
    assert "eng" in lines[0] and '"English"' in lines[0]
    assert "jpn" in lines[1] and '"Japanese commentary"' in lines[1]
    assert "und" not in lines[2]
    assert main(["probe", path, "--json", "--no-decode"]) == 0
    document = json.loads(capsys.readouterr().out)
    streams = [s for s in document["files"][0]["streams"] if s["kind"] == "audio"]
    assert [(s["language"], s["title"]) for s in streams] == [
        ("eng", "English"),
        ("jpn", "Japanese commentary"),
        (None, None),
    ]


def test_languages_go_into_mov_in_the_form_its_muxer_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FFmpeg's MOV muxer writes a language only in its QuickTime table's form (``ger``, ``dut``, ``ces``;
    any other form is written as no language): a German track tagged ``deu`` (as MKVToolNix and
    FFmpeg tag it) came out of ``alpha2 transcode in.mkv out.mov --codec copy`` with no language, unsaid,
    while its French (``fra``, in the table) kept its own. Swedish is ``sve`` in that table, no ISO 639
    code: it is said lost. Found by an outside pass over several audio tracks."""
    clip = make_clip(tmp_path / "base.mkv", frames=12, audio=True)
    src = str(tmp_path / "languages.mkv")
    tags = ["deu", "fra", "cze", "swe"]
    with av.open(clip.path) as inp, av.open(src, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        audio = []
        for language in tags:
            stream = out.add_stream_from_template(inp.streams.audio[0])
            stream.metadata["language"] = language
            audio.append(stream)
        copy_video_and_audio(inp, video, audio, out)
    target = str(tmp_path / "out.mov")
    assert main(["transcode", src, target, "--codec", "copy", "--json"]) == 0
    with av.open(target) as written:
        got = [s.metadata.get("language") for s in written.streams.audio]
    assert got == ["ger", "fra", "ces", None], got
    assert "stream 4's language 'swe' is not written" in capsys.readouterr().out
