"""What ``alpha2 transcode`` says about its output against what the output is: each test makes an input
with PyAV, transcodes it, reads the output back with PyAV and checks that what changed is said (the
summary's notes, ``--json``) and what is said is so. Found by an audit against ffprobe."""

from __future__ import annotations

import fractions
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api.transcode_plan import ColourChoice
from alpha2.api.transcode_report import summary_notes
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps.transcode_cli import summary_lines
from alpha2.gpu.colour import ColourMatrix
from tests.hdr_clips import PEAK_203, PQ, make_hdr_clip
from tests.media import make_audio_only, make_clip

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


def test_chapters_cut_with_a_copy_s_part(tmp_path: Path) -> None:
    """``--codec copy --to`` cuts the chapters at the part's end too: they ran on to the input's end
    (the output's duration with them, past the copied streams')."""
    src = _make(tmp_path / "in.mkv", chapters=True)
    for ext in ("mkv", "mp4"):
        out = tmp_path / f"cut.{ext}"
        stats = transcode(src, str(out), TranscodeOptions(codec="copy", to_seconds=1.5))
        got = _chapters(out)
        assert [c[0] for c in got] == ["One", "Two"], ext
        assert abs(got[1][1] - 1.0) < 0.05 and abs(got[1][2] - 1.5) < 0.05, (ext, got)
        assert any("2 chapters: 2 kept, 1 cut at the part's edges" in n for n in summary_notes(stats))


def test_a_part_whose_video_ends_before_to_is_said_to_end_at_to(tmp_path: Path) -> None:
    """A 0.4 s video with 2 s of audio, ``--to 1``: the audio is cut at 1 s (the output lasts 1 s), but
    the summary said the part went 'to the end of the input'."""
    video = make_clip(tmp_path / "v.mkv", frames=12).path
    audio = make_audio_only(tmp_path / "a.mkv", seconds=2.0)
    src = str(tmp_path / "in.mkv")
    with av.open(video) as v, av.open(audio) as a, av.open(src, "w") as out:
        made = {id(s): out.add_stream_from_template(s) for s in (v.streams.video[0], a.streams.audio[0])}
        for inp in (v, a):
            for packet in inp.demux():
                if packet.dts is not None:
                    packet.stream = made[id(packet.stream)]
                    out.mux(packet)
    stats = transcode(src, str(tmp_path / "out.mkv"), TranscodeOptions(to_seconds=1.0))
    assert stats.cut is not None and stats.cut["to_seconds"] == 1.0, stats.cut
    assert stats.output_seconds is not None and abs(stats.output_seconds - 1.0) < 0.05
    assert any("part    from 0.000 s to 1.000 s of the input" in line for line in summary_lines(stats, 80))
    whole = transcode(src, str(tmp_path / "whole.mkv"), TranscodeOptions(to_seconds=30.0))
    assert whole.cut is not None and whole.cut["to_seconds"] is None  # past the input's end: 'to the end'


def test_chapters_a_container_cannot_hold_are_said(tmp_path: Path) -> None:
    src = _make(tmp_path / "in.mkv", chapters=True)
    out = tmp_path / "out.avi"
    stats = transcode(src, str(out), TranscodeOptions())
    assert _chapters(out) == []
    assert "2 chapters dropped: the avi container holds no chapters" in summary_notes(stats)


