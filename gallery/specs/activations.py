"""Specs of gallery/src/activations.rs: bias_gelu over (rows, cols) matrices, swiglu over
vectors."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Spec, tol

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import (
    BENCH_1D,
    BENCH_2D,
    TORCH,
    TWIN,
    elements,
    row_shapes,
    torch_of,
    twin_kernel,
    vec4,
)

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


def _bias_gelu_torch(a: dict[str, Any]) -> Any:
    import torch

    x, b = torch_of(a["x"], a["bias"])
    return lambda: torch.nn.functional.gelu(x + b)


BIAS_GELU = Spec(
    kernel="bias_gelu",
    inputs=lambda case, rng: {
        "x": (rng.standard_normal(case.shape) * 2).astype(np.float32),
        "bias": rng.standard_normal(case.shape[1]).astype(np.float32),
    },
    outputs={"out": Out(lambda case: case.shape)},
    shapes=row_shapes,
    reference=_bias_gelu_ref,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 8 * elements(case.shape) + 4 * case.shape[1],
    flops=lambda case: 20 * elements(case.shape),
    bench_shapes=BENCH_2D,
    peers={TWIN: _bias_gelu_twin, f"{TORCH} gelu(x + bias)": _bias_gelu_torch},
)


def _swiglu_twin(a: dict[str, Any]) -> Any:
    gate, up, out = a["gate"], a["up"], a["out"]
    vec4(gate.shape, "swiglu")
    kernel = twin_kernel("activations", "swiglu")
    n4 = gate.size // 4
    return lambda: kernel((-(-n4 // 256),), (256,), (gate, up, out, np.int64(n4)))


def _swiglu_torch(a: dict[str, Any]) -> Any:
    import torch

    g, u = torch_of(a["gate"], a["up"])
    return lambda: torch.nn.functional.silu(g) * u


def _swiglu_ref(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    g = a["gate"].astype(F64)
    return {"out": g / (1 + np.exp(-g)) * a["up"]}


SWIGLU = Spec(
    kernel="swiglu",
    inputs=lambda case, rng: {
        "gate": (rng.standard_normal(case.n) * 3).astype(np.float32),
        "up": rng.standard_normal(case.n).astype(np.float32),
    },
    outputs={"out": Out(lambda case: case.n)},
    reference=_swiglu_ref,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 12 * case.n,
    flops=lambda case: 6 * case.n,
    bench_shapes=BENCH_1D,
    peers={TWIN: _swiglu_twin, f"{TORCH} silu(gate) * up": _swiglu_torch},
)

SPECS = [BIAS_GELU, SWIGLU]
