"""alpha2.native_gpu.webgpu_ffi: wgpu-py's C declarations from the cache are cffi's own, and a cache that
is missing, damaged or unwritable leaves wgpu-py's import as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("wgpu")
pytest.importorskip("cffi")

# A fresh interpreter: alpha2.native_gpu first (the hook), then wgpu-py; prints what its ffi is and what
# it makes of wgpu-py's C types (as text, which compares across interpreters).
_SEEN = """
import json, sys
import alpha2.native_gpu
from alpha2.native_gpu.render.renderer import _WGPU_C_TYPES
from wgpu.backends.wgpu_native import _api
from wgpu.backends.wgpu_native._ffi import ffi, lib
assert _api.ffi is ffi
def layout(ctype, depth=0):
    # cffi names a typedef'd struct by its tag out of line ('struct WGPUColor' for 'WGPUColor'): compared
    # by kind, size and fields (two levels down), which is what wgpu-py and the driver see
    if depth > 2:
        return ctype.kind
    try:
        size = ffi.sizeof(ctype)  # first: an out-of-line struct's fields are laid out on first use
    except Exception:  # opaque, or a function
        size = None
    if ctype.kind in ("pointer", "array"):
        return [ctype.kind, size, layout(ctype.item, depth + 1)]
    if ctype.kind == "struct" and size is not None:
        return ["struct", size, [[n, f.offset, layout(f.type, depth + 1)] for n, f in ctype.fields]]
    if ctype.kind == "function":
        return ["function", [layout(a, depth + 1) for a in ctype.args], layout(ctype.result, depth + 1)]
    return [ctype.kind, size]
seen = []
for cdecl in _WGPU_C_TYPES:
    try:
        seen.append(layout(ffi.typeof(cdecl)))
    except Exception:  # a raw function type, which only ffi.callback takes (each mode its own error)
        seen.append("refused")
print(json.dumps({"ffi": type(ffi).__module__ + "." + type(ffi).__name__, "types": seen,
                  "version": lib.wgpuGetVersion(), "hook": alpha2.native_gpu.webgpu_ffi.installed()}))
"""

# Without alpha2: wgpu-py as it is.
_PLAIN = _SEEN.replace(
    "import alpha2.native_gpu\n", "import wgpu.backends.wgpu_native\nimport alpha2.native_gpu\n"
)


def _run(script: str, cache: Path) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def _cache_files(cache: Path) -> list[Path]:
    return sorted((cache / "alpha2").glob("webgpu-ffi-*.marshal"))


def test_cached_declarations_are_cffis_own(tmp_path: Path) -> None:
    """First start: cffi parses, the cache is written; next start: the out-of-line FFI from it, whose
    types, sizes and library are those of cffi's own parse."""
    plain = _run(_PLAIN, tmp_path / "unused")
    assert plain["ffi"] == "cffi.api.FFI" and not plain["hook"]
    first = _run(_SEEN, tmp_path)
    assert first["ffi"] == "cffi.api.FFI" and first["hook"]
    assert len(_cache_files(tmp_path)) == 1
    second = _run(_SEEN, tmp_path)
    assert second["ffi"] == "_cffi_backend.FFI"
    assert second["types"] == first["types"] == plain["types"]
    assert second["version"] == plain["version"]


def test_damaged_cache_falls_back_and_is_rewritten(tmp_path: Path) -> None:
    _run(_SEEN, tmp_path)
    (path,) = _cache_files(tmp_path)
    path.write_bytes(b"not marshal data at all")
    again = _run(_SEEN, tmp_path)
    assert again["ffi"] == "cffi.api.FFI"  # parsed as before
    assert _run(_SEEN, tmp_path)["ffi"] == "_cffi_backend.FFI"  # and the file was written anew


def test_foreign_data_is_refused(tmp_path: Path) -> None:
    """Data of the right encoding but not the FFI's arguments is not used (nor anything callable)."""
    import marshal

    _run(_SEEN, tmp_path)
    (path,) = _cache_files(tmp_path)
    path.write_bytes(marshal.dumps(("wgpu.h", {"_version": 0x2601, "_types": b"", "_includes": ()})))
    assert _run(_SEEN, tmp_path)["ffi"] == "cffi.api.FFI"


def test_unwritable_cache_leaves_the_import_as_it_was(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    seen = _run(_SEEN, blocker)
    assert seen["ffi"] == "cffi.api.FFI" and seen["types"]


def test_install_after_wgpu_is_a_no_op() -> None:
    script = (
        "import wgpu.backends.wgpu_native\n"
        "from alpha2.native_gpu import webgpu_ffi\n"
        "print(webgpu_ffi.install(), webgpu_ffi.installed())\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "False"]
