"""Which way ``alpha2 transcode`` scales and converts: on the GPU, or with swscale on a CPU device.

On a CPU Vulkan device (lavapipe) the sampling shader runs on the same cores as the decoder and the
encoder, and device and pipeline set-up alone costs about a second: FFmpeg's swscale
(:mod:`alpha2.ffmpeg_bridge.scale`) is the faster route there. :func:`choose_scale_route` decides from
the first frame, the plan and the GPU at hand, without making a WebGPU device; the reason is reported.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from alpha2.gpu.adapters import AdapterType, adapter_pin, resolve_adapter_pin
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.identity import ExecutionPath

__all__ = ["ScaleRoute", "ScaleRouteKind", "choose_scale_route", "cpu_device_reason", "run_swscale"]


class ScaleRouteKind(enum.Enum):
    """How frames are scaled and converted."""

    GPU = "gpu"
    """Imported into the WebGPU device and converted by the encode copier (or the sampling shader)."""
    SWSCALE = "swscale"
    """On the CPU by FFmpeg's swscale; no GPU device is made."""


@dataclass(frozen=True)
class ScaleRoute:
    """The route taken, and why."""

    kind: ScaleRouteKind
    """GPU or swscale."""
    reason: str
    """Why this route."""

    @property
    def path(self) -> ExecutionPath | None:
        """The ExecutionPath its frames report (swscale: SOFTWARE; the GPU route: the importer's)."""
        return ExecutionPath.SOFTWARE if self.kind is ScaleRouteKind.SWSCALE else None

    def as_dict(self) -> dict[str, str | None]:
        """For JSON stats."""
        path = self.path
        return {"route": self.kind.value, "path": None if path is None else path.value, "reason": self.reason}


def _vulkan_candidates() -> Sequence[Any]:
    from alpha2.native_gpu.device.candidates import vulkan_candidates

    return [c for c in vulkan_candidates() if c.usable]


def cpu_device_reason(
    device: Any = None, candidates: Callable[[], Sequence[Any]] | None = None
) -> str | None:
    """Why the GPU alpha2 would work on is a CPU device (None: it is a GPU, or unknown).

    Args:
        device: the alpha2 Device already made (its Vulkan candidate's type decides); None: decided
            without making one: first from the GPU device nodes (no Vulkan call,
            :func:`~alpha2.native_gpu.device.cpu_only.cpu_only_reason`), else from the usable Vulkan
            candidates (ALPHA2_GPU_ADAPTER honoured): CPU when none is a GPU.
        candidates: where the candidates come from (for tests; given, the device nodes are not looked at).

    Raises:
        AdapterPinError: ``ALPHA2_GPU_ADAPTER`` names no adapter (the CPU route makes no device that
            would say so).
    """
    if device is not None:
        candidate = device.vulkan_candidate
        if candidate is not None and candidate.device_type is AdapterType.CPU:
            return f"the device {candidate.name!r} is a CPU Vulkan device"
        return None
    pin = adapter_pin()
    if candidates is None:
        from alpha2.native_gpu.device.cpu_only import cpu_only_reason

        # A pin is checked against the adapters even where the device nodes say CPU: the CPU route makes
        # no device, so a pin naming none was ignored there (exit 0 on swscale, not a word), where the
        # docs promise an error, never a silent fallback (an outside pass).
        cheap = cpu_only_reason() if pin is None else None
        if cheap is not None:
            return cheap
        candidates = _vulkan_candidates
    try:
        found = list(candidates())
    except Exception:  # no Vulkan loader: the GPU route would fail to find a device anyway
        return None
    if pin is not None:
        # AdapterPinError (an InvalidInputError) where the pin names none: said, as the GPU route says it.
        found = list(resolve_adapter_pin(pin, found)) or found
    if found and all(c.device_type is AdapterType.CPU for c in found):
        names = ", ".join(sorted({c.name for c in found}))
        return f"the only Vulkan device is a CPU one ({names})"
    return None


def choose_scale_route(
    *,
    on_gpu: bool,
    forced_gpu: bool,
    unsupported: str | None,
    device: Any = None,
    candidates: Callable[[], Sequence[Any]] | None = None,
) -> ScaleRoute:
    """The route for a transcode that processes frames (not a passthrough).

    Args:
        on_gpu: the frames are NVDEC frames (on a GPU: the GPU route).
        forced_gpu: ``--gpu`` asked for the GPU.
        unsupported: why swscale cannot do the plan's conversion (None: it can).
        device: the Device already made, if any.
        candidates: the Vulkan candidates (for tests).
    """
    if on_gpu:
        return ScaleRoute(ScaleRouteKind.GPU, "the frames are on the GPU (NVDEC)")
    if forced_gpu:
        return ScaleRoute(ScaleRouteKind.GPU, "--gpu asks for the GPU")
    cpu = cpu_device_reason(device, candidates)
    if cpu is None:
        return ScaleRoute(ScaleRouteKind.GPU, "a GPU device is at hand")
    if unsupported is not None:
        return ScaleRoute(ScaleRouteKind.GPU, f"{cpu}, but {unsupported}")
    return ScaleRoute(
        ScaleRouteKind.SWSCALE,
        f"{cpu}: swscale on the CPU is faster there than the sampling shader and needs no device set-up",
    )


def run_swscale(transcoder: Any, first: DecodedFrame, plan: Any) -> None:
    """The transcoder's loop on the swscale route: decode, scale and convert on the CPU, encode."""
    import time

    from alpha2.ffmpeg_bridge.scale import FrameScaler

    decoder, session, stats = transcoder.decoder, transcoder.session, transcoder.stats
    add = stats.stages.add
    clock = time.perf_counter
    scale_frame = FrameScaler(plan.output_size, plan.output_format, plan.output_colour)
    note = f"swscale {plan.output_size.width}x{plan.output_size.height} {plan.output_format.ffmpeg_name}"
    frame: DecodedFrame | None = first
    while frame is not None:
        if transcoder._limit_reached():
            frame.release()
            break
        t0 = clock()
        try:
            slots = transcoder._frame_pts(frame)  # more than one: --fps repeats the frame
            scaled = scale_frame(frame)
        finally:
            frame.release()
        t1 = clock()
        try:
            for pts in slots:
                session.encode(scaled, pts=pts, duration=transcoder._durations.pop(pts, None))
        finally:
            scaled.release()
        t2 = clock()
        size = plan.output_size
        for _ in slots:
            stats.paths.add(ExecutionPath.SOFTWARE, size.width * size.height, note=note)
        stats.frames += len(slots)
        transcoder.progress.update(stats.frames)
        frame = decoder.next_frame()
        add("scale", t1 - t0)
        add("encode", t2 - t1)
        add("decode", clock() - t2)
