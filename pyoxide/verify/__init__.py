"""``pyoxide verify``: every kernel of a crate against its spec (:mod:`pyoxide.spec`) on
hundreds of cases: sizes 0, 1, primes, one off warp and block multiples, large; views
that start one element into their buffer; every dtype instance. Outputs are poisoned
before each launch and inputs checked unchanged after it. A failing case is shrunk to
the smallest of the spec's own shapes that fails the same way, and reported with its
seed, its worst element, the first failing case met and a one-line Python reproducer
(:func:`reproduce`).

Verify fails closed and cannot be crashed: the spec's code and the kernels run in a
worker process (pyoxide/verify/_worker.py) that a fault, a hang past the per-case time
limit or a broken CUDA context only costs the case it happened in; the run goes on
with a fresh worker, and Ctrl-C ends it with the report of what was reached.

The report (:func:`verify_crate`) is a dict following
crates/oxide-abi/verify-report.schema.json (``pyoxide verify --json``)."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from .._manifest.abi import VERIFY_REPORT_VERSION
from ..spec import Case, Shape
from ._case import (
    Arrays,
    Failure,
    Outcome,
    compare,
    failed,
    instance,
    make_cases,
    param_names,
    run_case,
)
from ._limits import CASE_TIMEOUT, DEFAULT_CASES, SHRINK_TRIES, SHRINKABLE
from ._specs import SPECS_DIR, find_specs, load_specs, read_specs
from ._worker import Died, Target, Worker, load_module

__all__ = [
    "compare", "find_specs", "instance", "load_module", "load_specs", "make_cases",
    "param_names", "reproduce", "verify_crate",
]  # fmt: skip


@dataclass(frozen=True)
class SpecRef:
    """A spec as the worker listed it."""

    key: tuple[str, int]
    kernel: str
    file: str


@dataclass
class KernelResult:
    kernel: str
    backend: str
    spec_file: str | None = None
    cases: int = 0
    passed: int = 0
    worst_error: float = 0.0
    seconds: float = 0.0
    failure: dict[str, Any] | None = None
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None and self.cases > 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel, "spec_file": self.spec_file, "backend": self.backend,
            "ok": self.ok, "cases": self.cases, "passed": self.passed,
            "worst_error": self.worst_error, "seconds": round(self.seconds, 3),
            "failure": self.failure,
        }  # fmt: skip


@dataclass(frozen=True)
class Run:
    """What every kernel of a run shares: how to name its cases in a reproducer."""

    crate: str | None
    specs: str | None  # --specs, when given
    backend: str
    cases: int
    seed: int
    timeout: float

    def reproducer(self, kernel: str, case: Case | None) -> str:
        """One line of shell (quoted: paths may hold anything) that reruns the case, or
        without a case the verify run of the kernel."""
        if case is None:
            args = ["pyoxide", "verify", *([self.crate] if self.crate else []), "-k", kernel]
            args += [
                "--backend",
                self.backend,
                "--cases",
                str(self.cases),
                "--seed",
                str(self.seed),
            ]
            return shlex.join(args + (["--specs", self.specs] if self.specs else []))
        # Python string literals in double quotes (JSON's are Python's), so that the
        # shell quoting around the whole is plain single quotes for ordinary paths.
        specs = f", specs={_lit(self.specs)}" if self.specs else ""
        code = (
            f"from pyoxide.verify import reproduce; reproduce({_lit(self.crate)}, "
            f"{_lit(kernel)}, {case.shape!r}, {_lit(case.dtype)}, offset={case.offset}, "
            f"seed={case.seed}, backend={_lit(self.backend)}{specs})"
        )
        return f"python -c {shlex.quote(code)}"


def _lit(text: str | None) -> str:
    return "None" if text is None else json.dumps(text)


def _case_id(case: Case) -> dict[str, Any]:
    return {"shape": list(case.shape), "dtype": case.dtype, "offset": case.offset}


def _signature(o: Outcome) -> tuple[str, str | None, str]:
    """What "fails the same way" compares: the kind, the output, the exception's type."""
    f = o.failure
    assert f is not None
    return f.what, f.output, f.message.split(":", 1)[0] if f.what == "raised" else ""


