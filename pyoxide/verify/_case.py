"""One verify case: draw its data, poison its outputs, launch the kernel on one backend,
and compare against the spec's float64 reference (and the inputs against their copies).
A failure is a :class:`Failure`: what went wrong (oxide-abi's ``VERIFY_FAILURES``), the
worst element and its index.

Verify fails closed. Everything the spec's own code returns is checked before it is
trusted, and a spec function that raises, or returns something unusable, is a "spec
error" of the case (the message names the function and the line of the spec that
raised). A reference must give every output; its non-finite elements are matched
exactly (NaN by NaN, inf by the same inf), the error is measured over its finite ones,
and an error that is not a number fails."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._launch.tune_space import family_key, is_hand_pick
from .._manifest.abi import VERIFY_FAILURES
from .._manifest.reader import KernelSpec
from ..spec import Case, Spec, poison_value
from ._arrays import Arrays
from ._specs import describe_exception

__all__ = [
    "Arrays", "Failure", "Outcome", "compare", "instance", "make_cases", "param_names",
    "run_case", "run_in",
]  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    """A case's result: ``error`` is the worst relative error over the outputs (0 for
    exact outputs that match); ``failure`` is None when the case passed."""

    error: float
    failure: Failure | None


@dataclass(frozen=True)
class Failure:
    what: str  # one of VERIFY_FAILURES
    message: str
    output: str | None = None
    index: tuple[int, ...] | None = None
    got: float | None = None
    want: float | None = None
    error: float | None = None

    def __post_init__(self) -> None:
        assert self.what in VERIFY_FAILURES, self.what

    def as_dict(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "message": self.message,
            "output": self.output,
            "index": list(self.index) if self.index is not None else None,
            "got": _num(self.got),
            "want": _num(self.want),
            "error": _num(self.error),
        }


def failed(what: str, message: str) -> Outcome:
    return Outcome(np.inf, Failure(what, message))


def _num(v: float | None) -> float | str | None:
    """JSON has no NaN or infinity: those are written as strings."""
    if v is None or np.isfinite(v):
        return v
    return str(v)


class SpecMistake(Exception):
    """The spec's code raised, or returned something verify cannot use."""


