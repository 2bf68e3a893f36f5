"""`scripts/chaos --verify`: a hostile user's probe of `pyoxide verify` (issue 27).

Each case runs `pyoxide verify --json` in a child process over the kernels of
tests/fixtures/hostile_verify with a spec file written for the case (a wrong reference,
a raising one, a bad SPECS ...), or pokes verify another way (Ctrl-C, a pasted
reproducer line); the cases of issue 27's other items (stale builds, Ctrl-C in printf,
the cache folder, manifest paths, the emulator's checks, offline builds) run as the
kinds of scripts/chaos_cases.py. Each outcome is classified:

  good  verify failed what it had to fail, with the kind and the words expected
        (or passed what it had to pass), and wrote its complete report;
  meh   it failed closed, but under another kind or without the expected words;
  bad   it passed something it never checked, died (a signal, a traceback, no report),
        hung, or refused a right kernel.

Cases are rows of CASES, by issue 27's item (and of chaos_cases.CASES); other areas add
theirs the same way (an `owner` and, while their fix has not landed, `pending=True`: run
and shown, not counted). Prints a verdict per case and a count per item; exits 1 on any
bad case that is not pending.

    scripts/chaos --verify                    # every case
    scripts/chaos --verify --quick            # the test suite's variant: 20 cases per kernel,
                                              # and no `slow` case (a from-scratch build)
    scripts/chaos --verify --backend cupy --manifest M   # on a GPU machine, M carried there
                                              # (target/oxide/hostile_verify/*.manifest.json)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import chaos_cases
from chaos_cases import Case, Expect, Outcome

REPO = Path(__file__).resolve().parents[1]
CRATE = REPO / "tests" / "fixtures" / "hostile_verify"
OUT = REPO / "target" / "oxide" / "hostile_verify"

#: What every case's spec file starts with.
HEADER = """\
import os, sys, time
import numpy as np
from pyoxide.spec import Case, Out, Spec

def _x(case, rng):
    return {"x": rng.standard_normal(case.n).astype(np.float32)}

def _n(case):
    return case.n

def _same(a, case):
    return {"out": a["x"].astype(np.float64)}

def _twice(a, case):
    return {"out": 2 * a["x"].astype(np.float64)}

