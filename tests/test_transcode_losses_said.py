"""What a transcode loses is said: a VP9's alpha stored beside its pictures (FFmpeg's decoder leaves it
out), a gray-with-alpha picture's alpha, and counts in the right number (found by an outside pass:
'same size, pixel format and colour' over an opaque output, '1 corrupt frames')."""

from __future__ import annotations

from alpha2.api.transcode_plan import TranscodeOptions, plan_streams
from alpha2.api.transcode_report import _frames, _has_alpha
from alpha2.ffmpeg_bridge.side_streams import InputStream, StreamKind


def test_a_vp9_alpha_stored_beside_is_said_dropped() -> None:
    video = InputStream(index=0, kind=StreamKind.VIDEO, codec="vp9", alpha_beside=True)
    plan = plan_streams((video,), 0, TranscodeOptions(), "webm")
    assert any("alpha" in note and "opaque" in note for note in plan.notes), plan.notes
    plain = InputStream(index=0, kind=StreamKind.VIDEO, codec="vp9")
    assert not any("alpha" in note for note in plan_streams((plain,), 0, TranscodeOptions(), "webm").notes)


def test_alpha_formats_and_counts() -> None:
    assert _has_alpha("ya8") and _has_alpha("yuva444p12le") and _has_alpha("gbrap10le") and _has_alpha("rgba")
    assert not _has_alpha("gray") and not _has_alpha("yuv420p") and not _has_alpha("gbrp")
    assert _frames(1, "corrupt ") == "1 corrupt frame" and _frames(3) == "3 frames"
