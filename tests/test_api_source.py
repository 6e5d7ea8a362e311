"""VideoSource as a demanding Python user expects it: exact frames by time and index on variable frame
rate with B-frames, batches in one pass, rotation shown, stream facts, typed errors, bytes, finalizers,
misuse errors that name the fix, and an open that keeps the event loop free."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fractions
import gc
import itertools
import random
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from media import make_clip, pattern

from alpha2.ffmpeg_bridge.errors import MediaFormatError
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.geometry import Rotation

pytestmark = pytest.mark.vulkan

_BFRAME_OPTIONS = {
    "preset": "veryfast",
    # Forced B-frames (scenecut off: every test frame differs a lot, and x264 would code them as P).
    "x264-params": "bframes=3:b-adapt=0:scenecut=0:log-level=error",
}


def make_vfr_bframes(path: Path, frames: int = 60, gop: int = 12, seed: int = 3, audio: bool = False) -> str:
    """An H.264 clip with B-frames whose frames are 10..60 ms apart at random (whole milliseconds, so
    MP4 and Matroska keep them exactly), its pts set on the frames the encoder gets."""
    rng = random.Random(seed)
    tb = fractions.Fraction(1, 90000)
    pts, t = [], 0
    for _ in range(frames):
        pts.append(t)
        t += rng.randint(10, 60) * 90
    with av.open(str(path), "w") as out:
        stream: Any = out.add_stream("libx264", rate=30, options=dict(_BFRAME_OPTIONS))
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.codec_context.time_base = tb
        stream.time_base = tb
        stream.codec_context.gop_size = gop
        stream.codec_context.max_b_frames = 3
        stream.codec_context.thread_count = 1
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(pattern(i, 64, 48), format="rgb24").reformat(format="yuv420p")
            frame.pts, frame.time_base = pts[i], tb
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


@dataclasses.dataclass(frozen=True)
class RefFrame:
    """A frame as PyAV decodes the whole file (the reference)."""

    pts: int
    seconds: float
    luma: np.ndarray
    key: bool


def _plane0(frame: av.VideoFrame) -> np.ndarray:
    plane = frame.planes[0]
    rows = np.frombuffer(bytes(plane), np.uint8).reshape(plane.height, plane.line_size)
    return rows[:48, :64].copy()


def reference(path: str) -> list[RefFrame]:
    """Every frame, decoded by PyAV from the start, in presentation order."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        start = stream.start_time or 0
        tb = stream.time_base
        assert tb is not None
        frames = [
            RefFrame(
                f.pts,
                float((f.pts - start) * tb),
                _plane0(f),
                bool(f.key_frame),
            )
            for f in container.decode(stream)
            if f.pts is not None
        ]
    return sorted(frames, key=lambda f: f.pts)


def shown_at(ref: list[RefFrame], seconds: float) -> RefFrame:
    """The frame on display at ``seconds``: the last one whose time is at or before it."""
    return [f for f in ref if f.seconds <= seconds + 1e-9][-1]


@pytest.fixture(scope="module")
def vfr_clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("vfr")
    return {ext: make_vfr_bframes(folder / f"vfr.{ext}") for ext in ("mp4", "mkv")}


@pytest.fixture(scope="module")
def device() -> Any:
    from alpha2.native_gpu.device.device import Device

    return Device.open()


def _luma(frame: Any) -> np.ndarray:
    return np.asarray(frame.plane(0).to_ndarray())[:48, :64]


# -- 1. frame-exact seeks on VFR with B-frames ----------------------------------------------------------


@pytest.mark.parametrize("ext", ["mp4", "mkv"])
def test_frame_at_is_exact_on_vfr_with_b_frames(vfr_clips: dict[str, str], ext: str, device: Any) -> None:
    import alpha2

    path = vfr_clips[ext]
    ref = reference(path)
    assert len(ref) == 60
    with av.open(path) as container:  # the premise: B-frames, and irregular frame times
        assert 3 in {f.pict_type for f in container.decode(video=0)}
    assert len({round(b.seconds - a.seconds, 3) for a, b in itertools.pairwise(ref)}) > 10

    wrong = []
    with alpha2.open(path, hwaccel="none", device=device) as source:
        for want in ref:
            for offset in (0.0, 0.001):
                with source.frame_at(want.seconds + offset) as frame:
                    assert frame.pts_seconds is not None
                    if abs(frame.pts_seconds - want.seconds) > 1e-6 or not np.array_equal(
                        _luma(frame), want.luma
                    ):
                        wrong.append((want.seconds, offset, frame.pts_seconds))
    assert wrong == [], f"{len(wrong)} of 120 asks gave the wrong frame: {wrong[:5]}"


def test_seek_then_iterate_goes_on_from_the_frame_shown(vfr_clips: dict[str, str], device: Any) -> None:
    import alpha2

    ref = reference(vfr_clips["mp4"])
    with alpha2.open(vfr_clips["mp4"], hwaccel="none", device=device) as source:
        source.seek(ref[30].seconds + 0.001)
        got = [f.pts_seconds for f in source]
    assert got == pytest.approx([f.seconds for f in ref[30:]])


