"""`pyoxide verify` end to end: every bundled kernel passes its spec on the emulator
(the CI run of the scorecard), every deliberately wrong kernel of
tests/fixtures/wrong_kernels is flagged with its name and a reproducer that fails the
same way, and the `--json` report follows the schema oxide-abi checks in."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from helpers.bundled import emu_kernels_manifest, wrong_kernels_manifest
from helpers.probes import requires_gpu

from pyoxide._manifest.abi import VERIFY_REPORT_VERSION, ExitCode
from pyoxide.cli import cli
from pyoxide.verify._sanitize import parse_log

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "crates" / "oxide-abi" / "verify-report.schema.json"

# Each wrong kernel and what verify must call its failure.
BUGS = {
    "off_by_one_tail": "unwritten element",
    # strict mode (on in verify): the slot read before its write holds the NaN poison
    "missing_barrier": "unwritten element",
    "shared_race": "wrong result",
    "whole_blocks_only": "unwritten element",
    "oob_write": "out-of-bounds write",
    "relu_never_written": "unwritten element",
}


def verify(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["verify", *args, "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA.read_text())


@pytest.fixture(scope="module")
def wrong_report(schema: dict[str, Any]) -> dict[str, Any]:
    code, report = verify(str(wrong_kernels_manifest()))
    assert code == ExitCode.VERIFY_FAILED
    jsonschema.validate(report, schema)
    return report


def test_every_bundled_kernel_passes_200_cases_on_the_emulator(schema: dict[str, Any]) -> None:
    # The manifest the kernel suite uses (built here with its emulator), whose specs
    # verify finds beside the crate it was built from: kernels_rs/specs.
    code, report = verify(str(emu_kernels_manifest()))
    jsonschema.validate(report, schema)
    assert report["version"] == VERIFY_REPORT_VERSION
    failed = {k["kernel"]: k["failure"] for k in report["kernels"] if not k["ok"]}
    assert not failed and code == ExitCode.OK, failed
    assert report["unspecified"] == []  # every bundled kernel has a spec
    assert all(k["cases"] >= 200 for k in report["kernels"])


@pytest.mark.parametrize("kernel", sorted(BUGS))
def test_verify_flags_each_wrong_kernel(wrong_report: dict[str, Any], kernel: str) -> None:
    verdict = next(k for k in wrong_report["kernels"] if k["kernel"] == kernel)
    assert not verdict["ok"]
    failure = verdict["failure"]
    assert failure["what"] == BUGS[kernel], failure
    assert f'"{kernel}"' in failure["reproducer"]
    assert failure["case"]["shape"][0] <= 257, "not shrunk to a small case"


def test_a_correct_kernel_beside_them_passes(wrong_report: dict[str, Any]) -> None:
    verdict = next(k for k in wrong_report["kernels"] if k["kernel"] == "double")
    assert verdict["ok"] and verdict["cases"] == 200 and verdict["worst_error"] == 0


def test_the_reproducer_fails_the_same_way(wrong_report: dict[str, Any]) -> None:
    failure = next(k for k in wrong_report["kernels"] if k["kernel"] == "oob_write")["failure"]
    cmd = failure["reproducer"]
    assert "\n" not in cmd
    python, flag, code = shlex.split(cmd)  # one shell-quoted line
    assert (python, flag) == ("python", "-c")
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert r.returncode != 0
    assert "AssertionError: oob_write" in r.stderr and "past its end" in r.stderr


def test_text_output_names_kernel_case_and_reproducer() -> None:
    result = CliRunner().invoke(
        cli, ["verify", str(wrong_kernels_manifest()), "-k", "off_by_one", "--cases", "50"]
    )
    assert result.exit_code == ExitCode.VERIFY_FAILED
    out = result.stdout
    assert "FAIL  off_by_one_tail [emu]: unwritten element" in out
    assert "smallest failing case: shape 1, f32" in out and "reproduce: python -c" in out


def test_unknown_kernel_and_missing_specs_exit_with_the_table() -> None:
    result = CliRunner().invoke(cli, ["verify", str(wrong_kernels_manifest()), "-k", "nosuch"])
    assert result.exit_code == ExitCode.NOT_FOUND
    result = CliRunner().invoke(
        cli, ["verify", str(REPO / "tests" / "fixtures" / "hostile_kernels")]
    )
    assert result.exit_code == ExitCode.USAGE and "no specs/ folder" in result.stderr


def test_sanitizer_log_is_counted_per_kernel() -> None:
    # The shape of compute-sanitizer's memcheck report (one error block, then the summary).
    log = (
        "========= COMPUTE-SANITIZER\n"
        "========= Invalid __global__ write of size 4 bytes\n"
        "=========     at oob_write+0x1d0\n"
        "=========     by thread (0,0,0) in block (0,0,0)\n"
        "=========     Address 0x7f0000000400 is out of bounds\n"
        "=========\n"
        "========= ERROR SUMMARY: 1 error\n"
    )
    got = parse_log(log, ["oob_write", "double"])
    assert got["errors"] == 1 and got["by_kernel"] == {"oob_write": 1}
    assert got["first_error"].startswith("Invalid __global__ write")


@pytest.mark.gpu
@requires_gpu("verify runs the wrong kernels on CuPy arrays")
def test_verify_flags_each_wrong_kernel_on_the_gpu(schema: dict[str, Any]) -> None:
    code, report = verify(str(wrong_kernels_manifest()), "--backend", "cupy", "--cases", "60")
    jsonschema.validate(report, schema)
    assert code == ExitCode.VERIFY_FAILED
    flagged = {k["kernel"] for k in report["kernels"] if not k["ok"]}
    # A race or a missing barrier may happen to give the right answer on a GPU (warps
    # run in an order the emulator's does not): the sanitizer is what catches those.
    assert flagged >= set(BUGS) - {"missing_barrier", "shared_race"}
    assert "double" not in flagged
