"""A shaped array parameter as the manifest records it (schema 3; oxide-abi
``ArrayShape``, written by ``Array2<T>``-like types and ``#[shapes(...)]``): the data
and its reader. pyoxide/_launch/shapes.py applies it to a call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import abi as _abi
from .json_checker import JsonChecker

#: Array layouts (oxide-abi ``ArrayLayout``) and the Rust type argument each is written as.
LAYOUTS = {"c": "", "strided": ", Strided"}


@dataclass(frozen=True)
class ArraySpec:
    """Layout and dimensions of a shaped array parameter. A dimension is a name shared
    with other parameters' dimensions, a fixed extent (int), or None (any extent)."""

    layout: str
    dims: tuple[str | int | None, ...]

    @property
    def rank(self) -> int:
        return len(self.dims)

    def dim_text(self, param: str) -> str:
        """``[m, k]`` as the contract writes it, for messages and stubs."""
        return "[" + ", ".join("_" if d is None else str(d) for d in self.dims) + "]"


def read_array_spec(c: JsonChecker, value: Any, w: str, kind: str) -> ArraySpec | None:
    """The `array` field of a parameter of `kind`, checked (None for other kinds)."""
    shaped = _abi.PARAM_KINDS[kind].is_shaped
    if value is None:
        if shaped:
            raise c.fail(w, f"a '{kind}' parameter needs its 'array' (layout, dims)")
        return None
    if not shaped:
        raise c.fail(w, f"a '{kind}' parameter has no 'array'")
    v = c.obj(value, w, ["layout", "dims"])
    layout = c.choice(v["layout"], w + ".layout", list(LAYOUTS))
    dims: list[str | int | None] = []
    for i, d in enumerate(c.list_(v["dims"], w + ".dims")):
        d = c.str_(d, f"{w}.dims[{i}]")
        if d == "_":
            dims.append(None)
        elif d.isdigit():
            dims.append(int(d))
        elif d.isidentifier():
            dims.append(d)
        else:
            raise c.fail(f"{w}.dims[{i}]", f"{d!r} is not a name, an extent or '_'")
    if not 1 <= len(dims) <= _abi.MAX_ARRAY_RANK:
        raise c.fail(w + ".dims", f"a rank from 1 to {_abi.MAX_ARRAY_RANK}")
    return ArraySpec(layout, tuple(dims))


def read_length(c: JsonChecker, value: Any, w: str, kind: str) -> str | int | None:
    """The `length` field of a slice parameter (schema 5; None when absent): a name
    shared with other lengths and dimensions, or a decimal length."""
    if value is None:
        return None
    k = _abi.PARAM_KINDS[kind]
    if not k.is_slice or k.is_shaped:
        raise c.fail(w, f"a '{kind}' parameter has no length contract (slices only)")
    d: str = c.str_(value, w)
    if d.isdecimal():
        return int(d)
    if not d.isidentifier():
        raise c.fail(w, f"{d!r} is not a name or a length")
    return d