@pytest.mark.vulkan
@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({}, "BT.709 limited (tone mapped for the 8-bit output)"),
        ({"sdr": True}, "BT.709 limited (--sdr)"),
        (
            {"colour": ColourChoice.BT2020},
            "BT.709 limited (tone mapped for the 8-bit output; --colour bt2020 not taken: tone mapping "
            "writes SDR BT.709)",
        ),
        ({"colour": ColourChoice.BT709}, "BT.709 limited (--colour bt709)"),
    ],
    ids=["auto", "sdr", "bt2020", "bt709"],
)
def test_tone_mapped_output_names_what_asked_for_it(
    tmp_path: Path, options: dict[str, Any], said: str
) -> None:
    """An HDR input into 8-bit H.264 is tone mapped to BT.709; the summary said ``(--colour bt709)``
    whether or not it was given, and an asked ``--colour bt2020`` was overridden without a word."""
    src = tmp_path / "pq.mkv"
    make_hdr_clip(src, PQ, PEAK_203)
    out = tmp_path / "sdr.mp4"
    stats = transcode(str(src), str(out), TranscodeOptions(**options))
    assert stats.plan is not None
    assert stats.plan.reason.endswith(said)
    with av.open(str(out)) as container:
        cc = container.streams.video[0].codec_context
        assert (int(cc.colorspace), int(cc.color_trc)) == (int(ColourMatrix.BT709), 1)


def test_colour_tags_added_to_an_untagged_input_are_said(tmp_path: Path) -> None:
    """An untagged input came out tagged (BT.601 matrix from the size, limited range, BT.709 primaries
    and transfer) while the summary said 'same ... colour'; now the tags added are named."""
    src = _make(tmp_path / "untagged.mp4")
    out = tmp_path / "out.mp4"
    stats = transcode(src, str(out), TranscodeOptions())
    added = stats.as_dict()["colour_tags_added"]
    assert added == {"matrix": "BT470BG", "range": "LIMITED", "primaries": "BT709", "transfer": "BT709"}
    with av.open(str(out)) as container:
        cc = container.streams.video[0].codec_context
        assert (int(cc.colorspace), int(cc.color_range), int(cc.color_primaries), int(cc.color_trc)) == (
            5,  # BT470BG
            1,  # limited (MPEG)
            1,  # BT.709
            1,
        )
    assert (
        "colour tags the input lacks written as alpha2 took them: matrix BT470BG (guessed from the size), "
        "range limited, primaries BT709, transfer BT709"
    ) in summary_notes(stats)

    tagged = _make(
        tmp_path / "tagged.mp4",
        colour={"colorspace": 6, "color_range": 1, "color_primaries": 6, "color_trc": 6},
    )
    stats = transcode(tagged, str(tmp_path / "tagged_out.mp4"), TranscodeOptions())
    assert stats.as_dict()["colour_tags_added"] is None
    assert not [n for n in summary_notes(stats) if n.startswith("colour tags")]


SRT = "1\n00:00:00,200 --> 00:00:01,000\nHello\n\n2\n00:00:01,200 --> 00:00:01,800\nWorld\n"


def _with_subtitles(video: str, srt: Path, out: Path, languages: tuple[str, ...]) -> str:
    """``video``'s stream and one SubRip stream a language (the same cues), none of them the default."""
    with av.open(video) as source, av.open(str(srt)) as subs, av.open(str(out), "w") as mkv:
        vin, sin = source.streams.video[0], subs.streams.subtitles[0]
        vout = mkv.add_stream_from_template(vin)
        outs = []
        for language in languages:
            sout = mkv.add_stream_from_template(sin)
            sout.metadata["language"] = language
            sout.disposition = av.stream.Disposition(0)
            outs.append(sout)
        for packet in source.demux(vin):
            if packet.dts is not None:
                packet.stream = vout
                mkv.mux(packet)
        cues = [p for p in subs.demux(sin) if p.dts is not None]
        for sout in outs:
            for packet in cues:
                packet.stream = sout
                mkv.mux(packet)
    return str(out)


def _subtitle_defaults(path: str) -> list[bool]:
    with av.open(path) as container:
        return [bool(s.disposition & av.stream.Disposition.default) for s in container.streams.subtitles]


def test_a_subtitle_made_the_default_is_said(tmp_path: Path) -> None:
    """Of two subtitle streams, neither the default, the output made the first the default (as ffmpeg
    does), so players show it unasked, and nothing said so."""
    srt = tmp_path / "cues.srt"
    srt.write_text(SRT, encoding="utf-8")
    src = _with_subtitles(_make(tmp_path / "film.mkv"), srt, tmp_path / "subbed.mkv", ("eng", "ger"))
    assert _subtitle_defaults(src) == [False, False]
    out = tmp_path / "out.mkv"
    stats = transcode(src, str(out), TranscodeOptions())
    assert _subtitle_defaults(str(out)) == [True, False]
    assert (
        "subtitle stream 1 made the default, so shown unasked: none of the 2 subtitle streams was "
        "(as ffmpeg does)"
    ) in summary_notes(stats)


