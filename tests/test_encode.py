"""EncodeSession: encoder choice, plane input, colour, rate control, VFR, audio copy, atomic output."""

from __future__ import annotations

import ast
import fractions
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from media import make_clip, pattern

from alpha2.ffmpeg_bridge import (
    DecodeSession,
    EncoderError,
    EncodeSession,
    UnsupportedCodecError,
    choose_encoder,
    encoders,
)
from alpha2.ffmpeg_bridge.encode import frame_from_dlpack
from alpha2.ffmpeg_bridge.encoders import ENCODER_PREFERENCE, ENCODERS, encoder_spec
from alpha2.gpu.codecs import ENCODER_LIMITS, NAME_ALIASES
from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourRange
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet

os.environ.setdefault("SVT_LOG", "1")
av.logging.set_libav_level(av.logging.PANIC)  # not set_level: its Python callback deadlocks threaded decoders


def _yuv420_planes(index: int, w: int, h: int, pad: int = 16) -> tuple[CpuPlaneSet, list[np.ndarray]]:
    """A yuv420p frame as a CpuPlaneSet whose rows are padded (bytes_per_row > width_bytes)."""
    frame = av.VideoFrame.from_ndarray(pattern(index, w, h), format="rgb24").reformat(format="yuv420p")
    planes, exact = [], []
    for i, (pw, ph) in enumerate(((w, h), ((w + 1) // 2, (h + 1) // 2), ((w + 1) // 2, (h + 1) // 2))):
        src = np.frombuffer(memoryview(frame.planes[i]), np.uint8).reshape(-1, frame.planes[i].line_size)[
            :ph, :pw
        ]
        buf = np.zeros((ph, pw + pad), np.uint8)
        buf[:, :pw] = src
        exact.append(src.copy())
        planes.append(CpuPlane(buf, pw + pad, pw, ph))
    return CpuPlaneSet(tuple(planes)), exact


def _decode_all(path: str) -> list[av.VideoFrame]:
    with av.open(path) as c:
        return list(c.decode(video=0))


def _opens_here(name: str) -> bool:
    """Whether PyAV opens ``name`` for a small yuv420p stream on this machine (NVENC needs a GPU with it)."""
    try:
        cc: Any = av.codec.CodecContext.create(name, "w")
        cc.width, cc.height = 256, 256
        cc.pix_fmt = "yuv420p"
        cc.time_base = fractions.Fraction(1, 30)
        cc.open()
    except Exception:
        return False
    return True


def _expected_choice(codec: str) -> tuple[str, list[str]]:
    """This machine's choice for ``codec``, worked out from the table and PyAV alone: the first preferred
    encoder that av.codecs_available has (and, for NVENC, that opens), and the ones passed over."""
    passed_over = []
    for name in ENCODER_PREFERENCE[codec]:
        if name not in av.codecs_available:
            passed_over.append(f"{name} is not in this FFmpeg build")
        elif name.endswith("_nvenc") and not _opens_here(name):
            passed_over.append(f"{name} is in this FFmpeg build but does not open here")
        else:
            return name, passed_over
    pytest.skip(f"no encoder for {codec} in this PyAV build")


def test_choose_encoder_preference_and_reason() -> None:
    assert ENCODER_PREFERENCE["h264"] == ("h264_nvenc", "libx264")
    assert ENCODER_PREFERENCE["hevc"] == ("hevc_nvenc", "libx265")
    assert ENCODER_PREFERENCE["av1"] == ("av1_nvenc", "libsvtav1", "libaom-av1")
    for codec, asked in (("h264", "h264"), ("hevc", "h265"), ("av1", "av1"), ("vp9", "vp9")):
        name, passed_over = _expected_choice(codec)
        choice = choose_encoder(asked)
        assert (choice.name, choice.codec) == (name, codec), asked
        assert choice.hardware is choice.takes_cuda_frames is name.endswith("_nvenc")
        order = ", ".join(ENCODER_PREFERENCE[codec])
        assert choice.reason.startswith(f"{name}: preferred order for {codec} is {order}"), choice.reason
        if passed_over:
            rest = choice.reason.split("; passed over: ", 1)[1]
            parts = rest.split("; ")
            assert len(parts) == len(passed_over), choice.reason
            for part, expected in zip(parts, passed_over):
                assert part.startswith(expected), (part, expected)
        else:
            assert "passed over" not in choice.reason
    by_name = choose_encoder("libx264")
    assert by_name.name == "libx264" and by_name.reason == "libx264 was asked for by name"
    alias = choose_encoder("x264")
    assert alias.name == "libx264" and alias.reason == "libx264 was asked for by name (as 'x264')"
    # An encoder by name writes its codec's family, as the codec's name does (found by an outside pass:
    # libvpx-vp9 by name kept its own name, and so passed the containers' refusals: VP9 went into
    # MPEG-TS as a data stream, exit 0).
    for name, family in (
        ("libx264", "h264"),
        ("libvpx-vp9", "vp9"),
        ("libx265", "hevc"),
        ("mpeg2video", "mpeg2"),
    ):
        assert choose_encoder(name).codec == family, name


def test_an_encoder_by_name_meets_its_codec_s_container_refusals(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="mpegts container cannot hold vp9"):
        EncodeSession(str(tmp_path / "x.ts"), codec="libvpx-vp9")
    assert not list(tmp_path.iterdir())
    # The muxer's refusal names the codec once and the outputs that do hold it (it said 'vp8 from vp8').
    with pytest.raises(InvalidInputError) as refused:
        EncodeSession(str(tmp_path / "x.webm"), codec="libx264")
    said = str(refused.value)
    assert "cannot hold h264 (from libx264)" in said and ".mkv" in said and ".webm," not in said, said
    with pytest.raises(InvalidInputError) as refused:
        EncodeSession(str(tmp_path / "x.mp4"), codec="vp8")
    said = str(refused.value)
    assert "cannot hold vp8 (" in said and "from" not in said and ".webm" in said and ".mp4," not in said, (
        said
    )
    with pytest.raises(UnsupportedCodecError, match="h264, hevc, av1"):
        choose_encoder("no-such-codec")


@pytest.mark.parametrize(("name", "codec"), [("x.webm", "h264"), ("x.mp4", "gif"), ("x.mp4", "prores_ks")])
def test_an_encoder_the_container_takes_no_stream_of_is_refused_when_the_session_is_made(
    tmp_path: Path, name: str, codec: str
) -> None:
    """PyAV refused it only at the first frame ("'webm' format does not support 'libx264' codec"): a Writer
    was made, and its first write failed and removed the file."""
    with pytest.raises(InvalidInputError, match=r"container cannot hold .* choose another codec"):
        EncodeSession(str(tmp_path / name), codec=codec)
    assert not list(tmp_path.iterdir())
    EncodeSession(str(tmp_path / "x.ts"), codec="h264").abort()  # mpegts says it may: taken, as by PyAV


@pytest.mark.parametrize("hdr", [1, {"max_cll": 1000}])
def test_hdr_that_is_no_hdr_metadata_is_refused_when_the_session_is_made(tmp_path: Path, hdr: Any) -> None:
    """alpha2.create(path, hdr=1) was taken, and the first frame raised a raw AttributeError ('int' object
    has no attribute 'is_empty')."""
    with pytest.raises(InvalidInputError, match=r"hdr must be an alpha2\.gpu\.hdr\.HdrMetadata"):
        EncodeSession(str(tmp_path / "x.mkv"), codec="hevc", hdr=hdr)
    assert not list(tmp_path.iterdir())


def test_encoder_table_agrees_with_the_vocabulary() -> None:
    names = {spec.name for spec in ENCODERS}
    assert len(names) == len(ENCODERS)
    for alias, target in NAME_ALIASES.items():
        assert target in names or target in ENCODER_PREFERENCE, (alias, target)
    for name, limits in ENCODER_LIMITS.items():
        spec = encoder_spec(name)
        assert spec is not None and spec.limits is limits and spec.codec == limits.codec, name
    assert encoder_spec("LIBSVT_AV1") is encoder_spec("libsvtav1")
    assert encoder_spec("no-such-encoder") is None
    vp9 = encoder_spec("libvpx-vp9")
    assert vp9 is not None and vp9.crf_extra == (("b", "0"),) and vp9.preset_option == "cpu-used"
    nvenc = encoder_spec("h264_nvenc")
    assert nvenc is not None and nvenc.hardware and nvenc.takes_cuda_frames and nvenc.crf_option == "cq"
    # Neither table imports av: native_gpu reads alpha2.gpu.codecs, and av stays in the bridge's sessions.
    probe = "import sys, alpha2.gpu.codecs; print('av' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    tree = ast.parse(Path(encoders.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name.split(".")[0] == "av"}, imported


@pytest.mark.skipif("libsvtav1" not in av.codecs_available, reason="no libsvtav1 in this PyAV build")
def test_a_thin_picture_svt_av1_never_finishes_is_refused_before_anything_is_encoded(tmp_path: Path) -> None:
    """SVT-AV1 4.1 took 4096x8, 128x16 or 16x128 and encoded its frames, and the flush that finishes the
    file never returned (one side of 24 or less, the other over 64): refused, naming a size that works.
    The hanging encode is never run here."""
    with pytest.raises(InvalidInputError, match=r"128x16 .*never finishes the flush.*e\.g\. 128x26"):
        EncodeSession(str(tmp_path / "a.mp4"), codec="libsvtav1", width=128, height=16)
    assert os.listdir(tmp_path) == []
    out = str(tmp_path / "b.mp4")
    with EncodeSession(out, codec="av1", rate=25) as enc:
        if enc.encoder.name != "libsvtav1":
            pytest.skip(f"av1 is {enc.encoder.name} here")
        planes, _ = _yuv420_planes(0, 16, 128)
        with pytest.raises(InvalidInputError, match=r"16x128 .*e\.g\. 26x128"):  # the first frame's size
            enc.encode(planes, pixel_format=PixelFormat.YUV420P)
        for i in range(3):  # the short side padded to 26: encoded, and the file is finished
            planes, _ = _yuv420_planes(i, 26, 128)
            enc.encode(planes, pixel_format=PixelFormat.YUV420P)
    frames = _decode_all(out)
    assert len(frames) == 3 and (frames[0].width, frames[0].height) == (26, 128)


def test_the_writer_refuses_a_thin_av1_picture_at_its_first_write(tmp_path: Path) -> None:
    """The Writer's copier holds the first texture back, so the session met the size only at the second
    write: the first is refused now, and the Writer goes on with a size that finishes."""
    import alpha2

    with alpha2.create(tmp_path / "a.mp4", codec="libsvtav1") as writer:
        with pytest.raises(InvalidInputError, match=r"128x16 .*never finishes the flush"):
            writer.write(np.zeros((16, 128, 3), np.uint8))
        for _ in range(2):
            writer.write(np.zeros((32, 128, 3), np.uint8))
    frames = _decode_all(str(tmp_path / "a.mp4"))
    assert len(frames) == 2 and (frames[0].width, frames[0].height) == (128, 32)


def test_cpu_planes_lossless_roundtrip_with_padded_rows(tmp_path: Path) -> None:
    out = str(tmp_path / "o.mkv")
    expected = []
    with EncodeSession(out, codec="ffv1", rate=25) as enc:
        for i in range(5):
            planes, exact = _yuv420_planes(i, 66, 50)
            expected.append(exact)
            enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=66, height=50)
    assert enc.encoder.name == "ffv1" and enc.stats.frames_in == 5
    frames = _decode_all(out)
    assert len(frames) == 5 and (frames[0].width, frames[0].height) == (66, 50)
    for frame, exact in zip(frames, expected):
        for i in range(3):
            ph, pw = exact[i].shape
            got = np.frombuffer(memoryview(frame.planes[i]), np.uint8).reshape(-1, frame.planes[i].line_size)[
                :ph, :pw
            ]
            np.testing.assert_array_equal(got, exact[i])
    assert not [n for n in os.listdir(tmp_path) if "partial" in n]


def test_an_output_written_over_keeps_the_old_files_permissions(tmp_path: Path) -> None:
    out = tmp_path / "o.mkv"
    out.write_bytes(b"an older output")
    out.chmod(0o640)  # as ffmpeg -y, which writes over the file in place, leaves it
    with EncodeSession(str(out), codec="ffv1", rate=25) as enc:
        planes, _ = _yuv420_planes(0, 16, 16)
        enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=16, height=16)
    assert len(_decode_all(str(out))) == 1
    assert out.stat().st_mode & 0o7777 == 0o640


def test_nv12_planes_into_h264_mp4(tmp_path: Path) -> None:
    w, h = 64, 48
    y = np.full((h, w), 120, np.uint8)
    uv = np.full((h // 2, w), 128, np.uint8)
    planes = CpuPlaneSet((CpuPlane(y, w, w, h), CpuPlane(uv, w, w, h // 2)))
    out = str(tmp_path / "o.mp4")
    with EncodeSession(out, codec="h264", preset="ultrafast", crf=18) as enc:
        for _ in range(6):
            enc.encode(planes, pixel_format=PixelFormat.NV12)
    frames = _decode_all(out)
    assert len(frames) == 6
    assert abs(float(frames[-1].to_ndarray(format="gray").mean()) - 120) < 3


def test_transcode_decoded_frames_passes_pts_and_colour(tmp_path: Path) -> None:
    src = make_clip(tmp_path / "s.mkv", "h264", 64, 48, 8, colorspace=1, color_range=2)
    out = str(tmp_path / "o.mkv")
    with (
        DecodeSession(src.path) as dec,
        EncodeSession(out, codec="h264", time_base=fractions.Fraction(1, 1000)) as enc,
    ):
        for frame in dec:
            enc.encode(frame)
            frame.release()
    frames = _decode_all(out)
    assert [f.pts for f in frames] == [round(i * 1000 / 30) for i in range(8)]
    assert frames[0].colorspace == ColourMatrix.BT709 and frames[0].color_range == ColourRange.FULL


def test_explicit_colour_metadata(tmp_path: Path) -> None:
    colour = ColourInfo.from_ffmpeg(9, 9, 16, 1, 2)  # BT.2020 / PQ / limited
    out = str(tmp_path / "o.mkv")
    planes, _ = _yuv420_planes(0, 64, 48)
    with EncodeSession(out, codec="h264", colour=colour) as enc:
        enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48)
    with av.open(out) as c:
        frame = next(c.decode(video=0))
    assert (frame.colorspace, frame.color_primaries, frame.color_trc, frame.color_range) == (9, 9, 16, 1)


def test_an_encoder_that_writes_each_frames_colour_gets_the_streams(tmp_path: Path) -> None:
    """prores_ks writes each frame's matrix, primaries and transfer, not the stream's: planes (from the
    Writer's arrays and textures) carry none, and a BT.709 ProRes came out untagged, read as BT.601."""
    colour = ColourInfo.from_ffmpeg(1, 1, 1, 1, 1)  # BT.709, limited
    out = str(tmp_path / "o.mov")
    planes, _ = _yuv420_planes(0, 64, 48)
    with EncodeSession(out, codec="prores_ks", colour=colour) as enc:
        enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48)
    with av.open(out) as c:
        frame = next(c.decode(video=0))
    assert (frame.colorspace, frame.color_primaries, frame.color_trc) == (1, 1, 1)


def test_variable_frame_rate_pts(tmp_path: Path) -> None:
    out = str(tmp_path / "vfr.mkv")
    pts = [0, 33, 83, 100, 166, 206]
    with EncodeSession(out, codec="h264", time_base=fractions.Fraction(1, 1000)) as enc:
        for i, p in enumerate(pts):
            planes, _ = _yuv420_planes(i, 64, 48)
            enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48, pts=p)
    assert [f.pts for f in _decode_all(out)] == pts
    with EncodeSession(str(tmp_path / "bad.mkv"), codec="ffv1") as enc2:
        planes, _ = _yuv420_planes(0, 64, 48)
        enc2.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48, pts=5)
        with pytest.raises(InvalidInputError, match="pts must increase"):
            enc2.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48, pts=5)


def test_timing_set_before_the_first_frame(tmp_path: Path) -> None:
    out = str(tmp_path / "timed.mp4")
    with EncodeSession(out, codec="h264") as enc:
        enc.set_timing(rate=25, time_base=fractions.Fraction(1, 90000))
        assert (enc.rate, enc.time_base) == (25, fractions.Fraction(1, 90000))
        for i in range(5):
            planes, _ = _yuv420_planes(i, 64, 48)
            enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48, pts=i * 3600)
        with pytest.raises(InvalidInputError, match="first frame fixed the timing"):
            enc.set_timing(rate=30, time_base=fractions.Fraction(1, 30))
    with av.open(out) as c:
        stream = c.streams.video[0]
        assert stream.average_rate == 25 and c.duration == pytest.approx(200_000, abs=1000)
    enc2 = EncodeSession(str(tmp_path / "bad.mp4"), codec="h264")
    with pytest.raises(InvalidInputError, match="must be positive"):
        enc2.set_timing(rate=0, time_base=fractions.Fraction(1, 90000))
    enc2.abort()


