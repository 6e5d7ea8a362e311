"""Adapter ranking, policies and ALPHA2_GPU_ADAPTER pins against synthetic candidate sets (no GPU)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from alpha2.gpu.adapters import (
    ADAPTER_ENV,
    AdapterFacts,
    AdapterFactsLike,
    AdapterPin,
    AdapterPinError,
    AdapterPolicy,
    AdapterType,
    PinKind,
    PolicyKind,
    VideoCodec,
    adapter_pin,
    adapter_pinned,
    parse_adapter_pin,
    rank_adapters,
    rank_wgpu_adapters,
    resolve_adapter_pin,
    wgpu_adapter_facts,
)
from alpha2.gpu.errors import InvalidInputError

H264, H265, AV1 = VideoCodec.H264, VideoCodec.H265, VideoCodec.AV1
U0 = uuid.UUID("11111111-2222-3333-4444-555555555555").bytes
U1 = uuid.UUID("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee").bytes


def facts(index: int, name: str, kind: AdapterType, **kw: Any) -> AdapterFacts:
    return AdapterFacts(index=index, name=name, device_type=kind, **kw)


@pytest.fixture(autouse=True)
def _no_env_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ADAPTER_ENV, raising=False)


def names(ranked: list[Any]) -> list[str]:
    return [r.adapter.name for r in ranked]


MIXED = [
    facts(0, "Intel UHD 770", AdapterType.INTEGRATED_GPU, vendor_id=0x8086, decode_codecs={H264, H265}),
    facts(1, "NVIDIA H200", AdapterType.DISCRETE_GPU, vendor_id=0x10DE, uuid=U0, decode_codecs={H264, H265}),
    facts(2, "llvmpipe", AdapterType.CPU, vendor_id=0x10005),
    facts(
        3,
        "AMD Radeon RX 7900",
        AdapterType.DISCRETE_GPU,
        vendor_id=0x1002,
        uuid=U1,
        encode_codecs={H264, H265, AV1},
        decode_codecs={H264},
    ),
]


_PROTOCOL_TYPES: dict[str, Any] = {
    "index": int,
    "name": str,
    "device_type": AdapterType,
    "vendor_id": int,
    "device_id": int,
    "uuid": (bytes, type(None)),
    "encode_codecs": frozenset,
    "decode_codecs": frozenset,
}


def test_facts_satisfy_protocol() -> None:
    """Both fact sources give every member ranking reads, typed, and a VulkanCandidate ranks the same."""
    from alpha2.native_gpu.device.candidates import VideoCodecSupport, VideoOperation, VulkanCandidate

    members = {name for name in vars(AdapterFactsLike) if isinstance(vars(AdapterFactsLike)[name], property)}
    assert members == set(_PROTOCOL_TYPES)

    def as_vulkan(f: AdapterFacts) -> VulkanCandidate:
        video = tuple(VideoCodecSupport(c, VideoOperation.DECODE, (1,)) for c in f.decode_codecs) + tuple(
            VideoCodecSupport(c, VideoOperation.ENCODE, (2,)) for c in f.encode_codecs
        )
        # A codec whose extension is missing is advertised but not supported: it must not count.
        video += (VideoCodecSupport(VideoCodec.VP9, VideoOperation.DECODE, (1,), problem="missing"),)
        return VulkanCandidate(
            index=f.index,
            name=f.name,
            device_type=f.device_type,
            vendor_id=f.vendor_id,
            device_id=f.device_id,
            uuid=f.uuid,
            video=video,
        )

    vulkan = [as_vulkan(f) for f in MIXED]
    for plain, candidate in zip(MIXED, vulkan):
        for name, kind in _PROTOCOL_TYPES.items():
            assert isinstance(getattr(plain, name), kind), (name, getattr(plain, name))
            assert getattr(candidate, name) == getattr(plain, name), name
        assert all(isinstance(c, VideoCodec) for c in candidate.decode_codecs | candidate.encode_codecs)
        assert isinstance(plain, AdapterFactsLike) and isinstance(candidate, AdapterFactsLike)
    for policy in (None, AdapterPolicy.high_performance(), AdapterPolicy.low_power()):
        plain_ranked = rank_adapters(MIXED, policy)
        vulkan_ranked = rank_adapters(vulkan, policy)
        assert [r.adapter.index for r in vulkan_ranked] == [r.adapter.index for r in plain_ranked]
        assert [r.reason for r in vulkan_ranked] == [r.reason for r in plain_ranked]
    assert names(rank_adapters(vulkan))[0] == "AMD Radeon RX 7900"  # encodes the most codecs


def test_auto_prefers_most_encode_codecs() -> None:
    ranked = rank_adapters(MIXED)
    assert names(ranked) == ["AMD Radeon RX 7900", "NVIDIA H200", "Intel UHD 770", "llvmpipe"]
    assert [r.rank for r in ranked] == [1, 2, 3, 4]
    assert ranked[0].chosen and not ranked[1].chosen
    assert "encodes 3 codecs on the GPU" in ranked[0].reason
    assert "no GPU encode" in ranked[1].reason  # loses on encode against #1 ('encodes 0 codec(s) ... (none)')


def test_auto_decode_then_high_performance_then_index() -> None:
    cands = [
        facts(0, "cpu", AdapterType.CPU),
        facts(1, "igpu-nodec", AdapterType.INTEGRATED_GPU),
        facts(2, "igpu-dec", AdapterType.INTEGRATED_GPU, decode_codecs={H264}),
        facts(3, "dgpu-a", AdapterType.DISCRETE_GPU),
        facts(4, "dgpu-b", AdapterType.DISCRETE_GPU),
    ]
    assert names(rank_adapters(cands)) == ["igpu-dec", "dgpu-a", "dgpu-b", "igpu-nodec", "cpu"]
    # Decoding not allowed: decode support no longer counts.
    assert names(rank_adapters(cands, decode_allowed=False)) == [
        "dgpu-a",
        "dgpu-b",
        "igpu-nodec",
        "igpu-dec",
        "cpu",
    ]


def test_explicit_policies() -> None:
    assert names(rank_adapters(MIXED, AdapterPolicy.high_performance())) == [
        "NVIDIA H200",
        "AMD Radeon RX 7900",
        "Intel UHD 770",
        "llvmpipe",
    ]
    assert names(rank_adapters(MIXED, "low-power"))[0] == "Intel UHD 770"
    named = rank_adapters(MIXED, AdapterPolicy.named("h200"))
    assert names(named)[0] == "NVIDIA H200" and named[0].pinned
    assert "named by the policy" in named[0].reason
    assert names(rank_adapters(MIXED, PolicyKind.HIGH_PERFORMANCE))[0] == "NVIDIA H200"


def test_cpu_only_and_empty() -> None:
    ranked = rank_adapters([facts(0, "llvmpipe", AdapterType.CPU)])
    assert len(ranked) == 1 and ranked[0].rank == 1 and "CPU" in ranked[0].reason
    assert rank_adapters([]) == []


def test_several_identical_gpus_keep_enumeration_order() -> None:
    # Given out of order (an outside pass found that, given in order, the sort's stability passed the
    # test with the index left out of every key): ties go by the enumeration index, not the list's order.
    cands = [facts(i, "NVIDIA H200", AdapterType.DISCRETE_GPU, decode_codecs={H264}) for i in (2, 0, 3, 1)]
    for policy in (None, AdapterPolicy.high_performance(), AdapterPolicy.low_power()):
        assert [r.adapter.index for r in rank_adapters(cands, policy)] == [0, 1, 2, 3]


def test_policy_parse_and_validation() -> None:
    assert AdapterPolicy.parse("Auto").kind is PolicyKind.AUTO
    assert AdapterPolicy.parse("high_performance").kind is PolicyKind.HIGH_PERFORMANCE
    assert AdapterPolicy.parse("named:NVIDIA") == AdapterPolicy.named("NVIDIA")
    assert AdapterPolicy.parse("1") == AdapterPolicy.named(1)
    assert str(AdapterPolicy.named("x")) == "named:x"
    with pytest.raises(InvalidInputError):
        AdapterPolicy(PolicyKind.NAMED)
    with pytest.raises(InvalidInputError):
        AdapterPolicy(PolicyKind.AUTO, "x")


def test_adapter_type_parsing() -> None:
    assert AdapterType.from_vulkan(2) is AdapterType.DISCRETE_GPU
    assert AdapterType.from_vulkan(4) is AdapterType.CPU
    assert AdapterType.from_vulkan(99) is AdapterType.OTHER
    assert AdapterType.from_wgpu("DiscreteGPU") is AdapterType.DISCRETE_GPU
    assert AdapterType.from_wgpu("integrated-gpu") is AdapterType.INTEGRATED_GPU
    assert AdapterType.from_wgpu("CPU") is AdapterType.CPU
    assert AdapterType.from_wgpu("Unknown") is AdapterType.OTHER


# -- pins -------------------------------------------------------------------------------------------


def test_pin_parsing() -> None:
    assert parse_adapter_pin("2").kind is PinKind.INDEX and parse_adapter_pin("2").index == 2
    pin = parse_adapter_pin(str(uuid.UUID(bytes=U0)))
    assert pin.kind is PinKind.UUID and pin.uuid == U0
    assert parse_adapter_pin(U0.hex()).uuid == U0
    assert parse_adapter_pin(" Radeon ").kind is PinKind.NAME
    with pytest.raises(AdapterPinError):
        parse_adapter_pin("  ")


def test_a_pin_copied_from_the_probe_s_label_is_an_index() -> None:
    # alpha2 probe labels the adapters '#0', '#1' ...; '#1' was taken for a name and matched nothing.
    pin = parse_adapter_pin("#1")
    assert pin.kind is PinKind.INDEX and pin.index == 1
    assert parse_adapter_pin("#x").kind is PinKind.NAME and parse_adapter_pin("#²").kind is PinKind.NAME


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", "NVIDIA H200"),
        (str(uuid.UUID(bytes=U1)), "AMD Radeon RX 7900"),
        (U0.hex(), "NVIDIA H200"),  # all digits: a UUID before an index
        (U1.hex().upper(), "AMD Radeon RX 7900"),  # U0's hex has no letters to put in upper case
        ("llvm", "llvmpipe"),
        ("intel uhd", "Intel UHD 770"),
    ],
)
def test_env_pin_each_form(monkeypatch: pytest.MonkeyPatch, value: str, expected: str) -> None:
    monkeypatch.setenv(ADAPTER_ENV, value)
    assert adapter_pinned()
    assert adapter_pin() is not None
    ranked = rank_adapters(MIXED)
    assert ranked[0].adapter.name == expected
    assert ranked[0].pinned and sum(r.pinned for r in ranked) == 1
    assert ADAPTER_ENV in ranked[0].reason
    assert all("not the selected adapter" in r.reason for r in ranked[1:])


def test_unpinned(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not adapter_pinned()
    monkeypatch.setenv(ADAPTER_ENV, "   ")
    assert not adapter_pinned() and adapter_pin() is None
    assert not adapter_pinned({ADAPTER_ENV: ""})
    assert adapter_pinned({ADAPTER_ENV: "0"})


@pytest.mark.parametrize("value", ["7", "00000000-0000-0000-0000-000000000000", "geforce"])
def test_unknown_pin_is_an_error_listing_candidates(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ADAPTER_ENV, value)
    with pytest.raises(AdapterPinError) as info:
        rank_adapters(MIXED)
    message = str(info.value)
    assert "matches no adapter" in message and f"unset {ADAPTER_ENV}" in message
    for cand in MIXED:
        assert cand.name in message
    assert isinstance(info.value, ValueError)


def test_unknown_policy_selector_names_the_policies_not_unset() -> None:
    # 'alpha2 probe --policy highperformance' said "... or unset policy.": a policy is not unset, and a
    # mistyped policy name deserves the policies' names.
    with pytest.raises(AdapterPinError) as info:
        rank_adapters(MIXED, "highperformance")
    message = str(info.value)
    assert "unset" not in message and "auto, high-performance or low-power" in message
    with pytest.raises(AdapterPinError) as info:
        rank_adapters(MIXED, pin="geforce")
    assert "unset" not in str(info.value)


def test_a_cuda_device_no_adapter_is_says_so_not_how_to_pin() -> None:
    """Found by an outside pass: alpha2.open(path, device=1), where CUDA device 1 is no WebGPU
    adapter, said "device='cuda:1' matches no adapter (uuid) ... Name one by index, UUID or a
    case-insensitive part of the name.", advice for ALPHA2_GPU_ADAPTER, without the UUID it looked for."""
    pin = AdapterPin(PinKind.UUID, "cuda:1", uuid=bytes([7]) * 16, source="device")
    with pytest.raises(AdapterPinError) as info:
        resolve_adapter_pin(pin, MIXED)
    message = info.value.message
    assert "device='cuda:1' matches no adapter (uuid 07070707-0707-0707-0707-070707070707)" in message
    assert "Name one by" not in message and "another CUDA device" in message
    assert "NVIDIA H200" in message  # the candidates, still


