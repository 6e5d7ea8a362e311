"""``alpha2 COMMAND --help`` answers at once (issue 28, item 5: within 100 ms on a 2-core machine).

Timing it here would be flaky on a shared CI machine; what made it slow is checked instead: building a
command's parser and printing its help must not import numpy, PyAV, wgpu or the Vulkan side (numpy
alone was about 0.1 s of ``alpha2 play --help``'s 0.165 s; ``alpha2 probe --help`` spent as long in the
Vulkan device modules). Each command runs in a fresh interpreter, as ``alpha2`` does. The times
themselves are in benchmarks/bench_startup.py (``--only-help``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from alpha2.apps import cli

REPO = Path(__file__).resolve().parent.parent

HEAVY = ("numpy", "av", "wgpu", "wgpudawn", "vulkan", "cffi", "alpha2.native_gpu")
"""Packages ``--help`` must not import (a module under one counts as the package)."""

_PROBE = """
import contextlib, io, json, sys
from alpha2.apps.cli import main
out = io.StringIO()
status = None
with contextlib.redirect_stdout(out):
    try:
        status = main(sys.argv[1:])
    except SystemExit as exc:
        status = exc.code
print(json.dumps({"help": out.getvalue(), "status": status, "modules": sorted(sys.modules)}))
"""


def _help(*args: str) -> dict[str, object]:
    """``alpha2 ARGS --help`` in a fresh interpreter: its output, exit status and the modules loaded."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args, "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _heavy(modules: object) -> list[str]:
    """Which of :data:`HEAVY` are among ``modules``."""
    assert isinstance(modules, list)
    return [h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in modules)]


@pytest.mark.parametrize("command", [c for c, _module, _help_line in cli._SUBCOMMANDS])
def test_command_help_imports_nothing_heavy(command: str) -> None:
    result = _help(command)
    assert result["status"] == 0
    assert f"usage: alpha2 {command}" in str(result["help"])  # the command's own parser, fully built
    assert "examples:" in str(result["help"])
    assert _heavy(result["modules"]) == [], f"alpha2 {command} --help imported them"


def test_top_level_help_imports_nothing_heavy() -> None:
    result = _help()
    assert result["status"] == 0
    assert "usage: alpha2" in str(result["help"])
    assert _heavy(result["modules"]) == []
