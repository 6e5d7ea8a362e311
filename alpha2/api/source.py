"""The small API: open a video, render or read its frames, write video from textures or arrays.

Three jobs, each a few lines (the README's "Use from Python" shows them)::

    source = alpha2.open("clip.mp4")                    # decode (NVDEC where it can, else software)
    for frame in source:                                # frames render themselves into your texture
        frame.render(my_texture)
    with alpha2.create("out.mp4", device=source.device) as writer:
        writer.write(my_texture)                        # textures, numpy / DLPack arrays or frames

Frames by time or number: ``source.frame_at(2.5)``, ``source.frames_at([0.0, 1.0, 2.0])`` and
``source.frames_at_index([0, 10, -1])`` give the frame on display then (exact on variable frame rate
and with B-frames), ``len(source)`` counts them. Pictures are shown turned by the file's display
matrix: ``width`` / ``height``, :meth:`Frame.render` and :meth:`Frame.to_ndarray` all honour it.
``source.info`` (:class:`VideoInfo`) says what the file holds.

Built on the sub-packages (DecodeSession, FrameImporter, FrameRenderer, EncodeCopier, EncodeSession,
Device), which stay available for finer control. Awaitable forms (:func:`open_async`,
:meth:`VideoSource.next_async`, :meth:`Frame.ready`, :meth:`Frame.render_async`,
:meth:`Writer.write_async`) wait on alpha2's one WaiterThread and never block the event loop on opening,
decoding, the GPU or the encoder.
"""

from __future__ import annotations

import bisect
import collections.abc
import concurrent.futures
import contextlib
import io
import math
import numbers
import operator
import os
import threading
import warnings
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from alpha2.api import arguments
from alpha2.api.batch_sessions import BatchSessions
from alpha2.api.devices import as_device, open_decoder
from alpha2.api.errors import ConcurrentIterationError, EndOfStreamError, FrameIndexError
from alpha2.api.segments import SegmentReader, SegmentReport, auto_sessions
from alpha2.ffmpeg_bridge.decode import DecodeSession, MediaSource, short_repr
from alpha2.ffmpeg_bridge.hwdevice import HwAccelMode
from alpha2.ffmpeg_bridge.media import AudioTrack
from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.dlpack import PlaneArray
from alpha2.gpu.errors import (
    ClosedError,
    DeviceLostError,
    Error,
    GpuTimeoutError,
    InvalidInputError,
    OutOfMemoryError,
)
from alpha2.gpu.forks import keep_in_fork
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Rotation
from alpha2.gpu.hdr import HdrMetadata
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.sync import CpuSyncPoint, SyncPoint, WaitResult, WaitStatus
from alpha2.gpu.webgpu import (
    WebGpuDevice,
    gpu_module_of,
    polled,
    promise_settled,
    pump_events,
    webgpu_device_of,
)
from alpha2.native_gpu.device.device import Device
from alpha2.native_gpu.interop.importer import FrameImporter
from alpha2.native_gpu.interop.leases import ImportLease
from alpha2.native_gpu.render.renderer import FrameRenderer, read_texture_rgba, warm_webgpu_bindings

if TYPE_CHECKING:
    from alpha2.api.tensors import RgbTensor

__all__ = [
    "AdapterInfo",
    "AudioTrack",
    "ConcurrentIterationError",
    "EndOfStreamError",
    "Frame",
    "FrameIndexError",
    "GpuWorkDone",
    "VideoInfo",
    "VideoSource",
    "adapters",
    "open",
    "open_async",
]

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
    index: int | None = None
    """The loader index ``ALPHA2_GPU_ADAPTER`` takes (the ``#0`` of the reasons); None where the adapter
    matched no Vulkan device (pin it by UUID or name)."""


def adapters() -> list[AdapterInfo]:
    """The WebGPU adapters of this machine that :meth:`Device.open` chooses among, ranked as it ranks
    them (pin honoured): where there is a Vulkan adapter, those of other backends (wgpu's OpenGL twin of
    the same GPU) are left out, as it never takes them.

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
    from alpha2.native_gpu.device.device import OPEN_LOCK, open_pool

    with OPEN_LOCK:  # the backend's instance is made on first use, without a lock of its own
        adapters = wgpu.gpu.enumerate_adapters_sync()
    ranked = rank_wgpu_adapters(open_pool(list(adapters)), vulkan_candidates=candidates)
    return [
        AdapterInfo(
            rank=r.rank,
            name=r.adapter.name,
            backend=r.adapter.backend,
            device_type=r.adapter.device_type.value,
            uuid=r.adapter.uuid.hex() if r.adapter.uuid else None,
            pinned=r.pinned,
            reason=r.reason,
            index=getattr(r.adapter, "pin_index", None),
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

    def __init__(self, webgpu_device: WebGpuDevice | Device) -> None:
        """Submit the marker on ``webgpu_device`` (a wgpu / wgpudawn GPUDevice, or an alpha2 Device).

        Raises:
            InvalidInputError: ``webgpu_device`` is neither.
            ClosedError: an alpha2 Device that was closed.
        """
        super().__init__()
        if getattr(webgpu_device, "_closed", False):  # its GPUDevice is gone: cffi's TypeError otherwise
            raise ClosedError(
                "this Device was closed (Device.close() or its with block): no work can be submitted on it; "
                "wait before closing it"
            )
        usage = gpu_module_of(webgpu_device).BufferUsage
        webgpu_device = webgpu_device_of(webgpu_device)
        self._device = webgpu_device
        self._buffer = webgpu_device.create_buffer(size=4, usage=usage.MAP_READ | usage.COPY_DST)
        encoder = webgpu_device.create_command_encoder(label="alpha2 work done")
        encoder.clear_buffer(self._buffer)
        webgpu_device.queue.submit([encoder.finish()])
        self._promise = polled(self._buffer.map_async("READ"))

    def _poll(self) -> bool:
        pump_events(self._device)
        if not promise_settled(self._promise):
            return False
        buffer, self._buffer = self._buffer, None
        if buffer is not None:
            try:
                # Settled is not resolved: wgpu-py marks the buffer mapped when the promise is resolved,
                # which sync_wait() does here without waiting (unmap() before it raises).
                self._promise.sync_wait()
                buffer.unmap()
            finally:
                buffer.destroy()
        return True

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        return WaitStatus.SIGNALED if self._poll() else WaitStatus.TIMED_OUT


def _raise_if_failed(result: WaitResult, what: str) -> None:
    """Raise the failure of GPU work an awaitable waited for (returning would hand on what it failed to
    make): an alpha2 error as it is, the WebGPU implementation's as a lost device."""
    if not result.failed:
        return
    error = result.error
    if isinstance(error, Error):
        raise error
    raise DeviceLostError(
        f"the GPU failed while {what} ({type(error).__name__}: {error}); open the source again on a "
        "working device"
    ) from error


class _Worker:
    """One thread that runs blocking calls (open, decode, encode) and signals a SyncPoint for each."""

    def __init__(self, name: str) -> None:
        self._thread: threading.Thread | None = None
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=name, initializer=self._started
        )

    def _started(self) -> None:
        self._thread = threading.current_thread()

    async def run(self, fn: Callable[[], _T], on_cancel: Callable[[_T], None] | None = None) -> _T:
        """``fn()`` on the thread, awaited. ``on_cancel``: given what ``fn`` returns when the awaiting
        task was cancelled meanwhile (the call itself runs to its end): what would be lost otherwise."""
        done = CpuSyncPoint()
        future = self._pool.submit(fn)
        future.add_done_callback(lambda _f: done.signal())
        try:
            result = await done.wait_async(timeout=None)
        except BaseException:  # cancelled: fn goes on; what it makes is handed over, not dropped
            if on_cancel is not None:
                keep = on_cancel

                def settled(f: concurrent.futures.Future[_T]) -> None:
                    if not f.cancelled() and f.exception() is None:
                        keep(f.result())

                future.add_done_callback(settled)
            raise
        if not result.signaled:
            raise GpuTimeoutError(f"a background call did not finish: {result}")
        return future.result()

    def close(self) -> None:
        """Stop the thread (joined, unless this is it: a finalizer run there cannot join itself)."""
        self._pool.shutdown(wait=threading.current_thread() is not self._thread)


