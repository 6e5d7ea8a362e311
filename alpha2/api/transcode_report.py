"""What ``alpha2 transcode`` reports: :class:`TranscodeStats` (``--json``), and about the input beyond
the frames: what the decoder met (concealed frames, failed packets, truncation), timestamps made
increasing or shifted to start at zero, depth reduced, alpha and interlacing, a picture padded, the
streams kept beside the video and every one dropped, with why, and the audio and subtitle streams chosen
(``--audio-track``, ``--no-subtitles`` ...): which were kept and which dropped.
Nothing FFmpeg changes or meets goes unsaid: these are the summary line's notes and ``--json``'s fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from alpha2.api import pipeline
from alpha2.api.frame_rate import FrameRateCounts
from alpha2.api.transcode_plan import StreamChoice, TranscodePlan
from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.ffmpeg_bridge.palette import PALETTE_ENCODERS
from alpha2.ffmpeg_bridge.side_streams import DroppedStream, InputStream, StreamKind
from alpha2.ffmpeg_bridge.timestamps import TimestampAdjustments
from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.frames import DecodedFrame

if TYPE_CHECKING:
    from alpha2.native_gpu.paths import PathReport

__all__ = [
    "TranscodeStats",
    "choice_summary",
    "colour_tags_added",
    "decode_dict",
    "input_notes",
    "segments_summary",
    "summary_notes",
]


@dataclass
class TranscodeStats:
    """What a transcode did (``--json`` prints :meth:`as_dict`)."""

    input: str
    """The input's path, as given."""
    output: str
    """The output's path, made absolute."""
    frames: int = 0
    """Video frames written (a copy, ``codec="copy"``: video packets copied)."""
    seconds: float = 0.0
    """Wall-clock seconds of the whole run (``fps`` is ``frames`` over them)."""
    plan: TranscodePlan | None = None
    """Passthrough or processing, the input's and output's size, pixel format and colour, and why (None:
    a copy, which plans nothing)."""
    paths: pipeline.PathCounter = field(default_factory=pipeline.PathCounter)
    """Frames and bytes through the CPU by :class:`~alpha2.gpu.identity.ExecutionPath` (``gpu_copy``,
    ``cpu_upload``, ``cpu_download``, ``software``), with the notes and fallback reasons counted."""
    stages: pipeline.StageTimes = field(default_factory=pipeline.StageTimes)
    """Seconds spent in each stage (decode, import, convert, encode, finish, ...)."""
    peak_surfaces: int = 0
    """The most decoder surfaces held at once."""
    frame_rate: FrameRateCounts | None = None
    """``--fps``: the input's and the output's rates, and the frames dropped and repeated (None: the
    input's timing kept)."""
    encoder: dict[str, Any] = field(default_factory=dict)
    """The encoder: ``name`` (an FFmpeg encoder, or ``copy``), ``codec``, ``hardware``, ``reason``,
    ``crf``, ``bitrate``, ``preset``, ``preset_asked``, and ``audio`` (what became of the sound, in
    words: ``copied``, re-encoded and why, dropped and why)."""
    hwaccel: dict[str, Any] = field(default_factory=dict)
    """Where decoding ran and why: ``requested``, ``active`` (``cuda`` or ``none``), ``decoder``,
    ``device_ordinal``, ``reason``, ``fallback_reason``."""
    device: dict[str, Any] | None = None
    """The GPU device the frames were processed on (None: none was used, as in a passthrough)."""
    import_report: str | None = None
    """The frame importer's summary (None: nothing was imported to the GPU)."""
    encode_report: str | None = None
    """The encode copier's summary of its routes (None: the GPU route was not taken)."""
    encode_routes: dict[str, Any] | None = None
    """The encode copier's routes with their frame counts and reasons (None: as ``encode_report``)."""
    import_paths: PathReport[Any] | None = None
    """The importer's report itself, which ``import_report`` says (a segmented transcode sums its
    segments' reports)."""
    encode_paths: PathReport[Any] | None = None
    """The encode copier's report itself, which ``encode_report`` and ``encode_routes`` say."""
    audio_packets_copied: int = 0
    """Audio packets copied into the output."""
    packets_out: int = 0
    """Video packets written."""
    peak_copier_slots: int = 0
    """The most read-back slots of the encode copier in use at once."""
    timestamps: TimestampAdjustments = field(default_factory=TimestampAdjustments)
    """Video timestamps that repeated, went backwards or reset, made strictly increasing."""
    audio_timestamps: TimestampAdjustments = field(default_factory=TimestampAdjustments)
    """Copied audio packets whose dts repeated or went backwards (dropped or rebased)."""
    input_notes: list[str] = field(default_factory=list)
    """What of the input the output does not keep (alpha, interlacing), said once."""
    decode: dict[str, Any] = field(default_factory=dict)
    """What the decoder met: corrupt frames kept or skipped, packets that failed, truncation."""
    scale_route: dict[str, Any] | None = None
    """How frames were scaled and converted (GPU or swscale) and why; None for a passthrough."""
    start_shift_seconds: float = 0.0
    """Subtracted from every output timestamp so that the output starts at zero: the first time across
    the kept streams, in seconds (negative for an input that starts before zero, an MPEG-TS clock FFmpeg
    unwrapped; 0: the input starts at zero)."""
    kept_streams: list[InputStream] = field(default_factory=list)
    """The input's other streams in the output (audio, subtitles, cover art, attachments)."""
    dropped_streams: list[DroppedStream] = field(default_factory=list)
    """The input's streams the output does not hold, each with why."""
    stream_notes: list[str] = field(default_factory=list)
    """What was done to kept streams other than audio otherwise than a plain copy (subtitles converted)."""
    output_bytes: int = 0
    """The output file's size."""
    output_seconds: float | None = None
    """How long the output lasts, as its container says (None: it does not say)."""
    cut: dict[str, Any] | None = None
    """The part of the input written; None: all of it. ``from_seconds``: where the output starts, counted
    from the input's start (the frame on display at ``asked_from_seconds``, or for a copy the key frame
    at or before it, ``key_frame`` True); ``to_seconds``: where it ends (None: the input's end);
    ``frames``: ``--frames``; ``streams_trimmed``: whether the other streams were cut too; for a copy,
    ``past_to``: the video frames at or past ``to_seconds`` it holds (None: none), ``frames`` of them,
    the last at ``last_seconds`` (from the input's start), ``gap``: frames shown between them missing
    (the picture pauses before them), and the ``reason`` (a copy ends by decode time)."""
    segments: dict[str, Any] | None = None
    """Whether the video was encoded in segments at once and joined, or in one pipeline and why, with
    each segment's frames and seconds (:class:`~alpha2.api.segmented_transcode.SegmentedReport`); None:
    ``--segments`` was not given."""
    stream_choice: StreamChoice | None = None
    """The audio and subtitle streams asked for (``--audio-track``, ``--subtitle-track``,
    ``--no-audio``, ``--no-subtitles``) with the input's streams of those kinds; None: none asked
    (every one kept that the output holds). :meth:`as_dict` says per kind which are in the output and
    which were dropped, with why."""

    def choice_dict(self) -> dict[str, Any] | None:
        """``--json``'s ``stream_choice``: per kind (``audio``, ``subtitle``) what was ``asked`` (``all``,
        ``none``, or the words), the streams ``kept`` in the output and those ``dropped`` with their
        ``reason`` (each with ``index``, ``number`` among its kind, ``language``, ``title``, ``codec``),
        and ``matched_none``: words ending in ``?`` that matched no stream. None: no choice asked."""
        if self.stream_choice is None:
            return None
        kept = {s.index for s in self.kept_streams}
        dropped = {d.index: d.reason for d in self.dropped_streams}
        return self.stream_choice.as_dict(kept, dropped)

    @property
    def output_bitrate(self) -> float | None:
        """The output's bits per second over its duration (None: no duration)."""
        if not self.output_seconds:
            return None
        return self.output_bytes * 8 / self.output_seconds

    def video_action(self) -> str:
        """``re-encoded (libx264, crf 23, preset medium)``: what became of the video, and how."""
        encoder = self.encoder
        if not encoder:
            return "not written"
        if encoder.get("name") == "copy":  # --codec copy: the packets as they were
            return str(encoder.get("video", "copied"))
        how = [str(encoder.get("name"))]
        if encoder.get("bitrate"):
            bitrate = float(encoder["bitrate"])  # 800k as '800 kb/s', not '0.8 Mb/s'
            how.append(f"{bitrate / 1e6:g} Mb/s" if bitrate >= 1e6 else f"{bitrate / 1e3:g} kb/s")
        elif encoder.get("crf") is not None:
            how.append(f"crf {encoder['crf']:g}")
        if encoder.get("preset") is not None:
            how.append(f"preset {encoder['preset']}")
        return f"re-encoded ({', '.join(how)})"

    def video_route(self) -> str:
        """What was done to the frames before the encoder, in words (where: ``scale_route``)."""
        plan = self.plan
        if plan is None:
            return ""
        return plan.reason.removeprefix("passthrough: ").removeprefix("GPU: ")

    @property
    def fps(self) -> float:
        """Frames per second over the whole run."""
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    def _mode(self) -> str:
        return "cpu" if self.scale_route and self.scale_route["route"] == "swscale" else "gpu"

    def _reason(self) -> str:
        """The plan's reason, said for where the frames went: the plan is made before the scale route
        is chosen, and its 'GPU: ...' read so on a CPU device whose frames swscale took."""
        plan = self.plan
        assert plan is not None
        if plan.passthrough:
            return plan.reason
        where = "CPU (swscale)" if self._mode() == "cpu" else "GPU"
        return f"{where}: {self.video_route()}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready stats."""
        plan = self.plan
        paths = self.paths.as_dict()
        return {
            "command": "transcode",
            "input": self.input,
            "output": self.output,
            "frames": self.frames,
            "seconds": round(self.seconds, 4),
            "fps": round(self.fps, 3),
            "mode": None if plan is None else ("passthrough" if plan.passthrough else self._mode()),
            "scale_route": self.scale_route,
            "reason": None if plan is None else self._reason(),
            "paths": paths["frames"],
            "path_bytes": paths["bytes"],
            "path_notes": paths["notes"],
            "bytes_through_cpu": self.paths.bytes_through_cpu,
            "peak_surfaces": self.peak_surfaces,
            "peak_copier_slots": self.peak_copier_slots,
            "input_size": None if plan is None else [plan.input_size.width, plan.input_size.height],
            "output_size": None if plan is None else [plan.output_size.width, plan.output_size.height],
            "crop": None if plan is None or plan.crop is None else list(plan.crop),
            "input_pixel_format": None if plan is None else plan.input_format.ffmpeg_name,
            "output_pixel_format": None if plan is None else plan.output_format.ffmpeg_name,
            "input_colour": None if plan is None else _colour_dict(plan.input_colour),
            "output_colour": None if plan is None else _colour_dict(plan.output_colour),
            "colour_note": None if plan is None else plan.colour_note,
            "colour_tags_added": None if plan is None else colour_tags_added(plan) or None,
            "depth_reduced": None if plan is None else plan.depth_note,
            "encoder": self.encoder,
            "hwaccel": self.hwaccel,
            "device": self.device,
            "import_report": self.import_report,
            "encode_report": self.encode_report,
            "encode_routes": self.encode_routes,
            "packets_out": self.packets_out,
            "audio_packets_copied": self.audio_packets_copied,
            "decode": self.decode,
            "input_notes": self.input_notes,
            "timestamps_adjusted": {
                "video": self.timestamps.as_dict(),
                "audio": self.audio_timestamps.as_dict(),
            },
            "start_shift_seconds": round(self.start_shift_seconds, 6),
            "padded_from": None
            if plan is None or plan.padded_from is None
            else [plan.padded_from.width, plan.padded_from.height],
            "kept_streams": [
                {"index": s.index, "kind": s.kind.value, "codec": s.codec, "cover_art": s.attached_picture}
                for s in self.kept_streams
            ],
            "dropped_streams": [d.as_dict() for d in self.dropped_streams],
            "stream_choice": self.choice_dict(),
            "stream_notes": self.stream_notes,
            "stages": self.stages.as_dict(self.seconds),
            "video": self.video_action(),
            "output_bytes": self.output_bytes,
            "output_seconds": None if self.output_seconds is None else round(self.output_seconds, 6),
            "output_bitrate": None if self.output_bitrate is None else round(self.output_bitrate),
            "cut": self.cut,
            "frame_rate": None if self.frame_rate is None else self.frame_rate.as_dict(),
            "segments": self.segments,
        }


