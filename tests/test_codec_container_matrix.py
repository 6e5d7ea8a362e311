"""Every codec alpha2 writes, into every video output: written with a video stream that decodes, or
refused before anything is written naming the outputs that do hold it. Writing each codec into each
output found VP8, ProRes, MJPEG and FFV1 .ts files holding a 'bin_data' stream and no video (ended 0),
VP8 into .mov failing mid-run ('Not yet implemented in FFmpeg'), and MPEG-1 refusing to open
('Invalid argument') everywhere but AVI."""

from __future__ import annotations

from pathlib import Path

import av
import pytest

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
    path = tmp_path_factory.mktemp("matrix") / "in.mp4"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = 160, 96, "yuv420p"
        for i in range(6):
            frame = av.VideoFrame(160, 96, "yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


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
