"""Living beside other CUDA libraries: PyTorch, CuPy and PyNvVideoCodec make the device's primary
context active with their own flags, which FFmpeg's way of opening its CUDA device refuses.

FFmpeg retains the primary context and insists on ``CU_CTX_SCHED_BLOCKING_SYNC``; when another library
already activated it with other flags, ``av_hwdevice_ctx_create`` fails with "Operation not supported".
FFmpeg can instead take the context current on the opening thread (its ``current_ctx`` option, with
``primary_ctx=0``): :func:`join_primary_context` makes the primary context current here, so the decoder
shares the very context the other library uses (its tensors and alpha2's planes are then one memory space).
"""

from __future__ import annotations

from alpha2.native_gpu._cuda.core import check, cuda_init
from alpha2.native_gpu._cuda.interop import primary_context

__all__ = ["join_primary_context", "primary_context_taken"]

_CU_CTX_SCHED_MASK = 0x7
_CU_CTX_SCHED_BLOCKING_SYNC = 0x4


def primary_context_taken(ordinal: int) -> bool:
    """Whether ``ordinal``'s primary context is active with scheduling flags FFmpeg refuses (another
    library made it first)."""
    cu = cuda_init()
    device = check(cu.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
    flags, active = check(cu.cuDevicePrimaryCtxGetState(device), "cuDevicePrimaryCtxGetState")
    return bool(active) and (int(flags) & _CU_CTX_SCHED_MASK) != _CU_CTX_SCHED_BLOCKING_SYNC


def join_primary_context(ordinal: int) -> None:
    """Make ``ordinal``'s primary context current on this thread (retained for the process's life, as
    alpha2's GPU copy retains it), so that a decoder opened next on this thread joins it."""
    ctx = primary_context(ordinal)
    check(cuda_init().cuCtxSetCurrent(ctx.handle), "cuCtxSetCurrent")