def test_rate_control_crf_changes_size(tmp_path: Path) -> None:
    sizes = {}
    for crf in (5, 45):
        out = str(tmp_path / f"crf{crf}.mp4")
        with EncodeSession(out, codec="h264", crf=crf, preset="ultrafast") as enc:
            for i in range(6):
                planes, _ = _yuv420_planes(i, 128, 96)
                enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=128, height=96)
        sizes[crf] = os.path.getsize(out)
    assert sizes[5] > sizes[45]
    out = str(tmp_path / "br.mkv")
    with EncodeSession(out, codec="h264", bitrate=200_000) as enc:
        planes, _ = _yuv420_planes(0, 64, 48)
        enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48)
    assert os.path.exists(out)


@pytest.mark.parametrize(
    ("codec", "ext"), [("hevc", "mkv"), ("av1", "mkv"), ("vp9", "webm"), ("mpeg2", "ts")]
)
def test_other_codecs_and_containers(tmp_path: Path, codec: str, ext: str) -> None:
    out = str(tmp_path / f"o.{ext}")
    with EncodeSession(out, codec=codec, preset=None) as enc:
        for i in range(4):
            planes, _ = _yuv420_planes(i, 64, 48)
            enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48)
    assert len(_decode_all(out)) == 4


def test_audio_copy(tmp_path: Path) -> None:
    src = make_clip(tmp_path / "s.mkv", "h264", 64, 48, 10, audio=True)
    with av.open(src.path) as c:
        audio_packets = [p for p in c.demux(audio=0) if p.size]
        codec_name = c.streams.audio[0].codec_context.name
    out = str(tmp_path / "o.mkv")
    with DecodeSession(src.path) as dec, EncodeSession(out, codec="h264", audio_from=dec) as enc:
        for frame in dec:
            enc.encode(frame)
    assert enc.stats.audio_packets_copied == len(audio_packets)
    with av.open(out) as c:
        assert c.streams.audio[0].codec_context.name == codec_name
        copied = [p for p in c.demux(audio=0) if p.size]
        assert [bytes(p) for p in copied] == [bytes(p) for p in audio_packets]
    assert len(_decode_all(out)) == 10