# ---------------------------------------------------------------------------------------------------
# errors and facts


@dataclass(frozen=True)
class VideoInfo:
    """What a file says about the video stream a :class:`VideoSource` decodes, and about its audio."""

    codec: str
    """FFmpeg's codec name (``h264``, ``hevc``, ``vp9``, ``av1``, ...)."""
    width: int
    """Width of the picture as shown, in pixels: after :attr:`rotation` (a quarter turn swaps the sides)."""
    height: int
    """Height of the picture as shown, in pixels (after :attr:`rotation`)."""
    coded_width: int
    """Width the decoder works at, before rotation (the stored picture plus alignment padding)."""
    coded_height: int
    """Height the decoder works at, before rotation."""
    rotation: Rotation
    """Clockwise turn applied for display (the file's display matrix or ``rotate`` tag)."""
    frame_rate: float | None
    """Average frames per second where the container says (variable-rate files: the average)."""
    duration_seconds: float | None
    """The stream's duration where the container says."""
    frame_count: int | None
    """Frames the container records, None when it does not say (``len(source)`` counts them then)."""
    colour: ColourInfo | None
    """The first frame's matrix, primaries, transfer and range (resolved); None when none decodes."""
    hdr: HdrMetadata | None
    """The first frame's HDR static metadata (mastering display, light level), or None."""
    audio: tuple[AudioTrack, ...]
    """The file's audio streams (index, codec, sample rate, channels, language), in file order."""
    start_seconds: float = 0.0
    """The stream's first timestamp in seconds: the first frame's :attr:`Frame.pts_seconds`, often not 0
    (an MPEG-TS file starts at 1.4 s). :meth:`VideoSource.frame_at`, :meth:`~VideoSource.frames_at` and
    :meth:`~VideoSource.seek` count their seconds from it, where a Frame's ``pts_seconds`` is the file's
    own timestamp: ``frame_at(frame.pts_seconds - info.start_seconds)`` is that frame again."""
    mirrored: bool = False
    """Whether the file's display matrix flips the picture left to right before :attr:`rotation` (a
    vertical flip is a mirror and a half turn); renders, tensors and transcodes show it flipped."""
    attached_picture: bool = False
    """The stream is a picture attached to the file (a song's cover art: FFmpeg's ``attached_pic``
    disposition, which ``alpha2 probe`` says as 'cover art'): one still, shown at every time of the
    file's length, not a video."""


_LATEST_TIME = 1e12
"""Seconds any asked time is capped at: later than any stream ends."""


def _scalar(value: object) -> object:
    """A 0-d numpy array or torch tensor as the Python number it holds (``np.array(0.5)``, or an item of
    ``torch.linspace(...)``, which iterating a tensor gives); anything else as it is."""
    item = getattr(value, "item", None)
    if getattr(value, "ndim", None) == 0 and callable(item):
        try:
            return cast(object, item())
        except (TypeError, ValueError, RuntimeError):
            return value
    return value


_NARROW_FLOAT_BITS = {"float32": 23, "float16": 10, "bfloat16": 7}
"""Fraction bits of the float types narrower than Python's float that times come in (numpy's and
torch's: ``torch.tensor([4.2])`` is float32)."""


def _rounding_reach(seconds: object, value: float) -> float:
    """How far past ``value`` the moments that round to ``seconds`` reach, where it is a float narrower
    than Python's (a numpy float32 or float16 scalar or 0-d array, an item of a torch tensor): half its
    spacing there. float32(4.2) is 4.1999998 s, 0.017 ticks of 1/90000 s before a frame stamped 4.2 s,
    which it then missed; a time in float64 is exact to far less than the tick slack."""
    name = str(getattr(seconds, "dtype", "")).removeprefix("torch.")
    bits = _NARROW_FLOAT_BITS.get(name)
    if bits is None or value <= 0:
        return 0.0
    return math.ldexp(1.0, math.frexp(value)[1] - 2 - bits)


def _check_seconds(seconds: object) -> float:
    """``seconds`` as a float, refusing what names no moment of a stream. A float32 (or float16) time is
    the latest moment that rounds to it, so that a frame's time in float32 finds that frame."""
    given = seconds
    seconds = _scalar(seconds)
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
        raise InvalidInputError(f"a time must be a number of seconds, got {short_repr(seconds)}")
    value = float(seconds)
    if not math.isfinite(value) or value < 0:
        raise InvalidInputError(f"a time must be a finite number of seconds >= 0, got {value!r}")
    value += _rounding_reach(given, value)
    # Past the end of any stream (a year is 3.2e7 s), and still a whole number of 1/90000 s ticks in
    # 64 bits: 2**70 would overflow the decoder's timestamps instead of being past the end.
    return min(value, _LATEST_TIME)


def _time_said(seconds: object) -> str:
    """A time the caller passed, checked by :func:`_check_seconds`, as a message names it: the value
    asked (``1e+308 s``), not the cap it is decoded at."""
    return f"{float(cast(float, _scalar(seconds)))} s"


def _listed(method: str, values: object, what: str, one: str) -> list[Any]:
    """``values`` of a batch call as a list: a list, tuple, numpy array or other ordered iterable (not a
    str; not a set or a mapping, whose order is not the caller's: frames come back in the order asked)."""
    if isinstance(values, collections.abc.Set):
        raise InvalidInputError(
            f"{method} hands frames back in the order asked, and a {type(values).__name__} has no order: "
            f"pass a list (sorted(...) for the order of time)"
        )
    if isinstance(values, collections.abc.Mapping):
        raise InvalidInputError(
            f"{method} takes a sequence of {what} (a list, tuple or numpy array), got a "
            f"{type(values).__name__}: pass list(d) for its keys, list(d.values()) for its values"
        )
    if not isinstance(values, str | bytes):
        try:
            return list(cast(Iterable[Any], values))
        except TypeError:
            pass
    shown = short_repr(values)
    hint = f"; for one, pass [{shown}]{one}" if isinstance(values, numbers.Real) else ""
    raise InvalidInputError(
        f"{method} takes a sequence of {what} (a list, tuple or numpy array), got {type(values).__name__} "
        f"{shown}{hint}"
    )


def _tensor_options(where: str, args: tuple[Any, ...], options: dict[str, Any], target: Any) -> None:
    """Refuse options ``to_tensor`` would meet with Python's TypeError: given by position, or unknown."""
    if args:
        raise InvalidInputError(
            f"{where} takes its options by keyword (size=(width, height), crop=..., layout=..., dtype=..., "
            f"mean=..., std=..., device=..., require=..., antialias=..., route=...), got {len(args)} by "
            f"position: {short_repr(args[0])}"
        )
    arguments.known_options(where, options, target)


def _media_source(path: object) -> tuple[MediaSource, str]:
    """What to decode from ``path`` (the file's bytes are read from memory), and how messages name it."""
    if isinstance(path, bytes | bytearray | memoryview):
        data = path.tobytes() if isinstance(path, memoryview) and not path.c_contiguous else path
        size = memoryview(data).nbytes
        if size == 0:
            raise InvalidInputError("the file's bytes are empty; pass a video file's contents, or its path")
        if size < 4096 and isinstance(path, bytes) and os.path.exists(os.fsdecode(path)):
            raise InvalidInputError(
                "bytes are decoded as the file's contents, and these name a file; pass the path as a str "
                "(os.fsdecode(path))"
            )
        return io.BytesIO(data), f"<{size} bytes in memory>"
    if isinstance(path, str | os.PathLike):
        return path, short_repr(os.fspath(path), 200)
    if isinstance(path, io.TextIOBase):
        raise InvalidInputError(
            "alpha2.open takes a file object opened in binary mode (open(path, 'rb')), got a text-mode "
            f"{type(path).__name__}"
        )
    if callable(getattr(path, "read", None)):
        if getattr(path, "closed", False) is True:
            raise InvalidInputError(
                f"alpha2.open got a closed {type(path).__name__}; pass an open one (open(path, 'rb')), "
                "or the path"
            )
        readable = getattr(path, "readable", None)
        if callable(readable) and not readable():
            raise InvalidInputError(
                f"alpha2.open takes a readable file object, got a {type(path).__name__} opened for writing "
                "only; open it with open(path, 'rb'), or pass the path"
            )
        name = getattr(path, "name", None)
        label = short_repr(name, 200) if isinstance(name, str) else f"<{type(path).__name__}>"
        return cast(MediaSource, path), label
    raise InvalidInputError(
        "alpha2.open takes a path (str or os.PathLike), a readable binary file object, or the file's "
        f"bytes (bytes, bytearray, memoryview); got {type(path).__name__} {short_repr(path)}"
    )


