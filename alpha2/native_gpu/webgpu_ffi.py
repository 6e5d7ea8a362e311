"""wgpu-py's C declarations without pycparser: the start-up's largest single cost, kept on disk.

wgpu-py (``wgpu.backends.wgpu_native._ffi``) hands all of webgpu.h to ``cffi.FFI().cdef`` on import, which
runs pycparser over it (0.15 s of a quiet 2-core machine, twice that while the decoder and the window load
beside it), and cffi then parses every C type written as text (``ffi.new("WGPUTextureDescriptor *")``) with
pycparser again on its first use. cffi's out-of-line ABI mode keeps the parsed declarations as data (what
``cffi.recompiler.make_py_source`` writes): an FFI made from that data parses type strings in C and is
built in well under a millisecond, with the same methods wgpu-py calls (``new``, ``cast``, ``callback``,
``dlopen``, ...).

:func:`install` puts an import hook on ``sys.meta_path`` for that one module. When it is imported, its own
code runs unchanged, except that its ``from cffi import FFI`` gets a stand-in whose ``cdef(header)`` looks
for the declarations of exactly that header in the cache (keyed by a hash of the header's text, cffi's
version and the interpreter's tag): found, the module's ``ffi`` is the out-of-line FFI; not found, the
header is parsed by cffi as before and its declarations are written to the cache for the next start
(atomically; a cache that cannot be written is passed over). The cache holds data only (``marshal`` of
bytes, tuples, strings and ints, checked before use), never code. Anything unexpected (another wgpu-py
whose module does more than one ``cdef``, a frozen install without the source, a broken cache file) ends
in the module's own import, as if the hook were not there. site-packages is never written.

The cache is ``$XDG_CACHE_HOME/alpha2`` (``~/.cache/alpha2``); one file of about 90 kB per header.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

# Imported with alpha2.native_gpu, before any GPU work: the rest loads when wgpu-py's module does.
if TYPE_CHECKING:
    import importlib.abc
    import importlib.machinery
    import types

__all__ = ["cache_path", "install", "installed", "prebuilt_ffi"]

TARGET_MODULE = "wgpu.backends.wgpu_native._ffi"
"""The module whose ``cdef`` is served from the cache."""
_FORMAT = 1
"""Bumped when what is stored changes."""
_FFI_KEYWORDS = frozenset({"_version", "_types", "_globals", "_struct_unions", "_enums", "_typenames"})
"""The out-of-line FFI's constructor arguments that are accepted from the cache (``_includes`` is not:
it would need other FFI objects)."""
_lock = threading.Lock()


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "alpha2")


def cache_path(csource: str) -> str:
    """The cache file of the declarations of ``csource`` under this cffi and this interpreter."""
    import hashlib

    import _cffi_backend
    import cffi

    key = hashlib.sha256()
    for part in (
        f"alpha2 webgpu ffi {_FORMAT}",
        str(cffi.__version__),
        str(getattr(_cffi_backend, "__version__", "")),
        sys.implementation.cache_tag or "",
        csource,
    ):
        key.update(part.encode("utf-8", "surrogatepass"))
        key.update(b"\0")
    return os.path.join(_cache_dir(), f"webgpu-ffi-{key.hexdigest()[:40]}.marshal")


def _valid_value(value: Any) -> bool:
    if isinstance(value, (bytes, str, int)):
        return True
    if isinstance(value, tuple):
        return all(_valid_value(item) for item in value)
    return False


def _ffi_from(data: Any) -> Any:
    """The out-of-line FFI of cached ``data`` (``(name, {keyword: value})``); None when it is not that."""
    import _cffi_backend

    if not (isinstance(data, tuple) and len(data) == 2):
        return None
    name, keywords = data
    if not isinstance(name, str) or not isinstance(keywords, dict):
        return None
    if not set(keywords) <= _FFI_KEYWORDS or "_version" not in keywords:
        return None
    if not all(_valid_value(value) for value in keywords.values()):
        return None
    return _cffi_backend.FFI(name, **keywords)


def prebuilt_ffi(csource: str) -> Any:
    """The out-of-line FFI of ``csource`` from the cache, or None (not cached, or the file is not what
    was written)."""
    import marshal

    path = cache_path(csource)
    try:
        with open(path, "rb") as file:
            blob = file.read()
    except OSError:
        return None
    try:
        return _ffi_from(marshal.loads(blob))
    except Exception:  # a damaged or foreign file: parse as before, and write it anew
        _remove(path)
        return None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _declarations_data(api_ffi: Any, module_name: str) -> tuple[str, dict[str, Any]]:
    """What cffi's out-of-line ABI mode writes for ``api_ffi`` (a parsed ``cffi.FFI``), as data."""
    import ast
    import io

    from cffi import recompiler

    source = io.StringIO()
    recompiler.make_py_source(api_ffi, module_name, source)
    tree = ast.parse(source.getvalue())
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "FFI"
    ]
    if len(calls) != 1 or len(calls[0].args) != 1:
        raise ValueError("cffi's out-of-line source is not one FFI(name, ...) call")
    call = calls[0]
    name = ast.literal_eval(call.args[0])
    keywords = {str(k.arg): ast.literal_eval(k.value) for k in call.keywords}
    return name, keywords


