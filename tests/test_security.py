"""What others on the machine can plant must not steer alpha2: the runtime directory it makes when
``XDG_RUNTIME_DIR`` is unset, the names in a batch's ``--out`` folder (lock, manifest, staging, output
folders, temporary files), and a Ray cluster that ``--ray auto`` starts (127.0.0.1 only)."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from alpha2.api import atomic
from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.apps import batch_ray
from alpha2.apps.batch import BatchSettings, batch
from alpha2.apps.batch_local import DeviceChoice
from alpha2.apps.batch_plan import MANIFEST_NAME, STAGING_NAME, FileStatus, Manifest, expand_inputs
from alpha2.apps.batch_ray import RayBackend
from alpha2.apps.batch_run import LOCK_NAME, BatchLock, prepare_staging, staging_dir
from alpha2.apps.cli import build_parser, ensure_runtime_dir
from alpha2.gpu.errors import InvalidInputError, UnsupportedError

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip  # noqa: E402

REAL_UID = os.getuid()


def _mode(path: Path | str) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _finishes(call: Callable[[], Any], timeout_s: float = 20.0) -> Any:
    """``call()``'s result or exception, failing the test if it blocks (a FIFO opened by mistake)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), "blocked: a FIFO was opened and waited on"
    if "error" in box:
        raise box["error"]
    return box.get("result")


# ---------------------------------------------------------------------------------------------------
# the runtime directory


@pytest.fixture
def tmpdir_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """XDG_RUNTIME_DIR unset, the temporary directory a fresh folder of the test's."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _runtime_dir() -> str:
    ensure_runtime_dir()
    return os.environ["XDG_RUNTIME_DIR"]


def _assert_private_fresh(path: str, tmp: Path, uid: int) -> None:
    assert os.path.dirname(path) == str(tmp)
    assert os.path.basename(path).startswith(f"alpha2-runtime-{uid}-")  # mkdtemp's, not the fixed name
    st = os.lstat(path)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == REAL_UID and stat.S_IMODE(st.st_mode) == 0o700


def test_runtime_dir_made_private(tmpdir_only: Path) -> None:
    path = _runtime_dir()
    assert path == str(tmpdir_only / f"alpha2-runtime-{os.getuid()}")
    assert _mode(path) == 0o700 and not os.path.islink(path)
    os.environ.pop("XDG_RUNTIME_DIR")
    assert _runtime_dir() == path  # a private one of ours is taken again


def test_runtime_dir_set_by_the_session_is_kept(tmpdir_only: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmpdir_only / "session"
    mine.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(mine))
    assert _runtime_dir() == str(mine)


@pytest.mark.parametrize("target_mode", [0o755, 0o700])
def test_planted_symlink_is_not_followed(tmpdir_only: Path, target_mode: int) -> None:
    """Another user's link at the fixed name: the folder it points at keeps its mode, and is not used."""
    victim = tmpdir_only / "victim"
    victim.mkdir()
    victim.chmod(target_mode)
    (tmpdir_only / f"alpha2-runtime-{os.getuid()}").symlink_to(victim)
    path = _runtime_dir()
    assert _mode(victim) == target_mode
    assert os.path.realpath(path) != str(victim)
    _assert_private_fresh(path, tmpdir_only, os.getuid())


def test_planted_dangling_symlink_and_file(tmpdir_only: Path) -> None:
    planted = tmpdir_only / f"alpha2-runtime-{os.getuid()}"
    planted.symlink_to(tmpdir_only / "not-yet")
    path = _runtime_dir()
    assert not (tmpdir_only / "not-yet").exists()  # not made through the link
    _assert_private_fresh(path, tmpdir_only, os.getuid())
    planted.unlink()
    planted.write_text("")
    os.environ.pop("XDG_RUNTIME_DIR")
    _assert_private_fresh(_runtime_dir(), tmpdir_only, os.getuid())


