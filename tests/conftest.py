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
    try:
        err = cu.cuInit(0)[0]
    except Exception as exc:  # cuda-python 13 without the NVIDIA driver: its loader's error
        return f"cuInit failed: {type(exc).__name__}: {exc}"
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


# ---------------------------------------------------------------------------------------------------
# sound without a sound card: a JACK server on its dummy driver (real time, no kernel module), which
# PortAudio's JACK host API plays to. The tests start their own, under a name of their own.

JACK_SERVER_NAME = f"alpha2-test-{os.getpid()}"
os.environ["JACK_DEFAULT_SERVER"] = JACK_SERVER_NAME
os.environ.setdefault("JACK_NO_START_SERVER", "1")  # libjack must not start a server behind our back


def _jack_output_ready() -> bool:
    import sounddevice as sd

    # PortAudio lists host APIs when it initialises: re-initialise if it did before the server was up.
    for attempt in range(2):
        if any(api["name"].startswith("JACK") and api["devices"] for api in sd.query_hostapis()):
            return True
        if attempt == 0:
            sd._terminate()
            sd._initialize()
    return False


@pytest.fixture(scope="session")
def audio_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A running JACK server (dummy driver, 48 kHz, 256-frame periods) that sounddevice plays to."""
    import shutil
    import subprocess
    import time

    missing = None
    if shutil.which("jackd") is None:
        missing = "jackd is not installed (apt-get install jackd2)"
    else:
        try:
            import sounddevice  # noqa: F401
        except (ImportError, OSError) as exc:
            missing = (
                f"sounddevice unusable (pip install 'alpha2[audio]', apt-get install libportaudio2): {exc}"
            )
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must play sound: {missing}")
        pytest.skip(missing)
    log = tmp_path_factory.mktemp("jack") / "jackd.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["jackd", "-n", JACK_SERVER_NAME, "-r", "-d", "dummy", "-r", "48000", "-p", "256", "-C", "0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 15
        while not _jack_output_ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"jackd did not come up: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        yield JACK_SERVER_NAME
    finally:
        import sounddevice as sd

        sd._terminate()  # PortAudio's JACK host API asserts at exit if its server went away first
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
