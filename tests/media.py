"""Test media, made by the tests with PyAV (never downloaded). Small clips: the CI machine has 2 cores.

``make_clip`` writes a clip whose frames differ (a moving gradient and a per-frame level), so decoded
frames can be told apart; ``flip_bits`` and ``truncate`` damage a copy for the error tests.
"""

from __future__ import annotations

import fractions
import os
import random
from dataclasses import dataclass
from typing import Any

import av
import av.container
import av.filter
import numpy as np

# SVT-AV1 prints its configuration at info level; keep test output readable.
os.environ.setdefault("SVT_LOG", "1")

ENCODERS: dict[str, tuple[str, dict[str, str]]] = {
    "h264": ("libx264", {"preset": "ultrafast", "tune": "zerolatency"}),
    "hevc": ("libx265", {"preset": "ultrafast", "x265-params": "log-level=error"}),
    "vp9": ("libvpx-vp9", {"deadline": "realtime", "cpu-used": "8", "lag-in-frames": "0"}),
    "av1": ("libsvtav1", {"preset": "12"}),
    "mpeg2": ("mpeg2video", {}),
    "ffv1": ("ffv1", {}),
    "mpeg4": ("mpeg4", {}),
}
"""Test encoder (and fast options) for each codec name make_clip accepts."""

VFR_STEPS_MS = (33, 50, 17, 66, 40, 25, 100, 34)
"""Frame-to-frame gaps (milliseconds) cycled through for variable-frame-rate clips."""


@dataclass(frozen=True)
class Clip:
    """What make_clip wrote."""

    path: str
    codec: str
    width: int
    height: int
    frames: int
    pix_fmt: str
    time_base: fractions.Fraction
    pts: tuple[int, ...]
    """Timestamps written, in ``time_base`` units (also the decoded pts for mkv / mp4 outputs)."""
    audio: bool


def encoder_available(codec: str) -> bool:
    """Whether this PyAV build can encode the test codec."""
    name = ENCODERS[codec][0]
    try:
        av.codec.Codec(name, "w")
    except Exception:
        return False
    return True


def child_processes(module: str) -> set[int]:
    """The pids of this process's children running ``python -m module`` (worker processes left behind)."""
    me = os.getpid()
    wanted = module.encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me and wanted in cmdline:
            found.add(int(entry))
    return found


def pattern(index: int, width: int, height: int) -> np.ndarray:
    """An RGB frame that differs per index: a moving diagonal gradient plus a level."""
    y, x = np.mgrid[0:height, 0:width]
    base = ((x * 3 + y * 2 + index * 9) % 256).astype(np.uint8)
    rgb = np.stack([base, np.full_like(base, (index * 37) % 256), 255 - base], axis=-1)
    return rgb


def make_clip(
    path: str | os.PathLike[str],
    codec: str = "h264",
    width: int = 64,
    height: int = 48,
    frames: int = 12,
    pix_fmt: str = "yuv420p",
    rate: int = 30,
    vfr: bool = False,
    audio: bool = False,
    gop: int | None = None,
    rotation_ccw: int | None = None,
    color_range: int | None = None,
    colorspace: int | None = None,
    b_frames: int | None = None,
) -> Clip:
    """Encode a small clip with PyAV.

    Args:
        path: Output file; its extension picks the container (.mkv takes every codec here).
        codec: A key of ENCODERS.
        vfr: Irregular frame timing (VFR_STEPS_MS, time base 1/1000).
        audio: Add a short AAC (mp4) or Opus (other containers) tone of the clip's duration.
        gop: Key frame interval (default: every 4 frames, for seek tests).
        rotation_ccw: Store a display matrix rotating the picture counter-clockwise by this much.
        b_frames: The encoder's ``max_b_frames`` (open GOPs with MPEG-2); None: its default.
    """
    path = os.fspath(path)
    name, options = ENCODERS[codec]
    time_base = fractions.Fraction(1, 1000) if vfr else fractions.Fraction(1, rate)
    if vfr:
        pts, t = [], 0
        for i in range(frames):
            pts.append(t)
            t += VFR_STEPS_MS[i % len(VFR_STEPS_MS)]
    else:
        pts = list(range(frames))
    with av.open(path, "w") as out:
        stream: Any = out.add_stream(name, rate=rate, options=dict(options))
        stream.width, stream.height = width, height
        stream.pix_fmt = pix_fmt
        stream.codec_context.time_base = time_base
        stream.time_base = time_base
        stream.codec_context.gop_size = gop if gop is not None else 4
        stream.codec_context.thread_count = 1
        if b_frames is not None:
            stream.codec_context.max_b_frames = b_frames
        if color_range is not None:
            stream.codec_context.color_range = color_range
        if colorspace is not None:
            stream.codec_context.colorspace = colorspace
        if rotation_ccw is not None:
            stream.set_display_rotation(rotation_ccw)
        astream: Any = None
        if audio:
            aname = "aac" if path.endswith((".mp4", ".mov", ".m4v")) else "libopus"
            astream = out.add_stream(aname, rate=48000)
            astream.layout = "stereo"
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(pattern(i, width, height), format="rgb24")
            frame = frame.reformat(format=pix_fmt)
            frame.pts = pts[i]
            frame.time_base = time_base
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
        if astream is not None:
            duration_s = float((pts[-1] + (1 if not vfr else 33)) * time_base)
            _write_tone(out, astream, duration_s)
    return Clip(path, codec, width, height, frames, pix_fmt, time_base, tuple(pts), audio)


