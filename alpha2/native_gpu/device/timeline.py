"""Vulkan timeline semaphores as alpha2 sync points.

:class:`VulkanTimelineSemaphore` owns a timeline VkSemaphore on a
:class:`~alpha2.native_gpu.device.shared.SharedVulkanContext` (host signal, counter value);
:class:`VulkanTimelineSyncPoint` is "the semaphore reached this value", with the waits of
:class:`alpha2.gpu.sync.SyncPoint`: ``_poll`` reads vkGetSemaphoreCounterValue, ``_wait_native`` calls
vkWaitSemaphores with a timeout (bounded by :func:`~alpha2.native_gpu.device.waits.gpu_wait_timeout`) and maps
VK_TIMEOUT to ``WaitStatus.TIMED_OUT``.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.identity import BackendKind
from alpha2.gpu.sync import SyncPoint, WaitStatus
from alpha2.native_gpu._vk.core import VK_TIMEOUT, SharedVulkanError, check, handle_address
from alpha2.native_gpu.device.shared import SharedVulkanContext, VulkanDeviceState
from alpha2.native_gpu.device.waits import gpu_wait_timeout, timeout_ns

__all__ = [
    "VulkanTimelineSemaphore",
    "VulkanTimelineSyncPoint",
    "create_timeline_semaphore",
    "signal_timeline_semaphore",
]

_ST_SEMAPHORE_CREATE_INFO = 9
_ST_SEMAPHORE_TYPE_CREATE_INFO = 1000207002
_ST_SEMAPHORE_WAIT_INFO = 1000207004
_ST_SEMAPHORE_SIGNAL_INFO = 1000207005
_SEMAPHORE_TYPE_TIMELINE = 1
_UINT64_MAX = (1 << 64) - 1


def _require_timeline(context: SharedVulkanContext) -> VulkanDeviceState:
    state = context._internal
    if "timelineSemaphore" not in context.enabled_features:
        raise SharedVulkanError(
            f"{context.candidate.name} has no timeline semaphores (feature not enabled)",
            vk_result=-8,
        )
    return state


def _destroy_semaphore(state: VulkanDeviceState, holder: list[Any]) -> None:
    handle, holder[0] = holder[0], None
    if handle is not None and state.device is not None:
        state.dfn.vkDestroySemaphore(state.device, handle, state.api.ffi.NULL)


class VulkanTimelineSemaphore:
    """An owned timeline VkSemaphore. Destroyed once: close(), ``with``, the GC, or the context's close."""

    def __init__(self, context: SharedVulkanContext, initial_value: int = 0) -> None:
        if not 0 <= int(initial_value) <= _UINT64_MAX:
            raise InvalidInputError(f"initial_value must be a uint64, got {initial_value}")
        state = _require_timeline(context)
        ffi = state.api.ffi
        type_info = ffi.new(
            "VkSemaphoreTypeCreateInfo*",
            {
                "sType": _ST_SEMAPHORE_TYPE_CREATE_INFO,
                "semaphoreType": _SEMAPHORE_TYPE_TIMELINE,
                "initialValue": int(initial_value),
            },
        )
        info = ffi.new("VkSemaphoreCreateInfo*", {"sType": _ST_SEMAPHORE_CREATE_INFO, "pNext": type_info})
        out = ffi.new("VkSemaphore*")
        check(state.dfn.vkCreateSemaphore(state.device, info, ffi.NULL, out), "vkCreateSemaphore (timeline)")
        self._context = context
        self._state = state
        self._holder: list[Any] = [out[0]]
        self._finalizer = weakref.finalize(self, _destroy_semaphore, state, self._holder)
        # The device must outlive the semaphore: the context destroys it first when it closes.
        self._on_close = self._finalizer.__call__
        state.on_close(self._on_close)
        self._lock = threading.Lock()

    @property
    def context(self) -> SharedVulkanContext:
        """The owning context."""
        return self._context

    @property
    def handle(self) -> Any:
        """The VkSemaphore cdata (for alpha2's native modules)."""
        handle = self._holder[0]
        if handle is None or self._state.closed:
            raise ClosedError("the timeline semaphore is closed")
        return handle

    def as_raw(self) -> int:
        """The VkSemaphore as an int."""
        return handle_address(self._state.api, self.handle)

    @property
    def value(self) -> int:
        """The current counter value (vkGetSemaphoreCounterValue)."""
        ffi = self._state.api.ffi
        out = ffi.new("uint64_t*")
        check(
            self._state.dfn.vkGetSemaphoreCounterValue(self._state.device, self.handle, out),
            "vkGetSemaphoreCounterValue",
        )
        return int(out[0])

    def signal(self, value: int) -> None:
        """Signal ``value`` from the host (vkSignalSemaphore). It must exceed the current value.

        Raises:
            InvalidInputError: ``value`` does not exceed the current counter value.
        """
        value = int(value)
        with self._lock:
            current = self.value
            if not current < value <= _UINT64_MAX:
                raise InvalidInputError(f"timeline value {value} must exceed the current value {current}")
            ffi = self._state.api.ffi
            info = ffi.new(
                "VkSemaphoreSignalInfo*",
                {"sType": _ST_SEMAPHORE_SIGNAL_INFO, "semaphore": self.handle, "value": value},
            )
            check(self._state.dfn.vkSignalSemaphore(self._state.device, info), "vkSignalSemaphore")

    def sync_point(self, value: int) -> VulkanTimelineSyncPoint:
        """A sync point for 'the counter reached ``value``'."""
        return VulkanTimelineSyncPoint(self._context, self, value)

    @property
    def closed(self) -> bool:
        """Whether the semaphore was destroyed."""
        return self._holder[0] is None

    def close(self) -> None:
        """Destroy the semaphore (idempotent). No GPU work may still use it."""
        self._finalizer()
        self._state.discard_on_close(self._on_close)

    def __enter__(self) -> VulkanTimelineSemaphore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def create_timeline_semaphore(
    context: SharedVulkanContext, initial_value: int = 0
) -> VulkanTimelineSemaphore:
    """A timeline semaphore on the shared device."""
    return VulkanTimelineSemaphore(context, initial_value)


