"""alpha2.gpu: the vocabulary for passing GPU resources between libraries.

Pure Python + numpy: importable on a machine with no GPU and no Vulkan loader.

- formats: ``PixelFormat``, ``PlaneFormat``, ``PlaneLayout`` (plane layouts, bit depths, ordinals)
- colour: matrices, primaries, transfer, range, siting; exact YUV<->RGB transforms
- transfer, primaries, tonemap, colour_manage: transfer curves, primaries conversion, tone and gamut
  mapping, and the whole colour-management chain as a numpy reference
- hdr: HDR static metadata (mastering display, content light level)
- geometry: sizes, rectangles, rotation, frame metadata
- handles: validated native handles (``GpuResource`` variants alpha2 produces or accepts), owned fds;
  re-exports platform_handles (other platforms' variants) and contexts (contexts and queues)
- sync: ``SyncPoint`` with blocking, timeout-bounded and async waits; the one ``WaiterThread``
- budget: ``MemoryBudget`` with caps, reservations and pressure events
- identity: ``BackendKind``, ``DeviceId``, ``ExecutionPath``
- errors: ``Error`` with a ``kind`` and its subclasses
- adapters: adapter ranking and ``ALPHA2_GPU_ADAPTER`` pinning
"""

from alpha2.gpu import (
    adapters,
    budget,
    colour,
    colour_manage,
    contexts,
    errors,
    formats,
    geometry,
    handles,
    hdr,
    identity,
    platform_handles,
    primaries,
    sync,
    tonemap,
    transfer,
    webgpu,
)
from alpha2.gpu.budget import *  # noqa: F403
from alpha2.gpu.colour import *  # noqa: F403
from alpha2.gpu.colour_manage import ColourOptions, ColourPlan, ColourTarget, plan_colour
from alpha2.gpu.errors import (
    BudgetExceededError,
    ClosedError,
    DeviceLostError,
    Error,
    ErrorKind,
    GpuTimeoutError,
    InternalError,
    InvalidHandleError,
    InvalidInputError,
    OutOfMemoryError,
    UnknownFormatError,
    UnsupportedError,
)
from alpha2.gpu.formats import *  # noqa: F403
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import *  # noqa: F403
from alpha2.gpu.handles import *  # noqa: F403
from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata, MasteringDisplay
from alpha2.gpu.identity import BackendKind, DeviceId, ExecutionPath
from alpha2.gpu.primaries import Chromaticities, primaries_conversion
from alpha2.gpu.surfaces import (
    SurfaceBudget,
    SurfaceBudgetError,
    SurfaceBudgetPolicy,
    SurfaceIdentity,
    SurfaceReservation,
    SurfaceUsage,
)
from alpha2.gpu.sync import *  # noqa: F403
from alpha2.gpu.tonemap import GamutMapping, ToneCurve, ToneMode
from alpha2.gpu.transfer import TransferCurve
from alpha2.gpu.webgpu import WebGpuDeviceInfo, WebGpuImplementation

# Reachable here and in their modules, but not what a user needs to pass resources between libraries:
# tuning constants, callback aliases, validation helpers, and the other platforms' handle variants
# (alpha2.gpu.platform_handles lists those).
_NOT_LISTED = frozenset(
    {
        "CU_STREAM_LEGACY",
        "CU_STREAM_PER_THREAD",
        "DEFAULT_WAIT_TIMEOUT",
        "DRM_FORMAT_MOD_INVALID",
        "DRM_FORMAT_MOD_LINEAR",
        "EVICTION_ROUNDS",
        "EvictCallback",
        "EvictableRegistration",
        "FdLike",
        "PressureCallback",
        "SPIN_S",
        "SUPPORTED_MATRICES",
        "WAITER_SLICE_S",
        "WaitCallback",
        "WaitTicket",
        "vk_make_api_version",
        *platform_handles.__all__,
    }
)

__all__ = [
    *(
        name
        for module in (budget, colour, formats, geometry, handles, sync)
        for name in module.__all__
        if name not in _NOT_LISTED
    ),
    "DecodedFrame",
    "SurfaceBudget",
    "SurfaceBudgetError",
    "SurfaceBudgetPolicy",
    "SurfaceIdentity",
    "SurfaceReservation",
    "SurfaceUsage",
    "WebGpuDeviceInfo",
    "WebGpuImplementation",
    "BudgetExceededError",
    "ClosedError",
    "DeviceLostError",
    "Error",
    "ErrorKind",
    "GpuTimeoutError",
    "InternalError",
    "InvalidHandleError",
    "InvalidInputError",
    "OutOfMemoryError",
    "UnknownFormatError",
    "UnsupportedError",
    "Chromaticities",
    "ColourOptions",
    "ColourPlan",
    "ColourTarget",
    "ContentLightLevel",
    "GamutMapping",
    "HdrMetadata",
    "MasteringDisplay",
    "ToneCurve",
    "ToneMode",
    "TransferCurve",
    "plan_colour",
    "primaries_conversion",
    "BackendKind",
    "DeviceId",
    "ExecutionPath",
    "adapters",
    "budget",
    "colour",
    "colour_manage",
    "contexts",
    "errors",
    "formats",
    "geometry",
    "handles",
    "hdr",
    "identity",
    "platform_handles",
    "primaries",
    "sync",
    "tonemap",
    "transfer",
    "webgpu",
]
