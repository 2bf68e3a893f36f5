"""Issue 27: `pyoxide verify` fails closed and cannot be crashed. Each run here is a child
`pyoxide verify --json` over tests/fixtures/hostile_verify (kernels that write far out of
bounds, hang or trap; correct kernels under specs that are wrong the ways users get them
wrong; spec files whose SPECS is unusable), and each test asserts on the report the child
wrote and its exit status (7, never a signal): every kernel has its verdict, and the
kernels after the hostile ones are verified."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers.bundled import REPO, hostile_verify_manifest
from helpers.probes import requires_gpu

from pyoxide._manifest.abi import ExitCode

SCHEMA = json.loads((REPO / "crates" / "oxide-abi" / "verify-report.schema.json").read_text())

# kernel -> (what its failure must be, a piece of its message); None: it must pass.
EXPECTED: dict[str, tuple[str, str] | None] = {
    "oob_wild": ("raised", "invalid memory access"),  # an address nothing maps
    "oob_near": ("out-of-bounds write", "`out` was accessed at element 2001, past its end"),
    "hang": ("timed out", "no answer within the 3 s limit"),
    "traps": ("raised", "trap"),
    "copy": None,  # right after them
    "double": ("wrong result", "the reference is nan"),  # wrong everywhere, one NaN
    "negate": ("spec error", "reference raised ValueError: the reference's own bug (at "),
    "pair": ("spec error", "no value for output(s) thrice"),
    "square": ("spec error", "tolerance is nan"),
    "wrong_late": ("wrong result", "worst at index [1500]"),
    "whole_wrong": ("wrong result", "relative error"),
    "saxpy": None,  # the last spec file's: reached
}
SPEC_FILE_ERRORS = {
    "d_single_spec.py": "SPECS is a single Spec. Fix: a list",
    "e_none.py": "SPECS is None",
    "f_dict.py": "SPECS is a dict",
    "g_misspelt.py": "defines no SPECS (it defines SPEC: a misspelling?)",
    "h_import_raises.py": "RuntimeError: a spec file that does not import",
}


def verify(
    *args: str, timeout: float = 600
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """A child `pyoxide verify ... --json`: its process and its report (schema-checked)."""
    p = subprocess.run(
        [sys.executable, "-m", "pyoxide", "verify", *args, "--json"],
        capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )  # fmt: skip
    assert p.returncode == ExitCode.VERIFY_FAILED, f"exit {p.returncode}\n{p.stderr[-3000:]}"
    report = json.loads(p.stdout)
    jsonschema.validate(report, SCHEMA)
    return p, report


@pytest.fixture(scope="module")
def manifest() -> Path:
    return hostile_verify_manifest()


@pytest.fixture(scope="module")
def report(manifest: Path) -> dict[str, Any]:
    return verify(str(manifest), "--cases", "40", "--timeout", "3")[1]


def verdicts(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k["kernel"]: k for k in report["kernels"]}


def test_every_hostile_kernel_has_its_verdict(report: dict[str, Any]) -> None:
    got = verdicts(report)
    assert list(got) == list(EXPECTED)  # all of them, in spec order: none lost
    for kernel, want in EXPECTED.items():
        v = got[kernel]
        if want is None:
            assert v["ok"] and v["cases"] == v["passed"] == 40, v
            continue
        what, text = want
        assert not v["ok"] and v["failure"]["what"] == what, (kernel, v["failure"])
        assert text in v["failure"]["message"], (kernel, v["failure"]["message"])
        assert v["spec_file"].endswith(".py") and v["failure"]["reproducer"]
    assert not report["ok"] and not report["interrupted"] and report["case_timeout"] == 3


def test_unusable_spec_files_are_named_and_the_others_run(report: dict[str, Any]) -> None:
    errors = {Path(e["file"]).name: e["message"] for e in report["spec_errors"]}
    assert set(errors) == set(SPEC_FILE_ERRORS)
    for name, text in SPEC_FILE_ERRORS.items():
        assert text in errors[name], errors[name]


def test_the_shrinker_stays_in_the_specs_shapes_and_the_same_failure(
    report: dict[str, Any],
) -> None:
    """wrong_late traps outside multiples of 256 and is wrong from 2048 on: the smallest
    case is the spec's 2048 (not a trap at 1), and the first failure (4096) is shown."""
    late = verdicts(report)["wrong_late"]["failure"]
    assert late["case"]["shape"] == [2048] and late["first"]["case"]["shape"] == [4096]
    assert late["first"]["what"] == "wrong result"
    # Its reference asserts its domain: a shape outside the spec's would be a spec error.
    whole = verdicts(report)["whole_wrong"]["failure"]
    assert whole["case"]["shape"] == [256] and whole["first"]["case"]["shape"] == [4096]