@pytest.mark.vulkan
@pytest.mark.parametrize(
    ("options", "first"),
    [
        ({"gpu": True}, "--gpu asks for GPU processing"),
        ({"colour": ColourChoice.BT709}, "convert colour to bt709"),
    ],
    ids=["gpu", "colour"],
)
def test_a_turned_picture_is_said_whatever_sends_it_to_the_gpu(
    tmp_path: Path, options: dict[str, Any], first: str
) -> None:
    """A rotated input sent to the GPU route by --gpu or --colour came out turned (transposed, its
    display matrix gone) while the summary said nothing of a turn; it was said only beside a scale."""
    src = make_clip(tmp_path / "turned.mp4", width=64, height=48, frames=4, rotation_ccw=90).path
    assert _first_frame_rotation(src) == 90
    out = tmp_path / "out.mkv"
    stats = transcode(src, str(out), TranscodeOptions(**options))
    assert stats.plan is not None and not stats.plan.passthrough
    assert f"{first}; turn the picture 270 degrees clockwise (its display matrix)" in stats.plan.reason
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert (stream.codec_context.width, stream.codec_context.height) == (48, 64)
    assert _first_frame_rotation(str(out)) == 0


def _first_frame_rotation(path: str) -> int:
    """The first frame's display-matrix angle (counter-clockwise degrees, FFmpeg's; 0: none)."""
    with av.open(path) as container:
        frame = next(container.decode(video=0))
        return int(frame.rotation or 0)


def test_an_early_end_is_not_said_to_be_a_failed_packet(tmp_path: Path) -> None:
    """The decoder counts a video ending well before its container's duration among its errors; the
    summary then said '1 packet failed to decode and was skipped' of a file whose every packet decodes
    (here an MKV whose last subtitle cue, at 5 s, makes the container 5 s long beside 1 s of video)."""
    srt = tmp_path / "late.srt"
    srt.write_text("1\n00:00:05,000 --> 00:00:05,500\nLate\n", encoding="utf-8")
    video = _make(tmp_path / "film.mkv", seconds=1.0)
    src = _with_subtitles(video, srt, tmp_path / "late.mkv", ("eng",))
    with av.open(src) as container:
        assert len(list(container.decode(video=0))) == 25  # nothing fails to decode
    stats = transcode(src, str(tmp_path / "out.mkv"), TranscodeOptions())
    assert stats.frames == 25
    assert not [n for n in summary_notes(stats) if "failed to decode" in n]


def test_probe_says_the_chapters(tmp_path: Path) -> None:
    # ffprobe lists a file's chapters; alpha2 probe said nothing of them (text or --json).
    from alpha2.api.media import describe
    from alpha2.apps.probe_files import describe_lines

    src = _make(tmp_path / "chaptered.mkv", chapters=True)
    description = describe(src, decode=False)
    assert [(c.title, c.start_seconds, c.end_seconds) for c in description.file.chapters] == [
        ("One", 0.0, 1.0),
        ("Two", 1.0, 2.0),
    ]
    assert description.as_dict()["chapters"][1] == {"start_seconds": 1.0, "end_seconds": 2.0, "title": "Two"}
    assert "  chapters  2: 0:00 One, 0:01 Two" in describe_lines(description, 80)
    # Chapters between whole seconds are said to the millisecond: starts at 0 and 0.8 s were both '0:00'.
    from dataclasses import replace

    first, second = description.file.chapters
    close = (first, replace(second, start_seconds=0.8), replace(second, start_seconds=61.9996))
    closer = replace(description, file=replace(description.file, chapters=close))
    assert "  chapters  3: 0:00.000 One, 0:00.800 Two, 1:02.000 Two" in describe_lines(closer, 80)
    plain = describe(_make(tmp_path / "plain.mkv"), decode=False)
    assert plain.file.chapters == ()
    assert not any(line.startswith("  chapters") for line in describe_lines(plain, 80))


