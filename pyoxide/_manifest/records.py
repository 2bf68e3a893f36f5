"""A kernel parameter's ``record`` as the manifest gives it: a type that is not a scalar
(a ``Copy`` struct, enum, union, tuple or array ``[T; N]``, by value or in a slice), known
by its name as written and its size and alignment as the compiler laid it out. How Python
values become such a parameter: pyoxide/_launch/records.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RecordLayout:
    rust_type: str
    size: int
    align: int


def parse_record(c: Any, value: Any, where: str) -> RecordLayout:
    """The manifest's ``record`` object (``c`` is the manifest reader's checker)."""
    r = c.obj(value, where, ["rust_type", "size", "align"], closed=False)
    return RecordLayout(
        rust_type=c.str_(r["rust_type"], where + ".rust_type"),
        size=c.uint(r["size"], where + ".size", bits=63),
        align=c.uint(r["align"], where + ".align", bits=32),
    )