# ---------------------------------------------------------------------------------------------------
# reading


_LOOP_RELEASED = (
    "this frame was released when the loop took the next one; call source.next_frame() to keep frames, "
    "and release them yourself"
)


BATCH_FRAMES_HELD = 256
"""NVDEC frames of one source that :meth:`VideoSource.frames_at` batches may hold at once (copied out of
the decoder's surfaces into pooled memory: 3 MB each at 1080p); one more waits (bounded) for a release."""

_BATCH_PINS = 4
"""Batches up to this many NVDEC frames keep the decoder's own surfaces (no copy)."""

IMPORTED_FRAMES_HELD = 32
"""Frames of one source that may hold textures at once (rendered, not yet released); one more is
refused with the reason. ``to_ndarray`` and ``to_tensor`` hold none once they return."""

LENT_IMPORTS_AT_ONCE = 16
"""Imports a conversion holds at once beside the rendered frames' (the importer has room for both): a
``to_tensor`` batch longer than this is rendered in submissions of this many frames, each frame's
textures given back once its submission is made."""


class _Loans:
    """A Frame's decoded picture, lent to imports: released once the frame is released and every
    import has given it back (a GPU copy may still read it after its lease went). Never refers to
    the Frame, so that a lease's finalizer does not keep the Frame alive."""

    __slots__ = ("decoded", "due", "lent", "lock")

    def __init__(self, decoded: DecodedFrame) -> None:
        self.decoded = decoded
        self.lent = 0
        self.due = False
        self.lock = threading.Lock()

    def lend(self) -> Callable[[], None]:
        """One more import reads the picture; the returned callable (once, any thread) says it is done."""
        with self.lock:
            self.lent += 1
        returned = False

        def give_back() -> None:
            nonlocal returned
            with self.lock:
                if returned:
                    return
                returned = True
                self.lent -= 1
                go = self.due and self.lent == 0
            if go:
                self.decoded.release()

        return give_back

    def release(self) -> None:
        """The frame was released: the picture goes now, or with the last import that reads it."""
        with self.lock:
            self.due = True
            go = self.lent == 0
        if go:
            self.decoded.release()


class Frame:
    """One decoded frame of a :class:`VideoSource`: render it, read it as arrays, or write it.

    Release it (``release()``, ``with``, or let ``for frame in source`` do it when the next one comes)
    to give its surface and textures back. Its size is the picture as shown (the file's rotation
    applied); :attr:`decoded` has the planes as stored, readable until the frame is released.
    """

    def __init__(self, decoded: DecodedFrame, source: VideoSource) -> None:
        self.decoded = decoded
        """The sub-package's frame (planes as stored, colour, metadata)."""
        self._source = source
        self._loans = _Loans(decoded)
        self._lease: ImportLease | None = None
        self._path: ExecutionPath | None = None
        self._released = False
        self._released_by_loop = False

    @property
    def pts_seconds(self) -> float | None:
        """Presentation time in seconds."""
        return self.decoded.pts_seconds

    @property
    def width(self) -> int:
        """Width of the picture as shown (after :attr:`rotation`), in pixels."""
        return self.decoded.metadata.rotated_size.width

    @property
    def height(self) -> int:
        """Height of the picture as shown (after :attr:`rotation`), in pixels."""
        return self.decoded.metadata.rotated_size.height

    @property
    def rotation(self) -> Rotation:
        """Clockwise turn applied for display (from the file's display matrix)."""
        return self.decoded.metadata.rotation

    @property
    def mirrored(self) -> bool:
        """Whether the picture is flipped left to right before :attr:`rotation` for display (the
        file's display matrix)."""
        return self.decoded.metadata.mirrored

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
        """How the pixels reached the device's textures (the latest import's; None until imported)."""
        return self._path

    @property
    def released(self) -> bool:
        """Whether the frame was released (by you, a ``with`` block, or the ``for`` loop)."""
        return self._released

    def _check(self) -> None:
        if self._released:
            if self._released_by_loop:
                raise ClosedError(_LOOP_RELEASED)
            raise ClosedError(
                "this Frame was released (release() or its with block); use it before releasing it"
            )

    def _check_picture(self) -> None:
        self._check()
        if self.decoded.released:
            if self.decoded.on_gpu:
                raise InvalidInputError(
                    "this frame's NVDEC surface went to the textures of an earlier conversion made while "
                    f"{IMPORTED_FRAMES_HELD} frames of its source held theirs (past that bound a conversion "
                    "hands an NVDEC frame over for good); release frames you are done with, or decode it "
                    "again"
                )
            raise ClosedError("this frame's decoded picture was released (frame.decoded.release())")

    def _lend(self) -> ImportLease:
        """An import of the picture for one piece of work; the caller releases the lease. A picture in
        host memory is lent (the frame keeps it: its planes stay readable, another import can follow);
        an NVDEC picture is handed over, so that its surface goes back once the GPU copy is made
        (NVDEC's surfaces are few, and the decoder waits for them)."""
        self._check_picture()
        importer = self._source.importer
        if self.decoded.on_gpu:
            lease = importer.import_frame(self.decoded)
        else:
            give_back = self._loans.lend()
            try:
                lease = importer.import_frame(self.decoded, give_back=give_back)
            except BaseException:
                give_back()
                raise
        self._path = lease.path
        return lease

    def _import(self) -> ImportLease:
        """The frame's own import, held until the frame is released (render's)."""
        self._check()
        if self._lease is None:
            self._source._hold_import()
            try:
                self._lease = self._lend()
            except BaseException:
                self._source._drop_import()
                raise
        return self._lease

    def _import_for_work(self) -> tuple[ImportLease, bool]:
        """The import one conversion samples, and whether the caller releases it once the work is
        submitted: the frame's own when it has one; for an NVDEC frame, its own import made now while
        the source's bound on held imports allows (its surface goes into it once, and later
        conversions reuse it), else one handed over for this work only; for a frame in host memory, a
        lent one (no textures stay held by converted frames)."""
        self._check()
        if self._lease is not None:
            return self._lease, False
        if self.decoded.on_gpu and self._source._may_hold_import():
            return self._import(), False
        return self._lend(), True

    @contextlib.contextmanager
    def _imported(self) -> Iterator[ImportLease]:
        """:meth:`_import_for_work` for one block (the work sampling it must be submitted in it)."""
        lease, release = self._import_for_work()
        try:
            yield lease
        finally:
            if release:
                lease.release()

    def _check_target(self, target: Any) -> None:
        if target is None:
            return
        if not (hasattr(target, "create_view") and hasattr(target, "usage")):
            raise InvalidInputError(
                f"render takes a GPUTexture of the source's device, got {type(target).__name__}; for arrays "
                "use to_ndarray()"
            )
        device = self._source.device
        owner = getattr(target, "_device", None)  # wgpu-py's objects keep their device there
        if owner is not None and owner is not device.webgpu_device and hasattr(owner, "create_texture"):
            raise InvalidInputError(
                "the target texture belongs to another device than this source's; create it on "
                "source.device.webgpu_device, or open the source on your device: "
                "alpha2.open(path, device=your_device)"
            )
        flag = int(device.gpu_module.TextureUsage.RENDER_ATTACHMENT)
        if not int(target.usage) & flag:
            raise InvalidInputError(
                f"the target texture lacks the RENDER_ATTACHMENT usage (it has {int(target.usage)}); create "
                "it with usage=TextureUsage.RENDER_ATTACHMENT (| COPY_SRC to read it back)"
            )
        # WebGPU's own validation error would name none of these.
        dimension = str(getattr(target, "dimension", "2d"))
        samples = int(getattr(target, "sample_count", 1))
        mips = int(getattr(target, "mip_level_count", 1))
        if (dimension, samples, mips) != ("2d", 1, 1):
            raise InvalidInputError(
                f"render draws into a 2d texture of one sample and one mip level; the target is {dimension} "
                f"with sample_count={samples} and mip_level_count={mips}: render into such a texture and "
                "resolve or copy it into yours (copy_texture_to_texture)"
            )

    def render(
        self, target: Any = None, *, output_format: str = "rgba8unorm", antialias: bool = False
    ) -> Any:
        """Render into ``target`` (a texture of the source's device with RENDER_ATTACHMENT), and submit.

        The picture is turned by the file's rotation and scaled to the target's size (bilinearly; with
        ``antialias``, a smaller target gets the mean of the source under each pixel, a tent two pixels
        wide, as PIL's resize: for thumbnails). None: a cached texture of the frame's (shown) size,
        reused by the next render. Returns the target.

        Raises:
            InvalidInputError: a target that is not a texture, lacks RENDER_ATTACHMENT, belongs to
                another device, has an unsupported format, or is not 2d with one sample and one mip
                level.
            ClosedError: the frame was released.
        """
        self._check()
        self._check_target(target)
        if not isinstance(antialias, bool):
            raise InvalidInputError(f"antialias must be True or False, got {antialias!r}")
        lease = self._import()
        return self._source.renderer.render(
            lease,
            target=target,
            output_format=output_format,
            rotation=self.decoded.metadata.rotation,
            antialias=antialias,
        )

    async def ready(self) -> Frame:
        """Import into the device's textures; wait, off the event loop, until they may be sampled."""
        # The CPU upload copies the planes on the calling thread: done on the source's worker instead.
        lease = await self._source._run(self._import)
        _raise_if_failed(await lease.frame.sync.wait_async(timeout=None), "importing the frame")
        return self

    async def render_async(
        self, target: Any = None, *, output_format: str = "rgba8unorm", antialias: bool = False
    ) -> Any:
        """:meth:`render` on the source's worker thread (pipelines are built there the first time),
        then wait for the GPU to finish it without blocking the event loop."""
        await self.ready()
        texture = await self._source._run(
            lambda: self.render(target, output_format=output_format, antialias=antialias)
        )
        done = await GpuWorkDone(self._source.device.webgpu_device).wait_async(timeout=None)
        _raise_if_failed(done, "rendering the frame")
        return texture

    def to_ndarray(self, format: str = "rgb24") -> np.ndarray:
        """The picture as shown, as an ``(height, width, 3)`` (``'rgb24'``) or ``(..., 4)`` (``'rgba'``)
        uint8 array (:attr:`width` x :attr:`height`: the file's rotation applied).

        Rendered on the source's device with the frame's colour (the same conversion as :meth:`render`)
        and read back; for the raw planes use :meth:`plane` or :meth:`plane_arrays`.
        """
        if format not in ("rgb24", "rgba"):
            raise InvalidInputError(f"format must be 'rgb24' or 'rgba', got {short_repr(format)}")
        # The renderer's own output texture is one per size: frames converted on two threads at once
        # (a source's frames handed to several workers) read back each other's pixels without this.
        with self._source._output_lock:
            with self._imported() as lease:
                texture = self._source.renderer.render(lease, rotation=self.decoded.metadata.rotation)
            pixels = read_texture_rgba(self._source.device, texture)
        return np.ascontiguousarray(pixels[:, :, :3]) if format == "rgb24" else pixels

    def to_tensor(self, *args: Any, **options: Any) -> RgbTensor:
        """The picture as an RGB tensor (CUDA memory through DLPack where the device allows, else numpy),
        by the renderer's exact conversion: :func:`alpha2.api.tensors.to_tensor` lists the options
        (size, crop, layout, dtype, mean, std, device, require, antialias), all given by keyword.

        Raises:
            InvalidInputError: an option given by position or not known (the message names them), and
                what :func:`alpha2.api.tensors.to_tensor` refuses.
        """
        from alpha2.api.tensors import to_tensor

        _tensor_options("Frame.to_tensor()", args, options, to_tensor)
        return to_tensor(self, **options)

    def _check_planes(self) -> None:
        self._check()
        if self.decoded.released and self.decoded.on_gpu:
            raise InvalidInputError(
                "this frame's NVDEC surface was handed to the renderer's textures (render(), to_ndarray() "
                "or to_tensor() of a GPU frame hand it over, so that NVDEC gets it back); take plane() / "
                "plane_arrays() first"
            )
        self._check_picture()

    def plane(self, index: int = 0) -> PlaneArray:
        """Plane ``index`` as stored (not rotated), for DLPack (``torch.from_dlpack(frame.plane(0))``)
        or numpy. Readable until the frame is released; an NVDEC frame's planes only until it is first
        rendered or converted (its surface is handed to the textures).
        """
        self._check_planes()
        return self.decoded.plane(arguments.whole("index", index, low=0))

    def plane_arrays(self) -> tuple[np.ndarray, ...]:
        """Every plane as stored (views of host planes; CUDA planes are copied); an NVDEC frame's before
        it is rendered or converted."""
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
            self._source._drop_import()
        self._loans.release()

    def __enter__(self) -> Frame:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __reduce__(self) -> Any:
        # Without this, pickle (a spawn DataLoader's dataset, a multiprocessing queue) failed inside PyAV
        # with 'no default __reduce__ due to non-trivial __cinit__'.
        raise InvalidInputError(
            "an alpha2 Frame cannot be pickled or copied: it holds a decoded surface of its source in this "
            "process; hand on frame.to_tensor(..., device='cpu') (an RgbTensor on the CPU pickles) or "
            "frame.to_ndarray() instead"
        )

    def __repr__(self) -> str:
        gone = " released" if self._released else ""
        return (
            f"<alpha2.Frame {self.width}x{self.height} pts={self.pts_seconds} {self.pixel_format.name}{gone}>"
        )


