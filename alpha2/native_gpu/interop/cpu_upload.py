"""CPU upload: planes in host memory -> ``queue.write_texture`` -> pooled plane textures. Every device.

Works on any wgpu-py style device (wgpu-native and Dawn, lavapipe included). Each plane is uploaded
straight from the frame's buffer with ``bytes_per_row`` = the source stride: WebGPU's ``write_texture``
has no 256-byte row alignment (unlike buffer copies), so strides and row padding cost no intermediate
copy in Python. The only exception is ``rgb24``, which WebGPU cannot hold as 3-byte texels: it is
widened to RGBA in numpy first (reported in the lease's plane descriptors and path note).

8-bit planar Y'CbCr (yuv420p, yuv422p, yuv444p) is uploaded with its Cb and Cr planes interleaved
into one ``rg8unorm`` plane, numpy's one copy (0.13 ms a 720p frame): the imported frame is its
semi-planar twin (:attr:`~alpha2.gpu.formats.PixelFormat.interleaved_chroma_format`: nv12, nv16,
nv24), which the renderer samples once for chroma instead of twice, with the same pixels. On lavapipe,
where the fragment shader is most of a wall's CPU, that is the cheaper render (BENCHMARKS.md).

CUDA frames (NVDEC) on a device without the GPU-copy path are downloaded first, through the CUDA
driver (``_cuda.streams.download_planes``: ``cuMemcpy2DAsync`` device -> pinned host staging, ordered
after the decode stream, waited with the GPU wait timeout), and uploaded from the staging memory: the
lease reports ``steps = (CPU_DOWNLOAD, CPU_UPLOAD)`` and the reason.

Texture pool: plane texture sets are keyed by (decoder, generation, pixel format, plane sizes) and
reused, never created per frame. A set goes back to the pool when its lease is released; reusing it
at once is safe without any CPU wait because WebGPU orders a queue's ``write_texture`` after every
``submit`` made before it, so the next upload into the set cannot overtake the sampling work the
released lease's owner already submitted. (Release the lease only after that work is *submitted*.)
When the frames of a new generation of a decoder arrive, the idle sets of its older generations are
destroyed, and busy ones are destroyed as their leases come back. Given the importer's
``memory_budget``, every set's bytes count against it (backend WGPU) and its pressure events trim
idle sets (:meth:`~alpha2.native_gpu.interop.leases.SlotPool.trim_idle`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from alpha2.gpu.budget import MemoryBudget
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat, PlaneFormat, UploadConversion
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.handles import CpuPlane, CpuPlaneSet, CudaPtr2D
from alpha2.gpu.identity import BackendKind, ExecutionPath
from alpha2.gpu.surfaces import SurfaceIdentity
from alpha2.gpu.webgpu import WebGpuDevice, WebGpuDeviceInfo
from alpha2.native_gpu.interop.leases import (
    DEFAULT_SLOTS_PER_KEY,
    ExternalSyncPoint,
    ImportedFrame,
    ImportedPlaneDescriptor,
    ImportTicketStats,
    InteropPairing,
    NativeImageState,
    NativeSurfaceLease,
    PairingTicket,
    SlotPool,
)

__all__ = [
    "CpuUploadPairing",
    "PlaneGeometry",
    "TextureSet",
    "frame_geometry",
    "pool_key",
    "texture_set_bytes",
    "upload_format",
]


@dataclass(frozen=True)
class PlaneGeometry:
    """Size and texture format of one plane texture."""

    plane_format: PlaneFormat
    """The plane's texel format."""
    texture_format: str
    """The WebGPU format of its texture."""
    width: int
    """Width in texels."""
    height: int
    """Height in rows."""

    def __post_init__(self) -> None:
        # Hashed once: it is part of every ring and texture-set key, looked up per frame.
        object.__setattr__(
            self, "_hash", hash((self.plane_format, self.texture_format, self.width, self.height))
        )

    def __hash__(self) -> int:
        return int(self._hash)  # type: ignore[attr-defined]

    def __reduce__(self) -> tuple[Any, ...]:
        # Made anew where unpickled: a str's hash differs from one process to another.
        return (type(self), (self.plane_format, self.texture_format, self.width, self.height))

    @property
    def width_bytes(self) -> int:
        """Bytes of texel data in one source row."""
        return self.width * self.plane_format.bytes_per_texel

    def descriptor(self, plane_index: int, source_stride_bytes: int) -> ImportedPlaneDescriptor:
        """The imported frame's description of plane ``plane_index``, a texture of this geometry
        filled from rows ``source_stride_bytes`` apart."""
        return ImportedPlaneDescriptor(
            plane_index=plane_index,
            plane_format=self.plane_format,
            texture_format=self.texture_format,
            width=self.width,
            height=self.height,
            source_stride_bytes=source_stride_bytes,
        )


