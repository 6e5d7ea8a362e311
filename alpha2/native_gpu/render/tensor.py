"""RGB tensors from rendered frames: a compute pass packs the renderer's RGBA output into tensor bytes.

What machine-learning code wants from a frame is an RGB tensor: resized, cropped, maybe normalised,
uint8 or float, HWC or CHW, N frames stacked. The :class:`~alpha2.native_gpu.render.renderer.FrameRenderer`
makes the picture (colour-exact, HDR tone-mapped, scaled and cropped by its source rectangle) into an
rgba8unorm texture; :class:`RgbTensorPass` (``rgb_tensor.wgsl``) reads that texture and writes the
tensor's bytes as 32-bit words: into a storage buffer that is read back on the CPU
(:meth:`RgbTensorPass.to_numpy`), or into rgba8uint storage textures (a word a texel) that CUDA shares
(:meth:`RgbTensorPass.pack_into_textures`, driven by
:mod:`alpha2.native_gpu.interop.tensor_export`). uint8 words are four codes, float16 words two
halves and float32 words one float, so no storage-format feature is needed.

Floats are table look-ups of the 8-bit codes (:func:`element_table`, made on the CPU with numpy's
rounding), so a float tensor is exactly ``(uint8 / 255 - mean) / std`` of the uint8 tensor, in the
dtype, on every GPU; :func:`reference_tensor` is that transform in numpy.

Usage (the front door, :func:`alpha2.api.tensors.to_tensor`, does this for frames)::

    spec = TensorSpec(224, 224, TensorLayout.CHW, TensorDType.FLOAT32, mean=(0.485, 0.456, 0.406),
                      std=(0.229, 0.224, 0.225))
    packer = RgbTensorPass(device)
    def render(encoder, index, target):          # draw frame ``index`` into ``target``
        renderer.encode_render(encoder, leases[index], target=target, crop=(x, y, w, h))
    batch = packer.to_numpy(spec, len(leases), render)     # (N, 3, 224, 224) float32
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.webgpu import gpu_module_of, webgpu_device_of
from alpha2.native_gpu.render.renderer import load_wgsl

__all__ = [
    "STORAGE_TEXTURE_FORMAT",
    "EncodeRender",
    "RgbTensorPass",
    "TensorDType",
    "TensorLayout",
    "TensorSpec",
    "WordSpan",
    "batch_words",
    "element_table",
    "frame_words",
    "max_frame_words",
    "reference_tensor",
]

_WGSL_NAME = "rgb_tensor.wgsl"
_WORKGROUP = 64
_MAX_GROUPS_X = 65535
_UNIFORM_STRIDE = 256
"""Bytes between two frames' parameter blocks (WebGPU's largest minUniformBufferOffsetAlignment)."""
_PARAMS_BYTES = 32
_TABLE_WORDS = 3 * 256
_RENDER_FORMAT = "rgba8unorm"
_CACHE = 16

_STORE_TO_BUFFER = """
@group(0) @binding(4) var<storage, read_write> out_words: array<u32>;
fn store_word(index: u32, word: u32) {
    out_words[index] = word;
}
"""
_STORE_TO_TEXTURE = """
@group(0) @binding(4) var out_texture: texture_storage_2d<rgba8uint, write>;
fn store_word(index: u32, word: u32) {
    let bytes = vec4<u32>(word & 0xffu, (word >> 8u) & 0xffu, (word >> 16u) & 0xffu, word >> 24u);
    textureStore(out_texture, vec2<u32>(index % params.row_words, index / params.row_words), bytes);
}
"""
STORAGE_TEXTURE_FORMAT = "rgba8uint"
"""The format of the storage textures :meth:`RgbTensorPass.pack_into_textures` writes: a word a texel,
its bytes in memory order (the same bytes as r32uint; CUDA maps it as an array of uchar4)."""


class TensorLayout(enum.Enum):
    """Where the channel axis goes."""

    HWC = "HWC"
    """(height, width, 3): numpy / PIL order."""
    CHW = "CHW"
    """(3, height, width): PyTorch's order."""