class _Resources:
    """What a VideoSource owns, held apart from it so that its finalizer does not keep it alive."""

    def __init__(self, session: DecodeSession) -> None:
        self.session = session
        self.pid = os.getpid()  # the process whose decoder threads and device these are
        self.worker: _Worker | None = None
        self.importer: FrameImporter | None = None
        self.segments: SegmentReader | None = None
        self.batches: BatchSessions | None = None  # helper sessions frames_at spreads over
        self.pool: Any = None  # the CUDA frame pool batches of NVDEC frames are copied into

    @property
    def forked(self) -> bool:
        """Whether this process is a fork of the one that opened them (they cannot work here)."""
        return self.pid != os.getpid()

    def close(self) -> None:
        if self.forked:  # a DataLoader worker given a dataset holding open sources: kept, not freed
            keep_in_fork(self)
            return
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.close()
        segments, self.segments = self.segments, None
        if segments is not None:
            segments.close()
        batches, self.batches = self.batches, None
        if batches is not None:
            batches.close()
        self.session.close()
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.close()
        importer, self.importer = self.importer, None
        if importer is not None:
            importer.close()


def _close_unclosed(resources: _Resources, label: str) -> None:
    """The finalizer of a VideoSource dropped without close(): say so, as Python's files do, and close."""
    warnings.warn(
        f"unclosed alpha2.VideoSource {label}; close() it, or open it with 'with alpha2.open(...) as s:'",
        ResourceWarning,
        stacklevel=2,
    )
    resources.close()


def _stream_end(session: Any) -> float | None:
    """Where a session's stream ends, in seconds: its header's duration, or the end of the frames decoded
    where that is later (a muxer's short duration); None when neither is known."""
    duration: float | None = session.info.duration_seconds
    decoded = session.decoded_end_seconds
    if decoded is not None and (duration is None or decoded > duration):
        duration = decoded
    return duration


