"""Writing video: textures, RGB(A) arrays or decoded frames in, a tagged video file out.

Made by :func:`create`; the sibling of :mod:`alpha2.api.source`.

Timing comes from what is written. Frames of a :class:`~alpha2.api.source.VideoSource` keep their own
timestamps (variable frame rate included), counted from the first one written, in their stream's time
base (or a 90 kHz one when that is coarser than a millisecond); the output's nominal rate is the
source's. Textures and arrays carry no time: each comes one frame (``1 / rate``) after the previous,
at ``rate`` when given, else at 30 frames per second (:attr:`Writer.timing` says which), unless
``write(item, pts_seconds=...)`` gives its time. A ``rate`` given to :func:`create` times every frame
by its order, decoded frames included (a constant frame rate).

A Writer dropped without :meth:`~Writer.close` leaves no half-written output behind: its backstop
removes the partial file, stops its thread, frees its GPU objects and warns (``ResourceWarning``).
"""

from __future__ import annotations

import contextlib
import fractions
import math
import numbers
import os
import threading
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from alpha2.api import arguments
from alpha2.api.atomic import check_output_path
from alpha2.api.devices import as_device, texture_limit
from alpha2.api.errors import ConcurrentIterationError
from alpha2.api.source import Frame, _Worker
from alpha2.ffmpeg_bridge.containers import default_codec
from alpha2.ffmpeg_bridge.decode import short_repr
from alpha2.ffmpeg_bridge.encode import EncodeSession, muxer_holds_sound
from alpha2.ffmpeg_bridge.encoders import canonical_name
from alpha2.ffmpeg_bridge.palette import PALETTE_ENCODERS
from alpha2.gpu.colour import (
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourPrimaries,
    ColourRange,
    TransferCharacteristic,
)
from alpha2.gpu.encoded import companion_colour
from alpha2.gpu.errors import ClosedError, InvalidInputError, UnsupportedError
from alpha2.gpu.forks import keep_in_fork
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet
from alpha2.native_gpu.device.device import Device
from alpha2.native_gpu.encode.copier import EncodeCopier
from alpha2.native_gpu.encode.extent import VideoEncodeExtent
from alpha2.native_gpu.encode.pipelines import SOURCE_TEXTURE_FORMATS
from alpha2.native_gpu.render.renderer import warm_webgpu_bindings

__all__ = ["DEFAULT_COLOUR", "DEFAULT_RATE", "Writer", "create"]

DEFAULT_COLOUR = ColourInfo(
    ColourMatrix.BT709,
    ColourPrimaries.BT709,
    TransferCharacteristic.BT709,
    ColourRange.LIMITED,
    ChromaLocation.LEFT,
)
"""What a :class:`Writer` tags its stream with when given no colour: BT.709, limited range, left siting
(BT.601 for MJPEG, which decoders read as BT.601 whatever its tags)."""

DEFAULT_RATE = fractions.Fraction(30)
"""Frames per second of textures and arrays written without ``rate`` nor timestamps."""

_JFIF_ENCODERS = frozenset({"mjpeg", "ljpeg"})
"""Encoders whose pictures every decoder reads as BT.601 (JFIF), whatever the stream is tagged: the
Writer converts for them by BT.601 when given no colour (BT.709 came back 20 code values off)."""

_TICKS_PER_SECOND = 90_000
"""The clock a coarse time base is cut toward: MPEG's 90 kHz, exact for 24, 25, 30, 50 and 60 fps."""

_AV_RATIONAL_MAX = 2**31 - 1
"""The largest numerator or denominator of FFmpeg's AVRational (a time base), a C int."""

_WORKER_NAME = "alpha2-encode"


_MAX_RATE = 1_000_000
"""The highest ``rate`` a Writer takes: its time base is at finest a microsecond (:func:`_fine_time_base`)."""


def _fine_time_base(unit: fractions.Fraction) -> fractions.Fraction:
    """``unit`` when it is between 1 ms and 1 us, else a tick near 1 / 90000 s (a whole fraction of
    ``unit`` when ``unit`` is coarser and that fraction fits FFmpeg's 32-bit rationals, so its
    multiples stay exact)."""
    if unit > fractions.Fraction(1, 1000):
        tick = unit / math.ceil(unit * _TICKS_PER_SECOND)
        if max(tick.numerator, tick.denominator) <= _AV_RATIONAL_MAX:
            return tick
        return fractions.Fraction(1, _TICKS_PER_SECOND)  # rate=np.float32(29.97): 131072/11800396161
    if unit.denominator > 1_000_000:
        return fractions.Fraction(1, _TICKS_PER_SECOND)
    return unit


def _has_time(frame: Frame) -> bool:
    """Whether a decoded frame says when it shows."""
    meta = frame.decoded.metadata
    return meta.pts is not None and bool(meta.time_base)


