"""What a media file holds, for people and programs: :func:`describe` -> :class:`MediaDescription`.

The container and every stream as the file says (:class:`~alpha2.ffmpeg_bridge.describe.FileFacts`,
nothing decoded), and for the video stream alpha2 would decode, what only decoding tells: the first
frame's colour as alpha2 resolves it (with what was guessed for missing tags, as the player shows it),
its HDR metadata, and the decoder that runs (NVDEC or software, and why). ``alpha2 probe FILE`` prints
it; ``--json`` gives :meth:`MediaDescription.as_dict`.

Example::

    import alpha2

    info = alpha2.describe("clip.mkv")        # also alpha2.api.media.describe
    print(info.file.format_long, info.file.duration_seconds)
    for stream in info.file.streams:
        print(stream.index, stream.kind.value, stream.codec, stream.language)
    print(info.decoder, info.video.colour if info.video else None)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from alpha2.api import arguments
from alpha2.api.colour_report import guessed_notes
from alpha2.ffmpeg_bridge.describe import MARKS, FileFacts, StreamFacts, describe_file
from alpha2.ffmpeg_bridge.side_streams import StreamKind
from alpha2.gpu.errors import Error, InvalidInputError

if TYPE_CHECKING:
    from alpha2.api.source import VideoInfo

__all__ = ["FileFacts", "MediaDescription", "StreamFacts", "describe"]


@dataclass(frozen=True)
class MediaDescription:
    """A media file described: its container and streams, and its video as alpha2 decodes it."""

    file: FileFacts
    """The container and every stream, as the file says."""
    video_index: int | None
    """The stream alpha2 decodes (the container's best video stream); None without video or when
    decoding was not asked for."""
    video: VideoInfo | None
    """What opening that stream and decoding its first frame said (resolved colour, HDR metadata,
    rotation, rate); None when there is no video, it was not decoded, or it failed (:attr:`video_error`)."""
    decoder: str | None
    """The decoder that runs and why (``cuda: NVDEC on ...``, ``none: ...``), as ``VideoSource.hwaccel``."""
    colour_guesses: tuple[str, ...]
    """What the video left untagged and what alpha2 takes instead (``matrix BT.709 guessed from the
    size (untagged)``); empty when every tag is there."""
    video_error: str | None
    """Why the video could not be opened or decoded (the file is described all the same)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the file, each stream, and the decoded video's facts.

        The video's ``display_size`` is the decoded picture's, turned by its ``rotation``, in stored
        pixels (:attr:`VideoInfo.width`, ``height``): what a frame, a tensor or a render holds.
        ``shown_size`` is what a player shows: that with the pixels' shape (``sample_aspect_ratio``,
        ``"16:11"``, None: square) applied too, as each stream's ``shown_size`` says; they differ for
        anamorphic video (352x288 stored, 512x288 shown)."""
        video = self.video
        colour = video.colour if video is not None else None
        hdr = video.hdr if video is not None else None
        shape = self._sample_aspect()
        return {
            "path": self.file.path,
            "format": self.file.format,
            "format_long": self.file.format_long,
            "size_bytes": self.file.size_bytes,
            "duration_seconds": self.file.duration_seconds,
            "start_seconds": self.file.start_seconds,
            "bit_rate": self.file.bit_rate,
            "tags": dict(self.file.tags),
            "chapters": [
                {"start_seconds": c.start_seconds, "end_seconds": c.end_seconds, "title": c.title}
                for c in self.file.chapters
            ],
            "streams": [_stream_dict(s) for s in self.file.streams],
            "video": None
            if video is None
            else {
                "index": self.video_index,
                "codec": video.codec,
                "display_size": [video.width, video.height],
                "shown_size": list(self._shown_size(video)),
                "sample_aspect_ratio": None if shape is None else f"{shape.numerator}:{shape.denominator}",
                "rotation": video.rotation.name.lower(),
                "mirrored": video.mirrored,
                "frame_rate": video.frame_rate,
                "duration_seconds": video.duration_seconds,
                "frame_count": video.frame_count,
                "colour": None
                if colour is None
                else {
                    "matrix": colour.matrix.name.lower(),
                    "primaries": colour.primaries.name.lower(),
                    "transfer": colour.transfer.name.lower(),
                    "range": colour.range.name.lower(),
                },
                "colour_guesses": list(self.colour_guesses),
                "hdr": None if hdr is None or hdr.is_empty else _hdr_dict(hdr),
            },
            "decoder": self.decoder,
            "video_error": self.video_error,
        }

    def _video_stream(self) -> StreamFacts | None:
        """The facts of the decoded video's stream, as the container gives them."""
        return next((s for s in self.file.streams if s.index == self.video_index), None)

    def _sample_aspect(self) -> Fraction | None:
        """The decoded video stream's pixel shape where it is not square, as its stream says."""
        stream = self._video_stream()
        shape = None if stream is None else stream.sample_aspect_ratio
        return None if shape is None or shape == 1 else shape

    def _shown_size(self, video: VideoInfo) -> tuple[int, int]:
        """``video``'s size as a player shows it: its stream's (:attr:`StreamFacts.shown_size`: turned,
        the pixels' shape applied), else its own."""
        stream = self._video_stream()
        return (video.width, video.height) if stream is None else stream.shown_size


