"""WebGPU implementations: which one a device belongs to, what it has enabled, and its event pump.

alpha2 speaks wgpu-py's API, which two implementations provide: ``wgpu`` (wgpu-py on wgpu-native,
everywhere, CPU upload only) and ``wgpudawn`` (the same API on Google's Dawn, with shared texture
memory and shared fences for the GPU copy). This module is the one place that tells them apart, spells
their feature names, finds a device's Python module and lets a backend deliver its callbacks.

Pure Python: ``wgpu`` and ``wgpudawn`` are imported only when a device of theirs is looked at.
"""

from __future__ import annotations

import enum
import importlib
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from alpha2.gpu.errors import InvalidInputError

__all__ = [
    "FEATURES_16BIT_NORM",
    "FEATURES_GPU_COPY",
    "FEATURE_16BIT_DAWN",
    "FEATURE_16BIT_WGPU",
    "FEATURE_SHARED_FENCE_OPAQUE_FD",
    "FEATURE_SHARED_TEXTURE_OPAQUE_FD",
    "HasWebGpuDevice",
    "WebGpuDevice",
    "WebGpuDeviceInfo",
    "WebGpuImplementation",
    "detect_webgpu_device",
    "gpu_module_of",
    "implementation_of",
    "polled",
    "promise_settled",
    "pump_events",
    "wait_promise",
    "webgpu_device_of",
]

FEATURE_SHARED_TEXTURE_OPAQUE_FD = "shared-texture-memory-opaque-f-d"
"""Dawn: import Vulkan memory (an opaque fd) as a texture (the GPU copy's plane images)."""
FEATURE_SHARED_FENCE_OPAQUE_FD = "shared-fence-vk-semaphore-opaque-f-d"
"""Dawn: import a Vulkan semaphore (an opaque fd) as a fence (the GPU copy's ordering)."""
FEATURES_GPU_COPY = (FEATURE_SHARED_TEXTURE_OPAQUE_FD, FEATURE_SHARED_FENCE_OPAQUE_FD)
"""What a wgpudawn device needs enabled for the GPU copy."""
FEATURE_16BIT_WGPU = "texture-format16bit-norm"
"""wgpu-native's name for R16 / RG16 unorm textures (10- to 16-bit planes)."""
FEATURE_16BIT_DAWN = "unorm16-texture-formats"
"""Dawn's name for the same."""
FEATURES_16BIT_NORM = (FEATURE_16BIT_WGPU, FEATURE_16BIT_DAWN, "texture-formats-tier1")
"""Any of these gives 16-bit normalized textures."""


class WebGpuImplementation(enum.Enum):
    """Which WebGPU implementation a device belongs to (both expose wgpu-py's API)."""

    WGPU = "wgpu"
    """wgpu-py on wgpu-native: CPU upload only (no external memory)."""
    DAWN = "wgpudawn"
    """wgpu-py's API on Google's Dawn: shared texture memory and shared fences in its extras."""

    @property
    def feature_16bit(self) -> str:
        """This implementation's spelling of the 16-bit normalized texture feature."""
        return FEATURE_16BIT_DAWN if self is WebGpuImplementation.DAWN else FEATURE_16BIT_WGPU


@runtime_checkable
class WebGpuDevice(Protocol):
    """What alpha2 uses of a WebGPU device: wgpu-py's ``GPUDevice``, on wgpu-native (``wgpu``) or on
    Dawn (``wgpudawn``). Both are this shape; so is a test's fake."""

    @property
    def queue(self) -> Any:
        """The device's GPUQueue (``submit``, ``write_texture``, ``write_buffer``)."""

    @property
    def features(self) -> Any:
        """The enabled feature names."""

    @property
    def limits(self) -> Any:
        """The device's limits (``max-texture-dimension-2d``, ...)."""

    create_texture: Callable[..., Any]
    create_buffer: Callable[..., Any]
    create_buffer_with_data: Callable[..., Any]
    create_sampler: Callable[..., Any]
    create_command_encoder: Callable[..., Any]
    create_shader_module: Callable[..., Any]
    create_bind_group: Callable[..., Any]
    create_bind_group_layout: Callable[..., Any]
    create_pipeline_layout: Callable[..., Any]
    create_render_pipeline: Callable[..., Any]
    create_compute_pipeline: Callable[..., Any]


