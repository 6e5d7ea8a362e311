"""Many streams into one device: N decode sessions, one Device, one grid target, one submit per tick.

:class:`StreamGroup` opens N sources on one alpha2 :class:`~alpha2.native_gpu.device.device.Device`
(the WebGPU device, its shared Vulkan context and the CUDA primary context are the Device's, shared by
every stream), with one :class:`~alpha2.ffmpeg_bridge.DecodeSession` per source decoding ahead on its
own worker thread (``prefetch``), one :class:`~alpha2.native_gpu.interop.importer.FrameImporter` per
stream (its own ring or texture sets), all counted against one
:class:`~alpha2.gpu.surfaces.SurfaceBudget`. Each display tick (:meth:`StreamGroup.tick`) takes the
latest due frame of every stream, imports it (GPU copy on Dawn, CPU upload elsewhere) and renders it
straight into its tile's rectangle of the wall texture (aspect kept, letterboxed; one render pass over
the wall, a viewport per tile, no tile textures and no copies): every stream's work of the tick goes
to the GPU in ONE ``queue.submit``. The Python work per tick is a few calls per
stream; decoding, demuxing and the GPU copies run without the GIL.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from alpha2.api import arguments, pipeline
from alpha2.api.devices import as_device, open_decoder, open_device, texture_limit
from alpha2.api.playback import stream_displayed_size
from alpha2.api.throttle import SubmitThrottle
from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.ffmpeg_bridge.decode import short_repr
from alpha2.ffmpeg_bridge.hwdevice import HwAccelMode
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget
from alpha2.gpu.errors import ClosedError, Error, InvalidInputError, UnsupportedError
from alpha2.gpu.forks import keep_in_fork
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Size
from alpha2.gpu.surfaces import SurfaceBudget
from alpha2.native_gpu.device.device import Device

__all__ = ["MAX_WALL", "StreamGroup", "StreamState", "StreamTick", "grid_shape"]

MAX_WALL = Size(3840, 2160)
"""The largest wall made when no tile size is given: tiles are the streams' size, shrunk to fit it."""

_WALL_FORMAT = "rgba8unorm"


def _pts(item: Any) -> float | None:
    """A decoded frame's pts in seconds, or a lease's (a DecodeProcess's frames)."""
    if isinstance(item, DecodedFrame):
        return item.pts_seconds
    seconds: float | None = item.frame.metadata.pts_seconds
    return seconds


def grid_shape(count: int) -> tuple[int, int]:
    """Columns and rows of a near-square grid with room for ``count`` tiles (columns >= rows)."""
    if count < 1:
        raise InvalidInputError(f"a wall needs at least one stream, got {count}")
    columns = math.ceil(math.sqrt(count))
    return columns, math.ceil(count / columns)


def _fit_no_upscale(width: int, height: int, box: Size) -> Size:
    if width <= box.width and height <= box.height:
        return Size(width - width % 2 or 2, height - height % 2 or 2)
    return pipeline.fit_inside(width, height, box)


_BEFORE_THE_END_S = 0.05
"""How far before a stream's end a seek past it lands: on its last frame or the one before (the next
tick shows the last)."""


@dataclass(frozen=True)
class StreamTick:
    """What one display tick did."""

    index: int
    """The tick's number, from 0."""
    updated: tuple[bool, ...]
    """Per stream: whether a new frame was drawn into its tile this tick."""
    shown_pts_s: tuple[float | None, ...]
    """Per stream: the pts (seconds) of the frame its tile shows after the tick (None: none yet)."""
    dropped: int
    """Frames skipped this tick, over all streams (decoded but already overtaken by a later due one)."""
    submitted: bool
    """Whether the tick submitted GPU work (False when no stream had a new frame)."""


