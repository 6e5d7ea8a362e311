"""``alpha2 probe FILE`` and :func:`alpha2.api.media.describe`: what a file holds, from the container
(every stream, languages, marks) and, for its video, from decoding the first frame (resolved colour,
what was guessed, HDR metadata, the decoder); one line per bad file while the others are described."""

from __future__ import annotations

import dataclasses
import fractions
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import av
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from media import garbage, make_audio_only, make_clip

from alpha2.api.describe import StreamFacts
from alpha2.api.media import MediaDescription, describe
from alpha2.apps.cli import main
from alpha2.apps.probe_files import channels_text, frames_text
from alpha2.ffmpeg_bridge.side_streams import StreamKind
from alpha2.gpu.colour import ColourMatrix, ColourRange
from alpha2.gpu.geometry import Rotation

Capsys = pytest.CaptureFixture[str]


def _rich_mkv(tmp_path: Path) -> str:
    """Video (untagged colour, HD size), an English default Opus stream, a forced French SubRip track
    with a title, and a font attachment."""
    clip = make_clip(tmp_path / "base.mkv", width=1280, height=720, frames=6, audio=True)
    path = str(tmp_path / "rich.mkv")
    ms = fractions.Fraction(1, 1000)
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        audio = out.add_stream_from_template(inp.streams.audio[0])
        audio.metadata["language"] = "eng"
        audio.disposition = av.stream.Disposition.default
        text = out.add_mux_stream("subrip", time_base=ms)
        text.metadata["language"] = "fre"
        text.metadata["title"] = "Forced narrative"
        text.disposition = av.stream.Disposition.forced
        out.add_attachment("font.ttf", "application/x-truetype-font", b"\0\1\0\0FAKEFONT")
        for packet in inp.demux():
            if packet.dts is None:
                continue
            packet.stream = video if packet.stream.type == "video" else audio
            out.mux(packet)
        cue = av.Packet(b"Bonjour")
        cue.pts = cue.dts = 0
        cue.duration, cue.time_base, cue.stream = 150, ms, text
        out.mux(cue)
    return path


def test_describe_says_every_stream_and_the_decoded_video(tmp_path: Path) -> None:
    path = _rich_mkv(tmp_path)
    info = describe(path, hwaccel="none")
    assert isinstance(info, MediaDescription)
    facts = info.file
    assert facts.format_long == "Matroska / WebM" and facts.size_bytes == os.path.getsize(path)
    assert facts.duration_seconds is not None and 0.1 < facts.duration_seconds < 0.5
    kinds = [s.kind for s in facts.streams]
    assert kinds == [StreamKind.VIDEO, StreamKind.AUDIO, StreamKind.SUBTITLE, StreamKind.ATTACHMENT]
    video, audio, subtitle, attachment = facts.streams
    assert (video.codec, video.width, video.height, video.pixel_format) == ("h264", 1280, 720, "yuv420p")
    assert video.frame_rate == 30 and video.colour_tags == ("unknown",) * 4  # an untagged clip
    assert (audio.codec, audio.sample_rate, audio.channels, audio.language, audio.default) == (
        "opus",
        48000,
        2,
        "eng",
        True,
    )
    assert (subtitle.codec, subtitle.text, subtitle.language) == ("srt", True, "fre")  # FFmpeg's decoder
    assert subtitle.forced and not subtitle.default
    assert subtitle.title == "Forced narrative"
    assert (attachment.filename, attachment.codec) == ("font.ttf", "application/x-truetype-font")
    # The decoded video: HD and untagged, so BT.709 as the player shows it, and said as guessed.
    assert info.video_index == 0 and info.video is not None and info.video_error is None
    assert info.video.colour is not None and info.video.colour.matrix is ColourMatrix.BT709
    assert info.video.colour.range is ColourRange.LIMITED
    assert any("matrix BT.709 guessed from the size" in note for note in info.colour_guesses)
    assert info.decoder is not None and info.decoder.startswith("none")
    data = json.loads(json.dumps(info.as_dict()))
    assert [s["kind"] for s in data["streams"]] == ["video", "audio", "subtitle", "attachment"]
    assert "sample_rate" not in data["streams"][0] and "width" not in data["streams"][1]
    assert data["video"]["colour"]["matrix"] == "bt709" and data["video"]["colour_guesses"]


