"""Specs of gallery/src/norms.rs: rms_norm and add_rms_norm over (rows, cols) matrices."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Spec, tol

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import BENCH_2D, TORCH, TWIN, elements, f32, row_shapes, row_twin, torch_of

F64 = np.float64
EPS = 1e-6


def _x(case: Case, rng: np.random.Generator) -> np.ndarray:
    return (rng.standard_normal(case.shape) * 3).astype(np.float32)


def _weight(case: Case, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(0.5, 1.5, case.shape[1]).astype(np.float32)


def _rms(h: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return h / np.sqrt((h * h).mean(axis=1, keepdims=True) + eps) * weight


# --- rms_norm ---------------------------------------------------------------------------


def _rms_twin(a: dict[str, Any]) -> Any:
    x, w, out = a["x"], a["weight"], a["out"]
    return row_twin("norms", "rms_norm", x, lambda cols: (x, w, f32(a["eps"]), out, np.int32(cols)))


def _rms_torch(a: dict[str, Any]) -> Any:
    import torch

    x, w = torch_of(a["x"], a["weight"])
    return lambda: torch.nn.functional.rms_norm(x, (x.shape[1],), w, a["eps"])


RMS_NORM = Spec(
    kernel="rms_norm",
    inputs=lambda case, rng: {"x": _x(case, rng), "weight": _weight(case, rng), "eps": EPS},
    outputs={"out": Out(lambda case: case.shape)},
    shapes=row_shapes,
    reference=lambda a, case: {"out": _rms(a["x"].astype(F64), a["weight"], a["eps"])},
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 8 * elements(case.shape) + 4 * case.shape[1],
    flops=lambda case: 4 * elements(case.shape),
    bench_shapes=BENCH_2D,
    peers={TWIN: _rms_twin, f"{TORCH} rms_norm": _rms_torch},
)


# --- add_rms_norm -----------------------------------------------------------------------


def _add_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {"x": _x(case, rng), "residual": _x(case, rng), "weight": _weight(case, rng), "eps": EPS}


def _add_reference(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    h = a["x"].astype(F64) + a["residual"]
    return {"sum": h, "out": _rms(h, a["weight"], a["eps"])}


def _add_twin(a: dict[str, Any]) -> Any:
    x, r, w, s, out = a["x"], a["residual"], a["weight"], a["sum"], a["out"]
    return row_twin(
        "norms", "add_rms_norm", x, lambda cols: (x, r, w, f32(a["eps"]), s, out, np.int32(cols))
    )


def _add_torch(a: dict[str, Any]) -> Any:
    import torch

    x, r, w = torch_of(a["x"], a["residual"], a["weight"])

    def run() -> Any:
        h = x + r
        return h, torch.nn.functional.rms_norm(h, (h.shape[1],), w, a["eps"])

    return run


ADD_RMS_NORM = Spec(
    kernel="add_rms_norm",
    inputs=_add_inputs,
    outputs={"sum": Out(lambda case: case.shape), "out": Out(lambda case: case.shape)},
    shapes=row_shapes,
    reference=_add_reference,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 16 * elements(case.shape) + 4 * case.shape[1],
    flops=lambda case: 5 * elements(case.shape),
    bench_shapes=BENCH_2D,
    peers={TWIN: _add_twin, f"{TORCH} add + rms_norm": _add_torch},
)

SPECS = [RMS_NORM, ADD_RMS_NORM]
