"""FFmpeg's cuvid decoder for HEVC on NVDEC (alpha2.ffmpeg_bridge.cuvid), the default where it suits the
stream: the streams it takes, and on the GPU machine that its frames are the NVDEC hwaccel's (times,
durations, planes, after a seek too)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import av
import numpy as np
import pytest
from media import make_clip

from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.ffmpeg_bridge.cuvid import ENV, choice, refusal
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat

ON = {ENV: "cuvid"}


def _params(**changes: Any) -> SimpleNamespace:
    base = {"name": "hevc", "profile": "Main", "width": 1920, "height": 1080, "color_trc": 1}
    return SimpleNamespace(**{**base, **changes})


def test_hevc_main_and_main10_of_even_size_take_the_cuvid_decoder() -> None:
    assert refusal(_params(), environ=ON) is None
    assert refusal(_params(profile="Main 10", color_trc=2), environ=ON) is None


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"name": "h264"}, "no cuvid decoder is used for h264"),
        ({"profile": "Rext"}, "HEVC profile 'Rext'"),
        ({"width": 1919}, "1919x1080"),
        ({"color_trc": 16}, "HDR video"),
        ({"color_trc": 18}, "HDR video"),
    ],
)
def test_other_streams_keep_the_hwaccel_and_say_why(changes: dict[str, Any], said: str) -> None:
    why = refusal(_params(**changes), environ=ON)
    assert why is not None and said in why


def test_decode_order_timing_keeps_the_hwaccel() -> None:
    why = refusal(_params(), retimed=True, environ=ON)
    assert why is not None and "decode order" in why


def test_the_cuvid_decoder_is_the_default_and_the_hwaccel_is_asked_for() -> None:
    assert choice({}) == "cuvid" and refusal(_params(), environ={}) is None
    assert choice({ENV: " CUVID "}) == "cuvid" and choice({ENV: "HwAccel"}) == "hwaccel"
    assert refusal(_params(), environ={ENV: "hwaccel"}) == f"the NVDEC hwaccel ({ENV}=hwaccel)"
    with pytest.raises(InvalidInputError, match=ENV):
        choice({ENV: "cuvid-please"})


def test_a_real_hevc_streams_parameters_are_read(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "m.mkv", "hevc", 64, 48, 4)
    with av.open(clip.path) as container:
        cc = container.streams.video[0].codec_context
        assert refusal(cc, environ=ON) is None, (cc.profile, cc.width, cc.height, cc.color_trc)


# -- on the GPU machine ---------------------------------------------------------------------------


def _frames(path: str, seek_to: float | None = None) -> tuple[str, list[tuple[Any, ...]]]:
    """The decoder's name and every frame's (pts, duration, key, Y, UV) from a session on NVDEC."""
    rows = []
    with DecodeSession(path, hwaccel="cuda", cuda_ordinal=0) as session:
        if seek_to is not None:
            session.seek(seek_to)
        for frame in session:
            assert frame.on_gpu and frame.pixel_format in (PixelFormat.NV12, PixelFormat.P010)
            assert isinstance(frame.keep_alive, av.VideoFrame)
            sw = frame.keep_alive.reformat(format="nv12")  # downloaded for the comparison
            y = np.frombuffer(memoryview(sw.planes[0]), np.uint8).reshape(-1, sw.planes[0].line_size)
            uv = np.frombuffer(memoryview(sw.planes[1]), np.uint8).reshape(-1, sw.planes[1].line_size)
            w, h = frame.metadata.display_size.width, frame.metadata.display_size.height
            rows.append(
                (
                    frame.metadata.pts,
                    frame.metadata.duration,
                    frame.metadata.key_frame,
                    y[:h, :w].copy(),
                    uv[: h // 2, :w].copy(),
                )
            )
            frame.release()
        return session.hwaccel_report.decoder, rows


def _same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> None:
    assert [r[:3] for r in a] == [r[:3] for r in b]
    for got, want in zip(a, b, strict=True):
        np.testing.assert_array_equal(got[3], want[3])
        np.testing.assert_array_equal(got[4], want[4])


@pytest.mark.nvidia
@pytest.mark.parametrize("vfr", [False, True])
def test_cuvid_frames_are_the_hwaccels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vfr: bool) -> None:
    clip = make_clip(tmp_path / "c.mkv", "hevc", 320, 240, 30, vfr=vfr, gop=10)
    monkeypatch.setenv(ENV, "cuvid")
    decoder, frames = _frames(clip.path)
    assert decoder == "hevc_cuvid"
    _, sought = _frames(clip.path, seek_to=float(clip.pts[17] * clip.time_base))
    monkeypatch.setenv(ENV, "hwaccel")
    decoder, reference = _frames(clip.path)
    assert decoder == "hevc"
    _same(frames, reference)
    assert len(frames) == 30
    first = sought[0][0]
    _same(sought, [r for r in reference if r[0] >= first])


class _FailingCuvid:
    """A stand-in for the cuvid decoder that refuses its first packet (as cuvid refuses a stream its
    parser cannot take), named as FFmpeg names it."""

    name = "hevc_cuvid"

    def __init__(self, own: Any) -> None:
        self._own = own

    def decode(self, packet: Any = None) -> list[Any]:
        raise av.error.InvalidDataError(1094995529, "Invalid data found when processing input")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._own, name)


def test_a_cuvid_failure_before_the_first_frame_hands_over_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hand-over is the path's report: the stream's own decoder decodes every frame from the start,
    and the session's report names it and says why."""
    clip = make_clip(tmp_path / "h.mkv", "h264", 64, 48, 12, gop=4)
    with DecodeSession(clip.path, hwaccel="none") as plain:
        reference = [frame.metadata.pts for frame in plain]
    original = DecodeSession._open

    def open_with_cuvid(self: DecodeSession, plan: Any) -> Any:
        report = original(self, plan)
        self._decoder = _FailingCuvid(self._decoder)
        return dataclasses.replace(report, decoder="hevc_cuvid")

    monkeypatch.setattr(DecodeSession, "_open", open_with_cuvid)
    with DecodeSession(clip.path, hwaccel="none") as session:
        pts = [frame.metadata.pts for frame in session]
        report = session.hwaccel_report
    assert pts == reference and len(pts) == 12
    assert report.decoder == "h264"
    assert "the cuvid decoder failed" in report.reason and "took over" in report.reason


