"""Scale and convert a decoded frame on the CPU with FFmpeg's swscale (PyAV ``VideoFrame.reformat``).

The transcoder's route on a CPU Vulkan device (lavapipe), where swscale is faster than the sampling
shader: size, pixel format (depth), Y'CbCr matrix and range in one call, bicubic as ffmpeg's ``-vf scale``
is by default (so a downscale matches ffmpeg's at the same crf).
The result is a DecodedFrame in host memory whose keep-alive is the scaled FFmpeg frame, so an
EncodeSession hands it to the encoder without a copy. :class:`FrameScaler` keeps one swscale context
for a stream: PyAV's ``VideoFrame.reformat`` makes a new one (and its thread pool) for every frame,
which cost about 1 ms of a 720p frame's 1.4 on the 2-core machine.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection
from fractions import Fraction

import av
import numpy as np
from av.video.reformatter import ColorRange, Colorspace, Interpolation, VideoReformatter

from alpha2.ffmpeg_bridge import media
from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourRange, TransferCharacteristic
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.formats import AlphaChannel, PixelFormat
from alpha2.gpu.frames import DecodedFrame
from alpha2.gpu.geometry import Rotation, Size
from alpha2.gpu.surfaces import SurfaceIdentity

__all__ = [
    "SWSCALE_MATRICES",
    "FrameScaler",
    "rgb_to_yuv_frame",
    "rgba_like_shader",
    "rgba_unsupported_reason",
    "scale_frame",
    "swscale_unsupported_reason",
    "yuv_colour_for_rgb",
]

SWSCALE_MATRICES: dict[ColourMatrix, Colorspace] = {
    ColourMatrix.BT709: Colorspace.ITU709,
    ColourMatrix.BT470BG: Colorspace.ITU601,
    ColourMatrix.SMPTE170M: Colorspace.ITU601,
    ColourMatrix.SMPTE240M: Colorspace.SMPTE240M,
    ColourMatrix.FCC: Colorspace.FCC,
    ColourMatrix.BT2020_NCL: Colorspace.BT2020,
}
"""The Y'CbCr matrices swscale converts between."""

_RANGES = {ColourRange.LIMITED: ColorRange.MPEG, ColourRange.FULL: ColorRange.JPEG}

_SWS_FILTER_MATRICES = {
    ColourMatrix.BT709: "bt709",
    ColourMatrix.BT470BG: "bt601",
    ColourMatrix.SMPTE170M: "bt601",
    ColourMatrix.SMPTE240M: "smpte240m",
    ColourMatrix.FCC: "fcc",
    ColourMatrix.BT2020_NCL: "bt2020",
}
"""The frame matrices the scale filter converts from, by its ``in_color_matrix`` names."""

_SWS_FILTER_RANGES = {ColourRange.LIMITED: "tv", ColourRange.FULL: "pc"}


_HD_HEIGHT = 720


def yuv_colour_for_rgb(colour: ColourInfo | None, width: int, height: int) -> ColourInfo:
    """The Y'CbCr colour an RGB picture is converted to and tagged with for a Y'CbCr encoder.

    The asked matrix and range where the matrix is a Y'CbCr one swscale has; otherwise BT.709 for HD
    (720 lines or 1280 columns), BT.601 (SMPTE 170M) below, limited range (what players assume).
    """
    base = colour if colour is not None else ColourInfo()
    if base.matrix in SWSCALE_MATRICES:
        rng = base.range if base.range in _RANGES else ColourRange.LIMITED
        return dataclasses.replace(base, range=rng)
    hd = height >= _HD_HEIGHT or width >= 1280
    matrix = ColourMatrix.BT709 if hd else ColourMatrix.SMPTE170M
    return dataclasses.replace(base, matrix=matrix, range=ColourRange.LIMITED)


def rgb_to_yuv_frame(frame: av.VideoFrame, pixel_format: str, colour: ColourInfo) -> av.VideoFrame:
    """An RGB frame in ``pixel_format`` (Y'CbCr) by ``colour``'s matrix and range (swscale), pts kept.

    PyAV's own conversion in ``encode`` would take BT.601 and leave the stream tagged as RGB.
    """
    out = frame.reformat(
        format=pixel_format,
        dst_colorspace=SWSCALE_MATRICES[colour.matrix],
        dst_color_range=_RANGES[colour.range],
    )
    out.pts, out.time_base = frame.pts, frame.time_base
    return out


_PLANAR_TWINS = {"nv12": "yuv420p", "p010le": "yuv420p10le"}
"""Semi-planar formats (NVDEC's) and the planar one each converts to RGB through, losslessly."""


