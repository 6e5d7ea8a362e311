"""On-screen drawing for programs that show video: RGBA images blended over a frame on the GPU.

The applications' way to :mod:`alpha2.native_gpu.render.overlay` (the player's on-screen display and
subtitles: :class:`OverlayRenderer` draws :class:`OverlaySprite` images at :class:`OverlayPlacement`
rectangles over a render target, in one pass), and to the read-back of a rendered texture
(:func:`read_texture_rgba`, for screenshots).
"""

from __future__ import annotations

from alpha2.native_gpu.render.overlay import OverlayPlacement, OverlayRenderer, OverlaySprite
from alpha2.native_gpu.render.readback import read_texture_rgba

__all__ = ["OverlayPlacement", "OverlayRenderer", "OverlaySprite", "read_texture_rgba"]
