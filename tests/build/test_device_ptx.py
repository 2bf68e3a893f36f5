"""The device library's kernels in kernels_rs: signatures in the manifest, the PTX
instructions each must lower to (so a regression to, say, a global-memory "shared"
array or a non-atomic add shows here, without a GPU), and ptxas's verdict."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.bundled import kernels_manifest, load_manifest

# entry -> [(name, kind, type, mutable[, array])]
SIGNATURES = {
    "reduce_sum_f32": [("x", "slice", "f32", False), ("out", "atomic_slice", "f32", True)],
    "reduce_blocks_f32": [("x", "slice", "f32", False), ("partial", "disjoint_slice", "f32", True)],
    "histogram": [("x", "slice", "u32", False), ("bins", "atomic_slice", "u32", True)],
    "matmul_tiled": [
        ("a", "array", "f32", False, {"layout": "c", "dims": ["m", "k"]}),
        ("b", "array", "f32", False, {"layout": "strided", "dims": ["k", "n"]}),
        ("c", "disjoint_array", "f32", True, {"layout": "c", "dims": ["m", "n"]}),
    ],
    **{
        name: [
            ("a", "array", elem, False, {"layout": "c", "dims": ["m", "k"]}),
            ("b", "array", elem, False, {"layout": "c", "dims": ["k", "n"]}),
            ("c", "disjoint_array", out, True, {"layout": "c", "dims": ["m", "n"]}),
        ]
        for name, elem, out in (
            ("sgemm_128", "f32", "f32"),
            ("sgemm_64", "f32", "f32"),
            ("sgemm_256", "f32", "f32"),
            ("gemm_bf16", "bf16", "f32"),
            ("gemm_bf16_bf16", "bf16", "bf16"),
        )
    },
    "softmax_rows": [
        ("x", "array", "f32", False, {"layout": "c", "dims": ["rows", "cols"]}),
        ("out", "disjoint_array", "f32", True, {"layout": "c", "dims": ["rows", "cols"]}),
    ],
    "activate": [
        ("x", "slice", "f32", False),
        ("coeffs", "slice", "f32", False),
        ("activation", "scalar", "u32", False),
        ("out", "disjoint_slice", "f32", True),
    ],
    "histogram_global": [("x", "slice", "u32", False), ("bins", "atomic_slice", "u32", True)],
    "scan_blocks_u32": [("x", "slice", "u32", False), ("out", "disjoint_slice", "u32", True)],
    "scale_f64": [
        ("factor", "scalar", "f64", False),
        ("x", "slice", "f64", False),
        ("out", "disjoint_slice", "f64", True),
    ],
}

# entry -> regexes its PTX body must match
INSTRUCTIONS = {
    "reduce_sum_f32": [
        r"shfl\.sync\.bfly\.b32",
        r"bar\.sync",
        r"st\.shared\.",
        r"ld\.shared\.",
        r"atom\.relaxed\.gpu\.add\.f32",
    ],
    # No atomics: the block's first thread writes its partial.
    "reduce_blocks_f32": [
        r"shfl\.sync\.bfly\.b32",
        r"bar\.sync",
        r"st\.shared\.",
        r"ld\.shared\.",
        r"st\.global\.(b32|f32)",
    ],
    "histogram_global": [r"atom\.relaxed\.gpu\.add\.u32"],
    # Block-scope atomics on the shared copy, device-scope ones to flush it.
    "histogram": [
        r"atom\.relaxed\.cta\.add\.u32",
        r"atom\.relaxed\.gpu\.add\.u32",
        r"bar\.sync",
        r"st\.shared\.",
    ],
    "matmul_tiled": [r"bar\.sync", r"st\.shared\.", r"ld\.shared\.", r"(fma|mul)\.rn\.f32"],
    # 16-byte global and shared vectors, FMAs on registers (no local-memory accumulator),
    # at every tuned tile height.
    **{
        entry: [
            r"ld\.global(\.nc)?\.v4\.(f32|b32)",  # .nc: the link step marks &[T] readonly
            r"ld\.shared\.v4\.(f32|b32)",
            r"fma\.rn\.f32",
            r"bar\.sync",
        ]
        for entry in ("sgemm_128", "sgemm_64")
    },
    # sgemm_256's own body: a 3-stage cp.async pipeline (A as 4-byte copies that transpose
    # it, B as 16-byte ones) whose shared destinations are 32-bit offsets, waited for one
    # step behind.
    "sgemm_256": [
        r"cp\.async\.ca\.shared\.global \[%r\d+(\+\d+)?\], \[%rd\d+(\+\d+)?\], 4",
        r"cp\.async\.cg\.shared\.global \[%r\d+(\+\d+)?\], \[%rd\d+(\+\d+)?\], 16",
        r"cp\.async\.commit_group",
        r"cp\.async\.wait_group 1",
        r"ld\.shared\.v4\.(f32|b32)",
        r"fma\.rn\.f32",
        r"bar\.sync",
    ],
    # Tensor cores fed by ldmatrix from a cp.async pipeline.
    "gemm_bf16": [
        r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32",
        r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16",
        r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16",
        r"cp\.async\.cg\.shared\.global",
        r"cp\.async\.commit_group",
        r"cp\.async\.wait_group",
    ],
    # tanh and erf from libdevice, inlined; Horner's rule as fma.
    "activate": [r"fma\.rn\.f32", r"ex2\.approx"],
    # Warp scans, dynamic shared memory, and gpu_assert!'s __assertfail (CUDA's assert).
    "scan_blocks_u32": [
        r"shfl\.sync\.up\.b32",
        r"bar\.sync",
        r"st\.shared\.",
        r"ld\.shared\.",
        r"call\.uni __assertfail",
        r"\btrap;",
    ],
}

# Kernels that stage data in shared memory: ptxas must report it.
SHARED = {
    "histogram": 1024 * 4,
    "reduce_sum_f32": 32 * 4,
    "matmul_tiled": 2 * 16 * 16 * 4,
    # sgemm's shared memory is sized for its tallest tuned tile, at every height.
    "sgemm_128": 2 * 16 * (132 + 128) * 4,
    "sgemm_64": 2 * 16 * (132 + 128) * 4,
    # sgemm_256's own body: three stages of 8 k (A transposed, rows padded by 4).
    "sgemm_256": 3 * 8 * (260 + 128) * 4,
    "gemm_bf16": 3 * 2 * 128 * 32 * 2,
    "softmax_rows": 2 * 32 * 4,
}


def _kernel(m: dict, entry: str) -> dict:
    matches = [k for k in m["kernels"] if k["entry"] == entry]
    assert len(matches) == 1, f"{entry} not in {[k['entry'] for k in m['kernels']]}"
    return matches[0]


def _body(ptx: str, entry: str) -> str:
    start = ptx.index(f".entry {entry}(")
    return ptx[start : ptx.index("\n}", start)]


def _ptx_texts() -> list[tuple[dict, str]]:
    m = load_manifest()
    base = Path(kernels_manifest()).parent
    return [(art, (base / art["path"]).read_text()) for art in m["artifacts"]]


@pytest.mark.parametrize("entry", sorted(SIGNATURES))
def test_signature_in_the_manifest(entry: str):
    k = _kernel(load_manifest(), entry)
    got = [
        (p["name"], p["kind"], p["type"], p["mutable"], *([p["array"]] if "array" in p else []))
        for p in k["params"]
    ]
    assert got == SIGNATURES[entry]
    assert k["is_unsafe"] is False, "the device library's kernels need no unsafe fn"


def test_launch_bounds_reach_the_ptx():
    for _, ptx in _ptx_texts():
        assert re.search(r"\.maxntid 256\b", _body(ptx, "matmul_tiled"))
        assert re.search(r"\.maxntid 1024\b", _body(ptx, "reduce_sum_f32"))


@pytest.mark.parametrize("entry", sorted(INSTRUCTIONS))
def test_ptx_has_the_expected_instructions(entry: str):
    for art, ptx in _ptx_texts():
        body = _body(ptx, entry)
        for pattern in INSTRUCTIONS[entry]:
            assert re.search(pattern, body), f"{entry} ({art['arch']}) lacks {pattern}"
        # libdevice is linked and inlined: no call to an __nv_ function remains.
        assert not re.search(r"call[^;]*__nv_", body)


@pytest.mark.parametrize("entry", sorted(INSTRUCTIONS))
def test_ptxas_accepted_it(entry: str):
    for art, _ in _ptx_texts():
        assert entry in art["ptxas"], f"ptxas did not verify {entry} for {art['arch']}"


@pytest.mark.parametrize("entry", sorted(SHARED))
def test_shared_memory_is_shared(entry: str):
    for art, ptx in _ptx_texts():
        stats = art["ptxas"][entry]
        assert stats["shared_bytes"] >= SHARED[entry], (entry, art["arch"], stats)
        assert stats["barriers"] >= 1
        # The statics live in .shared, not in global memory.
        assert re.search(r"^\s*\.shared \.align 16 \.b8 \w+\[\d+\];", ptx, re.MULTILINE)


def test_the_one_launch_reduction_has_one_copy_of_its_block_reduction():
    """reduce_sum_f32's block reduction exists once, as in reduce_blocks_f32 (the same
    reduction, no single-thread tail): a copy per side of a branch on the thread index
    splits warp 0 between two `bar.sync`s, and the kernel never finishes on a GPU."""
    for art, ptx in _ptx_texts():
        barriers = {
            entry: len(re.findall(r"\bbar(?:rier)?\.sync", _body(ptx, entry)))
            for entry in ("reduce_sum_f32", "reduce_blocks_f32")
        }
        assert barriers["reduce_sum_f32"] == barriers["reduce_blocks_f32"] >= 1, (
            art["arch"],
            barriers,
        )


def test_dynamic_shared_memory_is_one_extern_array():
    for _, ptx in _ptx_texts():
        assert ptx.count(".extern .shared .align 16 .b8 __oxide_dynamic_shared[];") == 1
        assert "__oxide_dynamic_shared" in _body(ptx, "scan_blocks_u32")


@pytest.mark.parametrize("entry", ["sgemm_128", "sgemm_64", "sgemm_256", "gemm_bf16"])
def test_gemm_accumulators_stay_in_registers(entry: str):
    """A dynamic index into the accumulator array (a loop LLVM left rolled) puts it in
    local memory and costs the GEMMs most of their speed: ptxas must see no stack."""
    for art, _ in _ptx_texts():
        stats = art["ptxas"][entry]
        assert stats["stack_frame_bytes"] == 0 and stats["spill_store_bytes"] == 0, (
            entry,
            art["arch"],
            stats,
        )