def _colour_dict(colour: ColourInfo) -> dict[str, str]:
    return {
        "matrix": colour.matrix.name,
        "primaries": colour.primaries.name,
        "transfer": colour.transfer.name,
        "range": colour.range.name,
        "chroma_location": colour.chroma_location.name,
    }


def colour_tags_added(plan: TranscodePlan) -> dict[str, str]:
    """The output's colour tags that the input did not have: what alpha2 took for them (the matrix from
    the size, the range limited, primaries and transfer BT.709), written as tags; {} when none."""
    added: dict[str, str] = {}
    source, written = plan.input_colour, plan.output_colour
    for name in ("matrix", "range", "primaries", "transfer"):
        if name in source.guessed and getattr(written, name) == getattr(source, name):
            added[name] = getattr(written, name).name
    return added


def decode_dict(decoder: DecodeSession) -> dict[str, Any]:
    """The decoder's counts of what it met (``--json``'s ``decode``)."""
    stats = decoder.stats
    return {
        "corrupt_frames_kept": stats.corrupt_frames_kept,
        "corrupt_frames_skipped": stats.corrupt_frames_skipped,
        "decode_errors": stats.decode_errors,
        "truncated": stats.truncated,
        "converted": stats.converted,
        "converted_frames": stats.converted_frames,
    }


