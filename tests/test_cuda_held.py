"""The per-frame CUDA calls made with the GIL held (``ALPHA2_CUDA_GIL``), over a fake libcuda: the
struct is cuda.h's, each call gets the handles and values it should, and failures are typed."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pytest

from alpha2.gpu.errors import InvalidInputError
from alpha2.native_gpu._cuda import held
from alpha2.native_gpu._cuda.core import CudaError, CudaUnavailableError


class FakeFunction:
    """A ctypes function of the fake library: records its arguments, returns ``result``."""

    def __init__(self, name: str, calls: list[tuple[str, tuple[Any, ...]]]) -> None:
        self.name = name
        self.calls = calls
        self.result = 0
        self.argtypes: list[Any] = []
        self.restype: Any = None
        self.on_call: Callable[..., None] | None = None

    def __call__(self, *args: Any) -> int:
        self.calls.append((self.name, args))
        if self.on_call is not None:
            self.on_call(*args)
        return self.result


class FakeLibrary:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.functions: dict[str, FakeFunction] = {}

    def __getattr__(self, name: str) -> FakeFunction:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.functions.setdefault(name, FakeFunction(name, self.calls))


def test_the_copy_struct_is_cuda_h_s() -> None:
    # sizeof(CUDA_MEMCPY2D) and the offsets in cuda.h (x86-64): sixteen 8-byte slots, the memory types
    # (enums) padded to 8.
    assert ctypes.sizeof(held._Memcpy2D) == 128
    offsets = {name: getattr(held._Memcpy2D, name).offset for name, _ in held._Memcpy2D._fields_}
    assert offsets["srcMemoryType"] == 16 and offsets["srcDevice"] == 32 and offsets["srcPitch"] == 48
    assert offsets["dstMemoryType"] == 72 and offsets["dstArray"] == 96
    assert offsets["WidthInBytes"] == 112 and offsets["Height"] == 120


def test_the_calls_get_their_handles_and_values() -> None:
    library = FakeLibrary()
    copies: list[dict[str, int]] = []

    def read_copy(pointer: Any, stream: int) -> None:
        struct = ctypes.cast(pointer, ctypes.POINTER(held._Memcpy2D)).contents
        copies.append({name: getattr(struct, name) or 0 for name, _ in held._Memcpy2D._fields_})

    library.cuMemcpy2DAsync_v2.on_call = read_copy
    calls = held.HeldCalls(library)
    calls.push_context(0x1000)
    calls.copy_to_array(0x7F00, 2048, 0x2000, 1920, 1080, 0x3000)
    calls.record(0x4000, 0x3000)
    calls.wait_event(0x3000, 0x4000)
    calls.pop_context()
    names = [name for name, _ in library.calls]
    assert names == [
        "cuCtxPushCurrent_v2",
        "cuMemcpy2DAsync_v2",
        "cuEventRecord",
        "cuStreamWaitEvent",
        "cuCtxPopCurrent_v2",
    ]
    assert library.calls[0][1] == (0x1000,) and library.calls[2][1] == (0x4000, 0x3000)
    assert library.calls[3][1] == (0x3000, 0x4000, 0)
    assert library.calls[1][1][1] == 0x3000
    (copy,) = copies
    assert (copy["srcMemoryType"], copy["srcDevice"], copy["srcPitch"]) == (2, 0x7F00, 2048)
    assert (copy["dstMemoryType"], copy["dstArray"], copy["WidthInBytes"], copy["Height"]) == (
        3,
        0x2000,
        1920,
        1080,
    )
    assert copy["srcXInBytes"] == copy["srcY"] == copy["dstXInBytes"] == copy["dstY"] == 0
    for function in library.functions.values():
        assert function.restype is ctypes.c_int and function.argtypes, function.name


def test_a_query_tells_not_ready_from_a_failure() -> None:
    library = FakeLibrary()
    calls = held.HeldCalls(library)
    assert calls.query(0x4000) is True
    library.cuEventQuery.result = 600  # CUDA_ERROR_NOT_READY: not an error
    assert calls.query(0x4000) is False
    library.cuEventQuery.result = 700  # CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(CudaError) as raised:
        calls.query(0x4000)
    assert raised.value.cu_result == 700 and "cuEventQuery" in raised.value.message
    library.cuMemcpy2DAsync_v2.result = 1
    with pytest.raises(CudaError):
        calls.copy_to_array(1, 2, 3, 4, 5, 0)


def test_the_environment_chooses_once(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []

    def fake_pydll(name: str) -> FakeLibrary:
        opened.append(name)
        return FakeLibrary()

    monkeypatch.setattr(held, "cuda_driver", lambda: None)
    monkeypatch.setattr(held.ctypes, "PyDLL", fake_pydll)
    for value, expect in (
        ("", None),
        ("release", None),
        ("hold", held.HeldCalls),
        (" HOLD ", held.HeldCalls),
    ):
        monkeypatch.setattr(held, "_held", [])
        monkeypatch.setenv(held.ENV, value)
        made = held.held_calls()
        assert made is None if expect is None else isinstance(made, expect), value
        monkeypatch.setenv(held.ENV, "release")
        assert held.held_calls() is made, "read once"
    assert opened == ["libcuda.so.1", "libcuda.so.1"]
    monkeypatch.setattr(held, "_held", [])
    monkeypatch.setenv(held.ENV, "sometimes")
    with pytest.raises(InvalidInputError, match="ALPHA2_CUDA_GIL"):
        held.held_calls()


def test_handles_are_their_pointer_values() -> None:
    class Handle:
        def __int__(self) -> int:
            return 0xABC

    assert held.handle_int(None) == 0 and held.handle_int(0) == 0 and held.handle_int(Handle()) == 0xABC


def test_the_semaphore_structs_are_cuda_h_s() -> None:
    assert ctypes.sizeof(held._SemaphoreHandleDesc) == 96
    assert held._SemaphoreHandleDesc.handle.offset == 8 and held._SemaphoreHandleDesc.flags.offset == 24
    # SIGNAL_PARAMS and WAIT_PARAMS: params (72 bytes, the fence value first), flags, reserved[16].
    assert ctypes.sizeof(held._SemaphoreParams) == 144
    assert held._SemaphoreParams.fence_value.offset == 0 and held._SemaphoreParams.flags.offset == 72


def test_semaphores_are_imported_waited_signalled_and_destroyed_by_handle() -> None:
    library = FakeLibrary()
    seen: list[tuple[str, int, int]] = []

    def import_semaphore(out: Any, desc: Any) -> None:
        struct = ctypes.cast(desc, ctypes.POINTER(held._SemaphoreHandleDesc)).contents
        seen.append(("import", struct.type, struct.handle.fd))
        ctypes.cast(out, ctypes.POINTER(ctypes.c_void_p)).contents.value = 0x5000

    def enqueue(name: str) -> Callable[..., None]:
        def record(semaphores: Any, params: Any, count: int, stream: int) -> None:
            handle = ctypes.cast(semaphores, ctypes.POINTER(ctypes.c_void_p)).contents.value
            value = ctypes.cast(params, ctypes.POINTER(held._SemaphoreParams)).contents.fence_value
            assert count == 1 and stream == 0x3000
            seen.append((name, handle or 0, value))

        return record

    library.cuImportExternalSemaphore.on_call = import_semaphore
    library.cuWaitExternalSemaphoresAsync.on_call = enqueue("wait")
    library.cuSignalExternalSemaphoresAsync.on_call = enqueue("signal")
    calls = held.HeldCalls(library)
    semaphore = calls.import_semaphore(17, 9)
    calls.wait_semaphore(semaphore, 4, 0x3000)
    calls.signal_semaphore(semaphore, 5, 0x3000)
    calls.destroy_semaphore(semaphore)
    assert seen == [("import", 9, 17), ("wait", 0x5000, 4), ("signal", 0x5000, 5)]
    assert library.calls[-1] == ("cuDestroyExternalSemaphore", (0x5000,))
    library.cuImportExternalSemaphore.result = 999
    with pytest.raises(CudaError, match="cuImportExternalSemaphore"):
        calls.import_semaphore(18, 1)


def test_a_driver_ctypes_cannot_load_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_library(name: str) -> Any:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(held, "cuda_driver", lambda: None)
    monkeypatch.setattr(held.ctypes, "PyDLL", no_library)
    monkeypatch.setattr(held, "_held", [])
    monkeypatch.setenv(held.ENV, "hold")
    with pytest.raises(CudaUnavailableError, match="ALPHA2_CUDA_GIL=hold"):
        held.held_calls()
