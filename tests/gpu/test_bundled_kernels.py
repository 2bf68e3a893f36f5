"""Every bundled kernel launched from Python (`from pyoxide import kernels`) on CuPy
arrays and on PyTorch tensors, against float64 NumPy: fresh random inputs, NaN-poisoned
outputs, sizes that are and are not multiples of the block size. Generic kernels are
called by their Rust name and dispatch on the dtype. Repeat calls go through the fast
launch path, so it is checked here too."""

from __future__ import annotations

import math

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

    def to_device(x):
        return torch.from_numpy(np.ascontiguousarray(x)).cuda()

    def poisoned(n, dt):
        # Through NumPy, so dtypes torch can hold but not fill on the GPU (u32) work too.
        return to_device(np.full(n, np.nan if np.dtype(dt).kind == "f" else 0xDEADBEEF, dt))

    def to_numpy(t):
        torch.cuda.synchronize()
        return t.cpu().numpy()

    return (to_device, poisoned, to_numpy)


def rel_err(got, ref) -> float:
    got = np.asarray(got, dtype=np.float64)
    assert np.isfinite(got).all(), "an output element was not written (NaN poison left)"
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))




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


@pytest.mark.parametrize("n", [1, 255, 257, 1_000_003])
@pytest.mark.parametrize("block", [256, 1024])
def test_reduce_sum(kernels, lib, n, block):
    to_dev, _, to_np = lib
    x = np.random.default_rng().standard_normal(n, dtype=np.float32)
    out = to_dev(np.zeros(1, np.float32))
    grid = min(-(-n // block), 264)  # grid-stride: fewer blocks than elements is fine
    kernels.reduce_sum_f32[grid, block](to_dev(x), out)
    got = float(to_np(out)[0])
    err = abs(got - x.astype(np.float64).sum()) / np.abs(x).astype(np.float64).sum()
    print(f"reduce_sum_f32 n={n} block={block} err/sum|x| {err:.2e}")
    assert err < 1e-6


@pytest.mark.parametrize("name", ["histogram", "histogram_shared"])
@pytest.mark.parametrize(("n", "bins"), [(1, 1), (257, 10), (1_000_003, 256), (100_000, 1025)])
def test_histograms(kernels, lib, name, n, bins):
    to_dev, _, to_np = lib
    x = np.random.default_rng().integers(0, bins + 3, n, dtype=np.uint32)  # some past the end
    counts = to_dev(np.zeros(bins, np.uint32))
    getattr(kernels, name)[132, 256](to_dev(x), counts)
    want = np.bincount(x[x < bins], minlength=bins)
    np.testing.assert_array_equal(to_np(counts), want)


@pytest.mark.parametrize(("m", "n", "k"), [(1, 1, 1), (17, 33, 15), (100, 257, 300)])
def test_matmul_tiled(kernels, lib, m, n, k):
    to_dev, poisoned, to_np = lib
    rng = np.random.default_rng()
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = poisoned(m * n, np.float32)
    kernels.matmul_tiled[(-(-n // 16), -(-m // 16)), (16, 16)](
        to_dev(a.ravel()), to_dev(b.ravel()), c, m, n, k
    )
    err = rel_err(to_np(c), (a.astype(np.float64) @ b).ravel())
    print(f"matmul_tiled {m}x{k}·{k}x{n} rel err {err:.2e}")
    assert err < 1e-5


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (7, 31), (300, 257), (3, 4096)])
def test_softmax_rows(kernels, lib, rows, cols):
    to_dev, poisoned, to_np = lib
    x = (np.random.default_rng().standard_normal((rows, cols)) * 4).astype(np.float32)
    out = poisoned(rows * cols, np.float32)
    kernels.softmax_rows[rows, 128](to_dev(x.ravel()), out)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    err = rel_err(to_np(out), (e / e.sum(axis=1, keepdims=True)).ravel())
    print(f"softmax_rows {rows}x{cols} rel err {err:.2e}")
    assert err < 1e-5


@pytest.mark.parametrize("code", [0, 1, 2, 3])
@pytest.mark.parametrize("n", [1, 257, 100_003])
def test_activate(kernels, lib, code, n):
    to_dev, poisoned, to_np = lib
    rng = np.random.default_rng()
    x = rng.standard_normal(n, dtype=np.float32)
    coeffs = rng.uniform(-1, 1, 4).astype(np.float32)
    out = poisoned(n, np.float32)
    kernels.activate(to_dev(x), to_dev(coeffs), code, out)
    v = sum(float(c) * x.astype(np.float64) ** j for j, c in enumerate(coeffs))
    erf = np.vectorize(math.erf)
    ref = [v, np.maximum(v, 0), np.tanh(v), 0.5 * v * (1 + erf(v / math.sqrt(2)))][code]
    got = to_np(out)
    rel_err(got, ref)  # the NaN-poison check
    # Relative to the polynomial's terms: they can cancel to a v near 0 (so relu and gelu
    # give values far below them), where float32 rounding of the terms is the error.
    terms = sum(abs(float(c)) * np.abs(x.astype(np.float64)) ** j for j, c in enumerate(coeffs))
    err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), np.linalg.norm(terms)))
    print(f"activate code={code} n={n} err / max(|ref|, |terms|) {err:.2e}")
    assert err < 1e-5


@pytest.mark.parametrize("n", [1, 257, 1_000_003])
def test_scan_blocks(kernels, lib, n):
    to_dev, poisoned, to_np = lib
    block = 256
    x = np.random.default_rng().integers(0, 2**32, n, dtype=np.uint32)
    out = poisoned(n, np.uint32)
    kernels.scan_blocks_u32[-(-n // block), block, 4 * block // 32](to_dev(x), out)
    padded = np.zeros(-(-n // block) * block, np.uint64)
    padded[:n] = x
    want = (np.cumsum(padded.reshape(-1, block), axis=1) % 2**32).ravel()[:n]
    np.testing.assert_array_equal(to_np(out).astype(np.uint64), want)


@pytest.mark.parametrize("n", [1, 257, 1_000_003])
def test_reduce_blocks(kernels, lib, n):
    to_dev, poisoned, to_np = lib
    x = np.random.default_rng().standard_normal(n, dtype=np.float32)
    blocks = min(-(-n // 256), 132)
    partial = poisoned(blocks, np.float32)
    # One partial per block: the grid comes from `partial`'s length, one block each.
    kernels.reduce_blocks_f32[blocks, 256](to_dev(x), partial)
    got = to_np(partial).astype(np.float64)
    assert np.isfinite(got).all(), "a block's partial was not written"
    err = abs(got.sum() - x.astype(np.float64).sum()) / np.abs(x).astype(np.float64).sum()
    print(f"reduce_blocks_f32 n={n} blocks={blocks} err/sum|x| {err:.2e}")
    assert err < 1e-6