def input_notes(first: DecodedFrame | None, plan: TranscodePlan, encoder: str) -> list[str]:
    """Alpha and interlacing of the input, and what the output makes of them."""
    from alpha2.ffmpeg_bridge.encode import INTERLACED_ENCODERS

    notes: list[str] = []
    if first is None:
        return notes
    if first.pixel_format.has_alpha and not plan.output_format.has_alpha:
        notes.append(
            f"alpha dropped: the {first.pixel_format.ffmpeg_name} input's alpha has no place in the output"
        )
    meta = first.metadata
    if meta.interlaced:
        order = "top field first" if meta.top_field_first else "bottom field first"
        if plan.passthrough and encoder in INTERLACED_ENCODERS:
            notes.append(f"interlaced input ({order}): coded interlaced, field order kept")
        else:
            # Not 'the GPU path': swscale (the CPU route) scales the whole pictures alike.
            why = (
                "the pictures are scaled and converted whole, not deinterlaced"
                if not plan.passthrough
                else f"{encoder} codes frames"
            )
            notes.append(f"interlaced input ({order}) coded progressive: {why}")
    return notes


def segments_summary(stats: TranscodeStats) -> str | None:
    """The summary's ``segments`` line: encoded in segments at once (each one's frames and seconds) or in
    one pipeline, and why; None when ``--segments`` was not given."""
    segments = stats.segments
    if segments is None:
        return None
    parts = segments.get("parts") or []
    if not parts:
        return str(segments["done"])
    each = "; ".join(
        f"{p['frames']} frame{'' if p['frames'] == 1 else 's'} in {p['seconds']:.2f} s" for p in parts
    )
    said = f"{segments['done']} ({segments['reason']}): {each}; joined in {segments['join_seconds']:.2f} s"
    if segments.get("route_differences"):
        said += f"; the segments took different paths: {segments['route_differences']}"
    return said