def test_describe_without_decoding_and_of_files_without_video(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "turned.mp4", width=64, height=48, frames=4, rotation_ccw=90)
    info = describe(clip.path, decode=False)
    assert info.video is None and info.decoder is None and info.video_index is None
    (video,) = info.file.streams
    assert (video.width, video.height, video.frame_count) == (64, 48, 4)
    # The display matrix comes with the first frame: decoded, the picture is shown turned.
    decoded = describe(clip.path, hwaccel="none")
    assert decoded.video is not None and decoded.video.rotation is Rotation.CW270
    assert (decoded.video.width, decoded.video.height) == (48, 64)
    sound = describe(make_audio_only(tmp_path / "tone.mka"))
    assert [s.kind for s in sound.file.streams] == [StreamKind.AUDIO] and sound.video is None


def test_a_tagged_clip_is_said_as_tagged(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "sd.mkv", width=64, height=48, frames=3, colorspace=6, color_range=2)
    info = describe(clip.path, hwaccel="none")
    tags = info.file.streams[0].colour_tags
    assert tags is not None and tags[0] == "smpte170m" and tags[3] == "full"
    assert info.video is not None and info.video.colour is not None
    assert info.video.colour.matrix is ColourMatrix.SMPTE170M and info.video.colour.range is ColourRange.FULL


def _run(capsys: Capsys, *args: str, columns: int = 80) -> tuple[int, str, str]:
    os.environ["COLUMNS"] = str(columns)
    try:
        code = main(["probe", *args])
    finally:
        os.environ.pop("COLUMNS", None)
    out, err = capsys.readouterr()
    return code, out, err


def test_probe_file_prints_within_80_columns(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rich_mkv(tmp_path)
    turned = make_clip(tmp_path / "turned.mp4", width=64, height=48, frames=4, rotation_ccw=90).path
    monkeypatch.chdir(tmp_path)
    path = "rich.mkv"
    code, out, err = _run(capsys, path)
    assert code == 0, err
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    text = " ".join(" ".join(line.split()) for line in lines)
    assert lines[0].startswith(f"{path}: Matroska / WebM")
    for expected in (
        "#0 video h264",
        "1280x720, 30 fps, yuv420p",
        "matrix BT.709 guessed from the size (untagged)",
        "#1 audio opus, 48 kHz, stereo",
        "eng, default",
        '#2 subtitle srt, text, fre, "Forced narrative", forced',
        "#3 attachment font.ttf (application/x-truetype-font)",
    ):
        assert expected in text, (expected, out)
    assert "decoder: software (" in text or "decoder: NVDEC (" in text, out  # NVDEC on a GPU machine
    code, out, err = _run(capsys, os.path.basename(turned))
    assert code == 0, err
    assert "48x64 shown (stored 64x48, turned 270° clockwise)" in " ".join(out.split()), out


def test_probe_files_json_lists_them_and_bad_ones_are_said_each_in_a_line(
    tmp_path: Path, capsys: Capsys
) -> None:
    good = make_clip(tmp_path / "good.mp4", frames=3).path
    bad = garbage(str(tmp_path / "bad.mp4"))
    missing = str(tmp_path / "missing.mp4")
    code, out, err = _run(capsys, good, bad, missing, "--json", "--no-decode")
    assert code == 1
    data: dict[str, Any] = json.loads(out)
    assert data["command"] == "probe" and [f["path"] for f in data["files"]] == [good]
    assert data["files"][0]["video"] is None, "--no-decode: nothing decoded"
    assert [e["input"] for e in data["errors"]] == [bad, missing]
    # What a script can do about each, as batch's --json rows say it (probe's said the words alone).
    assert [e["error_kind"] for e in data["errors"]] == ["invalid_input", "invalid_input"]
    lines = err.splitlines()
    assert len(lines) == 2 and all(line.startswith("alpha2: error: ") for line in lines), err
    assert "Traceback" not in err


def test_probe_files_refuses_the_adapter_options(tmp_path: Path, capsys: Capsys) -> None:
    good = make_clip(tmp_path / "good.mp4", frames=3).path
    code, out, err = _run(capsys, good, "--submit")
    assert code == 1 and out == ""
    assert err.strip() == (
        "alpha2: error: --policy and --submit are for the adapter table ('alpha2 probe' without files); "
        "'alpha2 probe FILE' describes media files"
    )


def test_hdr_metadata_is_said(tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    from hdr_clips import make_hdr_clip

    from alpha2.gpu.colour import TransferCharacteristic
    from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata, MasteringDisplay
    from alpha2.gpu.primaries import Chromaticities

    p3 = Chromaticities((0.68, 0.32), (0.265, 0.69), (0.15, 0.06), (0.3127, 0.329))
    hdr = HdrMetadata(MasteringDisplay(p3, 0.005, 1000.0), ContentLightLevel(1000, 400))
    make_hdr_clip(tmp_path / "hdr.mkv", TransferCharacteristic.SMPTE2084, hdr, size=(256, 144))
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, "hdr.mkv")
    assert code == 0, err
    text = " ".join(out.split())
    assert "hevc (Main 10), 256x144, 25 fps, yuv420p10le" in text, out
    assert "transfer smpte2084, range limited (as tagged)" in text, out
    assert "HDR: mastered on P3 D65, 0.005-1000 cd/m², MaxCLL 1000, MaxFALL 400 cd/m²" in text, out
    code, out, err = _run(capsys, "hdr.mkv", "--json")
    video = json.loads(out)["files"][0]["video"]
    assert video["hdr"] == {
        "mastering_min_cd_m2": 0.005,
        "mastering_max_cd_m2": 1000.0,
        # the display's colour points, as ffprobe gives them (the text says "P3 D65"; --json lacked them)
        "mastering_primaries": {
            "red": [0.68, 0.32],
            "green": [0.265, 0.69],
            "blue": [0.15, 0.06],
            "white": [0.3127, 0.329],
        },
        "max_cll_cd_m2": 1000,
        "max_fall_cd_m2": 400,
    }


@pytest.mark.parametrize(
    ("channels", "layout", "said"),
    [
        (1, "mono", "mono"),
        (1, None, "mono"),  # ASF's WMA, MXF's PCM: a count in no order (FFmpeg's "1 channels")
        (2, None, "stereo"),
        (2, "stereo", "stereo"),
        (6, "5.1", "5.1"),
        (6, "5.1(side)", "5.1(side)"),
        (8, "7.1", "7.1"),
        (3, "3.0", "3 channels (3.0)"),
        (4, "quad", "4 channels (quad)"),
        (6, None, "6 channels"),
        (3, "3 channels (FL+FR+LFE)", "3 channels (FL+FR+LFE)"),
    ],
)
def test_channels_are_said_alike(channels: int, layout: str | None, said: str) -> None:
    assert channels_text(channels, layout) == said


def _ffmpeg(*args: str) -> None:
    subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args],
        check=True,
        stdin=subprocess.DEVNULL,
    )


needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg command")


@needs_ffmpeg
def test_mono_is_mono_in_wmv_mxf_and_mkv(tmp_path: Path, capsys: Capsys) -> None:
    """WMV and MXF said "1 channels" where other containers say "mono"."""
    sources = ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-f", "lavfi", "-i", "sine", "-t", "0.4"]
    made = {
        "a.wmv": ["-c:v", "wmv2", "-c:a", "wmav2", "-ac", "1"],
        "a.mxf": ["-c:v", "mpeg2video", "-c:a", "pcm_s16le", "-ac", "1", "-ar", "48000"],
        "a.mkv": ["-c:v", "libx264", "-c:a", "aac", "-ac", "1"],
    }
    for name, codecs in made.items():
        _ffmpeg(*sources, *codecs, str(tmp_path / name))
    paths = [str(tmp_path / name) for name in made]
    code, out, err = _run(capsys, *paths, "--no-decode")
    assert code == 0, err
    audio = [line for line in out.splitlines() if "#1 audio" in line]
    assert len(audio) == 3 and all(", mono," in line for line in audio), out
    assert "channels" not in out, out
    code, out, err = _run(capsys, *paths, "--no-decode", "--json")
    for entry in json.loads(out)["files"]:
        stream = entry["streams"][1]
        assert stream["channels"] == 1 and stream["layout"] in (None, "mono"), stream


