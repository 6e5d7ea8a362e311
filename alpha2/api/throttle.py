"""Bounds the frames queued on a device without waiting for each: the player's and the wall's throttle."""

from __future__ import annotations

from typing import Any

from alpha2.gpu.webgpu import WebGpuDevice, polled

__all__ = ["SubmitThrottle"]


class SubmitThrottle:
    """At most ``depth`` frames in flight: before reusing one of ``depth`` tiny buffers, wait until the
    GPU has finished the frame that last used it. Nothing is created per frame.

    Each frame's mark copies its buffer (4 bytes) in the frame's own submit (or one right after it), and
    the buffer's map is asked for as soon as that submit is made, so the wait for it is the GPU's own
    completion of that frame, seen by the device's poll thread while this thread decodes and uploads the
    next frames.
    The mark touches only its buffer, never the frame's texture: lavapipe runs a copy out of a texture on
    the submitting thread, which then waits for the texture's rendering first (a copy of one texel was
    half the offscreen player's time on two cores). A map asked for only when the buffer is needed again
    would be no better: wgpu-native's blocking poll waits for every submit made so far.
    """

    def __init__(
        self, device: WebGpuDevice, gpu: Any, depth: int = 2, label: str = "alpha2 throttle"
    ) -> None:
        self._device = device
        self._gpu = gpu
        self._label = label
        # Mapped for writing: a map for reading makes wgpu-py submit an empty command buffer first.
        usage = gpu.BufferUsage.COPY_SRC | gpu.BufferUsage.MAP_WRITE
        self._buffers = [device.create_buffer(label=label, size=4, usage=usage) for _ in range(depth)]
        self._sink: Any = device.create_buffer(label=label, size=4, usage=gpu.BufferUsage.COPY_DST)
        self._maps: list[Any] = [None] * depth
        """Per buffer: its map's promise, from the submit of its mark until it is reused."""
        self._armed: int | None = None
        """The buffer marked in an encoder that the caller has yet to submit (its map is asked later)."""
        self._index = 0

    def submitted(self) -> None:
        """The encoder of the latest :meth:`encode` was submitted: ask for its buffer's map now (done by
        the next :meth:`encode` or :meth:`drain` otherwise)."""
        slot, self._armed = self._armed, None
        if slot is not None:
            self._maps[slot] = polled(self._buffers[slot].map_async(self._gpu.MapMode.WRITE))

    def _settle(self, slot: int) -> None:
        promise, self._maps[slot] = self._maps[slot], None
        if promise is not None:
            promise.sync_wait()
            self._buffers[slot].unmap()

    def wait_turn(self) -> None:
        """Wait until the next buffer's last frame is done (what :meth:`encode` waits for; separate so
        that the wait can be timed apart from the encoding)."""
        self.submitted()  # the previous mark's encoder has been submitted since
        self._settle(self._index)

    def encode(self, encoder: Any, texture: Any = None) -> None:
        """Wait for the next buffer's last frame, then record this frame's mark on ``encoder``; submit the
        encoder before the next :meth:`encode` or :meth:`drain`. (``texture``, the frame's, is not read:
        the mark follows the frame's work in the queue, which is what it waits for.)"""
        self.wait_turn()
        slot = self._index
        self._index = (slot + 1) % len(self._buffers)
        encoder.copy_buffer_to_buffer(self._buffers[slot], 0, self._sink, 0, 4)
        self._armed = slot

    def mark(self, texture: Any = None) -> None:
        """:meth:`encode` in a command buffer of its own, submitted after the work already submitted."""
        encoder = self._device.create_command_encoder(label=self._label)
        self.encode(encoder, texture)
        self._device.queue.submit([encoder.finish()])
        self.submitted()

    def drain(self) -> None:
        """Wait for every frame marked."""
        self.submitted()
        for slot in range(len(self._buffers)):
            self._settle(slot)

    def close(self) -> None:
        """Destroy the buffers (a map still asked for is cancelled, not waited for)."""
        self._armed = None
        buffers, self._buffers, self._maps = self._buffers, [], []
        if self._sink is not None:
            buffers.append(self._sink)
            self._sink = None
        for buffer in buffers:
            buffer.destroy()
