"""The raw side of the shared Vulkan device: :class:`VulkanDeviceState` and :func:`open_device`.

:class:`VulkanDeviceState` is what ``SharedVulkanContext._internal`` returns to alpha2's native modules:
the loaded binding, the owned instance, the VkPhysicalDevice and VkDevice, the instance and device
function tables, the queues with their locks and the memory types. It destroys the device and then the
instance exactly once (children first, through :meth:`~VulkanDeviceState.on_close`).

:func:`open_device` creates the VkDevice on it: one queue per family, the extensions asked for, and of
the optional features asked for exactly those the driver reports (every core 1.0 feature off).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from alpha2.gpu.errors import ClosedError, ErrorKind, InvalidInputError
from alpha2.native_gpu._vk.core import (
    Instance,
    SharedVulkanError,
    VulkanApi,
    check,
    device_functions,
)
from alpha2.native_gpu._vk.query import Feature, PhysicalDevice

__all__ = ["VulkanDeviceState", "open_device"]


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


def open_device(
    state: VulkanDeviceState,
    physical_device: PhysicalDevice,
    *,
    queue_families: Sequence[int],
    extensions: Sequence[str],
    features: Iterable[Feature],
    what: str = "the adapter",
) -> frozenset[Feature]:
    """Create the VkDevice on ``physical_device`` into ``state``; returns the optional features enabled.

    One queue (priority 1.0) per family in ``queue_families``, each with its own lock. Of ``features``,
    exactly those the driver reports are enabled; every core 1.0 feature stays off.

    Raises:
        SharedVulkanError: vkCreateDevice failed (``vk_result`` says why).
    """
    api = state.api
    ffi, vk = api.ffi, api.vk
    chain = physical_device.feature_chain(features)
    families = list(queue_families)
    priorities = ffi.new("float[]", [1.0])
    queue_infos = ffi.new("VkDeviceQueueCreateInfo[]", len(families))
    for i, family in enumerate(families):
        queue_infos[i].sType = vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO
        queue_infos[i].queueFamilyIndex = family
        queue_infos[i].queueCount = 1
        queue_infos[i].pQueuePriorities = priorities
    ext_c = [ffi.new("char[]", name.encode()) for name in extensions]
    ext_array = ffi.new("char*[]", ext_c) if ext_c else ffi.NULL
    info = ffi.new(
        "VkDeviceCreateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
            "pNext": chain.for_device_creation(),
            "queueCreateInfoCount": len(families),
            "pQueueCreateInfos": queue_infos,
            "enabledExtensionCount": len(ext_c),
            "ppEnabledExtensionNames": ext_array,
        },
    )
    out = ffi.new("VkDevice*")
    check(api.lib.vkCreateDevice(physical_device.handle, info, ffi.NULL, out), f"vkCreateDevice on {what}")
    state.physical_device = physical_device.handle
    state.device = out[0]
    state.dfn = device_functions(api, out[0])
    for family in families:
        handle = ffi.new("VkQueue*")
        api.lib.vkGetDeviceQueue(out[0], family, 0, handle)
        state.queues[(family, 0)] = handle[0]
        state.locks[(family, 0)] = threading.RLock()
    state.memory_types = list(physical_device.memory_types())
    return chain.supported