def test_ambiguous_pin_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ADAPTER_ENV, "a")  # in several names
    with pytest.raises(AdapterPinError, match="ambiguous"):
        rank_adapters(MIXED)
    two = [
        facts(0, "NVIDIA H200", AdapterType.DISCRETE_GPU),
        facts(1, "NVIDIA H200", AdapterType.DISCRETE_GPU),
    ]
    with pytest.raises(AdapterPinError, match="ambiguous"):
        resolve_adapter_pin("h200", two)
    # Two entries of one device (same UUID, e.g. two backends) are not ambiguous.
    same = [
        facts(0, "GPU", AdapterType.DISCRETE_GPU, uuid=U0),
        facts(1, "GPU", AdapterType.DISCRETE_GPU, uuid=U0),
    ]
    assert len(resolve_adapter_pin("gpu", same)) == 2


def test_pin_and_named_policy_must_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ADAPTER_ENV, "h200")
    with pytest.raises(AdapterPinError, match="policy names"):
        rank_adapters(MIXED, AdapterPolicy.named("radeon"))
    assert rank_adapters(MIXED, AdapterPolicy.named("1"))[0].adapter.name == "NVIDIA H200"


def test_explicit_pin_overrides_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ADAPTER_ENV, "h200")
    assert rank_adapters(MIXED, pin="llvm")[0].adapter.name == "llvmpipe"
    assert rank_adapters(MIXED, use_env_pin=False)[0].adapter.name == "AMD Radeon RX 7900"


