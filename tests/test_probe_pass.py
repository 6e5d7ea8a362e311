"""``alpha2 probe FILE`` against ffprobe on the same inputs: what an outside pass found."""

from __future__ import annotations

import fractions
import shutil
import subprocess
from pathlib import Path

import pytest

from alpha2.apps.cli import main
from alpha2.ffmpeg_bridge.describe import describe_file

needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg command")


def _ffmpeg(*args: str) -> None:
    subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args],
        check=True,
        stdin=subprocess.DEVNULL,
    )


@needs_ffmpeg
def test_the_pixel_shape_is_the_containers_where_it_says_one(tmp_path: Path) -> None:
    """A remux given a display aspect (Matroska's display size, MP4's pasp) over square coded pixels
    was said square, and a container's square over the bitstream's 4:3 was said 4:3; ffprobe and FFmpeg's
    players take the container's (av_guess_sample_aspect_ratio)."""
    square = str(tmp_path / "square.mp4")
    wide = str(tmp_path / "wide.mp4")
    src = ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "0.2", "-c:v", "libx264"]
    _ffmpeg(*src, square)
    _ffmpeg(*src, "-vf", "setsar=4/3", wide)
    for name in ("out.mkv", "out.mp4"):
        _ffmpeg("-i", square, "-c", "copy", "-aspect", "16:9", str(tmp_path / name))
        facts = describe_file(tmp_path / name).streams[0]
        assert facts.sample_aspect_ratio == fractions.Fraction(4, 3), name
        assert facts.shown_size == (85, 48), name
    _ffmpeg("-i", wide, "-c", "copy", "-aspect", "4:3", str(tmp_path / "back.mkv"))
    assert describe_file(tmp_path / "back.mkv").streams[0].sample_aspect_ratio is None


@needs_ffmpeg
def test_a_files_own_timecode_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An MXF's start timecode, and the one FFmpeg writes into a Matroska file, are the file's tag on no
    stream: ffprobe showed 'timecode=09:59:50:00' and 'alpha2 probe' nothing."""
    src = ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "0.2", "-c:v", "mpeg2video"]
    paths = [str(tmp_path / name) for name in ("tc.mxf", "tc.mkv")]
    for path in paths:
        _ffmpeg(*src, "-timecode", "09:59:50:00", path)
    code = main(["probe", "--no-decode", *paths])
    out = capsys.readouterr().out
    assert code == 0
    said = [line.split() for line in out.splitlines() if line.lstrip().startswith("timecode")]
    assert said == [["timecode", "09:59:50:00"]] * 2, out


def test_the_mastering_displays_primaries_are_said() -> None:
    """ffprobe gives the mastering display's primaries (red_x=34000/50000, ...); probe gave its
    luminance alone, so a P3 grade and a BT.2020 one read alike."""
    from alpha2.apps.probe_files import _hdr_text
    from alpha2.gpu.hdr import HdrMetadata, MasteringDisplay
    from alpha2.gpu.primaries import Chromaticities

    def said(red: tuple[float, float]) -> str:
        points = Chromaticities(red, (0.17, 0.797), (0.131, 0.046), (0.3127, 0.329))
        return _hdr_text(HdrMetadata(MasteringDisplay(points, 0.0001, 1000.0), None))

    assert said((0.708, 0.292)) == "mastered on BT.2020, 0.0001-1000 cd/m²"
    assert (
        said((0.7, 0.3))
        == "mastered on R 0.7,0.3 G 0.17,0.797 B 0.131,0.046 W 0.3127,0.329, 0.0001-1000 cd/m²"
    )


@needs_ffmpeg
def test_a_pictures_rate_is_said_to_be_ffmpegs_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PNG, a JPEG or a numbered sequence of them has no rate: the 25 fps said is FFmpeg's default
    for pictures, and was said as if the file held it ('png, 320x240, 25 fps, rgb24')."""
    for name in ("still.png", "still.jpg"):
        _ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1", str(tmp_path / name))
    _ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "0.2", str(tmp_path / "seq%03d.png"))
    _ffmpeg(
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=64x48:rate=25",
        "-t",
        "0.2",
        "-pix_fmt",
        "yuv420p",
        str(tmp_path / "clip.y4m"),
    )
    names = ("still.png", "still.jpg", "seq%03d.png", "clip.y4m")
    assert main(["probe", "--no-decode", *(str(tmp_path / name) for name in names)]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "#0 video" in line]
    default = "25 fps (FFmpeg's default: pictures carry no rate)"
    assert [default in line for line in said] == [True, True, True, False], said


