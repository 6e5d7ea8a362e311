"""Every codec alpha2 writes, into every video output: written with a video stream that decodes, or
refused before anything is written naming the outputs that do hold it. Writing each codec into each
output found VP8, ProRes, MJPEG and FFV1 .ts files holding a 'bin_data' stream and no video (ended 0),
VP8 into .mov failing mid-run ('Not yet implemented in FFmpeg'), and MPEG-1 refusing to open
('Invalid argument') everywhere but AVI."""

from __future__ import annotations

import fractions
from pathlib import Path

import av
import pytest
from media import make_clip

from alpha2.api.transcode_plan import TranscodeOptions
from alpha2.api.transcoder import transcode
from alpha2.gpu.errors import InvalidInputError

HELD = [
    ("vp8", ".mkv"),
    ("vp8", ".webm"),
    ("vp8", ".avi"),
    ("mpeg1video", ".mp4"),
    ("mpeg1video", ".mkv"),
    ("mpeg1video", ".ts"),
    ("mpeg2video", ".ts"),
    ("mjpeg", ".mov"),
    ("ffv1", ".mkv"),
    ("prores", ".mov"),
]

REFUSED = [
    ("vp8", ".ts", ".webm"),
    ("vp8", ".mov", ".mkv"),
    ("prores", ".ts", ".mov"),
    ("mjpeg", ".ts", ".avi"),
    ("ffv1", ".ts", ".nut"),
    ("vp9", ".ts", ".webm"),
]


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_clip(tmp_path_factory.mktemp("matrix") / "in.mp4", "h264", 160, 96, frames=6).path


@pytest.mark.parametrize(("codec", "ext"), HELD, ids=[f"{c}{e}" for c, e in HELD])
def test_a_codec_an_output_holds_is_written_as_video(clip: str, tmp_path: Path, codec: str, ext: str) -> None:
    output = tmp_path / f"out{ext}"
    transcode(clip, output, TranscodeOptions(codec=codec, frames=4))
    with av.open(str(output)) as container:
        assert [s.type for s in container.streams] == ["video"]
        assert sum(1 for _ in container.decode(video=0)) == 4


@pytest.mark.parametrize(("codec", "ext", "holder"), REFUSED, ids=[f"{c}{e}" for c, e, _ in REFUSED])
def test_a_codec_an_output_cannot_hold_is_refused_naming_those_that_can(
    clip: str, tmp_path: Path, codec: str, ext: str, holder: str
) -> None:
    output = tmp_path / f"out{ext}"
    with pytest.raises(InvalidInputError, match="cannot hold") as refused:
        transcode(clip, output, TranscodeOptions(codec=codec, frames=4))
    said = str(refused.value)
    assert holder in said and f"{ext}," not in said and "write it into" in said, said
    assert list(tmp_path.iterdir()) == [], "nothing is left behind"


def _ts_with_adts_audio(path: Path) -> str:
    """MPEG-2 video with AAC audio in MPEG-TS (which carries AAC in its ADTS form, no decoder config)."""
    import numpy as np

    with av.open(str(path), "w") as out:
        video = out.add_stream("mpeg2video", rate=25)
        video.width, video.height, video.pix_fmt = 160, 96, "yuv420p"
        audio = out.add_stream("aac", rate=48000, layout="stereo")
        for i in range(10):
            frame = av.VideoFrame(160, 96, "yuv420p")
            frame.pts = i
            for packet in video.encode(frame):
                out.mux(packet)
        samples = np.zeros((2, 1024), np.float32)
        for i in range(20):
            sound = av.AudioFrame.from_ndarray(samples, format="fltp", layout="stereo")
            sound.sample_rate, sound.pts = 48000, i * 1024
            for packet in audio.encode(sound):
                out.mux(packet)
        for stream in (video, audio):
            for packet in stream.encode(None):
                out.mux(packet)
    return str(path)


@pytest.mark.parametrize("copy", [False, True], ids=["transcode", "copy"])
def test_adts_aac_into_avi_is_encoded_again_and_said(tmp_path: Path, copy: bool) -> None:
    """'alpha2 transcode x.ts y.avi' failed mid-run with 'writing stream 1 (audio aac): Invalid argument':
    the AVI muxer needs AAC's decoder config, which ADTS packets do not carry."""
    source = _ts_with_adts_audio(tmp_path / "in.ts")
    output = tmp_path / "out.avi"
    stats = transcode(source, output, TranscodeOptions(codec="copy" if copy else None))
    with av.open(str(output)) as container:
        assert sorted(s.type for s in container.streams) == ["audio", "video"]
        assert sum(1 for _ in container.decode(audio=0)) > 0
    assert "ADTS" in str(stats.encoder.get("audio")), stats.encoder


