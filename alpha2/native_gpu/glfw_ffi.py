"""pyGLFW imported without cffi's C parser: its one ``cffi.FFI()`` answered by cffi's C-level FFI class.

pyGLFW (``glfw/__init__.py``) makes a ``cffi.FFI()`` at import, only to recognise and cast the cffi
pointers a caller may hand to ``create_window_surface`` (``isinstance(ptr, ffi.CData)``,
``ffi.cast("uintptr_t", ptr)``). The Python class's constructor loads cffi's C parser (pycparser: 20-40
ms of a 2-core machine's start-up, before the window), which nothing else on the way to the player's
first frame needs (wgpu-py's declarations come from :mod:`.webgpu_ffi`'s cache). ``_cffi_backend.FFI``
has both and parses those type names in C.

:func:`import_glfw` runs pyGLFW's own code unchanged, except that its ``from cffi import FFI`` gets a
stand-in module whose ``FFI`` is that class; only pyGLFW's namespace sees it (its ``__import__``, as
:mod:`.webgpu_ffi` does for wgpu-py), so another thread importing cffi meanwhile is not affected.
Without cffi, for a pyGLFW that is not a plain source file, or on any failure, pyGLFW is left to its own
import.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["import_glfw"]


def import_glfw() -> bool:
    """Import pyGLFW with the C-level FFI; False when it was not imported here (already imported, not
    installed, no cffi, or anything unexpected: the caller's own import then does it as pyGLFW does)."""
    import builtins
    import types

    if "glfw" in sys.modules:
        return False
    try:
        import _cffi_backend
        import cffi

        spec = importlib.util.find_spec("glfw")
    except (ImportError, ValueError):
        return False
    if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader:
        return False
    code = spec.loader.get_code("glfw")
    if code is None:
        return False
    stand_in = types.ModuleType("cffi")
    stand_in.__dict__.update(cffi.__dict__)
    stand_in.FFI = _cffi_backend.FFI  # type: ignore[attr-defined]
    active = [True]

    def import_(
        name: str, globals: Any = None, locals: Any = None, fromlist: Sequence[str] = (), level: int = 0
    ) -> Any:
        if active[0] and name == "cffi" and level == 0:
            return stand_in
        return builtins.__import__(name, globals, locals, fromlist, level)

    module = importlib.util.module_from_spec(spec)
    own_builtins = dict(builtins.__dict__)
    own_builtins["__import__"] = import_
    module.__dict__["__builtins__"] = own_builtins
    sys.modules["glfw"] = module
    try:
        exec(code, module.__dict__)
    except Exception:  # pyGLFW's own import, by the caller, says what is wrong
        for name in [n for n in sys.modules if n == "glfw" or n.startswith("glfw.")]:
            del sys.modules[name]
        return False
    finally:
        active[0] = False
    return True
