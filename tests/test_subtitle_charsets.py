"""Subtitle text that is not UTF-8, read as mpv's ``--sub-codepage=auto`` reads it: a Shift-JIS, GBK,
EUC-KR, Big5 or Windows-1251 SubRip file and a mov_text track whose cues are Shift-JIS come out as the
text written, with the encoding detected said (``SubtitleCues.encoding`` / ``notes``, the track's
``encoding`` and its line in ``Subtitles.describe``); a UTF-8 file with a byte order mark stays UTF-8;
a stray byte becomes U+FFFD and is counted while the other cues are kept; ``codepage=`` names the
encoding (``+name``: every cue), and an unknown one is refused."""

from __future__ import annotations

import fractions
from pathlib import Path

import av
import pytest

from alpha2.api.subtitles import check_subtitle_file, open_subtitles
from alpha2.ffmpeg_bridge import subtitles as bridge
from alpha2.ffmpeg_bridge.errors import MediaFormatError
from alpha2.ffmpeg_bridge.subtitles import (
    detect_encoding,
    encoding_name,
    read_cues,
    read_subtitles,
    subtitle_codepage,
)
from alpha2.gpu.errors import InvalidInputError
from tests.media import make_clip

TEXTS = {
    "shift_jis": [
        "こんにちは、世界。",
        "今日はいい天気ですね。",
        "字幕のテストです。\n二行目もあります。",
        "ありがとう！",
        "また明日。",
    ],
    "gbk": ["你好，世界。", "今天天气很好。", "这是字幕测试。\n第二行。", "谢谢！", "明天见。"],
    "cp1251": [
        "Привет, мир.",
        "Сегодня хорошая погода.",
        "Это проверка субтитров.\nВторая строка.",
        "Спасибо!",
        "До завтра.",
    ],
    "euc_kr": [
        "안녕하세요, 세계.",
        "오늘 날씨가 좋네요.",
        "자막 테스트입니다.\n두 번째 줄.",
        "감사합니다!",
        "내일 봐요.",
    ],
    "big5": ["你好，世界。", "今天天氣很好。", "這是字幕測試。\n第二行。", "謝謝！", "明天見。"],
}
DETECTED = {
    # What each is read as: the superset FFmpeg's world and Windows use (CP932 is Shift-JIS's, GB18030
    # GBK's, CP949 EUC-KR's); what a person is told.
    "shift_jis": ({"cp932", "shift_jis"}, "Shift-JIS"),
    "gbk": ({"gb18030", "gbk"}, "GB"),
    "cp1251": ({"cp1251"}, "Windows-1251"),
    "euc_kr": ({"cp949", "euc_kr"}, "EUC-KR"),
    "big5": ({"big5", "big5hkscs", "cp950"}, "Big5"),
}


def srt_bytes(cues: list[bytes]) -> bytes:
    """A SubRip file of ``cues`` (already encoded), one a second from 1 s."""
    return b"".join(
        f"{i + 1}\n00:00:{i + 1:02d},000 --> 00:00:{i + 1:02d},800\n".encode() + cue + b"\n\n"
        for i, cue in enumerate(cues)
    )


def texts_of(path: str | Path, **kwargs: str) -> list[str]:
    return [cue.text for cue in read_cues(str(path), **kwargs)]


