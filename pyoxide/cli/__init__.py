"""``pyoxide`` command line (click). Each subcommand lives in its own module; this
module only builds the group. Exit codes: :class:`pyoxide.cli._exit.ExitCode`."""

from __future__ import annotations

import click

from ._exit import help_text
from .bench import bench_command
from .build import build_command
from .doctor import doctor_command
from .inspect import inspect_command
from .new import new_command
from .tune import tune_command
from .verify import verify_command

__all__ = ["cli", "main"]


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=help_text(),
)
@click.version_option(package_name="pyoxide", prog_name="pyoxide")
def cli() -> None:
    """Write CUDA kernels in Rust, call them from Python."""


cli.add_command(bench_command)
cli.add_command(build_command)
cli.add_command(doctor_command)
cli.add_command(inspect_command)
cli.add_command(new_command)
cli.add_command(tune_command)
cli.add_command(verify_command)


def main() -> None:
    cli(prog_name="pyoxide")
