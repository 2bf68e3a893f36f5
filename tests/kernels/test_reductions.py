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


def test_reduce_sum_concurrent_launches_keep_their_sums(
    kernels: pyoxide.Module, lib: ArrayLib
) -> None:
    """Launches running at the same time (two host threads on the emulator, two streams
    on the GPU) each get their own sum: the kernel's accumulator is per launch."""
    n = (1 << 22) if lib.on_gpu else 200_003
    xs = [RNG.random(n + k, dtype=np.float32) + 4 * k for k in range(2)]  # sums far apart
    wants = [x.astype(np.float64).sum() for x in xs]
    dev = [lib.asarray(x) for x in xs]
    outs = [[lib.poisoned(1, np.float32) for _ in range(8)] for _ in xs]
    if lib.on_gpu:
        import cupy

        cupy.cuda.Device().synchronize()  # the inputs are ready before either stream runs
        streams = [cupy.cuda.Stream(non_blocking=True) for _ in xs]
        for r in range(8):
            for k in range(2):
                kernels.reduce_sum_f32.launch(dev[k], outs[k][r], stream=streams[k].ptr)
        for s in streams:
            s.synchronize()
    else:
        import threading

        def launches(k: int) -> None:
            for out in outs[k]:
                kernels.reduce_sum_f32(dev[k], out)

        threads = [threading.Thread(target=launches, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for k in range(2):
        got = np.concatenate([lib.to_numpy(o) for o in outs[k]])
        assert rel_err(got, np.full(8, wants[k])) < 1e-5, (k, got, wants[k])


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
