"""``pyoxide new NAME``: scaffold a kernel crate plus a maturin project around it."""

from __future__ import annotations

from pathlib import Path

import click

from .._build.scaffold import create
from ._exit import reporting_errors
from ._options import EXISTING_FOLDER, FOLDER


@click.command("new")
@click.argument("name")
@click.option(
    "--path",
    type=FOLDER,
    help="Where to create the project (default: ./NAME).",
)
@click.option(
    "--crates",
    "crates_dir",
    type=EXISTING_FOLDER,
    help="pyoxide's Rust crates folder (default: this pyoxide's source checkout's crates/).",
)
def new_command(name: str, path: Path | None, crates_dir: Path | None) -> None:
    """Create NAME: a Rust kernel crate and a Python package (maturin) that ships it.

    `import NAME; NAME.kernels.saxpy(...)` once built; its wheel carries the PTX, the
    manifest, stubs and the CPU emulator, and needs no Rust to install.
    """
    with reporting_errors():
        project = create(name, path, crates_dir)
    click.echo(f"created {project.path} ({len(project.files)} files)")
    for f in project.files:
        click.echo(f"  {f.relative_to(project.path)}")
    click.echo(
        "next:\n"
        f"  cd {project.path}\n"
        "  pip install --no-build-isolation -e .   # PTX + CPU emulator, into python/\n"
        "  python -m pytest                        # the kernels against NumPy\n"
        "  maturin build --release                 # the wheel (target/wheels/)"
    )
