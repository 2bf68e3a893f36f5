"""``pyoxide verify [CRATE]``: every kernel with a spec against its float64 reference on
hundreds of cases (pyoxide/verify.py), optionally under compute-sanitizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..verify import KernelResult

from .._manifest.abi import ExitCode
from ..verify._limits import CASE_TIMEOUT, DEFAULT_CASES, SHRINKABLE
from ._exit import reporting_errors
from ._options import EXISTING, crate_and_kernel, json_option, specs_folder


def gpu_ready() -> str | None:
    """None when CuPy sees a CUDA device; else why not."""
    from .. import backends

    try:
        if backends.gpu().devices():
            return None
        return "CuPy sees no CUDA device"
    except Exception as e:  # no CuPy, or CUDA's own error when there is no driver
        return f"no usable CuPy ({type(e).__name__}: {e})"


def _describe(case: dict[str, Any], seed: int) -> str:
    shape = "×".join(map(str, case["shape"]))
    view = ", misaligned" if case["offset"] else ""
    return f"shape {shape}, {case['dtype']}{view}, seed {seed}"


def _relative(path: str) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def _line(r: KernelResult) -> str:
    if r.ok:
        return (
            f"  ok    {r.kernel} [{r.backend}]: {r.cases} cases, "
            f"worst error {r.worst_error:.2e} ({r.seconds:.1f} s)"
        )
    f = r.failure or {}
    where = f" ({_relative(r.spec_file)})" if r.spec_file else ""
    lines = [f"  FAIL  {r.kernel} [{r.backend}]: {f.get('what')} after {r.cases} cases{where}"]
    if f:
        if f["case"] is None:
            lines.append(f"        before any case (seed {f['seed']})")
        else:
            label = "smallest failing case" if f["what"] in SHRINKABLE else "failing case"
            lines.append(f"        {label}: {_describe(f['case'], f['seed'])}")
        lines.append(f"        {f['message']}")
        if f["first"]:
            first = f["first"]
            lines.append(
                f"        first failing case: {_describe(first['case'], first['seed'])}: "
                f"{first['what']}: {first['message']}"
            )
        lines.append(f"        reproduce: {f['reproducer']}")
    return "\n".join(lines)


@click.command("verify")
@crate_and_kernel
@click.option(
    "--backend",
    type=click.Choice(["emu", "cupy", "all"]),
    default="emu",
    show_default=True,
    help="emu: the CPU emulator on NumPy arrays; cupy: the GPU; all: both.",
)
@click.option(
    "--cases", default=DEFAULT_CASES, show_default=True, type=click.IntRange(min=1),
    help="Cases per kernel.",
)  # fmt: skip
@click.option(
    "--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
    help="Base seed of the cases' data (0 to 2^32-1).",
)  # fmt: skip
@click.option(
    "--timeout", default=CASE_TIMEOUT, show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds one case may run; past it the kernel is taken for hung and fails.",
)  # fmt: skip
@click.option(
    "--specs", "specs_path", type=EXISTING,
    help="The spec folder (or one spec file) to use instead of the crate's specs/.",
)  # fmt: skip
@click.option(
    "--sanitize",
    is_flag=True,
    help="Also run the GPU cases under compute-sanitizer memcheck, racecheck and synccheck.",
)
@click.option(
    "--sanitize-timeout",
    type=float,
    default=None,
    help="Stop each sanitizer run after this many seconds (its errors so far count).",
)
@json_option
def verify_command(
    crate: Path | None,
    kernel: str | None,
    backend: str,
    cases: int,
    seed: int,
    timeout: float,
    specs_path: Path | None,
    sanitize: bool,
    sanitize_timeout: float | None,
    as_json: bool,
) -> None:
    """Check every kernel of CRATE (default: the bundled kernels) against its spec.

    A spec (CRATE/specs/*.py, see docs/guide/verify.md) gives a float64 NumPy
    reference, an input generator, a tolerance, bytes and FLOPs. Each kernel runs on
    sizes 0, 1, primes, around warp and block multiples and large ones, misaligned
    views and every dtype instance, with poisoned outputs; inputs must come back
    unchanged. A failure is shrunk to the smallest of the spec's shapes that fails the
    same way and printed with its seed, worst element and a one-line reproducer. Cases
    run in a worker process: a crash, a hang past --timeout or a mistake in a spec fails
    its kernel and the run goes on. Exits 7 (VERIFY_FAILED) when any kernel fails, a
    spec file is unusable or Ctrl-C stopped the run (the report is still written).
    """
    # NumPy is imported here, not at module level: `pyoxide build` runs without it.
    from ..verify import load_module, verify_crate

    folder = specs_path or specs_folder(
        crate,
        "write one spec file per source file "
        "(see docs/guide/verify.md, or `pyoxide new` for an example)",
    )
    backends = ["emu", "cupy"] if backend == "all" else [backend]
    if "cupy" in backends or sanitize:
        why = gpu_ready()
        if why is not None:
            click.echo(f"error: --backend cupy/--sanitize need a GPU: {why}", err=True)
            raise SystemExit(int(ExitCode.NO_DEVICE))
    with reporting_errors():
        module = load_module(str(crate) if crate else None)

    def progress(r: KernelResult) -> None:
        if not as_json:
            click.echo(_line(r))

    if not as_json:
        click.echo(
            f"verify {module.manifest.crate_name}: specs {folder}, {cases} cases each, seed {seed}"
        )
    report = verify_crate(
        module, folder, backends=backends, cases=cases, seed=seed, pattern=kernel,
        crate=str(crate) if crate else None, timeout=timeout, specs_given=specs_path is not None,
        progress=progress,
    )  # fmt: skip
    nothing = not report["kernels"] and not report["spec_errors"] and not report["interrupted"]
    if nothing:
        what = f"no spec matches -k {kernel!r}" if kernel else "no specs"
        click.echo(f"error: {what} in {folder}", err=True)
        raise SystemExit(int(ExitCode.NOT_FOUND))
    code = ExitCode.OK if report["ok"] else ExitCode.VERIFY_FAILED
    if sanitize and not report["interrupted"]:
        report["sanitizer"] = _sanitize(
            module, crate, kernel, cases, seed, as_json, sanitize_timeout, timeout, specs_path
        )
        if not report["sanitizer"]["available"]:
            code = ExitCode.TOOLCHAIN_MISSING
        elif any(t["errors"] for t in report["sanitizer"]["tools"]):
            report["ok"] = False
            code = ExitCode.VERIFY_FAILED
    if as_json:
        click.echo(json.dumps(report, indent=1))
    else:
        for e in report["spec_errors"]:
            click.echo(f"  spec error in {e['file']}: {e['message']}")
        bad = [k["kernel"] for k in report["kernels"] if not k["ok"]]
        if report["unspecified"]:
            click.echo(f"no spec (not verified): {', '.join(report['unspecified'])}")
        if report["interrupted"]:
            click.echo(
                "interrupted (Ctrl-C): the kernels after the last one shown were not verified"
            )
        click.echo(
            "all kernels passed" if report["ok"] else f"failed: {', '.join(bad) or 'see above'}"
        )
    raise SystemExit(int(code))


def _sanitize(
    module: Any,
    crate: Path | None,
    kernel: str | None,
    cases: int,
    seed: int,
    quiet: bool,
    timeout: float | None,
    case_timeout: float,
    specs: Path | None,
) -> dict[str, Any]:
    from ..verify._sanitize import SANITIZE_CASES, find_sanitizer, missing_message, run_tools

    exe = find_sanitizer()
    if exe is None:
        click.echo(f"error: {missing_message()}", err=True)
        return {"available": False, "message": missing_message(), "tools": []}
    args = [*([str(crate)] if crate else []), "--backend", "cupy"]
    args += ["--cases", str(min(cases, SANITIZE_CASES)), "--seed", str(seed), "--json"]
    # A sanitized launch runs tens of times slower: the per-case limit grows with it.
    args += ["--timeout", str(case_timeout * 20)] + (["--specs", str(specs)] if specs else [])
    if kernel:
        args += ["-k", kernel]
    entries = [k.entry for k in module.manifest.kernels]
    tools = run_tools(exe, args, entries, timeout)
    if not quiet:
        for t in tools:
            per = ", ".join(f"{k} {n}" for k, n in t["by_kernel"].items()) or "—"
            click.echo(f"  {t['tool']}: {t['errors']} errors (by kernel: {per})")
    return {"available": True, "message": f"{exe}", "tools": tools}
