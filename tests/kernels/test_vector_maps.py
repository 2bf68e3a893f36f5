"""The 128-bit elementwise kernels (vecadd, saxpy, scale_f32, scale_f64: `DisjointSlice::
map`) on every array library, against float64 NumPy: sizes 0, 1, primes and
non-multiples of the block and of the vector, and views that start off a 16-byte
boundary (`x[k:]`: element-aligned), with the arrays in phase and out of phase, through
plain calls (the launch policy's grid) and explicit grids smaller than the work."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err

import pyoxide

RNG = np.random.default_rng()
SIZES = [0, 1, 2, 3, 5, 13, 255, 257, 1021, 4099, 65_537, 1_000_003]


def view(lib: ArrayLib, host: np.ndarray, offset: int) -> tuple[Any, np.ndarray]:
    """`host` in `lib`, as a view starting `offset` elements into a larger array."""
    base = np.concatenate([np.zeros(offset, host.dtype), host])
    return lib.asarray(base)[offset:], host


def check_poison_kept(lib: ArrayLib, full: Any, offset: int) -> None:
    """The elements before a view's start were not written."""
    before = lib.to_numpy(full)[:offset]
    assert np.isnan(before).all(), "a kernel wrote before the start of its output view"


@pytest.mark.parametrize("n", SIZES)
def test_saxpy(kernels: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    x, y = RNG.standard_normal(n, dtype=np.float32), RNG.standard_normal(n, dtype=np.float32)
    out = lib.poisoned(n, np.float32)
    kernels.saxpy(1.5, lib.asarray(x), lib.asarray(y), out)
    got = lib.to_numpy(out)
    assert got.shape == (n,)
    if n:  # 1.5·x rounds in float32; where y cancels it, the rounding is a fraction of the terms
        ax = 1.5 * x.astype(np.float64)
        assert rel_err(got, ax + y, np.abs(ax) + np.abs(y)) < 1e-6


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scale(kernels: pyoxide.Module, lib: ArrayLib, n: int, dtype: Any) -> None:
    x = RNG.standard_normal(n).astype(dtype)
    out = lib.poisoned(n, dtype)
    kernels.scale(-0.75, lib.asarray(x), out)
    if n:
        assert rel_err(lib.to_numpy(out), -0.75 * x.astype(np.float64)) < 1e-6


@pytest.mark.parametrize("n", [0, 1, 7, 4099, 100_003])
def test_vecadd_zero_length_and_primes(kernels: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    a, b = RNG.standard_normal(n, dtype=np.float32), RNG.standard_normal(n, dtype=np.float32)
    c = lib.poisoned(n, np.float32)
    kernels.vecadd(lib.asarray(a), lib.asarray(b), c)
    if n:
        assert rel_err(lib.to_numpy(c), a.astype(np.float64) + b) < 1e-6


# (x, y, out) offsets in elements: all in phase (the vector path after a peeled head),
# and out of phase (one element at a time).
OFFSETS = [(1, 1, 1), (3, 3, 3), (2, 2, 2), (1, 0, 0), (0, 3, 1), (1, 2, 3)]


@pytest.mark.parametrize("offsets", OFFSETS, ids=lambda o: "-".join(map(str, o)))
@pytest.mark.parametrize("n", [1, 6, 4097, 100_003])
def test_misaligned_views(
    kernels: pyoxide.Module, lib: ArrayLib, offsets: tuple[int, int, int], n: int
) -> None:
    ox, oy, oo = offsets
    x, xh = view(lib, RNG.standard_normal(n, dtype=np.float32), ox)
    y, yh = view(lib, RNG.standard_normal(n, dtype=np.float32), oy)
    full = lib.poisoned(n + oo, np.float32)
    out = full[oo:]
    kernels.saxpy(2.0, x, y, out)
    assert rel_err(lib.to_numpy(out), 2.0 * xh.astype(np.float64) + yh) < 1e-6
    check_poison_kept(lib, full, oo)
    full64 = lib.poisoned(n + oo, np.float64)
    x64, x64h = view(lib, RNG.standard_normal(n), ox)
    kernels.scale(3.0, x64, full64[oo:])
    assert rel_err(lib.to_numpy(full64[oo:]), 3.0 * x64h) < 1e-12
    check_poison_kept(lib, full64, oo)


@pytest.mark.parametrize("grid, block", [(1, 32), (3, 64), (7, 128), (1000, 256)])
def test_any_grid_covers_the_output(
    kernels: pyoxide.Module, lib: ArrayLib, grid: int, block: int
) -> None:
    """The maps grid-stride: a grid far smaller (or larger) than the work still writes
    every element exactly once."""
    n = 50_021
    a, b = RNG.standard_normal(n, dtype=np.float32), RNG.standard_normal(n, dtype=np.float32)
    c = lib.poisoned(n + 1, np.float32)[1:]
    kernels.vecadd[grid, block](lib.asarray(a), lib.asarray(b), c)
    assert rel_err(lib.to_numpy(c), a.astype(np.float64) + b) < 1e-6


def test_a_short_input_is_refused_by_the_kernel(kernels: pyoxide.Module) -> None:
    """An input shorter than the output: the map checks once, before its loop, and
    panics, which the emulator reports naming the kernel. (On a GPU the same check
    traps, which ends the CUDA context, so this runs on NumPy arrays only.)"""
    out = np.full(10, np.nan, np.float32)
    with pytest.raises(pyoxide.errors.EmulatorError, match="shorter than the output"):
        kernels.vecadd(np.ones(10, np.float32), np.ones(9, np.float32), out)