class TensorDType(enum.Enum):
    """The element type of the tensor."""

    UINT8 = "uint8"
    """The 8-bit codes, 0..255."""
    FLOAT16 = "float16"
    """``(code / 255 - mean) / std`` as IEEE half floats."""
    FLOAT32 = "float32"
    """``(code / 255 - mean) / std`` as IEEE single floats."""

    @property
    def numpy(self) -> np.dtype[Any]:
        """The numpy dtype."""
        return np.dtype(self.value)

    @property
    def item_bytes(self) -> int:
        """Bytes of one element."""
        return self.numpy.itemsize

    @property
    def per_word(self) -> int:
        """Elements in one 32-bit word of the packed tensor."""
        return 4 // self.item_bytes


_DTYPE_CODES = {TensorDType.UINT8: 0, TensorDType.FLOAT16: 1, TensorDType.FLOAT32: 2}
_LAYOUT_CODES = {TensorLayout.HWC: 0, TensorLayout.CHW: 1}


def _triple(name: str, value: Sequence[float] | None) -> tuple[float, float, float] | None:
    if value is None:
        return None
    try:
        values = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be three numbers (R, G, B), got {value!r}") from None
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise InvalidInputError(f"{name} must be three finite numbers (R, G, B), got {value!r}")
    return (values[0], values[1], values[2])


@dataclass(frozen=True)
class TensorSpec:
    """What one frame's tensor is: its size, layout, dtype and normalisation."""

    width: int
    """Columns (W): the rendered picture's width."""
    height: int
    """Rows (H)."""
    layout: TensorLayout = TensorLayout.HWC
    """HWC or CHW."""
    dtype: TensorDType = TensorDType.UINT8
    """uint8, float16 or float32."""
    mean: tuple[float, float, float] | None = None
    """Subtracted from ``code / 255`` per channel (floats only); None: 0."""
    std: tuple[float, float, float] | None = None
    """Divides after the mean per channel (floats only); None: 1."""

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"TensorSpec.{name} must be a positive int, got {value!r}")
        if not isinstance(self.layout, TensorLayout):
            raise InvalidInputError(
                f"layout must be one of {', '.join(m.value for m in TensorLayout)}, got {self.layout!r}"
            )
        if not isinstance(self.dtype, TensorDType):
            raise InvalidInputError(
                f"dtype must be one of {', '.join(m.value for m in TensorDType)}, got {self.dtype!r}"
            )
        mean, std = _triple("mean", self.mean), _triple("std", self.std)
        if (mean is not None or std is not None) and self.dtype is TensorDType.UINT8:
            raise InvalidInputError(
                "mean / std normalise floats: ask for dtype float16 or float32 with them (uint8 holds "
                "the codes 0..255)"
            )
        if std is not None and any(v == 0.0 for v in std):
            raise InvalidInputError(f"std must not hold a zero, got {std}")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)

    @property
    def elements(self) -> int:
        """Elements of one frame's tensor: ``3 * height * width``."""
        return 3 * self.width * self.height

    @property
    def frame_bytes(self) -> int:
        """Bytes of one frame's tensor."""
        return self.elements * self.dtype.item_bytes

    def shape(self, count: int | None = None) -> tuple[int, ...]:
        """The array's shape: one frame (``count`` None) or ``count`` frames stacked first."""
        one = (
            (self.height, self.width, 3) if self.layout is TensorLayout.HWC else (3, self.height, self.width)
        )
        return one if count is None else (count, *one)

    @property
    def table_key(self) -> tuple[Any, ...]:
        """What :func:`element_table` depends on."""
        return (self.dtype, self.mean, self.std)


@dataclass(frozen=True)
class WordSpan:
    """The 32-bit words of the packed batch that frame ``index``'s dispatch writes."""

    first_word: int
    """Index of its first word in the batch."""
    words: int
    """How many: those whose first element belongs to this frame."""
    lead: int
    """The frame's local element the first word starts with (0 when the frame starts on a word)."""


