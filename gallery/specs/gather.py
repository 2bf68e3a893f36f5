"""Spec of gallery/src/gather.rs: embedding, `out` of (n, dim) from a table of n + 7 rows."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, exact_tol, torch_peer

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import TORCH, TWIN, ceil_div, row_spec, twin_kernel, vec4


def _vocab(case: Case) -> int:
    return case.shape[0] + 7


def _inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    n, dim = case.shape
    return {
        "table": case.normal(rng, shape=(_vocab(case), dim)),
        "ids": rng.integers(0, _vocab(case), n),
    }


def _twin(a: dict[str, Any]) -> Callable[[], Any]:
    """The C++ twin (gallery/cuda/gather.cu): grid (rows, segments of 256 float4)."""
    table, ids, out = a["table"], a["ids"], a["out"]
    n, dim = out.shape
    vec4(out.shape, "embedding")
    kernel = twin_kernel("gather", "embedding")
    return lambda: kernel((n, ceil_div(dim // 4, 256)), (256,), (table, ids, out, np.int32(dim)))


EMBEDDING = row_spec(
    kernel="embedding",
    inputs=_inputs,
    outputs={"out": Out()},
    reference=lambda a, case: {"out": a["table"][a["ids"]]},
    tolerance=exact_tol,
    bytes=lambda case: 8 * case.size + 8 * case.shape[0],
    flops=lambda case: 0,
    peers={
        TWIN: _twin,
        f"{TORCH} embedding": torch_peer(
            lambda torch, table, ids: torch.nn.functional.embedding(ids, table), "table", "ids"
        ),
    },
)


SPECS = [EMBEDDING]
