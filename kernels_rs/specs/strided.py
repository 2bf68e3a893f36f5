"""Specs of kernels_rs/src/strided.rs (copy_2d, copy_3d): out = x element by element,
for 2-D and 3-D arrays; see pyoxide/spec.py. verify hands over C-ordered views (offset
by one element in every other case); the F-order, transposed and sliced views the
kernels also take are covered by tests/kernels/test_shapes.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Shape, Spec, shapes_2d


def _x(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {"x": (rng.standard_normal(case.shape) * 1000).astype(case.np_dtype)}


def _shape(case: Case) -> Shape:
    return case.shape


def _bytes(case: Case) -> int:
    return 2 * int(case.np_dtype.itemsize) * int(np.prod(case.shape))


def _cupy_copy(a: dict[str, Any]) -> Any:
    import cupy

    x, out = a["x"], a["out"]
    return lambda: cupy.copyto(out, x)


def _copy(kernel: str, dims: int) -> Spec:
    return Spec(
        kernel=kernel,
        dtypes=("f32", "f64", "u32"),
        inputs=_x,
        outputs={"out": Out(_shape)},
        shapes=lambda rng, count: shapes_2d(rng, count, dims=dims, max_elems=1 << 15),
        reference=lambda a, case: {"out": a["x"]},
        tolerance=lambda case: 0.0,
        bytes=_bytes,
        flops=lambda case: 0,
        bench_shapes=[(4096, 4096)] if dims == 2 else [(256, 256, 256)],
        peers={"cupy.copyto": _cupy_copy},
    )


SPECS = [_copy("copy_2d", 2), _copy("copy_3d", 3)]