def test_frame_at_stepping_forward_decodes_on_instead_of_seeking(
    tmp_path: Path, device: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """frame_at at later and later times within one GOP decodes on from the frame it stopped at: each
    call sought back to the key frame and decoded the GOP again (a frame at a time through 10 s of a
    30 fps clip with x264's default GOP took 6.8 s, against 0.07 s for iterating it)."""
    import alpha2

    path = make_vfr_bframes(tmp_path / "one_gop.mp4", frames=60, gop=60)
    ref = reference(path)
    assert sum(f.key for f in ref) == 1  # the premise: one GOP
    with alpha2.open(path, hwaccel="none", device=device) as source:
        seeks = _count_calls(monkeypatch, source.session, "_position_at")
        decoded = _count_calls(monkeypatch, source.session, "_decoded_next")
        for want in ref[:50]:
            with source.frame_at(want.seconds + 0.001) as frame:
                assert frame.pts_seconds == pytest.approx(want.seconds, abs=1e-6)
                assert np.array_equal(_luma(frame), want.luma)
        # The first call seeks, the second counts the frames (which moves the demuxer) and seeks again.
        assert len(seeks) <= 3
        assert len(decoded) <= len(ref) + 10
        # A time behind the frame held still seeks back, and the source goes on after the frame shown.
        with source.frame_at(ref[20].seconds) as frame:
            assert np.array_equal(_luma(frame), ref[20].luma)
        assert [f.pts_seconds for f in source] == pytest.approx([f.seconds for f in ref[21:]])


@pytest.mark.parametrize("prefetch", [0, 2])
def test_seek_stepping_forward_decodes_on_and_gives_what_a_fresh_seek_gives(
    tmp_path: Path, device: Any, monkeypatch: pytest.MonkeyPatch, prefetch: int
) -> None:
    """seek + next_frame forward a little at a time decodes on from where the session is, keeping the
    frames decoded already (held, or queued by the prefetch thread), where no key frame lies between:
    each seek stopped the prefetch thread, dropped its frames, sought back to the key frame and decoded
    the GOP again (300 steps of 1/30 s through a 30 fps clip with x264's default GOP took 5.6 s against
    0.07 s for iterating it). Every frame is the one a fresh session's seek gives (VFR, B-frames, exact
    frame times and times between frames, a step across a key frame)."""
    import alpha2

    path = make_vfr_bframes(tmp_path / "two_gops.mp4", frames=120, gop=60)
    ref = reference(path)
    assert sum(f.key for f in ref) == 2  # the premise: two long GOPs

    def fresh(seconds: float) -> tuple[float, np.ndarray]:
        with alpha2.open(path, hwaccel="none", device=device, prefetch=0) as other:
            other.seek(seconds)
            with other.next_frame() as frame:
                return frame.pts_seconds, _luma(frame)

    rng = random.Random(7)
    # Forward by one to three frames, to the frame's own time or between it and the next.
    steps, i = [], 0
    while i < len(ref) - 1:
        between = rng.random() < 0.5
        steps.append((ref[i].seconds + ref[i + 1].seconds) / 2 if between else ref[i].seconds)
        i += rng.randint(1, 3)
    with alpha2.open(path, hwaccel="none", device=device, prefetch=prefetch) as source:
        seeks = _count_calls(monkeypatch, source.session, "_position_at")
        decoded = _count_calls(monkeypatch, source.session, "_decoded_next")
        for seconds in steps:
            source.seek(seconds)
            with source.next_frame() as frame:
                want = shown_at(ref, seconds)
                assert frame.pts_seconds == pytest.approx(want.seconds, abs=1e-6)
                assert np.array_equal(_luma(frame), want.luma)
                pts, luma = fresh(seconds)
                assert frame.pts_seconds == pts and np.array_equal(_luma(frame), luma)
        # The first seek seeks; the second builds the frame index (which moves the demuxer) and seeks
        # again; the step across the second key frame seeks to it. Each seek seeks without this.
        assert len(seeks) <= 4
        assert len(decoded) <= len(ref) + 20

        # Every time, the frames' own and between them, the frame already shown among them (a seek back
        # to it), with frames read on after some: each the frame a fresh seek gives.
        source.seek(0.0)
        for n, seconds in enumerate(
            t for f, g in itertools.pairwise(ref) for t in (f.seconds, (f.seconds + g.seconds) / 2)
        ):
            source.seek(seconds)
            pts, luma = fresh(seconds)
            with source.next_frame() as frame:
                assert frame.pts_seconds == pts and np.array_equal(_luma(frame), luma)
            if n % 7 == 0:
                with source.next_frame() as frame:
                    assert frame.pts_seconds > pts
        source.seek(ref[50].seconds)
        assert [f.pts_seconds for f in source] == pytest.approx([f.seconds for f in ref[50:]])


# -- 2. batches: by time and by index, one forward pass, len --------------------------------------------


def _count_calls(monkeypatch: pytest.MonkeyPatch, obj: Any, name: str) -> list[Any]:
    calls: list[Any] = []
    original = getattr(obj, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(obj, name, counted)
    return calls


@pytest.mark.parametrize("ext", ["mp4", "mkv"])
def test_frames_at_in_order_asked_in_one_pass(
    vfr_clips: dict[str, str], ext: str, device: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import alpha2

    path = vfr_clips[ext]
    ref = reference(path)
    times = [f.seconds + off for f in ref for off in (0.0, 0.001)] + [ref[7].seconds] * 3
    random.Random(5).shuffle(times)
    with alpha2.open(path, hwaccel="none", device=device) as source:
        session = source.session
        session.frame_index()  # counted once, before the pass
        seeks = _count_calls(monkeypatch, session, "_position_at")
        decoded = _count_calls(monkeypatch, session, "_decoded_next")
        frames = source.frames_at(times)
        try:
            assert len(frames) == len(times)
            for t, frame in zip(times, frames):
                want = shown_at(ref, t)
                assert frame.pts_seconds == pytest.approx(want.seconds, abs=1e-6)
                assert np.array_equal(_luma(frame), want.luma)
            assert len({id(f) for f in frames}) == len(frames)  # duplicates are frames of their own
        finally:
            for frame in frames:
                frame.release()
        # Every frame asked for: one seek, then forward through every GOP once.
        assert len(seeks) == 1
        assert len(decoded) <= len(ref) + 2
        # The source goes on after the latest frame asked for (the last one: nothing left).
        assert source.next_frame() is None

        # One ask in the middle of each GOP: a seek per GOP, no GOP decoded twice.
        keys = [i for i, f in enumerate(ref) if f.key]
        wanted = [ref[k + 5] for k in keys if k + 5 < len(ref)]
        seeks.clear()
        decoded.clear()
        for frame in source.frames_at([w.seconds for w in reversed(wanted)]):
            with frame:
                pass
        assert len(seeks) == len(wanted)
        assert len(decoded) <= len(ref)


@pytest.mark.parametrize("ext", ["mp4", "mkv"])
def test_frames_at_index_and_len(
    vfr_clips: dict[str, str], ext: str, device: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import alpha2

    path = vfr_clips[ext]
    ref = reference(path)
    with alpha2.open(path, hwaccel="none", device=device) as source:
        if ext == "mkv":
            assert source.info.frame_count is None  # Matroska does not say: counted over the packets
        scans = _count_calls(monkeypatch, source.session, "_scan_packets")
        assert len(source) == len(ref) == 60
        assert len(source) == 60
        assert len(scans) <= 1  # counted once, then kept
        first = source.next_frame()  # the position survives the count
        assert first is not None and first.pts_seconds == pytest.approx(ref[0].seconds)
        indices = [59, 0, -1, 13, 13, 31, -60, 2]
        frames = source.frames_at_index(indices)
        try:
            for i, frame in zip(indices, frames):
                assert frame.pts_seconds == pytest.approx(ref[i].seconds, abs=1e-6)
                assert np.array_equal(_luma(frame), ref[i].luma)
            # Frames handed over stay valid while the source moves on: released by their owner only.
            again = source.frame_at(0.0)
            again.release()
            assert not any(f.released for f in frames)
            assert _luma(first).shape == (48, 64)
        finally:
            for frame in [*frames, first]:
                frame.release()
        assert len(scans) <= 1


def test_frame_numbers_are_asked_by_index_not_by_i_over_the_rate(tmp_path: Path, device: Any) -> None:
    """What frames_at's docstring says: Matroska keeps its stamps to the millisecond, so at 30 fps
    frame 2 is stamped 0.067 s and 2 / 30 s (0.0667) is frame 1's time; frames_at_index(i) is frame i."""
    import alpha2

    path = make_clip(tmp_path / "cfr30.mkv", frames=6, rate=30).path
    with alpha2.open(path, hwaccel="none", device=device) as source:
        by_time = source.frames_at([i / source.frame_rate for i in range(6)])
        by_index = source.frames_at_index(range(6))
        try:
            assert [f.pts_seconds for f in by_index] == [0.0, 0.033, 0.067, 0.1, 0.133, 0.167]
            assert [f.pts_seconds for f in by_time] == [0.0, 0.033, 0.033, 0.1, 0.133, 0.133]
        finally:
            for frame in [*by_time, *by_index]:
                frame.release()


# -- 3. rotation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ext", ["mp4", "mkv"])
def test_rotation_is_shown_and_reported(tmp_path: Path, ext: str, device: Any) -> None:
    import alpha2

    clip = make_clip(tmp_path / f"r.{ext}", "h264", 64, 48, 3, rotation_ccw=90)
    with av.open(clip.path) as container:
        rgb = next(container.decode(video=0)).to_ndarray(format="rgb24").astype(np.int16)
    with alpha2.open(clip.path, hwaccel="none", device=device) as source:
        assert source.session.info.rotation is Rotation.CW270  # the bridge agrees with its frames
        assert source.info.rotation is Rotation.CW270 is source.rotation
        assert (source.width, source.height) == (48, 64) == (source.info.width, source.info.height)
        assert (source.info.coded_width, source.info.coded_height) >= (64, 48)
        frame = source.next_frame()
        assert frame is not None
        with frame:
            assert frame.decoded.metadata.rotation is source.session.info.rotation
            assert (frame.width, frame.height) == (48, 64)
            shown = frame.to_ndarray().astype(np.int16)
            assert shown.shape == (64, 48, 3)
            texture = frame.render()
            assert tuple(texture.size[:2]) == (48, 64)
    # A display matrix turning the picture 90 degrees counter-clockwise: np.rot90 once.
    error = np.abs(shown - np.rot90(rgb, 1)).mean()
    assert error < 8, error
    assert error < np.abs(shown - np.rot90(rgb, 3)).mean() / 3


# -- 4. stream facts ------------------------------------------------------------------------------------


def _clip_with_audio(path: Path) -> str:
    with av.open(str(path), "w") as out:
        video: Any = out.add_stream("libx264", rate=25, options={"preset": "ultrafast"})
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio: Any = out.add_stream("libopus", rate=48000)
        audio.layout = "stereo"
        audio.metadata["language"] = "fra"
        for i in range(10):
            frame = av.VideoFrame.from_ndarray(pattern(i, 64, 48), format="rgb24").reformat(format="yuv420p")
            frame.pts = i
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        samples = np.zeros((2, 960), np.float32)
        for n in range(20):
            block = av.AudioFrame.from_ndarray(samples, format="fltp", layout="stereo")
            block.sample_rate, block.pts = 48000, n * 960
            for packet in audio.encode(block):
                out.mux(packet)
        for packet in audio.encode(None):
            out.mux(packet)
    return str(path)


def test_info_says_what_the_file_holds(tmp_path: Path, device: Any) -> None:
    import alpha2
    from alpha2.api.source import AudioTrack, VideoInfo
    from alpha2.gpu.colour import ColourInfo

    path = _clip_with_audio(tmp_path / "a.mkv")
    with alpha2.open(path, hwaccel="none", device=device) as source:
        info = source.info
        assert isinstance(info, VideoInfo)
        assert info.codec == "h264"
        assert (info.width, info.height) == (64, 48) and info.rotation is Rotation.NONE
        assert info.coded_width >= 64 and info.coded_height >= 48
        assert info.frame_rate == pytest.approx(25)
        assert info.duration_seconds == pytest.approx(0.4, abs=0.05)
        assert isinstance(info.colour, ColourInfo) and info.colour == source.colour
        assert info.hdr is None
        assert info.audio == (
            AudioTrack(index=1, codec="opus", sample_rate=48000, channels=2, language="fra"),
        )
        with pytest.raises(dataclasses.FrozenInstanceError):
            info.codec = "hevc"  # type: ignore[misc]
        assert len(source) == 10


# -- 5. typed errors, never None ------------------------------------------------------------------------


def test_times_and_indices_out_of_range_are_typed_errors(vfr_clips: dict[str, str], device: Any) -> None:
    import alpha2
    from alpha2.api.source import EndOfStreamError, FrameIndexError

    with alpha2.open(vfr_clips["mkv"], hwaccel="none", device=device) as source:
        duration = source.duration_seconds
        assert duration is not None
        with pytest.raises(EndOfStreamError, match=rf"{duration:.3f} s long") as info:
            source.frame_at(duration + 5)
        assert isinstance(info.value, InvalidInputError)
        for bad in (float("nan"), float("inf"), -1.0, -0.001):
            with pytest.raises(InvalidInputError, match=repr(bad)):
                source.frame_at(bad)
        with pytest.raises(InvalidInputError, match="'soon'"):
            source.frame_at("soon")  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="nan"):
            source.frames_at([0.1, float("nan")])
        with pytest.raises(EndOfStreamError, match="long"):
            source.frames_at([0.1, duration + 1])
        assert source.session.budget.usage().surfaces == 0  # nothing kept from the failed batch
        with pytest.raises(FrameIndexError, match=r"60 frames \(0\.\.59") as index_error:
            source.frames_at_index([3, 60])
        assert isinstance(index_error.value, IndexError) and isinstance(index_error.value, InvalidInputError)
        with pytest.raises(IndexError):
            source.frames_at_index([-61])
        with pytest.raises(InvalidInputError, match="integers"):
            source.frames_at_index([1.5])  # type: ignore[list-item]
        assert source.session.budget.usage().surfaces == 0
        with source.frame_at(0.0) as first:  # still usable after all of that
            assert first.pts_seconds == 0.0


# -- 6. bytes in memory; short messages for wrong types -------------------------------------------------


def test_bytes_bytearray_and_memoryview_decode_from_memory(vfr_clips: dict[str, str], device: Any) -> None:
    import alpha2

    data = Path(vfr_clips["mkv"]).read_bytes()
    for blob in (data, bytearray(data), memoryview(data)):
        with alpha2.open(blob, hwaccel="none", device=device) as source:
            assert "bytes in memory" in repr(source) and len(repr(source)) < 120
            assert len(source) == 60
            with source.frame_at(0.5) as frame:
                assert frame.pts_seconds is not None and frame.pts_seconds <= 0.5


def test_wrong_sources_get_short_typed_errors(tmp_path: Path) -> None:
    import alpha2
    from alpha2.ffmpeg_bridge.decode import DecodeSession

    big = np.zeros(1_000_000)
    for wrong in (123, big, ["clip.mp4"] * 100_000, None):
        with pytest.raises(InvalidInputError, match="path") as info:
            alpha2.open(wrong)  # type: ignore[arg-type]
        assert len(str(info.value)) < 300
        with pytest.raises(InvalidInputError) as bridge:
            DecodeSession(wrong)  # type: ignore[arg-type]
        assert len(str(bridge.value)) < 300
    with pytest.raises(MediaFormatError) as garbage:
        alpha2.open(b"\x01" * 2_000_000, hwaccel="none")
    assert len(str(garbage.value)) < 300 and "2000000 bytes in memory" in str(garbage.value)
    with pytest.raises(InvalidInputError, match="empty"):
        alpha2.open(b"")
    clip = make_clip(tmp_path / "p.mkv", frames=2)
    with pytest.raises(InvalidInputError, match="as a str"):
        alpha2.open(clip.path.encode())


# -- 7. finalizers --------------------------------------------------------------------------------------


def _settled_threads(baseline: int, timeout_s: float = 5.0) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        gc.collect()
        count = threading.active_count()
        if count <= baseline or time.monotonic() > deadline:
            return count
        time.sleep(0.02)


def test_dropped_sources_close_themselves_with_a_resource_warning(
    vfr_clips: dict[str, str], device: Any
) -> None:
    import alpha2

    path = vfr_clips["mkv"]
    with alpha2.open(path, hwaccel="none", device=device) as warm:  # the process-wide threads, started
        for frame in warm:
            frame.to_ndarray()
            break
    gc.collect()
    baseline = threading.active_count()

    refs = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for i in range(20):
            source = alpha2.open(path, hwaccel="none", device=device)
            refs.append(weakref.ref(source))
            frame = source.next_frame()  # the decode-ahead thread runs from here
            assert frame is not None
            if i % 4 == 0:
                frame.to_ndarray()  # the importer too
            frame.release()
            del frame, source
        for _ in range(3):
            for kept in alpha2.open(path, hwaccel="none", device=device):  # noqa: B007
                break
            refs.append(weakref.ref(kept._source))
            del kept
        assert _settled_threads(baseline) <= baseline, [t.name for t in threading.enumerate()]
    assert all(r() is None for r in refs)  # the finalizers hold no reference to their source
    unclosed = [
        w for w in caught if issubclass(w.category, ResourceWarning) and "VideoSource" in str(w.message)
    ]
    assert len(unclosed) == 23


def test_dropped_async_source_stops_its_worker(vfr_clips: dict[str, str], device: Any) -> None:
    import alpha2

    async def main(close: bool) -> None:
        source = alpha2.open(vfr_clips["mkv"], hwaccel="none", device=device)
        frame = await source.next_async()  # the source's worker thread runs from here
        assert frame is not None
        frame.release()
        if close:
            source.close()

    from alpha2.gpu.sync import WaiterThread

    asyncio.run(main(close=True))  # the process-wide waiter thread, started where a wait was needed
    # The one documented waiter thread may start in a later run instead (a frame decoded before it was
    # asked for needs no wait): it is counted in the baseline either way.
    waiter_running = WaiterThread.instance().running
    baseline = _settled_threads(0, timeout_s=0.5) + (0 if waiter_running else 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for _ in range(5):
            asyncio.run(main(close=False))
        assert _settled_threads(baseline) <= baseline, [t.name for t in threading.enumerate()]
    assert sum(issubclass(w.category, ResourceWarning) for w in caught) >= 5


# -- 8. misuse errors that name the fix -----------------------------------------------------------------


def test_misuse_errors_name_the_fix(vfr_clips: dict[str, str], device: Any) -> None:
    import alpha2
    from alpha2.native_gpu.device.device import Device

    with alpha2.open(vfr_clips["mkv"], hwaccel="none", device=device) as source:
        kept = None
        for i, frame in enumerate(source):
            if i == 0:
                kept = frame
            else:
                break
        assert kept is not None
        with pytest.raises(ClosedError, match=r"released when the loop took the next one.*next_frame\(\)"):
            kept.to_ndarray()

        frame = source.next_frame()
        assert frame is not None
        with frame:
            with pytest.raises(InvalidInputError, match=r"GPUTexture of the source's device.*to_ndarray\(\)"):
                frame.render(np.zeros((48, 64, 4), np.uint8))
            usage = device.gpu_module.TextureUsage
            unusable = device.webgpu_device.create_texture(
                size=(64, 48, 1), format="rgba8unorm", usage=usage.COPY_SRC | usage.TEXTURE_BINDING
            )
            with pytest.raises(InvalidInputError, match="RENDER_ATTACHMENT"):
                frame.render(unusable)
            other = Device.open()
            foreign = other.webgpu_device.create_texture(
                size=(64, 48, 1), format="rgba8unorm", usage=other.gpu_module.TextureUsage.RENDER_ATTACHMENT
            )
            with pytest.raises(InvalidInputError, match="device="):
                frame.render(foreign)
        with pytest.raises(ClosedError, match="release"):
            frame.render()


def test_two_threads_iterating_one_source_is_an_error(vfr_clips: dict[str, str], device: Any) -> None:
    import alpha2
    from alpha2.api.source import ConcurrentIterationError

    with alpha2.open(vfr_clips["mkv"], hwaccel="none", device=device) as source:
        started, finish = threading.Event(), threading.Event()
        seen: list[float | None] = []

        def loop() -> None:
            for frame in source:
                seen.append(frame.pts_seconds)
                started.set()
                finish.wait(10)
                break

        worker = threading.Thread(target=loop)
        worker.start()
        try:
            assert started.wait(10)
            with pytest.raises(ConcurrentIterationError, match="a source per thread"):
                for _ in source:
                    pass
            with pytest.raises(ConcurrentIterationError):
                source.next_frame()
            with pytest.raises(ConcurrentIterationError):
                source.frame_at(0.5)
        finally:
            finish.set()
            worker.join(10)
        assert seen == [0.0]
        assert sum(1 for _ in source) == 59  # the loop ended: this thread may iterate now


# -- 9. asyncio: the loop never waits on opening or rendering -------------------------------------------


def test_open_async_and_render_async_keep_the_loop_free(
    vfr_clips: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import alpha2
    import alpha2.api.source as source_module

    opened_on: list[int] = []
    real_open_decoder = source_module.open_decoder

    def recording(*args: Any, **kwargs: Any) -> Any:
        opened_on.append(threading.get_ident())
        return real_open_decoder(*args, **kwargs)

    monkeypatch.setattr(source_module, "open_decoder", recording)

    async def main() -> tuple[float, int, int]:
        loop_thread = threading.get_ident()
        worst = 0.0
        stop = False

        async def probe() -> None:
            nonlocal worst
            last = time.perf_counter()
            while not stop:
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                worst = max(worst, now - last)
                last = now

        task = asyncio.create_task(probe())
        await asyncio.sleep(0.02)
        # No device given: the Device, importer and renderer are made on the worker too.
        source = await alpha2.open_async(vfr_clips["mp4"], hwaccel="none")
        rendered = 0
        async for frame in source:
            texture = await frame.render_async()
            assert tuple(texture.size[:2]) == (64, 48)
            rendered += 1
            if rendered == 4:
                break
        stop = True
        await task
        source.close()
        return worst, rendered, loop_thread

    worst, rendered, loop_thread = asyncio.run(main())
    assert rendered == 4
    assert opened_on and all(t != loop_thread for t in opened_on)  # the container opened off the loop
    # 2 shared cores: generous, but a blocking open (a Device alone is ~0.5 s on lavapipe) fails it.
    assert worst < 0.15, f"the event loop stalled {worst * 1000:.0f} ms"


def test_gpu_work_done_signals_on_your_own_wgpu_device() -> None:
    """GpuWorkDone (exported for programs that bring their own device) ended its waits FAILED on a
    wgpu-py device, with 'Can only unmap a buffer if its currently mapped': wgpu-py marks the buffer
    mapped only once its settled promise is resolved, and the poll unmapped it before that."""
    import wgpu

    import alpha2

    own = wgpu.gpu.request_adapter_sync().request_device_sync()
    result = alpha2.GpuWorkDone(own).wait(10)
    assert result.signaled, result
    assert asyncio.run(alpha2.GpuWorkDone(own).wait_async(10)).signaled
    done = alpha2.GpuWorkDone(own)
    assert done.wait(10).signaled and done.is_signaled() and done.wait(0).signaled  # asked again: still done


def test_gpu_work_made_under_a_loop_that_has_closed_settles_quietly() -> None:
    """A GpuWorkDone (or a frame's render) made inside ``asyncio.run`` and waited for after it returned
    printed 'Exception ignored from cffi callback ... RuntimeError: Event loop is closed': wgpu-py's
    map promise handed its resolution to the loop running where it was made (seen in CI's warnings
    after test_closing_a_source_inside_async_for_leaves_no_thread)."""
    import sys

    import wgpu

    import alpha2

    own = wgpu.gpu.request_adapter_sync().request_device_sync()

    async def made() -> Any:
        return alpha2.GpuWorkDone(own)

    done = asyncio.run(made())
    caught: list[Any] = []
    hook, sys.unraisablehook = sys.unraisablehook, caught.append
    try:
        assert done.wait(10).signaled
    finally:
        sys.unraisablehook = hook
    assert not caught, [str(u.exc_value) for u in caught]


def test_gpu_work_done_takes_an_alpha2_device_and_refuses_other_things(device: Any) -> None:
    """GpuWorkDone(source.device) and GpuWorkDone('x') raised AttributeError ("module 'alpha2' has no
    attribute 'BufferUsage'"): it looked the usage flags up in the module of whatever it was given."""
    import alpha2

    assert alpha2.GpuWorkDone(device).wait(10).signaled
    for wrong in ("x", None, 3):
        with pytest.raises(InvalidInputError, match="not a WebGPU device"):
            alpha2.GpuWorkDone(wrong)


def test_gpu_work_done_on_a_closed_device_is_a_closed_error() -> None:
    """GpuWorkDone(device) after device.close() raised cffi's TypeError ("initializer for ctype
    'struct WGPUDeviceImpl *' must be a cdata pointer, not NoneType")."""
    import alpha2

    closed = alpha2.Device.open()
    closed.close()
    with pytest.raises(ClosedError, match=r"Device was closed \(Device\.close\(\)"):
        alpha2.GpuWorkDone(closed)


def test_render_async_raises_when_the_gpu_work_it_waits_for_failed(
    vfr_clips: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """render_async() returned the texture as finished when the wait for the GPU ended FAILED (it never
    looked at the wait's result): a device lost mid-render went unseen, and so did GpuWorkDone's own
    failure on wgpu-py devices."""
    import alpha2
    import alpha2.api.source as source_module
    from alpha2.gpu.errors import DeviceLostError

    def lost(self: Any) -> bool:
        raise RuntimeError("Could not map buffer (device lost)")

    async def main() -> None:
        with alpha2.open(vfr_clips["mp4"], hwaccel="none") as source:
            frame = await source.next_async()
            assert frame is not None
            with frame:
                monkeypatch.setattr(source_module.GpuWorkDone, "_poll", lost)
                with pytest.raises(DeviceLostError, match=r"while rendering the frame \(RuntimeError: Could"):
                    await frame.render_async()

    asyncio.run(main())


def test_closing_a_source_inside_async_for_leaves_no_thread(vfr_clips: dict[str, str]) -> None:
    """close() inside ``async for`` left an 'alpha2-decode' thread running for good: the loop's next
    step made a new worker for the closed source (which then raised ClosedError) and nothing stopped it.
    A frame rendered with render_async() after its source closed did the same."""
    import alpha2

    def decode_threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("alpha2-decode")]

    before = decode_threads()

    async def main() -> tuple[int, tuple[int, ...]]:
        source = alpha2.open(vfr_clips["mp4"], hwaccel="none")
        taken = 0
        with pytest.raises(ClosedError, match="was closed"):
            async for _frame in source:
                taken += 1
                if taken == 3:
                    source.close()
        with alpha2.open(vfr_clips["mp4"], hwaccel="none") as other:
            kept = other.next_frame()
        assert kept is not None
        with kept:
            texture = await kept.render_async()  # the frame outlives its source, as render() does
        return taken, tuple(texture.size[:2])

    taken, size = asyncio.run(main())
    assert (taken, size) == (3, (64, 48))
    deadline = time.monotonic() + 5
    while decode_threads() != before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert decode_threads() == before


def test_frames_converted_on_several_threads_keep_their_own_pixels(tmp_path: Path) -> None:
    """The frames of one loop handed to several worker threads (what ConcurrentIterationError tells
    to do) came back from to_ndarray() with another frame's pixels, 8 to 19 of 60: each conversion drew
    into the renderer's one output texture of that size and read it back, and two threads interleaved."""
    import queue

    import alpha2

    clip = make_clip(tmp_path / "t.mp4", frames=48, width=64, height=48)
    with alpha2.open(clip.path, hwaccel="none") as source:
        expected = {frame.pts_seconds: frame.to_ndarray() for frame in source}
    handed: queue.Queue[Any] = queue.Queue(maxsize=8)
    got: dict[float | None, np.ndarray] = {}

    def convert() -> None:
        while (frame := handed.get()) is not None:
            with frame:
                got[frame.pts_seconds] = frame.to_ndarray()
        handed.put(None)

    workers = [threading.Thread(target=convert) for _ in range(3)]
    for worker in workers:
        worker.start()
    with alpha2.open(clip.path, hwaccel="none") as source:
        while (frame := source.next_frame()) is not None:
            handed.put(frame)
        handed.put(None)
        for worker in workers:
            worker.join(60)
    assert sorted(got) == sorted(expected)
    wrong = [pts for pts in expected if not np.array_equal(got[pts], expected[pts])]
    assert not wrong, f"{len(wrong)} of {len(expected)} frames came back with other pixels"


@pytest.mark.vulkan
def test_a_batch_renders_in_the_order_asked(tmp_path: Path) -> None:
    """frames_at decodes across seeks, yet its frames render in the order asked (one decoder generation
    for the batch: the importer refuses a frame of an older generation than one it has seen)."""
    import alpha2

    clip = make_clip(tmp_path / "g.mp4", frames=40, gop=5, width=64, height=48)
    with alpha2.open(clip.path, hwaccel="none") as source:
        frames = source.frames_at([1.2, 0.1, 0.7, 0.05])
        try:
            arrays = [frame.to_ndarray() for frame in frames]
        finally:
            for frame in frames:
                frame.release()
    assert all(a.shape == (48, 64, 3) for a in arrays)


def test_len_agrees_with_the_frames_shown_of_an_mp4_with_an_edit_list(tmp_path: Path) -> None:
    """An MP4 cut with an edit list says in its header how many packets it holds, the discarded ones
    before its start too: len() counts the frames shown, as frames_at_index and iteration do."""
    import alpha2
    from tests.test_audio_copy_formats import _make

    path = _make(tmp_path / "cut.mp4", "aac", seconds=4.0, shift=1.0)
    with alpha2.open(path, hwaccel="none") as source:
        shown = sum(1 for _ in source)
    with alpha2.open(path, hwaccel="none") as source:
        assert len(source) == shown < 100
        last = source.frames_at_index([len(source) - 1])
        assert len(last) == 1
        for frame in last:
            frame.release()


def test_cancelled_async_calls_lose_nothing(vfr_clips: dict[str, str], device: Any) -> None:
    """next_async cancelled while it decodes (asyncio.wait_for timing out) hands its frame to the next
    call, so no frame is skipped; open_async cancelled closes the source it made (no ResourceWarning
    for a source the caller never had)."""
    import alpha2

    with alpha2.open(vfr_clips["mkv"], hwaccel="none", device=device) as plain:
        expected = [f.pts_seconds for f in plain]

    async def main() -> list[float | None]:
        source = alpha2.open(vfr_clips["mkv"], hwaccel="none", device=device)
        seen: list[float | None] = []
        try:
            for _ in range(3):
                task = asyncio.ensure_future(source.next_async())
                await asyncio.sleep(0)  # the call is on the worker
                if task.cancel():
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                else:  # it was done already: its frame is the caller's, as wait_for gives it
                    done = task.result()
                    assert done is not None
                    seen.append(done.pts_seconds)
                    done.release()
            while (frame := await source.next_async()) is not None:
                seen.append(frame.pts_seconds)
                frame.release()
        finally:
            source.close()
        return seen

    assert asyncio.run(main()) == expected

    async def cancel_open() -> None:
        task = asyncio.ensure_future(alpha2.open_async(vfr_clips["mkv"], hwaccel="none", device=device))
        await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        asyncio.run(cancel_open())
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def _open_gop_cut(path: Path) -> str:
    """An MPEG-2 stream of open GOPs, cut at its second key frame as a recording that starts mid-stream
    is: the B-frames shown before that key frame refer to the GOP cut away, and the decoder drops them."""
    whole = make_clip(path.with_name("whole.ts"), "mpeg2", 64, 48, 48, rate=25, gop=12, b_frames=2).path
    keys = 0
    with av.open(whole) as inp, av.open(str(path), "w") as out:
        copy = out.add_stream_from_template(inp.streams.video[0])
        for packet in inp.demux(video=0):
            keys += bool(packet.is_keyframe)
            if keys >= 2 and packet.dts is not None:
                packet.stream = copy
                out.mux(packet)
    return str(path)


def test_frames_cut_from_an_open_gop_are_not_counted(tmp_path: Path, device: Any) -> None:
    """len() and frames_at_index count the frames shown, not the packets: the leading B-frames of a
    stream cut mid-GOP are never shown (ffprobe -count_frames leaves them out too), and counted, they
    made len() two too many and every index of the first GOP name a frame two early."""
    import alpha2

    path = _open_gop_cut(tmp_path / "cut.ts")
    with av.open(path) as container:  # the premise: packets the decoder drops
        stream = container.streams.video[0]
        packets = sum(1 for p in container.demux(stream) if p.size)
    ref = reference(path)
    assert packets == len(ref) + 2
    with alpha2.open(path, hwaccel="none", device=device) as source:
        assert len(source) == len(ref)
        indices = [0, 1, 2, 5, len(ref) - 1, -1]
        frames = source.frames_at_index(indices)
        start = source.info.start_seconds
        try:
            for i, frame in zip(indices, frames):
                assert frame.pts_seconds == pytest.approx(ref[i].seconds + start, abs=1e-6)
                assert np.array_equal(_luma(frame), ref[i].luma)
        finally:
            for frame in frames:
                frame.release()
        with pytest.raises(IndexError):
            source.frames_at_index([len(ref)])
