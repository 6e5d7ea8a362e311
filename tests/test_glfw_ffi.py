"""alpha2.native_gpu.glfw_ffi: pyGLFW imported without cffi's C parser works as its own import does
(its pointer casts for ``create_window_surface``), and is left to its own import when it cannot be."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

pytest.importorskip("cffi")
if importlib.util.find_spec("glfw") is None:
    pytest.skip("pyGLFW is not installed", allow_module_level=True)


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_glfw_imports_without_the_parser_and_casts_cffi_pointers() -> None:
    out = _run(
        "import sys, ctypes\n"
        "from alpha2.native_gpu.glfw_ffi import import_glfw\n"
        "assert import_glfw()\n"
        "import glfw\n"
        "assert sys.modules['glfw'] is glfw and glfw.__spec__.name == 'glfw'\n"
        "assert 'pycparser' not in sys.modules and 'cffi.cparser' not in sys.modules\n"
        "import cffi\n"
        "other = cffi.FFI()\n"  # anyone else's FFI is cffi's own class, parser and all
        "assert type(other).__module__ == 'cffi.api'\n"
        "pointer = other.cast('void *', 4242)\n"
        "assert glfw._cffi_to_ctypes_void_p(pointer).value == 4242\n"
        "assert glfw._cffi_to_ctypes_void_p(7) == 7\n"
        "assert not import_glfw()\n"  # imported already
        "print(type(glfw.ffi).__module__, callable(glfw.create_window))\n"
    )
    assert out == "_cffi_backend True"


def test_a_failing_glfw_import_is_left_to_pyglfw() -> None:
    out = _run(
        "import sys, importlib.machinery\n"
        "real = importlib.machinery.SourceFileLoader.get_code\n"
        "def broken(self, name):\n"
        "    code = real(self, name)\n"
        "    return compile('raise RuntimeError(\"no\")', '<x>', 'exec') if name == 'glfw' else code\n"
        "importlib.machinery.SourceFileLoader.get_code = broken\n"
        "from alpha2.native_gpu.glfw_ffi import import_glfw\n"
        "assert not import_glfw()\n"
        "assert not any(n == 'glfw' or n.startswith('glfw.') for n in sys.modules)\n"
        "importlib.machinery.SourceFileLoader.get_code = real\n"
        "import glfw\n"
        "print(type(glfw.ffi).__module__)\n"
    )
    assert out == "cffi.api"
