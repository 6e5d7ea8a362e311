"""``alpha2 play`` shows PQ and HLG clips on the SDR target (the BT.2408 pattern comes back)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.apps.player import PlayOptions, play
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.hdr import HdrMetadata
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.tonemap import ToneCurve
from tests.hdr_clips import HLG, PEAK_203, PQ, make_hdr_clip
from tests.test_apps_play import read_png

pytest.importorskip("wgpu")


def snapshot(
    clip: Path, tmp_path: Path, hwaccel: str = "none", **options: object
) -> tuple[np.ndarray, dict[str, object]]:
    out = tmp_path / f"snap-{len(list(tmp_path.iterdir()))}.png"
    stats = play(str(clip), PlayOptions(snapshot=str(out), hwaccel=hwaccel, audio=False, **options))  # type: ignore[arg-type]
    assert stats.colour is not None
    if hwaccel == "cuda":
        # NVDEC -> CUDA copy -> Dawn, then the managed pass: no byte of the decoded picture through the
        # CPU. The one CPU crossing is the snapshot's read-back of the rendered output, said as such.
        frames = dict(stats.paths.frames)
        assert frames.get(ExecutionPath.GPU_COPY, 0) >= 1, frames
        assert set(frames) <= {ExecutionPath.GPU_COPY, ExecutionPath.CPU_DOWNLOAD}, frames
        assert frames.get(ExecutionPath.CPU_DOWNLOAD, 0) == stats.paths.notes["snapshot read-back"] == 1, (
            frames,
            stats.paths.notes,
        )
    return read_png(out)[:, :, :3].astype(np.float64), stats.colour


@pytest.mark.parametrize(
    ("transfer", "hdr", "limit"),
    [(PQ, PEAK_203, 3.0), (PQ, None, 12.0), (HLG, None, 12.0)],
    ids=["pq-peak203", "pq-no-metadata", "hlg"],
)
@pytest.mark.parametrize(
    "hwaccel", ["none", pytest.param("cuda", marks=[pytest.mark.nvidia, pytest.mark.dawn])]
)
def test_snapshot_matches_the_sdr_pattern(
    tmp_path: Path, transfer: object, hdr: HdrMetadata | None, limit: float, hwaccel: str
) -> None:
    clip = tmp_path / "hdr.mp4"
    size = (256, 192) if hwaccel == "cuda" else (128, 96)  # NVDEC's HEVC needs 144 x 144 at least
    pattern = make_hdr_clip(clip, transfer, hdr, size=size)  # type: ignore[arg-type]
    got, colour = snapshot(clip, tmp_path, hwaccel)
    error = np.abs(got - pattern).mean()
    assert error <= limit, error
    assert colour["managed"] is True and colour["tone_curve"] == "bt2390"
    if hdr is not None:
        assert colour["source_peak_cd_m2"] == 203.0 and colour["tone"] == "none"
    else:
        assert colour["source_peak_cd_m2"] == 1000.0
    raw_error = 52.0 if transfer is PQ else 31.0  # the measurement of the unmanaged shader
    assert error < raw_error / 2


def test_tone_curve_and_target_peak_options(tmp_path: Path) -> None:
    clip = tmp_path / "pq.mp4"
    make_hdr_clip(clip, PQ, None)
    bt2390, _ = snapshot(clip, tmp_path)
    clip_curve, colour = snapshot(clip, tmp_path, tone_curve=ToneCurve.CLIP)
    assert colour["tone_curve"] == "clip"
    assert not np.array_equal(bt2390, clip_curve)
    bright, colour = snapshot(clip, tmp_path, target_peak_cd_m2=600.0)
    assert colour["target_peak_cd_m2"] == 600.0
    assert bright.mean() < bt2390.mean()  # reference white sits lower on a brighter display
    with pytest.raises(InvalidInputError):
        PlayOptions(target_peak_cd_m2=10.0)


def test_cli_reports_colour(tmp_path: Path) -> None:
    clip = tmp_path / "hlg.mp4"
    make_hdr_clip(clip, HLG, None)
    done = subprocess.run(
        [sys.executable, "-m", "alpha2", "play", str(clip), "--snapshot", str(tmp_path / "s.png"),
         "--hwaccel", "none", "--no-audio", "--tone-curve", "spline", "--target-peak", "300", "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    colour = json.loads(done.stdout)["colour"]
    assert colour["managed"] and colour["tone_curve"] == "spline" and colour["target_peak_cd_m2"] == 300.0
    assert colour["transfer"] == "HLG -> BT1886"


def test_a_wall_honours_the_tone_curve_and_target_peak(tmp_path: Path) -> None:
    """``alpha2 play A B --tone-curve ... --target-peak ...``: the wall's renderer takes them too."""
    from alpha2.apps.wall import play_wall

    clip = tmp_path / "pq.mp4"
    make_hdr_clip(clip, PQ, None)
    reports: dict[str, Any] = {}

    def wall(name: str, **options: Any) -> np.ndarray:
        out = tmp_path / f"{name}.png"
        played = PlayOptions(snapshot=str(out), hwaccel="none", audio=False, **options)
        reports[name] = play_wall([str(clip), str(clip)], played).as_dict()
        return read_png(out)[:, :, :3].astype(np.float64)

    plain = wall("plain")
    assert not np.array_equal(plain, wall("clip", tone_curve=ToneCurve.CLIP))
    assert wall("bright", target_peak_cd_m2=600.0).mean() < plain.mean()
    # ... and says so, for the wall and for each stream.
    clipped = reports["clip"]
    assert clipped["colour"]["managed"] and clipped["colour"]["tone_curve"] == "clip"
    assert [s["colour"]["tone_curve"] for s in clipped["streams"]] == ["clip", "clip"]
    assert reports["bright"]["colour"]["target_peak_cd_m2"] == 600.0
