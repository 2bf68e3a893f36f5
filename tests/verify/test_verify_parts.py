"""Issue 27, the parts of `pyoxide verify` that decide a verdict, without a kernel: the
comparison against a reference (non-finite elements, missing outputs, NaN tolerances),
the checks of what a spec's code returns, the loading of spec files, the shrinker, the
reproducer line's quoting and the guard pages around emulator arrays."""

from __future__ import annotations

import ctypes
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from helpers.bundled import REPO

from pyoxide._manifest.abi import ExitCode
from pyoxide.cli import cli
from pyoxide.spec import Case, Out, Spec
from pyoxide.verify import Run, shrink
from pyoxide.verify._arrays import Arrays
from pyoxide.verify._case import Failure, Outcome, compare, make_cases
from pyoxide.verify._specs import read_specs

CASE = Case((8,), "f32", 0, 0)
X = np.arange(1, 9, dtype=np.float32)


def spec_with(reference: Any, **kw: Any) -> Spec:
    outputs = kw.pop("outputs", {"out": Out(lambda case: case.n)})
    return Spec("k", lambda case, rng: {"x": X}, outputs, reference, **kw)


def judged(spec: Spec, got: dict[str, np.ndarray] | None = None) -> Outcome:
    return compare(spec, CASE, {"x": X}, got if got is not None else {"out": 2.0 * X})


def _one_nan(a: dict[str, Any], case: Case) -> dict[str, Any]:
    ref = 3.0 * a["x"]  # wrong everywhere: the kernel computes 2x
    ref[4] = np.nan
    return {"out": ref}


def _one_inf(a: dict[str, Any], case: Case) -> dict[str, Any]:
    ref = 3.0 * a["x"]
    ref[0] = np.inf
    return {"out": ref}


def _twice(a: dict[str, Any], case: Case) -> dict[str, Any]:
    return {"out": 2.0 * a["x"]}


# What verify must say of a kernel computing 2x under each spec (issue 27's item 1: the
# first three once passed as "ok, worst error 0").
JUDGED = {
    "reference holds a NaN, wrong elsewhere": (spec_with(_one_nan), "wrong result"),
    "reference holds an inf, wrong elsewhere": (spec_with(_one_inf), "wrong result"),
    "tolerance is NaN": (spec_with(_twice, tolerance=lambda case: float("nan")), "spec error"),
    "tolerance is inf": (spec_with(_twice, tolerance=float("inf")), "spec error"),
    "tolerance is negative": (spec_with(_twice, tolerance=-1.0), "spec error"),
    "reference returns {}": (spec_with(lambda a, case: {}), "spec error"),
    "reference returns a list": (spec_with(lambda a, case: [2.0 * a["x"]]), "spec error"),
    "reference of the wrong shape": (spec_with(lambda a, case: {"out": np.zeros(3)}), "spec error"),
    "reference of strings": (spec_with(lambda a, case: {"out": ["a"] * 8}), "spec error"),
    "reference names no output": (
        spec_with(lambda a, case: {"out": 2.0 * a["x"], "extra": a["x"]}),
        "spec error",
    ),
    "reference raises": (spec_with(lambda a, case: 1 / 0), "spec error"),
    "reference exits": (spec_with(lambda a, case: sys.exit(3)), "spec error"),
    "right, tolerance a number": (spec_with(_twice, tolerance=1e-6), None),
    "right, reference a list of numbers": (spec_with(lambda a, case: {"out": list(2.0 * X)}), None),
}


@pytest.mark.parametrize("name", list(JUDGED))
def test_compare_fails_closed(name: str) -> None:
    spec, what = JUDGED[name]
    outcome = judged(spec)
    assert (outcome.failure.what if outcome.failure else None) == what, outcome


def test_non_finite_reference_elements_are_matched_exactly() -> None:
    def ref(a: dict[str, Any], case: Case) -> dict[str, Any]:
        out = 2.0 * a["x"]
        out[1], out[2], out[3] = np.nan, np.inf, -np.inf
        return {"out": out}

    got = 2.0 * X
    got[1], got[2], got[3] = np.nan, np.inf, -np.inf
    assert judged(spec_with(ref), {"out": got}).failure is None
    got[3] = np.inf  # the wrong infinity
    failure = judged(spec_with(ref), {"out": got}).failure
    assert failure is not None and failure.what == "wrong result" and failure.index == (3,)


