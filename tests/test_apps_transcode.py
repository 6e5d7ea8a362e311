"""``alpha2 transcode``: passthrough and GPU round trips per codec, pixel format and colour case; timestamps.

Clips are small (2 shared CPU cores): a smooth moving pattern from ``alpha2 sample`` (and 10-bit / full
range variants made with PyAV from the same planes), VFR clips from tests/media.py. PSNR is computed with
numpy on RGB frames decoded by FFmpeg, each side converted with its own colour tags, the source scaled
the same way when ``--size`` is given.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api import pipeline
from alpha2.api.transcoder import ColourChoice, DepthChoice, TranscodeOptions, plan_transcode, transcode
from alpha2.apps.sample import pattern_planes, sample_colour, write_sample
from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, ColourPrimaries, ColourRange
from alpha2.gpu.colour import TransferCharacteristic as Trc
from alpha2.gpu.errors import Error, InvalidInputError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Size

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip

PSNR_MIN_DB = 35.0
W, H = 320, 180
FRAMES = 12


def _encoder_exists(name: str) -> bool:
    try:
        av.codec.Codec(name, "w")
    except Exception:
        return False
    return True


CODECS = [
    pytest.param(
        "h264", ".mp4", marks=pytest.mark.skipif(not _encoder_exists("libx264"), reason="no libx264")
    ),
    pytest.param(
        "hevc", ".mkv", marks=pytest.mark.skipif(not _encoder_exists("libx265"), reason="no libx265")
    ),
    pytest.param(
        "vp9", ".webm", marks=pytest.mark.skipif(not _encoder_exists("libvpx-vp9"), reason="no vp9")
    ),
    pytest.param(
        "av1", ".mkv", marks=pytest.mark.skipif(not _encoder_exists("libsvtav1"), reason="no svt-av1")
    ),
]


# ---------------------------------------------------------------------------------------------------
# clips and measurements


def _frames_rgb(path: str, size: tuple[int, int] | None = None, limit: int | None = None) -> list[np.ndarray]:
    """RGB frames as FFmpeg converts them (each frame's own matrix and range), optionally scaled."""
    out = []
    with av.open(path) as container:
        for frame in container.decode(video=0):
            if size is not None and (frame.width, frame.height) != size:
                frame = frame.reformat(width=size[0], height=size[1], interpolation="BILINEAR")
            out.append(frame.to_ndarray(format="rgb24"))
            if limit is not None and len(out) >= limit:
                break
    return out


def psnr(reference: list[np.ndarray], test: list[np.ndarray]) -> float:
    """Mean PSNR (dB) over frames; the lists must be the same length."""
    assert len(reference) == len(test), f"{len(reference)} reference frames, {len(test)} tested"
    values = []
    for a, b in zip(reference, test):
        mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
        values.append(10 * np.log10(255.0**2 / max(mse, 1e-10)))
    return float(np.mean(values))


def _stream(path: str) -> dict[str, Any]:
    with av.open(path) as container:
        stream = container.streams.video[0]
        cc = stream.codec_context
        frames = list(container.decode(stream))
        return {
            "codec": cc.name,
            "size": (cc.width, cc.height),
            "pix_fmt": frames[0].format.name,
            "colorspace": int(frames[0].colorspace),
            "color_range": int(frames[0].color_range),
            "times": [float(f.time) for f in frames],
            "frames": len(frames),
            "audio": len(container.streams.audio),
        }


def _av_clip(path: Path, pix_fmt: str, *, full_range: bool = False) -> str:
    """The sample pattern encoded by PyAV as ``pix_fmt`` (10-bit, full range ...), lossless-ish (crf 10)."""
    size = Size(W, H)
    colour = sample_colour(size)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=30, options={"preset": "ultrafast", "crf": "10"})
        stream.width, stream.height = size.width, size.height
        stream.pix_fmt = pix_fmt
        cc = stream.codec_context
        cc.colorspace = int(colour.matrix)
        cc.color_range = 2 if full_range else 1
        for i in range(FRAMES):
            y, u, v = pattern_planes(size, i, 30.0, colour)
            frame = av.VideoFrame(size.width, size.height, "yuv420p")
            for plane, data in zip(frame.planes, (y, u, v)):
                rows = np.frombuffer(memoryview(plane), np.uint8).reshape(-1, plane.line_size)
                rows[: data.shape[0], : data.shape[1]] = data
            frame.colorspace = int(colour.matrix)
            frame.color_range = 1
            frame = frame.reformat(
                format=pix_fmt, dst_color_range=2 if full_range else 1, dst_colorspace=int(colour.matrix)
            )
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("transcode_clips")
    found = {"smooth": write_sample(str(root / "smooth.mp4"), duration_s=FRAMES / 30, size=Size(W, H)).path}
    found["smooth10"] = _av_clip(root / "smooth10.mkv", "yuv420p10le")
    found["full"] = _av_clip(root / "full.mkv", "yuv420p", full_range=True)
    found["vfr"] = make_clip(root / "vfr.mkv", vfr=True, frames=10, audio=True).path
    return found


