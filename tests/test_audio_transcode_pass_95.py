"""An outside pass over ``alpha2 transcode`` of sound alone and ``alpha2 batch`` into audio files, as
a demanding ffmpeg user runs them: the progress counted in time, a batch of songs into .mp3 / .m4a /
.flac, and odd inputs (8 kHz mono, 5.1 AC-3, ADPCM and u-law WAV, 96 kHz planar float, tags and
cover art, a late start, a gap, no samples, a cut file, two tracks). Inputs are made here with PyAV;
outputs are decoded and their lengths and streams checked.
"""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest

from alpha2.api import pipeline
from alpha2.apps import cli
from tests.test_audio_transcode import seconds_of, tone


def test_plain_progress_of_sound_says_time_of_length_and_speed() -> None:
    out = io.StringIO()
    shown = pipeline.PlainProgress("transcode", out, every_s=0.0)
    shown.start_seconds(180.0)
    shown.update_seconds(12.3, 100)
    time.sleep(0.01)
    shown.update_seconds(72.0, 700)
    shown.close()
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"transcode: 12\.3 s of 3:00, [0-9.]+x", lines[0]), lines
    assert re.fullmatch(r"transcode: 1:12 of 3:00, [0-9.]+x", lines[1]), lines
    assert "frame" not in out.getvalue()


def test_plain_progress_of_unknown_length_and_long_files() -> None:
    out = io.StringIO()
    shown = pipeline.PlainProgress("transcode", out, every_s=0.0)
    shown.start_seconds(None)
    shown.update_seconds(3725.0, 9)
    shown.close()
    assert re.fullmatch(r"transcode: 1:02:05, [0-9.]+x\n", out.getvalue()), out.getvalue()


def test_rich_progress_of_sound_fits_80_columns() -> None:
    out = io.StringIO()
    shown = pipeline.RichProgress("transcode", out)
    shown._progress.console.width = 80  # (a terminal of 80 columns)
    shown.start_seconds(36000.0)
    shown.update_seconds(35999.0, 1)
    time.sleep(0.15)
    shown.update_seconds(36000.0, 2)
    shown.close()
    text = out.getvalue()
    assert "frames" not in text and "fps" not in text, text
    last = [line for line in text.splitlines() if line.strip()][-1]
    assert "10:00:00 of 10:00:00, " in last and len(last) <= 80, last


def test_base_progress_of_sound_counts_frames_for_a_callback() -> None:
    seen: list[int] = []

    class Frames(pipeline.Progress):
        def update(self, frames: int) -> None:
            seen.append(frames)

    shown = Frames()
    shown.start_seconds(3.0)
    shown.update_seconds(1.0, 43)
    assert seen == [43]


