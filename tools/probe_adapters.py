#!/usr/bin/env python3
"""Probe the GPU adapters: the same code as ``alpha2 probe``.

Usage: ``python tools/probe_adapters.py [--json] [--policy POLICY] [--no-decode] [--submit]``.
Exit status 0 when at least one adapter is found, 1 with ``alpha2: error: ...`` when none is.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from alpha2.apps.probe import main
except ImportError:  # run from a checkout without installing alpha2
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from alpha2.apps.probe import main

if __name__ == "__main__":
    sys.exit(main())