def test_planted_dir_of_another_owner(tmpdir_only: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory someone else made first (simulated: alpha2 runs as another uid than the folder's)."""
    other = os.getuid() + 4242
    planted = tmpdir_only / f"alpha2-runtime-{other}"
    planted.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: other)
    path = _runtime_dir()
    assert path != str(planted)
    _assert_private_fresh(path, tmpdir_only, other)


@pytest.mark.parametrize("mode", [0o755, 0o777, 0o750, 0o1777])
def test_runtime_dir_with_the_wrong_mode(tmpdir_only: Path, mode: int) -> None:
    planted = tmpdir_only / f"alpha2-runtime-{os.getuid()}"
    planted.mkdir()
    planted.chmod(mode)
    path = _runtime_dir()
    assert _mode(planted) == mode  # not "fixed": someone may already be inside
    _assert_private_fresh(path, tmpdir_only, os.getuid())


# ---------------------------------------------------------------------------------------------------
# a batch's --out folder


def test_planted_lock_symlink_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / LOCK_NAME).symlink_to(victim)
    with pytest.raises(InvalidInputError, match="symbolic link"):
        with BatchLock(str(tmp_path)):
            pass
    assert victim.read_text() == "precious"
    (tmp_path / LOCK_NAME).unlink()
    (tmp_path / LOCK_NAME).symlink_to(tmp_path / "would-be-made")
    with pytest.raises(InvalidInputError, match="symbolic link"):
        with BatchLock(str(tmp_path)):
            pass
    assert not (tmp_path / "would-be-made").exists()


def test_planted_lock_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / LOCK_NAME)

    def lock() -> None:
        with BatchLock(str(tmp_path)):
            pass

    with pytest.raises(InvalidInputError, match=r"not a regular file.*FIFO") as info:
        _finishes(lock)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_planted_manifest_is_refused_without_waiting(tmp_path: Path, kind: str) -> None:
    manifest = tmp_path / "out" / MANIFEST_NAME
    manifest.parent.mkdir()
    victim = tmp_path / "victim.json"
    victim.write_text(json.dumps({"version": 1, "entries": {}}))
    if kind == "fifo":
        os.mkfifo(manifest)
    else:
        manifest.symlink_to(victim)
    with pytest.raises(InvalidInputError, match="FIFO" if kind == "fifo" else "symbolic link"):
        _finishes(lambda: Manifest.load(str(manifest.parent)))
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.mp4").write_bytes(b"x")
    with pytest.raises(InvalidInputError, match="the batch manifest"):
        _finishes(lambda: batch([str(src)], manifest.parent, TranscodeOptions()))
    assert json.loads(victim.read_text()) == {"version": 1, "entries": {}}


