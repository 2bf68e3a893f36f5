"""NVIDIA cuda-oxide's warp, reduction and shared-memory examples, ported by renaming
the crate and removing host code (crates/oxide-device/tests/fixtures/cuda_oxide_ports),
on every array library (`lib`) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err

import pyoxide

RNG = np.random.default_rng()
LANES = np.arange(32)


def per_warp(x: np.ndarray, block: int, blocks: int, op: object) -> np.ndarray:
    """op over each warp of each block of `block` threads (the last warp may be partial)."""
    out = []
    for b in range(blocks):
        for w in range(0, block, 32):
            out.append(op(x[b * block + w : b * block + min(w + 32, block)]))  # type: ignore[operator]
    return np.array(out)


@pytest.mark.parametrize(
    "name, block, op",
    [
        ("sums_pow2_tail", 48, np.sum),
        ("sums_odd_tail", 45, np.sum),
        ("maxima_odd_tail", 45, np.max),
        ("warp_sums", 48, np.sum),
        ("warp_sums_raw", 48, np.sum),
    ],
)
def test_partial_warp_reductions(
    ports: pyoxide.Module, lib: ArrayLib, name: str, block: int, op: object
) -> None:
    # Blocks whose last warp is partial: the typed WarpIndex slice gets one value per warp.
    # `reduce_*_partial` masks only the live lanes, so the link step does not mark the
    # kernel as needing whole warps and the launcher takes these blocks.
    assert ports[name].spec.whole_warps is None
    blocks = 7
    x = RNG.standard_normal(block * blocks, np.float32)
    out = lib.poisoned(blocks * 2, np.float32)
    ports[name][blocks, block](lib.asarray(x), out)
    want = per_warp(x.astype(np.float64), block, blocks, op)
    assert rel_err(run(lib, out), want) < 1e-6


def run(lib: ArrayLib, out: object) -> np.ndarray:
    return lib.to_numpy(out)


def test_warp_reduce_examples(ports: pyoxide.Module, lib: ArrayLib) -> None:
    x = RNG.standard_normal(128, np.float32)
    x64 = x.astype(np.float64)
    for name in ("warp_reduce_sum", "warp_reduce_sum_down"):
        out = lib.poisoned(4, np.float32)
        ports[name][2, 64](lib.asarray(x), out)
        assert rel_err(run(lib, out), x64.reshape(4, 32).sum(1)) < 1e-6, name
    out = lib.poisoned(128, np.float32)
    ports.warp_broadcast(lib.asarray(x), out)
    np.testing.assert_array_equal(run(lib, out), np.repeat(x[::32], 32))
    lanes = lib.poisoned(100, np.uint32)
    ports.test_lane_id(lanes)
    np.testing.assert_array_equal(run(lib, lanes), np.arange(100) % 32)
    for name, op in [
        ("warp_reduce_sum_util", np.sum),
        ("warp_reduce_max_util", np.max),
        ("warp_reduce_min_util", np.min),
    ]:
        out = lib.poisoned(128, np.float32)
        ports[name](lib.asarray(x), out)
        want = np.repeat(op(x64.reshape(4, 32), axis=1), 32)  # type: ignore[operator]
        assert rel_err(run(lib, out), want) < 1e-6, name
    d = RNG.standard_normal(128)
    out = lib.poisoned(128, np.float64)
    ports.warp_reduce_sum_f64_util(lib.asarray(d), out)
    assert rel_err(run(lib, out), np.repeat(d.reshape(4, 32).sum(1), 32)) < 1e-14


def test_shuffle_64(ports: pyoxide.Module, lib: ArrayLib) -> None:
    out = lib.poisoned(32, np.uint64)
    ports.shuffle_u64_broadcast[1, 32](out)
    np.testing.assert_array_equal(run(lib, out), np.full(32, (5 << 32) | (0xABCD_0000 + 5)))
    f = lib.poisoned(32, np.float64)
    ports.shuffle_f64_butterfly_sum[1, 32](f)
    np.testing.assert_array_equal(run(lib, f), np.full(32, 528.0))
    down, up = lib.poisoned(32, np.uint64), lib.poisoned(32, np.uint64)
    ports.shuffle_u64_neighbor[1, 32](down, up)
    hi = np.uint64(0xDEAD_0000_0000_0000)
    # Past the warp's edge a lane keeps its own value.
    np.testing.assert_array_equal(run(lib, down), hi | np.minimum(LANES + 1, 31).astype(np.uint64))
    np.testing.assert_array_equal(run(lib, up), hi | np.maximum(LANES - 1, 0).astype(np.uint64))
    half = lib.poisoned(32, np.uint64)
    ports.shuffle_u64_halfwarp[1, 32](half)
    want = np.uint64(0xF00D_0000_0000_0000) | np.where(LANES < 16, 0, 16).astype(np.uint64)
    np.testing.assert_array_equal(run(lib, half), want)


def test_redux(ports: pyoxide.Module, lib: ArrayLib) -> None:
    signed, unsigned = lib.poisoned(2, np.int32), lib.poisoned(2, np.uint32)
    ports.redux_minmax_signedness[1, 32](signed, unsigned)
    np.testing.assert_array_equal(run(lib, signed), [-16, 15])
    np.testing.assert_array_equal(run(lib, unsigned), [0, 0xFFFF_FFFF])
    bits = lib.poisoned(3, np.uint32)
    ports.redux_bitwise[1, 32](bits)
    np.testing.assert_array_equal(run(lib, bits), [0, 0xFFFF_FFFF, 0xFFFF_FFFF])
    sums = lib.poisoned(4, np.uint32)
    ports.redux_lane_sum[1, 128](sums)
    np.testing.assert_array_equal(run(lib, sums), np.full(4, 496))
    data = RNG.integers(0, 1 << 20, 128).astype(np.uint32)
    sums = lib.poisoned(4, np.uint32)
    ports.redux_data_sum[2, 64](lib.asarray(data), sums)
    np.testing.assert_array_equal(run(lib, sums), data.reshape(4, 32).sum(1))


def test_elect_leader(ports: pyoxide.Module, lib: ArrayLib) -> None:
    leader, elected = lib.poisoned(1, np.uint32), lib.poisoned(32, np.uint32)
    ports.elect_full_warp[1, 32](leader, elected)
    np.testing.assert_array_equal(run(lib, leader), [0])
    np.testing.assert_array_equal(run(lib, elected), (LANES == 0).astype(np.uint32))
    out = lib.poisoned(1, np.uint32)
    ports.elect_subset[1, 32](out)
    np.testing.assert_array_equal(run(lib, out), [16])


def test_lanemasks_and_compaction(ports: pyoxide.Module, lib: ArrayLib) -> None:
    lane = np.arange(64) % 32
    lt = ((1 << lane) - 1).astype(np.uint64)
    eq = (1 << lane).astype(np.uint64)
    full = np.uint64(0xFFFF_FFFF)
    out = lib.poisoned(64, np.uint32)
    ports.lanemask_lt_values(out)
    np.testing.assert_array_equal(run(lib, out), lt)
    out = lib.poisoned(5 * 64, np.uint32)
    ports.all_lanemasks(out)
    want = np.stack([lt, lt | eq, eq, ~lt & full, ~(lt | eq) & full], axis=1)
    np.testing.assert_array_equal(run(lib, out), want.ravel())
    keep = RNG.integers(0, 2, 64).astype(np.uint32)
    ranks = lib.poisoned(64, np.uint32)
    ports.warp_compact_rank(lib.asarray(keep), ranks)
    kept = keep.reshape(2, 32) != 0
    want_rank = np.concatenate([np.cumsum(k) - k for k in kept])
    np.testing.assert_array_equal(run(lib, ranks), want_rank)


@pytest.mark.parametrize("blocks", [1, 3])
def test_sharedmem(ports: pyoxide.Module, lib: ArrayLib, blocks: int) -> None:
    n = 256 * blocks
    a, b = RNG.standard_normal(n, np.float32), RNG.standard_normal(n, np.float32)
    # Each block reads its neighbour's element from the block's shared tile.
    neighbour = (np.arange(n) // 256) * 256 + (np.arange(n) + 1) % 256
    out = lib.poisoned(n, np.float32)
    ports.shared_test[blocks, 256](lib.asarray(a), out)
    np.testing.assert_array_equal(run(lib, out), a[neighbour])
    out = lib.poisoned(n, np.float32)
    ports.shared_dual[blocks, 256](lib.asarray(a), lib.asarray(b), out)
    np.testing.assert_array_equal(run(lib, out), a[neighbour] + b[neighbour])


@pytest.mark.parametrize("n", [256, 200, 1])
def test_threads_that_return_before_a_barrier_count_as_arrived(
    ports: pyoxide.Module, lib: ArrayLib, n: int
) -> None:
    # PTX's bar.sync counts exited threads; the emulator must not call this a hang.
    out = lib.poisoned(512, np.uint32)
    ports.exit_before_barrier[2, 256](n, out)
    t = np.arange(512) % 256
    want = ((t + 1) % n) * 10 + np.arange(512) // 256
    got = run(lib, out)
    np.testing.assert_array_equal(got[t < n], want[t < n])
    assert (got[t >= n] == 0xDEADBEEF).all(), "threads that returned wrote nothing"


def test_printf_formats_as_cuda_does(
    ports: pyoxide.Module, lib: ArrayLib, capfd: pytest.CaptureFixture[str]
) -> None:
    returned = lib.poisoned(1, np.int32)
    ports.print_formats[1, 32](3.14159, 1234567.8, 42, returned)
    # CUDA's printf returns the number of arguments.
    np.testing.assert_array_equal(run(lib, returned), [8])
    printed = capfd.readouterr().out
    assert "parity: 3.14159 1.234568e+06 3.14 +42 0xff 10    3.142|42    |\n" in printed
