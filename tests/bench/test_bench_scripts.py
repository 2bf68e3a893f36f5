"""The benchmark scripts without a GPU: docs/performance.md is what scripts/perf_docs
makes of the saved reports in docs/reports, a saved table lands on that page, every
scripts/bench_* explains itself (`--help`), and the GPU ones say plainly that there is
no GPU instead of failing somewhere inside."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.scripts import load_script

from pyoxide.bench import Table

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (REPO / "scripts").glob("bench_*") if p.suffix == "")
#: The scripts that time kernels on a GPU (the rest run on the host).
GPU = {"bench_attention", "bench_gallery", "bench_gemm", "bench_kernels", "bench_launch",
       "bench_natural", "bench_rows"}  # fmt: skip


def _run(script: str, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / script), *args],
        capture_output=True, text=True, cwd=REPO, timeout=120, env=env,
    )  # fmt: skip


def test_performance_md_is_generated_from_the_reports() -> None:
    result = _run("perf_docs", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_saved_table_lands_on_the_page(tmp_path: Path) -> None:
    perf_docs = load_script("perf_docs")
    table = Table("bench_gemm", "GEMM", ["shape", "÷ cuBLAS"], device="NVIDIA H200")
    table.add("4096×4096×4096", "1.010×")
    table.note("Bar: met.")
    table.save(tmp_path)
    page = perf_docs.page(tmp_path)
    assert "## GEMM\n" in page and "| 4096×4096×4096 | 1.010× |" in page
    assert "NVIDIA H200" in page and "Bar: met." in page
    missing = page.split("## Not measured yet")[1]
    assert "scripts/bench_gemm" not in missing and "scripts/bench_rows --report" in missing
    assert set(perf_docs.COMMANDS) <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_script_explains_itself(script: str) -> None:
    result = _run(script, "--help")
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout and "--smoke" in result.stdout
    # A script that saves a table has its command on the performance page.
    assert ("--report" in result.stdout) == (script in load_script("perf_docs").COMMANDS)


@pytest.mark.parametrize("script", sorted(GPU))
def test_a_gpu_bench_says_there_is_no_gpu(script: str) -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no device, on any machine
    result = _run(script, "--smoke", env=env)
    assert result.returncode == 1
    assert f"scripts/{script} times kernels on a CUDA GPU" in result.stderr, result.stderr