@functools.lru_cache(maxsize=256)
def frame_geometry(pixel_format: PixelFormat, width: int, height: int) -> tuple[PlaneGeometry, ...]:
    """The plane textures a ``width`` x ``height`` frame of ``pixel_format`` needs (chroma rounded up;
    the same tuple for the same arguments: asked for every frame)."""
    layout = pixel_format.plane_layout(width, height)
    return tuple(
        PlaneGeometry(plane.format, plane.format.wgpu_upload_format, plane.width, plane.height)
        for plane in layout.planes
    )


@functools.lru_cache(maxsize=256)
def upload_format(pixel_format: PixelFormat) -> PixelFormat:
    """The layout host planes of ``pixel_format`` are uploaded in: its interleaved-chroma twin where it
    has one (yuv420p -> nv12), else itself."""
    return pixel_format.interleaved_chroma_format or pixel_format


def picture_size(frame: DecodedFrame) -> tuple[int, int]:
    """The size in pixels the frame's planes hold (the surface identity's size: FFmpeg's frame size)."""
    return frame.identity.width, frame.identity.height


def check_16bit(
    info: WebGpuDeviceInfo, geometry: tuple[PlaneGeometry, ...], pixel_format: PixelFormat
) -> None:
    """Refuse 16-bit planes on a device without 16-bit normalized textures, naming the feature."""
    if info.has_16bit_norm:
        return
    if any(g.texture_format in ("r16unorm", "rg16unorm", "rgba16unorm") for g in geometry):
        raise UnsupportedError(
            f"{pixel_format.ffmpeg_name} needs r16unorm/rg16unorm plane textures; request the device with "
            "required_features=['texture-format16bit-norm'] (wgpu) or ['unorm16-texture-formats'] (Dawn)"
        )


# ---------------------------------------------------------------------------------------------------
# the pool


class TextureSet:
    """The plane textures (and views) of one frame, made once and reused.

    ``sizes`` is one ``(texture_format, width, height)`` per plane.
    """

    __slots__ = ("sizes", "textures", "views")

    def __init__(self, device: WebGpuDevice, sizes: tuple[tuple[str, int, int], ...], usage: int) -> None:
        self.sizes = sizes
        textures: list[Any] = []
        try:
            for index, (texture_format, width, height) in enumerate(sizes):
                textures.append(
                    device.create_texture(
                        label=f"alpha2 plane {index} {texture_format} {width}x{height}",
                        size=(width, height, 1),
                        format=texture_format,
                        usage=usage,
                    )
                )
            self.views = tuple(t.create_view(label="alpha2 plane view") for t in textures)
        except BaseException:
            for texture in reversed(textures):
                texture.destroy()
            raise
        self.textures = tuple(textures)

    def destroy(self) -> None:
        """Destroy the textures (the GPU frees them once submitted work using them is done)."""
        textures, self.textures, self.views = self.textures, (), ()
        for texture in textures:
            texture.destroy()


