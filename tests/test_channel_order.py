"""Audio in a custom channel order (a MOV ``chan`` atom in an order FFmpeg's native layouts lack, as
FFmpeg 5 and Apple's tools write 7.1): PyAV 18 frees such a layout's map twice, and the process
aborted (``double free or corruption``) at the first look at the stream. Every input alpha2 opens now
gets a map-free layout (:mod:`alpha2.ffmpeg_bridge.channel_layouts`), and the samples are put into
FFmpeg's order where the channels were in another, so each channel keeps its place.

The input: 7.1 PCM written by PyAV (FFmpeg 8 writes a channel bitmap), then its ``chan`` atom set to
``kAudioChannelLayoutTag_MPEG_7_1_C``, the tag FFmpeg 5.1 writes for 7.1, which FFmpeg 8 reads as
FL FR FC LFE SL SR BL BR. Channel k of the file holds the constant (k + 1) * 1000.
"""

from __future__ import annotations

import fractions
import os
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.ffmpeg_bridge.audio import AudioDecodeSession
from alpha2.ffmpeg_bridge.channel_layouts import (
    interleaved,
    make_layouts_safe,
    native_positions,
    open_input,
)
from alpha2.ffmpeg_bridge.side_streams import probe_streams

RATE = 48_000
MPEG_7_1_C = bytes.fromhex("00800008")
"""The ``chan`` atom's layout tag FFmpeg 5.1 writes for 7.1 (L R C LFE Ls Rs Rls Rrs)."""
FILE_ORDER = ("FL", "FR", "FC", "LFE", "SL", "SR", "BL", "BR")
"""How FFmpeg 8 reads that tag's channels, in the file's order."""
NATIVE_7_1 = ("FL", "FR", "FC", "LFE", "BL", "BR", "SL", "SR")


def _custom_order_mov(path: Path, *, video: bool = True, codec: str = "pcm_s16le") -> str:
    with av.open(str(path), "w") as out:
        picture = None
        if video:
            picture = out.add_stream("libx264", rate=25)
            picture.width, picture.height, picture.pix_fmt = 64, 48, "yuv420p"
            picture.codec_context.options = {"preset": "ultrafast"}
        sound = out.add_stream(codec, rate=RATE)
        sound.layout = "7.1"
        sound.time_base = fractions.Fraction(1, RATE)
        packets: list[av.Packet] = []
        if picture is not None:
            for i in range(25):
                frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 90, np.uint8), format="rgb24")
                frame.pts, frame.time_base = i, fractions.Fraction(1, 25)
                packets += picture.encode(frame)
            packets += picture.encode(None)
        values = (np.arange(8, dtype=np.int16) + 1) * 1000
        for start in range(0, RATE, 1024):
            chunk = np.ascontiguousarray(np.tile(values, 1024)[np.newaxis, :])
            frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="7.1")
            frame.sample_rate, frame.pts, frame.time_base = RATE, start, fractions.Fraction(1, RATE)
            packets += sound.encode(frame)
        packets += sound.encode(None)
        packets.sort(key=lambda p: float((p.dts if p.dts is not None else p.pts or 0) * p.time_base))
        for packet in packets:
            out.mux(packet)
    data = bytearray(path.read_bytes())
    at = data.find(b"chan")
    assert at > 0, "no chan atom written"
    data[at + 8 : at + 12] = MPEG_7_1_C  # after the tag: version and flags (4), then the layout tag
    data[at + 12 : at + 20] = bytes(8)  # no bitmap, no descriptions
    path.write_bytes(data)
    return str(path)


def test_the_native_places_are_ffmpegs() -> None:
    places = native_positions()
    assert [places[n] for n in NATIVE_7_1] == sorted(places[n] for n in NATIVE_7_1)
    assert places["FL"] == 0 and places["LFE"] == 3 and places["SL"] == 9


