"""The device library's kernels in kernels_rs, run from their PTX with plain
`cupy.RawModule` against float64 NumPy: fresh random inputs, NaN-poisoned outputs,
sizes that are and are not multiples of the block size.

Launch ABI (what pyoxide's launcher will do): a slice, `DisjointSlice` or `AtomicSlice`
is the array's pointer then its length as `np.uint64`; scalars are NumPy scalars of
the exact Rust type."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.probes import requires_gpu
from helpers.rawmodule import bundled_module, rel_err

pytestmark = [pytest.mark.gpu, requires_gpu("PTX is loaded with CuPy on a CUDA device")]

SIZES = [1, 255, 257, 1_000_003, 1 << 24]


def _fn(name: str):
    return bundled_module().get_function(name)


def _u64(n: int) -> np.uint64:
    return np.uint64(n)


@pytest.mark.parametrize("block", [256, 1024])
@pytest.mark.parametrize("n", SIZES)
def test_reduce_sum_f32(n: int, block: int):
    import cupy as cp

    rng = np.random.default_rng()
    x = rng.standard_normal(n, dtype=np.float32)
    dx = cp.asarray(x)
    out = cp.zeros(1, dtype=cp.float32)  # an accumulator: zeroed, not poisoned
    # Fewer blocks than elements/block: the grid-stride loop covers the rest.
    grid = min(max((n + block - 1) // block, 1), 512)
    _fn("reduce_sum_f32")((grid,), (block,), (dx, _u64(n), out, _u64(1)))
    got = float(cp.asnumpy(out)[0])
    ref = float(x.astype(np.float64).sum())
    # Relative to Σ|x|: a sum of mixed signs can be near zero.
    err = abs(got - ref) / float(np.abs(x.astype(np.float64)).sum())
    print(f"reduce_sum_f32 n={n} block={block} err/sum|x| {err:.2e}")
    assert err < 1e-6


@pytest.mark.parametrize("block", [256, 1024])
@pytest.mark.parametrize("n", SIZES)
def test_reduce_blocks_f32(n: int, block: int):
    import cupy as cp

    rng = np.random.default_rng()
    x = rng.standard_normal(n, dtype=np.float32)
    grid = min(max((n + block - 1) // block, 1), 512)
    partial = cp.full(grid, cp.nan, dtype=cp.float32)  # every block must write its own
    _fn("reduce_blocks_f32")((grid,), (block,), (cp.asarray(x), _u64(n), partial, _u64(grid)))
    got = cp.asnumpy(partial).astype(np.float64)
    assert np.isfinite(got).all(), "a block did not write its partial"
    err = abs(got.sum() - x.astype(np.float64).sum()) / float(np.abs(x.astype(np.float64)).sum())
    print(f"reduce_blocks_f32 n={n} block={block} err/sum|x| {err:.2e}")
    assert err < 1e-6


@pytest.mark.parametrize("bins", [1, 10, 256, 1000])
@pytest.mark.parametrize("n", SIZES)
def test_histogram_global(n: int, bins: int):
    import cupy as cp

    rng = np.random.default_rng()
    # Some values fall past the last bin: those are ignored.
    x = rng.integers(0, bins + 3, size=n, dtype=np.uint32)
    counts = cp.zeros(bins, dtype=cp.uint32)
    grid = min((n + 255) // 256, 1024)
    _fn("histogram_global")((grid,), (256,), (cp.asarray(x), _u64(n), counts, _u64(bins)))
    ref = np.bincount(x[x < bins], minlength=bins)
    print(f"histogram_global n={n} bins={bins} total {int(cp.asnumpy(counts).sum())}")
    np.testing.assert_array_equal(cp.asnumpy(counts), ref)


@pytest.mark.parametrize("bins", [1, 10, 256, 1024, 1025])
@pytest.mark.parametrize("n", SIZES)
def test_histogram(n: int, bins: int):
    import cupy as cp

    rng = np.random.default_rng()
    x = rng.integers(0, bins + 3, size=n, dtype=np.uint32)
    counts = cp.zeros(bins, dtype=cp.uint32)
    grid = min((n + 255) // 256, 1024)
    _fn("histogram")((grid,), (256,), (cp.asarray(x), _u64(n), counts, _u64(bins)))
    ref = np.bincount(x[x < bins], minlength=bins)
    print(f"histogram n={n} bins={bins} total {int(cp.asnumpy(counts).sum())}")
    np.testing.assert_array_equal(cp.asnumpy(counts), ref)


@pytest.mark.parametrize(
    "m,n,k", [(1, 1, 1), (16, 16, 16), (17, 33, 15), (100, 257, 300), (512, 384, 1024)]
)
def test_matmul_tiled(m: int, n: int, k: int):
    import cupy as cp

    rng = np.random.default_rng()
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = cp.full((m, n), cp.nan, dtype=cp.float32)
    grid = ((n + 15) // 16, (m + 15) // 16)
    # Shaped arrays at the ABI: pointer, extents, strides in elements.
    args = (
        *_array2(cp.asarray(a), (k, 1)),
        *_array2(cp.asarray(b), (n, 1)),
        *_array2(c, (n, 1)),
    )
    _fn("matmul_tiled")(grid, (16, 16), args)
    err = rel_err(cp.asnumpy(c), a.astype(np.float64) @ b.astype(np.float64))
    print(f"matmul_tiled {m}x{k}·{k}x{n} rel err {err:.2e}")
    assert err < 1e-5


@pytest.mark.parametrize("block", [128, 256])
@pytest.mark.parametrize("rows,cols", [(1, 1), (7, 31), (300, 257), (64, 1000), (3, 4096)])
def test_softmax_rows(rows: int, cols: int, block: int):
    import cupy as cp

    rng = np.random.default_rng()
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = cp.full((rows, cols), cp.nan, dtype=cp.float32)
    # One block per row: the grid size is the row count.
    args = (*_array2(cp.asarray(x), (cols, 1)), *_array2(out, (cols, 1)))
    _fn("softmax_rows")((rows,), (block,), args)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    err = rel_err(cp.asnumpy(out), e / e.sum(axis=1, keepdims=True))
    print(f"softmax_rows {rows}x{cols} block={block} rel err {err:.2e}")
    assert err < 1e-5


def _array2(arr: object, strides: tuple[int, int]) -> tuple[object, ...]:
    """A 2-D array's words at the launch ABI: the array (its pointer), extents, strides."""
    rows, cols = arr.shape  # type: ignore[attr-defined]
    return (arr, _u64(rows), _u64(cols), _u64(strides[0]), _u64(strides[1]))