def write_cache(api_ffi: Any, csource: str, module_name: str) -> str | None:
    """Store the declarations of ``api_ffi`` (which parsed ``csource``) for the next start; the path, or
    None when they could not be stored (the start-up stays as it was)."""
    import marshal
    import tempfile

    try:
        name, keywords = _declarations_data(api_ffi, module_name)
        data = (name, keywords)
        if _ffi_from(data) is None:
            return None
        path = cache_path(csource)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".webgpu-ffi-", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(marshal.dumps(data))
            os.replace(tmp, path)
        except BaseException:
            _remove(tmp)
            raise
        return path
    except Exception:
        return None


class _DeferredFFI:
    """What the module's ``FFI()`` returns: ``cdef`` picks the cached declarations or cffi's parse; every
    other attribute is the chosen FFI's."""

    def __init__(self, api_class: Any) -> None:
        self._api_class = api_class
        self.ffi: Any = None
        self.parsed: tuple[Any, str, str] | None = None
        """(cffi.FFI, header, module name) when the header was parsed here: to be cached."""
        self._source: str | None = None
        self.cached_source: str | None = None
        """The header when the FFI came from the cache (its file is removed if the module then fails)."""

    def cdef(self, csource: str, **kwargs: Any) -> None:
        if self.ffi is not None:
            raise RuntimeError("a second cdef: the module is not the one the cache was made for")
        prebuilt = None if kwargs or not isinstance(csource, str) else prebuilt_ffi(csource)
        if prebuilt is not None:
            self.ffi = prebuilt
            self.cached_source = csource
            return
        api = self._api_class()
        api.cdef(csource, **kwargs)
        self.ffi = api
        if not kwargs:
            self._source = csource

    def set_source(self, module_name: str, source: Any, **kwargs: Any) -> None:
        if isinstance(self.ffi, self._api_class):
            self.ffi.set_source(module_name, source, **kwargs)
            if self._source is not None and source is None and not kwargs:
                self.parsed = (self.ffi, self._source, module_name)
        elif source is not None or kwargs:
            raise RuntimeError("set_source with a C source: not an out-of-line ABI module")

    def __getattr__(self, name: str) -> Any:
        if self.ffi is None:
            raise RuntimeError(f"ffi.{name} before cdef: not the module the cache was made for")
        return getattr(self.ffi, name)


class _Loader:
    """Runs the module's own code with the stand-in ``FFI``; on any failure, the module's own import."""

    def __init__(self, inner: importlib.machinery.SourceFileLoader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        import builtins
        import types

        import cffi

        code = self._inner.get_code(module.__name__)
        if code is None:
            self._inner.exec_module(module)
            return
        deferred = _DeferredFFI(cffi.FFI)
        stand_in = types.ModuleType("cffi")
        stand_in.__dict__.update(cffi.__dict__)
        made: list[_DeferredFFI] = []

        def make_ffi() -> Any:
            if made:  # a second FFI(): the module's own, as it would have had
                return cffi.FFI()
            made.append(deferred)
            return deferred

        stand_in.FFI = make_ffi  # type: ignore[attr-defined]
        active = [True]

        def import_(
            name: str,
            globals: Any = None,
            locals: Any = None,
            fromlist: Sequence[str] = (),
            level: int = 0,
        ) -> Any:
            if active[0] and name == "cffi" and level == 0:
                return stand_in
            return builtins.__import__(name, globals, locals, fromlist, level)

        namespace = module.__dict__
        own_builtins = dict(builtins.__dict__)
        own_builtins["__import__"] = import_
        namespace["__builtins__"] = own_builtins
        try:
            exec(code, namespace)
            if deferred.ffi is None:
                raise RuntimeError("the module made no FFI")
        except Exception:
            active[0] = False
            if deferred.cached_source is not None:
                _remove(cache_path(deferred.cached_source))
            for key in [k for k in namespace if not (k.startswith("__") and k.endswith("__"))]:
                del namespace[key]
            namespace["__builtins__"] = builtins
            self._inner.exec_module(module)
            return
        finally:
            active[0] = False
        namespace["ffi"] = deferred.ffi  # what wgpu-py's other modules import: the FFI itself
        if deferred.parsed is not None:
            write_cache(*deferred.parsed)


class _Finder:
    """Finds :data:`TARGET_MODULE` as the path finder would, with :class:`_Loader` in front of its loader."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET_MODULE:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader:
            return spec  # not a plain source file (frozen, zipped, compiled only): as it is
        spec.loader = cast("importlib.abc.Loader", _Loader(spec.loader))
        return spec


def install() -> bool:
    """Serve wgpu-py's declarations from the cache from now on; False when it is too late (its module is
    already imported) or the hook is already in place."""
    with _lock:
        if TARGET_MODULE in sys.modules or installed():
            return False
        sys.meta_path.insert(0, _Finder())
        return True


def installed() -> bool:
    """Whether the hook is on ``sys.meta_path``."""
    return any(isinstance(finder, _Finder) for finder in sys.meta_path)
