"""``alpha2 transcode`` of sound alone: audio-only inputs, and any input into an audio container.

The inputs are sine tones made here with PyAV; the outputs are decoded and checked: codec, rate,
channels, length (within a codec frame), and the samples (the tone's frequency and loudness).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api.transcoder import transcode
from alpha2.apps import cli
from alpha2.ffmpeg_bridge.errors import NoVideoStreamError, OutputFormatError
from alpha2.gpu.errors import Error, ErrorKind, InvalidInputError
from tests.media import make_clip

FREQ = 440.0
AMPLITUDE = 0.5


def tone(
    path: Path,
    codec: str,
    *,
    rate: int = 44100,
    layout: str = "stereo",
    seconds: float = 3.0,
    sample_format: str = "fltp",
    title: str = "Tone",
    cover: bool = False,
    streams: int = 1,
) -> str:
    """A file of a 440 Hz sine at half scale in every channel (and a JPEG cover where asked)."""
    out = av.open(str(path), "w")
    out.metadata["title"] = title
    made: list[Any] = []
    for _ in range(streams):
        stream: Any = out.add_stream(codec, rate=rate)
        stream.layout = layout
        stream.format = sample_format
        made.append(stream)
    if cover:
        picture_stream: Any = out.add_stream("mjpeg", rate=1)
        picture_stream.width, picture_stream.height, picture_stream.pix_fmt = 32, 32, "yuvj420p"
        picture_stream.disposition = av.stream.Disposition.attached_pic
        picture = av.VideoFrame.from_ndarray(np.full((32, 32, 3), 120, np.uint8), format="rgb24")
        picture = picture.reformat(format="yuvj420p")
        picture.pts = 0
        for packet in picture_stream.encode(picture) + picture_stream.encode(None):
            packet.stream = picture_stream
            out.mux(packet)
    count = int(seconds * rate)
    channels = len(av.AudioLayout(layout).channels)
    wave = (AMPLITUDE * np.sin(2 * np.pi * FREQ * np.arange(count) / rate)).astype(np.float32)
    for stream in made:
        for start in range(0, count, 1024):
            block = np.ascontiguousarray(np.tile(wave[start : start + 1024], (channels, 1)))
            frame = av.AudioFrame.from_ndarray(block, format="fltp", layout=layout)
            frame.sample_rate, frame.pts = rate, start
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    out.close()
    return str(path)


def decoded(path: str) -> tuple[str, int, int, np.ndarray, str]:
    """The first audio stream's codec, rate, channels, samples (channels x n, as decoded) and the
    decoder's sample format."""
    with av.open(path) as container:
        stream = container.streams.audio[0]
        codec = {"mp3float": "mp3"}.get(stream.codec_context.name, stream.codec_context.name)
        rate, channels = stream.codec_context.sample_rate, len(stream.codec_context.layout.channels)
        blocks, fmt = [], ""
        for frame in container.decode(stream):
            fmt = frame.format.name
            array = frame.to_ndarray().astype(np.float64)
            blocks.append(array if frame.format.is_planar else array.reshape(-1, channels).T)
    return codec, rate, channels, np.concatenate(blocks, 1), fmt


def scaled(samples: np.ndarray, fmt: str) -> np.ndarray:
    """Integer samples as floats in [-1, 1]."""
    base = fmt.rstrip("p")
    if base == "s16":
        return samples / 32768.0
    if base == "s32":
        return samples / 2147483648.0
    return samples


