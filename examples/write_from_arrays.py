"""Write a video from numpy arrays.

The writer takes (height, width, 3 or 4) uint8 RGB(A) arrays (numpy, or torch / cupy tensors through
DLPack), converts them to the encoder's Y'CbCr on the GPU and tags the stream with the colour it wrote
(BT.709 unless ``colour=`` says otherwise).

Usage: python write_from_arrays.py [OUTPUT]
"""

import sys

import numpy as np

import alpha2

output = sys.argv[1] if len(sys.argv) > 1 else "/tmp/alpha2-arrays.mp4"
width, height, rate = 640, 360, 30

x = np.linspace(0, 255, width, dtype=np.float32)
y = np.linspace(0, 255, height, dtype=np.float32)[:, None]

with alpha2.create(output, codec="h264", rate=rate) as writer:
    for index in range(rate):  # one second
        picture = np.empty((height, width, 3), np.uint8)
        picture[..., 0] = (x + 8 * index) % 256  # a red ramp moving right
        picture[..., 1] = y  # a green ramp down
        picture[..., 2] = 128
        writer.write(picture)
    print(f"wrote {writer.frames_written} frames to {output}")

with alpha2.open(output, hwaccel="none") as check:
    frames = sum(1 for _ in check)
    print(f"read back: {frames} frames, {check.width}x{check.height}, {check.colour.matrix.name}")
