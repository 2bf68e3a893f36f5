"""One verify case: draw its data, poison its outputs, launch the kernel on one backend,
and compare against the spec's float64 reference (and the inputs against their copies).
A failure is a :class:`Failure`: what went wrong, the worst element and its index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._manifest import KernelSpec
from .spec import Case, Spec


@dataclass(frozen=True)
class Outcome:
    """A case's result: ``error`` is the worst relative error over the outputs (0 for
    exact outputs that match); ``failure`` is None when the case passed."""

    error: float
    failure: Failure | None


@dataclass(frozen=True)
class Failure:
    what: str  # "wrong result", "unwritten element", "input modified", "raised"
    message: str
    output: str | None = None
    index: tuple[int, ...] | None = None
    got: float | None = None
    want: float | None = None
    error: float | None = None

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


def _num(v: float | None) -> float | str | None:
    """JSON has no NaN or infinity: those are written as strings."""
    if v is None or np.isfinite(v):
        return v
    return str(v)


#: Elements of canary bytes on each side of every array: a write past either end of an
#: array (an out-of-bounds write) changes them and fails the case.
GUARD = 64
CANARY = 0xA5


class Arrays:
    """Makes the device copies of a case's host arrays on one backend: NumPy (the
    emulator) or CuPy. Each array is a view into a larger buffer: `offset` elements
    (for misaligned views) plus GUARD elements of canary bytes before it, GUARD after."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.cp: Any = None
        self._buffers: list[tuple[str, Any, int, int]] = []
        if backend == "cupy":
            import cupy

            self.cp = cupy

    def put(self, name: str, host: np.ndarray, offset: int) -> Any:
        flat = np.ascontiguousarray(host).reshape(-1)
        lo = GUARD + offset
        buf = np.empty(lo + flat.size + GUARD, flat.dtype)
        buf.view(np.uint8)[:] = CANARY
        buf[lo : lo + flat.size] = flat
        dev = buf if self.cp is None else self.cp.asarray(buf)
        self._buffers.append((name, dev, lo, flat.size))
        return dev[lo : lo + flat.size].reshape(host.shape)  # a view, shaped as given

    def get(self, dev: Any) -> np.ndarray:
        if self.cp is None:
            return np.array(dev)
        return self.cp.asnumpy(dev)  # type: ignore[no-any-return]

    def overwritten_guard(self) -> tuple[str, int] | None:
        """The first array whose guard bytes changed, with the element index written
        (negative: before the array; >= its length: past its end)."""
        for name, dev, lo, n in self._buffers:
            raw = self.get(dev)
            changed = (raw.view(np.uint8).reshape(raw.size, -1) != CANARY).any(axis=1)
            changed[lo : lo + n] = False  # the array itself
            bad = np.flatnonzero(changed)
            if bad.size:
                return name, int(bad[0]) - lo
        return None

    def clear(self) -> None:
        self._buffers.clear()


def param_names(kernel_spec: KernelSpec) -> list[str]:
    return [p.name for p in kernel_spec.params]


def run_case(
    launcher: Any, kernel_spec: KernelSpec, spec: Spec, case: Case, arrays: Arrays
) -> Outcome:
    """Run `case` once and judge it."""
    rng = np.random.default_rng(case.seed)
    host = spec.inputs(case, rng)
    outs = {name: out.make(case) for name, out in spec.outputs.items()}
    names = param_names(kernel_spec)
    unknown = set(host) | set(outs)
    missing = [n for n in names if n not in unknown]
    if missing:
        msg = f"the spec gives no value for parameter(s) {', '.join(missing)}"
        return Outcome(np.inf, Failure("spec error", msg))
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
    except Exception as e:  # a trap, a refused launch: the case fails with its message
        msg = f"{type(e).__name__}: {e}".strip()
        return Outcome(np.inf, Failure("raised", msg.splitlines()[0][:400]))
    guard = arrays.overwritten_guard()
    if guard is not None:
        name, at = guard
        where = "before its start" if at < 0 else f"past its end (length {dev[name].size})"
        return Outcome(np.inf, Failure(
            "out-of-bounds write", f"`{name}` was written at element {at}, {where}",
            name, (at,),
        ))  # fmt: skip
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
    return compare(spec, case, host, got)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return (a == b) | (np.isnan(a) & np.isnan(b))  # type: ignore[no-any-return]
    return a == b  # type: ignore[no-any-return]


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def compare(spec: Spec, case: Case, host: dict[str, Any], got: dict[str, np.ndarray]) -> Outcome:
    want = spec.reference(host, case)
    if spec.observe is not None:
        got = spec.observe(got, case)
    scales = spec.scale(host, case) if spec.scale is not None else {}
    tolerance = spec.tolerance(case)
    worst = 0.0
    for name, ref in want.items():
        g = np.asarray(got[name])
        ref = np.asarray(ref)
        if g.shape != ref.shape:
            g = g.reshape(ref.shape)
        if g.size == 0:
            continue
        if g.dtype.kind == "f":
            bad = ~np.isfinite(g) & np.isfinite(ref)
            if bad.any():
                idx = _unravel(int(np.argmax(bad.reshape(-1))), g.shape)
                return Outcome(np.inf, Failure(
                    "unwritten element",
                    f"output `{name}` at index {list(idx)} is {g[idx]} (the poison was "
                    "never overwritten, or the kernel produced a non-finite value)",
                    name, idx, float(g[idx]), float(ref[idx]),
                ))  # fmt: skip
        diff = np.abs(g.astype(np.float64) - ref.astype(np.float64))
        size = float(np.linalg.norm(ref.astype(np.float64)))
        if name in scales:
            size = max(size, float(np.linalg.norm(np.asarray(scales[name], np.float64))))
        err = float(np.linalg.norm(diff)) / max(size, 1e-300)
        if tolerance == 0 and diff.any():
            err = max(err, float(np.finfo(np.float64).tiny))
        worst = max(worst, err)
        if err > tolerance:
            idx = _unravel(int(np.argmax(diff.reshape(-1))), g.shape)
            poison = g.dtype.kind != "f" and g[idx] == _poison_int(g.dtype)
            what = "unwritten element" if poison else "wrong result"
            return Outcome(err, Failure(
                what,
                f"output `{name}`: relative error {err:.3g} > tolerance {tolerance:.3g}; "
                f"worst at index {list(idx)}: got {g[idx]}, want {ref[idx]}"
                + (" (the poison pattern: never written)" if poison else ""),
                name, idx, float(g[idx]), float(ref[idx]), err,
            ))  # fmt: skip
    return Outcome(worst, None)


def _poison_int(dtype: np.dtype[Any]) -> int:
    from .spec import poison_value

    return int(np.array(poison_value(dtype)).astype(dtype))
