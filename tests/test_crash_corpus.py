"""Odd but real-world media that crashed or failed alpha2 through PyAV: each input is made here (PyAV
encodes, the odd part is spliced in by hand), and the command or call that failed on it must not."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import alpha2
from alpha2.apps.cli import main
from alpha2.ffmpeg_bridge.hdr import hdr_metadata_of

av = pytest.importorskip("av")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def _png(width: int = 16, height: int = 8) -> bytes:
    """One RGB picture, PNG-encoded by PyAV."""
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="image2pipe") as out:
        stream = out.add_stream("png", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "rgb24"
        picture = np.zeros((height, width, 3), np.uint8)
        picture[..., 0] = np.arange(width, dtype=np.uint8)[None, :] * 9
        frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            out.mux(packet)
    return buffer.getvalue()


def _hdr_png_with_exif(path: Path) -> Path:
    """A PQ PNG (cICP: BT.2020, PQ, full range) with mastering display (mDCv), light level (cLLi) and
    an EXIF block (eXIf, orientation 1), as HDR screenshots and phone exports carry them. FFmpeg 8.1
    attaches the EXIF as AV_FRAME_DATA_EXIF (31), a type PyAV 18's side data enum does not have."""
    png = _png()
    at = png.index(b"IDAT") - 4
    exif = b"MM\x00\x2a\x00\x00\x00\x08" + struct.pack(">H", 1) + struct.pack(">HHII", 0x0112, 3, 1, 1 << 16)
    chunks = (
        _png_chunk(b"cICP", bytes([9, 16, 0, 1]))
        + _png_chunk(
            b"mDCv", struct.pack(">8H2I", 35400, 14600, 8500, 39850, 6550, 2300, 15635, 16450, 10_000_000, 50)
        )
        + _png_chunk(b"cLLi", struct.pack(">2I", 10_000_000, 4_000_000))
        + _png_chunk(b"eXIf", exif + b"\x00\x00\x00\x00")
    )
    path.write_bytes(png[:at] + chunks + png[at:])
    return path


def test_side_data_of_a_type_newer_than_pyav_is_listed(tmp_path: Path) -> None:
    path = _hdr_png_with_exif(tmp_path / "pq_exif.png")
    with av.open(str(path)) as container:
        frame = next(container.decode(video=0))
    assert int(frame.color_trc) == 16  # PQ: the frame whose side data alpha2 reads
    kinds = {item.type.name for item in frame.side_data}
    assert "UNKNOWN_31" in kinds
    hdr = hdr_metadata_of(frame)
    assert hdr is not None and hdr.mastering is not None and hdr.light_level is not None
    assert hdr.mastering.max_luminance_cd_m2 == pytest.approx(1000.0)
    assert (hdr.light_level.max_cll_cd_m2, hdr.light_level.max_fall_cd_m2) == (1000, 400)
    assert av.sidedata.sidedata.Type(31) is av.sidedata.sidedata.Type(31)
    with pytest.raises(ValueError):
        av.sidedata.sidedata.Type("EXIF")


def test_probe_reads_hdr_png_with_exif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _hdr_png_with_exif(tmp_path / "pq_exif.png")
    assert main(["probe", str(path)]) == 0
    out = capsys.readouterr()
    assert "MaxCLL 1000" in out.out, out
    described = alpha2.describe(path)
    assert described.video is not None and described.video.hdr is not None


def _mjpeg_avi(path: Path, frames: int = 10) -> Path:
    """An MJPEG AVI (PyAV-encoded), whose frames are told apart by their brightness."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mjpeg", rate=10)
        stream.width, stream.height, stream.pix_fmt = 32, 16, "yuvj420p"
        for index in range(frames):
            frame = av.VideoFrame.from_ndarray(np.full((16, 32, 3), index * 20, np.uint8), format="rgb24")
            for packet in stream.encode(frame.reformat(format="yuvj420p")):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


@pytest.mark.parametrize("container", ["avi", "gif"])
def test_first_frame_of_a_demuxer_that_refuses_times_before_the_start(tmp_path: Path, container: str) -> None:
    """AVI, GIF and image files refuse a seek to a time before the stream's start (EPERM), where the
    session went to rewind: frame 0 was 'past the end' and len() / frames_at 'cannot go back'."""
    from alpha2.ffmpeg_bridge.decode import DecodeSession

    if container == "avi":
        path = _mjpeg_avi(tmp_path / "clip.avi")
    else:
        path = tmp_path / "clip.gif"
        with av.open(str(path), "w") as out:
            stream = out.add_stream("gif", rate=10)
            stream.width, stream.height, stream.pix_fmt = 32, 16, "rgb8"
            for index in range(10):
                frame = av.VideoFrame.from_ndarray(np.full((16, 32, 3), index * 20, np.uint8), format="rgb24")
                for packet in stream.encode(frame.reformat(format="rgb8")):
                    out.mux(packet)
            for packet in stream.encode(None):
                out.mux(packet)
    with av.open(str(path)) as probe:
        stream = probe.streams.video[0]
        with pytest.raises(av.error.FFmpegError):
            probe.seek(-round(1 / stream.time_base), backward=True, stream=stream)
    with DecodeSession(str(path), hwaccel="none") as session:
        first = session.frames_at([0.0])[0]
        assert first is not None and first.metadata.pts == 0
        first.release()
        assert len(session.frame_index()) == 10
        found = session.frames_at([0.0, 0.21, 0.9])
        seconds = [float(f.metadata.pts * f.metadata.time_base) if f else None for f in found]
        assert seconds == pytest.approx([0.0, 0.2, 0.9])
        for f in found:
            if f is not None:
                f.release()
