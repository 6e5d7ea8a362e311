"""Structure-aware mutations of media files, for the fuzz tests (tests/test_structure_fuzz.py).

Bit flips mostly hit picture data, which decoders conceal. These mutators parse the file first and
change what the demuxers and the parsers trust: MP4 box sizes and sample tables, Matroska element sizes
and block lacing, H.264 / HEVC parameter sets (picture size, frame-number and POC widths, ...), MPEG-TS
continuity counters, PES headers and tables, AV1 OBU sizes and sequence headers, IVF frame sizes and
Y4M headers. Lengths are fixed up around a changed element where the format has them (a rewritten SPS
inside ``avcC`` grows its box and the boxes around it), so that the lie is where the mutator put it.

:func:`mutate` applies one mutation chosen by a seeded ``random.Random``; :data:`MUTATORS` lists them
per format. Every mutator returns ``(what, data)`` or None where it does not apply to the file.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

Mutator = Callable[[bytes, random.Random], "tuple[str, bytes] | None"]

U32_EDGES = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)
"""Values a 32-bit count, size or offset is set to (with the original +- 1 and the file size)."""


def _u32(value: int) -> bytes:
    return (value & 0xFFFFFFFF).to_bytes(4, "big")


def _edge_u32(rng: random.Random, original: int, file_size: int) -> int:
    return rng.choice(
        [*U32_EDGES, original + 1, max(original - 1, 0), original * 2, file_size, file_size + 1]
    )


# ---------------------------------------------------------------------------------------------------
# bits, Exp-Golomb, emulation prevention


class BitReader:
    """MSB-first bits of a byte string, with the Exp-Golomb codes of H.264 / HEVC."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    @property
    def left(self) -> int:
        return len(self.data) * 8 - self.pos

    def u(self, n: int) -> int:
        if n > self.left:
            raise ValueError("read past the end")
        value = 0
        for _ in range(n):
            value = (value << 1) | ((self.data[self.pos >> 3] >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return value

    def ue(self) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
            if zeros > 32:
                raise ValueError("Exp-Golomb code too long")
        return (1 << zeros) - 1 + self.u(zeros)

    def se(self) -> int:
        k = self.ue()
        return (k + 1) // 2 if k & 1 else -(k // 2)

    def rest(self) -> list[int]:
        return [self.u(1) for _ in range(self.left)]


class BitWriter:
    """The writer for :class:`BitReader`."""

    def __init__(self) -> None:
        self.bits: list[int] = []

    def u(self, n: int, value: int) -> None:
        self.bits += [(value >> (n - 1 - i)) & 1 for i in range(n)]

    def ue(self, value: int) -> None:
        value += 1
        n = value.bit_length()
        self.bits += [0] * (n - 1)
        self.u(n, value)

    def se(self, value: int) -> None:
        self.ue(2 * value - 1 if value > 0 else -2 * value)

    def to_bytes(self) -> bytes:
        bits = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits), 8))


def unescape(nal: bytes) -> bytes:
    """RBSP of a NAL unit's payload: emulation-prevention bytes (00 00 03) removed."""
    out, zeros = bytearray(), 0
    for b in nal:
        if zeros >= 2 and b == 3:
            zeros = 0
            continue
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


def escape(rbsp: bytes) -> bytes:
    """Emulation-prevention bytes inserted (the inverse of :func:`unescape`)."""
    out, zeros = bytearray(), 0
    for b in rbsp:
        if zeros >= 2 and b <= 3:
            out.append(3)
            zeros = 0
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


# ---------------------------------------------------------------------------------------------------
# parameter sets: fields parsed up to what is mutated, the rest copied as bits


@dataclass
class Fields:
    """Leading syntax elements of an RBSP, the bits after them kept as they were."""

    items: list[tuple[str, str, int, int]] = field(default_factory=list)
    """(name, kind 'u' / 'ue' / 'se' / 'raw', value, bit count for 'u' and 'raw')."""
    rest: list[int] = field(default_factory=list)

    def read(self, r: BitReader, name: str, kind: str, n: int = 0) -> int:
        value = r.u(n) if kind in ("u", "raw") else r.ue() if kind == "ue" else r.se()
        self.items.append((name, kind, value, n))
        return value

    def names(self) -> list[str]:
        return [name for name, kind, _, _ in self.items if kind != "raw"]

    def get(self, name: str) -> int:
        return next(v for n, _, v, _ in self.items if n == name)

    def replaced(self, name: str, value: int) -> Fields:
        items = [(n, k, value if n == name else v, b) for n, k, v, b in self.items]
        return Fields(items, self.rest)

    def build(self) -> bytes:
        w = BitWriter()
        for _, kind, value, n in self.items:
            if kind in ("u", "raw"):
                w.u(n, value)
            elif kind == "ue":
                w.ue(value)
            else:
                w.se(value)
        rest = list(self.rest)
        while rest and rest[-1] == 0:  # the alignment zeros; the stop bit stays
            rest.pop()
        w.bits += rest or [1]
        return w.to_bytes()


def h264_sps_fields(rbsp: bytes) -> Fields | None:
    """The SPS fields up to frame_mbs_only_flag (None where scaling lists or POC type 1 are in the way)."""
    r, f = BitReader(rbsp), Fields()
    try:
        profile = f.read(r, "profile_idc", "u", 8)
        f.read(r, "constraint_flags", "u", 8)
        f.read(r, "level_idc", "u", 8)
        f.read(r, "seq_parameter_set_id", "ue")
        if profile in (100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135):
            if f.read(r, "chroma_format_idc", "ue") == 3:
                f.read(r, "separate_colour_plane_flag", "u", 1)
            f.read(r, "bit_depth_luma_minus8", "ue")
            f.read(r, "bit_depth_chroma_minus8", "ue")
            f.read(r, "qpprime_y_zero_transform_bypass_flag", "u", 1)
            if f.read(r, "seq_scaling_matrix_present_flag", "u", 1):
                return None
        f.read(r, "log2_max_frame_num_minus4", "ue")
        poc_type = f.read(r, "pic_order_cnt_type", "ue")
        if poc_type == 0:
            f.read(r, "log2_max_pic_order_cnt_lsb_minus4", "ue")
        elif poc_type == 1:
            return None
        f.read(r, "max_num_ref_frames", "ue")
        f.read(r, "gaps_in_frame_num_value_allowed_flag", "u", 1)
        f.read(r, "pic_width_in_mbs_minus1", "ue")
        f.read(r, "pic_height_in_map_units_minus1", "ue")
        f.read(r, "frame_mbs_only_flag", "u", 1)
        f.rest = r.rest()
    except ValueError:
        return None
    return f


def h264_pps_fields(rbsp: bytes) -> Fields | None:
    """The PPS fields up to the default reference counts."""
    r, f = BitReader(rbsp), Fields()
    try:
        f.read(r, "pic_parameter_set_id", "ue")
        f.read(r, "seq_parameter_set_id", "ue")
        f.read(r, "entropy_coding_mode_flag", "u", 1)
        f.read(r, "bottom_field_pic_order_in_frame_present_flag", "u", 1)
        if f.read(r, "num_slice_groups_minus1", "ue"):
            return None
        f.read(r, "num_ref_idx_l0_default_active_minus1", "ue")
        f.read(r, "num_ref_idx_l1_default_active_minus1", "ue")
        f.rest = r.rest()
    except ValueError:
        return None
    return f