def shrink(
    run: Callable[[Case], Outcome], shapes: Sequence[Shape], case: Case, outcome: Outcome
) -> tuple[Case, Outcome]:
    """The smallest case among the spec's own `shapes` that fails the same way as `case`
    (first on aligned views), trying at most SHRINK_TRIES shapes, smallest first."""
    same = _signature(outcome)
    if case.offset:
        aligned = Case(case.shape, case.dtype, 0, case.seed)
        o = run(aligned)
        if o.failure is not None and _signature(o) == same:
            case, outcome = aligned, o
    size = int(np.prod(case.shape))
    smaller = sorted({s for s in shapes if int(np.prod(s)) < size}, key=lambda s: (np.prod(s), s))
    for shape in smaller[:SHRINK_TRIES]:
        candidate = Case(shape, case.dtype, case.offset, case.seed)
        o = run(candidate)
        if o.failure is not None and _signature(o) == same:
            return candidate, o
    return case, outcome


def verify_kernel(worker: Worker, ref: SpecRef, run: Run) -> KernelResult:
    """Run `run.cases` cases of the spec on the worker's backend; stop at the first
    failure and shrink it. Ctrl-C ends it as "interrupted"."""
    result = KernelResult(ref.kernel, run.backend, ref.file)
    start = time.perf_counter()
    case: Case | None = None

    def one(c: Case) -> Outcome:
        answer = worker.request(("run", ref.key, c), run.timeout)
        return failed(answer.what, answer.message) if isinstance(answer, Died) else answer

    try:
        listed = worker.request(("cases", ref.key, run.cases, run.seed), run.timeout)
        if isinstance(listed, Died):
            listed = failed(listed.what, listed.message)
        if isinstance(listed, Outcome):
            result.failure = _failure(run, ref.kernel, listed.failure, None)
            return result
        for case in listed:
            outcome = one(case)
            result.cases += 1
            if outcome.failure is None:
                result.passed += 1
                result.worst_error = max(result.worst_error, outcome.error)
                continue
            first = (case, outcome.failure)
            if outcome.failure.what in SHRINKABLE and not worker.lost_last:
                case, outcome = shrink(one, [c.shape for c in listed], case, outcome)
            result.failure = _failure(run, ref.kernel, outcome.failure, case, first)
            break
    except KeyboardInterrupt:
        message = f"Ctrl-C during {case.describe()}" if case else "Ctrl-C before the first case"
        result.failure = _failure(run, ref.kernel, Failure("interrupted", message), case)
        result.interrupted = True
    finally:
        result.seconds = time.perf_counter() - start
    return result


def _failure(
    run: Run,
    kernel: str,
    failure: Failure | None,
    case: Case | None,
    first: tuple[Case, Failure] | None = None,
) -> dict[str, Any]:
    assert failure is not None
    first_dict = None
    if first is not None and case is not None and first[0].shape != case.shape:
        c, f = first
        first_dict = {"what": f.what, "message": f.message, "case": _case_id(c), "seed": c.seed}
    return {
        **failure.as_dict(),
        "case": _case_id(case) if case is not None else None,
        "seed": case.seed if case is not None else run.seed,
        "reproducer": run.reproducer(kernel, case),
        "first": first_dict,
    }


class _Named(Protocol):
    @property
    def kernel(self) -> str: ...


Named = TypeVar("Named", bound=_Named)


def select(specs: Sequence[Named], pattern: str | None) -> list[Named]:
    """Specs whose kernel name contains `pattern` (all without one)."""
    return [s for s in specs if pattern is None or pattern in s.kernel]


