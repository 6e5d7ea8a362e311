"""Names of a package that load on first use (PEP 562): one ``__getattr__`` / ``__dir__`` pair.

``alpha2``, ``alpha2.gpu`` and ``alpha2.ffmpeg_bridge`` keep their start-up short this way: importing
one module of theirs does not import every module their top level names.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str,
    exports: Mapping[str, str],
    *,
    submodules: Iterable[str] = (),
    reachable: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: the package's ``__name__``.
        exports: each public name and the module that defines it (what ``__all__`` lists).
        submodules: modules of the package reachable as attributes (``alpha2.gpu.colour``).
        reachable: names found here too but listed by their own modules (kept out of ``__all__``).

    A name is imported once, then kept in the package's namespace like any other.
    """
    subs = frozenset(submodules)
    more = dict(reachable or {})

    def __getattr__(name: str) -> Any:
        if name in subs:
            value: Any = importlib.import_module(f"{package}.{name}")
        else:
            module = exports.get(name) or more.get(name)
            if module is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        # The public names, the package's dunders and its submodules loaded so far; not the helpers its
        # own code imports (``annotations``, ``TYPE_CHECKING``, ``lazy_names``).
        namespace = vars(sys.modules[package])
        loaded = {
            name
            for name, value in namespace.items()
            if name.startswith("__")
            or (
                not name.startswith("_")
                and isinstance(value, types.ModuleType)
                and value.__name__ == f"{package}.{name}"
            )
        }
        return sorted(loaded | set(exports) | subs | set(more))

    return __getattr__, __dir__