def test_transcode_progress_of_sound_is_time_not_frames(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    song = tone(tmp_path / "song.flac", "flac", sample_format="s16", seconds=4.0)
    code = cli.main(["transcode", song, str(tmp_path / "song.mp3")])
    err = capsys.readouterr().err
    assert code == 0, err
    progress = [line for line in err.splitlines() if line.startswith("transcode: ")]
    assert progress and all("frame" not in line and "fps" not in line for line in progress), err
    assert re.fullmatch(r"transcode: 4\.0 s of 4\.0 s, [0-9.]+x", progress[-1]), err
    assert seconds_of(str(tmp_path / "song.mp3")) == pytest.approx(4.0, abs=0.06)


def _late_flac_mka(path: Path, start_s: float, seconds: float) -> str:
    """A Matroska FLAC tone whose first sample is at ``start_s`` (FFmpeg says its duration from 0)."""
    import av
    import numpy as np

    rate = 48000
    with av.open(str(path), "w") as out:
        stream = out.add_stream("flac", rate=rate, layout="stereo")
        stream.format = "s16"
        count = int(seconds * rate)
        wave = (0.3 * 32767 * np.sin(2 * np.pi * 440 * np.arange(count) / rate)).astype(np.int16)
        for at in range(0, count, 1024):
            block = np.repeat(wave[at : at + 1024], 2).reshape(1, -1)
            frame = av.AudioFrame.from_ndarray(block, format="s16", layout="stereo")
            frame.sample_rate, frame.pts = rate, int(start_s * rate) + at
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def test_from_past_the_end_of_a_late_matroska_is_refused_with_its_length(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    late = _late_flac_mka(tmp_path / "late.mka", 2.0, 3.0)  # 2 s .. 5 s: FFmpeg says 5 s long
    code = cli.main(["transcode", late, str(tmp_path / "o.mp3"), "--from", "3.5"])
    err = capsys.readouterr().err
    assert code == 1 and err == f"alpha2: error: --from 3.5 s is past the end of {late!r} (3.000 s long)\n"
    code = cli.main(["transcode", late, str(tmp_path / "o.mp3"), "--from", "1"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert seconds_of(str(tmp_path / "o.mp3")) == pytest.approx(2.0, abs=0.06)
    assert re.search(r"transcode: 2\.0 s of 2\.0 s, ", err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["late.mka", "o.mp3"]


def test_an_audio_stream_without_samples_is_refused_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import av

    empty = tmp_path / "empty.wav"
    with av.open(str(empty), "w") as out:
        out.add_stream("pcm_s16le", rate=48000, layout="stereo")
        out.start_encoding()
    code = cli.main(["transcode", str(empty), str(tmp_path / "o.mp3")])
    err = capsys.readouterr().err
    assert code == 1
    said = f"the audio of {str(empty)!r} (stream 0) holds no samples: nothing to write"
    assert err == f"alpha2: error: {said}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.wav"]


def test_a_file_cut_short_is_said_and_its_progress_ends_at_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    song = tone(tmp_path / "song.mp3", "libmp3lame", sample_format="s16p", seconds=4.0)
    data = Path(song).read_bytes()
    cut = tmp_path / "cut.mp3"
    cut.write_bytes(data[: len(data) // 2])  # a download stopped half way: the header still says 4 s
    code = cli.main(["transcode", str(cut), str(tmp_path / "o.m4a")])
    err = capsys.readouterr().err
    assert code == 0, err
    written = seconds_of(str(tmp_path / "o.m4a"))
    assert 1.5 < written < 2.5, err
    progress = [line for line in err.splitlines() if line.startswith("transcode: ")]
    assert re.fullmatch(rf"transcode: {written:.1f} s of {written:.1f} s, [0-9.]+x", progress[-1]), err
    said = " ".join(err.split())
    cut_said = r"the audio ends at [12]\.\d{3} s of the 4\.0\d\d s the input's header says: the file is cut"
    assert re.search(cut_said, said), err


def test_two_tracks_into_mka_both_kept_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import av

    two = tone(tmp_path / "two.mka", "flac", sample_format="s16", streams=2)
    code = cli.main(["transcode", two, str(tmp_path / "o.mka")])
    err = capsys.readouterr().err
    assert code == 0, err
    with av.open(str(tmp_path / "o.mka")) as out:
        assert [s.codec_context.name for s in out.streams.audio] == ["aac", "aac"]
    audio = [line for line in err.splitlines() if line.split()[:1] == ["audio"]]
    assert audio == ["  audio   2 streams: encoded flac to aac"], err
    code = cli.main(["transcode", two, str(tmp_path / "o.mp3")])
    err = capsys.readouterr().err
    assert code == 0, err
    with av.open(str(tmp_path / "o.mp3")) as out:
        assert len(out.streams.audio) == 1
    assert "dropped stream 1 (audio flac): the .mp3 container holds one audio stream" in " ".join(err.split())


# -- alpha2 batch into audio files ---------------------------------------------------------------------


def _songs(folder: Path) -> dict[str, float]:
    """Three songs of known lengths (name below ``folder``: seconds), of three formats, one in a
    subfolder, and a text file that is no media."""
    (folder / "sub").mkdir(parents=True)
    tone(folder / "a.flac", "flac", sample_format="s16", seconds=2.0)
    tone(folder / "b.wav", "pcm_s16le", sample_format="s16", seconds=1.5)
    tone(folder / "sub" / "c.mp3", "libmp3lame", sample_format="s16p", seconds=3.0)
    (folder / "notes.txt").write_text("not media")
    return {"a.flac": 2.0, "b.wav": 1.5, "sub/c.mp3": 3.0}


@pytest.mark.parametrize("ext", ["mp3", ".m4a", "flac"])
def test_batch_of_songs_into_an_audio_container(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ext: str
) -> None:
    import av

    songs = _songs(tmp_path / "songs")
    out = tmp_path / "out"
    code = cli.main(["batch", str(tmp_path / "songs"), "--out", str(out), "--ext", ext, "--workers", "2"])
    captured = capsys.readouterr()
    assert code == 0, captured.err + captured.out
    suffix = "." + ext.lstrip(".")
    codec = {".mp3": "mp3", ".m4a": "aac", ".flac": "flac"}[suffix]
    for name, seconds in songs.items():
        made = out / (name.rsplit(".", 1)[0] + suffix)
        with av.open(str(made)) as container:
            got = container.streams.audio[0].codec_context.name
        assert {"mp3float": "mp3"}.get(got, got) == codec
        assert seconds_of(str(made)) == pytest.approx(seconds, abs=0.06), name
    summary = captured.out
    assert "frames" not in summary and "fps" not in summary, summary
    assert re.search(r"┃ file +┃ status ┃ +size ┃ +time ┃ tries ┃", summary), summary
    assert re.search(r"^3 done, 0 skipped, 0 failed in \d+\.\d\d s$", summary, re.M), summary
    assert "not audio or video by their extension, left out: 1" in summary, summary
    lines = [line for line in captured.err.splitlines() if line.startswith("alpha2: batch: ")]
    # The worker: cpu0 here, gpu0.0 on a machine with a GPU (every worker of a batch is one).
    said = re.compile(r": [0-9.]+ [kM]?B in \d+\.\d\d s \((?:cpu\d+|gpu\d+\.\d+)\)$")
    assert len(lines) == 3 and all(said.search(x) for x in lines)


def test_batch_into_audio_refuses_video_options_once_and_unknown_containers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _songs(tmp_path / "songs")
    out = tmp_path / "out"
    code = cli.main(["batch", str(tmp_path / "songs"), "--out", str(out), "--ext", "flac", "--size", "64x64"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") <= 3, err
    assert " ".join(err.split()).startswith(
        "alpha2: error: --size shapes the video, and this output is sound alone (--container flac); leave it"
    ), err
    assert not out.exists()
    code = cli.main(["batch", str(tmp_path / "songs"), "--out", str(out), "--ext", "aiff"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 1 and "(video), or mp3, m4a, flac, opus, ogg, oga, wav, mka (sound alone)" in err, err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_batch_bars_wait_for_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    from alpha2.apps.batch import BatchProgress
    from alpha2.apps.batch_run import Finished, Outcome, Planned, Started

    monkeypatch.setenv("TERM", "xterm")
    refused = _Terminal()
    BatchProgress(stream=refused).close()  # a run refused before its plan: no empty bars above the error
    assert refused.getvalue() == ""
    stream = _Terminal()
    shown = BatchProgress(stream=stream, sound=True)
    for event in (Planned(2, 0), Started("a.mp3", 1, "cpu0", 1)):
        shown(event)
    shown(Finished(Outcome("a.mp3", True, "cpu0", frames=0, seconds=0.5, output_bytes=48_600)))
    shown.close()
    text = stream.getvalue()
    assert "alpha2: batch: 1/2 a.mp3: 48.6 kB in 0.50 s (cpu0)" in text, text
    assert "frames" not in text and "fps" not in text, text


def test_notes_name_the_extension_and_say_no_mp3_priming(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import av

    song = tone(tmp_path / "song.mp3", "libmp3lame", sample_format="s16p", cover=True)
    with av.open(song) as made:
        assert 0 < float(made.start_time / av.time_base) < 0.1  # LAME's priming: FFmpeg starts it late
    code = cli.main(["transcode", song, str(tmp_path / "song.m4a")])
    said = " ".join(capsys.readouterr().err.split())
    assert code == 0, said
    assert "the .m4a container holds no cover art" in said and "ipod" not in said, said
    assert "timestamps shifted" not in said, said
    two = tone(tmp_path / "two.mka", "flac", sample_format="s16", streams=2)
    code = cli.main(["transcode", two, str(tmp_path / "two.oga")])
    said = " ".join(capsys.readouterr().err.split())
    assert code == 0 and "the .oga container holds one audio stream" in said, said
    late = _late_flac_mka(tmp_path / "late.mka", 2.0, 1.0)
    code = cli.main(["transcode", late, str(tmp_path / "late.mp3")])
    said = " ".join(capsys.readouterr().err.split())
    assert code == 0 and "timestamps shifted by -2.000 s: the input starts at 2.000 s" in said, said


def test_codec_copy_refused_where_the_muxer_refuses_at_its_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ac3 = tone(tmp_path / "surround.mka", "ac3", layout="5.1", sample_format="fltp", seconds=1.0)
    code = cli.main(["transcode", ac3, str(tmp_path / "o.opus"), "--codec", "copy"])
    said = " ".join(capsys.readouterr().err.split())
    assert code == 1
    assert said.startswith(
        "alpha2: error: --codec copy: audio stream 0 cannot be copied: the opus container cannot hold ac3;"
    ), said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["surround.mka"]
    code = cli.main(["transcode", ac3, str(tmp_path / "o.m4a"), "--codec", "copy"])  # MP4 holds AC-3
    assert code == 0, capsys.readouterr().err
    assert seconds_of(str(tmp_path / "o.m4a")) == pytest.approx(1.0, abs=0.04)


def test_a_gap_in_sound_alone_is_filled_and_said_without_a_picture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import av
    import numpy as np

    gap = tmp_path / "gap.mka"
    rate = 48000
    with av.open(str(gap), "w") as out:
        stream = out.add_stream("flac", rate=rate, layout="mono")
        stream.format = "s16"
        count = 10 * 4608  # whole FLAC frames (4608 samples): no packet holds both sides of the gap
        wave = (9000 * np.sin(2 * np.pi * 440 * np.arange(count) / rate)).astype(np.int16)
        for second in (0, 3):  # 0.96 s of tone at 0, 0.96 s at 3: 2.04 s of nothing between
            for at in range(0, count, 1152):
                frame = av.AudioFrame.from_ndarray(wave[None, at : at + 1152], format="s16", layout="mono")
                frame.sample_rate, frame.pts = rate, second * rate + at
                for packet in stream.encode(frame):
                    out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    code = cli.main(["transcode", str(gap), str(tmp_path / "o.wav")])
    said = " ".join(capsys.readouterr().err.split())
    assert code == 0, said
    assert seconds_of(str(tmp_path / "o.wav")) == pytest.approx(3.96, abs=0.001)
    assert "its timestamps skip 2.040 s at 0.960 s of the output: filled with silence" in said, said
    assert "picture" not in said, said


def _vorbis(path: Path) -> str:
    """An Ogg Vorbis tone, by FFmpeg's own Vorbis encoder (experimental: PyAV's FFmpeg has no
    libvorbis); skipped where this FFmpeg cannot write it."""
    import av
    import numpy as np

    try:
        out = av.open(str(path), "w")
        stream = out.add_stream("vorbis", rate=44100, layout="stereo")
        stream.codec_context.options = {"strict": "experimental"}
        wave = (0.5 * np.sin(2 * np.pi * 440 * np.arange(2 * 44100) / 44100)).astype(np.float32)
        for at in range(0, wave.size, 1024):
            frame = av.AudioFrame.from_ndarray(
                np.tile(wave[at : at + 1024], (2, 1)), format="fltp", layout="stereo"
            )
            frame.sample_rate, frame.pts = 44100, at
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
        out.close()
    except (av.error.FFmpegError, ValueError) as exc:
        pytest.skip(f"this FFmpeg writes no Vorbis: {exc}")
    return str(path)


@pytest.mark.parametrize(
    ("name", "codec", "rate", "layout", "fmt", "seconds", "said", "unsaid"),
    [
        ("mono8k.wav", "pcm_s16le", 8000, "mono", "s16", 2.0, None, "channels passed one for one"),
        ("ulaw.wav", "pcm_mulaw", 8000, "mono", "s16", 2.0, None, "channels passed one for one"),
        ("adpcm.wav", "adpcm_ms", 22050, "mono", "s16", 2.0, None, "channels passed one for one"),
        ("surround.ac3", "ac3", 48000, "5.1", "fltp", 2.0, "downmixed from 6 channels to stereo", None),
        ("float96.m4a", "aac", 96000, "stereo", "fltp", 2.0, "resampled 96000 Hz -> 48000 Hz", None),
        ("float96.mka", "pcm_f32le", 96000, "stereo", "flt", 2.0, "resampled 96000 Hz", "passed one for one"),
    ],
)
def test_odd_inputs_into_mp3(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    codec: str,
    rate: int,
    layout: str,
    fmt: str,
    seconds: float,
    said: str | None,
    unsaid: str | None,
) -> None:
    import av

    made = tone(tmp_path / name, codec, rate=rate, layout=layout, sample_format=fmt, seconds=seconds)
    code = cli.main(["transcode", made, str(tmp_path / "o.mp3")])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0, err
    with av.open(str(tmp_path / "o.mp3")) as out:
        context = out.streams.audio[0].codec_context
        channels = len(context.layout.channels)
    assert channels == (1 if layout == "mono" else 2), err
    assert seconds_of(str(tmp_path / "o.mp3")) == pytest.approx(seconds, abs=0.07), err
    if said is not None:
        assert said in err, err
    if unsaid is not None:
        assert unsaid not in err, err


def test_ogg_vorbis_into_m4a(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    song = _vorbis(tmp_path / "song.ogg")
    code = cli.main(["transcode", song, str(tmp_path / "o.m4a")])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0 and "encoded vorbis to aac" in err, err
    assert seconds_of(str(tmp_path / "o.m4a")) == pytest.approx(2.0, abs=0.05), err
