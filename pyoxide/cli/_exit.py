"""Exit codes of the ``pyoxide`` command (oxide-abi's table, shared with ``cargo oxide``),
and the one place errors become them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click

from .._manifest.abi import EXIT_MEANINGS, ExitCode
from ..errors import BuildError, LoadError, PyoxideError, ScaffoldError, ToolchainError

__all__ = ["ExitCode", "code_for", "help_text", "not_found", "reporting_errors", "usage_error"]


def help_text() -> str:
    """The table, as ``--help`` and docs/guide/cli.md show it."""
    return "Exit codes: " + ", ".join(f"{c} {m}" for c, m in EXIT_MEANINGS.items()) + "."


def code_for(error: PyoxideError) -> ExitCode:
    if isinstance(error, ScaffoldError):
        return ExitCode.USAGE
    if isinstance(error, ToolchainError):
        return ExitCode.TOOLCHAIN_MISSING
    if isinstance(error, BuildError):
        return ExitCode.BUILD_FAILED
    if isinstance(error, LoadError):
        return ExitCode.LOAD_FAILED
    return ExitCode.ERROR


@contextlib.contextmanager
def reporting_errors() -> Iterator[None]:
    """Print a pyoxide error as one message (the build log was already streamed) and
    exit with its code."""
    try:
        yield
    except PyoxideError as e:
        message = e.args[0] if isinstance(e, BuildError) and e.args else str(e)
        click.echo(f"error: {message}", err=True)
        raise SystemExit(int(code_for(e))) from None


def usage_error(message: str) -> click.exceptions.Exit:
    click.echo(f"error: {message}", err=True)
    return click.exceptions.Exit(int(ExitCode.USAGE))


def not_found(message: str) -> click.exceptions.Exit:
    click.echo(f"error: {message}", err=True)
    return click.exceptions.Exit(int(ExitCode.NOT_FOUND))