def test_reading_the_stream_no_longer_aborts_the_process(tmp_path: Path) -> None:
    # In a process of its own: the old failure was glibc's abort, which would end this test run.
    src = _custom_order_mov(tmp_path / "in.mov")
    script = (
        "import gc, sys\n"
        "from alpha2.ffmpeg_bridge.channel_layouts import open_input\n"
        "c = open_input(sys.argv[1])\n"
        "s = c.streams.audio[0]\n"
        "print(s.codec_context.channels, s.codec_context.layout.name)\n"
        "n = sum(f.samples for f in c.decode(s))\n"
        "gc.collect(); c.close(); gc.collect()\n"
        "print(n)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, src], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["8", "7.1", str(47 * 1024)]  # 47 frames of 1024 written


def test_the_order_is_found_and_said(tmp_path: Path) -> None:
    src = _custom_order_mov(tmp_path / "in.mov", video=False)
    container = av.open(src)
    try:
        orders = make_layouts_safe(container)
        assert list(orders) == [0]
        order = orders[0]
        assert order.source == "+".join(FILE_ORDER)
        assert order.layout == "7.1" and order.reorders
        assert order.order == tuple(FILE_ORDER.index(n) for n in NATIVE_7_1) == (0, 1, 2, 3, 6, 7, 4, 5)
        assert "7.1" in order.note
        assert container.streams.audio[0].codec_context.layout.name == "7.1"
        assert make_layouts_safe(container) == {}  # safe now: nothing more to do
    finally:
        container.close()


def test_a_native_layout_is_left_alone(tmp_path: Path) -> None:
    src = tmp_path / "native.mov"
    _custom_order_mov(src, video=False)
    data = bytearray(src.read_bytes())
    at = data.find(b"chan")
    data[at + 8 : at + 20] = bytes.fromhex("00010000") + bytes.fromhex("0000063f") + bytes(4)  # a bitmap
    src.write_bytes(data)
    with open_input(str(src)) as container:
        assert container.streams.audio[0].codec_context.layout.name == "7.1"
    container = av.open(str(src))
    try:
        assert make_layouts_safe(container) == {}
    finally:
        container.close()


def test_probing_describes_the_stream(tmp_path: Path) -> None:
    src = _custom_order_mov(tmp_path / "in.mov")
    audio = [s for s in probe_streams(src) if s.kind.value == "audio"]
    assert [(s.channels, s.sample_rate) for s in audio] == [(8, RATE)]


def test_played_sound_has_each_channel_in_its_place(tmp_path: Path) -> None:
    src = _custom_order_mov(tmp_path / "in.mov", video=False)
    session = AudioDecodeSession(src, sample_rate=RATE, channels=None)
    try:
        assert session.channels == 8 and session.info.layout == "7.1"
        block = session.next_block()
        assert block is not None
        got = np.round(block.samples[100] * 32768).astype(int).tolist()
    finally:
        session.close()
    # Native 7.1's channel j is the file's channel FILE_ORDER.index(NATIVE_7_1[j]).
    assert got == [(FILE_ORDER.index(n) + 1) * 1000 for n in NATIVE_7_1]


@pytest.mark.parametrize(
    ("ext", "codec", "layout"),
    [(".mkv", "pcm_s16le", "8 channels"), (".mov", "pcm_s16le", "7.1"), (".mp4", "flac", "7.1")],
)
def test_a_transcode_puts_the_channels_into_their_places(
    tmp_path: Path, ext: str, codec: str, layout: str
) -> None:
    # (Matroska's PCM says a channel count only: FFmpeg reads it in the default order, 7.1's.)
    src = _custom_order_mov(tmp_path / "in.mov")
    out = str(tmp_path / f"out{ext}")
    stats = transcode(src, out, TranscodeOptions())
    said = stats.encoder["audio"]
    assert "FL+FR+FC+LFE+SL+SR+BL+BR" in said and "7.1" in said and "lossless" in said, said
    with av.open(out) as container:
        stream = container.streams.audio[0]
        assert stream.codec_context.name == codec
        assert stream.codec_context.layout.name == layout
        frame = next(iter(container.decode(stream)))
        data = frame.to_ndarray()
    samples = data.reshape(-1, 8) if not frame.format.is_planar else data.T
    assert samples[10].tolist() == [(FILE_ORDER.index(n) + 1) * 1000 for n in NATIVE_7_1]


def test_flac_is_not_copied_into_mov(tmp_path: Path) -> None:
    # FFmpeg lists FLAC among MOV's codecs but writes it into .mp4 only ("flac only supported in MP4").
    src = str(tmp_path / "in.mkv")
    with av.open(src, "w") as out:
        video = out.add_stream("libx264", rate=25)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        sound = out.add_stream("flac", rate=RATE)
        sound.layout = "stereo"
        for i in range(25):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 90, np.uint8), format="rgb24")
            frame.pts, frame.time_base = i, fractions.Fraction(1, 25)
            for packet in video.encode(frame):
                out.mux(packet)
        for start in range(0, RATE, 1024):
            chunk = np.zeros((1, 2048), np.int16)
            frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="stereo")
            frame.sample_rate, frame.pts = RATE, start
            for packet in sound.encode(frame):
                out.mux(packet)
        for stream in (video, sound):
            for packet in stream.encode(None):
                out.mux(packet)
    out_path = str(tmp_path / "out.mov")
    stats = transcode(src, out_path, TranscodeOptions())
    assert stats.encoder["audio"].startswith("re-encoded flac to alac"), stats.encoder["audio"]
    with av.open(out_path) as container:
        assert container.streams.audio[0].codec_context.name == "alac"


