"""What ``alpha2 transcode`` says about the input beyond the frames: what the decoder met (concealed
frames, failed packets, truncation), timestamps made increasing, depth reduced, alpha and interlacing.
Nothing FFmpeg changes or meets goes unsaid: these are the summary line's notes and ``--json``'s fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from alpha2.apps.transcode_plan import TranscodePlan
from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.gpu.frames import DecodedFrame

if TYPE_CHECKING:
    from alpha2.apps.transcoder import TranscodeStats

__all__ = ["decode_dict", "input_notes", "summary_notes"]


def decode_dict(decoder: DecodeSession) -> dict[str, Any]:
    """The decoder's counts of what it met (``--json``'s ``decode``)."""
    stats = decoder.stats
    return {
        "corrupt_frames_kept": stats.corrupt_frames_kept,
        "corrupt_frames_skipped": stats.corrupt_frames_skipped,
        "decode_errors": stats.decode_errors,
        "truncated": stats.truncated,
    }


def input_notes(first: DecodedFrame | None, plan: TranscodePlan, encoder: str) -> list[str]:
    """Alpha and interlacing of the input, and what the output makes of them."""
    from alpha2.ffmpeg_bridge.encode import INTERLACED_ENCODERS

    notes: list[str] = []
    if first is None:
        return notes
    if first.pixel_format.has_alpha:
        notes.append(
            f"alpha dropped: the {first.pixel_format.ffmpeg_name} input's alpha has no place in the output"
        )
    meta = first.metadata
    if meta.interlaced:
        order = "top field first" if meta.top_field_first else "bottom field first"
        if plan.passthrough and encoder in INTERLACED_ENCODERS:
            notes.append(f"interlaced input ({order}): coded interlaced, field order kept")
        else:
            why = (
                "the GPU path makes progressive frames" if not plan.passthrough else f"{encoder} codes frames"
            )
            notes.append(f"interlaced input ({order}) coded progressive: {why}")
    return notes


def summary_notes(stats: TranscodeStats) -> list[str]:
    """What FFmpeg's decoding changed or met, for the summary line (nothing of it is silent)."""
    notes = list(stats.input_notes)
    if stats.plan is not None and stats.plan.depth_note is not None:
        notes.append(stats.plan.depth_note)
    if stats.plan is not None and stats.plan.colour_note is not None:
        notes.append(stats.plan.colour_note)
    if stats.timestamps.total:
        notes.append(f"video timestamps adjusted {stats.timestamps.summary()}")
    if stats.audio_timestamps.total:
        notes.append(f"audio timestamps adjusted {stats.audio_timestamps.summary()}")
    decode = stats.decode
    if decode.get("corrupt_frames_kept"):
        notes.append(f"{decode['corrupt_frames_kept']} corrupt frames kept (concealed by the decoder)")
    if decode.get("corrupt_frames_skipped"):
        notes.append(f"{decode['corrupt_frames_skipped']} corrupt frames skipped")
    if decode.get("decode_errors"):
        notes.append(f"{decode['decode_errors']} packets failed to decode and were skipped")
    if decode.get("truncated"):
        notes.append("the input ends before the duration its container announces")
    return notes
