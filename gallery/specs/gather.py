"""Spec of gallery/src/gather.rs: embedding, `out` of (n, dim) from a table of n + 7 rows."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pyoxide.spec import Case, Out, exact_tol, torch_peer

sys.path.insert(0, str(Path(__file__).parent))  # the specs' shared helpers
from _gallery import TORCH, TWIN, Peer, ceil_div, row_spec, twin_kernel, vec4


def _vocab(case: Case) -> int:
    return case.shape[0] + 7


def _inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    n, dim = case.shape
    return {
        "table": case.normal(rng, shape=(_vocab(case), dim)),
        "ids": rng.integers(0, _vocab(case), n),
    }


def _twin(name: str, grid: Callable[[int, int], tuple[int, ...]]) -> Peer:
    """The C++ twin `name` (gallery/cuda/gather.cu), 256 threads a block, on the grid
    `grid(n, dim)`."""

    def peer(a: dict[str, Any]) -> Callable[[], Any]:
        table, ids, out = a["table"], a["ids"], a["out"]
        n, dim = out.shape
        vec4(out.shape, name)
        kernel = twin_kernel("gather", name)
        return lambda: kernel(grid(n, dim), (256,), (table, ids, out, np.int32(dim)))

    return peer


EMBEDDING = row_spec(
    kernel="embedding",
    inputs=_inputs,
    outputs={"out": Out()},
    reference=lambda a, case: {"out": a["table"][a["ids"]]},
    tolerance=exact_tol,
    bytes=lambda case: 8 * case.size + 8 * case.shape[0],
    flops=lambda case: 0,
    peers={
        TWIN: _twin("embedding", lambda n, dim: (n,)),
        f"{TORCH} embedding": torch_peer(
            lambda torch, table, ids: torch.nn.functional.embedding(ids, table), "table", "ids"
        ),
    },
)


# The same gather by row segments (gallery/src/gather.rs): the same checks, PyTorch peer
# and shapes, so bench_gallery shows both traversals against PyTorch in one run.
EMBEDDING_SEGMENTS = dataclasses.replace(
    EMBEDDING,
    kernel="embedding_segments",
    peers={
        **EMBEDDING.peers,
        TWIN: _twin("embedding_segments", lambda n, dim: (n, ceil_div(dim // 4, 256))),
    },
)

SPECS = [EMBEDDING, EMBEDDING_SEGMENTS]
