"""How a refusal names what the caller asked for: the Python field (``max_pixels``), or the caller's
own spelling of it (the command line's ``--max-pixels``) inside :func:`option_names`.

One context (a :mod:`contextvars` variable) for every layer that refuses an option, the checks of
``TranscodeOptions`` and the errors a run meets alike (the FFmpeg bridge's picture limit included), so
this lives in the vocabulary that all of them may import.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

__all__ = ["current_names", "named", "option_names"]

_FIELD_NAMES: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "alpha2_option_names", default=types.MappingProxyType({})
)


def named(field_name: str) -> str:
    """A field as a message names it: the field (``to_seconds``), or the caller's spelling inside
    :func:`option_names` (the command line's ``--to``)."""
    return _FIELD_NAMES.get().get(field_name, field_name)


def current_names() -> dict[str, str]:
    """The spellings in force (empty outside :func:`option_names`): for work handed to another thread
    or process, which does not inherit the context, to set again there."""
    return dict(_FIELD_NAMES.get())


@contextmanager
def option_names(names: Mapping[str, str]) -> Iterator[None]:
    """Within it, messages name a field as ``names`` spells it (``{"to_seconds": "--to"}``: the
    command line's options), else by its own name: one check, each caller's words."""
    token = _FIELD_NAMES.set(types.MappingProxyType(dict(names)))
    try:
        yield
    finally:
        _FIELD_NAMES.reset(token)
