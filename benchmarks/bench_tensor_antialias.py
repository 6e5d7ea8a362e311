"""RGB tensors made smaller, antialiased (``to_tensor``'s default) against one bilinear sample a pixel:
how far each is from PIL's ``resize(BILINEAR)`` (antialiased, as torchvision's) and what each costs.

A losslessly coded 4:4:4 zone plate (every frequency up to the sampling limit) of ``--size``, decoded
once; for each factor, the full-size tensor resized by PIL is the reference, and both filters are timed
over ``--rounds`` calls of ``to_tensor`` on the same frames (the frames' import included, as a data
loader pays it). Prints mean and largest absolute differences in codes and milliseconds a call.

    python benchmarks/bench_tensor_antialias.py [--size 1920x1080] [--factors 2,3,4,8] [--rounds 5]
                                               [--batch 4] [--device auto]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import av
from PIL import Image

import alpha2


def zone_plate(path: Path, width: int, height: int, frames: int) -> None:
    y, x = np.mgrid[0:height, 0:width]
    plate = (127.5 + 127.5 * np.cos(((x - width / 2) ** 2 + (y - height / 2) ** 2) * np.pi / width)).astype(
        np.uint8
    )
    rgb = np.stack([plate, (x * 255 // width).astype(np.uint8), 255 - plate], axis=-1)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25, options={"qp": "0", "preset": "ultrafast"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv444p"
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv444p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1920x1080", help="WxH of the zone plate")
    parser.add_argument("--factors", default="2,3,4,8", help="how many times smaller, comma-separated")
    parser.add_argument("--rounds", type=int, default=5, help="timed calls a filter a factor")
    parser.add_argument("--batch", type=int, default=4, help="frames a call")
    parser.add_argument("--device", default="auto", help="to_tensor's device: auto, cuda or cpu")
    opts = parser.parse_args(argv)
    width, height = (int(v) for v in opts.size.lower().split("x"))
    path = Path(tempfile.gettempdir()) / f"alpha2-zone-plate-{width}x{height}-{opts.batch}.mkv"
    if not path.exists():
        zone_plate(path, width, height, opts.batch)
    with alpha2.open(str(path)) as source:
        frames = source.frames_at_index(list(range(opts.batch)))
        try:
            full = source.to_tensor(frames[:1], device="cpu").numpy()[0]
            adapter = source.device.info.adapter_name if source.device is not None else "none"
            print(f"{width}x{height} zone plate, {opts.batch} frames a call, on {adapter}")
            print("factor  size        filter      vs PIL mean  max   ms a call  path")
            for factor in (int(f) for f in opts.factors.split(",")):
                size = (width // factor, height // factor)
                want = np.asarray(Image.fromarray(full).resize(size, Image.Resampling.BILINEAR)).astype(float)
                for antialias in (True, False):
                    got = source.to_tensor(frames[:1], size=size, device="cpu", antialias=antialias)
                    diff = np.abs(got.numpy()[0].astype(float) - want)
                    times = []
                    for _ in range(opts.rounds):
                        start = time.perf_counter()
                        tensor = source.to_tensor(frames, size=size, device=opts.device, antialias=antialias)
                        tensor.wait()
                        times.append(time.perf_counter() - start)
                    name = "antialias" if antialias else "bilinear"
                    print(
                        f"{factor:>6}  {size[0]:>4}x{size[1]:<5}  {name:10s}  {diff.mean():11.2f}  "
                        f"{diff.max():4.0f}  {1000 * min(times):9.1f}  {tensor.path.value}"
                    )
        finally:
            for frame in frames:
                frame.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
