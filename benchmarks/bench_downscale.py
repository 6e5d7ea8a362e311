"""Downscaling quality: alpha2's GPU route (the filter of encode_scale_yuv.wgsl) vs FFmpeg's scale.

Usage: python benchmarks/bench_downscale.py [--frames N] [--crf C]

A 1920x1080 clip with fine detail (``--source natural``: a panning 1/f texture with hard-edged shapes,
the default; ``--source grain``: a zone plate with white grain; stored lossless as FFV1) goes to 640x360
H.264 at the same crf two ways: ``alpha2 transcode --size 640x360 --gpu`` (TranscodeOptions(gpu=True))
and FFmpeg's swscale (PyAV ``VideoFrame.reformat``, bicubic: ffmpeg ``-vf scale``'s default) into the
same libx264 settings, and through swscale's area filter. All outputs are decoded and their luma
compared (PSNR) two ways: with the source's luma downscaled by an exact 3 x 3 area average in numpy
(independent of any implementation; it favours area filters), and with the source itself, each output
upscaled bicubically to 1080p (the issue's measure). Prints each PSNR, file size and the ratios
alpha2 / FFmpeg.
"""

from __future__ import annotations

import argparse
import dataclasses
import fractions
import os
import tempfile
from collections.abc import Iterator

import av
import numpy as np

from alpha2.api.transcode_plan import ColourChoice, TranscodeOptions
from alpha2.api.transcoder import transcode
from alpha2.gpu.geometry import Size

W, H, OW, OH = 1920, 1080, 640, 360


