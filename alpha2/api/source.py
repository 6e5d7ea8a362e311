"""The small API: open a video, render or read its frames, write video from textures or arrays.

Three jobs, each a few lines (the README's "Use from Python" shows them)::

    source = alpha2.open("clip.mp4")                    # decode (NVDEC where it can, else software)
    for frame in source:                                # frames render themselves into your texture
        frame.render(my_texture)
    with alpha2.create("out.mp4", device=source.device) as writer:
        writer.write(my_texture)                        # textures, numpy / DLPack arrays or frames

Built on the sub-packages (DecodeSession, FrameImporter, FrameRenderer, EncodeCopier, EncodeSession,
Device), which stay available for finer control. Awaitable forms (:meth:`VideoSource.next_async`,
:meth:`Frame.ready`, :meth:`Frame.render_async`, :meth:`Writer.write_async`) wait on alpha2's one
WaiterThread and never block the event loop on decoding, the GPU or the encoder.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from alpha2.api.devices import as_device, open_decoder
from alpha2.ffmpeg_bridge.decode import DecodeSession, MediaSource
from alpha2.gpu.colour import (
    ColourInfo,
)
from alpha2.gpu.dlpack import PlaneArray
from alpha2.gpu.errors import ClosedError, GpuTimeoutError, InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.sync import CpuSyncPoint, SyncPoint, WaitStatus
from alpha2.gpu.webgpu import promise_settled, pump_events
from alpha2.native_gpu.device.device import Device
from alpha2.native_gpu.interop.importer import FrameImporter
from alpha2.native_gpu.interop.leases import ImportLease
from alpha2.native_gpu.render.renderer import FrameRenderer, read_texture_rgba

__all__ = ["AdapterInfo", "Frame", "GpuWorkDone", "VideoSource", "adapters", "open"]

_T = TypeVar("_T")


# ---------------------------------------------------------------------------------------------------
# adapters


@dataclass(frozen=True)
class AdapterInfo:
    """One WebGPU adapter as alpha2 ranks it (best first); pin one with ``ALPHA2_GPU_ADAPTER``."""

    rank: int
    """1 for the adapter ``Device.open()`` takes, then 2, 3 ..."""
    name: str
    """The adapter's name."""
    backend: str
    """Its backend (``Vulkan``, ...)."""
    device_type: str
    """discrete, integrated, cpu, ..."""
    uuid: str | None
    """Device UUID in hex, where known (pin with ``ALPHA2_GPU_ADAPTER=uuid:...``)."""
    pinned: bool
    """Whether ``ALPHA2_GPU_ADAPTER`` chose it."""
    reason: str
    """Why it ranks where it does."""


def adapters() -> list[AdapterInfo]:
    """The WebGPU adapters of this machine, ranked as :meth:`Device.open` ranks them (pin honoured).

    Raises:
        AdapterPinError: ``ALPHA2_GPU_ADAPTER`` names no adapter.
    """
    import wgpu

    from alpha2.gpu.adapters import rank_wgpu_adapters

    try:
        from alpha2.native_gpu.device.candidates import vulkan_candidates

        candidates = [c for c in vulkan_candidates() if c.usable]
    except Exception:  # no Vulkan loader: ranked on WebGPU facts alone
        candidates = []
    from alpha2.native_gpu.device.device import OPEN_LOCK

    with OPEN_LOCK:  # the backend's instance is made on first use, without a lock of its own
        adapters = wgpu.gpu.enumerate_adapters_sync()
    ranked = rank_wgpu_adapters(adapters, vulkan_candidates=candidates)
    return [
        AdapterInfo(
            rank=r.rank,
            name=r.adapter.name,
            backend=r.adapter.backend,
            device_type=r.adapter.device_type.value,
            uuid=r.adapter.uuid.hex() if r.adapter.uuid else None,
            pinned=r.pinned,
            reason=r.reason,
        )
        for r in ranked
    ]


# ---------------------------------------------------------------------------------------------------
# completion as SyncPoints


