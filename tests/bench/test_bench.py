"""`pyoxide bench`: the H200 report kept in docs/scorecards/ drawn and tabled without a
GPU (`--from-json`), docs/scorecards.md is what scripts/scorecards generates from the
reports beside it, and on a GPU a real bench run of one kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.bundled import emu_kernels_manifest
from helpers.probes import requires_gpu
from helpers.scripts import load_script

from pyoxide.bench import parse_sizes
from pyoxide.cli import cli

REPO = Path(__file__).resolve().parents[2]
CARDS = REPO / "docs" / "scorecards"


def test_sizes_are_parsed_as_shapes() -> None:
    assert parse_sizes(["2^20,1e3", "4096x1024"]) == [(1 << 20,), (1000,), (4096, 1024)]
    with pytest.raises(ValueError):
        parse_sizes(["lots"])


def test_a_saved_report_is_tabled_and_plotted_without_a_gpu(tmp_path: Path) -> None:
    png = tmp_path / "roofline.png"
    report = json.loads((CARDS / "bench.json").read_text())
    result = CliRunner().invoke(
        cli, ["bench", "--from-json", str(CARDS / "bench.json"), "--plot", str(png)]
    )
    assert result.exit_code == 0, result.output
    for row in report["rows"]:
        assert f"| {row['kernel']} | {'×'.join(map(str, row['shape']))} |" in result.stdout
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 50_000  # two charts, not a blank


def test_scorecards_md_is_generated_from_the_reports() -> None:
    text = load_script("scorecards").render(CARDS, "scorecards/roofline.png")
    assert text == (REPO / "docs" / "scorecards.md").read_text(), (
        "docs/scorecards.md is stale: run scripts/scorecards"
    )
    assert "| vecadd | 200 | 200 |" in text


@pytest.mark.gpu
@requires_gpu("pyoxide bench times kernels on the GPU")
def test_bench_times_a_kernel_against_the_roofline_and_its_peers() -> None:
    args = [str(emu_kernels_manifest()), "-k", "vecadd", "--sizes", "2^22", "--reps", "5"]
    result = CliRunner().invoke(cli, ["bench", *args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (row,) = report["rows"]
    assert row["kernel"] == "vecadd" and row["shape"] == [1 << 22]
    assert 0.05 < row["roofline_fraction"] < 1.2 and row["checked_error"] < 1e-6
    assert row["ms"]["min"] <= row["ms"]["median"] <= row["ms"]["max"]
    assert "cupy.add" in row["peers"] and row["peers"]["cupy.add"]["ratio"] > 0
