"""NVIDIA cuda-oxide's examples with `DisjointSlice<T, Runtime2DIndex>` outputs (a row
width bound by the host), ported by renaming the crate and removing host code
(crates/oxide-device/tests/fixtures/cuda_oxide_ports), on every array library (`lib`)
against NumPy. From Python such a slice is a 2-D C-contiguous array (rows, row width)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err

import pyoxide
from pyoxide.errors import PyoxideError

RNG = np.random.default_rng()


def grid_2d(rows: int, cols: int, block: tuple[int, int] = (32, 4)) -> tuple:
    return ((-(-cols // block[0]), -(-rows // block[1])), block)


@pytest.mark.parametrize("rows, width", [(7, 37), (1, 1), (33, 64)])
def test_every_thread_reads_the_bound_row_width(
    ports: pyoxide.Module, lib: ArrayLib, rows: int, width: int
) -> None:
    for name in ("write_width_readback", "byvalue_helper_width"):
        out = lib.poisoned((rows, width), np.uint32)
        ports[name][grid_2d(rows, width)](out)
        np.testing.assert_array_equal(lib.to_numpy(out), np.full((rows, width), width), name)


def test_witnesses_resolve_against_the_slice_they_open(
    ports: pyoxide.Module, lib: ArrayLib
) -> None:
    # Witnesses from a 5-wide and a 100-wide slice, picked per thread, both land on
    # b's own (row, col): no thread writes another's cell.
    rows = 6
    a, b = lib.poisoned((rows, 5), np.uint32), lib.poisoned((rows, 100), np.uint32)
    poison = lib.to_numpy(b)[0, 0]
    ports.two_width_selection[grid_2d(rows, 100)](a, b)
    got = lib.to_numpy(b)
    r, c = np.indices((rows, 5))
    np.testing.assert_array_equal(got[:, :5], r * 100 + c)
    assert (got[:, 5:] == poison).all()  # only threads with a cell in both slices write


@pytest.mark.parametrize("m, n, k", [(64, 48, 32), (50, 70, 19)])
def test_gemm_examples(ports: pyoxide.Module, lib: ArrayLib, m: int, n: int, k: int) -> None:
    a, b = RNG.standard_normal((m, k), np.float32), RNG.standard_normal((k, n), np.float32)
    c0 = RNG.standard_normal((m, n), np.float32)
    alpha, beta = 1.5, 0.5
    want = alpha * (a.astype(np.float64) @ b) + beta * c0
    for name, block in [("sgemm_naive", (32, 4)), ("sgemm_tiled", (16, 16))]:
        c = lib.asarray(c0)
        A, B = lib.asarray(a.ravel()), lib.asarray(b.ravel())  # &[f32]: flat
        ports[name][grid_2d(m, n, block)](m, n, k, alpha, A, B, beta, c)
        assert rel_err(lib.to_numpy(c), want) < 1e-5, name


def test_row_width_slice_from_raw_parts(ports: pyoxide.Module, lib: ArrayLib) -> None:
    rows, width = 24, 37
    x = RNG.standard_normal(rows * width).astype(np.float32)
    data = lib.asarray(x)
    ports.scale_row_width_slice[grid_2d(rows, width)](data, x.size, width)
    np.testing.assert_array_equal(lib.to_numpy(data), 2 * x)
    ports.increment_from_raw_parts[-(-x.size // 128), 128](data, x.size)
    np.testing.assert_array_equal(lib.to_numpy(data), 2 * x + 1)


def test_a_flat_array_is_refused_naming_the_row_width(ports: pyoxide.Module, lib: ArrayLib) -> None:
    out = lib.poisoned(37, np.uint32)
    with pytest.raises(PyoxideError) as e:
        ports.write_width_readback[(2, 1), (32, 1)](out)
    text = str(e.value)
    assert "write_width_readback" in text and "out" in text and "2" in text, text
