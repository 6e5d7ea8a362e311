"""Peak RSS of rendering over many frames: ``play --offscreen`` and a transcode through the renderer.

Each run is its own process (peak RSS is per process): 300 frames and 3000 frames of a generated
320x240 clip, for ``alpha2 play --offscreen`` (decode + import + render) and for a transcode whose frames
go through the sampling shader (a gray clip takes the RGBA route: render, then the encode copier).
Prints the peak RSS of each and the growth from 300 to 3000 frames (issue 11: at most 40 MB).

    python benchmarks/bench_render_memory.py [--short 300 --long 3000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import resource, sys
sys.path.insert(0, {root!r})
from alpha2.apps.player import PlayOptions, play
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.gpu.geometry import Size
kind, clip, frames, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if kind == "play":
    stats = play(clip, PlayOptions(offscreen=True, frames=frames, audio=False, hwaccel="none"))
else:
    stats = transcode(clip, out, TranscodeOptions(size=Size(160, 120), frames=frames, audio=False,
                                                  hwaccel="none", preset="ultrafast"))
assert stats.frames == frames, (stats.frames, frames)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def make_clip(path: str, frames: int, pix_fmt: str) -> None:
    import av
    import numpy as np

    with av.open(path, "w") as out:
        stream = out.add_stream("libx264", rate=30, options={"preset": "ultrafast", "crf": "30"})
        stream.width, stream.height, stream.pix_fmt = 320, 240, pix_fmt
        y, x = np.mgrid[0:240, 0:320]
        for i in range(frames):
            rgb = np.stack([(x + i * 3) % 256, (y + i) % 256, (x + y) % 256], -1).astype(np.uint8)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format=pix_fmt)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


def peak_rss(kind: str, clip: str, frames: int, out: str) -> int:
    env = dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    result = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(ROOT)), kind, clip, str(frames), out],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return int(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=300)
    parser.add_argument("--long", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = (("play", "yuv420p"), ("transcode", "gray"))
        for kind, pix_fmt in cases:
            clip = os.path.join(tmp, f"{pix_fmt}.mkv")
            if not os.path.exists(clip):
                make_clip(clip, args.long, pix_fmt)
            short = peak_rss(kind, clip, args.short, os.path.join(tmp, "s.mp4"))
            long = peak_rss(kind, clip, args.long, os.path.join(tmp, "l.mp4"))
            print(
                f"{kind} ({pix_fmt} 320x240): peak RSS {short / 2**20:.0f} MB over {args.short} frames, "
                f"{long / 2**20:.0f} MB over {args.long}: +{(long - short) / 2**20:.1f} MB"
            )


if __name__ == "__main__":
    main()
