"""What ``alpha2 transcode`` makes of audio it copies or must encode again, as ``ffmpeg`` would: AAC
whose first packets an MP4 edit list discards is kept (those packets decode to nothing by design, the
audio is not broken); multichannel audio keeps its channels when encoded again (Opus's mapping family
1, AAC 5.1); PCM is not copied into MP4 (whose PCM older players read as noise) but encoded to FLAC;
a lossless source cut with the video stays lossless. The inputs are made with PyAV."""

from __future__ import annotations

import fractions
import json
from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.ffmpeg_bridge.side_streams import (
    _undecodable,
    encoder_layout,
    encoder_rate,
    is_lossless_audio,
)


def _make(
    path: Path,
    audio_codec: str,
    *,
    seconds: float = 2.0,
    layout: str = "mono",
    rate: int = 48_000,
    sample_format: str | None = None,
    shift: float = 0.0,
) -> str:
    """An H.264 video (64x48, 25 fps, one key frame) and a 440 Hz tone in every channel of ``layout``;
    ``shift``: every timestamp moved this many seconds back (the MP4 muxer then writes an edit list
    that discards what lies before 0, as ``ffmpeg -ss 1 -c copy`` makes)."""
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=25)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        video.codec_context.gop_size = 250
        video.codec_context.options = {"preset": "ultrafast"}
        audio = out.add_stream(audio_codec, rate=rate)
        audio.layout = layout
        if sample_format is not None:
            audio.format = sample_format
        audio.time_base = fractions.Fraction(1, rate)
        channels = len(av.AudioLayout(layout).channels)
        packets: list[av.Packet] = []
        for i in range(round(seconds * 25)):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), i * 5 % 255, np.uint8), format="rgb24")
            frame.pts, frame.time_base = i, fractions.Fraction(1, 25)
            packets += video.encode(frame)
        packets += video.encode(None)
        total = round(seconds * rate)
        tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(total) / rate)).astype(np.float32)
        for start in range(0, total, 1024):
            part = tone[start : start + 1024]
            chunk = np.ascontiguousarray(np.repeat(part, channels)[np.newaxis, :])  # packed: one plane
            sound = av.AudioFrame.from_ndarray(chunk, format="flt", layout=layout)
            sound.sample_rate, sound.pts, sound.time_base = rate, start, fractions.Fraction(1, rate)
            packets += audio.encode(sound)
        packets += audio.encode(None)
        for packet in packets:
            assert packet.pts is not None and packet.time_base is not None
            moved = round(fractions.Fraction(shift) / packet.time_base)
            packet.pts -= moved
            if packet.dts is not None:
                packet.dts -= moved
        packets.sort(key=lambda p: float((p.dts if p.dts is not None else p.pts or 0) * p.time_base))
        for packet in packets:
            out.mux(packet)
    return str(path)


def _audio(path: str) -> tuple[str, int, str, float]:
    """The output's audio: codec, channels, layout and seconds of sound decoded."""
    with av.open(path) as container:
        stream = container.streams.audio[0]
        cc = stream.codec_context
        samples = sum(frame.samples for frame in container.decode(stream))
        return cc.name, len(cc.layout.channels), cc.layout.name, samples / cc.sample_rate


# -- 1. an edit list's pre-roll ----------------------------------------------------------------------


def test_aac_behind_an_edit_list_is_seen_to_decode(tmp_path: Path) -> None:
    src = _make(tmp_path / "edit.mp4", "aac", seconds=3.0, rate=44_100, shift=1.0)
    with av.open(src) as container:
        packets = [p for p in container.demux(container.streams.audio[0]) if p.size]
        assert sum(p.is_discard for p in packets) > 8  # pre-roll the edit list skips
    assert _undecodable(src, [1]) == {}


