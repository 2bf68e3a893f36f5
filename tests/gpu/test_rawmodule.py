"""The built PTX, loaded with plain `cupy.RawModule` (no pyoxide runtime involved),
against NumPy in float64: fresh random inputs, NaN-poisoned outputs, sizes that are
and are not multiples of the block size."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.probes import requires_gpu
from helpers.rawmodule import bundled_module

from pyoxide.spec import rel_err

pytestmark = [pytest.mark.gpu, requires_gpu("PTX is loaded with CuPy on a CUDA device")]

SIZES = [1, 255, 257, 1_000_003, 1 << 24]
BLOCK = 256


def _launch(kernel, n, *args):
    grid = (max((n + BLOCK - 1) // BLOCK, 1),)
    kernel(grid, (BLOCK,), args)


@pytest.mark.parametrize("n", SIZES)
def test_vecadd_matches_numpy(n):
    import cupy as cp

    rng = np.random.default_rng()
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    da, db = cp.asarray(a), cp.asarray(b)
    dc = cp.full(n, cp.nan, dtype=cp.float32)
    u = np.uint64(n)
    _launch(bundled_module().get_function("vecadd"), n, da, u, db, u, dc, u)
    err = rel_err(cp.asnumpy(dc), a.astype(np.float64) + b)
    print(f"vecadd n={n} max rel err {err:.2e}")
    assert err < 1e-6


@pytest.mark.parametrize("n", SIZES)
def test_saxpy_matches_numpy(n):
    import cupy as cp

    rng = np.random.default_rng()
    alpha = np.float32(rng.uniform(-4, 4))
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = cp.full(n, cp.nan, dtype=cp.float32)
    u = np.uint64(n)
    _launch(
        bundled_module().get_function("saxpy"), n, alpha, cp.asarray(x), u, cp.asarray(y), u, out, u
    )
    ax = np.float64(alpha) * x
    err = rel_err(cp.asnumpy(out), ax + y, np.abs(ax) + np.abs(y))
    print(f"saxpy n={n} max rel err {err:.2e}")
    assert err < 1e-6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [257, 1 << 20])
def test_generic_scale_instances(dtype, n):
    import cupy as cp

    rng = np.random.default_rng()
    factor = dtype(rng.uniform(-3, 3))
    x = rng.standard_normal(n).astype(dtype)
    out = cp.full(n, cp.nan, dtype=dtype)
    u = np.uint64(n)
    name = "scale_f32" if dtype == np.float32 else "scale_f64"
    _launch(bundled_module().get_function(name), n, factor, cp.asarray(x), u, out, u)
    err = rel_err(cp.asnumpy(out), np.float64(factor) * x.astype(np.float64))
    assert err < (1e-6 if dtype == np.float32 else 1e-15)
