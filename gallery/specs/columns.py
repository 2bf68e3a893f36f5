"""Spec of gallery/src/columns.rs: col_sum over (rows, cols) matrices."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Out, per_element, torch_peer

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import TORCH, TWIN, row_spec, twin_kernel, vec4

F64 = np.float64
ROWS_PER_BLOCK = 256  # gallery/cuda/columns.cu


def _twin(a: dict[str, Any]) -> Any:
    """Zero `out`, then add each block's column sums (the twin's comment)."""
    x, out = a["x"], a["out"]
    rows, cols = x.shape
    vec4(x.shape, "col_sum")
    kernel = twin_kernel("columns", "col_sum")
    grid = (-(-(cols // 4) // 32), -(-rows // ROWS_PER_BLOCK))
    args = (x, out, np.int32(rows), np.int32(cols))

    def run() -> None:
        out.fill(0)
        kernel(grid, (32, 8), args)

    return run


COL_SUM = row_spec(
    kernel="col_sum",
    inputs=lambda case, rng: {"x": case.normal(rng)},
    outputs={"out": Out(lambda case: case.shape[1])},
    reference=lambda a, case: {"out": a["x"].astype(F64).sum(axis=0)},
    scale=lambda a, case: {"out": np.abs(a["x"].astype(F64)).sum(axis=0)},
    bytes=lambda case: 4 * case.size + 4 * case.shape[1],
    flops=per_element(1),
    peers={
        TWIN: _twin,
        f"{TORCH} sum(dim=0)": torch_peer(lambda torch, x: torch.sum(x, dim=0), "x"),
    },
)

SPECS = [COL_SUM]
