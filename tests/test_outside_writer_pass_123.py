"""Faults found by an outside pass over the writing APIs (helper 123): the Writer, transcode() and
open_audio, used from their docs only, outputs checked with PyAV."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import av
import numpy as np
import pytest
from media import make_clip

import alpha2
from alpha2.api import TranscodeOptions, transcode
from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourRange
from alpha2.gpu.errors import InvalidInputError


def test_writer_refuses_an_output_that_is_a_fifo_and_leaves_it(tmp_path: Path) -> None:
    # The output is written beside its name and renamed over it: alpha2.create('/dev/null', ...) run as
    # root replaced the device with a plain file after the whole encode (a FIFO stands in for it here).
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInputError, match=r"is a FIFO, not a file"):
        alpha2.create(fifo, codec="h264")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["pipe.mp4"]  # no hidden partial file either


def test_transcode_refuses_an_output_that_is_a_fifo(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "in.mkv", codec="ffv1", frames=3)
    fifo = tmp_path / "out.mkv"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInputError, match=r"'.*out\.mkv' is a FIFO"):
        transcode(clip.path, fifo, TranscodeOptions(codec="ffv1"))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_writer_still_replaces_a_plain_file_and_a_link(tmp_path: Path) -> None:
    old = tmp_path / "old.mp4"
    old.write_bytes(b"old")
    link = tmp_path / "link.mp4"
    link.symlink_to(tmp_path / "elsewhere.mp4")
    for out in (old, link):
        with alpha2.create(out, codec="h264") as writer:
            writer.write(np.zeros((16, 16, 3), np.uint8))
        assert out.stat().st_size > 100


def test_prores_of_an_odd_width_is_refused_typed_by_the_writer_and_cropped_by_transcode(
    tmp_path: Path,
) -> None:
    # FFmpeg's ProRes encoder (prores_aw) opens at even widths only, 4:4:4 too: decoded 65x49 yuv444p
    # frames written to it failed as EncoderError 'Invalid argument' (kind internal), and
    # `alpha2 transcode odd.mkv out.mov --codec prores` stopped with that line.
    clip = make_clip(tmp_path / "odd.mkv", codec="ffv1", width=65, height=49, frames=3, pix_fmt="yuv444p")
    refused = r"65x49 cannot be encoded with prores.*even widths"
    with alpha2.open(clip.path, hwaccel="none") as source:
        writer = alpha2.create(tmp_path / "w.mov", codec="prores")
        with source.next_frame() as frame, pytest.raises(InvalidInputError, match=refused):
            writer.write(frame)
        writer.abort()
    assert not (tmp_path / "w.mov").exists()
    with alpha2.open(clip.path, hwaccel="none") as source:
        with alpha2.create(tmp_path / "ks.mov", codec="prores_ks") as writer:
            for frame in source:
                writer.write(frame)
    with av.open(str(tmp_path / "ks.mov")) as container:
        assert (container.streams.video[0].width, container.streams.video[0].height) == (65, 49)
        assert sum(1 for _ in container.decode(video=0)) == 3
    stats = transcode(clip.path, tmp_path / "t.mov", TranscodeOptions(codec="prores"))
    assert stats.frames == 3
    with av.open(str(tmp_path / "t.mov")) as container:
        stream = container.streams.video[0]
        assert (stream.codec_context.name, stream.width, stream.height) == ("prores", 64, 48)
        assert sum(1 for _ in container.decode(video=0)) == 3


def _first_frame_tags(path: Path) -> tuple[int, int]:
    with av.open(str(path)) as container:
        frame = next(container.decode(video=0))
        return frame.colorspace, frame.color_trc


def test_prores_of_bt601_keeps_its_matrix_rather_than_rgb(tmp_path: Path) -> None:
    # FFmpeg's ProRes encoder writes matrix 0 (RGB) for BT.470BG and transfer 0 (reserved) for SMPTE 170M:
    # arrays written with colour BT.470BG full range, and a BT.470BG 4:2:2 10-bit file transcoded, came
    # back as RGB, which alpha2 then drew at 16 dB.
    colour = ColourInfo(matrix=ColourMatrix.BT470BG, range=ColourRange.FULL)
    picture = np.zeros((48, 64, 3), np.uint8)
    picture[..., 0] = np.linspace(0, 255, 64, dtype=np.uint8)
    picture[..., 1] = 120
    with alpha2.create(tmp_path / "w.mov", codec="prores", colour=colour) as writer:
        writer.write(picture)
    assert _first_frame_tags(tmp_path / "w.mov") == (int(ColourMatrix.SMPTE170M), 1)
    with alpha2.open(tmp_path / "w.mov", hwaccel="none") as source:
        assert source.colour.matrix is ColourMatrix.SMPTE170M
        with source.next_frame() as frame:
            rgb = frame.to_ndarray()[..., :3].astype(int)
    assert np.abs(rgb - picture).max() <= 6
    clip = make_clip(tmp_path / "pal.mkv", codec="ffv1", pix_fmt="yuv422p10le", colorspace=5, frames=2)
    transcode(clip.path, tmp_path / "t.mov", TranscodeOptions(codec="prores"))
    assert _first_frame_tags(tmp_path / "t.mov")[0] == int(ColourMatrix.SMPTE170M)
