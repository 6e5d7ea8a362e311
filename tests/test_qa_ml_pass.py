"""Faults an outside pass over the machine-learning API found (frames_at, frames_at_index, to_tensor),
each kept from coming back. Clips are made here with PyAV."""

from __future__ import annotations

import fractions
from pathlib import Path

import numpy as np
import pytest

from tests.media import make_clip


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    pytest.importorskip("av")
    folder = tmp_path_factory.mktemp("qa_ml")
    made = {
        f"rot{ccw}": make_clip(
            folder / f"rot{ccw}.mp4", width=40, height=24, frames=3, pix_fmt="yuv444p", rotation_ccw=ccw
        ).path
        for ccw in (90, 180, 270)
    }
    return made


@pytest.mark.vulkan
@pytest.mark.parametrize("ccw", [90, 180, 270])
def test_to_tensor_turns_a_rotated_picture_as_to_ndarray_does(clips: dict[str, str], ccw: int) -> None:
    """A file with a display matrix: to_tensor's picture is the one shown (to_ndarray's), turned, not the
    stored picture squeezed into the turned shape; a crop is a rectangle of the shown picture."""
    import alpha2

    with alpha2.open(clips[f"rot{ccw}"], hwaccel="none") as source:
        frames = source.frames_at_index([1])
        try:
            frame = frames[0]
            shown = frame.to_ndarray()
            assert shown.shape == (frame.height, frame.width, 3)
            assert shown.shape[:2] == ((24, 40) if ccw == 180 else (40, 24))
            tensor = source.to_tensor(frames).numpy()
            assert np.array_equal(tensor[0], shown)
            x, y, w, h = 3, 5, 12, 16  # not symmetric in the picture: a wrong mapping lands elsewhere
            cropped = frame.to_tensor(crop=(x, y, w, h)).numpy()
            assert cropped.shape == (h, w, 3)
            assert np.array_equal(cropped, shown[y : y + h, x : x + w])
            chw = source.to_tensor(frames, layout="CHW", dtype="float32").numpy()
            assert np.allclose(chw[0].transpose(1, 2, 0) * 255, shown, atol=1e-3)
        finally:
            for item in frames:
                item.release()


@pytest.mark.parametrize("method", ["frames_at", "frames_at_index"])
def test_batch_calls_refuse_a_non_sequence_with_a_typed_error(clips: dict[str, str], method: str) -> None:
    """frames_at(0.5), frames_at_index(3) or None: an InvalidInputError naming what is taken (and, for a
    number, how to ask for one), not Python's 'object is not iterable' TypeError; iterables still work."""
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    one = 0.5 if method == "frames_at" else 3
    with alpha2.open(clips["rot90"], hwaccel="none") as source:
        call = getattr(source, method)
        for wrong in (one, None, "0", b"0", np.array(one)):
            with pytest.raises(InvalidInputError, match=f"{method} takes a sequence") as caught:
                call(wrong)
            assert not isinstance(caught.value, TypeError)
        with pytest.raises(InvalidInputError, match=rf"for one, pass \[{one}\]"):
            call(one)
        asked = [0.0, 0.04] if method == "frames_at" else [0, 1]
        for good in (np.array(asked), tuple(asked), (v for v in asked)):
            frames = call(good)
            assert len(frames) == 2
            for frame in frames:
                frame.release()
        # Frames come back in the order asked: a set has none, a mapping is neither times nor indices.
        with pytest.raises(InvalidInputError, match="has no order"):
            call(set(asked))
        with pytest.raises(InvalidInputError, match=f"{method} takes a sequence .* got a dict"):
            call(dict.fromkeys(asked))


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ({"threads": "x"}, "threads must be a whole number >= 0"),
        ({"threads": -1}, "threads must be a whole number >= 0"),
        ({"max_pixels": "x"}, "max_pixels must be a whole number >= 1"),
        ({"stream_index": "0"}, "stream_index must be a whole number >= 0"),
        ({"cuda_ordinal": "x"}, "cuda_ordinal must be a whole number >= 0"),
        ({"budget": 3}, "budget must be an alpha2 SurfaceBudget"),
        ({"reserve_timeout_s": "x"}, "reserve_timeout_s must be a number of seconds"),
        ({"reserve_timeout_s": float("nan")}, "reserve_timeout_s must be a number of seconds"),
    ],
)
def test_open_refuses_an_option_of_the_wrong_type_by_name(
    clips: dict[str, str], option: dict[str, object], said: str
) -> None:
    """Found by an outside pass: these failed with Python's TypeError or AttributeError from inside the
    decoder, the budget's and the timeout's only at the first frames_at."""
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=said):
        alpha2.open(clips["rot90"], hwaccel="none", **option)


