"""``pyoxide inspect KERNEL``: a kernel's signature, ABI, resources and PTX."""

from __future__ import annotations

import re
from pathlib import Path

import click

from .._build.stubs import _annotation
from .._launch.module import Module, load
from .._manifest.abi import PARAM_KINDS
from .._manifest.reader import KernelSpec, Manifest
from ..bundled import load_bundled
from ._exit import not_found, reporting_errors
from ._options import EXISTING


def entry_ptx(ptx: str, entry: str) -> str | None:
    """The ``.entry`` block of one kernel, from its header to its closing brace."""
    m = re.search(rf"^[^\n]*\.entry\s+{re.escape(entry)}\s*\(", ptx, re.MULTILINE)
    if m is None:
        return None
    depth, i = 0, ptx.index("{", m.end())
    for j in range(i, len(ptx)):
        depth += {"{": 1, "}": -1}.get(ptx[j], 0)
        if depth == 0:
            return ptx[m.start() : j + 1]
    return ptx[m.start() :]


def _describe(spec: KernelSpec, manifest: Manifest, arch: str | None, show_ptx: bool) -> None:
    click.echo(spec.signature)
    click.echo(f"  entry:   {spec.entry}")
    click.echo(f"  source:  {spec.source.file}:{spec.source.line} ({spec.source.module})")
    py = ", ".join(f"{p.name}: {_annotation(p)}" for p in spec.params)
    click.echo(f"  python:  {spec.entry}({py})")
    for p in spec.params:
        dims = f" {p.array.dim_text(p.name)}" if p.array is not None else ""
        click.echo(f"    {p.name:<12} {p.rust_type + dims:<24} ABI: {PARAM_KINDS[p.kind].abi}")
    if spec.launch_bounds:
        lb = spec.launch_bounds
        click.echo(f"  launch bounds: max {lb.max_threads} threads, min blocks {lb.min_blocks}")
    if spec.cluster:
        x, y, z = spec.cluster
        click.echo(f"  cluster: {x} x {y} x {z} blocks (grids are multiples of it per axis)")
    for a in manifest.artifacts:
        if arch is not None and a.arch != arch:
            continue
        r = (a.ptxas or {}).get(spec.entry)
        if r is None:
            click.echo(f"  {a.arch}: no ptxas report")
        else:
            click.echo(
                f"  {a.arch}: {r.registers} registers, {r.shared_bytes} B shared, "
                f"{r.stack_frame_bytes} B stack, spills {r.spill_store_bytes}/"
                f"{r.spill_load_bytes} B, {r.barriers} barriers"
            )
            for d in r.diagnostics:
                click.echo(f"    ptxas {d.level}: {d}")
        for d in a.ptxas_diagnostics:
            click.echo(f"    ptxas {d.level} ({a.path.name}): {d}")
        if show_ptx:
            body = entry_ptx(a.read().decode("utf-8", "replace"), spec.entry)
            click.echo(body if body is not None else f"  (no .entry {spec.entry} in {a.path})")


@click.command("inspect")
@click.argument("kernel")
@click.argument("path", required=False, type=EXISTING)
@click.option("--arch", help="Only this architecture (sm_90).")
@click.option("--ptx", "show_ptx", is_flag=True, help="Print the kernel's PTX.")
def inspect_command(kernel: str, path: Path | None, arch: str | None, show_ptx: bool) -> None:
    """Show KERNEL of the crate or manifest at PATH (default: the bundled kernels)."""
    with reporting_errors():
        module: Module = load(path) if path is not None else load_bundled()
        manifest = module.manifest
        specs = [k for k in manifest.kernels if kernel in (k.name, k.entry)]
        if not specs:
            names = ", ".join(sorted({k.entry for k in manifest.kernels})) or "none"
            raise not_found(f"{manifest.crate_name} has no kernel '{kernel}' (kernels: {names})")
        if arch is not None and arch not in manifest.archs:
            raise not_found(f"no {arch} PTX in the manifest (have: {', '.join(manifest.archs)})")
        for spec in specs:
            _describe(spec, manifest, arch, show_ptx)
            if spec.tune is not None:
                _describe_tuning(spec, module)


def _describe_tuning(spec: KernelSpec, module: Module) -> None:
    """A tuned kernel's candidates, and each tuned choice its plain calls run: where
    (GPU, architecture, bucket), what, and why (the measured times)."""
    from .._launch.tune_space import bucket_text, candidates, family, is_hand_pick, key_dims

    assert spec.tune is not None
    if not is_hand_pick(spec):
        click.echo("  tuning:  a candidate of its hand pick (plain calls name that one)")
        return
    lists = [f"{n} in {list(v)}" for n, v in spec.tune.consts]
    lists += [f"{n} in {list(v)}" for n, v in spec.tune.launch]
    lists += [f"key {', '.join(spec.tune.key)}"] if spec.tune.key else []
    # Consts tuned together (a tuple in #[tune]) make fewer instances than their product.
    kernels = module.manifest.kernels
    count = f"{len(family(kernels, spec))} instances, {len(candidates(kernels, spec))} candidates"
    click.echo(f"  tuning:  {'; '.join(lists)}: {count} (the first const value and the "
               "#[launch] value are the hand pick)")  # fmt: skip
    names = [d.name for d in key_dims(spec)]
    variants = [v for v in module.tuned if v.choice.kernel == spec.entry]
    if not variants:
        click.echo("  tuned:   no choices for this build (plain calls run the hand pick; "
                   "`pyoxide tune` makes them)")  # fmt: skip
    here = _gpu_identity() if variants else None
    sources = {"shipped": "crate's tuned.json", "manifest": "manifest",
               "cache": "pyoxide tune's cache"}  # fmt: skip
    for v in variants:
        c = v.choice
        where = ", ".join(bucket_text(n, b) for n, b in zip(names, c.bucket, strict=True))
        source = sources.get(v.source, v.source)
        shape = "×".join(map(str, c.shape))
        ratio = f", {c.time_us / c.hand_us:.3f}x" if c.hand_us else ""
        kept = " (the hand pick: no candidate beat it)" if c.keeps_hand_pick else ""
        click.echo(f"  tuned:   on {c.device} ({c.arch}) where {where or 'any shape'}: "
                   f"{c.label}{kept}")  # fmt: skip
        click.echo(f"           why: {c.time_us:.2f} µs against the hand pick's "
                   f"{c.hand_us:.2f} µs{ratio} at {shape or 'its shape'}, best of "
                   f"{c.candidates - c.rejected} verified ({c.rejected} refused); from the "
                   f"{source}")  # fmt: skip
        if v.lent_to:
            click.echo(f"           also runs on {v.lent_to} (PYOXIDE_TUNED_FALLBACK)")
        if here is not None and v.borrowed_on(here):
            click.echo(f"           runs here ({here[0]}): another model's choice, none of "
                       f"this GPU's own for this bucket")  # fmt: skip


def _gpu_identity() -> tuple[str, str] | None:
    """(model, architecture) of the current GPU, or None without one."""
    from .. import backends

    try:
        b = backends.gpu()
        return b.device_identity(b.current_device())
    except Exception:  # no CuPy, no driver or no device: no GPU here to speak of
        return None
