"""The encode copier's routes: which pass converts a frame and how the result reaches the encoder.

A route pairs a conversion (how the frame becomes NV12 / P010 on the GPU) with a delivery (where the
planes go). The routes, best first, are the rows of :data:`ROUTES`:

===============  ==========================================  ==============  =============================
route            conversion                                  delivery        when
===============  ==========================================  ==============  =============================
``planes_cuda``  planes pass: imported Y'CbCr planes scaled  CUDA frames     an encoder that takes CUDA
                 and converted in one compute pass                           frames (NVENC): not in this
                 (``encode_scale_yuv.wgsl``)                                 build, refused with why
``planes_cpu``   planes pass                                 read-back ring  bi-planar and tri-planar
                                                                             Y'CbCr planes (nv12, p010,
                                                                             yuv420p, yuv444p10 ...)
``rgba_cuda``    RGBA pass: the frame rendered to RGBA, then CUDA frames     as ``planes_cuda``
                 converted (``rgb_to_yuv.wgsl``)
``rgba_cpu``     RGBA pass                                   read-back ring  any format the renderer reads
                                                                             (gray, packed RGB ...)
===============  ==========================================  ==============  =============================

:func:`choose_encode_route` walks the table for a frame's pixel format, as the importer walks its
pairings: routes whose delivery does not apply (CUDA frames for an encoder that takes host memory only)
are skipped silently; every other route passed over is named, with its reason, in the choice, and the
copier counts those reasons per frame in its route report (a
:class:`~alpha2.native_gpu.paths.PathReport`). What the copier can write (:data:`OUTPUT_FORMATS`,
:data:`WRITABLE_MATRICES`, :data:`OUTPUT_CHROMA_LOCATIONS`) lives here too.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

from alpha2.gpu.colour import ChromaLocation, ColourMatrix, ColourRange
from alpha2.gpu.encoded import EncodeTarget
from alpha2.gpu.errors import UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.identity import ExecutionPath
from alpha2.native_gpu.paths import PathStatus
from alpha2.native_gpu.render.renderer import LayoutKind, layout_kind

__all__ = [
    "CUDA_DELIVERY_REFUSAL",
    "OUTPUT_CHROMA_LOCATIONS",
    "OUTPUT_FORMATS",
    "ROUTES",
    "WRITABLE_MATRICES",
    "EncodeConversion",
    "EncodeRoute",
    "EncodeRouteChoice",
    "RoutePairing",
    "choose_encode_route",
    "resolve_output",
    "route_pairing",
    "route_statuses",
]

OUTPUT_FORMATS: tuple[PixelFormat, ...] = (PixelFormat.NV12, PixelFormat.P010)
"""Pixel formats the copier writes."""

WRITABLE_MATRICES: tuple[ColourMatrix, ...] = (
    ColourMatrix.BT709,
    ColourMatrix.BT470BG,
    ColourMatrix.SMPTE170M,
    ColourMatrix.SMPTE240M,
    ColourMatrix.FCC,
    ColourMatrix.BT2020_NCL,
)
"""Y'CbCr matrices the copier writes (UNSPECIFIED is resolved to one of them)."""

OUTPUT_CHROMA_LOCATIONS: tuple[ChromaLocation, ...] = (ChromaLocation.LEFT, ChromaLocation.CENTER)
"""Chroma sitings the copier writes (UNSPECIFIED is resolved to LEFT)."""

CUDA_DELIVERY_REFUSAL = (
    "NVENC output as CUDA frames is not supported in this build (the CUDA hand-off through shared Vulkan "
    "memory is not implemented, and the H200 machines have no NVENC); use target='cpu' with a software "
    "encoder (libx264, libx265, libsvtav1)"
)
"""Why the CUDA-frame routes are refused."""


