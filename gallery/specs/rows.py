"""Specs of gallery/src/rows.rs: argmax_rows, cross_entropy_rows, log_softmax_rows and
cumsum_rows over (rows, cols) matrices."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Spec, tol

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import BENCH_2D, TORCH, TWIN, elements, row_shapes, row_twin, torch_of

F64 = np.float64


def _x(case: Case, rng: np.random.Generator, scale: float = 4) -> np.ndarray:
    return (rng.standard_normal(case.shape) * scale).astype(np.float32)


def _logsumexp(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _rows(case: Case) -> int:
    return case.shape[0]


# --- argmax_rows --------------------------------------------------------------------------


def _argmax_twin(a: dict[str, Any]) -> Any:
    x, out = a["x"], a["out"]
    return row_twin("rows", "argmax_rows", x, lambda cols: (x, out, np.int32(cols)))


def _argmax_torch(a: dict[str, Any]) -> Any:
    import torch

    (x,) = torch_of(a["x"])
    return lambda: torch.argmax(x, dim=1)


ARGMAX = Spec(
    kernel="argmax_rows",
    inputs=lambda case, rng: {"x": _x(case, rng)},
    outputs={"out": Out(_rows, dtype="u32")},
    shapes=row_shapes,
    reference=lambda a, case: {"out": a["x"].argmax(axis=1).astype(np.uint32)},
    tolerance=lambda case: 0.0,
    bytes=lambda case: 4 * elements(case.shape) + 4 * case.shape[0],
    flops=lambda case: elements(case.shape),
    bench_shapes=BENCH_2D,
    peers={TWIN: _argmax_twin, f"{TORCH} argmax": _argmax_torch},
)


# --- cross_entropy_rows ---------------------------------------------------------------------


def _ce_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {"logits": _x(case, rng), "target": rng.integers(0, case.shape[1], case.shape[0])}


def _ce_reference(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    x = a["logits"].astype(F64)
    picked = np.take_along_axis(x, a["target"][:, None], axis=1)
    return {"loss": (_logsumexp(x) - picked)[:, 0]}


def _ce_scale(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    """The terms the loss is the difference of: log-sum-exp and the picked logit."""
    x = a["logits"].astype(F64)
    return {"loss": np.abs(_logsumexp(x))[:, 0] + np.abs(x).max(axis=1)}


def _ce_twin(a: dict[str, Any]) -> Any:
    x, t, loss = a["logits"], a["target"], a["loss"]
    return row_twin("rows", "cross_entropy_rows", x, lambda cols: (x, t, loss, np.int32(cols)))


def _ce_torch(a: dict[str, Any]) -> Any:
    import torch

    x, t = torch_of(a["logits"], a["target"])
    return lambda: torch.nn.functional.cross_entropy(x, t, reduction="none")


CROSS_ENTROPY = Spec(
    kernel="cross_entropy_rows",
    inputs=_ce_inputs,
    outputs={"loss": Out(_rows)},
    shapes=row_shapes,
    reference=_ce_reference,
    scale=_ce_scale,
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 4 * elements(case.shape) + 12 * case.shape[0],
    flops=lambda case: 4 * elements(case.shape),
    bench_shapes=BENCH_2D,
    peers={TWIN: _ce_twin, f"{TORCH} cross_entropy": _ce_torch},
)


# --- log_softmax_rows --------------------------------------------------------------------------


def _ls_twin(a: dict[str, Any]) -> Any:
    x, out = a["x"], a["out"]
    return row_twin("rows", "log_softmax_rows", x, lambda cols: (x, out, np.int32(cols)))


def _ls_torch(a: dict[str, Any]) -> Any:
    import torch

    (x,) = torch_of(a["x"])
    return lambda: torch.log_softmax(x, dim=1)


LOG_SOFTMAX = Spec(
    kernel="log_softmax_rows",
    inputs=lambda case, rng: {"x": _x(case, rng)},
    outputs={"out": Out(lambda case: case.shape)},
    shapes=row_shapes,
    reference=lambda a, case: {"out": a["x"].astype(F64) - _logsumexp(a["x"].astype(F64))},
    scale=lambda a, case: {
        "out": np.abs(a["x"].astype(F64)) + np.abs(_logsumexp(a["x"].astype(F64)))
    },
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 8 * elements(case.shape),
    flops=lambda case: 4 * elements(case.shape),
    bench_shapes=BENCH_2D,
    peers={TWIN: _ls_twin, f"{TORCH} log_softmax": _ls_torch},
)


# --- cumsum_rows -------------------------------------------------------------------------------


def _cumsum_twin(a: dict[str, Any]) -> Any:
    x, out = a["x"], a["out"]
    return row_twin("rows", "cumsum_rows", x, lambda cols: (x, out, np.int32(cols)))


def _cumsum_torch(a: dict[str, Any]) -> Any:
    import torch

    (x,) = torch_of(a["x"])
    return lambda: torch.cumsum(x, dim=1)


CUMSUM = Spec(
    kernel="cumsum_rows",
    inputs=lambda case, rng: {"x": _x(case, rng, 1)},
    outputs={"out": Out(lambda case: case.shape)},
    shapes=row_shapes,
    reference=lambda a, case: {"out": np.cumsum(a["x"].astype(F64), axis=1)},
    # Each prefix is a sum of up to `cols` terms: its rounding is a fraction of their size.
    scale=lambda a, case: {"out": np.cumsum(np.abs(a["x"].astype(F64)), axis=1)},
    tolerance=lambda case: tol(np.float32, compound=True),
    bytes=lambda case: 8 * elements(case.shape),
    flops=lambda case: elements(case.shape),
    bench_shapes=BENCH_2D,
    peers={TWIN: _cumsum_twin, f"{TORCH} cumsum": _cumsum_torch},
)

SPECS = [ARGMAX, CROSS_ENTROPY, LOG_SOFTMAX, CUMSUM]
