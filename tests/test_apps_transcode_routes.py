"""``alpha2 transcode`` reports the encode copier's routes: frames per route, fallbacks, bytes."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.transcoder import TranscodeOptions, transcode

FRAMES = 4


def _clip(path: Path, pix_fmt: str) -> str:
    """A small lossless clip (ffv1) in ``pix_fmt``."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("ffv1", rate=30)
        stream.width, stream.height, stream.pix_fmt = 64, 48, pix_fmt
        for i in range(FRAMES):
            rgb = np.full((48, 64, 3), 40 * i, np.uint8)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format=pix_fmt)
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


@pytest.mark.vulkan
@pytest.mark.parametrize(
    "pix_fmt,route,fallback",
    [("yuv420p", "planes_cpu", None), ("gray", "rgba_cpu", "planes_cpu refused")],
    ids=["planes", "gray-falls-back-to-rgba"],
)
def test_encode_routes_in_the_stats(tmp_path: Path, pix_fmt: str, route: str, fallback: str | None) -> None:
    source = _clip(tmp_path / f"in-{pix_fmt}.mkv", pix_fmt)
    stats = transcode(source, str(tmp_path / "out.mkv"), TranscodeOptions(gpu=True, preset="ultrafast"))
    data = stats.as_dict()
    routes = data["encode_routes"]
    assert routes["frames"] == {route: FRAMES}
    assert routes["routes"]["planes_cuda"]["available"] is False
    assert routes["bytes_crossed_cpu"] == data["path_bytes"]["cpu_download"] > 0
    if fallback is None:
        assert routes["fallbacks"] == {}
        assert "render" not in data["stages"]
    else:
        [(reason, count)] = routes["fallbacks"].items()
        assert reason.startswith(fallback) and "not gray" in reason and count == FRAMES
        assert "render" in data["stages"]
    assert f"frames via {route}: {FRAMES}" in data["encode_report"]


def test_passthrough_has_no_encode_routes(tmp_path: Path) -> None:
    source = _clip(tmp_path / "in.mkv", "yuv420p")
    data = transcode(source, str(tmp_path / "out.mkv"), TranscodeOptions(codec="ffv1")).as_dict()
    assert data["mode"] == "passthrough"
    assert data["encode_routes"] is None and data["encode_report"] is None
