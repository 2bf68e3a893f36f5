"""Reductions and scans of the bundled kernels on every array library (`lib`), against
float64 NumPy, with explicit grids: grid-stride sums, one partial per block, per-block
inclusive scans."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, sizes, tol

import pyoxide

RNG = np.random.default_rng()


@pytest.mark.parametrize("n", sizes(1, 255, 257, 1_000_003))
@pytest.mark.parametrize("block", [32, 256, 1024])
def test_reduce_sum(kernels: pyoxide.Module, lib: ArrayLib, n: int, block: int) -> None:
    x = RNG.standard_normal(n, dtype=np.float32)
    out = lib.zeros(1, np.float32)
    grid = min(-(-n // block), 264)  # grid-stride: fewer blocks than elements is fine
    kernels.reduce_sum_f32[grid, block](lib.asarray(x), out)
    x64 = x.astype(np.float64)
    assert rel_err(lib.to_numpy(out), [x64.sum()], [np.abs(x64).sum()]) < tol(np.float32)


@pytest.mark.parametrize("n", sizes(1, 257, 100_003))
@pytest.mark.parametrize("block", [64, 256])
def test_reduce_blocks(kernels: pyoxide.Module, lib: ArrayLib, n: int, block: int) -> None:
    x = RNG.standard_normal(n, dtype=np.float32)
    blocks = min(-(-n // block), 132)
    partial = lib.poisoned(blocks, np.float32)
    kernels.reduce_blocks_f32[blocks, block](lib.asarray(x), partial)
    got = lib.to_numpy(partial).astype(np.float64)
    assert np.isfinite(got).all(), "a block's partial was not written"
    x64 = x.astype(np.float64)
    assert rel_err([got.sum()], [x64.sum()], [np.abs(x64).sum()]) < tol(np.float32)


@pytest.mark.parametrize("n", sizes(1, 257, 100_003))
@pytest.mark.parametrize("block", [32, 256])
def test_scan_blocks(kernels: pyoxide.Module, lib: ArrayLib, n: int, block: int) -> None:
    x = RNG.integers(0, 2**32, n, dtype=np.uint32)
    out = lib.poisoned(n, np.uint32)
    kernels.scan_blocks_u32[-(-n // block), block, 4 * block // 32](lib.asarray(x), out)
    padded = np.zeros(-(-n // block) * block, np.uint64)
    padded[:n] = x
    want = (np.cumsum(padded.reshape(-1, block), axis=1) % 2**32).ravel()[:n]
    np.testing.assert_array_equal(lib.to_numpy(out).astype(np.uint64), want)