def test_open_s_unknown_option_message_names_its_own_options(clips: dict[str, str]) -> None:
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="did you mean parallel"):
        alpha2.open(clips["rot90"], paralel=2)
    with pytest.raises(InvalidInputError, match="did you mean copy_ahead"):
        alpha2.open(clips["rot90"], copyahead=True)
    with pytest.raises(
        InvalidInputError, match="it takes device, hwaccel, prefetch, copy_ahead, parallel, budget"
    ):
        alpha2.open(clips["rot90"], zzz=1)


def test_tensor_methods_refuse_unknown_or_positional_options_with_a_typed_error(
    clips: dict[str, str],
) -> None:
    """frame.to_tensor(sise=...) or source.to_tensor(frames, (224, 224)): an InvalidInputError naming the
    options (and the near one), where Python's TypeError came through before. Nothing is rendered."""
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    with alpha2.open(clips["rot90"], hwaccel="none") as source:
        frames = source.frames_at_index([0])
        try:
            frame = frames[0]
            calls = [
                (
                    lambda: frame.to_tensor(sise=(8, 8)),
                    r"Frame.to_tensor\(\) got an unknown option 'sise'; did you mean size",
                ),
                (lambda: frame.to_tensor((8, 8)), r"Frame.to_tensor\(\) takes its options by keyword"),
                (lambda: source.to_tensor(frames, dtpye="float16"), "did you mean dtype"),
                (
                    lambda: source.to_tensor(frames, (8, 8)),
                    r"VideoSource.to_tensor\(\) takes its options by keyword",
                ),
                (
                    lambda: source.to_tensor(frames, colour="rgb"),
                    "it takes size, crop, layout, dtype, mean, std",
                ),
            ]
            for call, message in calls:
                with pytest.raises(InvalidInputError, match=message) as caught:
                    call()
                assert not isinstance(caught.value, TypeError)
            assert frame.path is None  # refused before any import
        finally:
            for item in frames:
                item.release()


def _cut_by_an_edit_list(path: Path, frames: int, cut: int) -> str:
    """An H.264 MP4 (64x48, 25 fps, B-frames) whose first ``cut`` frames lie before 0: the MP4 muxer
    writes an edit list that discards them, as ``ffmpeg -ss T -c copy`` makes."""
    import av

    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=25)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        video.codec_context.options = {"preset": "ultrafast", "bf": "2"}
        packets: list[av.Packet] = []
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), i * 9 % 255, np.uint8), format="rgb24")
            frame.pts, frame.time_base = i, fractions.Fraction(1, 25)
            packets += video.encode(frame)
        packets += video.encode(None)
        for packet in packets:
            assert packet.pts is not None and packet.dts is not None
            packet.pts -= cut
            packet.dts -= cut
            out.mux(packet)
    return str(path)


def test_len_counts_the_frames_shown_when_an_edit_list_cuts_one(tmp_path: Path) -> None:
    """A cut of one frame of 28 lay within the tolerance of the duration check: len() said the container's
    28 while frames_at_index counted 27, so frames_at_index([len(source) - 1]) raised FrameIndexError."""
    import av

    import alpha2

    path = _cut_by_an_edit_list(tmp_path / "cut.mp4", frames=28, cut=1)
    with av.open(path) as container:
        shown = sum(1 for _ in container.decode(video=0))
        assert container.streams.video[0].frames == shown + 1  # the container counts the cut sample
    with alpha2.open(path, hwaccel="none") as source:
        assert len(source) == shown
        last = source.frames_at_index([len(source) - 1, -1])
        try:
            assert last[0].pts_seconds == last[1].pts_seconds
        finally:
            for frame in last:
                frame.release()
    plain = make_clip(tmp_path / "plain.mp4", frames=28).path
    with alpha2.open(plain, hwaccel="none") as source:
        assert len(source) == 28 and not source.session.discards_seen  # no scan for a plain file


