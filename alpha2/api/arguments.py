"""Checks of the front door's arguments: a wrong type or value is an
:class:`~alpha2.gpu.errors.InvalidInputError` that names the argument and what it takes, raised where
the call is made, never an ``AttributeError`` or ``TypeError`` from deep inside.

Each check returns the value in the form the library uses (a ``(w, h)`` pair becomes a
:class:`~alpha2.gpu.geometry.Size`, an enum's value its member), so a caller writes
``size = arguments.size("size", size)`` and goes on.
"""

from __future__ import annotations

import enum
import functools
import inspect
import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size

__all__ = ["choice", "flag", "known_options", "member", "real", "size", "text", "whole"]

_E = TypeVar("_E", bound=enum.Enum)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
) -> float:
    """A finite real number (not a bool), at least ``low``, at most ``high``, more than ``above``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"{name} must be a number, got {_shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int past a float's range (10**400): no time or size is that large
        number = math.inf
    if not math.isfinite(number):
        raise InvalidInputError(f"{name} must be a finite number, got {_shown(value)}")
    if (low is not None and number < low) or (high is not None and number > high):
        if low is not None and high is not None:
            span = f"a number from {low:g} to {high:g}"
        else:
            span = f"{low:g} or more" if low is not None else f"{high:g} or less"
        raise InvalidInputError(f"{name} must be {span}, got {value!r}")
    if above is not None and number <= above:
        raise InvalidInputError(f"{name} must be more than {above:g}, got {value!r}")
    return number


def whole(name: str, value: Any, *, low: int | None = None) -> int:
    """An int (not a bool), at least ``low``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{name} must be a whole number, got {_shown(value)}")
    number = int(value)
    if low is not None and number < low:
        raise InvalidInputError(f"{name} must be {low} or more, got {value!r}")
    return number


def flag(name: str, value: Any) -> bool:
    """True or False (numpy's bools too)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise InvalidInputError(f"{name} must be True or False, got {_shown(value)}")


def text(name: str, value: Any) -> str:
    """A str."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {_shown(value)}")
    return value


def choice(name: str, value: Any, allowed: Iterable[str]) -> str:
    """One of ``allowed`` (a str)."""
    names = tuple(allowed)
    if not isinstance(value, str) or value not in names:
        raise InvalidInputError(f"{name} must be one of {', '.join(map(repr, names))}, got {_shown(value)}")
    return value


def member(name: str, value: Any, kind: type[_E]) -> _E:
    """A member of the enum ``kind``, or its value (``'bt709'`` for ``ColourChoice.BT709``)."""
    if isinstance(value, kind):
        return value
    for item in kind:
        if value == item.value or (isinstance(value, str) and value.lower() == str(item.value).lower()):
            return item
        if isinstance(value, int) and not isinstance(value, bool) and str(value) == item.value:
            return item  # depth=8: DepthChoice's values are the strings '8' and '10'
    names = ", ".join(repr(item.value) for item in kind)
    raise InvalidInputError(f"{name} must be one of {names} (or {kind.__name__}), got {_shown(value)}")


def size(name: str, value: Any, *, free_side: bool = False) -> Size:
    """A :class:`Size`, a ``(width, height)`` pair of positive ints, or ``'WIDTHxHEIGHT'``;
    ``free_side``: a box to fit in, whose string may leave one side free (``'-1x720'``)."""
    if isinstance(value, Size):
        return value
    if isinstance(value, str):
        from alpha2.api.pipeline import parse_fit_size, parse_size

        try:
            return (parse_fit_size if free_side else parse_size)(value)
        except Exception as exc:  # parse_size is argparse's type: it raises ArgumentTypeError
            raise InvalidInputError(f"{name}: {exc}") from exc
    if (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(not isinstance(v, bool) and isinstance(v, numbers.Integral) and int(v) > 0 for v in value)
    ):
        return Size(int(value[0]), int(value[1]))
    raise InvalidInputError(
        f"{name} must be a Size, a (width, height) pair of positive ints or 'WIDTHxHEIGHT', "
        f"got {_shown(value)}"
    )


@functools.lru_cache(maxsize=64)
def _keyword_names(target: Callable[..., Any], skip: int) -> tuple[str, ...]:
    """The names ``target`` takes by keyword, past its first ``skip`` parameters: worked out once a
    target (``inspect.signature`` took a tenth of a millisecond of every ``to_tensor`` call). Targets
    are functions (a bound method kept here would keep its object alive)."""
    parameters = list(inspect.signature(target).parameters.values())[skip:]
    return tuple(p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


def known_options(
    where: str,
    given: Iterable[str],
    target: Callable[..., Any],
    *,
    skip: int = 1,
    also: tuple[str, ...] = (),
) -> None:
    """Refuse keyword options that ``target`` (what they are passed on to) does not take, naming the ones
    it does, and ``also`` (those the public call takes itself): ``where`` is the public call
    (``'alpha2.create()'``)."""
    names = also + tuple(n for n in _keyword_names(target, skip) if n not in also)
    unknown = [option for option in given if option not in names]
    if unknown:
        import difflib

        near = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f"; did you mean {near[0]}?" if near else f"; it takes {', '.join(names)}"
        raise InvalidInputError(f"{where} got an unknown option {unknown[0]!r}{hint}")
