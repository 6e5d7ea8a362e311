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

import fractions
import io
import itertools
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import IO, Any

import av
import av.container
import av.error
import av.video.stream

from alpha2.ffmpeg_bridge import media, seeking
from alpha2.ffmpeg_bridge.decode_stats import CorruptPolicy, DecodeStats
from alpha2.ffmpeg_bridge.download import download_frame
from alpha2.ffmpeg_bridge.errors import (
    DecodeError,
    HwAccelUnavailableError,
    MediaFormatError,
    NoVideoStreamError,
    UnsupportedCodecError,
    from_ffmpeg,
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
from alpha2.gpu.errors import ClosedError, InvalidInputError, UnknownFormatError
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


def _display_source(source: MediaSource) -> str:
    if isinstance(source, str | os.PathLike):
        return repr(os.fspath(source))
    name = getattr(source, "name", None)
    return repr(name) if isinstance(name, str) else "<file object>"


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
    return "yuv420p"


def _fraction(value: Any) -> fractions.Fraction:
    """``value`` as a Fraction; PyAV's time bases already are one (not copied, per frame)."""
    return value if type(value) is fractions.Fraction else fractions.Fraction(value)


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

    Raises:
        MediaNotFoundError, MediaFormatError, NoVideoStreamError, UnsupportedCodecError,
        HwAccelUnavailableError: See :mod:`alpha2.ffmpeg_bridge.errors`.
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
    ) -> None:
        if not isinstance(source, str | os.PathLike) and not callable(getattr(source, "read", None)):
            raise InvalidInputError(
                f"source must be a path (str or os.PathLike) or a readable binary file object, got "
                f"{type(source).__name__} {source!r}"
            )
        if prefetch < 0:
            raise InvalidInputError(f"prefetch must be >= 0 frames, got {prefetch}")
        if threads < 0:
            raise InvalidInputError(f"threads must be >= 0 (0: one per core), got {threads}")
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
        self._frames: Iterator[av.VideoFrame] | None = None
        self._pending: av.VideoFrame | Described | None = None
        self._seek_target: int | None = None
        self._nvdec_hold_limit: int | None = None  # set at open when the budget outgrows NVDEC's pool
        self._nvdec_live: weakref.WeakSet[DecodedFrame] = weakref.WeakSet()
        self._probing = False  # decoding the first frame after a seek: errors are expected, not counted
        self._sought = False  # a seek happened: the stream's end says nothing about truncation
        self._eof = False
        self._closed = False
        self._lock = threading.RLock()
        self._stream_rotation = Rotation.NONE
        self._max_end: int | None = None
        self._stats_lock = threading.Lock()
        self._prefetch_depth = prefetch
        self._prefetcher: Prefetcher | None = None
        self._copy_ahead: Callable[[DecodedFrame], AheadWork | None] | None = None

        plan = plan_hw_device(self._mode, cuda_ordinal, device)
        self._plan = plan
        if budget is None:
            budget = SurfaceBudget(max_surfaces=DEFAULT_HW_SURFACES if plan.use_cuda else None)
        self.budget = budget
        """The budget every handed-out frame counts against."""
        self._report = self._open(plan)

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
            container = av.open(src, mode="r", hwaccel=hwaccel, metadata_errors="replace")
        except av.error.FFmpegError as exc:
            raise from_ffmpeg(exc, f"opening {_display_source(self.source)}") from exc
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
                opened = av.open(src, mode="r", hwaccel=make_hwaccel(plan), metadata_errors="replace")
            except (
                av.error.FileNotFoundError,
                av.error.PermissionError,
                av.error.IsADirectoryError,
                av.error.InvalidDataError,
            ) as exc:
                # Bad input is bad input, whatever the device.
                raise from_ffmpeg(exc, f"opening {_display_source(self.source)}") from exc
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
        on_gpu = plan.use_cuda and fallback is None and bool(cc.is_hwaccel)
        if plan.use_cuda and fallback is None and not cc.is_hwaccel:
            why = f"FFmpeg has no NVDEC (cuda) hardware config for codec {cc.name!r}"
            if plan.requested is HwAccelMode.CUDA:
                container.close()
                raise HwAccelUnavailableError(why + "; use hwaccel='auto' or 'none'")
            fallback = why
        if on_gpu:
            # Size the decoder's pool for what the application may hold, so holding frames never
            # starves the decoder (FFmpeg adds these to the pool it needs for its own references).
            limit = self.budget.max_surfaces if self.budget.max_surfaces is not None else DEFAULT_HW_SURFACES
            extra, self._nvdec_hold_limit = nvdec_pool_plan(limit, self._prefetch_depth)
            cc.options = {**cc.options, "extra_hw_frames": str(extra)}
        else:
            cc.thread_type = "AUTO"
            cc.thread_count = self._threads
        self._container = container
        self._stream = stream
        self._stream_rotation = media.stream_rotation(stream)
        self._info = media.stream_info(container, stream)
        self._frames = self._decode_frames()
        return HwAccelReport(
            requested=plan.requested,
            active=HwAccelMode.CUDA if on_gpu else HwAccelMode.NONE,
            device_ordinal=plan.cuda_ordinal if on_gpu else None,
            loader_index=plan.loader_index,
            decoder=cc.name,
            reason=plan.reason if on_gpu or fallback is None else fallback,
            fallback_reason=fallback if plan.requested is HwAccelMode.AUTO else None,
        )

    # -- public state ---------------------------------------------------------------------------

    @property
    def info(self) -> media.StreamInfo:
        """The video stream's codec, size, frame count, rate, time base and duration."""
        return self._info

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
        packets = container.demux(stream)
        while True:
            try:
                packet = next(packets)
            except StopIteration:
                break
            except av.error.FFmpegError as exc:
                # A demuxer read error ends the stream (truncated or garbled container).
                self._corrupt(exc, "reading packets")
                break
            try:
                frames = packet.decode()
            except av.error.FFmpegError as exc:
                if self._report.active is HwAccelMode.CUDA and self._stats.frames_out == 0:
                    self._hw_failed(exc)
                self._corrupt(exc, "decoding a packet")
                continue
            for frame in frames:
                self._note_end(frame)
                yield frame
        # Drain what the decoder still holds (no-op when demux already sent the flush packet).
        try:
            for frame in stream.codec_context.decode(None):
                self._note_end(frame)
                yield frame
        except av.error.FFmpegError as exc:
            if not isinstance(exc, av.error.EOFError):
                self._corrupt(exc, "flushing the decoder")
        self._check_complete()

    def _note_end(self, frame: av.VideoFrame) -> None:
        if frame.pts is not None:
            end = frame.pts + (frame.duration or 0)
            self._max_end = end if self._max_end is None else max(self._max_end, end)

    def _check_complete(self) -> None:
        """Flag a stream that ended well before the duration its container announced (truncated input)."""
        info = self._info
        if info.duration is None or info.duration <= 0 or self._probing or self._sought:
            return
        start = info.start_time or 0
        frame_ticks = 0.0
        if info.average_rate:
            frame_ticks = float(1 / (info.average_rate * info.time_base))
        tolerance = max(2.5 * frame_ticks, 0.02 * info.duration)
        reached = (self._max_end - start) if self._max_end is not None else 0
        if info.duration - reached <= tolerance:
            return
        got = float(reached * info.time_base)
        announced = float(info.duration * info.time_base)
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
        if self._prefetch_depth == 0:
            return self._raw_next()
        if self._prefetcher is None:
            # The worker sets _eof when it reaches the end; frames it queued before that still count.
            if self._eof or self._frames is None:
                return None
            self._prefetcher = Prefetcher(self._described_next, self._prefetch_depth, repr(self))
        return self._prefetcher.get()

    def _stop_prefetch(self) -> None:
        prefetcher, self._prefetcher = self._prefetcher, None
        if prefetcher is not None:
            prefetcher.stop()

    def _drop_pending(self) -> None:
        pending, self._pending = self._pending, None
        discard(pending)

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
            if self._seek_target is not None:
                end = (frame.pts or 0) + (frame.duration or 0)
                if frame.pts is not None and (
                    end <= self._seek_target if frame.duration else frame.pts < self._seek_target
                ):
                    self._bump(frames_discarded_for_seek=1)
                    continue
                self._seek_target = None
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
            target = _fallback_software_format(frame.format.name)
            frame = frame.reformat(format=target)
            pixel_format = PixelFormat.from_ffmpeg_name(target)
            self._bump(converted_frames=1)
        cc = self._stream.codec_context
        # The decoder's coded size can lag a size change by a frame; never let it be smaller than the picture.
        coded = Size(max(cc.coded_width, frame.width), max(cc.coded_height, frame.height))
        time_base = frame.time_base if frame.time_base is not None else self._stream.time_base
        metadata = FrameMetadata(
            pts=frame.pts,
            time_base=None if time_base is None else _fraction(time_base),
            duration=frame.duration or None,
            key_frame=bool(frame.key_frame),
            coded_size=coded,
            display_size=Size(frame.width, frame.height),
            rotation=media.frame_rotation(frame, self._stream_rotation),
            interlaced=bool(frame.interlaced_frame),
            top_field_first=bool(frame.interlaced_frame) and media.top_field_first(cc.field_order),
            hdr=hdr_metadata_of(frame),
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
                return None
            if self._stats.frames_out == 0:
                self._note_first_frame(item.frame if isinstance(item, Described) else item)
            try:
                decoded = self._to_decoded(item)
            except BaseException:
                self._pending = item  # not lost: handed out by the next call
                raise
            self._bump(self._generation, frames_out=1, frames_on_gpu=1 if decoded.on_gpu else 0)
            return decoded

    def __iter__(self) -> Iterator[DecodedFrame]:
        while True:
            frame = self.next_frame()
            if frame is None:
                return
            yield frame

    def seek(self, seconds: float) -> None:
        """Position the session so that the next frame is the one on display at ``seconds``.

        ``seconds`` count from the stream's start (its first timestamp, which need not be 0). Seeks the
        demuxer to a key frame at or before the target, going further back while it lands after the
        target (MPEG-TS / PS, see :mod:`.seeking`), then decodes and discards the frames before it.
        Starts a new decoder generation. Seeking past the end gives end of stream.
        """
        with self._lock:
            if self._closed:
                raise ClosedError("this DecodeSession was closed")
            assert self._container is not None and self._stream is not None
            tb = _fraction(self._stream.time_base or fractions.Fraction(1, 1_000_000))
            start = self._stream.start_time
            target = seeking.target_ticks(seconds, start, tb)
            self._stop_prefetch()
            self._drop_pending()
            self._sought = True
            self._generation += 1
            positions = seeking.seek_positions(target, start, tb)
            for attempt, position in enumerate(positions):
                first, rest = self._seek_to(position)
                last = attempt == len(positions) - 1
                if first is None and not last:
                    continue  # nothing decodable from there (no key frame after it): go further back
                if first is not None and not last:
                    if not seeking.landed_before(first.pts, target, corrupt=bool(first.is_corrupt)):
                        continue
                # The probe's own iterator goes on: one packet (the flush above all, with frame threads)
                # can give several frames, and those after the first are still in it.
                self._frames = rest if first is None or rest is None else itertools.chain([first], rest)
                break
            self._seek_target = target
            self._eof = False

    def _seek_to(self, position: int) -> tuple[av.VideoFrame | None, Iterator[av.VideoFrame] | None]:
        """Seek the demuxer to ``position`` and decode the first frame from there; gives that frame and
        the iterator that goes on after it (errors on the way are not counted: a seek landing away from
        a key frame meets them by design)."""
        assert self._container is not None and self._stream is not None
        self._frames = None
        try:
            self._container.seek(position, backward=True, any_frame=False, stream=self._stream)
        except av.error.FFmpegError:
            # Nothing to land on there (a stream with no frames refuses every seek): try further back;
            # where no position takes, the stream has nothing at or after the target.
            return None, None
        self._stream.codec_context.flush_buffers()
        self._eof = False
        self._seek_target = None
        self._probing = True
        try:
            frames = self._decode_frames()
            return next(frames, None), frames
        finally:
            self._probing = False

    def close(self) -> None:
        """Close the container. Frames already handed out stay valid until released. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop_prefetch()
            self._drop_pending()
            self._frames = None
            container, self._container = self._container, None
            if container is not None:
                container.close()

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
