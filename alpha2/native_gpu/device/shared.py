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
(:class:`VulkanDeviceState`: ``api`` (ffi/lib/constants), ``device``, ``physical_device``, ``dfn`` /
``ifn`` function tables, ``queue(family, index)``, ``find_memory_type``, ``on_close``); other libraries
get integer handles from :meth:`~SharedVulkanContext.as_raw`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

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
    Instance,
    SharedVulkanError,
    VulkanApi,
    VulkanUnavailableError,
    VulkanVersion,
    check,
    handle_address,
    vulkan_api,
)
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

_V11 = (1 << 22) | (1 << 12)
_V12 = (1 << 22) | (2 << 12)
_V13 = (1 << 22) | (3 << 12)

# (extension, needed only below this core version or None)
_BASE_EXTENSIONS: tuple[tuple[str, int | None], ...] = (
    ("VK_KHR_external_memory", _V11),
    ("VK_KHR_external_semaphore", _V11),
    ("VK_KHR_external_memory_fd", None),
    ("VK_KHR_external_semaphore_fd", None),
    ("VK_EXT_external_memory_dma_buf", None),
    ("VK_EXT_memory_budget", None),
    ("VK_KHR_timeline_semaphore", _V12),
    ("VK_KHR_synchronization2", _V13),
    ("VK_KHR_sampler_ycbcr_conversion", _V11),
    ("VK_KHR_maintenance1", _V11),
    ("VK_KHR_bind_memory2", _V11),
    ("VK_KHR_get_memory_requirements2", _V11),
)
_DECODE_EXTENSIONS = (
    "VK_KHR_video_queue",
    "VK_KHR_video_decode_queue",
    "VK_KHR_video_decode_h264",
    "VK_KHR_video_decode_h265",
    "VK_KHR_video_decode_av1",
    "VK_KHR_video_decode_vp9",
)

_ST_DEVICE_QUEUE_CREATE_INFO = 2
_ST_DEVICE_CREATE_INFO = 3
_ST_PROPERTIES_2 = 1000059001
_ST_ID_PROPERTIES = 1000071004
_ST_FEATURES_2 = 1000059000
_ST_TIMELINE_FEATURES = 1000207000
_ST_SYNC2_FEATURES = 1000314007
_ST_YCBCR_FEATURES = 1000156004


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
    transfer = first(lambda f: bool(f.flags & 0x4) and not (f.flags & 0x3)) or compute
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


