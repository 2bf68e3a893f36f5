"""pyoxide/_twins.py launches kernels_sm90a's GEMM with that crate's tile, block and
shared-memory size, and kernels_rs's with its tile: its copies of those constants must
equal the Rust ones (the kernel would trap on too little shared memory, or leave tiles
of c unwritten on a wrong tile size)."""

from __future__ import annotations

import re
from pathlib import Path

from pyoxide import _twins
from pyoxide.backends.cupy import _tensormap

REPO = Path(__file__).resolve().parents[1]


def rust_consts(path: Path) -> dict[str, int]:
    text = path.read_text()
    found = re.findall(r"pub const (\w+): (?:u32|usize) = ([0-9_]+);", text)
    return {name: int(value.replace("_", "")) for name, value in found}


def test_the_twin_launch_matches_kernels_sm90a() -> None:
    rust = rust_consts(REPO / "kernels_sm90a" / "src" / "gemm_sm90.rs")
    assert rust["SM90_BM"] == _twins.SM90_BM
    assert rust["SM90_BN"] == _twins.SM90_BN
    assert rust["SM90_THREADS"] == _twins.SM90_THREADS
    assert rust["SM90_SHARED_BYTES"] == _twins.SM90_SHARED_BYTES
    assert rust["TENSOR_MAP_BYTES"] == _tensormap.MAP_BYTES


def test_the_plain_launch_matches_kernels_rs() -> None:
    rust = rust_consts(REPO / "kernels_rs" / "src" / "gemm.rs")
    assert rust["GEMM_TILE"] == _twins.PLAIN_TILE


def test_every_twin_is_a_kernel_of_kernels_sm90a() -> None:
    text = (REPO / "kernels_sm90a" / "src" / "gemm_sm90.rs").read_text()
    kernels = set(re.findall(r"#\[kernel\]\s*(?:#\[[^\]]*\]\s*)*pub fn (\w+)", text))
    assert set(_twins.TWINS.values()) <= kernels, kernels