def test_times_count_from_the_stream_start_which_info_says(tmp_path: Path) -> None:
    """An MPEG-TS stream starts at 1.4 s: frames_at(0.0) is its first frame, whose pts_seconds is 1.4. The
    offset between the times asked and the times handed back was said nowhere; info.start_seconds says it,
    and subtracting it from a frame's pts_seconds asks for that frame again."""
    import av

    import alpha2

    made = make_clip(tmp_path / "made.ts", width=32, height=16, frames=10, rate=25).path
    path = str(tmp_path / "clip.ts")
    with av.open(made) as inp, av.open(path, "w") as out:  # 1.4 s on every timestamp, as ffmpeg muxes TS
        stream = out.add_stream_from_template(inp.streams.video[0])
        for packet in inp.demux(inp.streams.video[0]):
            if packet.size:
                assert packet.time_base is not None and packet.pts is not None and packet.dts is not None
                shift = round(fractions.Fraction(7, 5) / packet.time_base)
                packet.pts, packet.dts = packet.pts + shift, packet.dts + shift
                packet.stream = stream
                out.mux(packet)
    with alpha2.open(path, hwaccel="none") as source:
        start = source.info.start_seconds
        assert abs(start - 1.4) < 1e-6
        frames = source.frames_at_index(list(range(10)))
        try:
            assert abs(frames[0].pts_seconds - start) < 1e-6
            times = [f.pts_seconds - start for f in frames]
            again = source.frames_at(times[::-1])
            try:
                assert [f.pts_seconds for f in again] == [f.pts_seconds for f in frames][::-1]
            finally:
                for frame in again:
                    frame.release()
        finally:
            for frame in frames:
                frame.release()
    with alpha2.open(make_clip(tmp_path / "clip.mp4", width=32, height=16, frames=4).path) as source:
        assert source.info.start_seconds == 0.0


@pytest.mark.vulkan
def test_a_mean_in_codes_is_refused_with_the_scaled_one(clips: dict[str, str]) -> None:
    """ImageNet's mean in codes (123.675, ...) was taken as it is: every value came out near -120, with
    nothing said. It is refused, with the mean on the 0..1 scale it meant."""
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    with alpha2.open(clips["rot90"], hwaccel="none") as source:
        frames = source.frames_at_index([0])
        try:
            with pytest.raises(InvalidInputError, match=r"0\.485, 0\.456, 0\.406"):
                source.to_tensor(
                    frames, dtype="float32", mean=(123.675, 116.28, 103.53), std=(58.395, 57.12, 57.375)
                )
            ok = source.to_tensor(frames, dtype="float32", mean=(0.485, 0.456, 0.406), std=0.25)
            assert ok.shape[0] == 1
        finally:
            for frame in frames:
                frame.release()


def test_the_end_of_stream_message_says_where_the_frames_end(tmp_path: Path) -> None:
    """Found by an outside pass: a VFR MP4 whose stream header says 3.8 s (ffmpeg's select filter and
    -fps_mode vfr wrote it so) has frames to 3.933 s; frames_at took times up to there, and then said
    the file 'is 3.800 s long'. The message now says the end of the frames decoded when it is later."""
    from types import SimpleNamespace

    import alpha2
    from alpha2.api.source import VideoSource

    short_header = SimpleNamespace(
        _session=SimpleNamespace(info=SimpleNamespace(duration_seconds=3.8), decoded_end_seconds=3.9333)
    )
    assert VideoSource._end_seconds(short_header) == "3.933 s long"  # type: ignore[arg-type]
    long_header = SimpleNamespace(
        _session=SimpleNamespace(info=SimpleNamespace(duration_seconds=4.0), decoded_end_seconds=1.0)
    )
    assert VideoSource._end_seconds(long_header) == "4.000 s long"  # type: ignore[arg-type]
    clip = make_clip(tmp_path / "c.mp4", width=32, height=24, frames=12, rate=30)
    with alpha2.open(clip.path, hwaccel="none") as source:
        for _frame in source:
            pass
        assert source._session.decoded_end_seconds == pytest.approx(0.4)