# -- wgpu adapters ----------------------------------------------------------------------------------


class FakeWgpuAdapter:
    def __init__(self, **info: Any) -> None:
        self.info = info


def wgpu(
    device: str, vendor_id: int, device_id: int, adapter_type: str, backend: str = "Vulkan"
) -> FakeWgpuAdapter:
    return FakeWgpuAdapter(
        device=device,
        vendor_id=vendor_id,
        device_id=device_id,
        adapter_type=adapter_type,
        backend_type=backend,
    )


VK = [
    facts(0, "llvmpipe", AdapterType.CPU, vendor_id=0x10005, device_id=0, uuid=U1),
    facts(
        1,
        "NVIDIA H200",
        AdapterType.DISCRETE_GPU,
        vendor_id=0x10DE,
        device_id=0x2335,
        uuid=U0,
        decode_codecs={H264},
    ),
]


def test_wgpu_facts_match_by_ids_and_rank() -> None:
    adapters = [
        wgpu("llvmpipe", 0x10005, 0, "CPU"),
        wgpu("NVIDIA H200", 0x10DE, 0x2335, "DiscreteGPU"),
        wgpu("NVIDIA H200", 0x10DE, 0x2335, "DiscreteGPU", backend="OpenGL"),
        wgpu("Unknown GPU", 0x1234, 1, "IntegratedGPU"),
    ]
    first = wgpu_adapter_facts(adapters[1], 1, VK)
    assert first.matched_by == "ids" and first.vulkan_index == 1 and first.uuid == U0
    assert first.decode_codecs == {H264}
    unmatched = wgpu_adapter_facts(adapters[3], 3, VK)
    assert (
        unmatched.vulkan_index is None and unmatched.uuid is None and unmatched.decode_codecs == frozenset()
    )
    ranked = rank_wgpu_adapters(adapters, vulkan_candidates=VK)
    assert ranked[0].adapter.name == "NVIDIA H200" and ranked[0].adapter.backend == "Vulkan"
    assert ranked[0].adapter.adapter is adapters[1]


