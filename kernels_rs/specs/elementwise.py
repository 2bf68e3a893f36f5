"""Specs of kernels_rs/src/elementwise.rs (vecadd, saxpy, scale, activate): see
pyoxide/spec.py for the format. Peers are PyTorch and CuPy doing the same operation."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Spec, tol

F64 = np.float64
# 2^16 … 2^26 elements, ×4: the bandwidth-vs-size curve (2^26 f32 is 256 MiB, far past the L2).
BENCH_1D = [(1 << p,) for p in range(16, 27, 2)]


def _normal(rng: np.random.Generator, case: Case) -> np.ndarray:
    return rng.standard_normal(case.n).astype(case.np_dtype)


@functools.cache
def _peers() -> Any:
    """The peers scripts/bench_kernels times too (PyTorch, Triton, CuPy)."""
    import cupy

    from pyoxide.bench import Peers

    return Peers(cupy)


def _same_shape(case: Case) -> int:
    return case.n


def _scalar(case: Case, v: float) -> float:
    return float(case.np_dtype.type(v))


VECADD = Spec(
    kernel="vecadd",
    inputs=lambda case, rng: {"a": _normal(rng, case), "b": _normal(rng, case)},
    outputs={"c": Out(_same_shape)},
    reference=lambda a, case: {"c": a["a"].astype(F64) + a["b"]},
    bytes=lambda case: 3 * 4 * case.n,
    flops=lambda case: case.n,
    bench_shapes=BENCH_1D,
    peers={"bench_kernels": lambda a: _peers().vecadd(a["a"], a["b"], a["c"])},
)


def _saxpy_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "a": _scalar(case, rng.uniform(-4, 4)),
        "x": _normal(rng, case),
        "y": _normal(rng, case),
    }


SAXPY = Spec(
    kernel="saxpy",
    inputs=_saxpy_inputs,
    outputs={"out": Out(_same_shape)},
    reference=lambda a, case: {"out": a["a"] * a["x"].astype(F64) + a["y"]},
    # a*x + y rounds twice (Rust does not fuse): measured against the terms' size.
    scale=lambda a, case: {"out": np.abs(a["a"] * a["x"].astype(F64)) + np.abs(a["y"])},
    bytes=lambda case: 3 * 4 * case.n,
    flops=lambda case: 2 * case.n,
    bench_shapes=BENCH_1D,
    peers={"bench_kernels": lambda a: _peers().saxpy(a["a"], a["x"], a["y"], a["out"])},
)


def _scale_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {"factor": _scalar(case, rng.uniform(-3, 3)), "x": _normal(rng, case)}


SCALE = Spec(
    kernel="scale",
    dtypes=("f32", "f64"),
    inputs=_scale_inputs,
    outputs={"out": Out(_same_shape)},
    reference=lambda a, case: {"out": a["factor"] * a["x"].astype(F64)},
    bytes=lambda case: 2 * case.np_dtype.itemsize * case.n,
    flops=lambda case: case.n,
    bench_shapes=BENCH_1D,
    peers={"bench_kernels": lambda a: _peers().scale(a["factor"], a["x"], a["out"])},
)


def _activate_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "x": _normal(rng, case),
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


ACTIVATE = Spec(
    kernel="activate",
    inputs=_activate_inputs,
    outputs={"out": Out(_same_shape)},
    reference=_activate_ref,
    scale=_activate_scale,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 2 * 4 * case.n,
    flops=lambda case: 10 * case.n,
    bench_shapes=BENCH_1D,
)

SPECS = [VECADD, SAXPY, SCALE, ACTIVATE]
