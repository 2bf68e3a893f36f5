"""``pyoxide tune [CRATE]``: every ``#[tune]`` kernel with a spec, its candidates verified
then timed at the spec's bench shapes (or ``--shapes``), the winners kept in the cache for
this GPU (pyoxide/bench/tune.py); ``pyoxide build --tuned`` puts them in the manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from .._manifest.abi import ExitCode
from . import _options as opt
from ._exit import reporting_errors, usage_error
from .verify import gpu_ready


@click.command("tune")
@opt.crate_and_kernel
@opt.shapes_option("--shapes")
@click.option(
    "--backend",
    type=click.Choice(["auto", "cupy", "emu"]),
    default="auto",
    show_default=True,
    help="cupy: the GPU; emu: the CPU emulator (its timings say nothing about a GPU: the "
    "choices are kept for the emulator only); auto: the GPU when there is one.",
)
@click.option(
    "--margin",
    default=0.03,
    show_default=True,
    help="How much faster (a fraction) another candidate must be to replace the hand pick.",
)
@opt.timing_options(" (GPU)")
@click.option("--save/--no-save", default=True, help="Keep the choices in the cache.")
@opt.json_option
def tune_command(
    crate: Path | None,
    kernel: str | None,
    shapes: tuple[str, ...],
    backend: str,
    margin: float,
    reps: int,
    warmup: int,
    save: bool,
    as_json: bool,
) -> None:
    """Tune the #[tune] kernels of CRATE (default: the bundled kernels, and on an sm_90
    GPU the kernels_sm90a variants their GEMM and attention calls run there).

    Each candidate (an instance of the tuned const generics, with a combination of the
    tuned launch parameters) is verified against the kernel's spec at the shape, then
    timed; one that fails is reported and never chosen. The fastest is kept per kernel,
    GPU model, architecture and shape bucket when it beats the hand pick by --margin.
    Plain calls run the choices from then on; `pyoxide build --tuned` ships them.
    """
    from ..bench import progress_bar
    from ..bench import tune as _tune
    from ..verify import load_specs, select

    if not 0 <= margin < 1:
        raise usage_error("--margin is a fraction from 0 to 1")
    if backend == "auto":
        backend = "cupy" if gpu_ready() is None else "emu"
    elif backend == "cupy" and (why := gpu_ready()) is not None:
        click.echo(f"error: --backend cupy needs a GPU: {why}", err=True)
        raise SystemExit(int(ExitCode.NO_DEVICE))
    folder = opt.specs_folder(crate, "tuning verifies with the specs")
    sizes = opt.parsed_shapes(shapes, "--shapes")
    with reporting_errors():
        modules = _modules(crate, backend)
    groups = _tune.tuning_crates(select(load_specs(folder), kernel), modules)
    if not groups:
        where = opt.where(crate)
        click.echo(f"error: no #[tune] kernel with a spec matches -k {kernel!r} in {where}",
                   err=True)  # fmt: skip
        raise SystemExit(int(ExitCode.NOT_FOUND))
    if backend == "emu" and not as_json:
        click.echo("note: tuning on the emulator: its timings say nothing about a GPU; the "
                   "choices hold on the emulator only", err=True)  # fmt: skip
    gpu = backend == "cupy"
    timing = _tune.gpu_timing(reps, warmup) if gpu else _tune.wall_timing()
    sustained = _tune.sustained_timing() if gpu else None
    reports = []
    with reporting_errors():
        for module, specs in groups:
            reports.append(_tune.tune_crate(
                module, specs, backend=backend, timing=timing, sizes=sizes, margin=margin,
                save=save, progress=progress_bar, sustained=sustained,
            ))  # fmt: skip
    click.echo(json.dumps(reports, indent=1) if as_json else "\n\n".join(map(table, reports)))


def _modules(crate: Path | None, backend: str) -> list[Any]:
    """The crate's module, or the bundled crates that tune on this device, without tuned
    choices (each candidate runs as itself)."""
    from .._launch.module import load
    from ..bundled import tuning_modules

    return [load(crate, tuned=False)] if crate is not None else tuning_modules(backend)


def table(report: dict[str, Any]) -> str:
    """The report as text: per kernel and shape, each candidate's verdict and time, the
    choice, and the time each kernel's tuning took."""
    lines = [f"tune {report['crate']} on {report['device']} ({report['arch']}, "
             f"{report['backend']}), key {report['key']}"]  # fmt: skip
    per_kernel: dict[str, float] = {}
    for k in report["kernels"]:
        per_kernel[k["kernel"]] = per_kernel.get(k["kernel"], 0.0) + k["seconds"]
        shape = "×".join(map(str, k["shape"]))
        bucket = "×".join(map(str, k["bucket"]))
        lines.append(f"{k['kernel']} at {shape} (bucket {bucket}, {k['seconds']:.1f} s)")
        if k["verified"] and list(k["shape"]) not in k["verified"]:
            smaller = ", ".join("×".join(map(str, v)) for v in k["verified"])
            lines.append(f"  verified at {smaller} (the spec's verify_shape: the tuned shape "
                         "is too large for its reference)")  # fmt: skip
        for i, c in enumerate(k["candidates"]):
            label = f"{c['entry']} {' '.join(f'{n}={v}' for n, v in c['launch'].items())}".strip()
            mark = "*" if i == k["choice"] else " "
            hand = " (hand pick)" if c["hand_pick"] else ""
            if c["verdict"] == "passed":
                lines.append(f"  {mark} {label:<44} {c['time_us']:10.2f} µs{hand}")
            else:
                lines.append(f"  {mark} {label:<44} {c['verdict'].upper()}{hand}: {c['message']}")
        if k["ratio"] is not None:
            lines.append(f"    chosen: {k['ratio']:.3f}x the hand pick's time")
    lines.append(
        "tuning time per kernel: " + ", ".join(f"{n} {s:.1f} s" for n, s in per_kernel.items())
    )
    lines.append(f"choices saved to {report['saved']}" if report["saved"] else "choices not saved")
    return "\n".join(lines)
