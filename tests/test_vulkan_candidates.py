"""vulkan_candidates on lavapipe, the no-loader paths, driver versions and the video-capability query."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from alpha2.gpu.adapters import AdapterFactsLike, AdapterType, VideoCodec, WgpuAdapterFacts
from alpha2.gpu.errors import InvalidInputError, UnsupportedError
from alpha2.gpu.identity import DeviceId
from alpha2.native_gpu.device.candidates import (
    ExternalHandleType,
    VideoCodecSupport,
    VideoOperation,
    VulkanCandidate,
    VulkanMemoryHeap,
    VulkanQueueFamily,
    adapter_memory_budget,
    decode_driver_version,
    vulkan_candidates,
)

REPO = Path(__file__).resolve().parent.parent


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def test_driver_version_decoding() -> None:
    nvidia = (580 << 22) | (159 << 14) | (4 << 6) | 0
    assert decode_driver_version(0x10DE, nvidia) == "580.159.4.0"
    intel_win = (101 << 14) | 5333
    assert decode_driver_version(0x8086, intel_win, platform="win32") == "101.5333"
    mesa = (23 << 22) | (2 << 12) | 1
    assert decode_driver_version(0x8086, mesa, platform="linux") == "23.2.1"
    assert decode_driver_version(0x1002, mesa) == "23.2.1"


def test_synthetic_candidate_properties() -> None:
    cand = VulkanCandidate(
        index=1,
        name="NVIDIA H200",
        device_type=AdapterType.DISCRETE_GPU,
        vendor_id=0x10DE,
        device_id=0x2335,
        uuid=b"\x01" * 16,
        memory_heaps=(
            VulkanMemoryHeap(0, 140 << 30, True, budget_bytes=130 << 30, usage_bytes=1 << 20),
            VulkanMemoryHeap(1, 64 << 30, False, budget_bytes=60 << 30),
        ),
        memory_budget_supported=True,
        video=(
            VideoCodecSupport(VideoCodec.H264, VideoOperation.DECODE, (3,)),
            VideoCodecSupport(
                VideoCodec.AV1, VideoOperation.DECODE, (3,), problem="VK_KHR_video_decode_av1 missing"
            ),
        ),
    )
    assert isinstance(cand, AdapterFactsLike)
    assert cand.decode_codecs == {VideoCodec.H264} and cand.encode_codecs == frozenset()
    assert cand.memory_budget_bytes == 130 << 30
    assert adapter_memory_budget(cand) == 130 << 30
    assert cand.identity == DeviceId(0x10DE, 0x2335, "NVIDIA H200", uuid=b"\x01" * 16)
    assert cand.vendor == "NVIDIA"
    assert VulkanCandidate(index=0, name="x").memory_budget_bytes is None
    # A wgpu adapter matched to it gets its budget; an unmatched one has none.
    wgpu_adapter = type(
        "A", (), {"info": {"device": "NVIDIA H200", "vendor_id": 0x10DE, "device_id": 0x2335}}
    )()
    assert adapter_memory_budget(wgpu_adapter, [cand]) == 130 << 30
    other = type("A", (), {"info": {"device": "other", "vendor_id": 1, "device_id": 2}})()
    assert adapter_memory_budget(other, [cand]) is None
    with pytest.raises(InvalidInputError):
        adapter_memory_budget(object(), [cand])
    facts = WgpuAdapterFacts(0, "x", AdapterType.CPU, 0, 0, None, frozenset(), frozenset(), "Vulkan")
    assert adapter_memory_budget(facts, [cand]) is None


def test_queue_family_flags() -> None:
    fam = VulkanQueueFamily(index=3, queue_count=1, flags=0x20 | 0x4, video_codec_operations=0x3)
    assert fam.video_decode and fam.transfer and not fam.graphics
    assert fam.flag_names == ("transfer", "video_decode")


def test_import_without_loader_and_call_raises() -> None:
    # The `vulkan` package opens libvulkan on import; make that import fail as it does without a loader.
    code = (
        "import sys; sys.modules['vulkan'] = None; sys.modules['vulkan._vulkan'] = None\n"
        "import alpha2.native_gpu, alpha2.native_gpu.device.candidates, alpha2.native_gpu.device.shared\n"
        "import alpha2.native_gpu.device.probe, alpha2.native_gpu.device.timeline\n"
        "from alpha2.native_gpu.device.candidates import vulkan_candidates\n"
        "from alpha2.native_gpu._vk.core import VulkanUnavailableError\n"
        "try:\n    vulkan_candidates()\n"
        "except VulkanUnavailableError as exc:\n    print('OK', exc.kind.value, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("OK unsupported no Vulkan loader")


@pytest.mark.vulkan
def test_no_driver_raises_typed_error() -> None:
    code = (
        "from alpha2.native_gpu.device.candidates import vulkan_candidates\n"
        "from alpha2.gpu.errors import UnsupportedError\n"
        "try:\n    vulkan_candidates()\nexcept UnsupportedError as exc:\n    print('OK', exc)\n"
    )
    env = _env(VK_DRIVER_FILES="/nonexistent/icd.json", VK_ICD_FILENAMES="/nonexistent/icd.json")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("OK") and "driver" in out.stdout


@pytest.fixture(scope="module")
def candidates() -> list[VulkanCandidate]:
    return vulkan_candidates()


@pytest.mark.vulkan
def test_candidates_on_lavapipe(candidates: list[VulkanCandidate]) -> None:
    assert candidates, "conftest found a device, so must vulkan_candidates"
    assert [c.index for c in candidates] == list(range(len(candidates)))
    for cand in candidates:
        assert cand.usable, cand.error
        assert cand.name and cand.api_version.major == 1
        assert cand.queue_families and any(f.compute for f in cand.queue_families)
        assert cand.memory_heaps and cand.device_local_bytes > 0
        assert cand.driver_version
        assert isinstance(cand.identity, DeviceId)
        d = cand.to_dict()
        assert d["index"] == cand.index and "decode_codecs" in d
    lvp = next((c for c in candidates if c.device_type is AdapterType.CPU), None)
    if lvp is None:
        pytest.skip("no lavapipe among the candidates")
    # Facts measured on Mesa lavapipe: timeline semaphores and opaque-fd memory yes, no video queues.
    assert lvp.timeline_semaphores
    assert lvp.uuid is not None and len(lvp.uuid) == 16
    assert lvp.decode_codecs == frozenset() and lvp.encode_codecs == frozenset() and lvp.video == ()
    opaque = lvp.external_memory_support(ExternalHandleType.OPAQUE_FD)
    assert opaque is not None and opaque.supported
    assert lvp.external_semaphore_support(ExternalHandleType.SYNC_FD) is not None
    assert all(layer.name.startswith("VK_LAYER_") for layer in lvp.instance_layers)
    assert adapter_memory_budget(lvp) == lvp.memory_budget_bytes


@pytest.mark.vulkan
def test_video_capability_query_with_a_fake_driver() -> None:
    """The cffi struct chain of the video query, against a fake vkGetPhysicalDeviceVideoCapabilitiesKHR."""
    from alpha2.native_gpu._vk.core import vulkan_api
    from alpha2.native_gpu._vk.query import PhysicalDevice
    from alpha2.native_gpu.device.video import video_support

    api = vulkan_api()
    ffi = api.ffi
    calls: list[tuple[int, int, int]] = []

    def fake_caps(pd: Any, profile: Any, caps: Any) -> int:
        op = int(profile.videoCodecOperation)
        std = int(ffi.cast("VkVideoDecodeH264ProfileInfoKHR*", profile.pNext).stdProfileIdc)
        calls.append((op, std, int(profile.lumaBitDepth)))
        op_caps = ffi.cast("VkBaseOutStructure*", caps.pNext)
        codec_caps = ffi.cast("VkBaseOutStructure*", op_caps.pNext)
        assert int(profile.chromaSubsampling) == 0x2
        if op == 0x1:  # H.264 decode: only High
            assert int(op_caps.sType) == 1000024001 and int(codec_caps.sType) == 1000040000
            assert int(ffi.cast("VkBaseOutStructure*", profile.pNext).sType) == 1000040003
            if std != 100:
                return -1000023004
            ffi.cast("uint32_t*", codec_caps)[4] = 52
        elif op == 0x2:  # H.265 decode: Main and Main 10
            assert int(codec_caps.sType) == 1000187000
        elif op == 0x10000:  # H.264 encode: refused
            assert int(op_caps.sType) == 1000299003
            return -1000023002
        caps.maxCodedExtent.width, caps.maxCodedExtent.height = 4096, 2304
        caps.minCodedExtent.width, caps.minCodedExtent.height = 48, 16
        caps.maxDpbSlots = 17
        caps.maxActiveReferencePictures = 16
        return 0

    fake_driver = type("Fn", (), {"vkGetPhysicalDeviceVideoCapabilitiesKHR": staticmethod(fake_caps)})()
    device = PhysicalDevice(api, fake_driver, None)
    problems: list[str] = []
    extensions = frozenset(
        {
            "VK_KHR_video_queue",
            "VK_KHR_video_decode_queue",
            "VK_KHR_video_decode_h264",
            "VK_KHR_video_decode_h265",
            "VK_KHR_video_encode_queue",
            "VK_KHR_video_encode_h264",
        }
    )
    families = (
        VulkanQueueFamily(0, 16, 0x7),
        VulkanQueueFamily(3, 1, 0x20, video_codec_operations=0x1 | 0x2 | 0x4),
        VulkanQueueFamily(4, 1, 0x40, video_codec_operations=0x10000),
    )
    video = video_support(device, extensions, families, problems)
    assert problems == []  # refusals are results, not failed queries
    by_key = {(v.codec, v.operation): v for v in video}
    h264 = by_key[(VideoCodec.H264, VideoOperation.DECODE)]
    assert h264.supported and h264.queue_families == (3,)
    assert [p.profile for p in h264.profiles if p.supported] == ["High"]
    high = next(p for p in h264.profiles if p.supported)
    assert high.max_coded_extent == (4096, 2304) and high.max_dpb_slots == 17 and high.max_level == 52
    assert (
        next(p for p in h264.profiles if not p.supported).reason
        == "VK_ERROR_VIDEO_PROFILE_CODEC_NOT_SUPPORTED_KHR"
    )
    h265 = by_key[(VideoCodec.H265, VideoOperation.DECODE)]
    assert h265.supported and h265.bit_depths == (8, 10)
    av1 = by_key[(VideoCodec.AV1, VideoOperation.DECODE)]
    assert not av1.supported and av1.problem is not None and "VK_KHR_video_decode_av1" in av1.problem
    enc = by_key[(VideoCodec.H264, VideoOperation.ENCODE)]
    assert not enc.supported and all(not p.supported for p in enc.profiles)
    assert (0x2, 2, 0x4) in calls  # Main 10 queried at 10 bits
    cand = VulkanCandidate(index=0, name="fake", video=video)
    assert cand.decode_codecs == {VideoCodec.H264, VideoCodec.H265}
    assert cand.encode_codecs == frozenset()


def test_unsupported_error_is_typed() -> None:
    from alpha2.native_gpu._vk.core import VulkanUnavailableError

    assert issubclass(VulkanUnavailableError, UnsupportedError)


def test_encode_extent_comes_from_the_candidates_encode_capabilities() -> None:
    from alpha2.native_gpu.device.candidates import (
        VideoCodecSupport,
        VideoOperation,
        VideoProfileCapabilities,
    )
    from alpha2.native_gpu.encode.copier import ExtentSource, VideoEncodeExtent

    def profile(name: str, extent: tuple[int, int], supported: bool = True) -> VideoProfileCapabilities:
        return VideoProfileCapabilities(
            codec=VideoCodec.H265,
            operation=VideoOperation.ENCODE,
            profile=name,
            bit_depth=8,
            supported=supported,
            max_coded_extent=extent,
            min_coded_extent=(64, 64),
        )

    video = (
        VideoCodecSupport(
            codec=VideoCodec.H265,
            operation=VideoOperation.ENCODE,
            queue_families=(4,),
            profiles=(profile("Main", (4096, 2304)), profile("Main 10", (8192, 8192), supported=False)),
        ),
    )
    cand = VulkanCandidate(index=0, name="encoder gpu", video=video)
    assert set(cand.video_encode_capabilities) == {"hevc"}
    extent = VideoEncodeExtent.resolve("hevc_vulkan", candidate=cand)
    assert extent.source is ExtentSource.VULKAN
    assert (extent.max_width, extent.max_height, extent.min_width) == (4096, 2304, 64)
    with pytest.raises(InvalidInputError, match="4096"):
        extent.check(7680, 4320)
    # A software encoder, or no encode queue (lavapipe, the H200): the encoder's own limits.
    assert VideoEncodeExtent.resolve("libx265", candidate=cand).source is ExtentSource.ENCODER
    assert VideoEncodeExtent.resolve("hevc", candidate=VulkanCandidate(index=0, name="x")).source is (
        ExtentSource.ENCODER
    )