def test_an_output_the_reference_leaves_out_is_a_spec_error() -> None:
    spec = spec_with(_twice, outputs={"out": Out(lambda c: c.n), "more": Out(lambda c: c.n)})
    failure = judged(spec, {"out": 2.0 * X, "more": X}).failure
    assert failure is not None and failure.what == "spec error" and "more" in failure.message


def test_a_nan_left_in_a_bfloat16_output_is_unwritten() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    got = (2.0 * X).astype(ml_dtypes.bfloat16)
    got[5] = np.nan  # the poison
    failure = judged(spec_with(_twice), {"out": got}).failure
    assert failure is not None and failure.what == "unwritten element" and failure.index == (5,)


@pytest.mark.parametrize(
    ("shapes", "text"),
    [
        (lambda rng, n: [], "non-empty list"),
        (lambda rng, n: [(-3,)], "sizes >= 0"),
        (lambda rng, n: [(2.5,)], "sizes >= 0"),
        (lambda rng, n: None, "non-empty list"),
        (lambda rng, n: 1 / 0, "shapes raised ZeroDivisionError"),
    ],
)
def test_unusable_shapes_are_a_spec_error(shapes: Any, text: str) -> None:
    got = make_cases(spec_with(_twice, shapes=shapes), 10, 0)
    assert isinstance(got, Outcome) and got.failure is not None
    assert got.failure.what == "spec error" and text in got.failure.message


SPEC_FILES = {
    "single.py": ("SPECS = Spec('k', None, {}, None)", "SPECS is a single Spec"),
    "none.py": ("SPECS = None", "SPECS is None"),
    "dict.py": ("SPECS = {'k': 1}", "SPECS is a dict"),
    "misspelt.py": ("SPEC = []", "defines no SPECS (it defines SPEC: a misspelling?)"),
    "raises.py": ("raise ImportError('no such module')", "importing it raised ImportError"),
    "exits.py": ("import sys; sys.exit(1)", "importing it raised SystemExit"),
    "not_specs.py": ("SPECS = [1, 2]", "SPECS[0]: is a int, not a pyoxide.spec.Spec"),
    "no_outputs.py": (
        "SPECS = [Spec('k', lambda c, r: {}, {}, lambda a, c: {})]",
        "nothing to check",
    ),
    "bad_dtype.py": (
        "SPECS = [Spec('k', lambda c, r: {}, {'o': Out(len)}, lambda a, c: {}, dtypes=('f31',))]",
        "unknown type(s) ['f31']",
    ),
}


def test_spec_files_are_checked_as_they_load(tmp_path: Path) -> None:
    for name, (body, _) in SPEC_FILES.items():
        (tmp_path / name).write_text(f"from pyoxide.spec import Out, Spec\n{body}\n")
    (tmp_path / "good.py").write_text(
        "from pyoxide.spec import Out, Spec\n"
        "SPECS = [Spec('g', lambda c, r: {}, {'o': Out(len)}, lambda a, c: {})]\n"
    )
    (tmp_path / "again.py").write_text(  # a second spec of g
        "from pyoxide.spec import Out, Spec\n"
        "SPECS = [Spec('g', lambda c, r: {}, {'o': Out(len)}, lambda a, c: {})]\n"
    )
    loaded, errors = read_specs(tmp_path)
    assert [s.spec.kernel for s in loaded] == ["g"]
    said = {e.file.name: e.message for e in errors}
    assert said.pop("good.py" if "good.py" in said else "again.py").startswith(
        "SPECS[0] specifies 'g', which"
    )
    assert set(said) == set(SPEC_FILES)
    for name, (_, text) in SPEC_FILES.items():
        assert text in said[name], said[name]


def test_shrink_stays_in_the_declared_shapes_and_the_same_failure() -> None:
    """A kernel wrong for n >= 2048 that traps below 256: the shrinker reports 2048 (not
    the trap), trying only the spec's shapes, smallest first."""
    tried: list[int] = []

    def run(case: Case) -> Outcome:
        tried.append(case.n)
        if case.n < 256:
            return Outcome(np.inf, Failure("raised", "EmulatorError: trapped"))
        if case.n >= 2048:
            return Outcome(1.0, Failure("wrong result", "wrong", "out", (1500,)))
        return Outcome(0.0, None)

    declared = [(4096,), (100,), (512,), (2048,), (3000,), (8192,)]
    first = Case((4096,), "f32", 1, 7)
    case, outcome = shrink(run, declared, first, run(first))
    assert case.shape == (2048,) and case.offset == 0 and outcome.failure is not None
    assert outcome.failure.what == "wrong result"
    assert tried == [4096, 4096, 100, 512, 2048]  # itself, aligned, then smallest first


