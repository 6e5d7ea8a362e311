"""The front door's arguments (alpha2.api.arguments and its callers): a wrong type or value is an
InvalidInputError that names the argument, raised by the call that took it, never an AttributeError or
TypeError from inside; what is close to right is taken (a ``(w, h)`` pair for a Size, an enum's value)."""

from __future__ import annotations

import gc
import threading
import warnings
from pathlib import Path

import pytest
from media import make_clip

from alpha2.api import arguments
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_clip(tmp_path_factory.mktemp("arguments") / "clip.mp4", frames=6, audio=True).path


def test_the_checks_name_the_argument_and_normalise() -> None:
    assert arguments.size("tile", (320, 180)) == Size(320, 180) == arguments.size("tile", "320x180")
    assert arguments.real("crf", 23) == 23.0 and arguments.whole("frames", 5) == 5
    for bad in ((320,), (0, 10), (1.5, 2), "big", None):
        with pytest.raises(InvalidInputError, match=r"^tile"):
            arguments.size("tile", bad)
    with pytest.raises(InvalidInputError, match="crf must be a number, got 'x'"):
        arguments.real("crf", "x")
    with pytest.raises(InvalidInputError, match="crf must be a number"):
        arguments.real("crf", True)
    with pytest.raises(InvalidInputError, match="seconds must be 0 or more, got -1"):
        arguments.real("seconds", -1, low=0)
    # inf was told 'must be a number', and an int past a float's range raised a bare OverflowError
    # (AudioSource.seek(10**400), read(10**400): an outside pass)
    for huge in (float("inf"), float("-inf"), float("nan"), 10**400, -(10**400)):
        with pytest.raises(InvalidInputError, match="seconds must be a finite number, got "):
            arguments.real("seconds", huge, low=0)
    with pytest.raises(InvalidInputError, match="index must be a whole number, got '0'"):
        arguments.whole("index", "0")
    with pytest.raises(InvalidInputError, match="audio must be True or False"):
        arguments.flag("audio", "yes")


def test_transcode_options_take_sizes_choices_and_refuse_types(clip: str, tmp_path: Path) -> None:
    from alpha2.api.transcode_choices import ColourChoice
    from alpha2.api.transcoder import TranscodeOptions, transcode

    options = TranscodeOptions(size=(32, 24), colour="bt601")  # type: ignore[arg-type]
    assert options.size == Size(32, 24) and options.colour is ColourChoice.BT601
    cases = (
        ({"crf": "x"}, "crf must be a number"),
        ({"codec": 5}, "codec must be a str"),
        ({"colour": "nope"}, "colour must be one of 'auto'"),
        ({"hwaccel": "zz"}, "hwaccel must be one of"),
        ({"from_seconds": 2, "to_seconds": 1}, "^to_seconds 1 s is not after from_seconds 2 s"),
    )
    for kwargs, message in cases:
        with pytest.raises(InvalidInputError, match=message):
            TranscodeOptions(**kwargs)  # type: ignore[arg-type]
    out = tmp_path / "out.mp4"
    stats = transcode(clip, out, {"frames": 3, "size": (32, 24)})  # type: ignore[arg-type]
    assert stats.frames == 3 and out.exists()
    with pytest.raises(InvalidInputError, match="unknown transcode option 'framez'"):
        transcode(clip, tmp_path / "b.mp4", {"framez": 3})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="options must be a TranscodeOptions"):
        transcode(clip, tmp_path / "c.mp4", 3)  # type: ignore[arg-type]


def test_transcode_size_takes_a_free_side_as_a_pair() -> None:
    """``--size -1x720`` is 720 high; ``TranscodeOptions(size=(-1, 720))`` was refused ('a (width, height)
    pair of positive ints'), only the string taken: found by an outside pass."""
    from alpha2.api.pipeline import FREE_SIDE
    from alpha2.api.transcode_plan import TranscodeOptions

    high = TranscodeOptions(size="-1x720").size
    assert high == Size(FREE_SIDE, 720)
    for pair in ((-1, 720), (None, 720), (-2, 720), [-1, 720]):
        assert TranscodeOptions(size=pair).size == high  # type: ignore[arg-type]
    assert TranscodeOptions(size=(1280, None)).size == Size(1280, FREE_SIDE)  # type: ignore[arg-type]
    for bad in ((-1, -1), (None, None), (0, -1)):
        with pytest.raises(InvalidInputError, match=r"^size"):
            TranscodeOptions(size=bad)  # type: ignore[arg-type]


