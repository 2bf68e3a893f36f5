"""The manifest reader's JSON walker: each check names the JSON path it failed at and
raises :class:`~pyoxide.errors.ManifestError` on the first mismatch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ManifestError

T = TypeVar("T")


class JsonChecker:
    """Walks the JSON with a path, raising ManifestError on the first mismatch."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def fail(self, where: str, problem: str) -> ManifestError:
        return ManifestError(
            f"{self.file}: {where}: {problem}. Fix: rebuild it with the cargo-oxide that "
            "matches this pyoxide (`pyoxide build`), or report the bug if it persists."
        )

    def obj(
        self,
        value: Any,
        where: str,
        required: Sequence[str],
        optional: Sequence[str] = (),
        closed: bool = True,
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {type(value).__name__}")
        for key in required:
            if key not in value:
                raise self.fail(where, f"missing field '{key}'")
        if closed:
            extra = sorted(set(value) - set(required) - set(optional))
            if extra:
                raise self.fail(where, f"unknown field(s) {', '.join(extra)}")
        return value

    def _scalar(self, value: Any, where: str, kind: type[T], expected: str) -> T:
        if not isinstance(value, kind):
            raise self.fail(where, f"expected {expected}, got {json.dumps(value)}")
        return value

    def str_(self, value: Any, where: str) -> str:
        return self._scalar(value, where, str, "a string")

    def path_inside(self, base: Path, value: Any, where: str) -> Path:
        """A relative path that stays inside `base` (an artifact beside its manifest)."""
        from .fs import file_inside

        try:
            return file_inside(base, self.str_(value, where))
        except ValueError as e:
            raise self.fail(where, str(e)) from None

    def opt_str(self, value: Any, where: str) -> str | None:
        return None if value is None else self.str_(value, where)

    def uint(self, value: Any, where: str, bits: int = 32) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**bits:
            raise self.fail(where, f"expected an unsigned {bits}-bit integer, got {value!r}")
        return value

    def bool_(self, value: Any, where: str) -> bool:
        return self._scalar(value, where, bool, "true or false")

    def list_(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array, got {type(value).__name__}")
        return value

    def choice(self, value: Any, where: str, choices: Sequence[str]) -> str:
        if value not in choices:
            raise self.fail(where, f"expected one of {', '.join(choices)}, got {value!r}")
        return str(value)
