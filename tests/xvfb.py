"""``alpha2 play`` in a real window on a virtual X display (xvfb-run), as a person would run it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def play_under_xvfb(*args: str, timeout: float = 300) -> dict[str, Any]:
    """Run ``python -m alpha2 play ARGS --json`` under ``xvfb-run -a``; its JSON report.

    Skips when the window extra (rendercanvas, glfw) or xvfb-run is missing; fails on a non-zero exit.
    """
    pytest.importorskip("rendercanvas")
    pytest.importorskip("glfw")
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run is not installed (apt-get install xvfb)")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    command = ["xvfb-run", "-a", sys.executable, "-m", "alpha2", "play", *args, "--json"]
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    assert run.returncode == 0, run.stderr
    data: dict[str, Any] = json.loads(run.stdout[run.stdout.index("{") :])
    return data
