"""``alpha2 transcode IN OUT --codec copy``: the streams copied as they are (``ffmpeg -c copy``): the same
pictures, the audio and subtitles the container holds, what a copy cannot do refused before anything is
read, nothing left behind on a failure."""

from __future__ import annotations

import fractions
import hashlib
import json
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps.cli import main
from alpha2.gpu.errors import InvalidInputError

sys.path.insert(0, str(Path(__file__).parent))
from media import make_audio_only, make_clip


def _pictures(path: Path | str) -> list[str]:
    with av.open(str(path)) as container:
        return [hashlib.md5(f.to_ndarray().tobytes()).hexdigest() for f in container.decode(video=0)]


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_copy_keeps_every_picture_and_the_audio(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = make_clip(tmp_path / "in.mp4", frames=24, audio=True).path
    for ext in (".mkv", ".ts", ".mov"):
        out = tmp_path / f"out{ext}"
        stats = transcode(src, str(out), TranscodeOptions(codec="copy"))
        assert _pictures(out) == _pictures(src), ext
        assert stats.frames == 24 and stats.encoder["audio"] == "copied", (ext, stats.encoder)
        assert stats.video_action().startswith("copied (h264, ") and not stats.paths.as_dict()["frames"]
        with av.open(str(out)) as container:
            assert container.streams.audio and container.streams.video[0].codec_context.name == "h264"
        json.dumps(stats.as_dict())
    assert main(["transcode", src, str(tmp_path / "said.mkv"), "--codec", "copy"]) == 0
    err = capsys.readouterr().err
    assert "alpha2: copied 24 frames in" in err and "none: the video's packets copied, not decoded" in err
    assert _left(tmp_path) == []


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"size": "320x240"}, "codec copy copies the pictures as they are: size would need them decoded"),
        ({"crf": 20}, "crf would need them decoded"),
        ({"segments": 2}, "segments would need them decoded"),
        ({"frames": 5}, "codec copy counts no frames .*: cut with to_seconds or duration_seconds"),
    ],
)
def test_what_a_copy_cannot_do_is_refused_first(
    tmp_path: Path, options: dict[str, object], said: str
) -> None:
    with pytest.raises(InvalidInputError, match=said):
        transcode(str(tmp_path / "missing.mp4"), str(tmp_path / "out.mkv"), {"codec": "copy", **options})


