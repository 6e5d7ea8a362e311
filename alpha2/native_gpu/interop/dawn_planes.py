"""Dawn's side of a ring slot's plane images: making them, their import, each access, the imported frame.

Shared by the GPU copy (:mod:`.cuda_vk`: CUDA writes the slots in this process) and the hand-off from
decoder processes (:mod:`.handoff`: another process writes them). A plane image is a Vulkan image on
exportable OPAQUE_FD memory (``_vk.export.ExportableImage``); Dawn imports its memory as a
SharedTextureMemory made from the same ``VkImageCreateInfo`` and samples a texture on it, between a
``begin_access`` and an ``end_access``. Each access ends with a fence that whoever writes the slot
next waits for, on the GPU: an opaque-fd semaphore (imported into CUDA) or a sync fd. While Dawn
accesses a slot, :func:`slot_frame` is the slot as an imported frame.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING, Any

from alpha2.gpu.errors import InternalError
from alpha2.gpu.handles import OwnedFd
from alpha2.gpu.identity import ExecutionPath
from alpha2.gpu.webgpu import WebGpuDevice
from alpha2.native_gpu._vk.export import (
    VK_IMAGE_LAYOUT_GENERAL,
    VK_IMAGE_LAYOUT_UNDEFINED,
    VK_QUEUE_FAMILY_EXTERNAL,
)
from alpha2.native_gpu.interop.leases import (
    ExternalSyncPoint,
    ImageOwner,
    ImportedFrame,
    NativeImageState,
)
from alpha2.native_gpu.interop.ring import RingPlane, RingSlot

if TYPE_CHECKING:
    from alpha2.gpu.colour import ColourInfo
    from alpha2.gpu.formats import PixelFormat
    from alpha2.gpu.geometry import FrameMetadata
    from alpha2.gpu.surfaces import SurfaceIdentity
    from alpha2.native_gpu._vk.export import ExportableImage

__all__ = [
    "begin_access",
    "dawn_extras",
    "end_plane",
    "import_plane",
    "make_plane_images",
    "slot_frame",
]


def dawn_extras() -> ModuleType:
    """wgpudawn's shared-memory extras (imported on first use: only Dawn devices have them)."""
    return importlib.import_module("wgpudawn.backends.dawn.extras")


def make_plane_images(vk: Any, slot: RingSlot, queue_family: int, timeout_s: float) -> list[ExportableImage]:
    """Make ``slot``'s plane images on the shared Vulkan device (``vk``: its ``_internal``), on
    exportable memory, moved to GENERAL and released to ``VK_QUEUE_FAMILY_EXTERNAL`` once, before
    anything writes them (the transition's submission waits up to ``timeout_s``). Each plane keeps its
    image (``vk_image``): destroying the slot destroys them."""
    from alpha2.native_gpu._vk import export

    images: list[ExportableImage] = []
    for plane in slot.planes:
        g = plane.geometry
        image = export.ExportableImage(vk, g.width, g.height, g.plane_format.vk_format)
        plane.vk_image = image
        images.append(image)
    export.transition_for_external(vk, images, queue_family, timeout_s)
    return images


def import_plane(device: WebGpuDevice, image: ExportableImage, plane: RingPlane, index: int) -> None:
    """Import ``image``'s memory into Dawn as ``plane``'s SharedTextureMemory, with a texture and a view
    on it. Dawn duplicates the fd it is given: ours is closed right after."""
    extras = dawn_extras()
    with image.export_memory_fd() as memory_fd:
        plane.memory = extras.import_shared_texture_memory(
            device,
            label=f"alpha2 ring plane {index}",
            opaque_fd={
                "fd": memory_fd.fileno(),
                "vk_image_create_info": image.create_info_address,
                "memory_type_index": image.memory_type_index,
                "allocation_size": image.size_bytes,
                "dedicated_allocation": True,
            },
        )
    plane.texture = plane.memory.create_texture(label=f"alpha2 ring plane {index}")
    plane.view = plane.texture.create_view(label="alpha2 ring plane view")
    plane.layout = image.layout


