"""The sampling shader's colour management against the numpy reference, on a real WebGPU device.

A BT.2408 pattern placed in PQ / HLG (tests/colour_patterns.py) is uploaded as 4:4:4 10-bit planes
(one texel per pixel: no filtering in the comparison) and rendered to SDR BT.709; the reference is
alpha2.gpu.colour_manage on the same codes. An SDR BT.709 frame keeps the plain pipeline.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from alpha2.gpu.colour import (
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourPrimaries,
    ColourRange,
    TransferCharacteristic,
    rgb_to_yuv,
    yuv_to_rgb,
)
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget, colour_manage
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata
from alpha2.gpu.tonemap import ToneCurve
from alpha2.native_gpu.render.renderer import FrameRenderer, read_texture_rgba
from tests.colour_patterns import bt2408_pattern, place_sdr_pattern

W, H = 68, 31  # 2108 = the pattern's length

PQ = TransferCharacteristic.SMPTE2084
HLG = TransferCharacteristic.ARIB_STD_B67


def hdr_colour(transfer: TransferCharacteristic) -> ColourInfo:
    return ColourInfo(
        ColourMatrix.BT2020_NCL, ColourPrimaries.BT2020, transfer, ColourRange.LIMITED, ChromaLocation.LEFT
    )


@pytest.fixture(scope="module")
def device() -> Any:
    wgpu = pytest.importorskip("wgpu")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        pytest.skip("wgpu has no adapter")
    if "texture-format16bit-norm" not in adapter.features:
        pytest.skip("no 16-bit norm textures")
    return adapter.request_device_sync(required_features=["texture-format16bit-norm"])


def yuv444_codes(signal: np.ndarray, colour: ColourInfo) -> np.ndarray:
    """(H, W, 3) 10-bit Y'CbCr codes of R'G'B' signal (N, 3)."""
    codes = rgb_to_yuv(colour.matrix, colour.range, 10).apply(signal)
    return np.clip(np.round(codes), 0, 1023).astype(np.uint16).reshape(H, W, 3)


def upload(device: Any, codes: np.ndarray) -> list[Any]:
    import wgpu

    textures = []
    for plane in range(3):
        texture = device.create_texture(
            size=(W, H, 1),
            format="r16unorm",
            usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST,
        )
        data = np.ascontiguousarray(codes[:, :, plane])
        device.queue.write_texture(
            {"texture": texture}, data.tobytes(), {"offset": 0, "bytes_per_row": W * 2}, (W, H, 1)
        )
        textures.append(texture)
    return textures


def reference(codes: np.ndarray, colour: ColourInfo, **kwargs: Any) -> np.ndarray:
    rgb = np.clip(yuv_to_rgb(colour.matrix, colour.range, 10).apply(codes.reshape(-1, 3)), 0.0, 1.0)
    return colour_manage(rgb, colour, **kwargs).reshape(H, W, 3) * 255.0


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """float32 on the GPU against float64: a fraction of a code on average; a saturated colour at the
    gamut's edge (the yellow bar's blue, 1e-4 linear either side of zero) may move a few codes."""
    error = np.abs(got - want)
    assert error.mean() < 0.5, error.mean()
    assert np.percentile(error, 99.9) <= 2.0 and error.max() <= 10.0, (error.max(), np.argwhere(error > 2))


def render(renderer: FrameRenderer, device: Any, codes: np.ndarray, colour: ColourInfo, **kw: Any) -> Any:
    texture = renderer.render(upload(device, codes), PixelFormat.YUV444P10, colour, W, H, **kw)
    return read_texture_rgba(device, texture)[:, :, :3].astype(np.float64)


@pytest.mark.parametrize("transfer", [PQ, HLG])
@pytest.mark.parametrize("curve", [ToneCurve.BT2390, ToneCurve.SPLINE, ToneCurve.CLIP])
def test_hdr_matches_the_numpy_reference(
    device: Any, transfer: TransferCharacteristic, curve: ToneCurve
) -> None:
    colour = hdr_colour(transfer)
    codes = yuv444_codes(place_sdr_pattern(bt2408_pattern(), transfer), colour)
    options = ColourOptions(tone_curve=curve)
    renderer = FrameRenderer(device, colour_options=options)
    got = render(renderer, device, codes, colour)
    assert renderer.last_colour is not None and not renderer.last_colour.identity
    want = reference(codes, colour, options=options)
    assert_close(got, want)


def test_metadata_peak_and_target_peak(device: Any) -> None:
    colour = hdr_colour(PQ)
    codes = yuv444_codes(place_sdr_pattern(bt2408_pattern(), PQ), colour)
    hdr = HdrMetadata(light_level=ContentLightLevel(203, 100))
    renderer = FrameRenderer(device)
    got = render(renderer, device, codes, colour, hdr=hdr)
    assert_close(got, reference(codes, colour, hdr=hdr))
    # Content that peaks at 203 cd/m² needs no tone curve: the SDR pattern comes back.
    pattern = bt2408_pattern().reshape(H, W, 3)
    assert np.abs(got - pattern).mean() < 3.0
    brighter = render(renderer, device, codes, colour, colour_target=ColourTarget.sdr_bt709(400.0))
    target = ColourTarget.sdr_bt709(400.0)
    assert_close(brighter, reference(codes, colour, target=target))
    assert brighter.mean() < got.mean()  # 203 cd/m² white sits below a 400 cd/m² display's peak


def test_sdr_keeps_the_plain_pipeline(device: Any) -> None:
    colour = ColourInfo(
        ColourMatrix.BT709,
        ColourPrimaries.BT709,
        TransferCharacteristic.BT709,
        ColourRange.LIMITED,
        ChromaLocation.LEFT,
    )
    signal = bt2408_pattern() / 255.0
    codes = yuv444_codes(signal, colour)
    renderer = FrameRenderer(device)
    got = render(renderer, device, codes, colour)
    assert renderer.last_colour is not None and renderer.last_colour.identity
    assert renderer._managed_shader is None  # no colour-managed module was even built
    rgb = np.clip(yuv_to_rgb(colour.matrix, colour.range, 10).apply(codes.reshape(-1, 3)), 0, 1)
    assert np.abs(got - rgb.reshape(H, W, 3) * 255.0).max() <= 1.0
    # An untagged frame resolves to BT.709 as well; a LOG transfer has no formula: plain pass too.
    render(renderer, device, codes, ColourInfo(ColourMatrix.BT709, range=ColourRange.LIMITED))
    assert renderer.last_colour is not None and renderer.last_colour.identity
    log = ColourInfo(
        ColourMatrix.BT709, ColourPrimaries.BT709, TransferCharacteristic.LOG, ColourRange.LIMITED
    )
    render(renderer, device, codes, log)
    assert renderer.last_colour is None and renderer._managed_shader is None


def test_sdr_gamut_is_converted_only_when_asked(device: Any) -> None:
    colour = ColourInfo(
        ColourMatrix.BT2020_NCL,
        ColourPrimaries.BT2020,
        TransferCharacteristic.BT2020_10,
        ColourRange.LIMITED,
        ChromaLocation.LEFT,
    )
    codes = yuv444_codes(bt2408_pattern() / 255.0, colour)
    plain = FrameRenderer(device)
    render(plain, device, codes, colour)
    assert plain.last_colour is not None and plain.last_colour.identity
    converting = FrameRenderer(device, sdr_gamut=True)
    got = render(converting, device, codes, colour)
    assert converting.last_colour is not None and not converting.last_colour.identity
    assert_close(got, reference(codes, colour))


def test_bad_targets_are_refused(device: Any) -> None:
    from alpha2.gpu.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        FrameRenderer(device, colour_target="bt709")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        FrameRenderer(device, colour_options=ToneCurve.CLIP)  # type: ignore[arg-type]