def test_a_copy_the_container_cannot_hold_or_without_video_leaves_nothing(tmp_path: Path) -> None:
    src = make_clip(tmp_path / "in.mp4", frames=6).path
    with pytest.raises(InvalidInputError, match="cannot be copied into the webm container"):
        transcode(src, str(tmp_path / "out.webm"), {"codec": "copy"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mp4"]
    # A file without video is no longer refused: its audio packets are copied (ffmpeg -c copy).
    sound = make_audio_only(tmp_path / "tone.mka", seconds=0.3)
    stats = transcode(sound, str(tmp_path / "out.mkv"), {"codec": "copy"})
    assert stats.encoder["audio"] == "copied" and stats.audio_packets_copied > 0


def test_no_audio_drops_it_and_says_so(tmp_path: Path) -> None:
    src = make_clip(tmp_path / "in.mp4", frames=6, audio=True).path
    stats = transcode(src, str(tmp_path / "out.mkv"), {"codec": "copy", "audio": False})
    assert stats.encoder["audio"] == "dropped (--no-audio)"
    with av.open(str(tmp_path / "out.mkv")) as container:
        assert not container.streams.audio


def test_what_a_copy_cannot_write_is_refused_with_why(tmp_path: Path) -> None:
    """A raw elementary stream has no timestamps to copy ('nothing was written'), and AVI takes H.264
    only in its start-code form ('Invalid data found' from the muxer): both said, nothing left."""
    src = make_clip(tmp_path / "in.mp4", frames=6).path
    raw = tmp_path / "raw.h264"
    with av.open(src) as container, av.open(str(raw), "w", format="h264") as out:
        stream = container.streams.video[0]
        annexb = av.bitstream.BitStreamFilterContext("h264_mp4toannexb", stream)
        written = out.add_stream_from_template(stream)
        for packet in container.demux(stream):
            for made in annexb.filter(packet if packet.size else None):
                made.stream = written
                out.mux(made)
    with pytest.raises(InvalidInputError, match="carry no timestamps"):
        transcode(str(raw), str(tmp_path / "out.mp4"), {"codec": "copy"})
    with pytest.raises(InvalidInputError, match="avi container takes h264 in its start-code form"):
        transcode(src, str(tmp_path / "out.avi"), {"codec": "copy"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mp4", "raw.h264"]


def _frame_times(path: Path) -> list[float]:
    with av.open(str(path)) as container:
        return [round(float(f.time), 4) for f in container.decode(video=0)]


def test_matroska_pictures_with_b_frames_keep_their_times(tmp_path: Path) -> None:
    """Matroska's packets carry no decode times: taken from the pts, the copy moved every picture after a
    reordered one (the second frame of a copied MKV came at 0.2 s, not 0.04)."""
    src = tmp_path / "bf.mkv"
    with av.open(str(src), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.options = {"bframes": "3", "preset": "medium"}
        for i in range(30):
            frame = av.VideoFrame.from_ndarray(
                np.full((48, 64, 3), (i * 8) % 256, np.uint8), format="rgb24"
            ).reformat(format="yuv420p")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    with av.open(str(src)) as container:
        assert any(p.dts is None for p in container.demux(video=0) if p.size)  # as the demuxer gives them
    out_mp4 = tmp_path / "out.mp4"
    transcode(str(src), str(out_mp4), {"codec": "copy"})
    assert _frame_times(out_mp4) == _frame_times(src) and _pictures(out_mp4) == _pictures(src)


def _write(
    path: Path, video: str | None, audio: str | None, *, audio_frame: int = 1024, frames: int = 12
) -> str:
    """A small file of ``video`` (64x48, 25 fps) and ``audio`` (48 kHz mono, ``audio_frame`` samples a
    packet) encoded with PyAV."""
    with av.open(str(path), "w") as out:
        vstream = astream = None
        if video is not None:
            vstream = out.add_stream(video, rate=25)
            vstream.width, vstream.height, vstream.pix_fmt = 64, 48, "yuv420p"
        if audio is not None:
            astream = out.add_stream(audio, rate=48000, layout="mono")
            if audio != "pcm_s16le":
                astream.bit_rate = 64000  # WMA opens only with one
        for i in range(frames):
            if vstream is not None:
                picture = np.full((48, 64, 3), (i * 16) % 256, np.uint8)
                frame = av.VideoFrame.from_ndarray(picture, format="rgb24").reformat(format="yuv420p")
                for packet in vstream.encode(frame):
                    out.mux(packet)
        if astream is not None:
            fmt = astream.codec_context.format.name
            count = 48000 * frames // 25
            for start in range(0, count, audio_frame):
                n = min(audio_frame, count - start)
                samples = np.sin(np.arange(start, start + n) / 8) * 0.3
                data = (
                    (samples * 32767).astype(np.int16)
                    if fmt.startswith("s16")
                    else samples.astype(np.float32)
                )
                frame = av.AudioFrame.from_ndarray(data[None, :], format=fmt, layout="mono")
                frame.sample_rate, frame.pts = 48000, start
                for packet in astream.encode(frame):
                    out.mux(packet)
            for packet in astream.encode():
                out.mux(packet)
        if vstream is not None:
            for packet in vstream.encode():
                out.mux(packet)
    return str(path)


def test_av1_is_copied_though_no_encoder_of_its_decoder_s_name_exists(tmp_path: Path) -> None:
    """PyAV's template looked for an encoder named as the decoder (libdav1d): AV1 (and Theora, WMV) could
    not be copied at all, said as 'the container cannot hold av1' (an outside pass)."""
    src = _write(tmp_path / "av1.mkv", "libsvtav1", None)
    out = tmp_path / "out.mp4"
    transcode(src, str(out), {"codec": "copy"})
    assert _pictures(out) == _pictures(src) and len(_pictures(out)) == 12


def test_equal_audio_times_are_kept_where_the_muxer_takes_them(tmp_path: Path) -> None:
    """Matroska's milliseconds give packets of 40 samples (0.83 ms) equal times: a copy dropped them as
    duplicates (600 of TrueHD's 3600 packets, an outside pass); Matroska takes equal times."""
    src = _write(tmp_path / "pcm.mkv", "libx264", "pcm_s16le", audio_frame=40)

    def audio_packets(path: Path | str) -> int:
        with av.open(str(path)) as container:
            return sum(1 for p in container.demux(audio=0) if p.size)

    out = tmp_path / "out.mkv"
    stats = transcode(src, str(out), {"codec": "copy"})
    assert audio_packets(out) == audio_packets(src) > 500 and not stats.audio_timestamps.total


def test_wma_audio_a_container_cannot_hold_is_encoded_again(tmp_path: Path) -> None:
    """WMA into Matroska is encoded again; its decoder's frames have no time base, and making them
    packed failed with an AttributeError (an internal error, found by an outside pass)."""
    src = _write(tmp_path / "wma.asf", "libx264", "wmav2", audio_frame=2048)
    stats = transcode(src, str(tmp_path / "out.mkv"), {"codec": "copy"})
    assert "re-encoded wmav2" in stats.encoder["audio"]
    with av.open(str(tmp_path / "out.mkv")) as container:
        assert container.streams.audio and sum(1 for _ in container.decode(audio=0)) > 5


def test_a_container_held_pixel_shape_is_written_or_said(tmp_path: Path) -> None:
    """A pixel shape the input's container holds (not its stream) was lost unsaid (an anamorphic 16:9
    copy came out 4:3): MP4 and MOV write it from the stream's parameters; Matroska is said."""
    from types import SimpleNamespace

    from alpha2.ffmpeg_bridge.side_streams import CopyReport, StreamCopier, StreamKind
    from alpha2.ffmpeg_bridge.side_streams import InputStream as Facts

    copier = StreamCopier.__new__(StreamCopier)
    copier.report = CopyReport()
    facts = Facts(index=0, kind=StreamKind.VIDEO, codec="h264")
    shape = fractions.Fraction(4, 3)
    stream_in = SimpleNamespace(
        sample_aspect_ratio=shape, codec_context=SimpleNamespace(sample_aspect_ratio=None)
    )
    into_mp4 = SimpleNamespace(codec_context=SimpleNamespace(sample_aspect_ratio=None))
    copier._keep_pixel_shape(facts, stream_in, into_mp4, "mp4")
    assert into_mp4.codec_context.sample_aspect_ratio == shape and not copier.report.other_notes
    copier._keep_pixel_shape(facts, stream_in, SimpleNamespace(codec_context=SimpleNamespace()), "matroska")
    assert "pixel shape 4:3" in copier.report.other_notes[0]


def test_mpeg_ts_gets_only_what_it_holds(tmp_path: Path) -> None:
    """FFmpeg's MPEG-TS muxer writes a codec it has no stream type for as a data stream nothing plays:
    PCM audio (and FLAC) went in 'copied', VP9 video too (an outside pass). The audio is encoded again,
    said; such a video is refused."""
    src = _write(tmp_path / "pcm.mkv", "libx264", "pcm_s16le")
    stats = transcode(src, str(tmp_path / "out.ts"), {"codec": "copy"})
    assert "mpegts container writes pcm_s16le as a data stream" in stats.encoder["audio"]
    with av.open(str(tmp_path / "out.ts")) as container:
        assert [s.codec_context.name for s in container.streams.audio] == ["aac"]
    vp9 = _write(tmp_path / "vp9.mkv", "libvpx-vp9", None)
    with pytest.raises(InvalidInputError, match="writes vp9 as a data stream, not video"):
        transcode(vp9, str(tmp_path / "vp9.ts"), {"codec": "copy"})


@pytest.mark.parametrize(
    ("encoder", "ext", "said"),
    [
        ("libsvtav1", ".ts", "writes av1 as a data stream, not video"),
        ("libsvtav1", ".mov", "FFmpeg's mov muxer takes av1 only in .mp4"),
        ("libvpx-vp9", ".mov", "FFmpeg's mov muxer takes vp9 only in .mp4"),
    ],
)
def test_a_video_its_container_cannot_carry_is_refused_with_why(
    tmp_path: Path, encoder: str, ext: str, said: str
) -> None:
    """AV1 into MPEG-TS was said 'copied (av1, 320x240)' of a file whose one stream FFmpeg reads back as
    bin_data (no video); VP9 or AV1 into MOV failed as 'writing stream 0 (video vp9): Invalid argument'
    (FFmpeg's header: 'vp9 only supported in MP4'). Found by an outside pass."""
    src = _write(tmp_path / "in.mkv", encoder, None)
    with pytest.raises(InvalidInputError, match=said):
        transcode(src, str(tmp_path / f"out{ext}"), {"codec": "copy"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mkv"]


def test_a_turned_video_copied_where_no_display_matrix_goes_is_said(tmp_path: Path) -> None:
    """MPEG-TS, AVI and NUT hold no display matrix: the copy shows the picture as stored (as ffmpeg's),
    said; MP4, MOV and Matroska keep it."""
    src = tmp_path / "turned.mp4"
    with av.open(str(src), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.set_display_rotation(-90)  # counter-clockwise degrees: 90 clockwise
        for i in range(6):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), i * 30, np.uint8), format="rgb24")
            for packet in stream.encode(frame.reformat(format="yuv420p")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    said = transcode(str(src), str(tmp_path / "out.ts"), {"codec": "copy"}).stream_notes
    assert any("turned 90 degrees clockwise" in note and "mpegts" in note for note in said), said
    kept = transcode(str(src), str(tmp_path / "out.mkv"), {"codec": "copy"}).stream_notes
    assert not any("turned" in note for note in kept)


def test_a_copy_is_cut_from_the_key_frame_at_or_before_from(tmp_path: Path) -> None:
    """--from / --to with a copy cut as ffmpeg -ss ... -c copy does: from the key frame at or before
    --from (said), every picture the input's from there, the end by decode time."""
    src = make_clip(tmp_path / "in.mp4", frames=60, gop=15, audio=True).path  # key frames every 0.5 s
    out = tmp_path / "cut.mkv"
    stats = transcode(src, str(out), {"codec": "copy", "from_seconds": 0.7, "to_seconds": 1.4})
    assert stats.cut is not None and stats.cut["key_frame"] and stats.cut["from_seconds"] == 0.5
    with av.open(src) as container:
        frames = [(round(float(f.time), 3), f.to_ndarray().tobytes()) for f in container.decode(video=0)]
    wanted = [data for at, data in frames if 0.5 - 1e-3 <= at < 1.4 - 1e-3]
    with av.open(str(out)) as container:
        got = [f.to_ndarray().tobytes() for f in container.decode(video=0)]
    with av.open(str(out)) as container:
        audio = [p for p in container.demux(audio=0) if p.size]
    assert got[: len(wanted)] == wanted and len(got) <= len(wanted) + 3  # B-frames' references past it
    assert audio and float(audio[0].pts * audio[0].time_base) < 0.05
    with pytest.raises(InvalidInputError, match="from_seconds lies past the end of the video"):
        transcode(src, str(tmp_path / "late.mkv"), {"codec": "copy", "from_seconds": 30.0})


def test_a_copy_says_the_timecode_track_its_container_writes_again(tmp_path: Path) -> None:
    """A MOV's timecode track copied into a MOV: the muxer writes it again from the video's tag, but the
    summary said it 'dropped: alpha2 copies no data streams'; now said kept, as a transcode says it."""
    clip = make_clip(tmp_path / "c.mp4", frames=10).path
    src = str(tmp_path / "tc.mov")
    with av.open(clip) as inp, av.open(src, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        video.metadata["timecode"] = "01:00:00:00"  # the MOV muxer writes a tmcd track for it
        for packet in inp.demux(inp.streams.video[0]):
            if packet.dts is not None:
                packet.stream = video
                out.mux(packet)
    out = tmp_path / "out.mov"
    stats = transcode(src, str(out), {"codec": "copy"})
    assert stats.dropped_streams == [], stats.dropped_streams
    assert any("the timecode track): its start 01:00:00:00 kept" in n for n in stats.stream_notes)
    with av.open(str(out)) as container:
        assert [s.type for s in container.streams] == ["video", "data"]
        assert container.streams.video[0].metadata.get("timecode") == "01:00:00:00"


def test_a_copy_retimes_an_mpeg_ts_clock_jump_as_ffmpeg_does(tmp_path: Path) -> None:
    """Two TS recordings joined, the second's clock 60 s on: the copy was 61 s long, its picture frozen
    for the 60 s between (ffmpeg -c copy re-times a TS jump past 10 s, as a transcode does)."""
    clip = make_clip(tmp_path / "c.mkv", frames=30, audio=True).path
    src = str(tmp_path / "joined.ts")
    with av.open(clip) as inp, av.open(src, "w") as out:
        streams = {s.index: out.add_stream_from_template(s) for s in inp.streams}
        for packet in inp.demux():
            if packet.dts is None:
                continue
            if packet.pts is not None and packet.pts * packet.time_base >= 0.5:
                offset = round(60 / packet.time_base)
                packet.pts += offset
                packet.dts += offset
            packet.stream = streams[packet.stream.index]
            out.mux(packet)
    for ext in (".mkv", ".mp4"):
        out_path = tmp_path / f"out{ext}"
        stats = transcode(src, str(out_path), {"codec": "copy"})
        assert stats.frames == 30 and stats.audio_timestamps.as_dict() == {"jump": 1}, ext
        assert _pictures(out_path) == _pictures(src), ext
        with av.open(str(out_path)) as container:
            assert container.duration / 1e6 < 2.0, (ext, container.duration)


def test_a_copy_from_a_time_in_the_last_picture_is_taken(tmp_path: Path) -> None:
    """--from inside the last picture (shown until the video's end) was refused as past the end, the
    end said as the last picture's start ('it ends at 0.000 s' of a 1-frame clip 0.04 s long, taken by
    a transcode), and counted from 0 rather than from the input's start as --from is."""
    one = make_clip(tmp_path / "one.mp4", frames=1, rate=25).path
    stats = transcode(one, str(tmp_path / "one.mkv"), {"codec": "copy", "from_seconds": 0.02})
    assert stats.frames == 1
    with pytest.raises(InvalidInputError, match=r"it ends at 0\.040 s"):
        transcode(one, str(tmp_path / "past.mkv"), {"codec": "copy", "from_seconds": 0.04})
    late = str(tmp_path / "late.ts")
    with av.open(make_clip(tmp_path / "c.mp4", frames=10, rate=25).path) as inp, av.open(late, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        for packet in inp.demux(inp.streams.video[0]):
            if packet.dts is not None:
                packet.pts += round(100 / packet.time_base)  # the input starts 100 s on
                packet.dts += round(100 / packet.time_base)
                packet.stream = video
                out.mux(packet)
    with pytest.raises(InvalidInputError, match=r"it ends at 0\.4\d\d s"):
        transcode(late, str(tmp_path / "past.mp4"), {"codec": "copy", "from_seconds": 5.0})


def test_a_copy_cut_past_the_end_says_to_the_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--from 0.2 --duration 100 of a 0.4 s clip said 'part from 0.000 s to 1:40.200 of the input'
    (a transcode says 'to the end of the input')."""
    src = make_clip(tmp_path / "in.mp4", frames=12, audio=True).path
    stats = transcode(
        src, str(tmp_path / "out.mkv"), {"codec": "copy", "from_seconds": 0.2, "duration_seconds": 100}
    )
    assert stats.cut is not None and stats.cut["to_seconds"] is None
    main(
        [
            "transcode",
            src,
            str(tmp_path / "said.mkv"),
            "--codec",
            "copy",
            "--from",
            "0.2",
            "--duration",
            "100",
        ]
    )
    assert "to the end of the input" in capsys.readouterr().err