def _no_partials(directory: Path) -> None:
    leftovers = [p.name for p in directory.iterdir() if ".partial" in p.name]
    assert not leftovers, f"temporary files left behind: {leftovers}"


# ---------------------------------------------------------------------------------------------------
# planning (pure)


def _colour(matrix: ColourMatrix, rng: ColourRange = ColourRange.LIMITED) -> ColourInfo:
    return ColourInfo(matrix, ColourPrimaries.BT709, Trc.BT709, rng, ChromaLocation.LEFT)


def test_plan_passthrough_when_nothing_changes() -> None:
    plan = plan_transcode(
        Size(1920, 1080), PixelFormat.YUV420P, _colour(ColourMatrix.BT470BG), TranscodeOptions()
    )
    assert plan.passthrough and "passthrough" in plan.reason
    assert plan.output_colour == plan.input_colour
    same = TranscodeOptions(size=Size(1920, 1080))
    assert plan_transcode(
        Size(1920, 1080), PixelFormat.YUV420P, _colour(ColourMatrix.BT709), same
    ).passthrough


def test_plan_scale_fits_inside_even_and_hd_gets_bt709() -> None:
    plan = plan_transcode(
        Size(1920, 1080),
        PixelFormat.YUV420P,
        _colour(ColourMatrix.BT470BG),
        TranscodeOptions(size=Size(1280, 1280)),
    )
    assert not plan.passthrough
    assert plan.output_size == Size(1280, 720)
    assert plan.output_format is PixelFormat.NV12
    assert plan.output_colour.matrix is ColourMatrix.BT709 and plan.output_colour.range is ColourRange.LIMITED
    small = plan_transcode(
        Size(1920, 1080),
        PixelFormat.YUV420P10,
        _colour(ColourMatrix.BT470BG),
        TranscodeOptions(size=Size(641, 361), depth=DepthChoice.TEN),
    )
    assert small.output_size == Size(640, 360)
    assert small.output_format is PixelFormat.P010
    assert small.output_colour.matrix is ColourMatrix.BT470BG, "SD outputs keep the input's matrix"


def test_plan_explicit_colour_forces_gpu_and_keep_does_not() -> None:
    colour = _colour(ColourMatrix.BT709, ColourRange.FULL)
    keep = plan_transcode(
        Size(640, 360), PixelFormat.YUV420P, colour, TranscodeOptions(colour=ColourChoice.KEEP)
    )
    assert keep.passthrough
    conv = plan_transcode(
        Size(640, 360), PixelFormat.YUV420P, colour, TranscodeOptions(colour=ColourChoice.BT601)
    )
    assert not conv.passthrough
    assert (
        conv.output_colour.matrix is ColourMatrix.SMPTE170M
        and conv.output_colour.range is ColourRange.LIMITED
    )
    odd = plan_transcode(Size(321, 181), PixelFormat.YUV420P, colour, TranscodeOptions())
    assert not odd.passthrough and odd.output_size.width % 2 == 0 and odd.output_size.height % 2 == 0


def test_fit_inside() -> None:
    assert pipeline.fit_inside(1920, 1080, Size(1280, 720)) == Size(1280, 720)
    assert pipeline.fit_inside(1080, 1920, Size(1280, 720)) == Size(404, 720)
    assert pipeline.fit_inside(1920, 800, Size(1000, 1000)) == Size(1000, 416)
    assert pipeline.fit_inside(100, 100, Size(33, 99)) == Size(32, 32)


def test_options_refuse_crf_and_bitrate() -> None:
    with pytest.raises(InvalidInputError):
        TranscodeOptions(crf=20, bitrate=1_000_000)


# ---------------------------------------------------------------------------------------------------
# passthrough (no GPU)


