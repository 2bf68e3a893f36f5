"""Specs of kernels_rs/src/rows.rs and transpose.rs (softmax_rows, layernorm_rows,
transpose): (rows × cols) matrices, with the sizes taken from their shapes and the
default launches from their `#[launch]` policies; see pyoxide/spec.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Shape, Spec, shapes_2d, tol

F64 = np.float64
EPS = 1e-5
# scripts/bench_kernels' shapes: rows that fit the registers and rows that stream.
BENCH_ROWS = [(4096, 1024), (16384, 4096), (4096, 16384)]


def _rows(rng: np.random.Generator, count: int) -> list[Shape]:
    out = shapes_2d(rng, count, max_elems=1 << 15)
    # Rows longer than 32 × 512 registers take the streamed path: a few of those too.
    return [*out[:8], (1, 20000), (2, 70000), *out[8:]]


def _x(case: Case, rng: np.random.Generator, scale: float = 4, shift: float = 0) -> np.ndarray:
    return (rng.standard_normal(case.shape) * scale + shift).astype(np.float32)


def _softmax(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    x = a["x"].astype(F64)
    e = np.exp(x - x.max(axis=1, keepdims=True)) if x.size else x
    return {"out": e / e.sum(axis=1, keepdims=True) if x.size else x}


def _elems(case: Case) -> int:
    return case.shape[0] * case.shape[1]


def _same(case: Case) -> Shape:
    return case.shape


SOFTMAX = Spec(
    kernel="softmax_rows",
    inputs=lambda case, rng: {"x": _x(case, rng)},
    outputs={"out": Out(_same)},
    shapes=_rows,
    reference=_softmax,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 8 * _elems(case),
    flops=lambda case: 5 * _elems(case),
    bench_shapes=BENCH_ROWS,
    peers={"torch.softmax": lambda a: _torch_softmax(a)},
)


def _torch_softmax(a: dict[str, Any]) -> Any:
    import torch

    x = torch.from_dlpack(a["x"])
    return lambda: torch.softmax(x, dim=-1)


def _ln_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    cols = case.shape[1]
    return {
        # An offset far from 0 is what breaks a one-pass E[x²] − E[x]² variance.
        "x": _x(case, rng, 3, 100),
        "weight": rng.standard_normal(cols).astype(np.float32),
        "bias": rng.standard_normal(cols).astype(np.float32),
        "eps": EPS,
    }


def _layernorm(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    x = a["x"].astype(F64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return {"out": (x - mean) / np.sqrt(var + a["eps"]) * a["weight"] + a["bias"]}


def _ln_scale(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    """The error f32 allows: x − mean loses |mean| · 2^-24, which is small next to a
    row's spread σ only when σ is not tiny. The generator's rows (spread 3 around 100,
    condition 100/3) get the plain tolerance; a row worse conditioned than that (two
    close values) gets it in proportion; a row of one element is its bias."""
    x = a["x"].astype(F64)
    mean = np.abs(x.mean(axis=1, keepdims=True))
    sigma = np.sqrt(x.var(axis=1, keepdims=True) + a["eps"])
    worse = np.maximum(1.0, (mean / sigma) / (100 / 3))
    ref = _layernorm(a, case)["out"]
    return {"out": worse * np.abs(ref) + np.abs(a["bias"].astype(F64))}


LAYERNORM = Spec(
    kernel="layernorm_rows",
    inputs=_ln_inputs,
    outputs={"out": Out(_same)},
    shapes=_rows,
    reference=_layernorm,
    scale=_ln_scale,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 8 * _elems(case),
    flops=lambda case: 8 * _elems(case),
    bench_shapes=BENCH_ROWS,
    peers={"torch layer_norm": lambda a: _torch_layernorm(a)},
)


def _torch_layernorm(a: dict[str, Any]) -> Any:
    import torch

    x = torch.from_dlpack(a["x"])
    cols = x.shape[1]
    w, b = torch.from_dlpack(a["weight"]), torch.from_dlpack(a["bias"])
    return lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, a["eps"])


def _tr_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {"x": (rng.standard_normal(case.shape) * 1000).astype(case.np_dtype)}


def _cupy_t(a: dict[str, Any]) -> Any:
    import cupy

    x = a["x"]
    return lambda: cupy.ascontiguousarray(x.T)


TRANSPOSE = Spec(
    kernel="transpose",
    dtypes=("f32", "f64", "u32"),
    inputs=_tr_inputs,
    outputs={"out": Out(lambda case: case.shape[::-1])},
    shapes=lambda rng, count: shapes_2d(rng, count, max_elems=1 << 16),
    reference=lambda a, case: {"out": a["x"].T},
    tolerance=lambda case: 0.0,
    bytes=lambda case: 2 * case.np_dtype.itemsize * _elems(case),
    flops=lambda case: 0,
    bench_shapes=[(4096, 4096), (16384, 16384)],
    peers={"cupy ascontiguousarray(x.T)": _cupy_t},
)

SPECS = [SOFTMAX, LAYERNORM, TRANSPOSE]
