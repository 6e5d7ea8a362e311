"""FFmpeg's fps rule (round=near) as :mod:`alpha2.api.frame_rate` applies it, against PyAV's own ``fps``
filter on the same timestamps (constant and variable frame rates), and rates read as ffmpeg reads them."""

from __future__ import annotations

import fractions
import itertools
import random
from typing import Any

import pytest
from media import fps_filter_choice

from alpha2.api.frame_rate import near, parse_rate, slot_counts
from alpha2.gpu.errors import InvalidInputError

F = fractions.Fraction


def test_rule_is_ffmpeg_fps_filter_on_cfr_and_vfr_timestamps() -> None:
    rng = random.Random(7)
    rates = [F(30), F(2997, 100), F(30000, 1001), F(24000, 1001), F(25), F(60), F(7)]
    compared = 0
    for _ in range(250):
        time_base = rng.choice([F(1, 1000), F(1, 90000), F(1, 60), F(1001, 30000)])
        step = int(F(1, 10) / time_base) + 1
        pts = [rng.randint(0, step)]  # not always at 0: the filter starts at the first frame's slot
        for _ in range(rng.randint(0, 29)):
            pts.append(pts[-1] + rng.randint(1, step))  # irregular gaps: VFR
        durations = [b - a for a, b in itertools.pairwise(pts)] + [rng.randint(1, step)]
        rate = rng.choice(rates)
        theirs = fps_filter_choice(pts, durations, time_base, rate)
        counts = slot_counts([p * time_base for p in pts], (pts[-1] + durations[-1]) * time_base, rate)
        ours = [i for i, count in enumerate(counts) for _ in range(count)]
        if not theirs:
            # Shorter than half a slot: the filter writes nothing, alpha2 one frame (an output has one).
            assert len(ours) == 1
            continue
        first = near(pts[0] * time_base * rate)
        assert [i for _, i in theirs] == ours, (pts, durations, time_base, rate)
        assert [p for p, _ in theirs] == list(range(first, first + len(ours)))
        compared += 1
    assert compared > 200


@pytest.mark.parametrize(
    "text,rate",
    [
        ("30", F(30)),
        ("29.97", F(2997, 100)),
        ("30000/1001", F(30000, 1001)),
        ("24000/1001", F(24000, 1001)),
        ("ntsc", F(30000, 1001)),
        ("film", F(24)),
        ("PAL", F(25)),
        (29.97, F(2997, 100)),
        (F(60000, 1001), F(60000, 1001)),
    ],
)
def test_rates_read_as_ffmpeg_reads_them(text: Any, rate: F) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("bad", ["abc", "0", "-5", "30/0", "1e9", "nan", "", "1/3000000", True, [30]])
def test_bad_rates_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="fps"):
        parse_rate(bad)