def blocks_of_256(kernel, args, case):
    kernel[max(1, -(-case.n // 256)), 256](*args)

def spec(kernel, reference=_same, inputs=_x, **kw):
    kw.setdefault("outputs", {"out": Out(_n)})
    return Spec(kernel=kernel, inputs=inputs, reference=reference, **kw)

"""


#: A failure of any kind will do.
ANY = "*"


def fails(kernel: str, what: str, words: str = "") -> Expect:
    return Expect({kernel: (what, words)})


def passes(*kernels: str) -> Expect:
    return Expect({k: (None, "") for k in kernels}, exit=0)


def file_error(name: str, words: str) -> Expect:
    return Expect(file_errors={name: words})


def spec_error(
    name: str, item: str, kernel: str, spec_args: str, words: str, before: str = ""
) -> Case:
    """A mistake in a spec that verify must report as `kernel`'s spec error: the spec
    file is `before`, then SPECS = [spec(kernel, spec_args)]."""
    call = ", ".join(filter(None, (repr(kernel), spec_args)))
    return Case(name, item, f"{before}SPECS = [spec({call})]", fails(kernel, "spec error", words))


_NAN_REF = (  # wrong everywhere (double computes 2x), with one non-finite element
    "def _r(a, case):\n    r = 3 * a['x'].astype(np.float64)\n"
    "    if case.n:\n        r[case.n // 2] = np.{v}\n    return {{'out': r}}\n"
)

CASES: list[Case] = [
    # 1. verify passes kernels it never checked
    Case("reference holds a NaN", "1", _NAN_REF.format(v="nan") + "SPECS = [spec('double', _r)]",
         fails("double", "wrong result")),
    Case("reference holds an inf", "1", _NAN_REF.format(v="inf") + "SPECS = [spec('double', _r)]",
         fails("double", "wrong result")),
    spec_error("tolerance is NaN", "1", "double", "tolerance=lambda c: float('nan')", "tolerance"),
    spec_error("tolerance is inf", "1", "double", "tolerance=float('inf')", "tolerance"),
    spec_error("reference returns {}", "1", "double", "lambda a, c: {}", "no value for output"),
    Case("reference leaves an output out", "1",
         "SPECS = [spec('pair', lambda a, c: {'twice': 2 * a['x']},"
         " outputs={'twice': Out(_n), 'thrice': Out(_n)})]",
         fails("pair", "spec error", "thrice")),
    Case("NaN inputs give NaN outputs: matched exactly", "1",
         "def _nx(case, rng):\n    x = rng.standard_normal(case.n).astype(np.float32)\n"
         "    x[::3] = np.nan\n    return {'x': x}\nSPECS = [spec('copy', inputs=_nx)]",
         passes("copy")),
    # 2. a fault, a hang, a dying worker
    Case("write 2000 elements past the output", "2", "SPECS = [spec('oob_near'), spec('copy')]",
         Expect({"oob_near": ("out-of-bounds write", "past its end"), "copy": (None, "")})),
    Case("write to a wild address", "2", "SPECS = [spec('oob_wild'), spec('copy')]",
         Expect({"oob_wild": ("raised", ""), "copy": (None, "")})),
    Case("a hung kernel", "2",
         "SPECS = [spec('hang', shapes=lambda r, n: [(4,)]), spec('copy')]",
         Expect({"hang": ("timed out", "limit"), "copy": (None, "")}), args=("--timeout", "2")),
    Case("a trap", "2", "SPECS = [spec('traps'), spec('copy')]",
         Expect({"traps": ("raised", "trap"), "copy": (None, "")})),
    Case("the spec aborts the process", "2",
         "def _ab(case, rng):\n    os.abort()\nSPECS = [spec('double', inputs=_ab), spec('copy')]",
         Expect({"double": ("crashed", "SIGABRT"), "copy": (None, "")})),
    Case("the spec ends the process quietly", "2",
         "def _q(a, case):\n    os._exit(0)\nSPECS = [spec('double', _q), spec('copy')]",
         Expect({"double": ("crashed", "exit status 0"), "copy": (None, "")})),
    Case("the reference never returns", "2",
         "def _w(a, case):\n    time.sleep(3600)\nSPECS = [spec('double', _w), spec('copy')]",
         Expect({"double": ("timed out", ""), "copy": (None, "")}), args=("--timeout", "2")),
    Case("a kernel prints", "2", "SPECS = [spec('chatty')]", passes("chatty")),
    Case("the spec file aborts as it loads", "2", "os.abort()",
         file_error("specs.py", "SIGABRT")),
    Case("Ctrl-C in a hung kernel", "2",
         "def _mark(case, rng):\n    open(os.environ['PROBE_MARK'], 'w').close()\n"
         "    return _x(case, rng)\nSPECS = [spec('hang', inputs=_mark), spec('copy')]",
         Expect({"hang": ("interrupted", "Ctrl-C")}), how="sigint"),
    # 3. mistakes in a spec
    spec_error("inputs raises", "3", "double", "inputs=_b", "inputs raised",
               before="def _b(case, rng):\n    raise KeyError('x')\n"),
    spec_error("reference raises", "3", "double", "lambda a, c: 1 / 0",
               "reference raised ZeroDivisionError"),
    spec_error("reference calls sys.exit", "3", "double", "lambda a, c: sys.exit(2)", "SystemExit"),
    spec_error("shapes gives a negative size", "3", "double", "shapes=lambda r, n: [(-4,)]",
               "shapes"),
    spec_error("shapes gives []", "3", "double", "shapes=lambda r, n: []", "shapes"),
    spec_error("reference of the wrong shape", "3", "copy",
               "lambda a, c: {'out': np.zeros(c.n + 1)}", "shape"),
    spec_error("reference is a list", "3", "copy", "lambda a, c: [a['x']]", "not a dict"),
    spec_error("reference holds a list", "3", "copy", "lambda a, c: {'out': [1.0, 2.0]}", "shape"),
    spec_error("inputs returns a list", "3", "copy", "inputs=lambda c, r: [1]", "not a dict"),
    spec_error("an input is missing", "3", "saxpy", "", "no value for parameter"),
    spec_error("an output of negative size", "3", "copy",
               "outputs={'out': Out(lambda c: -1)}", "outputs"),
    spec_error("a kernel the crate lacks", "3", "no_such_kernel", "", "no kernel"),
    spec_error("tolerance is a string", "3", "copy", "tolerance=lambda c: 'tight'", "tolerance"),
    Case("--seed -1", "3", "SPECS = [spec('copy')]", Expect(exit=2, stderr="--seed"),
         args=("--seed", "-1")),
    Case("SPECS is one Spec", "3", "SPECS = spec('copy')", file_error("specs.py", "single Spec")),
    Case("SPECS is None", "3", "SPECS = None", file_error("specs.py", "SPECS is None")),
    Case("SPECS is a dict", "3", "SPECS = {'copy': spec('copy')}", file_error("specs.py", "dict")),
    Case("SPEC = misspelt", "3", "SPEC = [spec('copy')]",
         file_error("specs.py", "SPEC: a misspelling")),
    Case("the spec file does not import", "3", "import no_such_module_here",
         file_error("specs.py", "ModuleNotFoundError")),
    Case("two specs of one kernel", "3", "SPECS = [spec('copy'), spec('copy')]",
         Expect({"copy": (None, "")}, {"specs.py": "already specifies"})),
    # 4. the shrinker
    Case("shrink within the spec's shapes", "4",
         "def _dom(a, case):\n    assert case.n % 256 == 0\n    return _same(a, case)\n"
         "SPECS = [spec('whole_wrong', _dom, misaligned=False,"
         " shapes=lambda r, n: [(256 * k,) for k in (16, 1, 3, 8)])]",
         fails("whole_wrong", "wrong result", "relative error")),
    Case("shrink keeps the same failure", "4",
         "SPECS = [spec('wrong_late', misaligned=False,"
         " shapes=lambda r, n: [(256 * k,) for k in (16, 1, 2, 8, 12)])]",
         fails("wrong_late", "wrong result", "[1500]")),
    # 8. the reproducer line
    Case("a folder named x$(touch PWNED)", "8", "SPECS = [spec('whole_wrong')]",
         fails("whole_wrong", "wrong result"), how="reproducer", file="x$(touch PWNED)/specs.py"),
    # Other areas: add rows here (owner, and pending=True until the fix lands).
    Case("shared memory no thread wrote", "9",
         "SPECS = [spec('uninit_shared', launch=blocks_of_256)]",
         fails("uninit_shared", ANY), owner="emu (issue 27 item 9)"),
    Case("a missing barrier before reading slot t-1", "9",
         "def _shift(a, case):\n    x = a['x'].astype(np.float64)\n    y = np.roll(x, 1)\n"
         "    y[::256] = x[::256]\n    return {'out': y}\n"
         "SPECS = [spec('shift_no_barrier', _shift, launch=blocks_of_256)]",
         fails("shift_no_barrier", ANY), owner="emu (issue 27 item 9)"),
    Case("gpu_assert!'s message reaches the exception", "10",
         None, Expect(), how="python", owner="issue 27 item 10",
         python="K.traps(np.ones(4, np.float32), np.zeros(4, np.float32))",
         words="traps always"),
]  # fmt: skip


def run_case(
    case: Case, work: Path, manifest: Path, common: list[str], other: chaos_cases.Runner
) -> Outcome:
    folder = work / case.name.replace(" ", "_").replace("/", "_")
    if case.how in chaos_cases.KINDS:
        return other.run(case, folder)
    specs = folder / case.file
    specs.parent.mkdir(parents=True)
    specs.write_text(HEADER + (case.specs or ""))
    cmd = [
        sys.executable,
        "-m",
        "pyoxide",
        "verify",
        str(manifest),
        "--specs",
        str(specs),
        "--json",
    ]
    cmd += [*common, *case.args]
    if case.how == "sigint":
        return _interrupted(cmd, folder)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=folder)
    except subprocess.TimeoutExpired as e:
        return Outcome(None, str(e.stdout or ""), f"verify itself hung: {e}")
    out = Outcome(p.returncode, p.stdout, p.stderr, _parse(p.stdout))
    if case.how == "reproducer":
        out.extra = _paste_reproducer(out, folder)
    return out


def _parse(stdout: str) -> dict[str, Any] | None:
    try:
        return json.loads(stdout)  # type: ignore[no-any-return]
    except ValueError:
        return None


def _interrupted(cmd: list[str], folder: Path) -> Outcome:
    mark = folder / "started"
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from pyoxide.cli import main; sys.argv[0] = 'pyoxide'; main()"
    )
    env = dict(os.environ, PROBE_MARK=str(mark))
    p = subprocess.Popen(
        [sys.executable, "-c", code, *cmd[3:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not mark.exists() and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.1)
    time.sleep(1.5)
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        return Outcome(None, "", "verify did not stop on Ctrl-C")
    return Outcome(p.returncode, out, err, _parse(out))


def _paste_reproducer(out: Outcome, folder: Path) -> str:
    """Paste the reported reproducer line into a shell: it must rerun the case and fail
    the same way, and run nothing else."""
    failures = [k["failure"] for k in (out.report or {}).get("kernels", []) if k["failure"]]
    if not failures:
        return "no reproducer"
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    p = subprocess.run(["bash", "-c", failures[0]["reproducer"]], cwd=folder, env=env,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    if list(folder.rglob("PWNED")):
        return "the pasted line ran a command from the folder name"
    if p.returncode == 0 or "AssertionError" not in p.stderr:
        return f"the pasted line did not reproduce the failure: {p.stderr.strip()[-300:]}"
    return ""


def judge(case: Case, out: Outcome) -> tuple[str, str]:
    if case.how in chaos_cases.KINDS:
        return chaos_cases.judge(case, out)
    if out.code is None or out.code < 0:
        return "bad", out.stderr[-300:]
    if "Traceback (most recent call last)" in out.stderr and out.code != 0:
        return "bad", "a traceback: " + out.stderr.strip().splitlines()[-1][:200]
    want = case.expect
    if want.stderr:
        ok = out.code == want.exit and want.stderr in out.stderr
        return ("good", "") if ok else ("bad", f"exit {out.code}: {out.stderr.strip()[-200:]}")
    if out.report is None:
        return "bad", f"no JSON report (exit {out.code}): {out.stderr.strip()[-200:]}"
    if out.extra:
        return "bad", out.extra
    verdict, notes = "good", []
    got = {k["kernel"]: k for k in out.report["kernels"]}
    for kernel, (what, words) in want.kernels.items():
        v = got.get(kernel)
        if v is None:
            return "bad", f"{kernel}: no verdict in the report"
        failure = v["failure"]
        if what is None and not v["ok"]:
            return "bad", f"{kernel}: a right kernel failed: {failure and failure['message'][:200]}"
        if what is not None and v["ok"]:
            return "bad", f"{kernel}: passed ({v['cases']} cases, worst {v['worst_error']})"
        kind_ok = what in (ANY, failure and failure["what"])
        if what is not None and (not kind_ok or words not in failure["message"]):
            verdict = "meh"
            notes.append(f"{kernel}: {failure['what']}: {failure['message'][:160]}")
    errors = {Path(e["file"]).name: e["message"] for e in out.report["spec_errors"]}
    for name, words in want.file_errors.items():
        if name not in errors:
            return "bad", f"{name}: no spec error reported"
        if words not in errors[name]:
            verdict = "meh"
            notes.append(f"{name}: {errors[name][:160]}")
    if out.code != want.exit or out.report["ok"] != (want.exit == 0):
        return "bad", f"exit {out.code}, ok {out.report['ok']} (expected exit {want.exit})"
    return verdict, "; ".join(notes)


def _manifest(args: argparse.Namespace) -> Path:
    if args.manifest:
        return Path(args.manifest).resolve()
    exe = os.environ.get("PYOXIDE_CARGO_OXIDE") or str(REPO / "target" / "debug" / "cargo-oxide")
    if not Path(exe).is_file():
        subprocess.run(["cargo", "build", "-q", "-p", "cargo-oxide", "--bin", "cargo-oxide"],
                       cwd=REPO, check=True)  # fmt: skip
    p = subprocess.run(
        [exe, "oxide", "build", "--manifest-path", str(CRATE / "Cargo.toml"), "--arch",
         "sm_80,sm_90", "--out-dir", str(OUT), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if p.returncode != 0:
        sys.exit(f"building {CRATE} failed:\n{p.stderr[-3000:]}")
    return Path(json.loads(p.stdout)["manifest"])


def main(argv: list[str] | None = None, cases: list[Case] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20 cases per kernel (the test suite's)")
    ap.add_argument("--backend", default="emu", choices=["emu", "cupy"])
    ap.add_argument("--manifest", help="a built hostile_verify manifest (no build: a GPU machine)")
    ap.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    ap.add_argument("--jobs", type=int, default=3, help="cases run at once")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)
    manifest = _manifest(args)
    common = ["--backend", args.backend, "--cases", "20" if args.quick else "120"]
    every = sorted(cases or [*CASES, *chaos_cases.CASES], key=lambda c: _item_order(c.item))
    chosen = [c for c in every if not args.pattern or args.pattern in c.name]
    skipped = [c for c in chosen if c.slow and args.quick]
    chosen = [c for c in chosen if c not in skipped]
    work = Path(tempfile.mkdtemp(prefix="pyoxide-chaos-verify-"))
    print(f"chaos --verify: {len(chosen)} cases, {manifest}, work folder {work}", flush=True)
    judged: list[tuple[Case, str, str]] = []
    started = time.monotonic()
    other = chaos_cases.Runner(work, manifest)
    try:
        one: Callable[[Case], tuple[Case, str, str]] = lambda c: (  # noqa: E731
            c,
            *judge(c, run_case(c, work, manifest, common, other)),
        )
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for case, verdict, note in pool.map(one, chosen):
                judged.append((case, verdict, note))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'case':<52} {'item':>4}  verdict")
    for case, verdict, note in judged:
        shown = verdict
        if case.pending:
            shown += f" (pending: {case.owner})" if verdict != "good" else " (fixed: drop pending)"
        print(f"{case.name:<52} {case.item:>4}  {shown}" + (f"  {note}" if note else ""))
    for case in skipped:
        print(f"{case.name:<52} {case.item:>4}  not run (--quick: full run only)")
    counted = [(c, v) for c, v, _ in judged if not c.pending]
    print(f"\n{'item':>4} {'cases':>5} {'good':>5} {'meh':>4} {'bad':>4}")
    for item in sorted({c.item for c, _ in counted}, key=_item_order):
        got = [v for c, v in counted if c.item == item]
        print(f"{item:>4} {len(got):>5}" + "".join(f" {got.count(v):>{len(v)}}"
                                                   for v in ("good", "meh", "bad")))  # fmt: skip
    totals = {v: sum(1 for _, w in counted if w == v) for v in ("good", "meh", "bad")}
    print(f"\ntotal {len(judged)}: " + ", ".join(f"{n} {v}" for v, n in totals.items())
          + f", {len(judged) - len(counted)} pending (not counted), {len(skipped)} not run;"
          f" {time.monotonic() - started:.0f} s")  # fmt: skip
    return 1 if totals["bad"] else 0


def _item_order(item: str) -> tuple[int, str]:
    return (int(item), "") if item.isdigit() else (1 << 30, item)


if __name__ == "__main__":
    sys.exit(main())