def describe(path: str | os.PathLike[str], *, decode: bool = True, hwaccel: str = "auto") -> MediaDescription:
    """Describe the media file at ``path``.

    Args:
        decode: also open the video stream alpha2 would decode and decode its first frame (resolved
            colour, HDR metadata, the decoder); False: the container's word only, nothing decoded.
        hwaccel: the decoder to try, as :func:`alpha2.open` takes it (``auto``: NVDEC where it can).

    Raises:
        MediaNotFoundError: no such file, or it cannot be read.
        MediaFormatError: not a media file FFmpeg can open.
        InvalidInputError: ``path`` is not a path, or a bad ``decode`` or ``hwaccel``.

    A video that does not open or decode does not raise: :attr:`MediaDescription.video_error` says why.
    """
    if not isinstance(path, str | os.PathLike):
        raise InvalidInputError(
            f"describe takes a path (str or os.PathLike), got {type(path).__name__}; for a file's bytes "
            "or a file object, alpha2.open(...) reads the video"
        )
    arguments.flag("decode", decode)
    arguments.choice("hwaccel", hwaccel, ("auto", "cuda", "none"))
    facts = describe_file(path)
    has_video = any(s.kind is StreamKind.VIDEO and not s.attached_picture for s in facts.streams)
    if not decode or not has_video:
        return MediaDescription(facts, None, None, None, (), None)
    from alpha2.api.source import VideoSource

    try:
        with VideoSource(path, hwaccel=hwaccel, prefetch=0) as source:
            info = source.info
            index = source.session.info.index
            decoder = source.hwaccel
    except Error as exc:
        return MediaDescription(facts, None, None, None, (), exc.message)
    # The turn the first frame's display matrix gives (a Matroska's, which FFmpeg reads into no tag) is
    # the stream's too: its facts in --json said 'none' beside the video's 'cw90'.
    streams = tuple(
        replace(s, rotation=info.rotation) if s.index == index and s.rotation is not info.rotation else s
        for s in facts.streams
    )
    facts = replace(facts, streams=streams)
    return MediaDescription(facts, index, info, decoder, tuple(guessed_notes(info.colour)), None)


_COMMON = (
    "index",
    "kind",
    "codec",
    "profile",
    "language",
    "title",
    *MARKS,
    "timecode",
    "bit_rate",
    "duration_seconds",
    "start_seconds",
)
_BY_KIND = {
    "video": (
        "attached_picture",
        "width",
        "height",
        "sample_aspect_ratio",
        "rotation",
        "frame_rate",
        "frame_count",
        "frames_by_duration",
        "pixel_format",
        "colour_tags",
        "alpha_beside",
        "field_order",
        "shown_size",
        "variable_rate",
        "empty",
    ),
    "audio": ("sample_rate", "channels", "layout", "sample_format"),
    "subtitle": ("text",),
    "attachment": ("filename",),
    "data": ("codec_tag",),
}


def _stream_dict(stream: StreamFacts) -> dict[str, Any]:
    """The stream's fields that its kind has, JSON-ready."""
    out: dict[str, Any] = {}
    for name in (*_COMMON, *_BY_KIND.get(stream.kind.value, ())):
        value = getattr(stream, name)
        if name == "kind":
            value = value.value
        elif name == "rotation":
            value = value.name.lower()
        elif name in ("shown_size", "variable_rate") and value is not None:
            value = list(value)
        elif name == "sample_aspect_ratio" and value is not None:
            value = f"{value.numerator}:{value.denominator}"
        elif name == "colour_tags" and value is not None:
            value = dict(zip(("matrix", "primaries", "transfer", "range"), value, strict=True))
        out[name] = value
    return out


def _hdr_dict(hdr: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if hdr.mastering is not None:
        m = hdr.mastering
        out["mastering_min_cd_m2"] = m.min_luminance_cd_m2
        out["mastering_max_cd_m2"] = m.max_luminance_cd_m2
        # The display's colour points (xy), as ffprobe gives them: a P3 grade and a BT.2020 one differ.
        out["mastering_primaries"] = {
            name: [float(x), float(y)]
            for name, (x, y) in zip(
                ("red", "green", "blue", "white"),
                (m.primaries.red, m.primaries.green, m.primaries.blue, m.primaries.white),
            )
        }
    if hdr.light_level is not None:
        out["max_cll_cd_m2"] = hdr.light_level.max_cll_cd_m2
        out["max_fall_cd_m2"] = hdr.light_level.max_fall_cd_m2
    return out
