"""Faults found by reading the docs and the ``--help`` texts as a newcomer (outside pass, helper 124)."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

from alpha2.apps.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
COMMANDS = ("probe", "sample", "play", "transcode", "batch")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_OTHER_PROGRAM = ("mpv's", "ffmpeg's", "transcode's")
"""Words just before an option that is another program's (``as mpv's --alang``), or another command's
(``transcode's options (all but --segments``)."""


def _command_parser(command: str) -> argparse.ArgumentParser:
    parser = build_parser([command])
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_commands_help_names_only_options_it_has(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``alpha2 batch --help`` said of --fps 'not with --segments or --codec copy', and batch has no
    --segments (it refuses it: 'unknown option --segments')."""
    monkeypatch.setenv("COLUMNS", "80")
    parser = _command_parser(command)
    own = {name for action in parser._actions for name in action.option_strings}
    text = " ".join(parser.format_help().split())
    foreign = [
        match.group()
        for match in _OPTION.finditer(text)
        if match.group() not in own
        and not any(word in text[max(0, match.start() - 30) : match.start()] for word in _OTHER_PROGRAM)
    ]
    assert not foreign, f"alpha2 {command} --help names options it does not have: {foreign}"


def test_transcode_help_says_where_it_scales_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The help said 'scale and convert colour on the GPU' and --gpu 'process on the GPU even when
    nothing needs it', while on a CPU Vulkan device (lavapipe) a scaled transcode runs on swscale
    (route 'on the CPU (swscale)') unless --gpu is given."""
    monkeypatch.setenv("COLUMNS", "80")
    parser = _command_parser("transcode")
    text = " ".join(parser.format_help().split())
    assert "swscale where the Vulkan device alpha2 would use is a CPU one" in text, text
    gpu = next(a for a in parser._actions if "--gpu" in a.option_strings)
    assert gpu.help is not None and "CPU Vulkan device" in gpu.help and "swscale" in gpu.help


def _extras() -> set[str]:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    return set(pyproject["project"]["optional-dependencies"])


def test_the_docs_name_only_extras_that_exist() -> None:
    """Every ``.[extra]`` / ``alpha2[extra]`` the docs tell a reader to install is one pyproject.toml has."""
    extras = _extras()
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for match in re.finditer(r"(?:alpha2|\.)\[(?P<names>[a-z0-9_,-]+)\]", doc.read_text()):
            unknown = set(match.group("names").split(",")) - extras
            assert not unknown, f"{doc.name} names extras pyproject.toml lacks: {unknown}"


def test_the_install_section_names_every_extra() -> None:
    """The front page's 'By hand' install listed cuda, dawn, ray and docs, not pygfx (the pygfx example's,
    whose page told a reader to pip install pygfx unpinned, where the extra pins the release it is tested
    with) nor dev; window and audio are old names of default dependencies."""
    text = (REPO / "docs" / "index.md").read_text()
    install = text[text.index("By hand:") : text.index("## A first program")]
    missing = sorted(name for name in _extras() - {"window", "audio"} if f"`{name}`" not in install)
    assert not missing, f"docs/index.md's install names no {missing}"
    pygfx_page = (REPO / "docs" / "examples" / "pygfx.md").read_text()
    assert ".[pygfx]" in pygfx_page and "pip install pygfx" not in pygfx_page