def test_audio_reencoded_when_the_container_cannot_hold_it(tmp_path: Path) -> None:
    src = make_clip(tmp_path / "s.mp4", "h264", 64, 48, 10, audio=True)  # AAC, which WebM cannot hold
    with av.open(src.path) as c:
        source_codec = c.streams.audio[0].codec_context.name
        source_seconds = sum(f.samples for f in c.decode(audio=0)) / c.streams.audio[0].rate
    assert source_codec == "aac"
    out = str(tmp_path / "o.webm")
    with DecodeSession(src.path) as dec, EncodeSession(out, codec="vp9", audio_from=dec) as enc:
        for frame in dec:
            enc.encode(frame)
    stats = enc.stats
    assert stats.audio_packets_copied == 0 and stats.audio_frames_reencoded > 0
    assert stats.audio_note is not None and f"re-encoded {source_codec} to libopus" in stats.audio_note
    with av.open(out) as c:
        assert c.streams.audio[0].codec_context.name == "opus"
        seconds = sum(f.samples for f in c.decode(audio=0)) / c.streams.audio[0].rate
    assert abs(seconds - source_seconds) < 0.05


def test_failure_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "o.mp4"
    planes, _ = _yuv420_planes(0, 64, 48)
    with pytest.raises(RuntimeError), EncodeSession(str(out), codec="h264") as enc:
        enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48)
        raise RuntimeError("application failed half-way")
    assert os.listdir(tmp_path) == []
    # The encoder refuses to open (odd size for 4:2:0 x264): typed error, nothing written.
    odd, _ = _yuv420_planes(0, 65, 49)
    enc = EncodeSession(str(out), codec="libx264")
    with pytest.raises(EncoderError) as info:
        enc.encode(odd, pixel_format=PixelFormat.YUV420P, width=65, height=49)
    assert info.value.ffmpeg_message
    assert os.listdir(tmp_path) == []
    # Closing without frames writes nothing; an existing file is never clobbered by a failure.
    out.write_bytes(b"previous")
    with pytest.raises(EncoderError, match="no frames"):
        EncodeSession(str(out), codec="h264").close()
    enc3 = EncodeSession(str(out), codec="h264")
    enc3.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48)
    enc3.abort()
    assert out.read_bytes() == b"previous" and os.listdir(tmp_path) == ["o.mp4"]


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="extension"):
        EncodeSession(str(tmp_path / "noext"))
    with pytest.raises(InvalidInputError, match="directory"):
        EncodeSession(str(tmp_path / "missing" / "o.mp4"))
    with pytest.raises(InvalidInputError, match="pixel_format"):
        planes, _ = _yuv420_planes(0, 64, 48)
        EncodeSession(str(tmp_path / "o.mkv")).encode(planes)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".mkv")]


