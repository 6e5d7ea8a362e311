"""Loader access, the check function for VkResult, function tables and an owned VkInstance.

Everything here calls Vulkan through raw cffi function pointers (``vulkan._vulkan.ffi`` / ``lib`` and
``vkGet*ProcAddr``), not through the ``vulkan`` package's Python wrappers: the wrappers raise on
``VK_TIMEOUT`` and ``VK_NOT_READY`` and allocate their own output structs, while a raw call returns the
VkResult as an int that :func:`check` turns into a typed error. The ``vulkan`` package (which opens the
loader on import) is imported on first use only, so importing alpha2 needs no Vulkan loader.

Other ``_vk`` modules use:

* :func:`vulkan_api` for ``ffi``, ``lib`` and the package's constants (``api.vk.VK_FORMAT_R8_UNORM``);
* :class:`FunctionTable` (``ctx._internal.dfn.vkCreateImage(...)``) for device-level functions and
  ``ctx._internal.ifn`` for instance-level ones, already cast to their ``PFN_`` types;
* :func:`check` on every returned VkResult.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from alpha2.gpu.errors import (
    DeviceLostError,
    Error,
    ErrorKind,
    GpuTimeoutError,
    OutOfMemoryError,
    UnsupportedError,
)

# Packed VK_MAKE_API_VERSION(0, 1, minor, 0): the core versions that absorbed the extensions alpha2 uses.
API_VERSION_1_1 = (1 << 22) | (1 << 12)
API_VERSION_1_2 = (1 << 22) | (2 << 12)
API_VERSION_1_3 = (1 << 22) | (3 << 12)

# The highest Vulkan version alpha2 asks for when it creates an instance.
MAX_API_VERSION = API_VERSION_1_3

VK_SUCCESS = 0
VK_NOT_READY = 1
VK_TIMEOUT = 2
VK_INCOMPLETE = 5

_RESULT_NAMES_FALLBACK: dict[int, str] = {
    0: "VK_SUCCESS",
    1: "VK_NOT_READY",
    2: "VK_TIMEOUT",
    3: "VK_EVENT_SET",
    4: "VK_EVENT_RESET",
    5: "VK_INCOMPLETE",
    -1: "VK_ERROR_OUT_OF_HOST_MEMORY",
    -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
    -3: "VK_ERROR_INITIALIZATION_FAILED",
    -4: "VK_ERROR_DEVICE_LOST",
    -5: "VK_ERROR_MEMORY_MAP_FAILED",
    -6: "VK_ERROR_LAYER_NOT_PRESENT",
    -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
    -8: "VK_ERROR_FEATURE_NOT_PRESENT",
    -9: "VK_ERROR_INCOMPATIBLE_DRIVER",
    -10: "VK_ERROR_TOO_MANY_OBJECTS",
    -11: "VK_ERROR_FORMAT_NOT_SUPPORTED",
    -12: "VK_ERROR_FRAGMENTED_POOL",
    -13: "VK_ERROR_UNKNOWN",
    -1000069000: "VK_ERROR_OUT_OF_POOL_MEMORY",
    -1000072003: "VK_ERROR_INVALID_EXTERNAL_HANDLE",
    -1000023000: "VK_ERROR_IMAGE_USAGE_NOT_SUPPORTED_KHR",
    -1000023001: "VK_ERROR_VIDEO_PICTURE_LAYOUT_NOT_SUPPORTED_KHR",
    -1000023002: "VK_ERROR_VIDEO_PROFILE_OPERATION_NOT_SUPPORTED_KHR",
    -1000023003: "VK_ERROR_VIDEO_PROFILE_FORMAT_NOT_SUPPORTED_KHR",
    -1000023004: "VK_ERROR_VIDEO_PROFILE_CODEC_NOT_SUPPORTED_KHR",
    -1000023005: "VK_ERROR_VIDEO_STD_VERSION_NOT_SUPPORTED_KHR",
}

_OOM_RESULTS = {-1, -2, -1000069000}
_UNSUPPORTED_RESULTS = {-6, -7, -8, -9, -11, -1000023000, -1000023001, -1000023002, -1000023003}
_UNSUPPORTED_RESULTS |= {-1000023004, -1000023005}


@dataclass(frozen=True, order=True)
class VulkanVersion:
    """A Vulkan version (API or layer spec version) decoded from its packed 32-bit form."""

    major: int
    """Major version (the 7 bits above minor)."""
    minor: int
    """Minor version (10 bits)."""
    patch: int
    """Patch version (12 bits)."""
    variant: int = 0
    """API variant (0 for Vulkan; 3 bits at the top)."""

    @classmethod
    def from_packed(cls, value: int) -> VulkanVersion:
        """Decode ``VK_MAKE_API_VERSION(variant, major, minor, patch)``."""
        value = int(value) & 0xFFFFFFFF
        return cls((value >> 22) & 0x7F, (value >> 12) & 0x3FF, value & 0xFFF, value >> 29)

    @property
    def packed(self) -> int:
        """The packed 32-bit form."""
        return (self.variant << 29) | (self.major << 22) | (self.minor << 12) | self.patch

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


class VulkanUnavailableError(UnsupportedError):
    """No usable Vulkan: the loader (libvulkan) is missing, or it finds no driver (ICD)."""


class SharedVulkanError(Error):
    """A Vulkan call failed. ``vk_result`` is the VkResult (negative int), ``result_name`` its name."""

    def __init__(self, message: str, *, vk_result: int, kind: ErrorKind | None = None) -> None:
        super().__init__(message, kind=kind)
        self.vk_result = int(vk_result)
        self.result_name = result_name(vk_result)


class SharedVulkanOutOfMemoryError(SharedVulkanError, OutOfMemoryError):
    """VK_ERROR_OUT_OF_HOST_MEMORY / OUT_OF_DEVICE_MEMORY / OUT_OF_POOL_MEMORY."""


class SharedVulkanDeviceLostError(SharedVulkanError, DeviceLostError):
    """VK_ERROR_DEVICE_LOST: everything made on the device must be recreated."""


class SharedVulkanUnsupportedError(SharedVulkanError, UnsupportedError):
    """An extension, feature, layer, format or driver is not there (VK_ERROR_*_NOT_PRESENT, ...)."""


class SharedVulkanTimeoutError(SharedVulkanError, GpuTimeoutError):
    """VK_TIMEOUT where the caller asked for an error rather than a result."""


@dataclass(frozen=True)
class VulkanApi:
    """The loaded binding: cffi ``ffi`` and ``lib`` (the loader) and the ``vulkan`` module for constants."""

    ffi: Any
    """cffi FFI with the Vulkan declarations."""
    lib: Any
    """The dlopen'ed loader (exports vkGetInstanceProcAddr and the core functions)."""
    vk: Any
    """The ``vulkan`` module (constants such as ``VK_FORMAT_R8_UNORM``)."""


