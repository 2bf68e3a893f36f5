"""pyoxide kernels as PyTorch operators: ``torch.library`` ops generated from the
manifest, visible to ``torch.compile`` (a fake implementation from ``#[shapes]``) and
to autograd (a backward kernel paired by parameter names). The guide:
docs/guide/pytorch.md.

    import pyoxide.torch
    from pyoxide import kernels

    ops = pyoxide.torch.ops(kernels)            # torch.ops.pyoxide_kernels_rs
    y = ops.softmax_rows(x)                     # out of place: y allocated from #[shapes]
    ops.softmax_rows.out(x, y)                  # the kernel's own signature: y mutated

Each op's implementation calls the kernel's launcher (``module.softmax_rows(...)``),
on PyTorch's current stream for CUDA tensors, and on the CPU emulator for CPU tensors.
``import pyoxide`` does not import this module (nor torch).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from ._launch.torch_plan import OUT_OVERLOAD, OpPlan, namespace, plan_ops
from .errors import ArgumentTypeError, LoadError

if TYPE_CHECKING:
    from ._launch.module import Module

__all__ = ["TorchOps", "ops"]

#: Each Rust element type's torch dtype (those torch has).
DTYPES: dict[str, Any] = {
    "f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
    "bf16": torch.bfloat16, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
    "i64": torch.int64, "isize": torch.int64, "u8": torch.uint8, "bool": torch.bool,
    "u16": torch.uint16, "u32": torch.uint32, "u64": torch.uint64, "usize": torch.uint64,
}  # fmt: skip
#: A torch dtype's Rust element type (usize and isize are spelled u64 and i64).
RUST_TYPES = {d: t for t, d in DTYPES.items() if t not in ("usize", "isize")}


@dataclass
class _Namespace:
    """One crate's ops, registered once per process (torch cannot redefine an op); the
    launchers they call are those of the Module last passed to :func:`ops`."""

    lib: Any  # torch.library.Library
    schemas: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    launchers: dict[str, Any] = field(default_factory=dict)
    autograd: dict[str, str] = field(default_factory=dict)


_NAMESPACES: dict[str, _Namespace] = {}
_OPS: weakref.WeakKeyDictionary[Module, TorchOps] = weakref.WeakKeyDictionary()


def ops(module: Module) -> TorchOps:
    """The torch ops of ``module``'s kernels, in ``torch.ops.pyoxide_<crate>``, with each
    ``<name>_backward`` kernel paired to ``<name>`` for autograd (see
    :meth:`TorchOps.register_autograd`). Registered on first call; a later Module of the
    same crate (another build or path) with the same signatures takes the ops over."""
    got = _OPS.get(module)
    if got is None:
        got = _OPS[module] = TorchOps(module)
    return got


class TorchOps:
    """``ops.<kernel>`` (or ``ops["<kernel>"]``) is the op
    ``torch.ops.pyoxide_<crate>.<kernel>``: call it with the inputs for the out-of-place
    form, ``.out(...)`` with the kernel's own arguments.
    ``skipped`` says, by kernel, why one has no op or no out-of-place form."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.namespace = namespace(module.name)
        plans, skipped = plan_ops(module.manifest)
        self.plans = {p.name: p for p in plans}
        self.skipped = dict(skipped)
        for p in plans:
            if p.schema is None:
                self.skipped[p.name] = f"no out-of-place form: {p.no_functional}"
        self._ns = _register(self.namespace, plans, module)
        self._pair_backward_kernels()
        # Plain attributes (no __getattr__ per call), but for names this class uses:
        # those stay reachable as ops["name"].
        packets = getattr(torch.ops, self.namespace)
        for name in self.plans:
            if not hasattr(type(self), name):
                self.__dict__[name] = getattr(packets, name)

    def __getattr__(self, name: str) -> Any:
        # Only names that are no op come here (the ops are instance attributes).
        why = self.__dict__.get("skipped", {}).get(name)
        raise AttributeError(
            f"{self.__dict__.get('namespace')} has no op '{name}'" + (f": {why}" if why else "")
        )

    def __getitem__(self, name: str) -> Any:
        if name not in self.plans:
            raise KeyError(f"{self.namespace} has no op '{name}': {self.skipped.get(name, '')}")
        return getattr(getattr(torch.ops, self.namespace), name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.plans)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.plans))

    def __repr__(self) -> str:
        return f"<pyoxide.torch ops torch.ops.{self.namespace}: {len(self.plans)} ops>"

    @property
    def autograd(self) -> dict[str, str]:
        """By op: the backward registered for it (kernel names), or why a
        ``<name>_backward`` kernel could not be paired."""
        return dict(self._ns.autograd)

    def register_autograd(
        self,
        forward: str,
        backward: str | Sequence[str] | Callable[..., Any],
        *,
        setup_context: Callable[..., Any] | None = None,
    ) -> None:
        """Make the out-of-place op ``forward`` differentiable.

        ``backward`` names one or more backward kernels, matched by parameter name: a
        backward kernel's input named like a forward input or output gets that value
        (saved in the forward), ``grad_<output>`` gets the incoming gradient, and an
        earlier backward kernel's output its value; its outputs ``grad_<input>`` are the
        gradients of the forward's inputs. The kernels run in an order their inputs
        allow. Or ``backward`` is a function, with ``setup_context``, as
        ``torch.library.register_autograd`` takes them.
        """
        plan = self._functional(forward)
        qualname = f"{self.namespace}::{forward}"
        if callable(backward):
            torch.library.register_autograd(
                qualname, backward, setup_context=setup_context, lib=self._ns.lib
            )
            self._ns.autograd[forward] = getattr(backward, "__name__", "a Python function")
            return
        names = [backward] if isinstance(backward, str) else list(backward)
        chain = _order(plan, [self._functional(n) for n in names])
        save, back = _backward(self.namespace, plan, chain)
        torch.library.register_autograd(qualname, back, setup_context=save, lib=self._ns.lib)
        self._ns.autograd[forward] = ", ".join(p.name for p in chain)

    def _functional(self, name: str) -> OpPlan:
        plan = self.plans.get(name)
        if plan is None or plan.schema is None:
            why = self.skipped.get(name, "no such kernel")
            raise LoadError(
                f"{self.module.name}.{name} has no out-of-place op ({why}); autograd pairs "
                f"out-of-place ops. Fix: give the kernel's outputs a #[shapes(...)] "
                "contract, or pair another kernel."
            )
        return plan

    def _pair_backward_kernels(self) -> None:
        """``<name>_backward`` (with ``<name>_backward_*`` after it) for each ``<name>``."""
        for name, plan in self.plans.items():
            first = f"{name}_backward"
            if plan.schema is None or first not in self.plans or name in self._ns.autograd:
                continue
            rest = [n for n in self.plans if n.startswith(first + "_")]
            try:
                self.register_autograd(name, [first, *rest])
            except LoadError as e:
                self._ns.autograd[name] = f"not paired: {e}"


