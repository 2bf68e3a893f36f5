"""Every bundled kernel on the CPU emulator: the same launches as
tests/gpu/test_bundled_kernels.py, on NumPy arrays, against float64 NumPy. Fresh random
inputs, NaN-poisoned outputs, sizes that are and are not multiples of the block size
(fixed ones and a random one per test). The kernels are built from this checkout with
its emulator library (`<crate>.emu.so`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.bundled import emu_kernels_manifest

import pyoxide

RNG = np.random.default_rng()


def sizes(*fixed: int, high: int = 5000) -> list[int]:
    return [*fixed, int(RNG.integers(2, high))]


@pytest.fixture(scope="module")
def kernels() -> pyoxide.Module:
    return pyoxide.load(emu_kernels_manifest())


def poisoned(n: int, dt: type) -> np.ndarray:
    return np.full(n, np.nan if np.dtype(dt).kind == "f" else 0xDEADBEEF, dt)


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64)
    assert np.isfinite(got).all(), "an output element was not written (NaN poison left)"
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))


def scaled_err(got: np.ndarray, ref: np.ndarray, v: np.ndarray) -> float:
    """‖got − ref‖ over the larger of ‖ref‖ and ‖v‖, the size of the terms the kernel
    adds up (their float32 roundings are what may cancel)."""
    rel_err(got, ref)  # the NaN-poison check
    got = np.asarray(got, dtype=np.float64)
    scale = max(np.linalg.norm(ref), np.linalg.norm(v), 1e-300)
    return float(np.linalg.norm(got - ref) / scale)


def test_the_manifest_names_an_emulator(kernels: pyoxide.Module) -> None:
    assert kernels.manifest.emulator is not None
    assert kernels.manifest.emulator[0].is_file()




@pytest.mark.parametrize("n", sizes(1, 257, 100_003))
def test_saxpy(kernels: pyoxide.Module, n: int) -> None:
    alpha = float(np.float32(RNG.uniform(-4, 4)))
    x, y = RNG.standard_normal(n, dtype=np.float32), RNG.standard_normal(n, dtype=np.float32)
    out = poisoned(n, np.float32)
    kernels.saxpy(alpha, x, y, out)
    ref = alpha * x.astype(np.float64) + y
    # Against the terms' scale: a*x + y rounds twice (Rust does not fuse), so where the two
    # terms cancel the error is a fraction of |a*x| + |y|, not of the tiny sum (n = 1 fails
    # a plain relative test about once in 200 draws).
    assert scaled_err(out, ref, np.abs(alpha * x.astype(np.float64)) + np.abs(y)) < 1e-6


@pytest.mark.parametrize(("dtype", "tol"), [(np.float32, 1e-6), (np.float64, 1e-15)])
@pytest.mark.parametrize("n", sizes(257, 1 << 16))
def test_generic_scale_dispatches_on_dtype(
    kernels: pyoxide.Module, dtype: type, tol: float, n: int
) -> None:
    factor = float(dtype(RNG.uniform(-3, 3)))
    x = RNG.standard_normal(n).astype(dtype)
    out = poisoned(n, dtype)
    kernels.scale(factor, x, out)
    assert out.dtype == dtype
    assert rel_err(out, factor * x.astype(np.float64)) < tol


@pytest.mark.parametrize("n", sizes(1, 255, 257, 1_000_003))
@pytest.mark.parametrize("block", [32, 256, 1024])
def test_reduce_sum(kernels: pyoxide.Module, n: int, block: int) -> None:
    x = RNG.standard_normal(n, dtype=np.float32)
    out = np.zeros(1, np.float32)
    grid = min(-(-n // block), 264)  # grid-stride: fewer blocks than elements is fine
    kernels.reduce_sum_f32[grid, block](x, out)
    err = abs(float(out[0]) - x.astype(np.float64).sum()) / np.abs(x).astype(np.float64).sum()
    assert err < 1e-6


@pytest.mark.parametrize("n", sizes(1, 257, 100_003))
@pytest.mark.parametrize("block", [64, 256])
def test_reduce_blocks(kernels: pyoxide.Module, n: int, block: int) -> None:
    x = RNG.standard_normal(n, dtype=np.float32)
    blocks = min(-(-n // block), 132)
    partial = poisoned(blocks, np.float32)
    kernels.reduce_blocks_f32[blocks, block](x, partial)
    got = partial.astype(np.float64)
    assert np.isfinite(got).all(), "a block's partial was not written"
    err = abs(got.sum() - x.astype(np.float64).sum()) / np.abs(x).astype(np.float64).sum()
    assert err < 1e-6


@pytest.mark.parametrize("name", ["histogram", "histogram_shared"])
@pytest.mark.parametrize(("n", "bins"), [(1, 1), (257, 10), (1_000_003, 256), (100_000, 1025)])
def test_histograms(kernels: pyoxide.Module, name: str, n: int, bins: int) -> None:
    x = RNG.integers(0, bins + 3, n, dtype=np.uint32)  # some past the last bin
    counts = np.zeros(bins, np.uint32)
    getattr(kernels, name)[132, 256](x, counts)
    np.testing.assert_array_equal(counts, np.bincount(x[x < bins], minlength=bins))


@pytest.mark.parametrize(("m", "n", "k"), [(1, 1, 1), (17, 33, 15), (100, 257, 300)])
def test_matmul_tiled(kernels: pyoxide.Module, m: int, n: int, k: int) -> None:
    a = RNG.standard_normal((m, k), dtype=np.float32)
    b = RNG.standard_normal((k, n), dtype=np.float32)
    c = poisoned(m * n, np.float32)
    kernels.matmul_tiled[(-(-n // 16), -(-m // 16)), (16, 16)](a.ravel(), b.ravel(), c, m, n, k)
    assert rel_err(c, (a.astype(np.float64) @ b).ravel()) < 1e-5


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (7, 31), (300, 257), (3, 4096)])
@pytest.mark.parametrize("block", [32, 128])
def test_softmax_rows(kernels: pyoxide.Module, rows: int, cols: int, block: int) -> None:
    x = (RNG.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = poisoned(rows * cols, np.float32)
    kernels.softmax_rows[rows, block](x.ravel(), out)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert rel_err(out, (e / e.sum(axis=1, keepdims=True)).ravel()) < 1e-5


@pytest.mark.parametrize("code", [0, 1, 2, 3])
@pytest.mark.parametrize("n", sizes(1, 257, 10_007))
def test_activate(kernels: pyoxide.Module, code: int, n: int) -> None:
    x = RNG.standard_normal(n, dtype=np.float32)
    coeffs = RNG.uniform(-1, 1, 4).astype(np.float32)
    out = poisoned(n, np.float32)
    kernels.activate(x, coeffs, code, out)
    v = sum(float(c) * x.astype(np.float64) ** j for j, c in enumerate(coeffs))
    # The polynomial's terms, not v: they can cancel to a v near 0, where relu's and
    # gelu's output differ from float64 by the terms' rounding, not by v's size.
    terms = sum(abs(float(c)) * np.abs(x.astype(np.float64)) ** j for j, c in enumerate(coeffs))
    erf = np.vectorize(math.erf)
    ref = [v, np.maximum(v, 0), np.tanh(v), 0.5 * v * (1 + erf(v / math.sqrt(2)))][code]
    # Relative to the activation's input: relu and gelu cancel to values far below it,
    # where float32 error is a fraction of |v|, not of the tiny result (n = 1 flaked).
    assert scaled_err(out, ref, terms) < 1e-5


def test_activate_unknown_code_writes_nan(kernels: pyoxide.Module) -> None:
    out = np.zeros(40, np.float32)
    kernels.activate(np.ones(40, np.float32), np.ones(2, np.float32), 9, out)
    assert np.isnan(out).all()


@pytest.mark.parametrize("n", sizes(1, 257, 100_003))
@pytest.mark.parametrize("block", [32, 256])
def test_scan_blocks(kernels: pyoxide.Module, n: int, block: int) -> None:
    x = RNG.integers(0, 2**32, n, dtype=np.uint32)
    out = poisoned(n, np.uint32)
    kernels.scan_blocks_u32[-(-n // block), block, 4 * block // 32](x, out)
    padded = np.zeros(-(-n // block) * block, np.uint64)
    padded[:n] = x
    want = (np.cumsum(padded.reshape(-1, block), axis=1) % 2**32).ravel()[:n]
    np.testing.assert_array_equal(out.astype(np.uint64), want)


def test_scan_with_a_block_not_a_multiple_of_32_traps_with_its_message(
    kernels: pyoxide.Module,
) -> None:
    x = np.ones(48, np.uint32)
    with pytest.raises(pyoxide.EmulatorError) as info:
        kernels.scan_blocks_u32[1, 48, 8](x, np.zeros(48, np.uint32))
    e = info.value
    assert e.kernel == "scan_blocks_u32" and e.block == (0, 0, 0) and e.thread is not None
    assert "trapped in block (0, 0, 0)" in str(e)
