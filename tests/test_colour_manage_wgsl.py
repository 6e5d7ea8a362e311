"""colour_manage.wgsl against the numpy reference, through a compute-shader harness on the Vulkan device.

A storage buffer of R'G'B' samples goes through ``colour_manage`` with the uniform packed by
``colour_params``; the result must match :func:`alpha2.gpu.colour_manage.apply_plan` within 1e-3 of
signal (well under half a 10-bit code value), and the BT.2408 check holds through the shader too.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

from alpha2.gpu.colour import ColourInfo, ColourPrimaries, TransferCharacteristic
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget, apply_plan
from alpha2.gpu.hdr import ContentLightLevel, HdrMetadata
from alpha2.gpu.tonemap import GamutMapping, ToneCurve, ToneMode
from alpha2.gpu.transfer import SdrDecoding, decode
from alpha2.native_gpu.render.colour_params import (
    UNIFORM_SIZE_BYTES,
    colour_manage_wgsl,
    colour_params,
    pack_plan,
)
from tests.colour_patterns import bt2408_pattern, place_sdr_pattern

P = ColourPrimaries
T = TransferCharacteristic

HARNESS = """
@group(0) @binding(0) var<uniform> params: ColourManage;
@group(0) @binding(1) var<storage, read> samples: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> results: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= arrayLength(&samples)) {
        return;
    }
    results[id.x] = vec4<f32>(colour_manage(samples[id.x].xyz, params), 1.0);
}
"""


@pytest.fixture(scope="module")
def device() -> Any:
    wgpu = pytest.importorskip("wgpu")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        pytest.skip("wgpu has no adapter")
    return adapter.request_device_sync()


@pytest.fixture(scope="module")
def pipeline(device: Any) -> Any:
    module = device.create_shader_module(code=colour_manage_wgsl() + HARNESS)
    return device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})


def run_shader(device: Any, pipeline: Any, uniform: bytes, rgb: np.ndarray) -> np.ndarray:
    import wgpu

    samples = np.zeros((len(rgb), 4), dtype=np.float32)
    samples[:, :3] = rgb
    size = samples.nbytes
    uniform_buffer = device.create_buffer_with_data(data=uniform, usage=wgpu.BufferUsage.UNIFORM)
    in_buffer = device.create_buffer_with_data(data=samples.tobytes(), usage=wgpu.BufferUsage.STORAGE)
    out_buffer = device.create_buffer(size=size, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    readback = device.create_buffer(size=size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    bind_group = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": uniform_buffer, "offset": 0, "size": len(uniform)}},
            {"binding": 1, "resource": {"buffer": in_buffer, "offset": 0, "size": size}},
            {"binding": 2, "resource": {"buffer": out_buffer, "offset": 0, "size": size}},
        ],
    )
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, bind_group)
    compute.dispatch_workgroups((len(rgb) + 63) // 64)
    compute.end()
    encoder.copy_buffer_to_buffer(out_buffer, 0, readback, 0, size)
    device.queue.submit([encoder.finish()])
    readback.map_sync(wgpu.MapMode.READ)
    try:
        out = np.frombuffer(bytes(readback.read_mapped()), dtype=np.float32).reshape(-1, 4)
    finally:
        readback.unmap()
    return out[:, :3].astype(np.float64)


def target_id(target: ColourTarget) -> str:
    return f"{target.primaries.name}-{target.transfer.name}-{target.peak_cd_m2}"


def random_signals(count: int = 4096) -> np.ndarray:
    rng = np.random.default_rng(7)
    corners = np.array([[i >> 2 & 1, i >> 1 & 1, i & 1] for i in range(8)], dtype=np.float64)
    ramp = np.repeat(np.linspace(0.0, 1.0, 257)[:, None], 3, axis=1)
    return np.concatenate([rng.random((count, 3)), corners, ramp])


SOURCES = [
    ColourInfo(primaries=P.BT2020, transfer=T.SMPTE2084),
    ColourInfo(primaries=P.BT2020, transfer=T.ARIB_STD_B67),
    ColourInfo(primaries=P.BT709, transfer=T.BT709),
    ColourInfo(primaries=P.SMPTE170M, transfer=T.SMPTE170M),
    ColourInfo(primaries=P.SMPTE431, transfer=T.GAMMA28),
    ColourInfo(primaries=P.SMPTE432, transfer=T.IEC61966_2_1),
    ColourInfo(primaries=P.BT470BG, transfer=T.GAMMA22),
    ColourInfo(primaries=P.BT709, transfer=T.LINEAR),
]
TARGETS = [
    ColourTarget.sdr_bt709(),
    ColourTarget.sdr_bt709(peak_cd_m2=400.0),
    ColourTarget.hdr10(),
    ColourTarget.hdr10(peak_cd_m2=600.0),
    ColourTarget(P.BT2020, T.ARIB_STD_B67),
    ColourTarget(P.SMPTE432, T.IEC61966_2_1),
]
OPTIONS = [
    ColourOptions(),
    ColourOptions(tone_curve=ToneCurve.SPLINE, tone_mode=ToneMode.LUMA, gamut_mapping=GamutMapping.SOFT),
    ColourOptions(tone_curve=ToneCurve.CLIP, tone_mode=ToneMode.RGB, gamut_mapping=GamutMapping.CLIP),
    ColourOptions(sdr_decoding=SdrDecoding.SCENE, gamut_mapping=GamutMapping.SOFT),
]


def test_uniform_layout() -> None:
    params = colour_params(SOURCES[0], ColourTarget.sdr_bt709())
    assert len(params.uniform) == UNIFORM_SIZE_BYTES == 208
    assert params.uniform == pack_plan(params.plan)
    floats = struct.unpack("<44f", params.uniform[:176])
    ints = struct.unpack("<8I", params.uniform[176:])
    plan = params.plan
    # First column of the primaries matrix, padded to 16 bytes.
    assert floats[0:3] == pytest.approx(plan.primaries[:, 0], rel=1e-6)
    assert floats[3] == 0.0
    assert floats[24:27] == pytest.approx(plan.source_luma, rel=1e-6)
    assert floats[27] == 1000.0
    assert floats[31] == pytest.approx(1.2)
    assert ints[:4] == (plan.source_curve, plan.target_curve, plan.tone.curve, plan.tone_mode)
    assert ints[4:7] == (plan.gamut_mapping, 0, 1)
    identity = colour_params(ColourInfo(primaries=P.BT709, transfer=T.BT709), ColourTarget.sdr_bt709())
    assert identity.identity and struct.unpack("<8I", identity.uniform[176:])[5] == 1


OPTION_IDS = ["default", "spline-luma-soft", "clip-rgb-clip", "scene"]
# Every source and target with the default options; the other options on the HDR and SDR sources.
CASES = [(s, t, 0) for s in SOURCES for t in TARGETS] + [
    (s, t, o) for o in range(1, len(OPTIONS)) for s in SOURCES[:3] for t in TARGETS[:4]
]


@pytest.mark.vulkan
@pytest.mark.parametrize(
    ("source", "target", "option"),
    CASES,
    ids=[f"{s.primaries.name}-{s.transfer.name}-{target_id(t)}-{OPTION_IDS[o]}" for s, t, o in CASES],
)
def test_shader_matches_numpy(
    device: Any, pipeline: Any, source: ColourInfo, target: ColourTarget, option: int
) -> None:
    options = OPTIONS[option]
    hdr = HdrMetadata(light_level=ContentLightLevel(4000, 400))
    params = colour_params(source, target, hdr, options)
    rgb = random_signals()
    expected = apply_plan(rgb, params.plan)
    got = run_shader(device, pipeline, params.uniform, rgb)
    # Near the gamut's and the peak's edges a bright colour's dark component is a small difference of
    # large values: there f32 rounding of the input alone moves the float64 reference by 1e-3 of
    # signal. So the signal must match within 1e-3 (one 10-bit code) for nearly all samples, and the light
    # (decoded by the target curve, 1 = the curve's full signal) everywhere.
    signal_error = np.abs(got - expected).max(axis=1)
    assert np.quantile(signal_error, 0.995) < 1e-3, params.plan.details
    assert signal_error.mean() < 1e-4, params.plan.details
    plan = params.plan
    full = decode(np.ones(3), plan.target_curve, plan.target_luma).max()
    light = [decode(v, plan.target_curve, plan.target_luma) / full for v in (got, expected)]
    light_error = np.abs(light[0] - light[1])
    worst = light_error.max(axis=1).argmax()
    assert light_error.max() < 1e-3, (
        light_error.max(),
        rgb[worst],
        expected[worst],
        got[worst],
        plan.details,
    )


@pytest.mark.vulkan
@pytest.mark.parametrize("transfer", [T.SMPTE2084, T.ARIB_STD_B67], ids=["pq", "hlg"])
def test_bt2408_through_the_shader(device: Any, pipeline: Any, transfer: T) -> None:
    pattern = bt2408_pattern()
    source = ColourInfo(primaries=P.BT2020, transfer=transfer)
    signal = place_sdr_pattern(pattern, transfer, bits=10)
    for hdr, limit in ((HdrMetadata(light_level=ContentLightLevel(203, 203)), 3.0), (None, 12.0)):
        if transfer is T.ARIB_STD_B67 and hdr is not None:
            limit = 12.0  # HLG's peak is its display's (1000 cd/m²), metadata or not
        params = colour_params(source, ColourTarget.sdr_bt709(), hdr)
        sdr = run_shader(device, pipeline, params.uniform, signal.reshape(-1, 3))
        error = np.abs(np.round(sdr * 255.0) - pattern.reshape(-1, 3)).mean()
        assert error < limit, (transfer.name, hdr, error)
