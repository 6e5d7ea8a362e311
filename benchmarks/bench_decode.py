"""Decode throughput: 1080p H.264 and HEVC, NVDEC (frames kept on the GPU / downloaded) against software.

Generates its own clips (a moving pattern, libx264 / libx265 veryfast) in a temporary directory, then
decodes each through :class:`alpha2.ffmpeg_bridge.DecodeSession` and prints frames per second with
ratios against software decoding in the same run.

    python benchmarks/bench_decode.py --frames 300 --hwaccel auto

``--hwaccel none`` runs software only; ``cuda`` requires NVDEC (an error when it cannot be had);
``auto`` runs the NVDEC rows when the machine has NVDEC and says why not otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import av
import numpy as np

from alpha2.ffmpeg_bridge import DecodeSession, HwAccelMode, download_frame
from alpha2.gpu.errors import Error
from alpha2.gpu.surfaces import SurfaceBudget

ENCODERS = {"h264": "libx264", "hevc": "libx265"}


@dataclass
class Row:
    codec: str
    mode: str
    frames: int
    seconds: float
    note: str = ""

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0


def make_clip(path: str, codec: str, frames: int, width: int = 1920, height: int = 1080) -> None:
    """A moving pattern, veryfast-encoded (an easy-to-make stand-in for camera footage)."""
    y, x = np.mgrid[0:height, 0:width]
    with av.open(path, "w") as out:
        stream: Any = out.add_stream(ENCODERS[codec], rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "veryfast"}
        if codec == "hevc":
            stream.options["x265-params"] = "log-level=error"
        for i in range(frames):
            luma = ((x + y + i * 8) % 256).astype(np.uint8)
            img = np.stack([luma, np.roll(luma, i * 4, axis=1), 255 - luma], axis=-1)
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


def run(path: str, codec: str, mode: str, cuda_ordinal: int | None = None) -> Row:
    hwaccel = "none" if mode == "software" else "cuda"
    budget = SurfaceBudget(max_surfaces=8)
    t0 = time.perf_counter()
    n = 0
    with DecodeSession(path, hwaccel=hwaccel, budget=budget, cuda_ordinal=cuda_ordinal) as session:
        for frame in session:
            if mode == "nvdec+download":
                frame = download_frame(frame)
            frame.release()
            n += 1
        report = session.hwaccel_report
    seconds = time.perf_counter() - t0
    note = f"{report.decoder} on CUDA {report.device_ordinal}" if report.on_gpu else "software"
    return Row(codec, mode, n, seconds, note)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300, help="frames per clip (default 300)")
    parser.add_argument("--hwaccel", choices=[m.value for m in HwAccelMode], default="auto")
    parser.add_argument(
        "--cuda-ordinal",
        type=int,
        default=None,
        help="decode on this CUDA device (default: the shared device's)",
    )
    parser.add_argument("--codecs", default="h264,hevc", help="comma-separated: h264,hevc")
    args = parser.parse_args(argv)
    mode = HwAccelMode.parse(args.hwaccel)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for codec in [c.strip() for c in args.codecs.split(",") if c.strip()]:
            path = os.path.join(tmp, f"{codec}.mkv")
            t0 = time.perf_counter()
            make_clip(path, codec, args.frames)
            print(
                f"made {codec} 1080p clip of {args.frames} frames in {time.perf_counter() - t0:.1f} s",
                flush=True,
            )
            rows.append(run(path, codec, "software"))
            if mode is HwAccelMode.NONE:
                continue
            try:
                # Warm up: CUDA context and NVDEC session creation are not decode throughput.
                with DecodeSession(path, hwaccel="cuda", cuda_ordinal=args.cuda_ordinal) as warm:
                    for _, frame in zip(range(5), warm):
                        frame.release()
                rows.append(run(path, codec, "nvdec-on-gpu", args.cuda_ordinal))
                rows.append(run(path, codec, "nvdec+download", args.cuda_ordinal))
            except Error as exc:
                if mode is HwAccelMode.CUDA:
                    print(f"error: {exc}", file=sys.stderr)
                    return 1
                print(f"NVDEC rows skipped for {codec}: {exc}")
    print()
    print(f"{'codec':6} {'path':16} {'frames':>6} {'fps':>9} {'vs software':>12}  where")
    software = {r.codec: r.fps for r in rows if r.mode == "software"}
    for r in rows:
        ratio = r.fps / software[r.codec] if software.get(r.codec) else float("nan")
        print(f"{r.codec:6} {r.mode:16} {r.frames:6d} {r.fps:9.1f} {ratio:11.2f}x  {r.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