class GpuWorkDone(SyncPoint):
    """Signaled once the GPU has finished the work submitted on a device's queue before it was made.

    A 4-byte buffer is cleared in a submission of its own and mapped: the queue completes in order,
    so the map settles after everything submitted earlier. Waited on by the WaiterThread (``wait_async``).
    """

    def __init__(self, webgpu_device: Any) -> None:
        super().__init__()
        gpu = type(webgpu_device).__module__.split(".")[0]
        usage = __import__(gpu).BufferUsage
        self._device = webgpu_device
        self._buffer = webgpu_device.create_buffer(size=4, usage=usage.MAP_READ | usage.COPY_DST)
        encoder = webgpu_device.create_command_encoder(label="alpha2 work done")
        encoder.clear_buffer(self._buffer)
        webgpu_device.queue.submit([encoder.finish()])
        self._promise = self._buffer.map_async("READ")

    def _poll(self) -> bool:
        pump_events(self._device)
        if not promise_settled(self._promise):
            return False
        buffer, self._buffer = self._buffer, None
        if buffer is not None:
            buffer.unmap()
            buffer.destroy()
        return True

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        return WaitStatus.SIGNALED if self._poll() else WaitStatus.TIMED_OUT


class _Worker:
    """One thread that runs blocking calls (decode, encode) and signals a SyncPoint for each."""

    def __init__(self, name: str) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def run(self, fn: Callable[[], _T]) -> _T:
        done = CpuSyncPoint()
        future = self._pool.submit(fn)
        future.add_done_callback(lambda _f: done.signal())
        result = await done.wait_async(timeout=None)
        if not result.signaled:
            raise GpuTimeoutError(f"a background call did not finish: {result}")
        return future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


# ---------------------------------------------------------------------------------------------------
# reading


class Frame:
    """One decoded frame of a :class:`VideoSource`: render it, read it as arrays, or write it.

    Release it (``release()``, ``with``, or let ``for frame in source`` do it when the next one comes)
    to give its surface and textures back.
    """

    def __init__(self, decoded: DecodedFrame, source: VideoSource) -> None:
        self.decoded = decoded
        """The sub-package's frame (planes, colour, metadata)."""
        self._source = source
        self._lease: ImportLease | None = None
        self._released = False

    @property
    def pts_seconds(self) -> float | None:
        """Presentation time in seconds."""
        return self.decoded.pts_seconds

    @property
    def width(self) -> int:
        """Display width in pixels."""
        return self.decoded.width

    @property
    def height(self) -> int:
        """Display height in pixels."""
        return self.decoded.height

    @property
    def colour(self) -> ColourInfo:
        """Matrix, primaries, transfer, range and siting (resolved)."""
        return self.decoded.colour

    @property
    def pixel_format(self) -> PixelFormat:
        """The planes' layout."""
        return self.decoded.pixel_format

    @property
    def on_gpu(self) -> bool:
        """Whether the planes are CUDA memory (NVDEC)."""
        return self.decoded.on_gpu

    @property
    def path(self) -> ExecutionPath | None:
        """How the pixels reached the device's textures (None until imported)."""
        return self._lease.path if self._lease is not None else None

    def _check(self) -> None:
        if self._released:
            raise ClosedError("this Frame was released; keep it (do not release) while you use it")

    def _import(self) -> ImportLease:
        self._check()
        if self._lease is None:
            self._lease = self._source.importer.import_frame(self.decoded)
        return self._lease

    def render(self, target: Any = None, *, output_format: str = "rgba8unorm") -> Any:
        """Render into ``target`` (a texture of the source's device with RENDER_ATTACHMENT), and submit.

        The frame is scaled to the target's size. None: a cached texture of the frame's size
        (reused by the next render). Returns the target.

        Raises:
            InvalidInputError: a target of another device, or of an unsupported format.
        """
        lease = self._import()
        return self._source.renderer.render(lease, target=target, output_format=output_format)

    async def ready(self) -> Frame:
        """Import into the device's textures; wait, off the event loop, until they may be sampled."""
        # The CPU upload copies the planes on the calling thread: done on the source's worker instead.
        lease = await self._source._run(self._import)
        await lease.frame.sync.wait_async(timeout=None)
        return self

    async def render_async(self, target: Any = None, *, output_format: str = "rgba8unorm") -> Any:
        """:meth:`render`, then wait for the GPU to finish it without blocking the event loop."""
        await self.ready()
        texture = self.render(target, output_format=output_format)
        await GpuWorkDone(self._source.device.webgpu_device).wait_async(timeout=None)
        return texture

    def to_ndarray(self, format: str = "rgb24") -> np.ndarray:
        """The picture as an ``(height, width, 3)`` (``'rgb24'``) or ``(..., 4)`` (``'rgba'``) uint8 array.

        Rendered on the source's device with the frame's colour (the same conversion as :meth:`render`)
        and read back; for the raw planes use :meth:`plane` or :meth:`plane_arrays`.
        """
        if format not in ("rgb24", "rgba"):
            raise InvalidInputError(f"format must be 'rgb24' or 'rgba', got {format!r}")
        texture = self.render()
        pixels = read_texture_rgba(self._source.device, texture)
        return np.ascontiguousarray(pixels[:, :, :3]) if format == "rgb24" else pixels

    def _check_planes(self) -> None:
        self._check()
        if self.decoded.released:
            raise InvalidInputError(
                "this frame's decoded planes were handed to the renderer's textures by render(); take "
                "plane() / plane_arrays() before rendering, or use to_ndarray() (RGB) afterwards"
            )

    def plane(self, index: int = 0) -> PlaneArray:
        """Plane ``index`` for DLPack consumers (``torch.from_dlpack(frame.plane(0))``) or numpy.

        Take planes before :meth:`render`: importing hands the decoded surface to the textures.
        """
        self._check_planes()
        return self.decoded.plane(index)

    def plane_arrays(self) -> tuple[np.ndarray, ...]:
        """Every plane as a numpy array (views of host planes; CUDA planes are copied); before render."""
        self._check_planes()
        return self.decoded.plane_arrays()

    def release(self) -> None:
        """Give the textures and the decoded surface back. Idempotent."""
        if self._released:
            return
        self._released = True
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()
        self.decoded.release()

    def __enter__(self) -> Frame:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<alpha2.Frame {self.width}x{self.height} pts={self.pts_seconds} {self.pixel_format.name}>"


