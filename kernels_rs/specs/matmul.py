"""Specs of kernels_rs/src/matmul.rs and gemm.rs (matmul_tiled, sgemm, gemm_bf16,
gemm_bf16_bf16): a (m×k) · b (k×n) = c (m×n) as matrices, sizes from their shapes and
launches from their `#[launch]` policies; see pyoxide/spec.py.

Tolerance: f32 sums of k products grow like sqrt(k)·2^-24 relative (Frobenius norm);
1e-5 holds with margin to k ≈ 10^5. The bf16 GEMMs are compared with the float64
product of the bf16-rounded inputs (so input rounding is not their error); with an f32
result they may also lose an ulp (2^-24 relative) per k-step of 16, since the tensor
cores' f32 accumulation behaves as if it truncated (Hopper's wgmma as cuBLAS runs it: at
16×4096×14336 the H200 measured 1.6e-5; scripts/bench_gemm checks the same bound)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Shape, Spec, np_dtype, shapes_2d

F64 = np.float64


def _mnk(rng: np.random.Generator, count: int) -> list[Shape]:
    return shapes_2d(rng, count, dims=3, max_elems=1 << 15)


def _mnk_small(rng: np.random.Generator, count: int) -> list[Shape]:
    # The 128×128-tile GEMMs run 256 threads per tile on the emulator: smaller shapes.
    return shapes_2d(rng, count, dims=3, max_elems=1 << 13)


def _f32_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    m, n, k = case.shape
    return {
        "a": rng.standard_normal((m, k)).astype(np.float32),
        "b": rng.standard_normal((k, n)).astype(np.float32),
    }


def _product(a: dict[str, Any], case: Case, convert: Any = None) -> np.ndarray:
    x, y = a["a"], a["b"]
    if convert is not None:
        x, y = convert(x), convert(y)
    product: np.ndarray = x.astype(F64) @ y.astype(F64)
    return product


def _bf16_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    a = _f32_inputs(case, rng)
    bf16 = np_dtype("bf16")  # ml_dtypes' bfloat16: rounded to nearest even from f32
    return {**a, "a": a["a"].astype(bf16), "b": a["b"].astype(bf16)}


def _c_out(dtype: str = "f32") -> Out:
    return Out(lambda case: (case.shape[0], case.shape[1]), dtype=dtype)


def _gemm_flops(case: Case) -> int:
    m, n, k = case.shape
    return 2 * m * n * k


def _bytes(item: int, out_item: int = 4) -> Any:
    return lambda case: (
        item * (case.shape[0] * case.shape[2] + case.shape[2] * case.shape[1])
        + (out_item * case.shape[0] * case.shape[1])
    )


def _torch_mm(dtype: str) -> Any:
    def factory(a: dict[str, Any]) -> Any:
        import torch

        x, y = (torch.from_dlpack(a[n]) for n in "ab")  # bf16 arrays arrive as bfloat16
        return lambda: torch.mm(x, y)

    return factory


BENCH_MNK = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096)]

#: What the matrix products share: c = a · b in float64, 2mnk FLOPs, the small shapes
#: (the 128×128-tile GEMMs), the 1e-5 bound of the module documentation, and tuning
#: under sustained load (the power limit binds a GEMM in training).
_gemm_spec = functools.partial(
    Spec,
    sustained=True,
    outputs={"c": _c_out()},
    shapes=_mnk_small,
    reference=lambda a, case: {"c": _product(a, case)},
    tolerance=lambda case: 1e-5,
    flops=_gemm_flops,
    bench_shapes=BENCH_MNK,
)

MATMUL_TILED = _gemm_spec(
    kernel="matmul_tiled",
    inputs=_f32_inputs,
    shapes=_mnk,
    bytes=_bytes(4),
    bench_shapes=BENCH_MNK[:2],
    peers={"torch.mm": _torch_mm("f32"), "cupy.matmul": lambda a: _cupy_mm(a)},
)


def _cupy_mm(a: dict[str, Any]) -> Any:
    import cupy

    x, y = a["a"], a["b"]
    return lambda: cupy.matmul(x, y)


SGEMM = _gemm_spec(
    kernel="sgemm",
    inputs=_f32_inputs,
    bytes=_bytes(4),
    peers={"torch.mm": _torch_mm("f32"), "cupy.matmul": lambda a: _cupy_mm(a)},
)

GEMM_BF16 = _gemm_spec(
    kernel="gemm_bf16",
    dtypes=("bf16",),
    inputs=_bf16_inputs,
    # The tensor cores' truncating f32 accumulation: an ulp per k-step of 16 (module docs).
    tolerance=lambda case: max(1e-5, case.shape[2] / 16 * 2.0**-24),
    bytes=_bytes(2),
    peers={"torch.mm (bf16)": _torch_mm("bf16")},
)

GEMM_BF16_BF16 = _gemm_spec(
    kernel="gemm_bf16_bf16",
    dtypes=("bf16",),
    inputs=_bf16_inputs,
    outputs={"c": _c_out("bf16")},
    # c is bf16: compared within bf16's rounding (2^-9 relative).
    tolerance=lambda case: 2.0**-8,
    bytes=_bytes(2, 2),
    peers={"torch.mm (bf16)": _torch_mm("bf16")},
)

SPECS = [MATMUL_TILED, SGEMM, GEMM_BF16, GEMM_BF16_BF16]