def test_dlpack_wrapper_on_cpu_planes() -> None:
    w, h = 64, 48
    y = (np.arange(h * (w + 8)) % 251).astype(np.uint8).reshape(h, w + 8)
    uv = (np.arange(h // 2 * (w + 8)) % 13).astype(np.uint8).reshape(h // 2, w + 8)
    planes = CpuPlaneSet((CpuPlane(y, w + 8, w, h), CpuPlane(uv, w + 8, w, h // 2)))
    frame = frame_from_dlpack(planes, PixelFormat.NV12, w, h)
    assert frame.format.name == "nv12" and (frame.width, frame.height) == (w, h)
    got = np.frombuffer(memoryview(frame.planes[0]), np.uint8).reshape(-1, frame.planes[0].line_size)[:h, :w]
    np.testing.assert_array_equal(got, y[:, :w])
    del frame


@pytest.mark.nvidia
def test_encode_cuda_frames(tmp_path: Path) -> None:
    src = make_clip(tmp_path / "s.mkv", "h264", 320, 240, 6)
    out = str(tmp_path / "o.mp4")
    with (
        DecodeSession(src.path, hwaccel="cuda", cuda_ordinal=0) as dec,
        EncodeSession(out, codec="h264") as enc,
    ):
        for frame in dec:
            assert frame.on_gpu
            enc.encode(frame)  # the decoder's CUDA frame (NVENC takes it; PyAV downloads for libx264)
    assert len(_decode_all(out)) == 6
    out2 = str(tmp_path / "o2.mp4")
    with (
        DecodeSession(src.path, hwaccel="cuda", cuda_ordinal=0) as dec,
        EncodeSession(out2, codec="h264") as enc,
    ):
        for frame in dec:
            planes = frame.planes
            assert isinstance(planes, tuple)
            enc.encode(planes, pixel_format=frame.pixel_format, width=320, height=240)  # DLPack path
    assert len(_decode_all(out2)) == 6


def test_encoded_audio_track_and_its_refusals(tmp_path: Path) -> None:
    out = str(tmp_path / "a.mkv")
    with pytest.raises(InvalidInputError, match="one audio track"):
        EncodeSession(out, audio_rate=48_000, audio_from=out)
    tone = np.stack([np.sin(np.arange(4_800) * 2 * np.pi * 440 / 48_000).astype(np.float32) * 0.2] * 2)
    with EncodeSession(out, codec="ffv1", rate=25, audio_rate=48_000) as enc:
        enc.encode_audio(tone[:, : 48_000 // 25], sample_rate=48_000)  # kept until a frame opens the output
        for i in range(5):
            planes, _ = _yuv420_planes(i, 64, 48)
            enc.encode(planes, pts=i, pixel_format=PixelFormat.YUV420P, width=64, height=48)
            if i < 4:
                enc.encode_audio(tone[:, : 48_000 // 25], sample_rate=48_000)
        with pytest.raises(InvalidInputError, match="sample_rate"):
            enc.encode_audio(tone, sample_rate=44_100)
        with pytest.raises(InvalidInputError, match="shape"):
            enc.encode_audio(tone[0], sample_rate=48_000)
    with av.open(out) as container:
        audio = container.streams.audio[0]
        assert audio.codec_context.name == "aac" and audio.rate == 48_000
        samples = sum(f.samples for f in container.decode(audio))
    assert abs(samples - 5 * 48_000 // 25) <= 1024  # the encoder's priming / last frame
    with EncodeSession(str(tmp_path / "v.mkv"), codec="ffv1") as enc:
        planes, _ = _yuv420_planes(0, 64, 48)
        enc.encode(planes, pts=0, pixel_format=PixelFormat.YUV420P, width=64, height=48)
        with pytest.raises(InvalidInputError, match="no audio track"):
            enc.encode_audio(tone, sample_rate=48_000)


def test_encoder_specs_check_crf_and_fit_the_time_base() -> None:
    """Each encoder's crf range and the options it becomes (MPEG-1/2/4 fix the quantiser); the time
    base an encoder takes (MPEG-1/2: one frame; MPEG-4: a denominator within 65535)."""
    import fractions

    from alpha2.ffmpeg_bridge.encoders import encoder_spec

    x264, mpeg2, mpeg4, ffv1 = (encoder_spec(n) for n in ("libx264", "mpeg2video", "mpeg4", "ffv1"))
    assert x264 is not None and mpeg2 is not None and mpeg4 is not None and ffv1 is not None
    assert mpeg2.name == "mpeg2video"  # its own row, though "mpeg2video" is also the family's alias
    assert x264.crf_options(23.5) == {"crf": "23.5"}
    assert mpeg2.crf_options(4) == {"qmin": "4", "qmax": "4"}
    with pytest.raises(InvalidInputError, match="0 to 51"):
        x264.crf_options(80)
    with pytest.raises(InvalidInputError, match="whole numbers 1 to 31"):
        mpeg4.crf_options(3.5)
    with pytest.raises(InvalidInputError, match="lossless"):
        ffv1.crf_options(1)
    tick = fractions.Fraction(1, 90000)
    assert x264.time_base(tick, fractions.Fraction(30)) == tick
    assert mpeg2.time_base(tick, fractions.Fraction(25)) == fractions.Fraction(1, 25)
    fitted = mpeg4.time_base(tick, fractions.Fraction(30000, 1001))
    assert fitted.denominator <= 65535 and (fractions.Fraction(1001, 30000) / fitted).denominator == 1
    assert mpeg4.time_base(fractions.Fraction(1, 15360), fractions.Fraction(30)) == fractions.Fraction(
        1, 15360
    )


@pytest.mark.parametrize(("codec", "extension"), [("mpeg2", "ts"), ("mpeg2", "mkv"), ("mpeg4", "mp4")])
def test_mpeg_encoders_write_arrays_at_their_rate_and_quality(
    tmp_path: Path, codec: str, extension: str
) -> None:
    """alpha2.create with MPEG-2 or MPEG-4 part 2 (the Writer's 1/90000 clock is too fine for both):
    the frames come back at the asked rate, and crf changes the size."""
    pytest.importorskip("av")
    import av

    import alpha2

    sizes = []
    for crf in (2, 20):
        path = tmp_path / f"{codec}_{crf}.{extension}"
        rng = np.random.default_rng(1)
        with alpha2.create(path, codec=codec, rate=25, crf=crf) as writer:
            for _ in range(6):
                writer.write(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8))
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            times = [float(f.pts * f.time_base) for f in container.decode(stream)]
        assert len(times) == 6
        assert np.allclose(np.diff(times), 0.04)
        sizes.append(path.stat().st_size)
    assert sizes[0] > 1.5 * sizes[1]


def test_an_output_folder_no_file_can_be_made_in_is_refused_before_any_frame(tmp_path: Path) -> None:
    """A folder where no file can be created (/proc) is refused when the session is made, with the OS's
    reason, not as "encoding with libx264: No such file or directory" at the first frame."""
    if not os.path.isdir("/proc"):
        pytest.skip("no /proc here")
    with pytest.raises(InvalidInputError, match="cannot create the output in '/proc'"):
        EncodeSession("/proc/alpha2-out.mp4", codec="h264")
    session = EncodeSession(tmp_path / "out.mp4", codec="h264")  # a folder that takes files: nothing left
    session.abort()
    assert list(tmp_path.iterdir()) == []


def test_avi_gets_a_frame_clock_and_mov_refuses_vp9(tmp_path: Path) -> None:
    """AVI stores a rate, not timestamps: frames given on a 1/90000 clock come out 25 fps, 10 frames (not
    90000 fps with a frame per tick); MOV refuses VP9 before anything is written."""
    out = tmp_path / "out.avi"
    with EncodeSession(out, codec="h264", rate=25, time_base=fractions.Fraction(1, 90000)) as enc:
        for i in range(10):
            planes, _ = _yuv420_planes(i, 64, 48)
            enc.encode(planes, pts=i * 3600, pixel_format=PixelFormat.YUV420P, width=64, height=48)
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert stream.average_rate == 25
        assert sum(1 for _ in container.decode(stream)) == 10
    with pytest.raises(InvalidInputError, match="mov container cannot hold vp9"):
        EncodeSession(tmp_path / "out.mov", codec="vp9")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.avi"]


def test_mjpeg_takes_limited_range_pictures(tmp_path: Path) -> None:
    """FFmpeg's MJPEG encoder refuses limited-range Y'CbCr as non-standard ('opening encoder mjpeg:
    Invalid argument', found by an outside pass): written as it is, tagged limited, read back so."""
    out = str(tmp_path / "m.mkv")
    with EncodeSession(out, codec="mjpeg", rate=25) as enc:
        for i in range(3):
            planes, _ = _yuv420_planes(i, 64, 48)
            enc.encode(planes, pixel_format=PixelFormat.YUV420P, width=64, height=48)
    frames = _decode_all(out)
    assert len(frames) == 3 and frames[0].color_range == 1  # limited ("tv")
