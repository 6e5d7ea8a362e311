"""Test patterns for colour management: an SDR pattern and its BT.2408 placement in PQ or HLG."""

from __future__ import annotations

import numpy as np

from alpha2.gpu.colour import ColourPrimaries, TransferCharacteristic
from alpha2.gpu.primaries import primaries_conversion
from alpha2.gpu.transfer import TransferCurve, decode, encode


def bt2408_pattern(seed: int = 3) -> np.ndarray:
    """8-bit SDR R'G'B' codes (N, 3): 100 % colour bars, a grey ramp and random colours."""
    bars = np.array([[i >> 2 & 1, i >> 1 & 1, i & 1] for i in range(8)], dtype=np.float64) * 255.0
    ramp = np.repeat(np.arange(0, 256, 5, dtype=np.float64)[:, None], 3, axis=1)
    rng = np.random.default_rng(seed)
    return np.concatenate([bars, ramp, rng.integers(0, 256, size=(2048, 3)).astype(np.float64)])


def place_sdr_pattern(pattern: np.ndarray, transfer: TransferCharacteristic, bits: int = 10) -> np.ndarray:
    """The pattern placed in PQ or HLG the BT.2408 way (SDR white at 203 cd/m², BT.709 primaries in
    BT.2020), quantised to full-range ``bits``-bit codes and returned as 0..1 signal."""
    curve = TransferCurve.PQ if transfer is TransferCharacteristic.SMPTE2084 else TransferCurve.HLG
    linear = decode(pattern / 255.0, TransferCurve.BT1886)
    linear = linear @ primaries_conversion(ColourPrimaries.BT709, ColourPrimaries.BT2020).T
    scale = float((1 << bits) - 1)
    return np.round(encode(linear, curve) * scale) / scale
