"""DecodeSession: formats, codecs, sizes, timing, seeking, zero copy, back-pressure, errors, NVDEC."""

from __future__ import annotations

import gc
import io
import os
import threading
import time
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from media import encoder_available, flip_bits, garbage, make_audio_only, make_clip, truncate

from alpha2.ffmpeg_bridge import (
    DecodeError,
    DecodeSession,
    HwAccelMode,
    HwAccelUnavailableError,
    MediaFormatError,
    MediaNotFoundError,
    NoVideoStreamError,
    UnsupportedCodecError,
    download_frame,
)
from alpha2.ffmpeg_bridge.errors import from_ffmpeg
from alpha2.gpu.colour import ColourMatrix, ColourRange
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Rotation
from alpha2.gpu.handles import CpuPlaneSet, CudaPtr2D
from alpha2.gpu.surfaces import SurfaceBudget, SurfaceBudgetError, SurfaceBudgetPolicy

os.environ.setdefault("SVT_LOG", "1")
# Quiet FFmpeg's stderr without PyAV's Python log callback: that callback needs the GIL from FFmpeg's
# decoder threads and deadlocks avcodec_free_context (seen here).
av.logging.set_libav_level(av.logging.PANIC)


def _reference(path: str) -> list[av.VideoFrame]:
    with av.open(path) as c:
        return list(c.decode(video=0))


def _plane_bytes(plane_set: CpuPlaneSet, index: int) -> np.ndarray:
    p = plane_set.planes[index]
    buf = np.frombuffer(memoryview(p.data).cast("B"), np.uint8)
    return np.lib.stride_tricks.as_strided(buf, (p.height, p.width_bytes), (p.bytes_per_row, 1))


def _ref_plane(frame: av.VideoFrame, index: int, width_bytes: int, height: int) -> np.ndarray:
    plane = frame.planes[index]
    return np.frombuffer(memoryview(plane), np.uint8).reshape(-1, plane.line_size)[:height, :width_bytes]


CASES = [
    ("h264", "yuv420p", PixelFormat.YUV420P),
    ("h264", "yuvj420p", PixelFormat.YUVJ420P),
    ("h264", "yuv420p10le", PixelFormat.YUV420P10),
    ("h264", "yuv422p", PixelFormat.YUV422P),
    ("h264", "yuv444p", PixelFormat.YUV444P),
    ("hevc", "yuv420p", PixelFormat.YUV420P),
    ("hevc", "yuv420p10le", PixelFormat.YUV420P10),
    ("vp9", "yuv420p", PixelFormat.YUV420P),
    ("av1", "yuv420p", PixelFormat.YUV420P),
    ("mpeg2", "yuv420p", PixelFormat.YUV420P),
    ("ffv1", "gray", PixelFormat.GRAY),
    ("ffv1", "yuv444p", PixelFormat.YUV444P),
]


@pytest.mark.parametrize(("codec", "pix_fmt", "expected"), CASES, ids=[f"{c}-{p}" for c, p, _ in CASES])
def test_decodes_codecs_and_formats_bit_exact_to_pyav(
    tmp_path: Path, codec: str, pix_fmt: str, expected: PixelFormat
) -> None:
    if not encoder_available(codec):
        pytest.skip(f"no {codec} encoder in this PyAV build")
    clip = make_clip(tmp_path / "c.mkv", codec, 64, 48, 6, pix_fmt)
    ref = _reference(clip.path)
    with DecodeSession(clip.path, hwaccel="none") as session:
        assert session.info.codec_name in (codec, "mpeg2video", "libdav1d")
        assert (session.info.width, session.info.height) == (64, 48)
        frames = list(session)
    assert len(frames) == len(ref) == 6
    for got, want in zip(frames, ref):
        assert got.pixel_format is expected and not got.on_gpu
        assert got.pts == want.pts
        assert isinstance(got.planes, CpuPlaneSet)
        layout = expected.plane_layout(64, 48)
        for i, info in enumerate(layout.planes):
            wb = info.width * info.format.bytes_per_texel
            np.testing.assert_array_equal(_plane_bytes(got.planes, i), _ref_plane(want, i, wb, info.height))
    assert frames[0].colour.is_resolved