def yuv_to_rgb_frame(frame: av.VideoFrame, pixel_format: str, colour: ColourInfo) -> av.VideoFrame:
    """A Y'CbCr frame of ``colour`` (its matrix and range) as RGB ``pixel_format`` (swscale), pts kept.

    PyAV's own conversion in ``encode`` would take BT.601 whatever the frame is (an RGB encoder such as
    libx264rgb got BT.709 pictures converted as BT.601)."""
    matrix = SWSCALE_MATRICES.get(colour.matrix, Colorspace.ITU709)
    source = frame
    stored = frame.sw_format  # a CUDA frame's layout in GPU memory (PyAV downloads it to convert it)
    planar = _PLANAR_TWINS.get((stored or frame.format).name)
    if planar is not None:
        # NVDEC's semi-planar frames go through their planar twin (a lossless plane copy): swscale turns
        # nv12 into RGB by another path than yuv420p (1.7 code values apart on average on a test
        # pattern, 76 at its edges), so one file's GIF differed by the decoder that read it (the GIF
        # test failed on the H200 and the H100, where NVDEC decodes into CUDA frames).
        source = frame.reformat(format=planar)
    out = source.reformat(
        format=pixel_format,
        src_colorspace=matrix,
        src_color_range=_RANGES.get(colour.range, ColorRange.MPEG),
        dst_color_range=ColorRange.JPEG,
    )
    out.pts, out.time_base = frame.pts, frame.time_base
    return out


def swscale_unsupported_reason(
    input_format: PixelFormat,
    input_colour: ColourInfo,
    output_colour: ColourInfo,
    rotation: Rotation = Rotation.NONE,
    mirrored: bool = False,
) -> str | None:
    """Why swscale cannot do this conversion as the GPU route does (None: it can)."""
    name = input_format.ffmpeg_name
    if mirrored:
        return "the picture is flipped left to right (its display matrix): the GPU route does that"
    if rotation is not Rotation.NONE:
        return f"the picture is turned {int(rotation)} degrees, which the GPU route does in its sampling"
    rgb = input_format.is_rgb
    if not rgb and not name.startswith(("yuv", "nv", "p0", "p2", "p4")):
        return f"swscale is used here for Y'CbCr and RGB inputs only, not {name}"
    checks = (("output", output_colour),) if rgb else (("input", input_colour), ("output", output_colour))
    for what, colour in checks:
        if colour.matrix not in SWSCALE_MATRICES:
            return f"swscale has no {colour.matrix.name} matrix (the {what}'s)"
        if colour.range not in _RANGES:
            return f"the {what}'s range is {colour.range.name}"
    if (input_colour.transfer, input_colour.primaries) != (output_colour.transfer, output_colour.primaries):
        return "the output changes transfer or primaries, which swscale does not convert"
    return None


def scale_frame(
    frame: DecodedFrame, size: Size, pixel_format: PixelFormat, colour: ColourInfo
) -> DecodedFrame:
    """The frame scaled to ``size`` (bicubic) and converted to ``pixel_format`` and ``colour``.

    One frame; a stream's frames go through one :class:`FrameScaler`. The input frame stays the
    caller's (release it when done). The result holds no budget reservation.

    Raises:
        InvalidInputError: a frame on the GPU or one not decoded by alpha2's DecodeSession.
        UnsupportedError: a conversion swscale does not do (:func:`swscale_unsupported_reason`).
    """
    return FrameScaler(size, pixel_format, colour)(frame)


class FrameScaler:
    """Scales and converts a stream's frames to one size, pixel format and colour with one swscale context."""

    def __init__(self, size: Size, pixel_format: PixelFormat, colour: ColourInfo) -> None:
        self.size = size
        """The output size."""
        self.pixel_format = pixel_format
        """The output pixel format."""
        self.colour = colour
        """The output matrix and range."""
        self._reformatter = VideoReformatter()
        # On two cores the encoder's frame threads already fill the machine: swscale's own slice threads
        # only add switching (a 720p -> 360p transcode ran 7% faster with one). Elsewhere FFmpeg picks.
        self._threads = 1 if (os.cpu_count() or 1) <= 2 else 0

    def __call__(self, frame: DecodedFrame) -> DecodedFrame:
        """``frame`` scaled and converted (see :func:`scale_frame`; the same errors)."""
        size, pixel_format, colour = self.size, self.pixel_format, self.colour
        source = frame.keep_alive
        if frame.on_gpu or not isinstance(source, av.VideoFrame):
            raise InvalidInputError(
                "scale_frame takes host-memory frames from DecodeSession (software decoding)"
            )
        why = swscale_unsupported_reason(frame.pixel_format, frame.colour, colour)
        if why is not None:
            raise UnsupportedError(why)
        if frame.pixel_format.is_rgb:
            # RGB has no matrix of its own: swscale converts it by the output's.
            scaled = self._reformatter.reformat(
                source,
                width=size.width,
                height=size.height,
                format=pixel_format.ffmpeg_name,
                dst_colorspace=SWSCALE_MATRICES[colour.matrix],
                interpolation=Interpolation.BICUBIC,  # ffmpeg's -vf scale default
                threads=self._threads,
                dst_color_range=_RANGES[colour.range],
            )
        else:
            same_matrix = SWSCALE_MATRICES[frame.colour.matrix] is SWSCALE_MATRICES[colour.matrix]
            scaled = self._reformatter.reformat(
                source,
                width=size.width,
                height=size.height,
                format=pixel_format.ffmpeg_name,
                src_colorspace=None if same_matrix else SWSCALE_MATRICES[frame.colour.matrix],
                dst_colorspace=None if same_matrix else SWSCALE_MATRICES[colour.matrix],
                interpolation=Interpolation.BICUBIC,  # ffmpeg's -vf scale default
                threads=self._threads,
                src_color_range=_RANGES[frame.colour.range],
                dst_color_range=_RANGES[colour.range],
            )
        metadata = dataclasses.replace(frame.metadata, display_size=size, coded_size=size)
        identity = SurfaceIdentity(
            decoder_id=frame.identity.decoder_id,
            generation=frame.identity.generation,
            width=size.width,
            height=size.height,
            pixel_format=pixel_format,
        )
        return DecodedFrame(
            planes=media.cpu_planes_of(scaled, pixel_format),
            pixel_format=pixel_format,
            colour=colour,
            metadata=metadata,
            identity=identity,
            keep_alive=scaled,
        )


