"""``alpha2 batch --ray auto|ADDRESS``: each file is a Ray task, placed by the resources it asks for.

Ray is imported only here, and only when ``--ray`` is given (``pip install 'alpha2[ray]'``). ``auto``
joins the Ray cluster this machine already runs (or the one ``RAY_ADDRESS`` names), else starts a local
one; an address (``ray://host:10001``, ``host:6379``) joins that cluster; a process that already called
``ray.init`` keeps its own session. Ray's ``init`` tries an address that cannot answer for minutes, deaf
to Ctrl-C, so none is tried: a ``HOST:PORT`` where nothing takes a connection, or whose host name does not
resolve here, is refused; under ``auto`` a cluster Ray's address file names that no longer answers (a
killed ``ray start``) is passed over, said, and a local one started (``address='local'``).

A local cluster that alpha2 starts listens on 127.0.0.1 only (``--ray-bind`` gives another address):
Ray's own default is every interface, which lets anyone who reaches the machine submit work to it.
Ray (2.x) turns a loopback ``_node_ip_address`` into the machine's outward address unless its
``ENABLE_RAY_CLUSTER`` constant is off (as it is on macOS and Windows), so that constant is off while the
cluster starts; the node address Ray then reports is checked, and a cluster that did not bind where it
was asked is shut down again with an error.

What a task asks for (:func:`task_resources`):

* on a cluster with GPUs: ``num_gpus = 1 / streams`` (several files share a GPU, as a local GPU worker's
  streams do) and, when the cluster declares the custom resource ``nvdec`` (``ray start
  --resources='{"nvdec": 8}'``: how many decode sessions a node's NVDEC engines take) and decoding may
  use NVDEC, ``{"nvdec": 1}``; Ray sets ``CUDA_VISIBLE_DEVICES`` to the GPU it assigns, and the task pins
  ``ALPHA2_GPU_ADAPTER`` to that GPU's UUID, so its Device is the same GPU;
* on a cluster without GPUs (or ``--device cpu``): one CPU.

Ray's own retries are off (``max_retries=0``): a task that dies comes back to the driver as a crashed
attempt, and the driver retries it like any transient failure, so both runners count attempts alike.
Every node needs alpha2 installed (the tasks import it) and must see the inputs and the output folder
at the same paths (a shared filesystem). Frame progress comes back through one small actor that the
tasks post to.
"""

from __future__ import annotations

import contextlib
import importlib
import ipaddress
import os
import socket
import sys
import time
import uuid as _uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from alpha2.apps.batch_local import MAX_GPU_STREAMS, DeviceChoice
from alpha2.apps.batch_plan import one_line
from alpha2.apps.batch_run import (
    CRASH_KIND,
    Event,
    FileTask,
    Finished,
    Frames,
    Outcome,
    Started,
    transcode_task,
)
from alpha2.gpu.adapters import ADAPTER_ENV
from alpha2.gpu.errors import InvalidInputError, UnsupportedError

__all__ = [
    "DEFAULT_RAY_BIND",
    "NVDEC_RESOURCE",
    "RayBackend",
    "TaskResources",
    "pin_assigned_gpu",
    "task_resources",
]

NVDEC_RESOURCE = "nvdec"
"""The custom resource that counts NVDEC decode sessions on a node."""

PROGRESS_EVERY_S = 0.5
"""How often a task posts its frame count."""

DEFAULT_RAY_BIND = "127.0.0.1"
"""Where a Ray cluster that alpha2 starts listens, unless ``--ray-bind`` says otherwise."""


def _is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def _loopback_kept(ray: Any, address: str) -> Iterator[None]:
    """While Ray starts: keep a loopback node address as given (see the module docstring)."""
    constants: Any = None
    if _is_loopback(address):
        try:
            constants = importlib.import_module("ray._private.ray_constants")
        except ImportError:  # a Ray without the constant keeps the address as given anyway
            constants = None
    if constants is None or not hasattr(constants, "ENABLE_RAY_CLUSTER"):
        yield
        return
    before = constants.ENABLE_RAY_CLUSTER
    constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = before


GCS_PROBE_S = 5.0
"""How long a cluster's address may take to take a connection before ``--ray ADDRESS`` is refused."""