def test_odd_sizes(tmp_path: Path) -> None:
    for w, h in ((65, 49), (33, 17)):
        clip = make_clip(tmp_path / f"odd{w}.mkv", "ffv1", w, h, 3, "yuv420p")
        with DecodeSession(clip.path, hwaccel="none") as session:
            frame = session.next_frame()
            assert frame is not None and (frame.width, frame.height) == (w, h)
            planes = frame.planes
            assert isinstance(planes, CpuPlaneSet)
            assert [p.width_bytes for p in planes.planes] == [w, (w + 1) // 2, (w + 1) // 2]
            assert [p.height for p in planes.planes] == [h, (h + 1) // 2, (h + 1) // 2]
            assert frame.metadata.coded_size.width >= w


def test_zero_copy_planes_share_pyav_memory(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "z.mkv", "h264", 64, 48, 2)
    with DecodeSession(clip.path, hwaccel="none") as session:
        frame = session.next_frame()
        assert frame is not None
        pyav_frame = frame.keep_alive
        assert isinstance(pyav_frame, av.VideoFrame) and isinstance(frame.planes, CpuPlaneSet)
        for i, plane in enumerate(frame.planes.planes):
            ours = np.frombuffer(memoryview(plane.data).cast("B"), np.uint8)
            theirs = np.frombuffer(memoryview(pyav_frame.planes[i]), np.uint8)
            assert np.shares_memory(ours, theirs)
            assert plane.bytes_per_row == pyav_frame.planes[i].line_size


def test_timing_metadata_and_stream_info(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "t.mp4", "h264", 64, 48, 12, rate=25)
    with DecodeSession(clip.path, hwaccel="none") as session:
        info = session.info
        assert info.frame_count == 12 and info.average_rate == 25
        assert info.duration_seconds == pytest.approx(12 / 25, abs=0.05)
        frames = list(session)
    assert [round(f.pts_seconds or 0.0, 3) for f in frames] == [round(i / 25, 3) for i in range(12)]
    assert frames[0].key_frame and frames[0].metadata.duration
    assert not frames[0].metadata.interlaced


def test_variable_frame_rate_pts_preserved(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "vfr.mkv", "h264", 64, 48, 10, vfr=True)
    with DecodeSession(clip.path, hwaccel="none") as session:
        frames = list(session)
    got = [round((f.pts_seconds or 0) * 1000) for f in frames]
    assert got == list(clip.pts)


def test_colour_from_stream_tags(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "c.mkv", "h264", 64, 48, 2, colorspace=1, color_range=2)
    with DecodeSession(clip.path, hwaccel="none") as session:
        frame = session.next_frame()
    assert frame is not None
    assert frame.colour.matrix is ColourMatrix.BT709 and frame.colour.range is ColourRange.FULL
    plain = make_clip(tmp_path / "p.mkv", "h264", 64, 48, 2)
    with DecodeSession(plain.path, hwaccel="none") as session:
        frame = session.next_frame()
    assert frame is not None
    assert frame.colour.matrix is ColourMatrix.BT470BG and frame.colour.range is ColourRange.LIMITED


def test_rotation_from_display_matrix(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "r.mp4", "h264", 64, 48, 2, rotation_ccw=90)
    with DecodeSession(clip.path, hwaccel="none") as session:
        # The stream's facts agree with its frames (PyAV has no stream side data: the first frame says).
        assert session.info.rotation is Rotation.CW270
        assert (session.info.display_width, session.info.display_height) == (48, 64)
        frame = session.next_frame()
    assert frame is not None and frame.metadata.rotation is Rotation.CW270
    assert frame.metadata.rotated_size.width == 48


def test_file_object_source(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "f.mkv", "h264", 64, 48, 5)
    with open(clip.path, "rb") as fh:
        data = io.BytesIO(fh.read())
    with DecodeSession(data, hwaccel="none") as session:
        assert len(list(session)) == 5


@pytest.mark.parametrize("threads", [2, 16])
def test_seek_near_the_end_with_many_frame_threads(tmp_path: Path, threads: int) -> None:
    """With more frame threads than frames left after the key frame, the first frame after a seek
    comes with the rest in one flush: none of them may be lost (16 threads failed on a 16-core host)."""
    clip = make_clip(tmp_path / "t.mkv", "h264", 64, 48, 24, gop=6)
    ref = _reference(clip.path)
    with DecodeSession(clip.path, hwaccel="none", threads=threads) as session:
        for target_index in (13, 23, 19):
            session.seek(ref[target_index].time)
            got = [f.pts for f in session]
            assert got == [r.pts for r in ref[target_index:]]


@pytest.mark.parametrize("hwaccel", ["none", pytest.param("cuda", marks=pytest.mark.nvidia)])
def test_seek_is_accurate(tmp_path: Path, hwaccel: str) -> None:
    clip = make_clip(tmp_path / "s.mkv", "h264", 64, 48, 24, gop=6)
    ref = _reference(clip.path)
    ordinal = 0 if hwaccel == "cuda" else None
    with DecodeSession(clip.path, hwaccel=hwaccel, cuda_ordinal=ordinal) as session:
        gen0 = session.generation
        for target_index in (13, 2, 23, 6, 0):
            target = ref[target_index].time
            session.seek(target)
            frame = session.next_frame()
            assert frame is not None
            assert frame.pts == ref[target_index].pts
            assert frame.identity.generation > gen0
            assert frame.on_gpu == (hwaccel == "cuda")
            frame = download_frame(frame)
            assert isinstance(frame.planes, CpuPlaneSet)
            np.testing.assert_array_equal(
                _plane_bytes(frame.planes, 0), _ref_plane(ref[target_index], 0, 64, 48)
            )
            frame.release()
        # Between two frames: the one on display at that time.
        session.seek(ref[9].time + 0.01)
        frame = session.next_frame()
        assert frame is not None and frame.pts == ref[9].pts
        assert session.stats.frames_discarded_for_seek > 0
        session.seek(100.0)
        assert session.next_frame() is None


@pytest.mark.parametrize("prefetch", [0, 2])
@pytest.mark.parametrize("source", ["path", "file object"])
def test_frame_index_keeps_the_position(tmp_path: Path, prefetch: int, source: str) -> None:
    """Counting the frames (one pass over the packets) moves the demuxer; the caller's position is kept
    at the start, after a seek, after frames handed out (also decoded ahead), and at the end."""
    clip = make_clip(tmp_path / "i.mkv", "h264", 64, 48, 24, vfr=True, gop=6)
    ref = sorted(f.pts for f in _reference(clip.path))

    def opened() -> DecodeSession:
        media: Any = clip.path if source == "path" else io.BytesIO(Path(clip.path).read_bytes())
        return DecodeSession(media, hwaccel="none", prefetch=prefetch)

    def rest(session: DecodeSession) -> list[int | None]:
        return [f.pts for f in session]

    with opened() as session:
        index = session.frame_index()
        assert list(index.pts) == ref and len(index) == 24 and index.key_pts[0] == ref[0]
        assert session.frame_index() is index  # kept
        assert rest(session) == ref
    with opened() as session:
        taken = [session.next_frame(), session.next_frame()]
        time.sleep(0.05)  # let the worker decode ahead: what it queued is dropped and decoded again
        session.frame_index()
        assert [f.pts for f in taken if f is not None] + rest(session) == ref
    with opened() as session:
        session.seek(float(ref[10] / 1000) + 0.001)
        session.frame_index()
        assert rest(session) == ref[10:]
    with opened() as session:
        assert rest(session) == ref
        session.frame_index()
        assert session.next_frame() is None
    with opened() as session:
        got = session.frames_at_pts([ref[20], ref[3], ref[3], ref[0] - 5])
        assert [f.pts if f is not None else None for f in got] == [ref[20], ref[3], ref[3], ref[0]]
        assert rest(session) == ref[21:]  # on after the latest frame asked for


@pytest.mark.parametrize("prefetch", [0, 2])
def test_expected_identity_is_the_frames_identity(tmp_path: Path, prefetch: int) -> None:
    clip = make_clip(tmp_path / "e.mkv", "h264", 96, 64, 4)
    with DecodeSession(clip.path, hwaccel="none", prefetch=prefetch) as session:
        predicted = session.expected_identity()
        assert predicted is not None
        assert (predicted.width, predicted.height, predicted.pixel_format) == (96, 64, PixelFormat.YUV420P)
        frames = list(session)
        assert all(f.identity == predicted for f in frames)
        assert session.expected_identity() == predicted
        for f in frames:
            f.release()
    with pytest.raises(ClosedError):
        session.expected_identity()


def test_a_wrong_prediction_starts_a_new_generation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clip = make_clip(tmp_path / "w.mkv", "h264", 96, 64, 2)
    with DecodeSession(clip.path, hwaccel="none") as session:
        monkeypatch.setattr(session, "_predicted_shape", lambda: (128, 64, PixelFormat.NV12))
        predicted = session.expected_identity()
        assert predicted is not None and predicted.generation == 0
        frame = session.next_frame()
        assert frame is not None
        # Textures prepared for the prediction are never handed this frame: another generation.
        assert frame.identity.generation == 1 and frame.identity.width == 96
        assert session.expected_identity() == frame.identity
        frame.release()


def test_decoder_ids_unique_and_identity(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "i.mkv", "h264", 64, 48, 2)
    with DecodeSession(clip.path, hwaccel="none") as a, DecodeSession(clip.path, hwaccel="none") as b:
        assert a.decoder_id != b.decoder_id
        fa = a.next_frame()
        assert fa is not None and fa.identity.decoder_id == a.decoder_id
        assert (fa.identity.width, fa.identity.height) == (64, 48)


def test_budget_back_pressure_wait_mode(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "b.mkv", "h264", 64, 48, 10)
    budget = SurfaceBudget(max_surfaces=3, wait_timeout_s=0.1)
    with DecodeSession(clip.path, budget=budget, hwaccel="none") as session:
        held: list[DecodedFrame] = []
        for _ in range(3):
            frame = session.next_frame()
            assert frame is not None
            held.append(frame)
        assert budget.usage().surfaces == 3
        t0 = time.monotonic()
        with pytest.raises(SurfaceBudgetError):
            session.next_frame()
        assert time.monotonic() - t0 >= 0.09
        held.pop(0).release()
        nxt = session.next_frame()  # the frame that did not fit is not lost
        assert nxt is not None
        assert (nxt.pts or 0) > (held[-1].pts or 0)
        held.append(nxt)

        def consume() -> None:
            # A consumer thread that releases frames unblocks the waiting decoder.
            time.sleep(0.05)
            while held:
                held.pop().release()

        consumer = threading.Thread(target=consume)
        consumer.start()
        budget.wait_timeout_s = 5.0
        frame = session.next_frame()
        consumer.join()
        assert frame is not None
        frame.release()
        for f in session:
            f.release()
        assert budget.usage().peak_surfaces <= 3
    gc.collect()
    assert budget.usage().surfaces == 0 and budget.usage().size_bytes == 0


def test_budget_fail_mode_and_shared_budget(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "b.mkv", "h264", 64, 48, 4)
    budget = SurfaceBudget(max_surfaces=2, policy=SurfaceBudgetPolicy.FAIL)
    with (
        DecodeSession(clip.path, budget=budget, hwaccel="none") as a,
        DecodeSession(clip.path, budget=budget, hwaccel="none") as b,
    ):
        fa = a.next_frame()
        fb = b.next_frame()
        with pytest.raises(SurfaceBudgetError):
            a.next_frame()
        assert fa is not None and fb is not None
        fb.release()
        fa2 = a.next_frame()
        assert fa2 is not None and fa2.pts is not None and fa.pts is not None and fa2.pts > fa.pts
        del fa, fa2, fb
    gc.collect()
    assert budget.usage().surfaces == 0


def test_a_batch_larger_than_the_budget_is_refused_at_once_saying_so(tmp_path: Path) -> None:
    """frames_at with more times than the budget's max_surfaces waited out the budget's timeout (10 s by
    default) and then said 'release frames you hold' to a caller who held none: each frame of a batch
    holds a surface until the whole batch is handed out, so such a batch can never fit."""
    import alpha2

    clip = make_clip(tmp_path / "batch.mkv", "h264", 64, 48, 20)
    budget = SurfaceBudget(max_surfaces=2, wait_timeout_s=3.0)
    with alpha2.open(clip.path, hwaccel="none", budget=budget) as source:
        started = time.monotonic()
        refused = r"3 frames asked for at once.*at most 2 \(max_surfaces\)"
        with pytest.raises(SurfaceBudgetError, match=refused):
            source.frames_at([0.1, 0.2, 0.3])
        with pytest.raises(SurfaceBudgetError, match="at most 2 at a time"):
            source.frames_at_index([1, 2, 3])
        assert time.monotonic() - started < 1.0  # refused, not waited for
        assert budget.usage().surfaces == 0
        frames = source.frames_at([0.1, 0.3])  # a batch the budget holds still comes
        assert [round(f.pts_seconds or 0, 2) for f in frames] == [0.1, 0.3]
        for frame in frames:
            frame.release()


def test_usage_bounded_when_frames_dropped(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "u.mkv", "h264", 64, 48, 12)
    budget = SurfaceBudget(max_surfaces=2, wait_timeout_s=1.0)
    with DecodeSession(clip.path, budget=budget, hwaccel="none") as session:
        n = sum(1 for _ in session)  # each frame dropped at once: GC returns its reservation
    assert n == 12 and budget.usage().peak_surfaces <= 2


def test_hwaccel_modes_here(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "h.mkv", "h264", 64, 48, 2)
    with DecodeSession(clip.path, hwaccel="none") as session:
        assert session.hwaccel_report.active is HwAccelMode.NONE
        assert session.fallback_reason is None
    with pytest.raises(InvalidInputError, match="'auto', 'cuda', 'none'"):
        DecodeSession(clip.path, hwaccel="vulkan")


def test_hwaccel_auto_falls_back_with_reason(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "h.mkv", "ffv1", 64, 48, 2)  # no NVDEC for ffv1 anywhere
    with DecodeSession(clip.path, hwaccel="auto") as session:
        report = session.hwaccel_report
        frame = session.next_frame()
        report = session.hwaccel_report
        assert report.active is HwAccelMode.NONE and report.requested is HwAccelMode.AUTO
        assert frame is not None and not frame.on_gpu
        # Either there is no CUDA device / shared device here, or the codec has no NVDEC: said either way.
        assert report.reason


def test_hwaccel_cuda_refused_with_reason(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "h.mkv", "ffv1", 64, 48, 2)
    with pytest.raises(HwAccelUnavailableError, match="hwaccel='auto' or 'none'"):
        DecodeSession(clip.path, hwaccel="cuda")


def test_missing_file() -> None:
    with pytest.raises(MediaNotFoundError) as info:
        DecodeSession("/nonexistent/clip.mp4", hwaccel="none")
    assert isinstance(info.value, ValueError)
    assert info.value.ffmpeg_message and info.value.ffmpeg_errno


def test_garbage_input(tmp_path: Path) -> None:
    with pytest.raises(MediaFormatError) as info:
        DecodeSession(garbage(str(tmp_path / "g.mp4")))
    assert "Invalid data" in str(info.value) and info.value.ffmpeg_errno is not None


def test_no_video_stream(tmp_path: Path) -> None:
    path = make_audio_only(tmp_path / "a.mkv")
    with pytest.raises(NoVideoStreamError, match="audio"):
        DecodeSession(path, hwaccel="none")


def test_unsupported_codec_mapping() -> None:
    err = from_ffmpeg(av.error.DecoderNotFoundError(-1, "Decoder not found"), "opening x")
    assert isinstance(err, UnsupportedCodecError) and err.ffmpeg_message == "Decoder not found"


def test_truncated_input_skip_and_stop(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "t.mkv", "h264", 128, 96, 24)
    bad = truncate(clip.path, str(tmp_path / "tr.mkv"), 0.5)
    with DecodeSession(bad, on_corrupt="skip", hwaccel="none") as session:
        frames = list(session)
        assert 0 < len(frames) < 24
        assert session.stats.truncated and session.stats.decode_errors >= 1
    with (
        DecodeSession(bad, on_corrupt="stop", hwaccel="none") as session,
        pytest.raises(DecodeError, match="truncated"),
    ):
        list(session)


def test_bit_flips_skip_and_stop(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "t.mkv", "h264", 128, 96, 24)
    bad = flip_bits(clip.path, str(tmp_path / "bad.mkv"), count=60, seed=0)
    with DecodeSession(bad, on_corrupt="skip", hwaccel="none") as session:
        frames = list(session)
        stats = session.stats
    assert len(frames) < 24
    assert stats.corrupt_frames_skipped + stats.decode_errors > 0
    assert all(isinstance(f.keep_alive, av.VideoFrame) and not f.keep_alive.is_corrupt for f in frames)
    with DecodeSession(bad, on_corrupt="stop", hwaccel="none") as session, pytest.raises(DecodeError):
        list(session)


def test_closed_session(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "c.mkv", "h264", 64, 48, 3)
    session = DecodeSession(clip.path, hwaccel="none")
    frame = session.next_frame()
    session.close()
    session.close()
    assert frame is not None and isinstance(frame.planes, CpuPlaneSet)  # handed-out frames stay valid
    with pytest.raises(ClosedError):
        session.next_frame()


# -- NVDEC (GPU machine) ------------------------------------------------------------------------------


@pytest.mark.nvidia
@pytest.mark.parametrize("codec", ["h264", "hevc"])
def test_nvdec_frames_stay_on_gpu_and_match_software(tmp_path: Path, codec: str) -> None:
    clip = make_clip(tmp_path / "n.mkv", codec, 320, 240, 12)
    ref = _reference(clip.path)
    budget = SurfaceBudget(max_surfaces=6, wait_timeout_s=5.0)
    with DecodeSession(clip.path, hwaccel="cuda", budget=budget, cuda_ordinal=0) as session:
        assert session.hwaccel_report.active is HwAccelMode.CUDA
        assert session.expected_identity() is None  # NVDEC's output format shows at the first frame
        held = []
        for i, frame in enumerate(session):
            assert frame.on_gpu and frame.pixel_format is PixelFormat.NV12
            assert frame.cuda_stream == 0
            planes = frame.planes
            assert isinstance(planes, tuple) and all(isinstance(p, CudaPtr2D) for p in planes)
            assert planes[0].pitch_bytes >= 320 and planes[0].height == 240 and planes[1].height == 120
            assert isinstance(frame.keep_alive, av.VideoFrame)
            sw = frame.keep_alive.reformat(format="nv12")  # download for the comparison
            np.testing.assert_array_equal(
                np.frombuffer(memoryview(sw.planes[0]), np.uint8).reshape(-1, sw.planes[0].line_size)[
                    :240, :320
                ],
                _ref_plane(ref[i], 0, 320, 240),
            )
            if i == 0:
                assert session.expected_identity() == frame.identity
            held.append(frame)  # hold up to max_surfaces frames: the pool must not starve
            if len(held) == 6:
                for f in held:
                    f.release()
                held.clear()
    assert budget.usage().peak_surfaces <= 6


@pytest.mark.nvidia
def test_nvdec_auto_uses_gpu(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "n.mkv", "h264", 320, 240, 4)
    with DecodeSession(clip.path, hwaccel="auto", cuda_ordinal=0) as session:
        frame = session.next_frame()
        assert frame is not None and frame.on_gpu, session.hwaccel_report
        assert session.fallback_reason is None


def test_prefetch_gives_the_same_frames_and_seeks(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "p.mkv", "h264", 64, 48, 24, gop=6)
    ref = _reference(clip.path)
    with DecodeSession(clip.path, hwaccel="none", prefetch=3) as session:
        frames = list(session)
        assert [f.pts for f in frames] == [r.pts for r in ref]
        for got, want in zip(frames, ref, strict=True):
            assert isinstance(got.planes, CpuPlaneSet)
            np.testing.assert_array_equal(_plane_bytes(got.planes, 0), _ref_plane(want, 0, 64, 48))
            got.release()
        assert session.next_frame() is None
        session.seek(ref[13].time)
        frame = session.next_frame()
        assert frame is not None and frame.pts == ref[13].pts
        frame.release()
        # A worker decoding ahead is stopped and joined by close().
        prefetcher = session._prefetcher
        assert prefetcher is not None
    assert not prefetcher._thread.is_alive()
    assert not any(t.name.startswith("alpha2-decode") for t in threading.enumerate())


class _Ahead:
    """Work done ahead on one frame: records where it ran and whether it was discarded."""

    def __init__(self, frame: DecodedFrame) -> None:
        self.thread = threading.current_thread().name
        self.identity = frame.identity
        self.pts = frame.pts
        self.discarded = 0

    def discard(self) -> None:
        self.discarded += 1


def test_copy_ahead_runs_on_the_prefetch_thread_and_rides_on_its_frame(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "a.mkv", "h264", 64, 48, 24, gop=6)
    made: list[_Ahead] = []

    def work(frame: DecodedFrame) -> _Ahead:
        made.append(_Ahead(frame))
        return made[-1]

    with DecodeSession(clip.path, hwaccel="none", prefetch=3) as session:
        session.set_copy_ahead(work)
        taken = []
        for _ in range(10):
            frame = session.next_frame()
            assert frame is not None
            ahead = frame.take_ahead()
            assert isinstance(ahead, _Ahead) and ahead.pts == frame.pts
            assert ahead.identity == frame.identity and ahead.thread.startswith("alpha2-decode")
            assert frame.take_ahead() is None, "taken once"
            taken.append(ahead)
            frame.release()
        kept = session.next_frame()
        assert kept is not None
        kept.release()  # not taken: discarded with the frame
        session.seek(0.5)  # what the worker had decoded ahead is dropped, its work discarded
        after = session.next_frame()
        assert after is not None
        after_ahead = after.take_ahead()
        assert after_ahead is not None
        after.release()
    # Every piece of work was taken or discarded, once.
    assert all(a.discarded == 0 for a in taken)
    rest = [a for a in made if a not in taken]
    assert rest and all(a.discarded == (0 if a is after_ahead else 1) for a in rest), [
        (a.pts, a.discarded) for a in rest
    ]
    without = DecodeSession(clip.path, hwaccel="none")  # no prefetch thread: work is never called
    with without:
        without.set_copy_ahead(work)
        count = len(made)
        frame = without.next_frame()
        assert frame is not None and frame.take_ahead() is None and len(made) == count
        frame.release()


@pytest.mark.parametrize("prefetch", [0, 2])
def test_unknown_formats_are_converted_and_counted(tmp_path: Path, prefetch: int) -> None:
    clip = make_clip(tmp_path / "c.mkv", "ffv1", 64, 48, 4, pix_fmt="yuv410p")
    with DecodeSession(clip.path, hwaccel="none", prefetch=prefetch) as session:
        frames = list(session)
        assert [f.pixel_format for f in frames] == [PixelFormat.YUV420P] * 4
        assert all(f.identity.pixel_format is PixelFormat.YUV420P for f in frames)
        assert session.stats.converted_frames == 4 and session.stats.frames_out == 4
        for f in frames:
            f.release()


def test_prefetch_carries_errors_to_the_caller(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "t.mkv", "h264", 128, 96, 24)
    bad = truncate(clip.path, str(tmp_path / "tr.mkv"), 0.5)
    with DecodeSession(bad, on_corrupt="stop", hwaccel="none", prefetch=2) as session:
        with pytest.raises(DecodeError, match="truncated"):
            list(session)
        assert session.next_frame() is None  # the stream is over, as without prefetch
    with pytest.raises(InvalidInputError, match="prefetch"):
        DecodeSession(clip.path, hwaccel="none", prefetch=-1)


def test_nvdec_pool_is_capped_for_a_large_shared_budget() -> None:
    """A wall's budget of 2N surfaces outgrows one NVDEC decoder's 32-surface pool at N = 14 (seen on
    the H200: 'Invalid data' on the first packet); the pool is capped and the session holds less."""
    from alpha2.ffmpeg_bridge.decode import NVDEC_MAX_EXTRA_SURFACES, NVDEC_MAX_SURFACES, nvdec_pool_plan

    assert nvdec_pool_plan(8, 0) == (8, None)
    assert nvdec_pool_plan(8, 3) == (11, None)
    extra, hold = nvdec_pool_plan(28, 3)
    assert extra == NVDEC_MAX_EXTRA_SURFACES and extra + 18 <= NVDEC_MAX_SURFACES
    assert hold == NVDEC_MAX_EXTRA_SURFACES - 3
    assert nvdec_pool_plan(100, 40) == (NVDEC_MAX_EXTRA_SURFACES, 1)


def test_what_copy_ahead_work_raises_reaches_the_caller_in_order(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "r.mkv", "h264", 64, 48, 8)
    seen: list[int | None] = []

    def work(frame: DecodedFrame) -> None:
        seen.append(frame.pts)
        if len(seen) == 3:
            raise InvalidInputError("the work failed")

    with DecodeSession(clip.path, hwaccel="none", prefetch=2) as session:
        session.set_copy_ahead(work)
        first, second = session.next_frame(), session.next_frame()
        assert first is not None and second is not None
        first.release()
        second.release()
        with pytest.raises(InvalidInputError, match="the work failed"):
            session.next_frame()
        assert session.next_frame() is None


def test_forward_seeks_never_read_the_whole_file_for_an_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A seek decodes on where its target is a short way ahead (DECODE_ON_SECONDS) and seeks otherwise;
    it never builds the frame index, which reads every packet of the file: a player's second jump
    forward in a film waited on that read. The frames are those a fresh session's seek gives."""
    from alpha2.ffmpeg_bridge import decode

    clip = make_clip(tmp_path / "a.mp4", "h264", 64, 48, 100, gop=50)  # a key frame every 50 frames

    def first_at(seconds: float) -> int:
        with DecodeSession(clip.path, hwaccel="none") as fresh:
            fresh.seek(seconds)
            frame = fresh.next_frame()
            assert frame is not None
            pts = frame.pts
            frame.release()
        return pts

    targets = [0.3, 0.5, 0.52, 1.1, 2.5, 2.55, 3.1]  # on within a second, and jumps (past a key frame)
    want = [first_at(t) for t in targets]
    monkeypatch.setattr(
        decode.DecodeSession, "_frame_index", lambda self: pytest.fail("a seek read the file for an index")
    )
    with DecodeSession(clip.path, hwaccel="none", prefetch=2) as session:
        got = []
        for seconds in targets:
            session.seek(seconds)
            frame = session.next_frame()
            assert frame is not None
            got.append(frame.pts)
            frame.release()
        assert session.stats.frames_discarded_for_seek > 0  # some went on by decoding
    assert got == want