@dataclass
class StreamState:
    """One stream of the group: its decoder, importer, tile and counts."""

    source: str
    """What was opened."""
    decoder: Any
    """Its DecodeSession (decoding ahead on its own thread), or its DecodeProcess (decoding in a
    process of its own, whose frames come out as leases)."""
    importer: Any
    """Its FrameImporter (own ring / texture sets) on the group's Device; None for a DecodeProcess,
    which imports itself."""
    origin: tuple[int, int]
    """Top-left corner of its tile in the wall."""
    start_pts_s: float | None = None
    """The pts of its first frame: display times are counted from it."""
    pending: Any = None
    """A decoded frame not yet due (a lease, for a DecodeProcess)."""
    fitted: Size | None = None
    """The size of the picture in its tile (letterboxed, centred); None before its first."""
    shown_pts_s: float | None = None
    """The pts of the frame on display."""
    frames_shown: int = 0
    """Frames drawn into the tile."""
    frames_dropped: int = 0
    """Frames decoded but skipped (a later one was due at the same tick)."""
    shown_order: list[float] = field(default_factory=list)
    """The pts of every frame drawn, in order (kept only with ``record_order``)."""
    ended: bool = False
    """The decoder has no more frames."""
    colour: Any = None
    """The renderer's colour plan (a ColourParams) for its latest frame; None before the first, or for
    tags with no formula."""
    error: str | None = None
    """Why the source could not be opened (``broken="tile"``): it has no decoder, and its tile shows
    what :meth:`StreamGroup.paint_tile` puts there."""


def _close_abandoned(objects: list[Any], count: int, pid: int) -> None:
    """The finalizer of a StreamGroup dropped without close(): say so, and stop its decoders."""
    if pid != os.getpid():
        keep_in_fork(objects)  # its decoders' threads and GPU device did not come with the fork
        return
    warnings.warn(
        f"unclosed alpha2 StreamGroup of {count} sources; close() it, or use 'with StreamGroup(...) as g:'",
        ResourceWarning,
        stacklevel=2,
    )
    for obj in reversed(objects):
        with contextlib.suppress(Exception):
            obj.close()
    objects.clear()


