"""The bundled kernels (kernels_rs, and kernels_sm90a's variants of them) as ``pyoxide.kernels``:
where they come from (the prebuilt artifacts that ship in the package, or a source
checkout's crates), and their own Python: ``attention``'s call (attention.py, which picks
kernels_sm90a's ``attention_sm90`` where it runs). The launch runtime knows none of
them: what this package adds goes through the Module's public methods."""

from __future__ import annotations

from pathlib import Path

from .._build import layout as _layout
from .._build.cargo import find_cargo_oxide
from .._launch.handles import Origin
from .._launch.module import Module, load
from ..errors import LoadError, PyoxideError, ToolchainError
from .attention import add_attention

BUNDLED_CRATE = "kernels_rs"
#: The bundled kernels that need the arch-specific sm_90a target, built apart (a plain
#: target's build refuses them): variants of kernels_rs's (`#[variant_of]`), which its
#: launchers run where they can (pyoxide/_launch/variants.py).
BUNDLED_SM90A_CRATE = "kernels_sm90a"
BUNDLED_SM90A_ARCH = "sm_90a"


def bundled_manifest_path(crate: str = BUNDLED_CRATE) -> Path | None:
    """The prebuilt manifest of a bundled crate, when it ships with the package."""
    p = _layout.PREBUILT / f"{crate}.manifest.json"
    return p if p.is_file() else None


def bundled_crate_dir(crate: str = BUNDLED_CRATE) -> Path | None:
    """A bundled kernel crate's source (a source checkout only)."""
    p = _layout.PACKAGE.parent / crate
    return p if (p / "Cargo.toml").is_file() else None


def _has_cargo_oxide() -> bool:
    try:
        find_cargo_oxide()
    except PyoxideError:
        return False
    return True


def _load_bundled(crate: str, arch: str | None, tuned: bool = True) -> Module | None:
    """An installed pyoxide loads the artifacts that ship in pyoxide/_prebuilt. A source
    checkout with a Rust toolchain builds from source instead (cached: a no-op while
    nothing changed), since a _prebuilt there may be older than the source beside it;
    without a toolchain (a GPU machine the artifacts were carried to: no cargo-oxide, or
    one that reports the Rust toolchain missing) it uses _prebuilt. None: neither."""
    prebuilt = bundled_manifest_path(crate)
    source = bundled_crate_dir(crate)
    if source is not None and (prebuilt is None or _has_cargo_oxide()):
        try:
            return load(source, arch=arch, tuned=tuned)
        except ToolchainError:
            if prebuilt is None:
                raise
            # cargo-oxide is there (a checkout's pyoxide/_bin copy) but not the Rust
            # toolchain it drives, or it is of another release: a machine the artifacts
            # were carried to.
    return load(prebuilt, tuned=tuned) if prebuilt is not None else None


def load_sm90a(*, tuned: bool = True) -> Module | None:
    """The bundled ``kernels_sm90a`` on its own (the variants ``pyoxide.kernels`` runs where
    it can, and theirs), or None where it is neither prebuilt nor buildable;
    ``tuned=False``: without tuned choices."""
    try:
        return _load_bundled(BUNDLED_SM90A_CRATE, BUNDLED_SM90A_ARCH, tuned)
    except ToolchainError:
        return None  # a checkout without the Rust toolchain nor a prebuilt sm_90a crate


def load_bundled(*, tuned: bool = True) -> Module:
    """The bundled ``kernels_rs`` (``pyoxide.kernels``), with the variants of
    ``kernels_sm90a`` (``gemm_bf16``'s wgmma + TMA kernel) wired to run where they can
    (pyoxide/_launch/variants.py), and ``attention`` served by its call
    (pyoxide/bundled/attention.py), which picks kernels_sm90a's ``attention_sm90`` the
    same way; ``tuned=False``: without tuned choices (the hand-picked configurations)."""
    return _with_variants(load_sm90a(tuned=tuned), tuned)


def _with_variants(variants: Module | None, tuned: bool) -> Module:
    """kernels_rs with ``variants`` (kernels_sm90a, where there is one) wired in."""
    module = _load_bundled(BUNDLED_CRATE, None, tuned)
    if module is None:
        raise LoadError(
            f"the bundled kernels are missing: no prebuilt artifacts in {_layout.PREBUILT} and "
            "no kernels_rs source beside the package. Fix: reinstall pyoxide, or from a "
            "source checkout run `pyoxide build --bundled`."
        )
    if variants is not None:
        module.add_variants(variants)
    add_attention(module, lambda: variants)
    module.set_origin(bundled_origin(tuned=tuned))
    return module


def bundled_origin(*, tuned: bool = True) -> Origin:
    """Where ``pyoxide.kernels`` (``tuned=False``: its hand-picked form) comes from, for
    pickling by reference: whatever this process's pyoxide bundles."""
    options = () if tuned else (("tuned", False),)
    return Origin(BUNDLED_CRATE, "bundled", "", load_bundled, (), options)


def tuning_modules(backend: str, *, tuned: bool = False) -> list[Module]:
    """The bundled crates whose ``#[tune]`` kernels ``pyoxide.kernels``' plain calls run on
    ``backend``'s current device: kernels_rs, and kernels_sm90a where its code loads (an
    sm_90 GPU: the GEMMs' variants and attention's kernel). ``pyoxide tune`` and
    scripts/tune_bundled tune each spec in the first of them with a #[tune] kernel for it
    (pyoxide.bench.tune.tuning_crates). ``tuned=False``: without tuned choices."""
    variants = load_sm90a(tuned=tuned)
    modules = [_with_variants(variants, tuned)]
    if backend != "emu" and variants is not None and variants.manifest.kernels:
        from .. import backends
        from .._launch.kernel import Kernel

        b = backends.get(backend)
        first = variants[variants.manifest.kernels[0].entry]
        if isinstance(first, Kernel) and first.runs_on(b, b.current_device()):
            modules.append(variants)
    return modules
