"""The encode hand-off: the renderer's RGBA texture, or decoded Y'CbCr planes, -> NV12 / P010 for an encoder.

:class:`EncodeCopier` composes the encode room: it checks the output against the encoder's limits
(:mod:`.extent`), converts each frame on the GPU by one of two compute passes (:mod:`.pipelines`, their
uniform blocks in :mod:`.params`), delivers the planes through the CPU read-back ring (:mod:`.readback`)
as :class:`~alpha2.gpu.encoded.EncodedPlanes`, and reports which route (:mod:`.routes`)
each frame took, with every fallback's reason and the bytes read back (:attr:`EncodeCopier.route_report`).

- :meth:`EncodeCopier.submit_planes` reads an importer's plane textures (nv12, p010, yuv420p,
  yuv444p10 ...) with a bilinear sampler and writes NV12 / P010 at the copier's size, matrix and range in
  one pass (``encode_scale_yuv.wgsl``);
- :meth:`EncodeCopier.submit` converts a rendered ``rgba8unorm`` / ``bgra8unorm`` / ``rgba16float``
  texture (``rgb_to_yuv.wgsl``), for formats the planes pass cannot read (gray, packed RGB).

Works with any wgpu-py API device (wgpu-native, lavapipe included, or wgpudawn). CUDA frames for NVENC
are not part of this build: ``target='cuda'`` raises :class:`~alpha2.gpu.errors.UnsupportedError` with
the reason :data:`~alpha2.native_gpu.encode.routes.ROUTES` gives. ``VulkanEncodeCopier`` is the seed's
name for :class:`EncodeCopier`, kept as an alias here (and only here).
"""

from __future__ import annotations

import collections
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from alpha2.gpu.colour import ChromaLocation, ColourInfo, ColourMatrix, ColourRange
from alpha2.gpu.colour_manage import ColourOptions, ColourTarget
from alpha2.gpu.encoded import EncodedPlanes, EncodeTarget, parse_target
from alpha2.gpu.errors import ClosedError, InvalidInputError, UnsupportedError
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.geometry import Rotation
from alpha2.gpu.hdr import HdrMetadata
from alpha2.gpu.webgpu import HasWebGpuDevice, WebGpuDevice, webgpu_device_of
from alpha2.native_gpu.device.waits import gpu_wait_timeout
from alpha2.native_gpu.encode.extent import ExtentSource, VideoEncodeExtent, default_extent
from alpha2.native_gpu.encode.params import (
    ROW_ALIGNMENT_BYTES,
    ReadbackLayout,
    ScaleYuvParams,
    rgb_to_yuv_params,
    scale_yuv_params,
)
from alpha2.native_gpu.encode.pipelines import (
    SOURCE_TEXTURE_FORMATS,
    PlanesPass,
    RgbaPass,
    submit_conversion,
    workgroups,
)
from alpha2.native_gpu.encode.readback import ReadbackRing, destroy_buffers
from alpha2.native_gpu.encode.routes import (
    CUDA_DELIVERY_REFUSAL,
    OUTPUT_FORMATS,
    EncodeConversion,
    EncodeRoute,
    resolve_output,
    route_pairing,
    route_statuses,
)
from alpha2.native_gpu.paths import PathReport

if TYPE_CHECKING:
    import wgpu

__all__ = [
    "OUTPUT_FORMATS",
    "ROW_ALIGNMENT_BYTES",
    "SOURCE_TEXTURE_FORMATS",
    "EncodeCopier",
    "EncodeTarget",
    "EncodedPlanes",
    "ExtentSource",
    "ScaleYuvParams",
    "VideoEncodeExtent",
    "VulkanEncodeCopier",
    "scale_yuv_params",
]