def _register(ns: str, plans: Sequence[OpPlan], module: Module) -> _Namespace:
    """Define the crate's ops (once per process) and point them at ``module``."""
    reg = _NAMESPACES.get(ns)
    schemas = {p.name: (p.out_schema, p.schema) for p in plans}
    if reg is not None and reg.schemas != schemas:
        changed = sorted(n for n in schemas.keys() | reg.schemas.keys()
                         if schemas.get(n) != reg.schemas.get(n))  # fmt: skip
        raise LoadError(
            f"torch.ops.{ns} already holds crate {module.name}'s ops with other signatures "
            f"({', '.join(changed)}), and torch cannot redefine an op. Fix: load one build "
            "of the crate per process (restart Python after changing its signatures)."
        )
    if reg is None:
        reg = _NAMESPACES[ns] = _Namespace(torch.library.Library(ns, "DEF"), schemas)
        for p in plans:
            _define(reg, ns, p)
    # The launchers the ops call: each op's, and a generic kernel's instances.
    reg.launchers.update({s.entry: module[s.entry] for p in plans for s in p.instances})
    reg.launchers.update({p.name: module[p.name] for p in plans})
    return reg


def _define(reg: _Namespace, ns: str, plan: OpPlan) -> None:
    name, lib = plan.name, reg.lib
    lib.define(plan.out_schema)
    run_out = _run_out(reg, name)
    for key in ("CPU", "CUDA"):
        lib.impl(f"{name}.{OUT_OVERLOAD}", run_out, key)
    torch.library.register_fake(f"{ns}::{name}.{OUT_OVERLOAD}", _fake_out, lib=lib)
    if plan.schema is None:
        return
    lib.define(plan.schema)
    run = _run_functional(reg, plan)
    for key in ("CPU", "CUDA"):
        lib.impl(name, run, key)
    torch.library.register_fake(f"{ns}::{name}", _fake_functional(plan), lib=lib)