def test_wgpu_facts_match_by_uuid_first() -> None:
    adapter = wgpu("renamed", 0x10DE, 0x2335, "DiscreteGPU")
    got = wgpu_adapter_facts(adapter, 0, VK, uuid_getter=lambda a: U0)
    assert got.matched_by == "uuid" and got.vulkan_index == 1


def test_wgpu_pin_by_index_uses_vulkan_index(monkeypatch: pytest.MonkeyPatch) -> None:
    adapters = [wgpu("NVIDIA H200", 0x10DE, 0x2335, "DiscreteGPU"), wgpu("llvmpipe", 0x10005, 0, "CPU")]
    monkeypatch.setenv(ADAPTER_ENV, "0")  # Vulkan loader index 0 is llvmpipe
    ranked = rank_wgpu_adapters(adapters, vulkan_candidates=VK)
    assert ranked[0].adapter.name == "llvmpipe" and ranked[0].pinned
    monkeypatch.setenv(ADAPTER_ENV, str(uuid.UUID(bytes=U0)))
    assert rank_wgpu_adapters(adapters, vulkan_candidates=VK)[0].adapter.name == "NVIDIA H200"


def test_identical_wgpu_adapters_match_their_own_vulkan_twins(monkeypatch: pytest.MonkeyPatch) -> None:
    # wgpu-native reports no UUID: two identical GPUs matched by ids both took Vulkan #0, so
    # ALPHA2_GPU_ADAPTER=1 (or #1's UUID), which alpha2 probe accepts, named no WebGPU adapter.
    twins_vk = [
        facts(i, "NVIDIA H200", AdapterType.DISCRETE_GPU, vendor_id=0x10DE, device_id=0x2335, uuid=u)
        for i, u in enumerate((U0, U1))
    ]
    adapters = [wgpu("NVIDIA H200", 0x10DE, 0x2335, "DiscreteGPU") for _ in range(2)]
    adapters.append(wgpu("NVIDIA H200", 0x10DE, 0x2335, "DiscreteGPU", backend="OpenGL"))
    ranked = rank_wgpu_adapters(adapters, vulkan_candidates=twins_vk)
    by_adapter = {id(r.adapter.adapter): r.adapter for r in ranked}
    assert [by_adapter[id(a)].vulkan_index for a in adapters] == [0, 1, 0]
    assert [by_adapter[id(a)].uuid for a in adapters] == [U0, U1, U0]
    for value in ("1", str(uuid.UUID(bytes=U1))):
        monkeypatch.setenv(ADAPTER_ENV, value)
        chosen = rank_wgpu_adapters(adapters, vulkan_candidates=twins_vk)[0]
        assert chosen.pinned and chosen.adapter.adapter is adapters[1]
        assert chosen.adapter.vulkan_candidate is twins_vk[1]