def test_transcode_refuses_a_source_or_output_that_is_no_path(clip: str, tmp_path: Path) -> None:
    """``transcode(src, None)`` was os.fspath's TypeError ('expected str, bytes or os.PathLike object'),
    and a bytes output a TypeError from str.endswith: found by an outside pass."""
    from alpha2.api.transcoder import transcode

    for source, output, name in (
        (clip, None, "output"),
        (clip, 5, "output"),
        (clip, str(tmp_path / "a.mp4").encode(), "output"),
        (None, tmp_path / "a.mp4", "source"),
        (7, tmp_path / "a.mp4", "source"),
    ):
        with pytest.raises(InvalidInputError, match=f"^{name} must be a path"):
            transcode(source, output)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_create_refuses_bad_arguments_before_writing(tmp_path: Path) -> None:
    import alpha2

    path = tmp_path / "out.mp4"
    cases = (
        ({"colour": "bt601"}, "colour must be an alpha2 ColourInfo"),
        ({"crf": "x"}, "crf must be a number"),
        ({"codec": 5}, "codec must be a str"),
        ({"gopsize": 3}, r"alpha2.create\(\) got an unknown option 'gopsize'; did you mean gop_size"),
        ({"preset": "nope"}, "unknown libx264 preset 'nope'"),
        ({"gop_size": 1.5}, "gop_size must be a whole number"),  # was taken (FFmpeg's int cut it to 1)
    )
    for kwargs, message in cases:
        with pytest.raises(InvalidInputError, match=message):
            alpha2.create(path, **kwargs)
    assert list(tmp_path.iterdir()) == []  # nothing written, no partial file


def test_depth_takes_an_int_as_its_string() -> None:
    """``TranscodeOptions(depth=8)`` was refused ("depth must be one of 'auto', '8', '10' ..., got 8"):
    the number a user types for a bit depth is an int."""
    from alpha2.api.transcode_choices import DepthChoice
    from alpha2.api.transcode_plan import TranscodeOptions

    assert TranscodeOptions(depth=8).depth is DepthChoice.EIGHT  # type: ignore[arg-type]
    assert TranscodeOptions(depth=10).depth is DepthChoice.TEN  # type: ignore[arg-type]
    for bad in (9, True, 8.0):
        with pytest.raises(InvalidInputError, match="depth must be one of"):
            TranscodeOptions(depth=bad)  # type: ignore[arg-type]


def test_open_describe_and_audio_refuse_bad_arguments(clip: str) -> None:
    import alpha2
    from alpha2.api.errors import EndOfStreamError

    cases = (
        ({"hwaccel": "nvdec"}, "hwaccel must be one of"),  # None is software, as PyAV reads it
        ({"copy_ahead": "yes"}, "copy_ahead must be True or False"),
        ({"prefetchh": 2}, r"unknown option 'prefetchh'; did you mean prefetch"),
    )
    for kwargs, message in cases:
        with pytest.raises(InvalidInputError, match=message):
            alpha2.open(clip, **kwargs)
    with open(clip) as text, pytest.raises(InvalidInputError, match="binary mode"):
        alpha2.open(text)  # type: ignore[arg-type]
    with alpha2.open(clip, hwaccel="none") as source:
        frame = source.next_frame()
        assert frame is not None
        with frame, pytest.raises(InvalidInputError, match="index must be a whole number"):
            frame.plane("0")  # type: ignore[arg-type]
        with pytest.raises(EndOfStreamError):
            source.frame_at(2**70)  # past the end, not an overflow
    with pytest.raises(InvalidInputError, match="hwaccel must be one of"):
        alpha2.describe(clip, hwaccel="zzz")
    with pytest.raises(InvalidInputError, match="describe takes a path"):
        alpha2.describe(b"not a path")  # type: ignore[arg-type]
    with alpha2.open_audio(clip) as audio:
        for call in (lambda: audio.read("x"), lambda: audio.seek("x"), lambda: audio.seek(-1)):
            with pytest.raises(InvalidInputError, match="seconds"):
                call()


