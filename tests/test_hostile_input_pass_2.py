"""Hostile and odd input, from outside (a second pass): cut files copied, full disks, huge times, odd
names, scripts from stdin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import av
import pytest

import alpha2
from alpha2.api.errors import EndOfStreamError
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps.batch_plan import printable
from alpha2.apps.cli import shown_name
from tests.media import make_clip, make_late_video_with_sound, mux_silence, opus_mono, truncate

REPO = str(Path(__file__).resolve().parent.parent)
ENDS_EARLY = "the input ends before the duration its container announces"


def _notes(stats: Any) -> list[str]:
    from alpha2.api.transcode_report import summary_notes

    return summary_notes(stats)


def test_a_copy_of_a_cut_file_says_it_ends_early(tmp_path: Path) -> None:
    # A Matroska file cut in half keeps its header's 1 s: a transcode's decoder said the input ends
    # early, a copy of the same file said nothing.
    for ext, codec in (("mkv", "h264"), ("webm", "vp9")):
        clip = make_clip(tmp_path / f"clip.{ext}", codec=codec, frames=30, audio=True)
        cut = truncate(clip.path, str(tmp_path / f"cut.{ext}"), 0.5)
        copied = transcode(cut, str(tmp_path / f"copy.{ext}"), TranscodeOptions(codec="copy"))
        encoded = transcode(cut, str(tmp_path / f"enc.{ext}"), TranscodeOptions())
        assert ENDS_EARLY in _notes(encoded)
        assert ENDS_EARLY in _notes(copied), _notes(copied)
        assert copied.as_dict()["decode"]["truncated"]
        whole = transcode(clip.path, str(tmp_path / f"whole.{ext}"), TranscodeOptions(codec="copy"))
        assert ENDS_EARLY not in _notes(whole)
        # A copy cut with --to reads only part of the file: it cannot say where the input ends.
        part = transcode(cut, str(tmp_path / f"part.{ext}"), TranscodeOptions(codec="copy", to_seconds=0.2))
        assert ENDS_EARLY not in _notes(part)


def test_a_copy_of_a_video_beside_longer_or_shorter_sound_is_not_said_to_end_early(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "v.mkv", frames=30, rate=30)
    for name, seconds in (("long_audio.mkv", 3.0), ("short_audio.mkv", 0.3)):
        src = str(tmp_path / name)
        with av.open(clip.path) as inp, av.open(src, "w") as out:
            video = out.add_stream_from_template(inp.streams.video[0])
            sound = opus_mono(out)
            for packet in inp.demux():
                if packet.dts is not None:
                    packet.stream = video
                    out.mux(packet)
            mux_silence(out, sound, seconds)
        copied = transcode(src, str(tmp_path / f"copy_{name}"), TranscodeOptions(codec="copy"))
        assert copied.frames == 30
        assert ENDS_EARLY not in _notes(copied), (name, _notes(copied))
        # Its audio left out: the video still ends where its own duration says.
        alone = transcode(src, str(tmp_path / f"alone_{name}"), TranscodeOptions(codec="copy", audio=False))
        assert ENDS_EARLY not in _notes(alone), (name, _notes(alone))


def test_a_copy_of_a_late_starting_video_is_not_said_to_end_early(tmp_path: Path) -> None:
    # FFmpeg's Matroska muxer tags where a late track ends, not how long it lasts (test_late_track_duration).
    src = make_late_video_with_sound(tmp_path / "late.mkv")
    copied = transcode(src, str(tmp_path / "copy.mkv"), TranscodeOptions(codec="copy"))
    assert copied.frames == 25
    assert ENDS_EARLY not in _notes(copied), _notes(copied)
    assert os.path.getsize(tmp_path / "copy.mkv") > 0


def test_a_huge_time_is_named_as_asked(tmp_path: Path) -> None:
    # Times are decoded capped at 1e12 s (past any stream's end): 'frame_at(1e308)' said 'no frame is
    # on display at 1000000000000.0 s', a time the caller never passed.
    clip = make_clip(tmp_path / "clip.mkv", frames=6)
    with alpha2.open(clip.path) as source:
        for asked, said in ((1e308, "1e+308 s"), (2.0**70, "1.1805916207174113e+21 s"), (5, "5.0 s")):
            with pytest.raises(EndOfStreamError, match=f"no frame is on display at {re.escape(said)}: "):
                source.frame_at(asked)
        with pytest.raises(EndOfStreamError, match=r"no frame is on display at 1e\+200 s: .* 0\.200 s long"):
            source.frames_at([0.1, 1e200])
        assert source.frame_at(0.1).pts_seconds == pytest.approx(0.1)  # (still decoding after them)


def _alpha2(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (REPO, os.environ.get("PYTHONPATH")))))
    return subprocess.run(
        [sys.executable, "-m", "alpha2", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_names_with_control_characters_are_shown_escaped(tmp_path: Path) -> None:
    # 'alpha2 probe' printed a name holding a newline as it was, breaking its layout; the error line
    # (its first line kept) said 'alpha2: error: o' for an output 'o\nut.mkv' that exists.
    clip = make_clip(tmp_path / "a\nb\tc.mkv", frames=3)
    done = _alpha2(["probe", "a\nb\tc.mkv", "x\ny.mkv"], tmp_path)
    assert done.stdout.splitlines()[0].startswith("'a\\nb\\tc.mkv': Matroska / WebM, ")
    assert done.stderr.splitlines() == ["alpha2: error: opening 'x\\ny.mkv': No such file or directory"]
    (tmp_path / "o\nut.mkv").write_bytes(b"x")
    done = _alpha2(["transcode", "a\nb\tc.mkv", "o\nut.mkv", "--codec", "copy"], tmp_path)
    assert done.stderr.splitlines() == [
        "alpha2: error: 'o\\nut.mkv' exists; pass -y (--overwrite) to replace it"
    ]
    done = _alpha2(["transcode", clip.path, "o\nut.mkv", "--codec", "copy", "-y"], tmp_path)
    assert done.returncode == 0, done.stderr
    output = [line for line in done.stderr.splitlines() if line.lstrip().startswith("output")]
    assert len(output) == 1 and output[0].startswith(f"  output  '{tmp_path}/o\\nut.mkv': "), output
    done = _alpha2(["probe", "clé \x1b[31m.mkv"], tmp_path)
    assert done.stderr.splitlines() == [
        "alpha2: error: opening 'clé \\x1b[31m.mkv': No such file or directory"
    ]


def test_shown_names_and_printable_texts() -> None:
    assert shown_name("clip.mkv") == "clip.mkv" and shown_name("clé vidéo.mkv") == "clé vidéo.mkv"
    assert shown_name("bad\udcffname.mp4") == "bad\\xffname.mp4"  # batch's form, unquoted
    assert shown_name("a\nb\tc.mkv") == "'a\\nb\\tc.mkv'"
    assert shown_name("it's\n") == '"it\'s\\n"' and shown_name("a\\b\r") == "'a\\\\b\\r'"
    assert shown_name("\u202eevil\udcff.mkv") == "'\\u202eevil\\xff.mkv'"
    assert printable("a\nb\x1b.mkv") == "a\\nb\\x1b.mkv" and printable("x\udcff.mp4") == "x\\xff.mp4"


def test_segments_from_a_script_read_from_stdin_are_refused_first(tmp_path: Path) -> None:
    # Spawn runs the main script again in each worker: '<stdin>' is no file, and every worker died
    # before it began, said 'its worker process ended (exit code None) without a result'.
    clip = make_clip(tmp_path / "clip.mkv", frames=40, gop=10)
    script = (
        "import alpha2.api.transcoder as t\n"
        "try:\n"
        f"    t.transcode({clip.path!r}, 'out.mkv', t.TranscodeOptions(segments=2))\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (REPO, os.environ.get("PYTHONPATH")))))
    done = subprocess.run(
        [sys.executable, "-"],
        input=script,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip() == (
        "UnsupportedError a segmented transcode starts a worker process per segment by 'spawn', which runs "
        "the main script again, and this script was read from standard input: save it to a file and run "
        "that (its transcode under 'if __name__ == \"__main__\":'), or leave segments out for one pipeline"
    ), done.stdout + done.stderr
    assert sorted(os.listdir(tmp_path)) == ["clip.mkv"]
