#!/usr/bin/env python3
"""Probe the GPU adapters: the same code as ``alpha2 probe``.

Usage: ``python tools/probe_adapters.py [--json] [--policy POLICY] [--no-decode] [--submit]``.
Exit status 0 when at least one adapter is found, 1 with ``alpha2: error: ...`` when none is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    from alpha2.apps import probe
except ImportError:  # run from a checkout without installing alpha2
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from alpha2.apps import probe

from alpha2.apps.cli import run_command

DESCRIPTION = (
    "Which GPU adapters there are, what each can do, and which one alpha2 would use: the table of "
    "'alpha2 probe' (ALPHA2_GPU_ADAPTER pins one by index, UUID or name part). Media files: "
    "'alpha2 probe FILE'."
)


def main(argv: list[str] | None = None) -> int:
    """Parse, probe, and turn an alpha2 error into one line and exit status 1."""
    parser = argparse.ArgumentParser(prog="probe_adapters", description=DESCRIPTION)
    probe.add_arguments(parser)
    return run_command(probe.run, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