def test_stream_group_takes_a_list_sizes_as_pairs_and_stops_when_dropped(clip: str) -> None:
    from alpha2.api.streams import StreamGroup

    with pytest.raises(InvalidInputError, match="sources must be a list of paths"):
        StreamGroup(clip)  # type: ignore[arg-type]

    def dropped() -> None:
        group = StreamGroup([clip, clip], tile=(32, 24), hwaccel="none")  # type: ignore[arg-type]
        assert group.tile == Size(32, 24)
        group.tick()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dropped()
        gc.collect()
    assert any(issubclass(w.category, ResourceWarning) and "StreamGroup" in str(w.message) for w in caught)
    assert not [t for t in threading.enumerate() if t.name.startswith("alpha2-decode")]


def test_the_names_the_docs_promise_are_exported() -> None:
    import alpha2
    import alpha2.api
    from alpha2.api import errors

    for name in ("GpuWorkDone", "RgbTensor", "EndOfStreamError", "FrameIndexError", "AudioTrack"):
        assert getattr(alpha2, name) is getattr(alpha2.api, name)
    for name in ("EndOfStreamError", "FrameIndexError", "ConcurrentIterationError", "NoAudioStreamError"):
        assert issubclass(getattr(errors, name), errors.InvalidInputError)


def test_create_refuses_a_bad_audio_from_at_once_with_its_type(clip: str, tmp_path: Path) -> None:
    """audio_from missing, or without sound, is refused by create() with the media error's type and
    kind (not an INTERNAL encoder failure at the first frame); a Writer closed with nothing written
    says so as the caller's mistake."""
    import alpha2
    from alpha2.api.errors import MediaNotFoundError, NoAudioStreamError
    from alpha2.gpu.errors import ErrorKind

    silent = make_clip(tmp_path / "silent.mp4", frames=3).path
    with pytest.raises(NoAudioStreamError, match="has no audio stream"):
        alpha2.create(tmp_path / "a.mp4", audio_from=silent)
    with pytest.raises(MediaNotFoundError):
        alpha2.create(tmp_path / "b.mp4", audio_from=tmp_path / "missing.mp4")
    with pytest.raises(Exception, match="no frames were encoded") as caught:
        alpha2.create(tmp_path / "c.mp4", audio_from=clip).close()
    assert caught.value.kind is ErrorKind.INVALID_INPUT
    # A GIF holds no sound: its copier left the audio out, said only in session.stats (outside pass).
    with pytest.raises(InvalidInputError, match="the gif container holds no sound"):
        alpha2.create(tmp_path / "d.gif", audio_from=clip)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["silent.mp4"]


def test_an_empty_codec_name_is_refused() -> None:
    """``TranscodeOptions(codec="")`` (and ``--codec ""``) was taken as the container's default codec."""
    from alpha2.api.transcode_plan import TranscodeOptions

    for empty in ("", "  "):
        with pytest.raises(InvalidInputError, match=r"codec must name a codec .* got an empty name"):
            TranscodeOptions(codec=empty)
    assert TranscodeOptions(codec=None).codec is None


@pytest.mark.vulkan
def test_a_segmented_transcode_refuses_a_device_it_would_not_use(clip: str, tmp_path: Path) -> None:
    """Its parts run in processes of their own, each opening the GPU ALPHA2_GPU_ADAPTER pins: a device
    given was ignored, said nowhere (found by an outside pass)."""
    import alpha2
    from alpha2.api.transcoder import TranscodeOptions, transcode

    device = alpha2.Device.open()
    try:
        with pytest.raises(InvalidInputError, match="a segmented transcode does not take a device"):
            transcode(clip, tmp_path / "out.mp4", TranscodeOptions(segments=2), device=device)
    finally:
        device.close()
    assert list(tmp_path.iterdir()) == []