@runtime_checkable
class HasWebGpuDevice(Protocol):
    """Anything that carries the GPUDevice it works on (alpha2's :class:`~alpha2.native_gpu.Device`)."""

    @property
    def webgpu_device(self) -> Any:
        """The wgpu-py style GPUDevice."""


def webgpu_device_of(device: object) -> WebGpuDevice:
    """The GPUDevice itself: ``device`` when it is one, its ``webgpu_device`` when it carries one."""
    if isinstance(device, HasWebGpuDevice) and not hasattr(device, "create_texture"):
        inner: WebGpuDevice = device.webgpu_device
        return inner
    return cast(WebGpuDevice, device)


def implementation_of(obj: Any) -> WebGpuImplementation:
    """The implementation an adapter, device or other wgpu-py object belongs to (from its module).

    Raises:
        InvalidInputError: ``obj`` belongs to neither ``wgpu`` nor ``wgpudawn``.
    """
    top = type(obj).__module__.split(".", 1)[0]
    try:
        return WebGpuImplementation(top)
    except ValueError:
        raise InvalidInputError(
            f"{type(obj).__qualname__} (module {top!r}) is not a WebGPU device; pass a GPUDevice of "
            f"{' or '.join(i.value for i in WebGpuImplementation)}"
        ) from None


def gpu_module_of(device: Any) -> Any:
    """The wgpu-py style module (``wgpu`` or ``wgpudawn``) that ``device`` belongs to.

    Raises:
        InvalidInputError: ``device`` is not a wgpu-py style object.
    """
    device = webgpu_device_of(device)
    module = importlib.import_module(implementation_of(device).value)
    if not hasattr(module, "TextureUsage"):
        raise InvalidInputError(
            f"{type(device).__qualname__} from {module.__name__!r} is not a wgpu-py style GPUDevice"
        )
    return module


@dataclass(frozen=True)
class WebGpuDeviceInfo:
    """What alpha2 knows about a WebGPU device: implementation, enabled features, adapter identity."""

    implementation: WebGpuImplementation
    """wgpu (wgpu-native) or wgpudawn (Dawn), from the device object's module."""
    features: frozenset[str]
    """Features enabled on the device (``device.features``)."""
    adapter_name: str = ""
    """The adapter's description, for messages."""
    backend_type: str = ""
    """The adapter's backend (``"Vulkan"``, ``"Metal"``, ...)."""
    vulkan_device_uuid: bytes | None = None
    """Dawn only: VkPhysicalDeviceIDProperties.deviceUUID of the adapter (extras.get_adapter_properties)."""
    vulkan_driver_uuid: bytes | None = None
    """Dawn only: the adapter's driverUUID."""

    @property
    def has_16bit_norm(self) -> bool:
        """Whether R16 / RG16 unorm textures (10- to 16-bit planes) can be made."""
        return any(name in self.features for name in FEATURES_16BIT_NORM)

    @property
    def has_shared_opaque_fd(self) -> bool:
        """Whether both features of the GPU-copy path are enabled on the device."""
        return all(name in self.features for name in FEATURES_GPU_COPY)

    @property
    def missing_gpu_copy_features(self) -> tuple[str, ...]:
        """The GPU-copy features the device lacks (empty when it has both)."""
        return tuple(name for name in FEATURES_GPU_COPY if name not in self.features)


def _dawn_uuids(adapter: Any) -> tuple[bytes | None, bytes | None]:
    try:
        extras = importlib.import_module("wgpudawn.backends.dawn.extras")
        uuids = extras.get_adapter_properties(adapter).get("vulkan_uuids") or {}
    except Exception:  # a build without the extras, or a non-Vulkan adapter: no UUIDs, said later
        return None, None
    device_uuid, driver_uuid = uuids.get("device_uuid"), uuids.get("driver_uuid")
    return (bytes(device_uuid) if device_uuid else None, bytes(driver_uuid) if driver_uuid else None)