def _write_tone(
    out: av.container.OutputContainer, astream: av.audio.stream.AudioStream, seconds: float
) -> None:
    sample_rate = 48000
    total = max(int(seconds * sample_rate), 1)
    chunk = astream.codec_context.frame_size or 960
    t = np.arange(total, dtype=np.float32) / sample_rate
    tone = (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    for start in range(0, total, chunk):
        part = tone[start : start + chunk]
        if len(part) < chunk:
            part = np.pad(part, (0, chunk - len(part)))
        data = np.stack([part, part])
        frame = av.AudioFrame.from_ndarray(data, format="fltp", layout="stereo")
        frame.sample_rate = sample_rate
        frame.pts = start
        for packet in astream.encode(frame):
            out.mux(packet)
    for packet in astream.encode(None):
        out.mux(packet)


def make_audio_only(path: str | os.PathLike[str], seconds: float = 0.5) -> str:
    """A file with an audio stream and no video."""
    path = os.fspath(path)
    with av.open(path, "w") as out:
        astream: Any = out.add_stream("libopus" if not path.endswith(".mp4") else "aac", rate=48000)
        astream.layout = "stereo"
        _write_tone(out, astream, seconds)
    return path


def flip_bits(src: str, dst: str, count: int = 40, seed: int = 1, skip: int = 600) -> str:
    """Copy ``src`` with ``count`` random bits flipped after the first ``skip`` bytes (headers kept)."""
    data = bytearray(open(src, "rb").read())
    rng = random.Random(seed)
    for _ in range(count):
        pos = rng.randrange(min(skip, len(data) - 1), len(data))
        data[pos] ^= 1 << rng.randrange(8)
    with open(dst, "wb") as f:
        f.write(bytes(data))
    return dst


def truncate(src: str, dst: str, fraction: float = 0.5) -> str:
    """Copy the first ``fraction`` of ``src``."""
    data = open(src, "rb").read()
    with open(dst, "wb") as f:
        f.write(data[: max(1, int(len(data) * fraction))])
    return dst


def garbage(dst: str, size: int = 4096, seed: int = 2) -> str:
    """A file of random bytes."""
    rng = random.Random(seed)
    with open(dst, "wb") as f:
        f.write(bytes(rng.randrange(256) for _ in range(size)))
    return dst


AV_FLASH_EVERY = 15
"""make_av_clip: every this many frames a white flash, with a beep starting at the same pts."""
AV_BEEP_S = 0.03
"""make_av_clip: how long each beep lasts."""


def make_av_clip(
    path: str | os.PathLike[str], seconds: float = 3.0, rate: int = 30, width: int = 160, height: int = 90
) -> str:
    """An H.264 + AAC clip for A/V sync: dark frames, a white flash every AV_FLASH_EVERY frames, and a
    1 kHz beep starting at each flash's pts (silence in between), so picture and sound can be lined up."""
    path = os.fspath(path)
    frames = round(seconds * rate)
    sample_rate = 48000
    with av.open(path, "w") as out:
        stream: Any = out.add_stream("libx264", rate=rate, options=dict(ENCODERS["h264"][1]))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.gop_size = rate // 2
        stream.codec_context.thread_count = 1
        astream: Any = out.add_stream("aac", rate=sample_rate)
        astream.layout = "stereo"
        for i in range(frames):
            level = 235 if i % AV_FLASH_EVERY == 0 else 16 + (i % AV_FLASH_EVERY) * 4
            rgb = np.full((height, width, 3), level, np.uint8)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
        total = int(frames / rate * sample_rate)
        t = np.arange(total) / sample_rate
        phase = (t * rate) % AV_FLASH_EVERY / rate  # seconds since the last flash
        tone = np.where(phase < AV_BEEP_S, 0.5 * np.sin(2 * np.pi * 1000 * t), 0.0).astype(np.float32)
        chunk = astream.codec_context.frame_size or 1024
        for start in range(0, total, chunk):
            part = tone[start : start + chunk]
            if len(part) < chunk:
                part = np.pad(part, (0, chunk - len(part)))
            aframe = av.AudioFrame.from_ndarray(np.stack([part, part]), format="fltp", layout="stereo")
            aframe.sample_rate = sample_rate
            aframe.pts = start
            for packet in astream.encode(aframe):
                out.mux(packet)
        for packet in astream.encode(None):
            out.mux(packet)
    return path


# -- real-world oddities (timestamps, containers, metadata), made by muxing or editing bytes ------------


def mux_with_pts(
    path: str | os.PathLike[str], pts: list[int], *, rate: int = 30, width: int = 64, height: int = 48
) -> str:
    """An H.264 clip (no B-frames, so dts = pts) whose packets carry ``pts`` as given, in 1/``rate``.

    The Matroska muxer takes equal timestamps (duplicates); one that goes back needs
    :func:`swap_mkv_clusters` or :func:`concat_files`.
    """
    path = os.fspath(path)
    name, options = ENCODERS["h264"]
    with av.open(path, "w") as out:
        stream: Any = out.add_stream(name, rate=rate, options=dict(options))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.gop_size = 4
        stream.codec_context.thread_count = 1
        tb = fractions.Fraction(1, rate)
        packets: list[Any] = []
        for i in range(len(pts)):
            frame = av.VideoFrame.from_ndarray(pattern(i, width, height), format="rgb24")
            frame = frame.reformat(format="yuv420p")
            frame.pts, frame.time_base = i, tb
            packets.extend(stream.encode(frame))
        packets.extend(stream.encode(None))
        for packet, value in zip(packets, pts, strict=True):
            packet.pts = packet.dts = round(value * tb / packet.time_base)
            out.mux(packet)
    return path


def _ebml_vint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, length) of the EBML variable-size integer at ``pos`` (marker bit removed)."""
    first = data[pos]
    length = 1
    while length <= 8 and not first & (0x80 >> (length - 1)):
        length += 1
    value = first & (0xFF >> length)
    for b in data[pos + 1 : pos + length]:
        value = (value << 8) | b
    return value, length


def mkv_clusters(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each top-level Cluster of a Matroska file written by FFmpeg."""
    segment = data.index(b"\x18\x53\x80\x67")
    _, size_len = _ebml_vint(data, segment + 4)
    pos = segment + 4 + size_len
    clusters = []
    while pos < len(data):
        ident_len = _ebml_vint(data, pos)[1]
        ident = data[pos : pos + ident_len]
        size, size_len = _ebml_vint(data, pos + ident_len)
        end = pos + ident_len + size_len + size
        if ident == b"\x1f\x43\xb6\x75":
            clusters.append((pos, end))
        pos = end
    return clusters


