"""Row-wise kernels (one block per row) of the bundled kernels on every array library
(`lib`), against float64 NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, tol

import pyoxide

RNG = np.random.default_rng()


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (7, 31), (300, 257), (3, 4096)])
@pytest.mark.parametrize("block", [32, 128])
def test_softmax_rows(
    kernels: pyoxide.Module, lib: ArrayLib, rows: int, cols: int, block: int
) -> None:
    x = (RNG.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = lib.poisoned(rows * cols, np.float32)
    kernels.softmax_rows[rows, block](lib.asarray(x.ravel()), out)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref = (e / e.sum(axis=1, keepdims=True)).ravel()
    assert rel_err(lib.to_numpy(out), ref) < tol(np.float32, compound=True)
