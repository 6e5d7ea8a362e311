"""alpha2.open reads ``hwaccel`` as StreamGroup, DecodeProcess and the bridge do (None is 'none', as
PyAV's ``hwaccel=None``; the enum and any case of its names), and ``with`` on a closed source says it is
closed at once instead of entering (an outside pass: ``alpha2.open(path, hwaccel=None)`` was refused
where StreamGroup took it, and ``with`` on a closed source entered, the first read failing later)."""

from __future__ import annotations

import pytest

import alpha2
from alpha2.api.errors import EndOfStreamError
from alpha2.ffmpeg_bridge.hwdevice import HwAccelMode
from alpha2.gpu.errors import ClosedError, InvalidInputError
from tests.media import make_clip


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_clip(tmp_path_factory.mktemp("open") / "clip.mp4", width=64, height=48, frames=3).path


@pytest.mark.parametrize("hwaccel", [None, "none", "NONE", HwAccelMode.NONE])
def test_software_decoding_is_asked_alike(clip: str, hwaccel: object) -> None:
    with alpha2.open(clip, hwaccel=hwaccel) as source:  # type: ignore[arg-type]
        assert source.hwaccel == "none: software decoding was requested"
        frame = source.next_frame()
        assert frame is not None
        frame.release()


def test_a_bad_hwaccel_names_the_choices(clip: str) -> None:
    with pytest.raises(InvalidInputError, match="hwaccel must be one of 'auto', 'cuda', 'none', got 'nvdec'"):
        alpha2.open(clip, hwaccel="nvdec")


def test_with_on_a_closed_source_says_it_is_closed(clip: str) -> None:
    source = alpha2.open(clip, hwaccel="none")
    source.close()
    with pytest.raises(ClosedError, match="was closed; open the file again"):
        with source:
            pass
    with alpha2.open(clip, hwaccel="none") as fresh:  # an open source still enters
        frame = fresh.next_frame()
        assert frame is not None
        frame.release()


def test_a_time_a_hair_before_the_end_is_said_to_be_the_end(tmp_path_factory: pytest.TempPathFactory) -> None:
    """48 frames at 30 fps end at 1.6 s: 1.599 s is the last frame's, 1.5999999 s (under a microsecond
    before the end) is the end, and the message says why instead of 'is 1.600 s long' alone."""
    path = make_clip(tmp_path_factory.mktemp("end") / "end.mp4", width=64, height=48, frames=48).path
    with alpha2.open(path, hwaccel="none") as source:
        frame = source.frame_at(1.599)
        assert frame.pts_seconds == pytest.approx(47 / 30)
        frame.release()
        with pytest.raises(EndOfStreamError, match=r"ends at 1\.6 s, and times are read to the microsecond"):
            source.frame_at(1.5999999)
        with pytest.raises(EndOfStreamError, match=r"is 1\.600 s long; ask for an earlier time"):
            source.frame_at(1.6)
        with pytest.raises(EndOfStreamError, match=r"at 1\.5999999 s: .* ends at 1\.6 s"):
            source.frames_at([0.5, 1.5999999])