@pytest.mark.parametrize("from_seconds", [0.0, 0.4])
def test_aac_behind_an_edit_list_is_kept(tmp_path: Path, from_seconds: float) -> None:
    src = _make(tmp_path / "edit.mp4", "aac", seconds=3.0, rate=44_100, shift=1.0)
    out = str(tmp_path / "out.mp4")
    stats = transcode(src, out, TranscodeOptions(from_seconds=from_seconds))
    assert not stats.dropped_streams, stats.dropped_streams
    said = stats.encoder["audio"]
    assert said == "copied" if not from_seconds else "cut with the video" in said, said
    codec, channels, _, seconds = _audio(out)
    assert codec == "aac" and channels == 1
    assert seconds == pytest.approx(2.0 - from_seconds, abs=0.05)


# -- 2. channels kept when encoded again --------------------------------------------------------------


@pytest.mark.parametrize(
    ("ext", "from_seconds", "codec", "layout"),
    [(".webm", 0.0, "opus", "5.1"), (".mp4", 0.3, "aac", "5.1"), (".mkv", 0.3, "aac", "5.1")],
)
def test_5_1_audio_keeps_its_six_channels(
    tmp_path: Path, ext: str, from_seconds: float, codec: str, layout: str
) -> None:
    src = _make(tmp_path / "a51.mkv", "ac3", layout="5.1(side)")
    out = str(tmp_path / f"out{ext}")
    stats = transcode(src, out, TranscodeOptions(from_seconds=from_seconds))
    said = stats.encoder["audio"]
    assert "re-encoded" in said and "downmix" not in said, said
    got, channels, got_layout, seconds = _audio(out)
    assert (got, channels) == (codec, 6)
    # AAC's 5.1(side) read back as '6 channels' in no known place (written in a PCE, as ffmpeg's command
    # line writes it): its sides go to the backs of 5.1, AAC's channel configuration 6.
    assert got_layout == layout
    assert seconds == pytest.approx(2.0 - from_seconds, abs=0.05)


def test_encoder_layout_keeps_the_channels_where_it_can() -> None:
    side = av.AudioLayout("5.1(side)")
    assert encoder_layout("aac", side, 48_000) == "5.1"  # (its 5.1(side) reads back in no known place)
    assert encoder_layout("libopus", side, 48_000) == "5.1"  # Vorbis order: the sides become backs
    assert encoder_layout("libopus", av.AudioLayout("stereo"), 48_000) == "stereo"
    # A layout the encoder lacks goes into the smallest it takes that holds every channel, the others
    # silent (FFmpeg's command line picks 5.0 for quad in ALAC); quad went into 4.0 before, its two back
    # channels mixed into one (found by an outside pass).
    assert encoder_layout("alac", av.AudioLayout("quad"), 48_000) == "5.0"
    assert encoder_layout("alac", av.AudioLayout("hexagonal"), 48_000) == "6.1(back)"
    assert encoder_layout("libopus", av.AudioLayout("hexagonal"), 48_000) == "5.1"  # none holds it
    # Opus's mapping family 255 holds 16 channels; MP3 holds at most two: a downmix is then said.
    assert encoder_layout("libopus", av.AudioLayout("hexadecagonal"), 48_000) == "hexadecagonal"
    assert encoder_layout("libmp3lame", av.AudioLayout("hexadecagonal"), 48_000) is None
    assert encoder_rate("libopus", 44_100) == 48_000
    assert encoder_rate("aac", 192_000) == 96_000
    assert encoder_rate("flac", 192_000) == 192_000


def test_sixteen_channels_into_webm_keep_all_of_them(tmp_path: Path) -> None:
    # Opus with mapping family 255 (a downmix to stereo before).
    src = _make(tmp_path / "many.mkv", "pcm_s16le", layout="hexadecagonal", sample_format="s16")
    out = str(tmp_path / "out.webm")
    stats = transcode(src, out, TranscodeOptions())
    said = stats.encoder["audio"]
    assert "Opus keeps all 16 channels" in said and "downmix" not in said, said
    with av.open(out) as container:
        assert container.streams.audio[0].codec_context.channels == 16


