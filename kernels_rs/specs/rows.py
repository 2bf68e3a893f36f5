"""Specs of kernels_rs/src/rows.rs, rows/backward.rs and transpose.rs (softmax_rows,
layernorm_rows and their backward kernels, transpose): (rows × cols) matrices, with the
sizes taken from their shapes and the default launches from their `#[launch]` policies;
see pyoxide/spec.py."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pyoxide.spec import (
    Case,
    Out,
    Shape,
    Spec,
    compound_tol,
    exact_tol,
    per_element,
    shapes_2d,
    torch_peer,
)

F64 = np.float64
EPS = 1e-5
# scripts/bench_kernels' shapes: rows that fit the registers and rows that stream.
BENCH_ROWS = [(4096, 1024), (16384, 4096), (4096, 16384)]


def _rows(rng: np.random.Generator, count: int) -> list[Shape]:
    out = shapes_2d(rng, count, max_elems=1 << 15)
    # Rows longer than 32 × 512 registers take the streamed path: a few of those too.
    return [*out[:8], (1, 20000), (2, 70000), *out[8:]]


#: The row kernels: checked at `_rows`, timed at BENCH_ROWS, compound work (f32 only).
_row_spec = functools.partial(Spec, shapes=_rows, tolerance=compound_tol, bench_shapes=BENCH_ROWS)


def _softmax(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    x = a["x"].astype(F64)
    e = np.exp(x - x.max(axis=1, keepdims=True)) if x.size else x
    return {"out": e / e.sum(axis=1, keepdims=True) if x.size else x}


SOFTMAX = _row_spec(
    kernel="softmax_rows",
    inputs=lambda case, rng: {"x": case.normal(rng, scale=4)},
    outputs={"out": Out()},
    reference=_softmax,
    bytes=per_element(8),
    flops=per_element(5),
    peers={"torch.softmax": torch_peer(lambda torch, x: torch.softmax(x, dim=-1), "x")},
)


def _ln_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    cols = case.shape[1]
    return {
        # An offset far from 0 is what breaks a one-pass E[x²] − E[x]² variance.
        "x": case.normal(rng, scale=3, shift=100),
        "weight": case.normal(rng, shape=cols),
        "bias": case.normal(rng, shape=cols),
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


LAYERNORM = _row_spec(
    kernel="layernorm_rows",
    inputs=_ln_inputs,
    outputs={"out": Out()},
    reference=_layernorm,
    scale=_ln_scale,
    bytes=per_element(8),
    flops=per_element(8),
    peers={
        "torch layer_norm": torch_peer(
            lambda torch, x, w, b: torch.nn.functional.layer_norm(x, x.shape[1:], w, b, EPS),
            "x",
            "weight",
            "bias",
        )
    },
)


def _cupy_t(a: dict[str, Any]) -> Any:
    import cupy

    x = a["x"]
    return lambda: cupy.ascontiguousarray(x.T)


TRANSPOSE = Spec(
    kernel="transpose",
    dtypes=("f32", "f64", "u32"),
    inputs=lambda case, rng: {"x": case.normal(rng, scale=1000)},
    outputs={"out": Out(lambda case: case.shape[::-1])},
    shapes=lambda rng, count: shapes_2d(rng, count, max_elems=1 << 16),
    reference=lambda a, case: {"out": a["x"].T},
    tolerance=exact_tol,
    bytes=lambda case: 2 * case.np_dtype.itemsize * case.size,
    flops=lambda case: 0,
    bench_shapes=[(4096, 4096), (16384, 16384)],
    peers={"cupy ascontiguousarray(x.T)": _cupy_t},
)


# --- the backward kernels (kernels_rs/src/rows/backward.rs) ---------------------------


def _rows_of(case: Case) -> Shape:
    return (case.shape[0],)


def _cols_of(case: Case) -> Shape:
    return (case.shape[1],)


def _softmax_bw_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    y = _softmax({"x": case.normal(rng, scale=4)}, case)["out"].astype(np.float32)
    return {"out": y, "grad_out": case.normal(rng)}


def _softmax_bw(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    y, g = a["out"].astype(F64), a["grad_out"].astype(F64)
    return {"grad_x": y * (g - (y * g).sum(axis=1, keepdims=True))}


def _softmax_bw_scale(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    """The size of the terms: y · (|grad_out| + Σ y · |grad_out|). Where a row is peaked
    (one y near 1), grad_out − Σ y · grad_out cancels, and float32's sum of y · grad_out
    errs by a fraction of the terms, not of the small difference."""
    y, g = a["out"].astype(F64), np.abs(a["grad_out"].astype(F64))
    return {"grad_x": y * (g + (y * g).sum(axis=1, keepdims=True))}


SOFTMAX_BACKWARD = _row_spec(
    kernel="softmax_rows_backward",
    inputs=_softmax_bw_inputs,
    outputs={"grad_x": Out()},
    reference=_softmax_bw,
    scale=_softmax_bw_scale,
    bytes=per_element(12),
    flops=per_element(4),
    peers={
        "torch softmax backward": torch_peer(
            lambda torch, y, g: torch._softmax_backward_data(g, y, -1, torch.float32),
            "out",
            "grad_out",
        )
    },
)


def _stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = x.astype(F64)
    return x.mean(axis=1), 1 / np.sqrt(x.var(axis=1) + EPS)


def _ln_bw_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "x": case.normal(rng, scale=3),
        "weight": case.normal(rng, shape=case.shape[1]),
        "grad_out": case.normal(rng),
        "eps": EPS,
    }


def _ln_bw(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    mean, rstd = _stats(a["x"])
    xhat = (a["x"].astype(F64) - mean[:, None]) * rstd[:, None]
    g = a["grad_out"].astype(F64) * a["weight"]
    mean_g, mean_gx = g.mean(axis=1, keepdims=True), (g * xhat).mean(axis=1, keepdims=True)
    return {"grad_x": rstd[:, None] * (g - mean_g - xhat * mean_gx), "mean": mean, "rstd": rstd}


def _ln_bw_scale(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    """The size of grad_x's three terms (which cancel): rstd · (|g| + mean |g| + |x̂| ·
    mean |g · x̂|); mean and rstd are compared plainly."""
    mean, rstd = _stats(a["x"])
    xhat = np.abs((a["x"].astype(F64) - mean[:, None]) * rstd[:, None])
    g = np.abs(a["grad_out"].astype(F64) * a["weight"])
    terms = g + g.mean(axis=1, keepdims=True) + xhat * (g * xhat).mean(axis=1, keepdims=True)
    return {"grad_x": rstd[:, None] * terms}


def _torch_ln_bw(mask: list[bool]) -> Any:
    """torch's layer norm backward for the gradients in `mask` (input, weight, bias)."""

    def peer(a: dict[str, Any]) -> Any:
        import torch

        x, g = torch.from_dlpack(a["x"]), torch.from_dlpack(a["grad_out"])
        var, mean = torch.var_mean(x, dim=1, keepdim=True, correction=0)
        rstd = torch.rsqrt(var + EPS)
        w = torch.from_dlpack(a["weight"]) if "weight" in a else torch.ones_like(x[0])
        b, cols = torch.zeros_like(w), [x.shape[1]]
        return lambda: torch.ops.aten.native_layer_norm_backward(g, x, cols, mean, rstd, w, b, mask)

    return peer