def _frames(count: int, what: str = "") -> str:
    """``1 corrupt frame``, ``3 corrupt frames`` (it said '1 corrupt frames')."""
    return f"{count} {what}frame{'' if count == 1 else 's'}"


def _has_alpha(pixel_format: str) -> bool:
    """Whether an FFmpeg pixel format name has an alpha channel (ya8 and gbrap too, which the test of
    'yuva' missed: ya8 lost its alpha unsaid)."""
    name = pixel_format.lower()
    alpha = ("yuva", "ya", "gbrap", "ayuv", "rgba", "bgra", "argb", "abgr", "vuya")
    return name.startswith(alpha) or name == "pal8"


def summary_notes(stats: TranscodeStats, *, streams_line: bool = False, rate_line: bool = False) -> list[str]:
    """What FFmpeg's decoding changed or met, for the summary line (nothing of it is silent).

    The streams chosen (``--audio-track`` ...) are one note, ``streams: audio 1 jpn kept; ...``
    (:func:`choice_summary`), not a note per stream dropped; ``streams_line``: the summary says them on
    a line of its own (``alpha2 transcode``'s), left out here. A frame rate changed (``--fps``) is a
    note, ``frame rate 60 -> 30 fps: 30 dropped, 0 repeated``, unless ``rate_line`` (the summary's own
    ``rate`` line; a batch's files said nothing of it)."""
    notes = list(stats.input_notes)
    past = None if stats.cut is None else stats.cut.get("past_to")
    if past:
        count = past["frames"]
        frames = "1 frame" if count == 1 else f"{count} frames"
        end = stats.cut["to_seconds"] if stats.cut else None
        at = f" ({end:.3f} s)" if end is not None else ""
        after = ", after a pause (frames shown between are not copied)" if past["gap"] else ""
        notes.append(
            f"{frames} at or past the part's end{at} copied, the last at {past['last_seconds']:.3f} s"
            f"{after}: {past['reason']}"
        )
    if stats.frame_rate is not None and not rate_line:
        notes.append(f"frame rate {stats.frame_rate.summary()}")
    if stats.plan is not None and stats.plan.crop is not None:
        size, (_, _, width, height) = stats.plan.input_size, stats.plan.crop
        notes.append(
            f"cropped {size.width}x{size.height} to {width}x{height}: 4:2:0 needs even sides "
            "(the last column / row cut, nothing resampled)"
        )
    if stats.plan is not None and stats.plan.padded_from is not None:
        size, out = stats.plan.padded_from, stats.plan.output_size
        notes.append(
            f"padded {size.width}x{size.height} to {out.width}x{out.height}: no encoder takes a side of "
            "one pixel (the single column / row repeated)"
        )
    if (
        stats.plan is not None
        and stats.plan.depth_note is not None
        and stats.plan.depth_note not in stats.plan.reason
    ):
        notes.append(stats.plan.depth_note)  # (the video line says it where the plan's reason does)
    if stats.plan is not None and stats.plan.colour_note is not None:
        notes.append(stats.plan.colour_note)
    added = {} if stats.plan is None else colour_tags_added(stats.plan)
    if added:
        said = ", ".join(
            f"{name} {value.lower() if name == 'range' else value}"
            + (" (guessed from the size)" if name == "matrix" else "")
            for name, value in added.items()
        )
        if str(stats.encoder.get("name")) in PALETTE_ENCODERS:  # a GIF holds no colour tags
            notes.append(f"colour tags the input lacks, taken for its conversion to RGB as: {said}")
        else:
            notes.append(f"colour tags the input lacks written as alpha2 took them: {said}")
    if stats.start_shift_seconds:
        notes.append(
            f"timestamps shifted by {-stats.start_shift_seconds:+.3f} s: the input starts at "
            f"{stats.start_shift_seconds:.3f} s, the output at 0"
        )
    if stats.timestamps.total:
        notes.append(f"video timestamps adjusted {stats.timestamps.summary()}")
    if stats.audio_timestamps.total:
        notes.append(f"audio timestamps adjusted {stats.audio_timestamps.summary()}")
    decode = stats.decode
    if decode.get("corrupt_frames_kept"):
        notes.append(f"{_frames(decode['corrupt_frames_kept'], 'corrupt ')} kept (concealed by the decoder)")
    if decode.get("corrupt_frames_skipped"):
        notes.append(f"{_frames(decode['corrupt_frames_skipped'], 'corrupt ')} skipped")
    # The decoder counts an input ending early among its errors too; that is said on its own below.
    failed = int(decode.get("decode_errors") or 0) - (1 if decode.get("truncated") else 0)
    if failed > 0:
        said = (
            "1 packet failed to decode and was"
            if failed == 1
            else f"{failed} packets failed to decode and were"
        )
        notes.append(f"{said} skipped")
    if decode.get("converted"):
        source, target = decode["converted"].split(" -> ")
        lost = "; its alpha dropped" if _has_alpha(source) and not _has_alpha(target) else ""
        notes.append(
            f"decoded as {source}, a layout alpha2 does not handle: converted to {target} on the CPU"
            f" ({_frames(decode.get('converted_frames', 0))}){lost}"
        )
    if decode.get("truncated"):
        notes.append("the input ends before the duration its container announces")
    kept = _kept_summary(stats.kept_streams)
    if kept:
        beside = "kept" if stats.encoder.get("audio_only") else "kept beside the video"
        notes.append(f"{beside}: {kept}")
    notes.extend(stats.stream_notes)
    choice = stats.stream_choice
    chosen = choice_summary(stats)
    if chosen is not None and not streams_line:
        notes.append(f"streams: {chosen}")
    for dropped in stats.dropped_streams:
        if chosen is not None and choice is not None and choice.left_out(dropped.index) == dropped.reason:
            continue  # said with the choice, with the language
        what = f"{dropped.kind.value} {dropped.codec}".strip()
        notes.append(f"dropped stream {dropped.index} ({what}): {dropped.reason}")
    return notes