def frame_words(spec: TensorSpec, index: int) -> WordSpan:
    """The words frame ``index`` of a batch writes (its last may hold the next frame's first elements)."""
    per_word = spec.dtype.per_word
    start = index * spec.elements
    first = -(-start // per_word)
    lead = first * per_word - start
    return WordSpan(first, -(-(spec.elements - lead) // per_word), lead)


def batch_words(spec: TensorSpec, count: int) -> int:
    """Words of a packed batch of ``count`` frames (the last may end in padding)."""
    return -(-count * spec.elements // spec.dtype.per_word)


def max_frame_words(spec: TensorSpec) -> int:
    """The most words one frame's dispatch writes."""
    return -(-spec.elements // spec.dtype.per_word)


def element_table(spec: TensorSpec) -> np.ndarray:
    """The 3 x 256 words float tensors look codes up in: ``(code / 255 - mean[c]) / std[c]`` rounded
    to the dtype by numpy (float16 in the low half of its word); zeros for uint8."""
    table = np.zeros(_TABLE_WORDS, dtype=np.uint32)
    if spec.dtype is TensorDType.UINT8:
        return table
    mean = np.array(spec.mean or (0.0, 0.0, 0.0), dtype=np.float64)[:, None]
    std = np.array(spec.std or (1.0, 1.0, 1.0), dtype=np.float64)[:, None]
    values = (np.arange(256, dtype=np.float64)[None, :] / 255.0 - mean) / std
    if spec.dtype is TensorDType.FLOAT32:
        table[:] = values.astype(np.float32).view(np.uint32).reshape(-1)
    else:
        table[:] = values.astype(np.float16).view(np.uint16).reshape(-1)
    return table


def reference_tensor(rgb: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """What the pass makes of uint8 RGB pictures (``(H, W, 3)`` or ``(N, H, W, 3)``), in numpy.

    Raises:
        InvalidInputError: the pictures are not uint8 of the spec's size.
    """
    array = np.asarray(rgb)
    if (
        array.dtype != np.uint8
        or array.shape[-3:] != (spec.height, spec.width, 3)
        or array.ndim not in (3, 4)
    ):
        raise InvalidInputError(
            f"reference_tensor takes uint8 (H, W, 3) or (N, H, W, 3) pictures of {spec.width}x{spec.height}, "
            f"got {array.dtype} {array.shape}"
        )
    if spec.dtype is not TensorDType.UINT8:
        table = element_table(spec).reshape(3, 256)
        bits = table[np.arange(3), array]  # (..., H, W, 3): each channel looks its code up
        if spec.dtype is TensorDType.FLOAT16:
            array = bits.astype(np.uint16).view(np.float16)
        else:
            array = bits.view(np.float32)
    if spec.layout is TensorLayout.CHW:
        array = np.moveaxis(array, -1, -3)
    return np.ascontiguousarray(array)


EncodeRender = Callable[[Any, int, Any], None]
"""Encodes the render of frame ``index`` into ``target`` (an rgba8unorm texture of the spec's size) on
``encoder``: ``encode_render(encoder, index, target)``."""


@dataclass
class _BufferChunk:
    first: int
    """First frame of the chunk."""
    end: int
    """One past its last frame."""
    first_word: int
    """The chunk's first word in the batch."""
    words: int
    """Words of the chunk."""


class _BufferSink:
    """The CPU read-back: the batch in chunks of frames that fit one storage binding, each copied to a
    mapped buffer and into the result."""

    to_texture = False

    def __init__(self, owner: RgbTensorPass, spec: TensorSpec, count: int) -> None:
        limit = owner.storage_limit_bytes()
        frame_limit = max_frame_words(spec) * 4
        if frame_limit > limit:
            # uint8 is said as a way out only where a uint8 frame of this size fits.
            as_uint8 = max_frame_words(replace(spec, dtype=TensorDType.UINT8)) * 4
            raise UnsupportedError(
                f"one {spec.width}x{spec.height} {spec.dtype.value} frame is {frame_limit} bytes, more than "
                f"this device binds at once ({limit}); ask for a smaller size"
                + (", or uint8" if as_uint8 <= limit else "")
            )
        self.chunks: list[_BufferChunk] = []
        start = 0
        while start < count:
            end = start + 1
            first_word = frame_words(spec, start).first_word
            # frame_words(spec, count).first_word is the batch's word count: the last chunk ends there.
            while end < count and (frame_words(spec, end + 1).first_word - first_word) * 4 <= limit:
                end += 1
            self.chunks.append(
                _BufferChunk(start, end, first_word, frame_words(spec, end).first_word - first_word)
            )
            start = end
        self._chunk_of = [c for c in self.chunks for _ in range(c.first, c.end)]
        self.result = bytearray(batch_words(spec, count) * 4)
        size = max(c.words for c in self.chunks) * 4
        self.buffer, self.readback = owner.output_buffers(size)
        self._owner = owner

    def out_base(self, spec: TensorSpec, index: int) -> int:
        return frame_words(spec, index).first_word - self._chunk_of[index].first_word

    def row_words(self) -> int:
        return 0

    def target(self, index: int) -> Any:
        return self.buffer

    def flush_after(self, index: int, words: int) -> bool:
        return index == self._chunk_of[index].end - 1

    def encode_flush(self, encoder: Any, index: int) -> None:
        chunk = self._chunk_of[index]
        if chunk.words:
            encoder.copy_buffer_to_buffer(self.buffer, 0, self.readback, 0, chunk.words * 4)

    def submitted(self, index: int) -> None:
        chunk = self._chunk_of[index]
        if not chunk.words:
            return
        gpu = self._owner.gpu
        self.readback.map_sync(gpu.MapMode.READ, 0, chunk.words * 4)
        try:
            data = self.readback.read_mapped(0, chunk.words * 4)
            self.result[chunk.first_word * 4 : (chunk.first_word + chunk.words) * 4] = data
        finally:
            self.readback.unmap()

    def abort(self) -> None:
        pass


class TextureFrames(Protocol):
    """The storage textures a batch's frames are packed into (the CUDA export's): frames go in chunks,
    a chunk's frames into one texture, one submission a chunk."""

    row_words: int
    """Words a row of each texture holds."""

    def frame_base(self, index: int) -> int:
        """The word of frame ``index``'s texture where its words start."""
        ...

    def ends_chunk(self, index: int) -> bool:
        """Whether frame ``index`` is the last of its texture's frames: the pass submits after it."""
        ...

    def begin_frame(self, index: int) -> Any:
        """The rgba8uint storage texture (or view) frame ``index`` is packed into; called before its pack
        is encoded."""
        ...

    def end_frame(self, index: int) -> None:
        """Called once the command buffer that packed frame ``index`` was submitted, where
        :meth:`ends_chunk` said so."""
        ...

    def abort(self) -> None:
        """The batch failed half-way: end what began."""
        ...


class _TextureSink:
    to_texture = True

    def __init__(self, frames: TextureFrames) -> None:
        self._frames = frames

    def out_base(self, spec: TensorSpec, index: int) -> int:
        return self._frames.frame_base(index)

    def row_words(self) -> int:
        return self._frames.row_words

    def target(self, index: int) -> Any:
        return self._frames.begin_frame(index)

    def flush_after(self, index: int, words: int) -> bool:
        return self._frames.ends_chunk(index)

    def encode_flush(self, encoder: Any, index: int) -> None:
        pass

    def submitted(self, index: int) -> None:
        self._frames.end_frame(index)

    def abort(self) -> None:
        self._frames.abort()


class RgbTensorPass:
    """Packs rendered frames into RGB tensors on one WebGPU device (``wgpu`` or ``wgpudawn``).

    Caches: the shader modules and pipelines per (output kind, layout, dtype); a look-up table per
    (dtype, mean, std); two render targets per size (frame ``n`` is packed while frame ``n + 1`` is
    drawn into the other); the read-back buffers of the latest size. Not thread-safe: one per thread,
    or a lock around it.
    """

    def __init__(self, device: Any, *, gpu_module: Any = None) -> None:
        self.device = webgpu_device_of(device)
        self.gpu = gpu_module if gpu_module is not None else gpu_module_of(self.device)
        self._source = load_wgsl(_WGSL_NAME)
        self._layouts: dict[bool, tuple[Any, Any]] = {}
        self._modules: dict[bool, Any] = {}
        self._pipelines: dict[tuple[bool, TensorLayout, TensorDType], Any] = {}
        self._tables: dict[tuple[Any, ...], Any] = {}
        self._targets: dict[tuple[int, int], tuple[Any, Any]] = {}
        self._bind_groups: dict[tuple[int, ...], tuple[Any, tuple[Any, ...]]] = {}
        self._uniform: Any = None
        self._outputs: tuple[int, Any, Any] | None = None

    # -- limits and resources -------------------------------------------------------------------------

    def _limit(self, name: str, default: int) -> int:
        limits = getattr(self.device, "limits", None) or {}
        try:
            return int(limits.get(name, default))
        except (TypeError, ValueError, AttributeError):
            return default

    def storage_limit_bytes(self) -> int:
        """The most bytes one storage binding (and buffer) may hold on this device."""
        limit = min(
            self._limit("max-storage-buffer-binding-size", 128 << 20),
            self._limit("max-buffer-size", 256 << 20),
        )
        return limit - limit % _UNIFORM_STRIDE

    def frame_targets(self, width: int, height: int) -> tuple[Any, Any]:
        """The two rgba8unorm render targets of that size (RENDER_ATTACHMENT | TEXTURE_BINDING | COPY_SRC |
        COPY_DST: a picture may also be copied in)."""
        key = (width, height)
        pair = self._targets.get(key)
        if pair is None:
            usage = self.gpu.TextureUsage
            pair = tuple(
                self.device.create_texture(
                    label=f"alpha2 tensor frame {width}x{height} {i}",
                    size=(width, height, 1),
                    format=_RENDER_FORMAT,
                    usage=usage.RENDER_ATTACHMENT | usage.TEXTURE_BINDING | usage.COPY_SRC | usage.COPY_DST,
                )
                for i in range(2)
            )
            while len(self._targets) >= 4:
                self._targets.pop(next(iter(self._targets)))
                self._bind_groups.clear()
            self._targets[key] = pair
        assert pair is not None
        return pair

    def output_buffers(self, size_bytes: int) -> tuple[Any, Any]:
        """A storage buffer of at least ``size_bytes`` and its mapped read-back twin (reused)."""
        if self._outputs is not None and self._outputs[0] >= size_bytes:
            return self._outputs[1], self._outputs[2]
        usage = self.gpu.BufferUsage
        storage = self.device.create_buffer(
            label="alpha2 tensor words", size=size_bytes, usage=usage.STORAGE | usage.COPY_SRC
        )
        readback = self.device.create_buffer(
            label="alpha2 tensor read-back", size=size_bytes, usage=usage.MAP_READ | usage.COPY_DST
        )
        if self._outputs is not None:
            self._bind_groups.clear()
            for old in self._outputs[1:]:
                old.destroy()
        self._outputs = (size_bytes, storage, readback)
        return storage, readback

    def _table(self, spec: TensorSpec) -> Any:
        key = spec.table_key
        buffer = self._tables.get(key)
        if buffer is None:
            if len(self._tables) >= _CACHE:
                self._tables.clear()
                self._bind_groups.clear()
            buffer = self.device.create_buffer_with_data(
                label="alpha2 tensor table",
                data=element_table(spec).tobytes(),
                usage=self.gpu.BufferUsage.STORAGE,
            )
            self._tables[key] = buffer
        return buffer

    def _uniform_buffer(self, size_bytes: int) -> Any:
        if self._uniform is None or self._uniform.size < size_bytes:
            self._bind_groups.clear()
            usage = self.gpu.BufferUsage
            self._uniform = self.device.create_buffer(
                label="alpha2 tensor params",
                size=max(size_bytes, 8 * _UNIFORM_STRIDE),
                usage=usage.UNIFORM | usage.COPY_DST,
            )
        return self._uniform

    def _layout(self, to_texture: bool) -> tuple[Any, Any]:
        cached = self._layouts.get(to_texture)
        if cached is not None:
            return cached
        stage = self.gpu.ShaderStage.COMPUTE
        frame = {"sample_type": "float", "view_dimension": "2d"}
        output: dict[str, Any] = (
            {
                "storage_texture": {
                    "access": "write-only",
                    "format": STORAGE_TEXTURE_FORMAT,
                    "view_dimension": "2d",
                }
            }
            if to_texture
            else {"buffer": {"type": "storage"}}
        )
        entries = [
            {
                "binding": 0,
                "visibility": stage,
                "buffer": {"type": "uniform", "has_dynamic_offset": True, "min_binding_size": _PARAMS_BYTES},
            },
            {"binding": 1, "visibility": stage, "texture": frame},
            {"binding": 2, "visibility": stage, "texture": frame},
            {"binding": 3, "visibility": stage, "buffer": {"type": "read-only-storage"}},
            {"binding": 4, "visibility": stage, **output},
        ]
        label = f"alpha2 rgb tensor -> {'texture' if to_texture else 'buffer'}"
        bgl = self.device.create_bind_group_layout(label=label, entries=entries)
        layout = self.device.create_pipeline_layout(label=label, bind_group_layouts=[bgl])
        self._layouts[to_texture] = (bgl, layout)
        return bgl, layout

    def pipeline(self, to_texture: bool, layout: TensorLayout, dtype: TensorDType) -> Any:
        """The compute pipeline writing ``layout`` / ``dtype`` words to a buffer or a storage texture."""
        key = (to_texture, layout, dtype)
        cached = self._pipelines.get(key)
        if cached is not None:
            return cached
        module = self._modules.get(to_texture)
        if module is None:
            code = self._source + (_STORE_TO_TEXTURE if to_texture else _STORE_TO_BUFFER)
            module = self.device.create_shader_module(label="alpha2 rgb tensor", code=code)
            self._modules[to_texture] = module
        _, pipeline_layout = self._layout(to_texture)
        pipeline = self.device.create_compute_pipeline(
            label=f"alpha2 rgb tensor {layout.value} {dtype.value}",
            layout=pipeline_layout,
            compute={
                "module": module,
                "entry_point": "main",
                "constants": {"LAYOUT": _LAYOUT_CODES[layout], "DTYPE": _DTYPE_CODES[dtype]},
            },
        )
        self._pipelines[key] = pipeline
        return pipeline

    def _bind_group(self, to_texture: bool, frame: Any, following: Any, table: Any, output: Any) -> Any:
        uniform = self._uniform
        key = (*(id(o) for o in (uniform, frame, following, table, output)), int(to_texture))
        cached = self._bind_groups.get(key)
        if cached is not None:
            return cached[0]
        bgl, _ = self._layout(to_texture)
        out_resource = output if to_texture else {"buffer": output, "offset": 0, "size": output.size}
        if to_texture and hasattr(output, "create_view"):
            out_resource = output.create_view()
        bind_group = self.device.create_bind_group(
            label="alpha2 rgb tensor",
            layout=bgl,
            entries=[
                {"binding": 0, "resource": {"buffer": uniform, "offset": 0, "size": _PARAMS_BYTES}},
                {"binding": 1, "resource": frame.create_view()},
                {"binding": 2, "resource": following.create_view()},
                {"binding": 3, "resource": {"buffer": table, "offset": 0, "size": table.size}},
                {"binding": 4, "resource": out_resource},
            ],
        )
        if len(self._bind_groups) >= _CACHE:
            self._bind_groups.pop(next(iter(self._bind_groups)))
        # The objects stay referenced with their bind group: id()-based keys cannot be reused meanwhile.
        self._bind_groups[key] = (bind_group, (uniform, frame, following, table, output))
        return bind_group

    # -- the passes ------------------------------------------------------------------------------------

    def to_numpy(
        self,
        spec: TensorSpec,
        count: int,
        encode_render: EncodeRender,
        *,
        renders_at_once: int | None = None,
        submitted: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Render and pack ``count`` frames; the stacked ``(count, ...)`` array, read back (blocks).

        ``renders_at_once``: at most this many frames rendered into one submission (None: as the
        packing's chunks fall); ``submitted(n)`` is called once the renders of frames ``0 .. n-1`` are
        submitted (their plane textures may then be given back).

        Raises:
            InvalidInputError: ``count`` < 1.
            UnsupportedError: one frame's tensor is larger than one storage binding of the device.
        """
        _check_count(count)
        sink = _BufferSink(self, spec, count)
        self._run(spec, count, encode_render, sink, renders_at_once, submitted)
        flat = np.frombuffer(sink.result, dtype=np.uint8)[: count * spec.frame_bytes]
        return flat.view(spec.dtype.numpy).reshape(spec.shape(count))

    def pack_into_textures(
        self,
        spec: TensorSpec,
        count: int,
        encode_render: EncodeRender,
        frames: TextureFrames,
        *,
        renders_at_once: int | None = None,
        submitted: Callable[[int], None] | None = None,
    ) -> None:
        """Render and pack ``count`` frames, frame ``n``'s words (:func:`frame_words`) into the rgba8uint
        storage texture ``frames.begin_frame(n)`` gives, from word ``frames.frame_base(n)``, row after row
        of ``frames.row_words``; a submission after each frame that ``frames.ends_chunk(n)``, then
        ``frames.end_frame(n)``. On a failure ``frames.abort()`` runs. ``renders_at_once`` and
        ``submitted`` as :meth:`to_numpy` takes them.
        """
        _check_count(count)
        if frames.row_words < 1:
            raise InvalidInputError(f"row_words must be positive, got {frames.row_words}")
        self._run(spec, count, encode_render, _TextureSink(frames), renders_at_once, submitted)

    def _run(
        self,
        spec: TensorSpec,
        count: int,
        encode_render: EncodeRender,
        sink: Any,
        renders_at_once: int | None = None,
        submitted: Callable[[int], None] | None = None,
    ) -> None:
        to_texture = bool(sink.to_texture)
        pipeline = self.pipeline(to_texture, spec.layout, spec.dtype)
        table = self._table(spec)
        targets = self.frame_targets(spec.width, spec.height)
        uniform = self._uniform_buffer(count * _UNIFORM_STRIDE)
        blocks = bytearray(count * _UNIFORM_STRIDE)
        for index in range(count):
            span = frame_words(spec, index)
            np.frombuffer(blocks, dtype=np.uint32, count=8, offset=index * _UNIFORM_STRIDE)[:] = (
                spec.width,
                spec.height,
                span.lead,
                span.words,
                int(index + 1 < count),
                sink.out_base(spec, index),
                sink.row_words(),
                0,
            )
        self.device.queue.write_buffer(uniform, 0, bytes(blocks))
        if renders_at_once is not None and renders_at_once < 1:
            raise InvalidInputError(f"renders_at_once must be positive, got {renders_at_once}")
        encoder: Any = None
        rendered = 0  # frames whose render is encoded
        gone = 0  # frames whose render is submitted

        def submit() -> None:
            nonlocal encoder, gone
            self.device.queue.submit([encoder.finish()])
            encoder = None
            gone = rendered
            if submitted is not None:
                submitted(gone)

        try:
            for index in range(count):
                if encoder is None:
                    encoder = self.device.create_command_encoder(label="alpha2 rgb tensor")
                if index == 0:
                    encode_render(encoder, 0, targets[0])
                    rendered = 1
                if index + 1 < count:
                    encode_render(encoder, index + 1, targets[(index + 1) % 2])
                    rendered = index + 2
                words = frame_words(spec, index).words
                if words:  # a 1x1 uint8 frame can lie wholly in its predecessor's last word
                    output = sink.target(index)
                    bind_group = self._bind_group(
                        to_texture, targets[index % 2], targets[(index + 1) % 2], table, output
                    )
                    groups = -(-words // _WORKGROUP)
                    groups_x = min(groups, _MAX_GROUPS_X)
                    compute = encoder.begin_compute_pass(label="alpha2 rgb tensor")
                    compute.set_pipeline(pipeline)
                    compute.set_bind_group(0, bind_group, [index * _UNIFORM_STRIDE])
                    compute.dispatch_workgroups(groups_x, -(-groups // groups_x), 1)
                    compute.end()
                if sink.flush_after(index, words):
                    sink.encode_flush(encoder, index)
                    submit()
                    sink.submitted(index)
                elif renders_at_once is not None and rendered - gone >= renders_at_once:
                    submit()  # the pack of frame index + 1 reads its render target in the next one
            if encoder is not None:  # renders, no pack left to submit with them
                submit()
        except BaseException:
            sink.abort()
            raise


def _check_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidInputError(f"count must be a positive int of frames, got {count!r}")
