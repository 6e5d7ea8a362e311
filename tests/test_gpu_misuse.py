"""The alpha2.gpu vocabulary misused on purpose: typed errors naming the argument, never a TypeError from
inside, never a wrong answer."""

from __future__ import annotations

import pytest

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.surfaces import SurfaceBudget


def test_wait_for_room_refuses_a_size_that_is_no_byte_count() -> None:
    """Found by an outside pass: wait_for_room("x") answered True, and a negative size was taken."""
    budget = SurfaceBudget(max_surfaces=1, max_bytes=100)
    for bad in ("x", 2.5, True, None):
        with pytest.raises(InvalidInputError, match="size_bytes must be an int"):
            budget.wait_for_room(bad, timeout=0)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="size_bytes must be non-negative"):
        budget.wait_for_room(-1, timeout=0)
    assert budget.wait_for_room(100, timeout=0)
    assert not budget.wait_for_room(101, timeout=0)


def test_pixel_format_by_value_takes_ffmpeg_s_names_and_refuses_others_as_alpha2_errors() -> None:
    """``PixelFormat("bogus")`` raised the enum's bare ValueError ("'bogus' is not a valid PixelFormat"),
    and ``PixelFormat("p010")`` refused the name :meth:`PixelFormat.from_ffmpeg_name` takes."""
    from alpha2.gpu.errors import UnknownFormatError
    from alpha2.gpu.formats import PixelFormat

    assert PixelFormat("p010") is PixelFormat.P010 and PixelFormat("nv12") is PixelFormat.NV12
    for value in ("bogus", 3, None):
        with pytest.raises(UnknownFormatError, match="pixel format"):
            PixelFormat(value)  # type: ignore[arg-type]
