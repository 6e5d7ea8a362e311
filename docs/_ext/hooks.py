"""MkDocs hooks for alpha2's site (mkdocs.yml ``hooks:``).

- A reference page may name a module that is still being written: a ``:::`` directive on the line after
  ``<!-- if the module exists -->`` is rendered when the module can be imported and left out (with a
  note in the build log) until then. tests/test_docs_reference.py checks that every public name has an
  entry, so a module left out that way cannot hide a name the package exports.
- ``<!-- every other error class -->`` becomes a list of links to every error class alpha2 defines
  outside the modules the page renders itself (found in the source, so a new one is listed at once);
  each link must reach an entry on some page, or ``mkdocs build --strict`` fails.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import re
from pathlib import Path
from typing import Any

_log = logging.getLogger("mkdocs.hooks.alpha2")

_OPTIONAL = re.compile(
    r"^<!-- if the module exists -->\n::: (?P<module>[\w.]+)\n(?P<options>(?:[ \t]+\S.*\n)*)",
    re.M,
)


def _exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


_OTHER_ERRORS = "<!-- every other error class -->"
_DIRECTIVE = re.compile(r"^::: (?P<module>[\w.]+)$", re.M)
_ROLE = re.compile(r":(?:py:)?[a-z]+:`[!~]?(?:[^`<]*<)?(?P<target>[^`>]+)>?`")


def _plain_roles(text: str) -> str:
    """Sphinx roles as code spans of the name's last part (the summary lines are Markdown, not docstrings)."""
    return _ROLE.sub(lambda match: f"`{match['target'].rsplit('.', 1)[-1]}`", text)


def _error_classes(package: Path, skip: set[str]) -> list[str]:
    """One Markdown line per ``class ...Error`` defined at the top of a module of ``package``."""
    lines = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if module in skip:
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                bases = ", ".join(f"`{ast.unparse(base)}`" for base in node.bases)
                summary = _plain_roles(" ".join((ast.get_docstring(node) or "").split("\n\n")[0].split()))
                lines.append(f"- [`{node.name}`][{module}.{node.name}] ({bases}, in `{module}`): {summary}")
    return lines


def on_page_markdown(markdown: str, /, **kwargs: Any) -> str:
    """Leave out the optional ``:::`` directives whose module does not exist (yet); list the errors."""

    def keep_or_drop(match: re.Match[str]) -> str:
        module = match["module"]
        if _exists(module):
            return match.group(0).removeprefix("<!-- if the module exists -->\n")
        _log.info("%s does not exist yet: its reference section is left out", module)
        return ""

    markdown = _OPTIONAL.sub(keep_or_drop, markdown)
    if _OTHER_ERRORS in markdown:
        root = Path(kwargs["config"]["config_file_path"]).parent
        rendered = {match["module"] for match in _DIRECTIVE.finditer(markdown)}
        markdown = markdown.replace(_OTHER_ERRORS, "\n".join(_error_classes(root / "alpha2", rendered)))
    return markdown
