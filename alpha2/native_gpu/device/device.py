"""One device, chosen once: the WebGPU device, its Vulkan twin, its CUDA ordinal and why that GPU.

A player or transcoder works on one GPU. :class:`Device` holds everything alpha2 knows about it, found
in one enumeration: the WebGPU device (``wgpu`` or ``wgpudawn``) with its implementation and features,
the Vulkan candidate of the same GPU (matched by UUID, or by vendor, device and name), the CUDA ordinal
of the same GPU (by UUID) that NVDEC decodes on, and the shared Vulkan context (opened on first use,
owned by the Device). The decoder, the importer, the renderer and the copier all take it; none of them
enumerates adapters again.

``Device.open()`` ranks the adapters (``ALPHA2_GPU_ADAPTER`` honoured; a pin that names none is an
error); ``Device.adopt(gpu_device)`` wraps a GPUDevice an application made itself.

Opening is serialized in the process (:data:`OPEN_LOCK`). wgpu-py's backends make their global
instance on first use without a lock. On the H200, two transcodes opening their devices at once on two
threads of one process aborted it (SIGABRT), or saw no adapter at all ("candidates: none found").
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from alpha2.gpu.adapters import AdapterPin, adapter_pin, rank_wgpu_adapters
from alpha2.gpu.errors import ClosedError, InvalidInputError, UnsupportedError
from alpha2.gpu.identity import DecoderPlacement
from alpha2.gpu.webgpu import (
    FEATURES_GPU_COPY,
    WebGpuDevice,
    WebGpuDeviceInfo,
    WebGpuImplementation,
    detect_webgpu_device,
    gpu_module_of,
)

__all__ = ["OPEN_LOCK", "Device"]

OPEN_LOCK = threading.RLock()
"""Held while adapters are enumerated and a WebGPU device is made (see the module docstring)."""


class _Candidates:
    """Vulkan candidates, queried once per Device and only when something needs them."""

    def __init__(self, given: Sequence[Any] | None = None) -> None:
        self._value: list[Any] | None = list(given) if given is not None else None
        self.note: str | None = None

    def get(self) -> list[Any]:
        if self._value is None:
            try:
                from alpha2.native_gpu.device.candidates import vulkan_candidates

                self._value = [c for c in vulkan_candidates() if c.usable]
            except Exception as exc:  # no loader: adapters are ranked without Vulkan facts, and we say so
                self._value = []
                self.note = f"no Vulkan candidates ({exc})"
        return self._value


_work_lock = threading.RLock()


def _process_work_lock() -> threading.RLock:
    """The lock every Device of this process holds its GPU work under (:attr:`Device.work_lock`)."""
    return _work_lock


def _fresh_work_lock() -> None:
    global _work_lock
    _work_lock = threading.RLock()  # a fork's copy may be held by a thread the fork did not copy


os.register_at_fork(after_in_child=_fresh_work_lock)


def open_pool(adapters: list[Any]) -> list[Any]:
    """The WebGPU adapters :meth:`Device.open` chooses among: the Vulkan ones where there is any (Vulkan
    is the API alpha2 interoperates through), else all of them."""
    vulkan = [a for a in adapters if str(dict(a.info).get("backend_type", "")).lower() == "vulkan"]
    return vulkan or adapters


def _rank(module: Any, candidates: _Candidates, pin: AdapterPin | None = None) -> list[Any]:
    pool = open_pool(list(module.gpu.enumerate_adapters_sync()))
    # One adapter and no pin: nothing to rank, so the (slow) Vulkan capability queries are skipped.
    needed = len(pool) > 1 or pin is not None or adapter_pin() is not None
    return rank_wgpu_adapters(pool, vulkan_candidates=candidates.get() if needed else (), pin=pin)


def _cuda_ordinal(uuid: bytes | None) -> tuple[int | None, str]:
    """The CUDA ordinal with this device UUID, or None and why not."""
    # Without CUDA at all, that is the reason: "no CUDA device has the adapter's UUID" reads as a
    # mismatch between two present GPUs.
    unusable = _cuda_unusable()
    if unusable is not None:
        return None, unusable
    if uuid is None:
        return None, "the adapter reports no device UUID to match a CUDA device by"
    try:
        from alpha2.native_gpu._cuda.core import cuda_ordinal_for_uuid

        ordinal = cuda_ordinal_for_uuid(uuid)
    except Exception as exc:  # no CUDA driver or no cuda-python: no CUDA twin, said in the report
        return None, f"CUDA is not usable ({exc})"
    if ordinal is None:
        return None, "no CUDA device has the adapter's UUID"
    return ordinal, f"CUDA ordinal {ordinal} has the adapter's UUID"


def _cuda_unusable() -> str | None:
    """Why no CUDA device can be had at all (no cuda-python, no driver, no device), or None; cheap, so
    that a machine without CUDA is not enumerated for a Vulkan match only to find no CUDA twin."""
    try:
        from alpha2.native_gpu._cuda.core import cuda_device_count

        count = cuda_device_count()
    except Exception as exc:  # no cuda-python or no driver
        return f"CUDA is not usable ({exc})"
    return None if count > 0 else "CUDA is not usable (no CUDA device)"


def _release_webgpu_device(webgpu_device: WebGpuDevice) -> None:
    """Let go of a GPUDevice alpha2 made, now rather than at the next full garbage collection.

    wgpu-py's GPUDevice refers to itself (its ``_device``, and its queue's), so dropping the last
    reference does not free it: only the cyclic collector does, and a collection that reaches it may be
    hundreds of files away. Until then it keeps its poll thread, the driver's device (lavapipe: a queue
    thread and its memory) and everything on it; a batch worker making one Device per file grew from 186
    to 373 MB over 150 files. ``_release`` is what wgpu-py's (and wgpudawn's) ``__del__`` calls: it
    stops the poll thread and drops the native reference (idempotent); the objects made on the device
    hold their own references, so the native device goes when they do.
    """
    release = getattr(webgpu_device, "_release", None)
    if callable(release):
        release()


@dataclass(frozen=True)
class _Twins:
    """The same GPU seen through Vulkan and CUDA."""

    uuid: bytes | None
    vulkan_candidate: Any
    cuda_ordinal: int | None
    cuda_reason: str


def _twins(uuid: bytes | None, candidate: Any) -> _Twins:
    uuid = uuid or getattr(candidate, "uuid", None)
    ordinal, reason = _cuda_ordinal(uuid)
    return _Twins(uuid, candidate, ordinal, reason)


@dataclass(eq=False)
class Device:
    """The GPU alpha2 works on: WebGPU device, Vulkan twin, CUDA ordinal, and why this one.

    Make one with :meth:`open` (alpha2 picks the adapter) or :meth:`adopt` (your own GPUDevice). Pass it
    to ``DecodeSession(device=...)``, ``FrameImporter``, ``FrameRenderer`` and ``EncodeCopier``.
    ``close()`` (or ``with``) closes the shared Vulkan context it opened; the GPUDevice stays the
    caller's when adopted.
    """

    webgpu_device: WebGpuDevice
    """The wgpu-py style GPUDevice (``wgpu`` or ``wgpudawn``)."""
    info: WebGpuDeviceInfo
    """Its implementation, enabled features and adapter identity."""
    reason: str
    """Why this adapter (ranking, pin) and this implementation."""
    pinned: bool = False
    """Whether ALPHA2_GPU_ADAPTER chose it."""
    backend: str = ""
    """The adapter's backend (``Vulkan``, ...)."""
    _twins: _Twins | None = field(default=None, repr=False)
    _candidates: _Candidates | None = field(default=None, repr=False)
    _shared_context: Any = field(default=None, repr=False)
    _owns_context: bool = field(default=True, repr=False)
    _owns_webgpu_device: bool = field(default=False, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _closed: bool = field(default=False, repr=False)
    opened_pid: int = field(default_factory=os.getpid, repr=False, compare=False)
    """The process that made it: its GPUDevice's threads do not come with a fork, and work submitted to
    it from a forked child waits forever."""
    work_lock: threading.RLock = field(default_factory=_process_work_lock, repr=False, compare=False)
    """Held around a piece of GPU work on this device (a frame's import and conversion, setting up,
    flushing) by each transcode, so that transcodes on several threads may share one Device: wgpudawn's
    device is not made safe for calls from several threads at once. One lock for every Device of the
    process: Dawn's instance is the process's, and the event pump a read-back waits with
    (``wgpuInstanceProcessEvents``) ticks every Dawn device, so two transcodes on two threads, each on a
    Device of its own, crashed the process in Dawn's queue submission (an H100, 2026-12-06,
    ``tests/test_transcodes_on_threads.py``). Uncontended (one transcode in the process, the usual case)
    it costs a fraction of a microsecond; while one thread holds it, the others decode and encode on the
    CPU (PyAV lets go of the GIL there); transcodes in parallel on the GPU belong in processes (``alpha2
    batch``'s default)."""

    # -- making one -------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        *,
        want_gpu_copy: bool = False,
        vulkan_candidates: Sequence[Any] | None = None,
        pin: AdapterPin | None = None,
    ) -> Device:
        """Rank the adapters and make the WebGPU device to work on.

        With ``want_gpu_copy`` (frames will come from NVDEC), a ``wgpudawn`` device with the
        shared-memory features is preferred; when none can be had the reason is part of
        :attr:`reason` and the importer reports the CPU fallback per frame.

        Args:
            want_gpu_copy: prefer a device that can take the GPU copy.
            vulkan_candidates: candidates to match adapters with (default: enumerated once, if needed).
            pin: the adapter to take (e.g. the one with a CUDA device's UUID); None: ``ALPHA2_GPU_ADAPTER``
                when set, else the best ranked.

        Raises:
            AdapterPinError: the pin (or ALPHA2_GPU_ADAPTER) names no adapter, or several.
            UnsupportedError: no WebGPU adapter at all.
        """
        with OPEN_LOCK:
            return cls._open(want_gpu_copy, _Candidates(vulkan_candidates), pin)

    @classmethod
    def _open(cls, want_gpu_copy: bool, candidates: _Candidates, pin: AdapterPin | None = None) -> Device:
        dawn_note = ""
        if want_gpu_copy:
            device, dawn_note = cls._open_dawn(candidates, pin)
            if device is not None:
                return device
        import wgpu

        ranked = _rank(wgpu, candidates, pin)
        if not ranked:
            raise UnsupportedError(
                "no WebGPU adapter: install a Vulkan driver (on a machine without a GPU: "
                "apt-get install mesa-vulkan-drivers for lavapipe) and set XDG_RUNTIME_DIR"
            )
        top = ranked[0]
        feature = WebGpuImplementation.WGPU.feature_16bit
        features = [feature] if feature in {str(f) for f in top.adapter.adapter.features} else []
        reason = top.reason
        if want_gpu_copy:
            reason += f"; wgpu-native (no GPU copy: {dawn_note})"
        if candidates.note:
            reason += f"; {candidates.note}"
        return cls._from_ranked(top, features, reason, candidates)

    @classmethod
    def _open_dawn(cls, candidates: _Candidates, pin: AdapterPin | None = None) -> tuple[Device | None, str]:
        """A wgpudawn device with the GPU-copy features, or None and why not."""
        try:
            dawn = importlib.import_module("wgpudawn")
        except Exception as exc:
            return None, f"wgpudawn is not installed ({type(exc).__name__}: {exc})"
        try:
            ranked = _rank(dawn, candidates, pin)
        except InvalidInputError:
            raise
        except Exception as exc:
            return None, f"wgpudawn has no adapter ({exc})"
        if not ranked:
            return None, "wgpudawn has no adapter"
        top = ranked[0]
        have = {str(f) for f in top.adapter.adapter.features}
        missing = [f for f in FEATURES_GPU_COPY if f not in have]
        if missing:
            return None, f"the wgpudawn adapter {top.adapter.name!r} lacks {missing}"
        feature = WebGpuImplementation.DAWN.feature_16bit
        features = [*FEATURES_GPU_COPY, *([feature] if feature in have else [])]
        reason = f"{top.reason}; wgpudawn for the GPU copy of NVDEC frames"
        return cls._from_ranked(top, features, reason, candidates), ""

    @classmethod
    def _from_ranked(cls, top: Any, features: list[str], reason: str, candidates: _Candidates) -> Device:
        facts = top.adapter
        webgpu_device = facts.adapter.request_device_sync(required_features=features)
        info = detect_webgpu_device(webgpu_device)
        uuid = info.vulkan_device_uuid or facts.uuid
        # A lone adapter was not matched to Vulkan while ranking: that is done on first use instead.
        known = facts.vulkan_candidate is not None or uuid is not None
        return cls(
            webgpu_device=webgpu_device,
            info=info,
            reason=reason,
            pinned=top.pinned,
            backend=facts.backend,
            _twins=_twins(uuid, facts.vulkan_candidate) if known else None,
            _candidates=candidates,
            _owns_webgpu_device=True,
        )

    @classmethod
    def adopt(
        cls,
        webgpu_device: WebGpuDevice | Device,
        *,
        shared_context: Any = None,
        vulkan_candidates: Sequence[Any] | None = None,
    ) -> Device:
        """Wrap a GPUDevice the application made; an alpha2 Device is returned as it is.

        The Vulkan candidate and CUDA ordinal of the same GPU are matched when first asked for: by UUID
        (Dawn reports it) or, for wgpu-native, by vendor, device and name.

        Args:
            webgpu_device: a ``wgpu`` or ``wgpudawn`` GPUDevice.
            shared_context: a SharedVulkanContext of the application's to use (it stays theirs).
            vulkan_candidates: candidates to match with (default: enumerated once, if needed).

        Raises:
            InvalidInputError: ``webgpu_device`` is not a wgpu-py style GPUDevice.
        """
        if isinstance(webgpu_device, Device):
            return webgpu_device
        info = detect_webgpu_device(webgpu_device)
        return cls(
            webgpu_device=webgpu_device,
            info=info,
            reason="the application's own device",
            backend=info.backend_type,
            _candidates=_Candidates(vulkan_candidates),
            _shared_context=shared_context,
            _owns_context=shared_context is None,
        )

    def _resolve(self) -> _Twins:
        """The Vulkan and CUDA twins, matched on first use for an adopted device."""
        with self._lock:
            if self._twins is None:
                self._twins = _twins(self.info.vulkan_device_uuid, self._match_candidate())
            return self._twins

    def _match_candidate(self) -> Any:
        adapter = getattr(self.webgpu_device, "adapter", None)
        if adapter is None or self.info.backend_type.lower() not in ("vulkan", ""):
            return None
        from alpha2.gpu.adapters import wgpu_adapter_facts

        candidates = self._candidates or _Candidates()
        try:
            facts = wgpu_adapter_facts(adapter, 0, candidates.get())
        except Exception:  # an adapter without the usual info: nothing to match with
            return None
        return facts.vulkan_candidate

    # -- what it is -------------------------------------------------------------------------------

    @property
    def implementation(self) -> WebGpuImplementation:
        """wgpu or wgpudawn."""
        return self.info.implementation

    @property
    def adapter_name(self) -> str:
        """The adapter's name."""
        return self.info.adapter_name

    @property
    def features(self) -> tuple[str, ...]:
        """Features enabled on the WebGPU device."""
        return tuple(sorted(self.info.features))

    @property
    def gpu_module(self) -> Any:
        """The ``wgpu`` or ``wgpudawn`` module."""
        return gpu_module_of(self.webgpu_device)

    @property
    def uuid(self) -> bytes | None:
        """The GPU's device UUID (from Dawn, or from the matched Vulkan candidate)."""
        return self._resolve().uuid

    @property
    def vulkan_candidate(self) -> Any:
        """The :class:`~alpha2.native_gpu.device.candidates.VulkanCandidate` of the same GPU, or None."""
        return self._resolve().vulkan_candidate

    @property
    def cuda_ordinal(self) -> int | None:
        """The CUDA ordinal of the same GPU (NVDEC decodes there), or None."""
        if self._twins is None and _cuda_unusable() is not None:
            return None
        return self._resolve().cuda_ordinal

    @property
    def cuda_reason(self) -> str:
        """How the CUDA ordinal was matched, or why there is none."""
        if self._twins is None:
            unusable = _cuda_unusable()
            if unusable is not None:
                return unusable
        return self._resolve().cuda_reason

    @property
    def vulkan_index(self) -> int | None:
        """The Vulkan loader index of the same GPU (FFmpeg's Vulkan device string), or None."""
        return getattr(self.vulkan_candidate, "index", None)

    def decoder_placement(self) -> DecoderPlacement:
        """Where NVDEC must run for its frames to land on this GPU (matched when the Device was made)."""
        name = f"the device {self.adapter_name!r}"
        ordinal = self.cuda_ordinal
        if ordinal is None:
            unusable = _cuda_unusable()
            if unusable is not None:  # no CUDA on this machine at all, not a matter of this GPU
                return DecoderPlacement(
                    None, self.vulkan_index, f"{unusable}, so no NVDEC", cuda_present=False
                )
            return DecoderPlacement(
                None, self.vulkan_index, f"{name} has no CUDA counterpart: {self.cuda_reason}"
            )
        return DecoderPlacement(ordinal, self.vulkan_index, f"{self.cuda_reason} ({name})")

    def shared_vulkan(self) -> Any:
        """The shared Vulkan context on this GPU, opened on first use (no decode queue).

        Raises:
            ClosedError: the Device was closed.
            UnsupportedError: no Vulkan adapter is this GPU.
            SharedVulkanError: the Vulkan device could not be created.
        """
        with self._lock:
            if self._closed:
                raise ClosedError("the Device was closed")
            if self._shared_context is None:
                self._shared_context = self._open_shared_context()
            return self._shared_context

    def _open_shared_context(self) -> Any:
        from alpha2.native_gpu.device.shared import SharedVulkanContext

        candidate = self.vulkan_candidate
        if candidate is None and self.uuid is not None:
            from alpha2.native_gpu.device.candidates import vulkan_candidates

            candidate = next((c for c in vulkan_candidates() if c.usable and c.uuid == self.uuid), None)
        if candidate is None:
            raise UnsupportedError(
                f"no Vulkan adapter is the WebGPU adapter {self.adapter_name!r} (no UUID or name match)"
            )
        return SharedVulkanContext(candidate, decode=False)

    def as_dict(self) -> dict[str, Any]:
        """For JSON stats."""
        return {
            "implementation": self.implementation.value,
            "adapter": self.adapter_name,
            "backend": self.backend,
            "pinned": self.pinned,
            "reason": self.reason,
            "features": list(self.features),
            "uuid": self.uuid.hex() if self.uuid else None,
            "vulkan_index": self.vulkan_index,
            "cuda_ordinal": self.cuda_ordinal,
            "cuda": self.cuda_reason,
        }

    # -- lifetime ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the shared Vulkan context this Device opened and release the GPUDevice it made (one
        :meth:`adopt` ed stays the caller's): textures and buffers made on it stay valid, the GPUDevice
        itself makes nothing more. Idempotent."""
        with self._lock:
            self._closed = True
            context, self._shared_context = self._shared_context, None
            made = self.webgpu_device if self._owns_webgpu_device else None
            self._owns_webgpu_device = False
        with self.work_lock:  # not while another thread's transcode works on a Dawn device
            if context is not None and self._owns_context:
                context.close()
            if made is not None:
                _release_webgpu_device(made)

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        # Without this, a spawn DataLoader over a dataset holding a Device failed with "cannot pickle
        # '_cffi_backend._CDataBase' object", and copy.deepcopy left a GPUDevice without its poller.
        raise InvalidInputError(
            "an alpha2 Device cannot be pickled or copied: its GPU device belongs to this process; open "
            "one in each process (in a DataLoader worker: on first use in __getitem__, or in "
            "worker_init_fn)"
        )
