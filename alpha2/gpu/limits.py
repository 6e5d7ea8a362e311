"""Limits alpha2 puts on what it takes, as plain numbers.

Kept out of :mod:`alpha2.gpu.geometry` (the sizes they bound, which names them too) so that the command
line shows them in its options' help without loading the geometry's classes.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_PIXELS"]

DEFAULT_MAX_PIXELS = 8192 * 4320
"""Decoded pictures of more pixels than this (8K, 35.4 MP) are refused unless the caller says otherwise
(``max_pixels``, ``--max-pixels``): a few kilobytes whose parameter sets claim 8192x8192 took 1.4 GB to
play."""