class VideoSource:
    """A video file's frames; made by :func:`open` (or :func:`open_async`).

    Iterating releases each frame when the next one is taken; :meth:`next_frame`, :meth:`frame_at`,
    :meth:`frames_at` and :meth:`frames_at_index` hand frames over for the caller to release (each holds
    its decoded surface until then: NVDEC's pool is finite, and the budget's ``max_surfaces`` bounds how
    many may be held). The device, importer and renderer are made on first use when not given. One
    thread takes the frames of a source (a second one gets :class:`ConcurrentIterationError`). Close it
    (or use ``with``); one dropped unclosed is closed when collected, with a ResourceWarning.
    """

    def __init__(
        self,
        path: MediaSource | bytes | bytearray | memoryview,
        *,
        device: Any = None,
        hwaccel: str | HwAccelMode | None = "auto",
        prefetch: int = 2,
        copy_ahead: bool | None = None,
        parallel: int | str | None = None,
        **options: Any,
    ) -> None:
        media, self._label = _media_source(path)
        # None is 'none' and the enum its value, as StreamGroup, DecodeProcess and the bridge read them.
        hwaccel = HwAccelMode.parse(hwaccel).value
        arguments.whole("prefetch", prefetch, low=0)
        if copy_ahead is not None:
            arguments.flag("copy_ahead", copy_ahead)
        arguments.known_options(
            "alpha2.open()",
            options,
            DecodeSession.__init__,
            skip=2,
            also=("device", "hwaccel", "prefetch", "copy_ahead", "parallel"),
        )
        if parallel not in (None, "auto") and (
            isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1
        ):
            raise InvalidInputError(
                f"parallel must be None, 'auto' or a number of sessions >= 1, got {parallel!r}"
            )
        if parallel not in (None, 1) and not isinstance(media, str | os.PathLike):
            raise InvalidInputError(
                "parallel decoding reads the file on several sessions at once: give its path, not a file "
                "object or its bytes"
            )
        self._parallel = parallel
        self._hwaccel = hwaccel
        self._sequential = True  # nothing was sought yet: the stream is read in order from its start
        self._device = as_device(device, hwaccel)
        if self._device is not None:
            self._check_device(self._device)
        self._copy_ahead = copy_ahead
        session = open_decoder(media, self._device, hwaccel=hwaccel, prefetch=prefetch, **options)
        self._options = options  # for further sessions on the same file (parallel)
        self._resources = _Resources(session)
        self._finalizer = weakref.finalize(self, _close_unclosed, self._resources, self._label)
        self.path = path
        """What was opened (a path, a file object, or the file's bytes)."""
        self._renderer: FrameRenderer | None = None
        self._current: Frame | None = None
        self._colour: ColourInfo | None = None
        self._info: VideoInfo | None = None
        self._frame_count: int | None = None
        self._lock = threading.Lock()
        self._kept: list[Frame] = []  # decoded for a cancelled next_async: the next call's
        self._imports_lock = threading.Lock()
        self._output_lock = threading.Lock()  # to_ndarray: the renderer's output texture, drawn and read
        self._imports_held = 0  # frames holding textures (rendered, not released)
        self._warmed = False
        self._busy = threading.Lock()  # held while a call takes frames: a second thread is refused
        self._loop_thread: threading.Thread | None = None  # the thread whose loop iterates the source
        self._loop_depth = 0

    # -- what it is ----------------------------------------------------------------------------------

    @property
    def _session(self) -> DecodeSession:
        return self._resources.session

    @property
    def session(self) -> DecodeSession:
        """The DecodeSession underneath."""
        return self._resources.session

    @property
    def info(self) -> VideoInfo:
        """Codec, shown and coded size, rotation, rate, duration, frame count, colour, HDR and audio."""
        if self._info is None:
            facts = self._session.info
            self._info = VideoInfo(
                codec=facts.codec_name,
                width=facts.display_width,
                height=facts.display_height,
                coded_width=facts.coded_width or facts.width,
                coded_height=facts.coded_height or facts.height,
                rotation=facts.rotation,
                frame_rate=float(facts.average_rate) if facts.average_rate else None,
                duration_seconds=facts.duration_seconds,
                frame_count=facts.frame_count,
                colour=facts.colour,
                hdr=facts.hdr,
                audio=facts.audio_tracks,
                start_seconds=float(facts.start_time * facts.time_base) if facts.start_time else 0.0,
                mirrored=facts.mirrored,
                attached_picture=facts.attached_picture,
            )
        return self._info

    @property
    def width(self) -> int:
        """Width of the picture as shown (the file's rotation applied)."""
        return self._session.info.display_width

    @property
    def height(self) -> int:
        """Height of the picture as shown (the file's rotation applied)."""
        return self._session.info.display_height

    @property
    def rotation(self) -> Rotation:
        """Clockwise turn applied for display (the file's display matrix)."""
        return self._session.info.rotation

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
        """The stream's colour (its first frame's, decoded when the source opened).

        Raises:
            InvalidInputError: the stream has no frame.
        """
        if self._colour is None:
            self._colour = self._session.info.colour
        if self._colour is None:
            raise InvalidInputError(f"{self._label} has no decodable frame to take the colour from")
        return self._colour

    @property
    def device(self) -> Device:
        """The alpha2 Device frames render on: when none was given, opened on first use on the GPU the
        decoder was placed on, with the GPU copy's features when NVDEC decodes (``Device.open``)."""
        self._check_process()
        with self._lock:
            if not self._warmed:
                # wgpu-py's C types in one parse, not one each as the device and the renderer first ask
                # (0.5-0.9 s of the first frame on two cores).
                warm_webgpu_bindings()
                self._warmed = True
            if self._device is None:
                self._device = Device.open(want_gpu_copy=self._session.hwaccel_report.on_gpu)
            self._check_device(self._device)
            return self._device

    def _check_device(self, device: Device) -> None:
        # A Device made before a fork (a DataLoader dataset holding one) hung the forked worker's first
        # conversion for ever in queue.submit: lavapipe's (and any driver's) threads stay in the parent.
        if device.opened_pid != os.getpid():
            raise ClosedError(
                f"the Device given for {self._label} was opened in process {device.opened_pid}, which this "
                "one was forked from: its GPU device did not come with the fork; open the Device in this "
                "process (in a DataLoader worker: on first use in __getitem__, or in worker_init_fn, never "
                "before the workers start), or leave device= out"
            )
        # A closed Device has no queue: its frames failed inside wgpu ('NoneType' object has no
        # attribute 'write_buffer') instead of saying why.
        if getattr(device, "_closed", False):
            raise ClosedError(
                f"the Device of this VideoSource ({self._label}) was closed (Device.close() or its with "
                "block): its frames cannot be rendered or converted; close the Device after its sources' "
                "last frame, or open the file again"
            )

    @property
    def importer(self) -> FrameImporter:
        """The FrameImporter on :attr:`device`."""
        self._check_process()
        resources = self._resources
        if self._device is not None:
            self._check_device(self._device)
        if resources.importer is None:
            # A program may hold many imported frames at once (a batch from frames_at turned into a
            # tensor): the GPU copy's ring grows to that many slots as they are taken, no more.
            resources.importer = FrameImporter(self.device, slots=IMPORTED_FRAMES_HELD + LENT_IMPORTS_AT_ONCE)
            if self._copy_ahead:  # NVDEC frames copied into the importer's ring on the decoder's thread
                self._session.set_copy_ahead(resources.importer.copy_ahead)
        return resources.importer

    def _hold_import(self) -> None:
        """A frame takes textures until it is released: refused, with what to do, past the bound."""
        with self._imports_lock:
            if self._imports_held >= IMPORTED_FRAMES_HELD:
                raise OutOfMemoryError(
                    f"{IMPORTED_FRAMES_HELD} rendered frames of {self._label} hold textures already (a "
                    "rendered Frame keeps them until it is released); release the frames you are done "
                    "with (release() or a with block); to_ndarray() and to_tensor() keep none"
                )
            self._imports_held += 1

    def _may_hold_import(self) -> bool:
        with self._imports_lock:
            return self._imports_held < IMPORTED_FRAMES_HELD

    def _drop_import(self) -> None:
        with self._imports_lock:
            self._imports_held -= 1

    def _frames_go_to_tensors(self) -> None:
        """Called by :func:`~alpha2.api.tensors.to_tensor`. With ``copy_ahead`` left to alpha2 (None),
        NVDEC frames decoded from now on are copied ahead: a tensor's CPU work is all on the caller's
        thread, and the copy made on the decoder's thread takes a part of it off (BENCHMARKS.md, "Frames
        for machine learning"). Frames already decoded keep their copy at import."""
        if self._copy_ahead is not None:
            return
        self._copy_ahead = True
        if self._session.hwaccel_report.on_gpu:
            self._session.set_copy_ahead(self.importer.copy_ahead)

    @property
    def renderer(self) -> FrameRenderer:
        """The FrameRenderer on :attr:`device`."""
        if self._device is not None:
            self._check_device(self._device)
        if self._renderer is None:
            self._renderer = FrameRenderer(self.device)
        return self._renderer

    def __len__(self) -> int:
        """The number of frames: the container's count where it agrees with the stream's duration and
        rate, else counted once over the packets (kept). An MP4 cut with an edit list counts the
        packets before its start too (120 where 111 are shown, or 28 where 27 are, within any tolerance
        of the duration): counted over the packets then, as frames_at_index does."""
        if self._frame_count is None:
            self._check_open()
            info = self._session.info
            count = info.frame_count
            seconds, rate = info.duration_seconds, info.average_rate
            if self._session.discards_seen:  # the container counts samples its edit list cuts
                count = None
            if count is not None and seconds and rate:
                expected = seconds * float(rate)
                if abs(count - expected) > max(2.0, 0.01 * expected):
                    count = None
            if count is None:
                count = len(self._session.frame_index())
            self._frame_count = count
        return self._frame_count

    def __bool__(self) -> bool:
        return True  # a source is a source, whatever len() would count

    # -- who takes the frames ------------------------------------------------------------------------

    def _check_process(self) -> None:
        resources = self._resources
        if resources.forked:
            raise ClosedError(
                f"this VideoSource ({self._label}) was opened in process {resources.pid}, which this one "
                "was forked from: its decoder threads and GPU device did not come with the fork; open the "
                "file again in this process (in a DataLoader worker: on first use in __getitem__, or in "
                "worker_init_fn, never before the workers start)"
            )

    def _check_open(self) -> None:
        self._check_process()
        if self._resources.session.closed:
            raise ClosedError(f"this VideoSource ({self._label}) was closed; open the file again")

    def _check_thread(self) -> None:
        owner = self._loop_thread
        if owner is not None and owner is not threading.current_thread() and owner.is_alive():
            raise ConcurrentIterationError(
                f"thread {owner.name!r} is iterating this VideoSource; one source gives its frames to one "
                "loop: open a source per thread (alpha2.open(path) in each), or hand the frames of the one "
                "loop to the others through a queue"
            )

    @contextlib.contextmanager
    def _taking(self) -> Iterator[None]:
        """Held while frames are taken: a second thread taking frames at the same time is refused."""
        self._check_open()
        if not self._busy.acquire(blocking=False):
            raise ConcurrentIterationError(
                "another thread is taking frames from this VideoSource at the same time, and each would "
                "get some of them; open a source per thread (alpha2.open(path) in each), or take the "
                "frames in one thread and hand them on through a queue"
            )
        try:
            yield
        finally:
            self._busy.release()

    @contextlib.contextmanager
    def _loop(self) -> Iterator[threading.Thread]:
        me = threading.current_thread()
        with self._lock:
            self._check_thread()
            self._loop_thread = me
            self._loop_depth += 1
        try:
            yield me
        finally:
            with self._lock:
                self._loop_depth -= 1
                if self._loop_depth == 0 and self._loop_thread is me:
                    self._loop_thread = None

    # -- frames --------------------------------------------------------------------------------------

    def _wrap(self, decoded: DecodedFrame) -> Frame:
        if self._colour is None:
            self._colour = decoded.colour
        return Frame(decoded, self)

    def _reader(self) -> SegmentReader | None:
        """The segment reader for in-order reading with ``parallel``, started at the first frame taken."""
        resources = self._resources
        if resources.segments is not None or not self._sequential or self._parallel in (None, 1):
            return resources.segments
        self._sequential = False  # decided once: the reader, or the session from here on
        report = self._session.hwaccel_report
        if self._parallel == "auto":
            sessions, why = auto_sessions(report.device_ordinal if report.on_gpu else None)
        else:
            sessions, why = int(cast(int, self._parallel)), f"parallel={self._parallel} was asked for"
        if sessions < 2:
            self._parallel_reason = why
            return None
        # Every session reads as this one does (its stream, threads, on_corrupt, max_pixels, budget): the
        # options were dropped, and stream_index=1 read stream 0. A budget counts this process's frames,
        # so its sessions run on threads (decoder processes would hold frames it cannot count).
        options = {k: v for k, v in self._options.items() if k != "prefetch"}
        decoders = "threads" if options.get("budget") is not None else "auto"
        resources.segments = SegmentReader(
            cast(str, self.path),
            sessions=sessions,
            device=self._device,
            hwaccel=self._hwaccel,
            decoders=decoders,
            **options,
        )
        self._parallel_reason = why
        return resources.segments

    @property
    def segments(self) -> SegmentReport | None:
        """How ``parallel`` reads the file in order (sessions, chunks, each session's decoder, stages),
        once the first frame was taken; None when one session reads it (:attr:`parallel_reason` says why)."""
        reader = self._resources.segments
        return None if reader is None else reader.report

    @property
    def parallel_reason(self) -> str:
        """Why the file is read by that many sessions (``parallel``), once the first frame was taken."""
        said = getattr(self, "_parallel_reason", None)
        if said is not None:
            return str(said)
        if self._parallel is None:
            return "parallel decoding was not asked for"
        if self._parallel == 1:
            return "one session: parallel=1 was asked for"
        if not self._sequential:  # a seek or a batch came before any frame was read in order
            return (
                f"one session: parallel={self._parallel} reads a file in order from its start, and a seek or "
                "frames_at came first (batches: batch_reason)"
            )
        return f"parallel={self._parallel}: decided when the first frame is taken"

    def _leave_parallel(self) -> None:
        """A seek: the session takes over from where it lands (the segment reader stops)."""
        self._sequential = False
        segments, self._resources.segments = self._resources.segments, None
        if segments is not None:
            segments.close()
            self._parallel_reason = "a seek ended parallel reading: one session goes on from there"

    def _take_next(self) -> Frame | None:
        with self._lock:
            if self._kept:
                return self._kept.pop(0)
        with self._taking():
            reader = self._reader()
            decoded = reader.next_frame() if reader is not None else self._session.next_frame()
        return None if decoded is None else self._wrap(decoded)

    def next_frame(self) -> Frame | None:
        """The next frame (the caller releases it), or None at the end.

        Raises:
            ConcurrentIterationError: another thread is iterating the source, or taking a frame now.
            ClosedError: the source was closed.
        """
        self._check_thread()
        return self._take_next()

    def __iter__(self) -> Iterator[Frame]:
        with self._loop() as me:
            while True:
                if threading.current_thread() is not me:
                    raise ConcurrentIterationError(
                        f"this loop over a VideoSource began in thread {me.name!r} and was resumed in "
                        f"{threading.current_thread().name!r}; iterate a source in one thread"
                    )
                self._drop_current(by_loop=True)
                frame = self._take_next()
                if frame is None:
                    return
                self._current = frame
                yield frame

    def _drop_current(self, *, by_loop: bool = False) -> None:
        current, self._current = self._current, None
        if current is not None:
            current._released_by_loop = by_loop and not current._released
            current.release()

    async def _run(self, fn: Callable[[], _T], on_cancel: Callable[[_T], None] | None = None) -> _T:
        resources = self._resources
        if resources.session.closed:
            # A closed source keeps no thread: one made here was never stopped (close() inside
            # ``async for`` left one behind). The call runs on a thread of its own, stopped after it,
            # and says itself whether it may run (a frame renders after its source closed; decoding not).
            once = _Worker("alpha2-decode")
            try:
                return await once.run(fn, on_cancel)
            finally:
                once.close()
        if resources.worker is None:
            resources.worker = _Worker("alpha2-decode")
        return await resources.worker.run(fn, on_cancel)

    def _keep_for_next(self, frame: Frame | None) -> None:
        """A frame decoded for a call that was cancelled: the next call takes it (none is skipped)."""
        if frame is not None:
            with self._lock:
                self._kept.append(frame)

    async def next_async(self) -> Frame | None:
        """:meth:`next_frame` decoded on a worker thread; the event loop keeps running meanwhile. A call
        cancelled while it decodes (``asyncio.wait_for`` timing out) loses no frame: the next call gets
        it."""
        self._check_thread()
        return await self._run(self._take_next, self._keep_for_next)

    async def __aiter__(self) -> AsyncIterator[Frame]:
        with self._loop():
            while True:
                self._drop_current(by_loop=True)
                frame = await self._run(self._take_next)
                if frame is None:
                    return
                self._current = frame
                yield frame

    def seek(self, seconds: float) -> None:
        """Make the next frame the one on display at ``seconds`` (the last one shown at or before it;
        exact on variable frame rate and with B-frames). Past the end, iteration ends at once.
        ``seconds`` count from the stream's start (:attr:`VideoInfo.start_seconds`, not always 0).

        Raises:
            InvalidInputError: ``seconds`` is not a finite number >= 0.
        """
        value = _check_seconds(seconds)
        self._check_thread()
        self._drop_current()
        self._leave_parallel()
        with self._taking():
            self._session.seek(value)

    def _end_seconds(self) -> str:
        duration = _stream_end(self._session)
        return f"{duration:.3f} s long" if duration is not None else "of unknown duration"

    def frame_at(self, seconds: float) -> Frame:
        """The frame on display at ``seconds``: the last one shown at or before it (the caller releases it).

        ``seconds`` count from the stream's start, its first frame at 0 (a Frame's ``pts_seconds`` is
        the file's timestamp, larger by :attr:`VideoInfo.start_seconds`: 1.4 s in many MPEG-TS files).

        The source then goes on from the frame after it; a frame a ``for`` loop holds stays valid. A
        later time asked next decodes on from there where no key frame lies between (the second such
        call counts the frames, as :meth:`frames_at` does), so stepping through a file by time decodes
        it about once.

        A file cut short of the duration its container announces (a truncated download) ends where its
        last frame does: its last frame is still given one frame interval past its own display time, and
        a later time raises, saying where the file ends.

        Raises:
            InvalidInputError: ``seconds`` is not a finite number >= 0.
            EndOfStreamError: ``seconds`` lies at or past the end of the stream (the message says its
                length), or in the missing tail of a cut file ("the file ends early at 0.400 s of the
                1.000 s its container announces").
        """
        value = _check_seconds(seconds)
        self._check_thread()
        self._leave_parallel()
        with self._taking():
            # As a batch of one: that holds the frame after it instead of decoding ahead on the prefetch
            # thread, so that a later time in the same GOP decodes on from there rather than seeking.
            (decoded,) = self._session.frames_at([value])
        if decoded is None:
            raise self._no_frame_at(_time_said(seconds), value)
        return self._wrap(decoded)

    def frames_at(self, seconds: Sequence[float]) -> list[Frame]:
        """The frames on display at each of ``seconds``, in the order asked (duplicates allowed, each
        its own Frame): exact on variable frame rate and with B-frames. ``seconds`` count from the
        stream's start, as :meth:`frame_at` says (``frame.pts_seconds - source.info.start_seconds``).
        For frame numbers use :meth:`frames_at_index`: ``i / frame_rate`` is not always frame ``i``'s
        time, since containers round the stamps (Matroska and WebM to the millisecond: at 30 fps
        frame 2 is stamped 0.067 s, and 2 / 30 = 0.0667 s is frame 1's). A time in float32 (a torch
        tensor's default dtype) or float16 stands for the latest moment that rounds to it, so that a
        frame's time in float32 finds that frame, not the one before.

        The times are sorted and decoded in one forward pass, seeking only to skip to a later key
        frame. Each returned Frame holds its decoded surface until you release it. Afterwards the
        source goes on from the frame after the latest one asked for.

        Raises:
            InvalidInputError: ``seconds`` is not a sequence (a list, tuple or numpy array of times), or
                a time in it is not a finite number >= 0.
            EndOfStreamError: a time at or past the end, or in the missing tail of a cut file, as
                :meth:`frame_at` says (no frame is then kept).
            SurfaceBudgetError: more times than the source's ``budget`` holds frames (``max_surfaces``),
                or the budget stayed full.
        """
        asked = _listed("frames_at", seconds, "times in seconds", " or call frame_at")
        values = [_check_seconds(s) for s in asked]
        self._check_thread()
        self._leave_parallel()
        with self._taking():
            batches = self._batches(len(values))
            if batches is None:
                decoded = self._session.frames_at(values, keep=self._keep(len(values)))
            else:
                pts = [self._session.target_pts(v) for v in values]
                decoded = batches.frames_at_pts(pts, self._keep(len(values), spread=True))
        return self._all_or_none(decoded, values, said=[_time_said(s) for s in asked])

    def frames_at_index(self, indices: Sequence[int]) -> list[Frame]:
        """The frames with these numbers in presentation order (``0`` the first shown, ``-1`` the last),
        in the order asked (duplicates allowed). Decoded as :meth:`frames_at` does; the first call counts
        the frames (one pass over the packets, nothing decoded). Frames that share a timestamp (some AVI
        and MKV remuxes) are each their own index, in the order shown.

        Raises:
            FrameIndexError: an index out of range (an IndexError too).
            InvalidInputError: ``indices`` is not a sequence (a list, tuple or numpy array), or an index
                in it is not an integer.
        """
        wanted: list[int] = []
        for item in _listed("frames_at_index", indices, "frame indices", ""):
            if isinstance(item, bool):
                raise InvalidInputError(f"frame indices must be integers, got {item!r}")
            try:
                wanted.append(operator.index(item))
            except TypeError:
                raise InvalidInputError(f"frame indices must be integers, got {short_repr(item)}") from None
        self._check_thread()
        self._leave_parallel()
        with self._taking():
            index = self._session.frame_index()
            count = len(index)
            pts = []
            occurrences: list[int | None] = []
            for i in wanted:
                j = i + count if i < 0 else i
                if not 0 <= j < count:
                    raise FrameIndexError(
                        f"frame index {i} is out of range: {self._label} has {count} frames "
                        f"(0..{count - 1}, or -{count}..-1 from the end)"
                        if count
                        else f"frame index {i} is out of range: {self._label} has no frames"
                    )
                pts.append(index.pts[j])
                # Frames that share a timestamp (duplicates in some AVI and MKV remuxes) are told apart
                # by their order: by time alone frame i and i + 1 were both the later one.
                first = bisect.bisect_left(index.pts, index.pts[j])
                shared = j > first or (j + 1 < count and index.pts[j + 1] == index.pts[j])
                occurrences.append(j - first if shared else None)
            batches = None if any(n is not None for n in occurrences) else self._batches(len(pts))
            if batches is None:
                # (The batch sessions find frames by time alone: such asks decode here, one pass.)
                decoded = self._session.frames_at_pts(pts, keep=self._keep(len(pts)), occurrences=occurrences)
            else:
                decoded = batches.frames_at_pts(pts, self._keep(len(pts), spread=True))
        return self._all_or_none(decoded, [float(i) for i in wanted], by_index=True)

    def to_tensor(self, frames: Sequence[Frame], *args: Any, **options: Any) -> RgbTensor:
        """One stacked ``(N, ...)`` RGB tensor of ``frames`` (from :meth:`frames_at`): see
        :func:`alpha2.api.tensors.to_tensor` for the options, all given by keyword.

        Raises:
            InvalidInputError: an option given by position or not known (the message names them), and
                what :func:`alpha2.api.tensors.to_tensor` refuses.
        """
        from alpha2.api.tensors import to_tensor

        _tensor_options("VideoSource.to_tensor()", args, options, to_tensor)
        return to_tensor(frames, **options)

    def _batches(self, count: int) -> BatchSessions | None:
        """The sessions a batch of ``count`` frames is spread over (``parallel``, on NVDEC), or None
        when the source's own session decodes it alone."""
        resources = self._resources
        if resources.batches is not None:
            return resources.batches
        report = self._session.hwaccel_report
        if count < 2 or self._parallel in (None, 1):
            return None
        if not report.on_gpu or report.device_ordinal is None:
            self._batch_reason = (
                "software decoding: FFmpeg's frame threads already use every core, so one session"
            )
            return None
        if self._parallel == "auto":
            sessions, why = auto_sessions(report.device_ordinal)
        else:
            sessions, why = int(cast(int, self._parallel)), f"parallel={self._parallel} was asked for"
        resources.batches = BatchSessions(
            cast(str, self.path),
            self._session,
            self._device,
            sessions=sessions,
            reason=why,
            options={k: v for k, v in self._options.items() if k != "prefetch"},
        )
        return resources.batches

    @property
    def batch_reason(self) -> str:
        """How :meth:`frames_at` / :meth:`frames_at_index` batches are decoded: on how many sessions
        (``parallel`` spreads them over one per NVDEC engine, a GOP's asks on one), and why."""
        batches = self._resources.batches
        if batches is not None:
            return f"{batches.last_lanes} session(s) for the latest batch; {batches.reason}"
        return getattr(self, "_batch_reason", "one session: parallel decoding was not asked for")

    def _keep(self, count: int, *, spread: bool = False) -> Callable[[DecodedFrame], DecodedFrame] | None:
        """For a batch of NVDEC frames: copy each into the source's frame pool as it is found, so that
        the batch does not pin the decoder's few surfaces (NVDEC may lend about 14); a batch spread over
        several sessions is always copied (no frame pins a helper session's surfaces)."""
        report = self._session.hwaccel_report
        if (count <= _BATCH_PINS and not spread) or not report.on_gpu or report.device_ordinal is None:
            return None
        resources = self._resources
        if resources.pool is None:
            from alpha2.native_gpu._cuda.frame_pool import CudaFramePool

            resources.pool = CudaFramePool(report.device_ordinal, max_frames=BATCH_FRAMES_HELD)
        detach: Callable[[DecodedFrame], DecodedFrame] = resources.pool.detach
        return detach

    def _all_or_none(
        self,
        decoded: list[DecodedFrame | None],
        asked: list[float],
        *,
        by_index: bool = False,
        said: list[str] | None = None,
    ) -> list[Frame]:
        """``said``: each time as the caller passed it, for the message (``asked`` is capped)."""
        missing = [i for i, d in enumerate(decoded) if d is None]
        if missing:
            for d in decoded:
                if d is not None:
                    d.release()
            first = missing[0]
            if by_index:
                raise self._no_frame_at(f"frame {int(asked[first])}")
            raise self._no_frame_at(said[first] if said else f"{asked[first]} s", asked[first])
        return [self._wrap(d) for d in decoded if d is not None]

    def _no_frame_at(self, what: str, seconds: float | None = None) -> EndOfStreamError:
        if self._session.decoded_end_seconds is None and len(self) == 0:
            # Its length would be the container's (its sound's): no time is early enough.
            return EndOfStreamError(
                f"no frame is on display at {what}: the video stream of {self._label} has no frame to decode"
            )
        early = self._session.ends_early
        if early is not None:
            reached, announced = early
            return EndOfStreamError(
                f"no frame is on display at {what}: the file ends early at {reached:.3f} s of the "
                f"{announced:.3f} s its container announces ({self._label} is cut short or damaged); ask "
                "for an earlier time"
            )
        duration = _stream_end(self._session)
        if seconds is not None and duration is not None and 0 <= seconds < duration:
            # A hair before the end (1.599999999 of 1.600 s) is the end: times are read to the microsecond
            # and a float's error below a tick is that tick. Said so, not 'N s long' alone, which reads as
            # a contradiction.
            return EndOfStreamError(
                f"no frame is on display at {what}: {self._label} ends at {duration:.6g} s, and times are "
                f"read to the microsecond, so {what} is its end; ask for an earlier time"
            )
        return EndOfStreamError(
            f"no frame is on display at {what}: {self._label} is {self._end_seconds()}; ask for an "
            "earlier time"
        )

    def close(self) -> None:
        """Close the decoder (its thread too), the worker thread and the importer. Frames you hold stay
        valid until released; the Device stays open (it is freed with its last reference). Idempotent."""
        self._finalizer.detach()
        self._drop_current()
        with self._lock:
            kept, self._kept = self._kept, []
        for frame in kept:
            frame.release()
        self._resources.close()

    def __enter__(self) -> VideoSource:
        if self._resources.session.closed:
            raise ClosedError(f"this VideoSource ({self._label}) was closed; open the file again")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        # Without this, pickle (a spawn DataLoader's dataset holding an open source) failed with
        # "cannot pickle '_cffi_backend._CDataBase' object", and copy.deepcopy left a half-made device.
        raise InvalidInputError(
            f"an alpha2 VideoSource ({self._label}) cannot be pickled or copied: its decoder threads and GPU "
            "device stay in this process; keep the path and open the file in each process (in a "
            "DataLoader worker: on first use in __getitem__, or in worker_init_fn)"
        )

    def __repr__(self) -> str:
        closed = " closed" if self._resources.session.closed else ""
        return f"<alpha2.VideoSource {self._label} {self.width}x{self.height}{closed}>"


