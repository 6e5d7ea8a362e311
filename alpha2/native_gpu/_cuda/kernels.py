"""CUDA kernels of alpha2's own: CUDA C compiled at run time with NVRTC, loaded once per context, launched.

NVRTC comes with cuda-python as the driver API does: :func:`cuda_nvrtc` imports ``cuda.bindings.nvrtc``
(cuda-python >= 12.6), else the older ``cuda.nvrtc``, on first use; the NVRTC library itself
(``libnvrtc``: the CUDA toolkit's, or the ``nvidia-cuda-nvrtc`` wheel torch brings) is loaded by the
first call. Either missing is an :class:`~alpha2.native_gpu._cuda.core.CudaUnavailableError` that says
which.

A :class:`CompiledKernel` is one ``__global__`` function of one source, compiled for the device's own
architecture (a cubin: no PTX JIT in the driver), in a module loaded into alpha2's primary context of
that device; :func:`compiled_kernel` compiles each (source, name, ordinal) once per process. Its
:meth:`~CompiledKernel.launch` takes the kernel's one argument, a struct by value, as bytes.

Usage (:mod:`alpha2.native_gpu.render.cuda_tensor` does this)::

    kernel = compiled_kernel(SOURCE, "rgb_tensor", ordinal)
    kernel.launch((blocks_x, blocks_y, 1), (16, 16, 1), stream_handle, struct.pack(...))
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import Any

import numpy as np

from alpha2.native_gpu._cuda.core import CudaError, CudaUnavailableError, check, cuda_init

__all__ = ["CompiledKernel", "compiled_kernel", "cuda_nvrtc", "stream_wait_event"]

_nvrtc_lock = threading.Lock()
_nvrtc: Any = None


def cuda_nvrtc() -> Any:
    """The cuda-python NVRTC module (``cuda.bindings.nvrtc``), imported on first use.

    Raises:
        CudaUnavailableError: cuda-python (or its NVRTC bindings) is not installed.
    """
    global _nvrtc
    with _nvrtc_lock:
        if _nvrtc is None:
            try:
                from cuda.bindings import nvrtc
            except ImportError:
                try:
                    from cuda import nvrtc  # type: ignore[no-redef,unused-ignore]
                except ImportError as exc:
                    raise CudaUnavailableError(
                        "cuda-python's NVRTC bindings are not installed (cuda.bindings.nvrtc); install "
                        "alpha2[cuda] (pip install cuda-python) to compile alpha2's CUDA kernels"
                    ) from exc
            _nvrtc = nvrtc
        return _nvrtc


def _nvrtc_check(nvrtc: Any, result: Any, what: str) -> Any:
    """Unpack an NVRTC return value ``(nvrtcResult, *values)``; raise a CudaError unless it succeeded."""
    if isinstance(result, tuple):
        err, values = result[0], result[1:]
    else:
        err, values = result, ()
    if int(err) != 0:
        name = getattr(err, "name", None) or f"nvrtcResult({int(err)})"
        raise CudaError(f"{what} failed: {name}", cu_result=int(err), result_name=str(name))
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _compile_cubin(source: str, name: str, arch: str) -> bytes:
    """``source`` compiled by NVRTC into a cubin for ``arch`` (``sm_90``).

    Raises:
        CudaUnavailableError: NVRTC cannot be loaded.
        CudaError: the source does not compile (the log is in the message).
    """
    nvrtc = cuda_nvrtc()
    options = [f"--gpu-architecture={arch}".encode(), b"--std=c++14"]
    try:
        program = _nvrtc_check(
            nvrtc,
            nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], []),
            "nvrtcCreateProgram",
        )
    except CudaError:
        raise
    except Exception as exc:  # the bindings load libnvrtc on the first call: absent, they raise here
        # cuda-python's loader looks for the NVRTC of its own CUDA major version; another one (torch's
        # wheel of a newer CUDA beside an older cuda-python) has the same C interface.
        found = _ctypes_nvrtc()
        if isinstance(found, str):
            raise CudaUnavailableError(
                f"NVRTC (libnvrtc, the CUDA run-time compiler) could not be loaded: cuda-python's loader: "
                f"{type(exc).__name__}: {str(exc).strip()}; by its file: {found}; install the CUDA "
                "toolkit's NVRTC or the nvidia-cuda-nvrtc wheel"
            ) from exc
        return found.compile(source, name, arch, options)
    try:
        result = nvrtc.nvrtcCompileProgram(program, len(options), options)
        if int(result[0] if isinstance(result, tuple) else result) != 0:
            size = _nvrtc_check(nvrtc, nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
            log = b" " * int(size)
            _nvrtc_check(nvrtc, nvrtc.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
            text = log.rstrip(b"\0 ").decode(errors="replace")
            raise CudaError(
                f"NVRTC could not compile alpha2's kernel {name} for {arch}: {text}",
                cu_result=int(result[0] if isinstance(result, tuple) else result),
                result_name="NVRTC_ERROR_COMPILATION",
            )
        size = _nvrtc_check(nvrtc, nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
        cubin = b" " * int(size)
        _nvrtc_check(nvrtc, nvrtc.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN")
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(program)


_NVRTC_FILES = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so")
"""NVRTC's library files, newest CUDA first."""
_NVRTC_FOLDERS = ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib")
"""Where the nvidia-cuda-nvrtc wheels put them, under a site-packages folder (CUDA 13's, 12's)."""


