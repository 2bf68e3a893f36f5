"""The PTX of issue 23's four kernels in the guide's style (crates/oxide-device/tests/
fixtures/natural): the instructions that make hand-written CUDA C++ fast must come out
of the natural spelling too, so a regression shows without a GPU.

- every row and vector is read with 128-bit read-only loads (`ld.global.nc.v4`), several
  issued back to back with no bounds-check branch between them;
- no local memory (a register cache indexed at run time) and no integer division (a
  `step_by` trip count, a modulo per element) in any entry;
- rms_norm reads each row once: the row's cached loads all come before the block
  reduction, and its write phase loads only the weight before its first store;
- no spills, and rms_norm fits two blocks of 512 threads on an SM (64 registers).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.bundled import natural_manifest

KERNELS = ("rms_norm", "bias_gelu", "argmax_rows", "dot", "column_sums")


def _artifacts() -> list[dict]:
    manifest = json.loads(Path(natural_manifest()).read_text())
    return manifest["artifacts"]


def _entry(arch: dict, name: str) -> list[str]:
    ptx = (Path(natural_manifest()).parent / arch["path"]).read_text()
    start = ptx.index(f".entry {name}(")
    return ptx[start : ptx.index("\n}", start)].splitlines()


def _param_words(name: str) -> dict[int, str]:
    """The entry's `.param` index of each kernel parameter's pointer (or value): a slice
    is (pointer, length), a shaped array (pointer, extents, strides), a scalar one."""
    manifest = json.loads(Path(natural_manifest()).read_text())
    spec = next(k for k in manifest["kernels"] if k["entry"] == name)
    words, at = {}, 0
    for p in spec["params"]:
        words[at] = p["name"]
        at += 1 + 2 * len(p["array"]["dims"]) if "array" in p else 2 if "slice" in p["kind"] else 1
    return words


INSTRUCTION = re.compile(r"^\s+(?:@!?%p\d+\s+)?([a-z][\w.]*)\s+(.*?);")


def _origins(lines: list[str], name: str) -> dict[str, set[str]]:
    """Which kernel parameters each 64-bit register's value is computed from (a
    fixpoint over the entry's instructions; loaded data counts as none)."""
    params = _param_words(name)
    origin: dict[str, set[str]] = {}
    changed = True
    while changed:
        changed = False
        for line in lines:
            m = INSTRUCTION.match(line)
            if not m or not m.group(2).startswith("%rd"):
                continue
            op, operands = m.group(1), m.group(2)
            dst = operands.split(",")[0].strip()
            if op.startswith("ld.param"):
                word = re.search(rf"{name}_param_(\d+)", operands)
                index = int(word.group(1)) if word else -1
                new = {params[index]} if index in params else set()
            elif op.startswith("ld."):
                continue
            else:
                sources = re.findall(r"%rd\d+", operands)[1:]
                new = set().union(*(origin.get(r, set()) for r in sources))
            if not new <= origin.get(dst, set()):
                origin[dst] = origin.get(dst, set()) | new
                changed = True
    return origin


def _loads(lines: list[str], name: str) -> list[tuple[int, str]]:
    """(line, parameter read) of each 128-bit global load."""
    origin = _origins(lines, name)
    out = []
    for i, line in enumerate(lines):
        if "ld.global.nc.v4" in line:
            reg = re.search(r"\[(%rd\d+)", line)
            assert reg, line
            out.append((i, "+".join(sorted(origin.get(reg.group(1), {"?"})))))
    return out


def _longest_unbroken_run(lines: list[str]) -> int:
    """The most 128-bit loads in a row with no branch, label or store between them."""
    best = run = 0
    for line in lines:
        if "ld.global.nc.v4" in line:
            run += 1
            best = max(best, run)
        elif re.match(r"^\s*(\$L\w+:|@|bra|st\.|bar\.)", line.strip()) or "bra" in line:
            run = 0
    return best


@pytest.mark.parametrize(
    ("name", "run"),
    [("rms_norm", 8), ("bias_gelu", 8), ("argmax_rows", 4), ("dot", 4), ("column_sums", 4)],
)
def test_rows_and_vectors_load_128_bits_several_at_a_time(name: str, run: int) -> None:
    """rms_norm's 8 cached vectors; bias_gelu's group of 4 vectors of two inputs; the
    dot's 2 of each of its two; argmax's and the column sums' group of 4: all issued
    before the first is used or checked."""
    for arch in _artifacts():
        lines = _entry(arch, name)
        assert _longest_unbroken_run(lines) >= run, f"{name} ({arch['arch']})"
        stores = name not in ("argmax_rows", "dot")
        assert any("st.global.v4" in line for line in lines) == stores, name


@pytest.mark.parametrize("name", KERNELS)
def test_no_local_memory_and_no_integer_division(name: str) -> None:
    for arch in _artifacts():
        body = "\n".join(_entry(arch, name))
        assert ".local" not in body and "local.u" not in body, f"{name} uses local memory"
        assert not re.search(r"\b(div|rem)\.[su](16|32|64)\b", body), f"{name} divides"


def test_rms_norm_reads_each_row_once() -> None:
    """x's row goes into registers (8 vectors a thread, loaded together) before the block
    reduction; the write phase's vector loads for those 8 slots then read only the
    weight: the row itself comes from the registers. (Later loads of x are the paths of
    rows longer than the cache and of misaligned views.)"""
    for arch in _artifacts():
        lines = _entry(arch, "rms_norm")
        loads = _loads(lines, "rms_norm")
        bars = [i for i, line in enumerate(lines) if "bar.sync" in line]
        assert [p for i, p in loads if i < bars[0]][:8] == ["x"] * 8, arch["arch"]
        assert [p for i, p in loads if i > bars[-1]][:8] == ["weight"] * 8, arch["arch"]


def test_no_spills_and_two_row_blocks_an_sm() -> None:
    for arch in _artifacts():
        report = arch["ptxas"]
        assert report is not None, "ptxas verified the PTX"
        for name in KERNELS:
            assert report[name]["spill_store_bytes"] == 0, (name, arch["arch"])
        assert report["rms_norm"]["registers"] <= 64, arch["arch"]