# -- 3. PCM and MP4; 4. lossless stays lossless --------------------------------------------------------


def test_pcm_is_not_copied_into_mp4_but_encoded_to_flac(tmp_path: Path) -> None:
    src = _make(tmp_path / "in.mov", "pcm_s24le", sample_format="s32")
    out = str(tmp_path / "out.mp4")
    stats = transcode(src, out, TranscodeOptions())
    said = stats.encoder["audio"]
    assert said.startswith("re-encoded pcm_s24le to flac") and "lossless" in said, said
    with av.open(out) as container:
        assert container.streams.audio[0].codec_context.format.name == "s32"  # 24 bits kept
    assert _audio(out)[0] == "flac"
    # Into .mov, PCM is copied as it is.
    stats = transcode(src, str(tmp_path / "out.mov"), TranscodeOptions())
    assert stats.encoder["audio"] == "copied"


@pytest.mark.parametrize(
    ("src_name", "codec", "sample_format", "ext", "expect"),
    [
        ("in.mkv", "flac", "s16", ".mkv", "flac"),
        ("in.mkv", "flac", "s16", ".mp4", "flac"),
        ("in.mov", "pcm_s24le", "s32", ".mov", "pcm_s24le"),
        ("in.mov", "pcm_s24le", "s32", ".mp4", "flac"),
        ("in.m4a.mov", "alac", "s16p", ".mov", "alac"),
    ],
)
def test_a_lossless_source_cut_with_the_video_stays_lossless(
    tmp_path: Path, src_name: str, codec: str, sample_format: str, ext: str, expect: str
) -> None:
    src = _make(tmp_path / src_name, codec, sample_format=sample_format)
    out = str(tmp_path / f"out{ext}")
    stats = transcode(src, out, TranscodeOptions(from_seconds=0.2))
    said = stats.encoder["audio"]
    assert "cut with the video" in said and "lossless, as the source" in said, said
    got, channels, _, seconds = _audio(out)
    assert (got, channels) == (expect, 1)
    assert seconds == pytest.approx(1.8, abs=0.05)


@pytest.mark.parametrize(
    ("codec", "sample_format", "said"),
    [
        ("pcm_f32le", "flt", "its floating-point samples rounded to 24-bit integers"),
        ("pcm_s32le", "s32", "its 32-bit samples rounded to 24 bits"),
    ],
)
def test_pcm_flac_cannot_hold_is_not_said_lossless(
    tmp_path: Path, codec: str, sample_format: str, said: str
) -> None:
    """Float and 32-bit PCM into MP4 go to FLAC, which FFmpeg writes in 24 bits at most: that was said
    to be 'lossless, as the source' (found by an outside pass)."""
    src = _make(tmp_path / "in.mov", codec, sample_format=sample_format)
    stats = transcode(src, str(tmp_path / "out.mp4"), TranscodeOptions())
    told = stats.encoder["audio"]
    assert "to flac" in told and said in told and "lossless" not in told, told


def test_channels_in_no_known_place_labelled_by_flac_are_said(tmp_path: Path) -> None:
    """Six PCM channels in no known place into MP4: FLAC names a layout for every count of channels, so
    they read back as 5.1(side); that was unsaid (found by an outside pass; ffmpeg warns 'Guessed
    Channel Layout')."""
    src = _make(tmp_path / "in.mkv", "pcm_s16le", layout="6 channels")
    out = str(tmp_path / "out.mp4")
    stats = transcode(src, out, TranscodeOptions())
    told = stats.encoder["audio"]
    assert "its 6 channels, in no known place, labelled 5.1(side)" in told, told
    assert _audio(out)[:3] == ("flac", 6, "5.1(side)")