def rgba_unsupported_reason(
    frame: DecodedFrame, hdr_transfers: Collection[TransferCharacteristic]
) -> str | None:
    """Why swscale cannot convert ``frame`` exactly as the sampling shader does (None: it can)."""
    fmt = frame.pixel_format
    if frame.on_gpu:
        return "the frame is on the GPU"
    if fmt.is_rgb or fmt.alpha is not AlphaChannel.NONE:
        return f"{fmt.ffmpeg_name} is not a Y'CbCr format without alpha"
    planes = fmt.plane_formats
    if not (fmt.is_semi_planar or all(p.channels == 1 for p in planes)):
        return f"{fmt.ffmpeg_name} is a packed Y'CbCr format"
    size = frame.metadata.display_size
    if (size.width % (1 << fmt.log2_chroma_w)) or (size.height % (1 << fmt.log2_chroma_h)):
        # swscale stretches a subsampled plane's ceil(w / 2) samples over w: its siting drifts.
        return f"the {size.width}x{size.height} picture has an odd side under subsampled chroma"
    colour = frame.colour.resolved(fmt, size.width, size.height)
    if colour.transfer in hdr_transfers:
        return f"the frame is HDR ({colour.transfer.name}): the sampling shader tone maps it to SDR"
    if len(planes) > 1 and colour.matrix not in _SWS_FILTER_MATRICES:
        return f"the scale filter has no {colour.matrix.name} matrix"
    if colour.range not in _SWS_FILTER_RANGES:
        return f"the range is {colour.range.name}"
    return None


def rgba_like_shader(
    frame: DecodedFrame, chroma_offset: tuple[float, float], hdr_transfers: Collection[TransferCharacteristic]
) -> np.ndarray:
    """``frame``'s picture as alpha2's sampling shader renders it: (H, W, 4) uint8, full range, alpha 255.

    ``chroma_offset`` is the shader's chroma siting (its ``ShaderParams.chroma_offset``), in pixels.

    Raises:
        InvalidInputError: a frame :func:`unsupported_reason` refuses, or not a PyAV frame.
    """
    why = rgba_unsupported_reason(frame, hdr_transfers)
    source = frame.keep_alive
    if why is not None or not isinstance(source, av.VideoFrame):
        raise InvalidInputError(f"swscale_rgba cannot convert this frame: {why or 'not a PyAV frame'}")
    fmt, size = frame.pixel_format, frame.metadata.display_size
    colour = frame.colour.resolved(fmt, size.width, size.height)
    h_pos, v_pos = (round(v * 256) for v in chroma_offset)
    matrix = _SWS_FILTER_MATRICES.get(colour.matrix, "bt709")  # gray: chroma is neutral, any matrix will do
    graph = av.filter.Graph()
    time_base = Fraction(1, 25)
    src = graph.add_buffer(
        width=source.width, height=source.height, format=source.format, time_base=time_base
    )
    scale = graph.add(
        "scale",
        "flags=bilinear+accurate_rnd+full_chroma_int"
        f":in_color_matrix={matrix}:in_range={_SWS_FILTER_RANGES[colour.range]}:out_range=pc"
        f":in_h_chr_pos={h_pos}:in_v_chr_pos={v_pos}",
    )
    out = graph.add("format", "rgba")
    sink = graph.add("buffersink")
    src.link_to(scale)
    scale.link_to(out)
    out.link_to(sink)
    graph.configure()
    pts, source_tb = source.pts, source.time_base
    source.pts, source.time_base = 0, time_base
    try:
        graph.push(source)
        rgba = graph.pull().to_ndarray()
    finally:
        # PyAV takes no None back; 0/1 reads as None again (a frame some damaged streams give).
        source.pts, source.time_base = pts, source_tb if source_tb is not None else Fraction(0, 1)
    return np.asarray(rgba)[: size.height, : size.width]
