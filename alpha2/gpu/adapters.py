"""Adapter identity and ranking, and the ``ALPHA2_GPU_ADAPTER`` pin. Pure Python.

:func:`rank_adapters` orders anything that looks like :class:`AdapterFactsLike` (Vulkan candidates from
``alpha2.native_gpu.device.candidates``, :class:`WgpuAdapterFacts`, synthetic :class:`AdapterFacts` in tests):

* ``AUTO``: the adapter that encodes the most codecs on the GPU, then one that decodes (when decoding
  is allowed), then high-performance order (discrete, integrated, virtual, CPU, other), then the
  enumeration order;
* ``HIGH_PERFORMANCE``: discrete, integrated, virtual, CPU, other; ``LOW_POWER``: integrated, discrete,
  virtual, CPU, other; ties by enumeration order;
* ``NAMED``: the adapter the selector names (same forms as the pin), then the rest in ``AUTO`` order.

``ALPHA2_GPU_ADAPTER`` pins one adapter, by index (the Vulkan loader's enumeration index, which is what
FFmpeg's Vulkan device string takes), by device UUID, or by a case-insensitive substring of its name.
A pinned adapter always ranks first; a value that names no adapter, or several, is an
:class:`AdapterPinError` listing the candidates, never a silent fallback.

Why one module of about 650 lines: identity, pinning and ranking are one decision (a pin resolves
against the same facts and identity keys the ranking orders by, and ranks first), and the WebGPU
section is a thin adapter onto :func:`rank_adapters`; it is imported from here by
``native_gpu.device.candidates`` and the apps, so a module of its own would have to be re-exported
from here, through an import cycle.
"""

from __future__ import annotations

import enum
import os
import re
import uuid as _uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from alpha2.gpu.errors import InvalidInputError, member_of

ADAPTER_ENV = "ALPHA2_GPU_ADAPTER"
"""The environment variable that pins one adapter."""


class AdapterType(enum.Enum):
    """Kind of adapter, as Vulkan's VkPhysicalDeviceType and WebGPU's adapter_type report it."""

    DISCRETE_GPU = "discrete-gpu"
    INTEGRATED_GPU = "integrated-gpu"
    VIRTUAL_GPU = "virtual-gpu"
    CPU = "cpu"
    OTHER = "other"

    @classmethod
    def from_vulkan(cls, device_type: int) -> AdapterType:
        """From VkPhysicalDeviceType (0 other, 1 integrated, 2 discrete, 3 virtual, 4 CPU)."""
        return {
            1: cls.INTEGRATED_GPU,
            2: cls.DISCRETE_GPU,
            3: cls.VIRTUAL_GPU,
            4: cls.CPU,
        }.get(int(device_type), cls.OTHER)

    @classmethod
    def from_wgpu(cls, adapter_type: str) -> AdapterType:
        """From a WebGPU adapter_type ('DiscreteGPU', 'discrete-gpu', 'CPU', 'Unknown', ...)."""
        key = re.sub(r"[^a-z]", "", str(adapter_type).lower())
        return {
            "discretegpu": cls.DISCRETE_GPU,
            "integratedgpu": cls.INTEGRATED_GPU,
            "virtualgpu": cls.VIRTUAL_GPU,
            "cpu": cls.CPU,
        }.get(key, cls.OTHER)

    @property
    def label(self) -> str:
        """Human-readable label ('discrete GPU')."""
        return {
            AdapterType.DISCRETE_GPU: "discrete GPU",
            AdapterType.INTEGRATED_GPU: "integrated GPU",
            AdapterType.VIRTUAL_GPU: "virtual GPU",
            AdapterType.CPU: "CPU",
            AdapterType.OTHER: "other",
        }[self]


class VideoCodec(enum.Enum):
    """Video codecs whose GPU decode/encode support alpha2 reports."""

    H264 = "h264"
    H265 = "h265"
    AV1 = "av1"
    VP9 = "vp9"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _selector_error(value: object) -> InvalidInputError:
    return InvalidInputError(
        f"an adapter selector is a str (index, UUID or name part) or an int index >= 0, got {value!r}"
    )