def test_passthrough_h264(clips: dict[str, str], tmp_path: Path) -> None:
    out = str(tmp_path / "pass.mp4")
    stats = transcode(clips["smooth"], out, TranscodeOptions(preset="veryfast", hwaccel="none"))
    data = stats.as_dict()
    assert data["mode"] == "passthrough"
    assert data["paths"] == {"software": FRAMES}
    assert data["path_notes"] == {"passthrough": FRAMES}
    assert data["device"] is None, "passthrough must not touch the GPU"
    assert data["frames"] == FRAMES and data["peak_surfaces"] >= 1
    assert data["encoder"]["name"] == "libx264" and data["encoder"]["reason"]
    assert psnr(_frames_rgb(clips["smooth"]), _frames_rgb(out)) >= PSNR_MIN_DB
    _no_partials(tmp_path)


@pytest.mark.parametrize(
    "gpu", [False, pytest.param(True, marks=pytest.mark.vulkan)], ids=["passthrough", "gpu"]
)
def test_vfr_frame_count_and_timestamps(clips: dict[str, str], tmp_path: Path, gpu: bool) -> None:
    out = str(tmp_path / "vfr.mkv")
    stats = transcode(clips["vfr"], out, TranscodeOptions(gpu=gpu, preset="ultrafast"))
    src, dst = _stream(clips["vfr"]), _stream(out)
    assert dst["frames"] == src["frames"] == stats.frames
    assert dst["times"] == pytest.approx(src["times"], abs=1e-6)
    assert dst["audio"] == 1 and stats.audio_packets_copied > 0
    assert stats.as_dict()["mode"] == ("gpu" if gpu else "passthrough")


def test_no_audio_and_frame_limit(clips: dict[str, str], tmp_path: Path) -> None:
    out = str(tmp_path / "short.mkv")
    stats = transcode(clips["vfr"], out, TranscodeOptions(audio=False, frames=4, preset="ultrafast"))
    dst = _stream(out)
    assert dst["frames"] == 4 == stats.frames
    assert dst["audio"] == 0
    assert stats.encoder["audio"].startswith("dropped")


def test_failure_mid_run_leaves_no_output(clips: dict[str, str], tmp_path: Path) -> None:
    class Boom(pipeline.Progress):
        def update(self, frames: int) -> None:
            if frames == 3:
                raise Error("stopped on purpose")

    out = tmp_path / "boom.mp4"
    with pytest.raises(Error, match="on purpose"):
        transcode(clips["smooth"], str(out), TranscodeOptions(), progress=Boom())
    assert not out.exists()
    _no_partials(tmp_path)


# ---------------------------------------------------------------------------------------------------
# the GPU path (lavapipe counts)


@pytest.mark.vulkan
@pytest.mark.parametrize("codec,ext", CODECS)
def test_gpu_scale_round_trip_per_codec(clips: dict[str, str], tmp_path: Path, codec: str, ext: str) -> None:
    out = str(tmp_path / f"scaled{ext}")
    options = TranscodeOptions(codec=codec, size=Size(160, 160), hwaccel="none", gpu=True)
    stats = transcode(clips["smooth"], out, options)
    data = stats.as_dict()
    assert data["mode"] == "gpu" and data["output_size"] == [160, 90]
    # Software decoding into wgpu-native: CPU upload in, the copier's read-back ring out; every frame
    # counted.
    assert data["paths"] == {"cpu_upload": FRAMES, "cpu_download": FRAMES}
    assert data["bytes_through_cpu"] == sum(data["path_bytes"].values()) > 0
    assert data["device"]["implementation"] == "wgpu"
    info = _stream(out)
    assert info["size"] == (160, 90) and info["frames"] == FRAMES
    # The sample's AAC tone: copied where the container holds AAC, re-encoded (and said so) in WebM.
    audio = data["encoder"]["audio"]
    assert audio.startswith("re-encoded aac to libopus") if ext == ".webm" else audio == "copied", audio
    reference = _frames_rgb(clips["smooth"], size=(160, 90))
    value = psnr(reference, _frames_rgb(out))
    print(f"{codec}: PSNR {value:.2f} dB")
    assert value >= PSNR_MIN_DB, f"{codec}: PSNR {value:.2f} dB"
    _no_partials(tmp_path)