def verify_crate(
    module: Any,
    specs: Path,
    *,
    backends: list[str],
    cases: int = DEFAULT_CASES,
    seed: int = 0,
    crate: str | None = None,
    pattern: str | None = None,
    timeout: float = CASE_TIMEOUT,
    specs_given: bool = False,
    progress: Callable[[KernelResult], None] | None = None,
) -> dict[str, Any]:
    """The verify report (verify-report.schema.json) for every spec of `specs` (a folder
    or one file) whose kernel name contains `pattern`, on every backend. `module` is the
    crate loaded (built) here; `crate` the path it was loaded from (None: the bundled
    kernels). Kernels of the crate without a spec are listed under ``unspecified``."""
    report: dict[str, Any] = {
        "version": VERIFY_REPORT_VERSION, "crate": module.manifest.crate_name, "seed": seed,
        "backends": backends, "ok": False, "kernels": [], "unspecified": [],
        "sanitizer": None, "spec_errors": [], "interrupted": False, "case_timeout": timeout,
    }  # fmt: skip
    built = None if crate is None else str(module.manifest.path)
    specified: set[str] = set()
    try:
        for backend in backends:
            where = str(Path(crate).resolve()) if crate else None  # pasted anywhere
            given = str(specs.resolve()) if specs_given else None
            run = Run(where, given, backend, cases, seed, timeout)
            with Worker(Target(built, str(specs), backend)) as worker:
                started = worker.start()
                if isinstance(started, Died):
                    message = f"verify could not start on {backend}: {started.message}"
                    report["spec_errors"].append({"file": str(specs), "message": message})
                    continue
                listing = worker.listing or {}
                if backend == backends[0]:  # every backend's worker lists the same files
                    report["spec_errors"] += listing["errors"]
                refs = [SpecRef(tuple(k), kernel, f) for k, kernel, f in listing["specs"]]
                specified |= {r.kernel for r in refs}
                for ref in select(refs, pattern):
                    r = verify_kernel(worker, ref, run)
                    report["kernels"].append(r.as_dict())
                    if progress is not None:
                        progress(r)
                    if r.interrupted:
                        raise KeyboardInterrupt
    except KeyboardInterrupt:
        report["interrupted"] = True
    report["unspecified"] = sorted({k.name for k in module.manifest.kernels} - specified)
    report["ok"] = bool(report["kernels"]) and not report["interrupted"] and not (
        report["spec_errors"]
    ) and all(k["ok"] for k in report["kernels"])  # fmt: skip
    return report


def reproduce(
    crate: str | None,
    kernel: str,
    shape: Shape,
    dtype: str = "f32",
    *,
    offset: int = 0,
    seed: int = 0,
    backend: str = "emu",
    specs: str | None = None,
) -> None:
    """Run one case of `kernel` (as ``pyoxide verify`` reported it) in this process and
    raise AssertionError describing the failure, or print that it passed."""
    folder = Path(specs) if specs else find_specs(Path(crate) if crate else None)
    if folder is None:
        raise FileNotFoundError(f"no {SPECS_DIR}/ folder for {crate or 'the bundled kernels'}")
    loaded, errors = read_specs(folder)  # other files' mistakes are not this case's
    spec = next((s.spec for s in loaded if s.spec.kernel == kernel), None)
    if spec is None:
        unusable = "".join(f"; {e.file.name}: {e.message}" for e in errors)
        raise KeyError(f"no spec for {kernel!r} in {folder}{unusable}")
    module = load_module(crate)
    launcher, entry = instance(module, spec, dtype)
    case = Case(tuple(shape), dtype, offset, seed)
    outcome = run_case(launcher, entry, spec, case, Arrays(backend))
    if outcome.failure is not None:
        raise AssertionError(f"{kernel} ({case.describe()}): {outcome.failure.message}")
    print(f"{kernel} ({case.describe()}): passed, relative error {outcome.error:.3g}")
