"""The bound on every GPU wait in alpha2.native_gpu (fences, timeline semaphores, submission probes).

A wait that reaches the bound returns a timed-out result (or raises GpuTimeoutError where the caller
cannot go on); nothing in native_gpu waits on the GPU without it.
"""

from __future__ import annotations

import math
import threading

from alpha2.gpu.errors import InvalidInputError

DEFAULT_GPU_WAIT_TIMEOUT = 10.0
"""Seconds; the same as alpha2.gpu.sync.DEFAULT_WAIT_TIMEOUT."""

_lock = threading.Lock()
_timeout_s = DEFAULT_GPU_WAIT_TIMEOUT


def set_gpu_wait_timeout(seconds: float) -> float:
    """Bound every GPU wait in native_gpu to ``seconds`` (> 0, finite). Returns the previous bound.

    Raises:
        InvalidInputError: ``seconds`` is not a positive finite number.
    """
    global _timeout_s
    try:
        value = float(seconds)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"GPU wait timeout must be a number of seconds, got {seconds!r}") from exc
    if not math.isfinite(value) or value <= 0:
        raise InvalidInputError(f"GPU wait timeout must be positive and finite, got {seconds!r}")
    with _lock:
        previous, _timeout_s = _timeout_s, value
    return previous


def gpu_wait_timeout() -> float:
    """The current bound on GPU waits, in seconds."""
    return _timeout_s


def bounded_timeout(timeout_s: float | None) -> float:
    """A caller's timeout clamped to the global bound (None means the bound itself)."""
    limit = _timeout_s
    if timeout_s is None:
        return limit
    value = float(timeout_s)
    if math.isnan(value) or value < 0:
        raise InvalidInputError(f"timeout must be >= 0 seconds or None, got {timeout_s!r}")
    return min(value, limit)


def timeout_ns(timeout_s: float) -> int:
    """Seconds as the uint64 nanoseconds Vulkan waits take."""
    return max(0, min(int(timeout_s * 1e9), 0xFFFFFFFFFFFFFFFE))