class _NvrtcLibrary:
    """NVRTC's C interface through ctypes: the few calls a compile to a cubin takes."""

    def __init__(self, library: ctypes.CDLL, path: str) -> None:
        self._lib = library
        self.path = path
        """The file loaded."""

    def _check(self, result: int, what: str) -> None:
        if result != 0:
            self._lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            name = (self._lib.nvrtcGetErrorString(result) or b"").decode(errors="replace")
            raise CudaError(f"{what} failed: {name or result}", cu_result=result, result_name=name)

    def compile(self, source: str, name: str, arch: str, options: list[bytes]) -> bytes:
        """``source`` compiled into a cubin (as :func:`_compile_cubin`)."""
        lib = self._lib
        program = ctypes.c_void_p()
        self._check(
            lib.nvrtcCreateProgram(
                ctypes.byref(program), source.encode(), f"{name}.cu".encode(), 0, None, None
            ),
            "nvrtcCreateProgram",
        )
        try:
            argv = (ctypes.c_char_p * len(options))(*options)
            result = lib.nvrtcCompileProgram(program, len(options), argv)
            if result != 0:
                size = ctypes.c_size_t()
                self._check(lib.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "nvrtcGetProgramLogSize")
                log = ctypes.create_string_buffer(size.value)
                self._check(lib.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
                raise CudaError(
                    f"NVRTC could not compile alpha2's kernel {name} for {arch}: "
                    f"{log.value.decode(errors='replace').strip()}",
                    cu_result=result,
                    result_name="NVRTC_ERROR_COMPILATION",
                )
            size = ctypes.c_size_t()
            self._check(lib.nvrtcGetCUBINSize(program, ctypes.byref(size)), "nvrtcGetCUBINSize")
            cubin = ctypes.create_string_buffer(size.value)
            self._check(lib.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN")
            return cubin.raw
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(program))


def _nvrtc_candidates() -> list[str]:
    """NVRTC library files to try: those of the nvidia-cuda-nvrtc wheels on ``sys.path``, then the
    CUDA toolkit's (``CUDA_HOME`` / ``CUDA_PATH``, ``/usr/local/cuda``), then the loader's own search."""
    folders = [os.path.join(entry, sub) for entry in sys.path if entry for sub in _NVRTC_FOLDERS]
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(variable)
        if home:
            folders.append(os.path.join(home, "lib64"))
    folders.append("/usr/local/cuda/lib64")
    paths = [os.path.join(folder, file) for folder in folders for file in _NVRTC_FILES]
    return [path for path in paths if os.path.exists(path)] + list(_NVRTC_FILES)


def _ctypes_nvrtc() -> _NvrtcLibrary | str:
    """NVRTC loaded by its file, or why none loads."""
    tried: list[str] = []
    for candidate in _nvrtc_candidates():
        try:
            return _NvrtcLibrary(ctypes.CDLL(candidate), candidate)
        except OSError as exc:
            tried.append(f"{candidate}: {exc}")
    return "no NVRTC library file loads (" + "; ".join(tried[-len(_NVRTC_FILES) :]) + ")"


class CompiledKernel:
    """One ``__global__`` function, compiled for one device and loaded into alpha2's primary context
    of it (kept for the process's life, as that context is)."""

    def __init__(self, source: str, name: str, ordinal: int) -> None:
        """Compile and load ``name`` of ``source`` for CUDA device ``ordinal``.

        Raises:
            CudaUnavailableError: no CUDA or no NVRTC.
            CudaError: the source does not compile, or the module does not load.
        """
        from alpha2.native_gpu._cuda.interop import primary_context

        cu = cuda_init()
        self._cu = cu
        self.name = name
        """The kernel's name in the source (``extern "C"``)."""
        self.ordinal = ordinal
        """The CUDA device."""
        self.ctx = primary_context(ordinal)
        """alpha2's primary context of the device: the module lives there."""
        device = check(cu.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        attribute = cu.CUdevice_attribute
        major = check(
            cu.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)",
        )
        minor = check(
            cu.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)",
        )
        self.arch = f"sm_{int(major)}{int(minor)}"
        """The architecture compiled for."""
        cubin = np.frombuffer(_compile_cubin(source, name, self.arch), dtype=np.uint8).copy()
        with self.ctx:
            self._module = check(cu.cuModuleLoadData(cubin.ctypes.data), f"cuModuleLoadData ({name})")
            self._function = check(
                cu.cuModuleGetFunction(self._module, name.encode()), f"cuModuleGetFunction ({name})"
            )

    def launch(
        self, grid: tuple[int, int, int], block: tuple[int, int, int], stream: Any, argument: bytes
    ) -> None:
        """Enqueue the kernel on ``stream`` (a CUstream or its handle; 0: the legacy default stream) with
        one argument: ``argument``, the bytes of the struct it takes by value (copied at the launch).

        Raises:
            CudaError: the launch failed.
        """
        data = np.frombuffer(argument, dtype=np.uint8).copy()
        pointers = np.array([data.ctypes.data], dtype=np.uint64)
        with self.ctx:
            check(
                self._cu.cuLaunchKernel(self._function, *grid, *block, 0, stream, pointers.ctypes.data, 0),
                f"cuLaunchKernel ({self.name})",
            )


