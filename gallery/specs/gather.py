"""Spec of gallery/src/gather.rs: embedding, `out` of (n, dim) from a table of n + 7 rows."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, Spec

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import BENCH_2D, TORCH, TWIN, elements, row_shapes, torch_of, twin_kernel, vec4


def _vocab(case: Case) -> int:
    return case.shape[0] + 7


def _inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    n, dim = case.shape
    return {
        "table": rng.standard_normal((_vocab(case), dim)).astype(np.float32),
        "ids": rng.integers(0, _vocab(case), n),
    }


def _twin(a: dict[str, Any]) -> Any:
    table, ids, out = a["table"], a["ids"], a["out"]
    n, dim = out.shape
    vec4(out.shape, "embedding")
    kernel = twin_kernel("gather", "embedding")
    return lambda: kernel((n,), (256,), (table, ids, out, np.int32(dim)))


def _torch(a: dict[str, Any]) -> Any:
    import torch

    table, ids = torch_of(a["table"], a["ids"])
    return lambda: torch.nn.functional.embedding(ids, table)


EMBEDDING = Spec(
    kernel="embedding",
    inputs=_inputs,
    outputs={"out": Out(lambda case: case.shape)},
    shapes=row_shapes,
    reference=lambda a, case: {"out": a["table"][a["ids"]]},
    tolerance=lambda case: 0.0,
    bytes=lambda case: 8 * elements(case.shape) + 8 * case.shape[0],
    flops=lambda case: 0,
    bench_shapes=BENCH_2D,
    peers={TWIN: _twin, f"{TORCH} embedding": _torch},
)

SPECS = [EMBEDDING]
