"""Packages whose names load on first use (``alpha2._lazy``): every listed name loads, the lists agree."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import alpha2
import alpha2.ffmpeg_bridge
import alpha2.gpu


@pytest.mark.parametrize("package", [alpha2, alpha2.gpu, alpha2.ffmpeg_bridge], ids=lambda p: p.__name__)
def test_every_listed_name_loads_and_the_lists_agree(package: object) -> None:
    exports = package._EXPORTS  # type: ignore[attr-defined]
    submodules = getattr(package, "_SUBMODULES", ())
    # __all__ is written out for the static tools; it must say what the lazy table says.
    assert sorted(package.__all__) == sorted([*exports, *submodules])  # type: ignore[attr-defined]
    for name, module in exports.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name), name
    assert set(exports) <= set(dir(package))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        package.no_such_name  # type: ignore[attr-defined]  # noqa: B018


def test_importing_one_vocabulary_module_loads_no_other() -> None:
    code = (
        "import sys, alpha2.gpu.errors; "
        "print(sorted(m for m in sys.modules if m.startswith('alpha2.gpu.') and m != 'alpha2.gpu.errors'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_dir_lists_the_public_names_not_the_package_s_own_helpers() -> None:
    import alpha2
    import alpha2.api  # a loaded submodule is listed

    names = dir(alpha2)
    assert {"open", "create", "Frame", "api"} <= set(names)
    assert not {"annotations", "TYPE_CHECKING", "lazy_names", "_EXPORTS", "_lazy"} & set(names)
