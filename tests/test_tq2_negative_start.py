"""``alpha2 transcode`` of an input that starts before zero (an MPEG-TS near its 33-bit clock wrap, which
FFmpeg unwraps to a negative start): the output is moved later to start at 0, the shift is said with its
sign, and no timestamp reset is reported that the input does not have."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import av
import pytest

from alpha2.apps import cli

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip, remux

Capsys = pytest.CaptureFixture[str]

WRAP_OFFSET = "95441"
"""output_ts_offset seconds that put the TS clock 1.3 s before its 2**33 / 90 kHz wrap (95443.7 s)."""


def _wrapped(tmp_path: Path, audio: bool = False) -> str:
    clip = make_clip(tmp_path / "c.mkv", frames=50, rate=25, audio=audio)
    src = remux(clip.path, str(tmp_path / "wrap.ts"), {"output_ts_offset": WRAP_OFFSET})
    with av.open(src) as container:
        assert container.start_time is not None and container.start_time < 0  # FFmpeg unwrapped it
    return src


def _packet_times(path: str, kind: str) -> list[float]:
    with av.open(path) as container:
        stream = next(s for s in container.streams if s.type == kind)
        return sorted(float(p.pts * p.time_base) for p in container.demux(stream) if p.pts is not None)


def test_negative_start_is_shifted_and_said(tmp_path: Path, capsys: Capsys) -> None:
    src = _wrapped(tmp_path, audio=True)
    with av.open(src) as container:
        start = container.start_time / 1e6
    out = str(tmp_path / "out.mp4")
    assert cli.main(["transcode", src, out, "-y", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["frames"] == 50
    assert data["timestamps_adjusted"]["video"] == {}  # no false reset
    assert data["start_shift_seconds"] == pytest.approx(start, abs=2e-3)
    video = _packet_times(out, "video")
    assert len(video) == 50
    assert min(video + _packet_times(out, "audio")) == pytest.approx(0.0, abs=1e-3)
    assert video[-1] - video[0] == pytest.approx(49 / 25, abs=2e-3)
    assert cli.main(["transcode", src, str(tmp_path / "o2.mp4"), "-y"]) == 0
    err = capsys.readouterr().err
    assert "timestamps adjusted" not in err
    assert f"timestamps shifted by +{-start:.3f} s" in err
    assert f"the input starts at {start:.3f} s" in err


def test_negative_start_cut_keeps_its_frames(tmp_path: Path, capsys: Capsys) -> None:
    src = _wrapped(tmp_path)
    out = str(tmp_path / "out.mp4")
    assert cli.main(["transcode", src, out, "-y", "--json", "--from", "0.4", "--to", "1.2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["frames"] == 20
    assert data["timestamps_adjusted"]["video"] == {}
    assert _packet_times(out, "video")[0] == pytest.approx(0.0, abs=1e-3)
