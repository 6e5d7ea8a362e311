"""``alpha2 --help`` imports no subcommand module (PyAV, wgpu): commands are registered lazily."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from alpha2.apps import cli

REPO = Path(__file__).resolve().parent.parent

_PROBE = """
import contextlib, io, json, sys
from alpha2.apps.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
heavy = sorted(m for m in ("av", "wgpu", "wgpudawn", "vulkan", "alpha2.apps.player",
               "alpha2.api.transcoder", "alpha2.apps.probe", "alpha2.apps.sample") if m in sys.modules)
print(json.dumps({"help": out.getvalue(), "heavy": heavy}))
"""


def _loaded(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_help_imports_no_subcommand() -> None:
    result = _loaded("--help")
    assert result["heavy"] == []
    for command, _module, _help in cli._SUBCOMMANDS:
        assert command in str(result["help"])


def test_one_command_imports_only_its_module() -> None:
    result = _loaded("sample", "--help")
    assert "alpha2.apps.sample" in result["heavy"]
    assert "alpha2.apps.player" not in result["heavy"]
    assert "alpha2.api.transcoder" not in result["heavy"]
    assert "usage: alpha2 sample" in str(result["help"])


def _help_lines(parser: argparse.ArgumentParser) -> dict[str, str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {choice.dest: str(choice.help) for choice in action._choices_actions}


def test_listed_help_lines_are_the_modules_own() -> None:
    """The help lines kept in cli (for the lazy listing) are those the modules register."""
    lazy = _help_lines(cli.build_parser([]))
    full = _help_lines(cli.build_parser([], load_all=True))
    assert lazy == full
    assert set(full) == {command for command, _m, _h in cli._SUBCOMMANDS}