def _call(what: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # SystemExit too: a spec must not end the run
        raise SpecMistake(f"the spec's {what} raised {describe_exception(e)}") from None


def param_names(kernel_spec: KernelSpec) -> list[str]:
    """The parameters a caller passes, in order (not a tensor-map kernel's `maps`, which
    its launcher makes)."""
    return [p.name for p in kernel_spec.passed_params]


def make_cases(spec: Spec, count: int, seed: int) -> list[Case] | Outcome:
    """`count` cases: the spec's shapes, each dtype instance in turn, every other case on
    misaligned views (when the spec allows them); each case has its own seed. A spec
    error (its `shapes` raised or returned no usable shape) is an Outcome."""
    try:
        shapes = _shapes(_call("shapes", spec.case_shapes, np.random.default_rng(seed), count))
    except SpecMistake as m:
        return failed("spec error", str(m))
    cases = []
    for i in range(count):
        dtype = spec.dtypes[i % len(spec.dtypes)]
        offset = (i // len(spec.dtypes)) % 2 if spec.misaligned else 0
        cases.append(Case(shapes[i % len(shapes)], dtype, offset, seed * 1_000_003 + i))
    return cases


def _shapes(value: Any) -> list[tuple[int, ...]]:
    if not isinstance(value, list | tuple) or not value:
        raise SpecMistake(
            f"the spec's shapes returned {value!r:.80}: it must return a non-empty list of "
            "shapes, e.g. [(1,), (257,)]"
        )
    shapes = []
    for shape in value:
        dims = (shape,) if isinstance(shape, int | np.integer) else shape
        ok = isinstance(dims, tuple | list) and len(dims) > 0
        ok = ok and all(isinstance(d, int | np.integer) and d >= 0 for d in dims)
        if not ok:
            raise SpecMistake(
                f"the spec's shapes returned the shape {shape!r:.80}: a shape is a tuple of "
                "sizes >= 0, e.g. (257,) or (64, 33)"
            )
        shapes.append(tuple(int(d) for d in dims))
    return shapes


def instance(module: Any, spec: Spec, dtype: str) -> tuple[Any, KernelSpec]:
    """The launcher and manifest entry of `spec`'s kernel for `dtype` (a generic kernel's
    instance whose type parameter is `dtype`; a plain kernel as it is)."""
    # A tuned kernel's plain calls name its hand pick (pyoxide/_launch/tune_space.py): its
    # other candidates are verified by `pyoxide tune` before they are timed.
    found = [k for k in module.manifest.kernels if k.name == spec.kernel and is_hand_pick(k)]
    if not found:
        raise KeyError(f"no kernel {spec.kernel!r} in {module.manifest.crate_name}")
    for k in found:
        untuned = family_key(k)[1]
        if not untuned or dtype in (v for _, v in untuned):
            return module[k.entry], k
    have = ", ".join(v for k in found for _, v in k.instance)
    raise KeyError(f"{spec.kernel} has no {dtype} instance (it has {have})")


def run_in(module: Any, spec: Spec, case: Case, arrays: Arrays) -> Outcome:
    """Run `case` with `spec`'s kernel from `module`."""
    try:
        launcher, entry = instance(module, spec, case.dtype)
    except KeyError as e:
        return failed("spec error", f"{e.args[0]}: the spec names a kernel the crate lacks")
    return run_case(launcher, entry, spec, case, arrays)


def run_case(
    launcher: Any, kernel_spec: KernelSpec, spec: Spec, case: Case, arrays: Arrays
) -> Outcome:
    """Run `case` once and judge it."""
    try:
        return _run(launcher, kernel_spec, spec, case, arrays)
    except SpecMistake as m:
        return failed("spec error", str(m))


def _run(launcher: Any, kernel_spec: KernelSpec, spec: Spec, case: Case, arrays: Arrays) -> Outcome:
    rng = np.random.default_rng(case.seed)
    host = _call("inputs", spec.inputs, case, rng)
    if not isinstance(host, Mapping):
        raise SpecMistake(f"the spec's inputs returned {type(host).__name__}, not a dict")
    outs = {name: _call(f"outputs[{name!r}]", out.make, case) for name, out in spec.outputs.items()}
    names = param_names(kernel_spec)
    missing = [n for n in names if n not in host and n not in outs]
    if missing:
        raise SpecMistake(f"the spec gives no value for parameter(s) {', '.join(missing)}")
    dev: dict[str, Any] = {}
    arrays.clear()
    for name, value in {**host, **outs}.items():
        dev[name] = arrays.put(name, value, case.offset) if isinstance(value, np.ndarray) else value
    args = [dev[n] for n in names]
    try:
        if spec.launch is not None:
            spec.launch(launcher, args, case)
        else:
            launcher(*args)
        got = {name: arrays.get(dev[name]).reshape(outs[name].shape) for name in outs}
    except Exception as e:  # a trap, a refused launch, a fault: the case fails with it
        return _raised(e, spec, arrays)
    guard = arrays.overwritten_guard()
    if guard is not None:
        name, at = guard
        return _out_of_bounds(name, at, dev[name].size, "was written")
    for name, value in host.items():
        if isinstance(value, np.ndarray) and name not in outs:
            after = arrays.get(dev[name]).reshape(value.shape)
            changed = ~_same(after, value)
            if changed.any():
                idx = _unravel(int(np.argmax(changed.reshape(-1))), value.shape)
                return Outcome(np.inf, Failure(
                    "input modified", f"input `{name}` was written at index {list(idx)}",
                    name, idx, float(after[idx]), float(value[idx]),
                ))  # fmt: skip
    return _compare(spec, case, host, got)


_ADDRESS = re.compile(r"at address (0x[0-9a-fA-F]+)")


def _raised(e: Exception, spec: Spec, arrays: Arrays) -> Outcome:
    from ..errors import PyoxideError

    text = describe_exception(e)
    hit = _ADDRESS.search(str(e))
    fault = arrays.fault_at(int(hit.group(1), 16)) if hit else None
    if fault is not None:  # the emulator faulted on an array's guard pages
        name, at = fault
        return _out_of_bounds(name, at, None, "was accessed", f" ({text.splitlines()[0][:300]})")
    from_kernel = isinstance(e, PyoxideError) or type(e).__module__.startswith(("cupy", "cuda"))
    if spec.launch is not None and not from_kernel:
        return failed("spec error", f"the spec's launch raised {text}")
    return failed("raised", text.splitlines()[0][:400] if text else type(e).__name__)


def _out_of_bounds(name: str, at: int, length: int | None, how: str, note: str = "") -> Outcome:
    where = "before its start" if at < 0 else "past its end" + (
        f" (length {length})" if length is not None else ""
    )  # fmt: skip
    message = f"`{name}` {how} at element {at}, {where}{note}"
    return Outcome(np.inf, Failure("out-of-bounds write", message, name, (at,)))


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return (a == b) | (np.isnan(a) & np.isnan(b))  # type: ignore[no-any-return]
    return a == b  # type: ignore[no-any-return]


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def compare(spec: Spec, case: Case, host: dict[str, Any], got: dict[str, np.ndarray]) -> Outcome:
    """Judge the outputs `got` of `case` against the spec's reference."""
    try:
        return _compare(spec, case, host, got)
    except SpecMistake as m:
        return failed("spec error", str(m))


def _compare(spec: Spec, case: Case, host: Mapping[str, Any], got: Mapping[str, Any]) -> Outcome:
    want = _mapping("reference", _call("reference", spec.reference, host, case))
    if spec.observe is not None:
        got = _mapping("observe", _call("observe", spec.observe, got, case))
    unchecked = [n for n in got if n not in want]
    if unchecked:
        raise SpecMistake(
            f"the spec's reference gives no value for output(s) {', '.join(unchecked)}, "
            "which would go unchecked. Fix: return every output, by parameter name"
        )
    extra = [n for n in want if n not in got]
    if extra:
        raise SpecMistake(
            f"the spec's reference returns {', '.join(map(repr, extra))}, which is not an "
            f"output (the outputs: {', '.join(got)})"
        )
    scales = _mapping("scale", _call("scale", spec.scale, host, case)) if spec.scale else {}
    tolerance = _tolerance(spec, case)
    worst = 0.0
    for name in got:
        g = np.asarray(got[name])
        ref = _reference_array(name, want[name], g.shape)
        if g.size == 0:
            continue
        outcome = _judge(name, g, ref, scales.get(name), tolerance)
        if outcome.failure is not None:
            return outcome
        worst = max(worst, outcome.error)
    return Outcome(worst, None)


def _mapping(what: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecMistake(
            f"the spec's {what} returned {type(value).__name__}, not a dict of arrays by "
            "output name"
        )
    return value


def _tolerance(spec: Spec, case: Case) -> float:
    value = _call("tolerance", spec.tolerance, case) if callable(spec.tolerance) else spec.tolerance
    try:
        tolerance = float(value)
    except (TypeError, ValueError):
        raise SpecMistake(f"the spec's tolerance is {value!r}, not a number") from None
    if not 0 <= tolerance < np.inf:  # NaN too: every comparison with it is False
        raise SpecMistake(
            f"the spec's tolerance is {tolerance} for {case.describe()}: it must be a finite "
            "number >= 0 (NaN or inf would accept any result)"
        )
    return tolerance


def _reference_array(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    try:
        ref = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise SpecMistake(
            f"the spec's reference for `{name}` is not numbers ({type(value).__name__}: {e})"
        ) from None
    if ref.size != int(np.prod(shape)):
        raise SpecMistake(
            f"the spec's reference for `{name}` has shape {ref.shape}; the output has shape {shape}"
        )
    return ref.reshape(shape)


def _judge(name: str, g: np.ndarray, ref: np.ndarray, scale: Any, tolerance: float) -> Outcome:
    got = g.astype(np.float64)
    floating = isinstance(poison_value(g.dtype), float)
    special = ~np.isfinite(ref)
    has_special = bool(special.any())
    if has_special and not floating:
        idx = _unravel(int(np.argmax(special.reshape(-1))), g.shape)
        raise SpecMistake(
            f"the spec's reference for `{name}` (integers) is {ref[idx]} at {list(idx)}"
        )
    bad = ~np.isfinite(got)
    if has_special:
        bad &= ~special
    if bad.any():
        idx = _unravel(int(np.argmax(bad.reshape(-1))), g.shape)
        unwritten = bool(np.isnan(got[idx]))
        why = "the poison was never overwritten, or the kernel produced a NaN" if unwritten \
            else "the reference is finite there"  # fmt: skip
        return Outcome(np.inf, Failure(
            "unwritten element" if unwritten else "wrong result",
            f"output `{name}` at index {list(idx)} is {g[idx]} ({why})",
            name, idx, float(got[idx]), float(ref[idx]),
        ))  # fmt: skip
    if has_special:
        same = (np.isnan(ref) & np.isnan(got)) | (ref == got)
        mismatch = special & ~same
        if mismatch.any():
            idx = _unravel(int(np.argmax(mismatch.reshape(-1))), g.shape)
            return Outcome(np.inf, Failure(
                "wrong result",
                f"output `{name}` at index {list(idx)} is {g[idx]}, the reference is {ref[idx]} "
                "(non-finite reference elements must be matched exactly)",
                name, idx, float(got[idx]), float(ref[idx]),
            ))  # fmt: skip
        finite = ~special
        diff = np.where(finite, np.abs(got - np.where(finite, ref, 0.0)), 0.0)
        size = float(np.linalg.norm(ref[finite]))
    else:
        # Every element finite (the common case): no masks, in place, a few passes over
        # arrays that a tuned shape makes 2^28 elements long.
        diff = np.abs(np.subtract(got, ref, out=got), out=got)
        size = float(np.linalg.norm(ref))
    if scale is not None:
        s = np.asarray(scale, np.float64)
        size = max(size, float(np.linalg.norm(s[np.isfinite(s)])))
    err = float(np.linalg.norm(diff)) / max(size, 1e-300)
    if tolerance == 0 and diff.any():
        err = max(err, float(np.finfo(np.float64).tiny))
    if err <= tolerance:
        return Outcome(err, None)
    idx = _unravel(int(np.argmax(diff.reshape(-1))), g.shape)
    poison = not floating and g[idx] == _poison_int(g.dtype)
    return Outcome(err, Failure(
        "unwritten element" if poison else "wrong result",
        f"output `{name}`: relative error {err:.3g} > tolerance {tolerance:.3g}; "
        f"worst at index {list(idx)}: got {g[idx]}, want {ref[idx]}"
        + (" (the poison pattern: never written)" if poison else ""),
        name, idx, float(g[idx]), float(ref[idx]), err,
    ))  # fmt: skip


def _poison_int(dtype: np.dtype[Any]) -> int:
    return int(np.array(poison_value(dtype)).astype(dtype))