def check_tone(samples: np.ndarray, rate: int, fmt: str, *, mixed: bool = False) -> None:
    """The samples are the 440 Hz tone at half scale (lossy codecs: loudness within 10 %); ``mixed``:
    channels were mixed into these (FFmpeg's downmix adds the centre and surrounds: louder)."""
    wave = scaled(samples[0], fmt)
    middle = wave[len(wave) // 4 : 3 * len(wave) // 4]  # the edges: codec priming and fades
    rms = float(np.sqrt(np.mean(middle**2)))
    if mixed:
        assert rms > AMPLITUDE / np.sqrt(2) + 0.1, rms
    else:
        assert abs(rms - AMPLITUDE / np.sqrt(2)) < 0.035, rms
    spectrum = np.abs(np.fft.rfft(middle * np.hanning(len(middle))))
    peak = float(np.fft.rfftfreq(len(middle), 1 / rate)[int(np.argmax(spectrum))])
    assert abs(peak - FREQ) < 3, peak


def seconds_of(path: str) -> float:
    with av.open(path) as container:
        stream = container.streams.audio[0]
        total = sum(frame.samples for frame in container.decode(stream))
        return total / stream.codec_context.sample_rate


@pytest.fixture
def flac(tmp_path: Path) -> str:
    return tone(tmp_path / "song.flac", "flac", sample_format="s16")


@pytest.mark.parametrize(
    ("ext", "codec", "rate", "frame"),
    [
        (".mp3", "mp3", 44100, 1152),
        (".m4a", "aac", 44100, 1024),
        (".mp4", "aac", 44100, 1024),
        (".mov", "aac", 44100, 1024),
        (".flac", "flac", 44100, 1),
        (".opus", "opus", 48000, 960),
        (".ogg", "opus", 48000, 960),
        (".wav", "pcm_s16le", 44100, 1),
        (".mka", "aac", 44100, 1024),
        (".mkv", "aac", 44100, 1024),
        (".webm", "opus", 48000, 960),
    ],
)
def test_each_container_gets_its_codec_and_the_tone(
    tmp_path: Path, flac: str, ext: str, codec: str, rate: int, frame: int
) -> None:
    out = str(tmp_path / f"out{ext}")
    stats = transcode(flac, out)
    got_codec, got_rate, channels, samples, fmt = decoded(out)
    assert (got_codec, got_rate, channels) == (codec, rate, 2)
    check_tone(samples, got_rate, fmt)
    # Lossy codecs' priming is trimmed by the decoder where the container says it (MP3's LAME tag,
    # MP4's edit list, Opus's pre-skip): the length within a codec frame of the input's 3 s.
    assert abs(seconds_of(out) - 3.0) <= frame / rate + 1e-6, seconds_of(out)
    assert stats.encoder["audio_only"] is True and stats.frames == 0
    assert stats.output_bytes == os.path.getsize(out)
    if rate != 44100:
        assert "resampled 44100 Hz -> 48000 Hz" in stats.encoder["audio"]
    with av.open(out) as container:
        assert not container.streams.video
        assert container.metadata.get("title", container.streams.audio[0].metadata.get("title")) == "Tone"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["song.flac", f"out{ext}"])


def test_wav_keeps_24_bits_and_flac_from_mp3_is_16(tmp_path: Path) -> None:
    deep = tone(tmp_path / "deep.flac", "flac", sample_format="s32")
    with av.open(deep) as container:
        assert container.streams.audio[0].codec_context.format.name == "s32"  # FLAC's 24 bits
    transcode(deep, str(tmp_path / "deep.wav"))
    assert decoded(str(tmp_path / "deep.wav"))[0] == "pcm_s24le"
    transcode(str(tmp_path / "deep.flac"), str(tmp_path / "deep.mp3"))
    transcode(str(tmp_path / "deep.mp3"), str(tmp_path / "from_mp3.flac"))
    with av.open(str(tmp_path / "from_mp3.flac")) as container:
        assert container.streams.audio[0].codec_context.format.name == "s16"


def test_downmix_and_resample_are_said(tmp_path: Path) -> None:
    src = tone(tmp_path / "wide.flac", "flac", rate=96000, layout="5.1", sample_format="s16", seconds=1.0)
    stats = transcode(src, str(tmp_path / "out.mp3"))
    codec, rate, channels, samples, fmt = decoded(str(tmp_path / "out.mp3"))
    assert (codec, rate, channels) == ("mp3", 48000, 2)
    check_tone(samples, rate, fmt, mixed=True)  # every channel held the tone: the downmix keeps it
    said = stats.encoder["audio"]
    assert "resampled 96000 Hz -> 48000 Hz (libmp3lame takes no 96000 Hz)" in said
    assert "downmixed from 6 channels to stereo" in said, said