class VideoSource:
    """A video file's frames; made by :func:`open`.

    Iterating releases each frame when the next one is taken; :meth:`next_frame` hands frames over for
    the caller to release. The device, importer and renderer are made on first use when not given.
    """

    def __init__(
        self,
        path: MediaSource,
        *,
        device: Any = None,
        hwaccel: str = "auto",
        prefetch: int = 2,
        copy_ahead: bool = False,
        **options: Any,
    ) -> None:
        self._device = as_device(device)
        self._copy_ahead = copy_ahead
        self._session = open_decoder(path, self._device, hwaccel=hwaccel, prefetch=prefetch, **options)
        self.path = path
        """What was opened."""
        self._importer: FrameImporter | None = None
        self._renderer: FrameRenderer | None = None
        self._current: Frame | None = None
        self._worker: _Worker | None = None
        self._colour: ColourInfo | None = None
        self._lock = threading.Lock()

    # -- what it is ----------------------------------------------------------------------------------

    @property
    def session(self) -> DecodeSession:
        """The DecodeSession underneath."""
        return self._session

    @property
    def width(self) -> int:
        """Display width of the stream."""
        return self._session.info.width

    @property
    def height(self) -> int:
        """Display height of the stream."""
        return self._session.info.height

    @property
    def duration_seconds(self) -> float | None:
        """Duration the container announces."""
        return self._session.info.duration_seconds

    @property
    def frame_rate(self) -> float | None:
        """Average frames per second, where the container says."""
        rate = self._session.info.average_rate
        return float(rate) if rate else None

    @property
    def hwaccel(self) -> str:
        """Which decoder runs and why (``'cuda'`` / ``'none'`` and the reason)."""
        report = self._session.hwaccel_report
        return (
            f"{report.active.value}: {report.reason}"
            if getattr(report, "reason", None)
            else report.active.value
        )

    @property
    def colour(self) -> ColourInfo:
        """The stream's colour (from its first frame; decoded and kept when asked before any frame)."""
        if self._colour is None:
            frame = self._session.next_frame()
            if frame is None:
                raise InvalidInputError("the stream has no frames to take the colour from")
            self._colour = frame.colour
            frame.release()
            self._session.seek(0.0)
        return self._colour

    @property
    def device(self) -> Device:
        """The alpha2 Device frames render on (``Device.open()`` on first use when none was given)."""
        with self._lock:
            if self._device is None:
                self._device = Device.open()
            return self._device

    @property
    def importer(self) -> FrameImporter:
        """The FrameImporter on :attr:`device`."""
        if self._importer is None:
            self._importer = FrameImporter(self.device)
            if self._copy_ahead:  # NVDEC frames copied into the importer's ring on the decoder's thread
                self._session.set_copy_ahead(self._importer.copy_ahead)
        return self._importer

    @property
    def renderer(self) -> FrameRenderer:
        """The FrameRenderer on :attr:`device`."""
        if self._renderer is None:
            self._renderer = FrameRenderer(self.device)
        return self._renderer

    # -- frames --------------------------------------------------------------------------------------

    def next_frame(self) -> Frame | None:
        """The next frame (the caller releases it), or None at the end."""
        decoded = self._session.next_frame()
        if decoded is None:
            return None
        if self._colour is None:
            self._colour = decoded.colour
        return Frame(decoded, self)

    def __iter__(self) -> Iterator[Frame]:
        while True:
            self._drop_current()
            frame = self.next_frame()
            if frame is None:
                return
            self._current = frame
            yield frame

    def _drop_current(self) -> None:
        current, self._current = self._current, None
        if current is not None:
            current.release()

    async def _run(self, fn: Callable[[], _T]) -> _T:
        if self._worker is None:
            self._worker = _Worker("alpha2-decode")
        return await self._worker.run(fn)

    async def next_async(self) -> Frame | None:
        """:meth:`next_frame` decoded on a worker thread; the event loop keeps running meanwhile."""
        return await self._run(self.next_frame)

    async def __aiter__(self) -> AsyncIterator[Frame]:
        while True:
            self._drop_current()
            frame = await self.next_async()
            if frame is None:
                return
            self._current = frame
            yield frame

    def seek(self, seconds: float) -> None:
        """Make the next frame the one on display at ``seconds`` (frame-accurate)."""
        self._drop_current()
        self._session.seek(seconds)

    def frame_at(self, seconds: float) -> Frame | None:
        """The frame on display at ``seconds`` (seeks; the caller releases it)."""
        self.seek(seconds)
        return self.next_frame()

    def close(self) -> None:
        """Close the decoder, importer and the Device it opened. Idempotent."""
        self._drop_current()
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        self._session.close()
        if self._importer is not None:
            self._importer.close()

    def __enter__(self) -> VideoSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<alpha2.VideoSource {self.path!r} {self.width}x{self.height}>"