class EncodeConversion(enum.StrEnum):
    """How a frame becomes NV12 / P010 on the GPU."""

    PLANES = "planes"
    """The planes pass: imported Y'CbCr plane textures scaled and converted in one compute pass."""
    RGBA = "rgba"
    """The RGBA pass: a texture rendered to RGBA (by the sampling shader) converted by a compute pass."""


class EncodeRoute(enum.StrEnum):
    """One row of :data:`ROUTES`: a conversion paired with a delivery."""

    PLANES_CUDA = "planes_cuda"
    """Planes pass, CUDA frames for an encoder that takes them."""
    PLANES_CPU = "planes_cpu"
    """Planes pass, the CPU read-back ring."""
    RGBA_CUDA = "rgba_cuda"
    """RGBA pass, CUDA frames for an encoder that takes them."""
    RGBA_CPU = "rgba_cpu"
    """RGBA pass, the CPU read-back ring."""


@dataclass(frozen=True)
class RoutePairing:
    """What one route pairs, the path its frames report, and why this build refuses it (if it does)."""

    route: EncodeRoute
    """The route's name."""
    conversion: EncodeConversion
    """The compute pass that converts the frame."""
    target: EncodeTarget
    """Where the planes are delivered."""
    path: ExecutionPath
    """The execution path its frames report (CPU_DOWNLOAD for the read-back ring)."""
    built_refusal: str | None
    """Why this build does not have the route, or None when it does."""


ROUTES: tuple[RoutePairing, ...] = (
    RoutePairing(
        EncodeRoute.PLANES_CUDA,
        EncodeConversion.PLANES,
        EncodeTarget.CUDA,
        ExecutionPath.GPU_COPY,
        CUDA_DELIVERY_REFUSAL,
    ),
    RoutePairing(
        EncodeRoute.PLANES_CPU, EncodeConversion.PLANES, EncodeTarget.CPU, ExecutionPath.CPU_DOWNLOAD, None
    ),
    RoutePairing(
        EncodeRoute.RGBA_CUDA,
        EncodeConversion.RGBA,
        EncodeTarget.CUDA,
        ExecutionPath.GPU_COPY,
        CUDA_DELIVERY_REFUSAL,
    ),
    RoutePairing(
        EncodeRoute.RGBA_CPU, EncodeConversion.RGBA, EncodeTarget.CPU, ExecutionPath.CPU_DOWNLOAD, None
    ),
)
"""The routes, best first: the planes pass before the RGBA pass, CUDA frames before the read-back ring."""

_BY_PAIR = {(row.conversion, row.target): row for row in ROUTES}
_BY_ROUTE = {row.route: row for row in ROUTES}


def route_pairing(conversion: EncodeConversion, target: EncodeTarget) -> RoutePairing:
    """The row that pairs ``conversion`` with ``target``."""
    return _BY_PAIR[(EncodeConversion(conversion), EncodeTarget(target))]


def _conversion_refusal(conversion: EncodeConversion, source_format: PixelFormat) -> str | None:
    """Why ``conversion`` cannot read frames of ``source_format``, or None."""
    try:
        kind = layout_kind(source_format)
    except UnsupportedError as exc:
        return f"the renderer cannot read {source_format.ffmpeg_name}: {exc}"
    if conversion is EncodeConversion.PLANES and kind not in (LayoutKind.BIPLANAR, LayoutKind.TRIPLANAR):
        return (
            "the planes pass reads bi-planar (nv12, p010 ...) and tri-planar (yuv420p, yuv444p10 ...) "
            f"Y'CbCr planes, not {source_format.ffmpeg_name}"
        )
    return None


@dataclass(frozen=True)
class EncodeRouteChoice:
    """The route a frame takes, and why the better ones were passed over."""

    pairing: RoutePairing
    """The route taken."""
    reason: str | None
    """The routes passed over with their reasons (a fallback), or None when it is the best that applies."""

    @property
    def route(self) -> EncodeRoute:
        """The route's name."""
        return self.pairing.route


