"""Audio channel layouts that PyAV can hold: custom-order layouts made safe when an input is opened.

FFmpeg 7 and later describe some streams' channels in a *custom order* (a map of channel ids, owned
by the codec context): a MOV ``chan`` atom in an order FFmpeg's native layouts do not have (7.1 with
its side pair before its back pair, as FFmpeg 5 and Apple's tools write it), some WAV and CAF files.
PyAV 18 copies a layout struct by value into every ``AudioLayout`` it hands out (``codec_context.layout``,
``.channels``, each decoded ``AudioFrame.layout``) and frees the map when that object goes, so the map
is freed twice: glibc aborts the process (``double free or corruption``) at the first look at the
stream's channel count, or when its first decoded frame is collected.

:func:`make_layouts_safe` runs on every input alpha2 opens, before anything reads a layout: each audio
stream's codec context gets a layout with no map, so neither it nor its decoded frames hold one:

* a custom order whose channels lie in FFmpeg's native order is that native layout (the same layout);
* channels in another order (7.1 as FL FR FC LFE SL SR BL BR): the native layout of the same channels,
  and a :class:`ChannelOrder` that puts each decoded frame's samples into that order
  (:meth:`ChannelOrder.apply`), so every channel keeps its place; a stream copy of such a stream would
  label it wrongly, so a copier encodes it again (losslessly where the source was) and says so;
* channels FFmpeg has no native place for (user-defined or ambisonic channels in a custom map): the
  unspecified order of as many channels, said in :attr:`ChannelOrder.note`.

Layouts without a map (native, ambisonic, unspecified) are left as they are.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from typing import Any

import av
import numpy as np

__all__ = [
    "AUDIO_DRIFT_SECONDS",
    "PLANAR_CHANNELS_PYAV_READS",
    "ChannelOrder",
    "interleaved",
    "kept_on_time",
    "local_name",
    "make_layouts_safe",
    "native_positions",
    "open_input",
    "packed_frame",
    "silence_like",
    "trimmed_frame",
    "with_layout",
]


AUDIO_DRIFT_SECONDS = 0.02
"""How far decoded audio may drift from its timestamps before silence fills the gap or repeated samples
are left out (the transcoder's encoders and the audio decode session: a muxer's timestamps round to a
millisecond, and jitter of that size is no gap)."""

PLANAR_CHANNELS_PYAV_READS = 8
"""PyAV reads the planes of a planar audio frame safely only below this many channels (see
:func:`interleaved`): 7.1 and more are read and made packed."""


@functools.lru_cache(maxsize=1)
def native_positions() -> dict[str, int]:
    """Each named channel of FFmpeg's native order (``FL``, ``FR``, ``FC``, ``LFE``, ``BL`` ...) and its
    place in it (the bit of its mask), as the FFmpeg that PyAV bundles names them."""
    found: dict[str, int] = {}
    for bit in range(64):
        try:
            channels = av.AudioLayout(hex(1 << bit)).channels
        except (ValueError, TypeError):
            continue
        if len(channels) == 1 and not str(channels[0].name).startswith("USR"):
            found[str(channels[0].name)] = bit
    return found


@dataclasses.dataclass(frozen=True)
class ChannelOrder:
    """How one input stream's custom channel order was made safe.

    ``source``: its channels as the file gives them (``FL+FR+FC+LFE+SL+SR+BL+BR``); ``layout``: the
    layout its codec context and decoded frames now carry; ``order``: for each channel of ``layout``,
    the source channel it takes (None: the samples stay in place).
    """

    stream_index: int
    source: str
    layout: str
    order: tuple[int, ...] | None

    @property
    def reorders(self) -> bool:
        """Whether decoded samples must move (:meth:`apply`) to match ``layout``."""
        return self.order is not None

    @property
    def note(self) -> str:
        """What was done, in words."""
        if self.order is not None:
            return f"channels {self.source} put into FFmpeg's order ({self.layout})"
        if self.layout.endswith(" channels"):
            return f"channels {self.source} have no place in FFmpeg's layouts: kept as {self.layout}"
        return f"channels {self.source} read as {self.layout}"

    def apply(self, frame: Any) -> Any:
        """``frame`` (an ``av.AudioFrame`` decoded from the stream) with its samples in ``layout``'s
        order: a new frame (packed, see :func:`interleaved`) with the same rate and timestamps;
        ``frame`` itself where nothing moves (None stays None: a decoder's drain)."""
        if frame is None or self.order is None:
            return frame
        samples, packed = interleaved(frame)
        return packed_frame(samples[:, list(self.order)], packed, self.layout, frame)


def interleaved(frame: Any) -> tuple[np.ndarray, str]:
    """The samples of ``frame`` (an ``av.AudioFrame``) as an array of shape (samples, channels), and
    the packed sample format they are in (``s16``, ``flt`` ...).

    PyAV finds a frame's planes by walking FFmpeg's plane pointers to a null one, which a planar frame
    of 8 channels or more does not have (``AVFrame.data`` holds 8 pointers, all used at 8 channels;
    past 8 the array has exactly one per channel): its ``planes`` and ``to_ndarray`` read past the
    array (9 planes for a 7.1 frame, the last at a garbage address) and crash. Such a frame is first
    made packed by FFmpeg's resampler (same rate and layout: no delay, no change to a sample)."""
    fmt = frame.format
    channels = int(frame.layout.nb_channels)
    packed = fmt.packed.name
    if fmt.is_planar and channels >= PLANAR_CHANNELS_PYAV_READS:
        converter = av.AudioResampler(format=packed, layout=frame.layout, rate=frame.sample_rate)
        parts = [p.to_ndarray().reshape(-1, channels) for p in converter.resample(frame)]
        parts += [p.to_ndarray().reshape(-1, channels) for p in converter.resample(None)]
        return np.concatenate(parts) if parts else np.zeros((0, channels), _dtype(packed)), packed
    data = frame.to_ndarray()
    return (data.T if fmt.is_planar else data.reshape(-1, channels)), packed


def _dtype(packed: str) -> np.dtype[Any]:
    return np.dtype(
        {
            "u8": np.uint8,
            "s16": np.int16,
            "s32": np.int32,
            "flt": np.float32,
            "dbl": np.float64,
            "s64": np.int64,
        }[packed]
    )


def packed_frame(
    samples: np.ndarray, packed: str, layout: str, like: Any, *, keep_format: bool = False
) -> Any:
    """A packed ``av.AudioFrame`` of ``samples`` (shape (samples, channels), in the packed format
    ``packed``) under ``layout``, with the rate and timestamps of the frame ``like``; with
    ``keep_format``, in ``like``'s format (planar where it is) so that a resampler or encoder set up by
    the frames before it takes it (PyAV's resampler passes a frame through unchecked where the first
    frame needed nothing). PyAV cannot fill a planar frame of 8 channels or more (see
    :func:`interleaved`): FFmpeg's resampler makes that one from the packed frame."""
    planar = like.format.is_planar and samples.shape[1] < PLANAR_CHANNELS_PYAV_READS
    if keep_format and planar:
        data = np.ascontiguousarray(samples.T)
        out = av.AudioFrame.from_ndarray(data, format=like.format.name, layout=layout)
    else:
        data = np.ascontiguousarray(samples).reshape(1, -1)
        out = av.AudioFrame.from_ndarray(data, format=packed, layout=layout)
    out.sample_rate = like.sample_rate
    out.pts = like.pts
    if like.time_base is not None:  # a WMA decoder's frames come without one (an AttributeError here)
        out.time_base = like.time_base
    if keep_format and like.format.is_planar and not planar and samples.shape[0]:
        converter = av.AudioResampler(format=like.format.name, layout=out.layout, rate=out.sample_rate)
        made = [*converter.resample(out), *converter.resample(None)]  # same rate: no delay, one frame
        if len(made) == 1:
            made[0].pts = like.pts
            if like.time_base is not None:
                made[0].time_base = like.time_base
            return made[0]
    return out


def with_layout(frame: Any, layout: str) -> Any:
    """``frame`` (an ``av.AudioFrame``) with its samples as they are under another layout of as many
    channels (a new packed frame: same rate and timestamps), where no mixing is wanted: ambisonic
    or unplaced channels passed one for one to an encoder without such a layout."""
    samples, packed = interleaved(frame)
    return packed_frame(samples, packed, layout, frame)


def _safe_layout(names: list[str], positions: dict[str, int]) -> tuple[str, tuple[int, ...] | None]:
    """The map-free layout for channels ``names`` in this order, and the source channel each of its
    channels takes (None: in place)."""
    count = len(names)
    if count and all(n in positions for n in names) and len(set(names)) == count:
        native = sorted(range(count), key=lambda i: positions[names[i]])
        layout = "+".join(names[i] for i in native)
        order = None if native == list(range(count)) else tuple(native)
        return str(av.AudioLayout(layout).name), order
    return f"{count} channels", None


def make_layouts_safe(container: Any) -> dict[int, ChannelOrder]:
    """Give every audio stream of the input ``container`` a layout without a map (see the module's
    text); call it before anything reads a stream's layout or decodes.

    Returns what changed, by stream index (empty for the files that need nothing: nearly all).
    """
    done: dict[int, ChannelOrder] = {}
    positions = native_positions()
    for stream in container.streams.audio:
        cc = stream.codec_context
        if cc is None or cc.is_open:
            continue
        # PyAV's by-value copy of the context's layout: a map, where there is one, goes with it.
        held = cc.layout
        try:
            name = str(held.name)
            names = [str(c.name) for c in held.channels]
            if not names:
                continue
            if not all(n in positions for n in names) and _maps_nothing(name, names):
                continue  # unspecified or ambisonic: no map
            layout, order = _safe_layout(names, positions)
            # The context's own struct overwritten (a native layout is the same one again): a map now
            # belongs to ``held`` alone, and goes with it, once.
            cc.layout = layout
        except BaseException:
            _KEPT.append(held)  # not freed: the context still points at its map
            raise
        if order is not None or layout != name:
            done[stream.index] = ChannelOrder(stream.index, "+".join(names), layout, order)
    return done


_KEPT: list[Any] = []


def _maps_nothing(name: str, names: list[str]) -> bool:
    """Whether a layout with a channel outside FFmpeg's native places is one without a map: the
    unspecified order (channels named NONE) or an ambisonic one that its name gives back exactly."""
    if all(n == "NONE" for n in names):
        return True
    if not name.startswith("ambisonic"):
        return False
    try:
        return [str(c.name) for c in av.AudioLayout(name).channels] == names
    except (ValueError, TypeError):
        return False


_SCHEME = re.compile(r"[A-Za-z0-9+.-]+:")
"""What FFmpeg reads as a protocol's name before a colon (its URL_SCHEME_CHARS)."""


def local_name(file: Any) -> Any:
    """``file`` as FFmpeg is to open it: a relative name of a local file that begins as a URL does
    (``take:2.mp4``, ``2024-05-01T10:30.mkv``, ``http:clip.mp4``) with ``./`` before it, so FFmpeg reads
    the file instead of looking for a protocol of that name ('Protocol not found'), as ffmpeg's
    ``file:`` prefix does; anything else (a URL, a file object) as it is."""
    if isinstance(file, str) and _SCHEME.match(file) and os.path.lexists(file):
        return os.path.join(os.curdir, file)
    return file


def open_input(file: Any, **options: Any) -> av.container.InputContainer:
    """``av.open(file, **options)`` for reading, with :func:`make_layouts_safe` done on it (every
    input alpha2 opens goes through it, or through the two calls).

    Raises:
        MediaFormatError: an MP4 / MOV whose 'moov' index, written first, is cut short opened with no
            decodable video or audio stream (said 'no video stream (streams: data)', or 'no decoder').
    """
    from alpha2.ffmpeg_bridge.errors import MediaFormatError, index_cut_short

    container: av.container.InputContainer = av.open(local_name(file), **{**options, "mode": "r"})
    try:
        make_layouts_safe(container)
        if isinstance(file, str) and not any(
            s.type in ("video", "audio") and s.codec_context is not None for s in container.streams
        ):
            cut = index_cut_short(file)
            if cut is not None:
                raise MediaFormatError(f"opening {file!r}: {cut}")
    except BaseException:
        container.close()
        raise
    return container


def silence_like(like: Any, count: int) -> Any:
    """``count`` samples of silence in ``like``'s (an ``av.AudioFrame``) format, layout and rate: what fills
    a gap in a stream's timestamps before ``like``."""
    samples, packed = interleaved(like)
    zeros = np.zeros((count, samples.shape[1]), samples.dtype)
    if packed == "u8":
        zeros += 128  # unsigned 8-bit silence is the middle code
    return packed_frame(zeros, packed, like.layout.name, like, keep_format=True)


def trimmed_frame(frame: Any, cut: int) -> Any:
    """``frame`` (an ``av.AudioFrame``) without its first ``cut`` samples: a new frame of the same
    format, layout and rate."""
    samples, packed = interleaved(frame)
    return packed_frame(samples[cut:], packed, str(frame.layout.name), frame, keep_format=True)


def kept_on_time(frame: Any, expected: float, *, exact: bool = False) -> tuple[list[Any], int, int]:
    """``frame`` (an ``av.AudioFrame`` with a time) kept on its timestamp, where the samples before it
    end at ``expected`` seconds: where its time runs more than :data:`AUDIO_DRIFT_SECONDS` ahead (with
    ``exact``, half a sample), silence fills the gap before it; where it runs that far behind, its
    repeated samples are left out. Returns the frames to go on with (none where every sample repeats),
    the samples of silence put before it and the samples left out of it."""
    rate, samples = int(frame.sample_rate), int(frame.samples)
    drift = float(frame.time) - expected
    if drift > AUDIO_DRIFT_SECONDS or (exact and drift * rate >= 0.5):
        count = round(drift * rate)
        return ([silence_like(frame, count), frame] if count else [frame]), count, 0
    if drift < -AUDIO_DRIFT_SECONDS:
        cut = min(samples, round(-drift * rate))
        return ([] if cut == samples else [trimmed_frame(frame, cut)]), 0, cut
    return [frame], 0, 0
