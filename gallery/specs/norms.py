"""Specs of gallery/src/norms.rs: rms_norm and add_rms_norm over (rows, cols) matrices."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, per_element, torch_peer

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import TORCH, TWIN, f32, row_spec, row_twin

F64 = np.float64
EPS = 1e-6


def _weight(case: Case, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(0.5, 1.5, case.shape[1]).astype(np.float32)


def _rms(h: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return h / np.sqrt((h * h).mean(axis=1, keepdims=True) + eps) * weight


# --- rms_norm ---------------------------------------------------------------------------


def _rms_twin(a: dict[str, Any]) -> Any:
    x, w, out = a["x"], a["weight"], a["out"]
    return row_twin("norms", "rms_norm", x, lambda cols: (x, w, f32(a["eps"]), out, np.int32(cols)))


RMS_NORM = row_spec(
    kernel="rms_norm",
    inputs=lambda case, rng: {
        "x": case.normal(rng, scale=3),
        "weight": _weight(case, rng),
        "eps": EPS,
    },
    outputs={"out": Out()},
    reference=lambda a, case: {"out": _rms(a["x"].astype(F64), a["weight"], a["eps"])},
    bytes=lambda case: 8 * case.size + 4 * case.shape[1],
    flops=per_element(4),
    peers={
        TWIN: _rms_twin,
        f"{TORCH} rms_norm": torch_peer(
            lambda torch, x, w: torch.nn.functional.rms_norm(x, (x.shape[1],), w, EPS),
            "x",
            "weight",
        ),
    },
)


# --- add_rms_norm -----------------------------------------------------------------------


def _add_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    x, residual = case.normal(rng, scale=3), case.normal(rng, scale=3)
    return {"x": x, "residual": residual, "weight": _weight(case, rng), "eps": EPS}


def _add_reference(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    h = a["x"].astype(F64) + a["residual"]
    return {"sum": h, "out": _rms(h, a["weight"], a["eps"])}


def _add_twin(a: dict[str, Any]) -> Any:
    x, r, w, s, out = a["x"], a["residual"], a["weight"], a["sum"], a["out"]
    return row_twin(
        "norms", "add_rms_norm", x, lambda cols: (x, r, w, f32(a["eps"]), s, out, np.int32(cols))
    )


def _add_rms(torch: Any, x: Any, r: Any, w: Any) -> Any:
    h = x + r
    return h, torch.nn.functional.rms_norm(h, (h.shape[1],), w, EPS)


ADD_RMS_NORM = row_spec(
    kernel="add_rms_norm",
    inputs=_add_inputs,
    outputs={"sum": Out(), "out": Out()},
    reference=_add_reference,
    bytes=lambda case: 16 * case.size + 4 * case.shape[1],
    flops=per_element(5),
    peers={
        TWIN: _add_twin,
        f"{TORCH} add + rms_norm": torch_peer(_add_rms, "x", "residual", "weight"),
    },
)

SPECS = [RMS_NORM, ADD_RMS_NORM]
