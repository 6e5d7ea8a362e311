"""The shared Vulkan device: one VkInstance and VkDevice on the chosen adapter, for alpha2 and others.

:func:`choose_shared_vulkan` ranks the Vulkan candidates (``ALPHA2_GPU_ADAPTER`` pins one), opens a
:class:`SharedVulkanContext` on the best and reports every candidate with its rank and why.

:class:`SharedVulkanContext` has graphics, compute, transfer and (where present and wanted)
video-decode queues; timeline semaphores, synchronization2, sampler YCbCr conversion and the external
memory/semaphore fd extensions are enabled where supported, and it reports what it enabled. Every
queue has one ``threading.RLock`` (:meth:`~SharedVulkanContext.queue_lock`, or ``lock_queue`` /
``unlock_queue`` like FFmpeg's ``AVVulkanDeviceContext`` callbacks): whoever submits to a queue,
alpha2 or another library on the same device, holds its lock.

Other ``_vk``-level modules reach the raw objects through ``context._internal``
(:class:`~alpha2.native_gpu._vk.device.VulkanDeviceState`, re-exported here: ``api`` (the loaded
binding), ``device``, ``physical_device``, ``dfn`` / ``ifn`` function tables, ``queue(family, index)``,
``find_memory_type``, ``on_close``); other libraries get integer handles from
:meth:`~SharedVulkanContext.as_raw`. The device itself is created by
:func:`~alpha2.native_gpu._vk.device.open_device`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from alpha2.gpu.adapters import (
    AdapterPinError,
    AdapterPolicy,
    PolicyKind,
    RankedAdapter,
    adapter_pin,
    as_policy,
    rank_adapters,
)
from alpha2.gpu.contexts import QueueRole, VulkanContext, VulkanQueue
from alpha2.gpu.errors import ClosedError, ErrorKind, InvalidInputError
from alpha2.gpu.identity import DeviceId
from alpha2.native_gpu._vk.core import (
    API_VERSION_1_1,
    API_VERSION_1_2,
    API_VERSION_1_3,
    Instance,
    SharedVulkanError,
    VulkanUnavailableError,
    VulkanVersion,
    handle_address,
    instance_proc_addr,
    vulkan_api,
)
from alpha2.native_gpu._vk.device import VulkanDeviceState, open_device
from alpha2.native_gpu._vk.query import QueueFlag, askable_features, physical_devices
from alpha2.native_gpu.device.candidates import VulkanCandidate, VulkanQueueFamily, vulkan_candidates

__all__ = [
    "AdapterReport",
    "QueueRole",
    "SharedDeviceIndex",
    "SharedVulkanChoice",
    "SharedVulkanContext",
    "SharedVulkanError",
    "VulkanDeviceState",
    "choose_shared_vulkan",
    "shared_device_index",
]

# (extension, needed only below this core version or None)
_BASE_EXTENSIONS: tuple[tuple[str, int | None], ...] = (
    ("VK_KHR_external_memory", API_VERSION_1_1),
    ("VK_KHR_external_semaphore", API_VERSION_1_1),
    ("VK_KHR_external_memory_fd", None),
    ("VK_KHR_external_semaphore_fd", None),
    ("VK_EXT_external_memory_dma_buf", None),
    ("VK_EXT_memory_budget", None),
    ("VK_KHR_timeline_semaphore", API_VERSION_1_2),
    ("VK_KHR_synchronization2", API_VERSION_1_3),
    ("VK_KHR_sampler_ycbcr_conversion", API_VERSION_1_1),
    ("VK_KHR_maintenance1", API_VERSION_1_1),
    ("VK_KHR_bind_memory2", API_VERSION_1_1),
    ("VK_KHR_get_memory_requirements2", API_VERSION_1_1),
)
_DECODE_EXTENSIONS = (
    "VK_KHR_video_queue",
    "VK_KHR_video_decode_queue",
    "VK_KHR_video_decode_h264",
    "VK_KHR_video_decode_h265",
    "VK_KHR_video_decode_av1",
    "VK_KHR_video_decode_vp9",
)


@dataclass(frozen=True)
class _QueuePlan:
    """A queue the device is created with, before there is a VkQueue (see SharedVulkanContext.queues)."""

    role: QueueRole
    """What the queue is for."""
    family: int
    """Queue family index (queue 0 of the family is used)."""
    flags: int
    """The family's VkQueueFlags."""


