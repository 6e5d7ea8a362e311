"""An outside QA pass of the wall, the segmented transcode, probe and sample: each test is a fault found
and fixed, with its input made here by PyAV."""

from __future__ import annotations

import os
from pathlib import Path

import av
import pytest
from media import make_clip

from alpha2.api.encoding import EncodeSession
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps.cli import main
from alpha2.apps.sample import write_sample
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size

# -- sample ---------------------------------------------------------------------------------------------


def test_sample_writes_ffv1(tmp_path: Path) -> None:
    """'alpha2 sample x.mkv --codec ffv1' failed with 'ffv1 takes no crf: it is lossless; leave crf out',
    though the user gave no crf: the sample passed its own crf 18 to every encoder."""
    out = tmp_path / "x.mkv"
    result = write_sample(str(out), duration_s=0.2, size=Size(64, 48), codec="ffv1", audio=False)
    assert result.codec == "ffv1"
    with av.open(str(out)) as container:
        assert container.streams.video[0].codec_context.name == "ffv1"
        assert len(list(container.decode(video=0))) == result.frames == 6


@pytest.mark.parametrize(("ext", "codec"), [(".ts", "vp9"), (".m2ts", "av1"), (".ts", "av1")])
def test_mpegts_refuses_vp9_and_av1_that_it_would_write_as_data(tmp_path: Path, ext: str, codec: str) -> None:
    """'alpha2 sample x.ts --codec av1' (and 'alpha2 transcode in.mp4 out.ts --codec vp9') said it wrote
    the file, whose video FFmpeg's mpegts muxer had written as a private data stream: 'alpha2 probe' and
    ffprobe read '#0 data unknown codec' and the audio, no video."""
    out = tmp_path / f"x{ext}"
    with pytest.raises(InvalidInputError, match=f"mpegts container cannot hold {codec}.*data stream"):
        EncodeSession(out, codec=codec, width=64, height=64)
    assert main(["sample", str(out), "--codec", codec, "--size", "64x64", "--duration", "0.1"]) == 1
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("codec", "size", "limit"),
    [("h264", (100_000, 100_000), "2x2 and 16384x16384"), ("hevc", (8, 8), "16x16 and 16384x16384")],
)
def test_encode_session_refuses_a_size_its_encoder_cannot_take(
    tmp_path: Path, codec: str, size: tuple[int, int], limit: str
) -> None:
    """'alpha2 sample x.mp4 --size 100000x100000' ended in 'internal error (MemoryError): Unable to allocate
    74.5 GiB', and '--codec hevc --size 8x8' in libx265's 'Invalid argument' at the first frame: the
    session took any size and the encoder's limits came into play only when it opened."""
    width, height = size
    with pytest.raises(InvalidInputError, match=f"{width}x{height} cannot be encoded with lib.*{limit}"):
        EncodeSession(tmp_path / "x.mp4", codec=codec, width=width, height=height)
    with pytest.raises(InvalidInputError, match=f"between {limit}"):
        write_sample(str(tmp_path / "y.mp4"), size=Size(width, height), codec=codec, audio=False)
    assert os.listdir(tmp_path) == []


# -- segments -------------------------------------------------------------------------------------------


def test_a_segmented_matroska_output_keeps_the_frame_rate(tmp_path: Path) -> None:
    """'alpha2 transcode in.mp4 out.mkv --segments 2' wrote a stream that probe and ffprobe said was
    1000 fps (Matroska's default frame duration, 1 ms) where the one-pipeline output said 25: the joined
    stream had no rate of its own, and the muxer took the H.264 VUI's, the tick of the encoder's
    1/12800 clock."""
    clip = make_clip(tmp_path / "in.mp4", frames=40, rate=25, gop=10)
    out = tmp_path / "out.mkv"
    stats = transcode(clip.path, str(out), TranscodeOptions(preset="ultrafast", segments=2))
    assert stats.segments is not None and stats.segments["segments"] == 2
    with av.open(str(out)) as container:
        video = container.streams.video[0]
        assert video.average_rate == 25
        assert len(list(container.decode(video))) == 40


def test_a_segmented_avi_output_is_written_in_one_pipeline(tmp_path: Path) -> None:
    """'alpha2 transcode in.mp4 out.avi --segments 2' failed after encoding every segment: 'joining the
    segments into ...partial.avi: Invalid data found when processing input' (AVI keeps a frame count, not
    the timestamps the join writes)."""
    clip = make_clip(tmp_path / "in.mp4", frames=40, rate=25, gop=10)
    out = tmp_path / "out.avi"
    stats = transcode(clip.path, str(out), TranscodeOptions(preset="ultrafast", segments=2))
    assert stats.segments is not None and stats.segments["segments"] == 1
    assert stats.segments["done"].startswith("one pipeline: the avi container keeps a frame count")
    with av.open(str(out)) as container:
        assert len(list(container.decode(video=0))) == stats.frames == 40


def test_a_broken_tiles_error_fits_its_tile() -> None:
    # The tile's text was wrapped by a count of characters and cut to the lines its height holds, the
    # rest left out without a sign: on a 300x133 tile of a 3 x 3 wall the error's last word was missing.
    # Now each line is wrapped to the width the font draws it, and a cut ends with an ellipsis.
    from alpha2.apps.osd import _font
    from alpha2.apps.wall import error_tile_lines
    from alpha2.gpu.geometry import Size

    message = (
        "'/some/folder/a_rather_long_broken_file_name.mp4' is not a media file FFmpeg can open "
        "(Invalid data found when processing input)"
    )
    source = "/some/folder/a_rather_long_broken_file_name.mp4"
    roomy = error_tile_lines(source, message, 16, Size(640, 360))
    assert " ".join(roomy[1:]).replace("  ", " ").endswith("processing input)")  # every word shown
    font = _font(16, False)
    assert all(font.getlength(line) <= 640 * 0.9 for line in roomy)
    cramped = error_tile_lines(source, message * 3, 11, Size(300, 133))
    assert cramped[-1].endswith("…") and len(cramped) <= 133 // 22