def test_real_wgpu_adapters_rank() -> None:
    wgpu_mod = pytest.importorskip("wgpu")
    try:
        adapters = wgpu_mod.gpu.enumerate_adapters_sync()
    except Exception as exc:  # no backend at all
        pytest.skip(f"wgpu has no adapters: {exc}")
    if not adapters:
        pytest.skip("wgpu has no adapters")
    ranked = rank_wgpu_adapters(adapters, use_env_pin=False)
    assert [r.rank for r in ranked] == list(range(1, len(adapters) + 1))
    assert all(r.adapter.name for r in ranked)


def test_identical_gpus_rank_by_enumeration_with_a_clear_reason() -> None:
    twins = [
        AdapterFacts(index=i, name="NVIDIA H200", device_type=AdapterType.DISCRETE_GPU, vendor_id=0x10DE)
        for i in range(2)
    ]
    ranked = rank_adapters(twins, AdapterPolicy.auto())
    assert [r.adapter.index for r in ranked] == [0, 1]
    assert ranked[1].reason.startswith("ties with #0 NVIDIA H200 until "), ranked[1].reason
    assert ranked[1].reason.endswith("where it comes later")


# -- misuse ------------------------------------------------------------------------------------------


def test_an_int_selector_is_an_index_everywhere() -> None:
    assert parse_adapter_pin(1) == parse_adapter_pin("1")
    assert [a.name for a in resolve_adapter_pin(1, MIXED)] == ["NVIDIA H200"]
    assert names(rank_adapters(MIXED, pin=1, use_env_pin=False))[0] == "NVIDIA H200"
    assert AdapterPolicy.named(1) == AdapterPolicy(PolicyKind.NAMED, 1)  # type: ignore[arg-type]
    for bad in (True, -1, 1.0, None):
        with pytest.raises(InvalidInputError, match="int index"):
            parse_adapter_pin(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="int index"):
            AdapterPolicy.named(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="int index"):
        rank_adapters(MIXED, pin=2.0, use_env_pin=False)  # type: ignore[arg-type]