@pytest.mark.parametrize(
    ("output", "codec"), [("out.flac", "flac"), ("out.mp4", "flac"), ("out.m4a", "alac")]
)
def test_two_channels_in_no_known_place_into_flac_or_alac_are_stereo_unsaid(
    tmp_path: Path, output: str, codec: str
) -> None:
    """Two PCM channels in no known place (every plain stereo WAV reads so) are stereo to FFmpeg and
    every player, as one such channel is mono: 'its 2 channels, in no known place, labelled stereo:
    flac names one layout a count' was said of every stereo WAV into .flac (an outside pass)."""
    src = _make(tmp_path / "in.mkv", "pcm_s16le", layout="2 channels")
    out = str(tmp_path / output)
    options = TranscodeOptions(codec=codec) if output.endswith(".m4a") else TranscodeOptions()
    stats = transcode(src, out, options)
    told = stats.encoder["audio"]
    assert "no known place" not in told and "labelled" not in told, told
    assert _audio(out)[:3] == (codec, 2, "stereo")


def test_a_lossy_source_cut_stays_in_the_containers_lossy_codec(tmp_path: Path) -> None:
    src = _make(tmp_path / "in.mkv", "ac3")
    stats = transcode(src, str(tmp_path / "out.mkv"), TranscodeOptions(from_seconds=0.2))
    assert "lossless" not in stats.encoder["audio"]
    assert _audio(str(tmp_path / "out.mkv"))[0] == "aac"


def test_which_codecs_are_lossless() -> None:
    for name in ("flac", "alac", "pcm_s16le", "pcm_s24le", "wavpack", "truehd"):
        assert is_lossless_audio(name), name
    for name in ("aac", "opus", "ac3", "dts", "pcm_alaw", "pcm_mulaw", "no such codec"):
        assert not is_lossless_audio(name), name


def test_audio_the_container_refuses_is_said_once(tmp_path: Path) -> None:
    """AAC into WebM: the reason was said twice, PyAV's words after alpha2's ("the webm container cannot
    hold aac ('webm' format does not support 'aac' codec)"; found by an outside pass)."""
    src = _make(tmp_path / "in.mkv", "aac")
    stats = transcode(src, str(tmp_path / "out.webm"), TranscodeOptions())
    told = stats.encoder["audio"]
    assert told == "re-encoded aac to libopus: the webm container cannot hold aac", told


def test_a_layout_changed_for_the_encoder_is_said(tmp_path: Path) -> None:
    """Kept in a larger layout, or mixed into another of as many channels: the summary says which (a
    quad source into MOV was mixed into 4.0 unsaid, with 'lossless, as the source')."""
    src = _make(tmp_path / "quad.mkv", "flac", layout="quad", sample_format="s16")
    stats = transcode(src, str(tmp_path / "out.mov"), TranscodeOptions())
    said = stats.encoder["audio"]
    assert "its quad channels kept as they are in 5.0 (FC silent): alac takes no quad layout" in said, said
    with av.open(str(tmp_path / "out.mov")) as container:
        assert container.streams.audio[0].codec_context.layout.name == "5.0"
    hexagonal = _make(tmp_path / "hex.mkv", "flac", layout="hexagonal", sample_format="s16")
    said = transcode(hexagonal, str(tmp_path / "out.webm"), TranscodeOptions()).encoder["audio"]
    said_mix = (
        "its hexagonal channels mixed into 5.1 (BC into BL+BR, LFE silent): libopus takes no hexagonal layout"
    )
    assert said_mix in said, said


def test_streams_are_named_by_their_codec_not_their_decoder(tmp_path: Path) -> None:
    """The summary said 'copied (mp3float, ...)' and 'cannot hold mp3float' (FFmpeg's MP3 decoder's
    name); ffprobe and the rest of alpha2 say mp3."""
    src = _make(tmp_path / "m.mkv", "libmp3lame", layout="stereo")
    stats = transcode(src, str(tmp_path / "out.mp4"), TranscodeOptions())
    report = stats.as_dict()
    assert [k["codec"] for k in report["kept_streams"] if k["kind"] == "audio"] == ["mp3"], report
    assert "mp3float" not in json.dumps(report)