@pytest.mark.parametrize("encoding", sorted(TEXTS))
def test_a_srt_file_in_a_legacy_encoding_is_detected_and_read(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "film.srt"
    path.write_bytes(srt_bytes([text.encode(encoding) for text in TEXTS[encoding]]))
    reading = read_subtitles(str(path))
    assert [cue.text for cue in reading.cues] == TEXTS[encoding]
    names, said = DETECTED[encoding]
    assert reading.encoding in names and reading.found_by == "detected"
    assert reading.converted_cues == len(TEXTS[encoding]) and reading.replaced_bytes == 0
    assert encoding_name(reading.encoding).startswith(said)
    assert len(reading.notes) == 1 and said in reading.notes[0] and "detected" in reading.notes[0]
    assert reading.summary == f"{encoding_name(reading.encoding)}, detected"


def test_the_player_s_track_says_the_encoding_detected(tmp_path: Path) -> None:
    """The track read for ``alpha2 play`` (a sidecar here) says it: its ``encoding`` and ``notes``, and
    the line ``j`` and the stats show."""
    video = make_clip(tmp_path / "film.mkv", width=64, height=48, frames=6).path
    (tmp_path / "film.srt").write_bytes(srt_bytes([t.encode("shift_jis") for t in TEXTS["shift_jis"]]))
    subtitles = open_subtitles(video)
    track = subtitles.selected
    assert track is not None and track.wait(30)
    assert track.error is None and track.text_at(1.5) == "こんにちは、世界。"
    assert track.encoding == "cp932" and track.notes and "Shift-JIS" in track.notes[0]
    assert subtitles.describe() == "Subtitles: 1/1 film.srt (Shift-JIS, detected)"


def test_utf8_with_a_byte_order_mark_stays_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bom.srt"
    texts = ["Grüße, 世界", "Привет"]
    path.write_bytes(b"\xef\xbb\xbf" + srt_bytes([t.encode() for t in texts]))
    reading = read_subtitles(str(path))
    assert [cue.text for cue in reading.cues] == texts
    assert (reading.encoding, reading.found_by, reading.notes, reading.summary) == ("utf-8", "bom", (), "")
    plain = tmp_path / "plain.srt"
    plain.write_bytes(srt_bytes([t.encode() for t in texts]))
    assert read_subtitles(str(plain)).found_by == "utf-8"
    assert texts_of(plain) == texts


def _mov_text(tmp_path: Path, bodies: list[bytes]) -> str:
    """An MP4 with a video stream and a mov_text track of ``bodies`` (each a cue's text bytes, or a
    whole sample where it starts with its length), as the tests of stream metadata make them."""
    clip = make_clip(tmp_path / "base.mp4", frames=30)
    path = str(tmp_path / "movtext.mp4")
    ms = fractions.Fraction(1, 1000)
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        text = out.add_mux_stream("mov_text", time_base=ms)
        text.metadata["language"] = "jpn"
        for packet in inp.demux(inp.streams.video[0]):
            if packet.dts is not None:
                packet.stream = video
                out.mux(packet)
        for i, body in enumerate(bodies):
            cue = av.Packet(len(body).to_bytes(2, "big") + body)
            cue.pts = cue.dts = 100 + 200 * i
            cue.duration, cue.time_base, cue.stream = 150, ms, text
            out.mux(cue)
    return path


def test_a_mov_text_track_in_shift_jis_is_read(tmp_path: Path) -> None:
    """A tx3g cue that is not UTF-8 failed the whole track ('Invalid data found'); its text is now read
    in the encoding detected, the sample's length and boxes around it kept."""
    texts = TEXTS["shift_jis"][:4]
    path = _mov_text(tmp_path, [t.encode("shift_jis") for t in texts])
    reading = read_subtitles(path)
    assert [cue.text for cue in reading.cues] == texts
    assert [round(cue.start_s, 3) for cue in reading.cues] == [0.1, 0.3, 0.5, 0.7]
    assert reading.encoding == "cp932" and reading.found_by == "detected" and reading.converted_cues == 4
    subtitles = open_subtitles(path)
    track = subtitles.selected
    assert track is not None and track.wait(30) and track.error is None
    assert track.label == "jpn (mov_text)" and track.encoding == "cp932"
    assert subtitles.describe().endswith("(Shift-JIS, detected)")


def test_a_mov_text_cue_in_utf16_is_read_by_its_mark(tmp_path: Path) -> None:
    """3GPP timed text may be UTF-16 with a byte order mark; such a cue is read so, beside UTF-8 ones."""
    path = _mov_text(tmp_path, [b"\xfe\xff" + "日本語".encode("utf-16-be"), b"Plain"])
    reading = read_subtitles(path)
    assert [cue.text for cue in reading.cues] == ["日本語", "Plain"]
    assert reading.found_by == "utf-8" and reading.replaced_bytes == 0


def test_a_stray_byte_in_a_utf8_file_keeps_the_other_cues(tmp_path: Path) -> None:
    path = tmp_path / "stray.srt"
    cues = [t.encode() for t in ("こんにちは", "日本語です", "Grüße")]
    cues[1] = cues[1][:6] + b"\xff" + cues[1][6:]
    path.write_bytes(srt_bytes(cues))
    reading = read_subtitles(str(path))
    assert [cue.text for cue in reading.cues] == ["こんにちは", "日本\ufffd語です", "Grüße"]
    assert reading.encoding == "utf-8" and reading.replaced_bytes == 1
    assert reading.notes == ("1 byte that UTF-8 does not explain shown as U+FFFD (\ufffd)",)
    assert reading.summary == "1 byte replaced"


@pytest.mark.parametrize("encoding", ["shift_jis", "gbk", "euc_kr"])
@pytest.mark.parametrize("stray", [b"\x80", b"\xff"])
def test_a_stray_byte_in_a_legacy_file_keeps_the_other_cues(
    tmp_path: Path, encoding: str, stray: bytes
) -> None:
    """One byte no encoding explains rules the file's encoding out of a strict detection; a second look
    past it still finds it, and only that cue shows U+FFFD."""
    texts = TEXTS[encoding]
    cues = [t.encode(encoding) for t in texts]
    cues[1] = cues[1][:4] + stray + cues[1][4:]
    path = tmp_path / "stray.srt"
    path.write_bytes(srt_bytes(cues))
    reading = read_subtitles(str(path))
    got = [cue.text for cue in reading.cues]
    assert reading.encoding in DETECTED[encoding][0] and reading.found_by == "detected"
    assert got[:1] + got[2:] == texts[:1] + texts[2:]
    assert got[1] == texts[1][:2] + "\ufffd" + texts[1][2:]
    assert reading.replaced_bytes == 1 and any("U+FFFD" in note for note in reading.notes)


def test_detect_encoding_alone() -> None:
    assert detect_encoding(["今日はいい天気ですね。".encode("shift_jis")] * 3) == "cp932"
    assert detect_encoding("Café déjà vu – “quoted”".encode("cp1252")) == "cp1252"  # not cp1250's ŕ


def test_a_codepage_given_is_used(tmp_path: Path) -> None:
    """``codepage=`` as mpv's ``--sub-codepage``: a name reads the text that is not UTF-8 in it (KOI8-R
    here, against the file's Windows-1251: the name wins, as asked), ``+name`` every cue, ``auto``
    detects."""
    russian = TEXTS["cp1251"]
    path = tmp_path / "ru.srt"
    path.write_bytes(srt_bytes([t.encode("cp1251") for t in russian] + ["Grüße".encode()]))
    given = read_subtitles(str(path), codepage="windows-1251")
    assert [c.text for c in given.cues] == [*russian, "Grüße"]  # the UTF-8 cue stays UTF-8
    assert (given.encoding, given.found_by, given.converted_cues) == ("cp1251", "given", 5)
    assert given.summary == "Windows-1251, given"
    koi = read_subtitles(str(path), codepage="koi8-r")
    assert koi.cues[0].text == russian[0].encode("cp1251").decode("koi8-r")
    forced = read_subtitles(str(path), codepage="+cp1251")
    assert forced.converted_cues == 6 and forced.cues[-1].text == "Grüße".encode().decode("cp1251")
    assert texts_of(path, codepage="auto") == [*russian, "Grüße"]


def test_an_unknown_codepage_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.srt"
    path.write_bytes(srt_bytes([b"Hello"]))
    for bad in ("no-such-encoding", "base64", "+"):
        with pytest.raises(InvalidInputError, match="not a text encoding"):
            read_cues(str(path), codepage=bad)
        with pytest.raises(InvalidInputError, match="not a text encoding"):
            open_subtitles(str(path), codepage=bad)
        with pytest.raises(InvalidInputError, match="not a text encoding"):
            check_subtitle_file(path, codepage=bad)
    with pytest.raises(InvalidInputError, match="encoding's name"):
        subtitle_codepage(1251)
    assert subtitle_codepage("Shift-JIS") == "shift_jis" and subtitle_codepage("+CP1250") == "+cp1250"
    assert subtitle_codepage("auto") is None and subtitle_codepage(None) is None
    check_subtitle_file(path, codepage="gbk")


def test_an_ass_file_in_shift_jis_keeps_its_styles_placement(tmp_path: Path) -> None:
    """An ASS script's header is read in the encoding its events are: a style named in Japanese still
    places its cue at the top."""
    script = (
        "[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\n"
        "Format: Name, Fontname, Fontsize, Alignment\n"
        "Style: 上の字幕,Arial,20,8\nStyle: Default,Arial,20,2\n\n"
        "[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
        "Dialogue: 0,0:00:00.10,0:00:00.80,上の字幕,,0,0,0,,看板の文字です\n"
        "Dialogue: 0,0:00:01.00,0:00:01.80,Default,,0,0,0,,こんにちは、世界。今日はいい天気ですね。\n"
    )
    path = tmp_path / "signs.ass"
    path.write_bytes(script.encode("shift_jis"))
    reading = read_subtitles(str(path))
    assert [(c.text, c.placement) for c in reading.cues] == [
        ("看板の文字です", "top"),
        ("こんにちは、世界。今日はいい天気ですね。", "bottom"),
    ]
    assert reading.encoding == "cp932"


def test_a_cue_the_decoder_refuses_is_left_out_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One cue FFmpeg's decoder refuses (its UTF-8 check, here fed a cue left unconverted) no longer
    loses the track: it is left out and said; a track whose every cue is refused still fails."""
    path = tmp_path / "three.srt"
    path.write_bytes(srt_bytes([b"one", b"two", b"three"]))
    packet = bridge._Recoder.packet

    def spoil(self: bridge._Recoder, index: int, data: bytes) -> bytes | None:
        return b"bad \xff" if index == 1 else packet(self, index, data)

    monkeypatch.setattr(bridge._Recoder, "packet", spoil)
    reading = read_subtitles(str(path))
    assert [c.text for c in reading.cues] == ["one", "three"]
    assert reading.left_out_cues == 1 and reading.summary == "1 cue left out"
    monkeypatch.setattr(bridge._Recoder, "packet", lambda self, index, data: b"bad \xff")
    with pytest.raises(MediaFormatError, match="Invalid data"):
        read_subtitles(str(path))