def open(path: MediaSource, *, device: Any = None, hwaccel: str = "auto", **options: Any) -> VideoSource:
    """Open a video file (or binary file object) for decoding.

    Args:
        path: A path or a readable binary file object.
        device: An alpha2 :class:`~alpha2.native_gpu.device.device.Device` or your own wgpu ``GPUDevice``
            (frames render into its textures); None: one is opened when first needed.
        hwaccel: ``'auto'`` (NVDEC where it can, else software), ``'cuda'`` or ``'none'``.
        options: ``copy_ahead=True`` makes each NVDEC frame's GPU copy on the decoder's thread
            (:meth:`FrameImporter.copy_ahead
            <alpha2.native_gpu.interop.importer.FrameImporter.copy_ahead>`): it helps with many
            streams in one process, and cost one stream rendered per frame about 8% on the H200
            (BENCHMARKS.md, "Copy-ahead"), so it is off. The rest go to
            :class:`~alpha2.ffmpeg_bridge.decode.DecodeSession` (``prefetch``, ``budget``...).

    Raises:
        InvalidInputError: ``path`` is neither a path nor a file object.
        MediaNotFoundError, MediaFormatError, NoVideoStreamError: see :mod:`alpha2.ffmpeg_bridge.errors`.
    """
    return VideoSource(path, device=device, hwaccel=hwaccel, **options)
