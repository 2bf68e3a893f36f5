"""kernels_sm90a's GEMM instances as ptxas takes them, without a GPU: every tuned
instance (the tiles and splits its `#[tune]` lists: helpers/bundled.py) keeps its
accumulators in registers (no stack, no spill), and the split ones
(`#[cluster_launch(SPLIT)]`) carry their cluster shape and the distributed-shared-memory
reduction of kernels_sm90a/src/gemm_sm90_split.rs: `mapa` + `ld.shared::cluster.v4.f32`
from every rank, cluster barriers in arrive/wait pairs (two a tile for the producer
warpgroup, two for the consumers), the proxy fence before the ring's stages are loaded
again. The unsplit ones have none of it (the hand pick is the kernel it was). The
swapped ones (BM 64 and 16) multiply b's columns by a's rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.bundled import sm90_gemm_instances, sm90a_kernels_manifest

ENTRIES = [*sm90_gemm_instances("gemm_bf16"), *sm90_gemm_instances("gemm_bf16_bf16")]
#: Chunks each consumer thread sums at once (gemm_sm90_split.rs's UNROLL).
UNROLL = 4


def _artifact() -> tuple[dict, str]:
    path = Path(sm90a_kernels_manifest())
    manifest = json.loads(path.read_text())
    (art,) = manifest["artifacts"]
    return art, (path.parent / art["path"]).read_text()


def _body(ptx: str, entry: str) -> str:
    start = ptx.index(f".entry {entry}(")
    return ptx[start : ptx.index("\n}", start)]


@pytest.mark.parametrize("entry", ENTRIES)
def test_every_instance_keeps_its_accumulators_in_registers(entry: str) -> None:
    art, ptx = _artifact()
    stats = art["ptxas"][entry]
    assert stats["stack_frame_bytes"] == 0 and stats["spill_store_bytes"] == 0, stats
    assert stats["spill_load_bytes"] == 0 and stats["registers"] <= 168, stats
    assert ".local" not in _body(ptx, entry)


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_split_instance_reduces_through_distributed_shared_memory(entry: str) -> None:
    _, ptx = _artifact()
    body = _body(ptx, entry)
    split = int(entry.split("_")[-2])
    cluster = re.findall(r"\.reqnctapercluster (\d+), (\d+), (\d+)", body)
    arrives = body.count("barrier.cluster.arrive")
    if split == 1:
        assert cluster == [] and arrives == 0 and "mapa" not in body
        assert "ld.shared::cluster" not in body and "barrier.cluster.wait" not in body
        return
    assert cluster == [(str(split), "1", "1")]
    # unaligned forms (a lone thread of the producer's warp issues the loads)
    assert "barrier.cluster.arrive.aligned" not in body
    assert arrives == body.count("barrier.cluster.wait") == 4, arrives
    # each rank's share: UNROLL chunks from each of the SPLIT blocks, in flight together
    loads = re.findall(r"ld\.shared::cluster\.v4\.f32 \{[^}]*\}, \[(%r\d+)\];", body)
    assert len(loads) == UNROLL * split, len(loads)
    mapped = set(re.findall(r"mapa\.shared::cluster\.u32 (%r\d+), %r\d+, %r\d+;", body))
    assert set(loads) <= mapped, "every DSMEM load reads a mapa address"
    # the partial's generic writes are fenced before the second barrier, after which TMA
    # loads the next tile over it
    fenced = r"fence\.proxy\.async\.shared::cta;\s*(//[^\n]*\s*)*barrier\.cluster\.arrive;"
    assert len(re.findall(fenced, body)) == 1


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_swapped_instance_multiplies_b_columns_by_a_rows(entry: str) -> None:
    """BM = 64 and 16 instances compute cᵀ = bᵀ·aᵀ (gemm_sm90_swap.rs): every product is
    an m64nBMk16 with b's stage as the transposed (MN-major) A operand and a's rows as the
    K-major B operand, BN / 128 of them per 16 k; the 128-row instances keep their
    m64nBNk16 with B transposed. Each instance's map of a boxes its BM rows."""
    _, ptx = _artifact()
    body = _body(ptx, entry)
    bn, bm = int(entry.split("_")[-3]), int(entry.split("_")[-1])
    forms = re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m64n\d+k16)\.f32\.bf16\.bf16 "
                       r"\{[^}]*\}, %rd\d+, %rd\d+, p, 1, 1, (\d), (\d);", body)  # fmt: skip
    manifest = json.loads(Path(sm90a_kernels_manifest()).read_text())
    (spec,) = [k for k in manifest["kernels"] if k["entry"] == entry]
    boxes = {m["array"]: m["box_rows"] for m in spec["tensor_maps"]["maps"]}
    assert boxes == {"a": bm, "b": 64, "c": 64}, boxes
    if bm < 128:
        assert forms and set(forms) == {(f"m64n{bm}k16", "1", "0")}, set(forms)
        assert len(forms) == 4 * bn // 128, len(forms)
    else:
        assert forms and set(forms) == {(f"m64n{bn}k16", "0", "1")}, set(forms)