@needs_ffmpeg
def test_the_decoder_and_the_transcode_take_the_container_s_pixel_shape(tmp_path: Path) -> None:
    """After the probe took the container's pixel shape, the decoder and the transcode still took the
    bitstream's: a remux given -aspect 16:9 over square 64x48 pixels was transcoded square (4:3), where
    the ffmpeg command keeps 16:9."""
    import av

    from alpha2.ffmpeg_bridge.decode import DecodeSession

    square = str(tmp_path / "square.mp4")
    _ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "0.2", "-c:v", "libx264", square)
    wide = tmp_path / "wide.mkv"
    _ffmpeg("-i", square, "-c", "copy", "-aspect", "16:9", str(wide))
    with DecodeSession(str(wide), hwaccel="none") as session:
        assert session.info.sample_aspect_ratio == fractions.Fraction(4, 3)
        frame = session.next_frame()
        assert frame is not None
        with frame:
            assert frame.metadata.sample_aspect == fractions.Fraction(4, 3)
    out = tmp_path / "out.mp4"
    assert main(["transcode", str(wide), str(out), "--quiet"]) == 0
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        shape = stream.sample_aspect_ratio or stream.codec_context.sample_aspect_ratio
        assert (stream.width, stream.height, shape) == (64, 48, fractions.Fraction(4, 3))


def test_a_file_that_is_no_media_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A text file named .mp4 said FFmpeg's words alone: "opening 'notes.mp4': Invalid data found when
    processing input", which read as alpha2's own fault."""
    path = tmp_path / "notes.mp4"
    path.write_text("a shopping list, not a video\n" * 40)
    assert main(["probe", str(path)]) == 1
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and "no media FFmpeg can read" in err and "not a video or sound file" in err
    ), err


@needs_ffmpeg
def test_the_file_s_title_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The file's title tag (a film's) was in --json only; ffprobe and players show it."""
    path = str(tmp_path / "titled.mkv")
    _ffmpeg(
        "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "0.2", "-metadata", "title=Film title", path
    )
    assert main(["probe", "--no-decode", path]) == 0
    out = capsys.readouterr().out
    assert [line.split(None, 1) for line in out.splitlines() if line.lstrip().startswith("title")] == [
        ["title", "Film title"]
    ], out


def test_a_turned_video_s_stream_says_its_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A phone's portrait MP4 (its tkhd matrix turns it) was said 64x48 unturned with --no-decode, where
    ffprobe says the display matrix without decoding; and --json's stream said rotation 'none' and shown
    size 64x48 beside the decoded video's 'cw270' and 48x64 (a Matroska's turn likewise)."""
    import json

    from tests.media import make_clip

    mp4 = make_clip(tmp_path / "portrait.mp4", frames=4, rotation_ccw=90).path
    mkv = make_clip(tmp_path / "portrait.mkv", frames=4, rotation_ccw=-90).path
    assert main(["probe", "--no-decode", mp4]) == 0
    out = capsys.readouterr().out
    assert "48x64 shown (stored 64x48, turned 270° clockwise)" in out, out
    assert main(["probe", "--json", mp4, mkv]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    said = [(f["streams"][0]["rotation"], f["streams"][0]["shown_size"]) for f in files]
    decoded = [(f["video"]["rotation"], f["video"]["display_size"]) for f in files]
    assert said == decoded == [("cw270", [48, 64]), ("cw90", [48, 64])], (said, decoded)


def test_text_subtitles_are_told_from_pictures_by_ffmpeg_s_descriptor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SAMI file (text, as FFmpeg's codec descriptor marks it) was said '#0 subtitle sami, pictures':
    only the names of a few text formats were known as text. A PGS track stays pictures."""
    import av

    smi = tmp_path / "talk.smi"
    smi.write_text(
        "<SAMI><BODY><SYNC Start=1000><P Class=ENCC>Hello</P></SYNC>"
        "<SYNC Start=2000><P Class=ENCC>&nbsp;</P></SYNC></BODY></SAMI>\n"
    )
    pgs = str(tmp_path / "pgs.mkv")
    ms = fractions.Fraction(1, 1000)
    with av.open(pgs, "w") as out:
        stream = out.add_mux_stream("hdmv_pgs_subtitle", time_base=ms)
        packet = av.Packet(b"\x80\x00\x00")  # an end-of-display segment's header, enough to mux
        packet.pts = packet.dts = 0
        packet.time_base, packet.stream = ms, stream
        out.mux(packet)
    assert main(["probe", str(smi), pgs]) == 0
    said = [line.split(None, 2)[2] for line in capsys.readouterr().out.splitlines() if "#0 subtitle" in line]
    assert said == ["sami, text", "pgssub, pictures"], said


def test_a_raw_h264_s_rate_is_its_bitstream_s(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 30 fps .h264 (an elementary stream: no container times) was said '25 fps', the raw demuxer's
    default, while alpha2.open and the decoder time its frames by the bitstream's 30."""
    import av

    from tests.media import make_clip

    clip = make_clip(tmp_path / "clip.mp4", frames=20, rate=30)
    raw = str(tmp_path / "clip.h264")
    with av.open(clip.path) as inp, av.open(raw, "w", format="h264") as out:
        stream = out.add_stream_from_template(inp.streams.video[0])
        for packet in inp.demux(inp.streams.video[0]):
            if packet.dts is not None:
                packet.stream = stream
                out.mux(packet)
    assert describe_file(raw).streams[0].frame_rate == 30
    assert main(["probe", raw]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "#0 video" in line]
    assert len(said) == 1 and ", 30 fps, " in said[0], said