def test_policy_kind_and_parse_are_checked() -> None:
    assert AdapterPolicy("low-power").kind is PolicyKind.LOW_POWER  # type: ignore[arg-type]
    assert names(rank_adapters(MIXED, AdapterPolicy("low-power")))[0] == "Intel UHD 770"  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="'auto', 'high-performance', 'low-power', 'named'"):
        AdapterPolicy("LOW_POWER")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="parse takes a str"):
        AdapterPolicy.parse(None)  # type: ignore[arg-type]


def test_facts_fields_are_checked() -> None:
    coerced = AdapterFacts(0, "x", "discrete-gpu", decode_codecs={"h264"})  # type: ignore[arg-type]
    assert coerced.device_type is AdapterType.DISCRETE_GPU and coerced.decode_codecs == {H264}
    assert names(rank_adapters([coerced])) == ["x"]
    for kwargs, match in [
        ({"device_type": "gpu"}, "'discrete-gpu', 'integrated-gpu'"),
        ({"index": True}, "index must be a non-negative int"),
        ({"vendor_id": "10de"}, "vendor_id"),
        ({"name": None}, "name must be a str"),
        ({"uuid": "01" * 16}, "uuid must be 16 bytes"),
        ({"encode_codecs": "h264"}, "set of VideoCodec"),
        ({"encode_codecs": {"x264"}}, "'h264', 'h265'"),
    ]:
        fields: dict[str, Any] = {"index": 0, "name": "x", "device_type": AdapterType.CPU, **kwargs}
        with pytest.raises(InvalidInputError, match=match):
            AdapterFacts(**fields)


@pytest.mark.parametrize("value", ["²", "٣", "1²"])
def test_an_index_pin_is_ascii_digits(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """Found by an outside pass: ALPHA2_GPU_ADAPTER=² ended in a raw ValueError from int() (str.isdigit
    takes a superscript), and '٣' (an Arabic-Indic 3) pinned loader index 3. Both are names now, which
    name no adapter: the typed error that lists them."""
    assert parse_adapter_pin(value).kind is PinKind.NAME
    monkeypatch.setenv(ADAPTER_ENV, value)
    with pytest.raises(AdapterPinError, match="matches no adapter"):
        rank_adapters(MIXED)


def test_uuid_prefix_pins_by_uuid() -> None:
    # alpha2.AdapterInfo.uuid is documented as pinned with ALPHA2_GPU_ADAPTER=uuid:<hex>.
    pin = parse_adapter_pin("uuid:" + U1.hex())
    assert pin.kind is PinKind.UUID and pin.uuid == U1
    assert (
        names(rank_adapters(MIXED, pin=f"UUID:{uuid.UUID(bytes=U0)}", use_env_pin=False))[0] == "NVIDIA H200"
    )
    with pytest.raises(AdapterPinError, match="is not a UUID"):
        parse_adapter_pin("uuid:nvidia")
