"""HDR clips made by the tests: an SDR pattern placed at 203 cd/m² in PQ or HLG (BT.2408), encoded
losslessly by libx265 at 10 bits with BT.2020 / PQ or HLG tags and, optionally, HDR static metadata."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from alpha2.ffmpeg_bridge.hdr import hdr_encoder_options
from alpha2.gpu.colour import ColourMatrix, ColourPrimaries, ColourRange, TransferCharacteristic, rgb_to_yuv
from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata, MasteringDisplay
from alpha2.gpu.primaries import chromaticities_of
from tests.colour_patterns import place_sdr_pattern

av = pytest.importorskip("av")

PQ = TransferCharacteristic.SMPTE2084
HLG = TransferCharacteristic.ARIB_STD_B67
PEAK_203 = HdrMetadata(
    MasteringDisplay(chromaticities_of(ColourPrimaries.BT2020), 0.005, 1000.0), ContentLightLevel(203, 120)
)
"""Metadata saying the content peaks at 203 cd/m² (MaxCLL), on a 1000 cd/m² mastering display."""


def sdr_pattern(width: int = 128, height: int = 96) -> np.ndarray:
    """A smooth colourful 8-bit SDR R'G'B' picture (H, W, 3): gradients and a soft blob, 4:2:0-friendly."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    r = 0.5 + 0.5 * np.sin(x / width * 2 * np.pi * 1.1)
    g = y / (height - 1)
    b = 0.5 + 0.5 * np.cos((x + y) / (width + height) * 2 * np.pi * 1.5)
    blob = np.exp(-((np.hypot(x - width * 0.6, y - height * 0.4) / (0.25 * width)) ** 2))
    r, g, b = (c * (1 - blob) + k * blob for c, k in zip((r, g, b), (1.0, 0.15, 0.2)))
    return (np.stack([r, g, b], -1) * 255 + 0.5).clip(0, 255).astype(np.uint8)


def hdr_frame(pattern: np.ndarray, transfer: TransferCharacteristic) -> av.VideoFrame:
    """The pattern in PQ / HLG as a yuv420p10le frame (BT.2020 NCL, limited range, chroma 2 x 2 averaged)."""
    signal = place_sdr_pattern(pattern.astype(np.float64), transfer)
    codes = rgb_to_yuv(ColourMatrix.BT2020_NCL, ColourRange.LIMITED, 10).apply(signal)
    height, width = pattern.shape[:2]
    frame = av.VideoFrame(width, height, "yuv420p10le")
    luma = np.round(codes[..., 0])
    chroma = codes[..., 1:].reshape(height // 2, 2, width // 2, 2, 2).mean(axis=(1, 3))
    for plane, values in zip(frame.planes, (luma, np.round(chroma[..., 0]), np.round(chroma[..., 1]))):
        data = np.clip(values, 0, 1023).astype("<u2")
        rows = np.zeros((data.shape[0], plane.line_size // 2), dtype="<u2")
        rows[:, : data.shape[1]] = data
        plane.update(rows.tobytes())
    frame.colorspace, frame.color_range = int(ColourMatrix.BT2020_NCL), int(ColourRange.LIMITED)
    return frame


def make_hdr_clip(
    path: Path,
    transfer: TransferCharacteristic,
    hdr: HdrMetadata | None,
    frames: int = 3,
    size: tuple[int, int] = (128, 96),
) -> np.ndarray:
    """Write the clip; returns the SDR pattern it was made from (``size``: NVDEC needs 144 x 144 or more)."""
    try:
        av.codec.Codec("libx265", "w")
    except Exception:
        pytest.skip("libx265 is not in this FFmpeg")
    pattern = sdr_pattern(*size)
    out = av.open(str(path), "w")
    stream = out.add_stream("libx265", rate=25)
    stream.width, stream.height, stream.pix_fmt = pattern.shape[1], pattern.shape[0], "yuv420p10le"
    stream.color_primaries, stream.color_trc = int(ColourPrimaries.BT2020), int(transfer)
    stream.colorspace, stream.color_range = int(ColourMatrix.BT2020_NCL), int(ColourRange.LIMITED)
    base = {"x265-params": "log-level=none:lossless=1"}
    stream.options = hdr_encoder_options("libx265", hdr, base, bit_depth=10).options
    frame = hdr_frame(pattern, transfer)
    for i in range(frames):
        frame.pts, frame.time_base = i, Fraction(1, 25)
        for packet in stream.encode(frame):
            out.mux(packet)
    for packet in stream.encode():
        out.mux(packet)
    out.close()
    return pattern