def open(
    path: MediaSource | bytes | bytearray | memoryview,
    *,
    device: Any = None,
    hwaccel: str | HwAccelMode | None = "auto",
    **options: Any,
) -> VideoSource:
    """Open a video file (or binary file object, or a file's bytes) for decoding.

    Args:
        path: A path, a readable binary file object, or the whole file as ``bytes`` / ``bytearray`` /
            ``memoryview`` (decoded from memory).
        device: An alpha2 :class:`~alpha2.native_gpu.device.device.Device` or your own wgpu ``GPUDevice``
            (frames render into its textures); a CUDA device (an ordinal such as ``1``, ``'cuda:1'``
            or a ``torch.device``): the Device on that GPU, NVDEC decoding there; None: one is opened
            when first needed.
        hwaccel: ``'auto'`` (NVDEC where it can, else software), ``'cuda'`` or ``'none'`` (None too, as
            PyAV's ``hwaccel=None``).
        options: ``parallel=K`` reads the file in order on K decode sessions at once (segments of whole
            GOPs, frames in presentation order with their own timestamps, exactly as one session gives
            them: :class:`~alpha2.api.segments.SegmentReader`); ``'auto'``: one session per NVDEC engine
            of the GPU, one for software decoding. A seek hands reading back to one session. With
            ``parallel``, :meth:`VideoSource.frames_at` batches on NVDEC are spread over up to that
            many sessions too, a GOP's times on one (:attr:`VideoSource.batch_reason` says how).
            ``copy_ahead=True`` makes each NVDEC frame's GPU copy on the decoder's thread
            (:meth:`FrameImporter.copy_ahead
            <alpha2.native_gpu.interop.importer.FrameImporter.copy_ahead>`): it helps tensors and
            many streams in one process, and cost one stream rendered per frame about 8% on the H200
            (BENCHMARKS.md, "Copy-ahead"). The default, None, turns it on once the source's frames
            first go to :func:`~alpha2.api.tensors.to_tensor`, and leaves it off for rendering;
            ``False`` keeps it off. The rest go to
            :class:`~alpha2.ffmpeg_bridge.decode.DecodeSession` (``prefetch``, ``budget``, ``threads``,
            ``on_corrupt``, ``stream_index``, ``cuda_ordinal``, ``max_pixels``...).

    Raises:
        InvalidInputError: ``path`` is none of those (a file object must be open, readable and in
            binary mode), or an option that is unknown or of the wrong type (the message names it).
        MediaNotFoundError, MediaFormatError, NoVideoStreamError: see :mod:`alpha2.ffmpeg_bridge.errors`.
    """
    return VideoSource(path, device=device, hwaccel=hwaccel, **options)


async def open_async(
    path: MediaSource | bytes | bytearray | memoryview,
    *,
    device: Any = None,
    hwaccel: str | HwAccelMode | None = "auto",
    **options: Any,
) -> VideoSource:
    """:func:`open` on a worker thread: the container, its first frame, the device (when not given),
    importer and renderer are made there, so the event loop never waits on them. That thread then
    decodes for the source's awaitable forms (:meth:`VideoSource.next_async`, ``async for``).
    """
    worker = _Worker("alpha2-decode")

    def make() -> VideoSource:
        source = VideoSource(path, device=device, hwaccel=hwaccel, **options)
        try:
            source.importer  # noqa: B018 - opens the device and the importer here, not on the loop
            source.renderer  # noqa: B018
        except BaseException:
            source.close()
            raise
        return source

    def abandoned(source: VideoSource) -> None:  # the caller was cancelled: it never had the source
        source.close()
        worker.close()

    try:
        source = await worker.run(make, abandoned)
    except BaseException:
        worker.close()
        raise
    source._resources.worker = worker
    return source