def _texel_bytes() -> dict[str, int]:
    """Bytes a texel of each upload texture format takes (rgb24 planes are uploaded as rgba8unorm)."""
    table: dict[str, int] = {}
    for plane_format in PlaneFormat:
        expands = plane_format.upload_conversion is UploadConversion.EXPAND_RGB_TO_RGBA
        size = 4 if expands else plane_format.bytes_per_texel
        table[plane_format.wgpu_upload_format] = max(table.get(plane_format.wgpu_upload_format, 0), size)
    return table


_TEXEL_BYTES = _texel_bytes()


def texture_set_bytes(key: tuple[Hashable, ...]) -> int:
    """Bytes the plane textures of a pool key's texture set occupy (what the memory budget counts)."""
    sizes: Any = key[3]
    return sum(_TEXEL_BYTES[texture_format] * width * height for texture_format, width, height in sizes)


def pool_key(
    identity: SurfaceIdentity, pixel_format: PixelFormat, geometry: tuple[PlaneGeometry, ...]
) -> tuple[Hashable, ...]:
    """The pool key: decoder, generation, format and plane sizes (a SlotPool key)."""
    sizes = tuple((g.texture_format, g.width, g.height) for g in geometry)
    return (identity.decoder_id, identity.generation, pixel_format, sizes)


# ---------------------------------------------------------------------------------------------------
# the pairing


def _expand_rgb(plane: CpuPlane, width: int) -> tuple[np.ndarray, int]:
    """rgb24 rows -> tightly packed rgba8 (alpha 255): the one upload that needs a conversion copy."""
    rows = np.frombuffer(plane.as_raw(), dtype=np.uint8)
    needed = plane.bytes_per_row * plane.height
    if rows.size < needed:
        rows = np.concatenate([rows, np.zeros(needed - rows.size, np.uint8)])
    rgb = (
        rows[:needed]
        .reshape(plane.height, plane.bytes_per_row)[:, : width * 3]
        .reshape(plane.height, width, 3)
    )
    out = np.empty((plane.height, width, 4), np.uint8)
    out[..., :3] = rgb
    out[..., 3] = 255
    return out, width * 4


def _interleave_chroma(cb: CpuPlane, cr: CpuPlane, g: PlaneGeometry) -> tuple[np.ndarray, int]:
    """Two 8-bit chroma planes -> one tightly packed two-channel (Cb, Cr) plane of ``g``'s size."""
    out = np.empty((g.height, g.width, 2), np.uint8)
    out[..., 0] = cb.to_ndarray()[: g.height, : g.width]
    out[..., 1] = cr.to_ndarray()[: g.height, : g.width]
    return out, g.width * 2


