"""VP9 with alpha in WebM: the alpha is stored beside the picture (BlockAdditions, ``alpha_mode`` 1),
and FFmpeg's own vp9 decoder leaves it out (ffprobe says yuv420p). ``alpha2 probe`` said nothing of
it, so that a user saw no sign that the alpha is not shown or transcoded."""

from __future__ import annotations

from pathlib import Path

import av
import pytest
from media import make_clip

from alpha2.apps.cli import main
from alpha2.ffmpeg_bridge.describe import describe_file


def _alpha_webm(path: Path) -> str:
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libvpx-vp9", rate=25, options={"deadline": "realtime", "cpu-used": "8"})
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuva420p"
        for i in range(3):
            frame = av.VideoFrame(64, 48, "yuva420p")
            for plane in frame.planes:
                plane.update(bytes([60 + 40 * i]) * plane.buffer_size)
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def test_probe_says_the_alpha_is_not_decoded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _alpha_webm(tmp_path / "alpha.webm")
    (video,) = describe_file(path).streams
    assert video.alpha_beside
    assert main(["probe", path]) == 0
    assert "alpha stored beside, not decoded" in " ".join(capsys.readouterr().out.split())


def test_a_webm_without_alpha_says_nothing(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "plain.webm", "vp9", frames=3)
    (video,) = describe_file(clip.path).streams
    assert not video.alpha_beside