def _plain(a: Any) -> Any:
    """A tensor as the launcher takes it: with no autograd history to refuse."""
    return a.detach() if isinstance(a, torch.Tensor) and a.requires_grad else a


def _run_out(reg: _Namespace, name: str) -> Callable[..., None]:
    launchers = reg.launchers

    def run_out(*args: Any) -> None:
        launchers[name](*[_plain(a) for a in args])

    return run_out


def _fake_out(*args: Any) -> None:
    return None  # outputs are the arguments, mutated


def _allocate(plan: OpPlan, args: Sequence[Any]) -> tuple[list[Any], list[Any], str]:
    """The kernel's arguments for a functional call (its outputs allocated), the
    outputs, and the launcher's name (a generic kernel's instance for these dtypes)."""
    full: list[Any] = [None] * len(plan.params)
    for i, a in zip(plan.inputs, args, strict=True):
        full[i] = a
    spec, entry = plan.instances[0], plan.name
    if len(plan.instances) > 1:
        arrays = [a for i, a in zip(plan.inputs, args, strict=True) if plan.params[i].is_array]
        types = [RUST_TYPES.get(a.dtype) for a in arrays]
        found = plan.instance_for(types)
        if found is None:
            raise ArgumentTypeError(
                plan.name, None, "tensors of one instance's dtypes: " + "; ".join(
                    s.entry for s in plan.instances),
                ", ".join(str(a.dtype) for a in arrays), "convert the tensors (.to(dtype))",
            )  # fmt: skip
        spec, entry = found, found.entry
    like = next(a for a in args if isinstance(a, torch.Tensor))
    outputs = []
    for o in plan.outputs:
        if o.fill == "copy":
            t = torch.empty_like(full[o.index]).copy_(full[o.index])
        else:
            shape = [d if isinstance(d, int) else _extent(plan, args, *d) for d in o.dims]
            make = torch.zeros if o.fill == "zeros" else torch.empty
            t = make(shape, dtype=DTYPES[spec.params[o.index].type], device=like.device)
        full[o.index] = t
        outputs.append(t)
    return full, outputs, entry


def _extent(plan: OpPlan, args: Sequence[Any], param: int, axis: int) -> Any:
    """Extent ``axis`` of the input for kernel parameter ``param`` (a slice: its length)."""
    a = args[plan.inputs.index(param)]
    return a.shape[axis] if plan.params[param].array is not None else a.numel()


def _run_functional(reg: _Namespace, plan: OpPlan) -> Callable[..., Any]:
    launchers = reg.launchers

    def run(*args: Any) -> Any:
        args = tuple(_plain(a) for a in args)
        full, outputs, entry = _allocate(plan, args)
        launchers[entry](*full)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return run


