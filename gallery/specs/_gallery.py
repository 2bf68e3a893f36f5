"""What the gallery's specs share: the shapes they are checked and timed at, the CUDA C++
twins (gallery/cuda/*.cu compiled by NVRTC through CuPy, launched as their comments say)
and the PyTorch peers. Each spec's ``peers`` holds both kinds, by the names below, so
``pyoxide bench gallery`` and scripts/bench_gallery time the same operations."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Shape, Spec, compound_tol, shapes_2d

CUDA = Path(__file__).resolve().parent.parent / "cuda"
#: The peer names scripts/bench_gallery reads: the C++ twin, and PyTorch's op.
TWIN = "CUDA C++ twin"
TORCH = "PyTorch"
#: The issue's bar: a tall and a wide matrix of 2^26 float32 (256 MiB, far past the L2).
BENCH_2D: list[Shape] = [(16384, 4096), (4096, 16384)]
BENCH_1D: list[Shape] = [(1 << 28,)]

Args = dict[str, Any]
Peer = Callable[[Args], Callable[[], Any]]


def row_shapes(rng: np.random.Generator, count: int) -> list[Shape]:
    """Matrices for verify: the 2-D edge shapes, and a few rows longer than a block
    of threads holds in registers."""
    out = shapes_2d(rng, count, max_elems=1 << 15)
    return [*out[:8], (1, 20000), (3, 4099), (2, 70001), *out[8:]]


#: The matrix kernels: checked at `row_shapes`, timed at BENCH_2D, compound f32 work
#: (a spec names what differs).
row_spec = functools.partial(Spec, shapes=row_shapes, tolerance=compound_tol, bench_shapes=BENCH_2D)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# --- the CUDA C++ twins -------------------------------------------------------------------


#: The row twins' instances: float4s a thread (see `per_row`).
VECTORS_PER_THREAD = (1, 2, 4, 8, 16)
_KERNEL = re.compile(
    r"(template <int VPT>\s*)?__global__ void(?: __launch_bounds__\(\d+\))?\s+(\w+)\("
)


@functools.cache
def cuda_module(stem: str) -> Any:
    """gallery/cuda/<stem>.cu after common.cuh, compiled once by NVRTC (its defaults, as
    nvcc's: -O3, --fmad=true) with every kernel of the file and, of a `template <int
    VPT>` kernel, every instance in VECTORS_PER_THREAD."""
    import cupy

    source = (CUDA / "common.cuh").read_text() + "\n" + (CUDA / f"{stem}.cu").read_text()
    names = []
    for template, name in _KERNEL.findall(source):
        names += [f"{name}<{v}>" for v in VECTORS_PER_THREAD] if template else [name]
    return cupy.RawModule(code=source, options=("--std=c++17",), name_expressions=names)


def twin_kernel(stem: str, name: str) -> Any:
    return cuda_module(stem).get_function(name)


def vec4(shape: Shape, what: str) -> None:
    """The twins move float4s: rows (or arrays) a multiple of 4 elements long."""
    if shape[-1] % 4:
        raise ValueError(f"the CUDA C++ twin of {what} needs a multiple of 4 columns, not {shape}")


def per_row(cols: int) -> tuple[int, int]:
    """A row twin's (float4s per thread, threads): the row in registers, at most 512
    threads of whole warps, 1 to 16 vectors each."""
    n4 = cols // 4
    vpt = next((v for v in (1, 2, 4, 8, 16) if n4 <= 512 * v), None)
    if vpt is None:
        raise ValueError(
            f"rows of {cols} columns do not fit the twin's registers (16 × 512 float4)"
        )
    threads = 32 * max(1, ceil_div(ceil_div(n4, vpt), 32))
    return vpt, threads


def row_twin(
    stem: str, name: str, x: Any, make_args: Callable[[int], tuple[Any, ...]]
) -> Callable[[], Any]:
    """A one-block-per-row twin over the (rows, cols) matrix `x`: the instance for the
    row length, launched with the arguments `make_args(cols)`."""
    rows, cols = x.shape
    vec4(x.shape, name)
    vpt, threads = per_row(cols)
    kernel = twin_kernel(stem, f"{name}<{vpt}>")
    args = make_args(cols)
    return lambda: kernel((rows,), (threads,), args)


def row_map_twin(stem: str, name: str) -> Peer:
    """The twin of a row kernel of the arguments (x, out, cols)."""

    def peer(a: Args) -> Callable[[], Any]:
        x, out = a["x"], a["out"]
        return row_twin(stem, name, x, lambda cols: (x, out, np.int32(cols)))

    return peer


def f32(v: Any) -> np.float32:
    return np.float32(v)


# --- PyTorch ---------------------------------------------------------------------------------


def peer_outputs(names: list[str], args: Args, result: Any) -> dict[str, Any]:
    """A peer's outputs by name: the output arrays of `args` when the peer wrote them
    (returned None, as the twins do), else what it returned (one array, or a tuple in
    the order of `names`, as the PyTorch peers do)."""
    if result is None:
        return {n: args[n] for n in names}
    results = result if isinstance(result, tuple) else (result,)
    if len(results) != len(names):
        raise ValueError(f"a peer returned {len(results)} arrays for outputs {names}")
    return dict(zip(names, results, strict=True))
