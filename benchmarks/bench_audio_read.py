"""Reading a whole audio track into one float32 array: ``alpha2.open_audio(...).read()`` against the
same samples from PyAV by hand and from the ``ffmpeg`` command, side by side in one run.

- ``ffmpeg -i IN -f f32le -``, read into numpy: FFmpeg's own loop in C (the floor);
- PyAV by hand: decode, FFmpeg's resampler to packed float32, each frame's plane read once, one
  concatenation (what alpha2 stands on, with nothing of its own);
- ``alpha2.open_audio(IN).read()`` at the stream's own rate and channels.

Each is timed (best of ``--repeat``), the arrays compared (they must be equal), and alpha2's time printed
as a ratio against both. Needs ``ffmpeg`` on the PATH.

    python benchmarks/bench_audio_read.py [--seconds 600 --codec aac --repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import alpha2

ENCODERS = {
    "aac": ("aac", ".m4a"),
    "mp3": ("libmp3lame", ".mp3"),
    "opus": ("libopus", ".ogg"),
    "flac": ("flac", ".flac"),
}


def make_clip(path: str, seconds: float, codec: str) -> None:
    encoder, _ = ENCODERS[codec]
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"sine=f=440:d={seconds}", "-f", "lavfi",
         "-i", f"anoisesrc=d={seconds}:a=0.1", "-filter_complex", "amerge", "-c:a", encoder, path],
        check=True,
    )  # fmt: skip


def by_ffmpeg(path: str) -> np.ndarray:
    out = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", path, "-f", "f32le", "-"], capture_output=True, check=True
    )
    return np.frombuffer(out.stdout, np.float32).reshape(-1, 2)


def by_pyav(path: str) -> np.ndarray:
    with av.open(path) as container:
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="stereo", rate=stream.rate)
        parts = []
        for frame in container.decode(stream):
            for out in resampler.resample(frame):
                parts.append(np.frombuffer(out.planes[0], np.float32, count=out.samples * 2).copy())
        for out in resampler.resample(None):
            parts.append(np.frombuffer(out.planes[0], np.float32, count=out.samples * 2).copy())
    return np.concatenate(parts).reshape(-1, 2)


def by_alpha2(path: str) -> np.ndarray:
    with alpha2.open_audio(path) as source:
        return source.read()


def best(fn: Callable[[str], np.ndarray], path: str, repeat: int) -> tuple[float, np.ndarray]:
    times, result = [], np.zeros(0)
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn(path)
        times.append(time.perf_counter() - t0)
    return min(times), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=600.0, help="the clip's length (stereo, 44.1 kHz)")
    parser.add_argument("--codec", choices=sorted(ENCODERS), default="aac")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if shutil.which("ffmpeg") is None:
        print("bench_audio_read: needs the ffmpeg command on the PATH", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / f"clip{ENCODERS[args.codec][1]}")
        make_clip(path, args.seconds, args.codec)
        print(f"# {args.seconds:g} s of stereo {args.codec}, best of {args.repeat}")
        ways = (("ffmpeg -f f32le", by_ffmpeg), ("PyAV by hand", by_pyav), ("alpha2 read()", by_alpha2))
        rows = {name: best(fn, path, args.repeat) for name, fn in ways}
        reference = rows["PyAV by hand"][1]
        for name, (seconds, samples) in rows.items():
            same = samples.shape == reference.shape and float(np.abs(samples - reference).max()) <= 1e-6
            verdict = "equal" if same else "DIFFERENT"
            print(f"{name:16} {seconds:7.3f} s  {samples.shape[0]:>10} frames  {verdict}")
        ours = rows["alpha2 read()"][0]
        print(f"alpha2 / ffmpeg: {ours / rows['ffmpeg -f f32le'][0]:.2f}x the time; "
              f"alpha2 / PyAV by hand: {ours / rows['PyAV by hand'][0]:.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
