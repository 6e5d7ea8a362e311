"""Faults an outside crash hunt found that were not crashes but wrong results: subtitles and audio a
copy met (overlapping cues cut with ``--from`` were written out of order, and the muxer's refusal named
the video encoder; a cue whose end comes before its start was held to the end; an audio stream with no
sample rate, a file cut after its header, failed the output's header) and the frame found on a coarse
clock (AVI's, a tick a frame). Inputs made with PyAV."""

from __future__ import annotations

import fractions
import io
from pathlib import Path
from types import SimpleNamespace

import av
import pytest

from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.ffmpeg_bridge.errors import EncoderError
from alpha2.ffmpeg_bridge.side_streams import InputStream, StreamCopier, StreamKind
from tests.media import make_clip

MS = fractions.Fraction(1, 1000)


def _with_cues(tmp_path: Path, cues: list[tuple[int, int, bytes]]) -> str:
    """A 1 s clip with a SubRip stream of ``cues`` (start ms, duration ms, text), muxed in order."""
    clip = make_clip(tmp_path / "base.mkv", frames=30, rate=30)
    path = str(tmp_path / "cues.mkv")
    with av.open(clip.path) as inp, av.open(path, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        text = out.add_mux_stream("subrip", time_base=MS)
        for packet in inp.demux():
            if packet.dts is None:
                continue
            packet.stream = video
            out.mux(packet)
        for start, duration, words in cues:
            cue = av.Packet(words)
            cue.pts = cue.dts = start
            cue.duration, cue.time_base, cue.stream = duration, MS, text
            out.mux(cue)
    return path


def _cue_times(path: str) -> list[tuple[int, int]]:
    with av.open(path) as container:
        stream = container.streams.subtitles[0]
        return [(int(p.dts), int(p.duration or 0)) for p in container.demux(stream) if p.size]


@pytest.mark.vulkan
def test_overlapping_cues_cut_with_from_stay_in_order(tmp_path: Path) -> None:
    # The long cue (0 to 0.8 s) is shown past the video decoded so far and held; the later ones were
    # written first, and the held one, cut to start at 0, came after them.
    src = _with_cues(tmp_path, [(0, 800, b"long"), (300, 0, b"flash"), (320, 100, b"short")])
    out = str(tmp_path / "cut.mkv")
    stats = transcode(src, out, TranscodeOptions(from_seconds=0.3, overwrite=True))
    assert stats.frames > 0
    times = _cue_times(out)
    assert len(times) == 3
    assert [t for t, _ in times] == sorted(t for t, _ in times)


@pytest.mark.vulkan
def test_a_cue_that_ends_before_it_starts_is_not_held_to_the_end(tmp_path: Path) -> None:
    # FFmpeg reads such a cue's duration as 4294967096 ticks (an unsigned difference): it was taken as
    # shown to the end, held, and written at 0 after the cue behind it. Its duration is now unknown:
    # a cue of unknown length that starts before the part is over before it.
    src = _with_cues(tmp_path, [(200, 4294967096, b"backwards"), (350, 100, b"next")])
    out = str(tmp_path / "cut.mkv")
    transcode(src, out, TranscodeOptions(from_seconds=0.3, overwrite=True))
    assert _cue_times(out) == [(50, 100)]


def test_a_copy_error_names_its_stream() -> None:
    class Refuses:
        def mux(self, packet: object) -> None:
            raise av.error.ArgumentError(22, "Invalid argument")

    copier = StreamCopier.__new__(StreamCopier)
    copier._out = Refuses()  # type: ignore[assignment]
    source = InputStream(index=2, kind=StreamKind.SUBTITLE, codec="ass")
    holder = av.open(io.BytesIO(), "w", format="matroska")
    stream_out = holder.add_mux_stream("subrip", time_base=MS)
    entry = SimpleNamespace(text_to=None, source=source, last_dts=None, stream_out=stream_out, packets=0)
    packet = av.Packet(b"x")
    packet.pts = packet.dts = 0
    with pytest.raises(EncoderError, match=r"writing stream 2 \(subtitle ass\)"):
        copier._write(entry, packet)  # type: ignore[arg-type]


@pytest.mark.vulkan
def test_an_audio_stream_with_no_data_is_dropped_with_the_reason(tmp_path: Path) -> None:
    # A transport stream whose audio has a header and no packets (a file cut short): FFmpeg finds no
    # sample rate, and the Matroska muxer refused the copy ("sample rate not set").
    clip = make_clip(tmp_path / "base.mkv", frames=30)
    src = str(tmp_path / "no_audio_data.ts")
    with av.open(clip.path) as inp, av.open(src, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        out.add_stream("mp2", rate=48000)
        for packet in inp.demux():
            if packet.dts is not None:
                packet.stream = video
                out.mux(packet)
    stats = transcode(src, str(tmp_path / "out.mkv"), TranscodeOptions(overwrite=True))
    assert stats.frames == 30
    (dropped,) = stats.dropped_streams
    assert dropped.index == 1 and "sample rate is not known" in dropped.reason


@pytest.mark.vulkan
def test_frame_at_finds_the_frame_on_display_on_a_coarse_clock(tmp_path: Path) -> None:
    # AVI counts in frames (time base 1/10 here): a time was rounded to the nearest tick, so 0.46 s
    # found frame 5 (shown from 0.5 s) and 0.95 s was "past the end" of a 1 s clip.
    import alpha2

    src = str(tmp_path / "ten.avi")
    make_clip(src, codec="mpeg4", frames=10, rate=10, width=64, height=48)
    with alpha2.open(src, hwaccel="none") as source:
        for seconds, shown in ((0.0, 0.0), (0.46, 0.4), (0.5, 0.5), (0.95, 0.9), (0.999, 0.9)):
            frame = source.frame_at(seconds)
            assert frame is not None, seconds
            try:
                assert frame.pts_seconds == pytest.approx(shown), (seconds, frame.pts_seconds)
            finally:
                frame.release()
        frames = source.frames_at([0.46, 0.95])
        try:
            assert [f.pts_seconds for f in frames] == pytest.approx([0.4, 0.9])
        finally:
            for frame in frames:
                frame.release()


def test_a_note_many_streams_share_is_said_once() -> None:
    # A file of 20 audio tracks, each encoded again the same way, had its note 20 times in a row.
    from alpha2.ffmpeg_bridge.side_streams import CopyReport

    report = CopyReport(notes=["re-encoded aac to libopus: cut"] * 20 + ["re-encoded (flac): cut"])
    assert report.audio_note() == "re-encoded aac to libopus: cut (20 streams); re-encoded (flac): cut"
    assert CopyReport().audio_note() is None


def test_a_video_shorter_than_its_audio_is_not_called_truncated(tmp_path: Path) -> None:
    # A Matroska file whose audio runs 2 s past the video: the video stream says no duration of its
    # own, the container's is the audio's, and every transcode said "the input ends before the
    # duration its container announces". The track's DURATION tag is the video's length.
    from alpha2.ffmpeg_bridge.media import _tagged_duration

    assert _tagged_duration({"DURATION": "00:00:02.007000000"}, fractions.Fraction(1, 1000)) == 2007
    assert _tagged_duration({"duration": "01:02:03.5"}, fractions.Fraction(1, 10)) == 37235
    assert _tagged_duration({"DURATION": "soon"}, MS) is None and _tagged_duration({}, MS) is None

    clip = make_clip(tmp_path / "short.mkv", frames=30, rate=30)
    src = str(tmp_path / "long_audio.mkv")
    with av.open(clip.path) as inp, av.open(src, "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        sound = out.add_stream("libopus", rate=48000)
        sound.layout = "mono"
        for packet in inp.demux():
            if packet.dts is not None:
                packet.stream = video
                out.mux(packet)
        silence = av.AudioFrame(format="s16", layout="mono", samples=960)
        for plane in silence.planes:
            plane.update(bytes(plane.buffer_size))
        for i in range(150):  # 3 s
            silence.sample_rate, silence.pts = 48000, i * 960
            for packet in sound.encode(silence):
                out.mux(packet)
        for packet in sound.encode(None):
            out.mux(packet)
    stats = transcode(src, str(tmp_path / "out.mp4"), TranscodeOptions(overwrite=True))
    assert stats.frames == 30
    assert not stats.as_dict()["decode"]["truncated"], stats.as_dict()["decode"]


def test_numbered_presets_are_checked_before_anything_opens() -> None:
    # SVT-AV1's preset and libvpx's cpu-used are numbers: 'fast' failed as "Invalid argument" when the
    # encoder opened (after any input was opened), 20 the same.
    from alpha2.api.transcode_plan import check_preset
    from alpha2.gpu.errors import InvalidInputError

    check_preset("libsvtav1", "12")
    check_preset("libvpx-vp9", "-8")
    check_preset("libsvtav1", None)
    for encoder, preset in (("libsvtav1", "fast"), ("libsvtav1", "20"), ("libvpx-vp9", "9")):
        with pytest.raises(InvalidInputError, match=r"takes a number from -?\d+ to \d+"):
            check_preset(encoder, preset)
    check_preset("libx264", "veryfast")  # named presets as before


def test_a_misspelt_option_field_is_a_typed_error() -> None:
    # TranscodeOptions(sizee=...) and PlayOptions(ofscreen=...) raised the dataclass's bare TypeError.
    import dataclasses
    import pickle

    from alpha2.api.playback import PlayOptions
    from alpha2.gpu.errors import InvalidInputError

    with pytest.raises(
        InvalidInputError, match=r"TranscodeOptions\(\) got an unknown option 'sizee'; did you mean size"
    ):
        TranscodeOptions(sizee=1)  # type: ignore[call-arg]
    with pytest.raises(InvalidInputError, match="did you mean offscreen"):
        PlayOptions(ofscreen=True)  # type: ignore[call-arg]
    options = TranscodeOptions(frames=5)
    assert dataclasses.replace(options, crf=20.0).crf == 20.0
    assert pickle.loads(pickle.dumps(options)) == options  # batch sends them to its workers


def test_an_output_with_the_longest_name_a_file_may_have_is_written(tmp_path: Path) -> None:
    # The hidden partial file is '.NAME.TOKEN.partial.EXT': for a 255-byte output name it was longer
    # than a name may be ('File name too long'), for the transcoder's and the atomic writes' alike.
    from alpha2.ffmpeg_bridge.containers import NAME_MAX_BYTES, partial_name

    long_name = "é" * 120 + "x" * 11 + ".mp4"  # 255 bytes in UTF-8
    assert len(long_name.encode()) == NAME_MAX_BYTES
    partial = partial_name(long_name, "0123456789ab")
    assert len(partial.encode()) <= NAME_MAX_BYTES and partial.endswith(".0123456789ab.partial.mp4")
    assert partial.startswith(".éé")  # cut on a character's boundary
    assert partial_name("clip.mp4", "t") == ".clip.t.partial.mp4"  # short names as they were

    clip = make_clip(tmp_path / "in.mp4", frames=6)
    out = tmp_path / long_name
    stats = transcode(clip.path, str(out), TranscodeOptions(overwrite=True))
    assert stats.frames == 6 and out.is_file()
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def _song_with_cover(path: Path) -> str:
    """Three seconds of MP3 and a 48x32 MJPEG cover (an attached picture, as music files carry)."""
    import numpy as np

    with av.open(str(path), "w") as out:
        sound = out.add_stream("libmp3lame", rate=44100)
        sound.layout = "mono"
        cover = out.add_stream("mjpeg", rate=1)
        cover.width, cover.height, cover.pix_fmt = 48, 32, "yuvj420p"
        cover.disposition = av.stream.Disposition.attached_pic
        picture = av.VideoFrame.from_ndarray(np.full((32, 48, 3), 200, np.uint8), format="rgb24")
        packets = list(cover.encode(picture.reformat(format="yuvj420p"))) + list(cover.encode(None))
        for packet in packets:
            packet.pts = packet.dts = None
            out.mux(packet)
        silence = av.AudioFrame(format="s16p", layout="mono", samples=1152)
        for plane in silence.planes:
            plane.update(bytes(plane.buffer_size))
        for i in range(115):  # 3 s
            silence.sample_rate, silence.pts = 44100, i * 1152
            for packet in sound.encode(silence):
                out.mux(packet)
        for packet in sound.encode(None):
            out.mux(packet)
    return str(path)


@pytest.mark.vulkan
def test_an_audio_files_cover_art_is_a_still_shown_throughout(tmp_path: Path) -> None:
    # alpha2.open of a song with cover art: len() said 0 and frame_at(0.5) "no frame is on display" (the
    # picture has no timestamp, and the demuxer hands it out once, before any seek).
    import alpha2
    from alpha2.api.errors import EndOfStreamError

    src = _song_with_cover(tmp_path / "song.mp3")
    with alpha2.open(src, hwaccel="none") as source:
        assert len(source) == 1
        for seconds in (0.0, 1.5, 2.9, 0.2):  # a jump back too
            frame = source.frame_at(seconds)
            try:
                assert (frame.width, frame.height) == (48, 32)
                assert abs(int(frame.to_ndarray()[16, 24, 0]) - 200) <= 3
            finally:
                frame.release()
        with pytest.raises(EndOfStreamError):
            source.frame_at(3.5)
        frames = source.frames_at([2.0, 0.5])
        assert len(frames) == 2 and all(f.width == 48 for f in frames)
        for frame in frames:
            frame.release()


@pytest.mark.vulkan
def test_h264_with_b_frames_in_avi_has_its_frames_in_time_order(tmp_path: Path) -> None:
    # AVI stores no presentation times: FFmpeg's demuxer times the packets in decode order and the
    # decoder hands each frame out with its own packet's time, so B-frames came out at 1, 3, 4, 2, ...
    # ticks; frames_at found the wrong frames. Each frame now takes the next packet time in order.
    import numpy as np

    import alpha2

    src = str(tmp_path / "bframes.avi")
    with av.open(src, "w") as out:
        options = {"bf": "2", "preset": "veryfast", "x264-params": "b-adapt=0"}  # B-frames, always
        stream = out.add_stream("libx264", rate=25, options=options)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for i in range(20):
            rgb = np.full((48, 64, 3), (i * 12) % 256, np.uint8)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    with av.open(src) as check:  # the input has the fault: its decoded times go back
        raw = [f.pts for f in check.decode(video=0)]
    assert raw != sorted(raw), raw
    with alpha2.open(src, hwaccel="none") as source:
        times = [f.pts_seconds for f in source]
        assert times == sorted(times) and len(times) == 20
        levels = []
        for index in (13, 2, 19, 7):
            (frame,) = source.frames_at_index([index])
            levels.append(int(frame.to_ndarray()[24, 32, 0]))
            frame.release()
    # Frame i is grey (i * 12): each index found its own frame (YUV rounding aside).
    assert all(abs(level - (i * 12) % 256) <= 3 for level, i in zip(levels, (13, 2, 19, 7))), levels


@pytest.mark.vulkan
def test_the_json_reason_says_where_the_frames_went(tmp_path: Path) -> None:
    # On a CPU device swscale takes a scale, and --json's "reason" still began "GPU: ..." (the plan is
    # made before the route is chosen) beside "mode": "cpu".
    clip = make_clip(tmp_path / "in.mp4", width=128, height=96, frames=3)
    from alpha2.gpu.geometry import Size

    stats = transcode(
        clip.path, str(tmp_path / "out.mp4"), TranscodeOptions(size=Size(64, 48), overwrite=True)
    )
    data = stats.as_dict()
    if data["mode"] == "cpu":
        assert data["reason"].startswith("CPU (swscale): scale 128x96 -> 64x48"), data["reason"]
    else:
        assert data["reason"].startswith("GPU: scale 128x96 -> 64x48"), data["reason"]
    gpu = transcode(
        clip.path, str(tmp_path / "gpu.mp4"), TranscodeOptions(size=Size(64, 48), gpu=True, overwrite=True)
    ).as_dict()
    assert gpu["mode"] == "gpu" and gpu["reason"].startswith("GPU: "), gpu["reason"]


@pytest.mark.parametrize("value", ["3", "-0.5", "nan", "loud"])
def test_a_volume_out_of_range_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    # It was refused only once playing began, with exit status 1; the other option errors are usage
    # errors (status 2) that name the option.
    import argparse

    from alpha2.apps import player

    parser = argparse.ArgumentParser(prog="alpha2")
    player.register(parser.add_subparsers())
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["play", "x.mp4", "--volume", value])
    assert stop.value.code == 2
    assert "argument --volume: expected a number from 0 to 2" in capsys.readouterr().err


@pytest.mark.vulkan
def test_loop_offscreen_plays_again_until_frames(tmp_path: Path) -> None:
    # --loop --offscreen --frames 20 of a 6-frame clip rendered 6 frames, with nothing said.
    from alpha2.api import pipeline
    from alpha2.api.playback import Player, PlayOptions

    clip = make_clip(tmp_path / "six.mp4", frames=6)
    for options, frames, said in (
        (PlayOptions(loop=True, frames=20, audio=False), 20, False),
        (PlayOptions(loop=True, audio=False), 6, True),
    ):
        player = Player(clip.path, options, pipeline.Progress())
        try:
            stats = player.offscreen("--offscreen")
        finally:
            player.close(True)
        assert stats.frames == frames
        assert ("--loop not taken" in stats.mode_reason) is said
