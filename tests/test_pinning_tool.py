"""tools/check_pinning.py's expectations, against synthetic Vulkan candidates (no GPU)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest

from alpha2.gpu.adapters import AdapterFacts, AdapterPinError, AdapterType, resolve_adapter_pin
from alpha2.gpu.errors import UnsupportedError

TOOL = Path(__file__).resolve().parent.parent / "tools" / "check_pinning.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_pinning", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake(monkeypatch: pytest.MonkeyPatch, tool: ModuleType, candidates: list[AdapterFacts]) -> None:
    """The tool against these candidates: a pin opens the first adapter it names, as the shared device
    does, and refuses as alpha2 refuses."""

    def pinned(value: str) -> tuple[int | None, str | None, int | None, str]:
        first = resolve_adapter_pin(value, candidates)[0]
        return first.index, str(uuid.UUID(bytes=first.uuid)) if first.uuid else None, None, "opened"

    monkeypatch.setattr(tool, "vulkan_candidates", lambda: candidates)
    monkeypatch.setattr(tool, "_pinned", pinned)


def _gpu(index: int, name: str, device_uuid: bytes) -> AdapterFacts:
    return AdapterFacts(index=index, name=name, device_type=AdapterType.DISCRETE_GPU, uuid=device_uuid)


def test_one_device_that_two_drivers_list_passes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # lavapipe listed twice (one UUID): the tool called the UUID pins of #1 and the shared name FAILED,
    # though alpha2 treats the two entries as one device, as it should.
    tool = _tool()
    same = uuid.UUID("6d657361-3232-2e33-2e36-000000000000").bytes
    _fake(monkeypatch, tool, [_gpu(0, "llvmpipe", same), _gpu(1, "llvmpipe", same)])
    assert tool.main([]) == 0, capsys.readouterr().out
    assert "FAILED" not in capsys.readouterr().out


def test_two_devices_of_one_name_are_checked_as_ambiguous(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = _tool()
    twins = [_gpu(i, "NVIDIA H200", bytes([i + 1]) * 16) for i in range(2)]
    _fake(monkeypatch, tool, twins)
    assert tool.main([]) == 0
    out = capsys.readouterr().out
    assert "(ambiguous) refused" in out and "FAILED" not in out
    with pytest.raises(AdapterPinError):
        resolve_adapter_pin("NVIDIA H200", twins)


def _run(*args: str, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ALPHA2_GPU_ADAPTER"}
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, str(TOOL), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_no_driver_exits_1_with_one_line() -> None:
    """Found by an outside pass: without a Vulkan driver the tool ended in a traceback
    (VulkanUnavailableError), where tools/probe_adapters.py says one line."""
    out = _run(VK_DRIVER_FILES="/nonexistent/icd.json", VK_ICD_FILENAMES="/nonexistent/icd.json")
    assert out.returncode == 1 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("alpha2: error: "), out.stderr


def test_help_fits_80_columns() -> None:
    """Found by an outside pass: the description was printed as written, lines of 100 columns that an
    80-column terminal cut mid-word."""
    out = _run("--help", COLUMNS="80")
    assert out.returncode == 0
    assert max(len(line) for line in out.stdout.splitlines()) <= 80, out.stdout
    assert "``" not in out.stdout


def test_a_pin_that_cannot_open_is_a_failed_check_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by an outside pass: an alpha2 error while a pin opened its device (the shared context
    could not be made there) ended the tool in a traceback; it is that check's FAILED line."""
    tool = _tool()
    _fake(monkeypatch, tool, [_gpu(0, "NVIDIA H200", bytes([1]) * 16)])

    def cannot_open(value: str) -> tuple[int | None, str | None, int | None, str]:
        raise UnsupportedError("vkCreateDevice failed")

    monkeypatch.setattr(tool, "_pinned", cannot_open)
    assert tool.main([]) == 1
    out = capsys.readouterr().out
    assert "pin by index '0'" in out and "FAILED: vkCreateDevice failed" in out
    # Index, UUID, 'uuid:' UUID and name each checked; the unknown name not refused as a pin error.
    assert out.count("FAILED: vkCreateDevice failed") == 5