def slot_frame(
    slot: RingSlot,
    *,
    pixel_format: PixelFormat,
    colour: ColourInfo,
    metadata: FrameMetadata,
    identity: SurfaceIdentity,
    width: int,
    height: int,
    strides: tuple[int, ...],
    sync: ExternalSyncPoint,
    uses: int,
) -> ImportedFrame:
    """``slot``, whose access Dawn has begun, as an imported frame: its textures and views, one
    descriptor per plane (``strides``: the source planes' row pitches), the GPU-copy path, no byte
    through the CPU; ``uses`` (the copies made into the slot) is its images' timeline value."""
    descriptors = tuple(
        plane.geometry.descriptor(index, stride)
        for index, (plane, stride) in enumerate(zip(slot.planes, strides))
    )
    return ImportedFrame(
        textures=tuple(p.texture for p in slot.planes),
        views=tuple(p.view for p in slot.planes),
        planes=descriptors,
        pixel_format=pixel_format,
        colour=colour,
        metadata=metadata,
        identity=identity,
        width=width,
        height=height,
        sync=sync,
        path=ExecutionPath.GPU_COPY,
        steps=(ExecutionPath.GPU_COPY,),
        bytes_crossed_cpu=0,
        image_state=NativeImageState(
            owner=ImageOwner.SHARED_VULKAN,
            layout=VK_IMAGE_LAYOUT_GENERAL,
            queue_family=VK_QUEUE_FAMILY_EXTERNAL,
            timeline_value=uses,
        ),
    )


def begin_access(slot: RingSlot, values: list[int] | None) -> None:
    """Dawn's access to each plane of ``slot``, waiting on its semaphore's shared fence at ``values``
    (None: on nothing, the write being known done). On a failure the accesses that began are ended,
    and it raises.

    The acquire names the layout Dawn's last release left the image in as both its old and its new
    layout: the image stays in it while CUDA writes (CUDA makes no transition), so the acquire mirrors
    that release (as a queue-family transfer's two halves must) and Dawn moves the image to what its
    use needs itself; asking for GENERAL made every frame's acquire a transition Dawn then undid."""
    began: list[RingPlane] = []
    try:
        for index, plane in enumerate(slot.planes):
            assert plane.memory is not None
            fences = {} if values is None else {"fences": [plane.fence], "signaled_values": [values[index]]}
            plane.memory.begin_access(
                plane.texture,
                initialized=True,
                vk_image_layout=(plane.layout, plane.layout),
                **fences,
            )
            plane.accessing = True
            began.append(plane)
    except BaseException:
        for plane in reversed(began):
            try:
                end_plane(plane, collect_fences=True)
            except BaseException:
                pass  # the slot is retired by the caller either way
        raise


def end_plane(plane: RingPlane, *, collect_fences: bool) -> None:
    """End Dawn's access to a plane; keep its end-of-access fences (``release_fence_fds`` for opaque-fd
    semaphores, ``release_sync_fds`` for sync fds), duplicated, for the slot's next write to wait on."""
    if not plane.accessing:
        return
    plane.accessing = False
    assert plane.memory is not None
    state = plane.memory.end_access(plane.texture)
    layout = state.vk_image_layout
    if layout and int(layout[1]) != VK_IMAGE_LAYOUT_UNDEFINED:
        # An access that ended unused (the frame let go before it was drawn) reports (UNDEFINED,
        # UNDEFINED): the image is still in its earlier layout, and an acquire from UNDEFINED would let
        # the driver discard the picture CUDA writes next.
        plane.layout = int(layout[1])
    if not collect_fences:
        return
    for fence in state.fences:
        exported = fence.export()
        kind = exported.get("type")
        if kind == "vk-semaphore-opaque-fd":
            plane.release_fence_fds.append(OwnedFd(os.dup(int(exported["fd"]))))
        elif kind == "sync-fd":
            plane.release_sync_fds.append(OwnedFd(os.dup(int(exported["fd"]))))
        else:
            raise InternalError(
                f"Dawn ended the access with a {kind} fence, which the slot's writer cannot wait on"
            )
