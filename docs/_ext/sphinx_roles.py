"""A Griffe extension: Sphinx roles in alpha2's docstrings become mkdocs-autorefs cross-references.

The docstrings are written with Sphinx roles (``:class:`~alpha2.gpu.formats.PixelFormat```,
``:meth:`write```, ``:mod:`alpha2.api.devices```); Markdown shows those as literal text. Once the
package is loaded, every docstring's roles are rewritten into autorefs markers:

- the target is resolved in the docstring's own scope, as Python would (``:func:`open``` in
  ``alpha2.api`` is ``alpha2.api.source.open``), then followed through imports to where it is defined;
- ``~`` shows only the last part of the name, ``title <target>`` shows the title, ``!`` never links;
- a marker is *optional*: a target the site does not document (``numpy.ndarray``, a private helper)
  renders as code instead of failing ``mkdocs build --strict``.

Configured in mkdocs.yml (``plugins: mkdocstrings: handlers: python: options: extensions``).
"""

from __future__ import annotations

import html
import importlib
import re
from typing import Any

import griffe

_ROLE = re.compile(
    r":(?:py:)?(?P<role>class|meth|func|mod|attr|data|exc|obj|const|type):`(?P<body>[^`]+)`",
)
_TITLED = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$")


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring of a loaded package into optional autorefs."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            docstring = obj.docstring
            if docstring is not None and ":`" in docstring.value:
                docstring.value = rewrite(docstring.value, obj, loader)


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    found = [obj]
    for member in obj.members.values():
        if member.is_alias:
            continue
        found.extend(_walk(member))  # type: ignore[arg-type]
    return found


def rewrite(text: str, scope: griffe.Object, loader: griffe.GriffeLoader | None = None) -> str:
    """``text`` with each Sphinx role replaced by an optional autorefs marker, resolved from ``scope``."""

    def replace(match: re.Match[str]) -> str:
        body = match["body"].strip()
        titled = _TITLED.match(body)
        if titled:
            shown, target = titled["title"], titled["target"].strip()
        else:
            shown, target = None, body
        no_link = target.startswith("!")
        short = target.lstrip("!").startswith("~")
        target = re.sub(r"\s+", "", target).lstrip("!~").lstrip(".")
        if shown is None:
            shown = target.rsplit(".", 1)[-1] if short else target
        code = f"<code>{html.escape(shown)}</code>"
        if no_link:
            return code
        path = resolve(target, scope, loader)
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return _ROLE.sub(replace, text)


def resolve(target: str, scope: griffe.Object, loader: griffe.GriffeLoader | None = None) -> str:
    """The path ``target`` names where it is defined, seen from ``scope``; ``target`` if unknown.

    Tried in turn: the name in ``scope`` (members, imports, then the enclosing scopes); the one object
    of the package defined with that name; the name imported at run time (for lazily exported names).
    """
    head, _, rest = target.partition(".")
    path = target
    if head != scope.package.name:
        try:
            base: str | None = scope.resolve(head)
        except (griffe.NameResolutionError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            base = _unique_definition(head, scope.package)
        if base is not None:
            path = f"{base}.{rest}" if rest else base
    return _canonical(path, loader)


_DEFINITIONS: dict[str, dict[str, list[str]]] = {}


def _unique_definition(name: str, package: griffe.Module) -> str | None:
    index = _DEFINITIONS.get(package.path)
    if index is None:
        index = {}
        for obj in _walk(package):
            index.setdefault(obj.name, []).append(obj.path)
        _DEFINITIONS[package.path] = index
    paths = index.get(name, [])
    return paths[0] if len(paths) == 1 else None


def _canonical(path: str, loader: griffe.GriffeLoader | None) -> str:
    if loader is not None:
        try:
            return str(loader.modules_collection[path].canonical_path)
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            pass
    return _runtime_canonical(path)


def _runtime_canonical(path: str) -> str:
    """Where an object a package exports lazily (PEP 562 ``__getattr__``) is defined."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
        except AttributeError:
            return path
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
            return f"{module}.{qualname}"
        return path
    return path
