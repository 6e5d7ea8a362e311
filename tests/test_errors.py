"""alpha2.gpu.errors: kinds, repr, pickling."""

from __future__ import annotations

import pickle

import pytest

from alpha2.gpu.errors import Error, ErrorKind, GpuTimeoutError, InvalidInputError


def test_kind_is_an_error_kind_or_its_value() -> None:
    assert Error("x", kind="retry").kind is ErrorKind.RETRY  # type: ignore[arg-type]
    assert Error("x").kind is ErrorKind.INTERNAL and GpuTimeoutError("t").kind is ErrorKind.TIMEOUT
    for bad in ("RETRY", "again", 1, ErrorKind.RETRY.name.lower() + " "):
        with pytest.raises(InvalidInputError, match="'retry', 'timeout'"):
            Error("x", kind=bad)  # type: ignore[arg-type]


def test_repr_shows_the_kind_and_str_and_pickling_keep_theirs() -> None:
    err = Error("boom", kind=ErrorKind.RETRY)
    assert repr(err) == "Error('boom', kind=ErrorKind.RETRY)"
    assert str(err) == "boom" and err.args == ("boom",)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is Error and back.kind is ErrorKind.RETRY and str(back) == "boom"
    assert repr(InvalidInputError("bad")) == "InvalidInputError('bad', kind=ErrorKind.INVALID_INPUT)"
