"""Shaped array arguments on every backend (`lib`): bad shapes refused before launch
with the kernel, parameter and dimension named (one table, the same on the emulator and
the GPU), and the strided copies against NumPy over random shapes and strides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, tol
from helpers.probes import requires_gpu

import pyoxide
from pyoxide.errors import ShapeError

RNG = np.random.default_rng()
BIG = 2**31  # one past the largest extent (thread coordinates are 32-bit)


def strided(lib: ArrayLib, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
    """A float32 view of `shape` with `strides` (elements, any sign) into fresh memory."""
    if 0 in shape:
        return lib.view(lib.zeros(1, np.float32), shape, strides)
    low = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0)
    base = lib.asarray(RNG.standard_normal(high - low + 1).astype(np.float32))
    return lib.view(base, shape, strides, -low)


def arr(lib: ArrayLib, *shape: int) -> Any:
    return lib.asarray(RNG.standard_normal(shape).astype(np.float32))


_OUTPUTS: list[Any] = []  # the poisoned outputs `out` made, to check they stay unwritten


def out(lib: ArrayLib, *shape: int) -> Any:
    o = lib.poisoned(shape, np.float32)
    _OUTPUTS.append(o)
    return o


Build = Callable[[ArrayLib], tuple[Any, ...]]

# (id, kernel, arguments, parameter, dimension). Matmul: a[m, k] (C), b[k, n] (any
# strides), c[m, n] (C). copy_2d / copy_3d: x and out with any strides. Row kernels:
# x[rows, cols], out[rows, cols] (C), weight[cols], bias[cols].
BAD: list[tuple[str, str, Build, str, str]] = [
    # mismatched dimensions
    ("k_mismatch", "matmul_tiled", lambda L: (arr(L, 4, 5), arr(L, 6, 3), out(L, 4, 3)), "b", "k"),
    ("m_mismatch", "matmul_tiled", lambda L: (arr(L, 4, 5), arr(L, 5, 3), out(L, 5, 3)), "c", "m"),
    ("n_mismatch", "matmul_tiled", lambda L: (arr(L, 4, 5), arr(L, 5, 3), out(L, 4, 4)), "c", "n"),
    ("c_swapped", "matmul_tiled", lambda L: (arr(L, 4, 5), arr(L, 5, 3), out(L, 3, 4)), "c", "m"),
    ("bT_wrong", "matmul_tiled",
     lambda L: (arr(L, 4, 5), strided(L, (3, 5), (1, 3)), out(L, 4, 3)), "b", "k"),
    ("copy_m", "copy_2d", lambda L: (arr(L, 4, 3), out(L, 5, 3)), "out", "m"),
    ("copy_n", "copy_2d", lambda L: (arr(L, 4, 3), out(L, 4, 2)), "out", "n"),
    ("copy3_c", "copy_3d", lambda L: (arr(L, 2, 3, 4), out(L, 2, 3, 5)), "out", "c"),
    ("copy3_a", "copy_3d", lambda L: (arr(L, 2, 3, 4), out(L, 3, 3, 4)), "out", "a"),
    ("copy3_b", "copy_3d", lambda L: (arr(L, 2, 3, 4), out(L, 2, 4, 4)), "out", "b"),
    ("softmax_cols", "softmax_rows", lambda L: (arr(L, 4, 5), out(L, 4, 6)), "out", "cols"),
    ("softmax_rows", "softmax_rows", lambda L: (arr(L, 4, 5), out(L, 5, 5)), "out", "rows"),
    ("layernorm_weight", "layernorm_rows",
     lambda L: (arr(L, 4, 5), arr(L, 6), arr(L, 5), out(L, 4, 5), 1e-5), "weight", "cols"),
    ("layernorm_bias", "layernorm_rows",
     lambda L: (arr(L, 4, 5), arr(L, 5), arr(L, 4), out(L, 4, 5), 1e-5), "bias", "cols"),
    # 0-size dimensions that disagree
    ("k_zero", "matmul_tiled", lambda L: (arr(L, 4, 0), arr(L, 1, 3), out(L, 4, 3)), "b", "k"),
    ("m_zero", "matmul_tiled", lambda L: (arr(L, 0, 5), arr(L, 5, 3), out(L, 1, 3)), "c", "m"),
    ("copy_zero", "copy_2d", lambda L: (arr(L, 0, 3), out(L, 3, 0)), "out", "m"),
    ("copy3_zero", "copy_3d", lambda L: (arr(L, 2, 0, 3), out(L, 2, 3, 0)), "out", "b"),
    # wrong rank
    ("a_1d", "matmul_tiled", lambda L: (arr(L, 20), arr(L, 5, 3), out(L, 4, 3)), "a", "rank"),
    ("a_3d", "matmul_tiled", lambda L: (arr(L, 1, 4, 5), arr(L, 5, 3), out(L, 4, 3)), "a", "rank"),
    ("a_0d", "matmul_tiled",
     lambda L: (strided(L, (), ()), arr(L, 5, 3), out(L, 4, 3)), "a", "rank"),
    ("b_1d", "matmul_tiled", lambda L: (arr(L, 4, 5), arr(L, 15), out(L, 4, 3)), "b", "rank"),
    ("c_1d", "matmul_tiled", lambda L: (arr(L, 4, 5), arr(L, 5, 3), out(L, 12)), "c", "rank"),
    ("c_3d", "matmul_tiled", lambda L: (arr(L, 4, 5), arr(L, 5, 3), out(L, 4, 3, 1)), "c", "rank"),
    ("copy_x_1d", "copy_2d", lambda L: (arr(L, 12), out(L, 4, 3)), "x", "rank"),
    ("copy3_x_2d", "copy_3d", lambda L: (arr(L, 4, 3), out(L, 2, 3, 4)), "x", "rank"),
    ("copy3_out_4d", "copy_3d", lambda L: (arr(L, 2, 3, 4), out(L, 2, 3, 4, 1)), "out", "rank"),
    ("softmax_out_1d", "softmax_rows", lambda L: (arr(L, 4, 5), out(L, 20)), "out", "rank"),
    ("layernorm_weight_2d", "layernorm_rows",
     lambda L: (arr(L, 4, 5), arr(L, 1, 5), arr(L, 5), out(L, 4, 5), 1e-5), "weight", "rank"),
    # negative strides
    ("a_rev_rows", "matmul_tiled",
     lambda L: (strided(L, (4, 5), (-5, 1)), arr(L, 5, 3), out(L, 4, 3)), "a", "m"),
    ("a_rev_cols", "matmul_tiled",
     lambda L: (strided(L, (4, 5), (5, -1)), arr(L, 5, 3), out(L, 4, 3)), "a", "k"),
    ("b_rev_rows", "matmul_tiled",
     lambda L: (arr(L, 4, 5), strided(L, (5, 3), (-3, 1)), out(L, 4, 3)), "b", "k"),
    ("b_rev_cols", "matmul_tiled",
     lambda L: (arr(L, 4, 5), strided(L, (5, 3), (3, -1)), out(L, 4, 3)), "b", "n"),
    ("c_rev_rows", "matmul_tiled",
     lambda L: (arr(L, 4, 5), arr(L, 5, 3), strided(L, (4, 3), (-3, 1))), "c", "m"),
    ("copy_out_rev", "copy_2d", lambda L: (arr(L, 4, 3), strided(L, (4, 3), (3, -1))), "out", "n"),
    # overlapping output views
    ("copy_out_bcast_rows", "copy_2d",
     lambda L: (arr(L, 4, 3), strided(L, (4, 3), (0, 1))), "out", "m"),
    ("copy_out_bcast_cols", "copy_2d",
     lambda L: (arr(L, 4, 3), strided(L, (4, 3), (3, 0))), "out", "m"),
    ("copy_out_rows_overlap", "copy_2d",
     lambda L: (arr(L, 4, 3), strided(L, (4, 3), (2, 1))), "out", "m"),
    ("copy_out_diagonal", "copy_2d",
     lambda L: (arr(L, 4, 3), strided(L, (4, 3), (1, 1))), "out", "m"),
    ("copy3_out_overlap", "copy_3d",
     lambda L: (arr(L, 2, 3, 4), strided(L, (2, 3, 4), (4, 4, 1))), "out", "a"),
    # F-order (or other strides) where C order is required
    ("a_fortran", "matmul_tiled",
     lambda L: (strided(L, (4, 5), (1, 4)), arr(L, 5, 3), out(L, 4, 3)), "a", "k"),
    ("c_fortran", "matmul_tiled",
     lambda L: (arr(L, 4, 5), arr(L, 5, 3), strided(L, (4, 3), (1, 4))), "c", "n"),
    ("a_cols_sliced", "matmul_tiled",
     lambda L: (strided(L, (4, 5), (10, 2)), arr(L, 5, 3), out(L, 4, 3)), "a", "k"),
    ("a_rows_padded", "matmul_tiled",
     lambda L: (strided(L, (4, 5), (8, 1)), arr(L, 5, 3), out(L, 4, 3)), "a", "m"),
    ("c_broadcast", "matmul_tiled",
     lambda L: (arr(L, 4, 5), arr(L, 5, 3), strided(L, (4, 3), (0, 1))), "c", "m"),
    ("softmax_x_fortran", "softmax_rows",
     lambda L: (strided(L, (4, 5), (1, 4)), out(L, 4, 5)), "x", "cols"),
    ("layernorm_weight_strided", "layernorm_rows",
     lambda L: (arr(L, 4, 5), strided(L, (5,), (2,)), arr(L, 5), out(L, 4, 5), 1e-5),
     "weight", "cols"),
    # dimensions over the index type's range
    ("a_huge_m", "matmul_tiled",
     lambda L: (strided(L, (BIG, 5), (0, 1)), arr(L, 5, 3), out(L, 4, 3)), "a", "m"),
    ("b_huge_n", "matmul_tiled",
     lambda L: (arr(L, 4, 5), strided(L, (5, BIG), (0, 0)), out(L, 4, 3)), "b", "n"),
    ("c_huge_m", "matmul_tiled",
     lambda L: (arr(L, 4, 5), arr(L, 5, 3), strided(L, (BIG + 7, 3), (0, 1))), "c", "m"),
    ("copy_x_huge", "copy_2d",
     lambda L: (strided(L, (1, 2 * BIG), (0, 0)), out(L, 1, 3)), "x", "n"),
    ("copy_out_huge", "copy_2d",
     lambda L: (arr(L, 1, 1), strided(L, (BIG, 1), (0, 0))), "out", "m"),
    ("copy3_x_huge", "copy_3d",
     lambda L: (strided(L, (BIG, 1, 1), (0, 0, 0)), out(L, 1, 1, 1)), "x", "a"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("kernel", "build", "param", "dim"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_bad_shapes_are_refused_before_launch(
    kernels: pyoxide.Module, lib: ArrayLib, kernel: str, build: Build, param: str, dim: str
) -> None:
    _OUTPUTS.clear()
    args = build(lib)
    with pytest.raises(ShapeError) as info:
        getattr(kernels, kernel)(*args)
    e = info.value
    assert e.kernel.startswith(kernel) and e.param == param and e.dim == dim, str(e)
    assert f"{kernel}" in str(e) and f"'{param}'" in str(e) and f"'{dim}'" in str(e)
    for o in _OUTPUTS:  # nothing was launched: every poisoned output is as it was
        assert np.isnan(lib.to_numpy(o)).all()


def test_the_bad_shape_table_is_large() -> None:
    assert len(BAD) >= 40


def test_a_contract_error_reads_as_the_issue_says(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    with pytest.raises(ShapeError) as info:
        kernels.matmul_tiled(arr(lib, 128, 300), arr(lib, 301, 64), out(lib, 128, 64))
    assert str(info.value).startswith(
        "matmul_tiled(): dimension 'k' is 300 in 'a' (shape (128, 300)) but 301 in 'b' "
        "(shape (301, 64)). Fix: "
    )


def _random_view(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """Random non-overlapping strides for `shape` (axes in a random order, each padded a
    little) and a random offset, in elements."""
    order = rng.permutation(len(shape))
    strides = [0] * len(shape)
    step = int(rng.integers(1, 3))
    for axis in order:
        strides[axis] = step
        step = step * shape[axis] + int(rng.integers(0, 3))
    return tuple(strides), int(rng.integers(0, 3))


def _host_view(
    base: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...], offset: int
) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(base[offset:], shape, tuple(4 * s for s in strides))


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_copy_random_strides(kernels: pyoxide.Module, lib: ArrayLib, rank: int, seed: int) -> None:
    """copy_2d / copy_3d between random strided views, in and out, against NumPy."""
    rng = np.random.default_rng(seed)
    shape = tuple(
        int(n) for n in rng.integers(0 if seed == 0 else 1, 40 if rank == 2 else 12, rank)
    )
    xs, xo = _random_view(rng, shape)
    os_, oo = _random_view(rng, shape)
    size = lambda s, o: o + sum((n - 1) * t for n, t in zip(shape, s, strict=True)) + 1  # noqa: E731
    xbase = rng.standard_normal(max(size(xs, xo), 1)).astype(np.float32)
    obase = np.full(max(size(os_, oo), 1), np.nan, np.float32)
    x_dev, o_dev = lib.asarray(xbase), lib.asarray(obase)
    kernel = kernels.copy_2d if rank == 2 else kernels.copy_3d
    kernel(lib.view(x_dev, shape, xs, xo), lib.view(o_dev, shape, os_, oo))
    got = _host_view(lib.to_numpy(o_dev), shape, os_, oo)
    np.testing.assert_array_equal(got, _host_view(xbase, shape, xs, xo))


def test_copy_fortran_order_and_transposed_views(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    x = RNG.standard_normal((37, 53)).astype(np.float32)
    o = lib.poisoned((53, 37), np.float32)
    kernels.copy_2d(lib.asarray(x).T, o)  # a transposed (F-order) input
    np.testing.assert_array_equal(lib.to_numpy(o), x.T)
    o = lib.poisoned((37, 53), np.float32)
    kernels.copy_2d(lib.asarray(x), o.T.T)
    np.testing.assert_array_equal(lib.to_numpy(o), x)


def test_softmax_rows_plain_call_on_a_matrix(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    """The issue's bar: `softmax_rows(x, out)` on a (4096, 1000) array, no grid, no ravel
    (fewer rows on the emulator, which runs every thread on the CPU)."""
    rows = 4096 if lib.on_gpu else 64
    x = (RNG.standard_normal((rows, 1000)) * 4).astype(np.float32)
    o = lib.poisoned(x.shape, np.float32)
    kernels.softmax_rows(lib.asarray(x), o)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert rel_err(lib.to_numpy(o), e / e.sum(axis=1, keepdims=True)) < tol(
        np.float32, compound=True
    )


def test_strides_of_single_element_dimensions_do_not_matter(
    kernels: pyoxide.Module, lib: ArrayLib
) -> None:
    """A dimension of extent 1 never steps its stride: any stride is accepted there
    (even negative, as `x[::-1]` of a one-row array gives), and C order still holds."""
    base = RNG.standard_normal(8).astype(np.float32)
    # (PyTorch has no negative strides: its tensors stay tensors, so the call stays
    # on one library's stream.)
    x = lib.view(lib.asarray(base), (1, 3), (5 if lib.name == "torch" else -5, 1), 2)
    o = lib.poisoned((1, 3), np.float32)
    kernels.copy_2d(x, o)
    np.testing.assert_array_equal(lib.to_numpy(o), base[2:5].reshape(1, 3))
    o = lib.poisoned((1, 3), np.float32)
    kernels.softmax_rows(lib.view(lib.asarray(base), (1, 3), (7, 1), 2), o)
    e = np.exp(base[2:5].astype(np.float64) - base[2:5].max())
    assert rel_err(lib.to_numpy(o), (e / e.sum()).reshape(1, 3)) < tol(np.float32, compound=True)


@pytest.mark.gpu
@requires_gpu("reads JAX arrays on the GPU")
def test_jax_arrays_go_in_as_they_are(kernels: pyoxide.Module, monkeypatch: Any) -> None:
    """JAX arrays (immutable: inputs only) are read zero-copy as shaped arrays; the
    outputs are CuPy arrays."""
    import cupy

    # JAX would otherwise take most of the GPU's memory at its first array.
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jnp = pytest.importorskip("jax.numpy")
    a = RNG.standard_normal((70, 33)).astype(np.float32)
    b = RNG.standard_normal((33, 45)).astype(np.float32)
    c = cupy.full((70, 45), np.nan, np.float32)
    kernels.matmul_tiled(jnp.asarray(a), jnp.asarray(b), c)
    assert rel_err(cupy.asnumpy(c), a.astype(np.float64) @ b) < 1e-5
    x = (RNG.standard_normal((64, 1000)) * 4).astype(np.float32)
    o = cupy.full(x.shape, np.nan, np.float32)
    kernels.softmax_rows(jnp.asarray(x), o)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert rel_err(cupy.asnumpy(o), e / e.sum(axis=1, keepdims=True)) < tol(
        np.float32, compound=True
    )
