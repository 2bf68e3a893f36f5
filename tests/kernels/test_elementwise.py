"""Elementwise bundled kernels on every array library (`lib`), against float64 NumPy:
fresh random inputs, poisoned outputs, sizes that are and are not multiples of the block.
Generic kernels are called by their Rust name and dispatch on the dtype; repeat calls on
CuPy arrays take the compiled fast path, so it is checked here too."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, sizes, tol

import pyoxide

RNG = np.random.default_rng()


@pytest.mark.parametrize("n", [1, 255, 256, 257, 4099, 1_000_003])
def test_vecadd(kernels: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    a, b = RNG.standard_normal(n, dtype=np.float32), RNG.standard_normal(n, dtype=np.float32)
    c = lib.poisoned(n, np.float32)
    kernels.vecadd(lib.asarray(a), lib.asarray(b), c)
    assert rel_err(lib.to_numpy(c), a.astype(np.float64) + b) < tol(np.float32)


@pytest.mark.parametrize("n", sizes(1, 257, 100_003))
def test_saxpy(kernels: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    alpha = float(np.float32(RNG.uniform(-4, 4)))
    x, y = RNG.standard_normal(n, dtype=np.float32), RNG.standard_normal(n, dtype=np.float32)
    out = lib.poisoned(n, np.float32)
    kernels.saxpy(alpha, lib.asarray(x), lib.asarray(y), out)
    ax = alpha * x.astype(np.float64)
    # a*x + y rounds twice (Rust does not fuse): measured against the terms' size.
    assert rel_err(lib.to_numpy(out), ax + y, np.abs(ax) + np.abs(y)) < tol(np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", sizes(257, 1 << 16))
def test_generic_scale_dispatches_on_dtype(
    kernels: pyoxide.Module, lib: ArrayLib, dtype: type, n: int
) -> None:
    factor = float(dtype(RNG.uniform(-3, 3)))
    x = RNG.standard_normal(n).astype(dtype)
    out = lib.poisoned(n, dtype)
    kernels.scale(factor, lib.asarray(x), out)
    got = lib.to_numpy(out)
    assert got.dtype == dtype
    assert rel_err(got, factor * x.astype(np.float64)) < tol(dtype)


@pytest.mark.parametrize("code", [0, 1, 2, 3])
@pytest.mark.parametrize("n", sizes(1, 257, 10_007))
def test_activate(kernels: pyoxide.Module, lib: ArrayLib, code: int, n: int) -> None:
    x = RNG.standard_normal(n, dtype=np.float32)
    coeffs = RNG.uniform(-1, 1, 4).astype(np.float32)
    out = lib.poisoned(n, np.float32)
    kernels.activate(lib.asarray(x), lib.asarray(coeffs), code, out)
    x64 = x.astype(np.float64)
    v = sum(float(c) * x64**j for j, c in enumerate(coeffs))
    erf = np.vectorize(math.erf)
    ref = [v, np.maximum(v, 0), np.tanh(v), 0.5 * v * (1 + erf(v / math.sqrt(2)))][code]
    # The polynomial's terms can cancel to a v near 0, where relu's and gelu's output
    # differ from float64 by the terms' rounding, not by v's size.
    terms = sum(abs(float(c)) * np.abs(x64) ** j for j, c in enumerate(coeffs))
    assert rel_err(lib.to_numpy(out), ref, terms) < tol(np.float32, compound=True)


def test_activate_unknown_code_writes_nan(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    out = lib.zeros(40, np.float32)
    kernels.activate(lib.asarray(np.ones(40, np.float32)), lib.asarray(np.ones(2, np.float32)),
                     9, out)  # fmt: skip
    assert np.isnan(lib.to_numpy(out)).all()
