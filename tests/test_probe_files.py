"""``alpha2 probe FILE`` and :func:`alpha2.api.media.describe`: what a file holds, from the container
(every stream, languages, marks) and, for its video, from decoding the first frame (resolved colour,
what was guessed, HDR metadata, the decoder); one line per bad file while the others are described."""

from __future__ import annotations

import fractions
import json
import os
import sys
from pathlib import Path
from typing import Any

import av
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from media import garbage, make_audio_only, make_clip

from alpha2.api.media import MediaDescription, describe
from alpha2.apps.cli import main
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
    assert "48x64 shown (stored 64x48, turned 270°)" in " ".join(out.split()), out


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
    assert "HDR: mastered 0.005-1000 cd/m², MaxCLL 1000, MaxFALL 400 cd/m²" in text, out
    code, out, err = _run(capsys, "hdr.mkv", "--json")
    video = json.loads(out)["files"][0]["video"]
    assert video["hdr"] == {
        "mastering_min_cd_m2": 0.005,
        "mastering_max_cd_m2": 1000.0,
        "max_cll_cd_m2": 1000,
        "max_fall_cd_m2": 400,
    }