def _spec_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "specs.py"
    path.write_text(
        "import os, numpy as np\nfrom pyoxide.spec import Out, Spec\n"
        "def _n(case):\n    return case.n\n"
        "def _same(a, case):\n    return {'out': a['x'].astype(np.float64)}\n" + body
    )
    return path


def test_a_worker_killed_by_a_signal_is_a_crash_and_the_run_goes_on(
    manifest: Path, tmp_path: Path
) -> None:
    specs = _spec_file(tmp_path, (
        "def _x(case, rng):\n"
        "    if case.n > 5:\n        os.abort()\n"
        "    return {'x': rng.standard_normal(case.n).astype(np.float32)}\n"
        "def _y(case, rng):\n    return {'x': rng.standard_normal(case.n).astype(np.float32)}\n"
        "SPECS = [Spec('copy', _x, {'out': Out(_n)}, _same), Spec('negate', _y, {'out': Out(_n)},"
        " lambda a, case: {'out': -a['x'].astype(np.float64)})]\n"
    ))  # fmt: skip
    _, report = verify(str(manifest), "--specs", str(specs), "--cases", "30")
    crashed, after = report["kernels"]
    assert crashed["failure"]["what"] == "crashed" and crashed["passed"] == 6
    assert "signal SIGABRT" in crashed["failure"]["message"]
    assert "specs.py" in crashed["failure"]["message"]  # the frame it died in
    assert after["ok"] and after["cases"] == 30


def test_ctrl_c_writes_the_report_of_what_was_reached(manifest: Path, tmp_path: Path) -> None:
    started = tmp_path / "started"
    specs = _spec_file(tmp_path, (
        "def _x(case, rng):\n"
        f"    open({str(started)!r}, 'w').close()\n"
        "    return {'x': rng.standard_normal(case.n).astype(np.float32)}\n"
        "SPECS = [Spec('copy', _x, {'out': Out(_n)}, _same), Spec('hang', _x, {'out': Out(_n)},"
        " _same), Spec('double', _x, {'out': Out(_n)}, lambda a, c: {'out': 2 * a['x']})]\n"
    ))  # fmt: skip
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from pyoxide.cli import main; sys.argv[0] = 'pyoxide'; main()"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, "verify", str(manifest), "--specs", str(specs), "--json",
         "--cases", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(3)  # copy's 20 cases, then hang's first case spins
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == ExitCode.VERIFY_FAILED, f"exit {p.returncode}\n{err[-2000:]}"
    assert "Aborted" not in err
    report = json.loads(out)
    jsonschema.validate(report, SCHEMA)
    assert report["interrupted"] and not report["ok"]
    got = verdicts(report)
    assert got["copy"]["ok"] and got["hang"]["failure"]["what"] == "interrupted"
    assert "double" not in got  # never reached


@pytest.mark.gpu
@requires_gpu("verify runs the hostile kernels on CuPy arrays")
def test_a_gpu_fault_is_a_failure_and_the_kernels_after_it_are_verified(manifest: Path) -> None:
    """On a GPU, oob_wild's illegal address breaks the CUDA context for good: its case
    fails, a fresh worker takes over, and every kernel after it gets its verdict (the
    hung kernel's worker is killed, the trap's replaced)."""
    _, report = verify(
        str(manifest), "--backend", "cupy", "--cases", "40", "--timeout", "20", timeout=900
    )
    got = verdicts(report)
    assert list(got) == list(EXPECTED)
    wild = got["oob_wild"]["failure"]
    assert wild["what"] in ("raised", "crashed") and wild["case"] is not None, wild
    print("oob_wild on the GPU:", wild["what"], wild["message"][:300])
    assert got["copy"]["ok"] and got["saxpy"]["ok"], (got["copy"], got["saxpy"])
    # 2000 elements past: inside the canary verify keeps around a GPU array.
    near = got["oob_near"]["failure"]
    assert near["what"] == "out-of-bounds write" and "element 2001" in near["message"], near
    assert got["hang"]["failure"]["what"] == "timed out"
    assert got["traps"]["failure"]["what"] in ("raised", "crashed")
    for kernel in ("double", "negate", "pair", "square", "wrong_late", "whole_wrong"):
        want = EXPECTED[kernel]
        assert want is not None and got[kernel]["failure"]["what"] == want[0], got[kernel]
