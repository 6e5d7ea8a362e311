"""`alpha2 play --snapshot` on a CPU device: the swscale route, its reason, rotation, the GPU route's PNG."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from alpha2.api.scale_route import cpu_device_reason
from alpha2.api.snapshot_cpu import SnapshotRouteKind, choose_snapshot_route, rotate
from alpha2.apps.cli import main
from alpha2.apps.player import PlayOptions, play
from alpha2.apps.sample import write_sample
from alpha2.gpu.geometry import Rotation, Size
from tests.test_apps_play import NO_DISPLAY, read_png


def test_route_rules() -> None:
    cpu = choose_snapshot_route(forced_gpu=False, hwaccel="auto", cpu_reason=lambda: "only lavapipe")
    assert cpu.kind is SnapshotRouteKind.SWSCALE and "only lavapipe" in cpu.reason
    assert cpu.as_dict()["route"] == "swscale"
    gpu = choose_snapshot_route(forced_gpu=False, hwaccel="none", cpu_reason=lambda: None)
    assert gpu.kind is SnapshotRouteKind.GPU and "GPU" in gpu.reason
    forced = choose_snapshot_route(forced_gpu=True, hwaccel="none", cpu_reason=lambda: "only lavapipe")
    assert forced.kind is SnapshotRouteKind.GPU and "--gpu" in forced.reason
    nvdec = choose_snapshot_route(forced_gpu=False, hwaccel="cuda", cpu_reason=lambda: "only lavapipe")
    assert nvdec.kind is SnapshotRouteKind.GPU and "cuda" in nvdec.reason


def test_rotate_turns_clockwise() -> None:
    a = np.arange(6).reshape(2, 3)  # [[0 1 2] [3 4 5]]
    assert rotate(a, Rotation.NONE).tolist() == a.tolist()
    assert rotate(a, Rotation.CW90).tolist() == [[3, 0], [4, 1], [5, 2]]
    assert rotate(a, Rotation.CW180).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert rotate(a, Rotation.CW270).tolist() == [[2, 5], [1, 4], [0, 3]]


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("snapshot_cpu")
    return write_sample(str(root / "clip.mp4"), duration_s=0.3, size=Size(320, 180), audio=False).path


def _needs_cpu_device() -> None:
    if cpu_device_reason() is None:
        pytest.skip("the device here is a GPU: the swscale snapshot route is for CPU devices")


@pytest.mark.vulkan
def test_cpu_route_matches_gpu_route(clip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _needs_cpu_device()
    common = ["--at", "0.1", "--hwaccel", "none", "--json"]
    assert main(["play", clip, "--snapshot", str(tmp_path / "cpu.png"), *common]) == 0
    cpu = json.loads(capsys.readouterr().out)
    assert cpu["snapshot_route"]["route"] == "swscale" and "CPU" in cpu["snapshot_route"]["reason"]
    assert cpu["device"] is None  # no WebGPU device was made
    assert cpu["paths"] == {"software": 1} and cpu["frames"] == 1
    assert main(["play", clip, "--snapshot", str(tmp_path / "gpu.png"), *common, "--gpu"]) == 0
    gpu = json.loads(capsys.readouterr().out)
    assert gpu["snapshot_route"] == {"route": "gpu", "reason": "--gpu asks for the GPU"}
    assert gpu["device"] is not None
    assert cpu["snapshot_pts_s"] == gpu["snapshot_pts_s"]
    a, b = read_png(tmp_path / "cpu.png"), read_png(tmp_path / "gpu.png")
    assert a.shape == b.shape == (180, 320, 4) and (a[..., 3] == 255).all()
    assert np.abs(a.astype(int) - b.astype(int)).mean() <= 1.0  # the accuracy bar, in code values


@pytest.mark.vulkan
def test_cpu_route_honours_rotation(clip: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_cpu_device()
    plain = play(clip, PlayOptions(snapshot=str(tmp_path / "plain.png"), hwaccel="none"), environ=NO_DISPLAY)
    assert plain.snapshot_route is not None and plain.snapshot_route["route"] == "swscale"
    monkeypatch.setattr("alpha2.ffmpeg_bridge.media.stream_rotation", lambda stream: Rotation.CW90)
    turned = play(clip, PlayOptions(snapshot=str(tmp_path / "cw90.png"), hwaccel="none"), environ=NO_DISPLAY)
    assert turned.snapshot_route is not None and turned.snapshot_route["route"] == "swscale"
    a, b = read_png(tmp_path / "plain.png"), read_png(tmp_path / "cw90.png")
    assert b.shape == (320, 180, 4)
    assert np.array_equal(b, np.rot90(a, k=-1))