def test_bitrate_sets_the_audio_rate(tmp_path: Path, flac: str) -> None:
    low, high = str(tmp_path / "low.mp3"), str(tmp_path / "high.mp3")
    transcode(flac, low, {"bitrate": 64_000})
    stats = transcode(flac, high, {"bitrate": 256_000})
    assert "at 256 kb/s" in stats.encoder["audio"]
    assert os.path.getsize(high) > 3 * os.path.getsize(low)
    assert abs(os.path.getsize(low) * 8 / 3.0 - 64_000) < 8_000


@pytest.mark.parametrize("ext", [".mp3", ".wav", ".opus"])
def test_from_and_to_cut_to_the_sample(tmp_path: Path, flac: str, ext: str) -> None:
    out = str(tmp_path / f"part{ext}")
    stats = transcode(flac, out, {"from_seconds": 1.0, "to_seconds": 2.5})
    assert abs(seconds_of(out) - 1.5) <= 1152 / 44100, seconds_of(out)
    assert stats.cut is not None and stats.cut["from_seconds"] == 1.0 and stats.cut["to_seconds"] == 2.5
    out2 = str(tmp_path / f"dur{ext}")
    transcode(flac, out2, {"from_seconds": 0.5, "duration_seconds": 1.0})
    assert abs(seconds_of(out2) - 1.0) <= 1152 / 44100


def test_from_past_the_end_is_refused_and_writes_nothing(tmp_path: Path, flac: str) -> None:
    with pytest.raises(InvalidInputError, match="past the end"):
        transcode(flac, str(tmp_path / "out.mp3"), {"from_seconds": 10.0})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["song.flac"]


def test_cover_art_kept_where_the_container_holds_it(tmp_path: Path) -> None:
    src = tone(tmp_path / "art.flac", "flac", sample_format="s16", cover=True, seconds=1.0)
    for ext in (".mp3", ".flac", ".mka"):
        out = str(tmp_path / f"out{ext}")
        stats = transcode(src, out)
        assert any(s.attached_picture for s in stats.kept_streams), ext
        with av.open(out) as container:  # (Matroska's cover.jpg attachment is read back as one)
            attached = av.stream.Disposition.attached_pic
            pictures = [s for s in container.streams.video if s.disposition & attached]
            assert [p.codec_context.name for p in pictures] == ["mjpeg"], ext
            assert decoded(out)[0] == ("flac" if ext == ".flac" else "mp3" if ext == ".mp3" else "aac")
    stats = transcode(src, str(tmp_path / "out.m4a"))
    dropped = [d for d in stats.dropped_streams if d.kind.value == "video"]
    assert len(dropped) == 1 and "holds no cover art" in dropped[0].reason
    with av.open(str(tmp_path / "out.m4a")) as container:
        assert not container.streams.video and container.streams.audio[0].codec_context.name == "aac"


def test_a_films_audio_to_m4a(tmp_path: Path) -> None:
    film = make_clip(tmp_path / "film.mp4", frames=25, audio=True).path
    stats = transcode(film, str(tmp_path / "film.m4a"))
    with av.open(str(tmp_path / "film.m4a")) as container:
        assert not container.streams.video and container.streams.audio[0].codec_context.name == "aac"
    assert [d.reason for d in stats.dropped_streams if d.kind.value == "video"] == [
        "the .m4a output is sound alone"
    ]


