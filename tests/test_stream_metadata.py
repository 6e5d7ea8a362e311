"""Tags and dispositions carried over by ``alpha2 transcode``, as ``ffmpeg`` carries them: the
container's tags (title), each kept stream's language, title and handler name, its default / forced /
hearing-impaired flags, and the input video's onto the encoded video; with and without ``--from``,
into .mkv and .mp4. The inputs are made with PyAV."""

from __future__ import annotations

import fractions
from pathlib import Path

import av
import pytest

from alpha2.api.transcode_report import summary_notes
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.ffmpeg_bridge.side_streams import STREAM_TAGS_OF_THE_CODING, copy_tags
from tests.media import copy_video_and_audio, make_clip

Disposition = av.stream.Disposition


def _multi(
    tmp_path: Path,
    ext: str,
    *,
    defaults: bool = True,
    tags: dict[str, str] | None = None,
    french_marks: Disposition | int = 0,
) -> str:
    """Video (Japanese, titled), English and French audio (the English the default), German subtitles
    (forced, for the hard of hearing), and a container title and creation time; ``defaults=False``:
    no stream is the default. ``tags``: more container tags; ``french_marks``: the French audio's."""
    clip = make_clip(tmp_path / "base.mp4", frames=30, audio=True)
    path = str(tmp_path / f"multi{ext}")
    sub = "subrip" if ext == ".mkv" else "mov_text"
    ms = fractions.Fraction(1, 1000)
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        out.metadata["title"] = "My Title"
        out.metadata["creation_time"] = "2020-01-02T03:04:05.000000Z"
        out.metadata.update(tags or {})
        video = out.add_stream_from_template(inp.streams.video[0])
        video.metadata.update({"language": "jpn", "title": "Main video"})
        english = out.add_stream_from_template(inp.streams.audio[0])
        english.metadata.update({"language": "eng", "title": "English"})
        french = out.add_stream_from_template(inp.streams.audio[0])
        french.metadata.update({"language": "fra", "title": "Français"})
        text = out.add_mux_stream(sub, time_base=ms)
        text.metadata.update({"language": "ger", "title": "Deutsch"})
        if defaults:
            video.disposition = Disposition.default
            english.disposition = Disposition.default
        else:
            video.disposition = english.disposition = 0
        french.disposition = french_marks
        text.disposition = Disposition.forced | Disposition.hearing_impaired
        copy_video_and_audio(inp, video, [english, french], out)
        for i, words in enumerate((b"Hallo", b"Welt")):
            body = words if sub == "subrip" else len(words).to_bytes(2, "big") + words
            cue = av.Packet(body)
            cue.pts = cue.dts = 200 + 400 * i
            cue.duration, cue.time_base, cue.stream = 300, ms, text
            out.mux(cue)
    return path


def _read(path: str) -> tuple[dict[str, str], list[tuple[str, dict[str, str], int]]]:
    """The container's tags, and each stream's kind, tags (names in lower case) and dispositions."""
    with av.open(path) as container:
        tags = {k.lower(): v for k, v in container.metadata.items()}
        streams = [
            (s.type, {k.lower(): v for k, v in s.metadata.items()}, int(s.disposition))
            for s in container.streams
        ]
    return tags, streams


def _has(flags: int, flag: Disposition) -> bool:
    return bool(flags & int(flag))


@pytest.mark.parametrize("from_seconds", [0.0, 0.3])
@pytest.mark.parametrize("ext", [".mkv", ".mp4"])
def test_tags_and_dispositions_are_kept(tmp_path: Path, ext: str, from_seconds: float) -> None:
    src = _multi(tmp_path, ext)
    for out_ext in (".mkv", ".mp4"):
        out = str(tmp_path / f"out{out_ext}")
        transcode(src, out, TranscodeOptions(from_seconds=from_seconds))
        tags, streams = _read(out)
        assert tags.get("title") == "My Title", (ext, out_ext, tags)
        assert "creation_time" not in tags  # about the input's making, as ffmpeg leaves it out
        kinds = [kind for kind, _, _ in streams]
        assert kinds == ["video", "audio", "audio", "subtitle"], (ext, out_ext)
        (_, video, vflags), (_, eng, eflags), (_, fra, fflags), (_, ger, gflags) = streams
        assert [eng.get("language"), fra.get("language"), ger.get("language")] == ["eng", "fra", "ger"]
        assert _has(vflags, Disposition.default) and _has(eflags, Disposition.default)
        assert not _has(fflags, Disposition.default)
        if ext == out_ext == ".mkv":  # what Matroska holds and MP4 does not
            assert video.get("language") == "jpn" and video.get("title") == "Main video"
            assert [eng.get("title"), fra.get("title"), ger.get("title")] == [
                "English",
                "Français",
                "Deutsch",
            ]
            assert _has(gflags, Disposition.forced) and _has(gflags, Disposition.hearing_impaired)
            assert not _has(gflags, Disposition.default)
        # The video was encoded again: no tag of the input's encoder (nor, cut, of the copied audio's).
        assert "encoder" not in video
        if from_seconds:
            assert "encoder" not in eng


def test_with_several_streams_and_no_default_the_first_is_made_it(tmp_path: Path) -> None:
    src = _multi(tmp_path, ".mkv", defaults=False)
    _, streams = _read(src)
    assert not any(_has(flags, Disposition.default) for _, _, flags in streams)
    out = str(tmp_path / "out.mkv")
    transcode(src, out)
    _, streams = _read(out)
    defaults = [(kind, tags.get("language")) for kind, tags, f in streams if _has(f, Disposition.default)]
    assert defaults == [("audio", "eng")]  # one video, one subtitle stream: left as they were


