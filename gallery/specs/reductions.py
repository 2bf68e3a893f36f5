"""Spec of gallery/src/reductions.rs: dot over vectors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Spec, tol

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import BENCH_1D, TORCH, TWIN, torch_of, twin_kernel

F64 = np.float64


def _inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "x": rng.standard_normal(case.n).astype(np.float32),
        "y": rng.standard_normal(case.n).astype(np.float32),
    }


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


def _torch(a: dict[str, Any]) -> Any:
    import torch

    x, y = torch_of(a["x"], a["y"])
    return lambda: torch.dot(x, y)


DOT = Spec(
    kernel="dot",
    inputs=_inputs,
    outputs={"out": Out(lambda case: 1, init="zeros")},  # an accumulator: starts at 0
    reference=lambda a, case: {"out": np.dot(a["x"].astype(F64), a["y"]).reshape(1)},
    scale=lambda a, case: {"out": np.abs(a["x"].astype(F64) * a["y"]).sum(keepdims=True)},
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 8 * case.n,
    flops=lambda case: 2 * case.n,
    bench_shapes=BENCH_1D,
    peers={TWIN: _twin, f"{TORCH} dot": _torch},
)

SPECS = [DOT]