def test_the_reproducer_line_is_shell_quoted(tmp_path: Path) -> None:
    crate = str(tmp_path / "x$(touch PWNED)'; touch PWNED2 #")
    run = Run(crate, crate + "/specs", "emu", 200, 5, 60.0)
    for line in (run.reproducer("saxpy", Case((3,), "f32", 1, 9)), run.reproducer("saxpy", None)):
        # The line pasted into a shell, with `true` for the command it starts.
        subprocess.run(["bash", "-c", "true " + line.split(" ", 1)[1]], cwd=tmp_path, check=True)
        assert not list(tmp_path.glob("PWNED*"))
    code = shlex.split(run.reproducer("saxpy", Case((3,), "f32", 1, 9)))[2]
    assert f"reproduce({json.dumps(crate)}, " in code


def test_the_seed_and_case_count_are_checked_before_anything_runs() -> None:
    crate = str(REPO / "tests" / "fixtures" / "wrong_kernels")
    for args, text in [(["--seed", "-1"], "--seed"), (["--cases", "0"], "--cases"),
                       (["--timeout", "0"], "--timeout")]:  # fmt: skip
        r = CliRunner().invoke(cli, ["verify", crate, *args])
        assert r.exit_code == ExitCode.USAGE and text in r.output, r.output


def test_emulator_arrays_lie_between_inaccessible_pages() -> None:
    arrays = Arrays("emu")
    x = arrays.put("x", np.arange(10, dtype=np.float32), 1)
    assert x.ctypes.data % 16 == 4 and list(x) == list(range(10))  # misaligned, as asked
    assert arrays.overwritten_guard() is None
    raw = np.ctypeslib.as_array((ctypes.c_float * 12).from_address(x.ctypes.data))
    raw[11] = 1.0  # one past the canary's first element
    assert arrays.overwritten_guard() == ("x", 11)
    assert arrays.fault_at(x.ctypes.data + 4 * 5000) == ("x", 5000)
    assert arrays.fault_at(x.ctypes.data - 4 * 3000) == ("x", -3000)
    # A write past the canary and slack faults at once instead of landing in the heap.
    code = (
        "import ctypes, numpy as np\nfrom pyoxide.verify._arrays import Arrays\n"
        "x = Arrays('emu').put('x', np.zeros(10, np.float32), 0)\n"
        "ctypes.c_float.from_address(x.ctypes.data + 4 * 2000).value = 1.0\nprint('wrote')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert p.returncode == -11 and "wrote" not in p.stdout, (p.returncode, p.stderr)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_an_all_finite_output_is_judged_as_one_with_matched_specials(dtype: Any) -> None:
    """The all-finite case takes a shorter path (fewer passes over a large output): the
    same relative error, worst element and verdict as the general path, which a matched
    inf in an extra element sends the same data through."""
    rng = np.random.default_rng(3)
    want = rng.integers(-50, 50, 64).astype(np.float64)
    got = want.astype(dtype)
    got[[5, 40]] += dtype(3)  # two wrong elements, the worst at 5
    got[40] -= dtype(1)
    plain = {"out": want}
    special = {"out": np.append(want, np.inf)} if dtype == np.float32 else None
    for tol in (0.0, 1.0):
        spec = spec_with(lambda a, case: plain, tolerance=tol)
        fast = compare(spec, Case((64,), "f32", 0, 0), {"x": X}, {"out": got})
        assert (fast.failure is None) == (tol == 1.0)
        if fast.failure is not None:
            assert (fast.failure.index, fast.failure.got) == ((5,), float(got[5]))
        if special is not None:
            spec = spec_with(lambda a, case: special, tolerance=tol)
            out = {"out": np.append(got, np.float32(np.inf))}
            general = compare(spec, Case((65,), "f32", 0, 0), {"x": X}, out)
            assert general.error == pytest.approx(fast.error, rel=1e-12)
            assert (general.failure is None) == (fast.failure is None)
            if fast.failure is not None:
                assert general.failure is not None
                assert general.failure.message == fast.failure.message
