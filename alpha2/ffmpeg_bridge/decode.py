"""Decode sessions: a container's video stream as :class:`~alpha2.gpu.frames.DecodedFrame` objects.

Software decoding hands out PyAV's own plane buffers as a CPU plane set (no copies); NVDEC keeps the
frames on the GPU and hands out their planes as pitched CUDA pointers. Every frame handed out holds a
reservation on a :class:`~alpha2.gpu.surfaces.SurfaceBudget`; when the budget is full the session
waits (bounded) or fails, as the budget is configured, and the NVDEC frame pool is sized so that a
consumer holding up to ``max_surfaces`` frames never starves the decoder. One decoder's pool is at most
:data:`NVDEC_MAX_SURFACES`; a budget shared by more sessions than that allows caps each session's
share (:func:`nvdec_pool_plan`), and the session waits for its own frames as for the budget.

:class:`DecodeSession` is one state machine (open, decode ahead, describe, seek, close) and stays in
one module for that reason; what stands alone lives beside it: the decode-ahead worker in
:mod:`.prefetch`, the host copy of NVDEC frames in :mod:`.download`, stream facts in :mod:`.media`.
"""

from __future__ import annotations

import bisect
import collections
import fractions
import gc
import io
import itertools
import math
import numbers
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import IO, Any

import av
import av.container
import av.error
import av.video.stream

from alpha2.ffmpeg_bridge import cuvid, media, seeking
from alpha2.ffmpeg_bridge.channel_layouts import open_input
from alpha2.ffmpeg_bridge.decode_stats import CorruptPolicy, DecodeStats
from alpha2.ffmpeg_bridge.download import download_frame
from alpha2.ffmpeg_bridge.errors import (
    DecodeError,
    HwAccelUnavailableError,
    MediaFormatError,
    NoVideoStreamError,
    UnsupportedCodecError,
    from_ffmpeg,
    from_ffmpeg_open,
)
from alpha2.ffmpeg_bridge.hdr import hdr_metadata_of
from alpha2.ffmpeg_bridge.hwdevice import (
    PRIMARY_CONTEXT_NOTE,
    HwAccelMode,
    HwAccelReport,
    HwDevicePlan,
    make_hwaccel,
    plan_hw_device,
)
from alpha2.ffmpeg_bridge.prefetch import Described, Prefetcher, Produced, discard
from alpha2.gpu.errors import ClosedError, InvalidInputError, UnknownFormatError, UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import AheadWork, DecodedFrame
from alpha2.gpu.geometry import FrameMetadata, Rotation, Size
from alpha2.gpu.identity import DecoderPlacement, PlacesDecoders
from alpha2.gpu.surfaces import SurfaceBudget, SurfaceBudgetError, SurfaceIdentity

__all__ = ["CorruptPolicy", "DecodeSession", "DecodeStats", "MediaSource", "download_frame"]


MediaSource = str | os.PathLike[str] | IO[bytes]
"""A path, or a readable (ideally seekable) binary file object."""

DEFAULT_HW_SURFACES = 8
"""Surfaces a session may hand out from NVDEC when its budget sets no surface limit."""

NVDEC_MAX_SURFACES = 32
"""Decode surfaces one NVDEC decoder takes at most (FFmpeg warns that more "might cause nvdec to fail",
and on the H200 a 35-surface pool fails its first packet with "Invalid data")."""

NVDEC_MAX_EXTRA_SURFACES = NVDEC_MAX_SURFACES - 18
"""Surfaces the application may hold beyond FFmpeg's own pool, whose worst case is a 16-frame DPB + 2."""

DECODE_ON_SECONDS = 1.0
"""How far past the latest frame handed out a seek decodes on instead of seeking, where no frame index
tells where the key frames are: as exact, and about what a seek's own decoding costs (a seek decodes
from the key frame before its target)."""


def nvdec_pool_plan(limit: int, prefetch: int) -> tuple[int, int | None]:
    """The ``extra_hw_frames`` an NVDEC session asks for, and the most frames it may then hand out.

    The session wants room for ``limit`` frames held by the application (its budget's surfaces) and
    ``prefetch`` decoded ahead. A budget shared by many sessions can be larger than one decoder's pool
    may be (:data:`NVDEC_MAX_EXTRA_SURFACES`): then the pool is capped and the session hands out at most
    what it holds (the second value; None when the budget is the only limit), waiting like the budget.
    """
    wanted = limit + prefetch
    extra = min(wanted, NVDEC_MAX_EXTRA_SURFACES)
    if wanted <= extra:
        return extra, None
    return extra, max(1, extra - prefetch)


_decoder_ids = itertools.count(1)
_decoder_ids_lock = threading.Lock()


def _next_decoder_id() -> int:
    with _decoder_ids_lock:
        return next(_decoder_ids)


_SHORT_REPR_CHARS = 80
"""Messages show at most this much of a value's repr (never a whole buffer someone passed)."""


def short_repr(value: object, limit: int = _SHORT_REPR_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _display_source(source: MediaSource) -> str:
    if isinstance(source, str | os.PathLike):
        return short_repr(os.fspath(source), 200)
    name = getattr(source, "name", None)
    if isinstance(name, str):
        return short_repr(name, 200)
    if isinstance(source, io.BytesIO):
        try:
            with source.getbuffer() as view:
                return f"<{view.nbytes} bytes in memory>"
        except ValueError:
            return "<closed BytesIO>"
    return f"<{type(source).__name__} file object>"


class _FreedBeforeFork:
    """A closed container and its streams refer to each other: only the cyclic collector frees them.
    Freed in a process forked meanwhile (a DataLoader's workers), FFmpeg's avcodec_free_context waits
    forever for frame threads the fork did not copy. So a fork that follows a close collects first, in
    the parent, where those threads are."""

    def __init__(self) -> None:
        self.due = False

    def __call__(self) -> None:
        if self.due:
            self.due = False
            gc.collect()


_freed_before_fork = _FreedBeforeFork()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_freed_before_fork)


def _fallback_software_format(name: str) -> str:
    """A format alpha2 knows, for decoders that output one it does not (e.g. yuv410p, pal8, bgr0).

    RGB without an alpha component (bgr0's fourth byte is padding, gbrp has none) becomes rgb24, so
    that nothing downstream takes it for a picture with alpha; RGB with alpha and palettes, rgba.
    """
    lowered = name.lower()
    try:
        described = av.VideoFormat(lowered)
    except (ValueError, TypeError):
        described = None
    if described is not None and described.is_rgb:
        return "rgba" if any(c.is_alpha for c in described.components) else "rgb24"
    if any(tag in lowered for tag in ("rgb", "bgr", "gbr", "pal", "argb", "abgr")):
        return "rgba"
    if lowered.startswith(("gray", "ya")):
        return "gray"
    if described is not None and len(described.components) >= 3:
        # Y'CbCr: the same chroma and at least the same depth where alpha2 has such a layout (alpha
        # kept only at 8-bit 4:2:0, the one alpha layout it has).
        cb = av.VideoFormat(lowered, 16, 16).components[1]
        chroma = {(True, True): "420", (True, False): "422"}.get((cb.width < 16, cb.height < 16), "444")
        bits = max(component.bits for component in described.components)
        alpha = any(component.is_alpha for component in described.components)
        if alpha and chroma == "420" and bits <= 8:
            return "yuva420p"
        for depth in (8, 10, 12, 16):
            if depth < bits:
                continue
            name = f"yuv{chroma}p" if depth == 8 else f"yuv{chroma}p{depth}le"
            try:
                PixelFormat.from_ffmpeg_name(name)
            except UnknownFormatError:
                continue
            return name
    return "yuv420p"


def _fraction(value: Any) -> fractions.Fraction:
    """``value`` as a Fraction; PyAV's time bases already are one (not copied, per frame)."""
    return value if type(value) is fractions.Fraction else fractions.Fraction(value)


def _check_options(
    *,
    budget: Any,
    threads: Any,
    stream_index: Any,
    cuda_ordinal: Any,
    reserve_timeout_s: Any,
    prefetch: Any,
    max_pixels: Any,
) -> None:
    """A DecodeSession's options of the wrong type or value are refused at open, each by name (they
    failed deep inside, some only at the first frame: a ``TypeError`` from a comparison, an
    ``AttributeError`` from the budget)."""

    def whole(name: str, value: Any, low: int, what: str, none: str | None = None) -> None:
        if value is None and none is not None:
            return
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            also = f" (or None: {none})" if none is not None else ""
            raise InvalidInputError(
                f"{name} must be a whole number >= {low}{what}{also}, got {short_repr(value)}"
            )

    whole("threads", threads, 0, " (0: one per core)")
    whole("prefetch", prefetch, 0, " frames")
    whole("stream_index", stream_index, 0, "", "the best video stream")
    whole("cuda_ordinal", cuda_ordinal, 0, "", "the current or first CUDA device")
    whole("max_pixels", max_pixels, 1, "", "no limit")
    if budget is not None and not isinstance(budget, SurfaceBudget):
        raise InvalidInputError(
            f"budget must be an alpha2 SurfaceBudget (alpha2.gpu.surfaces.SurfaceBudget(max_surfaces=N)) "
            f"or None, got {short_repr(budget)}"
        )
    if reserve_timeout_s is not None and (
        isinstance(reserve_timeout_s, bool)
        or not isinstance(reserve_timeout_s, numbers.Real)
        or not math.isfinite(reserve_timeout_s)
        or reserve_timeout_s < 0
    ):
        raise InvalidInputError(
            f"reserve_timeout_s must be a number of seconds >= 0 (or None: the budget's own), got "
            f"{short_repr(reserve_timeout_s)}"
        )


