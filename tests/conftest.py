"""Test configuration: hardware markers and the one place where skips are decided.

Markers: ``vulkan`` (any Vulkan device, lavapipe included), ``cuda`` (a CUDA device through
cuda-python), ``dawn`` (wgpudawn with an adapter), ``nvidia`` (an NVIDIA GPU: NVDEC, NVIDIA Vulkan).
A marked test is skipped when its hardware is absent, unless ``ALPHA2_REQUIRE`` names the marker
(comma-separated, e.g. ``ALPHA2_REQUIRE=vulkan,cuda``): then the skip becomes a failure, so a machine
that must have the hardware cannot pass by skipping. CI sets ``ALPHA2_REQUIRE=vulkan``.
"""

from __future__ import annotations

import functools
import os

import pytest

HARDWARE_MARKERS = ("vulkan", "cuda", "dawn", "nvidia")

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


@functools.cache
def _vulkan() -> str | None:
    try:
        import vulkan as vk
    except Exception as exc:  # no loader: the package raises OSError on import
        return f"vulkan package unusable: {exc}"
    try:
        app = vk.VkApplicationInfo(
            sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, apiVersion=vk.VK_MAKE_VERSION(1, 1, 0)
        )
        inst = vk.vkCreateInstance(
            vk.VkInstanceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app),
            None,
        )
        try:
            if not vk.vkEnumeratePhysicalDevices(inst):
                return "no Vulkan physical device"
        finally:
            vk.vkDestroyInstance(inst, None)
    except Exception as exc:
        return f"no Vulkan instance: {exc}"
    return None


@functools.cache
def _cuda() -> str | None:
    try:
        from cuda.bindings import driver as cu
    except Exception:
        try:
            from cuda import cuda as cu  # type: ignore[no-redef]
        except Exception as exc:
            return f"cuda-python not installed: {exc}"
    err = cu.cuInit(0)[0]
    if int(err) != 0:
        return f"cuInit failed: {err}"
    err, count = cu.cuDeviceGetCount()
    if int(err) != 0 or count == 0:
        return "no CUDA device"
    return None


@functools.cache
def _dawn() -> str | None:
    try:
        import wgpudawn
    except Exception as exc:
        return f"wgpudawn not installed: {exc}"
    try:
        adapter = wgpudawn.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as exc:
        return f"wgpudawn has no adapter: {exc}"
    if adapter is None:
        return "wgpudawn has no adapter"
    return None


@functools.cache
def _nvidia() -> str | None:
    reason = _cuda()
    if reason is not None:
        return reason
    try:
        import av  # noqa: F401
        from av.codec.hwaccel import hwdevices_available

        if "cuda" not in hwdevices_available():
            return "PyAV has no cuda hardware device"
    except Exception as exc:
        return f"PyAV unusable: {exc}"
    return None


_CHECKS = {"vulkan": _vulkan, "cuda": _cuda, "dawn": _dawn, "nvidia": _nvidia}


def required_markers() -> set[str]:
    raw = os.environ.get("ALPHA2_REQUIRE", "")
    names = {part.strip() for part in raw.split(",") if part.strip()}
    unknown = names - set(HARDWARE_MARKERS)
    if unknown:
        raise pytest.UsageError(
            f"ALPHA2_REQUIRE names unknown markers {sorted(unknown)}; known: {', '.join(HARDWARE_MARKERS)}"
        )
    return names


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    required = required_markers()
    for item in items:
        for name in HARDWARE_MARKERS:
            if item.get_closest_marker(name) is None:
                continue
            reason = _CHECKS[name]()
            if reason is None:
                continue
            if name in required:
                item.user_properties.append(("alpha2_missing", f"{name}: {reason}"))
            else:
                item.add_marker(pytest.mark.skip(reason=f"{name}: {reason}"))
            break


def pytest_runtest_setup(item: pytest.Item) -> None:
    missing = dict(item.user_properties).get("alpha2_missing")
    if missing is not None:
        pytest.fail(f"required hardware missing ({missing}); ALPHA2_REQUIRE turns this skip into a failure")


def pytest_collection_finish(session: pytest.Session) -> None:
    # PyAV's Python log callback (installed by av.logging.set_level(<int>)) takes the GIL from FFmpeg's
    # decoder threads and deadlocks avcodec_free_context while the main thread holds the GIL (seen here:
    # the suite hung in a Stream's dealloc). Whatever a test module set at import, run without it.
    import sys

    av = sys.modules.get("av")
    if av is not None:
        av.logging.set_level(None)