def _hevc_profile_tier_level(r: BitReader, f: Fields, max_sub_layers_minus1: int) -> None:
    f.read(r, "general_profile", "raw", 88)
    f.read(r, "general_level_idc", "u", 8)
    present = []
    for i in range(max_sub_layers_minus1):
        present.append(
            (f.read(r, f"sub_profile_present{i}", "u", 1), f.read(r, f"sub_level_present{i}", "u", 1))
        )
    if max_sub_layers_minus1:
        f.read(r, "ptl_alignment", "raw", 2 * (8 - max_sub_layers_minus1))
    for i, (profile, level) in enumerate(present):
        if profile:
            f.read(r, f"sub_layer_profile{i}", "raw", 88)
        if level:
            f.read(r, f"sub_layer_level_idc{i}", "u", 8)


def hevc_sps_fields(rbsp: bytes) -> Fields | None:
    """The HEVC SPS fields up to log2_max_pic_order_cnt_lsb_minus4 (RBSP after the 2-byte NAL header)."""
    r, f = BitReader(rbsp), Fields()
    try:
        f.read(r, "sps_video_parameter_set_id", "u", 4)
        sub_layers = f.read(r, "sps_max_sub_layers_minus1", "u", 3)
        f.read(r, "sps_temporal_id_nesting_flag", "u", 1)
        _hevc_profile_tier_level(r, f, sub_layers)
        f.read(r, "sps_seq_parameter_set_id", "ue")
        if f.read(r, "chroma_format_idc", "ue") == 3:
            f.read(r, "separate_colour_plane_flag", "u", 1)
        f.read(r, "pic_width_in_luma_samples", "ue")
        f.read(r, "pic_height_in_luma_samples", "ue")
        if f.read(r, "conformance_window_flag", "u", 1):
            for side in ("left", "right", "top", "bottom"):
                f.read(r, f"conf_win_{side}_offset", "ue")
        f.read(r, "bit_depth_luma_minus8", "ue")
        f.read(r, "bit_depth_chroma_minus8", "ue")
        f.read(r, "log2_max_pic_order_cnt_lsb_minus4", "ue")
        f.rest = r.rest()
    except ValueError:
        return None
    return f


SPS_VALUES: dict[str, tuple[int, ...]] = {
    "profile_idc": (0, 66, 77, 100, 110, 122, 244, 255),
    "level_idc": (0, 9, 62, 255),
    "seq_parameter_set_id": (1, 31, 32, 1000),
    "chroma_format_idc": (0, 2, 3, 4, 1000),
    "bit_depth_luma_minus8": (2, 6, 7, 8, 100),
    "bit_depth_chroma_minus8": (2, 6, 7, 8, 100),
    "log2_max_frame_num_minus4": (0, 12, 13, 28, 1 << 20),
    "pic_order_cnt_type": (2, 3, 100),
    "log2_max_pic_order_cnt_lsb_minus4": (0, 12, 13, 200),
    "max_num_ref_frames": (0, 16, 17, 1000),
    "pic_width_in_mbs_minus1": (0, 511, 4095, 65535, (1 << 31) - 2),
    "pic_height_in_map_units_minus1": (0, 511, 4095, 65535, (1 << 31) - 2),
    "pic_width_in_luma_samples": (0, 1, 7, 8192, 65536, (1 << 31) - 2),
    "pic_height_in_luma_samples": (0, 1, 7, 8192, 65536, (1 << 31) - 2),
    "pic_parameter_set_id": (1, 255, 256, 1000),
    "num_ref_idx_l0_default_active_minus1": (15, 31, 32, 1000),
    "num_ref_idx_l1_default_active_minus1": (15, 31, 32, 1000),
    "sps_video_parameter_set_id": (1, 15),
    "sps_seq_parameter_set_id": (1, 15, 16, 1000),
    "general_level_idc": (0, 255),
}
"""Values tried per field: the limits, one past them, and absurd ones. Other fields get a flipped bit."""

HUGE_SIZE_FIELDS = {
    "pic_width_in_mbs_minus1": 511,
    "pic_height_in_map_units_minus1": 511,
    "pic_width_in_luma_samples": 8192,
    "pic_height_in_luma_samples": 8192,
}
"""The fields and values of an SPS claiming 8192x8192 (progressive H.264: map units are macroblocks)."""


def mutate_fields(fields: Fields, rng: random.Random) -> tuple[str, Fields]:
    name = rng.choice(fields.names())
    _, kind, value, n = next(item for item in fields.items if item[0] == name)
    if name in SPS_VALUES:
        new = rng.choice(SPS_VALUES[name])
    elif kind == "u":
        new = value ^ (1 << rng.randrange(n))
    else:
        new = rng.choice([0, value + 1, value * 4 + 7, 1 << 20])
    return f"{name} {value}->{new}", fields.replaced(name, new)


# ---------------------------------------------------------------------------------------------------
# Annex B streams (raw .h264 / .hevc)