class VulkanDeviceState:
    """The raw side of a SharedVulkanContext (``context._internal``). For alpha2's native modules only.

    Attributes: ``api`` (ffi, lib, constants), ``instance`` (owned :class:`Instance`), ``physical_device``,
    ``device`` (cdata), ``ifn`` / ``dfn`` (instance / device function tables), ``locks``.
    """

    def __init__(self, api: VulkanApi, instance: Instance) -> None:
        self.api = api
        self.instance = instance
        self.ifn = instance.fn
        self.physical_device: Any = None
        self.device: Any = None
        self.dfn: Any = None
        self.queues: dict[tuple[int, int], Any] = {}
        self.locks: dict[tuple[int, int], threading.RLock] = {}
        self.memory_types: list[tuple[int, int]] = []  # (propertyFlags, heapIndex)
        self._close_callbacks: list[Callable[[], None]] = []
        self._graveyard: list[Callable[[], None]] = []
        self._state_lock = threading.Lock()
        self.closed = False

    def queue(self, family: int, index: int = 0) -> Any:
        """The VkQueue cdata of (family, index)."""
        try:
            return self.queues[(family, index)]
        except KeyError:
            raise InvalidInputError(
                f"the shared device has no queue ({family}, {index}); it has {sorted(self.queues)}"
            ) from None

    def find_memory_type(self, type_bits: int, required_flags: int, preferred_flags: int = 0) -> int:
        """A memory type allowed by ``type_bits`` with ``required_flags``, preferring ``preferred_flags``.

        Raises:
            SharedVulkanError: no memory type fits.
        """
        fits = [
            i
            for i, (flags, _heap) in enumerate(self.memory_types)
            if type_bits & (1 << i) and (flags & required_flags) == required_flags
        ]
        preferred = [i for i in fits if (self.memory_types[i][0] & preferred_flags) == preferred_flags]
        if preferred:
            return preferred[0]
        if fits:
            return fits[0]
        raise SharedVulkanError(
            f"no memory type in bits 0x{type_bits:x} has flags 0x{required_flags:x}",
            vk_result=-2,
            kind=ErrorKind.UNSUPPORTED,
        )

    def on_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the context closes, before the device is destroyed (last added first)."""
        with self._state_lock:
            if self.closed:
                raise ClosedError("the SharedVulkanContext is closed")
            self._close_callbacks.append(callback)

    def discard_on_close(self, callback: Callable[[], None]) -> None:
        """Forget a callback registered with :meth:`on_close` (its object was closed early)."""
        with self._state_lock:
            try:
                self._close_callbacks.remove(callback)
            except ValueError:
                pass

    def defer_destroy(self, destroy: Callable[[], None]) -> None:
        """Destroy something only after the device is idle at close (objects a timed-out wait still uses)."""
        with self._state_lock:
            self._graveyard.append(destroy)

    def destroy(self) -> None:
        """Destroy device then instance, exactly once (the weakref.finalize target)."""
        with self._state_lock:
            if self.closed:
                return
            self.closed = True
            callbacks, self._close_callbacks = self._close_callbacks, []
            graveyard, self._graveyard = self._graveyard, []
            device, self.device = self.device, None
        for callback in reversed(callbacks):
            try:
                callback()
            except Exception:
                pass  # a failing child must not keep the device alive
        if device is not None:
            try:
                self.api.lib.vkDeviceWaitIdle(device)
            except Exception:
                pass
            for destroy in graveyard:
                try:
                    destroy()
                except Exception:
                    pass
            self.api.lib.vkDestroyDevice(device, self.api.ffi.NULL)
        self.queues.clear()
        self.instance.close()


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
            self._create(api, state, candidate, decode, tuple(extra_extensions))
        except BaseException:
            self._finalizer()
            raise

    def _create(
        self,
        api: VulkanApi,
        state: VulkanDeviceState,
        candidate: VulkanCandidate,
        decode: bool,
        extra_extensions: tuple[str, ...],
    ) -> None:
        ffi = api.ffi
        devices = state.instance.physical_devices()
        if candidate.index >= len(devices):
            raise SharedVulkanError(
                f"adapter #{candidate.index} {candidate.name} is gone (the loader now lists {len(devices)})",
                vk_result=-4,
                kind=ErrorKind.DEVICE_LOST,
            )
        pd = devices[candidate.index]
        state.physical_device = pd
        if candidate.uuid is not None:
            props = ffi.new("VkPhysicalDeviceProperties2*", {"sType": _ST_PROPERTIES_2})
            id_props = ffi.new("VkPhysicalDeviceIDProperties*", {"sType": _ST_ID_PROPERTIES})
            props.pNext = id_props
            state.ifn.vkGetPhysicalDeviceProperties2(pd, props)
            if bytes(ffi.buffer(id_props.deviceUUID, 16)) != candidate.uuid:
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

        # Features: query what the device has, enable exactly that.
        keep: list[Any] = []
        feats = ffi.new("VkPhysicalDeviceFeatures2*", {"sType": _ST_FEATURES_2})
        chain: Any = feats
        timeline = sync2 = ycbcr = None
        if api_version >= _V12 or "VK_KHR_timeline_semaphore" in wanted:
            timeline = ffi.new("VkPhysicalDeviceTimelineSemaphoreFeatures*", {"sType": _ST_TIMELINE_FEATURES})
            chain.pNext, chain = timeline, timeline
        if api_version >= _V13 or "VK_KHR_synchronization2" in wanted:
            sync2 = ffi.new("VkPhysicalDeviceSynchronization2Features*", {"sType": _ST_SYNC2_FEATURES})
            chain.pNext, chain = sync2, sync2
        if api_version >= _V11 or "VK_KHR_sampler_ycbcr_conversion" in wanted:
            ycbcr = ffi.new("VkPhysicalDeviceSamplerYcbcrConversionFeatures*", {"sType": _ST_YCBCR_FEATURES})
            chain.pNext, chain = ycbcr, ycbcr
        keep += [timeline, sync2, ycbcr]
        state.ifn.vkGetPhysicalDeviceFeatures2(pd, feats)
        enabled_features = []
        if timeline is not None and timeline.timelineSemaphore:
            enabled_features.append("timelineSemaphore")
        if sync2 is not None and sync2.synchronization2:
            enabled_features.append("synchronization2")
        if ycbcr is not None and ycbcr.samplerYcbcrConversion:
            enabled_features.append("samplerYcbcrConversion")
        # Keep the queried values for the ones we want, zero every core feature we do not ask for.
        ffi.memmove(
            ffi.addressof(feats, "features"),
            bytes(ffi.sizeof("VkPhysicalDeviceFeatures")),
            ffi.sizeof("VkPhysicalDeviceFeatures"),
        )

        families = sorted({q.family for q in queues})
        priorities = ffi.new("float[]", [1.0])
        queue_infos = ffi.new("VkDeviceQueueCreateInfo[]", len(families))
        for i, family in enumerate(families):
            queue_infos[i].sType = _ST_DEVICE_QUEUE_CREATE_INFO
            queue_infos[i].queueFamilyIndex = family
            queue_infos[i].queueCount = 1
            queue_infos[i].pQueuePriorities = priorities
        ext_c = [ffi.new("char[]", name.encode()) for name in wanted]
        ext_array = ffi.new("char*[]", ext_c) if ext_c else ffi.NULL
        keep += [priorities, queue_infos, ext_c, ext_array]
        info = ffi.new(
            "VkDeviceCreateInfo*",
            {
                "sType": _ST_DEVICE_CREATE_INFO,
                "pNext": feats,
                "queueCreateInfoCount": len(families),
                "pQueueCreateInfos": queue_infos,
                "enabledExtensionCount": len(ext_c),
                "ppEnabledExtensionNames": ext_array,
            },
        )
        out = ffi.new("VkDevice*")
        check(api.lib.vkCreateDevice(pd, info, ffi.NULL, out), f"vkCreateDevice on {candidate.name}")
        from alpha2.native_gpu._vk.core import device_functions

        state.device = out[0]
        state.dfn = device_functions(api, out[0])
        for family in families:
            handle = ffi.new("VkQueue*")
            api.lib.vkGetDeviceQueue(out[0], family, 0, handle)
            state.queues[(family, 0)] = handle[0]
            state.locks[(family, 0)] = threading.RLock()
        mem = ffi.new("VkPhysicalDeviceMemoryProperties*")
        api.lib.vkGetPhysicalDeviceMemoryProperties(pd, mem)
        state.memory_types = [
            (int(mem.memoryTypes[i].propertyFlags), int(mem.memoryTypes[i].heapIndex))
            for i in range(mem.memoryTypeCount)
        ]
        self._queues = tuple(queues)
        self._enabled_extensions = frozenset(wanted)
        self._enabled_features = frozenset(enabled_features)

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
            get_instance_proc_addr=handle_address(api, api.ffi.cast("void*", api.lib.vkGetInstanceProcAddr)),
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
