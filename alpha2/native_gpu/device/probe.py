"""Submission probe: can the shared device move an NV12-like plane pair through the layouts an import uses?

:func:`probe_vulkan_submission` makes an R8 W×H image and an RG8 W/2×H/2 image (the portable NV12 plane
pair), image views over them as an import makes, and one command buffer that moves both from UNDEFINED
to SHADER_READ_ONLY_OPTIMAL and back to GENERAL (or TRANSFER_DST_OPTIMAL). It submits once on the chosen
queue under that queue's lock and waits on a fence with a bounded timeout. The result says whether it
worked and how long it took; a timeout is a result, never a hang, and never an exception.

Every GPU wait in alpha2.native_gpu is bounded by :func:`set_gpu_wait_timeout` (re-exported here).
The Vulkan work is :class:`alpha2.native_gpu._vk.commands.CommandBatch`'s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from alpha2.gpu.errors import Error, InvalidInputError
from alpha2.gpu.sync import WaitStatus
from alpha2.native_gpu._vk.commands import Access, CommandBatch, ImageFormat, ImageLayout
from alpha2.native_gpu._vk.core import VK_TIMEOUT, result_name
from alpha2.native_gpu.device.shared import QueueRole, SharedVulkanContext
from alpha2.native_gpu.device.waits import bounded_timeout, gpu_wait_timeout, set_gpu_wait_timeout, timeout_ns

__all__ = [
    "SubmissionProbeResult",
    "gpu_wait_timeout",
    "probe_vulkan_submission",
    "set_gpu_wait_timeout",
]


@dataclass(frozen=True)
class SubmissionProbeResult:
    """What the submission probe found."""

    ok: bool
    """The submission completed within the timeout."""
    elapsed_s: float
    """Wall time of the whole probe (creation, recording, submission, wait, clean-up)."""
    wait_s: float
    """Time spent waiting on the fence."""
    queue_family: int
    """Queue family submitted to."""
    queue_index: int
    """Queue index submitted to."""
    width: int
    """Luma width."""
    height: int
    """Luma height."""
    final_layout: str
    """'general' or 'transfer'."""
    synchronization2: bool
    """Whether the barriers were recorded with vkCmdPipelineBarrier2."""
    timed_out: bool = False
    """The fence wait ran out (the objects are destroyed when the context closes)."""
    reason: str | None = None
    """Why it failed, or None."""
    vk_result: int | None = None
    """The failing VkResult, where one failed."""

    def __bool__(self) -> bool:
        return self.ok


def probe_vulkan_submission(
    context: SharedVulkanContext,
    *,
    width: int = 64,
    height: int = 64,
    role: QueueRole = QueueRole.GRAPHICS,
    final_layout: str = "general",
    timeout_s: float | None = None,
    wait_timeline: tuple[Any, int] | None = None,
) -> SubmissionProbeResult:
    """Move an R8 W×H + RG8 W/2×H/2 pair to SHADER_READ_ONLY_OPTIMAL and back in one bounded submission.

    Args:
        context: the shared device.
        width, height: luma size (even, >= 2).
        role: which of the context's queues to submit on.
        final_layout: 'general' or 'transfer' (TRANSFER_DST_OPTIMAL).
        timeout_s: fence wait bound (None: :func:`gpu_wait_timeout`; never more than it).
        wait_timeline: (VulkanTimelineSemaphore, value) the submission waits on first, to check a
            stalled queue is reported as a timeout (signal it before closing the context).

    Returns:
        A :class:`SubmissionProbeResult`; failures and timeouts are results, not exceptions.

    Raises:
        InvalidInputError: bad size, layout, or a role the context has no queue for.
        ClosedError: the context is closed.
    """
    if width < 2 or height < 2 or width % 2 or height % 2:
        raise InvalidInputError(f"width and height must be even and >= 2, got {width}x{height}")
    layouts = {"general": ImageLayout.GENERAL, "transfer": ImageLayout.TRANSFER_DST}
    if final_layout not in layouts:
        raise InvalidInputError(f"final_layout must be one of {sorted(layouts)}, got {final_layout!r}")
    queue_info = context.queue_for(role)
    if queue_info is None:
        roles = [q.role.value for q in context.queues if q.role]
        raise InvalidInputError(f"the shared device has no {role.value} queue; it has {roles}")
    wait_bound = bounded_timeout(timeout_s)
    state = context._internal
    sync2 = "synchronization2" in context.enabled_features
    family, index = queue_info.queue_family_index, queue_info.queue_index
    start = time.monotonic()
    batch = CommandBatch(state, family)
    wait_s = 0.0

    def result(ok: bool, reason: str | None = None, **extra: Any) -> SubmissionProbeResult:
        return SubmissionProbeResult(
            ok=ok,
            elapsed_s=time.monotonic() - start,
            wait_s=wait_s,
            queue_family=family,
            queue_index=index,
            width=width,
            height=height,
            final_layout=final_layout,
            synchronization2=sync2,
            reason=reason,
            **extra,
        )

    deferred = False
    try:
        batch.add_image(ImageFormat.R8_UNORM, width, height)
        batch.add_image(ImageFormat.R8G8_UNORM, width // 2, height // 2)
        batch.begin()
        sampled_access = (
            Access.SHADER_READ
            if queue_info.queue_flags & 0x3  # VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT
            else Access.TRANSFER_READ
        )
        batch.barrier(
            ImageLayout.UNDEFINED,
            ImageLayout.SHADER_READ_ONLY,
            Access.NONE,
            sampled_access,
            synchronization2=sync2,
        )
        batch.barrier(
            ImageLayout.SHADER_READ_ONLY,
            layouts[final_layout],
            sampled_access,
            Access.TRANSFER_WRITE,
            synchronization2=sync2,
        )
        batch.end()
        timeline = None
        if wait_timeline is not None:
            semaphore, value = wait_timeline
            timeline = (getattr(semaphore, "handle", semaphore), int(value))
        with context.queue_lock(family, index):
            batch.submit(state.queue(family, index), wait_timeline=timeline)
        wait_start = time.monotonic()
        waited = batch.wait(timeout_ns(wait_bound))
        wait_s = time.monotonic() - wait_start
        if waited.status is WaitStatus.TIMED_OUT:
            # The GPU may still use these objects: destroy them when the context closes, after idle.
            state.defer_destroy(batch.destroy)
            deferred = True
            return result(
                False,
                f"the submission did not complete within {wait_bound:g} s (VK_TIMEOUT)",
                timed_out=True,
                vk_result=VK_TIMEOUT,
            )
        if waited.status is not WaitStatus.SIGNALED:
            state.defer_destroy(batch.destroy)
            deferred = True
            return result(
                False, f"vkWaitForFences failed: {result_name(waited.vk_result)}", vk_result=waited.vk_result
            )
        return result(True)
    except Error as exc:
        return result(False, exc.message, vk_result=getattr(exc, "vk_result", None))
    finally:
        if not deferred:
            batch.destroy()
