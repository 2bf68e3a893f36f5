"""``pyoxide`` command line (click). Each subcommand lives in its own module, imported
when it runs (or when ``--help`` lists them): ``pyoxide build`` and ``pyoxide new`` run
where NumPy is missing (the wheel's bundling step), and verify, bench and tune need it.
Exit codes: :class:`pyoxide.cli._exit.ExitCode`."""

from __future__ import annotations

import importlib

import click

from ._exit import help_text

__all__ = ["cli", "main"]

#: The subcommands: each NAME is the click command ``NAME_command`` of module ``cli/NAME.py``.
COMMANDS = ("bench", "build", "doctor", "inspect", "new", "tune", "verify")


class _Commands(click.Group):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        found = getattr(importlib.import_module(f"{__name__}.{name}"), f"{name}_command")
        assert isinstance(found, click.Command)
        return found


@click.group(
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=help_text(),
)
@click.version_option(package_name="pyoxide", prog_name="pyoxide")
def cli() -> None:
    """Write CUDA kernels in Rust, call them from Python."""


def main() -> None:
    cli(prog_name="pyoxide")