def _check_reachable(address: str) -> None:
    """Refuse a ``HOST:PORT`` cluster address where nothing takes a connection: Ray's own ``init`` tries
    such an address for ever, printing 'Failed to connect to GCS' every 40 s, deaf to Ctrl-C and SIGTERM.
    A ``ray://`` address (Ray Client, which gives up by itself), one Ray would refuse and a host name that
    does not resolve pass as they are."""
    if "://" in address:
        return
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        return  # not HOST:PORT: ray.init says what is wrong with it
    try:
        socket.create_connection((host, int(port)), timeout=GCS_PROBE_S).close()
    except socket.gaierror as exc:
        # Ray's init tries a name that does not resolve for ever too (an outside pass).
        raise UnsupportedError(
            f"--ray {address}: the host name {host!r} does not resolve on this machine "
            f"({exc.strerror or exc}); give the cluster's IP address, or --ray auto"
        ) from exc
    except OSError as exc:
        raise UnsupportedError(
            f"--ray {address}: no Ray cluster answers there ({exc.strerror or exc}); start one with "
            "'ray start --head' on that machine, or give --ray auto"
        ) from exc


def _stale_cluster_address(ray: Any) -> str | None:
    """The address of the local cluster Ray's address file names (``/tmp/ray/ray_current_cluster``, or
    under ``RAY_TMPDIR``) where nothing takes a connection there any more; None where there is no file,
    it cannot be read, or its cluster answers. A cluster that died without removing the file (a killed
    ``ray start``, a reboot with /tmp kept) made ``ray.init(address='auto')`` try it for minutes, deaf to
    Ctrl-C (an outside pass)."""
    read = getattr(getattr(getattr(ray, "_private", None), "utils", None), "read_ray_address", None)
    if read is None:  # a Ray without it: left to ray.init
        return None
    try:
        address = read()
    except Exception:  # an unreadable file: left to ray.init
        return None
    if not address:
        return None
    host, _, port = str(address).rpartition(":")
    if not host or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=GCS_PROBE_S).close()
    except OSError:
        return str(address)
    return None


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise UnsupportedError(
            f"--ray needs Ray, which is not installed ({exc}); pip install 'alpha2[ray]' or run without --ray"
        ) from exc


@dataclass(frozen=True)
class TaskResources:
    """What each file's task asks Ray for, and how many run at once."""

    num_cpus: float
    """CPUs per task."""
    num_gpus: float
    """GPUs per task (a fraction: files share a GPU)."""
    resources: dict[str, float] = field(default_factory=dict)
    """Custom resources per task (``{"nvdec": 1}``)."""
    concurrency: int = 1
    """Tasks the driver keeps in flight (what the cluster can run at once)."""
    note: str = ""
    """Why these (printed with the run's description)."""

    @property
    def uses_gpu(self) -> bool:
        """Whether the task gets a GPU."""
        return self.num_gpus > 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "num_cpus": self.num_cpus,
            "num_gpus": self.num_gpus,
            "resources": dict(self.resources),
            "concurrency": self.concurrency,
            "note": self.note,
        }


