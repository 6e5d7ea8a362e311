"""``alpha2 batch --ray`` never waits on a cluster that cannot answer (an outside pass: both hung for
minutes, deaf to Ctrl-C): a host name this machine cannot resolve is refused at once, and under ``auto``
a cluster that Ray's address file names but that no longer answers (a killed ``ray start``) is not
tried: a local one is started instead, and that is said."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import textwrap
import types
from pathlib import Path

import pytest

from alpha2.apps import batch_ray
from alpha2.gpu.errors import UnsupportedError


def test_a_host_name_that_does_not_resolve_is_refused_at_once() -> None:
    pytest.importorskip("ray")
    backend = batch_ray.RayBackend("cluster.invalid:6379")  # .invalid never resolves (RFC 2606)
    try:
        with pytest.raises(UnsupportedError, match=r"'cluster\.invalid' does not resolve on this machine"):
            backend.start()
    finally:
        backend.close()


def _ray_reading(address: str | None) -> object:
    utils = types.SimpleNamespace(read_ray_address=lambda: address)
    return types.SimpleNamespace(_private=types.SimpleNamespace(utils=utils))


def test_the_address_file_s_cluster_is_stale_only_where_nothing_answers() -> None:
    with socket.socket() as unlistened:  # bound, never listening: nothing answers there
        unlistened.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{unlistened.getsockname()[1]}"
        assert batch_ray._stale_cluster_address(_ray_reading(dead)) == dead
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        alive = f"127.0.0.1:{listening.getsockname()[1]}"
        assert batch_ray._stale_cluster_address(_ray_reading(alive)) is None
    assert batch_ray._stale_cluster_address(_ray_reading(None)) is None
    assert batch_ray._stale_cluster_address(types.SimpleNamespace()) is None  # a Ray without the reader


def test_ray_auto_starts_a_cluster_past_a_stale_address_file() -> None:
    pytest.importorskip("ray")
    # A short folder: Ray's sockets go under it, and a socket's path has at most 107 bytes.
    with tempfile.TemporaryDirectory(prefix="r", dir="/tmp") as folder, socket.socket() as unlistened:
        tmp_path = Path(folder)
        unlistened.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{unlistened.getsockname()[1]}"
        (tmp_path / "ray").mkdir()
        (tmp_path / "ray" / "ray_current_cluster").write_text(dead)
        script = textwrap.dedent(
            """
            from alpha2.apps.batch_ray import RayBackend
            backend = RayBackend("auto")
            try:
                backend.start()
                print("described", backend.describe()["started_cluster"], backend.describe()["stale_cluster"])
            finally:
                backend.close()
            """
        )
        env = {"RAY_TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"described True {dead}" in done.stdout, done.stdout
    assert f"names a cluster at {dead} that no longer answers: starting one here instead" in done.stderr
