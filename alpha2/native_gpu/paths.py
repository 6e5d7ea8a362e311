"""One report of the ways a stage can take, the ways its frames took, and why they fell back.

The importer's paths (:attr:`FrameImporter.path_report
<alpha2.native_gpu.interop.importer.FrameImporter.path_report>`, keyed by
:class:`~alpha2.gpu.identity.ExecutionPath`) and the encode copier's routes
(:attr:`EncodeCopier.route_report <alpha2.native_gpu.encode.copier.EncodeCopier.route_report>`, keyed by
:class:`~alpha2.native_gpu.encode.routes.EncodeRoute`) are both a :class:`PathReport`: a fallback is
counted with its reason, never silent, and the bytes that crossed the CPU are summed.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from alpha2.gpu.webgpu import WebGpuImplementation

__all__ = ["PathReport", "PathStatus"]

P = TypeVar("P", bound=enum.Enum)


@dataclass(frozen=True)
class PathStatus(Generic[P]):
    """Whether one path (an import pairing, an encode route) can be taken, and why not."""

    path: P
    """The path (an ``ExecutionPath`` or an ``EncodeRoute``)."""
    available: bool
    """Whether it can be taken (so far: it may still fail when first set up, or a frame's format may
    rule it out, which that frame's fallback then says)."""
    reason: str | None
    """Why not, when not."""
    name: str = ""
    """The import pairing's short name; empty for an encode route."""


@dataclass(frozen=True)
class PathReport(Generic[P]):
    """What paths a stage has, which ones its frames took, every fallback with its reason, CPU bytes."""

    what: str
    """The stage, in words (``"importer"``, ``"encode copier"``)."""
    noun: str
    """What its paths are called (``"paths"``, ``"routes"``): the heading's word, the dict's key."""
    paths: tuple[PathStatus[P], ...]
    """Each path, best first."""
    frames_by_path: dict[P, int] = field(default_factory=dict)
    """Frames per path taken."""
    fallbacks: dict[str, int] = field(default_factory=dict)
    """Fallback reasons and how many frames each covered."""
    bytes_crossed_cpu: int = 0
    """Pixel bytes that passed through host memory, over all frames (the encode copier's read-back:
    padded rows included)."""
    implementation: WebGpuImplementation | None = None
    """The WebGPU implementation of the device the paths are into (the importer's)."""
    adapter_name: str = ""
    """That device's adapter, for messages."""

    @property
    def fallback_count(self) -> int:
        """Frames that did not take the best path."""
        return sum(self.fallbacks.values())

    def summary(self) -> str:
        """One line per path and fallback, for logs and command-line output."""
        heading = f"{self.what} {self.noun}"
        if self.implementation is not None:
            heading += f" on {self.implementation.value} ({self.adapter_name or 'unknown adapter'})"
        lines = [f"{heading}:"]
        for status in self.paths:
            state = "available" if status.available else f"unavailable: {status.reason}"
            label = (
                f"{status.path.value:<12} {status.name:<10}" if status.name else f"{status.path.value:<12}"
            )
            lines.append(f"  {label} {state}")
        for path, count in self.frames_by_path.items():
            lines.append(f"  frames via {path.value}: {count}")
        for reason, count in self.fallbacks.items():
            lines.append(f"  fallback x{count}: {reason}")
        lines.append(f"  bytes through the CPU: {self.bytes_crossed_cpu}")
        return "\n".join(lines)

    @classmethod
    def summed(cls, reports: Sequence[PathReport[P]]) -> PathReport[P]:
        """One report of several runs of the same stage (a segmented transcode's segments): their frames
        per path, fallbacks and CPU bytes added up; the paths and the device as the first one says them
        (where they differ, the caller says each run's).

        Raises:
            ValueError: no reports.
        """
        if not reports:
            raise ValueError("no reports to sum")
        frames: dict[P, int] = {}
        fallbacks: dict[str, int] = {}
        for report in reports:
            for path, count in report.frames_by_path.items():
                frames[path] = frames.get(path, 0) + count
            for reason, count in report.fallbacks.items():
                fallbacks[reason] = fallbacks.get(reason, 0) + count
        first = reports[0]
        return dataclasses.replace(
            first,
            frames_by_path=frames,
            fallbacks=fallbacks,
            bytes_crossed_cpu=sum(r.bytes_crossed_cpu for r in reports),
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            self.noun: {s.path.value: {"available": s.available, "reason": s.reason} for s in self.paths},
            "frames": {path.value: count for path, count in self.frames_by_path.items()},
            "fallbacks": dict(self.fallbacks),
            "bytes_crossed_cpu": self.bytes_crossed_cpu,
        }