_kernels: dict[tuple[str, str, int], CompiledKernel] = {}
_kernels_lock = threading.Lock()
_failures: dict[tuple[str, str, int], CudaUnavailableError | CudaError] = {}


def compiled_kernel(source: str, name: str, ordinal: int) -> CompiledKernel:
    """The kernel ``name`` of ``source`` for CUDA device ``ordinal``: compiled on the first call, the
    same object after (a failure is remembered and raised again, not compiled again).

    Raises:
        CudaUnavailableError: no CUDA or no NVRTC.
        CudaError: the source does not compile, or the module does not load.
    """
    key = (source, name, ordinal)
    with _kernels_lock:
        kernel = _kernels.get(key)
        if kernel is not None:
            return kernel
        failure = _failures.get(key)
        if failure is not None:
            raise failure
        try:
            kernel = CompiledKernel(source, name, ordinal)
        except (CudaUnavailableError, CudaError) as exc:
            _failures[key] = exc
            raise
        _kernels[key] = kernel
        return kernel


def stream_wait_event(ctx: Any, stream: Any, event: Any) -> None:
    """Make later work on ``stream`` (a CUstream or handle; 0: legacy default) wait for ``event``'s last
    record (a :class:`~alpha2.native_gpu._cuda.interop.CudaEvent`), on the GPU; nothing when it was
    never recorded.

    Raises:
        CudaError: the driver call failed.
    """
    if not event.recorded:
        return
    with ctx:
        check(ctx._cu.cuStreamWaitEvent(stream, event._holder[0], 0), "cuStreamWaitEvent")