def _is_real(value: Any) -> bool:
    """Whether ``value`` is a finite real number (numpy's too), not a bool."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool | np.bool_)
        and math.isfinite(float(value))
    )


def _fraction(value: Any) -> fractions.Fraction:
    """``value`` exactly (an int or Fraction) or as its float (numpy's floats, which Fraction refuses)."""
    if isinstance(value, numbers.Rational):
        return fractions.Fraction(int(value.numerator), int(value.denominator))
    return fractions.Fraction(float(value))


def _size(width: int, height: int) -> str:
    return f"{width}x{height}"


# ---------------------------------------------------------------------------------------------------
# input checks


def _host_array(item: Any) -> np.ndarray:
    """A numpy array from numpy, anything with ``__array__``, or a DLPack producer (CUDA ones copied)."""
    if isinstance(item, np.ndarray):
        return item
    if hasattr(item, "__dlpack__"):
        if getattr(item, "requires_grad", False):  # torch exports no tensor autograd tracks, nor .numpy()s it
            item = item.detach()
        try:
            return np.from_dlpack(item)
        except (BufferError, RuntimeError, TypeError, ValueError):
            pass  # device memory: ask for a host copy, the protocol's way, then the libraries' own ways
        try:
            return np.from_dlpack(item, device="cpu", copy=True)
        except (BufferError, RuntimeError, TypeError, ValueError):
            pass
        for method in ("cpu", "get"):  # torch.Tensor.cpu(), cupy.ndarray.get()
            convert = getattr(item, method, None)
            if callable(convert):
                host = convert()
                return np.asarray(host.numpy() if hasattr(host, "numpy") else host)
    if hasattr(item, "__array__"):
        return np.asarray(item)
    raise InvalidInputError(
        f"cannot write a {type(item).__name__}: pass a texture, an (h, w, 3|4) uint8 array (numpy or "
        "DLPack: torch, cupy), or an alpha2 Frame"
    )


def _check_pixels(pixels: np.ndarray) -> None:
    """Refuse an array that is not (height, width, 3 or 4) uint8, saying how to make one."""
    if pixels.dtype != np.uint8:
        fix = (
            "scale 0..1 floats with (pixels * 255).clip(0, 255).astype(np.uint8)"
            if pixels.dtype.kind == "f"
            else "convert with pixels.astype(np.uint8) (values 0..255)"
        )
        raise InvalidInputError(
            f"arrays must be uint8 RGB(A) (0..255 per channel); got {pixels.dtype}: {fix}"
        )
    if pixels.ndim == 3 and pixels.shape[2] in (3, 4):
        if pixels.shape[0] and pixels.shape[1]:
            return
        raise InvalidInputError(f"an array of {pixels.shape[1]}x{pixels.shape[0]} pixels holds no picture")
    if pixels.ndim == 3 and pixels.shape[0] in (3, 4):
        fix = "a channels-first (3|4, h, w) array becomes (h, w, 3|4) by pixels.transpose(1, 2, 0)"
    elif pixels.ndim == 2:
        fix = "a gray (h, w) array becomes RGB by np.repeat(pixels[:, :, None], 3, axis=2)"
    elif pixels.ndim == 3 and pixels.shape[2] == 1:
        fix = "a gray (h, w, 1) array becomes RGB by np.repeat(pixels, 3, axis=2)"
    else:
        fix = "write one picture per call"
    raise InvalidInputError(
        f"arrays must be shaped (height, width, 3) RGB or (height, width, 4) RGBA; got {pixels.shape}: {fix}"
    )


def _check_even(width: int, height: int) -> None:
    """Refuse odd sides for the GPU conversion, whose 4:2:0 chroma covers even sides only (an encoder
    that takes odd ones, VP9's, failed at close() with 'plane 1 is 63 bytes x 23 rows')."""
    if width % 2 or height % 2:
        even = f"{width + width % 2}x{height + height % 2}"
        fix = (
            f"crop to {width - width % 2}x{height - height % 2} (pixels[: h // 2 * 2, : w // 2 * 2]) or pad "
            "to even sides"
            if width > 1 and height > 1
            else f"pad to {even} (a side of 1 pixel has nothing to crop to)"
        )
        raise InvalidInputError(
            f"a {width}x{height} picture cannot be written: the Writer converts textures and arrays to 4:2:0 "
            f"on the GPU, where width and height must be a multiple of 2; {fix} before writing"
        )


def _encoder_extent(encoder: str, pixel_format: PixelFormat) -> VideoEncodeExtent | None:
    """The sizes ``encoder`` takes (alpha2's table), None for an encoder the table does not know."""
    try:
        return VideoEncodeExtent.for_encoder(encoder, pixel_format)
    except UnsupportedError:
        return None


def _check_fits(device: Device, width: int, height: int) -> None:
    """Refuse an array larger than the device's textures, which it is uploaded into.

    Raises:
        UnsupportedError: a side over ``max_texture_dimension_2d``, with the way out.
    """
    limit = texture_limit(device.webgpu_device)
    if limit is not None and max(width, height) > limit:
        raise UnsupportedError(
            f"a {width}x{height} array does not fit the textures of {device.adapter_name!r} (at most {limit} "
            "pixels a side, max_texture_dimension_2d), which the Writer converts arrays in; scale it down "
            "before writing"
        )


# ---------------------------------------------------------------------------------------------------
# what a Writer holds (the finalizer's, so that it never refers to the Writer itself)


@dataclass
class _Held:
    """Everything a Writer must close: its encode session, GPU objects and thread."""

    session: EncodeSession
    """The encoder and the (temporary) output file."""
    copier: EncodeCopier | None = None
    """The GPU RGB -> NV12 copier, made by the first texture or array."""
    upload: Any = None
    """The texture arrays are uploaded into."""
    worker: _Worker | None = None
    """The thread of :meth:`Writer.write_async`."""
    own_device: Device | None = None
    """The Device the Writer opened itself (closed with it)."""
    pid: int = field(default_factory=os.getpid)
    """The process whose encoder, GPU objects and thread these are."""

    @property
    def forked(self) -> bool:
        """Whether this process is a fork of the one that made them (they cannot work here)."""
        return self.pid != os.getpid()

    def keep_in_fork(self) -> None:
        """Free nothing in a forked process: the GPU waits hung there, and the partial output removed
        here is the one the process that made it is still writing."""
        keep_in_fork(self)

    def release_gpu_and_thread(self) -> None:
        """Stop the thread and free the GPU objects, without encoding what is in flight."""
        worker, self.worker = self.worker, None
        if worker is not None:
            if threading.current_thread().name.startswith(_WORKER_NAME):
                worker._pool.shutdown(wait=False)  # a collection on the worker itself cannot join it
            else:
                worker.close()
        copier, self.copier = self.copier, None
        if copier is not None:
            with contextlib.suppress(Exception):
                copier.close()
        upload, self.upload = self.upload, None
        if upload is not None:
            with contextlib.suppress(Exception):
                upload.destroy()
        device, self.own_device = self.own_device, None
        if device is not None:
            with contextlib.suppress(Exception):
                device.close()


def _abandoned(held: _Held, path: str) -> None:
    """The backstop of a Writer dropped without close(): no partial output, thread or GPU object left."""
    if held.forked:
        held.keep_in_fork()
        return
    held.release_gpu_and_thread()
    with contextlib.suppress(Exception):
        held.session.abort()
    warnings.warn(
        f"an alpha2 Writer of {path!r} was dropped without close(): its partial output was removed; "
        "call close() (or use `with alpha2.create(...) as writer:`) to finish the file",
        ResourceWarning,
        stacklevel=2,
    )


# ---------------------------------------------------------------------------------------------------
# writing


class Writer:
    """Encode textures, RGB(A) arrays or decoded frames into a video file; made by :func:`create`.

    Textures and arrays are converted to NV12 on the GPU (the copier) with :attr:`colour`'s matrix and
    range, and the stream is tagged with that colour; decoded frames are encoded as they are, tagged
    with their own colour, except those a display matrix turns or flips: they are written as shown
    (their ``width`` x ``height``), converted as textures are. One stream has one colour, fixed by
    the first write: a decoded frame written first gives the textures and arrays after it its matrix
    and range, and a decoded frame of another colour than the stream's is converted as textures are
    (its pixels would be read with the wrong matrix as they are). ``untagged=True`` writes no colour
    tags: the pixels are still converted with :attr:`colour`, and readers guess (mpv, browsers and
    alpha2 BT.709 at HD sizes and BT.601 below, FFmpeg's swscale BT.601 at every size).

    Timing (fixed by the first :meth:`write`): frames of a VideoSource keep their own timestamps, counted
    from the first one written, and the source's frame rate is the nominal one; textures and arrays
    come ``1 / rate`` apart, at 30 frames per second when no ``rate`` was given (:attr:`timing` says
    so), unless ``write(..., pts_seconds=...)`` gives their time. A ``rate`` given times every frame by
    its order, decoded frames included.

    Every frame must have the first one's size. :meth:`close` finishes the file under its name
    (atomically); :meth:`abort`, an exception in a ``with`` block, or dropping the Writer unclosed
    (with a ``ResourceWarning``) removes the partial output, and so does a write whose encoder failed
    or was interrupted (``KeyboardInterrupt``), which aborts the Writer. Any call but :meth:`close` and
    :meth:`abort` after those raises :class:`~alpha2.gpu.errors.ClosedError`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        codec: str | None = None,
        rate: float | fractions.Fraction | None = None,
        colour: ColourInfo | None = None,
        device: Any = None,
        untagged: bool = False,
        **options: Any,
    ) -> None:
        _check_path(path)
        if codec is None:  # by the container, as the command line: h264 into WebM was FFmpeg's refusal
            codec = default_codec(path)
        arguments.text("codec", codec)
        arguments.flag("untagged", untagged)
        if colour is not None and not isinstance(colour, ColourInfo):
            raise InvalidInputError(
                f"colour must be an alpha2 ColourInfo (alpha2.gpu.colour.ColourInfo(matrix=..., range=...)) "
                f"or None, got {short_repr(colour)}"
            )
        for name in ("crf", "bitrate"):
            if options.get(name) is not None:
                arguments.real(name, options[name], low=0)
        if options.get("gop_size") is not None:  # frames: 1.5 was taken, and FFmpeg's int cut it to 1
            arguments.whole("gop_size", options["gop_size"], low=0)
        if options.get("crf") is not None and options.get("bitrate") is not None:
            raise InvalidInputError(
                "give crf or bitrate, not both (crf would win and the bitrate be dropped)"
            )
        if options.get("preset") is not None and not isinstance(options["preset"], str | int):
            raise InvalidInputError(f"preset must be a str (or an int), got {short_repr(options['preset'])}")
        if "size" in options:
            raise InvalidInputError(
                "alpha2.create() takes no size: the Writer takes the first frame's; give width= and height= "
                "to scale every frame to them"
            )
        arguments.known_options("alpha2.create()", options, EncodeSession.__init__, skip=2)
        audio_from = options.get("audio_from")
        if isinstance(audio_from, str | os.PathLike):
            _check_audio_from(audio_from)
        elif audio_from is not None and not hasattr(audio_from, "info"):  # a DecodeSession has its info
            raise InvalidInputError(
                f"audio_from takes a path (or a DecodeSession), got {type(audio_from).__name__} "
                f"{short_repr(audio_from)}"
            )
        if colour is None:
            jfif = canonical_name(codec) in _JFIF_ENCODERS
            colour = (
                companion_colour(ColourMatrix.SMPTE170M, ColourRange.LIMITED, ChromaLocation.LEFT)
                if jfif
                else DEFAULT_COLOUR
            )
        if colour.primaries is ColourPrimaries.UNSPECIFIED:  # the matrix's standard primaries and transfer
            colour = companion_colour(colour.matrix, colour.range, colour.chroma_location)
        if rate is not None and not (_is_real(rate) and rate > 0):
            raise InvalidInputError(
                f"rate must be positive frames per second (e.g. 25, 30000/1001 as a Fraction), or None "
                f"to take the timing from what is written; got {rate!r}"
            )
        if rate is not None and rate > _MAX_RATE:  # frames closer than a microsecond share a timestamp
            raise InvalidInputError(
                f"rate must be at most {_MAX_RATE} frames per second (frames are timed to the microsecond), "
                f"got {rate!r}"
            )
        self.colour = colour
        """What the stream is tagged with (for textures and arrays)."""
        self.path = os.fspath(path)
        """The output file."""
        self._rate_given = None if rate is None else _fraction(rate).limit_denominator(1_000_000)
        self._device = as_device(device)
        # The copier's planes carry the matrix's companion colour; other primaries / transfer go to the
        # session, which then tags every frame with them. All-unspecified is the untagged request.
        companion = companion_colour(colour.matrix, colour.range, colour.chroma_location)
        session_colour = ColourInfo() if untagged else (None if colour == companion else colour)
        session = EncodeSession(path, codec=codec, rate=self._rate_given, colour=session_colour, **options)
        if options.get("audio_from") is not None and not muxer_holds_sound(session.muxer):
            # The copier would leave the sound out, said only in session.stats: asked for, it is refused.
            session.abort()
            raise InvalidInputError(
                f"the {session.muxer} container holds no sound, so audio_from cannot be written to it: leave "
                "audio_from out, or write .mp4, .mkv or .webm"
            )
        if isinstance(options.get("preset"), str):
            from alpha2.api.transcode_plan import check_preset

            try:  # the encoder names what it lacks, not "Invalid argument" at the first frame
                check_preset(session.encoder.name, options["preset"])
            except BaseException:
                session.abort()
                raise
        self._extent = _encoder_extent(session.encoder.name, PixelFormat.NV12)
        self._held = _Held(session)
        self._finalizer = weakref.finalize(self, _abandoned, self._held, self.path)
        self._closed: str | None = None  # "closed" / "aborted" once either ran
        self._busy = threading.Lock()  # held by the write in progress: a second thread's is refused
        self._frames = 0
        self._size: tuple[int, int] | None = None
        self._rate: fractions.Fraction | None = self._rate_given
        self._time_base: fractions.Fraction | None = None
        self._timing: str | None = None
        self._follow_frames = False  # decoded frames keep their own timestamps
        self._origin: fractions.Fraction | None = None  # the first decoded frame's time: output's 0
        self._last: fractions.Fraction | None = None  # the previous frame's time, in seconds
        self._last_ticks: int | None = None
        # What the stream's pixels mean, fixed by the first write (None until then): the colour given
        # to the session, the copier's, or the first decoded frame's, which then passes as it is.
        self._stream_colour: ColourInfo | None = None if session_colour is None or untagged else colour

    # -- what it is ----------------------------------------------------------------------------------

    @property
    def session(self) -> EncodeSession:
        """The EncodeSession underneath."""
        return self._held.session

    @property
    def frames_written(self) -> int:
        """Frames handed to the encoder so far."""
        return self._frames

    @property
    def frames_left_out(self) -> int:
        """Frames written but not in the output, said by :attr:`left_out_reason`: a GIF's that would show
        for less than two hundredths, or on a clock of one frame (AVI, MPEG-1/2) those that fall on the
        tick of the frame before (times finer than :attr:`rate`), as ffmpeg drops them."""
        return self._held.session.stats.frames_left_out

    @property
    def left_out_reason(self) -> str:
        """Why :attr:`frames_left_out` were left out; empty when none were."""
        return self._held.session.stats.left_out_reason

    @property
    def rate(self) -> fractions.Fraction | None:
        """The output's nominal frame rate (frames per second): the ``rate`` given, else fixed by the
        first write (a VideoSource's frame rate, or 30 for textures and arrays); None until then."""
        return self._rate

    @property
    def time_base(self) -> fractions.Fraction | None:
        """The unit of the output's timestamps, in seconds; None until the first write fixes it."""
        return self._time_base

    @property
    def timing(self) -> str | None:
        """How frames are timed, and where that came from (e.g. that 30 fps is the default, not asked
        for); None until the first write."""
        return self._timing

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` or :meth:`abort` ran, or a write whose encoder failed aborted it."""
        return self._closed is not None

    # -- timing --------------------------------------------------------------------------------------

    def _fix_timing(self, item: Any) -> None:
        """Choose the rate and time base from the first item written (once)."""
        if self._time_base is not None:
            return
        given = self._rate_given
        if isinstance(item, Frame) and given is None:
            info = item._source.session.info
            unit = item.decoded.metadata.time_base
            rate = fractions.Fraction(info.average_rate) if info.average_rate else None
            said = f"{rate} fps, the source's" if rate else "30 fps (the source says no rate)"
            rate = rate or DEFAULT_RATE
            self._time_base = _fine_time_base(fractions.Fraction(unit) if unit else 1 / rate)
            self._follow_frames = True
            self._timing = (
                f"decoded frames keep their own timestamps (variable rate kept) from the first one "
                f"written, in units of {self._time_base} s; nominal rate {said}; frames without a "
                "timestamp (textures, arrays) come one frame after the previous"
            )
        else:
            rate = given or DEFAULT_RATE
            self._time_base = _fine_time_base(1 / rate)
            how = (
                f"at {rate} fps, as asked (rate=)"
                if given
                else f"at {rate} fps, the default: pass rate=... to create() for another, or "
                "write(..., pts_seconds=...)"
            )
            self._timing = f"frames come one after another {how}, unless write() gives pts_seconds"
        self._rate = rate
        self._held.session.set_timing(rate=rate, time_base=self._time_base)

    def _ticks_for(self, item: Any, pts_seconds: float | None) -> int:
        """The item's timestamp in :attr:`time_base` units; refuses one that does not increase."""
        assert self._time_base is not None and self._rate is not None
        if pts_seconds is not None:
            if not _is_real(pts_seconds) or pts_seconds < 0:
                raise InvalidInputError(f"pts_seconds must be a time >= 0 in seconds, got {pts_seconds!r}")
            time = _fraction(pts_seconds)
            said = f"pts_seconds {pts_seconds}"
        elif self._follow_frames and isinstance(item, Frame) and _has_time(item):
            meta = item.decoded.metadata
            assert meta.pts is not None and meta.time_base is not None
            own = meta.pts * fractions.Fraction(meta.time_base)
            if self._origin is None:
                self._origin = own - (self._last + 1 / self._rate if self._last is not None else 0)
            time = own - self._origin
            said = f"the frame's pts_seconds {item.pts_seconds}"
        else:
            time = self._last + 1 / self._rate if self._last is not None else fractions.Fraction(0)
            said = "the next frame's time"
        ticks = round(time / self._time_base)
        if self._last_ticks is not None and ticks <= self._last_ticks:
            assert self._last is not None
            raise InvalidInputError(
                f"timestamps must increase: {said} ({float(time):.6f} s) is not after the previous "
                f"frame's {float(self._last):.6f} s; pass later pts_seconds, or create the Writer with "
                "rate=... to time frames by their order"
            )
        self._last, self._last_ticks = time, ticks
        return ticks

    # -- checks --------------------------------------------------------------------------------------

    def _check_process(self) -> None:
        if self._held.forked:
            raise ClosedError(
                f"this Writer of {self.path!r} was made in process {self._held.pid}, which this one was "
                "forked from: its encoder and GPU objects did not come with the fork, and the file is that "
                "process's to finish; create a Writer in this process for its own output"
            )

    def _check_open(self) -> None:
        self._check_process()
        if self._closed is not None:
            raise ClosedError(
                f"this Writer of {self.path!r} was {self._closed}; nothing more can be written to it: "
                "create another one (alpha2.create) for more frames"
            )

    def _check_size(self, width: int, height: int) -> None:
        """Refuse a size other than the first accepted frame's (a refused first frame fixes nothing), and
        a first size the encoder would hang on at close (refused at once: the copier holds a texture
        back, so the session would meet it only at the next write)."""
        if self._size is None:
            refusal = self._held.session.size_refusal(width, height)
            if refusal is not None:
                raise InvalidInputError(refusal)
        if self._size is not None and self._size != (width, height):
            raise InvalidInputError(
                f"all frames of one output must have the first frame's size ({_size(*self._size)}); got "
                f"{_size(width, height)}: resize before writing, or create another Writer"
            )

    def _check_texture(self, texture: Any) -> Device:
        """The Device to convert ``texture`` on; refuses one the writer cannot read, saying why."""
        owner = getattr(texture, "_device", None)  # wgpu-py's objects keep their device there
        if self._device is not None and owner is not None and owner is not self._device.webgpu_device:
            raise InvalidInputError(
                f"the texture belongs to another device than this Writer's ({self._device.adapter_name}); "
                "create the Writer on the texture's device (alpha2.create(path, device=source.device), or "
                "your own GPUDevice), or write arrays instead"
            )
        fmt = str(texture.format)
        if fmt not in SOURCE_TEXTURE_FORMATS:
            twin = " (for an -srgb texture, render into its plain twin)" if "srgb" in fmt else ""
            raise InvalidInputError(
                f"the Writer reads {', '.join(SOURCE_TEXTURE_FORMATS)} textures, not {fmt!r}: render into "
                f"one of those{twin}"
            )
        dimension = str(getattr(texture, "dimension", "2d"))
        if dimension != "2d":  # WebGPU's own validation error would not say so
            raise InvalidInputError(
                f"the Writer reads 2d textures, not a {dimension} one: copy the picture into a 2d texture "
                "(copy_texture_to_texture), or write it as an array"
            )
        device = self._device_for(texture)
        if not int(texture.usage) & int(device.gpu_module.TextureUsage.TEXTURE_BINDING):
            raise InvalidInputError(
                "the texture lacks TextureUsage.TEXTURE_BINDING, which the Writer reads it by: create it "
                "with usage=... | TextureUsage.TEXTURE_BINDING"
            )
        return device

    # -- GPU objects ---------------------------------------------------------------------------------

    def _device_for(self, texture: Any) -> Device:
        if self._device is None:
            warm_webgpu_bindings()  # wgpu-py's C types in one parse, before the copier asks for them
            owner = getattr(texture, "_device", None)
            if owner is not None:
                self._device = Device.adopt(owner)
            else:
                self._device = self._held.own_device = Device.open()
        # A closed Device has no GPUDevice left: its writes failed inside cffi ("initializer for ctype
        # 'struct WGPUDeviceImpl *' must be a cdata pointer, not NoneType").
        if getattr(self._device, "_closed", False):
            raise ClosedError(
                f"the Device of this Writer of {self.path!r} was closed (Device.close() or its with block): "
                "nothing can be converted on it; close the Device after the Writer, or create the Writer "
                "on an open one"
            )
        return self._device

    def _copier_for(self, device: Device, width: int, height: int) -> EncodeCopier:
        if self._held.copier is None:
            colour = self._stream_colour or self.colour
            self._held.copier = EncodeCopier(
                device,
                width,
                height,
                matrix=colour.matrix,
                colour_range=colour.range,
                chroma_location=colour.chroma_location,
                extent=self._extent,
            )
            if self._stream_colour is None:
                self._stream_colour = colour
        return self._held.copier

    def _passes_as_it_is(self, frame: Frame) -> bool:
        """Whether a decoded frame's planes may be encoded as they are: shown unturned, and in the
        stream's colour (a GIF's frames are made RGB from their own colour, whatever came before)."""
        if frame.rotation is not Rotation.NONE or frame.mirrored:
            return False  # its planes as stored, with no display matrix, would show sideways
        stream = self._stream_colour
        if stream is None or self._held.session.encoder.name in PALETTE_ENCODERS:
            return True
        colour = frame.colour
        return (colour.matrix, colour.range, colour.primaries, colour.transfer) == (
            stream.matrix,
            stream.range,
            stream.primaries,
            stream.transfer,
        )

    def _upload(self, device: Device, pixels: np.ndarray) -> Any:
        """The upload texture, holding ``pixels`` (of the copier's size)."""
        height, width = pixels.shape[:2]
        if pixels.shape[2] == 3:
            pixels = np.concatenate([pixels, np.full((height, width, 1), 255, np.uint8)], axis=2)
        gpu = device.gpu_module
        held = self._held
        if held.upload is None:
            held.upload = device.webgpu_device.create_texture(
                size=(width, height, 1),
                format="rgba8unorm",
                usage=gpu.TextureUsage.TEXTURE_BINDING | gpu.TextureUsage.COPY_DST,
            )
        device.webgpu_device.queue.write_texture(
            {"texture": held.upload, "origin": (0, 0, 0), "mip_level": 0},
            np.ascontiguousarray(pixels),
            {"offset": 0, "bytes_per_row": width * 4, "rows_per_image": height},
            (width, height, 1),
        )
        return held.upload

    # -- writing -------------------------------------------------------------------------------------

    def write(self, item: Any, *, pts_seconds: float | None = None) -> None:
        """Encode one frame: a texture, an RGB(A) uint8 array (numpy / DLPack), or an alpha2 Frame.

        Args:
            item: What to write. Textures need TEXTURE_BINDING usage, 2d and rgba8unorm, bgra8unorm or
                rgba16float, on the Writer's device; arrays are (height, width, 3 or 4) uint8. Both
                are converted to 4:2:0, so their width and height must be even (a GIF takes arrays as
                RGB(A): any size, alpha kept as its transparency). Every item must have the first
                one's size (that of the first one written, not of one refused).
            pts_seconds: When the frame shows, in seconds of the output; must increase. Default: a
                decoded frame's own timestamp (from the first one written), else one frame after the
                previous (see :attr:`timing`).

        Raises:
            ClosedError: the Writer was closed or aborted.
            ConcurrentIterationError: another thread is writing to this Writer now.
            InvalidInputError: a size other than the first frame's, an odd or empty size, an array
                or texture the Writer cannot read, or a timestamp that does not increase; the message
                says what to do. The Writer stays usable.
            UnsupportedError: an array larger than the device's textures.
            OutputWriteError: the disk did not take the output (full, over quota, an I/O error:
                :class:`alpha2.gpu.errors.OutputWriteError`, naming the file); the partial file is removed.
        """
        self._check_open()
        if not self._busy.acquire(blocking=False):
            raise ConcurrentIterationError(
                "another thread is writing to this Writer at the same time (one Writer is used from one "
                "thread at a time); hand the frames to one writing thread through a queue, or await "
                "write_async() calls one after another"
            )
        try:
            self._write(item, pts_seconds)
        except BaseException as exc:
            if self._held.session.closed and self._closed is None:  # the encoder failed, or was interrupted
                failure = type(exc).__name__
                self._closed = f"aborted when a write failed ({failure}; its partial output was removed)"
                self._finalizer.detach()
                self._held.release_gpu_and_thread()
            raise
        finally:
            self._busy.release()

    def _write(self, item: Any, pts_seconds: float | None) -> None:
        picture = item  # what is encoded; ``item`` times it
        if isinstance(item, Frame):
            if item._released or item.decoded.released:
                raise InvalidInputError(
                    "this Frame's decoded picture is gone (the frame was released, or its NVDEC surface was "
                    "handed to textures by rendering or converting it); write the frame before that, or "
                    "write the texture render() returned"
                )
            if not self._passes_as_it_is(item):
                # The picture as shown goes the way of textures (and has the shown size the Writer
                # checks), converted to the stream's colour.
                picture = self._shown_picture(item)
            else:
                self._write_decoded(item, pts_seconds)
                return
        if hasattr(picture, "create_view"):
            texture = picture
            device = self._check_texture(texture)
            width, height = int(texture.size[0]), int(texture.size[1])
            self._check_size(width, height)
            _check_even(width, height)
            copier = self._copier_for(device, width, height)
        else:
            pixels = _host_array(picture)
            _check_pixels(pixels)
            height, width = pixels.shape[:2]
            self._check_size(width, height)
            if self._held.session.encoder.name in PALETTE_ENCODERS:
                self._write_rgb(pixels, item, pts_seconds)
                return
            _check_even(width, height)
            device = self._device_for(None)
            _check_fits(device, width, height)
            copier = self._copier_for(device, width, height)  # refuses a size the encoder cannot take
            texture = self._upload(device, pixels)
        self._size = (width, height)
        self._fix_timing(item)
        ticks = self._ticks_for(item, pts_seconds)
        for planes in copier.submit(texture, ticks):
            with planes:
                self._held.session.encode(planes)
        self._frames += 1

    def _encode_flushed(self) -> None:
        """Encode what the copier still holds (the textures written so far), oldest first."""
        held = self._held
        if held.copier is not None:
            for planes in held.copier.flush():
                with planes:
                    held.session.encode(planes)

    def _write_rgb(self, pixels: np.ndarray, item: Any, pts_seconds: float | None) -> None:
        """Encode an array as the RGB(A) it is: a GIF's palette is made from RGB, so the array keeps its
        colours, odd sides and alpha (GIF transparency), where 4:2:0 on the device would lose them."""
        height, width = pixels.shape[:2]
        self._size = (width, height)
        self._fix_timing(item)
        ticks = self._ticks_for(item, pts_seconds)
        self._encode_flushed()  # textures written before it go first, in order
        data = np.ascontiguousarray(pixels)
        row = width * pixels.shape[2]
        plane = CpuPlane(data=data, bytes_per_row=row, width_bytes=row, height=height)
        fmt = PixelFormat.RGBA if pixels.shape[2] == 4 else PixelFormat.RGB24
        self._held.session.encode(
            CpuPlaneSet((plane,)), pts=ticks, pixel_format=fmt, width=width, height=height
        )
        self._frames += 1

    def _shown_picture(self, frame: Frame) -> Any:
        """A turned frame as shown: rendered on its source's device when the Writer's is that one (or
        not chosen yet), else read back as an RGBA array."""
        source_device = frame._source.device
        if self._device is None or self._device.webgpu_device is source_device.webgpu_device:
            return frame.render()
        return frame.to_ndarray("rgba")

    def _write_decoded(self, item: Frame, pts_seconds: float | None) -> None:
        """Encode a decoded frame's planes as they are, tagged with its own colour."""
        self._check_size(item.width, item.height)
        if self._size is None:  # the encoder's limits, where its own message would be "Invalid argument"
            extent = _encoder_extent(self.session.encoder.name, item.decoded.pixel_format)
            if extent is not None:
                extent.check(item.width, item.height)
        self._size = (item.width, item.height)
        self._fix_timing(item)
        ticks = self._ticks_for(item, pts_seconds)
        self._encode_flushed()  # textures written before it go first, in order
        self._held.session.encode(item.decoded, pts=ticks)
        if self._stream_colour is None:
            self._stream_colour = item.colour
        self._frames += 1

    async def write_async(self, item: Any, *, pts_seconds: float | None = None) -> None:
        """:meth:`write` on a worker thread: the event loop runs while the GPU and the encoder work.

        Raises:
            ClosedError: the Writer was closed or aborted.
        """
        self._check_open()
        held = self._held
        if held.worker is None:
            held.worker = _Worker(_WORKER_NAME)
        await held.worker.run(lambda: self.write(item, pts_seconds=pts_seconds))

    def close(self) -> None:
        """Encode what is still in flight and finish the file (atomically). Idempotent.

        Raises:
            EncoderError: finishing failed, or nothing was written (then no file is left either).
            OutputWriteError: the disk did not take the output's end (full, over quota, an I/O error);
                no file is left.
            ClosedError: this process is a fork of the one that made the Writer (that one finishes it).
        """
        if self._closed is not None:
            return
        self._check_process()
        self._closed = "closed"
        self._finalizer.detach()
        held = self._held
        try:
            if held.worker is not None:
                held.worker.close()
                held.worker = None
            self._encode_flushed()
            held.release_gpu_and_thread()
            held.session.close()
        except BaseException:
            held.release_gpu_and_thread()
            held.session.abort()
            raise

    def abort(self) -> None:
        """Stop and remove the partial output. Idempotent. In a process forked after the Writer was made it
        frees and removes nothing: the output is the other process's."""
        if self._closed is not None:
            return
        self._closed = "aborted"
        self._finalizer.detach()
        if self._held.forked:
            self._held.keep_in_fork()
            return
        self._held.release_gpu_and_thread()
        self._held.session.abort()

    def __enter__(self) -> Writer:
        self._check_open()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __reduce__(self) -> Any:
        # Without this, pickle failed with "cannot pickle '_thread.RLock' object", and copy.copy made a
        # second Writer on the same encoder (its writes refused, its close a silent no-op).
        raise InvalidInputError(
            f"an alpha2 Writer ({self.path!r}) cannot be pickled or copied: its encoder and output file "
            "belong to this process; create one Writer per output in the process that writes it"
        )

    def __repr__(self) -> str:
        state = self._closed or f"{self._frames} frames written"
        return f"<alpha2.Writer {self.path!r} {state}>"


def _check_path(path: Any) -> None:
    """Refuse an output the Writer cannot make, when it is created rather than when it closes: not a
    path, a directory (found only at the rename, after every frame was encoded), a missing folder.

    Raises:
        InvalidInputError: the message names what is wrong.
    """
    if not isinstance(path, str | os.PathLike) or not isinstance(os.fspath(path), str):
        raise InvalidInputError(
            f"path must name the output file (a str or pathlib.Path, e.g. 'out.mp4'), got {short_repr(path)}"
        )
    check_output_path(path)


def _check_audio_from(path: str | os.PathLike[str]) -> None:
    """Refuse an ``audio_from`` that is missing, not media, or without sound, when the Writer is made
    (typed: MediaNotFoundError, MediaFormatError, NoAudioStreamError), not at the first frame as an
    encoder failure."""
    from alpha2.ffmpeg_bridge.describe import describe_file
    from alpha2.ffmpeg_bridge.errors import NoAudioStreamError
    from alpha2.ffmpeg_bridge.side_streams import StreamKind

    facts = describe_file(path, rates=False)
    if not any(stream.kind is StreamKind.AUDIO for stream in facts.streams):
        kinds = ", ".join(sorted({stream.kind.value for stream in facts.streams})) or "no streams"
        raise NoAudioStreamError(f"audio_from {os.fspath(path)!r} has no audio stream (it has {kinds})")


def create(
    path: str | os.PathLike[str],
    *,
    codec: str | None = None,
    rate: float | fractions.Fraction | None = None,
    colour: ColourInfo | None = None,
    device: Any = None,
    untagged: bool = False,
    crf: float | None = None,
    bitrate: int | None = None,
    preset: str | int | None = None,
    audio_from: Any = None,
    **options: Any,
) -> Writer:
    """Create a video file to write into (:class:`Writer` says how frames are timed and converted).

    Args:
        path: The output; its extension picks the container (.mp4, .mkv, .mov, .webm, ...). Its folder
            must exist. A file already there is replaced when the Writer closes, and kept as it was
            when the writing fails or is aborted.
        codec: ``'h264'``, ``'hevc'``, ``'av1'``, ``'vp9'``, ``'gif'`` or an FFmpeg encoder name; None:
            by the container, as the command line does (VP9 for .webm, GIF for .gif, H.264 otherwise).
        rate: Frames per second (e.g. 25, or ``Fraction(30000, 1001)``; at most 1000000); None: the
            timing comes from what is written (a VideoSource's frames keep theirs; textures and arrays
            get 30, said in :attr:`Writer.timing`).
        colour: The matrix and range textures and arrays are converted with, and the stream's tags;
            None: BT.709 limited (BT.601 for MJPEG, which decoders read as BT.601 whatever its tags).
        device: The device the textures written live on (an alpha2 Device or a WebGPU device); None:
            the default one, made on the first texture.
        untagged: Write no colour tags; the pixels are still converted with ``colour``, and readers
            guess (mpv, browsers and alpha2 BT.709 at HD sizes and BT.601 below, swscale BT.601).
        crf: Constant-quality factor (per codec: h264 23, hevc 28, ...); None: the encoder's default.
        bitrate: Target bits per second instead of ``crf``.
        preset: The encoder's speed preset (libx264 ``'medium'`` by default, NVENC ``'p4'``).
        audio_from: A file (or DecodeSession) whose audio is copied into the output: all of it, as
            ffmpeg copies a stream without ``-shortest``, whatever length of video is written (the
            transcoder, which knows the cut, trims it: ``alpha2.api.transcode(..., TranscodeOptions(
            to_seconds=...))``).
        options: Further :class:`~alpha2.ffmpeg_bridge.encode.EncodeSession` arguments (``gop_size``,
            ``options`` for the encoder's own, ``container_format`` ...).

    Raises:
        InvalidInputError: a bad option (the message names it), a codec the path's container cannot
            hold (h264 into .webm), or a path that is a directory, a FIFO or a device (/dev/null), or in a
            folder that does not exist;
            UnsupportedError: an encoder FFmpeg does not have.
    """
    return Writer(
        path,
        codec=codec,
        rate=rate,
        colour=colour,
        device=device,
        untagged=untagged,
        crf=crf,
        bitrate=bitrate,
        preset=preset,
        audio_from=audio_from,
        **options,
    )