_HIGH_PERFORMANCE_ORDER = {
    AdapterType.DISCRETE_GPU: 0,
    AdapterType.INTEGRATED_GPU: 1,
    AdapterType.VIRTUAL_GPU: 2,
    AdapterType.CPU: 3,
    AdapterType.OTHER: 4,
}
_LOW_POWER_ORDER = {
    AdapterType.INTEGRATED_GPU: 0,
    AdapterType.DISCRETE_GPU: 1,
    AdapterType.VIRTUAL_GPU: 2,
    AdapterType.CPU: 3,
    AdapterType.OTHER: 4,
}


@runtime_checkable
class AdapterFactsLike(Protocol):
    """What ranking needs to know about an adapter."""

    @property
    def index(self) -> int:
        """Enumeration index (ties are broken by it)."""
        ...

    @property
    def name(self) -> str:
        """Device name."""
        ...

    @property
    def device_type(self) -> AdapterType:
        """Discrete, integrated, virtual, CPU or other."""
        ...

    @property
    def vendor_id(self) -> int:
        """PCI vendor id."""
        ...

    @property
    def device_id(self) -> int:
        """PCI device id."""
        ...

    @property
    def uuid(self) -> bytes | None:
        """16-byte device UUID where known."""
        ...

    @property
    def encode_codecs(self) -> frozenset[VideoCodec]:
        """Codecs the adapter encodes on the GPU."""
        ...

    @property
    def decode_codecs(self) -> frozenset[VideoCodec]:
        """Codecs the adapter decodes on the GPU."""
        ...


@dataclass(frozen=True)
class AdapterFacts:
    """Plain adapter facts (synthetic candidates, or facts gathered elsewhere)."""

    index: int
    """Enumeration index."""
    name: str
    """Device name."""
    device_type: AdapterType
    """Discrete, integrated, virtual, CPU or other."""
    vendor_id: int = 0
    """PCI vendor id."""
    device_id: int = 0
    """PCI device id."""
    uuid: bytes | None = None
    """16-byte device UUID where known."""
    encode_codecs: frozenset[VideoCodec] = frozenset()
    """Codecs encoded on the GPU."""
    decode_codecs: frozenset[VideoCodec] = frozenset()
    """Codecs decoded on the GPU."""

    def __post_init__(self) -> None:
        for name in ("index", "vendor_id", "device_id"):
            value = getattr(self, name)
            if not _is_int(value) or value < 0:
                raise InvalidInputError(f"AdapterFacts.{name} must be a non-negative int, got {value!r}")
        if not isinstance(self.name, str):
            raise InvalidInputError(f"AdapterFacts.name must be a str, got {type(self.name).__name__}")
        object.__setattr__(
            self, "device_type", member_of(AdapterType, self.device_type, "AdapterFacts.device_type")
        )
        if self.uuid is not None:
            if not isinstance(self.uuid, (bytes, bytearray)) or len(self.uuid) != 16:
                raise InvalidInputError(f"AdapterFacts.uuid must be 16 bytes or None, got {self.uuid!r}")
            object.__setattr__(self, "uuid", bytes(self.uuid))
        for name in ("encode_codecs", "decode_codecs"):
            codecs = getattr(self, name)
            if isinstance(codecs, (str, VideoCodec)):
                raise InvalidInputError(f"AdapterFacts.{name} must be a set of VideoCodec, got {codecs!r}")
            what = f"AdapterFacts.{name}"
            object.__setattr__(self, name, frozenset(member_of(VideoCodec, c, what) for c in codecs))


class PolicyKind(enum.Enum):
    """How to choose among adapters."""

    AUTO = "auto"
    HIGH_PERFORMANCE = "high-performance"
    LOW_POWER = "low-power"
    NAMED = "named"