_api_lock = threading.Lock()
_api: VulkanApi | None = None


def vulkan_api() -> VulkanApi:
    """The Vulkan binding, loaded on first use.

    Raises:
        VulkanUnavailableError: the ``vulkan`` package is missing or cannot open libvulkan.
    """
    global _api
    with _api_lock:
        if _api is None:
            try:
                import vulkan as vk_module
                from vulkan._vulkan import ffi, lib
            except (OSError, ImportError) as exc:
                raise VulkanUnavailableError(
                    f"no Vulkan loader: {exc}; install libvulkan1 and a Vulkan driver "
                    "(on a machine without a GPU: mesa-vulkan-drivers for lavapipe)"
                ) from exc
            _api = VulkanApi(ffi=ffi, lib=lib, vk=vk_module)
        return _api


@functools.cache
def _result_names() -> dict[int, str]:
    names = dict(_RESULT_NAMES_FALLBACK)
    try:
        vk = vulkan_api().vk
    except VulkanUnavailableError:
        return names
    for attr in dir(vk):
        if (attr.startswith("VK_ERROR_") or attr in ("VK_SUCCESS", "VK_NOT_READY", "VK_TIMEOUT")) and not (
            attr.endswith(("_BEGIN_RANGE", "_END_RANGE", "_RANGE_SIZE", "_MAX_ENUM"))
        ):
            value = getattr(vk, attr)
            if isinstance(value, int):
                names.setdefault(value, attr)
    return names


