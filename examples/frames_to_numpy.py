"""Decoded frames as numpy arrays: RGB pictures, or the Y'CbCr planes as decoded.

``frame.to_ndarray()`` converts with the same exact YUV->RGB transform the renderer uses;
``frame.plane(i)`` is a DLPack array of one plane (zero-copy into numpy, torch or cupy; a CUDA tensor
when NVDEC decoded). ``source.frame_at(seconds)`` seeks frame-accurately.

Usage: python frames_to_numpy.py [VIDEO]
"""

import sys

import numpy as np

import alpha2

path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/alpha2-sample.mp4"

with alpha2.open(path, hwaccel="none") as source:
    print(f"{source.width}x{source.height} at {source.frame_rate} fps, {source.duration_seconds} s")

    brightness = []
    for frame in source:
        rgb = frame.to_ndarray()  # (height, width, 3) uint8
        brightness.append(rgb.mean())
        if len(brightness) == 10:
            break
    print("mean brightness of the first 10 frames:", np.round(brightness, 1))

    frame = source.frame_at(1.0)  # a frame handed over: release it (here by `with`)
    with frame:
        luma = np.from_dlpack(frame.plane(0))  # the Y' plane, no copy
        planes = frame.plane_arrays()  # every plane, as numpy
        print(f"frame at {frame.pts_seconds:.3f} s: {frame.pixel_format.name},", [p.shape for p in planes])
        print("luma range:", luma.min(), "..", luma.max())
