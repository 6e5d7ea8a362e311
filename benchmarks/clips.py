"""The benchmarks' test picture: a moving diagonal pattern with grain, as rgb24 frames, encoded into a
stream (bench_ml, bench_segments, bench_segmented_transcode share it).

Grain makes the encoder work as on camera footage, so decoding costs what it costs on real files; the
pattern moves so that no two frames are alike.
"""

from __future__ import annotations

from typing import Any

import av
import numpy as np


def encode_pattern(out: Any, stream: Any, frames: int, *, seed: int = 1) -> None:
    """Encode ``frames`` pattern frames of ``stream``'s size into ``stream`` and flush its encoder."""
    width, height = stream.width, stream.height
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    grain = rng.integers(0, 24, size=(8, height, width), dtype=np.uint8)
    for i in range(frames):
        luma = ((x + y + i * 8) % 256).astype(np.uint8) ^ grain[i % 8]
        img = np.stack([luma, np.roll(luma, i * 4, axis=1), 255 - luma], axis=-1)
        for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
            out.mux(packet)
    for packet in stream.encode(None):
        out.mux(packet)
