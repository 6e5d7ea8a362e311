"""alpha2's WGSL through Tint, Dawn's shader compiler, on Dawn's Null backend: no GPU needed.

The pixel tests run on lavapipe through wgpu-native, whose compiler (naga) accepts WGSL that Tint
refuses. ``(a > b) & c`` written without its parentheses passed every CI test, and the H200 then failed
each GPU transcode on it. Here the renderer and the encode copier build their pipelines on a wgpudawn
device of the Null backend, so Tint compiles and Dawn validates every shader variant (and the wall
window's blit). The Null backend draws nothing, so no pixel is checked; that is for the lavapipe and
H200 tests.
"""

from __future__ import annotations

from typing import Any

import pytest

from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, ColourPrimaries, ColourRange
from alpha2.gpu.colour import TransferCharacteristic as T
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation
from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata
from alpha2.gpu.tonemap import ToneCurve
from alpha2.gpu.webgpu import WebGpuImplementation
from alpha2.native_gpu import Device, EncodeCopier, FrameImporter, FrameRenderer
from tests.media import make_clip

W, H = 96, 64

COLOURS = {
    "bt709": ColourInfo(ColourMatrix.BT709, ColourPrimaries.BT709, T.BT709, ColourRange.LIMITED),
    "bt601-full": ColourInfo(
        ColourMatrix.SMPTE170M, ColourPrimaries.SMPTE170M, T.SMPTE170M, ColourRange.FULL
    ),
    "pq": ColourInfo(ColourMatrix.BT2020_NCL, ColourPrimaries.BT2020, T.SMPTE2084, ColourRange.LIMITED),
    "hlg": ColourInfo(ColourMatrix.BT2020_NCL, ColourPrimaries.BT2020, T.ARIB_STD_B67, ColourRange.LIMITED),
}
HDR = HdrMetadata(light_level=ContentLightLevel(1000, 400))


@pytest.fixture(scope="module")
def null_device() -> Any:
    wgpudawn = pytest.importorskip("wgpudawn")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WGPU_BACKEND_TYPE", "Null")  # read when the adapter is requested
        adapter = wgpudawn.gpu.request_adapter_sync()
    if adapter is None or adapter.info.get("backend_type") != "Null":
        pytest.skip("this wgpudawn build has no Null backend")
    have = {str(f) for f in adapter.features}
    wanted = WebGpuImplementation.DAWN.feature_16bit
    raw = adapter.request_device_sync(required_features=[wanted] if wanted in have else [])
    device = Device.adopt(raw)
    assert device.implementation is WebGpuImplementation.DAWN
    return device


@pytest.fixture(scope="module")
def planes(null_device: Device, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One imported frame per plane layout: 8-bit 4:2:0, 10-bit 4:2:0 (16-bit textures), 4:4:4."""
    folder = tmp_path_factory.mktemp("tint")
    out = {}
    with FrameImporter(null_device) as importer:
        for pix_fmt in ("yuv420p", "yuv420p10le", "yuv444p"):
            clip = make_clip(folder / f"{pix_fmt}.mkv", "h264", W, H, 2, pix_fmt=pix_fmt)
            with DecodeSession(clip.path, hwaccel="none") as session:
                frame = session.next_frame()
                assert frame is not None
                with frame:
                    lease = importer.import_frame(frame)
                out[pix_fmt] = (lease, frame.pixel_format)
        yield out
        for lease, _ in out.values():
            lease.release()


@pytest.mark.parametrize("colour", list(COLOURS))
@pytest.mark.parametrize("layout", ["yuv420p", "yuv420p10le", "yuv444p"])
def test_renderer_pipelines_compile_in_tint(
    null_device: Device, planes: Any, layout: str, colour: str
) -> None:
    lease, pixel_format = planes[layout]
    renderer = FrameRenderer(null_device)
    info = COLOURS[colour]
    hdr = HDR if info.transfer in (T.SMPTE2084, T.ARIB_STD_B67) else None
    views = lease.frame.views
    renderer.render(views, pixel_format, info, W, H, hdr=hdr)
    renderer.render(views, pixel_format, info, W, H, rotation=Rotation.CW90, crop=(2, 2, 80, 60), hdr=hdr)
    renderer.render(views, pixel_format, info, W, H, output_format="rgba16float", hdr=hdr)
    if hdr is not None:
        for target in (ColourTarget.hdr10(), ColourTarget.sdr_bt709(peak_cd_m2=300.0)):
            renderer.render(views, pixel_format, info, W, H, hdr=hdr, colour_target=target)


@pytest.mark.parametrize("colour", list(COLOURS))
@pytest.mark.parametrize("layout", ["yuv420p", "yuv420p10le", "yuv444p"])
@pytest.mark.parametrize("size", [(W, H), (W // 3, H // 2), (W * 2, H * 2)], ids=["same", "down", "up"])
def test_copier_planes_pass_compiles_in_tint(
    null_device: Device, planes: Any, layout: str, colour: str, size: tuple[int, int]
) -> None:
    lease, pixel_format = planes[layout]
    info = COLOURS[colour]
    hdr_in = info.transfer in (T.SMPTE2084, T.ARIB_STD_B67)
    out_format = PixelFormat.P010 if null_device.info.has_16bit_norm else PixelFormat.NV12
    width, height = (size[0] + 1) // 2 * 2, (size[1] + 1) // 2 * 2
    with EncodeCopier(
        null_device,
        width,
        height,
        pixel_format=out_format,
        matrix=ColourMatrix.BT709,
        chroma_location=ChromaLocation.LEFT,
        colour_target=ColourTarget.sdr_bt709() if hdr_in else None,
    ) as copier:
        frames = copier.submit_planes(lease.frame.views, pixel_format, info, W, H, pts=0, hdr=HDR)
        frames += copier.submit_planes(
            lease.frame.views, pixel_format, info, W, H, pts=1, rotation=Rotation.CW270, crop=(0, 0, 90, 60)
        )
        frames += copier.flush()
        assert len(frames) == 2
        for frame in frames:
            frame.release()


def test_copier_rgba_pass_and_tone_curves_compile_in_tint(null_device: Device, planes: Any) -> None:
    lease, pixel_format = planes["yuv420p10le"]
    renderer = FrameRenderer(null_device)
    texture = renderer.render(lease.frame.views, pixel_format, COLOURS["bt709"], W, H)
    with EncodeCopier(null_device, W, H) as copier:
        frames = copier.submit(texture, pts=0) + copier.flush()
        assert len(frames) == 1 and frames[0].planes.planes[0].height == H
        frames[0].release()
    for curve in ToneCurve:
        managed = FrameRenderer(null_device, colour_options=ColourOptions(tone_curve=curve))
        managed.render(lease.frame.views, pixel_format, COLOURS["pq"], W, H, hdr=HDR)


def test_wall_blit_compiles_in_tint(null_device: Device) -> None:
    from alpha2.apps.wall_window import _Blit
    from alpha2.gpu.geometry import Size

    gpu = null_device.gpu_module
    wall = null_device.webgpu_device.create_texture(
        size=(64, 48, 1),
        format="rgba8unorm",
        usage=gpu.TextureUsage.TEXTURE_BINDING | gpu.TextureUsage.RENDER_ATTACHMENT,
    )
    blit = _Blit(null_device.webgpu_device, gpu, wall, "bgra8unorm")
    encoder = null_device.webgpu_device.create_command_encoder()
    assert blit.encode(encoder, Size(32, 24)) is blit.target
    null_device.webgpu_device.queue.submit([encoder.finish()])
