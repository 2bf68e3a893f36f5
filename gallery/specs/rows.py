"""Specs of gallery/src/rows.rs: argmax_rows, cross_entropy_rows, log_softmax_rows and
cumsum_rows over (rows, cols) matrices."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, exact_tol, per_element, torch_peer

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import TORCH, TWIN, row_map_twin, row_spec, row_twin

F64 = np.float64


def _logsumexp(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _rows(case: Case) -> int:
    return case.shape[0]


# --- argmax_rows --------------------------------------------------------------------------


ARGMAX = row_spec(
    kernel="argmax_rows",
    inputs=lambda case, rng: {"x": case.normal(rng, scale=4)},
    outputs={"out": Out(_rows, dtype="u32")},
    reference=lambda a, case: {"out": a["x"].argmax(axis=1).astype(np.uint32)},
    tolerance=exact_tol,
    bytes=lambda case: 4 * case.size + 4 * case.shape[0],
    flops=per_element(1),
    peers={
        TWIN: row_map_twin("rows", "argmax_rows"),
        f"{TORCH} argmax": torch_peer(lambda torch, x: torch.argmax(x, dim=1), "x"),
    },
)


# --- cross_entropy_rows ---------------------------------------------------------------------


def _ce_inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "logits": case.normal(rng, scale=4),
        "target": rng.integers(0, case.shape[1], case.shape[0]),
    }


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


CROSS_ENTROPY = row_spec(
    kernel="cross_entropy_rows",
    inputs=_ce_inputs,
    outputs={"loss": Out(_rows)},
    reference=_ce_reference,
    scale=_ce_scale,
    bytes=lambda case: 4 * case.size + 12 * case.shape[0],
    flops=per_element(4),
    peers={
        TWIN: _ce_twin,
        f"{TORCH} cross_entropy": torch_peer(
            lambda torch, x, t: torch.nn.functional.cross_entropy(x, t, reduction="none"),
            "logits",
            "target",
        ),
    },
)


# --- log_softmax_rows --------------------------------------------------------------------------


LOG_SOFTMAX = row_spec(
    kernel="log_softmax_rows",
    inputs=lambda case, rng: {"x": case.normal(rng, scale=4)},
    outputs={"out": Out()},
    reference=lambda a, case: {"out": a["x"].astype(F64) - _logsumexp(a["x"].astype(F64))},
    scale=lambda a, case: {
        "out": np.abs(a["x"].astype(F64)) + np.abs(_logsumexp(a["x"].astype(F64)))
    },
    bytes=per_element(8),
    flops=per_element(4),
    peers={
        TWIN: row_map_twin("rows", "log_softmax_rows"),
        f"{TORCH} log_softmax": torch_peer(lambda torch, x: torch.log_softmax(x, dim=1), "x"),
    },
)


# --- cumsum_rows -------------------------------------------------------------------------------


CUMSUM = row_spec(
    kernel="cumsum_rows",
    inputs=lambda case, rng: {"x": case.normal(rng)},
    outputs={"out": Out()},
    reference=lambda a, case: {"out": np.cumsum(a["x"].astype(F64), axis=1)},
    # Each prefix is a sum of up to `cols` terms: its rounding is a fraction of their size.
    scale=lambda a, case: {"out": np.cumsum(np.abs(a["x"].astype(F64)), axis=1)},
    bytes=per_element(8),
    flops=per_element(1),
    peers={
        TWIN: row_map_twin("rows", "cumsum_rows"),
        f"{TORCH} cumsum": torch_peer(lambda torch, x: torch.cumsum(x, dim=1), "x"),
    },
)

SPECS = [ARGMAX, CROSS_ENTROPY, LOG_SOFTMAX, CUMSUM]