def result_name(result: int) -> str:
    """The symbolic name of a VkResult (``VK_ERROR_DEVICE_LOST``), or ``VkResult(<n>)``."""
    return _result_names().get(int(result), f"VkResult({int(result)})")


def error_for_result(result: int, what: str) -> SharedVulkanError:
    """The typed error for a failed VkResult: out-of-memory, device-lost, unsupported or generic."""
    result = int(result)
    message = f"{what} failed: {result_name(result)}"
    if result in _OOM_RESULTS:
        return SharedVulkanOutOfMemoryError(message, vk_result=result)
    if result == -4:
        return SharedVulkanDeviceLostError(message, vk_result=result)
    if result in _UNSUPPORTED_RESULTS:
        return SharedVulkanUnsupportedError(message, vk_result=result)
    if result == VK_TIMEOUT:
        return SharedVulkanTimeoutError(message, vk_result=result)
    return SharedVulkanError(message, vk_result=result, kind=ErrorKind.INTERNAL)


def check(result: int, what: str) -> int:
    """Return a non-negative VkResult (success codes such as VK_INCOMPLETE too), raise on a negative one.

    Raises:
        SharedVulkanError: (or a subclass by result) carrying ``vk_result``.
    """
    result = int(result)
    if result < 0:
        raise error_for_result(result, what)
    return result


# Core functions reachable under an extension name on older instances/devices.
_ALIASES: dict[str, tuple[str, ...]] = {
    "vkGetPhysicalDeviceProperties2": ("vkGetPhysicalDeviceProperties2KHR",),
    "vkGetPhysicalDeviceFeatures2": ("vkGetPhysicalDeviceFeatures2KHR",),
    "vkGetPhysicalDeviceMemoryProperties2": ("vkGetPhysicalDeviceMemoryProperties2KHR",),
    "vkGetPhysicalDeviceQueueFamilyProperties2": ("vkGetPhysicalDeviceQueueFamilyProperties2KHR",),
    "vkGetPhysicalDeviceExternalBufferProperties": ("vkGetPhysicalDeviceExternalBufferPropertiesKHR",),
    "vkGetPhysicalDeviceExternalSemaphoreProperties": ("vkGetPhysicalDeviceExternalSemaphorePropertiesKHR",),
    "vkGetPhysicalDeviceImageFormatProperties2": ("vkGetPhysicalDeviceImageFormatProperties2KHR",),
    "vkWaitSemaphores": ("vkWaitSemaphoresKHR",),
    "vkSignalSemaphore": ("vkSignalSemaphoreKHR",),
    "vkGetSemaphoreCounterValue": ("vkGetSemaphoreCounterValueKHR",),
    "vkCmdPipelineBarrier2": ("vkCmdPipelineBarrier2KHR",),
    "vkQueueSubmit2": ("vkQueueSubmit2KHR",),
    "vkCreateSamplerYcbcrConversion": ("vkCreateSamplerYcbcrConversionKHR",),
    "vkDestroySamplerYcbcrConversion": ("vkDestroySamplerYcbcrConversionKHR",),
    "vkBindImageMemory2": ("vkBindImageMemory2KHR",),
    "vkGetImageMemoryRequirements2": ("vkGetImageMemoryRequirements2KHR",),
}


