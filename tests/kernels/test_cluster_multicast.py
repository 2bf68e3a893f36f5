"""One TMA multicast load, two destinations (tests/fixtures/cluster_tma_kernels, sm_90a):
in each 2-block cluster rank 0 issues a single `cp.async.bulk.tensor … .multicast::cluster`
and the tile lands in both blocks' shared memory; both blocks' copies are checked against
NumPy on the GPU. The emulator refuses the kernel by its first cluster instruction."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib

import pyoxide
from pyoxide.errors import EmulatorError

ROWS, COLS, BLOCK = 8, 32, 256  # the fixture's box (TILE_ROWS x TILE_COLS f32)


def _map_bytes(lib: ArrayLib, src: object, clusters: int) -> np.ndarray:
    """The tensor map of `src` (clusters * 8 rows of 32 f32) as 128 bytes, 64-aligned."""
    if not lib.on_gpu:
        raw = np.zeros(128 + 64, np.uint8)
        at = -raw.ctypes.data % 64
        return raw[at : at + 128]
    from pyoxide.backends.cupy._tensormap import encode_2d

    ptr = src.__cuda_array_interface__["data"][0]  # type: ignore[attr-defined]
    no_swizzle = 0
    return np.frombuffer(
        encode_2d("multicast_rows", ptr, COLS, clusters * ROWS, COLS, ROWS, no_swizzle, 4),
        np.uint8,
    )


@pytest.mark.parametrize("clusters", [1, 5])
def test_one_multicast_fills_both_blocks_of_the_cluster(
    cluster_tma: pyoxide.Module, lib: ArrayLib, clusters: int
) -> None:
    rng = np.random.default_rng()
    host = rng.standard_normal((clusters * ROWS, COLS)).astype(np.float32)
    src = lib.asarray(host.ravel())
    maps = lib.asarray(_map_bytes(lib, src, clusters))  # device allocations: 256-aligned
    out = lib.poisoned(clusters * 2 * BLOCK, np.float32)
    if not lib.on_gpu:
        with pytest.raises(EmulatorError) as e:
            cluster_tma.multicast_rows[clusters * 2, BLOCK](src, maps, out)
        assert "%nclusterid.x is not emulated" in str(e.value), str(e.value)
        return
    cluster_tma.multicast_rows[clusters * 2, BLOCK](src, maps, out)
    got = lib.to_numpy(out).reshape(clusters, 2, BLOCK)
    tiles = host.reshape(clusters, ROWS * COLS)
    assert (got != -1.0).all(), "a block's tile never arrived (its barrier timed out)"
    np.testing.assert_array_equal(got[:, 0], tiles)  # rank 0, which issued the copy
    np.testing.assert_array_equal(got[:, 1], tiles)  # rank 1, which issued nothing
