"""Several streams on one device, composed into one wall texture: a video wall.

``StreamGroup`` decodes each stream ahead on its own thread (or, with ``decoders="processes"``, in a
process of its own), imports them all into one device and draws every tick with one submission.
``alpha2 play a.mp4 b.mp4 ... --wall`` is built on it.

Usage: python stream_group.py [VIDEO ...]
"""

import sys

from alpha2.api import StreamGroup

sources = sys.argv[1:] or ["/tmp/alpha2-sample.mp4"] * 4

with StreamGroup(sources) as group:
    print(f"{len(sources)} streams in a {group.columns}x{group.rows} grid")
    ticks = group.run(frames=10)  # each tick draws every stream's next frame
    wall = group.read_wall()  # (height, width, 4) RGBA
    print(f"{ticks} ticks, wall {wall.shape[1]}x{wall.shape[0]}")
    for state in group.streams:
        print(f"  {state.source}: {state.frames_shown} frames shown, {state.frames_dropped} dropped")