def swap_mkv_clusters(src: str, dst: str, first: int = 1) -> str:
    """Copy a Matroska file with clusters ``first`` and ``first + 1`` swapped (timestamps go back)."""
    data = open(src, "rb").read()
    clusters = mkv_clusters(data)
    (a0, a1), (b0, b1) = clusters[first], clusters[first + 1]
    with open(dst, "wb") as f:
        f.write(data[:a0] + data[b0:b1] + data[a0:a1] + data[b1:])
    return dst


def mp4_boxes(data: bytes, kind: bytes) -> list[int]:
    """Offsets of every box of type ``kind`` (searched through the container boxes of the moov tree)."""
    found: list[int] = []
    containers = {b"moov", b"trak", b"mdia", b"minf", b"stbl", b"udta", b"edts"}

    def walk(start: int, end: int) -> None:
        pos = start
        while pos + 8 <= end:
            size = int.from_bytes(data[pos : pos + 4], "big")
            box = data[pos + 4 : pos + 8]
            if size < 8:
                return
            if box == kind:
                found.append(pos)
            if box in containers:
                walk(pos + 8, pos + size)
            pos += size

    walk(0, len(data))
    return found


def zero_mp4_stts(src: str, dst: str) -> str:
    """Copy an MP4 with every sample duration in its ``stts`` boxes set to 0 (all frames at one time)."""
    data = bytearray(open(src, "rb").read())
    for pos in mp4_boxes(bytes(data), b"stts"):
        count = int.from_bytes(data[pos + 12 : pos + 16], "big")
        for entry in range(count):
            at = pos + 16 + entry * 8 + 4
            data[at : at + 4] = b"\0\0\0\0"
    with open(dst, "wb") as f:
        f.write(bytes(data))
    return dst