@needs_ffmpeg
def test_frame_counts_are_said_as_the_containers(tmp_path: Path, capsys: Capsys) -> None:
    """A count is the container's: an MP4 cut with an edit list counted every sample (235 frames where
    152 play); its count is not given as what plays, and a plain file's is said to be the container's.
    Nothing is decoded for it."""
    long = str(tmp_path / "long.mp4")
    _ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "20", "-c:v", "libx264", long)
    cut = str(tmp_path / "editlist.mp4")
    _ffmpeg("-ss", "3.3", "-i", long, "-c", "copy", "-t", "6", cut)
    with av.open(cut) as container:
        stream = container.streams.video[0]
        listed = stream.frames
        shown = sum(1 for _ in container.decode(stream))
    assert listed > shown + 10  # the edit list hides the samples before the cut
    code, out, err = _run(capsys, long, cut, "--no-decode")
    assert code == 0, err
    text = " ".join(out.split())
    assert "500 frames (container)" in text, out
    assert f"(the container lists {listed})" in text and f"{listed} frames" not in text, out
    about = int(text.split("about ")[1].split(" frames")[0])
    assert abs(about - shown) <= 3, (about, shown)
    code, out, err = _run(capsys, cut, "--no-decode", "--json")
    video = json.loads(out)["files"][0]["streams"][0]
    assert video["frame_count"] == listed and abs(video["frames_by_duration"] - shown) <= 3


def test_frames_text_without_a_duration_is_the_containers_count() -> None:
    facts = StreamFacts(0, StreamKind.VIDEO, "mpeg4", frame_rate=25.0, frame_count=101)
    assert frames_text(facts) == "101 frames (container)"
    agreeing = StreamFacts(
        0, StreamKind.VIDEO, "mpeg4", duration_seconds=4.04, frame_rate=25.0, frame_count=101
    )
    assert not agreeing.frame_count_disagrees and frames_text(agreeing) == "101 frames (container)"


def test_a_variable_rate_s_count_is_the_containers() -> None:
    """A GIF of 60 frames in 2 s (delays of 3 and 4 hundredths): FFmpeg's average rate, from its first
    frames, is 33.3 fps, and the count was given as 'about 67 frames (the container lists 60)'."""
    gif = StreamFacts(0, StreamKind.VIDEO, "gif", duration_seconds=2.0, frame_rate=100 / 3, frame_count=60)
    assert gif.frame_count_disagrees  # a constant rate: an edit list's sign
    gif = dataclasses.replace(gif, variable_rate=(25.0, 33.3))
    assert not gif.frame_count_disagrees and frames_text(gif) == "60 frames (container)"


