"""Sizes, rectangles, rotation and frame metadata."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import FrameMetadata, Rect, Rotation, Size


def test_size() -> None:
    s = Size(1920, 1080)
    assert s.area == 1920 * 1080 and not s.is_empty
    assert s.transposed() == Size(1080, 1920)
    assert Size(0, 5).is_empty
    assert s.contains(Size(1920, 1080)) and not s.contains(Size(1921, 1))
    for bad in ((-1, 1), (1, -1), (1.5, 2), (True, 2), ("1", 2)):
        with pytest.raises(InvalidInputError):
            Size(*bad)


def test_rect() -> None:
    r = Rect(10, 20, 100, 50)
    assert (r.right, r.bottom, r.size) == (110, 70, Size(100, 50))
    assert r.contains(Rect(10, 20, 100, 50)) and not r.contains(Rect(9, 20, 10, 10))
    assert r.intersection(Rect(100, 60, 50, 50)) == Rect(100, 60, 10, 10)
    assert r.intersection(Rect(110, 20, 5, 5)) is None
    assert Rect(-5, -5, 10, 10).intersection(Rect.from_size(Size(4, 4))) == Rect(0, 0, 4, 4)
    assert r.is_within(Size(110, 70)) and not r.is_within(Size(109, 70))
    assert Rect(0, 0, 0, 3).is_empty
    with pytest.raises(InvalidInputError):
        Rect(0, 0, -1, 2)


def test_rect_from_crop() -> None:
    coded = Size(1920, 1088)
    assert Rect.from_crop(coded, bottom=8) == Rect(0, 0, 1920, 1080)
    assert Rect.from_crop(coded, top=2, bottom=6, left=4, right=12) == Rect(4, 2, 1904, 1080)
    with pytest.raises(InvalidInputError):
        Rect.from_crop(coded, left=1000, right=1000)
    with pytest.raises(InvalidInputError):
        Rect.from_crop(coded, top=-1)


@given(
    a=st.tuples(st.integers(-50, 50), st.integers(-50, 50), st.integers(0, 60), st.integers(0, 60)),
    b=st.tuples(st.integers(-50, 50), st.integers(-50, 50), st.integers(0, 60), st.integers(0, 60)),
)
def test_intersection_properties(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> None:
    ra, rb = Rect(*a), Rect(*b)
    inter = ra.intersection(rb)
    assert inter == rb.intersection(ra)
    if inter is not None:
        assert ra.contains(inter) and rb.contains(inter) and not inter.is_empty


def test_rotation() -> None:
    assert [r.value for r in Rotation] == [0, 90, 180, 270]
    assert Rotation.from_degrees(-90) is Rotation.CW270
    assert Rotation.from_degrees(450) is Rotation.CW90
    with pytest.raises(InvalidInputError):
        Rotation.from_degrees(45)
    assert Rotation.CW90.apply(Size(1920, 1080)) == Size(1080, 1920)
    assert Rotation.CW180.apply(Size(1920, 1080)) == Size(1920, 1080)
    assert Rotation.CW90.then(Rotation.CW270) is Rotation.NONE
    for r in Rotation:
        assert r.then(r.inverse()) is Rotation.NONE


def test_rotation_from_ffmpeg_display_matrix() -> None:
    # av_display_rotation_get gives counter-clockwise degrees; a phone video tagged -90 shows rotated 90 cw
    assert Rotation.from_ffmpeg_display_rotation(-90.0) is Rotation.CW90
    assert Rotation.from_ffmpeg_display_rotation(90.0) is Rotation.CW270
    assert Rotation.from_ffmpeg_display_rotation(180.0) is Rotation.CW180
    assert Rotation.from_ffmpeg_display_rotation(-0.0) is Rotation.NONE
    assert Rotation.from_ffmpeg_display_rotation(float("nan")) is Rotation.NONE
    assert Rotation.from_ffmpeg_display_rotation(-89.9999) is Rotation.CW90
    with pytest.raises(InvalidInputError):
        Rotation.from_ffmpeg_display_rotation(30.0)


def _meta(**kwargs: object) -> FrameMetadata:
    fields: dict[str, object] = {
        "pts": 3003,
        "time_base": Fraction(1, 30000),
        "duration": 1001,
        "key_frame": True,
        "coded_size": Size(1920, 1088),
        "display_size": Size(1920, 1080),
    }
    fields.update(kwargs)
    return FrameMetadata(**fields)  # type: ignore[arg-type]


def test_frame_metadata() -> None:
    m = _meta()
    assert m.pts_seconds == pytest.approx(0.1001)
    assert m.duration_seconds == pytest.approx(1001 / 30000)
    assert m.rotation is Rotation.NONE and not m.interlaced and not m.top_field_first
    assert m.rotated_size == Size(1920, 1080)
    assert _meta(rotation=Rotation.CW90).rotated_size == Size(1080, 1920)
    assert _meta(pts=None).pts_seconds is None
    assert _meta(time_base=None).duration_seconds is None
    assert _meta(pts=-1001).pts_seconds == pytest.approx(-1001 / 30000)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"display_size": Size(1920, 1090)},
        {"time_base": Fraction(0)},
        {"time_base": 0.5},
        {"duration": -1},
        {"pts": 1.5},
        {"key_frame": 1},
        {"coded_size": (1920, 1088)},
        {"rotation": 90},
    ],
)
def test_frame_metadata_rejects(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        _meta(**kwargs)
