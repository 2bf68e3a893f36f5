"""pyoxide kernels as Dask block functions (docs/guide/scale-out.md): ``map_blocks`` and
``blockwise`` over NumPy chunks (the CPU emulator) and CuPy chunks (the GPU), computed by
the threaded scheduler and by the processes scheduler (which pickles the kernels by
reference, tests/launch/test_pickle.py); a reduction whose every chunk and partial is
summed by a bundled reduce kernel; a histogram combined from per-chunk histograms; and
a distributed cluster: two worker processes on the emulator over a 1 GiB array, one
worker per GPU on CuPy chunks."""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np
import pytest
from helpers.bundled import emu_kernels_manifest
from helpers.probes import requires_gpu
from helpers.scale import (
    gpu_identity,
    histogram_block,
    pattern_block,
    saxpy_block,
    softmax_block,
    sum_chunk,
)

import pyoxide

da = pytest.importorskip("dask.array")

#: Where the chunks live: NumPy (the emulator) or CuPy (the GPU).
LIBS = [
    "numpy",
    pytest.param("cupy", marks=[pytest.mark.gpu, requires_gpu("CuPy chunks run on the GPU")]),
]
SCHEDULERS = ["threads", "processes"]


@pytest.fixture(scope="module")
def kernels() -> pyoxide.Module:
    return pyoxide.load(emu_kernels_manifest())


def chunked(host: np.ndarray, chunks: Any, lib: str) -> Any:
    x = da.from_array(host, chunks=chunks)
    if lib == "cupy":
        import cupy

        x = x.map_blocks(cupy.asarray, dtype=host.dtype)
    return x


def to_host(value: Any) -> np.ndarray:
    return value.get() if hasattr(value, "get") else np.asarray(value)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("lib", LIBS)