def choice_summary(stats: TranscodeStats) -> str | None:
    """The summary's ``streams`` line where streams were chosen: ``audio 1 jpn kept; audio 0 eng dropped
    (not chosen by --audio-track jpn); subtitle 0 eng dropped (--no-subtitles)``, the kinds asked about
    only; None where nothing was asked."""
    choice = stats.choice_dict()
    if choice is None or stats.stream_choice is None:
        return None
    kept: list[str] = []
    dropped: dict[str, list[str]] = {}
    asked = stats.stream_choice.asked
    for kind, said in choice.items():
        if kind == "matched_none" or not asked.get(StreamKind(kind)):
            continue
        kept += [f"{kind} {t['number']} {t['language'] or 'und'}" for t in said["kept"]]
        for t in said["dropped"]:
            dropped.setdefault(t["reason"], []).append(f"{kind} {t['number']} {t['language'] or 'und'}")
    parts = []
    if kept:
        parts.append(", ".join(kept) + " kept")
    parts += [f"{', '.join(names)} dropped ({reason})" for reason, names in dropped.items()]
    parts += [f"{word} matched no stream" for word in choice["matched_none"]]
    return "; ".join(parts) or None


def _kept_summary(kept: list[InputStream]) -> str:
    """``3 audio, 1 subtitle, cover art`` for more than a single audio stream (that one the encoder's
    ``audio`` field says); "" otherwise."""
    if all(s.kind is StreamKind.AUDIO for s in kept) and len(kept) <= 1:
        return ""
    counts: dict[str, int] = {}
    for stream in kept:
        what = "cover art" if stream.attached_picture else stream.kind.value
        counts[what] = counts.get(what, 0) + 1
    return ", ".join(what if what == "cover art" else f"{n} {what}" for what, n in counts.items())