def _pick_queues(families: Sequence[VulkanQueueFamily], decode: bool) -> list[_QueuePlan]:
    def first(pred: Callable[[VulkanQueueFamily], bool]) -> VulkanQueueFamily | None:
        return next((f for f in families if f.queue_count > 0 and pred(f)), None)

    graphics = (
        first(lambda f: f.graphics and f.compute) or first(lambda f: f.graphics) or first(lambda f: f.compute)
    )
    if graphics is None:
        raise SharedVulkanError(
            "the adapter has no graphics or compute queue family", vk_result=-8, kind=ErrorKind.UNSUPPORTED
        )
    compute = first(lambda f: f.compute and not f.graphics) or (
        graphics if graphics.compute else first(lambda f: f.compute)
    )
    compute = compute or graphics
    graphics_or_compute = QueueFlag.GRAPHICS | QueueFlag.COMPUTE
    transfer = (
        first(lambda f: bool(f.flags & QueueFlag.TRANSFER) and not f.flags & graphics_or_compute) or compute
    )
    queues = [
        _QueuePlan(QueueRole.GRAPHICS, graphics.index, graphics.flags),
        _QueuePlan(QueueRole.COMPUTE, compute.index, compute.flags),
        _QueuePlan(QueueRole.TRANSFER, transfer.index, transfer.flags),
    ]
    if decode:
        video = first(lambda f: f.video_decode)
        if video is not None:
            queues.append(_QueuePlan(QueueRole.VIDEO_DECODE, video.index, video.flags))
    return queues