def test_a_vp8_copy_into_mov_is_refused_before_writing(tmp_path: Path) -> None:
    source = tmp_path / "in.webm"
    transcode(_red(tmp_path), source, TranscodeOptions(codec="vp8"))
    output = tmp_path / "out.mov"
    with pytest.raises(InvalidInputError, match="takes no vp8"):
        transcode(str(source), output, TranscodeOptions(codec="copy"))
    assert not output.exists() and not [p for p in tmp_path.iterdir() if "partial" in p.name]


def _red(tmp_path: Path) -> str:
    return make_clip(tmp_path / "src.mp4", "h264", 160, 96, frames=4).path


def test_a_copy_into_avi_keeps_the_frame_rate(tmp_path: Path) -> None:
    """AVI stores a frame rate: a copy on the input's clock said 600 fps (MPEG-TS's 1/90000 became 1/600)
    and padded the index with empty frames (166 for 8)."""
    source = _ts_with_adts_audio(tmp_path / "in.ts")
    output = tmp_path / "out.avi"
    transcode(source, output, TranscodeOptions(codec="copy"))
    with av.open(str(output)) as container:
        video = container.streams.video[0]
        assert video.time_base == fractions.Fraction(1, 25) and video.average_rate == 25
        assert 10 <= (video.frames or 0) <= 11, video.frames  # (one more where the sound starts first)
        assert sum(1 for _ in container.decode(video=0)) == 10


@pytest.mark.parametrize(("codec", "ext"), [("mpeg4", ".avi"), ("ffv1", ".nut"), ("mpeg4", ".mkv")])
def test_an_output_that_keeps_no_colour_tags_is_written_in_the_matrix_readers_guess(
    tmp_path: Path, codec: str, ext: str
) -> None:
    """FFV1 and MPEG-4 in AVI or NUT keep no colour tags, so every reader guesses the matrix from the
    size (BT.601 below HD): a Writer's 160x96 BT.709 green came back 15/234/5 from an MPEG-4 AVI."""
    import numpy as np

    import alpha2

    output = tmp_path / f"green{ext}"
    green = np.zeros((96, 160, 3), np.uint8)
    green[..., 1] = 200
    with alpha2.create(output, codec=codec) as writer:
        for _ in range(3):
            writer.write(green)
    with av.open(str(output)) as container:
        rgb = next(container.decode(video=0)).to_ndarray(format="rgb24").reshape(-1, 3).mean(axis=0)
    assert abs(rgb[1] - 200) < 4 and rgb[0] < 4 and rgb[2] < 4, rgb


def test_a_transcode_into_an_untagged_output_says_the_matrix_it_converts_to(tmp_path: Path) -> None:
    source = make_clip(tmp_path / "hd.mp4", "h264", 1280, 720, frames=3, colorspace=1).path
    stats = transcode(str(source), tmp_path / "sd.avi", TranscodeOptions(codec="mpeg4", size=(320, 180)))
    assert stats.plan is not None
    assert "matrix BT709 -> BT.601 (the avi container keeps no colour tags for mpeg4" in stats.plan.reason
    kept = transcode(str(source), tmp_path / "hd.avi", TranscodeOptions(codec="mpeg4"))
    assert kept.plan is not None and "matrix" not in kept.plan.reason  # HD is read as BT.709: kept


def test_a_full_range_picture_into_an_untagged_output_is_written_limited(tmp_path: Path) -> None:
    """FFV1 in AVI keeps no range tag either, so readers take it as limited: full-range black (Y' 0) went
    in as it was and read back below black; it is converted to limited (16), and kept full in Matroska."""
    import numpy as np

    source = tmp_path / "full.mkv"
    with av.open(str(source), "w") as out:
        stream = out.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = 160, 96, "yuv420p"
        stream.codec_context.colorspace, stream.codec_context.color_range = 1, 2
        for i in range(3):
            frame = av.VideoFrame(160, 96, "yuv420p")
            frame.pts, frame.colorspace, frame.color_range = i, 1, 2
            for plane, value in zip(frame.planes, (0, 128, 128), strict=True):
                np.frombuffer(plane, np.uint8)[:] = value
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    for ext, luma in ((".avi", 16), (".mkv", 0)):
        stats = transcode(str(source), tmp_path / f"out{ext}", TranscodeOptions(codec="ffv1"))
        with av.open(str(tmp_path / f"out{ext}")) as container:
            frame = next(container.decode(video=0))
            assert int(np.frombuffer(frame.planes[0], np.uint8)[0]) == luma, ext
        assert stats.plan is not None
        assert ("full range -> limited" in stats.plan.reason) is (ext == ".avi"), stats.plan.reason