# -- channels the resampler cannot mix, and more channels than FLAC holds ----------------------------


def _with_audio(path: Path, codec: str, layout: str, *, options: dict[str, str] | None = None) -> str:
    """A 64x48 H.264 second and a second of ``layout`` sound: channel k a 1 kHz tone of amplitude
    (k + 1) * 1000 (of 32768), so that a moved or mixed channel shows (and lossy codecs keep it)."""
    channels = av.AudioLayout(layout).nb_channels
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=25)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        sound = out.add_stream(codec, rate=RATE)
        sound.layout = layout
        if options:
            sound.codec_context.options = options
        sound.time_base = fractions.Fraction(1, RATE)
        packets: list[av.Packet] = []
        for i in range(25):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 90, np.uint8), format="rgb24")
            frame.pts, frame.time_base = i, fractions.Fraction(1, 25)
            packets += video.encode(frame)
        packets += video.encode(None)
        t = np.arange(RATE) / RATE
        tones = np.sin(2 * np.pi * 1000 * t)[:, np.newaxis] * ((np.arange(channels) + 1) * 1000)
        tones = np.round(tones).astype(np.int16)
        for start in range(0, RATE, 960):
            chunk = np.ascontiguousarray(tones[start : start + 960].reshape(1, -1))
            frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout=layout)
            frame.sample_rate, frame.pts, frame.time_base = RATE, start, fractions.Fraction(1, RATE)
            packets += sound.encode(frame)
        packets += sound.encode(None)
        packets.sort(key=lambda p: float((p.dts if p.dts is not None else p.pts or 0) * p.time_base))
        for packet in packets:
            out.mux(packet)
    return str(path)


