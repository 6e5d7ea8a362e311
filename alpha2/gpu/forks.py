"""What a process made and a fork of it copied: kept in the fork, never freed there.

A source, writer, encoder session or stream group made before ``os.fork`` is copied into the child
without the threads it waits on (decoders, the GPU device's poller) and with the other process's partial
output: freeing it in the child waits forever in FFmpeg's codec context or the GPU's, or removes a file
the first process is still writing. Each such copy refuses work in the child (its own ``ClosedError``)
and is handed to :func:`keep_in_fork` instead of being freed.
"""

from __future__ import annotations

__all__ = ["keep_in_fork"]

_KEPT: list[object] = []


def keep_in_fork(copy: object) -> None:
    """Keep ``copy`` (what the process this one was forked from made) alive for this process's life, so
    that nothing of it is freed here. Idempotent."""
    if not any(kept is copy for kept in _KEPT):
        _KEPT.append(copy)
