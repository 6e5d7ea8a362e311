"""Subtitles: text streams decoded with PyAV (SubRip muxed into MKV here, ASS, WebVTT), sidecar files
with the input's name, ``--sub`` / ``--no-sub`` / ``j``, and the text drawn over the video."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api import pipeline
from alpha2.api.playback import Player, PlayOptions
from alpha2.api.subtitles import open_subtitles, sidecar_files
from alpha2.ffmpeg_bridge.subtitles import ass_text, read_cues, subtitle_tracks
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size
from tests.media import make_clip

SRT = """1
00:00:00,200 --> 00:00:00,600
Hello <i>world</i>

2
00:00:00,700 --> 00:00:00,900
Second line
two
"""

ASS = r"""[Script Info]
ScriptType: v4.00+
PlayResX: 384
PlayResY: 288

[V4+ Styles]
Format: Name, Fontname, Fontsize, PrimaryColour, Bold, Italic, Alignment, MarginL, MarginR, MarginV
Style: Default,Arial,20,&H00FFFFFF,0,0,2,10,10,10

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
Dialogue: 0,0:00:00.10,0:00:00.80,Default,,0,0,0,,{\an8}{\b1}Bold{\b0} words\Nsecond {\c&H0000FF&}line
"""

VTT = """WEBVTT