class CpuUploadPairing(InteropPairing):
    """Host planes (or downloaded CUDA planes) written into pooled plane textures."""

    path = ExecutionPath.CPU_UPLOAD
    name = "cpu_upload"

    def __init__(
        self,
        device: WebGpuDevice,
        info: WebGpuDeviceInfo,
        *,
        gpu_module: Any,
        sets_per_key: int = DEFAULT_SLOTS_PER_KEY,
        wait_timeout: Callable[[], float],
        memory_budget: MemoryBudget | None = None,
    ) -> None:
        self._device = device
        self._info = info
        self._queue = device.queue
        usage = gpu_module.TextureUsage
        self._usage = usage.TEXTURE_BINDING | usage.COPY_DST | usage.COPY_SRC
        # With a memory budget, every texture set counts against it and idle sets go under pressure.
        self._pool: SlotPool[TextureSet] = SlotPool(
            self._new_set,
            self._destroy_set,
            per_key=sets_per_key,
            what="plane texture sets",
            memory_budget=memory_budget,
            backend=BackendKind.WGPU,
            item_bytes=texture_set_bytes,
        )
        self._live_textures = 0
        self._wait_timeout = wait_timeout
        self._lock = threading.Lock()

    @classmethod
    def create(
        cls,
        device: WebGpuDevice,
        info: WebGpuDeviceInfo,
        *,
        gpu_module: Any,
        options: dict[str, Any],
        wait_timeout: Callable[[], float],
    ) -> CpuUploadPairing:
        return cls(
            device,
            info,
            gpu_module=gpu_module,
            sets_per_key=int(options.get("slots", DEFAULT_SLOTS_PER_KEY)),
            wait_timeout=wait_timeout,
            memory_budget=options.get("memory_budget"),
        )

    @classmethod
    def unavailable_reason(
        cls, device: WebGpuDevice, info: WebGpuDeviceInfo, options: dict[str, Any]
    ) -> str | None:
        if not hasattr(getattr(device, "queue", None), "write_texture"):
            return f"{type(device).__qualname__} has no queue.write_texture"
        return None

    def refuses(self, frame: DecodedFrame) -> str | None:
        if frame.on_gpu:
            from alpha2.native_gpu._cuda import interop

            reason = interop.download_unavailable_reason()
            if reason is not None:
                return f"CUDA frames need a download through the CUDA driver, which is unusable: {reason}"
        return None

    # -- acquire -----------------------------------------------------------------------------------

    def _write_plane(self, texture: Any, data: Any, bytes_per_row: int, g: PlaneGeometry) -> None:
        self._queue.write_texture(
            {"texture": texture, "mip_level": 0, "origin": (0, 0, 0)},
            data,
            {"offset": 0, "bytes_per_row": bytes_per_row, "rows_per_image": g.height},
            (g.width, g.height, 1),
        )

    def _write_planes(
        self, geometry: tuple[PlaneGeometry, ...], tset: TextureSet, host: CpuPlaneSet
    ) -> tuple[tuple[ImportedPlaneDescriptor, ...], int]:
        """Write host planes into ``tset``'s textures; their descriptors, and the bytes written."""
        crossed = 0
        descriptors = []
        interleave = len(host.planes) > len(geometry)  # Cb and Cr planes -> one (Cb, Cr) plane
        for index, (g, plane, texture) in enumerate(zip(geometry, host.planes, tset.textures)):
            data: Any = plane.data
            stride = source_stride = plane.bytes_per_row
            if g.plane_format.upload_conversion is UploadConversion.EXPAND_RGB_TO_RGBA:
                data, stride = _expand_rgb(plane, g.width)
            elif interleave and index == 1:
                data, stride = _interleave_chroma(plane, host.planes[2], g)
                source_stride = stride
            self._write_plane(texture, data, stride, g)
            crossed += g.width_bytes * g.height
            descriptors.append(g.descriptor(index, source_stride))
        return tuple(descriptors), crossed

    def acquire(self, frame: DecodedFrame, surface: NativeSurfaceLease, note: str | None) -> PairingTicket:
        pixel_format = frame.pixel_format
        width, height = picture_size(frame)
        geometry = frame_geometry(pixel_format, width, height)
        check_16bit(self._info, geometry, pixel_format)
        timeout_s = self._wait_timeout()
        planes = frame.planes
        host: Sequence[CpuPlane | CudaPtr2D] = planes.planes if isinstance(planes, CpuPlaneSet) else planes
        if len(host) < len(geometry):
            raise InvalidInputError(
                f"{pixel_format.ffmpeg_name} has {len(geometry)} planes, the frame brought {len(host)}"
            )
        for index, (g, plane) in enumerate(zip(geometry, host)):
            if plane.width_bytes < g.width_bytes or plane.height < g.height:
                raise InvalidInputError(
                    f"plane {index} holds {plane.width_bytes} bytes x {plane.height} rows; a "
                    f"{width}x{height} {pixel_format.ffmpeg_name} frame needs {g.width_bytes} x {g.height}"
                )
        uploaded = upload_format(pixel_format)
        if uploaded is not pixel_format:
            geometry = frame_geometry(uploaded, width, height)
        key = pool_key(frame.identity, uploaded, geometry)
        tset, _reused = self._pool.take(key, timeout_s)
        downloaded = not isinstance(planes, CpuPlaneSet)
        write = functools.partial(self._write_planes, geometry, tset)
        try:
            if isinstance(planes, CpuPlaneSet):
                descriptors, crossed = write(planes)
            else:
                from alpha2.native_gpu._cuda.streams import download_planes

                descriptors, crossed = download_planes(planes, frame.cuda_stream, timeout_s, write)
            # An empty submit flushes the queue's pending writes: without one, wgpu-native keeps every
            # frame's staging copy until the consumer's next submit (unbounded if it skips frames).
            self._queue.submit([])
        except BaseException:
            self._pool.give_back(key, tset)
            raise
        # write_texture has copied the bytes into the queue's staging memory: the surface can go now.
        surface.release()
        steps = (
            (ExecutionPath.CPU_DOWNLOAD, ExecutionPath.CPU_UPLOAD)
            if downloaded
            else (ExecutionPath.CPU_UPLOAD,)
        )
        what = "downloaded through the CUDA driver, then write_texture" if downloaded else "write_texture"
        imported = ImportedFrame(
            textures=tset.textures,
            views=tset.views,
            planes=descriptors,
            pixel_format=uploaded,
            colour=frame.colour,
            metadata=frame.metadata,
            identity=frame.identity,
            width=width,
            height=height,
            sync=ExternalSyncPoint(
                BackendKind.WGPU,
                gpu_ordered=True,
                description=f"{what}: ordered before later submits on the device's queue",
            ),
            path=ExecutionPath.CPU_UPLOAD,
            steps=steps,
            bytes_crossed_cpu=crossed,
            image_state=NativeImageState.wgpu_managed(),
        )
        return PairingTicket(frame=imported, release=lambda: self._pool.give_back(key, tset))

    def prepare_stream(self, identity: SurfaceIdentity, *, ahead: bool = False) -> None:
        """Make a texture set for ``identity``'s frames and initialize it (zeros) through the upload path
        (``ahead`` changes nothing: the CPU upload copies nothing ahead).

        The first upload into new textures is the costly one (staging memory, and on lavapipe the copy
        code): done here, at start-up, the first frame does not pay for it.
        """
        pixel_format = upload_format(identity.pixel_format)
        geometry = frame_geometry(pixel_format, identity.width, identity.height)
        check_16bit(self._info, geometry, pixel_format)
        key = pool_key(identity, pixel_format, geometry)
        tset, reused = self._pool.take(key, self._wait_timeout())
        try:
            if not reused:
                for g, texture in zip(geometry, tset.textures):
                    expand = g.plane_format.upload_conversion is UploadConversion.EXPAND_RGB_TO_RGBA
                    row = g.width * 4 if expand else g.width_bytes
                    self._write_plane(texture, bytes(row * g.height), row, g)
                self._queue.submit([])
        finally:
            self._pool.give_back(key, tset)

    def _new_set(self, key: tuple[Hashable, ...]) -> TextureSet:
        sizes: Any = key[3]
        tset = TextureSet(self._device, sizes, self._usage)
        with self._lock:
            self._live_textures += len(tset.textures)
        return tset

    def _destroy_set(self, tset: TextureSet) -> None:
        count = len(tset.textures)
        tset.destroy()
        with self._lock:
            self._live_textures -= count

    def stats(self) -> ImportTicketStats:
        sets, idle = self._pool.counts()
        with self._lock:
            textures = self._live_textures
        return ImportTicketStats(
            allocations=self._pool.allocations,
            reuses=self._pool.reuses,
            pool_sets=sets,
            pool_idle=idle,
            live_textures=textures,
            drained=self._pool.drained,
        )

    def close(self) -> None:
        self._pool.close()