@pytest.mark.nvidia
@pytest.mark.dawn
def test_nvdec_gpu_copy_scale_round_trip(clips: dict[str, str], tmp_path: Path) -> None:
    out = str(tmp_path / "scaled.mp4")
    stats = transcode(clips["smooth"], out, TranscodeOptions(size=Size(160, 160), hwaccel="cuda"))
    data = stats.as_dict()
    assert data["mode"] == "gpu" and data["hwaccel"]["active"] == "cuda"
    # NVDEC frames copied on the GPU into Dawn textures; only the encoder's planes come back to the CPU.
    assert data["paths"] == {"gpu_copy": FRAMES, "cpu_download": FRAMES}
    assert data["path_bytes"].get("gpu_copy", 0) == 0
    assert data["device"]["implementation"] == "wgpudawn"
    assert _stream(out)["frames"] == FRAMES
    value = psnr(_frames_rgb(clips["smooth"], size=(160, 90)), _frames_rgb(out))
    assert value >= PSNR_MIN_DB, f"PSNR {value:.2f} dB"
    _no_partials(tmp_path)


@pytest.mark.vulkan
def test_gpu_ten_bit_input_stays_ten_bit(clips: dict[str, str], tmp_path: Path) -> None:
    out = str(tmp_path / "ten.mkv")
    stats = transcode(
        clips["smooth10"], out, TranscodeOptions(gpu=True, preset="ultrafast", depth=DepthChoice.TEN)
    )
    data = stats.as_dict()
    assert data["input_pixel_format"] == "yuv420p10le"
    assert data["output_pixel_format"] == "p010le"
    info = _stream(out)
    assert "10" in info["pix_fmt"], info["pix_fmt"]
    value = psnr(_frames_rgb(clips["smooth10"]), _frames_rgb(out))
    print(f"10-bit: PSNR {value:.2f} dB")
    assert value >= PSNR_MIN_DB, f"10-bit: PSNR {value:.2f} dB"


@pytest.mark.vulkan
@pytest.mark.parametrize(
    "source,choice,matrix,rng",
    [
        ("smooth", ColourChoice.BT709, ColourMatrix.BT709, ColourRange.LIMITED),
        ("full", ColourChoice.KEEP, None, ColourRange.FULL),
        ("full", ColourChoice.BT601, ColourMatrix.SMPTE170M, ColourRange.LIMITED),
    ],
    ids=["bt601-to-bt709", "full-range-kept", "full-to-bt601-limited"],
)
def test_gpu_colour_cases(
    clips: dict[str, str],
    tmp_path: Path,
    source: str,
    choice: ColourChoice,
    matrix: ColourMatrix | None,
    rng: ColourRange,
) -> None:
    out = str(tmp_path / "colour.mkv")
    stats = transcode(clips[source], out, TranscodeOptions(colour=choice, gpu=True, preset="ultrafast"))
    plan = stats.plan
    assert plan is not None and not plan.passthrough
    expected_matrix = plan.input_colour.matrix if matrix is None else matrix
    assert plan.output_colour.matrix is expected_matrix and plan.output_colour.range is rng
    info = _stream(out)
    assert info["colorspace"] == int(expected_matrix) and info["color_range"] == int(rng)
    value = psnr(_frames_rgb(clips[source]), _frames_rgb(out))
    print(f"{choice.value}: PSNR {value:.2f} dB")
    assert value >= PSNR_MIN_DB, f"{choice.value}: PSNR {value:.2f} dB"


@pytest.mark.vulkan
def test_gpu_stage_times_cover_the_run(clips: dict[str, str], tmp_path: Path) -> None:
    stats = transcode(
        clips["smooth"], str(tmp_path / "t.mp4"), TranscodeOptions(size=Size(160, 90), gpu=True)
    )
    stages = stats.as_dict()["stages"]
    for name in ("decode", "import", "convert", "encode"):
        assert name in stages
    assert "render" not in stages  # Y'CbCr planes go straight to the copier's fused pass
    assert sum(v["seconds"] for v in stages.values()) == pytest.approx(stats.seconds, rel=0.05)
    assert stats.peak_copier_slots <= 3


def test_in_process_refuses_same_file(clips: dict[str, str]) -> None:
    with pytest.raises(InvalidInputError, match="is the input"):
        transcode(clips["smooth"], clips["smooth"])


def test_webm_output_defaults_to_vp9(clips: dict[str, str], tmp_path: Path) -> None:
    out = str(tmp_path / "o.webm")
    stats = transcode(clips["smooth"], out, TranscodeOptions(hwaccel="none", frames=4))
    data = stats.as_dict()
    assert data["encoder"]["codec"] == "vp9", data["encoder"]
    assert data["encoder"]["audio"].startswith("re-encoded aac to libopus")
    assert _stream(out)["frames"] == 4
    _no_partials(tmp_path)
