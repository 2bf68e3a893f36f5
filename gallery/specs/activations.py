"""Specs of gallery/src/activations.rs: bias_gelu over (rows, cols) matrices, swiglu over
vectors."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Spec, compound_tol, per_element, torch_peer

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import BENCH_1D, TORCH, TWIN, row_spec, twin_kernel, vec4

F64 = np.float64


def _erf(v: np.ndarray) -> np.ndarray:
    """erf in float64: NumPy has none, so math.erf per element, or where PyTorch is
    installed its vectorised float64 erf (the same values, far faster at 2^26
    elements: scripts/bench_gallery's shapes)."""
    try:
        import torch
    except ImportError:
        return np.vectorize(math.erf, otypes=[F64])(v)
    return torch.special.erf(torch.from_numpy(v)).numpy()


def _bias_gelu_ref(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    v = a["x"].astype(F64) + a["bias"]
    return {"out": 0.5 * v * (1 + _erf(v / math.sqrt(2)))}


def _bias_gelu_twin(a: dict[str, Any]) -> Any:
    x, bias, out = a["x"], a["bias"], a["out"]
    rows, cols = x.shape
    vec4(x.shape, "bias_gelu")
    kernel = twin_kernel("activations", "bias_gelu")
    grid = (-(-(cols // 4) // 256), rows)
    return lambda: kernel(grid, (256,), (x, bias, out, np.int32(cols)))


BIAS_GELU = row_spec(
    kernel="bias_gelu",
    inputs=lambda case, rng: {
        "x": case.normal(rng, scale=2),
        "bias": case.normal(rng, shape=case.shape[1]),
    },
    outputs={"out": Out()},
    reference=_bias_gelu_ref,
    bytes=lambda case: 8 * case.size + 4 * case.shape[1],
    flops=per_element(20),
    peers={
        TWIN: _bias_gelu_twin,
        f"{TORCH} gelu(x + bias)": torch_peer(
            lambda torch, x, b: torch.nn.functional.gelu(x + b), "x", "bias"
        ),
    },
)


def _swiglu_twin(a: dict[str, Any]) -> Any:
    gate, up, out = a["gate"], a["up"], a["out"]
    vec4(gate.shape, "swiglu")
    kernel = twin_kernel("activations", "swiglu")
    n4 = gate.size // 4
    return lambda: kernel((-(-n4 // 256),), (256,), (gate, up, out, np.int64(n4)))


def _swiglu_ref(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    g = a["gate"].astype(F64)
    return {"out": g / (1 + np.exp(-g)) * a["up"]}


SWIGLU = Spec(
    kernel="swiglu",
    inputs=lambda case, rng: {"gate": case.normal(rng, scale=3), "up": case.normal(rng)},
    outputs={"out": Out()},
    reference=_swiglu_ref,
    tolerance=compound_tol,
    bytes=per_element(12),
    flops=per_element(6),
    bench_shapes=BENCH_1D,
    peers={
        TWIN: _swiglu_twin,
        f"{TORCH} silu(gate) * up": torch_peer(
            lambda torch, g, u: torch.nn.functional.silu(g) * u, "gate", "up"
        ),
    },
)

SPECS = [BIAS_GELU, SWIGLU]