def signal_timeline_semaphore(semaphore: VulkanTimelineSemaphore, value: int) -> None:
    """Signal ``value`` from the host."""
    semaphore.signal(value)


class VulkanTimelineSyncPoint(SyncPoint):
    """The timeline semaphore reaches ``value``.

    Args:
        context: the shared context the semaphore belongs to.
        semaphore: a :class:`VulkanTimelineSemaphore`, or a raw VkSemaphore (cdata or int) the caller keeps
            alive for as long as the point is waited on.
        value: the timeline value to wait for.
    """

    backend = BackendKind.VULKAN

    def __init__(
        self, context: SharedVulkanContext, semaphore: VulkanTimelineSemaphore | Any, value: int
    ) -> None:
        super().__init__(BackendKind.VULKAN)
        if not 0 <= int(value) <= _UINT64_MAX:
            raise InvalidInputError(f"timeline value must be a uint64, got {value}")
        self._context = context
        self._semaphore = semaphore
        self.timeline_value = int(value)
        """The value waited for."""

    def _handle(self) -> tuple[VulkanDeviceState, Any]:
        state = self._context._internal
        sem = self._semaphore
        if isinstance(sem, VulkanTimelineSemaphore):
            return state, sem.handle
        if isinstance(sem, int):
            if sem == 0:
                raise InvalidInputError("VkSemaphore handle is 0")
            return state, state.api.ffi.cast("VkSemaphore", sem)
        return state, sem

    def _poll(self) -> bool:
        state, handle = self._handle()
        ffi = state.api.ffi
        out = ffi.new("uint64_t*")
        check(state.dfn.vkGetSemaphoreCounterValue(state.device, handle, out), "vkGetSemaphoreCounterValue")
        return int(out[0]) >= self.timeline_value

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        state, handle = self._handle()
        ffi = state.api.ffi
        semaphores = ffi.new("VkSemaphore[]", [handle])
        values = ffi.new("uint64_t[]", [self.timeline_value])
        info = ffi.new(
            "VkSemaphoreWaitInfo*",
            {
                "sType": _ST_SEMAPHORE_WAIT_INFO,
                "semaphoreCount": 1,
                "pSemaphores": semaphores,
                "pValues": values,
            },
        )
        bounded = min(max(0.0, timeout_s), gpu_wait_timeout())
        result = int(state.dfn.vkWaitSemaphores(state.device, info, timeout_ns(bounded)))
        if result == VK_TIMEOUT:
            return WaitStatus.TIMED_OUT
        check(result, "vkWaitSemaphores")
        return WaitStatus.SIGNALED

    def __repr__(self) -> str:
        return f"<VulkanTimelineSyncPoint value={self.timeline_value}>"