@functools.cache
def choose_encode_route(
    source_format: PixelFormat,
    *,
    encoder_takes_cuda: bool = False,
    require: EncodeRoute | None = None,
) -> EncodeRouteChoice:
    """The first route in :data:`ROUTES` that takes frames of ``source_format`` to this encoder.

    Args:
        source_format: the pixel format of the imported planes.
        encoder_takes_cuda: whether the encoder takes CUDA frames (NVENC); when it does not, the CUDA
            routes do not apply and are skipped without a reason.
        require: the only route allowed; one that cannot be had raises instead of falling back.

    Raises:
        UnsupportedError: no route takes the format, or ``require`` cannot be had; the message names each
            route with its reason.
    """
    if require is not None:
        row = _BY_ROUTE[EncodeRoute(require)]
        reason = _refusal(row, source_format, encoder_takes_cuda)
        if reason is not None:
            raise UnsupportedError(f"encode route {row.route.value} was required but cannot be had: {reason}")
        return EncodeRouteChoice(row, None)
    skipped: list[str] = []
    for row in ROUTES:
        if row.target is EncodeTarget.CUDA and not encoder_takes_cuda:
            continue  # host memory is what the encoder takes: not a fallback
        reason = _refusal(row, source_format, encoder_takes_cuda)
        if reason is None:
            return EncodeRouteChoice(row, "; ".join(skipped) if skipped else None)
        skipped.append(f"{row.route.value} refused: {reason}")
    raise UnsupportedError(f"no encode route takes {source_format.ffmpeg_name} frames: " + "; ".join(skipped))


def _refusal(row: RoutePairing, source_format: PixelFormat, encoder_takes_cuda: bool) -> str | None:
    """Why ``row`` cannot take frames of ``source_format`` to this encoder, or None."""
    if row.target is EncodeTarget.CUDA and not encoder_takes_cuda:
        return "the encoder takes frames in host memory, not CUDA frames"
    if row.built_refusal is not None:
        return row.built_refusal
    return _conversion_refusal(row.conversion, source_format)


def route_statuses() -> tuple[PathStatus[EncodeRoute], ...]:
    """Every route of :data:`ROUTES`, best first, with this build's refusal reasons."""
    return tuple(PathStatus(row.route, row.built_refusal is None, row.built_refusal) for row in ROUTES)


def resolve_output(
    pixel_format: PixelFormat,
    matrix: ColourMatrix,
    colour_range: ColourRange,
    chroma_location: ChromaLocation,
    height: int,
) -> tuple[ColourMatrix, ColourRange, ChromaLocation]:
    """The output colour the copier writes, UNSPECIFIED tags resolved (as FFmpeg does).

    Raises:
        UnsupportedError: a pixel format, matrix or siting the copier cannot write; the message names those
            it can.
    """
    if pixel_format not in OUTPUT_FORMATS:
        names = ", ".join(f.name for f in OUTPUT_FORMATS)
        raise UnsupportedError(f"EncodeCopier writes {names}, not {pixel_format.name}")
    if matrix is ColourMatrix.UNSPECIFIED:
        matrix = ColourMatrix.BT709 if height > 576 else ColourMatrix.BT470BG
    if matrix not in WRITABLE_MATRICES:
        names = ", ".join(m.name for m in WRITABLE_MATRICES)
        raise UnsupportedError(f"EncodeCopier cannot write matrix {matrix.name}; use {names}")
    if colour_range is ColourRange.UNSPECIFIED:
        colour_range = ColourRange.LIMITED
    if chroma_location is ChromaLocation.UNSPECIFIED:
        chroma_location = ChromaLocation.LEFT
    if chroma_location not in OUTPUT_CHROMA_LOCATIONS:
        raise UnsupportedError(f"EncodeCopier writes chroma sited LEFT or CENTER, not {chroma_location.name}")
    return matrix, colour_range, chroma_location