def concat_files(dst: str, *sources: str) -> str:
    """The bytes of ``sources`` one after another (MPEG-TS files so joined reset their clock)."""
    with open(dst, "wb") as f:
        for src in sources:
            f.write(open(src, "rb").read())
    return dst


def replace_bytes(src: str, dst: str, old: bytes, new: bytes) -> str:
    """Copy ``src`` with every ``old`` replaced by ``new`` (same length: offsets stay valid)."""
    assert len(old) == len(new)
    data = open(src, "rb").read()
    assert old in data, f"{old!r} not in {src}"
    with open(dst, "wb") as f:
        f.write(data.replace(old, new))
    return dst


NON_UTF8_TAG = "ALPHA2TAGVALUE"
"""make_non_utf8_metadata: the tag written, then overwritten with bytes that are not UTF-8."""


def make_non_utf8_metadata(path: str | os.PathLike[str], audio: bool = False) -> str:
    """A clip (.mkv or .mp4) whose title and handler name are not UTF-8 (Latin-1 bytes)."""
    path = os.fspath(path)
    tmp = path + ".src" + os.path.splitext(path)[1]
    make_clip(tmp, "h264", 64, 48, 6, audio=audio)
    with av.open(tmp) as src, av.open(path + ".tag" + os.path.splitext(path)[1], "w") as out:
        out.metadata["title"] = NON_UTF8_TAG
        streams = {}
        for s in src.streams:
            o: Any = out.add_stream_from_template(s)
            o.metadata["handler_name"] = NON_UTF8_TAG
            o.metadata["title"] = NON_UTF8_TAG
            streams[s.index] = o
        for packet in src.demux():
            if packet.dts is None:
                continue
            packet.stream = streams[packet.stream.index]
            out.mux(packet)
    bad = b"\xe9t\xe9\xff\xfe" + b"x" * (len(NON_UTF8_TAG) - 5)
    replace_bytes(path + ".tag" + os.path.splitext(path)[1], path, NON_UTF8_TAG.encode(), bad)
    os.remove(tmp)
    os.remove(path + ".tag" + os.path.splitext(path)[1])
    return path


def remux(src: str, dst: str, options: dict[str, str] | None = None) -> str:
    """Copy ``src``'s packets into ``dst`` (its extension picks the container) with muxer ``options``."""
    with av.open(src) as inp, av.open(dst, "w", options=dict(options or {})) as out:
        streams = {s.index: out.add_stream_from_template(s) for s in inp.streams}
        for packet in inp.demux():
            if packet.dts is None:
                continue
            packet.stream = streams[packet.stream.index]
            out.mux(packet)
    return dst


def copy_video_and_audio(inp: Any, video: Any, audio: list[Any], out: Any) -> None:
    """Mux ``inp``'s video packets into ``video`` and its one audio stream's packets into each stream of
    ``audio`` (output streams of ``out`` made from ``inp``'s): a clip's sound as several audio streams,
    each tagged as a test needs (languages, titles, dispositions)."""
    for packet in inp.demux():
        if packet.dts is None:
            continue
        if packet.stream.type == "video":
            packet.stream = video
            out.mux(packet)
            continue
        for stream in audio:
            copy = av.Packet(bytes(packet))
            copy.pts, copy.dts, copy.duration = packet.pts, packet.dts, packet.duration
            copy.time_base, copy.stream = packet.time_base, stream
            out.mux(copy)