@dataclass(frozen=True)
class AdapterPolicy:
    """An adapter choice policy: a kind, and for ``NAMED`` the selector (index, UUID or name part)."""

    kind: PolicyKind = PolicyKind.AUTO
    """The rule."""
    selector: str | None = None
    """For NAMED: an index, a UUID or a case-insensitive name substring (an int index is stored as text)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", member_of(PolicyKind, self.kind, "AdapterPolicy.kind"))
        if _is_int(self.selector) and self.selector >= 0:  # type: ignore[operator]
            object.__setattr__(self, "selector", str(self.selector))
        elif self.selector is not None and not isinstance(self.selector, str):
            raise _selector_error(self.selector)
        if self.kind is PolicyKind.NAMED and not (self.selector or "").strip():
            raise InvalidInputError("a NAMED adapter policy needs a selector (index, UUID or name substring)")
        if self.kind is not PolicyKind.NAMED and self.selector is not None:
            raise InvalidInputError(f"policy {self.kind.value} takes no selector")

    @classmethod
    def auto(cls) -> AdapterPolicy:
        """Most GPU encode codecs, then decode, then high-performance order."""
        return cls(PolicyKind.AUTO)

    @classmethod
    def high_performance(cls) -> AdapterPolicy:
        """Discrete, integrated, virtual, CPU."""
        return cls(PolicyKind.HIGH_PERFORMANCE)

    @classmethod
    def low_power(cls) -> AdapterPolicy:
        """Integrated, discrete, virtual, CPU."""
        return cls(PolicyKind.LOW_POWER)

    @classmethod
    def named(cls, selector: str | int) -> AdapterPolicy:
        """One adapter by index (an int, or its digits), UUID or case-insensitive name substring."""
        if isinstance(selector, str):
            return cls(PolicyKind.NAMED, selector)
        if not _is_int(selector) or selector < 0:
            raise _selector_error(selector)
        return cls(PolicyKind.NAMED, str(selector))

    @classmethod
    def parse(cls, text: str) -> AdapterPolicy:
        """'auto', 'high-performance', 'low-power', or anything else as a NAMED selector."""
        if not isinstance(text, str):
            raise InvalidInputError(
                "AdapterPolicy.parse takes a str ('auto', 'high-performance', 'low-power', 'named:...' or "
                f"an adapter selector), got {type(text).__name__}"
            )
        key = text.strip().lower().replace("_", "-")
        for kind in (PolicyKind.AUTO, PolicyKind.HIGH_PERFORMANCE, PolicyKind.LOW_POWER):
            if key == kind.value:
                return cls(kind)
        if key.startswith("named:"):
            return cls.named(text.strip()[6:])
        return cls.named(text)

    def __str__(self) -> str:
        return f"named:{self.selector}" if self.kind is PolicyKind.NAMED else self.kind.value


def as_policy(policy: AdapterPolicy | PolicyKind | str | None) -> AdapterPolicy:
    """Normalise a policy argument (None means AUTO)."""
    if policy is None:
        return AdapterPolicy.auto()
    if isinstance(policy, AdapterPolicy):
        return policy
    if isinstance(policy, PolicyKind):
        return AdapterPolicy(policy)
    if isinstance(policy, str):
        return AdapterPolicy.parse(policy)
    raise InvalidInputError(
        f"policy must be an AdapterPolicy, PolicyKind or str ('auto', 'high-performance', 'low-power', "
        f"or an adapter selector), got {type(policy).__name__}"
    )


# --------------------------------------------------------------------------------------------------
# Pinning


class AdapterPinError(InvalidInputError):
    """``ALPHA2_GPU_ADAPTER`` (or a NAMED policy) names no adapter, or several. The message lists them."""


class PinKind(enum.Enum):
    """How a pin names its adapter."""

    INDEX = "index"
    UUID = "uuid"
    NAME = "name"


@dataclass(frozen=True)
class AdapterPin:
    """A parsed adapter selector."""

    kind: PinKind
    """Index, UUID or name substring."""
    text: str
    """The value as given."""
    index: int | None = None
    """For INDEX: the Vulkan loader enumeration index."""
    uuid: bytes | None = None
    """For UUID: the 16-byte device UUID."""
    source: str = ADAPTER_ENV
    """Where the value came from (for messages)."""

    def describe(self) -> str:
        """'ALPHA2_GPU_ADAPTER=...' style description."""
        return f"{self.source}={self.text!r}"


_UUID_RE = re.compile(
    r"^\{?[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\}?$"
)


def parse_adapter_pin(text: str | int, *, source: str = ADAPTER_ENV) -> AdapterPin:
    """Parse a selector: a decimal index (or an int; ``#0`` too, as ``alpha2 probe`` labels them), a UUID
    (with or without dashes, optionally after ``uuid:``) or a name substring.

    Raises:
        AdapterPinError: an empty selector.
        InvalidInputError: ``text`` is neither a str nor a non-negative int.
    """
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return AdapterPin(PinKind.INDEX, str(text), index=text, source=source)
    if not isinstance(text, str):
        raise _selector_error(text)
    value = text.strip()
    if not value:
        raise AdapterPinError(f"{source} is empty; give an adapter index, UUID or name substring")
    if value[:5].lower() == "uuid:":  # the form alpha2.AdapterInfo.uuid's docs show
        rest = value[5:].strip()
        if not _UUID_RE.match(rest):
            raise AdapterPinError(
                f"{source}={text!r}: {rest!r} is not a UUID (32 hex digits, dashes optional)"
            )
        return AdapterPin(PinKind.UUID, value, uuid=_uuid.UUID(rest.strip("{}")).bytes, source=source)
    if _UUID_RE.match(value):  # before the index: a UUID may be all digits
        return AdapterPin(PinKind.UUID, value, uuid=_uuid.UUID(value.strip("{}")).bytes, source=source)
    digits = value[1:] if value.startswith("#") else value  # '#0', as alpha2 probe labels the adapters
    if digits.isascii() and digits.isdigit():  # not '²' (a digit int() refuses) nor '٣' (one it takes)
        return AdapterPin(PinKind.INDEX, value, index=int(digits), source=source)
    return AdapterPin(PinKind.NAME, value, source=source)


def adapter_pin(environ: Mapping[str, str] | None = None) -> AdapterPin | None:
    """The pin from ``ALPHA2_GPU_ADAPTER``, or None when unset or empty."""
    env = os.environ if environ is None else environ
    raw = env.get(ADAPTER_ENV, "")
    if not raw.strip():
        return None
    return parse_adapter_pin(raw)


def adapter_pinned(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``ALPHA2_GPU_ADAPTER`` pins an adapter."""
    env = os.environ if environ is None else environ
    return bool(env.get(ADAPTER_ENV, "").strip())


def describe_adapter(adapter: AdapterFactsLike) -> str:
    """One line naming an adapter: '#0 NVIDIA H200 (discrete GPU, 10de:2335, uuid ...)'. The number is
    the one a pin by index takes (a WebGPU adapter's matched Vulkan loader index, not its place among
    the WebGPU adapters); an adapter with none says so, and how it is pinned instead."""
    uuid_text = f", uuid {_uuid.UUID(bytes=adapter.uuid)}" if adapter.uuid else ""
    index = _pin_index(adapter)
    where = f"#{index} " if index is not None else ""
    no_index = ""
    if index is None:
        no_index = (
            "; no index: pin it by UUID or name" if adapter.uuid else "; no index or UUID: pin it by name"
        )
    return (
        f"{where}{adapter.name} ({adapter.device_type.label}, "
        f"{adapter.vendor_id:04x}:{adapter.device_id:04x}{uuid_text}{no_index})"
    )


def _listing(adapters: Iterable[AdapterFactsLike]) -> str:
    """The adapters named once each: a device that several WebGPU backends show (Vulkan, OpenGL) is
    one line, as a pin selects the device."""
    return "; ".join(dict.fromkeys(describe_adapter(a) for a in adapters))


def _identity_key(adapter: AdapterFactsLike) -> tuple[object, ...]:
    if adapter.uuid is not None:
        return ("uuid", adapter.uuid)
    # Without a UUID, identical GPUs differ only by their (Vulkan) index.
    return ("ids", adapter.vendor_id, adapter.device_id, adapter.name, _pin_index(adapter))


def _pin_index(adapter: AdapterFactsLike) -> int | None:
    # WgpuAdapterFacts pins by the matched Vulkan loader index, not by wgpu's own enumeration.
    value = getattr(adapter, "pin_index", adapter.index)
    return None if value is None else int(value)


A = TypeVar("A", bound=AdapterFactsLike)


def resolve_adapter_pin(pin: AdapterPin | str | int, adapters: Sequence[A]) -> list[A]:
    """The adapters a pin names (all of one physical device), in the given order.

    Args:
        pin: a parsed pin, or a selector :func:`parse_adapter_pin` takes (a str, or an int index).

    Raises:
        AdapterPinError: the pin names no adapter, or adapters of more than one device.
        InvalidInputError: ``pin`` is none of those.
    """
    if not isinstance(pin, AdapterPin):
        pin = parse_adapter_pin(pin)
    if pin.kind is PinKind.INDEX:
        matches = [a for a in adapters if _pin_index(a) == pin.index]
    elif pin.kind is PinKind.UUID:
        matches = [a for a in adapters if a.uuid is not None and a.uuid == pin.uuid]
    else:
        needle = pin.text.casefold()
        matches = [a for a in adapters if needle in a.name.casefold()]
    listing = _listing(adapters) or "none found"
    if not matches:
        way_out = {
            ADAPTER_ENV: f", or unset {ADAPTER_ENV}",
            "policy": ", or give a policy: auto, high-performance or low-power",
        }.get(pin.source, "")
        how = f"Name one by index, UUID or a case-insensitive part of the name{way_out}."
        what = pin.kind.value
        if pin.source == "device" and pin.uuid is not None:
            # device='cuda:1': a CUDA device, pinned by its UUID; the user named no adapter to rename.
            what = f"uuid {_uuid.UUID(bytes=pin.uuid)}"
            how = "No WebGPU adapter is that GPU: give another CUDA device, or device=None for the best one."
        raise AdapterPinError(f"{pin.describe()} matches no adapter ({what}); candidates: {listing}. {how}")
    devices = {_identity_key(a) for a in matches}
    if len(devices) > 1:
        named = _listing(matches)
        raise AdapterPinError(
            f"{pin.describe()} is ambiguous: it matches {len(devices)} adapters ({named}); "
            f"use an index or a UUID instead. Candidates: {listing}"
        )
    return matches


# --------------------------------------------------------------------------------------------------
# Ranking


@dataclass(frozen=True)
class RankedAdapter(Generic[A]):
    """One adapter's place in a ranking."""

    rank: int
    """1-based rank; rank 1 is the choice."""
    adapter: A
    """The ranked adapter (candidate or facts)."""
    reason: str
    """Why it ranks where it does."""
    pinned: bool = False
    """Whether ALPHA2_GPU_ADAPTER (or a NAMED policy) selects it."""
    key: tuple[int, ...] = field(default=(), repr=False, compare=False)
    """The sort key the policy gave it (lower is better)."""

    @property
    def chosen(self) -> bool:
        """Whether this is the choice (rank 1)."""
        return self.rank == 1


def _codec_list(codecs: Iterable[VideoCodec]) -> str:
    names = sorted(c.value for c in codecs)
    return ", ".join(names) if names else "none"


def _policy_key(
    adapter: AdapterFactsLike, policy: PolicyKind, decode_allowed: bool
) -> tuple[tuple[int, ...], list[str]]:
    """(key, human labels per key part); lower keys rank higher."""
    encodes = len(adapter.encode_codecs)
    codecs = "codecs" if encodes > 1 else "codec"
    decodes = decode_allowed and bool(adapter.decode_codecs)
    if policy is PolicyKind.LOW_POWER:
        order = _LOW_POWER_ORDER[adapter.device_type]
        return (order, adapter.index), [f"{adapter.device_type.label} (low-power order)", "enumeration order"]
    perf = _HIGH_PERFORMANCE_ORDER[adapter.device_type]
    if policy is PolicyKind.HIGH_PERFORMANCE:
        return (perf, adapter.index), [
            f"{adapter.device_type.label} (high-performance order)",
            "enumeration order",
        ]
    return (-encodes, 0 if decodes else 1, perf, adapter.index), [
        # Said as the decode part is: 'encodes 0 codec(s) on the GPU (none)' read as a count of nothing.
        (
            f"encodes {encodes} {codecs} on the GPU ({_codec_list(adapter.encode_codecs)})"
            if encodes
            else "no GPU encode"
        ),
        (
            f"decodes on the GPU ({_codec_list(adapter.decode_codecs)})"
            if decodes
            else ("no GPU decode" if decode_allowed else "decoding not allowed")
        ),
        f"{adapter.device_type.label} (high-performance order)",
        "enumeration order",
    ]


def rank_adapters(
    candidates: Iterable[A],
    policy: AdapterPolicy | PolicyKind | str | None = None,
    *,
    decode_allowed: bool = True,
    pin: AdapterPin | str | int | None = None,
    use_env_pin: bool = True,
    environ: Mapping[str, str] | None = None,
) -> list[RankedAdapter[A]]:
    """Rank adapters under a policy; rank 1 is the choice.

    Args:
        candidates: adapters satisfying :class:`AdapterFactsLike`.
        policy: AUTO (default), HIGH_PERFORMANCE, LOW_POWER or NAMED (see the module docstring).
        decode_allowed: whether GPU decode counts in AUTO.
        pin: an explicit pin (an AdapterPin, or a selector: a str or an int index); when None and
            ``use_env_pin``, ``ALPHA2_GPU_ADAPTER`` is read.
        environ: environment to read the pin from (default os.environ).

    Returns:
        Every candidate, best first, each with its rank and the reason.

    Raises:
        AdapterPinError: the pin (or the NAMED selector) names no adapter or is ambiguous, or the pin
            and a NAMED policy name different adapters.
    """
    adapters = list(candidates)
    pol = as_policy(policy)
    if pin is None and use_env_pin:
        pin = adapter_pin(environ)
    elif pin is not None and not isinstance(pin, AdapterPin):
        pin = parse_adapter_pin(pin, source="pin")
    selected: list[A] = []
    selected_by = ""
    if pin is not None:
        selected = resolve_adapter_pin(pin, adapters)
        selected_by = f"pinned by {pin.describe()}"
    if pol.kind is PolicyKind.NAMED:
        assert pol.selector is not None
        named = resolve_adapter_pin(parse_adapter_pin(pol.selector, source="policy"), adapters)
        if selected and {_identity_key(a) for a in named} != {_identity_key(a) for a in selected}:
            raise AdapterPinError(
                f"{selected_by} but the policy names {describe_adapter(named[0])}; "
                f"unset {ADAPTER_ENV} or change the policy"
            )
        if not selected:
            selected = named
            selected_by = f"named by the policy selector {pol.selector!r}"
    order_kind = PolicyKind.AUTO if pol.kind is PolicyKind.NAMED else pol.kind
    selected_ids = {id(a) for a in selected}
    keyed = []
    for adapter in adapters:
        key, labels = _policy_key(adapter, order_kind, decode_allowed)
        keyed.append(((0 if id(adapter) in selected_ids or not selected else 1, *key), labels, adapter))
    keyed.sort(key=lambda item: item[0])
    result: list[RankedAdapter[A]] = []
    best_key, best_labels = (keyed[0][0], keyed[0][1]) if keyed else ((), [])
    for position, (key, labels, adapter) in enumerate(keyed, start=1):
        pinned = id(adapter) in selected_ids
        if position == 1:
            reason = f"chosen ({order_kind.value}): " + "; ".join(labels)
            if pinned:
                reason = f"{selected_by}; " + reason
        elif selected and not pinned:
            reason = f"not the selected adapter ({selected_by}); otherwise: " + "; ".join(labels)
        else:
            # The first key part where it loses against the choice.
            reason = "ranked by " + order_kind.value + ": " + "; ".join(labels)
            first = keyed[0][2]
            first_index = _pin_index(first)
            first_name = f"#{first_index} {first.name}" if first_index is not None else first.name
            for part, (mine, best) in enumerate(zip(key[1:], best_key[1:])):
                if mine != best:
                    if labels[part] == best_labels[part]:
                        reason = f"ties with {first_name} until {labels[part]}, where it comes later"
                    else:
                        reason = f"behind {first_name} on {labels[part]} (vs {best_labels[part]})"
                    break
        result.append(RankedAdapter(rank=position, adapter=adapter, reason=reason, pinned=pinned, key=key))
    return result


# --------------------------------------------------------------------------------------------------
# WebGPU adapters


@dataclass(frozen=True)
class WgpuAdapterFacts:
    """Ranking facts of a wgpu (wgpu-native or wgpudawn) adapter, matched to a Vulkan candidate."""

    index: int
    """Position in the wgpu enumeration."""
    name: str
    """info['device'] (falls back to the description)."""
    device_type: AdapterType
    """From info['adapter_type']."""
    vendor_id: int
    """info['vendor_id']."""
    device_id: int
    """info['device_id']."""
    uuid: bytes | None
    """Device UUID: reported by wgpudawn, else the matched Vulkan candidate's."""
    encode_codecs: frozenset[VideoCodec]
    """From the matched Vulkan candidate (empty when unmatched)."""
    decode_codecs: frozenset[VideoCodec]
    """From the matched Vulkan candidate (empty when unmatched)."""
    backend: str
    """info['backend_type'] ('Vulkan', 'OpenGL', ...)."""
    vulkan_index: int | None = None
    """Loader index of the matched Vulkan candidate, or None."""
    matched_by: str | None = None
    """'uuid' or 'ids' (vendor id, device id and name), or None when unmatched."""
    adapter: Any = field(default=None, repr=False, compare=False)
    """The wgpu adapter object."""
    vulkan_candidate: Any = field(default=None, repr=False, compare=False)
    """The matched Vulkan candidate, or None."""

    @property
    def pin_index(self) -> int | None:
        """A pin by index names the Vulkan loader index: only matched adapters can be pinned by index."""
        return self.vulkan_index


def _adapter_info(adapter: Any) -> Mapping[str, Any]:
    info = getattr(adapter, "info", None)
    if info is None:
        info = getattr(adapter, "request_adapter_info", lambda: {})()
    return dict(info or {})


def dawn_device_uuid(adapter: Any) -> bytes | None:
    """The Vulkan device UUID wgpudawn reports for an adapter, or None (other implementations, errors)."""
    if not type(adapter).__module__.startswith("wgpudawn"):
        return None
    try:
        from wgpudawn.backends.dawn import extras

        uuids = extras.get_adapter_properties(adapter).get("vulkan_uuids") or {}
        value = uuids.get("device_uuid")
    except Exception:
        return None
    return bytes(value) if value and len(bytes(value)) == 16 and any(bytes(value)) else None


def match_vulkan_candidate(
    facts: AdapterFactsLike, vulkan_candidates: Iterable[AdapterFactsLike]
) -> tuple[AdapterFactsLike | None, str | None]:
    """The Vulkan candidate that is the same device: by UUID when known, else by vendor, device and name."""
    candidates = list(vulkan_candidates)
    if facts.uuid is not None:
        for cand in candidates:
            if cand.uuid is not None and cand.uuid == facts.uuid:
                return cand, "uuid"
    for cand in candidates:
        if (cand.vendor_id, cand.device_id, cand.name.strip().casefold()) == (
            facts.vendor_id,
            facts.device_id,
            facts.name.strip().casefold(),
        ):
            return cand, "ids"
    return None, None


def wgpu_adapter_facts(
    adapter: Any,
    index: int,
    vulkan_candidates: Iterable[AdapterFactsLike] = (),
    *,
    uuid_getter: Callable[[Any], bytes | None] = dawn_device_uuid,
) -> WgpuAdapterFacts:
    """Facts of a wgpu adapter from its ``.info``, matched to a Vulkan candidate for codecs and UUID."""
    info = _adapter_info(adapter)
    name = str(info.get("device") or info.get("description") or getattr(adapter, "summary", "") or "")
    base = AdapterFacts(
        index=index,
        name=name,
        device_type=AdapterType.from_wgpu(str(info.get("adapter_type", ""))),
        vendor_id=int(info.get("vendor_id") or 0),
        device_id=int(info.get("device_id") or 0),
        uuid=uuid_getter(adapter),
    )
    match, how = match_vulkan_candidate(base, vulkan_candidates)
    return WgpuAdapterFacts(
        index=index,
        name=name,
        device_type=base.device_type,
        vendor_id=base.vendor_id,
        device_id=base.device_id,
        uuid=base.uuid if base.uuid is not None else (match.uuid if match is not None else None),
        encode_codecs=frozenset(match.encode_codecs) if match is not None else frozenset(),
        decode_codecs=frozenset(match.decode_codecs) if match is not None else frozenset(),
        backend=str(info.get("backend_type", "")),
        vulkan_index=match.index if match is not None else None,
        matched_by=how,
        adapter=adapter,
        vulkan_candidate=match,
    )


def rank_wgpu_adapters(
    adapters: Iterable[Any],
    policy: AdapterPolicy | PolicyKind | str | None = None,
    *,
    vulkan_candidates: Iterable[AdapterFactsLike] = (),
    decode_allowed: bool = True,
    pin: AdapterPin | str | int | None = None,
    use_env_pin: bool = True,
    environ: Mapping[str, str] | None = None,
) -> list[RankedAdapter[WgpuAdapterFacts]]:
    """Rank wgpu adapters with the same rules as :func:`rank_adapters`.

    ``adapters`` are wgpu adapter objects (``wgpu.gpu.enumerate_adapters_sync()``) or ready
    :class:`WgpuAdapterFacts`. Codec support comes from the matching Vulkan candidate; the adapters of
    one backend are matched to different candidates, in order, so two identical GPUs are #0 and #1.
    """
    vk_list = list(vulkan_candidates)
    facts: list[WgpuAdapterFacts] = []
    # One Vulkan candidate per wgpu adapter of a backend: identical GPUs without a UUID (wgpu-native),
    # or one device two drivers list, would otherwise all match the first, and only it could be pinned.
    taken: dict[str, set[int]] = {}
    for i, a in enumerate(adapters):
        if isinstance(a, WgpuAdapterFacts):
            facts.append(a)
            continue
        used = taken.setdefault(str(_adapter_info(a).get("backend_type", "")).lower(), set())
        free = [c for c in vk_list if id(c) not in used]
        one = wgpu_adapter_facts(a, i, free)
        if one.vulkan_candidate is None and len(free) < len(vk_list):
            one = wgpu_adapter_facts(a, i, vk_list)  # more adapters than candidates: share one
        if one.vulkan_candidate is not None:
            used.add(id(one.vulkan_candidate))
        facts.append(one)
    return rank_adapters(
        facts, policy, decode_allowed=decode_allowed, pin=pin, use_env_pin=use_env_pin, environ=environ
    )