def test_probe_says_interlaced_video_and_its_field_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by an outside pass: probe said nothing of interlacing, where ffprobe says field_order=tt."""
    from media import make_interlaced_mpeg2

    clip = make_interlaced_mpeg2(tmp_path / "i.mpg", frames=6)
    code, out, _err = _run(capsys, clip)
    assert code == 0 and "interlaced (bottom field first)" in " ".join(out.split()), out  # ffprobe: bb
    assert main(["probe", clip, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    streams = data["files"][0]["streams"] if "files" in data else data["streams"]
    assert streams[0]["field_order"] == "bottom field first"


def test_probe_says_a_variable_frame_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by an outside pass: a stream of 30 fps then 15 fps said '30 fps' in Matroska and '15.386 fps'
    in MP4, neither 'variable'. The first packets' times tell it (demuxed, not decoded)."""
    vfr = make_clip(tmp_path / "v.mkv", width=64, height=48, frames=40, vfr=True).path
    steady = make_clip(tmp_path / "c.mkv", width=64, height=48, frames=40).path
    code, out, _err = _run(capsys, vfr, steady)
    assert code == 0
    text = " ".join(out.split())
    assert text.count("(variable: ") == 1 and "variable" in text.split("c.mkv")[0], out
    assert main(["probe", vfr, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    streams = data["files"][0]["streams"] if "files" in data else data["streams"]
    low, high = streams[0]["variable_rate"]
    assert 0 < low < high, streams[0]


def test_no_decode_still_says_the_streams_colour_tags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by an outside pass: with --no-decode the colour line was gone, though the tags are in the
    stream's parameters (ffprobe shows them without decoding)."""
    from hdr_clips import PQ, make_hdr_clip

    hdr = tmp_path / "pq.mkv"
    make_hdr_clip(hdr, PQ, None)
    plain = make_clip(tmp_path / "plain.mp4", width=64, height=48, frames=2).path
    code, out, _err = _run(capsys, "--no-decode", str(hdr), plain)
    text = " ".join(out.split())
    assert code == 0 and "colour tags: matrix bt2020_ncl, primaries bt2020, transfer smpte2084" in text, out
    assert "colour tags: none (not decoded: nothing guessed)" in text, out


def _remuxed(source: str, path: str, video_tags: dict[str, str] | None = None, video: bool = True) -> str:
    """``source``'s video and audio remuxed into ``path``, the video stream tagged with ``video_tags``;
    ``video=False``: its video stream is written without a packet."""
    with av.open(source) as inp, av.open(path, "w") as out:
        streams = {}
        for stream in (inp.streams.video[0], *inp.streams.audio):
            streams[stream.index] = out.add_stream_from_template(stream)
        streams[0].metadata.update(video_tags or {})
        for packet in inp.demux():
            if packet.dts is None or (packet.stream.type == "video" and not video):
                continue
            packet.stream = streams[packet.stream.index]
            out.mux(packet)
    return path


def test_probe_says_every_mark_a_stream_is_picked_by(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "base.mkv", frames=3, audio=True).path
    path = str(tmp_path / "marks.mkv")
    flags = av.stream.Disposition
    ms = fractions.Fraction(1, 1000)
    with av.open(clip) as inp, av.open(path, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        described = out.add_stream_from_template(inp.streams.audio[0])
        described.disposition = flags.default | flags.visual_impaired
        commentary = out.add_stream_from_template(inp.streams.audio[0])
        commentary.disposition = flags.comment | flags.original
        sdh = out.add_mux_stream("subrip", time_base=ms)
        sdh.metadata.update(language="eng", title="SDH")
        sdh.disposition = flags.hearing_impaired
        for packet in inp.demux():
            if packet.dts is None:
                continue
            if packet.stream.type == "audio":
                copy = av.Packet(bytes(packet))
                copy.pts, copy.dts, copy.time_base = packet.pts, packet.dts, packet.time_base
                copy.stream = commentary
                out.mux(copy)
            packet.stream = video if packet.stream.type == "video" else described
            out.mux(packet)
        cue = av.Packet(b"[door slams]")
        cue.pts = cue.dts = 0
        cue.duration, cue.time_base, cue.stream = 150, ms, sdh
        out.mux(cue)
    code, out_text, err = _run(capsys, path, "--no-decode")
    assert code == 0, err
    text = " ".join(out_text.split())
    assert "fltp, default, visual impaired" in text, out_text
    assert "fltp, commentary, original" in text, out_text
    assert '#3 subtitle srt, text, eng, "SDH", hearing impaired' in text, out_text
    code, out_text, err = _run(capsys, path, "--no-decode", "--json")
    streams = json.loads(out_text)["files"][0]["streams"]
    assert [s["hearing_impaired"] for s in streams] == [False, False, False, True]
    assert [s["visual_impaired"] for s in streams] == [False, True, False, False]
    assert [s["commentary"] for s in streams] == [False, False, True, False]
    assert [s["original"] for s in streams] == [False, False, True, False]


def test_probe_says_a_timecode_track_and_its_start(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "base.mp4", frames=3).path
    # FFmpeg's MOV muxer writes a timecode track (tmcd) for the video's timecode tag.
    path = _remuxed(clip, str(tmp_path / "tc.mov"), {"timecode": "01:00:00:00"})
    info = describe(path, decode=False)
    data = info.file.streams[1]
    assert (data.kind, data.codec, data.codec_tag, data.timecode) == (
        StreamKind.DATA,
        "",
        "tmcd",
        "01:00:00:00",
    )
    code, out, err = _run(capsys, path, "--no-decode")
    assert code == 0, err
    assert "#1 data timecode (tmcd) 01:00:00:00" in " ".join(out.split()), out
    assert "unknown codec" not in out and out.count("01:00:00:00") == 1, out  # said once, on its track
    code, out, err = _run(capsys, path, "--no-decode", "--json")
    said = json.loads(out)["files"][0]["streams"][1]
    assert (said["codec_tag"], said["timecode"]) == ("tmcd", "01:00:00:00")
    # Matroska keeps it as the video stream's TIMECODE tag: said there.
    tagged = _remuxed(clip, str(tmp_path / "tc.mkv"), {"timecode": "01:00:00:00"})
    code, out, err = _run(capsys, tagged, "--no-decode")
    assert "timecode 01:00:00:00" in " ".join(out.split()), out


def test_probe_says_a_video_stream_without_frames(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "base.mkv", frames=6, audio=True).path
    path = _remuxed(clip, str(tmp_path / "empty.mkv"), video=False)
    assert describe(path, decode=False).file.streams[0].empty
    assert not describe(clip, decode=False).file.streams[0].empty
    code, out, err = _run(capsys, path, "--no-decode")
    assert code == 0, err
    assert "no frames (the stream holds no packets)" in " ".join(out.split()), out
    code, out, err = _run(capsys, clip, "--no-decode")
    assert "no frames" not in out, out
