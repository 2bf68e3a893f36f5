"""Elementwise bundled kernels on every array library (`lib`), against float64 NumPy:
fresh random inputs, poisoned outputs, sizes that are and are not multiples of the block."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err

import pyoxide

RNG = np.random.default_rng()


@pytest.mark.parametrize("n", [1, 255, 256, 257, 4099, 1_000_003])
def test_vecadd(kernels: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    a, b = RNG.standard_normal(n, dtype=np.float32), RNG.standard_normal(n, dtype=np.float32)
    c = lib.poisoned(n, np.float32)
    kernels.vecadd(lib.asarray(a), lib.asarray(b), c)
    assert rel_err(lib.to_numpy(c), a.astype(np.float64) + b) < 1e-6
