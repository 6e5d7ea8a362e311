"""Vulkan timeline semaphores as alpha2 sync points.

:class:`VulkanTimelineSemaphore` owns a timeline VkSemaphore on a
:class:`~alpha2.native_gpu.device.shared.SharedVulkanContext` (host signal, counter value);
:class:`VulkanTimelineSyncPoint` is "the semaphore reached this value", with the waits of
:class:`alpha2.gpu.sync.SyncPoint`: ``_poll`` reads vkGetSemaphoreCounterValue, ``_wait_native`` calls
vkWaitSemaphores with a timeout (bounded by :func:`~alpha2.native_gpu.device.waits.gpu_wait_timeout`) and maps
VK_TIMEOUT to ``WaitStatus.TIMED_OUT``. The Vulkan calls are :mod:`alpha2.native_gpu._vk.sync`'s.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.identity import BackendKind
from alpha2.gpu.sync import SyncPoint, WaitStatus
from alpha2.native_gpu._vk import sync as vk_sync
from alpha2.native_gpu._vk.core import SharedVulkanError, handle_address
from alpha2.native_gpu._vk.device import VulkanDeviceState
from alpha2.native_gpu.device.shared import SharedVulkanContext
from alpha2.native_gpu.device.waits import gpu_wait_timeout, timeout_ns

__all__ = [
    "VulkanTimelineSemaphore",
    "VulkanTimelineSyncPoint",
    "create_timeline_semaphore",
    "signal_timeline_semaphore",
]

_UINT64_MAX = vk_sync.UINT64_MAX


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
    vk_sync.destroy_semaphore(state, handle)


class VulkanTimelineSemaphore:
    """An owned timeline VkSemaphore. Destroyed once: close(), ``with``, the GC, or the context's close."""

    def __init__(self, context: SharedVulkanContext, initial_value: int = 0) -> None:
        if not 0 <= int(initial_value) <= _UINT64_MAX:
            raise InvalidInputError(f"initial_value must be a uint64, got {initial_value}")
        state = _require_timeline(context)
        handle = vk_sync.create_timeline(state, int(initial_value))
        self._context = context
        self._state = state
        self._holder: list[Any] = [handle]
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
        return vk_sync.counter_value(self._state, self.handle)

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
            vk_sync.signal_timeline(self._state, self.handle, value)

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
            return state, vk_sync.semaphore_from_address(state.api, sem)
        return state, sem

    def _poll(self) -> bool:
        state, handle = self._handle()
        return vk_sync.counter_value(state, handle) >= self.timeline_value

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        state, handle = self._handle()
        bounded = min(max(0.0, timeout_s), gpu_wait_timeout())
        return vk_sync.wait_timeline(state, handle, self.timeline_value, timeout_ns(bounded))

    def __repr__(self) -> str:
        return f"<VulkanTimelineSyncPoint value={self.timeline_value}>"
