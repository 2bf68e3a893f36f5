"""Specs of kernels_rs/src/elementwise.rs (vecadd, saxpy, scale, activate): see
pyoxide/spec.py for the format. Peers are PyTorch and CuPy doing the same operation."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Spec, compound_tol, per_element

F64 = np.float64
# 2^16 … 2^26 elements, ×4: the bandwidth-vs-size curve (2^26 f32 is 256 MiB, far past the L2).
BENCH_1D = [(1 << p,) for p in range(16, 27, 2)]


@functools.cache
def _peers() -> Any:
    """The peers scripts/bench_kernels times too (PyTorch, Triton, CuPy)."""
    import cupy

    from pyoxide.bench import Peers

    return Peers(cupy)


def _scalar(case: Case, v: float) -> float:
    return float(case.np_dtype.type(v))


#: The maps: `out` of the inputs' shape, timed along the bandwidth-vs-size curve.
_map_spec = functools.partial(Spec, outputs={"out": Out()}, bench_shapes=BENCH_1D)

VECADD = _map_spec(
    kernel="vecadd",
    inputs=lambda case, rng: {"a": case.normal(rng), "b": case.normal(rng)},
    outputs={"c": Out()},
    reference=lambda a, case: {"c": a["a"].astype(F64) + a["b"]},
    bytes=per_element(3 * 4),
    flops=per_element(1),
    peers={"bench_kernels": lambda a: _peers().vecadd(a["a"], a["b"], a["c"])},
)


def _saxpy_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "a": _scalar(case, rng.uniform(-4, 4)),
        "x": case.normal(rng),
        "y": case.normal(rng),
    }


SAXPY = _map_spec(
    kernel="saxpy",
    inputs=_saxpy_inputs,
    reference=lambda a, case: {"out": a["a"] * a["x"].astype(F64) + a["y"]},
    # a*x + y rounds twice (Rust does not fuse): measured against the terms' size.
    scale=lambda a, case: {"out": np.abs(a["a"] * a["x"].astype(F64)) + np.abs(a["y"])},
    bytes=per_element(3 * 4),
    flops=per_element(2),
    peers={"bench_kernels": lambda a: _peers().saxpy(a["a"], a["x"], a["y"], a["out"])},
)


def _scale_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {"factor": _scalar(case, rng.uniform(-3, 3)), "x": case.normal(rng)}


SCALE = _map_spec(
    kernel="scale",
    dtypes=("f32", "f64"),
    inputs=_scale_inputs,
    reference=lambda a, case: {"out": a["factor"] * a["x"].astype(F64)},
    bytes=lambda case: 2 * case.np_dtype.itemsize * case.n,
    flops=per_element(1),
    peers={"bench_kernels": lambda a: _peers().scale(a["factor"], a["x"], a["out"])},
)


def _activate_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "x": case.normal(rng),
        "coeffs": rng.uniform(-1, 1, 4).astype(np.float32),
        "activation": int(rng.integers(0, 4)),
    }


def _activate_ref(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    x = a["x"].astype(F64)
    v = sum(float(c) * x**j for j, c in enumerate(a["coeffs"]))
    v = np.asarray(v, F64) * np.ones_like(x)
    code = a["activation"]
    if code == 1:
        v = np.maximum(v, 0)
    elif code == 2:
        v = np.tanh(v)
    elif code == 3:
        erf = np.vectorize(math.erf, otypes=[F64])
        v = 0.5 * v * (1 + erf(v / math.sqrt(2))) if v.size else v
    return {"out": v}


def _activate_scale(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    # The polynomial's terms: where they cancel, f32 rounding is a fraction of them.
    x = np.abs(a["x"].astype(F64))
    return {"out": sum(abs(float(c)) * x**j for j, c in enumerate(a["coeffs"])) * np.ones_like(x)}


ACTIVATE = _map_spec(
    kernel="activate",
    inputs=_activate_inputs,
    reference=_activate_ref,
    scale=_activate_scale,
    tolerance=compound_tol,
    bytes=per_element(2 * 4),
    flops=per_element(10),
)

SPECS = [VECADD, SAXPY, SCALE, ACTIVATE]
