"""``pyoxide build``: run cargo oxide build, stream its progress, write stubs."""

from __future__ import annotations

from pathlib import Path

import click

from .._build import layout as _layout
from .._build.cargo import build, crate_manifest
from .._build.stubs import write_stub
from .._manifest.abi import parse_arch
from .._manifest.reader import read_manifest
from ..bundled import (
    BUNDLED_CRATE,
    BUNDLED_SM90A_ARCH,
    BUNDLED_SM90A_CRATE,
    bundled_crate_dir,
)
from ..errors import BuildError
from ._exit import reporting_errors, usage_error
from ._options import FILE


def _archs(values: tuple[str, ...]) -> list[str] | None:
    archs = [a.strip() for v in values for a in v.split(",") if a.strip()]
    for a in archs:
        try:
            parse_arch(a)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--arch") from None
    return archs or None


@click.command("build")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--arch", "arch", multiple=True, help="Target architectures: sm_80,sm_90 (repeatable)."
)
@click.option("--release/--debug", "release", default=True, help="Cargo profile (default release).")
@click.option(
    "--out-dir",
    type=click.Path(path_type=Path),
    help="Where artifacts go (default: <target dir>/oxide/<profile>).",
)
@click.option("--stubs/--no-stubs", default=True, help="Write <crate>.pyi beside the manifest.")
@click.option(
    "--stub-module",
    type=FILE,
    help="Also write the stubs to this .pyi (the module that exposes the kernels).",
)
@click.option(
    "--emu/--no-emu",
    "emulator",
    default=True,
    help="Also build the CPU emulator library (default on).",
)
@click.option(
    "--fmad/--no-fmad",
    default=True,
    help="Contract a multiply and an add into one fused multiply-add on the GPU, as nvcc "
    "and cuda-oxide do (default on); --no-fmad rounds them apart, as the emulator does.",
)
@click.option(
    "--bundled",
    is_flag=True,
    help=f"Build the bundled {BUNDLED_CRATE} into the package (from a source checkout).",
)
@click.option(
    "--tuned",
    is_flag=True,
    help="Put the tuned choices `pyoxide tune` kept for this build into the manifest, so "
    "that a wheel of it runs them with no tuning where it is installed (over the crate's "
    "tuned.json, which goes in always).",
)
@click.option("-q", "--quiet", is_flag=True, help="Do not stream cargo-oxide's progress.")
def build_command(
    path: Path | None,
    arch: tuple[str, ...],
    release: bool,
    out_dir: Path | None,
    stubs: bool,
    stub_module: Path | None,
    emulator: bool,
    fmad: bool,
    bundled: bool,
    tuned: bool,
    quiet: bool,
) -> None:
    """Build the kernel crate at PATH (default: the current folder) to PTX + manifest."""
    archs = _archs(arch)
    if bundled:
        if path is not None:
            raise usage_error("give either PATH or --bundled, not both")
        path = bundled_crate_dir()
        if path is None:
            raise usage_error(f"--bundled needs a source checkout with {BUNDLED_CRATE}/")
        out_dir = out_dir or _layout.PREBUILT
        # Typed `from pyoxide import kernels` for editors and mypy.
        stub_module = stub_module or _layout.KERNELS_STUB
    try:
        crate_manifest(path or Path.cwd())
    except BuildError as e:
        raise usage_error(str(e)) from None
    with reporting_errors():
        try:
            result = build(
                path or Path.cwd(),
                arch=archs,
                profile="release" if release else "debug",
                out_dir=out_dir,
                emulator=emulator,
                fmad=fmad,
                echo=None if quiet else (lambda line: click.echo(line, err=True)),
            )
        except BuildError as e:
            # -q hides progress, not the cause: the log was not streamed, so show it.
            if quiet and e.log.strip():
                click.echo(e.log.rstrip("\n"), err=True)
            raise
        manifest = read_manifest(result.manifest)
        names = ", ".join(k.entry for k in manifest.kernels) or "no kernels"
        click.echo(
            f"built {manifest.crate_name} {manifest.crate_version}: {len(manifest.kernels)} "
            f"kernel(s) ({names}) for {', '.join(manifest.archs) or 'no arch'}"
            + ("" if manifest.fmad else ", multiply and add rounded apart (--no-fmad)")
        )
        click.echo(f"  manifest: {manifest.path}")
        _embed_tuned(manifest.path, tuned)
        if stubs:
            stub = write_stub(manifest, manifest.path.with_name(f"{manifest.crate_name}.pyi"))
            click.echo(f"  stubs:    {stub}")
            if stub_module is not None:
                click.echo(f"  stubs:    {write_stub(manifest, stub_module)}")
        if bundled and path is not None and (path / "specs").is_dir():
            # The kernels' specs ship beside them, for `pyoxide verify`/`bench` from a wheel.
            import shutil

            specs = Path(out_dir or _layout.PREBUILT) / "specs"
            shutil.rmtree(specs, ignore_errors=True)
            shutil.copytree(path / "specs", specs, ignore=shutil.ignore_patterns("__pycache__"))
            click.echo(f"  specs:    {specs}")
        if bundled:
            _build_sm90a(release, out_dir, emulator, fmad, quiet, tuned)


def _build_sm90a(
    release: bool, out_dir: Path | None, emulator: bool, fmad: bool, quiet: bool, tuned: bool
) -> None:
    """The bundled sm_90a variants (`#[variant_of]`), beside kernels_rs's artifacts, with
    their tuned choices (`tuned`: scripts/tune_bundled tunes them on an sm_90 GPU)."""
    path = bundled_crate_dir(BUNDLED_SM90A_CRATE)
    if path is None:
        raise usage_error(f"--bundled needs a source checkout with {BUNDLED_SM90A_CRATE}/")
    result = build(
        path,
        arch=[BUNDLED_SM90A_ARCH],
        profile="release" if release else "debug",
        out_dir=out_dir,
        emulator=emulator,
        fmad=fmad,
        echo=None if quiet else (lambda line: click.echo(line, err=True)),
    )
    manifest = read_manifest(result.manifest)
    click.echo(
        f"built {manifest.crate_name}: {', '.join(k.entry for k in manifest.kernels)} "
        f"for {BUNDLED_SM90A_ARCH}"
    )
    click.echo(f"  manifest: {manifest.path}")
    _embed_tuned(manifest.path, tuned)


def _embed_tuned(manifest_path: Path, cache: bool) -> None:
    """Put the crate's shipped choices (the tuned.json beside its Cargo.toml) into its
    manifest, and with ``cache`` (--tuned) the choices `pyoxide tune` kept for this build
    over them."""
    from .._launch.tune_store import embed

    embedded = embed(manifest_path, cache)
    if embedded is None:
        return
    count, shipped = embedded
    sources = [f"shipped in {shipped}"] if shipped is not None else []
    sources += ["kept by `pyoxide tune`"] if cache else []
    click.echo(f"  tuned:    {count} choice(s) {' and '.join(sources)}, in the manifest")
