"""Re-encode a file: smaller, in the codec named, the first frames only.

``transcode`` is the ``alpha2 transcode`` command as a function: it decodes, imports and scales on
the GPU where it can, encodes, copies the audio (re-encodes it where it is cut, as here by ``frames``),
and reports which path each frame took. No output is left behind when it fails.

Usage: python reencode.py [INPUT [OUTPUT]]
"""

import sys

from alpha2.api import TranscodeOptions, transcode
from alpha2.gpu import Size

source = sys.argv[1] if len(sys.argv) > 1 else "/tmp/alpha2-sample.mp4"
output = sys.argv[2] if len(sys.argv) > 2 else "/tmp/alpha2-small.mp4"

options = TranscodeOptions(size=Size(640, 360), codec="h264", frames=30)
stats = transcode(source, output, options)

print(f"{stats.frames} frames in {stats.seconds:.2f} s -> {stats.output}")
print("encoder:", stats.encoder.get("name"))
print("paths:", stats.paths.as_dict())
