"""Thread-block clusters (tests/fixtures/cluster_kernels, sm_90+) on every array library
(`lib`): on the GPU each block of a 2-, 4- and 2x2-block cluster publishes a value in
its shared memory, the cluster synchronises, and each block reads and writes its
neighbours' through distributed shared memory, checked against NumPy; the emulator,
which runs one block at a time, refuses those kernels by the instruction. The launcher
keeps every grid a multiple of the cluster, on every backend, before launching."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib

import pyoxide
from pyoxide.errors import ArgumentValueError, EmulatorError

#: Facts per block (tests/fixtures/cluster_kernels/src/lib.rs: `neighbours`).
FIELDS = 8
BLOCK = 64  # threads per block: each writes field `t % 8` of its block's row

CLUSTERS = {"neighbours_2": (2, 1), "neighbours_4": (4, 1), "neighbours_2x2": (2, 2)}


def expected(grid: tuple[int, int], cluster: tuple[int, int]) -> np.ndarray:
    """Each block's row of facts, from its coordinates, as the kernel computes them."""
    gx, gy = grid
    cx, cy = cluster
    size = cx * cy
    rows = np.zeros((gx * gy, BLOCK), np.uint32)

    def linear(bx: int, by: int) -> int:
        return bx + by * gx

    def block_of(origin: tuple[int, int], rank: int) -> int:
        return linear(origin[0] + rank % cx, origin[1] + rank // cx)

    for by in range(gy):
        for bx in range(gx):
            x, y = bx % cx, by % cy
            rank = x + y * cx
            origin = (bx - x, by - y)
            nxt, prv = (rank + 1) % size, (rank + size - 1) % size
            cid = bx // cx + (by // cy) * (gx // cx)
            facts = [
                rank,
                size,
                1000 + 7 * block_of(origin, nxt),  # what the next rank published
                1000 + 7 * block_of(origin, prv),  # what the previous rank published
                block_of(origin, prv),  # the previous rank wrote its id into inbox[0]
                block_of(origin, nxt),  # the next rank wrote its id into inbox[1]
                x + 16 * y,
                1 + 2 * cid,  # an explicit cluster; the cluster's linear index
            ]
            rows[linear(bx, by)] = np.tile(facts, BLOCK // FIELDS)
    return rows.ravel()


@pytest.mark.parametrize("name", sorted(CLUSTERS))
@pytest.mark.parametrize("clusters_per_axis", [(1, 1), (3, 2)])
def test_blocks_read_their_neighbours_shared_memory(
    clusters: pyoxide.Module, lib: ArrayLib, name: str, clusters_per_axis: tuple[int, int]
) -> None:
    cx, cy = CLUSTERS[name]
    grid = (cx * clusters_per_axis[0], cy * clusters_per_axis[1])
    out = lib.poisoned(grid[0] * grid[1] * BLOCK, np.uint32)
    if not lib.on_gpu:
        with pytest.raises(EmulatorError) as e:
            clusters[name][grid, BLOCK](out)
        text = str(e.value)
        assert "%cluster_ctarank is not emulated" in text and "sm_90" in text, text
        return
    clusters[name][grid, BLOCK](out)
    np.testing.assert_array_equal(lib.to_numpy(out), expected(grid, (cx, cy)))


@pytest.mark.parametrize("pairs", [1, 5])
def test_the_guides_swap_reads_the_partner_block(
    clusters: pyoxide.Module, lib: ArrayLib, pairs: int
) -> None:
    """docs/guide/clusters.md's `swap`: thread i of block b writes 1000 + (b ^ 1)."""
    out = lib.poisoned(2 * pairs * BLOCK, np.uint32)
    if not lib.on_gpu:
        with pytest.raises(EmulatorError, match="is not emulated"):
            clusters.swap[2 * pairs, BLOCK](out)
        return
    clusters.swap[2 * pairs, BLOCK](out)
    blocks = np.arange(2 * pairs, dtype=np.uint32).repeat(BLOCK)
    np.testing.assert_array_equal(lib.to_numpy(out), 1000 + (blocks ^ 1))


@pytest.mark.parametrize("n", [1, 256, 5 * 256, 3001])
def test_a_plain_call_rounds_the_grid_up_to_the_cluster(
    clusters: pyoxide.Module, lib: ArrayLib, n: int
) -> None:
    """ceil(n / 256) blocks, rounded up to an even count (an odd one would not launch on
    the GPU); the extra block finds no work. The emulator runs this kernel: it has a
    cluster shape but no cluster instruction."""
    for _ in range(2):  # the second call goes wherever a fast launcher would take it
        out = lib.poisoned(n, np.uint32)
        clusters.iota_pairs(out)
        np.testing.assert_array_equal(lib.to_numpy(out), np.arange(n, dtype=np.uint32))


@pytest.mark.parametrize(
    ("name", "grid", "fixed"),
    [
        ("iota_pairs", 3, "(4, 1, 1)"),
        ("neighbours_4", (6, 1), "(8, 1, 1)"),
        ("neighbours_2x2", (2, 3), "(2, 4, 1)"),
        ("neighbours_2x2", (3, 2), "(4, 2, 1)"),
    ],
)
def test_a_grid_that_is_not_a_multiple_of_the_cluster_is_refused_before_launch(
    clusters: pyoxide.Module, lib: ArrayLib, name: str, grid: object, fixed: str
) -> None:
    out = lib.poisoned(1024, np.uint32)
    clusters.iota_pairs(lib.poisoned(512, np.uint32))  # a launch first: fast paths built
    before = lib.to_numpy(out).copy()
    with pytest.raises(ArgumentValueError) as e:
        clusters[name][grid, BLOCK](out)
    err = e.value
    text = str(err)
    assert text.startswith(f"{name}(): parameter 'grid'"), text
    assert "cluster along each axis" in text and "#[cluster_launch(" in text, text
    assert f"pass grid={fixed}" in text, text
    assert str(pickle.loads(pickle.dumps(err))) == text
    # Nothing ran: the output still holds its poison.
    np.testing.assert_array_equal(lib.to_numpy(out), before)
    # The grid it names does launch (on the emulator, iota_pairs only runs).
    if name == "iota_pairs" or lib.on_gpu:
        clusters[name][tuple(int(v) for v in fixed.strip("()").split(",")), BLOCK](out)


def test_the_control_kernel_has_no_cluster(clusters: pyoxide.Module, lib: ArrayLib) -> None:
    """Without #[cluster_launch] an odd grid is fine, and the manifest says no cluster."""
    assert clusters.iota.spec.cluster is None
    assert clusters.iota_pairs.spec.cluster == (2, 1, 1)
    assert clusters.neighbours_2x2.spec.cluster == (2, 2, 1)
    out = lib.poisoned(3 * 256, np.uint32)
    clusters.iota[3, 256](out)
    np.testing.assert_array_equal(lib.to_numpy(out), np.arange(3 * 256, dtype=np.uint32))