_ERF = np.vectorize(math.erf)
ACTIVATIONS = {
    0: lambda v: v,
    1: lambda v: np.maximum(v, 0.0),
    2: np.tanh,
    3: lambda v: 0.5 * v * (1.0 + _ERF(v / math.sqrt(2.0))),
}


@pytest.mark.parametrize("code", sorted(ACTIVATIONS))
@pytest.mark.parametrize("n", [1, 255, 257, 100_003])
def test_activate(n: int, code: int):
    import cupy as cp

    rng = np.random.default_rng()
    x = rng.standard_normal(n, dtype=np.float32)
    coeffs = rng.uniform(-1, 1, size=4).astype(np.float32)
    out = cp.full(n, cp.nan, dtype=cp.float32)
    grid = ((n + 255) // 256,)
    _fn("activate")(
        grid,
        (256,),
        (cp.asarray(x), _u64(n), cp.asarray(coeffs), _u64(4), np.uint32(code), out, _u64(n)),
    )
    x64 = x.astype(np.float64)
    poly = sum(float(c) * x64**j for j, c in enumerate(coeffs))
    got, ref = cp.asnumpy(out), ACTIVATIONS[code](poly)
    rel_err(got, ref)  # the NaN-poison check
    # Relative to the activation's input: relu and gelu cancel to values far below it.
    err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), np.linalg.norm(poly)))
    print(f"activate code={code} n={n} err / max(|ref|, |v|) {err:.2e}")
    assert err < 1e-5


def test_activate_unknown_code_writes_nan():
    import cupy as cp

    x = cp.ones(300, dtype=cp.float32)
    coeffs = cp.ones(2, dtype=cp.float32)
    out = cp.zeros(300, dtype=cp.float32)
    _fn("activate")((2,), (256,), (x, _u64(300), coeffs, _u64(2), np.uint32(9), out, _u64(300)))
    assert bool(cp.isnan(out).all())


@pytest.mark.parametrize("block", [32, 256, 1024])
@pytest.mark.parametrize("n", [1, 255, 257, 1_000_003])
def test_scan_blocks_u32(n: int, block: int):
    import cupy as cp

    rng = np.random.default_rng()
    x = rng.integers(0, 1 << 20, size=n, dtype=np.uint32)
    out = cp.full(n, 0xDEADBEEF, dtype=cp.uint32)
    grid = ((n + block - 1) // block,)
    _fn("scan_blocks_u32")(
        grid, (block,), (cp.asarray(x), _u64(n), out, _u64(n)), shared_mem=4 * (block // 32)
    )
    padded = np.zeros(grid[0] * block, dtype=np.uint64)
    padded[:n] = x
    ref = np.cumsum(padded.reshape(-1, block), axis=1).reshape(-1)[:n] % (1 << 32)
    got = cp.asnumpy(out)
    print(f"scan_blocks_u32 n={n} block={block} mismatches {int((got != ref).sum())}")
    np.testing.assert_array_equal(got, ref.astype(np.uint32))