def _levels(path: str) -> tuple[str, str, int, list[float]]:
    """The output's audio codec, layout, channels, and each channel's amplitude in its middle (read
    through ``interleaved``: PyAV's own ``to_ndarray`` crashes on planar frames of over 8 channels)."""
    with av.open(path) as container:
        stream = container.streams.audio[0]
        cc = stream.codec_context
        parts = [interleaved(f) for f in container.decode(stream)]
        name, layout, count = cc.name, cc.layout.name, cc.channels
    data = np.concatenate([p[0] for p in parts]).astype(np.float64)
    if parts[0][1] in ("flt", "dbl"):
        data = data * 32768
    middle = data[len(data) // 3 : 2 * len(data) // 3]
    return name, layout, count, [round(float(v)) for v in np.sqrt(2 * (middle**2).mean(axis=0))]


def test_ambisonic_sound_cut_stays_ambisonic_opus(tmp_path: Path) -> None:
    src = _with_audio(tmp_path / "vr.mkv", "libopus", "ambisonic 1", options={"mapping_family": "2"})
    out = str(tmp_path / "cut.mp4")
    stats = transcode(src, out, TranscodeOptions(from_seconds=0.2))
    assert "libopus" in stats.encoder["audio"], stats.encoder["audio"]
    codec, layout, count, _ = _levels(out)
    assert (codec, layout, count) == ("opus", "ambisonic 1", 4)


def test_ambisonic_sound_into_mov_passes_its_channels_one_for_one(tmp_path: Path) -> None:
    # MOV takes no Opus: AAC, which has no ambisonic layout; FFmpeg's resampler cannot mix ambisonics,
    # so the four channels go through one for one under AAC's 4.0 (they had aborted the transcode).
    src = _with_audio(tmp_path / "vr.mkv", "libopus", "ambisonic 1", options={"mapping_family": "2"})
    out = str(tmp_path / "out.mov")
    stats = transcode(src, out, TranscodeOptions())
    said = stats.encoder["audio"]
    assert "ambisonic 1 channels passed one for one as 4.0" in said, said
    codec, layout, count, levels = _levels(out)
    assert (codec, layout, count) == ("aac", "4.0", 4)
    assert levels == pytest.approx([1000, 2000, 3000, 4000], rel=0.05)  # lossy twice, each in its place


def test_sixteen_channels_of_pcm(tmp_path: Path) -> None:
    # Into .mp4: FLAC holds 8 channels and the MP4 muxer takes no PCM in no known place, so Opus
    # (mapping family 255) keeps all 16 rather than a downmix to stereo. Cut into .mov: PCM, exactly,
    # through the packed path (PyAV crashed on planar frames of more than 8 channels).
    src = _with_audio(tmp_path / "many.mkv", "pcm_s16le", "16 channels")
    out = str(tmp_path / "out.mp4")
    stats = transcode(src, out, TranscodeOptions())
    assert "Opus keeps all 16 channels" in stats.encoder["audio"], stats.encoder["audio"]
    codec, _, count, levels = _levels(out)
    assert (codec, count) == ("opus", 16)
    assert levels == pytest.approx([(k + 1) * 1000 for k in range(16)], rel=0.05)
    out = str(tmp_path / "cut.mov")
    stats = transcode(src, out, TranscodeOptions(from_seconds=0.2))
    codec, _, count, levels = _levels(out)
    assert (codec, count) == ("pcm_s16le", 16)
    assert levels == pytest.approx([(k + 1) * 1000 for k in range(16)], rel=1e-3)  # PCM: each in place


def test_an_audio_conversion_failure_names_the_audio() -> None:
    # Called while the video is muxed: FFmpeg's refusal had been said as the video encoder's
    # ("encoding with libx264: Invalid argument").
    from types import SimpleNamespace

    from alpha2.ffmpeg_bridge.errors import EncoderError
    from alpha2.ffmpeg_bridge.side_streams import InputStream, StreamCopier, StreamKind

    class Refuses:
        def resample(self, frame: object) -> list[object]:
            raise av.error.ArgumentError(22, "Invalid argument")

    source = InputStream(index=1, kind=StreamKind.AUDIO, codec="opus", channels=4, sample_rate=RATE)
    entry = SimpleNamespace(
        source=source,
        resampler=Refuses(),
        stream_out=SimpleNamespace(codec_context=SimpleNamespace(name="aac")),
    )
    with pytest.raises(EncoderError, match=r"converting audio stream 1 \(opus, 4 channels\) for aac"):
        StreamCopier._resampled(None, entry, None)  # type: ignore[arg-type]


def test_every_input_alpha2_opens_has_its_layouts_made_safe() -> None:
    # A new av.open of an input that skipped make_layouts_safe would bring the abort back for such
    # files: each call is for writing, or in a function that makes the layouts safe, or open_input.
    import ast

    root = Path(__file__).resolve().parent.parent / "alpha2"
    unsafe = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            names = {
                node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                for node in ast.walk(func)
                if isinstance(node, ast.Call)
            }
            for node in ast.walk(func):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "open"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "av"
                ):
                    continue
                mode = next((k.value for k in node.keywords if k.arg == "mode"), None)
                writes = isinstance(mode, ast.Constant) and mode.value == "w"
                writes = writes or (len(node.args) > 1 and getattr(node.args[1], "value", None) == "w")
                if not writes and "make_layouts_safe" not in names and func.name != "open_input":
                    unsafe.append(f"{path.relative_to(root.parent)}:{node.lineno} in {func.name}")
    assert not unsafe, unsafe


def test_a_cut_of_7_1_aac_does_not_crash(tmp_path: Path) -> None:
    # AAC decodes to planar float: a 7.1 frame fills all 8 of FFmpeg's plane pointers, with no null
    # after them, and PyAV's to_ndarray read a ninth plane at a garbage address (segfault, exit 139).
    # In a process of its own, so that a crash is this test's failure, not the run's end.
    src = _with_audio(tmp_path / "in.mp4", "aac", "7.1")
    out = str(tmp_path / "cut.mkv")
    done = subprocess.run(
        [sys.executable, "-m", "alpha2", "transcode", src, out, "--from", "0.2", "-y", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    codec, layout, count, levels = _levels(out)
    assert (codec, layout, count) == ("aac", "7.1", 8)
    # Each channel in its place; AAC keeps no 1 kHz in the LFE (channel 3), a low-frequency channel.
    kept = [levels[k] for k in range(8) if k != 3]
    assert kept == pytest.approx([(k + 1) * 1000 for k in range(8) if k != 3], rel=0.05)


def test_a_cut_says_the_channels_were_put_in_order(tmp_path: Path) -> None:
    # Cut with the video, the stream is encoded again anyway and its samples reordered: the summary
    # said only 'cut with the video', the reorder nowhere.
    src = _custom_order_mov(tmp_path / "in.mov")
    stats = transcode(src, str(tmp_path / "cut.mkv"), TranscodeOptions(from_seconds=0.2))
    said = stats.encoder["audio"]
    assert (
        "cut with the video" in said
        and "channels FL+FR+FC+LFE+SL+SR+BL+BR put into FFmpeg's order (7.1)" in said
    ), said