def _pink_texture(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A texture with a 1/f amplitude spectrum (natural images' falloff), scaled to 0..1."""
    fy = np.fft.fftfreq(height)[:, None]
    fx = np.fft.rfftfreq(width)[None, :]
    f = np.sqrt(fx**2 + fy**2)
    f[0, 0] = 1.0
    spectrum = (rng.normal(size=f.shape) + 1j * rng.normal(size=f.shape)) / f
    spectrum[0, 0] = 0.0
    texture = np.fft.irfft2(spectrum, s=(height, width))
    texture -= texture.min()
    return np.asarray(texture / texture.max(), dtype=np.float64)


def _write_ffv1(path: str, pictures: Iterator[np.ndarray]) -> None:
    """Write R'G'B' pictures (H, W, 3 in 0..1) as lossless FFV1, BT.709 limited, at 25 fps."""
    with av.open(path, "w") as out:
        stream = out.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.codec_context.colorspace, stream.codec_context.color_range = 1, 1  # BT.709, limited
        for i, rgb in enumerate(pictures):
            frame = av.VideoFrame.from_ndarray((rgb * 255).astype(np.uint8), format="rgb24")
            frame = frame.reformat(format="yuv420p", dst_colorspace="ITU709")
            frame.pts = i
            for p in stream.encode(frame):
                out.mux(p)
        for p in stream.encode():
            out.mux(p)


def _natural_source(path: str, frames: int) -> None:
    """1/f texture panning, with hard-edged shapes over it: detail at every scale, no per-pixel grain."""
    rng = np.random.default_rng(2)
    big = _pink_texture(rng, H + 64, W + 256)
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)

    def pictures() -> Iterator[np.ndarray]:
        for i in range(frames):
            g = big[16 : 16 + H, 4 * i : 4 * i + W]
            disc = ((x - 600 - 8 * i) ** 2 + (y - 500) ** 2) < 180**2
            bar = (np.abs(x - 1300 + 3 * i) < 90) & (y > 200) & (y < 900)
            g = np.where(disc, 0.15 + 0.1 * g, np.where(bar, 0.9 - 0.1 * g, g))
            yield np.stack([g, np.clip(0.2 + 0.7 * g, 0, 1), np.clip(1.1 - g, 0, 1)], -1)

    _write_ffv1(path, pictures())


def _source(path: str, frames: int) -> None:
    """A zone plate with white grain (the grain is what makes an area filter's file larger)."""
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    rng = np.random.default_rng(1)

    def pictures() -> Iterator[np.ndarray]:
        for i in range(frames):
            r2 = ((x - W / 2) ** 2 + (y - H / 2) ** 2) / (W * 1.1)
            zone = 0.5 + 0.5 * np.cos(np.pi * r2 / 2 + i * 0.3)
            grain = rng.normal(0, 0.04, (H, W))
            g = np.clip(0.7 * zone + 0.3 * (x / W) + grain, 0, 1)
            yield np.stack([g, np.clip(g * 0.8 + 0.1 * np.sin(y / 7), 0, 1), 1 - g], -1)

    _write_ffv1(path, pictures())


def _ffmpeg_scale(src: str, dst: str, crf: float, interpolation: str = "BICUBIC") -> None:
    with av.open(src) as inp, av.open(dst, "w") as out:
        stream = out.add_stream("libx264", rate=25, options={"crf": f"{crf:g}"})
        stream.width, stream.height, stream.pix_fmt = OW, OH, "yuv420p"
        # Frame threads, as the ffmpeg command and alpha2 run x264 (PyAV's default is slices).
        stream.codec_context.thread_type = "FRAME"
        for i, frame in enumerate(inp.decode(video=0)):
            scaled = frame.reformat(width=OW, height=OH, format="yuv420p", interpolation=interpolation)
            # The frame's own time base: without it the encoder took every frame for pts 0 (all key
            # frames), which made this reference 2-3x the size it should be.
            scaled.pts, scaled.time_base = i, fractions.Fraction(1, 25)
            # FFV1 frames are intra: a frame keeping that picture type forces x264 to a key frame. The
            # ffmpeg command (and alpha2) let the encoder choose.
            scaled.pict_type = av.video.frame.PictureType.NONE
            for p in stream.encode(scaled):
                out.mux(p)
        for p in stream.encode():
            out.mux(p)


def _lumas(path: str) -> list[np.ndarray]:
    with av.open(path) as c:
        return [f.to_ndarray(format="gray").astype(np.float64) for f in c.decode(video=0)]


def _upscaled(path: str) -> list[np.ndarray]:
    with av.open(path) as c:
        return [
            f.reformat(width=W, height=H, format="gray", interpolation="BICUBIC")
            .to_ndarray()
            .astype(np.float64)
            for f in c.decode(video=0)
        ]


def _psnr(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    mse = float(np.mean([np.mean((x - y) ** 2) for x, y in zip(a, b, strict=True)]))
    return 10 * np.log10(255.0**2 / mse)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--crf", type=float, default=23)
    parser.add_argument(
        "--source",
        choices=("grain", "natural"),
        default="natural",
        help="zone plate + white grain, or a panning 1/f texture with hard edges (default)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src, ours, theirs, area_ff = (
            os.path.join(tmp, n) for n in ("src.mkv", "alpha2.mp4", "ffmpeg.mp4", "ffmpeg_area.mp4")
        )
        (_natural_source if args.source == "natural" else _source)(src, args.frames)
        # The input's matrix kept on both sides (swscale here converts nothing), so only the filter differs.
        options = TranscodeOptions(
            size=Size(OW, OH), gpu=True, crf=args.crf, audio=False, hwaccel="none", colour=ColourChoice.KEEP
        )
        transcode(src, ours, options)
        ours_cpu = os.path.join(tmp, "alpha2_swscale.mp4")
        transcode(src, ours_cpu, dataclasses.replace(options, gpu=False))
        _ffmpeg_scale(src, theirs, args.crf)
        _ffmpeg_scale(src, area_ff, args.crf, "AREA")
        source = _lumas(src)
        area = [s.reshape(OH, 3, OW, 3).mean(axis=(1, 3)) for s in source]
        rows = []
        routes = (
            ("alpha2 GPU", ours),
            ("alpha2 swscale route (CPU devices)", ours_cpu),
            ("FFmpeg scale (bicubic)", theirs),
            ("FFmpeg scale (area)", area_ff),
        )
        for name, path in routes:
            rows.append(
                (name, _psnr(_lumas(path), area), _psnr(_upscaled(path), source), os.path.getsize(path))
            )
        print(
            f"{W}x{H} -> {OW}x{OH}, {args.frames} frames of the {args.source} source, "
            f"libx264 crf {args.crf:g}"
        )
        for name, p_area, p_up, size in rows:
            print(
                f"  {name:24s} PSNR vs area {p_area:6.2f} dB, vs source (upscaled) {p_up:6.2f} dB, {size} B"
            )
        (_, a1, u1, s1), (_, a0, u0, s0), (_, a2, u2, s2), (_, a3, u3, s3) = rows
        print(
            f"  alpha2 GPU - FFmpeg bicubic: {a1 - a2:+.2f} dB (area), {u1 - u2:+.2f} dB (upscale); "
            f"size {s1 / s2:.3f}"
        )
        print(
            f"  alpha2 GPU - FFmpeg area:    {a1 - a3:+.2f} dB (area), {u1 - u3:+.2f} dB (upscale); "
            f"size {s1 / s3:.3f}"
        )
        print(
            f"  alpha2 swscale - FFmpeg bicubic: {a0 - a2:+.2f} dB (area), {u0 - u2:+.2f} dB (upscale); "
            f"size {s0 / s2:.3f}"
        )


if __name__ == "__main__":
    main()
