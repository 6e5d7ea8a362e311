"""RGB tensors of frames (alpha2.native_gpu.render.tensor, alpha2.api.tensors): the CPU path on a real
WebGPU device (lavapipe in CI), against alpha2.gpu.colour's exact numpy conversion.

Y'CbCr planes are made here in numpy (smooth patterns, 8- and 10-bit, BT.601 / 709 / 2020, limited and
full range, 4:2:0 / 4:2:2 / 4:4:4), rendered by the FrameRenderer and packed by the compute pass. The
reference upsamples chroma bilinearly at the frame's siting in float64 and applies ``yuv_to_rgb``.
uint8 tensors must be within a mean of 0.5 and a max of 2 codes of it; float tensors, layouts and
normalisation are exact transforms of the uint8 tensor. The CUDA route is tested in
tests/test_tensor_export.py.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, ColourRange, yuv_to_rgb
from alpha2.gpu.errors import ClosedError, InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.identity import ExecutionPath
from alpha2.native_gpu.render.renderer import FrameRenderer, read_texture_rgba
from alpha2.native_gpu.render.tensor import (
    RgbTensorPass,
    TensorDType,
    TensorLayout,
    TensorSpec,
    batch_words,
    element_table,
    frame_words,
    max_frame_words,
    reference_tensor,
)

MEAN_LIMIT = 0.5
MAX_LIMIT = 2.0
_AVCOL_UNSPECIFIED = 2
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# ---------------------------------------------------------------------------------------------------
# the packing arithmetic, no GPU


def test_frame_words_tile_the_batch() -> None:
    """Every word of a batch is written by exactly one frame's dispatch: the one its first element is in."""
    for width, height in ((1, 1), (1, 2), (3, 1), (5, 3), (7, 5), (16, 9)):
        for dtype in TensorDType:
            spec = TensorSpec(width, height, dtype=dtype)
            per_word = dtype.per_word
            for count in (1, 2, 3, 5, 8):
                expected = 0
                for index in range(count):
                    span = frame_words(spec, index)
                    assert span.first_word == expected
                    assert span.first_word * per_word - span.lead == index * spec.elements
                    assert 0 <= span.lead < per_word and span.words <= max_frame_words(spec)
                    expected += span.words
                assert expected == batch_words(spec, count) == frame_words(spec, count).first_word
                assert batch_words(spec, count) * 4 >= count * spec.frame_bytes


def test_spec_validation_names_the_allowed_values() -> None:
    with pytest.raises(InvalidInputError, match="positive int"):
        TensorSpec(0, 4)
    with pytest.raises(InvalidInputError, match="HWC, CHW"):
        TensorSpec(4, 4, "NHWC")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="uint8, float16, float32"):
        TensorSpec(4, 4, dtype="int8")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="float16 or float32"):
        TensorSpec(4, 4, mean=(0.5, 0.5, 0.5))
    with pytest.raises(InvalidInputError, match="zero"):
        TensorSpec(4, 4, dtype=TensorDType.FLOAT32, std=(1.0, 0.0, 1.0))
    with pytest.raises(InvalidInputError, match="three"):
        TensorSpec(4, 4, dtype=TensorDType.FLOAT32, mean=(0.5, 0.5))  # type: ignore[arg-type]
    spec = TensorSpec(5, 3, TensorLayout.CHW, TensorDType.FLOAT16)
    assert spec.shape() == (3, 3, 5) and spec.shape(2) == (2, 3, 3, 5) and spec.frame_bytes == 90


