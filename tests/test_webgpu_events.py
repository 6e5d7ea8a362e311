"""Event pumping: Dawn delivers map callbacks only from ``process_events``, found in its backend module."""

from __future__ import annotations

import sys
import types

import pytest

from alpha2.gpu.webgpu import pump_events, wait_promise


def _device_in(module_name: str, calls: list[int]) -> object:
    module = types.ModuleType(module_name)
    module.process_events = lambda: calls.append(1)  # type: ignore[attr-defined]
    sys.modules[module_name] = module
    cls = type("GPUDevice", (), {"__module__": module_name, "queue": None, "create_texture": None})
    return cls()


def test_pump_calls_the_backend_modules_process_events() -> None:
    calls: list[int] = []
    device = _device_in("wgpudawn_test_backend._api", calls)
    try:
        pump_events(device)
        assert calls == [1]
    finally:
        del sys.modules["wgpudawn_test_backend._api"]


def test_wait_promise_pumps_until_settled() -> None:
    calls: list[int] = []
    device = _device_in("wgpudawn_test_backend2._api", calls)
    promise = types.SimpleNamespace(_state="pending")

    def settle_on_third() -> None:
        calls.append(1)
        if len(calls) >= 3:
            promise._state = "fulfilled"

    sys.modules["wgpudawn_test_backend2._api"].process_events = settle_on_third  # type: ignore[attr-defined]
    try:
        assert wait_promise(promise, 5.0, device)
        assert len(calls) == 3
    finally:
        del sys.modules["wgpudawn_test_backend2._api"]


def test_wait_promise_gives_false_at_the_deadline() -> None:
    device = _device_in("wgpudawn_test_backend3._api", [])
    try:
        assert not wait_promise(types.SimpleNamespace(_state="pending"), 0.05, device)
    finally:
        del sys.modules["wgpudawn_test_backend3._api"]


def test_dawn_devices_class_module_has_process_events() -> None:
    """The real layout: wgpudawn's GPUDevice is defined where ``process_events`` is (no adapter needed)."""
    api = pytest.importorskip("wgpudawn.backends.dawn._api")
    assert api.GPUDevice.__module__ == api.__name__
    assert callable(api.process_events)