def _fake_functional(plan: OpPlan) -> Callable[..., Any]:
    def fake(*args: Any) -> Any:
        _, outputs, _ = _allocate(plan, args)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return fake


# --- autograd from backward kernels ---------------------------------------------


def _grad(name: str) -> str:
    return f"grad_{name}"


def _order(forward: OpPlan, chain: Sequence[OpPlan]) -> list[OpPlan]:
    """The backward kernels in an order their inputs allow, each input checked."""
    have = {forward.params[i].name for i in forward.inputs}
    have |= {o.name for o in forward.outputs} | {_grad(o.name) for o in forward.outputs}
    todo, ordered = list(chain), []
    while todo:
        ready = next((p for p in todo if all(p.params[i].name in have for i in p.inputs)), None)
        if ready is None:
            p = todo[0]
            missing = [p.params[i].name for i in p.inputs if p.params[i].name not in have]
            raise LoadError(
                f"backward kernel {p.name} takes {', '.join(repr(m) for m in missing)}, which "
                f"neither {forward.name} nor an earlier backward kernel gives (there are: "
                f"{', '.join(sorted(have))}). Fix: name the parameter after a forward input "
                "or output, grad_<output>, or another backward kernel's output."
            )
        todo.remove(ready)
        ordered.append(ready)
        have |= {o.name for o in ready.outputs}
    grads = {o.name for p in ordered for o in p.outputs}
    if not any(_grad(forward.params[i].name) in grads for i in forward.inputs):
        raise LoadError(
            f"no backward kernel of {forward.name} has an output named grad_<input> "
            f"(inputs: {', '.join(forward.params[i].name for i in forward.inputs)}). Fix: "
            "name the gradient outputs grad_<input>."
        )
    return ordered


def _backward(ns: str, forward: OpPlan, chain: Sequence[OpPlan]) -> tuple[Any, Any]:
    """setup_context and backward functions that run the ``chain`` of backward ops."""
    read = {p.params[i].name for p in chain for i in p.inputs}
    fwd_in = [(forward.params[i], k) for k, i in enumerate(forward.inputs)]
    saved_in = [(p.name, k) for p, k in fwd_in if p.name in read and p.is_array]
    scalars = [(p.name, k) for p, k in fwd_in if p.name in read and not p.is_array]
    saved_out = [(o.name, k) for k, o in enumerate(forward.outputs) if o.name in read]
    saved = [n for n, _ in saved_in] + [n for n, _ in saved_out]
    packets = [(p, getattr(getattr(torch.ops, ns), p.name).default) for p in chain]

    def setup_context(ctx: Any, inputs: Sequence[Any], output: Any) -> None:
        outs = output if isinstance(output, tuple) else (output,)
        ctx.save_for_backward(*[inputs[k] for _, k in saved_in], *[outs[k] for _, k in saved_out])
        ctx.pyoxide_scalars = {n: inputs[k] for n, k in scalars}

    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        values = dict(zip(saved, ctx.saved_tensors, strict=True)) | ctx.pyoxide_scalars
        values |= {_grad(o.name): g for o, g in zip(forward.outputs, grads, strict=True)}
        for plan, op in packets:
            args = [_contiguous(values[plan.params[i].name], plan, i) for i in plan.inputs]
            result = op(*args)
            results = result if isinstance(result, tuple) else (result,)
            values |= {o.name: r for o, r in zip(plan.outputs, results, strict=True)}
        return tuple(values.get(_grad(p.name)) if p.is_array else None for p, _ in fwd_in)

    return setup_context, backward


def _contiguous(value: Any, plan: OpPlan, i: int) -> Any:
    """Gradients arrive in any layout (an expanded scalar's is all zero strides); a
    kernel parameter that reads C order gets a contiguous copy when it needs one."""
    p = plan.params[i]
    strided = p.array is not None and p.array.layout == "strided"
    return value if strided or not isinstance(value, torch.Tensor) else value.contiguous()
