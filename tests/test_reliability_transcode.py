"""``alpha2 transcode`` reliability, round 3: nothing in the output changes without a word, no internal
errors. Timestamps start at zero and discontinuities are re-timed; bottom-field-first stays so; every
stream the container holds is kept and every one dropped is said; a cut MP4 keeps its decodable frames;
1-pixel pictures are padded; cover art and audio-only inputs are told apart; undecodable audio is not
copied; image sequences with a gap; a bound on decoded pictures; pictures wider than the GPU's textures.
Media made here with PyAV (tests/media.py for the common clips)."""

from __future__ import annotations

import fractions
import json
import os
import sys
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api import transcoder
from alpha2.api.scale_route import ScaleRoute, ScaleRouteKind
from alpha2.api.transcode_plan import (
    DEFAULT_MAX_PIXELS,
    TranscodeOptions,
    plan_streams,
    plan_transcode,
)
from alpha2.apps import cli
from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.ffmpeg_bridge.media import within_pixel_limit
from alpha2.ffmpeg_bridge.side_streams import InputStream, StreamKind
from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.errors import OutOfMemoryError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Size

sys.path.insert(0, os.path.dirname(__file__))
from media import (
    _write_tone,
    copy_video_and_audio,
    encoder_available,
    make_audio_only,
    make_clip,
    make_interlaced_mpeg2,
    mux_with_pts,
    pattern,
    remux,
    truncate,
)

Capsys = pytest.CaptureFixture[str]


def _transcode(capsys: Capsys, src: str, out: str, *extra: str) -> tuple[int, Any, str]:
    code = cli.main(["transcode", src, out, "--json", "-y", *extra])
    captured = capsys.readouterr()
    data = json.loads(captured.out) if code == 0 else None
    return code, data, captured.err


def _summary(capsys: Capsys, src: str, out: str, *extra: str) -> str:
    code = cli.main(["transcode", src, out, "-y", *extra])
    err = capsys.readouterr().err
    assert code == 0, err
    return err


def _first_times(path: str) -> dict[str, float]:
    """Each stream's first packet time (pts) in seconds, by kind."""
    found: dict[str, float] = {}
    for kind in ("video", "audio"):
        with av.open(path) as container:
            streams = [s for s in container.streams if s.type == kind]
            if not streams:
                continue
            times = [float(p.pts * p.time_base) for p in container.demux(streams[0]) if p.pts is not None]
            found[kind] = min(times)
    return found


