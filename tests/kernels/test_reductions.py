"""Whole-array reductions and histograms on every array library, against float64 NumPy:
the one-launch `reduce_sum_f32` (plain call: the launch policy fills the device; it
overwrites `out`, so nothing needs zeroing), `reduce_blocks_f32` (one block per element
of `partial`, refusing any other grid), and the privatised `histogram` with its global
counterpart, over sizes 0, 1, primes, non-multiples of the block and misaligned views."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err

import pyoxide

RNG = np.random.default_rng()
SIZES = [0, 1, 2, 3, 31, 257, 4099, 65_537, 1_000_003]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_reduce_sum(kernels: pyoxide.Module, lib: ArrayLib, n: int, offset: int) -> None:
    x = RNG.standard_normal(n + offset, dtype=np.float32)
    out = lib.poisoned(1, np.float32)  # overwritten: no zeroing first
    kernels.reduce_sum_f32(lib.asarray(x)[offset:], out)
    want = x[offset:].astype(np.float64).sum()
    got = float(lib.to_numpy(out)[0])
    # Relative to Σ|x| (the size of the rounding), which a sum near 0 does not give.
    assert abs(got - want) <= 1e-6 * max(np.abs(x[offset:]).astype(np.float64).sum(), 1.0)


def test_reduce_sum_twice_and_explicit_grids(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    """The device-wide accumulator is left at zero: repeated launches, with any grid,
    each give the whole sum."""
    x = RNG.random(300_007, dtype=np.float32)
    want = x.astype(np.float64).sum()
    xd, out = lib.asarray(x), lib.poisoned(1, np.float32)
    for grid, block in [(None, None), (1, 32), (5, 64), (4000, 256), (None, None)]:
        kernels.reduce_sum_f32.launch(xd, out, grid=grid, block=block)
        assert rel_err(lib.to_numpy(out), [want]) < 1e-6, (grid, block)


@pytest.mark.parametrize("blocks", [1, 3, 64, 333])
@pytest.mark.parametrize("n", [0, 1, 1000, 100_003])
def test_reduce_blocks(kernels: pyoxide.Module, lib: ArrayLib, blocks: int, n: int) -> None:
    x = RNG.standard_normal(n + 1, dtype=np.float32)
    partial = lib.poisoned(blocks, np.float32)
    kernels.reduce_blocks_f32(lib.asarray(x)[1:], partial)  # one block per partial
    got = lib.to_numpy(partial).astype(np.float64)
    assert np.isfinite(got).all()
    assert abs(got.sum() - x[1:].astype(np.float64).sum()) <= 1e-5 * max(np.abs(x).sum(), 1.0)


def test_reduce_blocks_refuses_a_grid_that_leaves_partials(
    kernels: pyoxide.Module, lib: ArrayLib
) -> None:
    x, partial = lib.asarray(np.ones(1000, np.float32)), lib.poisoned(8, np.float32)
    with pytest.raises(pyoxide.errors.ArgumentValueError, match=r"8 block\(s\): one per element"):
        kernels.reduce_blocks_f32[2, 256](x, partial)
    kernels.reduce_blocks_f32[8, 128](x, partial)  # the right grid, another block: fine
    assert lib.to_numpy(partial).sum() == 1000


@pytest.mark.parametrize("n", [0, 1, 5, 257, 4099, 200_003])
@pytest.mark.parametrize("bins", [1, 7, 256, 1024, 1025, 5000])
@pytest.mark.parametrize("name", ["histogram", "histogram_global"])
def test_histograms(kernels: pyoxide.Module, lib: ArrayLib, n: int, bins: int, name: str) -> None:
    # Values past the last bin are ignored; some are there on purpose.
    x = RNG.integers(0, bins + bins // 8 + 1, n + 1, dtype=np.uint32)
    counts = lib.zeros(bins, np.uint32)
    getattr(kernels, name)(lib.asarray(x)[1:], counts)
    want = np.bincount(x[1:][x[1:] < bins], minlength=bins)
    np.testing.assert_array_equal(lib.to_numpy(counts), want)
