"""Specs of kernels_rs/src/rows.rs, rows/backward.rs and transpose.rs (softmax_rows,
layernorm_rows and their backward kernels, transpose): (rows × cols) matrices, with the
sizes taken from their shapes and the default launches from their `#[launch]` policies;
see pyoxide/spec.py."""

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


# --- the backward kernels (kernels_rs/src/rows/backward.rs) ---------------------------


def _rows_of(case: Case) -> Shape:
    return (case.shape[0],)


def _cols_of(case: Case) -> Shape:
    return (case.shape[1],)


def _softmax_bw_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    y = _softmax({"x": _x(case, rng)}, case)["out"].astype(np.float32)
    return {"out": y, "grad_out": _x(case, rng, 1)}


def _softmax_bw(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    y, g = a["out"].astype(F64), a["grad_out"].astype(F64)
    return {"grad_x": y * (g - (y * g).sum(axis=1, keepdims=True))}


def _softmax_bw_scale(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    """The size of the terms: y · (|grad_out| + Σ y · |grad_out|). Where a row is peaked
    (one y near 1), grad_out − Σ y · grad_out cancels, and float32's sum of y · grad_out
    errs by a fraction of the terms, not of the small difference."""
    y, g = a["out"].astype(F64), np.abs(a["grad_out"].astype(F64))
    return {"grad_x": y * (g + (y * g).sum(axis=1, keepdims=True))}


def _torch_softmax_bw(a: dict[str, Any]) -> Any:
    import torch

    y, g = torch.from_dlpack(a["out"]), torch.from_dlpack(a["grad_out"])
    return lambda: torch._softmax_backward_data(g, y, -1, torch.float32)


SOFTMAX_BACKWARD = Spec(
    kernel="softmax_rows_backward",
    inputs=_softmax_bw_inputs,
    outputs={"grad_x": Out(_same)},
    shapes=_rows,
    reference=_softmax_bw,
    scale=_softmax_bw_scale,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 12 * _elems(case),
    flops=lambda case: 4 * _elems(case),
    bench_shapes=BENCH_ROWS,
    peers={"torch softmax backward": _torch_softmax_bw},
)


def _stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = x.astype(F64)
    return x.mean(axis=1), 1 / np.sqrt(x.var(axis=1) + EPS)


def _ln_bw_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "x": _x(case, rng, 3),
        "weight": rng.standard_normal(case.shape[1]).astype(np.float32),
        "grad_out": _x(case, rng, 1),
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


LAYERNORM_BACKWARD = Spec(
    kernel="layernorm_rows_backward",
    inputs=_ln_bw_inputs,
    outputs={"grad_x": Out(_same), "mean": Out(_rows_of), "rstd": Out(_rows_of)},
    shapes=_rows,
    reference=_ln_bw,
    scale=_ln_bw_scale,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 12 * _elems(case),
    flops=lambda case: 12 * _elems(case),
    bench_shapes=BENCH_ROWS,
    peers={"torch layer_norm backward (input)": _torch_ln_bw([True, False, False])},
)


def _affine_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    x = _x(case, rng, 3)
    mean, rstd = _stats(x)
    return {
        "x": x,
        "grad_out": _x(case, rng, 1),
        "mean": mean.astype(np.float32),
        "rstd": rstd.astype(np.float32),
    }


def _affine(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    mean, rstd = a["mean"].astype(F64)[:, None], a["rstd"].astype(F64)[:, None]
    g = a["grad_out"].astype(F64)
    xhat = (a["x"].astype(F64) - mean) * rstd
    return {"grad_weight": (g * xhat).sum(axis=0), "grad_bias": g.sum(axis=0)}


LAYERNORM_BACKWARD_AFFINE = Spec(
    kernel="layernorm_rows_backward_affine",
    inputs=_affine_inputs,
    outputs={"grad_weight": Out(_cols_of), "grad_bias": Out(_cols_of)},
    shapes=_rows,
    reference=_affine,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 8 * _elems(case),
    flops=lambda case: 5 * _elems(case),
    bench_shapes=BENCH_ROWS,
    peers={"torch layer_norm backward (weight, bias)": _torch_ln_bw([False, True, True])},
)

SPECS = [
    SOFTMAX, LAYERNORM, TRANSPOSE, SOFTMAX_BACKWARD, LAYERNORM_BACKWARD,
    LAYERNORM_BACKWARD_AFFINE,
]  # fmt: skip
