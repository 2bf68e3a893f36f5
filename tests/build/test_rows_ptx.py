"""The row and tile kernels' PTX (softmax_rows, layernorm_rows, transpose): the
instructions that make them fast must be there, so a regression to scalar or
coherent loads, or to a register cache in local memory, shows without a GPU.

The row kernels call one non-inlined function per path (see kernels_rs/src/rows.rs),
so their code is the entry plus the functions it calls."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.bundled import kernels_manifest, load_manifest


def _ptx_texts() -> list[tuple[str, str]]:
    base = Path(kernels_manifest()).parent
    return [(a["arch"], (base / a["path"]).read_text()) for a in load_manifest()["artifacts"]]


def _function(ptx: str, header: str) -> str:
    start = ptx.index(header)
    return ptx[start : ptx.index("\n}", start)]


def _code(ptx: str, entry: str) -> dict[str, str]:
    """The entry's body and the bodies of the functions it calls, by name."""
    body = _function(ptx, f".entry {entry}(")
    called = set(re.findall(r"call(?:\.uni)?\s*(?:\([^)]*\),\s*)?(\w+)", body))
    out = {entry: body}
    for name in sorted(called):
        m = re.search(rf"^\.func\s+(?:\([^)]*\)\s*)?{name}\(", ptx, re.MULTILINE)
        if m:
            out[name] = ptx[m.start() : ptx.index("\n}", m.start())]
    return out


EXPECTED = {
    # 128-bit read-only loads and 128-bit stores, exp from libdevice, block reductions.
    "softmax_rows": [
        r"ld\.global\.nc\.v4\.f32",
        r"st\.global\.v4\.f32",
        r"ld\.global\.nc\.f32",
        r"ex2\.approx",
        r"shfl\.sync\.bfly\.b32",
        r"bar\.sync",
    ],
    "layernorm_rows": [
        r"ld\.global\.nc\.v4\.f32",
        r"st\.global\.v4\.f32",
        r"rsqrt\.approx\.f32",
        r"fma\.rn\.f32",
        r"shfl\.sync\.bfly\.b32",
        r"bar\.sync",
    ],
    **{
        f"transpose_{t}_{rows}": [
            rf"ld\.global\.nc\.{t}",
            rf"st\.shared\.b{bits}",
            rf"ld\.shared\.b{bits}",
            r"bar\.sync",
        ]
        for t, bits in (("f32", 32), ("f64", 64))
        for rows in (64, 32)
    },
}


@pytest.mark.parametrize("entry", sorted(EXPECTED))
def test_fast_paths_have_their_instructions(entry: str) -> None:
    for arch, ptx in _ptx_texts():
        code = "\n".join(_code(ptx, entry).values())
        for pattern in EXPECTED[entry]:
            assert re.search(pattern, code), f"{entry} ({arch}) lacks {pattern}"
        assert not re.search(r"call[^;]*__nv_", code), "libdevice is linked and inlined"


@pytest.mark.parametrize("entry", ["softmax_rows", "layernorm_rows"])
def test_each_row_path_is_a_function_of_its_own(entry: str) -> None:
    """Four paths (cached or streamed rows, vector or scalar access), each compiled
    apart so that one path's registers do not crowd another's."""
    for _, ptx in _ptx_texts():
        assert len(_code(ptx, entry)) - 1 >= 4


def test_transpose_fills_an_sm_without_spilling() -> None:
    """At most 64 registers a thread (launch_bounds(256, 4): four 256-thread blocks an
    SM), none spilled, and a 64 x 65 shared tile (64 x 64 plus a padding column), for
    both tuned tile heights (64 and 32 rows)."""
    for art in load_manifest()["artifacts"]:
        for entry, size in [(f"transpose_{t}_{rows}", size) for t, size in
                            (("f32", 4), ("f64", 8), ("u32", 4)) for rows in (64, 32)]:  # fmt: skip
            stats = art["ptxas"][entry]
            assert stats["spill_store_bytes"] == 0, (entry, art["arch"], stats)
            assert stats["registers"] <= 64, (entry, art["arch"], stats)
            assert stats["shared_bytes"] >= 64 * 65 * size, (entry, art["arch"], stats)