def annexb_units(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each NAL unit (after its start code)."""
    starts, i = [], 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            break
        starts.append(i + 3)
        i += 3
    units = []
    for k, s in enumerate(starts):
        end = starts[k + 1] - 3 if k + 1 < len(starts) else len(data)
        while end > s and data[end - 1] == 0 and k + 1 < len(starts):
            end -= 1  # the leading zero of a 4-byte start code
        units.append((s, end))
    return units


def nal_type(nal: bytes, hevc: bool) -> int:
    return (nal[0] >> 1) & 0x3F if hevc else nal[0] & 0x1F


def _sps_rewrite(nal: bytes, hevc: bool, rng: random.Random, huge: bool = False) -> tuple[str, bytes] | None:
    header = 2 if hevc else 1
    rbsp = unescape(nal[header:])
    fields = hevc_sps_fields(rbsp) if hevc else h264_sps_fields(rbsp)
    if fields is None:
        return None
    if huge:
        for name, value in HUGE_SIZE_FIELDS.items():
            if name in fields.names():
                fields = fields.replaced(name, value)
        what = "8192x8192"
    else:
        what, fields = mutate_fields(fields, rng)
    return what, nal[:header] + escape(fields.build())


def _pps_rewrite(nal: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    fields = h264_pps_fields(unescape(nal[1:]))
    if fields is None:
        return None
    what, fields = mutate_fields(fields, rng)
    return what, nal[:1] + escape(fields.build())


def _replace_units(data: bytes, changes: dict[int, bytes | None]) -> bytes:
    """``data`` with NAL units replaced (None: removed with their start code) by index."""
    units = annexb_units(data)
    out, pos = bytearray(), 0
    for k, (s, e) in enumerate(units):
        if k not in changes:
            continue
        new = changes[k]
        code_start = s - 3
        if new is None:
            while code_start > pos and data[code_start - 1] == 0:
                code_start -= 1
            out += data[pos:code_start]
        else:
            out += data[pos:s] + new
        pos = e
    return bytes(out + data[pos:])


def _annexb_mutators(hevc: bool) -> list[Mutator]:
    sps_type, pps_type = (33, 34) if hevc else (7, 8)

    def units_of(data: bytes, kind: int) -> list[int]:
        return [
            k for k, (s, e) in enumerate(annexb_units(data)) if e > s and nal_type(data[s:e], hevc) == kind
        ]

    def sps_field(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
        found = units_of(data, sps_type)
        if not found:
            return None
        k = rng.choice(found)
        s, e = annexb_units(data)[k]
        done = _sps_rewrite(data[s:e], hevc, rng)
        return None if done is None else (f"SPS {done[0]}", _replace_units(data, {k: done[1]}))

    def pps_field(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
        found = units_of(data, pps_type)
        if hevc or not found:
            return None
        k = rng.choice(found)
        s, e = annexb_units(data)[k]
        done = _pps_rewrite(data[s:e], rng)
        return None if done is None else (f"PPS {done[0]}", _replace_units(data, {k: done[1]}))

    def drop_unit(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
        units = annexb_units(data)
        k = rng.randrange(len(units))
        s, e = units[k]
        return f"NAL {k} (type {nal_type(data[s:e], hevc)}) removed", _replace_units(data, {k: None})

    def duplicate_unit(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
        units = annexb_units(data)
        k = rng.randrange(len(units))
        s, e = units[k]
        return f"NAL {k} twice", _replace_units(data, {k: data[s:e] + b"\x00\x00\x00\x01" + data[s:e]})

    def retype_unit(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
        units = annexb_units(data)
        k = rng.randrange(len(units))
        s, e = units[k]
        nal = bytearray(data[s:e])
        new = rng.randrange(64 if hevc else 32)
        if hevc:
            nal[0] = (nal[0] & 0x81) | (new << 1)
        else:
            nal[0] = (nal[0] & 0xE0) | new
        return f"NAL {k} type -> {new}", _replace_units(data, {k: bytes(nal)})

    def cut_unit(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
        units = annexb_units(data)
        k = rng.randrange(len(units))
        s, e = units[k]
        keep = rng.randrange(1, max(2, e - s))
        return f"NAL {k} cut to {keep} bytes", _replace_units(data, {k: data[s : s + keep]})

    return [sps_field, sps_field, pps_field, drop_unit, duplicate_unit, retype_unit, cut_unit]


def annexb_huge(data: bytes, hevc: bool) -> bytes:
    """Every SPS of a raw stream claiming 8192x8192."""
    sps_type = 33 if hevc else 7
    changes: dict[int, bytes | None] = {}
    for k, (s, e) in enumerate(annexb_units(data)):
        if e > s and nal_type(data[s:e], hevc) == sps_type:
            done = _sps_rewrite(data[s:e], hevc, random.Random(0), huge=True)
            if done is not None:
                changes[k] = done[1]
    return _replace_units(data, changes)


# ---------------------------------------------------------------------------------------------------
# MP4


MP4_CONTAINERS = {
    b"moov",
    b"trak",
    b"mdia",
    b"minf",
    b"stbl",
    b"edts",
    b"dinf",
    b"udta",
    b"mvex",
    b"moof",
    b"traf",
}
SAMPLE_ENTRY_HEADER = {
    b"avc1": 78,
    b"avc3": 78,
    b"hvc1": 78,
    b"hev1": 78,
    b"av01": 78,
    b"mp4a": 28,
    b"Opus": 28,
}
"""Bytes between a sample entry's box header and its child boxes."""

TABLES = {
    # box: (offset of the count from the box start, entry size, field size)
    b"stsz": (16, 4, 4),
    b"stco": (12, 4, 4),
    b"co64": (12, 8, 8),
    b"stts": (12, 8, 4),
    b"ctts": (12, 8, 4),
    b"stsc": (12, 12, 4),
    b"stss": (12, 4, 4),
    b"elst": (12, 12, 4),
}


@dataclass
class Box:
    kind: bytes
    start: int
    size: int
    header: int
    parent: Box | None = None
    children: list[Box] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.start + self.size

    def ancestors(self) -> list[Box]:
        out, box = [], self.parent
        while box is not None:
            out.append(box)
            box = box.parent
        return out


def mp4_tree(data: bytes) -> list[Box]:
    """Every box of the file, depth first (containers, stsd and the sample entries opened)."""
    boxes: list[Box] = []

    def walk(start: int, end: int, parent: Box | None) -> None:
        pos = start
        while pos + 8 <= end:
            size = int.from_bytes(data[pos : pos + 4], "big")
            header = 8
            if size == 1 and pos + 16 <= end:
                size, header = int.from_bytes(data[pos + 8 : pos + 16], "big"), 16
            elif size == 0:
                size = end - pos
            if size < header or pos + size > end:
                return
            box = Box(data[pos + 4 : pos + 8], pos, size, header, parent)
            boxes.append(box)
            if parent is not None:
                parent.children.append(box)
            if box.kind in MP4_CONTAINERS:
                walk(pos + header, pos + size, box)
            elif box.kind == b"stsd":
                walk(pos + header + 8, pos + size, box)
            elif box.kind in SAMPLE_ENTRY_HEADER:
                walk(pos + header + SAMPLE_ENTRY_HEADER[box.kind], pos + size, box)
            elif box.kind == b"meta":
                walk(pos + header + 4, pos + size, box)
            pos += size

    walk(0, len(data), None)
    return boxes


def mp4_replace_box(data: bytes, box: Box, new: bytes) -> bytes:
    """``data`` with ``box`` (header included) replaced by ``new``: the sizes of the boxes around it grow
    or shrink with it, and chunk offsets past it move when it lies before the media data."""
    delta = len(new) - box.size
    out = bytearray(data[: box.start] + new + data[box.end :])
    for parent in box.ancestors():
        if parent.header == 8:
            out[parent.start : parent.start + 4] = _u32(parent.size + delta)
        else:
            out[parent.start + 8 : parent.start + 16] = (parent.size + delta).to_bytes(8, "big")
    if delta:
        for b in mp4_tree(bytes(out)):
            if b.kind not in (b"stco", b"co64"):
                continue
            width = 8 if b.kind == b"co64" else 4
            count = int.from_bytes(out[b.start + 12 : b.start + 16], "big")
            for i in range(min(count, (b.size - 16) // width)):
                at = b.start + 16 + i * width
                value = int.from_bytes(out[at : at + width], "big")
                if value > box.start:
                    out[at : at + width] = (value + delta).to_bytes(width, "big")
    return bytes(out)


def _config_record(payload: bytes, hevc: bool) -> list[tuple[int, int, int]]:
    """(offset, length, NAL type) of each parameter set in an avcC / hvcC payload."""
    found = []
    try:
        if hevc:
            pos, arrays = 23, payload[22]
            for _ in range(arrays):
                kind, count = payload[pos] & 0x3F, int.from_bytes(payload[pos + 1 : pos + 3], "big")
                pos += 3
                for _ in range(count):
                    length = int.from_bytes(payload[pos : pos + 2], "big")
                    found.append((pos + 2, length, kind))
                    pos += 2 + length
        else:
            pos = 6
            for count_at_mask, kind in ((0x1F, 7), (0xFF, 8)):
                count = payload[pos - 1] & count_at_mask
                for _ in range(count):
                    length = int.from_bytes(payload[pos : pos + 2], "big")
                    found.append((pos + 2, length, kind))
                    pos += 2 + length
                pos += 1
    except IndexError:
        return []
    return [f for f in found if f[0] + f[1] <= len(payload)]


def config_with_sps(
    payload: bytes, hevc: bool, rng: random.Random, huge: bool = False
) -> tuple[str, bytes] | None:
    """An avcC / hvcC payload with its SPS rewritten (its 16-bit length follows)."""
    for offset, length, kind in _config_record(payload, hevc):
        if kind == (33 if hevc else 7):
            done = _sps_rewrite(payload[offset : offset + length], hevc, rng, huge=huge)
            if done is None:
                return None
            nal = done[1]
            new = payload[: offset - 2] + len(nal).to_bytes(2, "big") + nal + payload[offset + length :]
            return f"SPS {done[0]}", new
    return None


def _mp4_box_size(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    boxes = [b for b in mp4_tree(data) if b.header == 8]
    box = rng.choice(boxes)
    new = rng.choice([0, 1, 7, 8, box.size - 1, box.size + 1, box.size + 8, box.size * 2, 0xFFFFFFFF])
    out = bytearray(data)
    out[box.start : box.start + 4] = _u32(new)
    return f"{box.kind.decode('latin-1')} size {box.size}->{new}", bytes(out)


def _mp4_box_type(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    box = rng.choice(mp4_tree(data))
    new = rng.choice([b"free", b"mdat", b"moov", b"trak", b"stsd", b"\x00\x00\x00\x00", b"uuid"])
    out = bytearray(data)
    out[box.start + 4 : box.start + 8] = new
    return f"{box.kind.decode('latin-1')} -> {new.decode('latin-1')!r}", bytes(out)


def _mp4_table(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    tables = [b for b in mp4_tree(data) if b.kind in TABLES]
    if not tables:
        return None
    box = rng.choice(tables)
    count_at, entry, width = TABLES[box.kind]
    count = int.from_bytes(data[box.start + count_at : box.start + count_at + 4], "big")
    entries = min(count, (box.size - count_at - 4) // entry)
    out = bytearray(data)
    name = box.kind.decode()
    if box.kind == b"stsz" and rng.random() < 0.2:  # the size of every sample at once
        at, what = box.start + 12, "sample_size"
    elif entries == 0 or rng.random() < 0.25:
        at, what = box.start + count_at, "entry_count"
    else:
        i = rng.randrange(entries)
        column = rng.randrange(entry // width)
        at, what = box.start + count_at + 4 + i * entry + column * width, f"entry {i}.{column}"
    old = int.from_bytes(out[at : at + width], "big")
    new = _edge_u32(rng, old, len(data))
    if box.kind == b"ctts" and rng.random() < 0.5:
        out[box.start + 8] = 1  # version 1: signed offsets
        new = rng.choice([0x80000000, 0xFFFFFFFF, 0x7FFFFFFF])
    out[at : at + width] = new.to_bytes(width, "big") if width == 8 else _u32(new)
    return f"{name} {what} {old}->{new}", bytes(out)


def _mp4_header_field(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    """Time scales and durations (mvhd, mdhd), track and sample entry sizes (tkhd, avc1)."""
    choices = []
    for b in mp4_tree(data):
        version = data[b.start + 8] if b.end > b.start + 8 else 0
        if b.kind in (b"mvhd", b"mdhd"):
            ts = b.start + (28 if version == 1 else 20)
            choices += [(b, ts, 4, "timescale"), (b, ts + 4, 8 if version == 1 else 4, "duration")]
        elif b.kind == b"tkhd":
            off = b.start + (96 if version == 1 else 84)
            choices += [(b, off, 4, "width"), (b, off + 4, 4, "height")]
        elif b.kind in (b"avc1", b"hvc1", b"hev1", b"av01"):
            choices += [(b, b.start + 32, 2, "width"), (b, b.start + 34, 2, "height")]
    if not choices:
        return None
    box, at, width, what = rng.choice(choices)
    if at + width > box.end:
        return None
    old = int.from_bytes(data[at : at + width], "big")
    new = rng.choice([0, 1, 8192, (1 << (8 * width)) - 1, 8192 << 16 if width == 4 else 8192])
    out = bytearray(data)
    out[at : at + width] = new.to_bytes(width, "big")
    return f"{box.kind.decode()} {what} {old}->{new}", bytes(out)


def _mp4_config(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    """The SPS inside avcC / hvcC, or the record's NAL length size."""
    configs = [b for b in mp4_tree(data) if b.kind in (b"avcC", b"hvcC")]
    if not configs:
        return None
    box = rng.choice(configs)
    hevc = box.kind == b"hvcC"
    payload = data[box.start + 8 : box.end]
    if rng.random() < 0.2:
        at = 21 if hevc else 4
        out = bytearray(data)
        new = rng.randrange(4)
        out[box.start + 8 + at] = (out[box.start + 8 + at] & 0xFC) | new
        return f"{box.kind.decode()} lengthSizeMinusOne -> {new}", bytes(out)
    done = config_with_sps(payload, hevc, rng)
    if done is None:
        return None
    new_box = _u32(8 + len(done[1])) + box.kind + done[1]
    return f"{box.kind.decode()} {done[0]}", mp4_replace_box(data, box, new_box)


MP4_MUTATORS: list[Mutator] = [
    _mp4_box_size,
    _mp4_box_type,
    _mp4_table,
    _mp4_table,
    _mp4_header_field,
    _mp4_config,
]


def mp4_huge(data: bytes) -> bytes:
    """An MP4 whose SPS (and sample entry) claim 8192x8192."""
    for box in mp4_tree(data):
        if box.kind in (b"avcC", b"hvcC"):
            done = config_with_sps(
                data[box.start + 8 : box.end], box.kind == b"hvcC", random.Random(0), huge=True
            )
            if done is not None:
                data = mp4_replace_box(data, box, _u32(8 + len(done[1])) + box.kind + done[1])
                break
    out = bytearray(data)
    for box in mp4_tree(data):
        if box.kind in (b"avc1", b"hvc1", b"hev1"):
            out[box.start + 32 : box.start + 36] = (8192).to_bytes(2, "big") * 2
    return bytes(out)


# ---------------------------------------------------------------------------------------------------
# Matroska (EBML)


EBML_MASTERS = {
    0x1A45DFA3, 0x18538067, 0x114D9B74, 0x4DBB, 0x1549A966, 0x1654AE6B, 0xAE, 0xE0, 0xE1, 0x1F43B675,
    0xA0, 0x1C53BB6B, 0xBB, 0xB7, 0x1254C367, 0x7373, 0x63C0, 0x67C8, 0x55B0, 0x6D80, 0x6240, 0x5034,
}  # fmt: skip
"""EBML header, Segment, SeekHead, Seek, Info, Tracks, TrackEntry, Video, Audio, Cluster, BlockGroup,
Cues, CuePoint, CueTrackPositions, Tags, Tag, Targets, SimpleTag, Colour, ContentEncodings / Encoding /
Compression."""
SIMPLE_BLOCK, BLOCK, CODEC_PRIVATE = 0xA3, 0xA1, 0x63A2
PIXEL_WIDTH, PIXEL_HEIGHT, TIMESTAMP_SCALE, DEFAULT_DURATION = 0xB0, 0xBA, 0x2AD7B1, 0x23E383


def vint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, length) of the EBML variable-size integer at ``pos`` (marker removed)."""
    first = data[pos]
    length = 1
    while length <= 8 and not first & (0x80 >> (length - 1)):
        length += 1
    if length > 8:
        raise ValueError("bad vint")
    value = first & (0xFF >> length)
    for b in data[pos + 1 : pos + length]:
        value = (value << 8) | b
    return value, length


def vint_bytes(value: int, length: int) -> bytes:
    return ((1 << (7 * length)) | value).to_bytes(length, "big")


def size_vint(value: int, at_least: int = 1) -> bytes:
    length = at_least
    while value >= (1 << (7 * length)) - 1:
        length += 1
    return vint_bytes(value, length)


@dataclass
class Element:
    ident: int
    start: int
    id_len: int
    size_len: int
    size: int
    parent: Element | None = None

    @property
    def data_start(self) -> int:
        return self.start + self.id_len + self.size_len

    @property
    def end(self) -> int:
        return self.data_start + self.size


def ebml_tree(data: bytes) -> list[Element]:
    """Every element, depth first (master elements opened)."""
    found: list[Element] = []

    def walk(start: int, end: int, parent: Element | None) -> None:
        pos = start
        while pos < end:
            try:
                _, id_len = vint(data, pos)
                size, size_len = vint(data, pos + id_len)
            except (ValueError, IndexError):
                return
            ident = int.from_bytes(data[pos : pos + id_len], "big")
            if size == (1 << (7 * size_len)) - 1:  # unknown size: to the end of the parent
                size = end - pos - id_len - size_len
            element = Element(ident, pos, id_len, size_len, size, parent)
            if element.end > end:
                return
            found.append(element)
            if ident in EBML_MASTERS:
                walk(element.data_start, element.end, element)
            pos = element.end

    walk(0, len(data), None)
    return found


def ebml_replace_payload(data: bytes, element: Element, payload: bytes) -> bytes:
    """``data`` with ``element``'s payload replaced; its size and its parents' sizes follow (wider where
    they must be)."""
    chain = [element]
    while chain[-1].parent is not None:
        chain.append(chain[-1].parent)  # type: ignore[arg-type]
    new = (
        data[element.start : element.start + element.id_len]
        + size_vint(len(payload), element.size_len)
        + payload
    )
    start, end = element.start, element.end
    for parent in chain[1:]:
        body = data[parent.data_start : start] + new + data[end : parent.end]
        new = data[parent.start : parent.start + parent.id_len] + size_vint(len(body), parent.size_len) + body
        start, end = parent.start, parent.end
    return data[:start] + new + data[end:]


def _mkv_size(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    element = rng.choice(ebml_tree(data))
    n = element.size_len
    top = (1 << (7 * n)) - 1
    new = rng.choice([top, top - 1, 0, element.size + 1, max(element.size - 1, 0), element.size * 2])
    new = min(new, top)
    out = bytearray(data)
    out[element.start + element.id_len : element.data_start] = vint_bytes(new, n)
    return f"element {element.ident:X} size {element.size}->{new}", bytes(out)


def _mkv_id(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    element = rng.choice([e for e in ebml_tree(data) if e.id_len == 1])
    new = rng.choice([0xA3, 0xA1, 0xAE, 0xE0, 0xEC, 0xBF, 0x80])
    out = bytearray(data)
    out[element.start] = new
    return f"element {element.ident:X} -> {new:X}", bytes(out)


def _mkv_lacing(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    """A SimpleBlock's lacing bits and lace header, over its frame data."""
    blocks = [e for e in ebml_tree(data) if e.ident == SIMPLE_BLOCK and e.size > 8]
    if not blocks:
        return None
    block = rng.choice(blocks)
    try:
        _, track_len = vint(data, block.data_start)
    except (ValueError, IndexError):
        return None
    flags_at = block.data_start + track_len + 2
    lacing = rng.choice([1, 2, 3])
    count = rng.choice([0, 1, 2, 7, 255])
    header = bytes([count])
    if lacing == 1:  # Xiph: sizes in runs of 255
        header += bytes([255] * rng.randrange(0, 6) + [rng.randrange(256)]) * max(count, 1)
    elif lacing == 3:  # EBML: first size, then signed differences
        header += vint_bytes(rng.choice([0, 1, block.size, (1 << 14) - 2]), 2) + b"\xbf" * max(count - 1, 0)
    out = bytearray(data)
    end = min(flags_at + 1 + len(header), block.end)
    out[flags_at] = (out[flags_at] & 0xF9) | (lacing << 1)
    out[flags_at + 1 : end] = header[: end - flags_at - 1]
    return f"SimpleBlock lacing {lacing} count {count}", bytes(out)


def _mkv_block_head(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    """A block's track number or timestamp."""
    blocks = [e for e in ebml_tree(data) if e.ident in (SIMPLE_BLOCK, BLOCK) and e.size > 4]
    if not blocks:
        return None
    block = rng.choice(blocks)
    out = bytearray(data)
    if rng.random() < 0.5:
        new = rng.choice([0x80, 0x82, 0x8F, 0xFF])
        out[block.data_start] = new
        return f"block track -> {new & 0x7F}", bytes(out)
    try:
        _, track_len = vint(data, block.data_start)
    except (ValueError, IndexError):
        return None
    at = block.data_start + track_len
    new = rng.choice([0x7FFF, 0x8000, 0xFFFF])
    out[at : at + 2] = new.to_bytes(2, "big")
    return f"block timestamp -> {new:#x}", bytes(out)


def _mkv_value(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    """Picture size, timestamp scale or default duration."""
    wanted = {PIXEL_WIDTH: "PixelWidth", PIXEL_HEIGHT: "PixelHeight", TIMESTAMP_SCALE: "TimestampScale"}
    wanted[DEFAULT_DURATION] = "DefaultDuration"
    elements = [e for e in ebml_tree(data) if e.ident in wanted]
    if not elements:
        return None
    element = rng.choice(elements)
    new = rng.choice([0, 1, 8192, 65535, (1 << 32) - 1, (1 << 64) - 1])
    payload = new.to_bytes(max(1, (new.bit_length() + 7) // 8), "big")
    return f"{wanted[element.ident]} -> {new}", ebml_replace_payload(data, element, payload)


def _mkv_codec_private(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    """The SPS inside the CodecPrivate (avcC / hvcC)."""
    privates = [e for e in ebml_tree(data) if e.ident == CODEC_PRIVATE and e.size > 8]
    for element in privates:
        payload = data[element.data_start : element.end]
        hevc = payload[0] == 1 and element.size > 23 and (payload[1] & 0x1F) in (1, 2) and payload[22] < 8
        done = config_with_sps(payload, hevc, rng) if payload[0] == 1 else None
        if done is not None:
            return f"CodecPrivate {done[0]}", ebml_replace_payload(data, element, done[1])
    return None


MKV_MUTATORS: list[Mutator] = [
    _mkv_size,
    _mkv_size,
    _mkv_id,
    _mkv_lacing,
    _mkv_block_head,
    _mkv_value,
    _mkv_codec_private,
]


def mkv_huge(data: bytes) -> bytes:
    """A Matroska file whose PixelWidth / PixelHeight and CodecPrivate SPS claim 8192x8192."""
    for element in ebml_tree(data):
        if element.ident == CODEC_PRIVATE and element.size > 8:
            payload = data[element.data_start : element.end]
            done = config_with_sps(payload, False, random.Random(0), huge=True)
            if done is not None:
                data = ebml_replace_payload(data, element, done[1])
                break
    for ident in (PIXEL_WIDTH, PIXEL_HEIGHT):
        element = next(e for e in ebml_tree(data) if e.ident == ident)
        data = ebml_replace_payload(data, element, (8192).to_bytes(2, "big"))
    return data


# ---------------------------------------------------------------------------------------------------
# MPEG-TS


def ts_packets(data: bytes) -> list[int]:
    """Offsets of the 188-byte packets (those starting with the sync byte)."""
    return [p for p in range(0, len(data) - 187, 188) if data[p] == 0x47]


def ts_pid(data: bytes, p: int) -> int:
    return ((data[p + 1] & 0x1F) << 8) | data[p + 2]


def ts_payload_start(data: bytes, p: int) -> int | None:
    afc = (data[p + 3] >> 4) & 3
    if not afc & 1:
        return None
    start = p + 4 + (1 + data[p + 4] if afc & 2 else 0)
    return start if start < p + 188 else None


def _ts_cc(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    packets = ts_packets(data)
    out = bytearray(data)
    picks = rng.sample(packets, min(len(packets), rng.choice([1, 3, 10])))
    how = rng.choice(["random", "repeat", "skip"])
    for p in picks:
        cc = out[p + 3] & 0x0F
        new = rng.randrange(16) if how == "random" else cc if how == "repeat" else (cc + 2) & 0x0F
        if how == "repeat" and p >= 188:
            new = out[p - 188 + 3] & 0x0F
        out[p + 3] = (out[p + 3] & 0xF0) | new
    return f"continuity counter ({how}) on {len(picks)} packets", bytes(out)


def _ts_pes(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    starts = []
    for p in ts_packets(data):
        s = ts_payload_start(data, p)
        if data[p + 1] & 0x40 and s is not None and s + 14 <= p + 188 and data[s : s + 3] == b"\x00\x00\x01":
            starts.append(s)
    if not starts:
        return None
    s = rng.choice(starts)
    out = bytearray(data)
    what = rng.choice(["length", "pts_dts_flags", "header_length", "pts", "stream_id"])
    if what == "length":
        out[s + 4 : s + 6] = rng.choice([1, 3, 0xFFFF, 200]).to_bytes(2, "big")
    elif what == "pts_dts_flags":
        out[s + 7] = (out[s + 7] & 0x3F) | (rng.choice([1, 3]) << 6)
    elif what == "header_length":
        out[s + 8] = rng.choice([0, 4, 200, 255])
    elif what == "pts":
        out[s + 9 : s + 14] = bytes(rng.randrange(256) for _ in range(5))
    else:
        out[s + 3] = rng.choice([0xBD, 0xBE, 0xC0, 0xFF])
    return f"PES {what}", bytes(out)


def _ts_psi(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    """PAT / PMT: section length, a stream type or an elementary PID."""
    tables = []
    for p in ts_packets(data):
        s = ts_payload_start(data, p)
        if s is None or not data[p + 1] & 0x40 or ts_pid(data, p) == 0x1FFF:
            continue
        t = s + 1 + data[s]  # pointer field
        if t + 12 < p + 188 and data[t] in (0x00, 0x02):
            tables.append((p, t))
    if not tables:
        return None
    p, t = rng.choice(tables)
    out = bytearray(data)
    section_length = ((out[t + 1] & 0x0F) << 8) | out[t + 2]
    what = rng.choice(["section_length", "stream", "program"])
    if what == "section_length" or out[t] == 0x00:
        new = rng.choice([0, 5, 1021, 4095, section_length + 1])
        out[t + 1] = (out[t + 1] & 0xF0) | (new >> 8)
        out[t + 2] = new & 0xFF
        return f"table {out[t]} section_length {section_length}->{new}", bytes(out)
    info_len = ((out[t + 10] & 0x0F) << 8) | out[t + 11]
    es = t + 12 + info_len
    if es + 5 > p + 188:
        return None
    if what == "stream":
        new = rng.choice([0x00, 0x02, 0x06, 0x1B, 0x24, 0x80, 0xFF])
        out[es] = new
        return f"PMT stream_type -> {new:#x}", bytes(out)
    new = rng.choice([0x0000, 0x0001, 0x1FFF, 0x0100])
    out[es + 1] = (out[es + 1] & 0xE0) | (new >> 8)
    out[es + 2] = new & 0xFF
    return f"PMT elementary PID -> {new:#x}", bytes(out)


def _ts_adaptation(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    p = rng.choice(ts_packets(data))
    out = bytearray(data)
    out[p + 3] = (out[p + 3] & 0xCF) | (rng.choice([2, 3]) << 4)
    new = rng.choice([0, 1, 182, 183, 184, 255])
    out[p + 4] = new
    return f"adaptation field length {new}", bytes(out)


def _ts_packet_order(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    packets = ts_packets(data)
    p = rng.choice(packets)
    packet = data[p : p + 188]
    how = rng.choice(["drop", "duplicate", "error", "pid"])
    if how == "drop":
        return f"packet at {p} dropped", data[:p] + data[p + 188 :]
    if how == "duplicate":
        return f"packet at {p} twice", data[: p + 188] + packet + data[p + 188 :]
    out = bytearray(data)
    if how == "error":
        out[p + 1] |= 0x80
        return f"packet at {p} transport_error_indicator", bytes(out)
    pid = ts_pid(data, rng.choice(packets))
    out[p + 1] = (out[p + 1] & 0xE0) | (pid >> 8)
    out[p + 2] = pid & 0xFF
    return f"packet at {p} PID -> {pid:#x}", bytes(out)


TS_MUTATORS: list[Mutator] = [_ts_cc, _ts_cc, _ts_pes, _ts_pes, _ts_psi, _ts_adaptation, _ts_packet_order]


# ---------------------------------------------------------------------------------------------------
# IVF and AV1 OBUs


IVF_HEADER = 32


def ivf_frames(data: bytes) -> list[tuple[int, int]]:
    """(offset of the 12-byte frame header, frame size) of each IVF frame."""
    frames, pos = [], int.from_bytes(data[6:8], "little") or IVF_HEADER
    while pos + 12 <= len(data):
        size = int.from_bytes(data[pos : pos + 4], "little")
        if pos + 12 + size > len(data):
            break
        frames.append((pos, size))
        pos += 12 + size
    return frames


def leb128(data: bytes, pos: int) -> tuple[int, int]:
    value = 0
    for i in range(8):
        if pos + i >= len(data):
            raise ValueError("leb128 past the end")
        b = data[pos + i]
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return value, i + 1
    raise ValueError("leb128 too long")


def leb128_bytes(value: int, length: int | None = None) -> bytes:
    """``value`` in LEB128, padded to ``length`` bytes when given (continuation bytes of 0)."""
    out = []
    while True:
        b = value & 0x7F
        value >>= 7
        if value or (length is not None and len(out) + 1 < length):
            out.append(b | 0x80)
        else:
            out.append(b)
            break
    return bytes(out)


@dataclass
class Obu:
    start: int
    """Offset of the header in the frame data."""
    header_len: int
    """Header (1 or 2 bytes) and size field."""
    size_len: int
    size: int

    @property
    def end(self) -> int:
        return self.start + self.header_len + self.size


def obus(frame: bytes) -> list[Obu]:
    out, pos = [], 0
    while pos < len(frame):
        header = 2 if frame[pos] & 0x04 else 1
        if not frame[pos] & 0x02:  # no size field: to the end
            out.append(Obu(pos, header, 0, len(frame) - pos - header))
            break
        try:
            size, size_len = leb128(frame, pos + header)
        except ValueError:
            break
        obu = Obu(pos, header + size_len, size_len, size)
        if obu.end > len(frame):
            break
        out.append(obu)
        pos = obu.end
    return out


def _ivf_replace_frame(data: bytes, header_at: int, size: int, frame: bytes) -> bytes:
    return (
        data[:header_at]
        + len(frame).to_bytes(4, "little")
        + data[header_at + 4 : header_at + 12]
        + frame
        + data[header_at + 12 + size :]
    )


def _ivf_header(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    out = bytearray(data)
    what = rng.choice(["width", "height", "header_length", "fourcc", "rate", "frame_count"])
    at, width = {"width": (12, 2), "height": (14, 2), "header_length": (6, 2), "fourcc": (8, 4)}.get(
        what, (16, 4)
    )
    if what == "frame_count":
        at = 24
    if what == "fourcc":
        out[8:12] = rng.choice([b"VP80", b"VP90", b"H264", b"\x00\x00\x00\x00"])
        return f"IVF fourcc {bytes(out[8:12])!r}", bytes(out)
    new = rng.choice([0, 1, 31, 64, 8192, (1 << (8 * width)) - 1])
    out[at : at + width] = new.to_bytes(width, "little")
    return f"IVF {what} -> {new}", bytes(out)


def ivf_with_frame_size(data: bytes, index: int, size: int) -> bytes:
    """``data`` with the size field of IVF frame ``index`` set to ``size`` (the frame data unchanged)."""
    at = ivf_frames(data)[index][0]
    return data[:at] + (size & 0xFFFFFFFF).to_bytes(4, "little") + data[at + 4 :]


def _ivf_frame_size(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    frames = ivf_frames(data)
    if not frames:
        return None
    at, size = rng.choice(frames)
    new = rng.choice([0, 1, size - 1, size + 1, size + 100, len(data), 0xFFFFFFFF])
    out = bytearray(data)
    out[at : at + 4] = (new & 0xFFFFFFFF).to_bytes(4, "little")
    return f"IVF frame size {size}->{new}", bytes(out)


def _obu_size(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    """An OBU's size field: another value, or a longer or unterminated LEB128 (the IVF frame follows)."""
    frames = [f for f in ivf_frames(data) if obus(data[f[0] + 12 : f[0] + 12 + f[1]])]
    if not frames:
        return None
    at, size = rng.choice(frames)
    frame = data[at + 12 : at + 12 + size]
    obu = rng.choice([o for o in obus(frame) if o.size_len])
    if not obu.size_len:
        return None
    size_at = obu.start + obu.header_len - obu.size_len
    how = rng.choice(["value", "value", "wide", "unterminated"])
    if how == "value":
        new = rng.choice([0, obu.size + 1, max(obu.size - 1, 0), obu.size * 3, 0xFFFFFFFF])
        field_bytes = leb128_bytes(new)
    elif how == "wide":
        new = obu.size
        field_bytes = leb128_bytes(new, 8)
    else:
        new = -1
        field_bytes = b"\xff" * 8
    new_frame = frame[:size_at] + field_bytes + frame[size_at + obu.size_len :]
    return f"OBU type {(frame[obu.start] >> 3) & 15} size {how} {obu.size}->{new}", _ivf_replace_frame(
        data, at, size, new_frame
    )


def _obu_header(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    frames = [f for f in ivf_frames(data) if obus(data[f[0] + 12 : f[0] + 12 + f[1]])]
    if not frames:
        return None
    at, size = rng.choice(frames)
    frame = bytearray(data[at + 12 : at + 12 + size])
    obu = rng.choice(obus(bytes(frame)))
    how = rng.choice(["type", "forbidden", "no_size", "extension"])
    if how == "type":
        frame[obu.start] = (frame[obu.start] & 0x87) | (rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 15]) << 3)
    elif how == "forbidden":
        frame[obu.start] |= 0x80
    elif how == "no_size":
        frame[obu.start] &= ~0x02 & 0xFF
    else:
        frame[obu.start] ^= 0x04
    return f"OBU header {how}", _ivf_replace_frame(data, at, size, bytes(frame))


def av1_sequence_fields(payload: bytes) -> Fields | None:
    """An AV1 sequence header's fields up to max_frame_height_minus_1 (None with timing info)."""
    r, f = BitReader(payload), Fields()
    try:
        f.read(r, "seq_profile", "u", 3)
        f.read(r, "still_picture", "u", 1)
        if f.read(r, "reduced_still_picture_header", "u", 1):
            f.read(r, "seq_level_idx0", "u", 5)
        else:
            if f.read(r, "timing_info_present_flag", "u", 1):
                return None
            if f.read(r, "initial_display_delay_present_flag", "u", 1):
                return None
            for i in range(f.read(r, "operating_points_cnt_minus_1", "u", 5) + 1):
                f.read(r, f"operating_point_idc{i}", "u", 12)
                if f.read(r, f"seq_level_idx{i}", "u", 5) > 7:
                    f.read(r, f"seq_tier{i}", "u", 1)
        wbits = f.read(r, "frame_width_bits_minus_1", "u", 4)
        hbits = f.read(r, "frame_height_bits_minus_1", "u", 4)
        f.read(r, "max_frame_width_minus_1", "u", wbits + 1)
        f.read(r, "max_frame_height_minus_1", "u", hbits + 1)
        f.rest = r.rest()
    except ValueError:
        return None
    return f


def _av1_with_sequence(
    data: bytes, change: Callable[[Fields], tuple[str, Fields]]
) -> tuple[str, bytes] | None:
    """``data`` with the first sequence header rewritten by ``change`` (sizes follow)."""
    for at, size in ivf_frames(data):
        frame = data[at + 12 : at + 12 + size]
        for obu in obus(frame):
            if (frame[obu.start] >> 3) & 15 != 1 or not obu.size_len:
                continue
            fields = av1_sequence_fields(frame[obu.start + obu.header_len : obu.end])
            if fields is None:
                return None
            what, fields = change(fields)
            payload = fields.build()
            head = frame[obu.start : obu.start + obu.header_len - obu.size_len]
            new_frame = frame[: obu.start] + head + leb128_bytes(len(payload)) + payload + frame[obu.end :]
            return f"sequence header {what}", _ivf_replace_frame(data, at, size, new_frame)
    return None


def _sequence_size(fields: Fields, width: int, height: int) -> Fields:
    """``fields`` with 16-bit frame size fields holding ``width`` x ``height``."""
    items = []
    for name, kind, value, n in fields.items:
        if name in ("frame_width_bits_minus_1", "frame_height_bits_minus_1"):
            value = 15
        elif name == "max_frame_width_minus_1":
            value, n = width - 1, 16
        elif name == "max_frame_height_minus_1":
            value, n = height - 1, 16
        items.append((name, kind, value, n))
    return Fields(items, fields.rest)


def _av1_sequence(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    def change(fields: Fields) -> tuple[str, Fields]:
        if rng.random() < 0.4:
            w, h = rng.choice([(65536, 65536), (8192, 8192), (1, 1), (16, 65536)])
            return f"max frame {w}x{h}", _sequence_size(fields, w, h)
        return mutate_fields(fields, rng)

    return _av1_with_sequence(data, change)


IVF_MUTATORS: list[Mutator] = [_ivf_header, _ivf_frame_size, _obu_size, _obu_size, _obu_header, _av1_sequence]


def ivf_huge(data: bytes) -> bytes:
    """An AV1 IVF file whose header and sequence header claim 8192x8192."""
    done = _av1_with_sequence(data, lambda f: ("8192x8192", _sequence_size(f, 8192, 8192)))
    out = bytearray(done[1] if done is not None else data)
    out[12:16] = (8192).to_bytes(2, "little") * 2
    return bytes(out)


# ---------------------------------------------------------------------------------------------------
# Y4M


def y4m(width: int, height: int, frames: int, rng: random.Random) -> bytes:
    """A 4:2:0 YUV4MPEG2 file of noise-free gradients."""
    header = f"YUV4MPEG2 W{width} H{height} F30:1 Ip A1:1 C420jpeg XYSCSS=420JPEG\n".encode()
    out = bytearray(header)
    luma = bytes((x * 3 + y) & 0xFF for y in range(height) for x in range(width))
    chroma = bytes([128]) * ((width // 2) * (height // 2))
    for i in range(frames):
        out += b"FRAME\n" + luma[i:] + luma[:i] + chroma + bytes([(i * 20) & 0xFF]) * len(chroma)
    return bytes(out)


def _y4m_header(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    end = data.index(b"\n")
    params = data[10:end].split(b" ")
    k = rng.randrange(len(params))
    key = params[k][:1]
    values = {
        b"W": [b"0", b"-1", b"1", b"8192", b"99999999999", b"abc", b""],
        b"H": [b"0", b"-1", b"1", b"8192", b"99999999999", b"abc", b""],
        b"F": [b"0:0", b"1:0", b"0:1", b"30000:0", b"-1:1", b"x"],
        b"I": [b"?", b"t", b"b", b"m", b"z"],
        b"A": [b"0:0", b"-1:1", b"x"],
        b"C": [b"444", b"420p10", b"mono", b"422", b"bogus", b"444alpha", b"420p16"],
    }.get(key, [b"", b"\xff" * 300])
    how = rng.choice(["value", "value", "drop", "twice"])
    if how == "drop":
        del params[k]
        what = f"{key.decode()} removed"
    elif how == "twice":
        params.insert(k, params[k])
        what = f"{key.decode()} twice"
    else:
        new = rng.choice(values)
        params[k] = key + new
        what = f"{key.decode()}{new.decode('latin-1')}"
    return f"Y4M header {what}", data[:10] + b" ".join(params) + data[end:]


def _y4m_frame(data: bytes, rng: random.Random) -> tuple[str, bytes] | None:
    marks = []
    pos = data.find(b"FRAME")
    while pos >= 0:
        marks.append(pos)
        pos = data.find(b"FRAME", pos + 5)
    if not marks:
        return None
    at = rng.choice(marks)
    how = rng.choice(["marker", "params", "no_newline", "cut", "short"])
    if how == "marker":
        return "FRAME marker damaged", data[:at] + b"FRAMX" + data[at + 5 :]
    if how == "params":
        return "FRAME with parameters", data[: at + 5] + b" Ixyz " + b"X" * rng.choice([1, 200, 5000]) + data[
            at + 5 :
        ]
    if how == "no_newline":
        return "FRAME without newline", data[: at + 5] + data[at + 6 :]
    if how == "short":
        return "a frame 100 bytes short", data[: at + 6] + data[at + 106 :]
    return "cut inside a frame", data[: at + 6 + rng.randrange(1, 200)]


Y4M_MUTATORS: list[Mutator] = [_y4m_header, _y4m_header, _y4m_frame]


def y4m_huge(data: bytes) -> bytes:
    end = data.index(b"\n")
    params = [p for p in data[10:end].split(b" ") if p[:1] not in (b"W", b"H")]
    return data[:10] + b" W8192 H8192 " + b" ".join(params) + data[end:]


# ---------------------------------------------------------------------------------------------------


MUTATORS: dict[str, list[Mutator]] = {
    "mp4": MP4_MUTATORS,
    "mkv": MKV_MUTATORS,
    "ts": TS_MUTATORS,
    "h264": _annexb_mutators(hevc=False),
    "hevc": _annexb_mutators(hevc=True),
    "ivf": IVF_MUTATORS,
    "y4m": Y4M_MUTATORS,
}
"""Mutators per format family."""

HUGE: dict[str, Callable[[bytes], bytes]] = {
    "mp4": mp4_huge,
    "mkv": mkv_huge,
    "h264": lambda data: annexb_huge(data, hevc=False),
    "hevc": lambda data: annexb_huge(data, hevc=True),
    "ivf": ivf_huge,
    "y4m": y4m_huge,
}
"""Per format family: the file claiming 8192x8192 pictures (its data stays that of a small clip)."""


def mutate(
    family: str, data: bytes, rng: random.Random, stack: int = 1, attempts: int = 20
) -> tuple[str, bytes]:
    """``stack`` mutations of ``data`` (a ``family`` file), one after the other, each one that changes
    it; ``('unchanged', data)`` when none of ``attempts`` tries applied."""
    done_whats = []
    for _ in range(stack):
        for _ in range(attempts):
            mutator = rng.choice(MUTATORS[family])
            try:
                done = mutator(data, rng)
            except (ValueError, IndexError, StopIteration):
                continue  # the parse met something it does not know (an earlier mutation): another one
            if done is not None and done[1] != data:
                done_whats.append(f"{mutator.__name__.lstrip('_')}: {done[0]}")
                data = done[1]
                break
    return "; ".join(done_whats) or "unchanged", data
