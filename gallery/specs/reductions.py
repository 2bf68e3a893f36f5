"""Spec of gallery/src/reductions.rs: dot over vectors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Spec, compound_tol, per_element, torch_peer

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import BENCH_1D, TORCH, TWIN, twin_kernel

F64 = np.float64


def _inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {"x": case.normal(rng), "y": case.normal(rng)}


def _twin(a: dict[str, Any]) -> Any:
    """Zero `out`, then one wave of blocks (8 per multiprocessor) adds into it."""
    import cupy

    x, y, out = a["x"], a["y"], a["out"]
    kernel = twin_kernel("reductions", "dot")
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    grid = (max(1, min(8 * sms, -(-x.size // (4 * 256)))),)
    args = (x, y, out, np.int64(x.size))

    def run() -> None:
        out.fill(0)
        kernel(grid, (256,), args)

    return run


DOT = Spec(
    kernel="dot",
    inputs=_inputs,
    outputs={"out": Out(lambda case: 1, init="zeros")},  # an accumulator: starts at 0
    reference=lambda a, case: {"out": np.dot(a["x"].astype(F64), a["y"]).reshape(1)},
    scale=lambda a, case: {"out": np.abs(a["x"].astype(F64) * a["y"]).sum(keepdims=True)},
    tolerance=compound_tol,
    bytes=per_element(8),
    flops=per_element(2),
    bench_shapes=BENCH_1D,
    peers={TWIN: _twin, f"{TORCH} dot": torch_peer(lambda torch, x, y: torch.dot(x, y), "x", "y")},
)

SPECS = [DOT]
