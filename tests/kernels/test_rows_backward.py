"""The row kernels' backward kernels (softmax_rows_backward, layernorm_rows_backward and
layernorm_rows_backward_affine) on every array library (`lib`), against gradients taken
by float64 central finite differences of the forward's float64 reference: for a random
upstream gradient g, the gradient of L = Σ g · f(x) with respect to each input. Rows are
independent, so one perturbation of a column moves every row's term at once."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, tol
from helpers.bundled import bundled_specs
from helpers.rows import EPS, column_gradient, layernorm64, softmax64

import pyoxide
from pyoxide.spec import Case
from pyoxide.spec import rel_err as terms_err  # the error over the size of the terms

RNG = np.random.default_rng()
# Finite differences in float64 are good to ~1e-9 here: the float32 kernels' roundoff
# (compound work: two reductions, then a combination) is what the tolerance allows.
TOL = tol(np.float32, compound=True)

# (rows, cols): one element; a warp's worth; not multiples of 4 or of the block; more
# columns than a block's threads (each thread takes several).
SHAPES = [(1, 1), (7, 31), (33, 257), (3, 1000)]


@pytest.mark.parametrize(("rows", "cols"), SHAPES)
@pytest.mark.parametrize("one_warp", [False, True])
def test_softmax_rows_backward(
    kernels: pyoxide.Module, lib: ArrayLib, rows: int, cols: int, one_warp: bool
) -> None:
    x = (RNG.standard_normal((rows, cols)) * 3).astype(np.float32)
    g = RNG.standard_normal((rows, cols)).astype(np.float32)
    y = softmax64(x.astype(np.float64)).astype(np.float32)  # the forward's output
    grad_x = lib.poisoned((rows, cols), np.float32)
    if one_warp:
        kernels.softmax_rows_backward[rows, 32](lib.asarray(y), lib.asarray(g), grad_x)
    else:
        kernels.softmax_rows_backward(lib.asarray(y), lib.asarray(g), grad_x)
    want = column_gradient(lambda v: (softmax64(v) * g).sum(axis=1), x)
    assert rel_err(lib.to_numpy(grad_x), want) < TOL


@pytest.mark.parametrize(("rows", "cols"), SHAPES)
@pytest.mark.parametrize("one_warp", [False, True])
def test_layernorm_rows_backward(
    kernels: pyoxide.Module, lib: ArrayLib, rows: int, cols: int, one_warp: bool
) -> None:
    """grad_x, grad_weight and grad_bias, through the two kernels autograd runs (the
    first leaves each row's mean and rstd for the second)."""
    x = (RNG.standard_normal((rows, cols)) * 3 + 20).astype(np.float32)
    w = RNG.standard_normal(cols).astype(np.float32)
    b = RNG.standard_normal(cols).astype(np.float32)
    g = RNG.standard_normal((rows, cols)).astype(np.float32)
    grad_x = lib.poisoned((rows, cols), np.float32)
    mean, rstd = lib.poisoned(rows, np.float32), lib.poisoned(rows, np.float32)
    args = (lib.asarray(x), lib.asarray(w), lib.asarray(g), grad_x, mean, rstd, EPS)
    if one_warp:
        kernels.layernorm_rows_backward[rows, 32](*args)
    else:
        kernels.layernorm_rows_backward(*args)
    grad_w, grad_b = lib.poisoned(cols, np.float32), lib.poisoned(cols, np.float32)
    kernels.layernorm_rows_backward_affine(
        lib.asarray(x), lib.asarray(g), mean, rstd, grad_w, grad_b
    )
    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    want_x = column_gradient(lambda v: (layernorm64(v, w64, b64) * g).sum(axis=1), x64)
    want_w = column_gradient(lambda v: (layernorm64(x64, v, b64) * g).sum(), w64)
    want_b = column_gradient(lambda v: (layernorm64(x64, w64, v) * g).sum(), b64)
    # grad_x = rstd (g - mean g - x̂ mean g x̂) cancels (wholly in a one-column row, where
    # it is 0): the kernel's fused g - mean g leaves a rounding of g, so its error is
    # measured against the size of the terms, which the kernel's spec gives.
    spec = bundled_specs()["layernorm_rows_backward"]
    assert spec.scale is not None
    terms = spec.scale({"x": x, "weight": w, "grad_out": g, "eps": EPS}, Case((rows, cols)))
    assert terms_err(lib.to_numpy(grad_x), want_x, terms["grad_x"]) < TOL
    assert rel_err(lib.to_numpy(grad_w), want_w) < TOL
    assert rel_err(lib.to_numpy(grad_b), want_b) < TOL
    assert rel_err(lib.to_numpy(mean), x64.mean(axis=1)) < TOL
    assert rel_err(lib.to_numpy(rstd), 1 / np.sqrt(x64.var(axis=1) + EPS)) < TOL
