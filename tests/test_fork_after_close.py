"""A process forked after a source was closed (a torch DataLoader's workers, forked from a main
process that opened a file first) can open sources and drop the closed one it inherited: before, the
closed source's FFmpeg stream was freed in the child, where avcodec_free_context waited forever for
frame threads the fork had not copied."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from media import make_clip

_SCRIPT = r"""
import os, sys, time
import alpha2
path = sys.argv[1]
with alpha2.open(path, hwaccel="none") as source:
    frame = source.next_frame()
    frame.release()
pid = os.fork()
if pid == 0:
    # Rebinding the name frees the inherited, closed source in the child.
    source = alpha2.open(path, hwaccel="none")
    frame = source.next_frame()
    print("child decoded", frame is not None, flush=True)
    os._exit(0)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(pid, 9)
print("child hung", flush=True)
sys.exit(3)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_opens_and_drops_what_it_inherited(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "c.mp4", frames=6).path
    run = subprocess.run(
        [sys.executable, "-c", _SCRIPT, clip],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")},
    )
    assert run.returncode == 0 and "child decoded True" in run.stdout, (run.stdout, run.stderr[-2000:])
