"""What a kernel is as a PyTorch operator, read from the manifest alone (no torch here:
pyoxide/torch.py registers what this module plans).

Each kernel whose parameters PyTorch can express gets two forms, overloads of one op:

* ``.out``: the kernel as written, its outputs passed in and declared mutated
  (``Tensor(a!)``), returning nothing: ``softmax_rows.out(Tensor x, Tensor(a!) out) -> ()``.
* the default overload, out of place: the write-only outputs (``DisjointSlice``,
  ``DisjointArray``, ``AtomicSlice``) are left out of the arguments and allocated from
  the ``#[shapes(...)]`` contract, and returned; a read-write ``&mut [T]`` is taken as
  an input and a fresh copy of it, updated, is returned:
  ``softmax_rows(Tensor x) -> Tensor``. A kernel gets this form when every write-only
  output's extents are named by an input's dimension or fixed in the contract.

Scalars become ``float`` (f16 … f64), ``SymInt`` (integers: a size traced by
``torch.compile(dynamic=True)`` stays symbolic) or ``bool``. Kernels with a parameter a
schema cannot carry (a raw pointer, a struct by value), or whose calls need an explicit
``[grid, block]``, get no op.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .._manifest import abi as _abi
from .._manifest.reader import KernelSpec, Manifest, ParamSpec
from .policy import needs_configuration

#: The prefix of each crate's operator namespace: ``torch.ops.pyoxide_<crate>``.
NAMESPACE_PREFIX = "pyoxide_"
#: The overload that takes the kernel's outputs (the kernel's own signature).
OUT_OVERLOAD = "out"

#: How a functional form gets each write-only output: kinds whose every element is
#: written once are allocated uninitialised; atomic outputs accumulate, from zero.
_FILL = {"disjoint_slice": "empty", "disjoint_array": "empty", "atomic_slice": "zeros"}
#: Read-write outputs: the functional form takes them and returns an updated copy.
_IN_OUT = {"mut_slice"}


def namespace(crate: str) -> str:
    """``kernels_rs`` -> ``pyoxide_kernels_rs`` (anything but a letter, digit or ``_``
    becomes ``_``)."""
    return NAMESPACE_PREFIX + re.sub(r"\W", "_", crate, flags=re.ASCII)


Dim = tuple[int, int] | int  # (input parameter index, axis), or a fixed extent


@dataclass(frozen=True)
class Output:
    """One output of the functional form: kernel parameter ``index``, filled how."""

    index: int
    name: str
    fill: str  # "empty", "zeros", or "copy" (an in-out &mut [T]: a copy of its input)
    dims: tuple[Dim, ...]  # for "copy": ()


@dataclass(frozen=True)
class OpPlan:
    """One kernel (or a generic kernel's name, over its ``instances``) as an op."""

    name: str  # the op's name: the launcher's name in the Module
    instances: tuple[KernelSpec, ...]  # one, or a generic kernel's instances
    out_schema: str  # the `.out` overload: the kernel's signature
    schema: str | None  # the functional overload, None when it cannot be derived
    inputs: tuple[int, ...]  # the functional form's arguments: kernel parameter indices
    outputs: tuple[Output, ...]
    no_functional: str = ""  # why `schema` is None

    @property
    def params(self) -> tuple[ParamSpec, ...]:
        return self.instances[0].params

    def instance_for(self, types: Sequence[str | None]) -> KernelSpec | None:
        """The instance whose array parameters among the functional inputs have the
        element types ``types`` (Rust names; None for a non-array), or None."""
        arrays = [i for i in self.inputs if self.params[i].is_array]
        for spec in self.instances:
            if all(spec.params[i].type == t for i, t in zip(arrays, types, strict=True)):
                return spec
        return None


def scalar_type(p: ParamSpec) -> str:
    t = _abi.SCALARS[p.type]
    return "bool" if t.kind == "b" else "float" if t.kind == "f" else "SymInt"


def unsupported(p: ParamSpec) -> str | None:
    """Why a schema cannot carry ``p``, or None."""
    if p.kind == "value" or p.record is not None:
        return f"parameter '{p.name}' is a {p.rust_type} by value (a schema has no structs)"
    if p.kind == "pointer":
        return f"parameter '{p.name}' is a raw pointer ({p.rust_type}): no shape to trace"
    return None


def _arg(p: ParamSpec, alias: str | None) -> str:
    if not p.is_array:
        return f"{scalar_type(p)} {p.name}"
    return f"Tensor({alias}!) {p.name}" if alias else f"Tensor {p.name}"


def _alias(n: int) -> str:
    """Alias sets a, b, …, z, a1, b1, …"""
    return "abcdefghijklmnopqrstuvwxyz"[n % 26] + (str(n // 26) if n >= 26 else "")


def out_schema(name: str, params: Sequence[ParamSpec]) -> str:
    args, n = [], 0
    for p in params:
        alias = None
        if p.is_array and p.mutable:
            alias, n = _alias(n), n + 1
        args.append(_arg(p, alias))
    return f"{name}.{OUT_OVERLOAD}({', '.join(args)}) -> ()"


def _bindings(params: Sequence[ParamSpec], inputs: Sequence[int]) -> dict[str, Dim]:
    """Each dimension name an input binds: its first (parameter, axis)."""
    bound: dict[str, Dim] = {}
    for i in inputs:
        p = params[i]
        names: Sequence[str | int | None] = (
            p.array.dims if p.array is not None else [p.length] if p.is_array else []
        )
        for axis, d in enumerate(names):
            if isinstance(d, str):
                bound.setdefault(d, (i, axis))
    return bound


def _output_dims(p: ParamSpec, bound: dict[str, Dim]) -> tuple[Dim, ...] | str:
    """The extents of write-only output ``p`` from the inputs, or why they are unknown."""
    dims: Sequence[str | int | None] = p.array.dims if p.array is not None else [p.length]
    out: list[Dim] = []
    for d in dims:
        if isinstance(d, int):
            out.append(d)
        elif isinstance(d, str) and d in bound:
            out.append(bound[d])
        else:
            what = "has no #[shapes] length" if d is None and p.array is None else (
                "has a free extent '_'" if d is None else f"dimension '{d}' is no input's"
            )  # fmt: skip
            return f"output '{p.name}' {what}"
    return tuple(out)


def plan_kernel(name: str, instances: Sequence[KernelSpec]) -> OpPlan | str:
    """The op plan of one launcher, or why it gets no op."""
    params = instances[0].params
    for p in params:
        why = unsupported(p)
        if why is not None:
            return why
    if not any(p.is_array and p.mutable for p in params):
        return "it has no output (no mutable array parameter)"
    if needs_configuration(instances[0]):
        return "a call needs an explicit launch configuration (kernel[grid, block])"
    inputs = tuple(
        i for i, p in enumerate(params)
        if not (p.is_array and p.mutable) or p.kind in _IN_OUT
    )  # fmt: skip
    bound = _bindings(params, inputs)
    outputs: list[Output] = []
    why_not = "" if any(params[i].is_array for i in inputs) else "it has no array input"
    for i, p in enumerate(params):
        if not (p.is_array and p.mutable):
            continue
        if p.kind in _IN_OUT:
            outputs.append(Output(i, p.name, "copy", ()))
            continue
        dims = _output_dims(p, bound)
        if isinstance(dims, str):
            why_not = why_not or dims
            continue
        outputs.append(Output(i, p.name, _FILL[p.kind], dims))
    schema = None
    if not why_not:
        args = ", ".join(_arg(params[i], None) for i in inputs)
        rets = ", ".join("Tensor" for _ in outputs)
        schema = f"{name}({args}) -> " + (rets if len(outputs) == 1 else f"({rets})")
    return OpPlan(
        name, tuple(instances), out_schema(name, params), schema, inputs, tuple(outputs),
        why_not,
    )  # fmt: skip


def plan_ops(manifest: Manifest) -> tuple[list[OpPlan], dict[str, str]]:
    """The op plan of each kernel and each generic kernel's name (whose instances
    share one signature), and, by name, why the others get none."""
    plans: list[OpPlan] = []
    skipped: dict[str, str] = {}
    generic: dict[str, list[KernelSpec]] = {}
    entries = {k.entry for k in manifest.kernels}
    for spec in manifest.kernels:
        if spec.instance:
            generic.setdefault(spec.name, []).append(spec)
        plan = plan_kernel(spec.entry, [spec])
        if isinstance(plan, OpPlan):
            plans.append(plan)
        else:
            skipped[spec.entry] = plan
    for name, instances in generic.items():
        if name in entries:
            continue  # an entry symbol wins over the generic name (as in Module)
        plan = plan_kernel(name, instances)
        signatures = {out_schema(name, s.params) for s in instances}
        if isinstance(plan, OpPlan) and len(signatures) == 1:
            plans.append(plan)
        else:
            skipped[name] = plan if isinstance(plan, str) else "its instances' signatures differ"
    return plans, skipped
