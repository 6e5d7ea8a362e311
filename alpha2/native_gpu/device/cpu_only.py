"""A cheap answer to "can the device at hand only be a CPU one?", from the GPU device nodes alone.

Enumerating the Vulkan candidates (loading the loader's bindings, creating an instance, querying every
capability) takes 0.1-0.2 s on an idle 2-core machine and up to 2 s under load; the swscale routes of
``alpha2 transcode`` and ``alpha2 play --snapshot`` only need to know whether any GPU could be reached.
On Linux every GPU driver (Mesa's DRM drivers, NVIDIA's, WSL's D3D12 bridge, the Android ones) talks to
the hardware through a device node under ``/dev``; with none of them present, whatever Vulkan or WebGPU
adapter exists is a software one (lavapipe, llvmpipe, SwiftShader). With any present, this says nothing
and the caller asks Vulkan. No Vulkan call is made here and nothing is cached.
"""

from __future__ import annotations

import os
import sys

__all__ = ["GPU_NODE_PREFIXES", "cpu_only_reason", "gpu_device_nodes"]

GPU_NODE_PREFIXES: tuple[str, ...] = ("dri", "nvidia", "dxg", "kgsl", "mali")
"""Names under ``/dev`` through which a GPU driver reaches its hardware (``dri``: a folder)."""


def gpu_device_nodes(dev_root: str = "/dev") -> list[str]:
    """The GPU device nodes under ``dev_root`` (``/dev/dri/*`` entries, ``/dev/nvidia0``, ...), sorted."""
    try:
        names = os.listdir(dev_root)
    except OSError:
        return []
    found = []
    for name in names:
        if not name.startswith(GPU_NODE_PREFIXES):
            continue
        path = os.path.join(dev_root, name)
        if name == "dri":
            try:
                found += [os.path.join(path, entry) for entry in os.listdir(path)]
            except OSError:
                continue
        else:
            found.append(path)
    return sorted(found)


def cpu_only_reason(dev_root: str = "/dev", platform: str | None = None) -> str | None:
    """Why only a CPU (software) device can be at hand here, or None when a GPU might be (ask Vulkan).

    Args:
        dev_root: where the device nodes are (for tests).
        platform: ``sys.platform`` (for tests); only Linux is decided here.
    """
    if not (sys.platform if platform is None else platform).startswith("linux"):
        return None
    if not os.path.isdir(dev_root) or gpu_device_nodes(dev_root):
        return None
    return f"no GPU device node under {dev_root} (dri, nvidia*, dxg): only a CPU Vulkan device can be at hand"
