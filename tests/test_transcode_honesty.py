"""What ``alpha2 transcode`` says about its output against what the output is: each test makes an input
with PyAV, transcodes it, reads the output back with PyAV and checks that what changed is said (the
summary's notes, ``--json``) and what is said is so. Found by an audit against ffprobe."""

from __future__ import annotations

import fractions
from pathlib import Path

import av
import numpy as np

from alpha2.api.transcode_report import summary_notes
from alpha2.api.transcoder import TranscodeOptions, transcode

CHAPTERS = (("One", 0, 1000), ("Two", 1000, 2000))
"""Titles and start / end (milliseconds) of the chapters :func:`_make` writes."""


def _make(
    path: Path,
    *,
    seconds: float = 2.0,
    size: tuple[int, int] = (64, 48),
    chapters: bool = False,
    colour: dict[str, int] | None = None,
) -> str:
    """An H.264 clip (25 fps, ``size``), with ``CHAPTERS`` where asked and the stream's colour tags set
    from ``colour`` (codec-context attribute -> value; none: untagged)."""
    width, height = size
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=25)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.codec_context.options = {"preset": "ultrafast"}
        for name, value in (colour or {}).items():
            setattr(video.codec_context, name, value)
        if chapters:
            out.set_chapters(
                [
                    {
                        "id": i + 1,
                        "start": start,
                        "end": end,
                        "time_base": fractions.Fraction(1, 1000),
                        "metadata": {"title": title},
                    }
                    for i, (title, start, end) in enumerate(CHAPTERS)
                ]
            )
        for i in range(round(seconds * 25)):
            picture = np.full((height, width, 3), i * 5 % 255, np.uint8)
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts, frame.time_base = i, fractions.Fraction(1, 25)
            out.mux(video.encode(frame))
        out.mux(video.encode(None))
    return str(path)


def _chapters(path: Path) -> list[tuple[str, float, float]]:
    with av.open(str(path)) as container:
        return [
            (
                c["metadata"].get("title", ""),
                float(c["start"] * c["time_base"]),
                float(c["end"] * c["time_base"]),
            )
            for c in container.chapters()
        ]


def test_chapters_are_kept(tmp_path: Path) -> None:
    """An input's chapters were silently lost (ffmpeg copies them); now kept as they are."""
    src = _make(tmp_path / "in.mkv", chapters=True)
    for ext in ("mkv", "mp4"):
        out = tmp_path / f"out.{ext}"
        stats = transcode(src, str(out), TranscodeOptions())
        got = _chapters(out)
        assert [c[0] for c in got] == ["One", "Two"], ext
        assert [round(c[1], 3) for c in got] == [0.0, 1.0], ext
        assert not [n for n in summary_notes(stats) if "chapter" in n], ext  # a plain copy: nothing to say


def test_chapters_cut_with_the_part(tmp_path: Path) -> None:
    """``--from`` moves the chapters with the output's start; one wholly before it is left out, and
    that is said."""
    src = _make(tmp_path / "in.mkv", chapters=True)
    out = tmp_path / "cut.mkv"
    stats = transcode(src, str(out), TranscodeOptions(from_seconds=1.2))
    got = _chapters(out)
    assert [c[0] for c in got] == ["Two"]
    assert got[0][1] == 0.0 and abs(got[0][2] - 0.8) < 0.05
    assert any("2 chapters: 1 kept, 1 outside the part left out" in n for n in summary_notes(stats))


def test_chapters_a_container_cannot_hold_are_said(tmp_path: Path) -> None:
    src = _make(tmp_path / "in.mkv", chapters=True)
    out = tmp_path / "out.avi"
    stats = transcode(src, str(out), TranscodeOptions())
    assert _chapters(out) == []
    assert "2 chapters dropped: the avi container holds no chapters" in summary_notes(stats)
