"""The cheap CPU-device check (GPU device nodes) and how the scale route uses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from alpha2.api import scale_route
from alpha2.api.scale_route import cpu_device_reason
from alpha2.native_gpu.device.cpu_only import cpu_only_reason, gpu_device_nodes


def _dev(tmp_path: Path, *names: str) -> str:
    root = tmp_path / "dev"
    root.mkdir()
    for name in names:
        if name.endswith("/"):
            (root / name).mkdir()
        elif "/" in name:
            (root / name).parent.mkdir(exist_ok=True)
            (root / name).touch()
        else:
            (root / name).touch()
    return str(root)


def test_no_gpu_node_means_cpu_only(tmp_path: Path) -> None:
    dev = _dev(tmp_path, "null", "zero", "tty0")
    assert gpu_device_nodes(dev) == []
    reason = cpu_only_reason(dev, platform="linux")
    assert reason is not None and "CPU" in reason
    assert cpu_only_reason(dev, platform="darwin") is None  # only Linux is decided from nodes
    assert cpu_only_reason(str(tmp_path / "missing"), platform="linux") is None


@pytest.mark.parametrize("node", ["dri/renderD128", "nvidia0", "nvidiactl", "dxg", "kgsl-3d0", "mali0"])
def test_any_gpu_node_leaves_it_to_vulkan(tmp_path: Path, node: str) -> None:
    dev = _dev(tmp_path, "null", node)
    assert gpu_device_nodes(dev) == [str(Path(dev) / node)]
    assert cpu_only_reason(dev, platform="linux") is None


def test_empty_dri_folder_is_no_gpu(tmp_path: Path) -> None:
    dev = _dev(tmp_path, "dri/")
    assert cpu_only_reason(dev, platform="linux") is not None


def test_scale_route_asks_vulkan_only_when_nodes_say_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[bool] = []

    def no_candidates() -> list[object]:
        asked.append(True)
        return []

    monkeypatch.setattr(scale_route, "_vulkan_candidates", no_candidates)
    monkeypatch.setattr("alpha2.native_gpu.device.cpu_only.cpu_only_reason", lambda: "no nodes: CPU")
    assert cpu_device_reason() == "no nodes: CPU"
    assert asked == []
    monkeypatch.setattr("alpha2.native_gpu.device.cpu_only.cpu_only_reason", lambda: None)
    assert cpu_device_reason() is None  # no candidates found: not decided as CPU
    assert asked == [True]
