"""docs/ARCHITECTURE.md stays true: its tree names every module under alpha2/ (and none that is gone),
and its drawing of the rooms follows the import contract in pyproject.toml.

The tree is the fenced block whose first word is ``alpha2/``: two spaces of indent per level, then the
names (folders end in ``/``; several modules may share a line), then two or more spaces and what they
are. A folder's line names its ``__init__.py``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "ARCHITECTURE.md"
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def _blocks() -> list[str]:
    return [match.group(1) for match in _FENCE.finditer(DOC.read_text())]


def _tree() -> str:
    trees = [block for block in _blocks() if block.split(maxsplit=1)[:1] == ["alpha2/"]]
    assert len(trees) == 1, "docs/ARCHITECTURE.md needs one fenced block opening with 'alpha2/' (the tree)"
    return trees[0]


def named_modules(tree: str) -> set[str]:
    """The module paths (``alpha2/gpu/colour.py``) a tree block names."""
    named: set[str] = set()
    folders: list[str] = []
    for line in tree.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0, f"odd indent in the tree: {line!r}"
        level = indent // 2
        assert level <= len(folders), f"indented below no folder: {line!r}"
        del folders[level:]
        names = re.split(r" {2,}", line.strip(), maxsplit=1)[0]
        tokens = [token for token in re.split(r"[ ,]+", names) if token]
        assert all(token.endswith((".py", "/")) for token in tokens), f"not a module or folder: {line!r}"
        for token in tokens:
            if token.endswith("/"):
                assert len(tokens) == 1, f"a folder shares its line: {line!r}"
                folders.append(token.rstrip("/"))
                named.add("/".join([*folders, "__init__.py"]))
            else:
                assert folders, f"a module outside alpha2/: {line!r}"
                named.add("/".join([*folders, token]))
    return named


def test_the_tree_parses() -> None:
    tree = "alpha2/  top\n  gpu/  vocabulary\n    a.py b.py  two\n  c.py, d.py  two more\n"
    assert named_modules(tree) == {
        "alpha2/__init__.py",
        "alpha2/gpu/__init__.py",
        "alpha2/gpu/a.py",
        "alpha2/gpu/b.py",
        "alpha2/c.py",
        "alpha2/d.py",
    }


def test_every_module_is_named() -> None:
    existing = {str(path.relative_to(REPO)) for path in (REPO / "alpha2").rglob("*.py")}
    named = named_modules(_tree())
    missing = sorted(existing - named)
    gone = sorted(named - existing)
    assert not missing, f"modules docs/ARCHITECTURE.md does not name (add them to its tree): {missing}"
    assert not gone, f"docs/ARCHITECTURE.md names modules that do not exist: {gone}"


def test_the_rooms_follow_the_import_contract() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c["layers"] for c in config["contracts"] if c["type"] == "layers")
    drawing = _blocks()[0]
    positions = []
    for layer in layers:
        packages = [name.strip().replace(".", "/") for name in layer.split("|")]
        for package in packages:
            assert package in drawing, f"the rooms' drawing lacks {package} (a layer of the contract)"
        positions.append(min(drawing.index(package) for package in packages))
    assert positions == sorted(positions), f"the drawing's rooms are not in the contract's order: {layers}"
    text = DOC.read_text()
    assert "lint-imports" in text and ".ci/run" in text


def test_the_ci_runs_the_contract_checker() -> None:
    assert re.search(r"^lint-imports\b", (REPO / ".ci" / "run").read_text(), re.M)