class FunctionTable:
    """Vulkan functions of one instance or device, resolved on first use and cast to their PFN types.

    ``table.vkCreateImage(device, info, NULL, out)`` calls the raw function and returns its VkResult as
    an int (never raises on VK_TIMEOUT). A function the driver lacks raises
    :class:`SharedVulkanUnsupportedError`; :meth:`has` asks without raising.
    """

    def __init__(self, api: VulkanApi, get_proc: Callable[[bytes], Any], what: str) -> None:
        self._api = api
        self._get_proc = get_proc
        self._what = what
        self._cache: dict[str, Any] = {}

    def _resolve(self, name: str) -> Any:
        ffi = self._api.ffi
        for candidate in (name, *_ALIASES.get(name, ())):
            ptr = self._get_proc(candidate.encode())
            if ptr != ffi.NULL:
                return ffi.cast(f"PFN_{name}", ptr)
        return None

    def has(self, name: str) -> bool:
        """Whether the function (or its extension alias) is available."""
        if name not in self._cache:
            self._cache[name] = self._resolve(name)
        return self._cache[name] is not None

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("vk"):
            raise AttributeError(name)
        if not self.has(name):
            raise SharedVulkanUnsupportedError(
                f"{name} is not available on this {self._what} (extension not enabled or driver too old)",
                vk_result=-7,
            )
        return self._cache[name]


def instance_functions(api: VulkanApi, instance: Any) -> FunctionTable:
    """Function table resolved through vkGetInstanceProcAddr (instance and physical-device functions)."""
    return FunctionTable(api, lambda name: api.lib.vkGetInstanceProcAddr(instance, name), "instance")


def device_functions(api: VulkanApi, device: Any) -> FunctionTable:
    """Function table resolved through vkGetDeviceProcAddr (device, queue and command functions)."""
    return FunctionTable(api, lambda name: api.lib.vkGetDeviceProcAddr(device, name), "device")


def cstr(api: VulkanApi, chars: Any) -> str:
    """A fixed-size C char array as str."""
    return bytes(api.ffi.string(chars)).decode("utf-8", "replace")


def handle_address(api: VulkanApi, handle: Any) -> int:
    """A dispatchable or non-dispatchable handle as an int (0 for NULL)."""
    if handle is None:
        return 0
    try:
        return int(api.ffi.cast("uintptr_t", handle))
    except TypeError:
        return int(handle)


def instance_proc_addr(api: VulkanApi) -> int:
    """The address of the loader's vkGetInstanceProcAddr (what FFmpeg's and Dawn's device structs take)."""
    return handle_address(api, api.ffi.cast("void*", api.lib.vkGetInstanceProcAddr))


def loader_api_version(api: VulkanApi) -> int:
    """The loader's instance version (packed); 1.0 where vkEnumerateInstanceVersion is missing."""
    fn_ptr = api.lib.vkGetInstanceProcAddr(api.ffi.NULL, b"vkEnumerateInstanceVersion")
    if fn_ptr == api.ffi.NULL:
        return 1 << 22
    out = api.ffi.new("uint32_t*")
    check(api.ffi.cast("PFN_vkEnumerateInstanceVersion", fn_ptr)(out), "vkEnumerateInstanceVersion")
    return int(out[0])


def instance_extension_names(api: VulkanApi) -> frozenset[str]:
    """Names of the instance extensions the loader and drivers offer."""
    ffi = api.ffi
    count = ffi.new("uint32_t*")
    check(api.lib.vkEnumerateInstanceExtensionProperties(ffi.NULL, count, ffi.NULL), "enumerate extensions")
    props = ffi.new("VkExtensionProperties[]", count[0])
    check(api.lib.vkEnumerateInstanceExtensionProperties(ffi.NULL, count, props), "enumerate extensions")
    return frozenset(cstr(api, props[i].extensionName) for i in range(count[0]))


