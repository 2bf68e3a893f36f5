"""Issue 23's four kernels as a user writes them from docs/guide/kernels.md (row
RMS-norm, GELU(x + bias[col]), per-row argmax, dot; and column sums;
crates/oxide-device/tests/fixtures/natural) on every array library (`lib`), against
float64 NumPy: odd shapes, rows that fit the register cache and rows that do not,
misaligned views; and the launch contracts that make their entries fast (whole warps,
a 1-D grid)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, tol

import pyoxide

RNG = np.random.default_rng()
TOL = tol(np.float32, compound=True)

# (rows, cols): one element; a warp's worth; not multiples of 4 (unaligned rows: head
# and tail elements); a row of 4096 (vector path, cached); 70000 (past the cache of a
# 1024-thread block: read twice).
SHAPES = [(1, 1), (3, 32), (7, 31), (300, 257), (3, 4096), (2, 70000)]


def rms64(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * w


def gelu64(v: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf)
    return 0.5 * v * (1.0 + erf(v / math.sqrt(2.0)))


@pytest.mark.parametrize(("rows", "cols"), SHAPES)
def test_rms_norm(natural: pyoxide.Module, lib: ArrayLib, rows: int, cols: int) -> None:
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    w = RNG.standard_normal(cols).astype(np.float32)
    out = lib.poisoned((rows, cols), np.float32)
    natural.rms_norm(lib.asarray(x), lib.asarray(w), 1e-5, out)
    assert rel_err(lib.to_numpy(out), rms64(x, w, 1e-5)) <= TOL


@pytest.mark.parametrize(("rows", "cols"), SHAPES[:5])
def test_bias_gelu(natural: pyoxide.Module, lib: ArrayLib, rows: int, cols: int) -> None:
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    b = RNG.standard_normal(cols).astype(np.float32)
    out = lib.poisoned((rows, cols), np.float32)
    natural.bias_gelu(lib.asarray(x), lib.asarray(b), out)
    want = gelu64(x.astype(np.float64) + b)
    assert rel_err(lib.to_numpy(out), want, np.abs(want) + 1.0) <= TOL


@pytest.mark.parametrize(("rows", "cols"), SHAPES)
def test_argmax_rows(natural: pyoxide.Module, lib: ArrayLib, rows: int, cols: int) -> None:
    # Few distinct values: ties, which np.argmax breaks toward the first.
    x = RNG.integers(-3, 4, (rows, cols)).astype(np.float32)
    out = lib.poisoned(rows, np.uint32)
    natural.argmax_rows(lib.asarray(x), out)
    np.testing.assert_array_equal(lib.to_numpy(out), np.argmax(x, axis=1))


def test_argmax_rows_ranks_nan_first(natural: pyoxide.Module, lib: ArrayLib) -> None:
    x = np.zeros((3, 100), np.float32)
    x[0, [5, 70]] = np.nan
    x[1, 99] = np.inf
    x[2, :] = -np.inf
    out = lib.poisoned(3, np.uint32)
    natural.argmax_rows(lib.asarray(x), out)
    np.testing.assert_array_equal(lib.to_numpy(out), np.argmax(x, axis=1))


@pytest.mark.parametrize("n", [0, 1, 5, 1000, 100_003])
def test_dot(natural: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = lib.zeros(1, np.float32)
    natural.dot(lib.asarray(x), lib.asarray(y), out)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    scale = np.abs(x64 * y64).sum()
    assert rel_err(lib.to_numpy(out), [x64 @ y64], [max(scale, 1.0)]) <= tol(np.float32)


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (300, 257), (64, 4096), (1000, 33)])
def test_column_sums(natural: pyoxide.Module, lib: ArrayLib, rows: int, cols: int) -> None:
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    out = lib.poisoned(cols, np.float32)
    natural.column_sums(lib.asarray(x), out)
    x64 = x.astype(np.float64)
    scale = np.abs(x64).sum(axis=0)
    assert rel_err(lib.to_numpy(out), x64.sum(axis=0), scale) <= tol(np.float32)


def test_misaligned_views(natural: pyoxide.Module, lib: ArrayLib) -> None:
    """Views one element into their buffers: rows and the broadcast vector at other
    offsets from a 16-byte boundary than the output's (read one element at a time)."""
    rows, cols = 5, 203
    base = RNG.standard_normal(rows * cols + 1).astype(np.float32)
    x = base[1:].reshape(rows, cols)
    wbase = RNG.standard_normal(cols + 3).astype(np.float32)
    out = lib.poisoned((rows, cols), np.float32)
    natural.rms_norm(lib.asarray(base)[1:].reshape(rows, cols), lib.asarray(wbase)[3:], 0.5, out)
    assert rel_err(lib.to_numpy(out), rms64(x, wbase[3:], 0.5)) <= TOL
    xd, yd = lib.asarray(base), lib.asarray(base[::-1].copy())
    out1 = lib.zeros(1, np.float32)
    natural.dot(xd[1:], yd[:-1], out1)
    want = base[1:].astype(np.float64) @ base[::-1][:-1].astype(np.float64)
    assert rel_err(lib.to_numpy(out1), [want], [np.abs(base).sum() ** 2]) <= tol(np.float32)
    sums = lib.poisoned(cols, np.float32)
    natural.column_sums(lib.asarray(base)[1:].reshape(rows, cols), sums)
    assert rel_err(lib.to_numpy(sums), x.astype(np.float64).sum(axis=0), np.abs(x).sum(0)) <= TOL


def test_block_reductions_refuse_partial_warps(natural: pyoxide.Module, lib: ArrayLib) -> None:
    """argmax and dot reduce over the block with full-warp shuffles: a block of 100 (or
    48) is refused before launch, on every backend; the outputs are untouched."""
    x = lib.asarray(np.ones((4, 64), np.float32))
    out = lib.poisoned(4, np.uint32)
    with pytest.raises(pyoxide.ArgumentValueError, match="whole number of warps") as e:
        natural.argmax_rows[4, 100](x, out)
    assert "96 or 128 threads" in str(e.value) and "shfl.sync" in str(e.value)
    ones, total = lib.asarray(np.ones(8, np.float32)), lib.zeros(1, np.float32)
    with pytest.raises(pyoxide.ArgumentValueError, match="whole number of warps"):
        natural.dot.launch(ones, ones, total, grid=1, block=48)
    assert (lib.to_numpy(out) == np.uint32(0xDEADBEEF)).all() and lib.to_numpy(total)[0] == 0
    natural.argmax_rows[4, 96](x, out)
    np.testing.assert_array_equal(lib.to_numpy(out), np.zeros(4))


def test_a_2d_grid_of_the_right_count_is_refused(natural: pyoxide.Module, lib: ArrayLib) -> None:
    """A one-block-per-row kernel's row is its blockIdx.x: a (2, 2) grid for 4 rows
    would repeat rows 0 and 1 with no error, so it is refused before launch."""
    x = lib.asarray(RNG.standard_normal((4, 64)).astype(np.float32))
    out = lib.poisoned(4, np.uint32)
    with pytest.raises(pyoxide.ArgumentValueError, match="1-D grid") as e:
        natural.argmax_rows[(2, 2), 64](x, out)
    assert e.value.param == "grid" and "grid=4" in str(e.value)
    assert (lib.to_numpy(out) == np.uint32(0xDEADBEEF)).all()
