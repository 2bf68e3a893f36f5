"""Exit codes of the ``pyoxide`` command, and the one place errors become them."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator

import click

from ..errors import BuildError, LoadError, PyoxideError, ScaffoldError, ToolchainError


class ExitCode(enum.IntEnum):
    OK = 0
    BUILD_FAILED = 1  # cargo oxide build failed (rustc, link step, ptxas)
    USAGE = 2  # bad command line (click's own code for usage errors too)
    TOOLCHAIN_MISSING = 3  # cargo-oxide or a tool it needs is missing
    LOAD_FAILED = 4  # manifest malformed/newer, artifacts missing or changed
    ERROR = 5  # any other pyoxide error


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
