"""The bundled GEMMs (`sgemm`, `gemm_bf16`, and `matmul_tiled`'s launch for
comparison) on every array library, against a float64 NumPy product: odd shapes whose
tails cut every tile, poisoned outputs.

Tolerances: sgemm sums k products in f32 with fused multiply-adds, so its relative
error (in the Frobenius norm) grows like sqrt(k)·2^-24; 1e-5 holds with margin up to
k ≈ 10^5. gemm_bf16 is compared with the float64 product of the bf16-rounded inputs
(so input rounding is not its error): products are exact and sums are f32, so the
same 1e-5 applies. The emulator runs at small sizes (its 32-lane warps and tensor-core
instructions run on the CPU); the GPU runs the issue's shapes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err

import pyoxide

RNG = np.random.default_rng()
TILE = 128

# (72, 136, 24): 16-byte vector loads (k, n multiples of 4) with sgemm's last 16-deep
# k tile half full, so its zero fill is what the sums see. (264, 72, 20): two of
# sgemm_256's row tiles, the second mostly past m, and a half-full last 8-deep k step.
# (40, 200, 64): sgemm_256's unchecked whole steps (seven of its eight), in a column
# tile that ends past n, whose columns past n read n's last four.
EMU_SHAPES = [
    (1, 1, 1),
    (33, 17, 8),
    (130, 129, 40),
    (64, 136, 33),
    (72, 136, 24),
    (264, 72, 20),
    (40, 200, 64),
]
GPU_SHAPES = [(1, 1, 1), (1000, 1000, 1000), (4095, 4097, 129), (300, 200, 8), (256, 384, 512)]


def shapes(lib: ArrayLib) -> list[tuple[int, int, int]]:
    return GPU_SHAPES if lib.on_gpu else EMU_SHAPES


BF16 = np.dtype(ml_dtypes.bfloat16)


def bf16_normal(shape: tuple[int, int]) -> np.ndarray:
    """Standard normal draws rounded to bfloat16 (nearest, ties to even)."""
    return RNG.standard_normal(shape, dtype=np.float32).astype(BF16)


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The float64 product of the (bf16) inputs, exactly as stored."""
    result: np.ndarray = a.astype(np.float64) @ b.astype(np.float64)
    return result


def grid(m: int, n: int) -> tuple[int, int]:
    return (-(-n // TILE), -(-m // TILE))


# The plain call (the hand pick, 128-row tiles) and the other tuned tile heights'
# instances, each launched with its own policy's grid: (⌈n/128⌉, ⌈m/BM⌉). sgemm_256 runs
# its own body (16×8 a thread, k steps of 8).
@pytest.mark.parametrize("name", ["sgemm", "sgemm_64", "sgemm_256"])
def test_sgemm(kernels: pyoxide.Module, lib: ArrayLib, name: str) -> None:
    for m, n, k in shapes(lib):
        a = RNG.standard_normal((m, k), dtype=np.float32)
        b = RNG.standard_normal((k, n), dtype=np.float32)
        c = lib.poisoned((m, n), np.float32)
        kernels[name](lib.asarray(a), lib.asarray(b), c)
        err = rel_err(lib.to_numpy(c), a.astype(np.float64) @ b)
        assert err < 1e-5, f"{name} {m}x{n}x{k}: relative error {err:.2e}"


@pytest.mark.parametrize("name", ["sgemm", "sgemm_64", "sgemm_256"])
def test_sgemm_with_no_rows_or_columns_under_an_explicit_grid(
    kernels: pyoxide.Module, lib: ArrayLib, name: str
) -> None:
    """A plain call of an empty product launches nothing; a grid given by hand runs the
    blocks, which must compute nothing and read nothing (the unchecked whole steps clamp
    to a row and a column that an empty a or b does not have)."""
    for m, n, k in [(0, 8, 64), (8, 0, 64)]:
        a = RNG.standard_normal((m, k), dtype=np.float32)
        b = RNG.standard_normal((k, n), dtype=np.float32)
        c = lib.poisoned((m, n), np.float32)
        kernels[name][(1, 1), 256](lib.asarray(a), lib.asarray(b), c)
        assert lib.to_numpy(c).shape == (m, n)


def test_gemm_bf16(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    for m, n, k in shapes(lib):
        a = bf16_normal((m, k))
        b = bf16_normal((k, n))
        c = lib.poisoned((m, n), np.float32)
        kernels.gemm_bf16[grid(m, n), 256](lib.asarray(a), lib.asarray(b), c)
        want = product(a, b)
        err = rel_err(lib.to_numpy(c), want)
        assert err < 1e-5, f"gemm_bf16 {m}x{n}x{k}: relative error {err:.2e}"


def test_gemm_bf16_vector_path_with_k_tails(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    """k and n multiples of 8 take the cp.async path; k = 40 leaves a partial last
    32-wide tile that the zero-fill must cover, m = 200 a partial row tile."""
    m, n, k = 200, 136, 40
    a = bf16_normal((m, k))
    b = bf16_normal((k, n))
    c = lib.poisoned((m, n), np.float32)
    kernels.gemm_bf16(lib.asarray(a), lib.asarray(b), c)
    want = product(a, b)
    assert rel_err(lib.to_numpy(c), want) < 1e-5


def test_gemm_bf16_with_bf16_output(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    """The bf16 result is the f32 result rounded once (nearest, ties to even): both
    instances share one body, so `gemm_bf16_bf16` must equal `gemm_bf16` rounded to bf16
    bit for bit, and `gemm_bf16` is held to the float64 product. (An elementwise bound
    against the float64 product alone cannot work near zero: the tensor cores' f32 sums
    of k terms of size ~1 are off by ~1e-4 absolute there, many bf16 ulps of a tiny
    result.) A poisoned (NaN) element left unwritten fails the bitwise check."""
    for m, n, k in shapes(lib):
        a = bf16_normal((m, k))
        b = bf16_normal((k, n))
        a_dev, b_dev = lib.asarray(a), lib.asarray(b)
        c16 = lib.poisoned((m, n), BF16)
        c32 = lib.poisoned((m, n), np.float32)
        kernels.gemm_bf16_bf16(a_dev, b_dev, c16)
        kernels.gemm_bf16[grid(m, n), 256](a_dev, b_dev, c32)
        f32 = lib.to_numpy(c32).ravel()
        want = product(a, b).ravel()
        assert rel_err(f32, want) < 1e-5, f"gemm_bf16 {m}x{n}x{k}"
        got = lib.to_numpy(c16).ravel().view(np.uint16)
        mismatched = np.flatnonzero(got != f32.astype(BF16).view(np.uint16))
        assert mismatched.size == 0, (
            f"gemm_bf16_bf16 {m}x{n}x{k}: {mismatched.size} element(s) differ from the f32 "
            f"result rounded to bf16, first at {mismatched[0]}"
        )
