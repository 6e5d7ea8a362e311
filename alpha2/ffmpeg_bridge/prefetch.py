"""The decode-ahead worker: frames decoded (and described) on one thread, ahead of the consumer.

PyAV releases the GIL while demuxing and decoding, so a consumer's per-frame work (import, render,
encode) overlaps the decoder's. :class:`Prefetcher` runs the session's produce step ``depth`` results
ahead; exceptions travel to the consumer in order.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import av

from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import AheadWork
from alpha2.gpu.geometry import FrameMetadata
from alpha2.gpu.surfaces import SurfaceIdentity

__all__ = ["Described", "Prefetcher", "Produced", "discard"]


@dataclass(frozen=True)
class Described:
    """What a decoded frame says about itself, worked out on the prefetch thread (no session state)."""

    frame: av.VideoFrame
    pixel_format: PixelFormat
    metadata: FrameMetadata
    colour: ColourInfo
    planes: Any
    size_bytes: int
    on_gpu: bool
    identity: SurfaceIdentity | None = None
    """The surface identity, when the prefetch thread tracked the decoder's generation (it does while
    it runs; None: the caller's thread works it out)."""
    ahead: AheadWork | None = None
    """Work a consumer did on the planes on the prefetch thread (the GPU copy copied ahead)."""


def discard(item: object) -> None:
    """Give back what a frame that will never be handed out holds (its work done ahead)."""
    if isinstance(item, Described) and item.ahead is not None:
        item.ahead.discard()


class _Failure:
    """An exception raised on the prefetch thread, re-raised on the caller's."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


Produced = av.VideoFrame | Described | None
"""What the prefetch thread hands over: a frame, described there when it could be, or None at the end."""


class Prefetcher:
    """Runs ``produce`` on one worker thread, ``depth`` results ahead of the consumer.

    ``produce`` returns the next frame or None at the end. Exceptions travel to the consumer in order.
    ``stop()`` ends the worker (it is joined) and drops what it had decoded ahead.
    """

    def __init__(self, produce: Callable[[], Produced], depth: int, name: str) -> None:
        self._produce = produce
        self._queue: queue.Queue[Produced | _Failure] = queue.Queue(maxsize=depth)
        self._stopping = threading.Event()
        self._keeping = False  # stop_keeping: the frame in flight when stopped is kept, not discarded
        self._left: Produced | _Failure = None
        self._finished = False
        self._thread = threading.Thread(target=self._run, name=f"alpha2-decode {name}", daemon=True)
        self._thread.start()

    def _put(self, item: Produced | _Failure) -> bool:
        while not self._stopping.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                frame = self._produce()
            except BaseException as exc:
                if not self._put(_Failure(exc)) and self._keeping:
                    self._left = _Failure(exc)
                return
            if not self._put(frame):
                if self._keeping:
                    self._left = frame
                else:
                    discard(frame)
                return
            if frame is None:
                return

    @property
    def queued(self) -> int:
        """Results decoded ahead and waiting for the consumer (the end or a failure counts as one)."""
        return self._queue.qsize()

    @property
    def depth(self) -> int:
        """How many results the worker decodes ahead at most."""
        return self._queue.maxsize

    def get(self) -> Produced:
        # After the end or a failure the worker has returned: the stream is over, as a finished
        # generator is when decoding on the caller's thread.
        if self._finished:
            return None
        item = self._queue.get()
        if isinstance(item, _Failure):
            self._finished = True
            raise item.exc
        if item is None:
            self._finished = True
        return item

    def stop(self) -> None:
        self._stopping.set()
        while self._thread.is_alive():
            self._drain()
            self._thread.join(timeout=0.05)
        self._drain()  # what the worker queued just before it returned

    def stop_keeping(self) -> list[av.VideoFrame | Described] | None:
        """End the worker (joined) and give back, in order, the frames it decoded ahead and had not
        handed out, the one in flight when it stopped included. None where one of them was a failure (the
        frames are then discarded). The end of the stream is left out: the session's decoder knows it."""
        self._keeping = True
        self._stopping.set()
        items: list[Produced | _Failure] = []
        while self._thread.is_alive():
            items.extend(self._take_all())
            self._thread.join(timeout=0.05)
        items.extend(self._take_all())
        items.append(self._left)
        self._left = None
        if any(isinstance(item, _Failure) for item in items):
            for item in items:
                discard(item)
            return None
        return [item for item in items if item is not None and not isinstance(item, _Failure)]

    def _take_all(self) -> list[Produced | _Failure]:
        items: list[Produced | _Failure] = []
        try:
            while True:
                items.append(self._queue.get_nowait())
        except queue.Empty:
            pass
        return items

    def _drain(self) -> None:
        for item in self._take_all():
            discard(item)
