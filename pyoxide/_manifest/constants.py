"""`#[constant]` statics (cuda-oxide's ``ConstantMemory<T>``): values every thread reads,
set from Python before a launch.

``module.set_coeffs([1.0, 2.0, 3.0, 4.0])`` (cuda-oxide's generated ``set_<name>``, the
static's name in lower case) or ``module.set_constant("COEFFS", value)`` checks the
value as a kernel parameter of the same Rust type would be checked (a scalar by the
scalar rules; ``[f32; 4]`` or a struct by pyoxide/_manifest/records.py's), keeps its bytes, and
writes them wherever the module's code is loaded (each GPU, the emulator) and, later,
wherever it gets loaded. Until set, a constant holds zeros.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .records import RecordLayout, parse_record


@dataclass(frozen=True)
class ConstantSpec:
    name: str  # the static's name, also its symbol (PTX and emulator library)
    type: str  # its scalar type, or the scalar a record is made of ("u8": bytes)
    record: RecordLayout | None = None

    @property
    def rust_type(self) -> str:
        return self.record.rust_type if self.record else self.type


def parse_constants(c: Any, value: Any, where: str) -> tuple[ConstantSpec, ...]:
    """The manifest's ``constants`` list (``c`` is the manifest reader's checker)."""
    from .abi import SCALARS

    out = []
    for i, k in enumerate(c.list_(value, where)):
        w = f"{where}[{i}]"
        k = c.obj(k, w, ["version", "constant", "type"], closed=False)
        out.append(
            ConstantSpec(
                name=c.str_(k["constant"], w + ".constant"),
                type=c.choice(k["type"], w + ".type", list(SCALARS)),
                record=parse_record(c, k["record"], w + ".record") if "record" in k else None,
            )
        )
    return tuple(out)


def setter_name(spec: ConstantSpec) -> str:
    """cuda-oxide's name for a constant's setter: ``set_`` and the name in lower case."""
    return "set_" + spec.name.lower()