class SharedVulkanContext:
    """One VkInstance and VkDevice on the chosen adapter; closes exactly once (close(), ``with``, GC).

    Raw handles only through :meth:`as_raw` (integers) or ``_internal`` (:class:`VulkanDeviceState`).

    Raises (constructor):
        SharedVulkanError: a Vulkan call failed (``.vk_result``), or the adapter changed since it was listed.
    """

    def __init__(
        self,
        candidate: VulkanCandidate,
        *,
        decode: bool = True,
        extra_extensions: Iterable[str] = (),
    ) -> None:
        if not candidate.usable:
            raise SharedVulkanError(
                f"adapter #{candidate.index} {candidate.name} is not usable: {candidate.error}",
                vk_result=-3,
                kind=ErrorKind.UNSUPPORTED,
            )
        api = vulkan_api()
        self._candidate = candidate
        instance = Instance(api, extensions=("VK_KHR_get_physical_device_properties2",))
        state = VulkanDeviceState(api, instance)
        self._state = state
        # Backstop first: whatever is created below is destroyed even if construction fails half-way.
        self._finalizer = weakref.finalize(self, state.destroy)
        try:
            self._create(state, candidate, decode, tuple(extra_extensions))
        except BaseException:
            self._finalizer()
            raise

    def _create(
        self,
        state: VulkanDeviceState,
        candidate: VulkanCandidate,
        decode: bool,
        extra_extensions: tuple[str, ...],
    ) -> None:
        devices = physical_devices(state.instance)
        if candidate.index >= len(devices):
            raise SharedVulkanError(
                f"adapter #{candidate.index} {candidate.name} is gone (the loader now lists {len(devices)})",
                vk_result=-4,
                kind=ErrorKind.DEVICE_LOST,
            )
        pd = devices[candidate.index]
        state.physical_device = pd.handle
        if candidate.uuid is not None and pd.identity(ids=True).uuid != candidate.uuid:
            raise SharedVulkanError(
                f"the loader's device #{candidate.index} is no longer {candidate.name} (UUID differs); "
                "list the candidates again",
                vk_result=-3,
                kind=ErrorKind.RETRY,
            )
        api_version = candidate.api_version.packed
        available = candidate.extensions
        wanted: list[str] = []
        for name, below in _BASE_EXTENSIONS:
            if name in available and (below is None or api_version < below):
                wanted.append(name)
        queues = _pick_queues(candidate.queue_families, decode)
        if decode and any(q.role is QueueRole.VIDEO_DECODE for q in queues):
            wanted += [name for name in _DECODE_EXTENSIONS if name in available]
        missing = [name for name in extra_extensions if name not in available]
        if missing:
            raise SharedVulkanError(
                f"adapter {candidate.name} lacks the requested extensions {missing}",
                vk_result=-7,
                kind=ErrorKind.UNSUPPORTED,
            )
        wanted += [name for name in extra_extensions if name not in wanted]

        # Features: ask for those the version or an enabled extension provides, enable what the driver has.
        asked = askable_features(api_version, wanted)
        enabled = open_device(
            state,
            pd,
            queue_families=sorted({q.family for q in queues}),
            extensions=wanted,
            features=asked,
            what=candidate.name,
        )
        self._queues = tuple(queues)
        self._enabled_extensions = frozenset(wanted)
        self._enabled_features = frozenset(feature.value for feature in enabled)

    # -- description -------------------------------------------------------------------------------

    @property
    def candidate(self) -> VulkanCandidate:
        """The adapter the device is on."""
        return self._candidate

    @property
    def device_id(self) -> DeviceId:
        """The device's identity."""
        return self._candidate.identity

    @property
    def adapter_index(self) -> int:
        """Loader enumeration index of the adapter (FFmpeg's Vulkan device string)."""
        return self._candidate.index

    @property
    def api_version(self) -> VulkanVersion:
        """Vulkan API version of the instance."""
        return VulkanVersion.from_packed(self._state.instance.api_version)

    @property
    def enabled_extensions(self) -> frozenset[str]:
        """Device extensions enabled."""
        return self._enabled_extensions

    @property
    def enabled_features(self) -> frozenset[str]:
        """Enabled of 'timelineSemaphore', 'synchronization2', 'samplerYcbcrConversion' (where supported)."""
        return self._enabled_features

    @property
    def queues(self) -> tuple[VulkanQueue, ...]:
        """The device's queues, one per role (roles may share a VkQueue), with their locks.

        Raises:
            ClosedError: the context is closed (its queues are gone).
        """
        context = self.as_raw()
        state = self._state
        api = state.api
        return tuple(
            VulkanQueue(
                context,
                queue=handle_address(api, state.queue(plan.family)),
                queue_family_index=plan.family,
                queue_index=0,
                queue_flags=plan.flags,
                lock=state.locks[(plan.family, 0)],
                keep_alive=self,
                role=plan.role,
            )
            for plan in self._queues
        )

    @property
    def queue_families(self) -> dict[QueueRole, int]:
        """Queue family per role present."""
        return {plan.role: plan.family for plan in self._queues}

    def queue_for(self, role: QueueRole) -> VulkanQueue | None:
        """The queue for a role, or None (no video-decode queue). Raises ClosedError once closed."""
        return next((q for q in self.queues if q.role is role), None)

    @property
    def closed(self) -> bool:
        """Whether close() ran."""
        return self._state.closed

    @property
    def _internal(self) -> VulkanDeviceState:
        """Raw state for alpha2's native modules. Raises ClosedError once closed."""
        if self._state.closed:
            raise ClosedError("the SharedVulkanContext is closed")
        return self._state

    def as_raw(self) -> VulkanContext:
        """The device as the vocabulary's :class:`~alpha2.gpu.contexts.VulkanContext`, for other libraries.

        Its handles stay valid until close(); ``keep_alive`` holds this context. The queues, with the
        VkQueue handles and their locks, are :attr:`queues`.

        Raises:
            ClosedError: the context is closed.
        """
        state = self._internal
        api = state.api
        return VulkanContext(
            instance=handle_address(api, state.instance.handle),
            physical_device=handle_address(api, state.physical_device),
            device=handle_address(api, state.device),
            api_version=min(state.instance.api_version, self._candidate.api_version.packed),
            enabled_extensions=self._enabled_extensions,
            enabled_instance_extensions=state.instance.enabled_extensions,
            device_id=self._candidate.identity,
            get_instance_proc_addr=instance_proc_addr(api),
            keep_alive=self,
        )

    # -- queue locks -------------------------------------------------------------------------------

    def queue_lock(self, family: int, index: int = 0) -> threading.RLock:
        """The lock every submitter to queue (family, index) holds, alpha2 and other libraries alike."""
        try:
            return self._state.locks[(family, index)]
        except KeyError:
            raise InvalidInputError(
                f"the shared device has no queue ({family}, {index}); it has {sorted(self._state.locks)}"
            ) from None

    def lock_queue(self, family: int, index: int = 0) -> None:
        """Take the queue's lock (AVVulkanDeviceContext.lock_queue)."""
        self.queue_lock(family, index).acquire()

    def unlock_queue(self, family: int, index: int = 0) -> None:
        """Release the queue's lock (AVVulkanDeviceContext.unlock_queue)."""
        self.queue_lock(family, index).release()

    # -- lifetime ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Wait for the device to idle, destroy device then instance. Idempotent."""
        self._finalizer()

    def __enter__(self) -> SharedVulkanContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<SharedVulkanContext #{self._candidate.index} {self._candidate.name!r} {state}>"