def test_the_depth_reduction_is_said_once(tmp_path: Path) -> None:
    """Found by an outside pass: 'depth reduced from 10 to 8 bits: ...' was in the video line and again
    as a note."""
    src = make_clip(tmp_path / "ten.mkv", "hevc", 64, 48, 3, pix_fmt="yuv420p10le").path
    stats = transcode(src, str(tmp_path / "out.mp4"), TranscodeOptions())
    assert stats.plan is not None and stats.plan.depth_note is not None
    said = [stats.plan.reason, *summary_notes(stats)]
    assert sum(stats.plan.depth_note in line for line in said) == 1, said


@pytest.mark.parametrize("name", ["TranscodeStats", "TranscodeOptions", "TranscodePlan"])
def test_every_field_of_the_report_and_options_is_documented(name: str) -> None:
    """The reference shows a field with the docstring under it: frames, seconds, plan, paths, encoder,
    hwaccel, device and ten more of TranscodeStats had none (found by an outside pass)."""
    import ast
    import inspect
    import textwrap

    from alpha2.api import transcode_plan, transcode_report

    cls = getattr(transcode_report if name == "TranscodeStats" else transcode_plan, name)
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body  # type: ignore[attr-defined]
    bare = [
        node.target.id
        for node, after in zip(body, [*body[1:], None], strict=True)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        if not (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant))
    ]
    assert bare == []


@pytest.mark.parametrize("part", [{"to_seconds": 100.0}, {"duration_seconds": 50.0}])
def test_an_end_past_the_input_cuts_nothing(tmp_path: Path, part: dict[str, float]) -> None:
    """``--to 100`` of a 1 s file re-encoded its audio, said 'cut with the video to the sample', where
    nothing was cut (``--frames`` past its frames copied it): found by an outside pass."""
    clip = make_clip(tmp_path / "in.mp4", frames=30, audio=True).path
    stats = transcode(clip, tmp_path / "out.mp4", TranscodeOptions(**part))  # type: ignore[arg-type]
    assert stats.frames == 30 and stats.encoder["audio"] == "copied"
    assert stats.cut is not None and stats.cut["streams_trimmed"] is False and stats.cut["to_seconds"] is None
    # Cut into segments, the report said to_seconds 100 of the 1 s file (found by an outside pass).
    split = transcode(clip, tmp_path / "seg.mp4", TranscodeOptions(**part, segments=2, preset="ultrafast"))  # type: ignore[arg-type]
    assert split.segments is not None and split.cut is not None and split.cut["to_seconds"] is None
    shorter = transcode(clip, tmp_path / "cut.mp4", TranscodeOptions(to_seconds=0.5))
    assert shorter.cut is not None and shorter.cut["streams_trimmed"] is True
    assert "cut with the video" in str(shorter.encoder["audio"])


def test_a_cut_into_a_container_that_cannot_hold_the_audio_says_both(tmp_path: Path) -> None:
    """AAC cut into .webm is encoded again for two reasons: the cut, and WebM holding no AAC. It said only
    the cut (found by an outside pass); into .mp4 the cut alone is the reason."""
    clip = make_clip(tmp_path / "in.mp4", frames=30, audio=True).path
    webm = transcode(clip, tmp_path / "cut.webm", TranscodeOptions(to_seconds=0.5))
    said = str(webm.encoder["audio"])
    assert said.startswith("re-encoded aac to libopus: the webm container cannot hold aac; cut with"), said
    mp4 = str(transcode(clip, tmp_path / "cut.mp4", TranscodeOptions(to_seconds=0.5)).encoder["audio"])
    assert "cannot hold" not in mp4 and "cut with the video" in mp4, mp4
