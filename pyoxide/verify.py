"""``pyoxide verify``: every kernel of a crate against its spec (:mod:`pyoxide.spec`) on
hundreds of cases: sizes 0, 1, primes, one off warp and block multiples, large; views
that start one element into their buffer; every dtype instance. Outputs are poisoned
before each launch and inputs checked unchanged after it. A failing case is shrunk to
the smallest failing shape and reported with its seed, its worst element and a one-line
Python reproducer (:func:`reproduce`).

The report (:func:`verify_crate`) is a dict following
crates/oxide-abi/verify-report.schema.json (``pyoxide verify --json``)."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._abi import VERIFY_REPORT_VERSION
from ._manifest import KernelSpec
from ._verify_case import Arrays, Failure, Outcome, run_case
from ._verify_limits import DEFAULT_CASES
from .spec import Case, Shape, Spec

__all__ = ["find_specs", "load_specs", "reproduce", "verify_crate", "verify_kernel"]

#: Where a crate keeps its specs: <crate>/specs/*.py, each defining SPECS.
SPECS_DIR = "specs"


# --- finding specs and kernels ---------------------------------------------------------


def find_specs(crate: Path | None) -> Path | None:
    """The specs folder of `crate` (a crate folder, its Cargo.toml, or a built
    ``<crate>.manifest.json``: the folder beside it or beside the crate it was built
    from); None: the bundled kernels' (kernels_rs/specs in a source checkout, else the
    copy in pyoxide/_prebuilt/specs)."""
    if crate is not None:
        if crate.name.endswith(".manifest.json"):
            from ._manifest import read_manifest

            origin = Path(read_manifest(crate).crate_manifest_path).parent
            places = [crate.parent, crate.parent.parent, origin]
        else:
            places = [crate.parent if crate.name == "Cargo.toml" else crate]
        found = [p / SPECS_DIR for p in places if (p / SPECS_DIR).is_dir()]
        return found[0] if found else None
    from ._layout import PREBUILT
    from ._module import bundled_crate_dir

    src = bundled_crate_dir()
    for folder in ([src / SPECS_DIR] if src else []) + [PREBUILT / SPECS_DIR]:
        if folder.is_dir():
            return folder
    return None


def load_specs(folder: Path) -> list[Spec]:
    """Every ``SPECS`` list of the folder's ``*.py`` files, in file order."""
    specs: list[Spec] = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        name = f"_pyoxide_specs_{folder.parent.name}_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        specs.extend(getattr(module, "SPECS", []))
    return specs


def instance(module: Any, spec: Spec, dtype: str) -> tuple[Any, KernelSpec]:
    """The launcher and manifest entry of `spec`'s kernel for `dtype` (a generic kernel's
    instance whose type parameter is `dtype`; a plain kernel as it is)."""
    found = [k for k in module.manifest.kernels if k.name == spec.kernel]
    if not found:
        raise KeyError(f"no kernel {spec.kernel!r} in {module.manifest.crate_name}")
    for k in found:
        if not k.instance or dtype in (v for _, v in k.instance):
            return module[k.entry], k
    have = ", ".join(v for k in found for _, v in k.instance)
    raise KeyError(f"{spec.kernel} has no {dtype} instance (it has {have})")


# --- cases -------------------------------------------------------------------------------


