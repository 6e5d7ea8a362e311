"""MkDocs hooks for alpha2's site (mkdocs.yml ``hooks:``).

A reference page may name a module that is still being written: a ``:::`` directive on the line after
``<!-- if the module exists -->`` is rendered when the module can be imported and left out (with a
note in the build log) until then. tests/test_docs_reference.py checks that every public name has an
entry, so a module left out that way cannot hide a name the package exports.
"""

from __future__ import annotations

import importlib.util
import logging
import re
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


def on_page_markdown(markdown: str, /, **kwargs: Any) -> str:
    """Leave out the optional ``:::`` directives whose module does not exist (yet)."""

    def keep_or_drop(match: re.Match[str]) -> str:
        module = match["module"]
        if _exists(module):
            return match.group(0).removeprefix("<!-- if the module exists -->\n")
        _log.info("%s does not exist yet: its reference section is left out", module)
        return ""

    return _OPTIONAL.sub(keep_or_drop, markdown)
