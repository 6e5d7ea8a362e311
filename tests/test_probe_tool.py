"""The adapter probe: tools/probe_adapters.py and ``alpha2 probe`` (the same code)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alpha2.apps import probe

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "probe_adapters.py"


def _run(*args: str, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    env.pop("ALPHA2_GPU_ADAPTER", None)
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, str(TOOL), *args], capture_output=True, text=True, env=env, timeout=120, cwd=REPO
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="alpha2")
    probe.register(parser.add_subparsers(dest="command"))
    return parser


def test_register_adds_probe_subcommand() -> None:
    args = _parser().parse_args(["probe", "--json"])
    assert args.func is probe.run and args.json and args.policy == "auto"


def test_tool_help_says_what_it_does_in_plain_words() -> None:
    # It showed the module docstring's first line, cut in mid-sentence with its reST markup:
    # "``alpha2 probe``: which GPU adapters there are, ... which one alpha2 would use;".
    out = _run("--help")
    assert out.returncode == 0
    description = " ".join(out.stdout.split("\n\n")[1].split())
    assert "``" not in description and description.endswith(".")
    assert "ALPHA2_GPU_ADAPTER" in description


def test_no_driver_exits_1_with_one_line() -> None:
    out = _run(VK_DRIVER_FILES="/nonexistent/icd.json", VK_ICD_FILENAMES="/nonexistent/icd.json")
    assert out.returncode == 1
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("alpha2: error: ")
    assert "Traceback" not in out.stderr


@pytest.mark.vulkan
def test_json_output() -> None:
    out = _run("--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["adapters"] and doc["chosen"] is not None and doc["pinned"] is None
    first = doc["adapters"][0]
    for key in ("name", "device_type", "driver_version", "api_version", "decode_codecs", "encode_codecs"):
        assert key in first
    assert "memory_budget_bytes" in first and "external_memory" in first
    assert sorted(a["rank"] for a in doc["adapters"] if a["rank"] is not None)[0] == 1
    assert sum(a["chosen"] for a in doc["adapters"]) == 1


@pytest.mark.vulkan
def test_table_output_marks_pinned_and_chosen() -> None:
    out = _run(ALPHA2_GPU_ADAPTER="0", COLUMNS="200")  # the marks on one line of the row
    assert out.returncode == 0, out.stderr
    for word in ("name", "decode", "encode", "budget", "interop", "pinned", "chosen"):
        assert word in out.stdout
    assert "ALPHA2_GPU_ADAPTER='0'" in out.stdout
    # In adapter #0's row of the table, not only in the lines under it ('pinned: ...', 'chosen: #0',
    # the reason's 'chosen (auto)'), which an outside pass found passed the words above without the marks.
    row = next(line for line in out.stdout.splitlines() if line.startswith("│ 0 "))
    assert row.rstrip(" │").endswith("pinned chosen"), row


@pytest.mark.vulkan
def test_bad_pin_exits_1() -> None:
    out = _run(ALPHA2_GPU_ADAPTER="no such adapter anywhere")
    assert out.returncode == 1
    assert out.stderr.startswith("alpha2: error: ALPHA2_GPU_ADAPTER=") and "Traceback" not in out.stderr


@pytest.mark.vulkan
def test_run_in_process_with_submission(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ALPHA2_GPU_ADAPTER", raising=False)
    args = _parser().parse_args(["probe", "--json", "--submit", "--no-decode"])
    assert args.func(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["submission"]["ok"], doc["submission"]
    assert doc["submission"]["queues"]


class _Unusable:
    index = 0
    error = "no queue family can compute"
    usable = False

    def to_dict(self) -> dict[str, object]:
        return {"index": self.index, "name": "Broken GPU"}


def test_json_exits_1_when_no_adapter_is_usable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The table exited 1 when no adapter could be used and --json exited 0, so a script checking the
    # status took a machine alpha2 cannot use for a good one. Found by an outside pass.
    monkeypatch.delenv("ALPHA2_GPU_ADAPTER", raising=False)
    monkeypatch.setattr(probe, "_collect", lambda args: ([_Unusable()], []))
    args = _parser().parse_args(["probe", "--json"])
    assert probe.run(args) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["chosen"] is None
    assert doc["adapters"][0]["reason"] == "unusable: no queue family can compute"