def test_element_table_is_the_normalisation_in_the_dtype() -> None:
    codes = np.arange(256, dtype=np.float64)
    spec = TensorSpec(2, 2, dtype=TensorDType.FLOAT32, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    table = element_table(spec).reshape(3, 256).view(np.float32)
    for c in range(3):
        want = ((codes / 255.0 - IMAGENET_MEAN[c]) / IMAGENET_STD[c]).astype(np.float32)
        assert np.array_equal(table[c], want)
    half = element_table(dataclasses.replace(spec, dtype=TensorDType.FLOAT16)).reshape(3, 256)
    assert (half >> 16 == 0).all(), "a half float in the low 16 bits of its word"
    assert np.array_equal(
        half.astype(np.uint16).view(np.float16)[1], ((codes / 255 - 0.456) / 0.224).astype(np.float16)
    )
    assert not element_table(TensorSpec(2, 2)).any()


def test_reference_layouts() -> None:
    rng = np.random.default_rng(5)
    rgb = rng.integers(0, 256, (2, 3, 4, 3), dtype=np.uint8)
    hwc = reference_tensor(rgb, TensorSpec(4, 3))
    assert np.array_equal(hwc, rgb)
    chw = reference_tensor(rgb, TensorSpec(4, 3, TensorLayout.CHW, TensorDType.FLOAT32))
    assert chw.shape == (2, 3, 3, 4)
    assert np.array_equal(chw, np.transpose(rgb, (0, 3, 1, 2)).astype(np.float32) / np.float32(255))
    with pytest.raises(InvalidInputError, match="uint8"):
        reference_tensor(rgb.astype(np.float32), TensorSpec(4, 3))


# ---------------------------------------------------------------------------------------------------
# planes made in numpy, and the exact reference


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    pixel_format: PixelFormat
    matrix: ColourMatrix
    range: ColourRange
    width: int
    height: int

    @property
    def colour(self) -> ColourInfo:
        return ColourInfo.from_ffmpeg(
            int(self.matrix),
            _AVCOL_UNSPECIFIED,
            _AVCOL_UNSPECIFIED,
            int(self.range),
            int(ChromaLocation.LEFT),
        )


_PF, _M, _R = PixelFormat, ColourMatrix, ColourRange
CASES = [
    Case("nv12-bt601-limited", _PF.NV12, _M.BT470BG, _R.LIMITED, 64, 48),
    Case("yuv420p-bt601-full", _PF.YUV420P, _M.BT470BG, _R.FULL, 64, 48),
    Case("nv12-bt709-limited-odd", _PF.NV12, _M.BT709, _R.LIMITED, 61, 37),
    Case("yuv420p-bt709-full-odd", _PF.YUV420P, _M.BT709, _R.FULL, 45, 33),
    Case("p010-bt2020-limited", _PF.P010, _M.BT2020_NCL, _R.LIMITED, 64, 48),
    Case("yuv420p10-bt2020-full-odd", _PF.YUV420P10, _M.BT2020_NCL, _R.FULL, 61, 37),
    Case("yuv422p-bt709-limited", _PF.YUV422P, _M.BT709, _R.LIMITED, 48, 32),
    Case("yuv444p-bt601-limited-odd", _PF.YUV444P, _M.BT470BG, _R.LIMITED, 41, 29),
    Case("yuv444p10-bt2020-limited", _PF.YUV444P10, _M.BT2020_NCL, _R.LIMITED, 40, 30),
]


def code_planes(case: Case, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]]:
    """Y (H, W), Cb and Cr (chroma plane size) integer codes of a smooth picture, and the chroma siting
    offset in luma pixels (LEFT: co-sited horizontally; 4:2:0 centred between two rows)."""
    pf = case.pixel_format
    depth = pf.bit_depth
    unit = float(1 << (depth - 8))
    sx, sy = 1 << pf.log2_chroma_w, 1 << pf.log2_chroma_h
    cw, ch = -(-case.width // sx), -(-case.height // sy)
    offset = (0.0, (sy - 1) / 2.0)
    if case.range is ColourRange.LIMITED:
        y_lo, y_hi, c_mid, c_amp = 16 * unit, 235 * unit, 128 * unit, 100 * unit
    else:
        y_lo, y_hi, c_mid, c_amp = 0.0, 255 * unit + (unit - 1), 128 * unit, 120 * unit
    y, x = np.mgrid[0 : case.height, 0 : case.width].astype(np.float64)
    phase = seed * 0.7
    luma = 0.5 + 0.45 * np.sin(2 * np.pi * (x / case.width * 1.3 + y / case.height * 0.6) + phase)
    luma_codes = np.round(y_lo + (y_hi - y_lo) * luma)
    # Chroma at its own sample positions (in luma pixels): smooth, so its bilinear filtering is exact to
    # a small fraction of a code.
    ly, lx = np.mgrid[0:ch, 0:cw].astype(np.float64)
    px, py = lx * sx + offset[0], ly * sy + offset[1]
    cb = np.round(c_mid + c_amp * np.cos(2 * np.pi * px / case.width + phase))
    cr = np.round(
        c_mid + c_amp * np.sin(2 * np.pi * (py / case.height * 0.8 + px / case.width * 0.3) + phase)
    )
    return luma_codes, cb, cr, offset


def upsample(
    plane: np.ndarray, sx: int, sy: int, offset: tuple[float, float], width: int, height: int
) -> np.ndarray:
    """Bilinear chroma at every luma pixel, clamped at the plane's edge (float64)."""
    ch, cw = plane.shape
    kx = np.clip((np.arange(width) - offset[0]) / sx, 0, cw - 1)
    ky = np.clip((np.arange(height) - offset[1]) / sy, 0, ch - 1)
    x0 = np.floor(kx).astype(int)
    y0 = np.floor(ky).astype(int)
    x1, y1 = np.minimum(x0 + 1, cw - 1), np.minimum(y0 + 1, ch - 1)
    fx, fy = (kx - x0)[None, :], (ky - y0)[:, None]
    top = plane[y0][:, x0] * (1 - fx) + plane[y0][:, x1] * fx
    bottom = plane[y1][:, x0] * (1 - fx) + plane[y1][:, x1] * fx
    result: np.ndarray = top * (1 - fy) + bottom * fy
    return result


def reference_rgb(case: Case, seed: int = 0) -> np.ndarray:
    """The exact conversion (alpha2.gpu.colour), as unrounded 0..255 floats (H, W, 3)."""
    pf = case.pixel_format
    luma, cb, cr, offset = code_planes(case, seed)
    sx, sy = 1 << pf.log2_chroma_w, 1 << pf.log2_chroma_h
    ycc = np.stack([luma, *(upsample(p, sx, sy, offset, case.width, case.height) for p in (cb, cr))], axis=-1)
    rgb = yuv_to_rgb(case.matrix, case.range, pf.bit_depth).apply(ycc)
    return np.clip(rgb, 0.0, 1.0) * 255.0


def plane_textures(device: Any, case: Case, seed: int = 0) -> list[Any]:
    """The planes as the renderer samples them (semi-planar formats interleave Cb and Cr; P010 keeps
    its codes in the high bits)."""
    import wgpu

    pf = case.pixel_format
    luma, cb, cr, _ = code_planes(case, seed)
    dtype = np.uint16 if pf.storage_bits > 8 else np.uint8
    shift = pf.msb_shift
    if pf.is_semi_planar:
        arrays = [luma, np.stack([cb, cr], axis=-1)]
    else:
        arrays = [luma, cb, cr]
    layout = pf.plane_layout(case.width, case.height)
    textures = []
    for info, values in zip(layout.planes, arrays):
        data = np.ascontiguousarray((values.astype(np.int64) << shift).astype(dtype))
        texture = device.create_texture(
            size=(info.width, info.height, 1),
            format=info.format.wgpu_format,
            usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST,
        )
        device.queue.write_texture(
            {"texture": texture},
            data.tobytes(),
            {"offset": 0, "bytes_per_row": data.strides[0], "rows_per_image": info.height},
            (info.width, info.height, 1),
        )
        textures.append(texture)
    return textures


@pytest.fixture(scope="module")
def device() -> Any:
    wgpu = pytest.importorskip("wgpu")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        pytest.skip("wgpu has no adapter")
    features = [f for f in ("texture-format16bit-norm",) if f in adapter.features]
    return adapter.request_device_sync(required_features=features)


@pytest.fixture(scope="module")
def renderer(device: Any) -> FrameRenderer:
    return FrameRenderer(device)


@pytest.fixture(scope="module")
def packer(device: Any) -> RgbTensorPass:
    return RgbTensorPass(device)


def needs_16bit_norm(device: Any, pixel_format: PixelFormat) -> None:
    if pixel_format.storage_bits > 8 and "texture-format16bit-norm" not in device.features:
        pytest.skip("the device lacks 'texture-format16bit-norm'")


def pack(
    packer: RgbTensorPass,
    renderer: FrameRenderer,
    case: Case,
    spec: TensorSpec,
    planes: list[list[Any]],
    **kw: Any,
) -> np.ndarray:
    def encode_render(encoder: Any, index: int, target: Any) -> None:
        renderer.encode_render(
            encoder, planes[index], case.pixel_format, case.colour, case.width, case.height, target, **kw
        )

    return packer.to_numpy(spec, len(planes), encode_render)


# ---------------------------------------------------------------------------------------------------
# the CPU path on a real device


@pytest.mark.vulkan
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_uint8_matches_the_exact_conversion(
    case: Case, device: Any, renderer: FrameRenderer, packer: RgbTensorPass
) -> None:
    needs_16bit_norm(device, case.pixel_format)
    planes = [plane_textures(device, case, seed) for seed in range(2)]
    spec = TensorSpec(case.width, case.height)
    got = pack(packer, renderer, case, spec, planes)
    assert got.shape == (2, case.height, case.width, 3) and got.dtype == np.uint8
    for seed in range(2):
        # Against the reference's code values: lavapipe filters 8-bit chroma to 8 bits, which moves R or B
        # of a 4:2:0 / 4:2:2 frame by up to about 1.5 codes (the renderer's docstring says so).
        error = np.abs(got[seed].astype(np.float64) - np.round(reference_rgb(case, seed)))
        mean, worst = float(error.mean()), float(error.max())
        print(f"{case.name} frame {seed}: mean {mean:.3f} max {worst:.3f}")
        assert mean <= MEAN_LIMIT, f"{case.name}: mean abs error {mean:.3f} > {MEAN_LIMIT}"
        assert worst <= MAX_LIMIT, f"{case.name}: max abs error {worst:.3f} > {MAX_LIMIT}"

    # Floats, layouts and normalisation: exact transforms of the uint8 tensor (not "close").
    codes = got.astype(np.float64)
    f32 = pack(packer, renderer, case, dataclasses.replace(spec, dtype=TensorDType.FLOAT32), planes)
    assert f32.dtype == np.float32 and np.array_equal(f32, (codes / 255.0).astype(np.float32))
    assert np.abs(f32.astype(np.float64) * 255.0 - codes).max() < 1e-4, "float32 is the uint8 path, rounded"
    f16 = pack(packer, renderer, case, dataclasses.replace(spec, dtype=TensorDType.FLOAT16), planes)
    assert f16.dtype == np.float16 and np.array_equal(f16, (codes / 255.0).astype(np.float16))
    chw = pack(packer, renderer, case, dataclasses.replace(spec, layout=TensorLayout.CHW), planes)
    assert chw.shape == (2, 3, case.height, case.width)
    assert np.array_equal(chw, np.transpose(got, (0, 3, 1, 2)))
    normalised = dataclasses.replace(
        spec, layout=TensorLayout.CHW, dtype=TensorDType.FLOAT32, mean=IMAGENET_MEAN, std=IMAGENET_STD
    )
    norm = pack(packer, renderer, case, normalised, planes)
    mean_c, std_c = np.array(IMAGENET_MEAN)[None, :, None, None], np.array(IMAGENET_STD)[None, :, None, None]
    want = ((np.transpose(codes, (0, 3, 1, 2)) / 255.0 - mean_c) / std_c).astype(np.float32)
    assert np.array_equal(norm, want)
    half_norm = pack(
        packer, renderer, case, dataclasses.replace(normalised, dtype=TensorDType.FLOAT16), planes
    )
    assert np.array_equal(
        half_norm, ((np.transpose(codes, (0, 3, 1, 2)) / 255.0 - mean_c) / std_c).astype(np.float16)
    )


@pytest.mark.vulkan
def test_batches_stack_and_resize(device: Any, renderer: FrameRenderer, packer: RgbTensorPass) -> None:
    """A batch is its frames' tensors stacked (odd sizes: frames do not start on a word); a resized and
    cropped tensor is the renderer's own picture of that crop and size."""
    case = CASES[2]
    planes = [plane_textures(device, case, seed) for seed in range(3)]
    for dtype in TensorDType:
        for layout in TensorLayout:
            spec = TensorSpec(case.width, case.height, layout, dtype)
            batch = pack(packer, renderer, case, spec, planes)
            alone = [pack(packer, renderer, case, spec, [p])[0] for p in planes]
            assert np.array_equal(batch, np.stack(alone)), (dtype, layout)
    crop = (7, 5, 40, 26)
    spec = TensorSpec(17, 11)
    small = pack(packer, renderer, case, spec, planes, crop=crop)
    import wgpu

    target = device.create_texture(
        size=(17, 11, 1),
        format="rgba8unorm",
        usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
    )
    for index in range(3):
        renderer.render(
            planes[index], case.pixel_format, case.colour, case.width, case.height, target, crop=crop
        )
        assert np.array_equal(small[index], read_texture_rgba(device, target)[:, :, :3])


@pytest.mark.vulkan
def test_batches_larger_than_one_binding_come_in_chunks(
    device: Any, renderer: FrameRenderer, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES[3]
    planes = [plane_textures(device, case, seed) for seed in range(4)]
    spec = TensorSpec(case.width, case.height, TensorLayout.CHW, TensorDType.FLOAT16)
    whole = pack(RgbTensorPass(device), renderer, case, spec, planes)
    chunked_pass = RgbTensorPass(device)
    limit = max_frame_words(spec) * 4 + 256  # one frame a chunk, and a little
    monkeypatch.setattr(chunked_pass, "storage_limit_bytes", lambda: limit)
    assert np.array_equal(pack(chunked_pass, renderer, case, spec, planes), whole)
    as_uint8 = max_frame_words(TensorSpec(case.width, case.height, TensorLayout.CHW, TensorDType.UINT8)) * 4
    monkeypatch.setattr(chunked_pass, "storage_limit_bytes", lambda: as_uint8)  # a uint8 frame fits
    with pytest.raises(UnsupportedError, match="smaller size, or uint8"):
        pack(chunked_pass, renderer, case, spec, planes)
    monkeypatch.setattr(chunked_pass, "storage_limit_bytes", lambda: 1024)  # no frame fits: no uint8 said
    with pytest.raises(UnsupportedError, match=r"smaller size$"):
        pack(chunked_pass, renderer, case, spec, planes)


# ---------------------------------------------------------------------------------------------------
# the front door, with frames of a VideoSource


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("av")
    from tests.media import make_clip

    return make_clip(tmp_path_factory.mktemp("tensors") / "clip.mp4", width=64, height=48, frames=6).path


def test_to_tensor_refuses_bad_arguments_naming_the_allowed_values(clip: str) -> None:
    import alpha2
    from alpha2.api.tensors import to_tensor

    with alpha2.open(clip, hwaccel="none") as source:
        frame = source.next_frame()
        assert frame is not None
        with frame:
            cases: list[tuple[dict[str, Any], str]] = [
                ({"layout": "NCHW"}, "'HWC', 'CHW'"),
                ({"dtype": "int8"}, "'uint8', 'float16', 'float32'"),
                ({"device": "gpu"}, "'auto', 'cuda', 'cpu'"),
                ({"require": "cuda"}, "None, 'gpu'"),
                ({"size": (0, 10)}, "positive int"),
                ({"size": (10, 10, 3)}, r"\(width, height\)"),
                ({"crop": (0, 0, 10)}, r"\(x, y, width, height\)"),
                ({"crop": (-1, 0, 10, 10)}, ">= 0"),
                ({"crop": (40, 0, 30, 10)}, "at most 64"),
                ({"mean": (0.5, 0.5)}, "three numbers"),
                ({"mean": 0.5}, "float16 or float32"),
                ({"dtype": "float32", "std": 0.0}, "zero"),
                ({"device": "cpu", "require": "gpu"}, "pick one"),
            ]
            for kwargs, message in cases:
                with pytest.raises(InvalidInputError, match=message):
                    to_tensor(frame, **kwargs)
            with pytest.raises(InvalidInputError, match="Frame"):
                to_tensor([frame, "frame"])
            with pytest.raises(InvalidInputError, match="at least one frame"):
                to_tensor([])
            with pytest.raises(InvalidInputError, match="Frame or a sequence"):
                to_tensor(np.zeros((4, 4, 3), np.uint8))


@pytest.mark.vulkan
def test_to_tensor_on_the_cpu_path(clip: str) -> None:
    """On wgpu-native (lavapipe) the tensor is read back: numpy, the path and the reason reported; a
    required GPU route is an error that says why; uint8 HWC is to_ndarray's picture."""
    import alpha2
    from alpha2.api.tensors import RgbTensor, to_tensor

    with alpha2.open(clip, hwaccel="none") as source:
        frames = [source.next_frame() for _ in range(3)]
        try:
            tensor = to_tensor(frames)
            assert isinstance(tensor, RgbTensor)
            assert tensor.path is ExecutionPath.CPU_DOWNLOAD and not tensor.on_cuda
            assert tensor.report.frame_paths == (ExecutionPath.CPU_UPLOAD,) * 3
            assert tensor.report.steps[0] == (ExecutionPath.CPU_UPLOAD, ExecutionPath.CPU_DOWNLOAD)
            assert "wgpu" in tensor.report.reason and tensor.report.bytes_crossed_cpu >= 3 * 64 * 48 * 3
            assert tensor.shape == (3, 48, 64, 3) and tensor.dtype == np.uint8 and tensor.device == "cpu"
            array = np.asarray(tensor)
            for index, frame in enumerate(frames):
                assert frame is not None and np.array_equal(array[index], frame.to_ndarray())
            assert np.array_equal(np.from_dlpack(tensor), array)  # type: ignore[arg-type]
            assert tensor.__dlpack_device__() == (1, 0)

            one = to_tensor(frames[1], layout="CHW", dtype="float32", mean=0.5, std=(0.25, 0.5, 1.0))
            assert one.shape == (3, 48, 64)
            want = (np.transpose(array[1], (2, 0, 1)) / 255.0 - 0.5) / np.array([0.25, 0.5, 1.0])[
                :, None, None
            ]
            assert np.array_equal(one.numpy(), want.astype(np.float32))

            cropped = to_tensor(frames, crop=(8, 4, 32, 24), size=(16, 12), dtype="float16")
            assert cropped.shape == (3, 12, 16, 3) and cropped.dtype == np.float16

            with pytest.raises(UnsupportedError, match=r"cannot go to CUDA on the GPU: .*wgpu"):
                to_tensor(frames, require="gpu")
            with pytest.raises(UnsupportedError, match="device='cpu'"):
                to_tensor(frames, device="cuda")
            assert to_tensor(frames[0], device="cpu").report.reason.endswith("asked for a numpy array")
        finally:
            for frame in frames:
                if frame is not None:
                    frame.release()
        with pytest.raises(ClosedError):
            to_tensor(frames[0])


@pytest.mark.vulkan
def test_batches_of_any_length_hold_a_bounded_number_of_imports(tmp_path: Path) -> None:
    """A batch longer than the frames a source lets hold textures (32) makes one tensor: its frames are
    imported as the pass renders them and given back once their submission is made, at most
    LENT_IMPORTS_AT_ONCE at a time; every frame's picture equals its own to_ndarray(), and the frames'
    planes stay readable afterwards."""
    import alpha2
    from alpha2.api.source import IMPORTED_FRAMES_HELD, LENT_IMPORTS_AT_ONCE
    from alpha2.api.tensors import to_tensor
    from tests.media import make_clip

    path = make_clip(tmp_path / "long.mp4", width=32, height=24, frames=45).path
    with alpha2.open(path, hwaccel="none") as source:
        frames = source.frames_at_index(list(range(40)))
        try:
            assert len(frames) == 40 > IMPORTED_FRAMES_HELD
            lumas = [frame.plane(0).to_ndarray().copy() for frame in frames]
            tensor = to_tensor(frames)
            stats = source.importer.stats()
            assert stats.in_flight == 0 and stats.acquired == 40
            assert stats.peak_in_flight <= LENT_IMPORTS_AT_ONCE
            array = np.asarray(tensor)
            assert array.shape == (40, 24, 32, 3)
            assert tensor.report.frame_paths == (ExecutionPath.CPU_UPLOAD,) * 40
            pictures = [frame.to_ndarray() for frame in frames]  # 40 held frames, one at a time
            for index, frame in enumerate(frames):
                assert np.array_equal(array[index], pictures[index])
                assert np.array_equal(frame.plane(0).to_ndarray(), lumas[index])
            assert source.importer.stats().in_flight == 0
        finally:
            for frame in frames:
                frame.release()


def test_rendered_frames_are_bounded_and_refused_at_once(tmp_path: Path) -> None:
    """render() keeps a frame's textures until it is released: the 33rd held rendered frame of a source
    is refused at once with what to do (not after the GPU wait's timeout), conversions still work beside
    32 rendered frames, and releasing one lets the next render."""
    import time

    import alpha2
    from alpha2.api.source import IMPORTED_FRAMES_HELD
    from alpha2.api.tensors import to_tensor
    from alpha2.gpu.errors import OutOfMemoryError
    from tests.media import make_clip

    path = make_clip(tmp_path / "held.mp4", width=32, height=24, frames=40).path
    with alpha2.open(path, hwaccel="none") as source:
        frames = source.frames_at_index(list(range(IMPORTED_FRAMES_HELD + 2)))
        try:
            for frame in frames[:IMPORTED_FRAMES_HELD]:
                frame.render()
            began = time.monotonic()
            with pytest.raises(OutOfMemoryError, match="release the frames you are done with"):
                frames[IMPORTED_FRAMES_HELD].render()
            assert time.monotonic() - began < 1.0
            # Conversions import beside the rendered frames; frames that hold textures use theirs.
            assert to_tensor(frames[IMPORTED_FRAMES_HELD:]).shape == (2, 24, 32, 3)
            assert to_tensor(frames[:4]).shape == (4, 24, 32, 3)
            frames[0].release()
            frames[IMPORTED_FRAMES_HELD].render()
            assert frames[IMPORTED_FRAMES_HELD + 1].to_ndarray().shape == (24, 32, 3)
        finally:
            for frame in frames:
                frame.release()
        assert source.importer.stats().in_flight == 0


def test_sources_that_made_tensors_let_their_device_go(tmp_path: Path) -> None:
    """A source's own Device, with its threads, goes once the source is closed and dropped, after it
    made tensors too (the tensor routes kept for a Device had kept every Device alive: two threads and
    about 9 MB a source)."""
    import gc
    import threading
    import weakref

    import alpha2
    from tests.media import make_clip

    path = make_clip(tmp_path / "c.mp4", width=32, height=24, frames=3).path
    devices = []
    for _ in range(3):
        with alpha2.open(path, hwaccel="none") as source:
            frames = source.frames_at([0.0])
            assert alpha2.to_tensor(frames, size=(8, 8)).shape == (1, 8, 8, 3)
            for frame in frames:
                frame.release()
            devices.append(weakref.ref(source.device))
        del source, frames, frame
        gc.collect()
    threads = threading.active_count()
    gc.collect()
    assert [ref() for ref in devices] == [None, None, None]
    assert threading.active_count() <= threads


def test_a_lent_picture_is_released_after_the_frame_and_its_last_import() -> None:
    """The frame's decoded picture goes once the frame is released and every import has given it
    back, in either order (a GPU copy may read it after its lease went)."""
    from alpha2.api.source import _Loans

    class Picture:
        released = 0

        def release(self) -> None:
            self.released += 1

    picture = Picture()
    loans = _Loans(picture)  # type: ignore[arg-type]
    first, second = loans.lend(), loans.lend()
    first()
    first()  # once only
    loans.release()
    assert picture.released == 0
    second()
    assert picture.released == 1

    picture = Picture()
    loans = _Loans(picture)  # type: ignore[arg-type]
    loans.lend()()
    assert picture.released == 0
    loans.release()
    assert picture.released == 1


def test_to_tensor_refuses_mixed_sources_and_sizes(clip: str, tmp_path: Path) -> None:
    import alpha2
    from alpha2.api.tensors import to_tensor
    from tests.media import make_clip

    other = make_clip(tmp_path / "other.mp4", width=32, height=24, frames=2).path
    with (
        alpha2.open(clip, hwaccel="none") as first,
        alpha2.open(other, hwaccel="none", device=first.device) as second,
    ):
        a, b = first.next_frame(), second.next_frame()
        try:
            with pytest.raises(InvalidInputError, match="different sizes"):
                to_tensor([a, b])
            with pytest.raises(InvalidInputError, match="one VideoSource"):
                to_tensor([a, b], size=(16, 16))
        finally:
            for frame in (a, b):
                if frame is not None:
                    frame.release()


@pytest.mark.vulkan
def test_caches_stay_bounded(device: Any, renderer: FrameRenderer) -> None:
    """Many sizes, dtypes and normalisations on one pass: its targets, tables and bind groups stay bounded."""
    case = CASES[0]
    planes = [plane_textures(device, case)]
    packer = RgbTensorPass(device)
    for step in range(24):
        spec = TensorSpec(
            8 + step,
            6 + step % 5,
            TensorLayout.CHW if step % 2 else TensorLayout.HWC,
            TensorDType.FLOAT32,
            mean=(0.1 * (step % 7), 0.5, 0.5),
        )
        assert pack(packer, renderer, case, spec, planes).shape == spec.shape(1)
    assert len(packer._targets) <= 4 and len(packer._tables) <= 16 and len(packer._bind_groups) <= 16
    assert len(packer._pipelines) == 2, "one pipeline per (output, layout, dtype)"
