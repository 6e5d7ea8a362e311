"""GIF output: ``alpha2 transcode IN out.gif`` against the ``ffmpeg`` command, side by side in one run.

Three ways to the same GIF from the same clip, each timed (best of ``--repeat``) and compared with the
source picture by picture (PSNR and mean error over RGB, the source converted by its own tagged matrix):

- ``ffmpeg -i IN out.gif``: what the plain command writes (every frame mapped to one fixed palette);
- ``ffmpeg -i IN -vf "split[a][b];[a]palettegen=stats_mode=single[p];[b][p]paletteuse=new=1"``: the
  filters alpha2 runs, as a person who knows them types them;
- the same filters in PyAV's FFmpeg, by hand (decode, ``reformat`` to bgra, a filter graph, the GIF
  encoder): the baseline alpha2 stands on, whose FFmpeg may be newer than the command's (palettegen
  quantises in OkLab since FFmpeg 6.0, which favours what the eye sees over RGB PSNR);
- ``alpha2 transcode IN out.gif`` (a palette a frame, through PyAV's filter graph).

Prints each row and alpha2's time and PSNR against both ffmpeg rows. Needs ``ffmpeg`` on the PATH.

    XDG_RUNTIME_DIR=/tmp python benchmarks/bench_gif.py [--size 640x360 --seconds 3 --repeat 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import av
import av.filter
import numpy as np
from av.video.reformatter import ColorRange, Colorspace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from alpha2.apps import cli

FILTERS = "split[a][b];[a]palettegen=stats_mode=single[p];[b][p]paletteuse=new=1"


def make_clip(path: str, size: str, seconds: float) -> None:
    """A tagged BT.709 H.264 clip of moving colour (testsrc2) with film grain: many colours a frame."""
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=s={size}:r=30:d={seconds}",
         "-vf", "noise=alls=12:allf=t", "-pix_fmt", "yuv420p", "-colorspace", "bt709",
         "-color_primaries", "bt709", "-color_trc", "bt709", "-c:v", "libx264", "-crf", "16", path],
        check=True,
    )  # fmt: skip


def rgb_frames(path: str, source: bool) -> list[np.ndarray]:
    out = []
    with av.open(path) as container:
        for frame in container.decode(video=0):
            if source:  # Y'CbCr by its tagged matrix, limited range, as alpha2 and ffmpeg read it
                frame = frame.reformat(
                    format="rgb24",
                    src_colorspace=Colorspace.ITU709,
                    src_color_range=ColorRange.MPEG,
                    dst_color_range=ColorRange.JPEG,
                )
            out.append(frame.to_ndarray(format="rgb24").astype(np.float64))
    return out


def quality(reference: list[np.ndarray], path: str) -> tuple[float, float, int]:
    """(PSNR in dB, mean absolute error in code values, frames) of the GIF at ``path``."""
    got = rgb_frames(path, source=False)
    count = min(len(reference), len(got))
    mse = np.mean([((a - b) ** 2).mean() for a, b in zip(reference[:count], got[:count], strict=True)])
    mae = np.mean([np.abs(a - b).mean() for a, b in zip(reference[:count], got[:count], strict=True)])
    return float(10 * np.log10(255**2 / mse)), float(mae), len(got)


def pyav_filters(clip: str, out: str) -> None:
    """The filters of FILTERS in PyAV's FFmpeg, frame by frame: alpha2's work without alpha2."""
    with av.open(clip) as source, av.open(out, "w") as sink:
        video = source.streams.video[0]
        stream = sink.add_stream("gif", rate=video.average_rate)
        stream.width, stream.height, stream.pix_fmt = video.width, video.height, "pal8"
        graph = av.filter.Graph()
        buffer = graph.add_buffer(
            width=video.width, height=video.height, format="bgra", time_base=video.time_base
        )
        split, generate, use = (
            graph.add("split"),
            graph.add("palettegen", "stats_mode=single"),
            graph.add("paletteuse", "new=1"),
        )
        sink_filter = graph.add("buffersink")
        buffer.link_to(split)
        split.link_to(generate, 0, 0)
        split.link_to(use, 1, 0)
        generate.link_to(use, 0, 1)
        use.link_to(sink_filter)
        graph.configure()

        def drain() -> None:
            while True:
                try:
                    picture = graph.vpull()
                except (BlockingIOError, EOFError):
                    return
                sink.mux(stream.encode(picture))

        for frame in source.decode(video):
            rgb = frame.reformat(
                format="bgra",
                src_colorspace=Colorspace.ITU709,
                src_color_range=ColorRange.MPEG,
                dst_color_range=ColorRange.JPEG,
            )
            rgb.pts, rgb.time_base = frame.pts, frame.time_base
            graph.vpush(rgb)
            drain()
        graph.vpush(None)
        drain()
        sink.mux(stream.encode(None))


def timed(run: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


def ffmpeg_version() -> str:
    first = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True, check=True).stdout.split(
        "\n"
    )[0]
    return first.split(" Copyright")[0].removeprefix("ffmpeg version ")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="640x360")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    if shutil.which("ffmpeg") is None:
        print("ffmpeg is not on the PATH", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        clip = os.path.join(tmp, "in.mp4")
        make_clip(clip, args.size, args.seconds)
        reference = rgb_frames(clip, source=True)
        outs = {
            name: os.path.join(tmp, f"{i}.gif")
            for i, name in enumerate(("plain", "filters", "pyav", "alpha2"))
        }

        def ffmpeg(out: str, *vf: str) -> None:
            subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", clip, *vf, out], check=True)

        rows = {
            "ffmpeg -i IN out.gif": (lambda: ffmpeg(outs["plain"]), outs["plain"]),
            "ffmpeg palettegen/paletteuse": (
                lambda: ffmpeg(outs["filters"], "-vf", FILTERS),
                outs["filters"],
            ),
            "same filters in PyAV": (lambda: pyav_filters(clip, outs["pyav"]), outs["pyav"]),
            "alpha2 transcode IN out.gif": (
                lambda: cli.main(["transcode", clip, outs["alpha2"], "-y", "--quiet"]),
                outs["alpha2"],
            ),
        }
        print(f"# {args.size}, {args.seconds:g} s at 30 fps ({len(reference)} frames), best of {args.repeat}")
        results = {}
        for name, (run, out) in rows.items():
            seconds = timed(run, args.repeat)
            psnr, mae, frames = quality(reference, out)
            size = os.path.getsize(out)
            results[name] = (seconds, psnr)
            print(
                f"{name:30} {seconds:6.2f} s  {frames} frames  {size / 1e6:6.2f} MB  "
                f"PSNR {psnr:5.1f} dB  mean error {mae:5.2f}"
            )
        mine = results["alpha2 transcode IN out.gif"]
        print(f"# ffmpeg command: {ffmpeg_version()}; PyAV's FFmpeg: {av.ffmpeg_version_info}")
        for name in ("ffmpeg -i IN out.gif", "ffmpeg palettegen/paletteuse", "same filters in PyAV"):
            other = results[name]
            print(f"alpha2 against {name}: time x{mine[0] / other[0]:.2f}, PSNR {mine[1] - other[1]:+.1f} dB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