def _y4m(path: Path, width: int, height: int, frames: int = 3) -> str:
    """A raw 4:2:0 YUV4MPEG2 clip of flat frames (luma 16, 26, 36 ...)."""
    cw, ch = (width + 1) // 2, (height + 1) // 2
    with open(path, "wb") as f:
        f.write(f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C420jpeg\n".encode())
        for i in range(frames):
            f.write(b"FRAME\n" + bytes([16 + 10 * i]) * (width * height) + bytes([128]) * (2 * cw * ch))
    return str(path)


# ---------------------------------------------------------------------------------------------------
# 1. timestamps start at zero


def test_ts_starting_at_ten_hours_starts_at_zero(tmp_path: Path, capsys: Capsys) -> None:
    src = mux_with_pts(tmp_path / "ten.ts", [10 * 3600 * 30 + i for i in range(30)])
    out = str(tmp_path / "out.mp4")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert data["frames"] == 30
    assert data["start_shift_seconds"] == pytest.approx(36000.0, abs=0.01)
    assert _first_times(out)["video"] == pytest.approx(0.0, abs=1e-3)
    with av.open(out) as container:
        assert container.duration / 1e6 < 2.0  # not 36,001 s
    assert "timestamps shifted by -36000.000 s" in _summary(capsys, src, str(tmp_path / "o2.mp4"))


def test_ordinary_ts_has_no_empty_lead_in(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "c.mkv", frames=30, audio=True)
    src = remux(clip.path, str(tmp_path / "c.ts"), {"max_delay": "700000"})  # FFmpeg's CLI: 1.4 s
    assert min(_first_times(src).values()) == pytest.approx(1.4, abs=0.02)
    out = str(tmp_path / "out.mp4")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert data["start_shift_seconds"] == pytest.approx(1.4, abs=0.02)
    firsts = _first_times(out)
    assert min(firsts.values()) == pytest.approx(0.0, abs=1e-3)
    assert firsts["video"] < 0.05  # the streams keep their offset from each other


# ---------------------------------------------------------------------------------------------------
# 2. discontinuities


def _with_jump(src: str, dst: str, at_seconds: float, jump_seconds: float) -> str:
    """Copy video and audio packets, those from ``at_seconds`` on moved ``jump_seconds`` later."""
    with av.open(src) as inp, av.open(dst, "w") as out:
        streams = {s.index: out.add_stream_from_template(s) for s in inp.streams}
        for packet in inp.demux():
            if packet.dts is None:
                continue
            if packet.pts is not None and packet.pts * packet.time_base >= at_seconds:
                offset = round(fractions.Fraction(jump_seconds) / packet.time_base)
                packet.pts += offset
                packet.dts += offset
            packet.stream = streams[packet.stream.index]
            out.mux(packet)
    return dst


@pytest.mark.parametrize("ext,jump", [(".mkv", 30 * 86400.0), (".ts", 60.0)], ids=["mkv-30-days", "ts-60-s"])
def test_a_timestamp_jump_is_retimed(tmp_path: Path, capsys: Capsys, ext: str, jump: float) -> None:
    """A huge Matroska cluster time made MP4's muxer fail (blamed on libx264: "Not yet implemented in
    FFmpeg"); MPEG-TS jumps past 10 s are discontinuities as FFmpeg's -dts_delta_threshold has it."""
    clip = make_clip(tmp_path / "c.mkv", frames=30, audio=True)
    src = _with_jump(clip.path, str(tmp_path / f"jump{ext}"), 0.5, jump)
    out = str(tmp_path / "out.mp4")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert data["frames"] == 30
    assert data["timestamps_adjusted"]["video"] == {"jump": 1}
    assert data["timestamps_adjusted"]["audio"] == {"jump": 1}
    with av.open(out) as container:
        assert container.duration / 1e6 < 2.0
    assert "1 jump" in _summary(capsys, src, str(tmp_path / "o2.mp4"))


def test_slow_vfr_gaps_are_not_discontinuities(tmp_path: Path, capsys: Capsys) -> None:
    """A 5 s still in a Matroska clip is a pause, not a jump (the limit there is an hour)."""
    src = mux_with_pts(tmp_path / "pause.mkv", [0, 1, 2, 3, 153, 154, 155])  # 1/30 s units
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mkv"))
    assert code == 0, err
    assert data["timestamps_adjusted"]["video"] == {}


# ---------------------------------------------------------------------------------------------------
# 3. field order


def _field_order(path: str) -> tuple[int, bool]:
    with av.open(path) as container:
        stream = container.streams.video[0]
        frame = next(container.decode(stream))
        return stream.codec_context.field_order, bool(frame.interlaced_frame)


def _tff_clip(path: Path) -> str:
    """libx264 interlaced, top field first (its default)."""
    with av.open(str(path), "w") as out:
        stream: Any = out.add_stream("libx264", rate=25, options={"preset": "ultrafast"})
        stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
        flags = av.codec.context.Flags
        stream.codec_context.flags |= flags.interlaced_dct | flags.interlaced_me
        for i in range(6):
            frame = av.VideoFrame.from_ndarray(pattern(i, 128, 96), format="rgb24").reformat(format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


@pytest.mark.parametrize("ext", [".mkv", ".mp4"])
def test_bottom_field_first_stays_bottom_field_first(tmp_path: Path, capsys: Capsys, ext: str) -> None:
    src = make_interlaced_mpeg2(tmp_path / "bff.mkv", frames=8)
    assert _field_order(src) == (3, True)  # AV_FIELD_BB
    out = str(tmp_path / f"out{ext}")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert any("bottom field first" in n and "field order kept" in n for n in data["input_notes"])
    assert _field_order(out) == (3, True)


def test_top_field_first_stays_top_field_first(tmp_path: Path, capsys: Capsys) -> None:
    src = _tff_clip(tmp_path / "tff.mkv")
    assert _field_order(src) == (2, True)  # AV_FIELD_TT
    out = str(tmp_path / "out.mkv")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert any("top field first" in n and "field order kept" in n for n in data["input_notes"])
    assert _field_order(out) == (2, True)


# ---------------------------------------------------------------------------------------------------
# 4. other streams


def _multi(tmp_path: Path, ext: str, audio_streams: int = 8) -> str:
    """Video, ``audio_streams`` Opus streams, a text subtitle (SubRip in .mkv, timed text in .mp4), a
    font attachment (.mkv) or a timecode track (.mp4)."""
    clip = make_clip(tmp_path / "base.mkv", frames=15, audio=True)
    path = str(tmp_path / f"multi{ext}")
    sub = "subrip" if ext == ".mkv" else "mov_text"
    ms = fractions.Fraction(1, 1000)
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        if ext == ".mp4":
            video.metadata["timecode"] = "01:00:00:00"  # the MP4 muxer writes a tmcd track for it
        audio = [out.add_stream_from_template(inp.streams.audio[0]) for _ in range(audio_streams)]
        text = out.add_mux_stream(sub, time_base=ms)
        if ext == ".mkv":
            out.add_attachment("font.ttf", "application/x-truetype-font", b"\0\1\0\0FAKEFONT")
        copy_video_and_audio(inp, video, audio, out)
        for i, words in enumerate((b"Hello", b"World")):
            body = words if sub == "subrip" else len(words).to_bytes(2, "big") + words
            cue = av.Packet(body)
            cue.pts = cue.dts = 200 * i
            cue.duration, cue.time_base, cue.stream = 150, ms, text
            out.mux(cue)
    return path


def _kinds(path: str) -> list[tuple[str, str | None]]:
    with av.open(path) as container:
        return [(s.type, s.codec_context.name if s.codec_context else None) for s in container.streams]


def _subtitle_texts(path: str) -> list[bytes]:
    with av.open(path) as container:
        stream = container.streams.subtitles[0]
        return [bytes(p) for p in container.demux(stream) if p.size > 2]


def test_every_stream_matroska_holds_is_kept(tmp_path: Path, capsys: Capsys) -> None:
    src = _multi(tmp_path, ".mkv")
    out = str(tmp_path / "out.mkv")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert data["encoder"]["audio"] == "8 streams copied"
    assert data["dropped_streams"] == []
    assert [k["kind"] for k in data["kept_streams"]] == ["audio"] * 8 + ["subtitle", "attachment"]
    kinds = _kinds(out)
    assert [k for k, _ in kinds].count("audio") == 8 and ("subtitle", "srt") in kinds
    assert ("attachment", None) in kinds
    assert _subtitle_texts(out) == [b"Hello", b"World"]
    assert "kept beside the video: 8 audio, 1 subtitle, 1 attachment" in _summary(
        capsys, src, str(tmp_path / "o2.mkv")
    )


def test_into_mp4_subtitles_are_converted_and_attachments_dropped_with_why(
    tmp_path: Path, capsys: Capsys
) -> None:
    src = _multi(tmp_path, ".mkv", audio_streams=2)
    out = str(tmp_path / "out.mp4")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert ("subtitle", "mov_text") in _kinds(out)
    assert [t[2:] for t in _subtitle_texts(out)] == [b"Hello", b"World"]
    assert any("converted from srt to mov_text" in n for n in data["stream_notes"])
    [dropped] = data["dropped_streams"]
    assert dropped["kind"] == "attachment" and dropped["index"] == 4
    assert "mp4 container holds no attachments" in dropped["reason"]
    summary = _summary(capsys, src, str(tmp_path / "o2.mp4"))
    assert "dropped stream 4 (attachment application/x-truetype-font)" in summary


ASS_SCRIPT = """[Script Info]
ScriptType: v4.00+

[V4+ Styles]
Format: Name, Fontname, Fontsize, PrimaryColour, Bold, Italic, Alignment, MarginL, MarginR, MarginV
Style: Default,Arial,20,&H00FFFFFF,0,0,2,10,10,10

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
Dialogue: 0,0:00:00.00,0:00:00.20,Default,,0,0,0,,{\\i1}Hello{\\i0}, you\\Nthere
Dialogue: 0,0:00:00.20,0:00:00.40,Default,,0,0,0,,World
"""
"""Two cues, the first styled inline, with a comma and a forced line break."""


@pytest.mark.parametrize(("ext", "codec"), [(".mp4", "mov_text"), (".webm", "webvtt")])
def test_ass_subtitles_are_converted_as_ffmpeg_converts_them(
    tmp_path: Path, capsys: Capsys, ext: str, codec: str
) -> None:
    """ASS into MP4 or WebM was dropped ('alpha2 converts only plain-text ones') where ffmpeg converts
    it: now its text is kept, its styling not, as SubRip's is."""
    clip = make_clip(tmp_path / "base.mkv", frames=12)
    script = tmp_path / "s.ass"
    script.write_text(ASS_SCRIPT)
    src = str(tmp_path / "ass.mkv")
    with av.open(clip.path) as video, av.open(str(script)) as subs, av.open(src, "w") as out:
        made = {id(s): out.add_stream_from_template(s) for s in (video.streams.video[0], subs.streams[0])}
        for inp in (video, subs):
            for packet in inp.demux():
                if packet.dts is not None:
                    packet.stream = made[id(packet.stream)]
                    out.mux(packet)
    out = str(tmp_path / f"out{ext}")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert data["dropped_streams"] == [] and ("subtitle", codec) in _kinds(out)
    texts = [t[2:] if codec == "mov_text" else t for t in _subtitle_texts(out)]
    assert texts == [b"Hello, you\nthere", b"World"], texts


def test_mov_text_s_empty_samples_are_not_written_as_empty_cues(tmp_path: Path, capsys: Capsys) -> None:
    """MP4's mov_text fills the time between cues with empty samples; converted to WebVTT they were
    written as empty cues, after the first of which FFmpeg 5.1 read no more of a WebM's cues (found by
    an outside pass)."""
    src = _multi(tmp_path, ".mkv", audio_streams=1)
    mp4 = str(tmp_path / "mid.mp4")
    assert _transcode(capsys, src, mp4)[0] == 0
    with av.open(mp4) as container:
        sizes = [p.size for p in container.demux(container.streams.subtitles[0]) if p.dts is not None]
    assert 2 in sizes, f"the MP4 muxer fills the gaps with empty samples (the case tested): {sizes}"
    out = str(tmp_path / "out.webm")
    code, _data, err = _transcode(capsys, mp4, out)
    assert code == 0, err
    assert ("subtitle", "webvtt") in _kinds(out)
    with av.open(out) as container:
        cues = [bytes(p) for p in container.demux(container.streams.subtitles[0]) if p.dts is not None]
    assert cues == [b"Hello", b"World"], cues


def test_timecode_track_and_no_audio_are_reported(tmp_path: Path, capsys: Capsys) -> None:
    src = _multi(tmp_path, ".mp4", audio_streams=2)
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mkv"), "--no-audio")
    assert code == 0, err
    dropped = {d["index"]: d for d in data["dropped_streams"]}
    assert [dropped[i]["reason"] for i in (1, 2)] == ["--no-audio", "--no-audio"]
    assert not [d for d in data["dropped_streams"] if d["kind"] == "data"]
    # Matroska keeps the start timecode as the video's TIMECODE tag (tests/test_transcode_timecode.py).
    assert any("(the timecode track): its start 01:00:00:00 kept" in n for n in data["stream_notes"])
    assert [k["kind"] for k in data["kept_streams"]] == ["subtitle"]  # timed text -> SubRip in .mkv
    assert data["encoder"]["audio"] == "dropped (--no-audio)"


def test_plan_streams() -> None:
    streams = (
        InputStream(0, StreamKind.VIDEO, "h264"),
        InputStream(1, StreamKind.AUDIO, "aac"),
        InputStream(2, StreamKind.VIDEO, "hevc"),
        InputStream(3, StreamKind.VIDEO, "mjpeg", attached_picture=True),
        InputStream(4, StreamKind.DATA, ""),
    )
    plan = plan_streams(streams, 0, TranscodeOptions())
    assert plan.copy == (1, 3)
    assert {d.index: d.reason for d in plan.dropped} == {
        2: "one video stream is transcoded (stream 0)",
        4: "a data track: alpha2 writes no data tracks",
    }


# ---------------------------------------------------------------------------------------------------
# 5. a cut MP4


def _bframes_mp4(path: Path, frames: int = 20) -> str:
    with av.open(str(path), "w", options={"movflags": "faststart"}) as out:
        stream: Any = out.add_stream("libx264", rate=30, options={"preset": "ultrafast", "bf": "2"})
        stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
        stream.codec_context.gop_size = 30
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(pattern(i, 128, 96), format="rgb24").reformat(format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def _decodable(path: str) -> int:
    """Frames FFmpeg decodes, one thread, every error skipped (what ffmpeg writes)."""
    count = 0
    with av.open(path) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = 1
        for packet in container.demux(stream):
            try:
                count += len(packet.decode())
            except av.error.FFmpegError:
                continue
    return count


def test_a_cut_mp4_keeps_every_decodable_frame(tmp_path: Path, capsys: Capsys) -> None:
    src = truncate(_bframes_mp4(tmp_path / "b.mp4"), str(tmp_path / "cut.mp4"), 0.6)
    expected = _decodable(src)
    assert expected == 11
    with DecodeSession(src, hwaccel="none", threads=0) as session:  # frame threads
        assert len(list(session)) == expected
    code, data, err = _transcode(capsys, src, str(tmp_path / "out.mkv"), "--hwaccel", "none")
    assert code == 0, err
    assert data["frames"] == expected and data["decode"]["truncated"]


# ---------------------------------------------------------------------------------------------------
# 6. one-pixel pictures


def test_plan_pads_a_one_pixel_side() -> None:
    colour = ColourInfo().resolved(PixelFormat.YUV420P, 1, 1)
    plan = plan_transcode(Size(1, 1), PixelFormat.YUV420P, colour, TranscodeOptions())
    assert plan.output_size == Size(2, 2) and plan.crop is None and plan.padded_from == Size(1, 1)
    plan = plan_transcode(Size(3, 1), PixelFormat.YUV420P, colour, TranscodeOptions())
    assert plan.output_size == Size(2, 2) and plan.crop == (0, 0, 2, 1)


def test_a_one_pixel_picture_is_padded(tmp_path: Path, capsys: Capsys) -> None:
    src = _y4m(tmp_path / "dot.y4m", 1, 1)
    out = str(tmp_path / "dot.mp4")
    code, data, err = _transcode(capsys, src, out, "--hwaccel", "none")
    assert code == 0, err
    assert data["padded_from"] == [1, 1] and data["output_size"] == [2, 2]
    with av.open(out) as container:
        lumas = [f.to_ndarray(format="yuv420p")[:2, :2] for f in container.decode(video=0)]
    assert [int(y.min()) for y in lumas] == [int(y.max()) for y in lumas] == [16, 26, 36]
    assert "padded 1x1 to 2x2" in _summary(capsys, src, str(tmp_path / "o2.mp4"))


@pytest.mark.skipif(not encoder_available("hevc"), reason="no libx265")
def test_a_picture_under_the_encoders_minimum_is_refused_naming_its_size(
    tmp_path: Path, capsys: Capsys
) -> None:
    src = _y4m(tmp_path / "small.y4m", 16, 8)  # libx265 takes 16x16 and more (183f53f)
    code = cli.main(["transcode", src, str(tmp_path / "s.mkv"), "--codec", "hevc"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert "the input's pictures are 16x8" in err and "16x16" in err and "--size" in err


# ---------------------------------------------------------------------------------------------------
# 7. cover art and audio-only input


def _with_cover(path: Path, video: bool) -> str:
    """AAC audio with a JPEG cover (an MP4 attached picture), and a video before them when asked."""
    base = make_clip(path.with_suffix(".src.mp4"), frames=15, audio=True) if video else None
    with av.open(str(path), "w", format="mp4") as out:
        streams: dict[int, Any] = {}
        inp = av.open(base.path) if base is not None else None
        if inp is not None:
            streams = {s.index: out.add_stream_from_template(s) for s in inp.streams}
        else:
            audio: Any = out.add_stream("aac", rate=48000)
            audio.layout = "stereo"
        cover: Any = out.add_stream("mjpeg", rate=1)
        cover.width, cover.height, cover.pix_fmt = 64, 64, "yuvj420p"
        picture = av.VideoFrame.from_ndarray(np.full((64, 64, 3), 200, np.uint8), format="rgb24")
        picture = picture.reformat(format="yuvj420p")
        picture.pts = 0
        packets = cover.encode(picture) + cover.encode(None)
        cover.disposition = av.stream.Disposition.attached_pic
        for packet in packets:
            packet.stream = cover
            out.mux(packet)
        if inp is not None:
            for packet in inp.demux():
                if packet.dts is not None:
                    packet.stream = streams[packet.stream.index]
                    out.mux(packet)
            inp.close()
        else:
            _write_tone(out, audio, 0.5)
    return str(path)


def _covers(path: str) -> list[str]:
    with av.open(path) as container:
        attached = int(av.stream.Disposition.attached_pic)
        return [s.codec_context.name for s in container.streams.video if int(s.disposition) & attached]


@pytest.mark.parametrize("ext", [".mp4", ".mkv"])
def test_cover_art_is_kept_as_cover_art(tmp_path: Path, capsys: Capsys, ext: str) -> None:
    src = _with_cover(tmp_path / "v.mp4", video=True)
    assert _covers(src) == ["mjpeg"]
    out = str(tmp_path / f"out{ext}")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert data["frames"] == 15
    assert [k["kind"] for k in data["kept_streams"] if k["cover_art"]] == ["video"]
    assert _covers(out) == ["mjpeg"]  # MP4: an attached picture; Matroska: an attachment, read as one
    assert "cover art" in _summary(capsys, src, str(tmp_path / f"o2{ext}"))


def test_audio_with_cover_art_into_mp4_keeps_both(tmp_path: Path, capsys: Capsys) -> None:
    # Refused until audio-only transcoding came ('holds no video ...; alpha2 transcode writes video').
    src = _with_cover(tmp_path / "song.m4a", video=False)
    out = str(tmp_path / "out.mp4")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert data["encoder"]["audio_only"] is True
    assert _covers(out) == ["mjpeg"]
    with av.open(out) as container:
        assert [s.codec_context.name for s in container.streams.audio] == ["aac"]


def test_audio_only_into_mp4_is_transcoded(tmp_path: Path, capsys: Capsys) -> None:
    src = make_audio_only(tmp_path / "tone.mkv")
    out = tmp_path / "out.mp4"
    code = cli.main(["transcode", src, str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "transcoded" in err and "encoded opus to aac" in err
    with av.open(str(out)) as container:
        assert not container.streams.video
        assert container.streams.audio[0].codec_context.name == "aac"


# ---------------------------------------------------------------------------------------------------
# 8. audio that does not decode


def _shrink_codec_private(src: str, dst: str, keep: int) -> str:
    """Cut a Matroska file's first CodecPrivate to ``keep`` bytes, an EBML Void filling the rest (the
    parents' sizes stay right)."""
    data = bytearray(open(src, "rb").read())
    pos = data.index(b"\x63\xa2")
    size = data[pos + 2] & 0x7F
    assert data[pos + 2] & 0x80, "a one-byte size"
    total = 3 + size
    new = b"\x63\xa2" + bytes([0x80 | keep]) + bytes(data[pos + 3 : pos + 3 + keep])
    fill = total - len(new)
    assert 2 <= fill < 129
    data[pos : pos + total] = new + b"\xec" + bytes([0x80 | (fill - 2)]) + b"\0" * (fill - 2)
    with open(dst, "wb") as f:
        f.write(bytes(data))
    return dst


@pytest.mark.skipif(not encoder_available("vp9"), reason="no libvpx-vp9")
def test_opus_with_a_truncated_codec_private_is_dropped_not_copied(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "o.webm", "vp9", frames=10, audio=True)
    with av.open(clip.path) as container:
        audio = container.streams.audio[0]
        assert audio.codec_context.name == "opus" and len(audio.codec_context.extradata or b"") == 19
    src = _shrink_codec_private(clip.path, str(tmp_path / "bad.webm"), 8)  # "OpusHead" alone
    out = str(tmp_path / "out.webm")
    code, data, err = _transcode(capsys, src, out)
    assert code == 0, err
    assert data["encoder"]["audio"].startswith("dropped: the opus audio does not decode")
    [dropped] = data["dropped_streams"]
    assert dropped["kind"] == "audio" and "decoder does not open" in dropped["reason"]
    assert [k for k, _ in _kinds(out)] == ["video"]
    # The whole header copies as it is.
    code, data, err = _transcode(capsys, clip.path, str(tmp_path / "ok.webm"))
    assert code == 0 and data["encoder"]["audio"] == "copied", err


# ---------------------------------------------------------------------------------------------------
# 9. image sequences


def test_png_sequence_with_a_gap_writes_the_frames_before_it(tmp_path: Path, capsys: Capsys) -> None:
    for i in (1, 2, 3, 5):  # 4 is missing
        frame = av.VideoFrame.from_ndarray(np.full((48, 64, 4), 40 * i, np.uint8), format="rgba")
        with av.open(str(tmp_path / f"img-{i:03d}.png"), "w", format="image2") as out:
            stream: Any = out.add_stream("png", rate=1)
            stream.width, stream.height, stream.pix_fmt = 64, 48, "rgba"
            for packet in stream.encode(frame) + stream.encode(None):
                out.mux(packet)
    code, data, err = _transcode(capsys, str(tmp_path / "img-%03d.png"), str(tmp_path / "out.mp4"))
    assert code == 0, err  # was: internal error (AttributeError): 'NoneType' ... 'numerator'
    assert data["frames"] == 3


# ---------------------------------------------------------------------------------------------------
# 10. a bound on decoded pictures


def test_max_pixels_refuses_before_decoding(tmp_path: Path, capsys: Capsys) -> None:
    clip = make_clip(tmp_path / "c.mkv", width=256, height=256, frames=2)
    assert TranscodeOptions().max_pixels == DEFAULT_MAX_PIXELS == 8192 * 4320
    code = cli.main(["transcode", clip.path, str(tmp_path / "out.mp4"), "--max-pixels", "60000"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert "256x256" in err and "--max-pixels" in err and "60000" in err
    with pytest.raises(OutOfMemoryError):
        DecodeSession(clip.path, hwaccel="none", max_pixels=256 * 255)
    with DecodeSession(clip.path, hwaccel="none", max_pixels=256 * 256) as session:
        assert len(list(session)) == 2
    code, data, err = _transcode(capsys, clip.path, str(tmp_path / "ok.mp4"), "--max-pixels", "65536")
    assert code == 0 and data["frames"] == 2, err


def test_max_pixels_checks_the_first_frame_too() -> None:
    class Frame:
        width, height = 300, 200

    frames = within_pixel_limit(iter([Frame(), Frame()]), 50_000, "'x.h264'")  # type: ignore[list-item]
    with pytest.raises(OutOfMemoryError, match="300x200"):
        next(frames)
    assert len(list(within_pixel_limit(iter([Frame()]), None, "x"))) == 1  # type: ignore[list-item]


# ---------------------------------------------------------------------------------------------------
# 11. pictures wider than the GPU's textures


@pytest.mark.vulkan
def test_wider_than_the_gpu_textures_is_refused_with_the_way_out(tmp_path: Path, capsys: Capsys) -> None:
    from alpha2.api.devices import open_device, texture_limit

    with open_device("none") as device:  # wider than this machine's GPU allows (lavapipe 16384, H200 32768)
        limit = texture_limit(device.webgpu_device) or 16384
    width = max(20000, limit + 2)
    src = _y4m(tmp_path / "wide.y4m", width, 2, frames=2)
    code = cli.main(["transcode", src, str(tmp_path / "out.mkv"), "--gpu", "--codec", "ffv1"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err  # was: internal error (GPUValidationError)
    assert f"{width}x2" in err and "max_texture_dimension_2d" in err and "drop --gpu" in err
    assert not (tmp_path / "out.mkv").exists()
    code, data, err = _transcode(capsys, src, str(tmp_path / "cpu.mkv"), "--size", "2000x2000")
    assert code == 0 and data["output_size"] == [2000, 2], err


@pytest.mark.vulkan
def test_a_picture_too_wide_for_the_gpu_takes_swscale_when_nothing_asked_for_the_gpu(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = ScaleRoute(ScaleRouteKind.GPU, "a GPU device is at hand")
    monkeypatch.setattr(transcoder, "choose_scale_route", lambda **_: gpu)
    monkeypatch.setattr(transcoder, "texture_limit", lambda device: 48)
    clip = make_clip(tmp_path / "c.mkv", width=64, height=48, frames=3)
    # Decoded on the CPU (NVDEC's frames, on the GPU, are the other case: refused with the way out).
    code, data, err = _transcode(
        capsys, clip.path, str(tmp_path / "out.mp4"), "--size", "32x24", "--hwaccel", "none"
    )
    assert code == 0, err
    assert data["scale_route"]["route"] == "swscale"
    assert "64x48" in data["scale_route"]["reason"] and "48 pixels a side" in data["scale_route"]["reason"]


@pytest.mark.vulkan
def test_play_refuses_a_picture_wider_than_the_gpu_in_one_line(tmp_path: Path, capsys: Capsys) -> None:
    """alpha2 play draws on the GPU: a picture wider than its textures is refused before a texture of it is
    made (was: internal error (GPUValidationError)), with the way out."""
    from alpha2.api.devices import open_device, texture_limit

    with open_device("none") as device:
        limit = texture_limit(device.webgpu_device) or 16384
    width = max(20000, limit + 2)
    src = _y4m(tmp_path / "wide.y4m", width, 2, frames=2)
    code = cli.main(["play", src, "--offscreen", "--frames", "1", "--hwaccel", "none"])
    err = capsys.readouterr().err
    assert code == 1 and "alpha2: error:" in err and "Traceback" not in err and "internal error" not in err, (
        err
    )
    assert f"{width}x2" in err and "max_texture_dimension_2d" in err and "--size" in err


@pytest.mark.parametrize("size", [None, "64x48"])
def test_an_intra_coded_input_does_not_make_every_output_frame_a_key_frame(
    tmp_path: Path, capsys: Capsys, size: str | None
) -> None:
    """FFV1 (as ProRes or MJPEG) decodes every frame as intra, and a frame handed on with its picture
    type made x264 code a key frame each: files 6 times ffmpeg's. The encoder now chooses."""
    import av

    src = str(tmp_path / "intra.mkv")
    with av.open(src, "w") as out:
        stream: Any = out.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
        for i in range(30):
            frame = av.VideoFrame.from_ndarray(pattern(i, 128, 96), format="rgb24").reformat(format="yuv420p")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    dst = str(tmp_path / "out.mp4")
    args = ["--size", size] if size else []
    code, _, err = _transcode(capsys, src, dst, *args)
    assert code == 0, err
    with av.open(dst) as container:
        keys = sum(1 for p in container.demux(video=0) if p.size and p.is_keyframe)
    assert keys <= 3  # 30 before; x264's own scene cuts may add one or two on this changing pattern


# ---------------------------------------------------------------------------------------------------
# a header FFmpeg refuses with a system error code


@pytest.mark.parametrize("header", ["W16 H0", "W0 H16"])
def test_a_header_ffmpeg_refuses_is_named_as_such(tmp_path: Path, capsys: Capsys, header: str) -> None:
    """A Y4M whose size is 0: FFmpeg's demuxer answers EBUSY ("Device or resource busy"), which said
    nothing of the file; the error now says the header could not be read, through the API and the CLI."""
    import alpha2
    from alpha2.api.errors import MediaFormatError

    path = tmp_path / "zero.y4m"
    path.write_bytes(f"YUV4MPEG2 {header} F25:1 Ip A1:1 C420jpeg\nFRAME\n".encode() + bytes(64))
    with pytest.raises(MediaFormatError, match="could not read the container's header") as caught:
        alpha2.open(str(path))
    assert caught.value.ffmpeg_errno is not None
    out = tmp_path / "out.mp4"
    assert cli.main(["transcode", str(path), str(out), "-y"]) == 1
    err = capsys.readouterr().err
    assert "could not read the container's header" in err and "Traceback" not in err
    assert not out.exists()


def test_an_mp4_cut_before_its_index_and_an_empty_file_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FFmpeg says 'Invalid data found when processing input' for both; ffmpeg's own log says 'moov atom
    not found' (found by an outside pass: the one line said nothing of why)."""
    whole = tmp_path / "whole.mp4"
    make_clip(whole, frames=12)  # PyAV writes the moov index at the end
    data = whole.read_bytes()
    assert data.rfind(b"moov") > len(data) // 2
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: data.rfind(b"moov") - 4])
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    for path, said in ((cut, "without its 'moov' index"), (empty, "the file is empty (0 bytes)")):
        assert cli.main(["transcode", str(path), str(tmp_path / "out.mp4")]) == 1
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, err
    assert not (tmp_path / "out.mp4").exists()
    with DecodeSession(str(whole)) as session:  # a whole file opens as before
        assert session.next_frame() is not None


@pytest.mark.parametrize("options", [{}, {"size": (32, 24)}, {"codec": "copy"}])
def test_an_exception_from_progress_stops_the_run_and_keeps_the_output(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    """transcode's docstring names progress as the way to stop a run (it said nothing of stopping one:
    an outside pass): what it raises comes out, the file already under the output's name is kept and
    nothing else is left in its folder."""
    clip = make_clip(tmp_path / "in.mp4", frames=30, audio=True).path
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "out.mkv"
    out.write_bytes(b"kept")

    def stop(frames: int) -> None:
        if frames >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        transcoder.transcode(clip, out, options, progress=stop)
    assert out.read_bytes() == b"kept" and list(folder.iterdir()) == [out]