def test_map_blocks_runs_a_kernel_on_every_block(
    kernels: pyoxide.Module, lib: str, scheduler: str
) -> None:
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(100_003, dtype=np.float32) for _ in range(2))
    dx, dy = chunked(x, 10_000, lib), chunked(y, 10_000, lib)
    out = da.map_blocks(functools.partial(saxpy_block, kernels.saxpy, 2.0), dx, dy)
    got = to_host(out.compute(scheduler=scheduler))
    np.testing.assert_allclose(got, 2 * x + y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("lib", LIBS)
def test_blockwise_runs_a_row_kernel_on_blocks_of_whole_rows(
    kernels: pyoxide.Module, lib: str, scheduler: str
) -> None:
    x = np.random.default_rng(1).standard_normal((1000, 96), dtype=np.float32)
    block = functools.partial(softmax_block, kernels.softmax_rows)
    out = da.blockwise(block, "ij", chunked(x, (128, 96), lib), "ij", dtype=np.float32)
    got = to_host(out.compute(scheduler=scheduler))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("lib", LIBS)
def test_a_reduction_sums_each_chunk_and_the_partials_with_a_kernel(
    kernels: pyoxide.Module, lib: str, scheduler: str
) -> None:
    x = np.random.default_rng(2).random(1_000_000, dtype=np.float32)
    step = functools.partial(sum_chunk, kernels)
    total = da.reduction(
        chunked(x, 65_536, lib), chunk=step, combine=step, aggregate=step,
        dtype=np.float32, split_every=4,
    )  # fmt: skip
    got = float(to_host(total.compute(scheduler=scheduler)))
    assert got == pytest.approx(float(x.sum(dtype=np.float64)), rel=1e-5)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("lib", LIBS)
def test_a_histogram_adds_the_histograms_of_the_chunks(
    kernels: pyoxide.Module, lib: str, scheduler: str
) -> None:
    bins = 256
    x = np.random.default_rng(3).integers(0, bins + 10, 500_000, dtype=np.uint32)
    block = functools.partial(histogram_block, kernels, bins)
    dx = chunked(x, 50_000, lib)
    counts = dx.map_blocks(block, chunks=(bins,), dtype=np.uint32)
    got = to_host(
        counts.reshape(-1, bins).sum(axis=0, dtype=np.uint64).compute(scheduler=scheduler)
    )
    np.testing.assert_array_equal(got, np.bincount(x, minlength=bins + 10)[:bins])


GIB = 1 << 30


def sum_and_histogram(kernels: pyoxide.Module, x: Any, bins: int, split_every: int) -> Any:
    """The lazy sum (every chunk and partial summed by the kernel) and histogram of ``x``
    (u32 chunks whose element j is ``j % bins``) that the cluster tests compute."""
    step = functools.partial(sum_chunk, kernels)
    total = da.reduction(
        x.astype(np.float32), chunk=step, combine=step, aggregate=step,
        dtype=np.float32, split_every=split_every,
    )  # fmt: skip
    block = functools.partial(histogram_block, kernels, bins)
    counts = x.map_blocks(block, chunks=(bins,), dtype=np.uint32)
    return total, counts.reshape(-1, bins).sum(axis=0, dtype=np.uint64)


def assert_pattern_sums(total: Any, hist: Any, n: int, bins: int, rel: float) -> None:
    """``total`` and ``hist`` are those of n elements ``j % bins``."""
    period = np.arange(bins, dtype=np.float64)
    assert float(to_host(total)) == pytest.approx(period.sum() * (n // bins), rel=rel)
    np.testing.assert_array_equal(to_host(hist), np.full(bins, n // bins))


def test_a_local_cluster_reduces_a_1_gib_array_on_the_emulator(kernels: pyoxide.Module) -> None:
    """Two worker processes (the kernels reach them pickled by reference), 1 GiB of f32
    made inside the workers in 64 MiB chunks: the sum and the histogram equal NumPy's
    on the same values."""
    distributed = pytest.importorskip("distributed")
    n, chunk, bins = GIB // 4, (64 << 20) // 4, 1024
    # The values of element j: j mod 1024 (whole numbers, exact in f32).
    x = da.arange(n, chunks=chunk, dtype=np.uint32) % bins
    total, hist = sum_and_histogram(kernels, x, bins, split_every=4)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
            memory_limit=0,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):  # fmt: skip
        got_total, got_hist = client.compute([total, hist], sync=True)
        workers = client.run(lambda: "pyoxide._build.cache" in sys.modules)
    assert_pattern_sums(got_total, got_hist, n, bins, rel=1e-6)
    # The workers loaded the module from its manifest: the build machinery never ran.
    assert len(workers) == 2 and not any(workers.values())


@pytest.mark.gpu
@requires_gpu("a worker per GPU")
def test_a_cluster_with_a_worker_per_gpu_reduces_8_gib_per_gpu(kernels: pyoxide.Module) -> None:
    """One worker process per visible GPU (each sees only its own), 8 GiB of u32 per GPU
    made there in 512 MiB chunks: the sum and the histogram equal NumPy's on the same
    values, and no worker touched the build cache."""
    import cupy

    distributed = pytest.importorskip("distributed")
    gpus = cupy.cuda.runtime.getDeviceCount()
    bins, chunk = 1024, (512 << 20) // 4
    n = gpus * (8 * GIB // 4)
    x = da.map_blocks(
        functools.partial(pattern_block, bins), chunks=((chunk,) * (n // chunk),),
        dtype=np.uint32, meta=cupy.empty(0, cupy.uint32),
    )  # fmt: skip
    total, hist = sum_and_histogram(kernels, x, bins, split_every=8)
    workers = {
        f"gpu{i}": {"cls": distributed.Nanny, "options": {
            "nthreads": 1, "memory_limit": 0, "env": {"CUDA_VISIBLE_DEVICES": str(i)},
        }}
        for i in range(gpus)
    }  # fmt: skip
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": None}}
    with (
        distributed.SpecCluster(workers=workers, scheduler=scheduler) as cluster,
        distributed.Client(cluster) as client,
    ):
        # The results come home as NumPy, made on the workers, as a user would fetch
        # them: a CuPy result would make the client deserialise CuPy, a path through
        # distributed's RMM support that imports numba.cuda.
        on_host = [
            a.map_blocks(cupy.asnumpy, dtype=a.dtype, meta=np.empty((0,) * a.ndim, a.dtype))
            for a in (total, hist)
        ]
        got_total, got_hist = client.compute(on_host, sync=True)
        seen = client.run(gpu_identity)
    assert_pattern_sums(got_total, got_hist, n, bins, rel=1e-5)
    assert len({bus for bus, _ in seen.values()}) == gpus  # a GPU per worker
    assert not any(cached for _, cached in seen.values())