# --------------------------------------------------------------------------------------------------
# Choosing


@dataclass(frozen=True)
class AdapterReport:
    """One candidate in a choice: its rank and why."""

    candidate: VulkanCandidate
    """The adapter."""
    rank: int | None
    """1-based rank, or None for an unusable candidate."""
    reason: str
    """Why it ranks there, why it was not used, or why it is unusable."""
    chosen: bool = False
    """The context is on this adapter."""
    pinned: bool = False
    """ALPHA2_GPU_ADAPTER (or a NAMED policy) selects it."""


@dataclass(frozen=True, eq=False)
class SharedVulkanChoice:
    """The outcome of choose_shared_vulkan: the context (or None), every candidate, and why."""

    context: SharedVulkanContext | None
    """The shared context, or None when not wanted or impossible."""
    report: tuple[AdapterReport, ...]
    """Every candidate with its rank and the reason."""
    reason: str | None
    """Why there is no context (None when there is one)."""
    policy: AdapterPolicy = field(default_factory=AdapterPolicy.auto)
    """The policy used."""
    pinned: bool = False
    """Whether ALPHA2_GPU_ADAPTER pinned the choice."""

    @property
    def candidate(self) -> VulkanCandidate | None:
        """The chosen adapter (rank 1; the context's when there is one)."""
        for entry in self.report:
            if entry.chosen:
                return entry.candidate
        return next((e.candidate for e in self.report if e.rank == 1), None)


