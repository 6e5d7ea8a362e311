"""Outside pass 4 of the API: subtitle text that is not UTF-8 (UTF-16 files, short texts, a long track),
and the probe tool's stream titles."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from alpha2.ffmpeg_bridge.subtitles import detect_encoding, read_subtitles


def _srt(lines: list[str]) -> str:
    cues = []
    for index, line in enumerate(lines):
        start = index * 2
        cues.append(f"{index + 1}\n00:00:{start:02d},000 --> 00:00:{start + 1:02d},500\n{line}\n")
    return "\n".join(cues)


LINES = ["こんにちは、世界。", "Привет, мир", "Ça va? Où est-il?"]


@pytest.mark.parametrize(
    ("encoding", "marked"),
    [("utf-16", "utf-16"), ("utf-16-be", "utf-16"), ("utf-16-le", "utf-16")],
)
def test_utf16_srt_keeps_each_cues_first_character(tmp_path: Path, encoding: str, marked: str) -> None:
    # FFmpeg's own UTF-16 reading of an .srt lost the first character of every cue ('\ufffdんにちは').
    data = _srt(LINES).encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    elif encoding == "utf-16-le":
        data = b"\xff\xfe" + data
    path = tmp_path / "wide.srt"
    path.write_bytes(data)
    read = read_subtitles(path)
    assert [cue.text for cue in read.cues] == LINES
    assert read.encoding == marked
    assert read.found_by == "bom"
    assert read.replaced_bytes == 0
    assert read.summary == ""
    assert [round(cue.start_s, 3) for cue in read.cues] == [0.0, 2.0, 4.0]


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Да", "cp1251"),
        ("Привет", "cp1251"),
        ("Café", "cp1252"),
        ("Größe", "cp1252"),
        ("Ja, naïve", "cp1252"),
        ("Żółw", "cp1250"),
        ("Ελλάδα", "cp1253"),
        ("Что?", "koi8-r"),
        ("はい", "shift_jis"),
        ("日本", "shift_jis"),
        ("中国", "gbk"),
        ("안녕", "euc_kr"),
    ],
)
def test_a_word_or_two_is_read_in_its_encoding(text: str, encoding: str) -> None:
    # charset-normalizer has no language evidence in a word: it said Big5 for 'Привет' in Windows-1251
    # ('懾' for 'Да') and Windows-1251 for 'Café' ('Cafй').
    found = detect_encoding(text.encode(encoding))
    assert found is not None
    assert text.encode(encoding).decode(found) == text


def test_one_word_srt_in_windows_1251(tmp_path: Path) -> None:
    path = tmp_path / "word.srt"
    path.write_bytes(_srt(["Привет"]).encode("cp1251"))
    read = read_subtitles(path)
    assert [cue.text for cue in read.cues] == ["Привет"]
    assert read.summary == "Windows-1251, detected"


def test_long_track_not_in_utf8_is_read_in_seconds(tmp_path: Path) -> None:
    # 100k Windows-1251 cues took 10 s: each cue was decoded byte error by byte error, in six encodings.
    lines = ["Привет, мир. Сегодня хорошая погода.", "Он побежал в школу без завтрака.", "Что ты делаешь?"]
    count = 30_000
    cues = []
    for index in range(count):
        second = index * 2
        stamp = f"{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        cues.append(f"{index + 1}\n{stamp},000 --> {stamp},900\n{lines[index % 3]}\n")
    path = tmp_path / "long.srt"
    path.write_bytes("\n".join(cues).encode("cp1251"))
    began = time.perf_counter()
    read = read_subtitles(path)
    took = time.perf_counter() - began
    assert len(read.cues) == count
    assert read.encoding == "cp1251"
    assert read.cues[4].text == lines[1]
    assert took < 4.0, f"{count} cues took {took:.1f} s"


def test_probe_shows_no_blank_audio_title(tmp_path: Path) -> None:
    # A title tag of spaces was shown as '"  "' by alpha2 probe while open_audio(...).info.title is None.
    import av
    import numpy as np

    path = tmp_path / "tagged.mkv"
    with av.open(str(path), "w") as out:
        named = out.add_stream("aac", rate=48000, layout="stereo")
        named.metadata["language"] = "fre"
        named.metadata["title"] = " Commentaire "
        blank = out.add_stream("aac", rate=48000, layout="stereo")
        blank.metadata["language"] = "jpn"
        blank.metadata["title"] = "   "
        for stream in (named, blank):
            for index in range(10):
                frame = av.AudioFrame.from_ndarray(
                    np.zeros((2, 1024), np.float32), format="fltp", layout="stereo"
                )
                frame.sample_rate = 48000
                frame.pts = index * 1024
                out.mux(stream.encode(frame))
            out.mux(stream.encode(None))
    import alpha2

    assert alpha2.open_audio(path, stream_index=1).info.title is None
    assert alpha2.open_audio(path, stream_index=0).info.title == "Commentaire"
    import subprocess
    import sys

    shown = subprocess.run(
        [sys.executable, "-m", "alpha2", "probe", str(path)], capture_output=True, text=True, check=True
    ).stdout
    lines = [line for line in shown.splitlines() if " audio " in line]
    assert len(lines) == 2, shown
    assert lines[0].endswith('fre, "Commentaire"'), lines[0]
    assert lines[1].endswith("jpn"), lines[1]
