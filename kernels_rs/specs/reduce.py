"""Specs of kernels_rs/src/reduce.rs and histogram.rs (reduce_sum_f32,
reduce_blocks_f32, scan_blocks_u32, histogram, histogram_global): see pyoxide/spec.py."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Shape, Spec, sizes_1d

F64 = np.float64
BENCH_1D = [(1 << p,) for p in range(16, 27, 2)]
SEGMENT = 256  # scan_blocks_u32 scans segments of one block


def _normal(rng: np.random.Generator, case: Case) -> np.ndarray:
    return rng.standard_normal(case.n).astype(np.float32)


@functools.cache
def _peers() -> Any:
    """The peers scripts/bench_kernels times too (PyTorch, CuPy)."""
    import cupy

    from pyoxide.bench import Peers

    return Peers(cupy)


REDUCE_SUM = Spec(
    kernel="reduce_sum_f32",
    inputs=lambda case, rng: {"x": _normal(rng, case)},
    outputs={"out": Out(lambda case: 1, init="zeros")},  # an accumulator: starts at 0
    reference=lambda a, case: {"out": a["x"].astype(F64).sum(keepdims=True)},
    scale=lambda a, case: {"out": np.abs(a["x"].astype(F64)).sum(keepdims=True)},
    bytes=lambda case: 4 * case.n,
    flops=lambda case: case.n,
    bench_shapes=BENCH_1D,
    peers={"bench_kernels": lambda a: _peers().sum(a["x"])},
)


def _with_blocks(rng: np.random.Generator, count: int) -> list[Shape]:
    """(elements, blocks): the 1-D sizes, each with a block count (one partial each)."""
    blocks = (1, 2, 3, 7, 8, 132)
    return [(s[0], int(rng.choice(blocks))) for s in sizes_1d(rng, count)]


REDUCE_BLOCKS = Spec(
    kernel="reduce_blocks_f32",
    inputs=lambda case, rng: {"x": _normal(rng, case)},
    outputs={"partial": Out(lambda case: case.shape[1])},
    shapes=_with_blocks,
    # Which elements each block sums is the kernel's choice: the partials' total is
    # what is defined (a NaN left in any partial poisons it).
    observe=lambda got, case: {"partial": got["partial"].astype(F64).sum(keepdims=True)},
    reference=lambda a, case: {"partial": a["x"].astype(F64).sum(keepdims=True)},
    scale=lambda a, case: {"partial": np.abs(a["x"].astype(F64)).sum(keepdims=True)},
    bytes=lambda case: 4 * case.n,
    flops=lambda case: case.n,
    bench_shapes=[(1 << p, 132 * 8) for p in range(16, 27, 2)],
)


def _scan_ref(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    x = a["x"].astype(np.uint64)
    pad = -len(x) % SEGMENT
    segs = np.concatenate([x, np.zeros(pad, np.uint64)]).reshape(-1, SEGMENT)
    return {"out": (np.cumsum(segs, axis=1) & 0xFFFFFFFF).reshape(-1)[: len(x)].astype(np.uint32)}


def _scan_launch(kernel: Any, args: list[Any], case: Case) -> None:
    # Segments of one block (the grid follows from its launch policy); one u32 of
    # dynamic shared memory per warp (its doc).
    kernel.launch(*args, block=SEGMENT, shared_mem=4 * SEGMENT // 32)


SCAN = Spec(
    kernel="scan_blocks_u32",
    dtypes=("u32",),
    inputs=lambda case, rng: {"x": rng.integers(0, 1 << 20, case.n, dtype=np.uint32)},
    outputs={"out": Out(lambda case: case.n)},
    reference=_scan_ref,
    launch=_scan_launch,
    bytes=lambda case: 8 * case.n,
    flops=lambda case: case.n,
    bench_shapes=BENCH_1D,
    peers={"bench_kernels": lambda a: _peers().segmented_scan(a["x"], SEGMENT)},
)


def _with_bins(rng: np.random.Generator, count: int) -> list[Shape]:
    """(values, bins): shared-memory bin counts and one past them (global bins)."""
    bins = (1, 10, 256, 1024, 1025, 3000)
    return [(s[0], int(rng.choice(bins))) for s in sizes_1d(rng, count)]


def _hist_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {"x": rng.integers(0, case.shape[1] + 3, case.n, dtype=np.uint32)}  # some past the end


def _hist_ref(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    x = a["x"]
    return {"bins": np.bincount(x[x < case.shape[1]], minlength=case.shape[1]).astype(np.uint32)}


def _histogram(name: str) -> Spec:
    return Spec(
        kernel=name,
        dtypes=("u32",),
        inputs=_hist_inputs,
        outputs={"bins": Out(lambda case: case.shape[1], init="zeros")},  # counts add to 0
        shapes=_with_bins,
        reference=_hist_ref,
        bytes=lambda case: 4 * case.n,
        flops=lambda case: case.n,
        bench_shapes=[(1 << p, 256) for p in range(16, 27, 2)],
        peers={"bench_kernels": lambda a: _peers().bincount(a["x"], len(a["bins"]))},
    )


SPECS = [REDUCE_SUM, REDUCE_BLOCKS, SCAN, _histogram("histogram"), _histogram("histogram_global")]