class _IntraKeyedCuvid:
    """A stand-in for the cuvid decoder, decoding with a codec context of its own, that hands frames out
    as cuvid does: without their packets' durations, and every one called key (cuvid calls key any
    picture coded wholly intra; FFmpeg's own decoders only a random access point)."""

    name = "hevc_cuvid"

    def __init__(self, stream_context: Any) -> None:
        self._ctx: Any = av.CodecContext.create(stream_context.name, "r")
        self._ctx.extradata = stream_context.extradata

    def decode(self, packet: Any = None) -> list[Any]:
        frames = self._ctx.decode(packet)
        for frame in frames:
            frame.key_frame = True
            frame.duration = 0
        return list(frames)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


def test_cuvid_frames_take_their_packets_durations_and_key_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found on the H200: a picture x265 coded wholly intra, not a random access point, came out of
    hevc_cuvid called key, where the hwaccel (and the demuxer's packet) said not."""
    clip = make_clip(tmp_path / "k.mkv", "h264", 64, 48, 12, gop=4)
    with DecodeSession(clip.path, hwaccel="none") as plain:
        reference = [(f.metadata.pts, f.metadata.duration, f.metadata.key_frame) for f in plain]
    original = DecodeSession._open

    def open_with_cuvid(self: DecodeSession, plan: Any) -> Any:
        report = original(self, plan)
        assert self._stream is not None
        self._decoder = _IntraKeyedCuvid(self._stream.codec_context)
        return dataclasses.replace(report, decoder="hevc_cuvid")

    monkeypatch.setattr(DecodeSession, "_open", open_with_cuvid)
    with DecodeSession(clip.path, hwaccel="none") as session:
        rows = [(f.metadata.pts, f.metadata.duration, f.metadata.key_frame) for f in session]
    assert [key for *_, key in reference] == [i % 4 == 0 for i in range(12)]
    assert rows == reference