class StreamGroup:
    """N sources decoded on their own threads, imported into one Device, composed into one wall texture.

    Typical use::

        with StreamGroup(["a.mp4", "b.mp4", "c.mp4"]) as group:
            group.tick(at_s=0.0)              # every stream's first frame, which starts the decoders
            group.preroll()                   # every decoder's queue filled: start the clock now
            while not group.finished:
                group.tick(at_s=clock())      # or tick() to take the next frame of every stream
            pixels = group.read_wall()

    Args:
        sources: the inputs (paths), one tile each, in reading order (left to right, top to bottom).
        device: the Device to work on (None: one is opened, and closed with the group); a CUDA device
            (``'cuda:N'``, an ordinal, a ``torch.device``) or a WebGPU device is taken as
            :func:`alpha2.open` takes it.
        hwaccel: ``auto``, ``cuda`` or ``none``, for every stream.
        budget: the surface budget every stream's frames count against (None: one of ``2 * N``
            surfaces: a tick holds at most a frame on display and one decoded ahead per stream).
        prefetch: frames each decoder decodes ahead on its worker thread.
        tile: the size of one tile (None: the largest stream's size, shrunk to fit :data:`MAX_WALL`).
        fit: the largest the wall is shown (a window's size): the tiles are halved until the wall fits
            inside, so that no tile is drawn larger than it is shown (None: as ``tile`` says).
        columns: the grid's columns (None: a near-square grid).
        slots: each importer's texture sets / ring slots.
        record_order: keep the pts of every frame drawn per stream (for tests and checks).
        colour_target: what the wall is (primaries, transfer, peak), for the renderer's colour
            management; None: SDR BT.709.
        colour_options: the tone curve and gamut mapping; None: the defaults.
        copy_ahead: make each NVDEC frame's GPU copy on its decoder's thread
            (:meth:`FrameImporter.copy_ahead
            <alpha2.native_gpu.interop.importer.FrameImporter.copy_ahead>`), so that the tick's
            thread only begins Dawn's access; False: the import makes the copy, on the tick's thread.
        decoders: ``"threads"`` (the default): a DecodeSession per stream, decoding on its own thread
            in this process; ``"processes"``: a :class:`~alpha2.api.decode_process.DecodeProcess`
            per stream, decoding in a process of its own and handing frames over through shared
            memory (NVDEC frames by the GPU copy, written by the decoder process; others through
            shared host memory and the CPU upload). Then the per-frame decode and copy calls no longer
            wait for this process's GIL; each stream holds ``slots`` frames here, counted against the
            budget (default: ``slots * N`` surfaces).
        broken: ``"raise"`` (the default): a source that cannot be opened fails the group;
            ``"tile"``: it gets a tile with no decoder (:attr:`StreamState.error` says why; paint it with
            :meth:`paint_tile`) while the others play, unless none opens (decoders in threads only).

    Raises:
        InvalidInputError: no sources, a budget with fewer than ``2 * N`` surfaces (``slots * N`` with
            decoder processes), bad sizes.
        alpha2.gpu.Error subclasses: a source that cannot be opened (the others are closed first).
    """

    def __init__(
        self,
        sources: Sequence[str | os.PathLike[str]],
        *,
        device: Any = None,
        hwaccel: str = "auto",
        budget: SurfaceBudget | None = None,
        prefetch: int = 2,
        tile: Size | tuple[int, int] | None = None,
        fit: Size | tuple[int, int] | None = None,
        columns: int | None = None,
        slots: int = 3,
        record_order: bool = False,
        colour_target: ColourTarget | None = None,
        colour_options: ColourOptions | None = None,
        copy_ahead: bool = True,
        decoders: str = "threads",
        broken: str = "raise",
    ) -> None:
        if isinstance(sources, str | bytes | os.PathLike):
            raise InvalidInputError(
                f"sources must be a list of paths, got one path {short_repr(os.fsdecode(sources))}; "
                "pass [path] for a group of one"
            )
        try:
            sources = list(sources)
        except TypeError:
            raise InvalidInputError(f"sources must be a list of paths, got {short_repr(sources)}") from None
        if budget is not None and not isinstance(budget, SurfaceBudget):
            raise InvalidInputError(f"budget must be a SurfaceBudget or None, got {short_repr(budget)}")
        slots = arguments.whole("slots", slots, low=1)
        record_order = arguments.flag("record_order", record_order)
        copy_ahead = arguments.flag("copy_ahead", copy_ahead)
        if tile is not None:
            tile = arguments.size("tile", tile)
            if tile.width < 2 or tile.height < 2:
                raise InvalidInputError(f"tile must be at least 2x2, got {tile.width}x{tile.height}")
        if fit is not None:
            fit = arguments.size("fit", fit)
        if columns is not None:
            columns = arguments.whole("columns", columns, low=1)
        given = device
        device = as_device(device, hwaccel)  # a CUDA ordinal or a WebGPU device: made a Device; else why not
        count = len(sources)
        if decoders not in ("threads", "processes"):
            raise InvalidInputError(f"decoders must be 'threads' or 'processes', got {decoders!r}")
        if broken not in ("raise", "tile"):
            raise InvalidInputError(f"broken must be 'raise' or 'tile', got {broken!r}")
        if broken == "tile" and decoders == "processes":
            # Refused, not ignored: the group raised at the first bad source (an outside pass).
            raise InvalidInputError(
                "broken='tile' is for decoders='threads': decoder processes open together, and a source "
                "that fails stops the group"
            )
        self._broken = broken
        self.decoders = decoders
        """Where the streams decode: ``threads`` of this process, or ``processes`` of their own."""
        self.columns, self.rows = grid_shape(count)
        if columns is not None:
            self.columns, self.rows = columns, math.ceil(count / columns)
        if budget is None:
            budget = SurfaceBudget(max_surfaces=(slots if decoders == "processes" else 2) * count)
        elif decoders == "threads" and budget.max_surfaces is not None and budget.max_surfaces < 2 * count:
            # A timed tick holds two frames a stream at once: a budget of N (once said to be enough)
            # stopped the first timed tick of 4 streams for the budget's wait, then a SurfaceBudgetError.
            raise InvalidInputError(
                f"the surface budget allows {budget.max_surfaces} surfaces; {count} streams decoding in "
                f"threads need at least {2 * count}: a tick holds two frames a stream (the one it draws, "
                "and the next, read to know it is not due yet)"
            )
        elif (
            decoders == "processes"
            and budget.max_surfaces is not None
            and budget.max_surfaces < slots * count
        ):
            # A decoder process reserves its slots together, at its first frame: a budget of N (once
            # said to be enough) waited out the budget there and raised 'surface budget stayed full'.
            raise InvalidInputError(
                f"the surface budget allows {budget.max_surfaces} surfaces; {count} streams in decoder "
                f"processes of {slots} slots each need at least {slots * count} (each process reserves its "
                "slots together); give fewer slots or a larger budget"
            )
        self.budget = budget
        """The one surface budget every stream's frames count against."""
        self.record_order = record_order
        # Closed with the group where made here (an adopted WebGPU device itself stays the caller's).
        self._owns_device = device is None or device is not given
        self._closed = False
        # Held by a tick (and a read-back) while it works: close() from another thread waits for it
        # before it tears the GPU objects down (they were torn down under it: an IndexError from the
        # submit throttle, where the tick should have said the group was closed).
        self._busy = threading.RLock()
        self._streams: list[StreamState] = []
        self._objects: list[Any] = []
        # Dropped unclosed: its decoders' threads (and processes) are stopped when it is collected,
        # with a ResourceWarning, as Python's files do. Holds the list, never the group.
        self._pid = os.getpid()  # the process whose decoder threads and device these are
        self._finalizer = weakref.finalize(self, _close_abandoned, self._objects, count, self._pid)
        self._ticks = 0
        self._copy_ahead = copy_ahead
        self.submissions = 0
        """``queue.submit`` calls made by ticks (one per tick that drew something)."""
        self.stages = pipeline.StageTimes()
        """Time per stage (decode wait, import, render, submit), over all ticks."""
        try:
            if device is None:
                device = open_device(hwaccel)
            self.device: Device = device
            """The one Device every stream goes to."""
            self._open(sources, hwaccel, prefetch, slots, tile, fit, colour_target, colour_options)
        except BaseException:
            self.close()
            raise

    # -- opening ----------------------------------------------------------------------------------

    def _open(
        self,
        sources: Sequence[str | os.PathLike[str]],
        hwaccel: str,
        prefetch: int,
        slots: int,
        tile: Size | None,
        fit: Size | None,
        colour_target: ColourTarget | None,
        colour_options: ColourOptions | None,
    ) -> None:
        from alpha2.native_gpu.interop.importer import FrameImporter
        from alpha2.native_gpu.render.renderer import FrameRenderer

        decoders: list[Any] = []
        if self.decoders == "processes":
            from alpha2.api.decode_process import open_processes

            decoders = list(
                open_processes(
                    sources,
                    device=self.device,
                    hwaccel=hwaccel,
                    slots=slots,
                    prefetch=prefetch,
                    budget=self.budget,
                )
            )
            self._objects.extend(decoders)
        errors: dict[int, str] = {}
        for index, source in enumerate(sources if not decoders else ()):
            try:
                decoder = open_decoder(
                    source, self.device, hwaccel=hwaccel, budget=self.budget, prefetch=prefetch
                )
            except Error as exc:
                if self._broken != "tile":
                    raise
                errors[index] = exc.message
                decoders.append(None)
                continue
            self._objects.append(decoder)
            decoders.append(decoder)
        live = [d for d in decoders if d is not None]
        if not live:
            said = [f"{os.fspath(sources[i])}: {errors[i]}" for i in sorted(errors)]
            more = f"; and {len(said) - 3} more" if len(said) > 3 else ""
            opened = f"none of the {len(sources)} sources opened; "
            raise InvalidInputError(opened + "; ".join(said[:3]) + more)
        # Tiles take the pictures as displayed: the pixel shape applied, a quarter-turn display matrix
        # swaps the sides.
        sizes = [(shown.width, shown.height) for shown in (stream_displayed_size(d.info) for d in live)]
        if tile is None:
            width = max(w for w, _ in sizes)
            height = max(h for _, h in sizes)
            box = Size(MAX_WALL.width // self.columns, MAX_WALL.height // self.rows)
            tile = _fit_no_upscale(width, height, box)
        if fit is not None:
            if fit.width < 2 * self.columns or fit.height < 2 * self.rows:
                raise InvalidInputError(
                    f"fit: a {self.columns}x{self.rows} wall of tiles of at least 2x2 cannot fit in "
                    f"{fit.width}x{fit.height}"
                )
            while tile.width * self.columns > fit.width or tile.height * self.rows > fit.height:
                tile = Size(max(2, tile.width // 2), max(2, tile.height // 2))
        self.tile = tile
        """The size of one tile."""
        self.size = Size(tile.width * self.columns, tile.height * self.rows)
        """The wall's size."""
        limit = texture_limit(self.device.webgpu_device)
        if limit is not None and max(self.size.width, self.size.height) > limit:
            raise InvalidInputError(
                f"a wall of {self.columns}x{self.rows} tiles of {tile.width}x{tile.height} is "
                f"{self.size.width}x{self.size.height}, more than this device's textures take ({limit} a "
                "side); give a smaller tile, or fit"
            )
        webgpu = self.device.webgpu_device
        gpu = self.device.gpu_module
        self._gpu = gpu
        # One bind group per (stream, slot) stays cached: enough entries that none is rebuilt per frame.
        self.renderer = FrameRenderer(
            self.device,
            cache_size=max(64, 2 * len(sources) * (slots + 1)),
            colour_target=colour_target,
            colour_options=colour_options,
        )
        usage = gpu.TextureUsage
        self.wall = webgpu.create_texture(
            label="alpha2 wall",
            size=(self.size.width, self.size.height, 1),
            format=_WALL_FORMAT,
            usage=usage.RENDER_ATTACHMENT | usage.COPY_DST | usage.COPY_SRC | usage.TEXTURE_BINDING,
        )
        """The wall texture (rgba8unorm), which every tick draws into."""
        self._wall_view = self.wall.create_view()
        self._black: Any = None  # a buffer of one black tile, copied over a tile whose letterbox changes
        self._black_row_bytes = 0
        self._in_flight = SubmitThrottle(webgpu, gpu, label="alpha2 wall throttle")
        # The wall starts black (the letterbox bars, tiles with no frame yet): each tick draws only the
        # tiles with a new frame, the others keep what the wall holds.
        encoder = webgpu.create_command_encoder(label="alpha2 wall clear")
        clear = encoder.begin_render_pass(
            color_attachments=[
                {
                    "view": self._wall_view,
                    "clear_value": (0.0, 0.0, 0.0, 1.0),
                    "load_op": "clear",
                    "store_op": "store",
                }
            ]
        )
        clear.end()
        webgpu.queue.submit([encoder.finish()])
        self._dirty = True  # the first tick submits even with no frame (the wall's first picture)
        for index, (source, decoder) in enumerate(zip(sources, decoders, strict=True)):
            importer = None
            if decoder is not None and isinstance(decoder, DecodeSession):
                importer = FrameImporter(self.device, slots=slots)
                self._objects.append(importer)
                importer.prepare(
                    gpu_frames=decoder.hwaccel_report.active is HwAccelMode.CUDA,
                    identity=decoder.expected_identity(),
                    copy_ahead=self._copy_ahead,
                )
                if self._copy_ahead:
                    decoder.set_copy_ahead(importer.copy_ahead)
            column, row = index % self.columns, index // self.columns
            origin = (column * tile.width, row * tile.height)
            state = StreamState(os.fspath(source), decoder, importer, origin)
            if decoder is None:
                state.error, state.ended = errors[index], True
            self._streams.append(state)

    # -- what it is ---------------------------------------------------------------------------------

    @property
    def streams(self) -> tuple[StreamState, ...]:
        """The streams, in tile order."""
        return tuple(self._streams)

    @property
    def finished(self) -> bool:
        """Every stream has ended (nothing left to draw)."""
        return all(s.ended and s.pending is None for s in self._streams)

    def preroll(self, timeout_s: float = 2.0) -> float:
        """Wait until every stream has decoded as far ahead as it may, as a player buffers before its
        clock starts; returns the seconds waited.

        Call it after the first tick (which starts the decoders): a clock started while decoders are
        still filling their queues finds them catching up all at once, wanting the CPU and the GIL
        the ticks want. A stream is ready when its decoder has ``prefetch`` frames waiting (or its
        end), when it has ended, or when the shared surface budget is full; waits at most
        ``timeout_s``. (With the default budget of two surfaces a stream, on the H200 with 16 NVDEC
        streams, the budget was full by the end of the first tick: it returned at once.)

        Raises:
            ClosedError: the group was closed.
        """
        self._check_open()
        timeout_s = arguments.real("timeout_s", timeout_s, low=0.0)
        start = time.perf_counter()
        deadline = start + timeout_s
        while not self._buffered() and time.perf_counter() < deadline:
            time.sleep(0.002)
        return time.perf_counter() - start

    def _buffered(self) -> bool:
        usage = self.budget.usage()
        if usage.max_surfaces is not None and usage.surfaces >= usage.max_surfaces:
            return True
        for stream in self._streams:
            if stream.decoder is None:
                continue
            queued, depth = stream.decoder.decoded_ahead
            if not stream.ended and queued < depth:
                return False
        return True

    # -- per tick -----------------------------------------------------------------------------------

    def _next(self, stream: StreamState) -> Any:
        frame = stream.decoder.next_frame()
        if frame is None:
            stream.ended = True
        elif stream.start_pts_s is None:
            stream.start_pts_s = _pts(frame) or 0.0
        return frame

    def _due(self, stream: StreamState, at_s: float | None) -> tuple[Any, int]:
        """The latest frame due at ``at_s`` (None: the next frame), and how many were skipped for it."""
        if at_s is None:
            if stream.pending is not None:
                frame, stream.pending = stream.pending, None
                return frame, 0
            return (None, 0) if stream.ended else (self._next(stream), 0)
        chosen: Any = None
        skipped = 0
        while True:
            if stream.pending is None:
                if stream.ended:
                    break
                stream.pending = self._next(stream)
                if stream.pending is None:
                    break
            pts = _pts(stream.pending)
            start = stream.start_pts_s or 0.0
            if pts is not None and pts - start > at_s:
                break
            if chosen is not None:
                chosen.release()
                skipped += 1
            chosen, stream.pending = stream.pending, None
        return chosen, skipped

    def _tile_rect(self, stream: StreamState, fitted: Size) -> tuple[int, int, int, int]:
        """Where a ``fitted`` picture sits in the wall: centred in ``stream``'s tile."""
        x = stream.origin[0] + (self.tile.width - fitted.width) // 2
        y = stream.origin[1] + (self.tile.height - fitted.height) // 2
        return x, y, fitted.width, fitted.height

    def _blacken_tile(self, encoder: Any, stream: StreamState) -> None:
        """Encode a copy of black over ``stream``'s whole tile (its old picture may show around a new one)."""
        if self._black is None:
            import numpy as np

            self._black_row_bytes = (self.tile.width * 4 + 255) // 256 * 256
            black = np.zeros((self.tile.height, self._black_row_bytes), np.uint8)
            black[:, 3 : self.tile.width * 4 : 4] = 255
            self._black = self.device.webgpu_device.create_buffer_with_data(
                label="alpha2 wall black tile", data=black, usage=self._gpu.BufferUsage.COPY_SRC
            )
        encoder.copy_buffer_to_texture(
            {"buffer": self._black, "offset": 0, "bytes_per_row": self._black_row_bytes},
            {"texture": self.wall, "mip_level": 0, "origin": (*stream.origin, 0)},
            (self.tile.width, self.tile.height, 1),
        )

    def tick(self, at_s: float | None = None) -> StreamTick:
        """Draw the latest due frame of every stream into the wall, in one submit.

        Args:
            at_s: the display time in seconds from the streams' starts: each stream shows its latest
                frame due by then (frames overtaken are released and counted as dropped; a stream with
                no new frame due keeps its tile). None: every stream advances by one frame.

        Raises:
            ClosedError: the group was closed.
            alpha2.gpu.Error subclasses: decode or import failures (the tick's frames are released).
        """
        with self._busy:
            return self._tick(at_s)

    def _tick(self, at_s: float | None) -> StreamTick:
        self._check_open()
        if at_s is not None:
            at_s = arguments.real("at_s", at_s)  # NaN showed every stream's last frame, 'x' a TypeError
        clock = time.perf_counter
        t0 = clock()
        frames: list[Any] = []
        dropped = 0
        try:
            for stream in self._streams:
                frame, skipped = self._due(stream, at_s)
                frames.append(frame)
                dropped += skipped
                stream.frames_dropped += skipped
        except BaseException:
            for frame in frames:
                if frame is not None:
                    frame.release()
            raise
        t1 = clock()
        leases: list[Any] = [None] * len(frames)
        try:
            for index, (stream, frame) in enumerate(zip(self._streams, frames, strict=True)):
                if frame is not None:
                    # A DecodeProcess's frames come as leases already (their import began there).
                    imported = frame if stream.importer is None else stream.importer.import_frame(frame)
                    leases[index] = imported
                    frames[index] = None  # the lease owns it now
            t2 = clock()
            shown = [None if lease is None else lease.frame.metadata.pts_seconds for lease in leases]
            submitted = self._draw(leases)
        finally:
            for frame in frames:
                if frame is not None:
                    frame.release()
            for lease in leases:
                if lease is not None:
                    lease.release()  # after the submit that samples the planes
        self.stages.add("decode", t1 - t0)
        self.stages.add("import", t2 - t1)
        self.stages.add("render", clock() - t2)
        for stream, lease, pts in zip(self._streams, leases, shown, strict=True):
            if lease is not None:
                stream.shown_pts_s = pts
                stream.frames_shown += 1
                if self.record_order and pts is not None:
                    stream.shown_order.append(pts)
        tick = StreamTick(
            index=self._ticks,
            updated=tuple(lease is not None for lease in leases),
            shown_pts_s=tuple(s.shown_pts_s for s in self._streams),
            dropped=dropped,
            submitted=submitted,
        )
        self._ticks += 1
        return tick

    def _draw(self, leases: list[Any]) -> bool:
        """Encode every new frame's render into its tile's rectangle of the wall (one render pass); one
        submit."""
        if not any(lease is not None for lease in leases) and not self._dirty:
            return False
        webgpu = self.device.webgpu_device
        encoder = webgpu.create_command_encoder(label="alpha2 wall tick")
        draws: list[tuple[StreamState, Any, tuple[int, int, int, int]]] = []
        for stream, lease in zip(self._streams, leases, strict=True):
            if lease is None:
                continue
            metadata = lease.frame.metadata
            size = metadata.shown_size  # pixel shape (an anamorphic DVD's 720x480 is 853x480) and turn
            fitted = pipeline.fit_inside(size.width, size.height, self.tile)
            if stream.fitted is not None and stream.fitted != fitted:
                self._blacken_tile(encoder, stream)  # the old picture may show around the new one
            stream.fitted = fitted
            draws.append((stream, lease, self._tile_rect(stream, fitted)))
        if draws:
            render_pass = encoder.begin_render_pass(
                color_attachments=[{"view": self._wall_view, "load_op": "load", "store_op": "store"}]
            )
            for stream, lease, rect in draws:
                self.renderer.encode_draw(
                    render_pass,
                    lease,
                    rect=rect,
                    target_format=_WALL_FORMAT,
                    rotation=lease.frame.metadata.rotation,
                )
                stream.colour = self.renderer.last_colour
            render_pass.end()
        self._dirty = False
        self._in_flight.encode(encoder, self.wall)
        t0 = time.perf_counter()
        webgpu.queue.submit([encoder.finish()])
        self._in_flight.submitted()  # its wait is the GPU's finishing this tick, not every later submit
        self.stages.add("submit", time.perf_counter() - t0)
        self.submissions += 1
        return True

    def paint_tile(self, index: int, pixels: Any) -> None:
        """Put an RGBA image ((H, W, 4) uint8, at most the tile's size; centred in it, on black) in
        stream ``index``'s tile of the wall, at once (the next tick submits, for a window to show it);
        for a stream with no decoder (a broken source: its error as text).

        Raises:
            InvalidInputError: a bad index, shape or size, or a stream that plays.
            ClosedError: the group was closed.
        """
        import numpy as np

        self._check_open()
        if not 0 <= arguments.whole("index", index) < len(self._streams):
            raise InvalidInputError(f"no stream {index}; the group has {len(self._streams)}")
        stream = self._streams[index]
        if stream.decoder is not None:
            raise InvalidInputError(f"stream {index} ({stream.source}) plays: its tile is its frames")
        array = np.ascontiguousarray(pixels)
        if array.ndim != 3 or array.shape[2] != 4 or array.dtype != np.uint8:
            raise InvalidInputError(
                f"a tile image is (height, width, 4) uint8, got {array.shape} {array.dtype}"
            )
        height, width = int(array.shape[0]), int(array.shape[1])
        if not (0 < width <= self.tile.width and 0 < height <= self.tile.height):
            raise InvalidInputError(
                f"a tile image must fit the {self.tile.width}x{self.tile.height} tile, got {width}x{height}"
            )
        tile = np.zeros((self.tile.height, self.tile.width, 4), np.uint8)
        tile[..., 3] = 255
        fitted = Size(width, height)
        x, y, _, _ = self._tile_rect(stream, fitted)
        left, top = x - stream.origin[0], y - stream.origin[1]
        tile[top : top + height, left : left + width] = array
        # Queue order: after the wall's clear (made when the group opened) and every tick submitted so far.
        self.device.webgpu_device.queue.write_texture(
            {"texture": self.wall, "mip_level": 0, "origin": (*stream.origin, 0)},
            tile,
            {"offset": 0, "bytes_per_row": self.tile.width * 4, "rows_per_image": self.tile.height},
            (self.tile.width, self.tile.height, 1),
        )
        stream.fitted = fitted
        self._dirty = True

    def seek(self, at_s: float) -> None:
        """Every stream that plays to ``at_s`` seconds from its start (the frame on display there comes
        with the next tick that asks for that time).

        Raises:
            UnsupportedError: decoders in processes (they seek only before their first frame).
            ClosedError: the group was closed.
        """
        self._check_open()
        if self.decoders == "processes":
            raise UnsupportedError("a wall of decoder processes cannot seek once it plays; use threads")
        target = max(0.0, arguments.real("at_s", at_s))
        for stream in self._streams:
            if stream.decoder is None:
                continue
            if stream.pending is not None:
                stream.pending.release()
                stream.pending = None
            # A stream shorter than the target shows its last frame, as it did when it played there: sought
            # past its end it found no frame, and its tile kept the one from before the seek (a 3 s clip
            # in a wall sought from 0:02 to 0:07 still showed 0:02).
            duration = stream.decoder.info.duration_seconds
            own = target if duration is None else min(target, max(0.0, duration - _BEFORE_THE_END_S))
            stream.decoder.seek(own)
            stream.ended = False

    def run(self, frames: int | None = None) -> int:
        """Tick (each stream one frame a tick) until every stream ended or ``frames`` ticks; returns ticks.

        Raises:
            InvalidInputError: ``frames`` is not a whole number >= 0.
            ClosedError: the group was closed.
        """
        if frames is not None:
            frames = arguments.whole("frames", frames, low=0)
        self._check_open()
        done = 0
        while not self.finished and (frames is None or done < frames):
            tick = self.tick()
            if not tick.submitted and self.finished:
                break
            done += 1
        return done

    def drain(self) -> None:
        """Wait until the GPU has done every submitted tick."""
        self._check_process()
        if not self._closed:
            self._in_flight.drain()

    def read_wall(self) -> Any:
        """The wall as an (H, W, 4) uint8 RGBA array (waits for the GPU)."""
        from alpha2.native_gpu.render.renderer import read_texture_rgba

        with self._busy:
            self._check_open()
            return read_texture_rgba(self.device.webgpu_device, self.wall)

    def path_counts(self) -> pipeline.PathCounter:
        """Frames and bytes per path, over every stream's importer."""
        from alpha2.gpu.identity import ExecutionPath

        counter = pipeline.PathCounter()
        for stream in self._streams:
            if stream.importer is None and stream.decoder is None:
                continue  # a broken source: nothing decoded
            report = (stream.importer or stream.decoder).path_report
            counter.merge_counts(report.frames_by_path, report.fallbacks)
            counter.bytes[ExecutionPath.CPU_UPLOAD] += report.bytes_crossed_cpu
        return counter

    # -- lifetime -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Release pending frames, close importers, decoders, textures and an owned Device (idempotent). In
        a process forked after the group was made it frees nothing: the process that made it closes it."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        if self._pid != os.getpid():
            keep_in_fork(self._objects)
            return
        busy = getattr(self, "_busy", None)
        if busy is None:  # __init__ failed before the lock was made: nothing ticks
            self._close()
            return
        if not busy.acquire(blocking=False):
            # A tick runs on another thread: stop the decoders it may wait on, then let it finish (it
            # raises ClosedError) before the GPU objects it uses go.
            for stream in self._streams:
                if stream.decoder is not None:
                    with contextlib.suppress(Exception):
                        stream.decoder.close()
            busy.acquire()
        try:
            self._close()
        finally:
            busy.release()

    def _close(self) -> None:
        for stream in self._streams:
            if stream.pending is not None:
                stream.pending.release()
                stream.pending = None
        in_flight = getattr(self, "_in_flight", None)
        if in_flight is not None:
            try:
                in_flight.drain()
            finally:
                in_flight.close()
        for obj in reversed(self._objects):
            try:
                obj.close()
            except Exception:
                pass  # tear-down after a failure must not hide the failure
        self._objects.clear()
        black = getattr(self, "_black", None)
        if black is not None:
            self._black = None
            black.destroy()
        renderer = getattr(self, "renderer", None)
        if renderer is not None:
            renderer.clear_cache()
        wall = getattr(self, "wall", None)
        if wall is not None:
            wall.destroy()
        device = getattr(self, "device", None)
        if device is not None and self._owns_device:
            device.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def _check_process(self) -> None:
        if self._pid != os.getpid():
            raise ClosedError(
                f"this StreamGroup was made in process {self._pid}, which this one was forked from: its "
                "decoder threads and GPU device did not come with the fork; make a StreamGroup in this "
                "process (in a DataLoader worker: on first use in __getitem__, or in worker_init_fn)"
            )

    def _check_open(self) -> None:
        self._check_process()
        if self._closed:
            raise ClosedError("this StreamGroup was closed")

    def __enter__(self) -> StreamGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        # Without this, pickle failed with "cannot pickle '_thread.RLock' object", and copy.copy made a
        # second group on the same decoders and device.
        raise InvalidInputError(
            "an alpha2 StreamGroup cannot be pickled or copied: its decoder threads and GPU device stay in "
            "this process; keep the paths and make a StreamGroup in each process"
        )
