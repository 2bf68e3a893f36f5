"""A cluster kernel's PTX (tests/fixtures/cluster_kernels) loaded with plain
`cupy.RawModule`, no pyoxide runtime: its `.reqnctapercluster` alone makes a plain
`cuLaunchKernel` launch it in clusters (no launch attribute needed), and the driver
refuses a grid that is not a multiple of the cluster."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.bundled import cluster_kernels_manifest
from helpers.probes import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu("PTX is loaded with CuPy on a CUDA device")]

BLOCK = 64


def _module():
    import cupy as cp

    ptx = cluster_kernels_manifest().parent / "cluster_kernels.sm_90.ptx"
    text = ptx.read_text()
    assert ".reqnctapercluster 2, 1, 1" in text and ".explicitcluster" in text
    return cp.RawModule(path=str(ptx))


def test_a_plain_launch_runs_in_clusters() -> None:
    import cupy as cp

    blocks = 6
    out = cp.full(blocks * BLOCK, 0xFFFFFFFF, dtype=cp.uint32)
    kernel = _module().get_function("neighbours_2")
    kernel((blocks,), (BLOCK,), (out, np.uint64(out.size)))
    rows = cp.asnumpy(out).reshape(blocks, BLOCK)
    b = np.arange(blocks)
    np.testing.assert_array_equal(rows[:, 0], b % 2)  # rank in the cluster
    np.testing.assert_array_equal(rows[:, 1], 2)  # cluster size: clustered, not 1
    np.testing.assert_array_equal(rows[:, 2], 1000 + 7 * (b ^ 1))  # the other block's value


def test_the_driver_refuses_an_odd_grid() -> None:
    import cupy as cp

    out = cp.zeros(3 * BLOCK, dtype=cp.uint32)
    kernel = _module().get_function("neighbours_2")
    with pytest.raises(cp.cuda.driver.CUDADriverError) as e:
        kernel((3,), (BLOCK,), (out, np.uint64(out.size)))
        cp.cuda.Device().synchronize()
    print(f"the driver's refusal: {e.value}")