def make_cases(spec: Spec, count: int, seed: int) -> list[Case]:
    """`count` cases: the spec's shapes, each dtype instance in turn, every other case on
    misaligned views (when the spec allows them); each case has its own seed."""
    rng = np.random.default_rng(seed)
    shapes = spec.case_shapes(rng, count)
    cases = []
    for i in range(count):
        shape = shapes[i % len(shapes)]
        dtype = spec.dtypes[i % len(spec.dtypes)]
        offset = (i // len(spec.dtypes)) % 2 if spec.misaligned else 0
        cases.append(Case(tuple(shape), dtype, offset, seed * 1_000_003 + i))
    return cases


def _smaller(shape: Shape) -> Iterable[Shape]:
    """Candidate shapes below `shape`, smallest first, one dimension at a time."""
    for pos, d in enumerate(shape):
        for c in sorted({1, 2, 3, d // 4, d // 2, d - 1} - {d}):
            if 0 < c < d:
                yield (*shape[:pos], c, *shape[pos + 1 :])


def shrink(fails: Callable[[Case], Outcome], case: Case, outcome: Outcome) -> tuple[Case, Outcome]:
    """The smallest case that still fails, found greedily (a few dozen runs at most):
    first aligned views, then each dimension made smaller while the case still fails."""
    tries = 0
    if case.offset:
        aligned = Case(case.shape, case.dtype, 0, case.seed)
        o = fails(aligned)
        if o.failure is not None:
            case, outcome = aligned, o
    progress = True
    while progress and tries < 60:
        progress = False
        for shape in _smaller(case.shape):
            tries += 1
            candidate = Case(shape, case.dtype, case.offset, case.seed)
            o = fails(candidate)
            if o.failure is not None:
                case, outcome, progress = candidate, o, True
                break
            if tries >= 60:
                break
    return case, outcome


# --- running -----------------------------------------------------------------------------


@dataclass
class KernelResult:
    kernel: str
    backend: str
    cases: int = 0
    passed: int = 0
    worst_error: float = 0.0
    seconds: float = 0.0
    failure: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None and self.cases > 0


def reproducer(crate: str | None, spec: Spec, case: Case, backend: str) -> str:
    where = repr(crate) if crate else "None"
    return (
        f'python -c "from pyoxide.verify import reproduce; reproduce({where}, '
        f"{spec.kernel!r}, {case.shape!r}, {case.dtype!r}, offset={case.offset}, "
        f'seed={case.seed}, backend={backend!r})"'
    )


def verify_kernel(
    module: Any, spec: Spec, *, backend: str, cases: int, seed: int, crate: str | None
) -> KernelResult:
    """Run `cases` cases of `spec` on `backend`; stop at the first failure and shrink it."""
    result = KernelResult(spec.kernel, backend)
    arrays = Arrays(backend)
    start = time.perf_counter()

    def run(case: Case) -> Outcome:
        launcher, entry = instance(module, spec, case.dtype)
        return run_case(launcher, entry, spec, case, arrays)

    for case in make_cases(spec, cases, seed):
        try:
            outcome = run(case)
        except KeyError as e:
            outcome = Outcome(np.inf, Failure("spec error", str(e.args[0])))
        result.cases += 1
        if outcome.failure is None:
            result.passed += 1
            result.worst_error = max(result.worst_error, outcome.error)
            continue
        if outcome.failure.what != "spec error":
            case, outcome = shrink(run, case, outcome)
        assert outcome.failure is not None
        result.failure = {
            **outcome.failure.as_dict(),
            "case": {"shape": list(case.shape), "dtype": case.dtype, "offset": case.offset},
            "seed": case.seed,
            "reproducer": reproducer(crate, spec, case, backend),
        }
        break
    result.seconds = time.perf_counter() - start
    return result


def select(specs: list[Spec], pattern: str | None) -> list[Spec]:
    """Specs whose kernel name contains `pattern` (all without one)."""
    return [s for s in specs if pattern is None or pattern in s.kernel]


def verify_crate(
    module: Any,
    specs: list[Spec],
    *,
    backends: list[str],
    cases: int = DEFAULT_CASES,
    seed: int = 0,
    crate: str | None = None,
    progress: Callable[[KernelResult], None] | None = None,
    specified: set[str] | None = None,
) -> dict[str, Any]:
    """The verify report (verify-report.schema.json) for every spec on every backend;
    kernels of the crate without a spec (among `specified`, default `specs`) are listed
    under ``unspecified``."""
    results = []
    for backend in backends:
        for spec in specs:
            r = verify_kernel(module, spec, backend=backend, cases=cases, seed=seed, crate=crate)
            results.append(r)
            if progress is not None:
                progress(r)
    have = specified if specified is not None else {s.kernel for s in specs}
    return {
        "version": VERIFY_REPORT_VERSION,
        "crate": module.manifest.crate_name,
        "seed": seed,
        "backends": backends,
        "ok": all(r.ok for r in results),
        "kernels": [
            {
                "kernel": r.kernel,
                "backend": r.backend,
                "ok": r.ok,
                "cases": r.cases,
                "passed": r.passed,
                "worst_error": r.worst_error,
                "seconds": round(r.seconds, 3),
                "failure": r.failure,
            }
            for r in results
        ],
        "unspecified": sorted({k.name for k in module.manifest.kernels} - have),
        "sanitizer": None,
    }


def load_module(crate: str | None) -> Any:
    import pyoxide

    if crate is None:
        return pyoxide.kernels
    return pyoxide.load(crate)


def reproduce(
    crate: str | None,
    kernel: str,
    shape: Shape,
    dtype: str = "f32",
    *,
    offset: int = 0,
    seed: int = 0,
    backend: str = "emu",
) -> None:
    """Run one case of `kernel` (as ``pyoxide verify`` reported it) and raise
    AssertionError describing the failure, or print that it passed."""
    folder = find_specs(Path(crate) if crate else None)
    if folder is None:
        raise FileNotFoundError(f"no {SPECS_DIR}/ folder for {crate or 'the bundled kernels'}")
    spec = next((s for s in load_specs(folder) if s.kernel == kernel), None)
    if spec is None:
        raise KeyError(f"no spec for {kernel!r} in {folder}")
    module = load_module(crate)
    launcher, entry = instance(module, spec, dtype)
    case = Case(tuple(shape), dtype, offset, seed)
    outcome = run_case(launcher, entry, spec, case, Arrays(backend))
    if outcome.failure is not None:
        raise AssertionError(f"{kernel} ({case.describe()}): {outcome.failure.message}")
    print(f"{kernel} ({case.describe()}): passed, relative error {outcome.error:.3g}")
