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
from alpha2.gpu.geometry import *  # noqa: F403
from alpha2.gpu.handles import *  # noqa: F403
from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata, MasteringDisplay
from alpha2.gpu.identity import BackendKind, DeviceId, ExecutionPath
from alpha2.gpu.primaries import Chromaticities, primaries_conversion
from alpha2.gpu.sync import *  # noqa: F403
from alpha2.gpu.tonemap import GamutMapping, ToneCurve, ToneMode
from alpha2.gpu.transfer import TransferCurve

__all__ = [
    *budget.__all__,
    *colour.__all__,
    *formats.__all__,
    *geometry.__all__,
    *handles.__all__,
    *sync.__all__,
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
]
