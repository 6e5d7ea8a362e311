"""Encoding for programs that hand frames to an encoder themselves (``alpha2 sample``, tools).

:class:`EncodeSession` (atomic outputs: a file appears whole or not at all), the one encoder table
(:func:`choose_encoder`) and the output containers alpha2 writes. :class:`~alpha2.api.writer.Writer`
is the simpler door for textures and arrays.
"""

from __future__ import annotations

from alpha2.ffmpeg_bridge.encode import OUTPUT_CONTAINERS, EncodeSession, choose_encoder

__all__ = ["OUTPUT_CONTAINERS", "EncodeSession", "choose_encoder"]
