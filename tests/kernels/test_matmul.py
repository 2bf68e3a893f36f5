"""The tiled matrix product of the bundled kernels on every array library (`lib`),
against a float64 product, for shapes that are and are not multiples of the tile: a
plain call on shaped arrays (grid from `c`'s shape, dimensions from the shapes), `b` as
a transposed or sliced view (the kernel reads `b` through its strides), and an explicit
`[grid, block]`."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, tol

import pyoxide

RNG = np.random.default_rng()

SHAPES = [(1, 1, 1), (17, 33, 15), (100, 257, 300)]


def check(lib: ArrayLib, c: object, a: np.ndarray, b: np.ndarray) -> None:
    ref = a.astype(np.float64) @ b
    terms = np.abs(a.astype(np.float64)) @ np.abs(b)
    assert rel_err(lib.to_numpy(c), ref, terms) < tol(np.float32, compound=True)


@pytest.mark.parametrize("launch", ["plain", "explicit"])
@pytest.mark.parametrize("b_layout", ["c", "transposed"])
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_matmul_tiled(
    kernels: pyoxide.Module, lib: ArrayLib, m: int, n: int, k: int, b_layout: str, launch: str
) -> None:
    """A plain call (grid from `c`'s shape) or an explicit `[grid, block]`; `b` C-ordered,
    or `w.T` with `w` (n, k): the transposed view goes in zero-copy."""
    a = RNG.standard_normal((m, k), dtype=np.float32)
    if b_layout == "transposed":
        w = RNG.standard_normal((n, k), dtype=np.float32)
        b, b_arg = w.T, lib.asarray(w).T
    else:
        b = RNG.standard_normal((k, n), dtype=np.float32)
        b_arg = lib.asarray(b)
    c = lib.poisoned((m, n), np.float32)
    grid = (-(-n // 16), -(-m // 16))
    matmul = kernels.matmul_tiled if launch == "plain" else kernels.matmul_tiled[grid, (16, 16)]
    matmul(lib.asarray(a), b_arg, c)
    check(lib, c, a, b)


@pytest.mark.parametrize("seed", range(4))
def test_matmul_tiled_random_strided_b(kernels: pyoxide.Module, lib: ArrayLib, seed: int) -> None:
    """Random shapes, and `b` a view with random positive strides into a larger array."""
    rng = np.random.default_rng(seed)
    m, n, k = (int(v) for v in rng.integers(1, 70, 3))
    s1 = int(rng.integers(1, 4))
    s0 = int(rng.integers(n * s1, n * s1 + 5)) if rng.random() < 0.5 else 1
    if s0 == 1:  # column-major-like: rows adjacent, columns k apart (at least)
        s1 = k + int(rng.integers(0, 3))
    size = (k - 1) * s0 + (n - 1) * s1 + 1
    base = rng.standard_normal(size + 3).astype(np.float32)
    offset = int(rng.integers(0, 3))
    b_host = np.lib.stride_tricks.as_strided(base[offset:], (k, n), (4 * s0, 4 * s1))
    a = rng.standard_normal((m, k), dtype=np.float32)
    c = lib.poisoned((m, n), np.float32)
    kernels.matmul_tiled(lib.asarray(a), lib.view(lib.asarray(base), (k, n), (s0, s1), offset), c)
    check(lib, c, a, np.array(b_host))


def test_matmul_tiled_zero_sizes(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    """m = 0 launches nothing; k = 0 gives zeros (an empty sum)."""
    c = lib.poisoned((0, 5), np.float32)
    kernels.matmul_tiled(lib.zeros((0, 3), np.float32), lib.zeros((3, 5), np.float32), c)
    c = lib.poisoned((4, 5), np.float32)
    kernels.matmul_tiled(lib.zeros((4, 0), np.float32), lib.zeros((0, 5), np.float32), c)
    np.testing.assert_array_equal(lib.to_numpy(c), np.zeros((4, 5), np.float32))