def test_a_video_only_input_keeps_its_video_tags_when_streams_are_copied(tmp_path: Path) -> None:
    """The video's tags come with the copied streams' input (audio here, the first one only)."""
    src = _multi(tmp_path, ".mkv")
    out = str(tmp_path / "out.mkv")
    transcode(src, out, TranscodeOptions(audio=False))
    tags, streams = _read(out)
    assert tags.get("title") == "My Title"
    assert streams[0][1].get("language") == "jpn"


def test_copy_tags_keeps_the_targets_and_leaves_out_coding_tags() -> None:
    target: dict[str, str] = {"LANGUAGE": "eng"}
    source = {
        "language": "fra",
        "title": "Film",
        "ENCODER": "Lavc libx264",
        "BPS-eng": "1000",
        "DURATION": "00:00:01.000000000",
        "handler_name": "VideoHandler",
    }
    copy_tags(source, target, STREAM_TAGS_OF_THE_CODING)
    assert target == {"LANGUAGE": "eng", "title": "Film", "handler_name": "VideoHandler"}
    everything: dict[str, str] = {}
    copy_tags(source, everything)
    assert everything == source


@pytest.mark.parametrize("codec", [None, "copy"])
def test_mp4_track_titles_are_kept(tmp_path: Path, codec: str | None) -> None:
    """An MP4's track titles (its ``udta/name``, which the demuxer says as ``name``) were lost into
    .mp4 (whose muxer writes a track's name from ``title`` alone) and became a Matroska NAME tag, not
    the track's name, in .mkv; now each stream keeps its title. Found by an outside pass against
    ffprobe (ffmpeg loses them the same way)."""
    src = _multi(tmp_path, ".mp4")
    _, streams = _read(src)
    assert [tags.get("name") for _, tags, _ in streams] == ["Main video", "English", "Français", "Deutsch"]
    for out_ext in (".mp4", ".mkv"):
        out = str(tmp_path / f"out{out_ext}")
        transcode(src, out, TranscodeOptions(codec=codec))
        _, streams = _read(out)
        # The MP4 demuxer says the title as ``name`` again, Matroska's as ``title``.
        titles = [tags.get("title", tags.get("name")) for _, tags, _ in streams[:4]]
        assert titles == ["Main video", "English", "Français", "Deutsch"], (out_ext, streams)
        assert not any("name" in tags and "title" in tags for _, tags, _ in streams), (out_ext, streams)


def test_marks_the_container_cannot_hold_are_said(tmp_path: Path) -> None:
    """A forced, hearing-impaired subtitle stream lost its marks into .webm (hearing impaired) and
    .mov (both) with nothing said, the muxer leaving them out; now each mark lost is a note (in the
    summary and ``--json``'s stream notes). Into .mkv and .mp4, which hold both, nothing is said.
    Found by an outside pass on metadata against ffprobe."""
    src = _multi(tmp_path, ".mkv")
    expected = {
        ".webm": "subtitle stream 3's hearing impaired mark dropped: the webm container cannot hold it",
        ".mov": "subtitle stream 3's forced and hearing impaired marks dropped: the mov container cannot "
        "hold them",
        ".mkv": None,
        ".mp4": None,
    }
    for out_ext, said in expected.items():
        out = str(tmp_path / f"out{out_ext}")
        stats = transcode(src, out, TranscodeOptions(codec="copy" if out_ext != ".webm" else None))
        notes = [n for n in summary_notes(stats) if " mark" in n]
        assert notes == ([said] if said else []), (out_ext, notes)
        _, streams = _read(out)
        flags = streams[3][2]
        held = {".webm": Disposition.forced, ".mov": 0}.get(out_ext)
        if held is not None:  # what the note says is so
            assert flags & int(Disposition.forced | Disposition.hearing_impaired) == int(held), out_ext


@pytest.mark.parametrize("codec", [None, "copy"])
def test_what_mpeg_ts_leaves_out_is_said_once_a_kind(tmp_path: Path, codec: str | None) -> None:
    """Into MPEG-TS the container's tags but its service name and provider (the title standing in for
    the name), the streams' titles, the default mark and the marks but the language descriptor's
    (hearing / visually impaired) were dropped with nothing said; now one note a kind of loss says
    each, and the file read back bears them out. Found by an outside pass."""
    marks = Disposition.visual_impaired | Disposition.comment
    src = _multi(tmp_path, ".mkv", tags={"artist": "Someone", "comment": "Made here"}, french_marks=marks)
    out = str(tmp_path / "out.ts")
    stats = transcode(src, out, TranscodeOptions(codec=codec))
    video = "the video" if codec is None else "video stream 0"
    lost = [n for n in summary_notes(stats) if "mpegts" in n and "dropped stream" not in n]
    assert lost == [
        "audio stream 2's commentary mark dropped: the mpegts container cannot hold it",
        "the container's artist, comment tags dropped: the mpegts container holds a service name and "
        "provider alone; its title kept as the service name",
        f"the titles of {video}, audio stream 1 and audio stream 2 dropped: the mpegts container holds no "
        "stream titles",
        "the default mark of audio stream 1 dropped: the mpegts container holds none (players take the "
        "first audio stream and show no subtitles unasked)",
    ], lost
    tags, streams = _read(out)  # what the notes say is so
    assert not {"artist", "comment", "title"} & set(tags)
    audio = [(stream_tags, flags) for kind, stream_tags, flags in streams if kind == "audio"]
    assert [t.get("language") for t, _ in audio] == ["eng", "fra"]  # the language descriptor holds it
    assert not any("title" in t for t, _ in audio)
    assert not _has(audio[0][1], Disposition.default)
    assert _has(audio[1][1], Disposition.visual_impaired) and not _has(audio[1][1], Disposition.comment)
    with open(out, "rb") as written:
        assert b"My Title" in written.read()  # as the service name (SDT)