def detect_webgpu_device(device: Any) -> WebGpuDeviceInfo:
    """Which implementation ``device`` belongs to (from its class's module) and what it has enabled.

    Raises:
        InvalidInputError: ``device`` is not a wgpu-py style GPUDevice of ``wgpu`` or ``wgpudawn``.
    """
    device = webgpu_device_of(device)
    implementation = implementation_of(device)
    if not hasattr(device, "queue") or not hasattr(device, "create_texture"):
        raise InvalidInputError(f"{type(device).__qualname__} is not a GPUDevice (no queue / create_texture)")
    features = frozenset(str(name) for name in (getattr(device, "features", None) or ()))
    adapter = getattr(device, "adapter", None)
    adapter_info: Any = getattr(adapter, "info", None) or {}
    device_uuid = driver_uuid = None
    if implementation is WebGpuImplementation.DAWN and adapter is not None:
        device_uuid, driver_uuid = _dawn_uuids(adapter)
    return WebGpuDeviceInfo(
        implementation=implementation,
        features=features,
        adapter_name=str(adapter_info.get("device") or adapter_info.get("description") or ""),
        backend_type=str(adapter_info.get("backend_type") or ""),
        vulkan_device_uuid=device_uuid,
        vulkan_driver_uuid=driver_uuid,
    )


# ---------------------------------------------------------------------------------------------------
# callbacks and promises


def pump_events(device: Any) -> None:
    """Let the backend deliver callbacks: wgpu-native polls in its own thread; Dawn needs process_events.

    ``process_events`` lives in the backend module that defines the device's class
    (``wgpudawn.backends.dawn._api``), not in the package's top level.
    """
    module = sys.modules.get(type(webgpu_device_of(device)).__module__)
    process_events = getattr(module, "process_events", None)
    if callable(process_events):
        process_events()


# wgpu-py 0.32's GPUPromise has no public non-blocking poll: ``then()`` needs a running event loop and
# ``sync_wait()`` blocks without a bound. Read-back rings poll many promises from plain threads with a
# timeout, so the two private fields below are read here, and only here, and the loop a promise resolves
# on is detached here (:func:`polled`) (wgpu is pinned to <0.33).


def _state_of(promise: Any) -> str:
    return str(getattr(promise, "_state", "pending"))


def polled(promise: Any) -> Any:
    """``promise`` (a GPUPromise alpha2 polls or ``sync_wait``-s itself, never awaits) detached from the
    asyncio loop running where it was made: wgpu-py's promise hands its resolution to that loop when the
    GPU finishes, and where the loop had closed by then (``asyncio.run`` returned before a later call
    pumped the device's events) the callback raised 'Event loop is closed', printed as 'Exception
    ignored from cffi callback' at the caller. Its state, what :func:`promise_settled` reads, is set all
    the same."""
    if getattr(promise, "_call_soon_threadsafe", None) is not None:
        promise._call_soon_threadsafe = None
    return promise


def promise_settled(promise: Any) -> bool:
    """Whether a GPUPromise has its result (or error), without waiting."""
    return _state_of(promise) != "pending"


def wait_promise(promise: Any, timeout_s: float, device: Any) -> bool:
    """Wait up to ``timeout_s`` for a GPUPromise to settle, pumping ``device``'s events; True when settled.

    Waiting is not failing: a promise still pending at the deadline gives False.
    """
    deadline = time.monotonic() + timeout_s
    event = getattr(promise, "_thread_event", None)
    delay = 0.0005
    while not promise_settled(promise):
        pump_events(device)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return promise_settled(promise)
        if isinstance(event, threading.Event):
            event.wait(min(remaining, delay))
        else:
            time.sleep(min(remaining, delay))
        delay = min(delay * 2, 0.01)
    return True