def make_interlaced_mpeg2(path: str | os.PathLike[str], frames: int = 50, rate: int = 25) -> str:
    """An interlaced-coded MPEG-2 clip (128x96); in a program stream (.mpg) it starts after 0."""
    path = os.fspath(path)
    with av.open(path, "w") as out:
        stream: Any = out.add_stream("mpeg2video", rate=rate)
        stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
        stream.codec_context.gop_size = 12
        flags = av.codec.context.Flags
        stream.codec_context.flags |= flags.interlaced_dct | flags.interlaced_me
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(pattern(i, 128, 96), format="rgb24").reformat(format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


RGB_MEANS = (0, 40, 80, 120, 160)
"""Grey levels of the frames make_rgb_clip writes, one per frame."""


def make_rgb_clip(path: str | os.PathLike[str], codec: str = "ffv1", pix_fmt: str = "bgr0") -> str:
    """A clip of flat grey RGB frames at RGB_MEANS (PNG, or FFV1 bgr0 / gbrp), 64x48."""
    path = os.fspath(path)
    with av.open(path, "w") as out:
        stream: Any = out.add_stream(codec, rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, pix_fmt
        for i, level in enumerate(RGB_MEANS):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), level, np.uint8), format="rgb24")
            frame = frame.reformat(format=pix_fmt)
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def opus_mono(out: Any) -> Any:
    """A mono Opus stream added to the output container ``out`` (before any packet is muxed)."""
    sound = out.add_stream("libopus", rate=48000)
    sound.layout = "mono"
    return sound


def mux_silence(out: Any, sound: Any, seconds: float) -> None:
    """``seconds`` of silence encoded into ``sound`` (opus_mono's) and muxed into ``out``, flushed."""
    silence = av.AudioFrame(format="s16", layout="mono", samples=960)
    for plane in silence.planes:
        plane.update(bytes(plane.buffer_size))
    for i in range(round(seconds * 50)):
        silence.sample_rate, silence.pts = 48000, i * 960
        for packet in sound.encode(silence):
            out.mux(packet)
    for packet in sound.encode(None):
        out.mux(packet)


def make_late_video_with_sound(path: str | os.PathLike[str]) -> str:
    """A Matroska file whose 25 frames of 64x48 H.264 start at 0.48 s, beside 1.5 s of Opus silence from
    0 (FFmpeg's Matroska muxer tags where such a late track ends, not how long it lasts)."""
    with av.open(str(path), "w") as out:
        video: Any = out.add_stream("libx264", rate=25, options={"preset": "ultrafast"})
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        sound = opus_mono(out)
        for index in range(25):
            frame = av.VideoFrame.from_ndarray(pattern(index, 64, 48), format="rgb24").reformat(
                format="yuv420p"
            )
            frame.pts, frame.time_base = 12 + index, fractions.Fraction(1, 25)  # from 0.48 s
            out.mux(video.encode(frame))
        out.mux(video.encode(None))
        mux_silence(out, sound, 1.5)
    return str(path)


def channel_tones(layout: str) -> dict[str, int]:
    """Each channel of ``layout`` (an FFmpeg layout name) and its tone in Hz: 200, 300, ... by its place,
    80 for LFE (the per-channel tone tests)."""
    names = [str(c.name) for c in av.AudioLayout(layout).channels]
    return {name: 80 if name == "LFE" else 200 + 100 * i for i, name in enumerate(names)}


def make_channel_tones(
    path: str | os.PathLike[str], layout: str, rate: int = 48_000, seconds: float = 0.5
) -> str:
    """A WAV of ``layout`` whose each channel holds its own tone (:func:`channel_tones`)."""
    t = np.arange(int(rate * seconds)) / rate
    samples = np.stack([0.3 * np.sin(2 * np.pi * f * t) for f in channel_tones(layout).values()], axis=1)
    packed = np.round(samples * 32767).astype(np.int16).reshape(1, -1)
    with av.open(str(path), "w") as out:
        sound = out.add_stream("pcm_s16le", rate=rate)
        sound.layout = layout
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(packed), format="s16", layout=layout)
        frame.sample_rate, frame.pts, frame.time_base = rate, 0, fractions.Fraction(1, rate)
        for packet in [*sound.encode(frame), *sound.encode(None)]:
            out.mux(packet)
    return str(path)