00:00.300 --> 00:00.800
<i>Web</i> cue
"""


def mux_srt(video: str, srt: Path, out: Path) -> str:
    """``video``'s stream and the SubRip file's cues in one MKV, remuxed with PyAV."""
    with av.open(video) as source, av.open(str(srt)) as subs, av.open(str(out), "w") as mkv:
        vin, sin = source.streams.video[0], subs.streams.subtitles[0]
        vout = mkv.add_stream_from_template(vin)
        sout = mkv.add_stream_from_template(sin)
        sout.metadata["language"] = "eng"
        for packet in source.demux(vin):
            if packet.dts is not None:
                packet.stream = vout
                mkv.mux(packet)
        for packet in subs.demux(sin):
            if packet.dts is not None:
                packet.stream = sout
                mkv.mux(packet)
    return str(out)


@pytest.fixture
def video(tmp_path: Path) -> str:
    return make_clip(tmp_path / "film.mkv", width=320, height=180, frames=30).path


def test_ass_override_tags_are_stripped() -> None:
    assert ass_text(r"{\an8}{\i1}Hello{\i0}\Nworld") == "Hello\nworld"
    assert ass_text(r"{\pos(10,20)}a\hb") == "a\u00a0b"
    assert ass_text(r"{\p1}m 0 0 l 10 10{\p0}after") == "after"


def test_srt_muxed_into_mkv(video: str, tmp_path: Path) -> None:
    srt = tmp_path / "cues.srt"
    srt.write_text(SRT, encoding="utf-8")
    mkv = mux_srt(video, srt, tmp_path / "subbed.mkv")
    (track,) = subtitle_tracks(mkv)
    assert track.text and track.codec in ("subrip", "srt") and track.language == "eng"
    cues = read_cues(mkv, track.stream_index)
    assert [(round(c.start_s, 3), round(c.end_s, 3), c.text) for c in cues] == [
        (0.2, 0.6, "Hello world"),
        (0.7, 0.9, "Second line\ntwo"),
    ]
    subtitles = open_subtitles(mkv)
    assert [t.external for t in subtitles.tracks] == [False]
    assert subtitles.selected is not None and subtitles.selected.wait(10)
    assert subtitles.text_at(0.1) is None
    assert subtitles.text_at(0.3) == "Hello world"
    assert subtitles.text_at(0.8) == "Second line\ntwo"
    assert subtitles.describe() == "Subtitles: 1/1 eng (subrip)" or "eng" in subtitles.describe()
    with pytest.raises(InvalidInputError, match="no subtitle stream 7"):
        read_cues(mkv, 7)


def test_sidecar_files_and_their_order(video: str, tmp_path: Path) -> None:
    (tmp_path / "film.srt").write_text(SRT, encoding="utf-8")
    (tmp_path / "film.ass").write_text(ASS, encoding="utf-8")
    (tmp_path / "other.srt").write_text(SRT, encoding="utf-8")  # another name: not ours
    assert sidecar_files(video) == [str(tmp_path / "film.srt"), str(tmp_path / "film.ass")]
    subtitles = open_subtitles(video)
    assert [t.label for t in subtitles.tracks] == ["film.srt", "film.ass"]
    assert subtitles.selected is not None and subtitles.selected.wait(10)
    assert subtitles.text_at(0.4) == "Hello world"
    ass = subtitles.cycle()
    assert ass is not None and ass.wait(10)
    assert subtitles.text_at(0.5) == "Bold words\nsecond line"
    assert subtitles.describe() == "Subtitles: 2/2 film.ass"
    assert subtitles.cycle() is None and subtitles.describe() == "Subtitles: off"
    assert subtitles.text_at(0.4) is None
    assert subtitles.cycle() is not None  # round again to the first
    subtitles.close()


def test_sub_file_comes_first_and_no_sub_selects_none(video: str, tmp_path: Path) -> None:
    vtt = tmp_path / "extra.vtt"
    vtt.write_text(VTT, encoding="utf-8")
    (tmp_path / "film.srt").write_text(SRT, encoding="utf-8")
    subtitles = open_subtitles(video, sub=vtt)
    assert [t.label for t in subtitles.tracks] == ["extra.vtt", "film.srt"]
    assert subtitles.selected is not None and subtitles.selected.wait(10)
    assert subtitles.text_at(0.5) == "Web cue"
    off = open_subtitles(video, sub=vtt, enabled=False)
    assert off.selected is None and off.describe() == "Subtitles: off" and len(off.tracks) == 2
    with pytest.raises(InvalidInputError, match="no text subtitles"):
        open_subtitles(video, sub=video)
    assert open_subtitles(make_clip(tmp_path / "plain.mkv", frames=2).path).describe() == "Subtitles: none"


def test_sub_missing_file_is_one_line(video: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from alpha2.apps.cli import main

    code = main(["play", video, "--sub", str(tmp_path / "missing.srt"), "--offscreen", "--frames", "1"])
    assert code == 1
    assert "--sub" in capsys.readouterr().err
    # A file that is there but no subtitles: one line before anything plays (found by a person's pass:
    # a traceback from the window's first draw, 45 lines).
    junk = tmp_path / "notes.txt"
    junk.write_text("not subtitles at all\n" * 20)
    code = main(["play", video, "--sub", str(junk), "--offscreen", "--frames", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "cannot be read as subtitles" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.vulkan
def test_subtitles_are_drawn_over_the_video(video: str, tmp_path: Path) -> None:
    """In the window (rendercanvas's offscreen canvas), the cue on display is drawn bottom centre,
    outlined; j turns it off."""
    pytest.importorskip("rendercanvas")
    from alpha2.apps.window import WindowPlayback

    srt = tmp_path / "cues.srt"
    srt.write_text(SRT, encoding="utf-8")
    mkv = mux_srt(video, srt, tmp_path / "subbed.mkv")
    run = Player(mkv, PlayOptions(audio=False), pipeline.Progress())
    playback = WindowPlayback(run)
    try:
        playback.open("rendercanvas.offscreen", size=Size(640, 360))
        playback.canvas.draw()
        playback._on_key({"key": " "})
        assert playback.subtitles is not None and playback.subtitles.selected is not None
        assert playback.subtitles.selected.wait(10)
        playback.seek(0.3, show_bar=False)
        playback.osd._active_until = -1e9
        with_sub = np.asarray(playback.canvas.draw())[..., :3].astype(int)
        layers = playback.osd.layers(Size(640, 360), playback._osd_view())
        rect = {layer.key: layer.rect for layer in layers}["subtitle"]
        assert rect.y > 180 and abs(rect.x + rect.width / 2 - 320) <= 1
        playback._on_key({"key": "j"})  # the only track -> off
        assert playback.osd.current_message == "Subtitles: off"
        playback.osd._message = None
        without = np.asarray(playback.canvas.draw())[..., :3].astype(int)
        region = (np.abs(with_sub - without).max(axis=2) > 24)[
            rect.y : rect.y + rect.height, rect.x : rect.x + rect.width
        ]
        assert region.mean() > 0.05
    finally:
        playback.finish(1.0)
        run.close()


def test_cue_without_duration_lasts_until_the_next(tmp_path: Path) -> None:
    """A packet with no duration (some muxers) stays until the next cue, at most a few seconds."""
    out = tmp_path / "nodur.mkv"
    srt = tmp_path / "a.srt"
    srt.write_text(SRT, encoding="utf-8")
    with av.open(str(srt)) as subs, av.open(str(out), "w") as mkv:
        sin = subs.streams.subtitles[0]
        sout = mkv.add_stream_from_template(sin)
        for packet in subs.demux(sin):
            if packet.dts is not None:
                packet.stream = sout
                packet.duration = 0
                mkv.mux(packet)
    cues = read_cues(str(out))
    assert cues[0].end_s == pytest.approx(0.7) and cues[1].end_s > cues[1].start_s


_STYLE_FORMAT = "Format: " + ", ".join(
    "Name Fontname Fontsize PrimaryColour SecondaryColour OutlineColour BackColour Bold Italic Underline "
    "StrikeOut ScaleX ScaleY Spacing Angle BorderStyle Outline Shadow Alignment MarginL MarginR MarginV "
    "Encoding".split()
)
PLACED_ASS = r"""[Script Info]
ScriptType: v4.00+

[V4+ Styles]
{style_format}
Style: Default,Arial,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,0
Style: Sign,Arial,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,1,1,0,8,10,10,10,0
Style: Centre,Arial,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,1,1,0,5,10,10,10,0

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
Dialogue: 0,0:00:00.00,0:00:02.00,Default,,0,0,0,,Speaker one
Dialogue: 0,0:00:00.00,0:00:02.00,Default,,0,0,0,,{\an8\i1}Speaker two
Dialogue: 0,0:00:00.50,0:00:02.00,Sign,,0,0,0,,A SIGN
Dialogue: 0,0:00:00.50,0:00:02.00,Centre,,0,0,0,,In the middle
Dialogue: 0,0:00:01.00,0:00:02.00,Sign,,0,0,0,,{\an2}Sign style, put at the bottom
Dialogue: 0,0:00:01.00,0:00:02.00,Default,,0,0,0,,{\a6}Top (SSA's numbering)
""".replace("{style_format}", _STYLE_FORMAT)


def test_ass_placement_from_tags_and_styles(tmp_path: Path) -> None:
    """An ASS cue is placed by its first {\\an} / {\\a} tag, else by its style's alignment (mpv does it
    through libass; they were all drawn at the bottom, a sign over the dialogue)."""
    path = tmp_path / "placed.ass"
    path.write_text(PLACED_ASS, encoding="utf-8")
    cues = {(c.text, c.placement) for c in read_cues(str(path))}
    assert cues == {
        ("Speaker one", "bottom"),
        ("Speaker two", "top"),
        ("A SIGN", "top"),
        ("In the middle", "middle"),
        ("Sign style, put at the bottom", "bottom"),
        ("Top (SSA's numbering)", "top"),
    }
    subtitles = open_subtitles(str(tmp_path / "placed.mkv"), sub=path)
    assert subtitles.selected is not None and subtitles.selected.wait(10)
    assert subtitles.placed_at(0.2) == {"bottom": "Speaker one", "top": "Speaker two"}
    assert subtitles.placed_at(1.5) == {
        "bottom": "Speaker one\nSign style, put at the bottom",
        "top": "Speaker two\nA SIGN\nTop (SSA's numbering)",
        "middle": "In the middle",
    }
    assert subtitles.text_at(0.2) == "Speaker one\nSpeaker two"
    subtitles.close()


def test_legacy_ssa_styles_use_their_own_numbers() -> None:
    from alpha2.ffmpeg_bridge.subtitles import style_placements

    header = (
        "[Script Info]\nScriptType: v4.00\n\n[V4 Styles]\n"
        "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, TertiaryColour, BackColour, "
        "Bold, Italic, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, AlphaLevel, "
        "Encoding\n"
        "Style: Low,Arial,20,0,0,0,0,0,0,1,1,0,2,10,10,10,0,0\n"
        "Style: High,Arial,20,0,0,0,0,0,0,1,1,0,6,10,10,10,0,0\n"
        "Style: Mid,Arial,20,0,0,0,0,0,0,1,1,0,10,10,10,10,0,0\n"
    )
    assert style_placements(header) == {"Low": "bottom", "High": "top", "Mid": "middle"}


def test_the_display_puts_a_top_subtitle_at_the_top() -> None:
    from alpha2.apps.osd import Osd, OsdView

    window = Size(640, 360)
    view = OsdView(
        position_s=0.0, duration_s=10.0, subtitle="low", subtitle_top="high", subtitle_middle="mid"
    )
    osd = Osd()
    osd._active_until = -1e9  # no bar: the bottom subtitle at the bottom margin
    placed = {layer.key: layer.rect for layer in osd.layers(window, view) if layer.key.startswith("subtitle")}
    assert set(placed) == {"subtitle", "subtitle_middle", "subtitle_top"}  # a sprite each: keys differ
    top, middle, bottom = placed["subtitle_top"], placed["subtitle_middle"], placed["subtitle"]
    rects = [top, middle, bottom]
    assert top.y < 40 and abs(middle.y + middle.height / 2 - 180) <= 2 and bottom.y + bottom.height > 320
    assert all(abs(r.x + r.width / 2 - 320) <= 1 for r in rects)


def test_srt_not_in_utf8_is_read_as_windows_1252(tmp_path: Path) -> None:
    """A Latin-1 / CP1252 SubRip file (Windows-made) is read, as mpv shows it and as ``ffmpeg -sub_charenc
    CP1252`` extracts it; a UTF-8 cue beside it stays UTF-8 (found by an outside pass: read_cues failed
    with 'Invalid data found when processing input', after --sub's check had passed the file)."""
    path = tmp_path / "western.srt"
    text = "1\n00:00:01,000 --> 00:00:02,500\nCafé déjà vu – “quoted”\n\n"
    path.write_bytes(text.encode("cp1252") + "2\n00:00:03,000 --> 00:00:04,000\nUTF-8: ß\n\n".encode())
    cues = [(c.start_s, c.end_s, c.text) for c in read_cues(str(path))]
    assert cues == [(1.0, 2.5, "Café déjà vu – “quoted”"), (3.0, 4.0, "UTF-8: ß")]


def test_a_pgs_track_is_a_bitmap_and_not_picked(tmp_path: Path) -> None:
    """A PGS (Blu-ray) track is listed as a bitmap, by its codec's name, and the player picks the text
    track after it (found by an outside pass: the check read the decoder's name, ``pgssub``, so PGS was
    'text', and the default PGS track was selected and showed nothing)."""
    import struct

    def segment(pts: int, kind: int, data: bytes) -> bytes:
        return b"PG" + struct.pack(">IIBH", pts, 0, kind, len(data)) + data

    def composition(number: int, state: int) -> bytes:  # 720x480, no object: an empty display set
        return struct.pack(">HHBHBBBB", 720, 480, 0x10, number, state, 0, 0, 0)

    sup = tmp_path / "signs.sup"
    sup.write_bytes(
        b"".join(
            segment(t, 0x16, composition(i, s)) + segment(t, 0x80, b"")
            for i, (t, s) in enumerate([(90000, 0x80), (180000, 0x00)])
        )
    )
    srt = tmp_path / "words.srt"
    srt.write_text(SRT, encoding="utf-8")
    out = tmp_path / "both.mkv"
    with av.open(str(sup)) as pgs, av.open(str(srt)) as words, av.open(str(out), "w") as mkv:
        pairs = [
            (s.streams.subtitles[0], mkv.add_stream_from_template(s.streams.subtitles[0]))
            for s in (pgs, words)
        ]
        for sin, sout in pairs:  # both streams added before the header is written
            for packet in sin.container.demux(sin):
                if packet.dts is not None:
                    packet.stream = sout
                    mkv.mux(packet)
    tracks = subtitle_tracks(str(out))
    assert [(t.codec, t.text) for t in tracks] == [("hdmv_pgs_subtitle", False), ("subrip", True)]
    with pytest.raises(InvalidInputError, match="is a bitmap"):
        read_cues(str(out), tracks[0].stream_index)
    subtitles = open_subtitles(str(out))
    assert [t.label for t in subtitles.tracks] == ["(subrip)"]


def test_a_file_without_subtitles_says_so(tmp_path: Path) -> None:
    """No subtitle stream at all: said plainly (found by an outside pass: 'has no subtitle stream None')."""
    plain = make_clip(tmp_path / "plain.mkv", frames=2).path
    with pytest.raises(InvalidInputError, match=r"has no subtitle streams$"):
        read_cues(plain)


def test_a_long_cue_stays_under_many_short_ones(tmp_path: Path) -> None:
    """A cue on display for a minute (a song's title, a sign) stays while twenty short ones come and go
    (found by an outside pass: only the 16 cues started last were looked at, so it vanished at 31 s)."""
    blocks = ["1\n00:00:00,000 --> 00:01:00,000\n{\\an8}Title all along\n"]
    blocks += [
        f"{i + 2}\n00:00:{1 + 2 * i:02d},000 --> 00:00:{2 + 2 * i:02d},000\nLine {i}\n" for i in range(20)
    ]
    path = tmp_path / "long.srt"
    path.write_text("\n".join(blocks), encoding="utf-8")
    subtitles = open_subtitles(str(tmp_path / "film.mkv"), sub=path)
    assert subtitles.selected is not None and subtitles.selected.wait(10)
    assert subtitles.placed_at(39.5) == {"top": "Title all along", "bottom": "Line 19"}
    assert subtitles.placed_at(50.0) == {"top": "Title all along"}
    assert subtitles.placed_at(60.0) == {} and subtitles.placed_at(0.5) == {"top": "Title all along"}
    subtitles.close()


def test_sub_with_a_snapshot_is_refused_not_dropped(
    video: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Subtitles are drawn in the window only: ``--sub x.srt --snapshot out.png`` wrote the PNG without
    them and said nothing (found by an outside pass). Refused, as a --wall's --sub is."""
    from alpha2.apps.cli import main

    srt = tmp_path / "x.srt"
    srt.write_text("1\n00:00:00,000 --> 00:00:05,000\nHello\n", encoding="utf-8")
    for flag in (["--snapshot", str(tmp_path / "s.png")], ["--offscreen"]):
        code = main(["play", video, "--sub", str(srt), *flag, "--frames", "1"])
        err = capsys.readouterr().err
        assert code == 1 and f"--sub is drawn in the window; {flag[0]} renders the video alone" in err, err
    assert not (tmp_path / "s.png").exists()


def test_a_stream_or_track_index_that_is_no_int_is_refused(video: str, tmp_path: Path) -> None:
    """``read_cues(f, "2")`` said 'has no subtitle stream 2' beside a stream 2, and
    ``Subtitles.select("1")`` raised a bare TypeError (found by an outside pass)."""
    srt = tmp_path / "a.srt"
    srt.write_text(SRT, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"stream_index must be an int .* got '0'"):
        read_cues(str(srt), "0")  # type: ignore[arg-type]
    assert read_cues(str(srt), 0)  # the stream as an int
    subtitles = open_subtitles(video, sub=srt)
    try:
        for bad in ("0", True, 0.0):
            with pytest.raises(InvalidInputError, match="select takes a track's index"):
                subtitles.select(bad)  # type: ignore[arg-type]
    finally:
        subtitles.close()