class DecodeSession:
    """Decode the video stream of a file or file object, frame by frame.

    Args:
        source: A path or a readable binary file object.
        hwaccel: ``'auto'`` (NVDEC where ``device`` places it, else software, with the reason in
            :attr:`hwaccel_report`), ``'cuda'`` (NVDEC or an error) or ``'none'``.
        budget: The surface budget frames count against; shared between sessions as wanted. None:
            a private, unlimited budget for software decoding, and one of ``DEFAULT_HW_SURFACES``
            surfaces for NVDEC (its pool is finite).
        threads: Decoder threads for software decoding; 0 lets FFmpeg pick one per core.
        on_corrupt: ``'keep'`` frames the decoder flags corrupt (the default, as FFmpeg does), ``'skip'``
            them, or ``'stop'`` with a DecodeError; kept and skipped ones are counted in :attr:`stats`.
        stream_index: Which video stream (index among the container's video streams); None picks the best.
        cuda_ordinal: Decode on this CUDA ordinal instead of where ``device`` places it; the caller then
            keeps decoder and renderer on one GPU.
        device: Where the frames go: an alpha2 Device (NVDEC runs on its CUDA twin, found when the
            Device was made) or a :class:`~alpha2.gpu.identity.DecoderPlacement`. None: CUDA ordinal 0
            where a CUDA driver is present (``alpha2.open`` always places the decoder on its device).
        reserve_timeout_s: How long to wait for room in the budget (WAIT policy); None uses the budget's.
        prefetch: Decode up to this many frames ahead on a worker thread (0: decode on the caller's
            thread). PyAV releases the GIL while demuxing and decoding, so the caller's per-frame work
            (import, render, encode) overlaps the decoder's. Prefetched frames hold no reservation until
            handed out; NVDEC's pool is enlarged by this many frames so they never starve it.
        max_pixels: Refuse pictures of more pixels than this (OutOfMemoryError), from the stream's
            coded size at open and again from the first frame, before a decoder allocates frames that
            size (a 15 KB stream whose SPS claims 8192x8192 took 9.5 GB). Default
            :data:`~alpha2.gpu.geometry.DEFAULT_MAX_PIXELS` (8K), so that every decoder (the
            player's too) is bounded; None: no limit.

    Raises:
        MediaNotFoundError, MediaFormatError, NoVideoStreamError, UnsupportedCodecError,
        HwAccelUnavailableError: See :mod:`alpha2.ffmpeg_bridge.errors`.
        OutOfMemoryError: The pictures are over ``max_pixels``.
    """

    def __init__(
        self,
        source: MediaSource,
        *,
        hwaccel: HwAccelMode | str = "auto",
        budget: SurfaceBudget | None = None,
        threads: int = 0,
        on_corrupt: CorruptPolicy | str = "keep",
        stream_index: int | None = None,
        cuda_ordinal: int | None = None,
        device: PlacesDecoders | DecoderPlacement | None = None,
        reserve_timeout_s: float | None = None,
        prefetch: int = 0,
        max_pixels: int | None = media.DEFAULT_MAX_PIXELS,
    ) -> None:
        if not isinstance(source, str | os.PathLike) and not callable(getattr(source, "read", None)):
            raise InvalidInputError(
                f"source must be a path (str or os.PathLike) or a readable binary file object, got "
                f"{type(source).__name__} {short_repr(source)}"
            )
        _check_options(
            budget=budget,
            threads=threads,
            stream_index=stream_index,
            cuda_ordinal=cuda_ordinal,
            reserve_timeout_s=reserve_timeout_s,
            prefetch=prefetch,
            max_pixels=max_pixels,
        )
        self.source = source
        """What was opened (path or file object)."""
        self._mode = HwAccelMode.parse(hwaccel)
        self._on_corrupt = CorruptPolicy.parse(on_corrupt)
        self._threads = threads
        self._stream_choice = stream_index
        self._reserve_timeout_s = reserve_timeout_s
        self._decoder_id = _next_decoder_id()
        self._generation = 0
        self._last_shape: tuple[int, int, PixelFormat] | None = None
        self._stats = DecodeStats()
        self._container: av.container.InputContainer | None = None
        self._stream: av.video.stream.VideoStream | None = None
        # What decodes the stream's packets: its own codec context, or FFmpeg's cuvid decoder (see
        # .cuvid), which then decodes on NVDEC where the hwaccel would.
        self._decoder: Any = None
        self._still: tuple[int, int] | None = None  # an attached picture's (pts, ticks shown): _still_span
        self._decode_order_times = False  # frames take their packets' times in order: see _decode_order_times
        self._still_frame: av.VideoFrame | None = None  # its one picture, decoded when the session opened
        self._frames: Iterator[av.VideoFrame] | None = None
        self._pending: av.VideoFrame | Described | None = None
        self._seek_target: int | None = None
        self._seek_after = False  # the seek target is a frame handed out already: resume after it
        self._held: av.VideoFrame | None = None  # decoded past a target: the next frame to hand out
        # Frames decoded already, handed out next, before _held (a seek forward in the GOP kept them).
        self._kept: collections.deque[av.VideoFrame | Described] = collections.deque()
        # Where the caller is, to come back to after the frame index scan moved the demuxer:
        # ("start", None), ("at", target), ("after", pts of the last frame handed out) or ("end", None).
        self._cursor: tuple[str, int | None] = ("start", None)
        self._index: seeking.FrameIndex | None = None
        self._last_pts: int | None = None  # of the latest frame decoded since the last seek
        self._first_pts: int | None = None  # of the first frame decoded from the start: none shows earlier
        self._last_gap = 0  # between the two latest frames decoded (a last frame's guessed duration)
        self._nvdec_hold_limit: int | None = None  # set at open when the budget outgrows NVDEC's pool
        self._nvdec_live: weakref.WeakSet[DecodedFrame] = weakref.WeakSet()
        self._probing = False  # decoding the first frame after a seek: errors are expected, not counted
        self._discards_seen = False  # a packet the container marks to discard (an edit list) was read
        self._sought = False  # a seek happened: the stream's end says nothing about truncation
        self._untimed = False  # the frames carry no timestamps: _time_untimed gives them some
        self._clock = 0  # an untimed stream's next frame's timestamp
        self._eof = False
        self._closed = False
        self._lock = threading.RLock()
        self._stream_rotation = Rotation.NONE
        self._max_end: int | None = None
        self._ended_early: tuple[float, float] | None = None  # where a cut file ends, of what it announces
        self._stats_lock = threading.Lock()
        self._prefetch_depth = prefetch
        self._prefetcher: Prefetcher | None = None
        self._copy_ahead: Callable[[DecodedFrame], AheadWork | None] | None = None
        self._max_pixels = max_pixels

        plan = plan_hw_device(self._mode, cuda_ordinal, device)
        self._plan = plan
        if budget is None:
            budget = SurfaceBudget(max_surfaces=DEFAULT_HW_SURFACES if plan.use_cuda else None)
        self.budget = budget
        """The budget every handed-out frame counts against."""
        self._report = self._open(plan)
        try:
            self._take_first_frame()
        except BaseException:
            self.close()
            raise

    # -- opening -------------------------------------------------------------------------------

    def _rewind(self) -> None:
        if not isinstance(self.source, str | os.PathLike):
            try:
                self.source.seek(0)
            except (AttributeError, OSError, io.UnsupportedOperation) as exc:
                raise MediaFormatError(
                    f"cannot re-open {_display_source(self.source)}: the file object is not seekable ({exc})"
                ) from exc

    def _open_container(self, hwaccel: Any) -> av.container.InputContainer:
        src: Any = os.fspath(self.source) if isinstance(self.source, str | os.PathLike) else self.source
        try:
            container = open_input(
                src,
                mode="r",
                hwaccel=hwaccel,
                metadata_errors="replace",
                options=media.probe_options(self._max_pixels),
            )
        except av.error.FFmpegError as exc:
            raise from_ffmpeg_open(exc, _display_source(self.source)) from exc
        if not isinstance(container, av.container.InputContainer):
            raise MediaFormatError(f"{_display_source(self.source)} did not open as an input")
        return container

    def _pick_stream(self, container: av.container.InputContainer) -> av.video.stream.VideoStream:
        videos = list(container.streams.video)
        where = _display_source(self.source)
        if not videos:
            kinds = ", ".join(sorted({s.type for s in container.streams})) or "none"
            raise NoVideoStreamError(f"{where} has no video stream (streams: {kinds})")
        if self._stream_choice is not None:
            if not 0 <= self._stream_choice < len(videos):
                raise NoVideoStreamError(
                    f"{where} has {len(videos)} video stream(s); stream_index {self._stream_choice} "
                    f"is out of range 0..{len(videos) - 1}"
                )
            stream = videos[self._stream_choice]
        else:
            try:
                best = container.streams.best("video")
            except Exception:
                best = None
            stream = best if isinstance(best, av.video.stream.VideoStream) else videos[0]
        if stream.codec_context is None:
            codec = getattr(stream, "codec_tag", "") or "unknown"
            raise UnsupportedCodecError(f"no decoder for the video stream of {where} (codec tag {codec!r})")
        return stream

    def _open(self, plan: HwDevicePlan) -> HwAccelReport:
        fallback: str | None = None
        container: av.container.InputContainer | None = None
        if plan.use_cuda:
            src: Any = os.fspath(self.source) if isinstance(self.source, str | os.PathLike) else self.source
            try:
                opened = open_input(
                    src,
                    mode="r",
                    hwaccel=make_hwaccel(plan),
                    metadata_errors="replace",
                    options=media.probe_options(self._max_pixels),
                )
            except (
                av.error.FileNotFoundError,
                av.error.PermissionError,
                av.error.IsADirectoryError,
                av.error.InvalidDataError,
            ) as exc:
                # Bad input is bad input, whatever the device.
                raise from_ffmpeg_open(exc, _display_source(self.source)) from exc
            except (av.error.FFmpegError, RuntimeError, NotImplementedError) as exc:
                why = f"NVDEC on CUDA ordinal {plan.cuda_ordinal} could not be opened: {exc}"
                if "not supported" in str(exc).lower():
                    why += f" ({PRIMARY_CONTEXT_NOTE})"
                if plan.requested is HwAccelMode.CUDA:
                    raise HwAccelUnavailableError(why + "; use hwaccel='auto' or 'none'") from exc
                fallback = why
                self._rewind()
            else:
                if not isinstance(opened, av.container.InputContainer):
                    raise MediaFormatError(f"{_display_source(self.source)} did not open as an input")
                container = opened
        if container is None:
            container = self._open_container(None)
        try:
            stream = self._pick_stream(container)
        except BaseException:
            container.close()
            raise
        cc = stream.codec_context
        self._decoder = cc
        on_gpu = plan.use_cuda and fallback is None and bool(cc.is_hwaccel)
        if plan.use_cuda and fallback is None and not cc.is_hwaccel:
            why = f"FFmpeg has no NVDEC (cuda) hardware config for codec {cc.name!r}"
            if plan.requested is HwAccelMode.CUDA:
                container.close()
                raise HwAccelUnavailableError(why + "; use hwaccel='auto' or 'none'")
            fallback = why
        decoder_note = ""
        if on_gpu:
            try:
                decoder_note = self._open_cuvid(cc, plan, container, stream)
            except BaseException:
                container.close()
                raise
            # The cuvid decoder copies each picture into a pool that grows: holding never starves it.
            if self._decoder is cc:
                self._size_nvdec_pool(cc)
        else:
            cc.thread_type = "AUTO"
            cc.thread_count = self._threads
        # The decoder itself refuses pictures over the limit too: a later SPS may claim more than the
        # first frame (checked below) had.
        cc.options = {**cc.options, **media.probe_options(self._max_pixels)}
        where = _display_source(self.source)
        try:
            coded = (max(cc.width, cc.coded_width), max(cc.height, cc.coded_height))
            media.check_picture_size(*coded, self._max_pixels, where)
        except BaseException:
            container.close()
            raise
        self._container = container
        self._stream = stream
        self._still = _still_span(container, stream)
        self._decode_order_times = _decode_order_times(container, stream)
        self._stream_rotation = media.stream_rotation(stream)
        self._info = media.stream_info(container, stream)
        self._frames = media.within_pixel_limit(self._decode_frames(), self._max_pixels, where)
        return HwAccelReport(
            requested=plan.requested,
            active=HwAccelMode.CUDA if on_gpu else HwAccelMode.NONE,
            device_ordinal=plan.cuda_ordinal if on_gpu else None,
            loader_index=plan.loader_index,
            decoder=str(self._decoder.name),
            reason=(plan.reason + decoder_note) if on_gpu or fallback is None else fallback,
            fallback_reason=fallback if plan.requested is HwAccelMode.AUTO else None,
        )

    def _size_nvdec_pool(self, cc: Any) -> None:
        """Size the hwaccel decoder's pool for what the application may hold, so holding frames never
        starves the decoder (FFmpeg adds these to the pool it needs for its own references)."""
        limit = self.budget.max_surfaces if self.budget.max_surfaces is not None else DEFAULT_HW_SURFACES
        extra, self._nvdec_hold_limit = nvdec_pool_plan(limit, self._prefetch_depth)
        cc.options = {**cc.options, "extra_hw_frames": str(extra)}

    def _open_cuvid(
        self,
        cc: Any,
        plan: HwDevicePlan,
        container: av.container.InputContainer,
        stream: av.video.stream.VideoStream,
    ) -> str:
        """Decode with FFmpeg's cuvid decoder where it suits the stream (:mod:`.cuvid`); what the
        report's reason adds about the decoder chosen."""
        if cc.name not in cuvid.CUVID_DECODERS:
            return ""
        why_not = cuvid.refusal(cc, retimed=_decode_order_times(container, stream))
        if why_not is not None:
            return f"; {why_not}" if why_not else ""
        try:
            self._decoder = cuvid.open_decoder(cc, make_hwaccel(plan))
        except (av.error.FFmpegError, RuntimeError, NotImplementedError) as exc:
            return f"; the NVDEC hwaccel: FFmpeg's cuvid decoder could not be opened ({exc})"
        return "; FFmpeg's cuvid decoder (NVIDIA's parser)"

    def _cuvid_failed(self, exc: BaseException) -> bool:
        """The cuvid decoder failed before its first frame: decode again from the start with the
        stream's own decoder on the NVDEC hwaccel, and say so. False where that cannot be done."""
        assert self._container is not None and self._stream is not None
        cc = self._stream.codec_context
        if self._decoder is cc or self._stats.frames_out or self._sought:
            return False
        self._decoder = cc
        self._size_nvdec_pool(cc)
        self._report = replace(
            self._report,
            decoder=str(cc.name),
            reason=f"{self._report.reason}; the cuvid decoder failed ({exc}), the NVDEC hwaccel took over",
        )
        return self._seek_start()  # the stream's own decoder, never opened: nothing to flush

    def _take_first_frame(self) -> None:
        """Decode the first frame now and hold it (it is handed out first): PyAV exposes no stream
        side data, so the display matrix, coded size and colour of :attr:`info` come from it."""
        frame = self._decoded_next()
        self._held = frame
        if frame is not None:
            self._first_pts = frame.pts
            rotation, mirrored = media.frame_orientation(frame, self._stream_rotation)
            try:
                pixel_format = media.pixel_format_of(frame)
            except UnknownFormatError:  # converted on the way out (see _describe): the target's colour
                pixel_format = PixelFormat.from_ffmpeg_name(_fallback_software_format(frame.format.name))
            colour = media.colour_of(frame, pixel_format)
            self._info = media.with_first_frame(self._info, frame, rotation, colour, mirrored)
            if _start_not_its_own(self._container, self._stream):
                self._info = _counted_from(self._info, frame.pts)

    # -- public state ---------------------------------------------------------------------------

    @property
    def info(self) -> media.StreamInfo:
        """The video stream's codec, size, frame count, rate, time base and duration; its rotation,
        coded size and colour as its first frame says (decoded, and held, when the session opened)."""
        return self._info

    @property
    def discards_seen(self) -> bool:
        """Whether a packet the container marks to discard was read so far (an MP4 edit list that cuts
        the stream's first samples: seen when the session opened). The container's frame count
        (:attr:`info` ``.frame_count``) then counts samples that are never shown; :meth:`frame_index`
        counts the frames shown."""
        return self._discards_seen

    @property
    def hwaccel_report(self) -> HwAccelReport:
        """Where decoding runs and why (updated if NVDEC refuses the stream at the first frame)."""
        return self._report

    def expected_identity(self) -> SurfaceIdentity | None:
        """The identity the next frames will have: known from the frames so far, else predicted from the
        stream parameters for software decoding. None when it cannot be told before decoding: NVDEC's
        output format is only known once the decoder has seen the stream (PyAV puts the hardware
        format, ``cuda``, where the software one was).

        For :meth:`FrameImporter.prepare <alpha2.native_gpu.interop.importer.FrameImporter.prepare>`: textures
        made for this identity are taken by exactly the frames that have it. A first frame that turns out
        different (the parameters lied) starts a new generation instead, so nothing prepared for the
        prediction is ever given a frame of another shape.

        Raises:
            ClosedError: The session was closed.
        """
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeSession was closed")
            if self._last_shape is None:
                predicted = self._predicted_shape()
                if predicted is None:
                    return None
                self._last_shape = predicted  # a first frame of another shape bumps the generation
            width, height, pixel_format = self._last_shape
            return SurfaceIdentity(self._decoder_id, self._generation, width, height, pixel_format)

    def _predicted_shape(self) -> tuple[int, int, PixelFormat] | None:
        info = self._info
        name = info.ffmpeg_pixel_format
        if name is None or info.width <= 0 or info.height <= 0 or self._report.active is HwAccelMode.CUDA:
            return None
        try:
            return info.width, info.height, PixelFormat.from_ffmpeg_name(name)
        except UnknownFormatError:
            return None

    @property
    def fallback_reason(self) -> str | None:
        """Why ``hwaccel='auto'`` decodes in software, or None."""
        return self._report.fallback_reason

    @property
    def stats(self) -> DecodeStats:
        """Counters: frames out, corrupt frames skipped, decode errors, ..."""
        return self._stats

    @property
    def decoder_id(self) -> int:
        """Unique id of this session's decoder (in :class:`SurfaceIdentity`)."""
        return self._decoder_id

    @property
    def generation(self) -> int:
        """Current decoder generation; increments on seek, re-open and size or format change."""
        return self._generation

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    # -- decoding --------------------------------------------------------------------------------

    def _bump(self, generation: int | None = None, **changes: int) -> None:
        # Counts change on the prefetch thread too: every change is made under the lock.
        with self._stats_lock:
            values: dict[str, Any] = {k: getattr(self._stats, k) + v for k, v in changes.items()}
            if generation is not None:
                values["generation"] = generation
            self._stats = replace(self._stats, **values)

    def _corrupt(self, exc: BaseException, what: str) -> None:
        if self._probing:
            return
        if self._on_corrupt is CorruptPolicy.STOP:
            raise from_ffmpeg(exc, f"{what} in {_display_source(self.source)}", DecodeError) from exc
        self._bump(decode_errors=1)

    def _decode_frames(self) -> Iterator[av.VideoFrame]:
        assert self._container is not None and self._stream is not None
        container, stream = self._container, self._stream
        packets = media.without_truncated_tail(container.demux(stream), lambda: self._bump(decode_errors=1))
        # AVI: the packets' times, in decode order, are the frames' times in presentation order (a
        # frame a tick); each frame out takes the next of them (see _decode_order_times).
        times: collections.deque[int] | None = collections.deque() if self._decode_order_times else None
        # The cuvid decoder hands frames out without their packets' durations, and calls key any picture
        # coded wholly intra (FFmpeg's decoders: a random access point): each frame takes its packet's
        # duration and key flag, found by its pts.
        packet_facts: dict[int, tuple[int, bool]] | None = (
            None if self._decoder is stream.codec_context else {}
        )
        while True:
            try:
                packet = next(packets)
            except StopIteration:
                break
            except av.error.FFmpegError as exc:
                # A demuxer read error ends the stream (truncated or garbled container).
                self._corrupt(exc, "reading packets")
                break
            if packet.is_discard:
                self._discards_seen = True
            if times is not None and packet.size and packet.pts is not None:
                times.append(packet.pts)
            if packet_facts is not None and packet.size and packet.pts is not None:
                packet_facts[packet.pts] = (packet.duration or 0, bool(packet.is_keyframe))
            try:
                frames = self._decoder.decode(packet)
            except av.error.FFmpegError as exc:
                if self._cuvid_failed(exc):
                    yield from self._decode_frames()
                    return
                if self._report.active is HwAccelMode.CUDA and self._stats.frames_out == 0:
                    self._hw_failed(exc)
                self._corrupt(exc, "decoding a packet")
                continue
            for frame in frames:
                yield self._timed(frame, times, packet_facts)
        # Drain what the decoder still holds (no-op when demux already sent the flush packet).
        try:
            for frame in self._decoder.decode(None):
                yield self._timed(frame, times, packet_facts)
        except av.error.FFmpegError as exc:
            if not isinstance(exc, av.error.EOFError):
                self._corrupt(exc, "flushing the decoder")
        self._check_complete()

    def _timed(
        self,
        frame: av.VideoFrame,
        times: collections.deque[int] | None,
        packet_facts: dict[int, tuple[int, bool]] | None = None,
    ) -> av.VideoFrame:
        """A frame out of the decoder with its time made right (AVI's next packet time in decode order,
        the cuvid decoder's frame its packet's duration and key flag, an attached picture's span) and
        the stream's end noted."""
        if times:
            frame.pts = times.popleft()
        if packet_facts is not None and frame.pts is not None:
            facts = packet_facts.pop(frame.pts, None)
            if facts is not None:
                duration, key = facts
                frame.key_frame = key  # type: ignore[misc]  # settable in PyAV 18; its stubs say read-only
                if duration and not frame.duration:
                    frame.duration = duration
            if len(packet_facts) > 64:  # frames come out in presentation order: earlier packets are done
                for pts in [pts for pts in packet_facts if pts < frame.pts]:
                    del packet_facts[pts]
        self._stamp_still(frame)
        self._time_untimed(frame)
        self._note_end(frame)
        return frame

    def _time_untimed(self, frame: av.VideoFrame) -> None:
        """A raw elementary stream (.h264, .hevc) has no timestamps at all; FFmpeg's command line times
        its frames one after the other from the start, each its duration after the last. So does the
        session (a stream whose first frame has no timestamp is such a one), so that its frames can be
        found by time, cut and muxed; seeks in it decode forward or start again
        (:meth:`_position_untimed`)."""
        if self._still is not None:
            return
        if frame.pts is None and not self._untimed and self._max_end is None and not self._sought:
            assert self._stream is not None
            self._untimed = True
            self._clock = self._stream.start_time or 0
            with self._stats_lock:
                self._stats = replace(self._stats, untimed=True)
        if not self._untimed:
            return
        step = frame.duration or self._frame_ticks()
        if frame.pts is None:
            frame.pts = self._clock
            if not frame.duration:
                frame.duration = step
        self._clock = frame.pts + step

    def _frame_ticks(self) -> int:
        """One frame interval at the stream's average rate, in its time base (1 when it has none)."""
        info = self._info
        if info.average_rate and info.time_base:
            return max(1, round(1 / (info.average_rate * info.time_base)))
        return 1

    def _stamp_still(self, frame: av.VideoFrame) -> None:
        """An attached picture (an audio file's cover art) has no timestamp: it is shown from the
        stream's start for the file's duration, found there by time and index, and kept: the demuxer
        hands its packet out once, at the start, and never again after a seek."""
        if self._still is None:
            return
        if frame.pts is None:
            frame.pts, frame.duration = self._still
        if self._still_frame is None:
            self._still_frame = frame

    def _note_end(self, frame: av.VideoFrame) -> None:
        if frame.pts is not None:
            end = frame.pts + (frame.duration or 0)
            self._max_end = end if self._max_end is None else max(self._max_end, end)

    def _check_complete(self) -> None:
        """Flag a stream that ended well before the duration its container announced (truncated input)."""
        if self._probing or self._sought:
            return
        ends = media.ends_early(self._info, self._max_end)
        if ends is None:
            return
        got, announced = ends
        message = (
            f"{_display_source(self.source)} ended at {got:.3f} s of the {announced:.3f} s "
            "its container announces: truncated or damaged input"
        )
        with self._stats_lock:
            self._stats = replace(self._stats, truncated=True)
        if self._on_corrupt is CorruptPolicy.STOP:
            raise DecodeError(
                message + "; pass on_corrupt='keep' or 'skip' to accept the frames decoded so far"
            )
        self._bump(decode_errors=1)

    def _hw_failed(self, exc: BaseException) -> None:
        if self._plan.requested is HwAccelMode.CUDA:
            raise HwAccelUnavailableError(
                f"NVDEC failed on the first frame of {_display_source(self.source)}: {exc}; "
                "use hwaccel='auto' or 'none'"
            ) from exc

    def _fetch(self) -> Produced:
        """The next decoded frame: one kept back by a failed hand-out, the prefetcher's (described
        there), or a fresh one."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return pending
        if self._kept:  # before the prefetch thread starts: it would hold as many surfaces again
            return self._kept.popleft()
        if self._prefetch_depth == 0:
            return self._raw_next()
        if self._prefetcher is None:
            # The worker sets _eof when it reaches the end; frames it queued before that still count.
            if self._held is None and (self._eof or self._frames is None):
                return None
            self._prefetcher = Prefetcher(self._described_next, self._prefetch_depth, repr(self))
        return self._prefetcher.get()

    def _stop_prefetch(self) -> None:
        prefetcher, self._prefetcher = self._prefetcher, None
        if prefetcher is None:
            return
        if threading.current_thread() is getattr(prefetcher, "_thread", None):
            # Closed from the worker itself (a finalizer run by the garbage collector there): it cannot
            # join itself; it stops once this call returns to it.
            prefetcher._stopping.set()
            return
        prefetcher.stop()

    def _drop_pending(self) -> None:
        pending, self._pending = self._pending, None
        discard(pending)
        while self._kept:
            discard(self._kept.popleft())

    def set_copy_ahead(self, work: Callable[[DecodedFrame], AheadWork | None] | None) -> None:
        """Run ``work`` on each decoded frame on the prefetch thread, before the frame is handed out.

        ``work`` gets a frame that holds no reservation and is only valid during the call; what it
        returns (None: nothing done) rides on the handed-out frame (:meth:`DecodedFrame.take_ahead`),
        and is discarded when the frame is released without being taken, or dropped by a seek or a
        close. :meth:`FrameImporter.copy_ahead
        <alpha2.native_gpu.interop.importer.FrameImporter.copy_ahead>` is such a ``work``: the GPU copy
        into the importer's ring then runs on the decoder's thread, off the caller's. Without
        ``prefetch`` there is no such thread, and ``work`` is not called. None stops it. What ``work``
        raises ends the stream there, handed to the caller like a decoding error.
        """
        self._copy_ahead = work

    def _described_next(self) -> Produced:
        """The prefetch thread's producer: the next frame, described when it can be (else the caller's
        thread describes it, and raises there as without prefetching), with its identity (the prefetch
        thread tracks the generation while it runs) and the work done ahead on it."""
        frame = self._raw_next()
        if frame is None:
            return None
        try:
            described = self._describe(frame)
        except Exception:
            return frame
        identity = self._identity_of(frame.width, frame.height, described.pixel_format)
        ahead = None
        work = self._copy_ahead
        if work is not None:
            ahead = work(
                DecodedFrame(
                    planes=described.planes,
                    pixel_format=described.pixel_format,
                    colour=described.colour,
                    metadata=described.metadata,
                    identity=identity,
                    cuda_stream=0 if described.on_gpu else None,
                    keep_alive=frame,
                )
            )
        return replace(described, identity=identity, ahead=ahead)

    def _raw_next(self) -> av.VideoFrame | None:
        """The next frame to hand out: one held back by a seek, the frame a pending seek lands on, or
        the next decoded one."""
        held, self._held = self._held, None
        if held is not None:
            return held
        target, self._seek_target = self._seek_target, None
        if target is None:
            return self._decoded_next()
        after, self._seek_after = self._seek_after, False
        shown, upcoming = self._advance(None, target)
        if after:  # the frame at the target was handed out before: go on after it
            if shown is not None:
                self._bump(frames_discarded_for_seek=1)
            return upcoming
        if shown is None:  # the target lies before the first frame (or past the end: None)
            return upcoming
        self._held = upcoming
        return shown

    def _advance(
        self, shown: av.VideoFrame | None, target: int
    ) -> tuple[av.VideoFrame | None, av.VideoFrame | None]:
        """Decode on to the frame on display at ``target``: the last one with a timestamp at or before
        it, in presentation order (``shown`` is the latest so far). Returns that frame (None: none
        decoded from here is, or ``target`` lies past the end) and the first frame after it (None at the
        end), which the caller holds as the next."""
        while True:
            frame = self._decoded_next()
            if frame is None:
                if shown is not None and not self._still_shown(shown, target):
                    self._bump(frames_discarded_for_seek=1)
                    shown = None
                return shown, None
            if frame.pts is None or frame.pts > target:
                return shown, frame
            if shown is not None:
                self._bump(frames_discarded_for_seek=1)
            shown = frame

    def _still_shown(self, last: av.VideoFrame, target: int) -> bool:
        """Whether the stream's last frame is still on display at ``target``: until its duration ends,
        or the stream's, whichever is later (a frame without one, as in MPEG-TS, lasts the average
        frame interval, else as long as the gap before it). In a file that ends early (cut short of
        the duration its container announces, :func:`media.ends_early`) the announced end is not the
        last frame's: it is shown one frame interval past its own end, and :attr:`ends_early` says
        where the file ends."""
        pts = last.pts if last.pts is not None else target
        info = self._info
        duration = last.duration
        if not duration and info.average_rate:
            duration = round(1 / (info.average_rate * info.time_base))
        step = duration or self._last_gap or 0
        end = pts + step
        if info.duration:
            early = media.ends_early(info, max(end, self._max_end if self._max_end is not None else end))
            if early is None:
                end = max(end, (info.start_time or 0) + info.duration)
            else:
                # A time in the missing tail was given the last frame decoded (0.433 s for 0.9 s of a
                # file cut at 0.47 s of 1 s), and nothing said the file was cut after a seek.
                self._ended_early = early
                with self._stats_lock:
                    self._stats = replace(self._stats, truncated=True)
                end += step
        return target < end or target == pts

    def _decoded_next(self) -> av.VideoFrame | None:
        """The next frame the decoder gives (corrupt ones kept, skipped or refused as configured)."""
        if self._eof or self._frames is None:
            return None
        while True:
            try:
                frame = next(self._frames)
            except StopIteration:
                self._eof = True
                return None
            if frame.is_corrupt:
                if self._on_corrupt is CorruptPolicy.STOP:
                    raise DecodeError(
                        f"corrupt frame (pts {frame.pts}) in {_display_source(self.source)}; "
                        "pass on_corrupt='keep' or 'skip' to go on"
                    )
                if self._on_corrupt is CorruptPolicy.SKIP:
                    self._bump(corrupt_frames_skipped=1)
                    continue
                self._bump(corrupt_frames_kept=1)
            if frame.pts is not None:
                if self._last_pts is not None and frame.pts > self._last_pts:
                    self._last_gap = frame.pts - self._last_pts
                self._last_pts = frame.pts
            return frame

    def _note_first_frame(self, frame: av.VideoFrame) -> None:
        if self._report.active is HwAccelMode.CUDA and frame.format.name != "cuda":
            why = (
                f"NVDEC refused this {self._report.decoder} stream ({frame.format.name}); "
                "FFmpeg decodes it in software"
            )
            if self._plan.requested is HwAccelMode.CUDA:
                raise HwAccelUnavailableError(why + "; use hwaccel='auto' or 'none'")
            self._report = replace(
                self._report, active=HwAccelMode.NONE, device_ordinal=None, reason=why, fallback_reason=why
            )

    def _describe(self, frame: av.VideoFrame) -> Described:
        """Format, metadata, colour and planes of a frame: no session state, so the prefetch thread
        can work them out ahead (a tenth of a millisecond of Python a frame, off the caller's thread).

        Raises:
            UnknownFormatError: a CUDA frame of a software format alpha2 has no PixelFormat for.
        """
        assert self._stream is not None
        on_gpu = frame.format.name == "cuda"
        try:
            pixel_format = media.pixel_format_of(frame)
        except UnknownFormatError:
            if on_gpu:
                raise
            source = frame.format.name
            target = _fallback_software_format(source)
            frame = frame.reformat(format=target)
            pixel_format = PixelFormat.from_ffmpeg_name(target)
            self._bump(converted_frames=1)
            if not self._stats.converted:  # said once, in the stats and so in every report
                with self._stats_lock:
                    self._stats = replace(self._stats, converted=f"{source} -> {target}")
        cc = self._decoder
        # The decoder's coded size can lag a size change by a frame; never let it be smaller than the picture.
        coded = Size(max(cc.coded_width, frame.width), max(cc.coded_height, frame.height))
        time_base = frame.time_base if frame.time_base is not None else self._stream.time_base
        rotation, mirrored = media.frame_orientation(frame, self._stream_rotation)
        metadata = FrameMetadata(
            pts=frame.pts,
            time_base=None if time_base is None else _fraction(time_base),
            duration=frame.duration or None,
            key_frame=bool(frame.key_frame),
            coded_size=coded,
            display_size=Size(frame.width, frame.height),
            rotation=rotation,
            mirrored=mirrored,
            interlaced=bool(frame.interlaced_frame),
            top_field_first=bool(frame.interlaced_frame) and media.top_field_first(cc.field_order),
            hdr=hdr_metadata_of(frame),
            sample_aspect=media.stream_pixel_shape(self._stream),
        )
        colour = media.colour_of(frame, pixel_format)
        if on_gpu:
            ordinal = self._report.device_ordinal or 0
            planes: Any = media.cuda_planes_of(frame, pixel_format, ordinal)
        else:
            planes = media.cpu_planes_of(frame, pixel_format)
        size_bytes = media.frame_size_bytes(frame)
        return Described(frame, pixel_format, metadata, colour, planes, size_bytes, on_gpu)

    def _identity_of(self, width: int, height: int, pixel_format: PixelFormat) -> SurfaceIdentity:
        """The identity of the next frame: a new generation when the shape changed. One thread at a
        time: the prefetch thread while it runs, else the caller's."""
        shape = (width, height, pixel_format)
        if self._last_shape is not None and shape != self._last_shape:
            self._generation += 1
        self._last_shape = shape
        return SurfaceIdentity(
            decoder_id=self._decoder_id,
            generation=self._generation,
            width=width,
            height=height,
            pixel_format=pixel_format,
        )

    def _to_decoded(self, item: av.VideoFrame | Described) -> DecodedFrame:
        """The DecodedFrame of a frame (described and identified here unless the prefetch thread did):
        the surface reservation, on the caller's thread."""
        described = item if isinstance(item, Described) else self._describe(item)
        frame, pixel_format = described.frame, described.pixel_format
        identity = described.identity
        if identity is None:
            identity = self._identity_of(frame.width, frame.height, pixel_format)
        if described.on_gpu and self._nvdec_hold_limit is not None:
            self._wait_for_nvdec_room(self._nvdec_hold_limit)
        reservation = self.budget.reserve(described.size_bytes, identity, self._reserve_timeout_s)
        decoded = DecodedFrame(
            planes=described.planes,
            pixel_format=pixel_format,
            colour=described.colour,
            metadata=described.metadata,
            identity=identity,
            reservation=reservation,
            cuda_stream=0 if described.on_gpu else None,
            keep_alive=frame,
            ahead=described.ahead,
        )
        if described.on_gpu and self._nvdec_hold_limit is not None:
            self._nvdec_live.add(decoded)
        return decoded

    @property
    def nvdec_hold_limit(self) -> int | None:
        """The most NVDEC frames this session hands out at once when its budget allows more than one
        decoder's pool holds (:data:`NVDEC_MAX_SURFACES`); None when the budget is the only limit."""
        return self._nvdec_hold_limit

    def _wait_for_nvdec_room(self, limit: int) -> None:
        timeout = self._reserve_timeout_s
        if timeout is None:
            timeout = self.budget.wait_timeout_s
        deadline = time.monotonic() + timeout
        while sum(1 for f in list(self._nvdec_live) if not f.released) >= limit:
            if time.monotonic() >= deadline:
                raise SurfaceBudgetError(
                    f"this session holds {limit} NVDEC frames, all its decoder's pool can spare "
                    f"(NVDEC takes at most {NVDEC_MAX_SURFACES} surfaces); release frames you hold"
                )
            time.sleep(0.001)

    @property
    def decoded_end_seconds(self) -> float | None:
        """Where the latest frame decoded so far ends (its time plus its duration), in seconds from the
        stream's start; None before the first. Past the stream's announced duration where a muxer wrote
        that short (the end of a stream decoded to its end, whatever its header says)."""
        info, end = self._info, self._max_end
        if end is None or info.time_base is None:
            return None
        return float((end - (info.start_time or 0)) * info.time_base)

    @property
    def ends_early(self) -> tuple[float, float] | None:
        """Where the stream ends (seconds from its start) and the duration its container announces for
        it, once a time past its last frame found it cut short (:func:`media.ends_early`); else None."""
        return self._ended_early

    @property
    def decoded_ahead(self) -> tuple[int, int]:
        """Frames the prefetch thread has decoded and not yet handed out (the end of the stream, or a
        failure, counts as one), and how many it decodes ahead at most. ``(0, 0)`` without prefetching;
        ``(0, prefetch)`` before the first frame was asked for (the thread starts then)."""
        prefetcher = self._prefetcher
        if prefetcher is None:
            return 0, self._prefetch_depth
        return prefetcher.queued, prefetcher.depth

    def next_frame(self) -> DecodedFrame | None:
        """The next frame, or None at the end of the stream.

        Raises:
            SurfaceBudgetError: The budget is full (FAIL policy) or stayed full for the wait timeout;
                the frame is kept and the next call tries again.
            DecodeError: Corrupt data with ``on_corrupt='stop'``.
            ClosedError: The session was closed.
        """
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeSession was closed")
            item = self._fetch()
            if item is None:
                self._cursor = ("end", None)
                return None
            try:
                decoded = self._hand_out(item)
            except BaseException:
                self._pending = item  # not lost: handed out by the next call
                raise
            if decoded.metadata.pts is not None:
                self._cursor = ("after", decoded.metadata.pts)
            return decoded

    def _hand_out(self, item: av.VideoFrame | Described) -> DecodedFrame:
        """``item`` as a DecodedFrame holding a reservation, counted as handed out."""
        if self._stats.frames_out == 0:
            self._note_first_frame(item.frame if isinstance(item, Described) else item)
        decoded = self._to_decoded(item)
        self._bump(self._generation, frames_out=1, frames_on_gpu=1 if decoded.on_gpu else 0)
        return decoded

    def __iter__(self) -> Iterator[DecodedFrame]:
        while True:
            frame = self.next_frame()
            if frame is None:
                return
            yield frame

    def _target_ticks(self, seconds: float) -> int:
        assert self._stream is not None
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
            raise InvalidInputError(f"a time must be a finite number of seconds, got {short_repr(seconds)}")
        tb = _fraction(self._stream.time_base or fractions.Fraction(1, 1_000_000))
        return seeking.target_ticks(seconds, self._info.start_time, tb)  # from the first frame: _counted_from

    def target_pts(self, seconds: float) -> int:
        """The timestamp (stream time base) that ``seconds`` from the stream's start stands for, as
        :meth:`frames_at` reads it.

        Raises:
            InvalidInputError: ``seconds`` is not a finite number.
            ClosedError: The session was closed.
        """
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeSession was closed")
            return self._target_ticks(seconds)

    def seek(self, seconds: float) -> None:
        """Position the session so that the next frame is the one on display at ``seconds``: the last
        frame, in presentation order, whose timestamp is at or before it (the first frame when
        ``seconds`` lies before it).

        ``seconds`` count from the stream's start (its first timestamp, which need not be 0; the first
        frame's where FFmpeg gives the stream none of its own, :attr:`info` ``.start_time``). Seeks the
        demuxer to a key frame at or before the target, going further back while it lands after the
        target (MPEG-TS / PS, see :mod:`.seeking`), then decodes forward, keeping the latest frame at or
        before the target and holding the first one after it as the next. Starts a new decoder
        generation. Seeking past the end (the last frame's duration, or the stream's) gives end of stream.

        A later time in the same GOP (no key frame between the next frame and the target, as the frame
        index says where one was built: :meth:`frame_index`, ``frames_at``), or without an index one at
        most :data:`DECODE_ON_SECONDS` after the latest frame handed out, decodes on from there instead,
        keeping the frames decoded already (those the prefetch thread queued too) and the decoder
        generation: stepping forward by seeks decodes the file about once. A seek never reads the whole
        file to build the index (a player's jumps would wait on it).

        Raises:
            InvalidInputError: ``seconds`` is not a finite number.
            ClosedError: The session was closed.
        """
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeSession was closed")
            target = self._target_ticks(seconds)
            self._sought = True
            if not self._steps_on_to(target):
                self._stop_prefetch()
                self._drop_pending()
                self._position_at(target)
            self._cursor = ("at", target)

    def _steps_on_to(self, target: int) -> bool:
        """Position the session for ``target`` by decoding on from where it is, keeping the frames
        decoded already (held, or queued by the prefetch thread), where no key frame lies between the
        frame after the latest one handed out and ``target`` (the frame index says, where one was built;
        a seek would land at or before that frame and decode the same frames again), or, without an
        index, where ``target`` is at most :data:`DECODE_ON_SECONDS` ahead (decoding on through a key
        frame is as exact, and that much decoding costs about what a seek's does). The frame then handed
        out next is the one a seek gives: the last, in presentation order, at or before ``target``.
        False where that cannot be told (the caller then seeks, dropping what is kept): a target at or
        behind the latest frame handed out, a key frame between, an untimed stream, a session copying
        ahead (:meth:`set_copy_ahead`), a failure the prefetch thread queued."""
        if self._untimed or self._still is not None or self._copy_ahead is not None:
            # (With copy-ahead, a frame decoded here would come without its GPU copy done ahead, and
            # the kept ones' work is not carried over: such a session seeks.)
            return False
        kind, last = self._cursor
        index = self._index
        if kind == "at" and last is not None and last <= target and self._seek_target is not None:
            # A seek nothing was decoded for yet: the demuxer is at or before the key frame it needs.
            if (
                index is not None
                and self._prefetcher is None
                and self._pending is None
                and not self._kept
                and self._held is None
                and self._seek_target <= target
                and not index.key_between(self._seek_target, target)
            ):
                self._seek_target, self._seek_after = target, False
                return True
            return False
        if kind not in ("start", "after") or (kind == "after" and (last is None or last >= target)):
            return False
        if self._seek_target is not None and self._prefetcher is None:
            return False  # a seek to go on after the latest frame (_reposition) decodes from the key frame
        if index is None:
            assert self._stream is not None
            tb = _fraction(self._stream.time_base or fractions.Fraction(1, 1_000_000))
            if last is None or (target - last) * tb > DECODE_ON_SECONDS:
                return False
        else:
            # The next frame shown after the latest one handed out (the first frame at the start).
            after = bisect.bisect_right(index.pts, last) if last is not None else 0
            if after >= len(index.pts) or index.pts[after] > target:
                return False  # the frame on display at the target was handed out already: seek back to it
            if index.key_between(index.pts[after], target):
                return False
        return self._decode_on_to(target)

    def _decode_on_to(self, target: int) -> bool:
        """:meth:`_steps_on_to`'s decoding: the frames decoded already, then the decoder's, up to the last
        one at or before ``target``, which is kept to hand out next with those after it."""
        # In the order they would be handed out: one whose hand-out failed, those kept by the last such
        # seek, the prefetch thread's (queued, then the one in flight), the frame held after them.
        prefetcher, self._prefetcher = self._prefetcher, None
        prefetched = prefetcher.stop_keeping() if prefetcher is not None else []
        if prefetched is None:  # it failed: a seek starts afresh
            return False
        pending, self._pending = self._pending, None
        self._kept.extendleft([pending] if pending is not None else [])
        self._kept.extend(prefetched)
        if self._held is not None:
            self._kept.append(self._held)
            self._held = None
        if self._seek_target is not None:  # the thread stopped before it decoded to a seek's target
            return False  # (the frames kept are dropped by the seek)
        rest, self._kept = self._kept, collections.deque()

        shown: av.VideoFrame | Described | None = None
        upcoming: av.VideoFrame | None = None
        while True:
            item = rest.popleft() if rest else self._decoded_next()
            if item is None:  # the end: the last frame may still be on display
                if shown is not None and self._still_shown(_frame_of(shown), target):
                    break
                discard(shown)  # past the end: a seek tells (it decodes the last GOP again)
                return False
            pts = _frame_of(item).pts
            if pts is None or pts > target:
                if isinstance(item, av.VideoFrame) and not rest:
                    upcoming = item
                else:
                    rest.appendleft(item)
                break
            if shown is not None:
                discard(shown)
                self._bump(frames_discarded_for_seek=1)
            shown = item
        if shown is None:  # the next frame lies after the target: the one on display was handed out
            self._kept = rest  # (dropped by the seek)
            return False
        self._kept.append(shown)
        self._kept.extend(rest)
        self._held = upcoming
        return True

    def _position_at(self, target: int | None, *, new_generation: bool = True) -> None:
        """Seek the demuxer for ``target`` (None: the stream's start) and leave the target for
        :meth:`_raw_next` to decode forward to. Starts a new decoder generation (``new_generation``)."""
        assert self._container is not None and self._stream is not None
        tb = _fraction(self._stream.time_base or fractions.Fraction(1, 1_000_000))
        start = self._stream.start_time
        if new_generation:
            self._generation += 1
        if self._untimed:
            self._position_untimed(target)
            self._seek_target = target
            self._seek_after = False
            self._eof = False
            return
        if target is None:
            positions: tuple[int, ...] = seeking.rewind_positions(start, tb)
        else:
            # With an index, aim at the key frame itself: an MP4's index holds decode timestamps, and a
            # later key frame's can lie before the target while its presentation time does not.
            key = self._index.key_at_or_before(target) if self._index is not None else None
            positions = seeking.seek_positions(target if key is None else key, start, tb)
        rewinding_from = len(positions) - len(seeking.rewind_positions(start, tb))
        for attempt, position in enumerate(positions):
            first, rest = self._seek_to(position)
            last = attempt == len(positions) - 1
            if first is None and not last:
                continue  # nothing decodable from there (no key frame after it), or refused: go further back
            # From a rewind position nothing lies further back: where it lands is the file's beginning.
            if first is not None and attempt < rewinding_from and target is not None:
                if not seeking.landed_before(first.pts, target, corrupt=bool(first.is_corrupt)):
                    continue
                if self._index is not None and first.pts is not None and not self._index.has(first.pts):
                    # A stamp no frame has (the index read them in order from the start): the demuxer
                    # guessed it after the seek. MPEG-PS packets that carry no timestamp of their own
                    # (pictures that begin inside a pack) are stamped by frame durations that its
                    # parser, flushed by the seek, does not know yet: a frame took its neighbour's time.
                    continue
            # The probe's own iterator goes on: one packet (the flush above all, with frame threads)
            # can give several frames, and those after the first are still in it.
            self._frames = rest if first is None or rest is None else itertools.chain([first], rest)
            break
        self._seek_target = target
        self._seek_after = False
        self._eof = False

    def _position_untimed(self, target: int | None) -> None:
        """:meth:`_position_at` for an untimed stream: its demuxer cannot seek by time (the raw ones
        refuse), and no byte position says which frame it is. Decoding goes on from where it is when
        the frame on display at ``target`` has not been passed yet (the frame held, or the next one to
        decode, is at or before it: FFmpeg's ``-ss`` on such a file decodes from the start likewise);
        else it starts again from the stream's beginning."""
        held = self._held
        if target is not None and self._frames is not None:
            if held is not None and held.pts is not None:
                if held.pts <= target:
                    self._held = None
                    self._frames = itertools.chain([held], self._frames)
                    return
            elif target >= self._clock:
                return
        if not self._rewind_demuxer():
            raise MediaFormatError(f"cannot go back to the start of {_display_source(self.source)}")
        self._last_pts = None
        self._frames = self._decode_frames()

    def _seek_to(self, position: int) -> tuple[av.VideoFrame | None, Iterator[av.VideoFrame] | None]:
        """Seek the demuxer to ``position`` and decode the first frame from there; gives that frame and
        the iterator that goes on after it (errors on the way are not counted: a seek landing away from
        a key frame meets them by design)."""
        assert self._container is not None and self._stream is not None
        self._frames = None
        self._held = None
        if self._still_frame is not None:  # one picture, at the start: where any seek lands
            self._eof = False
            self._seek_target = None
            self._last_pts = None
            return self._still_frame, iter(())
        try:
            self._container.seek(position, backward=True, any_frame=False, stream=self._stream)
        except av.error.FFmpegError:
            # Nothing to land on there (a stream with no frames refuses every seek): try further back;
            # where no position takes, the stream has nothing at or after the target.
            return None, None
        self._decoder.flush_buffers()
        self._eof = False
        self._seek_target = None
        self._last_pts = None
        self._probing = True
        try:
            frames = self._decode_frames()
            return next(frames, None), frames
        finally:
            self._probing = False

    # -- many frames at once ----------------------------------------------------------------------

    def frames_at(
        self, seconds: Sequence[float], *, keep: Callable[[DecodedFrame], DecodedFrame] | None = None
    ) -> list[DecodedFrame | None]:
        """The frame on display at each of ``seconds`` (as :meth:`seek` defines it), in the order asked;
        None for a time past the end (in a file cut short of its announced duration, more than a frame
        interval past its last frame's display time: :attr:`ends_early` then says where it ends).
        Duplicates are allowed (each gets its own DecodedFrame).

        The asks are sorted and decoded in one forward pass: the session seeks only when the next
        target lies behind a key frame it has not reached (the frame index says where they are: for
        more than one time it is built on the first call, :meth:`frame_index`, which reads the packets
        of the whole file once). Every frame returned holds its surface (and a reservation on the
        budget) until released. Afterwards the next frame is the one after the latest frame asked for.
        ``keep`` is applied to each frame as it is found, before the next is decoded: the front door
        copies NVDEC frames out of the decoder's few surfaces there, so that a batch does not pin them.

        Raises:
            InvalidInputError: a time that is not a finite number.
            SurfaceBudgetError: the budget cannot hold them all (none is then kept).
            ClosedError: The session was closed.
        """
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeSession was closed")
            return self._frames_at_ticks([self._target_ticks(s) for s in seconds], keep)

    def frames_at_pts(
        self,
        pts: Sequence[int],
        *,
        keep: Callable[[DecodedFrame], DecodedFrame] | None = None,
        occurrences: Sequence[int | None] | None = None,
    ) -> list[DecodedFrame | None]:
        """:meth:`frames_at` for timestamps in the stream's time base (:attr:`frame_index` gives each
        frame's, so that ``frames_at_pts([index.pts[i]])`` is the ``i``-th frame shown where no other
        frame has its timestamp).

        ``occurrences`` (one per timestamp, None for the usual rule) picks, among frames that share a
        timestamp (duplicates in some AVI and MKV remuxes), the one shown ``n``-th (0 the first): the
        ``i``-th frame of the index is ``pts=index.pts[i]`` with ``i - bisect_left(index.pts, pts)``.
        Without it the last of them is found, the one on display at that time. Where fewer such frames
        are decoded than the index counts, the last frame at or before the timestamp is given.
        """
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeSession was closed")
            ticks = [int(p) for p in pts]
            nth: list[int | None] | None = None
            if occurrences is not None:
                nth = [None if n is None else int(n) for n in occurrences]
                if len(nth) != len(ticks) or any(n is not None and n < 0 for n in nth):
                    raise InvalidInputError(
                        f"occurrences must give one count >= 0 (or None) per timestamp, got {short_repr(nth)}"
                    )
            return self._frames_at_ticks(ticks, keep, nth)

    def _frames_at_ticks(
        self,
        ticks: Sequence[int],
        keep: Callable[[DecodedFrame], DecodedFrame] | None = None,
        occurrences: Sequence[int | None] | None = None,
    ) -> list[DecodedFrame | None]:
        if not ticks:
            return []
        most = self.budget.max_surfaces
        if keep is None and most is not None and len(ticks) > most:
            # Each frame of the batch holds a surface until all are handed out: past the budget the
            # batch waited out the budget's timeout and then asked to release frames none had.
            raise SurfaceBudgetError(
                f"{len(ticks)} frames asked for at once, and this session's surface budget holds at most "
                f"{most} (max_surfaces): ask for at most {most} at a time, releasing each batch before "
                "the next, or raise max_surfaces"
            )
        nth = occurrences if occurrences is not None else [None] * len(ticks)
        counted = {target for target, n in zip(ticks, nth, strict=True) if n is not None}
        # One time needs one seek; more need to know where the key frames are (counted before the pass:
        # the scan moves the demuxer), and so does going on from the frame the last call held.
        index = self._frame_index() if len(set(ticks)) > 1 or self._goes_on_to(min(ticks)) else None
        self._stop_prefetch()
        self._drop_pending()
        out: list[DecodedFrame | None] = [None] * len(ticks)
        shown: av.VideoFrame | None = None
        upcoming: av.VideoFrame | None = None
        positioned = False
        if index is not None and self._goes_on_to(min(ticks)):
            held = self._held
            assert held is not None and held.pts is not None
            # (Which of the frames sharing its timestamp the held one is, the last call did not count.)
            if not index.key_between(held.pts, min(ticks)) and held.pts not in counted:
                # No key frame lies before the first target: decoding on from the frame held by the last
                # call reaches it sooner than a seek would (frame_at stepping forward through a GOP).
                self._held = None
                upcoming, positioned = held, True
        ordinal: int | None = None  # which of the frames with its timestamp ``shown`` is, where counted
        try:
            for i in sorted(range(len(ticks)), key=lambda i: (ticks[i], nth[i] or 0)):
                target, occurrence = ticks[i], nth[i]
                if occurrence is not None:
                    if (
                        not positioned
                        or (
                            shown is not None
                            and shown.pts == target
                            and (ordinal is None or ordinal > occurrence)
                        )
                        or (
                            index is not None
                            and upcoming is not None
                            and upcoming.pts is not None
                            and index.key_between(upcoming.pts, target)
                        )
                    ):
                        self._sought = True
                        # Just before the target, so that every frame with its timestamp is decoded from
                        # there and counted (a key frame may be the second of two that share one).
                        self._position_at(target - 1, new_generation=not positioned)
                        self._seek_target = None
                        shown, ordinal, upcoming = None, None, self._decoded_next()
                        positioned = True
                    shown, ordinal, upcoming = self._advance_counting(
                        shown, ordinal, upcoming, target, occurrence
                    )
                elif not positioned or (
                    index is not None
                    and upcoming is not None
                    and upcoming.pts is not None
                    and index.key_between(upcoming.pts, target)
                ):
                    self._sought = True
                    # One generation for the whole batch: its frames are handed out together, and a
                    # consumer may import them in the order asked, not the order decoded.
                    self._position_at(target, new_generation=not positioned)
                    self._seek_target = None
                    shown, upcoming = self._advance(None, target)
                    if shown is None and upcoming is not None:  # before the first frame: that one
                        shown, upcoming = upcoming, self._decoded_next()
                    positioned = True
                elif upcoming is not None and (upcoming.pts is None or upcoming.pts <= target):
                    shown, upcoming = self._advance(upcoming, target)
                elif upcoming is None and shown is not None and not self._still_shown(shown, target):
                    shown = None  # past the end
                if occurrence is None:
                    ordinal = None
                if shown is not None:
                    handed = self._hand_out(shown)
                    if keep is not None:
                        try:
                            handed = keep(handed)
                        except BaseException:
                            handed.release()
                            raise
                    out[i] = handed
        except BaseException:
            for frame in out:
                if frame is not None:
                    frame.release()
            self._reposition()  # back where the caller was
            raise
        if positioned:
            self._held = upcoming
            if upcoming is None:
                self._eof = True
                self._cursor = ("end", None)
            elif shown is not None and shown.pts is not None:
                self._cursor = ("after", shown.pts)
        return out

    def _advance_counting(
        self,
        shown: av.VideoFrame | None,
        ordinal: int | None,
        upcoming: av.VideoFrame | None,
        target: int,
        occurrence: int,
    ) -> tuple[av.VideoFrame | None, int | None, av.VideoFrame | None]:
        """:meth:`_advance` to the ``occurrence``-th frame (0 the first) with timestamp ``target``,
        counting the frames that share one from ``upcoming`` on (``ordinal``: ``shown``'s count among
        its own). Stops at the last frame at or before ``target`` where fewer come. Returns the frame
        found, its count and the next frame (None at the end)."""
        if shown is not None and shown.pts == target and ordinal == occurrence:
            return shown, ordinal, upcoming  # asked again: found already
        walked = False
        while upcoming is not None and upcoming.pts is not None and upcoming.pts <= target:
            frame = upcoming
            same = shown is not None and ordinal is not None and shown.pts == frame.pts
            ordinal = ordinal + 1 if same and ordinal is not None else 0
            if walked:  # (the frame passed in was handed out by an earlier ask)
                self._bump(frames_discarded_for_seek=1)
            shown, walked = frame, True
            upcoming = self._decoded_next()
            if frame.pts == target and ordinal == occurrence:
                break
        if upcoming is None and shown is not None and not self._still_shown(shown, target):
            if walked:
                self._bump(frames_discarded_for_seek=1)
            shown = None  # past the end
        return shown, ordinal, upcoming

    def _goes_on_to(self, target: int) -> bool:
        """Whether a batch whose first target is ``target`` may decode on from where the last one
        stopped: it holds the frame after the latest one handed out (no prefetch thread took it, no
        seek is pending), and that frame is not after ``target``."""
        held = self._held
        return (
            held is not None
            and held.pts is not None
            and held.pts <= target
            and self._prefetcher is None
            and self._pending is None
            and not self._kept
            and self._seek_target is None
            and not self._untimed
        )

    def frame_index(self) -> seeking.FrameIndex:
        """Every frame's timestamp in presentation order and the key frames' (:class:`FrameIndex
        <alpha2.ffmpeg_bridge.seeking.FrameIndex>`), from one pass over the packets (nothing decoded;
        kept for the session's life). Frames are counted as packets; packets without a timestamp make
        it decode the stream once instead. The session's position is kept.

        Raises:
            MediaFormatError: the demuxer cannot go back to the start (a file object that is not seekable).
            ClosedError: The session was closed.
        """
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeSession was closed")
            return self._frame_index()

    def use_frame_index(self, index: seeking.FrameIndex) -> None:
        """Take ``index`` (another session's :meth:`frame_index` of the same file) as this session's,
        instead of reading the packets again; an index already built is kept."""
        with self._lock:
            if self._index is None:
                self._index = index

    def _frame_index(self) -> seeking.FrameIndex:
        if self._index is None and self._still is not None:
            self._index = seeking.frame_index([(self._still[0], True, self._still[1])])
        if self._index is None:
            self._stop_prefetch()
            try:
                self._index = self._scan_packets()
            finally:
                self._reposition()
        return self._index

    def _rewind_demuxer(self) -> bool:
        """Seek the demuxer to the stream's start; False when it refuses (a stream with no frames)."""
        assert self._container is not None and self._stream is not None
        self._frames = None
        self._held = None
        self._clock = self._stream.start_time or 0
        if self._seek_start():
            self._decoder.flush_buffers()
            return True
        if self._untimed:  # the raw demuxers refuse every seek: open the file again
            self._reopen()
            return True
        return False

    def _seek_start(self) -> bool:
        """Seek the demuxer to the stream's start (the decoder untouched); False when it refuses."""
        assert self._container is not None and self._stream is not None
        tb = _fraction(self._stream.time_base or fractions.Fraction(1, 1_000_000))
        for position in seeking.rewind_positions(self._stream.start_time, tb):
            try:
                self._container.seek(position, backward=True, any_frame=False, stream=self._stream)
            except av.error.FFmpegError:
                continue  # AVI, GIF and image files refuse a time before the start: try the start
            return True
        return False

    def _reopen(self) -> None:
        """Open the source again, at its start, with the decoder as it was chosen (an untimed stream's
        demuxer cannot go back). The stream's info, as its first frame completed it, is kept."""
        assert self._container is not None
        container, info, report = self._container, self._info, self._report
        self._container = self._stream = self._decoder = None
        container.close()
        self._rewind()
        reopened = self._open(self._plan)
        self._info = info
        self._report = report if reopened.decoder == report.decoder else reopened
        self._frames = None
        assert self._stream is not None
        self._clock = self._stream.start_time or 0

    def _scan_packets(self) -> seeking.FrameIndex:
        assert self._container is not None and self._stream is not None
        if not self._rewind_demuxer():
            if self._info.frame_count or self._stats.frames_out:
                raise MediaFormatError(
                    f"cannot index the frames of {_display_source(self.source)}: the demuxer cannot go back "
                    "to its start; pass a path or a seekable file object"
                )
            return seeking.frame_index(())
        samples: list[tuple[int, bool, int | None]] = []
        for packet in media.stream_packets(self._container, self._stream):
            if packet.pts is None:
                return self._scan_frames()
            samples.append((packet.pts, bool(packet.is_keyframe), packet.duration))
        first = self._first_pts
        if first is not None:
            # Packets shown before the first frame decoded from the start are never shown: an open GOP's
            # leading B-frames, cut from the pictures they refer to (a recording that starts mid-stream),
            # which the decoder drops. Counted, they numbered every frame after them too low.
            samples = [sample for sample in samples if sample[0] >= first]
        return seeking.frame_index(samples)

    def _scan_frames(self) -> seeking.FrameIndex:
        """The index by decoding every frame: for packets without timestamps (the decoder works them out)."""
        if not self._rewind_demuxer():
            return seeking.frame_index(())
        samples: list[tuple[int, bool, int | None]] = []
        self._probing = True
        try:
            for frame in self._decode_frames():
                if frame.pts is None:
                    raise UnsupportedError(
                        f"{_display_source(self.source)} has frames without timestamps; they cannot be "
                        "found by time or index (iterate the source instead)"
                    )
                samples.append((frame.pts, bool(frame.key_frame), frame.duration or None))
        finally:
            self._probing = False
            self._frames = None
        return seeking.frame_index(samples)

    def _reposition(self) -> None:
        """Back to where the caller is (:attr:`_cursor`) after other work moved the demuxer: what was
        held, pending or decoded ahead is dropped and decoded again."""
        self._stop_prefetch()
        self._drop_pending()
        self._held = None
        kind, ticks = self._cursor
        if kind == "end":
            self._frames = None
            self._eof = True
            return
        sought = self._sought
        self._position_at(None if kind == "start" else ticks)
        self._seek_after = kind == "after"
        self._sought = sought if kind == "start" else True

    def close(self) -> None:
        """Close the container. Frames already handed out stay valid until released. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop_prefetch()
            self._drop_pending()
            self._held = None
            self._frames = None
            container, self._container = self._container, None
            # The stream (and its codec context, with FFmpeg's frame threads) goes now, with the
            # container: one left referenced is freed later, in a process forked meanwhile too, where
            # avcodec_free_context waits forever for the threads the fork did not copy.
            self._stream = None
            self._decoder = None
            if container is not None:
                container.close()
                _freed_before_fork.due = True

    def __enter__(self) -> DecodeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        r = self._report
        return (
            f"<DecodeSession {_display_source(self.source)} {r.decoder} "
            f"{'nvdec' if r.on_gpu else 'software'} gen={self._generation}>"
        )


def _start_not_its_own(container: Any, stream: Any) -> bool:
    """Whether FFmpeg gave ``stream`` no start of its own: none at all, or the container's start and
    duration both (``fill_all_stream_timings`` copies them to a stream whose first packets it could not
    time, as in a Matroska video of a few frames from 5 s: no start alone, 0 beside audio from 0)."""
    if stream.start_time is None:
        return True
    if container.start_time is None or container.duration is None or stream.duration is None:
        return False
    tb = _fraction(stream.time_base or fractions.Fraction(1, 1_000_000))
    in_ticks = fractions.Fraction(1, av.time_base) / tb
    return bool(
        stream.start_time == round(container.start_time * in_ticks)
        and stream.duration == round(container.duration * in_ticks)
    )


def _counted_from(info: media.StreamInfo, first_pts: int | None) -> media.StreamInfo:
    """``info`` with its start at the first frame shown (``first_pts``) where it said an earlier one or
    none, its duration ending where it did: times count from the video's first frame.

    For a start FFmpeg did not take from the stream (:func:`_start_not_its_own`): a video from 5 s was
    found by ``frame_at(0.15)`` at 5.0 s (0.15 s counted from 0), ``frame_at(5.15)`` at 5.1 s, and its
    0.6 s were said 5.6 s long. (A start of its own stays, also where the first frame shown comes after
    it, an open GOP's leading frames dropped: the segment reader counts its key frames from it.)
    """
    start = info.start_time
    if first_pts is None or (start is not None and first_pts <= start):
        return info
    duration = info.duration
    if duration is not None:
        end = (start or 0) + duration
        duration = end - first_pts if end > first_pts else None
    return replace(info, start_time=first_pts, duration=duration)


def _frame_of(item: av.VideoFrame | Described) -> av.VideoFrame:
    return item.frame if isinstance(item, Described) else item


def _still_span(container: av.container.InputContainer, stream: Any) -> tuple[int, int] | None:
    """Where an attached picture (cover art, the only "video" of an audio file) is shown, in the
    stream's ticks: from its start for the file's duration (at least a tick); None for a video."""
    if not int(stream.disposition) & int(av.stream.Disposition.attached_pic):
        return None
    tb = stream.time_base or fractions.Fraction(1, 1_000_000)
    seconds = container.duration / av.time_base if container.duration else 0.0
    ticks = round(fractions.Fraction(seconds).limit_denominator(1_000_000) / tb)
    return stream.start_time or 0, max(1, ticks)


_DECODE_ORDER_CODECS = frozenset({"h264", "hevc"})


def _decode_order_times(container: av.container.InputContainer, stream: Any) -> bool:
    """Whether the frames of ``stream`` take their times from the packets in decode order: H.264 and HEVC
    in AVI. AVI stores no presentation times; FFmpeg's demuxer gives each packet a time in decode order
    (a frame a tick), and the decoder hands each frame out with the time of its own packet, so B-frames
    come out 1, 3, 4, 2, 6, 7, 5 ... where FFmpeg's command line takes its best-effort timestamp (the
    times in order). The packets' times in decode order are the frames' times in presentation order,
    one a frame: each frame out takes the next. (MPEG-4 Part 2 in AVI, packed B-frames included, comes
    out in order from its own decoder.)"""
    formats = str(getattr(container.format, "name", "")).split(",")
    codec = str(getattr(stream.codec_context, "name", ""))
    return "avi" in formats and codec in _DECODE_ORDER_CODECS
