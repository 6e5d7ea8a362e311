"""alpha2.gpu.identity: DeviceId validation, equality and repr."""

from __future__ import annotations

import uuid

import pytest

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.identity import DeviceId

U1 = b"\x01" * 16


def test_uuid_and_luid_refuse_ints() -> None:
    # bytes(16) is 16 zeros: an int uuid made every such GPU the same device.
    with pytest.raises(InvalidInputError, match="uuid must be 16 bytes"):
        DeviceId(0x10DE, 1, "x", uuid=16)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="luid must be 8 bytes"):
        DeviceId(0x10DE, 1, "x", luid=8)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="uuid"):
        DeviceId(0x10DE, 1, "x", uuid=[1] * 16)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="8 bytes, got 3"):
        DeviceId(0x10DE, 1, "x", luid=b"abc")


def test_uuid_and_luid_forms() -> None:
    text = "12345678-1234-1234-1234-123456789abc"
    for form in (text, uuid.UUID(text), uuid.UUID(text).bytes, bytearray(uuid.UUID(text).bytes)):
        assert DeviceId(1, 2, uuid=form).uuid_str == text  # type: ignore[arg-type]
    luid = DeviceId(1, 2, luid=bytearray(range(8))).luid
    assert type(luid) is bytes and luid == bytes(range(8))


@pytest.mark.parametrize(
    "kwargs", [{"vendor_id": "10de"}, {"vendor_id": True}, {"device_id": -1}, {"device_id": 1.0}, {"name": 5}]
)
def test_ids_and_name_are_type_checked(kwargs: dict[str, object]) -> None:
    fields: dict[str, object] = {"vendor_id": 0x10DE, "device_id": 1, "name": "x", **kwargs}
    with pytest.raises(InvalidInputError, match="DeviceId"):
        DeviceId(**fields)  # type: ignore[arg-type]


def test_equality_by_uuid_else_ids_and_name() -> None:
    a = DeviceId(0x10DE, 0x2330, "H100", uuid=U1)
    b = DeviceId(0x10DE, 0x2330, "H100", uuid=b"\x02" * 16)
    no_uuid = DeviceId(0x10DE, 0x2330, "H100")
    assert a != b and a == DeviceId(0x10DE, 0, "other", uuid=U1)
    # Documented: not transitive where one side lacks a UUID.
    assert a == no_uuid and no_uuid == b
    assert "not transitive" in (DeviceId.__doc__ or "")


def test_repr_shows_the_uuid_as_text() -> None:
    text = repr(DeviceId(0x10DE, 0x2330, "H100", uuid=U1, luid=bytes(8), drm_render_node=(226, 128)))
    assert "uuid='01010101-0101-0101-0101-010101010101'" in text and "\\x01" not in text
    assert "vendor_id=0x10de" in text and "luid='0000000000000000'" in text
