"""``pyoxide bench [CRATE]``: every kernel with a spec timed on the GPU against the
roofline and its peers (pyoxide/bench.py); ``--plot`` draws the result."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .._manifest.abi import ExitCode
from . import _options as opt
from ._exit import reporting_errors, usage_error
from .verify import gpu_ready


@click.command("bench")
@opt.crate_and_kernel
@opt.shapes_option("--sizes")
@opt.timing_options(" per shape")
@opt.json_option
@click.option(
    "--plot",
    "plot_path",
    type=opt.FILE,
    help="Draw a roofline chart and bandwidth-vs-size curves (matplotlib) into this PNG.",
)
@click.option(
    "--from-json",
    "from_json",
    type=opt.EXISTING_FILE,
    help="Draw --plot (or print the table) from a saved `--json` report: no GPU needed.",
)
def bench_command(
    crate: Path | None,
    kernel: str | None,
    sizes: tuple[str, ...],
    reps: int,
    warmup: int,
    as_json: bool,
    plot_path: Path | None,
    from_json: Path | None,
) -> None:
    """Time every kernel of CRATE (default: the bundled kernels) that has a spec.

    CUDA events, warm-up, the L2 cache flushed between repetitions, median/min/max; the
    fraction of the roofline (copy bandwidth measured in the same run, peak FLOP/s read
    from the device) and the ratio to each of the spec's peers (PyTorch, CuPy, ...).
    """
    from ..bench import table

    if from_json is not None:
        report = json.loads(from_json.read_text())
    else:
        why = gpu_ready()
        if why is not None:
            click.echo(f"error: pyoxide bench needs a GPU: {why}", err=True)
            raise SystemExit(int(ExitCode.NO_DEVICE))
        from ..bench import bench_crate
        from ..verify import load_module, load_specs, select

        folder = opt.specs_folder(crate, "bench times the kernels that have a spec")
        specs = select(load_specs(folder), kernel)
        if not specs:
            click.echo(f"error: no spec matches -k {kernel!r} in {folder}", err=True)
            raise SystemExit(int(ExitCode.NOT_FOUND))
        shapes = opt.parsed_shapes(sizes, "--sizes")
        with reporting_errors():
            module = load_module(str(crate) if crate else None)
        report = bench_crate(module, specs, sizes=shapes, reps=reps, warmup=warmup)
    click.echo(json.dumps(report, indent=1) if as_json else table(report))
    if plot_path is not None:
        try:
            from ..bench._plot import plot
        except ImportError:
            raise usage_error("--plot needs matplotlib (pip install matplotlib)") from None
        try:
            plot(report, plot_path)
        except ImportError:
            raise usage_error(
                "--plot needs matplotlib (pip install matplotlib); on a machine without it, "
                "save `--json` and draw it elsewhere with `--from-json FILE --plot FILE.png`"
            ) from None
        click.echo(f"wrote {plot_path}", err=True)