def choose_shared_vulkan(
    policy: AdapterPolicy | PolicyKind | str | None = None,
    wanted: bool = True,
    decode_allowed: bool = True,
    *,
    candidates: Sequence[VulkanCandidate] | None = None,
) -> SharedVulkanChoice:
    """Rank the Vulkan adapters and open the shared context on the best one.

    Args:
        policy: AUTO (default), HIGH_PERFORMANCE, LOW_POWER, or NAMED (see alpha2.gpu.adapters).
        wanted: False to rank and report only (no context).
        decode_allowed: whether GPU video decode counts in the ranking and a decode queue is created.
        candidates: candidates to use (default: :func:`vulkan_candidates`).

    Returns:
        The choice; ``context`` is None with ``reason`` when there is no Vulkan, no adapter, the
        context was not wanted, or creating it failed on every allowed adapter. When not pinned, an
        adapter whose device cannot be created is reported and the next one is tried; a pinned adapter
        is the only one tried.

    Raises:
        AdapterPinError: ALPHA2_GPU_ADAPTER is ambiguous or names no adapter (never a silent fallback).
    """
    pol = as_policy(policy)
    pin = adapter_pin()
    if candidates is None:
        try:
            candidates = vulkan_candidates()
        except VulkanUnavailableError as exc:
            if pin is not None:
                raise AdapterPinError(
                    f"{pin.describe()} is set but there is no Vulkan: {exc.message}"
                ) from exc
            return SharedVulkanChoice(None, (), exc.message, pol, False)
    usable = [c for c in candidates if c.usable]
    unusable = [AdapterReport(c, None, f"unusable: {c.error}") for c in candidates if not c.usable]
    if not usable:
        reason = "no Vulkan adapter found" if not candidates else "no usable Vulkan adapter"
        if pin is not None:
            raise AdapterPinError(f"{pin.describe()} is set but {reason}")
        return SharedVulkanChoice(None, tuple(unusable), reason, pol, False)
    ranked: list[RankedAdapter[VulkanCandidate]] = rank_adapters(usable, pol, decode_allowed=decode_allowed)
    pinned = any(r.pinned for r in ranked) and pin is not None
    reasons = {r.adapter.index: r.reason for r in ranked}
    context: SharedVulkanContext | None = None
    chosen_index: int | None = None
    failure: str | None = None
    if not wanted:
        failure = "a shared Vulkan context was not wanted"
    else:
        selected_only = pinned or pol.kind is PolicyKind.NAMED
        attempts = [r for r in ranked if r.pinned] if selected_only else ranked
        errors = []
        for entry in attempts:
            try:
                context = SharedVulkanContext(entry.adapter, decode=decode_allowed)
            except SharedVulkanError as exc:
                reasons[entry.adapter.index] = f"{entry.reason}; device creation failed: {exc.message}"
                errors.append(f"#{entry.adapter.index} {entry.adapter.name}: {exc.message}")
                continue
            chosen_index = entry.adapter.index
            break
        if context is None:
            failure = "could not create a Vulkan device: " + "; ".join(errors)
    report = tuple(
        AdapterReport(
            r.adapter,
            r.rank,
            reasons[r.adapter.index],
            chosen=r.adapter.index == chosen_index,
            pinned=r.pinned,
        )
        for r in ranked
    ) + tuple(unusable)
    return SharedVulkanChoice(context, report, failure, pol, pinned)


# --------------------------------------------------------------------------------------------------
# Device index for FFmpeg and CUDA


@dataclass(frozen=True)
class SharedDeviceIndex:
    """Where the shared adapter is in the Vulkan loader's and in CUDA's enumeration."""

    vulkan_index: int
    """Loader enumeration index (FFmpeg's Vulkan device string)."""
    cuda_ordinal: int | None
    """CUDA device ordinal of the same GPU (matched by UUID), or None (no CUDA, or no match)."""
    uuid: bytes | None
    """Device UUID."""
    name: str
    """Device name."""


def shared_device_index(
    source: SharedVulkanContext | SharedVulkanChoice | VulkanCandidate | None = None,
    *,
    policy: AdapterPolicy | PolicyKind | str | None = None,
    decode_allowed: bool = True,
) -> SharedDeviceIndex:
    """The chosen adapter's Vulkan loader index and the CUDA ordinal of the same GPU.

    Args:
        source: a context, a choice, or a candidate; None ranks the candidates (pin included) without
            opening a device.

    Raises:
        VulkanUnavailableError: no Vulkan, or no adapter.
        AdapterPinError: a bad ALPHA2_GPU_ADAPTER.
    """
    candidate: VulkanCandidate | None
    if isinstance(source, SharedVulkanContext):
        candidate = source.candidate
    elif isinstance(source, SharedVulkanChoice):
        candidate = source.candidate
    elif isinstance(source, VulkanCandidate):
        candidate = source
    elif source is None:
        usable = [c for c in vulkan_candidates() if c.usable]
        ranked = rank_adapters(usable, policy, decode_allowed=decode_allowed)
        candidate = ranked[0].adapter if ranked else None
    else:
        raise InvalidInputError(
            f"shared_device_index takes a SharedVulkanContext, SharedVulkanChoice, VulkanCandidate or None, "
            f"got {type(source).__name__}"
        )
    if candidate is None:
        raise VulkanUnavailableError("no Vulkan adapter: nothing to share")
    from alpha2.native_gpu._cuda.core import cuda_ordinal_for_uuid

    ordinal = cuda_ordinal_for_uuid(candidate.uuid) if candidate.uuid is not None else None
    return SharedDeviceIndex(candidate.index, ordinal, candidate.uuid, candidate.name)
