"""Writing video: textures, RGB(A) arrays or decoded frames in, a tagged video file out.

Made by :func:`create`; the sibling of :mod:`alpha2.api.source`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from alpha2.api.devices import as_device
from alpha2.api.source import Frame, _Worker
from alpha2.ffmpeg_bridge.encode import EncodeSession
from alpha2.gpu.colour import (
    ChromaLocation,
    ColourInfo,
    ColourMatrix,
    ColourPrimaries,
    ColourRange,
    TransferCharacteristic,
)
from alpha2.gpu.encoded import companion_colour
from alpha2.gpu.errors import InvalidInputError
from alpha2.native_gpu.device.device import Device
from alpha2.native_gpu.encode.copier import EncodeCopier

__all__ = ["DEFAULT_COLOUR", "Writer", "create"]

DEFAULT_COLOUR = ColourInfo(
    ColourMatrix.BT709,
    ColourPrimaries.BT709,
    TransferCharacteristic.BT709,
    ColourRange.LIMITED,
    ChromaLocation.LEFT,
)
"""What a :class:`Writer` tags its stream with when given no colour: BT.709, limited range, left siting."""


# ---------------------------------------------------------------------------------------------------
# writing


def _host_array(item: Any) -> np.ndarray:
    """A numpy array from numpy, anything with ``__array__``, or a DLPack producer (CUDA ones copied)."""
    if isinstance(item, np.ndarray):
        return item
    if hasattr(item, "__dlpack__"):
        try:
            return np.from_dlpack(item)
        except (BufferError, RuntimeError, TypeError, ValueError):
            pass  # device memory: ask for a host copy, the protocol's way, then the libraries' own ways
        try:
            return np.from_dlpack(item, device="cpu", copy=True)
        except (BufferError, RuntimeError, TypeError, ValueError):
            pass
        for method in ("cpu", "get"):  # torch.Tensor.cpu(), cupy.ndarray.get()
            convert = getattr(item, method, None)
            if callable(convert):
                host = convert()
                return np.asarray(host.numpy() if hasattr(host, "numpy") else host)
    if hasattr(item, "__array__"):
        return np.asarray(item)
    raise InvalidInputError(
        f"cannot write a {type(item).__name__}: pass a texture, an (h, w, 3|4) uint8 array (numpy or "
        "DLPack: torch, cupy), or an alpha2 Frame"
    )


class Writer:
    """Encode textures, RGB(A) arrays or decoded frames into a video file; made by :func:`create`.

    Textures and arrays are converted to NV12 on the GPU (the copier) with :attr:`colour`'s matrix and
    range, and the stream is tagged with that colour; decoded frames are encoded as they are, tagged
    with their own colour. ``untagged=True`` writes no colour tags (decoders then assume BT.601).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        codec: str = "h264",
        rate: float = 30,
        colour: ColourInfo | None = None,
        device: Any = None,
        untagged: bool = False,
        **options: Any,
    ) -> None:
        colour = DEFAULT_COLOUR if colour is None else colour
        if colour.primaries is ColourPrimaries.UNSPECIFIED:  # the matrix's standard primaries and transfer
            colour = companion_colour(colour.matrix, colour.range, colour.chroma_location)
        self.colour = colour
        """What the stream is tagged with (for textures and arrays)."""
        self.path = os.fspath(path)
        """The output file."""
        self._device = as_device(device)
        # The copier's planes carry the matrix's companion colour; other primaries / transfer go to the
        # session, which then tags every frame with them. All-unspecified is the untagged request.
        companion = companion_colour(colour.matrix, colour.range, colour.chroma_location)
        session_colour = ColourInfo() if untagged else (None if colour == companion else colour)
        self._session = EncodeSession(path, codec=codec, rate=rate, colour=session_colour, **options)
        self._copier: EncodeCopier | None = None
        self._upload: Any = None
        self._frames = 0
        self._worker: _Worker | None = None

    @property
    def session(self) -> EncodeSession:
        """The EncodeSession underneath."""
        return self._session

    @property
    def frames_written(self) -> int:
        """Frames handed to the encoder so far."""
        return self._frames

    def _device_for(self, texture: Any) -> Device:
        if self._device is None:
            owner = getattr(texture, "_device", None)
            self._device = Device.adopt(owner) if owner is not None else Device.open()
        return self._device

    def _copier_for(self, device: Device, width: int, height: int) -> EncodeCopier:
        if self._copier is None:
            self._copier = EncodeCopier(
                device,
                width,
                height,
                matrix=self.colour.matrix,
                colour_range=self.colour.range,
                chroma_location=self.colour.chroma_location,
            )
        return self._copier

    def _array_texture(self, pixels: np.ndarray) -> Any:
        if pixels.ndim != 3 or pixels.shape[2] not in (3, 4) or pixels.dtype != np.uint8:
            raise InvalidInputError(
                f"arrays must be (height, width, 3 or 4) uint8 RGB(A), got {pixels.shape} {pixels.dtype}"
            )
        height, width = pixels.shape[:2]
        if pixels.shape[2] == 3:
            pixels = np.concatenate([pixels, np.full((height, width, 1), 255, np.uint8)], axis=2)
        device = self._device_for(None)
        gpu = device.gpu_module
        if self._upload is None or tuple(self._upload.size[:2]) != (width, height):
            self._upload = device.webgpu_device.create_texture(
                size=(width, height, 1),
                format="rgba8unorm",
                usage=gpu.TextureUsage.TEXTURE_BINDING | gpu.TextureUsage.COPY_DST,
            )
        device.webgpu_device.queue.write_texture(
            {"texture": self._upload, "origin": (0, 0, 0), "mip_level": 0},
            np.ascontiguousarray(pixels),
            {"offset": 0, "bytes_per_row": width * 4, "rows_per_image": height},
            (width, height, 1),
        )
        return self._upload

    def write(self, item: Any, pts: int | None = None) -> None:
        """Encode one frame: a texture, an RGB(A) uint8 array (numpy / DLPack), or an alpha2 Frame.

        Args:
            item: What to write. Textures need TEXTURE_BINDING usage and rgba8unorm, bgra8unorm or
                rgba16float; every texture or array must have the first one's size.
            pts: Timestamp in frames at ``rate``; default the frame's index.
        """
        pts = self._frames if pts is None else pts
        if isinstance(item, Frame):
            self._session.encode(item.decoded, pts=pts)
            self._frames += 1
            return
        texture = item if hasattr(item, "create_view") else self._array_texture(_host_array(item))
        device = self._device_for(texture)
        copier = self._copier_for(device, int(texture.size[0]), int(texture.size[1]))
        for planes in copier.submit(texture, pts):
            with planes:
                self._session.encode(planes)
        self._frames += 1

    async def write_async(self, item: Any, pts: int | None = None) -> None:
        """:meth:`write` on a worker thread: the event loop runs while the GPU and the encoder work."""
        if self._worker is None:
            self._worker = _Worker("alpha2-encode")
        await self._worker.run(lambda: self.write(item, pts))

    def close(self) -> None:
        """Encode what is still in flight and finish the file (atomically). Idempotent."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        if self._copier is not None:
            for planes in self._copier.flush():
                with planes:
                    self._session.encode(planes)
            self._copier.close()
            self._copier = None
        self._session.close()

    def abort(self) -> None:
        """Stop and remove the partial output."""
        if self._copier is not None:
            self._copier.close()
            self._copier = None
        self._session.abort()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def create(path: str | os.PathLike[str], **options: Any) -> Writer:
    """Create a video file to write into; :class:`Writer` lists the options (codec, rate, colour, device)."""
    return Writer(path, **options)