def test_cli_refuses_a_planted_manifest_in_one_line(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.mp4").write_bytes(b"x")
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / MANIFEST_NAME)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run(
        [sys.executable, "-m", "alpha2", "batch", str(src), "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 1
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("alpha2: error: the batch manifest"), run.stderr
    assert "FIFO" in lines[0]


def test_fifo_in_an_input_folder_is_not_read(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.mp4").write_bytes(b"x")
    os.mkfifo(src / "b.mp4")
    pairs = _finishes(lambda: expand_inputs([str(src)]))
    assert [os.path.basename(f) for f, _ in pairs] == ["a.mp4"]


def test_staging_names_are_unguessable(tmp_path: Path) -> None:
    names = {staging_dir(str(tmp_path), "a/b.mp4") for _ in range(50)}
    assert len(names) == 50
    digest = hashlib.sha256(b"a/b.mp4").hexdigest()[:16]
    for name in names:
        assert os.path.dirname(name) == str(tmp_path / STAGING_NAME)
        head, _, suffix = os.path.basename(name).partition("-")
        assert head == digest and len(suffix) == 16


def test_prepare_staging_removes_what_was_planted(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / STAGING_NAME).symlink_to(victim)
    root = prepare_staging(str(out))
    assert not os.path.islink(root) and os.path.isdir(root) and _mode(root) == 0o700
    assert (victim / "keep.txt").read_text() == "precious"
    # A real folder left there, with a link inside at a name the old scheme used: gone, target kept.
    os.symlink(victim, os.path.join(root, "0123456789abcdef"))
    prepare_staging(str(out))
    assert os.listdir(root) == [] and (victim / "keep.txt").read_text() == "precious"


def test_planted_staging_and_output_folder_symlinks(tmp_path: Path) -> None:
    """A real batch into a folder with links planted at the staging root, at the staging names an
    earlier alpha2 used (a hash of the key), and at an output's folder: nothing lands outside --out."""
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    make_clip(src / "a.mp4", width=64, height=48, frames=4)
    make_clip(src / "sub" / "b.mp4", width=64, height=48, frames=4)
    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "out"
    (out / STAGING_NAME).mkdir(parents=True)
    for key in ("a.mp4", "sub/b.mp4"):
        (out / STAGING_NAME / hashlib.sha256(key.encode()).hexdigest()[:16]).symlink_to(victim)
    (out / "sub").symlink_to(victim)
    report = batch([str(src)], out, TranscodeOptions(), BatchSettings(device=DeviceChoice.CPU, workers=1))
    results = {r.item.key: r for r in report.results}
    assert results["a.mp4"].status is FileStatus.DONE and (out / "a.mp4").stat().st_size > 0
    refused = results["sub/b.mp4"]
    assert refused.status is FileStatus.FAILED and "symbolic link" in (refused.error or "")
    assert list(victim.iterdir()) == []
    assert not (out / STAGING_NAME).exists()


def test_temporary_files_are_made_exclusively(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A link planted at the temporary name is neither followed nor reused; a link at the final name
    is replaced, its target untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    names = iter(["planted", "fresh"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(names))  # atomic imports it when it writes
    (tmp_path / ".m.planted.partial.json").symlink_to(victim)
    (tmp_path / "m.json").symlink_to(victim)
    atomic.write_bytes_atomic(tmp_path / "m.json", b"{}")
    assert victim.read_text() == "precious"
    assert not os.path.islink(tmp_path / "m.json") and (tmp_path / "m.json").read_bytes() == b"{}"
    assert os.path.islink(tmp_path / ".m.planted.partial.json")
    assert not (tmp_path / ".m.fresh.partial.json").exists()


# ---------------------------------------------------------------------------------------------------
# Ray: a cluster alpha2 starts listens on 127.0.0.1


class FakeRay(types.ModuleType):
    """Enough of ``ray`` for RayBackend.start(): records each ray.init call with the Ray constant that
    decides whether a loopback node address is kept."""

    def __init__(self, *, running: bool = False, node_ip: str | None = None) -> None:
        super().__init__("ray")
        self.running = running
        self.node_ip = node_ip
        self.calls: list[tuple[str | None, dict[str, Any], bool]] = []
        self.initialized = False
        self.shut_down = False
        self.constants = types.ModuleType("ray._private.ray_constants")
        self.constants.ENABLE_RAY_CLUSTER = True  # type: ignore[attr-defined]
        self.util = types.SimpleNamespace(get_node_ip_address=lambda: self.node_ip or self._bound)
        self._bound = "192.0.2.7"

    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, address: str | None = None, **kwargs: Any) -> None:
        self.calls.append((address, kwargs, self.constants.ENABLE_RAY_CLUSTER))  # type: ignore[attr-defined]
        if address == "auto" and not self.running:
            raise ConnectionError("Could not find any running Ray instance.")
        if "_node_ip_address" in kwargs:
            self._bound = kwargs["_node_ip_address"]
        self.initialized = True

    def shutdown(self) -> None:
        self.shut_down = True
        self.initialized = False

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        handle = types.SimpleNamespace(remote=lambda *a, **k: object(), options=lambda **k: handle)
        if args:
            return handle
        return lambda target: handle


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeRay]:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def install(**kwargs: Any) -> FakeRay:
        ray = FakeRay(**kwargs)
        monkeypatch.setitem(sys.modules, "ray", ray)
        monkeypatch.setitem(sys.modules, "ray._private.ray_constants", ray.constants)
        return ray

    return install


def test_ray_auto_starts_a_cluster_on_loopback(fake_ray: Callable[..., FakeRay]) -> None:
    ray = fake_ray()
    backend = RayBackend("auto")
    backend.start()
    (joined, join_kwargs, _), (started, kwargs, cluster_mode) = ray.calls
    assert joined == "auto" and "_node_ip_address" not in join_kwargs
    assert started == "local" and kwargs["_node_ip_address"] == "127.0.0.1"  # not the address file's
    assert kwargs["include_dashboard"] is False
    assert cluster_mode is False  # Ray keeps 127.0.0.1 rather than turning it into the outward address
    assert ray.constants.ENABLE_RAY_CLUSTER is True  # type: ignore[attr-defined]  # put back
    assert backend.describe()["started_cluster"] is True and backend.describe()["node_ip"] == "127.0.0.1"


def test_ray_auto_joins_a_running_cluster_as_it_is(fake_ray: Callable[..., FakeRay]) -> None:
    ray = fake_ray(running=True)
    backend = RayBackend("auto")
    backend.start()
    ((address, kwargs, _),) = ray.calls
    assert address == "auto" and "_node_ip_address" not in kwargs
    assert backend.describe()["started_cluster"] is False


def test_ray_named_cluster_is_joined(
    fake_ray: Callable[..., FakeRay], monkeypatch: pytest.MonkeyPatch
) -> None:
    ray = fake_ray(running=True)
    # 'head' resolves on a cluster's network, not here: the probe that refuses an unresolvable name is
    # another test's (test_ray_addresses.py); this one is about what Ray is asked.
    monkeypatch.setattr("alpha2.apps.batch_ray._check_reachable", lambda address: None)
    RayBackend("head:6379").start()
    assert [(a, "_node_ip_address" in k) for a, k, _ in ray.calls] == [("head:6379", False)]
    ray = fake_ray()
    monkeypatch.setenv("RAY_ADDRESS", "head:6379")
    RayBackend("auto").start()  # RAY_ADDRESS names the cluster: no local one instead
    assert [(a, "_node_ip_address" in k) for a, k, _ in ray.calls] == [(None, False)]


def test_ray_bind_elsewhere_when_asked(fake_ray: Callable[..., FakeRay]) -> None:
    ray = fake_ray()
    backend = RayBackend("auto", bind="10.1.2.3")
    backend.start()
    _, (_, kwargs, cluster_mode) = ray.calls
    assert kwargs["_node_ip_address"] == "10.1.2.3" and cluster_mode is True


def test_ray_that_ignores_the_bind_is_shut_down(fake_ray: Callable[..., FakeRay]) -> None:
    ray = fake_ray(node_ip="192.0.2.7")
    with pytest.raises(UnsupportedError, match=r"192\.0\.2\.7, not on 127\.0\.0\.1.*--ray-bind 192\.0\.2\.7"):
        RayBackend("auto").start()
    assert ray.shut_down


def test_ray_bind_option(tmp_path: Path) -> None:
    parser = build_parser(["batch"])
    args = parser.parse_args(
        ["batch", str(tmp_path), "--out", "o", "--ray", "auto", "--ray-bind", "10.0.0.2"]
    )
    assert (args.ray, args.ray_bind) == ("auto", "10.0.0.2")
    assert parser.parse_args(["batch", str(tmp_path), "--out", "o"]).ray_bind is None
    with pytest.raises(InvalidInputError, match="--ray auto"):
        BatchSettings(ray_bind="10.0.0.2")
    assert BatchSettings(ray="auto").ray_bind is None and batch_ray.DEFAULT_RAY_BIND == "127.0.0.1"


_RAY_CHILD = """
import json, sys
import ray
from alpha2.apps.batch_ray import RayBackend
backend = RayBackend("auto")
backend.start()
print(json.dumps({**backend.describe(), "gcs": ray.get_runtime_context().gcs_address}))
backend.close()
"""


def test_real_ray_local_cluster_listens_on_loopback(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run(
        [sys.executable, "-c", _RAY_CHILD], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads(run.stdout.strip().splitlines()[-1])
    if not data["started_cluster"]:
        pytest.skip("a Ray cluster already runs on this machine: joined, not started")
    assert data["node_ip"] == "127.0.0.1"
    assert data["gcs"].rsplit(":", 1)[0] == "127.0.0.1"
