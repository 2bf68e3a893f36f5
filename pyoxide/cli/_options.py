"""What the spec commands (``verify``, ``bench``, ``tune``) share: their CRATE argument and
``-k``, the shapes, timing and ``--json`` options, and the lookup of the specs folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ._exit import usage_error

F = TypeVar("F", bound=Callable[..., Any])

#: A file to write (``--plot``, ``--stub-module``) and a folder (``pyoxide new``'s).
FILE = click.Path(path_type=Path, dir_okay=False)
FOLDER = click.Path(path_type=Path, file_okay=False)
#: A path that must exist: a file or folder, a file, a folder.
EXISTING = click.Path(path_type=Path, exists=True)
EXISTING_FILE = click.Path(path_type=Path, exists=True, dir_okay=False)
EXISTING_FOLDER = click.Path(path_type=Path, exists=True, file_okay=False)


def crate_and_kernel(f: F) -> F:
    """``[CRATE]`` (default: the bundled kernels) and ``-k`` (a part of a kernel name)."""
    f = click.option("-k", "kernel", help="Only kernels whose name contains this.")(f)
    return click.argument("crate", required=False, type=EXISTING)(f)


def shapes_option(name: str) -> Callable[[F], F]:
    """Shapes given on the command line, in place of the specs' bench shapes."""
    return click.option(
        name,
        multiple=True,
        help="Shapes instead of the specs' bench shapes: 2^24, 1e6, 4096x1024 (comma-separated "
        "or repeated); each replaces the shapes of the kernels whose shapes have as many dims.",
    )


def timing_options(when: str = "") -> Callable[[F], F]:
    """``--reps`` and ``--warmup`` of a timed run; `when` says when they apply."""

    def decorate(f: F) -> F:
        f = click.option(
            "--warmup", default=3, show_default=True, help=f"Untimed calls first{when}."
        )(f)
        return click.option(
            "--reps", default=20, show_default=True, help=f"Timed repetitions{when}."
        )(f)

    return decorate


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the report as JSON (versioned)."
)


def where(crate: Path | None) -> str:
    return str(crate) if crate else "the bundled kernels"


def specs_folder(crate: Path | None, why: str) -> Path:
    """The crate's specs/ folder; a usage error saying `why` the command needs one when
    it has none."""
    from ..verify import find_specs

    folder = find_specs(crate)
    if folder is None:
        raise usage_error(f"no specs/ folder for {where(crate)}: {why}")
    return folder


def parsed_shapes(values: tuple[str, ...], option: str) -> list[tuple[int, ...]] | None:
    """The shapes of a shapes option (None when it was not given)."""
    from ..bench import parse_sizes

    try:
        return parse_sizes(values) if values else None
    except ValueError as e:
        raise usage_error(f"{option}: {e}") from None