class EncodeCopier:
    """Rendered RGBA texture or decoded planes -> NV12 / P010 planes in host memory, through a compute
    pass and a ring of asynchronously mapped read-back buffers. One copier per export and output size.

    Typical use (single thread)::

        copier = EncodeCopier(device, 1920, 1080, pixel_format=PixelFormat.NV12)
        for texture, pts in rendered:
            for planes in copier.submit(texture, pts):
                with planes:
                    session.encode(planes.planes, pts=planes.pts, pixel_format=planes.pixel_format)
        for planes in copier.flush():
            with planes:
                session.encode(planes.planes, pts=planes.pts, pixel_format=planes.pixel_format)
        copier.close()

    Frames come back in submission order. Release every returned :class:`EncodedPlanes` before the next
    :meth:`submit` (a ``with`` block does it); ``copy_planes=True`` hands out copies and frees the slot at
    once instead. Not thread-safe: call it from one thread.
    """

    def __init__(
        self,
        device: HasWebGpuDevice | WebGpuDevice,
        width: int,
        height: int,
        *,
        pixel_format: PixelFormat = PixelFormat.NV12,
        matrix: ColourMatrix = ColourMatrix.BT709,
        colour_range: ColourRange = ColourRange.LIMITED,
        chroma_location: ChromaLocation = ChromaLocation.LEFT,
        ring_size: int = 3,
        target: EncodeTarget | str = EncodeTarget.CPU,
        extent: VideoEncodeExtent | None = None,
        wait_timeout_s: float | None = None,
        copy_planes: bool = False,
        colour_target: ColourTarget | None = None,
        colour_options: ColourOptions | None = None,
    ) -> None:
        """Create the passes, the plane storage buffer and the read-back ring for one output size.

        Args:
            device: the renderer's alpha2 Device, or its wgpu-py device (wgpu-native or wgpudawn).
            width, height: output size in pixels; NV12 / P010 need even sizes.
            pixel_format: ``PixelFormat.NV12`` (8-bit) or ``PixelFormat.P010`` (10-bit).
            matrix: output YCbCr matrix (BT.709, BT.601 as BT470BG / SMPTE170M, BT.2020 NCL ...).
            colour_range: output range, LIMITED or FULL (UNSPECIFIED means LIMITED, FFmpeg's default).
            chroma_location: LEFT (MPEG-2, FFmpeg's default for 4:2:0; UNSPECIFIED means LEFT) or CENTER.
            ring_size: read-back slots (at least 2); bounds host memory to ``ring_size`` frames.
            target: ``'cpu'`` (mapped host memory); ``'cuda'`` is refused in this build.
            extent: the encoder's limits; the size is checked against them (default: the 4:2:0 rule).
            wait_timeout_s: bound of every wait on the GPU (default: alpha2's ``gpu_wait_timeout()``,
                set with ``set_gpu_wait_timeout``).
            copy_planes: hand out copies (slot freed at once) instead of views of the mapped memory.
            colour_target: the output's primaries and transfer for :meth:`submit_planes` (an HDR input
                tone mapped to SDR: the colour step runs when the chain is not an identity); None: the
                input's are kept (only matrix and range change).
            colour_options: tone curve and gamut mapping of that colour step.

        Raises:
            UnsupportedError: ``target='cuda'``, or an output format / matrix / siting it cannot write.
            InvalidInputError: an odd or out-of-limit size, or ``ring_size < 2``.
        """
        import wgpu as _wgpu

        device = webgpu_device_of(device)
        target = parse_target(target)
        if target is EncodeTarget.CUDA:
            raise UnsupportedError(f"EncodeCopier: {CUDA_DELIVERY_REFUSAL}")
        matrix, colour_range, chroma_location = resolve_output(
            pixel_format, matrix, colour_range, chroma_location, height
        )
        if ring_size < 2:
            raise InvalidInputError(f"ring_size must be at least 2, got {ring_size}")
        if width < 1 or height < 1:
            raise InvalidInputError(f"output size must be positive, got {width}x{height}")
        if extent is None:
            extent = default_extent(pixel_format)
        extent.check(width, height)
        if wait_timeout_s is not None and not wait_timeout_s > 0:
            raise InvalidInputError(
                f"wait_timeout_s must be positive seconds or None, got {wait_timeout_s!r}"
            )

        self.width = width
        """Output width in pixels."""
        self.height = height
        """Output height in pixels."""
        self.pixel_format = pixel_format
        """NV12 or P010."""
        self.matrix = matrix
        """Output YCbCr matrix (UNSPECIFIED resolved)."""
        self.colour_range = colour_range
        """Output range (UNSPECIFIED resolved to LIMITED)."""
        self.chroma_location = chroma_location
        """Chroma siting written (UNSPECIFIED resolved to LEFT)."""
        self.ring_size = ring_size
        """Number of read-back slots."""
        self.extent = extent
        """The limits the size was checked against."""
        self.target = target
        """Where planes are delivered (always CPU in this build)."""
        self.copy_planes = copy_planes
        """Whether handed-out planes are copies (True) or views of the mapped slot (False)."""
        self.layout = ReadbackLayout.of(width, height, pixel_format)
        """Where the planes sit in the read-back buffer."""
        self.bytes_per_row = self.layout.bytes_per_row
        """Row pitch of both planes in the read-back buffer (256-byte aligned)."""
        self.width_bytes = self.layout.width_bytes
        """Meaningful bytes per row of either plane (Y: width samples; CbCr: width / 2 pairs)."""
        self.uv_offset_bytes = self.layout.uv_offset_bytes
        """Offset of the CbCr plane in the read-back buffer."""
        self.frame_size_bytes = self.layout.frame_size_bytes
        """Bytes read back per frame (padded rows included)."""
        self.frames_submitted = 0
        """Frames submitted so far."""

        self._wait_timeout_s = None if wait_timeout_s is None else float(wait_timeout_s)
        self._device = device
        self._closed = False
        self._dispatch = workgroups(width, height, pixel_format)
        self._frames_by_route: collections.Counter[EncodeRoute] = collections.Counter()
        self._fallbacks: collections.Counter[str] = collections.Counter()
        usage = _wgpu.BufferUsage
        self._planes_buffer = device.create_buffer(
            label="alpha2 encode planes",
            size=self.frame_size_bytes,
            usage=usage.STORAGE | usage.COPY_SRC,
        )
        buffers = [self._planes_buffer]
        # The finalizer owns the buffers from the first one on, so a failure further down frees them.
        self._finalizer = weakref.finalize(self, destroy_buffers, buffers)
        self._rgba = RgbaPass(
            device,
            _wgpu,
            self.layout,
            pixel_format,
            rgb_to_yuv_params(self.layout, pixel_format, matrix, colour_range, chroma_location),
            self._planes_buffer,
        )
        buffers.append(self._rgba.params_buffer)
        self._planes = PlanesPass(
            device,
            _wgpu,
            self.layout,
            pixel_format,
            matrix,
            colour_range,
            chroma_location,
            self._planes_buffer,
            colour_target,
            colour_options,
        )
        buffers.append(self._planes.params_buffer)
        buffers.append(self._planes.colour_buffer)
        self._ring = ReadbackRing(
            device,
            _wgpu,
            self.layout,
            ring_size,
            pixel_format=pixel_format,
            matrix=matrix,
            colour_range=colour_range,
            chroma_location=chroma_location,
            copy_planes=copy_planes,
        )

    # -- public API -----------------------------------------------------------------------------------

    @property
    def wait_timeout_s(self) -> float:
        """Bound of every wait on the GPU, in seconds (the copier's own, else ``gpu_wait_timeout()``)."""
        return gpu_wait_timeout() if self._wait_timeout_s is None else self._wait_timeout_s

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran."""
        return self._closed

    @property
    def in_flight(self) -> int:
        """Frames submitted and not yet handed out."""
        return self._ring.in_flight

    @property
    def held(self) -> int:
        """Frames handed out and not yet released."""
        return self._ring.held

    @property
    def peak_slots_in_use(self) -> int:
        """Most slots in use (in flight or held) at once: never more than :attr:`ring_size`."""
        return self._ring.peak_slots_in_use

    @property
    def bytes_read_total(self) -> int:
        """Bytes read back over the copier's life."""
        return self._ring.bytes_read_total

    @property
    def route_report(self) -> PathReport[EncodeRoute]:
        """The routes this build has, frames per route, fallbacks with reasons, bytes read back."""
        return PathReport(
            "encode copier",
            "routes",
            route_statuses(),
            dict(self._frames_by_route),
            dict(self._fallbacks),
            self._ring.bytes_read_total,
        )

    def submit(
        self, texture: wgpu.GPUTexture, pts: int | None = None, *, reason: str | None = None
    ) -> list[EncodedPlanes]:
        """Convert ``texture`` on the GPU and start reading it back; return the frames that are done.

        Never waits for an unfinished frame unless this submission filled the ring: then it waits for the
        oldest one (bounded by ``wait_timeout_s``) so the next submission has a free slot.

        ``reason`` says why the frame takes the RGBA route rather than a better one (an
        :class:`~alpha2.native_gpu.encode.routes.EncodeRouteChoice`'s reason): counted in
        :attr:`route_report` as a fallback.

        Returns:
            Finished frames, oldest first (possibly none). Release each before the next ``submit``.

        Raises:
            InvalidInputError: the texture's size, format or usage does not fit the copier.
            OutOfMemoryError: every slot is held by an unreleased :class:`EncodedPlanes`.
            GpuTimeoutError: the oldest frame did not finish within ``wait_timeout_s``.
            ClosedError: the copier was closed.
        """
        self._check_open()
        self._rgba.check_texture(texture)
        slot = self._ring.take_free_slot()
        return self._submit_pass(
            EncodeConversion.RGBA, slot, self._rgba.pipeline, self._rgba.bind_group(texture), pts, reason
        )

    def submit_planes(
        self,
        views: Sequence[Any],
        pixel_format: PixelFormat,
        colour: ColourInfo,
        width: int,
        height: int,
        pts: int | None = None,
        *,
        crop: tuple[int, int, int, int] | None = None,
        reason: str | None = None,
        rotation: Rotation = Rotation.NONE,
        hdr: HdrMetadata | None = None,
        mirrored: bool = False,
    ) -> list[EncodedPlanes]:
        """Scale decoded Y'CbCr planes to the copier's size and format in one compute pass, no RGB texture.

        The same ring and ordering as :meth:`submit` (the two may be mixed; frames come back in submission
        order). Each output sample is read bilinearly (a filtering sampler, clamp-to-edge, positions kept
        inside the displayed texels so padding never bleeds in) at its own position: luma at the pixel,
        chroma at the output's chroma site; when downscaling, as the mean of a grid of such taps over the
        sample's footprint, a little wider than the sample (about an area filter; see
        :data:`~alpha2.native_gpu.encode.params.DOWNSCALE_FOOTPRINT` and
        :func:`~alpha2.native_gpu.encode.params.filter_taps`). The
        input's matrix and range become the copier's by one affine transform on the samples (an
        identity when they agree).

        The planes may be reused (or released back to a pool) once this returns: the pass that reads them
        is submitted to the queue before anything later written into them.

        Args:
            views: the plane textures or texture views in the pixel format's plane order (an importer
                lease's ``frame.views``): R8 + RG8 / R16 + RG16 (nv12, p010, nv16 ...) or three
                R8 / R16 planes (yuv420p, yuv422p10, yuv444p ...). 16-bit planes need a device with
                'texture-format16bit-norm' (wgpu) or 'unorm16-texture-formats' (Dawn).
            pixel_format: the planes' layout.
            colour: the input's colour (unspecified tags are resolved as FFmpeg does).
            width, height: the input's display size in luma pixels (the textures may be larger).
            pts: handed back with the frame.
            crop: source rectangle (x, y, width, height) inside ``width`` x ``height``; default all of it.
            reason: why the frame takes this route rather than a better one, counted in
                :attr:`route_report` as a fallback (None: it is the best that applies).
            rotation: clockwise rotation applied to the picture (the display matrix's); the copier's
                size is the rotated one (for a quarter turn, the crop's height x width scaled).
            hdr: the frame's HDR static metadata (a PQ input's peak, for the colour step).
            mirrored: the picture is flipped left to right before the rotation (a display matrix's
                mirror).

        Returns:
            Finished frames, oldest first (possibly none). Release each before the next submission.

        Raises:
            UnsupportedError: a gray, RGB or packed input format (render to RGBA and :meth:`submit`).
            InvalidInputError: too few planes, or a bad size or crop.
            OutOfMemoryError: every slot is held by an unreleased :class:`EncodedPlanes`.
            GpuTimeoutError: the oldest frame did not finish within ``wait_timeout_s``.
            ClosedError: the copier was closed.
        """
        self._check_open()
        pipeline, bind_group, data = self._planes.prepare(
            views, pixel_format, colour, width, height, crop, rotation, hdr, mirrored
        )
        slot = self._ring.take_free_slot()
        self._planes.write_params(data)
        return self._submit_pass(EncodeConversion.PLANES, slot, pipeline, bind_group, pts, reason)

    def poll(self) -> list[EncodedPlanes]:
        """Frames that are done, oldest first, without waiting."""
        self._check_open()
        return self._ring.collect(block_for_one=False, timeout=0.0)

    def next_frame(self, timeout: float | None = None) -> EncodedPlanes | None:
        """Wait (bounded) for the oldest in-flight frame; None when nothing is in flight.

        Raises:
            GpuTimeoutError: it did not finish within ``timeout`` (default ``wait_timeout_s``).
        """
        self._check_open()
        return self._ring.next_frame(self.wait_timeout_s if timeout is None else timeout)

    def flush(self, timeout: float | None = None) -> list[EncodedPlanes]:
        """Wait (bounded per frame) for every in-flight frame and return them, oldest first."""
        frames: list[EncodedPlanes] = []
        while True:
            frame = self.next_frame(timeout)
            if frame is None:
                return frames
            frames.append(frame)

    def close(self) -> None:
        """Wait for in-flight work, unmap and destroy the buffers. Idempotent.

        Frames handed out and not released are invalid afterwards.
        """
        if self._closed:
            return
        self._closed = True
        self._ring.close(self.wait_timeout_s)
        self._rgba.clear()
        self._planes.clear()
        self._finalizer()

    def __enter__(self) -> EncodeCopier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"EncodeCopier({self.width}x{self.height} {self.pixel_format.name} {self.matrix.name} "
            f"{self.colour_range.name} {self.chroma_location.name}, ring={self.ring_size}, "
            f"in_flight={self.in_flight}, held={self.held})"
        )

    # -- internals ------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("EncodeCopier is closed")

    def _submit_pass(
        self,
        conversion: EncodeConversion,
        slot: Any,
        pipeline: Any,
        bind_group: Any,
        pts: int | None,
        reason: str | None,
    ) -> list[EncodedPlanes]:
        label = "alpha2 rgb_to_yuv" if conversion is EncodeConversion.RGBA else "alpha2 encode_scale_yuv"
        submit_conversion(
            self._device,
            pipeline,
            bind_group,
            self._dispatch,
            self._planes_buffer,
            slot.buffer,
            self.frame_size_bytes,
            label,
        )
        self._ring.start(slot, pts)
        self.frames_submitted += 1
        self._frames_by_route[route_pairing(conversion, self.target).route] += 1
        if reason is not None:
            self._fallbacks[reason] += 1
        return self._ring.collect(block_for_one=self._ring.full(), timeout=self.wait_timeout_s)


VulkanEncodeCopier = EncodeCopier
"""The seed's name for :class:`EncodeCopier` (it was never Vulkan-specific: any wgpu-py device works)."""