def _destroy_instance(api: VulkanApi, holder: list[Any]) -> None:
    handle = holder[0]
    holder[0] = None  # swap first: a second call (or shutdown) finds nothing to free
    if handle is not None:
        api.lib.vkDestroyInstance(handle, api.ffi.NULL)


class Instance:
    """An owned VkInstance (headless: no surface extensions). Destroyed once by close() or the GC."""

    def __init__(
        self, api: VulkanApi | None = None, *, extensions: Iterable[str] = (), app_name: str = "alpha2"
    ) -> None:
        api = api if api is not None else vulkan_api()
        ffi = api.ffi
        self.api = api
        self.api_version = min(loader_api_version(api), MAX_API_VERSION)
        available = instance_extension_names(api)
        wanted = [name for name in extensions if name in available]
        keep: list[Any] = []
        app_name_c = ffi.new("char[]", app_name.encode())
        engine_name_c = ffi.new("char[]", b"alpha2")
        app = ffi.new(
            "VkApplicationInfo*",
            {
                "sType": api.vk.VK_STRUCTURE_TYPE_APPLICATION_INFO,
                "pApplicationName": app_name_c,
                "applicationVersion": 1,
                "pEngineName": engine_name_c,
                "engineVersion": 1,
                "apiVersion": self.api_version,
            },
        )
        ext_c = [ffi.new("char[]", name.encode()) for name in wanted]
        ext_array = ffi.new("char*[]", ext_c) if ext_c else ffi.NULL
        keep += [app_name_c, engine_name_c, app, ext_c, ext_array]
        info = ffi.new(
            "VkInstanceCreateInfo*",
            {
                "sType": api.vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                "pApplicationInfo": app,
                "enabledExtensionCount": len(ext_c),
                "ppEnabledExtensionNames": ext_array,
            },
        )
        out = ffi.new("VkInstance*")
        result = int(api.lib.vkCreateInstance(info, ffi.NULL, out))
        if result == -9:  # VK_ERROR_INCOMPATIBLE_DRIVER: the loader found no driver at all
            raise VulkanUnavailableError(
                "the Vulkan loader found no driver (VK_ERROR_INCOMPATIBLE_DRIVER); install a Vulkan "
                "driver (mesa-vulkan-drivers gives lavapipe) or check VK_DRIVER_FILES / VK_ICD_FILENAMES"
            )
        check(result, "vkCreateInstance")
        self.enabled_extensions = frozenset(wanted)
        self._holder: list[Any] = [out[0]]
        self.fn = instance_functions(api, out[0])
        self._finalizer = weakref.finalize(self, _destroy_instance, api, self._holder)

    @property
    def handle(self) -> Any:
        """The VkInstance cdata (raises ClosedError-like SharedVulkanError when closed)."""
        handle = self._holder[0]
        if handle is None:
            raise SharedVulkanError("the VkInstance is closed", vk_result=-3, kind=ErrorKind.INVALID_INPUT)
        return handle

    @property
    def closed(self) -> bool:
        """Whether the instance was destroyed."""
        return self._holder[0] is None

    def physical_devices(self) -> list[Any]:
        """VkPhysicalDevice handles in the loader's enumeration order."""
        ffi = self.api.ffi
        count = ffi.new("uint32_t*")
        check(
            self.api.lib.vkEnumeratePhysicalDevices(self.handle, count, ffi.NULL),
            "vkEnumeratePhysicalDevices",
        )
        devices = ffi.new("VkPhysicalDevice[]", count[0])
        check(
            self.api.lib.vkEnumeratePhysicalDevices(self.handle, count, devices), "vkEnumeratePhysicalDevices"
        )
        return [devices[i] for i in range(count[0])]

    def close(self) -> None:
        """Destroy the instance (idempotent). Everything made from it must be destroyed first."""
        self._finalizer()

    def __enter__(self) -> Instance:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
