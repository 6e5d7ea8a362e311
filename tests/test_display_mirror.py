"""A display matrix with a flip: the picture is shown as FFmpeg's command line shows it (a horizontal
flip alone mirrored, a vertical flip a mirror and a half turn, a transpose a mirror and three quarters),
by the renderer, the tensors, the CPU snapshot, the transcoder and the probe.

The files are MP4s whose track header matrix is written by hand (as ``ffmpeg -display_hflip`` does);
FFmpeg 5.1's command line shows each of the eight the way ``EXPECTED`` says (checked by hand: its
``transpose`` / ``hflip`` / ``vflip`` filters match the numpy operations here pixel for pixel).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np
import pytest
from media import make_clip

import alpha2
from alpha2.api.snapshot_cpu import rotate
from alpha2.api.transcode_plan import plan_transcode
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.gpu.colour import ColourInfo
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation, Size

Op = Callable[[np.ndarray], np.ndarray]

# (a, b, c, d) of the track header's matrix -> (rotation, mirrored) and the picture as shown.
EXPECTED: dict[tuple[int, int, int, int], tuple[Rotation, bool, Op]] = {
    (1, 0, 0, 1): (Rotation.NONE, False, lambda p: p),
    (-1, 0, 0, 1): (Rotation.NONE, True, lambda p: p[:, ::-1]),  # hflip
    (1, 0, 0, -1): (Rotation.CW180, True, lambda p: p[::-1]),  # vflip
    (-1, 0, 0, -1): (Rotation.CW180, False, lambda p: p[::-1, ::-1]),
    (0, 1, -1, 0): (Rotation.CW90, False, lambda p: np.rot90(p, -1)),
    (0, -1, 1, 0): (Rotation.CW270, False, lambda p: np.rot90(p, 1)),
    (0, 1, 1, 0): (Rotation.CW270, True, lambda p: p.transpose(1, 0, 2)),  # transpose
    (0, -1, -1, 0): (Rotation.CW90, True, lambda p: p[::-1, ::-1].transpose(1, 0, 2)),  # anti-transpose
}


def with_matrix(plain: str, path: Path, a: int, b: int, c: int, d: int) -> str:
    """``plain`` (an MP4) with its video track header's matrix set to [a b; c d] (16.16)."""
    data = bytearray(Path(plain).read_bytes())
    at = data.find(b"tkhd")
    assert at > 0
    version = data[at + 4]
    matrix = at + 8 + (20 if version == 0 else 32) + 16
    values = list(struct.unpack(">9i", data[matrix : matrix + 36]))
    assert values[0] == values[4] == 65536  # the identity PyAV wrote
    values[0], values[1], values[3], values[4] = (v * 65536 for v in (a, b, c, d))
    data[matrix : matrix + 36] = struct.pack(">9i", *values)
    path.write_bytes(bytes(data))
    return str(path)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("mirror")
    return make_clip(root / "plain.mp4", "h264", 64, 48, 3).path


def _shown(path: str) -> tuple[np.ndarray, alpha2.VideoInfo]:
    with alpha2.open(path, hwaccel="none") as source:
        frame = next(iter(source))
        try:
            return frame.to_ndarray(), source.info
        finally:
            frame.release()


@pytest.mark.vulkan
@pytest.mark.parametrize("matrix", list(EXPECTED), ids=lambda m: "_".join(map(str, m)))
def test_each_orientation_is_shown_as_ffmpeg_shows_it(
    plain: str, tmp_path: Path, matrix: tuple[int, int, int, int]
) -> None:
    rotation, mirrored, op = EXPECTED[matrix]
    reference, _ = _shown(plain)
    picture, info = _shown(with_matrix(plain, tmp_path / "m.mp4", *matrix))
    assert (info.rotation, info.mirrored) == (rotation, mirrored)
    expected = np.ascontiguousarray(op(reference))
    assert (info.width, info.height) == (expected.shape[1], expected.shape[0])
    np.testing.assert_array_equal(picture, expected)


def _tensor(path: str, crop: tuple[int, int, int, int]) -> np.ndarray:
    with alpha2.open(path, hwaccel="none") as source:
        frame = next(iter(source))
        try:
            return np.asarray(frame.to_tensor(crop=crop, layout="HWC", dtype="uint8", device="cpu").numpy())
        finally:
            frame.release()


@pytest.mark.vulkan
@pytest.mark.parametrize(
    ("matrix", "stored", "op"),
    [
        ((-1, 0, 0, 1), (40, 6, 20, 16), lambda p: p[:, ::-1]),  # hflip: columns counted from the right
        ((0, 1, 1, 0), (6, 4, 16, 20), lambda p: p.transpose(1, 0, 2)),  # transpose: x and y swap
    ],
    ids=["hflip", "transpose"],
)
def test_a_tensors_crop_is_of_the_picture_as_shown(
    plain: str, tmp_path: Path, matrix: tuple[int, int, int, int], stored: tuple[int, ...], op: Op
) -> None:
    """The crop (4, 6, 20, 16) of the picture as shown is the stored picture's rectangle it covers,
    flipped and turned as shown (the same samples: the crop's edges clamp the same)."""
    path = with_matrix(plain, tmp_path / "m.mp4", *matrix)
    got = _tensor(path, (4, 6, 20, 16))
    assert got.shape[:2] == (16, 20)
    x, y, w, h = stored
    np.testing.assert_array_equal(got, np.ascontiguousarray(op(_tensor(plain, (x, y, w, h)))))


def test_the_cpu_snapshot_mirrors_before_it_turns() -> None:
    a = np.arange(6).reshape(2, 3)
    assert rotate(a, Rotation.NONE, mirrored=True).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert rotate(a, Rotation.CW270, mirrored=True).tolist() == [[0, 3], [1, 4], [2, 5]]  # a transpose


def test_a_mirror_is_never_passed_through() -> None:
    colour = ColourInfo()
    plan = plan_transcode(
        Size(64, 48), PixelFormat.YUV420P, colour, TranscodeOptions(), mirrored=True, rotation=Rotation.CW90
    )
    assert not plan.passthrough and plan.mirrored and plan.rotation is Rotation.CW90
    assert "flip the picture left to right" in plan.reason
    assert plan.output_size == Size(48, 64)
    assert plan_transcode(Size(64, 48), PixelFormat.YUV420P, colour, TranscodeOptions()).passthrough


@pytest.mark.vulkan
def test_a_transcode_writes_the_mirrored_picture(plain: str, tmp_path: Path) -> None:
    path = with_matrix(plain, tmp_path / "hflip.mp4", -1, 0, 0, 1)
    out = tmp_path / "out.mp4"
    stats = transcode(path, out, TranscodeOptions(audio=False, hwaccel="none", crf=4))
    assert stats.plan is not None and stats.plan.mirrored and not stats.plan.passthrough
    with av.open(plain) as src, av.open(str(out)) as got:
        a = next(src.decode(video=0)).to_ndarray(format="gray").astype(np.int32)
        frame = next(got.decode(video=0))
        b = frame.to_ndarray(format="gray").astype(np.int32)
        assert not frame.rotation  # no display matrix: the pixels are flipped
    assert np.abs(a[:, ::-1] - b).mean() < 3 < np.abs(a - b).mean()


def test_the_probe_says_mirrored(plain: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from alpha2.apps.cli import main

    path = with_matrix(plain, tmp_path / "hflip.mp4", -1, 0, 0, 1)
    assert main(["probe", path]) == 0
    assert "mirrored" in capsys.readouterr().out