def fps_filter_choice(
    pts: list[int], durations: list[int], time_base: fractions.Fraction, rate: fractions.Fraction
) -> list[tuple[int, int]]:
    """(output pts, input index) of each frame PyAV's ``fps=fps=R:round=near`` filter writes."""
    graph = av.filter.Graph()
    src = graph.add_buffer(width=16, height=16, format="gray", time_base=time_base)
    fps = graph.add("fps", f"fps={rate.numerator}/{rate.denominator}:round=near")
    sink = graph.add("buffersink")
    src.link_to(fps)
    fps.link_to(sink)
    graph.configure()
    out: list[tuple[int, int]] = []

    def pull() -> None:
        while True:
            try:
                frame = graph.pull()
            except (av.BlockingIOError, av.EOFError):
                return
            out.append((frame.pts, int(frame.to_ndarray()[0, 0])))

    for index, (p, d) in enumerate(zip(pts, durations, strict=True)):
        frame = av.VideoFrame.from_ndarray(np.full((16, 16), index, np.uint8), format="gray")
        frame.pts, frame.time_base, frame.duration = p, time_base, d
        graph.push(frame)
        pull()
    graph.push(None)
    pull()
    return out


COVER_RGB = (200, 60, 30)
"""The colour of :func:`make_song_with_cover`'s cover."""


def _cover_jpeg(width: int, height: int) -> bytes:
    """A JPEG of one colour (:data:`COVER_RGB`), as a song's cover art holds it."""
    picture = av.VideoFrame.from_ndarray(np.full((height, width, 3), COVER_RGB, np.uint8), format="rgb24")
    encoder: Any = av.CodecContext.create("mjpeg", "w")
    encoder.width, encoder.height, encoder.pix_fmt = width, height, "yuvj420p"
    encoder.time_base = fractions.Fraction(1, 1)
    packets = encoder.encode(picture.reformat(format="yuvj420p")) + encoder.encode(None)
    return b"".join(bytes(p) for p in packets)


def make_song_with_cover(
    path: str | os.PathLike[str], seconds: float = 2.0, size: tuple[int, int] = (64, 48)
) -> str:
    """A song (a 440 Hz tone) with cover art, as music files carry it, by the extension: ``.mp3`` (an
    ID3v2 APIC picture), ``.m4a`` / ``.mp4`` (an MP4 ``covr`` picture), ``.flac`` (a PICTURE block),
    each an attached picture stream of one packet; ``.mkv`` (a ``cover.jpg`` attachment, which FFmpeg's
    demuxer hands out as an attached picture). The cover is :data:`COVER_RGB`, ``size`` wide and high."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    codec, sample_format, fmt = {
        ".mp3": ("libmp3lame", "fltp", None),
        ".m4a": ("aac", "fltp", "mp4"),
        ".mp4": ("aac", "fltp", "mp4"),
        ".flac": ("flac", "s16", None),
        ".mkv": ("libopus", "flt", None),
    }[ext]
    width, height = size
    jpeg = _cover_jpeg(width, height)
    rate = 48000
    with av.open(path, "w", format=fmt) as out:
        sound: Any = out.add_stream(codec, rate=rate)
        sound.layout, sound.format = "stereo", sample_format
        if ext == ".mkv":
            out.add_attachment("cover.jpg", "image/jpeg", jpeg)
        else:
            cover: Any = out.add_stream("mjpeg", rate=1)
            cover.width, cover.height, cover.pix_fmt = width, height, "yuvj420p"
            cover.disposition = av.stream.Disposition.attached_pic
            packet = av.Packet(jpeg)
            packet.stream, packet.is_keyframe = cover, True
            out.mux(packet)
        total = int(seconds * rate)
        chunk = sound.codec_context.frame_size or 1152
        tone = 0.2 * np.sin(2 * np.pi * 440 * np.arange(total) / rate)
        for start in range(0, total, chunk):
            part = np.pad(tone[start : start + chunk], (0, max(0, chunk - (total - start))))
            if sample_format == "s16":
                data = np.round(part * 32767).astype(np.int16)
                frame = av.AudioFrame.from_ndarray(np.repeat(data, 2)[None, :], format="s16", layout="stereo")
            else:
                frame = av.AudioFrame.from_ndarray(
                    np.stack([part, part]).astype(np.float32), format="fltp", layout="stereo"
                )
            frame.sample_rate, frame.pts = rate, start
            for packet in sound.encode(frame):
                out.mux(packet)
        for packet in sound.encode(None):
            out.mux(packet)
    return path
