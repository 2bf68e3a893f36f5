"""Every bundled kernel launched from Python (`from pyoxide import kernels`) on CuPy
arrays and on PyTorch tensors, against float64 NumPy: fresh random inputs, NaN-poisoned
outputs, sizes that are and are not multiples of the block size. Generic kernels are
called by their Rust name and dispatch on the dtype."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.probes import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu("launches the bundled kernels through CuPy")]

SIZES = [1, 255, 257, 1_000_003, 1 << 24]


@pytest.fixture(scope="module")
def kernels():
    from pyoxide import kernels

    return kernels


@pytest.fixture(scope="module", params=["cupy", "torch"])
def lib(request):
    """Array constructors for one GPU array library: (to_device, poisoned, to_numpy)."""
    if request.param == "cupy":
        import cupy as cp

        return (cp.asarray, lambda n, dt: cp.full(n, np.nan, dtype=dt), cp.asnumpy)
    torch = pytest.importorskip("torch")
    dtypes = {np.float32: torch.float32, np.float64: torch.float64}

    def to_device(x):
        return torch.from_numpy(np.ascontiguousarray(x)).cuda()

    def poisoned(n, dt):
        return torch.full((n,), float("nan"), dtype=dtypes[dt], device="cuda")

    def to_numpy(t):
        torch.cuda.synchronize()
        return t.cpu().numpy()

    return (to_device, poisoned, to_numpy)


def rel_err(got, ref) -> float:
    got = np.asarray(got, dtype=np.float64)
    assert np.isfinite(got).all(), "an output element was not written (NaN poison left)"
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))


@pytest.mark.parametrize("n", SIZES)
def test_vecadd(kernels, lib, n):
    to_dev, poisoned, to_np = lib
    rng = np.random.default_rng()
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = poisoned(n, np.float32)
    kernels.vecadd(to_dev(a), to_dev(b), c)
    err = rel_err(to_np(c), a.astype(np.float64) + b)
    print(f"vecadd n={n} rel err {err:.2e}")
    assert err < 1e-6


@pytest.mark.parametrize("n", SIZES)
def test_saxpy(kernels, lib, n):
    to_dev, poisoned, to_np = lib
    rng = np.random.default_rng()
    alpha = float(np.float32(rng.uniform(-4, 4)))
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = poisoned(n, np.float32)
    kernels.saxpy(alpha, to_dev(x), to_dev(y), out)
    err = rel_err(to_np(out), alpha * x.astype(np.float64) + y)
    print(f"saxpy n={n} rel err {err:.2e}")
    assert err < 1e-6


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-6), (np.float64, 1e-15)])
@pytest.mark.parametrize("n", [257, 1 << 20])
def test_generic_scale_dispatches_on_dtype(kernels, lib, dtype, tol, n):
    to_dev, poisoned, to_np = lib
    rng = np.random.default_rng()
    factor = float(dtype(rng.uniform(-3, 3)))
    x = rng.standard_normal(n).astype(dtype)
    out = poisoned(n, dtype)
    kernels.scale(factor, to_dev(x), out)
    got = to_np(out)
    assert got.dtype == dtype
    err = rel_err(got, factor * x.astype(np.float64))
    print(f"scale<{np.dtype(dtype).name}> n={n} rel err {err:.2e}")
    assert err < tol
