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
) -> Clip:
    """Encode a small clip with PyAV.

    Args:
        path: Output file; its extension picks the container (.mkv takes every codec here).
        codec: A key of ENCODERS.
        vfr: Irregular frame timing (VFR_STEPS_MS, time base 1/1000).
        audio: Add a short AAC (mp4) or Opus (other containers) tone of the clip's duration.
        gop: Key frame interval (default: every 4 frames, for seek tests).
        rotation_ccw: Store a display matrix rotating the picture counter-clockwise by this much.
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
