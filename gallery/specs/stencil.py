"""Spec of gallery/src/stencil.rs: laplacian_2d over (rows, cols) grids."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, per_element, tol

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import TORCH, TWIN, row_spec, twin_kernel, vec4

F64 = np.float64
STRIP, WARPS = 16, 4  # gallery/cuda/stencil.cu: rows per thread, warps per block


def _neighbours(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the sum of the four neighbours with zeros outside, the centre)."""
    p = np.pad(x, 1)
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:], x


def _reference(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    around, centre = _neighbours(a["x"].astype(F64))
    return {"out": around - 4 * centre}


def _scale(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    around, centre = _neighbours(np.abs(a["x"].astype(F64)))
    return {"out": around + 4 * centre}


def _twin(a: dict[str, Any]) -> Any:
    x, out = a["x"], a["out"]
    rows, cols = x.shape
    vec4(x.shape, "laplacian_2d")
    kernel = twin_kernel("stencil", "laplacian_2d")
    grid = (-(-(cols // 4) // 32), -(-rows // (STRIP * WARPS)))
    return lambda: kernel(grid, (32, WARPS), (x, out, np.int32(rows), np.int32(cols)))


def _torch(a: dict[str, Any]) -> Any:
    import torch

    x = torch.from_dlpack(a["x"])
    k = torch.tensor([[0, 1, 0], [1, -4, 1], [0, 1, 0]], dtype=x.dtype, device=x.device)
    k = k.reshape(1, 1, 3, 3)
    return lambda: torch.nn.functional.conv2d(x[None, None], k, padding=1)[0, 0]


LAPLACIAN = row_spec(
    kernel="laplacian_2d",
    inputs=lambda case, rng: {"x": case.normal(rng)},
    outputs={"out": Out()},
    reference=_reference,
    scale=_scale,
    tolerance=lambda case: tol(case.np_dtype),  # five terms: plain, not compound, work
    bytes=per_element(8),
    flops=per_element(5),
    peers={TWIN: _twin, f"{TORCH} conv2d": _torch},
)

SPECS = [LAPLACIAN]
