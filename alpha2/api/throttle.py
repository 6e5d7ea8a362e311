"""Bounds the frames queued on a device without waiting for each: the player's and the wall's throttle."""

from __future__ import annotations

from typing import Any

from alpha2.gpu.webgpu import WebGpuDevice

__all__ = ["SubmitThrottle"]


class SubmitThrottle:
    """Before reusing one of ``depth`` tiny read-back buffers, wait (map) until the GPU has finished the
    frame that last used it. Each frame's mark copies one texel of its texture into the next buffer.
    Nothing is created per frame."""

    def __init__(
        self, device: WebGpuDevice, gpu: Any, depth: int = 2, label: str = "alpha2 throttle"
    ) -> None:
        self._device = device
        self._gpu = gpu
        self._label = label
        usage = gpu.BufferUsage.COPY_DST | gpu.BufferUsage.MAP_READ
        self._buffers = [device.create_buffer(label=label, size=256, usage=usage) for _ in range(depth)]
        self._used = [False] * depth
        self._index = 0

    def _settle(self, slot: int) -> None:
        if self._used[slot]:
            buffer = self._buffers[slot]
            buffer.map_sync(self._gpu.MapMode.READ)
            buffer.unmap()
            self._used[slot] = False

    def encode(self, encoder: Any, texture: Any) -> None:
        """Wait for the next buffer's last frame, then record this frame's mark on ``encoder``."""
        slot = self._index
        self._index = (slot + 1) % len(self._buffers)
        self._settle(slot)
        encoder.copy_texture_to_buffer(
            {"texture": texture, "mip_level": 0, "origin": (0, 0, 0)},
            {"buffer": self._buffers[slot], "offset": 0, "bytes_per_row": 256, "rows_per_image": 1},
            (1, 1, 1),
        )
        self._used[slot] = True

    def mark(self, texture: Any) -> None:
        """:meth:`encode` in a command buffer of its own, submitted after the work already submitted."""
        encoder = self._device.create_command_encoder(label=self._label)
        self.encode(encoder, texture)
        self._device.queue.submit([encoder.finish()])

    def drain(self) -> None:
        """Wait for every frame marked."""
        for slot in range(len(self._buffers)):
            self._settle(slot)

    def close(self) -> None:
        for buffer in self._buffers:
            buffer.destroy()
        self._buffers = []
