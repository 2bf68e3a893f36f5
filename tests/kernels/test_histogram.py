"""Histograms (AtomicSlice bins) of the bundled kernels on every array library (`lib`):
exact counts against numpy.bincount, with values past the last bin."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib

import pyoxide

RNG = np.random.default_rng()


@pytest.mark.parametrize("name", ["histogram", "histogram_global"])
@pytest.mark.parametrize(("n", "bins"), [(1, 1), (257, 10), (1_000_003, 256), (100_000, 1025)])
def test_histograms(kernels: pyoxide.Module, lib: ArrayLib, name: str, n: int, bins: int) -> None:
    x = RNG.integers(0, bins + 3, n, dtype=np.uint32)  # some past the last bin
    counts = lib.zeros(bins, np.uint32)
    kernels[name][132, 256](lib.asarray(x), counts)
    np.testing.assert_array_equal(lib.to_numpy(counts), np.bincount(x[x < bins], minlength=bins))