def task_resources(
    cluster: dict[str, float],
    *,
    device: DeviceChoice = DeviceChoice.AUTO,
    streams: int | None = None,
    hwaccel: str = "auto",
) -> TaskResources:
    """The per-task resources on a cluster with ``cluster`` resources (``ray.cluster_resources()``).

    Raises:
        UnsupportedError: ``--device gpu`` on a cluster without GPUs.
    """
    if streams is not None and streams < 1:
        raise InvalidInputError(f"streams must be >= 1, got {streams}")
    gpus = int(cluster.get("GPU", 0))
    cpus = max(1, int(cluster.get("CPU", 1)))
    if device is DeviceChoice.GPU and gpus == 0:
        raise UnsupportedError("--device gpu: the Ray cluster has no GPU; use --device cpu or auto")
    if gpus == 0 or device is DeviceChoice.CPU:
        return TaskResources(1, 0, {}, cpus, note=f"one CPU per file, {cpus} at once")
    per_gpu = streams or max(1, min(MAX_GPU_STREAMS, cpus // gpus))
    custom: dict[str, float] = {}
    note = f"1/{per_gpu} GPU per file, {gpus * per_gpu} at once"
    concurrency = gpus * per_gpu
    nvdec = int(cluster.get(NVDEC_RESOURCE, 0))
    if hwaccel != "none" and nvdec > 0:
        custom[NVDEC_RESOURCE] = 1
        concurrency = min(concurrency, nvdec)
        note += f", one of the cluster's {nvdec} '{NVDEC_RESOURCE}' sessions each"
    elif hwaccel != "none":
        note += f"; the cluster declares no '{NVDEC_RESOURCE}' resource: NVDEC sessions bounded by GPUs only"
    return TaskResources(1, 1 / per_gpu, custom, concurrency, note=note)


_UNPINNED = os.environ.get(ADAPTER_ENV)


def pin_assigned_gpu(uses_gpu: bool, visible_uuids: Callable[[], list[bytes]] | None = None) -> str | None:
    """Pin ``ALPHA2_GPU_ADAPTER`` to the GPU Ray gave this task (the first CUDA device it lets the task
    see); a CPU task gets the worker's own setting back. Returns the pinned UUID, or None."""
    if not uses_gpu:
        if _UNPINNED is None:
            os.environ.pop(ADAPTER_ENV, None)
        else:
            os.environ[ADAPTER_ENV] = _UNPINNED
        return None
    if visible_uuids is None:
        from alpha2.api.machine import cuda_device_uuids

        visible_uuids = cuda_device_uuids
    try:
        uuids = visible_uuids()
    except Exception:  # no CUDA here: the Device ranks the adapters itself, and reports what it took
        return None
    if not uuids:
        return None
    text = str(_uuid.UUID(bytes=bytes(uuids[0])))
    os.environ[ADAPTER_ENV] = text
    return text


def _run_on_ray(task: FileTask, sink: Any, uses_gpu: bool) -> Outcome:
    """The Ray task: one file (module-level, so Ray's workers import it rather than unpickle code)."""
    from alpha2.apps.cli import ensure_runtime_dir

    ensure_runtime_dir()
    pin_assigned_gpu(uses_gpu)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    sink.put.remote(("start", task.key, task.attempt, worker, os.getpid()))
    last = [0.0]

    def report(frames: int, total: int | None) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            sink.put.remote(("frames", task.key, frames, total))

    return transcode_task(task, report, worker=worker)


class _ProgressSink:
    """The actor the tasks post their events to; the driver takes them."""

    def __init__(self) -> None:
        self._events: list[tuple[Any, ...]] = []

    def put(self, event: tuple[Any, ...]) -> None:
        self._events.append(event)

    def take(self) -> list[tuple[Any, ...]]:
        out, self._events = self._events, []
        return out


class RayBackend:
    """Runs each file as a Ray task (see the module docstring)."""

    def __init__(
        self,
        address: str,
        *,
        device: DeviceChoice = DeviceChoice.AUTO,
        streams: int | None = None,
        hwaccel: str = "auto",
        bind: str | None = None,
    ) -> None:
        if not address:
            raise InvalidInputError("--ray takes 'auto' or a cluster address")
        self.address = address
        self.bind = bind or DEFAULT_RAY_BIND
        """Where a cluster this backend starts listens."""
        self.started_cluster = False
        """Whether :meth:`start` started a local cluster (rather than joining one)."""
        self.node_ip: str | None = None
        """The node address Ray reports for the cluster this backend started."""
        self.stale_cluster: str | None = None
        """Under ``auto``: the address Ray's address file named where no cluster answered (one was
        started instead of trying it); None otherwise."""
        self.device = device
        self.streams = streams
        self.hwaccel = hwaccel
        self._ray: Any = None
        self._owns_session = False
        self._sink: Any = None
        self._remote: Any = None
        self._refs: dict[Any, FileTask] = {}
        self.resources: TaskResources | None = None
        self._closed = False

    def describe(self) -> dict[str, Any]:
        """The cluster and what each task asks for."""
        return {
            "runner": "ray",
            "address": self.address,
            "started_cluster": self.started_cluster,
            "stale_cluster": self.stale_cluster,
            "node_ip": self.node_ip,
            "resources": None if self.resources is None else self.resources.as_dict(),
        }

    def _init(self, ray: Any) -> None:
        common = {"include_dashboard": False, "log_to_driver": False}
        if self.address != "auto" or os.environ.get("RAY_ADDRESS"):
            # A cluster named on the line (or by RAY_ADDRESS): join it, or fail saying why.
            if self.address != "auto":
                _check_reachable(self.address)
            try:
                ray.init(address=None if self.address == "auto" else self.address, **common)
            except ValueError as exc:  # 'Invalid address format: nonsense' reached the user as internal
                raise InvalidInputError(
                    f"--ray {self.address!r}: {exc}; give 'auto', a cluster's HOST:PORT (10.0.0.5:6379) "
                    "or ray://HOST:PORT"
                ) from exc
            return
        self.stale_cluster = _stale_cluster_address(ray)
        if self.stale_cluster is not None:
            print(
                f"alpha2: batch: Ray's address file names a cluster at {self.stale_cluster} that no longer "
                "answers: starting one here instead",
                file=sys.stderr,
            )
        else:
            try:
                ray.init(address="auto", **common)  # this machine's running cluster
                return
            except ConnectionError:
                pass  # none running: start one, listening where asked
        with _loopback_kept(ray, self.bind):
            # 'local': a new cluster, whatever Ray's address file names (None would try its address).
            ray.init(address="local", _node_ip_address=self.bind, **common)
        self.started_cluster = True
        try:
            self.node_ip = str(ray.util.get_node_ip_address())
        except Exception:  # an older Ray without it: nothing to check against
            self.node_ip = None
        if self.node_ip is not None and _is_loopback(self.bind) and not _is_loopback(self.node_ip):
            ray.shutdown()
            raise UnsupportedError(
                f"Ray started its local cluster on {self.node_ip}, not on {self.bind} as asked: it would "
                f"take work from the network; pass --ray-bind {self.node_ip} to accept that"
            )

    def start(self) -> None:
        """Join or start the cluster, decide the task resources, start the progress actor."""
        ray = self._ray = _ray()
        if not ray.is_initialized():
            self._init(ray)
            self._owns_session = True
        cluster = {k: float(v) for k, v in ray.cluster_resources().items()}
        self.resources = res = task_resources(
            cluster, device=self.device, streams=self.streams, hwaccel=self.hwaccel
        )
        self._sink = ray.remote(num_cpus=0)(_ProgressSink).remote()
        self._remote = ray.remote(_run_on_ray).options(
            num_cpus=res.num_cpus, num_gpus=res.num_gpus, resources=res.resources or None, max_retries=0
        )

    def capacity(self) -> int:
        """Tasks the cluster can take now (the driver keeps no more in flight)."""
        assert self.resources is not None
        return self.resources.concurrency - len(self._refs)

    def submit(self, task: FileTask) -> None:
        """Submit ``task`` as a Ray task."""
        assert self.resources is not None
        ref = self._remote.remote(task, self._sink, self.resources.uses_gpu)
        self._refs[ref] = task

    def _outcome(self, ref: Any, task: FileTask) -> Outcome:
        ray = self._ray
        try:
            outcome: Outcome = ray.get(ref)
            return outcome
        except ray.exceptions.RayTaskError as exc:  # transcode_task caught nothing it should have
            return Outcome(task.key, False, error=one_line(str(exc.cause if exc.cause else exc)))
        except ray.exceptions.RayError as exc:  # the worker, its node or the object died
            return Outcome(
                task.key, False, error=one_line(f"{type(exc).__name__}: {exc}"), error_kind=CRASH_KIND
            )

    def poll(self, timeout: float) -> list[Event]:
        """Finished tasks and the events the tasks posted."""
        ray = self._ray
        events: list[Event] = []
        if self._refs:
            ready, _ = ray.wait(list(self._refs), num_returns=1, timeout=timeout)
            if ready:
                more, _ = ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
                ready = list({*ready, *more})
        else:
            ready = []
            time.sleep(timeout)
        for message in ray.get(self._sink.take.remote()):
            if message[0] == "start":
                events.append(Started(message[1], message[2], message[3], message[4]))
            elif message[0] == "frames":
                events.append(Frames(message[1], message[2], message[3]))
        for ref in ready:
            task = self._refs.pop(ref)
            events.append(Finished(self._outcome(ref, task)))
        return events

    def close(self) -> None:
        """Cancel what still runs, end the actor, and shut down a session this backend started."""
        if self._closed or self._ray is None:
            return
        self._closed = True
        ray = self._ray
        for ref in self._refs:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # already finished or gone: nothing left to stop
                pass
        self._refs.clear()
        if self._sink is not None:
            try:
                ray.kill(self._sink)
            except Exception:  # the actor died with its node: nothing to kill
                pass
            self._sink = None
        if self._owns_session:
            ray.shutdown()