LAYERNORM_BACKWARD = _row_spec(
    kernel="layernorm_rows_backward",
    inputs=_ln_bw_inputs,
    outputs={"grad_x": Out(), "mean": Out(_rows_of), "rstd": Out(_rows_of)},
    reference=_ln_bw,
    scale=_ln_bw_scale,
    bytes=per_element(12),
    flops=per_element(12),
    peers={"torch layer_norm backward (input)": _torch_ln_bw([True, False, False])},
)


def _affine_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    x = case.normal(rng, scale=3)
    mean, rstd = _stats(x)
    return {
        "x": x,
        "grad_out": case.normal(rng),
        "mean": mean.astype(np.float32),
        "rstd": rstd.astype(np.float32),
    }


def _affine(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    mean, rstd = a["mean"].astype(F64)[:, None], a["rstd"].astype(F64)[:, None]
    g = a["grad_out"].astype(F64)
    xhat = (a["x"].astype(F64) - mean) * rstd
    return {"grad_weight": (g * xhat).sum(axis=0), "grad_bias": g.sum(axis=0)}


LAYERNORM_BACKWARD_AFFINE = _row_spec(
    kernel="layernorm_rows_backward_affine",
    inputs=_affine_inputs,
    outputs={"grad_weight": Out(_cols_of), "grad_bias": Out(_cols_of)},
    reference=_affine,
    bytes=per_element(8),
    flops=per_element(5),
    peers={"torch layer_norm backward (weight, bias)": _torch_ln_bw([False, True, True])},
)

SPECS = [
    SOFTMAX, LAYERNORM, TRANSPOSE, SOFTMAX_BACKWARD, LAYERNORM_BACKWARD,
    LAYERNORM_BACKWARD_AFFINE,
]  # fmt: skip
