"""The tiled matrix product of the bundled kernels on every array library (`lib`),
against a float64 product, for shapes that are and are not multiples of the tile."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, tol

import pyoxide

RNG = np.random.default_rng()


@pytest.mark.parametrize(("m", "n", "k"), [(1, 1, 1), (17, 33, 15), (100, 257, 300)])
def test_matmul_tiled(kernels: pyoxide.Module, lib: ArrayLib, m: int, n: int, k: int) -> None:
    a = RNG.standard_normal((m, k), dtype=np.float32)
    b = RNG.standard_normal((k, n), dtype=np.float32)
    c = lib.poisoned(m * n, np.float32)
    grid = (-(-n // 16), -(-m // 16))
    kernels.matmul_tiled[grid, (16, 16)](lib.asarray(a.ravel()), lib.asarray(b.ravel()), c,
                                         m, n, k)  # fmt: skip
    ref = a.astype(np.float64) @ b
    terms = np.abs(a.astype(np.float64)) @ np.abs(b)
    assert rel_err(lib.to_numpy(c), ref.ravel(), terms.ravel()) < tol(np.float32, compound=True)