def test_audio_track_chooses_and_one_stream_containers_take_one(tmp_path: Path) -> None:
    src = tone(tmp_path / "two.mka", "flac", sample_format="s16", streams=2, seconds=1.0)
    stats = transcode(src, str(tmp_path / "first.mp3"))
    assert [s.index for s in stats.kept_streams] == [0]
    assert "holds one audio stream" in stats.dropped_streams[0].reason
    stats = transcode(src, str(tmp_path / "second.mp3"), {"audio_tracks": ("1",)})
    assert [s.index for s in stats.kept_streams] == [1]
    stats = transcode(src, str(tmp_path / "both.mka"))
    assert [s.index for s in stats.kept_streams] == [0, 1]


def test_codec_copy_copies_or_refuses(tmp_path: Path, flac: str) -> None:
    stats = transcode(flac, str(tmp_path / "copy.mka"), {"codec": "copy"})
    assert stats.encoder["audio"] == "copied" and stats.audio_packets_copied > 0
    assert decoded(str(tmp_path / "copy.mka"))[0] == "flac"
    with pytest.raises(InvalidInputError, match="cannot be copied: the mp3 container cannot hold flac"):
        transcode(flac, str(tmp_path / "copy.mp3"), {"codec": "copy"})
    assert not (tmp_path / "copy.mp3").exists()


def test_video_options_are_refused_naming_them(tmp_path: Path, flac: str) -> None:
    with pytest.raises(InvalidInputError, match="size, crf shape the video"):
        transcode(flac, str(tmp_path / "out.mp3"), {"size": (640, 360), "crf": 20})
    with pytest.raises(InvalidInputError, match="audio=False leaves nothing to write"):
        transcode(flac, str(tmp_path / "out.mp3"), {"audio": False})
    with pytest.raises(OutputFormatError, match=r"cannot write sound into 'out\.gif'"):
        transcode(flac, str(tmp_path / "out.gif"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["song.flac"]


def test_interrupted_run_leaves_no_output(tmp_path: Path) -> None:
    src = tone(tmp_path / "long.flac", "flac", sample_format="s16", seconds=20.0)
    (tmp_path / "out.mp3").write_bytes(b"old")  # a file there is kept as it was

    def stop(done: int) -> None:
        if done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        transcode(src, str(tmp_path / "out.mp3"), {"overwrite": True}, progress=stop)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.flac", "out.mp3"]
    assert (tmp_path / "out.mp3").read_bytes() == b"old"


def test_no_audio_and_no_video_is_refused(tmp_path: Path) -> None:
    subs = tmp_path / "subs.srt"
    subs.write_text("1\n00:00:00,000 --> 00:00:01,000\nhello\n\n")
    with pytest.raises(NoVideoStreamError, match="holds no video or audio to transcode: subtitle") as caught:
        transcode(str(subs), str(tmp_path / "out.mp3"))
    assert isinstance(caught.value, Error) and caught.value.kind is ErrorKind.INVALID_INPUT
    with pytest.raises(NoVideoStreamError, match="holds no video or audio"):
        transcode(str(subs), str(tmp_path / "out.mp4"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["subs.srt"]


def test_cli_summary_fits_80_columns(tmp_path: Path, flac: str, capsys: pytest.CaptureFixture[str]) -> None:
    os.environ["COLUMNS"] = "80"
    try:
        code = cli.main(["transcode", flac, str(tmp_path / "song.mp3"), "--from", "1", "--to", "2.5"])
    finally:
        del os.environ["COLUMNS"]
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [line for line in err.splitlines() if not line.startswith("transcode: ")]  # the progress
    assert lines[0].startswith("alpha2: transcoded 1.5") and "of audio" in lines[0], err
    assert all(len(line) <= 80 for line in lines if str(tmp_path) not in line), err  # (a path: unbroken)
    assert any(line.split()[:1] == ["audio"] and "libmp3lame" in line for line in lines), err
    assert any("part" in line and "from 1.000 s to 2.500 s" in line for line in lines), err
    code = cli.main(["transcode", flac, str(tmp_path / "x.mp3"), "--size", "640x360"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("alpha2: error: --size shapes the video") and err.count("\n") == 1
    assert not (tmp_path / "x.mp3").exists()
