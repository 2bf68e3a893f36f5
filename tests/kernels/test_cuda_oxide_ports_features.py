"""NVIDIA cuda-oxide's compiler_features example (control flow, 64-bit arithmetic and
per-thread loops), ported by renaming the crate and removing host code
(crates/oxide-device/tests/fixtures/cuda_oxide_ports), on every array library (`lib`)
against NumPy. Its shared-memory address kernels are in test_cuda_oxide_ports_async.py."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err

import pyoxide

RNG = np.random.default_rng()
N = 300


def run(
    ports: pyoxide.Module, lib: ArrayLib, name: str, *args: object, dtype: type = np.uint32
) -> np.ndarray:
    out = lib.poisoned(N, dtype)
    ports[name](*args, out)
    return lib.to_numpy(out)


@pytest.mark.parametrize("val, want", [(0, 10), (1, 20), (2, 30), (3, 99), (2**31, 99)])
def test_match_and_option(ports: pyoxide.Module, lib: ArrayLib, val: int, want: int) -> None:
    assert (run(ports, lib, "test_multiway_match_u32", val) == want).all()
    assert (run(ports, lib, "test_option", val) == val).all()


def test_loops(ports: pyoxide.Module, lib: ArrayLib) -> None:
    for name, want in [
        ("test_for_loop_sum", 28),
        ("test_nested_for_loops", 36),
        ("test_for_loop_break", 10),
        ("test_for_loop_continue", 16),
        ("baseline_while_loop", 28),
    ]:
        assert (run(ports, lib, name) == want).all(), name
    data = RNG.integers(0, 1000, 17, dtype=np.uint32)
    assert (run(ports, lib, "test_iter_sum", lib.asarray(data)) == data.sum()).all()
    enum = int((np.arange(17) * data).sum())
    assert (run(ports, lib, "test_enumerate", lib.asarray(data)) == enum).all()
    assert (run(ports, lib, "baseline_binary_match", True) == 100).all()
    assert (run(ports, lib, "baseline_binary_match", False) == 0).all()


def test_u64_arithmetic(ports: pyoxide.Module, lib: ArrayLib) -> None:
    addr, ld, stride = 0x1234_5670, 0x80, 0x400
    want = (
        ((addr >> 4) & 0x3FFF)
        | ((ld >> 4) & 0x3FFF) << 16
        | ((stride >> 4) & 0x3FFF) << 32
        | 1 << 46
    )
    got = run(ports, lib, "test_u64_descriptor_build", addr, ld, stride, dtype=np.uint64)
    assert (got == want).all()
    assert (
        run(ports, lib, "test_u64_shift_by_32", 0xDEAD_BEEF, dtype=np.uint64) == 0xDEAD_BEEF << 32
    ).all()
    assert (run(ports, lib, "test_u64_shift_by_46", dtype=np.uint64) == 1 << 46).all()


def test_per_thread_loops(ports: pyoxide.Module, lib: ArrayLib) -> None:
    x = RNG.uniform(-1.2, 1.2, N).astype(np.float32)
    poly = sum(x.astype(np.float64) ** j for j in range(8))
    assert (
        rel_err(run(ports, lib, "parallel_polynomial_eval", lib.asarray(x), dtype=np.float32), poly)
        < 1e-5
    )

    chunk, n = 7, N * 7 - 5  # the last chunk is short
    data = RNG.integers(0, 100, n, dtype=np.uint32)
    padded = np.concatenate([data, np.zeros(N * chunk - n, np.uint32)]).reshape(N, chunk)
    got = run(ports, lib, "parallel_chunked_sum", lib.asarray(data), chunk)
    np.testing.assert_array_equal(got, padded.sum(1))
    got = run(ports, lib, "parallel_range_count", lib.asarray(data), chunk, 20, 60)
    # The zero padding is outside [20, 60): it counts nothing.
    np.testing.assert_array_equal(got, ((padded >= 20) & (padded < 60)).sum(1))

    a, b = (RNG.standard_normal(n).astype(np.float32) for _ in range(2))
    pa, pb = (
        np.concatenate([v, np.zeros(N * chunk - n, np.float32)]).reshape(N, chunk) for v in (a, b)
    )
    got = run(
        ports,
        lib,
        "parallel_dot_product_chunked",
        lib.asarray(a),
        lib.asarray(b),
        chunk,
        dtype=np.float32,
    )
    assert rel_err(got, (pa.astype(np.float64) * pb).sum(1)) < 1e-5

    cols = 5
    matrix = RNG.integers(0, 1000, N * cols - 2, dtype=np.uint32)
    rows = np.concatenate([matrix, np.zeros(2, np.uint32)]).reshape(N, cols)
    np.testing.assert_array_equal(
        run(ports, lib, "parallel_row_sum", lib.asarray(matrix), cols), rows.sum(1)
    )

    r = 3
    y = RNG.standard_normal(N).astype(np.float32)
    windows = [y[max(0, i - r) : i + r + 1].astype(np.float64) for i in range(N)]
    avg = np.array([w.mean() for w in windows])
    assert (
        rel_err(run(ports, lib, "parallel_local_average", lib.asarray(y), r, dtype=np.float32), avg)
        < 1e-5
    )

    k = 5
    base = np.arange(N, dtype=object) * k
    prods = [
        int(np.prod([int(b) + i for i in range(1, k + 1)], dtype=object)) % 2**64 for b in base
    ]
    np.testing.assert_array_equal(
        run(ports, lib, "parallel_partial_product", k, dtype=np.uint64), np.array(prods, np.uint64)
    )
